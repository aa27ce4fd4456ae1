package kernels

// Tests of the Q4_1/Q5_1 min panels (panel_min.go): the repack against a
// level-by-level decode, the Q8_1 activation converter against ggml's
// (legacy.go), the AVX2 kernel bit for bit against its Go twin, and the
// twin and the driver against float64 references and the plain Go path.

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

var minTypes = []Type{Q4_1, Q5_1}

// minMatrix is a rows×cols Q4_1/Q5_1 matrix: quantized random floats (one
// row zero, as simdMatrix), or with random code bytes and d, m
// random f16 of either sign.
func minMatrix(t *testing.T, rng *rand.Rand, wt Type, rows, cols int, codes bool) *Matrix {
	t.Helper()
	if !codes {
		return simdMatrix(t, rng, wt, rows, cols)
	}
	w := &Matrix{Type: wt, Rows: rows, Cols: cols, Data: make([]byte, rows*wt.RowBytes(cols))}
	bb := wt.BlockBytes()
	for b := 0; b < len(w.Data); b += bb {
		for i := range bb {
			w.Data[b+i] = byte(rng.IntN(256))
		}
		binary.LittleEndian.PutUint16(w.Data[b:], F32ToF16(float32((rng.Float64()-0.5)*0.02)))
		binary.LittleEndian.PutUint16(w.Data[b+2:], F32ToF16(float32((rng.Float64()-0.5)*0.2)))
	}
	return w
}

// minLevels decodes one Q4_1/Q5_1 block to its levels q, d and m, level by
// level from the format description (../shared/spec/gguf-and-quants.md §3).
func minLevels(wt Type, blk []byte) (q [qk]int32, d, m float32) {
	d, m = f16le(blk), f16le(blk[2:])
	qs, h := blk[4:20], uint32(0)
	if wt == Q5_1 {
		qs, h = blk[8:24], binary.LittleEndian.Uint32(blk[4:])
	}
	for j := range 16 {
		q[j] = int32(qs[j]&0xf) | int32(h>>j&1)<<4
		q[j+16] = int32(qs[j]>>4) | int32(h>>(j+16)&1)<<4
	}
	return q, d, m
}

func TestRepackQ8MinMatchesLevels(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, wt := range minTypes {
		const rows, nb = 21, 3
		w := minMatrix(t, rng, wt, rows, nb*qk, true)
		for _, r0 := range []int{0, 16} {
			got := make([]byte, nb*q8MinPanelBlock)
			for i := range got {
				got[i] = 0xa5 // every byte must be written
			}
			repackQ8Min(w, r0, got)
			want := make([]byte, nb*q8MinPanelBlock)
			for r := range min(panelRows, rows-r0) {
				row := w.Row(r0 + r)
				for b := range nb {
					q, d, m := minLevels(wt, row[b*wt.BlockBytes():])
					p := want[b*q8MinPanelBlock:]
					for e, v := range q {
						p[64*(e>>2)+4*r+e&3] = byte(v)
					}
					binary.LittleEndian.PutUint32(p[512+4*r:], math.Float32bits(d))
					binary.LittleEndian.PutUint32(p[576+4*r:], math.Float32bits(m))
				}
			}
			if i := firstDiff(got, want); i >= 0 {
				t.Fatalf("%v r0=%d: byte %d = %#x, want %#x", wt, r0, i, got[i], want[i])
			}
		}
	}
}

