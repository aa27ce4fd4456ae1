package kernels

// Tests of the AVX2 elementwise and logit-row kernels (ops_avx2_amd64.s)
// against their Go twins, bit for bit: every length 0..70 and a few long
// rows, sub-slices starting at 0..7, guard values mixed into random
// inputs, special rows for the reductions, and sentinels around every
// output to catch stray writes.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// opsAVX2Lengths are the row lengths every test runs.
func opsAVX2Lengths() []int {
	var ns []int
	for n := range 71 {
		ns = append(ns, n)
	}
	return append(ns, 1000, 4097, 151936)
}

// opsAVX2Guards are values at the edges of expGo: specials, denormals,
// the clamps, and inputs whose exp is denormal or overflows.
var opsAVX2Guards = []float32{
	float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
	0, float32(math.Copysign(0, -1)), 0x1p-149, -0x1p-149, 1e-40, -1e-40, 0x1p-126,
	math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32,
	-104, -104.5, 89, 89.5, 88.7, 88.72283, 88.7229, -87.3, -87.33655, -103.9, -103.28,
	-88, -90, -95, -100, -102.5, -103.97, 1, -1, 0.5, -0.5,
}

// opsAVX2Input returns n random floats with about one in six replaced by
// a guard value.
func opsAVX2Input(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		switch rng.IntN(6) {
		case 0:
			x[i] = opsAVX2Guards[rng.IntN(len(opsAVX2Guards))]
		case 1:
			x[i] = float32(rng.NormFloat64())
		default:
			x[i] = float32(rng.Float64()*220 - 120)
		}
	}
	return x
}

// opsAVX2Rows are inputs for the reductions: random ones and rows that
// exercise the max's NaN, infinity and signed-zero conventions.
func opsAVX2Rows(rng *rand.Rand, n int) [][]float32 {
	if n == 0 {
		return [][]float32{{}}
	}
	fill := func(f func(i int) float32) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = f(i)
		}
		return x
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	normal := fill(func(int) float32 { return float32(rng.NormFloat64() * 4) })
	rows := [][]float32{
		opsAVX2Input(rng, n),
		normal,
		fill(func(int) float32 { return nan }),
		fill(func(int) float32 { return -inf }),
		fill(func(i int) float32 { return [2]float32{nan, -inf}[i%2] }),
		fill(func(i int) float32 { return [2]float32{negZero, 0}[i%2] }),
		fill(func(i int) float32 { return [2]float32{negZero, -1}[rng.IntN(2)] }),
		fill(func(int) float32 { return 3 }),
	}
	withInf := append([]float32{}, normal...)
	withInf[rng.IntN(n)] = inf
	withInf[rng.IntN(n)] = inf
	withNaN := append([]float32{}, normal...)
	withNaN[n/2] = nan
	withNaN[rng.IntN(n)] = nan
	tie := append([]float32{}, normal...)
	big := float32(50)
	tie[rng.IntN(n)], tie[rng.IntN(n)], tie[n-1] = big, big, big
	return append(rows, withInf, withNaN, tie)
}

