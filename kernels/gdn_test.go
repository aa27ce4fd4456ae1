package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// gdnCase is one random head: inputs laid out with strides and guard
// values around every output, and a float64 reference of the recurrence.
type gdnCase struct {
	dk, dv, n, qks, vs, os   int
	s0, q, k, v, decay, beta []float32
}

const gdnGuard = 1234.5

func newGDNCase(rng *rand.Rand, dk, dv, n int) *gdnCase {
	c := &gdnCase{dk: dk, dv: dv, n: n, qks: dk + 3, vs: dv + 5, os: dv + 2}
	vec := func(m int, scale float64) []float32 {
		x := make([]float32, m)
		for i := range x {
			x[i] = float32((2*rng.Float64() - 1) * scale)
		}
		return x
	}
	c.s0 = vec(dk*dv, 0.5)
	c.q, c.k = vec(n*c.qks, 1/math.Sqrt(float64(dk))), vec(n*c.qks, 1/math.Sqrt(float64(dk)))
	c.v = vec(n*c.vs, 1)
	// Unit keys and queries, as the model's L2 norm gives them: with β in
	// [0, 1] the delta rule is then a contraction and errors do not grow.
	for t := range n {
		for _, x := range [][]float32{c.q[t*c.qks:][:dk], c.k[t*c.qks:][:dk]} {
			var ss float64
			for _, v := range x {
				ss += float64(v) * float64(v)
			}
			for i := range x {
				x[i] = float32(float64(x[i]) / math.Sqrt(ss))
			}
		}
	}
	c.decay, c.beta = make([]float32, n), make([]float32, n)
	for t := range n {
		c.decay[t] = float32(math.Exp(-3 * rng.Float64()))
		c.beta[t] = float32(rng.Float64())
	}
	return c
}

// run runs ks's gdn on a copy of the case and returns the final state and
// the outputs, checking that no guard value between outputs moved.
func (c *gdnCase) run(t *testing.T, ks KernelSet) (S, out []float32) {
	t.Helper()
	S = append([]float32(nil), c.s0...)
	out = make([]float32, c.n*c.os+1)
	for i := range out {
		out[i] = gdnGuard
	}
	h := &DeltaHead{S: S, Dk: c.dk, Dv: c.dv, N: c.n, Q: c.q, K: c.k, QKStride: c.qks,
		V: c.v, VStride: c.vs, Out: out, OutStride: c.os, Decay: c.decay, Beta: c.beta,
		Scale: float32(1 / math.Sqrt(float64(c.dv))), U: make([]float32, c.dv)}
	ks.DeltaRule(h)
	for i, x := range out {
		if i%c.os >= c.dv && x != gdnGuard {
			t.Fatalf("dk %d dv %d: guard at %d overwritten: %v", c.dk, c.dv, i, x)
		}
	}
	return S, out
}

// reference is the recurrence in float64.
func (c *gdnCase) reference() (S, out []float64) {
	dk, dv := c.dk, c.dv
	S = make([]float64, dk*dv)
	for i, x := range c.s0 {
		S[i] = float64(x)
	}
	out = make([]float64, c.n*c.os)
	for i := range out {
		out[i] = gdnGuard // the guards between rows, as run leaves them
	}
	scale := 1 / math.Sqrt(float64(dv))
	for t := range c.n {
		q, k, v := c.q[t*c.qks:], c.k[t*c.qks:], c.v[t*c.vs:]
		e, b := float64(c.decay[t]), float64(c.beta[t])
		u := make([]float64, dv)
		for r := range dk {
			for j := range dv {
				S[r*dv+j] *= e
				u[j] += S[r*dv+j] * float64(k[r])
			}
		}
		for j := range dv {
			d := (float64(v[j]) - u[j]) * b
			for r := range dk {
				S[r*dv+j] += float64(k[r]) * d
			}
		}
		for j := range dv {
			var o float64
			for r := range dk {
				o += S[r*dv+j] * float64(q[r])
			}
			out[t*c.os+j] = o * scale
		}
	}
	return S, out
}

