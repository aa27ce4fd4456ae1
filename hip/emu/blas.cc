// blas.cc — an emulated vendor BLAS for the emulated runtime (runtime.cc):
// libcublas.so.12 (built plain) or librocblas.so.4 (PBEMU_HIP), just the
// calls plexbench's hip package binds (hip/blas.go): a handle, its stream,
// the version, and GemmEx for F16, BF16 or F32 operands with F32 output and
// F32 compute, with the vendors' enum values and status codes. Device
// pointers are host pointers (runtime.cc's memory model) and work runs in
// the calling thread, so streams only order it. The sums are float64 in k
// order, rounded to float once: an oracle for the engine's BLAS path, not a
// model of any library's rounding.
//
// It is not part of the emulated runtime (which, like a driver, has no
// BLAS): a test selects it with PLEXBENCH_CUBLAS_LIB / PLEXBENCH_ROCBLAS_LIB.
// Its handle refuses to be created unless the emulated runtime is loaded
// (it exports pbemu_runtime). Faults, read once: PLEXBENCH_EMU_BLAS_FAIL_CREATE=1
// (handle creation fails: CUBLAS_STATUS_NOT_INITIALIZED / rocblas_status_internal_error),
// PLEXBENCH_EMU_BLAS_FAIL_GEMM=N (the Nth GEMM fails: CUBLAS_STATUS_EXECUTION_FAILED /
// rocblas_status_internal_error). PLEXBENCH_EMU_BLAS_SUM=f32 sums as
// kernels/gpu/matmul.cu does instead (fmaf in k order from 0): then a
// product through this BLAS equals our own kernel's to the bit, which pins
// the engine's layout and rounding end to end. PLEXBENCH_EMU_VERBOSE=1 says
// why a call failed.
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>

#include <mutex>
#include <set>

#include "common.h"

namespace {

#ifdef PBEMU_HIP
const bool kHIP = true;
// rocblas_status
enum { OK = 0, E_HANDLE = 1, E_NOT_SUPPORTED = 2, E_POINTER = 3, E_SIZE = 4, E_INTERNAL = 6, E_INIT = 6, E_EXEC = 6, E_VALUE = 11 };
enum { OP_N = 111, OP_T = 112 };
enum { T_F16 = 150, T_F32 = 151, T_BF16 = 168 };
enum { COMPUTE_32F = 151 };
#else
const bool kHIP = false;
// cublasStatus_t
enum { OK = 0, E_INIT = 1, E_VALUE = 7, E_HANDLE = 7, E_POINTER = 7, E_SIZE = 7, E_EXEC = 13, E_INTERNAL = 14, E_NOT_SUPPORTED = 15 };
enum { OP_N = 0, OP_T = 1 };
enum { T_F32 = 0, T_F16 = 2, T_BF16 = 14 };
enum { COMPUTE_32F = 68 };
#endif

struct Handle {
    void* stream = nullptr;
};

std::mutex mu;
std::set<Handle*> handles;
bool loaded = false, verbose = false, fail_create = false, sum_f32 = false;
long long fail_gemm = 0, gemms = 0;

void load() {
    if (loaded) return;
    verbose = env_long("PLEXBENCH_EMU_VERBOSE", 0) != 0;
    fail_create = env_long("PLEXBENCH_EMU_BLAS_FAIL_CREATE", 0) != 0;
    fail_gemm = env_long("PLEXBENCH_EMU_BLAS_FAIL_GEMM", 0);
    sum_f32 = env_str("PLEXBENCH_EMU_BLAS_SUM") == "f32";
    loaded = true;
}

int fail(int code, const char* what) {
    if (verbose) fprintf(stderr, "plexbench gpu-emu (%s): %s: status %d\n", kHIP ? "rocblas" : "cublas", what, code);
    return code;
}

float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000 | (man << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else { // subnormal: normalize
        int e = -1;
        do {
            man <<= 1;
            e++;
        } while (!(man & 0x400));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

double load_elem(const void* p, int type, long long i) {
    switch (type) {
    case T_F16: return half_to_float(((const uint16_t*)p)[i]);
    case T_BF16: {
        uint32_t bits = (uint32_t)((const uint16_t*)p)[i] << 16;
        float f;
        memcpy(&f, &bits, 4);
        return f;
    }
    default: return ((const float*)p)[i];
    }
}

bool known_type(int t) { return t == T_F16 || t == T_BF16 || t == T_F32; }

// gemm is C = α·op(A)·op(B) + β·C, column-major, float64 sums in k order.
int gemm(const char* call, Handle* h, int ta, int tb, int m, int n, int k, const float* alpha, const void* A, int at, int lda,
         const void* B, int bt, int ldb, const float* beta, float* C, int ct, int ldc, int compute) {
    std::lock_guard<std::mutex> g(mu);
    load();
    if (!handles.count(h)) return fail(E_HANDLE, call);
    if ((ta != OP_N && ta != OP_T) || (tb != OP_N && tb != OP_T)) return fail(E_VALUE, "unknown operation");
    if (!known_type(at) || at != bt || ct != T_F32 || compute != COMPUTE_32F) return fail(E_NOT_SUPPORTED, "operand or compute type");
    int ar = ta == OP_N ? m : k, br = tb == OP_N ? k : n;
    if (m < 0 || n < 0 || k < 0 || lda < (ar > 1 ? ar : 1) || ldb < (br > 1 ? br : 1) || ldc < (m > 1 ? m : 1))
        return fail(E_SIZE, "sizes or leading dimensions");
    if (m == 0 || n == 0) return OK;
    if (!alpha || !beta || !C || (k > 0 && (!A || !B))) return fail(E_POINTER, "null pointer");
    if (fail_gemm > 0 && ++gemms == fail_gemm) return fail(E_EXEC, "PLEXBENCH_EMU_BLAS_FAIL_GEMM");
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < m; i++) {
            double s = 0;
            float sf = 0;
            for (int l = 0; l < k; l++) {
                double a = load_elem(A, at, ta == OP_N ? i + (long long)l * lda : l + (long long)i * lda);
                double b = load_elem(B, bt, tb == OP_N ? l + (long long)j * ldb : j + (long long)l * ldb);
                if (sum_f32)
                    sf = fmaf((float)a, (float)b, sf);
                else
                    s += a * b;
            }
            if (sum_f32) s = sf;
            float* c = &C[i + (long long)j * ldc];
            double v = (double)*alpha * s;
            if (*beta != 0) v += (double)*beta * *c;
            *c = (float)v;
        }
    }
    return OK;
}

int create(Handle** out) {
    std::lock_guard<std::mutex> g(mu);
    load();
    if (!out) return fail(E_POINTER, "create: null result");
    if (fail_create) return fail(E_INIT, "PLEXBENCH_EMU_BLAS_FAIL_CREATE");
    if (!dlsym(RTLD_DEFAULT, "pbemu_runtime")) return fail(E_INIT, "create: the emulated runtime is not loaded");
    Handle* h = new Handle;
    handles.insert(h);
    *out = h;
    return OK;
}

int destroy(Handle* h) {
    std::lock_guard<std::mutex> g(mu);
    if (!handles.erase(h)) return fail(E_HANDLE, "destroy: not a handle");
    delete h;
    return OK;
}

int set_stream(Handle* h, void* s) {
    std::lock_guard<std::mutex> g(mu);
    if (!handles.count(h)) return fail(E_HANDLE, "set stream: not a handle");
    h->stream = s;
    return OK;
}

} // namespace

