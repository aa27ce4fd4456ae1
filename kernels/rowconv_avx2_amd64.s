//go:build !purego

#include "textflag.h"

// This file owns the AVX2 f32 → f16/bf16 row converters
// (rowconv_avx2_amd64.go), 8 values a step.

// func f32ToF16VecAVX2(x *float32, n int, dst *uint16)
TEXT ·f32ToF16VecAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ dst+16(FP), DI
	SHRQ $3, CX
	JZ   f16done

f16loop:
	VMOVUPS   (SI), Y0
	VCVTPS2PH $0, Y0, X1
	VMOVDQU   X1, (DI)
	ADDQ      $32, SI
	ADDQ      $16, DI
	DECQ      CX
	JNZ       f16loop

f16done:
	VZEROUPPER
	RET

// BCAST32 broadcasts the 32-bit constant c into y.
#define BCAST32(c, y) \
	MOVL         $c, AX; \
	VMOVD        AX, X15; \
	VPBROADCASTD X15, y

// func f32ToBF16VecAVX2(x *float32, n int, dst *uint16): the upper half of
// b + 0x7fff + (b>>16 & 1), or of b with bit 22 set for a NaN, as
// roundBF16VecAVX2 computes it.
TEXT ·f32ToBF16VecAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ dst+16(FP), DI
	SHRQ $3, CX
	JZ   bf16done
	BCAST32(1, Y8)
	BCAST32(0x7fff, Y9)
	BCAST32(0x7fffffff, Y10)
	BCAST32(0x7f800000, Y11)
	BCAST32(0x00400000, Y12)

bf16loop:
	VMOVDQU   (SI), Y0
	VPSRLD    $16, Y0, Y1
	VPAND     Y8, Y1, Y1
	VPADDD    Y0, Y1, Y1
	VPADDD    Y9, Y1, Y1  // rounded
	VPAND     Y10, Y0, Y2
	VPCMPGTD  Y11, Y2, Y2 // NaN lanes
	VPOR      Y12, Y0, Y3 // quieted NaN
	VBLENDVPS Y2, Y3, Y1, Y1
	VPSRLD    $16, Y1, Y1
	VPACKUSDW Y1, Y1, Y1  // per 128-bit half: its 4 words twice
	VPERMQ    $0x08, Y1, Y1
	VMOVDQU   X1, (DI)
	ADDQ      $32, SI
	ADDQ      $16, DI
	DECQ      CX
	JNZ       bf16loop

bf16done:
	VZEROUPPER
	RET
