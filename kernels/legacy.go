package kernels

// This file owns the legacy 32-element block formats Q4_0, Q4_1, Q5_0,
// Q5_1, Q8_0 and the Q8_1 activation type (../shared/spec/gguf-and-quants.md §3.2–3.6,
// §3.15): dequantization, ggml's reference weight quantizers, the x86 AVX2
// activation quantizers (§4.2) and the block dot products (§4.3).
//
// Dot products keep the AVX2 kernels' float layout: each block's integer
// products are summed in eight lanes of four consecutive elements, every
// lane is accumulated across blocks with a fused multiply-add by the
// float32 product of the two f16 scales, and the lanes are added with
// hsum8 at the end. The integer parts are exact.

import (
	"encoding/binary"
	"math"
)

const qk = 32 // elements per legacy block

// legacyDescs are the legacy types' descriptors. The biased types' AVX2
// panels use VPMADDUBSW, whose pair sums saturate for levels that reach
// 255 (Q8_0's, biased by 128), so Q8_0 keeps signed levels there.
var legacyDescs = []typeDesc{
	{t: Q8_0, traits: traits{dequant: dequantQ8_0, quantize: quantizeQ8_0, vecDotType: Q8_0, vecDot: vecDotQ8_0},
		simd: simdDesc{fam: famQ8, q8: q8Format{bias: 128}, levels: q8LevelsQ8_0, avx2Signed: true,
			avx2: panelKernels{q: q8PanelAVX2s}, avx512: panelKernels{q: q8PanelVNNI, vnni: true}}},
	{t: Q8_1, traits: traits{dequant: dequantQ8_1, quantize: quantizeActQ8_1}},
	{t: Q4_0, traits: traits{dequant: dequantQ4_0, quantize: quantizeQ4_0, vecDotType: Q8_0, vecDot: vecDotQ4_0},
		simd: simdDesc{fam: famQ8, q8: q8Format{bias: 8}, levels: q8LevelsQ4_0,
			avx2: panelKernels{q: q8PanelAVX2}, avx512: panelKernels{q: q8PanelVNNI, vnni: true}}},
	{t: Q4_1, traits: traits{dequant: dequantQ4_1, quantize: quantizeQ4_1, vecDotType: Q8_1, vecDot: vecDotQ4_1},
		simd: minSIMD},
	{t: Q5_0, traits: traits{dequant: dequantQ5_0, quantize: quantizeQ5_0, vecDotType: Q8_0, vecDot: vecDotQ5_0},
		simd: simdDesc{fam: famQ8, q8: q8Format{bias: 16}, levels: q8LevelsQ5_0,
			avx2: panelKernels{q: q8PanelAVX2}, avx512: panelKernels{q: q8PanelVNNI, vnni: true}}},
	{t: Q5_1, traits: traits{dequant: dequantQ5_1, quantize: quantizeQ5_1, vecDotType: Q8_1, vecDot: vecDotQ5_1},
		simd: minSIMD},
}

// minSIMD is Q4_1's and Q5_1's: the min panels (panel_min.go).
var minSIMD = simdDesc{fam: famQ8, q8: q8Format{min: true},
	avx2: panelKernels{q: q8PanelAVX2m}, avx512: panelKernels{q: q8PanelAVX512m}}

// q8LevelsQ8_0, like each type's q8Levels… decoder, turns one block into
// its signed levels and its float scale (../shared/spec/gguf-and-quants.md §3), which the
// Go panel repack (repackQ8Levels) biases.
func q8LevelsQ8_0(blk []byte, q *[qk]int8) float32 {
	for j := range qk {
		q[j] = int8(blk[2+j])
	}
	return F16ToF32(binary.LittleEndian.Uint16(blk))
}

func q8LevelsQ4_0(blk []byte, q *[qk]int8) float32 {
	for j, v := range blk[2:18] {
		q[j], q[j+16] = int8(v&0xf)-8, int8(v>>4)-8
	}
	return F16ToF32(binary.LittleEndian.Uint16(blk))
}

func q8LevelsQ5_0(blk []byte, q *[qk]int8) float32 {
	h := binary.LittleEndian.Uint32(blk[2:])
	for j, v := range blk[6:22] {
		q[j] = int8(v&0xf|byte(h>>j&1)<<4) - 16
		q[j+16] = int8(v>>4|byte(h>>(j+16)&1)<<4) - 16
	}
	return F16ToF32(binary.LittleEndian.Uint16(blk))
}

