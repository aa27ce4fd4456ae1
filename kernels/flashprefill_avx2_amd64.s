//go:build !purego

#include "textflag.h"

// This file owns the AVX2 block scores of FlashPrefill V2
// (flashprefill_avx2_amd64.go), bit for bit the Go definitions in
// flashprefill.go: FlashPrefillDot's eight float64 lanes as two 4-lane
// registers (lane l takes i ≡ l mod 8; a product of two float32s is exact
// in float64, so VFMADD231PD is the twin's product and add) reduced as
// ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)), and FlashPrefillExp four lanes at a
// time with the twin's FMAs in the twin's order.

// fpMask<>: 8 all-ones int32 then 8 zeros; the 8 lanes from
// fpMask<>+32−4r select the first r lanes.
DATA fpMask<>+0(SB)/8, $0xffffffffffffffff
DATA fpMask<>+8(SB)/8, $0xffffffffffffffff
DATA fpMask<>+16(SB)/8, $0xffffffffffffffff
DATA fpMask<>+24(SB)/8, $0xffffffffffffffff
DATA fpMask<>+32(SB)/8, $0
DATA fpMask<>+40(SB)/8, $0
DATA fpMask<>+48(SB)/8, $0
DATA fpMask<>+56(SB)/8, $0
GLOBL fpMask<>(SB), RODATA|NOPTR, $64

