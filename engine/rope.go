package engine

// This file owns rotary position embedding with ggml's CPU numerics
// (../shared/spec/architectures.md §1.4): the per-position cos/sin table
// built once per pass from the iterative f32 theta product, and the NORM
// and NEOX pairings.

import (
	"math"

	"plexbench/kernels"
)

// ropeTable fills p.cos/p.sin for the pass's positions: pair i of position
// pos rotates by theta_i = freq_scale · (pos · base^(-2i/n_rot)) / ff_i,
// where the power is the running f32 product theta *= theta_scale, not a
// pow per index. ff is rope_freqs.weight when the model has one; the
// IMROPE pairs of hp.ropeStill rotate by position 0, that is not at all.
func (p *pass) ropeTable() {
	hp := p.m.hp
	half := hp.nRot / 2
	if half == 0 {
		return
	}
	thetaScale := float32(math.Pow(float64(hp.ropeBase), float64(-2/float32(hp.nRot))))
	ff := p.m.ropeFreqs
	for t := range p.n {
		theta := float32(p.pos0 + t)
		cos, sin := p.cos[t*half:(t+1)*half], p.sin[t*half:(t+1)*half]
		for i := range half {
			a := theta
			if ff != nil {
				a = theta / ff[i]
			}
			a = hp.ropeScale * a
			cos[i] = kernels.CosfC(a)
			sin[i] = kernels.SinfC(a)
			if hp.ropeStill != nil && hp.ropeStill[i] {
				cos[i], sin[i] = 1, 0 // IMROPE stream e: position 0
			}
			theta = theta * thetaScale
		}
	}
}

// rope rotates the first n_rot dims of every head of x (p.n tokens ×
// nHeads heads of hd) in place; dims >= n_rot are left alone.
func (p *pass) rope(x []float32, nHeads int) {
	p.args = rowArgs{out: x, heads: nHeads}
	p.m.pool.For(p.n, max(1, rowGrain/(nHeads*p.m.hp.headDim)), p.ropeFn)
}

// ropeRange rotates the heads of tokens [lo, hi) with the set's rotation
// (kernels.KernelSet.RoPE: NORM pairs adjacent dims, NEOX the two halves
// of n_rot; ggml's fused products).
func (p *pass) ropeRange(_, lo, hi int) {
	hp, ks := p.m.hp, p.m.opt.Kernels
	x, nHeads, neox := p.args.out, p.args.heads, hp.rope == ropeNeox
	hd, half := hp.headDim, hp.nRot/2
	if half == 0 {
		return
	}
	for t := lo; t < hi; t++ {
		ks.RoPE(x[t*nHeads*hd:(t+1)*nHeads*hd], hd, p.cos[t*half:(t+1)*half], p.sin[t*half:(t+1)*half], neox)
	}
}
