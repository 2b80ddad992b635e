/* pipeline.c — the pass between layout and lower_tiles that turns `for pipelined(stages = n)`
 * loops into software pipelines: the loop's global -> shared copies become cp.async into n
 * rotating buffers, issued n - 1 iterations ahead, so that loads overlap compute.
 *
 * Which copies: the statements at the top level of the loop body that copy a global region into
 * (a region of) a shared tile D, when D is written by nothing else in the loop and used nowhere
 * outside it, the element types match (cp.async cannot convert), out-of-bounds reads are 0
 * (zero-fill; no `other`), and the source region is computed from the loop variable, values
 * fixed before the loop and `let`s of the body before the copy (re-evaluated for the iteration
 * being fetched). Any other copy stays where it is, synchronous, with a warning that says why.
 *
 * The rewrite, for n >= 2 (one stage is an ordinary loop), with i counting iterations and v the
 * loop variable:
 *
 *     before:    barrier                  (an outer loop may come back here)
 *                for p in 0 .. n-2: if lo + p*step < hi { copies of iteration p -> stage p }
 *                                   commit_group
 *     loop:      i += 1;  stage = i % n
 *                wait_group(n - 2)        group i (this iteration's tiles) has landed
 *                barrier                  ... for every thread; and all have left iteration i-1
 *                if v + (n-1)*step < hi { copies of iteration i+n-1 -> stage (i+n-1) % n }
 *                commit_group             (always: group numbers stay in step with iterations)
 *                body, D read as D[stage]
 *     after:     wait_group(0)
 *
 * The stage written at iteration i is the one iteration i-1 read; the barrier before the issue
 * orders the two. D gets a leading dimension of n (its row padding kept, so the ldmatrix reads
 * of gemm stay conflict-free). Each copy is split over the threads like a memory-to-memory copy
 * (runs of 16 bytes along the innermost dimension, consecutive threads consecutive runs) and each
 * run becomes one cp.async.cg.shared.global of 16 bytes, or cp.async.ca of 8 or 4 bytes where
 * alignment is not provable; the source size operand is the number of bytes inside the tensor,
 * so the hardware zero-fills ragged tails. When the 16-byte alignment of the global tile is
 * merely unknown (extents and strides without `require` facts), the copy is emitted twice behind
 * a run-time test of the tile's start and row strides (uniform over the block): 16-byte pieces if
 * it holds, the provable pieces otherwise. Pieces under 4 bytes (2-byte elements at a 2-byte
 * alignment) are a synchronous load and store. */
#include "tir.h"

#include <string.h>

typedef struct PL {
    TKernel *k;
    bool ok;
} PL;

static TExpr *ic(TKernel *k, int64_t v) { return tx_const_int(k, DT_I32, v); }

/* ---- references to a buffer ---- */

static bool expr_refs(const TExpr *e, const TBuf *b)
{
    if (!e)
        return false;
    if (e->kind == TX_LOAD && e->buf == b)
        return true;
    if (expr_refs(e->a, b) || expr_refs(e->b, b) || expr_refs(e->c, b))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (expr_refs(e->args[i], b))
            return true;
    return false;
}

static bool region_refs(const Region *r, const TBuf *b)
{
    if (!r->buf)
        return false;
    if (r->buf == b)
        return true;
    for (int d = 0; d < r->buf->rank; d++)
        if (expr_refs(r->start[d], b))
            return true;
    return false;
}

static bool stmt_refs(const TStmt *s, const TBuf *b, const TStmt *skip);

static bool list_refs(TStmt **v, int n, const TBuf *b, const TStmt *skip)
{
    for (int i = 0; i < n; i++)
        if (stmt_refs(v[i], b, skip))
            return true;
    return false;
}

/* does s (minus the subtree `skip`) mention b? */
static bool stmt_refs(const TStmt *s, const TBuf *b, const TStmt *skip)
{
    if (s == skip)
        return false;
    if (s->buf == b || s->ptile == b || region_refs(&s->src, b) || region_refs(&s->dst, b) || region_refs(&s->c, b))
        return true;
    if (expr_refs(s->e, b) || expr_refs(s->lo, b) || expr_refs(s->hi, b) || expr_refs(s->step, b) || expr_refs(s->other, b))
        return true;
    for (int i = 0; i < s->nidx; i++)
        if (expr_refs(s->idx[i], b))
            return true;
    return list_refs(s->body, s->nbody, b, skip) || list_refs(s->els, s->nels, b, skip);
}

