//go:build !purego

// This file owns the AVX2 float panel kernels (the twins of fPanelGo in
// panel.go, written by hand), the AVX2 panel repackers for F32, F16 and
// BF16 rows (twins of repackFloat), and the vector F16/BF16 rounding of
// activations. Declarations and the Go wrappers are in
// fpanel_avx2_amd64.go.
//
// With 16 ymm registers a kernel pass keeps one 16-row half of the
// [n][32] panel (two ymm of 8 rows) against up to 6 tokens: 12
// accumulators, 2 weight vectors and a broadcast activation, two 256-bit
// multiply-adds per load (Zen 1 retires one per cycle). x12 runs four such
// passes (2 halves × 2 token groups) per chunk of elements, x4 two passes
// of 4 tokens, and x1 keeps all 32 rows of its one token. Each (row,
// token) output is one fused multiply-add chain over the elements in
// order, as in fPanelGo, and every width issues the same multiply-adds
// with the same operand order as the AVX-512 kernels, so all give the
// same bits (NaNs included).

#include "textflag.h"
#include "go_asm.h"

// ---- float panels ----

// Register use in a pass:
//	DI  *fpTile
//	SI  weights of the current element (one half of the panel)
//	R8  token 0 of the group, current element; R9 = R8 + 3·stride
//	R12 stride
//	DX  byte offset of the half (0 or 64) in the panel and in the outputs
//	CX  elements left in the pass
//	Y0-Y11 accumulators (token t: Y(2t) rows 0-7, Y(2t+1) rows 8-15 of the half)
//	Y12, Y13 weights, Y14, Y15 broadcast activations

// FMA2 adds token t's activation b times the two weight vectors into its
// accumulators lo, hi.
#define FMA2(b, lo, hi) \
	VFMADD231PS b, Y12, lo; \
	VFMADD231PS b, Y13, hi

// LOADW loads the half-panel weights of the element at byte offset wo.
#define LOADW(wo) \
	VMOVUPS (wo)(SI), Y12; \
	VMOVUPS (wo+32)(SI), Y13

// STEP6 is one element (weights at wo, activations at ao from each token's
// pointer) for 6 tokens.
#define STEP6(wo, ao) \
	LOADW(wo); \
	VBROADCASTSS (ao)(R8), Y14; \
	FMA2(Y14, Y0, Y1); \
	VBROADCASTSS (ao)(R8)(R12*1), Y15; \
	FMA2(Y15, Y2, Y3); \
	VBROADCASTSS (ao)(R8)(R12*2), Y14; \
	FMA2(Y14, Y4, Y5); \
	VBROADCASTSS (ao)(R9), Y15; \
	FMA2(Y15, Y6, Y7); \
	VBROADCASTSS (ao)(R8)(R12*4), Y14; \
	FMA2(Y14, Y8, Y9); \
	VBROADCASTSS (ao)(R9)(R12*2), Y15; \
	FMA2(Y15, Y10, Y11)

// STEP4 is STEP6 for 4 tokens.
#define STEP4(wo, ao) \
	LOADW(wo); \
	VBROADCASTSS (ao)(R8), Y14; \
	FMA2(Y14, Y0, Y1); \
	VBROADCASTSS (ao)(R8)(R12*1), Y15; \
	FMA2(Y15, Y2, Y3); \
	VBROADCASTSS (ao)(R8)(R12*2), Y14; \
	FMA2(Y14, Y4, Y5); \
	VBROADCASTSS (ao)(R9), Y15; \
	FMA2(Y15, Y6, Y7)

// ADVANCE2 moves to the element after the next.
#define ADVANCE2 \
	ADDQ $256, SI; \
	ADDQ $8, R8; \
	ADDQ $8, R9

// ZERO zeroes accumulator r.
#define ZERO(r) VXORPS r, r, r

// The x12 kernel walks the elements in chunks of FPCHUNK, so that its four
// passes over a chunk find the chunk's panel (32 KiB) and activations
// (12 KiB) in L1 or near it rather than streaming the whole panel four
// times and the activations twice (K=3072: 36 instead of 33 GFLOP/s hot).
// Between chunks a pass's accumulators wait in the frame, 384 bytes per
// (group, half) at 768·group + 384·half, token t's two vectors at +64·t.
// Besides the pass registers:
//	R13 the chunk's panel start, R11 its activations (token 0)
//	R14 the group's first activation row in the chunk
//	R10 elements left from this chunk's start, AX the chunk's length
//	BX  frame offset of the pass
#define FPCHUNK 256

