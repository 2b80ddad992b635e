/* test_cache.c — the disk cache: 16 processes racing on the same keys (one compile per key, no
 * corrupt or partial entry), corrupt / truncated / foreign entries rebuilt, unusable directories
 * degrading to memory with one warning, key completeness, memory-only mode, default locations. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_test.h"

static const char *const program =
    "@kernel c\n"
    "@default N 0\n"
    "@sig\n"
    "tilec-sig 1\nkernel c\nentry c_$N\nkey c<N=$N>\narch $ARCH\nthreads 64\nflags\nnparams 1\n"
    "tensor 0 x f32 1 4\ndim 0 0 (bind L)\ngrid (cdiv L 64)\nend\n"
    "@kernel d\n"
    "@sig\n"
    "tilec-sig 1\nkernel d\nentry d\nkey d<>\narch $ARCH\nthreads 64\nflags\nnparams 0\ngrid 1\nend\n";

/* Counts directory entries whose names end in `suffix`. */
static int count_files(const char *dir, const char *suffix, char *first, size_t cap)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name), s = strlen(suffix);
        if (l >= s && !strcmp(e->d_name + l - s, suffix)) {
            if (!n && first)
                snprintf(first, cap, "%s/%s", dir, e->d_name);
            n++;
        }
    }
    closedir(d);
    return n;
}

/* One session: a runtime on `dir`, kernel c<N=n>, one launch; returns the runtime's counters. */
static tilec_rt_stats session(const char *dir, unsigned flags, int n)
{
    tilec_rt *rt = test_rt(flags, dir);
    tilec_rt_library *lib = test_lib(rt, "cache.fake", program);
    char g[32];
    snprintf(g, sizeof g, "N=%d", n);
    tilec_rt_kernel *k = test_kernel(lib, "c", g, NULL);
    int64_t len[1] = {640};
    tilec_rt_arg x[1] = {tilec_rt_arg_tensor((void *)0x40, TILEC_RT_F32, 1, len, NULL)};
    CHECK_OK(tilec_rt_launch(k, x, 1, NULL));
    tilec_rt_stats st;
    CHECK_OK(tilec_rt_get_stats(rt, &st));
    tilec_rt_destroy(rt);
    return st;
}

enum { NPROC = 16, NKEYS = 6 };

static int child(const char *dir, int id, int start_fd)
{
    char c;
    if (read(start_fd, &c, 1) < 0) /* returns 0 when the parent closes the pipe: all start at once */
        return 3;
    tilec_rt_options o = tilec_rt_default_options();
    o.cache_dir = dir;
    tilec_rt *rt = NULL;
    if (tilec_rt_create(&o, &rt) != TILEC_OK)
        return 4;
    rt_set_compiler(rt, fake_compiler());
    char *path = test_path("cache.fake");
    tilec_rt_library_options lo;
    memset(&lo, 0, sizeof lo);
    lo.source = path;
    tilec_rt_library *lib = NULL;
    int bad = tilec_rt_library_open(rt, &lo, &lib) != TILEC_OK;
    for (int i = 0; i < NKEYS && !bad; i++) {
        char g[32];
        snprintf(g, sizeof g, "N=%d", (id + i) % NKEYS);
        const char *gs[1] = {g};
        tilec_rt_kernel *k = NULL;
        int64_t len[1] = {64};
        tilec_rt_arg x[1] = {tilec_rt_arg_tensor((void *)0x40, TILEC_RT_F32, 1, len, NULL)};
        bad = tilec_rt_get_kernel(lib, "c", gs, 1, &k) != TILEC_OK || tilec_rt_launch(k, x, 1, NULL) != TILEC_OK;
        if (bad)
            fprintf(stderr, "child %d: %s\n", id, tilec_rt_last_error());
    }
    tilec_rt_destroy(rt);
    free(path);
    return bad;
}

