/* mufu_dump.cu — pins down the GPU's MUFU results that CUDA's accurate expf and rsqrt depend
 * on (ex2.approx.ftz.f32, rsqrt.approx.f32, rsqrt.approx.ftz.f32): tests hypotheses about
 * their structure over every relevant f32 input, writes compact tables (difference from the
 * correctly rounded value, bit-packed) in the format compiler/numerics.h documents, installs
 * them into numerics.c in-process and checks tl_num_ex2_approx_ftz / tl_num_rsqrt_approx /
 * tl_num_expf against the hardware.
 *
 * Build, from the repository root (H200 = sm_90a):
 *   nvcc -O2 -std=c++17 -arch=sm_90a -Icompiler -Xcompiler -ffp-contract=off \
 *        -o mufu_dump tests/gpu/numerics/mufu_dump.cu compiler/numerics.c
 * Run: ./mufu_dump OUTDIR     (writes OUTDIR/mufu_ex2.bin, OUTDIR/mufu_rsqrt.bin and
 *      OUTDIR/mufu_report.txt; the report also goes to stdout). Exit 0 when the tables
 *      reproduce the hardware exactly on every input checked, 1 otherwise, 2 on errors.
 *
 * Which ex2 inputs matter. expf(x) (spec §0.3) evaluates ex2 at r = y - k with y ~ x*log2(e):
 *  - normal range: t = sat(x*log2e/252 + 0.5) lies in (0,1), m = floor(252 t), k = m - 126,
 *    so r = frac(y + 126) in [0,1) up to the rounding of t: r in about [-2^-16, 1 + 2^-16];
 *  - x > 87.34 (t saturates to 1): k = 126, r = y - 126 in [0, 2) until the result overflows;
 *  - x < -87.34 (t saturates to 0): k = -126, r = y + 126 < 0, and p * 2^-126 is a subnormal
 *    that rounds to 0 once p < 2^-25, so r in [-25, 0) matters.
 * The program covers every f32 r with |r| < 256 (2.26e9 inputs), which holds all of that
 * with margin and also the flush-to-zero and overflow edges. */
#include "numerics.h"

#include <cuda_runtime.h>

#include <algorithm>
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

/* ------------------------------------------------------------------------------------ */
/* device side */

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

/* the ex2 domain: every f32 with |r| < 256, positive patterns first */
constexpr uint32_t EX2_HALF = 0x43800000u;   /* bits of 256.0 */
constexpr uint64_t EX2_DOMAIN = 2ull * EX2_HALF;
__device__ __forceinline__ uint32_t ex2_dom(uint64_t u)
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

/* hypothesis: ex2(r) == ex2(cut(r, n, how)) for every r (after flushing subnormal r) */
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

/* up to 16 inputs that break the chosen cut hypothesis */
__global__ void k_ex2_cut_examples(int n, int how, Example *ex, unsigned *nex)
{
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t u = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; u < EX2_DOMAIN; u += stride) {
        float r = ftz(bf(ex2_dom(u)));
        float q = cut(r, n, how);
        uint32_t hw = fb(ex2(r)), hq = fb(ex2(q));
        if (hw != hq && *(volatile unsigned *)nex < 16) {
            unsigned k = atomicAdd(nex, 1u);
            if (k < 16)
                ex[k] = Example{fb(r), hw, fb(q), hq};
        }
    }
}

/* the grid table: ex2(i / 2^n) for i < 2^n */
__global__ void k_ex2_grid(int n, uint32_t *H)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (1u << n))
        H[i] = fb(ex2((float)i * bf((uint32_t)(127 - n) << 23)));
}

__device__ __forceinline__ uint32_t ex2_predict(float r, int n, int how, const uint32_t *H)
{
    float q = cut(ftz(r), n, how);
    float ip = floorf(q);
    uint32_t idx = (uint32_t)((q - ip) * bf((uint32_t)(127 + n) << 23));
    int e = (int)(H[idx] >> 23) + (int)ip;
    if (e <= 0)
        return 0;
    if (e >= 255)
        return 0x7F800000u;
    return (uint32_t)e << 23 | (H[idx] & 0x7FFFFFu);
}

