package engine

// This file owns the llama architecture (../shared/spec/architectures.md
// §2): the dense block (block.go) with NORM RoPE (hparams.go archRope),
// optional biases on every projection, and a rope_freqs vector (model.go).
// The output head is tied when output.weight is absent.

type llama struct{ dense }

func loadLlama(ld *loader, hp *hparams) *llama {
	return &llama{loadDense(ld, hp, denseParts{biases: true})}
}
