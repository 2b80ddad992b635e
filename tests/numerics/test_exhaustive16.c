/* test_exhaustive16.c — every 8-bit, 12-bit and 16-bit input of the narrow->wide conversions
 * and of the f16 -> fp8 conversions, against the field-formula reference; plus the lane
 * order of every packed (x2) form. */
#include "numerics.h"
#include "ref.h"

#include <math.h>
#include <stdlib.h>

/* checks that f32 bits `got` hold the double `want` exactly, sign of zero included */
static bool same_value(uint32_t got, double want)
{
    double g = ref_f32_value(got);
    return g == want && signbit(g) == signbit(want);
}

static uint32_t f16_field_value_check(uint16_t h, double *want)
{
    int s = h >> 15, e = (h >> 10) & 0x1F, m = h & 0x3FF;
    if (e == 31)
        return m ? 2 : 1;   /* 2: NaN, 1: inf */
    double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    *want = s ? -v : v;
    return 0;
}

int main(void)
{
    ref_init();
    int fail = 0;

    /* f16 -> f32 */
    Tally t = {"f16->f32 (all 65536)", 0, 0, {{0}}};
    for (uint32_t h = 0; h < 65536; h++) {
        double want = 0;
        uint32_t kind = f16_field_value_check((uint16_t)h, &want);
        uint32_t got = tl_num_f16_to_f32((uint16_t)h);
        bool ok = kind == 2 ? got == 0x7FFFFFFFu
                : kind == 1 ? got == ((h & 0x8000u) << 16 | 0x7F800000u)
                : same_value(got, want);
        tally_hit(&t, ok, "h=%04x got %08x", h, got);
    }
    fail |= tally_report(&t);

    /* bf16 -> f32: exact, NaN payload kept */
    t = (Tally){"bf16->f32 (all 65536)", 0, 0, {{0}}};
    for (uint32_t h = 0; h < 65536; h++) {
        int s = h >> 15, e = (h >> 7) & 0xFF, m = h & 0x7F;
        uint32_t got = tl_num_bf16_to_f32((uint16_t)h);
        bool ok;
        if (e == 255) {
            ok = got == h << 16;
        } else {
            double v = e == 0 ? ldexp(m, -133) : ldexp(128 + m, e - 134);
            ok = same_value(got, s ? -v : v);
        }
        tally_hit(&t, ok, "h=%04x got %08x", h, got);
    }
    fail |= tally_report(&t);

    /* f16 -> e4m3 / e5m2 (and through the x2 forms, lane order included) */
    const RefFmt *f8[2] = {&REF_E4M3, &REF_E5M2};
    for (int k = 0; k < 2; k++) {
        t = (Tally){k ? "f16->e5m2 (all 65536)" : "f16->e4m3 (all 65536)", 0, 0, {{0}}};
        Tally tp = {k ? "f16x2->e5m2x2 lanes" : "f16x2->e4m3x2 lanes", 0, 0, {{0}}};
        for (uint32_t h = 0; h < 65536; h++) {
            uint32_t want[4];
            ref_round_f32(f8[k], tl_num_f16_to_f32((uint16_t)h), want);
            /* the f16 -> f32 step is itself checked above; NaN maps to 0x7F */
            uint8_t got = k ? tl_num_f16_to_e5m2((uint16_t)h) : tl_num_f16_to_e4m3((uint16_t)h);
            tally_hit(&t, got == want[0], "h=%04x got %02x want %02x", h, got, want[0]);
            uint16_t lo = (uint16_t)(h ^ 0x8001u);
            uint32_t lw[4];
            ref_round_f32(f8[k], tl_num_f16_to_f32(lo), lw);
            uint32_t pair = h << 16 | lo;
            uint16_t g2 = k ? tl_num_e5m2x2_from_f16x2(pair) : tl_num_e4m3x2_from_f16x2(pair);
            tally_hit(&tp, g2 == (want[0] << 8 | lw[0]), "a=%08x got %04x", pair, g2);
        }
        fail |= tally_report(&t);
        fail |= tally_report(&tp);
    }

    /* e4m3 / e5m2 -> f16 and -> f32 */
    for (int k = 0; k < 2; k++) {
        const RefFmt *f = f8[k];
        t = (Tally){k ? "e5m2->f16,f32 (all 256)" : "e4m3->f16,f32 (all 256)", 0, 0, {{0}}};
        for (uint32_t q = 0; q < 256; q++) {
            int mag = q & 0x7F;
            uint16_t h = k ? tl_num_e5m2_to_f16((uint8_t)q) : tl_num_e4m3_to_f16((uint8_t)q);
            uint32_t g = k ? tl_num_e5m2_to_f32((uint8_t)q) : tl_num_e4m3_to_f32((uint8_t)q);
            bool isnan_code = k ? mag > 0x7C : mag == 0x7F;
            bool isinf_code = k && mag == 0x7C;
            bool ok;
            if (isnan_code) {
                ok = h == 0x7FFF && g == 0x7FFFFFFFu;
            } else if (isinf_code) {
                ok = h == ((q & 0x80u) << 8 | 0x7C00u) && g == ((q & 0x80u) << 24 | 0x7F800000u);
            } else {
                double v = ref_decode_mag(f, mag);
                if (q & 0x80)
                    v = -v;
                double hv = 0;
                f16_field_value_check(h, &hv);
                ok = hv == v && signbit(hv) == signbit(v) && same_value(g, v);
            }
            tally_hit(&t, ok, "q=%02x got f16 %04x f32 %08x", q, h, g);
        }
        fail |= tally_report(&t);
        Tally tp = {k ? "e5m2x2->f16x2 (all 65536)" : "e4m3x2->f16x2 (all 65536)", 0, 0, {{0}}};
        for (uint32_t a = 0; a < 65536; a++) {
            uint32_t got = k ? tl_num_f16x2_from_e5m2x2((uint16_t)a) : tl_num_f16x2_from_e4m3x2((uint16_t)a);
            uint32_t want = k ? (uint32_t)tl_num_e5m2_to_f16((uint8_t)(a >> 8)) << 16 | tl_num_e5m2_to_f16((uint8_t)a)
                              : (uint32_t)tl_num_e4m3_to_f16((uint8_t)(a >> 8)) << 16 | tl_num_e4m3_to_f16((uint8_t)a);
            tally_hit(&tp, got == want, "a=%04x got %08x", a, got);
        }
        fail |= tally_report(&tp);
    }

    /* e2m1 -> f16 / f32, and the x2 lane order */
    t = (Tally){"e2m1->f16,f32 (all 16) + x2 (all 256)", 0, 0, {{0}}};
    for (uint32_t c = 0; c < 16; c++) {
        double v = ref_decode_mag(&REF_E2M1, c & 7);
        if (c & 8)
            v = -v;
        double hv = 0;
        uint16_t h = tl_num_e2m1_to_f16((uint8_t)c);
        f16_field_value_check(h, &hv);
        uint32_t g = tl_num_e2m1_to_f32((uint8_t)c);
        tally_hit(&t, hv == v && signbit(hv) == signbit(v) && same_value(g, v), "c=%x got %04x %08x",
                  c, h, g);
    }
    for (uint32_t a = 0; a < 256; a++) {
        uint32_t got = tl_num_f16x2_from_e2m1x2((uint8_t)a);
        uint32_t want = (uint32_t)tl_num_e2m1_to_f16((uint8_t)(a >> 4)) << 16 | tl_num_e2m1_to_f16((uint8_t)(a & 15));
        tally_hit(&t, got == want, "a=%02x got %08x", a, got);
        /* storage packing: even element in the low nibble = PTX operand b */
        uint8_t even = (uint8_t)(a & 15), odd = (uint8_t)(a >> 4);
        tally_hit(&t, tl_num_e2m1_pack(even, odd) == a, "pack %x %x", even, odd);
    }
    fail |= tally_report(&t);

    /* ue8m0 decoders */
    t = (Tally){"ue8m0->f32 (TileKernels), ->bf16 (PTX) (all 256) + x2 (all 65536)", 0, 0, {{0}}};
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t g = tl_num_ue8m0_to_f32_tk((uint8_t)b);
        bool ok = b == 255 ? g == 0x7F800000u : b == 0 ? g == 0 : same_value(g, ldexp(1.0, (int)b - 127));
        uint16_t h = tl_num_ue8m0_to_bf16((uint8_t)b);
        /* PTX: 2^(b-127) as bf16, with 2^-127 a bf16 subnormal; 0xFF is NaN */
        ok = ok && (b == 255 ? h == 0x7FFF : same_value((uint32_t)h << 16, ldexp(1.0, (int)b - 127)));
        tally_hit(&t, ok, "b=%02x got f32 %08x bf16 %04x", b, g, h);
    }
    for (uint32_t a = 0; a < 65536; a++) {
        uint32_t got = tl_num_bf16x2_from_ue8m0x2((uint16_t)a);
        uint32_t want = (uint32_t)tl_num_ue8m0_to_bf16((uint8_t)(a >> 8)) << 16 | tl_num_ue8m0_to_bf16((uint8_t)a);
        tally_hit(&t, got == want, "a=%04x got %08x", a, got);
    }
    fail |= tally_report(&t);

    /* e5m6 -> f16 / f32, all 4096 codes (value: bias 15, 6 mantissa bits) */
    t = (Tally){"e5m6->f32 (all 4096)", 0, 0, {{0}}};
    for (uint32_t c = 0; c < 4096; c++) {
        int s = c >> 11, e = (c >> 6) & 31, m = c & 63;
        uint32_t g = tl_num_e5m6_to_f32((uint16_t)c);
        bool ok;
        if (e == 31)
            ok = m ? g == 0x7FFFFFFFu : g == ((uint32_t)s << 31 | 0x7F800000u);
        else {
            double v = e == 0 ? ldexp(m, -20) : ldexp(64 + m, e - 21);
            ok = same_value(g, s ? -v : v) && tl_num_e5m6_to_f16((uint16_t)c) == (c << 4);
        }
        tally_hit(&t, ok, "c=%03x got %08x", c, g);
    }
    fail |= tally_report(&t);

    return fail;
}
