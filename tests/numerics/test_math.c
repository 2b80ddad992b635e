/* test_math.c — the correctly rounded exp2/rsqrt references against long-double libm, the
 * ex2/rsqrt MUFU models' documented properties, CUDA's expf sequence on top of the ex2 model
 * (within CUDA's documented 2 ulp of e^x), and the MUFU table format: encode, install, apply,
 * and every install error message. */
#include "numerics.h"
#include "ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* f32 spacing at |v| (subnormal spacing below 2^-126) */
static long double spacing(long double v)
{
    int e;
    frexpl(v, &e);
    return ldexpl(1.0L, e - 24 > -149 ? e - 24 : -149);
}

/* RNE of a positive long double y known to within a tiny relative error; false when y is
 * too close to a rounding boundary to decide */
static bool round_certain(long double y, uint32_t *out)
{
    long double q = spacing(y);
    long double s = y / q, fl = floorl(s), fr = s - fl;
    if (fabsl(fr - 0.5L) < 0x1p-20L)
        return false;
    long double r = (fr > 0.5L ? fl + 1 : fl) * q;
    *out = r >= 0x1p128L ? 0x7F800000u : tl_num_bits((float)r);
    return true;
}

static void check_exp2_cr(int *fail)
{
    Tally t = {"exp2_cr vs exp2l (grid i/2^23 in [0,1) + 4M random in [-151,128])", 0, 0, {{0}}};
    uint64_t skipped = 0, s = 0xE2;
    for (uint64_t i = 0; i < (1u << 23) + 4000000u; i++) {
        float x;
        if (i < (1u << 23))
            x = (float)ldexp((double)i, -23);
        else
            x = (float)(-151.0 + 279.0 * (double)(rng_next(&s) >> 11) * 0x1p-53);
        uint32_t want;
        if (!round_certain(exp2l((long double)x), &want)) {
            skipped++;
            continue;
        }
        uint32_t got = tl_num_exp2_cr(tl_num_bits(x));
        tally_hit(&t, got == want, "x=%08x got %08x want %08x", tl_num_bits(x), got, want);
    }
    const struct { uint32_t x, want; } sp[] = {
        {0x00000000u, 0x3F800000u}, {0x80000000u, 0x3F800000u}, {0x3F800000u, 0x40000000u},
        {0x43000000u, 0x7F800000u}, {0xC3150000u, 0x00000001u} /* 2^-149 */,
        {0xC3160000u, 0x00000000u} /* 2^-150: tie to even 0 */, {0x7F800000u, 0x7F800000u},
        {0xFF800000u, 0x00000000u}, {0xFFC00001u, 0x7FFFFFFFu}, {0x42FE0000u, 0x7F000000u},
    };
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) {
        uint32_t got = tl_num_exp2_cr(sp[i].x);
        tally_hit(&t, got == sp[i].want, "x=%08x got %08x want %08x", sp[i].x, got, sp[i].want);
    }
    *fail |= tally_report(&t);
    printf("    (%llu inputs too close to a boundary for exp2l to decide, skipped)\n",
           (unsigned long long)skipped);
    if (skipped > 1000)
        *fail = 1;
}

static void check_rsqrt_cr(int *fail)
{
    Tally t = {"rsqrt_cr vs 1/sqrtl (all of [1,4) + 4M random positive)", 0, 0, {{0}}};
    uint64_t skipped = 0, s = 0x75;
    for (uint64_t i = 0; i < (1u << 24) + 4000000u; i++) {
        uint32_t x = i < (1u << 24) ? 0x3F800000u + (uint32_t)i
                                    : 1u + (uint32_t)(rng_next(&s) % 0x7F7FFFFFu);
        uint32_t want;
        long double v = tl_num_float(x);
        if (!round_certain(1.0L / sqrtl(v), &want)) {
            skipped++;
            continue;
        }
        uint32_t got = tl_num_rsqrt_cr(x);
        tally_hit(&t, got == want, "x=%08x got %08x want %08x", x, got, want);
    }
    const struct { uint32_t x, want; } sp[] = {
        {0x00000000u, 0x7F800000u}, {0x80000000u, 0xFF800000u}, {0x7F800000u, 0x00000000u},
        {0xBF800000u, 0x7FFFFFFFu}, {0x40800000u, 0x3F000000u}, {0x00000001u, 0x64B504F3u},
    };
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) {
        uint32_t got = tl_num_rsqrt_cr(sp[i].x);
        tally_hit(&t, got == sp[i].want, "x=%08x got %08x want %08x", sp[i].x, got, sp[i].want);
    }
    *fail |= tally_report(&t);
    printf("    (%llu skipped as undecidable by sqrtl)\n", (unsigned long long)skipped);
    if (skipped > 1000)
        *fail = 1;
}

