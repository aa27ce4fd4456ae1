package kernels

// This file owns Q4_K and Q5_K (../shared/spec/gguf-and-quants.md §3.9, §3.10): eight
// 32-element sub-blocks with 6-bit scales and mins under f16 super-scales.
// The dot with Q8_K is d_a·d·Σ sc·Σ q·a − d_a·dmin·Σ m·(two bsums) (§4.3).

import "encoding/binary"

// Q4_K block: d f16, dmin f16, scales u8[12], qs u8[128].
const q4kBlockBytes = 144

// Q5_K block: d f16, dmin f16, scales u8[12], qh u8[32], qs u8[128].
const q5kBlockBytes = 176

// kScaleMin unpacks the 6-bit scale and min of sub-block j (0..7) from the
// 12 packed bytes shared by Q4_K and Q5_K.
func kScaleMin(j int, q *[12]byte) (sc, m int32) {
	if j < 4 {
		return int32(q[j] & 63), int32(q[j+4] & 63)
	}
	return int32(q[j+4]&0xf | q[j-4]>>6<<4), int32(q[j+4]>>4 | q[j]>>6<<4)
}

// packScaleMin stores 6-bit scale ls and min lm of sub-block j, the inverse of
// kScaleMin; q must start zeroed.
func packScaleMin(j int, ls, lm uint8, q *[12]byte) {
	if j < 4 {
		q[j] |= ls
		q[j+4] |= lm
		return
	}
	q[j+4] = ls&0xf | lm<<4
	q[j-4] |= ls >> 4 << 6
	q[j] |= lm >> 4 << 6
}

func dequantQ4K(src []byte, dst []float32) {
	for i := range len(dst) / qkK {
		b := src[i*q4kBlockBytes : (i+1)*q4kBlockBytes]
		d, dmin := f16At(b[0:]), f16At(b[2:])
		sc := (*[12]byte)(b[4:])
		y := (*[qkK]float32)(dst[i*qkK:])
		for c := range 4 {
			s1, m1 := kScaleMin(2*c, sc)
			s2, m2 := kScaleMin(2*c+1, sc)
			d1, mn1 := d*float32(s1), dmin*float32(m1)
			d2, mn2 := d*float32(s2), dmin*float32(m2)
			qs := (*[32]byte)(b[16+32*c:])
			lo, hi := (*[32]float32)(y[64*c:]), (*[32]float32)(y[64*c+32:])
			for l, v := range qs {
				lo[l] = float32(d1*float32(v&0xf)) - mn1
				hi[l] = float32(d2*float32(v>>4)) - mn2
			}
		}
	}
}

func vecDotQ4K(n int, w, a []byte) float32 {
	var sum float64
	for i := range n / qkK {
		b := w[i*q4kBlockBytes : (i+1)*q4kBlockBytes]
		ab := a[i*q8kBlockBytes : (i+1)*q8kBlockBytes]
		aq := q8kQs(ab)
		sc := (*[12]byte)(b[4:])
		var isum, imin int32
		for c := range 4 {
			s1, m1 := kScaleMin(2*c, sc)
			s2, m2 := kScaleMin(2*c+1, sc)
			imin += m1*(q8kBsum(ab, 4*c)+q8kBsum(ab, 4*c+1)) + m2*(q8kBsum(ab, 4*c+2)+q8kBsum(ab, 4*c+3))
			qs := (*[32]byte)(b[16+32*c:])
			a1, a2 := (*[32]byte)(aq[64*c:]), (*[32]byte)(aq[64*c+32:])
			var p1, p2 int32
			for l, v := range qs {
				p1 += int32(v&0xf) * int32(int8(a1[l]))
				p2 += int32(v>>4) * int32(int8(a2[l]))
			}
			isum += s1*p1 + s2*p2
		}
		da := q8kD(ab)
		sum += float64(da*f16At(b[0:]))*float64(isum) - float64(da*f16At(b[2:]))*float64(imin)
	}
	return float32(sum)
}