#ifdef PBEMU_HIP
API int rocblas_create_handle(Handle** h) { return create(h); }
API int rocblas_destroy_handle(Handle* h) { return destroy(h); }
API int rocblas_set_stream(Handle* h, void* s) { return set_stream(h, s); }
API int rocblas_get_version_string(char* buf, size_t n) {
    static const char v[] = "4.0.0-plexbench-emulated";
    if (!buf || n < sizeof v) return E_SIZE;
    memcpy(buf, v, sizeof v);
    return OK;
}
API const char* rocblas_status_to_string(int s) {
    static const char* names[] = {"rocblas_status_success", "rocblas_status_invalid_handle", "rocblas_status_not_implemented",
                                  "rocblas_status_invalid_pointer", "rocblas_status_invalid_size", "rocblas_status_memory_error",
                                  "rocblas_status_internal_error", "rocblas_status_perf_degraded", "rocblas_status_size_query_mismatch",
                                  "rocblas_status_size_increased", "rocblas_status_size_unchanged", "rocblas_status_invalid_value",
                                  "rocblas_status_continue", "rocblas_status_check_numerics_fail", "rocblas_status_excluded_from_build",
                                  "rocblas_status_arch_mismatch"};
    return s >= 0 && s < (int)(sizeof names / sizeof *names) ? names[s] : "<undefined rocblas_status>";
}
API int rocblas_gemm_ex(Handle* h, int ta, int tb, int m, int n, int k, const float* alpha, const void* a, int at, int lda, const void* b,
                        int bt, int ldb, const float* beta, const float* c, int ct, int ldc, float* d, int dt, int ldd, int compute,
                        int algo, int solution, unsigned flags) {
    (void)solution;
    if (algo != 0 || flags != 0) return fail(E_NOT_SUPPORTED, "rocblas_gemm_ex: algo or flags");
    // β = 0 in every call plexbench makes: D = op(A)·op(B), C unread; the
    // in-place form (C = D) is what it passes.
    if (c != d || ct != dt || ldc != ldd) return fail(E_NOT_SUPPORTED, "rocblas_gemm_ex: C and D differ");
    return gemm("rocblas_gemm_ex", h, ta, tb, m, n, k, alpha, a, at, lda, b, bt, ldb, beta, d, dt, ldd, compute);
}
#else
API int cublasCreate_v2(Handle** h) { return create(h); }
API int cublasDestroy_v2(Handle* h) { return destroy(h); }
API int cublasSetStream_v2(Handle* h, void* s) { return set_stream(h, s); }
API int cublasGetVersion_v2(Handle* h, int* v) {
    if (!v) return E_VALUE;
    (void)h;
    *v = 120000; // 12.0.0, as CUDA 12's CUBLAS_VERSION encodes it
    return OK;
}
API int cublasGetProperty(int which, int* v) {
    static const int ver[3] = {12, 0, 0};
    if (!v || which < 0 || which > 2) return E_VALUE;
    *v = ver[which];
    return OK;
}
API int cublasGemmEx(Handle* h, int ta, int tb, int m, int n, int k, const float* alpha, const void* a, int at, int lda, const void* b,
                     int bt, int ldb, const float* beta, float* c, int ct, int ldc, int compute, int algo) {
    if (algo != -1 && algo != 99) return fail(E_NOT_SUPPORTED, "cublasGemmEx: algo");
    return gemm("cublasGemmEx", h, ta, tb, m, n, k, alpha, a, at, lda, b, bt, ldb, beta, c, ct, ldc, compute);
}
#endif
