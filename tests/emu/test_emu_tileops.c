/* test_emu_tileops.c — tile operations beyond the shipped kernels on the emulator, with the
 * racecheck on: block-wide and 2-D cumsum (tests/codegen/tileops/cumsum.tl) and pipelined
 * copy-and-sum loops (pipe_sum.tl), against sequential references; the inputs are integers
 * (or integer-valued floats) so that every summation order gives the same bits. */
#include "emu_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool compile(const char *file, const char *kernel, const char *g, EhKernel *k)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/codegen/tileops/%s", eh_source_dir(), file);
    const char *gen[1] = {g};
    if (eh_compile(path, NULL, kernel, gen, g ? 1 : 0, k))
        return true;
    eh_failures++;
    return false;
}

static void test_cumsum_1d(int threads, bool exclusive)
{
    char g[32];
    snprintf(g, sizeof g, "T=%d", threads);
    EhKernel k;
    if (!compile("cumsum.tl", exclusive ? "cumsum_i32_exclusive" : "cumsum_i32", g, &k))
        return;
    int32_t x[1024], y[1024];
    uint64_t seed = 3;
    for (int i = 0; i < 1024; i++)
        x[i] = (int32_t)eh_rand(&seed); /* sums wrap around */
    int64_t n[1] = {1024};
    EhArg a[2] = {eh_tensor(x, 1, n, NULL), eh_tensor(y, 1, n, NULL)};
    char err[2048];
    tl_emu_status st = eh_run(&k, a, 2, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "%s: %s", k.key, err);
    uint32_t acc = 0;
    for (int i = 0; i < 1024 && st == TL_EMU_OK; i++) {
        uint32_t want = exclusive ? acc : acc + (uint32_t)x[i];
        acc += (uint32_t)x[i];
        if ((uint32_t)y[i] != want) {
            EH_CHECK(0, "%s: element %d is %d, want %d", k.key, i, y[i], (int32_t)want);
            break;
        }
    }
    eh_free(&k);
}

static void test_cumsum_2d(bool rows)
{
    EhKernel k;
    if (!compile("cumsum.tl", rows ? "cumsum_rows" : "cumsum_cols", NULL, &k))
        return;
    int R = rows ? 16 : 64, C = rows ? 64 : 16;
    float x[1024], y[1024];
    uint64_t seed = 9;
    for (int i = 0; i < R * C; i++)
        x[i] = (float)((int)(eh_rand(&seed) % 201) - 100);
    int64_t s[2] = {R, C};
    EhArg a[2] = {eh_tensor(x, 2, s, NULL), eh_tensor(y, 2, s, NULL)};
    char err[2048];
    tl_emu_status st = eh_run(&k, a, 2, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "%s: %s", k.key, err);
    for (int r = 0; r < R && st == TL_EMU_OK; r++)
        for (int c = 0; c < C; c++) {
            float want = 0.0f;
            if (rows)
                for (int j = 0; j <= c; j++)
                    want += x[r * C + j];
            else
                for (int i = 0; i <= r; i++)
                    want += x[i * C + c];
            EH_CHECK(y[r * C + c] == want, "%s: (%d, %d) is %g, want %g", k.key, r, c, y[r * C + c], want);
        }
    eh_free(&k);
}

static void test_pipe_sum(const char *kernel, int R, int C)
{
    EhKernel k;
    if (!compile("pipe_sum.tl", kernel, "S=3", &k))
        return;
    float *x = malloc(sizeof(float) * (size_t)R * C), *y = malloc(sizeof(float) * (size_t)R);
    uint64_t seed = 21;
    for (int i = 0; i < R * C; i++)
        x[i] = (float)((int)(eh_rand(&seed) % 64) - 32);
    int64_t xs[2] = {R, C}, ys[1] = {R};
    EhArg a[2] = {eh_tensor(x, 2, xs, NULL), eh_tensor(y, 1, ys, NULL)};
    char err[2048];
    tl_emu_status st = eh_run(&k, a, 2, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "%s R=%d C=%d: %s", k.key, R, C, err);
    for (int r = 0; r < R && st == TL_EMU_OK; r++) {
        float want = 0.0f;
        for (int c = 0; c < C; c++)
            want += x[r * C + c];
        EH_CHECK(y[r] == want, "%s row %d: %g, want %g", k.key, r, y[r], want);
    }
    free(x);
    free(y);
    eh_free(&k);
}

int main(void)
{
    test_cumsum_1d(256, false);
    test_cumsum_1d(1024, false);
    test_cumsum_1d(256, true);
    test_cumsum_2d(true);
    test_cumsum_2d(false);
    test_pipe_sum("pipe_row_sum16", 70, 100);
    test_pipe_sum("pipe_row_sum", 45, 77);
    return eh_finish("emu_tileops");
}
