package kernels

// This file owns the elementwise ops the engine's passes run through a
// KernelSet: the causal softmax of attention scores and the SwiGLU gate.
// The "go" variants are ggml's own arithmetic (softmaxGo, swigluGo in
// avx512.go: ggml's vector exp on 16-element groups, glibc's expf on the
// tail), bit-exact with llama.cpp's AVX-512 CPU build and slow; the
// "avx512" variants use a vector exp of their own (Cody-Waite reduction,
// degree-6 polynomial, VSCALEFPS) accurate to about 2 ulp, with Go twins
// here for tests.

import "math"

// expGo is the vector exp's Go twin, operation for operation, for tests:
// n = round(x·log2 e), r = x − n·c1 − n·c2 (fused), the Cephes polynomial
// in Horner form with fused multiply-adds, then r²·p + r + 1 scaled by 2^n.
func expGo(x float32) float32 {
	const (
		hi, lo = 89, -104 // beyond: inf, and below the smallest denormal
		log2e  = 1.44269504088896341
		c1, c2 = 0.693359375, -2.12194440e-4
	)
	if x != x {
		return x
	}
	x = min(max(x, lo), hi)
	n := float32(math.RoundToEven(float64(fma32(x, log2e, 0))))
	r := fma32(-n, c1, x)
	r = fma32(-n, c2, r)
	p := fma32(1.9875691500e-4, r, 1.3981999507e-3)
	p = fma32(p, r, 8.3334519073e-3)
	p = fma32(p, r, 4.1665795894e-2)
	p = fma32(p, r, 1.6666665459e-1)
	p = fma32(p, r, 5.0000001201e-1)
	r2 := r * r
	y := fma32(p, r2, r) + 1
	return float32(math.Ldexp(float64(y), int(n)))
}

// swigluTwin and softmaxTwin are the fast variants' Go twins (expGo in
// place of the vector exp, the float64 sum in the vector's lane order), so
// tests can require bit-identical results.
func swigluTwin(g, u []float32) {
	for i, x := range g {
		g[i] = x / (expGo(-x) + 1) * u[i]
	}
}

func softmaxTwin(s []float32, valid int, scale float32) {
	mx := float32(math.Inf(-1))
	for i := range s[:valid] {
		s[i] *= scale
		mx = max(mx, s[i])
	}
	sum := expSumTwin(s[:valid], mx)
	inv := float32(1 / sum)
	for i := range s[:valid] {
		s[i] *= inv
	}
}
