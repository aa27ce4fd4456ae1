// quant.cu — the products of quantized weights, computed as the CPU does:
// the activations quantized on the device to the weights' vec_dot type
// (Q8_0 for Q4_0, Q5_0, Q8_0, IQ4_NL, MXFP4; Q8_1 for Q4_1, Q5_1; Q8_K for
// Q2_K..Q6_K and IQ4_XS), then per block an exact integer dot scaled as
// the type's reference vecDot scales it (blocks.h decodes the blocks).
//
// quantize_q8_0 / quantize_q8_1 / quantize_q8_k — CPU twin:
// kernels.QuantizeActivation (x86 semantics). Tolerance: bit-exact for
// finite inputs (products and adds rounded alone, the CPU's rounding
// trick); a block holding a NaN or inf is unspecified (NaN payloads
// differ between devices). Launch: grid = ceil(blocks/256), block = 256;
// one thread per block of 32 (Q8_0, Q8_1) or 256 (Q8_K).
//
// mm_<type> — CPU twin: kernels.KernelSet.MatMul on <type> (the type's
// vecDot). y = W·x: W (N, K) blocks, xq (M, K) quantized activations,
// y (M, N) f32. 32-element types: per block isum = Σ q_w·q_a, exact;
// acc += f32(d_w·d_a)·isum in f32 (+ Σ f32(m_w·s_a) for Q4_1/Q5_1), summed
// in another order than the CPU's lanes. Tolerance: |Δy| ≤ 1e-5 ·
// Σ_blocks |terms|. K-quants: per super-block isum = Σ sc·Σ q_w·q_a and
// imin = Σ mn·bsums, exact; f64 sum of f64(f32(d_a·d)·isum −
// f32(d_a·dmin)·imin), as the CPU's, then rounded to f32. Tolerance:
// |Δy| ≤ 1e-6 · Σ |terms| (the f32 rounding of nearly the same f64).
// Launch: grid = (N, M), block = WARP; the lanes split the row's blocks
// (32-element pieces of the super-blocks for the K-quants), lane L taking
// pieces L, L+WARP, … in order, then the lanes' sums add in the butterfly
// order of the xor shuffles. Bytes read per pass: W once per token,
// M·|W|, and each activation row once per output row, N·|xq|: the plain
// (matrix-vector) product, run for decode-sized M (gpu.QuantMatMul).
//
// mmq_<type> — the same products tiled for prefill, to the bit: each
// output's lane sums are formed over the same pieces in the same order and
// added in the same butterfly order (in shared memory), so mmq_ and mm_
// agree exactly (hip's tests check it). Design: a block of MMQ_WARPS warps
// computes MMQ_ROWS output rows for MMQ_TOKENS = 64 tokens; the rows'
// weights are staged in shared memory a chunk of MMQ_CHUNK pieces at a
// time (copied coalesced, once per block); warp w takes tokens
// 16w..16w+15 of the tile, lane L decodes each of its pieces once (the
// levels into registers) and dots it with the 16 tokens' activation
// blocks; at the end the lanes' sums go through shared memory, one thread
// per token adding them in the butterfly order. Launch (gpu.QuantMatMul):
// grid = (ceil(N/MMQ_ROWS), ceil(M/64)), block = MMQ_WARPS·WARP, static
// shared ≤ 2·MMQ_CHUNK·(block bytes) + 64·(WARP+1)·8 (≤ 41 KB on a
// 64-wide wave). Bytes read per pass: W once per tile of 64 tokens,
// |W|·ceil(M/64), and the activations once per MMQ_ROWS rows,
// |xq|·ceil(N/MMQ_ROWS).
#include "blocks.h"

#define MMQ_WARPS 4
#define MMQ_ROWS 2
#define MMQ_TOKENS 64
#define MMQ_TPW (MMQ_TOKENS / MMQ_WARPS) // tokens per warp
#define MMQ_CHUNK 128                     // 32-element pieces staged per row at a time (a multiple of WARP)

PB_KERNEL void quantize_q8_0(const float* __restrict__ x, u8* __restrict__ q, i64 nblocks) {
    i64 b = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (b < nblocks) pb_quantize_q8_0_block(x + b * 32, q + b * PB_Q8_0_BYTES);
}

