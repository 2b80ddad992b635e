/* mma_model.cu — checks the tensor-core model of numerics/numerics_mma.c (numerics.h, "Tensor
 * cores") against mma.sync on the GPU, bit for bit: the five forms the compiler emits
 * (m16n8k16 f16 and bf16, m16n8k8 tf32, m16n8k32 e4m3 and e5m2, f32 accumulators), on inputs of
 * seven kinds:
 *   normal     values ~ U(-1, 1) 2^(-8..8), c likewise
 *   wide       every exponent of the format, subnormals included, c over 2^(-20..20)
 *   cancel     each product of one half cancelled by one of the other half, some left over
 *   bits       random bit patterns (NaN, inf, subnormals, garbage in tf32's ignored bits)
 *   tiny       values at the bottom of the format, c subnormal in f32
 *   cuts       the cases that tell the model's choices apart: c = 1 plus products of 2^-24,
 *              2^-26, -2^-26 (each term cut toward zero to 2^(R - 25)?), c alone with low
 *              bits set, exact cancellation with c = -0 (+0?), 1.5 * 1.5 - 1.5 * 1.5 + 2^-25
 *              (R from ea + eb?), FP8: 448^2 - 448^2 + 2^-18 with the 2^-18 in the other half
 *              or in the same half (k mod 4), 64 + 2^-18 and 64 + 3 2^-18 (c added with a
 *              rounding to nearest even?), inf * 0, inf - inf, huge products
 *   integers   small integers (exact under any model)
 * Each instruction's D registers are compared with tl_num_mma_m16n8 (the library's fragment
 * layout) and each element with the per-element function through this file's own fragment
 * tables (the PTX ISA's "Matrix Fragments for mma.m16n8k*"). Where they differ, the mismatches
 * are printed with their inputs, and a table counts how many finite outputs each variant of the
 * model would have matched (F and p one bit wider or narrower, round to nearest, a floor instead
 * of a cut toward zero, R from normalised products, no lower limit on R, k in steps; for FP8 the
 * halves split at k = 16, c in the first step, c added with a cut, and all of k in one pass at
 * F = 25 (Blackwell by arXiv:2512.07004) or at F = 13, p = 13, that source's Hopper rule, which
 * the H200 run of 2026-12-02 contradicted), which says where to look.
 *
 * Build, from the repository root (sm_90a: H200):
 *   tests/gpu/numerics/build.sh build-gpu        (or by hand:)
 *   nvcc -O2 -std=c++17 -arch=sm_90a -Inumerics -Xcompiler -ffp-contract=off \
 *        -o mma_model tests/gpu/numerics/mma_model.cu numerics/numerics.c numerics/numerics_mma.c
 * Run: ./mma_model [--n N] [--seed S] [--dump FILE]
 *   --n N        instructions per form and kind (default 1024: 131072 outputs each)
 *   --dump FILE  every mismatching element, one line each: form kind A-row B-column c gpu model
 * Output: "form kind: N outputs, M mismatches (registers: R)" per form and kind, the variant
 * table, and "PASS" or "FAIL". Exit 0 when every output matches, 1 on a mismatch, 2 on a CUDA
 * error. */
#include "numerics.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CK(call)                                                                          \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,          \
                    cudaGetErrorString(e_));                                              \
            exit(2);                                                                      \
        }                                                                                 \
    } while (0)

/* ------------------------------------------------------------------------------------ */
/* device side: one warp per instruction; registers in, registers out */

