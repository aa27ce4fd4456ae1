package kernels

// This file owns the q8Panel variant of the "min" block types Q4_1 and
// Q5_1 (value = d·q + m, q unsigned) and its Go twin. A block dot against
// ggml's Q8_1 activations is d_w·d_a·Σq·a_q + m_w·s_a, s_a = f16(d·Σa_q):
// the levels are the unsigned q themselves (bias 0), so the integer part
// runs on the unsigned q8Panel kernels' instructions unchanged, and the
// panel carries the 16 rows' m after their scales.

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// q8MinPanelBlock is a min panel's bytes per block: the q8Panel block
// (8 level vectors, 16 float32 d) followed by 16 float32 m. The
// activations keep the q8Act layout with slot 36 holding s_a as float32
// bits instead of the level-bias correction (there is no bias).
const q8MinPanelBlock = q8PanelBlock + 64

// panelBlock is the panel bytes per block in format f.
func (f q8Format) panelBlock() int {
	if f.min {
		return q8MinPanelBlock
	}
	return q8PanelBlock
}

// q5Spread[n] puts bit i of n at bit 4 of byte i: the fifth bits of four
// consecutive Q5_1 levels as one word.
var q5Spread = func() (s [16]uint32) {
	for n := range s {
		for i := range 4 {
			s[n] |= uint32(n>>i&1) << (8*i + 4)
		}
	}
	return s
}()

// repackQ8Min writes the min panel of rows [r0, r0+16) of a Q4_1 or Q5_1
// matrix into dst (nb blocks of q8MinPanelBlock bytes), four levels a
// word: low nibbles of qs bytes 4k..4k+3 are levels 4k..4k+3 (vector k),
// high nibbles levels 16+4k.. (vector k+4), and Q5_1 ORs in bits 4k..4k+3
// of qh as each byte's bit 4. Rows past the end get zero levels, d and m.
func repackQ8Min(w *Matrix, r0 int, dst []byte) {
	nb := w.Cols / qk
	bb := w.Type.BlockBytes()
	qs := 4 // Q4_1: d, m, qs
	if w.Type == Q5_1 {
		qs = 8 // d, m, qh, qs
	}
	dst = dst[:nb*q8MinPanelBlock]
	for r := range panelRows {
		if r0+r >= w.Rows {
			clearPanelRow(dst, nb, q8MinPanelBlock, r)
			continue
		}
		row := w.Row(r0 + r)
		for b := range nb {
			blk := row[b*bb : (b+1)*bb]
			p := dst[b*q8MinPanelBlock : (b+1)*q8MinPanelBlock]
			var h uint32
			if qs == 8 {
				h = binary.LittleEndian.Uint32(blk[4:])
			}
			for k := range 4 {
				v := binary.LittleEndian.Uint32(blk[qs+4*k:])
				lo, hi := v&0x0f0f0f0f, v>>4&0x0f0f0f0f
				if qs == 8 {
					lo |= q5Spread[h>>(4*k)&0xf]
					hi |= q5Spread[h>>(4*k+16)&0xf]
				}
				binary.LittleEndian.PutUint32(p[64*k+4*r:], lo)
				binary.LittleEndian.PutUint32(p[64*(k+4)+4*r:], hi)
			}
			binary.LittleEndian.PutUint32(p[512+4*r:], math.Float32bits(f16le(blk)))
			binary.LittleEndian.PutUint32(p[576+4*r:], math.Float32bits(f16le(blk[2:])))
		}
	}
}

// quantActQ8_1Go converts one activation row to the q8Act layout with
// ggml's x86 Q8_1 semantics (legacy.go quantizeActQ8_1): levels and d as
// quantActQ8Go, and slot 36 s_a = f16(d·Σq) (the unrounded d) as float32
// bits. bias is unused (min panels have none).
func quantActQ8_1Go(x []float32, dst []byte, _ int32) {
	for b := range len(x) / qk {
		blk := dst[b*q8ActBlock : (b+1)*q8ActBlock]
		d, sum := actQ8(x[b*qk:(b+1)*qk], blk)
		binary.LittleEndian.PutUint32(blk[32:], math.Float32bits(RoundF16(d)))
		binary.LittleEndian.PutUint32(blk[36:], math.Float32bits(RoundF16(d*float32(sum))))
	}
}

// q8PanelGoMin is the twin of the min panel kernels (q8PanelAVX2m): for
// each token, per block and row, the exact isum = Σ u·a, then
// acc = fma(d_w·d_a, isum, acc) and acc = fma(m_w, s_a, acc), in that
// order, each with one rounding (d_w·d_a rounded to float32 first).
func q8PanelGoMin(t *qTile, ntok int) {
	panel := unsafe.Slice((*byte)(t.w), t.nb*q8MinPanelBlock)
	for i := range ntok {
		a := unsafe.Slice((*byte)(t.a[i]), t.nb*q8ActBlock)
		out := (*[panelRows]float32)(t.out[i])
		var acc [panelRows]float32
		for b := range t.nb {
			p := panel[b*q8MinPanelBlock:]
			ab := a[b*q8ActBlock:]
			da := math.Float32frombits(binary.LittleEndian.Uint32(ab[32:]))
			sa := math.Float32frombits(binary.LittleEndian.Uint32(ab[36:]))
			for r := range panelRows {
				var s int32
				for e := range qk {
					s += int32(p[64*(e>>2)+4*r+e&3]) * int32(int8(ab[e]))
				}
				dw := math.Float32frombits(binary.LittleEndian.Uint32(p[512+4*r:]))
				mw := math.Float32frombits(binary.LittleEndian.Uint32(p[576+4*r:]))
				acc[r] = fma32(float32(dw*da), float32(s), acc[r])
				acc[r] = fma32(mw, sa, acc[r])
			}
		}
		*out = acc
	}
}
