//go:build !purego

package kernels

// This file owns the Go side of the AVX2 float panel path
// (fpanel_avx2_amd64.s): the kernel declarations, the panel repack and the
// activation rounding wrappers. Callers ensure AVX2, FMA and F16C
// (CPU().HasAVX2()); the twins are fPanelGo, repackFloat and roundActGo.

import (
	"encoding/binary"
	"math"
)

// fPanelAVX2x12, x4 and x1 compute fPanelGo(t, 12 / 4 / 1) bit for bit.
// Where two NaNs (or a NaN and ∞·0) meet in a chain, the one that comes
// out follows the hardware's operand order, as in the AVX-512 kernels;
// fPanelGo's choice there depends on how the compiler orders fma32.
//
//go:noescape
func fPanelAVX2x12(t *fpTile)

//go:noescape
func fPanelAVX2x4(t *fpTile)

//go:noescape
func fPanelAVX2x1(t *fpTile)

// The repackers write elements [0, n) (n a multiple of 8) of the 32 rows
// at src, rb bytes apart, into dst as a [n][32] float32 panel.
//
//go:noescape
func repackF32AVX2(src *byte, rb, n int, dst *float32)

//go:noescape
func repackF16AVX2(src *byte, rb, n int, dst *float32)

//go:noescape
func repackBF16AVX2(src *byte, rb, n int, dst *float32)

// roundF16VecAVX2 sets dst[i] = RoundF16(x[i]) for i < n, n a multiple of
// 8. F16C's conversion and F32ToF16 agree on every input, NaN included:
// both keep the sign and the top 9 payload bits and set the quiet bit,
// and both widen a binary16 NaN by shifting its payload up 13 bits.
//
//go:noescape
func roundF16VecAVX2(x *float32, n int, dst *float32)

// roundBF16VecAVX2 sets dst[i] = RoundBF16(x[i]) for i < n, n a multiple
// of 8.
//
//go:noescape
func roundBF16VecAVX2(x *float32, n int, dst *float32)

// repackFloatAVX2 is repackFloat for a full panel (r0+32 ≤ w.Rows) of an
// F32, F16 or BF16 matrix, the n%8 last elements done in Go; it reports
// false, doing nothing, for other panels and types.
func repackFloatAVX2(w *Matrix, r0 int, dst []float32) bool {
	if r0 < 0 || r0+fpRows > w.Rows {
		return false
	}
	switch w.Type {
	case F32, F16, BF16:
	default:
		return false
	}
	n, rb := w.Cols, w.RowBytes()
	dst = dst[:n*fpRows]
	data := w.Data[r0*rb : (r0+fpRows)*rb]
	if n8 := n &^ 7; n8 > 0 {
		switch w.Type {
		case F32:
			repackF32AVX2(&data[0], rb, n8, &dst[0])
		case F16:
			repackF16AVX2(&data[0], rb, n8, &dst[0])
		case BF16:
			repackBF16AVX2(&data[0], rb, n8, &dst[0])
		}
	}
	for e := n &^ 7; e < n; e++ {
		for r := range fpRows {
			row := data[r*rb:]
			var v float32
			switch w.Type {
			case F32:
				v = math.Float32frombits(binary.LittleEndian.Uint32(row[4*e:]))
			case F16:
				v = F16ToF32(binary.LittleEndian.Uint16(row[2*e:]))
			case BF16:
				v = BF16ToF32(binary.LittleEndian.Uint16(row[2*e:]))
			}
			dst[e*fpRows+r] = v
		}
	}
	return true
}

// roundActAVX2 is roundActGo with the rounding in AVX2 (the len(x)%8 last
// values in Go).
func roundActAVX2(wt Type, x, dst []float32) {
	n := len(x) &^ 7
	switch wt {
	case F16:
		if n > 0 {
			_ = dst[len(x)-1]
			roundF16VecAVX2(&x[0], n, &dst[0])
		}
		for i := n; i < len(x); i++ {
			dst[i] = RoundF16(x[i])
		}
	case BF16:
		if n > 0 {
			_ = dst[len(x)-1]
			roundBF16VecAVX2(&x[0], n, &dst[0])
		}
		for i := n; i < len(x); i++ {
			dst[i] = RoundBF16(x[i])
		}
	default:
		roundActGo(wt, x, dst)
	}
}
