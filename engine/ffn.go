package engine

// This file owns the SwiGLU feed-forward block
// (../shared/spec/architectures.md §1.7).

import "plexbench/kernels"

// swiglu computes out = W_down·(silu(W_gate·xn + b_gate) ⊙ (W_up·xn + b_up)) + b_down
// for the pass's tokens; biases may be nil.
func (p *pass) swiglu(out, xn []float32, gate *kernels.Matrix, bGate []float32,
	up *kernels.Matrix, bUp []float32, down *kernels.Matrix, bDown []float32) {
	nff := gate.Rows
	g, u := p.gate[:p.n*nff], p.up[:p.n*nff]
	p.linear(g, gate, bGate, xn)
	p.linear(u, up, bUp, xn)
	for t := range p.n { // row by row, as ggml (the "go" variant's groups start at each row)
		p.m.opt.Kernels.SwiGLU(g[t*nff:(t+1)*nff], u[t*nff:(t+1)*nff])
	}
	p.linear(out, down, bDown, g)
}
