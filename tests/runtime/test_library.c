/* test_library.c — libraries and specialisations: compile errors and bad generic values, what the
 * runtime does with a bad signature from the compiler, AOT fatbins with manifests, many threads
 * asking for the same kernels, and closing libraries and runtimes with kernels loaded. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_test.h"

static const char *const program =
    "@kernel k\n"
    "@default A 1\n"
    "@default B 2\n"
    "@sig\n"
    "tilec-sig 1\nkernel k\nentry k_$A$B\nkey k<A=$A,B=$B>\narch $ARCH\nthreads 32\nflags\nnparams 1\n"
    "tensor 0 x f32 1 4\ndim 0 0 (bind N)\ngrid (cdiv N 32)\nrequire (> N $A) \"N must exceed A\"\nend\n"
    "@kernel wrong\n"
    "@compile_error T must be a float type\n"
    "@kernel broken\n"
    "@sig\n"
    "tilec-sig 1\nkernel broken\nbogus 1\nend\n"
    "@kernel liar\n"
    "@sig\n"
    "tilec-sig 1\nkernel other\nentry other\narch $ARCH\nthreads 1\nflags\nnparams 0\ngrid 1\nend\n";

static void test_compile_errors(void)
{
    tilec_rt *rt = test_rt(TILEC_RT_NO_DISK_CACHE, NULL);
    tilec_rt_library *lib = test_lib(rt, "lib.fake", program);
    tilec_rt_kernel *k = NULL;
    const char *g[3] = {"A=1", "B=2", "A=3"};
    CHECK_ERR(tilec_rt_get_kernel(lib, "wrong", NULL, 0, &k), TILEC_ERROR_COMPILE,
              "kernels.fake:3:7: error: T must be a float type");
    CHECK_ERR(tilec_rt_get_kernel(lib, "zzz", NULL, 0, &k), TILEC_ERROR_NOT_FOUND, "no kernel named 'zzz'");
    const char *q[1] = {"Q=1"};
    CHECK_ERR(tilec_rt_get_kernel(lib, "k", q, 1, &k), TILEC_ERROR_INVALID_ARGUMENT,
              "kernel 'k' has no generic parameter 'Q=1'");
    CHECK_ERR(tilec_rt_get_kernel(lib, "k", g, 3, &k), TILEC_ERROR_INVALID_ARGUMENT, "generic 'A' is given twice");
    static const char *const malformed[] = {"A", "=1", "A=", "A=1,B=2", "A=<1>", "A=x y", "1A=2", "A-B=1", "A=\"q\""};
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        char want[256];
        snprintf(want, sizeof want,
                 "generic value '%s' is malformed: expected NAME=VALUE (VALUE without spaces, commas, quotes or angle "
                 "brackets)",
                 malformed[i]);
        CHECK_ERR(tilec_rt_get_kernel(lib, "k", &malformed[i], 1, &k), TILEC_ERROR_INVALID_ARGUMENT, want);
    }
    const char *nul[2] = {"A=1", NULL};
    CHECK_ERR(tilec_rt_get_kernel(lib, "k", nul, 2, &k), TILEC_ERROR_INVALID_ARGUMENT, "generic value 1 is NULL");
    CHECK_ERR(tilec_rt_get_kernel(lib, "k", NULL, 1, &k), TILEC_ERROR_INVALID_ARGUMENT,
              "tilec_rt_get_kernel: NULL argument");
    CHECK_ERR(tilec_rt_get_kernel(lib, "broken", NULL, 0, &k), TILEC_ERROR_INTERNAL,
              "the signature of broken<> is invalid: malformed signature, line 3: unknown item 'bogus'");
    CHECK_ERR(tilec_rt_get_kernel(lib, "liar", NULL, 0, &k), TILEC_ERROR_INTERNAL,
              "the signature of liar<> is for kernel 'other' on sm_90a, not 'liar' on sm_90a");
    CHECK(fake_live() == 1);

    tilec_rt_library_options lo;
    memset(&lo, 0, sizeof lo);
    tilec_rt_library *l2 = NULL;
    CHECK_ERR(tilec_rt_library_open(rt, &lo, &l2), TILEC_ERROR_INVALID_ARGUMENT,
              "tilec_rt_library_open: give a source, or a fatbin and its manifest");
    lo.fatbin = "x.fatbin";
    CHECK_ERR(tilec_rt_library_open(rt, &lo, &l2), TILEC_ERROR_INVALID_ARGUMENT,
              "tilec_rt_library_open: a fatbin needs its manifest and a manifest its fatbin");
    lo.fatbin = NULL;
    lo.source = "/nonexistent/kernels.fake";
    CHECK_ERR(tilec_rt_library_open(rt, &lo, &l2), TILEC_ERROR_NOT_FOUND,
              "cannot open '/nonexistent/kernels.fake': No such file or directory");
    char *bad = test_write("bad.fake", "@open_error expected ';' after statement\n");
    lo.source = bad;
    char want[1024];
    snprintf(want, sizeof want, "%s:1:1: error: expected ';' after statement", bad);
    CHECK_ERR(tilec_rt_library_open(rt, &lo, &l2), TILEC_ERROR_COMPILE, want);
    rt_set_compiler(rt, NULL);
    snprintf(want, sizeof want,
             "cannot compile '%s': this runtime was built without the compiler (JIT); open an AOT fatbin", bad);
    CHECK_ERR(tilec_rt_library_open(rt, &lo, &l2), TILEC_ERROR_UNSUPPORTED, want);
    free(bad);
    tilec_rt_destroy(rt);
    CHECK(fake_live() == 0);
}

static void test_generic_order_and_defaults(void)
{
    tilec_rt *rt = test_rt(TILEC_RT_NO_DISK_CACHE, NULL);
    tilec_rt_library *lib = test_lib(rt, "lib.fake", program);
    tilec_rt_kernel *a = test_kernel(lib, "k", "A=5", "B=7");
    tilec_rt_kernel *b = test_kernel(lib, "k", "B=7", "A=5");
    CHECK(a == b);
    CHECK_CONTAINS(tilec_rt_kernel_signature(a), "entry k_57\n");
    tilec_rt_kernel *d = test_kernel(lib, "k", NULL, NULL); /* defaults: a different key, same code */
    CHECK(d != a);
    CHECK_CONTAINS(tilec_rt_kernel_signature(d), "entry k_12\n");
    int64_t n[1] = {4};
    tilec_rt_arg x[1] = {tilec_rt_arg_tensor((void *)0x40, TILEC_RT_F32, 1, n, NULL)};
    CHECK_ERR(tilec_rt_launch(a, x, 1, NULL), TILEC_ERROR_LAUNCH, "requirement failed: N > 5 (N = 4): N must exceed A");
    CHECK_OK(tilec_rt_launch(d, x, 1, NULL));
    CHECK(fake_compiler_compiles() == 2);
    tilec_rt_destroy(rt);
    CHECK(fake_live() == 0);
}

