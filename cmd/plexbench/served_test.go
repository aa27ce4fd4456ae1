package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"plexbench/engine"
	"plexbench/internal/choicetest"
	"plexbench/internal/shareddata"
	"plexbench/kernels"
	"plexbench/results"
	"plexbench/scoring"
	"plexbench/served/servedtest"
)

// servedFake serves stories260K in quant q through a fake of api.
func servedFake(t *testing.T, q, api string) (*servedtest.Server, string) {
	t.Helper()
	path := shareddata.Path(t, "models", "stories260K-"+q+".gguf")
	m, err := engine.Load(path, engine.Options{KVLen: 512, KVType: kernels.F16})
	if err != nil {
		t.Fatal(err)
	}
	s := servedtest.New(m, api)
	t.Cleanup(func() { s.Close(); m.Close() })
	return s, path
}

func decodeReport(t *testing.T, out string) scoring.Report {
	t.Helper()
	var rep scoring.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	return rep
}

func relClose(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) }

// TestServedScore: `score --server` on a vLLM-form server gives the
// in-process score's PPL and token hash; compared against an in-process
// base it reports the top-k-overlap KLD and its overlap; the profile keys
// and flags name the server, its API and tokenizer.
func TestServedScore(t *testing.T) {
	t.Parallel()
	srv, model := servedFake(t, "q8_0", "vllm")
	f32 := shareddata.Path(t, "models", "stories260K-f32.gguf")
	text := shareddata.Path(t, "tinystories", "tinystories-16k.txt")
	dir := t.TempDir()
	base := filepath.Join(dir, "base.kld")
	common := []string{"--perplexity", text, "--perplexity-ctx", "128", "--perplexity-chunks", "4", "--kv-cache-dtype", "f16"}
	if code, _, stderr := runCLI(t, append([]string{"score", "--model", f32, "--perplexity-kld-base-out", base, "--perplexity-kld-top-k", "16"}, common...)...); code != 0 {
		t.Fatalf("in-process base: %s", stderr)
	}
	code, out, stderr := runCLI(t, append([]string{"score", "--model", model, "--perplexity-kld", base}, common...)...)
	if code != 0 {
		t.Fatalf("in-process: %s", stderr)
	}
	want := decodeReport(t, out)
	code, out, stderr = runCLI(t, append([]string{"score", "--server", srv.URL, "--tokenizer", model, "--server-parallel", "2",
		"--server-timeout", "30s", "--perplexity-kld", base}, common...)...)
	if code != 0 {
		t.Fatalf("served: %s", stderr)
	}
	got := decodeReport(t, out)
	if got.TokenIDsSHA256 != want.TokenIDsSHA256 || !relClose(got.Perplexity, want.Perplexity) {
		t.Errorf("served PPL %.17g tokens %s, in-process %.17g %s", got.Perplexity, got.TokenIDsSHA256, want.Perplexity, want.TokenIDsSHA256)
	}
	if got.KLD == nil || got.KLD.Method != scoring.KLDTopKOverlap || got.KLD.TopKOverlap == nil || *got.KLD.TopKOverlap >= 1 {
		t.Fatalf("kld %+v: want the top-k-overlap method with its overlap", got.KLD)
	}
	if !(got.KLD.MeanKLD <= want.KLD.MeanKLD*(1+1e-12)) || !relClose(got.KLD.SameTop, want.KLD.SameTop) {
		t.Errorf("served KLD %.9g same-top %v; in-process %.9g %v", got.KLD.MeanKLD, got.KLD.SameTop, want.KLD.MeanKLD, want.KLD.SameTop)
	}
	if !strings.Contains(got.Config.Backend, "server") {
		t.Errorf("config backend %q: want the server named", got.Config.Backend)
	}
}

