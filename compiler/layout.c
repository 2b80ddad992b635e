/* layout.c — which thread holds which element of a frag tile.
 *
 * A layout is a list of modes: each takes a digit of the thread index or of the register index
 * and adds digit * stride to one tile dimension (or replicates, for threads that hold copies).
 * The default layout gives each thread runs of `vec` contiguous elements along the innermost
 * dimension, consecutive threads consecutive runs (coalesced 16-byte accesses), threads spread
 * from the innermost dimension outwards, the remaining extent in registers. A reduction's
 * result layout is its source's with the reduced modes removed (thread modes become
 * replication). The pass assigns a layout to every frag from its first defining use. */
#include "tir.h"

#include <string.h>

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

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
    int64_t v = vec > 0 ? gcd64(vec, shape[last]) : 1;
    l->vec = (int)v;
    int reg_div = 1, thr_div = 1;
    int64_t threads_left = nthreads;
    layout_add_mode(l, (int)v, reg_div, false, last, 1);
    reg_div *= (int)v;
    /* row_run: runs of consecutive rows per thread, so that a reduction down the rows in groups
     * of the run (or a multiple of it) starts in registers and leaves fewer replicated results */
    int64_t rr = rank >= 2 && row_run > 1 ? gcd64(row_run, shape[last - 1]) : 1;
    layout_add_mode(l, (int)rr, reg_div, false, last - 1, 1);
    reg_div *= (int)rr;
    int64_t rest[TL_MAX_RANK], rest_stride[TL_MAX_RANK];
    for (int d = last; d >= 0; d--) {
        int64_t base = d == last ? v : d == last - 1 ? rr : 1;
        int64_t ext = shape[d] / base;
        int64_t tx = gcd64(threads_left, ext);
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

/* ---------------- the pass ---------------- */

typedef struct LayoutPass {
    TKernel *k;
    bool ok;
} LayoutPass;

static int64_t pow2_part(int64_t v) { return v & -v; }

/* vector width for a frag from the element size on the memory side of its first copy */
static int choose_vec(TKernel *k, TBuf *f, int mem_es)
{
    if (f->vec_hint)
        return f->vec_hint;
    int64_t v = 16 / (mem_es > 0 ? mem_es : dtype_storage_bytes(f->dt));
    if (f->dt == DT_E2M1 && v < 2)
        v = 2;
    int64_t inner = pow2_part(f->shape[f->rank - 1]);
    if (v > inner)
        v = inner;
    int64_t elems = 1;
    for (int d = 0; d < f->rank; d++)
        elems *= f->shape[d];
    while (v > 1 && elems < (int64_t)k->nthreads * v)
        v /= 2;
    if (f->dt == DT_E2M1 && v < 2 && inner >= 2)
        v = 2; /* whole bytes */
    return (int)(v < 1 ? 1 : v);
}

static void assign_default(LayoutPass *P, TBuf *f, int mem_es)
{
    if (f->layout || f->scope != SC_FRAG)
        return;
    int v = choose_vec(P->k, f, mem_es);
    f->layout = layout_default(P->k->arena, f->rank, f->shape, P->k->nthreads, v, f->tpr_hint, f->row_run_hint);
}

static bool region_is_whole(const Region *r)
{
    for (int i = 0; i < r->rank; i++)
        if (r->src_dim[i] != i || r->extent[i] != r->buf->shape[i])
            return false;
    return r->rank == r->buf->rank;
}

static void visit(LayoutPass *P, TStmt *s);

static void visit_list(LayoutPass *P, TStmt **v, int n)
{
    for (int i = 0; i < n; i++)
        visit(P, v[i]);
}

static void infer_from_body(LayoutPass *P, TBuf *tile, TStmt **v, int n);

static void infer_expr(LayoutPass *P, TBuf *tile, TExpr *e)
{
    if (!e)
        return;
    if (e->kind == TX_LOAD && e->buf->scope == SC_FRAG && !e->buf->layout) {
        bool same = e->buf->rank == tile->rank;
        for (int d = 0; same && d < tile->rank; d++)
            same = e->buf->shape[d] == tile->shape[d];
        if (same)
            e->buf->layout = tile->layout;
    }
    infer_expr(P, tile, e->a);
    infer_expr(P, tile, e->b);
    infer_expr(P, tile, e->c);
    for (int i = 0; i < e->nargs; i++)
        infer_expr(P, tile, e->args[i]);
}

static void infer_from_body(LayoutPass *P, TBuf *tile, TStmt **v, int n)
{
    for (int i = 0; i < n; i++) {
        TStmt *s = v[i];
        if (s->kind == TS_STORE && s->buf->scope == SC_FRAG && !s->buf->layout) {
            bool same = s->buf->rank == tile->rank;
            for (int d = 0; same && d < tile->rank; d++)
                same = s->buf->shape[d] == tile->shape[d];
            if (same)
                s->buf->layout = tile->layout;
        }
        infer_expr(P, tile, s->e);
        for (int j = 0; j < s->nidx; j++)
            infer_expr(P, tile, s->idx[j]);
        infer_from_body(P, tile, s->body, s->nbody);
        infer_from_body(P, tile, s->els, s->nels);
    }
}

static void visit(LayoutPass *P, TStmt *s)
{
    TKernel *k = P->k;
    switch (s->kind) {
    case TS_COPY: {
        TBuf *sb = s->src.buf, *db = s->dst.buf;
        if (sb->scope == SC_FRAG && !region_is_whole(&s->src)) {
            diag_error(k->diag, s->loc, "copy from part of a frag is not supported; copy the whole frag");
            P->ok = false;
        }
        if (db->scope == SC_FRAG && !region_is_whole(&s->dst)) {
            diag_error(k->diag, s->loc, "copy into part of a frag is not supported; copy the whole frag");
            P->ok = false;
        }
        if (db->scope == SC_FRAG)
            assign_default(P, db, sb->scope == SC_FRAG ? 0 : dtype_storage_bytes(sb->dt));
        if (sb->scope == SC_FRAG)
            assign_default(P, sb, db->scope == SC_FRAG ? 0 : dtype_storage_bytes(db->dt));
        if (sb->scope == SC_SHARED && db->scope == SC_GLOBAL)
            sb->transposed_access |= s->src.src_dim[s->src.rank - 1] != sb->rank - 1;
        if (db->scope == SC_SHARED && sb->scope == SC_GLOBAL)
            db->transposed_access |= s->dst.src_dim[s->dst.rank - 1] != db->rank - 1;
        break;
    }
    case TS_FILL: assign_default(P, s->dst.buf, 0); break;
    case TS_REDUCE: {
        TBuf *src = s->src.buf, *dst = s->dst.buf;
        assign_default(P, src, 0);
        if (!src->layout)
            break;
        Layout *want = layout_reduce(k->arena, src->layout, s->dim, s->group);
        if (!want) {
            diag_error(k->diag, s->loc, "the groups of %d elements do not line up with how '%s' is spread over threads; "
                       "choose another 'group' or give '%s' a layout(vec = ...)", s->group, src->name, src->name);
            P->ok = false;
            break;
        }
        if (!dst->layout) {
            dst->layout = want;
        } else {
            bool same = dst->layout->nregs == want->nregs && dst->layout->nmodes == want->nmodes &&
                        memcmp(dst->layout->modes, want->modes, sizeof(LMode) * (size_t)want->nmodes) == 0;
            if (!same) {
                diag_error(k->diag, s->loc, "'%s' already has a layout that does not match this reduction of '%s'; "
                           "reduce into a new frag", dst->name, src->name);
                P->ok = false;
            }
        }
        break;
    }
    case TS_CUMSUM:
        assign_default(P, s->src.buf, 0);
        if (!s->dst.buf->layout)
            s->dst.buf->layout = s->src.buf->layout;
        break;
    case TS_PARALLEL:
        if (s->ptile->scope == SC_FRAG) {
            assign_default(P, s->ptile, 0);
            infer_from_body(P, s->ptile, s->body, s->nbody);
        }
        visit_list(P, s->body, s->nbody);
        break;
    default:
        visit_list(P, s->body, s->nbody);
        visit_list(P, s->els, s->nels);
        break;
    }
}

bool pass_layout(TKernel *k)
{
    LayoutPass P = {k, true};
    /* gemm operands need the tensor-core fragment layouts, whatever touches them first */
    if (!gemm_assign_layouts(k))
        P.ok = false;
    visit(&P, k->body);
    /* frags never defined by a tile op still need one (e.g. written in a parallel loop first) */
    for (int i = 0; i < k->nbufs; i++)
        if (k->bufs[i]->scope == SC_FRAG && !k->bufs[i]->layout)
            assign_default(&P, k->bufs[i], 0);
    /* shared tiles read or written column-wise: a transposing copy reads V x R micro-tiles (R
     * rows of V elements, transpose_rows), R rows at a time. Rows of a multiple of 128 bytes get an
     * XOR swizzle of their 16-byte chunks by (row / R) % 8, which spreads those rows over all
     * banks; others a padded row. */
    for (int i = 0; i < k->nbufs; i++) {
        TBuf *b = k->bufs[i];
        if (b->scope == SC_SHARED && b->transposed_access && b->rank >= 2 && b->dt != DT_E2M1 && !b->row_pad) {
            int es = dtype_storage_bytes(b->dt);
            int64_t rowbytes = b->shape[b->rank - 1] * es;
            if (rowbytes % 128 == 0)
                b->swizzle = transpose_rows(es, b->shape[b->rank - 1], b->shape[b->rank - 2], k->nthreads);
            else
                b->row_pad = es >= 4 ? 1 : 4 / es; /* one 32-bit word */
        }
    }
    return P.ok;
}
