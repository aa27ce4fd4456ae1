// runtime.cc — the emulated driver: libcuda.so.1 (built with PBEMU_CUDA)
// or libamdhip64 (PBEMU_HIP), the calls plexbench's hip package binds and
// a few neighbours, with the vendors' result codes. Device memory is host
// memory (every allocation tracked, so bad pointers, frees and ranges are
// errors); work runs synchronously in the calling thread, so streams and
// events only order and time it; modules are the emulated compiler's
// shared objects (rtc.cc), opened with dlopen, launched by their own
// __pbemu_launch (pbemu_device.h).
//
// Configuration, read once at the first call: PLEXBENCH_EMU_MEM_MIB
// (device memory, default 8192), PLEXBENCH_EMU_WARP (default 32 for CUDA,
// 64 for HIP), PLEXBENCH_EMU_ARCH (sm_90 / gfx90a or gfx1030 by the warp),
// PLEXBENCH_EMU_DEVICES (1), PLEXBENCH_EMU_WORKERS (host threads per
// launch, default the online CPUs), PLEXBENCH_EMU_STACK_KIB (per thread,
// 256), PLEXBENCH_EMU_VERBOSE=1 (why a call failed, on stderr). Faults:
// PLEXBENCH_EMU_FAIL_ALLOC_AFTER=N (an allocation that takes the bytes
// allocated so far past N fails with out-of-memory), PLEXBENCH_EMU_FAIL_LAUNCH=N
// (the Nth launch fails: launch failed, 719), PLEXBENCH_EMU_LOST_AFTER=N
// (after N launches the device is lost: every call returns 999, unknown).
//
// The vendors' limits, with their result codes: at most 1024 threads per
// block, and no more than a kernel's __launch_bounds__ (too many resources,
// 701); shared memory, static (the __shared__ variables a block declares)
// and dynamic together, at most 48 KB on CUDA unless the kernel opted in
// with cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES), never above the
// opt-in maximum (227 KB, an H100's or H200's), 64 KB on AMD (160 KB on
// gfx950): invalid value (1). Fresh allocations and shared memory are
// filled with 0xFF bytes, as garbage a kernel must not read
// (PLEXBENCH_EMU_POISON=0: not filled). PLEXBENCH_EMU_TRAFFIC=1 counts the
// bytes kernels load from the ranges marked as weights (pbemu_mark_weights,
// pbemu_traffic below).
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common.h"

namespace {

// Result codes: CUDA's CUresult and HIP's hipError_t agree on these.
enum {
    OK = 0,
    INVALID_VALUE = 1,
    OUT_OF_MEMORY = 2,
    NOT_INITIALIZED = 3,
    NO_DEVICE = 100,
    INVALID_DEVICE = 101,
    INVALID_IMAGE = 200,
    INVALID_CONTEXT = 201,
    NO_BINARY_FOR_GPU = 209,
    INVALID_PTX = 218,
    INVALID_HANDLE = 400,
    NOT_FOUND = 500,
    NOT_READY = 600,
    LAUNCH_OUT_OF_RESOURCES = 701,
    ASSERT = 710,
    LAUNCH_FAILED = 719,
    NOT_SUPPORTED = 801,
    UNKNOWN = 999,
};

struct ErrName {
    int code;
    const char *cuda, *hip, *text;
};
const ErrName errnames[] = {
    {0, "CUDA_SUCCESS", "hipSuccess", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "hipErrorInvalidValue", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "hipErrorOutOfMemory", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "hipErrorNotInitialized", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "hipErrorDeinitialized", "driver shutting down"},
    {100, "CUDA_ERROR_NO_DEVICE", "hipErrorNoDevice", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "hipErrorInvalidDevice", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "hipErrorInvalidImage", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "hipErrorInvalidContext", "invalid device context"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "hipErrorNoBinaryForGpu", "no kernel image is available for execution on the device"},
    {218, "CUDA_ERROR_INVALID_PTX", "hipErrorInvalidKernelFile", "a PTX JIT compilation failed"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "hipErrorInvalidHandle", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "hipErrorNotFound", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "hipErrorNotReady", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "hipErrorIllegalAddress", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "hipErrorLaunchOutOfResources", "too many resources requested for launch"},
    {710, "CUDA_ERROR_ASSERT", "hipErrorAssert", "device-side assert triggered"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "hipErrorLaunchFailure", "unspecified launch failure"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "hipErrorNotSupported", "operation not supported"},
    {999, "CUDA_ERROR_UNKNOWN", "hipErrorUnknown", "unknown error"},
};

const ErrName* errname(int code) {
    for (auto& e : errnames)
        if (e.code == code) return &e;
    return nullptr;
}

#ifdef PBEMU_HIP
const bool kHIP = true;
#else
const bool kHIP = false;
#endif

struct Config {
    unsigned long long mem_bytes;
    long long fail_alloc_after; // -1 = never
    long long fail_launch;      // 0 = never
    long long lost_after;       // -1 = never
    unsigned warp;
    std::string arch, name;
    int cc_major, cc_minor;
    int devices;
    unsigned workers, stack_kib;
    bool verbose, poison, traffic;
};

Config load_config() {
    Config c;
    c.mem_bytes = (unsigned long long)env_long("PLEXBENCH_EMU_MEM_MIB", 8192) << 20;
    c.fail_alloc_after = env_long("PLEXBENCH_EMU_FAIL_ALLOC_AFTER", -1);
    c.fail_launch = env_long("PLEXBENCH_EMU_FAIL_LAUNCH", 0);
    c.lost_after = env_long("PLEXBENCH_EMU_LOST_AFTER", -1);
    long long w = env_long("PLEXBENCH_EMU_WARP", kHIP ? 64 : 32);
    c.warp = (w == 8 || w == 16 || w == 32 || w == 64) ? (unsigned)w : (kHIP ? 64 : 32);
    c.arch = env_str("PLEXBENCH_EMU_ARCH");
    if (kHIP) {
        if (c.arch.empty()) c.arch = c.warp == 64 ? "gfx90a:sramecc+:xnack-" : "gfx1030";
        c.cc_major = 9, c.cc_minor = 0; // what HIP reports for gfx9/gfx10 alike is not an ISA name
        c.name = "plexbench emulated " + c.arch.substr(0, c.arch.find(':'));
    } else {
        if (c.arch.empty()) c.arch = "sm_90";
        std::string num = c.arch.substr(c.arch.find('_') + 1);
        int n = atoi(num.c_str());
        c.cc_major = n / 10, c.cc_minor = n % 10;
        if (n < 10) c.cc_major = 9, c.cc_minor = 0, c.arch = "sm_90";
        c.name = "plexbench emulated " + c.arch;
    }
    c.devices = (int)env_long("PLEXBENCH_EMU_DEVICES", 1);
    if (c.devices < 0) c.devices = 0;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    c.workers = (unsigned)env_long("PLEXBENCH_EMU_WORKERS", cpus > 0 ? cpus : 1);
    if (c.workers < 1) c.workers = 1;
    c.stack_kib = (unsigned)env_long("PLEXBENCH_EMU_STACK_KIB", 256);
    if (c.stack_kib < 16) c.stack_kib = 16;
    c.verbose = env_long("PLEXBENCH_EMU_VERBOSE", 0) != 0;
    c.poison = env_long("PLEXBENCH_EMU_POISON", 1) != 0;
    c.traffic = env_long("PLEXBENCH_EMU_TRAFFIC", 0) != 0;
    // The vendors' visibility variables: an empty list hides every device.
    const char* vis = getenv(kHIP ? "HIP_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES");
    if (kHIP && !vis) vis = getenv("ROCR_VISIBLE_DEVICES");
    if (vis) {
        int n = 0;
        std::set<long> seen;
        for (const char* p = vis; *p;) {
            char* end;
            long d = strtol(p, &end, 10);
            if (end == p || d < 0 || d >= c.devices || seen.count(d)) break; // the first bad entry ends the list
            seen.insert(d);
            n++;
            p = *end == ',' ? end + 1 : end;
            if (*end != ',' && *end) break;
        }
        c.devices = n;
    }
    return c;
}

struct Module;
struct Function {
    Module* m;
    const void* info; // pbemu::KernelInfo
    std::string name;
    int max_dyn_shared;          // the opt-in (cuFuncSetAttribute); -1: none
    unsigned long static_shared; // learnt from its launches
};
struct LaunchCtl { // pbemu::LaunchCtl's layout
    unsigned long shared_limit;
    int poison;
    const uintptr_t* ranges;
    unsigned nranges;
    unsigned long long* counts;
    unsigned long static_shared;
};
typedef int (*LaunchFn)(const void*, const unsigned*, unsigned, unsigned, void**, unsigned, unsigned, LaunchCtl*, char*, unsigned);
struct Module {
    void* dl;
    int fd; // the memfd it was loaded from, open while loaded: the loader knows modules by path
    int dev;
    LaunchFn launch;
    std::map<std::string, Function*> fns;
};
struct Event {
    bool recorded = false, timing = true;
    std::chrono::steady_clock::time_point t;
};
struct Context {
    int dev;
    unsigned refs;
};
struct KernelInfo { // pbemu::KernelInfo's layout
    unsigned abi;
    void (*call)(void*, void**);
    void* fn;
    unsigned nparams;
    const unsigned* sizes;
    const unsigned* aligns;
    unsigned launch_bound;
};

// A range of device memory marked as weights (pbemu_mark_weights), and
// the bytes launches loaded from each tag's ranges.
struct WeightRange {
    uintptr_t hi;
    unsigned long long tag;
};

std::mutex mu;
std::map<uintptr_t, WeightRange> weights;                      // lo → range
std::map<unsigned long long, unsigned long long> weight_reads; // tag → bytes
Config cfg;
bool loaded = false, inited = false, lost = false;
long long launches = 0;
unsigned long long allocated_total = 0; // every byte ever allocated, for FAIL_ALLOC_AFTER
std::vector<unsigned long long> live;    // per device
std::map<uintptr_t, std::pair<size_t, int>> allocs; // base → size, device
std::map<uintptr_t, size_t> host_allocs;
std::set<void*> streams, events, modules, functions;
std::vector<Context> contexts;
thread_local Context* cur_ctx = nullptr; // CUDA
thread_local int cur_dev = 0;            // HIP

void load() {
    if (loaded) return;
    cfg = load_config();
    live.assign(cfg.devices > 0 ? cfg.devices : 1, 0);
    contexts.resize(cfg.devices > 0 ? cfg.devices : 1);
    for (int i = 0; i < (int)contexts.size(); i++) contexts[i] = Context{i, 0};
    loaded = true;
}

int fail(int code, const char* fmt, ...) {
    if (cfg.verbose) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "plexbench gpu-emu (%s): ", kHIP ? "hip" : "cuda");
        vfprintf(stderr, fmt, ap);
        const ErrName* e = errname(code);
        fprintf(stderr, ": %s (%d)\n", e ? (kHIP ? e->hip : e->cuda) : "?", code);
        va_end(ap);
    }
    return code;
}

