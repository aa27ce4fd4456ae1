package kernels

// Tests of the AVX2 float panel path (fpanel_avx2_amd64.s) against its Go
// twins, bit for bit: the kernels against fPanelGo, the repack against
// repackFloat, the rounding against RoundF16/RoundBF16, and matMulSIMD
// with the AVX2 panels against matMulSIMD with fPanelGo.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// fp2Guard is the bit pattern around every output slot.
const fp2Guard = 0x7fc0beef

// fp2Specials are the guard values mixed into kernel inputs.
var fp2Specials = []float32{
	0, float32(math.Copysign(0, -1)),
	math.Float32frombits(1), math.Float32frombits(0x807fffff), math.Float32frombits(0x00012345), // subnormals
	float32(math.Inf(1)), float32(math.Inf(-1)),
	float32(math.NaN()), math.Float32frombits(0xffc12345), math.Float32frombits(0x7f800001), // NaNs, one signalling
	math.MaxFloat32, -3e38, 1e30, // huge
	math.SmallestNonzeroFloat32 * 4, 0x1p-126, // tiny
}

// Input kinds for fp2Floats.
const (
	fp2Normal  = iota // N(0, 1)
	fp2Special        // N(0, 1), about one in 40 a guard value
	fp2Tiny           // N(0, 1)·2⁻⁷⁰: products and sums in the subnormal range
)

// fp2Floats returns n random values of the given kind.
func fp2Floats(rng *rand.Rand, n int, kind int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
		switch {
		case kind == fp2Special && rng.IntN(40) == 0:
			x[i] = fp2Specials[rng.IntN(len(fp2Specials))]
		case kind == fp2Tiny:
			x[i] *= 0x1p-70
		}
	}
	return x
}

// fp2Outs is fpToks output slots of 32 floats, each in its own buffer
// with guard words on both sides.
type fp2Outs [fpToks][]float32

func newFP2Outs() *fp2Outs {
	var o fp2Outs
	for i := range o {
		o[i] = make([]float32, fpRows+16)
		for j := range o[i] {
			o[i][j] = math.Float32frombits(fp2Guard)
		}
	}
	return &o
}

func (o *fp2Outs) slot(i int) []float32 { return o[i][8 : 8+fpRows] }

// check fails if a guard word changed, or if a slot at or past nt (the
// kernel's width) was written.
func (o *fp2Outs) check(t *testing.T, what string, nt int) {
	t.Helper()
	for i := range o {
		for j, v := range o[i] {
			inside := i < nt && j >= 8 && j < 8+fpRows
			if !inside && math.Float32bits(v) != fp2Guard {
				t.Fatalf("%s: slot %d word %d overwritten (%v)", what, i, j, v)
			}
		}
	}
}

