// pick.cu — the per-row logit reduction of ../shared/spec/gpu-runtime.md §5: the row's
// max and first argmax, Σ f64(expf(x − max)) and the logits of a few
// requested ids; nothing vocabulary-sized leaves the device.
// CPU twin: kernels.Pick. max, argmax and the picked logits are exact
// (the same strict-greater scan: a NaN is never the max unless row[0] is
// one, ties keep the lowest index). Σexp: each term's expf is within 2 ulp
// of the CPU's and the f64 sum runs in another order. Tolerance: sum
// within 3e-7 relative.
//
// Two reads of the row (the max, then the sum) keep each term identical
// in form to the CPU's; a 1 MB row stays in L2 between them.
// Launch: grid = rows, block = PICK_THREADS. ids, picked: (rows, nids).
#define PICK_THREADS 256

PB_KERNEL void __launch_bounds__(PICK_THREADS)
pick_f32(const float* __restrict__ logits, int V, const i32* __restrict__ ids, int nids,
         float* __restrict__ out_max, i32* __restrict__ out_arg, double* __restrict__ out_sum,
         float* __restrict__ picked) {
    __shared__ float smax[PICK_THREADS / WARP];
    __shared__ i32 sarg[PICK_THREADS / WARP];
    __shared__ double ssum[PICK_THREADS / WARP];
    __shared__ float rowmax;
    const i64 r = blockIdx.x;
    const float* row = logits + r * V;
    const int lane = threadIdx.x % WARP, wid = threadIdx.x / WARP;
    if (V <= 0) {
        if (threadIdx.x == 0) { out_max[r] = PB_NEG_INF; out_arg[r] = -1; out_sum[r] = 0.0; }
        for (int i = threadIdx.x; i < nids; i += PICK_THREADS) picked[r * nids + i] = __int_as_float(0x7fc00000);
        return;
    }
    // Every thread starts from row[0], as the CPU scan does.
    float m = row[0];
    i32 a = 0;
    for (int j = threadIdx.x; j < V; j += PICK_THREADS) {
        float v = row[j];
        if (v > m) { m = v; a = j; }
    }
    for (int s = WARP / 2; s > 0; s >>= 1) {
        float m2 = pb_shfl_xor(m, s);
        i32 a2 = pb_shfl_xor(a, s);
        if (m2 > m || (m2 == m && a2 < a)) { m = m2; a = a2; }
    }
    if (lane == 0) { smax[wid] = m; sarg[wid] = a; }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < PICK_THREADS / WARP; ++w) {
            if (smax[w] > m || (smax[w] == m && sarg[w] < a)) { m = smax[w]; a = sarg[w]; }
        }
        rowmax = m;
        out_max[r] = m;
        out_arg[r] = a;
    }
    __syncthreads();
    m = rowmax;
    double s = 0.0;
    for (int j = threadIdx.x; j < V; j += PICK_THREADS) {
        float d = row[j] - m;
        s += (double)expf(d);
    }
    for (int k = WARP / 2; k > 0; k >>= 1) s += pb_shfl_xor(s, k);
    if (lane == 0) ssum[wid] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        double t = 0.0;
        for (int w = 0; w < PICK_THREADS / WARP; ++w) t += ssum[w];
        out_sum[r] = t;
    }
    for (int i = threadIdx.x; i < nids; i += PICK_THREADS) {
        i32 id = ids[r * nids + i];
        picked[r * nids + i] = (id >= 0 && id < V) ? row[id] : __int_as_float(0x7fc00000);
    }
}
