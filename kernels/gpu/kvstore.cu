// kvstore.cu — store a pass's K or V rows into the KV cache in the
// engine's layout: src (tokens, nkv, hd) f32 → cache (nkv, cap, hd) in the
// cache type, token t at position pos0 + t (engine/kvcache.go storeRange).
// CPU twin: kernels.KernelSet.QuantizeActivation(cache type) per head
// vector: a copy for f32, kernels.F32ToF16, kernels.F32ToBF16, and Q8_0's
// x86 quantizer. Tolerance: bit-exact (integer rounding, the CPU's
// algorithms; see blocks.h), except a Q8_0 block holding a NaN or inf:
// unspecified (the CPU follows x86's NaN rules; here d = NaN, q = 0), it
// reads back as NaN either way.
//
// f32/f16/bf16 launch: grid = (ceil(hd/256), nkv, tokens), block = 256.
// q8_0 launch: grid = (ceil(hd/32/64), nkv, tokens), block = 64; hd % 32 == 0.
#include "blocks.h"

#define KV_INDEX                                                   \
    int i = blockIdx.x * blockDim.x + threadIdx.x;                 \
    if (i >= hd) return;                                           \
    i64 t = blockIdx.z, g = blockIdx.y;                            \
    i64 s = (t * nkv + g) * hd + i;                                \
    i64 d = (g * cap + pos0 + t) * hd + i;

PB_KERNEL void kv_store_f32(const float* __restrict__ src, float* __restrict__ dst, int nkv, int hd, int cap, int pos0) {
    KV_INDEX
    dst[d] = src[s];
}

PB_KERNEL void kv_store_f16(const float* __restrict__ src, u16* __restrict__ dst, int nkv, int hd, int cap, int pos0) {
    KV_INDEX
    dst[d] = pb_f32_to_f16(src[s]);
}

PB_KERNEL void kv_store_bf16(const float* __restrict__ src, u16* __restrict__ dst, int nkv, int hd, int cap, int pos0) {
    KV_INDEX
    dst[d] = pb_f32_to_bf16(src[s]);
}

PB_KERNEL void kv_store_q8_0(const float* __restrict__ src, u8* __restrict__ dst, int nkv, int hd, int cap, int pos0) {
    int j = blockIdx.x * blockDim.x + threadIdx.x; // the block of 32 within the head vector
    if (j >= hd / 32) return;
    i64 t = blockIdx.z, g = blockIdx.y;
    i64 rb = (i64)(hd / 32) * 34;
    pb_quantize_q8_0_block(src + (t * nkv + g) * hd + 32 * j, dst + (g * cap + pos0 + t) * rb + 34 * j);
}
