// pbemu_device.h — the device side of plexbench's emulated CUDA/HIP runtime.
// The emulated nvrtc/hiprtc (rtc.cc) compiles every program as this header
// followed by the (preprocessed) kernel source into a host shared object;
// the emulated driver (runtime.cc) dlopens it and calls __pbemu_launch.
//
// Execution model: the grid's blocks are shared out to host worker threads;
// a block's threads are fibers on one worker (cooperative, run in thread
// order until each reaches a barrier), so __syncthreads and the warp
// operations (shuffles, ballots, __syncwarp) are exact rendezvous, and
// __shared__ variables are thread_local: one copy per worker, which is one
// per block because a worker runs one block at a time. A block whose
// threads wait on barriers that can never complete (a divergent
// __syncthreads) fails the launch instead of hanging.
//
// Two parts: the macros (always; the compiler's first pass preprocesses
// the kernel source with PBEMU_SCAN defined, where __global__ and
// __shared__ become marker tokens it rewrites) and the code (not under
// PBEMU_SCAN). PBEMU_HIP selects the HIP dialect (maskless shuffles, 64-bit
// ballots), otherwise CUDA's (*_sync forms, 32-bit ballots).
#ifndef PBEMU_DEVICE_H
#define PBEMU_DEVICE_H

#ifdef PBEMU_SCAN
#define __global__ __pbemu_global__
#define __shared__ __pbemu_shared__
#define __launch_bounds__(...) __pbemu_lb__(__VA_ARGS__)
#else
#define __global__
#define __shared__ thread_local
#define __launch_bounds__(...)
#define __pbemu_lb__(...)
#endif
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __grid_constant__
#ifdef PBEMU_HIP
#define hipThreadIdx_x threadIdx.x
#define hipThreadIdx_y threadIdx.y
#define hipThreadIdx_z threadIdx.z
#define hipBlockIdx_x blockIdx.x
#define hipBlockIdx_y blockIdx.y
#define hipBlockIdx_z blockIdx.z
#define hipBlockDim_x blockDim.x
#define hipBlockDim_y blockDim.y
#define hipBlockDim_z blockDim.z
#define hipGridDim_x gridDim.x
#define hipGridDim_y gridDim.y
#define hipGridDim_z gridDim.z
#endif
#ifndef assert
#define assert(e) ((e) ? (void)0 : ::pbemu::fail_assert(#e, __FILE__, __LINE__))
#endif

#ifndef PBEMU_SCAN
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>
#include <time.h>
#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#define PBEMU_EXPORT __attribute__((visibility("default")))

struct uint3 { unsigned x, y, z; };
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

// The built-in variables: per worker (blockIdx, blockDim, gridDim) or set
// at every switch into a fiber (threadIdx).
static thread_local uint3 threadIdx, blockIdx;
static thread_local dim3 blockDim, gridDim;
static thread_local int warpSize;

