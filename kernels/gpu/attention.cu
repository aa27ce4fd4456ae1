// attention.cu — causal attention of one pass over the KV cache, tiled
// as FlashAttention-2 with the online softmax, as the engine's "flash"
// attention (engine/attention_flash.go) walks the keys: steps of
// ATT_STEP = 128 keys (its flashBlock), per query row a running maximum m
// and a float64 running sum l of exp(s − m), the f32 output rescaled by
// α = exp(m_old − m_new) when m grows (o = o·α + Σ_step p_j·v_j), and
// divided by l at the end. For query token t at position pos0 + t and head
// h (KV head g = h / (nh / nkv)), s_j = (q·k_j)·scale over the keys
// j ≤ pos0 + t. K·Q is the CPU's product over the cache's type: an f16 or
// bf16 cache rounds q to that type (in d order, fused, as before: the
// scores are the dense kernel's to the bit); a q8_0 cache takes q quantized
// to Q8_0 (quantize_q8_0, per head vector) for exact integer block dots
// scaled by f32(d_k·d_q). V·P rounds the step's p = exp(s − m) to an f16
// or bf16 cache's type, as the dense attention rounds its probabilities,
// and expands a q8_0 cache's values to f32.
// CPU twins: the engine's dense attention (kernels.KernelSet.Softmax over
// the MatMul of the cached keys and values) and its flash attention.
// Tolerance: relative to Σ_j p_j·|v_j|: 1e-5 for f32 and q8_0 caches (sums
// in another order); 2e-3 for f16 and 1.6e-2 for bf16, where a p_j on a
// rounding boundary may take the neighbouring value (2^-11, 2^-8
// relative).
//
// Design (fixed shared memory, whatever the position): a block of
// ATT_THREADS threads attends ATT_ROWS consecutive query tokens of one
// head; each warp owns ATT_ROWS/warps of those rows (2 on CUDA, 4 on a
// 64-wide HIP wave). Per step the block stages the step's keys in shared
// memory kt at a time (kt = 128, 64, 32 or 16, from the row size), copied
// coalesced (the tile is kt contiguous cache rows), padded to an odd word
// stride so that the lanes' key rows fall in distinct banks; lane i scores
// keys i, i+WARP, … for all its warp's rows at once (one read of each key
// element serves them), in registers. The step's maximum and Σ go through
// shared memory (each lane's part, then every lane reads its rows' WARP
// parts in lane order: three barriers a step, no shuffles), p into P
// (shared); then the warp computes o for its rows: lane i owns dims i,
// i+WARP, … (≤ 256/WARP of them), reading each value row coalesced once
// for all its rows. Shared memory: 4·ATT_ROWS·ATT_STEP (P) + 8·ATT_ROWS·
// WARP (the lanes' parts) + kt·kstride (keys) + ATT_ROWS·qrb (the queries,
// rounded to the cache type) ≤ 48 KB for hd ≤ 256 (kernels/gpu/launch.go,
// Attention, chooses kt and kstride and passes them). Bytes read per pass, for n
// tokens of nh heads over L = pos0 + n keys of row size rb: keys and values
// ≈ 2·rb·nh·Σ_blocks(keys the block's last row sees) ≈ 2·rb·nh·(n/ATT_ROWS)·
// (pos0 + n/2), each K/V row read once per block of ATT_ROWS tokens
// (blocks of the same KV group share them through L2); queries and outputs
// once (qrb + 4·hd per row).
//
// q: (tokens, nh, hd) f32 (q8_0: (tokens, nh, hd/32) Q8_0 blocks); out:
// (tokens, nh, hd) f32; K, V: (nkv, cap, hd) in the cache type. Launch:
// grid = (ceil(tokens / ATT_ROWS), nh), block = ATT_THREADS, the dynamic
// shared memory above; kt and kstride are the last two arguments.
//
// attn_fp_<kv> is the same attention over FlashPrefill's kept key blocks
// only (§5: the softmax renormalized over them; flashprefill.cu selects):
// key j counts for token t of head h iff sel[(h·nqb + t/B)·M + j/B], B =
// 2^bshift, the pass starting on a block boundary; a step none of whose
// keys any row of the block keeps is skipped whole (its keys and values
// are not read). CPU twin: the engine's FlashPrefill attention
// (attention_flashprefill.go), whose sparse rows stream the kept blocks
// through the "flash" online softmax: the dense tolerances.
#include "blocks.h"

#define ATT_THREADS 128
#define ATT_ROWS 8
#define ATT_STEP 128
#define ATT_NW (ATT_THREADS / WARP) // warps per block
#define ATT_RPW (ATT_ROWS / ATT_NW) // rows per warp
#define ATT_KPL (ATT_STEP / WARP)   // a step's keys per lane
#define ATT_DPL (256 / WARP)        // head dims per lane (hd ≤ 256)

