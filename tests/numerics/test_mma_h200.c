/* test_mma_h200.c — the FP8 tensor-core model (tl_num_mma_e4m3 / tl_num_mma_e5m2, numerics.h
 * "Tensor cores") against outputs of mma.sync m16n8k32 on an H200, bit for bit: every line of a
 * recording (tests/gpu/recorded/h200-2026-12-02-mma-fp8/, its README says how it was made) is
 * one output element,
 *   FORM KIND a0,a1,...,a31 | b0,...,b31 CCCCCCCC GGGGGGGG
 * FORM e4m3 or e5m2, KIND the input class of tests/gpu/numerics/mma_model.cu, the element codes
 * of one row of A and one column of B in hex, c and the GPU's d as f32 bit patterns; '#' starts
 * a comment line. The file may be gzip-compressed or plain. Every element must match, and the
 * recording must hold both forms in all seven input classes.
 * Usage: test_numerics_mma_h200 FILE */
#include "numerics.h"
#include "ref.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static const char *KINDS[] = {"normal", "wide", "cancel", "bits", "tiny", "cuts", "integers"};
enum { NKINDS = 7 };

/* n hex codes separated by commas; returns the position after them, or NULL */
static const char *parse_codes(const char *p, uint8_t *out, int n)
{
    for (int i = 0; i < n; i++) {
        char *end;
        unsigned long v = strtoul(p, &end, 16);
        if (end == p || v > 0xFF)
            return NULL;
        out[i] = (uint8_t)v;
        p = end;
        if (i + 1 < n) {
            if (*p != ',')
                return NULL;
            p++;
        }
    }
    return p;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_numerics_mma_h200 FILE\n");
        return 2;
    }
    gzFile f = gzopen(argv[1], "rb");
    if (!f) {
        printf("cannot open %s\n", argv[1]);
        return 1;
    }
    Tally t = {"mma.sync m16n8k32 e4m3 / e5m2 on an H200 vs tl_num_mma_e4m3 / e5m2", 0, 0, {{0}}};
    uint64_t per[2][NKINDS] = {{0}}, bad_lines = 0;
    char line[1024];
    int lineno = 0;
    while (gzgets(f, line, sizeof line)) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        char form[8], kind[16];
        int off = 0;
        if (sscanf(line, "%7s %15s %n", form, kind, &off) != 2) {
            if (bad_lines++ < 4)
                printf("line %d: not a recorded output\n", lineno);
            continue;
        }
        int fi = !strcmp(form, "e4m3") ? 0 : !strcmp(form, "e5m2") ? 1 : -1, ki = -1;
        for (int k = 0; k < NKINDS; k++)
            if (!strcmp(kind, KINDS[k]))
                ki = k;
        uint8_t a[32], b[32];
        unsigned c, gpu;
        const char *p = fi < 0 || ki < 0 ? NULL : parse_codes(line + off, a, 32);
        if (p && strncmp(p, " | ", 3) == 0)
            p = parse_codes(p + 3, b, 32);
        else
            p = NULL;
        if (!p || sscanf(p, " %8x %8x", &c, &gpu) != 2) {
            if (bad_lines++ < 4)
                printf("line %d: not a recorded output\n", lineno);
            continue;
        }
        uint32_t got = fi == 0 ? tl_num_mma_e4m3(a, b, c) : tl_num_mma_e5m2(a, b, c);
        per[fi][ki]++;
        tally_hit(&t, got == gpu, "line %d (%s %s, c %08x): the model gives %08x, the H200 %08x", lineno, form, kind, c,
                  got, gpu);
    }
    gzclose(f);
    int fail = tally_report(&t);
    if (bad_lines) {
        printf("%llu lines are not recorded outputs\n", (unsigned long long)bad_lines);
        fail = 1;
    }
    for (int fi = 0; fi < 2; fi++)
        for (int k = 0; k < NKINDS; k++)
            if (!per[fi][k]) {
                printf("the recording has no %s %s outputs\n", fi ? "e5m2" : "e4m3", KINDS[k]);
                fail = 1;
            }
    printf(fail ? "FAILED\n" : "all passed\n");
    return fail;
}