static void check_models(int *fail)
{
    Tally t = {"ex2/rsqrt model properties", 0, 0, {{0}}};
    /* no fraction bits are lost when |x| >= 1: the model is 2^x correctly rounded, flushed */
    uint64_t s = 0x3D;
    for (int i = 0; i < 2000000; i++) {
        float x = (float)(-140.0 + 268.0 * (double)(rng_next(&s) >> 11) * 0x1p-53);
        if (fabsf(x) < 1.0f)
            continue;
        uint32_t cr = tl_num_exp2_cr(tl_num_bits(x));
        uint32_t want = cr < 0x00800000u ? 0 : cr;    /* ftz */
        uint32_t got = tl_num_ex2_approx_ftz_model(tl_num_bits(x));
        tally_hit(&t, got == want, "ex2 x=%g got %08x want %08x", x, got, want);
    }
    /* |x| < 1: |x| is cut toward zero to 23 fraction bits first (sign-magnitude) */
    for (int i = 0; i < 2000000; i++) {
        float x = (float)(-1.0 + 2.0 * (double)(rng_next(&s) >> 11) * 0x1p-53);
        float q = (float)(trunc(ldexp((double)x, 23)) * 0x1p-23);
        uint32_t got = tl_num_ex2_approx_ftz_model(tl_num_bits(x));
        uint32_t want = tl_num_exp2_cr(tl_num_bits(q));
        tally_hit(&t, got == want, "ex2 x=%a got %08x want %08x", (double)x, got, want);
    }
    const struct { uint32_t x, want; } ex2sp[] = {
        {0x00000000u, 0x3F800000u}, {0x80000001u, 0x3F800000u} /* ftz input */,
        {0x007FFFFFu, 0x3F800000u}, {0x7F800000u, 0x7F800000u}, {0xFF800000u, 0u},
        {0x7FC00000u, 0x7FFFFFFFu}, {0xC2FC0000u, 0x00800000u} /* 2^-126 */,
        {0xC2FD0000u, 0u} /* 2^-126.5: flushed */, {0x43000000u, 0x7F800000u},
        {0xBF800000u, 0x3F000000u}, {0xB3800000u, 0x3F800000u} /* -2^-24 -> cut to 0 */,
        {0xB4000000u, 0x3F7FFFFFu} /* -2^-23 */, {0xBF000000u, 0x3F3504F3u} /* -0.5 */,
    };
    for (size_t i = 0; i < sizeof ex2sp / sizeof ex2sp[0]; i++) {
        uint32_t got = tl_num_ex2_approx_ftz_model(ex2sp[i].x);
        tally_hit(&t, got == ex2sp[i].want, "ex2 x=%08x got %08x want %08x", ex2sp[i].x, got,
                  ex2sp[i].want);
    }
    /* rsqrt model: the correctly rounded value; ftz flushes subnormal inputs */
    for (int i = 0; i < 2000000; i++) {
        uint32_t x = (uint32_t)rng_next(&s) & 0x7FFFFFFFu;
        uint32_t got = tl_num_rsqrt_approx_model(x, false);
        tally_hit(&t, got == tl_num_rsqrt_cr(x), "rsqrt x=%08x got %08x", x, got);
        uint32_t gotf = tl_num_rsqrt_approx_model(x, true);
        uint32_t wantf = x < 0x00800000u ? 0x7F800000u : tl_num_rsqrt_cr(x);
        tally_hit(&t, gotf == wantf, "rsqrt.ftz x=%08x got %08x", x, gotf);
    }
    tally_hit(&t, !tl_num_ex2_is_exact() && !tl_num_rsqrt_is_exact(), "tables reported installed");
    tally_hit(&t, tl_num_ex2_approx_ftz(0x3F000000u) == tl_num_ex2_approx_ftz_model(0x3F000000u),
              "without a table ex2 must be the model");
    *fail |= tally_report(&t);
}

