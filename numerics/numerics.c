/* numerics.c — bit-exact software versions of the GPU's number conversions, TileKernels'
 * E5M6 and scale-factor rules, correctly rounded exp2/rsqrt references, and the MUFU models
 * (with optional measured tables) behind CUDA's accurate expf. See numerics.h. */
#include "numerics.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#if FLT_EVAL_METHOD != 0
#error "numerics.c needs float arithmetic evaluated in float (FLT_EVAL_METHOD == 0)"
#endif

enum { F32_NAN = 0x7FFFFFFFu, F32_INF = 0x7F800000u, F32_ONE = 0x3F800000u };

static bool f32_is_nan(uint32_t f) { return (f & 0x7FFFFFFFu) > F32_INF; }

/* ------------------------------------------------------------------------------------ */
/* Narrowing from f32: one rounding core for every target that is a binary format with a
 * hidden bit (f16, bf16, e4m3, e5m2, e2m1). */

typedef struct NarrowFmt {
    int mbits;           /* stored mantissa bits */
    int emin;            /* unbiased exponent of the smallest normal number */
    uint32_t max_code;   /* magnitude code of the largest finite value */
    uint32_t nan_code;   /* whole code produced for any NaN input */
    int sign_shift;      /* bit position of the sign */
    bool satfinite;      /* overflow and ±inf give ±max; otherwise IEEE (inf = max_code+1) */
} NarrowFmt;

static const NarrowFmt FMT_F16 = {10, -14, 0x7BFF, 0x7FFF, 15, false};
static const NarrowFmt FMT_BF16 = {7, -126, 0x7F7F, 0x7FFF, 15, false};
static const NarrowFmt FMT_E4M3 = {3, -6, 0x7E, 0x7F, 7, true};
static const NarrowFmt FMT_E5M2 = {2, -14, 0x7B, 0x7F, 7, true};
static const NarrowFmt FMT_E2M1 = {1, 0, 0x7, 0x7, 3, true};

static uint32_t narrow_overflow(const NarrowFmt *fmt, bool neg, TlNumRound rnd)
{
    if (fmt->satfinite)
        return fmt->max_code;
    /* IEEE: a rounding direction that points away from zero reaches infinity */
    bool to_inf = rnd == TL_NUM_RN || (rnd == TL_NUM_RP && !neg) || (rnd == TL_NUM_RM && neg);
    return to_inf ? fmt->max_code + 1 : fmt->max_code;
}

static uint32_t narrow_from_f32(uint32_t f, const NarrowFmt *fmt, TlNumRound rnd)
{
    if (f32_is_nan(f))
        return fmt->nan_code;
    bool neg = f >> 31;
    uint32_t sign = (uint32_t)neg << fmt->sign_shift;
    uint32_t mag = f & 0x7FFFFFFFu;
    if (mag == F32_INF)
        return sign | (fmt->satfinite ? fmt->max_code : fmt->max_code + 1);
    if (mag == 0)
        return sign;

    /* |x| = sig * 2^exp exactly */
    int bexp = (int)(mag >> 23);
    uint64_t sig = mag & 0x7FFFFFu;
    int exp;
    if (bexp == 0) {
        exp = -149;
    } else {
        sig |= 0x800000u;
        exp = bexp - 150;
    }
    int top = 63 - __builtin_clzll(sig) + exp;     /* floor(log2 |x|) */
    int ebin = top > fmt->emin ? top : fmt->emin;  /* binade of the result grid */
    int qexp = ebin - fmt->mbits;                  /* log2 of the grid spacing there */
    int shift = qexp - exp;                        /* > 0 for every format here */
    if (shift > 40)
        shift = 40;                                /* sig < 2^24: all of it is sticky */
    uint64_t n = sig >> shift;
    uint64_t rem = sig & ((1ull << shift) - 1);
    uint64_t half = 1ull << (shift - 1);
    bool up;
    switch (rnd) {
    case TL_NUM_RN: up = rem > half || (rem == half && (n & 1)); break;
    case TL_NUM_RP: up = rem != 0 && !neg; break;
    case TL_NUM_RM: up = rem != 0 && neg; break;
    default: up = false; break;
    }
    n += up;
    /* grid index: a carry out of the mantissa lands on the next exponent by itself */
    uint64_t code = ((uint64_t)(ebin - fmt->emin) << fmt->mbits) + n;
    if (code > fmt->max_code)
        return sign | narrow_overflow(fmt, neg, rnd);
    return sign | (uint32_t)code;
}

uint16_t tl_num_f32_to_bf16(uint32_t f, TlNumRound rnd)
{
    return (uint16_t)narrow_from_f32(f, &FMT_BF16, rnd);
}

