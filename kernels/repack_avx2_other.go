//go:build purego || !amd64

package kernels

// This file stands in for the AVX2 panel repacks (repack_avx2_amd64.s) in
// builds without assembly: repackAVX2 declines, so every panel goes
// through the Go repacks.

func repackAVX2(*Matrix, int, q8Format, []byte) bool { return false }
