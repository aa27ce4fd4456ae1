// q8_0.cu — Q8_0 weights (blocks of 32: f16 scale d, 32 int8; 34 bytes)
// times activations quantized to Q8_0 on the device, as the CPU does.
//
// quantize_q8_0 — CPU twin: kernels.QuantizeActivation(Q8_0) (x86
// semantics; pb_quantize_q8_0_block in dialect.h). Tolerance: bit-exact
// (products and adds rounded alone: __fmul_rn and __fadd_rn never fuse).
// Launch: grid = ceil(blocks/256), block = 256; one thread per block of 32.
//
// mm_q8_0 — CPU twin: kernels.KernelSet.MatMul on Q8_0 (vecDotQ8_0): per
// block an exact integer dot, scaled by d_w·d_x in f32 and summed in f32
// in another order. Tolerance: |Δy| ≤ 1e-5 · Σ_blocks |d_w·d_x·isum|.
// Launch: grid = (N, M), block = WARP; lanes split the K/32 blocks.
#define QK8_0 32
#define Q8_0_BYTES 34

__device__ __forceinline__ u16 pb_ld_u16(const u8* p) { return (u16)p[0] | ((u16)p[1] << 8); }

PB_KERNEL void quantize_q8_0(const float* __restrict__ x, u8* __restrict__ q, i64 nblocks) {
    i64 b = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nblocks) return;
    pb_quantize_q8_0_block(x + b * QK8_0, q + b * Q8_0_BYTES);
}

PB_KERNEL void mm_q8_0(const u8* __restrict__ W, const u8* __restrict__ xq, float* __restrict__ y, int N, int K, int M) {
    const int n = blockIdx.x, m = blockIdx.y, lane = threadIdx.x;
    const int nb = K / QK8_0;
    const u8* wr = W + (i64)n * nb * Q8_0_BYTES;
    const u8* xr = xq + (i64)m * nb * Q8_0_BYTES;
    float acc = 0.0f;
    for (int b = lane; b < nb; b += WARP) {
        const u8* wb = wr + (i64)b * Q8_0_BYTES;
        const u8* xb = xr + (i64)b * Q8_0_BYTES;
        int isum = 0;
        for (int j = 0; j < QK8_0; ++j) isum += (int)(i8)wb[2 + j] * (int)(i8)xb[2 + j];
        float dd = __fmul_rn(pb_f16_to_f32(pb_ld_u16(wb)), pb_f16_to_f32(pb_ld_u16(xb)));
        acc = fmaf(dd, (float)isum, acc);
    }
    for (int s = WARP / 2; s > 0; s >>= 1) acc += pb_shfl_xor(acc, s);
    if (lane == 0) y[(i64)m * N + n] = acc;
}
