package kernels

// Tests of FlashPrefill V2's AVX2 block scores against their Go twins, to
// the bit: FlashPrefillDot on every length to 300 and unaligned starts,
// FlashPrefillExp and its in-order sum on edge values, and BlockScores and
// Select on random blocks at several (L, B, d); the benchmark of one head
// of one layer.

import (
	"math"
	"math/rand/v2"
	"testing"
)

func skipNoAVX2(t testing.TB) {
	t.Helper()
	if !CPU().HasAVX2() {
		t.Skipf("the AVX2 block scores are not supported here (asm %v, CPU %s)", haveAsm, CPU())
	}
}

// fpValue draws a float32 of one of several kinds: normal, large, tiny,
// subnormal, ±0 and a mix of all of them.
func fpValue(rng *rand.Rand, kind int) float32 {
	if kind == 5 {
		kind = rng.IntN(5)
	}
	x := rng.NormFloat64()
	switch kind {
	case 1:
		x *= 1e30
	case 2:
		x *= 1e-30
	case 3:
		x *= 1e-41 // float32 subnormals
	case 4:
		return float32(math.Copysign(0, x))
	}
	return float32(x)
}

const fpKinds = 6

func TestFlashPrefillDotAVX2(t *testing.T) {
	skipNoAVX2(t)
	rng := rand.New(rand.NewPCG(7, 8))
	guard := float32(math.NaN())
	for kind := range fpKinds {
		for n := 1; n <= 300; n++ {
			off := rng.IntN(4) // unaligned starts
			xb, yb := make([]float32, off+n+8), make([]float32, off+n+8)
			for i := range xb {
				xb[i], yb[i] = guard, guard
			}
			x, y := xb[off:off+n], yb[off:off+n]
			for i := range n {
				x[i], y[i] = fpValue(rng, kind), fpValue(rng, kind)
			}
			got, want := fpDot(x, y), FlashPrefillDot(x, y)
			if math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("kind %d n %d: fpDot %v (%#x), FlashPrefillDot %v (%#x)", kind, n, got, math.Float64bits(got), want, math.Float64bits(want))
			}
		}
	}
	// Infinities: the invalid operations give the same default NaN.
	x, y := []float32{float32(math.Inf(1)), 1, 2}, []float32{0, 3, float32(math.Inf(-1))}
	if got, want := fpDot(x, y), FlashPrefillDot(x, y); math.Float64bits(got) != math.Float64bits(want) {
		t.Errorf("infinities: fpDot %#x, FlashPrefillDot %#x", math.Float64bits(got), math.Float64bits(want))
	}
}

// fpExpInputs are edge values of FlashPrefillExp's argument.
func fpExpInputs(rng *rand.Rand) []float64 {
	xs := []float64{0, math.Copysign(0, -1), -708, math.Nextafter(-708, 0), math.Nextafter(-708, -1000), 709,
		math.Nextafter(709, 0), math.Nextafter(709, 1000), math.Inf(1), math.Inf(-1), math.NaN(), -745, 710,
		1e-300, -1e-300, 5e-324, -5e-324, math.MaxFloat64, -math.MaxFloat64, 1, -1, 0.5, -0.5}
	for k := -1022; k <= 1023; k++ {
		// Ties of round-half-even in k and their neighbours.
		x := (float64(k) + 0.5) / fpLog2E
		xs = append(xs, x, math.Nextafter(x, 0), math.Nextafter(x, math.Inf(1)), float64(k)/fpLog2E)
	}
	for range 20000 {
		xs = append(xs, -rng.Float64()*720, rng.NormFloat64()*100, rng.NormFloat64()*1e-10)
	}
	return xs
}

