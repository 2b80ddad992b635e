/* crosscheck.cu — compares every conversion in numerics/numerics.c with the GPU instruction it
 * mirrors (inline PTX), bit for bit: all 8- and 16-bit inputs of the narrow -> wide and
 * f16 -> fp8 conversions, and >= 10^8 f32 inputs (every rounding boundary of every target
 * format with its f32 neighbours, specials, NaN payloads, pseudo-random patterns) for the
 * f32 -> narrow ones.
 *
 * Build, from the repository root (sm_90a: H200):
 *   nvcc -O2 -std=c++17 -arch=sm_90a -Icompiler -Xcompiler -ffp-contract=off \
 *        -o crosscheck tests/gpu/numerics/crosscheck.cu numerics/numerics.c
 * The e2m1 and ue8m0 instructions exist only on sm_100a-class GPUs; their checks are
 * compiled only for such a target (add -gencode arch=compute_100a,code=sm_100a) and are
 * reported as SKIPPED on an H200.
 * Run: ./crosscheck [--f32 N] [--all-f32] [--threads T]
 *   --f32 N      number of f32 inputs (default 134217728 = 2^27)
 *   --all-f32    every one of the 2^32 f32 patterns instead (about a minute on an H200 host)
 * Output: one line per conversion, "name: N checked, M mismatches", then up to four
 * mismatches in hex. Exit status 0 when all match, 1 on any mismatch, 2 on a CUDA error. */
#include "numerics.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#if defined(__CUDA_ARCH_FEAT_SM100_ALL) || defined(__CUDA_ARCH_FEAT_SM101_ALL) ||          \
    defined(__CUDA_ARCH_FEAT_SM103_ALL) || defined(__CUDA_ARCH_FEAT_SM110_ALL) ||          \
    defined(__CUDA_ARCH_FEAT_SM120_ALL) || defined(__CUDA_ARCH_FEAT_SM121_ALL) ||          \
    (defined(__CUDA_ARCH_FAMILY_SPECIFIC__) && __CUDA_ARCH_FAMILY_SPECIFIC__ >= 1000)
#define HAVE_FP4_UE8M0 1
#else
#define HAVE_FP4_UE8M0 0
#endif

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
/* device side: one thread per input, each instruction through inline PTX */

__device__ __forceinline__ float as_f(uint32_t u) { return __uint_as_float(u); }

__global__ void k_caps(int *out) { *out = HAVE_FP4_UE8M0; }

struct F32Out {
    uint16_t *bf16[4], *f16[4];   /* rn rz rm rp */
    uint32_t *bf16x2, *f16x2;     /* rn, (a, b) */
    uint16_t *e4m3x2, *e5m2x2;    /* (a, b) */
    uint16_t *e5m6;               /* the TileKernels rule on top of cvt.rz.f16.f32 */
    uint8_t *e2m1x2;              /* (a, b), sm_100a only */
    uint16_t *ue8[4];             /* rz, rz.satfinite, rp, rp.satfinite; (a, b), sm_100a only */
};

/* operand b of every packed instruction is the previous input (the last wraps to the first) */
__global__ void k_f32(const uint32_t *x, size_t n, F32Out o)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    uint32_t ab = x[i], bb = x[i == 0 ? n - 1 : i - 1];
    float a = as_f(ab), b = as_f(bb);
    uint16_t h;
    uint32_t r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(a)); o.bf16[0][i] = h;
    asm("cvt.rz.bf16.f32 %0, %1;" : "=h"(h) : "f"(a)); o.bf16[1][i] = h;
    asm("cvt.rm.bf16.f32 %0, %1;" : "=h"(h) : "f"(a)); o.bf16[2][i] = h;
    asm("cvt.rp.bf16.f32 %0, %1;" : "=h"(h) : "f"(a)); o.bf16[3][i] = h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(a)); o.f16[0][i] = h;
    asm("cvt.rz.f16.f32 %0, %1;" : "=h"(h) : "f"(a)); o.f16[1][i] = h;
    uint16_t hrz = h;
    asm("cvt.rm.f16.f32 %0, %1;" : "=h"(h) : "f"(a)); o.f16[2][i] = h;
    asm("cvt.rp.f16.f32 %0, %1;" : "=h"(h) : "f"(a)); o.f16[3][i] = h;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(a), "f"(b)); o.bf16x2[i] = r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(a), "f"(b)); o.f16x2[i] = r;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(h) : "f"(a), "f"(b)); o.e4m3x2[i] = h;
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(h) : "f"(a), "f"(b)); o.e5m2x2[i] = h;
    uint32_t c = hrz >> 4;
    if ((c & 1) + (ab & 0x1FFFFu) > 0x10000u)
        c += 1;
    o.e5m6[i] = (uint16_t)(c & 0xFFF);