/* ---- AOT ---- */

static const char *const fatbin_text =
    "// fake fatbin: PTX text the fake driver reads\n.version 8.7\n"
    ".visible .entry aot_f32(\n .param .u64 x,\n .param .s32 x_e0,\n .param .s64 x_s0\n)\n{ ret; }\n"
    ".visible .entry aot_i32(\n .param .u64 x,\n .param .s32 x_e0,\n .param .s64 x_s0\n)\n{ ret; }\n";

static const char *const manifest_text =
    "tilec-manifest 1\n"
    "compiler tilec 0.1.0\n"
    "\n"
    "tilec-sig 1\nkernel aot\nentry aot_f32\nkey aot<T=f32>\narch sm_90a\nthreads 64\nflags\nnparams 1\n"
    "tensor 0 x f32 1 4\ndim 0 0 (bind N)\ngrid (cdiv N 64)\nend\n"
    "tilec-sig 1\nkernel aot\nentry aot_i32\nkey aot<T=i32>\narch sm_90a\nthreads 64\nflags\nnparams 1\n"
    "tensor 0 x i32 1 4\ndim 0 0 (bind N)\ngrid (cdiv N 64)\nend\n"
    "tilec-sig 1\nkernel aot\nentry aot_f16\nkey aot<T=f16>\narch sm_100a\nthreads 64\nflags\nnparams 1\n"
    "tensor 0 x f16 1 4\ndim 0 0 (bind N)\ngrid (cdiv N 64)\nend\n";

static const char *const aot_source =
    "@kernel aot\n@default T f32\n@sig\n"
    "tilec-sig 1\nkernel aot\nentry aot_jit_$T\nkey aot<T=$T>\narch $ARCH\nthreads 64\nflags\nnparams 1\n"
    "tensor 0 x $T 1 4\ndim 0 0 (bind N)\ngrid (cdiv N 64)\nend\n";