// Block sizes in bytes.
const (
	q8_0Bytes = 34 // d f16, qs i8[32]
	q8_1Bytes = 36 // d f16, s f16, qs i8[32]
	q4_0Bytes = 18 // d f16, qs u8[16]
	q4_1Bytes = 20 // d f16, m f16, qs u8[16]
	q5_0Bytes = 22 // d f16, qh u8[4], qs u8[16]
	q5_1Bytes = 24 // d f16, m f16, qh u8[4], qs u8[16]
)

func f16le(b []byte) float32 { return f16Table[binary.LittleEndian.Uint16(b)] }

func putF16(b []byte, f float32) { binary.LittleEndian.PutUint16(b, F32ToF16(f)) }

// roundAway is C roundf: nearest integer, ties away from zero.
func roundAway(f float32) int32 {
	return int32(math.Round(float64(f)))
}

// absMax returns max |x|.
func absMax(x []float32) float32 {
	var m float32
	for _, v := range x {
		m = max(m, float32(math.Abs(float64(v))))
	}
	return m
}

// signedAbsMax returns the element of largest magnitude (the first one on
// ties) and its magnitude, as ggml's reference quantizers pick it.
func signedAbsMax(x []float32) (v, amax float32) {
	for _, e := range x {
		if a := float32(math.Abs(float64(e))); a > amax {
			amax, v = a, e
		}
	}
	return v, amax
}

// The lane helpers compute the AVX2 maddubs/madd step straight from the
// packed weights: eight sums of four consecutive products of a block's
// signed weight integers with the activation codes a.

// lanesI8 is the step for int8 weights (Q8_0).
func lanesI8(w, a *[qk]byte) (l [8]float32) {
	for k := range 8 {
		w4, a4 := (*[4]byte)(w[4*k:]), (*[4]byte)(a[4*k:])
		s := int32(int8(w4[0]))*int32(int8(a4[0])) + int32(int8(w4[1]))*int32(int8(a4[1])) +
			int32(int8(w4[2]))*int32(int8(a4[2])) + int32(int8(w4[3]))*int32(int8(a4[3]))
		l[k] = float32(s)
	}
	return l
}

// lanesNib is the step for 4-bit codes mapped through tab: low nibbles
// are elements 0..15 (lanes 0..3), high nibbles 16..31 (lanes 4..7).
func lanesNib(qs *[16]byte, tab *[16]int8, a *[qk]byte) (l [8]float32) {
	for k := range 4 {
		q4, lo, hi := (*[4]byte)(qs[4*k:]), (*[4]byte)(a[4*k:]), (*[4]byte)(a[16+4*k:])
		s := int32(tab[q4[0]&15])*int32(int8(lo[0])) + int32(tab[q4[1]&15])*int32(int8(lo[1])) +
			int32(tab[q4[2]&15])*int32(int8(lo[2])) + int32(tab[q4[3]&15])*int32(int8(lo[3]))
		h := int32(tab[q4[0]>>4])*int32(int8(hi[0])) + int32(tab[q4[1]>>4])*int32(int8(hi[1])) +
			int32(tab[q4[2]>>4])*int32(int8(hi[2])) + int32(tab[q4[3]>>4])*int32(int8(hi[3]))
		l[k], l[k+4] = float32(s), float32(h)
	}
	return l
}

// lanesQ5 is the step for 5-bit codes minus off; bit e of h is element
// e's fifth bit.
func lanesQ5(qs *[16]byte, h uint32, off int32, a *[qk]byte) (l [8]float32) {
	for k := range 4 {
		q4, lo, hi := (*[4]byte)(qs[4*k:]), (*[4]byte)(a[4*k:]), (*[4]byte)(a[16+4*k:])
		hl, hh := int32(h>>(4*k)), int32(h>>(16+4*k))
		s := (int32(q4[0]&15)|hl<<4&16-off)*int32(int8(lo[0])) + (int32(q4[1]&15)|hl<<3&16-off)*int32(int8(lo[1])) +
			(int32(q4[2]&15)|hl<<2&16-off)*int32(int8(lo[2])) + (int32(q4[3]&15)|hl<<1&16-off)*int32(int8(lo[3]))
		t := (int32(q4[0]>>4)|hh<<4&16-off)*int32(int8(hi[0])) + (int32(q4[1]>>4)|hh<<3&16-off)*int32(int8(hi[1])) +
			(int32(q4[2]>>4)|hh<<2&16-off)*int32(int8(hi[2])) + (int32(q4[3]>>4)|hh<<1&16-off)*int32(int8(hi[3]))
		l[k], l[k+4] = float32(s), float32(t)
	}
	return l
}

