/* test_sf_e5m6.c — E5M6 encoding, decoding and packing, and the scale-factor helper SF(amax),
 * against second implementations written from the spec: the E5M6 pseudocode with its own
 * fp16_bits_RZ, a generic MSB-first bit-stream packer, and the oracle's formulation of the
 * power-of-two rounding ((B + 0x7FFFFF) & 0x7F800000 and 1/sf). */
#include "numerics.h"
#include "ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* writes n-bit fields MSB-first into a big-endian bit stream, then reads it back as words */
static void stream_pack(const uint16_t codes[8], uint32_t words[3])
{
    uint8_t bits[96];
    for (int i = 0; i < 8; i++)
        for (int b = 0; b < 12; b++)
            bits[i * 12 + b] = (uint8_t)((codes[i] >> (11 - b)) & 1);
    for (int w = 0; w < 3; w++) {
        words[w] = 0;
        for (int b = 0; b < 32; b++)
            words[w] = words[w] << 1 | bits[w * 32 + b];
    }
}

static void check_e5m6(int *fail)
{
    /* spec pseudocode, exhaustive over every positive f32 whose fp16 result is subnormal or
     * in the lowest normal binades (fp32 exponent fields 96..115): where the rule is not RNE */
    Tally t = {"f32->e5m6 exhaustive, fp32 exponents 96..115 (f16-subnormal range)", 0, 0, {{0}}};
    uint64_t not_rne = 0;
    for (uint32_t x = 96u << 23; x < 116u << 23; x++) {
        uint16_t got = tl_num_f32_to_e5m6(x), want = ref_e5m6_spec(x);
        tally_hit(&t, got == want, "x=%08x got %03x want %03x", x, got, want);
        /* true RNE onto the e5m6 grid (spacing 2^-20 below 2^-14) for the record */
        double v = ref_f32_value(x);
        int ex;
        frexp(v, &ex);
        double q = ldexp(1.0, (ex - 1 > -14 ? ex - 1 : -14) - 6);
        double n = v / q, fl = floor(n);
        double r = (n - fl > 0.5 || (n - fl == 0.5 && fmod(fl, 2) != 0)) ? fl + 1 : fl;
        if (r * q != ref_f32_value(tl_num_e5m6_to_f32(got)))
            not_rne++;
    }
    *fail |= tally_report(&t);
    printf("    (of these, %llu differ from true RNE, as the spec says the kernel does)\n",
           (unsigned long long)not_rne);

    /* in the f16-normal range the rule is exact RNE (spec §6.3): compare with RNE on the grid */
    t = (Tally){"f32->e5m6 = RNE in the f16-normal range (4M samples, 2^-14 .. 65024)", 0, 0, {{0}}};
    uint64_t s = 0xE5E6;
    for (int i = 0; i < 4000000; i++) {
        uint64_t r = rng_next(&s);
        uint32_t e = 113 + (uint32_t)(r >> 40) % 30;
        uint32_t x = (uint32_t)(r >> 63) << 31 | e << 23 | ((uint32_t)r & 0x7FFFFFu);
        double v = fabs(ref_f32_value(x));
        if (v > 65024.0)
            continue;
        int ex;
        frexp(v, &ex);
        double q = ldexp(1.0, ex - 1 - 6);
        double n = v / q, fl = floor(n);
        double rr = (n - fl > 0.5 || (n - fl == 0.5 && fmod(fl, 2) != 0)) ? fl + 1 : fl;
        double got = fabs(ref_f32_value(tl_num_e5m6_to_f32(tl_num_f32_to_e5m6(x))));
        tally_hit(&t, got == rr * q, "x=%08x got %g want %g", x, got, rr * q);
    }
    *fail |= tally_report(&t);

    /* documented codes outside the spec's range */
    t = (Tally){"f32->e5m6 inf / NaN / saturation codes", 0, 0, {{0}}};
    const struct { uint32_t x; uint16_t want; } special[] = {
        {0x7F800000u, 0x7C0}, {0xFF800000u, 0xFC0},     /* RZ keeps inf */
        {0x7FC00000u, 0x7FF}, {0x7FC1FFFFu, 0x800},     /* NaN: 0x7FFF >> 4, + carry */
        {0x477FE000u, 0x7C0}, {0x477FF000u, 0x7C0},     /* 65504, 65520: round up to inf */
        {0x47800000u, 0x7BF}, {0x47810000u, 0x7C0},     /* 65536: RZ gave 65504, low bits decide */
        {0x00000001u, 0x000}, {0x80000001u, 0x800},     /* signed zero */
        {0x3F800000u, 0x3C0}, {0x3F810000u, 0x3C0},     /* 1.0; 1 + 2^-7 ties down to even */
        {0x3F830000u, 0x3C2},                           /* 1 + 3*2^-7 ties up to even */
    };
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
        uint16_t got = tl_num_f32_to_e5m6(special[i].x);
        tally_hit(&t, got == special[i].want, "x=%08x got %03x want %03x", special[i].x, got,
                  special[i].want);
    }
    *fail |= tally_report(&t);

    /* packing: a fixed vector read off the MSB-first definition, then random codes against
     * the generic bit-stream packer, and unpack as the inverse */
    t = (Tally){"e5m6 pack8/unpack8 (fixed vector + 1M random groups)", 0, 0, {{0}}};
    const uint16_t fixed[8] = {0x123, 0x456, 0x789, 0xABC, 0xDEF, 0x012, 0x345, 0x678};
    uint32_t w[3];
    tl_num_e5m6_pack8(fixed, w);
    tally_hit(&t, w[0] == 0x12345678u && w[1] == 0x9ABCDEF0u && w[2] == 0x12345678u,
              "fixed vector packed to %08x %08x %08x", w[0], w[1], w[2]);
    for (int i = 0; i < 1000000; i++) {
        uint16_t c[8], back[8];
        for (int k = 0; k < 8; k++)
            c[k] = (uint16_t)(rng_next(&s) & 0xFFF);
        uint32_t ws[3];
        tl_num_e5m6_pack8(c, w);
        stream_pack(c, ws);
        tl_num_e5m6_unpack8(w, back);
        bool ok = memcmp(w, ws, sizeof w) == 0 && memcmp(c, back, sizeof c) == 0;
        tally_hit(&t, ok, "group %d: %03x %03x ... packed %08x %08x %08x", i, c[0], c[1], w[0],
                  w[1], w[2]);
    }
    *fail |= tally_report(&t);
}

