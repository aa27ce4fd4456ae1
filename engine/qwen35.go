package engine

// This file owns the Gated DeltaNet hybrids
// (../shared/spec/architectures.md §5): qwen35 (Qwen3.5/3.6 dense),
// qwen35moe (its mixture of experts) and qwen3next. Every block is
//
//	h  = x + Mixer(RMSNorm(x; attn_norm))          Mixer: GDN (gdn.go) or gated attention
//	x' = h + FFN(RMSNorm(h; post_attention_norm))  FFN: dense SwiGLU or MoE (moe.go)
//
// with the full-attention layers every full_attention_interval-th block
// (or where attention.recurrent_layers says). MTP blocks past the trunk
// are never loaded or run.

import (
	"fmt"

	"plexbench/kernels"
)

// qwen35Layer is one trunk block: exactly one of attn/gdn, one of ffn/moe.
type qwen35Layer struct {
	attnNorm []float32 // (n_embd)
	postNorm []float32 // (n_embd) post_attention_norm: the pre-FFN norm
	attn     *gatedAttn
	gdn      *gdnLayer
	ffn      *denseFFN
	moe      *moeFFN
}

// gatedAttn is a full-attention layer (§5.5).
type gatedAttn struct {
	wq           *kernels.Matrix // (n_embd, 2·heads·hd): per head [query (hd) | gate (hd)]
	wk, wv       *kernels.Matrix // (n_embd, kv·hd)
	qNorm, kNorm []float32       // (hd)
	wo           *kernels.Matrix // (heads·hd, n_embd)
}

// denseFFN is qwen35's SwiGLU FFN (§1.7).
type denseFFN struct {
	gate, up *kernels.Matrix // (n_embd, n_ff)
	down     *kernels.Matrix // (n_ff, n_embd)
}

type qwen35 struct {
	hp     *hparams
	layers []qwen35Layer
	s      hybridScratch
}

// hybridScratch holds the pass buffers only these archs use, grown on
// first use to the pass size.
type hybridScratch struct {
	qg   []float32 // (ub, 2·heads·hd) query and gate, as Wq writes them
	gate []float32 // (ub, heads·hd) the attention output gate
	gdn  gdnScratch
	moe  moeScratch
}

func loadQwen35(ld *loader, hp *hparams) *qwen35 {
	m := &qwen35{hp: hp, layers: make([]qwen35Layer, hp.nLayer)}
	e, hd := hp.nEmbd, hp.headDim
	ld.skipBlocks(hp.nLayer, hp.nLayerAll) // the MTP blocks: known, never run
	for l := range m.layers {
		L, pre := &m.layers[l], fmt.Sprintf("blk.%d.", l)
		L.attnNorm = ld.vector(pre+"attn_norm.weight", e)
		L.postNorm = ld.vector(pre+"post_attention_norm.weight", e)
		if hp.recurrent[l] {
			L.gdn = loadGDN(ld, hp, pre)
		} else {
			nq, nkv := hp.nHead[l]*hd, hp.nHeadKV[l]*hd
			L.attn = &gatedAttn{
				wq:    ld.matrix(pre+"attn_q.weight", e, 2*nq),
				wk:    ld.matrix(pre+"attn_k.weight", e, nkv),
				wv:    ld.matrix(pre+"attn_v.weight", e, nkv),
				qNorm: ld.vector(pre+"attn_q_norm.weight", hd),
				kNorm: ld.vector(pre+"attn_k_norm.weight", hd),
				wo:    ld.matrix(pre+"attn_output.weight", nq, e),
			}
		}
		if hp.moe.nExpert > 0 {
			L.moe = loadMoE(ld, hp, pre)
		} else {
			ff := hp.nFF[l]
			L.ffn = &denseFFN{
				gate: ld.matrix(pre+"ffn_gate.weight", e, ff),
				up:   ld.matrix(pre+"ffn_up.weight", e, ff),
				down: ld.matrix(pre+"ffn_down.weight", ff, e),
			}
		}
	}
	return m
}

func (m *qwen35) forward(p *pass) {
	for l := range m.layers {
		L := &m.layers[l]

		p.rmsNorm(p.xn, p.x, L.attnNorm)
		if L.gdn != nil {
			L.gdn.forward(p, l, &m.s.gdn)
		} else {
			m.attention(p, l, L.attn)
		}
		p.addTo(p.x, p.tmp)

		p.rmsNorm(p.xn, p.x, L.postNorm)
		if L.moe != nil {
			L.moe.forward(p, p.tmp, p.xn, &m.s.moe)
		} else {
			p.swiglu(p.tmp, p.xn, L.ffn.gate, nil, L.ffn.up, nil, L.ffn.down, nil)
		}
		p.addTo(p.x, p.tmp)
	}
}

// attention is the gated full-attention layer (§5.5): the doubled query
// projection split per head into query and gate, q/k RMSNorm, partial
// NEOX RoPE, GQA attention through the engine's attention op, the output
// times sigmoid(gate), then Wo. Writes p.tmp.
func (m *qwen35) attention(p *pass, l int, A *gatedAttn) {
	heads, kv, hd := m.hp.nHead[l], m.hp.nHeadKV[l], m.hp.headDim
	nq := heads * hd
	s := &m.s
	s.qg = kernels.Grow(s.qg, p.n*2*nq)
	s.gate = kernels.Grow(s.gate, p.n*nq)
	p.linear(s.qg, A.wq, nil, p.xn)
	for t := range p.n {
		for h := range heads {
			src := s.qg[(t*heads+h)*2*hd:]
			copy(p.q[(t*heads+h)*hd:][:hd], src[:hd])
			copy(s.gate[(t*heads+h)*hd:][:hd], src[hd:2*hd])
		}
	}
	p.linear(p.k, A.wk, nil, p.xn)
	p.linear(p.v, A.wv, nil, p.xn)
	p.headNorm(p.q, heads, A.qNorm)
	p.headNorm(p.k, kv, A.kNorm)
	p.rope(p.q, heads, ropeNeox)
	p.rope(p.k, kv, ropeNeox)
	p.attention(l, heads, kv)
	p.args = rowArgs{out: p.att[:p.n*nq], in: s.gate[:p.n*nq]}
	p.m.pool.For(p.n*nq, rowGrain, p.gateFn)
	p.linear(p.tmp, A.wo, nil, p.att[:p.n*nq])
}

// gateRange multiplies args.out by sigmoid(args.in) over [lo, hi): the
// gated attention's output gate.
func (p *pass) gateRange(_, lo, hi int) {
	out, gate := p.args.out[lo:hi], p.args.in[lo:hi]
	for i := range out {
		out[i] *= kernels.Sigmoid(gate[i])
	}
}
