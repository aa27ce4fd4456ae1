//go:build !purego

// This file owns the AVX2 (256-bit, FMA) twins of ops_amd64.s: the vector
// exp, SwiGLU, the three softmax passes and the logit-row max/argmax and
// Σ exp. They compute exactly what expGo, swigluTwin, softmaxTwin,
// expSumTwin, scaleMaxTwin and pickMaxSumTwin compute, bit for bit: the
// float64 sums keep the 16-lane order (two 8-float vectors per step, four
// float64 accumulator vectors), and tails use VMASKMOVPS, so nothing
// outside [0, n) is read or written.

#include "textflag.h"

// avx2k<> holds the constants, each repeated in a 32-byte row.
DATA avx2k<>+0(SB)/8, $0x3fb8aa3b3fb8aa3b // log2(e)
DATA avx2k<>+8(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA avx2k<>+16(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA avx2k<>+24(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA avx2k<>+32(SB)/8, $0x3f3180003f318000 // c1
DATA avx2k<>+40(SB)/8, $0x3f3180003f318000
DATA avx2k<>+48(SB)/8, $0x3f3180003f318000
DATA avx2k<>+56(SB)/8, $0x3f3180003f318000
DATA avx2k<>+64(SB)/8, $0xb95e8083b95e8083 // c2
DATA avx2k<>+72(SB)/8, $0xb95e8083b95e8083
DATA avx2k<>+80(SB)/8, $0xb95e8083b95e8083
DATA avx2k<>+88(SB)/8, $0xb95e8083b95e8083
DATA avx2k<>+96(SB)/8, $0x3950696739506967 // p0
DATA avx2k<>+104(SB)/8, $0x3950696739506967
DATA avx2k<>+112(SB)/8, $0x3950696739506967
DATA avx2k<>+120(SB)/8, $0x3950696739506967
DATA avx2k<>+128(SB)/8, $0x3ab743ce3ab743ce // p1
DATA avx2k<>+136(SB)/8, $0x3ab743ce3ab743ce
DATA avx2k<>+144(SB)/8, $0x3ab743ce3ab743ce
DATA avx2k<>+152(SB)/8, $0x3ab743ce3ab743ce
DATA avx2k<>+160(SB)/8, $0x3c0889083c088908 // p2
DATA avx2k<>+168(SB)/8, $0x3c0889083c088908
DATA avx2k<>+176(SB)/8, $0x3c0889083c088908
DATA avx2k<>+184(SB)/8, $0x3c0889083c088908
DATA avx2k<>+192(SB)/8, $0x3d2aa9c13d2aa9c1 // p3
DATA avx2k<>+200(SB)/8, $0x3d2aa9c13d2aa9c1
DATA avx2k<>+208(SB)/8, $0x3d2aa9c13d2aa9c1
DATA avx2k<>+216(SB)/8, $0x3d2aa9c13d2aa9c1
DATA avx2k<>+224(SB)/8, $0x3e2aaaaa3e2aaaaa // p4
DATA avx2k<>+232(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA avx2k<>+240(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA avx2k<>+248(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA avx2k<>+256(SB)/8, $0x3f0000003f000000 // p5
DATA avx2k<>+264(SB)/8, $0x3f0000003f000000
DATA avx2k<>+272(SB)/8, $0x3f0000003f000000
DATA avx2k<>+280(SB)/8, $0x3f0000003f000000
DATA avx2k<>+288(SB)/8, $0x3f8000003f800000 // 1.0
DATA avx2k<>+296(SB)/8, $0x3f8000003f800000
DATA avx2k<>+304(SB)/8, $0x3f8000003f800000
DATA avx2k<>+312(SB)/8, $0x3f8000003f800000
DATA avx2k<>+320(SB)/8, $0x0000007f0000007f // 127
DATA avx2k<>+328(SB)/8, $0x0000007f0000007f
DATA avx2k<>+336(SB)/8, $0x0000007f0000007f
DATA avx2k<>+344(SB)/8, $0x0000007f0000007f
DATA avx2k<>+352(SB)/8, $0x8000000080000000 // sign
DATA avx2k<>+360(SB)/8, $0x8000000080000000
DATA avx2k<>+368(SB)/8, $0x8000000080000000
DATA avx2k<>+376(SB)/8, $0x8000000080000000
DATA avx2k<>+384(SB)/8, $0x42b2000042b20000 // 89.0
DATA avx2k<>+392(SB)/8, $0x42b2000042b20000
DATA avx2k<>+400(SB)/8, $0x42b2000042b20000
DATA avx2k<>+408(SB)/8, $0x42b2000042b20000
DATA avx2k<>+416(SB)/8, $0xc2d00000c2d00000 // -104.0
DATA avx2k<>+424(SB)/8, $0xc2d00000c2d00000
DATA avx2k<>+432(SB)/8, $0xc2d00000c2d00000
DATA avx2k<>+440(SB)/8, $0xc2d00000c2d00000
DATA avx2k<>+448(SB)/8, $0xff800000ff800000 // -inf
DATA avx2k<>+456(SB)/8, $0xff800000ff800000
DATA avx2k<>+464(SB)/8, $0xff800000ff800000
DATA avx2k<>+472(SB)/8, $0xff800000ff800000
GLOBL avx2k<>(SB), RODATA|NOPTR, $480

DATA avx2tail<>+0(SB)/8, $0xffffffffffffffff
DATA avx2tail<>+8(SB)/8, $0xffffffffffffffff
DATA avx2tail<>+16(SB)/8, $0xffffffffffffffff
DATA avx2tail<>+24(SB)/8, $0xffffffffffffffff
DATA avx2tail<>+32(SB)/8, $0xffffffffffffffff
DATA avx2tail<>+40(SB)/8, $0xffffffffffffffff
DATA avx2tail<>+48(SB)/8, $0xffffffffffffffff
DATA avx2tail<>+56(SB)/8, $0xffffffffffffffff
DATA avx2tail<>+64(SB)/8, $0x0000000000000000
DATA avx2tail<>+72(SB)/8, $0x0000000000000000
DATA avx2tail<>+80(SB)/8, $0x0000000000000000
DATA avx2tail<>+88(SB)/8, $0x0000000000000000
DATA avx2tail<>+96(SB)/8, $0x0000000000000000
DATA avx2tail<>+104(SB)/8, $0x0000000000000000
DATA avx2tail<>+112(SB)/8, $0x0000000000000000
DATA avx2tail<>+120(SB)/8, $0x0000000000000000
GLOBL avx2tail<>(SB), RODATA|NOPTR, $128

#define K_LOG2E avx2k<>+0(SB)
#define K_C1 avx2k<>+32(SB)
#define K_C2 avx2k<>+64(SB)
#define K_P0 avx2k<>+96(SB)
#define K_P1 avx2k<>+128(SB)
#define K_P2 avx2k<>+160(SB)
#define K_P3 avx2k<>+192(SB)
#define K_P4 avx2k<>+224(SB)
#define K_P5 avx2k<>+256(SB)
#define K_ONE avx2k<>+288(SB)
#define K_BIAS avx2k<>+320(SB)
#define K_SIGN avx2k<>+352(SB)
#define K_HI avx2k<>+384(SB)
#define K_LO avx2k<>+416(SB)
#define K_NEGINF avx2k<>+448(SB)

// EXP2 replaces A and B by exp(A) and exp(B) as expGo computes it (the two
// chains interleaved); NA, PA, TA and NB, PB, TB are scratch, Y15 and Y14
// must hold the clamps 89 and −104. A NaN is the second operand of the
// clamps, so it passes through. With no VSCALEFPS, y·2^n is built as
// (y·2^n1)·2^n2 with n1 = n>>1 and n2 = n − n1 (both in [−75, 64]): the
// first step adds n1 to y's exponent field (exact, y is near 1), the
// second multiplies by a normal power of two and rounds once, so
// denormal results and the overflow at n = 128 come out as in expGo's
// math.Ldexp.
#define EXP2(A, NA, PA, TA, B, NB, PB, TB) \
	VMINPS A, Y15, A; \
	VMINPS B, Y15, B; \
	VMAXPS A, Y14, A; \
	VMAXPS B, Y14, B; \
	VMULPS K_LOG2E, A, NA; \
	VMULPS K_LOG2E, B, NB; \
	VROUNDPS $0, NA, NA; \
	VROUNDPS $0, NB, NB; \
	VFNMADD231PS K_C1, NA, A; \
	VFNMADD231PS K_C1, NB, B; \
	VFNMADD231PS K_C2, NA, A; \
	VFNMADD231PS K_C2, NB, B; \
	VMOVUPS K_P0, PA; \
	VMOVUPS K_P0, PB; \
	VFMADD213PS K_P1, A, PA; \
	VFMADD213PS K_P1, B, PB; \
	VFMADD213PS K_P2, A, PA; \
	VFMADD213PS K_P2, B, PB; \
	VFMADD213PS K_P3, A, PA; \
	VFMADD213PS K_P3, B, PB; \
	VFMADD213PS K_P4, A, PA; \
	VFMADD213PS K_P4, B, PB; \
	VFMADD213PS K_P5, A, PA; \
	VFMADD213PS K_P5, B, PB; \
	VMULPS A, A, TA; \
	VMULPS B, B, TB; \
	VFMADD231PS TA, PA, A; \
	VFMADD231PS TB, PB, B; \
	VADDPS K_ONE, A, A; \
	VADDPS K_ONE, B, B; \
	VCVTPS2DQ NA, NA; \
	VCVTPS2DQ NB, NB; \
	VPSRAD $1, NA, TA; \
	VPSRAD $1, NB, TB; \
	VPSUBD TA, NA, NA; \
	VPSUBD TB, NB, NB; \
	VPSLLD $23, TA, TA; \
	VPSLLD $23, TB, TB; \
	VPADDD TA, A, A; \
	VPADDD TB, B, B; \
	VPADDD K_BIAS, NA, NA; \
	VPADDD K_BIAS, NB, NB; \
	VPSLLD $23, NA, NA; \
	VPSLLD $23, NB, NB; \
	VMULPS NA, A, A; \
	VMULPS NB, B, B

// CLAMPS loads the clamps EXP2 needs.
#define CLAMPS \
	VMOVUPS K_HI, Y15; \
	VMOVUPS K_LO, Y14

// TAILPTR points R8 at the mask pair for CX (1..15) leftover floats:
// (R8) has the first CX lanes of the first vector set, 32(R8) the first
// CX−8 of the second; clobbers AX.
#define TAILPTR \
	LEAQ avx2tail<>+64(SB), R8; \
	MOVQ CX, AX; \
	SHLQ $2, AX; \
	SUBQ AX, R8

// ACCUM adds the eight floats of YA (and YB), widened to float64, to the
// lane accumulators Y8, Y9 (and Y10, Y11); XA, XB name the low halves,
// and T1, T2 are scratch.
#define ACCUM(XA, YA, XB, YB, T1, XT2, T2) \
	VCVTPS2PD XA, T1; \
	VEXTRACTF128 $1, YA, XT2; \
	VADDPD T1, Y8, Y8; \
	VCVTPS2PD XT2, T2; \
	VADDPD T2, Y9, Y9; \
	VCVTPS2PD XB, T1; \
	VEXTRACTF128 $1, YB, XT2; \
	VADDPD T1, Y10, Y10; \
	VCVTPS2PD XT2, T2; \
	VADDPD T2, Y11, Y11

// FOLDSUM folds the lane accumulators as expSumTwin does (lane l with
// l+8, then l with l+4, then (0+2)+(1+3)) into X8.
#define FOLDSUM \
	VADDPD Y10, Y8, Y8; \
	VADDPD Y11, Y9, Y9; \
	VADDPD Y9, Y8, Y8; \
	VEXTRACTF128 $1, Y8, X9; \
	VADDPD X9, X8, X8; \
	VPERMILPD $1, X8, X9; \
	VADDSD X9, X8, X8

// GOMAX sets ACC to Go's max(ACC, X) for non-NaN lanes (+0 above −0);
// VMAXPS returns its second source on ties, so the AND of both orders
// keeps +0. NaNs are tracked apart. T1, T2 are scratch.
#define GOMAX(X, ACC, T1, T2) \
	VMAXPS X, ACC, T1; \
	VMAXPS ACC, X, T2; \
	VANDPS T2, T1, ACC

// func expVecAVX2(x *float32, n int, dst *float32)
// dst[i] = expGo(x[i]).
TEXT ·expVecAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), DX
	MOVQ dst+16(FP), DI
	CLAMPS
	MOVQ DX, CX
	ANDQ $15, CX
	SHRQ $4, DX
	JZ exptail

exploop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y4
	EXP2(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	VMOVUPS Y0, (DI)
	VMOVUPS Y4, 32(DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ DX
	JNZ exploop

exptail:
	TESTQ CX, CX
	JZ expdone
	TAILPTR
	VMOVUPS (R8), Y12
	VMOVUPS 32(R8), Y13
	VMASKMOVPS (SI), Y12, Y0
	VMASKMOVPS 32(SI), Y13, Y4
	EXP2(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	VMASKMOVPS Y0, Y12, (DI)
	VMASKMOVPS Y4, Y13, 32(DI)

expdone:
	VZEROUPPER
	RET

// func swigluVecAVX2(gate, u *float32, n int)
// g[i] = g[i]/(expGo(−g[i])+1)·u[i].
TEXT ·swigluVecAVX2(SB), NOSPLIT, $0-24
	MOVQ gate+0(FP), DI
	MOVQ u+8(FP), SI
	MOVQ n+16(FP), DX
	CLAMPS
	MOVQ DX, CX
	ANDQ $15, CX
	SHRQ $4, DX
	JZ sgtail

sgloop:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y5
	VXORPS K_SIGN, Y0, Y1
	VXORPS K_SIGN, Y5, Y6
	EXP2(Y1, Y2, Y3, Y4, Y6, Y7, Y8, Y9)
	VADDPS K_ONE, Y1, Y1
	VADDPS K_ONE, Y6, Y6
	VDIVPS Y1, Y0, Y0
	VDIVPS Y6, Y5, Y5
	VMULPS (SI), Y0, Y0
	VMULPS 32(SI), Y5, Y5
	VMOVUPS Y0, (DI)
	VMOVUPS Y5, 32(DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ DX
	JNZ sgloop

sgtail:
	TESTQ CX, CX
	JZ sgdone
	TAILPTR
	VMOVUPS (R8), Y12
	VMOVUPS 32(R8), Y13
	VMASKMOVPS (DI), Y12, Y0
	VMASKMOVPS 32(DI), Y13, Y5
	VXORPS K_SIGN, Y0, Y1
	VXORPS K_SIGN, Y5, Y6
	EXP2(Y1, Y2, Y3, Y4, Y6, Y7, Y8, Y9)
	VADDPS K_ONE, Y1, Y1
	VADDPS K_ONE, Y6, Y6
	VDIVPS Y1, Y0, Y0
	VDIVPS Y6, Y5, Y5
	VMASKMOVPS (SI), Y12, Y2
	VMASKMOVPS 32(SI), Y13, Y7
	VMULPS Y2, Y0, Y0
	VMULPS Y7, Y5, Y5
	VMASKMOVPS Y0, Y12, (DI)
	VMASKMOVPS Y5, Y13, 32(DI)

sgdone:
	VZEROUPPER
	RET

// func scaleMaxVecAVX2(s *float32, n int, scale float32) float32
// s[i] *= scale; returns Go's max of them (NaN if any is NaN, −Inf for
// n = 0).
TEXT ·scaleMaxVecAVX2(SB), NOSPLIT, $0-28
	MOVQ s+0(FP), DI
	MOVQ n+8(FP), DX
	VBROADCASTSS scale+16(FP), Y5
	VMOVUPS K_NEGINF, Y6 // running max, even vectors
	VMOVUPS Y6, Y7       // odd vectors
	VXORPS Y8, Y8, Y8    // NaN seen (per lane)
	MOVQ DX, CX
	ANDQ $15, CX
	SHRQ $4, DX
	JZ smtail

smloop:
	VMULPS (DI), Y5, Y0
	VMULPS 32(DI), Y5, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VCMPPS $3, Y1, Y0, Y2
	VORPS Y2, Y8, Y8
	GOMAX(Y0, Y6, Y2, Y3)
	GOMAX(Y1, Y7, Y4, Y9)
	ADDQ $64, DI
	DECQ DX
	JNZ smloop

smtail:
	TESTQ CX, CX
	JZ smreduce
	TAILPTR
	VMOVUPS (R8), Y12
	VMOVUPS 32(R8), Y13
	VMASKMOVPS (DI), Y12, Y0
	VMASKMOVPS 32(DI), Y13, Y1
	VMULPS Y5, Y0, Y0
	VMULPS Y5, Y1, Y1
	VMASKMOVPS Y0, Y12, (DI)
	VMASKMOVPS Y1, Y13, 32(DI)
	VMOVUPS K_NEGINF, Y10
	VBLENDVPS Y12, Y0, Y10, Y0 // lanes past n: −Inf
	VBLENDVPS Y13, Y1, Y10, Y1
	VCMPPS $3, Y1, Y0, Y2
	VORPS Y2, Y8, Y8
	GOMAX(Y0, Y6, Y2, Y3)
	GOMAX(Y1, Y7, Y4, Y9)

smreduce:
	GOMAX(Y7, Y6, Y2, Y3)
	VEXTRACTF128 $1, Y6, X1
	GOMAX(X1, X6, X2, X3)
	VPERMILPS $0x4e, X6, X1
	GOMAX(X1, X6, X2, X3)
	VPERMILPS $0xb1, X6, X1
	GOMAX(X1, X6, X2, X3)
	VMOVMSKPS Y8, AX
	TESTL AX, AX
	JZ smdone
	MOVL $0x7fc00000, AX
	VMOVD AX, X6

smdone:
	VMOVSS X6, ret+24(FP)
	VZEROUPPER
	RET

// func expSumVecAVX2(s *float32, n int, mx float32) float64
// s[i] = expGo(s[i] − mx); returns their float64 sum in expSumTwin's
// lane order.
TEXT ·expSumVecAVX2(SB), NOSPLIT, $0-32
	MOVQ s+0(FP), DI
	MOVQ n+8(FP), DX
	VBROADCASTSS mx+16(FP), Y12
	CLAMPS
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11
	MOVQ DX, CX
	ANDQ $15, CX
	SHRQ $4, DX
	JZ estail

esloop:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y4
	VSUBPS Y12, Y0, Y0
	VSUBPS Y12, Y4, Y4
	EXP2(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	VMOVUPS Y0, (DI)
	VMOVUPS Y4, 32(DI)
	ACCUM(X0, Y0, X4, Y4, Y1, X2, Y2)
	ADDQ $64, DI
	DECQ DX
	JNZ esloop

estail:
	TESTQ CX, CX
	JZ esreduce
	TAILPTR
	VMOVUPS (R8), Y1
	VMOVUPS 32(R8), Y5
	VMASKMOVPS (DI), Y1, Y0
	VMASKMOVPS 32(DI), Y5, Y4
	VSUBPS Y12, Y0, Y0
	VSUBPS Y12, Y4, Y4
	EXP2(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	VANDPS (R8), Y0, Y0 // lanes past n add +0
	VANDPS 32(R8), Y4, Y4
	VMOVUPS (R8), Y1
	VMOVUPS 32(R8), Y5
	VMASKMOVPS Y0, Y1, (DI)
	VMASKMOVPS Y4, Y5, 32(DI)
	ACCUM(X0, Y0, X4, Y4, Y1, X2, Y2)

esreduce:
	FOLDSUM
	VMOVSD X8, ret+24(FP)
	VZEROUPPER
	RET

// func scaleVecAVX2(s *float32, n int, v float32)
// s[i] *= v.
TEXT ·scaleVecAVX2(SB), NOSPLIT, $0-20
	MOVQ s+0(FP), DI
	MOVQ n+8(FP), DX
	VBROADCASTSS v+16(FP), Y5
	MOVQ DX, CX
	ANDQ $31, CX
	SHRQ $5, DX
	JZ sctail

scloop:
	VMULPS (DI), Y5, Y0
	VMULPS 32(DI), Y5, Y1
	VMULPS 64(DI), Y5, Y2
	VMULPS 96(DI), Y5, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	DECQ DX
	JNZ scloop

sctail:
	CMPQ CX, $16
	JLT sctail2
	VMULPS (DI), Y5, Y0
	VMULPS 32(DI), Y5, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $64, DI
	SUBQ $16, CX

sctail2:
	TESTQ CX, CX
	JZ scdone
	TAILPTR
	VMOVUPS (R8), Y12
	VMOVUPS 32(R8), Y13
	VMASKMOVPS (DI), Y12, Y0
	VMASKMOVPS 32(DI), Y13, Y1
	VMULPS Y5, Y0, Y0
	VMULPS Y5, Y1, Y1
	VMASKMOVPS Y0, Y12, (DI)
	VMASKMOVPS Y1, Y13, 32(DI)

scdone:
	VZEROUPPER
	RET

// func pickMaxVecAVX2(row *float32, n int) (mx float32, argmax int)
// n ≥ 1. pickMaxSumTwin's max: the first index of the largest non-NaN
// value and that value (−Inf and 0 when there is none). A first pass
// takes the max with VMAXPS's second operand the accumulator, so NaNs are
// skipped; a second finds the first element equal to it (±0 compare
// equal, and the element itself gives the sign).
TEXT ·pickMaxVecAVX2(SB), NOSPLIT, $0-32
	MOVQ row+0(FP), SI
	MOVQ n+8(FP), DX
	VMOVUPS K_NEGINF, Y4
	VMOVUPS Y4, Y5
	VMOVUPS Y4, Y6
	VMOVUPS Y4, Y7
	MOVQ SI, DI
	MOVQ DX, CX
	SHRQ $5, CX
	JZ p1rest

p1loop:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMAXPS Y4, Y0, Y4
	VMAXPS Y5, Y1, Y5
	VMAXPS Y6, Y2, Y6
	VMAXPS Y7, Y3, Y7
	ADDQ $128, DI
	DECQ CX
	JNZ p1loop

p1rest:
	MOVQ DX, CX
	ANDQ $31, CX

p1vec:
	CMPQ CX, $8
	JLT p1mask
	VMOVUPS (DI), Y0
	VMAXPS Y4, Y0, Y4
	ADDQ $32, DI
	SUBQ $8, CX
	JMP p1vec

p1mask:
	TESTQ CX, CX
	JZ p1reduce
	TAILPTR
	VMOVUPS (R8), Y1
	VMASKMOVPS (DI), Y1, Y0
	VMOVUPS K_NEGINF, Y2
	VBLENDVPS Y1, Y0, Y2, Y0
	VMAXPS Y5, Y0, Y5

p1reduce:
	VMAXPS Y5, Y4, Y4
	VMAXPS Y7, Y6, Y6
	VMAXPS Y6, Y4, Y4
	VEXTRACTF128 $1, Y4, X1
	VMAXPS X1, X4, X4
	VPERMILPS $0x4e, X4, X1
	VMAXPS X1, X4, X4
	VPERMILPS $0xb1, X4, X1
	VMAXPS X1, X4, X4
	VMOVD X4, AX
	CMPL AX, $0xff800000
	JEQ pmnone
	VBROADCASTSS X4, Y4
	MOVQ SI, DI
	MOVQ DX, CX
	SHRQ $5, CX
	JZ p2rest

p2loop:
	VCMPPS $0, (DI), Y4, Y0
	VCMPPS $0, 32(DI), Y4, Y1
	VCMPPS $0, 64(DI), Y4, Y2
	VCMPPS $0, 96(DI), Y4, Y3
	VORPS Y1, Y0, Y8
	VORPS Y3, Y2, Y9
	VORPS Y9, Y8, Y8
	VMOVMSKPS Y8, AX
	TESTL AX, AX
	JNZ p2found32
	ADDQ $128, DI
	DECQ CX
	JNZ p2loop

p2rest:
	MOVQ DX, CX
	ANDQ $31, CX

p2vec:
	CMPQ CX, $8
	JLT p2mask
	VCMPPS $0, (DI), Y4, Y0
	VMOVMSKPS Y0, AX
	TESTL AX, AX
	JNZ p2found
	ADDQ $32, DI
	SUBQ $8, CX
	JMP p2vec

p2mask:
	TESTQ CX, CX
	JZ pmnone
	TAILPTR
	VMOVUPS (R8), Y1
	VMASKMOVPS (DI), Y1, Y0
	VCMPPS $0, Y0, Y4, Y0
	VANDPS Y1, Y0, Y0
	VMOVMSKPS Y0, AX
	TESTL AX, AX
	JNZ p2found
	JMP pmnone

p2found32:
	VMOVMSKPS Y0, AX
	VMOVMSKPS Y1, BX
	SHLL $8, BX
	ORL BX, AX
	VMOVMSKPS Y2, BX
	SHLL $16, BX
	ORL BX, AX
	VMOVMSKPS Y3, BX
	SHLL $24, BX
	ORL BX, AX

p2found:
	BSFL AX, AX
	SUBQ SI, DI
	SHRQ $2, DI
	ADDQ AX, DI
	MOVL (SI)(DI*4), AX
	MOVL AX, mx+16(FP)
	MOVQ DI, argmax+24(FP)
	VZEROUPPER
	RET

pmnone:
	MOVL $0xff800000, AX
	MOVL AX, mx+16(FP)
	MOVQ $0, argmax+24(FP)
	VZEROUPPER
	RET

// func pickSumVecAVX2(row *float32, n int, mx float32) float64
// Σ f64(expGo(row[i] − mx)) in expSumTwin's lane order; row is only read.
TEXT ·pickSumVecAVX2(SB), NOSPLIT, $0-32
	MOVQ row+0(FP), DI
	MOVQ n+8(FP), DX
	VBROADCASTSS mx+16(FP), Y12
	CLAMPS
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11
	MOVQ DX, CX
	ANDQ $15, CX
	SHRQ $4, DX
	JZ pstail

psloop:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y4
	VSUBPS Y12, Y0, Y0
	VSUBPS Y12, Y4, Y4
	EXP2(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	ACCUM(X0, Y0, X4, Y4, Y1, X2, Y2)
	ADDQ $64, DI
	DECQ DX
	JNZ psloop

pstail:
	TESTQ CX, CX
	JZ psreduce
	TAILPTR
	VMOVUPS (R8), Y1
	VMOVUPS 32(R8), Y5
	VMASKMOVPS (DI), Y1, Y0
	VMASKMOVPS 32(DI), Y5, Y4
	VSUBPS Y12, Y0, Y0
	VSUBPS Y12, Y4, Y4
	EXP2(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	VANDPS (R8), Y0, Y0 // lanes past n add +0
	VANDPS 32(R8), Y4, Y4
	ACCUM(X0, Y0, X4, Y4, Y1, X2, Y2)

psreduce:
	FOLDSUM
	VMOVSD X8, ret+24(FP)
	VZEROUPPER
	RET
