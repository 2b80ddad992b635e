/* ref.c — the enumerate-and-search reference for the numerics tests (see ref.h). It shares
 * no code with numerics/numerics.c: values come from the field formula as doubles, and
 * rounding is a comparison against the two neighbouring values. */
#include "ref.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

RefFmt REF_F16 = {.name = "f16", .ebits = 5, .mbits = 10, .bias = 15, .max_code = 0x7BFF,
              .nan_code = 0x7FFF, .satfinite = false, .sign_shift = 15};
RefFmt REF_BF16 = {.name = "bf16", .ebits = 8, .mbits = 7, .bias = 127, .max_code = 0x7F7F,
              .nan_code = 0x7FFF, .satfinite = false, .sign_shift = 15};
RefFmt REF_E4M3 = {.name = "e4m3", .ebits = 4, .mbits = 3, .bias = 7, .max_code = 0x7E,
              .nan_code = 0x7F, .satfinite = true, .sign_shift = 7};
RefFmt REF_E5M2 = {.name = "e5m2", .ebits = 5, .mbits = 2, .bias = 15, .max_code = 0x7B,
              .nan_code = 0x7F, .satfinite = true, .sign_shift = 7};
/* e2m1 has no NaN: the hardware turns NaN into +6 */
RefFmt REF_E2M1 = {.name = "e2m1", .ebits = 2, .mbits = 1, .bias = 1, .max_code = 0x7,
              .nan_code = 0x7, .satfinite = true, .sign_shift = 3};

static double UE8M0_VALS[256];   /* 255 values and one +inf pad */
static int UE8M0_BIN_LO[256], UE8M0_BIN_HI[256];

double ref_decode_mag(const RefFmt *f, int code)
{
    int E = code >> f->mbits, M = code & ((1 << f->mbits) - 1);
    double frac = (double)M / (double)(1 << f->mbits);
    if (E == 0)
        return ldexp(frac, 1 - f->bias);
    return ldexp(1.0 + frac, E - f->bias);
}

/* largest index i with v[i] <= a, or -1; v has a power-of-two size (padded with +inf).
 * Branch-free halving, so that random inputs do not stall on mispredictions. */
static int search_le(const double *v, int npow2, double a)
{
    int lo = 0;
    for (int step = npow2 / 2; step > 0; step >>= 1)
        lo += v[lo + step] <= a ? step : 0;
    return v[lo] <= a ? lo : -1;
}

