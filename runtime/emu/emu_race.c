/* emu_race.c — shared-memory accesses: a bounds check on every one, and the racecheck.
 *
 * The racecheck keeps, for every byte of a block's shared memory, the last writer, two readers
 * and two atomic accessors of the current barrier interval ("epoch": the block's barriers and
 * grid syncs start a new one). Two accesses to one byte by different threads in one epoch
 * conflict when one of them is a write (an atomic against a plain access too), unless both
 * threads are in one warp and a sync_warp of that warp came between them. Each conflicting
 * pair of access sites is reported once per launch. */
#include "emu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE 0xFFFF

const char *emu_access_verb(uint32_t kind)
{
    return kind == TL_EMU_WRITE ? "writes" : kind == TL_EMU_ATOMIC ? "atomically updates" : "reads";
}

static const char *kind_past(uint32_t kind)
{
    return kind == TL_EMU_WRITE ? "wrote" : kind == TL_EMU_ATOMIC ? "atomically updated" : "read";
}

/* "tile[3, 4]" when the address is an element of a named shared buffer, else "offset 0x104" */
static void smem_name(const tl_emu_kernel *k, uint64_t off, char *buf, size_t n)
{
    for (int i = 0; i < k->nsmem_bufs; i++) {
        const EmuSmemBuf *s = &k->smem_bufs[i];
        if (off < s->offset || off >= s->offset + s->bytes)
            continue;
        uint64_t rel = off - s->offset;
        int64_t lin = s->elem_bytes ? (int64_t)(rel / (uint64_t)s->elem_bytes) : (int64_t)(rel * 2);
        int64_t idx[6];
        for (int d = s->rank - 1; d >= 0; d--) {
            int64_t ext = s->shape[d] + (d == s->rank - 1 ? s->row_pad : 0);
            idx[d] = ext > 0 ? lin % ext : 0;
            lin = ext > 0 ? lin / ext : 0;
        }
        int len = snprintf(buf, n, "%s[", s->name);
        for (int d = 0; d < s->rank && len > 0 && (size_t)len < n; d++)
            len += snprintf(buf + len, n - (size_t)len, "%s%lld", d ? ", " : "", (long long)idx[d]);
        if (len > 0 && (size_t)len < n)
            snprintf(buf + len, n - (size_t)len, "] (shared offset 0x%llx)", (unsigned long long)off);
        return;
    }
    snprintf(buf, n, "shared offset 0x%llx", (unsigned long long)off);
}

static bool ordered(const EmuBlock *b, int t1, uint16_t ws1, int t2)
{
    if (t1 == t2)
        return true;
    if (t1 / 32 != t2 / 32)
        return false;
    return (uint16_t)b->warps[t1 / 32].sync_gen != ws1;
}

static void report(EmuFiber *f, uint64_t off, uint32_t size, uint32_t kind, uint32_t site, int other, uint32_t okind,
                   uint16_t osite)
{
    EmuBlock *b = f->blk;
    EmuLaunch *L = b->w->L;
    const tl_emu_kernel *k = L->k;
    pthread_mutex_lock(&L->lock);
    /* each pair of sites once, so that a loop does not report one race a thousand times */
    uint32_t key = (site & 0xFFFF) << 16 | osite;
    for (int i = 0; i < L->nseen; i++)
        if (L->seen[i] == key) {
            pthread_mutex_unlock(&L->lock);
            return;
        }
    if (L->nseen < (int)(sizeof L->seen / sizeof L->seen[0]))
        L->seen[L->nseen++] = key;
    L->nraces++;
    if (L->nraces <= L->max_reports) {
        char bn[48], where[160];
        emu_block_name(b, bn, sizeof bn);
        smem_name(k, off, where, sizeof where);
        emu_appendf(&L->races, &L->races_len,
                    "%srace on shared memory in kernel %s, %s: thread %d (warp %d, lane %d) %s %u byte%s at %s "
                    "[%s], which thread %d (warp %d, lane %d) %s [%s] with no barrier in between",
                    L->races_len ? "\n" : "", k->name, bn, f->tid, f->tid / 32, f->tid % 32, emu_access_verb(kind),
                    size, size == 1 ? "" : "s", where, emu_site(k, site, emu_access_verb(kind)), other, other / 32,
                    other % 32, kind_past(okind), emu_site(k, osite, kind_past(okind)));
    }
    pthread_mutex_unlock(&L->lock);
}

