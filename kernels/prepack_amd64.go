//go:build !purego

package kernels

// This file declares the prepacked path's software prefetch (amd64).

// prefetchLines hints that the n bytes at p are read soon (PREFETCHT0 on
// each 64-byte line); it reads nothing architecturally.
//
//go:noescape
func prefetchLines(p *byte, n int)
