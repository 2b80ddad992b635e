/* lower_ast.c — the first pass: a checked, specialised kernel (AST + sema annotations) becomes
 * tile IR. Generics and compile-time lets become constants, `if const` keeps only the branch
 * taken, fn calls are inlined into labelled blocks, implicit conversions become explicit, tensor
 * parameters become global buffers with their extents and strides, and `require` facts are kept
 * for the alignment analysis. */
#include "tir.h"

#include <stdio.h>
#include <string.h>

typedef enum { BIND_NONE, BIND_EXPR, BIND_VAR, BIND_REGION, BIND_BUF, BIND_TUPLE } BindKind;
typedef struct Bind {
    BindKind kind;
    TExpr *expr;
    TVar *var;
    Region region;
    TExpr *ext[TL_MAX_RANK];   /* BIND_REGION of a tensor: the run-time extents (NULL: constant) */
    TBuf *buf;
    TVar **tuple;
    int ntuple;
} Bind;

typedef struct Lower {
    TKernel *k;
    Compilation *c;
    Arena *a;
    TStmt *cur;          /* the statement list being appended to */
    /* inlined fn being lowered */
    int fn_label;
    TVar **fn_results;
    int fn_nresults;
    bool ok;
} Lower;

static DType dt_of(const Type *t)
{
    if (!t)
        return DT_NONE;
    if (t->kind == TY_SCALAR || t->kind == TY_TENSOR || t->kind == TY_TILE)
        return t->dt;
    if (t->kind == TY_UNTYPED_INT)
        return DT_I32;
    if (t->kind == TY_UNTYPED_FLOAT)
        return DT_F32;
    return DT_NONE;
}

static Bind *bind_of(Lower *L, Sym *s)
{
    if (!s->tir)
        s->tir = ARENA_NEW(L->a, Bind);
    return s->tir;
}

static void emit(Lower *L, TStmt *s) { ts_push(L->k, L->cur, s); }

/* a fresh copy of e, for an expression that a name stands for at each of its uses */
static TExpr *copy_operand(void *k, TExpr *e) { return e ? tx_rebuild(k, e, copy_operand, k) : NULL; }
static TExpr *tx_copy(TKernel *k, const TExpr *e) { return tx_rebuild(k, e, copy_operand, k); }

static TExpr *lower_expr(Lower *L, Expr *e);
static bool lower_region(Lower *L, Expr *e, Region *r);
static void lower_stmts(Lower *L, StmtList l);

static TExpr *const_of(Lower *L, ConstVal cv, DType dt)
{
    if (cv.kind == CV_BOOL)
        return tx_bool(L->k, cv.b);
    if (cv.kind == CV_INT && !dtype_is_float(dt))
        return tx_const_int(L->k, dt == DT_NONE ? DT_I32 : dt, cv.i);
    if (cv.kind == CV_INT || cv.kind == CV_FLOAT) {
        double v = cv.kind == CV_INT ? (double)cv.i : cv.f;
        if (dtype_is_int(dt))
            return tx_const_int(L->k, dt, (int64_t)v);
        /* a constant of a narrower float type holds a value of that type (sema rounded it), so
         * the run-time conversion from the f32 constant is exact */
        if (dt != DT_F32 && dt != DT_F64 && dt != DT_NONE)
            return tx_cvt(L->k, dt, tx_const_float(L->k, DT_F32, v), RND_DEFAULT);
        return tx_const_float(L->k, dt == DT_NONE ? DT_F32 : dt, v);
    }
    return NULL;
}

static void mark_written(Region *r)
{
    if (r->buf && r->buf->scope == SC_GLOBAL)
        tir_mark_written(r->buf);
}

/* ---- tensors: extents and strides ---- */
static TExpr *param_dim(Lower *L, int p, int axis, bool stride)
{
    TExpr *e = ARENA_NEW(L->a, TExpr);
    e->kind = axis < 0 ? TX_LEN : stride ? TX_STRIDE : TX_DIM; /* axis -1: a tensor list's length */
    e->dt = stride ? DT_I64 : DT_I32;
    e->param = p;
    e->axis = axis;
    e->loc = loc_none();
    return e;
}

/* A tensor parameter's buffer, or a tensor list's pattern (te: the type of its elements): extents
 * and strides from the signature. */
static TBuf *param_buf(Lower *L, Param *p, TypeExpr *te, int pi)
{
    Sym *ts = p->sym;
    Type *t = ts->type;
    TBuf *b = tir_buf(L->k, p->name.s, SC_GLOBAL, t->dt, t->rank, NULL);
    b->param = pi;
    b->align = dtype_storage_bytes(t->dt);
    for (int i = 0; i < t->rank; i++) {
        Expr *d = te->dims.v[i];
        if (d->cv.kind == CV_INT) {
            b->shape[i] = d->cv.i;
            b->gdim[i] = tx_const_int(L->k, DT_I32, d->cv.i);
        } else if (d->kind == EX_NAME && d->sym && d->sym->kind == SYM_DIM && !d->sym->dim_is_stride &&
                   d->sym->dim_axis >= 0) {
            /* a name bound by another tensor: the runtime checks they agree, and facts known
             * about the name apply */
            b->gdim[i] = param_dim(L, d->sym->dim_param, d->sym->dim_axis, false);
        } else {
            b->gdim[i] = param_dim(L, pi, i, false);
        }
    }
    if (te->strides.n) {
        for (int i = 0; i < t->rank; i++) {
            Expr *s = te->strides.v[i];
            if (s->cv.kind == CV_INT)
                b->gstride[i] = tx_const_int(L->k, DT_I64, s->cv.i);
            else if (s->kind == EX_NAME && s->sym && s->sym->kind == SYM_DIM && s->sym->dim_is_stride)
                b->gstride[i] = param_dim(L, s->sym->dim_param, s->sym->dim_axis, true);
            else
                b->gstride[i] = param_dim(L, pi, i, true);
        }
    } else {
        TExpr *acc = tx_const_int(L->k, DT_I64, 1);
        for (int i = t->rank - 1; i >= 0; i--) {
            b->gstride[i] = acc;
            acc = tx_bin(L->k, OP_MUL, acc, tx_cast_int(L->k, b->gdim[i], DT_I64));
        }
    }
    L->k->params[pi] = b;
    Bind *bd = bind_of(L, ts);
    bd->kind = BIND_BUF;
    bd->buf = b;
    return b;
}

