package kernels

// Tests and benchmarks of the AVX2 activation converters against their Go
// twins: output bytes must be identical for every input, NaN and Inf
// included, and nothing past dst may be written.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// quantBlockKinds fill one block (32 or 256 floats) with a kind of input
// the converters must agree on. Each kind is a name and a filler.
var quantBlockKinds = []struct {
	name string
	fill func(r *rand.Rand, x []float32)
}{
	{"random", func(r *rand.Rand, x []float32) {
		s := float32(math.Pow(10, 60*r.Float64()-30))
		for i := range x {
			x[i] = (2*r.Float32() - 1) * s
		}
	}},
	{"wide", func(r *rand.Rand, x []float32) { // each element its own scale
		for i := range x {
			x[i] = (2*r.Float32() - 1) * float32(math.Pow(10, 60*r.Float64()-30))
		}
	}},
	{"zero", func(r *rand.Rand, x []float32) {
		clear(x)
		if r.IntN(2) == 0 {
			x[r.IntN(len(x))] = float32(math.Copysign(0, -1))
		}
	}},
	{"one", func(r *rand.Rand, x []float32) {
		clear(x)
		x[r.IntN(len(x))] = (2*r.Float32() - 1) * float32(math.Pow(10, 60*r.Float64()-30))
	}},
	{"maxfloat", func(r *rand.Rand, x []float32) {
		for i := range x {
			x[i] = (2*r.Float32() - 1) * math.MaxFloat32
		}
		x[r.IntN(len(x))] = math.MaxFloat32
		x[r.IntN(len(x))] = -math.MaxFloat32
	}},
	{"ties", func(r *rand.Rand, x []float32) {
		// |x|max = 127 (or 254) makes the Q8_0 and Q8_K scales ±1 (±1/2),
		// so k+1/2 (odd k) lands exactly halfway after scaling.
		m := float32(127 * (1 + r.IntN(2)))
		for i := range x {
			x[i] = float32(r.IntN(253)-126) + 0.5
			if m == 254 {
				x[i] = float32(2*r.IntN(253) - 253)
			}
		}
		x[r.IntN(len(x))] = m
		x[r.IntN(len(x))] = -m
	}},
	{"denormal", func(r *rand.Rand, x []float32) {
		for i := range x {
			x[i] = math.Float32frombits(r.Uint32() & 0x807fffff)
		}
	}},
	{"tiny", func(r *rand.Rand, x []float32) {
		// Around 127/MaxFloat32 ≈ 3.7e-37, where 127/amax overflows to Inf.
		for i := range x {
			x[i] = (2*r.Float32() - 1) * 4e-37
			if r.IntN(4) == 0 {
				x[i] = math.Float32frombits(r.Uint32() & 0x807fffff)
			}
		}
	}},
	{"inf", func(r *rand.Rand, x []float32) {
		for i := range x {
			x[i] = 2*r.Float32() - 1
		}
		x[r.IntN(len(x))] = float32(math.Inf(1 - 2*r.IntN(2)))
		if r.IntN(2) == 0 {
			x[r.IntN(len(x))] = float32(math.Inf(-1))
			x[r.IntN(len(x))] = 0
		}
	}},
	{"nan", func(r *rand.Rand, x []float32) {
		for i := range x {
			x[i] = (2*r.Float32() - 1) * 100
		}
		x[r.IntN(len(x))] = float32(math.NaN())
	}},
	{"nan-payloads", func(r *rand.Rand, x []float32) {
		// Several NaNs, quiet and signalling, either sign, odd payloads.
		for i := range x {
			x[i] = (2*r.Float32() - 1) * 100
		}
		for range 1 + r.IntN(4) {
			x[r.IntN(len(x))] = math.Float32frombits(0x7f800000 | r.Uint32()&0x807fffff | 1)
		}
	}},
	{"nan-edges", func(r *rand.Rand, x []float32) {
		clear(x)
		x[0] = math.Float32frombits(0x7f800001) // signalling
		x[len(x)-1] = math.Float32frombits(0xffc00000 | r.Uint32()&0x3fffff)
		if r.IntN(2) == 0 {
			x[len(x)/2] = float32(math.Inf(1))
		}
	}},
	{"nan-many", func(r *rand.Rand, x []float32) {
		// NaNs in every lane and position, so one after the largest |x|
		// of a lane must not hide it.
		for i := range x {
			x[i] = (2*r.Float32() - 1) * 100
			if r.IntN(2) == 0 {
				x[i] = math.Float32frombits(0x7f800001 | r.Uint32()&0x807fffff)
			}
		}
	}},
	{"all-nan", func(r *rand.Rand, x []float32) {
		for i := range x {
			x[i] = math.Float32frombits(0x7fc00000 | r.Uint32()&0x803fffff)
		}
	}},
}

