/* test_mma.c — the tensor-core model of numerics_mma.c (numerics.h, "Tensor cores"): bit for bit
 * against a second implementation of the same model written here in long-double arithmetic
 * (decoding by the field formula, truncl for every cut; FP8's last addition by the host's f32
 * addition) on random, cancelling, wide-range, subnormal and special inputs; within the bound
 * the model implies against the exact sum; and the model's invariants: order independence
 * inside an instruction (inside each half of k for FP8), exactness for small integers, the 13
 * ignored bits of tf32, signed zeros, inf / NaN, the cut of each term, FP8's halves and its
 * rounded addition of c, and the warp-level fragment layout against the PTX ISA's tables
 * written out per type. The FP8 model against the H200's own outputs is test_mma_h200.c. */
#include "numerics.h"
#include "ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* a form as the test sees it: the element format by its fields, K, and the model's F and p */
typedef struct TForm {
    const char *name;
    TlNumMma form;
    int k, ebits, mbits;
    bool ieee;            /* top exponent is inf / NaN; else only S.1..1.1..1 is NaN */
    int F, p;             /* of the one step (FP8: of each of its two steps) */
} TForm;

static const TForm FORMS[] = {
    {"f16", TL_NUM_MMA_F16, 16, 5, 10, true, 25, 23},
    {"bf16", TL_NUM_MMA_BF16, 16, 8, 7, true, 25, 23},
    {"tf32", TL_NUM_MMA_TF32, 8, 8, 10, true, 25, 23},
    {"e4m3", TL_NUM_MMA_E4M3, 32, 4, 3, false, 25, 23},
    {"e5m2", TL_NUM_MMA_E5M2, 32, 5, 2, true, 25, 23},
};
enum { NFORMS = sizeof FORMS / sizeof FORMS[0] };

/* ---- the second implementation ---- */

typedef struct TVal {
    int cls;              /* 0 zero, 1 finite, 2 inf, 3 NaN */
    long double v;        /* signed value */
    int e;                /* binade exponent, the smallest normal one for subnormals */
} TVal;

/* element code -> value; tf32 codes are the f32 register (bits 31..13 read) */
static TVal tdecode(const TForm *f, uint32_t code)
{
    if (f->form == TL_NUM_MMA_TF32)
        code >>= 13;
    TVal r = {0, 0.0L, 0};
    int bias = (1 << (f->ebits - 1)) - 1, top = (1 << f->ebits) - 1;
    int E = (int)(code >> f->mbits) & top, M = (int)(code & ((1u << f->mbits) - 1));
    bool neg = (code >> (f->ebits + f->mbits)) & 1;
    if (f->ieee && E == top) {
        r.cls = M ? 3 : 2;
        r.v = neg ? -INFINITY : INFINITY;
        return r;
    }
    if (!f->ieee && E == top && M == (1 << f->mbits) - 1) {
        r.cls = 3;
        return r;
    }
    if (E == 0 && M == 0)
        return r;
    r.cls = 1;
    r.e = E ? E - bias : 1 - bias;
    r.v = ldexpl(E ? (long double)((1 << f->mbits) + M) : (long double)M, r.e - f->mbits);
    if (neg)
        r.v = -r.v;
    return r;
}

static TVal tdecode_f32(uint32_t c)
{
    static const TForm f32 = {"f32", TL_NUM_MMA_F16, 0, 8, 23, true, 0, 0};
    return tdecode(&f32, c);
}

static bool is_fp8(const TForm *f) { return f->k == 32; }