static void check_expf(int *fail)
{
    Tally t = {"expf sequence on the ex2 model: <= 2 ulp from e^x (4M random in [-104, 89])", 0, 0, {{0}}};
    uint64_t s = 0xE7;
    long double worst = 0;
    for (int i = 0; i < 4000000; i++) {
        float x = (float)(-104.0 + 193.0 * (double)(rng_next(&s) >> 11) * 0x1p-53);
        long double e = expl((long double)x);
        uint32_t got = tl_num_expf(tl_num_bits(x));
        long double g = tl_num_float(got);
        long double err = e >= 0x1p128L ? (got == 0x7F800000u ? 0 : 99) : fabsl(g - e) / spacing(e);
        if (err > worst)
            worst = err;
        tally_hit(&t, err <= 2.0L, "x=%a got %08x (%.3Lf ulp)", (double)x, got, err);
    }
    const struct { uint32_t x, want; } sp[] = {
        {0x00000000u, 0x3F800000u}, {0x80000000u, 0x3F800000u}, {0x7F800000u, 0x7F800000u},
        {0xFF800000u, 0x00000000u}, {0x7FC00000u, 0x7FFFFFFFu}, {0xFFC00123u, 0x7FFFFFFFu},
        {0x42B20000u, 0x7F800000u} /* 89 */, {0xC2D00000u, 0x00000000u} /* -104 */,
    };
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) {
        uint32_t got = tl_num_expf(sp[i].x);
        tally_hit(&t, got == sp[i].want, "x=%08x got %08x want %08x", sp[i].x, got, sp[i].want);
    }
    /* subnormal results are produced (the final multiply is not ftz) */
    uint32_t sub = tl_num_expf(0xC2BE0000u);   /* e^-95 ~ 5.5e-42 */
    tally_hit(&t, sub > 0 && sub < 0x00800000u, "expf(-95) = %08x, expected a subnormal", sub);
    *fail |= tally_report(&t);
    printf("    (worst error %.3Lf ulp)\n", worst);
}

static void check_log1pf(int *fail)
{
    Tally t = {"log1pf sequence: <= 1 ulp from log1p(x) (4M random over (-1, 2^40], by exponent)", 0, 0, {{0}}};
    uint64_t s = 0x11B;
    long double worst = 0;
    for (int i = 0; i < 4000000; i++) {
        /* a random sign, exponent and mantissa, so tiny, moderate and huge arguments all occur */
        uint32_t bits = (uint32_t)(rng_next(&s) >> 32);
        uint32_t ex = (bits >> 23) % 168;        /* biased exponents 0 .. 167 (up to 2^40) */
        uint32_t xb = (bits & 0x807FFFFFu) | ex << 23;
        float x = tl_num_float(xb);
        if (x <= -1.0f)
            continue;
        long double e = log1pl((long double)x);
        uint32_t got = tl_num_log1pf(xb);
        long double err = e == 0 ? (got == xb ? 0 : 99) : fabsl(tl_num_float(got) - e) / spacing(e);
        if (err > worst)
            worst = err;
        tally_hit(&t, err <= 1.0L, "x=%a got %08x (%.3Lf ulp)", (double)x, got, err);
    }
    const struct { uint32_t x, want; } sp[] = {
        {0x00000000u, 0x00000000u}, {0x80000000u, 0x80000000u}, {0x7F800000u, 0x7F800000u},
        {0xBF800000u, 0xFF800000u} /* -1 */, {0xBF800001u, 0x7FFFFFFFu}, {0xFF800000u, 0x7FFFFFFFu},
        {0x7FC00000u, 0x7FFFFFFFu}, {0x00000001u, 0x00000001u} /* subnormals are kept */,
    };
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) {
        uint32_t got = tl_num_log1pf(sp[i].x);
        tally_hit(&t, got == sp[i].want, "x=%08x got %08x want %08x", sp[i].x, got, sp[i].want);
    }
    *fail |= tally_report(&t);
    printf("    (worst error %.3Lf ulp)\n", worst);
}

/* y * 2^sc for a normal y, flushed to +0 below 2^-126 (ex2's exponent path) */
static uint32_t scaled(uint32_t y, int sc)
{
    int e = (int)(y >> 23) + sc;
    return e <= 0 ? 0 : (uint32_t)e << 23 | (y & 0x7FFFFFu);
}