static bool expr_writes(const TExpr *e, const TBuf *b)
{
    if (!e)
        return false;
    if (e->kind == TX_CALL && e->builtin >= BI_ATOMIC_ADD && e->builtin <= BI_ATOMIC_CAS && e->nargs && e->args[0]->buf == b)
        return true;
    if (expr_writes(e->a, b) || expr_writes(e->b, b) || expr_writes(e->c, b))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (expr_writes(e->args[i], b))
            return true;
    return false;
}

/* does anything in v other than `skip` write b (or iterate over it)? */
static bool list_writes(TStmt **v, int n, const TBuf *b, const TStmt *skip)
{
    for (int i = 0; i < n; i++) {
        const TStmt *s = v[i];
        if (s == skip)
            continue;
        if ((s->kind == TS_STORE && s->buf == b) || s->ptile == b || expr_writes(s->e, b))
            return true;
        if ((s->kind == TS_COPY || s->kind == TS_FILL) && s->dst.buf == b)
            return true;
        if (list_writes(s->body, s->nbody, b, skip) || list_writes(s->els, s->nels, b, skip))
            return true;
    }
    return false;
}

/* variables assigned (or declared) anywhere in v */
static bool list_assigns(TStmt **v, int n, const TVar *var)
{
    for (int i = 0; i < n; i++) {
        const TStmt *s = v[i];
        if ((s->kind == TS_ASSIGN || s->kind == TS_DECL || s->kind == TS_FOR) && s->var == var)
            return true;
        if (list_assigns(s->body, s->nbody, var) || list_assigns(s->els, s->nels, var))
            return true;
    }
    return false;
}

/* ---- re-evaluating the source of a copy for another iteration ---- */

typedef struct Subst {
    TKernel *k;
    const TStmt *loop;
    int upto;             /* body statements before the copy */
    TExpr *iv;            /* the loop variable's value for the fetched iteration */
    const char *why;      /* why the copy cannot be hoisted */
} Subst;

static TExpr *subst(Subst *S, TExpr *e);
static TExpr *subst_operand(void *S, TExpr *e) { return subst(S, e); }

static TExpr *subst(Subst *S, TExpr *e)
{
    if (!e || S->why)
        return e;
    TKernel *k = S->k;
    switch (e->kind) {
    case TX_VAR: {
        const TStmt *L = S->loop;
        if (e->var == L->var)
            return tx_cvt(k, e->var->dt, S->iv, RND_DEFAULT);
        for (int i = 0; i < S->upto; i++) {
            const TStmt *d = L->body[i];
            if (d->kind == TS_DECL && d->var == e->var) {
                if (e->var->mutable_ || !d->e) {
                    S->why = "it uses a variable that changes inside the loop";
                    return e;
                }
                return subst(S, d->e); /* a `let` of the body: its value for that iteration */
            }
        }
        if (list_assigns(L->body, L->nbody, e->var)) {
            S->why = "it uses a variable that changes inside the loop";
            return e;
        }
        return e;
    }
    case TX_LOAD:
        if (e->buf->scope != SC_GLOBAL || e->buf->written) {
            S->why = "its position is read from memory the kernel writes";
            return e;
        }
        break;
    case TX_CALL: {
        BuiltinClass cls = e->builtin > 0 && e->builtin < BI_COUNT ? builtin_info((BuiltinId)e->builtin)->cls : BC_THREAD;
        if (cls != BC_MATH && cls != BC_INT) {
            S->why = "its position calls a thread-level builtin";
            return e;
        }
        break;
    }
    default: break;
    }
    return tx_rebuild(k, e, subst_operand, S);
}

/* ---- D -> D[stage] ---- */

static TExpr *restage_expr(TKernel *k, TExpr *e, const TBuf *D, TExpr *stage)
{
    if (!e)
        return NULL;
    TExpr *a = restage_expr(k, e->a, D, stage), *b = restage_expr(k, e->b, D, stage), *c = restage_expr(k, e->c, D, stage);
    TExpr **args = e->args;
    bool changed = a != e->a || b != e->b || c != e->c;
    if (e->nargs) {
        args = ARENA_ARRAY(k->arena, TExpr *, e->nargs + 1);
        for (int i = 0; i < e->nargs; i++) {
            args[i] = restage_expr(k, e->args[i], D, stage);
            changed |= args[i] != e->args[i];
        }
    }
    if (e->kind == TX_LOAD && e->buf == D) {
        TExpr **na = ARENA_ARRAY(k->arena, TExpr *, e->nargs + 1);
        na[0] = stage;
        memcpy(na + 1, args, sizeof(TExpr *) * (size_t)e->nargs);
        args = na;
        changed = true;
    }
    if (!changed)
        return e;
    TExpr *n = ARENA_NEW(k->arena, TExpr);
    *n = *e;
    n->a = a;
    n->b = b;
    n->c = c;
    n->args = args;
    if (e->kind == TX_LOAD && e->buf == D)
        n->nargs = e->nargs + 1;
    return n;
}

