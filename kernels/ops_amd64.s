//go:build !purego

// This file owns the AVX-512 elementwise kernels of ops.go: a vector exp
// (its Go twin is expGo), SwiGLU, and the three passes of the softmax.
// Tails are handled with k-masks, so any length works.

#include "textflag.h"

// EXP_CONSTS loads the exp constants into Z20-Z31.
#define EXP_CONSTS \
	MOVL $0x42b20000, AX; VPBROADCASTD AX, Z31; \ // 89.0
	MOVL $0xc2d00000, AX; VPBROADCASTD AX, Z30; \ // -104.0
	MOVL $0x3fb8aa3b, AX; VPBROADCASTD AX, Z29; \ // log2(e)
	MOVL $0x3f318000, AX; VPBROADCASTD AX, Z28; \ // c1 = 0.693359375
	MOVL $0xb95e8083, AX; VPBROADCASTD AX, Z27; \ // c2 = -2.12194440e-4
	MOVL $0x39506967, AX; VPBROADCASTD AX, Z26; \ // 1.9875691500e-4
	MOVL $0x3ab743ce, AX; VPBROADCASTD AX, Z25; \ // 1.3981999507e-3
	MOVL $0x3c088908, AX; VPBROADCASTD AX, Z24; \ // 8.3334519073e-3
	MOVL $0x3d2aa9c1, AX; VPBROADCASTD AX, Z23; \ // 4.1665795894e-2
	MOVL $0x3e2aaaaa, AX; VPBROADCASTD AX, Z22; \ // 1.6666665459e-1
	MOVL $0x3f000000, AX; VPBROADCASTD AX, Z21; \ // 5.0000001201e-1
	MOVL $0x3f800000, AX; VPBROADCASTD AX, Z20    // 1.0

// EXP replaces Z0 by exp(Z0); clobbers Z1-Z3. The clamps keep NaN (it is
// the second operand) and let VSCALEFPS produce inf, denormals and zero.
#define EXP \
	VMINPS Z0, Z31, Z0; \
	VMAXPS Z0, Z30, Z0; \
	VMULPS Z29, Z0, Z1; \
	VRNDSCALEPS $0, Z1, Z1; \
	VFNMADD231PS Z28, Z1, Z0; \
	VFNMADD231PS Z27, Z1, Z0; \
	VMOVAPS Z26, Z2; \
	VFMADD213PS Z25, Z0, Z2; \
	VFMADD213PS Z24, Z0, Z2; \
	VFMADD213PS Z23, Z0, Z2; \
	VFMADD213PS Z22, Z0, Z2; \
	VFMADD213PS Z21, Z0, Z2; \
	VMULPS Z0, Z0, Z3; \
	VFMADD231PS Z3, Z2, Z0; \
	VADDPS Z20, Z0, Z0; \
	VSCALEFPS Z1, Z0, Z0

// TAILMASK sets K1 to the low CX bits (CX < 16); clobbers AX.
#define TAILMASK \
	MOVL $1, AX; \
	SHLL CX, AX; \
	DECL AX; \
	KMOVW AX, K1

// func expVecAVX512(x *float32, n int, dst *float32)
TEXT ·expVecAVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), DX
	MOVQ dst+16(FP), DI
	EXP_CONSTS
	MOVQ DX, CX
	ANDQ $15, CX
	SHRQ $4, DX
	JZ exptail

exploop:
	VMOVUPS (SI), Z0
	EXP
	VMOVUPS Z0, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ DX
	JNZ exploop

exptail:
	TESTQ CX, CX
	JZ expdone
	TAILMASK
	VMOVUPS.Z (SI), K1, Z0
	EXP
	VMOVUPS Z0, K1, (DI)

expdone:
	VZEROUPPER
	RET

// func swigluVecAVX512(gate, u *float32, n int)
// g[i] = g[i]/(1+exp(-g[i]))·u[i].
TEXT ·swigluVecAVX512(SB), NOSPLIT, $0-24
	MOVQ gate+0(FP), DI
	MOVQ u+8(FP), SI
	MOVQ n+16(FP), DX
	EXP_CONSTS
	MOVQ DX, CX
	ANDQ $15, CX
	SHRQ $4, DX
	JZ sgtail

