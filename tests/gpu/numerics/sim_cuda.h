/* sim_cuda.h — a CPU stand-in for the CUDA runtime and the MUFU unit, so that mufu_dump.cu
 * can be built with a host C++ compiler (build.sh --sim) and run end to end without a GPU:
 * kernels run block by block on host threads, device memory is host memory, and the "unit"
 * answers from the tables in numerics/data (ex2 with the one's complement rule for r < 0).
 * It tests the program, not the hardware: a simulated run must pass every hypothesis the
 * tables encode and fail the two's complement one. */
#ifndef TILEC_SIM_CUDA_H
#define TILEC_SIM_CUDA_H

#include "mufu_model.h"
#include "numerics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#ifndef MUFU_SIM_DATA
#error "define MUFU_SIM_DATA as the directory that holds mufu_ex2.bin and mufu_rsqrt.bin"
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline

/* ---- runtime ---- */

typedef int cudaError_t;
enum { cudaSuccess = 0 };
enum cudaMemcpyKind { cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost };

struct cudaDeviceProp {
    char name[64];
    int major, minor, multiProcessorCount;
};

static inline const char *cudaGetErrorString(cudaError_t) { return "simulated CUDA error"; }
static inline cudaError_t cudaGetLastError(void) { return cudaSuccess; }

static inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int)
{
    snprintf(p->name, sizeof p->name, "CPU simulation of the tables in %s", MUFU_SIM_DATA);
    p->major = 9;
    p->minor = 0;
    p->multiProcessorCount = 132;
    return cudaSuccess;
}

template <class T> static inline cudaError_t cudaMalloc(T **p, size_t n)
{
    *p = (T *)malloc(n ? n : 1);
    return *p ? cudaSuccess : 2;
}

static inline cudaError_t cudaMemset(void *p, int v, size_t n)
{
    memset(p, v, n);
    return cudaSuccess;
}

static inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind)
{
    memcpy(d, s, n);
    return cudaSuccess;
}

static inline cudaError_t cudaFree(void *p)
{
    free(p);
    return cudaSuccess;
}

/* ---- execution: blocks spread over host threads, the threads of a block in turn (the
 * kernels of mufu_dump use no barriers or shared memory) ---- */

struct SimDim { unsigned x; };
static SimDim gridDim, blockDim;
static thread_local SimDim blockIdx, threadIdx;

static inline void sim_launch(unsigned grid, unsigned block, const std::function<void()> &body)
{
    gridDim.x = grid;
    blockDim.x = block;
    unsigned nt = std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::thread> th;
    for (unsigned t = 0; t < nt; t++)
        th.emplace_back([=, &body] {
            for (unsigned b = t; b < grid; b += nt)
                for (unsigned i = 0; i < block; i++) {
                    blockIdx.x = b;
                    threadIdx.x = i;
                    body();
                }
        });
    for (auto &x : th)
        x.join();
}

#define LAUNCH(kernel, grid, block, ...) sim_launch((unsigned)(grid), (unsigned)(block), [&] { kernel(__VA_ARGS__); })

static inline unsigned atomicAdd(unsigned *p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
static inline int __clz(uint32_t v) { return v ? __builtin_clz(v) : 32; }

static inline uint32_t fb(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float bf(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- the simulated unit: its own copy of the tables' values, so that mufu_dump installing
 * and removing tables in numerics.c does not change the "hardware" ---- */

struct SimUnit {
    std::vector<uint32_t> P, R;   /* ex2 on the [0,1) grid; rsqrt on [1,4) by 2^-23 */

    static void load(const char *name)
    {
        std::string path = std::string(MUFU_SIM_DATA) + "/" + name;
        FILE *f = fopen(path.c_str(), "rb");
        std::vector<uint8_t> b;
        if (f) {
            fseek(f, 0, SEEK_END);
            b.resize((size_t)ftell(f));
            rewind(f);
            if (fread(b.data(), 1, b.size(), f) != b.size())
                b.clear();
            fclose(f);
        }
        char err[200] = "";
        if (b.empty() || tl_num_mufu_install(b.data(), b.size(), err, sizeof err) != 0) {
            fprintf(stderr, "sim: cannot use %s: %s\n", path.c_str(), b.empty() ? "unreadable" : err);
            exit(2);
        }
    }

    SimUnit()
    {
        load("mufu_ex2.bin");
        load("mufu_rsqrt.bin");
        P.resize((size_t)MUFU_FMASK + 1);
        R.resize((size_t)1 << 24);
        for (uint32_t i = 0; i <= MUFU_FMASK; i++)
            P[i] = tl_num_ex2_approx_ftz(tl_num_bits((float)ldexp(i, -MUFU_FBITS)));
        for (uint32_t i = 0; i < (1u << 24); i++)
            R[i] = tl_num_rsqrt_approx(0x3F800000u + i, false);
        for (unsigned k = 1; k <= 3; k++)
            tl_num_mufu_uninstall(k);
    }
};

static SimUnit g_sim_unit;

static inline float ex2(float x)
{
    uint32_t rb = fb(x), mag = rb & 0x7FFFFFFFu;
    if (mag > 0x7F800000u)
        return bf(0x7FFFFFFFu);
    if (mag >= 0x43800000u)
        return bf(rb >> 31 ? 0u : 0x7F800000u);
    const uint32_t *P = g_sim_unit.P.data();
    return bf(rb >> 31 ? mufu_pred_ones(rb, P) : mufu_pred_pos(rb, P));
}

static inline float sim_rsq(float x, bool ftz)
{
    uint32_t xb = fb(x), mag = xb & 0x7FFFFFFFu;
    if (mag > 0x7F800000u)
        return bf(0x7FFFFFFFu);
    if (mag == 0 || (ftz && mag < 0x00800000u))
        return bf((xb & 0x80000000u) | 0x7F800000u);
    if (xb >> 31)
        return bf(0x7FFFFFFFu);
    if (mag == 0x7F800000u)
        return 0.0f;
    int bexp = (int)(mag >> 23);
    uint32_t frac = mag & 0x7FFFFFu;
    if (bexp == 0) {
        int lz = __builtin_clz(frac) - 8;
        frac = (frac << lz) & 0x7FFFFFu;
        bexp = 1 - lz;
    }
    int e = bexp - 127, odd = e & 1, k = (e - odd) / 2;
    return bf(g_sim_unit.R[(uint32_t)odd << 23 | frac] - ((uint32_t)k << 23));
}

static inline float rsq(float x) { return sim_rsq(x, false); }
static inline float rsq_ftz(float x) { return sim_rsq(x, true); }

/* the spec §0.3 sequence on the simulated ex2; CUDA's expf is the same sequence */
static inline float expf_seq(float x)
{
    float t = fmaf(x, bf(0x3BBB989Du), 0.5f);
    t = !(t > 0.0f) ? 0.0f : t > 1.0f ? 1.0f : t;
    float j = (float)floor((double)t * 252.0 + 12582913.0);
    float k = j - 12583039.0f;
    float r = fmaf(x, bf(0x3FB8AA3Bu), -k);
    r = fmaf(x, bf(0x32A57060u), r);
    float res = ex2(r) * bf(fb(j) << 23);
    return (fb(res) & 0x7FFFFFFFu) > 0x7F800000u ? bf(0x7FFFFFFFu) : res;
}

static inline float cuda_expf(float x) { return expf_seq(x); }

#endif
