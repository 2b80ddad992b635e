/* tir.c — constructors for tile-IR nodes, with constant folding of integer arithmetic so that
 * index expressions built by the lowering stay small, and the analyses of the IR that several
 * passes share. */
#include "tir.h"

#include <string.h>

TVar *tir_var(TKernel *k, const char *name, DType dt, bool mut)
{
    TVar *v = ARENA_NEW(k->arena, TVar);
    v->id = k->next_id++;
    v->name = name ? name : "t";
    v->dt = dt;
    v->mutable_ = mut;
    v->div = 1;
    return v;
}

TBuf *tir_buf(TKernel *k, const char *name, Scope sc, DType dt, int rank, const int64_t *shape)
{
    TBuf *b = ARENA_NEW(k->arena, TBuf);
    b->id = k->next_id++;
    b->name = name;
    b->scope = sc;
    b->dt = dt;
    b->rank = rank;
    b->param = -1;
    for (int i = 0; i < rank; i++)
        b->shape[i] = shape ? shape[i] : -1;
    if (k->nbufs == k->capbufs) {
        k->capbufs = k->capbufs ? k->capbufs * 2 : 16;
        TBuf **nb = ARENA_ARRAY(k->arena, TBuf *, k->capbufs);
        if (k->nbufs)
            memcpy(nb, k->bufs, sizeof(TBuf *) * (size_t)k->nbufs);
        k->bufs = nb;
    }
    k->bufs[k->nbufs++] = b;
    return b;
}

TBuf *tir_list_element(TKernel *k, TBuf *list, TExpr *index)
{
    TBuf *b = tir_buf(k, list->name, SC_GLOBAL, list->dt, list->rank, list->shape);
    b->list = list;
    b->list_index = tx_cast_int(k, index, DT_I32);
    b->align = list->align;
    for (int i = 0; i < list->rank; i++) {
        b->gdim[i] = list->gdim[i];
        b->gstride[i] = list->gstride[i];
    }
    return b;
}

void tir_mark_written(TBuf *b)
{
    b->written = true;
    if (b->list)
        b->list->written = true;
}

static TExpr *tx_new(TKernel *k, TExprKind kind, DType dt)
{
    TExpr *e = ARENA_NEW(k->arena, TExpr);
    e->kind = kind;
    e->dt = dt;
    e->loc = loc_none();
    return e;
}

TExpr *tx_const_int(TKernel *k, DType dt, int64_t v)
{
    TExpr *e = tx_new(k, TX_CONST, dt);
    bool lossy;
    ConstVal c = cv_convert(cv_int(v), dt, &lossy);
    e->ival = c.kind == CV_INT ? c.i : v;
    if (dt == DT_BOOL)
        e->ival = v != 0;
    return e;
}

TExpr *tx_const_float(TKernel *k, DType dt, double v)
{
    TExpr *e = tx_new(k, TX_CONST, dt);
    e->fval = dt == DT_F32 ? (double)(float)v : v;
    return e;
}

TExpr *tx_bool(TKernel *k, bool v) { return tx_const_int(k, DT_BOOL, v); }

TExpr *tx_var(TKernel *k, TVar *v)
{
    TExpr *e = tx_new(k, TX_VAR, v->dt);
    e->var = v;
    return e;
}

TExpr *tx_special(TKernel *k, Special s)
{
    TExpr *e = tx_new(k, TX_SPECIAL, DT_I32);
    e->special = s;
    return e;
}

bool tx_is_const(const TExpr *e, int64_t *v)
{
    if (e && e->kind == TX_CONST && (dtype_is_int(e->dt) || e->dt == DT_BOOL)) {
        if (v)
            *v = e->ival;
        return true;
    }
    return false;
}

static bool is_cmp(OpKind op)
{
    return op == OP_EQ || op == OP_NE || op == OP_LT || op == OP_LE || op == OP_GT || op == OP_GE;
}