static void test_aot(void)
{
    char *fatbin = test_write("k.fatbin", fatbin_text);
    char *manifest = test_write("k.manifest", manifest_text);
    tilec_rt *rt = test_rt(TILEC_RT_NO_DISK_CACHE, NULL);
    tilec_rt_library_options lo;
    memset(&lo, 0, sizeof lo);
    lo.fatbin = fatbin;
    lo.manifest = manifest;
    tilec_rt_library *lib = NULL;
    CHECK_OK(tilec_rt_library_open(rt, &lo, &lib));
    CHECK(fake_calls("cuModuleLoadData") == 0); /* loaded on first use */
    tilec_rt_kernel *f = test_kernel(lib, "aot", "T=f32", NULL);
    tilec_rt_kernel *i = test_kernel(lib, "aot", "T=i32", NULL);
    CHECK(f != i && fake_calls("cuModuleLoadData") == 1);
    int64_t n[1] = {1000};
    tilec_rt_arg x[1] = {tilec_rt_arg_tensor((void *)0x40, TILEC_RT_F32, 1, n, NULL)};
    CHECK_OK(tilec_rt_launch(f, x, 1, NULL));
    CHECK_ERR(tilec_rt_launch(i, x, 1, NULL), TILEC_ERROR_LAUNCH, "argument 'x': expected dtype i32, got f32");
    tilec_rt_kernel *k = NULL;
    const char *g16[1] = {"T=f16"};
    CHECK_ERR(tilec_rt_get_kernel(lib, "aot", g16, 1, &k), TILEC_ERROR_NOT_FOUND,
              "kernel aot<T=f16> for sm_90a is not in the library's manifest, and the library has no source to "
              "compile it from");
    CHECK_ERR(tilec_rt_get_kernel(lib, "aot", NULL, 0, &k), TILEC_ERROR_NOT_FOUND,
              "kernel aot<> for sm_90a is not in the library's manifest, and the library has no source to compile it "
              "from");
    tilec_rt_stats st;
    CHECK_OK(tilec_rt_get_stats(rt, &st));
    CHECK(st.aot_hits == 2 && st.compiles == 0);
    tilec_rt_library_close(lib);
    CHECK(fake_live() == 1);

    /* with a source too, what the manifest lacks is compiled */
    char *src = test_write("aot.fake", aot_source);
    lo.source = src;
    CHECK_OK(tilec_rt_library_open(rt, &lo, &lib));
    f = test_kernel(lib, "aot", "T=f32", NULL);
    CHECK_CONTAINS(tilec_rt_kernel_signature(f), "entry aot_f32\n");
    tilec_rt_kernel *h = test_kernel(lib, "aot", "T=f16", NULL);
    CHECK_CONTAINS(tilec_rt_kernel_signature(h), "entry aot_jit_f16\n");
    CHECK(fake_compiler_compiles() == 1);

    /* broken inputs */
    tilec_rt_library *bad = NULL;
    lo.source = NULL;
    lo.fatbin = "/nonexistent.fatbin";
    CHECK_ERR(tilec_rt_library_open(rt, &lo, &bad), TILEC_ERROR_NOT_FOUND, "cannot read fatbin '/nonexistent.fatbin'");
    lo.fatbin = fatbin;
    char *m2 = test_write("bad.manifest", "tilec-manifest 1\nbogus\n");
    lo.manifest = m2;
    char want[1024];
    snprintf(want, sizeof want, "manifest '%s', line 2: unexpected 'bogus'", m2);
    CHECK_ERR(tilec_rt_library_open(rt, &lo, &bad), TILEC_ERROR_INVALID_ARGUMENT, want);
    free(m2);
    m2 = test_write("bad2.manifest", "tilec-manifest 1\ntilec-sig 1\nkernel a\nthreads 0\nend\n");
    lo.manifest = m2;
    snprintf(want, sizeof want,
             "manifest '%s', signature at line 2: malformed signature, line 3: threads must be at least 1", m2);
    CHECK_ERR(tilec_rt_library_open(rt, &lo, &bad), TILEC_ERROR_INVALID_ARGUMENT, want);
    free(m2);
    m2 = test_write("bad3.manifest",
                    "tilec-manifest 1\ntilec-sig 1\nkernel a\nentry a\narch sm_90a\nthreads 1\nnparams 0\ngrid 1\nend\n");
    lo.manifest = m2;
    snprintf(want, sizeof want, "manifest '%s', signature at line 2: missing or malformed 'key' line", m2);
    CHECK_ERR(tilec_rt_library_open(rt, &lo, &bad), TILEC_ERROR_INVALID_ARGUMENT, want);
    free(m2);
    m2 = test_write("bad4.manifest", "tilec-manifest 2\n");
    lo.manifest = m2;
    snprintf(want, sizeof want, "manifest '%s', line 1: expected 'tilec-manifest 1'", m2);
    CHECK_ERR(tilec_rt_library_open(rt, &lo, &bad), TILEC_ERROR_INVALID_ARGUMENT, want);
    free(m2);
    m2 = test_write("bad5.manifest", "tilec-manifest 1\ntilec-sig 1\nkernel a\n");
    lo.manifest = m2;
    snprintf(want, sizeof want, "manifest '%s': the signature at line 2 has no 'end'", m2);
    CHECK_ERR(tilec_rt_library_open(rt, &lo, &bad), TILEC_ERROR_INVALID_ARGUMENT, want);
    free(m2);

    /* a fatbin the driver rejects */
    lo.manifest = manifest;
    CHECK_OK(tilec_rt_library_open(rt, &lo, &bad));
    fake_set("TILEC_FAKE_FAIL", "cuModuleLoadData=209");
    snprintf(want, sizeof want,
             "loading fatbin '%s': cuModuleLoadData failed: CUDA error 209", fatbin);
    CHECK_ERR(tilec_rt_get_kernel(bad, "aot", (const char *const[]){"T=f32"}, 1, &k), TILEC_ERROR_DRIVER, want);
    fake_set("TILEC_FAKE_FAIL", NULL);
    CHECK_OK(tilec_rt_get_kernel(bad, "aot", (const char *const[]){"T=f32"}, 1, &k));
    tilec_rt_destroy(rt); /* closes both open libraries */
    CHECK(fake_live() == 0);
    free(src);
    free(fatbin);
    free(manifest);
}

