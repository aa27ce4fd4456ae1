package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestReduce16 checks the tree order against a float64 sum and that it is a
// fixed order (a permutation within pairs changes nothing, reversing does).
func TestReduce16(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 16))
	for range 1000 {
		var v [16]float32
		var ref float64
		for i := range v {
			v[i] = float32(rng.NormFloat64())
			ref += float64(v[i])
		}
		got := reduce16(&v)
		var mag float64
		for _, x := range v {
			mag += math.Abs(float64(x))
		}
		if d := math.Abs(float64(got) - ref); d > 4*0x1p-24*mag {
			t.Fatalf("reduce16 = %v, float64 %v", got, ref)
		}
		// The first step adds lanes i and i+8: swapping them is invisible.
		w := v
		w[0], w[8] = w[8], w[0]
		if reduce16(&w) != got {
			t.Fatal("reduce16 is not symmetric in lanes 0 and 8")
		}
	}
}

// TestDotTinyVec checks both dot orders against float64 on odd lengths,
// F16-valued and plain float32 inputs, and that DotTiny's exact flag only
// skips work when products are exact (DotVec's sums its F16 leftovers in
// float64, so there the flag changes the result on purpose).
func TestDotTinyVec(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 16))
	for _, n := range []int{1, 7, 8, 15, 16, 17, 44, 63, 64, 65, 127, 128, 172, 300} {
		for _, half := range []bool{false, true} {
			w, x := make([]float32, n), make([]float32, n)
			var ref, mag float64
			for i := range w {
				w[i], x[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
				if half {
					w[i], x[i] = RoundF16(w[i]), RoundF16(x[i])
				}
				ref += float64(w[i]) * float64(x[i])
				mag += math.Abs(float64(w[i]) * float64(x[i]))
			}
			tol := float64(n+4)*0x1p-24*mag + 1e-30
			got := DotVec(w, x, half)
			if d := math.Abs(float64(got) - ref); d > tol {
				t.Fatalf("DotVec n=%d half=%v: %v, float64 %v", n, half, got, ref)
			}
			if n%16 != 0 {
				continue
			}
			got = DotTiny(w, x, half)
			if d := math.Abs(float64(got) - ref); d > tol {
				t.Fatalf("DotTiny n=%d half=%v: %v, float64 %v", n, half, got, ref)
			}
			if half && got != DotTiny(w, x, false) {
				t.Fatalf("DotTiny n=%d: exact products but the fused path differs", n)
			}
		}
	}
}

// TestDotVecF32Tail pins the F32 leftover order with a product that rounds
// onto a tie: w·x = 2^-24·(1+2^-36) rounds to 2^-24, and 1 + 2^-24 is a
// tie that goes to 1, while the fused 1 + w·x rounds up to 1 + 2^-23. In
// an 8-wide leftover block the product is rounded first; alone (fewer than
// 8 left) it is fused.
func TestDotVecF32Tail(t *testing.T) {
	w1, x1 := float32(1+0x1p-12), float32(0x1p-24*(1-0x1p-12+0x1p-24))
	fused := []float32{1, w1}
	if got := DotVec(fused, []float32{1, x1}, false); got != 1+0x1p-23 {
		t.Fatalf("2 leftovers: %v, want the fused 1+2^-23", got)
	}
	w8 := []float32{1, w1, 0, 0, 0, 0, 0, 0}
	x8 := []float32{1, x1, 0, 0, 0, 0, 0, 0}
	if got := DotVec(w8, x8, false); got != 1 {
		t.Fatalf("8 leftovers: %v, want 1 (products rounded, then added)", got)
	}
}

// TestExpV compares ggml_v_expf's polynomial with float64 exp: within 2
// ulps (ggml states 1.45 + 0.5) over the softmax/SiLU range, 0 below
// −103.97-ish and +inf above the overflow edge.
func TestExpV(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 16))
	for range 200000 {
		x := float32(rng.Float64()*180 - 100)
		got, ref := ExpV(x), math.Exp(float64(x))
		if ref < 0x1p-126 || ref > math.MaxFloat32 {
			continue
		}
		if d := ulpDiff(got, float32(ref)); d > 2 {
			t.Fatalf("ExpV(%v) = %v, exp %v: %d ulp", x, got, ref, d)
		}
	}
	for _, c := range []struct{ x, want float32 }{
		{float32(math.Inf(-1)), 0}, {-200, 0}, {0, 1}, {200, float32(math.Inf(1))},
	} {
		if got := ExpV(c.x); got != c.want {
			t.Errorf("ExpV(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if !math.IsNaN(float64(ExpV(float32(math.NaN())))) {
		t.Error("ExpV(NaN) is not NaN")
	}
}

// TestSoftmaxGoMask checks that softmaxGo, which skips the lane groups
// past the causal mask, gives bit for bit what ggml_vec_soft_max_f32 gives
// on the whole row with the masked scores at −inf (exp 0, adding 0).
func TestSoftmaxGoMask(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 16))
	for _, n := range []int{1, 15, 16, 17, 33, 172, 256} {
		for _, valid := range []int{1, 7, 16, 17, n / 2, n - 1, n} {
			if valid < 1 || valid > n {
				continue
			}
			s0 := make([]float32, n)
			for i := range s0 {
				s0[i] = float32(rng.NormFloat64() * 4)
			}
			const scale = 0.125
			got := append([]float32{}, s0...)
			softmaxGo(got, valid, scale)

			want := append([]float32{}, s0...)
			mx := float32(math.Inf(-1))
			for i := range want {
				if i < valid {
					want[i] *= scale
					mx = max(mx, want[i])
				} else {
					want[i] = float32(math.Inf(-1))
				}
			}
			var sum float64
			i := 0
			for ; i+16 <= n; i += 16 {
				g := (*[16]float32)(want[i:])
				for l := range g {
					g[l] = ExpV(g[l] - mx)
				}
				sum += float64(reduce16(g))
			}
			for ; i < n; i++ {
				want[i] = ExpfC(want[i] - mx)
				sum += float64(want[i])
			}
			for i := range want[:valid] {
				want[i] *= float32(1 / sum)
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n=%d valid=%d: p[%d] = %v, whole-row %v", n, valid, i, got[i], want[i])
				}
			}
		}
	}
}
