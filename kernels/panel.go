package kernels

// This file owns the repacked layouts the SIMD matmul kernels read and the
// plain Go twins of those kernels (same layouts, same integer sums, same
// float operations in the same order, so an assembly kernel must match its
// twin bit for bit).
//
// Quantized weights are repacked, a 16-row panel at a time, so that one
// 64-byte vector holds four consecutive levels of each of the 16 rows
// (byte 4r+i of vector e/4 is level e of row r, i = e%4). A VNNI
// VPDPBUSD of that vector with four broadcast activation bytes then adds
// each row's partial dot into its own int32 lane: lanes are rows, so no
// horizontal sums are needed and a token's 16 results are stored as one
// vector. Levels are unsigned (VPDPBUSD multiplies u8 by s8): a level
// bias β makes them so, and the activation side carries −β·Σa per block
// to undo it. The activation rows are quantized once per call.
//
// Float weights are repacked as [K][32] float32 panels (rows in the
// lanes) and multiplied as outer products with broadcast activations.

import (
	"encoding/binary"
	"math"
	"unsafe"
)

const panelRows = 16

// qTile is one call of a quantized panel kernel: a 16-row weight panel
// against up to 8 activation rows. Unused token slots repeat a valid row
// and point out at scratch.
type qTile struct {
	w     unsafe.Pointer    // panel (q8Panel / kPanel layout)
	nb    int               // blocks (32 elements) or super-blocks (256) per row
	shift int               // correction kernels: the level bias is 1<<shift
	a     [8]unsafe.Pointer // activation rows (q8Act layout or Q8_K)
	out   [8]unsafe.Pointer // 16 float32 results per token, row order
}

// ---- 32-element blocks against Q8_0 activations ----

// q8Panel layout, per block: 8 vectors of 64 bytes (levels, see the file
// comment), then 16 float32 row scales.
const (
	q8PanelBlock = 8*64 + 64
	q8ActBlock   = 40 // qs i8[32], d f32 (the f16-rounded scale), corr i32 = −β·Σqs (min panels: s_a f32)
)

// q8Format says how a weight type's blocks become panel levels.
type q8Format struct {
	bias   int32 // level bias β (0 in signed mode)
	signed bool  // levels stay signed bytes (AVX2 sign trick)
	min    bool  // Q4_1/Q5_1: a per-row m after the scales, s_a in the activations (panel_min.go)
}

// repackQ8 writes the panel of rows [r0, r0+16) of w into dst (nb blocks of
// q8PanelBlock bytes); rows past the end get zero levels and scales. Q8_0
// and Q4_0 rows move four levels at a time (repackQ8Words); the other
// types decode level by level (repackQ8Levels, the reference).
func repackQ8(w *Matrix, r0 int, f q8Format, dst []byte) {
	if (w.Type == Q8_0 || w.Type == Q4_0) && (f.signed || f.bias == descOf(w.Type).simd.q8.bias) {
		repackQ8Words(w, r0, f, dst)
		return
	}
	repackQ8Levels(w, r0, f, dst)
}