// TestFPanelAVX2 checks each AVX2 panel kernel against fPanelGo bit for
// bit on fresh random panels and activations, with and without guard
// values (±0, subnormals, ±Inf, NaN, huge), at a stride longer than n and
// an unaligned panel. One exception: where two NaNs (or a NaN and an
// ∞·0) meet in a chain, which one comes out is not fixed by fPanelGo's
// source (the compiler may swap a product's operands, and GOAMD64=v3
// fuses the multiply-add), so a NaN only has to meet a NaN there; the
// kernel widths must still agree with each other bit for bit.
func TestFPanelAVX2(t *testing.T) {
	requireAVX2(t, "AVX2 float panels")
	rng := rand.New(rand.NewPCG(71, 72))
	var ns []int
	for n := range 71 {
		ns = append(ns, n)
	}
	// The x12 kernel works in chunks of 256 elements: cover several, and
	// odd last ones.
	ns = append(ns, 127, 128, 255, 256, 257, 769, 1000, 1024, 3072)
	kerns := []struct {
		nt   int
		kern func(*fpTile)
	}{{12, fPanelAVX2x12}, {4, fPanelAVX2x4}, {1, fPanelAVX2x1}}
	nanDiffs := 0
	for _, n := range ns {
		for kind := range 3 {
			panel := fp2Floats(rng, n*fpRows+2, kind)[1:] // 4 bytes off the allocation; never empty
			stride := n + 3
			act := fp2Floats(rng, fpToks*stride, kind)
			var ref *fp2Outs // the x12 kernel's results
			for _, k := range kerns {
				mk := func(o *fp2Outs) *fpTile {
					ft := &fpTile{w: unsafe.Pointer(&panel[0]), a: unsafe.Pointer(&act[0]), stride: 4 * stride, n: n}
					for i := range fpToks {
						ft.out[i] = unsafe.Pointer(&o.slot(i)[0])
					}
					return ft
				}
				got, want := newFP2Outs(), newFP2Outs()
				k.kern(mk(got))
				fPanelGo(mk(want), k.nt)
				what := fmt.Sprintf("n=%d kind=%d x%d", n, kind, k.nt)
				got.check(t, what, k.nt)
				for i := range k.nt {
					for r := range fpRows {
						g, w := got.slot(i)[r], want.slot(i)[r]
						gb, wb := math.Float32bits(g), math.Float32bits(w)
						if gb == wb {
							continue
						}
						if g != g && w != w {
							nanDiffs++
							continue
						}
						t.Fatalf("%s: token %d row %d = %v (%#08x), fPanelGo %v (%#08x)", what, i, r, g, gb, w, wb)
					}
				}
				// Every width runs the same instructions per output, so the
				// bits agree, NaNs included.
				if k.nt == 12 {
					ref = got
					continue
				}
				for i := range k.nt {
					for r := range fpRows {
						if g, w := math.Float32bits(got.slot(i)[r]), math.Float32bits(ref.slot(i)[r]); g != w {
							t.Fatalf("%s: token %d row %d = %#08x, x12 kernel %#08x", what, i, r, g, w)
						}
					}
				}
			}
		}
	}
	t.Logf("%d outputs NaN in both with other NaN bits", nanDiffs)
}

// fp2Matrix is a rows×cols matrix of type wt with random bits (every
// class of value, NaN and Inf included) at an odd address.
func fp2Matrix(rng *rand.Rand, wt Type, rows, cols int) *Matrix {
	n := rows * wt.RowBytes(cols)
	w := &Matrix{Type: wt, Rows: rows, Cols: cols, Data: make([]byte, n+1)[1:]}
	for i := range w.Data {
		w.Data[i] = byte(rng.Uint32())
	}
	return w
}

// TestRepackFloatAVX2 checks repackFloatAVX2 against repackFloat bit for
// bit for every float type, several widths (odd ones too) and panels that
// start mid-matrix, that nothing past the panel is written, and that
// partial panels and other types are declined untouched.
func TestRepackFloatAVX2(t *testing.T) {
	requireAVX2(t, "AVX2 float panels")
	rng := rand.New(rand.NewPCG(73, 74))
	for _, wt := range simdFloatTypes {
		for _, cols := range []int{1, 3, 7, 8, 9, 15, 16, 17, 33, 64, 100, 1024, 1030} {
			w := fp2Matrix(rng, wt, 70, cols)
			for _, r0 := range []int{0, 5, 32, 38} {
				want := make([]float32, cols*fpRows)
				repackFloat(w, r0, want)
				got := make([]float32, cols*fpRows+9)[1:]
				for i := range got {
					got[i] = math.Float32frombits(fp2Guard)
				}
				if !repackFloatAVX2(w, r0, got) {
					t.Fatalf("%v cols=%d r0=%d: full panel declined", wt, cols, r0)
				}
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%v cols=%d r0=%d: panel[%d] (element %d row %d) = %#08x, want %#08x",
							wt, cols, r0, i, i/fpRows, i%fpRows, math.Float32bits(got[i]), math.Float32bits(want[i]))
					}
				}
				for _, v := range got[len(want):] {
					if math.Float32bits(v) != fp2Guard {
						t.Fatalf("%v cols=%d r0=%d: wrote past the panel", wt, cols, r0)
					}
				}
			}
			got := make([]float32, cols*fpRows)
			for _, r0 := range []int{39, 64, -1} {
				if repackFloatAVX2(w, r0, got) {
					t.Fatalf("%v cols=%d: partial panel r0=%d accepted", wt, cols, r0)
				}
			}
			for _, v := range got {
				if v != 0 {
					t.Fatalf("%v cols=%d: a declined repack wrote", wt, cols)
				}
			}
		}
	}
	q := &Matrix{Type: Q8_0, Rows: 32, Cols: 32, Data: make([]byte, 32*Q8_0.RowBytes(32))}
	if repackFloatAVX2(q, 0, make([]float32, 32*fpRows)) {
		t.Fatal("Q8_0 accepted")
	}
}

