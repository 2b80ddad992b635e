/* mufu_dump.cu — pins down the GPU's MUFU results that CUDA's accurate expf and rsqrt depend
 * on (ex2.approx.ftz.f32, rsqrt.approx{,.ftz}.f32): tests hypotheses about their structure over
 * every relevant f32 input, writes compact tables (difference from the correctly rounded value,
 * bit-packed) in the format numerics/numerics.h documents, installs them into numerics.c
 * in-process, checks tl_num_ex2_approx_ftz and tl_num_expf against the hardware on every input,
 * and writes a file of (input, hardware result) samples that the CPU tests compare against.
 *
 * Build: tests/gpu/numerics/build.sh OUT (nvcc, -arch=sm_90a; see README.md).
 * Run:   mufu_dump [--full] [--sampled] OUTDIR
 *   default    the check of the one's complement rule, about 30-60 s on an H200 host (16
 *              cores), most of it host time checking numerics.c on every input: the cut
 *              toward zero to 23 bits (one cut), separability for r >= 0, the r < 0
 *              hypotheses, the ex2 tables, tl_num_ex2_approx_ftz on every |r| < 256,
 *              tl_num_expf on every f32, samples.
 *   --full     also what the sweep settled: the sweep over cuts and widths, the per-segment fits,
 *              the spec §0.3 sequence against expf() on every |x| < 128, and the rsqrt
 *              hypotheses and table (mufu_rsqrt.bin).
 *   --sampled  check numerics.c on every 61st input (plus the dense ranges) instead of all.
 * Writes OUTDIR/mufu_report.txt (also printed), OUTDIR/mufu_ex2.bin, OUTDIR/mufu_ex2neg.bin
 * (only when negative inputs need their own table), OUTDIR/mufu_samples.bin, and with --full
 * OUTDIR/mufu_rsqrt.bin. The report ends with one PASS/FAIL line per hypothesis and check.
 * Exit 0 when the tables reproduce the hardware on every input checked, 1 otherwise, 2 on
 * errors.
 *
 * Which ex2 inputs matter. expf(x) (spec §0.3) evaluates ex2 at r = y - k with y ~ x*log2(e):
 *  - normal range: t = sat(x*log2e/252 + 0.5) lies in (0,1), m = floor(252 t), k = m - 126,
 *    so r = frac(y + 126) in [0,1) up to the rounding of t: r in about [-2^-16, 1 + 2^-16];
 *  - x > 87.34 (t saturates to 1): k = 126, r = y - 126 in [0, 2) until the result overflows;
 *  - x < -87.34 (t saturates to 0): k = -126, r = y + 126 < 0, and p * 2^-126 is a subnormal
 *    that rounds to 0 once p < 2^-25, so r in [-25, 0) matters.
 * The ex2 checks cover every f32 r with |r| < 256 (2.26e9 inputs), which holds all of that
 * with margin and also the flush-to-zero and overflow edges.
 *
 * What the sweep on an H200 found (2026-11-30, tests/gpu/numerics/data/h200_sweep_report.txt):
 * the result depends only on |r| cut toward zero to 23 fraction bits; for r >= 0 it is
 * 2^n * ex2(f) (|r| = n + f); for r < 0 the two's complement split 2^-(n+1) * ex2(1 - f) is
 * wrong for most inputs. The default mode tests sign-magnitude (2^-n * ex2(-f), measured
 * directly) and the one's complement split (2^-(n+1) * ex2(1 - f - 2^-23)), which every r < 0
 * example of the sweep follows. */
#include "numerics.h"
#include "mufu_model.h"

#ifdef MUFU_DUMP_SIM
#include "sim_cuda.h"   /* a CPU stand-in for the GPU, to test this program without one */
#else
#include <cuda_runtime.h>
#define LAUNCH(kernel, grid, block, ...) kernel<<<(grid), (block)>>>(__VA_ARGS__)
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
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

static FILE *g_report;

/* prints to stdout and to the report file */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    if (g_report) {
        va_start(ap, fmt);
        vfprintf(g_report, fmt, ap);
        va_end(ap);
    }
    fflush(stdout);
}

/* the one-line verdicts printed at the end */
static std::vector<std::string> g_summary;

static void verdict(bool pass, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void verdict(bool pass, const char *fmt, ...)
{
    char buf[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    g_summary.push_back(std::string(pass ? "PASS  " : "FAIL  ") + buf);
}

static std::chrono::steady_clock::time_point g_t0;
static double elapsed(void)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - g_t0).count();
}

/* ------------------------------------------------------------------------------------ */
/* device side */

#ifndef MUFU_DUMP_SIM
__device__ __forceinline__ float ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float rsq(float x)
{
    float y;
    asm("rsqrt.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float rsq_ftz(float x)
{
    float y;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ uint32_t fb(float f) { return __float_as_uint(f); }
__device__ __forceinline__ float bf(uint32_t u) { return __uint_as_float(u); }

__device__ __forceinline__ float cuda_expf(float x) { return expf(x); }
#endif

/* the ex2 domain: every f32 with |r| < 256, positive patterns first */
constexpr uint32_t EX2_HALF = 0x43800000u;   /* bits of 256.0 */
constexpr uint64_t EX2_DOMAIN = 2ull * EX2_HALF;
__host__ __device__ __forceinline__ uint32_t ex2_dom(uint64_t u)
{
    return u < EX2_HALF ? (uint32_t)u : 0x80000000u | (uint32_t)(u - EX2_HALF);
}

/* cuts: 0 floor, 1 toward zero, 2 nearest even, applied to r * 2^n */
__device__ __forceinline__ float cut(float r, int n, int how)
{
    float sc = bf((uint32_t)(127 + n) << 23), inv = bf((uint32_t)(127 - n) << 23);
    float s = r * sc;
    float q = how == 0 ? floorf(s) : how == 1 ? truncf(s) : rintf(s);
    return q * inv;
}

__device__ __forceinline__ float ftz(float r) { return (fb(r) & 0x7F800000u) ? r : bf(fb(r) & 0x80000000u); }

constexpr int NMIN = 12, NMAX = 30, NN = NMAX - NMIN + 1;

/* --full: ex2(r) == ex2(cut(r, n, how)) for every r (after flushing subnormal r), for every
 * width n and cut */
__global__ void k_ex2_cut(unsigned long long *counts)
{
    uint32_t local[3][NN];
#pragma unroll
    for (int h = 0; h < 3; h++)
#pragma unroll
        for (int n = 0; n < NN; n++)
            local[h][n] = 0;
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t u = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; u < EX2_DOMAIN; u += stride) {
        float r = ftz(bf(ex2_dom(u)));
        uint32_t hw = fb(ex2(r));
#pragma unroll
        for (int n = 0; n < NN; n++)
#pragma unroll
            for (int h = 0; h < 3; h++)
                local[h][n] += fb(ex2(cut(r, NMIN + n, h))) != hw;
    }
#pragma unroll
    for (int h = 0; h < 3; h++)
#pragma unroll
        for (int n = 0; n < NN; n++)
            if (local[h][n])
                atomicAdd(&counts[h * NN + n], (unsigned long long)local[h][n]);
}

struct Example { uint32_t r, hw, q, hq; };

/* records an example; the first 16 are kept */
__device__ __forceinline__ void keep_example(Example *ex, unsigned *nex, Example e)
{
    if (*(volatile unsigned *)nex < 16) {
        unsigned k = atomicAdd(nex, 1u);
        if (k < 16)
            ex[k] = e;
    }
}

/* one cut: mismatch count and the first examples */
__global__ void k_ex2_cut_one(int n, int how, unsigned long long *count, Example *ex, unsigned *nex)
{
    uint32_t bad = 0;
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t u = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; u < EX2_DOMAIN; u += stride) {
        float r = ftz(bf(ex2_dom(u)));
        float q = cut(r, n, how);
        uint32_t hw = fb(ex2(r)), hq = fb(ex2(q));
        if (hw != hq) {
            bad++;
            keep_example(ex, nex, Example{fb(r), hw, fb(q), hq});
        }
    }
    if (bad)
        atomicAdd(count, (unsigned long long)bad);
}

/* the grids P[i] = ex2(i / 2^23) and M[i] = ex2(-i / 2^23), i < 2^23 */
__global__ void k_ex2_grids(uint32_t *P, uint32_t *M)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= MUFU_FMASK) {
        float f = (float)i * 0x1p-23f;   /* exact */
        P[i] = fb(ex2(f));
        M[i] = fb(ex2(-f));
    }
}

