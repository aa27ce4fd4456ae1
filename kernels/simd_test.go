package kernels

// Tests of the SIMD kernels against their Go twins (bit-exact) and against
// the plain trait dots and float64 references (tight tolerance), on fresh
// seeded random inputs with odd sizes, partial panels, simdUnaligned buffers
// and guard values around every output.

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"syscall"
	"testing"
	"unsafe"
)

var simdQ8Types = []Type{Q8_0, Q4_0, Q5_0, IQ4_NL, MXFP4}
var simdKTypes = []Type{Q4_K, Q5_K, Q6_K, Q2_K, Q3_K, IQ4_XS}
var simdFloatTypes = []Type{F32, F16, BF16}

// simdISAs lists the SIMD variants this machine can run for weight type t,
// plus the Go twins.
func simdISAs(t *testing.T, wt Type) []string {
	var out []string
	for _, isa := range []string{"gotile", "avx2", "avx512"} {
		v := lookup(MatMulOp(wt), isa)
		if v == nil {
			continue
		}
		if !v.supported(CPU()) {
			t.Logf("%s %s: not supported on this CPU (%s), skipped", wt, isa, CPU())
			continue
		}
		out = append(out, isa)
	}
	return out
}

// simdFloats returns n values ~ N(0, scale²) with a few outliers.
func simdFloats(rng *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * scale)
		if rng.IntN(97) == 0 {
			x[i] *= 8
		}
	}
	return x
}

// simdMatrix makes a rows×cols weight matrix of type t from random floats
// (random codes with sane scales for types without a quantizer). One row
// is all zeros to cover empty blocks.
func simdMatrix(t *testing.T, rng *rand.Rand, wt Type, rows, cols int) *Matrix {
	t.Helper()
	w := &Matrix{Type: wt, Rows: rows, Cols: cols, Data: make([]byte, rows*wt.RowBytes(cols))}
	for r := range rows {
		row := w.Row(r)
		x := simdFloats(rng, cols, 0.05)
		if r == rows/2 {
			clear(x)
		}
		switch {
		case CanQuantize(wt):
			if err := Quantize(wt, x, row); err != nil {
				t.Fatal(err)
			}
		case wt == IQ4_NL:
			for b := 0; b < len(row); b += 18 {
				for i := range 18 {
					row[b+i] = byte(rng.IntN(256))
				}
				binary.LittleEndian.PutUint16(row[b:], F32ToF16(float32(rng.Float64()*0.01)))
			}
		case wt == MXFP4:
			for b := 0; b < len(row); b += 17 {
				for i := range 17 {
					row[b+i] = byte(rng.IntN(256))
				}
				row[b] = byte(118 + rng.IntN(12))
			}
		default:
			t.Fatalf("no generator for %v", wt)
		}
	}
	return w
}

// simdUnaligned returns a slice of n bytes starting off bytes into a fresh
// buffer, to catch alignment assumptions.
func simdUnaligned(n, off int) []byte { return make([]byte, n+off)[off:] }

// guarded holds output vectors with sentinels on both sides.
type guarded struct {
	buf   []float32
	n, gd int
}

const simdSentinel = 0x7fc0dead

func newGuarded(count, n int) *guarded {
	g := &guarded{buf: make([]float32, count*(n+16)+16), n: n, gd: 16}
	for i := range g.buf {
		g.buf[i] = math.Float32frombits(simdSentinel)
	}
	return g
}

func (g *guarded) at(i int) []float32 {
	o := g.gd + i*(g.n+16)
	return g.buf[o : o+g.n]
}

func (g *guarded) check(t *testing.T, what string) {
	t.Helper()
	for i, v := range g.buf {
		inside := i >= g.gd && (i-g.gd)%(g.n+16) < g.n && (i-g.gd)/(g.n+16) < (len(g.buf)-g.gd)/(g.n+16)
		if !inside && math.Float32bits(v) != simdSentinel {
			t.Fatalf("%s: guard value at %d overwritten (%v)", what, i, v)
		}
	}
}