PB_KERNEL void quantize_q8_1(const float* __restrict__ x, u8* __restrict__ q, i64 nblocks) {
    i64 b = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (b < nblocks) pb_quantize_q8_1_block(x + b * 32, q + b * PB_Q8_1_BYTES);
}

PB_KERNEL void quantize_q8_k(const float* __restrict__ x, u8* __restrict__ q, i64 nblocks) {
    i64 b = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (b < nblocks) pb_quantize_q8_k_block(x + b * 256, q + b * PB_Q8_K_BYTES);
}

// mm_32 is the 32-element types' product: Q8_0 activations, or Q8_1 (d,
// s = d·Σq, then the codes) for the types with a min.
template <class T>
__device__ __forceinline__ void mm_32(const u8* __restrict__ W, const u8* __restrict__ xq, float* __restrict__ y, int N, int K, int M) {
    const int ab = T::MIN ? PB_Q8_1_BYTES : PB_Q8_0_BYTES, qoff = T::MIN ? 4 : 2;
    const int n = blockIdx.x, m = blockIdx.y, lane = threadIdx.x;
    const int nb = K / 32;
    const u8* wr = W + (i64)n * nb * T::BYTES;
    const u8* xr = xq + (i64)m * nb * ab;
    float acc = 0.0f, macc = 0.0f;
    for (int b = lane; b < nb; b += WARP) {
        const u8* wb = wr + (i64)b * T::BYTES;
        const u8* xb = xr + (i64)b * ab;
        int isum = 0;
        for (int j = 0; j < 32; ++j) isum += T::q(wb, j) * (int)(i8)xb[qoff + j];
        acc = fmaf(__fmul_rn(T::d(wb), pb_ld_f16(xb)), (float)isum, acc);
        if constexpr (T::MIN) macc = __fadd_rn(macc, __fmul_rn(T::m(wb), pb_ld_f16(xb + 2)));
    }
    acc = __fadd_rn(acc, macc);
    for (int s = WARP / 2; s > 0; s >>= 1) acc += pb_shfl_xor(acc, s);
    if (lane == 0) y[(i64)m * N + n] = acc;
}

// mm_k is the super-block types' product over Q8_K activations.
template <class T>
__device__ __forceinline__ void mm_k(const u8* __restrict__ W, const u8* __restrict__ xq, float* __restrict__ y, int N, int K, int M) {
    const int n = blockIdx.x, m = blockIdx.y, lane = threadIdx.x;
    const int nb = K / 256;
    const u8* wr = W + (i64)n * nb * T::BYTES;
    const u8* xr = xq + (i64)m * nb * PB_Q8_K_BYTES;
    double acc = 0.0;
    for (int u = lane; u < 8 * nb; u += WARP) {
        const u8* wb = wr + (i64)(u / 8) * T::BYTES;
        const u8* xb = xr + (i64)(u / 8) * PB_Q8_K_BYTES;
        const int e0 = 32 * (u % 8);
        int isum = 0, imin = 0;
        for (int g = e0 / T::G; g < (e0 + 32) / T::G; ++g) {
            int p = 0;
            for (int e = g * T::G; e < (g + 1) * T::G; ++e) p += T::q(wb, e) * (int)(i8)xb[4 + e];
            isum += T::sc(wb, g) * p;
            if constexpr (T::MIN) {
                int bs = 0;
                for (int h = g * T::G / 16; h < (g + 1) * T::G / 16; ++h) bs += (i16)pb_ld_u16(xb + 260 + 2 * h);
                imin += T::mn(wb, g) * bs;
            }
        }
        const float da = pb_ld_f32(xb);
        acc += (double)__fmul_rn(da, T::d(wb)) * (double)isum;
        if constexpr (T::MIN) acc -= (double)__fmul_rn(da, T::dmin(wb)) * (double)imin;
    }
    for (int s = WARP / 2; s > 0; s >>= 1) acc += pb_shfl_xor(acc, s);
    if (lane == 0) y[(i64)m * N + n] = (float)acc;
}

// mmq_stage copies the chunk's bytes of the block's rows (nbytes each,
// from row n0+r at byte off) into ws, rows cap bytes apart.
__device__ __forceinline__ void mmq_stage(u8* ws, const u8* __restrict__ W, i64 rowb, int n0, int N, i64 off, int nbytes, int cap) {
    for (int r = 0; r < MMQ_ROWS && n0 + r < N; ++r) {
        const u8* src = W + (i64)(n0 + r) * rowb + off;
        for (int x = threadIdx.x; x < nbytes; x += MMQ_WARPS * WARP) ws[r * cap + x] = src[x];
    }
}