/* The hypotheses of mufu_model.h over the whole domain. counts: 0 r >= 0 separable,
 * 1 r < 0 sign-magnitude, 2 r < 0 one's complement, 3 r < 0 two's complement; hist: per
 * integer part n (0..255) of |r|, mismatches of hypotheses 1 and 2 (hist[n], hist[256 + n]).
 * Examples: 16 per hypothesis. */
enum { HYP_POS, HYP_SIGNMAG, HYP_ONES, HYP_TWOS, HYP_COUNT };

__global__ void k_ex2_hyp(const uint32_t *P, const uint32_t *M, unsigned long long *counts,
                          unsigned long long *hist, Example *ex, unsigned *nex)
{
    /* hist takes global atomics: mismatches are rare unless a hypothesis fails, and even
     * the sweep's 2.5e8 cost well under a second; no shared memory keeps the CPU stand-in exact */
    uint32_t c[HYP_COUNT] = {0, 0, 0, 0};
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t u = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; u < EX2_DOMAIN; u += stride) {
        uint32_t rb = ex2_dom(u);
        uint32_t hw = fb(ex2(bf(rb)));
        if (!(rb >> 31)) {
            uint32_t p = mufu_pred_pos(rb, P);
            if (p != hw) {
                c[HYP_POS]++;
                keep_example(ex + 16 * HYP_POS, nex + HYP_POS, Example{rb, hw, 0, p});
            }
            continue;
        }
        uint32_t n = mufu_split(rb).n;
        uint32_t ps = mufu_pred_signmag(rb, M), po = mufu_pred_ones(rb, P), pt = mufu_pred_twos(rb, P);
        if (ps != hw) {
            c[HYP_SIGNMAG]++;
            atomicAdd(&hist[n], 1ull);
            keep_example(ex + 16 * HYP_SIGNMAG, nex + HYP_SIGNMAG, Example{rb, hw, 0, ps});
        }
        if (po != hw) {
            c[HYP_ONES]++;
            atomicAdd(&hist[256 + n], 1ull);
            keep_example(ex + 16 * HYP_ONES, nex + HYP_ONES, Example{rb, hw, 0, po});
        }
        if (pt != hw) {
            c[HYP_TWOS]++;
            keep_example(ex + 16 * HYP_TWOS, nex + HYP_TWOS, Example{rb, hw, 0, pt});
        }
    }
    for (int k = 0; k < HYP_COUNT; k++)
        if (c[k])
            atomicAdd(&counts[k], (unsigned long long)c[k]);
}

/* hardware values at given inputs */
__global__ void k_ex2_at(const uint32_t *in, uint32_t *out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = fb(ex2(bf(in[i])));
}

/* hardware values on a slice of the ex2 domain */
__global__ void k_ex2_slice(uint64_t start, size_t n, uint32_t *out)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = fb(ex2(bf(ex2_dom(start + i))));
}

#ifndef MUFU_DUMP_SIM
/* spec §0.3 sequence, instruction by instruction */
__device__ __forceinline__ float expf_seq(float x)
{
    float t, j, k, r, p, res;
    asm("fma.rn.sat.f32 %0, %1, 0f3BBB989D, 0f3F000000;" : "=f"(t) : "f"(x));
    asm("fma.rm.f32 %0, %1, 0f437C0000, 0f4B400001;" : "=f"(j) : "f"(t));
    asm("sub.f32 %0, %1, 0f4B40007F;" : "=f"(k) : "f"(j));
    asm("{ .reg .f32 nk; neg.f32 nk, %2; fma.rn.f32 %0, %1, 0f3FB8AA3B, nk; }" : "=f"(r) : "f"(x), "f"(k));
    asm("fma.rn.f32 %0, %1, 0f32A57060, %0;" : "+f"(r) : "f"(x));
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(p) : "f"(r));
    uint32_t s = fb(j) << 23;
    asm("mul.rn.f32 %0, %1, %2;" : "=f"(res) : "f"(p), "f"(bf(s)));
    return res;
}
#endif

/* --full: the inline sequence against CUDA's expf() over every |x| < 128 */
constexpr uint32_t EXP_HALF = 0x43000000u;   /* 128.0 */
__global__ void k_expf_cmp(unsigned long long *count, Example *ex, unsigned *nex)
{
    uint32_t bad = 0;
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t u = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; u < 2ull * EXP_HALF; u += stride) {
        uint32_t xb = u < EXP_HALF ? (uint32_t)u : 0x80000000u | (uint32_t)(u - EXP_HALF);
        float x = bf(xb);
        uint32_t a = fb(expf_seq(x)), b = fb(cuda_expf(x));
        if (a != b) {
            bad++;
            keep_example(ex, nex, Example{xb, b, 0, a});
        }
    }
    if (bad)
        atomicAdd(count, (unsigned long long)bad);
}

__global__ void k_expf_at(const uint32_t *in, uint32_t *out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = fb(cuda_expf(bf(in[i])));
}

/* expf() of the f32 patterns start .. start + n - 1 */
__global__ void k_expf_slice(uint64_t start, size_t n, uint32_t *out)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = fb(cuda_expf(bf((uint32_t)(start + i))));
}

/* rsqrt on [1,4): H[i] = rsqrt(bits 0x3F800000 + i), both flavours */
__global__ void k_rsq_grid(uint32_t *H, uint32_t *Hf)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (1u << 24)) {
        float m = bf(0x3F800000u + i);
        H[i] = fb(rsq(m));
        Hf[i] = fb(rsq_ftz(m));
    }
}

/* does rsqrt on [1,4) depend only on the top n of the 24 grid-index bits? (n = 12..23) */
__global__ void k_rsq_cut(const uint32_t *H, unsigned long long *counts)
{
    uint32_t local[12];
#pragma unroll
    for (int n = 0; n < 12; n++)
        local[n] = 0;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < (1u << 24); i += gridDim.x * blockDim.x) {
#pragma unroll
        for (int n = 0; n < 12; n++)
            local[n] += H[i] != H[i & ~((1u << (12 - n)) - 1)];
    }
#pragma unroll
    for (int n = 0; n < 12; n++)
        if (local[n])
            atomicAdd(&counts[n], (unsigned long long)local[n]);
}