TExpr *tx_bin(TKernel *k, OpKind op, TExpr *a, TExpr *b)
{
    DType dt = (is_cmp(op) || op == OP_LAND || op == OP_LOR) ? DT_BOOL : a->dt;
    int64_t x, y;
    bool ca = tx_is_const(a, &x), cb = tx_is_const(b, &y);
    if (ca && cb && dtype_is_int(a->dt)) {
        const char *err;
        ConstVal r = cv_binary(op, cv_int(x), cv_int(y), a->dt, &err);
        if (r.kind == CV_INT)
            return tx_const_int(k, dt, r.i);
        if (r.kind == CV_BOOL)
            return tx_bool(k, r.b);
    }
    if (ca && cb && a->dt == DT_BOOL) {
        const char *err;
        ConstVal r = cv_binary(op, cv_bool(x), cv_bool(y), DT_BOOL, &err);
        if (r.kind == CV_BOOL)
            return tx_bool(k, r.b);
    }
    if (dtype_is_int(a->dt)) {
        /* identities that keep index arithmetic readable */
        if (op == OP_ADD && ca && x == 0)
            return b;
        if ((op == OP_ADD || op == OP_SUB) && cb && y == 0)
            return a;
        if (op == OP_MUL && ((ca && x == 0) || (cb && y == 0)))
            return tx_const_int(k, dt, 0);
        if (op == OP_MUL && ca && x == 1)
            return b;
        if ((op == OP_MUL || op == OP_DIV) && cb && y == 1)
            return a;
        if (op == OP_MOD && cb && y == 1)
            return tx_const_int(k, dt, 0);
        /* (a + c1) + c2 -> a + (c1 + c2) */
        if ((op == OP_ADD || op == OP_SUB) && cb && a->kind == TX_BIN && a->op == OP_ADD) {
            int64_t c1;
            if (tx_is_const(a->b, &c1))
                return tx_bin(k, OP_ADD, a->a, tx_const_int(k, dt, op == OP_ADD ? c1 + y : c1 - y));
        }
    }
    if (a->dt == DT_BOOL) {
        if (op == OP_LAND && ca)
            return x ? b : a;
        if (op == OP_LAND && cb)
            return y ? a : b;
        if (op == OP_LOR && ca)
            return x ? a : b;
        if (op == OP_LOR && cb)
            return y ? b : a;
    }
    TExpr *e = tx_new(k, TX_BIN, dt);
    e->op = op;
    e->a = a;
    e->b = b;
    return e;
}

TExpr *tx_un(TKernel *k, OpKind op, TExpr *a)
{
    int64_t x;
    if (tx_is_const(a, &x)) {
        const char *err;
        ConstVal r = cv_unary(op, a->dt == DT_BOOL ? cv_bool(x) : cv_int(x), a->dt, &err);
        if (r.kind == CV_INT)
            return tx_const_int(k, a->dt, r.i);
        if (r.kind == CV_BOOL)
            return tx_bool(k, r.b);
    }
    if (a->kind == TX_CONST && dtype_is_float(a->dt) && op == OP_NEG)
        return tx_const_float(k, a->dt, -a->fval);
    TExpr *e = tx_new(k, TX_UN, a->dt);
    e->op = op;
    e->a = a;
    return e;
}

TExpr *tx_select(TKernel *k, TExpr *c, TExpr *a, TExpr *b)
{
    int64_t x;
    if (tx_is_const(c, &x))
        return x ? a : b;
    TExpr *e = tx_new(k, TX_SELECT, a->dt);
    e->a = c;
    e->b = a;
    e->c = b;
    return e;
}

TExpr *tx_cvt(TKernel *k, DType to, TExpr *a, Rounding r)
{
    if (a->dt == to)
        return a;
    int64_t x;
    if (tx_is_const(a, &x) && dtype_is_int(to) && a->dt != DT_BOOL)
        return tx_const_int(k, to, x);
    if (a->kind == TX_CONST && dtype_is_int(a->dt) && (to == DT_F32 || to == DT_F64) && r == RND_DEFAULT) {
        double d = (double)a->ival;
        if ((int64_t)d == a->ival && (to == DT_F64 || (double)(float)d == d))
            return tx_const_float(k, to, d);
    }
    if (a->kind == TX_CONST && dtype_is_float(a->dt) && (to == DT_F64 || (to == DT_F32 && a->dt != DT_F64)))
        return tx_const_float(k, to, a->fval);
    TExpr *e = tx_new(k, TX_CVT, to);
    e->a = a;
    e->round = r;
    return e;
}

