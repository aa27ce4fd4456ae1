//go:build !purego

package kernels

// This file owns the Go side of rope_avx2_amd64.s, the AVX2 rotation, bit
// for bit ropeGo. Callers check CPU().HasAVX2() first.

// ropeNormVecAVX2 and ropeNeoxVecAVX2 run ropeGo on heads heads of hd
// floats at v with half pairs (1 ≤ half, 2·half ≤ hd) and the tables at
// cos and sin.
//
//go:noescape
func ropeNormVecAVX2(v *float32, heads, hd, half int, cos, sin *float32)

//go:noescape
func ropeNeoxVecAVX2(v *float32, heads, hd, half int, cos, sin *float32)

// ropeAVX2 is ropeGo.
func ropeAVX2(v []float32, hd int, cos, sin []float32, neox bool) {
	half, heads := len(cos), len(v)/hd
	if half == 0 || heads == 0 || 2*half > hd {
		return
	}
	_ = sin[half-1]
	if neox {
		ropeNeoxVecAVX2(&v[0], heads, hd, half, &cos[0], &sin[0])
	} else {
		ropeNormVecAVX2(&v[0], heads, hd, half, &cos[0], &sin[0])
	}
}
