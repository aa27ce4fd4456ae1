// moe.cu — the mixture-of-experts FFN of qwen35moe and qwen3next
// (../shared/spec/architectures.md §1.8) around the expert products (matmul.cu, q8_0.cu, one
// launch per expert over its rows, grouped by the host from moe_route's
// choice):
//
//   moe_route   the router's softmax over every expert, the top k in
//               descending probability (ties to the lower id), their
//               weights p / max(Σ p_sel, 2⁻¹⁴); 16 lanes per token
//   moe_gather  each assignment's input row, grouped by expert
//   moe_combine Σ_i w_i·y_i in slot order
//   moe_shared  out += sigmoid(gate logit)·shared expert
//
// CPU twin: kernels.KernelSet.Softmax (the vector kernels' twin,
// softmaxTwin: expGo, the float64 sum in 16 lanes) then kernels.Route;
// the engine's gather, combine and shared-expert loops (moe.go).
// Tolerance: moe_route, moe_gather and moe_combine exact (the twin's
// operations in its order, fmaf for its fused steps); moe_shared through
// the device's expf (within 2 ulp of the CPU's): 1e-6 relative.

// moe_exp is kernels.expGo bit for bit: n = rint(x·log2e), a two-step
// reduction and a degree-6 polynomial, scaled by 2^n in double.
__device__ __forceinline__ float moe_exp(float x) {
    if (x != x) return x;
    x = fminf(fmaxf(x, -104.0f), 89.0f);
    const float n = rintf(fmaf(x, 1.44269504088896341f, 0.0f));
    float r = fmaf(-n, 0.693359375f, x);
    r = fmaf(-n, -2.12194440e-4f, r);
    float p = fmaf(1.9875691500e-4f, r, 1.3981999507e-3f);
    p = fmaf(p, r, 8.3334519073e-3f);
    p = fmaf(p, r, 4.1665795894e-2f);
    p = fmaf(p, r, 1.6666665459e-1f);
    p = fmaf(p, r, 5.0000001201e-1f);
    const float y = __fadd_rn(fmaf(p, __fmul_rn(r, r), r), 1.0f);
    return (float)((double)y * __longlong_as_double((i64)((int)n + 1023) << 52));
}

// moe_max is Go's max: a NaN wins.
__device__ __forceinline__ float moe_max(float a, float b) { return (a != a || b != b) ? a + b : fmaxf(a, b); }

#define MOE_LANES 16     // lanes per token: the twin's 16 float64 sums
#define MOE_ROUTE_THREADS 64 // 4 tokens per block

// moe_better says whether candidate (pa, ia) precedes (pb, ib) in the
// twin's scan (the larger probability, ties and NaNs to the lower id; ia <
// 0 is no candidate).
__device__ __forceinline__ bool moe_better(float pa, int ia, float pb, int ib) {
    if (ia < 0) return false;
    if (ib < 0) return true;
    return pa > pb || (!(pb > pa) && ia < ib);
}

