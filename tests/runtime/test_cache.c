/* test_cache.c — the disk cache: 16 processes racing on the same keys (one compile per key, no
 * corrupt or partial entry), corrupt / truncated / foreign entries rebuilt, unusable directories
 * degrading to memory with one warning, key completeness, memory-only mode, default locations;
 * and what the cache does not trust: FIFOs, sockets, devices, directories and symbolic links at
 * an entry's or a lock's path, a lock held by a stalled process (a bounded wait), entries that
 * pass their checksum but do not load, directories and entries owned by another user or
 * writable by group or others; warnings carry the error's text. Cases that would block on a
 * regression run under an alarm, so that they fail instead of hanging. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
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
    if (geteuid() == 0) /* nobody's own directory: only the missing write permission is wrong */
        CHECK(chown(ro, 65534, 65534) == 0);
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

/* ---- what the cache does not trust ---- */

static int captured_fd = -1; /* the real stderr while capture_start has redirected it */

/* A regression that blocks fails the case instead of hanging it. */
static void guard_fired(int sig)
{
    (void)sig;
    static const char msg[] = "timed out: the cache blocked\n";
    ssize_t r = write(captured_fd >= 0 ? captured_fd : 2, msg, sizeof msg - 1);
    (void)r;
    _exit(3);
}

static void guard(unsigned seconds)
{
    signal(SIGALRM, guard_fired);
    alarm(seconds);
}

/* stderr of this process into a file between capture_start and capture_end (which returns it
 * and echoes it on stdout, for the log of a failing case) */

static void capture_start(void)
{
    char *p = test_path("captured.txt");
    fflush(stderr);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    captured_fd = dup(2);
    dup2(fd, 2);
    close(fd);
    free(p);
}

