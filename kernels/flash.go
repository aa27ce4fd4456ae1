package kernels

// This file owns the one piece of the engine's streaming-softmax
// ("flash") attention that wants the vector exp: exponentiating a block of
// scores against a running maximum and summing them in float64, and the
// scale-and-max pass before it.

import "math"

// expSumTwin is the vector expSum's Go twin: expGo, and the float64 sum
// in the vector's lane order (as softmaxTwin): sixteen lanes, the low
// eight into one float64 accumulator vector and the high eight into
// another, then the two added and folded in halves.
func expSumTwin(s []float32, mx float32) float64 {
	var acc [2][8]float64
	for i := range s {
		e := expGo(s[i] - mx)
		s[i] = e
		l := i % 16
		acc[l/8][l%8] += float64(e)
	}
	var v [8]float64
	for l := range 8 {
		v[l] = acc[0][l] + acc[1][l]
	}
	for l := range 4 {
		v[l] += v[l+4]
	}
	return (v[0] + v[2]) + (v[1] + v[3])
}

func scaleMaxTwin(s []float32, scale float32) float32 {
	mx := float32(math.Inf(-1))
	for i := range s {
		s[i] *= scale
		mx = max(mx, s[i])
	}
	return mx
}
