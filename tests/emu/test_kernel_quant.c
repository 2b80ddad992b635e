/* test_kernel_quant.c — per_token_cast (kernels/quant.tl) on the emulator against the reference
 * of quant-transpose.md §2.1: f32 and bf16 input, groups of 32 / 64 / 128 and one per row, the
 * partial last group of H = 576, ROUND off and on, row-major, column-major (TMA-aligned) and
 * packed UE8M0 scales, row counts that leave the last row block partial, strided rows, and rows
 * of zeros, negative zeros, subnormals and large values. Outputs and scales are compared byte
 * for byte (pad bytes of the packed scales included). */
#include "emu_harness.h"
#include "ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SF_ROW, SF_COL, SF_PACKED };

static float sample(uint64_t *seed, int row, int j)
{
    switch (row % 6) {
    case 0: return 0.0f;                                       /* amax 0: the clamp */
    case 1: return -0.0f * eh_randn(seed) - 0.0f;              /* negative zeros */
    case 2: return eh_randn(seed) * 1e-40f;                     /* subnormals */
    case 3: return eh_randn(seed) * 3000.0f;                    /* large */
    case 4: return (float)((j % 17) - 8) * 0.25f;               /* exact values, ties after scaling */
    default: return eh_randn(seed);
    }
}

static void run(bool bf16, int H, int G, bool round, int layout, int M, int64_t sx)
{
    int NG = (H + G - 1) / G;
    char g[16][32];
    int ng = 0;
    snprintf(g[ng++], 32, "T=%s", bf16 ? "bf16" : "f32");
    snprintf(g[ng++], 32, "O=e4m3");
    snprintf(g[ng++], 32, "out=present");
    snprintf(g[ng++], 32, "psf=absent");
    snprintf(g[ng++], 32, "isf=absent");
    snprintf(g[ng++], 32, "isfp=absent");
    snprintf(g[ng++], 32, "H=%d", H);
    snprintf(g[ng++], 32, "G=%d", G);
    snprintf(g[ng++], 32, "ROUND=%s", round ? "true" : "false");
    snprintf(g[ng++], 32, "XA=8");
    snprintf(g[ng++], 32, "sf=%s", layout == SF_PACKED ? "absent" : "present");
    snprintf(g[ng++], 32, "sfp=%s", layout == SF_PACKED ? "present" : "absent");
    const char *gen[16];
    for (int i = 0; i < ng; i++)
        gen[i] = g[i];
    char path[512];
    snprintf(path, sizeof path, "%s/kernels.tl", eh_source_dir());
    EhKernel k;
    if (!eh_compile(path, NULL, "per_token_cast", gen, ng, &k)) {
        eh_failures++;
        return;
    }
    size_t es = bf16 ? 2 : 4;
    void *x = calloc((size_t)M * (size_t)sx, es);
    uint64_t seed = (uint64_t)(H * 977 + G * 31 + M + round) | 1;
    for (int t = 0; t < M; t++)
        for (int j = 0; j < H; j++) {
            float v = sample(&seed, t, j);
            if (bf16)
                ((uint16_t *)x)[(size_t)t * sx + j] = ref_f32_to_bf16(v);
            else
                ((float *)x)[(size_t)t * sx + j] = v;
        }
    uint8_t *out = malloc((size_t)M * H), *want = malloc((size_t)M * H);
    memset(out, 0xEE, (size_t)M * H);
    int Ma = (M + 3) / 4 * 4;
    int64_t sf0 = layout == SF_ROW ? NG : 1, sf1 = layout == SF_ROW ? 1 : Ma;
    size_t sfn = layout == SF_ROW ? (size_t)M * NG : (size_t)NG * Ma;
    float *sf = malloc(sfn * 4), *sfw = malloc(sfn * 4);
    int NP = (NG + 3) / 4;
    int64_t SP = 4 * (int64_t)Ma;
    uint8_t *sfp = malloc((size_t)NP * SP), *sfpw = malloc((size_t)NP * SP);
    memset(sf, 0xEE, sfn * 4);
    memcpy(sfw, sf, sfn * 4);
    memset(sfp, 0xEE, (size_t)NP * SP);
    memcpy(sfpw, sfp, (size_t)NP * SP);
    RefCast rc = {x, bf16, M, H, sx, G, round, want, layout == SF_PACKED ? NULL : sfw, sf0, sf1,
                  layout == SF_PACKED ? sfpw : NULL, SP};
    ref_per_token_cast(&rc);

    int64_t xs[2] = {M, H}, xst[2] = {sx, 1}, ss[2] = {M, NG}, sst[2] = {sf0, sf1}, ps[2] = {NP, SP};
    /* absent psf, isf, isfp: null pointers with shapes consistent with the bound names */
    int64_t none[2] = {0, 0};
    EhArg a[7] = {eh_tensor(x, 2, xs, xst), eh_tensor(out, 2, xs, NULL), eh_tensor(sf, 2, ss, sst),
                  eh_tensor(sfp, 2, ps, NULL), eh_tensor(NULL, 2, ss, NULL), eh_tensor(NULL, 2, xs, NULL),
                  eh_tensor(NULL, 2, none, NULL)};
    /* an absent optional tensor still occupies its parameters: a null pointer and its shape */
    if (layout == SF_PACKED)
        a[2] = eh_tensor(NULL, 2, ss, sst);
    else
        a[3] = eh_tensor(NULL, 2, ps, NULL);
    char err[2048];
    tl_emu_status st = eh_run(&k, a, 7, NULL, err, sizeof err);
    char what[512];
    snprintf(what, sizeof what, "%s M=%d SX=%lld layout=%d", k.key, M, (long long)sx, layout);
    EH_CHECK(st == TL_EMU_OK, "%s: %s", what, err);
    if (st == TL_EMU_OK) {
        EH_CHECK(eh_compare_bytes(what, out, want, (size_t)M * H, 1) == 0, "%s: e4m3 output differs", what);
        if (layout == SF_PACKED)
            EH_CHECK(eh_compare_bytes(what, sfp, sfpw, (size_t)NP * SP, 1) == 0, "%s: packed scales differ", what);
        else
            EH_CHECK(eh_compare_bytes(what, sf, sfw, sfn * 4, 4) == 0, "%s: scales differ", what);
    }
    free(x);
    free(out);
    free(want);
    free(sf);
    free(sfw);
    free(sfp);
    free(sfpw);
    eh_free(&k);
}

int main(void)
{
    /* the spec's partial group: H = 576 with G = 128 (the last group has 64 columns) */
    run(false, 576, 128, false, SF_ROW, 45, 576);
    run(true, 576, 128, true, SF_COL, 45, 1152);
    run(false, 576, 128, true, SF_PACKED, 45, 576);
    /* G = 32 and 64, more row blocks than one, strided rows */
    run(true, 576, 32, false, SF_ROW, 70, 576);
    run(false, 2048, 64, true, SF_COL, 5, 4096);
    run(true, 2048, 32, true, SF_PACKED, 9, 2048);
    /* one scale per row (G == H): a block spans the padded row */
    run(false, 576, 576, false, SF_ROW, 7, 576);
    run(true, 576, 576, true, SF_COL, 6, 1152);
    /* a single row */
    run(false, 576, 128, true, SF_ROW, 1, 576);
    return eh_finish("kernel_quant");
}