// mmq_reduce writes row n of y for the tile's tokens: the lanes' sums
// part[i] (token w·MMQ_TPW + i of the tile) added as mm_'s xor butterfly
// adds them, lane L < s taking L + s at step s.
template <typename A>
__device__ __forceinline__ void mmq_reduce(const A* part, A* red, float* __restrict__ y, int n, int N, int m0, int M) {
    const int lane = threadIdx.x % WARP, w = threadIdx.x / WARP;
    __syncthreads(); // red is free
#pragma unroll
    for (int i = 0; i < MMQ_TPW; ++i) red[(w * MMQ_TPW + i) * (WARP + 1) + lane] = part[i];
    __syncthreads();
    const int t = threadIdx.x;
    if (t < MMQ_TOKENS && m0 + t < M && n < N) {
        A* v = red + t * (WARP + 1);
        for (int s = WARP / 2; s > 0; s >>= 1)
            for (int L = 0; L < s; ++L) v[L] = v[L] + v[L + s];
        y[(i64)(m0 + t) * N + n] = (float)v[0];
    }
}

// mmq_32 is mm_32 tiled.
template <class T>
__device__ __forceinline__ void mmq_32(const u8* __restrict__ W, const u8* __restrict__ xq, float* __restrict__ y, int N, int K, int M) {
    __shared__ u8 ws[MMQ_ROWS * MMQ_CHUNK * T::BYTES];
    __shared__ float red[MMQ_TOKENS * (WARP + 1)];
    const int ab = T::MIN ? PB_Q8_1_BYTES : PB_Q8_0_BYTES, qoff = T::MIN ? 4 : 2;
    const int n0 = blockIdx.x * MMQ_ROWS, m0 = blockIdx.y * MMQ_TOKENS;
    const int lane = threadIdx.x % WARP, mw = m0 + threadIdx.x / WARP * MMQ_TPW;
    const int nb = K / 32;
    float acc[MMQ_ROWS][MMQ_TPW], macc[MMQ_ROWS][MMQ_TPW];
#pragma unroll
    for (int r = 0; r < MMQ_ROWS; ++r)
#pragma unroll
        for (int i = 0; i < MMQ_TPW; ++i) acc[r][i] = macc[r][i] = 0.0f;
    for (int c0 = 0; c0 < nb; c0 += MMQ_CHUNK) {
        const int cb = min(MMQ_CHUNK, nb - c0);
        __syncthreads(); // the previous chunk is consumed
        mmq_stage(ws, W, (i64)nb * T::BYTES, n0, N, (i64)c0 * T::BYTES, cb * T::BYTES, MMQ_CHUNK * T::BYTES);
        __syncthreads();
        for (int b = c0 + lane; b < c0 + cb; b += WARP) {
#pragma unroll
            for (int r = 0; r < MMQ_ROWS; ++r) {
                if (n0 + r >= N) continue;
                const u8* wb = ws + (r * MMQ_CHUNK + b - c0) * T::BYTES;
                int q[32];
#pragma unroll
                for (int j = 0; j < 32; ++j) q[j] = T::q(wb, j);
                const float dw = T::d(wb);
                float mnw = 0.0f;
                if constexpr (T::MIN) mnw = T::m(wb);
#pragma unroll
                for (int i = 0; i < MMQ_TPW; ++i) {
                    if (mw + i >= M) break;
                    const u8* xb = xq + ((i64)(mw + i) * nb + b) * ab;
                    int isum = 0;
#pragma unroll
                    for (int j = 0; j < 32; ++j) isum += q[j] * (int)(i8)xb[qoff + j];
                    acc[r][i] = fmaf(__fmul_rn(dw, pb_ld_f16(xb)), (float)isum, acc[r][i]);
                    if constexpr (T::MIN) macc[r][i] = __fadd_rn(macc[r][i], __fmul_rn(mnw, pb_ld_f16(xb + 2)));
                }
            }
        }
    }
#pragma unroll
    for (int r = 0; r < MMQ_ROWS; ++r) {
        float part[MMQ_TPW];
#pragma unroll
        for (int i = 0; i < MMQ_TPW; ++i) part[i] = __fadd_rn(acc[r][i], macc[r][i]);
        mmq_reduce<float>(part, red, y, n0 + r, N, m0, M);
    }
}