uint32_t tl_num_bf16x2_from_f32(uint32_t a, uint32_t b, TlNumRound rnd)
{
    return (uint32_t)tl_num_f32_to_bf16(a, rnd) << 16 | tl_num_f32_to_bf16(b, rnd);
}

uint32_t tl_num_bf16_to_f32(uint16_t h) { return (uint32_t)h << 16; }

uint16_t tl_num_f32_to_f16(uint32_t f, TlNumRound rnd)
{
    return (uint16_t)narrow_from_f32(f, &FMT_F16, rnd);
}

uint32_t tl_num_f16x2_from_f32(uint32_t a, uint32_t b, TlNumRound rnd)
{
    return (uint32_t)tl_num_f32_to_f16(a, rnd) << 16 | tl_num_f32_to_f16(b, rnd);
}

uint32_t tl_num_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1F, m = h & 0x3FFu;
    if (e == 0x1F)
        return m ? F32_NAN : sign | F32_INF;
    if (e == 0) {
        if (m == 0)
            return sign;
        /* subnormal m * 2^-24: normalise so that bit 10 is the hidden bit */
        int lz = __builtin_clz(m) - 21;  /* shifts that bring the top bit to bit 10 */
        m <<= lz;
        return sign | (uint32_t)(113 - lz) << 23 | (m & 0x3FFu) << 13;
    }
    return sign | (e + 112) << 23 | m << 13;
}

/* ---- FP8 ---- */

uint8_t tl_num_f32_to_e4m3(uint32_t f) { return (uint8_t)narrow_from_f32(f, &FMT_E4M3, TL_NUM_RN); }
uint8_t tl_num_f32_to_e5m2(uint32_t f) { return (uint8_t)narrow_from_f32(f, &FMT_E5M2, TL_NUM_RN); }

uint16_t tl_num_e4m3x2_from_f32(uint32_t a, uint32_t b)
{
    return (uint16_t)(tl_num_f32_to_e4m3(a) << 8 | tl_num_f32_to_e4m3(b));
}

uint16_t tl_num_e5m2x2_from_f32(uint32_t a, uint32_t b)
{
    return (uint16_t)(tl_num_f32_to_e5m2(a) << 8 | tl_num_f32_to_e5m2(b));
}

/* f16 -> f32 is exact for numbers, so converting through it rounds only once */
uint8_t tl_num_f16_to_e4m3(uint16_t h) { return tl_num_f32_to_e4m3(tl_num_f16_to_f32(h)); }
uint8_t tl_num_f16_to_e5m2(uint16_t h) { return tl_num_f32_to_e5m2(tl_num_f16_to_f32(h)); }

uint16_t tl_num_e4m3x2_from_f16x2(uint32_t a)
{
    return (uint16_t)(tl_num_f16_to_e4m3((uint16_t)(a >> 16)) << 8 | tl_num_f16_to_e4m3((uint16_t)a));
}

uint16_t tl_num_e5m2x2_from_f16x2(uint32_t a)
{
    return (uint16_t)(tl_num_f16_to_e5m2((uint16_t)(a >> 16)) << 8 | tl_num_f16_to_e5m2((uint16_t)a));
}

uint16_t tl_num_e4m3_to_f16(uint8_t q)
{
    uint16_t sign = (uint16_t)((q & 0x80u) << 8);
    unsigned e = (q >> 3) & 0xF, m = q & 7u;
    if ((q & 0x7F) == 0x7F)
        return 0x7FFF;
    if (e == 0) {
        if (m == 0)
            return sign;
        /* m * 2^-9 is a normal f16: place the top set bit as the hidden bit */
        int top = 31 - __builtin_clz(m);     /* 0..2 */
        unsigned frac = (m << (10 - top)) & 0x3FFu;
        return (uint16_t)(sign | (unsigned)(top - 9 + 15) << 10 | frac);
    }
    return (uint16_t)(sign | (e - 7 + 15) << 10 | m << 7);
}

uint16_t tl_num_e5m2_to_f16(uint8_t q)
{
    if ((q & 0x7F) > 0x7C)
        return 0x7FFF;
    return (uint16_t)(q << 8);   /* e5m2 is the top byte of an f16 */
}

uint32_t tl_num_f16x2_from_e4m3x2(uint16_t a)
{
    return (uint32_t)tl_num_e4m3_to_f16((uint8_t)(a >> 8)) << 16 | tl_num_e4m3_to_f16((uint8_t)a);
}

uint32_t tl_num_f16x2_from_e5m2x2(uint16_t a)
{
    return (uint32_t)tl_num_e5m2_to_f16((uint8_t)(a >> 8)) << 16 | tl_num_e5m2_to_f16((uint8_t)a);
}

uint32_t tl_num_e4m3_to_f32(uint8_t q) { return tl_num_f16_to_f32(tl_num_e4m3_to_f16(q)); }
uint32_t tl_num_e5m2_to_f32(uint8_t q) { return tl_num_f16_to_f32(tl_num_e5m2_to_f16(q)); }