func opsAVX2Same32(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

func opsAVX2Same64(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (a != a && b != b)
}

const opsAVX2Sentinel = 0x7fc0beef

// opsAVX2Guarded places a copy of src at offset off of a buffer whose
// other entries hold a sentinel.
type opsAVX2Guarded struct {
	buf    []float32
	off, n int
}

func newOpsAVX2Guarded(src []float32, off int) *opsAVX2Guarded {
	g := &opsAVX2Guarded{buf: make([]float32, off+len(src)+16), off: off, n: len(src)}
	for i := range g.buf {
		g.buf[i] = math.Float32frombits(opsAVX2Sentinel)
	}
	copy(g.buf[off:], src)
	return g
}

func (g *opsAVX2Guarded) s() []float32 { return g.buf[g.off : g.off+g.n : g.off+g.n] }

func (g *opsAVX2Guarded) check(t *testing.T, what string) {
	t.Helper()
	for i, v := range g.buf {
		if (i < g.off || i >= g.off+g.n) && math.Float32bits(v) != opsAVX2Sentinel {
			t.Fatalf("%s: wrote outside the slice at %d (offset %d, len %d): %v", what, i-g.off, g.off, g.n, v)
		}
	}
}

// opsAVX2Compare fails at the first element where got and want differ.
func opsAVX2Compare(t *testing.T, what string, in, got, want []float32) {
	t.Helper()
	for i := range want {
		if !opsAVX2Same32(got[i], want[i]) {
			t.Fatalf("%s: [%d] (input %v) = %v (%#08x), twin %v (%#08x)", what, i, in[i],
				got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// opsAVX2Cases runs f for every length and offset on fresh inputs.
func opsAVX2Cases(t *testing.T, seed uint64, f func(rng *rand.Rand, n, off int)) {
	requireAVX2(t, "AVX2 elementwise kernels")
	rng := rand.New(rand.NewPCG(seed, seed+1))
	for _, n := range opsAVX2Lengths() {
		for off := range 8 {
			f(rng, n, off)
		}
	}
}

func TestOpsAVX2Exp(t *testing.T) {
	opsAVX2Cases(t, 61, func(rng *rand.Rand, n, off int) {
		x := opsAVX2Input(rng, n)
		if n == len(opsAVX2Guards) {
			copy(x, opsAVX2Guards)
		}
		xg := newOpsAVX2Guarded(x, (off+3)%8)
		dst := newOpsAVX2Guarded(make([]float32, n), off)
		expAVX2(xg.s(), dst.s())
		what := fmt.Sprintf("exp n=%d off=%d", n, off)
		dst.check(t, what)
		xg.check(t, what+" (input)")
		want := make([]float32, n)
		for i, v := range x {
			want[i] = expGo(v)
		}
		opsAVX2Compare(t, what, x, dst.s(), want)
		opsAVX2Compare(t, what+" input changed", x, xg.s(), x)
	})
}

// TestOpsAVX2ExpSweep runs the exp over about a million evenly spaced
// float32 values of each of a few ranges: around the clamps, the denormal
// edge, and the reduction's rounding boundaries near zero.
func TestOpsAVX2ExpSweep(t *testing.T) {
	requireAVX2(t, "AVX2 elementwise kernels")
	for _, r := range [][2]float32{{-104.5, -86}, {86, 89.5}, {0x1p-30, 2}, {-2, -0x1p-30}} {
		// Same-sign ranges: the bit patterns are monotonic in the value.
		lo, hi := math.Float32bits(r[0]), math.Float32bits(r[1])
		if lo > hi {
			lo, hi = hi, lo
		}
		step := max(1, (hi-lo)>>20)
		var x []float32
		for b := lo; b <= hi; b += step {
			x = append(x, math.Float32frombits(b))
		}
		got := make([]float32, len(x))
		expAVX2(x, got)
		want := make([]float32, len(x))
		for i, v := range x {
			want[i] = expGo(v)
		}
		opsAVX2Compare(t, fmt.Sprintf("exp sweep %v", r), x, got, want)
	}
}

func TestOpsAVX2SwiGLU(t *testing.T) {
	opsAVX2Cases(t, 62, func(rng *rand.Rand, n, off int) {
		g0, u := opsAVX2Input(rng, n), opsAVX2Input(rng, n)
		if rng.IntN(2) == 0 {
			for i := range u {
				u[i] = float32(rng.NormFloat64())
			}
		}
		g := newOpsAVX2Guarded(g0, off)
		ug := newOpsAVX2Guarded(u, 7-off)
		swigluAVX2(g.s(), ug.s())
		what := fmt.Sprintf("swiglu n=%d off=%d", n, off)
		g.check(t, what)
		ug.check(t, what+" (u)")
		want := append([]float32{}, g0...)
		swigluTwin(want, u)
		opsAVX2Compare(t, what, g0, g.s(), want)
		opsAVX2Compare(t, what+" u changed", u, ug.s(), u)
	})
}

// opsAVX2Scales are softmax and ScaleMax scales, specials included.
var opsAVX2Scales = []float32{1, 0.0883883, -1.5, 0, float32(math.Copysign(0, -1)), 1e-40, 3e38,
	float32(math.Inf(1)), float32(math.NaN())}

func TestOpsAVX2ScaleMax(t *testing.T) {
	opsAVX2Cases(t, 63, func(rng *rand.Rand, n, off int) {
		for ri, row := range opsAVX2Rows(rng, n) {
			scale := opsAVX2Scales[rng.IntN(len(opsAVX2Scales))]
			if ri > 0 {
				scale = 1
			}
			s := newOpsAVX2Guarded(row, off)
			got := scaleMaxAVX2(s.s(), scale)
			what := fmt.Sprintf("scaleMax n=%d off=%d row %d scale %v", n, off, ri, scale)
			s.check(t, what)
			twin := append([]float32{}, row...)
			want := scaleMaxTwin(twin, scale)
			opsAVX2Compare(t, what, row, s.s(), twin)
			if !opsAVX2Same32(got, want) {
				t.Fatalf("%s: max %v (%#08x), twin %v (%#08x)", what, got, math.Float32bits(got), want, math.Float32bits(want))
			}
		}
	})
}

func TestOpsAVX2ExpSum(t *testing.T) {
	opsAVX2Cases(t, 64, func(rng *rand.Rand, n, off int) {
		for ri, row := range opsAVX2Rows(rng, n) {
			var mx float32
			switch rng.IntN(3) {
			case 0:
				mx = opsAVX2Guards[rng.IntN(len(opsAVX2Guards))]
			case 1:
				mx = float32(rng.NormFloat64() * 10)
			default:
				mx = scaleMaxTwin(append([]float32{}, row...), 1)
			}
			s := newOpsAVX2Guarded(row, off)
			got := expSumAVX2(s.s(), mx)
			what := fmt.Sprintf("expSum n=%d off=%d row %d mx %v", n, off, ri, mx)
			s.check(t, what)
			twin := append([]float32{}, row...)
			want := expSumTwin(twin, mx)
			opsAVX2Compare(t, what, row, s.s(), twin)
			if !opsAVX2Same64(got, want) {
				t.Fatalf("%s: sum %v (%#016x), twin %v (%#016x)", what, got, math.Float64bits(got), want, math.Float64bits(want))
			}
		}
	})
}

func TestOpsAVX2Softmax(t *testing.T) {
	opsAVX2Cases(t, 65, func(rng *rand.Rand, n, off int) {
		if n == 0 {
			return
		}
		for ri, row := range opsAVX2Rows(rng, n) {
			if ri > 0 && ri%3 != 0 && n > 100 {
				continue
			}
			valid := n
			if rng.IntN(2) == 0 {
				valid = 1 + rng.IntN(n)
			}
			scale := opsAVX2Scales[rng.IntN(len(opsAVX2Scales))]
			s := newOpsAVX2Guarded(row, off)
			softmaxAVX2(s.s(), valid, scale)
			what := fmt.Sprintf("softmax n=%d off=%d row %d valid %d scale %v", n, off, ri, valid, scale)
			s.check(t, what)
			twin := append([]float32{}, row...)
			softmaxTwin(twin, valid, scale)
			opsAVX2Compare(t, what, row, s.s(), twin)
		}
	})
}

func TestOpsAVX2PickMaxSum(t *testing.T) {
	opsAVX2Cases(t, 66, func(rng *rand.Rand, n, off int) {
		if n == 0 {
			return
		}
		for ri, row := range opsAVX2Rows(rng, n) {
			r := newOpsAVX2Guarded(row, off)
			mx, am, sum := pickMaxSumAVX2(r.s())
			what := fmt.Sprintf("pick n=%d off=%d row %d", n, off, ri)
			r.check(t, what)
			opsAVX2Compare(t, what+" row changed", row, r.s(), row)
			wmx, wam, wsum := pickMaxSumTwin(row)
			if math.Float32bits(mx) != math.Float32bits(wmx) || am != wam || !opsAVX2Same64(sum, wsum) {
				t.Fatalf("%s: (%v %#08x, %d, %v), twin (%v %#08x, %d, %v)", what,
					mx, math.Float32bits(mx), am, sum, wmx, math.Float32bits(wmx), wam, wsum)
			}
		}
	})
}

// BenchmarkOpsAVX2 runs each AVX2 wrapper next to its Go twin.
func BenchmarkOpsAVX2(b *testing.B) {
	requireAVX2(b, "AVX2 elementwise kernels")
	rng := rand.New(rand.NewPCG(67, 68))
	type impl struct {
		name string
		run  func(x, y []float32)
	}
	ops := []struct {
		op   string
		fast impl
		twin impl
	}{
		{"exp", impl{"avx2", func(x, y []float32) { expAVX2(x, y) }},
			impl{"twin", func(x, y []float32) {
				for i, v := range x {
					y[i] = expGo(v)
				}
			}}},
		{"swiglu", impl{"avx2", func(x, y []float32) { copy(y, x); swigluAVX2(y, x) }},
			impl{"twin", func(x, y []float32) { copy(y, x); swigluTwin(y, x) }}},
		{"softmax", impl{"avx2", func(x, y []float32) { copy(y, x); softmaxAVX2(y, len(y), 0.088) }},
			impl{"twin", func(x, y []float32) { copy(y, x); softmaxTwin(y, len(y), 0.088) }}},
		{"expsum", impl{"avx2", func(x, y []float32) { copy(y, x); expSumAVX2(y, 12) }},
			impl{"twin", func(x, y []float32) { copy(y, x); expSumTwin(y, 12) }}},
		{"scalemax", impl{"avx2", func(x, y []float32) { copy(y, x); scaleMaxAVX2(y, 0.088) }},
			impl{"twin", func(x, y []float32) { copy(y, x); scaleMaxTwin(y, 0.088) }}},
		{"pick", impl{"avx2", func(x, _ []float32) { pickMaxSumAVX2(x) }},
			impl{"twin", func(x, _ []float32) { pickMaxSumTwin(x) }}},
	}
	for _, n := range []int{4096, 151936} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 3)
		}
		y := make([]float32, n)
		for _, op := range ops {
			for _, im := range []impl{op.fast, op.twin} {
				b.Run(fmt.Sprintf("%s/n=%d/%s", op.op, n, im.name), func(b *testing.B) {
					for b.Loop() {
						im.run(x, y)
					}
					b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
				})
			}
		}
	}
}