/* separability: ex2(r) == 2^floor(q) * H[frac(q)] (flushed), counted by the sign of r */
__global__ void k_ex2_sep(int n, int how, const uint32_t *H, unsigned long long *counts,
                          Example *ex, unsigned *nex)
{
    uint32_t bad_pos = 0, bad_neg = 0;
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t u = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; u < EX2_DOMAIN; u += stride) {
        uint32_t rb = ex2_dom(u);
        float r = bf(rb);
        uint32_t hw = fb(ex2(r)), p = ex2_predict(r, n, how, H);
        if (hw != p) {
            if (rb >> 31)
                bad_neg++;
            else
                bad_pos++;
            if (*(volatile unsigned *)nex < 16) {
                unsigned k = atomicAdd(nex, 1u);
                if (k < 16)
                    ex[k] = Example{rb, hw, 0, p};
            }
        }
    }
    if (bad_pos)
        atomicAdd(&counts[0], (unsigned long long)bad_pos);
    if (bad_neg)
        atomicAdd(&counts[1], (unsigned long long)bad_neg);
}

/* hardware values at given inputs */
__global__ void k_ex2_at(const uint32_t *in, uint32_t *out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = fb(ex2(bf(in[i])));
}

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

/* expf over every |x| < 128: the inline sequence against CUDA's expf() */
constexpr uint32_t EXP_HALF = 0x43000000u;   /* 128.0 */
__global__ void k_expf_cmp(unsigned long long *count, Example *ex, unsigned *nex)
{
    uint32_t bad = 0;
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t u = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; u < 2ull * EXP_HALF; u += stride) {
        uint32_t xb = u < EXP_HALF ? (uint32_t)u : 0x80000000u | (uint32_t)(u - EXP_HALF);
        float x = bf(xb);
        uint32_t a = fb(expf_seq(x)), b = fb(expf(x));
        if (a != b) {
            bad++;
            if (*(volatile unsigned *)nex < 16) {
                unsigned k = atomicAdd(nex, 1u);
                if (k < 16)
                    ex[k] = Example{xb, b, 0, a};
            }
        }
    }
    if (bad)
        atomicAdd(count, (unsigned long long)bad);
}