// fpExpC<>: FlashPrefillExp's constants, each in four lanes (32 bytes):
// 1/13! … 1/2!, 1, 1 (the Horner coefficients, offsets 0–416), log2 e
// (448), ln 2 high (480) and low (512), −708 (544), 709 (576), +Inf (608),
// and the int64 exponent bias 1023 (640).
DATA fpExpC<>+0(SB)/8, $0x3de6124613a86d09
DATA fpExpC<>+8(SB)/8, $0x3de6124613a86d09
DATA fpExpC<>+16(SB)/8, $0x3de6124613a86d09
DATA fpExpC<>+24(SB)/8, $0x3de6124613a86d09
DATA fpExpC<>+32(SB)/8, $0x3e21eed8eff8d898
DATA fpExpC<>+40(SB)/8, $0x3e21eed8eff8d898
DATA fpExpC<>+48(SB)/8, $0x3e21eed8eff8d898
DATA fpExpC<>+56(SB)/8, $0x3e21eed8eff8d898
DATA fpExpC<>+64(SB)/8, $0x3e5ae64567f544e4
DATA fpExpC<>+72(SB)/8, $0x3e5ae64567f544e4
DATA fpExpC<>+80(SB)/8, $0x3e5ae64567f544e4
DATA fpExpC<>+88(SB)/8, $0x3e5ae64567f544e4
DATA fpExpC<>+96(SB)/8, $0x3e927e4fb7789f5c
DATA fpExpC<>+104(SB)/8, $0x3e927e4fb7789f5c
DATA fpExpC<>+112(SB)/8, $0x3e927e4fb7789f5c
DATA fpExpC<>+120(SB)/8, $0x3e927e4fb7789f5c
DATA fpExpC<>+128(SB)/8, $0x3ec71de3a556c734
DATA fpExpC<>+136(SB)/8, $0x3ec71de3a556c734
DATA fpExpC<>+144(SB)/8, $0x3ec71de3a556c734
DATA fpExpC<>+152(SB)/8, $0x3ec71de3a556c734
DATA fpExpC<>+160(SB)/8, $0x3efa01a01a01a01a
DATA fpExpC<>+168(SB)/8, $0x3efa01a01a01a01a
DATA fpExpC<>+176(SB)/8, $0x3efa01a01a01a01a
DATA fpExpC<>+184(SB)/8, $0x3efa01a01a01a01a
DATA fpExpC<>+192(SB)/8, $0x3f2a01a01a01a01a
DATA fpExpC<>+200(SB)/8, $0x3f2a01a01a01a01a
DATA fpExpC<>+208(SB)/8, $0x3f2a01a01a01a01a
DATA fpExpC<>+216(SB)/8, $0x3f2a01a01a01a01a
DATA fpExpC<>+224(SB)/8, $0x3f56c16c16c16c17
DATA fpExpC<>+232(SB)/8, $0x3f56c16c16c16c17
DATA fpExpC<>+240(SB)/8, $0x3f56c16c16c16c17
DATA fpExpC<>+248(SB)/8, $0x3f56c16c16c16c17
DATA fpExpC<>+256(SB)/8, $0x3f81111111111111
DATA fpExpC<>+264(SB)/8, $0x3f81111111111111
DATA fpExpC<>+272(SB)/8, $0x3f81111111111111
DATA fpExpC<>+280(SB)/8, $0x3f81111111111111
DATA fpExpC<>+288(SB)/8, $0x3fa5555555555555
DATA fpExpC<>+296(SB)/8, $0x3fa5555555555555
DATA fpExpC<>+304(SB)/8, $0x3fa5555555555555
DATA fpExpC<>+312(SB)/8, $0x3fa5555555555555
DATA fpExpC<>+320(SB)/8, $0x3fc5555555555555
DATA fpExpC<>+328(SB)/8, $0x3fc5555555555555
DATA fpExpC<>+336(SB)/8, $0x3fc5555555555555
DATA fpExpC<>+344(SB)/8, $0x3fc5555555555555
DATA fpExpC<>+352(SB)/8, $0x3fe0000000000000
DATA fpExpC<>+360(SB)/8, $0x3fe0000000000000
DATA fpExpC<>+368(SB)/8, $0x3fe0000000000000
DATA fpExpC<>+376(SB)/8, $0x3fe0000000000000
DATA fpExpC<>+384(SB)/8, $0x3ff0000000000000
DATA fpExpC<>+392(SB)/8, $0x3ff0000000000000
DATA fpExpC<>+400(SB)/8, $0x3ff0000000000000
DATA fpExpC<>+408(SB)/8, $0x3ff0000000000000
DATA fpExpC<>+416(SB)/8, $0x3ff0000000000000
DATA fpExpC<>+424(SB)/8, $0x3ff0000000000000
DATA fpExpC<>+432(SB)/8, $0x3ff0000000000000
DATA fpExpC<>+440(SB)/8, $0x3ff0000000000000
DATA fpExpC<>+448(SB)/8, $0x3ff71547652b82fe
DATA fpExpC<>+456(SB)/8, $0x3ff71547652b82fe
DATA fpExpC<>+464(SB)/8, $0x3ff71547652b82fe
DATA fpExpC<>+472(SB)/8, $0x3ff71547652b82fe
DATA fpExpC<>+480(SB)/8, $0x3fe62e42fee00000
DATA fpExpC<>+488(SB)/8, $0x3fe62e42fee00000
DATA fpExpC<>+496(SB)/8, $0x3fe62e42fee00000
DATA fpExpC<>+504(SB)/8, $0x3fe62e42fee00000
DATA fpExpC<>+512(SB)/8, $0x3dea39ef35793c76
DATA fpExpC<>+520(SB)/8, $0x3dea39ef35793c76
DATA fpExpC<>+528(SB)/8, $0x3dea39ef35793c76
DATA fpExpC<>+536(SB)/8, $0x3dea39ef35793c76
DATA fpExpC<>+544(SB)/8, $0xc086200000000000
DATA fpExpC<>+552(SB)/8, $0xc086200000000000
DATA fpExpC<>+560(SB)/8, $0xc086200000000000
DATA fpExpC<>+568(SB)/8, $0xc086200000000000
DATA fpExpC<>+576(SB)/8, $0x4086280000000000
DATA fpExpC<>+584(SB)/8, $0x4086280000000000
DATA fpExpC<>+592(SB)/8, $0x4086280000000000
DATA fpExpC<>+600(SB)/8, $0x4086280000000000
DATA fpExpC<>+608(SB)/8, $0x7ff0000000000000
DATA fpExpC<>+616(SB)/8, $0x7ff0000000000000
DATA fpExpC<>+624(SB)/8, $0x7ff0000000000000
DATA fpExpC<>+632(SB)/8, $0x7ff0000000000000
DATA fpExpC<>+640(SB)/8, $1023
DATA fpExpC<>+648(SB)/8, $1023
DATA fpExpC<>+656(SB)/8, $1023
DATA fpExpC<>+664(SB)/8, $1023
GLOBL fpExpC<>(SB), RODATA|NOPTR, $672

