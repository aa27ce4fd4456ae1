//go:build purego || !amd64

package kernels

// This file stands in for prepack_amd64.s: without it the prepacked path
// relies on the hardware prefetcher.

func prefetchLines(*byte, int) {}
