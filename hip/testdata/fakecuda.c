// fakecuda.c — a stand-in for libcuda.so.1 and libnvrtc.so.13, built by
// fake_test.go with the system C compiler, so that the CUDA path of the
// hip package (binding, argument passing through purego, the cache, the
// error mapping) runs end to end without a GPU. Device memory is host
// memory; one "kernel", scale_f32(float* y, const float* x, int n, float
// s), runs on the CPU inside cuLaunchKernel. fake_set chooses what cuInit
// returns, the device count and the compute capability's major.
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
static int compiles, loads;
static unsigned last_launch[8];

static int init_rc = 0, devices = 1, cc_major = 9;
void fake_set(int rc, int n, int cc) { init_rc = rc; devices = n; cc_major = cc; }

CUresult cuInit(unsigned flags) { (void)flags; return init_rc; }
CUresult cuDriverGetVersion(int* v) { *v = 13000; return 0; }
CUresult cuDeviceGetCount(int* n) { *n = devices; return 0; }
CUresult cuDeviceGet(int* d, int i) { *d = i; return 0; }
CUresult cuDeviceGetName(char* buf, int n, int d) { (void)d; strncpy(buf, "Fake H200", n); return 0; }
CUresult cuDeviceGetAttribute(int* v, int attr, int d) {
    (void)d;
    switch (attr) {
    case 1: *v = 1024; break;
    case 8: *v = 49152; break;
    case 10: *v = 32; break;
    case 16: *v = 132; break;
    case 75: *v = cc_major; break;
    case 76: *v = 0; break;
    default: *v = 0;
    }
    return 0;
}
CUresult cuMemGetInfo_v2(size_t* f, size_t* t) { *f = 1ull << 30; *t = 141ull << 30; return 0; }
CUresult cuDevicePrimaryCtxRetain(void** ctx, int d) { *ctx = (void*)(long)(0x1000 + d); return 0; }
CUresult cuCtxSetCurrent(void* ctx) { return ctx ? 0 : 201; }
CUresult cuStreamCreate(void** s, unsigned f) { (void)f; *s = malloc(1); return 0; }
CUresult cuStreamSynchronize(void* s) { (void)s; return 0; }
CUresult cuStreamDestroy_v2(void* s) { free(s); return 0; }
CUresult cuMemAlloc_v2(void** p, size_t n) { *p = malloc(n); return *p ? 0 : 2; }
CUresult cuMemFree_v2(void* p) { free(p); return 0; }
CUresult cuMemsetD8Async(void* p, unsigned char v, size_t n, void* s) { (void)s; memset(p, v, n); return 0; }
CUresult cuMemcpyHtoDAsync_v2(void* d, const void* h, size_t n, void* s) { (void)s; memcpy(d, h, n); return 0; }
CUresult cuMemcpyDtoHAsync_v2(void* h, const void* d, size_t n, void* s) { (void)s; memcpy(h, d, n); return 0; }
CUresult cuModuleLoadData(void** m, const void* image) {
    if (strncmp((const char*)image, "FAKECUBIN", 9) != 0) return 200; // CUDA_ERROR_INVALID_IMAGE
    loads++;
    *m = malloc(1);
    return 0;
}
CUresult cuModuleGetFunction(void** f, void* m, const char* name) {
    (void)m;
    if (strcmp(name, "scale_f32") != 0) return 500; // CUDA_ERROR_NOT_FOUND
    *f = (void*)0x5ca1e;
    return 0;
}
CUresult cuModuleUnload(void* m) { free(m); return 0; }
CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shmem, void* s, void** params, void** extra) {
    (void)s;
    if (f != (void*)0x5ca1e || extra) return 1;
    unsigned l[8] = {gx, gy, gz, bx, by, bz, shmem, 0};
    memcpy(last_launch, l, sizeof l);
    float* y = *(float**)params[0];
    const float* x = *(const float**)params[1];
    int n = *(int*)params[2];
    float sc = *(float*)params[3];
    for (int i = 0; i < n; i++) y[i] = x[i] * sc;
    return 0;
}
CUresult cuEventCreate(void** e, unsigned f) { (void)f; *e = malloc(1); return 0; }
CUresult cuEventRecord(void* e, void* s) { (void)e; (void)s; return 0; }
CUresult cuEventSynchronize(void* e) { (void)e; return 0; }
CUresult cuEventElapsedTime(float* ms, void* a, void* b) { (void)a; (void)b; *ms = 1.5f; return 0; }
CUresult cuEventDestroy_v2(void* e) { free(e); return 0; }
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuGetErrorName(CUresult rc, const char** s) {
    switch (rc) {
    case 100: *s = "CUDA_ERROR_NO_DEVICE"; return 0;
    case 200: *s = "CUDA_ERROR_INVALID_IMAGE"; return 0;
    case 500: *s = "CUDA_ERROR_NOT_FOUND"; return 0;
    }
    return 1;
}

// ---- NVRTC ----
typedef struct { char* src; char* code; char* log; } prog;
int nvrtcVersion(int* ma, int* mi) { *ma = 13; *mi = 0; return 0; }
int nvrtcCreateProgram(prog** p, const char* src, const char* name, int nh, const char* const* h, const char* const* in) {
    (void)name; (void)nh; (void)h; (void)in;
    *p = calloc(1, sizeof(prog));
    (*p)->src = strdup(src);
    return 0;
}
int nvrtcCompileProgram(prog* p, int n, const char* const* opts) {
    compiles++;
    if (strstr(p->src, "#error")) { p->log = strdup("fake.cu(1): error: boom\n1 error detected"); return 6; }
    size_t len = 10;
    for (int i = 0; i < n; i++) len += strlen(opts[i]) + 1;
    p->code = calloc(1, len + 1);
    strcpy(p->code, "FAKECUBIN");
    for (int i = 0; i < n; i++) { strcat(p->code, " "); strcat(p->code, opts[i]); }
    p->log = strdup("");
    return 0;
}
int nvrtcGetProgramLogSize(prog* p, size_t* n) { *n = strlen(p->log) + 1; return 0; }
int nvrtcGetProgramLog(prog* p, char* buf) { strcpy(buf, p->log); return 0; }
int nvrtcGetCUBINSize(prog* p, size_t* n) { *n = p->code ? strlen(p->code) + 1 : 0; return 0; }
int nvrtcGetCUBIN(prog* p, char* buf) { strcpy(buf, p->code); return 0; }
int nvrtcDestroyProgram(prog** p) { free((*p)->src); free((*p)->code); free((*p)->log); free(*p); *p = 0; return 0; }
const char* nvrtcGetErrorString(int rc) { return rc == 6 ? "NVRTC_ERROR_COMPILATION" : "NVRTC_ERROR"; }

// Counters for the test.
int fake_compiles(void) { return compiles; }
int fake_loads(void) { return loads; }
unsigned fake_last_launch(int i) { return last_launch[i]; }
