//go:build purego || !amd64

package kernels

// This file stands in for the AVX2 float panel path (fpanel_avx2_amd64.s)
// in builds without assembly: the kernels run their twin, the repack
// declines and rounding goes through Go.

import "unsafe"

func fPanelAVX2x12(t *fpTile) { fPanelGo(t, 12) }
func fPanelAVX2x4(t *fpTile)  { fPanelGo(t, 4) }
func fPanelAVX2x1(t *fpTile)  { fPanelGo(t, 1) }

func repackFloatAVX2(*Matrix, int, []float32) bool { return false }

func roundActAVX2(wt Type, x, dst []float32) { roundActGo(wt, x, dst) }

func roundF16VecAVX2(x *float32, n int, dst *float32) {
	xs, ds := unsafe.Slice(x, n), unsafe.Slice(dst, n)
	for i, v := range xs {
		ds[i] = RoundF16(v)
	}
}

func roundBF16VecAVX2(x *float32, n int, dst *float32) {
	xs, ds := unsafe.Slice(x, n), unsafe.Slice(dst, n)
	for i, v := range xs {
		ds[i] = RoundBF16(v)
	}
}
