package main

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"plexbench/scoring"
)

// TestProgressLines: the headless progress lines say what happened: no ±
// before two windows give one, a stop's reason once ("stopped after …",
// not "stopped: stopped after …"), a decided rule's outcome ("does not
// hold", not "met" then "fails"), and the final line carries the KLD,
// its ± labelled as the token-level SE.
func TestProgressLines(t *testing.T) {
	t.Parallel()
	holds := false
	kld := &scoring.KLDSummary{Tokens: 63, MeanKLD: 0.0123, MeanKLDUncertainty: 0.00041, SameTop: 0.9}
	for _, c := range []struct {
		e          scoring.Event
		want, nots string
	}{
		{scoring.Event{Kind: scoring.EventWindowDone, WindowsDone: 1, WindowsTotal: 9, Perplexity: 3}, "window 1/9  PPL 3.0000 (± after 2 windows)", "± 0"},
		{scoring.Event{Kind: scoring.EventWindowDone, WindowsDone: 2, WindowsTotal: 9, Perplexity: 3, PerplexityUncertainty: 0.25}, "window 2/9  PPL 3.0000 ± 0.25000", "after"},
		{scoring.Event{Kind: scoring.EventFinished, WindowsDone: 157, Partial: true, Reason: "stopped after 157 of 1580 windows: interrupt", Perplexity: 3, PerplexityUncertainty: 0.1},
			"plexbench: stopped after 157 of 1580 windows: interrupt in ", "stopped: stopped"},
		{scoring.Event{Kind: scoring.EventFinished, WindowsDone: 5, Perplexity: 3, PerplexityUncertainty: 0.1,
			StoppedEarly: &scoring.StopReport{Rule: "mean_kld<0.001", Met: true, Windows: 5, Holds: &holds}},
			"plexbench: stopped early at window 5, decided: mean_kld<0.001 does not hold in ", " met"},
		{scoring.Event{Kind: scoring.EventFinished, WindowsDone: 2, Perplexity: 3, PerplexityUncertainty: 0.1, ScoredDone: 126, KLD: kld, Elapsed: time.Second},
			"over 126 tokens; KLD 0.01230 ± 0.00041 (token SE), same top 90.00% (", ""},
	} {
		var out bytes.Buffer
		newProgressPrinter(&out).event(c.e)
		if got := out.String(); !strings.Contains(got, c.want) || (c.nots != "" && strings.Contains(got, c.nots)) {
			t.Errorf("%s event: %q\nwant %q, without %q", c.e.Kind, got, c.want, c.nots)
		}
	}
}

// TestFinalLineKLD: a run against a base ends its headless progress with
// the KLD figures.
func TestFinalLineKLD(t *testing.T) {
	t.Parallel()
	base := filepath.Join(t.TempDir(), "f32.kld")
	if code, _, stderr := runCLI(t, "score", "--quiet", "--model", stories(t, "f32"), "--perplexity-ctx", "128",
		"--perplexity-chunks", "3", "--perplexity-kld-base-out", base, "-o", filepath.Join(t.TempDir(), "f32.json")); code != 0 {
		t.Fatalf("recording the base: %s", stderr)
	}
	code, _, stderr := runCLI(t, "score", "--model", stories(t, "q4_0"), "--perplexity-kld", base, "-o", filepath.Join(t.TempDir(), "q4.json"))
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	var final string
	for _, l := range lines {
		if strings.HasPrefix(l, "plexbench: done in ") {
			final = l
		}
	}
	if code != 0 || !strings.Contains(final, " tokens; KLD ") || !strings.Contains(final, " (token SE), same top ") {
		t.Fatalf("exit %d; the final line %q of:\n%s", code, final, stderr)
	}
}

// TestFewerChunksThanBase: a complete base gives a run of fewer chunks its
// first windows (saying so in the report); more chunks than the base holds
// are refused, saying what to give.
func TestFewerChunksThanBase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := filepath.Join(dir, "f32.kld")
	if code, _, stderr := runCLI(t, "score", "--quiet", "--model", stories(t, "f32"), "--perplexity-ctx", "128",
		"--perplexity-chunks", "4", "--perplexity-kld-base-out", base, "-o", filepath.Join(dir, "f32.json")); code != 0 {
		t.Fatalf("recording the base: %s", stderr)
	}
	rep, _ := scoreReport(t, 0, filepath.Join(dir, "q4.json"), "--model", stories(t, "q4_0"), "--perplexity-kld", base, "--perplexity-chunks", "2")
	if rep.WindowsScored != 2 || rep.KLD == nil || !slices.Contains(rep.Warnings, "compared over the first 2 of the base's 4 windows") {
		t.Fatalf("2 of the base's 4 chunks: %d windows, warnings %q", rep.WindowsScored, rep.Warnings)
	}
	code, _, stderr := runCLI(t, "score", "--quiet", "--model", stories(t, "q4_0"), "--perplexity-kld", base, "--perplexity-chunks", "50")
	if code == 0 || strings.Count(stderr, "\n") != 1 ||
		!strings.Contains(stderr, "f32.kld holds the first 4 chunks (its chunk limit), this run asks for 50: give --perplexity-chunks 4 or less, or leave it out") {
		t.Fatalf("50 of the base's 4 chunks: exit %d, %q", code, stderr)
	}
}