/* ---- FP4 e2m1 ---- */

uint8_t tl_num_f32_to_e2m1(uint32_t f) { return (uint8_t)narrow_from_f32(f, &FMT_E2M1, TL_NUM_RN); }

uint8_t tl_num_e2m1x2_from_f32(uint32_t a, uint32_t b)
{
    return (uint8_t)(tl_num_f32_to_e2m1(a) << 4 | tl_num_f32_to_e2m1(b));
}

/* f16 patterns of the eight magnitudes 0 0.5 1 1.5 2 3 4 6 */
static const uint16_t E2M1_F16[8] = {0x0000, 0x3800, 0x3C00, 0x3E00, 0x4000, 0x4200, 0x4400, 0x4600};

uint16_t tl_num_e2m1_to_f16(uint8_t code)
{
    return (uint16_t)((code & 8u) << 12 | E2M1_F16[code & 7u]);
}

uint32_t tl_num_f16x2_from_e2m1x2(uint8_t a)
{
    return (uint32_t)tl_num_e2m1_to_f16((uint8_t)(a >> 4)) << 16 | tl_num_e2m1_to_f16((uint8_t)(a & 0xF));
}

uint32_t tl_num_e2m1_to_f32(uint8_t code) { return tl_num_f16_to_f32(tl_num_e2m1_to_f16(code)); }

/* ---- UE8M0 ---- */

uint8_t tl_num_f32_to_ue8m0(uint32_t f, TlNumRound rnd, bool satfinite)
{
    uint32_t mag = f & 0x7FFFFFFFu;
    if (mag > F32_INF)
        return 0xFF;
    if (mag == F32_INF)
        return satfinite ? 0xFE : 0xFF;
    unsigned bexp = mag >> 23, m = mag & 0x7FFFFFu;
    unsigned code;
    if (rnd == TL_NUM_RP) {
        if (bexp == 0)   /* subnormal: above 2^-127 (m > 2^22) rounds up to 2^-126 */
            code = m > 0x400000u ? 1 : 0;
        else
            code = bexp + (m != 0);
    } else {
        code = bexp;     /* floor(log2|x|) + 127, and 0 for everything below 2^-126 */
    }
    if (code == 0xFF && satfinite)
        code = 0xFE;
    return (uint8_t)code;
}

uint16_t tl_num_ue8m0x2_from_f32(uint32_t a, uint32_t b, TlNumRound rnd, bool satfinite)
{
    return (uint16_t)(tl_num_f32_to_ue8m0(a, rnd, satfinite) << 8 | tl_num_f32_to_ue8m0(b, rnd, satfinite));
}

uint32_t tl_num_ue8m0_to_f32_tk(uint8_t b) { return (uint32_t)b << 23; }

uint16_t tl_num_ue8m0_to_bf16(uint8_t b)
{
    if (b == 0xFF)
        return 0x7FFF;
    if (b == 0)
        return 0x0040;
    return (uint16_t)(b << 7);
}

uint32_t tl_num_bf16x2_from_ue8m0x2(uint16_t a)
{
    return (uint32_t)tl_num_ue8m0_to_bf16((uint8_t)(a >> 8)) << 16 | tl_num_ue8m0_to_bf16((uint8_t)a);
}

/* ---- E5M6 ---- */

uint16_t tl_num_f32_to_e5m6(uint32_t f)
{
    uint32_t c = tl_num_f32_to_f16(f, TL_NUM_RZ) >> 4;
    uint32_t rem = f & 0x1FFFFu;
    if ((c & 1) + rem > 0x10000u)
        c += 1;
    return (uint16_t)(c & 0xFFFu);
}

uint16_t tl_num_e5m6_to_f16(uint16_t code) { return (uint16_t)((code & 0xFFFu) << 4); }
uint32_t tl_num_e5m6_to_f32(uint16_t code) { return tl_num_f16_to_f32(tl_num_e5m6_to_f16(code)); }

void tl_num_e5m6_pack8(const uint16_t codes[8], uint32_t words[3])
{
    uint32_t h[8];
    for (int i = 0; i < 8; i++)
        h[i] = codes[i] & 0xFFFu;
    words[0] = h[0] << 20 | h[1] << 8 | h[2] >> 4;
    words[1] = (h[2] & 0xFu) << 28 | h[3] << 16 | h[4] << 4 | h[5] >> 8;
    words[2] = (h[5] & 0xFFu) << 24 | h[6] << 12 | h[7];
}