namespace pbemu {

enum { NEW, RUN, WAIT, DONE };

struct Fiber {
    void* sp;
#if !defined(__x86_64__)
    ucontext_t uc;
#endif
    uint3 tid;
    unsigned lin;
    int state;
    struct Barrier* on; // the barrier a WAIT fiber waits at
};

// One warp's (or the block's) barrier: arrivals against the live threads.
struct Barrier {
    unsigned arrived, live, first, count; // members: fibers [first, first+count)
};

struct Block {
    Fiber* f;
    unsigned n, warp, nwarps, done;
    Barrier bar;
    Barrier* wbar;
    unsigned long long* xchg;
    Fiber* cur;
    void* sched_sp;
#if !defined(__x86_64__)
    ucontext_t sched_uc;
#endif
    char* stacks;
    size_t stack_size;
    void (*call)(void*, void**);
    void* fn;
    void** params;
    int failed; // 3 trap, 4 assert, 6 shared memory over the limit
    char why[256];
    // Static shared memory: the __shared__ variables this worker's blocks
    // declared (noted as each declaration runs), their bytes, the launch's
    // dynamic bytes and the limit on both together (0: none).
    struct { const void* p; unsigned long n; } noted[64];
    unsigned nnoted;
    unsigned long static_bytes, dyn_bytes, shared_limit;
    bool poison;
};

static thread_local Block* blk;
static thread_local void* dyn_smem;

// ---- context switching ----
#if defined(__x86_64__)
extern "C" void pbemu_swap(void** save_sp, void* to_sp);
extern "C" void pbemu_tramp();
asm(R"(
    .text
    .p2align 4
    .globl pbemu_swap
    .hidden pbemu_swap
    .type pbemu_swap,@function
pbemu_swap:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size pbemu_swap,.-pbemu_swap
    .globl pbemu_tramp
    .hidden pbemu_tramp
    .type pbemu_tramp,@function
pbemu_tramp:
    andq $-16, %rsp
    call pbemu_fiber_main
    ud2
    .size pbemu_tramp,.-pbemu_tramp
)");
#endif

extern "C" __attribute__((visibility("hidden"), noreturn)) void pbemu_fiber_main();

static void fiber_prepare(Block* b, Fiber* f) {
    char* base = b->stacks + (size_t)f->lin * b->stack_size;
#if defined(__x86_64__)
    uintptr_t top = ((uintptr_t)base + b->stack_size) & ~(uintptr_t)15;
    void** sp = (void**)top;
    unsigned mx;
    unsigned short cw;
    asm volatile("stmxcsr %0" : "=m"(mx));
    asm volatile("fnstcw %0" : "=m"(cw));
    *--sp = nullptr;
    *--sp = (void*)pbemu_tramp;
    for (int i = 0; i < 6; i++) *--sp = nullptr;
    *--sp = (void*)(uintptr_t)(mx | ((unsigned long long)cw << 32));
    f->sp = sp;
#else
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = base;
    f->uc.uc_stack.ss_size = b->stack_size;
    f->uc.uc_link = nullptr;
    makecontext(&f->uc, (void (*)())pbemu_fiber_main, 0);
#endif
}

// switch_to leaves from (nullptr: the scheduler) for to (nullptr: the scheduler).
static void switch_to(Block* b, Fiber* from, Fiber* to) {
    if (to) {
        if (to->state == NEW) {
            fiber_prepare(b, to);
            to->state = RUN;
        }
        threadIdx = to->tid;
    }
    b->cur = to;
#if defined(__x86_64__)
    pbemu_swap(from ? &from->sp : &b->sched_sp, to ? to->sp : b->sched_sp);
#else
    swapcontext(from ? &from->uc : &b->sched_uc, to ? &to->uc : &b->sched_uc);
#endif
}

// next_runnable is the first fiber after f (cyclically, f itself last)
// that can run; nullptr when none can.
static Fiber* next_runnable(Block* b, Fiber* f) {
    unsigned i = f ? f->lin : b->n - 1;
    for (unsigned k = 1; k <= b->n; k++) {
        Fiber* g = &b->f[(i + k) % b->n];
        if (g->state == NEW || g->state == RUN) return g;
    }
    return nullptr;
}

// yield runs others until the current fiber is runnable again.
static void yield() {
    Block* b = blk;
    Fiber* self = b->cur;
    Fiber* to = next_runnable(b, self);
    if (to == self) return;
    switch_to(b, self, to); // to == nullptr: back to the scheduler (deadlock or failure)
}

static void release(Block* b, Barrier* br) {
    br->arrived = 0;
    for (unsigned i = br->first; i < br->first + br->count; i++)
        if (b->f[i].state == WAIT && b->f[i].on == br) b->f[i].state = RUN;
}

static void arrive(Barrier* br) {
    Block* b = blk;
    if (++br->arrived == br->live) {
        release(b, br);
        return;
    }
    b->cur->state = WAIT;
    b->cur->on = br;
    yield();
}

inline void block_sync() { arrive(&blk->bar); }
inline void warp_sync() { arrive(&blk->wbar[blk->cur->lin / blk->warp]); }

[[noreturn]] static void fail(int code, const char* msg) {
    Block* b = blk;
    if (!b->failed) {
        b->failed = code;
        snprintf(b->why, sizeof b->why, "%s", msg);
    }
    switch_to(b, b->cur, nullptr);
    __builtin_unreachable();
}

[[noreturn]] inline void fail_assert(const char* e, const char* file, int line) {
    char msg[256];
    snprintf(msg, sizeof msg, "%s:%d: device assertion `%s' failed (block %u,%u,%u thread %u,%u,%u)", file, line, e,
             blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
    fail(4, msg);
}

[[noreturn]] static void fiber_exit() {
    Block* b = blk;
    Fiber* self = b->cur;
    self->state = DONE;
    b->done++;
    Barrier* brs[2] = {&b->bar, &b->wbar[self->lin / b->warp]};
    for (Barrier* br : brs) {
        br->live--;
        if (br->arrived > 0 && br->arrived == br->live) release(b, br);
    }
    switch_to(b, self, next_runnable(b, self));
    __builtin_unreachable();
}

// Warp exchange: every live lane publishes v, then reads lane src's
// value (its own when src is outside the warp or its segment).
template <class T> static T exchange(T v, int src) {
    static_assert(sizeof(T) <= 8, "warp shuffles of more than 8 bytes");
    Block* b = blk;
    unsigned lin = b->cur->lin;
    unsigned base = lin / b->warp * b->warp;
    unsigned long long bits = 0;
    memcpy(&bits, &v, sizeof v);
    b->xchg[lin] = bits;
    warp_sync();
    T r = v;
    if (src >= 0 && (unsigned)src < b->warp && base + src < b->n && b->f[base + src].state != DONE)
        memcpy(&r, &b->xchg[base + src], sizeof r);
    warp_sync();
    return r;
}

inline int lane() { return (int)(blk->cur->lin % blk->warp); }

static inline int seg_src_xor(int m, int width) {
    int l = lane(), s = l ^ m;
    return (s / width > l / width) ? l : s; // a later segment: own value
}
static inline int seg_src_idx(int src, int width) { return lane() / width * width + ((src % width) + width) % width; }
static inline int seg_src_down(int d, int width) { return (lane() % width) + d < width ? lane() + d : lane(); }
static inline int seg_src_up(int d, int width) { return (lane() % width) >= d ? lane() - d : lane(); }

// The warp's lanes whose predicate is true (lanes that exited count as false).
static unsigned long long vote(int pred) {
    Block* b = blk;
    unsigned lin = b->cur->lin;
    unsigned base = lin / b->warp * b->warp;
    b->xchg[lin] = pred != 0;
    warp_sync();
    unsigned long long m = 0;
    for (unsigned i = 0; i < b->warp && base + i < b->n; i++)
        if (b->f[base + i].state != DONE && b->xchg[base + i]) m |= 1ull << i;
    warp_sync();
    return m;
}

static unsigned long long active() {
    Block* b = blk;
    unsigned base = b->cur->lin / b->warp * b->warp;
    unsigned long long m = 0;
    for (unsigned i = 0; i < b->warp && base + i < b->n; i++)
        if (b->f[base + i].state != DONE) m |= 1ull << i;
    return m;
}

// Kernel entries: the compiler emits PBEMU_ENTRY(name) for every
// __global__ function it finds; the runtime finds __pbemu_kernel_<name>.
template <unsigned... I> struct seq {};
template <unsigned N, unsigned... I> struct mkseq : mkseq<N - 1, N - 1, I...> {};
template <unsigned... I> struct mkseq<0, I...> { typedef seq<I...> type; };

struct KernelInfo {
    unsigned abi;
    void (*call)(void* fn, void** params);
    void* fn;
    unsigned nparams;
    const unsigned* sizes;
    const unsigned* aligns;
    unsigned launch_bound; // __launch_bounds__'s threads per block; 0: none
};

template <class... A> struct Sig {
    static constexpr unsigned sizes[sizeof...(A) + 1] = {(unsigned)sizeof(A)..., 0};
    static constexpr unsigned aligns[sizeof...(A) + 1] = {(unsigned)alignof(A)..., 0};
    template <unsigned... I> static void go(void (*k)(A...), void** p, seq<I...>) { k(*static_cast<A*>(p[I])...); }
    static void call(void* fn, void** p) { go(reinterpret_cast<void (*)(A...)>(fn), p, typename mkseq<sizeof...(A)>::type{}); }
};
template <class... A> constexpr KernelInfo info(void (*k)(A...), unsigned bound) {
    return KernelInfo{2, &Sig<A...>::call, (void*)k, (unsigned)sizeof...(A), Sig<A...>::sizes, Sig<A...>::aligns, bound};
}

// shared_note records a __shared__ variable as its declaration runs (the
// compiler puts a call after each one): the block's static shared memory
// is the sum of the distinct variables its threads declared, checked with
// the dynamic bytes against the launch's limit as a real launch checks
// them before it starts (the emulator learns a kernel's static size on
// its first launch, then checks before launching too). A variable seen
// for the first time is poisoned, like the rest of shared memory at each
// block's start. Variables at namespace scope are not counted (no kernel
// here has one). Returns 0: it initializes a dummy variable, so that the
// note is a declaration at any scope.
inline int shared_note(const void* p, unsigned long n) {
    Block* b = blk;
    if (!b) return 0;
    for (unsigned i = 0; i < b->nnoted; i++)
        if (b->noted[i].p == p) return 0;
    if (b->nnoted == 64) return 0; // more variables than any kernel has: the rest go uncounted
    b->noted[b->nnoted++] = {p, n};
    b->static_bytes += n;
    if (b->poison) memset((void*)p, 0xff, n);
    if (b->shared_limit && b->static_bytes + b->dyn_bytes > b->shared_limit) {
        char msg[200];
        snprintf(msg, sizeof msg, "%lu bytes of static and %lu of dynamic shared memory, limit %lu", b->static_bytes,
                 b->dyn_bytes, b->shared_limit);
        fail(6, msg);
    }
    return 0;
}

// DynShared stands for an `extern __shared__ T name[]` declaration: it
// reads as a T* to this block's dynamic shared memory.
template <class T> struct DynShared {
    T* p() const { return static_cast<T*>(dyn_smem); }
    template <class U> operator U*() const { return static_cast<U*>(dyn_smem); }
    template <class I> T& operator[](I i) const { return p()[i]; }
    T& operator*() const { return *p(); }
    template <class I> T* operator+(I i) const { return p() + i; }
    template <class I> T* operator-(I i) const { return p() - i; }
};

// ---- the launch ----
// LaunchCtl is what the driver says about a launch beyond its shape, and
// what the launch tells it back.
struct LaunchCtl {
    unsigned long shared_limit;    // static + dynamic shared bytes per block; 0: unchecked
    int poison;                    // fill shared memory with 0xFF bytes at each block
    const uintptr_t* ranges;       // traffic: sorted, disjoint [lo, hi) pairs of weight memory
    unsigned nranges;
    unsigned long long* counts;    // out: bytes loaded from each range (modules built with PBEMU_TRAFFIC)
    unsigned long static_shared;   // out: the static shared bytes a block declared
};

// Weight traffic (PLEXBENCH_EMU_TRAFFIC=1: the compiler builds the module
// with -fsanitize=kernel-address and PBEMU_TRAFFIC, so every load calls
// one of the __asan_load* hooks below; without it there are no hooks and
// no cost). A load inside [lo, lo+span) is looked up in the launch's
// ranges and counted per worker and range; a launch with no ranges has
// span 0, so nothing counts.
static thread_local uintptr_t tr_lo, tr_span;
static thread_local const uintptr_t* tr_ranges;
static thread_local unsigned tr_n;
static thread_local unsigned long long* tr_counts;

static inline void traffic_begin(const LaunchCtl* c) {
    tr_n = c->counts ? c->nranges : 0;
    tr_counts = tr_n ? (unsigned long long*)calloc(tr_n, sizeof *tr_counts) : nullptr;
    if (!tr_counts) tr_n = 0;
    tr_ranges = c->ranges;
    tr_lo = tr_n ? c->ranges[0] : 0;
    tr_span = tr_n ? c->ranges[2 * tr_n - 1] - tr_lo : 0;
}
// traffic_end adds the worker's counts to c's (the launch's lock held).
static inline void traffic_end(LaunchCtl* c) {
    for (unsigned i = 0; i < tr_n; i++) c->counts[i] += tr_counts[i];
    free(tr_counts);
    tr_counts = nullptr;
    tr_span = 0;
    tr_n = 0;
}

#ifdef PBEMU_TRAFFIC
#define PBEMU_NO_HOOKS __attribute__((no_sanitize_address, noinline))
PBEMU_NO_HOOKS static void traffic_load(uintptr_t a, unsigned long n) {
    if (a - tr_lo >= tr_span) return;
    unsigned lo = 0, hi = tr_n; // the last range starting at or below a
    while (hi - lo > 1) {
        unsigned mid = (lo + hi) / 2;
        if (tr_ranges[2 * mid] <= a) lo = mid;
        else hi = mid;
    }
    if (a >= tr_ranges[2 * lo] && a < tr_ranges[2 * lo + 1]) tr_counts[lo] += n;
}
#endif

struct Launch {
    const KernelInfo* k;
    LaunchCtl* ctl;
    unsigned gx, gy, gz, bx, by, bz, shmem, warp;
    void** params;
    size_t stack_size;
    unsigned long long nblocks;
    unsigned long long next; // atomic
    int failed;              // atomic: the first failure's code
    char why[256];
    pthread_mutex_t mu;
};

static int run_block(Launch* L, Block* b, unsigned long long idx) {
    unsigned n = b->n;
    blockIdx.x = (unsigned)(idx % L->gx);
    blockIdx.y = (unsigned)(idx / L->gx % L->gy);
    blockIdx.z = (unsigned)(idx / ((unsigned long long)L->gx * L->gy));
    for (unsigned t = 0; t < n; t++) {
        Fiber* f = &b->f[t];
        f->lin = t;
        f->tid = uint3{t % L->bx, t / L->bx % L->by, t / (L->bx * L->by)};
        f->state = NEW;
    }
    b->done = 0;
    b->bar = Barrier{0, n, 0, n};
    for (unsigned w = 0; w < b->nwarps; w++) {
        unsigned first = w * b->warp, cnt = n - first < b->warp ? n - first : b->warp;
        b->wbar[w] = Barrier{0, cnt, first, cnt};
    }
    b->failed = 0;
    if (b->poison) {
        for (unsigned i = 0; i < b->nnoted; i++) memset((void*)b->noted[i].p, 0xff, b->noted[i].n);
        if (L->shmem) memset(dyn_smem, 0xff, L->shmem);
    }
    switch_to(b, nullptr, &b->f[0]);
    if (b->failed) return b->failed;
    if (b->done != n) {
        unsigned at_block = 0, at_warp = 0;
        for (unsigned t = 0; t < n; t++)
            if (b->f[t].state == WAIT) at_block++;
        at_warp = at_block - b->bar.arrived;
        at_block = b->bar.arrived;
        snprintf(b->why, sizeof b->why,
                 "deadlock in block (%u,%u,%u): %u of %u threads at __syncthreads, %u in a warp operation, %u exited",
                 blockIdx.x, blockIdx.y, blockIdx.z, at_block, n, at_warp, b->done);
        return 2;
    }
    return 0;
}

// Fiber stacks outlive a launch: a worker takes a mapping from this pool
// and gives it back, so the pages its fibers touched stay mapped and the
// next launch does not fault them in again (faulting fresh stacks in, and
// unmapping them, took a third of an emulated run's time). A few mappings
// are kept per module; a worker that finds none of its size maps one.
struct StackPool {
    pthread_mutex_t mu;
    void* p[8];
    size_t size[8];
    unsigned n;
};
static StackPool stack_pool = {PTHREAD_MUTEX_INITIALIZER, {}, {}, 0};

static void* stacks_get(size_t size) {
    pthread_mutex_lock(&stack_pool.mu);
    for (unsigned i = 0; i < stack_pool.n; i++) {
        if (stack_pool.size[i] != size) continue;
        void* p = stack_pool.p[i];
        stack_pool.n--;
        stack_pool.p[i] = stack_pool.p[stack_pool.n];
        stack_pool.size[i] = stack_pool.size[stack_pool.n];
        pthread_mutex_unlock(&stack_pool.mu);
        return p;
    }
    pthread_mutex_unlock(&stack_pool.mu);
    return mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
}

static void stacks_put(void* p, size_t size) {
    pthread_mutex_lock(&stack_pool.mu);
    if (stack_pool.n == 8) { // full: the oldest goes
        munmap(stack_pool.p[0], stack_pool.size[0]);
        stack_pool.n--;
        stack_pool.p[0] = stack_pool.p[stack_pool.n];
        stack_pool.size[0] = stack_pool.size[stack_pool.n];
    }
    stack_pool.p[stack_pool.n] = p;
    stack_pool.size[stack_pool.n] = size;
    stack_pool.n++;
    pthread_mutex_unlock(&stack_pool.mu);
}

static void* worker(void* arg) {
    Launch* L = (Launch*)arg;
    Block b;
    memset(&b, 0, sizeof b);
    b.n = L->bx * L->by * L->bz;
    b.warp = L->warp;
    b.nwarps = (b.n + b.warp - 1) / b.warp;
    b.call = L->k->call;
    b.fn = L->k->fn;
    b.params = L->params;
    b.stack_size = L->stack_size;
    b.shared_limit = L->ctl->shared_limit;
    b.dyn_bytes = L->shmem;
    b.poison = L->ctl->poison != 0;
    traffic_begin(L->ctl);
    b.f = (Fiber*)calloc(b.n, sizeof(Fiber));
    b.wbar = (Barrier*)calloc(b.nwarps, sizeof(Barrier));
    b.xchg = (unsigned long long*)calloc(b.n, sizeof(unsigned long long));
    void* stacks = stacks_get(b.stack_size * b.n);
    void* smem = L->shmem ? aligned_alloc(256, (L->shmem + 255) / 256 * 256) : nullptr;
    int rc = 0;
    if (!b.f || !b.wbar || !b.xchg || stacks == MAP_FAILED || (L->shmem && !smem)) {
        rc = 5;
        snprintf(b.why, sizeof b.why, "out of host memory for %u fibers", b.n);
    }
    b.stacks = (char*)stacks;
    blk = &b;
    dyn_smem = smem;
    blockDim = dim3(L->bx, L->by, L->bz);
    gridDim = dim3(L->gx, L->gy, L->gz);
    warpSize = (int)L->warp;
    while (rc == 0 && __atomic_load_n(&L->failed, __ATOMIC_RELAXED) == 0) {
        unsigned long long idx = __atomic_fetch_add(&L->next, 1, __ATOMIC_RELAXED);
        if (idx >= L->nblocks) break;
        rc = run_block(L, &b, idx);
    }
    pthread_mutex_lock(&L->mu);
    if (rc && !L->failed) {
        L->failed = rc;
        memcpy(L->why, b.why, sizeof L->why);
    }
    if (b.static_bytes > L->ctl->static_shared) L->ctl->static_shared = b.static_bytes;
    traffic_end(L->ctl);
    pthread_mutex_unlock(&L->mu);
    blk = nullptr;
    dyn_smem = nullptr;
    if (stacks != MAP_FAILED) stacks_put(stacks, b.stack_size * b.n);
    free(smem);
    free(b.f);
    free(b.wbar);
    free(b.xchg);
    return nullptr;
}

} // namespace pbemu

#ifdef PBEMU_TRAFFIC
#define PBEMU_LOAD_HOOK(n) \
    extern "C" PBEMU_NO_HOOKS void __asan_load##n##_noabort(uintptr_t a) { pbemu::traffic_load(a, n); }
PBEMU_LOAD_HOOK(1)
PBEMU_LOAD_HOOK(2)
PBEMU_LOAD_HOOK(4)
PBEMU_LOAD_HOOK(8)
PBEMU_LOAD_HOOK(16)
#define PBEMU_STORE_HOOK(n) \
    extern "C" PBEMU_NO_HOOKS void __asan_store##n##_noabort(uintptr_t) {}
PBEMU_STORE_HOOK(1)
PBEMU_STORE_HOOK(2)
PBEMU_STORE_HOOK(4)
PBEMU_STORE_HOOK(8)
PBEMU_STORE_HOOK(16)
extern "C" PBEMU_NO_HOOKS void __asan_loadN_noabort(uintptr_t a, unsigned long n) { pbemu::traffic_load(a, n); }
extern "C" PBEMU_NO_HOOKS void __asan_storeN_noabort(uintptr_t, unsigned long) {}
extern "C" PBEMU_NO_HOOKS void __asan_handle_no_return() {}
extern "C" PBEMU_NO_HOOKS void __asan_before_dynamic_init(const char*) {}
extern "C" PBEMU_NO_HOOKS void __asan_after_dynamic_init() {}
#endif

extern "C" void pbemu_fiber_main() {
    pbemu::Block* b = pbemu::blk;
    b->call(b->fn, b->params);
    pbemu::fiber_exit();
}

// __pbemu_launch runs the whole grid and returns when it is done: 0, or 2
// (deadlock), 3 (__trap), 4 (assert), 5 (host memory), 6 (shared memory
// over the limit), with why filled.
extern "C" PBEMU_EXPORT int __pbemu_launch(const pbemu::KernelInfo* k, const unsigned* dims, unsigned shmem, unsigned warp,
                                           void** params, unsigned workers, unsigned stack_kib, pbemu::LaunchCtl* ctl,
                                           char* why, unsigned whylen) {
    pbemu::Launch L;
    memset(&L, 0, sizeof L);
    L.k = k;
    L.ctl = ctl;
    L.gx = dims[0], L.gy = dims[1], L.gz = dims[2], L.bx = dims[3], L.by = dims[4], L.bz = dims[5];
    L.shmem = shmem;
    L.warp = warp ? warp : 32;
    L.params = params;
    L.stack_size = (size_t)(stack_kib ? stack_kib : 256) << 10;
    L.nblocks = (unsigned long long)L.gx * L.gy * L.gz;
    pthread_mutex_init(&L.mu, nullptr);
    unsigned nw = workers ? workers : 1;
    if (nw > L.nblocks) nw = (unsigned)L.nblocks;
    // Workers block every signal: process signals go to the host's threads.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pthread_t* ts = (pthread_t*)calloc(nw, sizeof(pthread_t));
    for (unsigned i = 1; i < nw; i++) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 1 << 20);
        if (pthread_create(&ts[i], &a, pbemu::worker, &L) != 0) ts[i] = 0; // fewer workers, same result
        pthread_attr_destroy(&a);
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    pbemu::worker(&L); // the calling thread is worker 0
    for (unsigned i = 1; i < nw; i++)
        if (ts[i]) pthread_join(ts[i], nullptr);
    free(ts);
    pthread_mutex_destroy(&L.mu);
    if (L.failed && why && whylen) snprintf(why, whylen, "%s", L.why);
    return L.failed;
}

