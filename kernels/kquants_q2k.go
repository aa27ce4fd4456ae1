package kernels

// This file owns Q2_K and Q3_K (../shared/spec/gguf-and-quants.md §3.7, §3.8): sixteen
// 16-element sub-blocks of 2-bit values (Q2_K: 4-bit scale and min each)
// or 3-bit signed values (Q3_K: 6-bit signed scale each). Dots with Q8_K
// (§4.3): Q2_K d_a·d·Σ sc·Σ q·a − d_a·dmin·Σ m·bsum; Q3_K d_a·d·Σ S·Σ q·a.

import "encoding/binary"

// Q2_K block: scales u8[16] (low nibble scale, high nibble min), qs u8[64],
// d f16, dmin f16.
const q2kBlockBytes = 84

// Q3_K block: hmask u8[32], qs u8[64], scales u8[12] (sixteen packed 6-bit), d f16.
const q3kBlockBytes = 110

func dequantQ2K(src []byte, dst []float32) {
	for i := range len(dst) / qkK {
		b := src[i*q2kBlockBytes : (i+1)*q2kBlockBytes]
		d, dmin := f16At(b[80:]), f16At(b[82:])
		for n := range 2 {
			qs := (*[32]byte)(b[16+32*n:])
			for j := range 4 {
				y := (*[32]float32)(dst[i*qkK+128*n+32*j:])
				for h := range 2 {
					sb := b[8*n+2*j+h]
					dl, ml := d*float32(sb&0xf), dmin*float32(sb>>4)
					for l := 16 * h; l < 16*h+16; l++ {
						y[l] = float32(dl*float32(qs[l]>>(2*j)&3)) - ml
					}
				}
			}
		}
	}
}

func vecDotQ2K(n int, w, a []byte) float32 {
	var sum float64
	for i := range n / qkK {
		b := w[i*q2kBlockBytes : (i+1)*q2kBlockBytes]
		ab := a[i*q8kBlockBytes : (i+1)*q8kBlockBytes]
		aq := q8kQs(ab)
		var isum, imin int32
		for g := range 16 {
			imin += int32(b[g]>>4) * q8kBsum(ab, g)
		}
		for n := range 2 {
			qs := (*[32]byte)(b[16+32*n:])
			for j := range 4 {
				x := (*[32]byte)(aq[128*n+32*j:])
				var p0, p1 int32
				for l := range 16 {
					p0 += int32(qs[l]>>(2*j)&3) * int32(int8(x[l]))
					p1 += int32(qs[l+16]>>(2*j)&3) * int32(int8(x[l+16]))
				}
				isum += int32(b[8*n+2*j]&0xf)*p0 + int32(b[8*n+2*j+1]&0xf)*p1
			}
		}
		da := q8kD(ab)
		sum += float64(da*f16At(b[80:]))*float64(isum) - float64(da*f16At(b[82:]))*float64(imin)
	}
	return float32(sum)
}

