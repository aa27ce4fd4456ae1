package kernels

// Tests for the K-quant formats and the Q8_K activation quantizer: dequant
// against a per-element transcription of ../shared/spec/gguf-and-quants.md §3.7–3.13, block
// dots against float64 dots of the dequantized operands, quantizer round
// trips, and Q8_K's properties (§4.2).

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

var kWeightTypes = []Type{Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS}

// kF16Fields are the byte offsets of each block's f16 super-scales; the
// first is d (may be negative), the rest are mins (kept positive).
var kF16Fields = map[Type][]int{
	Q2_K: {80, 82}, Q3_K: {108}, Q4_K: {0, 2}, Q5_K: {0, 2}, Q6_K: {208}, IQ4_XS: {0},
}

// randomKBlocks returns nb valid blocks of t: random bytes everywhere (all
// bit patterns are valid codes and scales) with finite, moderate f16 scales.
func randomKBlocks(rng *rand.Rand, t Type, nb int) []byte {
	b := make([]byte, t.RowBytes(nb*qkK))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	for i := range nb {
		blk := b[i*t.BlockBytes():]
		for k, off := range kF16Fields[t] {
			v := float32(1e-3 + 2e-2*rng.Float64())
			if k == 0 && rng.IntN(2) == 0 {
				v = -v
			}
			binary.LittleEndian.PutUint16(blk[off:], F32ToF16(v))
		}
	}
	return b
}

// randomActivation returns n normal values with a few outliers and, when
// n allows, one all-zero super-block.
func randomActivation(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
		if rng.IntN(97) == 0 {
			x[i] *= 20
		}
	}
	if n >= 3*qkK {
		clear(x[qkK : 2*qkK])
	}
	return x
}

// specLevels transcribes §3.7–3.13 for one element e of one block: every
// value the element's sub-block can represent, and the index of the one the
// block's code selects.
func specLevels(t Type, b []byte, e int) (levels []float32, code int) {
	f16 := func(off int) float32 { return F16ToF32(binary.LittleEndian.Uint16(b[off:])) }
	switch t {
	case Q2_K:
		n, j, l := e/128, e%128/32, e%32
		q := int(b[16+32*n+l]>>(2*j)) & 3
		sb := b[8*n+2*j+l/16]
		dl, ml := f16(80)*float32(sb&0xf), f16(82)*float32(sb>>4)
		for k := range 4 {
			levels = append(levels, float32(dl*float32(k))-ml)
		}
		return levels, q
	case Q3_K:
		n, j, l := e/128, e%128/32, e%32
		sc := b[96:108]
		s := 8*n + 2*j + l/16
		var low4 byte
		if s < 8 {
			low4 = sc[s] & 0xf
		} else {
			low4 = sc[s-8] >> 4
		}
		high2 := (sc[8+s%4] >> (2 * (s / 4))) & 3
		S := int(low4|high2<<4) - 32
		q := int(b[32+32*n+l]>>(2*j))&3 - 4
		if b[l]>>(4*n+j)&1 == 1 {
			q += 4
		}
		dS := f16(108) * float32(S)
		for k := -4; k < 4; k++ {
			levels = append(levels, dS*float32(k))
		}
		return levels, q + 4
	case Q4_K, Q5_K:
		c, l := e/64, e%32
		sub := e / 32
		q := b[4:16]
		var sc, mn int
		if sub < 4 {
			sc, mn = int(q[sub]&63), int(q[sub+4]&63)
		} else {
			sc = int(q[sub+4]&0xf | (q[sub-4]>>6)<<4)
			mn = int(q[sub+4]>>4 | (q[sub]>>6)<<4)
		}
		d1, m1 := f16(0)*float32(sc), f16(2)*float32(mn)
		var v int
		if t == Q4_K {
			v = int(b[16+32*c+l])
		} else {
			v = int(b[48+32*c+l])
		}
		if e%64 < 32 {
			v &= 0xf
		} else {
			v >>= 4
		}
		nl := 16
		if t == Q5_K {
			v += 16 * int(b[16+l]>>(2*c+e%64/32)&1)
			nl = 32
		}
		for k := range nl {
			levels = append(levels, float32(d1*float32(k))-m1)
		}
		return levels, v
	case Q6_K:
		n, r := e/128, e%128
		k, l := r/32, r%32
		L, H, SC := b[64*n:], b[128+32*n:], b[192+8*n:]
		var lo int
		if k%2 == 0 {
			lo = int(L[l])
		} else {
			lo = int(L[l+32])
		}
		if k >= 2 {
			lo >>= 4
		}
		q := (lo & 0xf) | int(H[l]>>(2*k)&3)<<4
		dS := f16(208) * float32(int8(SC[l/16+2*k]))
		for v := -32; v < 32; v++ {
			levels = append(levels, dS*float32(v))
		}
		return levels, q
	case IQ4_XS:
		sb, j := e/32, e%32
		sh := binary.LittleEndian.Uint16(b[2:])
		ls := int((b[4+sb/2]>>(4*(sb%2)))&0xf) | int((sh>>(2*sb))&3)<<4
		dl := f16(0) * float32(ls-32)
		kv := []int{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}
		for _, v := range kv {
			levels = append(levels, dl*float32(v))
		}
		qb := b[8+16*sb+j%16]
		if j < 16 {
			return levels, int(qb & 0xf)
		}
		return levels, int(qb >> 4)
	}
	panic("specLevels: " + t.String())
}