static void test_concurrent(void)
{
    char *dir = test_path("cache");
    char *log = test_path("compiles.log");
    free(test_write("cache.fake", program));
    setenv("TILEC_FAKE_COMPILE_LOG", log, 1);
    setenv("TILEC_FAKE_COMPILE_DELAY_MS", "30", 1); /* compiles overlap: the locks must hold */
    int start[2];
    CHECK(pipe(start) == 0);
    pid_t pids[NPROC];
    fflush(NULL);
    for (int i = 0; i < NPROC; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            close(start[1]);
            _exit(child(dir, i, start[0]));
        }
    }
    close(start[0]);
    close(start[1]);
    int ok = 0;
    for (int i = 0; i < NPROC; i++) {
        int status;
        ok += waitpid(pids[i], &status, 0) == pids[i] && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    unsetenv("TILEC_FAKE_COMPILE_DELAY_MS");
    unsetenv("TILEC_FAKE_COMPILE_LOG");
    CHECK(ok == NPROC);
    char *text = test_read(log);
    CHECK(test_count(text, "\n") == NKEYS); /* one compile per key, over all processes */
    for (int n = 0; n < NKEYS; n++) {
        char line[32];
        snprintf(line, sizeof line, "c<N=%d>\n", n);
        CHECK(test_count(text, line) == 1);
    }
    free(text);
    CHECK(count_files(dir, ".tlc", NULL, 0) == NKEYS);
    CHECK(count_files(dir, ".lock", NULL, 0) == NKEYS);
    CHECK(count_files(dir, "", NULL, 0) == 2 * NKEYS + 2); /* nothing else: no temporary files left */
    /* every entry is whole: a fresh process loads all of them without compiling */
    tilec_rt *rt = test_rt(0, dir);
    tilec_rt_library *lib = test_lib(rt, "cache.fake", program);
    for (int n = 0; n < NKEYS; n++) {
        char g[32];
        snprintf(g, sizeof g, "N=%d", n);
        test_kernel(lib, "c", g, NULL);
    }
    tilec_rt_stats st;
    CHECK_OK(tilec_rt_get_stats(rt, &st));
    CHECK(st.disk_hits == NKEYS && st.compiles == 0 && st.disk_rejects == 0);
    tilec_rt_destroy(rt);
    free(dir);
    free(log);
}

static void write_bytes(const char *path, const void *p, size_t n, int trunc_to)
{
    int fd = open(path, O_WRONLY);
    CHECK(fd >= 0);
    if (p)
        CHECK(pwrite(fd, p, n, (off_t)trunc_to) == (ssize_t)n);
    else
        CHECK(ftruncate(fd, trunc_to) == 0);
    close(fd);
}

static void expect_rebuilt(const char *dir, const char *what)
{
    tilec_rt_stats st = session(dir, 0, 1);
    if (!(st.compiles == 1 && st.disk_rejects == 1 && st.disk_hits == 0))
        fprintf(stderr, "  %s: compiles %llu, rejects %llu, hits %llu\n", what, (unsigned long long)st.compiles,
                (unsigned long long)st.disk_rejects, (unsigned long long)st.disk_hits);
    CHECK(st.compiles == 1 && st.disk_rejects == 1 && st.disk_hits == 0);
    st = session(dir, 0, 1); /* and the rebuilt entry is good */
    CHECK(st.compiles == 0 && st.disk_hits == 1);
}

static void test_corrupt(void)
{
    char *dir = test_path("cache");
    tilec_rt_stats st = session(dir, 0, 1);
    CHECK(st.compiles == 1 && st.disk_hits == 0);
    st = session(dir, 0, 1);
    CHECK(st.compiles == 0 && st.disk_hits == 1);
    char entry[1024];
    CHECK(count_files(dir, ".tlc", entry, sizeof entry) == 1);
    struct stat sb;
    CHECK(stat(entry, &sb) == 0);

    write_bytes(entry, "X", 1, (int)sb.st_size - 20); /* a flipped byte in the payload */
    expect_rebuilt(dir, "payload byte");
    write_bytes(entry, "X", 1, 100); /* in the key */
    expect_rebuilt(dir, "key byte");
    write_bytes(entry, "TILECRT", 7, 0); /* the magic */
    expect_rebuilt(dir, "magic");
    write_bytes(entry, NULL, 0, (int)sb.st_size / 2);
    expect_rebuilt(dir, "truncated");
    write_bytes(entry, NULL, 0, 0);
    expect_rebuilt(dir, "empty");
    write_bytes(entry, "\xff\xff\xff\xff\xff\xff\xff\x7f", 8, 32); /* an absurd payload length */
    expect_rebuilt(dir, "length");
    /* a whole, valid entry of another key under this key's name */
    session(dir, 0, 2);
    char other[1024];
    DIR *d = opendir(dir);
    other[0] = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strstr(e->d_name, ".tlc") && !strstr(entry, e->d_name))
            snprintf(other, sizeof other, "%s/%s", dir, e->d_name);
    closedir(d);
    CHECK(other[0] && rename(other, entry) == 0);
    expect_rebuilt(dir, "foreign");
    /* a leftover temporary file from a writer that died does not matter */
    char stale[1200];
    snprintf(stale, sizeof stale, "%s.tmp.1.1", entry);
    FILE *f = fopen(stale, "w");
    fputs("partial", f);
    fclose(f);
    st = session(dir, 0, 1);
    CHECK(st.disk_hits == 1);
    free(dir);
}