// repackQ8Words is repackQ8Levels for Q8_0 and Q4_0 with their own bias
// (or signed Q8_0 levels), a 32-bit word of four levels at a time: Q8_0's
// biased levels are its bytes XOR 0x80 (q + 128 for signed q), Q4_0's are
// its nibbles (q + 8), low nibbles of bytes 4k..4k+3 for word k < 4 and
// high nibbles for word k ≥ 4.
func repackQ8Words(w *Matrix, r0 int, f q8Format, dst []byte) {
	nb := w.Cols / qk
	bb := w.Type.BlockBytes()
	dst = dst[:nb*q8PanelBlock]
	var flip uint32
	if w.Type == Q8_0 && !f.signed {
		flip = 0x80808080
	}
	for r := range panelRows {
		if r0+r >= w.Rows {
			clearPanelRow(dst, nb, q8PanelBlock, r)
			continue
		}
		row := w.Row(r0 + r)
		for b := range nb {
			blk := row[b*bb : (b+1)*bb]
			p := dst[b*q8PanelBlock : (b+1)*q8PanelBlock]
			d := F16ToF32(binary.LittleEndian.Uint16(blk))
			if w.Type == Q8_0 {
				for k := range 8 {
					binary.LittleEndian.PutUint32(p[64*k+4*r:], binary.LittleEndian.Uint32(blk[2+4*k:])^flip)
				}
			} else {
				for k := range 4 {
					v := binary.LittleEndian.Uint32(blk[2+4*k:])
					binary.LittleEndian.PutUint32(p[64*k+4*r:], v&0x0f0f0f0f)
					binary.LittleEndian.PutUint32(p[64*(k+4)+4*r:], v>>4&0x0f0f0f0f)
				}
			}
			binary.LittleEndian.PutUint32(p[512+4*r:], math.Float32bits(d))
		}
	}
}

// clearPanelRow zeroes row r's levels and the words after them (scale,
// and min where the block has one) in each of nb panel blocks of size
// blk.
func clearPanelRow(dst []byte, nb, blk, r int) {
	for b := range nb {
		p := dst[b*blk : (b+1)*blk]
		for k := range 8 {
			clear(p[64*k+4*r : 64*k+4*r+4])
		}
		for o := 512; o < blk; o += 64 {
			clear(p[o+4*r : o+4*r+4])
		}
	}
}

// repackQ8Levels is repackQ8 through the type's level decoder, for every
// 32-block type.
func repackQ8Levels(w *Matrix, r0 int, f q8Format, dst []byte) {
	nb := w.Cols / qk
	bb := w.Type.BlockBytes()
	levels := descOf(w.Type).simd.levels
	dst = dst[:nb*q8PanelBlock]
	var q [qk]int8
	for r := range panelRows {
		if r0+r >= w.Rows {
			clearPanelRow(dst, nb, q8PanelBlock, r)
			continue
		}
		row := w.Row(r0 + r)
		for b := range nb {
			d := levels(row[b*bb:(b+1)*bb], &q)
			p := dst[b*q8PanelBlock:]
			for e, v := range q {
				p[64*(e>>2)+4*r+e&3] = byte(int32(v) + f.bias)
			}
			binary.LittleEndian.PutUint32(p[512+4*r:], math.Float32bits(d))
		}
	}
}

// quantActQ8Go converts one activation row to the q8Act layout with ggml's
// x86 Q8_0 semantics (legacy.go actQ8) and the level-bias correction.
func quantActQ8Go(x []float32, dst []byte, bias int32) {
	for b := range len(x) / qk {
		blk := dst[b*q8ActBlock : (b+1)*q8ActBlock]
		d, sum := actQ8(x[b*qk:(b+1)*qk], blk)
		binary.LittleEndian.PutUint32(blk[32:], math.Float32bits(RoundF16(d)))
		binary.LittleEndian.PutUint32(blk[36:], uint32(-bias*sum))
	}
}

// q8PanelGo is the twin of the q8Panel kernels: for each token, per block,
// the exact integer sums Σ u·a + corr per row, then acc += (d_w·d_a)·sum
// with one rounding (fused multiply-add), as the assembly does.
func q8PanelGo(t *qTile, ntok int) {
	panel := unsafe.Slice((*byte)(t.w), t.nb*q8PanelBlock)
	for i := range ntok {
		a := unsafe.Slice((*byte)(t.a[i]), t.nb*q8ActBlock)
		out := (*[panelRows]float32)(t.out[i])
		var acc [panelRows]float32
		for b := range t.nb {
			p := panel[b*q8PanelBlock:]
			ab := a[b*q8ActBlock:]
			da := math.Float32frombits(binary.LittleEndian.Uint32(ab[32:]))
			corr := int32(binary.LittleEndian.Uint32(ab[36:]))
			for r := range panelRows {
				s := corr
				for e := range qk {
					s += int32(p[64*(e>>2)+4*r+e&3]) * int32(int8(ab[e]))
				}
				dw := math.Float32frombits(binary.LittleEndian.Uint32(p[512+4*r:]))
				acc[r] = fma32(float32(dw*da), float32(s), acc[r])
			}
		}
		*out = acc
	}
}