/* `require X % C == 0` with X a shape, stride or integer scalar gives a divisibility fact */
static void record_fact(Lower *L, Expr *c)
{
    if (c->kind == EX_BINARY && c->op == OP_LAND) {
        record_fact(L, c->a);
        record_fact(L, c->b);
        return;
    }
    if (c->kind != EX_BINARY || c->op != OP_EQ)
        return;
    Expr *m = c->a, *z = c->b;
    if (m->kind != EX_BINARY || m->op != OP_MOD || z->cv.kind != CV_INT || z->cv.i != 0)
        return;
    if (m->b->cv.kind != CV_INT || m->b->cv.i <= 0 || m->a->kind != EX_NAME || !m->a->sym)
        return;
    int64_t d = m->b->cv.i & -m->b->cv.i; /* power-of-two part */
    Sym *s = m->a->sym;
    TKernel *k = L->k;
    if (k->nfacts >= 64)
        return;
    if (s->kind == SYM_DIM) {
        k->facts[k->nfacts].param = s->dim_param;
        k->facts[k->nfacts].axis = s->dim_axis;
        k->facts[k->nfacts].stride = s->dim_is_stride;
    } else if (s->kind == SYM_SCALAR) {
        k->facts[k->nfacts].param = s->index;
        k->facts[k->nfacts].axis = -1;
        k->facts[k->nfacts].stride = false;
    } else {
        return;
    }
    k->facts[k->nfacts++].div = d;
}

/* ---- regions ---- */
static void full_region(TKernel *k, TBuf *b, Region *r)
{
    memset(r, 0, sizeof *r);
    r->buf = b;
    r->rank = b->rank;
    for (int i = 0; i < b->rank; i++) {
        r->src_dim[i] = i;
        r->extent[i] = b->shape[i];
        r->start[i] = tx_const_int(k, DT_I32, 0);
    }
}

static bool lower_view(Lower *L, Expr *e, Region *r)
{
    Type *t = e->type;
    TBuf *b = tir_buf(L->k, "view", SC_GLOBAL, t->dt, t->rank, NULL);
    /* the address is taken once, where the view is made (codegen casts it at each use) */
    b->addr = lower_expr(L, e->args.v[0]);
    if (b->addr->kind != TX_CONST && b->addr->kind != TX_VAR && b->addr->kind != TX_PARAM) {
        TVar *av = tir_var(L->k, "view", b->addr->dt, false);
        emit(L, ts_decl(L->k, av, b->addr));
        b->addr = tx_var(L->k, av);
    }
    b->align = dtype_storage_bytes(t->dt);
    Expr *shape = e->args.v[1];
    for (int i = 0; i < t->rank; i++) {
        b->gdim[i] = tx_cast_int(L->k, lower_expr(L, shape->args.v[i]), DT_I32);
        if (shape->args.v[i]->cv.kind == CV_INT)
            b->shape[i] = shape->args.v[i]->cv.i;
    }
    if (e->args.n > 2) {
        for (int i = 0; i < t->rank; i++)
            b->gstride[i] = tx_cast_int(L->k, lower_expr(L, e->args.v[2]->args.v[i]), DT_I64);
    } else {
        TExpr *acc = tx_const_int(L->k, DT_I64, 1);
        for (int i = t->rank - 1; i >= 0; i--) {
            b->gstride[i] = acc;
            acc = tx_bin(L->k, OP_MUL, acc, tx_cast_int(L->k, b->gdim[i], DT_I64));
        }
    }
    full_region(L->k, b, r);
    return true;
}

static TExpr *as_i32(Lower *L, TExpr *e) { return tx_cast_int(L->k, e, DT_I32); }

static bool lower_region(Lower *L, Expr *e, Region *r)
{
    switch (e->kind) {
    case EX_NAME: {
        Sym *s = e->sym;
        if (!s || !s->tir)
            break;
        Bind *b = s->tir;
        if (b->kind == BIND_BUF) {
            full_region(L->k, b->buf, r);
            return true;
        }
        if (b->kind == BIND_REGION) {
            *r = b->region;
            return true;
        }
        break;
    }
    case EX_MEMBER: {
        if (!lower_region(L, e->a, r))
            return false;
        int t = r->src_dim[0];
        r->src_dim[0] = r->src_dim[1];
        r->src_dim[1] = t;
        int64_t x = r->extent[0];
        r->extent[0] = r->extent[1];
        r->extent[1] = x;
        return true;
    }
    case EX_INDEX: {
        Region base;
        if (e->a->type && e->a->type->kind == TY_LIST) {
            Sym *s = e->a->kind == EX_NAME ? e->a->sym : NULL;
            Bind *b = s ? s->tir : NULL;
            if (!b || b->kind != BIND_BUF)
                break;
            full_region(L->k, tir_list_element(L->k, b->buf, lower_expr(L, e->args.v[0])), r);
            return true;
        }
        if (!lower_region(L, e->a, &base))
            return false;
        *r = base;
        r->rank = 0;
        for (int i = 0; i < e->args.n; i++) {
            Expr *ix = e->args.v[i];
            int bd = base.src_dim[i];
            if (ix->kind == EX_SLICE) {
                if (ix->a)
                    r->start[bd] = tx_bin(L->k, OP_ADD, base.start[bd], as_i32(L, lower_expr(L, ix->a)));
                r->src_dim[r->rank] = bd;
                r->extent[r->rank] = e->type->dims[r->rank];
                r->rank++;
            } else {
                r->start[bd] = tx_bin(L->k, OP_ADD, base.start[bd], as_i32(L, lower_expr(L, ix)));
                r->dropped[bd] = true;
            }
        }
        return true;
    }
    case EX_CALL:
        if (e->builtin == BI_VIEW)
            return lower_view(L, e, r);
        break;
    default: break;
    }
    diag_ice(L->k->diag, "lower_ast", "expression is not a region");
    L->ok = false;
    return false;
}

