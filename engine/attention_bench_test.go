package engine

// This file owns BenchmarkAttention, the attention op alone over one
// window, dense against FlashPrefill V2, and BenchmarkPrefillFlashPrefill,
// the whole prefill.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"plexbench/engine/synth"
	"plexbench/kernels"
)

// benchQKV is one window's Q (L, nh, hd) and K, V (L, nkv, hd). "random"
// is unit normal everywhere: every key block scores alike, so FlashPrefill
// keeps nearly everything. "structured" adds the spec's patterns on top:
// a vertical column (every 16th key block carries a direction u that every
// query shares) and a slash (the queries of block i share a direction
// with the keys of block i − 8), each worth about 3 nats of block score
// over the rest at τ = 1/sqrt(128).
func benchQKV(kind string, L, nh, nkv, hd int) (q, k, v []float32) {
	rng := rand.New(rand.NewPCG(uint64(L), 7))
	r := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	q, k, v = r(L*nh*hd), r(L*nkv*hd), r(L*nkv*hd)
	if kind == "structured" {
		const c = 6 // τ·c² ≈ 3.2 nats
		half := hd / 2
		for t := range L {
			blk := t / 128
			for g := range nkv {
				row := k[(t*nkv+g)*hd:][:hd]
				if blk%16 == 0 {
					row[0] += c
				}
				row[1+blk%(half-1)] += c
			}
			for h := range nh {
				row := q[(t*nh+h)*hd:][:hd]
				row[0] += c
				if blk >= 8 {
					row[1+(blk-8)%(half-1)] += c
				}
			}
		}
	}
	return q, k, v
}

// benchCtxs are the window lengths BenchmarkAttention runs: BENCH_CTX
// ("4096,8192") or the four.
func benchCtxs(b *testing.B) []int {
	s := os.Getenv("BENCH_CTX")
	if s == "" {
		return []int{4096, 8192, 16384, 32768}
	}
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("BENCH_CTX=%q", s)
		}
		out = append(out, n)
	}
	return out
}

// BenchmarkAttention measures one layer's prefill attention over a window
// of ctx tokens of the Qwen3-0.6B attention shape (16 query heads, 8 KV
// heads of 128) and of qwen35-0.8b's full-attention layers (8 query heads,
// 2 KV heads of 256), F16 KV, passes of 512 as scoring runs them, threads =
// cores: dense (the default attention kernel; the data does not change its
// cost, so it runs on random Q/K only) and FlashPrefill V2 with qwen3's
// default parameters (α = 0.12) on random and structured Q/K, reporting
// the kept fraction of causal blocks. BENCH_CTX picks the lengths.
func BenchmarkAttention(b *testing.B) {
	q35, err := synth.HybridPreset("qwen35-0.8b")
	if err != nil {
		b.Fatal(err)
	}
	q35.Layers, q35.Recurrent, q35.FF = 1, []bool{false}, 32 // one full-attention layer
	q35.Types, q35.Vocab, q35.Seed = synth.AllOf(kernels.F16), synth.PlaceholderVocab(1024), 1
	for _, shape := range []string{"qwen3-0.6b", "qwen35-0.8b"} {
		var path string
		nh, nkv, hd := synth.Heads, synth.KVHeads, synth.HeadDim
		if shape == "qwen3-0.6b" {
			path = writeQwen3Shaped(b, 1, 1024, allOf(kernels.F16))
		} else {
			path = filepath.Join(b.TempDir(), "qwen35-attn.gguf")
			if err := synth.WriteHybrid(path, q35); err != nil {
				b.Fatal(err)
			}
			nh, nkv, hd = q35.Heads, q35.KVHeads, q35.HeadDim
		}
		for _, ctx := range benchCtxs(b) {
			for _, mode := range []string{"dense", "flashprefill-v2/random", "flashprefill-v2/structured"} {
				b.Run(fmt.Sprintf("%s/ctx%d/%s", shape, ctx, mode), func(b *testing.B) {
					opt := Options{KVType: kernels.F16, KVLen: ctx}
					if mode != "dense" {
						f := kernels.DefaultFlashPrefill(-1)
						opt.FlashPrefill = &f
					}
					m, err := Load(path, opt)
					if err != nil {
						b.Fatal(err)
					}
					defer m.Close()
					kind, _ := strings.CutPrefix(mode, "flashprefill-v2/")
					q, k, v := benchQKV(kind, ctx, nh, nkv, hd)
					var kept int64
					for b.Loop() {
						kept = runAttention(m, q, k, v, ctx, nil)
					}
					frac := 1.0
					if opt.FlashPrefill != nil {
						mb := int64(opt.FlashPrefill.Blocks(ctx))
						frac = float64(kept) / float64(int64(nh)*mb*(mb+1)/2)
					}
					reportWindow(b, ctx, frac)
				})
			}
		}
	}
}

// BenchmarkPrefillFlashPrefill measures the whole prefill of a 4096-token
// window of the random Qwen3-0.6B-shaped model (F16 weights and KV,
// passes of 512), dense against FlashPrefill V2 at qwen3's defaults, with
// the kept fraction. Random weights give near-uniform attention, so
// FlashPrefill keeps most blocks here. BENCH_LAYERS=n builds n layers.
func BenchmarkPrefillFlashPrefill(b *testing.B) {
	layers := benchLayers(b, 28)
	const ctx = 4096
	path := writeQwen3Shaped(b, layers, 1024, allOf(kernels.F16))
	for _, mode := range []string{"dense", "flashprefill-v2"} {
		b.Run(fmt.Sprintf("ctx%d/layers%d/%s", ctx, layers, mode), func(b *testing.B) {
			opt := Options{KVType: kernels.F16, KVLen: ctx}
			if mode != "dense" {
				f := kernels.DefaultFlashPrefill(-1)
				opt.FlashPrefill = &f
			}
			m, err := Load(path, opt)
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			tokens := randomTokens(ctx, m.hp.nVocab, 1)
			nop := func(int, []float32, int) error { return nil }
			for b.Loop() {
				if err := m.Prefill(b.Context(), tokens, ctx, nop); err != nil {
					b.Fatal(err)
				}
			}
			reportWindow(b, ctx, m.PrefillBlocks().Fraction())
		})
	}
}

// reportWindow reports a window benchmark's kept fraction, seconds per
// window and tokens per second.
func reportWindow(b *testing.B, ctx int, kept float64) {
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(kept, "kept")
	b.ReportMetric(sec, "s/op")
	b.ReportMetric(float64(ctx)/sec, "tok/s")
	b.ReportMetric(0, "ns/op")
}