sgloop:
	VMOVUPS (DI), Z4
	VXORPS Z0, Z0, Z0
	VSUBPS Z4, Z0, Z0
	EXP
	VADDPS Z20, Z0, Z0
	VDIVPS Z0, Z4, Z4
	VMULPS (SI), Z4, Z4
	VMOVUPS Z4, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ DX
	JNZ sgloop

sgtail:
	TESTQ CX, CX
	JZ sgdone
	TAILMASK
	VMOVUPS.Z (DI), K1, Z4
	VMOVUPS.Z (SI), K1, Z5
	VXORPS Z0, Z0, Z0
	VSUBPS Z4, Z0, Z0
	EXP
	VADDPS Z20, Z0, Z0
	VDIVPS Z0, Z4, Z4
	VMULPS Z5, Z4, Z4
	VMOVUPS Z4, K1, (DI)

sgdone:
	VZEROUPPER
	RET

// func scaleMaxVecAVX512(s *float32, n int, scale float32) float32
// s[i] *= scale; returns the max (−inf for n = 0).
TEXT ·scaleMaxVecAVX512(SB), NOSPLIT, $0-28
	MOVQ s+0(FP), DI
	MOVQ n+8(FP), DX
	VBROADCASTSS scale+16(FP), Z5
	MOVL $0xff800000, AX
	VPBROADCASTD AX, Z6 // running max
	MOVQ DX, CX
	ANDQ $15, CX
	SHRQ $4, DX
	JZ smtail

smloop:
	VMULPS (DI), Z5, Z0
	VMOVUPS Z0, (DI)
	VMAXPS Z0, Z6, Z6
	ADDQ $64, DI
	DECQ DX
	JNZ smloop

smtail:
	TESTQ CX, CX
	JZ smreduce
	TAILMASK
	VMOVUPS.Z (DI), K1, Z0
	VMULPS Z5, Z0, Z0
	VMOVUPS Z0, K1, (DI)
	VMAXPS Z0, Z6, K1, Z6

smreduce:
	VEXTRACTF64X4 $1, Z6, Y1
	VMAXPS Y1, Y6, Y6
	VEXTRACTF128 $1, Y6, X1
	VMAXPS X1, X6, X6
	VPERMILPS $0x4e, X6, X1
	VMAXPS X1, X6, X6
	VPERMILPS $0xb1, X6, X1
	VMAXPS X1, X6, X6
	VMOVSS X6, ret+24(FP)
	VZEROUPPER
	RET

// func expSumVecAVX512(s *float32, n int, mx float32) float64
// s[i] = exp(s[i] − mx) in float32; returns Σ s[i] in float64.
TEXT ·expSumVecAVX512(SB), NOSPLIT, $0-32
	MOVQ s+0(FP), DI
	MOVQ n+8(FP), DX
	VBROADCASTSS mx+16(FP), Z5
	EXP_CONSTS
	VXORPD Z8, Z8, Z8
	VXORPD Z9, Z9, Z9
	MOVQ DX, CX
	ANDQ $15, CX
	SHRQ $4, DX
	JZ estail

esloop:
	VMOVUPS (DI), Z0
	VSUBPS Z5, Z0, Z0
	EXP
	VMOVUPS Z0, (DI)
	VCVTPS2PD Y0, Z6
	VEXTRACTF64X4 $1, Z0, Y7
	VCVTPS2PD Y7, Z7
	VADDPD Z6, Z8, Z8
	VADDPD Z7, Z9, Z9
	ADDQ $64, DI
	DECQ DX
	JNZ esloop

estail:
	TESTQ CX, CX
	JZ esreduce
	TAILMASK
	VMOVUPS.Z (DI), K1, Z0
	VSUBPS Z5, Z0, Z0
	EXP
	VMOVAPS.Z Z0, K1, Z0
	VMOVUPS Z0, K1, (DI)
	VCVTPS2PD Y0, Z6
	VEXTRACTF64X4 $1, Z0, Y7
	VCVTPS2PD Y7, Z7
	VADDPD Z6, Z8, Z8
	VADDPD Z7, Z9, Z9