// TestDeltaRuleMatchesReference runs every gdn variant this CPU supports
// on random heads of odd and real sizes against the float64 recurrence,
// and requires the variants to agree bit for bit with the Go reference.
func TestDeltaRuleMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	sets := variantSets(t, OpGDN)
	goSet, err := ParseKernels("gdn=go")
	if err != nil {
		t.Fatal(err)
	}
	for _, sz := range [][3]int{{1, 8, 1}, {3, 8, 5}, {7, 24, 9}, {16, 40, 17}, {5, 13, 6}, {128, 128, 33}, {64, 96, 70}} {
		c := newGDNCase(rng, sz[0], sz[1], sz[2])
		wantS, wantO := c.reference()
		goS, goO := c.run(t, goSet)
		// Each output is a sum of dk rounded products over a state that
		// went through n rounded updates: a few ulps per step of the
		// recurrence, relative to the largest output.
		tol := 1e-6 * float64(c.dk+c.n)
		if e := relErr64(gdnOutputs(c, goO), gdnOutputs(c, wantO)); e > tol {
			t.Errorf("dk %d dv %d n %d: go outputs differ from float64 by %.3g (tol %.3g)", c.dk, c.dv, c.n, e, tol)
		}
		if e := relErr64(goS, wantS); e > tol {
			t.Errorf("dk %d dv %d n %d: go state differs from float64 by %.3g (tol %.3g)", c.dk, c.dv, c.n, e, tol)
		}
		for _, s := range sets {
			S, O := c.run(t, s.ks)
			for i := range O {
				if math.Float32bits(O[i]) != math.Float32bits(goO[i]) {
					t.Fatalf("gdn=%s dk %d dv %d n %d: output %d = %v, go %v", s.name, c.dk, c.dv, c.n, i, O[i], goO[i])
				}
			}
			for i := range S {
				if math.Float32bits(S[i]) != math.Float32bits(goS[i]) {
					t.Fatalf("gdn=%s dk %d dv %d n %d: state %d = %v, go %v", s.name, c.dk, c.dv, c.n, i, S[i], goS[i])
				}
			}
		}
	}
}

// outputs gathers the Dv outputs of every token from a strided buffer.
func gdnOutputs[T float32 | float64](c *gdnCase, buf []T) []T {
	var o []T
	for t := range c.n {
		o = append(o, buf[t*c.os:][:c.dv]...)
	}
	return o
}

// relErr64 is max |a−b| / max |b| over b's entries.
func relErr64(a []float32, b []float64) float64 {
	var diff, scale float64
	for i := range b {
		diff = max(diff, math.Abs(float64(a[i])-b[i]))
		scale = max(scale, math.Abs(b[i]))
	}
	return diff / max(scale, 1e-30)
}

// BenchmarkDeltaRule is one Qwen3.5 value head (d_k = d_v = 128) over 512
// tokens per variant.
func BenchmarkDeltaRule(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := newGDNCase(rng, 128, 128, 512)
	for _, v := range KernelVariants() {
		if v.Op != OpGDN || !v.Supported {
			continue
		}
		ks, _ := ParseKernels(OpGDN + "=" + v.Name)
		b.Run(v.Name, func(b *testing.B) {
			S := append([]float32(nil), c.s0...)
			out := make([]float32, c.n*c.os)
			h := &DeltaHead{S: S, Dk: c.dk, Dv: c.dv, N: c.n, Q: c.q, K: c.k, QKStride: c.qks,
				V: c.v, VStride: c.vs, Out: out, OutStride: c.os, Decay: c.decay, Beta: c.beta,
				Scale: 1, U: make([]float32, c.dv)}
			for b.Loop() {
				ks.DeltaRule(h)
			}
			b.ReportMetric(float64(b.N*c.n)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}
