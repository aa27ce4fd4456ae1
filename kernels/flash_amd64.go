//go:build !purego

package kernels

// This file binds ExpSum's and ScaleMax's vector paths to the softmax's assembly.

func expSumAVX512(s []float32, mx float32) float64 { return expSumVecAVX512(&s[0], len(s), mx) }

func scaleMaxAVX512(s []float32, scale float32) float32 {
	return scaleMaxVecAVX512(&s[0], len(s), scale)
}