/* ---- threads ---- */

static tilec_rt_library *shared_lib;
static atomic_int thread_errors;

static void *worker(void *arg)
{
    long id = (long)arg;
    static const char *const vals[] = {"A=1", "A=2", "A=3"};
    for (int rep = 0; rep < 50; rep++) {
        const char *g[1] = {vals[(id + rep) % 3]};
        tilec_rt_kernel *k = NULL;
        if (tilec_rt_get_kernel(shared_lib, "k", g, 1, &k) != TILEC_OK) {
            atomic_fetch_add(&thread_errors, 1);
            continue;
        }
        int64_t n[1] = {100};
        tilec_rt_arg x[1] = {tilec_rt_arg_tensor((void *)0x40, TILEC_RT_F32, 1, n, NULL)};
        if (tilec_rt_launch(k, x, 1, NULL) != TILEC_OK)
            atomic_fetch_add(&thread_errors, 1);
        x[0].u.tensor.shape[0] = 0; /* an error on this thread must not disturb the others */
        if (tilec_rt_launch(k, x, 1, NULL) != TILEC_ERROR_LAUNCH ||
            strncmp(tilec_rt_last_error(), "requirement failed: N > ", 24))
            atomic_fetch_add(&thread_errors, 1);
    }
    return NULL;
}

static void test_threads(void)
{
    tilec_rt *rt = test_rt(TILEC_RT_NO_DISK_CACHE, NULL);
    shared_lib = test_lib(rt, "lib.fake", program);
    setenv("TILEC_FAKE_COMPILE_DELAY_MS", "5", 1);
    pthread_t t[8];
    for (long i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    unsetenv("TILEC_FAKE_COMPILE_DELAY_MS");
    CHECK(atomic_load(&thread_errors) == 0);
    tilec_rt_stats st;
    CHECK_OK(tilec_rt_get_stats(rt, &st));
    CHECK(st.compiles == 3 && st.memory_hits == 8 * 50 - 3);
    CHECK(fake_calls("cuLaunchKernel") == 8 * 50);
    tilec_rt_destroy(rt);
    CHECK(fake_live() == 0);
}

int main(int argc, char **argv)
{
    static const rt_test_case cases[] = {
        RT_TEST(test_compile_errors),
        RT_TEST(test_generic_order_and_defaults),
        RT_TEST(test_aot),
        RT_TEST(test_threads),
    };
    return rt_test_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
