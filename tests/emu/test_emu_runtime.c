/* test_emu_runtime.c — the runtime's CPU device: TILEC_RT_CPU and TILEC_DEVICE=cpu run the
 * shipped kernels through the ordinary runtime API (JIT, argument checks, grid) on the emulator
 * with host pointers; compiled host objects go through the disk cache; the emulator's findings
 * come back as TILEC_ERROR_DRIVER with its message. No CUDA driver is needed. */
#include "ref.h"
#include "tilec/runtime.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static tilec_rt_library *open_lib(tilec_rt *rt, const char *path)
{
    tilec_rt_library_options lo = {0};
    lo.source = path;
    tilec_rt_library *lib = NULL;
    tilec_status s = tilec_rt_library_open(rt, &lo, &lib);
    CHECK(s == TILEC_OK, "opening %s: %s", path, tilec_rt_last_error());
    return lib;
}

/* topk_gate<E=36,K=6> on random scores, against the stable sort */
static void run_topk(tilec_rt_library *lib, const char *what)
{
    const char *gen[2] = {"E=36", "K=6"};
    tilec_rt_kernel *k = NULL;
    tilec_status s = tilec_rt_get_kernel(lib, "topk_gate", gen, 2, &k);
    CHECK(s == TILEC_OK, "%s: get_kernel: %s", what, tilec_rt_last_error());
    if (s != TILEC_OK)
        return;
    enum { T = 50, E = 36, K = 6 };
    static float sc[T * E];
    static int64_t idx[T * K], want[T * K];
    for (int i = 0; i < T * E; i++)
        sc[i] = (float)((i * 7919) % 61) - 30.0f; /* ties included */
    ref_topk(sc, T, E, K, want);
    int64_t ss[2] = {T, E}, is[2] = {T, K};
    tilec_rt_arg args[2] = {tilec_rt_arg_tensor(sc, TILEC_RT_F32, 2, ss, NULL),
                            tilec_rt_arg_tensor(idx, TILEC_RT_I64, 2, is, NULL)};
    s = tilec_rt_launch(k, args, 2, NULL);
    CHECK(s == TILEC_OK, "%s: launch: %s", what, tilec_rt_last_error());
    CHECK(s != TILEC_OK || !memcmp(idx, want, sizeof idx), "%s: top-k indices differ from the reference", what);
    /* the runtime's checks run as for a GPU */
    args[0].u.tensor.dtype = TILEC_RT_BF16;
    s = tilec_rt_launch(k, args, 2, NULL);
    CHECK(s == TILEC_ERROR_LAUNCH && strstr(tilec_rt_last_error(), "scores"), "%s: a bf16 argument: %s", what,
          tilec_rt_last_error());
}

static void test_cpu_flag(const char *kernels)
{
    tilec_rt_options o = tilec_rt_default_options();
    o.flags = TILEC_RT_CPU | TILEC_RT_NO_DISK_CACHE | TILEC_RT_QUIET;
    tilec_rt *rt = NULL;
    tilec_status s = tilec_rt_create(&o, &rt);
    CHECK(s == TILEC_OK, "create with TILEC_RT_CPU: %s", tilec_rt_last_error());
    if (s != TILEC_OK)
        return;
    tilec_rt_library *lib = open_lib(rt, kernels);
    if (lib)
        run_topk(lib, "TILEC_RT_CPU");
    tilec_rt_destroy(rt);
}