/* one multi-term step: c + the n products va[i] vb[i], aligned, cut, summed, cut */
static uint32_t ref_step(const TForm *f, const TVal *va, const TVal *vb, int n, uint32_t cbits)
{
    TVal c = tdecode_f32(cbits);
    bool nan = c.cls == 3, pinf = c.cls == 2 && c.v > 0, ninf = c.cls == 2 && c.v < 0, any = c.cls == 1;
    int R = c.cls == 1 ? c.e : -133;
    for (int i = 0; i < n; i++) {
        if (va[i].cls == 3 || vb[i].cls == 3)
            nan = true;
        else if (va[i].cls == 2 || vb[i].cls == 2) {
            if (va[i].cls == 0 || vb[i].cls == 0)
                nan = true;
            else if ((va[i].v < 0) != (vb[i].v < 0))
                ninf = true;
            else
                pinf = true;
        } else if (va[i].cls == 1 && vb[i].cls == 1) {
            any = true;
            if (va[i].e + vb[i].e > R)
                R = va[i].e + vb[i].e;
        }
    }
    if (nan || (pinf && ninf))
        return 0x7FFFFFFFu;
    if (pinf || ninf)
        return pinf ? 0x7F800000u : 0xFF800000u;
    if (!any)
        return 0;
    if (R < -133)
        R = -133;
    int lsb = R - f->F;
    long double S = 0;
    for (int i = 0; i < n; i++)
        if (va[i].cls == 1 && vb[i].cls == 1) {
            long double p = va[i].v * vb[i].v; /* exact: at most 22 significant bits */
            long double t = truncl(ldexpl(fabsl(p), -lsb));
            S += p < 0 ? -t : t;
        }
    if (c.cls == 1) {
        long double t = truncl(ldexpl(fabsl(c.v), -lsb));
        S += c.v < 0 ? -t : t;
    }
    if (S == 0)
        return 0;
    long double mag = ldexpl(fabsl(S), lsb);
    int ex;
    frexpl(mag, &ex); /* mag in [2^(ex-1), 2^ex) */
    uint32_t sign = S < 0 ? 0x80000000u : 0;
    if (ex - 1 >= 128)
        return sign | 0x7F800000u;
    int eb = ex - 1 < -126 ? -126 : ex - 1, q = eb - f->p;
    float r = (float)ldexpl(truncl(ldexpl(mag, -q)), q);
    return sign | tl_num_bits(r);
}

static uint32_t model_ref(const TForm *f, const uint32_t *a, const uint32_t *b, uint32_t cbits)
{
    TVal va[32], vb[32];
    for (int i = 0; i < f->k; i++) {
        va[i] = tdecode(f, a[i]);
        vb[i] = tdecode(f, b[i]);
    }
    if (!is_fp8(f))
        return ref_step(f, va, vb, f->k, cbits);
    /* FP8: the step over k mod 4 = 0, 1 from +0, the step over k mod 4 = 2, 3 from that, then
     * c + it in f32 arithmetic (round to nearest even) */
    TVal lo_a[16], lo_b[16], hi_a[16], hi_b[16];
    for (int h = 0; h < 16; h++) {
        int kl = 4 * (h / 2) + h % 2;
        lo_a[h] = va[kl], lo_b[h] = vb[kl];
        hi_a[h] = va[kl + 2], hi_b[h] = vb[kl + 2];
    }
    uint32_t d = ref_step(f, hi_a, hi_b, 16, ref_step(f, lo_a, lo_b, 16, 0));
    TVal c = tdecode_f32(cbits), vd = tdecode_f32(d);
    if (c.cls == 3 || vd.cls == 3 || (c.cls == 2 && vd.cls == 2 && (c.v > 0) != (vd.v > 0)))
        return 0x7FFFFFFFu;
    volatile float x = tl_num_float(cbits), y = tl_num_float(d);
    return tl_num_bits(x + y);
}

/* ---- the functions under test, on a row of codes ---- */

static uint32_t model(const TForm *f, const uint32_t *a, const uint32_t *b, uint32_t c)
{
    uint16_t a16[16], b16[16];
    uint8_t a8[32], b8[32];
    for (int i = 0; i < f->k; i++) {
        if (f->k == 16) {
            a16[i] = (uint16_t)a[i];
            b16[i] = (uint16_t)b[i];
        } else if (f->k == 32) {
            a8[i] = (uint8_t)a[i];
            b8[i] = (uint8_t)b[i];
        }
    }
    switch (f->form) {
    case TL_NUM_MMA_F16: return tl_num_mma_f16(a16, b16, c);
    case TL_NUM_MMA_BF16: return tl_num_mma_bf16(a16, b16, c);
    case TL_NUM_MMA_TF32: return tl_num_mma_tf32(a, b, c);
    case TL_NUM_MMA_E4M3: return tl_num_mma_e4m3(a8, b8, c);
    default: return tl_num_mma_e5m2(a8, b8, c);
    }
}

/* ---- inputs ---- */

static double urand(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1p-53; }

/* x rounded to the form's element format (RNE), as a code; ±inf stays inf where the format has
 * it (the satfinite fp8 conversion would saturate it) */
static uint32_t encode(const TForm *f, float x, uint64_t *s)
{
    uint32_t u = tl_num_bits(x);
    if (isinf(x) && f->form == TL_NUM_MMA_E5M2)
        return x < 0 ? 0xFCu : 0x7Cu;
    switch (f->form) {
    case TL_NUM_MMA_F16: return tl_num_f32_to_f16(u, TL_NUM_RN);
    case TL_NUM_MMA_BF16: return tl_num_f32_to_bf16(u, TL_NUM_RN);
    case TL_NUM_MMA_TF32: return u ^ (uint32_t)(rng_next(s) & 0x1FFF); /* garbage in the ignored bits */
    case TL_NUM_MMA_E4M3: return tl_num_f32_to_e4m3(u);
    default: return tl_num_f32_to_e5m2(u);
    }
}