// TestServedChoiceTasks: HellaSwag (vLLM and OpenAI echo forms) and
// Winogrande (SGLang, whose reads name the other sentence's tokens)
// through a server choose
// as the in-process tasks do, task for task, their scores from the
// server's log-probabilities.
func TestServedChoiceTasks(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ api, flag, file, count string }{
		{"vllm", "--hellaswag", choicetest.HellaSwagFile(t, 40), "--hellaswag-tasks"},
		{"openai", "--hellaswag", choicetest.HellaSwagFile(t, 40), "--hellaswag-tasks"},
		{"sglang", "--winogrande", choicetest.WinograndeFile(t, 40), "--winogrande-tasks"},
	} {
		srv, model := servedFake(t, "f32", c.api)
		wr := scoreChoice(t, "--model", model, c.flag, c.file, c.count, "30")
		gr := scoreChoice(t, "--server", srv.URL, "--api", c.api, "--tokenizer", model, c.flag, c.file, c.count, "30")
		want, got := wr.Choice(), gr.Choice()
		if len(got.Results) != 30 || len(want.Results) != 30 {
			t.Fatalf("%s: %d and %d results", c.flag, len(got.Results), len(want.Results))
		}
		for i, w := range want.Results {
			g := got.Results[i]
			if g.Task != w.Task || g.Chosen != w.Chosen {
				t.Errorf("%s result %d: served task %d chose %d (%v), in-process task %d chose %d (%v)", c.flag, i, g.Task, g.Chosen, g.Scores, w.Task, w.Chosen, w.Scores)
			}
			for a := range w.Scores {
				if math.Abs(g.Scores[a]-w.Scores[a]) > 1e-5*math.Max(1, math.Abs(w.Scores[a])) {
					t.Errorf("%s task %d answer %d: served %.9g, in-process %.9g", c.flag, w.Task, a, g.Scores[a], w.Scores[a])
				}
			}
		}
	}
}

// TestServedAB: `ab` of two profiles that name servers (A the f32 model
// behind a vLLM-form server, which records A's base from its top-k; B
// the q8_0 behind an SGLang one, compared by named ids) gives the
// in-process A/B's paired figures and KLD.
func TestServedAB(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	text := shareddata.Path(t, "tinystories", "tinystories-16k.txt")
	sa, fa := servedFake(t, "f32", "vllm")
	sb, fb := servedFake(t, "q8_0", "sglang")
	prof := func(name string, args ...string) string {
		p := filepath.Join(dir, name+".toml")
		args = append([]string{"profile", "new", name, "--perplexity", text, "--perplexity-ctx", "128", "--perplexity-chunks", "12",
			"--kv-cache-dtype", "f16", "--perplexity-kld-top-k", "16", "-o", p}, args...)
		if code, _, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("profile new: %s", stderr)
		}
		return p
	}
	ab := func(a, b string) results.ABSummary {
		code, stdout, stderr := runCLI(t, "ab", "--profile", a, "--profile", b, "--compare", "models", "--json", "--quiet")
		var s results.ABSummary
		if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil {
			t.Fatalf("ab: exit %d, %v, stderr %q", code, err, stderr)
		}
		return s
	}
	want := ab(prof("A", "--model", fa), prof("B", "--model", fb))
	got := ab(prof("SA", "--server", sa.URL, "--tokenizer", fa), prof("SB", "--server", sb.URL, "--api", "sglang", "--tokenizer", fb))
	gc, wc := got.Comparison, want.Comparison
	if gc.Windows != 12 || gc.KLD == nil || wc.KLD == nil {
		t.Fatalf("served ab: %+v", got)
	}
	if !relClose(gc.KLD.MeanKLD, wc.KLD.MeanKLD) || !relClose(gc.DeltaMeanNLL, wc.DeltaMeanNLL) || got.KLDBand != want.KLDBand {
		t.Errorf("served ab KLD %.12g ΔNLL %.12g %s; in-process %.12g %.12g %s", gc.KLD.MeanKLD, gc.DeltaMeanNLL, got.KLDBand,
			wc.KLD.MeanKLD, wc.DeltaMeanNLL, want.KLDBand)
	}
}

// TestServedResume: a server that starts failing stops `score` with one
// line naming the status and body, the partial report written and the
// journal kept; --resume on a healthy server ends at the uninterrupted
// run's result.
func TestServedResume(t *testing.T) {
	t.Parallel()
	srv, model := servedFake(t, "q8_0", "vllm")
	text := shareddata.Path(t, "tinystories", "tinystories-16k.txt")
	dir := t.TempDir()
	out := filepath.Join(dir, "r.json")
	args := []string{"score", "--server", srv.URL, "--tokenizer", model, "--server-parallel", "1", "--perplexity", text,
		"--perplexity-ctx", "128", "--perplexity-chunks", "8", "--perplexity-output", out, "--progress", "none"}
	code, _, stderr := runCLI(t, append(args[:len(args):len(args)], "--perplexity-output", filepath.Join(dir, "whole.json"))...)
	if code != 0 {
		t.Fatal(stderr)
	}
	whole := servedReport(t, filepath.Join(dir, "whole.json"))
	before := srv.Requests()
	srv.SetFault(func(n int) servedtest.Fault {
		if n > before+3 {
			return servedtest.Status500
		}
		return servedtest.None
	})
	code, _, stderr = runCLI(t, args...)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code == 0 || !strings.Contains(stderr, "500 Internal Server Error") || !strings.Contains(stderr, "CUDA out of memory (fake)") {
		t.Fatalf("failing server: exit %d, stderr %q", code, stderr)
	}
	t.Logf("stderr: %s", lines[len(lines)-1])
	part := servedReport(t, out)
	if !part.Partial || part.WindowsScored != 3 {
		t.Fatalf("partial report: partial %v, %d windows", part.Partial, part.WindowsScored)
	}
	srv.SetFault(nil)
	if code, _, stderr = runCLI(t, append(args, "--resume")...); code != 0 {
		t.Fatalf("--resume: %s", stderr)
	}
	got := servedReport(t, out)
	if got.Partial || got.WindowsScored != 8 || !relClose(got.Perplexity, whole.Perplexity) {
		t.Fatalf("resumed: partial %v, %d windows, PPL %.17g, uninterrupted %.17g", got.Partial, got.WindowsScored, got.Perplexity, whole.Perplexity)
	}
}

