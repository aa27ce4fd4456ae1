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

// gdnLayer runs GDN layer l over the pass's n normed rows st.xn into
// st.tmp, carrying its states st.conv[l] and st.ssm[l].
func (st *deviceStack) gdnLayer(l int, g *gdnLayer, n int) {
	sh, s := st.m.hp.ssm, &st.hyb.g
	st.linear(s.mixed, st.mat(g.qkv), hip.Buffer{}, st.xn, n)
	st.linear(s.z, st.mat(g.z), hip.Buffer{}, st.xn, n)
	st.gdnGates(g, n)
	st.gdnConv(st.conv[l], g, n)
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
	st.args.Ptr(st.ssm[l], 0).Ptr(s.act, 0).Ptr(s.decay, 0).Ptr(s.beta, 0).Ptr(s.o, 0).I32(int32(n)).
		I32(int32(sh.hk)).I32(int32(sh.hv)).I32(int32(sh.dk)).I32(int32(sh.dv)).I32(grouped).
		F32(1 / float32(math.Sqrt(float64(sh.dv))))
	st.launchGeom("gdn_delta", gpu.GDNDelta(sh.hv, sh.dv))
	// 9: o ← RMSNorm(o; ssm_norm) ⊙ silu(z) per value head; 10: ssm_out.
	st.rmsNorm(s.o, s.o, st.vec(g.norm), n*sh.hv, sh.dv)
	st.swiglu(s.z, s.o, n*sh.valueDim())
	st.linear(st.tmp, st.mat(g.out), hip.Buffer{}, s.z, n)
}

// gdnGates is steps 3–4: the β and α projections (qwen3next's fused one
// split per key head), then β = sigmoid(b) and the decay exp(g).
func (st *deviceStack) gdnGates(g *gdnLayer, n int) {
	sh, s := st.m.hp.ssm, &st.hyb.g
	total := n * sh.hv
	grid, block := hip.Dim3{X: (total + 255) / 256}, hip.Dim3{X: 256}
	if g.ba != nil {
		st.linear(s.ba, st.mat(g.ba), hip.Buffer{}, st.xn, n)
		st.args.Reset()
		st.args.Ptr(s.ba, 0).Ptr(s.beta, 0).Ptr(s.decay, 0).I32(int32(sh.hv)).I32(int32(sh.hv / sh.hk)).U64(uint64(total))
		st.launch("gdn_split_ba", grid, block, 0)
	} else {
		st.linear(s.beta, st.mat(g.beta), hip.Buffer{}, st.xn, n)
		st.linear(s.decay, st.mat(g.alpha), hip.Buffer{}, st.xn, n)
	}
	st.args.Reset()
	st.args.Ptr(s.beta, 0).Ptr(s.decay, 0).Ptr(st.vec(g.dt), 0).Ptr(st.vec(g.a), 0).I32(int32(sh.hv)).U64(uint64(total))
	st.launch("gdn_gates", grid, block, 0)
}

// gdnConv is step 5: the causal conv over [state, mixed] and silu into
// act, then the state keeps the window's last d_conv−1 rows.
func (st *deviceStack) gdnConv(state hip.Buffer, g *gdnLayer, n int) {
	sh, s := st.m.hp.ssm, &st.hyb.g
	cd := sh.convDim()
	st.args.Reset()
	st.args.Ptr(s.mixed, 0).Ptr(state, 0).Ptr(st.vec(g.conv), 0).Ptr(s.act, 0).I32(int32(cd)).I32(int32(sh.dConv))
	st.launch("gdn_conv", hip.Dim3{X: (cd + 255) / 256, Y: n}, hip.Dim3{X: 256}, 0)
	st.args.Reset()
	st.args.Ptr(s.mixed, 0).Ptr(state, 0).I32(int32(cd)).I32(int32(sh.dConv)).I32(int32(n))
	st.launch("gdn_conv_state", hip.Dim3{X: (cd + 255) / 256}, hip.Dim3{X: 256}, 0)
}