/* the oracle's formulation of SF (spec §1.2) */
static TlNumSf oracle_sf(uint32_t amax, uint32_t cmin, uint32_t maxv, bool round_sf)
{
    float a = fmaxf(tl_num_float(amax), tl_num_float(cmin));
    double ad = a, md = tl_num_float(maxv);
    /* float division through double: double rounding is harmless for a quotient of floats */
    float sf = (float)(ad / md);
    TlNumSf r = {tl_num_bits(sf), tl_num_bits((float)(md / ad)), 0};
    if (!round_sf)
        return r;
    uint32_t eb = (tl_num_bits(sf) + 0x7FFFFFu) & 0x7F800000u;
    float sfr = tl_num_float(eb);
    r.sf = eb;
    r.sf_inv = tl_num_bits(1.0f / sfr);
    r.ue8m0 = (uint8_t)(eb >> 23);
    return r;
}

static void check_sf(int *fail)
{
    const struct { const char *name; uint32_t maxv, cmin; } cfg[] = {
        {"e4m3", 0x43E00000u /* 448 */, 0x38D1B717u /* 1e-4f */},
        {"e2m1", 0x40C00000u /* 6 */, 0x01C00000u /* 6 * 2^-126 */},
        {"e5m6", 0x477E0000u /* 65024 */, 0x38D1B717u},
    };
    for (size_t k = 0; k < 3; k++) {
        for (int round_sf = 0; round_sf < 2; round_sf++) {
            char name[96];
            snprintf(name, sizeof name, "SF(amax) %s round_sf=%d", cfg[k].name, round_sf);
            Tally t = {name, 0, 0, {{0}}};
            float maxf = tl_num_float(cfg[k].maxv);
            /* every 251st positive finite pattern, every power of two times MAX and its
             * neighbours (where ceil(log2) steps), zero and NaN */
            uint64_t n = 0;
            for (uint64_t x = 0; x < 0x7F800000u; x += 251, n++) {
                uint32_t xs[8];
                int m = 0;
                xs[m++] = (uint32_t)x;
                if (n < 254) {
                    uint32_t p = tl_num_bits(ldexpf(maxf, (int)n - 140));
                    if (p && p < 0x7F800000u) {
                        xs[m++] = p;
                        xs[m++] = p + 1;
                        xs[m++] = p - 1;
                    }
                }
                if (x == 0) {
                    xs[m++] = 0x7FC00000u;
                    xs[m++] = cfg[k].cmin;
                }
                for (int i = 0; i < m; i++) {
                    TlNumSf got = tl_num_scale_factor(xs[i], cfg[k].cmin, cfg[k].maxv, round_sf);
                    TlNumSf want = oracle_sf(xs[i], cfg[k].cmin, cfg[k].maxv, round_sf);
                    bool ok = got.sf == want.sf && got.sf_inv == want.sf_inv && got.ue8m0 == want.ue8m0;
                    tally_hit(&t, ok, "amax=%08x got (%08x %08x %02x) want (%08x %08x %02x)", xs[i],
                              got.sf, got.sf_inv, got.ue8m0, want.sf, want.sf_inv, want.ue8m0);
                }
            }
            *fail |= tally_report(&t);
        }
    }
    /* worked example: amax 1000 for e4m3: 1000/448 = 2.23 -> 4, inverse 0.25, UE8M0 129 */
    TlNumSf r = tl_num_scale_factor(0x447A0000u, 0x38D1B717u, 0x43E00000u, true);
    Tally t = {"SF worked example amax=1000 e4m3", 0, 0, {{0}}};
    tally_hit(&t, r.sf == 0x40800000u && r.sf_inv == 0x3E800000u && r.ue8m0 == 129,
              "got %08x %08x %u", r.sf, r.sf_inv, r.ue8m0);
    *fail |= tally_report(&t);
}

int main(void)
{
    ref_init();
    int fail = 0;
    double t0 = now_seconds();
    check_e5m6(&fail);
    check_sf(&fail);
    printf("time %.1f s\n", now_seconds() - t0);
    return fail;
}
