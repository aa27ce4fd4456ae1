// rope.cu — rotary position embedding, NORM (adjacent pairs) and NEOX
// (halves), partial (only the first 2·half dims of each head turn).
// CPU twin: kernels.KernelSet.RoPE (ropeGo), with the engine's cos/sin
// table per position: x0' = fma(x0, c, −(x1·s)), x1' = fma(x0, s, x1·c),
// the second product rounded alone, as ggml's C compiled with contraction.
// Tolerance: bit-exact (explicit fmaf; no other arithmetic).
// IMROPE (qwen35*) is NEOX over the engine's table, whose pairs fed
// position stream e carry cos 1, sin 0: they come out unchanged.
//
// v: (tokens, heads, hd) f32, in place; cs, sn: (tokens, half) f32.
// Launch: grid = (tokens, heads), block = min(half, 256).
PB_KERNEL void rope_f32(float* __restrict__ v, const float* __restrict__ cs, const float* __restrict__ sn,
                        int heads, int hd, int half, int neox) {
    int t = blockIdx.x, h = blockIdx.y;
    float* x = v + ((i64)t * heads + h) * hd;
    const float* c = cs + (i64)t * half;
    const float* s = sn + (i64)t * half;
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        int a = neox ? i : 2 * i;
        int b = neox ? i + half : 2 * i + 1;
        float x0 = x[a], x1 = x[b];
        float p = __fmul_rn(x1, s[i]); // rounded alone: never fused into the fma
        float q = __fmul_rn(x1, c[i]);
        x[a] = fmaf(x0, c[i], -p);
        x[b] = fmaf(x0, s[i], q);
    }
}
