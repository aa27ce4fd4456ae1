package kernels

// This file owns the plain float formats F32, F16 and BF16 (descriptors,
// row conversion) and the 8-lane float32 accumulation helpers the block
// dot products share. F32 and F16 rows follow ggml's AVX-512 build instead
// (avx512.go); BF16 rows keep this model of the AVX2 build, where results
// agree to the last bits, not just to rounding noise:
//   - float rows (llamafile tinyBLAS, used by ggml for F32/F16/BF16 mul_mat
//     when the row length is a multiple of 8): eight float32 lanes, lane l
//     takes elements i ≡ l (mod 8) with fused multiply-add, then one
//     horizontal sum (hsum8);
//   - row lengths not a multiple of 8 fall back to ggml_vec_dot_f16/f32:
//     four 8-lane accumulators over 32-element steps, reduced pairwise, with
//     the leftover products added in float64 (ggml_float).
// Activations for F16/BF16 weights are first rounded to F16/BF16, so the
// float32 products equal ggml's half×half products exactly.

import (
	"encoding/binary"
	"math"
)

// floatDescs are the float types' descriptors. Their SIMD panels are the
// same for all three: weights widened to float32, outer products with
// broadcast activations.
var floatDescs = []typeDesc{
	{t: F32, traits: traits{dequant: dequantF32, quantize: quantizeF32, vecDotType: F32, vecDot: vecDotF32},
		simd: floatSIMD},
	{t: F16, traits: traits{dequant: dequantF16, quantize: quantizeF16, vecDotType: F16, vecDot: vecDotF16},
		simd: floatSIMD},
	{t: BF16, traits: traits{dequant: dequantBF16, quantize: quantizeBF16, vecDotType: BF16, vecDot: vecDotBF16},
		goDesc: "plain Go in the order of llama.cpp's AVX2 build (MatMul; the AVX-512 BF16 dot is not modelled)",
		simd:   floatSIMD},
}

var floatSIMD = simdDesc{fam: famFloat,
	avx2:   panelKernels{fp: [3]func(*fpTile){fPanelAVX2x12, fPanelAVX2x4, fPanelAVX2x1}},
	avx512: panelKernels{fp: [3]func(*fpTile){fPanelAVX512x12, fPanelAVX512x4, fPanelAVX512x1}}}

// fma32 returns a·b+c rounded once to float32, as the FMA instruction does.
// The product of two float32 is exact in float64; the float64 sum may round,
// and rounding that again to float32 differs from a single rounding only if
// the float64 sum sits exactly on a float32 midpoint, which is checked
// (for normal float32 results; the subnormal range is not worth the cost).
func fma32(a, b, c float32) float32 {
	s := float64(a)*float64(b) + float64(c)
	if tieKey(s) == 0 {
		return fma32Tie(a, b, c)
	}
	return float32(s)
}

// fma32Tie breaks a float32 tie in s = fl64(a·b+c) by the sign of the
// float64 rounding error (TwoSum), nudging s one float64 ulp toward the
// exact value before the final rounding.
func fma32Tie(a, b, c float32) float32 {
	p, cc := float64(a)*float64(b), float64(c)
	s := p + cc
	bb := s - p
	if e := (p - (s - bb)) + (cc - bb); e != 0 { // s is not exact: step toward the exact sum
		u := math.Float64bits(s)
		if (e > 0) == (s > 0) {
			u++
		} else {
			u--
		}
		s = math.Float64frombits(u)
	}
	return float32(s)
}

// hsum8 adds eight float32 lanes in the order of AVX hsum_float_8:
// halves first, then lanes two apart, then the last pair.
func hsum8(v *[8]float32) float32 {
	s0, s1, s2, s3 := v[0]+v[4], v[1]+v[5], v[2]+v[6], v[3]+v[7]
	return (s0 + s2) + (s1 + s3)
}

