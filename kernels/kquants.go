package kernels

// This file owns the K-quant family's shared pieces: the descriptors of
// Q2_K..Q6_K, IQ4_XS and the Q8_K activation type, the Q8_K block layout and
// its quantizer (ggml's quantize_row_q8_K semantics, ../shared/spec/gguf-and-quants.md §4.2),
// and small decoding helpers. Each weight format lives in its own
// kquants_<type>.go file: dequantization, the block dot product with Q8_K
// (§4.3: exact integer parts, then one float combination per super-block),
// the decoder to SIMD panel levels and, where provided, a round-to-nearest
// reference quantizer.

import (
	"encoding/binary"
	"math"
)

// qkK is the number of elements in one K-quant super-block.
const qkK = 256

// Q8_K block layout (292 bytes): d f32, qs i8[256], bsums i16[16].
const (
	q8kBlockBytes = 292
	q8kQsOff      = 4
	q8kBsumsOff   = 4 + qkK
)

// kquantDescs are the descriptors of the K-quant family and Q8_K. Q4_K,
// Q5_K and Q6_K have VNNI kernels at AVX-512; the word kernels of Q2_K,
// Q3_K and IQ4_XS (int16 scale pairs) are the same panels and the same
// bits at both widths, and need BW, not VNNI.
var kquantDescs = []typeDesc{
	{t: Q8_K, traits: traits{dequant: dequantQ8K, quantize: quantizeQ8K}},
	{t: Q2_K, traits: traits{dequant: dequantQ2K, quantize: quantizeQ2K, vecDotType: Q8_K, vecDot: vecDotQ2K},
		simd: simdDesc{fam: famK, layout: kLayoutMin16, kLevels: kLevelsQ2K,
			avx2: panelKernels{q: kMinAVX2x16w}, avx512: panelKernels{q: kMinAVX512x16w}}},
	{t: Q3_K, traits: traits{dequant: dequantQ3K, quantize: quantizeQ3K, vecDotType: Q8_K, vecDot: vecDotQ3K},
		simd: simdDesc{fam: famK, layout: kLayoutCorr4w, kLevels: kLevelsQ3K,
			avx2: panelKernels{q: kCorrAVX2x16w}, avx512: panelKernels{q: kCorrAVX512x16w}}},
	{t: Q4_K, traits: traits{dequant: dequantQ4K, quantize: quantizeQ4K, vecDotType: Q8_K, vecDot: vecDotQ4K},
		simd: simdDesc{fam: famK, layout: kLayoutMin32, kLevels: kLevelsQ4K,
			avx2: panelKernels{q: kMinAVX2x32}, avx512: panelKernels{q: kMinVNNI32, vnni: true}}},
	{t: Q5_K, traits: traits{dequant: dequantQ5K, quantize: quantizeQ5K, vecDotType: Q8_K, vecDot: vecDotQ5K},
		simd: simdDesc{fam: famK, layout: kLayoutMin32, kLevels: kLevelsQ5K,
			avx2: panelKernels{q: kMinAVX2x32}, avx512: panelKernels{q: kMinVNNI32, vnni: true}}},
	{t: Q6_K, traits: traits{dequant: dequantQ6K, quantize: quantizeQ6K, vecDotType: Q8_K, vecDot: vecDotQ6K},
		simd: simdDesc{fam: famK, layout: kLayoutCorr, kLevels: kLevelsQ6K,
			avx2: panelKernels{q: kCorrAVX2x16}, avx512: panelKernels{q: kCorrVNNI16, vnni: true}}},
	{t: IQ4_XS, traits: traits{dequant: dequantIQ4XS, quantize: quantizeIQ4XS, vecDotType: Q8_K, vecDot: vecDotIQ4XS},
		simd: simdDesc{fam: famK, layout: kLayoutSgn32, kLevels: kLevelsIQ4XS,
			avx2: panelKernels{q: kSgnAVX2x32w}, avx512: panelKernels{q: kSgnAVX512x32w}}},
}

// nearestInt rounds half to even, as ggml's nearest_int (adding 1.5·2^23
// makes the float32 adder do the rounding). Valid for |f| < 2^22. Callers
// pass products through an explicit float32 conversion so that no fused
// multiply-add skips the product's rounding.
func nearestInt(f float32) int32 {
	v := f + 12582912
	return int32(math.Float32bits(v)&0x7fffff) - 0x400000
}

// f16At reads a little-endian binary16 at b[0:2] as float32.
func f16At(b []byte) float32 { return halfToFloat(binary.LittleEndian.Uint16(b)) }

// quantizeQ8K converts activations to Q8_K blocks: per 256 values the element
// x_m of largest magnitude (first on ties) fixes iscale = −127/x_m, values
// round half to even and clamp at 127, bsums hold the sums per 16, and
// d = 1/iscale is kept as a full f32.
func quantizeQ8K(src []float32, dst []byte) {
	nb := len(src) / qkK
	for i := range nb {
		x := (*[qkK]float32)(src[i*qkK:])
		blk := dst[i*q8kBlockBytes : (i+1)*q8kBlockBytes]
		var amax, xm float32
		for _, v := range x {
			if a := float32(math.Abs(float64(v))); a > amax {
				amax, xm = a, v
			}
		}
		qs := blk[q8kQsOff : q8kQsOff+qkK]
		if amax == 0 {
			clear(blk)
			continue
		}
		iscale := -127 / xm
		for j, v := range x {
			q := nearestInt(float32(iscale * v))
			qs[j] = byte(int8(min(q, 127)))
		}
		for g := range qkK / 16 {
			var s int16
			for _, q := range qs[16*g : 16*g+16] {
				s += int16(int8(q))
			}
			binary.LittleEndian.PutUint16(blk[q8kBsumsOff+2*g:], uint16(s))
		}
		binary.LittleEndian.PutUint32(blk, math.Float32bits(1/iscale))
	}
}

// dequantQ8K expands Q8_K blocks (d·q); used by tests and as a reference.
func dequantQ8K(src []byte, dst []float32) {
	nb := len(dst) / qkK
	for i := range nb {
		blk := src[i*q8kBlockBytes : (i+1)*q8kBlockBytes]
		d := math.Float32frombits(binary.LittleEndian.Uint32(blk))
		y := (*[qkK]float32)(dst[i*qkK:])
		for j, q := range blk[q8kQsOff : q8kQsOff+qkK] {
			y[j] = d * float32(int8(q))
		}
	}
}

// q8kD reads the f32 scale of the Q8_K block starting at b.
func q8kD(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }

// q8kBsum reads group sum g (16 values each) of the Q8_K block starting at b.
func q8kBsum(b []byte, g int) int32 {
	return int32(int16(binary.LittleEndian.Uint16(b[q8kBsumsOff+2*g:])))
}

// q8kQs is the quants of the Q8_K block starting at b (as bytes; read as int8).
func q8kQs(b []byte) *[qkK]byte { return (*[qkK]byte)(b[q8kQsOff:]) }
