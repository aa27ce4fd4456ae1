package engine

// This file owns the SwiGLU feed-forward block (architectures.md §1.7).

import (
	"math"

	"plexbench/kernels"
)

// swiglu computes out = W_down·(silu(W_gate·xn + b_gate) ⊙ (W_up·xn + b_up)) + b_down
// for the pass's tokens; biases may be nil.
func (p *pass) swiglu(out, xn []float32, gate *kernels.Matrix, bGate []float32,
	up *kernels.Matrix, bUp []float32, down *kernels.Matrix, bDown []float32) {
	nff := gate.Rows
	g, u := p.gate[:p.n*nff], p.up[:p.n*nff]
	p.linear(g, gate, bGate, xn)
	p.linear(u, up, bUp, xn)
	for i, x := range g {
		g[i] = silu(x) * u[i]
	}
	p.linear(out, down, bDown, g)
}

// silu is x/(1+expf(-x)) in f32.
func silu(x float32) float32 {
	return x / (1 + float32(math.Exp(float64(-x))))
}
