//go:build purego || !amd64

package kernels

// This file binds the AVX2 activation converters' names to their Go twins
// where there is no assembly, so callers and tests build everywhere.

func quantActQ8AVX2(x []float32, dst []byte, bias int32) { quantActQ8Go(x, dst, bias) }
func quantQ8KAVX2(x []float32, dst []byte)               { quantizeQ8K(x, dst) }
