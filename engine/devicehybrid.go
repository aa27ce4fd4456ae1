package engine

// This file owns the Gated DeltaNet hybrids' blocks on the device
// (qwen35, qwen35moe, qwen3next; ../shared/spec/architectures.md §5): the
// same block sequence as qwen35.go forward, through the device stack's
// ops (linear, rmsNorm, rope, store, attention, add, swiglu) and the
// kernels of gdn.cu, gated.cu and moe.cu. The GDN layers' conv and SSM
// states live on the device beside the KV cache and are zeroed when a
// pass starts a sequence (position 0), as recurrentState.reset does on the
// CPU. The GDN layer is devicehybrid_gdn.go, the MoE FFN
// devicehybrid_moe.go. IMROPE is rope.cu's NEOX over the pass's table
// (ropeTable: its still pairs rotate by 0).

import (
	"slices"

	"plexbench/hip"
	"plexbench/kernels"
)

// hybridKernels are the kernels the hybrids launch besides stackKernels.
var hybridKernels = map[string][]string{
	"gdn.cu":   {"gdn_gates", "gdn_split_ba", "gdn_conv", "gdn_conv_state", "gdn_l2norm", "gdn_delta"},
	"gated.cu": {"gated_split", "gated_mul"},
	"moe.cu":   {"moe_route", "moe_gather", "moe_combine", "moe_shared"},
}

// devHybridLayer is a qwen35Layer on the device: one of attn/gdn, one of
// ffn/moe.
type devHybridLayer struct {
	attnNorm, postNorm hip.Buffer // (n_embd)
	attn               *devGatedAttn
	gdn                *devGDN
	ffn                *devFFN
	moe                *devMoE
}

// devGatedAttn is a gatedAttn on the device, with its layer's KV cache.
type devGatedAttn struct {
	wq, wk, wv, wo devMatrix
	qNorm, kNorm   hip.Buffer // (hd)
	k, v           hip.Buffer // (nkv, cap, hd) in the cache type
}

// hybridLayers are a qwen35's blocks on the device, with the pass buffers
// only they use.
type hybridLayers struct {
	src    *qwen35
	layers []devHybridLayer
	qg     hip.Buffer // (ub, 2·heads·hd) Wq's query and gate rows
	gate   hip.Buffer // (ub, heads·hd) the attention output gate
	g      devGDNScratch
	moe    devMoEScratch
}

// matrices lists every block matrix (nil where a layer has none).
func (m *qwen35) matrices() []*kernels.Matrix {
	var ws []*kernels.Matrix
	for _, L := range m.layers {
		if A := L.attn; A != nil {
			ws = append(ws, A.wq, A.wk, A.wv, A.wo)
		}
		if g := L.gdn; g != nil {
			ws = append(ws, g.qkv, g.z, g.beta, g.alpha, g.ba, g.out)
		}
		if f := L.ffn; f != nil {
			ws = append(ws, f.gate, f.up, f.down)
		}
		if f := L.moe; f != nil {
			ws = append(ws, f.router, f.shGate, f.shUp, f.shDown, f.shGateInp)
			ws = append(append(append(ws, f.gate...), f.up...), f.down...)
		}
	}
	return ws
}

func (h *hybridLayers) ops() []string {
	ops := append(slices.Clone(deviceStackOps), "gdn", "attn_gate")
	if h.src.hp.moe.nExpert > 0 {
		ops = append(ops, "moe")
	}
	return ops
}

// upload compiles the hybrids' kernels, puts every layer on the device
// and allocates the pass buffers.
func (h *hybridLayers) upload(st *deviceStack) error {
	if err := st.compile(hybridKernels); err != nil {
		return err
	}
	hp, ub := h.src.hp, st.m.ub
	h.layers = make([]devHybridLayer, len(h.src.layers))
	maxQ := 0
	for l := range h.src.layers {
		if err := h.uploadLayer(st, l); err != nil {
			return err
		}
		maxQ = max(maxQ, hp.nHead[l]*hp.headDim)
	}
	var err error
	if h.qg, err = st.alloc(4 * ub * 2 * maxQ); err != nil {
		return err
	}
	if h.gate, err = st.alloc(4 * ub * maxQ); err != nil {
		return err
	}
	if err := h.g.alloc(st, hp.ssm); err != nil {
		return err
	}
	return h.moe.alloc(st, hp)
}

