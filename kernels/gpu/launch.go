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
// queries, rb for a q8_0 cache's Q8_0 queries), on a device of warp lanes.
// The shared memory does not depend on the position: 4·AttnRows·AttnStep
// (the step's p) + 8·AttnRows·warp (the lanes' maxima and sums) +
// KeyTile·KeyStride (the staged keys) + AttnRows·qrb (the queries), the
// largest KeyTile of 128, 64, 32, 16 that keeps it within MaxShared. The
// stride is rb rounded up to an odd number of 4-byte words, so that the
// lanes reading the same offset of consecutive staged rows use distinct
// banks.
func Attention(tokens, nh, hd, rb, qrb, warp int) (AttnLaunch, error) {
	if hd < 1 || hd > AttnMaxHeadDim {
		return AttnLaunch{}, fmt.Errorf("attention: head dim %d outside 1..%d", hd, AttnMaxHeadDim)
	}
	words := (rb + 3) / 4
	if words%2 == 0 {
		words++
	}
	stride := 4 * words
	fixed := 4*AttnRows*AttnStep + 8*AttnRows*warp + AttnRows*qrb
	for kt := AttnStep; kt >= 16; kt /= 2 {
		if sh := fixed + kt*stride; sh <= MaxShared {
			return AttnLaunch{
				Launch:  Launch{Grid: Dim3{X: (tokens + AttnRows - 1) / AttnRows, Y: nh}, Block: Dim3{X: AttnThreads}, Shared: sh},
				KeyTile: kt, KeyStride: stride,
			}, nil
		}
	}
	return AttnLaunch{}, fmt.Errorf("attention: rows of %d bytes do not fit %d bytes of shared memory", rb, MaxShared)
}

// The float products' tile (matmul.cu): MatMulRows output rows by
// MatMulTokens tokens per block of 16×16 threads.
const (
	MatMulRows   = 16 // MM_TILE
	MatMulTokens = 64 // MM_TOKENS
)

// MatMul is the geometry of matmul_<f32|f16|bf16> for y (M, N) = x (M,
// K)·Wᵀ: one block per tile of MatMulRows rows and MatMulTokens tokens.
func MatMul(N, M int) Launch {
	return Launch{Grid: Dim3{X: (N + MatMulRows - 1) / MatMulRows, Y: (M + MatMulTokens - 1) / MatMulTokens}, Block: Dim3{X: 16, Y: 16}}
}

// The quantized products' tile (quant.cu's mmq_): QuantWarps warps per
// block, QuantRows output rows by QuantTokens tokens per block.
const (
	QuantWarps  = 4  // MMQ_WARPS
	QuantRows   = 2  // MMQ_ROWS
	QuantTokens = 64 // MMQ_TOKENS
	// QuantPlainMax is the most tokens a product runs on the plain mm_
	// kernel (one warp per output), whose results the tiled mmq_ kernel
	// gives to the bit: a decode-sized product, whose weight reads (one
	// per token) stay few, while a tile of 64 tokens would leave most of
	// its warps idle.
	QuantPlainMax = 4
)

// QuantMatMul is the geometry of a quantized product of M tokens by N
// rows on a device of warp lanes, and its entry's prefix: "mm_" (grid (N,
// M), one warp) up to QuantPlainMax tokens, "mmq_" (grid (ceil(N/
// QuantRows), ceil(M/QuantTokens)), QuantWarps warps) above.
func QuantMatMul(N, M, warp int) (Launch, string) {
	if M <= QuantPlainMax {
		return Launch{Grid: Dim3{X: N, Y: M}, Block: Dim3{X: warp}}, "mm_"
	}
	return Launch{Grid: Dim3{X: (N + QuantRows - 1) / QuantRows, Y: (M + QuantTokens - 1) / QuantTokens}, Block: Dim3{X: QuantWarps * warp}}, "mmq_"
}

// GDNCols is gdn.cu's GDN_COLS: the state columns of a value head per block.
const GDNCols = 32

// GDNDelta is the geometry of gdn_delta for hv value heads of dv columns:
// one launch for the layer, a block per (value head, group of GDNCols
// columns).
func GDNDelta(hv, dv int) Launch {
	return Launch{Grid: Dim3{X: hv, Y: (dv + GDNCols - 1) / GDNCols}, Block: Dim3{X: GDNCols}}
}

// MoERouteTokens is moe.cu's tokens per moe_route block (MOE_ROUTE_THREADS
// / MOE_LANES); MoERouteMaxExperts the most experts it routes (a lane's
// 64-bit mask of its taken experts, one bit per 16).
const (
	MoERouteTokens     = 4
	MoERouteMaxExperts = 1024
)

// MoERoute is the geometry of moe_route for tokens tokens.
func MoERoute(tokens int) Launch {
	return Launch{Grid: Dim3{X: (tokens + MoERouteTokens - 1) / MoERouteTokens}, Block: Dim3{X: 64}}
}
