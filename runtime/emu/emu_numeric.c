/* emu_numeric.c — the GPU's number conversions and special instructions, bit for bit, for
 * kernel code on the host: f32 <-> f16/bf16/fp8/fp4/ue8m0 through numerics/numerics.c, and here
 * the rest of `cvt` (f64 and integer sources, rounding modes, float -> int), fma.rm, the MUFU
 * approximations, min/max, and f32 atomic add.
 *
 * NaN results follow the GPU: an f32 or f16/bf16 operation that makes a NaN makes the canonical
 * one (f32 0x7FFFFFFF, f16/bf16 0x7FFF), whatever the inputs' payloads; the double-precision unit
 * keeps them: conversions from and to f64 keep the sign and the leading payload bits and set the
 * quiet bit, and f64 min/max of two NaNs gives the second one quieted (measured on an H200:
 * tests/gpu/recorded/ and the probe_f64 run of 2026-11-30). */
#include "emu_internal.h"
#include "numerics.h"

#include <math.h>
#include <string.h>

#define F32_CANON 0x7FFFFFFFu
#define F64_CANON 0x7FFFFFFFFFFFFFFFull
#define F64_QUIET 0x0008000000000000ull

static inline float f32_of(uint32_t u) { return tl_num_float(u); }
static inline uint32_t bits_of(float f) { return tl_num_bits(f); }
static inline double f64_of(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}
static inline double f64_quiet(double x)
{
    uint64_t u;
    memcpy(&u, &x, 8);
    return f64_of(u | F64_QUIET);
}

/* ---- rounding an exact value into a binary floating-point format ---- */

typedef struct FFmt {
    int ebits, mbits;
} FFmt;

static const FFmt FMT_F16 = {5, 10}, FMT_BF16 = {8, 7}, FMT_F32 = {8, 23}, FMT_F64 = {11, 52};

static const FFmt *fmt_of(uint32_t t)
{
    switch (t) {
    case TL_EMU_F16: return &FMT_F16;
    case TL_EMU_BF16: return &FMT_BF16;
    case TL_EMU_F32: return &FMT_F32;
    default: return &FMT_F64;
    }
}

static uint64_t fmt_inf(const FFmt *f, bool neg)
{
    return (uint64_t)neg << (f->ebits + f->mbits) | (((uint64_t)1 << f->ebits) - 1) << f->mbits;
}

static uint64_t fmt_nan(const FFmt *f)
{
    return f == &FMT_F64 ? F64_CANON : f == &FMT_F32 ? F32_CANON : 0x7FFF;
}

/* (-1)^neg * mant * 2^e, mant != 0, rounded with `rnd` (IEEE: subnormals at their own
 * precision, overflow to inf or to the largest finite number as the direction says) */
static uint64_t round_to(bool neg, uint64_t mant, int e, const FFmt *f, uint32_t rnd)
{
    int bias = (1 << (f->ebits - 1)) - 1;
    int emin = 1 - bias;
    int msb = 63 - __builtin_clzll(mant);
    int E = msb + e;                                /* mant * 2^e is in [2^E, 2^(E+1)) */
    int q = (E < emin ? emin : E) - f->mbits;       /* exponent of the last kept bit */
    int shift = q - e;
    uint64_t n;
    bool above = false, half = false, below = false; /* the dropped part vs half an ulp */
    if (shift <= 0) {
        n = mant << -shift;
    } else if (shift >= 65) {
        n = 0;
        below = true;
    } else {
        n = shift == 64 ? 0 : mant >> shift;
        uint64_t rem = shift == 64 ? mant : mant & (((uint64_t)1 << shift) - 1);
        uint64_t h = (uint64_t)1 << (shift - 1);
        above = rem > h;
        half = rem == h;
        below = rem != 0 && rem < h;
    }
    bool inexact = above || half || below;
    bool up = false;
    switch (rnd) {
    case TL_EMU_RN: up = above || (half && (n & 1)); break;
    case TL_EMU_RZ: break;
    case TL_EMU_RM: up = neg && inexact; break;
    default: up = !neg && inexact; break;
    }
    n += up;
    if (n >> (f->mbits + 1)) { /* carried into a new binade */
        n >>= 1;
        q++;
    }
    uint64_t sign = (uint64_t)neg << (f->ebits + f->mbits);
    if (n >> f->mbits) {
        int64_t biased = (int64_t)q + f->mbits + bias;
        if (biased >= ((int64_t)1 << f->ebits) - 1) {
            bool to_inf = rnd == TL_EMU_RN || (rnd == TL_EMU_RM && neg) || (rnd == TL_EMU_RP && !neg);
            return to_inf ? fmt_inf(f, neg) : (fmt_inf(f, neg) - 1);
        }
        return sign | (uint64_t)biased << f->mbits | (n & (((uint64_t)1 << f->mbits) - 1));
    }
    return sign | n; /* subnormal or zero */
}