// quantizeQ2K is the round-to-nearest reference quantizer (ggml's
// quantize_row_q2_K_ref): a scale/min search per 16 values weighted by |x|
// with absolute errors, 4-bit scales and mins against the largest of each,
// then levels recomputed from the stored values.
func quantizeQ2K(src []float32, dst []byte) {
	var (
		levels       [qkK]uint8
		aux          [16]uint8
		weights      [16]float32
		scales, mins [16]float32
	)
	for i := range len(src) / qkK {
		x := (*[qkK]float32)(src[i*qkK:])
		b := dst[i*q2kBlockBytes : (i+1)*q2kBlockBytes]
		clear(b)
		var maxScale, maxMin float32
		for j := range 16 {
			xs := x[16*j : 16*j+16]
			for l, v := range xs {
				weights[l] = abs32(v)
			}
			scales[j], mins[j] = makeQKX2(3, xs, weights[:], levels[16*j:16*j+16], aux[:], -0.5, 0.1, 15, true)
			maxScale = max(maxScale, scales[j])
			maxMin = max(maxMin, mins[j])
		}
		if maxScale > 0 {
			is := 15 / maxScale
			for j := range 16 {
				b[j] = uint8(max(0, min(15, nearestInt(float32(is*scales[j])))))
			}
			binary.LittleEndian.PutUint16(b[80:], F32ToF16(maxScale/15))
		}
		if maxMin > 0 {
			is := 15 / maxMin
			for j := range 16 {
				b[j] |= uint8(max(0, min(15, nearestInt(float32(is*mins[j]))))) << 4
			}
			binary.LittleEndian.PutUint16(b[82:], F32ToF16(maxMin/15))
		}
		d, dmin := f16At(b[80:]), f16At(b[82:])
		for j := range 16 {
			dl := d * float32(b[j]&0xf)
			if dl == 0 {
				continue
			}
			dm := dmin * float32(b[j]>>4)
			for l := 16 * j; l < 16*j+16; l++ {
				levels[l] = uint8(max(0, min(3, nearestInt((x[l]+dm)/dl))))
			}
		}
		for n := range 2 {
			L := levels[128*n:]
			qs := b[16+32*n : 48+32*n]
			for l := range 32 {
				qs[l] = L[l] | L[l+32]<<2 | L[l+64]<<4 | L[l+96]<<6
			}
		}
	}
}

// q3kScales unpacks the sixteen signed 6-bit Q3_K scales (−32..31).
func q3kScales(p *[12]byte) (s [16]int32) {
	for j := range 16 {
		var low byte
		if j < 8 {
			low = p[j] & 0xf
		} else {
			low = p[j-8] >> 4
		}
		high := p[8+j%4] >> (2 * (j / 4)) & 3
		s[j] = int32(low|high<<4) - 32
	}
	return s
}

func dequantQ3K(src []byte, dst []float32) {
	for i := range len(dst) / qkK {
		b := src[i*q3kBlockBytes : (i+1)*q3kBlockBytes]
		d := f16At(b[108:])
		hm := (*[32]byte)(b[0:])
		s := q3kScales((*[12]byte)(b[96:]))
		for n := range 2 {
			qs := (*[32]byte)(b[32+32*n:])
			for j := range 4 {
				y := (*[32]float32)(dst[i*qkK+128*n+32*j:])
				shift, hbit := 2*j, 4*n+j
				for h := range 2 {
					dl := d * float32(s[8*n+2*j+h])
					for l := 16 * h; l < 16*h+16; l++ {
						q := int32(qs[l]>>shift&3) - 4 + 4*int32(hm[l]>>hbit&1)
						y[l] = dl * float32(q)
					}
				}
			}
		}
	}
}

func vecDotQ3K(n int, w, a []byte) float32 {
	var sum float64
	for i := range n / qkK {
		b := w[i*q3kBlockBytes : (i+1)*q3kBlockBytes]
		ab := a[i*q8kBlockBytes : (i+1)*q8kBlockBytes]
		aq := q8kQs(ab)
		hm := (*[32]byte)(b[0:])
		s := q3kScales((*[12]byte)(b[96:]))
		var isum int32
		for n := range 2 {
			qs := (*[32]byte)(b[32+32*n:])
			for j := range 4 {
				x := (*[32]byte)(aq[128*n+32*j:])
				shift, hbit := 2*j, 4*n+j
				var p0, p1 int32
				for l := range 16 {
					q0 := int32(qs[l]>>shift&3) - 4 + 4*int32(hm[l]>>hbit&1)
					q1 := int32(qs[l+16]>>shift&3) - 4 + 4*int32(hm[l+16]>>hbit&1)
					p0 += q0 * int32(int8(x[l]))
					p1 += q1 * int32(int8(x[l+16]))
				}
				isum += s[8*n+2*j]*p0 + s[8*n+2*j+1]*p1
			}
		}
		sum += float64(q8kD(ab)*f16At(b[108:])) * float64(isum)
	}
	return float32(sum)
}

