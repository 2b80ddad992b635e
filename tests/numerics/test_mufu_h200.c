/* test_mufu_h200.c — the MUFU tables built into the library against what an H200 produced:
 * the results printed in the report of the 2026-11-30 sweep
 * (tests/gpu/numerics/data/h200_sweep_report.txt), and
 * every record of the samples file mufu_dump writes (mufu_samples.bin, when committed); the
 * predictions mufu_dump tests on the GPU (mufu_model.h) against numerics.c; and the packed
 * table installer's error messages.
 * Usage: test_numerics_mufu_h200 SWEEP_REPORT [SAMPLES] */
#include "numerics.h"
#include "ref.h"
#include "mufu_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* the unit's ex2 on the grids, as numerics.c now computes it */
static uint32_t *g_P, *g_M;
/* whether the built-in tables include a kind 3 table (ex2(-f) measured): then negative inputs
 * follow it (sign-magnitude), not the one's complement rule of a cut-3 kind 1 table */
static bool g_have_neg;

static void build_grids(void)
{
    g_P = malloc(sizeof(uint32_t) << MUFU_FBITS);
    g_M = malloc(sizeof(uint32_t) << MUFU_FBITS);
    for (uint32_t i = 0; i <= MUFU_FMASK; i++) {
        float f = (float)ldexp(i, -MUFU_FBITS);
        g_P[i] = tl_num_ex2_approx_ftz(tl_num_bits(f));
        g_M[i] = tl_num_ex2_approx_ftz(tl_num_bits(-f));
    }
}

/* The report's lines that carry hardware results, and the columns the sweep's numerics.c
 * printed beside them (its ex2 table split negative inputs the two's complement way). */
typedef struct ReportCounts { int ex2_special, separability, ex2_table, expf, rsqrt; } ReportCounts;

static void check_report(const char *path, int *fail)
{
    Tally t = {"sweep report: hardware results vs numerics.c with the built-in tables", 0, 0, {{0}}};
    Tally old = {"sweep report: its numerics.c columns vs the two's complement split", 0, 0, {{0}}};
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("cannot open %s\n", path);
        *fail = 1;
        return;
    }
    ReportCounts c = {0, 0, 0, 0, 0};
    char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned x, y, z, yf;
        char *p;
        if ((p = strstr(line, "separability in=")) && sscanf(p, "separability in=%x %*s hw=%x predicted=%x", &x, &y, &z) == 3) {
            c.separability++;
            tally_hit(&t, tl_num_ex2_approx_ftz(x) == y, "ex2(%08x) = %08x, H200 %08x", x, tl_num_ex2_approx_ftz(x), y);
            tally_hit(&old, mufu_pred_twos(x, g_P) == z, "two's complement ex2(%08x) = %08x, sweep %08x", x,
                      mufu_pred_twos(x, g_P), z);
        } else if ((p = strstr(line, "ex2(")) && sscanf(p, "ex2(%x = %*s = %x", &x, &y) == 2) {
            c.ex2_special++;
            tally_hit(&t, tl_num_ex2_approx_ftz(x) == y, "ex2(%08x) = %08x, H200 %08x", x, tl_num_ex2_approx_ftz(x), y);
        } else if ((p = strstr(line, "in=")) && sscanf(p, "in=%x hw=%x numerics=%x", &x, &y, &z) == 3) {
            c.ex2_table++;
            tally_hit(&t, tl_num_ex2_approx_ftz(x) == y, "ex2(%08x) = %08x, H200 %08x", x, tl_num_ex2_approx_ftz(x), y);
            tally_hit(&old, mufu_pred_twos(x, g_P) == z, "two's complement ex2(%08x) = %08x, sweep %08x", x,
                      mufu_pred_twos(x, g_P), z);
        } else if ((p = strstr(line, "x=")) && sscanf(p, "x=%x %*s expf=%x", &x, &y) == 2) {
            c.expf++;
            tally_hit(&t, tl_num_expf(x) == y, "expf(%08x) = %08x, H200 %08x", x, tl_num_expf(x), y);
        } else if ((p = strstr(line, "rsqrt(")) && sscanf(p, "rsqrt(%x) = %x / %x", &x, &y, &yf) == 3) {
            c.rsqrt++;
            tally_hit(&t, tl_num_rsqrt_approx(x, false) == y && tl_num_rsqrt_approx(x, true) == yf,
                      "rsqrt(%08x) = %08x / %08x, H200 %08x / %08x", x, tl_num_rsqrt_approx(x, false),
                      tl_num_rsqrt_approx(x, true), y, yf);
        }
    }
    fclose(f);
    /* what the sweep printed: 20 ex2 specials, 16 separability examples, 6 ex2 and 6 expf
     * mismatches of its model, 15 rsqrt specials */
    tally_hit(&t, c.ex2_special == 20 && c.separability == 16 && c.ex2_table == 6 && c.expf == 6 && c.rsqrt == 15,
              "parsed %d/%d/%d/%d/%d lines, expected 20/16/6/6/15", c.ex2_special, c.separability,
              c.ex2_table, c.expf, c.rsqrt);
    *fail |= tally_report(&t);
    *fail |= tally_report(&old);
}

