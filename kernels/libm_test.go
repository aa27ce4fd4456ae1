package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLibmFloat compares the glibc ports with float64 math: glibc states
// 0.502 ulp for expf and 0.561 for sinf/cosf, so within 1 ulp of the
// rounded float64 result; special values as C.
func TestLibmFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 17))
	for i := range 300000 {
		var x float32
		switch i % 3 {
		case 0:
			x = float32(rng.Float64()*200 - 100)
		case 1:
			x = float32(rng.Float64()*2e5 - 1e5) // the large-argument reduction
		default:
			x = float32(rng.Float64()*2 - 1)
		}
		if e := math.Exp(float64(x)); e > 0x1p-126 && e < math.MaxFloat32 {
			if d := ulpDiff(ExpfC(x), float32(e)); d > 1 {
				t.Fatalf("ExpfC(%v) = %v, exp %v: %d ulp", x, ExpfC(x), e, d)
			}
		}
		for _, f := range []struct {
			name string
			got  float32
			ref  float64
		}{{"SinfC", SinfC(x), math.Sin(float64(x))}, {"CosfC", CosfC(x), math.Cos(float64(x))}} {
			// Near a zero of the function relative ulps blow up: bound by
			// the argument's ulp instead.
			tol := math.Max(1.01*float64(ulpOf(float32(f.ref))), 2*float64(ulpOf(x))*0x1p-24)
			if math.Abs(float64(f.got)-f.ref) > tol {
				t.Fatalf("%s(%v) = %v, float64 %v", f.name, x, f.got, f.ref)
			}
		}
	}
	for _, c := range []struct{ got, want float32 }{
		{ExpfC(float32(math.Inf(-1))), 0}, {ExpfC(-200), 0}, {ExpfC(0), 1},
		{SinfC(0), 0}, {CosfC(0), 1}, {SinfC(0x1p-20), 0x1p-20},
	} {
		if c.got != c.want {
			t.Errorf("got %v, want %v", c.got, c.want)
		}
	}
	if !math.IsInf(float64(ExpfC(100)), 1) || !math.IsNaN(float64(SinfC(float32(math.Inf(1))))) {
		t.Error("overflow or invalid argument mishandled")
	}
	// The table is 2^(i/32) rounded to nearest.
	for i, b := range exp2fTab {
		got := math.Float64frombits(b + uint64(i)<<47)
		if d := math.Abs(got - math.Exp2(float64(i)/32)); d > 0x1p-52 {
			t.Fatalf("exp2fTab[%d] = %v, 2^(%d/32) = %v", i, got, i, math.Exp2(float64(i)/32))
		}
	}
}

// ulpOf is the spacing of float32 values at |x|.
func ulpOf(x float32) float32 {
	a := abs32(x)
	return math.Nextafter32(a, float32(math.Inf(1))) - a
}
