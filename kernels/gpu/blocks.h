// blocks.h — the quantized block formats on the device
// (../shared/spec/gguf-and-quants.md §3), included by the files that read
// or write them. Per weight type, one trait struct decodes a block: its
// integer levels q(b, i) in element order, its sub-block scales sc(b, g)
// and mins mn(b, g) (groups of G elements), and its float scales; the
// embedding lookup (pb_dequant) and the products' integer dots (quant.cu)
// both read those. Then the activation formats the products read (Q8_0,
// Q8_1, Q8_K) and their quantizers, bit for bit the CPU's
// kernels.QuantizeActivation (x86 semantics).
//
// CPU twins: kernels.DequantizeRow (each type's dequant… in kernels/
// legacy.go, iq4nl.go, mxfp4.go, kquants_*.go) for pb_dequant; the types'
// vecDot for the dots. A block's format is read as the CPU reads it, with
// no assumption on alignment beyond the byte.

__device__ __forceinline__ u16 pb_ld_u16(const u8* p) { return (u16)p[0] | ((u16)p[1] << 8); }
__device__ __forceinline__ u32 pb_ld_u32(const u8* p) { return (u32)pb_ld_u16(p) | ((u32)pb_ld_u16(p + 2) << 16); }
__device__ __forceinline__ float pb_ld_f16(const u8* p) { return pb_f16_to_f32(pb_ld_u16(p)); }
__device__ __forceinline__ float pb_ld_f32(const u8* p) { return __uint_as_float(pb_ld_u32(p)); }
__device__ __forceinline__ void pb_st_u16(u8* p, u16 v) { p[0] = (u8)(v & 0xffu); p[1] = (u8)(v >> 8); }
__device__ __forceinline__ void pb_st_u32(u8* p, u32 v) { pb_st_u16(p, (u16)(v & 0xffffu)); pb_st_u16(p + 2, (u16)(v >> 16)); }

// pb_nib is 4-bit code l (0..31) of 16 packed bytes: elements 0..15 are the
// low nibbles, 16..31 the high ones.
__device__ __forceinline__ int pb_nib(const u8* qs, int l) { return l < 16 ? qs[l] & 15 : qs[l - 16] >> 4; }