static void restage_region(TKernel *k, Region *r, const TBuf *D, TExpr *stage)
{
    if (!r->buf)
        return;
    for (int d = 0; d < r->buf->rank; d++)
        r->start[d] = restage_expr(k, r->start[d], D, stage);
    if (r->buf != D)
        return;
    /* D's dims moved up by one: the stage is a new, dropped leading dim (rank is D's old rank) */
    int rank = D->rank - 1;
    for (int d = rank; d > 0; d--) {
        r->start[d] = r->start[d - 1];
        r->dropped[d] = r->dropped[d - 1];
    }
    r->start[0] = stage;
    r->dropped[0] = true;
    for (int i = 0; i < r->rank; i++)
        r->src_dim[i]++;
}

static void restage_list(TKernel *k, TStmt **v, int n, const TBuf *D, TExpr *stage);

static void restage_stmt(TKernel *k, TStmt *s, const TBuf *D, TExpr *stage)
{
    restage_region(k, &s->src, D, stage);
    restage_region(k, &s->dst, D, stage);
    restage_region(k, &s->c, D, stage);
    s->e = restage_expr(k, s->e, D, stage);
    s->lo = restage_expr(k, s->lo, D, stage);
    s->hi = restage_expr(k, s->hi, D, stage);
    s->step = restage_expr(k, s->step, D, stage);
    s->other = restage_expr(k, s->other, D, stage);
    if (s->nidx) {
        TExpr **ni = ARENA_ARRAY(k->arena, TExpr *, s->nidx);
        for (int i = 0; i < s->nidx; i++)
            ni[i] = restage_expr(k, s->idx[i], D, stage);
        s->idx = ni;
    }
    restage_list(k, s->body, s->nbody, D, stage);
    restage_list(k, s->els, s->nels, D, stage);
}

static void restage_list(TKernel *k, TStmt **v, int n, const TBuf *D, TExpr *stage)
{
    for (int i = 0; i < n; i++)
        restage_stmt(k, v[i], D, stage);
}

/* ---- the asynchronous copy of one iteration ---- */

static TExpr *stride_of(TKernel *k, const TBuf *b, int d)
{
    if (b->scope == SC_GLOBAL)
        return b->gstride[d];
    int64_t s = 1;
    for (int i = b->rank - 1; i > d; i--)
        s *= b->shape[i] + (i == b->rank - 1 ? b->row_pad : 0);
    return tx_const_int(k, DT_I64, s);
}

/* element size in 4-bit units: e2m1 packs two elements per byte */
static int elem_nibbles(DType t)
{
    return t == DT_E2M1 ? 1 : 2 * dtype_storage_bytes(t);
}

/* bytes the address of b[idx] is known to be aligned to (at most 16) */
static int64_t known_align(TKernel *k, const TBuf *b, TExpr **idx)
{
    int64_t base = b->scope == SC_GLOBAL ? (b->align ? b->align : 1) : 16;
    int64_t div = 1 << 12;
    for (int d = 0; d < b->rank; d++) {
        int64_t di = tir_known_div(k, idx[d]) * tir_known_div(k, stride_of(k, b, d));
        if (di < div)
            div = di;
    }
    int64_t nib = elem_nibbles(b->dt) * div; /* e2m1 at an odd element: not even byte aligned */
    int64_t a = nib % 2 ? 1 : tl_gcd(base, nib / 2);
    return a > 16 ? 16 : a;
}

static bool unit_inner(TKernel *k, const TBuf *b, int d)
{
    int64_t v;
    return d == b->rank - 1 && tx_is_const(stride_of(k, b, d), &v) && v == 1;
}

/* all region dims but `skip` inside the global tensor (NULL if provably so) */
static TExpr *inside(TKernel *k, const Region *r, TExpr **idx, int skip)
{
    TExpr *p = NULL;
    for (int i = 0; i < r->rank; i++) {
        int d = r->src_dim[i];
        if (d == skip)
            continue;
        int64_t v, ext;
        if (tx_is_const(idx[d], &v) && tx_is_const(r->buf->gdim[d], &ext) && v >= 0 && v < ext)
            continue;
        TExpr *c = tx_bin(k, OP_LT, tx_cvt(k, DT_U32, idx[d], RND_DEFAULT), tx_cvt(k, DT_U32, r->buf->gdim[d], RND_DEFAULT));
        p = p ? tx_bin(k, OP_LAND, p, c) : c;
    }
    return p;
}

