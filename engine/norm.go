package engine

// This file owns RMSNorm (../shared/spec/architectures.md §1.3), used for
// the block norms, the output norm, the per-head q/k norms and the GDN's
// gated norm. The row kernel is the set's (kernels.KernelSet.RMSNorm:
// ggml's rms_norm followed by mul).

// normRows normalizes rows len(w)-wide rows, split over the pool.
func (p *pass) normRows(out, in, w []float32, rows int) {
	p.args = rowArgs{out: out, in: in, w: w}
	p.m.pool.For(rows, max(1, rowGrain/len(w)), p.normFn)
}

func (p *pass) normRange(_, lo, hi int) {
	a, n := &p.args, len(p.args.w)
	p.m.opt.Kernels.RMSNorm(a.out[lo*n:hi*n], a.in[lo*n:hi*n], a.w, p.m.hp.eps)
}
