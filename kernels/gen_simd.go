//go:build ignore

package main

// gen_simd writes simd_amd64.s, the assembly micro-kernels of the SIMD
// matmul paths, from the unrolling parameters below. Run it with
// `go generate ./kernels/` (see simd_amd64.go); it needs nothing beyond the
// standard library. Each kernel is described, with its Go twin, in
// panel.go; the layouts it reads are documented there.
//
// Register conventions (ABI0, every register is scratch except SP/BP):
// DI holds the tile argument, SI the weight panel, DX the offset into the
// activation rows, CX the loop count; R8..R13, AX, BX the activation row of
// token 0..7.

import (
	"bytes"
	"fmt"
	"log"
	"os"
)

var b bytes.Buffer

func p(format string, a ...any) { fmt.Fprintf(&b, "\t"+format+"\n", a...) }
func label(s string)            { fmt.Fprintf(&b, "%s:\n", s) }
func comment(s string)          { fmt.Fprintf(&b, "\n// %s\n", s) }

// tokReg is the general register holding token t's activation row.
var tokReg = [8]string{"R8", "R9", "R10", "R11", "R12", "R13", "AX", "BX"}

func loadTokens(nt int) {
	for t := range nt {
		p("MOVQ qTile_a+%d(DI), %s", 8*t, tokReg[t])
	}
}

// act is the address of byte off of token t's current activation block.
func act(off, t int) string { return fmt.Sprintf("%d(%s)(DX*1)", off, tokReg[t]) }

func header(name, doc string) {
	comment(doc)
	fmt.Fprintf(&b, "TEXT ·%s(SB), NOSPLIT, $0-8\n", name)
	p("MOVQ t+0(FP), DI")
	p("MOVQ qTile_w(DI), SI")
	p("MOVQ qTile_nb(DI), CX")
	p("XORQ DX, DX")
}

// storeZ writes the 16-float result of token t from zmm register z.
func storeZ(nt int, z func(t int) string) {
	for t := range nt {
		p("MOVQ qTile_out+%d(DI), R14", 8*t)
		p("VMOVUPS %s, (R14)", z(t))
	}
}

// q8VNNI: 32-element blocks, 16-row panel, 8 tokens (panel.go: q8PanelGo).
// Zt = integer block sums, Z(16+t) = float accumulators.
func q8VNNI() {
	const nt = 8
	header("q8PanelVNNI", "func q8PanelVNNI(t *qTile): Q8_0-activation × 32-block weights, AVX-512 VNNI, 16 rows × 8 tokens.")
	loadTokens(nt)
	for t := range nt {
		p("VPXORD Z%d, Z%d, Z%d", 16+t, 16+t, 16+t)
	}
	label("q8vnni_loop")
	for t := range nt {
		p("VPBROADCASTD %s, Z%d", act(36, t), t) // −bias·Σa
	}
	for k := range 8 {
		p("VMOVDQU32 %d(SI), Z24", 64*k)
		for t := range nt {
			p("VPDPBUSD.BCST %s, Z24, Z%d", act(4*k, t), t)
		}
	}
	p("VMOVUPS 512(SI), Z25")
	for t := range nt {
		p("VCVTDQ2PS Z%d, Z%d", t, t)
		p("VMULPS.BCST %s, Z25, Z26", act(32, t))
		p("VFMADD231PS Z26, Z%d, Z%d", t, 16+t)
	}
	p("ADDQ $576, SI")
	p("ADDQ $40, DX")
	p("DECQ CX")
	p("JNZ q8vnni_loop")
	storeZ(nt, func(t int) string { return fmt.Sprintf("Z%d", 16+t) })
	p("VZEROUPPER")
	p("RET")
}

// q8AVX2: the same on 256-bit vectors, the panel as two halves of 8 rows,
// 4 tokens. signed: weights are signed bytes and the sign trick keeps
// VPMADDUBSW's pair sums in range; otherwise they are unsigned levels ≤ 129.
// mins: the Q4_1/Q5_1 panels (panel_min.go: q8PanelGoMin), unsigned levels
// ≤ 31 with no correction, a 640-byte block whose m vector is added as
// acc = fma(m_w, s_a, acc) after each block's d term.
// Y0-3 sums, Y4-7 accumulators, Y8 weights, Y9 |weights| (mins: m), Y10
// ones (int16), Y11-12 temporaries, Y13 scales.
func q8AVX2(signed, mins bool) {
	const nt = 4
	name := "q8PanelAVX2"
	switch {
	case signed:
		name = "q8PanelAVX2s"
	case mins:
		name = "q8PanelAVX2m"
	}
	doc := fmt.Sprintf("func %s(t *qTile): Q8_0-activation × 32-block weights, AVX2 (signed=%v), 16 rows × 4 tokens.", name, signed)
	blk := 576
	if mins {
		doc = fmt.Sprintf("func %s(t *qTile): Q8_1-activation × Q4_1/Q5_1 min panels, AVX2, 16 rows × 4 tokens.", name)
		blk = 640
	}
	header(name, doc)
	loadTokens(nt)
	p("MOVQ SI, R12") // panel start and count, for the second half
	p("MOVQ CX, R14")
	p("MOVL $0x00010001, R13")
	p("VMOVD R13, X10")
	p("VPBROADCASTD X10, Y10")
	for h := range 2 {
		if h == 1 {
			p("LEAQ 32(R12), SI")
			p("MOVQ R14, CX")
			p("XORQ DX, DX")
		}
		for t := range nt {
			p("VPXOR Y%d, Y%d, Y%d", 4+t, 4+t, 4+t)
		}
		lp := fmt.Sprintf("%s_loop%d", name, h)
		label(lp)
		for t := range nt {
			if mins {
				p("VPXOR Y%d, Y%d, Y%d", t, t, t)
			} else {
				p("VPBROADCASTD %s, Y%d", act(36, t), t)
			}
		}
		for k := range 8 {
			p("VMOVDQU %d(SI), Y8", 64*k)
			if signed {
				p("VPABSB Y8, Y9")
			}
			for t := range nt {
				p("VPBROADCASTD %s, Y11", act(4*k, t))
				if signed {
					p("VPSIGNB Y8, Y11, Y11")
					p("VPMADDUBSW Y11, Y9, Y11")
				} else {
					p("VPMADDUBSW Y11, Y8, Y11")
				}
				p("VPMADDWD Y10, Y11, Y11")
				p("VPADDD Y11, Y%d, Y%d", t, t)
			}
		}
		p("VMOVUPS 512(SI), Y13")
		if mins {
			p("VMOVUPS 576(SI), Y9")
		}
		for t := range nt {
			p("VCVTDQ2PS Y%d, Y%d", t, t)
			p("VBROADCASTSS %s, Y12", act(32, t))
			p("VMULPS Y13, Y12, Y12")
			p("VFMADD231PS Y12, Y%d, Y%d", t, 4+t)
			if mins {
				p("VBROADCASTSS %s, Y12", act(36, t))
				p("VFMADD231PS Y12, Y9, Y%d", 4+t)
			}
		}
		p("ADDQ $%d, SI", blk)
		p("ADDQ $40, DX")
		p("DECQ CX")
		p("JNZ %s", lp)
		for t := range nt {
			p("MOVQ qTile_out+%d(DI), R13", 8*t)
			p("VMOVUPS Y%d, %d(R13)", 4+t, 32*h)
		}
	}
	p("VZEROUPPER")
	p("RET")
}