/* The built-in ex2 table re-encoded from the grid with the given cut: cut 1 is what the sweep
 * installed (negative inputs split the two's complement way), cut 3 the built-in rule. */
static uint8_t *grid_table(unsigned cut, size_t *len)
{
    int32_t *d = malloc(sizeof(int32_t) << MUFU_FBITS);
    for (uint32_t i = 0; i <= MUFU_FMASK; i++)
        d[i] = (int32_t)(g_P[i] - tl_num_exp2_cr(tl_num_bits((float)ldexp(i, -MUFU_FBITS))));
    *len = tl_num_mufu_encode(1, MUFU_FBITS, cut, d, NULL, 0);
    uint8_t *b = malloc(*len);
    tl_num_mufu_encode(1, MUFU_FBITS, cut, d, b, *len);
    free(d);
    return b;
}

static bool install(const uint8_t *b, size_t n)
{
    char err[200];
    return tl_num_mufu_install(b, n, err, sizeof err) == 0;
}

/* the sweep's expf column: tl_num_expf with the cut-1 table must print what the sweep's
 * numerics.c printed */
static void check_report_expf_old(const char *path, const uint8_t *cut1, size_t n1, int *fail)
{
    Tally t = {"sweep report: its tl_num_expf column vs numerics.c with a cut-1 ex2 table", 0, 0, {{0}}};
    tl_num_mufu_uninstall(3);   /* a kind 3 table would take over the negative inputs */
    tally_hit(&t, install(cut1, n1), "cut-1 table refused");
    tally_hit(&t, !tl_num_ex2_is_exact(), "a cut-1 table must not count as complete");
    FILE *f = fopen(path, "r");
    char line[512];
    int seen = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned x, z;
        char *p;
        if ((p = strstr(line, "x=")) && sscanf(p, "x=%x %*s expf=%*x tl_num_expf=%x", &x, &z) == 2) {
            seen++;
            tally_hit(&t, tl_num_expf(x) == z, "expf(%08x) = %08x, sweep %08x", x, tl_num_expf(x), z);
        }
    }
    if (f)
        fclose(f);
    tally_hit(&t, seen == 6, "parsed %d expf lines, expected 6", seen);
    *fail |= tally_report(&t);
}

/* The sweep counted the inputs where the hardware differed from its two's complement model. If
 * the hardware follows the built-in rule, those counts are the numbers of inputs where the
 * two rules differ, on the same input sets; they are reproduced exactly. */
static uint64_t count_differ(bool expf, const uint32_t *in, size_t m, const uint8_t *a, size_t na,
                             const uint8_t *b, size_t nb)
{
    enum { CH = 1 << 20 };
    uint32_t *ra = malloc(sizeof(uint32_t) * CH);
    uint64_t differ = 0;
    for (size_t lo = 0; lo < m; lo += CH) {
        size_t hi = lo + CH < m ? lo + CH : m;
        install(a, na);
        for (size_t i = lo; i < hi; i++)
            ra[i - lo] = expf ? tl_num_expf(in[i]) : tl_num_ex2_approx_ftz(in[i]);
        install(b, nb);
        for (size_t i = lo; i < hi; i++)
            differ += ra[i - lo] != (expf ? tl_num_expf(in[i]) : tl_num_ex2_approx_ftz(in[i]));
    }
    free(ra);
    return differ;
}

