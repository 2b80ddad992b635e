/* rt_cache.c — the disk cache: one file per specialisation, named by a hash of its key, with a
 * header (magic, format version, lengths, checksum) and the full key, written to a temporary
 * file and renamed into place, so that a reader sees a whole entry or none. A per-key flock
 * makes concurrent processes compile a key once; the wait for it is bounded.
 *
 * What it trusts: a cache directory owned by this user and not writable by group or others,
 * checked when the runtime is created and again at every use (each use opens the directory and
 * works relative to that descriptor, so what was checked is what is used); entry files that are
 * regular files reached without following a symbolic link, owned by this user and not writable
 * by group or others; then an entry's header, its key byte for byte and its checksum; then the
 * loader (rt_library.c rebuilds an entry the driver or the emulator rejects). Nothing else is
 * read: a FIFO, socket, device or directory at an entry's path is rejected without a read (a
 * FIFO would block), and opens never block (O_NONBLOCK). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rt_internal.h"

#define RT_CACHE_MAGIC "tilecrt\n"
#define RT_CACHE_FORMAT 1u
#define RT_CACHE_MAX_ENTRY (1ull << 30)
/* How long a process waits for another's lock on a key before compiling it itself (seconds);
 * $TILEC_CACHE_LOCK_TIMEOUT overrides it (0 to 3600, fractions allowed; 0: do not wait). */
#define RT_CACHE_LOCK_WAIT_S 5.0

typedef struct rt_cache_header {
    char magic[8];
    uint32_t format;
    uint32_t kind;
    uint64_t key_len, sig_len, payload_len;
    uint64_t checksum; /* over key, signature and payload */
} rt_cache_header;

void rt_entry_free(rt_entry *e)
{
    free(e->sig);
    free(e->payload);
    memset(e, 0, sizeof *e);
}

void rt_cache_stem(const char *key, char out[17])
{
    snprintf(out, 17, "%016llx", (unsigned long long)rt_hash(key, strlen(key), 0x74696c6563ull));
}

static uint64_t rt_entry_checksum(const char *key, size_t key_len, const char *sig, size_t sig_len,
                                  const char *payload, size_t payload_len)
{
    uint64_t h = rt_hash(key, key_len, 1);
    h = rt_hash(sig, sig_len, h);
    return rt_hash(payload, payload_len, h);
}

/* ---- warnings ---- */

/* A warning about one entry or lock (slot 0: entries, 1: locks). A thread does not repeat the
 * warning it gave last in a slot: an entry is looked at before its lock is taken and again
 * under it, and a process that opens the same program twice meets the same entry twice. */
static void rt_warn_file(int slot, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rt_warn_file(int slot, const char *fmt, ...)
{
    static _Thread_local char last[2][1024];
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (!strcmp(line, last[slot]))
        return;
    memcpy(last[slot], line, sizeof line);
    fprintf(stderr, "tilec: warning: %s\n", line);
}

/* A warning given at most once per process (flag: its own). */
static void rt_warn_once(atomic_int *flag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rt_warn_once(atomic_int *flag, const char *fmt, ...)
{
    if (atomic_exchange(flag, 1))
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "tilec: warning: %s\n", line);
}

/* "c<N=1>", from the key's kernel and generics lines (for warnings) */
static void rt_key_what(const char *key, char *out, size_t cap)
{
    const char *k = strstr(key, "\nkernel "), *g = strstr(key, "\ngenerics ");
    if (!k || !g) {
        snprintf(out, cap, "the kernel");
        return;
    }
    k += 8;
    g += 10;
    snprintf(out, cap, "%.*s<%.*s>", (int)strcspn(k, "\n"), k, (int)strcspn(g, "\n"), g);
}

/* ---- what is trusted ---- */

static const char *rt_file_type(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISSOCK(m) ? "a socket"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISLNK(m)  ? "a symbolic link"
                         : "of an unknown type";
}

/* Owned by this user and not writable by group or others; else what is wrong, in why. */
static int rt_owned(const struct stat *st, char *why, size_t cap)
{
    if (st->st_uid != geteuid()) {
        snprintf(why, cap, "is owned by uid %u, not by this user (uid %u)", (unsigned)st->st_uid, (unsigned)geteuid());
        return 0;
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, cap, "is writable by group or others (mode %04o)", (unsigned)(st->st_mode & 07777));
        return 0;
    }
    return 1;
}

