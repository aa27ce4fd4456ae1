//go:build !purego

package kernels

// This file owns the Go side of ops_avx2_amd64.s: the AVX2 (256-bit, FMA)
// elementwise and logit-row kernels, bit-identical to the Go twins of the
// AVX-512 ones (expGo, swigluTwin, softmaxTwin, expSumTwin, scaleMaxTwin,
// pickMaxSumTwin). Callers check CPU().HasAVX2() first.

import "math"

//go:noescape
func expVecAVX2(x *float32, n int, dst *float32)

//go:noescape
func swigluVecAVX2(gate, u *float32, n int)

//go:noescape
func scaleMaxVecAVX2(s *float32, n int, scale float32) float32

//go:noescape
func expSumVecAVX2(s *float32, n int, mx float32) float64

//go:noescape
func scaleVecAVX2(s *float32, n int, v float32)

//go:noescape
func pickMaxVecAVX2(row *float32, n int) (mx float32, argmax int)

//go:noescape
func pickSumVecAVX2(row *float32, n int, mx float32) float64

// expAVX2 sets dst[i] = expGo(x[i]) for i < len(x).
func expAVX2(x, dst []float32) {
	if len(x) > 0 {
		_ = dst[len(x)-1]
		expVecAVX2(&x[0], len(x), &dst[0])
	}
}

// swigluAVX2 is swigluTwin; len(u) ≥ len(g).
func swigluAVX2(g, u []float32) {
	if len(g) > 0 {
		_ = u[len(g)-1]
		swigluVecAVX2(&g[0], &u[0], len(g))
	}
}

// softmaxAVX2 is softmaxTwin on s[:valid]; valid ≥ 1.
func softmaxAVX2(s []float32, valid int, scale float32) {
	s = s[:valid]
	mx := scaleMaxVecAVX2(&s[0], valid, scale)
	sum := expSumVecAVX2(&s[0], valid, mx)
	scaleVecAVX2(&s[0], valid, float32(1/sum))
}

// expSumAVX2 is expSumTwin.
func expSumAVX2(s []float32, mx float32) float64 {
	if len(s) == 0 {
		return 0
	}
	return expSumVecAVX2(&s[0], len(s), mx)
}

// scaleMaxAVX2 is scaleMaxTwin.
func scaleMaxAVX2(s []float32, scale float32) float32 {
	if len(s) == 0 {
		return float32(math.Inf(-1))
	}
	return scaleMaxVecAVX2(&s[0], len(s), scale)
}

// pickMaxSumAVX2 is pickMaxSumTwin; len(row) ≥ 1.
func pickMaxSumAVX2(row []float32) (float32, int32, float64) {
	mx, am := pickMaxVecAVX2(&row[0], len(row))
	return mx, int32(am), pickSumVecAVX2(&row[0], len(row), mx)
}