/* deltas used for synthetic tables: any fixed pattern that exercises every value */
static int32_t synth_delta(uint64_t i, int spread, int lo) { return (int32_t)((i * 7 + i / 3) % (uint64_t)spread) + lo; }

static void expect_install_error(Tally *t, const uint8_t *blob, size_t len, const char *want)
{
    char err[200] = "";
    int rc = tl_num_mufu_install(blob, len, err, sizeof err);
    tally_hit(t, rc == -1 && strcmp(err, want) == 0, "want \"%s\", got rc %d \"%s\"", want, rc, err);
}

/* the two rules for x < 0: a kind 1 table with cut 3 (one's complement of the fraction),
 * then a kind 3 table (sign-magnitude), which takes over; d1 holds the kind 1 deltas */
enum { N1 = 12, N2 = 10, N3 = 11 };

static void check_negative_rules(Tally *t, const int32_t *d1)
{
    char err[200] = "";
    size_t n = tl_num_mufu_encode(1, N1, 3, d1, NULL, 0);
    uint8_t *b = malloc(n);
    tally_hit(t, n > 0 && tl_num_mufu_encode(1, N1, 3, d1, b, n) == n, "encode cut 3");
    tally_hit(t, tl_num_mufu_install(b, n, err, sizeof err) == 0, "install cut 3: %s", err);
    tally_hit(t, tl_num_ex2_is_exact(), "a cut-3 table is complete");
    int32_t *d3 = malloc(sizeof(int32_t) << N3);
    for (uint64_t i = 0; i < (1u << N3); i++)
        d3[i] = synth_delta(i, 4, -1);
    size_t n3 = tl_num_mufu_encode(3, N3, 1, d3, NULL, 0);
    uint8_t *b3 = malloc(n3);
    tally_hit(t, n3 > 0 && tl_num_mufu_encode(3, N3, 1, d3, b3, n3) == n3, "encode kind 3");
    uint64_t s = 0x0E5;
    for (int pass = 0; pass < 2; pass++) {
        unsigned nb = pass == 0 ? N1 : N3;
        if (pass == 1)
            tally_hit(t, tl_num_mufu_install(b3, n3, err, sizeof err) == 0, "install kind 3: %s", err);
        for (int k = 0; k < 200000; k++) {
            uint64_t r = rng_next(&s);
            int ip = (int)(r % 140);
            uint32_t j = (uint32_t)(r >> 8) & ((1u << nb) - 1);
            if (k < 64)
                j = k < 32 ? 0 : (1u << nb) - 1;    /* the edges of the fraction */
            double u = (double)((r >> 40) & 0xFF) / 256.0;
            double v = -(ip + (j + u) / (1 << nb));
            float x = (float)v;
            if ((double)x != v)
                continue;   /* keep inputs whose cut is known exactly */
            uint32_t want;
            if (pass == 1) {
                want = scaled(tl_num_exp2_cr(tl_num_bits((float)-ldexp(j, -N3))) + (uint32_t)d3[j], -ip);
            } else if (j == 0) {
                want = scaled(0x3F800000u, -ip);
            } else {
                uint32_t jc = (1u << N1) - 1 - j;
                want = scaled(tl_num_exp2_cr(tl_num_bits((float)ldexp(jc, -N1))) + (uint32_t)d1[jc], -ip - 1);
            }
            uint32_t got = tl_num_ex2_approx_ftz(tl_num_bits(x));
            tally_hit(t, got == want, "%s x=%a got %08x want %08x", pass ? "kind 3" : "cut 3",
                      (double)x, got, want);
        }
    }
    /* positive inputs keep using the kind 1 table */
    tally_hit(t, tl_num_ex2_approx_ftz(0x3F000000u)
                     == tl_num_exp2_cr(0x3F000000u) + (uint32_t)d1[1u << (N1 - 1)],
              "ex2(0.5) with both tables");
    tl_num_mufu_uninstall(3);
    tally_hit(t, tl_num_ex2_is_exact(), "the cut-3 table alone after removing kind 3");
    free(b);
    free(b3);
    free(d3);
}