// simdTol is the float error bound c·K·2⁻²⁴·Σ|w·a| (plus a tiny absolute
// term) for comparing against a float64 or trait reference.
func simdTol(k int, absSum float64) float64 { return 2*float64(k)*0x1p-24*absSum + 1e-30 }

// simdRefDot computes Σ w·a in float64 from dequantized weights and the
// dequantized (already quantized) activations, and Σ|w·a|.
func simdRefDot(w, a []float32) (s, abs float64) {
	for i := range w {
		p := float64(w[i]) * float64(a[i])
		s += p
		abs += math.Abs(p)
	}
	return s, abs
}

func TestQuantActQ8ConvertersMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{32, 96, 1024} {
		x := simdFloats(rng, n, 1)
		x[5] = 0
		if n > 64 {
			clear(x[32:64]) // an all-zero block
		}
		for _, bias := range []int32{0, 8, 128} {
			want := make([]byte, n/qk*q8ActBlock)
			quantActQ8Go(x, want, bias)
			// The Go layout must agree with the Q8_0 activation quantizer.
			native := make([]byte, Q8_0.RowBytes(n))
			QuantizeActivation(Q8_0, x, native)
			for b := range n / qk {
				wb, nb := want[b*q8ActBlock:], native[b*q8_0Bytes:]
				if string(wb[:32]) != string(nb[2:34]) {
					t.Fatalf("n=%d block %d: qs differ from QuantizeActivation", n, b)
				}
				if got, d := math.Float32frombits(binary.LittleEndian.Uint32(wb[32:])), f16le(nb); got != d {
					t.Fatalf("n=%d block %d: d %v, QuantizeActivation %v", n, b, got, d)
				}
				var sum int32
				for _, q := range nb[2:34] {
					sum += int32(int8(q))
				}
				if c := int32(binary.LittleEndian.Uint32(wb[36:])); c != -bias*sum {
					t.Fatalf("n=%d block %d: corr %d, want %d", n, b, c, -bias*sum)
				}
			}
			// Every supported kernel's converter must give these bytes.
			for _, isa := range simdISAs(t, Q8_0) {
				got := simdUnaligned(len(want), 3)
				simdKernel(isa, Q8_0).actQ8(x, got, bias)
				if string(got) != string(want) {
					t.Fatalf("n=%d bias=%d: the %s converter differs from quantActQ8Go", n, bias, isa)
				}
			}
		}
	}
}

func TestQuantQ8KConvertersMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, nb := range []int{1, 3, 8} {
		x := simdFloats(rng, nb*qkK, 1)
		if nb > 1 {
			clear(x[qkK : 2*qkK]) // zero super-block
		}
		// Ties for the largest magnitude: the first one must win.
		x[7], x[100] = -3, 3
		if nb > 2 {
			x[2*qkK+9], x[2*qkK+3] = 5, -5
		}
		want := make([]byte, nb*q8kBlockBytes)
		quantizeQ8K(x, want)
		for _, isa := range simdISAs(t, Q4_K) {
			got := simdUnaligned(len(want), 1)
			for i := range got {
				got[i] = 0xa5
			}
			simdKernel(isa, Q4_K).actQ8K(x, got)
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s nb=%d: byte %d (block %d offset %d) = %#x, want %#x", isa, nb, i, i/q8kBlockBytes, i%q8kBlockBytes, got[i], want[i])
				}
			}
		}
	}
}

func TestRoundF16ConvertersMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := simdFloats(rng, 1000, 3)
	specials := []float32{0, float32(math.Copysign(0, -1)), 65504, 65520, 65519.99, 1e-8, -6e-8, 3e-5, float32(math.Inf(1)), float32(math.Inf(-1)), 1e30}
	copy(x[3:], specials)
	for i := 40; i < 200; i++ {
		x[i] = float32(rng.NormFloat64() * 1e-5) // binary16 subnormal range
	}
	for _, isa := range simdISAs(t, F16) {
		got := make([]float32, len(x))
		simdKernel(isa, F16).round(F16, x, got)
		for i, v := range x {
			if want := RoundF16(v); math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Fatalf("%s x[%d]=%v: got %v want %v", isa, i, v, got[i], want)
			}
		}
	}
}

