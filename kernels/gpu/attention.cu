// attention.cu — dense causal attention of one pass over the KV cache,
// as the engine's dense attention (engine/attention.go unit) computes it:
// for query token t at position pos0 + t and head h (KV head g = h / (nh /
// nkv)), s_j = (q·k_j)·scale over the keys j ≤ pos0 + t, p = softmax(s)
// (s scaled, the max subtracted, Σ f64(expf(s_j − max)), p_j = e_j ·
// f32(1/Σ)), out = Σ_j p_j·v_j. K·Q and V·P are the CPU's MatMuls over the
// cache's type: an f16 or bf16 cache rounds q and p to that type before
// their products; a q8_0 cache takes q quantized to Q8_0 (quantize_q8_0,
// per head vector) for exact integer block dots scaled by f32(d_k·d_q),
// and expands its values to f32 (p unrounded), as kvCache.valuesT does.
// CPU twin: the engine's dense attention (kernels.KernelSet.Softmax over
// the MatMul of the cached keys and values). Tolerance: relative to
// Σ_j p_j·|v_j|: 1e-5 for f32 and q8_0 caches (sums in another order);
// 2e-3 for f16 and 1.6e-2 for bf16, where a p_j on a rounding boundary
// may take the neighbouring value (2^-11, 2^-8 relative).
//
// q: (tokens, nh, hd) f32 (q8_0: (tokens, nh, hd/32) Q8_0 blocks); out:
// (tokens, nh, hd) f32; K, V: (nkv, cap, hd) in the cache type.
// Launch: grid = (tokens, nh), block = ATT_THREADS, dynamic shared =
// 4·(pos0 + tokens) bytes (the scores).
//
// attn_fp_<kv> is the same attention over FlashPrefill's kept key blocks
// only (§5: the softmax renormalized over them; flashprefill.cu selects):
// key j counts for token t of head h iff sel[(h·nqb + t/B)·M + j/B], B =
// 2^bshift, the pass starting on a block boundary. Where a row keeps
// every block it is attn_<kv> to the bit. CPU twin: the engine's
// FlashPrefill attention (attention_flashprefill.go), whose sparse rows
// stream the kept blocks through the "flash" online softmax: the dense
// tolerances.
#include "blocks.h"

#define ATT_THREADS 128

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

// A float cache of element type E: K·Q and V·P round q and p with rnd.
template <typename E, float (*ld)(E), float (*rnd)(float)>
struct att_float {
    typedef float Q;
    static __device__ __forceinline__ int row_bytes(int hd) { return (int)sizeof(E) * hd; }
    static __device__ __forceinline__ float score(const float* q, const u8* k, int hd) {
        const E* kr = (const E*)k;
        float acc = 0.0f;
        for (int d = 0; d < hd; ++d) acc = fmaf(rnd(q[d]), ld(kr[d]), acc);
        return acc;
    }
    static __device__ __forceinline__ float value(const u8* v, int d) { return ld(((const E*)v)[d]); }
    static __device__ __forceinline__ float round_p(float p) { return rnd(p); }
};

__device__ __forceinline__ float att_id(float v) { return v; }
__device__ __forceinline__ float att_round_f16(float v) { return pb_f16_to_f32(pb_f32_to_f16(v)); }
__device__ __forceinline__ float att_round_bf16(float v) { return pb_bf16_to_f32(pb_f32_to_bf16(v)); }

// A q8_0 cache: q arrives as Q8_0 blocks.
struct att_q8_0 {
    typedef u8 Q;
    static __device__ __forceinline__ int row_bytes(int hd) { return hd / 32 * PB_Q8_0_BYTES; }
    static __device__ __forceinline__ float score(const u8* q, const u8* k, int hd) {
        float acc = 0.0f;
        for (int b = 0; b < hd / 32; ++b) {
            const u8 *kb = k + b * PB_Q8_0_BYTES, *qb = q + b * PB_Q8_0_BYTES;
            int isum = 0;
            for (int j = 0; j < 32; ++j) isum += pb_q8_0::q(kb, j) * pb_q8_0::q(qb, j);
            acc = fmaf(__fmul_rn(pb_q8_0::d(kb), pb_q8_0::d(qb)), (float)isum, acc);
        }
        return acc;
    }
    static __device__ __forceinline__ float value(const u8* v, int d) { return pb_dequant<pb_q8_0>(v, d); }
    static __device__ __forceinline__ float round_p(float p) { return p; }
};