esreduce:
	VADDPD Z9, Z8, Z8
	VEXTRACTF64X4 $1, Z8, Y9
	VADDPD Y9, Y8, Y8
	VEXTRACTF128 $1, Y8, X9
	VADDPD X9, X8, X8
	VPERMILPD $1, X8, X9
	VADDSD X9, X8, X8
	VMOVSD X8, ret+24(FP)
	VZEROUPPER
	RET

// func scaleVecAVX512(s *float32, n int, v float32)
TEXT ·scaleVecAVX512(SB), NOSPLIT, $0-20
	MOVQ s+0(FP), DI
	MOVQ n+8(FP), DX
	VBROADCASTSS v+16(FP), Z5
	MOVQ DX, CX
	ANDQ $15, CX
	SHRQ $4, DX
	JZ sctail

scloop:
	VMULPS (DI), Z5, Z0
	VMOVUPS Z0, (DI)
	ADDQ $64, DI
	DECQ DX
	JNZ scloop

sctail:
	TESTQ CX, CX
	JZ scdone
	TAILMASK
	VMOVUPS.Z (DI), K1, Z0
	VMULPS Z5, Z0, Z0
	VMOVUPS Z0, K1, (DI)

scdone:
	VZEROUPPER
	RET

// pickIota<> is the lane indices 0..15.
DATA pickIota<>+0(SB)/4, $0
DATA pickIota<>+4(SB)/4, $1
DATA pickIota<>+8(SB)/4, $2
DATA pickIota<>+12(SB)/4, $3
DATA pickIota<>+16(SB)/4, $4
DATA pickIota<>+20(SB)/4, $5
DATA pickIota<>+24(SB)/4, $6
DATA pickIota<>+28(SB)/4, $7
DATA pickIota<>+32(SB)/4, $8
DATA pickIota<>+36(SB)/4, $9
DATA pickIota<>+40(SB)/4, $10
DATA pickIota<>+44(SB)/4, $11
DATA pickIota<>+48(SB)/4, $12
DATA pickIota<>+52(SB)/4, $13
DATA pickIota<>+56(SB)/4, $14
DATA pickIota<>+60(SB)/4, $15
GLOBL pickIota<>(SB), RODATA|NOPTR, $64

// func pickMaxVecAVX512(row *float32, n int) (mx float32, argmax int)
// n ≥ 1. The max and the first index attaining it, ignoring NaNs (the
// caller checks the sum for NaN). Two sets of 16 lanes (even and odd
// vectors) each keep a running max and the index where it was first
// reached (strict compare); the answer is the smallest index among lanes
// holding the overall max.
TEXT ·pickMaxVecAVX512(SB), NOSPLIT, $0-32
	MOVQ row+0(FP), SI
	MOVQ n+8(FP), DX
	MOVL $0xff800000, AX
	VPBROADCASTD AX, Z4 // set A max
	VMOVAPS Z4, Z9      // set B max
	VMOVDQU32 pickIota<>(SB), Z6 // set A current indices
	MOVL $16, AX
	VPBROADCASTD AX, Z7
	VPADDD Z7, Z6, Z8   // set B current indices
	VPADDD Z7, Z7, Z7   // step 32
	VMOVDQA32 Z6, Z5    // set A argmax
	VMOVDQA32 Z8, Z10   // set B argmax
	MOVQ DX, CX
	ANDQ $31, CX
	SHRQ $5, DX
	JZ pmtail

pmloop:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VCMPPS $0x1e, Z4, Z0, K2
	VCMPPS $0x1e, Z9, Z1, K3
	VMOVAPS Z0, K2, Z4
	VMOVDQA32 Z6, K2, Z5
	VMOVAPS Z1, K3, Z9
	VMOVDQA32 Z8, K3, Z10
	VPADDD Z7, Z6, Z6
	VPADDD Z7, Z8, Z8
	ADDQ $128, SI
	DECQ DX
	JNZ pmloop

