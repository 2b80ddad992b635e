/* test_emu_lists.c — tensor lists on the CPU emulator, through the runtime (TILEC_RT_CPU): the
 * kernels of lists.tl against C references, bit for bit (every sum is exact or done in the
 * kernel's order); the launch checks of each tensor; and the bounds check of accesses through a
 * list's tensors, each against its own memory, with indices past the tensor, past the list's
 * length and past its max. */
#include "tilec/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            failures++;                                                                                                \
            fprintf(stderr, "%s:%d: FAILED: ", __FILE__, __LINE__);                                                    \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fprintf(stderr, "\n");                                                                                     \
        }                                                                                                              \
    } while (0)

static tilec_rt_library *lib;

static tilec_rt_kernel *kernel(const char *name)
{
    tilec_rt_kernel *k = NULL;
    tilec_status s = tilec_rt_get_kernel(lib, name, NULL, 0, &k);
    CHECK(s == TILEC_OK, "get_kernel %s: %s", name, tilec_rt_last_error());
    return s == TILEC_OK ? k : NULL;
}

static uint64_t seed = 0x5EED;
static float small_value(void) /* integers / 8 in [-8, 8): sums of a few stay exact */
{
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((int)(seed >> 40) % 128 - 64) / 8.0f;
}

static uint16_t bf16_of(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return (uint16_t)(b >> 16); /* small_value() is exact in bf16 */
}

/* weighted_sum: T = 10 rows (the last block ragged), L = 5 of at most 8 */
static void test_weighted_sum(void)
{
    tilec_rt_kernel *k = kernel("weighted_sum");
    if (!k)
        return;
    enum { T = 10, H = 64, L = 5 };
    static float x[L][T * H], out[T * H], want[T * H];
    float w[L];
    tilec_rt_tensor xs[L];
    int64_t shape[2] = {T, H}, ws[1] = {L};
    for (int l = 0; l < L; l++) {
        w[l] = small_value();
        for (int i = 0; i < T * H; i++)
            x[l][i] = small_value();
        xs[l] = tilec_rt_tensor_make(x[l], TILEC_RT_F32, 2, shape, NULL);
    }
    for (int i = 0; i < T * H; i++) {
        float acc = 0.0f;
        for (int l = 0; l < L; l++)
            acc = x[l][i] * w[l] + acc; /* exact: the kernel's fma gives the same */
        want[i] = acc;
    }
    tilec_rt_arg a[3] = {tilec_rt_arg_list(xs, L), tilec_rt_arg_tensor(w, TILEC_RT_F32, 1, ws, NULL),
                         tilec_rt_arg_tensor(out, TILEC_RT_F32, 2, shape, NULL)};
    tilec_rt_launch_config cfg;
    CHECK(tilec_rt_check(k, a, 3, NULL, &cfg) == TILEC_OK && cfg.grid[0] == 3, "grid from the fn: %u (%s)", cfg.grid[0],
          tilec_rt_last_error());
    tilec_status s = tilec_rt_launch(k, a, 3, NULL);
    CHECK(s == TILEC_OK, "weighted_sum: %s", tilec_rt_last_error());
    CHECK(s != TILEC_OK || !memcmp(out, want, sizeof out), "weighted_sum differs from the reference");
    /* the runtime's checks name the tensor */
    xs[3].shape[1] = 32;
    s = tilec_rt_launch(k, a, 3, NULL);
    CHECK(s == TILEC_ERROR_LAUNCH && !strcmp(tilec_rt_last_error(), "argument 'xs[3]': dimension 1 is 32 but 64"),
          "a wrong tensor: %s", tilec_rt_last_error());
    xs[3].shape[1] = H;
    a[0] = tilec_rt_arg_list(xs, 4);
    s = tilec_rt_launch(k, a, 3, NULL);
    CHECK(s == TILEC_ERROR_LAUNCH &&
              !strcmp(tilec_rt_last_error(), "argument 'w': dimension 0 is 5 but L = 4 (the length of 'xs')"),
          "a length that does not match: %s", tilec_rt_last_error());
}

/* pipelined_sum: bf16 elements, T = 40 (three blocks, the last ragged), L = 1 and 7 */
static void test_pipelined_sum(void)
{
    tilec_rt_kernel *k = kernel("pipelined_sum");
    if (!k)
        return;
    enum { T = 40, H = 64, L = 7 };
    static uint16_t x[L][T * H];
    static float xf[L][T * H], out[T * H], want[T * H];
    tilec_rt_tensor xs[L];
    int64_t shape[2] = {T, H};
    for (int l = 0; l < L; l++) {
        for (int i = 0; i < T * H; i++) {
            xf[l][i] = small_value();
            x[l][i] = bf16_of(xf[l][i]);
        }
        xs[l] = tilec_rt_tensor_make(x[l], TILEC_RT_BF16, 2, shape, NULL);
    }
    for (int n = 1; n <= L; n += L - 1) {
        for (int i = 0; i < T * H; i++) {
            float acc = 0.0f;
            for (int l = 0; l < n; l++)
                acc += xf[l][i];
            want[i] = acc;
        }
        memset(out, 0xff, sizeof out);
        tilec_rt_arg a[2] = {tilec_rt_arg_list(xs, n), tilec_rt_arg_tensor(out, TILEC_RT_F32, 2, shape, NULL)};
        tilec_status s = tilec_rt_launch(k, a, 2, NULL);
        CHECK(s == TILEC_OK, "pipelined_sum L = %d: %s", n, tilec_rt_last_error());
        CHECK(s != TILEC_OK || !memcmp(out, want, sizeof out), "pipelined_sum L = %d differs from the reference", n);
    }
}

