package main

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"plexbench/internal/shareddata"
	"plexbench/kernels"
	"plexbench/scoring"
)

// stopText writes the first n bytes of the TinyStories validation text,
// cut at a line end, into dir: enough windows for a stop rule to show.
func stopText(t *testing.T, dir string, n int) string {
	t.Helper()
	data, err := os.ReadFile(shareddata.Path(t, "tinystories", "tinystories_val.txt"))
	if err != nil {
		t.Fatal(err)
	}
	data = data[:min(n, len(data))]
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	p := filepath.Join(dir, "stories.txt")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// scoreReport runs score with args, wants exit code want and returns the
// report and stderr.
func scoreReport(t *testing.T, want int, out string, args ...string) (scoring.Report, string) {
	t.Helper()
	code, _, stderr := runCLI(t, append([]string{"score", "--progress", "none", "--perplexity-output", out}, args...)...)
	if code != want {
		t.Fatalf("score %v: exit %d, want %d; stderr:\n%s", args, code, want, stderr)
	}
	rep, err := readReport(out)
	if err != nil {
		t.Fatal(err)
	}
	return rep, stderr
}

// TestStopAtPrecision: stories260K q4_0 against the f32 base stops by
// --stop-at-precision 0.10 before its last window, says why, and its
// interval holds the full run's mean KLD; without a rule the report
// carries no stop fields.
func TestStopAtPrecision(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f32 := shareddata.Path(t, "models", "stories260K-f32.gguf")
	q4 := shareddata.Path(t, "models", "stories260K-q4_0.gguf")
	for _, c := range []struct {
		name, text string
		halfAtMost bool // must stop within the first half of the windows
	}{
		{"tinystories-16k", shareddata.Path(t, "tinystories", "tinystories-16k.txt"), false},
		{"tinystories-val-64k", stopText(t, dir, 64<<10), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			base := filepath.Join(dir, c.name+".kld")
			scoreReport(t, 0, filepath.Join(dir, c.name+"-f32.json"), "--model", f32, "--perplexity", c.text,
				"--perplexity-ctx", "64", "--perplexity-kld-base-out", base)
			full, _ := scoreReport(t, 0, filepath.Join(dir, c.name+"-full.json"), "--model", q4, "--perplexity-kld", base)
			data, _ := os.ReadFile(filepath.Join(dir, c.name+"-full.json"))
			if full.StoppedEarly != nil || full.StopRule != nil || bytes.Contains(data, []byte(`"stop`)) {
				t.Fatalf("a run without a rule has stop fields")
			}
			rep, stderr := scoreReport(t, 0, filepath.Join(dir, c.name+"-stop.json"), "--model", q4, "--perplexity-kld", base,
				"--stop-at-precision", "0.10")
			s := rep.StoppedEarly
			if s == nil || !s.Met || rep.Partial || s.Statistic != scoring.StatMeanKLD || s.Rule != "precision 0.1" {
				t.Fatalf("stopped_early %+v, partial %v: want a met precision rule on mean_kld", s, rep.Partial)
			}
			t.Logf("stopped at window %d of %d: mean KLD %.6f ± %.6f (full run %.6f)",
				s.Windows, rep.WindowsTotal, s.Value, s.HalfWidth, full.KLD.MeanKLD)
			if s.Windows != rep.WindowsScored || s.Windows >= rep.WindowsTotal || (c.halfAtMost && 2*s.Windows > rep.WindowsTotal) {
				t.Errorf("stopped after %d of %d windows (scored %d)", s.Windows, rep.WindowsTotal, rep.WindowsScored)
			}
			if math.Abs(s.Value-full.KLD.MeanKLD) > s.HalfWidth || s.HalfWidth > 0.1*s.Value {
				t.Errorf("mean KLD %.6f ± %.6f does not hold the full run's %.6f at 10%%", s.Value, s.HalfWidth, full.KLD.MeanKLD)
			}
			if math.Abs(rep.KLD.MeanKLD-s.Value) > 1e-12 || !strings.Contains(stderr, "stopped early") {
				t.Errorf("report mean KLD %v vs the rule's %v; stderr %q", rep.KLD.MeanKLD, s.Value, stderr)
			}
		})
	}
}