/* The extent of dimension `dim` of the region e when only the run time knows it (for the shape
 * names of a fn's tensor parameters): the tensor's extent, or hi - lo of the slice that cut it. */
static TExpr *region_extent(Lower *L, Expr *e, int dim)
{
    TKernel *k = L->k;
    if (e->type && (e->type->kind == TY_TENSOR || e->type->kind == TY_TILE) && dim < e->type->rank && e->type->dims[dim] >= 0)
        return tx_const_int(k, DT_I32, e->type->dims[dim]);
    switch (e->kind) {
    case EX_NAME: {
        Bind *b = e->sym ? e->sym->tir : NULL;
        if (b && b->kind == BIND_BUF && b->buf->gdim[dim])
            return b->buf->gdim[dim];
        if (b && b->kind == BIND_REGION && b->ext[dim])
            return b->ext[dim];
        break;
    }
    case EX_MEMBER: return region_extent(L, e->a, 1 - dim);
    case EX_INDEX:
        if (e->a->type && e->a->type->kind == TY_LIST) { /* an element: the list's shape */
            Bind *b = e->a->kind == EX_NAME && e->a->sym ? e->a->sym->tir : NULL;
            if (b && b->kind == BIND_BUF && dim < b->buf->rank && b->buf->gdim[dim])
                return b->buf->gdim[dim];
            break;
        }
        for (int i = 0, r = 0; i < e->args.n; i++) {
            Expr *ix = e->args.v[i];
            if (ix->kind != EX_SLICE || r++ != dim)
                continue;
            TExpr *hi = ix->b ? as_i32(L, lower_expr(L, ix->b)) : region_extent(L, e->a, i);
            return ix->a ? tx_bin(k, OP_SUB, hi, as_i32(L, lower_expr(L, ix->a))) : hi;
        }
        break;
    case EX_CALL:
        if (e->builtin == BI_VIEW)
            return as_i32(L, lower_expr(L, e->args.v[1]->args.v[dim]));
        break;
    default: break;
    }
    diag_ice(k->diag, "lower_ast", "no run-time extent for dimension %d of a region", dim);
    L->ok = false;
    return tx_const_int(k, DT_I32, 0);
}

/* a name for a region (a let or a fn parameter); a tensor's run-time extents are kept for the
 * shape names of fns it is passed to */
static void bind_region(Lower *L, Bind *b, Expr *e)
{
    b->kind = BIND_REGION;
    lower_region(L, e, &b->region);
    if (e->type->kind != TY_TENSOR)
        return;
    for (int i = 0; i < e->type->rank; i++)
        if (e->type->dims[i] < 0)
            b->ext[i] = region_extent(L, e, i);
}

/* element of a region: buffer indices for region-relative indices */
static void region_element(Lower *L, Region *r, TExpr **ridx, TExpr **bidx)
{
    for (int d = 0; d < r->buf->rank; d++)
        bidx[d] = r->start[d];
    for (int i = 0; i < r->rank; i++)
        bidx[r->src_dim[i]] = tx_bin(L->k, OP_ADD, r->start[r->src_dim[i]], ridx[i]);
}

static TExpr *lower_element(Lower *L, Expr *e, TBuf **buf_out, TExpr **bidx)
{
    Region r;
    if (!lower_region(L, e->a, &r))
        return NULL;
    TExpr *ridx[TL_MAX_RANK];
    for (int i = 0; i < e->args.n; i++)
        ridx[i] = as_i32(L, lower_expr(L, e->args.v[i]));
    region_element(L, &r, ridx, bidx);
    *buf_out = r.buf;
    TExpr *ld = tx_load(L->k, r.buf, bidx, r.buf->rank);
    ld->loc = e->loc; /* the lowering of frag accesses reports errors here */
    return ld;
}

