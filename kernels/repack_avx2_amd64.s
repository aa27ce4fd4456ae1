//go:build !purego

// This file owns the AVX2 repacks of full 16-row panels: Q8_0, Q4_0,
// Q5_0, IQ4_NL and MXFP4 rows to the q8Panel layout, Q4_1 and Q5_1 to the
// min panels (panel_min.go), Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS to
// their kPanel layouts (panel.go). The Go repacks (repackQ8Words,
// repackQ8Levels, repackQ8Min, repackK) are the twins, and the output is
// byte-identical. Declarations and the Go wrapper are in
// repack_avx2_amd64.go.
//
// A panel vector holds one dword (four levels) of each of the 16 rows, so
// a repack is a dword transpose: four rows are loaded (32 bytes each, two
// 128-bit halves on Zen 1), transposed with VPUNPCK{L,H}{DQ,QDQ} in each
// 128-bit lane, and each result half is stored once, the low lane with
// VMOVDQU and the high lane (the dword four on) with VEXTRACTI128. The
// 128-bit stores are the bound; nothing crosses lanes but those stores.
// The rows are done four at a time (a group), so each store writes the
// group's 16 bytes of a vector. 4-bit levels are split with VPAND and
// VPSRLW, table levels (IQ4_NL, IQ4_XS, MXFP4) looked up with VPSHUFB,
// and F16 scales converted with VCVTPH2PS (F16C), signalling NaNs fixed
// up to F16ToF32's bits.

#include "textflag.h"

// Byte masks.
DATA rpMask0F<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA rpMask0F<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA rpMask0F<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA rpMask0F<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL rpMask0F<>(SB), RODATA|NOPTR, $32

