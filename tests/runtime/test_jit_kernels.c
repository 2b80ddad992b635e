/* test_jit_kernels.c — the shipped kernels through the real compiler and the runtime (fake
 * driver): each specialisation compiles, its signature parses, and typical arguments pass the
 * launch checks with the grid the kernel's launch expression gives; wrong ones are refused
 * with the kernel's own requirement messages. */
#include "tilec/runtime.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define EXPECT(c)                                                                                                \
    do {                                                                                                         \
        if (!(c)) {                                                                                              \
            fprintf(stderr, "%s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #c, tilec_rt_last_error());      \
            failures++;                                                                                          \
        }                                                                                                        \
    } while (0)

static tilec_rt_kernel *get(tilec_rt_library *lib, const char *name, const char **g, int n)
{
    tilec_rt_kernel *k = NULL;
    tilec_status s = tilec_rt_get_kernel(lib, name, g, n, &k);
    if (s != TILEC_OK) {
        fprintf(stderr, "get_kernel %s: %s\n", name, tilec_rt_last_error());
        failures++;
    }
    return k;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_jit_kernels KERNELS.TL\n");
        return 2;
    }
    tilec_rt_options o = tilec_rt_default_options();
    o.flags = TILEC_RT_NO_DISK_CACHE;
    tilec_rt *rt = NULL;
    EXPECT(tilec_rt_create(&o, &rt) == TILEC_OK);
    if (!rt)
        return 1;
    tilec_rt_library_options lo;
    memset(&lo, 0, sizeof lo);
    lo.source = argv[1];
    tilec_rt_library *lib = NULL;
    EXPECT(tilec_rt_library_open(rt, &lo, &lib) == TILEC_OK);
    if (!lib)
        return 1;
    tilec_rt_launch_config cfg;

    /* batched transpose: grid (M / 64, N / 128, B) for BX=64, BY=128 (blocks down x's columns) */
    const char *gt[] = {"T=bf16", "BX=64", "BY=128", "SA=8"};
    tilec_rt_kernel *k = get(lib, "batched_transpose", gt, 4);
    if (k) {
        int64_t xs[3] = {8, 4032, 7168}, ys[3] = {8, 7168, 4032};
        int64_t xst[3] = {4032 * 14336, 14336, 1};
        tilec_rt_arg a[2] = {tilec_rt_arg_tensor((void *)0x10000, TILEC_RT_BF16, 3, xs, xst),
                             tilec_rt_arg_tensor((void *)0x20000000, TILEC_RT_BF16, 3, ys, NULL)};
        EXPECT(tilec_rt_check(k, a, 2, NULL, &cfg) == TILEC_OK);
        EXPECT(cfg.grid[0] == 4032 / 64 && cfg.grid[1] == 7168 / 128 && cfg.grid[2] == 8 && cfg.block[0] == 256);
        int64_t bad[3] = {8, 4000, 7168}, badst[3] = {4000 * 7168, 7168, 1};
        tilec_rt_arg b[2] = {tilec_rt_arg_tensor((void *)0x10000, TILEC_RT_BF16, 3, bad, badst),
                             tilec_rt_arg_tensor((void *)0x20000000, TILEC_RT_BF16, 3, (int64_t[]){8, 7168, 4000}, NULL)};
        EXPECT(tilec_rt_check(k, b, 2, NULL, &cfg) == TILEC_ERROR_LAUNCH &&
               strstr(tilec_rt_last_error(), "M must be a multiple of 64"));
        EXPECT(tilec_rt_launch(k, a, 2, NULL) == TILEC_OK);
    }
    /* the other block order: grid (N / 128, M / 64, B) */
    const char *gr[] = {"T=bf16", "BX=64", "BY=128", "SA=8", "YMAJOR=false"};
    k = get(lib, "batched_transpose", gr, 5);
    if (k) {
        int64_t xs[3] = {8, 4032, 7168}, ys[3] = {8, 7168, 4032};
        tilec_rt_arg a[2] = {tilec_rt_arg_tensor((void *)0x10000, TILEC_RT_BF16, 3, xs, NULL),
                             tilec_rt_arg_tensor((void *)0x20000000, TILEC_RT_BF16, 3, ys, NULL)};
        EXPECT(tilec_rt_check(k, a, 2, NULL, &cfg) == TILEC_OK);
        EXPECT(cfg.grid[0] == 7168 / 128 && cfg.grid[1] == 4032 / 64 && cfg.grid[2] == 8);
    }

    /* per-token cast, f32 scales: grid (cdiv(M, BM), cdiv(H, BK)) */
    const char *gq[] = {"T=bf16", "O=e4m3", "H=576", "G=128", "ROUND=true", "XA=8", "out=present", "sf=present",
                        "sfp=absent", "psf=absent", "isf=absent", "isfp=absent"};
    k = get(lib, "per_token_cast", gq, 12);
    if (k) {
        int64_t xs[2] = {4001, 576}, sfs[2] = {4001, 5};
        tilec_rt_arg a[7] = {tilec_rt_arg_tensor((void *)0x10000, TILEC_RT_BF16, 2, xs, NULL),
                             tilec_rt_arg_tensor((void *)0x20000000, TILEC_RT_E4M3, 2, xs, NULL),
                             tilec_rt_arg_tensor((void *)0x30000000, TILEC_RT_F32, 2, sfs, NULL), tilec_rt_arg_absent(),
                             tilec_rt_arg_absent(), tilec_rt_arg_absent(), tilec_rt_arg_absent()};
        EXPECT(tilec_rt_check(k, a, 7, NULL, &cfg) == TILEC_OK);
        /* BK = max(128, gcd(4096, 576) = 64) = 128, BM = 4096 / 128 = 32 */
        EXPECT(cfg.grid[0] == (4001 + 31) / 32 && cfg.grid[1] == 5 && cfg.block[0] == 128);
        int64_t wrong[2] = {4001, 4};
        a[2] = tilec_rt_arg_tensor((void *)0x30000000, TILEC_RT_F32, 2, wrong, NULL);
        EXPECT(tilec_rt_check(k, a, 7, NULL, &cfg) == TILEC_ERROR_LAUNCH &&
               strstr(tilec_rt_last_error(), "sf must have one column per group"));
    }

    /* per-token cast, packed UE8M0 scales: sf absent, so its requirement is not in the signature */
    const char *gp[] = {"T=bf16", "O=e4m3", "H=2048", "G=128", "ROUND=true", "XA=8", "out=present", "sf=absent",
                        "sfp=present", "psf=absent", "isf=absent", "isfp=absent"};
    k = get(lib, "per_token_cast", gp, 12);
    if (k) {
        EXPECT(strstr(tilec_rt_kernel_signature(k), "sf must have") == NULL);
        int64_t xs[2] = {4001, 2048}, ps[2] = {4, 4004 * 4};
        tilec_rt_arg a[7] = {tilec_rt_arg_tensor((void *)0x10000, TILEC_RT_BF16, 2, xs, NULL),
                             tilec_rt_arg_tensor((void *)0x20000000, TILEC_RT_E4M3, 2, xs, NULL), tilec_rt_arg_absent(),
                             tilec_rt_arg_tensor((void *)0x30000000, TILEC_RT_U8, 2, ps, NULL),
                             tilec_rt_arg_absent(), tilec_rt_arg_absent(), tilec_rt_arg_absent()};
        EXPECT(tilec_rt_check(k, a, 7, NULL, &cfg) == TILEC_OK);
    }

    /* top-k gate: one warp per token, four tokens per block */
    const char *gk[] = {"E=256", "K=8"};
    k = get(lib, "topk_gate", gk, 2);
    if (k) {
        int64_t ss[2] = {4001, 256}, is[2] = {4001, 8};
        tilec_rt_arg a[2] = {tilec_rt_arg_tensor((void *)0x10000, TILEC_RT_F32, 2, ss, NULL),
                             tilec_rt_arg_tensor((void *)0x20000000, TILEC_RT_I64, 2, is, NULL)};
        EXPECT(tilec_rt_check(k, a, 2, NULL, &cfg) == TILEC_OK && cfg.grid[0] == (4001 + 3) / 4 && cfg.block[0] == 128);
    }

    /* engram hash */
    const char *ge[] = {"MN=3", "B=8"};
    k = get(lib, "engram_hash", ge, 2);
    if (k) {
        int64_t ids[2] = {4001, 3}, mul[2] = {2, 3}, voc[3] = {2, 2, 8}, off[2] = {2, 16}, out[3] = {2, 4001, 16};
        tilec_rt_arg a[5] = {tilec_rt_arg_tensor((void *)0x10000, TILEC_RT_I32, 2, ids, NULL),
                             tilec_rt_arg_tensor((void *)0x20000, TILEC_RT_I64, 2, mul, NULL),
                             tilec_rt_arg_tensor((void *)0x30000, TILEC_RT_I32, 3, voc, NULL),
                             tilec_rt_arg_tensor((void *)0x40000, TILEC_RT_I32, 2, off, NULL),
                             tilec_rt_arg_tensor((void *)0x50000000, TILEC_RT_I32, 3, out, NULL)};
        EXPECT(tilec_rt_check(k, a, 5, NULL, &cfg) == TILEC_OK && cfg.grid[0] == (4001 + 127) / 128 && cfg.grid[1] == 2);
    }

    /* Engram gate: persistent grids, min(T, num_sms * BPS) blocks forward, one per partial row backward */
    const char *gf[] = {"HC=4", "D=7168", "C=1024", "NT=512", "S=3", "BPS=1", "SAVE=false"};
    k = get(lib, "engram_gate_fwd", gf, 7);
    if (k) {
        int64_t xs[3] = {4001, 4, 7168}, vs[2] = {4001, 7168}, ws[2] = {4, 7168};
        tilec_rt_arg a[15] = {tilec_rt_arg_tensor((void *)0x10000, TILEC_RT_BF16, 3, xs, NULL),
                              tilec_rt_arg_tensor((void *)0x20000000, TILEC_RT_BF16, 3, xs, NULL),
                              tilec_rt_arg_tensor((void *)0x40000000, TILEC_RT_BF16, 2, vs, NULL),
                              tilec_rt_arg_tensor((void *)0x50000000, TILEC_RT_F32, 2, ws, NULL),
                              tilec_rt_arg_tensor((void *)0x60000000, TILEC_RT_BF16, 3, xs, NULL),
                              tilec_rt_arg_absent(), tilec_rt_arg_absent(), tilec_rt_arg_absent(), tilec_rt_arg_absent(),
                              tilec_rt_arg_float(TILEC_RT_F32, 1e-20), tilec_rt_arg_float(TILEC_RT_F32, 1e-6),
                              tilec_rt_arg_float(TILEC_RT_F32, 0.0118)};
        tilec_rt_launch_options sms100 = {NULL, 100};
        EXPECT(tilec_rt_check(k, a, 12, &sms100, &cfg) == TILEC_OK && cfg.grid[0] == 100 && cfg.block[0] == 512);
        int64_t xs7[3] = {7, 4, 7168}, vs7[2] = {7, 7168};   /* fewer tokens than SMs: one block each */
        a[0] = tilec_rt_arg_tensor((void *)0x10000, TILEC_RT_BF16, 3, xs7, NULL);
        a[1] = tilec_rt_arg_tensor((void *)0x20000000, TILEC_RT_BF16, 3, xs7, NULL);
        a[2] = tilec_rt_arg_tensor((void *)0x40000000, TILEC_RT_BF16, 2, vs7, NULL);
        a[4] = tilec_rt_arg_tensor((void *)0x60000000, TILEC_RT_BF16, 3, xs7, NULL);
        EXPECT(tilec_rt_check(k, a, 12, &sms100, &cfg) == TILEC_OK && cfg.grid[0] == 7);
    }
    const char *gb[] = {"HC=4", "D=7168", "C=1024", "NT=512", "S=3"};
    k = get(lib, "engram_gate_bwd", gb, 5);
    if (k) {
        int64_t xs[3] = {4001, 4, 7168}, vs[2] = {4001, 7168}, ws[2] = {4, 7168}, ss[2] = {4001, 4}, ps[3] = {132, 4, 7168};
        tilec_rt_arg a[15];
        for (int i = 0; i < 15; i++)
            a[i] = tilec_rt_arg_tensor((void *)(uintptr_t)(0x10000000ull * (uint64_t)(i + 1)), TILEC_RT_BF16, 3, xs, NULL);
        a[3] = tilec_rt_arg_tensor((void *)0x40000000, TILEC_RT_BF16, 2, vs, NULL);
        a[4] = tilec_rt_arg_tensor((void *)0x50000000, TILEC_RT_F32, 2, ws, NULL);
        for (int i = 5; i < 9; i++)
            a[i] = tilec_rt_arg_tensor((void *)(uintptr_t)(0x10000000ull * (uint64_t)(i + 1)), TILEC_RT_F32, 2, ss, NULL);
        a[11] = tilec_rt_arg_tensor((void *)0xC0000000, TILEC_RT_BF16, 2, vs, NULL);
        a[12] = tilec_rt_arg_tensor((void *)0xD0000000, TILEC_RT_F32, 3, ps, NULL);
        a[13] = tilec_rt_arg_float(TILEC_RT_F32, 1e-6);
        a[14] = tilec_rt_arg_float(TILEC_RT_F32, 0.0118);
        EXPECT(tilec_rt_check(k, a, 15, NULL, &cfg) == TILEC_OK && cfg.grid[0] == 132 && cfg.block[0] == 512);
        int64_t bad[2] = {4, 7000};   /* the fused weight must have the hidden size */
        a[4] = tilec_rt_arg_tensor((void *)0x50000000, TILEC_RT_F32, 2, bad, NULL);
        EXPECT(tilec_rt_check(k, a, 15, NULL, &cfg) != TILEC_OK);
    }

    /* Sinkhorn of the design notes (frag tiles, 32 matrices a block) */
    const char *gs[] = {"H=4", "BLOCK=32", "REPEAT=10"};
    k = get(lib, "mhc_sinkhorn", gs, 3);
    if (k) {
        int64_t xs[3] = {1000, 4, 4};
        tilec_rt_arg a[3] = {tilec_rt_arg_tensor((void *)0x10000, TILEC_RT_F32, 3, xs, NULL),
                             tilec_rt_arg_tensor((void *)0x20000000, TILEC_RT_F32, 3, xs, NULL),
                             tilec_rt_arg_float(TILEC_RT_F32, 1e-6)};
        EXPECT(tilec_rt_check(k, a, 3, NULL, &cfg) == TILEC_OK && cfg.grid[0] == (1000 + 31) / 32);
    }
    /* sinkhorn_normalize's: one thread per matrix, the repeat count checked at launch */
    const char *gn[] = {"N=4"};
    k = get(lib, "mhc_sinkhorn_fwd", gn, 1);
    if (k) {
        int64_t xs[3] = {1000, 4, 4};
        tilec_rt_arg a[4] = {tilec_rt_arg_tensor((void *)0x10000, TILEC_RT_F32, 3, xs, NULL),
                             tilec_rt_arg_tensor((void *)0x20000000, TILEC_RT_F32, 3, xs, NULL),
                             tilec_rt_arg_int(TILEC_RT_I32, 10), tilec_rt_arg_float(TILEC_RT_F32, 1e-6)};
        EXPECT(tilec_rt_check(k, a, 4, NULL, &cfg) == TILEC_OK && cfg.grid[0] == (1000 + 127) / 128);
        a[2] = tilec_rt_arg_int(TILEC_RT_I32, 0);
        EXPECT(tilec_rt_check(k, a, 4, NULL, &cfg) != TILEC_OK);
    }
    tilec_rt_library_close(lib);
    tilec_rt_destroy(rt);
    if (failures)
        fprintf(stderr, "test_jit_kernels: %d failure(s)\n", failures);
    return failures ? 1 : 0;
}
