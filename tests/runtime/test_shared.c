/* test_shared.c — the installed interface only: this file includes nothing but tilec/runtime.h and
 * links libtilec_runtime.so (built without the compiler), then runs an AOT library end to end on
 * the fake driver. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec/runtime.h"

static int failed;

#define EXPECT(c)                                                                                                     \
    do {                                                                                                              \
        if (!(c)) {                                                                                                   \
            failed++;                                                                                                 \
            fprintf(stderr, "%s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #c, tilec_rt_last_error());          \
        }                                                                                                             \
    } while (0)

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0)
        exit(2);
    fclose(f);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char fatbin[512], manifest[512], source[512];
    snprintf(fatbin, sizeof fatbin, "%s/test_shared.fatbin", tmp);
    snprintf(manifest, sizeof manifest, "%s/test_shared.manifest", tmp);
    snprintf(source, sizeof source, "%s/test_shared.tl", tmp);
    write_file(fatbin, ".version 8.7\n.visible .entry fill_u8(\n .param .u64 y,\n .param .s32 y_e0,\n"
                       " .param .s64 y_s0,\n .param .b8 v\n)\n{ ret; }\n");
    write_file(manifest, "tilec-manifest 1\ntilec-sig 1\nkernel fill\nentry fill_u8\nkey fill<T=u8>\narch sm_90a\n"
                         "threads 256\nflags\nnparams 2\ntensor 0 y u8 1 16 written\ndim 0 0 (bind N)\n"
                         "scalar 1 v u8\ngrid (cdiv N 4096)\nend\n");
    write_file(source, "kernel k() {}\n");

    tilec_rt_options o = tilec_rt_default_options();
    o.flags = TILEC_RT_NO_DISK_CACHE;
    tilec_rt *rt = NULL;
    EXPECT(tilec_rt_create(&o, &rt) == TILEC_OK);
    if (!rt)
        return 1;
    EXPECT(tilec_rt_cache_dir(rt) == NULL);
    tilec_rt_library_options lo;
    memset(&lo, 0, sizeof lo);
    lo.source = source;
    tilec_rt_library *lib = NULL;
#ifdef TILEC_RUNTIME_HAS_COMPILER
    /* with the compiler linked in, the malformed source is a compile error with its diagnostic */
    EXPECT(tilec_rt_library_open(rt, &lo, &lib) == TILEC_ERROR_COMPILE &&
           strstr(tilec_rt_last_error(), "error: expected 'grid' or 'persistent', found '{'") != NULL);
#else
    EXPECT(tilec_rt_library_open(rt, &lo, &lib) == TILEC_ERROR_UNSUPPORTED);
#endif
    lo.source = NULL;
    lo.fatbin = fatbin;
    lo.manifest = manifest;
    EXPECT(tilec_rt_library_open(rt, &lo, &lib) == TILEC_OK);
    const char *g[1] = {"T=u8"};
    tilec_rt_kernel *k = NULL;
    EXPECT(tilec_rt_get_kernel(lib, "fill", g, 1, &k) == TILEC_OK);
    if (k) {
        int64_t n[1] = {1 << 20};
        tilec_rt_arg a[2] = {tilec_rt_arg_tensor((void *)0x7000, TILEC_RT_U8, 1, n, NULL),
                             tilec_rt_arg_int(TILEC_RT_I32, 7)};
        tilec_rt_launch_config cfg;
        EXPECT(tilec_rt_check(k, a, 2, NULL, &cfg) == TILEC_OK && cfg.grid[0] == 256);
        EXPECT(tilec_rt_launch(k, a, 2, NULL) == TILEC_OK);
        a[1] = tilec_rt_arg_int(TILEC_RT_I32, 256);
        EXPECT(tilec_rt_launch(k, a, 2, NULL) == TILEC_ERROR_LAUNCH &&
               !strcmp(tilec_rt_last_error(), "argument 'v': value 256 does not fit u8"));
    }
    tilec_rt_stats st;
    EXPECT(tilec_rt_get_stats(rt, &st) == TILEC_OK && st.aot_hits == 1 && st.compiles == 0);
    tilec_rt_destroy(rt);
    remove(fatbin);
    remove(manifest);
    remove(source);
    printf("test_shared: %s\n", failed ? "FAILED" : "ok");
    return failed != 0;
}