pmtail:
	CMPQ CX, $16
	JLT pmtail2
	VMOVUPS (SI), Z0
	VCMPPS $0x1e, Z4, Z0, K2
	VMOVAPS Z0, K2, Z4
	VMOVDQA32 Z6, K2, Z5
	VMOVDQA32 Z8, Z6 // the next vector's indices are set B's
	ADDQ $64, SI
	SUBQ $16, CX

pmtail2:
	TESTQ CX, CX
	JZ pmreduce
	TAILMASK
	VMOVUPS.Z (SI), K1, Z0
	VCMPPS $0x1e, Z4, Z0, K1, K2
	VMOVAPS Z0, K2, Z4
	VMOVDQA32 Z6, K2, Z5

pmreduce:
	VMAXPS Z9, Z4, Z11
	VEXTRACTF64X4 $1, Z11, Y1
	VMAXPS Y1, Y11, Y11
	VEXTRACTF128 $1, Y11, X1
	VMAXPS X1, X11, X11
	VPERMILPS $0x4e, X11, X1
	VMAXPS X1, X11, X11
	VPERMILPS $0xb1, X11, X1
	VMAXPS X1, X11, X11
	VMOVSS X11, mx+16(FP)
	VBROADCASTSS X11, Z11
	VCMPPS $0, Z11, Z4, K2  // lanes of A holding the max
	VCMPPS $0, Z11, Z9, K3  // lanes of B holding the max
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z12
	VMOVDQA32 Z5, K2, Z12
	VPMINSD Z10, Z12, K3, Z12
	VEXTRACTI64X4 $1, Z12, Y1
	VPMINSD Y1, Y12, Y12
	VEXTRACTI128 $1, Y12, X1
	VPMINSD X1, X12, X12
	VPSHUFD $0x4e, X12, X1
	VPMINSD X1, X12, X12
	VPSHUFD $0xb1, X12, X1
	VPMINSD X1, X12, X12
	VMOVD X12, AX
	MOVQ AX, argmax+24(FP)
	VZEROUPPER
	RET

// func pickSumVecAVX512(row *float32, n int, mx float32) float64
// Σ f64(exp(row[i] − mx)) with the vector exp, summed in expSumVecAVX512's
// lane order; row is only read.
TEXT ·pickSumVecAVX512(SB), NOSPLIT, $0-32
	MOVQ row+0(FP), DI
	MOVQ n+8(FP), DX
	VBROADCASTSS mx+16(FP), Z5
	EXP_CONSTS
	VXORPD Z8, Z8, Z8
	VXORPD Z9, Z9, Z9
	MOVQ DX, CX
	ANDQ $15, CX
	SHRQ $4, DX
	JZ pstail

psloop:
	VMOVUPS (DI), Z0
	VSUBPS Z5, Z0, Z0
	EXP
	VCVTPS2PD Y0, Z6
	VEXTRACTF64X4 $1, Z0, Y7
	VCVTPS2PD Y7, Z7
	VADDPD Z6, Z8, Z8
	VADDPD Z7, Z9, Z9
	ADDQ $64, DI
	DECQ DX
	JNZ psloop

pstail:
	TESTQ CX, CX
	JZ psreduce
	TAILMASK
	VMOVUPS.Z (DI), K1, Z0
	VSUBPS Z5, Z0, Z0
	EXP
	VMOVAPS.Z Z0, K1, Z0
	VCVTPS2PD Y0, Z6
	VEXTRACTF64X4 $1, Z0, Y7
	VCVTPS2PD Y7, Z7
	VADDPD Z6, Z8, Z8
	VADDPD Z7, Z9, Z9

psreduce:
	VADDPD Z9, Z8, Z8
	VEXTRACTF64X4 $1, Z8, Y9
	VADDPD Y9, Y8, Y8
	VEXTRACTF128 $1, Y8, X9
	VADDPD X9, X8, X8
	VPERMILPD $1, X8, X9
	VADDSD X9, X8, X8
	VMOVSD X8, ret+24(FP)
	VZEROUPPER
	RET