// TestQuantActQ8_1Layout checks the converter against ggml's Q8_1 blocks:
// same levels, the f16 d, and s_a = the f16 s.
func TestQuantActQ8_1Layout(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	const nb = 9
	x := simdFloats(rng, nb*qk, 1)
	clear(x[qk : 2*qk]) // an all-zero block
	got := make([]byte, nb*q8ActBlock)
	quantActQ8_1Go(x, got, 0)
	native := make([]byte, nb*q8_1Bytes)
	quantizeActQ8_1(x, native)
	for b := range nb {
		g, n := got[b*q8ActBlock:], native[b*q8_1Bytes:]
		if string(g[:qk]) != string(n[4:4+qk]) {
			t.Fatalf("block %d: levels differ", b)
		}
		if d := math.Float32frombits(binary.LittleEndian.Uint32(g[32:])); d != f16le(n) {
			t.Fatalf("block %d: d %v, want %v", b, d, f16le(n))
		}
		if s := math.Float32frombits(binary.LittleEndian.Uint32(g[36:])); s != f16le(n[2:]) {
			t.Fatalf("block %d: s %v, want %v", b, s, f16le(n[2:]))
		}
	}
}

// minRefs are a row·token dot's references: alg, Σ_b d_w·d_a·Σq·a_q +
// m_w·s_a in float64 (what the kernels compute, but exact), and tolAlg,
// the kernels' error bound against it: d_w·d_a's rounding and one rounding
// per fused multiply-add on partial sums bounded by Σ_b|terms|, so
// (2·nb+1)·2⁻²⁴·Σ_b(|d_w·d_a·isum| + |m_w·s_a|). deq is Σ w·a in float64
// of the dequantized weights (float32 d·q + m, as dequantQ4_1) and
// activations (d_a·a_q); it differs from alg by the activation's s
// rounding, which shift holds exactly (Σ_b m_w·(s_a − d_a·Σa_q)), and
// tolDeq bounds the rest: tolAlg plus dequantization's two roundings,
// 2⁻²⁴·(2|w| + |m_w|)·|a| per element (|d_w·q| ≤ |w| + |m_w|, |a| ≤
// 128·d_a).
type minRefs struct {
	nb               int
	alg, tolAlg, abs float64
	absFine          float64 // Σ_b |d_w·d_a|·Σ|q·a_q| + |m_w·s_a|: bounds any partial sum
	deq, shift       float64
	tolDeq           float64
}

func minRef(wt Type, row, act []byte) minRefs {
	nb := len(act) / q8ActBlock
	r := minRefs{nb: nb}
	wf := make([]float32, qk)
	for b := range nb {
		blk := row[b*wt.BlockBytes() : (b+1)*wt.BlockBytes()]
		q, dw, mw := minLevels(wt, blk)
		ab := act[b*q8ActBlock:]
		da := float64(math.Float32frombits(binary.LittleEndian.Uint32(ab[32:])))
		sa := float64(math.Float32frombits(binary.LittleEndian.Uint32(ab[36:])))
		var isum, asum, iabs int64
		for e := range qk {
			isum += int64(q[e]) * int64(int8(ab[e]))
			iabs += int64(q[e]) * int64(max(int8(ab[e]), -int8(ab[e])))
			asum += int64(int8(ab[e]))
		}
		t1, t2 := float64(dw)*da*float64(isum), float64(mw)*sa
		r.alg += t1 + t2
		r.abs += math.Abs(t1) + math.Abs(t2)
		r.absFine += math.Abs(float64(dw)*da)*float64(iabs) + math.Abs(t2)
		r.shift += float64(mw) * (sa - da*float64(asum))
		descOf(wt).dequant(blk, wf)
		var deqAbs float64
		for e, v := range wf {
			p := float64(v) * da * float64(int8(ab[e]))
			r.deq += p
			deqAbs += math.Abs(p)
		}
		r.tolDeq += 0x1p-24 * (2*deqAbs + math.Abs(float64(mw))*da*128*qk)
	}
	r.tolAlg = float64(2*nb+1)*0x1p-24*r.abs + 1e-30
	r.tolDeq += r.tolAlg
	return r
}

