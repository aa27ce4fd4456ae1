//go:build !purego

package kernels

// This file owns the Go side of the AVX2 panel repacks
// (repack_avx2_amd64.s): their declarations and repackAVX2, which the
// avx2 matmul variants call for every panel (variants.go sets it as the
// kernel's repack). Callers ensure AVX2, FMA and F16C (CPU().HasAVX2());
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
	rp, ok := avx2Repacks[w.Type]
	if !ok {
		return false
	}
	var x uint32
	switch {
	case rp.xor && f.signed:
	case rp.xor && f.bias == 128:
		x = 0x80808080
	case rp.xor || f.signed || rp.bias != 0 && f.bias != rp.bias:
		return false
	}
	rb := w.RowBytes()
	src := &w.Data[r0*rb : (r0+panelRows)*rb][0]
	_ = dst[nb*rp.block-1]
	rp.run(src, rb, nb, &dst[0], x)
	return true
}

// avx2Repack is one type's AVX2 repack: the panels it writes (block bytes
// per block or super-block), and which level formats it serves: xor ones
// take signed levels or bias 128 (x XORed into the level dwords), the
// others only their own bias (0: the type's layout has no choice).
type avx2Repack struct {
	run   func(src *byte, rb, nb int, dst *byte, x uint32)
	xor   bool
	bias  int32
	block int
}

var avx2Repacks = map[Type]avx2Repack{
	Q8_0:   {run: repackQ8_0AVX2, xor: true, block: q8PanelBlock},
	IQ4_NL: {run: repackIQ4_NLAVX2, xor: true, block: q8PanelBlock},
	Q4_0:   {run: noX(repackQ4_0AVX2), bias: 8, block: q8PanelBlock},
	Q5_0:   {run: noX(repackQ5_0AVX2), bias: 16, block: q8PanelBlock},
	MXFP4:  {run: noX(repackMXFP4AVX2), bias: 12, block: q8PanelBlock},
	Q4_1:   {run: noX(repackQ4_1AVX2), block: q8MinPanelBlock},
	Q5_1:   {run: noX(repackQ5_1AVX2), block: q8MinPanelBlock},
	Q2_K:   {run: noX(repackQ2_KAVX2), block: kLayoutMin16.bytes},
	Q3_K:   {run: noX(repackQ3_KAVX2), block: kLayoutCorr.bytes},
	Q4_K:   {run: noX(repackQ4_KAVX2), block: kLayoutMin32.bytes},
	Q5_K:   {run: noX(repackQ5_KAVX2), block: kLayoutMin32.bytes},
	Q6_K:   {run: noX(repackQ6_KAVX2), block: kLayoutCorr.bytes},
	IQ4_XS: {run: noX(repackIQ4_XSAVX2), block: kLayoutSgn32.bytes},
}

// noX adapts a repack without an XOR pattern to the table's signature.
func noX(f func(src *byte, rb, nb int, dst *byte)) func(src *byte, rb, nb int, dst *byte, x uint32) {
	return func(src *byte, rb, nb int, dst *byte, _ uint32) { f(src, rb, nb, dst) }
}
