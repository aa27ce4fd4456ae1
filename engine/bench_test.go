package engine

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
	layers := 28
	if s := os.Getenv("BENCH_LAYERS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("BENCH_LAYERS=%q", s)
		}
		layers = n
	}
	const ctx = 512
	for _, wt := range []kernels.Type{kernels.F16, kernels.Q8_0} {
		b.Run(fmt.Sprintf("%v/ctx%d/layers%d", wt, ctx, layers), func(b *testing.B) {
			path := writeQwen3Shaped(b, wt, layers)
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

// writeQwen3Shaped writes a random qwen3 model with Qwen3-0.6B's layer
// shapes and a 1024-token vocabulary; values are drawn once and reused
// across tensors.
func writeQwen3Shaped(b *testing.B, wt kernels.Type, layers int) string {
	return writeQwen3ShapedVocab(b, wt, layers, 1024)
}

// writeQwen3ShapedVocab is writeQwen3Shaped with vocab tokens (the real
// model has 151936; the embedding is tied, so it is the LM head too).
func writeQwen3ShapedVocab(b *testing.B, wt kernels.Type, layers, vocab int) string {
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
	w.Set("tokenizer.ggml.model", "llama")
	w.Set("tokenizer.ggml.tokens", toks)
	w.Set("tokenizer.ggml.scores", scores)
	w.Set("tokenizer.ggml.token_type", types)
	w.Set("tokenizer.ggml.bos_token_id", uint32(1))
	w.Set("tokenizer.ggml.eos_token_id", uint32(2))
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
	add("token_embd.weight", wt, embd, vocab)
	add("output_norm.weight", kernels.F32, embd, 1)
	for l := range layers {
		p := fmt.Sprintf("blk.%d.", l)
		add(p+"attn_norm.weight", kernels.F32, embd, 1)
		add(p+"attn_q.weight", wt, embd, heads*hd)
		add(p+"attn_k.weight", wt, embd, kvHeads*hd)
		add(p+"attn_v.weight", wt, embd, kvHeads*hd)
		add(p+"attn_q_norm.weight", kernels.F32, hd, 1)
		add(p+"attn_k_norm.weight", kernels.F32, hd, 1)
		add(p+"attn_output.weight", wt, heads*hd, embd)
		add(p+"ffn_norm.weight", kernels.F32, embd, 1)
		add(p+"ffn_gate.weight", wt, embd, ff)
		add(p+"ffn_up.weight", wt, embd, ff)
		add(p+"ffn_down.weight", wt, ff, embd)
	}
	path := filepath.Join(b.TempDir(), "qwen3-0.6b-shaped.gguf")
	if err := w.WriteFile(path); err != nil {
		b.Fatal(err)
	}
	return path
}