// fp2RoundCases are the rounding inputs: every high half with low halves
// at and around the binary16 and bfloat16 rounding points, plus random
// bit patterns.
func fp2RoundCases(rng *rand.Rand) []float32 {
	lows := []uint32{0, 1, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x2001, 0x3000, 0x7fff, 0x8000, 0x8001, 0xc000, 0xffff,
		rng.Uint32() & 0xffff, rng.Uint32() & 0xffff}
	x := make([]float32, 0, len(lows)<<16+1<<20)
	for hi := range uint32(1 << 16) {
		for _, lo := range lows {
			x = append(x, math.Float32frombits(hi<<16|lo))
		}
	}
	for range 1 << 20 {
		x = append(x, math.Float32frombits(rng.Uint32()))
	}
	return x
}

// TestRoundActAVX2 checks the vector rounding to F16 and BF16 against
// RoundF16 and RoundBF16 bit for bit (NaN payloads included), directly
// and through roundActAVX2 at lengths that leave a Go tail.
func TestRoundActAVX2(t *testing.T) {
	requireAVX2(t, "AVX2 float panels")
	rng := rand.New(rand.NewPCG(75, 76))
	x := fp2RoundCases(rng)
	x = x[:len(x)&^7]
	for _, c := range []struct {
		wt  Type
		ref func(float32) float32
		vec func(*float32, int, *float32)
	}{{F16, RoundF16, roundF16VecAVX2}, {BF16, RoundBF16, roundBF16VecAVX2}} {
		got := make([]float32, len(x)+1)
		got[len(x)] = math.Float32frombits(fp2Guard)
		c.vec(&x[0], len(x), &got[0])
		if math.Float32bits(got[len(x)]) != fp2Guard {
			t.Fatalf("%v: wrote past n", c.wt)
		}
		for i, v := range x {
			if g, w := math.Float32bits(got[i]), math.Float32bits(c.ref(v)); g != w {
				t.Fatalf("%v: round(%#08x) = %#08x, want %#08x", c.wt, math.Float32bits(v), g, w)
			}
		}
		for _, n := range []int{0, 1, 7, 8, 9, 31, 1000} {
			xs := x[len(x)-n-3 : len(x)-3] // values near the end (random ones)
			dst := make([]float32, n+1)
			dst[n] = math.Float32frombits(fp2Guard)
			roundActAVX2(c.wt, xs, dst[:n])
			for i, v := range xs {
				if g, w := math.Float32bits(dst[i]), math.Float32bits(c.ref(v)); g != w {
					t.Fatalf("%v n=%d: roundActAVX2[%d] of %#08x = %#08x, want %#08x", c.wt, n, i, math.Float32bits(v), g, w)
				}
			}
			if math.Float32bits(dst[n]) != fp2Guard {
				t.Fatalf("%v n=%d: wrote past the row", c.wt, n)
			}
		}
	}
}

