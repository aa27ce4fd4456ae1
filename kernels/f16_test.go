package kernels

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// refF16ToF64 decodes binary16 from its fields, independently of the
// bit-trick and the table.
func refF16ToF64(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e, m := int(h>>10&0x1f), float64(h&0x3ff)
	switch e {
	case 0:
		return sign * math.Ldexp(m, -24)
	case 31:
		if m != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * math.Ldexp(1+m/1024, e-15)
}

func TestF16ToF32AllPatterns(t *testing.T) {
	for h := range 1 << 16 {
		want := refF16ToF64(uint16(h))
		got := F16ToF32(uint16(h))
		if math.IsNaN(want) {
			if !math.IsNaN(float64(got)) {
				t.Fatalf("%#04x: got %v, want NaN", h, got)
			}
			continue
		}
		if float64(got) != want || math.Signbit(float64(got)) != (h&0x8000 != 0) {
			t.Fatalf("%#04x: got %v, want %v", h, got, want)
		}
		if f16ToF32Bits(uint16(h)) != got {
			t.Fatalf("%#04x: bit-trick %v differs from table %v", h, f16ToF32Bits(uint16(h)), got)
		}
	}
}

// refF32ToF16 finds the nearest binary16 by search over all finite
// positive values, ties to the even bit pattern.
type f16Ref struct{ vals []float64 } // vals[i] = value of pattern i, i < 0x7c00

func newF16Ref() *f16Ref {
	r := &f16Ref{vals: make([]float64, 0x7c00)}
	for i := range r.vals {
		r.vals[i] = refF16ToF64(uint16(i))
	}
	return r
}

func (r *f16Ref) round(f float32) uint16 {
	x := float64(f)
	if math.IsNaN(x) {
		return 0x7e00
	}
	var sign uint16
	if math.Signbit(x) {
		sign, x = 0x8000, -x
	}
	if x >= 65520 { // halfway between 65504 and 2^16 rounds to the even pattern 0x7c00
		return sign | 0x7c00
	}
	i := sort.SearchFloat64s(r.vals, x) // first value ≥ x
	if i == len(r.vals) {               // between 65504 and the overflow threshold
		return sign | 0x7bff
	}
	if r.vals[i] == x || i == 0 {
		return sign | uint16(i)
	}
	lo, hi := r.vals[i-1], r.vals[i]
	switch {
	case x-lo < hi-x:
		return sign | uint16(i-1)
	case x-lo > hi-x:
		return sign | uint16(i)
	case (i-1)%2 == 0:
		return sign | uint16(i-1)
	default:
		return sign | uint16(i)
	}
}

func TestF32ToF16RoundsToNearestEven(t *testing.T) {
	ref := newF16Ref()
	var in []float32
	// Every binary16 value, the midpoints between neighbours, and one
	// float32 ulp either side of each midpoint.
	for i := range 0x7c00 {
		v := float32(ref.vals[i])
		in = append(in, v)
		if i+1 < 0x7c00 {
			mid := float32((ref.vals[i] + ref.vals[i+1]) / 2)
			in = append(in, mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1e9))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		in = append(in, math.Float32frombits(rng.Uint32()))
		in = append(in, float32(rng.NormFloat64()*math.Pow(2, float64(rng.IntN(50)-30))))
	}
	in = append(in, 65504, 65519.99, 65520, 65536, 1e30, float32(math.Inf(1)), 5.9604645e-08, 2.9802322e-08, 2.98e-08, 1e-10)
	for _, v := range in {
		for _, f := range []float32{v, -v} {
			got, want := F32ToF16(f), ref.round(f)
			if math.IsNaN(float64(f)) {
				if got&0x7c00 != 0x7c00 || got&0x3ff == 0 || got&0x200 == 0 {
					t.Fatalf("F32ToF16(NaN %#08x) = %#04x, want a quiet NaN", math.Float32bits(f), got)
				}
				continue
			}
			if got != want {
				t.Fatalf("F32ToF16(%v [%#08x]) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
			}
		}
	}
	if got := F32ToF16(float32(math.NaN())); got != 0x7e00 {
		t.Errorf("F32ToF16(default NaN) = %#04x, want 0x7e00", got)
	}
}

func TestBF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500000 {
		b := rng.Uint32()
		if rng.IntN(4) == 0 { // exercise ties: low half exactly 0x8000
			b = b&^0xffff | 0x8000
		}
		f := math.Float32frombits(b)
		got := F32ToBF16(f)
		if math.IsNaN(float64(f)) {
			if !math.IsNaN(float64(BF16ToF32(got))) || got&0x40 == 0 {
				t.Fatalf("F32ToBF16(NaN %#08x) = %#04x, want quiet NaN", b, got)
			}
			continue
		}
		// Reference: the two bfloat16 neighbours, nearest in float64,
		// ties to the even pattern.
		lo := uint16(b >> 16)
		hi := lo + 1
		dl := math.Abs(float64(f) - float64(BF16ToF32(lo)))
		dh := math.Abs(float64(BF16ToF32(hi)) - float64(f))
		if lo&0x7fff == 0x7f7f { // upper neighbour is inf: distance as if 2^128
			dh = math.Abs(math.Ldexp(math.Copysign(1, float64(f)), 128) - float64(f))
		}
		want := lo
		if dh < dl || (dh == dl && lo&1 == 1) {
			want = hi
		}
		if got != want {
			t.Fatalf("F32ToBF16(%v [%#08x]) = %#04x, want %#04x", f, b, got, want)
		}
		if RoundBF16(f) != BF16ToF32(want) {
			t.Fatalf("RoundBF16(%v) mismatch", f)
		}
	}
}
