// embed.cu — the token embedding: rows of token_embd looked up by id and
// expanded to f32, as stored (F32, F16, BF16 and every quantized type of
// blocks.h, through its pb_dequant: the decoding the products use).
// CPU twin: kernels.DequantizeRow (the engine's pass.embed). Tolerance:
// exact (a copy, an exact widening, the CPU's products and adds each
// rounded alone).
//
// get_rows_<type>: out[t] = row ids[t] of the table (n floats per row).
// Launch: grid = (ceil(n/256), tokens), block = 256.
#include "blocks.h"

#define ROWS_ARGS const u8* __restrict__ table, const i32* __restrict__ ids, float* __restrict__ out, int n
#define ROWS_INDEX                                  \
    int i = blockIdx.x * blockDim.x + threadIdx.x;  \
    if (i >= n) return;                             \
    i64 o = (i64)blockIdx.y * n + i, r = ids[blockIdx.y];

PB_KERNEL void get_rows_f32(ROWS_ARGS) {
    ROWS_INDEX
    out[o] = ((const float*)table)[r * n + i];
}

PB_KERNEL void get_rows_f16(ROWS_ARGS) {
    ROWS_INDEX
    out[o] = pb_f16_to_f32(((const u16*)table)[r * n + i]);
}

PB_KERNEL void get_rows_bf16(ROWS_ARGS) {
    ROWS_INDEX
    out[o] = pb_bf16_to_f32(((const u16*)table)[r * n + i]);
}

template <class T>
__device__ __forceinline__ void rows_blocks(ROWS_ARGS) {
    ROWS_INDEX
    out[o] = pb_dequant<T>(table + r * (n / T::QK) * T::BYTES, i);
}

PB_KERNEL void get_rows_q4_0(ROWS_ARGS) { rows_blocks<pb_q4_0>(table, ids, out, n); }
PB_KERNEL void get_rows_q4_1(ROWS_ARGS) { rows_blocks<pb_q4_1>(table, ids, out, n); }
PB_KERNEL void get_rows_q5_0(ROWS_ARGS) { rows_blocks<pb_q5_0>(table, ids, out, n); }
PB_KERNEL void get_rows_q5_1(ROWS_ARGS) { rows_blocks<pb_q5_1>(table, ids, out, n); }
PB_KERNEL void get_rows_q8_0(ROWS_ARGS) { rows_blocks<pb_q8_0>(table, ids, out, n); }
PB_KERNEL void get_rows_iq4_nl(ROWS_ARGS) { rows_blocks<pb_iq4_nl>(table, ids, out, n); }
PB_KERNEL void get_rows_mxfp4(ROWS_ARGS) { rows_blocks<pb_mxfp4>(table, ids, out, n); }
PB_KERNEL void get_rows_q2_k(ROWS_ARGS) { rows_blocks<pb_q2_k>(table, ids, out, n); }
PB_KERNEL void get_rows_q3_k(ROWS_ARGS) { rows_blocks<pb_q3_k>(table, ids, out, n); }
PB_KERNEL void get_rows_q4_k(ROWS_ARGS) { rows_blocks<pb_q4_k>(table, ids, out, n); }
PB_KERNEL void get_rows_q5_k(ROWS_ARGS) { rows_blocks<pb_q5_k>(table, ids, out, n); }
PB_KERNEL void get_rows_q6_k(ROWS_ARGS) { rows_blocks<pb_q6_k>(table, ids, out, n); }
PB_KERNEL void get_rows_iq4_xs(ROWS_ARGS) { rows_blocks<pb_iq4_xs>(table, ids, out, n); }