static void push_guarded(TKernel *k, TStmt *out, TExpr *pred, TStmt *s)
{
    if (!pred) {
        ts_push(k, out, s);
        return;
    }
    TStmt *i = ts_if(k, pred);
    ts_push(k, i, s);
    ts_push(k, out, i);
}

static void cp_async(TKernel *k, TStmt *out, int bytes, TExpr *dst, TExpr *src, TExpr *src_bytes)
{
    TExpr *args[3] = {dst, src, src_bytes};
    ts_push(k, out, ts_intrin(k, TI_CP_ASYNC, bytes, args, 3, NULL, 0, loc_none()));
}

static TExpr *addr(TKernel *k, TBuf *b, TExpr **idx)
{
    TExpr *ld = tx_load(k, b, idx, b->rank);
    return tx_call(k, TI_ADDR, DT_U64, &ld, 1);
}

/* element copy, synchronous: inside ? src : 0 */
static void sync_elem(TKernel *k, TStmt *out, const Region *src, TExpr **gidx, TBuf *D, TExpr **sidx)
{
    TExpr *p = inside(k, src, gidx, -1);
    TStmt *st = ts_store(k, D, sidx, D->rank, tx_load(k, src->buf, gidx, src->buf->rank));
    if (!p) {
        ts_push(k, out, st);
        return;
    }
    TStmt *i = ts_if(k, p);
    ts_push(k, i, st);
    TExpr *z = dtype_is_float(D->dt) ? tx_const_float(k, D->dt, 0) : tx_const_int(k, D->dt, 0);
    ts_push_else(k, i, ts_store(k, D, sidx, D->rank, z));
    ts_push(k, out, i);
}

/* One way of splitting a copy into pieces. assume_aligned: take the global tile's start and
 * row strides as multiples of 16 bytes (a run-time test guards that version). */
typedef struct Split {
    TKernel *k;
    Region src, dst;
    TBuf *D;
    TExpr *stage;
    const Layout *lay;
    TExpr *tc[TL_MAX_RANK];
    int nib, rd, gd, run; /* nib: element size in 4-bit units (elem_nibbles) */
} Split;

