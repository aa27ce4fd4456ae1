// swiglu.cu — SwiGLU: g ← silu(g)·u = g/(1 + e^(−g))·u, in place.
// CPU twin: kernels.KernelSet.SwiGLU ("go": SiLUV, a vector exp).
// Device expf is within 2 ulp of the CPU's exp; the division and product
// are IEEE (no fast-math). Tolerance: |Δ| ≤ 1e-6·|y| (a few ulp).
//
// Launch: grid = ceil(n/256), block = 256.
PB_KERNEL void swiglu_f32(float* __restrict__ g, const float* __restrict__ u, i64 n) {
    i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = g[i];
    float e = expf(-x) + 1.0f;
    float s = x / e;
    g[i] = s * u[i];
}
