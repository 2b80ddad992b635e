/* base.c — arena, growable arrays and string buffers. */
#include "base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ArenaBlock {
    ArenaBlock *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

void tl_oom(void)
{
    fputs("tilec: out of memory\n", stderr);
    abort();
}

void *tl_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        tl_oom();
    return p;
}

void *tl_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        tl_oom();
    return p;
}

void *tl_xcalloc(size_t n, size_t m)
{
    void *p = calloc(n ? n : 1, m ? m : 1);
    if (!p)
        tl_oom();
    return p;
}

void arena_init(Arena *a)
{
    a->head = NULL;
    a->used_total = 0;
}

void arena_free(Arena *a)
{
    ArenaBlock *b = a->head;
    while (b) {
        ArenaBlock *n = b->next;
        free(b);
        b = n;
    }
    a->head = NULL;
    a->used_total = 0;
}

void *arena_alloc(Arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    ArenaBlock *b = a->head;
    if (!b || b->used + size > b->size) {
        size_t bsize = size > (64u << 10) ? size : (64u << 10);
        b = tl_xmalloc(sizeof(ArenaBlock) + bsize);
        b->size = bsize;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += size;
    a->used_total += size;
    memset(p, 0, size);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *arena_strdup(Arena *a, const char *s)
{
    return arena_strndup(a, s, strlen(s));
}

char *arena_vprintf(Arena *a, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        n = 0;
    char *p = arena_alloc(a, (size_t)n + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

char *arena_printf(Arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = arena_vprintf(a, fmt, ap);
    va_end(ap);
    return p;
}

void ptrvec_push(PtrVec *v, void *p)
{
    if (v->len == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 8;
        v->items = tl_xrealloc(v->items, sizeof(void *) * (size_t)v->cap);
    }
    v->items[v->len++] = p;
}

void ptrvec_free(PtrVec *v)
{
    free(v->items);
    v->items = NULL;
    v->len = v->cap = 0;
}

void sb_append(StrBuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap : 256;
        while (c < b->len + n + 1)
            c *= 2;
        b->data = tl_xrealloc(b->data, c);
        b->cap = c;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

void sb_puts(StrBuf *b, const char *s)
{
    sb_append(b, s, strlen(s));
}

void sb_vprintf(StrBuf *b, const char *fmt, va_list ap)
{
    char tmp[512];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    if ((size_t)n < sizeof tmp) {
        sb_append(b, tmp, (size_t)n);
        return;
    }
    char *big = tl_xmalloc((size_t)n + 1);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    sb_append(b, big, (size_t)n);
    free(big);
}

void sb_printf(StrBuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(b, fmt, ap);
    va_end(ap);
}

void sb_free(StrBuf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

char *sb_take(StrBuf *b)
{
    char *s = b->data;
    if (!s) {
        s = tl_xmalloc(1);
        s[0] = 0;
    }
    b->data = NULL;
    b->len = b->cap = 0;
    return s;
}

uint64_t tl_hash_bytes(const void *data, size_t n, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ull ^ seed;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

bool tl_is_pow2(int64_t v)
{
    return v > 0 && (v & (v - 1)) == 0;
}

int tl_log2_floor(uint64_t v)
{
    int r = -1;
    while (v) {
        v >>= 1;
        r++;
    }
    return r;
}

int64_t tl_gcd(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a < 0 ? -a : a;
}