#define MMA_KERNEL(NAME, SHAPE_TYPES)                                                                       \
    __global__ void NAME(const uint32_t *a, const uint32_t *b, const uint32_t *c, uint32_t *d, int n)      \
    {                                                                                                     \
        int w = (int)((blockIdx.x * blockDim.x + threadIdx.x) / 32), l = (int)(threadIdx.x % 32);         \
        if (w >= n)                                                                                       \
            return;                                                                                       \
        const uint32_t *A = a + ((size_t)w * 32 + l) * 4, *B = b + ((size_t)w * 32 + l) * 2;              \
        const uint32_t *C = c + ((size_t)w * 32 + l) * 4;                                                 \
        float c0 = __uint_as_float(C[0]), c1 = __uint_as_float(C[1]), c2 = __uint_as_float(C[2]),         \
              c3 = __uint_as_float(C[3]), d0, d1, d2, d3;                                                 \
        asm volatile("mma.sync.aligned." SHAPE_TYPES " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "    \
                     "{%10, %11, %12, %13};"                                                               \
                     : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)                                              \
                     : "r"(A[0]), "r"(A[1]), "r"(A[2]), "r"(A[3]), "r"(B[0]), "r"(B[1]), "f"(c0), "f"(c1), \
                       "f"(c2), "f"(c3));                                                                  \
        uint32_t *D = d + ((size_t)w * 32 + l) * 4;                                                       \
        D[0] = __float_as_uint(d0);                                                                       \
        D[1] = __float_as_uint(d1);                                                                       \
        D[2] = __float_as_uint(d2);                                                                       \
        D[3] = __float_as_uint(d3);                                                                       \
    }

MMA_KERNEL(k_f16, "m16n8k16.row.col.f32.f16.f16.f32")
MMA_KERNEL(k_bf16, "m16n8k16.row.col.f32.bf16.bf16.f32")
MMA_KERNEL(k_tf32, "m16n8k8.row.col.f32.tf32.tf32.f32")
MMA_KERNEL(k_e4m3, "m16n8k32.row.col.f32.e4m3.e4m3.f32")
MMA_KERNEL(k_e5m2, "m16n8k32.row.col.f32.e5m2.e5m2.f32")

/* ------------------------------------------------------------------------------------ */
/* host side: the forms by their fields */

struct Form {
    const char *name;
    TlNumMma form;
    int k, ebits, mbits;
    bool ieee;          /* top exponent inf / NaN; else only S.1..1.1..1 is NaN (e4m3) */
    int F, p;           /* the model's fraction bits of the alignment and of the result (FP8: of
                         * each of its two steps) */
    void (*kernel)(const uint32_t *, const uint32_t *, const uint32_t *, uint32_t *, int);
};

static const Form FORMS[] = {
    {"f16", TL_NUM_MMA_F16, 16, 5, 10, true, 25, 23, k_f16},
    {"bf16", TL_NUM_MMA_BF16, 16, 8, 7, true, 25, 23, k_bf16},
    {"tf32", TL_NUM_MMA_TF32, 8, 8, 10, true, 25, 23, k_tf32},
    {"e4m3", TL_NUM_MMA_E4M3, 32, 4, 3, false, 25, 23, k_e4m3},
    {"e5m2", TL_NUM_MMA_E5M2, 32, 5, 2, true, 25, 23, k_e5m2},
};

static const char *KINDS[] = {"normal", "wide", "cancel", "bits", "tiny", "cuts", "integers"};
enum { NKINDS = 7 };

