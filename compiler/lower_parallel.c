/* lower_parallel.c — parallel (i, ...) in tile { body }: the body unrolled over the elements a
 * thread holds (the registers of a frag's layout, a default layout's for a shared tile, every
 * element of a per-thread local tile), with the frag accesses in it resolved to registers at
 * compile time; stores to memory of replicated elements made by one replica. */
#include "tir.h"

typedef struct ParallelLowering {
    TKernel *k;
    bool ok;
} ParallelLowering;

static TExpr *i32c(ParallelLowering *L, int64_t v) { return tx_const_int(L->k, DT_I32, v); }

typedef struct Subst {
    ParallelLowering *L;
    TStmt *par;
    const Layout *lay;    /* layout of the iterated tile (NULL: per-thread local tile) */
    int r;                /* register being expanded */
    TExpr *coord[TL_MAX_RANK];
    int64_t *const_coord; /* local tiles: compile-time coordinates */
    TExpr *leader;        /* predicate for stores on replicated tiles */
    bool err;
} Subst;

/* compile-time evaluation of an index expression with the loop indices bound */
static bool eval_idx(Subst *S, const TExpr *e, const int64_t *pv, int64_t *out)
{
    switch (e->kind) {
    case TX_CONST:
        *out = e->ival;
        return dtype_is_int(e->dt);
    case TX_VAR:
        for (int i = 0; i < S->par->npvars; i++)
            if (S->par->pvars[i] == e->var) {
                *out = pv[i];
                return true;
            }
        return false;
    case TX_CVT: return dtype_is_int(e->dt) && eval_idx(S, e->a, pv, out);
    case TX_BIN: {
        int64_t a, b;
        if (!eval_idx(S, e->a, pv, &a) || !eval_idx(S, e->b, pv, &b))
            return false;
        const char *err;
        ConstVal v = cv_binary(e->op, cv_int(a), cv_int(b), DT_I64, &err);
        if (v.kind != CV_INT)
            return false;
        *out = v.i;
        return true;
    }
    default: return false;
    }
}

/* the register of frag g that holds g[idx] for the element being expanded, the same in every
 * thread; -1 when there is none */
static int resolve_reg(Subst *S, TBuf *g, TExpr **idx, Loc loc)
{
    TKernel *k = S->L->k;
    const Layout *lf = S->lay, *lg = g->layout;
    if (!lf || !lg) {
        diag_error(k->diag, loc, "frag '%s' cannot be accessed in a parallel loop over a non-frag tile", g->name);
        return -1;
    }
    /* the common case: same layout, indexed by the loop indices */
    bool direct = lf == lg && S->par->npvars == g->rank;
    for (int i = 0; direct && i < g->rank; i++)
        direct = idx[i]->kind == TX_VAR && idx[i]->var == S->par->pvars[i];
    if (direct)
        return S->r;
    int found = -2;
    for (int t = 0; t < k->nthreads; t++) {
        int64_t fc[TL_MAX_RANK], gc[TL_MAX_RANK];
        layout_coord(lf, t, S->r, fc);
        for (int i = 0; i < g->rank; i++)
            if (!eval_idx(S, idx[i], fc, &gc[i])) {
                diag_error(k->diag, loc, "the indices of frag '%s' must be computed from the loop indices and constants", g->name);
                return -1;
            }
        int r = layout_find_reg(lg, t, gc);
        if (r < 0 || (found >= 0 && r != found)) {
            diag_error(k->diag, loc, "frag '%s' is not laid out like '%s': its element is not held by the same thread; "
                       "index it with the loop indices of a tile of the same layout", g->name, S->par->ptile->name);
            return -1;
        }
        found = r;
    }
    return found;
}

static TExpr *rw_expr(Subst *S, TExpr *e);
static TExpr *rw_operand(void *S, TExpr *e) { return rw_expr(S, e); }

static TExpr *rw_expr(Subst *S, TExpr *e)
{
    if (!e)
        return NULL;
    TKernel *k = S->L->k;
    if (e->kind == TX_VAR) {
        for (int i = 0; i < S->par->npvars; i++)
            if (S->par->pvars[i] == e->var)
                return S->const_coord ? i32c(S->L, S->const_coord[i]) : S->coord[i];
        return e;
    }
    if (e->kind == TX_LOAD && e->buf->scope == SC_FRAG) {
        int r = resolve_reg(S, e->buf, e->args, e->loc);
        if (r < 0) {
            S->err = true;
            return i32c(S->L, 0);
        }
        return tx_frag_reg(S->L->k, e->buf, r);
    }
    return tx_rebuild(k, e, rw_operand, S);
}

static TStmt *rw_stmt(Subst *S, TStmt *s);

static TStmt **rw_list(Subst *S, TStmt **v, int n)
{
    TStmt **o = ARENA_ARRAY(S->L->k->arena, TStmt *, n ? n : 1);
    for (int i = 0; i < n; i++)
        o[i] = rw_stmt(S, v[i]);
    return o;
}

