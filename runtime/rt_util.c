/* rt_util.c — small helpers the runtime's files share: a 64-bit hash, an arena for a signature's
 * nodes and strings, a bounded string builder for messages, and whole-file reads. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

static uint64_t rt_rotl(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static uint64_t rt_avalanche(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

/* Eight bytes per step: it checksums whole cubins on every disk-cache hit. */
uint64_t rt_hash(const void *p, size_t n, uint64_t seed)
{
    const unsigned char *s = p;
    uint64_t h = seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(n + 1));
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = rt_rotl(h ^ (w * 0x87c37b91114253d5ull), 29) * 0x4cf5ad432745937full;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = rt_rotl(h ^ (w * 0x87c37b91114253d5ull), 29) * 0x4cf5ad432745937full;
    return rt_avalanche(h);
}

struct rt_arena_block {
    rt_arena_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *rt_arena_alloc(rt_arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    rt_arena_block *b = a->head;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > 4096 ? size : 4096;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->next = a->head;
        b->used = 0;
        b->cap = cap;
        a->head = b;
    }
    void *r = b->data + b->used;
    b->used += size;
    memset(r, 0, size);
    return r;
}

char *rt_arena_strndup(rt_arena *a, const char *s, size_t n)
{
    char *r = rt_arena_alloc(a, n + 1);
    if (r) {
        memcpy(r, s, n);
        r[n] = 0;
    }
    return r;
}

char *rt_strndup(const char *s, size_t n)
{
    char *r = malloc(n + 1);
    if (r) {
        memcpy(r, s, n);
        r[n] = 0;
    }
    return r;
}

void rt_arena_free(rt_arena *a)
{
    while (a->head) {
        rt_arena_block *next = a->head->next;
        free(a->head);
        a->head = next;
    }
}

void rt_sb_init(rt_sbuf *b, char *p, size_t cap)
{
    b->p = p;
    b->len = 0;
    b->cap = cap;
    if (cap)
        p[0] = 0;
}

static void rt_sb_truncated(rt_sbuf *b)
{
    if (b->cap >= 4)
        memcpy(b->p + b->cap - 4, "...", 4);
    b->len = b->cap ? b->cap - 1 : 0;
}

void rt_sb_puts(rt_sbuf *b, const char *s)
{
    size_t n = strlen(s);
    if (b->len + n + 1 > b->cap) {
        rt_sb_truncated(b);
        return;
    }
    memcpy(b->p + b->len, s, n + 1);
    b->len += n;
}

void rt_sb_printf(rt_sbuf *b, const char *fmt, ...)
{
    if (b->len + 1 >= b->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (b->len + (size_t)n + 1 > b->cap)
        rt_sb_truncated(b);
    else
        b->len += (size_t)n;
}

tilec_status rt_read_file(const char *path, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return rt_fail(errno == ENOENT ? TILEC_ERROR_NOT_FOUND : TILEC_ERROR_IO, "cannot open '%s': %s", path,
                       strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        cap *= 2;
        char *bigger = realloc(buf, cap);
        if (!bigger) {
            free(buf);
            buf = NULL;
        } else {
            buf = bigger;
        }
    }
    int err = ferror(f);
    fclose(f);
    if (!buf)
        return rt_fail(TILEC_ERROR_IO, "out of memory reading '%s'", path);
    if (err) {
        free(buf);
        return rt_fail(TILEC_ERROR_IO, "cannot read '%s'", path);
    }
    buf[n] = 0;
    *out = buf;
    *len = n;
    return TILEC_OK;
}