// kSpec describes a Q8_K super-block kernel family (panel.go).
type kSpec struct {
	name   string
	sb     int  // elements per scale sub-block: 16 or 32
	corr   bool // integer correction −(Σ pair·bsum)<<shift (Q6_K) instead of a dmin term (Q4_K)
	signed bool // signed levels (IQ4_XS) through the sign trick: no pairs, no dmin (kAVX2, with words)
	words  bool // int16 (scale, scale) pairs, multiplied in by VPMADDWD (kAVX2 only)
	panel  int  // panel bytes per super-block
	scOff  int  // int32 scale vectors
	prOff  int  // int16 pair vectors (mins, or scales for the correction)
	dOff   int  // 16 f32 d
	dmOff  int  // 16 f32 dmin (min kernels)
	actLen int  // activation bytes per super-block (Q8_K: 292)
}

// kVNNI: Z0-7 integer sums, Z8-15 sub-block sums / pair sums, Z16-23 float
// accumulators, Z24 weights, Z25 scales, Z26-27 d/dmin, Z28-29 temporaries,
// Z30 shift count (correction kernels).
func kVNNI(s kSpec) {
	const nt = 8
	header(s.name, fmt.Sprintf("func %s(t *qTile): Q8_K-activation × super-block weights (sub-blocks of %d, correction=%v), AVX-512 VNNI, 16 rows × 8 tokens.", s.name, s.sb, s.corr))
	loadTokens(nt)
	if s.corr {
		p("MOVQ qTile_shift(DI), R14")
		p("VMOVQ R14, X30")
	}
	for t := range nt {
		p("VPXORD Z%d, Z%d, Z%d", 16+t, 16+t, 16+t)
	}
	lp := s.name + "_loop"
	label(lp)
	for t := range nt {
		p("VPXORD Z%d, Z%d, Z%d", t, t, t)
	}
	nsub := 256 / s.sb
	kPer := s.sb / 4
	for j := range nsub {
		for t := range nt {
			p("VPXORD Z%d, Z%d, Z%d", 8+t, 8+t, 8+t)
		}
		for k := range kPer {
			p("VMOVDQU32 %d(SI), Z24", 64*(j*kPer+k))
			for t := range nt {
				p("VPDPBUSD.BCST %s, Z24, Z%d", act(4+s.sb*j+4*k, t), 8+t)
			}
		}
		p("VMOVDQU32 %d(SI), Z25", s.scOff+64*j)
		for t := range nt {
			p("VPMULLD Z25, Z%d, Z%d", 8+t, 8+t)
			p("VPADDD Z%d, Z%d, Z%d", 8+t, t, t)
		}
	}
	for t := range nt {
		p("VPXORD Z%d, Z%d, Z%d", 8+t, 8+t, 8+t)
	}
	for q := range 8 {
		p("VMOVDQU32 %d(SI), Z25", s.prOff+64*q)
		for t := range nt {
			p("VPDPWSSD.BCST %s, Z25, Z%d", act(260+4*q, t), 8+t)
		}
	}
	p("VMOVUPS %d(SI), Z26", s.dOff)
	if s.corr {
		for t := range nt {
			p("VPSLLD X30, Z%d, Z%d", 8+t, 8+t)
			p("VPSUBD Z%d, Z%d, Z%d", 8+t, t, t)
			p("VCVTDQ2PS Z%d, Z%d", t, t)
			p("VMULPS.BCST %s, Z26, Z28", act(0, t))
			p("VFMADD231PS Z28, Z%d, Z%d", t, 16+t)
		}
	} else {
		p("VMOVUPS %d(SI), Z27", s.dmOff)
		for t := range nt {
			p("VBROADCASTSS %s, Z29", act(0, t))
			p("VMULPS Z26, Z29, Z28")
			p("VCVTDQ2PS Z%d, Z%d", t, t)
			p("VFMADD231PS Z28, Z%d, Z%d", t, 16+t)
			p("VMULPS Z27, Z29, Z28")
			p("VCVTDQ2PS Z%d, Z%d", 8+t, 8+t)
			p("VFNMADD231PS Z28, Z%d, Z%d", 8+t, 16+t)
		}
	}
	p("ADDQ $%d, SI", s.panel)
	p("ADDQ $%d, DX", s.actLen)
	p("DECQ CX")
	p("JNZ %s", lp)
	storeZ(nt, func(t int) string { return fmt.Sprintf("Z%d", 16+t) })
	p("VZEROUPPER")
	p("RET")
}

