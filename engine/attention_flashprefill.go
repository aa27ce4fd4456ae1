package engine

// This file owns FlashPrefill V2 prefill attention
// (../shared/spec/flashprefill.md): the per-architecture alpha, the block
// selection of a pass's query blocks (kernels.FlashPrefill: pooled cached
// keys, block scores, the rule), and the sparse attention units, which
// stream the selected key blocks through the "flash" variant's online
// softmax (attention_flash.go).
//
// It runs only inside Prefill, whose window starts from an empty cache:
// query length = key length over the window. Passes of a window must start
// on block boundaries (Load checks the pass size), and then a pass's
// selection is the whole window's: a query block's scores need its own
// queries and the pooled keys of the blocks up to it, all cached by then.
// Units whose every row keeps every causal block run the dense path the
// kernel set selects, so that nothing differs from dense where FlashPrefill
// drops nothing (α = 0, short windows).

import (
	"sync/atomic"

	"plexbench/kernels"
)

// FlashPrefillAlpha is the default FlashPrefill threshold α for a GGUF
// architecture. The official repository's configs (§6) give Llama-3.1-8B
// 0.18, Qwen2/2.5 0.08 and Qwen3-30B-A3B 0.12; dense Qwen3 shares that
// model's attention (GQA with q/k-norm) and has no config of its own, so
// it takes 0.12 too. Qwen3.5 (qwen35, its MoE and the qwen3next hybrid
// it descends from) has none either: 0.1, the selection helper's
// fallback, which is also the scale LSE reports for that family. Any other
// architecture gets the same 0.1.
func FlashPrefillAlpha(arch string) float64 {
	switch arch {
	case "llama":
		return 0.18
	case "qwen2":
		return 0.08
	case "qwen3", "qwen3moe":
		return 0.12
	}
	return 0.1 // qwen35, qwen35moe, qwen3next and the rest
}

// AttentionBlocks counts causal (query block, key block, query head)
// triples over every layer of a prefill: Total is what dense attention
// computes, Kept what ran (Total for dense).
type AttentionBlocks struct {
	Kept, Total int64
}

// Fraction is Kept/Total, 1 when there is nothing to count.
func (b AttentionBlocks) Fraction() float64 {
	if b.Total == 0 {
		return 1
	}
	return float64(b.Kept) / float64(b.Total)
}

// PrefillBlocks reports the attention blocks of the last Prefill.
func (m *Model) PrefillBlocks() AttentionBlocks { return m.blocks }

// denseBlocks is the dense count of a window of n tokens: every causal
// block of every query head of every layer that ran attention (heads, as
// counted in the window's first pass), in blocks of the FlashPrefill size
// (the default 128 when dense).
func (m *Model) denseBlocks(n int, heads int64) int64 {
	f := kernels.DefaultFlashPrefill(0)
	if m.opt.FlashPrefill != nil {
		f = *m.opt.FlashPrefill
	}
	return heads * kernels.CausalBlocks(0, f.Blocks(n))
}

// fpJob is the FlashPrefill state of the current pass and layer.
type fpJob struct {
	f        kernels.FlashPrefill
	window   int // tokens of the window Prefill runs; 0 outside Prefill (dense)
	m        int // blocks of the window
	qb0, nqb int // the pass's query blocks
	nh, nkv  int
	pooled   []float32 // (nkv, m, hd) mean cached key per block
	sel      []bool    // (nh, nqb, m) active key blocks of each query block
	full     []bool    // (nh, nqb) every causal block active
	kept     atomic.Int64
	heads    int64 // query heads of the attention layers the window's first pass ran
	next     atomic.Int64
	workers  []fpWorker
	poolFn   func(worker, lo, hi int)
	selFn    func(worker, lo, hi int)
}

type fpWorker struct {
	sc  kernels.FlashPrefillScratch
	q   []float32 // (B, hd) one query block of one head
	row []float32 // (hd)
	sum []float64 // (hd)
}

func (j *attnJob) initFlashPrefill() {
	fp := &j.fp
	if f := j.p.m.opt.FlashPrefill; f != nil {
		fp.f = *f
	}
	fp.workers = make([]fpWorker, j.p.m.pool.Threads())
	fp.poolFn, fp.selFn = j.poolKeys, j.selectWork
}

// flashPrefillOn says whether this pass runs FlashPrefill.
func (j *attnJob) flashPrefillOn() bool {
	return j.p.m.opt.FlashPrefill != nil && j.fp.window > 0
}