/* Runs fn in a child with stderr sent to a file; returns what it printed. */
static char *stderr_of(void (*fn)(const char *), const char *arg, int as_nobody)
{
    char *out = test_path("stderr.txt");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0666);
        dup2(fd, 2);
        if (as_nobody && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(7);
        fn(arg);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    char *text = test_read(out);
    free(out);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        free(text);
        return WIFEXITED(status) && WEXITSTATUS(status) == 7 ? strdup("(setuid failed)") : NULL;
    }
    return text;
}

/* two runtimes on an unusable directory: both work from memory; the warning comes once (the
 * program file is written beforehand: this may run as nobody) */
static void unusable(const char *dir)
{
    char *path = test_path("cache.fake");
    for (int i = 0; i < 2; i++) {
        tilec_rt *rt = test_rt(0, dir);
        if (tilec_rt_cache_dir(rt))
            _exit(5);
        tilec_rt_library_options lo;
        memset(&lo, 0, sizeof lo);
        lo.source = path;
        tilec_rt_library *lib = NULL;
        if (tilec_rt_library_open(rt, &lo, &lib) != TILEC_OK)
            _exit(4);
        test_kernel(lib, "c", "N=1", NULL);
        test_kernel(lib, "c", "N=1", NULL);
        tilec_rt_stats st;
        tilec_rt_get_stats(rt, &st);
        if (st.compiles != 1 || st.memory_hits != 1)
            _exit(6);
        tilec_rt_destroy(rt);
    }
    free(path);
}

static void test_unusable_dir(void)
{
    free(test_write("cache.fake", program));
    char *file = test_write("plainfile", "x");
    char dir[1024], want[2048];
    snprintf(dir, sizeof dir, "%s/cache", file);
    snprintf(want, sizeof want,
             "tilec: warning: cannot create cache directory '%s' (Not a directory); caching compiled kernels in memory "
             "only\n",
             dir);
    char *err = stderr_of(unusable, dir, 0);
    CHECK_STR(err, want); /* exactly one warning */
    free(err);

    /* a read-only directory (as root, which may write anywhere, the check runs as nobody) */
    char *ro = test_path("readonly");
    mkdir(ro, 0555);
    chmod(ro, 0555);
    chmod(test_dir(), 0755);
    err = stderr_of(unusable, ro, geteuid() == 0);
    if (err && !strcmp(err, "(setuid failed)")) {
        printf("read-only directory: skipped (cannot drop root privileges here)\n");
    } else {
        snprintf(want, sizeof want,
                 "tilec: warning: cache directory '%s' is not writable (Permission denied); caching compiled kernels "
                 "in memory only\n",
                 ro);
        CHECK_STR(err, want);
        CHECK(count_files(ro, "", NULL, 0) == 2); /* . and .. */
    }
    free(err);
    free(file);
    free(ro);
}

static void quiet(const char *dir)
{
    tilec_rt_options o = tilec_rt_default_options();
    o.cache_dir = dir;
    o.flags = TILEC_RT_QUIET;
    tilec_rt *rt = NULL;
    if (tilec_rt_create(&o, &rt) != TILEC_OK || tilec_rt_cache_dir(rt))
        _exit(5);
    tilec_rt_destroy(rt);
}

static void test_quiet(void)
{
    char *file = test_write("plainfile", "x");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/cache", file);
    char *err = stderr_of(quiet, dir, 0);
    CHECK_STR(err, "");
    free(err);
    free(file);
}