// kAVX2: the super-block kernels on 256-bit vectors, two halves of 8 rows,
// 4 tokens. Y0-3 integer sums, Y4-7 sub-block / pair sums, Y8-11 float
// accumulators, Y12 weights, Y13 temporary, Y14 ones (int16), Y15
// temporary (X15 also carries the shift count once the sums are done;
// signed kernels keep |weights| in it, as q8AVX2 does in Y9). Word
// kernels multiply by (scale, scale) int16 pairs with VPMADDWD in place of
// VPMADDWD by ones and VPMULLD: unsigned ones (levels ≤ 7) add a
// sub-block's VPMADDUBSW pairs as int16 first (at most 4·2·7·128 in
// magnitude), signed ones (pairs up to 2·127·127) scale each VPMADDUBSW
// result, with the scale vector in Y4.
func kAVX2(s kSpec) {
	const nt = 4
	name := s.name
	doc := fmt.Sprintf("func %s(t *qTile): Q8_K-activation × super-block weights (sub-blocks of %d, correction=%v), AVX2, 16 rows × 4 tokens.", name, s.sb, s.corr)
	if s.signed {
		doc = fmt.Sprintf("func %s(t *qTile): Q8_K-activation × super-block weights (sub-blocks of %d, signed levels), AVX2, 16 rows × 4 tokens.", name, s.sb)
	}
	header(name, doc)
	loadTokens(nt)
	p("MOVQ SI, R12")
	p("MOVQ CX, R14")
	p("MOVL $0x00010001, R13")
	p("VMOVD R13, X14")
	p("VPBROADCASTD X14, Y14")
	nsub := 256 / s.sb
	kPer := s.sb / 4
	for h := range 2 {
		if h == 1 {
			p("LEAQ 32(R12), SI")
			p("MOVQ R14, CX")
			p("XORQ DX, DX")
		}
		for t := range nt {
			p("VPXOR Y%d, Y%d, Y%d", 8+t, 8+t, 8+t)
		}
		lp := fmt.Sprintf("%s_loop%d", name, h)
		label(lp)
		for t := range nt {
			p("VPXOR Y%d, Y%d, Y%d", t, t, t)
		}
		for j := range nsub {
			kAVX2SubBlock(s, j, kPer, nt)
		}
		if !s.signed {
			kAVX2Pairs(s, nt)
		}
		kAVX2Scale(s, nt)
		p("ADDQ $%d, SI", s.panel)
		p("ADDQ $%d, DX", s.actLen)
		p("DECQ CX")
		p("JNZ %s", lp)
		for t := range nt {
			p("MOVQ qTile_out+%d(DI), R13", 8*t)
			p("VMOVUPS Y%d, %d(R13)", 8+t, 32*h)
		}
	}
	p("VZEROUPPER")
	p("RET")
}

// kAVX2SubBlock sums sub-block j of a super-block into Y0..Y3 (one
// integer sum per token): signed levels, word scales, or VPMADDWD by ones
// and VPMULLD by the scales.
func kAVX2SubBlock(s kSpec, j, kPer, nt int) {
	if s.signed {
		p("VMOVDQU %d(SI), Y4", s.scOff+64*j)
		for k := range kPer {
			p("VMOVDQU %d(SI), Y12", 64*(j*kPer+k))
			p("VPABSB Y12, Y15")
			for t := range nt {
				p("VPBROADCASTD %s, Y13", act(4+s.sb*j+4*k, t))
				p("VPSIGNB Y12, Y13, Y13")
				p("VPMADDUBSW Y13, Y15, Y13")
				p("VPMADDWD Y4, Y13, Y13")
				p("VPADDD Y13, Y%d, Y%d", t, t)
			}
		}
		return
	}
	if s.words {
		for k := range kPer {
			p("VMOVDQU %d(SI), Y12", 64*(j*kPer+k))
			for t := range nt {
				if k == 0 {
					p("VPBROADCASTD %s, Y%d", act(4+s.sb*j+4*k, t), 4+t)
					p("VPMADDUBSW Y%d, Y12, Y%d", 4+t, 4+t)
					continue
				}
				p("VPBROADCASTD %s, Y13", act(4+s.sb*j+4*k, t))
				p("VPMADDUBSW Y13, Y12, Y13")
				p("VPADDW Y13, Y%d, Y%d", 4+t, 4+t)
			}
		}
		for t := range nt {
			p("VPMADDWD %d(SI), Y%d, Y%d", s.scOff+64*j, 4+t, 4+t)
			p("VPADDD Y%d, Y%d, Y%d", 4+t, t, t)
		}
		return
	}
	for t := range nt {
		p("VPXOR Y%d, Y%d, Y%d", 4+t, 4+t, 4+t)
	}
	for k := range kPer {
		p("VMOVDQU %d(SI), Y12", 64*(j*kPer+k))
		for t := range nt {
			p("VPBROADCASTD %s, Y13", act(4+s.sb*j+4*k, t))
			p("VPMADDUBSW Y13, Y12, Y13")
			p("VPMADDWD Y14, Y13, Y13")
			p("VPADDD Y13, Y%d, Y%d", 4+t, 4+t)
		}
	}
	for t := range nt {
		p("VPMULLD %d(SI), Y%d, Y%d", s.scOff+64*j, 4+t, 4+t)
		p("VPADDD Y%d, Y%d, Y%d", 4+t, t, t)
	}
}

