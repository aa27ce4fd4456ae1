//go:build purego || !amd64

package kernels

// This file stands in for ExpSum's and ScaleMax's vector paths in builds without assembly.

func expSumAVX512(s []float32, mx float32) float64 { return expSumTwin(s, mx) }

func scaleMaxAVX512(s []float32, scale float32) float32 { return scaleMaxTwin(s, scale) }