typedef struct FVal {
    int cls;          /* 0 zero, 1 finite, 2 inf, 3 nan */
    bool neg;
    uint64_t mant;
    int e;
} FVal;

static FVal decode(uint64_t bits, const FFmt *f)
{
    FVal v = {0};
    int bias = (1 << (f->ebits - 1)) - 1;
    v.neg = (bits >> (f->ebits + f->mbits)) & 1;
    uint64_t ex = (bits >> f->mbits) & (((uint64_t)1 << f->ebits) - 1);
    uint64_t fr = bits & (((uint64_t)1 << f->mbits) - 1);
    if (ex == ((uint64_t)1 << f->ebits) - 1) {
        v.cls = fr ? 3 : 2;
    } else if (ex == 0) {
        v.cls = fr ? 1 : 0;
        v.mant = fr;
        v.e = 1 - bias - f->mbits;
    } else {
        v.cls = 1;
        v.mant = fr | (uint64_t)1 << f->mbits;
        v.e = (int)ex - bias - f->mbits;
    }
    return v;
}

static uint64_t encode(FVal v, const FFmt *f, uint32_t rnd)
{
    switch (v.cls) {
    case 0: return (uint64_t)v.neg << (f->ebits + f->mbits);
    case 2: return fmt_inf(f, v.neg);
    case 3: return fmt_nan(f);
    default: return round_to(v.neg, v.mant, v.e, f, rnd);
    }
}

static bool is_float(uint32_t t) { return t >= TL_EMU_F16 && t <= TL_EMU_F64; }
static bool is_signed(uint32_t t) { return t <= TL_EMU_S64; }
static int int_bits(uint32_t t) { return 8 << (t & 3); }

/* float -> integer: rounded as `rnd` says, saturated to the type's range, NaN -> 0 */
static uint64_t float_to_int(FVal v, uint32_t to, uint32_t rnd)
{
    if (v.cls == 3 || v.cls == 0)
        return 0;
    int bits = int_bits(to);
    bool sgn = is_signed(to);
    uint64_t maxmag = sgn ? ((uint64_t)1 << (bits - 1)) - (v.neg ? 0 : 1) : (v.neg ? 0 : (bits == 64 ? ~0ull : ((uint64_t)1 << bits) - 1));
    uint64_t mag;
    if (v.cls == 2 || v.e >= 64 - (63 - __builtin_clzll(v.mant))) {
        mag = ~0ull; /* at least 2^64: saturates */
    } else if (v.e >= 0) {
        mag = v.mant << v.e;
    } else {
        int s = -v.e;
        uint64_t n = s >= 64 ? 0 : v.mant >> s;
        uint64_t rem = s >= 64 ? v.mant : v.mant & (((uint64_t)1 << s) - 1);
        bool above, half, nz = rem != 0;
        if (s > 64) {
            above = false, half = false;
        } else {
            uint64_t h = (uint64_t)1 << (s - 1);
            above = rem > h, half = rem == h;
        }
        bool up = false;
        switch (rnd) {
        case TL_EMU_RN: up = above || (half && (n & 1)); break;
        case TL_EMU_RZ: break;
        case TL_EMU_RM: up = v.neg && nz; break;
        default: up = !v.neg && nz; break;
        }
        mag = n + up;
    }
    if (mag > maxmag)
        mag = maxmag;
    uint64_t r = v.neg ? (uint64_t)0 - mag : mag;
    return bits == 64 ? r : r & (((uint64_t)1 << bits) - 1);
}

