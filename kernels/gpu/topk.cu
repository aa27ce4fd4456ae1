// topk.cu — the row's k largest logits, value descending, index ascending
// among equals. topk_f32 for k ≤ 32 (../shared/spec/gpu-runtime.md §5:
// per-thread register top-k, then a block merge in shared memory; one read
// of the row); topk_radix_f32 for any k ≤ 1024: a radix select of the k-th
// best logit over order-preserving 32-bit keys (four 8-bit passes, one
// shared histogram each), then every logit above it and the lowest-index
// ones equal to it gathered in index order, and those k sorted (a bitonic
// network in shared memory); five reads of the row.
// CPU twin: kernels.TopK: a NaN ranks below every number (picked only when
// fewer than k others exist), ties put the lower index first (−0 and +0
// are equal). Tolerance: exact (ids and values), the order is total.
//
// Launch: grid = rows, block = TOPK_THREADS (topk_radix_f32:
// TOPR_THREADS); k ≤ TOPK_K (TOPR_K), k ≤ V. ids, vals: (rows, k).
#define TOPK_K 32
#define TOPK_THREADS 128

// pb_better: does (va, ia) rank above (vb, ib)? An empty slot (index < 0)
// ranks below everything, a NaN below every number.
__device__ __forceinline__ bool pb_better(float va, i32 ia, float vb, i32 ib) {
    if (ib < 0) return ia >= 0;
    if (ia < 0) return false;
    bool na = va != va, nb = vb != vb;
    if (na || nb) return nb && (!na || ia < ib);
    return va > vb || (va == vb && ia < ib);
}

PB_KERNEL void __launch_bounds__(TOPK_THREADS)
topk_f32(const float* __restrict__ logits, int V, int k, i32* __restrict__ out_ids, float* __restrict__ out_vals) {
    __shared__ float sv[TOPK_THREADS * TOPK_K];
    __shared__ i32 si[TOPK_THREADS * TOPK_K];
    const i64 r = blockIdx.x;
    const float* row = logits + r * V;
    float tv[TOPK_K];
    i32 ti[TOPK_K];
#pragma unroll
    for (int s = 0; s < TOPK_K; ++s) { tv[s] = 0.0f; ti[s] = -1; }
    for (int j = threadIdx.x; j < V; j += TOPK_THREADS) {
        float cv = row[j];
        i32 ci = j;
        if (!pb_better(cv, ci, tv[TOPK_K - 1], ti[TOPK_K - 1])) continue;
        // Carry the new pair down the sorted list, swapping it with every
        // slot it beats: fully unrolled, so the list stays in registers.
#pragma unroll
        for (int s = 0; s < TOPK_K; ++s) {
            if (pb_better(cv, ci, tv[s], ti[s])) {
                float fv = tv[s]; i32 fi = ti[s];
                tv[s] = cv; ti[s] = ci;
                cv = fv; ci = fi;
            }
        }
    }
    float* myv = sv + threadIdx.x * TOPK_K;
    i32* myi = si + threadIdx.x * TOPK_K;
#pragma unroll
    for (int s = 0; s < TOPK_K; ++s) { myv[s] = tv[s]; myi[s] = ti[s]; }
    __syncthreads();
    // Tree merge: list t takes the best TOPK_K of lists t and t + stride.
    for (int stride = TOPK_THREADS / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) {
            const float* bv = sv + (threadIdx.x + stride) * TOPK_K;
            const i32* bi = si + (threadIdx.x + stride) * TOPK_K;
            int x = 0, y = 0;
#pragma unroll
            for (int s = 0; s < TOPK_K; ++s) {
                if (pb_better(bv[y], bi[y], myv[x], myi[x])) { tv[s] = bv[y]; ti[s] = bi[y]; ++y; }
                else { tv[s] = myv[x]; ti[s] = myi[x]; ++x; }
            }
        }
        __syncthreads();
        if (threadIdx.x < stride) {
#pragma unroll
            for (int s = 0; s < TOPK_K; ++s) { myv[s] = tv[s]; myi[s] = ti[s]; }
        }
        __syncthreads();
    }
    if (threadIdx.x < k && threadIdx.x < TOPK_K) {
        out_ids[r * k + threadIdx.x] = si[threadIdx.x];
        out_vals[r * k + threadIdx.x] = sv[threadIdx.x];
    }
}

#define TOPR_K 1024
#define TOPR_THREADS 256

