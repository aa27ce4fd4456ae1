package kernels

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// ownTypes are the weight types this part of the package implements.
var ownTypes = []Type{F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4}

// scaleFields says where a block keeps its f16 scale (d) and min (m),
// offsets in bytes, −1 when absent; MXFP4 keeps an E8M0 byte at 0 instead.
var scaleFields = map[Type][2]int{
	Q8_0: {0, -1}, Q4_0: {0, -1}, Q4_1: {0, 2}, Q5_0: {0, -1}, Q5_1: {0, 2}, IQ4_NL: {0, -1},
}

// randRow returns a valid random row of n elements of type t: random
// floats for float types, random code bytes with sane scales for block
// types (so formats without a quantizer are covered too).
func randRow(t *testing.T, rng *rand.Rand, typ Type, n int) []byte {
	t.Helper()
	b := make([]byte, typ.RowBytes(n))
	switch typ {
	case F32, F16, BF16:
		if err := Quantize(typ, randFloats(rng, n, 1), b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	bb := typ.BlockBytes()
	for off := 0; off < len(b); off += bb {
		if typ == MXFP4 {
			b[off] = byte(118 + rng.IntN(14)) // dE from 2^-10 to 2^3
			continue
		}
		f, ok := scaleFields[typ]
		if !ok {
			t.Fatalf("randRow: no block layout for %v", typ)
		}
		d := float32((0.001 + 0.05*rng.Float64()) * float64(1-2*rng.IntN(2)))
		binary.LittleEndian.PutUint16(b[off+f[0]:], F32ToF16(d))
		if f[1] >= 0 {
			binary.LittleEndian.PutUint16(b[off+f[1]:], F32ToF16(float32(rng.NormFloat64()*0.5)))
		}
	}
	return b
}

func dequant(t *testing.T, typ Type, b []byte, n int) []float32 {
	t.Helper()
	y := make([]float32, n)
	if err := Dequantize(typ, b, y); err != nil {
		t.Fatal(err)
	}
	return y
}

// actErrBound returns, per element of x, a bound on |x − a| where a is x
// converted to vt as QuantizeActivation does and read back.
func actErrBound(vt Type, x []float32) []float64 {
	e := make([]float64, len(x))
	switch vt {
	case F32:
	case F16:
		for i, v := range x {
			e[i] = math.Abs(float64(v))*0x1p-11 + 0x1p-25
		}
	case BF16:
		for i, v := range x {
			e[i] = math.Abs(float64(v)) * 0x1p-8
		}
	case Q8_0, Q8_1, Q8_K:
		bs := vt.BlockSize()
		for i := 0; i < len(x); i += bs {
			d := float64(absMax(x[i:i+bs])) / 127
			// half a step, plus the scale's f16 rounding times the code.
			b := d * (0.5 + 1e-5)
			if vt != Q8_K {
				b += 127 * d * 0x1p-11
			}
			for j := range bs {
				e[i+j] = b
			}
		}
	default:
		panic("actErrBound: " + vt.String())
	}
	return e
}

// minTermSlack bounds, for Q8_1 activations, the difference between the
// dot's min term f16(m)·s and the dequantized Σ m·a (s = f16(d·Σq) uses the
// unrounded d and is itself rounded).
func minTermSlack(wt Type, w, a []byte, n int) float64 {
	if VecDotType(wt) != Q8_1 {
		return 0
	}
	var slack float64
	for i := range n / qk {
		wb, ab := w[i*wt.BlockBytes():], a[i*q8_1Bytes:]
		var sq int32
		for _, q := range ab[4:q8_1Bytes] {
			sq += int32(int8(q))
		}
		m, d, s := float64(f16le(wb[2:])), float64(f16le(ab)), float64(f16le(ab[2:]))
		slack += math.Abs(m) * (math.Abs(s-d*float64(sq)) + 1e-6*math.Abs(s))
	}
	return slack
}

// TestDotMatchesDequantized checks each type's Dot two ways: tightly
// against the float64 dot of the dequantized weight and dequantized
// activation (the same math), and loosely against the float64 dot with the
// original f32 activation, within the activation's quantization error.
func TestDotMatchesDequantized(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, typ := range ownTypes {
		vt := VecDotType(typ)
		for _, nb := range []int{1, 2, 3, 7, 8, 33} {
			n := nb * 32
			for trial := range 4 {
				var w []byte
				if trial%2 == 1 && CanQuantize(typ) && typ != Q8_1 {
					w = make([]byte, typ.RowBytes(n))
					if err := Quantize(typ, randFloats(rng, n, 0.1), w); err != nil {
						t.Fatal(err)
					}
				} else {
					w = randRow(t, rng, typ, n)
				}
				x := randFloats(rng, n, 1+float64(trial))
				if trial == 3 { // a zero block and an outlier
					clear(x[:32])
					x[n-1] = 50
				}
				a := make([]byte, vt.RowBytes(n))
				QuantizeActivation(typ, x, a)
				got := float64(Dot(typ, n, w, a))

				wf, af := dequant(t, typ, w, n), dequant(t, vt, a, n)
				var tight, mag, loose, bound float64
				eb := actErrBound(vt, x)
				for i := range n {
					tight += float64(wf[i]) * float64(af[i])
					mag += math.Abs(float64(wf[i]) * float64(af[i]))
					loose += float64(wf[i]) * float64(x[i])
					bound += math.Abs(float64(wf[i])) * eb[i]
				}
				tol := 2e-6*mag + minTermSlack(typ, w, a, n) + 1e-30
				if d := math.Abs(got - tight); d > tol {
					t.Errorf("%v n=%d trial %d: Dot %v vs dequantized %v: diff %g > %g", typ, n, trial, got, tight, d, tol)
				}
				if d := math.Abs(got - loose); d > tol+bound {
					t.Errorf("%v n=%d trial %d: Dot %v vs f32 activation %v: diff %g > %g", typ, n, trial, got, loose, d, tol+bound)
				}
			}
		}
	}
}

// quantErrBound bounds |x − dequant(quant(x))| for one block of a
// quantizable type (the reference round-to-nearest quantizers).
func quantErrBound(typ Type, x []float32) float64 {
	amax := float64(absMax(x))
	lo, hi := minMax(x)
	slop := 1e-6 * amax
	switch typ {
	case F32:
		return 0
	case F16:
		return amax*0x1p-11 + 0x1p-25
	case BF16:
		return amax * 0x1p-8
	case Q8_0:
		d := amax / 127
		return d*0.5 + 127*d*0x1p-11 + slop
	case Q4_0, Q5_0:
		// The largest-magnitude element maps to −8 (−16) exactly; one of the
		// opposite sign can clamp at +7 (+15), a full step away.
		d := amax / 8
		if typ == Q5_0 {
			d = amax / 16
		}
		return d + 16*d*0x1p-11 + slop
	case Q4_1, Q5_1:
		steps := 15.0
		if typ == Q5_1 {
			steps = 31
		}
		d := float64(hi-lo) / steps
		return d*0.5 + steps*d*0x1p-11 + math.Abs(float64(lo))*0x1p-11 + slop
	}
	panic("quantErrBound: " + typ.String())
}

func TestQuantizeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, typ := range ownTypes {
		if !CanQuantize(typ) {
			continue
		}
		for trial := range 20 {
			n := 32 * (1 + rng.IntN(9))
			x := randFloats(rng, n, math.Pow(10, float64(trial%5-2)))
			if trial%4 == 3 {
				for i := range x {
					x[i] = float32(math.Abs(float64(x[i])) + 1) // all positive: exercises the min
				}
			}
			if trial == 0 {
				clear(x[:32])
			}
			b := make([]byte, typ.RowBytes(n))
			if err := Quantize(typ, x, b); err != nil {
				t.Fatal(err)
			}
			y := dequant(t, typ, b, n)
			bs := max(typ.BlockSize(), 32)
			for i := 0; i < n; i += bs {
				lim := quantErrBound(typ, x[i:i+bs])
				for j := i; j < i+bs; j++ {
					if d := math.Abs(float64(x[j]) - float64(y[j])); d > lim {
						t.Fatalf("%v trial %d: element %d: %v → %v, error %g > %g", typ, trial, j, x[j], y[j], d, lim)
					}
				}
			}
		}
	}
}

// TestQ8_0Rounding pins the two rounding rules of ../shared/spec/gguf-and-quants.md §4.2 on a block with
// amax = 127 (so d = 1 and both multipliers are exactly 1): the reference
// weight quantizer rounds halves away from zero, the x86 activation
// quantizer to even.
func TestQ8_0Rounding(t *testing.T) {
	x := make([]float32, 32)
	x[0], x[1], x[2], x[3], x[4] = 127, 2.5, -2.5, 3.5, -0.5
	ref := make([]byte, q8_0Bytes)
	if err := Quantize(Q8_0, x, ref); err != nil {
		t.Fatal(err)
	}
	act := make([]byte, q8_0Bytes)
	QuantizeActivation(Q8_0, x, act)
	wantRef := []int8{127, 3, -3, 4, -1}
	wantAct := []int8{127, 2, -2, 4, 0}
	for i := range wantRef {
		if int8(ref[2+i]) != wantRef[i] || int8(act[2+i]) != wantAct[i] {
			t.Errorf("x=%v: reference %d (want %d), activation %d (want %d)", x[i], int8(ref[2+i]), wantRef[i], int8(act[2+i]), wantAct[i])
		}
	}
	if F16ToF32(binary.LittleEndian.Uint16(act)) != 1 {
		t.Errorf("activation d = %v, want 1", F16ToF32(binary.LittleEndian.Uint16(act)))
	}
}

// TestActivationQ8Model checks the x86 activation quantizers against a
// float64 restatement of ../shared/spec/gguf-and-quants.md §4.2 on random data.
func TestActivationQ8Model(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for range 200 {
		x := randFloats(rng, 64, math.Pow(10, float64(rng.IntN(6)-3)))
		a0, a1 := make([]byte, 2*q8_0Bytes), make([]byte, 2*q8_1Bytes)
		QuantizeActivation(Q4_0, x, a0)
		QuantizeActivation(Q4_1, x, a1)
		for b := range 2 {
			blk := x[32*b : 32*b+32]
			var amax float32
			for _, v := range blk {
				amax = max(amax, float32(math.Abs(float64(v))))
			}
			d := amax / 127
			id := float32(127) / amax
			var sum int
			for j, v := range blk {
				q := int(math.RoundToEven(float64(float32(v * id))))
				q = max(-128, min(127, q))
				sum += q
				if int8(a0[b*q8_0Bytes+2+j]) != int8(q) || int8(a1[b*q8_1Bytes+4+j]) != int8(q) {
					t.Fatalf("element %d: Q8_0 %d, Q8_1 %d, want %d", j, int8(a0[b*q8_0Bytes+2+j]), int8(a1[b*q8_1Bytes+4+j]), q)
				}
			}
			if got := binary.LittleEndian.Uint16(a0[b*q8_0Bytes:]); got != F32ToF16(d) {
				t.Fatalf("Q8_0 d = %#04x, want %#04x", got, F32ToF16(d))
			}
			if got := binary.LittleEndian.Uint16(a1[b*q8_1Bytes+2:]); got != F32ToF16(d*float32(sum)) {
				t.Fatalf("Q8_1 s = %#04x, want %#04x", got, F32ToF16(d*float32(sum)))
			}
		}
	}
}

func TestUnsupportedTypes(t *testing.T) {
	dst := make([]float32, 256)
	src := make([]byte, 4096)
	for _, typ := range []Type{IQ2_XXS, TQ1_0, Type(4), Type(999)} {
		if err := Dequantize(typ, src, dst); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Dequantize(%v) = %v, want ErrUnsupported", typ, err)
		}
		if err := Quantize(typ, dst, src); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Quantize(%v) = %v, want ErrUnsupported", typ, err)
		}
		if CanQuantize(typ) || CanMatMul(typ) {
			t.Errorf("%v claims support", typ)
		}
	}
	if err := Dequantize(Q4_0, src[:10], dst[:32]); err == nil {
		t.Error("Dequantize with a short source succeeded")
	}
	if err := Dequantize(Q4_0, src, dst[:33]); err == nil {
		t.Error("Dequantize of a partial block succeeded")
	}
	if err := Quantize(Q8_0, dst[:32], src[:35]); err != nil {
		t.Errorf("Quantize with room to spare: %v", err)
	}
	if err := Quantize(Q8_0, dst[:64], src[:40]); err == nil {
		t.Error("Quantize into a short buffer succeeded")
	}
}
