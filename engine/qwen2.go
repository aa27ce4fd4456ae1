package engine

// This file owns the qwen2 architecture (../shared/spec/architectures.md
// §3): llama's block with NEOX RoPE, q/k/v biases, and an optional output
// bias (loaded with the LM head in model.go).

import (
	"fmt"

	"plexbench/kernels"
)

// qwen2Layer is one block; n_head·hd == n_embd.
type qwen2Layer struct {
	attnNorm   []float32       // (n_embd)
	wq         *kernels.Matrix // (n_embd, n_embd)
	wk, wv     *kernels.Matrix // (n_embd, kv·hd)
	bq, bk, bv []float32       // (n_embd), (kv·hd), (kv·hd)
	wo         *kernels.Matrix // (n_embd, n_embd)
	ffnNorm    []float32       // (n_embd)
	gate, up   *kernels.Matrix // (n_embd, n_ff)
	down       *kernels.Matrix // (n_ff, n_embd)
}

type qwen2 struct {
	hp     *hparams
	layers []qwen2Layer
}

func loadQwen2(ld *loader, hp *hparams) *qwen2 {
	m := &qwen2{hp: hp, layers: make([]qwen2Layer, hp.nLayer)}
	for l := range m.layers {
		L, pre := &m.layers[l], fmt.Sprintf("blk.%d.", l)
		e, nq, nkv, ff := hp.nEmbd, hp.nHead[l]*hp.headDim, hp.nHeadKV[l]*hp.headDim, hp.nFF[l]
		L.attnNorm = ld.vector(pre+"attn_norm.weight", e)
		L.wq, L.wk, L.wv, L.bq, L.bk, L.bv = ld.qkv(l, e, nq, nkv)
		L.wo = ld.matrix(pre+"attn_output.weight", nq, e)
		L.ffnNorm = ld.vector(pre+"ffn_norm.weight", e)
		L.gate = ld.matrix(pre+"ffn_gate.weight", e, ff)
		L.up = ld.matrix(pre+"ffn_up.weight", e, ff)
		L.down = ld.matrix(pre+"ffn_down.weight", ff, e)
	}
	return m
}

func (m *qwen2) forward(p *pass) {
	for l := range m.layers {
		L, heads, kv := &m.layers[l], m.hp.nHead[l], m.hp.nHeadKV[l]

		p.rmsNorm(p.xn, p.x, L.attnNorm)
		p.linear(p.q, L.wq, L.bq, p.xn)
		p.linear(p.k, L.wk, L.bk, p.xn)
		p.linear(p.v, L.wv, L.bv, p.xn)
		p.rope(p.q, heads, ropeNeox)
		p.rope(p.k, kv, ropeNeox)
		p.attention(l, heads, kv)
		p.linear(p.tmp, L.wo, nil, p.att)
		p.addTo(p.x, p.tmp)

		p.rmsNorm(p.xn, p.x, L.ffnNorm)
		p.swiglu(p.tmp, p.xn, L.gate, nil, L.up, nil, L.down, nil)
		p.addTo(p.x, p.tmp)
	}
}