extern "C" PBEMU_EXPORT const unsigned __pbemu_abi = 2;

#define PBEMU_ENTRY(k) extern "C" PBEMU_EXPORT const ::pbemu::KernelInfo __pbemu_kernel_##k = ::pbemu::info(&k, 0);
#define PBEMU_ENTRY_LB(k, bound, ...) \
    extern "C" PBEMU_EXPORT const ::pbemu::KernelInfo __pbemu_kernel_##k = ::pbemu::info(&k, (unsigned)(bound));

// ---- the dialect's built-in functions ----
inline void __syncthreads() { pbemu::block_sync(); }
inline int __syncthreads_count(int p) {
    static thread_local int c;
    pbemu::block_sync();
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) c = 0;
    pbemu::block_sync();
    __atomic_fetch_add(&c, p != 0, __ATOMIC_RELAXED);
    pbemu::block_sync();
    int r = c;
    pbemu::block_sync();
    return r;
}
inline int __syncthreads_or(int p) { return __syncthreads_count(p) != 0; }
inline int __syncthreads_and(int p) {
    return __syncthreads_count(p) == (int)(blockDim.x * blockDim.y * blockDim.z);
}
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
[[noreturn]] inline void __trap() {
    char msg[128];
    snprintf(msg, sizeof msg, "__trap() in block (%u,%u,%u) thread (%u,%u,%u)", blockIdx.x, blockIdx.y, blockIdx.z,
             threadIdx.x, threadIdx.y, threadIdx.z);
    pbemu::fail(3, msg);
}
inline void __nanosleep(unsigned) {}
inline long long clock64() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}
inline long long wall_clock64() { return clock64(); }

