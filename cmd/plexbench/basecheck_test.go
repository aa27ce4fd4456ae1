package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"plexbench/internal/basetest"
	"plexbench/internal/shareddata"
	"plexbench/results"
	"plexbench/scoring"
)

// refusedBeforeScoring checks a score run refused because of base: a
// non-zero exit, nothing on stdout, one line on stderr holding each of
// want, no report, journal or record written (out is its report's path,
// root its results root), and the base's bytes as they were.
func refusedBeforeScoring(t *testing.T, code int, stdout, stderr, out, root, base string, was []byte, want ...string) {
	t.Helper()
	if code == 0 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "plexbench: ") {
		t.Errorf("exit %d, stdout %q, stderr %q: want one line on stderr", code, stdout, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr %q lacks %q", stderr, w)
		}
	}
	for _, p := range []string{out, out + ".journal"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s written", filepath.Base(p))
		}
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Errorf("the results root holds %d entries, e.g. %s", len(ents), ents[0].Name())
	}
	if now, _ := os.ReadFile(base); !bytes.Equal(now, was) {
		t.Error("the base changed")
	}
}

// TestScoreRefusesDamagedBase: `score --perplexity-kld` against a base
// recorded from stories260K and then damaged (a plexbench base's NaN or
// positive log-probability, unranked log-probabilities, negative NLL or
// repeated id; a llama.cpp base's NaN row, as llama-perplexity writes for
// a model with NaN logits) is refused before any window is scored, with
// --resume or without: one line naming the file, the record by window and
// position, and the fault; no report, journal or record; the base
// byte-identical.
func TestScoreRefusesDamagedBase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	geom := []string{"--perplexity", shareddata.Path(t, "tinystories", "tinystories-16k.txt"),
		"--perplexity-ctx", "64", "--perplexity-chunks", "4", "--quiet"}
	good := map[string]string{scoring.BaseFormatPlexbench: filepath.Join(dir, "good.kld"), scoring.BaseFormatLlama: filepath.Join(dir, "good-llama.kld")}
	for format, p := range good {
		args := append([]string{"score", "--model", stories(t, "f32"), "--perplexity-kld-base-out", p, "--kld-format", format,
			"--perplexity-output", p + ".json"}, geom...)
		if code, _, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("recording the %s base: %s", format, stderr)
		}
	}
	// Record 40 is window 1's tenth scored token: position 32 + 9.
	const rec, where = 40, " 40 (window 1, position 41): "
	for _, c := range []struct {
		name, format, want string
		damage             func(nll *float64, ids []int32, lp []float32)
	}{
		{"nan-lp", scoring.BaseFormatPlexbench, "log-probability NaN of id", func(_ *float64, _ []int32, lp []float32) { lp[5] = float32(math.NaN()) }},
		{"positive-lp", scoring.BaseFormatPlexbench, "log-probability 0.25 of id", func(_ *float64, _ []int32, lp []float32) { lp[0] = 0.25 }},
		{"unsorted", scoring.BaseFormatPlexbench, "log-probabilities out of order at rank 3", func(_ *float64, _ []int32, lp []float32) { lp[2], lp[3] = lp[3]-1, lp[2] }},
		{"negative-nll", scoring.BaseFormatPlexbench, "NLL -1.5", func(nll *float64, _ []int32, _ []float32) { *nll = -1.5 }},
		{"nan-nll", scoring.BaseFormatPlexbench, "NLL NaN", func(nll *float64, _ []int32, _ []float32) { *nll = math.NaN() }},
		{"duplicate", scoring.BaseFormatPlexbench, "at ranks 2 and 7", func(_ *float64, ids []int32, _ []float32) { ids[7] = ids[2] }},
		{"nan-row", scoring.BaseFormatLlama, "scale NaN, min log-probability NaN", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sub := t.TempDir()
			base := filepath.Join(sub, c.name+".kld")
			raw, _ := os.ReadFile(good[c.format])
			os.WriteFile(base, raw, 0o644)
			if c.damage != nil {
				basetest.EditRecord(t, base, rec, c.damage)
			} else {
				basetest.NaNLlamaRow(t, base, rec)
			}
			was, _ := os.ReadFile(base)
			what := map[string]string{scoring.BaseFormatPlexbench: "record", scoring.BaseFormatLlama: "row"}[c.format]
			for _, resume := range [][]string{nil, {"--resume"}} {
				root, out := t.TempDir(), filepath.Join(sub, "out.json")
				args := append(append([]string{"score", "--model", stories(t, "q8_0"), "--perplexity-kld", base, "--perplexity-output", out}, geom...), resume...)
				code, stdout, stderr := runCLIEnv(t, map[string]string{results.EnvRoot: root}, args...)
				refusedBeforeScoring(t, code, stdout, stderr, out, root, base, was, base+": "+what+where, c.want)
			}
			code, stdout, stderr := runCLI(t, "bases", "verify", base)
			if code == 0 || stdout != "" || !strings.Contains(stderr, base+": "+what+where) || !strings.Contains(stderr, c.want) {
				t.Errorf("bases verify: exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
		})
	}
}

// TestResumeRefusesDamagedBase: a run compared against a llama.cpp base,
// killed with its journal holding some windows, then resumed after a row
// of a window it had not scored became NaN (the base a model with NaN
// logits gives) is refused at once in one line naming the file and the
// row, leaving the journal, the base and the results root as they were.
func TestResumeRefusesDamagedBase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, out := filepath.Join(dir, "b.kld"), filepath.Join(dir, "r.json")
	geom := []string{"--perplexity", shareddata.Path(t, "tinystories", "tinystories-16k.txt"),
		"--perplexity-ctx", "256", "--perplexity-chunks", "30", "--threads", "1", "--quiet"}
	if code, _, stderr := runCLI(t, append([]string{"score", "--model", stories(t, "f32"), "--perplexity-kld-base-out", base,
		"--kld-format", "llama", "--perplexity-output", filepath.Join(dir, "rec.json")}, geom...)...); code != 0 {
		t.Fatalf("recording the base: %s", stderr)
	}
	args := append([]string{"score", "--model", stories(t, "q8_0"), "--perplexity-kld", base, "--perplexity-output", out}, geom...)
	child := startChild(t, args)
	journal := out + ".journal"
	if !child.waitJournal(t, journal, 1) {
		t.Fatal("the child ended before its first window")
	}
	child.signal(syscall.SIGKILL)
	if n, err := scoring.JournalWindows(journal); err != nil || n >= 30 {
		t.Fatalf("journal after the kill: %d windows, %v", n, err)
	}
	const row = 29*127 + 100 // window 29, position 128 + 100
	basetest.NaNLlamaRow(t, base, row)
	was, _ := os.ReadFile(base)
	kept, _ := os.ReadFile(journal)
	root := t.TempDir()
	code, stdout, stderr := runCLIEnv(t, map[string]string{results.EnvRoot: root}, append(args, "--resume")...)
	if code == 0 || stdout != "" || strings.Count(stderr, "\n") != 1 ||
		!strings.Contains(stderr, base+": row 3783 (window 29, position 228): scale NaN, min log-probability NaN") {
		t.Errorf("resume: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if now, _ := os.ReadFile(journal); !bytes.Equal(now, kept) {
		t.Error("the refused resume changed the journal")
	}
	if now, _ := os.ReadFile(base); !bytes.Equal(now, was) {
		t.Error("the base changed")
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the refused resume wrote a report")
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Errorf("the refused resume wrote %d entries in the results root", len(ents))
	}
}
