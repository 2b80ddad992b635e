/* bench_launch.c — the cost of the launch path with the fake driver: a validated launch of a
 * batched-transpose-like kernel (two rank-3 tensors, five names, three requirements), an
 * in-memory tilec_rt_get_kernel hit, and the bare fake driver call for comparison.
 * Usage: bench_launch [iterations] (default 1000000). As a test it runs fewer and checks that
 * every launch reached the driver. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_test.h"

static const char *const program =
    "@kernel transpose\n"
    "@default T bf16\n"
    "@sig\n"
    "tilec-sig 1\nkernel transpose\nentry transpose_$T\nkey transpose<T=$T>\narch $ARCH\nthreads 256\nsmem 0\nflags\n"
    "nparams 2\n"
    "tensor 0 x $T 3 16\ndim 0 0 (bind B)\ndim 0 1 (bind M)\ndim 0 2 (bind N)\n"
    "stride 0 0 (* M sx)\nstride 0 1 (bind sx)\nstride 0 2 1\n"
    "tensor 1 out $T 3 16 written\ndim 1 0 B\ndim 1 1 N\ndim 1 2 M\n"
    "grid (cdiv N (select (== (% N 128) 0) 128 64)) (cdiv M (select (== (% M 128) 0) 128 64)) B\n"
    "require (== (% M 64) 0) \"M must be a multiple of 64\"\n"
    "require (== (% N 64) 0) \"N must be a multiple of 64\"\n"
    "require (== (% sx 4) 0) \"the row stride of x must be a multiple of 4\"\n"
    "end\n";

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void bench(void)
{
    const char *arg = getenv("BENCH_ITERATIONS");
    long iters = arg ? atol(arg) : 1000000;
    tilec_rt *rt = test_rt(TILEC_RT_NO_DISK_CACHE, NULL);
    tilec_rt_library *lib = test_lib(rt, "bench.fake", program);
    tilec_rt_kernel *k = test_kernel(lib, "transpose", "T=bf16", NULL);
    int64_t xs[3] = {8, 4096, 7168}, xst[3] = {4096 * 7168, 7168, 1}, os[3] = {8, 7168, 4096};
    tilec_rt_arg a[2] = {tilec_rt_arg_tensor((void *)0x7f0000000000, TILEC_RT_BF16, 3, xs, xst),
                         tilec_rt_arg_tensor((void *)0x7f4000000000, TILEC_RT_BF16, 3, os, NULL)};
    tilec_rt_launch_options lo = {NULL, 0};
    fake_set("TILEC_FAKE_LOG", NULL); /* logging would dominate */
    long fails = 0;
    for (long i = 0; i < iters / 10; i++) /* warm up */
        fails += tilec_rt_launch(k, a, 2, &lo) != TILEC_OK;
    double t0 = now_ns();
    for (long i = 0; i < iters; i++)
        fails += tilec_rt_launch(k, a, 2, &lo) != TILEC_OK;
    double t1 = now_ns();
    const char *g[1] = {"T=bf16"};
    tilec_rt_kernel *again;
    for (long i = 0; i < iters; i++)
        fails += tilec_rt_get_kernel(lib, "transpose", g, 1, &again) != TILEC_OK || again != k;
    double t2 = now_ns();
    /* the fake driver alone, with parameters packed once */
    const rt_driver *d;
    CHECK_OK(rt_driver_get(&d));
    _Alignas(16) unsigned char buf[RT_MAX_PARAM_BYTES];
    void *ptrs[RT_MAX_PTX_PARAMS];
    tilec_rt_launch_config cfg;
    CHECK_OK(rt_bind(k->sig, a, 2, 132, &cfg, buf, ptrs));
    double t3 = now_ns();
    for (long i = 0; i < iters; i++)
        fails += d->cuLaunchKernel(k->fn, cfg.grid[0], cfg.grid[1], cfg.grid[2], cfg.block[0], 1, 1, 0, NULL, ptrs,
                                   NULL) != CUDA_SUCCESS;
    double t4 = now_ns();
    CHECK(fails == 0);
    CHECK(cfg.grid[0] == 56 && cfg.grid[1] == 32 && cfg.grid[2] == 8);
    CHECK(fake_calls("cuLaunchKernel") == iters / 10 + 2 * iters);
    printf("validated launch: %.0f ns (of which the fake driver call: %.0f ns); get_kernel memory hit: %.0f ns "
           "(%ld iterations)\n",
           (t1 - t0) / (double)iters, (t4 - t3) / (double)iters, (t2 - t1) / (double)iters, iters);
    tilec_rt_destroy(rt);

    /* a disk-cache hit: a fresh library each time, so memory cannot answer */
    char *dir = test_path("bench-cache");
    rt = test_rt(0, dir);
    tilec_rt_library *warm = test_lib(rt, "bench.fake", program);
    test_kernel(warm, "transpose", "T=bf16", NULL);
    tilec_rt_library_close(warm);
    char *path = test_path("bench.fake");
    tilec_rt_library_options lo2;
    memset(&lo2, 0, sizeof lo2);
    lo2.source = path;
    enum { DISK_REPS = 200 };
    double disk_ns = 0;
    for (int i = 0; i < DISK_REPS; i++) {
        tilec_rt_library *l = NULL;
        CHECK_OK(tilec_rt_library_open(rt, &lo2, &l));
        double d0 = now_ns();
        CHECK_OK(tilec_rt_get_kernel(l, "transpose", g, 1, &again));
        disk_ns += now_ns() - d0;
        tilec_rt_library_close(l);
    }
    tilec_rt_stats st;
    CHECK_OK(tilec_rt_get_stats(rt, &st));
    CHECK(st.compiles == 1 && st.disk_hits == DISK_REPS);
    printf("disk-cache hit (read, checksum, parse, load): %.1f us\n", disk_ns / DISK_REPS / 1000);
    tilec_rt_destroy(rt);
    free(path);
    free(dir);
}

int main(int argc, char **argv)
{
    static const rt_test_case cases[] = {RT_TEST(bench)};
    return rt_test_main(argc, argv, cases, 1);
}
