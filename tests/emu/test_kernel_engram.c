/* test_kernel_engram.c — engram_hash (kernels/engram.tl) on the emulator against
 * moe-engram-mhc.md §2.1: every declared (max n-gram size, tables) pair, a token count that is
 * not a multiple of the 128-token blocks, negative token ids and multipliers (negative hashes,
 * where the floor modulo differs from C's %), 64-bit wrap-around products, tiny and large vocab
 * sizes. Outputs must match exactly. */
#include "emu_harness.h"
#include "ref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void run(int MN, int B, int T, int L)
{
    char g[2][32];
    snprintf(g[0], 32, "MN=%d", MN);
    snprintf(g[1], 32, "B=%d", B);
    const char *gen[2] = {g[0], g[1]};
    char path[512];
    snprintf(path, sizeof path, "%s/kernels.tl", eh_source_dir());
    EhKernel k;
    if (!eh_compile(path, NULL, "engram_hash", gen, 2, &k)) {
        eh_failures++;
        return;
    }
    int NC = (MN - 1) * B;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)T * MN);
    int64_t *mult = malloc(sizeof(int64_t) * (size_t)L * MN);
    int32_t *vocab = malloc(sizeof(int32_t) * (size_t)L * (MN - 1) * B);
    int32_t *offs = malloc(sizeof(int32_t) * (size_t)L * NC);
    int32_t *out = malloc(sizeof(int32_t) * (size_t)L * T * NC), *want = malloc(sizeof(int32_t) * (size_t)L * T * NC);
    uint64_t seed = (uint64_t)(MN * 31 + B) | 1;
    for (int i = 0; i < T * MN; i++)
        ids[i] = i % 11 == 3 ? -(int32_t)(eh_rand(&seed) % 100000) : (int32_t)(eh_rand(&seed) % 100000);
    for (int i = 0; i < L * MN; i++)
        mult[i] = i % 3 == 2 ? (int64_t)(eh_rand(&seed) | 0x4000000000000000ull) /* wraps */
                 : i % 3 == 1 ? -(int64_t)(eh_rand(&seed) % 100000)
                              : (int64_t)(eh_rand(&seed) % 100000);
    for (int i = 0; i < L * (MN - 1) * B; i++)
        vocab[i] = i % 5 == 4 ? (int32_t)(1 + i % 3) : (int32_t)(100000 + eh_rand(&seed) % 900000);
    for (int l = 0; l < L; l++) { /* make_offsets: exclusive prefix sums per layer */
        int32_t acc = 0;
        for (int c = 0; c < NC; c++) {
            offs[l * NC + c] = acc;
            acc += vocab[l * NC + c];
        }
    }
    ref_engram_hash(ids, mult, vocab, offs, T, MN, L, B, want);
    memset(out, 0xEE, sizeof(int32_t) * (size_t)L * T * NC);
    int64_t is[2] = {T, MN}, ms[2] = {L, MN}, vs[3] = {L, MN - 1, B}, os[2] = {L, NC}, outs[3] = {L, T, NC};
    EhArg a[5] = {eh_tensor(ids, 2, is, NULL), eh_tensor(mult, 2, ms, NULL), eh_tensor(vocab, 3, vs, NULL),
                  eh_tensor(offs, 2, os, NULL), eh_tensor(out, 3, outs, NULL)};
    char err[2048];
    tl_emu_status st = eh_run(&k, a, 5, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "%s: %s", k.key, err);
    if (st == TL_EMU_OK)
        EH_CHECK(eh_compare_bytes(k.key, out, want, sizeof(int32_t) * (size_t)L * T * NC, 4) == 0, "%s: output differs",
                 k.key);
    free(ids);
    free(mult);
    free(vocab);
    free(offs);
    free(out);
    free(want);
    eh_free(&k);
}

int main(void)
{
    for (int mn = 2; mn <= 4; mn++)
        for (int b = 4; b <= 8; b += 4)
            run(mn, b, 45, 2);
    run(3, 8, 1, 1);
    return eh_finish("kernel_engram");
}