// uploadLayer puts layer l's weights, and its KV cache or recurrent
// states, on the device.
func (h *hybridLayers) uploadLayer(st *deviceStack, l int) error {
	L, D := &h.src.layers[l], &h.layers[l]
	if err := st.uploadAll([]vecUp{{&D.attnNorm, L.attnNorm}, {&D.postNorm, L.postNorm}}, nil); err != nil {
		return err
	}
	if A := L.attn; A != nil {
		D.attn = &devGatedAttn{}
		d := D.attn
		err := st.uploadAll([]vecUp{{&d.qNorm, A.qNorm}, {&d.kNorm, A.kNorm}},
			[]matUp{{&d.wq, A.wq}, {&d.wk, A.wk}, {&d.wv, A.wv}, {&d.wo, A.wo}})
		if err != nil {
			return err
		}
		if d.k, d.v, err = st.kvCache(l); err != nil {
			return err
		}
	}
	if L.gdn != nil {
		D.gdn = &devGDN{}
		if err := D.gdn.upload(st, L.gdn); err != nil {
			return err
		}
	}
	if f := L.ffn; f != nil {
		D.ffn = &devFFN{}
		if err := st.uploadAll(nil, []matUp{{&D.ffn.gate, f.gate}, {&D.ffn.up, f.up}, {&D.ffn.down, f.down}}); err != nil {
			return err
		}
	}
	if L.moe != nil {
		D.moe = &devMoE{}
		return D.moe.upload(st, L.moe)
	}
	return nil
}

// forward runs the pass's blocks (qwen35.forward on the device): a pass
// at position 0 first zeroes the recurrent states.
func (h *hybridLayers) forward(st *deviceStack, p *pass) {
	if p.pos0 == 0 {
		h.reset(st)
	}
	n, e := p.n, st.m.hp.nEmbd
	for l := range h.layers {
		D := &h.layers[l]
		st.rmsNorm(st.xn, st.x, D.attnNorm, n, e)
		if D.gdn != nil {
			h.gdnLayer(st, p, D.gdn)
		} else {
			h.attention(st, p, l, D.attn)
		}
		st.add(st.x, st.tmp, n*e)
		st.rmsNorm(st.xn, st.x, D.postNorm, n, e)
		if D.moe != nil {
			h.moeFFN(st, p, D.moe)
		} else {
			st.ffn(st.tmp, *D.ffn, n)
		}
		st.add(st.x, st.tmp, n*e)
	}
}

// reset zeroes every GDN layer's conv and SSM state: a sequence starts.
func (h *hybridLayers) reset(st *deviceStack) {
	for _, D := range h.layers {
		if D.gdn == nil || st.err != nil {
			continue
		}
		for _, b := range []hip.Buffer{D.gdn.conv, D.gdn.ssm} {
			if err := st.s.Memset(b, 0, b.Len(), 0); err != nil && st.err == nil {
				st.err = errDevice("reset of the recurrent state", err)
			}
		}
	}
}

// attention is the gated full-attention layer (§5.5, qwen35.attention on
// the device): Wq's rows split into queries and gate, q/k head norms,
// RoPE, the KV store and dense attention, the output times sigmoid(gate),
// then Wo into st.tmp.
func (h *hybridLayers) attention(st *deviceStack, p *pass, l int, A *devGatedAttn) {
	hp, n := st.m.hp, p.n
	heads, kv, hd := hp.nHead[l], hp.nHeadKV[l], hp.headDim
	nq := n * heads * hd
	if p.pos0 == 0 {
		p.attn.fp.heads += int64(heads) // for the block counts, as the CPU's attention counts them
	}
	st.linear(h.qg, A.wq, hip.Buffer{}, st.xn, n)
	st.args.Reset()
	st.args.Ptr(h.qg, 0).Ptr(st.q, 0).Ptr(h.gate, 0).I32(int32(hd)).U64(uint64(nq))
	st.launch("gated_split", hip.Dim3{X: (nq + 255) / 256}, hip.Dim3{X: 256}, 0)
	st.linear(st.k, A.wk, hip.Buffer{}, st.xn, n)
	st.linear(st.v, A.wv, hip.Buffer{}, st.xn, n)
	st.rmsNorm(st.q, st.q, A.qNorm, n*heads, hd)
	st.rmsNorm(st.k, st.k, A.kNorm, n*kv, hd)
	st.rope(st.q, n, heads)
	st.rope(st.k, n, kv)
	st.store(st.k, A.k, n, kv, p.pos0)
	st.store(st.v, A.v, n, kv, p.pos0)
	st.attention(p, A.k, A.v, n, heads, kv)
	st.args.Reset()
	st.args.Ptr(st.att, 0).Ptr(h.gate, 0).U64(uint64(nq))
	st.launch("gated_mul", hip.Dim3{X: (nq + 255) / 256}, hip.Dim3{X: 256}, 0)
	st.linear(st.tmp, A.wo, hip.Buffer{}, st.att, n)
}
