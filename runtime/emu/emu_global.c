/* emu_global.c — global-memory accesses: the bounds check against the launch's tensors.
 *
 * Global memory is host memory, so an index out of bounds would corrupt the calling process
 * rather than fault. The compiler puts an inline check before each access through a tensor
 * parameter, against that tensor's range (tl_emu_global_ranges, read once per thread);
 * only a miss calls tl_emu_global_access, which reports it and stops the launch (an access whose
 * tensor the compiler cannot tell only has to fall in some tensor). The tensors of a tensor list
 * have a range each, which the check of an access through one picks by the element's index. Accesses through views of
 * addresses the kernel computed (view<T>(addr, ...)) are not checked: their extent is the
 * kernel's to know. */
#include "emu_internal.h"

#include <stdio.h>

tl_emu_range tl_emu_tensor_range(const void *data, int elem_bits, int rank, const int64_t *shape,
                                 const int64_t *strides, const char *name)
{
    tl_emu_range r = {data, 0, name, 0, 0};
    if (!data)
        return r;
    /* the lowest and highest element, in elements from data */
    int64_t lo = 0, hi = 0;
    for (int d = 0; d < rank; d++) {
        int64_t span;
        if (shape[d] <= 0)
            return r;
        if (__builtin_mul_overflow(shape[d] - 1, strides[d], &span) ||
            __builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi))
            goto unbounded;
    }
    int64_t first, last, span;
    if (elem_bits == 4) { /* two elements to a byte */
        first = lo >> 1;
        last = hi >> 1;
    } else {
        int64_t es = elem_bits >= 8 ? elem_bits / 8 : 1;
        if (__builtin_mul_overflow(lo, es, &first) || __builtin_mul_overflow(hi, es, &last) ||
            __builtin_add_overflow(last, es - 1, &last))
            goto unbounded;
    }
    if (__builtin_sub_overflow(last, first, &span))
        goto unbounded;
    r.base = (const void *)((uintptr_t)data + (uintptr_t)first);
    r.bytes = (size_t)span + 1;
    return r;
unbounded: /* strides beyond 64 bits of address: every address counts as inside */
    r.base = (const void *)1;
    r.bytes = SIZE_MAX - 1;
    return r;
}

static const tl_emu_range *range_of(const EmuLaunch *L, uint32_t tensor)
{
    return L->cfg.ranges && tensor < (uint32_t)L->cfg.nranges ? &L->cfg.ranges[tensor] : NULL;
}

void emu_global_setup(EmuLaunch *L)
{
    const tl_emu_launch_config *c = &L->cfg;
    for (int j = 0; j < TL_EMU_MAX_RANGES; j++) {
        const tl_emu_range *r = c->ranges && j < c->nranges ? &c->ranges[j] : NULL;
        L->granges[2 * j] = r ? (uint64_t)(uintptr_t)r->base : 0;
        L->granges[2 * j + 1] = !c->ranges ? UINT64_MAX : r && r->base ? r->bytes : 0;
    }
}

const uint64_t *tl_emu_global_ranges(void)
{
    static const uint64_t none[2 * TL_EMU_MAX_RANGES]; /* outside a launch: every access calls out */
    EmuWorker *w = emu_tls;
    return w ? w->L->granges : none;
}

static bool inside(const tl_emu_range *r, uintptr_t a, uint64_t size)
{
    uintptr_t b = (uintptr_t)r->base;
    return r->base && a >= b && a - b <= r->bytes && size <= r->bytes - (a - b);
}

/* "offset 128 of 'out', 4 bytes past the end of its 128 bytes" */
static void describe(char *buf, size_t n, const tl_emu_range *r, int index, uintptr_t a, uint64_t size)
{
    char name[96];
    if (r->element < 0) {
        snprintf(buf, n, "through '%s' at an index outside the list (%d tensor%s)", r->name ? r->name : "?", r->length,
                 r->length == 1 ? "" : "s");
        return;
    }
    if (r->element)
        snprintf(name, sizeof name, "'%s[%d]'", r->name ? r->name : "?", r->element - 1);
    else if (r->name)
        snprintf(name, sizeof name, "'%s'", r->name);
    else
        snprintf(name, sizeof name, "tensor parameter %d", index);
    if (!r->base && r->element && r->element > r->length) {
        snprintf(buf, n, "through %s, past the end of the list (%d tensor%s)", name, r->length, r->length == 1 ? "" : "s");
        return;
    }
    if (!r->base) {
        snprintf(buf, n, "through %s, a null pointer (the tensor is absent or empty)", name);
        return;
    }
    uint64_t rel = (uint64_t)(a - (uintptr_t)r->base), over = rel + size - r->bytes;
    long long off = (long long)rel;
    if (off < 0)
        snprintf(buf, n, "offset %lld of %s, %llu byte%s before its start", off, name, (unsigned long long)-rel,
                 off == -1 ? "" : "s");
    else
        snprintf(buf, n, "offset %lld of %s, %llu byte%s past the end of its %zu bytes", off, name,
                 (unsigned long long)over, over == 1 ? "" : "s", r->bytes);
}

void tl_emu_global_access(const void *p, uint64_t size, uint32_t kind, uint32_t site, uint32_t tensor)
{
    EmuWorker *w = emu_tls;
    if (!w || !w->cur)
        return;
    EmuLaunch *L = w->L;
    const tl_emu_launch_config *c = &L->cfg;
    uintptr_t a = (uintptr_t)p;
    if (!c->ranges || size == 0)
        return;
    /* through a known tensor: within it, not merely within some argument, so that an overrun into
     * the tensor next to it is caught too */
    const tl_emu_range *r = range_of(L, tensor);
    char where[320];
    if (r) {
        if (inside(r, a, size))
            return;
        describe(where, sizeof where, r, (int)tensor, a, size);
    } else {
        for (int i = 0; i < c->nranges; i++)
            if (inside(&c->ranges[i], a, size))
                return;
        uint64_t best = UINT64_MAX;
        int index = -1;
        for (int i = 0; i < c->nranges; i++) {
            const tl_emu_range *q = &c->ranges[i];
            uintptr_t b = (uintptr_t)q->base;
            uint64_t dist = a < b ? b - a : a - b < q->bytes ? 0 : a - b - q->bytes;
            if (q->base && dist < best)
                best = dist, index = i;
        }
        if (index < 0) {
            snprintf(where, sizeof where, "outside every tensor argument (none has memory)");
        } else {
            char d[256];
            describe(d, sizeof d, &c->ranges[index], index, a, size);
            snprintf(where, sizeof where, "outside every tensor argument (the nearest: %s)", d);
        }
    }
    EmuFiber *f = w->cur;
    char bn[48];
    emu_block_name(f->blk, bn, sizeof bn);
    const char *verb = emu_access_verb(kind);
    emu_fail(L, TL_EMU_ERROR_MEMORY, "kernel %s, %s, thread %d %s %llu byte%s at 0x%llx [%s], %s", L->k->name, bn,
             f->tid, verb, (unsigned long long)size, size == 1 ? "" : "s", (unsigned long long)a,
             emu_site(L->k, site, verb), where);
    emu_abort_fiber(f);
}
