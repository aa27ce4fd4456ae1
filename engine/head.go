package engine

// This file owns the LM head and its logit reductions: HeadReduce applies
// the output matrix to up to HeadRows hidden rows at once into one reused
// buffer and runs the pick and topk reductions (KernelSet.Pick / TopK,
// the run's "head" variant) on each row, rows split over the pool, so
// nothing vocabulary-sized outlives the call.
//
// The output matrix is repacked once, on the first HeadReduce, into the
// matmul variant's panel layout (kernels.Prepack) when that layout costs
// at most maxPackRatio times the matrix's own bytes: Q8_0 heads (576
// bytes per 16×32 weights against 544, so ≈175 MB of heap for Qwen3's
// 151936 × 1024 head). Each call then reads the panels in place instead of
// repacking every panel for at most HeadRows tokens, which cost a quarter
// of the head's time; the panels and so the logits are bit-identical.
// Types whose panels are wider than their blocks (Q4_0, K-quants: up to
// 2.3×) keep repacking per call rather than double the head's memory.

import (
	"fmt"

	"plexbench/kernels"
)

// headState is the LM head's reusable scratch.
type headState struct {
	logits []float32 // (HeadRows, n_vocab), allocated on first use
	ms     kernels.MatScratch
	// The output matrix's prepacked panels (nil: repack per call), made
	// on the first call; packTried stops retrying a refused pack.
	packed    *kernels.PackedMatrix
	packTried bool
	// One HeadReduce call's rows, read by the bound pool callback.
	reqs []RowRequest
	out  []RowResult
	run  func(worker, lo, hi int)
}

// maxPackRatio bounds the prepacked head's memory relative to the output
// matrix's bytes (see the file comment).
const maxPackRatio = 1.25

// logitsOf computes the logits of n hidden rows (with output.bias if any)
// into the reused buffer.
func (m *Model) logitsOf(hidden []float32, n int) []float32 {
	v := m.hp.nVocab
	h := &m.head
	if h.logits == nil {
		h.logits = make([]float32, HeadRows*v)
	}
	logits := h.logits[:n*v]
	ks := m.opt.Kernels
	if !h.packTried {
		h.packTried = true
		if b := ks.PackedBytes(m.output); b > 0 && float64(b) <= maxPackRatio*float64(len(m.output.Data)) {
			// An error leaves packed nil: the per-call repack is correct too.
			h.packed, _ = ks.Prepack(m.pool, m.output)
		}
	}
	if h.packed != nil {
		ks.MatMulPacked(m.pool, logits, h.packed, hidden, n, &h.ms)
	} else {
		ks.MatMul(m.pool, logits, m.output, hidden, n, &h.ms)
	}
	if m.outBias != nil {
		for r := range n {
			row := logits[r*v : (r+1)*v]
			for i, b := range m.outBias {
				row[i] += b
			}
		}
	}
	return logits
}

// HeadReduce applies the LM head to n <= HeadRows hidden rows and, for each
// row i, writes to out[i] the row's max, argmax and Σ exp(logit − max), the
// logits of reqs[i].IDs, and its reqs[i].TopK largest logits. The result
// slices reuse out[i]'s capacity (grown when short).
func (m *Model) HeadReduce(hidden []float32, n int, reqs []RowRequest, out []RowResult) error {
	e, v := m.hp.nEmbd, m.hp.nVocab
	switch {
	case n < 0 || n > HeadRows:
		return fmt.Errorf("%w: HeadReduce of %d rows (at most %d)", ErrInput, n, HeadRows)
	case len(hidden) < n*e:
		return fmt.Errorf("%w: HeadReduce: %d hidden values for %d rows of %d", ErrInput, len(hidden), n, e)
	case len(reqs) < n || len(out) < n:
		return fmt.Errorf("%w: HeadReduce: %d rows but %d requests and %d results", ErrInput, n, len(reqs), len(out))
	}
	for i, rq := range reqs[:n] {
		if rq.TopK < 0 || rq.TopK > v {
			return fmt.Errorf("%w: row %d asks for the top %d of %d logits", ErrInput, i, rq.TopK, v)
		}
		for _, id := range rq.IDs {
			if id < 0 || int(id) >= v {
				return fmt.Errorf("%w: row %d asks for token %d, outside the vocabulary [0,%d)", ErrInput, i, id, v)
			}
		}
	}
	if n == 0 {
		return nil
	}
	if m.dev.headFits(reqs[:n]) {
		return m.dev.head.reduce(hidden, n, reqs, out)
	}
	m.logitsOf(hidden, n)
	m.reduce(n, reqs, out)
	return nil
}

// reduce runs the reductions on the first n rows of the logits buffer,
// whole rows per worker: each row is a long independent scan.
func (m *Model) reduce(n int, reqs []RowRequest, out []RowResult) {
	h := &m.head
	h.reqs, h.out = reqs[:n], out[:n]
	if h.run == nil {
		h.run = m.reduceRows
	}
	m.pool.For(n, 1, h.run)
	h.reqs, h.out = nil, nil
}

// reduceRows runs the pick and topk reductions on rows [lo, hi).
func (m *Model) reduceRows(_, lo, hi int) {
	h, v, ks := &m.head, m.hp.nVocab, m.opt.Kernels
	for i := lo; i < hi; i++ {
		rq, o := &h.reqs[i], &h.out[i]
		row := h.logits[i*v : (i+1)*v]
		o.Picked = kernels.Grow(o.Picked, len(rq.IDs))
		o.Max, o.ArgMax, o.SumExp = ks.Pick(row, rq.IDs, o.Picked)
		o.TopIDs = kernels.Grow(o.TopIDs, rq.TopK)
		o.TopLogits = kernels.Grow(o.TopLogits, rq.TopK)
		ks.TopK(row, rq.TopK, o.TopIDs, o.TopLogits)
	}
}
