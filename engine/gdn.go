package engine

// This file owns the Gated DeltaNet (linear attention) layer of the hybrid
// archs (../shared/spec/architectures.md §5.6) and its recurrent state,
// which lives beside the KV cache: zero at the start of every sequence
// (every scoring window starts at position 0) and carried exactly from pass
// to pass, so a window run as several ubatches gives the logits of one
// pass.

import (
	"fmt"
	"math"

	"plexbench/kernels"
)

// gdnLayer is one linear-attention layer. H_k key heads of d_k, H_v value
// heads of d_v; key_dim = H_k·d_k, value_dim = H_v·d_v, conv_dim =
// 2·key_dim + value_dim.
type gdnLayer struct {
	qkv         *kernels.Matrix // (n_embd, conv_dim) attn_qkv: rows [q (key_dim) | k (key_dim) | v (value_dim)], head-major
	z           *kernels.Matrix // (n_embd, value_dim) attn_gate: the output gate
	beta, alpha *kernels.Matrix // (n_embd, H_v) ssm_beta, ssm_alpha (qwen35*)
	ba          *kernels.Matrix // (n_embd, 2·H_v) ssm_ba (qwen3next): per key head [β of its r v-heads | α of them]
	conv        []float32       // (conv_dim, d_conv) ssm_conv1d: channel c's taps at [c·d_conv:], oldest first
	dt          []float32       // (H_v) ssm_dt.bias
	a           []float32       // (H_v) ssm_a = −exp(A_log)
	norm        []float32       // (d_v) ssm_norm: the gated RMSNorm's weight, shared by the v-heads
	out         *kernels.Matrix // (value_dim, n_embd) ssm_out
}

func loadGDN(ld *loader, hp *hparams, pre string) *gdnLayer {
	s, e := hp.ssm, hp.nEmbd
	if _, legacy := ld.f.Tensor(pre + "ssm_in.weight"); legacy {
		if _, ok := ld.f.Tensor(pre + "attn_qkv.weight"); !ok {
			ld.fail(fmt.Errorf("%w: tensor %q is qwen3next's legacy fused [q|k|v|z] projection; reconvert the model with a current llama.cpp (attn_qkv + attn_gate)",
				ErrUnsupported, pre+"ssm_in.weight"))
			return nil
		}
		ld.skip(pre + "ssm_in.weight") // superseded by attn_qkv + attn_gate, which are loaded
	}
	g := &gdnLayer{
		qkv:  ld.matrix(pre+"attn_qkv.weight", e, s.convDim()),
		z:    ld.matrix(pre+"attn_gate.weight", e, s.valueDim()),
		conv: ld.floats(pre+"ssm_conv1d.weight", s.dConv, s.convDim()),
		dt:   ld.vector(pre+"ssm_dt.bias", s.hv),
		a:    ld.vector(pre+"ssm_a", s.hv),
		norm: ld.vector(pre+"ssm_norm.weight", s.dv),
		out:  ld.matrix(pre+"ssm_out.weight", s.valueDim(), e),
	}
	if hp.vGrouped {
		g.ba = ld.matrix(pre+"ssm_ba.weight", e, 2*s.hv)
	} else {
		g.beta = ld.matrix(pre+"ssm_beta.weight", e, s.hv)
		g.alpha = ld.matrix(pre+"ssm_alpha.weight", e, s.hv)
	}
	return g
}

// recurrentState is every GDN layer's memory, f32: the conv state (the
// last d_conv−1 pre-conv rows, oldest first) and one (d_k, d_v) state
// matrix per value head. Attention layers have none (nil).
type recurrentState struct {
	conv [][]float32 // per layer: (d_conv−1, conv_dim)
	ssm  [][]float32 // per layer: (H_v, d_k, d_v)
}

func newRecurrentState(hp *hparams) *recurrentState {
	rs := &recurrentState{conv: make([][]float32, hp.nLayer), ssm: make([][]float32, hp.nLayer)}
	s := hp.ssm
	for l := range hp.nLayer {
		if hp.recurrent[l] {
			rs.conv[l] = make([]float32, (s.dConv-1)*s.convDim())
			rs.ssm[l] = make([]float32, s.hv*s.dk*s.dv)
		}
	}
	return rs
}