// The non-linear code tables: IQ4_NL's (shared with IQ4_XS) and MXFP4's
// E2M1 values doubled (their scale is halved to match, pb_e8m0_half).
__constant__ i8 pb_iq4nl_kv[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
__constant__ i8 pb_fp4_kv[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// pb_e8m0_half is 2^(e−128) as a float (subnormal for e < 2), as
// kernels.e8m0Half.
__device__ __forceinline__ float pb_e8m0_half(u8 e) {
    return __uint_as_float(e < 2 ? 0x00200000u << e : (u32)(e - 1) << 23);
}

// ---- The legacy 32-element blocks: one block per group, G = QK = 32;
// MIN types add m, the others have none (d and m are their f16 scales).

struct pb_q4_0 {
    enum { QK = 32, G = 32, BYTES = 18, MIN = 0 };
    static __device__ __forceinline__ float d(const u8* b) { return pb_ld_f16(b); }
    static __device__ __forceinline__ int q(const u8* b, int i) { return pb_nib(b + 2, i) - 8; }
};

struct pb_q4_1 {
    enum { QK = 32, G = 32, BYTES = 20, MIN = 1 };
    static __device__ __forceinline__ float d(const u8* b) { return pb_ld_f16(b); }
    static __device__ __forceinline__ float m(const u8* b) { return pb_ld_f16(b + 2); }
    static __device__ __forceinline__ int q(const u8* b, int i) { return pb_nib(b + 4, i); }
};

// Q5: bit i of the little-endian qh word is element i's fifth bit.
struct pb_q5_0 {
    enum { QK = 32, G = 32, BYTES = 22, MIN = 0 };
    static __device__ __forceinline__ float d(const u8* b) { return pb_ld_f16(b); }
    static __device__ __forceinline__ int q(const u8* b, int i) {
        return (pb_nib(b + 6, i) | (int)((pb_ld_u32(b + 2) >> i) & 1u) << 4) - 16;
    }
};

struct pb_q5_1 {
    enum { QK = 32, G = 32, BYTES = 24, MIN = 1 };
    static __device__ __forceinline__ float d(const u8* b) { return pb_ld_f16(b); }
    static __device__ __forceinline__ float m(const u8* b) { return pb_ld_f16(b + 2); }
    static __device__ __forceinline__ int q(const u8* b, int i) {
        return pb_nib(b + 8, i) | (int)((pb_ld_u32(b + 4) >> i) & 1u) << 4;
    }
};

struct pb_q8_0 {
    enum { QK = 32, G = 32, BYTES = 34, MIN = 0 };
    static __device__ __forceinline__ float d(const u8* b) { return pb_ld_f16(b); }
    static __device__ __forceinline__ int q(const u8* b, int i) { return (i8)b[2 + i]; }
};

struct pb_iq4_nl {
    enum { QK = 32, G = 32, BYTES = 18, MIN = 0 };
    static __device__ __forceinline__ float d(const u8* b) { return pb_ld_f16(b); }
    static __device__ __forceinline__ int q(const u8* b, int i) { return pb_iq4nl_kv[pb_nib(b + 2, i)]; }
};

struct pb_mxfp4 {
    enum { QK = 32, G = 32, BYTES = 17, MIN = 0 };
    static __device__ __forceinline__ float d(const u8* b) { return pb_e8m0_half(b[0]); }
    static __device__ __forceinline__ int q(const u8* b, int i) { return pb_fp4_kv[pb_nib(b + 1, i)]; }
};

// ---- The K-quant super-blocks of 256: integer scales sc (and mins mn for
// MIN types) per group of G, under the f16 d (and dmin).

// pb_k_scale_min is Q4_K's and Q5_K's 6-bit scale (min when MINS) of
// sub-block j from the 12 packed bytes p, as kernels.kScaleMin.
template <bool MINS>
__device__ __forceinline__ int pb_k_scale_min(const u8* p, int j) {
    if (j < 4) return p[j + (MINS ? 4 : 0)] & 63;
    return MINS ? (p[j + 4] >> 4) | (p[j] >> 6) << 4 : (p[j + 4] & 15) | (p[j - 4] >> 6) << 4;
}

struct pb_q4_k {
    enum { QK = 256, G = 32, BYTES = 144, MIN = 1 };
    static __device__ __forceinline__ float d(const u8* b) { return pb_ld_f16(b); }
    static __device__ __forceinline__ float dmin(const u8* b) { return pb_ld_f16(b + 2); }
    static __device__ __forceinline__ int sc(const u8* b, int g) { return pb_k_scale_min<false>(b + 4, g); }
    static __device__ __forceinline__ int mn(const u8* b, int g) { return pb_k_scale_min<true>(b + 4, g); }
    static __device__ __forceinline__ int q(const u8* b, int i) {
        u8 v = b[16 + 32 * (i / 64) + i % 32];
        return i & 32 ? v >> 4 : v & 15;
    }
};

struct pb_q5_k {
    enum { QK = 256, G = 32, BYTES = 176, MIN = 1 };
    static __device__ __forceinline__ float d(const u8* b) { return pb_ld_f16(b); }
    static __device__ __forceinline__ float dmin(const u8* b) { return pb_ld_f16(b + 2); }
    static __device__ __forceinline__ int sc(const u8* b, int g) { return pb_k_scale_min<false>(b + 4, g); }
    static __device__ __forceinline__ int mn(const u8* b, int g) { return pb_k_scale_min<true>(b + 4, g); }
    static __device__ __forceinline__ int q(const u8* b, int i) {
        u8 v = b[48 + 32 * (i / 64) + i % 32];
        int lo = i & 32 ? v >> 4 : v & 15;
        return lo | ((b[16 + i % 32] >> (i / 32)) & 1) << 4;
    }
};

// Q6_K: element i = 128n + 32k + l is the low (k < 2) or high nibble of
// ql[64n + 32(k&1) + l] under bits 2k, 2k+1 of qh[32n + l], minus 32; its
// group of 16 is i/16.
struct pb_q6_k {
    enum { QK = 256, G = 16, BYTES = 210, MIN = 0 };
    static __device__ __forceinline__ float d(const u8* b) { return pb_ld_f16(b + 208); }
    static __device__ __forceinline__ int sc(const u8* b, int g) { return (i8)b[192 + g]; }
    static __device__ __forceinline__ int q(const u8* b, int i) {
        int n = i / 128, k = i % 128 / 32, l = i % 32;
        u8 v = b[64 * n + l + 32 * (k & 1)];
        int lo = k & 2 ? v >> 4 : v & 15;
        return (lo | ((b[128 + 32 * n + l] >> (2 * k)) & 3) << 4) - 32;
    }
};

struct pb_q2_k {
    enum { QK = 256, G = 16, BYTES = 84, MIN = 1 };
    static __device__ __forceinline__ float d(const u8* b) { return pb_ld_f16(b + 80); }
    static __device__ __forceinline__ float dmin(const u8* b) { return pb_ld_f16(b + 82); }
    static __device__ __forceinline__ int sc(const u8* b, int g) { return b[g] & 15; }
    static __device__ __forceinline__ int mn(const u8* b, int g) { return b[g] >> 4; }
    static __device__ __forceinline__ int q(const u8* b, int i) {
        return (b[16 + 32 * (i / 128) + i % 32] >> (2 * (i % 128 / 32))) & 3;
    }
};

// Q3_K: two low bits from qs, the high bit from hmask (set: +0, clear: −4).
struct pb_q3_k {
    enum { QK = 256, G = 16, BYTES = 110, MIN = 0 };
    static __device__ __forceinline__ float d(const u8* b) { return pb_ld_f16(b + 108); }
    static __device__ __forceinline__ int sc(const u8* b, int g) {
        const u8* p = b + 96;
        int low = g < 8 ? p[g] & 15 : p[g - 8] >> 4;
        int high = (p[8 + g % 4] >> (2 * (g / 4))) & 3;
        return (low | high << 4) - 32;
    }
    static __device__ __forceinline__ int q(const u8* b, int i) {
        int n = i / 128, j = i % 128 / 32, l = i % 32;
        return ((b[32 + 32 * n + l] >> (2 * j)) & 3) - 4 + 4 * ((b[l] >> (4 * n + j)) & 1);
    }
};

struct pb_iq4_xs {
    enum { QK = 256, G = 32, BYTES = 136, MIN = 0 };
    static __device__ __forceinline__ float d(const u8* b) { return pb_ld_f16(b); }
    static __device__ __forceinline__ int sc(const u8* b, int g) {
        int lo = (b[4 + g / 2] >> (4 * (g % 2))) & 15;
        return (lo | ((pb_ld_u16(b + 2) >> (2 * g)) & 3) << 4) - 32;
    }
    static __device__ __forceinline__ int q(const u8* b, int i) { return pb_iq4nl_kv[pb_nib(b + 8 + 16 * (i / 32), i % 32)]; }
};

// pb_dequant is element i of a row of T blocks as the CPU's dequant
// computes it, each product and the add rounded alone: legacy q·d (+ m),
// K-quants (d·sc)·q (− dmin·mn).
template <class T>
__device__ __forceinline__ float pb_dequant(const u8* row, int i) {
    const u8* b = row + (i64)(i / T::QK) * T::BYTES;
    const int e = i % T::QK;
    if constexpr (T::QK == 32) {
        float v = __fmul_rn((float)T::q(b, e), T::d(b));
        if constexpr (T::MIN) v = __fadd_rn(v, T::m(b));
        return v;
    } else {
        const int g = e / T::G;
        float v = __fmul_rn(__fmul_rn(T::d(b), (float)T::sc(b, g)), (float)T::q(b, e));
        if constexpr (T::MIN) v = __fsub_rn(v, __fmul_rn(T::dmin(b), (float)T::mn(b, g)));
        return v;
    }
}

// ---- Activation formats: Q8_0 (f16 d, 32 int8; 34 bytes), Q8_1 (f16 d,
// f16 s = d·Σq, 32 int8; 36 bytes), Q8_K (f32 d, 256 int8, 16 int16 sums
// of 16; 292 bytes).
#define PB_Q8_0_BYTES 34
#define PB_Q8_1_BYTES 36
#define PB_Q8_K_BYTES 292

// pb_round_int is kernels.nearestInt: v + 1.5·2^23 rounds half to even in
// the float adder (|v| < 2^22); the product before it is rounded alone.
__device__ __forceinline__ int pb_round_int(float v) {
    return (int)(__float_as_uint(__fadd_rn(v, 12582912.0f)) & 0x7fffffu) - 0x400000;
}

// pb_act_q8 is the x86 quantizeActQ8_0/Q8_1 block: id = 127/amax,
// q = round-half-even(x·id) saturated, into qs; it returns Σq and d =
// amax/127 in *d. amax is Go's max (kernels.absMax): a NaN propagates,
// where fmaxf would drop it.
__device__ __forceinline__ int pb_act_q8(const float* x, u8* qs, float* d) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) {
        float a = fabsf(x[j]);
        amax = (a != a || amax != amax) ? __int_as_float(0x7fc00000) : fmaxf(amax, a);
    }
    *d = amax / 127.0f;
    float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
        int n = pb_round_int(__fmul_rn(x[j], id));
        n = n < -128 ? -128 : (n > 127 ? 127 : n);
        qs[j] = (u8)(i8)n;
        sum += n;
    }
    return sum;
}