// q8PanelGoSigned is q8PanelGo for signed-level panels (bias 0).
func q8PanelGoSigned(t *qTile, ntok int) {
	panel := unsafe.Slice((*byte)(t.w), t.nb*q8PanelBlock)
	for i := range ntok {
		a := unsafe.Slice((*byte)(t.a[i]), t.nb*q8ActBlock)
		out := (*[panelRows]float32)(t.out[i])
		var acc [panelRows]float32
		for b := range t.nb {
			p := panel[b*q8PanelBlock:]
			ab := a[b*q8ActBlock:]
			da := math.Float32frombits(binary.LittleEndian.Uint32(ab[32:]))
			for r := range panelRows {
				var s int32
				for e := range qk {
					s += int32(int8(p[64*(e>>2)+4*r+e&3])) * int32(int8(ab[e]))
				}
				dw := math.Float32frombits(binary.LittleEndian.Uint32(p[512+4*r:]))
				acc[r] = fma32(float32(dw*da), float32(s), acc[r])
			}
		}
		*out = acc
	}
}

// ---- 256-element super-blocks against Q8_K activations ----

// kPanel layout per super-block: 64 level vectors (4096 bytes), one int32
// scale vector per scale sub-block (word layouts: the scale as an int16
// pair (s, s) in each row's dword, for VPMADDWD), 8 vectors of int16 pairs
// that a VPDPWSSD multiplies with the activation's bsum pairs, then 16
// float32 d and (min kernels) 16 float32 dmin. Signed layouts (IQ4_XS)
// keep signed levels, which the AVX2 kernel multiplies with the sign
// trick, and have neither pairs nor dmin: their sums need no correction.
// The layouts of Q2_K, Q3_K and IQ4_XS are read by the word kernels
// (AVX2 and AVX-512 BW) and the twins only.
type kLayout struct {
	sb      int  // elements per scale sub-block (16 or 32)
	corr    bool // pairs are scales and Σ pair·bsum << shift is subtracted (Q6_K, Q3_K), else pairs are mins
	signed  bool // levels are int8, no pairs, no dmin
	words   bool // scales are int16 (scale, scale) pairs, not int32 (the AVX2 word-sum kernels)
	shift   int  // correction: level bias 1<<shift
	bytes   int  // panel bytes per super-block
	scOff   int
	prOff   int
	dOff    int
	dminOff int
}

var (
	kLayoutMin32 = kLayout{sb: 32, bytes: 5248, scOff: 4096, prOff: 4608, dOff: 5120, dminOff: 5184}
	kLayoutMin16 = kLayout{sb: 16, words: true, bytes: 5760, scOff: 4096, prOff: 5120, dOff: 5632, dminOff: 5696}
	kLayoutCorr  = kLayout{sb: 16, corr: true, shift: 5, bytes: 5696, scOff: 4096, prOff: 5120, dOff: 5632}
	// Q3_K: kLayoutCorr with word scales, levels −4..3 biased to 0..7.
	kLayoutCorr4w = kLayout{sb: 16, corr: true, words: true, shift: 2, bytes: 5696, scOff: 4096, prOff: 5120, dOff: 5632}
	kLayoutSgn32  = kLayout{sb: 32, signed: true, words: true, bytes: 4672, scOff: 4096, dOff: 4608}
)

