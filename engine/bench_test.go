package engine

// This file owns BenchmarkPrefill and what the engine's benchmarks share:
// the Qwen3-0.6B-shaped random model and BENCH_LAYERS.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"plexbench/engine/gguf"
	"plexbench/kernels"
)

// BenchmarkPrefill measures prefill of a 512-token window on a model shaped
// like Qwen3-0.6B (hidden 1024, 28 layers, 16/8 heads of 128, FFN 3072)
// with random weights, at threads = cores, F16 KV, after one warm-up
// window. Prefill excludes the LM head, so the vocabulary is cut to 1024
// (tied) to keep the file small. Building the two models takes most of the
// ~40 s a run needs; BENCH_LAYERS=n builds n layers instead and adds
// "tok/s@28L", the rate scaled to 28 layers (it reads high: fewer layers'
// weights stay warmer in cache).
func BenchmarkPrefill(b *testing.B) {
	layers := benchLayers(b, 28)
	const ctx = 512
	for _, wt := range []kernels.Type{kernels.F16, kernels.Q8_0} {
		b.Run(fmt.Sprintf("%v/ctx%d/layers%d", wt, ctx, layers), func(b *testing.B) {
			path := writeQwen3Shaped(b, layers, 1024, allOf(wt))
			m, err := Load(path, Options{KVType: kernels.F16, KVLen: ctx})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			tokens := randomTokens(ctx, m.hp.nVocab, 1)
			nop := func(int, []float32, int) error { return nil }
			// Warm up: fault the weight mapping and the KV cache in and grow
			// the scratch buffers, so the loop measures steady-state passes.
			if err := m.Prefill(b.Context(), tokens, ctx, nop); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := m.Prefill(b.Context(), tokens, ctx, nop); err != nil {
					b.Fatal(err)
				}
			}
			sec := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(ctx/sec, "tok/s")
			if layers != 28 {
				b.ReportMetric(ctx/sec*float64(layers)/28, "tok/s@28L")
			}
			b.ReportMetric(0, "ns/op")
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

// writeQwen3Shaped writes a random qwen3 model with Qwen3-0.6B's layer
// shapes, layers blocks and vocab tokens (the real model has 151936; the
// embedding is tied, so it is the LM head too). typeOf gives each matrix's
// type by layer (−1 for token_embd) and name within the layer; norms are
// F32. Values are drawn once from a seeded pool and reused across tensors.
func writeQwen3Shaped(b *testing.B, layers, vocab int, typeOf func(layer int, name string) kernels.Type) string {
	b.Helper()
	const (
		embd, heads, kvHeads, hd, ff = 1024, 16, 8, 128, 3072
	)
	rng := rand.New(rand.NewPCG(1, 2))
	pool := make([]float32, 1<<20+4096)
	for i := range pool {
		pool[i] = float32(rng.NormFloat64() * 0.03)
	}
	w := gguf.NewWriter()
	w.Set("general.architecture", "qwen3")
	w.Set("qwen3.context_length", uint32(40960))
	w.Set("qwen3.embedding_length", uint32(embd))
	w.Set("qwen3.block_count", uint32(layers))
	w.Set("qwen3.feed_forward_length", uint32(ff))
	w.Set("qwen3.attention.head_count", uint32(heads))
	w.Set("qwen3.attention.head_count_kv", uint32(kvHeads))
	w.Set("qwen3.attention.key_length", uint32(hd))
	w.Set("qwen3.attention.value_length", uint32(hd))
	w.Set("qwen3.rope.freq_base", float32(1e6))
	w.Set("qwen3.attention.layer_norm_rms_epsilon", float32(1e-6))
	toks, scores, types := spmVocab(min(vocab, 1024))
	for i := len(toks); i < vocab; i++ { // spmVocab repeats pieces past ~1350
		toks = append(toks, fmt.Sprintf("\u2581t%d", i))
		scores = append(scores, -float32(i))
		types = append(types, 1)
	}
	setSPMTokenizer(w, toks, scores, types)
	off := 0
	add := func(name string, typ kernels.Type, cols, rows int) {
		data := make([]byte, typ.RowBytes(cols)*rows)
		rb := typ.RowBytes(cols)
		for r := range rows {
			off = (off + 4099) % (len(pool) - cols)
			if err := kernels.Quantize(typ, pool[off:off+cols], data[r*rb:(r+1)*rb]); err != nil {
				b.Fatal(err)
			}
		}
		dims := []int64{int64(cols), int64(rows)}
		if rows == 1 {
			dims = dims[:1]
		}
		if err := w.AddTensor(name, typ, dims, data); err != nil {
			b.Fatal(err)
		}
	}
	add("token_embd.weight", typeOf(-1, "token_embd.weight"), embd, vocab)
	add("output_norm.weight", kernels.F32, embd, 1)
	for l := range layers {
		p := fmt.Sprintf("blk.%d.", l)
		mat := func(name string, cols, rows int) { add(p+name, typeOf(l, name), cols, rows) }
		add(p+"attn_norm.weight", kernels.F32, embd, 1)
		mat("attn_q.weight", embd, heads*hd)
		mat("attn_k.weight", embd, kvHeads*hd)
		mat("attn_v.weight", embd, kvHeads*hd)
		add(p+"attn_q_norm.weight", kernels.F32, hd, 1)
		add(p+"attn_k_norm.weight", kernels.F32, hd, 1)
		mat("attn_output.weight", heads*hd, embd)
		add(p+"ffn_norm.weight", kernels.F32, embd, 1)
		mat("ffn_gate.weight", embd, ff)
		mat("ffn_up.weight", embd, ff)
		mat("ffn_down.weight", ff, embd)
	}
	path := filepath.Join(b.TempDir(), "qwen3-0.6b-shaped.gguf")
	if err := w.WriteFile(path); err != nil {
		b.Fatal(err)
	}
	return path
}

// allOf is a writeQwen3Shaped typeOf that stores every matrix as wt.
func allOf(wt kernels.Type) func(int, string) kernels.Type {
	return func(int, string) kernels.Type { return wt }
}
