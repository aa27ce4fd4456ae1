// gated.cu — the hybrids' gated full attention (../shared/spec/architectures.md §5.5) around
// attention.cu: Wq's output split per head into the query and its gate,
// and the attention output times sigmoid(gate).
// CPU twin: the engine's split copy and gateRange (qwen35.go: out ·=
// kernels.Sigmoid(gate)). Tolerance: gated_split exact (a copy);
// gated_mul through the device's expf (within 2 ulp of the CPU's):
// 1e-6 relative.
//
// gated_split: qg (tokens·heads, 2·hd) → q, gate (tokens·heads, hd).
// Launch: grid = ceil(tokens·heads·hd/256), block = 256.
PB_KERNEL void gated_split(const float* __restrict__ qg, float* __restrict__ q, float* __restrict__ gate, int hd, i64 total) {
    i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    i64 row = i / hd;
    int d = (int)(i % hd);
    q[i] = qg[row * 2 * hd + d];
    gate[i] = qg[row * 2 * hd + hd + d];
}

// gated_mul: x ·= sigmoid(g) over n floats.
// Launch: grid = ceil(n/256), block = 256.
PB_KERNEL void gated_mul(float* __restrict__ x, const float* __restrict__ g, i64 n) {
    i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = __fmul_rn(x[i], 1.0f / (1.0f + expf(-g[i])));
}
