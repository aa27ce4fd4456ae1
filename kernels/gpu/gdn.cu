// gdn.cu — the Gated DeltaNet layer of the hybrids (../shared/spec/architectures.md §5.6),
// one kernel per step; the projections are matmul.cu's / q8_0.cu's, the
// gated norm rmsnorm.cu's and swiglu.cu's.
//
//   gdn_gates      step 4: β = sigmoid(b), decay = expf(softplus(a + dt)·A)
//   gdn_split_ba   qwen3next's fused projection into β and α (§5.4)
//   gdn_conv       step 5: the causal depthwise conv over [state, mixed], then silu
//   gdn_conv_state step 5: the conv state becomes the window's last d_conv−1 rows
//   gdn_l2norm     step 7: each q and k head divided by max(‖x‖, eps)
//   gdn_delta      step 8: the delta rule, a group of a value head's columns per block
//
// CPU twin: kernels.GDNGates; the engine's split (gdn.go); kernels.ConvRow
// then kernels.KernelSet.SwiGLU(x, 1); the engine's state copy;
// kernels.L2Norm; kernels.DeltaRule. Tolerance: gdn_delta, gdn_split_ba,
// gdn_conv_state and gdn_conv's sums are exact (every product and sum
// rounded alone, in the twin's order: a state column belongs to one
// thread); gdn_gates and gdn_conv's silu go through the device's expf and
// log (within 2 ulp of the CPU's): 1e-6 relative; gdn_l2norm sums its
// squares in f64 in another order: 1 ulp (2.4e-7 relative).

// Rows: mixed, act (tokens, conv_dim) with q (key_dim) | k (key_dim) |
// v (value_dim); beta, decay (tokens, H_v); state (d_conv−1, conv_dim);
// S (H_v, d_k, d_v); o (tokens, value_dim).

// Launch: grid = ceil(tokens·H_v/256), block = 256.
PB_KERNEL void gdn_gates(float* __restrict__ beta, float* __restrict__ decay, const float* __restrict__ dt,
                         const float* __restrict__ a, int hv, i64 total) {
    i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    int j = (int)(i % hv);
    beta[i] = 1.0f / (1.0f + expf(-beta[i]));
    float x = __fadd_rn(decay[i], dt[j]);
    float sp = x > 20.0f ? x : (float)log((double)(1.0f + expf(x)));
    decay[i] = expf(__fmul_rn(sp, a[j]));
}

// ba: (tokens, 2·H_v), per key head kg [β of its r v-heads | α of them].
// Launch: grid = ceil(tokens·H_v/256), block = 256.
PB_KERNEL void gdn_split_ba(const float* __restrict__ ba, float* __restrict__ beta, float* __restrict__ alpha,
                            int hv, int r, i64 total) {
    i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    i64 t = i / hv;
    int j = (int)(i % hv), kg = j / r, k = j % r;
    const float* row = ba + t * 2 * hv + kg * 2 * r;
    beta[i] = row[k];
    alpha[i] = row[r + k];
}

// taps: (conv_dim, d_conv), channel c's taps at c·d_conv, oldest first.
// Launch: grid = (ceil(conv_dim/256), tokens), block = 256.
PB_KERNEL void gdn_conv(const float* __restrict__ mixed, const float* __restrict__ state, const float* __restrict__ taps,
                        float* __restrict__ act, int cd, int dc) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, t = blockIdx.y;
    if (c >= cd) return;
    float sum = 0.0f;
    for (int k = 0; k < dc; ++k) {
        int src = t - (dc - 1) + k; // row of mixed; < 0: of the state
        float x = src >= 0 ? mixed[(i64)src * cd + c] : state[(i64)(src + dc - 1) * cd + c];
        sum = __fadd_rn(sum, __fmul_rn(x, taps[(i64)c * dc + k]));
    }
    act[(i64)t * cd + c] = sum / (expf(-sum) + 1.0f); // silu, as swiglu.cu with u = 1
}

// Row i of the new state is the window's row tokens + i: state row i +
// tokens while that is a state row, else mixed's. Each thread walks its
// channel's rows upward, reading row i + tokens before anything writes it.
// Launch: grid = ceil(conv_dim/256), block = 256.
PB_KERNEL void gdn_conv_state(const float* __restrict__ mixed, float* __restrict__ state, int cd, int dc, int tokens) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cd) return;
    for (int i = 0; i < dc - 1; ++i) {
        int src = tokens - (dc - 1) + i;
        state[(i64)i * cd + c] = src >= 0 ? mixed[(i64)src * cd + c] : state[(i64)(i + tokens) * cd + c];
    }
}