// checkMinOut compares one output with the references and the go path.
func checkMinOut(t *testing.T, what string, got, plain float32, ref minRefs) {
	t.Helper()
	g := float64(got)
	if d := math.Abs(g - ref.alg); d > ref.tolAlg {
		t.Fatalf("%s: %v, exact %v (|Δ|=%g > %g)", what, g, ref.alg, d, ref.tolAlg)
	}
	if d := math.Abs(g - (ref.deq + ref.shift)); d > ref.tolDeq {
		t.Fatalf("%s: %v, dequantized float64 %v + s rounding %v (|Δ|=%g > %g)", what, g, ref.deq, ref.shift, d, ref.tolDeq)
	}
	// The go path sums the same terms in another order (8 lanes of nb
	// fused multiply-adds of lane partial sums, their sum, then the m·s
	// terms in a scalar): within (nb+5)·2⁻²⁴ times a bound of every
	// partial sum (absFine) of alg.
	if tol := ref.tolAlg + float64(ref.nb+5)*0x1p-24*ref.absFine; math.Abs(g-float64(plain)) > tol {
		t.Fatalf("%s: %v, go path %v (tol %g)", what, g, plain, tol)
	}
}

func TestQ8MinPanelKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	for _, wt := range minTypes {
		for _, isa := range simdISAs(t, wt) {
			k := simdKernel(isa, wt)
			for _, nb := range []int{1, 2, 7} {
				for _, rows := range []int{16, 9} {
					for _, codes := range []bool{false, true} {
						t.Run(fmt.Sprintf("%v/%s/nb%d/rows%d/codes=%v", wt, isa, nb, rows, codes), func(t *testing.T) {
							checkMinPanel(t, rng, k, wt, nb*qk, rows, codes)
						})
					}
				}
			}
		}
	}
}

// checkMinPanel runs k on one panel against k.tokens activation rows:
// bit-identical to q8PanelGoMin, guards intact, padding rows zero, and
// within the derived tolerances of the references.
func checkMinPanel(t *testing.T, rng *rand.Rand, k *matKernel, wt Type, cols, rows int, codes bool) {
	w := minMatrix(t, rng, wt, rows, cols, codes)
	nt, nb := k.tokens, cols/qk
	panel := simdUnaligned(nb*q8MinPanelBlock, 5)
	repackPanel(k, w, 0, panel)
	arb := nb * q8ActBlock
	acts := simdUnaligned(nt*arb, 3)
	for i := range nt {
		k.actQ8(simdFloats(rng, cols, 1), acts[i*arb:(i+1)*arb], k.fmt.bias)
	}
	tile := func(g *guarded) *qTile {
		qt := &qTile{w: unsafe.Pointer(&panel[0]), nb: nb}
		for i := range nt {
			qt.a[i] = unsafe.Pointer(&acts[i*arb])
			qt.out[i] = unsafe.Pointer(&g.at(i)[0])
		}
		return qt
	}
	got, want := newGuarded(nt, panelRows), newGuarded(nt, panelRows)
	k.q(tile(got))
	q8PanelGoMin(tile(want), nt)
	got.check(t, "kernel")
	want.check(t, "twin")
	native := make([]byte, nb*q8_1Bytes)
	for i := range nt {
		a := acts[i*arb : (i+1)*arb]
		// The go path's Q8_1 row with the same levels, d and s.
		for b := range nb {
			n, ab := native[b*q8_1Bytes:], a[b*q8ActBlock:]
			putF16(n, math.Float32frombits(binary.LittleEndian.Uint32(ab[32:])))
			putF16(n[2:], math.Float32frombits(binary.LittleEndian.Uint32(ab[36:])))
			copy(n[4:4+qk], ab[:qk])
		}
		for r := range panelRows {
			g, x := got.at(i)[r], want.at(i)[r]
			if math.Float32bits(g) != math.Float32bits(x) {
				t.Fatalf("token %d row %d: kernel %v, twin %v (must be bit-identical)", i, r, g, x)
			}
			if r >= rows {
				if g != 0 {
					t.Fatalf("token %d padding row %d = %v, want 0", i, r, g)
				}
				continue
			}
			plain := Dot(wt, cols, w.Row(r), native)
			checkMinOut(t, fmt.Sprintf("token %d row %d", i, r), x, plain, minRef(wt, w.Row(r), a))
		}
	}
}