static void check_sweep_counts(const uint8_t *cut1, size_t n1, const uint8_t *cut3, size_t n3, int *fail)
{
    Tally t = {"sweep mismatch counts reproduced by the built-in rule vs the sweep's model", 0, 0, {{0}}};
    /* the separability kernel: every r < 0 with |r| < 256 */
    uint64_t sep = 0;
    for (uint32_t m = 0; m < 0x43800000u; m++) {
        uint32_t rb = 0x80000000u | m;
        sep += mufu_pred_ones(rb, g_P) != mufu_pred_twos(rb, g_P);
    }
    tally_hit(&t, sep == 245589737u, "separability, r < 0: %llu, sweep 245589737", (unsigned long long)sep);
    /* the check of its numerics.c: every 61st r of the domain, [-26,-24], [1.99,2.01], the
     * 20 specials of its report */
    size_t cap = 40000000, m = 0;
    uint32_t *in = malloc(sizeof(uint32_t) * cap);
    for (uint64_t u = 0; u < 2ull * 0x43800000u; u += 61)
        in[m++] = u < 0x43800000u ? (uint32_t)u : 0x80000000u | (uint32_t)(u - 0x43800000u);
    for (uint32_t x = 0xC1C00000u; x <= 0xC1D00000u; x++)
        in[m++] = x;
    for (uint32_t x = 0x3FFEB852u; x <= 0x4000A3D7u; x++)
        in[m++] = x;
    const uint32_t sp[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x3F800000u, 0xBF800000u,
                           0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u, 0x7F800001u, 0x43000000u,
                           0x42FFFFFFu, 0xC2FC0000u, 0xC2FC0001u, 0xC2FE0000u, 0xC3000000u, 0x3F000000u,
                           0x33800000u, 0xB3800000u};
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++)
        in[m++] = sp[i];
    uint64_t d = count_differ(false, in, m, cut1, n1, cut3, n3);
    tally_hit(&t, m == 38304332u && d == 5001255u, "ex2: %zu inputs, %llu differ; sweep 38304332, 5001255",
              m, (unsigned long long)d);
    /* its expf check: every 61st |x| < 128, [-104,-87], [87,89], 8 specials */
    m = 0;
    for (uint64_t u = 0; u < 2ull * 0x43000000u; u += 61)
        in[m++] = u < 0x43000000u ? (uint32_t)u : 0x80000000u | (uint32_t)(u - 0x43000000u);
    for (uint32_t x = 0xC2AE0000u; x <= 0xC2D00000u; x++)
        in[m++] = x;
    for (uint32_t x = 0x42AE0000u; x <= 0x42B20000u; x++)
        in[m++] = x;
    const uint32_t sp2[] = {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u,
                            0x43800000u, 0xC3800000u, 0x7F7FFFFFu, 0xFF7FFFFFu};
    for (size_t i = 0; i < sizeof sp2 / sizeof sp2[0]; i++)
        in[m++] = sp2[i];
    d = count_differ(true, in, m, cut1, n1, cut3, n3);
    tally_hit(&t, m == 39345246u && d == 775008u, "expf: %zu inputs, %llu differ; sweep 39345246, 775008",
              m, (unsigned long long)d);
    free(in);
    *fail |= tally_report(&t);
}

/* the GPU program's predictions, fed with the grids, against numerics.c on random inputs of
 * the ex2 domain (|r| < 256) */