static TStmt *split_copy(Split *X, bool assume_aligned, bool *async_all, int64_t *smallest)
{
    TKernel *k = X->k;
    const Layout *lay = X->lay;
    int nib = X->nib, rd = X->rd, gd = X->gd, run = X->run;
    TBuf *D = X->D;
    TStmt *body = ts_seq(k);
    *async_all = true;
    *smallest = 16;
    for (int r0 = 0; r0 < lay->nregs; r0 += lay->vec) {
        for (int e0 = 0; e0 < lay->vec; e0 += run) {
            TExpr *gidx[TL_MAX_RANK], *sidx[TL_MAX_RANK + 1];
            for (int d = 0; d < X->src.buf->rank; d++)
                gidx[d] = X->src.start[d];
            sidx[0] = X->stage;
            for (int d = 0; d < D->rank - 1; d++)
                sidx[d + 1] = X->dst.start[d];
            TExpr *co_rd = NULL;
            for (int i = 0; i < X->src.rank; i++) {
                TExpr *co = tx_bin(k, OP_ADD, X->tc[i], ic(k, layout_reg_coord(lay, r0, i) + (i == rd ? e0 : 0)));
                if (i == rd)
                    co_rd = co;
                gidx[X->src.src_dim[i]] = tx_bin(k, OP_ADD, X->src.start[X->src.src_dim[i]], co);
                sidx[X->dst.src_dim[i] + 1] = tx_bin(k, OP_ADD, X->dst.start[X->dst.src_dim[i]], co);
            }
            /* the largest piece both addresses are aligned to, 16 bytes at most */
            int64_t piece = (int64_t)run * nib / 2;
            int64_t al = known_align(k, X->src.buf, gidx), as = known_align(k, D, sidx);
            if (assume_aligned) {
                int64_t an = nib * tir_known_div(k, co_rd);
                al = an % 2 ? 1 : tl_gcd(16, an / 2);
            }
            while (piece > 1 && 2 * piece > nib && (piece > 16 || al % piece || as % piece))
                piece /= 2;
            if (piece < 4 || al % piece || as % piece) {
                *async_all = false;
                *smallest = 0;
                for (int j = 0; j < run; j++) {
                    TExpr *g2[TL_MAX_RANK], *s2[TL_MAX_RANK + 1];
                    memcpy(g2, gidx, sizeof gidx);
                    memcpy(s2, sidx, sizeof sidx);
                    g2[gd] = tx_bin(k, OP_ADD, gidx[gd], ic(k, j));
                    s2[X->dst.src_dim[rd] + 1] = tx_bin(k, OP_ADD, sidx[X->dst.src_dim[rd] + 1], ic(k, j));
                    sync_elem(k, body, &X->src, g2, D, s2);
                }
                continue;
            }
            if (piece < *smallest)
                *smallest = piece;
            int per = (int)(piece * 2 / nib);
            for (int j = 0; j < run; j += per) {
                TExpr *g2[TL_MAX_RANK], *s2[TL_MAX_RANK + 1];
                memcpy(g2, gidx, sizeof gidx);
                memcpy(s2, sidx, sizeof sidx);
                g2[gd] = tx_bin(k, OP_ADD, gidx[gd], ic(k, j));
                s2[X->dst.src_dim[rd] + 1] = tx_bin(k, OP_ADD, sidx[X->dst.src_dim[rd] + 1], ic(k, j));
                /* bytes inside the tensor: elements left in the run's row, if the other dims are in */
                TExpr *n;
                int64_t iv, ext;
                if (tx_is_const(g2[gd], &iv) && tx_is_const(X->src.buf->gdim[gd], &ext) && iv >= 0 && iv + per <= ext) {
                    n = ic(k, piece);
                } else {
                    TExpr *left = tx_bin(k, OP_SUB, X->src.buf->gdim[gd], g2[gd]);
                    TExpr *a1[2] = {left, ic(k, 0)};
                    TExpr *lo = tx_call(k, BI_MAX, DT_I32, a1, 2);
                    TExpr *a2[2] = {lo, ic(k, per)};
                    TExpr *elems = tx_call(k, BI_MIN, DT_I32, a2, 2);
                    n = nib % 2 ? tx_bin(k, OP_DIV, tx_bin(k, OP_ADD, elems, ic(k, 1)), ic(k, 2))
                                : tx_bin(k, OP_MUL, elems, ic(k, nib / 2));
                }
                TExpr *in = inside(k, &X->src, g2, gd);
                if (in)
                    n = tx_select(k, in, n, ic(k, 0));
                cp_async(k, body, (int)piece, addr(k, D, s2), addr(k, X->src.buf, g2), n);
            }
        }
    }
    return body;
}

/* Is the global tile 16-byte aligned at run time: its first element and its row strides? */
static TExpr *aligned_at_run_time(Split *X)
{
    TKernel *k = X->k;
    const Region *r = &X->src;
    int64_t v = 32 / X->nib;
    TExpr *lin = tx_const_int(k, DT_I64, 0);
    TExpr *cond = NULL;
    for (int d = 0; d < r->buf->rank; d++) {
        TExpr *st = r->buf->gstride[d];
        lin = tx_bin(k, OP_ADD, lin, tx_bin(k, OP_MUL, tx_cast_int(k, r->start[d], DT_I64), st));
        bool in_region = false;
        for (int i = 0; i < r->rank; i++)
            in_region |= r->src_dim[i] == d;
        if (!in_region || d == X->gd || tir_known_div(k, st) % v == 0)
            continue;
        TExpr *c = tx_bin(k, OP_EQ, tx_bin(k, OP_MOD, st, tx_const_int(k, DT_I64, v)), tx_const_int(k, DT_I64, 0));
        cond = cond ? tx_bin(k, OP_LAND, cond, c) : c;
    }
    TExpr *c = tx_bin(k, OP_EQ, tx_bin(k, OP_MOD, lin, tx_const_int(k, DT_I64, v)), tx_const_int(k, DT_I64, 0));
    return cond ? tx_bin(k, OP_LAND, cond, c) : c;
}

/* the split of copy `c` (source re-evaluated by S) into stage `stage`; returns whether the
 * innermost dimension is contiguous on both sides */