#if HAVE_FP4_UE8M0
    asm("{ .reg .b8 t; cvt.rn.satfinite.e2m1x2.f32 t, %1, %2; mov.b16 %0, {t, 0}; }"
        : "=h"(h) : "f"(a), "f"(b));
    o.e2m1x2[i] = (uint8_t)h;
    asm("cvt.rz.ue8m0x2.f32 %0, %1, %2;" : "=h"(h) : "f"(a), "f"(b)); o.ue8[0][i] = h;
    asm("cvt.rz.satfinite.ue8m0x2.f32 %0, %1, %2;" : "=h"(h) : "f"(a), "f"(b)); o.ue8[1][i] = h;
    asm("cvt.rp.ue8m0x2.f32 %0, %1, %2;" : "=h"(h) : "f"(a), "f"(b)); o.ue8[2][i] = h;
    asm("cvt.rp.satfinite.ue8m0x2.f32 %0, %1, %2;" : "=h"(h) : "f"(a), "f"(b)); o.ue8[3][i] = h;
#endif
}

struct W16Out {
    uint32_t *f16_f32, *bf16_f32;        /* cvt.f32.f16 / cvt.f32.bf16 of the code */
    uint16_t *e4m3x2_f16x2, *e5m2x2_f16x2; /* f16x2 {code, code ^ 0x8001} -> fp8x2 */
    uint32_t *f16x2_e4m3x2, *f16x2_e5m2x2; /* fp8x2 code -> f16x2 */
    uint32_t *e4m3_f32, *e5m2_f32;       /* low byte -> f16 -> f32, as a kernel would */
    uint32_t *bf16x2_ue8x2;              /* sm_100a only */
    uint32_t *f16x2_e2m1x2;              /* low byte of the code, sm_100a only */
};

__global__ void k_w16(W16Out o)
{
    uint32_t v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= 65536)
        return;
    uint16_t h16 = (uint16_t)v, q;
    float f;
    uint32_t r;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h16)); o.f16_f32[v] = __float_as_uint(f);
    asm("cvt.f32.bf16 %0, %1;" : "=f"(f) : "h"(h16)); o.bf16_f32[v] = __float_as_uint(f);
    uint32_t pair = v << 16 | (v ^ 0x8001u);
    asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;" : "=h"(q) : "r"(pair)); o.e4m3x2_f16x2[v] = q;
    asm("cvt.rn.satfinite.e5m2x2.f16x2 %0, %1;" : "=h"(q) : "r"(pair)); o.e5m2x2_f16x2[v] = q;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(r) : "h"(h16)); o.f16x2_e4m3x2[v] = r;
    uint16_t lo = (uint16_t)r;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(lo)); o.e4m3_f32[v] = __float_as_uint(f);
    asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(r) : "h"(h16)); o.f16x2_e5m2x2[v] = r;
    lo = (uint16_t)r;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(lo)); o.e5m2_f32[v] = __float_as_uint(f);
#if HAVE_FP4_UE8M0
    asm("cvt.rn.bf16x2.ue8m0x2 %0, %1;" : "=r"(r) : "h"(h16)); o.bf16x2_ue8x2[v] = r;
    asm("{ .reg .b8 t, z; mov.b16 {t, z}, %1; cvt.rn.f16x2.e2m1x2 %0, t; }" : "=r"(r) : "h"(h16));
    o.f16x2_e2m1x2[v] = r;
#endif
}

/* ------------------------------------------------------------------------------------ */
/* host side */