/* exponent reduction: rsqrt(m 4^k) == rsqrt(m) 2^-k over every positive finite f32; subnormal
 * inputs normalised (non-ftz) or flushed to +0 -> +inf (ftz). counts: normal non-ftz,
 * subnormal non-ftz, normal ftz, subnormal ftz */
__device__ __forceinline__ uint32_t rsq_predict(uint32_t x, const uint32_t *H, bool ftzmode)
{
    int bexp = (int)(x >> 23);
    uint32_t frac = x & 0x7FFFFFu;
    if (bexp == 0) {
        if (ftzmode)
            return 0x7F800000u;
        int lz = __clz(frac) - 8;
        frac = (frac << lz) & 0x7FFFFFu;
        bexp = 1 - lz;
    }
    int e = bexp - 127, odd = e & 1, k = (e - odd) / 2;
    uint32_t idx = ((uint32_t)odd << 23) | frac;
    return H[idx] - ((uint32_t)k << 23);
}

__global__ void k_rsq_all(const uint32_t *H, const uint32_t *Hf, unsigned long long *counts,
                          Example *ex, unsigned *nex)
{
    uint32_t c[4] = {0, 0, 0, 0};
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t u = 1 + blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; u < 0x7F800000u; u += stride) {
        uint32_t x = (uint32_t)u;
        bool sub = x < 0x00800000u;
        uint32_t hw = fb(rsq(bf(x))), hwf = fb(rsq_ftz(bf(x)));
        uint32_t p = rsq_predict(x, H, false), pf = rsq_predict(x, Hf, true);
        if (hw != p) {
            c[sub ? 1 : 0]++;
            if (*(volatile unsigned *)nex < 16) {
                unsigned k = atomicAdd(nex, 1u);
                if (k < 16)
                    ex[k] = Example{x, hw, 0, p};
            }
        }
        if (hwf != pf)
            c[sub ? 3 : 2]++;
    }
    for (int k = 0; k < 4; k++)
        if (c[k])
            atomicAdd(&counts[k], (unsigned long long)c[k]);
}

__global__ void k_rsq_at(const uint32_t *in, uint32_t *out, uint32_t *outf, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = fb(rsq(bf(in[i])));
        outf[i] = fb(rsq_ftz(bf(in[i])));
    }
}

/* ------------------------------------------------------------------------------------ */
/* host side */

static int g_threads = 8;

template <class F> static void parallel_for(size_t n, F body)
{
    std::vector<std::thread> th;
    for (int t = 0; t < g_threads; t++)
        th.emplace_back([=] { body(t, n * t / g_threads, n * (t + 1) / g_threads); });
    for (auto &x : th)
        x.join();
}

template <class T> static T *dalloc(size_t n)
{
    T *p;
    CK(cudaMalloc(&p, n * sizeof(T)));
    CK(cudaMemset(p, 0, n * sizeof(T)));
    return p;
}