// enter is every call's prologue (mu held): configuration, the lost
// device, initialization (cuInit; HIP initializes implicitly).
int enter(const char* call) {
    load();
    if (lost) return fail(UNKNOWN, "%s: the device was lost (PLEXBENCH_EMU_LOST_AFTER=%lld)", call, cfg.lost_after);
    if (!inited) {
        if (!kHIP) return fail(NOT_INITIALIZED, "%s before cuInit", call);
        inited = true;
    }
    return OK;
}

// current is the calling thread's device, or an error (no CUDA context).
int current(const char* call, int* dev) {
    if (kHIP) {
        *dev = cur_dev;
        return cfg.devices > 0 ? OK : fail(NO_DEVICE, "%s", call);
    }
    if (!cur_ctx) return fail(INVALID_CONTEXT, "%s without a current context", call);
    *dev = cur_ctx->dev;
    return OK;
}

#define ENTER(call)                      \
    std::lock_guard<std::mutex> g_(mu);  \
    if (int rc_ = enter(call)) return rc_
#define DEVICE(call, dev)                            \
    int dev = 0;                                     \
    if (int rc_ = current(call, &dev)) return rc_

// range finds the allocation holding [p, p+n); INVALID_VALUE if none does.
int range(const char* call, uintptr_t p, size_t n) {
    auto it = allocs.upper_bound(p);
    if (it == allocs.begin()) return fail(INVALID_VALUE, "%s: %#lx is not device memory", call, (unsigned long)p);
    --it;
    uintptr_t base = it->first;
    size_t size = it->second.first;
    if (p >= base + size) return fail(INVALID_VALUE, "%s: %#lx is not device memory", call, (unsigned long)p);
    if (n > base + size - p)
        return fail(INVALID_VALUE, "%s: %zu bytes at %#lx run past the end of a %zu-byte allocation", call, n, (unsigned long)p, size);
    return OK;
}

bool stream_ok(void* s) { return s == nullptr || (uintptr_t)s == 1 || (uintptr_t)s == 2 || streams.count(s); }

int check_stream(const char* call, void* s) {
    return stream_ok(s) ? OK : fail(INVALID_HANDLE, "%s: %p is not a stream", call, s);
}

int mem_alloc(const char* call, void** p, size_t n) {
    if (!p) return fail(INVALID_VALUE, "%s: null result pointer", call);
    if (n == 0) {
        if (kHIP) {
            *p = nullptr;
            return OK;
        }
        return fail(INVALID_VALUE, "%s: zero bytes", call);
    }
    DEVICE(call, dev);
    if (cfg.fail_alloc_after >= 0 && allocated_total + n > (unsigned long long)cfg.fail_alloc_after)
        return fail(OUT_OF_MEMORY, "%s: %zu bytes: injected after %llu of PLEXBENCH_EMU_FAIL_ALLOC_AFTER=%lld bytes", call, n,
                    allocated_total, cfg.fail_alloc_after);
    if (live[dev] + n > cfg.mem_bytes)
        return fail(OUT_OF_MEMORY, "%s: %zu bytes with %llu of %llu in use", call, n, live[dev], cfg.mem_bytes);
    size_t rounded = (n + 255) / 256 * 256;
    void* m = aligned_alloc(256, rounded);
    if (!m) return fail(OUT_OF_MEMORY, "%s: %zu bytes: host allocation failed", call, n);
    if (cfg.poison) memset(m, 0xff, rounded);
    allocs[(uintptr_t)m] = {n, dev};
    live[dev] += n;
    allocated_total += n;
    *p = m;
    return OK;
}

int mem_free(const char* call, void* p) {
    if (!p) return OK;
    auto it = allocs.find((uintptr_t)p);
    if (it == allocs.end()) return fail(INVALID_VALUE, "%s: %p is not an allocation's start", call, p);
    live[it->second.second] -= it->second.first;
    for (auto w = weights.lower_bound((uintptr_t)p); w != weights.end() && w->first < (uintptr_t)p + it->second.first;)
        w = weights.erase(w);
    allocs.erase(it);
    free(p);
    return OK;
}

