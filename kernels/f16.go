package kernels

// This file owns conversions between float32 and the two 16-bit float
// formats ggml stores: IEEE binary16 (F16) and bfloat16 (BF16), both
// directions, round-to-nearest-even, with subnormals, infinities and NaN
// handled (../shared/spec/gguf-and-quants.md §3.1).

import "math"

// f16Table maps every binary16 bit pattern to its float32 value. It is
// filled once during package initialisation and only read afterwards; a
// lookup beats the bit-trick conversion in the weight-decoding loops.
var f16Table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for h := range t {
		t[h] = f16ToF32Bits(uint16(h))
	}
	return &t
}()

// f16ToF32Bits converts binary16 to float32 exactly without a table:
// shifting exponent and mantissa into float32 position and multiplying by
// 2^112 rebiases normals and turns binary16 subnormals (which land on
// float32 subnormals) into the right normal values.
func f16ToF32Bits(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	em := uint32(h & 0x7fff)
	if em >= 0x7c00 { // inf or NaN: keep the payload
		return math.Float32frombits(sign | 0x7f800000 | (em&0x3ff)<<13)
	}
	v := math.Float32frombits(em<<13) * 0x1p112
	return math.Float32frombits(math.Float32bits(v) | sign)
}

// F16ToF32 converts an IEEE binary16 bit pattern to float32 (exact).
func F16ToF32(h uint16) float32 { return f16Table[h] }

// halfToFloat is F16ToF32 under the name the block decoders use.
func halfToFloat(h uint16) float32 { return f16Table[h] }

// F32ToF16 rounds f to the nearest binary16, ties to even, as x86 F16C
// does: overflow gives ±inf, NaN gives a quiet NaN with the sign and the top
// payload bits kept (0x7E00 for the default NaN).
func F32ToF16(f float32) uint16 {
	const (
		f16Overflow = (127 + 16) << 23                   // 65536: at or above this is inf
		minNormal   = (127 - 14) << 23                   // 2^-14, the smallest binary16 normal
		denormMagic = ((127 - 15) + (23 - 10) + 1) << 23 // 0.5: adding it rounds to the subnormal grid
	)
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	b &^= 0x80000000
	switch {
	case b > 0x7f800000: // NaN
		return sign | 0x7e00 | uint16(b>>13)&0x1ff
	case b >= f16Overflow:
		return sign | 0x7c00
	case b < minNormal:
		// The float32 adder rounds to nearest even at the binary16
		// subnormal spacing once the magic 0.5 fixes the exponent.
		v := math.Float32frombits(b) + math.Float32frombits(denormMagic)
		return sign | uint16(math.Float32bits(v)-denormMagic)
	default:
		odd := (b >> 13) & 1
		b -= (127 - 15) << 23       // rebias
		b += 0xfff + odd            // round half to even
		return sign | uint16(b>>13) // a carry into exponent 31 is inf, as it should be
	}
}

// RoundF16 rounds f to the nearest binary16 value and returns it as float32.
func RoundF16(f float32) float32 { return f16Table[F32ToF16(f)] }

// BF16ToF32 converts a bfloat16 bit pattern to float32 (exact).
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 rounds f to bfloat16 as ggml does: NaN becomes quiet (bit 6 of
// the upper half set), everything else rounds to nearest even, overflowing
// to inf.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// RoundBF16 rounds f to the nearest bfloat16 value and returns it as float32.
func RoundBF16(f float32) float32 { return BF16ToF32(F32ToBF16(f)) }
