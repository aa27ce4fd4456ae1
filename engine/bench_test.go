package engine

// This file owns BenchmarkPrefill and what the engine's benchmarks share:
// the Qwen3-0.6B-shaped random model and BENCH_LAYERS.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"plexbench/engine/synth"
	"plexbench/kernels"
)

// BenchmarkPrefill measures prefill of a 512-token window on a model shaped
// like Qwen3-0.6B (hidden 1024, 28 layers, 16/8 heads of 128, FFN 3072)
// with random weights, at threads = cores, F16 KV, after one warm-up
// window. Prefill excludes the LM head, so the vocabulary is cut to 1024
// (tied) to keep the file small. BENCH_LAYERS=n builds n layers instead
// and adds "tok/s@28L", the rate scaled to 28 layers (it reads high: fewer
// layers' weights stay warmer in cache).
func BenchmarkPrefill(b *testing.B) {
	layers := benchLayers(b, 28)
	const ctx = 512
	for _, wt := range []kernels.Type{kernels.F16, kernels.Q8_0} {
		b.Run(fmt.Sprintf("%v/ctx%d/layers%d", wt, ctx, layers), func(b *testing.B) {
			path := writeQwen3Shaped(b, layers, 1024, allOf(wt))
			b.ReportAllocs()
			sec := benchPrefillWindow(b, path, ctx, "")
			if layers != 28 {
				b.ReportMetric(ctx/sec*float64(layers)/28, "tok/s@28L")
			}
		})
	}
}

// benchLayers is the model depth a benchmark builds: BENCH_LAYERS if set,
// else def.
func benchLayers(b *testing.B, def int) int {
	s := os.Getenv("BENCH_LAYERS")
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("BENCH_LAYERS=%q", s)
	}
	return n
}

// writeQwen3Shaped writes synth's random Qwen3-0.6B-shaped model with
// layers blocks and a placeholder vocabulary of vocab tokens (the real
// model has 151936; the embedding is tied, so it is the LM head too) into
// b.TempDir(). typeOf gives each matrix's type by layer (−1 for
// token_embd) and name within the layer; norms are F32.
func writeQwen3Shaped(b *testing.B, layers, vocab int, typeOf func(layer int, name string) kernels.Type) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "qwen3-0.6b-shaped.gguf")
	cfg := synth.Config{Layers: layers, Types: typeOf, Vocab: synth.PlaceholderVocab(vocab)}
	if err := synth.Write(path, cfg); err != nil {
		b.Fatal(err)
	}
	return path
}

// allOf is a writeQwen3Shaped typeOf that stores every matrix as wt.
func allOf(wt kernels.Type) func(int, string) kernels.Type { return synth.AllOf(wt) }