/* ---- fn inlining ---- */
static TExpr *lower_inline(Lower *L, Expr *call)
{
    InlineCall *ic = call->inl;
    TKernel *k = L->k;
    int label = k->next_label++;
    TStmt *blk = ts_new(k, TS_BLOCK, call->loc);
    blk->label = label;
    TStmt *saved = L->cur;
    /* parameters are bound in the caller's context */
    for (int i = 0; i < ic->nparams; i++) {
        Sym *ps = ic->params[i];
        Expr *arg = call->args.v[i];
        Bind *b = bind_of(L, ps);
        if (ps->kind == SYM_STORAGE && ps->tile_whole) {
            /* the caller's tile itself, so that `parallel` walks it with its layout */
            Region r;
            if (lower_region(L, arg, &r)) {
                b->kind = BIND_BUF;
                b->buf = r.buf;
            }
            continue;
        }
        if (arg->type->kind == TY_TENSOR || arg->type->kind == TY_TILE) {
            bind_region(L, b, arg);
            continue;
        }
        TExpr *v = tx_cvt(k, dt_of(ps->type), lower_expr(L, arg), RND_DEFAULT);
        if (v->kind == TX_CONST) {
            b->kind = BIND_EXPR;
            b->expr = v;
        } else {
            TVar *tv = tir_var(k, ps->name, v->dt, false);
            emit(L, ts_decl(k, tv, v));
            b->kind = BIND_VAR;
            b->var = tv;
        }
    }
    /* shape and stride names of tensor parameters that only the run time knows */
    for (int i = 0; i < ic->nshapes; i++) {
        ShapeBind *sb = &ic->shapes[i];
        if (!sb->sym->used)
            continue;
        Expr *arg = call->args.v[sb->param];
        TExpr *v;
        if (sb->stride) {
            Region r;
            lower_region(L, arg, &r);
            v = r.buf->gstride[r.src_dim[sb->axis]];
        } else {
            v = region_extent(L, arg, sb->axis);
        }
        Bind *b = bind_of(L, sb->sym);
        if (v->kind == TX_CONST) {
            b->kind = BIND_EXPR;
            b->expr = v;
        } else {
            TVar *tv = tir_var(k, sb->sym->name, v->dt, false);
            emit(L, ts_decl(k, tv, v));
            b->kind = BIND_VAR;
            b->var = tv;
        }
    }
    int saved_label = L->fn_label;
    TVar **saved_res = L->fn_results;
    int saved_nres = L->fn_nresults;
    L->fn_label = label;
    L->fn_nresults = 0;
    L->fn_results = NULL;
    Type *rt = ic->ret;
    if (rt->kind == TY_SCALAR) {
        L->fn_nresults = 1;
        L->fn_results = ARENA_ARRAY(L->a, TVar *, 1);
        L->fn_results[0] = tir_var(k, "ret", rt->dt, true);
    } else if (rt->kind == TY_TUPLE) {
        L->fn_nresults = rt->nelems;
        L->fn_results = ARENA_ARRAY(L->a, TVar *, rt->nelems);
        for (int i = 0; i < rt->nelems; i++)
            L->fn_results[i] = tir_var(k, "ret", dt_of(rt->elems[i]), true);
    }
    for (int i = 0; i < L->fn_nresults; i++)
        emit(L, ts_decl(k, L->fn_results[i], NULL));
    emit(L, blk);
    L->cur = blk;
    lower_stmts(L, ic->body);
    L->cur = saved;
    TExpr *result = NULL;
    if (L->fn_nresults == 1)
        result = tx_var(k, L->fn_results[0]);
    if (L->fn_nresults > 1) {
        /* tuples are read back through the call expression's binding */
        Bind *b = ARENA_NEW(L->a, Bind);
        b->kind = BIND_TUPLE;
        b->tuple = L->fn_results;
        b->ntuple = L->fn_nresults;
        call->inl->tuple_bind = b; /* read by the let that destructures it */
    }
    L->fn_label = saved_label;
    L->fn_results = saved_res;
    L->fn_nresults = saved_nres;
    return result;
}

/* ---- expressions ---- */
static Special special_of(BuiltinId ns, const char *comp)
{
    int c = comp[0] - 'x';
    switch (ns) {
    case BI_THREAD_NS: return (Special)(SP_TID_X + c);
    case BI_BLOCK_NS: return (Special)(SP_CTAID_X + c);
    case BI_BLOCK_DIM_NS: return (Special)(SP_NTID_X + c);
    default: return (Special)(SP_NCTAID_X + c);
    }
}

static TExpr *lower_call(Lower *L, Expr *e, DType want)
{
    TKernel *k = L->k;
    Expr *callee = e->a;
    if (callee->kind == EX_TYPE || (callee->sym && callee->sym->kind == SYM_GENERIC))
        return tx_cvt(k, want, lower_expr(L, e->args.v[0]), RND_DEFAULT);
    if (e->inl)
        return lower_inline(L, e);
    BuiltinId b = (BuiltinId)e->builtin;
    switch (b) {
    case BI_BITCAST: return tx_bitcast(k, want, lower_expr(L, e->args.v[0]));
    case BI_CONVERT: {
        Rounding r = RND_RN;
        if (e->args.n == 2) {
            const char *m = e->args.v[1]->str;
            r = !strcmp(m, "rz") ? RND_RZ : !strcmp(m, "rm") ? RND_RM : !strcmp(m, "rp") ? RND_RP : RND_RN;
        }
        TExpr *x = lower_expr(L, e->args.v[0]);
        if (x->dt == want) /* convert<f32>(f32) is the identity */
            return x;
        TExpr *c = ARENA_NEW(L->a, TExpr);
        c->kind = TX_CVT;
        c->dt = want;
        c->a = x;
        c->round = r;
        return c;
    }
    case BI_STATIC_ASSERT: return NULL;
    default: break;
    }
    TExpr *args[32];
    int n = 0;
    for (int i = 0; i < e->args.n && n < 32; i++) {
        Expr *a = e->args.v[i];
        if (a->kind == EX_STRING)
            continue;
        if (i == 0 && b >= BI_ATOMIC_ADD && b <= BI_ATOMIC_CAS) {
            TBuf *buf;
            TExpr *bidx[TL_MAX_RANK];
            args[n++] = lower_element(L, a, &buf, bidx);
            if (buf && buf->scope == SC_GLOBAL)
                tir_mark_written(buf);
            continue;
        }
        args[n++] = lower_expr(L, a);
    }
    TExpr *c = tx_call(k, b, want, args, n);
    for (int i = 0; i < e->args.n; i++)
        if (e->args.v[i]->kind == EX_STRING)
            c->str = e->args.v[i]->str;
    c->loc = e->loc;
    return c;
}

