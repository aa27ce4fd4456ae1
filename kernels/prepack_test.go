package kernels

// Tests of PackedMatrix: MatMulPacked is bit-identical to MatMul with the
// same variant (the kernels read the same panel bytes), on odd shapes with
// partial panels and token tails, without allocating; variants that read
// no panels are refused.

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func TestMatMulPackedBitIdentical(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	rng := rand.New(rand.NewPCG(61, 62))
	for _, wt := range []Type{Q8_0, Q4_0, Q5_0, IQ4_NL, MXFP4, Q4_K, Q5_K, Q6_K} {
		for _, isa := range []string{"avx512", "avx2", "gotile"} {
			v := lookup(MatMulOp(wt), isa)
			if v == nil || !v.supported(CPU()) {
				continue
			}
			ks, err := ParseKernels(MatMulOp(wt) + "=" + isa)
			if err != nil {
				t.Fatal(err)
			}
			if !ks.CanPrepack(wt) {
				t.Fatalf("%v/%s: CanPrepack false for a panel variant", wt, isa)
			}
			cols := 2 * wt.BlockSize()
			if wt.BlockSize() == qk {
				cols = 5 * qk
			}
			// Rows: under one panel, whole panels, a partial last panel,
			// and enough panels that workers claim several at once and
			// prefetch the next.
			for _, rows := range []int{7, 32, 53, 40*panelRows + 5} {
				for _, nTok := range []int{1, 9, 21} {
					if isa == "gotile" && nTok > 9 {
						continue
					}
					name := fmt.Sprintf("%v/%s/%dx%d/tok%d", wt, isa, rows, cols, nTok)
					w := &Matrix{Type: wt, Rows: rows, Cols: cols, Data: make([]byte, rows*wt.RowBytes(cols))}
					fillPackTest(t, rng, w)
					x := simdFloats(rng, nTok*cols, 1)
					pm, err := ks.Prepack(p, w)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if pm.Matrix() != w || pm.Bytes() == 0 || pm.Bytes() != ks.PackedBytes(w) {
						t.Fatalf("%s: packed matrix %p, %d bytes", name, pm.Matrix(), pm.Bytes())
					}
					// Guard values after the outputs catch overruns.
					want := make([]float32, nTok*rows+16)
					got := make([]float32, nTok*rows+16)
					for i := range got {
						want[i], got[i] = -7, -7
					}
					var s1, s2 MatScratch
					ks.MatMul(p, want[:nTok*rows], w, x, nTok, &s1)
					ks.MatMulPacked(p, got[:nTok*rows], pm, x, nTok, &s2)
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s: out[%d] = %v packed, %v unpacked", name, i, got[i], want[i])
						}
					}
					// Unpacked again through the same scratch: the pack
					// does not stick to it.
					ks.MatMul(p, got[:nTok*rows], w, x, nTok, &s2)
					if s2.simd.packed != nil {
						t.Fatalf("%s: scratch still holds the packed matrix", name)
					}
				}
			}
		}
	}
}