// unpackNib expands 4-bit codes through tab, in element order.
func unpackNib(qs []byte, tab *[16]int8, wq *[qk]int8) {
	for j, q := range qs[:16] {
		wq[j] = tab[q&0xf]
		wq[j+16] = tab[q>>4]
	}
}

// Code tables of the linear 4-bit formats.
var (
	tabQ4_0 = [16]int8{-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7}
	tabQ4_1 = [16]int8{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
)

// actQs returns the 32 activation codes of a Q8_0 (off 2) or Q8_1 (off 4) block.
func actQs(blk []byte, off int) *[qk]byte { return (*[qk]byte)(blk[off : off+qk]) }

// accLanes adds d·l into acc with one fused multiply-add per lane (the
// tie check as in accFMA).
func accLanes(acc *[8]float32, d float32, l *[8]float32) {
	dd := float64(d)
	var s [8]float64
	key := ^uint32(0)
	for k := range 8 {
		s[k] = dd*float64(l[k]) + float64(acc[k])
		key = min(key, tieKey(s[k]))
	}
	if key == 0 {
		for k := range 8 {
			acc[k] = fma32(d, l[k], acc[k])
		}
		return
	}
	for k := range 8 {
		acc[k] = float32(s[k])
	}
}

// ---- Q8_0 ----

func dequantQ8_0(src []byte, dst []float32) { dequantInt8Blocks(src, dst, q8_0Bytes, 2) }

// dequantInt8Blocks expands blocks of an f16 scale d and 32 int8 quants
// starting at byte off of each blockBytes-long block (Q8_0, Q8_1).
func dequantInt8Blocks(src []byte, dst []float32, blockBytes, off int) {
	for i := range len(dst) / qk {
		b := src[i*blockBytes : (i+1)*blockBytes]
		d := f16le(b)
		for j, q := range b[off:] {
			dst[i*qk+j] = float32(int8(q)) * d
		}
	}
}

// quantizeQ8_0 is ggml's reference quantizer: d = amax/127, id = 1/d,
// q = roundf(x·id) (ties away from zero).
func quantizeQ8_0(src []float32, dst []byte) {
	for i := range len(src) / qk {
		x := src[i*qk : (i+1)*qk]
		b := dst[i*q8_0Bytes : (i+1)*q8_0Bytes]
		d := absMax(x) / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(b, d)
		for j, v := range x {
			b[2+j] = byte(int8(roundAway(float32(v * id))))
		}
	}
}

// actQ8 quantizes one 32-element activation block as ggml's x86 AVX2
// build: id = 127/amax computed directly, q = round-half-even(x·id)
// saturated to int8, d = amax/127 stored as f16. It returns the float32 d
// and Σq (for Q8_1).
func actQ8(x []float32, qs []byte) (d float32, sum int32) {
	amax := absMax(x)
	d = amax / 127
	var id float32
	if amax != 0 {
		id = 127 / amax
	}
	for j, v := range x[:qk] {
		q := min(max(nearestInt(float32(v*id)), -128), 127)
		qs[j] = byte(int8(q))
		sum += q
	}
	return d, sum
}

// quantizeActQ8_0 converts activations to Q8_0 with x86 semantics.
func quantizeActQ8_0(src []float32, dst []byte) {
	for i := range len(src) / qk {
		b := dst[i*q8_0Bytes : (i+1)*q8_0Bytes]
		d, _ := actQ8(src[i*qk:(i+1)*qk], b[2:])
		putF16(b, d)
	}
}

func vecDotQ8_0(n int, w, a []byte) float32 {
	var acc [8]float32
	for i := range n / qk {
		wb := w[i*q8_0Bytes : (i+1)*q8_0Bytes]
		ab := a[i*q8_0Bytes : (i+1)*q8_0Bytes]
		l := lanesI8(actQs(wb, 2), actQs(ab, 2))
		accLanes(&acc, f16le(wb)*f16le(ab), &l)
	}
	return hsum8(&acc)
}

// ---- Q8_1 (activation type) ----

func dequantQ8_1(src []byte, dst []float32) { dequantInt8Blocks(src, dst, q8_1Bytes, 4) }

// quantizeActQ8_1 converts activations to Q8_1 with x86 semantics: Q8_0's
// d and qs plus s = f16(d·Σq) with the unrounded d.
func quantizeActQ8_1(src []float32, dst []byte) {
	for i := range len(src) / qk {
		b := dst[i*q8_1Bytes : (i+1)*q8_1Bytes]
		d, sum := actQ8(src[i*qk:(i+1)*qk], b[4:])
		putF16(b, d)
		putF16(b[2:], d*float32(sum))
	}
}

// ---- Q4_0 ----

func dequantQ4_0(src []byte, dst []float32) {
	var wq [qk]int8
	for i := range len(dst) / qk {
		b := src[i*q4_0Bytes : (i+1)*q4_0Bytes]
		d := f16le(b)
		unpackNib(b[2:], &tabQ4_0, &wq)
		for j, q := range wq {
			dst[i*qk+j] = float32(q) * d
		}
	}
}

// quantizeQ4_0 is ggml's reference: v = the element of largest magnitude,
// d = v/−8, q = min(15, trunc(x/d + 8.5)).
func quantizeQ4_0(src []float32, dst []byte) {
	for i := range len(src) / qk {
		x := src[i*qk : (i+1)*qk]
		b := dst[i*q4_0Bytes : (i+1)*q4_0Bytes]
		v, _ := signedAbsMax(x)
		d := v / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(b, d)
		for j := range 16 {
			q0 := min(15, int8(float32(x[j]*id)+8.5))
			q1 := min(15, int8(float32(x[j+16]*id)+8.5))
			b[2+j] = byte(q0) | byte(q1)<<4
		}
	}
}

func vecDotQ4_0(n int, w, a []byte) float32 {
	var acc [8]float32
	for i := range n / qk {
		wb := w[i*q4_0Bytes : (i+1)*q4_0Bytes]
		ab := a[i*q8_0Bytes : (i+1)*q8_0Bytes]
		l := lanesNib((*[16]byte)(wb[2:]), &tabQ4_0, actQs(ab, 2))
		accLanes(&acc, f16le(wb)*f16le(ab), &l)
	}
	return hsum8(&acc)
}

// vecDotQ4_0Repack is the dot ggml's x86 repacked Q4_0 GEMM computes
// (weights interleaved as q4_0_8x8 at load when a matrix has a multiple of
// 8 rows): each block's full 32-element integer sum, converted to float32,
// fused into one accumulator with the float32 product of the two scales.
func vecDotQ4_0Repack(n int, w, a []byte) float32 {
	var acc float32
	for i := range n / qk {
		wb := w[i*q4_0Bytes : (i+1)*q4_0Bytes]
		ab := a[i*q8_0Bytes : (i+1)*q8_0Bytes]
		l := lanesNib((*[16]byte)(wb[2:]), &tabQ4_0, actQs(ab, 2))
		var sum float32 // exact: |Σ| < 2^24
		for _, v := range l {
			sum += v
		}
		acc = fma32(sum, f16le(wb)*f16le(ab), acc)
	}
	return acc
}

// ---- Q4_1 ----

func dequantQ4_1(src []byte, dst []float32) {
	var wq [qk]int8
	for i := range len(dst) / qk {
		b := src[i*q4_1Bytes : (i+1)*q4_1Bytes]
		d, m := f16le(b), f16le(b[2:])
		unpackNib(b[4:], &tabQ4_1, &wq)
		for j, q := range wq {
			dst[i*qk+j] = float32(float32(q)*d) + m
		}
	}
}

// minMax returns the smallest and largest element.
func minMax(x []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

// quantizeQ4_1 is ggml's reference: d = (max−min)/15, m = min,
// q = min(15, trunc((x−min)/d + 0.5)).
func quantizeQ4_1(src []float32, dst []byte) {
	for i := range len(src) / qk {
		x := src[i*qk : (i+1)*qk]
		b := dst[i*q4_1Bytes : (i+1)*q4_1Bytes]
		lo, hi := minMax(x)
		d := (hi - lo) / 15
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(b, d)
		putF16(b[2:], lo)
		for j := range 16 {
			q0 := min(15, int8(float32((x[j]-lo)*id)+0.5))
			q1 := min(15, int8(float32((x[j+16]-lo)*id)+0.5))
			b[4+j] = byte(q0) | byte(q1)<<4
		}
	}
}

// vecDotQ4_1 adds the min term as the AVX2 kernel does: Σ f16(m)·f16(s) in
// a scalar float32, added after the lanes' horizontal sum.
func vecDotQ4_1(n int, w, a []byte) float32 {
	var acc [8]float32
	var summs float32
	for i := range n / qk {
		wb := w[i*q4_1Bytes : (i+1)*q4_1Bytes]
		ab := a[i*q8_1Bytes : (i+1)*q8_1Bytes]
		summs += float32(f16le(wb[2:]) * f16le(ab[2:]))
		l := lanesNib((*[16]byte)(wb[4:]), &tabQ4_1, actQs(ab, 4))
		accLanes(&acc, f16le(wb)*f16le(ab), &l)
	}
	return hsum8(&acc) + summs
}

// ---- Q5_0 ----

// unpackQ5 rebuilds the 5-bit integers minus off: low nibbles are elements
// 0..15, high nibbles 16..31, bit e of h is element e's fifth bit.
func unpackQ5(h uint32, qs []byte, off int8, wq *[qk]int8) {
	for j, q := range qs[:16] {
		wq[j] = int8(q&0xf|byte(h>>j&1)<<4) - off
		wq[j+16] = int8(q>>4|byte(h>>(j+16)&1)<<4) - off
	}
}

func dequantQ5_0(src []byte, dst []float32) {
	var wq [qk]int8
	for i := range len(dst) / qk {
		b := src[i*q5_0Bytes : (i+1)*q5_0Bytes]
		d := f16le(b)
		unpackQ5(binary.LittleEndian.Uint32(b[2:]), b[6:], 16, &wq)
		for j, q := range wq {
			dst[i*qk+j] = float32(q) * d
		}
	}
}

// packQ5 stores 32 five-bit integers as qh (little-endian) and qs.
func packQ5(q *[qk]int8, qh, qs []byte) {
	var h uint32
	for j := range 16 {
		qs[j] = byte(q[j])&0xf | byte(q[j+16])<<4
		h |= uint32(q[j]>>4&1)<<j | uint32(q[j+16]>>4&1)<<(j+16)
	}
	binary.LittleEndian.PutUint32(qh, h)
}

// quantizeQ5_0 is ggml's reference: d = v/−16 for the element v of largest
// magnitude, q = min(31, trunc(x/d + 16.5)).
func quantizeQ5_0(src []float32, dst []byte) {
	var q [qk]int8
	for i := range len(src) / qk {
		x := src[i*qk : (i+1)*qk]
		b := dst[i*q5_0Bytes : (i+1)*q5_0Bytes]
		v, _ := signedAbsMax(x)
		d := v / -16
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(b, d)
		for j, e := range x {
			q[j] = min(31, int8(float32(e*id)+16.5))
		}
		packQ5(&q, b[2:6], b[6:])
	}
}

func vecDotQ5_0(n int, w, a []byte) float32 {
	var acc [8]float32
	for i := range n / qk {
		wb := w[i*q5_0Bytes : (i+1)*q5_0Bytes]
		ab := a[i*q8_0Bytes : (i+1)*q8_0Bytes]
		l := lanesQ5((*[16]byte)(wb[6:]), binary.LittleEndian.Uint32(wb[2:]), 16, actQs(ab, 2))
		accLanes(&acc, f16le(wb)*f16le(ab), &l)
	}
	return hsum8(&acc)
}

// ---- Q5_1 ----

func dequantQ5_1(src []byte, dst []float32) {
	var wq [qk]int8
	for i := range len(dst) / qk {
		b := src[i*q5_1Bytes : (i+1)*q5_1Bytes]
		d, m := f16le(b), f16le(b[2:])
		unpackQ5(binary.LittleEndian.Uint32(b[4:]), b[8:], 0, &wq)
		for j, q := range wq {
			dst[i*qk+j] = float32(float32(q)*d) + m
		}
	}
}

// quantizeQ5_1 is ggml's reference: d = (max−min)/31, m = min,
// q = trunc((x−min)/d + 0.5) (clamped at 31 against float overshoot).
func quantizeQ5_1(src []float32, dst []byte) {
	var q [qk]int8
	for i := range len(src) / qk {
		x := src[i*qk : (i+1)*qk]
		b := dst[i*q5_1Bytes : (i+1)*q5_1Bytes]
		lo, hi := minMax(x)
		d := (hi - lo) / 31
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(b, d)
		putF16(b[2:], lo)
		for j, e := range x {
			q[j] = min(31, int8(float32((e-lo)*id)+0.5))
		}
		packQ5(&q, b[4:8], b[8:])
	}
}

func vecDotQ5_1(n int, w, a []byte) float32 {
	var acc [8]float32
	var summs float32
	for i := range n / qk {
		wb := w[i*q5_1Bytes : (i+1)*q5_1Bytes]
		ab := a[i*q8_1Bytes : (i+1)*q8_1Bytes]
		summs += float32(f16le(wb[2:]) * f16le(ab[2:]))
		l := lanesQ5((*[16]byte)(wb[8:]), binary.LittleEndian.Uint32(wb[4:]), 0, actQs(ab, 4))
		accLanes(&acc, f16le(wb)*f16le(ab), &l)
	}
	return hsum8(&acc) + summs
}