static TExpr *lower_natural(Lower *L, Expr *e)
{
    TKernel *k = L->k;
    DType dt = dt_of(e->type);
    if (cv_known(e->cv) && e->cv.kind != CV_TYPE && e->type->kind != TY_TENSOR && e->type->kind != TY_TILE) {
        TExpr *c = const_of(L, e->cv, dt);
        if (c)
            return c;
    }
    switch (e->kind) {
    case EX_NAME: {
        Sym *s = e->sym;
        if (!s) {
            if (e->builtin == BI_LANE)
                return tx_special(k, SP_LANE);
            if (e->builtin == BI_WARP)
                return tx_special(k, SP_WARP);
            break;
        }
        switch (s->kind) {
        case SYM_SCALAR: {
            TExpr *p = ARENA_NEW(L->a, TExpr);
            p->kind = TX_PARAM;
            p->dt = dt_of(s->type);
            p->param = s->index;
            return p;
        }
        case SYM_DIM: return param_dim(L, s->dim_param, s->dim_axis, s->dim_is_stride);
        default: break;
        }
        Bind *b = s->tir;
        if (b && b->kind == BIND_EXPR)
            return b->expr->kind == TX_CONST ? b->expr : tx_copy(k, b->expr);
        if (b && b->kind == BIND_VAR)
            return tx_var(k, b->var);
        break;
    }
    case EX_MEMBER:
        if (e->builtin)
            return tx_special(k, special_of((BuiltinId)e->builtin, e->str));
        break;
    case EX_UNARY: {
        TExpr *a = lower_expr(L, e->a);
        if (e->op == OP_NEG && dtype_is_int(a->dt))
            return tx_bin(k, OP_SUB, tx_const_int(k, a->dt, 0), a);
        return tx_un(k, e->op, a);
    }
    case EX_BINARY: {
        TExpr *a = lower_expr(L, e->a);
        TExpr *b = lower_expr(L, e->b);
        if (e->op == OP_SHL || e->op == OP_SHR)
            b = tx_cvt(k, a->dt, b, RND_DEFAULT);
        return tx_bin(k, e->op, a, b);
    }
    case EX_CALL: return lower_call(L, e, dt);
    case EX_INDEX: {
        TBuf *buf;
        TExpr *bidx[TL_MAX_RANK];
        return lower_element(L, e, &buf, bidx);
    }
    default: break;
    }
    diag_ice(k->diag, "lower_ast", "cannot lower expression of kind %d", e->kind);
    L->ok = false;
    return tx_const_int(k, DT_I32, 0);
}

static TExpr *lower_expr(Lower *L, Expr *e)
{
    TExpr *r = lower_natural(L, e);
    if (!r)
        return tx_const_int(L->k, DT_I32, 0);
    DType want = dt_of(e->type);
    if (want != DT_NONE && r->dt != want && r->dt != DT_NONE)
        r = tx_cvt(L->k, want, r, RND_DEFAULT);
    return r;
}

/* ---- statements ---- */
static TStmt *nested(Lower *L, StmtList l)
{
    TStmt *seq = ts_seq(L->k);
    TStmt *saved = L->cur;
    L->cur = seq;
    lower_stmts(L, l);
    L->cur = saved;
    return seq;
}

static int named_arg(Expr *e, const char *name)
{
    for (int i = 0; i < e->args.n; i++)
        if (e->arg_names && e->arg_names[i] && !strcmp(e->arg_names[i], name))
            return i;
    return -1;
}

static bool bool_arg(Expr *e, const char *name, bool dflt)
{
    int i = named_arg(e, name);
    return i < 0 ? dflt : e->args.v[i]->cv.b;
}

static void lower_tile_op(Lower *L, Stmt *st, Expr *e)
{
    TKernel *k = L->k;
    BuiltinId b = (BuiltinId)e->builtin;
    TStmt *s;
    switch (b) {
    case BI_COPY: {
        s = ts_new(k, TS_COPY, st->loc);
        lower_region(L, e->args.v[0], &s->src);
        lower_region(L, e->args.v[1], &s->dst);
        int oi = named_arg(e, "other");
        if (oi >= 0)
            s->other = lower_expr(L, e->args.v[oi]);
        s->no_split = !bool_arg(e, "split", true);
        mark_written(&s->dst);
        /* run-time extents take the other side's static extent */
        for (int i = 0; i < s->src.rank; i++) {
            if (s->src.extent[i] < 0)
                s->src.extent[i] = s->dst.extent[i];
            if (s->dst.extent[i] < 0)
                s->dst.extent[i] = s->src.extent[i];
        }
        break;
    }
    case BI_FILL:
        s = ts_new(k, TS_FILL, st->loc);
        lower_region(L, e->args.v[0], &s->dst);
        s->e = tx_cvt(k, s->dst.buf->dt, lower_expr(L, e->args.v[1]), RND_DEFAULT);
        break;
    case BI_REDUCE_SUM:
    case BI_REDUCE_MAX:
    case BI_REDUCE_MIN:
    case BI_REDUCE_ABSMAX:
    case BI_CUMSUM: {
        s = ts_new(k, b == BI_CUMSUM ? TS_CUMSUM : TS_REDUCE, st->loc);
        s->red = b == BI_REDUCE_MAX ? RED_MAX : b == BI_REDUCE_MIN ? RED_MIN : b == BI_REDUCE_ABSMAX ? RED_ABSMAX : RED_SUM;
        lower_region(L, e->args.v[0], &s->src);
        lower_region(L, e->args.v[1], &s->dst);
        int di = named_arg(e, "dim");
        s->dim = di >= 0 ? (int)e->args.v[di]->cv.i : 0;
        int gi = named_arg(e, "group");
        s->group = gi >= 0 ? (int)e->args.v[gi]->cv.i : 0;
        s->clear = bool_arg(e, "clear", true);
        s->exclusive = bool_arg(e, "exclusive", false);
        break;
    }
    case BI_GEMM:
        s = ts_new(k, TS_GEMM, st->loc);
        lower_region(L, e->args.v[0], &s->src);
        lower_region(L, e->args.v[1], &s->dst);
        lower_region(L, e->args.v[2], &s->c);
        s->trans_a = bool_arg(e, "trans_a", false);
        s->trans_b = bool_arg(e, "trans_b", false);
        s->clear = bool_arg(e, "clear", false);
        break;
    default: return;
    }
    emit(L, s);
}

static TExpr *apply_op(Lower *L, OpKind op, TExpr *cur, TExpr *rhs, DType target)
{
    /* compound assignment: computed in the arithmetic type, converted back */
    DType at = (dtype_kind(target) == DK_HALF || dtype_kind(target) == DK_FP8 || target == DT_E2M1) ? DT_F32 : target;
    TExpr *a = tx_cvt(L->k, at, cur, RND_DEFAULT);
    TExpr *b = tx_cvt(L->k, (op == OP_SHL || op == OP_SHR) ? at : at, rhs, RND_DEFAULT);
    return tx_cvt(L->k, target, tx_bin(L->k, op, a, b), RND_DEFAULT);
}

/* whether a break or continue in l leaves the loop whose body l is (those in nested loops
 * leave those) */