func TestKQuantDequantMatchesSpec(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range kWeightTypes {
		nb := 5
		w := randomKBlocks(rng, typ, nb)
		y := make([]float32, nb*qkK)
		descOf(typ).dequant(w, y)
		for e := range y {
			blk := w[e/qkK*typ.BlockBytes() : (e/qkK+1)*typ.BlockBytes()]
			levels, code := specLevels(typ, blk, e%qkK)
			if want := levels[code]; math.Float32bits(y[e]) != math.Float32bits(want) && !(y[e] == 0 && want == 0) {
				t.Fatalf("%v: element %d = %g, spec gives %g", typ, e, y[e], want)
			}
		}
	}
}

// dot64 is Σ w·a in float64, and Σ|w·a| for tolerances.
func dot64(w, a []float32) (sum, mag float64) {
	for i := range w {
		p := float64(w[i]) * float64(a[i])
		sum += p
		mag += math.Abs(p)
	}
	return sum, mag
}

func TestKQuantVecDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, typ := range kWeightTypes {
		for _, nb := range []int{1, 3, 7, 17} {
			n := nb * qkK
			tr := descOf(typ)
			if tr.vecDotType != Q8_K {
				t.Fatalf("%v: vecDotType %v, want Q8_K", typ, tr.vecDotType)
			}
			// Operands sit at odd offsets inside larger buffers with exact lengths.
			wb := append([]byte{0xAA}, randomKBlocks(rng, typ, nb)...)
			w := wb[1:]
			x := randomActivation(rng, n)
			ab := make([]byte, Q8_K.RowBytes(n)+3)
			a := ab[3:]
			quantizeQ8K(x, a)

			wd, ad := make([]float32, n), make([]float32, n)
			tr.dequant(w, wd)
			dequantQ8K(a, ad)
			got := float64(tr.vecDot(n, w, a))

			// Same math, different order: float32 rounding of the scale
			// products, the dequantized values and the result only.
			ref, mag := dot64(wd, ad)
			if d := math.Abs(got - ref); d > 2e-6*mag+1e-30 {
				t.Errorf("%v nb=%d: vecDot %g, dequantized dot %g (diff %g, Σ|wa| %g)", typ, nb, got, ref, d, mag)
			}

			// Against the original activation the gap is Q8_K's rounding:
			// each a differs from d_a·q by at most |d_a|/2.
			exact, mag2 := dot64(wd, x)
			var bound float64
			for i := range nb {
				da := math.Abs(float64(q8kD(a[i*q8kBlockBytes:])))
				for _, v := range wd[i*qkK : (i+1)*qkK] {
					bound += math.Abs(float64(v)) * da / 2
				}
			}
			if d := math.Abs(got - exact); d > bound*(1+1e-4)+2e-6*mag2+1e-30 {
				t.Errorf("%v nb=%d: vecDot %g, float dot %g (diff %g > bound %g)", typ, nb, got, exact, d, bound)
			}

			// The public dispatch gives the same numbers.
			if VecDotType(typ) != Q8_K || !CanMatMul(typ) || !CanDequantize(typ) {
				t.Fatalf("%v: dispatch tables: VecDotType %v CanMatMul %v", typ, VecDotType(typ), CanMatMul(typ))
			}
			a2 := make([]byte, Q8_K.RowBytes(n))
			QuantizeActivation(typ, x, a2)
			if string(a2) != string(a) {
				t.Fatalf("%v: QuantizeActivation differs from the Q8_K quantizer", typ)
			}
			if g := Dot(typ, n, w, a2); float64(g) != got {
				t.Errorf("%v: Dot %g, vecDot %g", typ, g, got)
			}
			wd2 := make([]float32, n)
			if err := Dequantize(typ, w, wd2); err != nil {
				t.Fatal(err)
			}
			for i := range wd {
				if math.Float32bits(wd[i]) != math.Float32bits(wd2[i]) {
					t.Fatalf("%v: Dequantize differs at %d", typ, i)
				}
			}
		}
	}
}