// kAVX2Pairs sums the super-block's min pairs into Y4..Y7 (unsigned
// kernels).
func kAVX2Pairs(s kSpec, nt int) {
	for t := range nt {
		p("VPXOR Y%d, Y%d, Y%d", 4+t, 4+t, 4+t)
	}
	for q := range 8 {
		p("VMOVDQU %d(SI), Y12", s.prOff+64*q)
		for t := range nt {
			p("VPBROADCASTD %s, Y13", act(260+4*q, t))
			p("VPMADDWD Y13, Y12, Y13")
			p("VPADDD Y13, Y%d, Y%d", 4+t, 4+t)
		}
	}
}

// kAVX2Scale turns the integer sums into floats and accumulates them,
// scaled by d (and, with correction or min, by the shift or dmin), into
// Y8..Y11.
func kAVX2Scale(s kSpec, nt int) {
	switch {
	case s.signed:
		for t := range nt {
			p("VCVTDQ2PS Y%d, Y%d", t, t)
			p("VBROADCASTSS %s, Y13", act(0, t))
			p("VMULPS %d(SI), Y13, Y13", s.dOff)
			p("VFMADD231PS Y13, Y%d, Y%d", t, 8+t)
		}
	case s.corr:
		p("MOVQ qTile_shift(DI), R13")
		p("VMOVQ R13, X15")
		for t := range nt {
			p("VPSLLD X15, Y%d, Y%d", 4+t, 4+t)
			p("VPSUBD Y%d, Y%d, Y%d", 4+t, t, t)
			p("VCVTDQ2PS Y%d, Y%d", t, t)
			p("VBROADCASTSS %s, Y13", act(0, t))
			p("VMULPS %d(SI), Y13, Y13", s.dOff)
			p("VFMADD231PS Y13, Y%d, Y%d", t, 8+t)
		}
	default:
		for t := range nt {
			p("VBROADCASTSS %s, Y15", act(0, t))
			p("VMULPS %d(SI), Y15, Y13", s.dOff)
			p("VCVTDQ2PS Y%d, Y%d", t, t)
			p("VFMADD231PS Y13, Y%d, Y%d", t, 8+t)
			p("VMULPS %d(SI), Y15, Y13", s.dmOff)
			p("VCVTDQ2PS Y%d, Y%d", 4+t, 4+t)
			p("VFNMADD231PS Y13, Y%d, Y%d", 4+t, 8+t)
		}
	}
}

// q8AVX512Min: the Q4_1/Q5_1 min panels (q8PanelGoMin) on 512-bit
// vectors, 16 rows × 8 tokens, with AVX-512 BW only: unsigned levels ≤ 31
// against Q8_1 activations by VPMADDUBSW (pairs ≤ 2·31·127) and VPMADDWD
// by ones, as q8AVX2 does, then acc = fma(d_w·d_a, isum, acc) and
// acc = fma(m_w, s_a, acc). Z0-7 sums, Z16-23 accumulators, Z24 weights,
// Z25 and Z28 temporaries, Z26 ones (int16), Z27 m, Z29 d.
func q8AVX512Min() {
	const nt = 8
	header("q8PanelAVX512m", "func q8PanelAVX512m(t *qTile): Q8_1-activation × Q4_1/Q5_1 min panels, AVX-512 BW, 16 rows × 8 tokens.")
	loadTokens(nt)
	p("MOVL $0x00010001, R14")
	p("VPBROADCASTD R14, Z26")
	for t := range nt {
		p("VPXORD Z%d, Z%d, Z%d", 16+t, 16+t, 16+t)
	}
	label("q8avx512m_loop")
	for t := range nt {
		p("VPXORD Z%d, Z%d, Z%d", t, t, t)
	}
	for k := range 8 {
		p("VMOVDQU32 %d(SI), Z24", 64*k)
		for t := range nt {
			p("VPBROADCASTD %s, Z25", act(4*k, t))
			p("VPMADDUBSW Z25, Z24, Z25")
			p("VPMADDWD Z26, Z25, Z25")
			p("VPADDD Z25, Z%d, Z%d", t, t)
		}
	}
	p("VMOVUPS 512(SI), Z29")
	p("VMOVUPS 576(SI), Z27")
	for t := range nt {
		p("VCVTDQ2PS Z%d, Z%d", t, t)
		p("VMULPS.BCST %s, Z29, Z28", act(32, t))
		p("VFMADD231PS Z28, Z%d, Z%d", t, 16+t)
		p("VFMADD231PS.BCST %s, Z27, Z%d", act(36, t), 16+t)
	}
	p("ADDQ $640, SI")
	p("ADDQ $40, DX")
	p("DECQ CX")
	p("JNZ q8avx512m_loop")
	storeZ(nt, func(t int) string { return fmt.Sprintf("Z%d", 16+t) })
	p("VZEROUPPER")
	p("RET")
}