#define L2_THREADS 128

// Launch: grid = (tokens, 2·H_k), block = L2_THREADS: head h of token t
// is act[t·conv_dim + h·d_k :][: d_k].
PB_KERNEL void __launch_bounds__(L2_THREADS)
gdn_l2norm(float* __restrict__ act, int cd, int dk, float eps) {
    __shared__ double part[L2_THREADS / WARP];
    float* x = act + (i64)blockIdx.x * cd + (i64)blockIdx.y * dk;
    double ss = 0.0;
    for (int i = threadIdx.x; i < dk; i += L2_THREADS) ss += (double)__fmul_rn(x[i], x[i]);
    for (int m = WARP / 2; m > 0; m >>= 1) ss += pb_shfl_xor(ss, m);
    if (threadIdx.x % WARP == 0) part[threadIdx.x / WARP] = ss;
    __syncthreads();
    double tot = 0.0;
    for (int i = 0; i < L2_THREADS / WARP; ++i) tot += part[i];
    float norm = (float)sqrt((double)(float)tot);
    float scale = 1.0f / (norm != norm ? norm : fmaxf(norm, eps)); // Go's max keeps a NaN
    for (int i = threadIdx.x; i < dk; i += L2_THREADS) x[i] = __fmul_rn(x[i], scale);
}

#define GDN_COLS 32

// Value head j (key head j mod H_k, or j / r when grouped) over the pass's
// tokens in order: S ← decay·S, u = Sᵀk, δ = (v − u)·β, S ← S + kδᵀ,
// o = scale·Sᵀq. Column c of S needs only column c, so each thread runs
// its column through every token alone: no barrier, and the columns of a
// head spread over blocks of GDN_COLS (one launch for the layer: H_v·
// ceil(d_v/GDN_COLS) blocks rather than one per value head). Threads of a
// warp take consecutive columns: S's rows are read and written coalesced.
// Bytes per pass: S read and written once per token, 8·H_v·d_k·d_v·tokens
// (the state stays in L1/L2: d_k·GDN_COLS·4 bytes per block), q, k
// broadcast and v, o once per token.
// Launch (gpu.GDNDelta): grid = (H_v, ceil(d_v/GDN_COLS)), block = GDN_COLS.
PB_KERNEL void __launch_bounds__(GDN_COLS)
gdn_delta(float* __restrict__ S, const float* __restrict__ act, const float* __restrict__ decay,
          const float* __restrict__ beta, float* __restrict__ o, int tokens, int hk, int hv, int dk, int dv,
          int grouped, float scale) {
    const int j = blockIdx.x, kh = grouped ? j / (hv / hk) : j % hk;
    const int c = blockIdx.y * GDN_COLS + threadIdx.x;
    if (c >= dv) return;
    const int kd = hk * dk, cd = 2 * kd + hv * dv;
    float* Sj = S + (i64)j * dk * dv;
    for (int t = 0; t < tokens; ++t) {
        const float* row = act + (i64)t * cd;
        const float *q = row + kh * dk, *k = row + kd + kh * dk, *v = row + 2 * kd + j * dv;
        const float e = decay[(i64)t * hv + j], b = beta[(i64)t * hv + j];
        float u = 0.0f;
        for (int r = 0; r < dk; ++r) {
            float s = __fmul_rn(Sj[(i64)r * dv + c], e);
            Sj[(i64)r * dv + c] = s;
            u = __fadd_rn(u, __fmul_rn(s, k[r]));
        }
        const float d = __fmul_rn(__fsub_rn(v[c], u), b);
        float acc = 0.0f;
        for (int r = 0; r < dk; ++r) {
            float s = __fadd_rn(Sj[(i64)r * dv + c], __fmul_rn(k[r], d));
            Sj[(i64)r * dv + c] = s;
            acc = __fadd_rn(acc, __fmul_rn(s, q[r]));
        }
        o[(i64)t * hv * dv + (i64)j * dv + c] = __fmul_rn(acc, scale);
    }
}
