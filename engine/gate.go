package engine

// This file owns the two CPU steps the hybrids' gated attention adds
// around the attention op (../shared/spec/architectures.md §5.5): the
// doubled query projection split per head into query and gate, and the
// output times sigmoid(gate).

import "plexbench/kernels"

// hybridScratch holds the pass buffers only the hybrids use, grown on
// first use to the pass size.
type hybridScratch struct {
	qg   []float32 // (ub, 2·heads·hd) query and gate, as Wq writes them
	gate []float32 // (ub, heads·hd) the attention output gate
	gdn  gdnScratch
	moe  moeScratch
}

// gatedQuery writes Wq·xn's queries to p.q and its gates aside.
func (p *pass) gatedQuery(w *kernels.Matrix, heads int) {
	hd, s := p.m.hp.headDim, &p.hyb
	nq := heads * hd
	s.qg = kernels.Grow(s.qg, p.n*2*nq)
	s.gate = kernels.Grow(s.gate, p.n*nq)
	p.linear(s.qg, w, nil, p.xn)
	for t := range p.n {
		for h := range heads {
			src := s.qg[(t*heads+h)*2*hd:]
			copy(p.q[(t*heads+h)*hd:][:hd], src[:hd])
			copy(s.gate[(t*heads+h)*hd:][:hd], src[hd:2*hd])
		}
	}
}

// outputGate multiplies the attention output by sigmoid(gate).
func (p *pass) outputGate(heads int) {
	nq := heads * p.m.hp.headDim
	p.args = rowArgs{out: p.att[:p.n*nq], in: p.hyb.gate[:p.n*nq]}
	p.m.pool.For(p.n*nq, rowGrain, p.gateFn)
}

// gateRange multiplies args.out by sigmoid(args.in) over [lo, hi).
func (p *pass) gateRange(_, lo, hi int) {
	out, gate := p.args.out[lo:hi], p.args.in[lo:hi]
	for i := range out {
		out[i] *= kernels.Sigmoid(gate[i])
	}
}