// kAVX512w: the word kernels of kAVX2 (Q2_K, Q3_K, IQ4_XS panels) on
// 512-bit vectors, all 16 rows in one register, 8 tokens; the same integer
// sums and the same float operations per row, so the same bits. VPSIGNB
// has no 512-bit form: signed kernels negate the broadcast activations
// under the weights' sign mask (K1) instead, which is VPSIGNB where the
// weight is nonzero (where it is zero, |weight| is too).
// Z0-7 integer sums, Z8-15 sub-block / pair sums, Z16-23 float
// accumulators, Z24 weights, Z25 temporary, Z26 ones (int16), Z27
// |weights|, Z28 scales (signed) or temporary, Z29 temporary, X30 shift
// count, Z31 zero.
func kAVX512w(s kSpec) {
	const nt = 8
	doc := fmt.Sprintf("func %s(t *qTile): Q8_K-activation × super-block weights (sub-blocks of %d, correction=%v), AVX-512 BW, 16 rows × 8 tokens.", s.name, s.sb, s.corr)
	if s.signed {
		doc = fmt.Sprintf("func %s(t *qTile): Q8_K-activation × super-block weights (sub-blocks of %d, signed levels), AVX-512 BW, 16 rows × 8 tokens.", s.name, s.sb)
	}
	header(s.name, doc)
	loadTokens(nt)
	p("MOVL $0x00010001, R14")
	p("VPBROADCASTD R14, Z26")
	p("VPXORD Z31, Z31, Z31")
	if s.corr {
		p("MOVQ qTile_shift(DI), R14")
		p("VMOVQ R14, X30")
	}
	for t := range nt {
		p("VPXORD Z%d, Z%d, Z%d", 16+t, 16+t, 16+t)
	}
	lp := s.name + "_loop"
	label(lp)
	for t := range nt {
		p("VPXORD Z%d, Z%d, Z%d", t, t, t)
	}
	nsub := 256 / s.sb
	kPer := s.sb / 4
	for j := range nsub {
		if s.signed {
			p("VMOVDQU32 %d(SI), Z28", s.scOff+64*j)
			for k := range kPer {
				p("VMOVDQU32 %d(SI), Z24", 64*(j*kPer+k))
				p("VPABSB Z24, Z27")
				p("VPMOVB2M Z24, K1")
				for t := range nt {
					p("VPBROADCASTD %s, Z25", act(4+s.sb*j+4*k, t))
					p("VPSUBB Z25, Z31, K1, Z25")
					p("VPMADDUBSW Z25, Z27, Z25")
					p("VPMADDWD Z28, Z25, Z25")
					p("VPADDD Z25, Z%d, Z%d", t, t)
				}
			}
			continue
		}
		for k := range kPer {
			p("VMOVDQU32 %d(SI), Z24", 64*(j*kPer+k))
			for t := range nt {
				if k == 0 {
					p("VPBROADCASTD %s, Z%d", act(4+s.sb*j+4*k, t), 8+t)
					p("VPMADDUBSW Z%d, Z24, Z%d", 8+t, 8+t)
					continue
				}
				p("VPBROADCASTD %s, Z25", act(4+s.sb*j+4*k, t))
				p("VPMADDUBSW Z25, Z24, Z25")
				p("VPADDW Z25, Z%d, Z%d", 8+t, 8+t)
			}
		}
		p("VMOVDQU32 %d(SI), Z28", s.scOff+64*j)
		for t := range nt {
			p("VPMADDWD Z28, Z%d, Z%d", 8+t, 8+t)
			p("VPADDD Z%d, Z%d, Z%d", 8+t, t, t)
		}
	}
	if !s.signed {
		for t := range nt {
			p("VPXORD Z%d, Z%d, Z%d", 8+t, 8+t, 8+t)
		}
		for q := range 8 {
			p("VMOVDQU32 %d(SI), Z24", s.prOff+64*q)
			for t := range nt {
				p("VPBROADCASTD %s, Z25", act(260+4*q, t))
				p("VPMADDWD Z25, Z24, Z25")
				p("VPADDD Z25, Z%d, Z%d", 8+t, 8+t)
			}
		}
	}
	p("VMOVUPS %d(SI), Z28", s.dOff)
	switch {
	case s.signed:
		for t := range nt {
			p("VCVTDQ2PS Z%d, Z%d", t, t)
			p("VMULPS.BCST %s, Z28, Z29", act(0, t))
			p("VFMADD231PS Z29, Z%d, Z%d", t, 16+t)
		}
	case s.corr:
		for t := range nt {
			p("VPSLLD X30, Z%d, Z%d", 8+t, 8+t)
			p("VPSUBD Z%d, Z%d, Z%d", 8+t, t, t)
			p("VCVTDQ2PS Z%d, Z%d", t, t)
			p("VMULPS.BCST %s, Z28, Z29", act(0, t))
			p("VFMADD231PS Z29, Z%d, Z%d", t, 16+t)
		}
	default:
		p("VMOVUPS %d(SI), Z27", s.dmOff)
		for t := range nt {
			p("VMULPS.BCST %s, Z28, Z29", act(0, t))
			p("VCVTDQ2PS Z%d, Z%d", t, t)
			p("VFMADD231PS Z29, Z%d, Z%d", t, 16+t)
			p("VMULPS.BCST %s, Z27, Z29", act(0, t))
			p("VCVTDQ2PS Z%d, Z%d", 8+t, 8+t)
			p("VFNMADD231PS Z29, Z%d, Z%d", 8+t, 16+t)
		}
	}
	p("ADDQ $%d, SI", s.panel)
	p("ADDQ $%d, DX", s.actLen)
	p("DECQ CX")
	p("JNZ %s", lp)
	storeZ(nt, func(t int) string { return fmt.Sprintf("Z%d", 16+t) })
	p("VZEROUPPER")
	p("RET")
}

// ---- Panel repacking (AVX-512 gathers) ----
//
// func name(src *byte, idx *[16]int32, nb int, dst *byte, x uint32)
// src is block 0 of the panel's first row, idx the 16 row offsets from it;
// each VPGATHERDD collects one dword of the same block of all 16 rows, which
// is exactly one panel vector. Z31 holds idx; Z24-Z30 constants.

