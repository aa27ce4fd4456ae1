package engine

// This file owns RMSNorm (../shared/spec/architectures.md §1.3), used for
// the block norms, the output norm and qwen3's per-head q/k norms. The row
// kernel is the set's (kernels.KernelSet.RMSNorm: ggml's rms_norm followed
// by mul).

// rmsNorm normalizes the pass's n_embd-wide rows of in into out.
func (p *pass) rmsNorm(out, in, w []float32) {
	p.normRows(out, in, w, p.n)
}

// headNorm normalizes every head vector of x (p.n tokens × nHeads heads of
// hd) in place with the per-head weight w (qwen3's attn_q_norm/attn_k_norm).
func (p *pass) headNorm(x []float32, nHeads int, w []float32) {
	p.normRows(x, x, w, p.n*nHeads)
}

// normRows normalizes rows len(w)-wide rows, split over the pool.
func (p *pass) normRows(out, in, w []float32, rows int) {
	p.args = rowArgs{out: out, in: in, w: w}
	p.m.pool.For(rows, max(1, rowGrain/len(w)), p.normFn)
}

func (p *pass) normRange(_, lo, hi int) {
	a, n := &p.args, len(p.args.w)
	p.m.opt.Kernels.RMSNorm(a.out[lo*n:hi*n], a.in[lo*n:hi*n], a.w, p.m.hp.eps)
}