// mmq_k is mm_k tiled: pieces of 32 of the super-blocks, MMQ_CHUNK/8
// super-blocks staged at a time.
template <class T>
__device__ __forceinline__ void mmq_k(const u8* __restrict__ W, const u8* __restrict__ xq, float* __restrict__ y, int N, int K, int M) {
    enum { SB = MMQ_CHUNK / 8, NG = 32 / T::G };
    __shared__ u8 ws[MMQ_ROWS * SB * T::BYTES];
    __shared__ double red[MMQ_TOKENS * (WARP + 1)];
    const int n0 = blockIdx.x * MMQ_ROWS, m0 = blockIdx.y * MMQ_TOKENS;
    const int lane = threadIdx.x % WARP, mw = m0 + threadIdx.x / WARP * MMQ_TPW;
    const int nb = K / 256;
    double acc[MMQ_ROWS][MMQ_TPW];
#pragma unroll
    for (int r = 0; r < MMQ_ROWS; ++r)
#pragma unroll
        for (int i = 0; i < MMQ_TPW; ++i) acc[r][i] = 0.0;
    for (int s0 = 0; s0 < nb; s0 += SB) {
        const int sbn = min((int)SB, nb - s0);
        __syncthreads();
        mmq_stage(ws, W, (i64)nb * T::BYTES, n0, N, (i64)s0 * T::BYTES, sbn * T::BYTES, SB * T::BYTES);
        __syncthreads();
        for (int u = 8 * s0 + lane; u < 8 * (s0 + sbn); u += WARP) {
            const int e0 = 32 * (u % 8), g0 = e0 / T::G;
#pragma unroll
            for (int r = 0; r < MMQ_ROWS; ++r) {
                if (n0 + r >= N) continue;
                const u8* wb = ws + (r * SB + u / 8 - s0) * T::BYTES;
                int q[32], sc[NG], mn[NG];
#pragma unroll
                for (int j = 0; j < 32; ++j) q[j] = T::q(wb, e0 + j);
#pragma unroll
                for (int g = 0; g < NG; ++g) {
                    sc[g] = T::sc(wb, g0 + g);
                    mn[g] = 0;
                    if constexpr (T::MIN) mn[g] = T::mn(wb, g0 + g);
                }
                const float dw = T::d(wb);
                float dmw = 0.0f;
                if constexpr (T::MIN) dmw = T::dmin(wb);
#pragma unroll
                for (int i = 0; i < MMQ_TPW; ++i) {
                    if (mw + i >= M) break;
                    const u8* xb = xq + ((i64)(mw + i) * nb + u / 8) * PB_Q8_K_BYTES;
                    int isum = 0, imin = 0;
#pragma unroll
                    for (int g = 0; g < NG; ++g) {
                        int p = 0;
#pragma unroll
                        for (int e = 0; e < T::G; ++e) p += q[g * T::G + e] * (int)(i8)xb[4 + e0 + g * T::G + e];
                        isum += sc[g] * p;
                        if constexpr (T::MIN) {
                            int bs = 0;
                            for (int h = (g0 + g) * T::G / 16; h < (g0 + g + 1) * T::G / 16; ++h) bs += (i16)pb_ld_u16(xb + 260 + 2 * h);
                            imin += mn[g] * bs;
                        }
                    }
                    const float da = pb_ld_f32(xb);
                    acc[r][i] += (double)__fmul_rn(da, dw) * (double)isum;
                    if constexpr (T::MIN) acc[r][i] -= (double)__fmul_rn(da, dmw) * (double)imin;
                }
            }
        }
    }
#pragma unroll
    for (int r = 0; r < MMQ_ROWS; ++r) mmq_reduce<double>(acc[r], red, y, n0 + r, N, m0, M);
}

