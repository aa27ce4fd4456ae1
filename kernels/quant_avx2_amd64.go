//go:build !purego

package kernels

// This file owns the Go side of the AVX2 activation converters
// (quant_avx2_amd64.s): the declarations and the slice wrappers the SIMD
// matmul paths call on AVX2 machines. Callers check CPU().HasAVX2().

// quantQ8VecAVX2 converts nb blocks of 32 floats at x to nb q8Act blocks
// (40 bytes) at dst, exactly as
//
//	quantActQ8Go(unsafe.Slice(x, 32*nb), unsafe.Slice(dst, 40*nb), bias)
//
//go:noescape
func quantQ8VecAVX2(x *float32, nb int, dst *byte, bias int32)

// quantQ8KVecAVX2 converts nb super-blocks of 256 floats at x to nb Q8_K
// blocks (292 bytes) at dst, exactly as
//
//	quantizeQ8K(unsafe.Slice(x, 256*nb), unsafe.Slice(dst, 292*nb))
//
//go:noescape
func quantQ8KVecAVX2(x *float32, nb int, dst *byte)

// quantActQ8AVX2 is quantActQ8Go in AVX2, byte for byte.
func quantActQ8AVX2(x []float32, dst []byte, bias int32) {
	nb := len(x) / qk
	if nb == 0 {
		return
	}
	_ = dst[nb*q8ActBlock-1]
	quantQ8VecAVX2(&x[0], nb, &dst[0], bias)
}

// quantQ8KAVX2 is quantizeQ8K in AVX2, byte for byte.
func quantQ8KAVX2(x []float32, dst []byte) {
	nb := len(x) / qkK
	if nb == 0 {
		return
	}
	_ = dst[nb*q8kBlockBytes-1]
	quantQ8KVecAVX2(&x[0], nb, &dst[0])
}