static char *capture_end(void)
{
    fflush(stderr);
    dup2(captured_fd, 2);
    close(captured_fd);
    captured_fd = -1;
    char *p = test_path("captured.txt");
    char *t = test_read(p);
    free(p);
    printf("stderr: [%s]\n", t ? t : "");
    return t ? t : strdup("");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A session on dir for c<N=1> with its stderr captured: the counters, and what it printed. */
static tilec_rt_stats session_err(const char *dir, char **err)
{
    capture_start();
    tilec_rt_stats st = session(dir, 0, 1);
    *err = capture_end();
    return st;
}

/* The entry of c<N=1> (made by a first session) and its lock. */
static void first_entry(const char *dir, char *entry, char *lock, size_t cap)
{
    tilec_rt_stats st = session(dir, 0, 1);
    CHECK(st.compiles == 1);
    CHECK(count_files(dir, ".tlc", entry, cap) == 1);
    CHECK(count_files(dir, ".lock", lock, cap) == 1);
}

static int is_regular(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == geteuid();
}

/* Something other than a regular file at the entry's path: rejected with a warning without
 * being opened for reading (a FIFO would block), compiled, and replaced by a rename. */
static void test_fifo_entry(void)
{
    char *dir = test_path("cache");
    char entry[1024], lock[1024], want[2048];
    guard(30);
    first_entry(dir, entry, lock, sizeof entry);
    const char *kinds[] = {"a FIFO", "a socket", "a character device"};
    for (int i = 0; i < 3; i++) {
        CHECK(unlink(entry) == 0);
        const char *errtext = "";
        if (i == 0) {
            CHECK(mkfifo(entry, 0600) == 0);
        } else if (i == 1) {
            int sfd = socket(AF_UNIX, SOCK_STREAM, 0);
            struct sockaddr_un sa;
            memset(&sa, 0, sizeof sa);
            sa.sun_family = AF_UNIX;
            CHECK(strlen(entry) < sizeof sa.sun_path);
            snprintf(sa.sun_path, sizeof sa.sun_path, "%s", entry);
            CHECK(sfd >= 0 && bind(sfd, (struct sockaddr *)&sa, sizeof sa) == 0);
            close(sfd); /* the socket file stays */
            errtext = " (No such device or address)"; /* what opening a socket fails with */
        } else if (mknod(entry, S_IFCHR | 0600, makedev(1, 3)) != 0) { /* a /dev/null */
            printf("character device: skipped (mknod: %s)\n", strerror(errno));
            session(dir, 0, 1);
            continue;
        }
        char *err;
        tilec_rt_stats st = session_err(dir, &err);
        if (!(st.compiles == 1 && st.disk_rejects == 1 && st.disk_hits == 0))
            printf("  %s: compiles %llu, rejects %llu, hits %llu\n", kinds[i], (unsigned long long)st.compiles,
                   (unsigned long long)st.disk_rejects, (unsigned long long)st.disk_hits);
        CHECK(st.compiles == 1 && st.disk_rejects == 1 && st.disk_hits == 0);
        snprintf(want, sizeof want,
                 "tilec: warning: cache entry '%s' is %s, not a regular file%s; compiling c<N=1> instead\n", entry,
                 kinds[i], errtext);
        CHECK_STR(err, want); /* one warning, though the entry is looked at twice (before and under the lock) */
        free(err);
        CHECK(is_regular(entry)); /* a fresh entry renamed over it */
        st = session(dir, 0, 1);
        CHECK(st.disk_hits == 1 && st.compiles == 0);
    }
    /* a FIFO at the lock's path: not used as a lock, and nothing blocks */
    CHECK(unlink(entry) == 0 && unlink(lock) == 0 && mkfifo(lock, 0600) == 0);
    char *err;
    tilec_rt_stats st = session_err(dir, &err);
    CHECK(st.compiles == 1);
    snprintf(want, sizeof want,
             "tilec: warning: cache lock '%s' is a FIFO, not a regular file; compiling c<N=1> without it\n", lock);
    CHECK_STR(err, want);
    free(err);
    CHECK(is_regular(entry));
    alarm(0);
    free(dir);
}

/* A directory at the entry's path: rejected, the kernel compiled and kept in memory, the
 * directory and what it holds left alone (a rename cannot replace it), no temporary file left. */
static void test_dir_entry(void)
{
    char *dir = test_path("cache");
    char entry[1024], lock[1024], want[4096], inner[1100];
    guard(30);
    first_entry(dir, entry, lock, sizeof entry);
    CHECK(unlink(entry) == 0 && mkdir(entry, 0700) == 0);
    snprintf(inner, sizeof inner, "%s/keep", entry);
    FILE *f = fopen(inner, "w");
    CHECK(f != NULL);
    fputs("kept", f);
    fclose(f);
    for (int round = 0; round < 2; round++) {
        char *err;
        tilec_rt_stats st = session_err(dir, &err);
        CHECK(st.compiles == 1 && st.disk_rejects == 1 && st.disk_hits == 0);
        snprintf(want, sizeof want,
                 "tilec: warning: cache entry '%s' is a directory, not a regular file; compiling c<N=1> instead\n"
                 "tilec: warning: cannot write cache entry '%s' (Is a directory); compiled kernels that cannot be "
                 "written are kept in memory only\n",
                 entry, entry);
        CHECK_STR(err, round ? "" : want); /* the process was told once */
        free(err);
    }
    struct stat sb;
    CHECK(lstat(entry, &sb) == 0 && S_ISDIR(sb.st_mode));
    char *kept = test_read(inner);
    CHECK_STR(kept, "kept");
    free(kept);
    CHECK(count_files(dir, "", NULL, 0) == 4); /* ., .., the directory and the lock */
    alarm(0);
    free(dir);
}

/* Symbolic links are not followed, neither at an entry's path (a link to a valid entry is not
 * used, and the rename replaces the link, not its target) nor at a lock's. */
static void test_symlink_entry(void)
{
    char *dir = test_path("cache");
    char entry[1024], lock[1024], want[2048];
    guard(30);
    first_entry(dir, entry, lock, sizeof entry);
    char *planted = test_path("planted.tlc");
    CHECK(rename(entry, planted) == 0 && symlink(planted, entry) == 0);
    char *before = test_read(planted);
    char *err;
    tilec_rt_stats st = session_err(dir, &err);
    CHECK(st.compiles == 1 && st.disk_rejects == 1 && st.disk_hits == 0);
    snprintf(want, sizeof want,
             "tilec: warning: cache entry '%s' is a symbolic link (Too many levels of symbolic links); compiling "
             "c<N=1> instead\n",
             entry);
    CHECK_STR(err, want);
    free(err);
    CHECK(is_regular(entry));
    char *after = test_read(planted);
    CHECK(before && after && !strcmp(before, after));
    free(before);
    free(after);
    /* a link at the lock's path: nothing is created where it points, the entry is still written */
    char *victim = test_path("victim");
    CHECK(unlink(entry) == 0 && unlink(lock) == 0 && symlink(victim, lock) == 0);
    st = session_err(dir, &err);
    CHECK(st.compiles == 1);
    snprintf(want, sizeof want,
             "tilec: warning: cache lock '%s' is a symbolic link (Too many levels of symbolic links); compiling "
             "c<N=1> without it\n",
             lock);
    CHECK_STR(err, want);
    free(err);
    CHECK(access(victim, F_OK) != 0);
    CHECK(is_regular(entry));
    CHECK(session(dir, 0, 1).disk_hits == 1);
    alarm(0);
    free(victim);
    free(planted);
    free(dir);
}

/* A process that holds a key's lock and stalls (here: a compile that sleeps ten minutes) delays
 * another process by the bound, not forever: it warns once, naming the lock, compiles and
 * writes the entry (so that later processes do not wait at all). */
static void test_stale_lock(void)
{
    char *dir = test_path("cache");
    char *log = test_path("stalled.log");
    free(test_write("cache.fake", program));
    guard(60);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(120); /* never outlives the test by long */
        setenv("TILEC_FAKE_COMPILE_LOG", log, 1);
        setenv("TILEC_FAKE_COMPILE_DELAY_MS", "600000", 1);
        session(dir, 0, 1);
        _exit(0);
    }
    CHECK(pid > 0);
    int started = 0; /* the child compiles under the lock once its compile is logged */
    for (int i = 0; i < 2000 && !started; i++) {
        char *t = test_read(log);
        started = t && strstr(t, "c<N=1>\n");
        free(t);
        if (!started)
            usleep(5000);
    }
    CHECK(started);
    char lock[1024], want[2048];
    CHECK(count_files(dir, ".lock", lock, sizeof lock) == 1);
    CHECK(count_files(dir, ".tlc", NULL, 0) == 0);

    setenv("TILEC_CACHE_LOCK_TIMEOUT", "1", 1);
    double t0 = now_s();
    char *err;
    tilec_rt_stats st = session_err(dir, &err);
    double waited = now_s() - t0;
    printf("waited %.3f s for a lock held by a stalled process (bound 1 s)\n", waited);
    CHECK(st.compiles == 1 && st.disk_hits == 0);
    CHECK(waited >= 0.95 && waited < 1 + 4);
    snprintf(want, sizeof want,
             "tilec: warning: cache lock '%s' is still held after 1 s (Resource temporarily unavailable); "
             "compiling c<N=1> without waiting for it\n",
             lock);
    CHECK_STR(err, want);
    free(err);
    /* the entry was written anyway: the next process reads it without taking the lock */
    t0 = now_s();
    st = session(dir, 0, 1);
    CHECK(st.disk_hits == 1 && st.compiles == 0 && now_s() - t0 < 0.9);

    /* a bound of 0: one try, no wait */
    char entry[1024];
    CHECK(count_files(dir, ".tlc", entry, sizeof entry) == 1 && unlink(entry) == 0);
    setenv("TILEC_CACHE_LOCK_TIMEOUT", "0", 1);
    t0 = now_s();
    st = session_err(dir, &err);
    CHECK(st.compiles == 1 && now_s() - t0 < 0.9);
    CHECK_CONTAINS(err, "is still held after 0 s (Resource temporarily unavailable)");
    free(err);
    unsetenv("TILEC_CACHE_LOCK_TIMEOUT");

    kill(pid, SIGKILL);
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status));
    alarm(0);
    free(log);
    free(dir);
}