// q8Twin returns the Go twin of a 32-block kernel with format f.
func q8Twin(f q8Format) func(*qTile, int) {
	if f.signed {
		return q8PanelGoSigned
	}
	return q8PanelGo
}

func TestQ8PanelKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, wt := range simdQ8Types {
		for _, isa := range simdISAs(t, wt) {
			k := simdKernel(isa, wt)
			for _, nb := range []int{1, 2, 7} {
				for _, rows := range []int{16, 9} {
					t.Run(fmt.Sprintf("%v/%s/nb%d/rows%d", wt, isa, nb, rows), func(t *testing.T) {
						checkPanelKernel(t, rng, k, wt, nb*qk, rows)
					})
				}
			}
		}
	}
}

func TestKPanelKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, wt := range simdKTypes {
		for _, isa := range simdISAs(t, wt) {
			k := simdKernel(isa, wt)
			for _, nb := range []int{1, 3} {
				for _, rows := range []int{16, 5} {
					t.Run(fmt.Sprintf("%v/%s/nb%d/rows%d", wt, isa, nb, rows), func(t *testing.T) {
						checkPanelKernel(t, rng, k, wt, nb*qkK, rows)
					})
				}
			}
		}
	}
}

// checkPanelKernel runs k on one panel of a random rows×cols matrix
// against k.tokens activation rows: bit-exact against the Go twin, guards
// intact, and within tolerance of the trait dot on the same quantized
// activations.
func checkPanelKernel(t *testing.T, rng *rand.Rand, k *matKernel, wt Type, cols, rows int) {
	w := simdMatrix(t, rng, wt, rows, cols)
	nt := k.tokens
	var panel []byte
	var arb int
	var twin func(*qTile, int)
	if k.fam == famQ8 {
		panel = simdUnaligned(cols/qk*q8PanelBlock, 5)
		repackQ8(w, 0, k.fmt, panel)
		arb = cols / qk * q8ActBlock
		twin = q8Twin(k.fmt)
	} else {
		panel = simdUnaligned(cols/qkK*k.layout.bytes, 5)
		repackK(w, 0, k.layout, panel)
		arb = cols / qkK * q8kBlockBytes
		twin = kPanelGo(k.layout)
	}
	xs := make([][]float32, nt)
	acts := simdUnaligned(nt*arb, 3)
	for i := range nt {
		xs[i] = simdFloats(rng, cols, 1)
		a := acts[i*arb : (i+1)*arb]
		if k.fam == famQ8 {
			k.actQ8(xs[i], a, k.fmt.bias)
		} else {
			k.actQ8K(xs[i], a)
		}
	}
	tile := func(g *guarded) *qTile {
		qt := &qTile{w: unsafe.Pointer(&panel[0]), nb: cols / wt.BlockSize(), shift: k.layout.shift}
		for i := range nt {
			qt.a[i] = unsafe.Pointer(&acts[i*arb])
			qt.out[i] = unsafe.Pointer(&g.at(i)[0])
		}
		return qt
	}
	got, want := newGuarded(nt, panelRows), newGuarded(nt, panelRows)
	k.q(tile(got))
	twin(tile(want), nt)
	got.check(t, "kernel")
	want.check(t, "twin")
	for i := range nt {
		for r := range panelRows {
			g, x := got.at(i)[r], want.at(i)[r]
			if math.Float32bits(g) != math.Float32bits(x) {
				t.Fatalf("token %d row %d: kernel %v, twin %v (must be bit-identical)", i, r, g, x)
			}
			if r >= rows && g != 0 {
				t.Fatalf("token %d padding row %d = %v, want 0", i, r, g)
			}
		}
	}
	// Against the plain trait dot on ggml's activation layout.
	vt := VecDotType(wt)
	native := make([]byte, vt.RowBytes(cols))
	wf, af := make([]float32, cols), make([]float32, cols)
	for i := range nt {
		QuantizeActivation(wt, xs[i], native)
		if err := Dequantize(vt, native, af); err != nil {
			t.Fatal(err)
		}
		for r := range rows {
			DequantizeRow(w, r, wf)
			ref := Dot(wt, cols, w.Row(r), native)
			exact, abs := simdRefDot(wf, af)
			g := float64(got.at(i)[r])
			if d := math.Abs(g - exact); d > simdTol(cols, abs) {
				t.Fatalf("token %d row %d: kernel %v, float64 %v (|Δ|=%g > %g)", i, r, g, exact, d, simdTol(cols, abs))
			}
			if d := math.Abs(g - float64(ref)); d > 2*simdTol(cols, abs) {
				t.Fatalf("token %d row %d: kernel %v, trait dot %v (|Δ|=%g)", i, r, g, ref, d)
			}
		}
	}
}

