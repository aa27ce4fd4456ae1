package kernels

// This file owns RMSNorm (ggml's rms_norm followed by mul): the set's
// entry point and the Go variants. "go" sums the squares in order, as
// ggml's C loop does (bit-exact with llama.cpp); rmsNormTwin is the
// "generic" variant and the twin of the AVX2 kernel (norm_avx2_amd64.s):
// the same arithmetic with the squares summed into 16 float64 lanes.

import "math"

// RMSNorm normalizes each len(w)-long row of in into out and multiplies it
// by w: squares in float32 summed in float64, the mean rounded to
// float32, scale = 1/sqrtf(mean + eps), y = (x·scale)·w with both products
// rounded. len(in) must be a multiple of len(w) and len(out) ≥ len(in);
// out may be in.
func (ks KernelSet) RMSNorm(out, in, w []float32, eps float32) {
	if len(w) == 0 || len(in) == 0 {
		return
	}
	ks.table().rmsNorm(out[:len(in)], in, w, eps)
}

// rmsNormGo is ggml's row loop: the squares summed one after another.
func rmsNormGo(out, in, w []float32, eps float32) {
	n := len(w)
	for r := range len(in) / n {
		x, y := in[r*n:(r+1)*n], out[r*n:(r+1)*n]
		var ss float64
		for _, v := range x {
			ss += float64(float32(v * v))
		}
		rmsScaleRow(y, x, w, rmsScale(ss, n, eps))
	}
}

// rmsNormTwin is rmsNormGo with element j's square added to float64 lane
// j%16, the lanes then summed pairwise as in pickMaxSumTwin: the order of
// the AVX2 kernel's four 4-lane accumulators.
func rmsNormTwin(out, in, w []float32, eps float32) {
	n := len(w)
	for r := range len(in) / n {
		x, y := in[r*n:(r+1)*n], out[r*n:(r+1)*n]
		var acc [16]float64
		j := 0
		for ; j+16 <= n; j += 16 {
			c := x[j : j+16 : j+16]
			for l, v := range c {
				acc[l] += float64(float32(v * v))
			}
		}
		for l, v := range x[j:] {
			acc[l] += float64(float32(v * v))
		}
		var s [8]float64
		for l := range 8 {
			s[l] = acc[l] + acc[l+8]
		}
		for l := range 4 {
			s[l] += s[l+4]
		}
		rmsScaleRow(y, x, w, rmsScale((s[0]+s[2])+(s[1]+s[3]), n, eps))
	}
}

// rmsScale is 1/sqrtf(mean + eps) for the sum of squares ss of n values.
func rmsScale(ss float64, n int, eps float32) float32 {
	mean := float32(ss / float64(n))
	return 1 / float32(math.Sqrt(float64(mean+eps)))
}

// rmsScaleRow sets y[i] = (x[i]·scale)·w[i], each product rounded.
func rmsScaleRow(y, x, w []float32, scale float32) {
	for i, v := range x {
		y[i] = float32(v*scale) * w[i]
	}
}