static uint32_t code_mask(const TForm *f)
{
    return f->form == TL_NUM_MMA_TF32 ? 0xFFFFFFFFu : f->k == 16 ? 0xFFFFu : 0xFFu;
}

/* one row of inputs of kind `kind`:
 *   0 values ~ U(-1,1) * 2^(-8..8);  1 a wide exponent range per element (subnormals included);
 *   2 cancellation: pairs a[i] b[i] = -a[j] b[j] plus small terms, c the negated sum;
 *   3 random codes (specials included); 4 tiny values near the bottom of the format */
static void make_row(const TForm *f, int kind, uint64_t *s, uint32_t *a, uint32_t *b, uint32_t *c)
{
    int emin = 1 - ((1 << (f->ebits - 1)) - 1), emax = (1 << (f->ebits - 1)) - 1;
    for (int i = 0; i < f->k; i++) {
        float x, y;
        switch (kind) {
        case 0:
            x = (float)ldexp(2 * urand(s) - 1, (int)(rng_next(s) % 17) - 8);
            y = (float)ldexp(2 * urand(s) - 1, (int)(rng_next(s) % 17) - 8);
            break;
        case 1:
        case 2:
            x = (float)ldexp(2 * urand(s) - 1, emin - f->mbits + (int)(rng_next(s) % (unsigned)(emax - emin + f->mbits)));
            y = (float)ldexp(2 * urand(s) - 1, emin - f->mbits + (int)(rng_next(s) % (unsigned)(emax - emin + f->mbits)));
            break;
        case 4:
            x = (float)ldexp(2 * urand(s) - 1, emin - f->mbits + (int)(rng_next(s) % 4));
            y = (float)ldexp(2 * urand(s) - 1, (int)(rng_next(s) % 5) - 2);
            break;
        default: a[i] = (uint32_t)rng_next(s) & code_mask(f); b[i] = (uint32_t)rng_next(s) & code_mask(f); continue;
        }
        a[i] = encode(f, x, s);
        b[i] = encode(f, y, s);
    }
    if (kind == 2) /* mirror the first half: each product cancels one of the second half */
        for (int i = 0; i < f->k / 2; i++) {
            a[f->k / 2 + i] = a[i] ^ (f->form == TL_NUM_MMA_TF32 ? 0x80000000u : 1u << (f->ebits + f->mbits));
            b[f->k / 2 + i] = b[i];
            if (rng_next(s) % 4 == 0)
                b[f->k / 2 + i] = encode(f, (float)ldexp(urand(s), -10), s);
        }
    uint64_t r = rng_next(s) % 8;
    float cv = r == 0 ? 0.0f : r == 1 ? -0.0f : (float)ldexp(2 * urand(s) - 1, (int)(rng_next(s) % 40) - 20);
    if (kind == 3)
        *c = (uint32_t)rng_next(s);
    else if (kind == 4)
        *c = r < 2 ? tl_num_bits(cv) : (uint32_t)(rng_next(s) % 0x1000000u) | (r & 1 ? 0x80000000u : 0);
    else
        *c = tl_num_bits(cv);
}

/* ---- checks ---- */

static void check_against_ref(int *fail)
{
    for (int fi = 0; fi < NFORMS; fi++) {
        const TForm *f = &FORMS[fi];
        char name[96];
        snprintf(name, sizeof name, "%s: model vs its long-double implementation (5 kinds x 100000 rows)", f->name);
        Tally t = {name, 0, 0, {{0}}};
        uint64_t s = 0x3A + (uint64_t)fi;
        for (int kind = 0; kind < 5; kind++)
            for (int n = 0; n < 100000; n++) {
                uint32_t a[32], b[32], c;
                make_row(f, kind, &s, a, b, &c);
                uint32_t got = model(f, a, b, c), want = model_ref(f, a, b, c);
                tally_hit(&t, got == want, "kind %d row %d: a0=%x b0=%x c=%08x got %08x want %08x", kind, n, a[0], b[0],
                          c, got, want);
            }
        *fail |= tally_report(&t);
    }
}

