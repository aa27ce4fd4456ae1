package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// matMulTestTypes are the weight types MatMul is tested on: this file's own
// types plus any other registered type that can be quantized (the K-quants),
// which exercises the trait-table integration.
func matMulTestTypes() []Type {
	ts := append([]Type(nil), ownTypes...)
	for _, typ := range []Type{Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS} {
		if CanMatMul(typ) && CanQuantize(typ) {
			ts = append(ts, typ)
		}
	}
	return ts
}

func weightRow(t *testing.T, rng *rand.Rand, typ Type, n int) []byte {
	if _, ok := scaleFields[typ]; ok || typ == MXFP4 || typ == F32 || typ == F16 || typ == BF16 {
		return randRow(t, rng, typ, n)
	}
	b := make([]byte, typ.RowBytes(n))
	if err := Quantize(typ, randFloats(rng, n, 0.1), b); err != nil {
		t.Fatal(err)
	}
	return b
}

const guard = 12345.678

// pathDot is the dot MatMul must reproduce bit for bit for row r of w and
// one converted activation row: tinyBLAS order for the float matrices
// llamafile takes, else the block dot of the path (Dot, or the repacked
// Q4_0 dot).
func pathDot(t *testing.T, w *Matrix, r int, act []byte, nTok int) float32 {
	if (w.Type == F32 || w.Type == F16) && floatTiny(w, nTok) {
		return DotTiny(dequant(t, w.Type, w.Row(r), w.Cols), dequant(t, w.Type, act, w.Cols), w.Type == F16)
	}
	return blockDot(w)(w.Cols, w.Row(r), act)
}

