package kernels

// This file owns IQ4_NL (../shared/spec/gguf-and-quants.md §3.12): 32 values per block, a
// f16 scale and 4-bit indices into a fixed non-linear table; dequantization
// and the dot product with Q8_0 activations (§4.3). The dot keeps the
// single-accumulator lane layout of ggml's AVX2 tinyBLAS path (see
// legacy.go). There is no quantizer: ggml's IQ4_NL quantizer is a scale
// search, not plain rounding, and models arrive already quantized.

import "encoding/binary"

// iq4nlDescs is IQ4_NL's descriptor.
var iq4nlDescs = []typeDesc{
	{t: IQ4_NL, traits: traits{dequant: dequantIQ4NL, vecDotType: Q8_0, vecDot: vecDotIQ4NL},
		// Levels biased by 128, as Q8_0's, so signed at AVX2 (legacy.go).
		simd: simdDesc{fam: famQ8, q8: q8Format{bias: 128}, levels: q8LevelsIQ4NL, avx2Signed: true,
			avx2: panelKernels{q: q8PanelAVX2s}, avx512: panelKernels{q: q8PanelVNNI, vnni: true}}},
}

// kvIQ4NL is the IQ4_NL code table (shared with IQ4_XS).
var kvIQ4NL = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

const iq4nlBytes = 18 // d f16, qs u8[16]

func dequantIQ4NL(src []byte, dst []float32) {
	var wq [qk]int8
	for i := range len(dst) / qk {
		b := src[i*iq4nlBytes : (i+1)*iq4nlBytes]
		d := f16le(b)
		unpackNib(b[2:], &kvIQ4NL, &wq)
		for j, q := range wq {
			dst[i*qk+j] = d * float32(q)
		}
	}
}

// q8LevelsIQ4NL is the panels' block decoder (see q8LevelsQ8_0).
func q8LevelsIQ4NL(blk []byte, q *[qk]int8) float32 {
	for j, v := range blk[2:18] {
		q[j], q[j+16] = kvIQ4NL[v&0xf], kvIQ4NL[v>>4]
	}
	return F16ToF32(binary.LittleEndian.Uint16(blk))
}

func vecDotIQ4NL(n int, w, a []byte) float32 {
	var acc [8]float32
	for i := range n / qk {
		wb := w[i*iq4nlBytes : (i+1)*iq4nlBytes]
		ab := a[i*q8_0Bytes : (i+1)*q8_0Bytes]
		l := lanesNib((*[16]byte)(wb[2:]), &kvIQ4NL, actQs(ab, 2))
		accLanes(&acc, f16le(wb)*f16le(ab), &l)
	}
	return hsum8(&acc)
}