// topr_key orders logits as pb_better does, larger is better: a NaN is 0,
// below every number (−inf is 0x007fffff); −0 is +0's key.
__device__ __forceinline__ u32 topr_key(float v) {
    u32 b = __float_as_uint(v);
    if (v != v) return 0u;
    if (b == 0x80000000u) b = 0u;
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

PB_KERNEL void __launch_bounds__(TOPR_THREADS)
topk_radix_f32(const float* __restrict__ logits, int V, int k, i32* __restrict__ out_ids, float* __restrict__ out_vals) {
    __shared__ u32 hist[256];
    __shared__ u32 sel[2]; // the pass's digit; then the ties still needed
    __shared__ int ngt[TOPR_THREADS], neq[TOPR_THREADS];
    __shared__ float cv[TOPR_K];
    __shared__ i32 ci[TOPR_K];
    const i64 r = blockIdx.x;
    const float* row = logits + r * V;
    const int tid = threadIdx.x;
    // 1. The k-th best key T, digit by digit from the top; need = how many
    // keys equal to T the top k holds (the rest lie above T).
    u32 prefix = 0u, mask = 0u, need = (u32)k;
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (int d = tid; d < 256; d += TOPR_THREADS) hist[d] = 0u;
        __syncthreads();
        for (int j = tid; j < V; j += TOPR_THREADS) {
            const u32 key = topr_key(row[j]);
            if ((key & mask) == prefix) atomicAdd(&hist[(key >> shift) & 255u], 1u);
        }
        __syncthreads();
        if (tid == 0) {
            u32 cum = 0u;
            for (int d = 255; d >= 0; --d) {
                if (cum + hist[d] >= need) {
                    sel[0] = (u32)d;
                    sel[1] = need - cum;
                    break;
                }
                cum += hist[d];
            }
        }
        __syncthreads();
        prefix |= sel[0] << shift;
        mask |= 255u << shift;
        need = sel[1];
        __syncthreads();
    }
    const u32 T = prefix;
    const int above = k - (int)need;
    // 2. Gather in index order: each thread's contiguous chunk, placed by
    // the counts of the chunks before it.
    const int chunk = (V + TOPR_THREADS - 1) / TOPR_THREADS;
    const int j0 = min(tid * chunk, V), j1 = min(j0 + chunk, V);
    int gt = 0, eq = 0;
    for (int j = j0; j < j1; ++j) {
        const u32 key = topr_key(row[j]);
        gt += key > T;
        eq += key == T;
    }
    ngt[tid] = gt;
    neq[tid] = eq;
    __syncthreads();
    if (tid == 0) {
        int sg = 0, se = 0;
        for (int t = 0; t < TOPR_THREADS; ++t) {
            const int g = ngt[t], e = neq[t];
            ngt[t] = sg;
            neq[t] = se;
            sg += g;
            se += e;
        }
    }
    __syncthreads();
    int pg = ngt[tid], pe = neq[tid];
    for (int j = j0; j < j1; ++j) {
        const float v = row[j];
        const u32 key = topr_key(v);
        int slot = -1;
        if (key > T) slot = pg++;
        else if (key == T && pe < (int)need) slot = above + pe++;
        if (slot >= 0) {
            cv[slot] = v;
            ci[slot] = j;
        }
    }
    int P = 1;
    while (P < k) P <<= 1;
    for (int i = k + tid; i < P; i += TOPR_THREADS) {
        cv[i] = 0.0f;
        ci[i] = -1; // ranks below everything
    }
    __syncthreads();
    // 3. Bitonic sort of the P slots, best first.
    for (int size = 2; size <= P; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            for (int i = tid; i < P; i += TOPR_THREADS) {
                const int j = i ^ stride;
                if (j > i) {
                    const bool first = (i & size) == 0; // this run sorts best first
                    const bool swap = first ? pb_better(cv[j], ci[j], cv[i], ci[i]) : pb_better(cv[i], ci[i], cv[j], ci[j]);
                    if (swap) {
                        const float tv = cv[i];
                        const i32 ti = ci[i];
                        cv[i] = cv[j];
                        ci[i] = ci[j];
                        cv[j] = tv;
                        ci[j] = ti;
                    }
                }
            }
            __syncthreads();
        }
    }
    for (int i = tid; i < k; i += TOPR_THREADS) {
        out_ids[r * k + i] = ci[i];
        out_vals[r * k + i] = cv[i];
    }
}
