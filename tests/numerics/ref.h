/* ref.h — an independent reference for the conversions in numerics/numerics.c: every format
 * is enumerated as a sorted list of doubles and a value is rounded by searching its two
 * neighbours and applying the rounding rule and the saturation explicitly. Also the tallies
 * and the PRNG the numerics tests share. */
#ifndef TILEC_TEST_NUMERICS_REF_H
#define TILEC_TEST_NUMERICS_REF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* A binary format described by its fields, not by code: decoded values come from
 * (-1)^s * 2^(E - bias) * (1 + M/2^mbits), or 2^(1 - bias) * M/2^mbits when E = 0. */
typedef struct RefFmt {
    const char *name;
    int ebits, mbits, bias;
    int max_code;        /* magnitude code of the largest finite value */
    int nan_code;        /* whole code the hardware produces for NaN */
    bool satfinite;      /* overflow / inf saturate to max; else IEEE with inf */
    int sign_shift;
    int nvals;           /* number of non-negative finite values = max_code + 1 */
    double *vals;        /* vals[c] = value of magnitude code c; vals[nvals] = "beyond";
                          * then +inf up to npow2 entries */
    int npow2;
    int bin_lo[256], bin_hi[256];  /* search range per f32 exponent field */
} RefFmt;

extern RefFmt REF_F16, REF_BF16, REF_E4M3, REF_E5M2, REF_E2M1;

/* Builds the value tables (call once before anything else). */
void ref_init(void);

/* Value of a magnitude code by the field formula. */
double ref_decode_mag(const RefFmt *f, int code);

/* Rounds the f32 value x into f: out[0..3] = codes for RN, RZ, RM, RP. */
void ref_round_f32(const RefFmt *f, uint32_t x, uint32_t out[4]);

/* ue8m0 by search over 2^(b-127): out[0] RZ, out[1] RZ satfinite, out[2] RP, out[3] RP sat. */
void ref_ue8m0(uint32_t x, uint8_t out[4]);

/* The spec's E5M6 pseudocode (§6.3), with fp16_bits_RZ written as the spec describes it.
 * Defined for |x| < 65536 (fp32 exponent field <= 142) and non-NaN x. */
uint16_t ref_e5m6_spec(uint32_t x);

/* f32 bits <-> double */
double ref_f32_value(uint32_t x);

/* ---- tallies ---- */
typedef struct Tally {
    const char *name;
    uint64_t checked, bad;
    char first[4][160];
} Tally;

/* counts one check; on failure records the message (the first four are kept) */
#define tally_hit(t, ok, ...)                 \
    do {                                      \
        Tally *tally_t_ = (t);                \
        tally_t_->checked++;                  \
        if (!(ok))                            \
            tally_fail(tally_t_, __VA_ARGS__); \
    } while (0)
void tally_fail(Tally *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tally_merge(Tally *into, const Tally *from);
/* prints "name: N checked, M mismatches" and the first mismatches; returns 1 if any */
int tally_report(const Tally *t);

/* ---- PRNG (splitmix64) ---- */
static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double now_seconds(void);

#endif
