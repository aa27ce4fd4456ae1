package engine

// This file owns the Gated DeltaNet layer on the device (gdn.go's forward,
// ../shared/spec/architectures.md §5.6 steps 1–10): the projections
// through the stack's linear, gdn.cu's gates, conv, conv state, L2 norms
// and delta rule, then the gated norm (rmsnorm.cu, swiglu.cu) and ssm_out.

import (
	"math"

	"plexbench/hip"
	"plexbench/kernels/gpu"
)

// devGDN is a gdnLayer on the device, with its recurrent states.
type devGDN struct {
	qkv, z, beta, alpha, ba, out devMatrix // ba (qwen3next) or beta and alpha (qwen35*)
	taps, dt, a, norm            hip.Buffer
	conv                         hip.Buffer // (d_conv−1, conv_dim) the conv state, oldest row first
	ssm                          hip.Buffer // (H_v, d_k, d_v) the delta rule's state
}

func (d *devGDN) upload(st *deviceStack, g *gdnLayer) error {
	err := st.uploadAll([]vecUp{{&d.taps, g.conv}, {&d.dt, g.dt}, {&d.a, g.a}, {&d.norm, g.norm}},
		[]matUp{{&d.qkv, g.qkv}, {&d.z, g.z}, {&d.beta, g.beta}, {&d.alpha, g.alpha}, {&d.ba, g.ba}, {&d.out, g.out}})
	if err != nil {
		return err
	}
	sh := st.m.hp.ssm
	if d.conv, err = st.alloc(4 * (sh.dConv - 1) * sh.convDim()); err != nil {
		return err
	}
	d.ssm, err = st.alloc(4 * sh.hv * sh.dk * sh.dv)
	return err
}

// devGDNScratch is the GDN layers' pass buffers (gdnScratch's on the device).
type devGDNScratch struct {
	mixed, act  hip.Buffer // (ub, conv_dim) attn_qkv·xn; silu(conv), q and k L2-normed
	z, o        hip.Buffer // (ub, value_dim) the output gate, then the gated output; the recurrence's output
	beta, decay hip.Buffer // (ub, H_v)
	ba          hip.Buffer // (ub, 2·H_v) qwen3next's fused projection
}

func (s *devGDNScratch) alloc(st *deviceStack, sh ssmShape) error {
	ub := st.m.ub
	for _, b := range []struct {
		b *hip.Buffer
		n int
	}{{&s.mixed, ub * sh.convDim()}, {&s.act, ub * sh.convDim()}, {&s.z, ub * sh.valueDim()}, {&s.o, ub * sh.valueDim()},
		{&s.beta, ub * sh.hv}, {&s.decay, ub * sh.hv}, {&s.ba, ub * 2 * sh.hv}} {
		var err error
		if *b.b, err = st.alloc(4 * b.n); err != nil {
			return err
		}
	}
	return nil
}

// gdnLayer runs one GDN layer over st.xn into st.tmp.
func (h *hybridLayers) gdnLayer(st *deviceStack, p *pass, g *devGDN) {
	sh, n, s := st.m.hp.ssm, p.n, &h.g
	st.linear(s.mixed, g.qkv, hip.Buffer{}, st.xn, n)
	st.linear(s.z, g.z, hip.Buffer{}, st.xn, n)
	h.gates(st, g, n)
	h.conv(st, g, n)
	// 7: the L2 norm of every q and k head.
	st.args.Reset()
	st.args.Ptr(s.act, 0).I32(int32(sh.convDim())).I32(int32(sh.dk)).F32(st.m.hp.eps)
	st.launch("gdn_l2norm", hip.Dim3{X: n, Y: 2 * sh.hk}, hip.Dim3{X: 128}, 0)
	// 8: the delta rule, one value head per block.
	grouped := int32(0)
	if st.m.hp.vGrouped {
		grouped = 1
	}
	st.args.Reset()
	st.args.Ptr(g.ssm, 0).Ptr(s.act, 0).Ptr(s.decay, 0).Ptr(s.beta, 0).Ptr(s.o, 0).I32(int32(n)).
		I32(int32(sh.hk)).I32(int32(sh.hv)).I32(int32(sh.dk)).I32(int32(sh.dv)).I32(grouped).
		F32(1 / float32(math.Sqrt(float64(sh.dv))))
	st.launchGeom("gdn_delta", gpu.GDNDelta(sh.hv, sh.dv))
	// 9: o ← RMSNorm(o; ssm_norm) ⊙ silu(z) per value head; 10: ssm_out.
	st.rmsNorm(s.o, s.o, g.norm, n*sh.hv, sh.dv)
	st.swiglu(s.z, s.o, n*sh.valueDim())
	st.linear(st.tmp, g.out, hip.Buffer{}, s.z, n)
}

// gates is steps 3–4: the β and α projections (qwen3next's fused one
// split per key head), then β = sigmoid(b) and the decay exp(g).
func (h *hybridLayers) gates(st *deviceStack, g *devGDN, n int) {
	sh, s := st.m.hp.ssm, &h.g
	total := n * sh.hv
	grid, block := hip.Dim3{X: (total + 255) / 256}, hip.Dim3{X: 256}
	if g.ba.b.Len() > 0 {
		st.linear(s.ba, g.ba, hip.Buffer{}, st.xn, n)
		st.args.Reset()
		st.args.Ptr(s.ba, 0).Ptr(s.beta, 0).Ptr(s.decay, 0).I32(int32(sh.hv)).I32(int32(sh.hv / sh.hk)).U64(uint64(total))
		st.launch("gdn_split_ba", grid, block, 0)
	} else {
		st.linear(s.beta, g.beta, hip.Buffer{}, st.xn, n)
		st.linear(s.decay, g.alpha, hip.Buffer{}, st.xn, n)
	}
	st.args.Reset()
	st.args.Ptr(s.beta, 0).Ptr(s.decay, 0).Ptr(g.dt, 0).Ptr(g.a, 0).I32(int32(sh.hv)).U64(uint64(total))
	st.launch("gdn_gates", grid, block, 0)
}

// conv is step 5: the causal conv over [state, mixed] and silu into act,
// then the state keeps the window's last d_conv−1 rows.
func (h *hybridLayers) conv(st *deviceStack, g *devGDN, n int) {
	sh, s := st.m.hp.ssm, &h.g
	cd := sh.convDim()
	st.args.Reset()
	st.args.Ptr(s.mixed, 0).Ptr(g.conv, 0).Ptr(g.taps, 0).Ptr(s.act, 0).I32(int32(cd)).I32(int32(sh.dConv))
	st.launch("gdn_conv", hip.Dim3{X: (cd + 255) / 256, Y: n}, hip.Dim3{X: 256}, 0)
	st.args.Reset()
	st.args.Ptr(s.mixed, 0).Ptr(g.conv, 0).I32(int32(cd)).I32(int32(sh.dConv)).I32(int32(n))
	st.launch("gdn_conv_state", hip.Dim3{X: (cd + 255) / 256}, hip.Dim3{X: 256}, 0)
}
