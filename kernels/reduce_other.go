//go:build purego || !amd64

package kernels

// This file stands in for reduce_amd64.go where there is no assembly: the
// registry never selects head=avx512 there, so the twin only keeps the
// build whole.

func pickMaxSumAVX512(row []float32) (float32, int32, float64) { return pickMaxSumTwin(row) }