#ifdef PBEMU_HIP
template <class T> T __shfl(T v, int src, int width = warpSize) { return pbemu::exchange(v, pbemu::seg_src_idx(src, width)); }
template <class T> T __shfl_xor(T v, int m, int width = warpSize) { return pbemu::exchange(v, pbemu::seg_src_xor(m, width)); }
template <class T> T __shfl_down(T v, unsigned d, int width = warpSize) { return pbemu::exchange(v, pbemu::seg_src_down((int)d, width)); }
template <class T> T __shfl_up(T v, unsigned d, int width = warpSize) { return pbemu::exchange(v, pbemu::seg_src_up((int)d, width)); }
inline unsigned long long __ballot(int p) { return pbemu::vote(p); }
inline int __any(int p) { return pbemu::vote(p) != 0; }
inline int __all(int p) { return pbemu::vote(p) == pbemu::active(); }
inline unsigned long long __activemask() { return pbemu::active(); }
inline unsigned __lane_id() { return (unsigned)pbemu::lane(); }
// ROCm 6.2's *_sync forms insist on a 64-bit mask.
#define PBEMU_MASK_CHECK(M) static_assert(sizeof(M) == 8, "The mask must be a 64-bit integer")
template <class M, class T> T __shfl_sync(M, T v, int src, int width = warpSize) { PBEMU_MASK_CHECK(M); return __shfl(v, src, width); }
template <class M, class T> T __shfl_xor_sync(M, T v, int m, int width = warpSize) { PBEMU_MASK_CHECK(M); return __shfl_xor(v, m, width); }
template <class M, class T> T __shfl_down_sync(M, T v, unsigned d, int width = warpSize) { PBEMU_MASK_CHECK(M); return __shfl_down(v, d, width); }
template <class M, class T> T __shfl_up_sync(M, T v, unsigned d, int width = warpSize) { PBEMU_MASK_CHECK(M); return __shfl_up(v, d, width); }
template <class M> unsigned long long __ballot_sync(M, int p) { PBEMU_MASK_CHECK(M); return pbemu::vote(p); }
template <class M> void __syncwarp(M) { PBEMU_MASK_CHECK(M); pbemu::warp_sync(); }
#else
template <class T> T __shfl_sync(unsigned, T v, int src, int width = warpSize) { return pbemu::exchange(v, pbemu::seg_src_idx(src, width)); }
template <class T> T __shfl_xor_sync(unsigned, T v, int m, int width = warpSize) { return pbemu::exchange(v, pbemu::seg_src_xor(m, width)); }
template <class T> T __shfl_down_sync(unsigned, T v, unsigned d, int width = warpSize) { return pbemu::exchange(v, pbemu::seg_src_down((int)d, width)); }
template <class T> T __shfl_up_sync(unsigned, T v, unsigned d, int width = warpSize) { return pbemu::exchange(v, pbemu::seg_src_up((int)d, width)); }
inline unsigned __ballot_sync(unsigned, int p) { return (unsigned)pbemu::vote(p); }
inline int __any_sync(unsigned, int p) { return pbemu::vote(p) != 0; }
inline int __all_sync(unsigned, int p) { return pbemu::vote(p) == pbemu::active(); }
inline unsigned __activemask() { return (unsigned)pbemu::active(); }
inline void __syncwarp(unsigned = 0xffffffffu) { pbemu::warp_sync(); }
#endif

