package kernels

// Tests of the set's row conversion: the AVX2 f16/bf16 converters give
// quantizeF16's and quantizeBF16's bytes on a sweep of float32 bit
// patterns (every exponent and the rounding ties, NaN payloads, the f16
// overflow edge and subnormals) and on every row length 0..70, without
// writing past the row.

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// rowConvSweep is every float32 pattern whose low 12 bits are 0, 0xfff or
// random: each binary16 and bfloat16 rounding boundary and tie of every
// exponent, both signs, NaNs and infinities.
func rowConvSweep() []float32 {
	rng := rand.New(rand.NewPCG(11, 12))
	x := make([]float32, 0, 3<<20)
	for hi := range uint32(1 << 20) {
		for _, lo := range []uint32{0, 0xfff, rng.Uint32() & 0xfff} {
			x = append(x, math.Float32frombits(hi<<12|lo))
		}
	}
	return x
}

func TestQuantizeActivationAVX2Bytes(t *testing.T) {
	requireAVX2(t, "the AVX2 row converters")
	sweep := rowConvSweep()
	for _, c := range []struct {
		typ       Type
		ref, fast func([]float32, []byte)
	}{{F16, quantizeF16, quantizeF16AVX2}, {BF16, quantizeBF16, quantizeBF16AVX2}} {
		want, got := make([]byte, 2*len(sweep)), make([]byte, 2*len(sweep))
		c.ref(sweep, want)
		c.fast(sweep, got)
		if i := firstDiff(got, want); i >= 0 {
			e := i / 2
			t.Fatalf("%v: %#08x → %#04x, want %#04x", c.typ, math.Float32bits(sweep[e]),
				uint16(got[2*e])|uint16(got[2*e+1])<<8, uint16(want[2*e])|uint16(want[2*e+1])<<8)
		}
		for n := range 71 {
			off := n % 5
			x := sweep[1000*n+off : 1000*n+off+n]
			ref := make([]byte, 2*n)
			c.ref(x, ref)
			buf := bytes.Repeat([]byte{0xa5}, 2*n+32)
			c.fast(x, buf[:2*n])
			if !bytes.Equal(buf[:2*n], ref) || bytes.Count(buf[2*n:], []byte{0xa5}) != 32 {
				t.Fatalf("%v n=%d: % x, want % x then guards", c.typ, n, buf, ref)
			}
		}
	}
}

// TestKernelSetQuantizeActivation: the set's conversion is the package's
// for every cache type.
func TestKernelSetQuantizeActivation(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	var ks KernelSet
	for _, typ := range []Type{F32, F16, BF16, Q8_0} {
		for _, n := range []int{32, 64, 96, 128} {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * 3)
			}
			rb := VecDotType(typ).RowBytes(n)
			want, got := make([]byte, rb), make([]byte, rb)
			QuantizeActivation(typ, x, want)
			ks.QuantizeActivation(typ, x, got)
			if !bytes.Equal(got, want) {
				t.Fatalf("%v n=%d: the set's bytes differ", typ, n)
			}
		}
	}
}

func BenchmarkQuantizeActivationF16(b *testing.B) {
	x := make([]float32, 4096)
	for i := range x {
		x[i] = float32(i%977) * 0.37
	}
	dst := make([]byte, 2*len(x))
	for _, c := range []struct {
		name string
		f    func([]float32, []byte)
	}{{"go", quantizeF16}, {"avx2", quantizeF16AVX2}, {"go-bf16", quantizeBF16}, {"avx2-bf16", quantizeBF16AVX2}} {
		b.Run(fmt.Sprintf("%s/n%d", c.name, len(x)), func(b *testing.B) {
			for b.Loop() {
				c.f(x, dst)
			}
			b.ReportMetric(float64(len(x))*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
	}
}