int memset8(const char* call, void* p, unsigned char v, size_t n, void* s) {
    if (int rc = check_stream(call, s)) return rc;
    if (n == 0) return OK;
    if (int rc = range(call, (uintptr_t)p, n)) return rc;
    memset(p, v, n);
    return OK;
}

int memset32(const char* call, void* p, unsigned v, size_t n, void* s) {
    if (int rc = check_stream(call, s)) return rc;
    if ((uintptr_t)p % 4) return fail(INVALID_VALUE, "%s: %p is not 4-byte aligned", call, p);
    if (n == 0) return OK;
    if (int rc = range(call, (uintptr_t)p, n * 4)) return rc;
    unsigned* q = (unsigned*)p;
    for (size_t i = 0; i < n; i++) q[i] = v;
    return OK;
}

int htod(const char* call, void* dst, const void* src, size_t n, void* s) {
    if (int rc = check_stream(call, s)) return rc;
    if (n == 0) return OK;
    if (!src) return fail(INVALID_VALUE, "%s: null host pointer", call);
    if (int rc = range(call, (uintptr_t)dst, n)) return rc;
    memcpy(dst, src, n);
    return OK;
}

int dtoh(const char* call, void* dst, const void* src, size_t n, void* s) {
    if (int rc = check_stream(call, s)) return rc;
    if (n == 0) return OK;
    if (!dst) return fail(INVALID_VALUE, "%s: null host pointer", call);
    if (int rc = range(call, (uintptr_t)src, n)) return rc;
    memcpy(dst, src, n);
    return OK;
}

int dtod(const char* call, void* dst, const void* src, size_t n, void* s) {
    if (int rc = check_stream(call, s)) return rc;
    if (n == 0) return OK;
    if (int rc = range(call, (uintptr_t)src, n)) return rc;
    if (int rc = range(call, (uintptr_t)dst, n)) return rc;
    memmove(dst, src, n);
    return OK;
}

// elf_size is an ELF image's length from its header (the section headers
// end the file, as the linker writes it); 0 when image is not a 64-bit ELF.
size_t elf_size(const unsigned char* img) {
    if (memcmp(img, "\x7f" "ELF", 4) != 0 || img[4] != 2 || img[5] != 1) return 0;
    uint64_t shoff;
    uint16_t shentsize, shnum;
    memcpy(&shoff, img + 0x28, 8);
    memcpy(&shentsize, img + 0x3a, 2);
    memcpy(&shnum, img + 0x3c, 2);
    uint64_t n = shoff + (uint64_t)shentsize * shnum;
    return n < 64 || n > (1ull << 32) ? 0 : (size_t)n;
}

int module_load(const char* call, void** out, const void* image) {
    if (!out || !image) return fail(INVALID_VALUE, "%s: null argument", call);
    DEVICE(call, dev);
    const unsigned char* img = (const unsigned char*)image;
    size_t n = elf_size(img);
    if (n == 0) {
        bool text = img[0] >= 0x20 && img[0] < 0x7f;
        return fail(text && !kHIP ? INVALID_PTX : INVALID_IMAGE, "%s: not an ELF image%s", call,
                    text && !kHIP ? " (and not PTX this emulator can run)" : "");
    }
    uint16_t machine;
    memcpy(&machine, img + 0x12, 2);
#if defined(__x86_64__)
    const uint16_t host = 62;
#elif defined(__aarch64__)
    const uint16_t host = 183;
#else
    const uint16_t host = machine;
#endif
    if (machine != host) return fail(NO_BINARY_FOR_GPU, "%s: an ELF for machine %u, not this emulator's", call, machine);
    int fd = (int)syscall(SYS_memfd_create, "pbemu-module", 1u /* MFD_CLOEXEC */);
    std::string path;
    if (fd >= 0) {
        path = "/proc/self/fd/" + std::to_string(fd);
    } else {
        const char* tmp = getenv("TMPDIR");
        std::string t = std::string(tmp && *tmp ? tmp : "/tmp") + "/pbemu-module-XXXXXX";
        std::vector<char> tb(t.begin(), t.end());
        tb.push_back(0);
        fd = mkstemp(tb.data());
        if (fd < 0) return fail(INVALID_IMAGE, "%s: no memfd and no temporary file", call);
        path = tb.data();
    }
    bool ok = true;
    for (size_t off = 0; ok && off < n;) {
        ssize_t w = write(fd, img + off, n - off);
        ok = w > 0;
        off += ok ? (size_t)w : 0;
    }
    void* dl = ok ? dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
    std::string why = dl ? "" : (ok ? dlerror() : "write failed");
    bool memfd = path.compare(0, 6, "/proc/") == 0;
    if (!memfd) unlink(path.c_str());
    if (!dl || !memfd) {
        close(fd);
        fd = -1;
    }
    if (!dl) return fail(INVALID_IMAGE, "%s: %s", call, why.c_str());
    const unsigned* abi = (const unsigned*)dlsym(dl, "__pbemu_abi");
    const char* dialect = (const char*)dlsym(dl, "__pbemu_dialect");
    const char* target = (const char*)dlsym(dl, "__pbemu_target");
    LaunchFn launch = (LaunchFn)dlsym(dl, "__pbemu_launch");
    auto drop = [&] {
        dlclose(dl);
        if (fd >= 0) close(fd);
    };
    if (!abi || !dialect || !target || !launch || *abi != 2) {
        drop();
        return fail(NO_BINARY_FOR_GPU, "%s: an ELF that is no emulated module", call);
    }
    if (strcmp(dialect, kHIP ? "hip" : "cuda") != 0) {
        drop();
        return fail(NO_BINARY_FOR_GPU, "%s: a module compiled for %s", call, dialect);
    }
    std::string t = target;
    bool fits;
    if (kHIP) {
        fits = t.substr(0, t.find(':')) == cfg.arch.substr(0, cfg.arch.find(':'));
    } else {
        // A cubin runs on its own major, minor ≥ its own; an "a" target only on itself.
        std::string num = t.substr(3);
        bool a = !num.empty() && num.back() == 'a';
        int v = atoi(num.c_str());
        fits = v / 10 == cfg.cc_major && (a ? v % 10 == cfg.cc_minor : v % 10 <= cfg.cc_minor);
    }
    if (!fits) {
        drop();
        return fail(NO_BINARY_FOR_GPU, "%s: a module for %s on a %s device", call, target, cfg.arch.c_str());
    }
    Module* m = new Module{dl, fd, dev, launch, {}};
    modules.insert(m);
    *out = m;
    return OK;
}

int module_unload(const char* call, void* mod) {
    if (!modules.count(mod)) return fail(INVALID_HANDLE, "%s: %p is not a module", call, mod);
    Module* m = (Module*)mod;
    for (auto& f : m->fns) {
        functions.erase(f.second);
        delete f.second;
    }
    dlclose(m->dl);
    if (m->fd >= 0) close(m->fd);
    modules.erase(m);
    delete m;
    return OK;
}

int get_function(const char* call, void** out, void* mod, const char* name) {
    if (!out || !name) return fail(INVALID_VALUE, "%s: null argument", call);
    if (!modules.count(mod)) return fail(INVALID_HANDLE, "%s: %p is not a module", call, mod);
    Module* m = (Module*)mod;
    auto it = m->fns.find(name);
    if (it != m->fns.end()) {
        *out = it->second;
        return OK;
    }
    const void* info = dlsym(m->dl, ("__pbemu_kernel_" + std::string(name)).c_str());
    if (!info) return fail(NOT_FOUND, "%s: no kernel %s", call, name);
    Function* f = new Function{m, info, name, -1, 0};
    m->fns[name] = f;
    functions.insert(f);
    *out = f;
    return OK;
}

