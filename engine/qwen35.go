package engine

// This file owns the Gated DeltaNet hybrids
// (../shared/spec/architectures.md §5): qwen35 (Qwen3.5/3.6 dense),
// qwen35moe (its mixture of experts) and qwen3next. Every block is
//
//	h  = x + Mixer(RMSNorm(x; attn_norm))          Mixer: GDN (gdn.go) or gated attention (block.go)
//	x' = h + FFN(RMSNorm(h; post_attention_norm))  FFN: dense SwiGLU or MoE (moe.go)
//
// with the full-attention layers every full_attention_interval-th block
// (or where attention.recurrent_layers says). MTP blocks past the trunk
// are never loaded or run.

import "fmt"

// qwen35Layer is one trunk block: exactly one of attn/gdn, one of ffn/moe.
type qwen35Layer struct {
	attnNorm []float32 // (n_embd)
	postNorm []float32 // (n_embd) post_attention_norm: the pre-FFN norm
	attn     *selfAttn // gated, with q/k norms, no biases (§5.5)
	gdn      *gdnLayer
	ffn      *denseFFN // no biases
	moe      *moeFFN
}

type qwen35 struct {
	hp     *hparams
	layers []qwen35Layer
}

func loadQwen35(model *Model, ld *loader) *qwen35 {
	hp := model.hp
	model.rs = newRecurrentState(hp) // the GDN layers' state, beside the KV cache
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
			L.attn = &selfAttn{
				wq:    ld.matrix(pre+"attn_q.weight", e, 2*nq),
				wk:    ld.matrix(pre+"attn_k.weight", e, nkv),
				wv:    ld.matrix(pre+"attn_v.weight", e, nkv),
				qNorm: ld.vector(pre+"attn_q_norm.weight", hd),
				kNorm: ld.vector(pre+"attn_k_norm.weight", hd),
				wo:    ld.matrix(pre+"attn_output.weight", nq, e),
				gated: true,
			}
		}
		if hp.moe.nExpert > 0 {
			L.moe = loadMoE(ld, hp, pre)
		} else {
			ffn := loadFFN(ld, pre, e, hp.nFF[l], false)
			L.ffn = &ffn
		}
	}
	return m
}

func (m *qwen35) forward(o ops) {
	for l := range m.layers {
		L := &m.layers[l]

		o.rmsNorm(actXN, actX, L.attnNorm)
		if L.gdn != nil {
			o.gdn(l, L.gdn)
		} else {
			L.attn.forward(o, l, m.hp.nHead[l], m.hp.nHeadKV[l])
		}
		o.add(actX, actOut)

		o.rmsNorm(actXN, actX, L.postNorm)
		if L.moe != nil {
			o.moe(actOut, actXN, L.moe)
		} else {
			o.swiglu(actOut, actXN, L.ffn)
		}
		o.add(actX, actOut)
	}
}
