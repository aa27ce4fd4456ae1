package gpu

// This file owns the launch geometry of the tiled kernels: grid, block and
// dynamic shared memory, with the tile parameters the kernels take as
// arguments, computed here once for the engine's launch sites and the
// device tests alike. The constants mirror the #defines of the .cu files
// named beside them.

import "fmt"

// Dim3 is a grid or block shape (hip.Dim3's fields: convert with hip.Dim3(d)).
type Dim3 struct{ X, Y, Z int }

// Launch is one kernel launch's geometry.
type Launch struct {
	Grid, Block Dim3
	Shared      int // dynamic shared memory, bytes
}

// MaxShared is the most shared memory (static + dynamic) a block may use
// without opting in on CUDA (cuFuncSetAttribute); AMD's LDS cap (64 KB) is
// above it. The tiled kernels stay within it on every device.
const MaxShared = 48 << 10

// The tiled attention's constants (attention.cu).
const (
	AttnThreads    = 128 // ATT_THREADS
	AttnRows       = 8   // ATT_ROWS: query tokens of one head per block
	AttnStep       = 128 // ATT_STEP: keys per online-softmax step
	AttnMaxHeadDim = 256 // ATT_DPL·WARP
)

// AttnLaunch is attention.cu's launch: Launch, and its last two
// arguments, the keys staged per tile (KeyTile) and their row stride in
// shared memory (KeyStride).
type AttnLaunch struct {
	Launch
	KeyTile, KeyStride int
}

// Attention is the geometry of attn_<kv> / attn_fp_<kv> for tokens query
// tokens of nh heads of hd dims, over a cache whose rows take rb bytes
// (keys and values) with queries of qrb bytes per row (4·hd for f32
// queries, rb for a q8_0 cache's Q8_0 queries). The shared memory does not
// depend on the position: 4·AttnRows·AttnStep (the step's scores) +
// KeyTile·KeyStride (the staged keys) + AttnRows·qrb (the queries), the
// largest KeyTile of 128, 64, 32 that keeps it within MaxShared. The
// stride is rb rounded up to an odd number of 4-byte words, so that the
// lanes reading the same offset of consecutive staged rows use distinct
// banks.
func Attention(tokens, nh, hd, rb, qrb int) (AttnLaunch, error) {
	if hd < 1 || hd > AttnMaxHeadDim {
		return AttnLaunch{}, fmt.Errorf("attention: head dim %d outside 1..%d", hd, AttnMaxHeadDim)
	}
	words := (rb + 3) / 4
	if words%2 == 0 {
		words++
	}
	stride := 4 * words
	fixed := 4*AttnRows*AttnStep + AttnRows*qrb
	for kt := AttnStep; kt >= 32; kt /= 2 {
		if sh := fixed + kt*stride; sh <= MaxShared {
			return AttnLaunch{
				Launch:  Launch{Grid: Dim3{X: (tokens + AttnRows - 1) / AttnRows, Y: nh}, Block: Dim3{X: AttnThreads}, Shared: sh},
				KeyTile: kt, KeyStride: stride,
			}, nil
		}
	}
	return AttnLaunch{}, fmt.Errorf("attention: rows of %d bytes do not fit %d bytes of shared memory", rb, MaxShared)
}
