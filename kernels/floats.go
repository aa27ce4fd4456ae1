package kernels

// This file owns the plain float formats F32, F16 and BF16 (traits,
// row conversion) and the float32 accumulation helpers every dot product in
// the package shares. The accumulation follows ggml's x86 AVX2 build so that
// results agree to the last bits, not just to rounding noise:
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

func init() {
	register(F32, traits{dequant: dequantF32, quantize: quantizeF32, vecDotType: F32, vecDot: vecDotF32})
	register(F16, traits{dequant: dequantF16, quantize: quantizeF16, vecDotType: F16, vecDot: vecDotF16})
	register(BF16, traits{dequant: dequantBF16, quantize: quantizeBF16, vecDotType: BF16, vecDot: vecDotBF16})
}

// fma32 returns a·b+c rounded once to float32, as the FMA instruction does.
// The product of two float32 is exact in float64; the float64 sum may round,
// and rounding that again to float32 differs from a single rounding only if
// the float64 sum sits exactly on a float32 midpoint, which is checked.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	s := p + float64(c)
	if math.Float64bits(s)&(1<<29-1) != 1<<28 {
		return float32(s)
	}
	return fma32Tie(p, float64(c), s)
}

// fma32Tie breaks a float32 tie in s = fl64(p+c) by the sign of the
// float64 rounding error (TwoSum), nudging s one float64 ulp toward the
// exact value before the final rounding.
func fma32Tie(p, c, s float64) float32 {
	bb := s - p
	e := (p - (s - bb)) + (c - bb)
	switch {
	case e > 0:
		s = math.Nextafter(s, math.Inf(1))
	case e < 0:
		s = math.Nextafter(s, math.Inf(-1))
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
// accumulation; see the file comment.
func dotFloat(w, x []float32) float32 {
	n := len(w)
	x = x[:n]
	if n%8 != 0 {
		return dotFloatVec(w, x)
	}
	var acc [8]float32
	for i := 0; i < n; i += 8 {
		ww, xx := (*[8]float32)(w[i:]), (*[8]float32)(x[i:])
		for l := range 8 {
			acc[l] = fma32(ww[l], xx[l], acc[l])
		}
	}
	return hsum8(&acc)
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

func vecDotFloatBytes(n int, w, a []byte, dec func([]byte, []float32), size int) float32 {
	if n%8 != 0 || n <= floatChunk {
		var wb, ab [floatChunk]float32
		if n <= floatChunk {
			dec(w[:n*size], wb[:n])
			dec(a[:n*size], ab[:n])
			return dotFloat(wb[:n], ab[:n])
		}
		wf, af := make([]float32, n), make([]float32, n)
		dec(w[:n*size], wf)
		dec(a[:n*size], af)
		return dotFloatVec(wf, af)
	}
	// Lane l only ever sees elements ≡ l (mod 8), so chunks of a multiple
	// of 8 can be accumulated one after another.
	var acc [8]float32
	var wb, ab [floatChunk]float32
	for i := 0; i < n; i += floatChunk {
		m := min(floatChunk, n-i)
		dec(w[i*size:(i+m)*size], wb[:m])
		dec(a[i*size:(i+m)*size], ab[:m])
		for k := 0; k < m; k += 8 {
			for l := range 8 {
				acc[l] = fma32(wb[k+l], ab[k+l], acc[l])
			}
		}
	}
	return hsum8(&acc)
}

func vecDotF32(n int, w, a []byte) float32  { return vecDotFloatBytes(n, w, a, dequantF32, 4) }
func vecDotF16(n int, w, a []byte) float32  { return vecDotFloatBytes(n, w, a, dequantF16, 2) }
func vecDotBF16(n int, w, a []byte) float32 { return vecDotFloatBytes(n, w, a, dequantBF16, 2) }
