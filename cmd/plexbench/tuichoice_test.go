package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"plexbench/internal/choicetest"
	"plexbench/tui"
	"plexbench/workbench"
)

// tuiJob is the job the TUI's flags hand its runner for the first run:
// the app is built from args as runTUI builds it and started, and its
// runner keeps what it is given instead of scoring.
func tuiJob(t *testing.T, args ...string) workbench.Job {
	t.Helper()
	c, _, _ := testCLI(t, nil)
	cfg, code := c.parseTUI(args)
	if code >= 0 {
		t.Fatalf("tui %v: exit %d", args, code)
	}
	got := make(chan workbench.Job, 1)
	cfg.Runner = tui.RunnerFunc(func(_ context.Context, j workbench.Job) (workbench.Outcome, error) {
		got <- j
		return workbench.Outcome{}, errors.New("kept, not run")
	})
	cfg.ResultsDir = t.TempDir()
	m, err := tui.New(cfg)
	if err != nil {
		t.Fatalf("tui %v: %v", args, err)
	}
	defer m.Close()
	_, cmd := m.Update(m.Init()())
	runCmds(cmd)
	select {
	case j := <-got:
		return j
	case <-time.After(20 * time.Second):
		t.Fatalf("tui %v never started its run", args)
	}
	return workbench.Job{}
}

// TestTUIChoiceFlags: tui takes score's multiple-choice flags: the job its
// runner gets scores the task file as score's job does (the same profile,
// file, count and --parallel, no base recorded or compared), and what score refuses
// beside a task file tui refuses in the same line, before the terminal
// check; and tui refuses one beside an A/B.
func TestTUIChoiceFlags(t *testing.T) {
	t.Parallel()
	model := stories(t, "f32")
	hs, wg, mc := choicetest.HellaSwagFile(t, 5), choicetest.WinograndeFile(t, 3), choicetest.MultipleChoiceFile(t, 3)
	for _, args := range [][]string{
		{"--model", model, "--hellaswag", hs, "--hellaswag-tasks", "4", "--perplexity-ctx", "256"},
		{"--model", model, "--hellaswag", hs, "--kv-cache-dtype", "f32"},
		{"--model", model, "--winogrande", wg, "--winogrande-tasks", "2", "--threads", "1"},
		{"--model", model, "--multiple-choice", mc, "--multiple-choice-tasks", "3", "--parallel", "6"},
	} {
		c, _, _ := testCLI(t, nil)
		sj, _, code := c.parseScore(args)
		if code >= 0 {
			t.Fatalf("score %v: exit %d", args, code)
		}
		tj := tuiJob(t, args...)
		if tj.Choice != sj.Choice || !reflect.DeepEqual(tj.Profile, sj.Profile) || tj.Compare != sj.Compare || tj.BaseOut != "" || sj.BaseOut != "" {
			t.Errorf("%v:\ntui's job   %+v %+v, compare %q, base out %q\nscore's job %+v %+v, compare %q, base out %q",
				args, tj.Choice, tj.Profile, tj.Compare, tj.BaseOut, sj.Choice, sj.Profile, sj.Compare, sj.BaseOut)
		}
		if _, ok := tj.Choice.Mode(); !ok {
			t.Errorf("%v: the TUI's job names no task file", args)
		}
	}
	if j := tuiJob(t, "--model", model, "--hellaswag", hs); j.HellaSwagTasks != 400 {
		t.Errorf("tui --hellaswag draws %d tasks, want llama-perplexity's 400", j.HellaSwagTasks)
	}

	dir := t.TempDir()
	text := filepath.Join(dir, "t.txt")
	os.WriteFile(text, []byte("Once upon a time there was a cat."), 0o644)
	for _, c := range []struct {
		score, tui []string // the command's own arguments, beside --model
		want       string
	}{
		{[]string{"--hellaswag", hs, "--perplexity-kld", filepath.Join(dir, "x.kld")}, []string{"--hellaswag", hs, "--base", filepath.Join(dir, "x.kld")},
			"--hellaswag scores a task file; it takes no KLD base"},
		{[]string{"--winogrande", wg, "--perplexity", text, "--perplexity", text}, nil, "--winogrande: it scores a task file, not texts; with 2 corpora"},
		{[]string{"--winogrande", wg, "--perplexity", text}, nil, "--winogrande scores a task file; it takes no perplexity text"},
		{[]string{"--hellaswag", hs, "--multiple-choice", mc}, nil, "--hellaswag and --multiple-choice: score one task file at a time"},
		{[]string{"--hellaswag-tasks", "3"}, nil, ": --hellaswag-tasks needs --hellaswag FILE"},
		{[]string{"--hellaswag", hs, "--hellaswag-tasks", "0"}, nil, ": --hellaswag-tasks 0: want at least 1"},
		{[]string{"--multiple-choice", mc, "--multiple-choice-tasks", "-2"}, nil, ": --multiple-choice-tasks -2: want 0 (all) or more"},
		{[]string{"--hellaswag", filepath.Join(dir, "none.txt")}, nil, "none.txt"},
		{[]string{"--hellaswag", hs, "--stop-at-precision", "0.1"}, nil, "it takes no stop rule"},
		{[]string{"--parallel", "4"}, nil, ": --parallel needs --hellaswag, --winogrande or --multiple-choice FILE"},
		{[]string{"--winogrande", wg, "--parallel", "-1"}, nil, ": --parallel -1: want 0"},
	} {
		if c.tui == nil {
			c.tui = c.score
		}
		var lines [2]string
		for i, cmd := range []string{"score", "tui"} {
			args := append([]string{cmd, "--model", model}, [][]string{c.score, c.tui}[i]...)
			code, stdout, stderr := runCLI(t, args...)
			if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and one line saying %q", args, code, stdout, stderr, c.want)
			}
			lines[i] = strings.Replace(stderr, cmd+": ", "", 1)
		}
		if lines[0] != lines[1] {
			t.Errorf("score refuses %v with %q, tui %v with %q", c.score, lines[0], c.tui, lines[1])
		}
	}

	a, b := filepath.Join(dir, "a.toml"), filepath.Join(dir, "b.toml")
	os.WriteFile(a, []byte("name = \"a\"\n"), 0o644)
	os.WriteFile(b, []byte("name = \"b\"\nkv_cache_dtype = \"f32\"\n"), 0o644)
	code, stdout, stderr := runCLI(t, "tui", "--profile", a, "--profile", b, "--hellaswag", hs)
	if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "an A/B pairs perplexity runs") {
		t.Errorf("tui A/B with a task file: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// A good task file gets as far as the terminal check.
	if code, _, stderr := runCLI(t, "tui", "--model", model, "--hellaswag", hs); code != 2 || !strings.Contains(stderr, "not a terminal") {
		t.Errorf("tui --hellaswag on a pipe: exit %d, %s", code, stderr)
	}
}

// runCmds runs what a bubbletea program would run of c, each command in
// its own goroutine, batches opened, until one of them calls the runner
// (the test then watches the runner, not the messages).
func runCmds(c tea.Cmd) {
	if c == nil {
		return
	}
	go func() {
		if batch, ok := c().(tea.BatchMsg); ok {
			for _, c := range batch {
				runCmds(c)
			}
		}
	}()
}