func TestFlashPrefillExpAVX2(t *testing.T) {
	skipNoAVX2(t)
	rng := rand.New(rand.NewPCG(9, 10))
	xs := fpExpInputs(rng)
	ninf := math.Inf(-1)
	for _, x := range xs {
		// −Inf lanes add +0: the sum of one lane is that lane's exp.
		for lane := range 4 {
			s := []float64{ninf, ninf, ninf, ninf}
			s[lane] = x
			got, want := fpExpSum(s, 0), FlashPrefillExp(x)
			if math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("exp(%v) lane %d: %v (%#x), want %v (%#x)", x, lane, got, math.Float64bits(got), want, math.Float64bits(want))
			}
		}
	}
	// Sums in order, every length to 64 and every tail.
	for n := range 65 {
		s := make([]float64, n+4)
		for i := range s {
			s[i] = xs[rng.IntN(len(xs))]
		}
		mx := []float64{0, 3.5, -2, math.Inf(1), math.NaN()}[rng.IntN(5)]
		s = s[:n]
		want := 0.0
		for _, x := range s {
			want += FlashPrefillExp(x - mx)
		}
		if got := fpExpSum(s, mx); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("n %d mx %v: Σ %v (%#x), want %v (%#x)", n, mx, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
}

// fpScoreShapes are the (L, B, d) of the block-score tests: full and
// partial last blocks, one-query blocks, odd d and d below 8.
var fpScoreShapes = []struct{ L, b, d int }{
	{4096, 128, 128}, {1000, 64, 64}, {777, 32, 100}, {300, 16, 7}, {129, 128, 128},
	{257, 128, 128}, {127, 8, 1}, {33, 1, 3}, {5, 2, 9}, {640, 64, 80}, {200, 4, 129},
}

func TestFlashPrefillBlockScoresAVX2(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	fast := CPU().HasAVX2()
	guard := math.Float64frombits(0x7ff4dead0000beef)
	for _, sh := range fpScoreShapes {
		for kind := range fpKinds + 2 {
			f := DefaultFlashPrefill(0.12)
			f.BlockSize, f.MinBudget = sh.b, kind%3
			m := f.Blocks(sh.L)
			pooled := make([]float32, m*sh.d)
			scale := float32(1)
			if kind == fpKinds { // many equal scores (zero keys): ties in the selection
				scale = 0
			}
			for i := range pooled {
				pooled[i] = fpValue(rng, kind%fpKinds) * scale
				if kind == fpKinds+1 && rng.IntN(50) == 0 { // infinities: +Inf and NaN scores
					pooled[i] = float32(math.Inf(1 - 2*rng.IntN(2)))
				}
			}
			var scGo, scFast, scSel FlashPrefillScratch
			aGo, aFast := make([]float64, m+2), make([]float64, m+2)
			selGo, selFast := make([]bool, m), make([]bool, m)
			for qb := range m {
				nq := min(sh.b, sh.L-qb*sh.b)
				q := make([]float32, nq*sh.d) // exact length: an overread panics or reads garbage
				for i := range q {
					q[i] = fpValue(rng, kind%fpKinds)
				}
				for i := range aGo {
					aGo[i], aFast[i] = guard, guard
				}
				f.blockScoresGo(aGo, q, pooled, sh.d, sh.L, qb, &scGo)
				if fast {
					f.blockScoresAVX2(aFast, q, pooled, sh.d, sh.L, qb, &scFast)
				} else {
					f.BlockScores(aFast, q, pooled, sh.d, sh.L, qb, &scFast)
				}
				for kb := range aGo {
					if math.Float64bits(aGo[kb]) != math.Float64bits(aFast[kb]) {
						t.Fatalf("L %d B %d d %d kind %d qb %d: A[%d] = %v (%#x), Go %v (%#x)", sh.L, sh.b, sh.d, kind, qb,
							kb, aFast[kb], math.Float64bits(aFast[kb]), aGo[kb], math.Float64bits(aGo[kb]))
					}
				}
				nGo := selectRow(f, aGo[:qb+1], qb, m, selGo, make([]int32, qb+1))
				if nFast := f.Select(selFast, q, pooled, sh.d, sh.L, qb, &scSel); nFast != nGo {
					t.Fatalf("L %d B %d d %d kind %d qb %d: Select keeps %d, Go %d", sh.L, sh.b, sh.d, kind, qb, nFast, nGo)
				}
				for kb := range qb + 1 {
					if selGo[kb] != selFast[kb] {
						t.Fatalf("L %d B %d d %d kind %d qb %d: block %d selected %v, Go %v", sh.L, sh.b, sh.d, kind, qb, kb, selFast[kb], selGo[kb])
					}
				}
			}
		}
	}
}

// BenchmarkFlashPrefillBlockScores times the block scores of one head of
// one layer (every query block of an L-token sequence): go is the twin,
// BlockScores what this CPU (and PLEXBENCH_CPU) runs.
func BenchmarkFlashPrefillBlockScores(b *testing.B) {
	const L, d = 4096, 128
	f := DefaultFlashPrefill(0.12)
	m := f.Blocks(L)
	rng := rand.New(rand.NewPCG(1, 2))
	q := make([]float32, L*d)
	pooled := make([]float32, m*d)
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	for i := range pooled {
		pooled[i] = float32(rng.NormFloat64())
	}
	a := make([]float64, m)
	for _, v := range []struct {
		name string
		run  func(FlashPrefill, []float64, []float32, []float32, int, int, int, *FlashPrefillScratch)
	}{{"go", FlashPrefill.blockScoresGo}, {"BlockScores", FlashPrefill.BlockScores}} {
		b.Run(v.name, func(b *testing.B) {
			var sc FlashPrefillScratch
			for b.Loop() {
				for qb := range m {
					v.run(f, a, q[qb*f.BlockSize*d:], pooled, d, L, qb, &sc)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/head-layer")
		})
	}
}

func TestFlashPrefillMax(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	fast := CPU().HasAVX2()
	pick := []float64{0, math.Copysign(0, -1), 1, -1, math.Inf(1), math.Inf(-1), 2.5, -3, 1e-310}
	for n := range 400 {
		n %= 40
		s := make([]float64, n)
		for i := range s {
			s[i] = pick[rng.IntN(len(pick))]
		}
		want := math.Inf(-1)
		for _, x := range s {
			want = max(want, x)
		}
		if got := fpMax(math.Inf(-1), s); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%v: fpMax %v, max %v", s, got, want)
		}
		if fast {
			if got := fpMaxRun(math.Inf(-1), s); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("%v: fpMaxRun %v, max %v", s, got, want)
			}
		}
		if n > 0 {
			s[rng.IntN(n)] = math.NaN()
			if got := fpMax(math.Inf(-1), s); !math.IsNaN(got) {
				t.Fatalf("%v: fpMax %v, want NaN", s, got)
			}
			if got := fpMaxRun(math.Inf(-1), s); fast && !math.IsNaN(got) {
				t.Fatalf("%v: fpMaxRun %v, want NaN", s, got)
			}
		}
	}
}