func rpHeader(name, doc string) {
	comment(doc)
	fmt.Fprintf(&b, "TEXT ·%s(SB), NOSPLIT, $0-36\n", name)
	p("MOVQ src+0(FP), SI")
	p("MOVQ idx+8(FP), AX")
	p("VMOVDQU32 (AX), Z31")
	p("MOVQ nb+16(FP), CX")
	p("MOVQ dst+24(FP), DI")
}

func bcast(v uint32, z string) {
	p("MOVL $0x%08x, AX", v)
	p("VPBROADCASTD AX, %s", z)
}

func gather(off int, z string) {
	p("KXNORW K1, K1, K1")
	p("VPGATHERDD %d(SI)(Z31*1), K1, %s", off, z)
}

func rpFooter(name string, blk, panel int) {
	p("ADDQ $%d, SI", blk)
	p("ADDQ $%d, DI", panel)
	p("DECQ CX")
	p("JNZ %s_loop", name)
	p("VZEROUPPER")
	p("RET")
}

// f16Store converts the low halves of z's dwords (f16) to 16 floats at off(DI).
func f16Store(z, tmpY, tmpZ string, off int) {
	p("VPMOVDW %s, %s", z, tmpY)
	p("VCVTPH2PS %s, %s", tmpY, tmpZ)
	p("VMOVUPS %s, %d(DI)", tmpZ, off)
}

func rpQ8_0() {
	name := "repackQ8_0AVX512"
	rpHeader(name, "func repackQ8_0AVX512(src *byte, idx *[16]int32, nb int, dst *byte, x uint32): Q8_0 rows to a q8Panel, levels XOR x.")
	p("MOVL x+32(FP), AX")
	p("VPBROADCASTD AX, Z30")
	label(name + "_loop")
	for k := range 8 {
		gather(2+4*k, fmt.Sprintf("Z%d", k))
		p("VPXORD Z30, Z%d, Z%d", k, k)
		p("VMOVDQU32 Z%d, %d(DI)", k, 64*k)
	}
	gather(0, "Z8")
	f16Store("Z8", "Y9", "Z9", 512)
	rpFooter(name, 34, 576)
}

func rpQ4_0() {
	name := "repackQ4_0AVX512"
	rpHeader(name, "func repackQ4_0AVX512(src *byte, idx *[16]int32, nb int, dst *byte, x uint32): Q4_0 rows to a q8Panel (levels are the nibbles, bias 8; x unused).")
	bcast(0x0f0f0f0f, "Z29")
	label(name + "_loop")
	for k := range 4 {
		gather(2+4*k, "Z0")
		p("VPANDD Z29, Z0, Z1")
		p("VMOVDQU32 Z1, %d(DI)", 64*k)
		p("VPSRLD $4, Z0, Z2")
		p("VPANDD Z29, Z2, Z2")
		p("VMOVDQU32 Z2, %d(DI)", 64*(k+4))
	}
	gather(0, "Z8")
	f16Store("Z8", "Y9", "Z9", 512)
	rpFooter(name, 18, 576)
}

// rpQ45K: Q4_K (q5=false) or Q5_K rows to the kLayoutMin32 panel.
func rpQ45K(q5 bool) {
	name, blk, qsOff := "repackQ4_KAVX512", 144, 16
	if q5 {
		name, blk, qsOff = "repackQ5_KAVX512", 176, 48
	}
	rpHeader(name, fmt.Sprintf("func %s(src *byte, idx *[16]int32, nb int, dst *byte, x uint32): rows to a kLayoutMin32 panel (x unused).", name))
	const scOff, prOff, dOff, dmOff, panel = 4096, 4608, 5120, 5184, 5248
	bcast(0x0f0f0f0f, "Z29")
	bcast(63, "Z28")
	bcast(0xf, "Z27")
	bcast(3, "Z26")
	bcast(0x01010101, "Z25")
	label(name + "_loop")
	if q5 {
		for k := range 8 {
			gather(16+4*k, fmt.Sprintf("Z%d", 16+k))
		}
	}
	for c := range 4 {
		for k := range 8 {
			gather(qsOff+32*c+4*k, "Z0")
			p("VPANDD Z29, Z0, Z1")
			p("VPSRLD $4, Z0, Z2")
			p("VPANDD Z29, Z2, Z2")
			if q5 {
				for i, z := range []string{"Z1", "Z2"} {
					p("VPSRLD $%d, Z%d, Z3", 2*c+i, 16+k)
					p("VPANDD Z25, Z3, Z3")
					p("VPSLLD $4, Z3, Z3")
					p("VPORD Z3, %s, %s", z, z)
				}
			}
			p("VMOVDQU32 Z1, %d(DI)", 64*(16*c+k))
			p("VMOVDQU32 Z2, %d(DI)", 64*(16*c+8+k))
		}
	}
	gather(4, "Z4")  // scales bytes 0-3
	gather(8, "Z5")  // 4-7
	gather(12, "Z6") // 8-11
	gather(0, "Z7")  // d, dmin
	pairStore := func(z string, off int) {
		p("VPSLLD $16, %s, Z10", z)
		p("VPORD Z10, %s, %s", z, z)
		p("VMOVDQU32 %s, %d(DI)", z, off)
	}
	for j := range 4 {
		p("VPSRLD $%d, Z4, Z8", 8*j)
		p("VPANDD Z28, Z8, Z8")
		p("VMOVDQU32 Z8, %d(DI)", scOff+64*j)
		p("VPSRLD $%d, Z5, Z9", 8*j)
		p("VPANDD Z28, Z9, Z9")
		pairStore("Z9", prOff+64*j)
	}
	for j := range 4 {
		p("VPSRLD $%d, Z6, Z8", 8*j)
		p("VPANDD Z27, Z8, Z8")
		p("VPSRLD $%d, Z4, Z9", 8*j+6)
		p("VPANDD Z26, Z9, Z9")
		p("VPSLLD $4, Z9, Z9")
		p("VPORD Z9, Z8, Z8")
		p("VMOVDQU32 Z8, %d(DI)", scOff+64*(4+j))
		p("VPSRLD $%d, Z6, Z8", 8*j+4)
		p("VPANDD Z27, Z8, Z8")
		p("VPSRLD $%d, Z5, Z9", 8*j+6)
		p("VPANDD Z26, Z9, Z9")
		p("VPSLLD $4, Z9, Z9")
		p("VPORD Z9, Z8, Z8")
		pairStore("Z8", prOff+64*(4+j))
	}
	f16Store("Z7", "Y8", "Z8", dOff)
	p("VPSRLD $16, Z7, Z9")
	f16Store("Z9", "Y9", "Z9", dmOff)
	rpFooter(name, blk, panel)
}

