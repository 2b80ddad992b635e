/* test_emu_tileops.c — tile operations beyond the shipped kernels on the emulator, with the
 * racecheck on: block-wide and 2-D cumsum (tests/codegen/tileops/cumsum.tl), pipelined
 * copy-and-sum loops (pipe_sum.tl), frag layouts with runs of rows per thread (row_run.tl), tiles
 * (local arrays included) and tensor slices passed to fns (fn_tiles.tl) and persistent launches
 * (persistent.tl), against sequential references; the inputs are integers (or integer-valued floats) so that every
 * summation order gives the same bits, except for Sinkhorn, whose reference fixes the order. */
#include "emu_harness.h"
#include "ref.h"

#include <math.h>
#include <stdint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool compile_gens(const char *file, const char *kernel, const char *const *gens, int ngens, EhKernel *k)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/codegen/tileops/%s", eh_source_dir(), file);
    if (eh_compile(path, NULL, kernel, gens, ngens, k))
        return true;
    eh_failures++;
    return false;
}

static bool compile(const char *file, const char *kernel, const char *g, EhKernel *k)
{
    const char *gen[1] = {g};
    return compile_gens(file, kernel, gen, g ? 1 : 0, k);
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

/* row_run.tl: grouped max down the rows, row sums, the broadcast difference and its transpose */
static void test_row_run(int rr, int g, int vec)
{
    char gen[3][32];
    snprintf(gen[0], 32, "RR=%d", rr);
    snprintf(gen[1], 32, "G=%d", g);
    snprintf(gen[2], 32, "VEC=%d", vec);
    const char *gv[3] = {gen[0], gen[1], gen[2]};
    EhKernel k;
    if (!compile_gens("row_run.tl", "row_run_ops", gv, 3, &k))
        return;
    enum { R = 128, C = 64 };
    static float x[R * C], gmax[R * C], rsum[R], y[R * C], yt[C * R];
    uint64_t seed = 77 + (uint64_t)rr * 131 + (uint64_t)g;
    for (int i = 0; i < R * C; i++)
        x[i] = (float)((int)(eh_rand(&seed) % 2001) - 1000);
    int64_t xs[2] = {R, C}, gs[2] = {R / g, C}, rs[1] = {R}, ts[2] = {C, R};
    EhArg a[5] = {eh_tensor(x, 2, xs, NULL), eh_tensor(gmax, 2, gs, NULL), eh_tensor(rsum, 1, rs, NULL),
                  eh_tensor(y, 2, xs, NULL), eh_tensor(yt, 2, ts, NULL)};
    char err[2048];
    tl_emu_status st = eh_run(&k, a, 5, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "%s: %s", k.key, err);
    int bad = 0;
    for (int r = 0; r < R && st == TL_EMU_OK && bad < 4; r++) {
        float sum = 0.0f;
        for (int c = 0; c < C; c++) {
            float m = x[(r / g * g) * C + c];
            for (int i = r / g * g; i < r / g * g + g; i++)
                m = x[i * C + c] > m ? x[i * C + c] : m;
            if (r % g == 0 && gmax[(r / g) * C + c] != m * 2.0f + 1.0f)
                EH_CHECK(bad++ < 0, "%s: gmax[%d, %d] is %g, want %g", k.key, r / g, c, gmax[(r / g) * C + c],
                         m * 2.0f + 1.0f);
            if (y[r * C + c] != x[r * C + c] - m || yt[c * R + r] != x[r * C + c] - m)
                EH_CHECK(bad++ < 0, "%s: y[%d, %d] is %g, yt %g, want %g", k.key, r, c, y[r * C + c], yt[c * R + r],
                         x[r * C + c] - m);
            sum += x[r * C + c];
        }
        if (rsum[r] != sum)
            EH_CHECK(bad++ < 0, "%s: rsum[%d] is %g, want %g", k.key, r, rsum[r], sum);
    }
    eh_free(&k);
}

/* fn_tiles.tl: sinkhorn_normalize against the reference; comb_sinkhorn against
 * sinkhorn_normalize run on the comb mixes it derives (one Sinkhorn routine, the same bits) */
static void test_fn_sinkhorn(int N, int repeat)
{
    enum { H = 4, M3 = 2 * H + H * H };
    char g[32];
    snprintf(g, sizeof g, "REPEAT=%d", repeat);
    EhKernel kn, kc;
    if (!compile("fn_tiles.tl", "sinkhorn_normalize", g, &kn))
        return;
    if (!compile("fn_tiles.tl", "comb_sinkhorn", g, &kc)) {
        eh_free(&kn);
        return;
    }
    size_t n = (size_t)N * H * H;
    float *mixes = malloc(sizeof(float) * (size_t)N * M3), *x = malloc(n * 4), *want = malloc(n * 4);
    float *out = malloc(n * 4), *comb = malloc(n * 4);
    float scale[3], base[M3];
    uint64_t seed = (uint64_t)N * 31 + (uint64_t)repeat;
    for (size_t i = 0; i < (size_t)N * M3; i++)
        mixes[i] = eh_randn(&seed);
    for (int i = 0; i < 3; i++)
        scale[i] = 0.1f * eh_randn(&seed);
    for (int i = 0; i < M3; i++)
        base[i] = 0.1f * eh_randn(&seed);
    for (int t = 0; t < N; t++)
        for (int e = 0; e < H * H; e++)
            x[(size_t)t * H * H + e] = fmaf(mixes[(size_t)t * M3 + 2 * H + e], scale[2], base[2 * H + e]);
    const float eps = 1e-6f;
    ref_sinkhorn(x, want, N, H, repeat, eps);
    int64_t s3[3] = {N, H, H}, sm[2] = {N, M3}, s1[1] = {3}, sb[1] = {M3};
    char err[2048];
    EhArg an[3] = {eh_tensor(x, 3, s3, NULL), eh_tensor(out, 3, s3, NULL), eh_f32(eps)};
    tl_emu_status st = eh_run(&kn, an, 3, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "%s N=%d: %s", kn.key, N, err);
    if (st == TL_EMU_OK)
        EH_CHECK(eh_compare_bytes(kn.key, out, want, n * 4, 4) == 0, "%s N=%d: differs from the reference", kn.key, N);
    EhArg ac[5] = {eh_tensor(mixes, 2, sm, NULL), eh_tensor(scale, 1, s1, NULL), eh_tensor(base, 1, sb, NULL),
                   eh_tensor(comb, 3, s3, NULL), eh_f32(eps)};
    st = eh_run(&kc, ac, 5, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "%s N=%d: %s", kc.key, N, err);
    if (st == TL_EMU_OK)
        EH_CHECK(eh_compare_bytes(kc.key, comb, out, n * 4, 4) == 0, "%s N=%d: differs from sinkhorn_normalize", kc.key, N);
    free(mixes);
    free(x);
    free(want);
    free(out);
    free(comb);
    eh_free(&kn);
    eh_free(&kc);
}

/* fn_tiles.tl: row_halves (a shared-tile fn on two slices of one tile), rows_in_slice (a tensor
 * slice with run-time bounds, its extent bound to a shape name) */
static void test_fn_slices(void)
{
    EhKernel k;
    if (compile("fn_tiles.tl", "row_halves", NULL, &k)) {
        enum { M = 37, C = 128 };
        static float x[M * C], y[M * C];
        uint64_t seed = 5;
        for (int i = 0; i < M * C; i++)
            x[i] = (float)(1 + (int)(eh_rand(&seed) % 9));
        int64_t s[2] = {M, C};
        EhArg a[3] = {eh_tensor(x, 2, s, NULL), eh_tensor(y, 2, s, NULL), eh_f32(0.5f)};
        char err[2048];
        tl_emu_status st = eh_run(&k, a, 3, NULL, err, sizeof err);
        EH_CHECK(st == TL_EMU_OK, "%s: %s", k.key, err);
        int bad = 0;
        for (int r = 0; r < M && st == TL_EMU_OK; r++)
            for (int h = 0; h < 2; h++) {
                float sum = 0.0f;
                for (int c = 0; c < C / 2; c++)
                    sum += x[r * C + h * C / 2 + c];
                for (int c = h * C / 2; c < (h + 1) * C / 2; c++)
                    if (y[r * C + c] != x[r * C + c] / (sum + 0.5f))
                        EH_CHECK(bad++ < 0, "%s: y[%d, %d] is %g, want %g", k.key, r, c, y[r * C + c],
                                 x[r * C + c] / (sum + 0.5f));
            }
        eh_free(&k);
    }
    if (compile("fn_tiles.tl", "rows_in_slice", NULL, &k)) {
        enum { M = 50, B = 9 };
        static float x[M * 8], y[B];
        int32_t lo[B], hi[B];
        uint64_t seed = 8;
        for (int i = 0; i < M * 8; i++)
            x[i] = (float)((int)(eh_rand(&seed) % 41) - 20);
        for (int b = 0; b < B; b++) {
            lo[b] = (int32_t)(eh_rand(&seed) % M);
            hi[b] = lo[b] + (int32_t)(eh_rand(&seed) % (uint64_t)(M - lo[b] + 1));
        }
        int64_t sx[2] = {M, 8}, sb[1] = {B};
        EhArg a[4] = {eh_tensor(x, 2, sx, NULL), eh_tensor(lo, 1, sb, NULL), eh_tensor(hi, 1, sb, NULL),
                      eh_tensor(y, 1, sb, NULL)};
        char err[2048];
        tl_emu_status st = eh_run(&k, a, 4, NULL, err, sizeof err);
        EH_CHECK(st == TL_EMU_OK, "%s: %s", k.key, err);
        for (int b = 0; b < B && st == TL_EMU_OK; b++) {
            float want = 0.0f;
            for (int r = lo[b]; r < hi[b]; r++)
                want += x[r * 8];
            EH_CHECK(y[b] == want, "%s: y[%d] (rows %d .. %d) is %g, want %g", k.key, b, lo[b], hi[b], y[b], want);
        }
        eh_free(&k);
    }
}

/* fn_tiles.tl: from_table, views of host matrices (the emulator's addresses) passed to a fn */
static void test_fn_views(void)
{
    EhKernel k;
    if (!compile("fn_tiles.tl", "from_table", NULL, &k))
        return;
    enum { L = 3, E = 16 * 64 };
    static float m[L][E], y[L * E];
    uint64_t table[L];
    for (int l = 0; l < L; l++) {
        for (int i = 0; i < E; i++)
            m[l][i] = (float)(l * 1000 + i);
        table[L - 1 - l] = (uint64_t)(uintptr_t)m[l]; /* in reverse: y[l] is m[L - 1 - l] */
    }
    int64_t st[1] = {L}, sy[3] = {L, 16, 64};
    EhArg a[2] = {eh_tensor(table, 1, st, NULL), eh_tensor(y, 3, sy, NULL)};
    char err[2048];
    tl_emu_status s = eh_run(&k, a, 2, NULL, err, sizeof err);
    EH_CHECK(s == TL_EMU_OK, "%s: %s", k.key, err);
    for (int l = 0; l < L && s == TL_EMU_OK; l++)
        for (int i = 0; i < E; i++)
            if (y[l * E + i] != 2.0f * m[L - 1 - l][i]) {
                EH_CHECK(0, "%s: y[%d] element %d is %g, want %g", k.key, l, i, y[l * E + i], 2.0f * m[L - 1 - l][i]);
                break;
            }
    eh_free(&k);
}

/* fn_tiles.tl: local_scan, a thread's local array updated in place by fns, whole (prefix sums)
 * and through a slice (its second half scaled): each result is wrong unless the fns write the
 * caller's array */
static void test_fn_locals(void)
{
    EhKernel k;
    if (!compile("fn_tiles.tl", "local_scan", NULL, &k))
        return;
    enum { M = 200 }; /* two blocks, the second partly idle */
    static float x[M * 8], y[M * 8];
    uint64_t seed = 13;
    for (int i = 0; i < M * 8; i++) {
        x[i] = (float)((int)(eh_rand(&seed) % 61) - 30);
        y[i] = NAN;
    }
    const float s = -0.5f;
    int64_t sx[2] = {M, 8};
    EhArg a[3] = {eh_tensor(x, 2, sx, NULL), eh_tensor(y, 2, sx, NULL), eh_f32(s)};
    char err[2048];
    tl_emu_status st = eh_run(&k, a, 3, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "%s: %s", k.key, err);
    int bad = 0;
    for (int r = 0; r < M && st == TL_EMU_OK && bad < 4; r++) {
        float acc = 0.0f;
        for (int c = 0; c < 8; c++) {
            acc = c == 0 ? x[r * 8] : acc + x[r * 8 + c];
            float want = c < 4 ? acc : acc * s;
            if (y[r * 8 + c] != want)
                EH_CHECK(bad++ < 0, "%s: y[%d, %d] is %g, want %g", k.key, r, c, y[r * 8 + c], want);
        }
    }
    eh_free(&k);
}

/* persistent.tl, for stages 0 (a block per tile) to 3 */
static void test_persistent(int stages)
{
    char g[32];
    snprintf(g, sizeof g, "S=%d", stages);
    char err[2048];
    EhKernel k;
    if (compile("persistent.tl", "tile_scale", g, &k)) {
        enum { M = 70, N = 150 };
        static float x[M * N], y[M * N];
        uint64_t seed = 11 + (uint64_t)stages;
        for (int i = 0; i < M * N; i++)
            x[i] = (float)((int)(eh_rand(&seed) % 201) - 100);
        int64_t s[2] = {M, N};
        EhArg a[3] = {eh_tensor(x, 2, s, NULL), eh_tensor(y, 2, s, NULL), eh_f32(1.5f)};
        tl_emu_status st = eh_run(&k, a, 3, NULL, err, sizeof err);
        EH_CHECK(st == TL_EMU_OK, "%s: %s", k.key, err);
        for (int i = 0; i < M * N && st == TL_EMU_OK; i++)
            if (y[i] != x[i] * 1.5f) {
                EH_CHECK(0, "%s: element %d is %g, want %g", k.key, i, y[i], x[i] * 1.5f);
                break;
            }
        eh_free(&k);
    }
    if (compile("persistent.tl", "tile_transpose3", g, &k)) {
        enum { B = 3, M = 40, N = 70 };
        static float x[B * M * N], y[B * N * M];
        for (int i = 0; i < B * M * N; i++)
            x[i] = (float)i;
        memset(y, 0, sizeof y);
        int64_t sx[3] = {B, M, N}, sy[3] = {B, N, M};
        EhArg a[2] = {eh_tensor(x, 3, sx, NULL), eh_tensor(y, 3, sy, NULL)};
        tl_emu_status st = eh_run(&k, a, 2, NULL, err, sizeof err);
        EH_CHECK(st == TL_EMU_OK, "%s: %s", k.key, err);
        int bad = 0;
        for (int b = 0; b < B && st == TL_EMU_OK; b++)
            for (int j = 0; j < N; j++)
                for (int i = 0; i < M; i++)
                    if (y[(b * N + j) * M + i] != x[(b * M + i) * N + j])
                        EH_CHECK(bad++ < 0, "%s: y[%d, %d, %d] is %g, want %g", k.key, b, j, i, y[(b * N + j) * M + i],
                                 x[(b * M + i) * N + j]);
        eh_free(&k);
    }
    if (compile("persistent.tl", "tile_skip", g, &k)) {
        enum { T = 23 };
        static float x[T * 256], out[T];
        int32_t flags[T];
        const int limit = 17;
        uint64_t seed = 13 + (uint64_t)stages;
        for (int i = 0; i < T * 256; i++)
            x[i] = (float)((int)(eh_rand(&seed) % 11) - 5);
        for (int t = 0; t < T; t++) {
            flags[t] = (int32_t)(eh_rand(&seed) % 3 != 0);
            out[t] = -1e9f;
        }
        int64_t sx[2] = {T, 256}, st1[1] = {T};
        EhArg a[4] = {eh_tensor(x, 2, sx, NULL), eh_tensor(flags, 1, st1, NULL), eh_tensor(out, 1, st1, NULL),
                      eh_i32(limit)};
        tl_emu_status st = eh_run(&k, a, 4, NULL, err, sizeof err);
        EH_CHECK(st == TL_EMU_OK, "%s: %s", k.key, err);
        for (int t = 0; t < T && st == TL_EMU_OK; t++) {
            float want = -1e9f;
            if (t <= limit && flags[t]) {
                want = 0.0f;
                for (int i = 0; i < 256; i++)
                    want += x[t * 256 + i];
            }
            EH_CHECK(out[t] == want, "%s: out[%d] is %g, want %g", k.key, t, out[t], want);
        }
        eh_free(&k);
    }
}

int main(void)
{
    /* runs shorter than, equal to and longer than the group; 32-row runs leave threads over
     * (a replicated source layout); VEC=1 puts 64 threads along a row */
    static const int rr_g_vec[][3] = {{1, 32, 4}, {2, 32, 4}, {8, 32, 4}, {8, 8, 4}, {16, 8, 4},
                                      {8, 128, 4}, {32, 32, 4}, {4, 16, 1}, {8, 32, 1}};
    for (size_t i = 0; i < sizeof rr_g_vec / sizeof rr_g_vec[0]; i++)
        test_row_run(rr_g_vec[i][0], rr_g_vec[i][1], rr_g_vec[i][2]);
    test_cumsum_1d(256, false);
    test_cumsum_1d(1024, false);
    test_cumsum_1d(256, true);
    test_cumsum_2d(true);
    test_cumsum_2d(false);
    test_pipe_sum("pipe_row_sum16", 70, 100);
    test_pipe_sum("pipe_row_sum", 45, 77);
    test_fn_sinkhorn(70, 10);
    test_fn_sinkhorn(33, 1);
    test_fn_slices();
    test_fn_views();
    test_fn_locals();
    for (int stages = 0; stages <= 3; stages++)
        test_persistent(stages);
    return eh_finish("emu_tileops");
}
