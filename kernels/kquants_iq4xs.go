package kernels

// This file owns IQ4_XS (../shared/spec/gguf-and-quants.md §3.13): eight 32-element
// sub-blocks of 4-bit codes into the non-linear IQ4_NL table (kvIQ4NL, in
// iq4nl.go), with 6-bit scales (offset 32) under one f16 scale. The dot
// with Q8_K is d_a·d·Σ (ls−32)·Σ KV[code]·a (§4.3).

import "encoding/binary"

// IQ4_XS block: d f16, scales_h u16, scales_l u8[4], qs u8[128].
const iq4xsBlockBytes = 136

// iq4xsScale is the signed scale (ls − 32) of sub-block j.
func iq4xsScale(b []byte, j int) int32 {
	sh := binary.LittleEndian.Uint16(b[2:])
	ls := b[4+j/2]>>(4*(j%2))&0xf | uint8(sh>>(2*j)&3)<<4
	return int32(ls) - 32
}

func dequantIQ4XS(src []byte, dst []float32) {
	for i := range len(dst) / qkK {
		b := src[i*iq4xsBlockBytes : (i+1)*iq4xsBlockBytes]
		d := f16At(b)
		for j := range 8 {
			dl := d * float32(iq4xsScale(b, j))
			qs := (*[16]byte)(b[8+16*j:])
			y := (*[32]float32)(dst[i*qkK+32*j:])
			for l, v := range qs {
				y[l] = dl * float32(kvIQ4NL[v&0xf])
				y[l+16] = dl * float32(kvIQ4NL[v>>4])
			}
		}
	}
}

func vecDotIQ4XS(n int, w, a []byte) float32 {
	var sum float64
	for i := range n / qkK {
		b := w[i*iq4xsBlockBytes : (i+1)*iq4xsBlockBytes]
		ab := a[i*q8kBlockBytes : (i+1)*q8kBlockBytes]
		aq := q8kQs(ab)
		var isum int32
		for j := range 8 {
			qs := (*[16]byte)(b[8+16*j:])
			x := (*[32]byte)(aq[32*j:])
			var p int32
			for l, v := range qs {
				p += int32(kvIQ4NL[v&0xf])*int32(int8(x[l])) + int32(kvIQ4NL[v>>4])*int32(int8(x[l+16]))
			}
			isum += iq4xsScale(b, j) * p
		}
		sum += float64(q8kD(ab)*f16At(b)) * float64(isum)
	}
	return float32(sum)
}

// iq4nlIndex is the index of the table value nearest to x (lower on ties).
func iq4nlIndex(x float32) uint8 {
	v := &kvIQ4NL
	if x <= float32(v[0]) {
		return 0
	}
	if x >= float32(v[15]) {
		return 15
	}
	lo, hi := 0, 15
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if x < float32(v[mid]) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if x-float32(v[lo]) < float32(v[hi])-x {
		return uint8(lo)
	}
	return uint8(hi)
}

// quantizeIQ4XS is the round-to-nearest quantizer without importance
// weights (ggml's quantize_iq4_xs with no imatrix): per 32 values a scale
// search over 15 trial scales weighted by x², the scales quantized to 6 bits
// against the one of largest magnitude (which maps to −32), then codes
// recomputed from the quantized scales (unlike ggml, using the f16-rounded d).
func quantizeIQ4XS(src []float32, dst []byte) {
	var (
		scales [8]float32
		codes  [32]uint8
	)
	for i := range len(src) / qkK {
		x := (*[qkK]float32)(src[i*qkK:])
		b := dst[i*iq4xsBlockBytes : (i+1)*iq4xsBlockBytes]
		clear(b)
		var maxScale, maxAbs float32
		for j := range 8 {
			scales[j] = iq4nlFit(x[32*j : 32*j+32])
			if a := abs32(scales[j]); a > maxAbs {
				maxAbs, maxScale = a, scales[j]
			}
		}
		// Codes are chosen against the stored (f16-rounded) scale, so each
		// value lands on its nearest level even when d is an f16 subnormal.
		binary.LittleEndian.PutUint16(b, F32ToF16(-maxScale/32))
		d := f16At(b)
		var id float32
		if d != 0 {
			id = 1 / d
		}
		var sh uint16
		for j := range 8 {
			l := max(-32, min(31, nearestInt(float32(id*scales[j]))))
			dl := d * float32(l)
			var idl float32
			if dl != 0 {
				idl = 1 / dl
			}
			for k, v := range x[32*j : 32*j+32] {
				codes[k] = iq4nlIndex(float32(idl * v))
			}
			ls := uint8(l + 32)
			b[4+j/2] |= ls & 0xf << (4 * (j % 2))
			sh |= uint16(ls>>4) << (2 * j)
			qs := b[8+16*j : 24+16*j]
			for k := range 16 {
				qs[k] = codes[k] | codes[k+16]<<4
			}
		}
		binary.LittleEndian.PutUint16(b[2:], sh)
	}
}

// iq4nlFit returns the weighted least-squares scale for x on the IQ4_NL
// grid, trying the inverse scales (t − 127)/x_m for t in −7..7 around the
// ±127/x_m starting point.
func iq4nlFit(x []float32) float32 {
	var amax, xm float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, xm = a, v
		}
	}
	if amax < 1e-15 {
		return 0
	}
	fit := func(id float32) (sumQX, sumQ2 float32) {
		for _, v := range x {
			q := float32(kvIQ4NL[iq4nlIndex(float32(id*v))])
			w := float32(v * v)
			sumQX += float32(w*q) * v
			sumQ2 += float32(w*q) * q
		}
		return sumQX, sumQ2
	}
	var d, best float32
	if qx, q2 := fit(-float32(kvIQ4NL[0]) / xm); q2 > 0 {
		d = qx / q2
		best = d * qx
	}
	for t := -7; t <= 7; t++ {
		qx, q2 := fit((float32(t) + float32(kvIQ4NL[0])) / xm)
		if q2 > 0 && qx*qx > best*q2 {
			d = qx / q2
			best = d * qx
		}
	}
	return d
}

// kLevelsIQ4XS decodes one IQ4_XS super-block: the signed code values as
// int8 level bytes, the scales, no pairs, d (the contract:
// simdDesc.kLevels).
func kLevelsIQ4XS(blk []byte, u *[qkK]uint8, sc *[16]int32, pr *[16]int16) (d, dmin float32) {
	for j := range 8 {
		qs := (*[16]byte)(blk[8+16*j:])
		for l, v := range qs {
			u[32*j+l], u[32*j+16+l] = uint8(kvIQ4NL[v&0xf]), uint8(kvIQ4NL[v>>4])
		}
		sc[j] = iq4xsScale(blk, j)
	}
	*pr = [16]int16{}
	return f16At(blk), 0
}