/* |d - exact| < n 2^(R - F) + 2^(eb(d) - p): n nonzero terms, each cut by less than 2^(R - F),
 * then the sum cut by less than an ulp of d; 2^R is the largest of 2^(ea + eb) and of c's
 * binade (a subnormal counts as the smallest normal number), at least 2^-133.
 * FP8: |d - exact| <= 33 2^-25 max(B, Q, 2^-133) + 2^-22 Q + 2^(eb(d) - 24), with B the largest
 * 2^(ea + eb) and Q the sum of |a b|: the two steps cut 16 + 17 terms by less than 2^(R - 25)
 * each, R of either at most log2 max(B, |d1|) and |d1| <= Q; their results by less than
 * 2^-23 |d1| and 2^-23 |d2| <= 2^-23 Q; the addition of c rounds by at most half an ulp of d */
static void check_bound(int *fail)
{
    for (int fi = 0; fi < NFORMS; fi++) {
        const TForm *f = &FORMS[fi];
        char name[96];
        snprintf(name, sizeof name, "%s: within the model's bound of the exact sum", f->name);
        Tally t = {name, 0, 0, {{0}}};
        uint64_t s = 0xB0 + (uint64_t)fi;
        long double worst = 0;
        for (int kind = 0; kind < 5; kind++) {
            if (kind == 3)
                continue;
            for (int n = 0; n < 100000; n++) {
                uint32_t a[32], b[32], c;
                make_row(f, kind, &s, a, b, &c);
                TVal vc = tdecode_f32(c);
                long double exact = vc.cls == 1 ? vc.v : 0, big = vc.cls == 1 ? ldexpl(1.0L, vc.e) : 0, mass = fabsl(exact);
                long double bigp = 0, Qp = 0; /* products only */
                int terms = vc.cls == 1;
                bool finite = vc.cls < 2;
                for (int i = 0; i < f->k; i++) {
                    TVal x = tdecode(f, a[i]), y = tdecode(f, b[i]);
                    finite &= x.cls < 2 && y.cls < 2;
                    long double p = x.v * y.v;
                    if (x.cls == 1 && y.cls == 1) {
                        exact += p;
                        terms++;
                        big = ldexpl(1.0L, x.e + y.e) > big ? ldexpl(1.0L, x.e + y.e) : big;
                        bigp = ldexpl(1.0L, x.e + y.e) > bigp ? ldexpl(1.0L, x.e + y.e) : bigp;
                        mass += fabsl(p);
                        Qp += fabsl(p);
                    }
                }
                uint32_t d = model(f, a, b, c);
                if (!finite || (d & 0x7F800000u) == 0x7F800000u)
                    continue;
                long double dv = tl_num_float(d);
                int ex;
                frexpl(dv, &ex);
                int eb = dv == 0 ? -126 : (ex - 1 < -126 ? -126 : ex - 1);
                long double bound = terms * ldexpl(big > 0x1p-133L ? big : 0x1p-133L, -f->F) + ldexpl(1.0L, eb - f->p)
                                    + mass * 0x1p-58L; /* the long-double sum's own rounding */
                if (is_fp8(f)) {
                    long double m = bigp > Qp ? bigp : Qp;
                    bound = 33 * ldexpl(m > 0x1p-133L ? m : 0x1p-133L, -25) + ldexpl(Qp, -22) + ldexpl(1.0L, eb - 24) +
                            mass * 0x1p-58L;
                }
                long double err = fabsl(dv - exact);
                if (bound > 0 && err / bound > worst)
                    worst = err / bound;
                tally_hit(&t, err <= bound, "kind %d: d=%08x exact=%Lg err=%Lg bound=%Lg", kind, d, exact, err, bound);
            }
        }
        *fail |= tally_report(&t);
        printf("    (largest error: %.3Lf of the bound)\n", worst);
    }
}

/* the instruction adds all its products at once: any order of k gives the same bits (FP8: any
 * order inside each of its halves, k mod 4 = 0, 1 and k mod 4 = 2, 3) */
static void check_order(int *fail)
{
    Tally t = {"order of k inside an instruction (all forms, 5 kinds x 20000 rows x 4 permutations)", 0, 0, {{0}}};
    uint64_t s = 0x0D;
    for (int fi = 0; fi < NFORMS; fi++) {
        const TForm *f = &FORMS[fi];
        for (int kind = 0; kind < 5; kind++)
            for (int n = 0; n < 20000; n++) {
                uint32_t a[32], b[32], c;
                make_row(f, kind, &s, a, b, &c);
                uint32_t d = model(f, a, b, c);
                for (int r = 0; r < 4; r++) {
                    /* a shuffle of the positions pos[0..n-1]: all of k, or one FP8 half after the other */
                    for (int half = 0; half < (is_fp8(f) ? 2 : 1); half++) {
                        int pos[32], np = 0;
                        for (int i = 0; i < f->k; i++)
                            if (!is_fp8(f) || ((i & 2) != 0) == half)
                                pos[np++] = i;
                        for (int i = np - 1; i > 0; i--) {
                            int j = (int)(rng_next(&s) % (uint64_t)(i + 1));
                            uint32_t x = a[pos[i]], y = b[pos[i]];
                            a[pos[i]] = a[pos[j]], b[pos[i]] = b[pos[j]];
                            a[pos[j]] = x, b[pos[j]] = y;
                        }
                    }
                    uint32_t e = model(f, a, b, c);
                    tally_hit(&t, e == d, "%s kind %d: %08x after a permutation, %08x before", f->name, kind, e, d);
                }
            }
    }
    *fail |= tally_report(&t);
}

