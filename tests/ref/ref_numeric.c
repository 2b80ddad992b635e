/* ref_numeric.c — the number formats the references need, from the specs' definitions:
 * bf16 widening, RNE narrowing, the e4m3 encoder (quant-transpose.md §6.1) and the accurate
 * expf sequence (§0.3). */
#include "ref.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "numerics.h" /* only for the model of the MUFU ex2 unit */

float ref_f32(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint32_t ref_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

float ref_bf16_to_f32(uint16_t h) { return ref_f32((uint32_t)h << 16); }

uint16_t ref_f32_to_bf16(float f)
{
    uint32_t u = ref_bits(f);
    if (isnan(f))
        return 0x7FFF;
    uint32_t lsb = (u >> 16) & 1;
    return (uint16_t)((u + 0x7FFF + lsb) >> 16);
}

uint8_t ref_f32_to_e4m3(float x)
{
    uint8_t sign = (uint8_t)(ref_bits(x) >> 31 << 7);
    if (isnan(x))
        return 0x7F;
    double a = fabs((double)x);
    if (a > 448.0)
        return sign | 0x7E;
    if (a == 0.0)
        return sign;
    /* the spacing of e4m3 values around a: 2^(e - 3) for a in [2^e, 2^(e+1)), e >= -6 */
    int e;
    frexp(a, &e);
    e -= 1;
    if (e < -6)
        e = -6;
    double q = ldexp(1.0, e - 3);
    double v = rint(a / q) * q; /* exact quotient; rint rounds half to even */
    if (v > 448.0)
        v = 448.0;
    if (v == 0.0)
        return sign;
    int ve;
    frexp(v, &ve);
    ve -= 1;
    if (ve < -6)
        return sign | (uint8_t)(v / ldexp(1.0, -9)); /* subnormal: m * 2^-9 */
    int m = (int)((v / ldexp(1.0, ve) - 1.0) * 8.0);
    return sign | (uint8_t)((ve + 7) << 3 | m);
}

float ref_expf(float x)
{
    /* the emulator installs the built-in H200 tables at its first launch: so does the reference */
    static int tables;
    if (!tables) {
        char why[256];
        tables = 1;
        if (tl_num_mufu_install_builtin(why, sizeof why) < 0)
            fprintf(stderr, "ref_expf: %s\n", why);
    }
    float t = fmaf(x, ref_f32(0x3BBB989D), 0.5f);
    t = isnan(t) || t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t;
    /* fma.rm(t, 252, 12582913): t * 252 + 12582913 is exact in double for t in [0, 1] */
    float j = (float)floor((double)t * 252.0 + 12582913.0);
    float k = j - 12583039.0f;
    float r = fmaf(x, ref_f32(0x3FB8AA3B), -k);
    r = fmaf(x, ref_f32(0x32A57060), r);
    float p = ref_f32(tl_num_ex2_approx_ftz(ref_bits(r)));
    float s = ref_f32(ref_bits(j) << 23);
    float y = p * s;
    return isnan(y) ? ref_f32(0x7FFFFFFF) : y;
}
