/* test_emu_runtime.c — the runtime's CPU device: TILEC_RT_CPU and TILEC_DEVICE=cpu run the
 * shipped kernels through the ordinary runtime API (JIT, argument checks, grid) on the emulator
 * with host pointers; compiled host objects go through the disk cache; the emulator's findings
 * (a deadlock, global accesses out of bounds) come back as TILEC_ERROR_DRIVER with its message.
 * No CUDA driver is needed. */
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

/* writes a kernel source to a new file named after the template path (XXXXXX.tl) */
static bool write_source(char *path, const char *src)
{
    int fd = mkstemps(path, 3);
    size_t n = strlen(src);
    bool ok = fd >= 0 && write(fd, src, n) == (ssize_t)n;
    if (fd >= 0)
        close(fd);
    CHECK(ok, "cannot write %s", path);
    return ok;
}

static void test_errors(void)
{
    char path[] = "/tmp/tilec-emu-rt-XXXXXX.tl";
    static const char src[] = "kernel stuck(x: f32[N]) grid(1) threads(64)\n"
                              "{\n"
                              "    var v = x[thread.x];\n"
                              "    if lane < 8 {\n"
                              "        v = shfl_xor(v, 1);\n"
                              "    }\n"
                              "    sync_threads();\n"
                              "    x[thread.x] = v;\n"
                              "}\n";
    if (!write_source(path, src))
        return;
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

/* global accesses out of bounds, through the runtime: the ranges come from the tensor arguments,
 * one per tensor parameter (an absent optional one too, so that later ones keep their index) */
static void test_bounds(void)
{
    char path[] = "/tmp/tilec-emu-bounds-XXXXXX.tl";
    static const char src[] = "kernel shifted(x: f32[N], bias: f32[N]?, s: i32, out: f32[N]) grid(1) threads(32)\n"
                              "{\n"
                              "    var v = x[thread.x];\n"
                              "    if const present(bias) {\n"
                              "        v = v + bias[thread.x];\n"
                              "    }\n"
                              "    out[i32(thread.x) + s] = v;\n"
                              "}\n";
    if (!write_source(path, src))
        return;
    tilec_rt_options o = tilec_rt_default_options();
    o.flags = TILEC_RT_CPU | TILEC_RT_NO_DISK_CACHE;
    tilec_rt *rt = NULL;
    if (tilec_rt_create(&o, &rt) != TILEC_OK) {
        CHECK(0, "create: %s", tilec_rt_last_error());
        unlink(path);
        return;
    }
    tilec_rt_library *lib = open_lib(rt, path);
    const char *absent[1] = {"bias=absent"}, *present[1] = {"bias=present"};
    tilec_rt_kernel *ka = NULL, *kp = NULL;
    if (lib && (tilec_rt_get_kernel(lib, "shifted", absent, 1, &ka) != TILEC_OK ||
                tilec_rt_get_kernel(lib, "shifted", present, 1, &kp) != TILEC_OK))
        CHECK(0, "get_kernel shifted: %s", tilec_rt_last_error());
    if (ka && kp) {
        static float mem[4 * 32];
        float *x = mem, *bias = mem + 32, *out = mem + 64; /* out[32] is mem[96]: mapped memory */
        for (int i = 0; i < 64; i++)
            mem[i] = (float)i;
        int64_t n[1] = {32};
        tilec_rt_arg a[4] = {tilec_rt_arg_tensor(x, TILEC_RT_F32, 1, n, NULL), tilec_rt_arg_absent(),
                             tilec_rt_arg_int(TILEC_RT_I32, 0), tilec_rt_arg_tensor(out, TILEC_RT_F32, 1, n, NULL)};
        tilec_status s = tilec_rt_launch(ka, a, 4, NULL);
        CHECK(s == TILEC_OK && out[31] == 31.0f, "within bounds, bias absent: %s", tilec_rt_last_error());
        a[2] = tilec_rt_arg_int(TILEC_RT_I32, 1);
        s = tilec_rt_launch(ka, a, 4, NULL);
        CHECK(s == TILEC_ERROR_DRIVER, "one past the end: %s", tilec_status_name(s));
        const char *m = tilec_rt_last_error();
        CHECK(strstr(m, "kernel shifted<bias=absent>, block (0,0,0), thread 31 writes 4 bytes at 0x") &&
                  strstr(m, "offset 128 of 'out', 4 bytes past the end of its 128 bytes"),
              "message: %s", m);
        CHECK(mem[96] == 0.0f, "one past the end: the store happened");
        a[1] = tilec_rt_arg_tensor(bias, TILEC_RT_F32, 1, n, NULL);
        a[2] = tilec_rt_arg_int(TILEC_RT_I32, -1);
        s = tilec_rt_launch(kp, a, 4, NULL);
        CHECK(s == TILEC_ERROR_DRIVER, "before the start: %s", tilec_status_name(s));
        CHECK(strstr(tilec_rt_last_error(), "kernel shifted<bias=present>, block (0,0,0), thread 0 writes 4 bytes") &&
                  strstr(tilec_rt_last_error(), "offset -4 of 'out', 4 bytes before its start"),
              "message: %s", tilec_rt_last_error());
        a[2] = tilec_rt_arg_int(TILEC_RT_I32, 0);
        s = tilec_rt_launch(kp, a, 4, NULL);
        CHECK(s == TILEC_OK && out[31] == 31.0f + 63.0f, "within bounds, bias present: %s", tilec_rt_last_error());
        /* a zero-size tensor spans no memory: any access is out of bounds */
        n[0] = 0;
        a[0] = tilec_rt_arg_tensor(x, TILEC_RT_F32, 1, n, NULL);
        a[1] = tilec_rt_arg_tensor(bias, TILEC_RT_F32, 1, n, NULL);
        a[3] = tilec_rt_arg_tensor(out, TILEC_RT_F32, 1, n, NULL);
        s = tilec_rt_launch(kp, a, 4, NULL);
        CHECK(s == TILEC_ERROR_DRIVER && strstr(tilec_rt_last_error(), "thread 0 reads 4 bytes at 0x") &&
                  strstr(tilec_rt_last_error(), "offset 0 of 'x', 4 bytes past the end of its 0 bytes"),
              "an empty tensor: %s: %s", tilec_status_name(s), tilec_rt_last_error());
    }
    tilec_rt_destroy(rt);
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
    test_bounds();
    if (failures) {
        fprintf(stderr, "emu_runtime: %d check(s) failed\n", failures);
        return 1;
    }
    printf("emu_runtime: ok\n");
    return 0;
}