// kBits is the bits per value of each quantizer's grid, for the error bound.
var kBits = map[Type]int{Q2_K: 2, Q3_K: 3, Q4_K: 4, Q5_K: 5, Q6_K: 6, IQ4_XS: 4}

func TestKQuantRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, typ := range kWeightTypes {
		if !CanQuantize(typ) {
			t.Fatalf("%v: no quantizer", typ)
		}
		nb := 9
		n := nb * qkK
		x := make([]float32, n)
		for i := range nb {
			// Super-blocks span very different magnitudes.
			s := math.Pow(10, rng.Float64()*6-4)
			for j := range qkK {
				x[i*qkK+j] = float32(rng.NormFloat64() * s)
			}
		}
		q := make([]byte, typ.RowBytes(n))
		if err := Quantize(typ, x, q); err != nil {
			t.Fatal(err)
		}
		y := make([]float32, n)
		if err := Dequantize(typ, q, y); err != nil {
			t.Fatal(err)
		}

		// Each value must sit on the nearest level its sub-block offers,
		// given the stored (f16, 6-bit) scales.
		const slack = 1e-5
		for e := range y {
			blk := q[e/qkK*typ.BlockBytes() : (e/qkK+1)*typ.BlockBytes()]
			levels, _ := specLevels(typ, blk, e%qkK)
			best := math.Inf(1)
			for _, v := range levels {
				best = min(best, math.Abs(float64(v)-float64(x[e])))
			}
			if d := math.Abs(float64(y[e]) - float64(x[e])); d > best+slack*math.Abs(float64(x[e]))+1e-30 {
				t.Fatalf("%v: element %d: x %g → %g, but a level %g away exists", typ, e, x[e], y[e], best)
			}
		}

		// Per super-block RMS error: uniform rounding gives step/√12 with
		// step = range/(2^bits − 1), and the range of ≤32 normal samples
		// stays under 5σ; ×1.5 for the quantized scales.
		bound := 1.5 * 5 / math.Sqrt(12) / float64(int(1)<<kBits[typ]-1)
		for i := range nb {
			var se, sx float64
			for j := i * qkK; j < (i+1)*qkK; j++ {
				d := float64(y[j]) - float64(x[j])
				se += d * d
				sx += float64(x[j]) * float64(x[j])
			}
			if r := math.Sqrt(se / sx); r > bound {
				t.Errorf("%v: super-block %d: relative RMS error %.4f > %.4f", typ, i, r, bound)
			}
		}

		// Zero input is zero output; a constant block stays finite.
		zero := make([]float32, qkK)
		cst := make([]float32, qkK)
		for i := range cst {
			cst[i] = 0.75
		}
		for _, in := range [][]float32{zero, cst} {
			qb := make([]byte, typ.BlockBytes())
			descOf(typ).quantize(in, qb)
			out := make([]float32, qkK)
			descOf(typ).dequant(qb, out)
			for j, v := range out {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || math.Abs(float64(v-in[j])) > 0.5*float64(in[j])+1e-30 {
					t.Fatalf("%v: input %g → %g", typ, in[j], v)
				}
			}
		}
	}
}