static bool leaves_loop(StmtList l)
{
    for (int i = 0; i < l.n; i++) {
        const Stmt *s = l.v[i];
        if (s->kind == ST_BREAK || s->kind == ST_CONTINUE)
            return true;
        if ((s->kind == ST_BLOCK || s->kind == ST_IF) && (leaves_loop(s->body) || leaves_loop(s->els)))
            return true;
    }
    return false;
}

/* a coordinate of a `for tile`: a `let` emitted here, or (as_let false) its expression, written
 * out at each use */
static void bind_coord(Lower *L, Sym *sym, TExpr *e, bool as_let)
{
    Bind *b = bind_of(L, sym);
    if (!as_let) {
        b->kind = BIND_EXPR;
        b->expr = e;
        return;
    }
    TVar *v = tir_var(L->k, sym->name, DT_I32, false);
    b->kind = BIND_VAR;
    b->var = v;
    emit(L, ts_decl(L->k, v, e));
}

/* a tile count with its compile-time selects resolved (a tile space ordered by a generic flag):
 * codegen builds both arms of a select, and the dead arm, though removed, reorders the rest */
static TExpr *taken(TExpr *e)
{
    int64_t c;
    while (e->kind == TX_CALL && e->builtin == BI_SELECT && tx_is_const(e->args[0], &c))
        e = e->args[c ? 1 : 2];
    return e;
}

/* for tile (x, y, z) { body }, over the tiles T0 x T1 x T2 of the kernel's persistent launch
 * (docs/language.md §7.8):
 *   stages = 0:  body, with x = block.x, y = block.y, z = block.z (`let`s, z first)
 *   stages = S:  for [pipelined(stages = S)] t in block.x .. T0 * T1 * T2 step grid_dim.x { body }
 *                with x = t % T0, y = t / T0 % T1, z = t / T0 / T1
 * (x = t itself for one dimension, y = t / T0 for two; S = 1 is a plain loop). In the loop the
 * coordinates are their expressions written out at each use, which LLVM computes once. With
 * stages = 0 the body is no loop unless it breaks or continues (then a loop of one iteration):
 * LLVM hoists a loop's address arithmetic into its preheader even for one iteration, so that a
 * loop of one gives batched_transpose 25 % fewer instructions but up to 127 more registers. The
 * kernels of kernels/ written out by hand before this form had the code this gives, but for
 * per_channel_cast_transpose's block per tile, which was a loop of one. */
static void lower_tile_loop(Lower *L, Stmt *st)
{
    TKernel *k = L->k;
    const Launch *ln = &k->item->launch;
    int n = st->nnames;
    if (n < 1 || n > 3 || n != ln->tiles.n) {
        diag_ice(k->diag, "lower_ast", "a tile loop of %d coordinates over %d tile counts", n, ln->tiles.n);
        L->ok = false;
        return;
    }
    int stages = ln->stages ? (int)ln->stages->cv.i : 1;
    if (stages == 0 && !leaves_loop(st->body)) {
        for (int j = 0; j < n; j++) { /* z first: x and y where their uses are */
            int i = j == 0 ? n - 1 : j - 1;
            bind_coord(L, st->syms[i], tx_special(k, (Special)(SP_CTAID_X + i)), true);
        }
        lower_stmts(L, st->body);
        return;
    }
    TStmt *fs;
    TStmt *saved = L->cur;
    TStmt *body = ts_seq(k);
    L->cur = body;
    if (stages == 0) {
        fs = ts_for(k, tir_var(k, "once", DT_I32, false), tx_const_int(k, DT_I32, 0), tx_const_int(k, DT_I32, 1),
                    tx_const_int(k, DT_I32, 1), FOR_SERIAL);
        for (int j = 0; j < n; j++) { /* z first: x and y where their uses are */
            int i = j == 0 ? n - 1 : j - 1;
            bind_coord(L, st->syms[i], tx_special(k, (Special)(SP_CTAID_X + i)), true);
        }
    } else {
        TExpr *count[3] = {0};
        for (int i = 0; i < n; i++)
            count[i] = taken(tx_cvt(k, DT_I32, lower_expr(L, ln->tiles.v[i]), RND_DEFAULT));
        TExpr *total = count[0];
        for (int i = 1; i < n; i++)
            total = tx_bin(k, OP_MUL, total, count[i]);
        TVar *t = tir_var(k, n == 1 ? st->names[0].s : "tile", DT_I32, false);
        fs = ts_for(k, t, tx_special(k, SP_CTAID_X), total, tx_special(k, SP_NCTAID_X),
                    stages > 1 ? FOR_PIPELINED : FOR_SERIAL);
        fs->stages = stages > 1 ? stages : 0;
        if (n == 1) {
            Bind *b = bind_of(L, st->syms[0]);
            b->kind = BIND_VAR;
            b->var = t;
        } else {
            bind_coord(L, st->syms[0], tx_bin(k, OP_MOD, tx_var(k, t), count[0]), false);
            TExpr *rest = tx_bin(k, OP_DIV, tx_var(k, t), count[0]);
            bind_coord(L, st->syms[1], n == 2 ? rest : tx_bin(k, OP_MOD, rest, count[1]), false);
            if (n == 3) /* (t / T0) / T1 = t / (T0 * T1): two divisions, the remainders from them */
                bind_coord(L, st->syms[2], tx_bin(k, OP_DIV, rest, count[1]), false);
        }
    }
    fs->loc = st->loc;
    lower_stmts(L, st->body);
    fs->body = body->body;
    fs->nbody = body->nbody;
    L->cur = saved;
    emit(L, fs);
}