const unsigned kMaxShared = 48 << 10;
const unsigned kMaxSharedOptin = kHIP ? 64 << 10 : 227 << 10;

// shared_max is a block's shared memory limit (static and dynamic): HIP's
// LDS size, CUDA's 48 KB or, for a kernel that opted in, the maximum.
unsigned long shared_max(const Function* f) {
    if (kHIP) return cfg.arch.compare(0, 6, "gfx950") == 0 ? 160 << 10 : kMaxSharedOptin;
    return f->max_dyn_shared >= 0 ? kMaxSharedOptin : kMaxShared;
}

int launch(const char* call, void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
           unsigned shmem, void* s, void** params, void** extra) {
    std::unique_lock<std::mutex> lk(mu);
    if (int rc = enter(call)) return rc;
    DEVICE(call, dev);
    (void)dev;
    if (!functions.count(fn)) return fail(INVALID_HANDLE, "%s: %p is not a function", call, fn);
    Function* f = (Function*)fn;
    if (int rc = check_stream(call, s)) return rc;
    if (gx == 0 || gy == 0 || gz == 0 || gx > 0x7fffffffu || gy > 65535 || gz > 65535)
        return fail(INVALID_VALUE, "%s %s: grid (%u,%u,%u)", call, f->name.c_str(), gx, gy, gz);
    if (bx == 0 || by == 0 || bz == 0 || bx > 1024 || by > 1024 || bz > 64 || (unsigned long long)bx * by * bz > 1024)
        return fail(INVALID_VALUE, "%s %s: block (%u,%u,%u)", call, f->name.c_str(), bx, by, bz);
    const KernelInfo* k = (const KernelInfo*)f->info;
    unsigned long threads = (unsigned long)bx * by * bz;
    if (k->launch_bound && threads > k->launch_bound)
        return fail(LAUNCH_OUT_OF_RESOURCES, "%s %s: %lu threads per block, __launch_bounds__(%u)", call, f->name.c_str(), threads,
                    k->launch_bound);
    unsigned long smax = shared_max(f);
    if (!kHIP && f->max_dyn_shared >= 0 && shmem > (unsigned)f->max_dyn_shared)
        return fail(INVALID_VALUE, "%s %s: %u bytes of dynamic shared memory, above its MAX_DYNAMIC_SHARED_SIZE_BYTES %d", call,
                    f->name.c_str(), shmem, f->max_dyn_shared);
    if (shmem + f->static_shared > smax)
        return fail(INVALID_VALUE, "%s %s: %lu bytes of static and %u of dynamic shared memory, limit %lu", call, f->name.c_str(),
                    f->static_shared, shmem, smax);
    std::vector<void*> unpacked;
    if (params && extra) return fail(INVALID_VALUE, "%s %s: both kernelParams and extra", call, f->name.c_str());
    if (extra) {
        // {BUFFER_POINTER, buf, BUFFER_SIZE, &size, END}: CUDA's END is 0, HIP's 3.
        const uintptr_t END = kHIP ? 3 : 0;
        char* buf = nullptr;
        size_t* size = nullptr;
        for (int i = 0; i < 16 && (uintptr_t)extra[i] != END; i += 2) {
            if ((uintptr_t)extra[i] == 1) buf = (char*)extra[i + 1];
            else if ((uintptr_t)extra[i] == 2) size = (size_t*)extra[i + 1];
            else return fail(INVALID_VALUE, "%s %s: unknown extra entry %p", call, f->name.c_str(), extra[i]);
        }
        if (!buf || !size) return fail(INVALID_VALUE, "%s %s: extra without a buffer and its size", call, f->name.c_str());
        size_t off = 0;
        for (unsigned i = 0; i < k->nparams; i++) {
            off = (off + k->aligns[i] - 1) / k->aligns[i] * k->aligns[i];
            unpacked.push_back(buf + off);
            off += k->sizes[i];
        }
        if (off > *size) return fail(INVALID_VALUE, "%s %s: a %zu-byte argument buffer, %zu needed", call, f->name.c_str(), *size, off);
        params = unpacked.data();
    }
    if (k->nparams > 0 && !params) return fail(INVALID_VALUE, "%s %s: no parameters for %u", call, f->name.c_str(), k->nparams);
    if (cfg.lost_after >= 0 && launches >= cfg.lost_after) {
        lost = true;
        return fail(UNKNOWN, "%s %s: the device is lost after %lld launches (PLEXBENCH_EMU_LOST_AFTER)", call, f->name.c_str(), launches);
    }
    launches++;
    if (cfg.fail_launch > 0 && launches == cfg.fail_launch)
        return fail(LAUNCH_FAILED, "%s %s: launch %lld fails (PLEXBENCH_EMU_FAIL_LAUNCH)", call, f->name.c_str(), launches);
    LaunchFn run = f->m->launch;
    unsigned warp = cfg.warp, workers = cfg.workers, stack = cfg.stack_kib;
    LaunchCtl ctl = {smax, cfg.poison, nullptr, 0, nullptr, 0};
    std::vector<uintptr_t> ranges; // traffic: the weight ranges as they are now, their tags and counts
    std::vector<unsigned long long> tags, counts;
    if (cfg.traffic && !weights.empty()) {
        for (auto& w : weights) ranges.push_back(w.first), ranges.push_back(w.second.hi), tags.push_back(w.second.tag);
        counts.assign(tags.size(), 0);
        ctl.ranges = ranges.data(), ctl.nranges = (unsigned)tags.size(), ctl.counts = counts.data();
    }
    lk.unlock(); // the kernel runs without the lock: it may take long
    unsigned dims[6] = {gx, gy, gz, bx, by, bz};
    char why[256] = "";
    int rc = run(k, dims, shmem, warp, params, workers, stack, &ctl, why, sizeof why);
    lk.lock();
    if (ctl.static_shared > f->static_shared && functions.count(fn)) f->static_shared = ctl.static_shared;
    for (size_t i = 0; i < counts.size(); i++) {
        weight_reads[tags[i]] += counts[i];
        if (cfg.verbose && counts[i]) // which kernel read the weights, and how much
            fprintf(stderr, "pbemu: traffic: %s (%u,%u,%u)x(%u,%u,%u): %llu bytes of tag %llu's weights\n", f->name.c_str(), gx, gy, gz, bx, by, bz, counts[i], tags[i]);
    }
    if (rc == 0) return OK;
    int code = rc == 4 ? (kHIP ? LAUNCH_FAILED : ASSERT) : rc == 5 ? LAUNCH_OUT_OF_RESOURCES : rc == 6 ? INVALID_VALUE : LAUNCH_FAILED;
    return fail(code, "%s %s: %s", call, f->name.c_str(), why);
}

// func_get_attribute answers CUDA's CUfunction_attribute (HIP's
// hipFunction_attribute has the same numbers) for what the emulator knows.
int func_get_attribute(const char* call, int* v, int attr, void* fn) {
    if (!v) return fail(INVALID_VALUE, "%s: null result pointer", call);
    if (!functions.count(fn)) return fail(INVALID_HANDLE, "%s: %p is not a function", call, fn);
    Function* f = (Function*)fn;
    const KernelInfo* k = (const KernelInfo*)f->info;
    switch (attr) {
    case 0: *v = k->launch_bound ? (int)k->launch_bound : 1024; return OK; // MAX_THREADS_PER_BLOCK
    case 1: *v = (int)f->static_shared; return OK;                         // SHARED_SIZE_BYTES (as far as launches showed)
    case 2: case 3: case 4: case 7: *v = 0; return OK;                     // const, local, registers, cache mode: not modelled
    case 5: case 6: *v = kHIP ? 0 : cfg.cc_major * 10 + cfg.cc_minor; return OK;
    case 8: // MAX_DYNAMIC_SHARED_SIZE_BYTES
        *v = f->max_dyn_shared >= 0 ? f->max_dyn_shared : (int)(shared_max(f) - f->static_shared);
        return OK;
    case 9: *v = -1; return OK; // the preferred carveout: none
    }
    return fail(INVALID_VALUE, "%s: attribute %d", call, attr);
}

