package kernels

// Tests of the Q2_K, Q3_K and IQ4_XS SIMD matmuls through the kernel
// sets a run selects, beside the panel-level tests in simd_test.go
// (simdKTypes), which check each kernel bit for bit against its twin.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestKQuantSIMDVariants runs every variant of the Q2_K, Q3_K and IQ4_XS
// matmuls that this CPU supports through KernelSet.MatMul on odd shapes
// (rows and tokens not multiples of the 16-row panel or of the token
// group) with guard values around the output. Each must agree with the
// plain "go" variant, the ggml emulation, within the float bound: both
// sum the same exact integer block sums, so they differ only by their
// float roundings, at most two per super-block term and one per
// accumulation, which simdTol's K·2⁻²⁴·Σ|w·a| (K elements, not K/256
// super-blocks) covers with room for Q2_K's min term cancelling its scale
// term. Every SIMD variant must give the Go twins' ("gotile") bits.
func TestKQuantSIMDVariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	p := NewPool(2)
	defer p.Close()
	type shape struct{ rows, cols, tok int }
	for _, wt := range []Type{IQ4_XS, Q3_K, Q2_K} {
		op := MatMulOp(wt)
		for _, sh := range []shape{{37, 768, 13}, {16, 256, 1}, {5, 512, 6}, {50, 1280, 9}} {
			w := simdMatrix(t, rng, wt, sh.rows, sh.cols)
			x := simdFloats(rng, sh.tok*sh.cols, 1)
			n := sh.tok * sh.rows
			plain := make([]float32, n)
			MatMul(p, plain, w, x, sh.tok, nil)
			mag := make([]float64, n)
			vt := VecDotType(wt)
			conv := make([]byte, vt.RowBytes(sh.cols))
			af, wf := make([]float32, sh.cols), make([]float32, sh.cols)
			for tok := range sh.tok {
				QuantizeActivation(wt, x[tok*sh.cols:(tok+1)*sh.cols], conv)
				if err := Dequantize(vt, conv, af); err != nil {
					t.Fatal(err)
				}
				for r := range sh.rows {
					DequantizeRow(w, r, wf)
					_, mag[tok*sh.rows+r] = simdRefDot(wf, af)
				}
			}
			outs := map[string][]float32{}
			for _, s := range variantSets(t, op) {
				if s.name == "go" || s.name == "ref" {
					continue
				}
				name := fmt.Sprintf("%v/%s/%dx%d/tok%d", wt, s.name, sh.rows, sh.cols, sh.tok)
				g := newGuarded(1, n)
				var ms MatScratch
				for range 2 { // the second call reuses the scratch
					s.ks.MatMul(p, g.at(0), w, x, sh.tok, &ms)
				}
				g.check(t, name)
				for i, v := range g.at(0) {
					if d, tol := math.Abs(float64(v-plain[i])), 2*simdTol(sh.cols, mag[i]); d > tol {
						t.Fatalf("%s: out[%d] = %v, go variant %v (|Δ|=%g > %g)", name, i, v, plain[i], d, tol)
					}
				}
				outs[s.name] = append([]float32(nil), g.at(0)...)
			}
			twin := outs["gotile"]
			if twin == nil {
				t.Fatalf("%v: no gotile variant", wt)
			}
			for isa, out := range outs {
				for i := range out {
					if math.Float32bits(out[i]) != math.Float32bits(twin[i]) {
						t.Fatalf("%v %s %dx%d tok%d: out[%d] = %v, gotile %v (must be bit-identical)",
							wt, isa, sh.rows, sh.cols, sh.tok, i, out[i], twin[i])
					}
				}
			}
			if len(outs) < 2 {
				t.Logf("%v: only the Go twins run here (%s)", wt, CPU())
			}
		}
	}
}