/* A descriptor of the cache directory for the *at calls, if it can be trusted: a directory
 * (the path may go through symbolic links; what is checked is the directory it reaches) that
 * rt_owned accepts. Otherwise -1, with what is wrong in why. */
static int rt_dir_open(const char *dir, char *why, size_t cap)
{
#ifdef O_PATH
    int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
#else
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
#endif
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(why, cap, "cannot be opened (%s)", strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (!rt_owned(&st, why, cap)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* rt_dir_open for a use of the directory after the runtime was created: one warning per
 * process when it is no longer trusted (or gone). */
static int rt_dir_use(const char *dir)
{
    static atomic_int warned;
    char why[256];
    int fd = rt_dir_open(dir, why, sizeof why);
    if (fd < 0)
        rt_warn_once(&warned, "cache directory '%s' %s; compiled kernels are not read from or written to it", dir,
                     why);
    return fd;
}

/* Opens name in the directory dfd: never through a symbolic link (O_NOFOLLOW), never blocking
 * (O_NONBLOCK: a FIFO opens at once and is then rejected), and only a regular file; an entry
 * (owned set) must also pass rt_owned. Returns the descriptor, or -1 with errno and what is
 * wrong in why ("is a FIFO, not a regular file"). */
static int rt_open_file(int dfd, const char *name, int flags, int owned, char *why, size_t cap)
{
    int fd = openat(dfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
    struct stat st;
    if (fd < 0) {
        int err = errno;
        if (err == ELOOP)
            snprintf(why, cap, "is a symbolic link (%s)", strerror(err));
        else if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
            snprintf(why, cap, "is %s, not a regular file (%s)", rt_file_type(st.st_mode), strerror(err));
        else
            snprintf(why, cap, "cannot be opened (%s)", strerror(err));
        errno = err;
        return -1;
    }
    int ok = 0;
    if (fstat(fd, &st) != 0)
        snprintf(why, cap, "cannot be examined (%s)", strerror(errno));
    else if (!S_ISREG(st.st_mode))
        snprintf(why, cap, "is %s, not a regular file", rt_file_type(st.st_mode));
    else
        ok = !owned || rt_owned(&st, why, cap);
    if (!ok) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

/* ---- the directory ---- */

/* mkdir -p; what it creates gets mode 0700 */
static int rt_mkdirs(const char *dir)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(path, dir, n + 1);
    for (char *p = path + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            if (mkdir(path, 0700) != 0 && errno != EEXIST)
                return -1;
            *p = c;
            if (!c)
                break;
        }
    }
    struct stat st;
    if (stat(dir, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

char *rt_cache_open_dir(const char *requested, int quiet)
{
    char buf[4096];
    const char *dir = requested && *requested ? requested : getenv("TILEC_CACHE_DIR");
    if (!dir || !*dir) {
        const char *home = getenv("HOME");
        if (!home || !*home) {
            if (!quiet)
                rt_warn_cache_once("no cache directory ($TILEC_CACHE_DIR and $HOME are unset); caching compiled "
                                   "kernels in memory only");
            return NULL;
        }
        snprintf(buf, sizeof buf, "%s/.cache/tilec", home);
        dir = buf;
    }
    if (rt_mkdirs(dir) != 0) {
        if (!quiet)
            rt_warn_cache_once("cannot create cache directory '%s' (%s); caching compiled kernels in memory only",
                               dir, strerror(errno));
        return NULL;
    }
    char why[256];
    int fd = rt_dir_open(dir, why, sizeof why);
    if (fd < 0) {
        if (!quiet)
            rt_warn_cache_once("cache directory '%s' %s; caching compiled kernels in memory only", dir, why);
        return NULL;
    }
    close(fd);
    if (access(dir, W_OK | X_OK) != 0) {
        if (!quiet)
            rt_warn_cache_once("cache directory '%s' is not writable (%s); caching compiled kernels in memory only",
                               dir, strerror(errno));
        return NULL;
    }
    return strdup(dir);
}

/* all n bytes through read or write, retrying short transfers and EINTR; -1 on error or EOF */
static int rt_io_all(int fd, void *buf, size_t n, bool writing)
{
    char *p = buf;
    while (n) {
        ssize_t r = writing ? write(fd, p, n) : read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static int rt_read_all(int fd, void *buf, size_t n) { return rt_io_all(fd, buf, n, false); }
static int rt_write_all(int fd, const void *buf, size_t n) { return rt_io_all(fd, (void *)buf, n, true); }

tilec_status rt_cache_load(const char *dir, const char *key, rt_entry *out, int *found, int *rejected)
{
    char stem[17], name[32], path[4200], why[256];
    rt_cache_stem(key, stem);
    snprintf(name, sizeof name, "%s.tlc", stem);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    memset(out, 0, sizeof *out);
    *found = *rejected = 0;
    int dfd = rt_dir_use(dir);
    if (dfd < 0)
        return TILEC_OK;
    int fd = rt_open_file(dfd, name, O_RDONLY, 1, why, sizeof why);
    close(dfd);
    if (fd < 0) {
        if (errno != ENOENT) { /* not a miss: something the cache did not write is there */
            char what[300];
            rt_key_what(key, what, sizeof what);
            rt_warn_file(0, "cache entry '%s' %s; compiling %s instead", path, why, what);
            *rejected = 1;
        }
        return TILEC_OK;
    }
    struct stat st;
    rt_cache_header h;
    size_t key_len = strlen(key);
    char *body = NULL;
    int ok = fstat(fd, &st) == 0 && (uint64_t)st.st_size >= sizeof h && (uint64_t)st.st_size <= RT_CACHE_MAX_ENTRY &&
             rt_read_all(fd, &h, sizeof h) == 0 && !memcmp(h.magic, RT_CACHE_MAGIC, 8) &&
             h.format == RT_CACHE_FORMAT && (h.kind == RT_PAYLOAD_CUBIN || h.kind == RT_PAYLOAD_PTX || h.kind == RT_PAYLOAD_HOST_OBJECT) &&
             h.key_len == key_len && h.sig_len <= RT_CACHE_MAX_ENTRY && h.payload_len <= RT_CACHE_MAX_ENTRY &&
             sizeof h + h.key_len + h.sig_len + h.payload_len == (uint64_t)st.st_size;
    if (ok) {
        size_t n = (size_t)(h.key_len + h.sig_len + h.payload_len);
        body = malloc(n ? n : 1);
        if (!body) {
            close(fd);
            return rt_fail(TILEC_ERROR_INTERNAL, "out of memory reading cache entry '%s'", path);
        }
        ok = rt_read_all(fd, body, n) == 0 && !memcmp(body, key, key_len) &&
             rt_entry_checksum(body, h.key_len, body + h.key_len, h.sig_len, body + h.key_len + h.sig_len,
                               h.payload_len) == h.checksum;
    }
    close(fd);
    if (!ok) {
        free(body);
        *rejected = 1; /* corrupt, truncated or another key's: the caller rebuilds it */
        return TILEC_OK;
    }
    out->sig = rt_strndup(body + h.key_len, h.sig_len);
    out->payload = rt_strndup(body + h.key_len + h.sig_len, h.payload_len);
    free(body);
    if (!out->sig || !out->payload) {
        rt_entry_free(out);
        return rt_fail(TILEC_ERROR_INTERNAL, "out of memory reading cache entry '%s'", path);
    }
    out->sig_len = h.sig_len;
    out->payload_len = h.payload_len;
    out->kind = (int)h.kind;
    *found = 1;
    return TILEC_OK;
}

static double rt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double rt_lock_wait(void)
{
    const char *v = getenv("TILEC_CACHE_LOCK_TIMEOUT");
    if (v && *v) {
        char *end;
        double s = strtod(v, &end);
        if (!*end && isfinite(s) && s >= 0 && s <= 3600)
            return s;
    }
    return RT_CACHE_LOCK_WAIT_S;
}

int rt_cache_lock(const char *dir, const char *key)
{
    char stem[17], name[32], why[256], what[300];
    rt_cache_stem(key, stem);
    snprintf(name, sizeof name, "%s.lock", stem);
    rt_key_what(key, what, sizeof what);
    int dfd = rt_dir_use(dir);
    if (dfd < 0)
        return -1;
    /* read-only is enough for flock; the lock's owner does not matter (it guards nothing but a
     * duplicate compile, and a lock held too long only costs the wait) */
    int fd = rt_open_file(dfd, name, O_RDONLY | O_CREAT, 0, why, sizeof why);
    close(dfd);
    if (fd < 0) {
        rt_warn_file(1, "cache lock '%s/%s' %s; compiling %s without it", dir, name, why, what);
        return -1;
    }
    double limit = rt_lock_wait(), start = rt_now();
    long pause_us = 1000; /* polls at 1, 2, 4 ... 64 ms, then every 64 ms */
    for (;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return fd;
        int err = errno;
        if (err == EINTR)
            continue;
        double left = limit - (rt_now() - start);
        if (err != EWOULDBLOCK || left <= 0) {
            if (err == EWOULDBLOCK)
                rt_warn_file(1, "cache lock '%s/%s' is still held after %g s (%s); compiling %s without waiting for it",
                             dir, name, limit, strerror(err), what);
            else
                rt_warn_file(1, "cache lock '%s/%s' cannot be taken (%s); compiling %s without it", dir, name,
                             strerror(err), what);
            close(fd);
            return -1;
        }
        long us = left * 1e6 < (double)pause_us ? (long)(left * 1e6) + 1 : pause_us;
        struct timespec ts = {us / 1000000, us % 1000000 * 1000L};
        nanosleep(&ts, NULL);
        if (pause_us < 64000)
            pause_us *= 2;
    }
}

void rt_cache_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* closing the descriptor releases the flock */
}

int rt_cache_store(const char *dir, const char *key, const rt_entry *e)
{
    static atomic_uint counter;
    static atomic_int warned;
    char stem[17], tmp[64], name[32];
    rt_cache_stem(key, stem);
    snprintf(name, sizeof name, "%s.tlc", stem);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", stem, (long)getpid(), atomic_fetch_add(&counter, 1));
    rt_cache_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, RT_CACHE_MAGIC, 8);
    h.format = RT_CACHE_FORMAT;
    h.kind = (uint32_t)e->kind;
    h.key_len = strlen(key);
    h.sig_len = e->sig_len;
    h.payload_len = e->payload_len;
    h.checksum = rt_entry_checksum(key, h.key_len, e->sig, e->sig_len, e->payload, e->payload_len);
    int dfd = rt_dir_use(dir);
    if (dfd < 0)
        return -1;
    /* a fresh name (O_EXCL, no link followed), then a rename: whatever is at the entry's path is
     * replaced, never written into */
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    int ok = fd >= 0, saved = ok ? 0 : errno;
    if (fd >= 0) {
        ok = rt_write_all(fd, &h, sizeof h) == 0 && rt_write_all(fd, key, h.key_len) == 0 &&
             rt_write_all(fd, e->sig, e->sig_len) == 0 && rt_write_all(fd, e->payload, e->payload_len) == 0;
        if (!ok)
            saved = errno;
        if (close(fd) != 0 && ok) {
            ok = 0;
            saved = errno;
        }
        /* no fsync: after a crash a torn entry fails its checksum and is rebuilt */
        if (ok && renameat(dfd, tmp, dfd, name) != 0) {
            ok = 0;
            saved = errno;
        }
        if (!ok)
            unlinkat(dfd, tmp, 0);
    }
    close(dfd);
    if (!ok) {
        rt_warn_once(&warned, "cannot write cache entry '%s/%s' (%s); compiled kernels that cannot be written are kept "
                              "in memory only",
                     dir, name, strerror(saved ? saved : EIO));
        errno = saved;
        return -1;
    }
    return 0;
}