struct Tally {
    std::string name;
    uint64_t checked = 0, bad = 0;
    std::vector<std::string> first;
    void hit(bool ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)))
    {
        checked++;
        if (ok)
            return;
        if (first.size() < 4) {
            char buf[200];
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(buf, sizeof buf, fmt, ap);
            va_end(ap);
            first.push_back(buf);
        }
        bad++;
    }
    void merge(const Tally &o)
    {
        checked += o.checked;
        bad += o.bad;
        for (const auto &s : o.first)
            if (first.size() < 4)
                first.push_back(s);
    }
    int report() const
    {
        printf("%s: %llu checked, %llu mismatches\n", name.c_str(), (unsigned long long)checked,
               (unsigned long long)bad);
        for (const auto &s : first)
            printf("    %s\n", s.c_str());
        return bad != 0 || checked == 0;
    }
};

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint32_t fbits(double d) { return tl_num_bits((float)d); }

/* x and its f32 neighbours within d ulps, both signs */
static void push_around(std::vector<uint32_t> &v, uint32_t mag, int d)
{
    for (int k = -d; k <= d; k++) {
        int64_t m = (int64_t)mag + k;
        if (m < 0 || m > 0x7F800000)
            continue;
        v.push_back((uint32_t)m);
        v.push_back((uint32_t)m | 0x80000000u);
    }
}

/* rounding boundaries of a format given its non-negative values in increasing order and the
 * value one step past the largest */
static void push_format(std::vector<uint32_t> &v, std::vector<double> vals, double beyond)
{
    vals.push_back(beyond);
    for (size_t i = 0; i + 1 < vals.size(); i++) {
        push_around(v, fbits(vals[i]), 2);
        push_around(v, fbits((vals[i] + vals[i + 1]) / 2), 2);   /* exact in f32 */
    }
    if (beyond < 0x1p128)
        push_around(v, fbits(beyond), 2);
}

static std::vector<uint32_t> structured_inputs()
{
    std::vector<uint32_t> v;
    std::vector<double> vals;
    for (uint32_t c = 0; c <= 0x7BFF; c++)
        vals.push_back(tl_num_float(tl_num_f16_to_f32((uint16_t)c)));
    push_format(v, vals, 65536.0);
    vals.clear();
    for (uint32_t c = 0; c <= 0x7F7F; c++)
        vals.push_back(tl_num_float(tl_num_bf16_to_f32((uint16_t)c)));
    push_format(v, vals, 0x1p128);
    vals.clear();
    for (uint32_t c = 0; c <= 0x7E; c++)
        vals.push_back(tl_num_float(tl_num_e4m3_to_f32((uint8_t)c)));
    push_format(v, vals, 480.0);
    vals.clear();
    for (uint32_t c = 0; c <= 0x7B; c++)
        vals.push_back(tl_num_float(tl_num_e5m2_to_f32((uint8_t)c)));
    push_format(v, vals, 65536.0);
    vals.clear();
    for (uint32_t c = 0; c <= 7; c++)
        vals.push_back(tl_num_float(tl_num_e2m1_to_f32((uint8_t)c)));
    push_format(v, vals, 8.0);
    vals.clear();
    for (uint32_t c = 0; c <= 0x7BF; c++)
        vals.push_back(tl_num_float(tl_num_e5m6_to_f32((uint16_t)c)));
    push_format(v, vals, 65536.0);
    for (int e = -149; e <= 127; e++) {          /* ue8m0 boundaries */
        push_around(v, fbits(ldexp(1.0, e)), 3);
        push_around(v, fbits(ldexp(1.5, e)), 1);
    }
    push_around(v, 0x7F7FFFFFu, 3);
    push_around(v, 0x00800000u, 3);
    push_around(v, 0x00400000u, 3);
    push_around(v, 0, 3);
    push_around(v, 0x007FFFFFu, 2);
    const uint32_t nans[] = {0x7F800001u, 0x7F800002u, 0x7FBFFFFFu, 0x7FC00000u, 0x7FC00001u,
                             0x7FFFFFFFu, 0x7FFFE000u, 0x7FC10000u};
    for (uint32_t n : nans) {
        v.push_back(n);
        v.push_back(n | 0x80000000u);
    }
    uint64_t s = 0x4E414E;
    for (int i = 0; i < 4096; i++)
        v.push_back(0x7F800000u | ((uint32_t)rng_next(&s) & 0x807FFFFFu) | 1u);
    return v;
}

