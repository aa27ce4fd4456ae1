package kernels

// This file owns the rotation of rotary position embedding with ggml's
// CPU numerics (the engine builds the cos/sin table): the set's entry
// point and the plain Go loop. The AVX2 kernel (rope_avx2_amd64.s) runs
// the same fused and rounded products lane by lane, so it gives the Go
// loop's bits and is bound under the one "go" variant.

// RoPE rotates the first 2·len(cos) dims of every hd-long head in v in
// place: pair i turns by the angle whose cosine and sine are cos[i] and
// sin[i]. NORM pairs (neox false) are the adjacent dims (2i, 2i+1), NEOX
// pairs the halves (i, i+len(cos)). As ggml's C compiled with
// contraction, each output fuses its first product with the add and
// rounds the second alone: x0' = fma(x0, cos, −(x1·sin)), x1' = fma(x0,
// sin, x1·cos). len(v) must be a multiple of hd, 2·len(cos) ≤ hd and
// len(sin) ≥ len(cos).
func (ks KernelSet) RoPE(v []float32, hd int, cos, sin []float32, neox bool) {
	half := len(cos)
	if half == 0 || len(v) == 0 {
		return
	}
	if 2*half > hd || len(v)%hd != 0 || len(sin) < half {
		panic("kernels: RoPE: bad shapes")
	}
	ks.table().rope(v, hd, cos, sin[:half], neox)
}

// ropeGo is the rotation in plain Go.
func ropeGo(v []float32, hd int, cos, sin []float32, neox bool) {
	half := len(cos)
	for h := 0; h+hd <= len(v); h += hd {
		x := v[h : h+hd]
		for i := range half {
			a, b := 2*i, 2*i+1
			if neox {
				a, b = i, i+half
			}
			x0, x1 := x[a], x[b]
			x[a] = fma32(x0, cos[i], -float32(x1*sin[i]))
			x[b] = fma32(x0, sin[i], float32(x1*cos[i]))
		}
	}
}