// repackK writes the panel of rows [r0, r0+16) of w into dst.
func repackK(w *Matrix, r0 int, l kLayout, dst []byte) {
	nb := w.Cols / qkK
	bb := w.Type.BlockBytes()
	kLevels := descOf(w.Type).simd.kLevels
	dst = dst[:nb*l.bytes]
	var (
		u  [qkK]uint8
		sc [16]int32
		pr [16]int16
	)
	nsub := qkK / l.sb
	for r := range panelRows {
		row := []byte(nil)
		if r0+r < w.Rows {
			row = w.Row(r0 + r)
		}
		for b := range nb {
			var d, dmin float32
			if row != nil {
				d, dmin = kLevels(row[b*bb:(b+1)*bb], &u, &sc, &pr)
			} else {
				u, sc, pr = [qkK]uint8{}, [16]int32{}, [16]int16{}
			}
			p := dst[b*l.bytes:]
			for k := range qkK / 4 { // levels 4k..4k+3 are one word of vector k
				binary.LittleEndian.PutUint32(p[64*k+4*r:], binary.LittleEndian.Uint32(u[4*k:]))
			}
			for j := range nsub {
				v := uint32(sc[j])
				if l.words {
					v = uint32(uint16(sc[j])) * 0x10001
				}
				binary.LittleEndian.PutUint32(p[l.scOff+64*j+4*r:], v)
			}
			if !l.signed {
				for q := range 8 {
					binary.LittleEndian.PutUint16(p[l.prOff+64*q+4*r:], uint16(pr[2*q]))
					binary.LittleEndian.PutUint16(p[l.prOff+64*q+4*r+2:], uint16(pr[2*q+1]))
				}
			}
			binary.LittleEndian.PutUint32(p[l.dOff+4*r:], math.Float32bits(d))
			if !l.corr && !l.signed {
				binary.LittleEndian.PutUint32(p[l.dminOff+4*r:], math.Float32bits(dmin))
			}
		}
	}
}

// kPanelGo is the twin of the super-block kernels: per super-block and row
// the exact isum = Σ_sub sc·Σ u·a and pair sum X = Σ pair·bsum pair; then
// correction layouts do acc += (d_a·d)·(isum − X<<shift), signed layouts
// (levels int8, no pairs) acc += (d_a·d)·isum, min layouts
// acc += (d_a·d)·isum and acc −= (d_a·dmin)·X, each with one rounding.
// Each super-block's panel is decoded once for all tokens (kTwinBlock).
func kPanelGo(l kLayout) func(t *qTile, ntok int) {
	return func(t *qTile, ntok int) {
		panel := unsafe.Slice((*byte)(t.w), t.nb*l.bytes)
		var (
			acc [8][panelRows]float32
			blk kTwinBlock
			av  [qkK]int32
		)
		nsub := qkK / l.sb
		for b := range t.nb {
			blk.decode(l, panel[b*l.bytes:])
			for i := range ntok {
				ab := unsafe.Slice((*byte)(t.a[i]), t.nb*q8kBlockBytes)[b*q8kBlockBytes:]
				for e, v := range q8kQs(ab) {
					av[e] = int32(int8(v))
				}
				da := q8kD(ab)
				var bs [16]int32
				for g := range bs {
					bs[g] = q8kBsum(ab, g)
				}
				for r := range panelRows {
					lv, sc := &blk.lv[r], &blk.sc[r]
					var isum, x int32
					for j := range nsub {
						var s int32
						for e := j * l.sb; e < (j+1)*l.sb; e++ {
							s += lv[e] * av[e]
						}
						isum += s * sc[j]
					}
					d := blk.d[r]
					if l.signed {
						acc[i][r] = fma32(float32(da*d), float32(isum), acc[i][r])
						continue
					}
					for g, v := range bs {
						x += blk.pr[r][g] * v
					}
					if l.corr {
						acc[i][r] = fma32(float32(da*d), float32(isum-x<<t.shift), acc[i][r])
						continue
					}
					acc[i][r] = fma32(float32(da*d), float32(isum), acc[i][r])
					acc[i][r] = fma32(-float32(da*blk.dmin[r]), float32(x), acc[i][r])
				}
			}
		}
		for i := range ntok {
			*(*[panelRows]float32)(t.out[i]) = acc[i]
		}
	}
}