void tl_num_e5m6_unpack8(const uint32_t words[3], uint16_t codes[8])
{
    uint32_t w0 = words[0], w1 = words[1], w2 = words[2];
    codes[0] = (uint16_t)(w0 >> 20);
    codes[1] = (uint16_t)((w0 >> 8) & 0xFFFu);
    codes[2] = (uint16_t)((w0 & 0xFFu) << 4 | w1 >> 28);
    codes[3] = (uint16_t)((w1 >> 16) & 0xFFFu);
    codes[4] = (uint16_t)((w1 >> 4) & 0xFFFu);
    codes[5] = (uint16_t)((w1 & 0xFu) << 8 | w2 >> 24);
    codes[6] = (uint16_t)((w2 >> 12) & 0xFFFu);
    codes[7] = (uint16_t)(w2 & 0xFFFu);
}

/* ---- Scale factor ---- */

TlNumSf tl_num_scale_factor(uint32_t amax, uint32_t clamp_min, uint32_t max_value, bool round_sf)
{
    float x = tl_num_float(amax), lo = tl_num_float(clamp_min), mx = tl_num_float(max_value);
    /* max.f32: a NaN operand loses */
    float a = f32_is_nan(amax) ? lo : f32_is_nan(clamp_min) ? x : (x > lo ? x : lo);
    float sf = a / mx;
    TlNumSf r = {0, 0, 0};
    if (!round_sf) {
        r.sf = tl_num_bits(sf);
        r.sf_inv = tl_num_bits(mx / a);
        return r;
    }
    uint32_t e = ((tl_num_bits(sf) - 1u) >> 23) + 1u - 127u;   /* ceil(log2 sf), mod 2^32 */
    r.sf_inv = (127u - e) << 23;
    r.sf = (127u + e) << 23;
    r.ue8m0 = (uint8_t)(e + 127u);
    return r;
}

/* ------------------------------------------------------------------------------------ */
/* Correctly rounded references. A double-precision estimate decides the rounding unless it
 * lies too close to a rounding boundary; then an exact (rsqrt) or double-double (exp2)
 * evaluation decides. The result is the correctly rounded value whatever the host libm. */

/* Rounds v * 2^scale to f32 (RNE, subnormals at their own precision, overflow to inf), for
 * positive v = hi + lo with |lo| <= ulp(hi)/2. *margin gets the distance of v from the
 * nearest rounding boundary in units of the f32 spacing (0.5 = on a representable value). */
static uint32_t round_pos_to_f32(double hi, double lo, int scale, double *margin)
{
    hi = ldexp(hi, scale);
    lo = ldexp(lo, scale);
    int e;
    frexp(hi, &e);                       /* hi = m * 2^e, m in [0.5, 1) */
    int qe = e - 24 > -149 ? e - 24 : -149;
    double s = ldexp(hi, -qe);           /* value in units of the f32 spacing */
    double n = floor(s);
    double g = (s - n) - 0.5;            /* exact: s has at most 29 fraction bits here */
    double l = ldexp(lo, -qe);
    bool up = g > 0 || (g == 0 && (l > 0 || (l == 0 && fmod(n, 2.0) != 0)));
    *margin = fabs(g + l);
    double r = ldexp(n + (up ? 1.0 : 0.0), qe);
    if (r > FLT_MAX)
        return F32_INF;
    return tl_num_bits((float)r);        /* exact: r is on the f32 grid */
}

typedef struct DD { double hi, lo; } DD;

static DD dd_norm(double a, double b)
{
    double s = a + b;
    return (DD){s, b - (s - a)};
}

static DD dd_add(DD a, DD b)
{
    double s = a.hi + b.hi, bb = s - a.hi;
    double err = (a.hi - (s - bb)) + (b.hi - bb);
    return dd_norm(s, err + a.lo + b.lo);
}

static DD dd_mul(DD a, DD b)
{
    double p = a.hi * b.hi;
    double err = fma(a.hi, b.hi, -p);
    return dd_norm(p, err + (a.hi * b.lo + a.lo * b.hi));
}

static DD dd_div_int(DD a, double n)
{
    double q1 = a.hi / n;
    double r = fma(-q1, n, a.hi) + a.lo;
    return dd_norm(q1, r / n);
}

/* 2^f for 0 <= f < 1 to about 2^-94 relative: exp(f ln2) by a Taylor series on f ln2 / 2^10,
 * then ten squarings. */
static DD dd_exp2_frac(double f)
{
    const DD ln2 = {0x1.62e42fefa39efp-1, 0x1.abc9e3b39803fp-56};
    DD w = dd_mul((DD){f, 0}, ln2);
    w.hi = ldexp(w.hi, -10);
    w.lo = ldexp(w.lo, -10);
    DD t = {1, 0};
    for (int n = 12; n >= 1; n--)   /* 1 + w/n * (1 + w/(n+1) * (...)) */
        t = dd_add((DD){1, 0}, dd_mul(dd_div_int(w, n), t));
    for (int i = 0; i < 10; i++)
        t = dd_mul(t, t);
    return t;
}

