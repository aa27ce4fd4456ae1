package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"plexbench/engine"
	"plexbench/internal/choicetest"
	"plexbench/internal/shareddata"
	"plexbench/kernels"
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

// TestServedChoiceTasks: HellaSwag (vLLM form) and Winogrande (SGLang,
// whose reads name the other sentence's tokens) through a server choose
// as the in-process tasks do, task for task, their scores from the
// server's log-probabilities.
func TestServedChoiceTasks(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ api, flag, file, count string }{
		{"vllm", "--hellaswag", choicetest.HellaSwagFile(t, 40), "--hellaswag-tasks"},
		{"sglang", "--winogrande", choicetest.WinograndeFile(t, 40), "--winogrande-tasks"},
	} {
		srv, model := servedFake(t, "f32", c.api)
		wr := scoreChoice(t, "--model", model, c.flag, c.file, c.count, "30")
		gr := scoreChoice(t, "--server", srv.URL, "--tokenizer", model, c.flag, c.file, c.count, "30")
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