/* small integers: every product and sum exact, so the result is the exact integer */
static void check_integers(int *fail)
{
    Tally t = {"small integers are exact (all forms, 100000 rows each)", 0, 0, {{0}}};
    uint64_t s = 0x17;
    for (int fi = 0; fi < NFORMS; fi++) {
        const TForm *f = &FORMS[fi];
        /* |a|, |b| <= 7 (all representable, e5m2 included) and |c| < 256: |d| < 2^11, and the
         * alignment exponent R <= 8 leaves F - 8 >= 5 fraction bits */
        for (int n = 0; n < 100000; n++) {
            uint32_t a[32], b[32];
            long long want = (long long)(rng_next(&s) % 511) - 255;
            uint32_t c = tl_num_bits((float)want);
            for (int i = 0; i < f->k; i++) {
                int x = (int)(rng_next(&s) % 15) - 7, y = (int)(rng_next(&s) % 15) - 7;
                a[i] = encode(f, (float)x, &s);
                b[i] = encode(f, (float)y, &s);
                want += (long long)x * y;
            }
            uint32_t d = model(f, a, b, c);
            tally_hit(&t, d == (want ? tl_num_bits((float)want) : 0u), "%s: got %08x (%g), want %lld", f->name, d,
                      tl_num_float(d), want);
        }
    }
    *fail |= tally_report(&t);
}

/* tf32 reads bits 31..13 of its f32 registers; the low 13 change nothing */
static void check_tf32_low_bits(int *fail)
{
    Tally t = {"tf32: the low 13 bits of the operands are ignored (100000 rows)", 0, 0, {{0}}};
    const TForm *f = &FORMS[2];
    uint64_t s = 0x13;
    for (int n = 0; n < 100000; n++) {
        uint32_t a[8], b[8], c;
        make_row(f, n % 5, &s, a, b, &c);
        uint32_t d = model(f, a, b, c);
        for (int i = 0; i < 8; i++) {
            a[i] ^= (uint32_t)rng_next(&s) & 0x1FFFu;
            b[i] ^= (uint32_t)rng_next(&s) & 0x1FFFu;
        }
        uint32_t e = model(f, a, b, c);
        tally_hit(&t, e == d, "row %d: %08x, %08x with other low bits", n, d, e);
    }
    /* not rounded: 1 + 2^-10 - 2^-23 (0x3F801FFF) reads as 1, and 0x7F800001 (a NaN) as inf */
    uint32_t one_ish[8] = {0x3F801FFFu}, one[8] = {0x3F800000u}, z8[8] = {0};
    tally_hit(&t, tl_num_mma_tf32(one_ish, one, 0) == 0x3F800000u, "0x3F801FFF * 1 = %08x",
              tl_num_mma_tf32(one_ish, one, 0));
    uint32_t nanlow[8] = {0x7F800001u};
    tally_hit(&t, tl_num_mma_tf32(nanlow, one, 0) == 0x7F800000u, "0x7F800001 * 1 = %08x",
              tl_num_mma_tf32(nanlow, one, 0));
    tally_hit(&t, tl_num_mma_tf32(nanlow, z8, 0) == 0x7FFFFFFFu, "0x7F800001 * 0 = %08x (inf * 0)",
              tl_num_mma_tf32(nanlow, z8, 0));
    *fail |= tally_report(&t);
}