uint64_t tl_emu_cvt(uint64_t bits, uint32_t from, uint32_t to, uint32_t rnd)
{
    if (from >= TL_EMU_NTYPES || to >= TL_EMU_NTYPES)
        return 0;
    rnd &= 3;
    if (!is_float(from)) {
        int fb = int_bits(from);
        uint64_t x = fb == 64 ? bits : bits & (((uint64_t)1 << fb) - 1);
        bool neg = false;
        if (is_signed(from) && fb < 64 && (x >> (fb - 1) & 1))
            x |= ~0ull << fb; /* sign-extend */
        if (!is_float(to))
            return x; /* integer -> integer: wraps */
        if (is_signed(from) && (int64_t)x < 0) {
            neg = true;
            x = (uint64_t)0 - x;
        }
        FVal v = {x ? 1 : 0, neg, x, 0};
        return encode(v, fmt_of(to), rnd);
    }
    /* the f32 conversions the numerics library defines, bit for bit */
    if (from == TL_EMU_F32 && to == TL_EMU_BF16)
        return tl_num_f32_to_bf16((uint32_t)bits, (TlNumRound)rnd);
    if (from == TL_EMU_F32 && to == TL_EMU_F16)
        return tl_num_f32_to_f16((uint32_t)bits, (TlNumRound)rnd);
    if (from == TL_EMU_F16 && to == TL_EMU_F64 && (bits & 0x7FFF) > 0x7C00) /* NaN: payload kept */
        return (bits >> 15 & 1) << 63 | 0x7FF8000000000000ull | (bits & 0x3FFull) << 42;
    if (from == TL_EMU_F16)
        return tl_emu_cvt(tl_num_f16_to_f32((uint16_t)bits), TL_EMU_F32, to, rnd);
    if (from == TL_EMU_BF16) {
        uint32_t f = tl_num_bf16_to_f32((uint16_t)bits);
        return to == TL_EMU_F32 ? f : tl_emu_cvt(f, TL_EMU_F32, to, rnd);
    }
    const FFmt *ff = fmt_of(from);
    FVal v = decode(bits, ff);
    if (!is_float(to))
        return float_to_int(v, to, rnd);
    if (to == from)
        return v.cls == 3 ? fmt_nan(ff) : bits;
    if (v.cls == 3 && from == TL_EMU_F32 && to == TL_EMU_F64)
        return (bits >> 31) << 63 | 0x7FF8000000000000ull | (bits & 0x3FFFFFull) << 29;
    if (v.cls == 3 && from == TL_EMU_F64 && to == TL_EMU_F32)
        return (uint32_t)(bits >> 63) << 31 | 0x7FC00000u | (uint32_t)(bits >> 29 & 0x3FFFFF);
    if (v.cls == 3 && from == TL_EMU_F64 && to == TL_EMU_F16)
        return (uint32_t)(bits >> 63) << 15 | 0x7E00u | (uint32_t)(bits >> 42 & 0x1FF);
    if (v.cls == 3 && from == TL_EMU_F64 && to == TL_EMU_BF16)
        return (uint32_t)(bits >> 63) << 15 | 0x7FC0u | (uint32_t)(bits >> 45 & 0x3F);
    return encode(v, fmt_of(to), rnd);
}

uint32_t tl_emu_cvt_x2(uint32_t op, uint32_t a, uint32_t b)
{
    switch (op) {
    case TL_EMU_X2_E4M3_FROM_F32: return tl_num_e4m3x2_from_f32(a, b);
    case TL_EMU_X2_E5M2_FROM_F32: return tl_num_e5m2x2_from_f32(a, b);
    case TL_EMU_X2_E2M1_FROM_F32: return tl_num_e2m1x2_from_f32(a, b);
    case TL_EMU_X2_F16_FROM_E4M3: return tl_num_f16x2_from_e4m3x2((uint16_t)a);
    case TL_EMU_X2_F16_FROM_E5M2: return tl_num_f16x2_from_e5m2x2((uint16_t)a);
    case TL_EMU_X2_F16_FROM_E2M1: return tl_num_f16x2_from_e2m1x2((uint8_t)a);
    case TL_EMU_X2_E4M3_FROM_F16X2: return tl_num_e4m3x2_from_f16x2(a);
    case TL_EMU_X2_E5M2_FROM_F16X2: return tl_num_e5m2x2_from_f16x2(a);
    case TL_EMU_X2_BF16_FROM_F32: return tl_num_bf16x2_from_f32(a, b, TL_NUM_RN);
    case TL_EMU_X2_F16_FROM_F32: return tl_num_f16x2_from_f32(a, b, TL_NUM_RN);
    case TL_EMU_X2_UE8M0_FROM_F32_RZ: return tl_num_ue8m0x2_from_f32(a, b, TL_NUM_RZ, true);
    case TL_EMU_X2_UE8M0_FROM_F32_RP: return tl_num_ue8m0x2_from_f32(a, b, TL_NUM_RP, true);
    case TL_EMU_X2_BF16_FROM_UE8M0: return tl_num_bf16x2_from_ue8m0x2((uint16_t)a);
    default: return 0;
    }
}

/* fma.rm.f32: a*b is exact in double; s + err = a*b + c exactly (two-sum); the result is the
 * nearest float r of s, moved down one step when the exact value lies below r */
