package engine

// This file owns BenchmarkScoreWindow: what scoring a window costs on top
// of its prefill (the LM head and the pick/topk reductions), as
// scoring.Run drives the engine, on the Qwen3-0.6B-shaped model with the
// real vocabulary.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"plexbench/kernels"
)

// BenchmarkScoreWindow scores one ctx-512 chunks window of the
// Qwen3-0.6B-shaped random model in Q8_0 with Qwen3's 151936-token tied
// vocabulary: Prefill from row 256, and the 255 scored rows (256..510, as
// scoring.Run and llama-perplexity score a chunk) through HeadReduce in
// blocks of HeadRows. "ppl" asks each row for its target's logit; "kld"
// also for a base's 32 top ids and the row's own top 32 (what a KLD
// comparison that also records a base asks). Sub-benchmarks per head
// variant (head=go is the reference reduction). It reports milliseconds
// per window for the prefill (time outside HeadReduce), the LM head
// matmul and the reductions, and overhead-% = (head + reductions) /
// prefill. Reading the base file is scoring's and is not included.
// BENCH_LAYERS=n builds n layers instead of 28; BENCH_KERNELS adds
// selections for the other ops.
func BenchmarkScoreWindow(b *testing.B) {
	layers := benchLayers(b, 28)
	const (
		ctx, vocab = 512, 151936
		first      = ctx / 2
	)
	path := writeQwen3Shaped(b, layers, vocab, allOf(kernels.Q8_0))
	tokens := randomTokens(ctx, vocab, 1)
	for _, head := range []string{"go", "avx2", "avx512"} {
		spec := strings.Trim(os.Getenv("BENCH_KERNELS")+",head="+head, ",")
		ks, err := kernels.ParseKernels(spec)
		if err != nil {
			b.Logf("skipping head=%s: %v", head, err)
			continue
		}
		m, err := Load(path, Options{KVType: kernels.F16, KVLen: ctx, Kernels: ks})
		if err != nil {
			b.Fatal(err)
		}
		for _, mode := range []struct {
			name       string
			nIDs, topK int
		}{{"ppl", 1, 0}, {"kld", 33, 32}} {
			name := fmt.Sprintf("Q8_0/ctx%d/layers%d/head=%s/%s", ctx, layers, head, mode.name)
			b.Run(name, func(b *testing.B) {
				benchScoreWindow(b, m, tokens, first, mode.nIDs, mode.topK)
			})
		}
		m.Close()
	}
}

// benchScoreWindow runs the window once to warm up (weights faulted in,
// the logits buffer grown), then times b.N windows.
func benchScoreWindow(b *testing.B, m *Model, tokens []int32, first, nIDs, topK int) {
	ctx, v, e := len(tokens), m.hp.nVocab, m.hp.nEmbd
	rng := rand.New(rand.NewPCG(3, 4))
	reqs := make([]RowRequest, HeadRows)
	outs := make([]RowResult, HeadRows)
	for i := range reqs {
		reqs[i].IDs = make([]int32, nIDs)
		for j := range reqs[i].IDs[1:] { // a base's top ids: fixed, random
			reqs[i].IDs[1+j] = int32(rng.IntN(v))
		}
		reqs[i].TopK = topK
	}
	var head, reduce time.Duration
	emit := func(pos int, hidden []float32, n int) error {
		// Rows [first, ctx−1) are scored: the last has no next token.
		n = min(n, ctx-1-pos)
		for lo := 0; lo < n; lo += HeadRows {
			k := min(HeadRows, n-lo)
			for i := range k {
				reqs[i].IDs[0] = tokens[pos+lo+i+1]
			}
			t0 := time.Now()
			m.logitsOf(hidden[lo*e:], k)
			t1 := time.Now()
			m.reduce(k, reqs, outs)
			head += t1.Sub(t0)
			reduce += time.Since(t1)
		}
		return nil
	}
	if err := m.Prefill(b.Context(), tokens, first, emit); err != nil {
		b.Fatal(err)
	}
	head, reduce = 0, 0
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Prefill(b.Context(), tokens, first, emit); err != nil {
			b.Fatal(err)
		}
	}
	ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 / float64(b.N) }
	total := b.Elapsed()
	prefill := total - head - reduce
	b.ReportMetric(ms(prefill), "prefill-ms")
	b.ReportMetric(ms(head), "head-ms")
	b.ReportMetric(ms(reduce), "reduce-ms")
	b.ReportMetric(100*(head+reduce).Seconds()/prefill.Seconds(), "overhead-%")
	b.ReportMetric(float64(ctx)*float64(b.N)/total.Seconds(), "tok/s")
	b.ReportMetric(0, "ns/op")
}