/* The key stored in an entry file (after the 48-byte header; its length at offset 16). */
static char *entry_key(const char *path)
{
    char *text;
    size_t len;
    if (rt_read_file(path, &text, &len) != TILEC_OK || len < 48)
        return NULL;
    uint64_t key_len;
    memcpy(&key_len, text + 16, 8);
    char *key = key_len <= len - 48 ? strndup(text + 48, (size_t)key_len) : NULL;
    free(text);
    return key;
}

/* Rewrites the entry at path, through the cache's own writer (so its checksum is valid), with
 * another signature or payload. */
static void plant(const char *dir, const char *path, const char *sig, const char *payload)
{
    char *key = entry_key(path);
    CHECK(key != NULL);
    if (!key)
        return;
    rt_entry e;
    int found = 0, rejected = 0;
    CHECK_OK(rt_cache_load(dir, key, &e, &found, &rejected));
    CHECK(found);
    if (sig) {
        free(e.sig);
        e.sig = strdup(sig);
        e.sig_len = strlen(sig);
    }
    if (payload) {
        free(e.payload);
        e.payload = strdup(payload);
        e.payload_len = strlen(payload);
    }
    CHECK(rt_cache_store(dir, key, &e) == 0);
    rt_entry_free(&e);
    CHECK_OK(rt_cache_load(dir, key, &e, &found, &rejected)); /* a whole entry with a valid checksum */
    CHECK(found && !rejected);
    rt_entry_free(&e);
    free(key);
}