static int pow2_at_least(int n)
{
    int p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

/* largest index in [lo, hi] with v[i] <= a, given v[lo] <= a (branch-free) */
static int search_range(const double *v, int lo, int hi, double a)
{
    int len = hi - lo + 1;
    while (len > 1) {
        int half = len / 2;
        lo = v[lo + half] <= a ? lo + half : lo;
        len -= half;
    }
    return lo;
}

static void build(RefFmt *f)
{
    f->nvals = f->max_code + 1;
    f->npow2 = pow2_at_least(f->nvals + 1);
    f->vals = malloc(sizeof(double) * (size_t)f->npow2);
    for (int c = 0; c < f->npow2; c++)
        f->vals[c] = INFINITY;
    for (int c = 0; c < f->nvals; c++) {
        f->vals[c] = ref_decode_mag(f, c);
        if (c > 0 && !(f->vals[c] > f->vals[c - 1])) {
            fprintf(stderr, "ref: %s values not increasing at code %d\n", f->name, c);
            exit(2);
        }
    }
    /* the value the next code would have if the exponent range went on */
    f->vals[f->nvals] = 2 * f->vals[f->max_code] - f->vals[f->max_code - 1];
    /* per f32 exponent field, the index range the answer can lie in: from the last value at
     * or below the binade's start to the last value below its end */
    for (int e = 0; e < 256; e++) {
        double start = e == 0 ? 0.0 : ldexp(1.0, e - 127);
        double end = ldexp(1.0, e - 126);
        int lo = search_le(f->vals, f->npow2, start);
        int hi = search_le(f->vals, f->npow2, nextafter(end, 0));
        f->bin_lo[e] = lo < 0 ? 0 : lo;
        f->bin_hi[e] = hi < f->bin_lo[e] ? f->bin_lo[e] : hi;
    }
}

void ref_init(void)
{
    build(&REF_F16);
    build(&REF_BF16);
    build(&REF_E4M3);
    build(&REF_E5M2);
    build(&REF_E2M1);
    for (int b = 0; b < 255; b++)
        UE8M0_VALS[b] = ldexp(1.0, b - 127);
    UE8M0_VALS[255] = INFINITY;
    for (int e = 0; e < 256; e++) {
        double start = e == 0 ? 0.0 : ldexp(1.0, e - 127), end = ldexp(1.0, e - 126);
        int lo = search_le(UE8M0_VALS, 256, start), hi = search_le(UE8M0_VALS, 256, nextafter(end, 0));
        UE8M0_BIN_LO[e] = lo;                       /* -1: below the smallest value */
        UE8M0_BIN_HI[e] = hi;
    }
}

double ref_f32_value(uint32_t x)
{
    float f;
    memcpy(&f, &x, 4);
    return (double)f;
}



void ref_round_f32(const RefFmt *f, uint32_t x, uint32_t out[4])
{
    double v = ref_f32_value(x);
    if (isnan(v)) {
        for (int i = 0; i < 4; i++)
            out[i] = (uint32_t)f->nan_code;
        return;
    }
    bool neg = signbit(v);
    uint32_t sign = (uint32_t)neg << f->sign_shift;
    double a = fabs(v);
    int over = f->max_code + 1;   /* "beyond max": becomes inf or is clamped below */
    int c[4];
    if (isinf(a)) {
        for (int i = 0; i < 4; i++)
            c[i] = over;
    } else {
        int e = (int)((x >> 23) & 0xFF);
        int lo = search_range(f->vals, f->bin_lo[e], f->bin_hi[e], a);
        if (lo == f->nvals) {
            /* at or above "beyond": nearest and outward roundings overflow, inward ones stop
             * at max */
            c[0] = over;
            c[1] = f->max_code;
            c[2] = neg ? over : f->max_code;
            c[3] = neg ? f->max_code : over;
        } else if (f->vals[lo] == a) {
            for (int i = 0; i < 4; i++)
                c[i] = lo;
        } else {
            int hi = lo + 1;
            double twice = 2 * a, sum = f->vals[lo] + f->vals[hi];
            c[0] = twice < sum ? lo : twice > sum ? hi : (lo % 2 == 0 ? lo : hi);
            c[1] = lo;
            c[2] = neg ? hi : lo;   /* RM: toward -inf, i.e. away from zero when negative */
            c[3] = neg ? lo : hi;
        }
    }
    for (int i = 0; i < 4; i++) {
        int code = c[i];
        if (code > f->max_code)
            code = f->satfinite ? f->max_code : f->max_code + 1;
        out[i] = sign | (uint32_t)code;
    }
}

void ref_ue8m0(uint32_t x, uint8_t out[4])
{
    double a = fabs(ref_f32_value(x));
    if (isnan(a)) {
        memset(out, 0xFF, 4);
        return;
    }
    if (isinf(a)) {
        out[0] = out[2] = 0xFF;
        out[1] = out[3] = 0xFE;
        return;
    }
    int e = (int)((x >> 23) & 0xFF);
    int lo = UE8M0_BIN_LO[e] < 0 ? (a >= UE8M0_VALS[0] ? 0 : -1)
                                 : search_range(UE8M0_VALS, UE8M0_BIN_LO[e], UE8M0_BIN_HI[e], a);
    int rz = lo < 0 ? 0 : lo;
    int rp;
    if (lo < 0)
        rp = 0;                                  /* at most 2^-127: the smallest code */
    else if (UE8M0_VALS[lo] == a)
        rp = lo;
    else
        rp = lo + 1;                             /* 255 when a > 2^127 */
    out[0] = (uint8_t)rz;
    out[1] = (uint8_t)(rz == 255 ? 254 : rz);
    out[2] = (uint8_t)rp;
    out[3] = (uint8_t)(rp == 255 ? 254 : rp);
}

/* fp16_bits_RZ as spec §6.3 describes it, for fp32 exponent fields up to 142 */
static uint32_t spec_fp16_rz(uint32_t x)
{
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t e = (x >> 23) & 0xFF, m = x & 0x7FFFFFu;
    if (e < 103)
        return sign;
    if (e <= 112)
        return sign | ((m | 0x800000u) >> (126 - e));
    return sign | (e - 112) << 10 | m >> 13;
}

uint16_t ref_e5m6_spec(uint32_t x)
{
    uint32_t h = spec_fp16_rz(x);
    uint32_t c = h >> 4;
    uint32_t rem = x & 0x1FFFFu;
    if ((c & 1) + rem > 0x10000u)
        c += 1;
    return (uint16_t)(c & 0xFFF);
}

void tally_fail(Tally *t, const char *fmt, ...)
{
    if (t->bad < 4) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(t->first[t->bad], sizeof t->first[0], fmt, ap);
        va_end(ap);
    }
    t->bad++;
}

void tally_merge(Tally *into, const Tally *from)
{
    for (uint64_t i = 0; i < from->bad && into->bad + i < 4 && i < 4; i++)
        memcpy(into->first[into->bad + i], from->first[i], sizeof into->first[0]);
    into->checked += from->checked;
    into->bad += from->bad;
}

int tally_report(const Tally *t)
{
    printf("%s: %llu checked, %llu mismatches\n", t->name, (unsigned long long)t->checked,
           (unsigned long long)t->bad);
    for (uint64_t i = 0; i < t->bad && i < 4; i++)
        printf("    %s\n", t->first[i]);
    return t->bad != 0 || t->checked == 0;
}

double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
