package kernels

// Tests of the elementwise ops: the vector exp against its Go twin (bit
// for bit) and float64 exp (ulps), SwiGLU and Softmax variants against
// their twins and float64 definitions, with odd lengths and guards.

import (
	"math"
	"math/rand/v2"
	"testing"
)

func ulpDiff(a, b float32) int64 {
	ia, ib := int64(int32(math.Float32bits(a))), int64(int32(math.Float32bits(b)))
	if ia < 0 {
		ia = math.MinInt32 - ia
	}
	if ib < 0 {
		ib = math.MinInt32 - ib
	}
	return max(ia-ib, ib-ia)
}

func TestVectorExp(t *testing.T) {
	if !haveAsm || !CPU().Has(needAVX512) {
		t.Skipf("no AVX-512 assembly here (%s)", CPU())
	}
	rng := rand.New(rand.NewPCG(51, 52))
	x := make([]float32, 0, 20000)
	for range 16000 {
		x = append(x, float32((rng.Float64()*2-1)*90))
	}
	for range 2000 {
		x = append(x, float32(rng.NormFloat64()))
	}
	x = append(x, 0, float32(math.Copysign(0, -1)), 88.7, 88.8, 89, 100, -87, -100, -103.9, -110, -1e30, 1e30,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-30, -1e-30)
	x = x[:len(x)-3] // odd length: a tail
	got := make([]float32, len(x)+16)
	for i := range got {
		got[i] = math.Float32frombits(simdSentinel)
	}
	expAVX512(x, got)
	for i := len(x); i < len(got); i++ {
		if math.Float32bits(got[i]) != simdSentinel {
			t.Fatalf("expAVX512 wrote past its output at %d", i)
		}
	}
	var worst int64
	for i, v := range x {
		twin := expGo(v)
		if math.Float32bits(got[i]) != math.Float32bits(twin) && !(got[i] != got[i] && twin != twin) {
			t.Fatalf("exp(%v): vector %v, twin %v", v, got[i], twin)
		}
		want := float32(math.Exp(float64(v)))
		switch {
		case v != v:
			if got[i] == got[i] {
				t.Fatalf("exp(NaN) = %v", got[i])
			}
		case want == 0 || want < 0x1p-126: // denormal range: absolute
			if math.Abs(float64(got[i]-want)) > 0x1p-148 {
				t.Fatalf("exp(%v) = %v, want %v", v, got[i], want)
			}
		default:
			d := ulpDiff(got[i], want)
			worst = max(worst, d)
			if d > 2 {
				t.Fatalf("exp(%v) = %v, want %v (%d ulp)", v, got[i], want, d)
			}
		}
	}
	t.Logf("worst error %d ulp over %d values", worst, len(x))
}

func TestSwiGLUVariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 54))
	for _, v := range variantSets(t, OpSwiGLU) {
		spec, ks := "swiglu="+v.name, v.ks
		for _, n := range []int{1, 15, 16, 17, 3072 + 5} {
			g0 := simdFloats(rng, n, 3)
			g0[0] = -100 // exp(100) overflows: silu → −0
			u := simdFloats(rng, n, 1)
			g := append(append([]float32{}, g0...), 7, 7)
			ks.SwiGLU(g[:n], u)
			if g[n] != 7 || g[n+1] != 7 {
				t.Fatalf("%s n=%d: wrote past g", spec, n)
			}
			twin := append([]float32{}, g0...)
			if spec == "swiglu=go" {
				swigluGo(twin, u)
			} else {
				swigluTwin(twin, u)
			}
			for i := range n {
				if math.Float32bits(g[i]) != math.Float32bits(twin[i]) {
					t.Fatalf("%s n=%d i=%d: %v, twin %v", spec, n, i, g[i], twin[i])
				}
				x := float64(g0[i])
				want := x / (1 + math.Exp(-x)) * float64(u[i])
				if d := math.Abs(float64(g[i]) - want); d > 4e-7*math.Abs(want)+1e-38 {
					t.Fatalf("%s: swiglu(%v, %v) = %v, want %v", spec, g0[i], u[i], g[i], want)
				}
			}
		}
	}
}

func TestSoftmaxVariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(55, 56))
	for _, v := range variantSets(t, OpAttention) {
		spec, ks := "attention="+v.name, v.ks
		for _, n := range []int{1, 5, 16, 33, 512} {
			for _, valid := range []int{1, (n + 1) / 2, n} {
				s0 := simdFloats(rng, n, 4)
				const scale = 0.0883883
				s := append(append([]float32{}, s0...), 9)
				ks.Softmax(s[:n], valid, scale)
				if s[n] != 9 {
					t.Fatalf("%s: wrote past s", spec)
				}
				twin := append([]float32{}, s0...)
				if spec == "attention=go" {
					softmaxGo(twin, valid, scale)
				} else {
					softmaxTwin(twin, valid, scale)
				}
				// float64 definition.
				mx := math.Inf(-1)
				for _, v := range s0[:valid] {
					mx = max(mx, float64(float32(v*scale)))
				}
				var sum float64
				for _, v := range s0[:valid] {
					sum += math.Exp(float64(float32(v*scale)) - mx)
				}
				var total float64
				for i := range n {
					if i >= valid {
						if s[i] != 0 {
							t.Fatalf("%s n=%d valid=%d: masked s[%d] = %v", spec, n, valid, i, s[i])
						}
						continue
					}
					total += float64(s[i])
					if math.Float32bits(s[i]) != math.Float32bits(twin[i]) {
						t.Fatalf("%s n=%d valid=%d i=%d: %v, twin %v", spec, n, valid, i, s[i], twin[i])
					}
					x := float64(float32(s0[i]*scale)) - mx
					want := math.Exp(x) / sum
					// The exp is within 2 ulp, 1/sum and the product round
					// once each, and x − max rounds to f32 first: an error
					// of |x|·2^-24 in the exponent.
					if d := math.Abs(float64(s[i]) - want); d > (4+math.Abs(x))*0x1p-24*want+1e-40 {
						t.Fatalf("%s: p[%d] = %v, want %v", spec, i, s[i], want)
					}
				}
				if math.Abs(total-1) > 1e-5 {
					t.Fatalf("%s: probabilities sum to %v", spec, total)
				}
			}
		}
	}
}

func BenchmarkOps(b *testing.B) {
	rng := rand.New(rand.NewPCG(57, 58))
	g0, u := simdFloats(rng, 3072, 3), simdFloats(rng, 3072, 1)
	s0 := simdFloats(rng, 512, 4)
	for _, name := range []string{"go", "avx512"} {
		ks, err := ParseKernels("swiglu=" + name + ",attention=" + name)
		if err != nil {
			continue
		}
		g, s := make([]float32, len(g0)), make([]float32, len(s0))
		b.Run("swiglu3072/"+name, func(b *testing.B) {
			for b.Loop() {
				copy(g, g0)
				ks.SwiGLU(g, u)
			}
			b.ReportMetric(float64(len(g)*b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
		b.Run("softmax512/"+name, func(b *testing.B) {
			for b.Loop() {
				copy(s, s0)
				ks.Softmax(s, len(s), 0.088)
			}
			b.ReportMetric(float64(len(s)*b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
	}
}