static uint32_t random_input(uint64_t *s, const std::vector<uint32_t> &boundaries)
{
    uint64_t r = rng_next(s);
    uint32_t sign = (uint32_t)(r >> 63) << 31;
    unsigned pick = (unsigned)(r >> 32) % 100;
    if (pick < 30)
        return (uint32_t)r;                                   /* any pattern */
    uint64_t r2 = rng_next(s);
    uint32_t mant = (uint32_t)r2 & 0x7FFFFFu;
    if (pick < 70)
        return sign | (100 + (uint32_t)(r2 >> 32) % 61) << 23 | mant;   /* 2^-27 .. 2^33 */
    if (pick < 80)
        return sign | ((uint32_t)(r2 >> 32) % 12) << 23 | mant;         /* tiny, subnormal */
    uint32_t b = boundaries[(r2 >> 24) % boundaries.size()] & 0x7FFFFFFFu;
    int64_t m = (int64_t)b + (int64_t)((r2 >> 8) % 9) - 4;   /* near a rounding boundary */
    if (m < 0 || m > 0x7F800000)
        m = b;
    return sign | (uint32_t)m;
}

static int g_threads = 8;

template <class F> static void parallel_for(size_t n, F body)
{
    std::vector<std::thread> th;
    for (int t = 0; t < g_threads; t++)
        th.emplace_back([=] {
            size_t lo = n * t / g_threads, hi = n * (t + 1) / g_threads;
            body(t, lo, hi);
        });
    for (auto &x : th)
        x.join();
}

enum { C_BF16 = 0, C_F16 = 4, C_BF16X2 = 8, C_F16X2, C_E4M3X2, C_E5M2X2, C_E5M6, C_E2M1X2,
       C_UE8 = C_E2M1X2 + 1, C_NF32 = C_UE8 + 4 };
static const char *const F32_NAMES[C_NF32] = {
    "f32->bf16 cvt.rn.bf16.f32", "f32->bf16 cvt.rz.bf16.f32", "f32->bf16 cvt.rm.bf16.f32",
    "f32->bf16 cvt.rp.bf16.f32", "f32->f16 cvt.rn.f16.f32", "f32->f16 cvt.rz.f16.f32",
    "f32->f16 cvt.rm.f16.f32", "f32->f16 cvt.rp.f16.f32", "f32x2->bf16x2 cvt.rn.bf16x2.f32",
    "f32x2->f16x2 cvt.rn.f16x2.f32", "f32x2->e4m3x2 cvt.rn.satfinite.e4m3x2.f32",
    "f32x2->e5m2x2 cvt.rn.satfinite.e5m2x2.f32", "f32->e5m6 (TileKernels rule on cvt.rz.f16.f32)",
    "f32x2->e2m1x2 cvt.rn.satfinite.e2m1x2.f32", "f32x2->ue8m0x2 cvt.rz.ue8m0x2.f32",
    "f32x2->ue8m0x2 cvt.rz.satfinite.ue8m0x2.f32", "f32x2->ue8m0x2 cvt.rp.ue8m0x2.f32",
    "f32x2->ue8m0x2 cvt.rp.satfinite.ue8m0x2.f32",
};
static const TlNumRound MODES[4] = {TL_NUM_RN, TL_NUM_RZ, TL_NUM_RM, TL_NUM_RP};

struct HostF32 {
    std::vector<uint16_t> bf16[4], f16[4], e4m3x2, e5m2x2, e5m6, ue8[4];
    std::vector<uint32_t> bf16x2, f16x2;
    std::vector<uint8_t> e2m1x2;
};