func dequantQ5K(src []byte, dst []float32) {
	for i := range len(dst) / qkK {
		b := src[i*q5kBlockBytes : (i+1)*q5kBlockBytes]
		d, dmin := f16At(b[0:]), f16At(b[2:])
		sc := (*[12]byte)(b[4:])
		qh := (*[32]byte)(b[16:])
		y := (*[qkK]float32)(dst[i*qkK:])
		for c := range 4 {
			s1, m1 := kScaleMin(2*c, sc)
			s2, m2 := kScaleMin(2*c+1, sc)
			d1, mn1 := d*float32(s1), dmin*float32(m1)
			d2, mn2 := d*float32(s2), dmin*float32(m2)
			qs := (*[32]byte)(b[48+32*c:])
			lo, hi := (*[32]float32)(y[64*c:]), (*[32]float32)(y[64*c+32:])
			for l, v := range qs {
				h := qh[l] >> (2 * c)
				lo[l] = float32(d1*float32(v&0xf|(h&1)<<4)) - mn1
				hi[l] = float32(d2*float32(v>>4|(h>>1&1)<<4)) - mn2
			}
		}
	}
}

func vecDotQ5K(n int, w, a []byte) float32 {
	var sum float64
	for i := range n / qkK {
		b := w[i*q5kBlockBytes : (i+1)*q5kBlockBytes]
		ab := a[i*q8kBlockBytes : (i+1)*q8kBlockBytes]
		aq := q8kQs(ab)
		sc := (*[12]byte)(b[4:])
		qh := (*[32]byte)(b[16:])
		var isum, imin int32
		for c := range 4 {
			s1, m1 := kScaleMin(2*c, sc)
			s2, m2 := kScaleMin(2*c+1, sc)
			imin += m1*(q8kBsum(ab, 4*c)+q8kBsum(ab, 4*c+1)) + m2*(q8kBsum(ab, 4*c+2)+q8kBsum(ab, 4*c+3))
			qs := (*[32]byte)(b[48+32*c:])
			a1, a2 := (*[32]byte)(aq[64*c:]), (*[32]byte)(aq[64*c+32:])
			var p1, p2 int32
			for l, v := range qs {
				h := qh[l] >> (2 * c)
				p1 += int32(v&0xf|(h&1)<<4) * int32(int8(a1[l]))
				p2 += int32(v>>4|(h>>1&1)<<4) * int32(int8(a2[l]))
			}
			isum += s1*p1 + s2*p2
		}
		da := q8kD(ab)
		sum += float64(da*f16At(b[0:]))*float64(isum) - float64(da*f16At(b[2:]))*float64(imin)
	}
	return float32(sum)
}

// quantizeQ4K is the round-to-nearest reference quantizer (ggml's
// quantize_row_q4_K_ref): a weighted least-squares scale/min search per
// sub-block (weights rms+|x|), 6-bit quantization of the scales and mins
// against the largest of each, then levels recomputed from the stored values.
func quantizeQ4K(src []float32, dst []byte) {
	quantizeQKX(src, dst, q4kBlockBytes, 15, -1, 0.1, 20)
}

// quantizeQ5K is quantizeQ4K with 5-bit levels (ggml's quantize_row_q5_K_ref).
func quantizeQ5K(src []float32, dst []byte) {
	quantizeQKX(src, dst, q5kBlockBytes, 31, -0.5, 0.1, 15)
}