// fp2Kernels are the AVX2 panel kernel and its Go-twin counterpart, both
// with the Go repack (the driver has no hook for another).
func fp2Kernels() (avx2, twin *matKernel) {
	avx2 = &matKernel{fam: famFloat, fp: [3]func(*fpTile){fPanelAVX2x12, fPanelAVX2x4, fPanelAVX2x1}, round: roundActAVX2}
	twin = &matKernel{fam: famFloat, round: roundActGo, fp: [3]func(*fpTile){
		func(ft *fpTile) { fPanelGo(ft, 12) },
		func(ft *fpTile) { fPanelGo(ft, 4) },
		func(ft *fpTile) { fPanelGo(ft, 1) }}}
	return avx2, twin
}

// fp2Weights is a rows×cols matrix of type wt from N(0, 0.05²) values.
func fp2Weights(tb testing.TB, rng *rand.Rand, wt Type, rows, cols int) *Matrix {
	tb.Helper()
	w := &Matrix{Type: wt, Rows: rows, Cols: cols, Data: make([]byte, rows*wt.RowBytes(cols))}
	x := make([]float32, cols)
	for r := range rows {
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 0.05)
		}
		if err := Quantize(wt, x, w.Row(r)); err != nil {
			tb.Fatal(err)
		}
	}
	return w
}

// TestMatMulFPanelAVX2 runs matMulSIMD with the AVX2 panel kernels and
// with fPanelGo for 1-30 and 512 tokens, rows not a multiple of 32, on
// two threads: the outputs must be identical.
func TestMatMulFPanelAVX2(t *testing.T) {
	requireAVX2(t, "AVX2 float panels")
	rng := rand.New(rand.NewPCG(77, 78))
	p := NewPool(2)
	defer p.Close()
	avx2, twin := fp2Kernels()
	toks := []int{512}
	for n := 1; n <= 30; n++ {
		toks = append(toks, n)
	}
	for _, wt := range simdFloatTypes {
		for _, sh := range [][2]int{{45, 67}, {70, 128}} {
			w := fp2Weights(t, rng, wt, sh[0], sh[1])
			var sa, st simdScratch
			for _, nTok := range toks {
				x := fp2Floats(rng, nTok*w.Cols, fp2Normal)
				got, want := make([]float32, nTok*w.Rows), make([]float32, nTok*w.Rows)
				matMulSIMD(avx2, p, got, w, x, nTok, &sa)
				matMulSIMD(twin, p, want, w, x, nTok, &st)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%v %dx%d, %d tokens: out[%d] (token %d row %d) = %v, twin %v",
							wt, w.Rows, w.Cols, nTok, i, i/w.Rows, i%w.Rows, got[i], want[i])
					}
				}
			}
		}
	}
}

