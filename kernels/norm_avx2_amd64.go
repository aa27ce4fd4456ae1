//go:build !purego

package kernels

// This file owns the Go side of norm_avx2_amd64.s, the AVX2 RMSNorm, bit
// for bit rmsNormTwin. Callers check CPU().HasAVX2() first.

// rmsNormVecAVX2 runs rmsNormTwin on rows rows of n values (n ≥ 1) at in
// into out with the weights w; nf is float64(n).
//
//go:noescape
func rmsNormVecAVX2(out, in, w *float32, rows, n int, nf float64, eps float32)

// rmsNormAVX2 is rmsNormTwin.
func rmsNormAVX2(out, in, w []float32, eps float32) {
	n := len(w)
	rows := len(in) / n
	if rows == 0 {
		return
	}
	_, _ = in[rows*n-1], out[rows*n-1]
	rmsNormVecAVX2(&out[0], &in[0], &w[0], rows, n, float64(n), eps)
}
