// flashprefill.cu — FlashPrefill V2's block selection on the device
// (../shared/spec/flashprefill.md §2–4), for one pass of a prefill window
// and one layer: the mean cached key of every key block (fp_pool_<kv>,
// one per KV cache type), then each query block's scores against them and
// §4's rule (fp_select). The sparse attention over the kept blocks is
// attention.cu's attn_fp_<kv>.
//
// Selection is discrete, so it must come out of the same arithmetic as the
// CPU's, not merely close to it: every value is the one
// kernels.FlashPrefill.Pool and .BlockScores compute, bit for bit, and so
// is the selection (kernels.FlashPrefill.SelectRow's rule, ties included).
// What makes that hold on nvrtc and hiprtc, whose compilers contract
// a·b + c into an FMA by default: the pooled sums and A add float64s one
// at a time in the CPU's order (explicit __dadd_rn/__dmul_rn where a
// product meets an add); pb_fp_dot's products of float32s are exact in
// float64, so its FMAs equal a product and an add; pb_fp_exp is
// kernels.FlashPrefillExp step for step, its polynomial in explicit FMAs;
// max and the comparisons are exact. No libm call takes part.
// CPU twin: kernels.FlashPrefill.Pool (pooled keys), .BlockScores (A)
// and .SelectRow (the selection and kept count). Tolerance: exact.
//
// fp_pool_<kv>: K (nkv, cap, hd) in the cache type; pooled (nkv, M, hd)
// f32, blocks [0, ceil(n/B)) written. Launch: grid = (ceil(n/B), nkv),
// block = FP_THREADS.
// fp_select: q (tokens, nh, hd) f32, the pass's queries from position
// pos0 = qb0·B; for query block qb0 + x (x < nqb) and query head h, A and
// sel rows at ((h·nqb + x)·M): A f64 (kb ≤ qb written), sel u8 (1 kept,
// 0 not; kb ≤ qb written); *kept += the kept count. Launch: grid = (nqb,
// nh), block = FP_THREADS.
#include "blocks.h"

#define FP_THREADS 64

// pb_fp_exp is kernels.FlashPrefillExp.
__device__ __forceinline__ double pb_fp_exp(double x) {
    if (!(x >= -708.0)) return 0.0;
    if (x > 709.0) return __longlong_as_double(0x7ff0000000000000ll);
    const double k = rint(__dmul_rn(x, 0x1.71547652b82fep+0));
    double r = fma(-k, 0x1.62e42feep-1, x);
    r = fma(-k, 0x1.a39ef35793c76p-33, r);
    double p = 1.0 / 6227020800.0;
    p = fma(p, r, 1.0 / 479001600.0);
    p = fma(p, r, 1.0 / 39916800.0);
    p = fma(p, r, 1.0 / 3628800.0);
    p = fma(p, r, 1.0 / 362880.0);
    p = fma(p, r, 1.0 / 40320.0);
    p = fma(p, r, 1.0 / 5040.0);
    p = fma(p, r, 1.0 / 720.0);
    p = fma(p, r, 1.0 / 120.0);
    p = fma(p, r, 1.0 / 24.0);
    p = fma(p, r, 1.0 / 6.0);
    p = fma(p, r, 0.5);
    p = fma(p, r, 1.0);
    p = fma(p, r, 1.0);
    return __dmul_rn(p, __longlong_as_double((i64)((long long)k + 1023) << 52));
}