// quantTestRows returns, per kind, a row of nb blocks of bs floats whose
// blocks cycle through the kinds starting at that one, so every kind
// meets every block position and neighbour.
func quantTestRows(r *rand.Rand, nb, bs int) (names []string, rows [][]float32) {
	for k := range quantBlockKinds {
		// One float of slack in front so the row starts unaligned.
		x := make([]float32, 1+nb*bs)[1:]
		for b := range nb {
			quantBlockKinds[(k+b)%len(quantBlockKinds)].fill(r, x[b*bs:(b+1)*bs])
		}
		names = append(names, quantBlockKinds[k].name)
		rows = append(rows, x)
	}
	return names, rows
}

const quantGuard = 61 // guard bytes on each side of dst (odd: dst starts unaligned)

// checkQuantBytes runs conv into a guarded buffer and compares it with want.
func checkQuantBytes(t *testing.T, what string, want []byte, blockBytes int, conv func(dst []byte)) {
	t.Helper()
	buf := make([]byte, quantGuard+len(want)+quantGuard)
	for i := range buf {
		buf[i] = 0xa5
	}
	conv(buf[quantGuard : quantGuard+len(want)])
	got := buf[quantGuard : quantGuard+len(want)]
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: byte %d (block %d offset %d) = %#02x, Go %#02x", what, i, i/blockBytes, i%blockBytes, got[i], want[i])
		}
	}
	for i, c := range buf {
		if (i < quantGuard || i >= quantGuard+len(want)) && c != 0xa5 {
			t.Fatalf("%s: guard byte %d overwritten (%#02x)", what, i-quantGuard, c)
		}
	}
}

// goQuantBytes runs the Go twin into a buffer prefilled with junk, so a
// byte the twin leaves unwritten shows up as a difference.
func goQuantBytes(n int, conv func(dst []byte)) []byte {
	want := make([]byte, n)
	for i := range want {
		want[i] = 0x5a
	}
	conv(want)
	return want
}

func TestQuantActQ8AVX2MatchesGo(t *testing.T) {
	requireAVX2(t, "AVX2 quantizers")
	r := rand.New(rand.NewPCG(11, 12))
	for _, nb := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 32, 96} {
		names, rows := quantTestRows(r, nb, qk)
		for i, x := range rows {
			for _, bias := range []int32{0, 8, 128, -3, 1 << 24} {
				want := goQuantBytes(nb*q8ActBlock, func(d []byte) { quantActQ8Go(x, d, bias) })
				what := fmt.Sprintf("nb=%d kinds from %s bias=%d", nb, names[i], bias)
				checkQuantBytes(t, what, want, q8ActBlock, func(d []byte) { quantActQ8AVX2(x, d, bias) })
			}
		}
	}
}

func TestQuantQ8KAVX2MatchesGo(t *testing.T) {
	requireAVX2(t, "AVX2 quantizers")
	r := rand.New(rand.NewPCG(13, 14))
	for _, nb := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 12} {
		names, rows := quantTestRows(r, nb, qkK)
		for i, x := range rows {
			want := goQuantBytes(nb*q8kBlockBytes, func(d []byte) { quantizeQ8K(x, d) })
			what := fmt.Sprintf("nb=%d kinds from %s", nb, names[i])
			checkQuantBytes(t, what, want, q8kBlockBytes, func(d []byte) { quantQ8KAVX2(x, d) })
		}
	}
}