// One block of 32 activations to Q8_0 (quantizeActQ8_0).
__device__ __forceinline__ void pb_quantize_q8_0_block(const float* x, u8* q) {
    float d;
    pb_act_q8(x, q + 2, &d);
    pb_st_u16(q, pb_f32_to_f16(d));
}

// One block of 32 activations to Q8_1 (quantizeActQ8_1: s from the
// unrounded d).
__device__ __forceinline__ void pb_quantize_q8_1_block(const float* x, u8* q) {
    float d;
    int sum = pb_act_q8(x, q + 4, &d);
    pb_st_u16(q, pb_f32_to_f16(d));
    pb_st_u16(q + 2, pb_f32_to_f16(__fmul_rn(d, (float)sum)));
}

// One block of 256 activations to Q8_K (kernels.quantizeQ8K): the element
// x_m of largest magnitude (the first on ties) gives iscale = −127/x_m,
// q = round-half-even(iscale·x) capped at 127, d = 1/iscale as f32; an
// all-zero block is all zero bytes.
__device__ __forceinline__ void pb_quantize_q8_k_block(const float* x, u8* q) {
    float amax = 0.0f, xm = 0.0f;
    for (int j = 0; j < 256; ++j) {
        float a = fabsf(x[j]);
        if (a > amax) { amax = a; xm = x[j]; }
    }
    if (amax == 0.0f) {
        for (int j = 0; j < PB_Q8_K_BYTES; ++j) q[j] = 0;
        return;
    }
    const float iscale = __fdiv_rn(-127.0f, xm);
    for (int g = 0; g < 16; ++g) {
        int s = 0;
        for (int j = 16 * g; j < 16 * g + 16; ++j) {
            int n = pb_round_int(__fmul_rn(iscale, x[j]));
            n = n > 127 ? 127 : n;
            q[4 + j] = (u8)(i8)n;
            s += n;
        }
        pb_st_u16(q + 260 + 2 * g, (u16)s);
    }
    pb_st_u32(q, __float_as_uint(__fdiv_rn(1.0f, iscale)));
}