static void test_disk_cache(const char *kernels)
{
    char dir[] = "/tmp/tilec-emu-cache-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    for (int round = 0; round < 2; round++) {
        tilec_rt_options o = tilec_rt_default_options();
        o.flags = TILEC_RT_CPU | TILEC_RT_QUIET;
        o.cache_dir = dir;
        tilec_rt *rt = NULL;
        if (tilec_rt_create(&o, &rt) != TILEC_OK) {
            CHECK(0, "create: %s", tilec_rt_last_error());
            break;
        }
        tilec_rt_library *lib = open_lib(rt, kernels);
        if (lib)
            run_topk(lib, round ? "from the disk cache" : "compiled");
        tilec_rt_stats st;
        tilec_rt_get_stats(rt, &st);
        CHECK(round ? st.disk_hits == 1 && st.compiles == 0 : st.compiles == 1, "round %d: %llu compiles, %llu disk hits",
              round, (unsigned long long)st.compiles, (unsigned long long)st.disk_hits);
        tilec_rt_destroy(rt);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

static void test_env(const char *kernels)
{
    setenv("TILEC_DEVICE", "cpu", 1);
    tilec_rt *rt = NULL;
    tilec_rt_options o = tilec_rt_default_options();
    o.flags = TILEC_RT_NO_DISK_CACHE;
    tilec_status s = tilec_rt_create(&o, &rt);
    CHECK(s == TILEC_OK, "TILEC_DEVICE=cpu: %s", tilec_rt_last_error());
    if (s == TILEC_OK) {
        tilec_rt_library *lib = open_lib(rt, kernels);
        if (lib)
            run_topk(lib, "TILEC_DEVICE=cpu");
        tilec_rt_destroy(rt);
    }
    setenv("TILEC_DEVICE", "tpu", 1);
    s = tilec_rt_create(&o, &rt);
    CHECK(s == TILEC_ERROR_INVALID_ARGUMENT && strstr(tilec_rt_last_error(), "TILEC_DEVICE is 'tpu'"),
          "TILEC_DEVICE=tpu: %s", tilec_rt_last_error());
    unsetenv("TILEC_DEVICE");
}

static void test_errors(void)
{
    char path[] = "/tmp/tilec-emu-rt-XXXXXX.tl";
    int fd = mkstemps(path, 3);
    static const char src[] = "kernel stuck(x: f32[N]) grid(1) threads(64)\n"
                              "{\n"
                              "    var v = x[thread.x];\n"
                              "    if lane < 8 {\n"
                              "        v = shfl_xor(v, 1);\n"
                              "    }\n"
                              "    sync_threads();\n"
                              "    x[thread.x] = v;\n"
                              "}\n";
    if (fd < 0 || write(fd, src, sizeof src - 1) != (ssize_t)(sizeof src - 1)) {
        CHECK(0, "cannot write %s", path);
        return;
    }
    close(fd);
    tilec_rt_options o = tilec_rt_default_options();
    o.flags = TILEC_RT_CPU | TILEC_RT_NO_DISK_CACHE;
    tilec_rt *rt = NULL;
    if (tilec_rt_create(&o, &rt) == TILEC_OK) {
        tilec_rt_library *lib = open_lib(rt, path);
        tilec_rt_kernel *k = NULL;
        if (lib && tilec_rt_get_kernel(lib, "stuck", NULL, 0, &k) == TILEC_OK) {
            float x[64] = {0};
            int64_t n[1] = {64};
            tilec_rt_arg a = tilec_rt_arg_tensor(x, TILEC_RT_F32, 1, n, NULL);
            tilec_status s = tilec_rt_launch(k, &a, 1, NULL);
            CHECK(s == TILEC_ERROR_DRIVER, "a deadlocking kernel: %s", tilec_status_name(s));
            CHECK(strstr(tilec_rt_last_error(), "deadlock in kernel stuck<>, block (0,0,0)") != NULL, "message: %s",
                  tilec_rt_last_error());
        } else {
            CHECK(0, "get_kernel stuck: %s", tilec_rt_last_error());
        }
        tilec_rt_destroy(rt);
    }
    unlink(path);
}

int main(void)
{
    char kernels[512];
    snprintf(kernels, sizeof kernels, "%s/kernels.tl", TILEC_SOURCE_DIR);
    unsetenv("TILEC_DEVICE");
    test_cpu_flag(kernels);
    test_disk_cache(kernels);
    test_env(kernels);
    test_errors();
    if (failures) {
        fprintf(stderr, "emu_runtime: %d check(s) failed\n", failures);
        return 1;
    }
    printf("emu_runtime: ok\n");
    return 0;
}
