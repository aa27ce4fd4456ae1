// matmul.cu — tiled matrix products y = x·Wᵀ for float weights (ggml's
// mul_mat: W is (N, K) row-major as stored in the GGUF, x is (M, K)
// activations, y is (M, N)). f32 accumulation with fmaf in k order, one
// output per (thread, token): the order, and so every bit, of the plain
// per-output loop acc = fmaf(w_k, x_k, acc), k = 0..K−1.
// CPU twin: kernels.KernelSet.MatMul with the reference "ref" variant as
// the oracle; F16 and BF16 round the activations to their type first, as
// the CPU converts them to the weight's vec_dot_type. Tolerance: the sum's order differs:
// |Δy| ≤ 1e-5 · Σ_k |w_k·x_k| + 1e-30.
//
// Design: a block of 16×16 threads computes a tile of MM_TILE = 16 output
// rows by MM_TOKENS = 64 tokens; K is walked in 16-wide slices staged in
// shared memory (the W slice once, the 64 tokens' x slice once), and each
// thread (tx, ty) accumulates row n0+tx for tokens m0+ty+16i, i < 4, so a
// staged weight serves 4 tokens from a register. Launch (gpu.MatMul): grid
// = (ceil(N/16), ceil(M/64)), block = (16, 16). Bytes read per pass: W
// once per tile of 64 tokens, es·N·K·ceil(M/64) (es the weight's element
// size), and x once per 16 rows, 4·M·K·ceil(N/16).
//
// to_f16 / to_bf16 round n f32 activations to the weight's type (the same
// rounding as the products' round_x and the CPU's vec_dot_type), stored as
// that type: the operand a vendor BLAS GEMM takes beside F16/BF16 weights.
// Exact. Launch: grid = ceil(n/256), block = 256.
#define MM_TILE 16
#define MM_TOKENS 64
#define MM_TPT (MM_TOKENS / MM_TILE) // tokens per thread

// mm_tile is both kernels' body: W's elements of type T widened by
// load_w, the activations rounded by round_x (the weight's vec_dot_type).
template <typename T, float (*load_w)(T), float (*round_x)(float)>
__device__ __forceinline__ void mm_tile(const T* __restrict__ W, const float* __restrict__ x, float* __restrict__ y, int N, int K, int M) {
    __shared__ float ws[MM_TILE][MM_TILE + 1];
    __shared__ float xs[MM_TOKENS][MM_TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int n0 = blockIdx.x * MM_TILE, m0 = blockIdx.y * MM_TOKENS;
    float acc[MM_TPT];
#pragma unroll
    for (int i = 0; i < MM_TPT; ++i) acc[i] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += MM_TILE) {
        const int k = k0 + tx;
        ws[ty][tx] = (n0 + ty < N && k < K) ? load_w(W[(i64)(n0 + ty) * K + k]) : 0.0f;
#pragma unroll
        for (int i = 0; i < MM_TPT; ++i) {
            const int m = m0 + ty + MM_TILE * i;
            xs[ty + MM_TILE * i][tx] = (m < M && k < K) ? round_x(x[(i64)m * K + k]) : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < MM_TILE; ++kk) {
            const float w = ws[tx][kk];
#pragma unroll
            for (int i = 0; i < MM_TPT; ++i) acc[i] = fmaf(w, xs[ty + MM_TILE * i][kk], acc[i]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < MM_TPT; ++i) {
        const int m = m0 + ty + MM_TILE * i;
        if (n0 + tx < N && m < M) y[(i64)m * N + n0 + tx] = acc[i];
    }
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
