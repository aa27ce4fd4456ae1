package engine

// This file owns the qwen3 architecture (../shared/spec/architectures.md
// §4): the dense block (block.go) with NEOX RoPE, no biases in practice, a
// head dim of its own (n_head·hd may differ from n_embd), and per-head
// RMSNorm of q and k before RoPE.

type qwen3 struct{ dense }

func loadQwen3(m *Model, ld *loader) *qwen3 {
	q := &qwen3{loadDense(ld, m.hp, denseParts{qkNorm: true})}
	// A reranker's classification head, which llama.cpp loads when present
	// and language modelling does not use.
	ld.skip("cls_out.weight")
	ld.skip("cls_out.bias")
	return q
}
