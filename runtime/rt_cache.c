/* rt_cache.c — the disk cache: one file per specialisation, named by a hash of its key, with a
 * header (magic, format version, lengths, checksum) and the full key, written to a temporary
 * file and renamed into place, so that a reader sees a whole entry or none. A per-key flock
 * makes concurrent processes compile a key once. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_internal.h"

#define RT_CACHE_MAGIC "tilecrt\n"
#define RT_CACHE_FORMAT 1u
#define RT_CACHE_MAX_ENTRY (1ull << 30)

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

/* mkdir -p, mode 0755 */
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
            if (mkdir(path, 0755) != 0 && errno != EEXIST)
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
    char stem[17], path[4200];
    rt_cache_stem(key, stem);
    snprintf(path, sizeof path, "%s/%s.tlc", dir, stem);
    memset(out, 0, sizeof *out);
    *found = *rejected = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return TILEC_OK;
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

int rt_cache_lock(const char *dir, const char *key)
{
    char stem[17], path[4200];
    rt_cache_stem(key, stem);
    snprintf(path, sizeof path, "%s/%s.lock", dir, stem);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

void rt_cache_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* closing the descriptor releases the flock */
}

int rt_cache_store(const char *dir, const char *key, const rt_entry *e)
{
    static atomic_uint counter;
    char stem[17], tmp[4200], path[4200];
    rt_cache_stem(key, stem);
    snprintf(path, sizeof path, "%s/%s.tlc", dir, stem);
    snprintf(tmp, sizeof tmp, "%s/%s.tmp.%ld.%u", dir, stem, (long)getpid(), atomic_fetch_add(&counter, 1));
    rt_cache_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, RT_CACHE_MAGIC, 8);
    h.format = RT_CACHE_FORMAT;
    h.kind = (uint32_t)e->kind;
    h.key_len = strlen(key);
    h.sig_len = e->sig_len;
    h.payload_len = e->payload_len;
    h.checksum = rt_entry_checksum(key, h.key_len, e->sig, e->sig_len, e->payload, e->payload_len);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    int ok = rt_write_all(fd, &h, sizeof h) == 0 && rt_write_all(fd, key, h.key_len) == 0 &&
             rt_write_all(fd, e->sig, e->sig_len) == 0 && rt_write_all(fd, e->payload, e->payload_len) == 0;
    int saved = errno;
    ok = close(fd) == 0 && ok;
    /* no fsync: after a crash a torn entry fails its checksum and is rebuilt */
    if (!ok || rename(tmp, path) != 0) {
        saved = errno ? errno : saved;
        unlink(tmp);
        errno = saved;
        return -1;
    }
    return 0;
}
