package engine

// This file owns the qwen2 architecture (../shared/spec/architectures.md
// §3): the dense block (block.go) with NEOX RoPE, q/k/v biases, n_head·hd
// == n_embd (hparams.go checkAttnWidth), and an optional output bias
// (added by the LM head, head.go).

type qwen2 struct{ dense }

func loadQwen2(m *Model, ld *loader) *qwen2 {
	m.outBias = ld.optVector("output.bias", m.hp.nVocab)
	return &qwen2{loadDense(ld, m.hp, denseParts{})}
}