// TestStopWhenDecided: the exit code says which side of the threshold the
// interval settled on; a base recorded by a stopped run is kept partial
// and compared over its windows only.
func TestStopWhenDecided(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	text := stopText(t, dir, 32<<10)
	f32 := shareddata.Path(t, "models", "stories260K-f32.gguf")
	q4 := shareddata.Path(t, "models", "stories260K-q4_0.gguf")
	base := filepath.Join(dir, "f32.kld")
	rec, _ := scoreReport(t, 0, filepath.Join(dir, "f32.json"), "--model", f32, "--perplexity", text,
		"--perplexity-ctx", "64", "--perplexity-kld-base-out", base, "--stop-when-decided", "ppl<1000")
	if s := rec.StoppedEarly; s == nil || s.Windows != scoring.DefaultStopMinWindows || s.Statistic != scoring.StatMeanNLL || s.Holds == nil || !*s.Holds {
		t.Fatalf("f32 ppl<1000: stopped_early %+v, want it to hold at the first %d windows", s, scoring.DefaultStopMinWindows)
	}
	if code, _, stderr := runCLI(t, "score", "--quiet", "--model", q4, "--perplexity-kld", base); code == 0 || !strings.Contains(stderr, "partial base") {
		t.Fatalf("all windows against a stopped base: exit %d, %q; want the partial base refused", code, stderr)
	}
	fails, stderr := scoreReport(t, exitThreshold, filepath.Join(dir, "fails.json"), "--model", q4, "--perplexity-kld", base,
		"--perplexity-chunks", "10", "--stop-when-decided", "mean_kld<0.001", "--stop-min-windows", "5")
	if s := fails.StoppedEarly; s == nil || s.Windows != 5 || s.Holds == nil || *s.Holds ||
		!strings.Contains(stderr, "plexbench: stopped early: 5 of 10 windows, decided: mean_kld<0.001 does not hold (mean_kld ") ||
		!strings.Contains(stderr, "plexbench: --stop-when-decided mean_kld<0.001 does not hold: exit 3\n") || strings.Contains(stderr, " met") {
		t.Fatalf("mean_kld<0.001: stopped_early %+v; stderr %q", s, stderr)
	}
	// A perplexity change, paired token by token against the base's NLLs:
	// its value is the mean of the windows' differences of mean NLL.
	delta, _ := scoreReport(t, 0, filepath.Join(dir, "delta.json"), "--model", q4, "--perplexity-kld", base,
		"--perplexity-chunks", "10", "--stop-when-decided", "delta_ppl_percent>-50", "--stop-min-windows", "5")
	s := delta.StoppedEarly
	if s == nil || s.Windows != 5 || s.Statistic != scoring.StatDeltaNLL || s.Holds == nil || !*s.Holds {
		t.Fatalf("delta_ppl_percent>-50: stopped_early %+v, want it to hold at window 5", s)
	}
	var want float64
	for i := range 5 {
		want += (delta.Windows[i].MeanNLL - rec.Windows[i].MeanNLL) / 5
	}
	if math.Abs(s.Value-want) > 1e-12 || !(s.HalfWidth > 0) {
		t.Fatalf("delta_mean_nll %v ± %v, the windows' paired differences give %v", s.Value, s.HalfWidth, want)
	}
	// Undecided at the last window: the point value answers, with a warning.
	undecided, _ := scoreReport(t, exitThreshold, filepath.Join(dir, "undecided.json"), "--model", q4, "--perplexity-kld", base,
		"--perplexity-chunks", "10", "--stop-when-decided", "mean_kld<1e-9", "--stop-min-windows", "20")
	if s := undecided.StopRule; undecided.StoppedEarly != nil || s == nil || s.Met || s.Windows != 10 || len(undecided.Warnings) == 0 {
		t.Fatalf("undecided rule: stop_rule %+v, warnings %q", s, undecided.Warnings)
	}
	if code, _, stderr := runCLI(t, "score", "--quiet", "--model", q4, "--perplexity", text, "--stop-when-decided", "mean_kld<0.1"); code == 0 || !strings.Contains(stderr, "needs a base") {
		t.Fatalf("mean_kld without a base: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "score", "--quiet", "--model", q4, "--perplexity", text, "--stop-when-decided", "delta_ppl_percent<1"); code == 0 || !strings.Contains(stderr, "needs a base") {
		t.Fatalf("delta_ppl_percent without a base: exit %d, %q", code, stderr)
	}
}

// TestStopAtPrecisionHybrids: the same on synth's tiny qwen35 and
// qwen35moe (two layers: Gated DeltaNet, then gated attention), Q4_0
// against the F32 file's base on 48 windows of random tokens: the rule
// stops before the last window and its interval holds the full run's
// mean KLD.
func TestStopAtPrecisionHybrids(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(23, 29))
	ids := make([]int32, 48*64+1)
	for i := range ids {
		ids[i] = int32(r.IntN(64))
	}
	data, _ := json.Marshal(ids)
	tokens := filepath.Join(dir, "random.json")
	if err := os.WriteFile(tokens, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"qwen35", "qwen35moe"} {
		t.Run(arch, func(t *testing.T) {
			f32, q4 := hybridModel(t, dir, arch, kernels.F32, false), hybridModel(t, dir, arch, kernels.Q4_0, false)
			geo := []string{"--perplexity-tokens", tokens, "--perplexity-ctx", "64", "--threads", "1"}
			base := filepath.Join(dir, arch+".kld")
			scoreReport(t, 0, filepath.Join(dir, arch+"-f32.json"), append([]string{"--model", f32, "--perplexity-kld-base-out", base}, geo...)...)
			full, _ := scoreReport(t, 0, filepath.Join(dir, arch+"-full.json"), "--model", q4, "--perplexity-kld", base)
			rep, _ := scoreReport(t, 0, filepath.Join(dir, arch+"-stop.json"), "--model", q4, "--perplexity-kld", base, "--stop-at-precision", "0.10")
			s := rep.StoppedEarly
			if s == nil || !s.Met || s.Statistic != scoring.StatMeanKLD {
				t.Fatalf("stopped_early %+v: want a met precision rule on mean_kld", s)
			}
			t.Logf("stopped at window %d of %d: mean KLD %.6f ± %.6f (full run %.6f)", s.Windows, rep.WindowsTotal, s.Value, s.HalfWidth, full.KLD.MeanKLD)
			if s.Windows >= rep.WindowsTotal || math.Abs(s.Value-full.KLD.MeanKLD) > s.HalfWidth || s.HalfWidth > 0.1*s.Value {
				t.Errorf("stopped after %d of %d windows at %.6f ± %.6f; full run %.6f", s.Windows, rep.WindowsTotal, s.Value, s.HalfWidth, full.KLD.MeanKLD)
			}
		})
	}
}
