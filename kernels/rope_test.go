package kernels

// Tests of the RoPE rotation: the AVX2 kernel against the Go loop bit for
// bit, NORM and NEOX pairs, every pair count 1..40 and 64, head sizes with
// dims left unrotated, several heads, guard values in the inputs and the
// table, sentinels after the last head.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func ropeTables(rng *rand.Rand, half int, guards bool) (cos, sin []float32) {
	cos, sin = make([]float32, half), make([]float32, half)
	for i := range half {
		a := rng.Float64() * 1000
		cos[i], sin[i] = float32(math.Cos(a)), float32(math.Sin(a))
		if guards && rng.IntN(6) == 0 {
			cos[i] = normGuards[rng.IntN(len(normGuards))]
		}
	}
	return cos, sin
}

func TestRoPEAVX2MatchesGo(t *testing.T) {
	requireAVX2(t, "the AVX2 rotation")
	rng := rand.New(rand.NewPCG(21, 22))
	halves := []int{64}
	for h := 1; h <= 40; h++ {
		halves = append(halves, h)
	}
	for _, neox := range []bool{false, true} {
		for _, half := range halves {
			for heads := 1; heads <= 3; heads++ {
				hd := 2*half + rng.IntN(4)
				guards := rng.IntN(3) == 0
				cos, sin := ropeTables(rng, half, guards)
				in := make([]float32, heads*hd)
				for i := range in {
					in[i] = float32(rng.NormFloat64() * 4)
					if guards && rng.IntN(8) == 0 {
						in[i] = normGuards[rng.IntN(len(normGuards))]
					}
				}
				want := append([]float32(nil), in...)
				ropeGo(want, hd, cos, sin, neox)
				buf := make([]float32, len(in)+16)
				copy(buf, in)
				for i := len(in); i < len(buf); i++ {
					buf[i] = normSentinel
				}
				ropeAVX2(buf[:len(in)], hd, cos, sin, neox)
				for i := range want {
					if !sameBits(buf[i], want[i]) {
						t.Fatalf("neox=%v half=%d hd=%d heads=%d: v[%d] = %v (%#x), Go %v (%#x)", neox, half, hd, heads, i,
							buf[i], math.Float32bits(buf[i]), want[i], math.Float32bits(want[i]))
					}
				}
				for i := len(in); i < len(buf); i++ {
					if buf[i] != normSentinel {
						t.Fatalf("neox=%v half=%d hd=%d heads=%d: write past the heads at %d", neox, half, hd, heads, i)
					}
				}
			}
		}
	}
}

// TestRoPEGoIsGgml pins the Go loop to ggml's formula, written out with
// FMA32 (the engine's loop before the op moved here), and checks that
// dims past 2·half are left alone.
func TestRoPEGoIsGgml(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, neox := range []bool{false, true} {
		half, hd := 13, 30
		cos, sin := ropeTables(rng, half, false)
		v := make([]float32, 2*hd)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		got := append([]float32(nil), v...)
		var ks KernelSet
		ks.RoPE(got, hd, cos, sin, neox)
		for h := range 2 {
			x := v[h*hd : (h+1)*hd]
			y := got[h*hd : (h+1)*hd]
			for i := range half {
				a, b := 2*i, 2*i+1
				if neox {
					a, b = i, i+half
				}
				wa := FMA32(x[a], cos[i], -float32(x[b]*sin[i]))
				wb := FMA32(x[a], sin[i], float32(x[b]*cos[i]))
				if y[a] != wa || y[b] != wb {
					t.Fatalf("neox=%v head %d pair %d: %v %v, want %v %v", neox, h, i, y[a], y[b], wa, wb)
				}
			}
			for d := 2 * half; d < hd; d++ {
				if y[d] != x[d] {
					t.Fatalf("neox=%v: dim %d past n_rot changed", neox, d)
				}
			}
		}
	}
}

func BenchmarkRoPE(b *testing.B) {
	rng := rand.New(rand.NewPCG(25, 26))
	const hd, heads = 128, 16
	cos, sin := ropeTables(rng, hd/2, false)
	v := make([]float32, heads*hd)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	for _, neox := range []bool{false, true} {
		for _, c := range []struct {
			name string
			f    func([]float32, int, []float32, []float32, bool)
		}{{"go", ropeGo}, {"avx2", ropeAVX2}} {
			b.Run(fmt.Sprintf("%s/neox=%v/hd%d", c.name, neox, hd), func(b *testing.B) {
				for b.Loop() {
					c.f(v, hd, cos, sin, neox)
				}
				b.ReportMetric(float64(len(v))*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
			})
		}
	}
}