// dotFloat is Σ w[i]·x[i] (len(x) ≥ len(w)) with ggml's x86 float32
// accumulation; see the file comment. half says that both operands are
// F16 or BF16 values, whose float32 products are exact, so a plain float32
// add after the multiply rounds exactly as the fused multiply-add does.
func dotFloat(w, x []float32, half bool) float32 {
	n := len(w)
	x = x[:n]
	if n%8 != 0 {
		return dotFloatVec(w, x)
	}
	var acc [8]float32
	if half {
		accHalf(&acc, w, x)
	} else {
		accFMA(&acc, w, x)
	}
	return hsum8(&acc)
}

// accFMA adds w·x (len a multiple of 8) into eight lanes, element i into
// lane i%8, with fused multiply-adds. Each step first takes the float64
// sums and, unless one of them sits on a float32 midpoint (one predictable
// branch per eight elements), rounds them directly.
func accFMA(acc *[8]float32, w, x []float32) {
	x = x[:len(w)]
	a0, a1, a2, a3, a4, a5, a6, a7 := acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6], acc[7]
	for i := 0; i+8 <= len(w); i += 8 {
		ww, xx := (*[8]float32)(w[i:]), (*[8]float32)(x[i:])
		s0 := float64(ww[0])*float64(xx[0]) + float64(a0)
		s1 := float64(ww[1])*float64(xx[1]) + float64(a1)
		s2 := float64(ww[2])*float64(xx[2]) + float64(a2)
		s3 := float64(ww[3])*float64(xx[3]) + float64(a3)
		s4 := float64(ww[4])*float64(xx[4]) + float64(a4)
		s5 := float64(ww[5])*float64(xx[5]) + float64(a5)
		s6 := float64(ww[6])*float64(xx[6]) + float64(a6)
		s7 := float64(ww[7])*float64(xx[7]) + float64(a7)
		if min(tieKey(s0), tieKey(s1), tieKey(s2), tieKey(s3), tieKey(s4), tieKey(s5), tieKey(s6), tieKey(s7)) == 0 {
			a0, a1, a2, a3 = fma32(ww[0], xx[0], a0), fma32(ww[1], xx[1], a1), fma32(ww[2], xx[2], a2), fma32(ww[3], xx[3], a3)
			a4, a5, a6, a7 = fma32(ww[4], xx[4], a4), fma32(ww[5], xx[5], a5), fma32(ww[6], xx[6], a6), fma32(ww[7], xx[7], a7)
			continue
		}
		a0, a1, a2, a3 = float32(s0), float32(s1), float32(s2), float32(s3)
		a4, a5, a6, a7 = float32(s4), float32(s5), float32(s6), float32(s7)
	}
	*acc = [8]float32{a0, a1, a2, a3, a4, a5, a6, a7}
}

// tieKey is zero exactly when the float64 s lies on a float32 midpoint
// (its low 29 mantissa bits are 1000…0), where rounding it again could
// differ from a single rounding.
func tieKey(s float64) uint32 { return uint32(math.Float64bits(s))<<3 ^ 1<<31 }

// accHalf is accFMA for half-precision operands (exact products).
func accHalf(acc *[8]float32, w, x []float32) {
	x = x[:len(w)]
	a0, a1, a2, a3, a4, a5, a6, a7 := acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6], acc[7]
	for i := 0; i+8 <= len(w); i += 8 {
		ww, xx := (*[8]float32)(w[i:]), (*[8]float32)(x[i:])
		a0 += ww[0] * xx[0]
		a1 += ww[1] * xx[1]
		a2 += ww[2] * xx[2]
		a3 += ww[3] * xx[3]
		a4 += ww[4] * xx[4]
		a5 += ww[5] * xx[5]
		a6 += ww[6] * xx[6]
		a7 += ww[7] * xx[7]
	}
	*acc = [8]float32{a0, a1, a2, a3, a4, a5, a6, a7}
}