// LOADACC and STOREACC move accumulator i of the pass at BX from and to
// the frame.
#define LOADACC(i, y) VMOVUPS (32*i)(SP)(BX*1), y
#define STOREACC(i, y) VMOVUPS y, (32*i)(SP)(BX*1)

// OUTSLOT copies slot s = 6·g + t from the frame to its output.
#define OUTSLOT(s, g, t) \
	MOVQ    (fpTile_out+8*s)(DI), AX; \
	VMOVUPS (768*g+64*t)(SP), Y0; \
	VMOVUPS (768*g+64*t+32)(SP), Y1; \
	VMOVUPS (768*g+384+64*t)(SP), Y2; \
	VMOVUPS (768*g+384+64*t+32)(SP), Y3; \
	VMOVUPS Y0, (AX); \
	VMOVUPS Y1, 32(AX); \
	VMOVUPS Y2, 64(AX); \
	VMOVUPS Y3, 96(AX)

// func fPanelAVX2x12(t *fpTile): 32 rows × 12 tokens, per chunk four
// passes (token group 0-5 then 6-11, each half 0 then 1).
TEXT ·fPanelAVX2x12(SB), 0, $1536-8
	MOVQ  t+0(FP), DI
	MOVQ  fpTile_w(DI), R13
	MOVQ  fpTile_a(DI), R11
	MOVQ  fpTile_stride(DI), R12
	MOVQ  fpTile_n(DI), R10
	TESTQ R10, R10
	JNZ   x12chunk

	// No elements: all outputs are zero.
	VXORPS Y0, Y0, Y0
	XORQ   BX, BX
x12zero:
	STOREACC(0, Y0); STOREACC(1, Y0); STOREACC(2, Y0); STOREACC(3, Y0)
	STOREACC(4, Y0); STOREACC(5, Y0); STOREACC(6, Y0); STOREACC(7, Y0)
	STOREACC(8, Y0); STOREACC(9, Y0); STOREACC(10, Y0); STOREACC(11, Y0)
	ADDQ $384, BX
	CMPQ BX, $1536
	JB   x12zero
	JMP  x12out

x12chunk:
	MOVQ    $FPCHUNK, AX
	CMPQ    R10, AX
	CMOVQLT R10, AX
	XORQ    BX, BX
	XORQ    DX, DX
	MOVQ    R11, R14

x12pass:
	LEAQ (R13)(DX*1), SI
	MOVQ R14, R8
	LEAQ (R8)(R12*2), R9
	ADDQ R12, R9
	MOVQ AX, CX
	CMPQ R13, fpTile_w(DI)
	JNE  x12load
	ZERO(Y0); ZERO(Y1); ZERO(Y2); ZERO(Y3); ZERO(Y4); ZERO(Y5)
	ZERO(Y6); ZERO(Y7); ZERO(Y8); ZERO(Y9); ZERO(Y10); ZERO(Y11)
	JMP  x12loaded

x12load:
	LOADACC(0, Y0); LOADACC(1, Y1); LOADACC(2, Y2); LOADACC(3, Y3)
	LOADACC(4, Y4); LOADACC(5, Y5); LOADACC(6, Y6); LOADACC(7, Y7)
	LOADACC(8, Y8); LOADACC(9, Y9); LOADACC(10, Y10); LOADACC(11, Y11)

x12loaded:
	SUBQ $2, CX
	JB   x12tail

x12loop:
	STEP6(0, 0)
	STEP6(128, 4)
	ADVANCE2
	SUBQ $2, CX
	JAE  x12loop

x12tail:
	// CX is -1 when one element is left, -2 when none.
	CMPQ CX, $-1
	JNE  x12save
	STEP6(0, 0)

x12save:
	STOREACC(0, Y0); STOREACC(1, Y1); STOREACC(2, Y2); STOREACC(3, Y3)
	STOREACC(4, Y4); STOREACC(5, Y5); STOREACC(6, Y6); STOREACC(7, Y7)
	STOREACC(8, Y8); STOREACC(9, Y9); STOREACC(10, Y10); STOREACC(11, Y11)

	// Next half; after half 1, the next token group; after group 1, the
	// next chunk.
	ADDQ $384, BX
	XORQ $64, DX
	JNZ  x12pass
	LEAQ (R14)(R12*4), R14
	LEAQ (R14)(R12*2), R14
	CMPQ BX, $1536
	JB   x12pass
	MOVQ AX, CX
	SHLQ $7, CX
	ADDQ CX, R13
	LEAQ (R11)(AX*4), R11
	SUBQ AX, R10
	JNZ  x12chunk

