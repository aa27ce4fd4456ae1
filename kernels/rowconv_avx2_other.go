//go:build purego || !amd64

package kernels

// This file stands in for rowconv_avx2_amd64.go where there is no
// assembly.

func quantizeF16AVX2(x []float32, dst []byte)  { quantizeF16(x, dst) }
func quantizeBF16AVX2(x []float32, dst []byte) { quantizeBF16(x, dst) }