static bool prepare_split(TKernel *k, Split *X, const TStmt *c, Subst *S, TExpr *stage)
{
    *X = (Split){0};
    X->k = k;
    X->src = c->src;
    X->dst = c->dst;
    if (X->src.buf->list) /* an element of a tensor list: the one of the fetched iteration */
        X->src.buf = tir_list_element(k, X->src.buf->list, subst(S, X->src.buf->list_index));
    for (int d = 0; d < X->src.buf->rank; d++)
        X->src.start[d] = subst(S, X->src.start[d]);
    for (int d = 0; d < X->dst.buf->rank; d++)
        X->dst.start[d] = subst(S, X->dst.start[d]);
    X->D = X->dst.buf;
    X->stage = stage;
    X->nib = elem_nibbles(X->D->dt);
    int64_t shape[TL_MAX_RANK];
    for (int i = 0; i < X->src.rank; i++)
        shape[i] = X->src.extent[i];
    Layout *lay = layout_default(k->arena, X->src.rank, shape, k->nthreads, 32 / X->nib, 0, 0);
    X->lay = lay;
    for (int i = 0; i < X->src.rank; i++)
        X->tc[i] = layout_thread_coord(k, lay, i);
    X->rd = X->src.rank - 1;
    X->gd = X->src.src_dim[X->rd];
    bool contiguous = unit_inner(k, X->src.buf, X->gd) && unit_inner(k, X->D, X->dst.src_dim[X->rd] + 1);
    X->run = contiguous ? lay->vec : 1;
    return contiguous;
}

/* Emits the copy `c` (source re-evaluated by S) into stage `stage` of D: cp.async pieces as
 * large as the proven alignment allows, and, when a 16-byte alignment of the global tile is
 * merely unknown, a second version for it behind a run-time test (uniform over the block).
 * Returns false if the version that is sure to be taken for some inputs is partly synchronous. */
static bool emit_copy(PL *P, TStmt *out, const TStmt *c, Subst *S, TExpr *stage)
{
    TKernel *k = P->k;
    Split X;
    bool contiguous = prepare_split(k, &X, c, S, stage);
    bool async_sure, async_opt;
    int64_t small_sure, small_opt;
    TStmt *sure = split_copy(&X, false, &async_sure, &small_sure);
    TStmt *body = sure;
    if (contiguous && X.src.buf->align >= 16) {
        TStmt *opt = split_copy(&X, true, &async_opt, &small_opt);
        if (small_opt > small_sure) {
            body = ts_if(k, aligned_at_run_time(&X));
            ts_push(k, body, opt);
            ts_push_else(k, body, sure);
            async_sure = async_opt;
        }
    }
    push_guarded(k, out, layout_leader_pred(k, X.lay), body);
    return async_sure;
}

/* ---- the loop ---- */

static const char *copy_blocker(PL *P, const TStmt *loop, int ci)
{
    TKernel *k = P->k;
    const TStmt *c = loop->body[ci];
    TBuf *D = c->dst.buf;
    if (D->scratch || D->rank >= TL_MAX_RANK)
        return "its destination cannot take a stage dimension";
    if (c->src.buf->dt != D->dt || D->dt == DT_BOOL)
        return "it converts between element types, which cp.async cannot do";
    if (c->other && !(c->other->kind == TX_CONST && c->other->ival == 0 && c->other->fval == 0))
        return "cp.async fills elements outside the tensor with 0, not with 'other'";
    if (list_writes(loop->body, loop->nbody, D, c))
        return arena_printf(k->arena, "'%s' is also written by something else in the loop", D->name);
    if (list_refs(k->body->body, k->body->nbody, D, loop))
        return arena_printf(k->arena, "'%s' is also used outside the loop", D->name);
    Subst S = {k, loop, ci, tx_var(k, loop->var), NULL};
    if (c->src.buf->list)
        subst(&S, c->src.buf->list_index);
    for (int d = 0; d < c->src.buf->rank; d++)
        subst(&S, c->src.start[d]);
    for (int d = 0; d < D->rank; d++)
        subst(&S, c->dst.start[d]);
    if (!S.why && D->dt == DT_E2M1) {
        /* a copy that falls back to elements would store single e2m1 elements (half bytes),
         * which nothing can: e2m1 is fetched ahead only when every piece is sure to be async,
         * and only from rows of an even length, so that a row's last byte holds no element of
         * the next row or past the end (it would land where the copy must put zeros) */
        if (tir_known_div(k, c->src.buf->gdim[c->src.src_dim[c->src.rank - 1]]) % 2)
            return "e2m1 pairs share bytes, and this copy is not sure to move whole aligned 4-byte pieces";
        Split X;
        bool all;
        int64_t smallest;
        int64_t shape[TL_MAX_RANK];
        memcpy(shape, D->shape, sizeof shape);
        for (int d = D->rank; d > 0; d--) /* the stage dimension the split will index */
            D->shape[d] = D->shape[d - 1];
        D->shape[0] = 2;
        D->rank++;
        prepare_split(k, &X, c, &S, ic(k, 0));
        split_copy(&X, false, &all, &smallest);
        D->rank--;
        memcpy(D->shape, shape, sizeof shape);
        if (!all)
            return "e2m1 pairs share bytes, and this copy is not sure to move whole aligned 4-byte pieces";
    }
    return S.why;
}