TExpr *tx_bitcast(TKernel *k, DType to, TExpr *a)
{
    if (a->dt == to)
        return a;
    TExpr *e = tx_new(k, TX_BITCAST, to);
    e->a = a;
    return e;
}

TExpr *tx_cast_int(TKernel *k, TExpr *e, DType to) { return tx_cvt(k, to, e, RND_DEFAULT); }

TExpr *tx_rebuild(TKernel *k, const TExpr *e, TExpr *(*map)(void *ctx, TExpr *operand), void *ctx)
{
    TExpr *c = ARENA_NEW(k->arena, TExpr);
    *c = *e;
    c->a = map(ctx, e->a);
    c->b = map(ctx, e->b);
    c->c = map(ctx, e->c);
    if (e->nargs) {
        c->args = ARENA_ARRAY(k->arena, TExpr *, e->nargs);
        for (int i = 0; i < e->nargs; i++)
            c->args[i] = map(ctx, e->args[i]);
    }
    return c;
}

TExpr *tx_load(TKernel *k, TBuf *b, TExpr **idx, int n)
{
    TExpr *e = tx_new(k, TX_LOAD, b->dt);
    e->buf = b;
    e->args = ARENA_ARRAY(k->arena, TExpr *, n ? n : 1);
    memcpy(e->args, idx, sizeof(TExpr *) * (size_t)n);
    e->nargs = n;
    return e;
}

TExpr *tx_call(TKernel *k, int builtin, DType dt, TExpr **args, int n)
{
    TExpr *e = tx_new(k, TX_CALL, dt);
    e->builtin = builtin;
    e->args = ARENA_ARRAY(k->arena, TExpr *, n ? n : 1);
    if (n)
        memcpy(e->args, args, sizeof(TExpr *) * (size_t)n);
    e->nargs = n;
    return e;
}

TStmt *ts_new(TKernel *k, TStmtKind kind, Loc loc)
{
    TStmt *s = ARENA_NEW(k->arena, TStmt);
    s->kind = kind;
    s->loc = loc;
    return s;
}

TStmt *ts_seq(TKernel *k) { return ts_new(k, TS_SEQ, loc_none()); }

static void push(TKernel *k, TStmt ***arr, int *n, TStmt *s)
{
    if ((*n & (*n - 1)) == 0) {
        int cap = *n ? *n * 2 : 4;
        TStmt **v = ARENA_ARRAY(k->arena, TStmt *, cap);
        if (*n)
            memcpy(v, *arr, sizeof(TStmt *) * (size_t)*n);
        *arr = v;
    }
    (*arr)[(*n)++] = s;
}

void ts_push(TKernel *k, TStmt *seq, TStmt *s)
{
    if (s)
        push(k, &seq->body, &seq->nbody, s);
}

void ts_push_else(TKernel *k, TStmt *ifs, TStmt *s)
{
    if (s)
        push(k, &ifs->els, &ifs->nels, s);
}

TStmt *ts_decl(TKernel *k, TVar *v, TExpr *init)
{
    TStmt *s = ts_new(k, TS_DECL, loc_none());
    s->var = v;
    s->e = init;
    return s;
}

TStmt *ts_assign(TKernel *k, TVar *v, TExpr *e)
{
    TStmt *s = ts_new(k, TS_ASSIGN, loc_none());
    s->var = v;
    s->e = e;
    return s;
}

TStmt *ts_store(TKernel *k, TBuf *b, TExpr **idx, int n, TExpr *e)
{
    TStmt *s = ts_new(k, TS_STORE, loc_none());
    s->buf = b;
    s->idx = ARENA_ARRAY(k->arena, TExpr *, n ? n : 1);
    memcpy(s->idx, idx, sizeof(TExpr *) * (size_t)n);
    s->nidx = n;
    s->e = e;
    return s;
}

TStmt *ts_eval(TKernel *k, TExpr *e)
{
    TStmt *s = ts_new(k, TS_EVAL, loc_none());
    s->e = e;
    return s;
}

