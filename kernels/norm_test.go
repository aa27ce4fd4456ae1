package kernels

// Tests of RMSNorm: the AVX2 kernel against its Go twin bit for bit, "go"
// against ggml's sequential loop bit for bit, and every variant against a
// float64 reference, on odd lengths, unaligned starts, several rows, in
// place, with guard values around the output.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// normLengths are the row lengths every test runs.
func normLengths() []int {
	var ns []int
	for n := 1; n <= 70; n++ {
		ns = append(ns, n)
	}
	return append(ns, 1024, 3072)
}

// normGuards are inputs at the edges of the arithmetic: specials, zeros,
// denormals, squares that underflow or overflow float32.
var normGuards = []float32{
	float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
	0, float32(math.Copysign(0, -1)), 0x1p-149, -1e-40, 1e-30, 1e19, 2e19, -3e25, math.MaxFloat32,
}

// normRow returns n random values, about one in 50 rows with guards mixed
// in, scaled by a random power of two so that eps matters in some rows.
func normRow(rng *rand.Rand, n int, guards bool) []float32 {
	x := make([]float32, n)
	s := float32(math.Ldexp(1, rng.IntN(40)-30))
	for i := range x {
		x[i] = s * float32(rng.NormFloat64())
		if guards && rng.IntN(8) == 0 {
			x[i] = normGuards[rng.IntN(len(normGuards))]
		}
	}
	return x
}

func normWeights(rng *rand.Rand, n int) []float32 {
	w := make([]float32, n)
	for i := range w {
		w[i] = float32(rng.NormFloat64()*0.5 + 1)
	}
	return w
}