x12out:
	OUTSLOT(0, 0, 0)
	OUTSLOT(1, 0, 1)
	OUTSLOT(2, 0, 2)
	OUTSLOT(3, 0, 3)
	OUTSLOT(4, 0, 4)
	OUTSLOT(5, 0, 5)
	OUTSLOT(6, 1, 0)
	OUTSLOT(7, 1, 1)
	OUTSLOT(8, 1, 2)
	OUTSLOT(9, 1, 3)
	OUTSLOT(10, 1, 4)
	OUTSLOT(11, 1, 5)
	VZEROUPPER
	RET

// STORE2 writes token t's two accumulators to its output's half DX.
#define STORE2(t, lo, hi) \
	MOVQ    (fpTile_out+8*t)(DI), AX; \
	VMOVUPS lo, (AX)(DX*1); \
	VMOVUPS hi, 32(AX)(DX*1)

// func fPanelAVX2x4(t *fpTile): 32 rows × 4 tokens in two passes (halves).
// R13 is the panel, R11 token 0's activations.
TEXT ·fPanelAVX2x4(SB), NOSPLIT, $0-8
	MOVQ t+0(FP), DI
	MOVQ fpTile_w(DI), R13
	MOVQ fpTile_a(DI), R11
	MOVQ fpTile_stride(DI), R12
	XORQ DX, DX

x4pass:
	LEAQ (R13)(DX*1), SI
	MOVQ R11, R8
	LEAQ (R8)(R12*2), R9
	ADDQ R12, R9
	MOVQ fpTile_n(DI), CX
	ZERO(Y0); ZERO(Y1); ZERO(Y2); ZERO(Y3)
	ZERO(Y4); ZERO(Y5); ZERO(Y6); ZERO(Y7)
	SUBQ $2, CX
	JB   x4tail

x4loop:
	STEP4(0, 0)
	STEP4(128, 4)
	ADVANCE2
	SUBQ $2, CX
	JAE  x4loop

x4tail:
	CMPQ CX, $-1
	JNE  x4store
	STEP4(0, 0)

x4store:
	STORE2(0, Y0, Y1)
	STORE2(1, Y2, Y3)
	STORE2(2, Y4, Y5)
	STORE2(3, Y6, Y7)
	XORQ $64, DX
	JNZ  x4pass
	VZEROUPPER
	RET

// STEP1 is one element of the one-token kernel: all 32 rows. The weights
// are loaded rather than read by the multiply-adds so that the operands
// keep the wider kernels' order, and with it which NaN propagates.
#define STEP1(wo, ao) \
	VBROADCASTSS (ao)(R8), Y14; \
	VMOVUPS      (wo)(SI), Y8; \
	VMOVUPS      (wo+32)(SI), Y9; \
	VMOVUPS      (wo+64)(SI), Y10; \
	VMOVUPS      (wo+96)(SI), Y11; \
	VFMADD231PS  Y14, Y8, Y0; \
	VFMADD231PS  Y14, Y9, Y1; \
	VFMADD231PS  Y14, Y10, Y2; \
	VFMADD231PS  Y14, Y11, Y3

// func fPanelAVX2x1(t *fpTile): 32 rows × 1 token.
TEXT ·fPanelAVX2x1(SB), NOSPLIT, $0-8
	MOVQ t+0(FP), DI
	MOVQ fpTile_w(DI), SI
	MOVQ fpTile_a(DI), R8
	MOVQ fpTile_n(DI), CX
	ZERO(Y0); ZERO(Y1); ZERO(Y2); ZERO(Y3)
	SUBQ $2, CX
	JB   x1tail

x1loop:
	STEP1(0, 0)
	STEP1(128, 4)
	ADDQ $256, SI
	ADDQ $8, R8
	SUBQ $2, CX
	JAE  x1loop

x1tail:
	CMPQ CX, $-1
	JNE  x1store
	STEP1(0, 0)

x1store:
	MOVQ    fpTile_out+0(DI), AX
	VMOVUPS Y0, (AX)
	VMOVUPS Y1, 32(AX)
	VMOVUPS Y2, 64(AX)
	VMOVUPS Y3, 96(AX)
	VZEROUPPER
	RET

