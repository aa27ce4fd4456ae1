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

// func expAVX512(x *float32, n int, dst *float32)
TEXT ·expAVX512(SB), NOSPLIT, $0-24
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

// func swigluAVX512(gate, u *float32, n int)
// g[i] = g[i]/(1+exp(-g[i]))·u[i].
TEXT ·swigluAVX512(SB), NOSPLIT, $0-24
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

// func scaleMaxAVX512(s *float32, n int, scale float32) float32
// s[i] *= scale; returns the max (−inf for n = 0).
TEXT ·scaleMaxAVX512(SB), NOSPLIT, $0-28
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

// func expSumAVX512(s *float32, n int, mx float32) float64
// s[i] = exp(s[i] − mx) in float32; returns Σ s[i] in float64.
TEXT ·expSumAVX512(SB), NOSPLIT, $0-32
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

// func scaleAVX512(s *float32, n int, v float32)
TEXT ·scaleAVX512(SB), NOSPLIT, $0-20
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
