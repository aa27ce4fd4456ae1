//go:build !purego

package kernels

// This file binds ExpSum's and ScaleMax's vector paths to the softmax's assembly.

func expSumFast(s []float32, mx float32) float64 { return expSumAVX512(&s[0], len(s), mx) }

func scaleMaxFast(s []float32, scale float32) float32 { return scaleMaxAVX512(&s[0], len(s), scale) }
