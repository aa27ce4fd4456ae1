// rmsnorm.cu — RMSNorm of each row times a weight (ggml rms_norm + mul);
// the q/k head norms are the same kernel with one row per head.
// CPU twin: kernels.KernelSet.RMSNorm ("go": rmsNormGo). The squares are
// rounded to f32 and summed in f64 (here per thread, then across the block,
// an order other than the CPU's), the mean is rounded to f32, scale =
// 1/sqrtf(mean + eps), y = (x·scale)·w with both products rounded.
// Tolerance: the f64 sum's order only moves the f32 mean in rare ties:
// y within 1 ulp of the twin (in practice equal).
//
// Launch: grid = rows, block = RMS_THREADS; one row per block.
#define RMS_THREADS 256

PB_KERNEL void __launch_bounds__(RMS_THREADS)
rms_norm_f32(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int n, float eps) {
    __shared__ double part[RMS_THREADS / WARP];
    const float* xr = x + (i64)blockIdx.x * n;
    float* yr = y + (i64)blockIdx.x * n;
    double ss = 0.0;
    for (int i = threadIdx.x; i < n; i += RMS_THREADS) {
        float v = xr[i];
        float sq = v * v;
        ss += (double)sq;
    }
    for (int m = WARP / 2; m > 0; m >>= 1) ss += pb_shfl_xor(ss, m);
    if (threadIdx.x % WARP == 0) part[threadIdx.x / WARP] = ss;
    __syncthreads();
    double tot = 0.0;
    for (int i = 0; i < RMS_THREADS / WARP; ++i) tot += part[i];
    float mean = (float)(tot / (double)n);
    float scale = 1.0f / (float)sqrt((double)(mean + eps));
    for (int i = threadIdx.x; i < n; i += RMS_THREADS) {
        float t = xr[i] * scale;
        yr[i] = t * w[i];
    }
}
