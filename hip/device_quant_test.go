package hip

// device_quant_test.go: the quantized formats on the device (blocks.h):
// the activation quantizers (quant.cu), every weight type's product
// (quant.cu) and embedding lookup (embed.cu), each against its CPU twin
// on fresh random inputs of odd sizes with guard values.
//
// The products' oracle is the float64 sum of each block's exact terms,
// scaled as the type's vecDot scales them. A block's integer levels come
// from kernels.Dequantize itself, on a copy of the block whose scales are
// set to d = 1, dmin = 0 (the levels times their sub-block scales) or
// d = 0, dmin = 1 (minus the mins): no decoder is written twice.

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"plexbench/kernels"
)

// quantLayout is where a weight type keeps its block scales: the f16 d
// and the f16 min (dmin for the K-quants, m for Q4_1/Q5_1; −1: none).
// MXFP4's d is its E8M0 byte at 0.
type quantLayout struct {
	typ     kernels.Type
	d, dmin int
}

func quantLayouts() []quantLayout {
	return []quantLayout{
		{kernels.Q4_0, 0, -1}, {kernels.Q4_1, 0, 2}, {kernels.Q5_0, 0, -1}, {kernels.Q5_1, 0, 2}, {kernels.Q8_0, 0, -1},
		{kernels.IQ4_NL, 0, -1}, {kernels.MXFP4, 0, -1}, {kernels.Q2_K, 80, 82}, {kernels.Q3_K, 108, -1},
		{kernels.Q4_K, 0, 2}, {kernels.Q5_K, 0, 2}, {kernels.Q6_K, 208, -1}, {kernels.IQ4_XS, 0, -1},
	}
}

func (q quantLayout) name() string { return strings.ToLower(q.typ.String()) }

// scale reads the block's d (which = d) or min (which = dmin).
func (q quantLayout) scale(blk []byte, off int) float32 {
	if q.typ == kernels.MXFP4 {
		return float32(math.Ldexp(1, int(blk[0])-128))
	}
	return kernels.F16ToF32(binary.LittleEndian.Uint16(blk[off:]))
}

// levels is kernels.Dequantize of blk with d and the min replaced: with
// (1, 0) the integer levels times their sub-block scales, with (0, 1) the
// negated sub-block mins of the K-quants.
func (q quantLayout) levels(blk []byte, d, dmin float32) []int {
	c := append([]byte(nil), blk...)
	if q.typ == kernels.MXFP4 {
		c[0] = 128 // 2^0
	} else {
		binary.LittleEndian.PutUint16(c[q.d:], kernels.F32ToF16(d))
	}
	if q.dmin >= 0 {
		binary.LittleEndian.PutUint16(c[q.dmin:], kernels.F32ToF16(dmin))
	}
	f := make([]float32, q.typ.BlockSize())
	if err := kernels.Dequantize(q.typ, c, f); err != nil {
		panic(err)
	}
	out := make([]int, len(f))
	for i, v := range f {
		out[i] = int(v)
		if float32(out[i]) != v {
			panic("a level that is not an integer")
		}
	}
	return out
}

// quantWeights is a (rows, cols) matrix of typ: random weights through the
// CPU's quantizer, or random codes under sane scales for the types without
// one (IQ4_NL, MXFP4); the first block is all zero (d = 0).
func quantWeights(r *rand.Rand, typ kernels.Type, rows, cols int) []byte {
	data := make([]byte, rows*typ.RowBytes(cols))
	if kernels.CanQuantize(typ) {
		w := randF32(r, rows*cols, 0.05)
		for i := range typ.BlockSize() {
			w[i] = 0
		}
		for i := range cols / 8 {
			w[cols+i] *= 40 // a row of large weights in a few blocks
		}
		if err := kernels.Quantize(typ, w, data); err != nil {
			panic(err)
		}
		return data
	}
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	bb := typ.BlockBytes()
	for b := 0; b < len(data); b += bb {
		if typ == kernels.MXFP4 {
			data[b] = byte(118 + r.IntN(16))
		} else {
			binary.LittleEndian.PutUint16(data[b:], kernels.F32ToF16(0.001+0.01*r.Float32()))
		}
	}
	clear(data[:bb])
	return data
}

// quantActs is m rows of k ≥ 512 activations with, from 4 rows on, guard
// values: a zero block, a tie for the largest magnitude (+3 and −3), tiny
// and large values.
func quantActs(r *rand.Rand, m, k int) []float32 {
	x := randF32(r, m*k, 1)
	if m < 4 {
		return x
	}
	clear(x[k : k+256])
	x[2*k+7], x[2*k+100] = -3, 3
	x[2*k+300], x[2*k+301] = 1e-30, -1e-38
	x[3*k+5] = 1e4
	return x
}

func TestDeviceQuantizeActivations(t *testing.T) { onDevices(t, checkQuantizeActivations) }