static void lower_stmt(Lower *L, Stmt *st)
{
    TKernel *k = L->k;
    switch (st->kind) {
    case ST_BLOCK: emit(L, nested(L, st->body)); break;
    case ST_LET: {
        if (st->nnames > 1) {
            Expr *init = st->e;
            lower_expr(L, init); /* inlines the call, leaving its tuple binding */
            Bind *tb = init->inl ? (Bind *)init->inl->tuple_bind : NULL;
            for (int i = 0; i < st->nnames; i++) {
                Bind *b = bind_of(L, st->syms[i]);
                b->kind = BIND_VAR;
                b->var = tb && tb->kind == BIND_TUPLE && i < tb->ntuple ? tb->tuple[i] : tir_var(k, "undef", DT_I32, false);
            }
            break;
        }
        Sym *s = st->syms[0];
        Bind *b = bind_of(L, s);
        if (s->type->kind == TY_TENSOR || s->type->kind == TY_TILE) {
            bind_region(L, b, st->e);
            break;
        }
        TExpr *v = tx_cvt(k, dt_of(s->type), lower_expr(L, st->e), RND_DEFAULT);
        if (v->kind == TX_CONST) {
            b->kind = BIND_EXPR;
            b->expr = v;
        } else {
            TVar *tv = tir_var(k, s->name, v->dt, false);
            emit(L, ts_decl(k, tv, v));
            b->kind = BIND_VAR;
            b->var = tv;
        }
        break;
    }
    case ST_VAR: {
        Sym *s = st->sym;
        DType dt = dt_of(s->type);
        TVar *tv = tir_var(k, s->name, dt, true);
        TExpr *init = st->e ? tx_cvt(k, dt, lower_expr(L, st->e), RND_DEFAULT) : NULL;
        emit(L, ts_decl(k, tv, init));
        Bind *b = bind_of(L, s);
        b->kind = BIND_VAR;
        b->var = tv;
        break;
    }
    case ST_STORAGE: {
        Sym *s = st->sym;
        TBuf *buf = tir_buf(k, s->name, st->scope, s->type->dt, s->type->rank, s->type->dims);
        for (int i = 0; i < st->layout_args.n; i++) {
            if (!strcmp(st->layout_names[i], "vec"))
                buf->vec_hint = (int)st->layout_args.v[i]->cv.i;
            else if (!strcmp(st->layout_names[i], "threads_per_row"))
                buf->tpr_hint = (int)st->layout_args.v[i]->cv.i;
            else if (!strcmp(st->layout_names[i], "row_run"))
                buf->row_run_hint = (int)st->layout_args.v[i]->cv.i;
        }
        Bind *b = bind_of(L, s);
        b->kind = BIND_BUF;
        b->buf = buf;
        break;
    }
    case ST_ASSIGN: {
        Expr *l = st->lhs;
        if (l->kind == EX_NAME) {
            TVar *v = ((Bind *)l->sym->tir)->var;
            TExpr *rhs = lower_expr(L, st->e);
            TExpr *val = st->assign_op == OP_NONE ? tx_cvt(k, v->dt, rhs, RND_DEFAULT)
                                                  : apply_op(L, st->assign_op, tx_var(k, v), rhs, v->dt);
            emit(L, ts_assign(k, v, val));
        } else {
            TBuf *buf;
            TExpr *bidx[TL_MAX_RANK];
            TExpr *cur = lower_element(L, l, &buf, bidx);
            if (!cur)
                break;
            TExpr *rhs = lower_expr(L, st->e);
            TExpr *val = st->assign_op == OP_NONE ? tx_cvt(k, buf->dt, rhs, RND_DEFAULT)
                                                  : apply_op(L, st->assign_op, cur, rhs, buf->dt);
            TStmt *ss = ts_store(k, buf, bidx, buf->rank, val);
            ss->loc = st->loc;
            emit(L, ss);
            if (buf->scope == SC_GLOBAL)
                tir_mark_written(buf);
        }
        break;
    }
    case ST_EXPR: {
        Expr *e = st->e;
        if (e->kind == EX_CALL && e->builtin && builtin_info((BuiltinId)e->builtin)->cls == BC_TILE) {
            lower_tile_op(L, st, e);
            break;
        }
        if (e->kind == EX_CALL && e->builtin == BI_STATIC_ASSERT)
            break;
        TExpr *x = lower_expr(L, e);
        if (x && x->kind == TX_CALL) {
            TStmt *ev = ts_eval(k, x);
            ev->loc = st->loc;
            emit(L, ev);
        }
        break;
    }
    case ST_IF:
        if (st->const_taken == 1) {
            emit(L, nested(L, st->body));
        } else if (st->const_taken == 0) {
            if (st->has_else)
                emit(L, nested(L, st->els));
        } else {
            TExpr *c = lower_expr(L, st->e);
            TStmt *is = ts_if(k, c);
            is->loc = st->loc;
            TStmt *then = nested(L, st->body);
            is->body = then->body;
            is->nbody = then->nbody;
            if (st->has_else) {
                TStmt *els = nested(L, st->els);
                is->els = els->body;
                is->nels = els->nbody;
            }
            emit(L, is);
        }
        break;
    case ST_FOR: {
        if (st->for_kind == FOR_TILE) {
            lower_tile_loop(L, st);
            break;
        }
        Sym *s = st->sym;
        DType dt = dt_of(s->type);
        TVar *iv = tir_var(k, s->name, dt, false);
        Bind *b = bind_of(L, s);
        b->kind = BIND_VAR;
        b->var = iv;
        TExpr *lo = tx_cvt(k, dt, lower_expr(L, st->lo), RND_DEFAULT);
        TExpr *hi = tx_cvt(k, dt, lower_expr(L, st->hi), RND_DEFAULT);
        TExpr *step = st->step ? tx_cvt(k, dt, lower_expr(L, st->step), RND_DEFAULT) : tx_const_int(k, dt, 1);
        TStmt *fs = ts_for(k, iv, lo, hi, step, st->for_kind);
        fs->loc = st->loc;
        if (st->for_kind == FOR_PIPELINED)
            fs->stages = st->stages && st->stages->cv.kind == CV_INT ? (int)st->stages->cv.i : 1;
        TStmt *body = nested(L, st->body);
        fs->body = body->body;
        fs->nbody = body->nbody;
        emit(L, fs);
        break;
    }
    case ST_WHILE: {
        TStmt *ws = ts_new(k, TS_WHILE, st->loc);
        ws->e = lower_expr(L, st->e);
        TStmt *body = nested(L, st->body);
        ws->body = body->body;
        ws->nbody = body->nbody;
        emit(L, ws);
        break;
    }
    case ST_PARALLEL: {
        TStmt *ps = ts_new(k, TS_PARALLEL, st->loc);
        ps->ptile = ((Bind *)st->target.sym->tir)->buf;
        ps->npvars = st->nnames;
        ps->pvars = ARENA_ARRAY(L->a, TVar *, st->nnames);
        for (int i = 0; i < st->nnames; i++) {
            TVar *v = tir_var(k, st->names[i].s, DT_I32, false);
            ps->pvars[i] = v;
            Bind *b = bind_of(L, st->syms[i]);
            b->kind = BIND_VAR;
            b->var = v;
        }
        TStmt *body = nested(L, st->body);
        ps->body = body->body;
        ps->nbody = body->nbody;
        emit(L, ps);
        break;
    }
    case ST_RETURN:
        if (L->fn_label >= 0) {
            if (st->e) {
                if (st->e->kind == EX_LIST) {
                    for (int i = 0; i < st->e->args.n && i < L->fn_nresults; i++)
                        emit(L, ts_assign(k, L->fn_results[i],
                                          tx_cvt(k, L->fn_results[i]->dt, lower_expr(L, st->e->args.v[i]), RND_DEFAULT)));
                } else if (L->fn_nresults == 1) {
                    emit(L, ts_assign(k, L->fn_results[0], tx_cvt(k, L->fn_results[0]->dt, lower_expr(L, st->e), RND_DEFAULT)));
                }
            }
            TStmt *ex = ts_new(k, TS_EXIT, st->loc);
            ex->label = L->fn_label;
            emit(L, ex);
        } else {
            emit(L, ts_new(k, TS_RETURN, st->loc));
        }
        break;
    case ST_BREAK: emit(L, ts_new(k, TS_BREAK, st->loc)); break;
    case ST_CONTINUE: emit(L, ts_new(k, TS_CONTINUE, st->loc)); break;
    case ST_REQUIRE: record_fact(L, st->e); break;
    }
}

