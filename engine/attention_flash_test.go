package engine

// Tests of attention=flash: logits against the float64 forward pass and
// against the default (dense) attention on the tiny models, with windows
// long enough for several key blocks and passes that start mid-cache, and
// a KLD A/B on the real stories260K files.

import (
	"math"
	"path/filepath"
	"testing"

	"plexbench/kernels"
)

func flashKernels(t testing.TB) kernels.KernelSet {
	t.Helper()
	ks, err := kernels.ParseKernels("attention=flash")
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// TestFlashAttentionMatchesReference runs 300 tokens (three key blocks)
// as passes of 64 and as one pass, with f32 and f16 KV: flash logits stay
// within the dense path's tolerance of the float64 reference (1e-4 with
// f32 KV; f16 KV as TestKVTypes allows) and within 1e-5 of the dense
// default with f32 KV.
func TestFlashAttentionMatchesReference(t *testing.T) {
	flash := flashKernels(t)
	for name, s := range specs {
		t.Run(name, func(t *testing.T) {
			// The attention op sees only the heads' shapes: qwen2's
			// (four query heads per KV head, hd 8) and llama-untied's
			// (two, hd 8) are layers 1 and 0 of the fused per-layer-KV
			// model; TestLogitsMatchReference covers their biases and
			// rope_freqs on the same path before attention.
			if testing.Short() && (name == "qwen2" || name == "llama-untied") {
				t.Skipf("short: %s's attention shapes are covered by llama-fused-qkv-per-layer-kv", name)
			}
			fx := build(t, s, 31)
			tokens := randomTokens(300, s.vocab, 32)
			want := fx.reference(tokens)
			kvs := []kernels.Type{kernels.F32, kernels.F16}
			if testing.Short() && name != "qwen3" {
				// The f16 cache's rounding does not depend on the heads'
				// grouping: qwen3 here and TestFlashAttentionOpMatchesReference
				// run it; the other shapes run with f32 KV, the tight bound.
				kvs = kvs[:1]
			}
			for _, kv := range kvs {
				tolRef, tolDense := 1e-4, 1e-5
				if kv == kernels.F16 {
					tolRef, tolDense = 2e-3, 2e-3
				}
				for _, ub := range []int{64, len(tokens)} {
					opt := Options{KVType: kv, KVLen: len(tokens), UBatchSize: ub}
					dense := engineLogits(t, open(t, fx, opt), tokens)
					opt.Kernels = flash
					got := engineLogits(t, open(t, fx, opt), tokens)
					worstRef, worstDense := 0.0, 0.0
					for i := range want {
						worstRef = max(worstRef, relErr(got[i], want[i]))
						worstDense = max(worstDense, relErr(got[i], dense[i]))
					}
					if worstRef > tolRef {
						t.Errorf("kv %v ubatch %d: flash vs reference: max relative logit error %.3g > %g", kv, ub, worstRef, tolRef)
					}
					if worstDense > tolDense {
						t.Errorf("kv %v ubatch %d: flash vs dense: max relative difference %.3g > %g", kv, ub, worstDense, tolDense)
					}
					t.Logf("kv %v ubatch %d: flash vs reference %.3g, vs dense %.3g", kv, ub, worstRef, worstDense)
				}
			}
		})
	}
}

// TestFlashAttentionOpMatchesReference runs the attention op alone, dense
// and attention=flash, on random Q/K/V over 300 tokens (three key blocks,
// the last partial) as passes of 64 and as one pass, and compares it with
// the float64 causal attention on the K/V the cache holds: 1e-5 with f32
// KV, 2e-3 with f16 KV (the queries and, dense, P are rounded to f16 for
// the products, as mul_mat does).
func TestFlashAttentionOpMatchesReference(t *testing.T) {
	fx := build(t, attnSpec, 43)
	nh, nkv, hd := attnSpec.heads, attnSpec.kvHeads, attnSpec.hd
	const L = 300
	q, k, v := structuredQKV(L, nh, nkv, hd, 5)
	for _, variant := range []string{"", "attention=flash"} {
		ks, err := kernels.ParseKernels(variant)
		if err != nil {
			t.Fatal(err)
		}
		for kv, tol := range map[kernels.Type]float64{kernels.F32: 1e-5, kernels.F16: 2e-3} {
			for _, ub := range []int{64, L} {
				m := open(t, fx, Options{KVType: kv, KVLen: L, UBatchSize: ub, Kernels: ks})
				got, kr, vr := attentionOp(m, q, k, v, L)
				want := causalAttention64(rows64(q, L, nh*hd), rows64(kr, L, nkv*hd), rows64(vr, L, nkv*hd),
					nh, nkv, hd, float64(attnScale(hd)))
				worst := 0.0
				for t, row := range want {
					for i, w := range row {
						worst = max(worst, math.Abs(float64(got[t*nh*hd+i])-w)/(1+math.Abs(w)))
					}
				}
				if worst > tol {
					t.Errorf("%q kv %v ubatch %d: max error %.3g > %g against the float64 attention", variant, kv, ub, worst, tol)
				}
				t.Logf("%q kv %v ubatch %d: max error %.3g", variant, kv, ub, worst)
			}
		}
	}
}

// TestFlashSteadyStateAllocs checks that flash passes allocate nothing once
// the workers' scratch has grown (one thread; see TestSteadyStateAllocs).
func TestFlashSteadyStateAllocs(t *testing.T) {
	fx := build(t, specs["qwen3"], 20)
	m := open(t, fx, Options{Threads: 1, KVType: kernels.F16, KVLen: 300, UBatchSize: 64, Kernels: flashKernels(t)})
	tokens := randomTokens(300, 64, 1)
	nop := func(int, []float32, int) error { return nil }
	run := func() {
		if err := m.Prefill(t.Context(), tokens, len(tokens), nop); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if a := testing.AllocsPerRun(allocRuns(), run); a != 0 {
		t.Errorf("%v allocations per flash prefill in steady state, want 0", a)
	}
}

// TestFlashAgreesOnStories260K is the A/B of attention=flash against the
// default attention on the real float stories260K files (256 tokens, two
// key blocks), f32 and f16 KV: the distributions agree (mean KLD < 1e-5;
// only float summation order, exp's rounding and, with f16 KV, the dense
// path's rounding of P to f16 differ), and the time ratio is logged.
func TestFlashAgreesOnStories260K(t *testing.T) {
	dir := sharedData(t)
	flash := flashKernels(t)
	for _, name := range []string{"f32", "f16"} {
		t.Run(name, func(t *testing.T) {
			// attention=flash changes attention only, whose inputs are
			// f32 whatever the weights; the f16 weights' matmuls are
			// TestKernelVariantsAgreeOnStories260K's.
			if testing.Short() && name != "f32" {
				t.Skip("short: the f16 weights run the same attention as f32")
			}
			path := filepath.Join(dir, "models", "stories260K-"+name+".gguf")
			tokens := randomTokens(256, 512, 7)
			for _, kv := range []kernels.Type{kernels.F32, kernels.F16} {
				load := func(ks kernels.KernelSet) *Model {
					m, err := Load(path, Options{Threads: 2, KVLen: 256, KVType: kv, Kernels: ks})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { m.Close() })
					return m
				}
				base, baseTime := logProbs(t, load(kernels.KernelSet{}), tokens)
				lp, took := logProbs(t, load(flash), tokens)
				kld := meanKLD(base, lp)
				t.Logf("%s kv %v: KLD(default ∥ attention=flash) = %.3g nats, time %v vs %v (%.2f× the default)",
					name, kv, kld, took, baseTime, float64(took)/float64(baseTime))
				if !(kld < 1e-5) {
					t.Errorf("%s kv %v: KLD(default ∥ attention=flash) = %g, want < 1e-5", name, kv, kld)
				}
			}
		})
	}
}
