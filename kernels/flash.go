package kernels

// This file owns the one piece of the engine's streaming-softmax
// ("flash") attention that wants the vector exp: exponentiating a block of
// scores against a running maximum and summing them in float64.

// ExpSum sets s[i] = exp(s[i] − mx) for every i and returns their sum in
// float64, in index order. It runs the fast variants' 16-lane vector exp
// (about 2 ulp) where the CPU has AVX-512 and that exp's Go twin
// elsewhere; both give the same values. mx should be at least every s[i]
// so nothing overflows.
func ExpSum(s []float32, mx float32) float64 {
	for i := range s {
		s[i] -= mx
	}
	if haveAsm && CPU().AVX512 {
		expFast(s, s)
	} else {
		for i, x := range s {
			s[i] = expGo(x)
		}
	}
	var sum float64
	for _, e := range s {
		sum += float64(e)
	}
	return sum
}