/* recompute: N = 300, P = 3 with L = 3 and L = 4 */
static void test_recompute(void)
{
    tilec_rt_kernel *k = kernel("recompute");
    if (!k)
        return;
    enum { N = 300, MAXL = 4 };
    static float init[N], pre[MAXL][N], lo[MAXL][N], post[MAXL][N], in[MAXL][N], res[MAXL][N];
    static float want_in[MAXL][N], want_res[MAXL][N];
    tilec_rt_tensor tp[MAXL], tl[MAXL], tq[MAXL], ti[MAXL], tr[MAXL];
    int64_t n[1] = {N};
    for (int i = 0; i < N; i++)
        init[i] = small_value();
    for (int l = 0; l < MAXL; l++) {
        for (int i = 0; i < N; i++) {
            pre[l][i] = small_value();
            lo[l][i] = small_value();
            post[l][i] = small_value() / 8.0f;
        }
        tp[l] = tilec_rt_tensor_make(pre[l], TILEC_RT_F32, 1, n, NULL);
        tl[l] = tilec_rt_tensor_make(lo[l], TILEC_RT_F32, 1, n, NULL);
        tq[l] = tilec_rt_tensor_make(post[l], TILEC_RT_F32, 1, n, NULL);
        ti[l] = tilec_rt_tensor_make(in[l], TILEC_RT_F32, 1, n, NULL);
        tr[l] = tilec_rt_tensor_make(res[l], TILEC_RT_F32, 1, n, NULL);
    }
    const int P = 3;
    for (int L = P; L <= P + 1; L++) {
        for (int i = 0; i < N; i++) {
            float r = init[i];
            for (int l = 0; l < P; l++) {
                want_in[l][i] = r * pre[l][i];
                r = r + lo[l][i] * post[l][i];
                want_res[l][i] = r;
            }
            if (L > P)
                want_in[L - 1][i] = r * pre[L - 1][i];
        }
        memset(in, 0, sizeof in);
        memset(res, 0, sizeof res);
        tilec_rt_arg a[6] = {tilec_rt_arg_tensor(init, TILEC_RT_F32, 1, n, NULL), tilec_rt_arg_list(tp, L),
                             tilec_rt_arg_list(tl, P), tilec_rt_arg_list(tq, P), tilec_rt_arg_list(ti, L),
                             tilec_rt_arg_list(tr, P)};
        tilec_status s = tilec_rt_launch(k, a, 6, NULL);
        CHECK(s == TILEC_OK, "recompute L = %d: %s", L, tilec_rt_last_error());
        CHECK(s != TILEC_OK || (!memcmp(in, want_in, sizeof(float) * N * (size_t)L) &&
                                !memcmp(res, want_res, sizeof(float) * N * (size_t)P)),
              "recompute L = %d differs from the reference", L);
    }
    tilec_rt_arg a[6] = {tilec_rt_arg_tensor(init, TILEC_RT_F32, 1, n, NULL), tilec_rt_arg_list(tp, 4),
                         tilec_rt_arg_list(tl, 2), tilec_rt_arg_list(tq, 2), tilec_rt_arg_list(ti, 4),
                         tilec_rt_arg_list(tr, 2)};
    tilec_status s = tilec_rt_launch(k, a, 6, NULL);
    CHECK(s == TILEC_ERROR_LAUNCH &&
              !strcmp(tilec_rt_last_error(), "requirement failed: P == L || P == L - 1 (P = 2, L = 4): P is L or L - 1"),
          "the length relation: %s", tilec_rt_last_error());
    a[3] = tilec_rt_arg_list(tq, 3);
    s = tilec_rt_launch(k, a, 6, NULL);
    CHECK(s == TILEC_ERROR_LAUNCH &&
              !strcmp(tilec_rt_last_error(), "argument 'post': 3 tensors but P = 2 (the length of 'layer_output')"),
          "lengths that differ: %s", tilec_rt_last_error());
}