/* An entry that passes its checksum but does not load is discarded, rebuilt and replaced. */
static void test_load_rejected(void)
{
    char *dir = test_path("cache");
    char entry[1024], lock[1024];
    first_entry(dir, entry, lock, sizeof entry);
    plant(dir, entry, NULL, "not an image\n"); /* the driver rejects it: CUDA_ERROR_INVALID_IMAGE */
    expect_rebuilt(dir, "payload the driver rejects");
    plant(dir, entry, "tilec-sig 1\nbogus\n", NULL); /* a signature that does not parse */
    expect_rebuilt(dir, "signature that does not parse");
    plant(dir, entry, "tilec-sig 1\nkernel d\nentry d\nkey d<>\narch sm_90a\nthreads 64\nflags\nnparams 0\ngrid 1\nend\n",
          NULL); /* another kernel's signature */
    expect_rebuilt(dir, "another kernel's signature");

    /* when the rebuilt kernel does not load either, that is the error: one rebuild, no loop */
    plant(dir, entry, NULL, "not an image\n");
    tilec_rt *rt = test_rt(0, dir);
    tilec_rt_library *lib = test_lib(rt, "cache.fake", program);
    const char *g[1] = {"N=1"};
    tilec_rt_kernel *k = NULL;
    fake_set("TILEC_FAKE_FAIL", "cuModuleLoadData=200");
    CHECK_ERR(tilec_rt_get_kernel(lib, "c", g, 1, &k), TILEC_ERROR_DRIVER,
              "cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid)");
    fake_set("TILEC_FAKE_FAIL", NULL);
    tilec_rt_stats st;
    CHECK_OK(tilec_rt_get_stats(rt, &st));
    CHECK(st.compiles == 1 && st.disk_rejects == 1 && st.disk_hits == 0);
    CHECK_OK(tilec_rt_get_kernel(lib, "c", g, 1, &k)); /* the rebuilt entry was written: it loads now */
    CHECK_OK(tilec_rt_get_stats(rt, &st));
    CHECK(st.compiles == 1 && st.disk_hits == 1);
    tilec_rt_destroy(rt);
    CHECK(fake_live() == 0);
    free(dir);
}

/* Cache directories that anyone else can write to, or that belong to someone else, are not
 * used (memory only, one warning saying why); the runtime creates its directories 0700 and
 * checks the directory at every use, not only when the runtime is created. */
static void test_dir_trust(void)
{
    free(test_write("cache.fake", program));
    char want[2048];
    const struct {
        const char *name;
        mode_t mode;
    } modes[] = {{"group-writable", 0770}, {"other-writable", 0757}, {"sticky", 01777}};
    for (int i = 0; i < 3; i++) {
        char *d = test_path(modes[i].name);
        CHECK(mkdir(d, 0700) == 0 && chmod(d, modes[i].mode) == 0);
        char *err = stderr_of(unusable, d, 0);
        snprintf(want, sizeof want,
                 "tilec: warning: cache directory '%s' is writable by group or others (mode %04o); caching "
                 "compiled kernels in memory only\n",
                 d, (unsigned)modes[i].mode);
        CHECK_STR(err, want);
        CHECK(count_files(d, "", NULL, 0) == 2); /* nothing written: only . and .. */
        free(err);
        free(d);
    }
    char *foreign = test_path("foreign");
    CHECK(mkdir(foreign, 0700) == 0);
    if (chown(foreign, 65534, 65534) != 0) {
        printf("directory of another user: skipped (chown: %s)\n", strerror(errno));
    } else {
        char *err = stderr_of(unusable, foreign, 0);
        snprintf(want, sizeof want,
                 "tilec: warning: cache directory '%s' is owned by uid 65534, not by this user (uid %u); caching "
                 "compiled kernels in memory only\n",
                 foreign, (unsigned)geteuid());
        CHECK_STR(err, want);
        CHECK(count_files(foreign, "", NULL, 0) == 2);
        free(err);
    }
    free(foreign);

    /* created with mode 0700, and so are the parents it creates */
    char *parent = test_path("fresh"), *fresh = test_path("fresh/cache");
    umask(0);
    tilec_rt *rt = test_rt(0, fresh);
    umask(022);
    CHECK_STR(tilec_rt_cache_dir(rt), fresh);
    struct stat sb;
    CHECK(stat(fresh, &sb) == 0 && (sb.st_mode & 07777) == 0700);
    CHECK(stat(parent, &sb) == 0 && (sb.st_mode & 07777) == 0700);
    /* the directory turns writable by others after the runtime checked it: not used from then on */
    tilec_rt_library *lib = test_lib(rt, "cache.fake", program);
    CHECK(chmod(fresh, 0777) == 0);
    capture_start();
    test_kernel(lib, "c", "N=1", NULL);
    test_kernel(lib, "c", "N=2", NULL);
    char *err = capture_end();
    snprintf(want, sizeof want,
             "tilec: warning: cache directory '%s' is writable by group or others (mode 0777); compiled kernels "
             "are not read from or written to it\n",
             fresh);
    CHECK_STR(err, want);
    free(err);
    CHECK(count_files(fresh, "", NULL, 0) == 2);
    tilec_rt_stats st;
    CHECK_OK(tilec_rt_get_stats(rt, &st));
    CHECK(st.compiles == 2);
    tilec_rt_destroy(rt);
    /* a symbolic link to a trusted directory is fine: what is checked is the directory */
    CHECK(chmod(fresh, 0700) == 0);
    char *link = test_path("link");
    CHECK(symlink(fresh, link) == 0);
    rt = test_rt(0, link);
    CHECK_STR(tilec_rt_cache_dir(rt), link);
    tilec_rt_destroy(rt);
    CHECK(session(link, 0, 1).compiles == 1 && session(link, 0, 1).disk_hits == 1);
    free(link);
    free(parent);
    free(fresh);
}

