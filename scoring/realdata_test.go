package scoring_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"plexbench/engine"
	"plexbench/internal/shareddata"
	"plexbench/kernels"
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

// TestRealLlamaCppBase compares plexbench's runs of stories260K with the
// base llama.cpp itself wrote (f32 model, f32 KV, ctx 64): the f32 model
// must match it to the 16-bit floor, and q8_0 and q4_0 must land within
// llama.cpp's own ± of its figures against the same file (data/README.md).
func TestRealLlamaCppBase(t *testing.T) {
	dir := realData(t)
	base := filepath.Join(dir, "llamacpp", "stories260K-f32-tinystories16k-ctx64.kld")
	if _, err := os.Stat(base); err != nil {
		t.Skipf("no llama.cpp base: %v", err)
	}
	type fig struct{ v, pm float64 }
	for _, c := range []struct {
		quant                      string
		kld, logRatio, same, meanP fig
	}{
		{quant: "f32"},
		{"q8_0", fig{0.000718, 0.000015}, fig{0.000837, 0.000662}, fig{0.98774, 0.00180}, fig{-0.00048, 0.00014}},
		{"q4_0", fig{0.080092, 0.002059}, fig{0.048952, 0.006819}, fig{0.85257, 0.00579}, fig{-0.02338, 0.00154}},
	} {
		m := loadModel(t, dir, c.quant)
		rep, err := scoring.Run(context.Background(), m, scoring.Request{KLDBase: base})
		if err != nil {
			t.Fatal(err)
		}
		k := rep.KLD
		t.Logf("%s vs llama.cpp's f32 base: PPL %.6f (base %.6f), mean KLD %.4g ± %.2g, log ratio %.6f ± %.6f, same top %.5f ± %.5f, Δp %.5f, %d tokens",
			c.quant, k.Perplexity, k.BasePerplexity, k.MeanKLD, k.MeanKLDUncertainty, k.MeanLogRatio,
			k.MeanLogRatioUncertainty, k.SameTop, k.SameTopUncertainty, k.MeanDeltaP, k.Tokens)
		if k.BaseFormat != scoring.BaseFormatLlama || k.Tokens != 121*31 {
			t.Fatalf("%s: base format %q, %d tokens", c.quant, k.BaseFormat, k.Tokens)
		}
		if c.quant == "f32" {
			if k.MeanKLD > 1e-5 || k.SameTop < 0.999 {
				t.Errorf("f32 against its own llama.cpp base: mean KLD %v (want <= 1e-5), same top %v", k.MeanKLD, k.SameTop)
			}
			continue
		}
		for _, x := range []struct {
			what string
			got  float64
			want fig
		}{{"mean KLD", k.MeanKLD, c.kld}, {"log ratio", k.MeanLogRatio, c.logRatio},
			{"same top", k.SameTop, c.same}, {"mean Δp", k.MeanDeltaP, c.meanP}} {
			if math.Abs(x.got-x.want.v) > x.want.pm {
				t.Errorf("%s %s: %v, llama.cpp %v ± %v", c.quant, x.what, x.got, x.want.v, x.want.pm)
			}
		}
	}
}