uint32_t tl_num_exp2_cr(uint32_t x)
{
    if (f32_is_nan(x))
        return F32_NAN;
    if ((x & 0x7FFFFFFFu) == 0)
        return F32_ONE;
    float xf = tl_num_float(x);
    if (xf >= 128.0f)
        return F32_INF;
    if (xf < -151.0f)
        return 0;        /* below 2^-151: rounds to +0 */
    double xd = xf;
    double i = floor(xd), f = xd - i;    /* both exact */
    double margin;
    if (i >= -126) {
        /* normal result (the common case, kept cheap for the emulator): 2^f in [1,2) in
         * units of 2^-23, rounded unless within 2^-12 of a tie (as below) */
        double s = exp2(f) * 0x1p23, n = floor(s), g = s - n - 0.5;
        if (fabs(g) > 0x1p-12) {
            uint32_t m = (uint32_t)n + (g > 0);   /* 2^23 .. 2^24: a carry bumps the exponent */
            return ((uint32_t)((int)i + 127) << 23) + (m - 0x800000u);
        }
    }
    /* fast estimate: a libm exp2 within 2^-40 relative leaves at most 2^-16 f32 spacings of
     * doubt; anything closer to a boundary than 2^-12 goes to the double-double path */
    uint32_t r = round_pos_to_f32(exp2(f), 0, (int)i, &margin);
    if (margin > 0x1p-12)
        return r;
    DD v = dd_exp2_frac(f);
    return round_pos_to_f32(v.hi, v.lo, (int)i, &margin);
}

/* sign of x * m^2 - 1, exactly (m^2 is exact in double: m has at most 26 bits) */
static int cmp_x_m2_one(double x, double m)
{
    double p = m * m;
    double hi = x * p, lo = fma(x, p, -hi);
    if (hi != 1.0)
        return hi > 1.0 ? 1 : -1;
    return lo > 0 ? 1 : lo < 0 ? -1 : 0;
}

uint32_t tl_num_rsqrt_cr(uint32_t x)
{
    if (f32_is_nan(x))
        return F32_NAN;
    if ((x & 0x7FFFFFFFu) == 0)
        return (x & 0x80000000u) | F32_INF;
    if (x >> 31)
        return F32_NAN;
    if (x == F32_INF)
        return 0;
    double xd = tl_num_float(x);
    uint32_t c = tl_num_bits((float)(1.0 / sqrt(xd)));
    /* 1/sqrt(x) is never exactly half-way between two floats; walk c until the true value
     * lies between the midpoints around c (m < 1/sqrt(x) <=> x m^2 < 1) */
    for (int step = 0; step < 4; step++) {
        double cd = tl_num_float(c);
        double up = ((double)tl_num_float(c + 1) + cd) * 0.5;
        double dn = ((double)tl_num_float(c - 1) + cd) * 0.5;
        if (cmp_x_m2_one(xd, up) < 0)
            c += 1;                      /* true value above the upper midpoint */
        else if (cmp_x_m2_one(xd, dn) > 0)
            c -= 1;                      /* below the lower midpoint */
        else
            break;
    }
    return c;
}

/* ------------------------------------------------------------------------------------ */
/* MUFU models and tables */

/* the header's cut field (numerics.h) */
enum { MUFU_CUT_FLOOR, MUFU_CUT_ZERO, MUFU_CUT_NEAREST, MUFU_CUT_ONES,
       MUFU_CUT_SIGNMAG = 100 /* the model's rule, never in a file */ };

typedef struct MufuTable {
    unsigned index_bits, bits, cut;
    int32_t delta_min;
    uint8_t *payload;
    size_t payload_bytes;
} MufuTable;

static MufuTable *g_mufu[4];   /* indexed by kind: 1 ex2, 2 rsqrt, 3 ex2 of -f */

static int32_t mufu_delta(const MufuTable *t, uint64_t i)
{
    uint64_t bit = i * t->bits;
    size_t byte = (size_t)(bit >> 3);
    unsigned v = t->payload[byte];
    if (byte + 1 < t->payload_bytes)
        v |= (unsigned)t->payload[byte + 1] << 8;
    v = (v >> (bit & 7)) & ((1u << t->bits) - 1);
    return (int32_t)v + t->delta_min;
}

/* rounds to the nearest integer, ties to even, independent of the FP environment */
static double rint_even(double s)
{
    double fl = floor(s), d = s - fl;
    if (d > 0.5 || (d == 0.5 && fmod(fl, 2.0) != 0))
        return fl + 1;
    return fl;
}

/* 2^k as a double, for -1022 <= k <= 1023 (cheaper than ldexp on the emulator's hot path) */
static double pow2i(int k)
{
    uint64_t b = (uint64_t)(1023 + k) << 52;
    double d;
    memcpy(&d, &b, 8);
    return d;
}

