/* test_kernel_moe.c — topk_gate (kernels/moe.tl) on the emulator against the stable descending
 * sort of moe-engram-mhc.md §1.2: the tested expert counts (16 ... 256, ragged ones like 36 and
 * 108), K = 6 and 8, random scores, rows of ties, rows with -inf entries (some with fewer than K
 * finite scores) and rows entirely -inf. Indices must match exactly. */
#include "emu_harness.h"
#include "ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void run(int E, int K, int T)
{
    char g[2][32];
    snprintf(g[0], 32, "E=%d", E);
    snprintf(g[1], 32, "K=%d", K);
    const char *gen[2] = {g[0], g[1]};
    char path[512];
    snprintf(path, sizeof path, "%s/kernels.tl", eh_source_dir());
    EhKernel k;
    if (!eh_compile(path, NULL, "topk_gate", gen, 2, &k)) {
        eh_failures++;
        return;
    }
    float *s = malloc(sizeof(float) * (size_t)T * E);
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)T * K), *want = malloc(sizeof(int64_t) * (size_t)T * K);
    uint64_t seed = (uint64_t)(E * 1009 + K) | 1;
    for (int t = 0; t < T; t++)
        for (int e = 0; e < E; e++) {
            float v = eh_randn(&seed);
            switch (t % 5) {
            case 1: v = (float)((int)(eh_rand(&seed) % 3) - 1); break;                  /* ties */
            case 2: v = eh_rand(&seed) % 4 ? -INFINITY : v; break;                      /* mostly -inf */
            case 3: v = e < 2 ? v : -INFINITY; break;                                   /* fewer than K finite */
            case 4: v = t == 4 ? -INFINITY : (e % 7 == 3 ? 5.0f : v); break;            /* all -inf; repeated max */
            default: break;
            }
            s[(size_t)t * E + e] = v;
        }
    ref_topk(s, T, E, K, want);
    memset(idx, 0xEE, sizeof(int64_t) * (size_t)T * K);
    int64_t ss[2] = {T, E}, is[2] = {T, K};
    EhArg a[2] = {eh_tensor(s, 2, ss, NULL), eh_tensor(idx, 2, is, NULL)};
    char err[2048];
    tl_emu_options o = {.workers = 2, .racecheck = 1};
    tl_emu_status st = eh_run(&k, a, 2, &o, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "%s: %s", k.key, err);
    if (st == TL_EMU_OK) {
        for (int t = 0; t < T; t++)
            for (int j = 0; j < K; j++)
                if (idx[(size_t)t * K + j] != want[(size_t)t * K + j]) {
                    EH_CHECK(0, "%s row %d (kind %d) rank %d: index %lld, want %lld", k.key, t, t % 5, j,
                             (long long)idx[(size_t)t * K + j], (long long)want[(size_t)t * K + j]);
                    break;
                }
    }
    free(s);
    free(idx);
    free(want);
    eh_free(&k);
}

int main(void)
{
    static const int ek[][2] = {{16, 6}, {32, 6}, {36, 6}, {64, 6}, {72, 6}, {108, 6}, {144, 6}, {256, 8}, {96, 8}};
    for (size_t i = 0; i < sizeof ek / sizeof ek[0]; i++)
        run(ek[i][0], ek[i][1], 23);
    return eh_finish("kernel_moe");
}