// ---- panel repack ----

// The repackers write rows [0, 32) × elements [0, n) (n a multiple of 8)
// of rows at src, rb bytes apart, as a [n][32] float32 panel: 8 rows × 8
// elements at a time, an 8-row group per outer pass. In a group the rows
// are at (SI), (SI)(DX*1), (SI)(DX*2), (R8), (SI)(DX*4), (R8)(DX*2), (R9),
// (R9)(DX*1) with R8 = SI + 3·rb, R9 = SI + 6·rb; DI is the group's slot in
// the current element of the panel, R10 the group's first row, R11 the
// group count left, R12 the 8-element blocks per row, CX those left in
// this group, BX the group's slot in element 0.

// GROUPSTART points SI, R8, R9, DI and CX at the current group's start.
#define GROUPSTART \
	MOVQ R10, SI; \
	LEAQ (SI)(DX*2), R8; \
	ADDQ DX, R8; \
	LEAQ (R8)(DX*2), R9; \
	ADDQ DX, R9; \
	MOVQ BX, DI; \
	MOVQ R12, CX

// GROUPNEXT moves R10 and BX to the next group and loops to label l.
#define GROUPNEXT(l) \
	LEAQ (R10)(DX*8), R10; \
	ADDQ $32, BX; \
	DECQ R11; \
	JNZ  l

// ADVROWS moves the row pointers on by b bytes and DI by 8 elements.
#define ADVROWS(b) \
	ADDQ $b, SI; \
	ADDQ $b, R8; \
	ADDQ $b, R9; \
	ADDQ $1024, DI

// TR4 transposes 4×4 floats within each 128-bit lane of a, b, c, d (rows)
// into a, b, c, d (columns), using t0-t3 as scratch.
#define TR4(a, b, c, d, t0, t1, t2, t3) \
	VUNPCKLPS b, a, t0; \
	VUNPCKHPS b, a, t1; \
	VUNPCKLPS d, c, t2; \
	VUNPCKHPS d, c, t3; \
	VUNPCKLPD t2, t0, a; \
	VUNPCKHPD t2, t0, b; \
	VUNPCKLPD t3, t1, c; \
	VUNPCKHPD t3, t1, d

// F32QUAD loads elements [off/4, off/4+4) of the 8 rows, row r in lane
// r/4 of register r%4, transposes and stores the 4 elements from element
// slot k (byte offset 128·k from DI).
#define F32QUAD(off, k) \
	VMOVUPS     off(SI), X0; \
	VINSERTF128 $1, off(SI)(DX*4), Y0, Y0; \
	VMOVUPS     off(SI)(DX*1), X1; \
	VINSERTF128 $1, off(R8)(DX*2), Y1, Y1; \
	VMOVUPS     off(SI)(DX*2), X2; \
	VINSERTF128 $1, off(R9), Y2, Y2; \
	VMOVUPS     off(R8), X3; \
	VINSERTF128 $1, off(R9)(DX*1), Y3, Y3; \
	TR4(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7); \
	VMOVUPS     Y0, (128*k)(DI); \
	VMOVUPS     Y1, (128*k+128)(DI); \
	VMOVUPS     Y2, (128*k+256)(DI); \
	VMOVUPS     Y3, (128*k+384)(DI)

// func repackF32AVX2(src *byte, rb, n int, dst *float32)
TEXT ·repackF32AVX2(SB), NOSPLIT, $0-32
	MOVQ  src+0(FP), R10
	MOVQ  rb+8(FP), DX
	MOVQ  n+16(FP), R12
	MOVQ  dst+24(FP), BX
	MOVQ  $4, R11
	SHRQ  $3, R12 // blocks of 8 elements
	JZ    f32done

f32group:
	GROUPSTART

f32loop:
	F32QUAD(0, 0)
	F32QUAD(16, 4)
	ADVROWS(32)
	DECQ CX
	JNZ  f32loop
	GROUPNEXT(f32group)

f32done:
	VZEROUPPER
	RET

// LOAD16x8 loads 8 consecutive 16-bit elements of the 8 rows into X0-X7.
#define LOAD16x8 \
	VMOVDQU (SI), X0; \
	VMOVDQU (SI)(DX*1), X1; \
	VMOVDQU (SI)(DX*2), X2; \
	VMOVDQU (R8), X3; \
	VMOVDQU (SI)(DX*4), X4; \
	VMOVDQU (R8)(DX*2), X5; \
	VMOVDQU (R9), X6; \
	VMOVDQU (R9)(DX*1), X7

