//go:build !purego

package kernels

// This file owns the Go declarations of the AVX-512 logit-row reductions
// in ops_amd64.s (the head=avx512 variant); their Go twins are in
// reduce.go.

//go:noescape
func pickMaxVecAVX512(row *float32, n int) (mx float32, argmax int)

//go:noescape
func pickSumVecAVX512(row *float32, n int, mx float32) float64

// pickMaxSumAVX512 is pickMaxSumTwin with the vector kernels; len(row) ≥ 1.
func pickMaxSumAVX512(row []float32) (float32, int32, float64) {
	mx, am := pickMaxVecAVX512(&row[0], len(row))
	return mx, int32(am), pickSumVecAVX512(&row[0], len(row), mx)
}