// TestMatMul compares MatMul with MatMulRef (within the activation
// conversion error) and with per-row path dots (bit-exact: the same
// kernels), on odd shapes, 1 and 2 threads, with guard values after out.
func TestMatMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	pools := []*Pool{nil, NewPool(1), NewPool(2)}
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	var scratch MatScratch // shared across shapes and types on purpose
	for _, typ := range matMulTestTypes() {
		bs := max(typ.BlockSize(), 32)
		for _, rows := range []int{1, 7, 8, 33} { // 8: tinyBLAS and the Q4_0 repack
			for _, cb := range []int{1, 3} {
				cols := cb * bs
				if typ.BlockSize() == 1 && cb == 3 {
					cols = 100 // not a multiple of 8: the vec_dot fallback
				}
				w := &Matrix{Type: typ, Rows: rows, Cols: cols}
				for range rows {
					w.Data = append(w.Data, weightRow(t, rng, typ, cols)...)
				}
				for _, nTok := range []int{1, 3, 17} {
					x := randFloats(rng, nTok*cols, 1)
					ref := make([]float32, nTok*rows)
					MatMulRef(ref, w, x, nTok)
					vt := VecDotType(typ)
					acts := make([][]byte, nTok)
					for tk := range nTok {
						acts[tk] = make([]byte, vt.RowBytes(cols))
						QuantizeActivation(typ, x[tk*cols:(tk+1)*cols], acts[tk])
					}
					for pi, p := range pools {
						name := fmt.Sprintf("%v %dx%d nTok=%d pool=%d", typ, rows, cols, nTok, pi)
						out := make([]float32, nTok*rows+8)
						for i := range out {
							out[i] = guard
						}
						MatMul(p, out, w, x, nTok, &scratch)
						for i := nTok * rows; i < len(out); i++ {
							if out[i] != guard {
								t.Fatalf("%s: wrote past out at %d", name, i)
							}
						}
						for tk := range nTok {
							xt := x[tk*cols : (tk+1)*cols]
							eb := actErrBound(vt, xt)
							for r := range rows {
								got := out[tk*rows+r]
								if want := pathDot(t, w, r, acts[tk], nTok); got != want {
									t.Fatalf("%s: out[%d,%d] = %v, path dot %v", name, tk, r, got, want)
								}
								wf := dequant(t, typ, w.Row(r), cols)
								var bound, mag float64
								for i := range cols {
									bound += math.Abs(float64(wf[i])) * eb[i]
									mag += math.Abs(float64(wf[i]) * float64(xt[i]))
								}
								tol := bound + 1e-5*mag + minTermSlack(typ, w.Row(r), acts[tk], cols) + 1e-30
								if d := math.Abs(float64(got) - float64(ref[tk*rows+r])); d > tol {
									t.Fatalf("%s: out[%d,%d] = %v, reference %v: diff %g > %g", name, tk, r, got, ref[tk*rows+r], d, tol)
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestMatMulUnalignedF32 covers F32 weights whose bytes are not 4-aligned
// (decoded instead of read in place).
func TestMatMulUnalignedF32(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	rows, cols, nTok := 9, 40, 5
	buf := make([]byte, rows*cols*4+1)
	w := &Matrix{Type: F32, Rows: rows, Cols: cols, Data: buf[1:]}
	quantizeF32(randFloats(rng, rows*cols, 1), w.Data)
	x := randFloats(rng, nTok*cols, 1)
	got, want := make([]float32, nTok*rows), make([]float32, nTok*rows)
	MatMul(nil, got, w, x, nTok, nil)
	MatMulRef(want, w, x, nTok)
	for i := range got {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("out[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestMatMulNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for _, typ := range []Type{F32, F16, Q8_0, Q4_1} {
		w := &Matrix{Type: typ, Rows: 16, Cols: 64}
		for range w.Rows {
			w.Data = append(w.Data, weightRow(t, rng, typ, w.Cols)...)
		}
		x := randFloats(rng, 4*w.Cols, 1)
		out := make([]float32, 4*w.Rows)
		var s MatScratch
		MatMul(nil, out, w, x, 4, &s)
		if n := testing.AllocsPerRun(10, func() { MatMul(nil, out, w, x, 4, &s) }); n != 0 {
			t.Errorf("%v: %v allocations per call with scratch", typ, n)
		}
	}
}

func TestMatMulPanicsOnBadShapes(t *testing.T) {
	w := &Matrix{Type: Q8_0, Rows: 2, Cols: 32, Data: make([]byte, 2*q8_0Bytes)}
	cases := map[string]func(){
		"short x":   func() { MatMul(nil, make([]float32, 4), w, make([]float32, 63), 2, nil) },
		"short out": func() { MatMul(nil, make([]float32, 3), w, make([]float32, 64), 2, nil) },
		"short data": func() {
			MatMul(nil, make([]float32, 2), &Matrix{Type: Q8_0, Rows: 2, Cols: 32, Data: w.Data[:40]}, make([]float32, 32), 1, nil)
		},
		"partial block": func() {
			MatMul(nil, make([]float32, 2), &Matrix{Type: Q8_0, Rows: 1, Cols: 40, Data: w.Data}, make([]float32, 40), 1, nil)
		},
		"no dot": func() {
			MatMul(nil, make([]float32, 2), &Matrix{Type: Q8_1, Rows: 1, Cols: 32, Data: make([]byte, 36)}, make([]float32, 32), 1, nil)
		},
	}
	for name, f := range cases {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// BenchmarkMatMul measures 1024×1024 weights against 64 tokens.
func BenchmarkMatMul(b *testing.B) {
	const rows, cols, nTok = 1024, 1024, 64
	rng := rand.New(rand.NewPCG(27, 28))
	for _, typ := range []Type{F32, F16, Q8_0, Q4_0} {
		b.Run(typ.String(), func(b *testing.B) {
			w := &Matrix{Type: typ, Rows: rows, Cols: cols, Data: make([]byte, typ.RowBytes(cols)*rows)}
			if err := Quantize(typ, randFloats(rng, rows*cols, 0.1), w.Data); err != nil {
				b.Fatal(err)
			}
			x := randFloats(rng, nTok*cols, 1)
			out := make([]float32, nTok*rows)
			p := NewPool(0)
			defer p.Close()
			var s MatScratch
			b.ReportAllocs()
			for b.Loop() {
				MatMul(p, out, w, x, nTok, &s)
			}
			b.ReportMetric(2*rows*cols*nTok*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
