// moe.cu — the mixture-of-experts FFN of qwen35moe and qwen3next
// (../shared/spec/architectures.md §1.8) around the expert products (matmul.cu, q8_0.cu, one
// launch per expert over its rows, grouped by the host from moe_route's
// choice):
//
//   moe_route   the router's softmax over every expert, the top k in
//               descending probability (ties to the lower id), their
//               weights p / max(Σ p_sel, 2⁻¹⁴); one thread per token
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

// logits: (tokens, E), turned into the probabilities in place; sel, w:
// (tokens, k). Launch: grid = ceil(tokens/64), block = 64.
PB_KERNEL void moe_route(float* __restrict__ logits, int* __restrict__ sel, float* __restrict__ w, int E, int k, int tokens) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= tokens) return;
    float* p = logits + (i64)t * E;
    int* s = sel + (i64)t * k;
    float mx = PB_NEG_INF;
    for (int i = 0; i < E; ++i) mx = moe_max(mx, p[i]);
    double acc[16];
    for (int l = 0; l < 16; ++l) acc[l] = 0.0;
    for (int i = 0; i < E; ++i) {
        float e = moe_exp(__fsub_rn(p[i], mx));
        p[i] = e;
        acc[i % 16] += (double)e;
    }
    double v[8];
    for (int l = 0; l < 8; ++l) v[l] = acc[l] + acc[l + 8];
    for (int l = 0; l < 4; ++l) v[l] += v[l + 4];
    const float inv = (float)(1.0 / ((v[0] + v[2]) + (v[1] + v[3])));
    for (int i = 0; i < E; ++i) p[i] = __fmul_rn(p[i], inv);
    for (int i = 0; i < k; ++i) {
        int best = -1;
        for (int x = 0; x < E; ++x) {
            if (best >= 0 && !(p[x] > p[best])) continue;
            bool taken = false;
            for (int j = 0; j < i; ++j) taken = taken || s[j] == x;
            if (!taken) best = x;
        }
        s[i] = best;
    }
    double sum = 0.0;
    for (int i = 0; i < k; ++i) sum += (double)p[s[i]];
    const float den = moe_max((float)sum, 6.103515625e-5f);
    for (int i = 0; i < k; ++i) w[(i64)t * k + i] = p[s[i]] / den;
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
