/* rt_test.c — the harness and helpers declared in rt_test.h. */
#include "rt_test.h"

#include <dlfcn.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int rt_checks, rt_failed;

void rt_check_true(int ok, const char *what, const char *file, int line)
{
    rt_checks++;
    if (!ok) {
        rt_failed++;
        fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
    }
}

void rt_check_status(tilec_status got, tilec_status want, const char *msg, const char *what, const char *file,
                     int line)
{
    rt_checks++;
    if (got != want) {
        rt_failed++;
        fprintf(stderr, "%s:%d: %s\n  returned %s, expected %s\n  message: %s\n", file, line, what,
                tilec_rt_status_name(got), tilec_rt_status_name(want), tilec_rt_last_error());
        return;
    }
    if (msg && strcmp(msg, tilec_rt_last_error())) {
        rt_failed++;
        fprintf(stderr, "%s:%d: %s\n  message:  %s\n  expected: %s\n", file, line, what, tilec_rt_last_error(), msg);
    }
}

void rt_check_str(const char *got, const char *want, const char *what, const char *file, int line)
{
    rt_checks++;
    if (!got || strcmp(got, want)) {
        rt_failed++;
        fprintf(stderr, "%s:%d: %s\n  got:      %s\n  expected: %s\n", file, line, what, got ? got : "(null)", want);
    }
}

void rt_check_contains(const char *hay, const char *needle, const char *what, const char *file, int line)
{
    rt_checks++;
    if (!hay || !strstr(hay, needle)) {
        rt_failed++;
        fprintf(stderr, "%s:%d: %s does not contain '%s'\n  text: %s\n", file, line, what, needle, hay ? hay : "(null)");
    }
}

/* ---- scratch files ---- */

static char rt_dir[512];

const char *test_dir(void)
{
    if (!rt_dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(rt_dir, sizeof rt_dir, "%s/tilec-rt-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(rt_dir)) {
            perror("mkdtemp");
            exit(2);
        }
    }
    return rt_dir;
}

char *test_path(const char *name)
{
    size_t n = strlen(test_dir()) + strlen(name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", test_dir(), name);
    return p;
}

char *test_write(const char *name, const char *text)
{
    char *p = test_path(name);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(text, 1, strlen(text), f) != strlen(text)) {
        perror(p);
        exit(2);
    }
    fclose(f);
    return p;
}

char *test_read(const char *path)
{
    char *text;
    size_t len;
    return rt_read_file(path, &text, &len) == TILEC_OK ? text : NULL;
}

int test_count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text ? strstr(text, needle) : NULL; p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static int rt_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    if (flag == FTW_DP || flag == FTW_D)
        chmod(path, 0755);
    remove(path);
    return 0;
}

/* ---- the fake driver ---- */

static void *rt_fake(void)
{
    static void *h;
    if (!h) {
        const char *path = getenv("TILEC_LIBCUDA");
        h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
        if (!h) {
            fprintf(stderr, "cannot open the fake driver ($TILEC_LIBCUDA=%s)\n", path ? path : "unset");
            exit(2);
        }
    }
    return h;
}

static void *rt_fake_sym(const char *name)
{
    void *s = dlsym(rt_fake(), name);
    if (!s) {
        fprintf(stderr, "the fake driver lacks %s\n", name);
        exit(2);
    }
    return s;
}

void fake_set(const char *env, const char *value)
{
    if (value)
        setenv(env, value, 1);
    else
        unsetenv(env);
    void (*configure)(void);
    *(void **)&configure = rt_fake_sym("fake_cuda_configure");
    configure();
}

int fake_live(void)
{
    int (*live)(void);
    *(void **)&live = rt_fake_sym("fake_cuda_live");
    return live();
}

long fake_calls(const char *sym)
{
    long (*calls)(const char *);
    *(void **)&calls = rt_fake_sym("fake_cuda_calls");
    return calls(sym);
}

char *fake_log_text(void)
{
    char *p = test_path("fake.log");
    char *t = test_read(p);
    free(p);
    return t ? t : strdup("");
}

void fake_log_clear(void)
{
    char *p = test_path("fake.log");
    FILE *f = fopen(p, "w");
    if (f)
        fclose(f);
    fake_set("TILEC_FAKE_LOG", p);
    free(p);
}

/* ---- runtimes ---- */

tilec_rt *test_rt(unsigned flags, const char *cache_dir)
{
    tilec_rt_options o = tilec_rt_default_options();
    o.flags = flags;
    o.cache_dir = cache_dir;
    tilec_rt *rt = NULL;
    CHECK_OK(tilec_rt_create(&o, &rt));
    if (!rt) {
        fprintf(stderr, "cannot create a runtime: %s\n", tilec_rt_last_error());
        exit(1);
    }
    rt_set_compiler(rt, fake_compiler());
    return rt;
}

tilec_rt_library *test_lib(tilec_rt *rt, const char *name, const char *program)
{
    char *path = test_write(name, program);
    tilec_rt_library_options lo;
    memset(&lo, 0, sizeof lo);
    lo.source = path;
    tilec_rt_library *lib = NULL;
    CHECK_OK(tilec_rt_library_open(rt, &lo, &lib));
    free(path);
    if (!lib)
        exit(1);
    return lib;
}

tilec_rt_kernel *test_kernel(tilec_rt_library *lib, const char *kernel, const char *g0, const char *g1)
{
    const char *g[2] = {g0, g1};
    tilec_rt_kernel *k = NULL;
    CHECK_OK(tilec_rt_get_kernel(lib, kernel, g, g1 ? 2 : g0 ? 1 : 0, &k));
    if (!k)
        exit(1);
    return k;
}

static int rt_run_case(const rt_test_case *c)
{
    if (getenv("TILEC_LIBCUDA"))
        fake_log_clear();
    int before = rt_failed;
    c->fn();
    printf("%s: %s\n", c->name, rt_failed == before ? "ok" : "FAILED");
    printf("%d checks, %d failed\n", rt_checks, rt_failed);
    if (!rt_failed && rt_dir[0])
        nftw(rt_dir, rt_rm, 16, FTW_DEPTH | FTW_PHYS);
    return rt_failed ? 1 : 0;
}

/* Without an argument every case runs in a child process of its own: the driver table and the
 * cache warning are per process, as they are under CTest. */
int rt_test_main(int argc, char **argv, const rt_test_case *cases, int ncases)
{
    if (argc > 1) {
        for (int i = 0; i < ncases; i++)
            if (!strcmp(argv[1], cases[i].name))
                return rt_run_case(&cases[i]);
        fprintf(stderr, "no test case named '%s'\n", argv[1]);
        return 2;
    }
    int failed = 0;
    for (int i = 0; i < ncases; i++) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0)
            _exit(rt_run_case(&cases[i]));
        int status = 1;
        if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "%s: FAILED (status %d)\n", cases[i].name, status);
            failed++;
        }
    }
    printf("%d of %d cases failed\n", failed, ncases);
    return failed ? 1 : 0;
}