// TestPanelIntegerExact sets every scale to 1 so that the float
// combination is exact and the result must equal the integer dot of the
// dequantized weight levels with the activation levels.
func TestPanelIntegerExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	one16 := F32ToF16(1)
	for _, wt := range append(append([]Type{}, simdQ8Types...), simdKTypes...) {
		for _, isa := range simdISAs(t, wt) {
			k := simdKernel(isa, wt)
			t.Run(fmt.Sprintf("%v/%s", wt, isa), func(t *testing.T) {
				cols := 2 * qkK
				w := simdMatrix(t, rng, wt, panelRows, cols)
				bs, bb := wt.BlockSize(), wt.BlockBytes()
				for r := range panelRows {
					row := w.Row(r)
					for b := 0; b < len(row); b += bb {
						switch wt {
						case MXFP4:
							row[b] = 128 // 2^(128−128) = 1
						case Q6_K:
							binary.LittleEndian.PutUint16(row[b+208:], one16)
						case Q3_K:
							binary.LittleEndian.PutUint16(row[b+108:], one16)
						case Q2_K:
							binary.LittleEndian.PutUint16(row[b+80:], one16)
							binary.LittleEndian.PutUint16(row[b+82:], one16)
						case Q4_K, Q5_K:
							binary.LittleEndian.PutUint16(row[b:], one16)
							binary.LittleEndian.PutUint16(row[b+2:], one16)
						default:
							binary.LittleEndian.PutUint16(row[b:], one16)
						}
					}
				}
				nt := k.tokens
				var arb int
				var panel []byte
				if k.fam == famQ8 {
					arb = cols / qk * q8ActBlock
					panel = make([]byte, cols/qk*q8PanelBlock)
					repackQ8(w, 0, k.fmt, panel)
				} else {
					arb = cols / qkK * q8kBlockBytes
					panel = make([]byte, cols/qkK*k.layout.bytes)
					repackK(w, 0, k.layout, panel)
				}
				acts := make([]byte, nt*arb)
				levels := make([][]int64, nt)
				for i := range nt {
					a := acts[i*arb : (i+1)*arb]
					levels[i] = make([]int64, cols)
					for e := range cols {
						levels[i][e] = int64(rng.IntN(7) - 3)
					}
					if i == 0 {
						for e := range cols {
							levels[i][e] = int64(rng.IntN(255) - 127) // full range
						}
					}
					writeUnitActivation(k.fam, k.fmt.bias, levels[i], a)
				}
				g := newGuarded(nt, panelRows)
				qt := &qTile{w: unsafe.Pointer(&panel[0]), nb: cols / bs, shift: k.layout.shift}
				for i := range nt {
					qt.a[i] = unsafe.Pointer(&acts[i*arb])
					qt.out[i] = unsafe.Pointer(&g.at(i)[0])
				}
				k.q(qt)
				g.check(t, "kernel")
				wf := make([]float32, cols)
				for r := range panelRows {
					DequantizeRow(w, r, wf)
					for i := range nt {
						var want int64
						for e, v := range wf {
							if v != float32(int64(v)) {
								t.Fatalf("row %d: dequantized weight %v is not an integer", r, v)
							}
							want += int64(v) * levels[i][e]
						}
						if math.Abs(float64(want)) >= 1<<24 {
							t.Fatalf("test sum %d too large to be exact in float32", want)
						}
						if got := g.at(i)[r]; got != float32(want) {
							t.Fatalf("row %d token %d: got %v, want exactly %d", r, i, got, want)
						}
					}
				}
			})
		}
	}
}

