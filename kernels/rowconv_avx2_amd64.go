//go:build !purego

package kernels

// This file owns the Go side of rowconv_avx2_amd64.s: f32 rows to f16 and
// bf16 bits, byte for byte quantizeF16 and quantizeBF16. Callers check
// CPU().HasAVX2() first.

import (
	"encoding/binary"
	"unsafe"
)

// f32ToF16VecAVX2 sets dst[i] = F32ToF16(x[i]) for i < n, n a multiple of
// 8 (VCVTPS2PH, round to nearest even; see roundF16VecAVX2 on NaNs).
//
//go:noescape
func f32ToF16VecAVX2(x *float32, n int, dst *uint16)

// f32ToBF16VecAVX2 sets dst[i] = F32ToBF16(x[i]) for i < n, n a multiple
// of 8.
//
//go:noescape
func f32ToBF16VecAVX2(x *float32, n int, dst *uint16)

// quantizeF16AVX2 is quantizeF16 (len(dst) ≥ 2·len(x)), the len(x)%8 last
// values in Go.
func quantizeF16AVX2(x []float32, dst []byte) {
	n := len(x) &^ 7
	if n > 0 {
		_ = dst[2*n-1]
		f32ToF16VecAVX2(&x[0], n, (*uint16)(unsafe.Pointer(&dst[0])))
	}
	for i := n; i < len(x); i++ {
		binary.LittleEndian.PutUint16(dst[2*i:], F32ToF16(x[i]))
	}
}

// quantizeBF16AVX2 is quantizeBF16 (len(dst) ≥ 2·len(x)).
func quantizeBF16AVX2(x []float32, dst []byte) {
	n := len(x) &^ 7
	if n > 0 {
		_ = dst[2*n-1]
		f32ToBF16VecAVX2(&x[0], n, (*uint16)(unsafe.Pointer(&dst[0])))
	}
	for i := n; i < len(x); i++ {
		binary.LittleEndian.PutUint16(dst[2*i:], F32ToBF16(x[i]))
	}
}
