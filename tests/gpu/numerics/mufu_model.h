/* mufu_model.h — the predictions of ex2.approx.ftz.f32 that mufu_dump.cu tests on the GPU,
 * written once for the device and the host (tests/numerics checks them against numerics.c
 * without a GPU), and the layout of the samples file mufu_dump writes. C and CUDA C++. */
#ifndef TILEC_MUFU_MODEL_H
#define TILEC_MUFU_MODEL_H

#include <stdint.h>

#ifdef __CUDACC__
#define MUFU_HD __host__ __device__ __forceinline__
#else
#define MUFU_HD static inline
#endif

/* The fraction grid: ex2 reads |r| cut toward zero to 23 fraction bits (the H200 sweep: 0
 * mismatches over every |r| < 256). */
enum { MUFU_FBITS = 23 };
#define MUFU_FMASK ((1u << MUFU_FBITS) - 1)

/* |r| cut toward zero to n + f / 2^23 (subnormal r flushed to 0 first), done on the bits so
 * that host and device agree exactly; |r| < 256, so m < 2^31. */
typedef struct MufuSplit { uint32_t n, f; } MufuSplit;

MUFU_HD MufuSplit mufu_split(uint32_t rb)
{
    uint32_t mag = rb & 0x7FFFFFFFu, e = mag >> 23;
    MufuSplit s = {0, 0};
    if (e == 0)
        return s;
    uint32_t mant = (mag & 0x7FFFFFu) | 0x800000u;
    uint32_t m;                                   /* |r| * 2^23, truncated */
    if (e >= 127)
        m = mant << (e - 127);
    else
        m = 127 - e >= 24 ? 0 : mant >> (127 - e);
    s.n = m >> MUFU_FBITS;
    s.f = m & MUFU_FMASK;
    return s;
}

/* y * 2^sc for a normal y, as the unit's exponent path: below 2^-126 -> +0, overflow -> inf */
MUFU_HD uint32_t mufu_scale(uint32_t y, int sc)
{
    int e = (int)(y >> 23) + sc;
    if (e <= 0)
        return 0;
    if (e >= 255)
        return 0x7F800000u;
    return (uint32_t)e << 23 | (y & 0x7FFFFFu);
}

/* The hypotheses, for r in the domain (|r| < 256, not NaN). P[f] = ex2(f / 2^23) and
 * M[f] = ex2(-f / 2^23) as measured on the unit. */

/* r >= 0: 2^n * P[f] */
MUFU_HD uint32_t mufu_pred_pos(uint32_t rb, const uint32_t *P)
{
    MufuSplit s = mufu_split(rb);
    return mufu_scale(P[s.f], (int)s.n);
}

/* r < 0, sign-magnitude: 2^-n * M[f] */
MUFU_HD uint32_t mufu_pred_signmag(uint32_t rb, const uint32_t *M)
{
    MufuSplit s = mufu_split(rb);
    return mufu_scale(M[s.f], -(int)s.n);
}

/* r < 0, one's complement: the fraction bits inverted index P one exponent lower,
 * 2^-(n+1) * P[2^23 - 1 - f]; an integer input (f = 0) gives 2^-n */
MUFU_HD uint32_t mufu_pred_ones(uint32_t rb, const uint32_t *P)
{
    MufuSplit s = mufu_split(rb);
    if (s.f == 0)
        return mufu_scale(0x3F800000u, -(int)s.n);
    return mufu_scale(P[MUFU_FMASK - s.f], -(int)s.n - 1);
}

/* r < 0, two's complement (floor split, what the H200 sweep refuted): 2^-(n+1) * P[2^23 - f] */
MUFU_HD uint32_t mufu_pred_twos(uint32_t rb, const uint32_t *P)
{
    MufuSplit s = mufu_split(rb);
    if (s.f == 0)
        return mufu_scale(0x3F800000u, -(int)s.n);
    return mufu_scale(P[(MUFU_FMASK + 1) - s.f], -(int)s.n - 1);
}

/* ---- samples file (mufu_samples.bin), little-endian ----
 *   0  char[8] magic "TLMUFUS1"
 *   8  u32 count of records
 *  12  u32 FNV-1a 32-bit hash of the records
 *  16  count records of three u32: op, input bits, the unit's result bits
 * op: MUFU_OP_* below. */
enum {
    MUFU_OP_EX2 = 1,        /* ex2.approx.ftz.f32 */
    MUFU_OP_RSQRT = 2,      /* rsqrt.approx.f32 */
    MUFU_OP_RSQRT_FTZ = 3,  /* rsqrt.approx.ftz.f32 */
    MUFU_OP_EXPF = 4,       /* CUDA's expf() (nvcc, no fast math) */
};
#define MUFU_SAMPLES_MAGIC "TLMUFUS1"

#endif
