package engine

// This file owns the qwen3 architecture (../shared/spec/architectures.md
// §4): qwen2's block without biases in practice, a head dim of its own
// (n_head·hd may differ from n_embd), and per-head RMSNorm of q and k
// before RoPE.

import (
	"fmt"

	"plexbench/kernels"
)

// qwen3Layer is one block.
type qwen3Layer struct {
	attnNorm   []float32       // (n_embd)
	wq         *kernels.Matrix // (n_embd, heads·hd)
	wk, wv     *kernels.Matrix // (n_embd, kv·hd)
	bq, bk, bv []float32       // (heads·hd), (kv·hd), (kv·hd); optional
	qNorm      []float32       // (hd) shared by every query head
	kNorm      []float32       // (hd) shared by every key head
	wo         *kernels.Matrix // (heads·hd, n_embd)
	ffnNorm    []float32       // (n_embd)
	gate, up   *kernels.Matrix // (n_embd, n_ff)
	down       *kernels.Matrix // (n_ff, n_embd)
}

type qwen3 struct {
	hp     *hparams
	layers []qwen3Layer
}

func loadQwen3(ld *loader, hp *hparams) *qwen3 {
	m := &qwen3{hp: hp, layers: make([]qwen3Layer, hp.nLayer)}
	for l := range m.layers {
		L, pre := &m.layers[l], fmt.Sprintf("blk.%d.", l)
		e, nq, nkv, ff := hp.nEmbd, hp.nHead[l]*hp.headDim, hp.nHeadKV[l]*hp.headDim, hp.nFF[l]
		L.attnNorm = ld.vector(pre+"attn_norm.weight", e)
		L.wq, L.wk, L.wv, L.bq, L.bk, L.bv = ld.qkv(l, e, nq, nkv)
		L.qNorm = ld.vector(pre+"attn_q_norm.weight", hp.headDim)
		L.kNorm = ld.vector(pre+"attn_k_norm.weight", hp.headDim)
		L.wo = ld.matrix(pre+"attn_output.weight", nq, e)
		L.ffnNorm = ld.vector(pre+"ffn_norm.weight", e)
		L.gate = ld.matrix(pre+"ffn_gate.weight", e, ff)
		L.up = ld.matrix(pre+"ffn_up.weight", e, ff)
		L.down = ld.matrix(pre+"ffn_down.weight", ff, e)
	}
	// A reranker's classification head, which llama.cpp loads when present
	// and language modelling does not use.
	ld.skip("cls_out.weight")
	ld.skip("cls_out.bias")
	return m
}

func (m *qwen3) forward(p *pass) {
	for l := range m.layers {
		L, heads, kv := &m.layers[l], m.hp.nHead[l], m.hp.nHeadKV[l]

		p.rmsNorm(p.xn, p.x, L.attnNorm)
		p.linear(p.q, L.wq, L.bq, p.xn)
		p.linear(p.k, L.wk, L.bk, p.xn)
		p.linear(p.v, L.wv, L.bv, p.xn)
		p.headNorm(p.q, heads, L.qNorm)
		p.headNorm(p.k, kv, L.kNorm)
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