// func fpDotAVX2(x, y *float32, n int) float64
TEXT ·fpDotAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPD Y0, Y0, Y0 // lanes 0–3
	VXORPD Y1, Y1, Y1 // lanes 4–7

dot8:
	CMPQ CX, $8
	JL   dottail
	VCVTPS2PD (SI), Y2
	VCVTPS2PD 16(SI), Y3
	VCVTPS2PD (DI), Y4
	VCVTPS2PD 16(DI), Y5
	VFMADD231PD Y4, Y2, Y0
	VFMADD231PD Y5, Y3, Y1
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  dot8

dottail:
	// The last r < 8 elements go to lanes 0..r−1; the masked-off lanes
	// load +0 on both sides and add +0, which leaves a lane (never −0) as
	// it is.
	TESTQ CX, CX
	JZ    dotsum
	LEAQ  fpMask<>(SB), AX
	NEGQ  CX
	VMOVDQU 32(AX)(CX*4), Y6
	VMASKMOVPS (SI), Y6, Y2
	VMASKMOVPS (DI), Y6, Y4
	VEXTRACTF128 $1, Y2, X3
	VEXTRACTF128 $1, Y4, X5
	VCVTPS2PD X2, Y2
	VCVTPS2PD X3, Y3
	VCVTPS2PD X4, Y4
	VCVTPS2PD X5, Y5
	VFMADD231PD Y4, Y2, Y0
	VFMADD231PD Y5, Y3, Y1

dotsum:
	VHADDPD Y1, Y0, Y0 // l0+l1, l4+l5, l2+l3, l6+l7
	VEXTRACTF128 $1, Y0, X1
	VADDPD  X1, X0, X0 // (l0+l1)+(l2+l3), (l4+l5)+(l6+l7)
	VHADDPD X0, X0, X0
	VMOVSD  X0, ret+24(FP)
	VZEROUPPER
	RET

// func fpDotTileAVX2(s, q, k *float64, dp, nq, nk, ns int, tau float64)
//
// s[kb·ns + i] = (Σ q[i·dp + j]·k[kb·dp + j] in FlashPrefillDot's order)·tau
// for i < nq, kb < nk: q (nq, dp) and k (nk, dp) hold float32s widened
// and zero-padded, dp a multiple of 8, nq and nk even and ≥ 2. Tiles of
// two queries × two keys; the outer loop walks query pairs so that the
// keys stay in L1.
TEXT ·fpDotTileAVX2(SB), NOSPLIT, $0-64
	MOVQ s+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ dp+24(FP), R8
	SHLQ $3, R8 // row bytes
	MOVQ nq+32(FP), R9
	SHRQ $1, R9 // query pairs
	MOVQ ns+48(FP), R11
	SHLQ $3, R11 // s row bytes
	VBROADCASTSD tau+56(FP), Y14

qpair:
	LEAQ (SI)(R8*1), R13 // query 1
	MOVQ k+16(FP), BX    // key 0
	MOVQ nk+40(FP), R12
	SHRQ $1, R12         // key pairs
	MOVQ DI, CX          // s[kb·ns + i]

kpair:
	LEAQ (BX)(R8*1), R14 // key 1
	VXORPD Y0, Y0, Y0 // (k0, q0) lanes 0–3
	VXORPD Y1, Y1, Y1 // (k0, q0) lanes 4–7
	VXORPD Y2, Y2, Y2 // (k1, q0)
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4 // (k0, q1)
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6 // (k1, q1)
	VXORPD Y7, Y7, Y7
	XORQ AX, AX

