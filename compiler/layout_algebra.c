/* layout_algebra.c — layouts of frag tiles as values: which thread and which register of it hold
 * each element, and the operations the passes build and read them with.
 *
 * A layout is a list of modes: each takes a digit of the thread index or of the register index
 * and adds digit * stride to one tile dimension (or replicates, for threads that hold copies).
 * The default layout gives each thread runs of `vec` contiguous elements along the innermost
 * dimension, consecutive threads consecutive runs (coalesced 16-byte accesses), threads spread
 * from the innermost dimension outwards, the remaining extent in registers. A reduction's
 * result layout is its source's with the reduced modes removed (thread modes become
 * replication). */
#include "tir.h"

#include <string.h>

void layout_add_mode(Layout *l, int size, int div, bool thread, int dim, int64_t stride)
{
    if (size <= 1 || l->nmodes >= 24)
        return;
    LMode *m = &l->modes[l->nmodes++];
    m->size = size;
    m->div = div;
    m->thread = thread;
    m->dim = dim;
    m->stride = stride;
}

Layout *layout_default(Arena *a, int rank, const int64_t *shape, int nthreads, int vec, int tpr, int row_run)
{
    Layout *l = ARENA_NEW(a, Layout);
    l->nthreads = nthreads;
    l->rank = rank;
    memcpy(l->shape, shape, sizeof(int64_t) * (size_t)rank);
    int last = rank - 1;
    int64_t v = vec > 0 ? tl_gcd(vec, shape[last]) : 1;
    l->vec = (int)v;
    int reg_div = 1, thr_div = 1;
    int64_t threads_left = nthreads;
    layout_add_mode(l, (int)v, reg_div, false, last, 1);
    reg_div *= (int)v;
    /* row_run: runs of consecutive rows per thread, so that a reduction down the rows in groups
     * of the run (or a multiple of it) starts in registers and leaves fewer replicated results */
    int64_t rr = rank >= 2 && row_run > 1 ? tl_gcd(row_run, shape[last - 1]) : 1;
    layout_add_mode(l, (int)rr, reg_div, false, last - 1, 1);
    reg_div *= (int)rr;
    int64_t rest[TL_MAX_RANK], rest_stride[TL_MAX_RANK];
    for (int d = last; d >= 0; d--) {
        int64_t base = d == last ? v : d == last - 1 ? rr : 1;
        int64_t ext = shape[d] / base;
        int64_t tx = tl_gcd(threads_left, ext);
        if (d == last && tpr > 0 && tx > tpr && tx % tpr == 0)
            tx = tpr;
        layout_add_mode(l, (int)tx, thr_div, true, d, base);
        thr_div *= (int)tx;
        threads_left /= tx;
        rest[d] = ext / tx;
        rest_stride[d] = base * tx;
    }
    for (int d = last; d >= 0; d--) {
        layout_add_mode(l, (int)rest[d], reg_div, false, d, rest_stride[d]);
        reg_div *= (int)rest[d];
    }
    layout_add_mode(l, (int)threads_left, thr_div, true, -1, 0);
    l->nregs = reg_div;
    return l;
}

bool layout_equal(const Layout *a, const Layout *b)
{
    return a->nregs == b->nregs && a->nmodes == b->nmodes && !memcmp(a->modes, b->modes, sizeof(LMode) * (size_t)a->nmodes);
}

void layout_coord(const Layout *l, int t, int r, int64_t *coord)
{
    for (int d = 0; d < l->rank; d++)
        coord[d] = 0;
    for (int i = 0; i < l->nmodes; i++) {
        const LMode *m = &l->modes[i];
        if (m->dim < 0)
            continue;
        int src = m->thread ? t : r;
        coord[m->dim] += ((src / m->div) % m->size) * m->stride;
    }
}

int layout_find_reg(const Layout *l, int t, const int64_t *coord)
{
    int64_t c[TL_MAX_RANK];
    for (int r = 0; r < l->nregs; r++) {
        layout_coord(l, t, r, c);
        bool eq = true;
        for (int d = 0; d < l->rank && eq; d++)
            eq = c[d] == coord[d];
        if (eq)
            return r;
    }
    return -1;
}

/* Splits the modes of `dim` so that no mode straddles a multiple of `group`. */
static bool split_at(Layout *l, int dim, int64_t group)
{
    Layout out = *l;
    out.nmodes = 0;
    for (int i = 0; i < l->nmodes; i++) {
        LMode m = l->modes[i];
        int64_t lo = m.stride, hi = m.stride * m.size;
        if (m.dim != dim || hi <= group || lo >= group) {
            out.modes[out.nmodes++] = m;
            continue;
        }
        if (group % lo != 0 || m.size % (group / lo) != 0)
            return false;
        int inner = (int)(group / lo);
        LMode a = m, b = m;
        a.size = inner;
        b.size = m.size / inner;
        b.div = m.div * inner;
        b.stride = group;
        if (out.nmodes + 2 > 24)
            return false;
        out.modes[out.nmodes++] = a;
        out.modes[out.nmodes++] = b;
    }
    *l = out;
    return true;
}

/* Is mode m reduced by a reduction along `dim` in groups of `group` (0 = whole dim)? */
static bool mode_reduced(const LMode *m, int dim, int64_t group)
{
    return m->dim == dim && (group == 0 || m->stride * m->size <= group);
}

Layout *layout_refine_for_reduce(Arena *a, const Layout *src, int dim, int group)
{
    Layout *l = ARENA_NEW(a, Layout);
    *l = *src;
    if (group > 0 && !split_at(l, dim, group))
        return NULL;
    return l;
}

