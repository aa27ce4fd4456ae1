//go:build !purego

package kernels

// This file owns the Go side of the AVX2 panel repacks
// (repack_avx2_amd64.s): their declarations and repackAVX2, which the
// avx2 matmul variants call for every panel (variants.go sets it as the
// kernel's repack). Callers ensure AVX2, FMA and F16C (CPU().hasAVX2());
// the twins are repackQ8 and repackK (panel.go) and repackQ8Min
// (panel_min.go).

// The repacks write the panel of the 16 rows at src, rb bytes apart, nb
// blocks (super-blocks) each, into dst. x is XORed into every level dword
// (0x80808080 for bias 128, 0 for signed panels).
//
//go:noescape
func repackQ8_0AVX2(src *byte, rb, nb int, dst *byte, x uint32)

//go:noescape
func repackQ4_0AVX2(src *byte, rb, nb int, dst *byte)

//go:noescape
func repackQ4_KAVX2(src *byte, rb, nb int, dst *byte)

//go:noescape
func repackQ5_KAVX2(src *byte, rb, nb int, dst *byte)

//go:noescape
func repackQ6_KAVX2(src *byte, rb, nb int, dst *byte)

//go:noescape
func repackQ5_0AVX2(src *byte, rb, nb int, dst *byte)

// repackIQ4_NLAVX2 XORs x into the level dwords as repackQ8_0AVX2 does.
//
//go:noescape
func repackIQ4_NLAVX2(src *byte, rb, nb int, dst *byte, x uint32)

//go:noescape
func repackMXFP4AVX2(src *byte, rb, nb int, dst *byte)

//go:noescape
func repackQ4_1AVX2(src *byte, rb, nb int, dst *byte)

//go:noescape
func repackQ5_1AVX2(src *byte, rb, nb int, dst *byte)

//go:noescape
func repackQ2_KAVX2(src *byte, rb, nb int, dst *byte)

//go:noescape
func repackQ3_KAVX2(src *byte, rb, nb int, dst *byte)

//go:noescape
func repackIQ4_XSAVX2(src *byte, rb, nb int, dst *byte)

// repackAVX2 repacks a full panel (r0+16 ≤ w.Rows) of a Q8_0 or IQ4_NL
// (signed or bias 128), Q4_0 (bias 8), Q5_0 (bias 16), MXFP4 (bias 12), Q4_1 or Q5_1 (min panels), Q2_K, Q3_K, Q4_K,
// Q5_K, Q6_K or IQ4_XS matrix into dst, byte for byte as repackQ8,
// repackQ8Min and repackK; it reports false, doing nothing, for other
// panels, types and formats.
func repackAVX2(w *Matrix, r0 int, f q8Format, dst []byte) bool {
	if r0 < 0 || r0+panelRows > w.Rows || f.min != (w.Type == Q4_1 || w.Type == Q5_1) {
		return false
	}
	nb := w.Cols / w.Type.BlockSize()
	if nb == 0 {
		return false
	}
	rb := w.RowBytes()
	src := &w.Data[r0*rb : (r0+panelRows)*rb][0]
	switch w.Type {
	case Q8_0:
		var x uint32
		switch {
		case f.signed:
		case f.bias == 128:
			x = 0x80808080
		default:
			return false
		}
		_ = dst[nb*q8PanelBlock-1]
		repackQ8_0AVX2(src, rb, nb, &dst[0], x)
	case Q4_0:
		if f.signed || f.bias != 8 {
			return false
		}
		_ = dst[nb*q8PanelBlock-1]
		repackQ4_0AVX2(src, rb, nb, &dst[0])
	case Q4_K:
		_ = dst[nb*kLayoutMin32.bytes-1]
		repackQ4_KAVX2(src, rb, nb, &dst[0])
	case Q5_K:
		_ = dst[nb*kLayoutMin32.bytes-1]
		repackQ5_KAVX2(src, rb, nb, &dst[0])
	case Q6_K:
		_ = dst[nb*kLayoutCorr.bytes-1]
		repackQ6_KAVX2(src, rb, nb, &dst[0])
	case Q5_0:
		if f.signed || f.bias != 16 {
			return false
		}
		_ = dst[nb*q8PanelBlock-1]
		repackQ5_0AVX2(src, rb, nb, &dst[0])
	case IQ4_NL:
		var x uint32
		switch {
		case f.signed:
		case f.bias == 128:
			x = 0x80808080
		default:
			return false
		}
		_ = dst[nb*q8PanelBlock-1]
		repackIQ4_NLAVX2(src, rb, nb, &dst[0], x)
	case MXFP4:
		if f.signed || f.bias != 12 {
			return false
		}
		_ = dst[nb*q8PanelBlock-1]
		repackMXFP4AVX2(src, rb, nb, &dst[0])
	case Q4_1:
		_ = dst[nb*q8MinPanelBlock-1]
		repackQ4_1AVX2(src, rb, nb, &dst[0])
	case Q5_1:
		_ = dst[nb*q8MinPanelBlock-1]
		repackQ5_1AVX2(src, rb, nb, &dst[0])
	case Q2_K:
		_ = dst[nb*kLayoutMin16.bytes-1]
		repackQ2_KAVX2(src, rb, nb, &dst[0])
	case Q3_K:
		_ = dst[nb*kLayoutCorr.bytes-1]
		repackQ3_KAVX2(src, rb, nb, &dst[0])
	case IQ4_XS:
		_ = dst[nb*kLayoutSgn32.bytes-1]
		repackIQ4_XSAVX2(src, rb, nb, &dst[0])
	default:
		return false
	}
	return true
}