/* An entry file that belongs to someone else or that others can write to is not trusted. */
static void test_entry_trust(void)
{
    char *dir = test_path("cache");
    char entry[1024], lock[1024], want[2048];
    first_entry(dir, entry, lock, sizeof entry);
    const mode_t modes[] = {0666, 0620, 0602};
    for (int i = 0; i < 3; i++) {
        CHECK(chmod(entry, modes[i]) == 0);
        char *err;
        tilec_rt_stats st = session_err(dir, &err);
        CHECK(st.compiles == 1 && st.disk_rejects == 1 && st.disk_hits == 0);
        snprintf(want, sizeof want,
                 "tilec: warning: cache entry '%s' is writable by group or others (mode %04o); compiling c<N=1> "
                 "instead\n",
                 entry, (unsigned)modes[i]);
        CHECK_STR(err, want);
        free(err);
        struct stat sb;
        CHECK(is_regular(entry) && stat(entry, &sb) == 0 && !(sb.st_mode & 022));
    }
    if (chown(entry, 65534, 65534) != 0) {
        printf("entry of another user: skipped (chown: %s)\n", strerror(errno));
    } else {
        char *err;
        tilec_rt_stats st = session_err(dir, &err);
        CHECK(st.compiles == 1 && st.disk_rejects == 1 && st.disk_hits == 0);
        snprintf(want, sizeof want,
                 "tilec: warning: cache entry '%s' is owned by uid 65534, not by this user (uid %u); compiling "
                 "c<N=1> instead\n",
                 entry, (unsigned)geteuid());
        CHECK_STR(err, want);
        free(err);
        CHECK(is_regular(entry)); /* replaced by this user's entry */
    }
    CHECK(session(dir, 0, 1).disk_hits == 1);
    free(dir);
}

/* A lock that cannot be opened: the warning says why (errno's text), the kernel is compiled and
 * its entry written all the same. */
static void test_lock_errors(void)
{
    char *dir = test_path("cache");
    char entry[1024], lock[1024], want[2048];
    guard(30);
    first_entry(dir, entry, lock, sizeof entry);
    CHECK(unlink(entry) == 0 && unlink(lock) == 0 && mkdir(lock, 0700) == 0);
    char *err;
    tilec_rt_stats st = session_err(dir, &err);
    CHECK(st.compiles == 1);
    snprintf(want, sizeof want,
             "tilec: warning: cache lock '%s' is a directory, not a regular file (Is a directory); compiling c<N=1> "
             "without it\n",
             lock);
    CHECK_STR(err, want);
    free(err);
    CHECK(is_regular(entry));
    CHECK(session(dir, 0, 1).disk_hits == 1);
    alarm(0);
    free(dir);
}

int main(int argc, char **argv)
{
    static const rt_test_case cases[] = {
        RT_TEST(test_concurrent), RT_TEST(test_corrupt),     RT_TEST(test_unusable_dir), RT_TEST(test_quiet),
        RT_TEST(test_key),        RT_TEST(test_memory_only), RT_TEST(test_default_dir),
        RT_TEST(test_fifo_entry), RT_TEST(test_dir_entry),   RT_TEST(test_symlink_entry), RT_TEST(test_stale_lock),
        RT_TEST(test_load_rejected), RT_TEST(test_dir_trust), RT_TEST(test_entry_trust), RT_TEST(test_lock_errors),
    };
    return rt_test_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
