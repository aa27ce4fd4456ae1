package engine

// This file owns RMSNorm (architectures.md §1.3), used for the block norms,
// the output norm and qwen3's per-head q/k norms.

import "math"

// rmsNormRows normalizes each len(w)-long row of in into out and multiplies
// by w, as ggml's rms_norm followed by mul: squares in f32 summed in
// float64, mean rounded to f32, scale = 1/sqrtf(mean + eps), y = (x·scale)·w.
func rmsNormRows(out, in, w []float32, eps float32) {
	n := len(w)
	for r := range len(in) / n {
		x, y := in[r*n:(r+1)*n], out[r*n:(r+1)*n]
		var ss float64
		for _, v := range x {
			ss += float64(float32(v * v))
		}
		mean := float32(ss / float64(n))
		scale := 1 / float32(math.Sqrt(float64(mean+eps)))
		for i, v := range x {
			y[i] = float32(v*scale) * w[i]
		}
	}
}

// rmsNorm normalizes the pass's n_embd-wide rows of in into out.
func (p *pass) rmsNorm(out, in, w []float32) {
	p.normRows(out, in, w, p.n)
}

// headNorm normalizes every head vector of x (p.n tokens × nHeads heads of
// hd) in place with the per-head weight w (qwen3's attn_q_norm/attn_k_norm).
func (p *pass) headNorm(x []float32, nHeads int, w []float32) {
	p.normRows(x, x, w, p.n*nHeads)
}

// normRows runs rmsNormRows on rows len(w)-wide rows split over the pool.
func (p *pass) normRows(out, in, w []float32, rows int) {
	p.args = rowArgs{out: out, in: in, w: w}
	p.m.pool.For(rows, max(1, rowGrain/len(w)), p.normFn)
}

func (p *pass) normRange(_, lo, hi int) {
	a, n := &p.args, len(p.args.w)
	rmsNormRows(a.out[lo*n:hi*n], a.in[lo*n:hi*n], a.w, p.m.hp.eps)
}