// Bit casts and integer intrinsics.
inline float __int_as_float(int v) { float f; memcpy(&f, &v, 4); return f; }
inline float __int_as_float(unsigned v) { float f; memcpy(&f, &v, 4); return f; }
inline float __uint_as_float(unsigned v) { float f; memcpy(&f, &v, 4); return f; }
inline int __float_as_int(float f) { int v; memcpy(&v, &f, 4); return v; }
inline unsigned __float_as_uint(float f) { unsigned v; memcpy(&v, &f, 4); return v; }
inline long long __double_as_longlong(double d) { long long v; memcpy(&v, &d, 8); return v; }
inline double __longlong_as_double(long long v) { double d; memcpy(&d, &v, 8); return d; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}
inline int __mul24(int a, int b) { return (int)((long long)(a << 8 >> 8) * (b << 8 >> 8)); }
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffff) * (b & 0xffffff); }
inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) { return (unsigned long long)(((unsigned __int128)a * b) >> 64); }
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    unsigned long long v = ((unsigned long long)y << 32) | x;
    unsigned r = 0;
    for (int i = 0; i < 4; i++) r |= (unsigned)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
    return r;
}
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned)((v << (s & 31)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned)(v >> (s & 31));
}
template <class T> inline T __ldg(const T* p) { return *p; }