// checkQuantizeActivations: quantize_q8_0/q8_1/q8_k against
// kernels.QuantizeActivation, byte for byte over whole rows.
func checkQuantizeActivations(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	const m, k = 5, 1280
	x := quantActs(r, m, k)
	bx := upload(t, f32Bytes(x))
	for _, c := range []struct {
		weights kernels.Type // a weight type whose vec_dot type this is
		entry   string
	}{{kernels.Q4_0, "quantize_q8_0"}, {kernels.Q4_1, "quantize_q8_1"}, {kernels.Q4_K, "quantize_q8_k"}} {
		f := fn(t, "quant.cu", c.entry)
		at := kernels.VecDotType(c.weights)
		rb := at.RowBytes(k)
		want := make([]byte, m*rb)
		for i := range m {
			kernels.QuantizeActivation(c.weights, x[i*k:(i+1)*k], want[i*rb:(i+1)*rb])
		}
		bq := output(t, len(want))
		nb := m * k / at.BlockSize()
		var a Args
		a.Ptr(bx, 0).Ptr(bq, 0).U64(uint64(nb))
		launch(t, f, Dim3{X: (nb + 255) / 256}, Dim3{X: 256}, &a)
		got, bad := download(t, bq, len(want)), 0
		for i := range got {
			if got[i] != want[i] {
				bad++
			}
		}
		check(t, c.entry+" zeros, ties, tiny (bytes differing)", float64(bad), 0)
	}
}

func TestDeviceMatMulQuant(t *testing.T) { onDevices(t, checkMatMulQuant) }

// checkMatMulQuant: mm_<type> for every quantized weight type, on the
// CPU's quantized activations, against the float64 sum of exact terms.
func checkMatMulQuant(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	for _, q := range quantLayouts() {
		f := fn(t, "quant.cu", "mm_"+q.name())
		worst := 0.0
		for _, c := range []struct{ N, K, M int }{{67, 1280, 9}, {33, 768, 1}} {
			if q.typ.BlockSize() == 32 {
				c.K = 1440 // 45 blocks: more than a warp's lanes at 32, fewer at 64
			}
			w, x := quantWeights(r, q.typ, c.N, c.K), quantActs(r, c.M, c.K)
			at := kernels.VecDotType(q.typ)
			arb := at.RowBytes(c.K)
			xq := make([]byte, c.M*arb)
			for m := range c.M {
				kernels.QuantizeActivation(q.typ, x[m*c.K:(m+1)*c.K], xq[m*arb:(m+1)*arb])
			}
			bw, bx, by := upload(t, w), upload(t, xq), output(t, 4*c.M*c.N)
			var a Args
			a.Ptr(bw, 0).Ptr(bx, 0).Ptr(by, 0).I32(int32(c.N)).I32(int32(c.K)).I32(int32(c.M))
			launch(t, f, Dim3{X: c.N, Y: c.M}, Dim3{X: warpSize(t)}, &a)
			got := bytesF32(download(t, by, 4*c.M*c.N))
			want, mag := q.refProduct(w, xq, c.N, c.K, c.M)
			for i := range got {
				worst = max(worst, math.Abs(float64(got[i])-want[i])/(mag[i]+1e-30))
			}
		}
		tol := 1e-5
		if q.typ.BlockSize() == 256 {
			tol = 1e-6
		}
		check(t, "mm_"+q.name()+" (err/Σ|terms|)", worst, tol)
	}
}

// refProduct is y = W·x over quantized activations xq as the float64 sum
// of each block's exact terms, and Σ|terms|.
func (q quantLayout) refProduct(w, xq []byte, N, K, M int) (y, mag []float64) {
	bs, bb := q.typ.BlockSize(), q.typ.BlockBytes()
	at := kernels.VecDotType(q.typ)
	abb, nb := at.BlockBytes(), K/bs
	lv, mn := make([][]int, N*nb), make([][]int, N*nb)
	for i := range lv {
		blk := w[i*bb : (i+1)*bb]
		lv[i] = q.levels(blk, 1, 0)
		if q.dmin >= 0 && bs == 256 {
			mn[i] = q.levels(blk, 0, 1)
		}
	}
	y, mag = make([]float64, M*N), make([]float64, M*N)
	for m := range M {
		for n := range N {
			var s, a float64
			for b := range nb {
				wb, ab := w[(n*nb+b)*bb:], xq[(m*nb+b)*abb:]
				for _, term := range q.blockTerms(wb, ab, at, lv[n*nb+b], mn[n*nb+b]) {
					s += term
					a += math.Abs(term)
				}
			}
			y[m*N+n], mag[m*N+n] = s, a
		}
	}
	return y, mag
}

// blockTerms are one block's terms: f32(d_w·d_a)·Σ lv·q_a, and the min's:
// f32(m·s_a) (Q8_1), −f32(d_a·dmin)·Σ mn·q_a (Q8_K; mn holds −mn).
func (q quantLayout) blockTerms(wb, ab []byte, at kernels.Type, lv, mn []int) []float64 {
	f16 := func(b []byte) float32 { return kernels.F16ToF32(binary.LittleEndian.Uint16(b)) }
	var da float32
	var qa []byte
	switch at {
	case kernels.Q8_0:
		da, qa = f16(ab), ab[2:34]
	case kernels.Q8_1:
		da, qa = f16(ab), ab[4:36]
	default: // Q8_K
		da, qa = math.Float32frombits(binary.LittleEndian.Uint32(ab)), ab[4:260]
	}
	dot := func(l []int) float64 {
		s := 0
		for j, v := range l {
			s += v * int(int8(qa[j]))
		}
		return float64(s)
	}
	terms := []float64{float64(q.scale(wb, q.d)*da) * dot(lv)}
	switch {
	case at == kernels.Q8_1:
		terms = append(terms, float64(q.scale(wb, q.dmin)*f16(ab[2:])))
	case mn != nil:
		terms = append(terms, float64(da*q.scale(wb, q.dmin))*dot(mn))
	}
	return terms
}