// TR16 transposes the 8×8 16-bit matrix in X0-X7 (rows) into X8-X15
// (X(8+e) holds element e of rows 0-7).
#define TR16 \
	VPUNPCKLWD X1, X0, X8; \
	VPUNPCKHWD X1, X0, X9; \
	VPUNPCKLWD X3, X2, X10; \
	VPUNPCKHWD X3, X2, X11; \
	VPUNPCKLWD X5, X4, X12; \
	VPUNPCKHWD X5, X4, X13; \
	VPUNPCKLWD X7, X6, X14; \
	VPUNPCKHWD X7, X6, X15; \
	VPUNPCKLDQ X10, X8, X0; \
	VPUNPCKHDQ X10, X8, X1; \
	VPUNPCKLDQ X11, X9, X2; \
	VPUNPCKHDQ X11, X9, X3; \
	VPUNPCKLDQ X14, X12, X4; \
	VPUNPCKHDQ X14, X12, X5; \
	VPUNPCKLDQ X15, X13, X6; \
	VPUNPCKHDQ X15, X13, X7; \
	VPUNPCKLQDQ X4, X0, X8; \
	VPUNPCKHQDQ X4, X0, X9; \
	VPUNPCKLQDQ X5, X1, X10; \
	VPUNPCKHQDQ X5, X1, X11; \
	VPUNPCKLQDQ X6, X2, X12; \
	VPUNPCKHQDQ X6, X2, X13; \
	VPUNPCKLQDQ X7, X3, X14; \
	VPUNPCKHQDQ X7, X3, X15

// CVTH converts the halves of element e (X(8+e) as x) and stores them.
#define CVTH(x, e, y) \
	VCVTPH2PS x, y; \
	VMOVUPS   y, (128*e)(DI)

DATA fpBit22<>+0(SB)/8, $0x0040000000400000
DATA fpBit22<>+8(SB)/8, $0x0040000000400000
DATA fpBit22<>+16(SB)/8, $0x0040000000400000
DATA fpBit22<>+24(SB)/8, $0x0040000000400000
GLOBL fpBit22<>(SB), RODATA|NOPTR, $32

// SNANFIX clears bit 22 (the float32 quiet bit) of the NaNs stored for
// element e whose binary16 x had bit 9 (its quiet bit) clear; Y0-Y2 are
// scratch.
#define SNANFIX(x, e) \
	VPMOVZXWD x, Y0; \
	VPSLLD    $13, Y0, Y0; \
	VPANDN    fpBit22<>(SB), Y0, Y0; \
	VMOVUPS   (128*e)(DI), Y1; \
	VCMPPS    $3, Y1, Y1, Y2; \
	VPAND     Y2, Y0, Y0; \
	VXORPS    Y0, Y1, Y1; \
	VMOVUPS   Y1, (128*e)(DI)

// func repackF16AVX2(src *byte, rb, n int, dst *float32)
TEXT ·repackF16AVX2(SB), NOSPLIT, $0-32
	MOVQ  src+0(FP), R10
	MOVQ  rb+8(FP), DX
	MOVQ  n+16(FP), R12
	MOVQ  dst+24(FP), BX
	MOVQ  $4, R11
	SHRQ  $3, R12 // blocks of 8 elements
	JZ    f16done

f16group:
	GROUPSTART

f16loop:
	LOAD16x8
	TR16
	CVTH(X8, 0, Y0)
	CVTH(X9, 1, Y1)
	CVTH(X10, 2, Y2)
	CVTH(X11, 3, Y3)
	CVTH(X12, 4, Y4)
	CVTH(X13, 5, Y5)
	CVTH(X14, 6, Y6)
	CVTH(X15, 7, Y7)

	// VCVTPH2PS quiets signalling NaNs, F16ToF32 keeps them: if the block
	// has a NaN, put each NaN's quiet bit back to the binary16 one.
	VCMPPS  $3, Y1, Y0, Y0
	VCMPPS  $3, Y3, Y2, Y2
	VCMPPS  $3, Y5, Y4, Y4
	VCMPPS  $3, Y7, Y6, Y6
	VORPS   Y2, Y0, Y0
	VORPS   Y6, Y4, Y4
	VORPS   Y4, Y0, Y0
	VTESTPS Y0, Y0
	JNZ     f16nan

