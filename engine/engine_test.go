package engine

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"plexbench/kernels"
)

// The tiny architectures under test: GQA everywhere, biases where the
// architecture has them, qwen3 with n_head·hd != n_embd and partial RoPE.
var specs = map[string]spec{
	"llama-tied":   {arch: "llama", embd: 48, layers: 2, vocab: 64, heads: 6, kvHeads: 2, hd: 8, ff: 40, tied: true},
	"llama-untied": {arch: "llama", embd: 32, layers: 3, vocab: 70, heads: 4, kvHeads: 2, hd: 8, ff: 56, biases: true, ropeFreqs: true},
	"qwen2":        {arch: "qwen2", embd: 32, layers: 2, vocab: 64, heads: 4, kvHeads: 1, hd: 8, ff: 48, biases: true},
	"qwen3":        {arch: "qwen3", embd: 32, layers: 2, vocab: 64, heads: 4, kvHeads: 2, hd: 16, ff: 40, rot: 12, tied: true},
	"llama-fused-qkv-per-layer-kv": {arch: "llama", embd: 32, layers: 3, vocab: 64, heads: 4, hd: 8, ff: 40,
		kvPerLayer: []int{2, 1, 4}, fusedQKV: true, biases: true},
}

func open(t testing.TB, fx *fixture, opt Options) *Model {
	t.Helper()
	if opt.Threads == 0 {
		opt.Threads = 2
	}
	m, err := Load(fx.path, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestLogitsMatchReference compares the engine's logits with the float64
// forward pass, f32 weights and f32 KV cache.
func TestLogitsMatchReference(t *testing.T) {
	for name, s := range specs {
		t.Run(name, func(t *testing.T) {
			fx := build(t, s, 1)
			m := open(t, fx, Options{KVType: kernels.F32, UBatchSize: 16})
			tokens := randomTokens(45, s.vocab, 2)
			got, want := engineLogits(t, m, tokens), fx.reference(tokens)
			worst := 0.0
			for i := range want {
				worst = max(worst, relErr(got[i], want[i]))
			}
			if worst > 1e-4 {
				t.Errorf("max relative logit error %.3g > 1e-4", worst)
			}
			t.Logf("max relative logit error %.3g", worst)
		})
	}
}

// TestPassPlanInvariance runs the same window as passes of 1, 7, 64 tokens
// and as one pass: the logits agree within 1e-5 relative.
func TestPassPlanInvariance(t *testing.T) {
	for _, name := range []string{"llama-untied", "qwen3", "llama-fused-qkv-per-layer-kv"} {
		s := specs[name]
		fx := build(t, s, 3)
		tokens := randomTokens(100, s.vocab, 4)
		for _, kv := range []kernels.Type{kernels.F32, kernels.F16} {
			whole := engineLogits(t, open(t, fx, Options{KVType: kv, UBatchSize: len(tokens)}), tokens)
			for _, ub := range []int{1, 7, 64} {
				got := engineLogits(t, open(t, fx, Options{KVType: kv, UBatchSize: ub}), tokens)
				worst := 0.0
				for i := range whole {
					worst = max(worst, relErr(got[i], whole[i]))
				}
				if worst > 1e-5 {
					t.Errorf("%s kv %v ubatch %d: max relative difference %.3g from one pass", name, kv, ub, worst)
				}
			}
		}
	}
}

// TestKVTypes checks that f16, bf16 and q8_0 caches stay close to the f32
// cache (q8_0 needs head dims that are multiples of 32).
func TestKVTypes(t *testing.T) {
	s := spec{arch: "qwen3", embd: 64, layers: 2, vocab: 64, heads: 4, kvHeads: 2, hd: 32, ff: 64}
	fx := build(t, s, 5)
	tokens := randomTokens(40, s.vocab, 6)
	base := engineLogits(t, open(t, fx, Options{KVType: kernels.F32}), tokens)
	for kv, tol := range map[kernels.Type]float64{kernels.F16: 2e-3, kernels.BF16: 2e-2, kernels.Q8_0: 3e-2} {
		got := engineLogits(t, open(t, fx, Options{KVType: kv}), tokens)
		worst := 0.0
		for i := range base {
			worst = max(worst, relErr(got[i], base[i]))
		}
		if worst > tol || worst == 0 {
			t.Errorf("kv %v: max relative difference %.3g from f32 KV, want (0, %g]", kv, worst, tol)
		}
		t.Logf("kv %v: max relative difference %.3g from f32 KV", kv, worst)
	}
	if _, err := Load(build(t, specs["qwen2"], 1).path, Options{KVType: kernels.Q8_0}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("q8_0 KV with head dim 8: err %v, want ErrUnsupported", err)
	}
}

// TestQuantizedWeights runs Q8_0 and F16 weights (activations converted as
// ggml does) against the reference from their dequantized values.
func TestQuantizedWeights(t *testing.T) {
	for wt, tol := range map[kernels.Type]float64{kernels.F16: 2e-3, kernels.Q8_0: 3e-2} {
		s := spec{arch: "llama", embd: 64, layers: 2, vocab: 64, heads: 4, kvHeads: 2, hd: 16, ff: 96, wtype: wt}
		fx := build(t, s, 7)
		tokens := randomTokens(30, s.vocab, 8)
		got, want := engineLogits(t, open(t, fx, Options{KVType: kernels.F32}), tokens), fx.reference(tokens)
		worst := 0.0
		for i := range want {
			worst = max(worst, relErr(got[i], want[i]))
		}
		if worst > tol {
			t.Errorf("%v weights: max relative logit error %.3g > %g", wt, worst, tol)
		}
		t.Logf("%v weights: max relative logit error %.3g", wt, worst)
	}
}

// TestHeadReduce checks the pick/topk results against the reference logits.
func TestHeadReduce(t *testing.T) {
	s := specs["qwen2"]
	fx := build(t, s, 9)
	m := open(t, fx, Options{KVType: kernels.F32})
	tokens := randomTokens(20, s.vocab, 10)
	want := fx.reference(tokens)
	reqs := make([]RowRequest, len(tokens))
	out := make([]RowResult, len(tokens))
	for i := range reqs {
		reqs[i] = RowRequest{IDs: []int32{tokens[(i+1)%len(tokens)], 3, 63}, TopK: 5}
	}
	err := m.Prefill(t.Context(), tokens, 4, func(pos int, hidden []float32, n int) error {
		if pos != 4 || n != len(tokens)-4 {
			t.Errorf("emit(pos %d, n %d), want (4, %d)", pos, n, len(tokens)-4)
		}
		return m.HeadReduce(hidden, n, reqs[pos:pos+n], out[pos:pos+n])
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 4; i < len(tokens); i++ {
		row, o := want[i], out[i]
		mx, arg := math.Inf(-1), -1
		for j, v := range row {
			if v > mx {
				mx, arg = v, j
			}
		}
		var se float64
		for _, v := range row {
			se += math.Exp(v - mx)
		}
		if math.Abs(float64(o.Max)-mx) > 1e-4*math.Abs(mx)+1e-5 || int(o.ArgMax) != arg || math.Abs(o.SumExp/se-1) > 1e-4 {
			t.Errorf("row %d: max %g argmax %d sumexp %g, want %g %d %g", i, o.Max, o.ArgMax, o.SumExp, mx, arg, se)
		}
		for k, id := range reqs[i].IDs {
			if math.Abs(float64(o.Picked[k])-row[id]) > 1e-4*math.Abs(mx)+1e-5 {
				t.Errorf("row %d: picked[%d] %g, want %g", i, k, o.Picked[k], row[id])
			}
		}
		if len(o.TopIDs) != 5 || o.TopIDs[0] != int32(arg) {
			t.Errorf("row %d: top ids %v, want 5 starting with %d", i, o.TopIDs, arg)
		}
		for k := 1; k < len(o.TopLogits); k++ {
			if o.TopLogits[k] > o.TopLogits[k-1] || math.Abs(float64(o.TopLogits[k])-row[o.TopIDs[k]]) > 1e-4*math.Abs(mx)+1e-5 {
				t.Errorf("row %d: top %d = (%d, %g) out of order or wrong", i, k, o.TopIDs[k], o.TopLogits[k])
			}
		}
	}
	bad := []RowRequest{{IDs: []int32{64}}}
	if err := m.HeadReduce(make([]float32, s.embd), 1, bad, make([]RowResult, 1)); !errors.Is(err, ErrInput) {
		t.Errorf("id outside the vocab: err %v, want ErrInput", err)
	}
	if err := m.HeadReduce(make([]float32, 129*s.embd), 129, make([]RowRequest, 129), make([]RowResult, 129)); !errors.Is(err, ErrInput) {
		t.Errorf("129 rows: err %v, want ErrInput", err)
	}
}

// TestGenerateMatchesReference decodes greedily and checks every step's
// token against the reference argmax over the sequence so far.
func TestGenerateMatchesReference(t *testing.T) {
	s := specs["llama-tied"]
	fx := build(t, s, 12)
	m := open(t, fx, Options{KVType: kernels.F32, KVLen: 64})
	text, ids, err := m.Generate(t.Context(), "ab", 10)
	if err != nil {
		t.Fatal(err)
	}
	prompt := m.tok.Encode("ab", true, true)
	seq := append(prompt, ids...)
	logits := fx.reference(seq)
	for i := range ids {
		row := logits[len(prompt)-1+i]
		arg := 0
		for j, v := range row {
			if v > row[arg] {
				arg = j
			}
		}
		if int(ids[i]) != arg && !slicesContain(m.eog, int32(arg)) {
			t.Fatalf("step %d: generated %d, reference argmax %d", i, ids[i], arg)
		}
	}
	if want := m.tok.Decode(ids); strings.TrimSpace(text) != strings.TrimSpace(want) {
		t.Errorf("text %q, decode of ids %q", text, want)
	}
	if _, _, err := m.Generate(t.Context(), "ab", 70); !errors.Is(err, ErrInput) {
		t.Errorf("generation past kv-len: err %v, want ErrInput", err)
	}
}

func slicesContain(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestBadInput covers the errors callers see: tokens out of range, windows
// longer than the cache, and models that are missing pieces.
func TestBadInput(t *testing.T) {
	s := specs["qwen2"]
	fx := build(t, s, 13)
	m := open(t, fx, Options{KVLen: 16})
	nop := func(int, []float32, int) error { return nil }
	if err := m.Prefill(t.Context(), []int32{1, 64}, 0, nop); !errors.Is(err, ErrInput) {
		t.Errorf("token 64 of 64: err %v", err)
	}
	if err := m.Prefill(t.Context(), []int32{1, -1}, 0, nop); !errors.Is(err, ErrInput) {
		t.Errorf("token -1: err %v", err)
	}
	if err := m.Prefill(t.Context(), make([]int32, 17), 0, nop); !errors.Is(err, ErrInput) {
		t.Errorf("17 tokens in a 16-position cache: err %v", err)
	}
	if err := m.Prefill(t.Context(), nil, 0, nop); !errors.Is(err, ErrInput) {
		t.Errorf("no tokens: err %v", err)
	}
	ctx, cancel := contextWithCancel(t)
	cancel()
	if err := m.Prefill(ctx, []int32{1, 2}, 0, nop); err == nil {
		t.Error("cancelled context: no error")
	}

	if _, err := Load(fx.path+".missing", Options{}); err == nil || !strings.Contains(err.Error(), ".missing") {
		t.Errorf("missing file: err %v", err)
	}
	if _, err := Load(fx.path, Options{KVType: kernels.Q4_0}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("q4_0 KV: err %v", err)
	}
}

// TestBrokenModels rewrites a good model with one thing wrong and checks
// that Load names the file and the problem.
func TestBrokenModels(t *testing.T) {
	good := build(t, specs["qwen3"], 14)
	cases := []struct {
		name string
		edit func(*editor)
		want string
	}{
		{"missing tensor", func(e *editor) { e.dropTensor("blk.1.attn_k_norm.weight") }, `"blk.1.attn_k_norm.weight" is missing`},
		{"wrong shape", func(e *editor) { e.reshape("blk.0.ffn_up.weight", 40, 32) }, `"blk.0.ffn_up.weight" has shape`},
		{"missing key", func(e *editor) { e.dropKey("qwen3.attention.layer_norm_rms_epsilon") }, "layer_norm_rms_epsilon is missing"},
		{"unknown arch", func(e *editor) { e.setKey("general.architecture", "mamba") }, `architecture "mamba"`},
		{"bad heads", func(e *editor) { e.setKey("qwen3.attention.head_count_kv", uint32(3)) }, "not a multiple of head_count_kv"},
		{"yarn", func(e *editor) { e.setKey("qwen3.rope.scaling.type", "yarn") }, `rope scaling type "yarn"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := rewrite(t, good.path, c.edit)
			_, err := Load(path, Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("err %v, want one naming %s and %q", err, path, c.want)
			}
		})
	}
	if _, err := os.Stat(good.path); err != nil {
		t.Fatal(err)
	}
}

// allocRuns is the runs the 300-token steady-state checks average over:
// one in short mode (any allocation in it still counts as one or more).
func allocRuns() int {
	if testing.Short() {
		return 1
	}
	return 3
}

// TestSteadyStateAllocs checks that, once buffers have grown to a window's
// size, prefill passes and head reductions allocate nothing. One thread:
// kernels.Pool.For allocates a WaitGroup per parallel call, which is the
// pool's business, not the engine's.
func TestSteadyStateAllocs(t *testing.T) {
	fx := build(t, specs["qwen3"], 20)
	m := open(t, fx, Options{Threads: 1, KVType: kernels.F16, UBatchSize: 16})
	tokens := randomTokens(50, 64, 1)
	reqs := make([]RowRequest, HeadRows)
	out := make([]RowResult, HeadRows)
	for i := range reqs {
		reqs[i] = RowRequest{IDs: []int32{5, 6}, TopK: 4}
	}
	emit := func(pos int, hidden []float32, n int) error {
		return m.HeadReduce(hidden, n, reqs[:n], out[:n])
	}
	run := func() {
		if err := m.Prefill(t.Context(), tokens, 10, emit); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if a := testing.AllocsPerRun(5, run); a != 0 {
		t.Errorf("%v allocations per prefill in steady state, want 0", a)
	}
}

// TestConfigAndTokenize checks the report's config object and the
// tokenization rules scoring relies on.
func TestConfigAndTokenize(t *testing.T) {
	fx := build(t, specs["qwen3"], 21)
	m := open(t, fx, Options{Threads: 2, KVType: kernels.F16, KVLen: 100, BatchSize: 64, UBatchSize: 16})
	c := m.Config()
	if c.DeviceArch != "cpu" || c.Backend != "cpu" || c.PrefillAttention != "dense" || c.KVCacheDType != "f16" ||
		c.KVCapacity != 100 || c.BatchSize != 64 || c.UBatchSize != 16 || c.HeadRows != HeadRows ||
		!c.CPUFallbackAllowed || c.Threads != 2 {
		t.Errorf("config %+v", c)
	}
	if want := 1 / math.Sqrt(16); math.Abs(c.PrefillAttentionScale-want) > 1e-7 {
		t.Errorf("attention scale %g, want %g", c.PrefillAttentionScale, want)
	}
	info := m.Info()
	if info.Architecture != "qwen3" || info.VocabSize != 64 || info.HiddenSize != 32 || !info.AddBOS || info.BOS != 1 ||
		info.Path != fx.path || info.Size <= 0 || info.TypeCounts["F32"] == 0 || c.Model.Path != fx.path {
		t.Errorf("info %+v", info)
	}
	ids, err := m.Tokenize("ab")
	if err != nil || len(ids) < 2 || ids[0] != 1 {
		t.Errorf("Tokenize: %v %v, want BOS first", ids, err)
	}
	eos := rewrite(t, fx.path, func(e *editor) { e.setKey("tokenizer.ggml.add_eos_token", true) })
	m2, err := Load(eos, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if _, err := m2.Tokenize("ab"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("add_eos vocab: err %v, want ErrUnsupported", err)
	}
}
