package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"plexbench/internal/shareddata"
	"plexbench/results"
	"plexbench/scoring"
	"plexbench/tui"
	"plexbench/workbench"
)

// impossiblePair is an A/B whose B cannot run: a q8_0 KV cache on
// stories260K, whose heads of 8 are not whole q8_0 blocks of 32.
func impossiblePair(t *testing.T) (a, b string) {
	t.Helper()
	dir := t.TempDir()
	model := stories(t, "q8_0")
	text := shareddata.Path(t, "tinystories", "tinystories-16k.txt")
	return newProfile(t, dir, "f16kv", model, text, 4, "f16"), newProfile(t, dir, "q8kv", model, text, 4, "q8_0")
}

const q8Reason = "a q8_0 KV cache needs a head dimension that is a multiple of 32, have 8"

// TestABRefusesBeforeA: ab checks both sides before A starts; a B that
// cannot run is refused in one line naming the side and the reason, and
// A scores nothing (no progress, no record).
func TestABRefusesBeforeA(t *testing.T) {
	t.Parallel()
	a, b := impossiblePair(t)
	root := t.TempDir()
	code, stdout, stderr := runCLIEnv(t, map[string]string{results.EnvRoot: root}, "ab", "--profile", a, "--profile", b)
	if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 ||
		!strings.HasPrefix(stderr, "plexbench: ab: B (q8kv, "+b+") cannot run, so neither side was started: ") ||
		!strings.Contains(stderr, q8Reason) {
		t.Fatalf("ab with an impossible B: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if entries, err := os.ReadDir(root); err == nil && len(entries) > 0 {
		t.Fatalf("A ran: the results root holds %d entries", len(entries))
	}
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;?]*[a-zA-Z]")

// tuiStart builds the app from tui's args as the command does, with a
// runner that counts its runs instead of scoring, starts it on a wide
// screen and returns its screen and the runs started (waiting for the
// first when the start returned a command).
func tuiStart(t *testing.T, args ...string) (screen string, runs int32) {
	t.Helper()
	c, _, _ := testCLI(t, nil)
	cfg, code := c.parseTUI(args)
	if code >= 0 {
		t.Fatalf("tui %v: exit %d", args, code)
	}
	var n atomic.Int32
	cfg.Runner = tui.RunnerFunc(func(context.Context, workbench.Job) (workbench.Outcome, error) {
		n.Add(1)
		return workbench.Outcome{}, errors.New("counted, not run")
	})
	cfg.ResultsDir, cfg.NoColor = t.TempDir(), true
	m, err := tui.New(cfg)
	if err != nil {
		t.Fatalf("tui %v: %v", args, err)
	}
	defer m.Close()
	var tm tea.Model = m
	tm, _ = tm.Update(tea.WindowSizeMsg{Width: 400, Height: 40})
	tm, cmd := tm.Update(m.Init()())
	runCmds(cmd) // what a program would run: the run's command calls the runner
	if cmd != nil {
		for deadline := time.Now().Add(20 * time.Second); n.Load() == 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return ansi.ReplaceAllString(tm.View().Content, ""), n.Load()
}

// TestTUIABRefusesBeforeA: the TUI's A/B checks both sides before A
// starts and shows the refusal on screen, naming the side and the reason;
// no run starts. A single run is checked alike.
func TestTUIABRefusesBeforeA(t *testing.T) {
	t.Parallel()
	a, b := impossiblePair(t)
	screen, runs := tuiStart(t, "--profile", a, "--profile", b)
	if runs != 0 || !strings.Contains(screen, "REFUSED") || !strings.Contains(screen, "not started: B (q8kv, "+b+") cannot run, so neither side was started: ") ||
		!strings.Contains(screen, q8Reason) || !strings.Contains(screen, "nothing was scored") {
		t.Fatalf("tui A/B with an impossible B: %d runs; screen:\n%s", runs, screen)
	}
	// One run: refused on screen the same way, before it starts.
	screen, runs = tuiStart(t, "--profile", b)
	if runs != 0 || !strings.Contains(screen, "FAILED") || !strings.Contains(screen, q8Reason) {
		t.Fatalf("tui with an impossible run: %d runs; screen:\n%s", runs, screen)
	}
}

// TestCtxTrainWarning: a ctx past the model's trained context is warned
// of in llama.cpp's words, on stderr and in the report (score) and under
// the TUI's view; within it, nothing is said.
func TestCtxTrainWarning(t *testing.T) {
	t.Parallel()
	const want = "n_ctx_seq (256) > n_ctx_train (128) -- possible training context overflow"
	code, stdout, stderr := runCLI(t, "score", "--quiet", "--perplexity-ctx", "256", "--perplexity-chunks", "1")
	var rep scoring.Report
	if err := json.Unmarshal([]byte(stdout), &rep); code != 0 || err != nil {
		t.Fatalf("score at ctx 256: exit %d, %v, stderr %q", code, err, stderr)
	}
	if !strings.HasPrefix(stderr, "plexbench: warning: "+want+": the demo model was trained on 128-token contexts") ||
		!slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.HasPrefix(w, want) }) {
		t.Fatalf("score at ctx 256: stderr %q, report warnings %q", stderr, rep.Warnings)
	}
	if screen, runs := tuiStart(t, "--perplexity-ctx", "256", "--perplexity-chunks", "1"); runs != 1 || !strings.Contains(screen, "warning: "+want) {
		t.Fatalf("tui at ctx 256: %d runs; screen:\n%s", runs, screen)
	}
	if code, _, stderr := runCLI(t, "score", "--quiet", "--perplexity-ctx", "128", "--perplexity-chunks", "1"); code != 0 || stderr != "" {
		t.Fatalf("score at the trained ctx: exit %d, stderr %q", code, stderr)
	}
	// ab: once for both sides.
	dir := t.TempDir()
	prof := func(name, kv string) string {
		p := filepath.Join(dir, name+".toml")
		if code, _, stderr := runCLI(t, "profile", "new", name, "--perplexity-ctx", "256", "--perplexity-chunks", "2", "--kv-cache-dtype", kv, "-o", p); code != 0 {
			t.Fatalf("profile new: %s", stderr)
		}
		return p
	}
	code, _, stderr = runCLI(t, "ab", "--quiet", "--profile", prof("f16kv", "f16"), "--profile", prof("f32kv", "f32"))
	if code != 0 || strings.Count(stderr, want) != 1 || !strings.HasPrefix(stderr, "plexbench: warning: A and B: "+want) {
		t.Fatalf("ab at ctx 256: exit %d, stderr %q", code, stderr)
	}
}