static void lower_stmts(Lower *L, StmtList l)
{
    for (int i = 0; i < l.n && L->ok; i++)
        lower_stmt(L, l.v[i]);
}

/* the var divisors: a let bound to an expression inherits the expression's divisor */
static void annotate_divs(TKernel *k, TStmt *s)
{
    if (!s)
        return;
    if (s->kind == TS_DECL && s->e && !s->var->mutable_ && dtype_is_int(s->var->dt))
        s->var->div = tir_known_div(k, s->e);
    if (s->kind == TS_FOR && dtype_is_int(s->var->dt)) {
        int64_t a = tir_known_div(k, s->lo), b = tir_known_div(k, s->step);
        s->var->div = a < b ? a : b;
    }
    for (int i = 0; i < s->nbody; i++)
        annotate_divs(k, s->body[i]);
    for (int i = 0; i < s->nels; i++)
        annotate_divs(k, s->els[i]);
}

static void make_entry_name(TKernel *k)
{
    uint64_t h = tl_hash_bytes(k->key, strlen(k->key), 0);
    k->entry = arena_printf(k->arena, "%s_%08x", k->name, (unsigned)(h ^ (h >> 32)));
}

bool lower_ast(Compilation *c, Item *kernel, const GenericArgs *args, int sm, bool host, TKernel **out)
{
    int errs = c->diag.nerrors;
    TKernel *k = ARENA_NEW(&c->arena, TKernel);
    k->arena = &c->arena;
    k->diag = &c->diag;
    k->item = kernel;
    k->name = kernel->name.s;
    k->sm = sm;
    k->host = host;
    k->args = *args;
    StrBuf key = {0};
    sema_format_specialization(&key, kernel, args);
    k->key = arena_strdup(&c->arena, key.data);
    sb_free(&key);
    make_entry_name(k);
    k->nthreads = (int)kernel->launch.threads->cv.i;
    k->cooperative = kernel->launch.cooperative;
    k->pdl = kernel->launch.pdl;
    k->blocks_per_sm = kernel->launch.blocks_per_sm ? (int)kernel->launch.blocks_per_sm->cv.i : 0;
    for (int i = 0; i < 3; i++)
        k->cluster[i] = i < kernel->launch.cluster.n ? (int)kernel->launch.cluster.v[i]->cv.i : 1;
    k->nparams = kernel->nparams;
    k->params = ARENA_ARRAY(&c->arena, TBuf *, kernel->nparams ? kernel->nparams : 1);
    k->param_dt = ARENA_ARRAY(&c->arena, DType, kernel->nparams ? kernel->nparams : 1);
    k->body = ts_seq(k);
    Lower L = {0};
    L.k = k;
    L.c = c;
    L.a = &c->arena;
    L.cur = k->body;
    L.fn_label = -1;
    L.ok = true;
    for (int i = 0; i < kernel->nparams; i++) {
        Param *p = &kernel->params[i];
        if (p->ty->kind == TE_TENSOR)
            param_buf(&L, p, p->ty, i);
        else if (p->ty->kind == TE_LIST)
            param_buf(&L, p, p->ty->elem, i)->list_cap = (int)p->sym->type->list_cap;
        else
            k->param_dt[i] = dt_of(p->sym->type);
    }
    /* facts first: alignment analysis of any statement may use any requirement */
    for (int i = 0; i < kernel->body.n; i++)
        if (kernel->body.v[i]->kind == ST_REQUIRE)
            record_fact(&L, kernel->body.v[i]->e);
    /* base pointers: the runtime checks the alignment the code assumes (16 bytes), of every
     * element of a tensor list too */
    for (int i = 0; i < kernel->nparams; i++)
        if (k->params[i])
            k->params[i]->align = 16;
    lower_stmts(&L, kernel->body);
    annotate_divs(k, k->body);
    *out = k;
    return L.ok && c->diag.nerrors == errs;
}
