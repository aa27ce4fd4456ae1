// embed.cu — the token embedding: rows of token_embd looked up by id and
// expanded to f32, as stored (F32, F16, Q8_0).
// CPU twin: kernels.DequantizeRow (the engine's pass.embed). Tolerance:
// exact (a copy, an exact f16 widening, one rounded product d·q).
//
// get_rows_f32 / get_rows_f16 / get_rows_q8_0: out[t] = row ids[t] of the
// table (n floats per row). Launch: grid = (ceil(n/256), tokens),
// block = 256.
PB_KERNEL void get_rows_f32(const float* __restrict__ table, const i32* __restrict__ ids, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[(i64)blockIdx.y * n + i] = table[(i64)ids[blockIdx.y] * n + i];
}

PB_KERNEL void get_rows_f16(const u16* __restrict__ table, const i32* __restrict__ ids, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[(i64)blockIdx.y * n + i] = pb_f16_to_f32(table[(i64)ids[blockIdx.y] * n + i]);
}

PB_KERNEL void get_rows_q8_0(const u8* __restrict__ table, const i32* __restrict__ ids, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const u8* b = table + ((i64)ids[blockIdx.y] * (n / 32) + i / 32) * 34;
    float d = pb_f16_to_f32((u16)b[0] | ((u16)b[1] << 8));
    out[(i64)blockIdx.y * n + i] = __fmul_rn((float)(i8)b[2 + i % 32], d);
}
