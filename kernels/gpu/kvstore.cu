// kvstore.cu — store a pass's K or V rows into the cache at a position.
// CPU twin: the engine's KV cache store (kernels.F32ToF16 per element for
// f16, a copy for f32). Tolerance: bit-exact (integer rounding in
// pb_f32_to_f16, the CPU's algorithm).
//
// src: (tokens, dim) f32; dst: (kv_len, dim) at row pos. Launch: grid =
// (ceil(dim/256), tokens), block = 256.
PB_KERNEL void kv_store_f32(const float* __restrict__ src, float* __restrict__ dst, int dim, int pos) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= dim) return;
    i64 t = blockIdx.y;
    dst[(pos + t) * dim + i] = src[t * dim + i];
}

PB_KERNEL void kv_store_f16(const float* __restrict__ src, u16* __restrict__ dst, int dim, int pos) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= dim) return;
    i64 t = blockIdx.y;
    dst[(pos + t) * dim + i] = pb_f32_to_f16(src[t * dim + i]);
}