f16next:
	ADVROWS(16)
	DECQ CX
	JNZ  f16loop
	GROUPNEXT(f16group)

f16done:
	VZEROUPPER
	RET

f16nan:
	SNANFIX(X8, 0)
	SNANFIX(X9, 1)
	SNANFIX(X10, 2)
	SNANFIX(X11, 3)
	SNANFIX(X12, 4)
	SNANFIX(X13, 5)
	SNANFIX(X14, 6)
	SNANFIX(X15, 7)
	JMP f16next

// WIDENB stores element e's bfloat16 values x as float32 (the 16 bits
// above 16 zero bits), X0 being zero.
#define WIDENB(x, e) \
	VPUNPCKLWD x, X0, X1; \
	VPUNPCKHWD x, X0, X2; \
	VMOVDQU    X1, (128*e)(DI); \
	VMOVDQU    X2, (128*e+16)(DI)

// func repackBF16AVX2(src *byte, rb, n int, dst *float32)
TEXT ·repackBF16AVX2(SB), NOSPLIT, $0-32
	MOVQ  src+0(FP), R10
	MOVQ  rb+8(FP), DX
	MOVQ  n+16(FP), R12
	MOVQ  dst+24(FP), BX
	MOVQ  $4, R11
	SHRQ  $3, R12 // blocks of 8 elements
	JZ    bf16done

bf16group:
	GROUPSTART

bf16loop:
	LOAD16x8
	TR16
	VPXOR X0, X0, X0
	WIDENB(X8, 0)
	WIDENB(X9, 1)
	WIDENB(X10, 2)
	WIDENB(X11, 3)
	WIDENB(X12, 4)
	WIDENB(X13, 5)
	WIDENB(X14, 6)
	WIDENB(X15, 7)
	ADVROWS(16)
	DECQ CX
	JNZ  bf16loop
	GROUPNEXT(bf16group)

bf16done:
	VZEROUPPER
	RET

// ---- activation rounding ----

// func roundF16VecAVX2(x *float32, n int, dst *float32): dst[i] =
// RoundF16(x[i]) for n a multiple of 8, through binary16 and back
// (VCVTPS2PH with round-to-nearest-even from the immediate).
TEXT ·roundF16VecAVX2(SB), NOSPLIT, $0-24
	MOVQ  x+0(FP), SI
	MOVQ  n+8(FP), CX
	MOVQ  dst+16(FP), DI
	SHRQ  $3, CX
	JZ    rf16done

rf16loop:
	VMOVUPS   (SI), Y0
	VCVTPS2PH $0, Y0, X1
	VCVTPH2PS X1, Y2
	VMOVUPS   Y2, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       rf16loop

rf16done:
	VZEROUPPER
	RET

// BCAST32 broadcasts the 32-bit constant c into y.
#define BCAST32(c, y) \
	MOVL         $c, AX; \
	VMOVD        AX, X15; \
	VPBROADCASTD X15, y

// func roundBF16VecAVX2(x *float32, n int, dst *float32): dst[i] =
// RoundBF16(x[i]) for n a multiple of 8: b + 0x7fff + (b>>16 & 1) with
// the low half cleared, NaN quieted (bit 22 set) instead.
TEXT ·roundBF16VecAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ dst+16(FP), DI
	SHRQ $3, CX
	JZ   rbf16done
	BCAST32(1, Y8)
	BCAST32(0x7fff, Y9)
	BCAST32(0x7fffffff, Y10)
	BCAST32(0x7f800000, Y11)
	BCAST32(0x00400000, Y12)
	BCAST32(0xffff0000, Y13)

rbf16loop:
	VMOVDQU   (SI), Y0
	VPSRLD    $16, Y0, Y1
	VPAND     Y8, Y1, Y1
	VPADDD    Y0, Y1, Y1
	VPADDD    Y9, Y1, Y1  // rounded, low half still to clear
	VPAND     Y10, Y0, Y2
	VPCMPGTD  Y11, Y2, Y2 // NaN lanes
	VPOR      Y12, Y0, Y3 // quieted NaN
	VBLENDVPS Y2, Y3, Y1, Y1
	VPAND     Y13, Y1, Y1
	VMOVDQU   Y1, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       rbf16loop

rbf16done:
	VZEROUPPER
	RET