template <class T> static std::vector<T> fetch(const T *d, size_t n)
{
    std::vector<T> v(n);
    CK(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
}

static const int GRID = 132 * 16, BLOCK = 256;
static const char *const CUT_NAMES[3] = {"floor", "toward zero", "nearest even"};

static void print_examples(const char *what, Example *dex, unsigned *dnex, bool has_q)
{
    unsigned n = fetch(dnex, 1)[0];
    std::vector<Example> ex = fetch(dex, 16);
    for (unsigned i = 0; i < n && i < 16; i++) {
        if (has_q)
            say("    %s r=%08x (%a) hw=%08x   cut q=%08x hw(q)=%08x\n", what, ex[i].r,
                (double)tl_num_float(ex[i].r), ex[i].hw, ex[i].q, ex[i].hq);
        else
            say("    %s in=%08x (%a) hw=%08x predicted=%08x\n", what, ex[i].r,
                (double)tl_num_float(ex[i].r), ex[i].hw, ex[i].hq);
    }
}

/* ---- samples: inputs gathered during the run, evaluated on the unit at the end ---- */

static std::vector<uint32_t> g_smp_ex2, g_smp_expf, g_smp_rsq;
static uint64_t g_rng = 0x4D55465532ull;

static uint64_t rng_next(void)
{
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* uniform in [lo, hi) as f32 bits */
static uint32_t rng_float(double lo, double hi)
{
    return tl_num_bits((float)(lo + (hi - lo) * (double)(rng_next() >> 11) * 0x1p-53));
}

/* the inputs of the examples a kernel kept */
static void sample_examples(std::vector<uint32_t> &to, Example *dex, unsigned *dnex)
{
    unsigned n = std::min(fetch(dnex, 1)[0], 16u);
    std::vector<Example> ex = fetch(dex, 16);
    for (unsigned i = 0; i < n; i++)
        to.push_back(ex[i].r);
}

/* x and its `radius` neighbours on each side (as bit patterns, same sign) */
static void sample_around(std::vector<uint32_t> &to, uint32_t x, uint32_t radius)
{
    uint32_t mag = x & 0x7FFFFFFFu, sign = x & 0x80000000u;
    uint32_t lo = mag > radius ? mag - radius : 0;
    for (uint32_t m = lo; m <= mag + radius; m++)
        to.push_back(sign | m);
}

/* ---- numerics.c against the unit ---- */

/* what a check compares: the unit (a kernel) and numerics.c (a host function) */
enum CheckOp { CHECK_EX2, CHECK_EXPF };

static uint32_t model_of(CheckOp op, uint32_t x)
{
    return op == CHECK_EX2 ? tl_num_ex2_approx_ftz(x) : tl_num_expf(x);
}

/* input number i of a sweep */
static uint32_t sweep_input(CheckOp op, uint64_t i)
{
    return op == CHECK_EX2 ? ex2_dom(i) : (uint32_t)i;
}

struct CheckTally {
    uint64_t checked = 0, bad = 0;
    uint64_t sub_checked = 0, sub_bad = 0;   /* expf: the unit's result is a nonzero subnormal */
    std::vector<std::string> shown;          /* the first few mismatches, printed */
    std::vector<uint32_t> bad_inputs;        /* up to 4096 mismatching inputs, for the samples */

    void add(CheckOp op, uint32_t x, uint32_t hw)
    {
        uint32_t s = model_of(op, x);
        bool sub = hw != 0 && hw < 0x00800000u;
        checked++;
        sub_checked += sub;
        if (s == hw)
            return;
        bad++;
        sub_bad += sub;
        if (bad_inputs.size() < 4096)
            bad_inputs.push_back(x);
        if (shown.size() < 2) {
            char b[160];
            snprintf(b, sizeof b, "    %s(%08x = %a): hw=%08x numerics=%08x\n",
                     op == CHECK_EX2 ? "ex2" : "expf", x, (double)tl_num_float(x), hw, s);
            shown.push_back(b);
        }
    }

    void merge(const CheckTally &o)
    {
        checked += o.checked;
        bad += o.bad;
        sub_checked += o.sub_checked;
        sub_bad += o.sub_bad;
        for (auto &s : o.shown)
            if (shown.size() < 16)
                shown.push_back(s);
        for (uint32_t x : o.bad_inputs)
            if (bad_inputs.size() < 4096)
                bad_inputs.push_back(x);
    }
};

/* compares hw[i] with numerics at in(i) for i < n on every host thread */
template <class In> static void compare(CheckOp op, size_t n, In in, const uint32_t *hw, CheckTally &into)
{
    std::vector<CheckTally> part(g_threads);
    parallel_for(n, [&](int t, size_t lo, size_t hi) {
        CheckTally mine;   /* local: neighbouring tallies would share cache lines */
        for (size_t i = lo; i < hi; i++)
            mine.add(op, in(i), hw[i]);
        part[t] = std::move(mine);
    });
    for (auto &p : part)
        into.merge(p);
}

/* the unit's results at the given inputs */
static std::vector<uint32_t> unit_at(CheckOp op, const std::vector<uint32_t> &in)
{
    if (in.empty())
        return {};
    uint32_t *dIn = dalloc<uint32_t>(in.size()), *dOut = dalloc<uint32_t>(in.size());
    CK(cudaMemcpy(dIn, in.data(), in.size() * 4, cudaMemcpyHostToDevice));
    unsigned blocks = (unsigned)((in.size() + 255) / 256);
    if (op == CHECK_EX2)
        LAUNCH(k_ex2_at, blocks, 256, dIn, dOut, in.size());
    else
        LAUNCH(k_expf_at, blocks, 256, dIn, dOut, in.size());
    CK(cudaGetLastError());
    std::vector<uint32_t> hw = fetch(dOut, in.size());
    CK(cudaFree(dIn));
    CK(cudaFree(dOut));
    return hw;
}

/* every input of the sweep (total inputs), or every 61st when sampled, then the extra list */
static CheckTally check_sweep(CheckOp op, uint64_t total, bool sampled, const std::vector<uint32_t> &extra)
{
    CheckTally t;
    const size_t CHUNK = (size_t)1 << 27;
    uint32_t *dOut = dalloc<uint32_t>(CHUNK);
    std::vector<uint32_t> hw(CHUNK);
    if (sampled) {
        std::vector<uint32_t> in;
        for (uint64_t i = 0; i < total; i += 61)
            in.push_back(sweep_input(op, i));
        std::vector<uint32_t> h = unit_at(op, in);
        compare(op, in.size(), [&](size_t i) { return in[i]; }, h.data(), t);
    } else {
        for (uint64_t start = 0; start < total; start += CHUNK) {
            size_t n = (size_t)std::min<uint64_t>(CHUNK, total - start);
            unsigned blocks = (unsigned)((n + 255) / 256);
            if (op == CHECK_EX2)
                LAUNCH(k_ex2_slice, blocks, 256, start, n, dOut);
            else
                LAUNCH(k_expf_slice, blocks, 256, start, n, dOut);
            CK(cudaGetLastError());
            CK(cudaMemcpy(hw.data(), dOut, n * 4, cudaMemcpyDeviceToHost));
            compare(op, n, [&](size_t i) { return sweep_input(op, start + i); }, hw.data(), t);
        }
    }
    CK(cudaFree(dOut));
    std::vector<uint32_t> h = unit_at(op, extra);
    compare(op, extra.size(), [&](size_t i) { return extra[i]; }, h.data(), t);
    return t;
}
/* per-segment least-squares fits of y[i] over 2^k segments: max |residual| of the linear and
 * quadratic fit, to see whether a table of 2^k entries plus interpolation can produce y */
static void fit_report(const char *what, const std::vector<double> &y)
{
    size_t n = y.size();
    say("  %s: per-segment fits of the result bits (units of 2^-23) — max |residual|:\n", what);
    say("    k (2^k segments)   linear      quadratic\n");
    for (int k = 3; k <= 12; k++) {
        size_t seg = n >> k;
        if (seg < 8)
            break;
        std::vector<double> worst1(g_threads, 0), worst2(g_threads, 0);
        parallel_for((size_t)1 << k, [&](int t, size_t lo, size_t hi) {
            for (size_t s = lo; s < hi; s++) {
                double S[5] = {0, 0, 0, 0, 0}, T[3] = {0, 0, 0};
                for (size_t j = 0; j < seg; j++) {
                    double x = (double)j / (double)seg, v = y[s * seg + j], p = 1;
                    for (int d = 0; d < 5; d++, p *= x) {
                        S[d] += p;
                        if (d < 3)
                            T[d] += p * v;
                    }
                }
                /* linear: 2x2 normal equations */
                double det1 = S[0] * S[2] - S[1] * S[1];
                double b1 = (S[0] * T[1] - S[1] * T[0]) / det1, a1 = (T[0] - b1 * S[1]) / S[0];
                /* quadratic: 3x3 normal equations by Cramer's rule */
                double A[3][3] = {{S[0], S[1], S[2]}, {S[1], S[2], S[3]}, {S[2], S[3], S[4]}};
                auto det3 = [](double M[3][3]) {
                    return M[0][0] * (M[1][1] * M[2][2] - M[1][2] * M[2][1])
                         - M[0][1] * (M[1][0] * M[2][2] - M[1][2] * M[2][0])
                         + M[0][2] * (M[1][0] * M[2][1] - M[1][1] * M[2][0]);
                };
                double D = det3(A), c[3];
                for (int col = 0; col < 3; col++) {
                    double B[3][3];
                    memcpy(B, A, sizeof B);
                    for (int r = 0; r < 3; r++)
                        B[r][col] = T[r];
                    c[col] = det3(B) / D;
                }
                for (size_t j = 0; j < seg; j++) {
                    double x = (double)j / (double)seg, v = y[s * seg + j];
                    worst1[t] = std::max(worst1[t], fabs(v - (a1 + b1 * x)));
                    worst2[t] = std::max(worst2[t], fabs(v - (c[0] + x * (c[1] + x * c[2]))));
                }
            }
        });
        say("    %2d                 %-10.3f  %.3f\n", k, *std::max_element(worst1.begin(), worst1.end()),
            *std::max_element(worst2.begin(), worst2.end()));
    }
}

static void histogram(const char *what, const std::vector<int32_t> &d)
{
    int32_t lo = *std::min_element(d.begin(), d.end()), hi = *std::max_element(d.begin(), d.end());
    say("  %s: delta (hardware bits - correctly rounded bits) from %d to %d:", what, lo, hi);
    if (hi - lo <= 64) {
        std::vector<uint64_t> h((size_t)(hi - lo + 1), 0);
        for (int32_t v : d)
            h[(size_t)(v - lo)]++;
        for (int32_t v = lo; v <= hi; v++)
            say(" [%d]=%llu", v, (unsigned long long)h[(size_t)(v - lo)]);
    }
    say("\n");
}

static bool write_file(const std::string &path, const std::vector<uint8_t> &blob)
{
    FILE *f = fopen(path.c_str(), "wb");
    if (!f || fwrite(blob.data(), 1, blob.size(), f) != blob.size() || fclose(f) != 0) {
        say("  ERROR: cannot write %s\n", path.c_str());
        return false;
    }
    say("  wrote %s (%zu bytes)\n", path.c_str(), blob.size());
    return true;
}

static const size_t MAX_TABLE_BYTES = 8u << 20;

/* encodes, writes and installs one table; false on any failure (reported) */
static bool emit_table(const std::string &path, unsigned kind, unsigned cut, const std::vector<int32_t> &delta)
{
    unsigned nb = 0;
    while (((size_t)1 << nb) < delta.size())
        nb++;
    size_t sz = tl_num_mufu_encode(kind, nb, cut, delta.data(), nullptr, 0);
    if (sz == 0 || sz > MAX_TABLE_BYTES + 64) {
        say("  the deltas do not fit the table format within 8 MB (size %zu); %s not written\n", sz,
            path.c_str());
        return false;
    }
    std::vector<uint8_t> blob(sz);
    tl_num_mufu_encode(kind, nb, cut, delta.data(), blob.data(), sz);
    if (!write_file(path, blob))
        return false;
    char err[200];
    if (tl_num_mufu_install(blob.data(), blob.size(), err, sizeof err) != 0) {
        say("  ERROR: install %s: %s\n", path.c_str(), err);
        return false;
    }
    return true;
}

static int do_ex2(const std::string &outdir, bool full, bool sampled)
{
    int fail = 0;
    say("\n== ex2.approx.ftz.f32 ==\n");
    const uint32_t specials[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x3F800000u,
                                 0xBF800000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u,
                                 0x7F800001u, 0x43000000u, 0x42FFFFFFu, 0xC2FC0000u, 0xC2FC0001u,
                                 0xC2FE0000u, 0xC3000000u, 0x3F000000u, 0x33800000u, 0xB3800000u,
                                 0xB4000000u, 0xB4000001u, 0xBF7FFFFFu, 0xC2FBFFFFu, 0xC2FC8000u};
    const size_t ns = sizeof specials / sizeof specials[0];
    std::vector<uint32_t> spv(specials, specials + ns);
    std::vector<uint32_t> sv = unit_at(CHECK_EX2, spv);
    say("  special inputs (hardware / numerics.c model without tables):\n");
    for (size_t i = 0; i < ns; i++)
        say("    ex2(%08x = %a) = %08x   model %08x\n", specials[i], (double)tl_num_float(specials[i]),
            sv[i], tl_num_ex2_approx_ftz_model(specials[i]));
    g_smp_ex2.insert(g_smp_ex2.end(), specials, specials + ns);

    Example *dex = dalloc<Example>(16 * HYP_COUNT);
    unsigned *dnex = dalloc<unsigned>(HYP_COUNT);
    if (full) {
        unsigned long long *dcounts = dalloc<unsigned long long>(3 * NN);
        LAUNCH(k_ex2_cut, GRID, BLOCK, dcounts);
        CK(cudaGetLastError());
        std::vector<unsigned long long> counts = fetch(dcounts, 3 * NN);
        say("  hypothesis: ex2(r) == ex2(cut(r)) where cut keeps n fraction bits (all %llu r with\n"
            "  |r| < 256, subnormal r flushed first); mismatches per cut and n:\n",
            (unsigned long long)EX2_DOMAIN);
        say("     n   %14s %14s %14s\n", CUT_NAMES[0], CUT_NAMES[1], CUT_NAMES[2]);
        for (int n = 0; n < NN; n++)
            say("    %2d   %14llu %14llu %14llu\n", NMIN + n, counts[n], counts[NN + n], counts[2 * NN + n]);
        CK(cudaFree(dcounts));
    }
    /* the cut every table below assumes */
    unsigned long long *dcut = dalloc<unsigned long long>(1);
    LAUNCH(k_ex2_cut_one, GRID, BLOCK, MUFU_FBITS, 1, dcut, dex, dnex);
    CK(cudaGetLastError());
    unsigned long long cutbad = fetch(dcut, 1)[0];
    say("  hypothesis: ex2(r) == ex2(r cut toward zero to 23 fraction bits), every |r| < 256: "
        "%llu mismatches\n", cutbad);
    if (cutbad) {
        print_examples("cut", dex, dnex, true);
        sample_examples(g_smp_ex2, dex, dnex);
    }
    verdict(cutbad == 0, "ex2(r) depends only on |r| cut toward zero to 23 fraction bits "
            "(every |r| < 256): %llu mismatches", cutbad);
    fail |= cutbad != 0;

    /* the grids and the hypotheses built on them */
    const size_t G = (size_t)MUFU_FMASK + 1;
    uint32_t *dP = dalloc<uint32_t>(G), *dM = dalloc<uint32_t>(G);
    LAUNCH(k_ex2_grids, (unsigned)(G / 256), 256, dP, dM);
    CK(cudaGetLastError());
    unsigned long long *dhyp = dalloc<unsigned long long>(HYP_COUNT), *dhist = dalloc<unsigned long long>(512);
    CK(cudaMemset(dnex, 0, HYP_COUNT * sizeof(unsigned)));
    LAUNCH(k_ex2_hyp, GRID, BLOCK, dP, dM, dhyp, dhist, dex, dnex);
    CK(cudaGetLastError());
    std::vector<unsigned long long> hyp = fetch(dhyp, HYP_COUNT), hist = fetch(dhist, 512);
    static const char *const HYP_TEXT[HYP_COUNT] = {
        "r >= 0: ex2(n + f) == 2^n * ex2(f)",
        "r < 0, sign-magnitude: ex2(-(n + f)) == 2^-n * ex2(-f)",
        "r < 0, one's complement: ex2(-(n + f)) == 2^-(n+1) * ex2(1 - f - 2^-23), 2^-n when f = 0",
        "r < 0, two's complement: ex2(-(n + f)) == 2^-(n+1) * ex2(1 - f), 2^-n when f = 0",
    };
    say("  hypotheses, every |r| < 256 (|r| cut toward zero to n + f, f a multiple of 2^-23;\n"
        "  ex2(f), ex2(-f) measured on the grid; results below 2^-126 flushed):\n");
    for (int k = 0; k < HYP_COUNT; k++) {
        say("    %-90s %llu mismatches\n", HYP_TEXT[k], hyp[k]);
        print_examples("  ", dex + 16 * k, dnex + k, false);
        sample_examples(g_smp_ex2, dex + 16 * k, dnex + k);
    }
    if (hyp[HYP_SIGNMAG] || hyp[HYP_ONES]) {
        say("  r < 0 mismatches per integer part n of |r| (sign-magnitude / one's complement):\n");
        for (int n = 0; n < 256; n++)
            if (hist[n] || hist[256 + n])
                say("    n=%3d  %12llu %12llu\n", n, hist[n], hist[256 + n]);
    }
    verdict(hyp[HYP_POS] == 0, "%s: %llu mismatches", HYP_TEXT[HYP_POS], hyp[HYP_POS]);
    verdict(hyp[HYP_SIGNMAG] == 0, "%s: %llu mismatches", HYP_TEXT[HYP_SIGNMAG], hyp[HYP_SIGNMAG]);
    verdict(hyp[HYP_ONES] == 0, "%s: %llu mismatches", HYP_TEXT[HYP_ONES], hyp[HYP_ONES]);
    verdict(hyp[HYP_TWOS] == 0, "%s: %llu mismatches (refuted by the sweep; for the record)",
            HYP_TEXT[HYP_TWOS], hyp[HYP_TWOS]);
    fail |= hyp[HYP_POS] != 0 || (hyp[HYP_SIGNMAG] != 0 && hyp[HYP_ONES] != 0);

    /* the tables: deltas from the correctly rounded 2^f and 2^-f */
    std::vector<uint32_t> P = fetch(dP, G), M = fetch(dM, G);
    std::vector<int32_t> dpos(G), dneg(G);
    parallel_for(G, [&](int, size_t lo, size_t hi) {
        for (size_t i = lo; i < hi; i++) {
            float f = (float)ldexp((double)i, -MUFU_FBITS);
            dpos[i] = (int32_t)(P[i] - tl_num_exp2_cr(tl_num_bits(f)));
            dneg[i] = (int32_t)(M[i] - tl_num_exp2_cr(tl_num_bits(-f)));
        }
    });
    histogram("ex2(f), f = i/2^23 in [0,1)", dpos);
    histogram("ex2(-f), f = i/2^23 in [0,1)", dneg);
    size_t same = 0;
    for (size_t f = 1; f < G; f++)
        same += M[f] == P[MUFU_FMASK - f] - 0x00800000u;
    say("  ex2(-f) == ex2(1 - f - 2^-23) / 2 at %zu of %zu grid points f > 0\n", same, G - 1);
    if (full) {
        std::vector<double> ybits(G);
        for (size_t i = 0; i < G; i++)
            ybits[i] = (double)P[i] - (double)0x3F800000u;
        fit_report("ex2 on [0,1)", ybits);
    }
    tl_num_mufu_uninstall(1);
    tl_num_mufu_uninstall(3);
    bool ok;
    if (hyp[HYP_ONES] == 0) {
        say("  tables: mufu_ex2.bin with cut 3 (negative inputs by one's complement of the fraction)\n");
        ok = emit_table(outdir + "/mufu_ex2.bin", 1, 3, dpos);
    } else {
        say("  tables: mufu_ex2.bin with cut 1 and mufu_ex2neg.bin (negative inputs by "
            "sign-magnitude)\n");
        ok = emit_table(outdir + "/mufu_ex2.bin", 1, 1, dpos)
          && emit_table(outdir + "/mufu_ex2neg.bin", 3, 1, dneg);
    }
    CK(cudaFree(dP));
    CK(cudaFree(dM));
    if (!ok)
        return 1;
    say("  numerics.c reports the ex2 tables %s\n", tl_num_ex2_is_exact() ? "complete" : "INCOMPLETE");

    /* numerics.c with the tables against the unit */
    double t0 = elapsed();
    std::vector<uint32_t> extra(specials, specials + ns);
    if (sampled) {   /* the ranges expf reaches near its subnormal results and near 2 */
        for (uint32_t b = 0xC1C00000u; b <= 0xC1D00000u; b++)
            extra.push_back(b);
        for (uint32_t b = 0x3FFEB852u; b <= 0x4000A3D7u; b++)
            extra.push_back(b);
    }
    CheckTally t = check_sweep(CHECK_EX2, EX2_DOMAIN, sampled, extra);
    say("  tl_num_ex2_approx_ftz with the tables: %llu inputs (%s), %llu mismatches (%.1f s)\n",
        (unsigned long long)t.checked, sampled ? "every 61st |r| < 256, dense ranges, specials"
                                               : "every |r| < 256 and specials",
        (unsigned long long)t.bad, elapsed() - t0);
    for (auto &s : t.shown)
        say("%s", s.c_str());
    g_smp_ex2.insert(g_smp_ex2.end(), t.bad_inputs.begin(), t.bad_inputs.end());
    verdict(t.bad == 0 && tl_num_ex2_is_exact(),
            "tl_num_ex2_approx_ftz == ex2.approx.ftz.f32 on %s: %llu of %llu differ",
            sampled ? "a 1/61 sample" : "every |r| < 256", (unsigned long long)t.bad,
            (unsigned long long)t.checked);
    CK(cudaFree(dex));
    CK(cudaFree(dnex));
    CK(cudaFree(dcut));
    CK(cudaFree(dhyp));
    CK(cudaFree(dhist));
    return fail | (t.bad != 0);
}

static int do_expf(bool full, bool sampled)
{
    int fail = 0;
    say("\n== expf (CUDA's accurate expf, spec §0.3) ==\n");
    if (full) {
        unsigned long long *dc = dalloc<unsigned long long>(1);
        Example *dex = dalloc<Example>(16);
        unsigned *dnex = dalloc<unsigned>(1);
        LAUNCH(k_expf_cmp, GRID, BLOCK, dc, dex, dnex);
        CK(cudaGetLastError());
        unsigned long long c = fetch(dc, 1)[0];
        say("  the spec's inline instruction sequence vs CUDA expf(), every |x| < 128 (%llu inputs): "
            "%llu mismatches\n", 2ull * EXP_HALF, c);
        if (c) {
            print_examples("expf", dex, dnex, false);
            sample_examples(g_smp_expf, dex, dnex);
            fail = 1;
        }
        verdict(c == 0, "the spec §0.3 sequence == CUDA expf() on every |x| < 128: %llu mismatches", c);
        CK(cudaFree(dc));
        CK(cudaFree(dex));
        CK(cudaFree(dnex));
    }
    if (!tl_num_ex2_is_exact()) {
        say("  the ex2 tables are incomplete: tl_num_expf cannot be exact\n");
        fail = 1;
    }
    double t0 = elapsed();
    std::vector<uint32_t> extra;
    const uint32_t sp[] = {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u, 0x43800000u,
                           0xC3800000u, 0x7F7FFFFFu, 0xFF7FFFFFu};
    extra.insert(extra.end(), sp, sp + sizeof sp / sizeof sp[0]);
    if (sampled) {   /* every result that is subnormal or near overflow */
        for (uint32_t b = 0xC2AE0000u; b <= 0xC2D00000u; b++)
            extra.push_back(b);
        for (uint32_t b = 0x42AE0000u; b <= 0x42B20000u; b++)
            extra.push_back(b);
    }
    CheckTally t = check_sweep(CHECK_EXPF, 1ull << 32, sampled, extra);
    say("  tl_num_expf (with the ex2 tables) vs CUDA expf(): %llu inputs (%s), %llu mismatches "
        "(%.1f s)\n", (unsigned long long)t.checked,
        sampled ? "every 61st f32, all of [-104,-87] and [87,89], specials" : "every f32",
        (unsigned long long)t.bad, elapsed() - t0);
    say("    of them with a subnormal result (x in about [-103.3, -87.3]): %llu inputs, %llu mismatches\n",
        (unsigned long long)t.sub_checked, (unsigned long long)t.sub_bad);
    for (auto &s : t.shown)
        say("%s", s.c_str());
    g_smp_expf.insert(g_smp_expf.end(), t.bad_inputs.begin(), t.bad_inputs.end());
    verdict(t.bad == 0, "tl_num_expf == CUDA expf() on %s: %llu of %llu differ",
            sampled ? "a 1/61 sample" : "every f32", (unsigned long long)t.bad, (unsigned long long)t.checked);
    verdict(t.sub_bad == 0 && t.sub_checked > 0,
            "tl_num_expf == CUDA expf() where the result is subnormal: %llu of %llu differ",
            (unsigned long long)t.sub_bad, (unsigned long long)t.sub_checked);
    return fail | (t.bad != 0);
}

/* ---- the samples file ---- */

static void put32(std::vector<uint8_t> &b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b.push_back((uint8_t)(v >> (8 * i)));
}

static void sort_unique(std::vector<uint32_t> &v)
{
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
}

/* inputs the sweep reported (mismatches of its model, and the ex2 results it printed) */
static const uint32_t SWEEP_EX2[] = {0xB40784E0u, 0xB4000032u, 0xB400006Fu, 0xB65C7F7Au, 0xB65C7FB7u,
                                     0xBF10D1CBu, 0xBF10D208u, 0x42FFFFFFu, 0xB3800000u};
static const uint32_t SWEEP_EXPF[] = {0xB3B17240u, 0xB3B1727Du, 0xC28C0407u, 0xC2AEAC6Eu,
                                      0xC2AEAC51u, 0xC2AEAC54u};

static int do_samples(const std::string &outdir)
{
    say("\n== samples (mufu_samples.bin) ==\n");
    for (uint32_t x : SWEEP_EX2)
        sample_around(g_smp_ex2, x, 64);
    for (int i = 0; i < 16384; i++)
        g_smp_ex2.push_back(rng_float(-130.0, 0.0));
    for (int i = 0; i < 4096; i++)
        g_smp_ex2.push_back(rng_float(0.0, 128.0));
    for (int i = 0; i < 4096; i++)   /* any pattern of the negative half of the domain */
        g_smp_ex2.push_back(ex2_dom(EX2_HALF + rng_next() % EX2_HALF));
    for (uint32_t x : SWEEP_EXPF)
        sample_around(g_smp_expf, x, 128);
    for (int i = 0; i < 32768; i++)
        g_smp_expf.push_back(rng_float(-104.0, 89.0));
    for (int i = 0; i < 16384; i++)
        g_smp_expf.push_back(rng_float(-104.0, -87.0));
    for (int i = 0; i < 2048; i++)
        g_smp_expf.push_back(rng_float(87.0, 89.0));
    for (int i = 0; i < 4096; i++)
        g_smp_expf.push_back((uint32_t)rng_next());
    const uint32_t rsq_sp[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x007FFFFFu,
                               0x00800000u, 0x3F800000u, 0x40000000u, 0x40800000u, 0x7F7FFFFFu,
                               0x7F800000u, 0xFF800000u, 0xBF800000u, 0x7FC00000u, 0xFFC00001u};
    g_smp_rsq.insert(g_smp_rsq.end(), rsq_sp, rsq_sp + sizeof rsq_sp / sizeof rsq_sp[0]);
    for (int i = 0; i < 8192; i++)
        g_smp_rsq.push_back(1u + (uint32_t)(rng_next() % 0x7F7FFFFFu));
    for (int i = 0; i < 1024; i++) {
        g_smp_rsq.push_back(1u + (uint32_t)(rng_next() % 0x007FFFFFu));
        g_smp_rsq.push_back(0x3F800000u + (uint32_t)(rng_next() % 0x01000000u));
    }
    sort_unique(g_smp_ex2);
    sort_unique(g_smp_expf);
    sort_unique(g_smp_rsq);

    std::vector<uint32_t> hex2 = unit_at(CHECK_EX2, g_smp_ex2), hexp = unit_at(CHECK_EXPF, g_smp_expf);
    size_t nr = g_smp_rsq.size();
    uint32_t *dIn = dalloc<uint32_t>(nr), *dO = dalloc<uint32_t>(nr), *dOf = dalloc<uint32_t>(nr);
    CK(cudaMemcpy(dIn, g_smp_rsq.data(), nr * 4, cudaMemcpyHostToDevice));
    LAUNCH(k_rsq_at, (unsigned)((nr + 255) / 256), 256, dIn, dO, dOf, nr);
    CK(cudaGetLastError());
    std::vector<uint32_t> hr = fetch(dO, nr), hrf = fetch(dOf, nr);
    CK(cudaFree(dIn));
    CK(cudaFree(dO));
    CK(cudaFree(dOf));

    std::vector<uint8_t> rec;
    uint64_t bad_ex2 = 0, bad_expf = 0, bad_rsq = 0;
    auto record = [&rec](uint32_t op, uint32_t x, uint32_t y) {
        put32(rec, op);
        put32(rec, x);
        put32(rec, y);
    };
    for (size_t i = 0; i < g_smp_ex2.size(); i++) {
        record(MUFU_OP_EX2, g_smp_ex2[i], hex2[i]);
        bad_ex2 += tl_num_ex2_approx_ftz(g_smp_ex2[i]) != hex2[i];
    }
    for (size_t i = 0; i < g_smp_expf.size(); i++) {
        record(MUFU_OP_EXPF, g_smp_expf[i], hexp[i]);
        bad_expf += tl_num_expf(g_smp_expf[i]) != hexp[i];
    }
    for (size_t i = 0; i < nr; i++) {
        record(MUFU_OP_RSQRT, g_smp_rsq[i], hr[i]);
        record(MUFU_OP_RSQRT_FTZ, g_smp_rsq[i], hrf[i]);
        bad_rsq += tl_num_rsqrt_approx(g_smp_rsq[i], false) != hr[i];
        bad_rsq += tl_num_rsqrt_approx(g_smp_rsq[i], true) != hrf[i];
    }
    uint32_t h = 2166136261u;
    for (uint8_t c : rec)
        h = (h ^ c) * 16777619u;
    std::vector<uint8_t> file(MUFU_SAMPLES_MAGIC, MUFU_SAMPLES_MAGIC + 8);
    put32(file, (uint32_t)(rec.size() / 12));
    put32(file, h);
    file.insert(file.end(), rec.begin(), rec.end());
    say("  %zu ex2, %zu expf, %zu rsqrt inputs (both forms); numerics.c differs at %llu / %llu / %llu%s\n",
        g_smp_ex2.size(), g_smp_expf.size(), nr, (unsigned long long)bad_ex2,
        (unsigned long long)bad_expf, (unsigned long long)bad_rsq,
        tl_num_rsqrt_is_exact() ? "" : " (no rsqrt table in this run: the model)");
    return write_file(outdir + "/mufu_samples.bin", file) ? 0 : 1;
}
static int do_rsqrt(const std::string &outdir)
{
    int fail = 0;
    say("\n== rsqrt.approx.f32 / rsqrt.approx.ftz.f32 ==\n");
    const uint32_t specials[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x007FFFFFu,
                                 0x00800000u, 0x3F800000u, 0x40000000u, 0x40800000u, 0x7F7FFFFFu,
                                 0x7F800000u, 0xFF800000u, 0xBF800000u, 0x7FC00000u, 0xFFC00001u};
    const size_t ns = sizeof specials / sizeof specials[0];
    uint32_t *din = dalloc<uint32_t>(ns), *dout = dalloc<uint32_t>(ns), *doutf = dalloc<uint32_t>(ns);
    CK(cudaMemcpy(din, specials, sizeof specials, cudaMemcpyHostToDevice));
    LAUNCH(k_rsq_at, 1, 64, din, dout, doutf, ns);
    CK(cudaGetLastError());
    std::vector<uint32_t> sv = fetch(dout, ns), svf = fetch(doutf, ns);
    say("  special inputs: rsqrt / rsqrt.ftz (hardware), model\n");
    for (size_t i = 0; i < ns; i++)
        say("    rsqrt(%08x) = %08x / %08x   model %08x / %08x\n", specials[i], sv[i], svf[i],
            tl_num_rsqrt_approx_model(specials[i], false), tl_num_rsqrt_approx_model(specials[i], true));

    uint32_t *dH = dalloc<uint32_t>(1u << 24), *dHf = dalloc<uint32_t>(1u << 24);
    LAUNCH(k_rsq_grid, (1u << 24) / 256, 256, dH, dHf);
    CK(cudaGetLastError());
    std::vector<uint32_t> H = fetch(dH, 1u << 24), Hf = fetch(dHf, 1u << 24);
    size_t diff_ftz = 0;
    for (size_t i = 0; i < H.size(); i++)
        diff_ftz += H[i] != Hf[i];
    say("  on [1,4): rsqrt and rsqrt.ftz differ at %zu of %zu inputs\n", diff_ftz, H.size());

    unsigned long long *dcut = dalloc<unsigned long long>(12);
    LAUNCH(k_rsq_cut, GRID, BLOCK, dH, dcut);
    CK(cudaGetLastError());
    std::vector<unsigned long long> cut = fetch(dcut, 12);
    say("  hypothesis: on [1,4) the result depends only on the top n of the 24 index bits;"
        " mismatches:\n");
    int N = 24;
    for (int n = 23; n >= 12; n--) {
        say("    n=%2d: %llu\n", n, cut[n - 12]);
        if (cut[n - 12] == 0 && N == n + 1)
            N = n;
    }
    say("  table index bits: %d\n", N);

    unsigned long long *dc = dalloc<unsigned long long>(4);
    Example *dex = dalloc<Example>(16);
    unsigned *dnex = dalloc<unsigned>(1);
    LAUNCH(k_rsq_all, GRID, BLOCK, dH, dHf, dc, dex, dnex);
    CK(cudaGetLastError());
    std::vector<unsigned long long> c = fetch(dc, 4);
    say("  hypothesis: rsqrt(m * 4^k) == rsqrt(m) * 2^-k, m in [1,4), over every positive finite f32\n"
        "    (subnormal inputs normalised; the ftz form: subnormal -> +inf). mismatches:\n"
        "    rsqrt: %llu normal, %llu subnormal inputs; rsqrt.ftz: %llu normal, %llu subnormal\n",
        c[0], c[1], c[2], c[3]);
    if (c[0] || c[1] || c[2] || c[3]) {
        print_examples("rsqrt reduction", dex, dnex, false);
        fail = 1;
    }

    size_t n = (size_t)1 << N, step = (size_t)1 << (24 - N);
    std::vector<int32_t> delta(n);
    std::vector<double> ybits(H.size());
    parallel_for(n, [&](int, size_t lo, size_t hi) {
        for (size_t i = lo; i < hi; i++)
            delta[i] = (int32_t)(H[i * step] - tl_num_rsqrt_cr(0x3F800000u + (uint32_t)(i * step)));
    });
    for (size_t i = 0; i < H.size(); i++)
        ybits[i] = (double)H[i] - (double)0x3F000000u;
    histogram("grid on [1,4)", delta);
    fit_report("rsqrt on [1,4)", ybits);
    size_t sz = tl_num_mufu_encode(2, (unsigned)N, 0, delta.data(), nullptr, 0);
    if (sz == 0 || sz > MAX_TABLE_BYTES + 64) {
        say("  the deltas do not fit the table format within 8 MB (size %zu); no rsqrt table written\n", sz);
        return 1;
    }
    std::vector<uint8_t> blob(sz);
    tl_num_mufu_encode(2, (unsigned)N, 0, delta.data(), blob.data(), sz);
    if (!write_file(outdir + "/mufu_rsqrt.bin", blob))
        return 1;
    char err[200];
    if (tl_num_mufu_install(blob.data(), blob.size(), err, sizeof err) != 0) {
        say("  ERROR: install: %s\n", err);
        return 1;
    }
    /* numerics.c against the hardware: every 61st positive pattern, every subnormal, specials */
    std::vector<uint32_t> in;
    for (uint64_t u = 1; u < 0x7F800000u; u += 61)
        in.push_back((uint32_t)u);
    for (uint32_t b = 1; b < 0x00800000u; b += 3)
        in.push_back(b);
    in.insert(in.end(), specials, specials + ns);
    uint32_t *dIn = dalloc<uint32_t>(in.size()), *dO = dalloc<uint32_t>(in.size()), *dOf = dalloc<uint32_t>(in.size());
    CK(cudaMemcpy(dIn, in.data(), in.size() * 4, cudaMemcpyHostToDevice));
    LAUNCH(k_rsq_at, (unsigned)((in.size() + 255) / 256), 256, dIn, dO, dOf, in.size());
    CK(cudaGetLastError());
    std::vector<uint32_t> hw = fetch(dO, in.size()), hwf = fetch(dOf, in.size());
    std::vector<uint64_t> bad(g_threads, 0);
    std::vector<std::string> exs(g_threads);
    parallel_for(in.size(), [&](int t, size_t lo, size_t hi) {
        for (size_t i = lo; i < hi; i++) {
            uint32_t s = tl_num_rsqrt_approx(in[i], false), sf = tl_num_rsqrt_approx(in[i], true);
            if ((s != hw[i] || sf != hwf[i]) && bad[t]++ < 2) {
                char b[160];
                snprintf(b, sizeof b, "    in=%08x hw=%08x/%08x numerics=%08x/%08x\n", in[i], hw[i],
                         hwf[i], s, sf);
                exs[t] += b;
            }
        }
    });
    uint64_t nbad = 0;
    for (int t = 0; t < g_threads; t++)
        nbad += bad[t];
    say("  tl_num_rsqrt_approx (both forms) with the table: %zu inputs, %llu mismatches\n", in.size(),
        (unsigned long long)nbad);
    for (auto &s : exs)
        say("%s", s.c_str());
    return fail | (nbad != 0);
}


int main(int argc, char **argv)
{
    bool full = false, sampled = false;
    const char *outarg = nullptr;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--full") == 0)
            full = true;
        else if (strcmp(argv[i], "--sampled") == 0)
            sampled = true;
        else if (argv[i][0] != '-' && !outarg)
            outarg = argv[i];
        else {
            fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[i]);
            outarg = nullptr;
            break;
        }
    }
    if (!outarg) {
        fprintf(stderr, "usage: %s [--full] [--sampled] OUTDIR\n", argv[0]);
        return 2;
    }
    std::string outdir = outarg;
    g_report = fopen((outdir + "/mufu_report.txt").c_str(), "w");
    if (!g_report) {
        fprintf(stderr, "cannot write %s/mufu_report.txt\n", outdir.c_str());
        return 2;
    }
    g_t0 = std::chrono::steady_clock::now();
    g_threads = (int)std::max(1u, std::thread::hardware_concurrency());
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    say("device: %s (sm_%d%d), %d SMs; %d host threads; options:%s%s%s\n", prop.name, prop.major,
        prop.minor, prop.multiProcessorCount, g_threads, full ? " --full" : "",
        sampled ? " --sampled" : "", full || sampled ? "" : " none");
    int fail = do_ex2(outdir, full, sampled);
    say("  (%.1f s)\n", elapsed());
    fail |= do_expf(full, sampled);
    say("  (%.1f s)\n", elapsed());
    if (full) {
        int r = do_rsqrt(outdir);
        verdict(r == 0, "rsqrt.approx{,.ftz}.f32: the 4^k reduction holds and the table reproduces "
                "the unit");
        fail |= r;
    } else {
        say("\n== rsqrt ==\n  settled by the sweep (table exact); only samples are recorded (--full reruns it)\n");
    }
    fail |= do_samples(outdir);
    say("\n== summary ==\n");
    for (auto &s : g_summary)
        say("%s\n", s.c_str());
    say("\n%s (%.1f s)\n", fail ? "MUFU DUMP: some hypothesis or check failed (see above)"
                                : "MUFU DUMP: tables reproduce the hardware on every input checked",
        elapsed());
    fclose(g_report);
    return fail ? 1 : 0;
}