Layout *layout_reduce(Arena *a, const Layout *src, int dim, int group)
{
    Layout *ref = layout_refine_for_reduce(a, src, dim, group);
    if (!ref)
        return NULL;
    /* group = 0 removes the dimension; a group covering the whole dimension keeps it, extent 1 */
    bool drop = group == 0;
    if (group > 0 && group == src->shape[dim])
        group = (int)src->shape[dim];
    Layout *l = ARENA_NEW(a, Layout);
    l->nthreads = src->nthreads;
    l->rank = drop ? src->rank - 1 : src->rank;
    for (int d = 0, o = 0; d < src->rank; d++) {
        if (d == dim && drop)
            continue;
        l->shape[o++] = d == dim ? src->shape[d] / group : src->shape[d];
    }
    if (l->rank == 0) {
        l->rank = 1;
        l->shape[0] = 1;
    }
    /* registers kept, renumbered in the order of their old divisors */
    int reg_div = 1;
    int order[24];
    int n = 0;
    for (int i = 0; i < ref->nmodes; i++)
        order[n++] = i;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && ref->modes[order[j]].div < ref->modes[order[j - 1]].div; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (int oi = 0; oi < n; oi++) {
        const LMode *m = &ref->modes[order[oi]];
        if (m->thread)
            continue;
        if (mode_reduced(m, dim, group))
            continue;
        int nd = m->dim;
        int64_t stride = m->stride;
        if (m->dim == dim) {
            if (drop)
                continue;
            stride /= group;
        }
        if (drop && nd > dim)
            nd--;
        layout_add_mode(l, m->size, reg_div, false, nd, stride);
        reg_div *= m->size;
    }
    for (int i = 0; i < ref->nmodes; i++) {
        const LMode *m = &ref->modes[i];
        if (!m->thread)
            continue;
        if (mode_reduced(m, dim, group) || m->dim < 0) {
            layout_add_mode(l, m->size, m->div, true, -1, 0);
            continue;
        }
        int nd = m->dim;
        int64_t stride = m->stride;
        if (m->dim == dim)
            stride /= group;
        if (drop && nd > dim)
            nd--;
        layout_add_mode(l, m->size, m->div, true, nd, stride);
    }
    l->nregs = reg_div;
    l->vec = 1;
    for (int i = 0; i < l->nmodes; i++)
        if (!l->modes[i].thread && l->modes[i].div == 1 && l->modes[i].stride == 1 && l->modes[i].dim == l->rank - 1)
            l->vec = l->modes[i].size;
    return l;
}

/* ---------------- micro-tiles of transposing copies ---------------- */

int transpose_vec(int elem_bytes, int64_t r0, int64_t r1, int nthreads)
{
    int v = 16 / elem_bytes;
    if (v > 8)
        v = 8;
    while (v > 1 && (r0 % v || r1 % v || (r0 / v) * (r1 / v) < nthreads))
        v /= 2;
    return v < 1 ? 1 : v;
}

int transpose_rows(int elem_bytes, int64_t r0, int64_t r1, int nthreads)
{
    int v = transpose_vec(elem_bytes, r0, r1, nthreads);
    /* bytes: 8-byte reads of 16 rows, so that the writes are 16-byte vectors (with 8 x 8 micro-tiles
     * the u8 transpose stored 8 bytes at a time: 88 % of the copy ceiling against 94 for bf16) */
    if (elem_bytes == 1 && v == 8 && r1 % 16 == 0 && (r0 / 8) * (r1 / 16) >= nthreads)
        return 16;
    return v;
}

/* ---------------- thread and register coordinates ---------------- */

/* thread mode m's digit of the thread index: (tid / div) % size, without what cannot change it */
static TExpr *mode_index(TKernel *k, const Layout *l, const LMode *m)
{
    TExpr *t = tx_special(k, SP_TID_X);
    if (m->div > 1)
        t = tx_bin(k, OP_DIV, t, tx_const_int(k, DT_I32, m->div));
    if ((int64_t)m->div * m->size < l->nthreads)
        t = tx_bin(k, OP_MOD, t, tx_const_int(k, DT_I32, m->size));
    return t;
}

/* The element coordinate along `dim` contributed by the thread modes: the sum of
 * ((tid / div) % size) * stride (the `%` left out where the mode spans every thread). */
TExpr *layout_thread_coord(TKernel *k, const Layout *l, int dim)
{
    TExpr *sum = tx_const_int(k, DT_I32, 0);
    for (int i = 0; i < l->nmodes; i++) {
        const LMode *m = &l->modes[i];
        if (!m->thread || m->dim != dim)
            continue;
        TExpr *t = mode_index(k, l, m);
        if (m->stride != 1)
            t = tx_bin(k, OP_MUL, t, tx_const_int(k, DT_I32, m->stride));
        sum = tx_bin(k, OP_ADD, sum, t);
    }
    return sum;
}

/* The coordinate along `dim` that register r of a thread adds (a constant). */
int64_t layout_reg_coord(const Layout *l, int r, int dim)
{
    int64_t c = 0;
    for (int i = 0; i < l->nmodes; i++) {
        const LMode *m = &l->modes[i];
        if (!m->thread && m->dim == dim)
            c += (int64_t)((r / m->div) % m->size) * m->stride;
    }
    return c;
}

/* Threads that hold a replica of other threads' elements skip stores: the predicate that is true
 * for exactly one replica (NULL when the layout has none). */
TExpr *layout_leader_pred(TKernel *k, const Layout *l)
{
    TExpr *p = NULL;
    for (int i = 0; i < l->nmodes; i++) {
        const LMode *m = &l->modes[i];
        if (!m->thread || m->dim >= 0)
            continue;
        TExpr *t = mode_index(k, l, m);
        TExpr *c = tx_bin(k, OP_EQ, t, tx_const_int(k, DT_I32, 0));
        p = p ? tx_bin(k, OP_LAND, p, c) : c;
    }
    return p;
}