// writeUnitActivation writes activation levels with scale 1 in the layout
// of family fam.
func writeUnitActivation(fam matFamily, bias int32, lv []int64, dst []byte) {
	if fam == famQ8 {
		for b := range len(lv) / qk {
			blk := dst[b*q8ActBlock:]
			var sum int32
			for e := range qk {
				blk[e] = byte(int8(lv[b*qk+e]))
				sum += int32(lv[b*qk+e])
			}
			binary.LittleEndian.PutUint32(blk[32:], math.Float32bits(1))
			binary.LittleEndian.PutUint32(blk[36:], uint32(-bias*sum))
		}
		return
	}
	for b := range len(lv) / qkK {
		blk := dst[b*q8kBlockBytes:]
		binary.LittleEndian.PutUint32(blk, math.Float32bits(1))
		for g := range 16 {
			var s int16
			for e := range 16 {
				v := lv[b*qkK+16*g+e]
				blk[q8kQsOff+16*g+e] = byte(int8(v))
				s += int16(v)
			}
			binary.LittleEndian.PutUint16(blk[q8kBsumsOff+2*g:], uint16(s))
		}
	}
}

// qwenShapes are the Qwen3-0.6B projections as (rows = outputs, cols =
// inputs): q, k/v, o, gate/up, down.
var qwenShapes = []struct {
	name       string
	rows, cols int
}{
	{"q_2048x1024", 2048, 1024},
	{"kv_1024x1024", 1024, 1024},
	{"o_1024x2048", 1024, 2048},
	{"up_3072x1024", 3072, 1024},
	{"down_1024x3072", 1024, 3072},
}

// headShape is Qwen3's LM head (vocabulary × hidden) for HeadRows = 128
// rows at a time, as the engine's HeadReduce runs it.
var headShape = struct {
	name             string
	rows, cols, toks int
}{"head_151936x1024", 151936, 1024, 128}