// A float cache of element type E: K·Q and V·P round q and p with rnd.
// The queries are staged as f32 already rounded; scores adds q·k for R
// rows (q rows qrb bytes apart) into acc, in d order.
template <typename E, float (*ld)(E), float (*rnd)(float)>
struct att_float {
    typedef float Q;
    static __device__ __forceinline__ int row_bytes(int hd) { return (int)sizeof(E) * hd; }
    static __device__ __forceinline__ void stage_q(u8* dst, const Q* src, int hd) {
        for (int d = 0; d < hd; ++d) ((float*)dst)[d] = rnd(src[d]);
    }
    template <int R>
    static __device__ __forceinline__ void scores(const u8* q, int qrb, const u8* k, int hd, float* acc) {
        const E* kr = (const E*)k;
        for (int d = 0; d < hd; ++d) {
            const float kv = ld(kr[d]);
#pragma unroll
            for (int r = 0; r < R; ++r) acc[r] = fmaf(((const float*)(q + r * qrb))[d], kv, acc[r]);
        }
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
    static __device__ __forceinline__ void stage_q(u8* dst, const Q* src, int hd) {
        for (int i = 0; i < row_bytes(hd); ++i) dst[i] = src[i];
    }
    template <int R>
    static __device__ __forceinline__ void scores(const u8* q, int qrb, const u8* k, int hd, float* acc) {
        for (int b = 0; b < hd / 32; ++b) {
            const u8* kb = k + b * PB_Q8_0_BYTES;
            int isum[R];
#pragma unroll
            for (int r = 0; r < R; ++r) isum[r] = 0;
            for (int j = 0; j < 32; ++j) {
                const int kq = pb_q8_0::q(kb, j);
#pragma unroll
                for (int r = 0; r < R; ++r) isum[r] += kq * pb_q8_0::q(q + r * qrb + b * PB_Q8_0_BYTES, j);
            }
            const float dk = pb_q8_0::d(kb);
#pragma unroll
            for (int r = 0; r < R; ++r)
                acc[r] = fmaf(__fmul_rn(dk, pb_q8_0::d(q + r * qrb + b * PB_Q8_0_BYTES)), (float)isum[r], acc[r]);
        }
    }
    static __device__ __forceinline__ float value(const u8* v, int d) { return pb_dequant<pb_q8_0>(v, d); }
    static __device__ __forceinline__ float round_p(float p) { return p; }
};

// att_copy_rows copies nr rows of rb bytes (contiguous at src) into dst
// rows kstride bytes apart: consecutive threads take consecutive words.
__device__ __forceinline__ void att_copy_rows(u8* dst, const u8* __restrict__ src, int nr, int rb, int kstride) {
    if ((rb & 3) == 0) {
        const int w = rb >> 2, sw = kstride >> 2;
        for (int x = threadIdx.x; x < nr * w; x += ATT_THREADS) ((u32*)dst)[(x / w) * sw + x % w] = ((const u32*)src)[x];
    } else {
        const int w = rb >> 1, sw = kstride >> 1;
        for (int x = threadIdx.x; x < nr * w; x += ATT_THREADS) ((u16*)dst)[(x / w) * sw + x % w] = ((const u16*)src)[x];
    }
}

template <class C>
__device__ __forceinline__ void att_rows(const typename C::Q* __restrict__ q, const u8* __restrict__ K, const u8* __restrict__ V,
                                         float* __restrict__ out, int tokens, int nh, int nkv, int hd, int cap, int pos0, float scale,
                                         u8* smem, const u8* __restrict__ sel, int nqb, int M, int bshift, int kt, int kstride) {
    const int h = blockIdx.y, g = h / (nh / nkv), t0 = blockIdx.x * ATT_ROWS;
    const int nr = min(ATT_ROWS, tokens - t0); // the block's live rows
    const int rb = C::row_bytes(hd), qrb = sizeof(typename C::Q) == 1 ? rb : 4 * hd;
    const int nkmax = pos0 + t0 + nr; // keys the block's last row sees
    const int lane = threadIdx.x % WARP, r0 = threadIdx.x / WARP * ATT_RPW;
    float* P = (float*)smem;            // (ATT_ROWS, ATT_STEP) the step's p
    float* pm = P + ATT_ROWS * ATT_STEP; // (ATT_ROWS, WARP) the lanes' step maxima
    float* ps = pm + ATT_ROWS * WARP;    // (ATT_ROWS, WARP) the lanes' step sums
    u8* Ks = (u8*)(ps + ATT_ROWS * WARP); // (kt, kstride) staged keys
    u8* Qs = Ks + kt * kstride;         // (ATT_ROWS, qrb) staged queries
    const u8* kg = K + (i64)g * cap * rb;
    const u8* vg = V + (i64)g * cap * rb;
    const u8* selr = sel ? sel + (i64)h * nqb * M : nullptr; // this head's rows: (nqb, M)

    for (int r = threadIdx.x; r < nr; r += ATT_THREADS)
        C::stage_q(Qs + r * qrb, q + ((i64)(t0 + r) * nh + h) * (qrb / (int)sizeof(typename C::Q)), hd);

    float m[ATT_RPW], o[ATT_RPW][ATT_DPL];
    double l[ATT_RPW];
#pragma unroll
    for (int i = 0; i < ATT_RPW; ++i) {
        m[i] = PB_NEG_INF;
        l[i] = 0.0;
#pragma unroll
        for (int c = 0; c < ATT_DPL; ++c) o[i][c] = 0.0f;
    }
    // Three barriers per step (and one more per extra key tile): the keys
    // staged; the lanes' maxima written; p and the lanes' sums written.
    // Each buffer is rewritten only after a barrier that follows its last
    // read.
    for (int k0 = 0; k0 < nkmax; k0 += ATT_STEP) {
        const int klen = min(ATT_STEP, nkmax - k0);
        if (selr) { // skip a step no row keeps any key of (uniform over the block)
            bool any = false;
            for (int r = 0; r < nr && !any; ++r) {
                const u8* sr = selr + (i64)((t0 + r) >> bshift) * M;
                for (int b = k0 >> bshift; b <= (k0 + klen - 1) >> bshift && !any; ++b) any = sr[b] != 0;
            }
            if (!any) continue;
        }
        // The step's scores, in registers: lane holds keys lane + WARP·c.
        float sv[ATT_RPW][ATT_KPL];
#pragma unroll
        for (int i = 0; i < ATT_RPW; ++i)
#pragma unroll
            for (int c = 0; c < ATT_KPL; ++c) sv[i][c] = PB_NEG_INF;
        for (int kb = 0; kb < klen; kb += kt) {
            const int nk = min(kt, klen - kb);
            if (kb > 0) __syncthreads(); // the previous tile's keys are consumed
            att_copy_rows(Ks, kg + (i64)(k0 + kb) * rb, nk, rb, kstride);
            __syncthreads();
#pragma unroll
            for (int c = 0; c < ATT_KPL; ++c) {
                const int kk = lane + c * WARP - kb; // this lane's key c, within the tile
                if (kk < 0 || kk >= nk) continue;
                const int j = k0 + kb + kk;
                float acc[ATT_RPW];
#pragma unroll
                for (int i = 0; i < ATT_RPW; ++i) acc[i] = 0.0f;
                C::template scores<ATT_RPW>(Qs + r0 * qrb, qrb, Ks + kk * kstride, hd, acc);
#pragma unroll
                for (int i = 0; i < ATT_RPW; ++i) {
                    const int r = r0 + i;
                    bool keep = r < nr && j <= pos0 + t0 + r;
                    if (keep && selr) keep = selr[(i64)((t0 + r) >> bshift) * M + (j >> bshift)] != 0;
                    if (keep) sv[i][c] = acc[i] * scale;
                }
            }
        }
#pragma unroll
        for (int i = 0; i < ATT_RPW; ++i) {
            float mx = PB_NEG_INF;
#pragma unroll
            for (int c = 0; c < ATT_KPL; ++c) mx = fmaxf(mx, sv[i][c]);
            pm[(r0 + i) * WARP + lane] = mx;
        }
        __syncthreads(); // the lanes' maxima
        float alpha[ATT_RPW];
#pragma unroll
        for (int i = 0; i < ATT_RPW; ++i) {
            float mx = PB_NEG_INF;
            for (int L = 0; L < WARP; ++L) mx = fmaxf(mx, pm[(r0 + i) * WARP + L]);
            const float mnew = fmaxf(m[i], mx);
            float sum = 0.0f;
#pragma unroll
            for (int c = 0; c < ATT_KPL; ++c) {
                const int x = lane + c * WARP;
                // A masked key (−inf) weighs 0; so does every key of a row
                // with none in the step (mnew −inf).
                const float e = sv[i][c] == PB_NEG_INF ? 0.0f : expf(sv[i][c] - mnew);
                sum = __fadd_rn(sum, e);
                if (x < klen) P[(r0 + i) * ATT_STEP + x] = C::round_p(e);
            }
            ps[(r0 + i) * WARP + lane] = sum;
            alpha[i] = 1.0f;
            if (mx != PB_NEG_INF) {
                alpha[i] = l[i] != 0.0 ? expf(m[i] - mnew) : 0.0f; // the first step: nothing to rescale
                m[i] = mnew;
            }
        }
        __syncthreads(); // p and the lanes' sums
#pragma unroll
        for (int i = 0; i < ATT_RPW; ++i) { // a row with no key in the step adds 0 at α = 1
            double sum = 0.0;
            for (int L = 0; L < WARP; ++L) sum += (double)ps[(r0 + i) * WARP + L];
            l[i] = l[i] * (double)alpha[i] + sum;
        }
        float pv[ATT_RPW][ATT_DPL];
#pragma unroll
        for (int i = 0; i < ATT_RPW; ++i)
#pragma unroll
            for (int c = 0; c < ATT_DPL; ++c) pv[i][c] = 0.0f;
#pragma unroll
        for (int c = 0; c < ATT_DPL; ++c) {
            const int d = lane + c * WARP;
            if (d >= hd) break;
            for (int x = 0; x < klen; ++x) {
                const float vv = C::value(vg + (i64)(k0 + x) * rb, d);
#pragma unroll
                for (int i = 0; i < ATT_RPW; ++i) pv[i][c] = fmaf(P[(r0 + i) * ATT_STEP + x], vv, pv[i][c]);
            }
        }
#pragma unroll
        for (int i = 0; i < ATT_RPW; ++i)
#pragma unroll
            for (int c = 0; c < ATT_DPL; ++c)
                o[i][c] = alpha[i] == 1.0f ? __fadd_rn(o[i][c], pv[i][c]) : __fadd_rn(__fmul_rn(o[i][c], alpha[i]), pv[i][c]);
    }
#pragma unroll
    for (int i = 0; i < ATT_RPW; ++i) {
        const int r = r0 + i;
        if (r >= nr) continue;
        const float inv = (float)(1.0 / l[i]);
        float* orow = out + ((i64)(t0 + r) * nh + h) * hd;
#pragma unroll
        for (int c = 0; c < ATT_DPL; ++c) {
            const int d = lane + c * WARP;
            if (d < hd) orow[d] = __fmul_rn(o[i][c], inv);
        }
    }
}

#define ATT_ARGS(Q) const Q* __restrict__ q, const u8* __restrict__ K, const u8* __restrict__ V, float* __restrict__ out, \
    int tokens, int nh, int nkv, int hd, int cap, int pos0, float scale
#define ATT_TILE int kt, int kstride
#define ATT_BODY(SEL, NQB, M, BSHIFT, ...) \
    extern __shared__ u8 att_smem[];       \
    att_rows<__VA_ARGS__>(q, K, V, out, tokens, nh, nkv, hd, cap, pos0, scale, att_smem, SEL, NQB, M, BSHIFT, kt, kstride);
#define ATT_FP_ARGS(Q) ATT_ARGS(Q), const u8* __restrict__ sel, int nqb, int M, int bshift, ATT_TILE

PB_KERNEL void __launch_bounds__(ATT_THREADS) attn_f32(ATT_ARGS(float), ATT_TILE) { ATT_BODY(nullptr, 0, 0, 0, att_float<float, att_id, att_id>) }
PB_KERNEL void __launch_bounds__(ATT_THREADS) attn_f16(ATT_ARGS(float), ATT_TILE) { ATT_BODY(nullptr, 0, 0, 0, att_float<u16, pb_f16_to_f32, att_round_f16>) }
PB_KERNEL void __launch_bounds__(ATT_THREADS) attn_bf16(ATT_ARGS(float), ATT_TILE) { ATT_BODY(nullptr, 0, 0, 0, att_float<u16, pb_bf16_to_f32, att_round_bf16>) }
PB_KERNEL void __launch_bounds__(ATT_THREADS) attn_q8_0(ATT_ARGS(u8), ATT_TILE) { ATT_BODY(nullptr, 0, 0, 0, att_q8_0) }
PB_KERNEL void __launch_bounds__(ATT_THREADS) attn_fp_f32(ATT_FP_ARGS(float)) { ATT_BODY(sel, nqb, M, bshift, att_float<float, att_id, att_id>) }
PB_KERNEL void __launch_bounds__(ATT_THREADS) attn_fp_f16(ATT_FP_ARGS(float)) { ATT_BODY(sel, nqb, M, bshift, att_float<u16, pb_f16_to_f32, att_round_f16>) }
PB_KERNEL void __launch_bounds__(ATT_THREADS) attn_fp_bf16(ATT_FP_ARGS(float)) { ATT_BODY(sel, nqb, M, bshift, att_float<u16, pb_bf16_to_f32, att_round_bf16>) }
PB_KERNEL void __launch_bounds__(ATT_THREADS) attn_fp_q8_0(ATT_FP_ARGS(u8)) { ATT_BODY(sel, nqb, M, bshift, att_q8_0) }