func servedReport(t *testing.T, path string) scoring.Report {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return decodeReport(t, string(data))
}

// TestServedSweep: a sweep's models may be servers (their URLs): the
// served q8_0 is compared with the base model's base as the in-process
// q8_0 is, its record named by the served model.
func TestServedSweep(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, q8 := servedFake(t, "q8_0", "sglang")
	f32 := shareddata.Path(t, "models", "stories260K-f32.gguf")
	geo := []string{"--perplexity", shareddata.Path(t, "tinystories", "tinystories-16k.txt"), "--perplexity-ctx", "128",
		"--perplexity-chunks", "6", "--kv-cache-dtype", "f16"}
	base, root := filepath.Join(dir, "base.kld"), filepath.Join(dir, "sweep")
	code, _, stderr := runCLI(t, append([]string{"sweep", "--base-model", f32, "--perplexity-kld-base-out", base, "--results", root,
		"--tokenizer", q8, "--quiet", srv.URL, q8}, geo...)...)
	if code != 0 {
		t.Fatalf("sweep: exit %d: %s", code, stderr)
	}
	code, out, stderr := runCLI(t, append([]string{"score", "--model", q8, "--perplexity-kld", base}, geo...)...)
	if code != 0 {
		t.Fatal(stderr)
	}
	want := decodeReport(t, out)
	var served, local *scoring.Report
	for _, r := range rootRecords(t, root) {
		switch r.Record.Model.File {
		case srv.Name:
			served = &r
		case filepath.Base(q8):
			local = &r
		}
	}
	if served == nil || local == nil || served.KLD == nil || served.KLD.Method != scoring.KLDNamedIDs {
		t.Fatalf("sweep records: served %v, in-process %v", served != nil, local != nil)
	}
	if !relClose(served.KLD.MeanKLD, want.KLD.MeanKLD) || !relClose(served.Perplexity, local.Perplexity) {
		t.Errorf("swept server: KLD %.12g PPL %.12g; in-process %.12g %.12g", served.KLD.MeanKLD, served.Perplexity, want.KLD.MeanKLD, local.Perplexity)
	}
	// compare reads the served record beside the file's.
	code, out, stderr = runCLI(t, "compare", "--results", root, "--format", "csv")
	if code != 0 || !strings.Contains(out, srv.Name) || !strings.Contains(out, filepath.Base(q8)) {
		t.Errorf("compare: exit %d: %s%s", code, out, stderr)
	}
}

// TestServedStopAtPrecision: a stopping rule ends a served run between
// windows as it ends an in-process one: at the same window.
func TestServedStopAtPrecision(t *testing.T) {
	t.Parallel()
	srv, model := servedFake(t, "q8_0", "vllm")
	args := []string{"--perplexity", shareddata.Path(t, "tinystories", "tinystories-16k.txt"), "--perplexity-ctx", "128",
		"--perplexity-chunks", "40", "--kv-cache-dtype", "f16", "--stop-at-precision", "0.1", "--stop-min-windows", "4", "--progress", "none"}
	var reps []scoring.Report
	for _, side := range [][]string{{"--model", model}, {"--server", srv.URL, "--tokenizer", model}} {
		code, out, stderr := runCLI(t, append(append([]string{"score"}, side...), args...)...)
		if code != 0 {
			t.Fatalf("score %v: exit %d: %s", side, code, stderr)
		}
		reps = append(reps, decodeReport(t, out))
	}
	got, want := reps[1], reps[0]
	if want.StoppedEarly == nil || want.WindowsScored >= 40 || got.StoppedEarly == nil || got.WindowsScored != want.WindowsScored ||
		!relClose(got.Perplexity, want.Perplexity) {
		t.Fatalf("served stopped at %d windows (%v), in-process at %d (%v)", got.WindowsScored, got.StoppedEarly, want.WindowsScored, want.StoppedEarly)
	}
}