// TestQuantQ8KAVX2FirstMax checks the tie rule on its own: of equal
// magnitudes the first element sets the sign of the scale.
func TestQuantQ8KAVX2FirstMax(t *testing.T) {
	requireAVX2(t, "AVX2 quantizers")
	r := rand.New(rand.NewPCG(15, 16))
	x := make([]float32, qkK)
	for range 200 {
		for i := range x {
			x[i] = 2*r.Float32() - 1
		}
		i, j := r.IntN(qkK), r.IntN(qkK)
		x[i], x[j] = 3, -3
		want := goQuantBytes(q8kBlockBytes, func(d []byte) { quantizeQ8K(x, d) })
		checkQuantBytes(t, fmt.Sprintf("3 at %d, -3 at %d", i, j), want, q8kBlockBytes, func(d []byte) { quantQ8KAVX2(x, d) })
	}
}

// TestQuantAVX2IgnoresTail checks that a partial last block is skipped,
// as the Go twins skip it, and that rows shorter than a block write nothing.
func TestQuantAVX2IgnoresTail(t *testing.T) {
	requireAVX2(t, "AVX2 quantizers")
	r := rand.New(rand.NewPCG(19, 20))
	for _, tail := range []int{0, 1, 31, 255} {
		x := make([]float32, 2*qkK+tail)
		for i := range x {
			x[i] = 2*r.Float32() - 1
		}
		n8 := len(x) / qk * q8ActBlock
		want := goQuantBytes(n8, func(d []byte) { quantActQ8Go(x, d, 128) })
		checkQuantBytes(t, fmt.Sprintf("Q8_0 tail %d", tail), want, q8ActBlock, func(d []byte) { quantActQ8AVX2(x, d, 128) })
		nk := len(x) / qkK * q8kBlockBytes
		want = goQuantBytes(nk, func(d []byte) { quantizeQ8K(x, d) })
		checkQuantBytes(t, fmt.Sprintf("Q8_K tail %d", tail), want, q8kBlockBytes, func(d []byte) { quantQ8KAVX2(x, d) })
		checkQuantBytes(t, "short Q8_0 row", nil, q8ActBlock, func(d []byte) { quantActQ8AVX2(x[:tail%qk], d, 128) })
		checkQuantBytes(t, "short Q8_K row", nil, q8kBlockBytes, func(d []byte) { quantQ8KAVX2(x[:tail%qkK], d) })
	}
}

func benchQuantRow(n int) []float32 {
	r := rand.New(rand.NewPCG(17, 18))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

func reportGelem(b *testing.B, n int) {
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
}

func BenchmarkQuantActQ8AVX2(b *testing.B) {
	for _, n := range []int{1024, 3072} {
		x := benchQuantRow(n)
		dst := make([]byte, n/qk*q8ActBlock)
		for _, v := range []struct {
			name string
			f    func(x []float32, dst []byte, bias int32)
			asm  bool
		}{{"go", quantActQ8Go, false}, {"avx2", quantActQ8AVX2, true}} {
			b.Run(fmt.Sprintf("%s/n=%d", v.name, n), func(b *testing.B) {
				if v.asm {
					requireAVX2(b, "AVX2 quantizers")
				}
				b.ReportAllocs()
				for b.Loop() {
					v.f(x, dst, 128)
				}
				reportGelem(b, n)
			})
		}
	}
}

func BenchmarkQuantQ8KAVX2(b *testing.B) {
	for _, n := range []int{1024, 3072} {
		x := benchQuantRow(n)
		dst := make([]byte, n/qkK*q8kBlockBytes)
		for _, v := range []struct {
			name string
			f    func(x []float32, dst []byte)
			asm  bool
		}{{"go", quantizeQ8K, false}, {"avx2", quantQ8KAVX2, true}} {
			b.Run(fmt.Sprintf("%s/n=%d", v.name, n), func(b *testing.B) {
				if v.asm {
					requireAVX2(b, "AVX2 quantizers")
				}
				b.ReportAllocs()
				for b.Loop() {
					v.f(x, dst)
				}
				reportGelem(b, n)
			})
		}
	}
}
