// emu.h — just enough of the CUDA execution model, in plain C++20, to run
// the device sources on the CPU: each block's threads are std::threads,
// __syncthreads a barrier, __shfl_xor_sync an exchange through memory with
// a per-warp barrier, __shared__ a function-local static (blocks run one
// after another). emu_test.go prepends this to dialect.h + a kernel file,
// builds a shared object with g++ (-ffp-contract=off: nothing fuses that
// the device would not fuse) and compares every kernel with its CPU twin,
// so a logic error shows here, before a device session. It checks logic,
// not the vendor compilers' code: the device check still decides.
#include <barrier>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

struct dim3 { unsigned x = 1, y = 1, z = 1; };
static thread_local dim3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;
static std::barrier<>* emu_block_bar;
static std::vector<std::unique_ptr<std::barrier<>>> emu_warp_bars;
static std::vector<unsigned long long> emu_xchg;
static thread_local int emu_tid;

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__ __restrict
#define __launch_bounds__(...)

inline void __syncthreads() { emu_block_bar->arrive_and_wait(); }
inline float __int_as_float(int v) { float f; memcpy(&f, &v, 4); return f; }
inline float __int_as_float(unsigned v) { float f; memcpy(&f, &v, 4); return f; }
inline float __uint_as_float(unsigned v) { float f; memcpy(&f, &v, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned v; memcpy(&v, &f, 4); return v; }
inline int __float_as_int(float f) { int v; memcpy(&v, &f, 4); return v; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }

template <class T> T __shfl_xor_sync(unsigned, T v, int m, int width) {
    int base = emu_tid / width * width;
    memcpy(&emu_xchg[emu_tid], &v, sizeof v);
    emu_warp_bars[emu_tid / width]->arrive_and_wait();
    T r;
    memcpy(&r, &emu_xchg[base + ((emu_tid - base) ^ m)], sizeof r);
    emu_warp_bars[emu_tid / width]->arrive_and_wait();
    return r;
}

// emu_launch runs kernel k (a wrapper unpacking the cuLaunchKernel-style
// parameter array) over the grid. warp is the -DWARP the source used.
extern "C" void emu_launch(void (*k)(void**), unsigned gx, unsigned gy, unsigned gz,
                           unsigned bx, unsigned by, unsigned bz, int warp, void** params) {
    gridDim = {gx, gy, gz};
    blockDim = {bx, by, bz};
    unsigned n = bx * by * bz;
    for (unsigned z = 0; z < gz; z++)
        for (unsigned y = 0; y < gy; y++)
            for (unsigned x = 0; x < gx; x++) {
                std::barrier<> bar(n);
                emu_block_bar = &bar;
                emu_warp_bars.clear();
                for (unsigned w = 0; w * warp < n; w++)
                    emu_warp_bars.push_back(std::make_unique<std::barrier<>>(std::min<unsigned>(warp, n - w * warp)));
                emu_xchg.assign(n, 0);
                std::vector<std::thread> ts;
                for (unsigned t = 0; t < n; t++) {
                    ts.emplace_back([=, &bar] {
                        emu_tid = t;
                        threadIdx = {t % bx, (t / bx) % by, t / (bx * by)};
                        blockIdx = {x, y, z};
                        k(params);
                        bar.arrive_and_drop();
                        emu_warp_bars[t / warp]->arrive_and_drop();
                    });
                }
                for (auto& th : ts) th.join();
            }
}
