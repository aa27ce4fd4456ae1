package engine

// This file owns the ops a layer stack is written against. A block
// (block.go, qwen35.go) is a sequence of these steps over the pass's
// activations, which it names by act, and the model's weights, which it
// passes as loaded (*kernels.Matrix, []float32): a backend that keeps its
// own copies finds them by those. A stack's forward hands its ops the same
// weights on every pass, whatever the pass holds: the device stack walks
// it once at load (stackWalk) to upload what it will be handed. cpuOps
// runs every op with the CPU kernels (norm.go, rope.go, attention*.go,
// ffn.go, gdn.go, moe.go); devOps (devicestack_pass.go) launches the
// device's.

import "plexbench/kernels"

// act names one of the pass's activation buffers. n is the pass's token
// count, hd the head dim, heads/kv a layer's query/KV heads.
type act uint8

const (
	actX   act = iota // (n, n_embd) the residual stream
	actXN             // (n, n_embd) a sub-block's normed input
	actOut            // (n, n_embd) a sub-block's output
	actQ              // (n, heads·hd) queries
	actK              // (n, kv·hd) keys
	actV              // (n, kv·hd) values
	actAtt            // (n, heads·hd) attention output, heads concatenated
)

// ops are the steps of a forward pass over the pass's n tokens.
type ops interface {
	// rmsNorm: out = RMSNorm(in) ⊙ w, row by row (n_embd-wide rows).
	rmsNorm(out, in act, w []float32)
	// headNorm: RMSNorm of every hd-wide head of x in place, ⊙ w (hd).
	headNorm(x act, heads int, w []float32)
	// linear: out = W·in + b (b may be nil).
	linear(out act, w *kernels.Matrix, b []float32, in act)
	// gatedQuery: Wq·xn holds per head [query (hd) | gate (hd)]: the
	// queries go to actQ, the gates aside for outputGate.
	gatedQuery(w *kernels.Matrix, heads int)
	// rope rotates every head of x by the model's RoPE at the pass's
	// positions.
	rope(x act, heads int)
	// attention stores actK and actV in layer l's KV cache and writes the
	// causal GQA attention of actQ over the cached keys to actAtt (dense,
	// or FlashPrefill's selected blocks).
	attention(l, heads, kv int)
	// outputGate: actAtt ⊙= sigmoid(the gates of gatedQuery).
	outputGate(heads int)
	// add: x += y.
	add(x, y act)
	// swiglu: out = W_down·(silu(W_gate·in + b) ⊙ (W_up·in + b)) + b.
	swiglu(out, in act, f *denseFFN)
	// moe: out = the mixture of experts of in.
	moe(out, in act, f *moeFFN)
	// gdn: actOut = layer l's Gated DeltaNet of actXN, carrying its state.
	gdn(l int, g *gdnLayer)
}

// cpuOps runs the ops on the pass's buffers with the CPU kernels.
type cpuOps struct{ p *pass }

func (c cpuOps) buf(a act) []float32 {
	p := c.p
	switch a {
	case actX:
		return p.x
	case actXN:
		return p.xn
	case actOut:
		return p.tmp
	case actQ:
		return p.q
	case actK:
		return p.k
	case actV:
		return p.v
	case actAtt:
		return p.att
	}
	panic("engine: unknown activation")
}

func (c cpuOps) rmsNorm(out, in act, w []float32) { c.p.normRows(c.buf(out), c.buf(in), w, c.p.n) }

func (c cpuOps) headNorm(x act, heads int, w []float32) {
	c.p.normRows(c.buf(x), c.buf(x), w, c.p.n*heads)
}

func (c cpuOps) linear(out act, w *kernels.Matrix, b []float32, in act) {
	c.p.linear(c.buf(out), w, b, c.buf(in))
}

func (c cpuOps) gatedQuery(w *kernels.Matrix, heads int) { c.p.gatedQuery(w, heads) }

func (c cpuOps) rope(x act, heads int) { c.p.rope(c.buf(x), heads) }

func (c cpuOps) attention(l, heads, kv int) { c.p.attention(l, heads, kv) }

func (c cpuOps) outputGate(heads int) { c.p.outputGate(heads) }

func (c cpuOps) add(x, y act) { c.p.addTo(c.buf(x), c.buf(y)) }

func (c cpuOps) swiglu(out, in act, f *denseFFN) {
	c.p.swiglu(c.buf(out), c.buf(in), f.gate, f.bGate, f.up, f.bUp, f.down, f.bDown)
}

func (c cpuOps) moe(out, in act, f *moeFFN) { f.forward(c.p, c.buf(out), c.buf(in), &c.p.hyb.moe) }

func (c cpuOps) gdn(l int, g *gdnLayer) { g.forward(c.p, l, &c.p.hyb.gdn) }
