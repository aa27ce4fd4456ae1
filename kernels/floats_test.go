package kernels

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// refFMA32 computes a·b+c exactly with big.Float and rounds once to float32.
func refFMA32(a, b, c float32) float32 {
	x := new(big.Float).SetPrec(300).SetFloat64(float64(a))
	x.Mul(x, new(big.Float).SetFloat64(float64(b)))
	x.Add(x, new(big.Float).SetFloat64(float64(c)))
	f, _ := x.Float32()
	return f
}

func TestFMA32SingleRounding(t *testing.T) {
	// A double-rounding trap: fl64(p+c) lands on a float32 midpoint although
	// the exact sum is just below it.
	a := float32(1 + 0x1p-23)
	b := float32(0x1p-24 * (1 - 0x1p-23))
	c := float32(1 + 0x1p-23)
	if got, want := fma32(a, b, c), refFMA32(a, b, c); got != want {
		t.Fatalf("tie case: fma32 = %v, want %v", got, want)
	}
	if got, want := fma32(a, -b, -c), refFMA32(a, -b, -c); got != want {
		t.Fatalf("negative tie case: fma32 = %v, want %v", got, want)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 200000 {
		a := float32(rng.NormFloat64())
		b := float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(40)-20)))
		c := float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(40)-20)))
		if i%2 == 0 { // small integers times scales, as in the block dots
			b = float32(rng.IntN(1<<15) - 1<<14)
		}
		if got, want := fma32(a, b, c), refFMA32(a, b, c); got != want {
			t.Fatalf("fma32(%v,%v,%v) = %v, want %v", a, b, c, got, want)
		}
	}
}

func TestHsum8Order(t *testing.T) {
	// Lanes chosen so that every association order gives a different sum.
	v := [8]float32{1e8, 1, -1e8, 3, 0.5, 0.25, 7, 1e-3}
	s0, s1, s2, s3 := v[0]+v[4], v[1]+v[5], v[2]+v[6], v[3]+v[7]
	if got, want := hsum8(&v), (s0+s2)+(s1+s3); got != want {
		t.Fatalf("hsum8 = %v, want %v", got, want)
	}
}

func randFloats(rng *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * scale)
	}
	return x
}

func TestDotFloatMatchesFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 7, 8, 31, 32, 33, 64, 100, 256, 1000, 1024, 4099} {
		w, x := randFloats(rng, n, 1), randFloats(rng, n, 3)
		var ref, mag float64
		for i := range w {
			ref += float64(w[i]) * float64(x[i])
			mag += math.Abs(float64(w[i]) * float64(x[i]))
		}
		got := dotFloat(w, x, false)
		if d := math.Abs(float64(got) - ref); d > 1e-6*mag*math.Sqrt(float64(n)) {
			t.Errorf("n=%d: dotFloat = %v, float64 %v (|Σ|w·x||=%v)", n, got, ref, mag)
		}
		// The lane structure for n%8 == 0: eight fused chains then hsum8.
		if n%8 == 0 {
			var acc [8]float32
			for i := range n {
				acc[i%8] = refFMA32(w[i], x[i], acc[i%8])
			}
			if want := hsum8(&acc); got != want {
				t.Errorf("n=%d: dotFloat = %v, lane model %v", n, got, want)
			}
		}
	}
}

// TestDotHalfExactProducts checks that for F16 and BF16 operands the
// unfused float32 lanes equal the fused ones bit for bit (their products
// are exact in float32).
func TestDotHalfExactProducts(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, round := range []func(float32) float32{RoundF16, RoundBF16} {
		for _, n := range []int{8, 64, 1024, 4096} {
			w, x := randFloats(rng, n, 1), randFloats(rng, n, 100)
			for i := range w {
				w[i], x[i] = round(w[i]), round(x[i])
			}
			w[0], x[0] = 6e-8, 3e-5 // tiny values: products near 2^-38
			if got, want := dotFloat(w, x, true), dotFloat(w, x, false); got != want {
				t.Errorf("n=%d: half lanes %v, fused lanes %v", n, got, want)
			}
		}
	}
}