/* copies from global to shared memory nested in branches or loops of the body stay where they are */
static void warn_nested(PL *P, TStmt **v, int n)
{
    for (int i = 0; i < n; i++) {
        TStmt *s = v[i];
        if (s->kind == TS_COPY && s->src.buf->scope == SC_GLOBAL && s->dst.buf->scope == SC_SHARED)
            diag_warning(P->k->diag, s->loc,
                         "this copy stays synchronous in the pipelined loop: only copies at the top level of the loop "
                         "body are fetched ahead");
        if (s->kind != TS_PARALLEL) {
            warn_nested(P, s->body, s->nbody);
            warn_nested(P, s->els, s->nels);
        }
    }
}

/* the statements of plain nested sequences (the branch an `if const` kept, a `{ }` block) in
 * their place, so that a copy inside one is at the top level of the loop body */
static void splice_seqs(TKernel *k, TStmt *out, TStmt **v, int n)
{
    for (int i = 0; i < n; i++) {
        if (v[i]->kind == TS_SEQ)
            splice_seqs(k, out, v[i]->body, v[i]->nbody);
        else
            ts_push(k, out, v[i]);
    }
}

static void pipeline_loop(PL *P, TStmt *loop, TStmt *parent_out)
{
    TKernel *k = P->k;
    int n = loop->stages;
    loop->for_kind = FOR_SERIAL;
    if (n < 2 || k->host) { /* one stage, or the emulator (no cp.async): the plain loop */
        ts_push(k, parent_out, loop);
        return;
    }
    TStmt *flat = ts_seq(k);
    splice_seqs(k, flat, loop->body, loop->nbody);
    loop->body = flat->body;
    loop->nbody = flat->nbody;
    int async_idx[64], na = 0;
    for (int i = 0; i < loop->nbody && na < 64; i++) {
        TStmt *c = loop->body[i];
        if (c->kind != TS_PARALLEL) {
            warn_nested(P, c->body, c->nbody);
            warn_nested(P, c->els, c->nels);
        }
        if (c->kind != TS_COPY || c->src.buf->scope != SC_GLOBAL || c->dst.buf->scope != SC_SHARED)
            continue;
        const char *why = copy_blocker(P, loop, i);
        if (why) {
            diag_warning(k->diag, c->loc, "this copy stays synchronous in the pipelined loop: %s", why);
            continue;
        }
        async_idx[na++] = i;
    }
    if (!na) {
        ts_push(k, parent_out, loop);
        return;
    }
    DType it = loop->var->dt;
    TVar *lo = tir_var(k, "pipe_lo", it, false), *hi = tir_var(k, "pipe_hi", it, false), *st = tir_var(k, "pipe_step", it, false);
    ts_push(k, parent_out, ts_decl(k, lo, loop->lo));
    ts_push(k, parent_out, ts_decl(k, hi, loop->hi));
    ts_push(k, parent_out, ts_decl(k, st, loop->step ? loop->step : tx_const_int(k, it, 1)));
    loop->lo = tx_var(k, lo);
    loop->hi = tx_var(k, hi);
    loop->step = tx_var(k, st);
    /* each filled tile gets its stage dimension first: the copies below index it */
    for (int j = 0; j < na; j++) {
        TBuf *D = loop->body[async_idx[j]]->dst.buf;
        for (int d = D->rank; d > 0; d--)
            D->shape[d] = D->shape[d - 1];
        D->shape[0] = n;
        D->rank++;
    }
    /* no thread may still read a stage buffer from an earlier run of this loop (an outer loop) */
    ts_push(k, parent_out, ts_barrier(k));
    /* prologue: iterations 0 .. n-2 into stages 0 .. n-2 */
    for (int p = 0; p + 1 < n; p++) {
        TExpr *ivp = tx_bin(k, OP_ADD, tx_var(k, lo), tx_bin(k, OP_MUL, tx_var(k, st), tx_const_int(k, it, p)));
        TStmt *g = ts_if(k, tx_bin(k, OP_LT, ivp, tx_var(k, hi)));
        for (int j = 0; j < na; j++) {
            Subst S = {k, loop, async_idx[j], ivp, NULL};
            if (!emit_copy(P, g, loop->body[async_idx[j]], &S, ic(k, p)) && p == 0)
                diag_warning(k->diag, loop->body[async_idx[j]]->loc,
                             "this pipelined copy is partly synchronous: its elements are not laid out in runs of 4 "
                             "aligned bytes or more, which cp.async needs");
        }
        ts_push(k, parent_out, g);
        ts_push(k, parent_out, ts_intrin(k, TI_CP_COMMIT, 0, NULL, 0, NULL, 0, loop->loc));
    }
    /* the loop: wait, barrier, fetch n-1 ahead, commit, compute on D[stage] */
    TVar *count = tir_var(k, "pipe_iter", DT_I32, true);
    ts_push(k, parent_out, ts_decl(k, count, ic(k, -1)));
    TStmt *nb = ts_seq(k);
    ts_push(k, nb, ts_assign(k, count, tx_bin(k, OP_ADD, tx_var(k, count), ic(k, 1))));
    TVar *stage = tir_var(k, "stage", DT_I32, false);
    ts_push(k, nb, ts_decl(k, stage, tx_bin(k, OP_MOD, tx_var(k, count), ic(k, n))));
    ts_push(k, nb, ts_intrin(k, TI_CP_WAIT, n - 2, NULL, 0, NULL, 0, loop->loc));
    ts_push(k, nb, ts_barrier(k));
    TExpr *ahead = tx_bin(k, OP_ADD, tx_var(k, loop->var), tx_bin(k, OP_MUL, tx_var(k, st), tx_const_int(k, it, n - 1)));
    TVar *next = tir_var(k, "pipe_next", it, false);
    ts_push(k, nb, ts_decl(k, next, ahead));
    TStmt *g = ts_if(k, tx_bin(k, OP_LT, tx_var(k, next), tx_var(k, hi)));
    TExpr *wstage = tx_bin(k, OP_MOD, tx_bin(k, OP_ADD, tx_var(k, count), ic(k, n - 1)), ic(k, n));
    for (int j = 0; j < na; j++) {
        Subst S = {k, loop, async_idx[j], tx_var(k, next), NULL};
        emit_copy(P, g, loop->body[async_idx[j]], &S, wstage);
    }
    ts_push(k, nb, g);
    ts_push(k, nb, ts_intrin(k, TI_CP_COMMIT, 0, NULL, 0, NULL, 0, loop->loc));
    /* the rest of the body, reading the stage buffers */
    TStmt *rest = ts_seq(k);
    for (int i = 0; i < loop->nbody; i++) {
        bool hoisted = false;
        for (int j = 0; j < na; j++)
            hoisted |= async_idx[j] == i;
        if (!hoisted)
            ts_push(k, rest, loop->body[i]);
    }
    for (int j = 0; j < na; j++)
        restage_list(k, rest->body, rest->nbody, loop->body[async_idx[j]]->dst.buf, tx_var(k, stage));
    ts_push(k, nb, rest);
    loop->body = nb->body;
    loop->nbody = nb->nbody;
    ts_push(k, parent_out, loop);
    ts_push(k, parent_out, ts_intrin(k, TI_CP_WAIT, 0, NULL, 0, NULL, 0, loop->loc));
}

static void walk(PL *P, TStmt *seq);

static void walk_list(PL *P, TStmt ***v, int *n)
{
    TStmt holder = {0};
    holder.body = *v;
    holder.nbody = *n;
    walk(P, &holder);
    *v = holder.body;
    *n = holder.nbody;
}

/* rebuilds seq's statement list, each pipelined loop replaced by its prologue, loop and drain */
static void walk(PL *P, TStmt *seq)
{
    TStmt *out = ts_seq(P->k);
    for (int i = 0; i < seq->nbody; i++) {
        TStmt *s = seq->body[i];
        if (s->kind == TS_PARALLEL) {
            ts_push(P->k, out, s);
            continue;
        }
        walk_list(P, &s->body, &s->nbody);
        walk_list(P, &s->els, &s->nels);
        if (s->kind == TS_FOR && s->for_kind == FOR_PIPELINED)
            pipeline_loop(P, s, out);
        else
            ts_push(P->k, out, s);
    }
    seq->body = out->body;
    seq->nbody = out->nbody;
}

bool pass_pipeline(TKernel *k)
{
    PL P = {k, true};
    walk(&P, k->body);
    return P.ok;
}
