package kernels

// This file owns the set's row conversion to a cache or activation type
// (KernelSet.QuantizeActivation): the KV cache's f32 → f16/bf16 stores go
// through the AVX2 converters (rowconv_avx2_amd64.s) where the CPU has
// them. Those give the bytes of quantizeF16 and quantizeBF16 on every
// input, NaN included, so the choice needs no variant name.

// QuantizeActivation is the package's QuantizeActivation with vector F16
// and BF16 conversion where the CPU has AVX2 and F16C: byte for byte the
// same result.
func (ks KernelSet) QuantizeActivation(wt Type, x []float32, dst []byte) {
	t := ks.table()
	switch VecDotType(wt) {
	case F16:
		t.rowF16(x, dst[:2*len(x)])
	case BF16:
		t.rowBF16(x, dst[:2*len(x)])
	default:
		QuantizeActivation(wt, x, dst)
	}
}

// bindRowConv sets the table's f16/bf16 row converters for CPU f.
func bindRowConv(t *kernelTable, f CPUFeatures) {
	type pair struct{ f16, bf16 func(x []float32, dst []byte) }
	p := choose(t, f, "f16/bf16 row conversion",
		impl[pair]{"avx2", needAVX2, pair{quantizeF16AVX2, quantizeBF16AVX2}},
		impl[pair]{"generic", 0, pair{quantizeF16, quantizeBF16}})
	t.rowF16, t.rowBF16 = p.f16, p.bf16
}
