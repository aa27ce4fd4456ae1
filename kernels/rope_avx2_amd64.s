//go:build !purego

#include "textflag.h"

// This file owns the AVX2 RoPE rotation (rope_avx2_amd64.go), bit for bit
// ropeGo: per 8 pairs the rounded products x1·sin and x1·cos in VMULPS,
// then one fused multiply-add per output (VFMSUB231PS/VFMADD231PS for NEOX,
// VFMADDSUB231PS on the interleaved lanes for NORM). The table's 8 pairs
// are loaded once and applied to every head. Tails use VMASKMOVPS, so no
// head is read or written past its first 2·half dims.

// ropeMask<>: 16 all-ones int32 then 16 zeros; the 8 lanes from
// ropeMask<>+4·(16−r) select the first r lanes.
DATA ropeMask<>+0(SB)/8, $0xffffffffffffffff
DATA ropeMask<>+8(SB)/8, $0xffffffffffffffff
DATA ropeMask<>+16(SB)/8, $0xffffffffffffffff
DATA ropeMask<>+24(SB)/8, $0xffffffffffffffff
DATA ropeMask<>+32(SB)/8, $0xffffffffffffffff
DATA ropeMask<>+40(SB)/8, $0xffffffffffffffff
DATA ropeMask<>+48(SB)/8, $0xffffffffffffffff
DATA ropeMask<>+56(SB)/8, $0xffffffffffffffff
DATA ropeMask<>+64(SB)/8, $0
DATA ropeMask<>+72(SB)/8, $0
DATA ropeMask<>+80(SB)/8, $0
DATA ropeMask<>+88(SB)/8, $0
DATA ropeMask<>+96(SB)/8, $0
DATA ropeMask<>+104(SB)/8, $0
DATA ropeMask<>+112(SB)/8, $0
DATA ropeMask<>+120(SB)/8, $0
GLOBL ropeMask<>(SB), RODATA|NOPTR, $128

// MASK loads into y the mask of the first r lanes (r in a register, ≤ 16;
// AX scratch).
#define MASK(r, y) \
	LEAQ    ropeMask<>+64(SB), AX; \
	SHLQ    $2, r; \
	SUBQ    r, AX; \
	SHRQ    $2, r; \
	VMOVDQU (AX), y

// NEOXROT rotates x0 (Y2) and x1 (Y3) by cos (Y0) and sin (Y1) into Y4, Y5.
#define NEOXROT \
	VMULPS      Y1, Y3, Y4; \
	VMULPS      Y0, Y3, Y5; \
	VFMSUB231PS Y0, Y2, Y4; \
	VFMADD231PS Y1, Y2, Y5

// func ropeNeoxVecAVX2(v *float32, heads, hd, half int, cos, sin *float32)
TEXT ·ropeNeoxVecAVX2(SB), NOSPLIT, $0-48
	MOVQ v+0(FP), SI
	MOVQ heads+8(FP), R8
	MOVQ hd+16(FP), R9
	SHLQ $2, R9           // head stride in bytes
	MOVQ half+24(FP), CX  // pairs left
	MOVQ cos+32(FP), DX
	MOVQ sin+40(FP), BX
	MOVQ CX, R11
	SHLQ $2, R11          // offset of x1 from x0
	XORQ R12, R12         // byte offset of pair i

nxchunk:
	CMPQ CX, $8
	JLT  nxtail
	VMOVUPS (DX)(R12*1), Y0
	VMOVUPS (BX)(R12*1), Y1
	LEAQ    (SI)(R12*1), DI
	MOVQ    R8, R13

nxhead:
	VMOVUPS (DI), Y2
	VMOVUPS (DI)(R11*1), Y3
	NEOXROT
	VMOVUPS Y4, (DI)
	VMOVUPS Y5, (DI)(R11*1)
	ADDQ    R9, DI
	DECQ    R13
	JNZ     nxhead
	ADDQ    $32, R12
	SUBQ    $8, CX
	JMP     nxchunk

nxtail:
	TESTQ CX, CX
	JZ    nxdone
	MASK(CX, Y15)
	VMASKMOVPS (DX)(R12*1), Y15, Y0
	VMASKMOVPS (BX)(R12*1), Y15, Y1
	LEAQ       (SI)(R12*1), DI
	MOVQ       R8, R13