// kTwinBlock is one super-block of a kPanel, per row: the levels as
// integers (signed layouts sign-extended), scales, pair entries, d and
// dmin.
type kTwinBlock struct {
	lv      [panelRows][qkK]int32
	sc, pr  [panelRows][16]int32
	d, dmin [panelRows]float32
}

func (k *kTwinBlock) decode(l kLayout, p []byte) {
	for e := range qkK {
		base := 64*(e>>2) + e&3
		for r := range panelRows {
			u := int32(p[base+4*r])
			if l.signed {
				u = int32(int8(u))
			}
			k.lv[r][e] = u
		}
	}
	for r := range panelRows {
		for j := range qkK / l.sb {
			sc := int32(binary.LittleEndian.Uint32(p[l.scOff+64*j+4*r:]))
			if l.words {
				sc = int32(int16(sc))
			}
			k.sc[r][j] = sc
		}
		k.d[r] = math.Float32frombits(binary.LittleEndian.Uint32(p[l.dOff+4*r:]))
		if l.signed {
			continue
		}
		for q := range 8 {
			k.pr[r][2*q] = int32(int16(binary.LittleEndian.Uint16(p[l.prOff+64*q+4*r:])))
			k.pr[r][2*q+1] = int32(int16(binary.LittleEndian.Uint16(p[l.prOff+64*q+4*r+2:])))
		}
		if !l.corr {
			k.dmin[r] = math.Float32frombits(binary.LittleEndian.Uint32(p[l.dminOff+4*r:]))
		}
	}
}

// ---- float panels (outer product) ----

const (
	fpRows = 32 // rows of a float panel: two 16-lane vectors
	fpToks = 12 // activation rows per fPanel call
)

// fpTile is one call of the float panel kernel: a [n][32] float32 panel
// against 12 activation rows that start at a and follow each other at
// stride bytes.
type fpTile struct {
	w      unsafe.Pointer // panel
	a      unsafe.Pointer // element 0 of activation row 0
	stride int            // bytes between activation rows
	n      int            // elements per row
	out    [fpToks]unsafe.Pointer
}

// repackFloat writes rows [r0, r0+32) of a F32/F16/BF16 matrix as a
// [Cols][32] float32 panel; rows past the end are zero.
func repackFloat(w *Matrix, r0 int, dst []float32) {
	n := w.Cols
	dst = dst[:n*fpRows]
	rb := w.RowBytes()
	for r := range fpRows {
		if r0+r >= w.Rows {
			for e := range n {
				dst[e*fpRows+r] = 0
			}
			continue
		}
		row := w.Data[(r0+r)*rb : (r0+r+1)*rb]
		for e := range n {
			var v float32
			switch w.Type {
			case F32:
				v = math.Float32frombits(binary.LittleEndian.Uint32(row[4*e:]))
			case F16:
				v = F16ToF32(binary.LittleEndian.Uint16(row[2*e:]))
			case BF16:
				v = BF16ToF32(binary.LittleEndian.Uint16(row[2*e:]))
			}
			dst[e*fpRows+r] = v
		}
	}
}

// fPanelGo is the float panel kernel's twin: each (row, token) output is
// one fused multiply-add chain over the elements in order.
func fPanelGo(t *fpTile, ntok int) {
	w := unsafe.Slice((*float32)(t.w), t.n*fpRows)
	for i := range ntok {
		a := unsafe.Slice((*float32)(unsafe.Add(t.a, i*t.stride)), t.n)
		out := (*[fpRows]float32)(t.out[i])
		var acc [fpRows]float32
		for e, x := range a {
			for r := range fpRows {
				acc[r] = fma32(w[e*fpRows+r], x, acc[r])
			}
		}
		*out = acc
	}
}
