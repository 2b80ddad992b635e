/* test_jit_warm.c — the JIT through the real compiler and the fake driver (no GPU):
 *   memory   -- 500 specialisations compiled one after another in one library: the resident
 *               memory after the 500th is within a few MB of that after the 100th (a library
 *               used to keep about 0.6 MB of every compile until it was closed)
 *   warm_up  -- tilec_rt_warm_up of a list on four threads compiles each key once (a key given
 *               twice too), fills the disk cache; a second runtime on the same cache warms the
 *               same list from disk, and the time per entry is printed (the target is <= 1 ms)
 *   errors   -- a failing entry does not stop the others; the first failure's status and message
 *               come back, every entry's status in the array
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

enum { NWARM = 64 };

static void make_list(Gen *g, tilec_rt_spec *specs, int n)
{
    for (int i = 0; i < n; i++) {
        gen(&g[i], i, i % 2 ? "V=i32" : "V=i64");
        specs[i].kernel = "mask_indices_by_tp";
        specs[i].generics = g[i].v;
        specs[i].ngenerics = 3;
    }
}

static void test_warm_up(const char *source)
{
    const char *tmp = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/tilec-warm-XXXXXX", tmp ? tmp : "/tmp");
    char *d = mkdtemp(path);
    if (!d) {
        perror("mkdtemp");
        failures++;
        return;
    }
    static Gen g[NWARM + 1];
    tilec_rt_spec specs[NWARM + 1];
    make_list(g, specs, NWARM);
    specs[NWARM] = specs[3]; /* a key twice: built once */
    tilec_status st[NWARM + 1];
    /* first start: everything compiles, on four threads */
    tilec_rt *rt = open_rt(d);
    tilec_rt_library *lib = rt ? open_lib(rt, source) : NULL;
    if (!lib)
        return;
    double t0 = now_ms();
    EXPECT(tilec_rt_warm_up(lib, specs, NWARM + 1, 4, st) == TILEC_OK);
    double cold = now_ms() - t0;
    for (int i = 0; i <= NWARM; i++)
        EXPECT(st[i] == TILEC_OK);
    tilec_rt_stats s;
    EXPECT(tilec_rt_get_stats(rt, &s) == TILEC_OK && s.compiles == NWARM && s.disk_hits == 0);
    /* later lookups are memory hits */
    tilec_rt_kernel *k = NULL;
    EXPECT(tilec_rt_get_kernel(lib, specs[5].kernel, specs[5].generics, 3, &k) == TILEC_OK && k);
    EXPECT(tilec_rt_get_stats(rt, &s) == TILEC_OK && s.compiles == NWARM && s.memory_hits >= 2);
    tilec_rt_library_close(lib);
    tilec_rt_destroy(rt);
    /* second start: the disk cache */
    rt = open_rt(d);
    lib = rt ? open_lib(rt, source) : NULL;
    if (!lib)
        return;
    t0 = now_ms();
    EXPECT(tilec_rt_warm_up(lib, specs, NWARM, 0, NULL) == TILEC_OK);
    double warm = now_ms() - t0;
    EXPECT(tilec_rt_get_stats(rt, &s) == TILEC_OK && s.compiles == 0 && s.disk_hits == NWARM);
    printf("warm-up of %d entries: first start %.1f ms (%.2f ms per entry, 4 threads); second start from the disk "
           "cache %.2f ms (%.3f ms per entry)\n",
           NWARM, cold, cold / NWARM, warm, warm / NWARM);
    tilec_rt_library_close(lib);
    tilec_rt_destroy(rt);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", d);
}

static void test_errors(const char *source)
{
    tilec_rt *rt = open_rt(NULL);
    tilec_rt_library *lib = rt ? open_lib(rt, source) : NULL;
    if (!lib)
        return;
    static Gen g[4];
    tilec_rt_spec specs[6];
    make_list(g, specs, 4);
    const char *bad[] = {"V=i64", "R=0", "NTP=1"}; /* fails the kernel's static_assert */
    specs[4] = (tilec_rt_spec){"mask_indices_by_tp", bad, 3};
    specs[5] = (tilec_rt_spec){"no_such_kernel", NULL, 0};
    tilec_status st[6];
    tilec_status r = tilec_rt_warm_up(lib, specs, 6, 3, st);
    EXPECT(r == TILEC_ERROR_COMPILE);
    EXPECT(strstr(tilec_rt_last_error(), "entry 4") && strstr(tilec_rt_last_error(), "positive"));
    for (int i = 0; i < 4; i++)
        EXPECT(st[i] == TILEC_OK);
    EXPECT(st[4] == TILEC_ERROR_COMPILE && st[5] == TILEC_ERROR_NOT_FOUND);
    EXPECT(tilec_rt_warm_up(lib, specs, 4, 2, NULL) == TILEC_OK);
    EXPECT(tilec_rt_warm_up(NULL, specs, 4, 2, NULL) == TILEC_ERROR_INVALID_ARGUMENT);
    EXPECT(tilec_rt_warm_up(lib, NULL, 4, 2, NULL) == TILEC_ERROR_INVALID_ARGUMENT);
    EXPECT(tilec_rt_warm_up(lib, specs, -1, 2, NULL) == TILEC_ERROR_INVALID_ARGUMENT);
    EXPECT(tilec_rt_warm_up(lib, NULL, 0, 2, NULL) == TILEC_OK);
    tilec_rt_library_close(lib);
    tilec_rt_destroy(rt);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_jit_warm KERNELS.TL memory|warm_up|errors\n");
        return 2;
    }
    if (!strcmp(argv[2], "memory"))
        test_memory(argv[1]);
    else if (!strcmp(argv[2], "warm_up"))
        test_warm_up(argv[1]);
    else if (!strcmp(argv[2], "errors"))
        test_errors(argv[1]);
    else {
        fprintf(stderr, "test_jit_warm: no case '%s'\n", argv[2]);
        return 2;
    }
    if (failures)
        fprintf(stderr, "test_jit_warm %s: %d failure(s)\n", argv[2], failures);
    return failures ? 1 : 0;
}
