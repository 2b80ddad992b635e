/* test_jit_warm.c — the JIT through the real compiler and the fake driver (no GPU):
 *   memory   -- 500 specialisations compiled one after another in one library: the resident
 *               memory after the 500th is within a few MB of that after the 100th (a library
 *               used to keep about 0.6 MB of every compile until it was closed)
 * Usage: test_jit_warm KERNELS.TL CASE */
#include "tilec/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int failures;
#define EXPECT(c)                                                                                                \
    do {                                                                                                         \
        if (!(c)) {                                                                                              \
            fprintf(stderr, "%s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #c, tilec_rt_last_error());      \
            failures++;                                                                                          \
        }                                                                                                        \
    } while (0)

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double rss_mb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2)
            res = 0;
        fclose(f);
    }
    return (double)res * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

static tilec_rt *open_rt(const char *cache_dir)
{
    tilec_rt_options o = tilec_rt_default_options();
    o.flags = cache_dir ? TILEC_RT_QUIET : TILEC_RT_NO_DISK_CACHE;
    o.cache_dir = cache_dir;
    tilec_rt *rt = NULL;
    EXPECT(tilec_rt_create(&o, &rt) == TILEC_OK);
    return rt;
}

static tilec_rt_library *open_lib(tilec_rt *rt, const char *source)
{
    tilec_rt_library_options lo;
    memset(&lo, 0, sizeof lo);
    lo.source = source;
    tilec_rt_library *lib = NULL;
    EXPECT(tilec_rt_library_open(rt, &lo, &lib) == TILEC_OK);
    return lib;
}

/* the generics of specialisation i of mask_indices_by_tp: 500 distinct keys, cheap to compile */
typedef struct Gen {
    char r[32], ntp[32];
    const char *v[3];
} Gen;

static void gen(Gen *g, int i, const char *dtype)
{
    snprintf(g->r, sizeof g->r, "R=%d", 1 + i % 25);
    snprintf(g->ntp, sizeof g->ntp, "NTP=%d", 1 + i / 25);
    g->v[0] = dtype;
    g->v[1] = g->r;
    g->v[2] = g->ntp;
}

static void test_memory(const char *source)
{
    tilec_rt *rt = open_rt(NULL);
    tilec_rt_library *lib = rt ? open_lib(rt, source) : NULL;
    if (!lib)
        return;
    double at100 = 0, t0 = now_ms();
    for (int i = 0; i < 500; i++) {
        Gen g;
        gen(&g, i, "V=i64");
        tilec_rt_kernel *k = NULL;
        EXPECT(tilec_rt_get_kernel(lib, "mask_indices_by_tp", g.v, 3, &k) == TILEC_OK);
        if (i == 99)
            at100 = rss_mb();
        if ((i + 1) % 100 == 0)
            printf("after %3d compiles: %.1f MB resident\n", i + 1, rss_mb());
    }
    double at500 = rss_mb();
    printf("500 compiles in %.0f ms; resident memory from the 100th to the 500th: %+.1f MB (%.1f kB per compile)\n",
           now_ms() - t0, at500 - at100, (at500 - at100) * 1024.0 / 400.0);
    tilec_rt_stats st;
    EXPECT(tilec_rt_get_stats(rt, &st) == TILEC_OK && st.compiles == 500);
    EXPECT(at500 - at100 < 12.0); /* the compiler drops a parse past 8 MiB: a sawtooth below that */
    tilec_rt_library_close(lib);
    tilec_rt_destroy(rt);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_jit_warm KERNELS.TL memory\n");
        return 2;
    }
    if (!strcmp(argv[2], "memory"))
        test_memory(argv[1]);
    else {
        fprintf(stderr, "test_jit_warm: no case '%s'\n", argv[2]);
        return 2;
    }
    if (failures)
        fprintf(stderr, "test_jit_warm %s: %d failure(s)\n", argv[2], failures);
    return failures ? 1 : 0;
}