#define MM_ARGS const u8* __restrict__ W, const u8* __restrict__ xq, float* __restrict__ y, int N, int K, int M
PB_KERNEL void mm_q4_0(MM_ARGS) { mm_32<pb_q4_0>(W, xq, y, N, K, M); }
PB_KERNEL void mm_q4_1(MM_ARGS) { mm_32<pb_q4_1>(W, xq, y, N, K, M); }
PB_KERNEL void mm_q5_0(MM_ARGS) { mm_32<pb_q5_0>(W, xq, y, N, K, M); }
PB_KERNEL void mm_q5_1(MM_ARGS) { mm_32<pb_q5_1>(W, xq, y, N, K, M); }
PB_KERNEL void mm_q8_0(MM_ARGS) { mm_32<pb_q8_0>(W, xq, y, N, K, M); }
PB_KERNEL void mm_iq4_nl(MM_ARGS) { mm_32<pb_iq4_nl>(W, xq, y, N, K, M); }
PB_KERNEL void mm_mxfp4(MM_ARGS) { mm_32<pb_mxfp4>(W, xq, y, N, K, M); }
PB_KERNEL void mm_q2_k(MM_ARGS) { mm_k<pb_q2_k>(W, xq, y, N, K, M); }
PB_KERNEL void mm_q3_k(MM_ARGS) { mm_k<pb_q3_k>(W, xq, y, N, K, M); }
PB_KERNEL void mm_q4_k(MM_ARGS) { mm_k<pb_q4_k>(W, xq, y, N, K, M); }
PB_KERNEL void mm_q5_k(MM_ARGS) { mm_k<pb_q5_k>(W, xq, y, N, K, M); }
PB_KERNEL void mm_q6_k(MM_ARGS) { mm_k<pb_q6_k>(W, xq, y, N, K, M); }
PB_KERNEL void mm_iq4_xs(MM_ARGS) { mm_k<pb_iq4_xs>(W, xq, y, N, K, M); }
PB_KERNEL void __launch_bounds__(MMQ_WARPS * WARP) mmq_q4_0(MM_ARGS) { mmq_32<pb_q4_0>(W, xq, y, N, K, M); }
PB_KERNEL void __launch_bounds__(MMQ_WARPS * WARP) mmq_q4_1(MM_ARGS) { mmq_32<pb_q4_1>(W, xq, y, N, K, M); }
PB_KERNEL void __launch_bounds__(MMQ_WARPS * WARP) mmq_q5_0(MM_ARGS) { mmq_32<pb_q5_0>(W, xq, y, N, K, M); }
PB_KERNEL void __launch_bounds__(MMQ_WARPS * WARP) mmq_q5_1(MM_ARGS) { mmq_32<pb_q5_1>(W, xq, y, N, K, M); }
PB_KERNEL void __launch_bounds__(MMQ_WARPS * WARP) mmq_q8_0(MM_ARGS) { mmq_32<pb_q8_0>(W, xq, y, N, K, M); }
PB_KERNEL void __launch_bounds__(MMQ_WARPS * WARP) mmq_iq4_nl(MM_ARGS) { mmq_32<pb_iq4_nl>(W, xq, y, N, K, M); }
PB_KERNEL void __launch_bounds__(MMQ_WARPS * WARP) mmq_mxfp4(MM_ARGS) { mmq_32<pb_mxfp4>(W, xq, y, N, K, M); }
PB_KERNEL void __launch_bounds__(MMQ_WARPS * WARP) mmq_q2_k(MM_ARGS) { mmq_k<pb_q2_k>(W, xq, y, N, K, M); }
PB_KERNEL void __launch_bounds__(MMQ_WARPS * WARP) mmq_q3_k(MM_ARGS) { mmq_k<pb_q3_k>(W, xq, y, N, K, M); }
PB_KERNEL void __launch_bounds__(MMQ_WARPS * WARP) mmq_q4_k(MM_ARGS) { mmq_k<pb_q4_k>(W, xq, y, N, K, M); }
PB_KERNEL void __launch_bounds__(MMQ_WARPS * WARP) mmq_q5_k(MM_ARGS) { mmq_k<pb_q5_k>(W, xq, y, N, K, M); }
PB_KERNEL void __launch_bounds__(MMQ_WARPS * WARP) mmq_q6_k(MM_ARGS) { mmq_k<pb_q6_k>(W, xq, y, N, K, M); }
PB_KERNEL void __launch_bounds__(MMQ_WARPS * WARP) mmq_iq4_xs(MM_ARGS) { mmq_k<pb_iq4_xs>(W, xq, y, N, K, M); }