nxtailhead:
	VMASKMOVPS (DI), Y15, Y2
	VMASKMOVPS (DI)(R11*1), Y15, Y3
	NEOXROT
	VMASKMOVPS Y4, Y15, (DI)
	VMASKMOVPS Y5, Y15, (DI)(R11*1)
	ADDQ       R9, DI
	DECQ       R13
	JNZ        nxtailhead

nxdone:
	VZEROUPPER
	RET

// NORMTAB interleaves cos (Y0) and sin (Y1) for 8 pairs: Y4, Y5 = [c s]
// for pairs 0–3, 4–7 and Y6, Y7 = [s c] for the same.
#define NORMTAB \
	VUNPCKLPS  Y1, Y0, Y2; \
	VUNPCKHPS  Y1, Y0, Y3; \
	VPERM2F128 $0x20, Y3, Y2, Y4; \
	VPERM2F128 $0x31, Y3, Y2, Y5; \
	VPERMILPS  $0xb1, Y4, Y6; \
	VPERMILPS  $0xb1, Y5, Y7

// NORMROT rotates the 4 adjacent pairs in y by cs = [c s] and sc = [s c]:
// the rounded products x1·[s c] then fma(x0, [c s], ∓ them), subtracting
// in the even lanes (t scratch).
#define NORMROT(y, cs, sc, t) \
	VMOVSHDUP      y, t; \
	VMOVSLDUP      y, y; \
	VMULPS         sc, t, t; \
	VFMADDSUB231PS cs, y, t

// func ropeNormVecAVX2(v *float32, heads, hd, half int, cos, sin *float32)
TEXT ·ropeNormVecAVX2(SB), NOSPLIT, $0-48
	MOVQ v+0(FP), SI
	MOVQ heads+8(FP), R8
	MOVQ hd+16(FP), R9
	SHLQ $2, R9
	MOVQ half+24(FP), CX
	MOVQ cos+32(FP), DX
	MOVQ sin+40(FP), BX
	XORQ R12, R12         // byte offset of pair i in the table

nmchunk:
	CMPQ CX, $8
	JLT  nmtail
	VMOVUPS (DX)(R12*1), Y0
	VMOVUPS (BX)(R12*1), Y1
	NORMTAB
	LEAQ    (SI)(R12*2), DI
	MOVQ    R8, R13

nmhead:
	VMOVUPS (DI), Y8
	VMOVUPS 32(DI), Y9
	NORMROT(Y8, Y4, Y6, Y10)
	NORMROT(Y9, Y5, Y7, Y11)
	VMOVUPS Y10, (DI)
	VMOVUPS Y11, 32(DI)
	ADDQ    R9, DI
	DECQ    R13
	JNZ     nmhead
	ADDQ    $32, R12
	SUBQ    $8, CX
	JMP     nmchunk

nmtail:
	TESTQ CX, CX
	JZ    nmdone
	MASK(CX, Y15)
	VMASKMOVPS (DX)(R12*1), Y15, Y0
	VMASKMOVPS (BX)(R12*1), Y15, Y1
	NORMTAB
	SHLQ       $1, CX     // floats of v left: 2·pairs
	MASK(CX, Y13)         // the first 8
	LEAQ       ropeMask<>+96(SB), AX
	MOVQ       CX, R10
	SHLQ       $2, R10
	SUBQ       R10, AX
	VMOVDQU    (AX), Y14  // the next 8: lanes 8.. of the first 2·pairs
	LEAQ       (SI)(R12*2), DI
	MOVQ       R8, R13

nmtailhead:
	VMASKMOVPS (DI), Y13, Y8
	VMASKMOVPS 32(DI), Y14, Y9
	NORMROT(Y8, Y4, Y6, Y10)
	NORMROT(Y9, Y5, Y7, Y11)
	VMASKMOVPS Y10, Y13, (DI)
	VMASKMOVPS Y11, Y14, 32(DI)
	ADDQ       R9, DI
	DECQ       R13
	JNZ        nmtailhead

nmdone:
	VZEROUPPER
	RET
