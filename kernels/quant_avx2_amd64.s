//go:build !purego

// This file owns the AVX2 activation converters of the SIMD matmul paths
// (256-bit VEX only, plus F16C for the Q8_0 scale). Their Go twins are
// quantActQ8Go (panel.go, on actQ8 in legacy.go) and quantizeQ8K
// (kquants.go); tests require bit-identical output for every input,
// NaN and Inf included, so the rounding copies nearestInt (add 1.5·2^23,
// keep the low 23 bits, subtract 2^22) instead of using VCVTPS2DQ: the two
// agree on every finite product here, but VCVTPS2DQ turns ±Inf and NaN
// into 0x80000000 where nearestInt gives payload-dependent values.

#include "textflag.h"

// Dword order after VPACKSS/VPACKUS of four vectors A B C D is
// A0 B0 C0 D0 A1 B1 C1 D1 (128-bit halves); this restores A0 A1 B0 B1 ….
DATA quantA2Perm<>+0(SB)/4, $0
DATA quantA2Perm<>+4(SB)/4, $4
DATA quantA2Perm<>+8(SB)/4, $1
DATA quantA2Perm<>+12(SB)/4, $5
DATA quantA2Perm<>+16(SB)/4, $2
DATA quantA2Perm<>+20(SB)/4, $6
DATA quantA2Perm<>+24(SB)/4, $3
DATA quantA2Perm<>+28(SB)/4, $7
GLOBL quantA2Perm<>(SB), RODATA|NOPTR, $32

// Interleaves the words of each 128-bit half: 0 4 1 5 2 6 3 7.
DATA quantA2Words<>+0(SB)/8, $0x0b0a030209080100
DATA quantA2Words<>+8(SB)/8, $0x0f0e07060d0c0504
DATA quantA2Words<>+16(SB)/8, $0x0b0a030209080100
DATA quantA2Words<>+24(SB)/8, $0x0f0e07060d0c0504
GLOBL quantA2Words<>(SB), RODATA|NOPTR, $32

// func quantQ8VecAVX2(x *float32, nb int, dst *byte, bias int32)
//
// Per 32 floats, as actQ8: amax = max|x|, d = amax/127 stored as
// f32(f16(d)), id = 127/amax (0 when amax is 0), q = clamp(nearestInt(x·id),
// −128, 127) (the saturating packs clamp), then −bias·Σq.
//
// amax is the integer maximum of the |x| bit patterns: the float maximum
// when no lane is NaN, a NaN when one is. A block with a NaN takes a
// scalar path that copies Go's max as compiled for amd64 (absMax): max(m, a)
// becomes −min(−m, −a) with two MINSS and a POR, which is the bitwise m|a
// whenever m or a is NaN, so amax is the largest |x| before the first NaN
// ORed with every |x| from that NaN on. (absMax's float64 round trip also
// quiets the NaN; d and id, quotients of amax, quiet it anyway.) x·id takes
// x as the first source, as actQ8's MULSS does, so a NaN x keeps its own
// payload. The tests pin all of this against the compiled Go code.
TEXT ·quantQ8VecAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ dst+16(FP), DI
	MOVL bias+24(FP), R8
	NEGL R8
	TESTQ CX, CX
	JZ q8done
	MOVL $0x7fffffff, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // |x| mask
	MOVL $0x42fe0000, AX  // 127.0
	VMOVD AX, X14
	VPBROADCASTD X14, X14
	MOVL $0x4b400000, AX  // 12582912 = 1.5·2^23
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVL $0x007fffff, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	MOVL $0x00400000, AX
	VMOVD AX, X11
	VPBROADCASTD X11, Y11
	VMOVDQU quantA2Perm<>(SB), Y10
	MOVL $0x80808080, AX
	VMOVD AX, X9
	VPBROADCASTD X9, Y9 // flips int8 to uint8 + 128 for VPSADBW
	VPXOR Y8, Y8, Y8

q8loop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VPAND Y15, Y0, Y4
	VPAND Y15, Y1, Y5
	VPAND Y15, Y2, Y6
	VPAND Y15, Y3, Y7
	VPMAXSD Y5, Y4, Y4
	VPMAXSD Y7, Y6, Y6
	VPMAXSD Y6, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPMAXSD X5, X4, X4
	VPSHUFD $0x4e, X4, X5
	VPMAXSD X5, X4, X4
	VPSHUFD $0xb1, X4, X5
	VPMAXSD X5, X4, X4 // every lane: amax's bits
	VUCOMISS X4, X4
	JPS q8nan