// quantizeQKX packs Q4_K (nmax 15) or Q5_K (nmax 31) blocks.
func quantizeQKX(src []float32, dst []byte, blockBytes int, nmax int32, rmin, rdelta float32, nstep int) {
	var (
		levels       [qkK]uint8
		aux          [32]uint8
		weights      [32]float32
		scales, mins [8]float32
	)
	for i := range len(src) / qkK {
		x := (*[qkK]float32)(src[i*qkK:])
		b := dst[i*blockBytes : (i+1)*blockBytes]
		clear(b)
		var maxScale, maxMin float32
		for j := range 8 {
			xs := x[32*j : 32*j+32]
			var sumX2 float32
			for _, v := range xs {
				sumX2 += float32(v * v)
			}
			av := sqrt32(sumX2 / 32)
			for l, v := range xs {
				weights[l] = av + abs32(v)
			}
			scales[j], mins[j] = makeQKX2(nmax, xs, weights[:], levels[32*j:32*j+32], aux[:], rmin, rdelta, nstep, false)
			maxScale = max(maxScale, scales[j])
			maxMin = max(maxMin, mins[j])
		}
		var invScale, invMin float32
		if maxScale > 0 {
			invScale = 63 / maxScale
		}
		if maxMin > 0 {
			invMin = 63 / maxMin
		}
		sc := (*[12]byte)(b[4:])
		for j := range 8 {
			ls := max(0, min(nearestInt(float32(invScale*scales[j])), 63))
			lm := max(0, min(nearestInt(float32(invMin*mins[j])), 63))
			packScaleMin(j, uint8(ls), uint8(lm), sc)
		}
		binary.LittleEndian.PutUint16(b[0:], F32ToF16(maxScale/63))
		binary.LittleEndian.PutUint16(b[2:], F32ToF16(maxMin/63))
		d, dmin := f16At(b[0:]), f16At(b[2:])
		for j := range 8 {
			s, m := kScaleMin(j, sc)
			dl := d * float32(s)
			if dl == 0 {
				clear(levels[32*j : 32*j+32])
				continue
			}
			dm := dmin * float32(m)
			for l := 32 * j; l < 32*j+32; l++ {
				levels[l] = uint8(max(0, min(nmax, nearestInt((x[l]+dm)/dl))))
			}
		}
		if nmax == 15 {
			qs := b[16:144]
			for c := range 4 {
				for l := range 32 {
					qs[32*c+l] = levels[64*c+l] | levels[64*c+32+l]<<4
				}
			}
			continue
		}
		qh, qs := b[16:48], b[48:176]
		for c := range 4 {
			for l := range 32 {
				lo, hi := levels[64*c+l], levels[64*c+32+l]
				qh[l] |= lo>>4<<(2*c) | hi>>4<<(2*c+1)
				qs[32*c+l] = lo&0xf | hi&0xf<<4
			}
		}
	}
}

// kLevelsQ4K and kLevelsQ5K decode one super-block to its panel levels,
// scales, pair entries (each sub-block's min, twice), d and dmin (the
// contract: simdDesc.kLevels).
func kLevelsQ4K(blk []byte, u *[qkK]uint8, sc *[16]int32, pr *[16]int16) (d, dmin float32) {
	return kLevelsQ45K(blk, false, u, sc, pr)
}

func kLevelsQ5K(blk []byte, u *[qkK]uint8, sc *[16]int32, pr *[16]int16) (d, dmin float32) {
	return kLevelsQ45K(blk, true, u, sc, pr)
}

func kLevelsQ45K(blk []byte, q5 bool, u *[qkK]uint8, sc *[16]int32, pr *[16]int16) (d, dmin float32) {
	scales := (*[12]byte)(blk[4:])
	qs, qh := blk[16:144], []byte(nil)
	if q5 {
		qh, qs = blk[16:48], blk[48:176]
	}
	for c := range 4 {
		for l := range 32 {
			lo, hi := qs[32*c+l]&0xf, qs[32*c+l]>>4
			if qh != nil {
				lo |= (qh[l] >> (2 * c) & 1) << 4
				hi |= (qh[l] >> (2*c + 1) & 1) << 4
			}
			u[64*c+l], u[64*c+32+l] = lo, hi
		}
	}
	for j := range 8 {
		s, m := kScaleMin(j, scales)
		sc[j] = s
		pr[2*j], pr[2*j+1] = int16(m), int16(m)
	}
	return f16At(blk[0:]), f16At(blk[2:])
}
