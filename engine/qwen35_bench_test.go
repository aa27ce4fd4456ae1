package engine

// Benchmarks of the Gated DeltaNet hybrids: whole prefill of synth's
// qwen35-0.8b and qwen35moe-small shapes, and one GDN layer against one
// full-attention layer of the same width.

import (
	"fmt"
	"path/filepath"
	"testing"

	"plexbench/engine/synth"
	"plexbench/kernels"
)

// BenchmarkHybridPrefill measures prefill (LM head excluded, so the
// vocabulary is cut to 1024) of windows of 512 and 2048 tokens, Q8_0
// weights, F16 KV, threads = cores, with the per-token GDN recurrence in
// plain Go (gdn=go) and with the default (the vectorised recurrence where
// the CPU has AVX2). BENCH_LAYERS=n builds n layers.
func BenchmarkHybridPrefill(b *testing.B) {
	dir := b.TempDir() // the models outlive each sub-benchmark
	for _, preset := range []string{"qwen35-0.8b", "qwen35moe-small"} {
		h, err := synth.HybridPreset(preset)
		if err != nil {
			b.Fatal(err)
		}
		h.Layers = benchLayers(b, h.Layers)
		h.Types, h.Vocab, h.Seed = synth.AllOf(kernels.Q8_0), synth.PlaceholderVocab(1024), 1
		var path string
		for _, ctx := range []int{512, 2048} {
			for _, gdn := range []string{"go", "default"} {
				b.Run(fmt.Sprintf("%s/q8_0/ctx%d/gdn=%s", preset, ctx, gdn), func(b *testing.B) {
					if path == "" {
						path = filepath.Join(dir, preset+".gguf")
						if err := synth.WriteHybrid(path, h); err != nil {
							b.Fatal(err)
						}
					}
					benchPrefillWindow(b, path, ctx, "gdn="+gdn)
				})
			}
		}
	}
}

// BenchmarkHybridMixer compares one GDN layer with one full-attention
// layer of qwen35-0.8b's width (FFN cut to 32 so that the layer is its
// mixer) over windows of 2048 tokens in passes of 512: ns per token.
func BenchmarkHybridMixer(b *testing.B) {
	for _, kind := range []string{"gdn", "attention"} {
		h, err := synth.HybridPreset("qwen35-0.8b")
		if err != nil {
			b.Fatal(err)
		}
		h.Layers, h.Recurrent, h.FF = 1, []bool{kind == "gdn"}, 32
		h.Types, h.Vocab, h.Seed = synth.AllOf(kernels.Q8_0), synth.PlaceholderVocab(1024), 1
		b.Run(kind+"/q8_0/ctx2048", func(b *testing.B) {
			path := filepath.Join(b.TempDir(), kind+".gguf")
			if err := synth.WriteHybrid(path, h); err != nil {
				b.Fatal(err)
			}
			benchPrefillWindow(b, path, 2048, "")
		})
	}
}

// benchPrefillWindow loads path, warms up with one window of ctx tokens
// (faulting the mapping and the KV cache in, growing the scratch), then
// measures windows, reporting tok/s and ns per token; it returns the
// seconds per window.
func benchPrefillWindow(b *testing.B, path string, ctx int, kernelSpec string) float64 {
	ks, err := kernels.ParseKernels(kernelSpec)
	if err != nil {
		b.Fatal(err)
	}
	m, err := Load(path, Options{KVType: kernels.F16, KVLen: ctx, Kernels: ks})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	tokens := randomTokens(ctx, m.hp.nVocab, 1)
	nop := func(int, []float32, int) error { return nil }
	if err := m.Prefill(b.Context(), tokens, ctx, nop); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := m.Prefill(b.Context(), tokens, ctx, nop); err != nil {
			b.Fatal(err)
		}
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(ctx)/sec, "tok/s")
	b.ReportMetric(sec/float64(ctx)*1e9, "ns/tok")
	b.ReportMetric(0, "ns/op")
	return sec
}