// min/max as the device headers overload them.
inline int min(int a, int b) { return a < b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline float min(float a, float b) { return fminf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double max(double a, double b) { return fmax(a, b); }

// Float intrinsics: the host's IEEE operations (the _rn forms are exact;
// the fast approximations are the accurate functions here).
// Modules are built with -ffp-contract=off: no product is ever fused.
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fsqrt_rn(float a) { return sqrtf(a); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return exp10f(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __powf(float a, float b) { return powf(a, b); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float* s, float* c) { *s = sinf(x); *c = cosf(x); }
inline float __saturatef(float x) { return x != x ? 0.0f : fminf(fmaxf(x, 0.0f), 1.0f); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
inline int __float2int_rz(float x) { return (int)x; }
inline int __float2int_rd(float x) { return (int)floorf(x); }
inline int __float2int_ru(float x) { return (int)ceilf(x); }
inline unsigned __float2uint_rn(float x) { return (unsigned)nearbyintf(x); }
inline float __int2float_rn(int x) { return (float)x; }
inline float __uint2float_rn(unsigned x) { return (float)x; }
inline int __double2int_rn(double x) { return (int)nearbyint(x); }
inline float __double2float_rn(double x) { return (float)x; }

// Atomics: blocks run on several host threads at once, so they are real.
#define PBEMU_ATOMIC_INT(T)                                                                      \
    inline T atomicAdd(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }         \
    inline T atomicSub(T* p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }         \
    inline T atomicExch(T* p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }       \
    inline T atomicAnd(T* p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }         \
    inline T atomicOr(T* p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }           \
    inline T atomicXor(T* p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); }         \
    inline T atomicCAS(T* p, T cmp, T v) {                                                       \
        __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);      \
        return cmp;                                                                              \
    }                                                                                            \
    inline T atomicMin(T* p, T v) {                                                              \
        T o = __atomic_load_n(p, __ATOMIC_RELAXED);                                              \
        while (v < o && !__atomic_compare_exchange_n(p, &o, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {} \
        return o;                                                                                \
    }                                                                                            \
    inline T atomicMax(T* p, T v) {                                                              \
        T o = __atomic_load_n(p, __ATOMIC_RELAXED);                                              \
        while (v > o && !__atomic_compare_exchange_n(p, &o, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {} \
        return o;                                                                                \
    }
PBEMU_ATOMIC_INT(int)
PBEMU_ATOMIC_INT(unsigned)
PBEMU_ATOMIC_INT(long long)
PBEMU_ATOMIC_INT(unsigned long long)
#undef PBEMU_ATOMIC_INT

template <class F, class U> inline F pbemu_atomic_float(F* p, F v, F (*op)(F, F)) {
    U o = __atomic_load_n((U*)p, __ATOMIC_RELAXED), n;
    F of;
    do {
        memcpy(&of, &o, sizeof of);
        F nf = op(of, v);
        memcpy(&n, &nf, sizeof n);
    } while (!__atomic_compare_exchange_n((U*)p, &o, n, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return of;
}
inline float atomicAdd(float* p, float v) { return pbemu_atomic_float<float, unsigned>(p, v, [](float a, float b) { return a + b; }); }
inline double atomicAdd(double* p, double v) { return pbemu_atomic_float<double, unsigned long long>(p, v, [](double a, double b) { return a + b; }); }
inline float atomicExch(float* p, float v) { return pbemu_atomic_float<float, unsigned>(p, v, [](float, float b) { return b; }); }
#ifdef PBEMU_HIP
inline float atomicMax(float* p, float v) { return pbemu_atomic_float<float, unsigned>(p, v, [](float a, float b) { return fmaxf(a, b); }); }
inline float atomicMin(float* p, float v) { return pbemu_atomic_float<float, unsigned>(p, v, [](float a, float b) { return fminf(a, b); }); }
#endif
inline unsigned atomicInc(unsigned* p, unsigned lim) {
    unsigned o = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(p, &o, o >= lim ? 0 : o + 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    return o;
}
inline unsigned atomicDec(unsigned* p, unsigned lim) {
    unsigned o = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(p, &o, (o == 0 || o > lim) ? lim : o - 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    return o;
}

#endif // PBEMU_SCAN
#endif // PBEMU_DEVICE_H