/* Changing any input of the key recompiles; changing anything else does not. */
static void test_key(void)
{
    char *dir = test_path("cache");
    CHECK(session(dir, 0, 1).compiles == 1);
    CHECK(session(dir, 0, 1).compiles == 0);
    CHECK(session(dir, TILEC_RT_QUIET, 1).compiles == 0);  /* flags outside the key */
    fake_set("TILEC_FAKE_SMS", "64");                      /* the SM count is not in the key */
    CHECK(session(dir, 0, 1).compiles == 0);
    fake_set("TILEC_FAKE_SMS", NULL);
    CHECK(session(dir, 0, 2).compiles == 1);               /* generic value */
    setenv("TILEC_FAKE_COMPILER_VERSION", "fake-compiler 2", 1);
    CHECK(session(dir, 0, 1).compiles == 1);               /* compiler version */
    unsetenv("TILEC_FAKE_COMPILER_VERSION");
    CHECK(session(dir, 0, 1).compiles == 0);
    fake_set("TILEC_FAKE_CC", "100");
    CHECK(session(dir, 0, 1).compiles == 1);               /* arch */
    fake_set("TILEC_FAKE_CC", NULL);
    fake_set("TILEC_FAKE_DRIVER_VERSION", "13010");
    CHECK(session(dir, 0, 1).compiles == 1);               /* the driver that links the cubin */
    fake_set("TILEC_FAKE_DRIVER_VERSION", NULL);
    CHECK(session(dir, 0, 1).compiles == 0);
    /* options: opt level */
    tilec_rt_options o = tilec_rt_default_options();
    o.cache_dir = dir;
    o.opt_level = 2;
    tilec_rt *rt = NULL;
    CHECK_OK(tilec_rt_create(&o, &rt));
    rt_set_compiler(rt, fake_compiler());
    tilec_rt_library *lib = test_lib(rt, "cache.fake", program);
    test_kernel(lib, "c", "N=1", NULL);
    tilec_rt_stats st;
    CHECK_OK(tilec_rt_get_stats(rt, &st));
    CHECK(st.compiles == 1);
    /* kernel name, within the same program */
    test_kernel(lib, "d", NULL, NULL);
    CHECK_OK(tilec_rt_get_stats(rt, &st));
    CHECK(st.compiles == 2);
    tilec_rt_destroy(rt);
    /* the program's text (a new comment line changes its hash) */
    rt = test_rt(0, dir);
    char *changed = malloc(strlen(program) + 32);
    sprintf(changed, "# edited\n%s", program);
    lib = test_lib(rt, "cache.fake", changed);
    test_kernel(lib, "c", "N=1", NULL);
    CHECK_OK(tilec_rt_get_stats(rt, &st));
    CHECK(st.compiles == 1);
    tilec_rt_destroy(rt);
    free(changed);
    CHECK(session(dir, 0, 1).compiles == 0);
    free(dir);
}

static void test_memory_only(void)
{
    char *dir = test_path("cache");
    mkdir(dir, 0755);
    tilec_rt *rt = test_rt(TILEC_RT_NO_DISK_CACHE, dir);
    CHECK(tilec_rt_cache_dir(rt) == NULL);
    tilec_rt_library *lib = test_lib(rt, "cache.fake", program);
    tilec_rt_kernel *a = test_kernel(lib, "c", "N=1", NULL);
    tilec_rt_kernel *b = test_kernel(lib, "c", "N=1", NULL);
    CHECK(a == b);
    /* a second library over the same source shares nothing in memory */
    tilec_rt_library *lib2 = test_lib(rt, "cache.fake", program);
    tilec_rt_kernel *c = test_kernel(lib2, "c", "N=1", NULL);
    CHECK(c != a);
    tilec_rt_stats st;
    CHECK_OK(tilec_rt_get_stats(rt, &st));
    CHECK(st.compiles == 2 && st.memory_hits == 1 && st.disk_hits == 0);
    tilec_rt_destroy(rt);
    CHECK(count_files(dir, "", NULL, 0) == 2); /* only . and .. */
    CHECK(session(dir, TILEC_RT_NO_DISK_CACHE, 1).compiles == 1);
    CHECK(fake_live() == 0);
    free(dir);
}

static void test_default_dir(void)
{
    char *env_dir = test_path("from-env/tilec");
    setenv("TILEC_CACHE_DIR", env_dir, 1);
    tilec_rt *rt = test_rt(0, NULL);
    CHECK_STR(tilec_rt_cache_dir(rt), env_dir);
    tilec_rt_destroy(rt);
    char *explicit = test_path("explicit");
    rt = test_rt(0, explicit); /* the option wins over the environment */
    CHECK_STR(tilec_rt_cache_dir(rt), explicit);
    tilec_rt_destroy(rt);
    unsetenv("TILEC_CACHE_DIR");
    char *home = test_path("home");
    setenv("HOME", home, 1);
    rt = test_rt(0, NULL);
    char want[1024];
    snprintf(want, sizeof want, "%s/.cache/tilec", home);
    CHECK_STR(tilec_rt_cache_dir(rt), want);
    struct stat sb;
    CHECK(stat(want, &sb) == 0 && S_ISDIR(sb.st_mode));
    tilec_rt_destroy(rt);
    free(env_dir);
    free(explicit);
    free(home);
}

int main(int argc, char **argv)
{
    static const rt_test_case cases[] = {
        RT_TEST(test_concurrent), RT_TEST(test_corrupt),     RT_TEST(test_unusable_dir), RT_TEST(test_quiet),
        RT_TEST(test_key),        RT_TEST(test_memory_only), RT_TEST(test_default_dir),
    };
    return rt_test_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