// BenchmarkFPanelAVX2Kernel measures one AVX2 panel kernel call on data
// hot in cache (K=1024 and 3072, one panel), single-threaded, in GFLOP/s (2 per
// multiply-add) per wall and per CPU second (steadier on a shared
// machine); compare BenchmarkPanelKernel.
func BenchmarkFPanelAVX2Kernel(b *testing.B) {
	requireAVX2(b, "AVX2 float panels")
	rng := rand.New(rand.NewPCG(79, 80))
	const n = 1024
	panel := fp2Floats(rng, n*fpRows, fp2Normal)
	act := fp2Floats(rng, fpToks*n, fp2Normal)
	var out [fpToks][fpRows]float32
	ft := &fpTile{w: unsafe.Pointer(&panel[0]), a: unsafe.Pointer(&act[0]), stride: 4 * n, n: n}
	for i := range fpToks {
		ft.out[i] = unsafe.Pointer(&out[i])
	}
	// K=3072 (Qwen3's down projection): the panel is 384 KiB, in L2.
	const n3 = 3072
	panel3 := fp2Floats(rng, n3*fpRows, fp2Normal)
	act3 := fp2Floats(rng, fpToks*n3, fp2Normal)
	ft3 := &fpTile{w: unsafe.Pointer(&panel3[0]), a: unsafe.Pointer(&act3[0]), stride: 4 * n3, n: n3, out: ft.out}
	for _, k := range []struct {
		nt   int
		kern func(*fpTile)
	}{{12, fPanelAVX2x12}, {4, fPanelAVX2x4}, {1, fPanelAVX2x1}} {
		for _, t := range []*fpTile{ft, ft3} {
			b.Run(fmt.Sprintf("x%d/K%d", k.nt, t.n), func(b *testing.B) {
				cpu0 := cpuSeconds()
				for b.Loop() {
					k.kern(t)
				}
				flop := 2 * float64(fpRows*k.nt*t.n) * float64(b.N)
				b.ReportMetric(flop/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				b.ReportMetric(flop/(cpuSeconds()-cpu0)/1e9, "GFLOP/cpu-s")
			})
		}
	}
}

// BenchmarkRepackFloatAVX2 measures one 32-row panel repack (K=1024):
// the Go repackFloat against repackFloatAVX2, in Gelem/s.
func BenchmarkRepackFloatAVX2(b *testing.B) {
	requireAVX2(b, "AVX2 float panels")
	rng := rand.New(rand.NewPCG(81, 82))
	const n = 1024
	for _, wt := range simdFloatTypes {
		w := fp2Weights(b, rng, wt, fpRows, n)
		dst := make([]float32, n*fpRows)
		for _, v := range []struct {
			name string
			f    func()
		}{{"go", func() { repackFloat(w, 0, dst) }}, {"avx2", func() { repackFloatAVX2(w, 0, dst) }}} {
			b.Run(fmt.Sprintf("%v/%s", wt, v.name), func(b *testing.B) {
				for b.Loop() {
					v.f()
				}
				b.ReportMetric(float64(n*fpRows)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
			})
		}
	}
}

// BenchmarkMatMulFPanelAVX2 measures matMulSIMD on all cores for F16
// weights at the Qwen3-0.6B shapes (512 tokens) and an attention-like
// shape (512 keys × 128 dims against 64 queries), and one decode token:
// the AVX2 panels ("panel", with the driver's Go repack) against the AVX2
// dot-product tiles ("dot"). GFLOP/cpu-s is per CPU second, so per core.
func BenchmarkMatMulFPanelAVX2(b *testing.B) {
	requireAVX2(b, "AVX2 float panels")
	p := NewPool(0)
	defer p.Close()
	shapes := []struct {
		name             string
		rows, cols, toks int
	}{
		{"q_2048x1024", 2048, 1024, 512},
		{"down_1024x3072", 1024, 3072, 512},
		{"up_3072x1024", 3072, 1024, 512},
		{"attn_512x128x64", 512, 128, 64},
		{"q_2048x1024_decode", 2048, 1024, 1},
	}
	panel, _ := fp2Kernels()
	dot := simdKernel("avx2", F16)
	for _, sh := range shapes {
		var (
			w   *Matrix
			x   []float32
			out []float32
		)
		for _, v := range []struct {
			name string
			k    *matKernel
		}{{"dot", dot}, {"panel", panel}} {
			b.Run(fmt.Sprintf("F16/%s/%s", sh.name, v.name), func(b *testing.B) {
				if w == nil {
					rng := rand.New(rand.NewPCG(83, uint64(sh.rows)))
					w = fp2Weights(b, rng, F16, sh.rows, sh.cols)
					x = fp2Floats(rng, sh.toks*sh.cols, fp2Normal)
					out = make([]float32, sh.toks*sh.rows)
				}
				var s simdScratch
				matMulSIMD(v.k, p, out, w, x, sh.toks, &s) // grow scratch outside the timing
				b.ReportAllocs()
				cpu0 := cpuSeconds()
				for b.Loop() {
					matMulSIMD(v.k, p, out, w, x, sh.toks, &s)
				}
				flop := 2 * float64(sh.rows) * float64(sh.cols) * float64(sh.toks) * float64(b.N)
				b.ReportMetric(flop/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				b.ReportMetric(flop/(cpuSeconds()-cpu0)/1e9, "GFLOP/cpu-s")
			})
		}
	}
}
