package kernels

// This file owns Q6_K (../shared/spec/gguf-and-quants.md §3.11): sixteen 16-element
// sub-blocks of signed 6-bit values with int8 scales under one f16 scale.
// The dot with Q8_K is d_a·d·Σ sc·Σ q·a with q in −32..31 (§4.3).

import "encoding/binary"

// Q6_K block: ql u8[128], qh u8[64], scales i8[16], d f16.
const q6kBlockBytes = 210

// q6kQuad decodes the four 6-bit values (−32..31) of half-block element l
// that sit 0, 32, 64 and 96 positions apart.
func q6kQuad(ql *[64]byte, qh *[32]byte, l int) (q0, q1, q2, q3 int32) {
	h := qh[l]
	q0 = int32(ql[l]&0xf|(h&3)<<4) - 32
	q1 = int32(ql[l+32]&0xf|(h>>2&3)<<4) - 32
	q2 = int32(ql[l]>>4|(h>>4&3)<<4) - 32
	q3 = int32(ql[l+32]>>4|(h>>6)<<4) - 32
	return
}

func dequantQ6K(src []byte, dst []float32) {
	for i := range len(dst) / qkK {
		b := src[i*q6kBlockBytes : (i+1)*q6kBlockBytes]
		d := f16At(b[208:])
		for n := range 2 {
			ql, qh := (*[64]byte)(b[64*n:]), (*[32]byte)(b[128+32*n:])
			sc := b[192+8*n : 200+8*n]
			y := (*[128]float32)(dst[i*qkK+128*n:])
			for l := range 32 {
				is := l / 16
				q0, q1, q2, q3 := q6kQuad(ql, qh, l)
				y[l] = (d * float32(int8(sc[is]))) * float32(q0)
				y[l+32] = (d * float32(int8(sc[is+2]))) * float32(q1)
				y[l+64] = (d * float32(int8(sc[is+4]))) * float32(q2)
				y[l+96] = (d * float32(int8(sc[is+6]))) * float32(q3)
			}
		}
	}
}

func vecDotQ6K(n int, w, a []byte) float32 {
	var sum float64
	for i := range n / qkK {
		b := w[i*q6kBlockBytes : (i+1)*q6kBlockBytes]
		ab := a[i*q8kBlockBytes : (i+1)*q8kBlockBytes]
		aq := q8kQs(ab)
		var isum int32
		for n := range 2 {
			ql, qh := (*[64]byte)(b[64*n:]), (*[32]byte)(b[128+32*n:])
			sc := (*[8]byte)(b[192+8*n:])
			x := (*[128]byte)(aq[128*n:])
			for h := range 2 {
				var p0, p1, p2, p3 int32
				for l := 16 * h; l < 16*h+16; l++ {
					q0, q1, q2, q3 := q6kQuad(ql, qh, l)
					p0 += q0 * int32(int8(x[l]))
					p1 += q1 * int32(int8(x[l+32]))
					p2 += q2 * int32(int8(x[l+64]))
					p3 += q3 * int32(int8(x[l+96]))
				}
				isum += int32(int8(sc[h]))*p0 + int32(int8(sc[h+2]))*p1 +
					int32(int8(sc[h+4]))*p2 + int32(int8(sc[h+6]))*p3
			}
		}
		sum += float64(q8kD(ab)*f16At(b[208:])) * float64(isum)
	}
	return float32(sum)
}

// quantizeQ6K is the round-to-nearest reference quantizer (ggml's
// quantize_row_q6_K_ref): a signed scale per 16 values from makeQX, the
// scales quantized to int8 against the one of largest magnitude (which maps
// to −128), then levels recomputed from the stored scales.
func quantizeQ6K(src []float32, dst []byte) {
	var (
		levels [qkK]uint8
		scales [16]float32
	)
	for i := range len(src) / qkK {
		x := (*[qkK]float32)(src[i*qkK:])
		b := dst[i*q6kBlockBytes : (i+1)*q6kBlockBytes]
		clear(b)
		var maxScale, maxAbs float32
		for j := range 16 {
			scales[j] = makeQX(32, x[16*j:16*j+16], levels[16*j:16*j+16])
			if a := abs32(scales[j]); a > maxAbs {
				maxAbs, maxScale = a, scales[j]
			}
		}
		if maxAbs < 1e-15 {
			continue
		}
		iscale := -128 / maxScale
		binary.LittleEndian.PutUint16(b[208:], F32ToF16(1/iscale))
		for j := range 16 {
			b[192+j] = byte(int8(min(127, nearestInt(float32(iscale*scales[j])))))
		}
		d := f16At(b[208:])
		for j := range 16 {
			dl := d * float32(int8(b[192+j]))
			if dl == 0 {
				continue // levels from makeQX stand, as in ggml
			}
			for l := 16 * j; l < 16*j+16; l++ {
				levels[l] = uint8(32 + max(-32, min(31, nearestInt(x[l]/dl))))
			}
		}
		for n := range 2 {
			L := levels[128*n:]
			ql, qh := b[64*n:64*n+64], b[128+32*n:160+32*n]
			for l := range 32 {
				ql[l] = L[l]&0xf | L[l+64]&0xf<<4
				ql[l+32] = L[l+32]&0xf | L[l+96]&0xf<<4
				qh[l] = L[l]>>4 | L[l+32]>>4<<2 | L[l+64]>>4<<4 | L[l+96]>>4<<6
			}
		}
	}
}

// kLevelsQ6K decodes one Q6_K super-block: levels biased by 32, the signed
// scales as scales and pair entries, d (the contract: simdDesc.kLevels).
func kLevelsQ6K(blk []byte, u *[qkK]uint8, sc *[16]int32, pr *[16]int16) (d, dmin float32) {
	for n := range 2 {
		ql, qh := (*[64]byte)(blk[64*n:]), (*[32]byte)(blk[128+32*n:])
		for l := range 32 {
			q0, q1, q2, q3 := q6kQuad(ql, qh, l)
			u[128*n+l], u[128*n+32+l] = uint8(q0+32), uint8(q1+32)
			u[128*n+64+l], u[128*n+96+l] = uint8(q2+32), uint8(q3+32)
		}
	}
	for s := range 16 {
		sc[s] = int32(int8(blk[192+s]))
		pr[s] = int16(int8(blk[192+s]))
	}
	return f16At(blk[208:]), 0
}
