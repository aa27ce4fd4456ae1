package main

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"plexbench/internal/shareddata"
	"plexbench/results"
	"plexbench/scoring"
)

// TestFloor: `plexbench floor` on stories260K f32 (ctx 64, 12 chunks),
// against q8_0: the self-compare against its top-k base is exactly 0, the
// full-vocabulary self floor is the 16-bit rows' (tiny, not 0), q8_0's
// full KLD equals a plain `score` of q8_0 against the same llama.cpp base,
// and its top-k KLD is below it. The kept top-k base is the one `score`
// records, so compare puts the floor, the reference and q8_0's run in one
// group and marks a rerun that matches the base exactly as floor-limited.
func TestFloor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	model := func(q string) string { return stories(t, q) }
	text := shareddata.Path(t, "tinystories", "tinystories-16k.txt")
	root := filepath.Join(dir, "results")
	top, full := filepath.Join(dir, "f32.kld"), filepath.Join(dir, "f32-full.kld")
	geo := []string{"--perplexity", text, "--perplexity-ctx", "64", "--perplexity-chunks", "12", "--results", root, "--quiet"}

	code, stdout, stderr := runCLI(t, append([]string{"floor", "--model", model("f32"), "--against", model("q8_0"),
		"--perplexity-kld-base-out", top, "--full-base-out", full, "--perplexity-kld-top-k", "8"}, geo...)...)
	if code != 0 {
		t.Fatalf("floor: exit %d: %s", code, stderr)
	}
	var rep scoring.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("floor's report: %v", err)
	}
	fl := rep.Floor
	switch {
	case fl == nil || rep.KLD == nil || rep.Record == nil:
		t.Fatalf("floor report without floor, kld or record: %s", stdout)
	case fl.TopK != 8 || fl.SelfTopKMeanKLD != 0 || fl.SelfTopKMaxKLD != 0 || fl.SelfTopKSameTop != 1 || fl.Floor != 0:
		t.Errorf("self-compare against the top-k base: %+v, want exactly 0", fl)
	case fl.SelfFull.MeanFullKLD <= 0 || fl.SelfFull.MeanFullKLD > 1e-5 || fl.SelfFull.Tokens != rep.KLD.Tokens:
		t.Errorf("full-vocabulary self floor %+v (16-bit rows: small, not 0)", fl.SelfFull)
	case fl.Against == nil || fl.AgainstModel != "stories260K-q8_0.gguf":
		t.Fatalf("no --against figures: %+v", fl)
	}
	a := fl.Against
	if a.MeanTopKKLD <= 0 || a.MeanTopKKLD > a.MeanFullKLD || a.SeenFraction <= 0.5 || a.SeenFraction > 1 {
		t.Errorf("q8_0 against the full base: %+v", a)
	}

	checkCoarseningByK(t, fl)

	// The same comparison by score.
	code, stdout, stderr = runCLI(t, "score", "--model", model("q8_0"), "--perplexity-kld", full, "--kld-coarsen-top-k", "8", "--quiet", "--results", root)
	if code != 0 {
		t.Fatalf("score against the full base: exit %d: %s", code, stderr)
	}
	var q8 scoring.Report
	if err := json.Unmarshal([]byte(stdout), &q8); err != nil {
		t.Fatal(err)
	}
	if c := q8.KLD.TopKCoarsened; c == nil || *c != *a || q8.KLD.MeanKLD != a.MeanFullKLD {
		t.Errorf("score's top_k_coarsened %+v, floor's %+v", c, a)
	}

	// Runs against the kept top-k base share the floor's group.
	for _, args := range [][]string{
		{"score", "--model", model("f32"), "--perplexity-kld-base-out", filepath.Join(dir, "again.kld"), "--perplexity-kld-top-k", "8"},
		{"score", "--model", model("q8_0"), "--perplexity-kld", top},
		{"score", "--model", model("f32"), "--perplexity-kld", top, "--threads", "1"},
	} {
		if args[3] != "--perplexity-kld" {
			args = append(args, geo...)
		} else {
			args = append(args, "--results", root, "--quiet")
		}
		if code, _, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
	}
	code, stdout, stderr = runCLI(t, "compare", "--results", root, "--format", "json")
	if code != 0 {
		t.Fatalf("compare: exit %d: %s", code, stderr)
	}
	var out results.CompareOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	var g *results.CompareGroup
	for i := range out.Groups {
		if out.Groups[i].Floor != nil {
			g = &out.Groups[i]
		}
	}
	if g == nil {
		t.Fatalf("no group carries the floor: %s", stdout)
	}
	var floorRuns, limited, q8Rows int
	for _, r := range g.Rows {
		if r.FloorRun {
			floorRuns++
		}
		if r.FloorLimited {
			limited++
			if r.MeanKLD == nil || *r.MeanKLD != 0 {
				t.Errorf("row %+v marked floor-limited above a 0 floor", r)
			}
		}
		if r.Model == "stories260K-q8_0.gguf" && r.MeanKLD != nil {
			q8Rows++
		}
	}
	if floorRuns != 1 || limited != 1 || q8Rows != 1 || len(g.Rows) != 4 {
		t.Errorf("floor group rows %+v: want the reference, the floor run, q8_0 and a marked f32 rerun", g.Rows)
	}
	code, stdout, _ = runCLI(t, "compare", "--results", root)
	if code != 0 || !strings.Contains(stdout, "(floor)") || !strings.Contains(stdout, " ~") || !strings.Contains(stdout, "top-8 coarsening") {
		t.Errorf("compare table without the floor's marks and notes:\n%s", stdout)
	}
}