/* hand-worked cases: what the cut of each term, the final cut and the specials give */
static void check_cases(int *fail)
{
    Tally t = {"hand-worked cases (signed zeros, specials, cuts)", 0, 0, {{0}}};
    const uint32_t ONE = 0x3F800000u, NAN32 = 0x7FFFFFFFu, INF = 0x7F800000u, NINF = 0xFF800000u;
    struct {
        int form;        /* index into FORMS */
        float a[4], b[4];/* the first products; the rest are zero */
        uint32_t c, want;
        const char *what;
    } cs[] = {
        /* signed zeros: an exact zero sum is +0 */
        {1, {0}, {0}, 0x80000000u, 0, "-0 + zero products"},
        {1, {-0.0f}, {1}, 0x80000000u, 0, "-0 + (-0 * 1)"},
        {0, {1, -1}, {2, 2}, 0, 0, "2 - 2"},
        {1, {1}, {-1}, ONE, 0, "1 - 1"},
        {3, {-0.0f}, {0}, 0x80000000u, 0, "e4m3: -0 + (-0 * 0)"},
        /* c alone comes through unchanged, FP8 included (c + 0) */
        {1, {0}, {0}, 0x3F800001u, 0x3F800001u, "bf16: c = 1 + 2^-23 alone"},
        {3, {0}, {0}, 0x3F800001u, 0x3F800001u, "e4m3: c = 1 + 2^-23 alone"},
        {4, {0}, {0}, 0xBF801FFFu, 0xBF801FFFu, "e5m2: c = -(1 + 8191 2^-23) alone"},
        {3, {0}, {0}, 0x00000001u, 0x00000001u, "e4m3: c = 2^-149 alone"},
        {4, {0}, {0}, 0x80000000u, 0, "e5m2: -0 + zero products (-0 + +0)"},
        /* FP8: c is added last, rounded to nearest even, and takes no part in the alignment:
         * 64 + 2^-18 (half an ulp) -> 64, 64 + 3 2^-18 -> 64 + 2^-16 (a cut would give 64 + 2^-17),
         * 2^20 + 2^-9 2^-9 keeps nothing of the product but 2^-9 2^-9 - 2^20 + 2^20 is exact */
        {3, {0x1p-9f}, {0x1p-9f}, 0x42800000u, 0x42800000u, "e4m3: 64 + 2^-18 -> 64 (tie to even)"},
        {3, {0x3p-9f}, {0x1p-9f}, 0x42800000u, 0x42800002u, "e4m3: 64 + 3 2^-18 -> 64 + 2^-16 (nearest)"},
        {3, {0x1p-9f}, {-0x1p-9f}, 0x42800002u, 0x42800002u, "e4m3: (64 + 2^-16) - 2^-18 -> 64 + 2^-16 (tie to even)"},
        {4, {0x1p-16f}, {0x1p-16f}, 0xC9800000u, 0xC9800000u, "e5m2: -2^20 + 2^-32 -> -2^20"},
        {4, {0x1p-16f}, {0x1p-16f}, 0x2F800000u, 0x30000000u, "e5m2: 2^-32 + 2^-32 (c takes no part in R)"},
        /* FP8: the halves. 448 * 448 - 448 * 448 + 2^-18: at k = 0, 1, 2 the 2^-18 is in the
         * other half (k mod 4 = 2) and survives; with the 2^-18 at k = 1, beside 448 * 448, it is
         * cut away (R = 16: below 2^-9) before -448 * 448 at k = 2 cancels the rest */
        {3, {448, -448, 0x1p-9f}, {448, 448, 0x1p-9f}, 0, 0x36800000u, "e4m3: 448^2 - 448^2 | 2^-18 (halves)"},
        {3, {448, 0x1p-9f, -448}, {448, 0x1p-9f, 448}, 0, 0, "e4m3: 448^2 + 2^-18 | -448^2 (the 2^-18 cut)"},
        {3, {448, 0x1p-9f, -448}, {448, 0x1p-9f, 448}, 0x3F800000u, ONE, "e4m3: 1 + (448^2 + 2^-18 | -448^2)"},
        /* FP8 products stay far from f32's range (3 * 57344^2 is about 2^33.2): the largest f32
         * plus them is itself, not inf; infinities come from inf operands or c */
        {4, {57344, 57344, 57344}, {57344, 57344, 57344}, 0x7F7FFFFFu, 0x7F7FFFFFu, "e5m2: max f32 + 3 57344^2"},
        {4, {INFINITY}, {1}, 0xFF800000u, NAN32, "e5m2: inf + -inf (c)"},
        {4, {INFINITY}, {-1}, 0xFF800000u, NINF, "e5m2: -inf + -inf (c)"},
        {3, {1}, {1}, 0x7FC00001u, NAN32, "e4m3: 1 + NaN (c)"},
        /* each term is cut to 2^(R - 25) toward zero before the sum: 1 + 2^-24 -> 1 (final cut),
         * 1 + 2 * 2^-24 = 1 + 2^-23 exact, 1 + 4 * 2^-26 -> 1 (every term cut to 0), 1 - 2^-26 -> 1
         * (a magnitude cut, not a floor), 1 - 2^-24 exact */
        {1, {0x1p-12f}, {0x1p-12f}, ONE, ONE, "1 + 2^-24"},
        {1, {0x1p-12f, 0x1p-12f}, {0x1p-12f, 0x1p-12f}, ONE, 0x3F800001u, "1 + 2^-24 + 2^-24"},
        {1, {0x1p-13f, 0x1p-13f, 0x1p-13f, 0x1p-13f}, {0x1p-13f, 0x1p-13f, 0x1p-13f, 0x1p-13f}, ONE, ONE, "1 + 4 * 2^-26"},
        {1, {-0x1p-13f}, {0x1p-13f}, ONE, ONE, "1 - 2^-26"},
        {1, {-0x1p-12f}, {0x1p-12f}, ONE, 0x3F7FFFFFu, "1 - 2^-24"},
        /* R comes from the products' exponents ea + eb, not from their normalised ones: 1.5 * 1.5
         * has R = 0 (not 1), so after it cancels a 2^-25 still counts */
        {1, {1.5f, 1.5f, 0x1p-13f}, {1.5f, -1.5f, 0x1p-12f}, 0, 0x33000000u, "1.5 * 1.5 - 1.5 * 1.5 + 2^-25"},
        /* the result cut toward zero, not rounded: 1 + 3 * 2^-24 -> 1 + 2^-23 */
        {0, {0x1p-12f, 0x1p-12f, 0x1p-12f}, {0x1p-12f, 0x1p-12f, 0x1p-12f}, ONE, 0x3F800001u, "f16: 1 + 3 * 2^-24"},
        /* overflow: bf16 products beyond f32 give inf, but cancel exactly first */
        {1, {0x1p100f, 0x1p100f}, {0x1p100f, -0x1p100f}, ONE, 0, "2^200 - 2^200 + 1: the 1 is below 2^(200 - 25)"},
        {1, {0x1p100f}, {0x1p100f}, 0, INF, "2^200 -> inf"},
        {1, {-0x1p100f}, {0x1p100f}, 0, NINF, "-2^200 -> -inf"},
        /* specials */
        {1, {INFINITY}, {1}, 0, INF, "inf * 1"},
        {1, {INFINITY}, {0}, 0, NAN32, "inf * 0"},
        {1, {INFINITY, INFINITY}, {1, -1}, 0, NAN32, "inf - inf"},
        {1, {1}, {1}, INF, INF, "1 + inf"},
        {1, {INFINITY}, {1}, NINF, NAN32, "inf + -inf (c)"},
        {1, {1}, {1}, 0xFFC00001u, NAN32, "1 + NaN (c)"},
        {1, {NAN}, {0}, 0, NAN32, "NaN * 0"},
        {4, {INFINITY}, {-2}, ONE, NINF, "e5m2: inf * -2"},
        {3, {NAN}, {1}, 0, NAN32, "e4m3: NaN (0x7F) * 1"},
        /* subnormal inputs and results */
        {0, {0x1p-24f}, {0x1p-24f}, 0, 0x27800000u, "f16: 2^-24 * 2^-24 = 2^-48"},
        {1, {0x1p-133f}, {0x1p0f}, 0, 0x00010000u, "bf16: the smallest subnormal 2^-133 * 1"},
        {1, {0x1p-126f}, {0x1p-20f}, 0, 0x00000008u, "bf16: 2^-146, an f32 subnormal"},
        {1, {0x1p-126f}, {0x1p-30f}, 0, 0, "bf16: 2^-156 cuts to +0"},
        {1, {0x1p-133f, 0x1p-133f}, {0x1p-20f, 0x1p-20f}, 0, 0, "bf16: 2 * 2^-153 = 2^-152 cuts to +0"},
        {1, {0x1p-126f, 0x1p-126f}, {0x1p-23f, 0x1p-23f}, 0x00000001u, 0x00000003u, "bf16: 2^-149 + 2 * 2^-149"},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        const TForm *f = &FORMS[cs[i].form];
        uint32_t a[32] = {0}, b[32] = {0};
        uint64_t s = 1;
        for (int j = 0; j < 4; j++) {
            a[j] = encode(f, cs[i].a[j], &s) & (f->form == TL_NUM_MMA_TF32 ? 0xFFFFE000u : ~0u);
            b[j] = encode(f, cs[i].b[j], &s) & (f->form == TL_NUM_MMA_TF32 ? 0xFFFFE000u : ~0u);
        }
        uint32_t got = model(f, a, b, cs[i].c), ref = model_ref(f, a, b, cs[i].c);
        tally_hit(&t, got == cs[i].want && ref == cs[i].want, "%s %s: got %08x, second implementation %08x, want %08x",
                  f->name, cs[i].what, got, ref, cs[i].want);
    }
    *fail |= tally_report(&t);
}