static bool has_side_effect_call(const TExpr *e)
{
    if (!e)
        return false;
    if (e->kind == TX_CALL && e->builtin >= BI_ATOMIC_ADD && e->builtin <= BI_ATOMIC_CAS)
        return true;
    if (e->kind == TX_CALL && e->builtin == BI_PRINTF)
        return true;
    if (has_side_effect_call(e->a) || has_side_effect_call(e->b) || has_side_effect_call(e->c))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (has_side_effect_call(e->args[i]))
            return true;
    return false;
}

static TStmt *rw_stmt(Subst *S, TStmt *s)
{
    TKernel *k = S->L->k;
    if (s->kind == TS_STORE && s->buf->scope == SC_FRAG) {
        int r = resolve_reg(S, s->buf, s->idx, s->loc);
        if (r < 0) {
            S->err = true;
            return ts_seq(k);
        }
        return ts_frag_reg_store(S->L->k, s->buf, r, rw_expr(S, s->e));
    }
    TStmt *c = ARENA_NEW(k->arena, TStmt);
    *c = *s;
    c->e = rw_expr(S, s->e);
    c->lo = rw_expr(S, s->lo);
    c->hi = rw_expr(S, s->hi);
    c->step = rw_expr(S, s->step);
    if (s->nidx) {
        c->idx = ARENA_ARRAY(k->arena, TExpr *, s->nidx);
        for (int i = 0; i < s->nidx; i++)
            c->idx[i] = rw_expr(S, s->idx[i]);
    }
    c->body = rw_list(S, s->body, s->nbody);
    c->els = rw_list(S, s->els, s->nels);
    /* effects on memory happen once per element, even when replicas hold the element */
    if (S->leader && ((s->kind == TS_STORE && s->buf->scope != SC_LOCAL) || (s->kind == TS_EVAL && has_side_effect_call(s->e))))
        return ts_guard(S->L->k, S->leader, c);
    return c;
}

/* the body once per element a thread holds: more than TL_MAX_CODE_SIZE is refused before it is
 * made (false after the diagnostic) */
static bool within_code_size(ParallelLowering *L, TStmt *s, int64_t copies)
{
    TStmt body = {0};
    body.kind = TS_SEQ;
    body.body = s->body;
    body.nbody = s->nbody;
    if (copies <= 0 || tir_code_size(&body, TL_MAX_CODE_SIZE / copies) <= TL_MAX_CODE_SIZE / copies)
        return true;
    tir_code_size_error(L->k, s->loc);
    L->ok = false;
    return false;
}

static TStmt *parallel(ParallelLowering *L, TStmt *s)
{
    TKernel *k = L->k;
    TStmt *out = ts_seq(k);
    TBuf *t = s->ptile;
    Subst S = {0};
    S.L = L;
    S.par = s;
    if (t->scope == SC_LOCAL) {
        /* every thread walks the whole per-thread tile, fully unrolled */
        int64_t total = 1;
        for (int d = 0; d < t->rank; d++)
            total *= t->shape[d];
        int64_t cc[TL_MAX_RANK];
        S.const_coord = cc;
        if (!within_code_size(L, s, total))
            return out;
        for (int64_t e = 0; e < total; e++) {
            int64_t rem = e;
            for (int d = t->rank - 1; d >= 0; d--) {
                cc[d] = rem % t->shape[d];
                rem /= t->shape[d];
            }
            TStmt *blk = ts_seq(k);
            blk->body = rw_list(&S, s->body, s->nbody);
            blk->nbody = s->nbody;
            ts_push(k, out, blk);
            if (S.err)
                break; /* one report, not one per element */
        }
    } else {
        const Layout *lay = t->layout;
        if (t->scope == SC_SHARED)
            lay = layout_default(k->arena, t->rank, t->shape, k->nthreads, 1, 0, 0);
        if (!within_code_size(L, s, lay->nregs))
            return out;
        S.lay = t->scope == SC_FRAG ? lay : NULL;
        S.leader = layout_leader_pred(L->k, lay);
        TExpr *tc[TL_MAX_RANK];
        for (int d = 0; d < t->rank; d++)
            tc[d] = layout_thread_coord(L->k, lay, d);
        for (int r = 0; r < lay->nregs; r++) {
            S.r = r;
            for (int d = 0; d < t->rank; d++)
                S.coord[d] = tx_bin(k, OP_ADD, tc[d], i32c(L, layout_reg_coord(lay, r, d)));
            TStmt *blk = ts_seq(k);
            blk->body = rw_list(&S, s->body, s->nbody);
            blk->nbody = s->nbody;
            if (t->scope == SC_SHARED && S.leader)
                blk = ts_guard(L->k, S.leader, blk);
            ts_push(k, out, blk);
            if (S.err)
                break;
        }
        if (t->scope == SC_SHARED)
            S.leader = NULL;
    }
    if (S.err)
        L->ok = false;
    return out;
}

TStmt *lower_parallel(TKernel *k, TStmt *s, bool *ok)
{
    ParallelLowering L = {k, true};
    TStmt *out = parallel(&L, s);
    if (!L.ok)
        *ok = false;
    return out;
}