static void compare_f32(const std::vector<uint32_t> &in, size_t n, const HostF32 &h, bool fp4,
                        Tally *tallies)
{
    std::vector<std::vector<Tally>> per(g_threads, std::vector<Tally>(C_NF32));
    parallel_for(n, [&](int t, size_t lo, size_t hi) {
        Tally *tl = per[t].data();
        for (size_t i = lo; i < hi; i++) {
            uint32_t a = in[i], b = in[i == 0 ? n - 1 : i - 1];
            for (int m = 0; m < 4; m++) {
                uint16_t s = tl_num_f32_to_bf16(a, MODES[m]);
                tl[C_BF16 + m].hit(s == h.bf16[m][i], "in=%08x hw=%04x sw=%04x", a, h.bf16[m][i], s);
                s = tl_num_f32_to_f16(a, MODES[m]);
                tl[C_F16 + m].hit(s == h.f16[m][i], "in=%08x hw=%04x sw=%04x", a, h.f16[m][i], s);
            }
            uint32_t w = tl_num_bf16x2_from_f32(a, b, TL_NUM_RN);
            tl[C_BF16X2].hit(w == h.bf16x2[i], "in=%08x,%08x hw=%08x sw=%08x", a, b, h.bf16x2[i], w);
            w = tl_num_f16x2_from_f32(a, b, TL_NUM_RN);
            tl[C_F16X2].hit(w == h.f16x2[i], "in=%08x,%08x hw=%08x sw=%08x", a, b, h.f16x2[i], w);
            uint16_t q = tl_num_e4m3x2_from_f32(a, b);
            tl[C_E4M3X2].hit(q == h.e4m3x2[i], "in=%08x,%08x hw=%04x sw=%04x", a, b, h.e4m3x2[i], q);
            q = tl_num_e5m2x2_from_f32(a, b);
            tl[C_E5M2X2].hit(q == h.e5m2x2[i], "in=%08x,%08x hw=%04x sw=%04x", a, b, h.e5m2x2[i], q);
            q = tl_num_f32_to_e5m6(a);
            tl[C_E5M6].hit(q == h.e5m6[i], "in=%08x hw=%03x sw=%03x", a, h.e5m6[i], q);
            if (!fp4)
                continue;
            uint8_t p = tl_num_e2m1x2_from_f32(a, b);
            tl[C_E2M1X2].hit(p == h.e2m1x2[i], "in=%08x,%08x hw=%02x sw=%02x", a, b, h.e2m1x2[i], p);
            for (int k = 0; k < 4; k++) {
                q = tl_num_ue8m0x2_from_f32(a, b, k < 2 ? TL_NUM_RZ : TL_NUM_RP, k & 1);
                tl[C_UE8 + k].hit(q == h.ue8[k][i], "in=%08x,%08x hw=%04x sw=%04x", a, b, h.ue8[k][i], q);
            }
        }
    });
    for (int t = 0; t < g_threads; t++)
        for (int k = 0; k < C_NF32; k++)
            tallies[k].merge(per[t][k]);
}

template <class T> static T *dev_alloc(size_t n)
{
    T *p;
    CK(cudaMalloc(&p, n * sizeof(T)));
    return p;
}

template <class T> static void fetch(std::vector<T> &dst, const T *src, size_t n)
{
    dst.resize(n);
    CK(cudaMemcpy(dst.data(), src, n * sizeof(T), cudaMemcpyDeviceToHost));
}

static int run_f32(uint64_t total, bool all, bool fp4)
{
    const size_t BATCH = (size_t)1 << 24;
    std::vector<uint32_t> boundaries = structured_inputs();
    Tally tallies[C_NF32];
    for (int k = 0; k < C_NF32; k++)
        tallies[k].name = F32_NAMES[k];
    F32Out o;
    for (int m = 0; m < 4; m++) {
        o.bf16[m] = dev_alloc<uint16_t>(BATCH);
        o.f16[m] = dev_alloc<uint16_t>(BATCH);
        o.ue8[m] = dev_alloc<uint16_t>(BATCH);
    }
    o.bf16x2 = dev_alloc<uint32_t>(BATCH);
    o.f16x2 = dev_alloc<uint32_t>(BATCH);
    o.e4m3x2 = dev_alloc<uint16_t>(BATCH);
    o.e5m2x2 = dev_alloc<uint16_t>(BATCH);
    o.e5m6 = dev_alloc<uint16_t>(BATCH);
    o.e2m1x2 = dev_alloc<uint8_t>(BATCH);
    uint32_t *dx = dev_alloc<uint32_t>(BATCH);
    std::vector<uint32_t> in(BATCH);
    HostF32 h;
    if (all)
        total = (uint64_t)1 << 32;
    uint64_t done = 0, batch_no = 0;
    while (done < total) {
        size_t n = (size_t)std::min<uint64_t>(BATCH, total - done);
        if (all) {
            for (size_t i = 0; i < n; i++)
                in[i] = (uint32_t)(done + i);
        } else {
            parallel_for(n, [&](int, size_t lo, size_t hi) {
                uint64_t s = 0x7E5C0DE5EEDull ^ (batch_no << 32) ^ lo;
                for (size_t i = lo; i < hi; i++)
                    in[i] = done + i < boundaries.size() ? boundaries[done + i]
                                                          : random_input(&s, boundaries);
            });
        }
        CK(cudaMemcpy(dx, in.data(), n * 4, cudaMemcpyHostToDevice));
        k_f32<<<(unsigned)((n + 255) / 256), 256>>>(dx, n, o);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        for (int m = 0; m < 4; m++) {
            fetch(h.bf16[m], o.bf16[m], n);
            fetch(h.f16[m], o.f16[m], n);
            if (fp4)
                fetch(h.ue8[m], o.ue8[m], n);
        }
        fetch(h.bf16x2, o.bf16x2, n);
        fetch(h.f16x2, o.f16x2, n);
        fetch(h.e4m3x2, o.e4m3x2, n);
        fetch(h.e5m2x2, o.e5m2x2, n);
        fetch(h.e5m6, o.e5m6, n);
        if (fp4)
            fetch(h.e2m1x2, o.e2m1x2, n);
        compare_f32(in, n, h, fp4, tallies);
        done += n;
        batch_no++;
    }
    printf("f32 inputs: %llu (%s; %zu structured boundary/special values first)\n",
           (unsigned long long)total, all ? "every f32 pattern" : "sampled", boundaries.size());
    int fail = 0;
    for (int k = 0; k < C_NF32; k++) {
        if (!fp4 && k >= C_E2M1X2) {
            printf("%s: SKIPPED (sm_100a-only instruction; not compiled for this GPU)\n", F32_NAMES[k]);
            continue;
        }
        fail |= tallies[k].report();
    }
    return fail;
}

