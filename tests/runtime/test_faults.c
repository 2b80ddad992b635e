/* test_faults.c — driver failures injected by the fake driver (TILEC_FAKE_FAIL / _MISSING): each must
 * come back as a clean tilec error naming the call, leave no driver object behind (the fake counts
 * modules, link states and primary-context references) and no heap memory (LSan in the
 * sanitizer build), and must not poison later calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_test.h"

static const char *const program =
    "@kernel small\n"
    "@sig\n"
    "tilec-sig 1\nkernel small\nentry small_e\nkey small<>\narch $ARCH\nthreads 64\nflags\nnparams 1\n"
    "tensor 0 x f32 1 4 written\ndim 0 0 (bind N)\ngrid (cdiv N 64)\nend\n"
    "@kernel big\n"
    "@sig\n"
    "tilec-sig 1\nkernel big\nentry big_e\nkey big<>\narch $ARCH\nthreads 128\nsmem 65536\nflags pdl\nnparams 0\n"
    "grid 4\nend\n"
    "@kernel bad_ptx\n"
    "@sig\n"
    "tilec-sig 1\nkernel bad_ptx\nentry bad_e\narch $ARCH\nthreads 1\nflags\nnparams 0\ngrid 1\nend\n"
    "@ptx\n"
    ".version 8.7\nFAKE_INVALID_PTX\n";

static tilec_rt_library *open_lib(tilec_rt *rt)
{
    return test_lib(rt, "faults.fake", program);
}

static tilec_status get(tilec_rt_library *lib, const char *name, tilec_rt_kernel **k)
{
    return tilec_rt_get_kernel(lib, name, NULL, 0, k);
}

static void test_no_driver(void)
{
    char *fake = strdup(getenv("TILEC_LIBCUDA"));
    setenv("TILEC_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    tilec_rt *rt = NULL;
    CHECK(tilec_rt_create(NULL, &rt) == TILEC_ERROR_DRIVER && rt == NULL);
    CHECK_CONTAINS(tilec_rt_last_error(), "cannot load the CUDA driver '/nonexistent/libcuda.so.1': ");
    setenv("TILEC_LIBCUDA", fake, 1);
    CHECK_OK(tilec_rt_create(NULL, &rt)); /* a failed load is retried */
    tilec_rt_destroy(rt);
    CHECK(fake_live() == 0);
    free(fake);
}

static void test_missing_symbol(void)
{
    fake_set("TILEC_FAKE_MISSING", "cuLaunchKernelEx");
    tilec_rt *rt = NULL;
    char want[1024];
    snprintf(want, sizeof want, "the CUDA driver '%s' does not provide cuLaunchKernelEx (CUDA 11.6 version)",
             getenv("TILEC_LIBCUDA"));
    CHECK_ERR(tilec_rt_create(NULL, &rt), TILEC_ERROR_DRIVER, want);
    fake_set("TILEC_FAKE_MISSING", NULL);
    CHECK_OK(tilec_rt_create(NULL, &rt));
    tilec_rt_destroy(rt);
    CHECK(fake_live() == 0);
    /* the fake refuses versions whose signature it does not implement: none was asked for */
    char *log = fake_log_text();
    CHECK(!strstr(log, "refused"));
    free(log);
}

