//go:build !purego

#include "textflag.h"

// This file owns the AVX2 RMSNorm (norm_avx2_amd64.go), bit for bit
// rmsNormTwin: element j's float32 square widened into float64 lane j%16
// (four 4-lane accumulators), the lanes summed as the twin does, then
// 1/sqrtf(mean + eps) in scalar and y = (x·scale)·w in 8-lane multiplies.
// Tails use VMASKMOVPS with masks from normMask<>, so no row is read or
// written past its end.

// normMask<>: 16 all-ones int32 then 16 zeros; the 8 lanes from
// normMask<>+4·(16−r) select the first r lanes.
DATA normMask<>+0(SB)/8, $0xffffffffffffffff
DATA normMask<>+8(SB)/8, $0xffffffffffffffff
DATA normMask<>+16(SB)/8, $0xffffffffffffffff
DATA normMask<>+24(SB)/8, $0xffffffffffffffff
DATA normMask<>+32(SB)/8, $0xffffffffffffffff
DATA normMask<>+40(SB)/8, $0xffffffffffffffff
DATA normMask<>+48(SB)/8, $0xffffffffffffffff
DATA normMask<>+56(SB)/8, $0xffffffffffffffff
DATA normMask<>+64(SB)/8, $0
DATA normMask<>+72(SB)/8, $0
DATA normMask<>+80(SB)/8, $0
DATA normMask<>+88(SB)/8, $0
DATA normMask<>+96(SB)/8, $0
DATA normMask<>+104(SB)/8, $0
DATA normMask<>+112(SB)/8, $0
DATA normMask<>+120(SB)/8, $0
GLOBL normMask<>(SB), RODATA|NOPTR, $128

// SQACC squares the 8 floats in y (x its low half), widens them and adds
// lanes 0–3 to lo and 4–7 to hi (Y6, Y7 scratch).
#define SQACC(y, x, lo, hi) \
	VMULPS       y, y, y; \
	VCVTPS2PD    x, Y6; \
	VEXTRACTF128 $1, y, x; \
	VCVTPS2PD    x, Y7; \
	VADDPD       Y6, lo, lo; \
	VADDPD       Y7, hi, hi

// func rmsNormVecAVX2(out, in, w *float32, rows, n int, nf float64, eps float32)
TEXT ·rmsNormVecAVX2(SB), NOSPLIT, $0-52
	MOVQ   out+0(FP), DI
	MOVQ   in+8(FP), SI
	MOVQ   w+16(FP), DX
	MOVQ   rows+24(FP), R8
	MOVQ   n+32(FP), R9
	VMOVSD nf+40(FP), X14
	VMOVSS eps+48(FP), X13
	MOVL   $0x3f800000, AX
	VMOVD  AX, X12

row:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   SI, BX
	MOVQ   R9, CX
	CMPQ   CX, $16
	JLT    sqtail

sq16:
	VMOVUPS (BX), Y4
	VMOVUPS 32(BX), Y5
	SQACC(Y4, X4, Y0, Y1)
	SQACC(Y5, X5, Y2, Y3)
	ADDQ    $64, BX
	SUBQ    $16, CX
	CMPQ    CX, $16
	JGE     sq16

sqtail:
	TESTQ      CX, CX
	JZ         reduce
	LEAQ       normMask<>+64(SB), AX
	MOVQ       CX, R10
	SHLQ       $2, R10
	SUBQ       R10, AX
	VMOVDQU    (AX), Y8
	VMOVDQU    32(AX), Y9
	VMASKMOVPS (BX), Y8, Y4
	VMASKMOVPS 32(BX), Y9, Y5
	SQACC(Y4, X4, Y0, Y1)
	SQACC(Y5, X5, Y2, Y3)

reduce:
	VADDPD       Y2, Y0, Y0
	VADDPD       Y3, Y1, Y1
	VADDPD       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VUNPCKHPD    X0, X0, X1
	VADDSD       X1, X0, X0
	VDIVSD       X14, X0, X0 // mean = ss / n
	VCVTSD2SS    X0, X0, X0
	VADDSS       X13, X0, X0 // + eps
	VSQRTSS      X0, X0, X0
	VDIVSS       X0, X12, X0 // scale = 1 / sqrt
	VBROADCASTSS X0, Y10

	MOVQ SI, BX
	MOVQ DX, R11
	MOVQ DI, R10
	MOVQ R9, CX
	CMPQ CX, $8
	JLT  multail

mul8:
	VMULPS  (BX), Y10, Y4
	VMULPS  (R11), Y4, Y4
	VMOVUPS Y4, (R10)
	ADDQ    $32, BX
	ADDQ    $32, R11
	ADDQ    $32, R10
	SUBQ    $8, CX
	CMPQ    CX, $8
	JGE     mul8

multail:
	TESTQ      CX, CX
	JZ         next
	LEAQ       normMask<>+64(SB), AX
	SHLQ       $2, CX
	SUBQ       CX, AX
	VMOVDQU    (AX), Y8
	VMASKMOVPS (BX), Y8, Y4
	VMASKMOVPS (R11), Y8, Y5
	VMULPS     Y10, Y4, Y4
	VMULPS     Y5, Y4, Y4
	VMASKMOVPS Y4, Y8, (R10)

next:
	LEAQ (SI)(R9*4), SI
	LEAQ (DI)(R9*4), DI
	DECQ R8
	JNZ  row
	VZEROUPPER
	RET
