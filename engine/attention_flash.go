package engine

// This file owns the "flash" attention variant: the same causal GQA
// attention as attention.go, computed FlashAttention-2 style so that no
// (rows, n_kv) score matrix exists. Each unit (KV head × tile of query
// rows) walks the cached keys in blocks of flashBlock: K·Q for the block
// with the set's MatMul, then per row a running maximum m and a float64
// running sum l of exp(score − m), with the unnormalised f32 output
// rescaled by exp(m_old − m_new) whenever m grows; the output is divided
// by l at the end. Scratch is bounded by rows × flashBlock.

import (
	"math"

	"plexbench/kernels"
)

// flashBlock is how many keys one step of the streaming softmax takes; a
// multiple of kvPad so that padded blocks stay inside the cache.
const flashBlock = 128

// flashScratch is one worker's scratch for flash units, grown once.
type flashScratch struct {
	s     []float32 // (rows, nbp) one block's scores, then exp(score − m)
	pv    []float32 // (rows, hd) one block's P·V
	o     []float32 // (rows, hd) unnormalised output
	m     []float32 // (rows) running maximum of the scaled scores
	alpha []float32 // (rows) this block's rescale exp(m_old − m_new)
	l     []float64 // (rows) running Σ exp(score − m)
	vt    []byte    // (hd, nbp) one block's values transposed, f32
	v     []byte    // (nb, hd) one block's values dequantized, f32
	// chunks are the key ranges a unit streams over, reused.
	chunks [][2]int32
}

func (f *flashScratch) grow(rows, hd int) {
	f.s = kernels.Grow(f.s, rows*flashBlock)
	f.pv = kernels.Grow(f.pv, rows*hd)
	f.o = kernels.Grow(f.o, rows*hd)
	f.m = kernels.Grow(f.m, rows)
	f.alpha = kernels.Grow(f.alpha, rows)
	f.l = kernels.Grow(f.l, rows)
	f.vt = kernels.Grow(f.vt, 4*hd*flashBlock)
	f.v = kernels.Grow(f.v, 4*flashBlock*hd)
}

// flashUnit attends the query heads of KV head g over the tokens [t0, t1)
// of one tile, as unit does, with the streaming softmax over all keys.
func (j *attnJob) flashUnit(w *attnWorker, g, t0, t1 int) {
	nk := j.p.pos0 + t1 // keys any row of the tile may see
	ch := w.fl.chunks[:0]
	for k0 := 0; k0 < nk; k0 += flashBlock {
		ch = append(ch, [2]int32{int32(k0), int32(min(k0+flashBlock, nk))})
	}
	w.fl.chunks = ch
	j.flashRows(w, g, 0, j.grp, t0, t1, ch)
}

// flashRows attends query heads [h0, h1) of KV head g's group over the
// pass's tokens [t0, t1) with the streaming softmax over the cached keys
// of chunks, ascending [k0, k1) ranges of at most flashBlock keys: all of
// them for flashUnit, FlashPrefill's active blocks for blockUnit. The
// causal mask applies per row within each chunk.
func (j *attnJob) flashRows(w *attnWorker, g, h0, h1, t0, t1 int, chunks [][2]int32) {
	p, kv, ks := j.p, j.p.m.kv, j.p.m.opt.Kernels
	hd := kv.hd
	nt := t1 - t0
	rows := (h1 - h0) * nt
	w.q = kernels.Grow(w.q, rows*hd)
	f := &w.fl
	f.grow(rows, hd)

	q, o := w.q[:rows*hd], f.o[:rows*hd]
	for hi := h0; hi < h1; hi++ {
		h := g*j.grp + hi
		for t := t0; t < t1; t++ {
			copy(q[((hi-h0)*nt+t-t0)*hd:][:hd], p.q[(t*j.nh+h)*hd:][:hd])
		}
	}
	clear(o)
	for r := range rows {
		f.m[r] = float32(math.Inf(-1))
		f.l[r] = 0
	}
	scale := attnScale(hd)
	kBase := g * kv.cap * kv.rb
	vBase := kv.v[j.l][kBase:]
	for _, c := range chunks {
		k0, nb := int(c[0]), int(c[1]-c[0])
		// Padded to kvPad (within the cache): the extra keys are cached
		// or zero values whose probabilities are set to 0 below.
		nbp := min((nb+kvPad-1)/kvPad*kvPad, kv.cap-k0)
		w.keys = kernels.Matrix{Type: kv.typ, Rows: nbp, Cols: hd,
			Data: kv.k[j.l][kBase+k0*kv.rb : kBase+(k0+nbp)*kv.rb]}
		s := f.s[:rows*nbp]
		ks.MatMul(nil, s, &w.keys, q, rows, &w.ms)
		for r := range rows {
			sr := s[r*nbp : (r+1)*nbp]
			// The causal mask: row r sees keys up to its own position.
			c := min(max(p.pos0+t0+r%nt+1-k0, 0), nb)
			if c == 0 {
				clear(sr)
				f.alpha[r] = 1
				continue
			}
			mNew := max(f.m[r], ks.ScaleMax(sr[:c], scale))
			sum := ks.ExpSum(sr[:c], mNew)
			clear(sr[c:])
			alpha := float32(0) // the first block: nothing to rescale
			if f.l[r] != 0 {
				alpha = float32(math.Exp(float64(f.m[r] - mNew)))
			}
			f.alpha[r], f.m[r] = alpha, mNew
			f.l[r] = f.l[r]*float64(alpha) + sum
		}
		w.vals = j.flashValues(f, vBase[k0*kv.rb:], nb, nbp)
		pv := f.pv[:rows*hd]
		ks.MatMul(nil, pv, &w.vals, s, rows, &w.ms)
		for r := range rows {
			or, pr := o[r*hd:(r+1)*hd], pv[r*hd:(r+1)*hd]
			if a := f.alpha[r]; a == 1 {
				for i, x := range pr {
					or[i] += x
				}
			} else {
				for i, x := range pr {
					or[i] = or[i]*a + x
				}
			}
		}
	}
	for hi := h0; hi < h1; hi++ {
		h := g*j.grp + hi
		for t := t0; t < t1; t++ {
			r := (hi-h0)*nt + t - t0
			inv := float32(1 / f.l[r])
			dst := p.att[(t*j.nh+h)*hd:][:hd]
			for i, x := range o[r*hd : (r+1)*hd] {
				dst[i] = x * inv
			}
		}
	}
}

// flashValues expands the nb cached values at src into f.vt as an f32
// (hd, nbp) matrix — row d holds dimension d of every key — with columns
// nb..nbp-1 zeroed.
func (j *attnJob) flashValues(f *flashScratch, src []byte, nb, nbp int) kernels.Matrix {
	kv := j.p.m.kv
	hd := kv.hd
	// The block's rows are contiguous in the cache: one call expands them.
	if err := kernels.Dequantize(kv.typ, src[:nb*kv.rb], view[float32](f.v[:4*nb*hd])); err != nil {
		panic("engine: " + err.Error()) // the type was checked at Load
	}
	d := view[uint32](f.vt[:4*hd*nbp])
	transpose(d, nbp, view[uint32](f.v[:4*nb*hd]), nb, hd)
	for i := range hd {
		clear(d[i*nbp+nb : (i+1)*nbp])
	}
	return kernels.Matrix{Type: kernels.F32, Rows: hd, Cols: nbp, Data: f.vt[:4*hd*nbp]}
}
