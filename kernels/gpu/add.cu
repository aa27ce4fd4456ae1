// add.cu — the residual stream's adds and the projections' biases.
// CPU twin: the engine's f32 adds (engine/pass.go addTo and linear's
// bias). Tolerance: exact (one rounded f32 add per element).
//
// add_f32: x += y over n floats. Launch: grid = ceil(n/256), block = 256.
// add_rows_f32: each of rows rows of x (n floats) += b. Launch: grid =
// (ceil(n/256), rows), block = 256.
PB_KERNEL void add_f32(float* __restrict__ x, const float* __restrict__ y, i64 n) {
    i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = __fadd_rn(x[i], y[i]);
}

PB_KERNEL void add_rows_f32(float* __restrict__ x, const float* __restrict__ b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float* r = x + (i64)blockIdx.y * n;
        r[i] = __fadd_rn(r[i], b[i]);
    }
}