// rpQ6K: Q6_K rows to the kLayoutCorr panel.
func rpQ6K() {
	name := "repackQ6_KAVX512"
	rpHeader(name, "func repackQ6_KAVX512(src *byte, idx *[16]int32, nb int, dst *byte, x uint32): Q6_K rows to a kLayoutCorr panel (x unused).")
	const scOff, prOff, dOff, panel = 4096, 5120, 5632, 5696
	bcast(0x0f0f0f0f, "Z29")
	bcast(0x03030303, "Z25")
	bcast(0x0000ffff, "Z24")
	bcast(0xffff0000, "Z23")
	label(name + "_loop")
	for n := range 2 {
		for q := range 8 {
			l := 4 * q
			gather(64*n+l, "Z0")
			gather(64*n+32+l, "Z1")
			gather(128+32*n+l, "Z2")
			for m := range 4 {
				src := "Z0"
				if m%2 == 1 {
					src = "Z1"
				}
				p("VPSRLD $%d, %s, Z3", 4*(m/2), src)
				p("VPANDD Z29, Z3, Z3")
				p("VPSRLD $%d, Z2, Z4", 2*m)
				p("VPANDD Z25, Z4, Z4")
				p("VPSLLD $4, Z4, Z4")
				p("VPORD Z4, Z3, Z3")
				p("VMOVDQU32 Z3, %d(DI)", 64*(32*n+8*m+q))
			}
		}
	}
	for g := range 4 {
		gather(192+4*g, "Z8")
		for i := range 4 {
			p("VPSLLD $%d, Z8, Z3", 24-8*i)
			p("VPSRAD $24, Z3, Z3")
			p("VMOVDQU32 Z3, %d(DI)", scOff+64*(4*g+i))
		}
		p("VPSLLW $8, Z8, Z4")
		p("VPSRAW $8, Z4, Z4") // words: sext(b0), sext(b2)
		p("VPSRAW $8, Z8, Z5") // words: sext(b1), sext(b3)
		p("VPANDD Z24, Z4, Z6")
		p("VPSLLD $16, Z5, Z7")
		p("VPORD Z7, Z6, Z6")
		p("VMOVDQU32 Z6, %d(DI)", prOff+64*(2*g))
		p("VPSRLD $16, Z4, Z6")
		p("VPANDD Z23, Z5, Z7")
		p("VPORD Z7, Z6, Z6")
		p("VMOVDQU32 Z6, %d(DI)", prOff+64*(2*g+1))
	}
	gather(206, "Z7")
	p("VPSRLD $16, Z7, Z7")
	f16Store("Z7", "Y8", "Z8", dOff)
	rpFooter(name, 210, panel)
}

// ---- Float panels (outer product) ----
//
// func fPanelAVX512(t *fpTile): a 32-row float panel ([K][32] float32, two
// vectors per element) against 12 activation rows at a fixed stride; Z0-Z23
// accumulate token t's rows 0-15 and 16-31 in Z(2t) and Z(2t+1). The twelve
// rows are reached from four bases and one stride register: t = b + s·S
// with scales 1, 2, 4, 8.

// fpAddr is the address of token t's current element.
func fpAddr(t int) string {
	return [12]string{"(R8)", "(R8)(R12*1)", "(R8)(R12*2)", "(R9)", "(R8)(R12*4)", "(R9)(R12*2)",
		"(R10)", "(R9)(R12*4)", "(R8)(R12*8)", "(R11)", "(R10)(R12*4)", "(R9)(R12*8)"}[t]
}

// fPanel emits the kernel for nt tokens (12, 4 or 1); every width does the
// same chain of fused multiply-adds per output, so results do not depend on
// how tokens are grouped.
func fPanel(nt int) {
	name := fmt.Sprintf("fPanelAVX512x%d", nt)
	comment(fmt.Sprintf("func %s(t *fpTile): float panel of 32 rows × %d tokens, AVX-512, one element a step.", name, nt))
	fmt.Fprintf(&b, "TEXT ·%s(SB), NOSPLIT, $0-8\n", name)
	p("MOVQ t+0(FP), DI")
	p("MOVQ fpTile_w(DI), SI")
	p("MOVQ fpTile_a(DI), R8")
	p("MOVQ fpTile_stride(DI), R12")
	p("LEAQ (R8)(R12*2), R9")
	p("ADDQ R12, R9") // token 3
	p("LEAQ (R9)(R12*2), R10")
	p("ADDQ R12, R10") // token 6
	p("LEAQ (R10)(R12*2), R11")
	p("ADDQ R12, R11") // token 9
	p("MOVQ fpTile_n(DI), CX")
	for i := range 2 * nt {
		p("VPXORD Z%d, Z%d, Z%d", i, i, i)
	}
	p("TESTQ CX, CX")
	p("JZ %s_store", name)
	label(name + "_loop")
	p("VMOVUPS (SI), Z24")
	p("VMOVUPS 64(SI), Z25")
	for t := range nt {
		bz := 26 + t%2
		p("VBROADCASTSS %s, Z%d", fpAddr(t), bz)
		p("VFMADD231PS Z%d, Z24, Z%d", bz, 2*t)
		p("VFMADD231PS Z%d, Z25, Z%d", bz, 2*t+1)
	}
	p("ADDQ $128, SI")
	for _, r := range []string{"R8", "R9", "R10", "R11"} {
		p("ADDQ $4, %s", r)
	}
	p("DECQ CX")
	p("JNZ %s_loop", name)
	label(name + "_store")
	for t := range nt {
		p("MOVQ fpTile_out+%d(DI), AX", 8*t)
		p("VMOVUPS Z%d, (AX)", 2*t)
		p("VMOVUPS Z%d, 64(AX)", 2*t+1)
	}
	p("VZEROUPPER")
	p("RET")
}