// dotFloatVec is ggml_vec_dot_f16/f32's AVX layout: 32-element steps into
// four 8-lane accumulators, reduced as GGML_F32x8_REDUCE (acc0+acc2,
// acc1+acc3, then their sum, then low+high halves and two pairwise adds),
// with the leftover products summed in float64.
func dotFloatVec(w, x []float32) float32 {
	n := len(w)
	np := n &^ 31
	var acc [4][8]float32
	for i := 0; i < np; i += 32 {
		for j := range 4 {
			ww, xx := (*[8]float32)(w[i+8*j:]), (*[8]float32)(x[i+8*j:])
			for l := range 8 {
				acc[j][l] = fma32(ww[l], xx[l], acc[j][l])
			}
		}
	}
	var r [8]float32
	for l := range 8 {
		r[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l])
	}
	t0, t1, t2, t3 := r[0]+r[4], r[1]+r[5], r[2]+r[6], r[3]+r[7]
	sum := float64((t0 + t1) + (t2 + t3))
	for i := np; i < n; i++ {
		sum += float64(w[i] * x[i])
	}
	return float32(sum)
}

func dequantF32(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

func quantizeF32(src []float32, dst []byte) {
	for i, v := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
	}
}

func dequantF16(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = f16Table[binary.LittleEndian.Uint16(src[2*i:])]
	}
}

func quantizeF16(src []float32, dst []byte) {
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], F32ToF16(v))
	}
}

func dequantBF16(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = BF16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

func quantizeBF16(src []float32, dst []byte) {
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], F32ToBF16(v))
	}
}

// The byte-level dots decode in chunks so they run without allocating and
// give exactly dotFloat's result.
const floatChunk = 256

func vecDotFloatBytes(n int, w, a []byte, dec func([]byte, []float32), size int, half bool) float32 {
	var wb, ab [floatChunk]float32
	if n <= floatChunk {
		dec(w[:n*size], wb[:n])
		dec(a[:n*size], ab[:n])
		return dotFloat(wb[:n], ab[:n], half)
	}
	if n%8 != 0 {
		wf, af := make([]float32, n), make([]float32, n)
		dec(w[:n*size], wf)
		dec(a[:n*size], af)
		return dotFloatVec(wf, af)
	}
	// Lane l only ever sees elements ≡ l (mod 8), so chunks of a multiple
	// of 8 can be accumulated one after another.
	var acc [8]float32
	for i := 0; i < n; i += floatChunk {
		m := min(floatChunk, n-i)
		dec(w[i*size:(i+m)*size], wb[:m])
		dec(a[i*size:(i+m)*size], ab[:m])
		if half {
			accHalf(&acc, wb[:m], ab[:m])
		} else {
			accFMA(&acc, wb[:m], ab[:m])
		}
	}
	return hsum8(&acc)
}

// vecDotF32 and vecDotF16 are ggml_vec_dot_f32/f16 of the AVX-512 build
// (DotVec); BF16 keeps the 8-lane model above.
func vecDotF32(n int, w, a []byte) float32  { return vecDotDecoded(n, w, a, dequantF32, 4, false) }
func vecDotF16(n int, w, a []byte) float32  { return vecDotDecoded(n, w, a, dequantF16, 2, true) }
func vecDotBF16(n int, w, a []byte) float32 { return vecDotFloatBytes(n, w, a, dequantBF16, 2, true) }

// vecDotDecoded decodes both rows and runs DotVec (on the stack for rows up
// to floatChunk).
func vecDotDecoded(n int, w, a []byte, dec func([]byte, []float32), size int, exact bool) float32 {
	var wb, ab [floatChunk]float32
	wf, af := wb[:], ab[:]
	if n > floatChunk {
		wf, af = make([]float32, n), make([]float32, n)
	}
	dec(w[:n*size], wf[:n])
	dec(a[:n*size], af[:n])
	return DotVec(wf[:n], af[:n], exact)
}
