package engine

// This file owns one forward pass: the buffers a pass of up to ubatch
// tokens works in (allocated once at Load), the token embedding, the
// linear layers, and the pass plan that feeds a token sequence through
// passes appended to the KV cache.

import (
	"context"
	"fmt"

	"plexbench/kernels"
)

// pass holds the activations of the current pass: n tokens at positions
// pos0 .. pos0+n-1. Row t of every buffer belongs to token t.
type pass struct {
	m      *Model
	n      int
	pos0   int
	tokens []int32

	x      []float32 // (ub, n_embd) residual stream
	xn     []float32 // (ub, n_embd) normed input of a sub-block
	tmp    []float32 // (ub, n_embd) sub-block output
	q      []float32 // (ub, n_head·hd)
	k, v   []float32 // (ub, n_head_kv·hd)
	att    []float32 // (ub, n_head·hd) attention output, heads concatenated
	gate   []float32 // (ub, n_ff)
	up     []float32 // (ub, n_ff)
	hidden []float32 // (ub, n_embd) output-normed rows handed to emit
	normed bool      // the device stack wrote all n rows of hidden (outputNorm is a view)
	cos    []float32 // (ub, n_rot/2) RoPE table of this pass's positions
	sin    []float32 // (ub, n_rot/2)

	ms   kernels.MatScratch
	attn attnJob
	hyb  hybridScratch // the hybrids' own buffers (gate.go, gdn.go, moe.go)

	// The row-parallel elementwise ops take their arguments from args and
	// run as pool callbacks bound once, so that no call allocates.
	args                    rowArgs
	normFn, ropeFn, storeFn func(worker, lo, hi int)
	gateFn                  func(worker, lo, hi int)
}

// rowArgs are the arguments of the current row-parallel op.
type rowArgs struct {
	out, in, w []float32
	heads      int
	layer      int
}

// rowGrain is the least number of floats a row-parallel chunk handles,
// so that small passes (decode) stay on one goroutine.
const rowGrain = 8192

func newPass(m *Model) *pass {
	hp, ub := m.hp, m.ub
	var maxQ, maxKV, maxFF int
	for l := range hp.nLayer {
		maxQ = max(maxQ, hp.nHead[l]*hp.headDim)
		maxKV = max(maxKV, hp.nHeadKV[l]*hp.headDim)
		maxFF = max(maxFF, hp.nFF[l])
	}
	maxFF = max(maxFF, hp.moe.ffShared) // the shared expert runs through swiglu
	p := &pass{
		m:      m,
		x:      make([]float32, ub*hp.nEmbd),
		xn:     make([]float32, ub*hp.nEmbd),
		tmp:    make([]float32, ub*hp.nEmbd),
		q:      make([]float32, ub*maxQ),
		k:      make([]float32, ub*maxKV),
		v:      make([]float32, ub*maxKV),
		att:    make([]float32, ub*maxQ),
		gate:   make([]float32, ub*maxFF),
		up:     make([]float32, ub*maxFF),
		hidden: make([]float32, ub*hp.nEmbd),
		cos:    make([]float32, ub*hp.nRot/2),
		sin:    make([]float32, ub*hp.nRot/2),
	}
	p.normFn, p.ropeFn, p.storeFn = p.normRange, p.ropeRange, p.storeRange
	p.gateFn = p.gateRange
	p.attn.init(p)
	return p
}

// linear computes out = W·in (+ bias) for the pass's tokens.
func (p *pass) linear(out []float32, w *kernels.Matrix, bias []float32, in []float32) {
	p.matmul(out, w, in, p.n)
	if bias != nil {
		for t := range p.n {
			row := out[t*w.Rows : (t+1)*w.Rows]
			for i, b := range bias {
				row[i] += b
			}
		}
	}
}

// matmul computes out = W·in for n rows of in (n ≤ the pass size).
func (p *pass) matmul(out []float32, w *kernels.Matrix, in []float32, n int) {
	p.m.opt.Kernels.MatMul(p.m.pool, out, w, in, n, &p.ms)
}

