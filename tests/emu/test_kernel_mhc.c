/* test_kernel_mhc.c — mhc_sinkhorn (kernels/mhc.tl) on the emulator against moe-engram-mhc.md
 * §3.2: bit-exact against the reference with the fixed summation order, and within the spec's
 * tolerance of a double-precision evaluation; matrix counts that leave the last block of 32
 * partial, one and several rounds, inputs of ordinary and large magnitude (exp underflows). */
#include "emu_harness.h"
#include "ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void run(int N, int repeat, float scale)
{
    const int H = 4;
    char g[3][32];
    snprintf(g[0], 32, "H=%d", H);
    snprintf(g[1], 32, "BLOCK=32");
    snprintf(g[2], 32, "REPEAT=%d", repeat);
    const char *gen[3] = {g[0], g[1], g[2]};
    char path[512];
    snprintf(path, sizeof path, "%s/kernels.tl", eh_source_dir());
    EhKernel k;
    if (!eh_compile(path, NULL, "mhc_sinkhorn", gen, 3, &k)) {
        eh_failures++;
        return;
    }
    size_t n = (size_t)N * H * H;
    float *x = malloc(n * 4), *out = malloc(n * 4), *want = malloc(n * 4);
    double *d = malloc(n * 8);
    uint64_t seed = (uint64_t)(N * 7 + repeat) | 1;
    for (size_t i = 0; i < n; i++)
        x[i] = eh_randn(&seed) * scale;
    const float eps = 1e-6f;
    ref_sinkhorn(x, want, N, H, repeat, eps);
    ref_sinkhorn_f64(x, d, N, H, repeat, (double)eps);
    memset(out, 0xEE, n * 4);
    int64_t s[3] = {N, H, H};
    EhArg a[3] = {eh_tensor(x, 3, s, NULL), eh_tensor(out, 3, s, NULL), eh_f32(eps)};
    char err[2048];
    tl_emu_status st = eh_run(&k, a, 3, NULL, err, sizeof err);
    char what[512];
    snprintf(what, sizeof what, "%s N=%d scale=%g", k.key, N, scale);
    EH_CHECK(st == TL_EMU_OK, "%s: %s", what, err);
    if (st == TL_EMU_OK) {
        EH_CHECK(eh_compare_bytes(what, out, want, n * 4, 4) == 0, "%s: output differs from the reference", what);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += !(fabs(out[i] - d[i]) <= 1e-5 + 1.3e-6 * fabs(d[i]));
        EH_CHECK(bad == 0, "%s: %zu elements outside rtol 1.3e-6, atol 1e-5 of the f64 evaluation", what, bad);
    }
    free(x);
    free(out);
    free(want);
    free(d);
    eh_free(&k);
}

int main(void)
{
    run(70, 10, 1.0f);
    run(1, 10, 1.0f);
    run(33, 1, 1.0f);
    run(40, 3, 30.0f);
    return eh_finish("kernel_mhc");
}