static void test_ends(void)
{
    tilec_rt_kernel *k = kernel("ends");
    if (!k)
        return;
    enum { N = 40 };
    static int32_t x[3][N], out[N];
    tilec_rt_tensor xs[3];
    int64_t n[1] = {N};
    for (int l = 0; l < 3; l++) {
        for (int i = 0; i < N; i++)
            x[l][i] = l * 1000 + i;
        xs[l] = tilec_rt_tensor_make(x[l], TILEC_RT_I32, 1, n, NULL);
    }
    tilec_rt_arg a[2] = {tilec_rt_arg_list(xs, 3), tilec_rt_arg_tensor(out, TILEC_RT_I32, 1, n, NULL)};
    tilec_status s = tilec_rt_launch(k, a, 2, NULL);
    CHECK(s == TILEC_OK, "ends: %s", tilec_rt_last_error());
    for (int i = 0; s == TILEC_OK && i < N; i++)
        CHECK(out[i] == x[0][i] * 100 + x[2][i], "ends[%d] = %d", i, out[i]);
    a[0] = tilec_rt_arg_list(xs, 2);
    s = tilec_rt_launch(k, a, 2, NULL);
    CHECK(s == TILEC_ERROR_LAUNCH && !strcmp(tilec_rt_last_error(), "argument 'xs': 2 tensors but 3"),
          "a constant length: %s", tilec_rt_last_error());
}

/* every access through a list's tensor is checked against that tensor */
static void test_bounds(void)
{
    tilec_rt_kernel *k = kernel("pick");
    if (!k)
        return;
    static float mem[64];
    float out[1];
    for (int i = 0; i < 64; i++)
        mem[i] = (float)i;
    int64_t n[1] = {8}, one[1] = {1};
    tilec_rt_tensor xs[3] = {tilec_rt_tensor_make(mem, TILEC_RT_F32, 1, n, NULL),
                             tilec_rt_tensor_make(mem + 8, TILEC_RT_F32, 1, n, NULL),
                             tilec_rt_tensor_make(mem + 16, TILEC_RT_F32, 1, n, NULL)};
    static const struct {
        int k, t;
        const char *want; /* NULL: reads mem[8 k + t] */
    } cases[] = {
        {0, 0, NULL},
        {2, 7, NULL},
        {1, 8, "offset 32 of 'xs[1]', 4 bytes past the end of its 32 bytes"}, /* mem[16]: xs[2]'s, not xs[1]'s */
        {1, -1, "offset -4 of 'xs[1]', 4 bytes before its start"},
        {3, 0, "through 'xs[3]', past the end of the list (3 tensors)"},
        {9, 0, "through 'xs' at an index outside the list (3 tensors)"}, /* past the max */
        {-1, 0, "through 'xs' at an index outside the list (3 tensors)"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        out[0] = -1.0f;
        tilec_rt_arg a[4] = {tilec_rt_arg_list(xs, 3), tilec_rt_arg_int(TILEC_RT_I32, cases[c].k),
                             tilec_rt_arg_int(TILEC_RT_I32, cases[c].t), tilec_rt_arg_tensor(out, TILEC_RT_F32, 1, one, NULL)};
        tilec_status s = tilec_rt_launch(k, a, 4, NULL);
        if (!cases[c].want) {
            CHECK(s == TILEC_OK && out[0] == mem[8 * cases[c].k + cases[c].t], "xs[%d][%d]: %s", cases[c].k, cases[c].t,
                  tilec_rt_last_error());
            continue;
        }
        CHECK(s == TILEC_ERROR_DRIVER && strstr(tilec_rt_last_error(), "kernel pick<>, block (0,0,0), thread 0 reads 4 "
                                                                        "bytes at 0x") &&
                  strstr(tilec_rt_last_error(), cases[c].want),
              "xs[%d][%d]: %s: %s", cases[c].k, cases[c].t, tilec_status_name(s), tilec_rt_last_error());
        CHECK(out[0] == -1.0f, "xs[%d][%d]: the access happened", cases[c].k, cases[c].t);
    }
}

int main(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/emu/lists.tl", TILEC_SOURCE_DIR);
    tilec_rt_options o = tilec_rt_default_options();
    o.flags = TILEC_RT_CPU | TILEC_RT_NO_DISK_CACHE | TILEC_RT_QUIET;
    tilec_rt *rt = NULL;
    if (tilec_rt_create(&o, &rt) != TILEC_OK) {
        fprintf(stderr, "tilec_rt_create: %s\n", tilec_rt_last_error());
        return 1;
    }
    tilec_rt_library_options lo = {0};
    lo.source = path;
    if (tilec_rt_library_open(rt, &lo, &lib) != TILEC_OK) {
        fprintf(stderr, "opening %s: %s\n", path, tilec_rt_last_error());
        return 1;
    }
    test_weighted_sum();
    test_pipelined_sum();
    test_recompute();
    test_ends();
    test_bounds();
    tilec_rt_destroy(rt);
    if (failures)
        fprintf(stderr, "test_emu_lists: %d failed\n", failures);
    else
        printf("test_emu_lists: ok\n");
    return failures != 0;
}
