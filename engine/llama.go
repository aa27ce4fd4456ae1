package engine

// This file owns the llama architecture (../shared/spec/architectures.md
// §2): the dense block (block.go) with NORM RoPE (hparams.go archRope),
// optional biases on every projection and optional RoPE frequency
// divisors (rope_freqs, applied in rope.go). The output head is tied when
// output.weight is absent.

type llama struct{ dense }

func loadLlama(m *Model, ld *loader) *llama {
	m.ropeFreqs = ld.optVector("rope_freqs.weight", m.hp.nRot/2)
	return &llama{loadDense(ld, m.hp, denseParts{biases: true})}
}
