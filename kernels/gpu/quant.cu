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
// (32-element pieces of the super-blocks for the K-quants).
#include "blocks.h"

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