// quantizeQ3K is a round-to-nearest quantizer in the spirit of ggml's
// quantize_row_q3_K_ref: a signed scale per 16 values (makeQX with levels
// −4..3), the scales quantized to 6 bits against the one of largest
// magnitude (mapped to −32), then levels recomputed from the stored scales.
func quantizeQ3K(src []float32, dst []byte) {
	var (
		levels [qkK]uint8
		scales [16]float32
	)
	for i := range len(src) / qkK {
		x := (*[qkK]float32)(src[i*qkK:])
		b := dst[i*q3kBlockBytes : (i+1)*q3kBlockBytes]
		clear(b)
		var maxScale, maxAbs float32
		for j := range 16 {
			scales[j] = makeQX(4, x[16*j:16*j+16], levels[16*j:16*j+16])
			if a := abs32(scales[j]); a > maxAbs {
				maxAbs, maxScale = a, scales[j]
			}
		}
		if maxAbs == 0 {
			continue // d = 0: every value dequantizes to 0
		}
		sp := (*[12]byte)(b[96:])
		iscale := -32 / maxScale
		for j := range 16 {
			l := uint8(max(-32, min(31, nearestInt(float32(iscale*scales[j])))) + 32)
			if j < 8 {
				sp[j] = l & 0xf
			} else {
				sp[j-8] |= (l & 0xf) << 4
			}
			sp[8+j%4] |= l >> 4 << (2 * (j / 4))
		}
		binary.LittleEndian.PutUint16(b[108:], F32ToF16(1/iscale))
		d := f16At(b[108:])
		s := q3kScales(sp)
		for j := range 16 {
			dl := d * float32(s[j])
			if dl == 0 {
				for l := 16 * j; l < 16*j+16; l++ {
					levels[l] = 4
				}
				continue
			}
			for l := 16 * j; l < 16*j+16; l++ {
				levels[l] = uint8(4 + max(-4, min(3, nearestInt(x[l]/dl))))
			}
		}
		// Bit 2 of each level goes to hmask (bit 4n+j of byte l); the low two
		// bits fill qs like Q2_K.
		hm := b[0:32]
		for e, l := range levels {
			if l > 3 {
				n, j, k := e/128, e%128/32, e%32
				hm[k] |= 1 << (4*n + j)
			}
		}
		for n := range 2 {
			L := levels[128*n:]
			qs := b[32+32*n : 64+32*n]
			for l := range 32 {
				qs[l] = L[l]&3 | L[l+32]&3<<2 | L[l+64]&3<<4 | L[l+96]&3<<6
			}
		}
	}
}

// kLevelsQ2K decodes one Q2_K super-block to its panel levels, scales and
// pair entries (the mins), d and dmin (the contract: simdDesc.kLevels).
func kLevelsQ2K(blk []byte, u *[qkK]uint8, sc *[16]int32, pr *[16]int16) (d, dmin float32) {
	for n := range 2 {
		qs := (*[32]byte)(blk[16+32*n:])
		for j := range 4 {
			for l, v := range qs {
				u[128*n+32*j+l] = v >> (2 * j) & 3
			}
		}
	}
	for s := range 16 {
		sc[s] = int32(blk[s] & 0xf)
		pr[s] = int16(blk[s] >> 4)
	}
	return f16At(blk[80:]), f16At(blk[82:])
}

// kLevelsQ3K decodes one Q3_K super-block: levels biased by 4, the signed
// scales as scales and pair entries, d.
func kLevelsQ3K(blk []byte, u *[qkK]uint8, sc *[16]int32, pr *[16]int16) (d, dmin float32) {
	hm := (*[32]byte)(blk[0:])
	for n := range 2 {
		qs := (*[32]byte)(blk[32+32*n:])
		for j := range 4 {
			for l, v := range qs {
				u[128*n+32*j+l] = v>>(2*j)&3 | (hm[l]>>(4*n+j)&1)<<2 // q + 4
			}
		}
	}
	s := q3kScales((*[12]byte)(blk[96:]))
	for j, v := range s {
		sc[j], pr[j] = v, int16(v)
	}
	return f16At(blk[108:]), 0
}
