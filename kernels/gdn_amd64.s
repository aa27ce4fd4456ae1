//go:build !purego

#include "textflag.h"

// This file owns the AVX2 passes of deltaRuleAVX2 (gdn_amd64.go), bit for
// bit the loops of deltaRuleGo: VMULPS then VADDPS (no fused multiply-add),
// each column summed over the rows in order. Columns go in chunks of 32
// (four accumulators) and then of 8; dv is a multiple of 8, dk ≥ 1.

// func gdnDecayDotAVX2(s, k, u *float32, e float32, dk, dv int)
TEXT ·gdnDecayDotAVX2(SB), NOSPLIT, $0-48
	MOVQ         s+0(FP), SI
	MOVQ         k+8(FP), BX
	MOVQ         u+16(FP), DI
	VBROADCASTSS e+24(FP), Y15
	MOVQ         dk+32(FP), CX
	MOVQ         dv+40(FP), DX
	MOVQ         DX, R8
	SHLQ         $2, R8            // row stride in bytes
	XORQ         R9, R9            // first column of the chunk

decay32:
	MOVQ   DX, R10
	SUBQ   R9, R10
	CMPQ   R10, $32
	JLT    decay8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	LEAQ   (SI)(R9*4), R11
	XORQ   R12, R12

decay32row:
	VBROADCASTSS (BX)(R12*4), Y14
	VMULPS       (R11), Y15, Y4
	VMULPS       32(R11), Y15, Y5
	VMULPS       64(R11), Y15, Y6
	VMULPS       96(R11), Y15, Y7
	VMOVUPS      Y4, (R11)
	VMOVUPS      Y5, 32(R11)
	VMOVUPS      Y6, 64(R11)
	VMOVUPS      Y7, 96(R11)
	VMULPS       Y14, Y4, Y4
	VMULPS       Y14, Y5, Y5
	VMULPS       Y14, Y6, Y6
	VMULPS       Y14, Y7, Y7
	VADDPS       Y4, Y0, Y0
	VADDPS       Y5, Y1, Y1
	VADDPS       Y6, Y2, Y2
	VADDPS       Y7, Y3, Y3
	ADDQ         R8, R11
	INCQ         R12
	CMPQ         R12, CX
	JLT          decay32row
	VMOVUPS      Y0, (DI)(R9*4)
	VMOVUPS      Y1, 32(DI)(R9*4)
	VMOVUPS      Y2, 64(DI)(R9*4)
	VMOVUPS      Y3, 96(DI)(R9*4)
	ADDQ         $32, R9
	JMP          decay32

decay8:
	CMPQ   R10, $8
	JLT    decaydone
	VXORPS Y0, Y0, Y0
	LEAQ   (SI)(R9*4), R11
	XORQ   R12, R12

decay8row:
	VBROADCASTSS (BX)(R12*4), Y14
	VMULPS       (R11), Y15, Y4
	VMOVUPS      Y4, (R11)
	VMULPS       Y14, Y4, Y4
	VADDPS       Y4, Y0, Y0
	ADDQ         R8, R11
	INCQ         R12
	CMPQ         R12, CX
	JLT          decay8row
	VMOVUPS      Y0, (DI)(R9*4)
	ADDQ         $8, R9
	SUBQ         $8, R10
	JMP          decay8

decaydone:
	VZEROUPPER
	RET

// func gdnUpdateDotAVX2(s, k, q, d, o *float32, dk, dv int)
TEXT ·gdnUpdateDotAVX2(SB), NOSPLIT, $0-56
	MOVQ s+0(FP), SI
	MOVQ k+8(FP), BX
	MOVQ q+16(FP), AX
	MOVQ d+24(FP), R13
	MOVQ o+32(FP), DI
	MOVQ dk+40(FP), CX
	MOVQ dv+48(FP), DX
	MOVQ DX, R8
	SHLQ $2, R8
	XORQ R9, R9

update32:
	MOVQ    DX, R10
	SUBQ    R9, R10
	CMPQ    R10, $32
	JLT     update8
	VMOVUPS (R13)(R9*4), Y8
	VMOVUPS 32(R13)(R9*4), Y9
	VMOVUPS 64(R13)(R9*4), Y10
	VMOVUPS 96(R13)(R9*4), Y11
	VXORPS  Y0, Y0, Y0
	VXORPS  Y1, Y1, Y1
	VXORPS  Y2, Y2, Y2
	VXORPS  Y3, Y3, Y3
	LEAQ    (SI)(R9*4), R11
	XORQ    R12, R12

update32row:
	VBROADCASTSS (BX)(R12*4), Y14
	VBROADCASTSS (AX)(R12*4), Y13
	VMULPS       Y8, Y14, Y4
	VMULPS       Y9, Y14, Y5
	VMULPS       Y10, Y14, Y6
	VMULPS       Y11, Y14, Y7
	VADDPS       (R11), Y4, Y4
	VADDPS       32(R11), Y5, Y5
	VADDPS       64(R11), Y6, Y6
	VADDPS       96(R11), Y7, Y7
	VMOVUPS      Y4, (R11)
	VMOVUPS      Y5, 32(R11)
	VMOVUPS      Y6, 64(R11)
	VMOVUPS      Y7, 96(R11)
	VMULPS       Y13, Y4, Y4
	VMULPS       Y13, Y5, Y5
	VMULPS       Y13, Y6, Y6
	VMULPS       Y13, Y7, Y7
	VADDPS       Y4, Y0, Y0
	VADDPS       Y5, Y1, Y1
	VADDPS       Y6, Y2, Y2
	VADDPS       Y7, Y3, Y3
	ADDQ         R8, R11
	INCQ         R12
	CMPQ         R12, CX
	JLT          update32row
	VMOVUPS      Y0, (DI)(R9*4)
	VMOVUPS      Y1, 32(DI)(R9*4)
	VMOVUPS      Y2, 64(DI)(R9*4)
	VMOVUPS      Y3, 96(DI)(R9*4)
	ADDQ         $32, R9
	JMP          update32

update8:
	CMPQ    R10, $8
	JLT     updatedone
	VMOVUPS (R13)(R9*4), Y8
	VXORPS  Y0, Y0, Y0
	LEAQ    (SI)(R9*4), R11
	XORQ    R12, R12

update8row:
	VBROADCASTSS (BX)(R12*4), Y14
	VBROADCASTSS (AX)(R12*4), Y13
	VMULPS       Y8, Y14, Y4
	VADDPS       (R11), Y4, Y4
	VMOVUPS      Y4, (R11)
	VMULPS       Y13, Y4, Y4
	VADDPS       Y4, Y0, Y0
	ADDQ         R8, R11
	INCQ         R12
	CMPQ         R12, CX
	JLT          update8row
	VMOVUPS      Y0, (DI)(R9*4)
	ADDQ         $8, R9
	SUBQ         $8, R10
	JMP          update8

updatedone:
	VZEROUPPER
	RET