int func_set_attribute(const char* call, void* fn, int attr, int v) {
    if (!functions.count(fn)) return fail(INVALID_HANDLE, "%s: %p is not a function", call, fn);
    Function* f = (Function*)fn;
    if (attr == 8) { // MAX_DYNAMIC_SHARED_SIZE_BYTES
        unsigned long most = kHIP ? shared_max(f) : kMaxSharedOptin;
        if (v < 0 || (unsigned long)v + f->static_shared > most)
            return fail(INVALID_VALUE, "%s: %d bytes of dynamic shared memory (%lu static, maximum %lu)", call, v, f->static_shared, most);
        if (!kHIP) f->max_dyn_shared = v;
        return OK;
    }
    if (attr == 9) return v >= -1 && v <= 100 ? OK : fail(INVALID_VALUE, "%s: carveout %d", call, v);
    return fail(INVALID_VALUE, "%s: attribute %d", call, attr);
}

int event_create(const char* call, void** e, unsigned flags) {
    if (!e) return fail(INVALID_VALUE, "%s: null result pointer", call);
    if (flags & ~7u) return fail(INVALID_VALUE, "%s: flags %#x", call, flags);
    Event* ev = new Event;
    ev->timing = !(flags & 2);
    events.insert(ev);
    *e = ev;
    return OK;
}

int event_record(const char* call, void* e, void* s) {
    if (!events.count(e)) return fail(INVALID_HANDLE, "%s: %p is not an event", call, e);
    if (int rc = check_stream(call, s)) return rc;
    Event* ev = (Event*)e;
    ev->recorded = true;
    ev->t = std::chrono::steady_clock::now();
    return OK;
}

int event_elapsed(const char* call, float* ms, void* a, void* b) {
    if (!ms) return fail(INVALID_VALUE, "%s: null result pointer", call);
    if (!events.count(a) || !events.count(b)) return fail(INVALID_HANDLE, "%s: not an event", call);
    Event *ea = (Event*)a, *eb = (Event*)b;
    if (!ea->recorded || !eb->recorded || !ea->timing || !eb->timing)
        return fail(INVALID_HANDLE, "%s: an event not recorded or without timing", call);
    *ms = std::chrono::duration<float, std::milli>(eb->t - ea->t).count();
    return OK;
}

int event_destroy(const char* call, void* e) {
    if (!events.count(e)) return fail(INVALID_HANDLE, "%s: %p is not an event", call, e);
    events.erase(e);
    delete (Event*)e;
    return OK;
}

int stream_create(const char* call, void** s, unsigned flags) {
    if (!s) return fail(INVALID_VALUE, "%s: null result pointer", call);
    if (flags > 1) return fail(INVALID_VALUE, "%s: flags %#x", call, flags);
    void* h = new char(0);
    streams.insert(h);
    *s = h;
    return OK;
}

int stream_destroy(const char* call, void* s) {
    if (!streams.count(s)) return fail(INVALID_HANDLE, "%s: %p is not a stream", call, s);
    streams.erase(s);
    delete (char*)s;
    return OK;
}

int device_name(const char* call, char* buf, int n, int dev) {
    if (dev < 0 || dev >= cfg.devices) return fail(INVALID_DEVICE, "%s: device %d of %d", call, dev, cfg.devices);
    if (!buf || n <= 0) return fail(INVALID_VALUE, "%s: no buffer", call);
    snprintf(buf, (size_t)n, "%s", cfg.name.c_str());
    return OK;
}

// attribute gives an attribute's value; false for an unknown ID.
bool attribute(int attr, int* v) {
    const int units = (int)cfg.workers;
    struct A { int id, value; };
#ifdef PBEMU_HIP
    const A attrs[] = {{5, 1700000}, {19, 8 << 20}, {23, cfg.cc_major}, {26, 1024}, {27, 1024}, {28, 1024},
                       {29, 0x7fffffff}, {30, 65535}, {31, 65535}, {56, 1024}, {57, 2048}, {61, cfg.cc_minor},
                       {63, units}, {74, (int)kMaxSharedOptin}, {75, (int)kMaxSharedOptin}, {87, (int)cfg.warp},
                       {10002, (int)kMaxSharedOptin}};
    const int max_id = 10100;
#else
    const A attrs[] = {{1, 1024}, {2, 1024}, {3, 1024}, {4, 64}, {5, 0x7fffffff}, {6, 65535}, {7, 65535},
                       {8, (int)kMaxShared}, {9, 65536}, {10, (int)cfg.warp}, {12, 65536}, {13, 1980000},
                       {16, units}, {38, 60 << 20}, {39, 2048}, {41, 1}, {75, cfg.cc_major}, {76, cfg.cc_minor},
                       {81, 228 << 10}, {82, 65536}, {97, (int)kMaxSharedOptin}};
    const int max_id = 140;
#endif
    for (auto& a : attrs)
        if (a.id == attr) {
            *v = a.value;
            return true;
        }
    if (attr < 0 || attr > max_id) return false;
    *v = 0; // a real attribute this emulator does not model
    return true;
}

} // namespace

// pbemu_runtime marks the emulator: plexbench's hip package then looks for
// a vendor BLAS only where an override names one (a real one would fault on
// host pointers), and the emulated BLAS (blas.cc) only works beside it.
API int pbemu_runtime() { return 1; }

// pbemu_mark_weights marks [p, p+n), inside one allocation, as weights
// under tag (non-zero: one model's), replacing marks it overlaps. Freeing
// an allocation unmarks it.
API int pbemu_mark_weights(void* p, size_t n, unsigned long long tag) {
    ENTER("pbemu_mark_weights");
    uintptr_t lo = (uintptr_t)p;
    if (tag == 0 || n == 0) return fail(INVALID_VALUE, "pbemu_mark_weights: tag %llu, %zu bytes", tag, n);
    if (int rc = range("pbemu_mark_weights", lo, n)) return rc;
    auto it = weights.lower_bound(lo);
    if (it != weights.begin() && std::prev(it)->second.hi > lo) --it;
    while (it != weights.end() && it->first < lo + n) it = weights.erase(it);
    weights[lo] = WeightRange{lo + n, tag};
    return OK;
}

// pbemu_traffic gives tag's marked bytes and the bytes launches loaded
// from them so far; not supported (801) unless PLEXBENCH_EMU_TRAFFIC=1.
API int pbemu_traffic(unsigned long long tag, unsigned long long* weight_bytes, unsigned long long* read_bytes) {
    ENTER("pbemu_traffic");
    if (!weight_bytes || !read_bytes) return fail(INVALID_VALUE, "pbemu_traffic: null");
    if (!cfg.traffic) return fail(NOT_SUPPORTED, "pbemu_traffic: PLEXBENCH_EMU_TRAFFIC is not set");
    unsigned long long w = 0;
    for (auto& r : weights)
        if (r.second.tag == tag) w += r.second.hi - r.first;
    *weight_bytes = w;
    *read_bytes = weight_reads[tag];
    return OK;
}