// rpFloat writes a 32-row float panel from F32, F16 or BF16 rows with
// gathers: func name(src *byte, idx *[32]int32, n int, dst *float32) with
// n = elements (F32) or element pairs (F16/BF16) per row.
func rpFloat(wf string) {
	name := "repackF" + wf + "AVX512"
	comment(fmt.Sprintf("func %s(src *byte, idx *[32]int32, n int, dst *float32): %s rows to a [n][32] float32 panel (16-bit formats: n pairs).", name, wf))
	fmt.Fprintf(&b, "TEXT ·%s(SB), NOSPLIT, $0-32\n", name)
	p("MOVQ src+0(FP), SI")
	p("MOVQ idx+8(FP), AX")
	p("VMOVDQU32 (AX), Z30")
	p("VMOVDQU32 64(AX), Z31")
	p("MOVQ n+16(FP), CX")
	p("MOVQ dst+24(FP), DI")
	p("MOVL $0xffff0000, AX")
	p("VPBROADCASTD AX, Z29")
	label(name + "_loop")
	for h, idx := range []string{"Z30", "Z31"} {
		p("KXNORW K1, K1, K1")
		p("VPGATHERDD (SI)(%s*1), K1, Z%d", idx, h)
	}
	for h := range 2 {
		switch wf {
		case "32":
			p("VMOVUPS Z%d, %d(DI)", h, 64*h)
		case "16":
			p("VPMOVDW Z%d, Y2", h)
			p("VCVTPH2PS Y2, Z3")
			p("VMOVUPS Z3, %d(DI)", 64*h)
			p("VPSRLD $16, Z%d, Z4", h)
			p("VPMOVDW Z4, Y2")
			p("VCVTPH2PS Y2, Z3")
			p("VMOVUPS Z3, %d(DI)", 128+64*h)
		case "b16":
			p("VPSLLD $16, Z%d, Z3", h)
			p("VMOVUPS Z3, %d(DI)", 64*h)
			p("VPANDD Z29, Z%d, Z3", h)
			p("VMOVUPS Z3, %d(DI)", 128+64*h)
		}
	}
	if wf == "32" {
		p("ADDQ $4, SI")
		p("ADDQ $128, DI")
	} else {
		p("ADDQ $4, SI")
		p("ADDQ $256, DI")
	}
	p("DECQ CX")
	p("JNZ %s_loop", name)
	p("VZEROUPPER")
	p("RET")
}

func main() {
	fmt.Fprintf(&b, "// Code generated by gen_simd.go; DO NOT EDIT.\n\n//go:build !purego\n\n#include \"textflag.h\"\n#include \"go_asm.h\"\n")
	q8VNNI()
	q8AVX2(false, false)
	q8AVX2(true, false)
	q8AVX2(false, true)
	q4k := kSpec{name: "kMinVNNI32", sb: 32, panel: 5248, scOff: 4096, prOff: 4608, dOff: 5120, dmOff: 5184, actLen: 292}
	q6k := kSpec{name: "kCorrVNNI16", sb: 16, corr: true, panel: 5696, scOff: 4096, prOff: 5120, dOff: 5632, actLen: 292}
	kVNNI(q4k)
	kVNNI(q6k)
	q4k.name, q6k.name = "kMinAVX2x32", "kCorrAVX2x16"
	kAVX2(q4k)
	kAVX2(q6k)
	// Q2_K (mins per 16), Q3_K (Q6_K's correction with shift 2), IQ4_XS.
	q2k := kSpec{name: "kMinAVX2x16w", sb: 16, words: true, panel: 5760, scOff: 4096, prOff: 5120, dOff: 5632, dmOff: 5696, actLen: 292}
	iq4xs := kSpec{name: "kSgnAVX2x32w", sb: 32, signed: true, words: true, panel: 4672, scOff: 4096, dOff: 4608, actLen: 292}
	q6k.name, q6k.words = "kCorrAVX2x16w", true
	kAVX2(q2k)
	kAVX2(q6k)
	kAVX2(iq4xs)
	q8AVX512Min()
	q2k.name, q6k.name, iq4xs.name = "kMinAVX512x16w", "kCorrAVX512x16w", "kSgnAVX512x32w"
	kAVX512w(q2k)
	kAVX512w(q6k)
	kAVX512w(iq4xs)
	rpQ8_0()
	rpQ4_0()
	rpQ45K(false)
	rpQ45K(true)
	rpQ6K()
	for _, nt := range []int{12, 4, 1} {
		fPanel(nt)
	}
	rpFloat("32")
	rpFloat("16")
	rpFloat("b16")
	if err := os.WriteFile("simd_amd64.s", b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}