// reset zeroes every state: a new sequence starts.
func (rs *recurrentState) reset() {
	for l := range rs.conv {
		clear(rs.conv[l])
		clear(rs.ssm[l])
	}
}

// gdnScratch holds a GDN layer's pass buffers (grown on first use).
type gdnScratch struct {
	mixed []float32 // (ub, conv_dim) attn_qkv·xn, before the conv
	act   []float32 // (ub, conv_dim) silu(conv(mixed)), then q, k L2-normed
	z     []float32 // (ub, value_dim) the output gate, then the layer's gated output
	b, a  []float32 // (ub, H_v) β and α projections, then β and exp(g)
	ba    []float32 // (ub, 2·H_v) qwen3next's fused projection
	o     []float32 // (ub, value_dim) the recurrence's output
	ones  []float32 // (conv_dim) 1s: silu(x) is SwiGLU(x, 1)
	win   []float32 // (d_conv−1, conv_dim) the new conv state
	heads []gdnHeadScratch
	// The current layer's arguments and the callbacks that read them.
	job             gdnJob
	convFn, deltaFn func(worker, lo, hi int)
}

// gdnHeadScratch is one worker's per-head buffers.
type gdnHeadScratch struct {
	decay, beta, u []float32
	h              kernels.DeltaHead
}

// forward runs the layer over the pass's normed rows p.xn and writes its
// output to p.tmp (§5.6, steps 1–10).
func (g *gdnLayer) forward(p *pass, l int, s *gdnScratch) {
	hp := p.m.hp
	sh, n := hp.ssm, p.n
	cd, vd, hv := sh.convDim(), sh.valueDim(), sh.hv
	s.grow(p, sh)
	mixed, act, z := s.mixed[:n*cd], s.act[:n*cd], s.z[:n*vd]
	beta, decay := s.b[:n*hv], s.a[:n*hv]

	// 1–3: the projections.
	p.linear(mixed, g.qkv, nil, p.xn)
	p.linear(z, g.z, nil, p.xn)
	if g.ba != nil {
		// qwen3next: per key head kg, [β of v-heads kg·r … kg·r+r−1 | α of them] (§5.4).
		ba := s.ba[:n*2*hv]
		p.linear(ba, g.ba, nil, p.xn)
		r := hv / sh.hk
		for t := range n {
			for j := range hv {
				kg, i := j/r, j%r
				beta[t*hv+j] = ba[t*2*hv+kg*2*r+i]
				decay[t*hv+j] = ba[t*2*hv+kg*2*r+r+i]
			}
		}
	} else {
		p.linear(beta, g.beta, nil, p.xn)
		p.linear(decay, g.alpha, nil, p.xn)
	}
	// 4: β = sigmoid(b); g = softplus(a + dt)·ssm_a, kept as exp(g).
	for t := range n {
		kernels.GDNGates(beta[t*hv:(t+1)*hv], decay[t*hv:(t+1)*hv], g.dt, g.a)
	}

	// 5: the causal depthwise conv over [state, mixed], then silu; the
	// state keeps the last d_conv−1 rows.
	state, dc := p.m.rs.conv[l], sh.dConv
	s.job = gdnJob{p: p, g: g, sh: sh, n: n, mixed: mixed, act: act, state: state, decay: decay, beta: beta}
	p.m.pool.For(n, max(1, rowGrain/cd), s.convFn)
	win := s.win[:(dc-1)*cd]
	for i := range dc - 1 {
		src := n - (dc - 1) + i // row of mixed; < 0: of the old state
		if src >= 0 {
			copy(win[i*cd:(i+1)*cd], mixed[src*cd:(src+1)*cd])
		} else {
			copy(win[i*cd:(i+1)*cd], state[(src+dc-1)*cd:(src+dc)*cd])
		}
	}
	copy(state, win)

	// 8: the delta rule, one value head per unit: its key head is
	// j mod H_k (qwen35*, tiled) or j / r (qwen3next, grouped).
	o := s.o[:n*vd]
	s.job.ssm, s.job.o = p.m.rs.ssm[l], o
	s.job.scale = 1 / float32(math.Sqrt(float64(sh.dv)))
	p.m.pool.For(hv, 1, s.deltaFn)
	s.job = gdnJob{}

	// 9: o ← RMSNorm(o; ssm_norm) ⊙ silu(z) per value head; 10: ssm_out.
	p.normRows(o, o, g.norm, n*hv)
	ks := p.m.opt.Kernels
	for i := 0; i < n*vd; i += sh.dv {
		ks.SwiGLU(z[i:i+sh.dv], o[i:i+sh.dv])
	}
	p.linear(p.tmp, g.out, nil, z)
}