step:
	VMOVUPD (BX)(AX*1), Y8
	VMOVUPD 32(BX)(AX*1), Y9
	VMOVUPD (R14)(AX*1), Y10
	VMOVUPD 32(R14)(AX*1), Y11
	VMOVUPD (SI)(AX*1), Y12
	VMOVUPD 32(SI)(AX*1), Y13
	VFMADD231PD Y8, Y12, Y0
	VFMADD231PD Y9, Y13, Y1
	VFMADD231PD Y10, Y12, Y2
	VFMADD231PD Y11, Y13, Y3
	VMOVUPD (R13)(AX*1), Y12
	VMOVUPD 32(R13)(AX*1), Y13
	VFMADD231PD Y8, Y12, Y4
	VFMADD231PD Y9, Y13, Y5
	VFMADD231PD Y10, Y12, Y6
	VFMADD231PD Y11, Y13, Y7
	ADDQ $64, AX
	CMPQ AX, R8
	JB   step

	// Reduce the four dots at once: each hadd gives l0+l1, l4+l5, l2+l3,
	// l6+l7; the 128-bit halves add to (l0+l1)+(l2+l3), (l4+l5)+(l6+l7)
	// of two dots side by side; the last hadd adds those.
	VHADDPD Y1, Y0, Y0 // (k0, q0)
	VHADDPD Y3, Y2, Y2 // (k1, q0)
	VHADDPD Y5, Y4, Y4 // (k0, q1)
	VHADDPD Y7, Y6, Y6 // (k1, q1)
	VPERM2F128 $0x20, Y2, Y0, Y8
	VPERM2F128 $0x31, Y2, Y0, Y9
	VADDPD Y9, Y8, Y8 // A(k0 q0), B(k0 q0), A(k1 q0), B(k1 q0)
	VPERM2F128 $0x20, Y6, Y4, Y10
	VPERM2F128 $0x31, Y6, Y4, Y11
	VADDPD Y11, Y10, Y10 // the same for q1
	VHADDPD Y10, Y8, Y8 // (k0 q0), (k0 q1), (k1 q0), (k1 q1)
	VMULPD Y14, Y8, Y8
	VMOVUPD X8, (CX)
	VEXTRACTF128 $1, Y8, X9
	VMOVUPD X9, (CX)(R11*1)

	LEAQ (R14)(R8*1), BX
	LEAQ (CX)(R11*2), CX
	DECQ R12
	JNZ  kpair

	LEAQ (R13)(R8*1), SI
	ADDQ $16, DI
	DECQ R9
	JNZ  qpair
	VZEROUPPER
	RET

// func fpWidenAVX2(dst *float64, src *float32, n int)
//
// dst[i] = float64(src[i]) for i < n, n a multiple of 8.
TEXT ·fpWidenAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   widendone

widen:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD 16(SI), Y1
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  widen

widendone:
	VZEROUPPER
	RET

// func fpExpSumAVX2(s *float64, n int, mx float64) float64
//
// Σ FlashPrefillExp(s[i] − mx) for i < n in increasing order, one float64
// add each; n a multiple of 4.
TEXT ·fpExpSumAVX2(SB), NOSPLIT, $0-32
	MOVQ s+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $2, CX
	VBROADCASTSD mx+16(FP), Y15
	LEAQ fpExpC<>(SB), DX
	VXORPD X0, X0, X0 // the sum
	TESTQ CX, CX
	JZ   expdone