// TestFloorBadInput: one line each, non-zero exit, nothing on stdout.
func TestFloorBadInput(t *testing.T) {
	t.Parallel()
	model := stories(t, "f32")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", model, "--perplexity-method", "sliding"}, "chunks only"},
		{[]string{"--model", model, "--against", filepath.Join(t.TempDir(), "missing.gguf")}, "--against"},
		{[]string{"--model", model, "stray"}, "unexpected argument"},
		{[]string{"--model", model, "--perplexity-kld-top-k", "1025"}, "top"},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"floor", "--quiet"}, c.args...)...)
		if code == 0 || stdout != "" || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("floor %v: exit %d, stdout %q, stderr %q (want one line saying %q)", c.args, code, stdout, stderr, c.want)
		}
	}
}

// checkCoarseningByK: the floor's list holds k = 32, 64, 256 and the
// vocabulary (512 for stories260K, in place of 1024), all on the same
// tokens (one full-vocabulary KLD); q8_0's top-k KLD grows with k towards
// the full figure (above it only by the f32 rounding CompareFull does and
// the top-k arithmetic does not), is closer to it at 256 than at 32, and
// at the whole vocabulary sees it all.
func checkCoarseningByK(t *testing.T, fl *scoring.FloorReport) {
	t.Helper()
	var ks []int
	for _, c := range fl.Coarsening {
		ks = append(ks, c.TopK)
		a := c.Against
		if a == nil {
			t.Fatalf("k %d: no --against figures", c.TopK)
		}
		t.Logf("k %4d (%d B/token): self top-k %.4g of full %.4g; q8_0 top-k %.6g ± %.2g of full %.6g ± %.2g, sees %.4f",
			c.TopK, scoring.BaseRecordBytes(c.TopK), c.SelfFull.MeanTopKKLD, c.SelfFull.MeanFullKLD,
			a.MeanTopKKLD, a.MeanTopKKLDUncertainty, a.MeanFullKLD, a.MeanFullKLDUncertainty, a.SeenFraction)
		if a.MeanFullKLD != fl.Against.MeanFullKLD || a.Tokens != fl.Against.Tokens || a.MeanTopKKLD > a.MeanFullKLD*(1+1e-4) {
			t.Errorf("k %d: %+v (full %v over %d tokens)", c.TopK, a, fl.Against.MeanFullKLD, fl.Against.Tokens)
		}
	}
	if fmt.Sprint(ks) != "[32 64 256 512]" {
		t.Fatalf("coarsening at k %v, want [32 64 256 512]", ks)
	}
	c := fl.Coarsening
	for i := 1; i < len(c); i++ {
		if c[i].Against.MeanTopKKLD < c[i-1].Against.MeanTopKKLD {
			t.Errorf("top-k KLD falls from k %d to %d", c[i-1].TopK, c[i].TopK)
		}
	}
	if math.Abs(c[2].Against.MeanMissedKLD) >= math.Abs(c[0].Against.MeanMissedKLD) {
		t.Errorf("k 256 misses %v, k 32 %v: not closer to the full KLD", c[2].Against.MeanMissedKLD, c[0].Against.MeanMissedKLD)
	}
	if f := c[3].Against.SeenFraction; math.Abs(f-1) > 1e-3 {
		t.Errorf("a top-k base of the whole vocabulary sees %v of the full KLD", f)
	}
}