void emu_race_access(EmuFiber *f, uint64_t off, uint32_t size, uint32_t kind, uint32_t site)
{
    EmuBlock *b = f->blk;
    uint32_t e = b->epoch;
    int t = f->tid;
    uint16_t ws = (uint16_t)b->warps[t / 32].sync_gen;
    uint16_t st = (uint16_t)site;
    bool reported = false;
    for (uint32_t i = 0; i < size; i++) {
        EmuShadow *s = &b->shadow[off + i];
        int other = -1;
        uint32_t okind = 0;
        uint16_t osite = 0;
        /* a plain write of another thread conflicts with everything */
        if (s->w_epoch == e && !ordered(b, s->w_tid, s->w_ws, t)) {
            other = s->w_tid, okind = TL_EMU_WRITE, osite = s->w_site;
        }
        /* reads conflict with writes and atomics */
        if (other < 0 && kind != TL_EMU_READ && s->r_epoch == e) {
            if (s->r1_tid != NONE && !ordered(b, s->r1_tid, s->r1_ws, t))
                other = s->r1_tid, okind = TL_EMU_READ, osite = s->r1_site;
            else if (s->r2_tid != NONE && !ordered(b, s->r2_tid, s->r2_ws, t))
                other = s->r2_tid, okind = TL_EMU_READ, osite = s->r2_site;
        }
        /* atomics conflict with plain accesses */
        if (other < 0 && kind != TL_EMU_ATOMIC && s->a_epoch == e) {
            if (s->a1_tid != NONE && !ordered(b, s->a1_tid, s->a1_ws, t))
                other = s->a1_tid, okind = TL_EMU_ATOMIC, osite = s->a1_site;
            else if (s->a2_tid != NONE && !ordered(b, s->a2_tid, s->a2_ws, t))
                other = s->a2_tid, okind = TL_EMU_ATOMIC, osite = s->a2_site;
        }
        if (other >= 0 && !reported) {
            reported = true;
            report(f, off, size, kind, site, other, okind, osite);
        }
        switch (kind) {
        case TL_EMU_WRITE:
            s->w_epoch = e, s->w_tid = (uint16_t)t, s->w_ws = ws, s->w_site = st;
            break;
        case TL_EMU_READ:
            if (s->r_epoch != e) {
                s->r_epoch = e, s->r1_tid = (uint16_t)t, s->r1_ws = ws, s->r1_site = st, s->r2_tid = NONE;
            } else if (s->r1_tid != t) {
                s->r2_tid = (uint16_t)t, s->r2_ws = ws, s->r2_site = st;
            }
            break;
        default:
            if (s->a_epoch != e) {
                s->a_epoch = e, s->a1_tid = (uint16_t)t, s->a1_ws = ws, s->a1_site = st, s->a2_tid = NONE;
            } else if (s->a1_tid != t) {
                s->a2_tid = (uint16_t)t, s->a2_ws = ws, s->a2_site = st;
            }
            break;
        }
    }
}

void tl_emu_shared_access(const void *p, uint32_t size, uint32_t kind, uint32_t site)
{
    EmuWorker *w = emu_tls;
    if (!w || !w->cur)
        return;
    EmuFiber *f = w->cur;
    EmuBlock *b = f->blk;
    EmuLaunch *L = w->L;
    size_t n = L->cfg.smem;
    intptr_t off = (intptr_t)((const uint8_t *)p - b->smem);
    if (!b->smem || off < 0 || (size_t)off > n || size > n - (size_t)off) {
        char bn[48];
        emu_block_name(b, bn, sizeof bn);
        emu_fail(L, TL_EMU_ERROR_MEMORY,
                 "kernel %s, %s, thread %d %s %u byte%s at shared offset %lld [%s], outside the block's %zu bytes "
                 "of shared memory",
                 L->k->name, bn, f->tid, emu_access_verb(kind), size, size == 1 ? "" : "s", (long long)off,
                 emu_site(L->k, site, emu_access_verb(kind)), n);
        emu_abort_fiber(f);
    }
    if (b->shadow && size)
        emu_race_access(f, (uint64_t)off, size, kind, site);
}

void tl_emu_cp_async(void *dst, const void *src, uint32_t size, uint32_t src_size, uint32_t site)
{
    /* the copy completes at once; the wait that the GPU needs before reading dst is a no-op */
    tl_emu_shared_access(dst, size, TL_EMU_WRITE, site);
    uint32_t n = src_size < size ? src_size : size;
    memcpy(dst, src, n);
    memset((uint8_t *)dst + n, 0, size - n);
}