/* 2^(sign * idx / 2^nb) as the unit produces it for a grid point: the correctly rounded
 * value, plus the table's delta when there is a table */
static uint32_t ex2_grid(uint64_t idx, unsigned nb, bool neg, const MufuTable *t)
{
    float f = (float)((double)idx * pow2i(-(int)nb));   /* exact: idx < 2^24 */
    uint32_t y = tl_num_exp2_cr(tl_num_bits(neg ? -f : f));
    return t ? (uint32_t)((int32_t)y + mufu_delta(t, idx)) : y;
}

/* y * 2^scale for a normal y, flushed to +0 below 2^-126 */
static uint32_t ex2_scale(uint32_t y, int scale)
{
    int e = (int)(y >> 23) + scale;
    if (e <= 0)
        return 0;
    if (e >= 255)
        return F32_INF;
    return (uint32_t)e << 23 | (y & 0x7FFFFFu);
}

/* pos: the kind 1 table (or NULL: the model), neg: the kind 3 table (or NULL) */
static uint32_t ex2_eval(uint32_t x, const MufuTable *pos, const MufuTable *negt)
{
    if (f32_is_nan(x))
        return F32_NAN;
    if ((x & 0x7F800000u) == 0)
        x = 0;                           /* ftz: subnormals are ±0, which read table entry 0 */
    float xf = tl_num_float(x);
    if (xf >= 128.0f)
        return F32_INF;
    if (xf < -200.0f)
        return 0;
    bool neg = x >> 31;
    unsigned nb = pos ? pos->index_bits : 23, cut = pos ? pos->cut : MUFU_CUT_SIGNMAG;
    if (neg && negt) {                   /* sign-magnitude with measured ex2(-f) */
        nb = negt->index_bits;
        cut = MUFU_CUT_SIGNMAG;
    }
    if (cut == MUFU_CUT_FLOOR || cut == MUFU_CUT_NEAREST) {
        /* q = x cut to nb fraction bits, split as q = i + f with i = floor(q) */
        double s = (double)xf * pow2i((int)nb);
        double qs = cut == MUFU_CUT_FLOOR ? floor(s) : rint_even(s);
        double ip = floor(qs * pow2i(-(int)nb));
        uint64_t idx = (uint64_t)(qs - ip * pow2i((int)nb));
        return ex2_scale(ex2_grid(idx, nb, false, pos), (int)ip);
    }
    /* |x| cut toward zero to n + f/2^nb (|x| < 2^8, so m < 2^32) */
    uint64_t m = (uint64_t)((double)fabsf(xf) * pow2i((int)nb));   /* conversion truncates */
    uint64_t f = m & (((uint64_t)1 << nb) - 1);
    int n = (int)(m >> nb);
    if (!neg)
        return ex2_scale(ex2_grid(f, nb, false, pos), n);
    if (cut == MUFU_CUT_SIGNMAG)
        return ex2_scale(ex2_grid(f, nb, true, negt), -n);
    if (cut == MUFU_CUT_ONES) {          /* the fraction bits inverted, one exponent lower */
        if (f == 0)
            return ex2_scale(F32_ONE, -n);   /* an integer input is exact */
        return ex2_scale(ex2_grid((((uint64_t)1 << nb) - 1) - f, nb, false, pos), -n - 1);
    }
    /* toward zero, then the two's complement split: i = -(n+1), fraction 1 - f (f > 0) */
    if (f == 0)
        return ex2_scale(ex2_grid(0, nb, false, pos), -n);
    return ex2_scale(ex2_grid(((uint64_t)1 << nb) - f, nb, false, pos), -n - 1);
}

static uint32_t rsqrt_eval(uint32_t x, bool ftz, const MufuTable *t)
{
    if (f32_is_nan(x))
        return F32_NAN;
    uint32_t mag = x & 0x7FFFFFFFu;
    if (mag == 0 || (ftz && mag < 0x00800000u))
        return (x & 0x80000000u) | F32_INF;
    if (x >> 31)
        return F32_NAN;
    if (x == F32_INF)
        return 0;
    /* x = m * 4^k with m in [1,4) */
    int bexp = (int)(mag >> 23);
    uint32_t frac = mag & 0x7FFFFFu;
    if (bexp == 0) {                     /* normalise a subnormal */
        int lz = __builtin_clz(frac) - 8;
        frac = (frac << lz) & 0x7FFFFFu;
        bexp = 1 - lz;
    }
    int e = bexp - 127;                  /* x = 1.frac * 2^e */
    int odd = e & 1;                     /* two's complement: e & 1 is e mod 2 */
    int k = (e - odd) / 2;
    uint32_t mbits = (uint32_t)(127 + odd) << 23 | frac;
    uint32_t idx = (mbits - F32_ONE);
    uint32_t y;
    if (t) {
        idx >>= 24 - t->index_bits;
        y = tl_num_rsqrt_cr(F32_ONE + (idx << (24 - t->index_bits)));
        y = (uint32_t)((int32_t)y + mufu_delta(t, idx));
    } else {
        y = tl_num_rsqrt_cr(mbits);
    }
    return y - ((uint32_t)k << 23);      /* results stay normal: 2^-64 .. 2^75 */
}