DATA rpMask3F<>+0(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA rpMask3F<>+8(SB)/8, $0x3f3f3f3f3f3f3f3f
GLOBL rpMask3F<>(SB), RODATA|NOPTR, $16

DATA rpMask03<>+0(SB)/8, $0x0303030303030303
DATA rpMask03<>+8(SB)/8, $0x0303030303030303
DATA rpMask03<>+16(SB)/8, $0x0303030303030303
DATA rpMask03<>+24(SB)/8, $0x0303030303030303
GLOBL rpMask03<>(SB), RODATA|NOPTR, $32

DATA rpMask04<>+0(SB)/8, $0x0404040404040404
DATA rpMask04<>+8(SB)/8, $0x0404040404040404
DATA rpMask04<>+16(SB)/8, $0x0404040404040404
DATA rpMask04<>+24(SB)/8, $0x0404040404040404
GLOBL rpMask04<>(SB), RODATA|NOPTR, $32

DATA rpMask10<>+0(SB)/8, $0x1010101010101010
DATA rpMask10<>+8(SB)/8, $0x1010101010101010
DATA rpMask10<>+16(SB)/8, $0x1010101010101010
DATA rpMask10<>+24(SB)/8, $0x1010101010101010
GLOBL rpMask10<>(SB), RODATA|NOPTR, $32

DATA rpMask20<>+0(SB)/8, $0x2020202020202020
DATA rpMask20<>+8(SB)/8, $0x2020202020202020
GLOBL rpMask20<>(SB), RODATA|NOPTR, $16

DATA rpMask30<>+0(SB)/8, $0x3030303030303030
DATA rpMask30<>+8(SB)/8, $0x3030303030303030
DATA rpMask30<>+16(SB)/8, $0x3030303030303030
DATA rpMask30<>+24(SB)/8, $0x3030303030303030
GLOBL rpMask30<>(SB), RODATA|NOPTR, $32

// Words of 32.
DATA rpW32<>+0(SB)/8, $0x0020002000200020
DATA rpW32<>+8(SB)/8, $0x0020002000200020
GLOBL rpW32<>(SB), RODATA|NOPTR, $16

// The float32 quiet bit in each dword.
DATA rpBit22<>+0(SB)/8, $0x0040000000400000
DATA rpBit22<>+8(SB)/8, $0x0040000000400000
DATA rpBit22<>+16(SB)/8, $0x0040000000400000
DATA rpBit22<>+24(SB)/8, $0x0040000000400000
GLOBL rpBit22<>(SB), RODATA|NOPTR, $32

// VPSHUFB masks, 16 bytes per j: byte j of each dword zero-extended to the dword,
DATA rpByteDW<>+0(SB)/8, $0x8080800480808000
DATA rpByteDW<>+8(SB)/8, $0x8080800c80808008
DATA rpByteDW<>+16(SB)/8, $0x8080800580808001
DATA rpByteDW<>+24(SB)/8, $0x8080800d80808009
DATA rpByteDW<>+32(SB)/8, $0x8080800680808002
DATA rpByteDW<>+40(SB)/8, $0x8080800e8080800a
DATA rpByteDW<>+48(SB)/8, $0x8080800780808003
DATA rpByteDW<>+56(SB)/8, $0x8080800f8080800b
GLOBL rpByteDW<>(SB), RODATA|NOPTR, $64

// byte j of each dword zero-extended to both its words,
DATA rpBytePair<>+0(SB)/8, $0x8004800480008000
DATA rpBytePair<>+8(SB)/8, $0x800c800c80088008
DATA rpBytePair<>+16(SB)/8, $0x8005800580018001
DATA rpBytePair<>+24(SB)/8, $0x800d800d80098009
DATA rpBytePair<>+32(SB)/8, $0x8006800680028002
DATA rpBytePair<>+40(SB)/8, $0x800e800e800a800a
DATA rpBytePair<>+48(SB)/8, $0x8007800780038003
DATA rpBytePair<>+56(SB)/8, $0x800f800f800b800b
GLOBL rpBytePair<>(SB), RODATA|NOPTR, $64

// byte j of each dword to its top byte (then VPSRAD $24),
DATA rpByteTop<>+0(SB)/8, $0x0480808000808080
DATA rpByteTop<>+8(SB)/8, $0x0c80808008808080
DATA rpByteTop<>+16(SB)/8, $0x0580808001808080
DATA rpByteTop<>+24(SB)/8, $0x0d80808009808080
DATA rpByteTop<>+32(SB)/8, $0x0680808002808080
DATA rpByteTop<>+40(SB)/8, $0x0e8080800a808080
DATA rpByteTop<>+48(SB)/8, $0x0780808003808080
DATA rpByteTop<>+56(SB)/8, $0x0f8080800b808080
GLOBL rpByteTop<>(SB), RODATA|NOPTR, $64

// byte j of each dword to the top bytes of both its words (then VPSRAW $8),
DATA rpByteTopPair<>+0(SB)/8, $0x0480048000800080
DATA rpByteTopPair<>+8(SB)/8, $0x0c800c8008800880
DATA rpByteTopPair<>+16(SB)/8, $0x0580058001800180
DATA rpByteTopPair<>+24(SB)/8, $0x0d800d8009800980
DATA rpByteTopPair<>+32(SB)/8, $0x0680068002800280
DATA rpByteTopPair<>+40(SB)/8, $0x0e800e800a800a80
DATA rpByteTopPair<>+48(SB)/8, $0x0780078003800380
DATA rpByteTopPair<>+56(SB)/8, $0x0f800f800b800b80
GLOBL rpByteTopPair<>(SB), RODATA|NOPTR, $64

// bytes 2h and 2h+1 of each dword to the top bytes of its words (then VPSRAW $8),
DATA rpPairTop<>+0(SB)/8, $0x0580048001800080
DATA rpPairTop<>+8(SB)/8, $0x0d800c8009800880
DATA rpPairTop<>+16(SB)/8, $0x0780068003800280
DATA rpPairTop<>+24(SB)/8, $0x0f800e800b800a80
GLOBL rpPairTop<>(SB), RODATA|NOPTR, $32

// bytes 2h and 2h+1 of each dword zero-extended to its words,
DATA rpPairLo<>+0(SB)/8, $0x8005800480018000
DATA rpPairLo<>+8(SB)/8, $0x800d800c80098008
DATA rpPairLo<>+16(SB)/8, $0x8007800680038002
DATA rpPairLo<>+24(SB)/8, $0x800f800e800b800a
GLOBL rpPairLo<>(SB), RODATA|NOPTR, $32

// byte j of each dword to all four of its bytes,
DATA rpBcast<>+0(SB)/8, $0x0404040400000000
DATA rpBcast<>+8(SB)/8, $0x0c0c0c0c08080808
DATA rpBcast<>+16(SB)/8, $0x0505050501010101
DATA rpBcast<>+24(SB)/8, $0x0d0d0d0d09090909
DATA rpBcast<>+32(SB)/8, $0x0606060602020202
DATA rpBcast<>+40(SB)/8, $0x0e0e0e0e0a0a0a0a
DATA rpBcast<>+48(SB)/8, $0x0707070703030303
DATA rpBcast<>+56(SB)/8, $0x0f0f0f0f0b0b0b0b
GLOBL rpBcast<>(SB), RODATA|NOPTR, $64

// and the low words of the four dwords, then the high words.
DATA rpHalves<>+0(SB)/8, $0x0d0c090805040100
DATA rpHalves<>+8(SB)/8, $0x0f0e0b0a07060302
GLOBL rpHalves<>(SB), RODATA|NOPTR, $16

// Bit i (rpBitLo) or 4+i (rpBitHi) in byte i of each dword.
DATA rpBitLo<>+0(SB)/8, $0x0804020108040201
DATA rpBitLo<>+8(SB)/8, $0x0804020108040201
GLOBL rpBitLo<>(SB), RODATA|NOPTR, $16

DATA rpBitHi<>+0(SB)/8, $0x8040201080402010
DATA rpBitHi<>+8(SB)/8, $0x8040201080402010
GLOBL rpBitHi<>(SB), RODATA|NOPTR, $16

// kvIQ4NL in both lanes.
DATA rpIQ4NL<>+0(SB)/8, $0xf6eaddcfbfad9881
DATA rpIQ4NL<>+8(SB)/8, $0x7159453526190d01
DATA rpIQ4NL<>+16(SB)/8, $0xf6eaddcfbfad9881
DATA rpIQ4NL<>+24(SB)/8, $0x7159453526190d01
GLOBL rpIQ4NL<>(SB), RODATA|NOPTR, $32

// kvFP4 + 12 (MXFP4's levels with their bias).
DATA rpFP4<>+0(SB)/8, $0x181412100f0e0d0c
DATA rpFP4<>+8(SB)/8, $0x00040608090a0b0c
GLOBL rpFP4<>(SB), RODATA|NOPTR, $16

// Dwords of 1 and of 255.
DATA rpDW1<>+0(SB)/8, $0x0000000100000001
DATA rpDW1<>+8(SB)/8, $0x0000000100000001
GLOBL rpDW1<>(SB), RODATA|NOPTR, $16

DATA rpDW255<>+0(SB)/8, $0x000000ff000000ff
DATA rpDW255<>+8(SB)/8, $0x000000ff000000ff
GLOBL rpDW255<>(SB), RODATA|NOPTR, $16

// Register use:
//	SI  block b of the panel's row 0; R8 = rb, R9 = 3·rb, R12 = 4·rb
//	R10 block b of the group's row 0 (rows 4g..4g+3)
//	DI  panel block b; R11 = DI + 16·g (the group's dwords in each vector)
//	CX  blocks left, DX groups left

// LOAD4 loads the bytes at off of the group's four rows.
#define LOAD4(off, a, b, c, d) \
	VMOVDQU off(R10), a; \
	VMOVDQU off(R10)(R8*1), b; \
	VMOVDQU off(R10)(R8*2), c; \
	VMOVDQU off(R10)(R9*1), d

// TR4 transposes the dwords of a b c d in each 128-bit lane: afterwards
// dword i of a (b, c, d) is dword 0 (1, 2, 3) of input row i.
#define TR4(a, b, c, d, t0, t1, t2, t3) \
	VPUNPCKLDQ b, a, t0; \
	VPUNPCKHDQ b, a, t1; \
	VPUNPCKLDQ d, c, t2; \
	VPUNPCKHDQ d, c, t3; \
	VPUNPCKLQDQ t2, t0, a; \
	VPUNPCKHQDQ t2, t0, b; \
	VPUNPCKLQDQ t3, t1, c; \
	VPUNPCKHQDQ t3, t1, d

// ST2 stores y's low lane at vector off and its high lane four vectors on.
#define ST2(y, x, off) \
	VMOVDQU x, off(R11); \
	VEXTRACTI128 $1, y, off+256(R11)

// SNANFIX makes the float32 y converted from the binary16 in h (X or Y,
// as t and m) match F16ToF32 for signalling NaNs: VCVTPH2PS quiets them,
// F16ToF32 keeps the payload as it is, so bit 22 is cleared in the NaN
// lanes whose binary16 quiet bit (bit 9) was clear. t and m are scratch.
#define SNANFIX(h, y, t, m) \
	VPMOVZXWD h, t; \
	VPSLLD $13, t, t; \
	VPANDN rpBit22<>(SB), t, t; \
	VCMPPS $3, y, y, m; \
	VPAND m, t, t; \
	VXORPS t, y, y

// F16X4 converts the binary16 at off of the group's four rows to four
// float32 in x, as F16ToF32 (h, t and m scratch).
#define F16X4(off, x, h, t, m) \
	VPINSRW $0, off(R10), h, h; \
	VPINSRW $1, off(R10)(R8*1), h, h; \
	VPINSRW $2, off(R10)(R8*2), h, h; \
	VPINSRW $3, off(R10)(R9*1), h, h; \
	VCVTPH2PS h, x; \
	SNANFIX(h, x, t, m)

// func repackQ8_0AVX2(src *byte, rb, nb int, dst *byte, x uint32)
TEXT ·repackQ8_0AVX2(SB), NOSPLIT, $0-36
	MOVQ src+0(FP), SI
	MOVQ rb+8(FP), R8
	MOVQ nb+16(FP), CX
	MOVQ dst+24(FP), DI
	MOVL x+32(FP), AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	LEAQ (R8)(R8*2), R9
	MOVQ R8, R12
	SHLQ $2, R12

q80block:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ $4, DX

q80group:
	LOAD4(2, Y0, Y1, Y2, Y3)
	TR4(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	VPXOR Y15, Y0, Y0
	VPXOR Y15, Y1, Y1
	VPXOR Y15, Y2, Y2
	VPXOR Y15, Y3, Y3
	ST2(Y0, X0, 0)
	ST2(Y1, X1, 64)
	ST2(Y2, X2, 128)
	ST2(Y3, X3, 192)
	F16X4(0, X8, X9, X10, X11)
	VMOVUPS X8, 512(R11)
	ADDQ R12, R10
	ADDQ $16, R11
	DECQ DX
	JNZ  q80group
	ADDQ $34, SI
	ADDQ $576, DI
	DECQ CX
	JNZ  q80block
	VZEROUPPER
	RET

// NIB2 stores the low nibbles of t's bytes at vector off and the high
// nibbles four vectors on (Q4_0: one 128-bit lane).
#define NIB2(t, off) \
	VPAND X15, t, X4; \
	VMOVDQU X4, off(R11); \
	VPSRLW $4, t, X5; \
	VPAND X15, X5, X5; \
	VMOVDQU X5, off+256(R11)

// func repackQ4_0AVX2(src *byte, rb, nb int, dst *byte)
TEXT ·repackQ4_0AVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ rb+8(FP), R8
	MOVQ nb+16(FP), CX
	MOVQ dst+24(FP), DI
	VMOVDQU rpMask0F<>(SB), X15
	LEAQ (R8)(R8*2), R9
	MOVQ R8, R12
	SHLQ $2, R12

q40block:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ $4, DX

q40group:
	LOAD4(2, X0, X1, X2, X3)
	TR4(X0, X1, X2, X3, X4, X5, X6, X7)
	NIB2(X0, 0)
	NIB2(X1, 64)
	NIB2(X2, 128)
	NIB2(X3, 192)
	F16X4(0, X8, X9, X10, X11)
	VMOVUPS X8, 512(R11)
	ADDQ R12, R10
	ADDQ $16, R11
	DECQ DX
	JNZ  q40group
	ADDQ $18, SI
	ADDQ $576, DI
	DECQ CX
	JNZ  q40block
	VZEROUPPER
	RET

// KHEAD repacks the first 16 bytes of a Q4_K/Q5_K super-block (d, dmin,
// the 12 packed scale and min bytes) of the group's rows: the scales as
// int32 (scOff 4096), the mins as int16 pairs (prOff 4608), d (5120) and
// dmin (5184) as float32. After the transpose X1, X2, X3 hold scale
// bytes 0-3, 4-7 and 8-11 of each row (kScaleMin's q[0:4], q[4:8],
// q[8:12]); the unpacking is ggml's: sc0-3 = q[0:4]&63, sc4-7 =
// q[8:12]&15 | (q[0:4]>>6)<<4, m0-3 = q[4:8]&63, m4-7 = q[8:12]>>4 |
// (q[4:8]>>6)<<4, dword-wide shifts whose bleed the masks remove.
#define KHEAD \
	LOAD4(0, X0, X1, X2, X3); \
	TR4(X0, X1, X2, X3, X4, X5, X6, X7); \
	VPSRLD $6, X1, X4; \
	VPAND rpMask03<>(SB), X4, X4; \
	VPSLLD $4, X4, X4; \
	VPAND X8, X3, X5; \
	VPOR X4, X5, X5; \
	VPAND rpMask3F<>(SB), X1, X1; \
	VPSRLD $6, X2, X4; \
	VPAND rpMask03<>(SB), X4, X4; \
	VPSLLD $4, X4, X4; \
	VPSRLD $4, X3, X6; \
	VPAND X8, X6, X6; \
	VPOR X4, X6, X6; \
	VPAND rpMask3F<>(SB), X2, X2; \
	VPSHUFB rpByteDW<>+0(SB), X1, X4; \
	VMOVDQU X4, 4096(R11); \
	VPSHUFB rpByteDW<>+16(SB), X1, X4; \
	VMOVDQU X4, 4160(R11); \
	VPSHUFB rpByteDW<>+32(SB), X1, X4; \
	VMOVDQU X4, 4224(R11); \
	VPSHUFB rpByteDW<>+48(SB), X1, X4; \
	VMOVDQU X4, 4288(R11); \
	VPSHUFB rpByteDW<>+0(SB), X5, X4; \
	VMOVDQU X4, 4352(R11); \
	VPSHUFB rpByteDW<>+16(SB), X5, X4; \
	VMOVDQU X4, 4416(R11); \
	VPSHUFB rpByteDW<>+32(SB), X5, X4; \
	VMOVDQU X4, 4480(R11); \
	VPSHUFB rpByteDW<>+48(SB), X5, X4; \
	VMOVDQU X4, 4544(R11); \
	VPSHUFB rpBytePair<>+0(SB), X2, X4; \
	VMOVDQU X4, 4608(R11); \
	VPSHUFB rpBytePair<>+16(SB), X2, X4; \
	VMOVDQU X4, 4672(R11); \
	VPSHUFB rpBytePair<>+32(SB), X2, X4; \
	VMOVDQU X4, 4736(R11); \
	VPSHUFB rpBytePair<>+48(SB), X2, X4; \
	VMOVDQU X4, 4800(R11); \
	VPSHUFB rpBytePair<>+0(SB), X6, X4; \
	VMOVDQU X4, 4864(R11); \
	VPSHUFB rpBytePair<>+16(SB), X6, X4; \
	VMOVDQU X4, 4928(R11); \
	VPSHUFB rpBytePair<>+32(SB), X6, X4; \
	VMOVDQU X4, 4992(R11); \
	VPSHUFB rpBytePair<>+48(SB), X6, X4; \
	VMOVDQU X4, 5056(R11); \
	VPSHUFB rpHalves<>(SB), X0, X0; \
	VCVTPH2PS X0, Y1; \
	SNANFIX(X0, Y1, Y2, Y3); \
	VMOVUPS X1, 5120(R11); \
	VEXTRACTF128 $1, Y1, 5184(R11)

// NIBY stores the low nibbles of t's bytes (levels 64c+l) at vector off
// and off+4 (the high lane), the high nibbles (levels 64c+32+l) eight
// vectors on.
#define NIBY(t, off) \
	VPAND Y8, t, Y4; \
	ST2(Y4, X4, off); \
	VPSRLW $4, t, Y5; \
	VPAND Y8, Y5, Y5; \
	ST2(Y5, X5, off+512)

// Q4KCHUNK repacks the 32 qs bytes at src of the group's rows (chunk c of
// kLevels, levels 64c..64c+63 at vector 16c: off = 1024c).
#define Q4KCHUNK(src, off) \
	LOAD4(src, Y0, Y1, Y2, Y3); \
	TR4(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7); \
	NIBY(Y0, off); \
	NIBY(Y1, off+64); \
	NIBY(Y2, off+128); \
	NIBY(Y3, off+192)

// func repackQ4_KAVX2(src *byte, rb, nb int, dst *byte)
TEXT ·repackQ4_KAVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ rb+8(FP), R8
	MOVQ nb+16(FP), CX
	MOVQ dst+24(FP), DI
	VMOVDQU rpMask0F<>(SB), Y8
	LEAQ (R8)(R8*2), R9
	MOVQ R8, R12
	SHLQ $2, R12

q4kblock:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ $4, DX

q4kgroup:
	KHEAD
	Q4KCHUNK(16, 0)
	Q4KCHUNK(48, 1024)
	Q4KCHUNK(80, 2048)
	Q4KCHUNK(112, 3072)
	ADDQ R12, R10
	ADDQ $16, R11
	DECQ DX
	JNZ  q4kgroup
	ADDQ $144, SI
	ADDQ $5248, DI
	DECQ CX
	JNZ  q4kblock
	VZEROUPPER
	RET

// NIB5 is NIBY with Q5_K's fifth bits: bit 0 of h's bytes goes to bit 4
// of the low nibbles' levels, bit 1 to bit 4 of the high nibbles'.
#define NIB5(t, h, off) \
	VPAND Y8, t, Y4; \
	VPSLLD $4, h, Y6; \
	VPAND Y9, Y6, Y6; \
	VPOR Y6, Y4, Y4; \
	ST2(Y4, X4, off); \
	VPSRLW $4, t, Y5; \
	VPAND Y8, Y5, Y5; \
	VPSLLD $3, h, Y7; \
	VPAND Y9, Y7, Y7; \
	VPOR Y7, Y5, Y5; \
	ST2(Y5, X5, off+512)

// Q5KCHUNK is Q4KCHUNK for Q5_K, with the transposed qh in Y10-Y13 shifted
// down two bits after each chunk (chunk c reads qh bits 2c and 2c+1).
#define Q5KCHUNK(src, off) \
	LOAD4(src, Y0, Y1, Y2, Y3); \
	TR4(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7); \
	NIB5(Y0, Y10, off); \
	NIB5(Y1, Y11, off+64); \
	NIB5(Y2, Y12, off+128); \
	NIB5(Y3, Y13, off+192); \
	VPSRLD $2, Y10, Y10; \
	VPSRLD $2, Y11, Y11; \
	VPSRLD $2, Y12, Y12; \
	VPSRLD $2, Y13, Y13

// func repackQ5_KAVX2(src *byte, rb, nb int, dst *byte)
TEXT ·repackQ5_KAVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ rb+8(FP), R8
	MOVQ nb+16(FP), CX
	MOVQ dst+24(FP), DI
	VMOVDQU rpMask0F<>(SB), Y8
	VMOVDQU rpMask10<>(SB), Y9
	LEAQ (R8)(R8*2), R9
	MOVQ R8, R12
	SHLQ $2, R12

q5kblock:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ $4, DX

q5kgroup:
	KHEAD
	LOAD4(16, Y10, Y11, Y12, Y13)
	TR4(Y10, Y11, Y12, Y13, Y4, Y5, Y6, Y7)
	Q5KCHUNK(48, 0)
	Q5KCHUNK(80, 1024)
	Q5KCHUNK(112, 2048)
	Q5KCHUNK(144, 3072)
	ADDQ R12, R10
	ADDQ $16, R11
	DECQ DX
	JNZ  q5kgroup
	ADDQ $176, SI
	ADDQ $5248, DI
	DECQ CX
	JNZ  q5kblock
	VZEROUPPER
	RET

// Q6KSC stores the group's int8 scales 4i..4i+3 (dwords of s) as int32
// (scOff 4096) and as the int16 pairs 2i and 2i+1 (prOff 5120).
#define Q6KSC(s, i) \
	VPSHUFB rpByteTop<>+0(SB), s, X4; \
	VPSRAD $24, X4, X4; \
	VMOVDQU X4, 4096+256*i(R11); \
	VPSHUFB rpByteTop<>+16(SB), s, X4; \
	VPSRAD $24, X4, X4; \
	VMOVDQU X4, 4160+256*i(R11); \
	VPSHUFB rpByteTop<>+32(SB), s, X4; \
	VPSRAD $24, X4, X4; \
	VMOVDQU X4, 4224+256*i(R11); \
	VPSHUFB rpByteTop<>+48(SB), s, X4; \
	VPSRAD $24, X4, X4; \
	VMOVDQU X4, 4288+256*i(R11); \
	VPSHUFB rpPairTop<>+0(SB), s, X5; \
	VPSRAW $8, X5, X5; \
	VMOVDQU X5, 5120+128*i(R11); \
	VPSHUFB rpPairTop<>+16(SB), s, X5; \
	VPSRAW $8, X5, X5; \
	VMOVDQU X5, 5184+128*i(R11)

// Q6A stores the levels of sub-part 0 (ql&15 | (qh&3)<<4) at vector off
// and of sub-part 2 (ql>>4 | (qh>>4&3)<<4) 16 vectors on, t holding ql
// bytes 0-31 of the half and h its qh bytes.
#define Q6A(t, h, off) \
	VPAND Y8, t, Y4; \
	VPSLLD $4, h, Y6; \
	VPAND Y9, Y6, Y6; \
	VPOR Y6, Y4, Y4; \
	ST2(Y4, X4, off); \
	VPSRLW $4, t, Y5; \
	VPAND Y8, Y5, Y5; \
	VPAND Y9, h, Y7; \
	VPOR Y7, Y5, Y5; \
	ST2(Y5, X5, off+1024)

// Q6B stores sub-parts 1 (ql&15 | (qh>>2&3)<<4) and 3 (ql>>4 |
// (qh>>6)<<4) at vectors off and off+16, t holding ql bytes 32-63.
#define Q6B(t, h, off) \
	VPAND Y8, t, Y4; \
	VPSLLD $2, h, Y6; \
	VPAND Y9, Y6, Y6; \
	VPOR Y6, Y4, Y4; \
	ST2(Y4, X4, off); \
	VPSRLW $4, t, Y5; \
	VPAND Y8, Y5, Y5; \
	VPSRLD $2, h, Y7; \
	VPAND Y9, Y7, Y7; \
	VPOR Y7, Y5, Y5; \
	ST2(Y5, X5, off+1024)

// Q6KHALF repacks half n of a Q6_K super-block (ql at ql, qh at qh;
// levels 128n.. at vector 32n: off = 2048n).
#define Q6KHALF(ql, qh, off) \
	LOAD4(qh, Y10, Y11, Y12, Y13); \
	TR4(Y10, Y11, Y12, Y13, Y4, Y5, Y6, Y7); \
	LOAD4(ql, Y0, Y1, Y2, Y3); \
	TR4(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7); \
	Q6A(Y0, Y10, off); \
	Q6A(Y1, Y11, off+64); \
	Q6A(Y2, Y12, off+128); \
	Q6A(Y3, Y13, off+192); \
	LOAD4(ql+32, Y0, Y1, Y2, Y3); \
	TR4(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7); \
	Q6B(Y0, Y10, off+512); \
	Q6B(Y1, Y11, off+576); \
	Q6B(Y2, Y12, off+640); \
	Q6B(Y3, Y13, off+704)

// func repackQ6_KAVX2(src *byte, rb, nb int, dst *byte)
TEXT ·repackQ6_KAVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ rb+8(FP), R8
	MOVQ nb+16(FP), CX
	MOVQ dst+24(FP), DI
	VMOVDQU rpMask0F<>(SB), Y8
	VMOVDQU rpMask30<>(SB), Y9
	LEAQ (R8)(R8*2), R9
	MOVQ R8, R12
	SHLQ $2, R12

q6kblock:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ $4, DX

q6kgroup:
	LOAD4(192, X0, X1, X2, X3)
	TR4(X0, X1, X2, X3, X4, X5, X6, X7)
	Q6KSC(X0, 0)
	Q6KSC(X1, 1)
	Q6KSC(X2, 2)
	Q6KSC(X3, 3)
	F16X4(208, X14, X0, X4, X5)
	VMOVUPS X14, 5632(R11)
	Q6KHALF(0, 128, 0)
	Q6KHALF(64, 160, 2048)
	ADDQ R12, R10
	ADDQ $16, R11
	DECQ DX
	JNZ  q6kgroup
	ADDQ $210, SI
	ADDQ $5696, DI
	DECQ CX
	JNZ  q6kblock
	VZEROUPPER
	RET

// Q5BIT ORs Q5_1's fifth bits into the four levels of each row in dst:
// byte j (VPSHUFB mask at rpBcast+16j, jo = 16j) of the row's qh in X12,
// tested against bits (rpBitLo or rpBitHi), gives 0x10 (X14) where set.
#define Q5BIT(jo, bits, dst) \
	VPSHUFB rpBcast<>+jo(SB), X12, X6; \
	VPAND bits, X6, X6; \
	VPCMPEQB bits, X6, X6; \
	VPAND X14, X6, X6; \
	VPOR X6, dst, dst

// NIB5M is NIB2 with the fifth bits: qh byte lo (hi) for the low (high)
// nibbles' levels, bit pattern bits.
#define NIB5M(t, off, lo, hi, bits) \
	VPAND X15, t, X4; \
	Q5BIT(lo, bits, X4); \
	VMOVDQU X4, off(R11); \
	VPSRLW $4, t, X5; \
	VPAND X15, X5, X5; \
	Q5BIT(hi, bits, X5); \
	VMOVDQU X5, off+256(R11)

// func repackQ4_1AVX2(src *byte, rb, nb int, dst *byte)
TEXT ·repackQ4_1AVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ rb+8(FP), R8
	MOVQ nb+16(FP), CX
	MOVQ dst+24(FP), DI
	VMOVDQU rpMask0F<>(SB), X15
	LEAQ (R8)(R8*2), R9
	MOVQ R8, R12
	SHLQ $2, R12

q41block:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ $4, DX

q41group:
	LOAD4(4, X0, X1, X2, X3)
	TR4(X0, X1, X2, X3, X4, X5, X6, X7)
	NIB2(X0, 0)
	NIB2(X1, 64)
	NIB2(X2, 128)
	NIB2(X3, 192)
	F16X4(0, X8, X9, X10, X11)
	VMOVUPS X8, 512(R11)
	F16X4(2, X8, X9, X10, X11)
	VMOVUPS X8, 576(R11)
	ADDQ R12, R10
	ADDQ $16, R11
	DECQ DX
	JNZ  q41group
	ADDQ $20, SI
	ADDQ $640, DI
	DECQ CX
	JNZ  q41block
	VZEROUPPER
	RET

// func repackQ5_1AVX2(src *byte, rb, nb int, dst *byte)
TEXT ·repackQ5_1AVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ rb+8(FP), R8
	MOVQ nb+16(FP), CX
	MOVQ dst+24(FP), DI
	VMOVDQU rpMask0F<>(SB), X15
	VMOVDQU rpMask10<>(SB), X14
	VMOVDQU rpBitLo<>(SB), X13
	LEAQ (R8)(R8*2), R9
	MOVQ R8, R12
	SHLQ $2, R12

q51block:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ $4, DX

q51group:
	VMOVD 4(R10), X12
	VPINSRD $1, 4(R10)(R8*1), X12, X12
	VPINSRD $2, 4(R10)(R8*2), X12, X12
	VPINSRD $3, 4(R10)(R9*1), X12, X12
	LOAD4(8, X0, X1, X2, X3)
	TR4(X0, X1, X2, X3, X4, X5, X6, X7)
	NIB5M(X0, 0, 0, 32, X13)
	NIB5M(X1, 64, 0, 32, rpBitHi<>(SB))
	NIB5M(X2, 128, 16, 48, X13)
	NIB5M(X3, 192, 16, 48, rpBitHi<>(SB))
	F16X4(0, X8, X9, X10, X11)
	VMOVUPS X8, 512(R11)
	F16X4(2, X8, X9, X10, X11)
	VMOVUPS X8, 576(R11)
	ADDQ R12, R10
	ADDQ $16, R11
	DECQ DX
	JNZ  q51group
	ADDQ $24, SI
	ADDQ $640, DI
	DECQ CX
	JNZ  q51block
	VZEROUPPER
	RET

// Q2KSC stores Q2_K's scales 4i..4i+3 (low nibbles of the dwords of s)
// as (s, s) int16 pairs (scOff 4096) and the mins (high nibbles) as the
// int16 pairs 2i and 2i+1 (prOff 5120).
#define Q2KSC(s, i) \
	VPSHUFB rpBytePair<>+0(SB), s, X4; \
	VPAND rpMask0F<>(SB), X4, X4; \
	VMOVDQU X4, 4096+256*i(R11); \
	VPSHUFB rpBytePair<>+16(SB), s, X4; \
	VPAND rpMask0F<>(SB), X4, X4; \
	VMOVDQU X4, 4160+256*i(R11); \
	VPSHUFB rpBytePair<>+32(SB), s, X4; \
	VPAND rpMask0F<>(SB), X4, X4; \
	VMOVDQU X4, 4224+256*i(R11); \
	VPSHUFB rpBytePair<>+48(SB), s, X4; \
	VPAND rpMask0F<>(SB), X4, X4; \
	VMOVDQU X4, 4288+256*i(R11); \
	VPSHUFB rpPairLo<>+0(SB), s, X5; \
	VPSRLW $4, X5, X5; \
	VMOVDQU X5, 5120+128*i(R11); \
	VPSHUFB rpPairLo<>+16(SB), s, X5; \
	VPSRLW $4, X5, X5; \
	VMOVDQU X5, 5184+128*i(R11)

// Q2J stores the 2-bit levels at the bottom of Y0-Y3 (vectors off, off+1,
// off+2, off+3 and their high lanes) and moves the next ones down.
#define Q2J(off) \
	VPAND Y8, Y0, Y4; \
	ST2(Y4, X4, off); \
	VPAND Y8, Y1, Y5; \
	ST2(Y5, X5, off+64); \
	VPAND Y8, Y2, Y6; \
	ST2(Y6, X6, off+128); \
	VPAND Y8, Y3, Y7; \
	ST2(Y7, X7, off+192); \
	VPSRLW $2, Y0, Y0; \
	VPSRLW $2, Y1, Y1; \
	VPSRLW $2, Y2, Y2; \
	VPSRLW $2, Y3, Y3

// Q2KHALF repacks half n of a Q2_K super-block (qs bytes 32n.. at src,
// levels 128n+32j+l = qs[32n+l]>>2j & 3 at vector 32n+8j: off = 2048n).
#define Q2KHALF(src, off) \
	LOAD4(src, Y0, Y1, Y2, Y3); \
	TR4(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7); \
	Q2J(off); \
	Q2J(off+512); \
	Q2J(off+1024); \
	Q2J(off+1536)

// func repackQ2_KAVX2(src *byte, rb, nb int, dst *byte)
TEXT ·repackQ2_KAVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ rb+8(FP), R8
	MOVQ nb+16(FP), CX
	MOVQ dst+24(FP), DI
	VMOVDQU rpMask03<>(SB), Y8
	LEAQ (R8)(R8*2), R9
	MOVQ R8, R12
	SHLQ $2, R12

q2kblock:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ $4, DX

q2kgroup:
	LOAD4(0, X0, X1, X2, X3)
	TR4(X0, X1, X2, X3, X4, X5, X6, X7)
	Q2KSC(X0, 0)
	Q2KSC(X1, 1)
	Q2KSC(X2, 2)
	Q2KSC(X3, 3)
	F16X4(80, X12, X13, X14, X15)
	VMOVUPS X12, 5632(R11)
	F16X4(82, X12, X13, X14, X15)
	VMOVUPS X12, 5696(R11)
	Q2KHALF(16, 0)
	Q2KHALF(48, 2048)
	ADDQ R12, R10
	ADDQ $16, R11
	DECQ DX
	JNZ  q2kgroup
	ADDQ $84, SI
	ADDQ $5760, DI
	DECQ CX
	JNZ  q2kblock
	VZEROUPPER
	RET

// Q3KSC stores Q3_K's signed scales 4i..4i+3 (the dwords of s) as (s, s)
// int16 pairs (scOff 4096) and as the int16 pairs 2i and 2i+1 (prOff
// 5120).
#define Q3KSC(s, i) \
	VPSHUFB rpByteTopPair<>+0(SB), s, X12; \
	VPSRAW $8, X12, X12; \
	VMOVDQU X12, 4096+256*i(R11); \
	VPSHUFB rpByteTopPair<>+16(SB), s, X12; \
	VPSRAW $8, X12, X12; \
	VMOVDQU X12, 4160+256*i(R11); \
	VPSHUFB rpByteTopPair<>+32(SB), s, X12; \
	VPSRAW $8, X12, X12; \
	VMOVDQU X12, 4224+256*i(R11); \
	VPSHUFB rpByteTopPair<>+48(SB), s, X12; \
	VPSRAW $8, X12, X12; \
	VMOVDQU X12, 4288+256*i(R11); \
	VPSHUFB rpPairTop<>+0(SB), s, X13; \
	VPSRAW $8, X13, X13; \
	VMOVDQU X13, 5120+128*i(R11); \
	VPSHUFB rpPairTop<>+16(SB), s, X13; \
	VPSRAW $8, X13, X13; \
	VMOVDQU X13, 5184+128*i(R11)

// Q3SC4 makes scales 4i..4i+3 in s: (lo | (hm>>sh & 3)<<4) − 32, lo the
// low 4 bits already in s, hm the packed high bits (q3kScales).
#define Q3SC4(s, hm, sh) \
	VPSRLW $sh, hm, X14; \
	VPAND rpMask03<>(SB), X14, X14; \
	VPSLLW $4, X14, X14; \
	VPOR X14, s, s; \
	VPSUBB rpMask20<>(SB), s, s

// Q3V stores the levels of t (2-bit, bottom) with bit 0 of h's bytes as
// bit 2 at vector off.
#define Q3V(t, h, off) \
	VPAND Y8, t, Y4; \
	VPSLLD $2, h, Y5; \
	VPAND Y9, Y5, Y5; \
	VPOR Y5, Y4, Y4; \
	ST2(Y4, X4, off)

// Q3J is Q2J with the hmask bits (transposed in Y10-Y13, moved down one
// bit after each step).
#define Q3J(off) \
	Q3V(Y0, Y10, off); \
	Q3V(Y1, Y11, off+64); \
	Q3V(Y2, Y12, off+128); \
	Q3V(Y3, Y13, off+192); \
	VPSRLW $2, Y0, Y0; \
	VPSRLW $2, Y1, Y1; \
	VPSRLW $2, Y2, Y2; \
	VPSRLW $2, Y3, Y3; \
	VPSRLD $1, Y10, Y10; \
	VPSRLD $1, Y11, Y11; \
	VPSRLD $1, Y12, Y12; \
	VPSRLD $1, Y13, Y13

// Q3KHALF repacks half n of a Q3_K super-block (qs bytes 32n.. at src;
// level 128n+32j+l reads hmask bit 4n+j of byte l).
#define Q3KHALF(src, off) \
	LOAD4(src, Y0, Y1, Y2, Y3); \
	TR4(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7); \
	Q3J(off); \
	Q3J(off+512); \
	Q3J(off+1024); \
	Q3J(off+1536)

// func repackQ3_KAVX2(src *byte, rb, nb int, dst *byte)
TEXT ·repackQ3_KAVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ rb+8(FP), R8
	MOVQ nb+16(FP), CX
	MOVQ dst+24(FP), DI
	VMOVDQU rpMask03<>(SB), Y8
	VMOVDQU rpMask04<>(SB), Y9
	LEAQ (R8)(R8*2), R9
	MOVQ R8, R12
	SHLQ $2, R12

q3kblock:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ $4, DX

q3kgroup:
	// The 12 scale bytes are 96..107 of the 110-byte block: load 94..109
	// (inside the block) and move them down two bytes.
	LOAD4(94, X0, X1, X2, X3)
	VPSRLDQ $2, X0, X0
	VPSRLDQ $2, X1, X1
	VPSRLDQ $2, X2, X2
	VPSRLDQ $2, X3, X3
	TR4(X0, X1, X2, X3, X4, X5, X6, X7)
	VPAND rpMask0F<>(SB), X0, X4
	Q3SC4(X4, X2, 0)
	VPAND rpMask0F<>(SB), X1, X5
	Q3SC4(X5, X2, 2)
	VPSRLW $4, X0, X6
	VPAND rpMask0F<>(SB), X6, X6
	Q3SC4(X6, X2, 4)
	VPSRLW $4, X1, X7
	VPAND rpMask0F<>(SB), X7, X7
	Q3SC4(X7, X2, 6)
	Q3KSC(X4, 0)
	Q3KSC(X5, 1)
	Q3KSC(X6, 2)
	Q3KSC(X7, 3)
	F16X4(108, X12, X13, X14, X15)
	VMOVUPS X12, 5632(R11)
	LOAD4(0, Y10, Y11, Y12, Y13)
	TR4(Y10, Y11, Y12, Y13, Y4, Y5, Y6, Y7)
	Q3KHALF(32, 0)
	Q3KHALF(64, 2048)
	ADDQ R12, R10
	ADDQ $16, R11
	DECQ DX
	JNZ  q3kgroup
	ADDQ $110, SI
	ADDQ $5696, DI
	DECQ CX
	JNZ  q3kblock
	VZEROUPPER
	RET

// IQ4SC stores IQ4_XS scale j, (lo | (sh >> 2j & 3) << 4) − 32, as
// (s, s) int16 pairs at scOff 4096 + 64j, with lo (X4) made by IQ4LO or
// IQ4HI: X1 holds each row's sl dword, X0 its d | sh<<16; the sh byte is
// at rpBytePair+hb, shifted down hs bits.
#define IQ4SC(j, hb, hs) \
	VPSHUFB rpBytePair<>+hb(SB), X0, X5; \
	VPSRLW $hs, X5, X5; \
	VPAND rpMask03<>(SB), X5, X5; \
	VPSLLW $4, X5, X5; \
	VPOR X5, X4, X4; \
	VPSUBW rpW32<>(SB), X4, X4; \
	VMOVDQU X4, 4096+64*j(R11)

// IQ4LO and IQ4HI put the low or high nibble of sl byte lb/16 of each row
// in both words of its dword (X4).
#define IQ4LO(lb) \
	VPSHUFB rpBytePair<>+lb(SB), X1, X4; \
	VPAND rpMask0F<>(SB), X4, X4

#define IQ4HI(lb) \
	VPSHUFB rpBytePair<>+lb(SB), X1, X4; \
	VPSRLW $4, X4, X4

// IQ4V stores the kvIQ4NL values of t's low nibbles (sub-blocks 2m and
// 2m+1 in t's lanes: vectors 16m+k and 16m+8+k) and of its high nibbles
// (four vectors on).
#define IQ4V(t, off) \
	VPAND Y8, t, Y4; \
	VPSHUFB Y4, Y9, Y4; \
	VMOVDQU X4, off(R11); \
	VEXTRACTI128 $1, Y4, off+512(R11); \
	VPSRLW $4, t, Y5; \
	VPAND Y8, Y5, Y5; \
	VPSHUFB Y5, Y9, Y5; \
	VMOVDQU X5, off+256(R11); \
	VEXTRACTI128 $1, Y5, off+768(R11)

// IQ4PAIR repacks qs bytes 32m..32m+31 (sub-blocks 2m, 2m+1) at src to
// vectors 16m.. (off = 1024m).
#define IQ4PAIR(src, off) \
	LOAD4(src, Y0, Y1, Y2, Y3); \
	TR4(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7); \
	IQ4V(Y0, off); \
	IQ4V(Y1, off+64); \
	IQ4V(Y2, off+128); \
	IQ4V(Y3, off+192)

// func repackIQ4_XSAVX2(src *byte, rb, nb int, dst *byte)
TEXT ·repackIQ4_XSAVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ rb+8(FP), R8
	MOVQ nb+16(FP), CX
	MOVQ dst+24(FP), DI
	VMOVDQU rpMask0F<>(SB), Y8
	VMOVDQU rpIQ4NL<>(SB), Y9
	LEAQ (R8)(R8*2), R9
	MOVQ R8, R12
	SHLQ $2, R12

iq4block:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ $4, DX

iq4group:
	LOAD4(0, X0, X1, X2, X3)
	TR4(X0, X1, X2, X3, X4, X5, X6, X7)
	IQ4LO(0)
	IQ4SC(0, 32, 0)
	IQ4HI(0)
	IQ4SC(1, 32, 2)
	IQ4LO(16)
	IQ4SC(2, 32, 4)
	IQ4HI(16)
	IQ4SC(3, 32, 6)
	IQ4LO(32)
	IQ4SC(4, 48, 0)
	IQ4HI(32)
	IQ4SC(5, 48, 2)
	IQ4LO(48)
	IQ4SC(6, 48, 4)
	IQ4HI(48)
	IQ4SC(7, 48, 6)
	F16X4(0, X12, X13, X14, X15)
	VMOVUPS X12, 4608(R11)
	IQ4PAIR(8, 0)
	IQ4PAIR(40, 1024)
	IQ4PAIR(72, 2048)
	IQ4PAIR(104, 3072)
	ADDQ R12, R10
	ADDQ $16, R11
	DECQ DX
	JNZ  iq4group
	ADDQ $136, SI
	ADDQ $4672, DI
	DECQ CX
	JNZ  iq4block
	VZEROUPPER
	RET

// func repackQ5_0AVX2(src *byte, rb, nb int, dst *byte)
TEXT ·repackQ5_0AVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ rb+8(FP), R8
	MOVQ nb+16(FP), CX
	MOVQ dst+24(FP), DI
	VMOVDQU rpMask0F<>(SB), X15
	VMOVDQU rpMask10<>(SB), X14
	VMOVDQU rpBitLo<>(SB), X13
	LEAQ (R8)(R8*2), R9
	MOVQ R8, R12
	SHLQ $2, R12

q50block:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ $4, DX

q50group:
	VMOVD 2(R10), X12
	VPINSRD $1, 2(R10)(R8*1), X12, X12
	VPINSRD $2, 2(R10)(R8*2), X12, X12
	VPINSRD $3, 2(R10)(R9*1), X12, X12
	LOAD4(6, X0, X1, X2, X3)
	TR4(X0, X1, X2, X3, X4, X5, X6, X7)
	NIB5M(X0, 0, 0, 32, X13)
	NIB5M(X1, 64, 0, 32, rpBitHi<>(SB))
	NIB5M(X2, 128, 16, 48, X13)
	NIB5M(X3, 192, 16, 48, rpBitHi<>(SB))
	F16X4(0, X8, X9, X10, X11)
	VMOVUPS X8, 512(R11)
	ADDQ R12, R10
	ADDQ $16, R11
	DECQ DX
	JNZ  q50group
	ADDQ $22, SI
	ADDQ $576, DI
	DECQ CX
	JNZ  q50block
	VZEROUPPER
	RET

// NIBT is NIB2 through the level table in X14, XORed with X13.
#define NIBT(t, off) \
	VPAND X15, t, X4; \
	VPSHUFB X4, X14, X4; \
	VPXOR X13, X4, X4; \
	VMOVDQU X4, off(R11); \
	VPSRLW $4, t, X5; \
	VPAND X15, X5, X5; \
	VPSHUFB X5, X14, X5; \
	VPXOR X13, X5, X5; \
	VMOVDQU X5, off+256(R11)

// func repackIQ4_NLAVX2(src *byte, rb, nb int, dst *byte, x uint32)
TEXT ·repackIQ4_NLAVX2(SB), NOSPLIT, $0-36
	MOVQ src+0(FP), SI
	MOVQ rb+8(FP), R8
	MOVQ nb+16(FP), CX
	MOVQ dst+24(FP), DI
	MOVL x+32(FP), AX
	VMOVD AX, X13
	VPBROADCASTD X13, X13
	VMOVDQU rpMask0F<>(SB), X15
	VMOVDQU rpIQ4NL<>(SB), X14
	LEAQ (R8)(R8*2), R9
	MOVQ R8, R12
	SHLQ $2, R12

nlblock:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ $4, DX

nlgroup:
	LOAD4(2, X0, X1, X2, X3)
	TR4(X0, X1, X2, X3, X4, X5, X6, X7)
	NIBT(X0, 0)
	NIBT(X1, 64)
	NIBT(X2, 128)
	NIBT(X3, 192)
	F16X4(0, X8, X9, X10, X11)
	VMOVUPS X8, 512(R11)
	ADDQ R12, R10
	ADDQ $16, R11
	DECQ DX
	JNZ  nlgroup
	ADDQ $18, SI
	ADDQ $576, DI
	DECQ CX
	JNZ  nlblock
	VZEROUPPER
	RET

// func repackMXFP4AVX2(src *byte, rb, nb int, dst *byte)
//
// The scale is e8m0Half(e): (e−1)<<23 for e ≥ 2, else the subnormal
// (e+1)<<21.
TEXT ·repackMXFP4AVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ rb+8(FP), R8
	MOVQ nb+16(FP), CX
	MOVQ dst+24(FP), DI
	VPXOR X13, X13, X13
	VMOVDQU rpMask0F<>(SB), X15
	VMOVDQU rpFP4<>(SB), X14
	LEAQ (R8)(R8*2), R9
	MOVQ R8, R12
	SHLQ $2, R12

mxblock:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ $4, DX

mxgroup:
	LOAD4(1, X0, X1, X2, X3)
	TR4(X0, X1, X2, X3, X4, X5, X6, X7)
	NIBT(X0, 0)
	NIBT(X1, 64)
	NIBT(X2, 128)
	NIBT(X3, 192)
	VMOVD (R10), X8
	VPINSRD $1, (R10)(R8*1), X8, X8
	VPINSRD $2, (R10)(R8*2), X8, X8
	VPINSRD $3, (R10)(R9*1), X8, X8
	VPAND rpDW255<>(SB), X8, X8
	VPSUBD rpDW1<>(SB), X8, X9
	VPSLLD $23, X9, X9
	VPADDD rpDW1<>(SB), X8, X10
	VPSLLD $21, X10, X10
	VPCMPGTD rpDW1<>(SB), X8, X11
	VPAND X11, X9, X9
	VPANDN X10, X11, X11
	VPOR X9, X11, X11
	VMOVDQU X11, 512(R11)
	ADDQ R12, R10
	ADDQ $16, R11
	DECQ DX
	JNZ  mxgroup
	ADDQ $17, SI
	ADDQ $576, DI
	DECQ CX
	JNZ  mxblock
	VZEROUPPER
	RET
