//go:build purego || !amd64

package kernels

// This file stands in for rope_avx2_amd64.go where there is no assembly.

func ropeAVX2(v []float32, hd int, cos, sin []float32, neox bool) { ropeGo(v, hd, cos, sin, neox) }