// TestMatMulSIMDMin runs both min variants through the threaded driver:
// rows not a multiple of 16, token counts 1..9 and 512, several block
// counts; every output within tolerance of the references and the go
// path, a token's outputs the same bits whatever the token count, and a
// prepacked matrix the same bits as the unpacked call.
func TestMatMulSIMDMin(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 48))
	p := NewPool(2)
	defer p.Close()
	for _, wt := range minTypes {
		for _, sh := range []struct{ rows, nb int }{{37, 1}, {9, 3}, {50, 8}} {
			cols := sh.nb * qk
			w := minMatrix(t, rng, wt, sh.rows, cols, false)
			const maxTok = 512
			x := simdFloats(rng, maxTok*cols, 1)
			plain := make([]float32, maxTok*sh.rows)
			MatMul(p, plain, w, x, maxTok, nil)
			acts := make([]byte, maxTok*sh.nb*q8ActBlock)
			for tok := range maxTok {
				quantActQ8_1Go(x[tok*cols:(tok+1)*cols], acts[tok*sh.nb*q8ActBlock:], 0)
			}
			var first []float32 // every variant gives the same bits
			for _, isa := range simdISAs(t, wt) {
				k := simdKernel(isa, wt)
				t.Run(fmt.Sprintf("%v/%s/%dx%d", wt, isa, sh.rows, cols), func(t *testing.T) {
					var s simdScratch
					full := newGuarded(1, maxTok*sh.rows)
					matMulSIMD(k, p, full.at(0), w, x, maxTok, &s)
					full.check(t, "out")
					if first == nil {
						first = append([]float32(nil), full.at(0)...)
					}
					for i, v := range full.at(0) {
						if math.Float32bits(v) != math.Float32bits(first[i]) {
							t.Fatalf("out[%d] = %v, the first variant's %v", i, v, first[i])
						}
					}
					for tok := range maxTok {
						a := acts[tok*sh.nb*q8ActBlock : (tok+1)*sh.nb*q8ActBlock]
						for r := range sh.rows {
							i := tok*sh.rows + r
							checkMinOut(t, fmt.Sprintf("tok %d row %d", tok, r), full.at(0)[i], plain[i], minRef(wt, w.Row(r), a))
						}
					}
					for nTok := 1; nTok <= 9; nTok++ {
						for _, pool := range []*Pool{nil, p} {
							g := newGuarded(1, nTok*sh.rows)
							matMulSIMD(k, pool, g.at(0), w, x, nTok, &s)
							g.check(t, "out")
							for i, v := range g.at(0) {
								if math.Float32bits(v) != math.Float32bits(full.at(0)[i]) {
									t.Fatalf("nTok %d threads %d: out[%d] = %v, in the 512-token call %v", nTok, pool.Threads(), i, v, full.at(0)[i])
								}
							}
						}
					}
					ks, err := ParseKernels(MatMulOp(wt) + "=" + isa)
					if err != nil {
						t.Fatal(err)
					}
					pm, err := ks.Prepack(p, w)
					if err != nil {
						t.Fatal(err)
					}
					if pm.Bytes() != (sh.rows+15)/16*sh.nb*q8MinPanelBlock {
						t.Fatalf("packed %d bytes", pm.Bytes())
					}
					packed := make([]float32, maxTok*sh.rows)
					ks.MatMulPacked(p, packed, pm, x, maxTok, nil)
					for i, v := range packed {
						if math.Float32bits(v) != math.Float32bits(full.at(0)[i]) {
							t.Fatalf("prepacked out[%d] = %v, unpacked %v", i, v, full.at(0)[i])
						}
					}
					if isa != "gotile" {
						var ms MatScratch
						out := make([]float32, maxTok*sh.rows)
						ks.MatMul(p, out, w, x, maxTok, &ms)
						if n := testing.AllocsPerRun(3, func() { ks.MatMul(p, out, w, x, maxTok, &ms) }); n != 0 {
							t.Errorf("%v allocations per call", n)
						}
					}
				})
			}
		}
	}
}
