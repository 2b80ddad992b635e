/* test_kernel_transpose.c — batched_transpose (kernels/transpose.tl) on the emulator against the
 * reference of quant-transpose.md §2.20: every element type width, the tile sizes, ragged last
 * tiles, strided rows and batches, the vector (SA = 16) and scalar (SA = 1) paths, and the
 * persistent pipelined form (STAGES > 0: blocks walk the tiles; the harness has 3 SMs, so each
 * block takes several tiles, across batches), both in both block orders (YMAJOR);
 * bytes must match exactly. */
#include "emu_harness.h"
#include "ref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void run_ordered(const char *T, size_t elem, int BX, int BY, int SA, int stages, int ymajor, int B, int M, int N,
                        int64_t sm, int64_t sb)
{
    char g[6][32];
    snprintf(g[0], sizeof g[0], "T=%s", T);
    snprintf(g[1], sizeof g[1], "BX=%d", BX);
    snprintf(g[2], sizeof g[2], "BY=%d", BY);
    snprintf(g[3], sizeof g[3], "SA=%d", SA);
    snprintf(g[4], sizeof g[4], "STAGES=%d", stages);
    snprintf(g[5], sizeof g[5], "YMAJOR=%s", ymajor ? "true" : "false");
    const char *gen[6] = {g[0], g[1], g[2], g[3], g[4], g[5]};
    char path[512];
    snprintf(path, sizeof path, "%s/kernels.tl", eh_source_dir());
    EhKernel k;
    if (!eh_compile(path, NULL, "batched_transpose", gen, 6, &k)) {
        eh_failures++;
        return;
    }
    size_t xbytes = (size_t)sb * B * elem;
    uint8_t *x = malloc(xbytes), *y = malloc((size_t)B * N * M * elem), *want = malloc((size_t)B * N * M * elem);
    uint64_t seed = (uint64_t)(M * 131 + N * 7 + B + BX + SA) | 1;
    for (size_t i = 0; i < xbytes; i++)
        x[i] = (uint8_t)eh_rand(&seed);
    memset(y, 0xEE, (size_t)B * N * M * elem);
    ref_batched_transpose(x, want, B, M, N, sb, sm, elem);
    int64_t xs[3] = {B, M, N}, xst[3] = {sb, sm, 1}, ys[3] = {B, N, M};
    EhArg a[2] = {eh_tensor(x, 3, xs, xst), eh_tensor(y, 3, ys, NULL)};
    char err[2048];
    tl_emu_status st = eh_run(&k, a, 2, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "%s B=%d M=%d N=%d: %s", k.key, B, M, N, err);
    if (st == TL_EMU_OK) {
        char what[512];
        snprintf(what, sizeof what, "%s B=%d M=%d N=%d SM=%lld SB=%lld", k.key, B, M, N, (long long)sm, (long long)sb);
        EH_CHECK(eh_compare_bytes(what, y, want, (size_t)B * N * M * elem, elem) == 0, "%s: output differs", what);
    }
    free(x);
    free(y);
    free(want);
    eh_free(&k);
}

static void run_staged(const char *T, size_t elem, int BX, int BY, int SA, int stages, int B, int M, int N, int64_t sm,
                       int64_t sb)
{
    run_ordered(T, elem, BX, BY, SA, stages, 1, B, M, N, sm, sb);
}

/* one tile per block, in both block orders (down x's columns, the default, and along its rows) */
static void run(const char *T, size_t elem, int BX, int BY, int SA, int B, int M, int N, int64_t sm, int64_t sb)
{
    run_ordered(T, elem, BX, BY, SA, 0, 1, B, M, N, sm, sb);
    run_ordered(T, elem, BX, BY, SA, 0, 0, B, M, N, sm, sb);
}

int main(void)
{
    /* contiguous, tiles that divide the matrix */
    run("bf16", 2, 64, 64, 16, 2, 128, 192, 192, 128 * 192);
    /* 128-row / 128-column tiles with ragged last tiles (M = 192, N = 320) */
    run("u8", 1, 128, 64, 16, 3, 192, 128, 128, 192 * 128);
    run("f32", 4, 64, 128, 16, 1, 64, 320, 320, 64 * 320);
    run("f32", 4, 128, 128, 16, 2, 192, 192, 192, 192 * 192);
    /* strided rows (row stride 2N, as the spec's tests) and a batch stride larger than M rows */
    run("bf16", 2, 64, 64, 16, 2, 64, 128, 256, 64 * 256 + 512);
    run("u8", 1, 64, 128, 16, 2, 128, 64, 128, 128 * 128);
    /* the scalar path: row strides that are not multiples of 16 elements */
    run("f32", 4, 64, 64, 1, 2, 64, 64, 67, 64 * 67 + 5);
    run("u8", 1, 128, 128, 1, 1, 128, 192, 193, 128 * 193);
    /* 256 x 256 bytes: micro-tiles of 16 rows of 8 bytes (16-byte writes), ragged and strided,
     * vector and scalar */
    run("u8", 1, 256, 256, 16, 2, 320, 576, 640, 320 * 640 + 16);
    run("u8", 1, 256, 256, 1, 1, 256, 256, 259, 256 * 259);
    /* persistent blocks: 2 and 3 stages, ragged tiles, strided batches */
    run_staged("bf16", 2, 128, 128, 16, 2, 3, 192, 320, 320, 192 * 320);
    run_staged("f32", 4, 64, 128, 16, 3, 2, 128, 192, 256, 128 * 256 + 64);
    run_ordered("bf16", 2, 64, 128, 16, 2, 0, 2, 192, 320, 320, 192 * 320);
    return eh_finish("kernel_transpose");
}