static uint64_t g_seed = 0x5EED;
static uint64_t rnd()
{
    uint64_t z = (g_seed += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double urand() { return (double)(rnd() >> 11) * 0x1p-53; }

static uint32_t code_mask(const Form &f) { return f.form == TL_NUM_MMA_TF32 ? 0xFFFFFFFFu : f.k == 16 ? 0xFFFFu : 0xFFu; }
static uint32_t sign_bit(const Form &f) { return f.form == TL_NUM_MMA_TF32 ? 0x80000000u : 1u << (f.ebits + f.mbits); }

static uint32_t encode(const Form &f, float x)
{
    uint32_t u = tl_num_bits(x);
    if (std::isinf(x) && f.form == TL_NUM_MMA_E5M2)
        return x < 0 ? 0xFCu : 0x7Cu;
    switch (f.form) {
    case TL_NUM_MMA_F16: return tl_num_f32_to_f16(u, TL_NUM_RN);
    case TL_NUM_MMA_BF16: return tl_num_f32_to_bf16(u, TL_NUM_RN);
    case TL_NUM_MMA_TF32: return u;
    case TL_NUM_MMA_E4M3: return tl_num_f32_to_e4m3(u);
    default: return tl_num_f32_to_e5m2(u);
    }
}

/* one output's inputs: a row of A, a column of B, c */
struct Row {
    uint32_t a[32], b[32], c;
};

static void make_row(const Form &f, int kind, Row &r)
{
    int emin = 1 - ((1 << (f.ebits - 1)) - 1), emax = (1 << (f.ebits - 1)) - 1;
    memset(&r, 0, sizeof r);
    for (int i = 0; i < f.k; i++) {
        float x = 0, y = 0;
        switch (kind) {
        case 0:
            x = (float)ldexp(2 * urand() - 1, (int)(rnd() % 17) - 8);
            y = (float)ldexp(2 * urand() - 1, (int)(rnd() % 17) - 8);
            break;
        case 1:
        case 2: {
            unsigned span = (unsigned)(emax - emin + f.mbits);
            x = (float)ldexp(2 * urand() - 1, emin - f.mbits + (int)(rnd() % span));
            y = (float)ldexp(2 * urand() - 1, emin - f.mbits + (int)(rnd() % span));
            break;
        }
        case 3: r.a[i] = (uint32_t)rnd() & code_mask(f); r.b[i] = (uint32_t)rnd() & code_mask(f); continue;
        case 4:
            x = (float)ldexp(2 * urand() - 1, emin - f.mbits + (int)(rnd() % 4));
            y = (float)ldexp(2 * urand() - 1, (int)(rnd() % 5) - 2);
            break;
        case 6:
            x = (float)((int)(rnd() % 15) - 7);
            y = (float)((int)(rnd() % 15) - 7);
            break;
        default: break;
        }
        r.a[i] = encode(f, x);
        r.b[i] = encode(f, y);
        if (f.form == TL_NUM_MMA_TF32 && kind != 6)
            r.a[i] ^= (uint32_t)rnd() & 0x1FFFu, r.b[i] ^= (uint32_t)rnd() & 0x1FFFu;
    }
    if (kind == 2)
        for (int i = 0; i < f.k / 2; i++) {
            r.a[f.k / 2 + i] = r.a[i] ^ sign_bit(f);
            r.b[f.k / 2 + i] = rnd() % 4 ? r.b[i] : encode(f, (float)ldexp(urand(), -10));
        }
    uint64_t q = rnd() % 8;
    float cv = q == 0 ? 0.0f : q == 1 ? -0.0f : (float)ldexp(2 * urand() - 1, (int)(rnd() % 40) - 20);
    if (kind == 3)
        r.c = (uint32_t)rnd();
    else if (kind == 4)
        r.c = q < 2 ? tl_num_bits(cv) : (uint32_t)(rnd() % 0x1000000u) | (q & 1 ? 0x80000000u : 0);
    else if (kind == 6)
        r.c = tl_num_bits((float)((int)(rnd() % 511) - 255));
    else
        r.c = tl_num_bits(cv);
    if (kind == 5) {
        /* the distinguishing cases; the first terms set, the rest zero, so that each output is
         * one case (with a random scale 2^s applied to every term where it keeps them exact) */
        static const struct {
            float a[4], b[4];
            uint32_t c;
        } cs[] = {
            {{0x1p-12f}, {0x1p-12f}, 0x3F800000u},                                /* 1 + 2^-24 */
            {{0x1p-12f, 0x1p-12f}, {0x1p-12f, 0x1p-12f}, 0x3F800000u},            /* 1 + 2^-23 */
            {{0x1p-12f, 0x1p-12f, 0x1p-12f}, {0x1p-12f, 0x1p-12f, 0x1p-12f}, 0x3F800000u},
            {{0x1p-13f, 0x1p-13f, 0x1p-13f, 0x1p-13f}, {0x1p-13f, 0x1p-13f, 0x1p-13f, 0x1p-13f}, 0x3F800000u},
            {{-0x1p-13f}, {0x1p-13f}, 0x3F800000u},                               /* 1 - 2^-26 */
            {{-0x1p-12f}, {0x1p-12f}, 0x3F800000u},                               /* 1 - 2^-24 */
            {{-0x1p-13f}, {0x1p-12f}, 0x3F800000u},                               /* 1 - 2^-25 */
            {{0}, {0}, 0x3F800001u},                                              /* c alone */
            {{0}, {0}, 0xBF801FFFu},
            {{0}, {0}, 0x00000001u},                                              /* 2^-149 alone */
            {{0}, {0}, 0x80000000u},                                              /* -0 */
            {{-0.0f}, {1}, 0x80000000u},                                          /* -0 + -0 */
            {{1, -1}, {2, 2}, 0x80000000u},                                       /* 2 - 2 - 0 */
            {{1}, {-1}, 0x3F800000u},                                             /* 1 - 1 */
            {{1.5f, 1.5f, 0x1p-13f}, {1.5f, -1.5f, 0x1p-12f}, 0},                 /* R from ea + eb */
            {{1.5f, 0x1p-12f}, {1.5f, 0x1p-13f}, 0x40000000u},
            {{0x1p100f, 0x1p100f}, {0x1p100f, -0x1p100f}, 0x3F800000u},           /* 2^200 - 2^200 + 1 */
            {{0x1p100f}, {0x1p100f}, 0},                                          /* 2^200 */
            {{0x1p63f}, {0x1p64f}, 0x7F7FFFFFu},                                  /* overflow to inf */
            {{INFINITY}, {0}, 0},
            {{INFINITY, INFINITY}, {1, -1}, 0},
            {{INFINITY}, {1}, 0xFF800000u},
            {{1}, {1}, 0x7F800001u},                                              /* c a NaN with a payload */
            {{0x1p-126f}, {0x1p-23f}, 0x00000001u},                               /* subnormal results */
            {{0x1p-126f}, {0x1p-30f}, 0},
            {{0x1p-133f, 0x1p-133f}, {0x1p-20f, 0x1p-20f}, 0},
            {{448, -448, 0x1p-9f}, {448, 448, 0x1p-9f}, 0},                       /* FP8: halves */
            {{448, 0x1p-9f, -448}, {448, 0x1p-9f, 448}, 0},
            {{0x1p-9f}, {0x1p-9f}, 0x42800000u},                                  /* 64 + 2^-18 */
            {{0x3p-9f}, {0x1p-9f}, 0x42800000u},                                  /* 64 + 3 2^-18 */
        };
        int n = (int)(sizeof cs / sizeof cs[0]);
        int i = (int)(rnd() % (uint64_t)n);
        memset(r.a, 0, sizeof r.a);
        memset(r.b, 0, sizeof r.b);
        for (int j = 0; j < 4; j++) {
            r.a[j] = encode(f, cs[i].a[j]);
            r.b[j] = encode(f, cs[i].b[j]);
        }
        r.c = cs[i].c;
        if (rnd() % 2) /* the same case at another position of k */
            for (int j = 0; j < 4; j++) {
                int to = (int)(rnd() % (uint64_t)f.k);
                std::swap(r.a[j], r.a[to]);
                std::swap(r.b[j], r.b[to]);
            }
    }
}

/* the PTX ISA's fragment tables, per type */
static void frag_a(TlNumMma form, int lane, int q, int j, int *row, int *col)
{
    int g = lane >> 2, t = lane & 3;
    if (form == TL_NUM_MMA_F16 || form == TL_NUM_MMA_BF16) {
        int i = 2 * q + j;
        *row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
        *col = t * 2 + (i & 1) + (i >= 4 ? 8 : 0);
    } else if (form == TL_NUM_MMA_TF32) {
        *row = (q == 0 || q == 2) ? g : g + 8;
        *col = q < 2 ? t : t + 4;
    } else {
        int i = 4 * q + j;
        *row = (i < 4 || (i >= 8 && i < 12)) ? g : g + 8;
        *col = t * 4 + (i & 3) + (i >= 8 ? 16 : 0);
    }
}

static int frag_b_row(TlNumMma form, int lane, int q, int j)
{
    int t = lane & 3;
    if (form == TL_NUM_MMA_F16 || form == TL_NUM_MMA_BF16)
        return t * 2 + ((2 * q + j) & 1) + (2 * q + j >= 2 ? 8 : 0);
    if (form == TL_NUM_MMA_TF32)
        return q == 0 ? t : t + 4;
    return t * 4 + ((4 * q + j) & 3) + (4 * q + j >= 4 ? 16 : 0);
}

static uint32_t element_model(const Form &f, const Row &r)
{
    uint16_t a16[16], b16[16];
    uint8_t a8[32], b8[32];
    for (int i = 0; i < f.k; i++) {
        a16[i & 15] = (uint16_t)r.a[i], b16[i & 15] = (uint16_t)r.b[i];
        a8[i] = (uint8_t)r.a[i], b8[i] = (uint8_t)r.b[i];
    }
    switch (f.form) {
    case TL_NUM_MMA_F16: return tl_num_mma_f16(a16, b16, r.c);
    case TL_NUM_MMA_BF16: return tl_num_mma_bf16(a16, b16, r.c);
    case TL_NUM_MMA_TF32: return tl_num_mma_tf32(r.a, r.b, r.c);
    case TL_NUM_MMA_E4M3: return tl_num_mma_e4m3(a8, b8, r.c);
    default: return tl_num_mma_e5m2(a8, b8, r.c);
    }
}

/* ------------------------------------------------------------------------------------ */
/* variants of the model, in long double, for the table that says where a mismatch comes from */

struct Variant {
    const char *name;
    int dF, dp;          /* F and p relative to the form's (FP8: to those of each step) */
    int fp8;             /* how an FP8 instruction goes (the 16-bit forms ignore it): FP8_* */
    bool rne;            /* a step's result rounded to nearest even instead of cut toward zero */
    bool floor_terms;    /* terms rounded toward -inf (a two's complement cut) instead of toward 0 */
    bool norm_R;         /* R from the normalised products' exponents */
    bool no_clamp;       /* no lower limit -133 on R */
    int group;           /* products added per step (0: all k at once): c = cut(c + group) in turn;
                          * for FP8, in place of the halves */
};

/* FP8: the model (the products at k mod 4 = 0, 1 from 0, then k mod 4 = 2, 3, then c added with
 * a rounding to nearest even), its halves split at k = 16 instead, c as the first step's
 * accumulator (no addition after), c added with a cut toward zero, or all 32 products and c in
 * one step (arXiv:2512.07004's rule with F = 13, p = 13: dF = -12, dp = -10) */
enum { FP8_MODEL, FP8_HALVES_AT_16, FP8_C_FIRST, FP8_C_CUT, FP8_ONE_PASS };

static const Variant VARIANTS[] = {
    {"the model", 0, 0, FP8_MODEL, false, false, false, false, 0},
    {"F + 1", 1, 0, FP8_MODEL, false, false, false, false, 0},
    {"F - 1", -1, 0, FP8_MODEL, false, false, false, false, 0},
    {"F + 2", 2, 0, FP8_MODEL, false, false, false, false, 0},
    {"F + 3", 3, 0, FP8_MODEL, false, false, false, false, 0},
    {"F + 6", 6, 0, FP8_MODEL, false, false, false, false, 0},
    {"p + 1", 0, 1, FP8_MODEL, false, false, false, false, 0},
    {"p - 1", 0, -1, FP8_MODEL, false, false, false, false, 0},
    {"result RNE", 0, 0, FP8_MODEL, true, false, false, false, 0},
    {"terms floored", 0, 0, FP8_MODEL, false, true, false, false, 0},
    {"R normalised", 0, 0, FP8_MODEL, false, false, true, false, 0},
    {"R unclamped", 0, 0, FP8_MODEL, false, false, false, true, 0},
    {"k in steps of 16", 0, 0, FP8_MODEL, false, false, false, false, 16},
    {"k in steps of 8", 0, 0, FP8_MODEL, false, false, false, false, 8},
    {"k in steps of 4", 0, 0, FP8_MODEL, false, false, false, false, 4},
    {"FP8 halves k < 16, k >= 16", 0, 0, FP8_HALVES_AT_16, false, false, false, false, 0},
    {"FP8 c in the first step", 0, 0, FP8_C_FIRST, false, false, false, false, 0},
    {"FP8 c added with a cut", 0, 0, FP8_C_CUT, false, false, false, false, 0},
    {"FP8 one pass, F = 25, p = 23", 0, 0, FP8_ONE_PASS, false, false, false, false, 0},
    {"FP8 one pass, F = 13, p = 13", -12, -10, FP8_ONE_PASS, false, false, false, false, 0},
};
enum { NVARIANTS = sizeof VARIANTS / sizeof VARIANTS[0] };

struct LVal {
    int cls; /* 0 zero, 1 finite, 2 inf, 3 NaN */
    long double v;
    int e;
};

static LVal ldecode(int ebits, int mbits, bool ieee, uint32_t code)
{
    LVal r = {0, 0.0L, 0};
    int bias = (1 << (ebits - 1)) - 1, top = (1 << ebits) - 1;
    int E = (int)(code >> mbits) & top, M = (int)(code & ((1u << mbits) - 1));
    bool neg = (code >> (ebits + mbits)) & 1;
    if (ieee && E == top) {
        r.cls = M ? 3 : 2;
        r.v = neg ? -INFINITY : INFINITY;
        return r;
    }
    if (!ieee && E == top && M == (1 << mbits) - 1) {
        r.cls = 3;
        return r;
    }
    if (E == 0 && M == 0)
        return r;
    r.cls = 1;
    r.e = E ? E - bias : 1 - bias;
    r.v = ldexpl(E ? (long double)((1 << mbits) + M) : (long double)M, r.e - mbits);
    if (neg)
        r.v = -r.v;
    return r;
}

/* one step of a variant: the products idx[0 .. n-1] of the row added to the accumulator c (f32
 * bits) */
static bool variant_step(const Form &f, const Variant &v, const Row &r, const int *idx, int n, uint32_t cbits,
                         uint32_t *out)
{
    LVal c = ldecode(8, 23, true, cbits);
    if (c.cls >= 2)
        return false;
    int F = f.F + v.dF, p = f.p + v.dp;
    int R = c.cls == 1 ? c.e : (v.no_clamp ? -100000 : -133);
    LVal a[32], b[32];
    bool any = c.cls == 1;
    for (int j = 0; j < n; j++) {
        int i = idx[j];
        uint32_t ca = f.form == TL_NUM_MMA_TF32 ? r.a[i] >> 13 : r.a[i];
        uint32_t cb = f.form == TL_NUM_MMA_TF32 ? r.b[i] >> 13 : r.b[i];
        a[j] = ldecode(f.ebits, f.mbits, f.ieee, ca);
        b[j] = ldecode(f.ebits, f.mbits, f.ieee, cb);
        if (a[j].cls >= 2 || b[j].cls >= 2)
            return false;
        if (a[j].cls == 1 && b[j].cls == 1) {
            any = true;
            int e = a[j].e + b[j].e;
            if (v.norm_R) {
                int x;
                frexpl(a[j].v * b[j].v, &x);
                e = x - 1;
            }
            R = e > R ? e : R;
        }
    }
    if (!any) {
        *out = 0;
        return true;
    }
    if (!v.no_clamp && R < -133)
        R = -133;
    int lsb = R - F;
    long double S = 0;
    for (int j = 0; j <= n; j++) {
        long double t;
        if (j < n) {
            if (a[j].cls != 1 || b[j].cls != 1)
                continue;
            t = a[j].v * b[j].v;
        } else {
            if (c.cls != 1)
                continue;
            t = c.v;
        }
        long double s = ldexpl(t, -lsb);
        S += v.floor_terms ? floorl(s) : truncl(s);
    }
    if (S == 0) {
        *out = 0;
        return true;
    }
    long double mag = ldexpl(fabsl(S), lsb);
    int ex;
    frexpl(mag, &ex);
    uint32_t sign = S < 0 ? 0x80000000u : 0;
    int eb = ex - 1 < -126 ? -126 : ex - 1, q = eb - p;
    long double nq = ldexpl(mag, -q);
    long double m = v.rne ? nearbyintl(nq) : truncl(nq);
    long double res = ldexpl(m, q);
    if (res >= 0x1p128L) {
        *out = sign | 0x7F800000u;
        return true;
    }
    *out = sign | tl_num_bits((float)res);
    return true;
}

/* x + y in f32 arithmetic, rounded to nearest even or toward zero */
static uint32_t add_f32(uint32_t x, uint32_t y, bool cut)
{
    volatile float fx = tl_num_float(x), fy = tl_num_float(y);
    if (cut)
        fesetround(FE_TOWARDZERO);
    volatile float s = fx + fy;
    if (cut)
        fesetround(FE_TONEAREST);
    return tl_num_bits(s);
}

/* the finite result of a variant, or false when the output is inf / NaN under it; with a group,
 * the instruction's k products go in `group` at a time, each step's result the next c; FP8
 * otherwise in two halves as v.fp8 says */
static bool variant(const Form &f, const Variant &v, const Row &r, uint32_t *out)
{
    int idx[32];
    if (v.fp8 != FP8_MODEL && f.k != 32)
        return false;
    bool halves = f.k == 32 && v.group == 0 && v.fp8 != FP8_ONE_PASS;
    if (!halves) {
        int g = v.group > 0 && v.group < f.k ? v.group : f.k;
        uint32_t c = r.c;
        for (int lo = 0; lo < f.k; lo += g) {
            for (int j = 0; j < g; j++)
                idx[j] = lo + j;
            if (!variant_step(f, v, r, idx, g, c, &c))
                return false;
            if ((c & 0x7F800000u) == 0x7F800000u)
                return false;
        }
        *out = c;
        return true;
    }
    if ((r.c & 0x7F800000u) == 0x7F800000u)
        return false;
    uint32_t d = v.fp8 == FP8_C_FIRST ? r.c : 0;
    for (int h = 0; h < 2; h++) {
        for (int j = 0; j < 16; j++)
            idx[j] = v.fp8 == FP8_HALVES_AT_16 ? 16 * h + j : 4 * (j / 2) + j % 2 + 2 * h;
        if (!variant_step(f, v, r, idx, 16, d, &d) || (d & 0x7F800000u) == 0x7F800000u)
            return false;
    }
    if (v.fp8 != FP8_C_FIRST)
        d = add_f32(r.c, d, v.fp8 == FP8_C_CUT);
    if ((d & 0x7F800000u) == 0x7F800000u)
        return false;
    *out = d;
    return true;
}

/* ------------------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    int n = 1024;
    const char *dump = nullptr;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            g_seed = strtoull(argv[++i], nullptr, 0);
        else if (!strcmp(argv[i], "--dump") && i + 1 < argc)
            dump = argv[++i];
        else {
            fprintf(stderr, "usage: mma_model [--n N] [--seed S] [--dump FILE]\n");
            return 2;
        }
    }
    FILE *df = dump ? fopen(dump, "w") : nullptr;
    if (dump && !df) {
        perror(dump);
        return 2;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
    bool all_ok = true;
    size_t regs = (size_t)n * 32;
    std::vector<uint32_t> ha(regs * 4), hb(regs * 2), hc(regs * 4), hd(regs * 4);
    std::vector<Row> rows((size_t)n * 128);
    uint32_t *da, *db, *dc, *dd;
    CK(cudaMalloc(&da, ha.size() * 4));
    CK(cudaMalloc(&db, hb.size() * 4));
    CK(cudaMalloc(&dc, hc.size() * 4));
    CK(cudaMalloc(&dd, hd.size() * 4));
    for (const Form &f : FORMS) {
        uint64_t vmatch[NVARIANTS] = {0}, vtotal = 0;
        for (int kind = 0; kind < NKINDS; kind++) {
            int E = f.k / 8, w = 32 / E;
            /* the instructions: A 16 x K and B K x 8 from 16 rows, C from the rows' c */
            for (int in = 0; in < n; in++) {
                uint32_t A[16][32], B[32][8], C[16][8];
                for (int rr = 0; rr < 16; rr++) {
                    Row row;
                    make_row(f, kind, row);
                    for (int k = 0; k < f.k; k++)
                        A[rr][k] = row.a[k];
                    if (rr < 8)
                        for (int k = 0; k < f.k; k++)
                            B[k][rr] = row.b[k];
                    for (int j = 0; j < 8; j++)
                        C[rr][j] = j == rr % 8 || kind == 5 ? row.c : (kind == 3 ? (uint32_t)rnd() : row.c ^ (uint32_t)(rnd() & 0x7));
                }
                uint32_t *a = &ha[(size_t)in * 128], *b = &hb[(size_t)in * 64], *c = &hc[(size_t)in * 128];
                for (int l = 0; l < 32; l++) {
                    for (int q = 0; q < 4; q++) {
                        uint32_t reg = 0;
                        for (int j = 0; j < E; j++) {
                            int row, col;
                            frag_a(f.form, l, q, j, &row, &col);
                            reg |= (A[row][col] & code_mask(f)) << (w * j);
                        }
                        a[l * 4 + q] = reg;
                    }
                    for (int q = 0; q < 2; q++) {
                        uint32_t reg = 0;
                        for (int j = 0; j < E; j++)
                            reg |= (B[frag_b_row(f.form, l, q, j)][l >> 2] & code_mask(f)) << (w * j);
                        b[l * 2 + q] = reg;
                    }
                    for (int i = 0; i < 4; i++)
                        c[l * 4 + i] = C[(l >> 2) + (i >= 2 ? 8 : 0)][(l & 3) * 2 + (i & 1)];
                }
                for (int rr = 0; rr < 16; rr++)
                    for (int col = 0; col < 8; col++) {
                        Row &o = rows[(size_t)in * 128 + rr * 8 + col];
                        for (int k = 0; k < f.k; k++) {
                            o.a[k] = A[rr][k];
                            o.b[k] = B[k][col];
                        }
                        o.c = C[rr][col];
                    }
            }
            CK(cudaMemcpy(da, ha.data(), ha.size() * 4, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(db, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(dc, hc.data(), hc.size() * 4, cudaMemcpyHostToDevice));
            CK(cudaMemset(dd, 0xA5, hd.size() * 4));
            f.kernel<<<(unsigned)((n + 3) / 4), 128>>>(da, db, dc, dd, n);
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(hd.data(), dd, hd.size() * 4, cudaMemcpyDeviceToHost));
            uint64_t bad = 0, bad_regs = 0, shown = 0;
            for (int in = 0; in < n; in++) {
                uint32_t d[32][4];
                tl_num_mma_m16n8(f.form, (const uint32_t(*)[4]) & ha[(size_t)in * 128],
                                 (const uint32_t(*)[2]) & hb[(size_t)in * 64], (const uint32_t(*)[4]) & hc[(size_t)in * 128],
                                 d);
                for (int l = 0; l < 32; l++)
                    for (int i = 0; i < 4; i++) {
                        uint32_t gpu = hd[(size_t)in * 128 + l * 4 + i];
                        bad_regs += gpu != d[l][i];
                        int rr = (l >> 2) + (i >= 2 ? 8 : 0), col = (l & 3) * 2 + (i & 1);
                        const Row &o = rows[(size_t)in * 128 + rr * 8 + col];
                        uint32_t want = element_model(f, o);
                        uint32_t vr;
                        bool finite = variant(f, VARIANTS[0], o, &vr);
                        if (finite) {
                            vtotal++;
                            for (int vi = 0; vi < NVARIANTS; vi++)
                                vmatch[vi] += variant(f, VARIANTS[vi], o, &vr) && vr == gpu;
                        }
                        if (gpu == want)
                            continue;
                        bad++;
                        if (shown < 6 || df) {
                            std::string s;
                            char buf[64];
                            for (int k = 0; k < f.k; k++) {
                                snprintf(buf, sizeof buf, "%s%x", k ? "," : "", o.a[k]);
                                s += buf;
                            }
                            s += " | ";
                            for (int k = 0; k < f.k; k++) {
                                snprintf(buf, sizeof buf, "%s%x", k ? "," : "", o.b[k]);
                                s += buf;
                            }
                            if (shown < 6)
                                printf("    a: %s | c %08x: gpu %08x, model %08x\n", s.c_str(), o.c, gpu, want);
                            if (df)
                                fprintf(df, "%s %s %s %08x %08x %08x\n", f.name, KINDS[kind], s.c_str(), o.c, gpu, want);
                            shown++;
                        }
                    }
            }
            printf("%s %s: %llu outputs, %llu mismatches (registers: %llu)\n", f.name, KINDS[kind],
                   (unsigned long long)n * 128, (unsigned long long)bad, (unsigned long long)bad_regs);
            all_ok &= bad == 0 && bad_regs == 0;
        }
        printf("%s: finite outputs each variant of the model matches, of %llu:\n", f.name, (unsigned long long)vtotal);
        for (int vi = 0; vi < NVARIANTS; vi++)
            printf("    %-30s %llu\n", VARIANTS[vi].name, (unsigned long long)vmatch[vi]);
    }
    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFree(dc));
    CK(cudaFree(dd));
    if (df)
        fclose(df);
    printf(all_ok ? "PASS\n" : "FAIL\n");
    return all_ok ? 0 : 1;
}