static int run_w16(bool fp4)
{
    W16Out o;
    o.f16_f32 = dev_alloc<uint32_t>(65536);
    o.bf16_f32 = dev_alloc<uint32_t>(65536);
    o.e4m3x2_f16x2 = dev_alloc<uint16_t>(65536);
    o.e5m2x2_f16x2 = dev_alloc<uint16_t>(65536);
    o.f16x2_e4m3x2 = dev_alloc<uint32_t>(65536);
    o.f16x2_e5m2x2 = dev_alloc<uint32_t>(65536);
    o.e4m3_f32 = dev_alloc<uint32_t>(65536);
    o.e5m2_f32 = dev_alloc<uint32_t>(65536);
    o.bf16x2_ue8x2 = dev_alloc<uint32_t>(65536);
    o.f16x2_e2m1x2 = dev_alloc<uint32_t>(65536);
    k_w16<<<256, 256>>>(o);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<uint32_t> f16_f32, bf16_f32, f16x2_e4, f16x2_e5, e4_f32, e5_f32, ue8, e2m1;
    std::vector<uint16_t> e4x2, e5x2;
    fetch(f16_f32, o.f16_f32, 65536);
    fetch(bf16_f32, o.bf16_f32, 65536);
    fetch(e4x2, o.e4m3x2_f16x2, 65536);
    fetch(e5x2, o.e5m2x2_f16x2, 65536);
    fetch(f16x2_e4, o.f16x2_e4m3x2, 65536);
    fetch(f16x2_e5, o.f16x2_e5m2x2, 65536);
    fetch(e4_f32, o.e4m3_f32, 65536);
    fetch(e5_f32, o.e5m2_f32, 65536);
    if (fp4) {
        fetch(ue8, o.bf16x2_ue8x2, 65536);
        fetch(e2m1, o.f16x2_e2m1x2, 65536);
    }
    Tally t[10];
    t[0].name = "f16->f32 cvt.f32.f16 (all 65536)";
    t[1].name = "bf16->f32 cvt.f32.bf16 (all 65536)";
    t[2].name = "f16x2->e4m3x2 cvt.rn.satfinite.e4m3x2.f16x2 (all 65536 in the high lane)";
    t[3].name = "f16x2->e5m2x2 cvt.rn.satfinite.e5m2x2.f16x2 (all 65536 in the high lane)";
    t[4].name = "e4m3x2->f16x2 cvt.rn.f16x2.e4m3x2 (all 65536)";
    t[5].name = "e5m2x2->f16x2 cvt.rn.f16x2.e5m2x2 (all 65536)";
    t[6].name = "e4m3->f32 (cvt.rn.f16x2.e4m3x2 then cvt.f32.f16, all 256)";
    t[7].name = "e5m2->f32 (cvt.rn.f16x2.e5m2x2 then cvt.f32.f16, all 256)";
    t[8].name = "ue8m0x2->bf16x2 cvt.rn.bf16x2.ue8m0x2 (all 65536)";
    t[9].name = "e2m1x2->f16x2 cvt.rn.f16x2.e2m1x2 (all 256)";
    for (uint32_t v = 0; v < 65536; v++) {
        uint16_t h = (uint16_t)v;
        uint32_t s = tl_num_f16_to_f32(h);
        t[0].hit(s == f16_f32[v], "in=%04x hw=%08x sw=%08x", v, f16_f32[v], s);
        s = tl_num_bf16_to_f32(h);
        t[1].hit(s == bf16_f32[v], "in=%04x hw=%08x sw=%08x", v, bf16_f32[v], s);
        uint32_t pair = v << 16 | (v ^ 0x8001u);
        uint16_t q = tl_num_e4m3x2_from_f16x2(pair);
        t[2].hit(q == e4x2[v], "in=%08x hw=%04x sw=%04x", pair, e4x2[v], q);
        q = tl_num_e5m2x2_from_f16x2(pair);
        t[3].hit(q == e5x2[v], "in=%08x hw=%04x sw=%04x", pair, e5x2[v], q);
        s = tl_num_f16x2_from_e4m3x2(h);
        t[4].hit(s == f16x2_e4[v], "in=%04x hw=%08x sw=%08x", v, f16x2_e4[v], s);
        s = tl_num_f16x2_from_e5m2x2(h);
        t[5].hit(s == f16x2_e5[v], "in=%04x hw=%08x sw=%08x", v, f16x2_e5[v], s);
        if (v < 256) {
            s = tl_num_e4m3_to_f32((uint8_t)v);
            t[6].hit(s == e4_f32[v], "in=%02x hw=%08x sw=%08x", v, e4_f32[v], s);
            s = tl_num_e5m2_to_f32((uint8_t)v);
            t[7].hit(s == e5_f32[v], "in=%02x hw=%08x sw=%08x", v, e5_f32[v], s);
        }
        if (fp4) {
            s = tl_num_bf16x2_from_ue8m0x2(h);
            t[8].hit(s == ue8[v], "in=%04x hw=%08x sw=%08x", v, ue8[v], s);
            if (v < 256) {
                s = tl_num_f16x2_from_e2m1x2((uint8_t)v);
                t[9].hit(s == e2m1[v], "in=%02x hw=%08x sw=%08x", v, e2m1[v], s);
            }
        }
    }
    int fail = 0;
    for (int k = 0; k < 10; k++) {
        if (!fp4 && k >= 8) {
            printf("%s: SKIPPED (sm_100a-only instruction; not compiled for this GPU)\n", t[k].name.c_str());
            continue;
        }
        fail |= t[k].report();
    }
    return fail;
}

