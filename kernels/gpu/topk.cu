// topk.cu — the row's k ≤ 32 largest logits, value descending, index
// ascending among equals (../shared/spec/gpu-runtime.md §5: per-thread register top-k,
// then a block merge in shared memory; one read of the row).
// CPU twin: kernels.TopK: a NaN ranks below every number (picked only when
// fewer than k others exist), ties put the lower index first. Tolerance:
// exact (ids and values), the order is total.
//
// Launch: grid = rows, block = TOPK_THREADS; k ≤ TOPK_K. ids, vals: (rows, k).
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