// sameBits treats two NaNs as equal (their payloads follow operand order).
func sameBits(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

const normSentinel = float32(-12345.25)

// runNorm runs f on rows rows of len(w) at offset off of fresh buffers
// and checks the sentinels on both sides of the output.
func runNorm(t *testing.T, f func(out, in, w []float32, eps float32), in, w []float32, eps float32, off int, inPlace bool) []float32 {
	t.Helper()
	buf := make([]float32, off+len(in)+16)
	for i := range buf {
		buf[i] = normSentinel
	}
	out := buf[off : off+len(in)]
	src := in
	if inPlace {
		copy(out, in)
		src = out
	}
	f(out, src, w, eps)
	for i, v := range buf {
		if (i < off || i >= off+len(in)) && math.Float32bits(v) != math.Float32bits(normSentinel) {
			t.Fatalf("write outside the output at %d (off %d, len %d): %v", i, off, len(in), v)
		}
	}
	return append([]float32(nil), out...)
}

func TestRMSNormAVX2MatchesTwin(t *testing.T) {
	if v := lookup(OpRMSNorm, "avx2"); !v.supported(CPU()) {
		t.Skipf("rmsnorm=avx2 is not supported here (asm %v, CPU %s)", haveAsm, CPU())
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range normLengths() {
		for rows := 1; rows <= 3; rows++ {
			w := normWeights(rng, n)
			in := make([]float32, 0, rows*n)
			for range rows {
				in = append(in, normRow(rng, n, rng.IntN(4) == 0)...)
			}
			off, inPlace := rng.IntN(8), rng.IntN(2) == 0
			want := runNorm(t, rmsNormTwin, in, w, 1e-6, off, inPlace)
			got := runNorm(t, rmsNormAVX2, in, w, 1e-6, off, inPlace)
			for i := range want {
				if !sameBits(got[i], want[i]) {
					t.Fatalf("n=%d rows=%d off=%d: y[%d] = %v (%#x), twin %v (%#x)", n, rows, off, i,
						got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
		}
	}
}

// TestRMSNormLaneOrder runs a row whose mean lies on a float32 tie unless
// the tiny squares survive: added one by one to the big square they are
// lost (ggml's order rounds the mean to even), summed in their own lanes
// first they are kept (the twin rounds up). The AVX2 kernel must keep
// them as the twin does.
func TestRMSNormLaneOrder(t *testing.T) {
	const n = 32
	x := make([]float32, n)
	x[0], x[1] = 8, 0x1p-9 // squares 2⁶ and 2⁻¹⁸: the sum is 32·2·(1+2⁻²⁴)
	for i := 2; i < n; i++ {
		x[i] = 0x1p-24 // square 2⁻⁴⁸, a quarter of the float64 ulp of the sum
	}
	w := normWeights(rand.New(rand.NewPCG(9, 10)), n)
	seq := runNorm(t, rmsNormGo, x, w, 0, 0, false)
	twin := runNorm(t, rmsNormTwin, x, w, 0, 0, false)
	if seq[0] == twin[0] {
		t.Fatalf("the row does not tell the orders apart: both give %v", seq[0])
	}
	if !lookup(OpRMSNorm, "avx2").supported(CPU()) {
		t.Skipf("rmsnorm=avx2 is not supported here (asm %v, CPU %s)", haveAsm, CPU())
	}
	got := runNorm(t, rmsNormAVX2, x, w, 0, 0, false)
	for i := range twin {
		if !sameBits(got[i], twin[i]) {
			t.Fatalf("y[%d] = %v, twin %v (sequential %v)", i, got[i], twin[i], seq[i])
		}
	}
}

// TestRMSNormVariantsMatchFloat64 holds every variant to the float64
// result. Each rounding is relative (u = 2⁻²⁴) and nothing cancels: the
// squares and the mean carry u each into the sum, +eps one more, sqrt
// halves those 3u and adds u, 1/x adds u, x·scale and ·w add u each:
// 5.5u in all (the float64 sum's own error is ~n·2⁻⁵³, negligible).
func TestRMSNormVariantsMatchFloat64(t *testing.T) {
	const tol = 6 * 0x1p-24
	rng := rand.New(rand.NewPCG(5, 6))
	for _, name := range []string{"go", "generic", "avx2"} {
		v := lookup(OpRMSNorm, name)
		if v == nil {
			t.Fatalf("no rmsnorm=%s", name)
		}
		if !v.supported(CPU()) {
			t.Logf("rmsnorm=%s not supported here, skipped", name)
			continue
		}
		ks, err := ParseKernels("rmsnorm=" + name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			for _, n := range normLengths() {
				for _, eps := range []float32{1e-6, 1e-5} {
					w := normWeights(rng, n)
					in := append(normRow(rng, n, false), normRow(rng, n, false)...)
					got := runNorm(t, ks.RMSNorm, in, w, eps, rng.IntN(8), false)
					for r := range 2 {
						x := in[r*n : (r+1)*n]
						var ss float64
						for _, v := range x {
							ss += float64(v) * float64(v)
						}
						scale := 1 / math.Sqrt(ss/float64(n)+float64(eps))
						for i, v := range x {
							ref := float64(v) * scale * float64(w[i])
							if d := math.Abs(float64(got[r*n+i]) - ref); d > tol*math.Abs(ref)+1e-37 {
								t.Fatalf("n=%d eps=%g: y[%d] = %v, float64 %v (%.2g u)", n, eps, r*n+i, got[r*n+i], ref, d/math.Abs(ref)/0x1p-24)
							}
						}
					}
				}
			}
		})
	}
}

func BenchmarkRMSNorm(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{128, 1024, 3072} {
		const rows = 64
		w := normWeights(rng, n)
		in := make([]float32, 0, rows*n)
		for range rows {
			in = append(in, normRow(rng, n, false)...)
		}
		out := make([]float32, len(in))
		for _, name := range []string{"go", "generic", "avx2"} {
			ks, err := ParseKernels("rmsnorm=" + name)
			if err != nil {
				continue
			}
			b.Run(fmt.Sprintf("%s/n%d", name, n), func(b *testing.B) {
				for b.Loop() {
					ks.RMSNorm(out, in, w, 1e-6)
				}
				b.ReportMetric(float64(len(in))*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
			})
		}
	}
}