q8scale:
	VDIVPS X14, X4, X5 // d = amax/127
	VDIVPS X4, X14, X6 // 127/amax
	VPCMPEQD X8, X4, X7
	VPANDN X6, X7, X6  // id: 0 where amax is 0
	VINSERTI128 $1, X6, Y6, Y6
	VCVTPS2PH $0, X5, X5
	VCVTPH2PS X5, X5
	VMOVSS X5, 32(DI)
	VMULPS Y6, Y0, Y0
	VMULPS Y6, Y1, Y1
	VMULPS Y6, Y2, Y2
	VMULPS Y6, Y3, Y3
	VADDPS Y13, Y0, Y0
	VADDPS Y13, Y1, Y1
	VADDPS Y13, Y2, Y2
	VADDPS Y13, Y3, Y3
	VPAND Y12, Y0, Y0
	VPAND Y12, Y1, Y1
	VPAND Y12, Y2, Y2
	VPAND Y12, Y3, Y3
	VPSUBD Y11, Y0, Y0
	VPSUBD Y11, Y1, Y1
	VPSUBD Y11, Y2, Y2
	VPSUBD Y11, Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD Y0, Y10, Y1
	VMOVDQU Y1, (DI)
	VPXOR Y9, Y0, Y0 // Σq from the unpermuted bytes: Σ(q+128) − 4096
	VPSADBW Y8, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPADDQ X1, X0, X0
	VMOVD X0, AX
	SUBL $4096, AX
	IMULL R8, AX
	MOVL AX, 36(DI)
	ADDQ $128, SI
	ADDQ $40, DI
	DECQ CX
	JNZ q8loop

q8done:
	VZEROUPPER
	RET

q8nan:
	// Scalar amax as Go's absMax computes it (see above); Y0-Y3 stay.
	XORL AX, AX
	XORL R10, R10

q8nanmax:
	MOVL (SI)(R10*4), DX
	ANDL $0x7fffffff, DX
	CMPL DX, $0x7f800000
	JHI q8nanfirst
	CMPL DX, AX
	CMOVLHI DX, AX
	INCQ R10
	JMP q8nanmax // a NaN lane exists, so this ends at it

q8nanfirst:
	ORL DX, AX
	INCQ R10

q8nanor:
	CMPQ R10, $32
	JAE q8nandone
	MOVL (SI)(R10*4), DX
	ANDL $0x7fffffff, DX
	ORL DX, AX
	INCQ R10
	JMP q8nanor

q8nandone:
	VMOVD AX, X4
	VPBROADCASTD X4, X4
	JMP q8scale

// One Q8_K chunk: 32 floats at off(SI) → 32 qs bytes at qoff(DI) and, in
// S, eight dword partial sums (four per group of 16, one group per
// 128-bit half). Y15 iscale, Y13 magic, Y12 0x7fffff, Y11 0x40007f,
// Y10 perm, Y9 u8 ones, Y8 s16 ones, Y7 0xff; uses Y0-Y3.
//
// q = nearestInt(iscale·x) and qs = int8(min(q, 127)). With
// m = bits(iscale·x + magic) & 0x7fffff, q = m − 0x400000, so
// min(q, 127) = min(m, 0x40007f) − 0x400000, whose low byte is that of
// min(m, 0x40007f): the unsigned packs of that byte truncate exactly as
// Go's int8 conversion (an Inf product gives q = −2^22, byte 0).
#define Q8KCHUNK(off, qoff, S) \
	VMULPS (off)(SI), Y15, Y0; \
	VMULPS (off+32)(SI), Y15, Y1; \
	VMULPS (off+64)(SI), Y15, Y2; \
	VMULPS (off+96)(SI), Y15, Y3; \
	VADDPS Y13, Y0, Y0; \
	VADDPS Y13, Y1, Y1; \
	VADDPS Y13, Y2, Y2; \
	VADDPS Y13, Y3, Y3; \
	VPAND Y12, Y0, Y0; \
	VPAND Y12, Y1, Y1; \
	VPAND Y12, Y2, Y2; \
	VPAND Y12, Y3, Y3; \
	VPMINSD Y11, Y0, Y0; \
	VPMINSD Y11, Y1, Y1; \
	VPMINSD Y11, Y2, Y2; \
	VPMINSD Y11, Y3, Y3; \
	VPAND Y7, Y0, Y0; \
	VPAND Y7, Y1, Y1; \
	VPAND Y7, Y2, Y2; \
	VPAND Y7, Y3, Y3; \
	VPACKUSDW Y1, Y0, Y0; \
	VPACKUSDW Y3, Y2, Y2; \
	VPACKUSWB Y2, Y0, Y0; \
	VPERMD Y0, Y10, Y0; \
	VMOVDQU Y0, (qoff)(DI); \
	VPMADDUBSW Y0, Y9, Y1; \
	VPMADDWD Y8, Y1, S

// |x| of 32 floats at off(SI) folded into the four maxima Y0-Y3 with
// VMAXPS new, acc: when new is NaN the second source, acc, is kept, so
// NaNs are skipped as quantizeQ8K's a > amax skips them.
#define Q8KMAX(off) \
	VANDPS (off)(SI), Y15, Y4; \
	VANDPS (off+32)(SI), Y15, Y5; \
	VANDPS (off+64)(SI), Y15, Y6; \
	VANDPS (off+96)(SI), Y15, Y7; \
	VMAXPS Y0, Y4, Y0; \
	VMAXPS Y1, Y5, Y1; \
	VMAXPS Y2, Y6, Y2; \
	VMAXPS Y3, Y7, Y3