/* the PTX ISA's fragment tables, per type (as tests/codegen/tileops/tirsim.c writes them) */
static void frag_a(TlNumMma form, int lane, int q, int j, int *row, int *col)
{
    int g = lane >> 2, t = lane & 3;
    if (form == TL_NUM_MMA_F16 || form == TL_NUM_MMA_BF16) { /* a0..a7, two per register */
        int i = 2 * q + j;
        *row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
        *col = t * 2 + (i & 1) + (i >= 4 ? 8 : 0);
    } else if (form == TL_NUM_MMA_TF32) {
        *row = (q == 0 || q == 2) ? g : g + 8;
        *col = q < 2 ? t : t + 4;
    } else { /* a0..a15, four per register */
        int i = 4 * q + j;
        *row = (i < 4 || (i >= 8 && i < 12)) ? g : g + 8;
        *col = t * 4 + (i & 3) + (i >= 8 ? 16 : 0);
    }
}

static int frag_b_row(TlNumMma form, int lane, int q, int j)
{
    int t = lane & 3;
    if (form == TL_NUM_MMA_F16 || form == TL_NUM_MMA_BF16)
        return t * 2 + ((2 * q + j) & 1) + (2 * q + j >= 2 ? 8 : 0);
    if (form == TL_NUM_MMA_TF32)
        return q == 0 ? t : t + 4;
    return t * 4 + ((4 * q + j) & 3) + (4 * q + j >= 4 ? 16 : 0);
}