template <class C>
__device__ __forceinline__ void att_rows(const typename C::Q* __restrict__ q, const u8* __restrict__ K, const u8* __restrict__ V,
                                         float* __restrict__ out, int nh, int nkv, int hd, int cap, int pos0, float scale,
                                         float* s, double* red, const u8* __restrict__ sel, int bshift) {
    const int t = blockIdx.x, h = blockIdx.y, g = h / (nh / nkv);
    const int nk = pos0 + t + 1, rb = C::row_bytes(hd);
    const int qrb = sizeof(typename C::Q) == 1 ? rb : hd;
    const typename C::Q* qr = q + ((i64)t * nh + h) * qrb;
    const u8* kg = K + (i64)g * cap * rb;
    const u8* vg = V + (i64)g * cap * rb;
    float mx = PB_NEG_INF;
    for (int j = threadIdx.x; j < nk; j += ATT_THREADS) {
        if (sel && !sel[j >> bshift]) continue;
        s[j] = C::score(qr, kg + (i64)j * rb, hd) * scale;
        mx = fmaxf(mx, s[j]);
    }
    mx = (float)att_reduce<true>((double)mx, red);
    double sum = 0.0;
    for (int j = threadIdx.x; j < nk; j += ATT_THREADS) {
        if (sel && !sel[j >> bshift]) {
            s[j] = 0.0f; // a dropped key: no weight
            continue;
        }
        float e = expf(s[j] - mx);
        s[j] = e;
        sum += (double)e;
    }
    const float inv = (float)(1.0 / att_reduce<false>(sum, red));
    for (int j = threadIdx.x; j < nk; j += ATT_THREADS) s[j] = C::round_p(s[j] * inv);
    __syncthreads();
    for (int d = threadIdx.x; d < hd; d += ATT_THREADS) {
        float acc = 0.0f;
        for (int j = 0; j < nk; ++j)
            if (!sel || sel[j >> bshift]) acc = fmaf(s[j], C::value(vg + (i64)j * rb, d), acc);
        out[((i64)t * nh + h) * hd + d] = acc;
    }
}

#define ATT_ARGS(Q) const Q* __restrict__ q, const u8* __restrict__ K, const u8* __restrict__ V, float* __restrict__ out, \
    int nh, int nkv, int hd, int cap, int pos0, float scale
#define ATT_BODY(SEL, BSHIFT, ...)       \
    extern __shared__ float att_s[];    \
    __shared__ double red[ATT_THREADS]; \
    att_rows<__VA_ARGS__>(q, K, V, out, nh, nkv, hd, cap, pos0, scale, att_s, red, SEL, BSHIFT);
#define ATT_FP_ARGS(Q) ATT_ARGS(Q), const u8* __restrict__ sel, int nqb, int M, int bshift
#define ATT_FP_SEL sel + ((i64)blockIdx.y * nqb + (blockIdx.x >> bshift)) * M

PB_KERNEL void __launch_bounds__(ATT_THREADS) attn_f32(ATT_ARGS(float)) { ATT_BODY(nullptr, 0, att_float<float, att_id, att_id>) }
PB_KERNEL void __launch_bounds__(ATT_THREADS) attn_f16(ATT_ARGS(float)) { ATT_BODY(nullptr, 0, att_float<u16, pb_f16_to_f32, att_round_f16>) }
PB_KERNEL void __launch_bounds__(ATT_THREADS) attn_bf16(ATT_ARGS(float)) { ATT_BODY(nullptr, 0, att_float<u16, pb_bf16_to_f32, att_round_bf16>) }
PB_KERNEL void __launch_bounds__(ATT_THREADS) attn_q8_0(ATT_ARGS(u8)) { ATT_BODY(nullptr, 0, att_q8_0) }
PB_KERNEL void __launch_bounds__(ATT_THREADS) attn_fp_f32(ATT_FP_ARGS(float)) { ATT_BODY(ATT_FP_SEL, bshift, att_float<float, att_id, att_id>) }
PB_KERNEL void __launch_bounds__(ATT_THREADS) attn_fp_f16(ATT_FP_ARGS(float)) { ATT_BODY(ATT_FP_SEL, bshift, att_float<u16, pb_f16_to_f32, att_round_f16>) }
PB_KERNEL void __launch_bounds__(ATT_THREADS) attn_fp_bf16(ATT_FP_ARGS(float)) { ATT_BODY(ATT_FP_SEL, bshift, att_float<u16, pb_bf16_to_f32, att_round_bf16>) }
PB_KERNEL void __launch_bounds__(ATT_THREADS) attn_fp_q8_0(ATT_FP_ARGS(u8)) { ATT_BODY(ATT_FP_SEL, bshift, att_q8_0) }
