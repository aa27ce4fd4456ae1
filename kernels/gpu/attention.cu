// attention.cu — dense causal attention of one pass over the KV cache,
// as the engine's dense attention (engine/attention.go unit) computes it:
// for query token t at position pos0 + t and head h (KV head g = h / (nh /
// nkv)), s_j = (q·k_j)·scale over the keys j ≤ pos0 + t, p = softmax(s)
// (s scaled, the max subtracted, Σ f64(expf(s_j − max)), p_j = e_j ·
// f32(1/Σ)), out = Σ_j p_j·v_j. An f16 cache rounds q and p to f16 before
// their products, as the CPU's F16 matmul rounds its activations.
// CPU twin: the engine's dense attention (kernels.KernelSet.Softmax over
// the MatMul of the cached keys and values). Tolerance: 1e-5 relative to
// Σ_j p_j·|v_j| for an f32 cache (sums in another order); 2e-3 for f16,
// where a p_j on a rounding boundary may take the neighbouring f16.
//
// q, out: (tokens, nh, hd) f32; K, V: (nkv, cap, hd) in the cache type.
// Launch: grid = (tokens, nh), block = ATT_THREADS, dynamic shared =
// 4·(pos0 + tokens) bytes (the scores).
#define ATT_THREADS 128

__device__ __forceinline__ float att_ld_f32(float v) { return v; }
__device__ __forceinline__ float att_ld_f16(u16 v) { return pb_f16_to_f32(v); }
__device__ __forceinline__ float att_round_f16(float v) { return pb_f16_to_f32(pb_f32_to_f16(v)); }

// att_reduce combines every thread's v (max or sum) into all of them.
template <bool MAX>
__device__ __forceinline__ double att_reduce(double v, double* red) {
    red[threadIdx.x] = v;
    __syncthreads();
    for (int s = ATT_THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = MAX ? fmax(red[threadIdx.x], red[threadIdx.x + s]) : red[threadIdx.x] + red[threadIdx.x + s];
        __syncthreads();
    }
    double r = red[0];
    __syncthreads();
    return r;
}

template <typename T, float (*ld)(T), float (*rnd)(float)>
__device__ __forceinline__ void att_rows(const float* __restrict__ q, const T* __restrict__ K, const T* __restrict__ V,
                                         float* __restrict__ out, int nh, int nkv, int hd, int cap, int pos0, float scale,
                                         float* s, double* red) {
    const int t = blockIdx.x, h = blockIdx.y, g = h / (nh / nkv);
    const int nk = pos0 + t + 1;
    const float* qr = q + ((i64)t * nh + h) * hd;
    const T* kg = K + (i64)g * cap * hd;
    const T* vg = V + (i64)g * cap * hd;
    float mx = PB_NEG_INF;
    for (int j = threadIdx.x; j < nk; j += ATT_THREADS) {
        const T* kr = kg + (i64)j * hd;
        float acc = 0.0f;
        for (int d = 0; d < hd; ++d) acc = fmaf(rnd(qr[d]), ld(kr[d]), acc);
        s[j] = acc * scale;
        mx = fmaxf(mx, s[j]);
    }
    mx = (float)att_reduce<true>((double)mx, red);
    double sum = 0.0;
    for (int j = threadIdx.x; j < nk; j += ATT_THREADS) {
        float e = expf(s[j] - mx);
        s[j] = e;
        sum += (double)e;
    }
    const float inv = (float)(1.0 / att_reduce<false>(sum, red));
    for (int j = threadIdx.x; j < nk; j += ATT_THREADS) s[j] = rnd(s[j] * inv);
    __syncthreads();
    for (int d = threadIdx.x; d < hd; d += ATT_THREADS) {
        float acc = 0.0f;
        for (int j = 0; j < nk; ++j) acc = fmaf(s[j], ld(vg[(i64)j * hd + d]), acc);
        out[((i64)t * nh + h) * hd + d] = acc;
    }
}

PB_KERNEL void __launch_bounds__(ATT_THREADS)
attn_f32(const float* __restrict__ q, const float* __restrict__ K, const float* __restrict__ V, float* __restrict__ out,
         int nh, int nkv, int hd, int cap, int pos0, float scale) {
    extern __shared__ float att_s[];
    __shared__ double red[ATT_THREADS];
    att_rows<float, att_ld_f32, att_ld_f32>(q, K, V, out, nh, nkv, hd, cap, pos0, scale, att_s, red);
}

PB_KERNEL void __launch_bounds__(ATT_THREADS)
attn_f16(const float* __restrict__ q, const u16* __restrict__ K, const u16* __restrict__ V, float* __restrict__ out,
         int nh, int nkv, int hd, int cap, int pos0, float scale) {
    extern __shared__ float att_s[];
    __shared__ double red[ATT_THREADS];
    att_rows<u16, att_ld_f16, att_round_f16>(q, K, V, out, nh, nkv, hd, cap, pos0, scale, att_s, red);
}
