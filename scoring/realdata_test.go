package scoring_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"plexbench/engine"
	"plexbench/kernels"
	"plexbench/kernels/shareddata"
	"plexbench/scoring"
)

// realData returns the shared data folder or skips (fails under CI).
func realData(t *testing.T) string { return shareddata.Dir(t) }

type golden struct {
	Tokenize map[string]struct {
		Tokens int    `json:"tokens"`
		SHA    string `json:"token_ids_sha256"`
	} `json:"tokenize"`
	PPL map[string]struct {
		PPL    float64 `json:"ppl"`
		PPLPM  float64 `json:"ppl_pm"`
		Chunks int     `json:"chunks"`
	} `json:"ppl"`
	KLD map[string]struct {
		MeanKLD     struct{ Value, PM float64 } `json:"mean_kld"`
		MeanLnRatio struct{ Value, PM float64 } `json:"mean_ln_ratio"`
		SameTop     struct{ Value, PM float64 } `json:"same_top"`
		MeanDeltaP  struct{ Value, PM float64 } `json:"mean_delta_p"`
		RMSDeltaP   struct{ Value, PM float64 } `json:"rms_delta_p"`
		Cor         float64                     `json:"cor_ln_ppl"`
	} `json:"kld"`
}

func loadGolden(t *testing.T, dir string) golden {
	var g golden
	b, err := os.ReadFile(filepath.Join(dir, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

func loadModel(t *testing.T, dir, quant string) *engine.Model {
	t.Helper()
	m, err := engine.Load(filepath.Join(dir, "models", "stories260K-"+quant+".gguf"),
		engine.Options{Threads: 2, BatchSize: 128, UBatchSize: 128, KVLen: 128, KVType: kernels.F32})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func readText(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(b), "\n") // llama-perplexity drops one final newline
}

// TestRealStoriesPerplexityAndKLD runs the real engine on stories260K and
// compares with llama.cpp's figures in golden.json (dense, f32 KV, ctx 128).
// Every quantized file is compared with the f32 base. (The f16 file is
// left out: llama.cpp's base stores 16-bit log-prob codes whose rounding,
// up to 1.2e-4 nats, dominates its RMS Δp when two runs differ this little.)
func TestRealStoriesPerplexityAndKLD(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real engine over 60 chunks twice")
	}
	dir := realData(t)
	g := loadGolden(t, dir)
	text := readText(t, filepath.Join(dir, "tinystories", "tinystories-16k.txt"))
	base := filepath.Join(t.TempDir(), "f32.kld")

	f32 := loadModel(t, dir, "f32")
	rep, err := scoring.Run(context.Background(), f32, scoring.Request{Text: text, Ctx: 128, KLDBaseOut: base})
	if err != nil {
		t.Fatal(err)
	}
	tk := g.Tokenize["stories260K/tinystories/tinystories-16k.txt"]
	want := g.PPL["stories260K-f32/tinystories-16k/ctx128/dense_f32kv"]
	t.Logf("f32: PPL %.4f ± %.5f over %d chunks (llama.cpp %.4f ± %.5f, %d)", rep.Perplexity,
		rep.PerplexityUncertainty, rep.WindowsScored, want.PPL, want.PPLPM, want.Chunks)
	if rep.Tokens != tk.Tokens || rep.TokenIDsSHA256 != tk.SHA || rep.WindowsScored != want.Chunks {
		t.Fatalf("tokens %d %s windows %d, want %d %s %d", rep.Tokens, rep.TokenIDsSHA256, rep.WindowsScored,
			tk.Tokens, tk.SHA, want.Chunks)
	}
	if math.Abs(rep.Perplexity-want.PPL) > 0.5e-4*want.PPL || math.Abs(rep.PerplexityUncertainty-want.PPLPM) > 1e-3*want.PPLPM {
		t.Errorf("PPL %.5f ± %.6f, llama.cpp %.4f ± %.5f", rep.Perplexity, rep.PerplexityUncertainty, want.PPL, want.PPLPM)
	}

	for _, q := range []string{"q8_0", "q6_k", "q5_1", "q5_0", "q4_k_m", "q4_1", "q4_0"} {
		m := loadModel(t, dir, q)
		rep, err := scoring.Run(context.Background(), m, scoring.Request{KLDBase: base})
		if err != nil {
			t.Fatal(err)
		}
		k := rep.KLD
		w := g.KLD["stories260K-"+q+"_vs_f32/tinystories-16k/ctx128/dense_f32kv"]
		t.Logf("%s: mean_kld %.6f (llama.cpp %.6f, ratio %.3f), same_top %.5f (%.5f ± %.5f), log ratio %.6f (%.6f ± %.6f), Δp %.5f (%.5f ± %.5f), rms Δp %.5f (%.5f ± %.5f), cor %.4f (%.4f), top mass %.4f, cr1 %.6f vs %.6f",
			q, k.MeanKLD, w.MeanKLD.Value, k.MeanKLD/w.MeanKLD.Value, k.SameTop, w.SameTop.Value, w.SameTop.PM,
			k.MeanLogRatio, w.MeanLnRatio.Value, w.MeanLnRatio.PM, k.MeanDeltaP, w.MeanDeltaP.Value, w.MeanDeltaP.PM,
			k.RMSDeltaP, w.RMSDeltaP.Value, w.RMSDeltaP.PM, k.PPLCorrelation, w.Cor, k.MeanBaseTopMass,
			k.MeanKLDUncertaintyCR1, k.MeanKLDUncertainty)
		within := func(what string, got, want, pm float64) {
			if math.Abs(got-want) > 2*pm+1e-5 {
				t.Errorf("%s %s: %v, llama.cpp %v ± %v", q, what, got, want, pm)
			}
		}
		within("same_top", k.SameTop, w.SameTop.Value, w.SameTop.PM)
		within("mean_log_ratio", k.MeanLogRatio, w.MeanLnRatio.Value, w.MeanLnRatio.PM)
		within("mean_delta_p", k.MeanDeltaP, w.MeanDeltaP.Value, w.MeanDeltaP.PM)
		within("rms_delta_p", k.RMSDeltaP, w.RMSDeltaP.Value, w.RMSDeltaP.PM)
		if k.MeanKLD > w.MeanKLD.Value+2*w.MeanKLD.PM || k.MeanKLD < 0.5*w.MeanKLD.Value {
			t.Errorf("%s: mean_kld %v, llama.cpp full-vocabulary %v ± %v", q, k.MeanKLD, w.MeanKLD.Value, w.MeanKLD.PM)
		}
	}
}