exp4:
	VMOVUPD (SI), Y1
	VSUBPD  Y15, Y1, Y1 // x
	VMULPD  448(DX), Y1, Y2
	VROUNDPD $8, Y2, Y2 // k: nearest, ties to even
	VMOVAPD Y1, Y3
	VFNMADD231PD 480(DX), Y2, Y3 // r = fma(−k, ln2hi, x)
	VFNMADD231PD 512(DX), Y2, Y3 // r = fma(−k, ln2lo, r)
	VMOVUPD 0(DX), Y4
	VFMADD213PD 32(DX), Y3, Y4 // p = fma(p, r, c)
	VFMADD213PD 64(DX), Y3, Y4
	VFMADD213PD 96(DX), Y3, Y4
	VFMADD213PD 128(DX), Y3, Y4
	VFMADD213PD 160(DX), Y3, Y4
	VFMADD213PD 192(DX), Y3, Y4
	VFMADD213PD 224(DX), Y3, Y4
	VFMADD213PD 256(DX), Y3, Y4
	VFMADD213PD 288(DX), Y3, Y4
	VFMADD213PD 320(DX), Y3, Y4
	VFMADD213PD 352(DX), Y3, Y4
	VFMADD213PD 384(DX), Y3, Y4
	VFMADD213PD 416(DX), Y3, Y4
	VCVTPD2DQY Y2, X5 // int(k); lanes out of range are masked below
	VPMOVSXDQ X5, Y5
	VPADDQ  640(DX), Y5, Y5
	VPSLLQ  $52, Y5, Y5 // 2^k
	VMULPD  Y5, Y4, Y4
	VCMPPD  $0x1d, 544(DX), Y1, Y6 // x ≥ −708 (false for NaN)
	VANDPD  Y6, Y4, Y4
	VCMPPD  $0x1e, 576(DX), Y1, Y7 // x > 709
	VBLENDVPD Y7, 608(DX), Y4, Y4
	VADDSD  X4, X0, X0
	VPERMILPD $1, X4, X6
	VADDSD  X6, X0, X0
	VEXTRACTF128 $1, Y4, X4
	VADDSD  X4, X0, X0
	VPERMILPD $1, X4, X6
	VADDSD  X6, X0, X0
	ADDQ $32, SI
	DECQ CX
	JNZ  exp4

expdone:
	VMOVSD X0, ret+24(FP)
	VZEROUPPER
	RET

// func fpMaxKeyAVX2(s *float64, n int) (key int64, nan bool)
//
// The largest of s[i], i < n (n a multiple of 4, ≥ 4), as an int64 key
// that orders like the builtin max (−0 below +0): the bits, with the
// magnitude bits flipped where the sign is set. nan reports a NaN.
TEXT ·fpMaxKeyAVX2(SB), NOSPLIT, $0-25
	MOVQ s+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $2, CX
	VPXOR Y0, Y0, Y0
	VPCMPEQQ Y1, Y1, Y1
	VPSRLQ $1, Y1, Y1 // 0x7fff…
	VPCMPEQQ Y2, Y2, Y2
	VPSLLQ $63, Y2, Y2 // the least key: −NaN's, below every number's
	VPXOR Y3, Y3, Y3   // NaN lanes

max4:
	VMOVUPD (SI), Y4
	VCMPPD  $3, Y4, Y4, Y5 // unordered: NaN
	VPOR    Y5, Y3, Y3
	VPCMPGTQ Y4, Y0, Y5 // sign set
	VPAND   Y1, Y5, Y5
	VPXOR   Y4, Y5, Y4 // key
	VPCMPGTQ Y2, Y4, Y5
	VBLENDVPD Y5, Y4, Y2, Y2
	ADDQ $32, SI
	DECQ CX
	JNZ  max4

	VMOVMSKPD Y3, AX
	TESTQ AX, AX
	SETNE nan+24(FP)
	VEXTRACTF128 $1, Y2, X4
	VMOVQ X2, AX
	VPEXTRQ $1, X2, BX
	VMOVQ X4, CX
	VPEXTRQ $1, X4, DX
	CMPQ BX, AX
	CMOVQGT BX, AX
	CMPQ CX, AX
	CMOVQGT CX, AX
	CMPQ DX, AX
	CMOVQGT DX, AX
	MOVQ AX, key+16(FP)
	VZEROUPPER
	RET
