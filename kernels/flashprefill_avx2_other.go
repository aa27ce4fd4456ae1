//go:build purego || !amd64

package kernels

// This file stands in for flashprefill_avx2_amd64.go where there is no
// assembly: CPU().HasAVX2() is false there, so these are never called.

func fpDot(x, y []float32) float64 { return FlashPrefillDot(x, y) }

func (f FlashPrefill) blockScoresAVX2(a []float64, q []float32, pooled []float32, d, L, qb int, sc *FlashPrefillScratch) {
	f.blockScoresGo(a, q, pooled, d, L, qb, sc)
}

func fpExpSum(s []float64, mx float64) float64 {
	sum := 0.0
	for _, x := range s {
		sum += FlashPrefillExp(x - mx)
	}
	return sum
}

func fpMax(mx float64, s []float64) float64 {
	for _, x := range s {
		mx = max(mx, x)
	}
	return mx
}

func fpMaxRun(mx float64, s []float64) float64 { return fpMax(mx, s) }