// pb_fp_dot is kernels.FlashPrefillDot: lane l sums i ≡ l (mod 8) in
// increasing i, then ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)).
__device__ __forceinline__ double pb_fp_dot(const float* __restrict__ x, const float* __restrict__ y, int n) {
    double l0 = 0.0, l1 = 0.0, l2 = 0.0, l3 = 0.0, l4 = 0.0, l5 = 0.0, l6 = 0.0, l7 = 0.0;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        l0 = fma((double)x[i], (double)y[i], l0);
        l1 = fma((double)x[i + 1], (double)y[i + 1], l1);
        l2 = fma((double)x[i + 2], (double)y[i + 2], l2);
        l3 = fma((double)x[i + 3], (double)y[i + 3], l3);
        l4 = fma((double)x[i + 4], (double)y[i + 4], l4);
        l5 = fma((double)x[i + 5], (double)y[i + 5], l5);
        l6 = fma((double)x[i + 6], (double)y[i + 6], l6);
        l7 = fma((double)x[i + 7], (double)y[i + 7], l7);
    }
    // The tail: lanes 0..n%8−1 take one more term each.
    if (i < n) l0 = fma((double)x[i], (double)y[i], l0);
    if (i + 1 < n) l1 = fma((double)x[i + 1], (double)y[i + 1], l1);
    if (i + 2 < n) l2 = fma((double)x[i + 2], (double)y[i + 2], l2);
    if (i + 3 < n) l3 = fma((double)x[i + 3], (double)y[i + 3], l3);
    if (i + 4 < n) l4 = fma((double)x[i + 4], (double)y[i + 4], l4);
    if (i + 5 < n) l5 = fma((double)x[i + 5], (double)y[i + 5], l5);
    if (i + 6 < n) l6 = fma((double)x[i + 6], (double)y[i + 6], l6);
    return __dadd_rn(__dadd_rn(__dadd_rn(l0, l1), __dadd_rn(l2, l3)), __dadd_rn(__dadd_rn(l4, l5), __dadd_rn(l6, l7)));
}

// Element i of a cached key row, as kernels.Dequantize expands it.
__device__ __forceinline__ float fp_ld_f32(const u8* r, int i) { return ((const float*)r)[i]; }
__device__ __forceinline__ float fp_ld_f16(const u8* r, int i) { return pb_f16_to_f32(((const u16*)r)[i]); }
__device__ __forceinline__ float fp_ld_bf16(const u8* r, int i) { return pb_bf16_to_f32(((const u16*)r)[i]); }
__device__ __forceinline__ float fp_ld_q8_0(const u8* r, int i) { return pb_dequant<pb_q8_0>(r, i); }

// fp_pool is kernels.FlashPrefill.Pool: Σ f64(k) over the block's keys in
// order, times f64(1/count), rounded to f32.
template <float (*ld)(const u8*, int)>
__device__ __forceinline__ void fp_pool(const u8* __restrict__ K, float* __restrict__ pooled, int hd, int cap, int rb, int n,
                                        int B, int M) {
    const int kb = blockIdx.x, g = blockIdx.y;
    const int k0 = kb * B, k1 = min(k0 + B, n);
    const double inv = 1.0 / (double)(k1 - k0);
    for (int i = threadIdx.x; i < hd; i += FP_THREADS) {
        double s = 0.0;
        for (int k = k0; k < k1; ++k) s = __dadd_rn(s, (double)ld(K + ((i64)g * cap + k) * rb, i));
        pooled[((i64)g * M + kb) * hd + i] = (float)__dmul_rn(s, inv);
    }
}

#define FP_POOL_ARGS const u8* __restrict__ K, float* __restrict__ pooled, int hd, int cap, int n, int B, int M
PB_KERNEL void __launch_bounds__(FP_THREADS) fp_pool_f32(FP_POOL_ARGS) { fp_pool<fp_ld_f32>(K, pooled, hd, cap, 4 * hd, n, B, M); }
PB_KERNEL void __launch_bounds__(FP_THREADS) fp_pool_f16(FP_POOL_ARGS) { fp_pool<fp_ld_f16>(K, pooled, hd, cap, 2 * hd, n, B, M); }
PB_KERNEL void __launch_bounds__(FP_THREADS) fp_pool_bf16(FP_POOL_ARGS) { fp_pool<fp_ld_bf16>(K, pooled, hd, cap, 2 * hd, n, B, M); }
PB_KERNEL void __launch_bounds__(FP_THREADS) fp_pool_q8_0(FP_POOL_ARGS) {
    fp_pool<fp_ld_q8_0>(K, pooled, hd, cap, hd / 32 * PB_Q8_0_BYTES, n, B, M);
}