static void test_init_and_context(void)
{
    tilec_rt *rt = NULL;
    fake_set("TILEC_FAKE_FAIL", "cuInit=100");
    CHECK_ERR(tilec_rt_create(NULL, &rt), TILEC_ERROR_DRIVER,
              "cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)");
    fake_set("TILEC_FAKE_FAIL", "cuCtxGetCurrent");
    CHECK_ERR(tilec_rt_create(NULL, &rt), TILEC_ERROR_DRIVER, "cuCtxGetCurrent failed: CUDA_ERROR_UNKNOWN (unknown error)");
    fake_set("TILEC_FAKE_FAIL", "cuDevicePrimaryCtxRetain=2");
    CHECK_ERR(tilec_rt_create(NULL, &rt), TILEC_ERROR_DRIVER,
              "cuDevicePrimaryCtxRetain failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
    CHECK(fake_live() == 0);
    fake_set("TILEC_FAKE_FAIL", "cuCtxSetCurrent:1");
    CHECK_ERR(tilec_rt_create(NULL, &rt), TILEC_ERROR_DRIVER, "cuCtxSetCurrent failed: CUDA_ERROR_UNKNOWN (unknown error)");
    CHECK(fake_live() == 0); /* the retained primary context was released */
    fake_set("TILEC_FAKE_FAIL", "cuDeviceGetAttribute:2=1");
    CHECK_ERR(tilec_rt_create(NULL, &rt), TILEC_ERROR_DRIVER,
              "compute capability: cuDeviceGetAttribute failed: CUDA_ERROR_INVALID_VALUE (invalid argument)");
    CHECK(fake_live() == 0);
    fake_set("TILEC_FAKE_FAIL", NULL);
    tilec_rt_options o = tilec_rt_default_options();
    o.device = 3;
    CHECK_ERR(tilec_rt_create(&o, &rt), TILEC_ERROR_DRIVER,
              "device 3: cuDeviceGet failed: CUDA_ERROR_INVALID_DEVICE (invalid device ordinal)");
    o.device = 0;
    o.opt_level = 4;
    CHECK_ERR(tilec_rt_create(&o, &rt), TILEC_ERROR_INVALID_ARGUMENT, "tilec_rt_create: opt_level 4 is outside 0..3");
    o.opt_level = 3;
    o.sm = 80;
    CHECK_ERR(tilec_rt_create(&o, &rt), TILEC_ERROR_INVALID_ARGUMENT, "tilec_rt_create: sm 80 is not 0, 90 or 100");
    fake_set("TILEC_FAKE_CC", "80");
    CHECK_ERR(tilec_rt_create(NULL, &rt), TILEC_ERROR_UNSUPPORTED,
              "device compute capability 8.0 is not supported: tilec targets sm_90a (9.x) and sm_100a (10.x)");
    CHECK(fake_live() == 0);
    fake_set("TILEC_FAKE_CC", "100");
    rt = test_rt(TILEC_RT_NO_DISK_CACHE, NULL);
    tilec_rt_library *lib = open_lib(rt);
    tilec_rt_kernel *k;
    CHECK_OK(get(lib, "small", &k));
    CHECK_CONTAINS(tilec_rt_kernel_signature(k), "arch sm_100a\n");
    tilec_rt_destroy(rt);
    CHECK(fake_live() == 0);
    CHECK_ERR(tilec_rt_create(NULL, NULL), TILEC_ERROR_INVALID_ARGUMENT, "tilec_rt_create: out is NULL");
}

/* The caller's context is used as is: nothing retained, and pushed only when another is current. */
static void test_user_context(void)
{
    fake_set("TILEC_FAKE_CONTEXT", "1");
    tilec_rt *rt = test_rt(TILEC_RT_NO_DISK_CACHE, NULL);
    CHECK(fake_calls("cuDevicePrimaryCtxRetain") == 0 && fake_live() == 0);
    tilec_rt_library *lib = open_lib(rt);
    tilec_rt_kernel *k;
    CHECK_OK(get(lib, "small", &k));
    CHECK(fake_calls("cuCtxPushCurrent") == 0);
    const rt_driver *d;
    CHECK_OK(rt_driver_get(&d));
    d->cuCtxSetCurrent(NULL); /* the application switched away */
    CHECK_OK(get(lib, "big", &k)); /* pushed to link, and again to load */
    CHECK(fake_calls("cuCtxPushCurrent") == 2 && fake_calls("cuCtxPopCurrent") == 2);
    CUcontext cur = (CUcontext)1;
    d->cuCtxGetCurrent(&cur);
    CHECK(cur == NULL); /* restored */
    tilec_rt_destroy(rt);
    CHECK(fake_live() == 0);
    fake_set("TILEC_FAKE_CONTEXT", NULL);
}

static void test_link_failures(void)
{
    tilec_rt *rt = test_rt(TILEC_RT_NO_DISK_CACHE, NULL);
    tilec_rt_library *lib = open_lib(rt);
    tilec_rt_kernel *k = NULL;
    fake_set("TILEC_FAKE_FAIL", "cuLinkCreate=2");
    CHECK_ERR(get(lib, "small", &k), TILEC_ERROR_DRIVER, "cuLinkCreate failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
    CHECK(fake_live() == 1); /* the primary context only */
    fake_set("TILEC_FAKE_FAIL", "cuLinkComplete");
    CHECK_ERR(get(lib, "small", &k), TILEC_ERROR_DRIVER, "cuLinkComplete failed: CUDA_ERROR_UNKNOWN (unknown error)");
    CHECK(fake_live() == 1);
    fake_set("TILEC_FAKE_FAIL", NULL);
    CHECK_ERR(get(lib, "bad_ptx", &k), TILEC_ERROR_DRIVER,
              "cuLinkAddData failed: CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed); linker log: ptxas fatal   : "
              "fake syntax error in tilec.ptx");
    CHECK(fake_live() == 1);
    CHECK_OK(get(lib, "small", &k)); /* failures are not cached */
    tilec_rt_stats st;
    CHECK_OK(tilec_rt_get_stats(rt, &st));
    CHECK(st.compiles == 4);
    tilec_rt_destroy(rt);
    CHECK(fake_live() == 0);
}

static void test_no_linker(void)
{
    fake_set("TILEC_FAKE_MISSING", "cuLinkComplete");
    char *dir = test_path("cache");
    tilec_rt *rt = test_rt(0, dir);
    tilec_rt_library *lib = open_lib(rt);
    tilec_rt_kernel *k;
    CHECK_OK(get(lib, "small", &k));
    tilec_rt_destroy(rt);
    rt = test_rt(0, dir); /* the PTX entry comes back from disk */
    lib = open_lib(rt);
    CHECK_OK(get(lib, "small", &k));
    int64_t n[1] = {100};
    tilec_rt_arg a[1] = {tilec_rt_arg_tensor((void *)0x100, TILEC_RT_F32, 1, n, NULL)};
    CHECK_OK(tilec_rt_launch(k, a, 1, NULL));
    tilec_rt_stats st;
    CHECK_OK(tilec_rt_get_stats(rt, &st));
    CHECK(st.disk_hits == 1 && st.compiles == 0);
    tilec_rt_destroy(rt);
    char *log = fake_log_text();
    CHECK(test_count(log, "cuModuleLoadData ptx functions=1") == 2);
    CHECK(fake_calls("cuLinkCreate") == 0);
    free(log);
    free(dir);
    CHECK(fake_live() == 0);
    fake_set("TILEC_FAKE_MISSING", NULL);
}

static void test_load_failures(void)
{
    tilec_rt *rt = test_rt(TILEC_RT_NO_DISK_CACHE, NULL);
    tilec_rt_library *lib = open_lib(rt);
    tilec_rt_kernel *k = NULL;
    fake_set("TILEC_FAKE_FAIL", "cuModuleLoadData=200");
    CHECK_ERR(get(lib, "small", &k), TILEC_ERROR_DRIVER,
              "cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid)");
    CHECK(fake_live() == 1);
    fake_set("TILEC_FAKE_FAIL", "cuModuleGetFunction=500");
    CHECK_ERR(get(lib, "small", &k), TILEC_ERROR_DRIVER,
              "entry 'small_e': cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND (named symbol not found)");
    CHECK(fake_live() == 1 && fake_calls("cuModuleUnload") == 1);
    fake_set("TILEC_FAKE_FAIL", "cuFuncSetAttribute=1");
    CHECK_ERR(get(lib, "big", &k), TILEC_ERROR_DRIVER,
              "entry 'big_e' asks for 65536 bytes of shared memory: cuFuncSetAttribute failed: "
              "CUDA_ERROR_INVALID_VALUE (invalid argument)");
    CHECK(fake_live() == 1);
    /* only the second load fails */
    fake_set("TILEC_FAKE_FAIL", "cuModuleLoadData:2=2");
    CHECK_OK(get(lib, "small", &k));
    CHECK_ERR(get(lib, "big", &k), TILEC_ERROR_DRIVER,
              "cuModuleLoadData failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
    CHECK_OK(get(lib, "big", &k));
    CHECK(fake_live() == 3);
    tilec_rt_destroy(rt);
    CHECK(fake_live() == 0);
}

static void test_launch_failures(void)
{
    tilec_rt *rt = test_rt(TILEC_RT_NO_DISK_CACHE, NULL);
    tilec_rt_library *lib = open_lib(rt);
    tilec_rt_kernel *small = NULL, *big = NULL;
    CHECK_OK(get(lib, "small", &small));
    CHECK_OK(get(lib, "big", &big));
    int64_t n[1] = {100};
    tilec_rt_arg a[1] = {tilec_rt_arg_tensor((void *)0x100, TILEC_RT_F32, 1, n, NULL)};
    fake_set("TILEC_FAKE_FAIL", "cuLaunchKernel=719");
    CHECK_ERR(tilec_rt_launch(small, a, 1, NULL), TILEC_ERROR_DRIVER,
              "launching small<>: cuLaunchKernel failed: CUDA_ERROR_LAUNCH_FAILED (unspecified launch failure)");
    CHECK_OK(tilec_rt_launch(big, NULL, 0, NULL)); /* big takes cuLaunchKernelEx (pdl) */
    fake_set("TILEC_FAKE_FAIL", "cuLaunchKernelEx:2=701");
    CHECK_OK(tilec_rt_launch(big, NULL, 0, NULL));
    CHECK_ERR(tilec_rt_launch(big, NULL, 0, NULL), TILEC_ERROR_DRIVER,
              "launching big<>: cuLaunchKernelEx failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (too many resources "
              "requested for launch)");
    CHECK_OK(tilec_rt_launch(big, NULL, 0, NULL));
    fake_set("TILEC_FAKE_FAIL", "cuLaunchKernel=719,cuGetErrorName,cuGetErrorString");
    CHECK_ERR(tilec_rt_launch(small, a, 1, NULL), TILEC_ERROR_DRIVER, "launching small<>: cuLaunchKernel failed: CUDA error 719");
    tilec_rt_destroy(rt);
    CHECK(fake_live() == 0);
}

/* Every entry point, failing on its 1st, 2nd or 3rd call, under a whole session: a clean error
 * that names the call, or success when the failing call was not on the path; nothing left. */
static void test_sweep(void)
{
    static const char *const syms[] = {
        "cuCtxGetCurrent", "cuCtxSetCurrent", "cuCtxGetDevice", "cuCtxPushCurrent", "cuDeviceGet",
        "cuDeviceGetAttribute", "cuDevicePrimaryCtxRetain", "cuModuleLoadData", "cuModuleGetFunction",
        "cuFuncSetAttribute", "cuLaunchKernel", "cuLaunchKernelEx", "cuLinkCreate", "cuLinkAddData", "cuLinkComplete",
        "cuGetErrorName", "cuGetErrorString",
    };
    char *dir = test_path("sweep-cache");
    int failures_seen = 0;
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
        for (int nth = 1; nth <= 3; nth++)
            for (int disk = 0; disk < 2; disk++) {
                char spec[128];
                snprintf(spec, sizeof spec, "%s:%d=2", syms[i], nth);
                fake_set("TILEC_FAKE_FAIL", spec);
                tilec_rt_options o = tilec_rt_default_options();
                o.flags = disk ? 0 : TILEC_RT_NO_DISK_CACHE;
                o.cache_dir = dir;
                tilec_rt *rt = NULL;
                tilec_status s = tilec_rt_create(&o, &rt);
                if (s == TILEC_OK) {
                    rt_set_compiler(rt, fake_compiler());
                    char *path = test_write("sweep.fake", program);
                    tilec_rt_library_options lo;
                    memset(&lo, 0, sizeof lo);
                    lo.source = path;
                    tilec_rt_library *lib = NULL;
                    s = tilec_rt_library_open(rt, &lo, &lib);
                    free(path);
                    tilec_rt_kernel *small = NULL, *big = NULL;
                    if (s == TILEC_OK)
                        s = get(lib, "small", &small);
                    if (s == TILEC_OK)
                        s = get(lib, "big", &big);
                    int64_t n[1] = {100};
                    tilec_rt_arg a[1] = {tilec_rt_arg_tensor((void *)0x100, TILEC_RT_F32, 1, n, NULL)};
                    for (int rep = 0; rep < 2 && s == TILEC_OK; rep++) {
                        s = tilec_rt_launch(small, a, 1, NULL);
                        if (s == TILEC_OK)
                            s = tilec_rt_launch(big, NULL, 0, NULL);
                    }
                    tilec_rt_destroy(rt);
                }
                if (s != TILEC_OK) {
                    failures_seen++;
                    CHECK(s == TILEC_ERROR_DRIVER);
                    if (strcmp(syms[i], "cuGetErrorName") && strcmp(syms[i], "cuGetErrorString"))
                        CHECK_CONTAINS(tilec_rt_last_error(), syms[i]);
                }
                if (fake_live() != 0) {
                    CHECK(!"driver objects left after a failure");
                    fprintf(stderr, "  %s (disk %d): %d left\n", spec, disk, fake_live());
                }
            }
    printf("sweep: %d sessions failed cleanly\n", failures_seen);
    CHECK(failures_seen > 20);
    free(dir);
}

int main(int argc, char **argv)
{
    static const rt_test_case cases[] = {
        RT_TEST(test_no_driver),       RT_TEST(test_missing_symbol), RT_TEST(test_init_and_context),
        RT_TEST(test_user_context),    RT_TEST(test_link_failures),  RT_TEST(test_no_linker),
        RT_TEST(test_load_failures),   RT_TEST(test_launch_failures), RT_TEST(test_sweep),
    };
    return rt_test_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
