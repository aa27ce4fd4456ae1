// dialect.h — plexbench's one device dialect for nvrtc and hiprtc
// (../shared/spec/gpu-runtime.md §4). It includes nothing: nvrtc has no std headers and
// hiprtc force-includes its own runtime header. Every source is compiled
// as this header followed by the kernel file. WARP (32 or 64) comes from
// the host's warp-size attribute as -DWARP=N.
#ifndef WARP
#define WARP 32
#endif

#if defined(__HIPCC_RTC__) || defined(__HIP_DEVICE_COMPILE__) || defined(__HIP__)
#define PB_HIP 1
#endif

typedef signed char i8;
typedef unsigned char u8;
typedef short i16;
typedef unsigned short u16;
typedef int i32;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;

#define PB_NEG_INF __int_as_float(0xff800000)
#define PB_KERNEL extern "C" __global__

// Warp shuffles: CUDA's *_sync with a full 32-bit mask, HIP's maskless
// forms (HIP's own *_sync forms want a 64-bit mask; avoid them).
template <typename T>
__device__ __forceinline__ T pb_shfl_xor(T v, int m) {
#ifdef PB_HIP
    return __shfl_xor(v, m, WARP);
#else
    return __shfl_xor_sync(0xffffffffu, v, m, WARP);
#endif
}

// Binary16 ↔ binary32 in integer arithmetic, bit for bit the CPU's
// kernels.F16ToF32 / kernels.F32ToF16 (round to nearest even, overflow to
// ±inf, NaN keeps the sign and top payload bits): no half types, no headers.
__device__ __forceinline__ float pb_f16_to_f32(u16 h) {
    u32 sign = (u32)(h & 0x8000u) << 16;
    u32 exp = (h >> 10) & 0x1fu;
    u32 man = h & 0x3ffu;
    if (exp == 0x1fu) return __uint_as_float(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        // A subnormal (or zero) is man·2^-24, exact in float32.
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return __uint_as_float(sign | ((exp + 112u) << 23) | (man << 13));
}

__device__ __forceinline__ u16 pb_f32_to_f16(float f) {
    const u32 f16_overflow = (127u + 16u) << 23;
    const u32 min_normal = (127u - 14u) << 23;
    const u32 denorm_magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    u32 b = __float_as_uint(f);
    u16 sign = (u16)((b >> 16) & 0x8000u);
    b &= 0x7fffffffu;
    if (b > 0x7f800000u) return sign | 0x7e00u | (u16)((b >> 13) & 0x1ffu);
    if (b >= f16_overflow) return sign | 0x7c00u;
    if (b < min_normal) {
        float v = __uint_as_float(b) + __uint_as_float(denorm_magic);
        return sign | (u16)(__float_as_uint(v) - denorm_magic);
    }
    u32 odd = (b >> 13) & 1u;
    b -= (127u - 15u) << 23;
    b += 0xfffu + odd;
    return sign | (u16)(b >> 13);
}

// bf16 → f32 is the top half of the bits.
__device__ __forceinline__ float pb_bf16_to_f32(u16 h) { return __uint_as_float((u32)h << 16); }

// f32 → bf16 as kernels.F32ToBF16 (ggml): a NaN turns quiet, everything
// else rounds to nearest even (overflowing to inf).
__device__ __forceinline__ u16 pb_f32_to_bf16(float f) {
    u32 b = __float_as_uint(f);
    if ((b & 0x7fffffffu) > 0x7f800000u) return (u16)((b >> 16) | 0x40u);
    return (u16)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}
