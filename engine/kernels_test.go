package engine

// A/B tests of kernel variants through the whole engine: the same model and
// tokens run with different Options.Kernels must give the same
// distributions (KLD ≈ 0), and the speed ratio is logged. Plus a prefill
// benchmark on a Q4_K_M-shaped model (Q4_K with Q6_K where llama.cpp's
// Q4_K_M recipe puts it).

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"plexbench/engine/synth"
	"plexbench/kernels"
)

// logProbs runs tokens through m and returns every position's log-softmax
// over the whole vocabulary (float64) and the wall time.
func logProbs(t *testing.T, m *Model, tokens []int32) ([][]float64, time.Duration) {
	t.Helper()
	v := m.hp.nVocab
	var rows [][]float64
	reqs := make([]RowRequest, HeadRows)
	outs := make([]RowResult, HeadRows)
	for i := range reqs {
		reqs[i].TopK = v
	}
	start := time.Now()
	err := m.Prefill(context.Background(), tokens, 0, func(pos int, hidden []float32, n int) error {
		for lo := 0; lo < n; lo += HeadRows {
			k := min(HeadRows, n-lo)
			if err := m.HeadReduce(hidden[lo*m.hp.nEmbd:], k, reqs, outs); err != nil {
				return err
			}
			for _, o := range outs[:k] {
				lp := make([]float64, v)
				for j, id := range o.TopIDs {
					lp[id] = float64(o.TopLogits[j]) - float64(o.Max) - math.Log(o.SumExp)
				}
				rows = append(rows, lp)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows, time.Since(start)
}

// meanKLD is the mean over positions of KL(p ∥ q) in nats.
func meanKLD(p, q [][]float64) float64 {
	var s float64
	for i := range p {
		for j, lp := range p[i] {
			s += math.Exp(lp) * (lp - q[i][j])
		}
	}
	return s / float64(len(p))
}

// sameKernels reports whether a and b run the same variant of every op on
// this CPU: the resolved sets, not the specs' wording (without assembly
// "matmul=gotile" is the default set; without AVX2 so is "gdn=go").
func sameKernels(a, b kernels.KernelSet) bool { return maps.Equal(a.Config(), b.Config()) }

// TestKernelVariantsAgreeOnStories260K runs the real stories260K files with
// the default kernels, the plain Go ones and matmul=ref, and bounds the
// mean KLD between them. For the float models the variants differ only in
// float summation order and in exp's last bit: KLD ≈ 0. For quantized
// models any last-bit difference flips a few roundings of the 8-bit
// activation conversion (or of P to f16), and this 64-wide model turns
// those flips into distributions about as far apart as skipping the
// conversion altogether (matmul=ref): ~3e-4 to 7e-4 nats here, which is
// the noise floor of activation quantization, not a kernel error (gotile,
// the kernels' Go twins, gives exactly the default's logits).
func TestKernelVariantsAgreeOnStories260K(t *testing.T) {
	dir := sharedData(t)
	sets := []string{"", "matmul=go,attention=go,swiglu=go", "matmul=ref", "matmul=gotile"}
	for _, name := range []string{"f32", "f16", "q8_0", "q4_k_m", "q4_0"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, "models", "stories260K-"+name+".gguf")
			n := 200
			if testing.Short() {
				n = 100 // the same code and about the same KLDs at half the cost
			}
			tokens := randomTokens(n, 512, 7)
			var base [][]float64
			var baseTime time.Duration
			var ran []kernels.KernelSet
			for _, spec := range sets {
				ks, err := kernels.ParseKernels(spec)
				if err != nil {
					t.Fatal(err)
				}
				t.Run(cmp.Or(spec, "default"), func(t *testing.T) {
					// A set that resolves to one already run here (gotile is
					// the default without assembly) would run the same code
					// again.
					for _, r := range ran {
						if testing.Short() && sameKernels(ks, r) {
							t.Skipf("short: %q resolves to the kernels of a set run above on this CPU", spec)
						}
					}
					ran = append(ran, ks)
					m, err := Load(path, Options{Threads: 2, KVLen: 256, KVType: kernels.F16, Kernels: ks})
					if err != nil {
						t.Fatal(err)
					}
					lp, took := logProbs(t, m, tokens)
					cfg := m.Config().Kernels
					m.Close()
					if spec == "" {
						base, baseTime = lp, took
						t.Logf("default kernels %v: %v", cfg, took)
						return
					}
					kld := meanKLD(base, lp)
					t.Logf("%s: KLD(default ∥ %s) = %.3g nats, time %v (%.1f× the default)", name, spec, kld, took, float64(took)/float64(baseTime))
					limit := 1e-5 // float summation order and exp's last bit
					if name != "f32" && name != "f16" {
						limit = 2e-3 // activation-rounding flips, see above
					}
					if spec == "matmul=gotile" {
						if kld != 0 { // the kernels' Go twins: bit-identical logits
							t.Errorf("%s: gotile differs from the default kernels (KLD %g)", name, kld)
						}
						return
					}
					if !(kld < limit) {
						t.Errorf("%s: KLD(default ∥ %s) = %g, want < %g", name, spec, kld, limit)
					}
				})
			}
		})
	}
}

// BenchmarkPrefillKernels measures prefill of a 512-token window on the
// Qwen3-0.6B-shaped random models in F16, Q8_0 and a Q4_K_M-like mix (Q4_K
// weights; Q6_K for attn_v and ffn_down on llama.cpp's "more bits" layers
// and for the tied embedding), threads = cores, F16 KV, with the kernel
// variants in BENCH_KERNELS (default: the fastest; e.g.
// "matmul=go,attention=go,swiglu=go" for the plain Go passes).
// BENCH_LAYERS sets the depth (default 2); tok/s@28L scales to the real 28
// layers as BenchmarkPrefill does.
func BenchmarkPrefillKernels(b *testing.B) {
	layers := benchLayers(b, 2)
	const ctx = 512
	ks, err := kernels.ParseKernels(os.Getenv("BENCH_KERNELS"))
	if err != nil {
		b.Fatal(err)
	}
	for _, mix := range []struct {
		name   string
		typeOf func(layer int, name string) kernels.Type
	}{{"F16", allOf(kernels.F16)}, {"Q8_0", allOf(kernels.Q8_0)}, {"Q4_K_M", synth.Q4KM(28)}} {
		b.Run(fmt.Sprintf("%s/ctx%d/layers%d", mix.name, ctx, layers), func(b *testing.B) {
			path := writeQwen3Shaped(b, layers, 1024, mix.typeOf)
			m, err := Load(path, Options{KVType: kernels.F16, KVLen: ctx, Kernels: ks})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			tokens := randomTokens(ctx, m.hp.nVocab, 1)
			nop := func(int, []float32, int) error { return nil }
			if err := m.Prefill(b.Context(), tokens, ctx, nop); err != nil { // warm-up
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := m.Prefill(b.Context(), tokens, ctx, nop); err != nil {
					b.Fatal(err)
				}
			}
			sec := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(ctx/sec, "tok/s")
			b.ReportMetric(ctx/sec*float64(layers)/28, "tok/s@28L")
			b.ReportMetric(0, "ns/op")
		})
	}
}