float tl_emu_fma_rm(float a, float b, float c)
{
    if (!isfinite(a) || !isfinite(b) || !isfinite(c)) {
        float r = fmaf(a, b, c);
        return isnan(r) ? f32_of(F32_CANON) : r;
    }
    double p = (double)a * (double)b;
    double s = p + (double)c;
    double bb = s - p;
    double err = (p - (s - bb)) + ((double)c - bb);
    if (s == 0 && err == 0) /* an exact zero: +0 only when both terms are +0 */
        return (p == 0 && c == 0 && !signbit(p) && !signbit(c)) ? 0.0f : -0.0f;
    float r = (float)s;
    if (isinf(r))
        return s > 0 ? f32_of(0x7F7FFFFFu) : -INFINITY;
    double d = (s - (double)r) + err;
    return d < 0 ? nextafterf(r, -INFINITY) : r;
}

/* cvt.sat.f32.f32 (the saturate of the expf sequence): clamp to [0, 1], NaN -> +0 */
uint32_t tl_emu_prmt(uint32_t a, uint32_t b, uint32_t c)
{
    uint64_t src = (uint64_t)b << 32 | a;
    uint32_t r = 0;
    for (int i = 0; i < 4; i++) {
        uint32_t sel = c >> (4 * i) & 0xF;
        uint32_t byte = (uint32_t)(src >> (8 * (sel & 7))) & 0xFF;
        if (sel & 8)
            byte = byte & 0x80 ? 0xFF : 0;
        r |= byte << (8 * i);
    }
    return r;
}

float tl_emu_sat(float x)
{
    if (!(x > 0.0f))
        return 0.0f;
    return x > 1.0f ? 1.0f : x;
}

/* ex2.approx.ftz.f32, and ex2.approx.f32, which keeps subnormal results although the unit
 * flushes them: below -126 the GPU halves the input, and squares the unit's result with an
 * IEEE multiply (this rule gave the H200's bits on every input of tests/gpu/recorded/) */
float tl_emu_ex2(float x, uint32_t ftz)
{
    if (ftz || !(x < -126.0f))
        return f32_of(tl_num_ex2_approx_ftz(bits_of(x)));
    float h = f32_of(tl_num_ex2_approx_ftz(bits_of(x * 0.5f)));
    return h * h;
}

float tl_emu_rsqrt(float x) { return f32_of(tl_num_rsqrt_approx(bits_of(x), false)); }

/* min.f32 / max.f32: a NaN operand loses to a number; two NaNs give the canonical NaN (f64: the
 * second quieted); -0 counts as less than +0, whichever operand it is (the H200 gives
 * min(+0, -0) = min(-0, +0) = -0 and max = +0 both ways) */
float tl_emu_fminf(float a, float b)
{
    if (isnan(a))
        return isnan(b) ? f32_of(F32_CANON) : b;
    if (isnan(b))
        return a;
    if (a == b)
        return signbit(a) ? a : b;
    return a < b ? a : b;
}

float tl_emu_fmaxf(float a, float b)
{
    if (isnan(a))
        return isnan(b) ? f32_of(F32_CANON) : b;
    if (isnan(b))
        return a;
    if (a == b)
        return signbit(a) ? b : a;
    return a > b ? a : b;
}

double tl_emu_fmin(double a, double b)
{
    if (isnan(a))
        return isnan(b) ? f64_quiet(b) : b;
    if (isnan(b))
        return a;
    if (a == b)
        return signbit(a) ? a : b;
    return a < b ? a : b;
}

double tl_emu_fmax(double a, double b)
{
    if (isnan(a))
        return isnan(b) ? f64_quiet(b) : b;
    if (isnan(b))
        return a;
    if (a == b)
        return signbit(a) ? b : a;
    return a > b ? a : b;
}

static float ftz(float x) { return fabsf(x) < 0x1p-126f ? copysignf(0.0f, x) : x; }

static float atomic_add(float *p, float v, bool flush)
{
    uint32_t *u = (uint32_t *)p;
    uint32_t old = __atomic_load_n(u, __ATOMIC_RELAXED);
    for (;;) {
        float r = flush ? ftz(ftz(f32_of(old)) + ftz(v)) : f32_of(old) + v;
        uint32_t nb = isnan(r) ? F32_CANON : bits_of(r);
        if (__atomic_compare_exchange_n(u, &old, nb, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            return f32_of(old);
    }
}

/* atom.add.f32 on global memory: "rounds to nearest even and flushes subnormal inputs and
 * results to sign-preserving zero" (PTX ISA), as the H200 does */
float tl_emu_atomic_add_f32(float *p, float v) { return atomic_add(p, v, true); }

/* atom.shared.add.f32: the H200 keeps subnormal inputs and results (an IEEE add) */
float tl_emu_atomic_add_f32_shared(float *p, float v) { return atomic_add(p, v, false); }