func TestQ8KQuantizer(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	nb := 11
	n := nb * qkK
	x := randomActivation(rng, n)
	for i := 2; i < nb; i += 3 { // some blocks whose largest value is negative
		x[i*qkK+rng.IntN(qkK)] = -100
	}
	a := make([]byte, Q8_K.RowBytes(n))
	quantizeQ8K(x, a)
	ad := make([]float32, n)
	if err := Dequantize(Q8_K, a, ad); err != nil {
		t.Fatal(err)
	}
	for i := range nb {
		blk := a[i*q8kBlockBytes : (i+1)*q8kBlockBytes]
		xs := x[i*qkK : (i+1)*qkK]
		d := q8kD(blk)
		qs := q8kQs(blk)
		m, amax := 0, float32(0)
		for j, v := range xs {
			if abs32(v) > amax {
				m, amax = j, abs32(v)
			}
		}
		for g := range 16 {
			var s int32
			for _, q := range qs[16*g : 16*g+16] {
				s += int32(int8(q))
			}
			if got := q8kBsum(blk, g); got != s {
				t.Fatalf("block %d: bsum[%d] = %d, want %d", i, g, got, s)
			}
		}
		if amax == 0 {
			if d != 0 {
				t.Fatalf("block %d: zero block has d %g", i, d)
			}
			for _, q := range qs {
				if q != 0 {
					t.Fatalf("block %d: zero block has a nonzero quant", i)
				}
			}
			continue
		}
		// x_m maps to −127 whatever its sign, so d carries the opposite sign.
		if int8(qs[m]) != -127 {
			t.Fatalf("block %d: q at x_m = %d, want -127", i, int8(qs[m]))
		}
		if (d < 0) == (xs[m] < 0) {
			t.Fatalf("block %d: d %g has the sign of x_m %g", i, d, xs[m])
		}
		for j, q := range qs {
			if int8(q) < -127 {
				t.Fatalf("block %d: q[%d] = %d", i, j, int8(q))
			}
			if e := math.Abs(float64(ad[i*qkK+j]) - float64(xs[j])); e > math.Abs(float64(d))*(0.5+1e-5) {
				t.Fatalf("block %d: element %d: %g → %g, more than |d|/2 = %g off", i, j, xs[j], ad[i*qkK+j], math.Abs(float64(d))/2)
			}
		}
	}
}

func TestQ8KRoundingAndTies(t *testing.T) {
	x := make([]float32, qkK)
	// x_m = −127 makes iscale exactly 1, so products are the inputs and the
	// half-way cases are exact: they must round to even.
	x[0] = -127
	ins := []float32{2.5, 3.5, -2.5, -3.5, 0.5, -0.5, 1.5, 126.5, 127, 126.49}
	want := []int8{2, 4, -2, -4, 0, 0, 2, 126, 127, 126}
	copy(x[1:], ins)
	a := make([]byte, q8kBlockBytes)
	quantizeQ8K(x, a)
	qs := q8kQs(a)
	if int8(qs[0]) != -127 || q8kD(a) != 1 {
		t.Fatalf("x_m = -127: q %d d %g, want -127 and 1", int8(qs[0]), q8kD(a))
	}
	for i, w := range want {
		// iscale = −127/−127 = 1: q = round_half_even(x).
		if got := int8(qs[1+i]); got != w {
			t.Errorf("x = %g: q = %d, want %d", ins[i], got, w)
		}
	}

	// Equal magnitudes of opposite sign: the first one is x_m.
	for _, first := range []float32{-3, 3} {
		y := make([]float32, qkK)
		y[5], y[9] = first, -first
		quantizeQ8K(y, a)
		qs := q8kQs(a)
		if int8(qs[5]) != -127 || int8(qs[9]) != 127 {
			t.Errorf("tie with first %g: q[5] %d q[9] %d, want -127 127", first, int8(qs[5]), int8(qs[9]))
		}
	}
}

func BenchmarkKQuantVecDot(b *testing.B) {
	const n = 4096
	for _, typ := range kWeightTypes {
		b.Run(typ.String(), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(9, 10))
			w := randomKBlocks(rng, typ, n/qkK)
			a := make([]byte, Q8_K.RowBytes(n))
			quantizeQ8K(randomActivation(rng, n), a)
			dot := descOf(typ).vecDot
			var sink float32
			for b.Loop() {
				sink += dot(n, w, a)
			}
			_ = sink
			b.ReportMetric(float64(len(w))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

func BenchmarkQ8KQuantize(b *testing.B) {
	const n = 4096
	x := randomActivation(rand.New(rand.NewPCG(11, 12)), n)
	a := make([]byte, Q8_K.RowBytes(n))
	for b.Loop() {
		quantizeQ8K(x, a)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
}