// func quantQ8KVecAVX2(x *float32, nb int, dst *byte)
//
// Per 256 floats, as quantizeQ8K: x_m = the first element of largest
// magnitude (NaNs skipped), a zero block when that is 0, else
// iscale = −127/x_m, d = 1/iscale, qs as Q8KCHUNK, bsums = sums of 16.
TEXT ·quantQ8KVecAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ dst+16(FP), DI
	TESTQ CX, CX
	JZ kdone
	MOVL $0x4b400000, AX // 12582912 = 1.5·2^23
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVL $0x007fffff, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	MOVL $0x0040007f, AX
	VMOVD AX, X11
	VPBROADCASTD X11, Y11
	VMOVDQU quantA2Perm<>(SB), Y10
	MOVL $0x01010101, AX
	VMOVD AX, X9
	VPBROADCASTD X9, Y9 // u8 ones
	MOVL $0x00010001, AX
	VMOVD AX, X8
	VPBROADCASTD X8, Y8 // s16 ones

kloop:
	MOVL $0x7fffffff, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // |x| mask (Y15 becomes iscale below)
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	Q8KMAX(0)
	Q8KMAX(128)
	Q8KMAX(256)
	Q8KMAX(384)
	Q8KMAX(512)
	Q8KMAX(640)
	Q8KMAX(768)
	Q8KMAX(896)
	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS X1, X0, X0 // every lane: amax
	VMOVD X0, AX
	TESTL AX, AX
	JNZ knonzero
	VPXOR Y0, Y0, Y0
	VMOVDQU Y0, (DI)
	VMOVDQU Y0, 32(DI)
	VMOVDQU Y0, 64(DI)
	VMOVDQU Y0, 96(DI)
	VMOVDQU Y0, 128(DI)
	VMOVDQU Y0, 160(DI)
	VMOVDQU Y0, 192(DI)
	VMOVDQU Y0, 224(DI)
	VMOVDQU Y0, 256(DI)
	VMOVDQU Y0, 260(DI) // bytes 260..291
	JMP knext

knonzero:
	// x_m: the first element whose |x| has amax's bits (NaN lanes never do).
	VPBROADCASTD X0, Y0
	XORQ R9, R9

kfind:
	VANDPS (SI)(R9*1), Y15, Y1
	VPCMPEQD Y0, Y1, Y1
	VMOVMSKPS Y1, AX
	TESTL AX, AX
	JNZ kfound
	ADDQ $32, R9
	JMP kfind

kfound:
	BSFL AX, AX
	SHRQ $2, R9
	ADDQ AX, R9
	VMOVSS (SI)(R9*4), X1
	MOVL $0xc2fe0000, AX // -127.0
	VMOVD AX, X2
	VDIVSS X1, X2, X2 // iscale = -127/x_m
	MOVL $0x3f800000, AX // 1.0
	VMOVD AX, X3
	VDIVSS X2, X3, X3 // d = 1/iscale
	VMOVSS X3, (DI)
	VBROADCASTSS X2, Y15
	MOVL $0xff, AX
	VMOVD AX, X7
	VPBROADCASTD X7, Y7

	// Groups g0..g15; Q8KCHUNK c yields S_c with g(2c) in its low half
	// and g(2c+1) in its high half, four partials each. VPHADDD b, a
	// gives per half [a0+a1 a2+a3 b0+b1 b2+b3], so two rounds leave
	// [g0 g2 g4 g6 | g1 g3 g5 g7] from S0..S3.
	Q8KCHUNK(0, 4, Y4)
	Q8KCHUNK(128, 36, Y5)
	VPHADDD Y5, Y4, Y4
	Q8KCHUNK(256, 68, Y5)
	Q8KCHUNK(384, 100, Y6)
	VPHADDD Y6, Y5, Y5
	VPHADDD Y5, Y4, Y4 // [g0 g2 g4 g6 | g1 g3 g5 g7]
	Q8KCHUNK(512, 132, Y5)
	Q8KCHUNK(640, 164, Y6)
	VPHADDD Y6, Y5, Y5
	Q8KCHUNK(768, 196, Y6)
	Q8KCHUNK(896, 228, Y14)
	VPHADDD Y14, Y6, Y6
	VPHADDD Y6, Y5, Y5 // [g8 g10 g12 g14 | g9 g11 g13 g15]
	VPACKSSDW Y5, Y4, Y4 // words [g0 g2 .. g14 | g1 g3 .. g15]
	VPERMQ $0xd8, Y4, Y4 // [g0 g2 g4 g6 g1 g3 g5 g7 | g8 .. g15 likewise]
	VPSHUFB quantA2Words<>(SB), Y4, Y4
	VMOVDQU Y4, 260(DI)

knext:
	ADDQ $1024, SI
	ADDQ $292, DI
	DECQ CX
	JNZ kloop

kdone:
	VZEROUPPER
	RET