// fp_score is s(q, kb) = f64(dot · τ).
__device__ __forceinline__ double fp_score(const float* q, const float* k, int hd, double tau) {
    return __dmul_rn(pb_fp_dot(q, k, hd), tau);
}

PB_KERNEL void __launch_bounds__(FP_THREADS)
    fp_select(const float* __restrict__ q, const float* __restrict__ pooled, u8* __restrict__ sel, double* __restrict__ A,
              u32* __restrict__ kept, int nh, int nkv, int hd, int pos0, int L, int qb0, int nqb, int M, int B, double tau,
              double alpha, int sink, int window, int last_n, int budget) {
    __shared__ double red[FP_THREADS];
    const int x = blockIdx.x, h = blockIdx.y, g = h / (nh / nkv);
    const int qb = qb0 + x, nq = min(B, L - qb * B);
    const float* kg = pooled + (i64)g * M * hd;
    double* a = A + ((i64)h * nqb + x) * M;
    u8* sr = sel + ((i64)h * nqb + x) * M;
    // Query i of the block is pass token qb·B + i − pos0; it counts
    // against key block kb from i = kb·B + B − 1 − qb·B on (§3).
    const float* qr = q + ((i64)(qb * B - pos0) * nh + h) * hd;
    const i64 qstride = (i64)nh * hd;
    double mx = __longlong_as_double((long long)0xfff0000000000000ull);
    for (int kb = threadIdx.x; kb <= qb; kb += FP_THREADS)
        for (int i = min(max(kb * B + B - 1 - qb * B, 0), nq); i < nq; ++i)
            mx = fmax(mx, fp_score(qr + i * qstride, kg + (i64)kb * hd, hd, tau));
    red[threadIdx.x] = mx;
    __syncthreads();
    for (int s = FP_THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmax(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    mx = red[0];
    for (int kb = threadIdx.x; kb <= qb; kb += FP_THREADS) {
        double sum = 0.0;
        for (int i = min(max(kb * B + B - 1 - qb * B, 0), nq); i < nq; ++i)
            sum = __dadd_rn(sum, pb_fp_exp(__dadd_rn(fp_score(qr + i * qstride, kg + (i64)kb * hd, hd, tau), -mx)));
        a[kb] = sum;
    }
    __syncthreads();
    if (threadIdx.x != 0) return;
    // §4's rule (kernels selectRow), sequentially over the row.
    int n = 0;
    if (qb >= M - last_n) {
        for (int kb = 0; kb <= qb; ++kb) sr[kb] = 1;
        n = qb + 1;
    } else {
        double amax = 0.0;
        for (int kb = 0; kb <= qb; ++kb) amax = fmax(amax, a[kb]);
        const double thr = __dmul_rn(alpha, amax);
        for (int kb = 0; kb <= qb; ++kb) {
            const u8 on = a[kb] >= thr || kb < sink || qb - kb < window;
            sr[kb] = on;
            n += on;
        }
        // The top-budget blocks by A (ties: the earlier block), marked 2
        // while chosen.
        if (budget > 0 && n < qb + 1) {
            for (int r = 0; r < min(budget, qb + 1); ++r) {
                int best = -1;
                for (int kb = 0; kb <= qb; ++kb)
                    if (!(sr[kb] & 2) && (best < 0 || a[kb] > a[best])) best = kb;
                n += !(sr[best] & 1);
                sr[best] = 3;
            }
            for (int kb = 0; kb <= qb; ++kb) sr[kb] = sr[kb] != 0;
        }
    }
    atomicAdd(kept, (u32)n);
}