// fillPackTest fills w with quantized random rows, or for the types
// without a quantizer with random levels and a small valid scale.
func fillPackTest(t *testing.T, rng *rand.Rand, w *Matrix) {
	t.Helper()
	switch w.Type {
	case IQ4_NL, MXFP4:
		for i := range w.Data {
			w.Data[i] = byte(rng.Uint32())
		}
		bb := w.Type.BlockBytes()
		for o := 0; o < len(w.Data); o += bb {
			if w.Type == MXFP4 {
				w.Data[o] = byte(120 + rng.IntN(8)) // e8m0 2^-7..2^0
			} else {
				binary.LittleEndian.PutUint16(w.Data[o:], F32ToF16(float32(0.001+0.01*rng.Float64())))
			}
		}
		return
	}
	for r := range w.Rows {
		if err := Quantize(w.Type, simdFloats(rng, w.Cols, 0.05), w.Row(r)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMatMulPackedNoAlloc(t *testing.T) {
	v := lookup(MatMulOp(Q8_0), "avx512")
	if v == nil || !v.supported(CPU()) {
		t.Skip("matmul.q8_0=avx512 is not supported on this CPU")
	}
	p := NewPool(2)
	defer p.Close()
	rng := rand.New(rand.NewPCG(63, 64))
	const rows, cols, nTok = 80, 256, 13
	w := &Matrix{Type: Q8_0, Rows: rows, Cols: cols, Data: make([]byte, rows*Q8_0.RowBytes(cols))}
	for r := range rows {
		if err := Quantize(Q8_0, simdFloats(rng, cols, 0.05), w.Row(r)); err != nil {
			t.Fatal(err)
		}
	}
	var ks KernelSet
	pm, err := ks.Prepack(p, w)
	if err != nil {
		t.Fatal(err)
	}
	x := simdFloats(rng, nTok*cols, 1)
	out := make([]float32, nTok*rows)
	var s MatScratch
	ks.MatMulPacked(p, out, pm, x, nTok, &s)
	if n := testing.AllocsPerRun(20, func() { ks.MatMulPacked(p, out, pm, x, nTok, &s) }); n != 0 {
		t.Errorf("MatMulPacked allocates %v times per call in steady state", n)
	}
}

func TestPrepackRefused(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	w := &Matrix{Type: F16, Rows: 4, Cols: 32, Data: make([]byte, 4*F16.RowBytes(32))}
	for _, spec := range []string{"", "matmul=go", "matmul=ref"} {
		ks, err := ParseKernels(spec)
		if err != nil {
			t.Fatal(err)
		}
		if ks.CanPrepack(F16) || ks.PackedBytes(w) != 0 {
			t.Errorf("%q: CanPrepack(F16) is true or PackedBytes %d", spec, ks.PackedBytes(w))
		}
		if pm, err := ks.Prepack(p, w); err == nil || pm != nil {
			t.Errorf("%q: Prepack(F16) = %v, %v; want an error", spec, pm, err)
		}
	}
	q := &Matrix{Type: Q8_0, Rows: 4, Cols: 32, Data: make([]byte, 4*Q8_0.RowBytes(32))}
	for _, spec := range []string{"matmul=go", "matmul=ref"} {
		ks, _ := ParseKernels(spec)
		if _, err := ks.Prepack(p, q); err == nil {
			t.Errorf("%q: Prepack(Q8_0) succeeded", spec)
		}
	}
	bad := &Matrix{Type: Q8_0, Rows: 4, Cols: 32, Data: make([]byte, 10)}
	if _, err := (KernelSet{}).Prepack(p, bad); err == nil {
		t.Error("Prepack of a matrix shorter than its shape succeeded")
	}
}

// BenchmarkMatMulPacked measures the LM head shape (151936 × 1024, 128
// tokens) in Q8_0 with the default variant, repacking per call against
// prepacked panels, in GFLOP/cpu-s as BenchmarkSIMDMatMul.
func BenchmarkMatMulPacked(b *testing.B) {
	var ks KernelSet
	if !ks.CanPrepack(Q8_0) {
		b.Skip("the default matmul.q8_0 variant reads no panels")
	}
	p := NewPool(0)
	defer p.Close()
	sh := headShape
	rng := rand.New(rand.NewPCG(31, uint64(sh.rows)))
	w := &Matrix{Type: Q8_0, Rows: sh.rows, Cols: sh.cols, Data: make([]byte, sh.rows*Q8_0.RowBytes(sh.cols))}
	q := make([]byte, Q8_0.RowBytes(sh.cols))
	if err := Quantize(Q8_0, simdFloats(rng, sh.cols, 0.05), q); err != nil {
		b.Fatal(err)
	}
	bb := Q8_0.BlockBytes()
	for r := range sh.rows {
		off := (r * bb) % len(q)
		copy(w.Row(r), q[off:])
		copy(w.Row(r)[len(q)-off:], q[:off])
	}
	x := simdFloats(rng, sh.toks*sh.cols, 1)
	out := make([]float32, sh.toks*sh.rows)
	pm, err := ks.Prepack(p, w)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		run  func(s *MatScratch)
	}{
		{"repack", func(s *MatScratch) { ks.MatMul(p, out, w, x, sh.toks, s) }},
		{"packed", func(s *MatScratch) { ks.MatMulPacked(p, out, pm, x, sh.toks, s) }},
	} {
		b.Run("Q8_0/"+sh.name+"/"+c.name, func(b *testing.B) {
			var s MatScratch
			c.run(&s)
			b.ReportAllocs()
			cpu0 := cpuSeconds()
			for b.Loop() {
				c.run(&s)
			}
			flop := 2 * float64(sh.rows) * float64(sh.cols) * float64(sh.toks) * float64(b.N)
			b.ReportMetric(flop/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			b.ReportMetric(flop/(cpuSeconds()-cpu0)/1e9, "GFLOP/cpu-s")
		})
	}
}
