/* ref_quant.c — batched_transpose (quant-transpose.md §2.20) and per_token_cast to e4m3 with
 * plain f32 / bf16 input (§2.1, the scale factor of §1.2, the layouts of §1.4). */
#include "ref.h"

#include <math.h>
#include <string.h>

void ref_batched_transpose(const void *x, void *y, int B, int M, int N, int64_t sb, int64_t sm, size_t elem)
{
    const uint8_t *xs = x;
    uint8_t *ys = y;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++)
                memcpy(ys + (((size_t)b * N + j) * M + i) * elem, xs + ((size_t)b * sb + (size_t)i * sm + j) * elem, elem);
}

/* SF(amax) of §1.2 for e4m3: MAX = 448, CMIN = f32(0x38D1B717) */
static void scale_factor(float amax, bool round, float *sf, float *sf_inv, int *e)
{
    float cmin = ref_f32(0x38D1B717u);
    float a = amax > cmin ? amax : cmin; /* max.f32; amax is never NaN here */
    float s = a / 448.0f;
    if (!round) {
        *sf = s;
        *sf_inv = 448.0f / a;
        *e = 0;
        return;
    }
    uint32_t b = ref_bits(s);
    int ex = (int)((b - 1) >> 23) + 1 - 127;
    *sf = ref_f32((uint32_t)(127 + ex) << 23);
    *sf_inv = ref_f32((uint32_t)(127 - ex) << 23);
    *e = ex;
}

void ref_per_token_cast(const RefCast *c)
{
    int NG = (c->H + c->G - 1) / c->G;
    for (int t = 0; t < c->M; t++) {
        for (int g = 0; g < NG; g++) {
            int j0 = g * c->G, j1 = j0 + c->G < c->H ? j0 + c->G : c->H;
            float amax = 0.0f;
            for (int j = j0; j < j1; j++) {
                float v = c->bf16 ? ref_bf16_to_f32(((const uint16_t *)c->x)[(size_t)t * (size_t)c->sx + (size_t)j])
                                  : ((const float *)c->x)[(size_t)t * (size_t)c->sx + (size_t)j];
                if (fabsf(v) > amax)
                    amax = fabsf(v);
            }
            float sf, inv;
            int e;
            scale_factor(amax, c->round, &sf, &inv, &e);
            if (c->sf)
                c->sf[(size_t)t * (size_t)c->sf0 + (size_t)g * (size_t)c->sf1] = sf;
            if (c->sfp)
                c->sfp[(size_t)(g / 4) * (size_t)c->sp + (size_t)(4 * t + g % 4)] = (uint8_t)(e + 127);
            for (int j = j0; j < j1; j++) {
                float v = c->bf16 ? ref_bf16_to_f32(((const uint16_t *)c->x)[(size_t)t * (size_t)c->sx + (size_t)j])
                                  : ((const float *)c->x)[(size_t)t * (size_t)c->sx + (size_t)j];
                c->out[(size_t)t * c->H + j] = ref_f32_to_e4m3(v * inv);
            }
        }
        /* the pad bytes of the last packed word are written as zero (§1.4) */
        if (c->sfp)
            for (int g = NG; g % 4; g++)
                c->sfp[(size_t)(g / 4) * (size_t)c->sp + (size_t)(4 * t + g % 4)] = 0;
    }
    /* and so are the rows that pad the packed storage to a multiple of 4 tokens (the kernel
     * writes them so that the storage needs no clearing) */
    if (c->sfp)
        for (int t = c->M; t % 4; t++)
            for (int g = 0; g < (NG + 3) / 4 * 4; g++)
                c->sfp[(size_t)(g / 4) * (size_t)c->sp + (size_t)(4 * t + g % 4)] = 0;
}
