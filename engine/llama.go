package engine

// This file owns the llama architecture (../shared/spec/architectures.md
// §2): pre-norm blocks of GQA attention with NORM RoPE and a SwiGLU FFN.
// Optional biases on every projection; the output head is tied when
// output.weight is absent.

import (
	"fmt"

	"plexbench/kernels"
)

// llamaLayer is one block. hd = head dim, heads/kv = its query/KV heads.
type llamaLayer struct {
	attnNorm   []float32       // (n_embd)
	wq         *kernels.Matrix // (n_embd, heads·hd)
	wk, wv     *kernels.Matrix // (n_embd, kv·hd)
	bq, bk, bv []float32       // (heads·hd), (kv·hd), (kv·hd); optional
	wo         *kernels.Matrix // (heads·hd, n_embd)
	bo         []float32       // (n_embd); optional
	ffnNorm    []float32       // (n_embd)
	gate, up   *kernels.Matrix // (n_embd, n_ff)
	down       *kernels.Matrix // (n_ff, n_embd)
	bGate, bUp []float32       // (n_ff); optional
	bDown      []float32       // (n_embd); optional
}

type llama struct {
	hp     *hparams
	layers []llamaLayer
}

func loadLlama(ld *loader, hp *hparams) *llama {
	m := &llama{hp: hp, layers: make([]llamaLayer, hp.nLayer)}
	for l := range m.layers {
		L, pre := &m.layers[l], fmt.Sprintf("blk.%d.", l)
		e, nq, nkv, ff := hp.nEmbd, hp.nHead[l]*hp.headDim, hp.nHeadKV[l]*hp.headDim, hp.nFF[l]
		L.attnNorm = ld.vector(pre+"attn_norm.weight", e)
		L.wq, L.wk, L.wv, L.bq, L.bk, L.bv = ld.qkv(l, e, nq, nkv)
		L.wo = ld.matrix(pre+"attn_output.weight", nq, e)
		L.bo = ld.optVector(pre+"attn_output.bias", e)
		L.ffnNorm = ld.vector(pre+"ffn_norm.weight", e)
		L.gate = ld.matrix(pre+"ffn_gate.weight", e, ff)
		L.up = ld.matrix(pre+"ffn_up.weight", e, ff)
		L.down = ld.matrix(pre+"ffn_down.weight", ff, e)
		L.bGate = ld.optVector(pre+"ffn_gate.bias", ff)
		L.bUp = ld.optVector(pre+"ffn_up.bias", ff)
		L.bDown = ld.optVector(pre+"ffn_down.bias", e)
	}
	return m
}

func (m *llama) forward(p *pass) {
	for l := range m.layers {
		L, heads, kv := &m.layers[l], m.hp.nHead[l], m.hp.nHeadKV[l]

		p.rmsNorm(p.xn, p.x, L.attnNorm)
		p.linear(p.q, L.wq, L.bq, p.xn)
		p.linear(p.k, L.wk, L.bk, p.xn)
		p.linear(p.v, L.wv, L.bv, p.xn)
		p.rope(p.q, heads, ropeNorm)
		p.rope(p.k, kv, ropeNorm)
		p.attention(l, heads, kv)
		p.linear(p.tmp, L.wo, L.bo, p.att)
		p.addTo(p.x, p.tmp) // h = x + attn

		p.rmsNorm(p.xn, p.x, L.ffnNorm)
		p.swiglu(p.tmp, p.xn, L.gate, L.bGate, L.up, L.bUp, L.down, L.bDown)
		p.addTo(p.x, p.tmp) // x' = h + ffn
	}
}