// selectBlocks pools layer l's cached keys and selects the key blocks of
// the pass's query blocks for every query head.
func (j *attnJob) selectBlocks() {
	p, kv, fp := j.p, j.p.m.kv, &j.fp
	b := fp.f.BlockSize
	if p.pos0%b != 0 || (p.pos0+p.n < fp.window && p.n%b != 0) {
		panic("engine: FlashPrefill pass not on block boundaries") // Load checks the pass size
	}
	fp.m = fp.f.Blocks(fp.window)
	fp.qb0 = p.pos0 / b
	fp.nqb = fp.f.Blocks(p.pos0+p.n) - fp.qb0
	fp.nh, fp.nkv = j.nh, j.nkv
	fp.pooled = kernels.Grow(fp.pooled, j.nkv*fp.m*kv.hd)
	fp.sel = kernels.Grow(fp.sel, j.nh*fp.nqb*fp.m)
	fp.full = kernels.Grow(fp.full, j.nh*fp.nqb)
	p.m.pool.For(j.nkv, 1, fp.poolFn)
	fp.next.Store(0)
	p.m.pool.For(p.m.pool.Threads(), 1, fp.selFn)
}

// poolKeys pools the cached keys of KV heads [lo, hi).
func (j *attnJob) poolKeys(worker, lo, hi int) {
	p, kv, fp := j.p, j.p.m.kv, &j.fp
	w := &fp.workers[worker]
	w.row, w.sum = kernels.Grow(w.row, kv.hd), kernels.Grow(w.sum, kv.hd)
	n := p.pos0 + p.n
	for g := lo; g < hi; g++ {
		keys := kv.k[j.l][g*kv.cap*kv.rb:][:n*kv.rb]
		fp.f.Pool(kv.typ, keys, kv.rb, n, kv.hd, fp.pooled[g*fp.m*kv.hd:], w.row, w.sum)
	}
}

// selectWork takes (query head, query block) units from a shared counter,
// the latest blocks (the most key blocks) first.
func (j *attnJob) selectWork(worker, _, _ int) {
	p, hd, fp := j.p, j.p.m.kv.hd, &j.fp
	w := &fp.workers[worker]
	b := fp.f.BlockSize
	w.q = kernels.Grow(w.q, b*hd)
	for {
		u := int(fp.next.Add(1) - 1)
		if u >= fp.nh*fp.nqb {
			return
		}
		h, qbl := u%fp.nh, fp.nqb-1-u/fp.nh
		qb := fp.qb0 + qbl
		nq := min(b, fp.window-qb*b)
		for i := range nq {
			t := qb*b + i - p.pos0
			copy(w.q[i*hd:(i+1)*hd], p.q[(t*fp.nh+h)*hd:][:hd])
		}
		g := h / (fp.nh / fp.nkv)
		sel := fp.sel[(h*fp.nqb+qbl)*fp.m:][:fp.m]
		n := fp.f.Select(sel, w.q, fp.pooled[g*fp.m*hd:], hd, fp.window, qb, &w.sc)
		fp.full[h*fp.nqb+qbl] = n == qb+1
		fp.kept.Add(int64(n))
	}
}

// blockUnit attends the query heads of KV head g over the pass's query
// block qbl. Where every head keeps every causal block it runs the dense
// tiles the set selects, as dense attention would; otherwise each head
// streams its active blocks (rows: the block's tokens of one head).
func (j *attnJob) blockUnit(w *attnWorker, g, qbl int) {
	p, fp, b := j.p, &j.fp, j.fp.f.BlockSize
	qb := fp.qb0 + qbl
	t0 := qb*b - p.pos0
	t1 := min(t0+b, p.n)
	full := true
	for hi := range j.grp {
		full = full && fp.full[(g*j.grp+hi)*fp.nqb+qbl]
	}
	if full {
		for ta := t0; ta < t1; ta += j.tileT {
			j.denseUnit(w, g, ta, min(ta+j.tileT, t1))
		}
		return
	}
	nk := p.pos0 + t1
	for hi := range j.grp {
		sel := fp.sel[((g*j.grp+hi)*fp.nqb+qbl)*fp.m:][:qb+1]
		// Runs of consecutive active blocks, cut into flashBlock chunks.
		ch := w.fl.chunks[:0]
		for kb := 0; kb <= qb; {
			if !sel[kb] {
				kb++
				continue
			}
			k0 := kb * b
			for kb <= qb && sel[kb] {
				kb++
			}
			k1 := min(kb*b, nk)
			for c := k0; c < k1; c += flashBlock {
				ch = append(ch, [2]int32{int32(c), int32(min(c+flashBlock, k1))})
			}
		}
		w.fl.chunks = ch
		j.flashRows(w, g, hi, hi+1, t0, t1, ch)
	}
}