// logits: (tokens, E), turned into the probabilities in place; sel, w:
// (tokens, k); E ≤ 1024. Sixteen lanes per token (MOE_LANES, a segment of
// a warp of 32 or 64): lane l takes experts l, l+16, … in order, which is
// the twin's lane l of its 16 float64 sums, and those sums add in the
// twin's tree through xor shuffles (8, 4, 2, 1); each of the k rounds of
// the top k reduces the lanes' best (probability, id) the same way, and
// a lane marks its taken experts in a 64-bit mask (no local array).
// Launch (gpu.MoERoute): grid = ceil(tokens/4), block = MOE_ROUTE_THREADS.
// Bytes: the logits read and written twice per pass, 16·tokens·E.
PB_KERNEL void __launch_bounds__(MOE_ROUTE_THREADS)
moe_route(float* __restrict__ logits, int* __restrict__ sel, float* __restrict__ w, int E, int k, int tokens) {
    const int l = threadIdx.x % MOE_LANES;
    const int t = blockIdx.x * (MOE_ROUTE_THREADS / MOE_LANES) + threadIdx.x / MOE_LANES;
    const bool valid = t < tokens; // every lane takes part in the shuffles
    const int ne = valid ? E : 0;
    float* p = logits + (i64)(valid ? t : 0) * E;
    float mx = PB_NEG_INF;
    for (int i = l; i < ne; i += MOE_LANES) mx = moe_max(mx, p[i]);
    for (int m = MOE_LANES / 2; m > 0; m >>= 1) mx = moe_max(mx, pb_shfl_xor(mx, m));
    double acc = 0.0;
    for (int i = l; i < ne; i += MOE_LANES) {
        const float e = moe_exp(__fsub_rn(p[i], mx));
        p[i] = e;
        acc += (double)e;
    }
    // (acc_l + acc_l+8) for l < 8, then + v_l+4 for l < 4, then
    // (v0 + v2) + (v1 + v3): every lane ends with the total.
    for (int m = MOE_LANES / 2; m > 0; m >>= 1) acc += pb_shfl_xor(acc, m);
    const float inv = (float)(1.0 / acc);
    for (int i = l; i < ne; i += MOE_LANES) p[i] = __fmul_rn(p[i], inv);
    u64 taken = 0; // bit x/16 of this lane's experts
    double sum = 0.0;
    for (int i = 0; i < k; ++i) {
        int best = -1;
        float bp = 0.0f;
        for (int x = l; x < ne; x += MOE_LANES) {
            if (taken >> (x / MOE_LANES) & 1) continue;
            if (best >= 0 && !(p[x] > bp)) continue;
            best = x;
            bp = p[x];
        }
        for (int m = MOE_LANES / 2; m > 0; m >>= 1) {
            const float op = pb_shfl_xor(bp, m);
            const int ob = pb_shfl_xor(best, m);
            if (moe_better(op, ob, bp, best)) bp = op, best = ob;
        }
        if (best >= 0 && best % MOE_LANES == l) taken |= 1ull << (best / MOE_LANES);
        if (valid && l == 0) {
            sel[(i64)t * k + i] = best;
            w[(i64)t * k + i] = bp;
            sum += (double)bp;
        }
    }
    if (valid && l == 0) {
        const float den = moe_max((float)sum, 6.103515625e-5f);
        for (int i = 0; i < k; ++i) w[(i64)t * k + i] = w[(i64)t * k + i] / den;
    }
}

// X row g = xn row rows[g] / k (rows: assignment token·k + slot, grouped
// by expert). Launch: grid = (ceil(n_embd/256), tokens·k), block = 256.
PB_KERNEL void moe_gather(const float* __restrict__ xn, const int* __restrict__ rows, float* __restrict__ X, int e, int k) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, g = blockIdx.y;
    if (c < e) X[(i64)g * e + c] = xn[(i64)(rows[g] / k) * e + c];
}

// out row t = Σ_i w[t·k+i]·Y[slot[t·k+i]], the first product alone, each
// next one rounded and added in slot order. Launch: grid =
// (ceil(n_embd/256), tokens), block = 256.
PB_KERNEL void moe_combine(const float* __restrict__ Y, const int* __restrict__ slot, const float* __restrict__ w,
                           float* __restrict__ out, int e, int k) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, t = blockIdx.y;
    if (c >= e) return;
    const int* sl = slot + (i64)t * k;
    const float* wt = w + (i64)t * k;
    float acc = __fmul_rn(Y[(i64)sl[0] * e + c], wt[0]);
    for (int i = 1; i < k; ++i) acc = __fadd_rn(acc, __fmul_rn(Y[(i64)sl[i] * e + c], wt[i]));
    out[(i64)t * e + c] = acc;
}

// out row t += ys row t · sigmoid(gs[t]). Launch: grid = (ceil(n_embd/256),
// tokens), block = 256.
PB_KERNEL void moe_shared(float* __restrict__ out, const float* __restrict__ ys, const float* __restrict__ gs, int e) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, t = blockIdx.y;
    if (c >= e) return;
    const float g = 1.0f / (1.0f + expf(-gs[t]));
    out[(i64)t * e + c] = __fadd_rn(out[(i64)t * e + c], __fmul_rn(ys[(i64)t * e + c], g));
}