TStmt *ts_if(TKernel *k, TExpr *c)
{
    TStmt *s = ts_new(k, TS_IF, loc_none());
    s->e = c;
    return s;
}

TStmt *ts_for(TKernel *k, TVar *v, TExpr *lo, TExpr *hi, TExpr *step, ForKind kind)
{
    TStmt *s = ts_new(k, TS_FOR, loc_none());
    s->var = v;
    s->lo = lo;
    s->hi = hi;
    s->step = step;
    s->for_kind = kind;
    return s;
}

TStmt *ts_barrier(TKernel *k) { return ts_new(k, TS_BARRIER, loc_none()); }

TStmt *ts_intrin(TKernel *k, int id, int64_t ival, TExpr **args, int nargs, TExpr **outs, int nouts, Loc loc)
{
    TStmt *s = ts_new(k, TS_INTRIN, loc);
    s->e = tx_call(k, id, DT_NONE, args, nargs);
    s->e->ival = ival;
    s->idx = ARENA_ARRAY(k->arena, TExpr *, nouts ? nouts : 1);
    if (nouts)
        memcpy(s->idx, outs, sizeof(TExpr *) * (size_t)nouts);
    s->nidx = nouts;
    return s;
}

TStmt *ts_guard(TKernel *k, TExpr *pred, TStmt *s)
{
    if (!pred)
        return s;
    TStmt *i = ts_if(k, pred);
    ts_push(k, i, s);
    return i;
}

/* ---- a frag's register array (after layout: one element per register of its layout) ---- */
TBuf *tir_frag_regs(TKernel *k, TBuf *f)
{
    if (!f->regs) {
        int64_t n = f->layout ? f->layout->nregs : 1;
        f->regs = tir_buf(k, arena_printf(k->arena, "%s.r", f->name), SC_LOCAL, f->dt, 1, &n);
    }
    return f->regs;
}

TExpr *tx_frag_reg(TKernel *k, TBuf *f, int r)
{
    TExpr *i = tx_const_int(k, DT_I32, r);
    return tx_load(k, tir_frag_regs(k, f), &i, 1);
}

TStmt *ts_frag_reg_store(TKernel *k, TBuf *f, int r, TExpr *v)
{
    TExpr *i = tx_const_int(k, DT_I32, r);
    return ts_store(k, tir_frag_regs(k, f), &i, 1, tx_cvt(k, f->dt, v, RND_DEFAULT));
}

/* ---- known divisibility of integer expressions: the alignment of vector accesses ---- */
static int64_t fact_div(const TKernel *k, int param, int axis, bool stride)
{
    for (int i = 0; i < k->nfacts; i++)
        if (k->facts[i].param == param && k->facts[i].axis == axis && k->facts[i].stride == stride)
            return k->facts[i].div;
    return 1;
}

int64_t tir_known_div(const TKernel *k, const TExpr *e)
{
    const int64_t cap = 1 << 12;
    if (!e)
        return 1;
    switch (e->kind) {
    case TX_CONST: {
        int64_t v = e->ival;
        if (v == 0)
            return cap;
        int64_t d = v & -v;
        return d > cap ? cap : d;
    }
    case TX_VAR: return e->var->div;
    case TX_DIM: return fact_div(k, e->param, e->axis, false);
    case TX_LEN: return fact_div(k, e->param, -1, false); /* `require L % 2 == 0` */
    case TX_STRIDE: return fact_div(k, e->param, e->axis, true);
    case TX_PARAM: return fact_div(k, e->param, -1, false);
    case TX_CVT: return dtype_is_int(e->dt) && dtype_is_int(e->a->dt) && dtype_bits(e->dt) >= dtype_bits(e->a->dt) ? tir_known_div(k, e->a) : 1;
    case TX_BIN: {
        int64_t a = tir_known_div(k, e->a), b = tir_known_div(k, e->b);
        switch (e->op) {
        case OP_ADD:
        case OP_SUB: return a < b ? a : b;
        case OP_MUL: {
            int64_t p = a * b;
            return p > cap ? cap : p;
        }
        case OP_SHL: {
            int64_t s;
            if (tx_is_const(e->b, &s) && s < 12) {
                int64_t p = a << s;
                return p > cap ? cap : p;
            }
            return a;
        }
        default: return 1;
        }
    }
    default: return 1;
    }
}

