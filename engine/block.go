package engine

// This file owns the pieces the architectures share, each in data-flow
// order over the ops (ops.go): the attention sub-block (GQA with optional
// biases, per-head q/k norms and the hybrids' output gate), the SwiGLU
// FFN's weights, and the pre-norm dense block that llama, qwen2 and qwen3
// stack (../shared/spec/architectures.md §1–4). An architecture's file
// says which of the optional parts it has.

import (
	"fmt"

	"plexbench/kernels"
)

// selfAttn is one attention sub-block. heads/kv are its layer's query/KV
// heads of hd.
type selfAttn struct {
	wq           *kernels.Matrix // (n_embd, heads·hd); gated: (n_embd, 2·heads·hd), per head [query (hd) | gate (hd)]
	wk, wv       *kernels.Matrix // (n_embd, kv·hd)
	bq, bk, bv   []float32       // (heads·hd), (kv·hd), (kv·hd); optional
	qNorm, kNorm []float32       // (hd) shared by every query / key head; optional (qwen3, the hybrids)
	wo           *kernels.Matrix // (heads·hd, n_embd)
	bo           []float32       // (n_embd); optional (llama)
	gated        bool            // the hybrids' gated attention (§5.5)
}

// forward writes the attention of the normed rows actXN to actOut:
// project, per-head norm, RoPE, attend over the cache, gate, project out.
func (a *selfAttn) forward(o ops, l, heads, kv int) {
	if a.gated {
		o.gatedQuery(a.wq, heads)
	} else {
		o.linear(actQ, a.wq, a.bq, actXN)
	}
	o.linear(actK, a.wk, a.bk, actXN)
	o.linear(actV, a.wv, a.bv, actXN)
	if a.qNorm != nil {
		o.headNorm(actQ, heads, a.qNorm)
		o.headNorm(actK, kv, a.kNorm)
	}
	o.rope(actQ, heads)
	o.rope(actK, kv)
	o.attention(l, heads, kv)
	if a.gated {
		o.outputGate(heads)
	}
	o.linear(actOut, a.wo, a.bo, actAtt)
}

// denseFFN is a SwiGLU FFN (§1.7); biases are optional (llama).
type denseFFN struct {
	gate, up   *kernels.Matrix // (n_embd, n_ff)
	down       *kernels.Matrix // (n_ff, n_embd)
	bGate, bUp []float32       // (n_ff); optional
	bDown      []float32       // (n_embd); optional
}

// loadFFN loads block pre's SwiGLU FFN of width ff, with its optional
// biases when biases is set.
func loadFFN(ld *loader, pre string, e, ff int, biases bool) denseFFN {
	f := denseFFN{
		gate: ld.matrix(pre+"ffn_gate.weight", e, ff),
		up:   ld.matrix(pre+"ffn_up.weight", e, ff),
		down: ld.matrix(pre+"ffn_down.weight", ff, e),
	}
	if biases {
		f.bGate = ld.optVector(pre+"ffn_gate.bias", ff)
		f.bUp = ld.optVector(pre+"ffn_up.bias", ff)
		f.bDown = ld.optVector(pre+"ffn_down.bias", e)
	}
	return f
}

// denseLayer is one pre-norm block of the dense architectures:
//
//	h  = x + Attention(RMSNorm(x; attn_norm))
//	x' = h + FFN(RMSNorm(h; ffn_norm))
type denseLayer struct {
	attnNorm []float32 // (n_embd)
	selfAttn
	ffnNorm []float32 // (n_embd)
	denseFFN
}

// denseParts are the optional parts an architecture's dense block has
// (q/k/v biases are loaded wherever the file has them).
type denseParts struct {
	qkNorm bool // attn_q_norm, attn_k_norm (qwen3)
	biases bool // attn_output and FFN biases, optional (llama)
}

// dense is a stack of dense blocks.
type dense struct {
	hp     *hparams
	layers []denseLayer
}

func loadDense(ld *loader, hp *hparams, parts denseParts) dense {
	m := dense{hp: hp, layers: make([]denseLayer, hp.nLayer)}
	for l := range m.layers {
		L, pre := &m.layers[l], fmt.Sprintf("blk.%d.", l)
		e, nq, nkv := hp.nEmbd, hp.nHead[l]*hp.headDim, hp.nHeadKV[l]*hp.headDim
		L.attnNorm = ld.vector(pre+"attn_norm.weight", e)
		A := &L.selfAttn
		A.wq, A.wk, A.wv, A.bq, A.bk, A.bv = ld.qkv(l, e, nq, nkv)
		if parts.qkNorm {
			A.qNorm = ld.vector(pre+"attn_q_norm.weight", hp.headDim)
			A.kNorm = ld.vector(pre+"attn_k_norm.weight", hp.headDim)
		}
		A.wo = ld.matrix(pre+"attn_output.weight", nq, e)
		if parts.biases {
			A.bo = ld.optVector(pre+"attn_output.bias", e)
		}
		L.ffnNorm = ld.vector(pre+"ffn_norm.weight", e)
		L.denseFFN = loadFFN(ld, pre, e, hp.nFF[l], parts.biases)
	}
	return m
}

func (m *dense) forward(o ops) {
	for l := range m.layers {
		L := &m.layers[l]

		o.rmsNorm(actXN, actX, L.attnNorm)
		L.selfAttn.forward(o, l, m.hp.nHead[l], m.hp.nHeadKV[l])
		o.add(actX, actOut) // h = x + attn

		o.rmsNorm(actXN, actX, L.ffnNorm)
		o.swiglu(actOut, actXN, &L.denseFFN)
		o.add(actX, actOut) // x' = h + ffn
	}
}