int main(int argc, char **argv)
{
    uint64_t total = (uint64_t)1 << 27;
    bool all = false;
    g_threads = (int)std::max(1u, std::thread::hardware_concurrency());
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--f32") && i + 1 < argc)
            total = strtoull(argv[++i], nullptr, 0);
        else if (!strcmp(argv[i], "--all-f32"))
            all = true;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            g_threads = std::max(1, atoi(argv[++i]));
        else {
            fprintf(stderr, "usage: %s [--f32 N] [--all-f32] [--threads T]\n", argv[0]);
            return 2;
        }
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int *dcap, cap = 0;
    CK(cudaMalloc(&dcap, sizeof(int)));
    k_caps<<<1, 1>>>(dcap);
    CK(cudaGetLastError());
    CK(cudaMemcpy(&cap, dcap, sizeof(int), cudaMemcpyDeviceToHost));
    printf("device: %s (sm_%d%d); e2m1/ue8m0 instructions %s\n", prop.name, prop.major, prop.minor,
           cap ? "compiled in" : "not available in this build");
    int fail = run_w16(cap != 0);
    fail |= run_f32(total, all, cap != 0);
    printf(fail ? "CROSSCHECK FAILED\n" : "CROSSCHECK PASSED\n");
    return fail ? 1 : 0;
}