// gdnJob is the current layer's arguments to the pool callbacks, which are
// bound once (gdnScratch.convFn, deltaFn) so that no layer allocates.
type gdnJob struct {
	p                 *pass
	g                 *gdnLayer
	sh                ssmShape
	n                 int
	mixed, act, state []float32
	decay, beta       []float32
	ssm, o            []float32
	scale             float32
}

// convRange is step 5 (and 6–7) for tokens [lo, hi): the causal depthwise
// conv over [state, mixed], silu, and the L2 norm of every q and k head.
func (s *gdnScratch) convRange(_, lo, hi int) {
	j := &s.job
	sh, g, cd, dc := j.sh, j.g, j.sh.convDim(), j.sh.dConv
	for t := lo; t < hi; t++ {
		out := j.act[t*cd : (t+1)*cd]
		kernels.ConvRow(out, t, j.mixed, j.state, g.conv, cd, dc)
		j.p.m.opt.Kernels.SwiGLU(out, s.ones)
		for h := range 2 * sh.hk {
			kernels.L2Norm(out[h*sh.dk:(h+1)*sh.dk], j.p.m.hp.eps)
		}
	}
}

// deltaRange is step 8 for value heads [lo, hi): the delta rule, head j's
// key head being j mod H_k (qwen35*, tiled) or j / r (qwen3next, grouped).
func (s *gdnScratch) deltaRange(worker, lo, hi int) {
	j := &s.job
	sh, n := j.sh, j.n
	cd, kd, vd, r := sh.convDim(), sh.keyDim(), sh.valueDim(), sh.hv/sh.hk
	w := &s.heads[worker]
	for v := lo; v < hi; v++ {
		kh := v % sh.hk
		if j.p.m.hp.vGrouped {
			kh = v / r
		}
		for t := range n {
			w.decay[t], w.beta[t] = j.decay[t*sh.hv+v], j.beta[t*sh.hv+v]
		}
		w.h = kernels.DeltaHead{
			S: j.ssm[v*sh.dk*sh.dv : (v+1)*sh.dk*sh.dv], Dk: sh.dk, Dv: sh.dv, N: n,
			Q: j.act[kh*sh.dk:], K: j.act[kd+kh*sh.dk:], QKStride: cd,
			V: j.act[2*kd+v*sh.dv:], VStride: cd,
			Out: j.o[v*sh.dv:], OutStride: vd,
			Decay: w.decay[:n], Beta: w.beta[:n], Scale: j.scale, U: w.u,
		}
		j.p.m.opt.Kernels.DeltaRule(&w.h)
	}
}

func (s *gdnScratch) grow(p *pass, sh ssmShape) {
	if s.convFn == nil {
		s.convFn, s.deltaFn = s.convRange, s.deltaRange
	}
	ub, cd, vd := p.m.ub, sh.convDim(), sh.valueDim()
	if len(s.mixed) >= ub*cd {
		return
	}
	s.mixed = make([]float32, ub*cd)
	s.act = make([]float32, ub*cd)
	s.z = make([]float32, ub*vd)
	s.b = make([]float32, ub*sh.hv)
	s.a = make([]float32, ub*sh.hv)
	s.ba = make([]float32, ub*2*sh.hv)
	s.o = make([]float32, ub*vd)
	s.win = make([]float32, (sh.dConv-1)*cd)
	s.ones = make([]float32, cd)
	for i := range s.ones {
		s.ones[i] = 1
	}
	s.heads = make([]gdnHeadScratch, p.m.pool.Threads())
	for i := range s.heads {
		s.heads[i] = gdnHeadScratch{decay: make([]float32, ub), beta: make([]float32, ub), u: make([]float32, sh.dv)}
	}
}
