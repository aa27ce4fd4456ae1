package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpSum compares every attention variant's ExpSum with float64 exp
// on random rows of odd lengths (vector tails) and with its Go twin, which
// every CPU's choice must match bit for bit.
func TestExpSum(t *testing.T) {
	for _, v := range variantSets(t, OpAttention) {
		testExpSum(t, v.name, v.ks)
	}
}

func testExpSum(t *testing.T, name string, ks KernelSet) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 7, 16, 17, 63, 130} {
		s := make([]float32, n)
		mx := float32(math.Inf(-1))
		for i := range s {
			s[i] = float32(rng.NormFloat64() * 8)
			mx = max(mx, s[i])
		}
		if n == 0 {
			mx = 0
		}
		orig := append([]float32(nil), s...)
		got := ks.ExpSum(s, mx)
		var want float64
		for i, x := range orig {
			e := math.Exp(float64(x - mx)) // the difference is rounded to f32 first
			want += e
			if d := math.Abs(float64(s[i]) - e); d > 1e-6*e+1e-30 {
				t.Errorf("n %d: exp(%g−%g) = %g, want %g", n, x, mx, s[i], e)
			}
			twin := expGo(x - mx)
			if twin != s[i] {
				t.Errorf("%s n %d: vector exp %g differs from its twin %g", name, n, s[i], twin)
			}
		}
		if math.Abs(got-want) > 1e-6*want {
			t.Errorf("n %d: sum %g, want %g", n, got, want)
		}
		if n > 0 {
			twin := append([]float32(nil), orig...)
			if ts := expSumTwin(twin, mx); ts != got {
				t.Errorf("%s n %d: vector sum %g differs from its twin's %g", name, n, got, ts)
			}
		}
	}
}

// TestScaleMax compares every attention variant's ScaleMax with a plain
// loop on odd lengths.
func TestScaleMax(t *testing.T) {
	for _, v := range variantSets(t, OpAttention) {
		testScaleMax(t, v.ks)
	}
}

func testScaleMax(t *testing.T, ks KernelSet) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 5, 16, 31, 129} {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(rng.NormFloat64() * 4)
		}
		want := append([]float32(nil), s...)
		wmx := float32(math.Inf(-1))
		for i := range want {
			want[i] *= 0.37
			wmx = max(wmx, want[i])
		}
		if mx := ks.ScaleMax(s, 0.37); mx != wmx {
			t.Errorf("n %d: max %g, want %g", n, mx, wmx)
		}
		for i := range s {
			if s[i] != want[i] {
				t.Fatalf("n %d: s[%d] = %g, want %g", n, i, s[i], want[i])
			}
		}
	}
	if mx := ks.ScaleMax(nil, 1); !math.IsInf(float64(mx), -1) {
		t.Errorf("empty: %g, want −Inf", mx)
	}
}