// addTo adds y into the residual stream x row by row (f32).
func (p *pass) addTo(x, y []float32) {
	n := p.n * p.m.hp.nEmbd
	x, y = x[:n], y[:n]
	for i := range x {
		x[i] += y[i]
	}
}

// embed looks the pass's tokens up in token_embd (rows dequantized exactly).
func (p *pass) embed() {
	e := p.m.hp.nEmbd
	for t, id := range p.tokens {
		kernels.DequantizeRow(p.m.tokEmbd, int(id), p.x[t*e:(t+1)*e])
	}
}

// run feeds tokens, which start at position pos0, through passes of at most
// ub tokens appended to the KV cache. After each pass, after(p) sees the
// pass's final residual stream in p.x. ctx is checked between passes.
func (m *Model) run(ctx context.Context, tokens []int32, pos0 int, after func(p *pass) error) error {
	if err := m.checkTokens(tokens, pos0); err != nil {
		return err
	}
	p := m.p
	for start := 0; start < len(tokens); start += m.ub {
		if err := ctx.Err(); err != nil {
			return err
		}
		p.tokens = tokens[start:min(start+m.ub, len(tokens))]
		p.n, p.pos0 = len(p.tokens), pos0+start
		if p.pos0 == 0 && m.rs != nil {
			m.rs.reset() // a new sequence: the GDN layers start from zero
		}
		p.ropeTable()
		if err := m.forward(p); err != nil {
			return err
		}
		if err := after(p); err != nil {
			return err
		}
	}
	return nil
}

// forward embeds p's tokens and runs the layer stack over them: on the
// device when it runs there.
func (m *Model) forward(p *pass) error {
	if m.dev != nil && m.dev.stack != nil {
		return m.dev.stack.forward(p)
	}
	p.normed = false
	p.embed()
	m.layers.forward(cpuOps{p})
	return nil
}

// checkTokens refuses ids outside the vocabulary and sequences that
// overflow the KV cache, before any work.
func (m *Model) checkTokens(tokens []int32, pos0 int) error {
	if pos0+len(tokens) > m.opt.KVLen {
		return fmt.Errorf("%w: %d positions exceed the KV cache of %d (kv-len)", ErrInput, pos0+len(tokens), m.opt.KVLen)
	}
	for i, id := range tokens {
		if id < 0 || int(id) >= m.hp.nVocab {
			return fmt.Errorf("%w: token %d at index %d is outside the vocabulary [0,%d)", ErrInput, id, i, m.hp.nVocab)
		}
	}
	return nil
}

// outputNorm writes the output-normed rows [lo, hi) of p.x to p.hidden
// (rows the device normed are already there).
func (p *pass) outputNorm(lo, hi int) []float32 {
	e := p.m.hp.nEmbd
	if p.normed {
		return p.hidden[lo*e : hi*e]
	}
	out := p.hidden[:(hi-lo)*e]
	p.normRows(out, p.x[lo*e:hi*e], p.m.outNorm, hi-lo)
	return out
}

// Prefill runs tokens from an empty KV cache through the pass plan and,
// after each pass, calls emit with the output-normed hidden rows of the
// pass's positions >= from (hidden is valid only during the call).
func (m *Model) Prefill(ctx context.Context, tokens []int32, from int, emit func(pos int, hidden []float32, n int) error) error {
	if len(tokens) == 0 {
		return fmt.Errorf("%w: no tokens to prefill", ErrInput)
	}
	// A fresh window: FlashPrefill applies (query length = key length).
	fp := &m.p.attn.fp
	fp.window = len(tokens)
	fp.kept.Store(0)
	fp.heads = 0
	err := m.run(ctx, tokens, 0, func(p *pass) error {
		lo := max(from-p.pos0, 0)
		if lo >= p.n {
			return nil
		}
		return emit(p.pos0+lo, p.outputNorm(lo, p.n), p.n-lo)
	})
	fp.window = 0
	if err != nil {
		m.blocks = AttentionBlocks{} // an unfinished window has no count
		return err
	}
	total := m.denseBlocks(len(tokens), fp.heads)
	m.blocks = AttentionBlocks{Kept: total, Total: total}
	if m.opt.FlashPrefill != nil {
		m.blocks.Kept = fp.kept.Load()
	}
	return nil
}
