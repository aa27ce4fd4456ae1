package kernels

// This file owns MXFP4 (../shared/spec/gguf-and-quants.md §3.14): 32 E2M1 values per block
// sharing one E8M0 exponent; dequantization and the dot product with Q8_0
// activations (§4.3). The dot follows ggml's AVX2 kernel: blocks alternate
// between two 8-lane accumulators, the lanes are summed once, and a last odd
// block is added as a scalar. There is no quantizer (models arrive
// quantized).

import "math"

// mxfp4Descs is MXFP4's descriptor.
var mxfp4Descs = []typeDesc{
	{t: MXFP4, traits: traits{dequant: dequantMXFP4, vecDotType: Q8_0, vecDot: vecDotMXFP4},
		simd: simdDesc{fam: famQ8, q8: q8Format{bias: 12}, levels: q8LevelsMXFP4,
			avx2: panelKernels{q: q8PanelAVX2}, avx512: panelKernels{q: q8PanelVNNI, vnni: true}}},
}

// kvFP4 holds the E2M1 values doubled, as int8; e8m0Half halves the scale
// to compensate.
var kvFP4 = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

const mxfp4Bytes = 17 // e u8, qs u8[16]

// e8m0Half is 2^(e−128) as a float32, subnormal for e < 2.
func e8m0Half(e byte) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

// q8LevelsMXFP4 is the panels' block decoder (see q8LevelsQ8_0).
func q8LevelsMXFP4(blk []byte, q *[qk]int8) float32 {
	for j, v := range blk[1:17] {
		q[j], q[j+16] = kvFP4[v&0xf], kvFP4[v>>4]
	}
	return e8m0Half(blk[0])
}

func dequantMXFP4(src []byte, dst []float32) {
	var wq [qk]int8
	for i := range len(dst) / qk {
		b := src[i*mxfp4Bytes : (i+1)*mxfp4Bytes]
		d := e8m0Half(b[0])
		unpackNib(b[1:], &kvFP4, &wq)
		for j, q := range wq {
			dst[i*qk+j] = float32(q) * d
		}
	}
}

func vecDotMXFP4(n int, w, a []byte) float32 {
	var acc [2][8]float32
	var wq [qk]int8
	nb := n / qk
	for i := range nb &^ 1 {
		wb := w[i*mxfp4Bytes : (i+1)*mxfp4Bytes]
		ab := a[i*q8_0Bytes : (i+1)*q8_0Bytes]
		l := lanesNib((*[16]byte)(wb[1:]), &kvFP4, actQs(ab, 2))
		accLanes(&acc[i&1], f16le(ab)*e8m0Half(wb[0]), &l)
	}
	for k := range 8 {
		acc[0][k] += acc[1][k]
	}
	sum := hsum8(&acc[0])
	if nb%2 == 1 {
		i := nb - 1
		wb := w[i*mxfp4Bytes : (i+1)*mxfp4Bytes]
		ab := a[i*q8_0Bytes : (i+1)*q8_0Bytes]
		unpackNib(wb[1:], &kvFP4, &wq)
		var s int32
		for j, q := range ab[2:q8_0Bytes] {
			s += int32(wq[j]) * int32(int8(q))
		}
		d := f16le(ab) * e8m0Half(wb[0])
		sum += float32(d * float32(s)) // rounded product, then the add (no FMA)
	}
	return sum
}
