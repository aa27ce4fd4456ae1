// matmul.cu — tiled matrix products y = x·Wᵀ for float weights (ggml's
// mul_mat: W is (N, K) row-major as stored in the GGUF, x is (M, K)
// activations, y is (M, N)). 16×16 output tiles, K walked in 16-wide
// slices through shared memory, f32 accumulation with fmaf in k order.
// CPU twin: kernels.KernelSet.MatMul with the reference "ref" variant as
// the oracle; F16 and BF16 round the activations to their type first, as
// the CPU converts them to the weight's vec_dot_type. Tolerance: the sum's order differs:
// |Δy| ≤ 1e-5 · Σ_k |w_k·x_k| + 1e-30.
//
// Launch: grid = (ceil(N/16), ceil(M/16)), block = (16, 16).
//
// to_f16 / to_bf16 round n f32 activations to the weight's type (the same
// rounding as the products' round_x and the CPU's vec_dot_type), stored as
// that type: the operand a vendor BLAS GEMM takes beside F16/BF16 weights.
// Exact. Launch: grid = ceil(n/256), block = 256.
#define MM_TILE 16

// mm_tile is both kernels' body: W's elements of type T widened by
// load_w, the activations rounded by round_x (the weight's vec_dot_type).
template <typename T, float (*load_w)(T), float (*round_x)(float)>
__device__ __forceinline__ void mm_tile(const T* __restrict__ W, const float* __restrict__ x, float* __restrict__ y, int N, int K, int M) {
    __shared__ float ws[MM_TILE][MM_TILE + 1];
    __shared__ float xs[MM_TILE][MM_TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int n0 = blockIdx.x * MM_TILE, m0 = blockIdx.y * MM_TILE;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += MM_TILE) {
        int k = k0 + tx;
        ws[ty][tx] = (n0 + ty < N && k < K) ? load_w(W[(i64)(n0 + ty) * K + k]) : 0.0f;
        xs[ty][tx] = (m0 + ty < M && k < K) ? round_x(x[(i64)(m0 + ty) * K + k]) : 0.0f;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < MM_TILE; ++kk) acc = fmaf(ws[tx][kk], xs[ty][kk], acc);
        __syncthreads();
    }
    if (n0 + tx < N && m0 + ty < M) y[(i64)(m0 + ty) * N + n0 + tx] = acc;
}

__device__ __forceinline__ float mm_f32(float v) { return v; }
__device__ __forceinline__ float mm_f16(u16 v) { return pb_f16_to_f32(v); }
__device__ __forceinline__ float mm_round_f16(float v) { return pb_f16_to_f32(pb_f32_to_f16(v)); }
__device__ __forceinline__ float mm_round_bf16(float v) { return pb_bf16_to_f32(pb_f32_to_bf16(v)); }

PB_KERNEL void __launch_bounds__(MM_TILE * MM_TILE)
matmul_f32(const float* __restrict__ W, const float* __restrict__ x, float* __restrict__ y, int N, int K, int M) {
    mm_tile<float, mm_f32, mm_f32>(W, x, y, N, K, M);
}

PB_KERNEL void __launch_bounds__(MM_TILE * MM_TILE)
matmul_f16(const u16* __restrict__ W, const float* __restrict__ x, float* __restrict__ y, int N, int K, int M) {
    mm_tile<u16, mm_f16, mm_round_f16>(W, x, y, N, K, M);
}

PB_KERNEL void __launch_bounds__(MM_TILE * MM_TILE)
matmul_bf16(const u16* __restrict__ W, const float* __restrict__ x, float* __restrict__ y, int N, int K, int M) {
    mm_tile<u16, pb_bf16_to_f32, mm_round_bf16>(W, x, y, N, K, M);
}

PB_KERNEL void to_f16(const float* __restrict__ x, u16* __restrict__ y, u64 n) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = pb_f32_to_f16(x[i]);
}

PB_KERNEL void to_bf16(const float* __restrict__ x, u16* __restrict__ y, u64 n) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = pb_f32_to_bf16(x[i]);
}