/* ---- the size of the generated code ---- */
typedef struct SizeCount {
    int64_t n, cap;
} SizeCount;

static void size_expr(SizeCount *c, const TExpr *e)
{
    if (!e || c->n > c->cap)
        return;
    c->n++;
    size_expr(c, e->a);
    size_expr(c, e->b);
    size_expr(c, e->c);
    for (int i = 0; i < e->nargs; i++)
        size_expr(c, e->args[i]);
}

int64_t tir_unroll_trips(const TStmt *s)
{
    int64_t lo, hi, step;
    if (s->kind != TS_FOR || s->for_kind != FOR_UNROLL || !tx_is_const(s->lo, &lo) || !tx_is_const(s->hi, &hi) ||
        !tx_is_const(s->step, &step) || step <= 0)
        return -1;
    if (hi <= lo)
        return 0;
    uint64_t span = (uint64_t)hi - (uint64_t)lo;
    uint64_t trips = span / (uint64_t)step + (span % (uint64_t)step != 0);
    return trips > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)trips;
}

static void size_stmt(SizeCount *c, const TStmt *s);

static void size_list(SizeCount *c, TStmt *const *v, int n)
{
    for (int i = 0; i < n && c->n <= c->cap; i++)
        size_stmt(c, v[i]);
}

static void size_stmt(SizeCount *c, const TStmt *s)
{
    if (!s || c->n > c->cap)
        return;
    c->n += 1 + ((s->kind == TS_VLOAD || s->kind == TS_VSTORE) ? s->vec : 0);
    size_expr(c, s->e);
    for (int i = 0; i < s->nidx; i++)
        size_expr(c, s->idx[i]);
    size_expr(c, s->lo);
    size_expr(c, s->hi);
    size_expr(c, s->step);
    int64_t trips = tir_unroll_trips(s);
    if (trips < 0) {
        size_list(c, s->body, s->nbody);
        size_list(c, s->els, s->nels);
        return;
    }
    /* an unrolled loop: its body once per iteration (codegen_llvm.c unrolls it) */
    SizeCount b = {0, trips ? c->cap / trips + 1 : 0};
    size_list(&b, s->body, s->nbody);
    if (trips && b.n > (c->cap - c->n) / trips + 1)
        c->n = c->cap + 1;
    else
        c->n += b.n * trips;
}

int64_t tir_code_size(const TStmt *s, int64_t cap)
{
    SizeCount c = {0, cap};
    size_stmt(&c, s);
    return c.n;
}

/* the children of s whose code it is made of, largest first: its body and else branch */
static const TStmt *largest_child(const TStmt *s, int64_t cap, int64_t *size)
{
    const TStmt *best = NULL;
    *size = -1;
    for (int part = 0; part < 2; part++) {
        TStmt *const *v = part ? s->els : s->body;
        int n = part ? s->nels : s->nbody;
        for (int i = 0; i < n; i++) {
            int64_t m = tir_code_size(v[i], cap);
            if (m > *size) {
                *size = m;
                best = v[i];
            }
        }
    }
    return best;
}

const TStmt *tir_code_size_culprit(const TStmt *s, int64_t cap)
{
    const TStmt *at = NULL;
    int64_t size = tir_code_size(s, cap);
    while (s) {
        if (s->loc.file >= 0) {
            at = s;
            if (tir_unroll_trips(s) > 1)
                return s; /* the outermost unrolled loop on the way down */
        }
        int64_t m;
        const TStmt *c = largest_child(s, cap, &m);
        if (!c || m * 2 < size)
            break; /* no one part makes most of it */
        s = c;
        size = m;
    }
    return at;
}

void tir_code_size_error(TKernel *k, Loc loc)
{
    diag_error(k->diag, loc, "the code of this kernel would be more than %d operations after lowering and unrolling (the "
               "limit: LLVM's time and memory grow faster than the code); most of it is made here", TL_MAX_CODE_SIZE);
}