uint32_t tl_num_ex2_approx_ftz_model(uint32_t x) { return ex2_eval(x, NULL, NULL); }
uint32_t tl_num_rsqrt_approx_model(uint32_t x, bool ftz) { return rsqrt_eval(x, ftz, NULL); }
uint32_t tl_num_ex2_approx_ftz(uint32_t x) { return ex2_eval(x, g_mufu[1], g_mufu[3]); }
uint32_t tl_num_rsqrt_approx(uint32_t x, bool ftz) { return rsqrt_eval(x, ftz, g_mufu[2]); }
bool tl_num_ex2_is_exact(void)
{
    return g_mufu[1] && (g_mufu[3] || g_mufu[1]->cut == MUFU_CUT_ONES);
}
bool tl_num_rsqrt_is_exact(void) { return g_mufu[2] != NULL; }

uint32_t tl_num_expf(uint32_t xb)
{
    float x = tl_num_float(xb);
    float t = fmaf(x, tl_num_float(0x3BBB989Du), 0.5f);
    if (!(t > 0.0f))
        t = 0.0f;                        /* .sat: NaN -> 0 */
    if (t > 1.0f)
        t = 1.0f;
    /* fma.rm(t, 252, 12582913): exact in double, then rounded down onto the integer grid */
    float j = (float)floor((double)t * 252.0 + 12582913.0);
    float k = j - 12583039.0f;
    float r = fmaf(x, tl_num_float(0x3FB8AA3Bu), -k);
    r = fmaf(x, tl_num_float(0x32A57060u), r);
    float p = tl_num_float(tl_num_ex2_approx_ftz(tl_num_bits(r)));
    float s = tl_num_float(tl_num_bits(j) << 23);
    uint32_t res = tl_num_bits(p * s);
    return f32_is_nan(res) ? F32_NAN : res;
}

/* a + b rounded toward zero: the round-to-nearest sum, stepped back by one ulp when its exact
 * error (TwoSum) shows that it was rounded away from zero */
static float add_rz(float a, float b)
{
    float s = a + b;
    if (!isfinite(s))
        return s;
    float bb = s - a;
    float err = (a - (s - bb)) + (b - bb);
    if (err != 0.0f && (err < 0.0f) != (s < 0.0f))
        s = nextafterf(s, 0.0f);
    return s;
}

uint32_t tl_num_log1pf(uint32_t ab)
{
    float a = tl_num_float(ab);
    uint32_t e = (tl_num_bits(add_rz(a, 1.0f)) - 0x3F400000u) & 0xFF800000u;
    float m = tl_num_float(ab - e);
    m = m + fmaf(0.25f, tl_num_float(0x40800000u - e), -1.0f);
    float ie = (float)(int32_t)e * tl_num_float(0x34000000u);
    static const uint32_t coef[] = {0xBD39BF78u, 0x3DD80012u, 0xBE0778E0u, 0x3E146475u, 0xBE2A68DDu,
                                    0x3E4CAF9Eu, 0xBE800042u, 0x3EAAAAE6u, 0xBF000000u};
    float p = tl_num_float(coef[0]);
    for (int i = 1; i < 9; i++)
        p = fmaf(p, m, tl_num_float(coef[i]));
    float q = fmaf(p * m, m, m);
    float r = fmaf(ie, tl_num_float(0x3F317218u), q);
    if (ab >= F32_INF) {
        if ((int32_t)ab > (int32_t)0xBF800000u)
            r = fmaf(a, INFINITY, INFINITY);
        if (a == 0.0f)
            r = -0.0f;
    }
    uint32_t res = tl_num_bits(r);
    return f32_is_nan(res) ? F32_NAN : res;
}

/* ---- table installation ---- */