static void check_warp(int *fail)
{
    Tally t = {"tl_num_mma_m16n8: fragments by the PTX ISA's tables (all forms, 300 instructions each)", 0, 0, {{0}}};
    uint64_t s = 0x99;
    for (int fi = 0; fi < NFORMS; fi++) {
        const TForm *f = &FORMS[fi];
        int E = f->k / 8, w = 32 / E;
        for (int n = 0; n < 300; n++) {
            uint32_t A[16][32], B[32][8], C[16][8];
            for (int r = 0; r < 16; r++) {
                uint32_t row[32], col[32], c;
                make_row(f, n % 5, &s, row, col, &c);
                for (int k = 0; k < f->k; k++)
                    A[r][k] = row[k];
                if (r < 8)
                    for (int k = 0; k < f->k; k++)
                        B[k][r] = col[k];
                for (int j = 0; j < 8; j++)
                    C[r][j] = (uint32_t)rng_next(&s) % 4 ? tl_num_bits((float)(urand(&s) - 0.5)) : c;
            }
            uint32_t a[32][4] = {{0}}, b[32][2] = {{0}}, c[32][4], d[32][4];
            for (int l = 0; l < 32; l++) {
                for (int q = 0; q < 4; q++)
                    for (int j = 0; j < E; j++) {
                        int row, col;
                        frag_a(f->form, l, q, j, &row, &col);
                        a[l][q] |= (A[row][col] & code_mask(f)) << (w * j);
                    }
                for (int q = 0; q < 2; q++)
                    for (int j = 0; j < E; j++)
                        b[l][q] |= (B[frag_b_row(f->form, l, q, j)][l >> 2] & code_mask(f)) << (w * j);
                for (int i = 0; i < 4; i++)
                    c[l][i] = C[(l >> 2) + (i >= 2 ? 8 : 0)][(l & 3) * 2 + (i & 1)];
            }
            tl_num_mma_m16n8(f->form, a, b, c, d);
            for (int l = 0; l < 32; l++)
                for (int i = 0; i < 4; i++) {
                    int r = (l >> 2) + (i >= 2 ? 8 : 0), col = (l & 3) * 2 + (i & 1);
                    uint32_t bc[32];
                    for (int k = 0; k < f->k; k++)
                        bc[k] = B[k][col];
                    uint32_t want = model_ref(f, A[r], bc, C[r][col]);
                    tally_hit(&t, d[l][i] == want, "%s lane %d d%d: %08x, want %08x", f->name, l, i, d[l][i], want);
                }
            /* in place: d may be c */
            tl_num_mma_m16n8(f->form, a, b, c, c);
            tally_hit(&t, !memcmp(c, d, sizeof d), "%s: in place differs", f->name);
        }
    }
    *fail |= tally_report(&t);
}

int main(void)
{
    ref_init();
    int fail = 0;
    check_cases(&fail);
    check_against_ref(&fail);
    check_bound(&fail);
    check_order(&fail);
    check_integers(&fail);
    check_tf32_low_bits(&fail);
    check_warp(&fail);
    printf(fail ? "FAILED\n" : "all passed\n");
    return fail;
}