// TestRealLlamaCppBaseWritten writes a llama.cpp base from plexbench's f32
// run with llama.cpp's settings and checks it against the one llama.cpp
// wrote: the same size, header and token ids byte for byte, and rows whose
// decoded log-probabilities agree to a few 16-bit steps.
func TestRealLlamaCppBaseWritten(t *testing.T) {
	dir := realData(t)
	theirs, err := os.ReadFile(filepath.Join(dir, "llamacpp", "stories260K-f32-tinystories16k-ctx64.kld"))
	if err != nil {
		t.Skipf("no llama.cpp base: %v", err)
	}
	path := filepath.Join(t.TempDir(), "ours.kld")
	text := readText(t, filepath.Join(dir, "tinystories", "tinystories-16k.txt"))
	if _, err := scoring.Run(context.Background(), loadModel(t, dir, "f32"), scoring.Request{Text: text, Ctx: 64,
		KLDBaseOut: path, KLDBaseFormat: scoring.BaseFormatLlama}); err != nil {
		t.Fatal(err)
	}
	ours, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head := 20 + 4*121*64
	if len(ours) != len(theirs) || string(ours[:head]) != string(theirs[:head]) {
		t.Fatalf("%d bytes (llama.cpp %d); header and tokens equal: %v", len(ours), len(theirs),
			len(ours) >= head && string(ours[:head]) == string(theirs[:head]))
	}
	le := binary.LittleEndian
	const nv = 512 + 4
	worst := 0.0
	for off := head; off < len(ours); off += 2 * nv {
		dec := func(b []byte, j int) float64 {
			scale := math.Float32frombits(le.Uint32(b[off:]))
			minlp := math.Float32frombits(le.Uint32(b[off+4:]))
			return float64(float32(scale*float32(le.Uint16(b[off+8+2*j:]))) + minlp)
		}
		for j := range 512 {
			if a, b := dec(ours, j), dec(theirs, j); a > -14 || b > -14 {
				worst = max(worst, math.Abs(a-b))
			}
		}
	}
	t.Logf("largest difference of a stored log-probability above -14 nats: %.3g", worst)
	if worst > 1e-3 {
		t.Errorf("rows differ from llama.cpp's by up to %v nats", worst)
	}
}

// TestRealBitsPerByte scores the shipped demo (stories260K f32 on the
// TinyStories excerpt, the demo's default protocol: chunks of 512) and recomputes bits per byte from the report's
// per-window NLL sums and the text itself: each window's targets cover the
// bytes between the decoded text before its first target and the decoded
// text through its last, and the decoded text is the text.
func TestRealBitsPerByte(t *testing.T) {
	m, err := engine.Load(filepath.Join("..", "workbench", "demo", "stories260K-f32.gguf"),
		engine.Options{Threads: 2, BatchSize: 128, UBatchSize: 128, KVLen: 512, KVType: kernels.F32})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	text := readText(t, filepath.Join("..", "workbench", "demo", "tinystories-100k.txt"))
	rep, err := scoring.Run(context.Background(), m, scoring.Request{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	tok := m.Tokenizer()
	ids := tok.Encode(text, true, false)
	if tok.Decode(ids) != text {
		t.Fatal("the excerpt does not round-trip through the tokenizer")
	}
	var nll float64
	var bytes int64
	for _, w := range rep.Windows {
		span := int64(len(tok.Decode(ids[:w.End])) - len(tok.Decode(ids[:w.FirstTarget])))
		if w.TextBytes != span {
			t.Errorf("window %d: text_bytes %d, the text span of its targets is %d bytes", w.Index, w.TextBytes, span)
		}
		nll += w.NLLSum
		bytes += span
	}
	want := nll / (math.Ln2 * float64(bytes))
	t.Logf("stories260K f32, %d windows of ctx 512: %d scored tokens, %d bytes, ppl %.4f, bits per byte %.6f ± %.6f",
		len(rep.Windows), rep.ScoredTokens, bytes, rep.Perplexity, rep.BitsPerByte, rep.BitsPerByteUncertainty)
	if rep.TextBytes != bytes || math.Abs(rep.BitsPerByte-want) > 1e-12*want {
		t.Errorf("text_bytes %d, bits_per_byte %.15g; recomputed %d, %.15g", rep.TextBytes, rep.BitsPerByte, bytes, want)
	}
	rel := rep.PerplexityUncertainty / rep.Perplexity * float64(rep.ScoredTokens) / (math.Ln2 * float64(bytes))
	if math.Abs(rep.BitsPerByteUncertainty-rel) > 1e-12*rel || rel <= 0 {
		t.Errorf("± %.15g, want the perplexity's relative ± scaled: %.15g", rep.BitsPerByteUncertainty, rel)
	}
}
