/* layout.c — the layout pass: which thread holds which element of each frag tile. Every frag
 * gets a layout (the algebra is layout_algebra.c's) from its first defining use: the default
 * layout with a vector width from the element size on the memory side of its first copy, or its
 * source's reduced for a reduction's result; gemm operands get the tensor cores' (lower_gemm.c).
 * Shared tiles read or written column-wise get a swizzle or a padded row. */
#include "tir.h"

typedef struct LayoutPass {
    TKernel *k;
    bool ok;
} LayoutPass;

static int64_t pow2_part(int64_t v) { return v & -v; }

/* vector width for a frag from the element size on the memory side of its first copy (packed:
 * that side is e2m1, whose elements move in pairs, whatever the frag holds) */
static int choose_vec(TKernel *k, TBuf *f, int mem_es, bool packed)
{
    if (f->vec_hint)
        return f->vec_hint;
    int64_t v = 16 / (mem_es > 0 ? mem_es : dtype_storage_bytes(f->dt));
    packed |= f->dt == DT_E2M1;
    if (packed && v < 2)
        v = 2;
    int64_t inner = pow2_part(f->shape[f->rank - 1]);
    if (v > inner)
        v = inner;
    int64_t elems = 1;
    for (int d = 0; d < f->rank; d++)
        elems *= f->shape[d];
    while (v > 1 && elems < (int64_t)k->nthreads * v)
        v /= 2;
    if (packed && v < 2 && inner >= 2)
        v = 2; /* whole bytes */
    return (int)(v < 1 ? 1 : v);
}

static void assign_default(LayoutPass *P, TBuf *f, int mem_es, bool packed)
{
    if (f->layout || f->scope != SC_FRAG)
        return;
    int v = choose_vec(P->k, f, mem_es, packed);
    f->layout = layout_default(P->k->arena, f->rank, f->shape, P->k->nthreads, v, f->tpr_hint, f->row_run_hint);
}

/* e2m1 in shared or global memory: two elements per byte (frags and locals hold one per register) */
static bool packed_memory(const TBuf *b) { return b->dt == DT_E2M1 && (b->scope == SC_SHARED || b->scope == SC_GLOBAL); }

/* A copy moves packed e2m1 elements in whole bytes: along the buffer's last dimension, an even
 * number of them from an even index. False after a diagnostic. */
static bool check_packed_side(TKernel *k, const TStmt *s, const Region *r)
{
    const TBuf *b = r->buf;
    if (!packed_memory(b))
        return true;
    int last = b->rank - 1;
    if (r->rank == 0 || r->src_dim[r->rank - 1] != last) {
        diag_error(k->diag, s->loc, "e2m1 elements are packed two per byte along the last dimension; this copy moves '%s' "
                   "along another one (a transposed view or a single column), which would split the bytes", b->name);
        return false;
    }
    int64_t n = r->extent[r->rank - 1];
    if (n % 2) {
        diag_error(k->diag, s->loc, "e2m1 elements are packed two per byte: a copy of '%s' needs an even extent along the last "
                   "dimension, found %lld", b->name, (long long)n);
        return false;
    }
    if (tir_known_div(k, r->start[last]) % 2) {
        diag_error(k->diag, s->loc, "e2m1 elements are packed two per byte: a copy of '%s' must start at an index along the "
                   "last dimension that is known to be even", b->name);
        return false;
    }
    return true;
}

/* the other side of a copy of packed e2m1: a frag's runs of registers pair up with the bytes */
static bool check_packed_frag(TKernel *k, const TStmt *s, const TBuf *f, const TBuf *mem)
{
    if (!packed_memory(mem) || f->scope != SC_FRAG || !f->layout || f->layout->vec % 2 == 0)
        return true;
    diag_error(k->diag, s->loc, "frag '%s' is copied from or to e2m1 memory (two elements per byte) but its layout has runs "
               "of %d element; give it layout(vec = 2) or more", f->name, f->layout->vec);
    return false;
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
            assign_default(P, db, sb->scope == SC_FRAG ? 0 : dtype_storage_bytes(sb->dt), packed_memory(sb));
        if (sb->scope == SC_FRAG)
            assign_default(P, sb, db->scope == SC_FRAG ? 0 : dtype_storage_bytes(db->dt), packed_memory(db));
        if (!check_packed_side(k, s, &s->src) || !check_packed_side(k, s, &s->dst) || !check_packed_frag(k, s, db, sb) ||
            !check_packed_frag(k, s, sb, db))
            P->ok = false;
        if (sb->scope == SC_SHARED && db->scope == SC_GLOBAL)
            sb->transposed_access |= s->src.src_dim[s->src.rank - 1] != sb->rank - 1;
        if (db->scope == SC_SHARED && sb->scope == SC_GLOBAL)
            db->transposed_access |= s->dst.src_dim[s->dst.rank - 1] != db->rank - 1;
        break;
    }
    case TS_FILL: assign_default(P, s->dst.buf, 0, false); break;
    case TS_REDUCE: {
        TBuf *src = s->src.buf, *dst = s->dst.buf;
        assign_default(P, src, 0, false);
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
            if (!layout_equal(dst->layout, want)) {
                diag_error(k->diag, s->loc, "'%s' already has a layout that does not match this reduction of '%s'; "
                           "reduce into a new frag", dst->name, src->name);
                P->ok = false;
            }
        }
        break;
    }
    case TS_CUMSUM:
        assign_default(P, s->src.buf, 0, false);
        if (!s->dst.buf->layout)
            s->dst.buf->layout = s->src.buf->layout;
        break;
    case TS_PARALLEL:
        if (s->ptile->scope == SC_FRAG) {
            assign_default(P, s->ptile, 0, false);
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
            assign_default(&P, k->bufs[i], 0, false);
    /* shared tiles read or written column-wise: a transposing copy reads V x R micro-tiles (R
     * rows of V elements, transpose_rows), R rows at a time. Rows of a multiple of 128 bytes get an
     * XOR swizzle of their 16-byte chunks by (row / R) % 8, which spreads those rows over all
     * banks; others a padded row. */
    for (int i = 0; i < k->nbufs; i++) {
        TBuf *b = k->bufs[i];
        if (b->scope == SC_SHARED && b->transposed_access && b->rank >= 2 && b->dt != DT_E2M1 && !b->row_pad &&
            !b->swizzle) {
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