uint32_t tl_num_rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t fnv1a(const uint8_t *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

static void wr32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* which cuts a kind allows: ex2 any of the four, rsqrt none (0), ex2 of -f toward zero */
static bool mufu_cut_ok(uint32_t kind, uint32_t cut)
{
    return kind == 1 ? cut <= MUFU_CUT_ONES : kind == 2 ? cut == 0 : cut == MUFU_CUT_ZERO;
}

size_t tl_num_mufu_encode(unsigned kind, unsigned index_bits, unsigned cut,
                          const int32_t *deltas, uint8_t *out, size_t cap)
{
    if (kind < 1 || kind > 3 || index_bits < 1 || index_bits > 24 || !mufu_cut_ok(kind, cut)
        || !deltas)
        return 0;
    size_t n = (size_t)1 << index_bits;
    int32_t lo = deltas[0], hi = deltas[0];
    for (size_t i = 1; i < n; i++) {
        lo = deltas[i] < lo ? deltas[i] : lo;
        hi = deltas[i] > hi ? deltas[i] : hi;
    }
    int64_t spread = (int64_t)hi - lo;
    unsigned bits = 1;
    while (bits < 9 && spread >= ((int64_t)1 << bits))
        bits++;
    if (bits > 8)
        return 0;
    size_t pbytes = (n * bits + 7) / 8, total = 36 + pbytes;
    if (!out || cap < total)
        return total;
    memset(out, 0, total);
    memcpy(out, "TLMUFU01", 8);
    wr32(out + 8, kind);
    wr32(out + 12, index_bits);
    wr32(out + 16, bits);
    wr32(out + 20, (uint32_t)lo);
    wr32(out + 24, cut);
    wr32(out + 28, (uint32_t)pbytes);
    uint8_t *pay = out + 36;
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)(deltas[i] - lo);
        size_t bit = i * bits;
        pay[bit >> 3] |= (uint8_t)(u << (bit & 7));
        if ((bit & 7) + bits > 8)
            pay[(bit >> 3) + 1] |= (uint8_t)(u >> (8 - (bit & 7)));
    }
    wr32(out + 32, fnv1a(pay, pbytes));
    return total;
}

int tl_num_install_fail(char *err, size_t errcap, const char *fmt, ...)
{
    if (err && errcap > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errcap, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int tl_num_mufu_install(const void *blob, size_t len, char *err, size_t errcap)
{
    const uint8_t *p = blob;
    if (!p || len < 36)
        return tl_num_install_fail(err, errcap, "MUFU table: %lu bytes, shorter than the 36-byte header",
                            p ? (unsigned long)len : 0ul);
    if (memcmp(p, "TLMUFU01", 8) != 0)
        return tl_num_install_fail(err, errcap, "MUFU table: bad magic (expected \"TLMUFU01\")");
    uint32_t kind = tl_num_rd32(p + 8), nb = tl_num_rd32(p + 12), bits = tl_num_rd32(p + 16);
    int32_t dmin = (int32_t)tl_num_rd32(p + 20);
    uint32_t cut = tl_num_rd32(p + 24), pbytes = tl_num_rd32(p + 28), hash = tl_num_rd32(p + 32);
    if (kind < 1 || kind > 3)
        return tl_num_install_fail(err, errcap,
                            "MUFU table: unknown kind %lu (1 = ex2, 2 = rsqrt, 3 = ex2 of -f)",
                            (unsigned long)kind);
    if (nb < 1 || nb > 24)
        return tl_num_install_fail(err, errcap, "MUFU table: index_bits %lu outside 1..24",
                            (unsigned long)nb);
    if (bits < 1 || bits > 8)
        return tl_num_install_fail(err, errcap, "MUFU table: bits_per_entry %lu outside 1..8",
                            (unsigned long)bits);
    if (!mufu_cut_ok(kind, cut))
        return tl_num_install_fail(err, errcap, "MUFU table: cut %lu invalid for kind %lu",
                            (unsigned long)cut, (unsigned long)kind);
    uint64_t want = (((uint64_t)1 << nb) * bits + 7) / 8;
    if (pbytes != want)
        return tl_num_install_fail(err, errcap, "MUFU table: payload_bytes %lu, expected %lu",
                            (unsigned long)pbytes, (unsigned long)want);
    if (len != 36 + (size_t)pbytes)
        return tl_num_install_fail(err, errcap, "MUFU table: blob is %lu bytes, header says %lu",
                            (unsigned long)len, 36ul + (unsigned long)pbytes);
    if (fnv1a(p + 36, pbytes) != hash)
        return tl_num_install_fail(err, errcap, "MUFU table: payload hash mismatch (corrupt file)");
    MufuTable *t = malloc(sizeof *t);
    uint8_t *copy = malloc(pbytes);
    if (!t || !copy) {
        free(t);
        free(copy);
        return tl_num_install_fail(err, errcap, "MUFU table: out of memory for %lu bytes",
                            (unsigned long)pbytes);
    }
    memcpy(copy, p + 36, pbytes);
    *t = (MufuTable){nb, bits, cut, dmin, copy, pbytes};
    tl_num_mufu_uninstall(kind);
    g_mufu[kind] = t;
    return 0;
}

void tl_num_mufu_uninstall(unsigned kind)
{
    if (kind < 1 || kind > 3)
        return;
    if (g_mufu[kind]) {
        free(g_mufu[kind]->payload);
        free(g_mufu[kind]);
        g_mufu[kind] = NULL;
    }
}