static void check_tables(int *fail)
{
    Tally t = {"MUFU table encode/install/apply", 0, 0, {{0}}};
    int32_t *d1 = malloc(sizeof(int32_t) << N1), *d2 = malloc(sizeof(int32_t) << N2);
    for (uint64_t i = 0; i < (1u << N1); i++)
        d1[i] = synth_delta(i, 5, -2);
    for (uint64_t i = 0; i < (1u << N2); i++)
        d2[i] = synth_delta(i, 3, -1);
    size_t n1 = tl_num_mufu_encode(1, N1, 0, d1, NULL, 0);
    size_t n2 = tl_num_mufu_encode(2, N2, 0, d2, NULL, 0);
    /* 5 distinct deltas need 3 bits, 3 need 2 bits */
    tally_hit(&t, n1 == 36 + ((1u << N1) * 3 + 7) / 8 && n2 == 36 + ((1u << N2) * 2 + 7) / 8,
              "encoded sizes %zu %zu", n1, n2);
    uint8_t *b1 = malloc(n1), *b2 = malloc(n2);
    tally_hit(&t, tl_num_mufu_encode(1, N1, 0, d1, b1, n1) == n1 && tl_num_mufu_encode(2, N2, 0, d2, b2, n2) == n2,
              "encode failed");
    /* the header as the format describes it, read byte by byte */
    tally_hit(&t, memcmp(b1, "TLMUFU01", 8) == 0 && b1[8] == 1 && b1[12] == N1 && b1[16] == 3
                      && b1[20] == 0xFE && b1[21] == 0xFF && b1[24] == 0,
              "header bytes");
    /* entry i sits at bits [3i, 3i+3), LSB first: check entry 0..2 by hand */
    unsigned e0 = b1[36] & 7, e1 = (b1[36] >> 3) & 7, e2 = (b1[36] >> 6 | b1[37] << 2) & 7;
    tally_hit(&t, (int)e0 - 2 == d1[0] && (int)e1 - 2 == d1[1] && (int)e2 - 2 == d1[2],
              "entries %u %u %u", e0, e1, e2);

    char err[200] = "";
    tally_hit(&t, tl_num_mufu_install(b1, n1, err, sizeof err) == 0, "install ex2: %s", err);
    tally_hit(&t, tl_num_mufu_install(b2, n2, err, sizeof err) == 0, "install rsqrt: %s", err);
    /* a cut-0 table leaves x < 0 to the floor split, which is not the hardware's rule */
    tally_hit(&t, !tl_num_ex2_is_exact() && tl_num_rsqrt_is_exact(), "installed state");
    /* ex2: x = i + (j + u) / 2^N1 with u in [0,1) cut away -> 2^i * (CR(2^(j/2^N1)) + d[j]) */
    uint64_t s = 0x7AB;
    for (int k = 0; k < 200000; k++) {
        uint64_t r = rng_next(&s);
        int ip = (int)(r % 200) - 120;
        uint32_t j = (uint32_t)(r >> 8) & ((1u << N1) - 1);
        double u = (double)((r >> 40) & 0xFF) / 256.0;
        float x = (float)(ip + (j + u) / (1 << N1));
        if ((double)x != ip + (j + u) / (1 << N1))
            continue;   /* keep inputs whose cut is known exactly */
        uint32_t base = tl_num_exp2_cr(tl_num_bits((float)ldexp(j, -N1))) + (uint32_t)d1[j];
        uint32_t want = scaled(base, ip);
        uint32_t got = tl_num_ex2_approx_ftz(tl_num_bits(x));
        tally_hit(&t, got == want, "ex2 table x=%a got %08x want %08x", (double)x, got, want);
    }
    /* rsqrt: m * 4^k with m on the 2^N2 grid of [1,4) -> (CR(m) + d) * 2^-k */
    for (int k = 0; k < 200000; k++) {
        uint64_t r = rng_next(&s);
        uint32_t j = (uint32_t)r & ((1u << N2) - 1);
        uint32_t low = (uint32_t)(r >> 16) & ((1u << (24 - N2)) - 1);
        uint32_t m = 0x3F800000u + (j << (24 - N2));
        int sc = (int)((r >> 40) % 120) - 60;
        uint32_t x = m + low + ((uint32_t)(2 * sc) << 23);
        uint32_t want = tl_num_rsqrt_cr(m) + (uint32_t)d2[j] - ((uint32_t)sc << 23);
        uint32_t got = tl_num_rsqrt_approx(x, false);
        tally_hit(&t, got == want, "rsqrt table x=%08x got %08x want %08x", x, got, want);
    }
    check_negative_rules(&t, d1);
    /* expf follows the installed ex2: expf(0) evaluates ex2(0), table entry 0 */
    uint32_t with = tl_num_expf(0);
    tl_num_mufu_uninstall(1);
    tally_hit(&t, !tl_num_ex2_is_exact() && tl_num_rsqrt_is_exact(), "uninstall ex2 only");
    uint32_t without = tl_num_expf(0);
    tally_hit(&t, with == 0x3F800000u + (uint32_t)d1[0] && without == 0x3F800000u,
              "expf(0) with table %08x, without %08x", with, without);
    tl_num_mufu_uninstall(2);
    tally_hit(&t, !tl_num_rsqrt_is_exact(), "uninstall rsqrt");

    /* encode refuses what the format cannot hold */
    d1[5] = 300;
    tally_hit(&t, tl_num_mufu_encode(1, N1, 0, d1, NULL, 0) == 0, "spread of 302 accepted");
    tally_hit(&t, tl_num_mufu_encode(2, N1, 1, d2, NULL, 0) == 0, "rsqrt with a cut accepted");
    tally_hit(&t, tl_num_mufu_encode(1, 25, 0, d2, NULL, 0) == 0, "25 index bits accepted");
    tally_hit(&t, tl_num_mufu_encode(1, N1, 4, d2, NULL, 0) == 0, "ex2 with cut 4 accepted");
    tally_hit(&t, tl_num_mufu_encode(3, N1, 0, d2, NULL, 0) == 0, "kind 3 with cut 0 accepted");
    tally_hit(&t, tl_num_mufu_encode(4, N1, 0, d2, NULL, 0) == 0, "kind 4 accepted");

    /* install errors, one per check */
    uint8_t *bad = malloc(n1);
    expect_install_error(&t, b1, 20, "MUFU table: 20 bytes, shorter than the 36-byte header");
    memcpy(bad, b1, n1);
    bad[0] = 'X';
    expect_install_error(&t, bad, n1, "MUFU table: bad magic (expected \"TLMUFU01\")");
    memcpy(bad, b1, n1);
    bad[8] = 4;
    expect_install_error(&t, bad, n1, "MUFU table: unknown kind 4 (1 = ex2, 2 = rsqrt, 3 = ex2 of -f)");
    memcpy(bad, b1, n1);
    bad[8] = 3;
    expect_install_error(&t, bad, n1, "MUFU table: cut 0 invalid for kind 3");
    memcpy(bad, b1, n1);
    bad[12] = 25;
    expect_install_error(&t, bad, n1, "MUFU table: index_bits 25 outside 1..24");
    memcpy(bad, b1, n1);
    bad[16] = 9;
    expect_install_error(&t, bad, n1, "MUFU table: bits_per_entry 9 outside 1..8");
    memcpy(bad, b1, n1);
    bad[24] = 4;
    expect_install_error(&t, bad, n1, "MUFU table: cut 4 invalid for kind 1");
    memcpy(bad, b1, n1);
    bad[16] = 2;
    expect_install_error(&t, bad, n1, "MUFU table: payload_bytes 1536, expected 1024");
    expect_install_error(&t, b1, n1 - 1, "MUFU table: blob is 1571 bytes, header says 1572");
    memcpy(bad, b1, n1);
    bad[n1 - 1] ^= 0x40;
    expect_install_error(&t, bad, n1, "MUFU table: payload hash mismatch (corrupt file)");
    tally_hit(&t, !tl_num_ex2_is_exact(), "a failed install left a table");
    *fail |= tally_report(&t);
    free(d1);
    free(d2);
    free(b1);
    free(b2);
    free(bad);
}

int main(void)
{
    int fail = 0;
    double t0 = now_seconds();
    check_exp2_cr(&fail);
    check_rsqrt_cr(&fail);
    check_models(&fail);
    check_expf(&fail);
    check_log1pf(&fail);
    check_tables(&fail);
    printf("time %.1f s\n", now_seconds() - t0);
    return fail;
}
