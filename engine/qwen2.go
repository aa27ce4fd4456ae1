package engine

// This file owns the qwen2 architecture (../shared/spec/architectures.md
// §3): the dense block (block.go) with NEOX RoPE, q/k/v biases, n_head·hd
// == n_embd (hparams.go checkAttnWidth), and an optional output bias
// (loaded with the LM head in model.go).

type qwen2 struct{ dense }

func loadQwen2(ld *loader, hp *hparams) *qwen2 {
	return &qwen2{loadDense(ld, hp, denseParts{})}
}