// BenchmarkSIMDMatMul measures MatMul at the Qwen3-0.6B shapes for 512
// tokens (and the LM head for 128 rows) on all cores, per variant: GFLOP/s (2·rows·cols·tokens per wall
// second) and GFLOP/cpu-s (per second of process CPU time, which is far
// less sensitive to other load on a shared machine). The plain Go path
// takes seconds per call: run it with -benchtime=1x.
func BenchmarkSIMDMatMul(b *testing.B) {
	p := NewPool(0)
	defer p.Close()
	type shape struct {
		name             string
		rows, cols, toks int
	}
	var shapes []shape
	for _, sh := range qwenShapes {
		shapes = append(shapes, shape{sh.name, sh.rows, sh.cols, 512})
	}
	// A routed expert of a 35B-A3B-like MoE at 512 tokens: 256 experts,
	// 8 used, so 16 tokens per expert on average.
	shapes = append(shapes, shape(headShape), shape{"expert16", 512, 2048, 16})
	for _, wt := range []Type{F16, Q8_0, Q4_K, Q6_K, Q5_K, Q4_0, Q4_1, Q5_1, F32, IQ4_XS, Q3_K, Q2_K} {
		for _, sh := range shapes {
			nTok := sh.toks
			var (
				w   *Matrix
				x   []float32
				out []float32
			)
			setup := func() {
				if w != nil {
					return
				}
				rng := rand.New(rand.NewPCG(31, uint64(sh.rows)))
				w = &Matrix{Type: wt, Rows: sh.rows, Cols: sh.cols, Data: make([]byte, sh.rows*wt.RowBytes(sh.cols))}
				src := simdFloats(rng, sh.cols, 0.05)
				q := make([]byte, wt.RowBytes(sh.cols))
				if err := Quantize(wt, src, q); err != nil {
					b.Fatal(err)
				}
				// Rows differ by a rotation of one quantized row: cheap to
				// make, and every row still has its own bytes.
				bb := wt.BlockBytes()
				for r := range sh.rows {
					off := (r * bb) % len(q)
					copy(w.Row(r), q[off:])
					copy(w.Row(r)[len(q)-off:], q[:off])
				}
				x = simdFloats(rng, nTok*sh.cols, 1)
				out = make([]float32, nTok*sh.rows)
			}
			for _, isa := range []string{"go", "avx2", "avx512"} {
				var run func()
				if isa == "go" {
					var ms MatScratch
					run = func() { MatMul(p, out, w, x, nTok, &ms) }
				} else {
					v := lookup(MatMulOp(wt), isa)
					if v == nil || !v.supported(CPU()) {
						continue
					}
					var s simdScratch
					run = func() { matMulSIMD(v.mm.k, p, out, w, x, nTok, &s) }
				}
				b.Run(fmt.Sprintf("%v/%s/%s", wt, sh.name, isa), func(b *testing.B) {
					setup()
					run() // grow scratch outside the timing
					b.ReportAllocs()
					cpu0 := cpuSeconds()
					b.ResetTimer()
					for b.Loop() {
						run()
					}
					flop := 2 * float64(sh.rows) * float64(sh.cols) * float64(nTok) * float64(b.N)
					b.ReportMetric(flop/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					b.ReportMetric(flop/(cpuSeconds()-cpu0)/1e9, "GFLOP/cpu-s")
				})
			}
		}
	}
}

// cpuSeconds is the process's user+system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// BenchmarkPanelKernel measures one kernel call on data hot in cache
// (K=1024, one panel, one token group), single-threaded: the kernels'
// peak, in GOP/s (2 ops per multiply-add).
func BenchmarkPanelKernel(b *testing.B) {
	rng := rand.New(rand.NewPCG(41, 42))
	const cols = 1024
	for _, wt := range []Type{Q8_0, Q4_0, Q4_K, Q6_K, F16, F32, IQ4_XS, Q3_K, Q2_K} {
		w := &Matrix{Type: wt, Rows: panelRows, Cols: cols, Data: make([]byte, panelRows*wt.RowBytes(cols))}
		for r := range panelRows {
			if err := Quantize(wt, simdFloats(rng, cols, 0.05), w.Row(r)); err != nil {
				b.Fatal(err)
			}
		}
		for _, isa := range []string{"avx2", "avx512"} {
			v := lookup(MatMulOp(wt), isa)
			if v == nil || !v.supported(CPU()) {
				continue
			}
			k := v.mm.k
			var call func()
			var macs float64
			switch k.fam {
			case famFloat:
				w32 := &Matrix{Type: wt, Rows: fpRows, Cols: cols, Data: make([]byte, fpRows*wt.RowBytes(cols))}
				for r := range fpRows {
					copy(w32.Row(r), w.Row(r%panelRows))
				}
				panel := make([]float32, cols*fpRows)
				repackFloat(w32, 0, panel)
				xs := simdFloats(rng, fpToks*cols, 1)
				var out [fpToks][fpRows]float32
				ft := &fpTile{w: unsafe.Pointer(&panel[0]), a: unsafe.Pointer(&xs[0]), stride: 4 * cols, n: cols}
				for i := range fpToks {
					ft.out[i] = unsafe.Pointer(&out[i])
				}
				call = func() { k.fp[0](ft) }
				macs = float64(fpRows * fpToks * cols)
			default:
				var panel []byte
				var arb int
				if k.fam == famQ8 {
					panel = make([]byte, cols/qk*q8PanelBlock)
					repackQ8(w, 0, k.fmt, panel)
					arb = cols / qk * q8ActBlock
				} else {
					panel = make([]byte, cols/qkK*k.layout.bytes)
					repackK(w, 0, k.layout, panel)
					arb = cols / qkK * q8kBlockBytes
				}
				acts := make([]byte, 8*arb)
				for i := range 8 {
					x := simdFloats(rng, cols, 1)
					if k.fam == famQ8 {
						k.actQ8(x, acts[i*arb:], k.fmt.bias)
					} else {
						k.actQ8K(x, acts[i*arb:])
					}
				}
				var out [8][panelRows]float32
				qt := &qTile{w: unsafe.Pointer(&panel[0]), nb: cols / wt.BlockSize(), shift: k.layout.shift}
				for i := range 8 {
					qt.a[i] = unsafe.Pointer(&acts[i*arb])
					qt.out[i] = unsafe.Pointer(&out[i])
				}
				call = func() { k.q(qt) }
				macs = float64(panelRows * k.tokens * cols)
			}
			b.Run(fmt.Sprintf("%v/%s", wt, isa), func(b *testing.B) {
				for b.Loop() {
					call()
				}
				b.ReportMetric(2*macs*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
			})
		}
	}
}

// TestRepackAVX512MatchesGo checks the AVX-512 gather repackers byte for
// byte against the Go repack, on a matrix at an odd address with panels
// that start mid-matrix.
func TestRepackAVX512MatchesGo(t *testing.T) {
	if !haveAsm || !CPU().Has(needAVX512) {
		t.Skipf("no AVX-512 assembly here (%s)", CPU())
	}
	rng := rand.New(rand.NewPCG(15, 16))
	for _, wt := range []Type{Q8_0, Q4_0, Q4_K, Q5_K, Q6_K} {
		for _, nb := range []int{1, 3} {
			cols := nb * wt.BlockSize() * max(1, 64/wt.BlockSize())
			w := simdMatrix(t, rng, wt, 37, cols)
			data := simdUnaligned(len(w.Data), 1)
			copy(data, w.Data)
			w.Data = data
			var f q8Format
			var size int
			s := descOf(wt).simd
			if s.fam == famK {
				size = cols / qkK * s.layout.bytes
			} else {
				f = s.q8
				size = cols / qk * q8PanelBlock
			}
			for _, r0 := range []int{0, 16, 21} {
				want, got := make([]byte, size), simdUnaligned(size, 3)
				for i := range got {
					got[i] = 0xcc
				}
				if s.fam == famK {
					repackK(w, r0, s.layout, want)
				} else {
					repackQ8(w, r0, f, want)
				}
				if !repackAVX512(w, r0, f, got) {
					t.Fatalf("%v: repackAVX512 declined a full panel", wt)
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%v nb=%d r0=%d: byte %d = %#x, want %#x", wt, nb, r0, i, got[i], want[i])
					}
				}
			}
			if repackAVX512(w, 32, f, make([]byte, size)) {
				t.Fatalf("%v: repackAVX512 accepted a partial panel", wt)
			}
		}
	}
}

// TestFloatPanel checks the float panel path: the gather repack against
// the Go repack (bit for bit, full panels; partial ones and odd 16-bit
// rows must be declined), and the outer-product kernel against its twin
// (bit for bit) and float64, with guards around every output.
func TestFloatPanel(t *testing.T) {
	if !haveAsm || !CPU().Has(needAVX512) {
		t.Skipf("no AVX-512 assembly here (%s)", CPU())
	}
	rng := rand.New(rand.NewPCG(17, 18))
	for _, wt := range simdFloatTypes {
		for _, n := range []int{1, 2, 7, 64, 1030} {
			t.Run(fmt.Sprintf("%v/n%d", wt, n), func(t *testing.T) {
				w := simdMatrix(t, rng, wt, 45, n)
				data := simdUnaligned(len(w.Data), 3)
				copy(data, w.Data)
				w.Data = data
				want := make([]float32, n*fpRows)
				repackFloat(w, 0, want)
				got := make([]float32, n*fpRows+16)
				for i := range got {
					got[i] = math.Float32frombits(simdSentinel)
				}
				fast := repackFloatAVX512(w, 0, got)
				if fast != (wt == F32 || n%2 == 0) {
					t.Fatalf("repackFloatAVX512 accepted=%v for %v n=%d", fast, wt, n)
				}
				if fast {
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("panel[%d] = %v, want %v", i, got[i], want[i])
						}
					}
					for _, v := range got[len(want):] {
						if math.Float32bits(v) != simdSentinel {
							t.Fatal("repack wrote past the panel")
						}
					}
				}
				if repackFloatAVX512(w, 32, got) {
					t.Fatal("repackFloatAVX512 accepted a partial panel")
				}
				// Kernels: up to 12 activation rows at a stride longer than n;
				// every width must give the 12-wide kernel's results.
				stride := n + 3
				act := simdFloats(rng, fpToks*stride, 1)
				mk := func(g *guarded, nt int) *fpTile {
					ft := &fpTile{w: unsafe.Pointer(&want[0]), a: unsafe.Pointer(&act[0]), stride: 4 * stride, n: n}
					for i := range nt {
						ft.out[i] = unsafe.Pointer(&g.at(i)[0])
					}
					return ft
				}
				gk, gt := newGuarded(fpToks, fpRows), newGuarded(fpToks, fpRows)
				fPanelAVX512x12(mk(gk, 12))
				fPanelGo(mk(gt, 12), fpToks)
				gk.check(t, "kernel")
				for nt, kern := range map[int]func(*fpTile){4: fPanelAVX512x4, 1: fPanelAVX512x1} {
					g := newGuarded(fpToks, fpRows)
					kern(mk(g, nt))
					g.check(t, fmt.Sprintf("%d-token kernel", nt))
					for i := range fpToks {
						for r := range fpRows {
							v := g.at(i)[r]
							if i < nt && math.Float32bits(v) != math.Float32bits(gk.at(i)[r]) {
								t.Fatalf("%d-token kernel, token %d row %d: %v, 12-token kernel %v", nt, i, r, v, gk.at(i)[r])
							}
							if i >= nt && math.Float32bits(v) != simdSentinel {
								t.Fatalf("%d-token kernel wrote token %d", nt, i)
							}
						}
					}
				}
				for i := range fpToks {
					a := act[i*stride : i*stride+n]
					for r := range fpRows {
						g := gk.at(i)[r]
						if math.Float32bits(g) != math.Float32bits(gt.at(i)[r]) {
							t.Fatalf("token %d row %d: kernel %v, twin %v", i, r, g, gt.at(i)[r])
						}
						var exact, abs float64
						for e := range n {
							p := float64(want[e*fpRows+r]) * float64(a[e])
							exact += p
							abs += math.Abs(p)
						}
						if d := math.Abs(float64(g) - exact); d > simdTol(n, abs) {
							t.Fatalf("token %d row %d: %v vs float64 %v", i, r, g, exact)
						}
					}
				}
			})
		}
	}
}

// TestRepackQ8Words checks the word-at-a-time repack of Q8_0 and Q4_0
// against the level-by-level reference, biased and signed, for full and
// partial panels.
func TestRepackQ8Words(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, wt := range []Type{Q8_0, Q4_0} {
		formats := []q8Format{descOf(wt).simd.q8}
		if wt == Q8_0 {
			formats = append(formats, q8Format{signed: true})
		}
		for _, f := range formats {
			for _, nb := range []int{1, 3, 32} {
				w := simdMatrix(t, rng, wt, 37, nb*qk)
				size := nb * q8PanelBlock
				for _, r0 := range []int{0, 16, 21, 32} {
					want, got := make([]byte, size), make([]byte, size)
					for i := range got {
						got[i] = 0xcc
					}
					repackQ8Levels(w, r0, f, want)
					repackQ8Words(w, r0, f, got)
					if i := firstDiff(got, want); i >= 0 {
						t.Fatalf("%v %+v nb=%d r0=%d: byte %d = %#x, want %#x", wt, f, nb, r0, i, got[i], want[i])
					}
				}
			}
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