// ---------------------------------------------------------------- CUDA
#ifndef PBEMU_HIP
API int cuGetErrorName(int code, const char** s) {
    const ErrName* e = errname(code);
    if (!s) return INVALID_VALUE;
    *s = e ? e->cuda : nullptr;
    return e ? OK : INVALID_VALUE;
}
API int cuGetErrorString(int code, const char** s) {
    const ErrName* e = errname(code);
    if (!s) return INVALID_VALUE;
    *s = e ? e->text : nullptr;
    return e ? OK : INVALID_VALUE;
}
API int cuDriverGetVersion(int* v) {
    if (!v) return INVALID_VALUE;
    *v = 13000;
    return OK;
}
API int cuInit(unsigned flags) {
    std::lock_guard<std::mutex> g(mu);
    load();
    if (lost) return fail(UNKNOWN, "cuInit: the device was lost");
    if (flags != 0) return fail(INVALID_VALUE, "cuInit: flags %u", flags);
    if (cfg.devices == 0) return fail(NO_DEVICE, "cuInit: no visible device");
    inited = true;
    return OK;
}
API int cuDeviceGetCount(int* n) {
    ENTER("cuDeviceGetCount");
    if (!n) return fail(INVALID_VALUE, "cuDeviceGetCount: null");
    *n = cfg.devices;
    return OK;
}
API int cuDeviceGet(int* d, int ordinal) {
    ENTER("cuDeviceGet");
    if (!d) return fail(INVALID_VALUE, "cuDeviceGet: null");
    if (ordinal < 0 || ordinal >= cfg.devices) return fail(INVALID_DEVICE, "cuDeviceGet: ordinal %d of %d", ordinal, cfg.devices);
    *d = ordinal;
    return OK;
}
API int cuDeviceGetName(char* buf, int n, int dev) {
    ENTER("cuDeviceGetName");
    return device_name("cuDeviceGetName", buf, n, dev);
}
API int cuDeviceGetAttribute(int* v, int attr, int dev) {
    ENTER("cuDeviceGetAttribute");
    if (!v) return fail(INVALID_VALUE, "cuDeviceGetAttribute: null");
    if (dev < 0 || dev >= cfg.devices) return fail(INVALID_DEVICE, "cuDeviceGetAttribute: device %d", dev);
    return attribute(attr, v) ? OK : fail(INVALID_VALUE, "cuDeviceGetAttribute: attribute %d", attr);
}
API int cuDeviceTotalMem_v2(size_t* b, int dev) {
    ENTER("cuDeviceTotalMem_v2");
    if (!b) return fail(INVALID_VALUE, "cuDeviceTotalMem_v2: null");
    if (dev < 0 || dev >= cfg.devices) return fail(INVALID_DEVICE, "cuDeviceTotalMem_v2: device %d", dev);
    *b = cfg.mem_bytes;
    return OK;
}
API int cuDevicePrimaryCtxRetain(void** ctx, int dev) {
    ENTER("cuDevicePrimaryCtxRetain");
    if (!ctx) return fail(INVALID_VALUE, "cuDevicePrimaryCtxRetain: null");
    if (dev < 0 || dev >= cfg.devices) return fail(INVALID_DEVICE, "cuDevicePrimaryCtxRetain: device %d", dev);
    contexts[dev].refs++;
    *ctx = &contexts[dev];
    return OK;
}
API int cuDevicePrimaryCtxRelease_v2(int dev) {
    ENTER("cuDevicePrimaryCtxRelease_v2");
    if (dev < 0 || dev >= cfg.devices) return fail(INVALID_DEVICE, "cuDevicePrimaryCtxRelease_v2: device %d", dev);
    if (contexts[dev].refs == 0) return fail(INVALID_CONTEXT, "cuDevicePrimaryCtxRelease_v2: not retained");
    contexts[dev].refs--;
    return OK;
}
API int cuCtxSetCurrent(void* ctx) {
    ENTER("cuCtxSetCurrent");
    if (!ctx) {
        cur_ctx = nullptr;
        return OK;
    }
    for (auto& c : contexts)
        if (&c == ctx && c.refs > 0) {
            cur_ctx = &c;
            return OK;
        }
    return fail(INVALID_CONTEXT, "cuCtxSetCurrent: %p is not a retained context", ctx);
}
API int cuCtxGetCurrent(void** ctx) {
    ENTER("cuCtxGetCurrent");
    if (!ctx) return fail(INVALID_VALUE, "cuCtxGetCurrent: null");
    *ctx = cur_ctx;
    return OK;
}
API int cuCtxSynchronize() {
    ENTER("cuCtxSynchronize");
    DEVICE("cuCtxSynchronize", dev);
    (void)dev;
    return OK;
}
API int cuMemGetInfo_v2(size_t* free_, size_t* total) {
    ENTER("cuMemGetInfo_v2");
    DEVICE("cuMemGetInfo_v2", dev);
    if (!free_ || !total) return fail(INVALID_VALUE, "cuMemGetInfo_v2: null");
    *total = cfg.mem_bytes;
    *free_ = cfg.mem_bytes - live[dev];
    return OK;
}
API int cuStreamCreate(void** s, unsigned flags) {
    ENTER("cuStreamCreate");
    DEVICE("cuStreamCreate", dev);
    (void)dev;
    return stream_create("cuStreamCreate", s, flags);
}
API int cuStreamSynchronize(void* s) {
    ENTER("cuStreamSynchronize");
    DEVICE("cuStreamSynchronize", dev);
    (void)dev;
    return check_stream("cuStreamSynchronize", s);
}
API int cuStreamDestroy_v2(void* s) {
    ENTER("cuStreamDestroy_v2");
    DEVICE("cuStreamDestroy_v2", dev);
    (void)dev;
    return stream_destroy("cuStreamDestroy_v2", s);
}
API int cuMemAlloc_v2(void** p, size_t n) {
    ENTER("cuMemAlloc_v2");
    return mem_alloc("cuMemAlloc_v2", p, n);
}
API int cuMemFree_v2(void* p) {
    ENTER("cuMemFree_v2");
    DEVICE("cuMemFree_v2", dev);
    (void)dev;
    return mem_free("cuMemFree_v2", p);
}
API int cuMemsetD8Async(void* p, unsigned char v, size_t n, void* s) {
    ENTER("cuMemsetD8Async");
    DEVICE("cuMemsetD8Async", dev);
    (void)dev;
    return memset8("cuMemsetD8Async", p, v, n, s);
}
API int cuMemsetD8_v2(void* p, unsigned char v, size_t n) {
    ENTER("cuMemsetD8_v2");
    DEVICE("cuMemsetD8_v2", dev);
    (void)dev;
    return memset8("cuMemsetD8_v2", p, v, n, nullptr);
}
API int cuMemsetD32Async(void* p, unsigned v, size_t n, void* s) {
    ENTER("cuMemsetD32Async");
    DEVICE("cuMemsetD32Async", dev);
    (void)dev;
    return memset32("cuMemsetD32Async", p, v, n, s);
}
API int cuMemcpyHtoDAsync_v2(void* dst, const void* src, size_t n, void* s) {
    ENTER("cuMemcpyHtoDAsync_v2");
    DEVICE("cuMemcpyHtoDAsync_v2", dev);
    (void)dev;
    return htod("cuMemcpyHtoDAsync_v2", dst, src, n, s);
}
API int cuMemcpyDtoHAsync_v2(void* dst, const void* src, size_t n, void* s) {
    ENTER("cuMemcpyDtoHAsync_v2");
    DEVICE("cuMemcpyDtoHAsync_v2", dev);
    (void)dev;
    return dtoh("cuMemcpyDtoHAsync_v2", dst, src, n, s);
}
API int cuMemcpyHtoD_v2(void* dst, const void* src, size_t n) {
    ENTER("cuMemcpyHtoD_v2");
    DEVICE("cuMemcpyHtoD_v2", dev);
    (void)dev;
    return htod("cuMemcpyHtoD_v2", dst, src, n, nullptr);
}
API int cuMemcpyDtoH_v2(void* dst, const void* src, size_t n) {
    ENTER("cuMemcpyDtoH_v2");
    DEVICE("cuMemcpyDtoH_v2", dev);
    (void)dev;
    return dtoh("cuMemcpyDtoH_v2", dst, src, n, nullptr);
}
API int cuMemcpyDtoD_v2(void* dst, const void* src, size_t n) {
    ENTER("cuMemcpyDtoD_v2");
    DEVICE("cuMemcpyDtoD_v2", dev);
    (void)dev;
    return dtod("cuMemcpyDtoD_v2", dst, src, n, nullptr);
}
API int cuMemHostAlloc(void** p, size_t n, unsigned flags) {
    ENTER("cuMemHostAlloc");
    DEVICE("cuMemHostAlloc", dev);
    (void)dev;
    (void)flags;
    if (!p || n == 0) return fail(INVALID_VALUE, "cuMemHostAlloc: null or zero");
    void* m = aligned_alloc(4096, (n + 4095) / 4096 * 4096);
    if (!m) return fail(OUT_OF_MEMORY, "cuMemHostAlloc: %zu bytes", n);
    host_allocs[(uintptr_t)m] = n;
    *p = m;
    return OK;
}
API int cuMemFreeHost(void* p) {
    ENTER("cuMemFreeHost");
    if (!host_allocs.erase((uintptr_t)p)) return fail(INVALID_VALUE, "cuMemFreeHost: %p", p);
    free(p);
    return OK;
}
API int cuModuleLoadData(void** m, const void* image) {
    ENTER("cuModuleLoadData");
    return module_load("cuModuleLoadData", m, image);
}
API int cuModuleGetFunction(void** f, void* m, const char* name) {
    ENTER("cuModuleGetFunction");
    DEVICE("cuModuleGetFunction", dev);
    (void)dev;
    return get_function("cuModuleGetFunction", f, m, name);
}
API int cuModuleUnload(void* m) {
    ENTER("cuModuleUnload");
    DEVICE("cuModuleUnload", dev);
    (void)dev;
    return module_unload("cuModuleUnload", m);
}
API int cuFuncSetAttribute(void* fn, int attr, int v) {
    ENTER("cuFuncSetAttribute");
    DEVICE("cuFuncSetAttribute", dev);
    (void)dev;
    return func_set_attribute("cuFuncSetAttribute", fn, attr, v);
}
API int cuFuncGetAttribute(int* v, int attr, void* fn) {
    ENTER("cuFuncGetAttribute");
    DEVICE("cuFuncGetAttribute", dev);
    (void)dev;
    return func_get_attribute("cuFuncGetAttribute", v, attr, fn);
}
API int cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                       void* s, void** params, void** extra) {
    return launch("cuLaunchKernel", f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}
API int cuEventCreate(void** e, unsigned flags) {
    ENTER("cuEventCreate");
    DEVICE("cuEventCreate", dev);
    (void)dev;
    return event_create("cuEventCreate", e, flags);
}
API int cuEventRecord(void* e, void* s) {
    ENTER("cuEventRecord");
    DEVICE("cuEventRecord", dev);
    (void)dev;
    return event_record("cuEventRecord", e, s);
}
API int cuEventSynchronize(void* e) {
    ENTER("cuEventSynchronize");
    return events.count(e) ? OK : fail(INVALID_HANDLE, "cuEventSynchronize: %p is not an event", e);
}
API int cuEventElapsedTime(float* ms, void* a, void* b) {
    ENTER("cuEventElapsedTime");
    return event_elapsed("cuEventElapsedTime", ms, a, b);
}
API int cuEventDestroy_v2(void* e) {
    ENTER("cuEventDestroy_v2");
    return event_destroy("cuEventDestroy_v2", e);
}
#endif

// ---------------------------------------------------------------- HIP
#ifdef PBEMU_HIP
namespace {
int hip_device(const char* call, int dev) {
    if (cfg.devices == 0) return fail(NO_DEVICE, "%s: no visible device", call);
    if (dev < 0 || dev >= cfg.devices) return fail(INVALID_DEVICE, "%s: device %d of %d", call, dev, cfg.devices);
    return OK;
}
} // namespace

API const char* hipGetErrorName(int code) {
    const ErrName* e = errname(code);
    return e ? e->hip : "hipErrorUnknown";
}
API const char* hipGetErrorString(int code) {
    const ErrName* e = errname(code);
    return e ? e->text : "unknown error";
}
API int hipDriverGetVersion(int* v) {
    if (!v) return INVALID_VALUE;
    *v = 60400000;
    return OK;
}
API int hipRuntimeGetVersion(int* v) {
    if (!v) return INVALID_VALUE;
    *v = 60400000;
    return OK;
}
API int hipInit(unsigned flags) {
    ENTER("hipInit");
    if (flags != 0) return fail(INVALID_VALUE, "hipInit: flags %u", flags);
    return OK;
}
API int hipGetDeviceCount(int* n) {
    ENTER("hipGetDeviceCount");
    if (!n) return fail(INVALID_VALUE, "hipGetDeviceCount: null");
    *n = cfg.devices;
    return cfg.devices > 0 ? OK : fail(NO_DEVICE, "hipGetDeviceCount: no visible device");
}
API int hipDeviceGet(int* d, int ordinal) {
    ENTER("hipDeviceGet");
    if (!d) return fail(INVALID_VALUE, "hipDeviceGet: null");
    if (int rc = hip_device("hipDeviceGet", ordinal)) return rc;
    *d = ordinal;
    return OK;
}
API int hipSetDevice(int dev) {
    ENTER("hipSetDevice");
    if (int rc = hip_device("hipSetDevice", dev)) return rc;
    cur_dev = dev;
    return OK;
}
API int hipGetDevice(int* dev) {
    ENTER("hipGetDevice");
    if (!dev) return fail(INVALID_VALUE, "hipGetDevice: null");
    *dev = cur_dev;
    return OK;
}
API int hipDeviceGetName(char* buf, int n, int dev) {
    ENTER("hipDeviceGetName");
    return device_name("hipDeviceGetName", buf, n, dev);
}
API int hipDeviceGetAttribute(int* v, int attr, int dev) {
    ENTER("hipDeviceGetAttribute");
    if (!v) return fail(INVALID_VALUE, "hipDeviceGetAttribute: null");
    if (int rc = hip_device("hipDeviceGetAttribute", dev)) return rc;
    return attribute(attr, v) ? OK : fail(INVALID_VALUE, "hipDeviceGetAttribute: attribute %d", attr);
}
// hipGetDevicePropertiesR0600 fills ROCm 6's 1472-byte struct with only
// what this emulator knows the layout of: the name at byte 0 and
// gcnArchName at 1160 (gpu-runtime.md §2); the rest stays zero.
API int hipGetDevicePropertiesR0600(void* props, int dev) {
    ENTER("hipGetDevicePropertiesR0600");
    if (!props) return fail(INVALID_VALUE, "hipGetDevicePropertiesR0600: null");
    if (int rc = hip_device("hipGetDevicePropertiesR0600", dev)) return rc;
    char* p = (char*)props;
    memset(p, 0, 1472);
    snprintf(p, 256, "%s", cfg.name.c_str());
    snprintf(p + 1160, 256, "%s", cfg.arch.c_str());
    return OK;
}
API int hipMemGetInfo(size_t* free_, size_t* total) {
    ENTER("hipMemGetInfo");
    DEVICE("hipMemGetInfo", dev);
    if (!free_ || !total) return fail(INVALID_VALUE, "hipMemGetInfo: null");
    *total = cfg.mem_bytes;
    *free_ = cfg.mem_bytes - live[dev];
    return OK;
}
API int hipDeviceSynchronize() {
    ENTER("hipDeviceSynchronize");
    return OK;
}
API int hipStreamCreateWithFlags(void** s, unsigned flags) {
    ENTER("hipStreamCreateWithFlags");
    return stream_create("hipStreamCreateWithFlags", s, flags);
}
API int hipStreamCreate(void** s) {
    ENTER("hipStreamCreate");
    return stream_create("hipStreamCreate", s, 0);
}
API int hipStreamSynchronize(void* s) {
    ENTER("hipStreamSynchronize");
    return check_stream("hipStreamSynchronize", s);
}
API int hipStreamDestroy(void* s) {
    ENTER("hipStreamDestroy");
    return stream_destroy("hipStreamDestroy", s);
}
API int hipMalloc(void** p, size_t n) {
    ENTER("hipMalloc");
    return mem_alloc("hipMalloc", p, n);
}
API int hipFree(void* p) {
    ENTER("hipFree");
    return mem_free("hipFree", p);
}
API int hipMemsetD8Async(void* p, unsigned char v, size_t n, void* s) {
    ENTER("hipMemsetD8Async");
    return memset8("hipMemsetD8Async", p, v, n, s);
}
API int hipMemsetD8(void* p, unsigned char v, size_t n) {
    ENTER("hipMemsetD8");
    return memset8("hipMemsetD8", p, v, n, nullptr);
}
API int hipMemsetAsync(void* p, int v, size_t n, void* s) {
    ENTER("hipMemsetAsync");
    return memset8("hipMemsetAsync", p, (unsigned char)v, n, s);
}
API int hipMemset(void* p, int v, size_t n) {
    ENTER("hipMemset");
    return memset8("hipMemset", p, (unsigned char)v, n, nullptr);
}
API int hipMemsetD32Async(void* p, int v, size_t n, void* s) {
    ENTER("hipMemsetD32Async");
    return memset32("hipMemsetD32Async", p, (unsigned)v, n, s);
}
API int hipMemcpyHtoDAsync(void* dst, const void* src, size_t n, void* s) {
    ENTER("hipMemcpyHtoDAsync");
    return htod("hipMemcpyHtoDAsync", dst, src, n, s);
}
API int hipMemcpyDtoHAsync(void* dst, const void* src, size_t n, void* s) {
    ENTER("hipMemcpyDtoHAsync");
    return dtoh("hipMemcpyDtoHAsync", dst, src, n, s);
}
API int hipMemcpyHtoD(void* dst, const void* src, size_t n) {
    ENTER("hipMemcpyHtoD");
    return htod("hipMemcpyHtoD", dst, src, n, nullptr);
}
API int hipMemcpyDtoH(void* dst, const void* src, size_t n) {
    ENTER("hipMemcpyDtoH");
    return dtoh("hipMemcpyDtoH", dst, src, n, nullptr);
}
// hipMemcpyAsync: kind 1 host→device, 2 device→host, 3 device→device.
API int hipMemcpyAsync(void* dst, const void* src, size_t n, int kind, void* s) {
    ENTER("hipMemcpyAsync");
    switch (kind) {
    case 1: return htod("hipMemcpyAsync", dst, src, n, s);
    case 2: return dtoh("hipMemcpyAsync", dst, src, n, s);
    case 3: return dtod("hipMemcpyAsync", dst, src, n, s);
    }
    return fail(INVALID_VALUE, "hipMemcpyAsync: kind %d", kind);
}
API int hipMemcpy(void* dst, const void* src, size_t n, int kind) {
    ENTER("hipMemcpy");
    switch (kind) {
    case 1: return htod("hipMemcpy", dst, src, n, nullptr);
    case 2: return dtoh("hipMemcpy", dst, src, n, nullptr);
    case 3: return dtod("hipMemcpy", dst, src, n, nullptr);
    }
    return fail(INVALID_VALUE, "hipMemcpy: kind %d", kind);
}
API int hipHostMalloc(void** p, size_t n, unsigned flags) {
    ENTER("hipHostMalloc");
    (void)flags;
    if (!p) return fail(INVALID_VALUE, "hipHostMalloc: null");
    if (n == 0) {
        *p = nullptr;
        return OK;
    }
    void* m = aligned_alloc(4096, (n + 4095) / 4096 * 4096);
    if (!m) return fail(OUT_OF_MEMORY, "hipHostMalloc: %zu bytes", n);
    host_allocs[(uintptr_t)m] = n;
    *p = m;
    return OK;
}
API int hipHostFree(void* p) {
    ENTER("hipHostFree");
    if (!p) return OK;
    if (!host_allocs.erase((uintptr_t)p)) return fail(INVALID_VALUE, "hipHostFree: %p", p);
    free(p);
    return OK;
}
API int hipModuleLoadData(void** m, const void* image) {
    ENTER("hipModuleLoadData");
    return module_load("hipModuleLoadData", m, image);
}
API int hipModuleGetFunction(void** f, void* m, const char* name) {
    ENTER("hipModuleGetFunction");
    return get_function("hipModuleGetFunction", f, m, name);
}
API int hipModuleUnload(void* m) {
    ENTER("hipModuleUnload");
    return module_unload("hipModuleUnload", m);
}
API int hipFuncGetAttribute(int* v, int attr, void* fn) {
    ENTER("hipFuncGetAttribute");
    return func_get_attribute("hipFuncGetAttribute", v, attr, fn);
}
// hipFuncSetAttribute takes a host function in HIP (the runtime API's);
// the emulator takes its module functions too. AMD needs no opt-in: the
// LDS limit is the same with or without it.
API int hipFuncSetAttribute(void* fn, int attr, int v) {
    ENTER("hipFuncSetAttribute");
    return func_set_attribute("hipFuncSetAttribute", fn, attr, v);
}
API int hipModuleLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                              unsigned shmem, void* s, void** params, void** extra) {
    return launch("hipModuleLaunchKernel", f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}
API int hipEventCreateWithFlags(void** e, unsigned flags) {
    ENTER("hipEventCreateWithFlags");
    return event_create("hipEventCreateWithFlags", e, flags);
}
API int hipEventCreate(void** e) {
    ENTER("hipEventCreate");
    return event_create("hipEventCreate", e, 0);
}
API int hipEventRecord(void* e, void* s) {
    ENTER("hipEventRecord");
    return event_record("hipEventRecord", e, s);
}
API int hipEventSynchronize(void* e) {
    ENTER("hipEventSynchronize");
    return events.count(e) ? OK : fail(INVALID_HANDLE, "hipEventSynchronize: %p is not an event", e);
}
API int hipEventElapsedTime(float* ms, void* a, void* b) {
    ENTER("hipEventElapsedTime");
    return event_elapsed("hipEventElapsedTime", ms, a, b);
}
API int hipEventDestroy(void* e) {
    ENTER("hipEventDestroy");
    return event_destroy("hipEventDestroy", e);
}
#endif
