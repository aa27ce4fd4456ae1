//go:build purego || !amd64

package kernels

// This file stands in for ops_avx2_amd64.go where there is no assembly:
// the AVX2 wrappers are their Go twins, so every build compiles.

func expAVX2(x, dst []float32) {
	for i, v := range x {
		dst[i] = expGo(v)
	}
}

func swigluAVX2(g, u []float32)                         { swigluTwin(g, u) }
func softmaxAVX2(s []float32, valid int, scale float32) { softmaxTwin(s, valid, scale) }
func expSumAVX2(s []float32, mx float32) float64        { return expSumTwin(s, mx) }
func scaleMaxAVX2(s []float32, scale float32) float32   { return scaleMaxTwin(s, scale) }
func pickMaxSumAVX2(row []float32) (float32, int32, float64) {
	return pickMaxSumTwin(row)
}