static void check_predictions(int *fail)
{
    Tally t = {"mufu_model.h predictions vs numerics.c (4M random |r| < 256)", 0, 0, {{0}}};
    uint64_t s = 0x3E2, differ = 0, neg = 0;
    for (int i = 0; i < 4000000; i++) {
        uint64_t r = rng_next(&s);
        uint32_t rb;
        if (i & 1)   /* any bit pattern of the domain (mostly tiny magnitudes) */
            rb = (uint32_t)(r % 0x43800000u) | (uint32_t)(r >> 63) << 31;
        else         /* uniform values */
            rb = tl_num_bits((float)(-256.0 + 512.0 * (double)(r >> 11) * 0x1p-53));
        if ((rb & 0x7FFFFFFFu) >= 0x43800000u)
            continue;
        uint32_t want = tl_num_ex2_approx_ftz(rb);
        if (!(rb >> 31)) {
            tally_hit(&t, mufu_pred_pos(rb, g_P) == want, "pos r=%08x %08x vs %08x", rb, mufu_pred_pos(rb, g_P), want);
            continue;
        }
        neg++;
        if (!g_have_neg)
            tally_hit(&t, mufu_pred_ones(rb, g_P) == want, "ones r=%08x %08x vs %08x", rb,
                      mufu_pred_ones(rb, g_P), want);
        tally_hit(&t, mufu_pred_signmag(rb, g_M) == want, "signmag r=%08x %08x vs %08x", rb,
                  mufu_pred_signmag(rb, g_M), want);
        differ += mufu_pred_twos(rb, g_P) != want;
    }
    /* the split on the bits is the cut numerics.c makes in floating point */
    for (int i = 0; i < 1000000; i++) {
        uint32_t rb = (uint32_t)rng_next(&s) & 0x7FFFFFFFu;
        if (rb >= 0x43800000u)
            continue;
        double m = (rb & 0x7F800000u) ? trunc(ldexp(tl_num_float(rb), MUFU_FBITS)) : 0;
        MufuSplit sp = mufu_split(rb);
        tally_hit(&t, (double)sp.n * 0x1p23 + sp.f == m, "split %08x", rb);
    }
    *fail |= tally_report(&t);
    printf("    (the two's complement split differs at %llu of %llu negative inputs)\n",
           (unsigned long long)differ, (unsigned long long)neg);
    if (differ == 0)
        *fail = 1;   /* the sweep refuted it: the tables must not agree with it */
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void check_samples(const char *path, int *fail)
{
    Tally t = {"mufu_samples.bin (H200 results) vs numerics.c with the built-in tables", 0, 0, {{0}}};
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t len = 0;
    if (f) {
        fseek(f, 0, SEEK_END);
        len = (size_t)ftell(f);
        rewind(f);
        buf = malloc(len ? len : 1);
        if (fread(buf, 1, len, f) != len)
            len = 0;
        fclose(f);
    }
    uint32_t count = len >= 16 ? rd32(buf + 8) : 0;
    bool ok = buf && len >= 16 && memcmp(buf, MUFU_SAMPLES_MAGIC, 8) == 0 && len == 16 + 12 * (size_t)count;
    tally_hit(&t, ok, "%s: missing, truncated or not a samples file", path);
    if (ok) {
        uint32_t h = 2166136261u;
        for (size_t i = 16; i < len; i++)
            h = (h ^ buf[i]) * 16777619u;
        tally_hit(&t, h == rd32(buf + 12), "%s: hash mismatch", path);
        uint64_t per_op[5] = {0};
        for (uint32_t i = 0; i < count; i++) {
            const uint8_t *r = buf + 16 + 12 * (size_t)i;
            uint32_t op = rd32(r), x = rd32(r + 4), y = rd32(r + 8), got;
            switch (op) {
            case MUFU_OP_EX2: got = tl_num_ex2_approx_ftz(x); break;
            case MUFU_OP_RSQRT: got = tl_num_rsqrt_approx(x, false); break;
            case MUFU_OP_RSQRT_FTZ: got = tl_num_rsqrt_approx(x, true); break;
            case MUFU_OP_EXPF: got = tl_num_expf(x); break;
            default: got = ~y; break;
            }
            per_op[op < 5 ? op : 0]++;
            tally_hit(&t, got == y, "op %u x=%08x: H200 %08x, numerics.c %08x", op, x, y, got);
        }
        printf("    (%llu ex2, %llu rsqrt, %llu rsqrt.ftz, %llu expf records)\n",
               (unsigned long long)per_op[1], (unsigned long long)per_op[2],
               (unsigned long long)per_op[3], (unsigned long long)per_op[4]);
        tally_hit(&t, per_op[0] == 0 && per_op[1] && per_op[2] && per_op[3] && per_op[4],
                  "unknown ops or an op without records");
    }
    free(buf);
    *fail |= tally_report(&t);
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* one packed entry (as numerics_embed writes it) for blob; returns its size */
static size_t pack_entry(uint8_t *out, const char *name, const uint8_t *blob, size_t len)
{
    size_t nlen = strlen(name);
    uLongf plen = compressBound((uLong)len);
    compress2(out + 12 + nlen, &plen, blob, (uLong)len, 9);
    put32(out, (uint32_t)len);
    put32(out + 4, (uint32_t)plen);
    put32(out + 8, (uint32_t)nlen);
    memcpy(out + 12, name, nlen);
    return 12 + nlen + plen;
}

static void expect_packed(Tally *t, const uint8_t *p, size_t n, int want_rc, const char *want)
{
    char err[200] = "";
    int rc = tl_num_mufu_install_packed(p, n, err, sizeof err);
    tally_hit(t, rc == want_rc && (want_rc >= 0 || strcmp(err, want) == 0),
              "want %d \"%s\", got %d \"%s\"", want_rc, want, rc, err);
}

static void check_packed(int *fail)
{
    Tally t = {"packed tables: install and error messages", 0, 0, {{0}}};
    int32_t d[16];
    for (int i = 0; i < 16; i++)
        d[i] = i % 3 - 1;
    uint8_t table[64], bad[64], packed[512];
    size_t tl = tl_num_mufu_encode(2, 4, 0, d, table, sizeof table);
    memcpy(bad, table, tl);
    bad[0] = 'X';
    size_t n1 = pack_entry(packed, "a.bin", table, tl);
    size_t n2 = pack_entry(packed + n1, "b.bin", table, tl);
    char want[200];
    expect_packed(&t, packed, n1 + n2, 2, "");
    expect_packed(&t, packed, 5, -1, "packed MUFU tables: truncated entry header at byte 0");
    snprintf(want, sizeof want, "packed MUFU tables: truncated entry header at byte %zu", n1);
    expect_packed(&t, packed, n1 + 7, -1, want);
    snprintf(want, sizeof want, "packed MUFU tables: entry at byte %zu overruns the %zu-byte array",
             n1, n1 + n2 - 1);
    expect_packed(&t, packed, n1 + n2 - 1, -1, want);
    uint8_t garbage[32];
    memcpy(garbage, packed, 17);
    put32(garbage + 4, 12);   /* a 12-byte stream of zeros: not zlib */
    memset(garbage + 17, 0, 12);
    snprintf(want, sizeof want,
             "packed MUFU tables: a.bin does not inflate to %zu bytes (zlib status %d)", tl, Z_DATA_ERROR);
    expect_packed(&t, garbage, 17 + 12, -1, want);
    size_t nb = pack_entry(packed, "c.bin", bad, tl);
    expect_packed(&t, packed, nb, -1,
                  "packed MUFU tables: c.bin: MUFU table: bad magic (expected \"TLMUFU01\")");
    *fail |= tally_report(&t);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s SWEEP_REPORT [SAMPLES]\n", argv[0]);
        return 2;
    }
    int fail = 0;
    double t0 = now_seconds();
    check_packed(&fail);
    Tally b = {"built-in tables", 0, 0, {{0}}};
    char err[200] = "";
    int n = tl_num_mufu_install_builtin(err, sizeof err);
    tally_hit(&b, n == 2 || n == 3, "tl_num_mufu_install_builtin: %d (%s)", n, err);
    g_have_neg = n == 3;
    tally_hit(&b, tl_num_ex2_is_exact() && tl_num_rsqrt_is_exact(), "the built-in tables are incomplete");
    fail |= tally_report(&b);
    if (fail)
        return 1;
    build_grids();
    check_report(argv[1], &fail);
    check_predictions(&fail);
    if (argc == 3)
        check_samples(argv[2], &fail);
    else
        printf("no samples file: run mufu_dump on an H200 and commit its mufu_samples.bin "
               "(tests/gpu/numerics/README.md)\n");
    /* last: these replace the built-in ex2 table */
    size_t n1, n3;
    uint8_t *cut1 = grid_table(1, &n1), *cut3 = grid_table(3, &n3);
    check_report_expf_old(argv[1], cut1, n1, &fail);
    if (!g_have_neg)
        check_sweep_counts(cut1, n1, cut3, n3, &fail);
    else   /* the counts test the one's complement rule, which a kind 3 table replaces */
        printf("built-in kind 3 table: the sweep's counts are not re-derived from the one's complement rule\n");
    free(cut1);
    free(cut3);
    printf("time %.1f s\n", now_seconds() - t0);
    free(g_P);
    free(g_M);
    return fail;
}
