package engine

// This file owns dense causal self-attention with GQA
// (../shared/spec/architectures.md §1.5) as llama.cpp computes it with -fa
// off (§1.6): KQ = K·Q with Q converted to the cache type as mul_mat does,
// softmax(KQ·scale + mask) in f32 with a float64 denominator
// (KernelSet.Softmax), then V·P with P converted to the cache type. Work is
// split over KV heads × tiles of query rows; each unit runs its two
// products single-threaded: with attention=go in ggml's exact order
// (product), otherwise as the set's MatMuls.

import (
	"sync/atomic"

	"plexbench/kernels"
)

// attnRows is how many query rows (query heads of one group × tokens) one
// unit multiplies at once.
const attnRows = 64

// attnJob is one layer's attention over the pass, shared by the workers.
type attnJob struct {
	p               *pass
	l, nh, nkv, grp int
	tileT, tiles    int
	mode            kernels.AttnMode // exact products, dense, or streaming (attention_flash.go)
	fp              fpJob            // FlashPrefill's selection (attention_flashprefill.go)
	sparse          bool             // this layer runs FlashPrefill
	next            atomic.Int64
	workers         []attnWorker
	run             func(worker, lo, hi int) // bound once: no closure per layer
}

// attnWorker is one worker's scratch, grown to the largest window seen.
type attnWorker struct {
	q   []float32 // (rows, hd) packed queries
	s   []float32 // (rows, nkp) scores, then probabilities
	o   []float32 // (rows, hd) outputs
	vt  []byte    // (nkp, hd) values transposed
	row []float32 // (hd) one dequantized value row
	buf []float32 // the exact products' decoded keys or values
	// The unit's key and transposed value matrices live here, not on the
	// stack, because MatMul keeps a pointer to its weights during the call.
	keys, vals kernels.Matrix
	ms         kernels.MatScratch
	fl         flashScratch
}

func (j *attnJob) init(p *pass) {
	j.p = p
	j.workers = make([]attnWorker, p.m.pool.Threads())
	j.run = j.work
	j.mode = p.m.opt.Kernels.Attention()
	j.initFlashPrefill()
}

// attention caches the pass's K and V for layer l (nh query heads, nkv KV
// heads in p.q, p.k, p.v) and writes the attention output to p.att.
func (p *pass) attention(l, nh, nkv int) {
	p.m.kv.store(l, p, nkv)
	j := &p.attn
	j.l, j.nh, j.nkv, j.grp = l, nh, nkv, nh/nkv
	if p.pos0 == 0 {
		j.fp.heads += int64(nh) // for the block counts (PrefillBlocks)
	}
	j.tileT = max(1, attnRows/j.grp)
	j.tiles = (p.n + j.tileT - 1) / j.tileT
	if j.sparse = j.flashPrefillOn(); j.sparse {
		j.selectBlocks()
		j.tiles = j.fp.nqb // FlashPrefill's units are query blocks
	}
	j.next.Store(0)
	p.m.pool.For(p.m.pool.Threads(), 1, j.run)
}

// work takes units from a shared counter, latest query tiles (the most
// keys) first, so uneven units balance over the workers.
func (j *attnJob) work(worker, _, _ int) {
	w := &j.workers[worker]
	units := int64(j.nkv * j.tiles)
	for {
		u := int(j.next.Add(1) - 1)
		if u >= int(units) {
			return
		}
		g, tile := u%j.nkv, j.tiles-1-u/j.nkv
		if j.sparse {
			j.blockUnit(w, g, tile)
			continue
		}
		t0 := tile * j.tileT
		j.denseUnit(w, g, t0, min(t0+j.tileT, j.p.n))
	}
}

// denseUnit attends the query heads of KV head g over the pass's tokens
// [t0, t1) with the set's attention: the streaming softmax for
// attention=flash, whole score rows otherwise.
func (j *attnJob) denseUnit(w *attnWorker, g, t0, t1 int) {
	if j.mode == kernels.AttnFlash {
		j.flashUnit(w, g, t0, t1)
	} else {
		j.unit(w, g, t0, t1)
	}
}

// unit attends the query heads of KV head g over the tokens [t0, t1) of
// one tile.
func (j *attnJob) unit(w *attnWorker, g, t0, t1 int) {
	p, kv := j.p, j.p.m.kv
	hd := kv.hd
	nt := t1 - t0
	rows := j.grp * nt
	nk := p.pos0 + t1 // keys any row of the tile may see
	nkp := min((nk+kvPad-1)/kvPad*kvPad, kv.cap)
	w.grow(rows, hd, nkp)

	q, s, o := w.q[:rows*hd], w.s[:rows*nkp], w.o[:rows*hd]
	for hi := range j.grp {
		h := g*j.grp + hi
		for t := t0; t < t1; t++ {
			copy(q[(hi*nt+t-t0)*hd:][:hd], p.q[(t*j.nh+h)*hd:][:hd])
		}
	}
	w.keys = kv.keys(j.l, g, nkp)
	j.product(w, s, &w.keys, q, rows, false)
	scale := attnScale(hd)
	for r := range rows {
		pos := p.pos0 + t0 + r%nt
		p.m.opt.Kernels.Softmax(s[r*nkp:(r+1)*nkp], pos+1, scale)
	}
	w.vals = kv.valuesT(j.l, g, nk, nkp, w.vt, w.row)
	j.product(w, o, &w.vals, s, rows, true)
	for hi := range j.grp {
		h := g*j.grp + hi
		for t := t0; t < t1; t++ {
			copy(p.att[(t*j.nh+h)*hd:][:hd], o[(hi*nt+t-t0)*hd:][:hd])
		}
	}
}

// product writes out = m·x for rows rows of x: K·Q, or V·P when values.
// The fast attention variants run the set's MatMul for m's type;
// attention=go follows the path ggml takes for the attention shapes
// (kernels.AttnScores/AttnValues on F32/F16 matrices, decided by the
// ubatch size, and the plain MatMul for the others).
func (j *attnJob) product(w *attnWorker, out []float32, m *kernels.Matrix, x []float32, rows int, values bool) {
	switch {
	case j.mode != kernels.AttnExact:
		j.p.m.opt.Kernels.MatMul(nil, out, m, x, rows, &w.ms)
	case m.Type != kernels.F32 && m.Type != kernels.F16:
		kernels.MatMul(nil, out, m, x, rows, &w.ms)
	case values:
		w.buf = kernels.AttnValues(out, m, x, rows, j.p.n, w.buf)
	default:
		w.buf = kernels.AttnScores(out, m, x, rows, j.p.n, w.buf)
	}
}

func (w *attnWorker) grow(rows, hd, nkp int) {
	w.q = kernels.Grow(w.q, rows*hd)
	w.o = kernels.Grow(w.o, rows*hd)
	w.s = kernels.Grow(w.s, rows*nkp)
	w.vt = kernels.Grow(w.vt, 4*hd*nkp)
	w.row = kernels.Grow(w.row, hd)
}
