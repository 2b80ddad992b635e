/* ref.h — independent C references of the shipped kernels, written from the specs
 * (/work/shared/spec: quant-transpose.md, moe-engram-mhc.md), not from the .tl kernels: what each
 * kernel computes, in the operation order the spec fixes, so that the emulator tests can compare
 * bytes. Every function takes host arrays with explicit strides (in elements). */
#ifndef TILEC_TESTS_REF_H
#define TILEC_TESTS_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- numbers (ref_numeric.c) ---- */
float ref_f32(uint32_t bits);
uint32_t ref_bits(float f);
/* bf16 -> f32: exact (the pattern shifted left by 16) */
float ref_bf16_to_f32(uint16_t h);
/* f32 -> bf16, round to nearest even (for making inputs) */
uint16_t ref_f32_to_bf16(float f);
/* f32 -> e4m3 (quant-transpose.md §6.1): round to nearest even on the f32 value, magnitudes
 * above 448 saturate to ±448, the sign of zero is kept, NaN -> 0x7F */
uint8_t ref_f32_to_e4m3(float x);
/* CUDA's accurate expf, the sequence of quant-transpose.md §0.3; the MUFU step is the numerics
 * library's model of ex2.approx.ftz (the one piece shared with the emulator) */
float ref_expf(float x);

/* ---- quant-transpose.md §2.20: batched_transpose ---- */
/* y[b, j, i] = x[b, i, j] as a bit copy of `elem` bytes; x has strides (sb, sm, 1), y is
 * contiguous (B, N, M) */
void ref_batched_transpose(const void *x, void *y, int B, int M, int N, int64_t sb, int64_t sm, size_t elem);

/* ---- quant-transpose.md §2.1 (+§1.2, §1.4): per_token_cast to e4m3, plain input ---- */
typedef struct RefCast {
    const void *x;        /* M x H, f32 or bf16, row stride sx */
    bool bf16;
    int M, H;
    int64_t sx;
    int G;                /* group size (G == H: one scale per row) */
    bool round;           /* round_sf */
    uint8_t *out;         /* M x H e4m3, contiguous */
    float *sf;            /* M x NG scales with strides (sf0, sf1), or NULL */
    int64_t sf0, sf1;
    uint8_t *sfp;         /* packed UE8M0: byte [g / 4][4 t + g % 4], rows of sp bytes, or NULL */
    int64_t sp;
} RefCast;
void ref_per_token_cast(const RefCast *c);

/* ---- moe-engram-mhc.md §1.2: topk_gate ---- */
/* idx[t, k]: the first K indices of a stable descending sort of scores[t, :] */
void ref_topk(const float *scores, int T, int E, int K, int64_t *idx);

/* ---- moe-engram-mhc.md §2.1: engram_hash ---- */
void ref_engram_hash(const int32_t *ids, const int64_t *mult, const int32_t *vocab, const int32_t *offsets, int T,
                     int MN, int L, int B, int32_t *out);

/* ---- moe-engram-mhc.md §3.2: sinkhorn_normalize forward ---- */
/* x, out: N matrices of H x H. Row sums add a row's elements in index order; column sums add
 * rows pairwise (0+1, 2+3, then the two halves), as every mHC kernel does (H = 4). */
void ref_sinkhorn(const float *x, float *out, int N, int H, int repeat, float eps);
/* the same in double precision, for a tolerance check of the f32 results */
void ref_sinkhorn_f64(const float *x, double *out, int N, int H, int repeat, double eps);

#endif