__global__ void k_expf_at(const uint32_t *in, uint32_t *out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = fb(expf(bf(in[i])));
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

static int do_ex2(const std::string &outdir)
{
    int fail = 0;
    say("\n== ex2.approx.ftz.f32 ==\n");
    /* special inputs */
    const uint32_t specials[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x3F800000u,
                                 0xBF800000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u,
                                 0x7F800001u, 0x43000000u, 0x42FFFFFFu, 0xC2FC0000u, 0xC2FC0001u,
                                 0xC2FE0000u, 0xC3000000u, 0x3F000000u, 0x33800000u, 0xB3800000u};
    const size_t ns = sizeof specials / sizeof specials[0];
    uint32_t *din = dalloc<uint32_t>(ns), *dout = dalloc<uint32_t>(ns);
    CK(cudaMemcpy(din, specials, sizeof specials, cudaMemcpyHostToDevice));
    k_ex2_at<<<1, 64>>>(din, dout, ns);
    CK(cudaGetLastError());
    std::vector<uint32_t> sv = fetch(dout, ns);
    say("  special inputs (hardware / current numerics.c model):\n");
    for (size_t i = 0; i < ns; i++)
        say("    ex2(%08x = %a) = %08x   model %08x\n", specials[i], (double)tl_num_float(specials[i]),
            sv[i], tl_num_ex2_approx_ftz_model(specials[i]));

    /* hypothesis 1: the result depends only on the input cut to n fraction bits */
    unsigned long long *dcounts = dalloc<unsigned long long>(3 * NN);
    k_ex2_cut<<<GRID, BLOCK>>>(dcounts);
    CK(cudaGetLastError());
    std::vector<unsigned long long> counts = fetch(dcounts, 3 * NN);
    say("  hypothesis: ex2(r) == ex2(cut(r)) where cut keeps n fraction bits (all %llu r with |r| < 256,\n"
        "  subnormal r flushed first); mismatches per cut and n:\n", (unsigned long long)EX2_DOMAIN);
    say("     n   %14s %14s %14s\n", CUT_NAMES[0], CUT_NAMES[1], CUT_NAMES[2]);
    int best_n = -1, best_how = 0;
    unsigned long long best = ~0ull;
    for (int n = 0; n < NN; n++) {
        say("    %2d   %14llu %14llu %14llu\n", NMIN + n, counts[n], counts[NN + n], counts[2 * NN + n]);
        for (int h = 0; h < 3; h++)
            if (counts[h * NN + n] < best) {
                best = counts[h * NN + n];
                best_n = NMIN + n;
                best_how = h;
            }
    }
    say("  best: cut %s to %d fraction bits, %llu mismatches%s\n", CUT_NAMES[best_how], best_n, best,
        best == 0 ? " — the result depends only on that cut of the input" : "");
    Example *dex = dalloc<Example>(16);
    unsigned *dnex = dalloc<unsigned>(1);
    if (best) {
        k_ex2_cut_examples<<<GRID, BLOCK>>>(best_n, best_how, dex, dnex);
        CK(cudaGetLastError());
        print_examples("cut mismatch", dex, dnex, true);
        fail = 1;
    }
    if (best_n > 24) {
        say("  the dependence needs more than 24 fraction bits: a grid table cannot hold it;"
            " no ex2 table written\n");
        return 1;
    }
    int N = best_n;

    /* hypothesis 2: ex2(i + f) == 2^i * ex2(f) on the grid, flushed below 2^-126 */
    uint32_t *dH = dalloc<uint32_t>((size_t)1 << N);
    k_ex2_grid<<<(unsigned)(((1u << N) + 255) / 256), 256>>>(N, dH);
    CK(cudaGetLastError());
    unsigned long long *dsep = dalloc<unsigned long long>(2);
    CK(cudaMemset(dnex, 0, sizeof(unsigned)));
    k_ex2_sep<<<GRID, BLOCK>>>(N, best_how, dH, dsep, dex, dnex);
    CK(cudaGetLastError());
    std::vector<unsigned long long> sep = fetch(dsep, 2);
    say("  hypothesis: ex2(r) == 2^floor(q) * ex2(q - floor(q)), q = cut(r), flushed below 2^-126:\n"
        "    mismatches: %llu for r >= 0, %llu for r < 0\n", sep[0], sep[1]);
    if (sep[0] || sep[1]) {
        print_examples("separability", dex, dnex, false);
        fail = 1;
    }

    /* the table: delta from the correctly rounded 2^f */
    std::vector<uint32_t> H = fetch(dH, (size_t)1 << N);
    std::vector<int32_t> delta(H.size());
    std::vector<double> ybits(H.size());
    parallel_for(H.size(), [&](int, size_t lo, size_t hi) {
        for (size_t i = lo; i < hi; i++) {
            uint32_t f = tl_num_bits((float)ldexp((double)i, -N));
            delta[i] = (int32_t)(H[i] - tl_num_exp2_cr(f));
            ybits[i] = (double)H[i] - (double)0x3F800000u;
        }
    });
    histogram("grid 2^-n", delta);
    fit_report("ex2 on [0,1)", ybits);
    size_t sz = tl_num_mufu_encode(1, (unsigned)N, (unsigned)best_how, delta.data(), nullptr, 0);
    if (sz == 0 || sz > MAX_TABLE_BYTES + 64) {
        say("  the deltas do not fit the table format within 8 MB (size %zu); no ex2 table written\n", sz);
        return 1;
    }
    std::vector<uint8_t> blob(sz);
    tl_num_mufu_encode(1, (unsigned)N, (unsigned)best_how, delta.data(), blob.data(), sz);
    if (!write_file(outdir + "/mufu_ex2.bin", blob))
        return 1;
    char err[200];
    if (tl_num_mufu_install(blob.data(), blob.size(), err, sizeof err) != 0) {
        say("  ERROR: install: %s\n", err);
        return 1;
    }

    /* numerics.c with the table against the hardware: every 61st r of the domain, the
     * specials, and every r in [-26, -24] and [1.99, 2.01] */
    std::vector<uint32_t> in;
    for (uint64_t u = 0; u < EX2_DOMAIN; u += 61)
        in.push_back(u < EX2_HALF ? (uint32_t)u : 0x80000000u | (uint32_t)(u - EX2_HALF));
    for (uint32_t b = 0xC1C00000u; b <= 0xC1D00000u; b++)
        in.push_back(b);
    for (uint32_t b = 0x3FFEB852u; b <= 0x4000A3D7u; b++)
        in.push_back(b);
    in.insert(in.end(), specials, specials + ns);
    uint32_t *dIn = dalloc<uint32_t>(in.size()), *dOut = dalloc<uint32_t>(in.size());
    CK(cudaMemcpy(dIn, in.data(), in.size() * 4, cudaMemcpyHostToDevice));
    k_ex2_at<<<(unsigned)((in.size() + 255) / 256), 256>>>(dIn, dOut, in.size());
    CK(cudaGetLastError());
    std::vector<uint32_t> hw = fetch(dOut, in.size());
    std::vector<uint64_t> bad(g_threads, 0);
    std::vector<std::string> exs(g_threads);
    parallel_for(in.size(), [&](int t, size_t lo, size_t hi) {
        for (size_t i = lo; i < hi; i++) {
            uint32_t s = tl_num_ex2_approx_ftz(in[i]);
            if (s != hw[i] && bad[t]++ < 2) {
                char b[120];
                snprintf(b, sizeof b, "    in=%08x hw=%08x numerics=%08x\n", in[i], hw[i], s);
                exs[t] += b;
            }
        }
    });
    uint64_t nbad = 0;
    for (int t = 0; t < g_threads; t++)
        nbad += bad[t];
    say("  tl_num_ex2_approx_ftz with the table: %zu inputs checked, %llu mismatches\n", in.size(),
        (unsigned long long)nbad);
    for (auto &s : exs)
        say("%s", s.c_str());
    CK(cudaFree(dIn));
    CK(cudaFree(dOut));
    CK(cudaFree(dH));
    return fail | (nbad != 0);
}

static int do_expf()
{
    int fail = 0;
    say("\n== expf (CUDA's accurate expf, spec §0.3) ==\n");
    unsigned long long *dc = dalloc<unsigned long long>(1);
    Example *dex = dalloc<Example>(16);
    unsigned *dnex = dalloc<unsigned>(1);
    k_expf_cmp<<<GRID, BLOCK>>>(dc, dex, dnex);
    CK(cudaGetLastError());
    unsigned long long c = fetch(dc, 1)[0];
    say("  the spec's inline instruction sequence vs CUDA expf(), every |x| < 128 (%llu inputs): "
        "%llu mismatches\n", 2ull * EXP_HALF, c);
    if (c) {
        print_examples("expf", dex, dnex, false);
        fail = 1;
    }
    if (!tl_num_ex2_is_exact()) {
        say("  no ex2 table installed: tl_num_expf not checked against the hardware\n");
        return 1;
    }
    /* tl_num_expf against expf(): every 61st |x| < 128, all of the subnormal-result range
     * [-104, -87], all of [87, 89], specials */
    std::vector<uint32_t> in;
    for (uint64_t u = 0; u < 2ull * EXP_HALF; u += 61)
        in.push_back(u < EXP_HALF ? (uint32_t)u : 0x80000000u | (uint32_t)(u - EXP_HALF));
    for (uint32_t b = 0xC2AE0000u; b <= 0xC2D00000u; b++)
        in.push_back(b);
    for (uint32_t b = 0x42AE0000u; b <= 0x42B20000u; b++)
        in.push_back(b);
    const uint32_t sp[] = {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u, 0x43800000u,
                           0xC3800000u, 0x7F7FFFFFu, 0xFF7FFFFFu};
    in.insert(in.end(), sp, sp + sizeof sp / sizeof sp[0]);
    uint32_t *dIn = dalloc<uint32_t>(in.size()), *dOut = dalloc<uint32_t>(in.size());
    CK(cudaMemcpy(dIn, in.data(), in.size() * 4, cudaMemcpyHostToDevice));
    k_expf_at<<<(unsigned)((in.size() + 255) / 256), 256>>>(dIn, dOut, in.size());
    CK(cudaGetLastError());
    std::vector<uint32_t> hw = fetch(dOut, in.size());
    std::vector<uint64_t> bad(g_threads, 0);
    std::vector<std::string> exs(g_threads);
    parallel_for(in.size(), [&](int t, size_t lo, size_t hi) {
        for (size_t i = lo; i < hi; i++) {
            uint32_t s = tl_num_expf(in[i]);
            if (s != hw[i] && bad[t]++ < 2) {
                char b[120];
                snprintf(b, sizeof b, "    x=%08x (%a) expf=%08x tl_num_expf=%08x\n", in[i],
                         (double)tl_num_float(in[i]), hw[i], s);
                exs[t] += b;
            }
        }
    });
    uint64_t nbad = 0;
    for (int t = 0; t < g_threads; t++)
        nbad += bad[t];
    say("  tl_num_expf (with the ex2 table) vs CUDA expf(): %zu inputs, %llu mismatches\n", in.size(),
        (unsigned long long)nbad);
    for (auto &s : exs)
        say("%s", s.c_str());
    return fail | (nbad != 0);
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
    k_rsq_at<<<1, 64>>>(din, dout, doutf, ns);
    CK(cudaGetLastError());
    std::vector<uint32_t> sv = fetch(dout, ns), svf = fetch(doutf, ns);
    say("  special inputs: rsqrt / rsqrt.ftz (hardware), model\n");
    for (size_t i = 0; i < ns; i++)
        say("    rsqrt(%08x) = %08x / %08x   model %08x / %08x\n", specials[i], sv[i], svf[i],
            tl_num_rsqrt_approx_model(specials[i], false), tl_num_rsqrt_approx_model(specials[i], true));

    uint32_t *dH = dalloc<uint32_t>(1u << 24), *dHf = dalloc<uint32_t>(1u << 24);
    k_rsq_grid<<<(1u << 24) / 256, 256>>>(dH, dHf);
    CK(cudaGetLastError());
    std::vector<uint32_t> H = fetch(dH, 1u << 24), Hf = fetch(dHf, 1u << 24);
    size_t diff_ftz = 0;
    for (size_t i = 0; i < H.size(); i++)
        diff_ftz += H[i] != Hf[i];
    say("  on [1,4): rsqrt and rsqrt.ftz differ at %zu of %zu inputs\n", diff_ftz, H.size());

    unsigned long long *dcut = dalloc<unsigned long long>(12);
    k_rsq_cut<<<GRID, BLOCK>>>(dH, dcut);
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
    k_rsq_all<<<GRID, BLOCK>>>(dH, dHf, dc, dex, dnex);
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
    k_rsq_at<<<(unsigned)((in.size() + 255) / 256), 256>>>(dIn, dO, dOf, in.size());
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

/* MUFU_DUMP_NO_MAIN lets a host-only harness include this file to exercise the fits and
 * table code without a GPU */
#ifndef MUFU_DUMP_NO_MAIN
int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
        return 2;
    }
    std::string outdir = argv[1];
    g_report = fopen((outdir + "/mufu_report.txt").c_str(), "w");
    if (!g_report) {
        fprintf(stderr, "cannot write %s/mufu_report.txt\n", outdir.c_str());
        return 2;
    }
    g_threads = (int)std::max(1u, std::thread::hardware_concurrency());
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    say("device: %s (sm_%d%d), %d SMs\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
    int fail = do_ex2(outdir);
    fail |= do_expf();
    fail |= do_rsqrt(outdir);
    say("\n%s\n", fail ? "MUFU DUMP: some hypothesis or check failed (see above)"
                       : "MUFU DUMP: tables reproduce the hardware on every input checked");
    fclose(g_report);
    return fail ? 1 : 0;
}
#endif
