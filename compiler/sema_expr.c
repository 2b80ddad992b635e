/* sema_expr.c — types, compile-time values and uniformity of expressions, and the checks
 * of every builtin (arity, argument types, where it may be used). */
#include "sema_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define ERR(loc, ...) diag_error(s->d, (loc), __VA_ARGS__)

static const char *tstr(SemaCtx *s, const Type *t) { return ty_str(s->arena, t); }

bool is_region(const Type *t) { return t->kind == TY_TENSOR || t->kind == TY_TILE; }

static bool is_err(const Type *t) { return t->kind == TY_ERROR; }
static bool is_int_type(const Type *t) { return t->kind == TY_UNTYPED_INT || (t->kind == TY_SCALAR && dtype_is_int(t->dt)); }
static bool is_float_type(const Type *t) { return t->kind == TY_UNTYPED_FLOAT || (t->kind == TY_SCALAR && dtype_is_float(t->dt)); }
static bool is_bool_type(const Type *t) { return t->kind == TY_SCALAR && t->dt == DT_BOOL; }

/* Untyped constants take i32 / f32 when nothing else decides. */
Type *default_type(Type *t)
{
    if (t->kind == TY_UNTYPED_INT)
        return ty_scalar(DT_I32);
    if (t->kind == TY_UNTYPED_FLOAT)
        return ty_scalar(DT_F32);
    return t;
}

/* arithmetic on 16-bit and narrower floats happens in f32 */
static DType arith_dtype(DType dt)
{
    DKind k = dtype_kind(dt);
    if (k == DK_HALF || k == DK_FP8 || k == DK_FP4)
        return DT_F32;
    return dt;
}

static int int_rank(DType dt) { return dtype_bits(dt); }

/* The type both operands of a binary operator take; NULL (after a diagnostic) if none. */
static Type *unify(SemaCtx *s, Expr *a, Expr *b, Loc loc, const char *opname)
{
    Type *ta = a->type, *tb = b->type;
    if (is_err(ta) || is_err(tb))
        return ty_error();
    if (ta->kind == TY_GENERIC || tb->kind == TY_GENERIC)
        return ta->kind == TY_GENERIC ? ta : tb;
    if (is_region(ta) || is_region(tb)) {
        ERR(is_region(ta) ? a->loc : b->loc, "a tile cannot be an operand of '%s'; index it inside a parallel loop", opname);
        return ty_error();
    }
    if (ta->kind == TY_STRING || tb->kind == TY_STRING || ta->kind == TY_TUPLE || tb->kind == TY_TUPLE ||
        ta->kind == TY_VOID || tb->kind == TY_VOID) {
        Expr *bad = (ta->kind == TY_STRING || ta->kind == TY_TUPLE || ta->kind == TY_VOID) ? a : b;
        ERR(bad->loc, "operand of '%s' has type %s", opname, tstr(s, bad->type));
        return ty_error();
    }
    if (ta->kind == TY_TYPE || tb->kind == TY_TYPE) {
        if (ta->kind == TY_TYPE && tb->kind == TY_TYPE)
            return ta;
        ERR(loc, "operands of '%s' are a type and a value", opname);
        return ty_error();
    }
    bool ua = ta->kind == TY_UNTYPED_INT || ta->kind == TY_UNTYPED_FLOAT;
    bool ub = tb->kind == TY_UNTYPED_INT || tb->kind == TY_UNTYPED_FLOAT;
    if (ua && ub)
        return (ta->kind == TY_UNTYPED_FLOAT || tb->kind == TY_UNTYPED_FLOAT) ? ty_untyped_float() : ty_untyped_int();
    if (ua || ub) {
        Type *typed = ua ? tb : ta;
        Expr *ue = ua ? a : b;
        if (ue->type->kind == TY_UNTYPED_FLOAT && (is_int_type(typed) || is_bool_type(typed))) {
            ERR(ue->loc, "a float constant cannot be combined with %s", tstr(s, typed));
            return ty_error();
        }
        if (is_bool_type(typed)) {
            ERR(ue->loc, "an integer constant cannot be combined with bool");
            return ty_error();
        }
        DType d = arith_dtype(typed->dt);
        return ty_scalar(d);
    }
    DType da = ta->dt, db = tb->dt;
    if (da == db)
        return ty_scalar(da == DT_BOOL ? DT_BOOL : arith_dtype(da));
    if (da == DT_BOOL || db == DT_BOOL) {
        ERR(loc, "operands of '%s' have types %s and %s; bool does not mix with numbers", opname, dtype_name(da), dtype_name(db));
        return ty_error();
    }
    if (dtype_is_int(da) && dtype_is_int(db)) {
        bool sa = dtype_is_signed(da), sb = dtype_is_signed(db);
        /* lossless widening only: same signedness, or unsigned into a wider signed type */
        if (sa == sb)
            return ty_scalar(int_rank(da) >= int_rank(db) ? da : db);
        DType sd = sa ? da : db, ud = sa ? db : da;
        if (int_rank(sd) > int_rank(ud))
            return ty_scalar(sd);
        ERR(loc, "operands of '%s' have types %s and %s; convert one explicitly, e.g. %s(x)", opname,
            dtype_name(da), dtype_name(db), dtype_name(sd));
        return ty_error();
    }
    if (dtype_is_float(da) && dtype_is_float(db)) {
        DType pa = arith_dtype(da), pb = arith_dtype(db);
        return ty_scalar(pa == DT_F64 || pb == DT_F64 ? DT_F64 : DT_F32);
    }
    if (dtype_kind(da) == DK_SCALE || dtype_kind(db) == DK_SCALE) {
        ERR(loc, "ue8m0 values take no arithmetic; convert with f32(x) first");
        return ty_error();
    }
    ERR(loc, "operands of '%s' have types %s and %s; convert one explicitly, e.g. %s(x)", opname,
        dtype_name(da), dtype_name(db), dtype_name(dtype_is_float(da) ? da : db));
    return ty_error();
}

/* Converts an expression's value to `to` if it is assignable without an explicit conversion.
 * Reports "expected X, found Y" otherwise. */
bool coerce(SemaCtx *s, Expr *e, Type *to, const char *what)
{
    Type *from = e->type;
    if (is_err(from) || is_err(to) || from->kind == TY_GENERIC || to->kind == TY_GENERIC)
        return true;
    if (to->kind != TY_SCALAR) {
        if (from->kind == to->kind)
            return true;
        ERR(e->loc, "%s: expected %s, found %s", what, tstr(s, to), tstr(s, from));
        return false;
    }
    DType dt = to->dt;
    if (from->kind == TY_UNTYPED_INT || from->kind == TY_UNTYPED_FLOAT) {
        if (dt == DT_BOOL || (from->kind == TY_UNTYPED_FLOAT && dtype_is_int(dt))) {
            ERR(e->loc, "%s: expected %s, found %s", what, dtype_name(dt), tstr(s, from));
            return false;
        }
        if (dtype_kind(dt) == DK_SCALE) {
            ERR(e->loc, "%s: a constant cannot be a ue8m0 value; write ue8m0(2.0)", what);
            return false;
        }
        if (e->cv.kind == CV_INT || e->cv.kind == CV_FLOAT) {
            bool lossy;
            if (!cv_fits(e->cv, dt)) {
                StrBuf b = {0};
                cv_print(&b, e->cv);
                ERR(e->loc, "%s: constant %s does not fit in %s", what, b.data, dtype_name(dt));
                sb_free(&b);
                return false;
            }
            ConstVal v = cv_convert(e->cv, dt, &lossy);
            e->cv = v;
        }
        e->type = to;
        return true;
    }
    if (from->kind != TY_SCALAR) {
        ERR(e->loc, "%s: expected %s, found %s", what, dtype_name(dt), tstr(s, from));
        return false;
    }
    DType fd = from->dt;
    if (fd == dt)
        return true;
    bool ok = false;
    if (dtype_is_int(fd) && dtype_is_int(dt)) {
        bool sf = dtype_is_signed(fd), st = dtype_is_signed(dt);
        ok = (sf == st && int_rank(dt) >= int_rank(fd)) || (!sf && st && int_rank(dt) > int_rank(fd));
    } else if (dtype_is_float(fd) && (dt == DT_F32 || dt == DT_F64)) {
        ok = dtype_bits(fd) <= dtype_bits(dt); /* exact widening */
    }
    if (!ok) {
        /* suggest a conversion only where conversion_ok() would accept it */
        bool convertible = dt != DT_BOOL && !(fd == DT_BOOL && !dtype_is_int(dt)) &&
                           !(dtype_kind(dt) == DK_SCALE && fd != DT_F32 && fd != DT_BF16) &&
                           !(dtype_kind(fd) == DK_SCALE && dt != DT_F32 && dt != DT_BF16);
        if (convertible)
            ERR(e->loc, "%s: expected %s, found %s; convert explicitly with %s(x)", what, dtype_name(dt), dtype_name(fd),
                dtype_name(dt));
        else
            ERR(e->loc, "%s: expected %s, found %s", what, dtype_name(dt), dtype_name(fd));
        return false;
    }
    e->type = to;
    return true;
}

ConstIntResult require_const_int(SemaCtx *s, Expr *e, const char *what, int64_t *out)
{
    Type *t = check_expr(s, e, NULL);
    if (is_err(t))
        return CI_ERROR;
    if (!is_int_type(t)) {
        ERR(e->loc, "%s must be an integer, found %s", what, tstr(s, t));
        return CI_ERROR;
    }
    if (e->cv.kind == CV_UNKNOWN) {
        *out = DIM_UNKNOWN;
        return CI_UNKNOWN;
    }
    if (e->cv.kind != CV_INT) {
        ERR(e->loc, "%s must be a compile-time constant", what);
        return CI_ERROR;
    }
    *out = e->cv.i;
    return CI_KNOWN;
}

/* ---- types written in the source ---- */
Type *resolve_type(SemaCtx *s, TypeExpr *te, bool allow_tensor)
{
    if (!te)
        return ty_error();
    switch (te->kind) {
    case TE_PRIM: return ty_scalar(te->prim);
    case TE_NAMED: {
        Sym *g = scope_lookup(s, te->name);
        if (!g) {
            ERR(te->loc, "unknown type '%s'", te->name);
            return ty_error();
        }
        if (g->kind != SYM_GENERIC || g->type->kind != TY_TYPE) {
            ERR(te->loc, "'%s' is not a type", te->name);
            diag_note(s->d, g->loc, "'%s' is declared here", te->name);
            return ty_error();
        }
        if (g->cv.kind == CV_TYPE)
            return g->cv.t;
        return ty_generic(s->arena, g->name);
    }
    case TE_TUPLE: {
        Type *el[16];
        if (te->nelems > 16) {
            ERR(te->loc, "at most 16 return values");
            return ty_error();
        }
        for (int i = 0; i < te->nelems; i++) {
            el[i] = resolve_type(s, te->elems[i], false);
            if (is_err(el[i]))
                return el[i]; /* reported; a tuple with an <error> inside would show in messages */
            if (el[i]->kind != TY_SCALAR && el[i]->kind != TY_GENERIC) {
                ERR(te->elems[i]->loc, "a tuple holds scalars only");
                return ty_error();
            }
        }
        return ty_tuple(s->arena, el, te->nelems);
    }
    case TE_TILE: /* fn parameters bind their tiles themselves; this is a kernel's */
        ERR(te->loc, "a kernel takes tensors and scalars, not tiles; declare the %s tile in its body", scope_name(te->scope));
        return ty_error();
    case TE_LIST:
        ERR(te->loc, "a tensor list is only allowed for kernel parameters");
        return ty_error();
    case TE_TENSOR:
        if (!allow_tensor) {
            ERR(te->loc, "a tensor type is only allowed for kernel and fn parameters");
            return ty_error();
        }
        return ty_error(); /* tensor parameters are handled by the signature checks */
    }
    return ty_error();
}

/* ---- names ---- */
static Type *check_name(SemaCtx *s, Expr *e)
{
    Sym *sym = scope_lookup(s, e->str);
    if (!sym)
        sym = comp_lookup_global(s->comp, e->str);
    if (sym) {
        e->sym = sym;
        sym->used = true;
        switch (sym->kind) {
        case SYM_FN:
        case SYM_KERNEL:
            ERR(e->loc, "'%s' is a %s; call it with arguments", e->str, sym->kind == SYM_FN ? "fn" : "kernel");
            return ty_error();
        case SYM_CONST:
            if (sym->const_state == CONST_BUSY) {
                ERR(e->loc, "constant '%s' depends on its own value", e->str);
                return ty_error();
            }
            sema_check_const(s, sym);
            /* fallthrough */
        case SYM_GENERIC:
            e->cv = sym->cv;
            if (sym->type->kind == TY_TYPE) {
                e->type = ty_typeval();
                return e->type;
            }
            return sym->type;
        case SYM_LET:
        case SYM_LOOP:
            e->cv = sym->cv;
            e->varying = sym->varying;
            return sym->type;
        case SYM_PINDEX:
            e->varying = true;
            return sym->type;
        case SYM_VAR:
            e->varying = sym->varying || s->varying_cf;
            return sym->type;
        case SYM_DIM:
        case SYM_SCALAR:
            if (sym->kind == SYM_DIM && s->kernel && !s->generic && !s->in_signature && !s->in_require) {
                Param *bp = &s->kernel->params[sym->dim_param];
                if (bp->sym && bp->sym->optional && !bp->sym->present) {
                    ERR(e->loc, "'%s' is a shape of optional tensor '%s', which this specialisation does not take", e->str,
                        bp->name.s);
                    diag_note(s->d, sym->loc, "'%s' is bound here; use it only under 'if const present(%s)'", e->str,
                              bp->name.s);
                    return ty_error();
                }
            }
            if (sym->kind == SYM_SCALAR && sym->type->kind == TY_SCALAR)
                e->cv.kind = CV_NONE;
            return sym->type;
        case SYM_TENSOR:
            if (sym->optional && !s->generic && !sym->present) {
                ERR(e->loc, "optional tensor '%s' is not present in this specialisation; guard its use with 'if const present(%s)'",
                    e->str, e->str);
                return ty_error();
            }
            return sym->type;
        case SYM_STORAGE:
            e->varying = sym->varying; /* a tile parameter bound to a slice at a thread's index */
            return sym->type;
        }
    }
    BuiltinId b = builtin_lookup(e->str);
    if (b != BI_NONE) {
        e->builtin = b;
        const BuiltinInfo *bi = builtin_info(b);
        switch (b) {
        case BI_LANE:
        case BI_WARP:
            if (s->in_signature) {
                ERR(e->loc, "'%s' is not available in a kernel signature", e->str);
                return ty_error();
            }
            e->varying = true;
            return ty_scalar(DT_I32);
        case BI_NUM_SMS:
            if (s->in_tiles) {
                ERR(e->loc, "the number of tiles cannot depend on 'num_sms': the kernel's loop over the tiles counts them too");
                return ty_error();
            }
            if (!s->in_launch) {
                ERR(e->loc, "'num_sms' is only available in launch expressions (grid(...)); read grid_dim.x in the body");
                return ty_error();
            }
            return ty_scalar(DT_I32);
        case BI_INF:
            e->cv = cv_float(INFINITY);
            return ty_scalar(DT_F32);
        case BI_NAN:
            e->cv = cv_float(NAN);
            return ty_scalar(DT_F32);
        default:
            if (bi->cls == BC_VAR)
                ERR(e->loc, "'%s' needs a component: %s.x, %s.y or %s.z", e->str, e->str, e->str, e->str);
            else
                ERR(e->loc, "builtin '%s' is a function; call it with arguments", e->str);
            return ty_error();
        }
    }
    ERR(e->loc, "unknown name '%s'", e->str);
    return ty_error();
}

/* ---- members: thread.x, block.y, tile.T ---- */
static Type *check_member(SemaCtx *s, Expr *e)
{
    Expr *base = e->a;
    if (base->kind == EX_NAME && !scope_lookup(s, base->str) && !comp_lookup_global(s->comp, base->str)) {
        BuiltinId b = builtin_lookup(base->str);
        if (b == BI_THREAD_NS || b == BI_BLOCK_NS || b == BI_BLOCK_DIM_NS || b == BI_GRID_DIM_NS) {
            if (strcmp(e->str, "x") && strcmp(e->str, "y") && strcmp(e->str, "z")) {
                ERR(e->loc, "'%s' has components x, y and z, not '%s'", base->str, e->str);
                return ty_error();
            }
            if (s->in_signature) {
                ERR(e->loc, "'%s.%s' is not available in a kernel signature", base->str, e->str);
                return ty_error();
            }
            e->builtin = b;
            base->builtin = b;
            base->type = ty_void();
            e->varying = b == BI_THREAD_NS;
            return ty_scalar(DT_I32);
        }
    }
    Type *bt = check_expr(s, base, NULL);
    if (is_err(bt))
        return bt;
    if (strcmp(e->str, "T") == 0) {
        if (!is_region(bt) || bt->rank != 2) {
            ERR(e->loc, "'.T' transposes a 2-D tile or tensor, not %s", tstr(s, bt));
            return ty_error();
        }
        int64_t d[2] = {bt->dims[1], bt->dims[0]};
        Type *t = ty_region(s->arena, bt->kind, bt->scope, bt->dt, bt->generic_name, 2, d);
        e->region_perm = 1;
        e->varying = base->varying;
        return t;
    }
    ERR(e->loc, "%s has no member '%s'", tstr(s, bt), e->str);
    return ty_error();
}

/* The affine form of an integer expression: const + sum(coef * atom), used to decide
 * whether a slice `a : b` has a constant extent. Atoms are compared structurally. */
typedef struct Affine {
    int64_t k;
    int n;
    const Expr *atom[8];
    int64_t coef[8];
    bool ok;
} Affine;

static bool expr_equal(const Expr *a, const Expr *b)
{
    if (!a || !b)
        return a == b;
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case EX_INT: return a->ival == b->ival;
    case EX_NAME: return a->sym ? a->sym == b->sym : strcmp(a->str, b->str) == 0;
    case EX_MEMBER: return strcmp(a->str, b->str) == 0 && expr_equal(a->a, b->a);
    case EX_UNARY: return a->op == b->op && expr_equal(a->a, b->a);
    case EX_BINARY: return a->op == b->op && expr_equal(a->a, b->a) && expr_equal(a->b, b->b);
    case EX_CALL:
        if (!expr_equal(a->a, b->a) || a->args.n != b->args.n)
            return false;
        for (int i = 0; i < a->args.n; i++)
            if (!expr_equal(a->args.v[i], b->args.v[i]))
                return false;
        return true;
    default: return false;
    }
}

/* two's-complement wrapping arithmetic: constants may be as large as the user writes them, and
 * signed overflow in the compiler itself would be undefined */
static int64_t wadd(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wsub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static int64_t wmul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

static void aff_add(Affine *f, const Expr *atom, int64_t c)
{
    for (int i = 0; i < f->n; i++)
        if (expr_equal(f->atom[i], atom)) {
            f->coef[i] = wadd(f->coef[i], c);
            return;
        }
    if (f->n == 8) {
        f->ok = false;
        return;
    }
    f->atom[f->n] = atom;
    f->coef[f->n++] = c;
}

static void affine(const Expr *e, int64_t scale, Affine *f)
{
    if (!f->ok)
        return;
    if (e->cv.kind == CV_INT) {
        f->k = wadd(f->k, wmul(scale, e->cv.i));
        return;
    }
    if (e->kind == EX_BINARY && (e->op == OP_ADD || e->op == OP_SUB)) {
        affine(e->a, scale, f);
        affine(e->b, e->op == OP_ADD ? scale : wsub(0, scale), f);
        return;
    }
    if (e->kind == EX_BINARY && e->op == OP_MUL) {
        if (e->a->cv.kind == CV_INT) {
            affine(e->b, wmul(scale, e->a->cv.i), f);
            return;
        }
        if (e->b->cv.kind == CV_INT) {
            affine(e->a, wmul(scale, e->b->cv.i), f);
            return;
        }
    }
    if (e->kind == EX_UNARY && e->op == OP_NEG) {
        affine(e->a, wsub(0, scale), f);
        return;
    }
    aff_add(f, e, scale);
}

/* extent of hi - lo if constant; DIM_RUNTIME otherwise */
static int64_t const_difference(const Expr *lo, const Expr *hi)
{
    Affine f = {.ok = true};
    affine(hi, 1, &f);
    if (lo)
        affine(lo, -1, &f);
    if (!f.ok)
        return DIM_RUNTIME;
    for (int i = 0; i < f.n; i++)
        if (f.coef[i] != 0)
            return DIM_RUNTIME;
    return f.k;
}

/* inside a `parallel` loop of the kernel, or of the fn being checked: a fn called in a kernel's
 * `parallel` body reaches the elements of its frag parameters only in a `parallel` of its own */
static bool in_parallel_over_frag(SemaCtx *s) { return s->parallel_level > (s->fn_ret ? s->fn_parallel_level : 0); }

/* ---- indexing and slicing ---- */
/* xs[i]: element i of a tensor list, a tensor of the list's element type and shape. The index is
 * any integer, known at compile time or not; a constant one is checked against the length (or the
 * max), a run-time one is not (as tensor indices are not). */
static Type *check_list_index(SemaCtx *s, Expr *e, Type *bt)
{
    const char *name = e->a->kind == EX_NAME ? e->a->str : "the list";
    if (e->args.n != 1 || e->args.v[0]->kind == EX_SLICE) {
        ERR(e->loc, "a tensor list takes one index, the element's: %s[i], then %s[i][...] for the element's own", name,
            name);
        return ty_error();
    }
    Expr *ix = e->args.v[0];
    Type *it = check_expr(s, ix, NULL);
    if (is_err(it))
        return it;
    if (!is_int_type(it) && it->kind != TY_GENERIC) {
        ERR(ix->loc, "an index must be an integer, found %s", tstr(s, it));
        return ty_error();
    }
    if (it->kind == TY_UNTYPED_INT)
        coerce(s, ix, ty_scalar(DT_I32), "index");
    if (ix->cv.kind == CV_INT) {
        int64_t v = ix->cv.i;
        if (v < 0) {
            ERR(ix->loc, "the index of a tensor of '%s' cannot be negative, found %lld", name, (long long)v);
            return ty_error();
        }
        if (bt->list_len >= 0 && v >= bt->list_len) {
            ERR(ix->loc, "index %lld is outside the %lld tensors of '%s'", (long long)v, (long long)bt->list_len, name);
            return ty_error();
        }
        if (bt->list_len < 0 && bt->list_cap >= 0 && v >= bt->list_cap) {
            ERR(ix->loc, "index %lld is past the max = %lld tensors of '%s'", (long long)v, (long long)bt->list_cap, name);
            return ty_error();
        }
    }
    e->varying = e->a->varying || ix->varying;
    return ty_region(s->arena, TY_TENSOR, SC_GLOBAL, bt->dt, bt->generic_name, bt->rank, bt->dims);
}

static Type *check_index(SemaCtx *s, Expr *e)
{
    Type *bt = check_expr(s, e->a, NULL);
    if (is_err(bt)) {
        for (int i = 0; i < e->args.n; i++)
            if (e->args.v[i]->kind != EX_SLICE)
                check_expr(s, e->args.v[i], NULL);
        return bt;
    }
    if (bt->kind == TY_LIST)
        return check_list_index(s, e, bt);
    if (!is_region(bt)) {
        ERR(e->a->loc, "%s cannot be indexed", tstr(s, bt));
        return ty_error();
    }
    if (e->args.n != bt->rank) {
        ERR(e->loc, "%s has %d dimension%s but %d ind%s given", tstr(s, bt), bt->rank, bt->rank == 1 ? "" : "s",
            e->args.n, e->args.n == 1 ? "ex is" : "ices are");
        return ty_error();
    }
    int64_t dims[TL_MAX_RANK];
    int rank = 0;
    bool varying = e->a->varying, bad = false;
    for (int i = 0; i < e->args.n; i++) {
        Expr *ix = e->args.v[i];
        int64_t full = bt->dims[i];
        if (ix->kind == EX_SLICE) {
            Type *tl = ix->a ? check_expr(s, ix->a, NULL) : NULL;
            Type *th = ix->b ? check_expr(s, ix->b, NULL) : NULL;
            if ((tl && !is_err(tl) && !is_int_type(tl) && tl->kind != TY_GENERIC) ||
                (th && !is_err(th) && !is_int_type(th) && th->kind != TY_GENERIC)) {
                ERR(ix->loc, "slice bounds must be integers");
                bad = true;
                continue;
            }
            if ((tl && is_err(tl)) || (th && is_err(th))) {
                bad = true;
                continue;
            }
            varying |= (ix->a && ix->a->varying) || (ix->b && ix->b->varying);
            int64_t ext;
            if (!ix->a && !ix->b)
                ext = full;
            else if (!ix->b)
                ext = (full >= 0 && ix->a->cv.kind == CV_INT) ? wsub(full, ix->a->cv.i) : DIM_RUNTIME;
            else if (ix->a && (ix->a->cv.kind == CV_UNKNOWN || ix->b->cv.kind == CV_UNKNOWN))
                ext = DIM_UNKNOWN;
            else if (!ix->a && ix->b->cv.kind == CV_UNKNOWN)
                ext = DIM_UNKNOWN;
            else {
                ext = const_difference(ix->a, ix->b);
                if (ext == DIM_RUNTIME && s->generic)
                    ext = DIM_UNKNOWN;
            }
            if (ext != DIM_RUNTIME && ext != DIM_UNKNOWN && ext <= 0) {
                ERR(ix->loc, "slice is empty (extent %lld)", (long long)ext);
                bad = true;
                continue;
            }
            if (ext > 0 && full > 0 && bt->kind == TY_TILE && ext > full) {
                ERR(ix->loc, "slice of extent %lld exceeds dimension %d of size %lld", (long long)ext, i, (long long)full);
                bad = true;
                continue;
            }
            dims[rank++] = ext;
        } else {
            Type *it = check_expr(s, ix, NULL);
            if (is_err(it)) {
                bad = true;
                continue;
            }
            if (!is_int_type(it) && it->kind != TY_GENERIC) {
                ERR(ix->loc, "an index must be an integer, found %s", tstr(s, it));
                bad = true;
                continue;
            }
            if (it->kind == TY_UNTYPED_INT)
                coerce(s, ix, ty_scalar(DT_I32), "index");
            varying |= ix->varying;
            if (ix->cv.kind == CV_INT && bt->kind == TY_TILE && full >= 0 && (ix->cv.i < 0 || ix->cv.i >= full)) {
                ERR(ix->loc, "index %lld is out of bounds for dimension %d of size %lld", (long long)ix->cv.i, i, (long long)full);
                bad = true;
            }
        }
    }
    if (bad)
        return ty_error();
    e->varying = varying;
    if (rank == 0) {
        /* a scalar element */
        if (bt->kind == TY_TILE && bt->scope == SC_FRAG) {
            if (!in_parallel_over_frag(s)) {
                ERR(e->loc, "elements of a frag can only be accessed inside a 'parallel' loop");
                return ty_error();
            }
        }
        if (bt->kind == TY_TILE && (bt->scope == SC_FRAG || bt->scope == SC_LOCAL))
            e->varying = true;
        if (bt->dt == DT_NONE)
            return ty_generic(s->arena, bt->generic_name);
        return ty_scalar(bt->dt);
    }
    return ty_region(s->arena, bt->kind, bt->scope, bt->dt, bt->generic_name, rank, dims);
}

/* ---- unary and binary operators ---- */
static Type *check_binary(SemaCtx *s, Expr *e)
{
    Type *ta = check_expr(s, e->a, NULL);
    Type *tb = check_expr(s, e->b, NULL);
    e->varying = e->a->varying || e->b->varying;
    if (is_err(ta) || is_err(tb))
        return ty_error();
    const char *op = op_spelling(e->op);
    Type *t;
    if (e->op == OP_SHL || e->op == OP_SHR) {
        if ((!is_int_type(ta) && ta->kind != TY_GENERIC) || (!is_int_type(tb) && tb->kind != TY_GENERIC)) {
            ERR(e->loc, "operands of '%s' must be integers, found %s and %s", op, tstr(s, ta), tstr(s, tb));
            return ty_error();
        }
        t = ta->kind == TY_UNTYPED_INT && tb->kind != TY_UNTYPED_INT ? ty_scalar(DT_I32) : ta;
        if (ta->kind == TY_UNTYPED_INT && tb->kind != TY_UNTYPED_INT)
            coerce(s, e->a, t, "shift operand");
        if (tb->kind == TY_UNTYPED_INT && t->kind == TY_SCALAR)
            coerce(s, e->b, t, "shift amount");
    } else {
        t = unify(s, e->a, e->b, e->loc, op);
        if (is_err(t))
            return t;
        if (t->kind == TY_SCALAR) {
            coerce(s, e->a, t, "operand");
            coerce(s, e->b, t, "operand");
        }
    }
    DType dt = t->kind == TY_SCALAR ? t->dt : DT_NONE;
    switch (e->op) {
    case OP_LAND:
    case OP_LOR:
        if (!is_bool_type(t) && t->kind != TY_GENERIC) {
            ERR(e->loc, "operands of '%s' must be bool, found %s", op, tstr(s, t));
            return ty_error();
        }
        break;
    case OP_BAND:
    case OP_BOR:
    case OP_BXOR:
        if (!is_int_type(t) && !is_bool_type(t) && t->kind != TY_GENERIC) {
            ERR(e->loc, "operands of '%s' must be integers or bool, found %s", op, tstr(s, t));
            return ty_error();
        }
        break;
    case OP_MOD:
        if (is_float_type(t)) {
            ERR(e->loc, "'%%' is defined on integers only");
            return ty_error();
        }
        /* fallthrough */
    case OP_ADD:
    case OP_SUB:
    case OP_MUL:
    case OP_DIV:
        if (is_bool_type(t) || t->kind == TY_TYPE) {
            ERR(e->loc, "operands of '%s' must be numbers, found %s", op, tstr(s, t));
            return ty_error();
        }
        if (t->kind == TY_SCALAR && dtype_kind(t->dt) == DK_SCALE) {
            ERR(e->loc, "ue8m0 values take no arithmetic; convert with f32(x) first");
            return ty_error();
        }
        break;
    case OP_LT:
    case OP_LE:
    case OP_GT:
    case OP_GE:
        if (is_bool_type(t) || t->kind == TY_TYPE) {
            ERR(e->loc, "operands of '%s' must be numbers, found %s", op, tstr(s, t));
            return ty_error();
        }
        break;
    default: break;
    }
    const char *err = NULL;
    ConstVal v = cv_binary(e->op, e->a->cv, e->b->cv, t->kind == TY_UNTYPED_FLOAT ? DT_F64 : dt, &err);
    if (err) {
        ERR(e->loc, "%s in a constant expression", err);
        return ty_error();
    }
    e->cv = v;
    bool cmp = e->op == OP_EQ || e->op == OP_NE || e->op == OP_LT || e->op == OP_LE || e->op == OP_GT ||
               e->op == OP_GE || e->op == OP_LAND || e->op == OP_LOR;
    if (cmp)
        return ty_scalar(DT_BOOL);
    if (t->kind == TY_SCALAR && e->cv.kind == CV_INT && !cv_fits(e->cv, t->dt)) {
        bool lossy;
        e->cv = cv_convert(e->cv, t->dt, &lossy);
    }
    return t;
}

static Type *check_unary(SemaCtx *s, Expr *e)
{
    Type *t = check_expr(s, e->a, NULL);
    e->varying = e->a->varying;
    if (is_err(t))
        return t;
    if (is_region(t)) {
        ERR(e->a->loc, "a tile cannot be an operand of '%s'", op_spelling(e->op));
        return ty_error();
    }
    switch (e->op) {
    case OP_NEG:
        if (!is_int_type(t) && !is_float_type(t) && t->kind != TY_GENERIC) {
            ERR(e->loc, "'-' needs a number, found %s", tstr(s, t));
            return ty_error();
        }
        if (t->kind == TY_SCALAR && dtype_kind(t->dt) == DK_UINT) {
            ERR(e->loc, "'-' on an unsigned value (%s); write 0 - x if wrap-around is meant", dtype_name(t->dt));
            return ty_error();
        }
        if (t->kind == TY_SCALAR)
            t = ty_scalar(arith_dtype(t->dt));
        break;
    case OP_NOT:
        if (!is_bool_type(t) && t->kind != TY_GENERIC) {
            ERR(e->loc, "'!' needs a bool, found %s", tstr(s, t));
            return ty_error();
        }
        break;
    case OP_BNOT:
        if (!is_int_type(t) && t->kind != TY_GENERIC) {
            ERR(e->loc, "'~' needs an integer, found %s", tstr(s, t));
            return ty_error();
        }
        break;
    default: break;
    }
    const char *err;
    e->cv = cv_unary(e->op, e->a->cv, t->kind == TY_SCALAR ? t->dt : DT_NONE, &err);
    if (err) {
        ERR(e->loc, "%s in a constant expression", err);
        return ty_error();
    }
    return t;
}

/* ---- calls ---- */
static int named_index(Expr *e, const char *name)
{
    for (int i = 0; i < e->args.n; i++)
        if (e->arg_names && e->arg_names[i] && strcmp(e->arg_names[i], name) == 0)
            return i;
    return -1;
}

/* whether a region expression is a transposed view: an odd number of `.T` on the way to its
 * tile, through slices */
static bool transposed_view(const Expr *e)
{
    bool t = false;
    while (e && (e->kind == EX_INDEX || (e->kind == EX_MEMBER && e->region_perm))) {
        if (e->kind == EX_MEMBER)
            t = !t;
        e = e->a;
    }
    return t;
}

static int positional_count(Expr *e)
{
    int n = 0;
    for (int i = 0; i < e->args.n; i++)
        if (!e->arg_names || !e->arg_names[i])
            n++;
    return n;
}

/* Checks named arguments against the allowed names. Stops at the first bad one: the duplicate
 * check is quadratic, and a call with 100k named arguments must not hang. */
static bool check_named(SemaCtx *s, Expr *e, const char *fname, const char *const *allowed)
{
    bool ok = true;
    for (int i = 0; ok && i < e->args.n; i++) {
        if (!e->arg_names || !e->arg_names[i])
            continue;
        bool found = false;
        for (const char *const *a = allowed; a && *a; a++)
            if (strcmp(*a, e->arg_names[i]) == 0)
                found = true;
        for (int j = 0; j < i; j++)
            if (e->arg_names[j] && strcmp(e->arg_names[j], e->arg_names[i]) == 0) {
                ERR(e->args.v[i]->loc, "argument '%s' is given twice", e->arg_names[i]);
                ok = false;
            }
        if (!found) {
            StrBuf b = {0};
            for (const char *const *a = allowed; a && *a; a++)
                sb_printf(&b, "%s'%s'", a == allowed ? "" : ", ", *a);
            if (allowed && *allowed)
                ERR(e->args.v[i]->loc, "'%s' has no argument '%s'; it takes %s", fname, e->arg_names[i], b.data);
            else
                ERR(e->args.v[i]->loc, "'%s' takes no named arguments", fname);
            sb_free(&b);
            ok = false;
        }
    }
    return ok;
}

static bool check_arity(SemaCtx *s, Expr *e, const char *name, int mn, int mx)
{
    int n = positional_count(e);
    if (n < mn || n > mx) {
        if (mn == mx)
            ERR(e->loc, "'%s' takes %d argument%s, %d given", name, mn, mn == 1 ? "" : "s", n);
        else
            ERR(e->loc, "'%s' takes %d to %d arguments, %d given", name, mn, mx, n);
        return false;
    }
    return true;
}

/* A type argument: `f32` or a `type` generic. */
static Type *type_arg(SemaCtx *s, Expr *e)
{
    if (e->kind == EX_TYPE) {
        e->type = ty_typeval();
        e->cv.kind = CV_TYPE;
        e->cv.t = ty_scalar(e->prim);
        return e->cv.t;
    }
    Type *t = check_expr(s, e, NULL);
    if (is_err(t))
        return t;
    if (t->kind != TY_TYPE) {
        ERR(e->loc, "expected a type, found %s", tstr(s, t));
        return ty_error();
    }
    if (e->cv.kind == CV_TYPE)
        return e->cv.t;
    return ty_generic(s->arena, e->sym ? e->sym->name : "?");
}

static bool conversion_ok(SemaCtx *s, Expr *at, DType to, Loc loc)
{
    Type *t = at->type;
    if (t->kind == TY_GENERIC || is_err(t))
        return true;
    if (t->kind == TY_UNTYPED_INT || t->kind == TY_UNTYPED_FLOAT)
        return true;
    if (t->kind != TY_SCALAR) {
        ERR(at->loc, "cannot convert %s to %s", tstr(s, t), dtype_name(to));
        return false;
    }
    DType from = t->dt;
    if (to == DT_BOOL && from != DT_BOOL) {
        ERR(loc, "cannot convert %s to bool; compare with zero instead", dtype_name(from));
        return false;
    }
    if (from == DT_BOOL && !dtype_is_int(to) && to != DT_BOOL) {
        ERR(loc, "bool converts to integer types only, not %s", dtype_name(to));
        return false;
    }
    if (dtype_kind(to) == DK_SCALE && from != DT_F32 && from != DT_BF16 && from != DT_UE8M0) {
        ERR(loc, "ue8m0 is made from f32 or bf16 values, not %s", dtype_name(from));
        return false;
    }
    if (dtype_kind(from) == DK_SCALE && to != DT_F32 && to != DT_BF16 && to != DT_UE8M0) {
        ERR(loc, "ue8m0 converts to f32 or bf16, not %s", dtype_name(to));
        return false;
    }
    return true;
}

static Type *check_conversion_call(SemaCtx *s, Expr *e, Type *target)
{
    if (!check_arity(s, e, dtype_name(target->dt), 1, 1) || !check_named(s, e, dtype_name(target->dt), NULL))
        return ty_error();
    Type *at = check_expr(s, e->args.v[0], NULL);
    e->varying = e->args.v[0]->varying;
    if (is_err(at))
        return at;
    if (target->kind == TY_GENERIC)
        return target;
    if (!conversion_ok(s, e->args.v[0], target->dt, e->loc))
        return ty_error();
    if (at->kind == TY_UNTYPED_INT || at->kind == TY_UNTYPED_FLOAT) {
        bool lossy;
        ConstVal v = cv_convert(e->args.v[0]->cv, target->dt, &lossy);
        if (v.kind != CV_NONE)
            e->cv = v;
    } else if (at->kind == TY_SCALAR && e->args.v[0]->cv.kind != CV_NONE) {
        bool lossy;
        ConstVal v = cv_convert(e->args.v[0]->cv, target->dt, &lossy);
        if (v.kind != CV_NONE && (dtype_is_int(target->dt) || !dtype_is_int(at->dt) || !lossy))
            e->cv = v;
    }
    return target;
}

static Type *check_fn_call(SemaCtx *s, Expr *e, Sym *fs);

static bool want_float(SemaCtx *s, Expr *a, const char *fname)
{
    Type *t = a->type;
    if (is_err(t) || t->kind == TY_GENERIC)
        return true;
    if (t->kind == TY_UNTYPED_INT || t->kind == TY_UNTYPED_FLOAT) {
        coerce(s, a, ty_scalar(DT_F32), fname);
        return true;
    }
    if (t->kind == TY_SCALAR && dtype_is_float(t->dt) && dtype_kind(t->dt) != DK_SCALE) {
        if (t->dt != DT_F32 && t->dt != DT_F64)
            a->type = ty_scalar(DT_F32); /* exact widening of 16/8/4-bit floats */
        return true;
    }
    ERR(a->loc, "'%s' takes a float, found %s", fname, tstr(s, t));
    return false;
}

static bool want_int(SemaCtx *s, Expr *a, const char *fname)
{
    Type *t = a->type;
    if (is_err(t) || t->kind == TY_GENERIC)
        return true;
    if (is_int_type(t))
        return true;
    ERR(a->loc, "'%s' takes an integer, found %s", fname, tstr(s, t));
    return false;
}

/* an element of global or shared memory that an atomic may update */
static bool check_atomic_target(SemaCtx *s, Expr *a, const char *fname)
{
    if (a->kind != EX_INDEX || !a->a->type || !is_region(a->a->type) || !a->type || is_region(a->type)) {
        ERR(a->loc, "the first argument of '%s' must be an element of a tensor or shared tile, like x[i]", fname);
        return false;
    }
    Type *bt = a->a->type;
    if (bt->kind == TY_TILE && bt->scope != SC_SHARED) {
        ERR(a->loc, "'%s' works on global or shared memory, not on a %s tile", fname, scope_name(bt->scope));
        return false;
    }
    return true;
}

static Type *check_region_arg(SemaCtx *s, Expr *a, const char *fname, const char *role)
{
    Type *t = check_expr(s, a, NULL);
    if (is_err(t))
        return t;
    if (!is_region(t)) {
        ERR(a->loc, "%s of '%s' must be a tile or tensor, found %s", role, fname, tstr(s, t));
        return ty_error();
    }
    return t;
}

static bool shapes_match(SemaCtx *s, const Type *a, const Type *b, Loc loc, const char *fname)
{
    if (a->rank != b->rank) {
        ERR(loc, "'%s': %s and %s have different ranks", fname, tstr(s, a), tstr(s, b));
        return false;
    }
    for (int i = 0; i < a->rank; i++) {
        if (a->dims[i] >= 0 && b->dims[i] >= 0 && a->dims[i] != b->dims[i]) {
            ERR(loc, "'%s': shapes %s and %s differ in dimension %d", fname, tstr(s, a), tstr(s, b), i);
            return false;
        }
    }
    return true;
}

static bool tile_ops_allowed(SemaCtx *s, Expr *e, const char *fname)
{
    if (s->in_signature) {
        ERR(e->loc, "'%s' cannot be used in a kernel signature", fname);
        return false;
    }
    if (s->parallel_level > 0) {
        ERR(e->loc, "'%s' is a block-wide operation and cannot be used inside a 'parallel' loop", fname);
        return false;
    }
    if (s->varying_cf) {
        ERR(e->loc, "'%s' is a block-wide operation and cannot be used under thread-dependent control flow", fname);
        diag_note(s->d, s->varying_cf_loc, "this condition depends on the thread");
        return false;
    }
    if (s->partial) {
        ERR(e->loc, "'%s' is a block-wide operation and cannot follow a thread-dependent 'return'", fname);
        diag_note(s->d, s->partial_loc, "some threads may have returned here");
        return false;
    }
    if (s->loop_diverged) {
        ERR(e->loc, "'%s' is a block-wide operation and cannot follow a thread-dependent 'break' or 'continue' in its loop", fname);
        diag_note(s->d, s->partial_loc, "some threads may have left the loop here");
        return false;
    }
    return true;
}

static const char *const copy_args[] = {"other", "split", NULL};
static const char *const reduce_args[] = {"dim", "clear", "group", NULL};
static const char *const cumsum_args[] = {"dim", "exclusive", NULL};
static const char *const gemm_args[] = {"trans_a", "trans_b", "clear", NULL};

static bool const_bool_arg(SemaCtx *s, Expr *e, const char *name)
{
    int i = named_index(e, name);
    if (i < 0)
        return true;
    Type *t = check_expr(s, e->args.v[i], ty_scalar(DT_BOOL));
    if (is_err(t))
        return false;
    if (!is_bool_type(t) || (e->args.v[i]->cv.kind != CV_BOOL && e->args.v[i]->cv.kind != CV_UNKNOWN)) {
        ERR(e->args.v[i]->loc, "'%s' must be a compile-time bool", name);
        return false;
    }
    return true;
}

static Type *check_tile_builtin(SemaCtx *s, Expr *e, BuiltinId b, const char *fname)
{
    const BuiltinInfo *bi = builtin_info(b);
    bool named_ok = true;
    switch (b) {
    case BI_COPY: named_ok = check_named(s, e, fname, copy_args); break;
    case BI_FILL: named_ok = check_named(s, e, fname, NULL); break;
    case BI_CUMSUM: named_ok = check_named(s, e, fname, cumsum_args); break;
    case BI_GEMM: named_ok = check_named(s, e, fname, gemm_args); break;
    default: named_ok = check_named(s, e, fname, reduce_args); break;
    }
    if (!named_ok || !check_arity(s, e, fname, bi->min_args, bi->max_args))
        return ty_error();
    if (!tile_ops_allowed(s, e, fname))
        return ty_error();
    Expr *a0 = e->args.v[0], *a1 = e->args.v[1];
    /* every thread must name the same tiles: operands may not depend on the thread */
    for (int i = 0; i < e->args.n; i++) {
        Expr *x = e->args.v[i];
        check_expr(s, x, NULL);
        if (x->type->kind == TY_ERROR)
            return ty_error();
        if (x->varying) {
            ERR(x->loc, "the operands of '%s' must be the same in every thread; this one depends on the thread", fname);
            return ty_error();
        }
    }
    switch (b) {
    case BI_COPY: {
        Type *src = check_region_arg(s, a0, fname, "the source");
        Type *dst = check_region_arg(s, a1, fname, "the destination");
        if (is_err(src) || is_err(dst))
            return ty_error();
        if (!shapes_match(s, src, dst, e->loc, fname))
            return ty_error();
        if (src->kind == TY_TENSOR && dst->kind == TY_TENSOR) {
            ERR(e->loc, "'copy' between two global tensors is not supported; stage the data through a shared or frag tile");
            return ty_error();
        }
        bool any_static = false;
        for (int i = 0; i < src->rank; i++) {
            bool sd = src->dims[i] >= 0 || src->dims[i] == DIM_UNKNOWN;
            bool dd = dst->dims[i] >= 0 || dst->dims[i] == DIM_UNKNOWN;
            if (!sd && !dd) {
                ERR(e->loc, "'copy': dimension %d has a run-time extent on both sides; a tile's extents are compile-time constants", i);
                return ty_error();
            }
            any_static = true;
        }
        (void)any_static;
        if (src->dt != DT_NONE && dst->dt != DT_NONE && src->dt != dst->dt) {
            if ((dtype_kind(src->dt) == DK_SCALE) != (dtype_kind(dst->dt) == DK_SCALE) ||
                src->dt == DT_BOOL || dst->dt == DT_BOOL) {
                ERR(e->loc, "'copy' cannot convert %s to %s", dtype_name(src->dt), dtype_name(dst->dt));
                return ty_error();
            }
        }
        int oi = named_index(e, "other");
        if (oi >= 0) {
            Type *ot = check_expr(s, e->args.v[oi], NULL);
            if (!is_err(ot) && src->dt != DT_NONE)
                coerce(s, e->args.v[oi], ty_scalar(src->dt == DT_E2M1 || dtype_kind(src->dt) == DK_FP8 ? DT_F32 : src->dt), "'other'");
            if (e->args.v[oi]->cv.kind == CV_NONE) {
                ERR(e->args.v[oi]->loc, "'other' must be a compile-time constant");
                return ty_error();
            }
            if (src->kind != TY_TENSOR)
                diag_warning(s->d, e->args.v[oi]->loc, "'other' has no effect: only reads of a global tensor can fall outside it");
        }
        if (!const_bool_arg(s, e, "split"))
            return ty_error();
        int si = named_index(e, "split");
        if (si >= 0 && src->kind != TY_TENSOR && dst->kind != TY_TENSOR)
            diag_warning(s->d, e->args.v[si]->loc, "'split' has no effect: only copies to or from a global tensor are checked against its bounds");
        return ty_void();
    }
    case BI_FILL: {
        Type *dst = check_region_arg(s, a0, fname, "the destination");
        Type *vt = check_expr(s, a1, NULL);
        if (is_err(dst) || is_err(vt))
            return ty_error();
        if (dst->kind == TY_TENSOR) {
            ERR(a0->loc, "'fill' works on shared, frag and local tiles; to fill global memory, fill a tile and copy it");
            return ty_error();
        }
        if (dst->dt == DT_E2M1 && dst->scope == SC_SHARED) {
            ERR(a0->loc, "'fill' stores element by element, and two e2m1 elements share a byte of shared memory; fill a frag "
                "and copy it");
            return ty_error();
        }
        if (dst->dt != DT_NONE) {
            DType vd = dtype_kind(dst->dt) == DK_FP8 || dst->dt == DT_E2M1 ? DT_F32 : dst->dt;
            if (a1->type->kind == TY_SCALAR && a1->type->dt != vd)
                ERR(a1->loc, "'fill': value of type %s for a tile of %s; convert it explicitly", dtype_name(a1->type->dt), dtype_name(dst->dt));
            else
                coerce(s, a1, ty_scalar(vd), "fill value");
        }
        return ty_void();
    }
    case BI_REDUCE_SUM:
    case BI_REDUCE_MAX:
    case BI_REDUCE_MIN:
    case BI_REDUCE_ABSMAX:
    case BI_CUMSUM: {
        Type *src = check_region_arg(s, a0, fname, "the source");
        Type *dst = check_region_arg(s, a1, fname, "the destination");
        if (is_err(src) || is_err(dst))
            return ty_error();
        if (src->kind != TY_TILE || src->scope != SC_FRAG || dst->kind != TY_TILE || dst->scope != SC_FRAG) {
            ERR(e->loc, "'%s' works on frag tiles; copy the data into a frag first", fname);
            return ty_error();
        }
        int di = named_index(e, "dim");
        int64_t dim = 0;
        ConstIntResult dim_rc = CI_KNOWN;
        if (di < 0) {
            if (src->rank != 1) {
                ERR(e->loc, "'%s' of a %d-D tile needs 'dim = d'", fname, src->rank);
                return ty_error();
            }
        } else if ((dim_rc = require_const_int(s, e->args.v[di], "'dim'", &dim)) == CI_ERROR) {
            return ty_error();
        }
        if (dim_rc == CI_KNOWN && (dim < 0 || dim >= src->rank)) {
            ERR(di >= 0 ? e->args.v[di]->loc : e->loc, "'dim' is %lld but the source has %d dimension%s", (long long)dim,
                src->rank, src->rank == 1 ? "" : "s");
            return ty_error();
        }
        if (!const_bool_arg(s, e, "clear") || !const_bool_arg(s, e, "exclusive"))
            return ty_error();
        if (src->dt != DT_NONE && (src->dt == DT_BOOL || dtype_kind(src->dt) == DK_SCALE || dtype_kind(src->dt) == DK_FP8 ||
                                   src->dt == DT_E2M1)) {
            ERR(a0->loc, "'%s' needs numbers of an arithmetic type, found %s", fname, dtype_name(src->dt));
            return ty_error();
        }
        int gi = named_index(e, "group");
        int64_t group = 0;
        ConstIntResult group_rc = CI_KNOWN;
        if (gi >= 0) {
            if (b == BI_CUMSUM) {
                ERR(e->args.v[gi]->loc, "'cumsum' has no 'group' argument");
                return ty_error();
            }
            if ((group_rc = require_const_int(s, e->args.v[gi], "'group'", &group)) == CI_ERROR)
                return ty_error();
            if (group_rc == CI_KNOWN && dim_rc == CI_KNOWN && src->dims[dim] > 0 &&
                (group <= 0 || src->dims[dim] % group != 0)) {
                ERR(e->args.v[gi]->loc, "'group' is %lld, which does not divide dimension %lld of extent %lld", (long long)group,
                    (long long)dim, (long long)src->dims[dim]);
                return ty_error();
            }
        }
        if (b == BI_CUMSUM) {
            if (!shapes_match(s, src, dst, e->loc, fname))
                return ty_error();
        } else {
            if (dim_rc == CI_UNKNOWN || group_rc == CI_UNKNOWN)
                return ty_void();
            int64_t want[TL_MAX_RANK];
            int r = 0;
            for (int i = 0; i < src->rank; i++)
                if (i != dim)
                    want[r++] = src->dims[i];
                else if (group > 0)
                    want[r++] = src->dims[i] > 0 ? src->dims[i] / group : src->dims[i];
            bool ok = dst->rank == r;
            for (int i = 0; ok && i < r; i++)
                if (want[i] >= 0 && dst->dims[i] >= 0 && want[i] != dst->dims[i])
                    ok = false;
            if (r == 0 && dst->rank == 1 && (dst->dims[0] == 1 || dst->dims[0] == DIM_UNKNOWN))
                ok = true;
            if (r == 0 && !ok) {
                want[0] = 1;
                r = 1;
            }
            if (!ok) {
                Type *wt = ty_region(s->arena, TY_TILE, SC_FRAG, dst->dt, dst->generic_name, r, want);
                ERR(a1->loc, "'%s' along dimension %lld of %s gives %s, but the destination is %s", fname, (long long)dim,
                    tstr(s, src), tstr(s, wt), tstr(s, dst));
                return ty_error();
            }
        }
        if (src->dt != DT_NONE && dst->dt != DT_NONE && src->dt != dst->dt &&
            !(dst->dt == DT_F32 && dtype_kind(src->dt) == DK_HALF)) {
            ERR(e->loc, "'%s' from %s into %s: the destination must have the source's type (or f32 for f16/bf16)", fname,
                dtype_name(src->dt), dtype_name(dst->dt));
            return ty_error();
        }
        return ty_void();
    }
    case BI_GEMM: {
        Type *ta = check_region_arg(s, a0, fname, "A");
        Type *tb = check_region_arg(s, a1, fname, "B");
        Type *tc = check_region_arg(s, e->args.v[2], fname, "C");
        if (is_err(ta) || is_err(tb) || is_err(tc))
            return ty_error();
        if (!const_bool_arg(s, e, "trans_a") || !const_bool_arg(s, e, "trans_b") || !const_bool_arg(s, e, "clear"))
            return ty_error();
        if (ta->rank != 2 || tb->rank != 2 || tc->rank != 2) {
            ERR(e->loc, "'gemm' takes 2-D tiles");
            return ty_error();
        }
        if (ta->kind != TY_TILE || tb->kind != TY_TILE || tc->kind != TY_TILE || tc->scope != SC_FRAG ||
            ta->scope == SC_LOCAL || tb->scope == SC_LOCAL) {
            ERR(e->loc, "'gemm' takes A and B in shared or frag tiles and accumulates into a frag tile C");
            return ty_error();
        }
        int ia = named_index(e, "trans_a"), ib = named_index(e, "trans_b");
        bool tra = ia >= 0 && e->args.v[ia]->cv.kind == CV_BOOL && e->args.v[ia]->cv.b;
        bool trb = ib >= 0 && e->args.v[ib]->cv.kind == CV_BOOL && e->args.v[ib]->cv.b;
        /* a view and a flag that cancel are a slip, whichever was meant */
        bool back_a = tra && transposed_view(a0), back_b = trb && transposed_view(a1);
        if (back_a || back_b) {
            ERR(e->args.v[back_a ? ia : ib]->loc,
                "'%s = true' transposes the transposed view %s back: write '.T' or the flag, not both",
                back_a ? "trans_a" : "trans_b", back_a ? "A" : "B");
            return ty_error();
        }
        int64_t M = tra ? ta->dims[1] : ta->dims[0], K = tra ? ta->dims[0] : ta->dims[1];
        int64_t K2 = trb ? tb->dims[1] : tb->dims[0], N = trb ? tb->dims[0] : tb->dims[1];
        if ((K >= 0 && K2 >= 0 && K != K2) || (M >= 0 && tc->dims[0] >= 0 && M != tc->dims[0]) ||
            (N >= 0 && tc->dims[1] >= 0 && N != tc->dims[1])) {
            ERR(e->loc, "'gemm' shapes do not agree: A is %s, B is %s, C is %s", tstr(s, ta), tstr(s, tb), tstr(s, tc));
            return ty_error();
        }
        if (ta->dt != DT_NONE && tb->dt != DT_NONE && ta->dt != tb->dt) {
            ERR(e->loc, "'gemm' operands have types %s and %s; they must match", dtype_name(ta->dt), dtype_name(tb->dt));
            return ty_error();
        }
        if (ta->dt != DT_NONE && ta->dt != DT_F16 && ta->dt != DT_BF16 && ta->dt != DT_F32 && ta->dt != DT_E4M3 && ta->dt != DT_E5M2) {
            ERR(e->loc, "'gemm' takes f16, bf16, f32 (as tf32), e4m3 or e5m2 operands, not %s", dtype_name(ta->dt));
            return ty_error();
        }
        if (tc->dt != DT_NONE && tc->dt != DT_F32) {
            ERR(e->args.v[2]->loc, "'gemm' accumulates in f32, not %s", dtype_name(tc->dt));
            return ty_error();
        }
        return ty_void();
    }
    default: break;
    }
    return ty_void();
}

/* ---- builtin calls other than tile operations: one check per class of builtins.def ---- */

/* convert<T>(x[, mode]): a conversion with a rounding mode */
static Type *check_convert(SemaCtx *s, Expr *e, Type *at, Type *tt)
{
    if (!conversion_ok(s, e->args.v[0], tt->dt, e->loc))
        return ty_error();
    if (e->args.n == 2) {
        Expr *m = e->args.v[1];
        if (m->kind != EX_NAME || (strcmp(m->str, "rn") && strcmp(m->str, "rz") && strcmp(m->str, "rm") && strcmp(m->str, "rp"))) {
            ERR(m->loc, "the rounding mode of 'convert' is rn, rz, rm or rp");
            return ty_error();
        }
        m->type = ty_void();
        bool fl_to = dtype_is_float(tt->dt), fl_from = at->kind == TY_SCALAR && dtype_is_float(at->dt);
        if (!fl_to && !fl_from) {
            ERR(m->loc, "a rounding mode applies to conversions that involve a float");
            return ty_error();
        }
        if ((dtype_kind(tt->dt) == DK_FP8 || tt->dt == DT_E2M1) && strcmp(m->str, "rn") != 0) {
            ERR(m->loc, "conversions to %s round to nearest even only (rn)", dtype_name(tt->dt));
            return ty_error();
        }
    }
    return tt;
}

/* bitcast<T>(x): the bits of a typed scalar as another type of the same width */
static Type *check_bitcast(SemaCtx *s, Expr *e, Type *at, Type *tt)
{
    if (at->kind == TY_UNTYPED_INT || at->kind == TY_UNTYPED_FLOAT) {
        ERR(e->args.v[0]->loc, "'bitcast' needs a typed value; write bitcast<%s>(u32(...)) or similar", dtype_name(tt->dt));
        return ty_error();
    }
    if (at->kind != TY_SCALAR) {
        ERR(e->args.v[0]->loc, "'bitcast' takes a scalar, found %s", tstr(s, at));
        return ty_error();
    }
    if (dtype_bits(at->dt) != dtype_bits(tt->dt) || at->dt == DT_BOOL || tt->dt == DT_BOOL) {
        ERR(e->loc, "'bitcast' from %s (%d bits) to %s (%d bits): the widths must match", dtype_name(at->dt),
            dtype_bits(at->dt), dtype_name(tt->dt), dtype_bits(tt->dt));
        return ty_error();
    }
    return tt;
}

/* view<T>(address, [shape], [strides]): a global tensor at a u64 address */
static Type *check_view(SemaCtx *s, Expr *e, Type *tt)
{
    Type *at = check_expr(s, e->args.v[0], ty_scalar(DT_U64));
    if (!is_err(at))
        coerce(s, e->args.v[0], ty_scalar(DT_U64), "view address");
    Expr *shape = e->args.v[1];
    if (shape->kind != EX_LIST) {
        ERR(shape->loc, "'view' takes its shape as a list: view<T>(address, [d0, d1])");
        return ty_error();
    }
    if (shape->args.n < 1 || shape->args.n > TL_MAX_RANK) {
        ERR(shape->loc, "a view has 1 to %d dimensions", TL_MAX_RANK);
        return ty_error();
    }
    int64_t dims[TL_MAX_RANK];
    for (int i = 0; i < shape->args.n; i++) {
        Type *dt = check_expr(s, shape->args.v[i], ty_scalar(DT_I32));
        if (is_err(dt))
            return dt;
        if (!is_int_type(dt)) {
            ERR(shape->args.v[i]->loc, "a view's extents must be integers");
            return ty_error();
        }
        coerce(s, shape->args.v[i], ty_scalar(DT_I32), "view extent");
        dims[i] = shape->args.v[i]->cv.kind == CV_INT ? shape->args.v[i]->cv.i : DIM_RUNTIME;
    }
    shape->type = ty_void();
    if (e->args.n > 2) {
        Expr *st = e->args.v[2];
        if (st->kind != EX_LIST || st->args.n != shape->args.n) {
            ERR(st->loc, "'view' strides must be a list with one entry per dimension");
            return ty_error();
        }
        for (int i = 0; i < st->args.n; i++) {
            Type *t = check_expr(s, st->args.v[i], ty_scalar(DT_I64));
            if (!is_err(t) && !is_int_type(t)) {
                ERR(st->args.v[i]->loc, "a view's strides must be integers");
                return ty_error();
            }
            coerce(s, st->args.v[i], ty_scalar(DT_I64), "view stride");
        }
        st->type = ty_void();
    }
    e->varying = e->args.v[0]->varying;
    return ty_region(s->arena, TY_TENSOR, SC_GLOBAL, tt->kind == TY_SCALAR ? tt->dt : DT_NONE,
                     tt->kind == TY_GENERIC ? tt->generic_name : NULL, shape->args.n, dims);
}

/* CONV: bitcast, convert and view, with their one type argument */
static Type *check_conv_call(SemaCtx *s, Expr *e, BuiltinId b, const char *fname)
{
    if (e->targs.n != 1) {
        ERR(e->loc, "'%s' takes one type argument: %s<T>(...)", fname, fname);
        return ty_error();
    }
    Type *tt = type_arg(s, e->targs.v[0]);
    if (is_err(tt))
        return tt;
    if (b == BI_VIEW)
        return check_view(s, e, tt);
    Type *at = check_expr(s, e->args.v[0], NULL);
    e->varying = e->args.v[0]->varying;
    if (is_err(at))
        return at;
    if (at->kind == TY_GENERIC || tt->kind == TY_GENERIC)
        return tt;
    return b == BI_BITCAST ? check_bitcast(s, e, at, tt) : check_convert(s, e, at, tt);
}

/* The positional arguments of the builtins that take values: each checked, a scalar (but the
 * first of an atomic, the element it updates); the call varies where one of them does. */
static bool check_value_args(SemaCtx *s, Expr *e, BuiltinId b, const char *fname)
{
    bool varying = false;
    for (int i = 0; i < e->args.n; i++) {
        Expr *a = e->args.v[i];
        check_expr(s, a, NULL);
        varying |= a->varying;
        if (is_err(a->type))
            return false;
        if (is_region(a->type) && !(builtin_info(b)->cls == BC_ATOMIC && i == 0)) {
            ERR(a->loc, "'%s' takes scalars; a tile is used element by element inside a parallel loop", fname);
            return false;
        }
    }
    e->varying = varying;
    return true;
}

/* select(c, a, b) */
static Type *check_select(SemaCtx *s, Expr *e, Expr **a)
{
    if (!is_bool_type(a[0]->type) && a[0]->type->kind != TY_GENERIC) {
        ERR(a[0]->loc, "the condition of 'select' must be bool, found %s", tstr(s, a[0]->type));
        return ty_error();
    }
    Type *t = unify(s, a[1], a[2], e->loc, "select");
    if (is_err(t))
        return t;
    if (t->kind == TY_SCALAR) {
        coerce(s, a[1], t, "select");
        coerce(s, a[2], t, "select");
    }
    if (a[0]->cv.kind == CV_BOOL)
        e->cv = a[0]->cv.b ? a[1]->cv : a[2]->cv;
    return default_type(t);
}

/* MATH: pure scalar functions; abs, min, max and clamp of integers too */
static Type *check_math_call(SemaCtx *s, Expr *e, BuiltinId b, const char *fname)
{
    if (!check_value_args(s, e, b, fname))
        return ty_error();
    int n = e->args.n;
    Expr **a = e->args.v;
    if (b == BI_SELECT)
        return check_select(s, e, a);
    bool int_ok = b == BI_ABS || b == BI_MIN || b == BI_MAX || b == BI_CLAMP;
    Type *t = a[0]->type;
    if (n >= 2) {
        t = unify(s, a[0], a[1], e->loc, fname);
        if (n == 3 && !is_err(t)) {
            a[0]->type = t;
            t = unify(s, a[0], a[2], e->loc, fname);
        }
        if (is_err(t))
            return t;
    }
    if (t->kind == TY_GENERIC)
        return t;
    if (int_ok && is_int_type(t)) {
        t = default_type(t);
        for (int i = 0; i < n; i++)
            coerce(s, a[i], t, fname);
        if (b == BI_MIN || b == BI_MAX) {
            if (a[0]->cv.kind == CV_INT && a[1]->cv.kind == CV_INT) {
                bool u = dtype_kind(t->dt) == DK_UINT;
                bool lt = u ? (uint64_t)a[0]->cv.i < (uint64_t)a[1]->cv.i : a[0]->cv.i < a[1]->cv.i;
                e->cv = (b == BI_MIN) == lt ? a[0]->cv : a[1]->cv;
            }
        } else if (b == BI_ABS && a[0]->cv.kind == CV_INT) {
            e->cv = cv_int(a[0]->cv.i < 0 ? wsub(0, a[0]->cv.i) : a[0]->cv.i);
        }
        if (b == BI_ABS && dtype_kind(t->dt) == DK_UINT) {
            ERR(e->loc, "'abs' of an unsigned value");
            return ty_error();
        }
        return t;
    }
    if (!is_float_type(t) || (t->kind == TY_SCALAR && dtype_kind(t->dt) == DK_SCALE)) {
        ERR(e->loc, "'%s' takes %s, found %s", fname, int_ok ? "numbers" : "floats", tstr(s, t));
        return ty_error();
    }
    for (int i = 0; i < n; i++)
        if (!want_float(s, a[i], fname))
            return ty_error();
    DType dt = (t->kind == TY_SCALAR && t->dt == DT_F64) ? DT_F64 : DT_F32;
    for (int i = 0; i < n; i++)
        if (a[i]->type->kind == TY_SCALAR && a[i]->type->dt != dt)
            a[i]->type = ty_scalar(dt);
    if (b == BI_ISFINITE || b == BI_ISNAN)
        return ty_scalar(DT_BOOL);
    /* exact operations fold; transcendental ones are left to the target */
    if (a[0]->cv.kind == CV_FLOAT && (n < 2 || a[1]->cv.kind == CV_FLOAT)) {
        double x = a[0]->cv.f;
        switch (b) {
        case BI_ABS: e->cv = cv_float(fabs(x)); break;
        case BI_MIN: e->cv = cv_float(fmin(x, a[1]->cv.f)); break;
        case BI_MAX: e->cv = cv_float(fmax(x, a[1]->cv.f)); break;
        case BI_FLOOR: e->cv = cv_float(floor(x)); break;
        case BI_CEIL: e->cv = cv_float(ceil(x)); break;
        case BI_TRUNC: e->cv = cv_float(trunc(x)); break;
        case BI_COPYSIGN: e->cv = cv_float(copysign(x, a[1]->cv.f)); break;
        case BI_SQRT: e->cv = cv_float(dt == DT_F32 ? (double)sqrtf((float)x) : sqrt(x)); break;
        default: break;
        }
    }
    return ty_scalar(dt);
}

/* INT: integer helpers (popc and clz of one value, the others of two) */
static Type *check_int_call(SemaCtx *s, Expr *e, BuiltinId b, const char *fname)
{
    if (!check_value_args(s, e, b, fname))
        return ty_error();
    int n = e->args.n;
    Expr **a = e->args.v;
    for (int i = 0; i < n; i++)
        if (!want_int(s, a[i], fname))
            return ty_error();
    if (b == BI_POPC || b == BI_CLZ) {
        if (a[0]->type->kind == TY_UNTYPED_INT) {
            ERR(a[0]->loc, "'%s' needs a typed integer, e.g. %s(u32(x))", fname, fname);
            return ty_error();
        }
        if (a[0]->type->kind == TY_SCALAR && dtype_bits(a[0]->type->dt) < 32) {
            ERR(a[0]->loc, "'%s' takes a 32- or 64-bit integer, found %s", fname, dtype_name(a[0]->type->dt));
            return ty_error();
        }
        return ty_scalar(DT_I32);
    }
    Type *t = unify(s, a[0], a[1], e->loc, fname);
    if (is_err(t))
        return t;
    if (t->kind == TY_SCALAR) {
        coerce(s, a[0], t, fname);
        coerce(s, a[1], t, fname);
    }
    if (a[0]->cv.kind == CV_INT && a[1]->cv.kind == CV_INT) {
        int64_t x = a[0]->cv.i, y = a[1]->cv.i;
        if (y == 0 && b != BI_GCD) {
            ERR(a[1]->loc, "'%s' by zero", fname);
            return ty_error();
        }
        if (b == BI_GCD) { /* on magnitudes, in unsigned arithmetic so that INT64_MIN does not trap */
            uint64_t u = x < 0 ? 0 - (uint64_t)x : (uint64_t)x, v = y < 0 ? 0 - (uint64_t)y : (uint64_t)y;
            while (v) {
                uint64_t t2 = u % v;
                u = v;
                v = t2;
            }
            e->cv = cv_int((int64_t)u);
            return t;
        }
        /* untyped constants are exact (§4.1): a quotient or product beyond 64 bits is an error;
         * typed ones wrap (INT64_MIN / -1 is INT64_MIN), as on the target */
        bool untyped = t->kind == TY_UNTYPED_INT;
        if (untyped && x == INT64_MIN && y == -1) {
            ERR(e->loc, "integer overflow (beyond 64 bits) in a constant expression");
            return ty_error();
        }
        int64_t q = y == -1 ? wsub(0, x) : x / y, r = y == -1 ? 0 : x % y;
        int64_t aligned;
        if (b == BI_ALIGN && untyped && __builtin_mul_overflow(q + ((r != 0) && ((r > 0) == (y > 0))), y, &aligned)) {
            ERR(e->loc, "integer overflow (beyond 64 bits) in a constant expression");
            return ty_error();
        }
        if (b == BI_CDIV)
            e->cv = cv_int(wadd(q, (r != 0) && ((r > 0) == (y > 0))));
        else if (b == BI_ALIGN)
            e->cv = cv_int(wmul(wadd(q, (r != 0) && ((r > 0) == (y > 0))), y));
        else if (b == BI_FLOORDIV)
            e->cv = cv_int(wsub(q, (r != 0) && ((r < 0) != (y < 0))));
        else if (b == BI_FLOORMOD)
            e->cv = cv_int(r + (((r != 0) && ((r < 0) != (y < 0))) ? y : 0));
    } else if (a[0]->cv.kind == CV_UNKNOWN || a[1]->cv.kind == CV_UNKNOWN) {
        e->cv = cv_unknown();
    }
    return t;
}

/* present(x): whether an optional tensor parameter was given */
static Type *check_present(SemaCtx *s, Expr *e, Expr *x)
{
    Sym *ps = x->kind == EX_NAME ? scope_lookup(s, x->str) : NULL;
    if (!ps || ps->kind != SYM_TENSOR) {
        ERR(x->loc, "'present' takes the name of a tensor parameter");
        return ty_error();
    }
    if (!ps->optional) {
        ERR(x->loc, "'%s' is not optional (declare it as '%s: ...[...]?')", x->str, x->str);
        return ty_error();
    }
    x->sym = ps;
    x->type = ps->type;
    e->cv = s->generic ? cv_unknown() : cv_bool(ps->present);
    return ty_scalar(DT_BOOL);
}

/* static_assert(cond[, "msg"]) */
static Type *check_static_assert(SemaCtx *s, Expr *e, Expr **a, int n)
{
    if (!is_bool_type(a[0]->type)) {
        ERR(a[0]->loc, "'static_assert' takes a bool condition");
        return ty_error();
    }
    if (n == 2 && a[1]->kind != EX_STRING) {
        ERR(a[1]->loc, "the message of 'static_assert' must be a string literal");
        return ty_error();
    }
    if (a[0]->cv.kind == CV_NONE) {
        ERR(a[0]->loc, "'static_assert' needs a compile-time condition");
        return ty_error();
    }
    if (a[0]->cv.kind == CV_BOOL && !a[0]->cv.b) {
        if (n == 2)
            ERR(e->loc, "static assertion failed: %s", a[1]->str);
        else
            ERR(e->loc, "static assertion failed");
        return ty_error();
    }
    return ty_void();
}

/* CT: compile-time only; present and bits take a name and a type, not values */
static Type *check_ct_call(SemaCtx *s, Expr *e, BuiltinId b, const char *fname)
{
    int n = e->args.n;
    Expr **a = e->args.v;
    if (b == BI_PRESENT || b == BI_BITS)
        e->varying = false;
    else if (!check_value_args(s, e, b, fname))
        return ty_error();
    switch (b) {
    case BI_PRESENT: return check_present(s, e, a[0]);
    case BI_BITS: {
        Type *t = type_arg(s, a[0]);
        if (is_err(t))
            return t;
        e->cv = t->kind == TY_SCALAR ? cv_int(dtype_bits(t->dt)) : cv_unknown();
        return ty_untyped_int();
    }
    case BI_IS_POW2:
    case BI_ILOG2:
        if (!want_int(s, a[0], fname))
            return ty_error();
        if (a[0]->cv.kind == CV_UNKNOWN) {
            e->cv = cv_unknown();
        } else if (a[0]->cv.kind != CV_INT) {
            ERR(a[0]->loc, "'%s' needs a compile-time integer", fname);
            return ty_error();
        } else if (b == BI_IS_POW2) {
            e->cv = cv_bool(tl_is_pow2(a[0]->cv.i));
        } else {
            if (a[0]->cv.i <= 0) {
                ERR(a[0]->loc, "'ilog2' of %lld", (long long)a[0]->cv.i);
                return ty_error();
            }
            e->cv = cv_int(tl_log2_floor((uint64_t)a[0]->cv.i));
        }
        return b == BI_IS_POW2 ? ty_scalar(DT_BOOL) : ty_untyped_int();
    case BI_STATIC_ASSERT: return check_static_assert(s, e, a, n);
    default: return ty_void();
    }
}

/* the thread-level builtins that every thread of the block must reach together */
static bool synchronises_block(BuiltinId b)
{
    switch (b) {
    case BI_SYNC_THREADS:
    case BI_GRID_SYNC:
    case BI_BLOCK_SUM:
    case BI_BLOCK_MAX:
    case BI_BLOCK_MIN: return true;
    default: return false;
    }
}

/* Where a thread-level builtin or an atomic may stand: not in a kernel signature; one that
 * synchronises the block not in a parallel loop nor under thread-dependent control flow; a
 * block reduction not after a thread-dependent return; grid_sync and the pdl calls where the
 * launch allows them. */
static bool thread_call_allowed(SemaCtx *s, Expr *e, BuiltinId b, const char *fname)
{
    if (s->in_signature) {
        ERR(e->loc, "'%s' cannot be used in a kernel signature", fname);
        return false;
    }
    bool barrier = synchronises_block(b);
    if (barrier && s->parallel_level > 0) {
        ERR(e->loc, "'%s' synchronises the block and cannot be used inside a 'parallel' loop", fname);
        return false;
    }
    if (barrier && s->varying_cf) {
        ERR(e->loc, "'%s' synchronises the block and cannot be used under thread-dependent control flow", fname);
        diag_note(s->d, s->varying_cf_loc, "this condition depends on the thread");
        return false;
    }
    if ((b == BI_BLOCK_SUM || b == BI_BLOCK_MAX || b == BI_BLOCK_MIN) && s->partial) {
        ERR(e->loc, "'%s' needs every thread of the block and cannot follow a thread-dependent 'return'", fname);
        diag_note(s->d, s->partial_loc, "some threads may have returned here");
        return false;
    }
    if (b == BI_GRID_SYNC && s->kernel && !s->kernel->launch.cooperative) {
        ERR(e->loc, "'grid_sync' needs a cooperative launch; add 'cooperative' after threads(...)");
        return false;
    }
    if ((b == BI_PDL_WAIT || b == BI_PDL_TRIGGER) && s->kernel && !s->kernel->launch.pdl) {
        ERR(e->loc, "'%s' needs programmatic dependent launch; add 'pdl' after threads(...)", fname);
        return false;
    }
    return true;
}

/* shfl, shfl_xor, shfl_up, shfl_down(v, lane or offset[, width]) */
static Type *check_shfl(SemaCtx *s, Expr *e, Expr **a, int n, const char *fname)
{
    Type *t = default_type(a[0]->type);
    if (t->kind == TY_SCALAR && a[0]->type->kind != TY_SCALAR)
        coerce(s, a[0], t, fname);
    if (t->kind == TY_SCALAR && (t->dt == DT_BOOL || dtype_bits(t->dt) < 32 || !dtype_is_arith(t->dt))) {
        ERR(a[0]->loc, "'%s' moves 32- or 64-bit values, found %s; convert or bitcast first", fname, dtype_name(t->dt));
        return ty_error();
    }
    for (int i = 1; i < n; i++) {
        if (!want_int(s, a[i], fname))
            return ty_error();
        coerce(s, a[i], ty_scalar(DT_I32), fname);
    }
    if (n == 3 && a[2]->cv.kind == CV_INT && !(tl_is_pow2(a[2]->cv.i) && a[2]->cv.i <= 32)) {
        ERR(a[2]->loc, "the width of '%s' must be a power of two up to 32", fname);
        return ty_error();
    }
    e->varying = true;
    return t;
}

/* warp_sum / max / min and block_sum / max / min(v) */
static Type *check_group_reduce(SemaCtx *s, Expr *e, BuiltinId b, Expr **a, const char *fname)
{
    Type *t = default_type(a[0]->type);
    if (t->kind == TY_SCALAR && a[0]->type->kind != TY_SCALAR)
        coerce(s, a[0], t, fname);
    if (t->kind == TY_SCALAR && !dtype_is_arith(t->dt)) {
        ERR(a[0]->loc, "'%s' takes i32, u32, i64, u64, f32 or f64, found %s", fname, dtype_name(t->dt));
        return ty_error();
    }
    if (t->kind == TY_SCALAR && dtype_bits(t->dt) < 32) {
        ERR(a[0]->loc, "'%s' takes 32- or 64-bit values, found %s", fname, dtype_name(t->dt));
        return ty_error();
    }
    e->varying = b == BI_WARP_SUM || b == BI_WARP_MAX || b == BI_WARP_MIN;
    return t;
}

/* One conversion of a printf format: the text from '%' to its letter, and what it prints. */
typedef enum { PF_BAD, PF_INT32, PF_INT64, PF_FLOAT } PrintfConv;

/* Reads the conversion at f (just past '%'); *len is its length after the '%'. The driver's
 * vprintf (and the emulator's) read each argument as the conversion says, so a mismatch would
 * print other bytes of the argument buffer: only conversions of scalars are allowed, with no '*'
 * width or precision (they would take an argument of their own). */
static PrintfConv printf_conversion(const char *f, int *len)
{
    const char *p = f;
    while (*p && strchr("-+ #0", *p))
        p++;
    while (*p >= '0' && *p <= '9')
        p++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    int longs = 0;
    if (p[0] == 'h')
        p += p[1] == 'h' ? 2 : 1;
    else if (p[0] == 'l')
        longs = p[1] == 'l' ? 2 : 1, p += longs;
    PrintfConv c = PF_BAD;
    if (*p && strchr("diuxXoc", *p))
        c = longs ? PF_INT64 : PF_INT32;
    else if (*p && strchr("fFeEgGaA", *p))
        c = longs == 2 ? PF_BAD : PF_FLOAT;
    if (*p == 'c' && longs)
        c = PF_BAD;
    *len = (int)(p - f) + (*p ? 1 : 0);
    return c;
}

/* printf("fmt", args...): each argument after the format must be what its conversion prints */
static Type *check_printf(SemaCtx *s, Expr **a, int n)
{
    if (a[0]->kind != EX_STRING) {
        ERR(a[0]->loc, "the format of 'printf' must be a string literal");
        return ty_error();
    }
    for (int i = 1; i < n; i++) {
        Type *t = a[i]->type;
        if (t->kind == TY_UNTYPED_INT || t->kind == TY_UNTYPED_FLOAT)
            coerce(s, a[i], default_type(t), "printf argument");
        else if (t->kind != TY_SCALAR && t->kind != TY_GENERIC) {
            ERR(a[i]->loc, "'printf' prints scalars, not %s", tstr(s, t));
            return ty_error();
        }
    }
    const char *f = a[0]->str ? a[0]->str : "";
    int arg = 1;
    for (const char *p = f; *p; p++) {
        if (*p != '%')
            continue;
        if (p[1] == '%') {
            p++;
            continue;
        }
        int len;
        PrintfConv c = printf_conversion(p + 1, &len);
        if (c == PF_BAD) {
            char shown[64]; /* the conversion as written, escapes for what cannot be shown */
            int m = 0;
            for (int j = 1; j <= len && m < (int)sizeof shown - 5; j++) {
                unsigned char ch = (unsigned char)p[j];
                m += ch == '\n' ? snprintf(shown + m, 5, "\\n")
                     : ch < 0x20 || ch >= 0x7f ? snprintf(shown + m, 5, "\\x%02x", ch)
                                              : snprintf(shown + m, 5, "%c", ch);
            }
            ERR(a[0]->loc, "'printf' cannot print '%%%s': the conversions are d i u x X o c (l or ll for 64-bit "
                           "integers) and f F e E g G a A, with flags, a width and a precision as numbers",
                shown);
            return ty_error();
        }
        if (arg >= n) {
            ERR(a[0]->loc, "the format of 'printf' has more conversions than the %d argument%s given", n - 1,
                n == 2 ? "" : "s");
            return ty_error();
        }
        Type *t = a[arg]->type;
        if (t->kind == TY_SCALAR) {
            DType dt = t->dt;
            bool is_float = dtype_is_float(dt);
            const char *want = NULL;
            if (c == PF_FLOAT && !is_float)
                want = "a float";
            else if (c != PF_FLOAT && is_float)
                want = c == PF_INT64 ? "a 64-bit integer" : "an integer of 32 bits or fewer";
            else if (c == PF_INT64 && dtype_bits(dt) != 64)
                want = "a 64-bit integer";
            else if (c == PF_INT32 && dt != DT_BOOL && dtype_bits(dt) > 32)
                want = "an integer of 32 bits or fewer (use %ld or %lld for a 64-bit one)";
            if (want) {
                ERR(a[arg]->loc, "'printf' conversion '%%%.*s' takes %s, found %s", len, p + 1, want, dtype_name(dt));
                return ty_error();
            }
        }
        arg++;
        p += len; /* at the conversion's letter */
    }
    if (arg < n) {
        ERR(a[arg]->loc, "'printf' has %d argument%s for the %d conversion%s of its format", n - 1, n == 2 ? "" : "s",
            arg - 1, arg == 2 ? "" : "s");
        return ty_error();
    }
    return ty_void();
}

/* THREAD: thread-level builtins (barriers, shuffles, warp and block reductions, votes, device
 * assert, printf, trap) */
static Type *check_thread_call(SemaCtx *s, Expr *e, BuiltinId b, const char *fname)
{
    if (!check_value_args(s, e, b, fname) || !thread_call_allowed(s, e, b, fname))
        return ty_error();
    int n = e->args.n;
    Expr **a = e->args.v;
    switch (b) {
    case BI_SYNC_THREADS:
    case BI_GRID_SYNC:
    case BI_PDL_WAIT:
    case BI_PDL_TRIGGER:
    case BI_TRAP:
        return ty_void();
    case BI_SYNC_WARP:
        if (n == 1) {
            if (!want_int(s, a[0], fname))
                return ty_error();
            coerce(s, a[0], ty_scalar(DT_U32), "lane mask");
        }
        return ty_void();
    case BI_SHFL:
    case BI_SHFL_XOR:
    case BI_SHFL_UP:
    case BI_SHFL_DOWN: return check_shfl(s, e, a, n, fname);
    case BI_WARP_SUM:
    case BI_WARP_MAX:
    case BI_WARP_MIN:
    case BI_BLOCK_SUM:
    case BI_BLOCK_MAX:
    case BI_BLOCK_MIN: return check_group_reduce(s, e, b, a, fname);
    case BI_BALLOT:
        if (!is_bool_type(a[0]->type) && a[0]->type->kind != TY_GENERIC) {
            ERR(a[0]->loc, "'ballot' takes a bool, found %s", tstr(s, a[0]->type));
            return ty_error();
        }
        e->varying = true;
        return ty_scalar(DT_U32);
    case BI_MATCH_ANY: {
        Type *t = default_type(a[0]->type);
        if (t->kind == TY_SCALAR && a[0]->type->kind != TY_SCALAR)
            coerce(s, a[0], t, fname);
        if (t->kind == TY_SCALAR && (!dtype_is_int(t->dt) || dtype_bits(t->dt) < 32)) {
            ERR(a[0]->loc, "'match_any' takes a 32- or 64-bit integer, found %s", dtype_name(t->dt));
            return ty_error();
        }
        e->varying = true;
        return ty_scalar(DT_U32);
    }
    case BI_ASSERT:
        if (!is_bool_type(a[0]->type) && a[0]->type->kind != TY_GENERIC) {
            ERR(a[0]->loc, "'assert' takes a bool condition, found %s", tstr(s, a[0]->type));
            return ty_error();
        }
        if (n == 2 && a[1]->kind != EX_STRING) {
            ERR(a[1]->loc, "the message of 'assert' must be a string literal");
            return ty_error();
        }
        return ty_void();
    case BI_PRINTF: return check_printf(s, a, n);
    default: return ty_void();
    }
}

/* ATOMIC: atomic_*(x[i], v...), returning the old value */
static Type *check_atomic_call(SemaCtx *s, Expr *e, BuiltinId b, const char *fname)
{
    if (!check_value_args(s, e, b, fname) || !thread_call_allowed(s, e, b, fname))
        return ty_error();
    int n = e->args.n;
    Expr **a = e->args.v;
    if (!check_atomic_target(s, a[0], fname))
        return ty_error();
    Type *t = a[0]->type;
    for (int i = 1; i < n; i++)
        coerce(s, a[i], t, fname);
    if (t->kind == TY_SCALAR) {
        DType d = t->dt;
        bool ok32_64 = (dtype_bits(d) == 32 || dtype_bits(d) == 64);
        bool ok;
        switch (b) {
        case BI_ATOMIC_ADD: ok = ok32_64 && d != DT_BOOL; break;
        case BI_ATOMIC_MAX:
        case BI_ATOMIC_MIN:
        case BI_ATOMIC_AND:
        case BI_ATOMIC_OR:
        case BI_ATOMIC_XOR:
        case BI_ATOMIC_CAS: ok = ok32_64 && dtype_is_int(d); break;
        default: ok = ok32_64; break;
        }
        if (!ok) {
            ERR(a[0]->loc, "'%s' does not work on %s", fname, dtype_name(d));
            return ty_error();
        }
    }
    e->varying = true;
    return t;
}

/* VAR: builtin variables and namespaces are not called */
static Type *check_var_call(SemaCtx *s, Expr *e, BuiltinId b, const char *fname)
{
    ERR(e->loc, "'%s' is not a function", fname);
    return ty_error();
}

/* A builtin call, checked by its class: every class but TILE (named arguments of its own) and
 * VAR first takes no named arguments and its number of positional ones. */
static Type *check_builtin_call(SemaCtx *s, Expr *e, BuiltinId b)
{
    static const struct {
        Type *(*check)(SemaCtx *s, Expr *e, BuiltinId b, const char *fname);
        bool positional;   /* no named arguments, min_args..max_args positional ones */
    } by_class[] = {
        [BC_MATH] = {check_math_call, true},     [BC_INT] = {check_int_call, true},
        [BC_CT] = {check_ct_call, true},         [BC_THREAD] = {check_thread_call, true},
        [BC_ATOMIC] = {check_atomic_call, true}, [BC_TILE] = {check_tile_builtin, false},
        [BC_CONV] = {check_conv_call, true},     [BC_VAR] = {check_var_call, false},
    };
    const BuiltinInfo *bi = builtin_info(b);
    e->builtin = b;
    if (by_class[bi->cls].positional &&
        (!check_named(s, e, bi->name, NULL) || !check_arity(s, e, bi->name, bi->min_args, bi->max_args)))
        return ty_error();
    return by_class[bi->cls].check(s, e, b, bi->name);
}

static Type *check_call(SemaCtx *s, Expr *e)
{
    Expr *callee = e->a;
    if (callee->kind == EX_TYPE) {
        callee->type = ty_typeval();
        if (e->targs.n) {
            ERR(e->loc, "a conversion takes no type arguments");
            return ty_error();
        }
        return check_conversion_call(s, e, ty_scalar(callee->prim));
    }
    if (callee->kind != EX_NAME) {
        ERR(callee->loc, "this expression cannot be called");
        return ty_error();
    }
    const char *name = callee->str;
    Sym *sym = scope_lookup(s, name);
    if (!sym)
        sym = comp_lookup_global(s->comp, name);
    if (sym) {
        callee->sym = sym;
        if (sym->kind == SYM_FN)
            return check_fn_call(s, e, sym);
        if (sym->kind == SYM_GENERIC && sym->type->kind == TY_TYPE) {
            Type *t = sym->cv.kind == CV_TYPE ? sym->cv.t : ty_generic(s->arena, sym->name);
            callee->type = ty_typeval();
            return check_conversion_call(s, e, t);
        }
        if (sym->kind == SYM_KERNEL) {
            ERR(callee->loc, "kernel '%s' cannot be called from device code", name);
            diag_note(s->d, sym->loc, "'%s' is declared here", name);
            return ty_error();
        }
        ERR(callee->loc, "'%s' is not a function", name);
        diag_note(s->d, sym->loc, "'%s' is declared here", name);
        return ty_error();
    }
    BuiltinId b = builtin_lookup(name);
    if (b == BI_NONE) {
        ERR(callee->loc, "unknown function '%s'", name);
        return ty_error();
    }
    if (e->targs.n && builtin_info(b)->cls != BC_CONV) {
        ERR(e->loc, "'%s' takes no type arguments", name);
        return ty_error();
    }
    callee->builtin = b;
    callee->type = ty_void();
    return check_builtin_call(s, e, b);
}

static int64_t expr_nodes(const Expr *e)
{
    if (!e)
        return 0;
    int64_t n = 1 + expr_nodes(e->a) + expr_nodes(e->b) + expr_nodes(e->c);
    for (int i = 0; i < e->args.n; i++)
        n += expr_nodes(e->args.v[i]);
    for (int i = 0; i < e->targs.n; i++)
        n += expr_nodes(e->targs.v[i]);
    return n;
}

int64_t stmts_nodes(StmtList l)
{
    int64_t n = 0;
    for (int i = 0; i < l.n; i++) {
        const Stmt *st = l.v[i];
        n += 1 + stmts_nodes(st->body) + stmts_nodes(st->els) + expr_nodes(st->e) + expr_nodes(st->lhs) +
             expr_nodes(st->lo) + expr_nodes(st->hi) + expr_nodes(st->step) + expr_nodes(st->stages);
        for (int j = 0; j < st->dims.n; j++)
            n += expr_nodes(st->dims.v[j]);
    }
    return n;
}

/* The tile an argument is (part of): the symbol its slices and views start from, seen through
 * the tile parameters of the fns it was passed down. */
Sym *sema_tile_root(const Expr *e)
{
    while (e->kind == EX_INDEX || e->kind == EX_MEMBER)
        e = e->a;
    if (e->kind != EX_NAME || !e->sym)
        return NULL;
    return e->sym->tile_root ? e->sym->tile_root : e->sym;
}

/* Generics that a tile or tensor parameter determines from its argument: the `type` generic
 * that is its element type, the `int` generics that are its extents (f<R: int>(t: frag f32[R])).
 * Only compile-time extents determine a generic. */
static void infer_from_region(SemaCtx *s, const Param *p, const Type *at)
{
    TypeExpr *pt = p->ty;
    if (!is_region(at) || (pt->kind != TE_TILE && pt->kind != TE_TENSOR))
        return;
    if (pt->elem->kind == TE_NAMED) {
        Sym *gs = scope_lookup(s, pt->elem->name);
        if (gs && gs->kind == SYM_GENERIC && gs->type->kind == TY_TYPE && gs->cv.kind == CV_NONE) {
            gs->cv.kind = at->dt != DT_NONE ? CV_TYPE : CV_UNKNOWN;
            gs->cv.t = at->dt != DT_NONE ? ty_scalar(at->dt) : NULL;
        }
    }
    for (int d = 0; d < pt->dims.n && d < at->rank; d++) {
        Expr *x = pt->dims.v[d];
        if (x->kind != EX_NAME)
            continue;
        Sym *gs = scope_lookup(s, x->str);
        if (gs && gs->kind == SYM_GENERIC && gs->type->kind == TY_UNTYPED_INT && gs->cv.kind == CV_NONE) {
            if (at->dims[d] >= 0)
                gs->cv = cv_int(at->dims[d]);
            else if (at->dims[d] == DIM_UNKNOWN)
                gs->cv = cv_unknown();
        }
    }
}

/* a name in a parameter's shape that is not declared yet: it is bound there */
static bool is_new_shape_name(SemaCtx *s, const Expr *x)
{
    return x->kind == EX_NAME && strcmp(x->str, "_") != 0 && !scope_lookup(s, x->str) &&
           !comp_lookup_global(s->comp, x->str) && builtin_lookup(x->str) == BI_NONE;
}

static void add_shape_bind(SemaCtx *s, InlineCall *ic, Sym *sym, int param, int axis, bool stride)
{
    ShapeBind *v = ARENA_ARRAY(s->arena, ShapeBind, ic->nshapes + 1);
    if (ic->nshapes)
        memcpy(v, ic->shapes, sizeof(ShapeBind) * (size_t)ic->nshapes);
    v[ic->nshapes++] = (ShapeBind){sym, param, axis, stride};
    ic->shapes = v;
}

/* a shape name must not be a parameter's name: the name would mean two things */
static bool shape_name_clash(SemaCtx *s, const Item *fn, const Param *p, const Expr *x)
{
    for (int j = 0; j < fn->nparams; j++)
        if (!strcmp(fn->params[j].name.s, x->str)) {
            ERR(fn->params[j].name.loc, "parameter '%s' has the name of %s of '%s'", x->str, "an extent", p->name.s);
            diag_note(s->d, x->loc, "bound here");
            return true;
        }
    return false;
}

/* Binds a tile or tensor parameter of a call to its argument (in the callee's scope, generics
 * bound). The argument, already of the parameter's kind (a tile of its scope, or a tensor), must
 * have its element type and rank; each extent of the parameter is a new name, bound to the
 * argument's extent, or an expression the argument's extent must equal (compile-time for a tile;
 * for a tensor, checked where both sides are known at compile time). A frag is passed whole, by
 * its name: a tile parameter stands for the caller's tile itself, with its layout. */
static Sym *bind_region_param(SemaCtx *s, InlineCall *ic, Item *fn, int i, Expr *arg, Expr *call)
{
    Param *p = &fn->params[i];
    TypeExpr *pt = p->ty;
    Type *at = arg->type;
    bool tile = pt->kind == TE_TILE; /* of the right kind and scope: checked before the generics */
    bool whole = arg->kind == EX_NAME && arg->sym && arg->sym->kind == SYM_STORAGE &&
                 (!arg->sym->tile_param || arg->sym->tile_whole);
    if (tile && pt->scope == SC_FRAG && !whole) {
        ERR(arg->loc, "argument %d of '%s' must name a frag tile: a frag parameter takes the whole tile, not a slice or a view",
            i + 1, fn->name.s);
        return NULL;
    }
    Type *et = resolve_type(s, pt->elem, false);
    if (is_err(et))
        return NULL;
    if (et->kind == TY_SCALAR && at->dt != DT_NONE && et->dt != at->dt) {
        ERR(arg->loc, "argument %d of '%s' holds %s, but parameter '%s' is of %s", i + 1, fn->name.s, dtype_name(at->dt),
            p->name.s, dtype_name(et->dt));
        return NULL;
    }
    if (pt->dims.n != at->rank) {
        ERR(arg->loc, "argument %d of '%s' has %d dimension%s, but parameter '%s' has %d", i + 1, fn->name.s, at->rank,
            at->rank == 1 ? "" : "s", p->name.s, pt->dims.n);
        return NULL;
    }
    int64_t dims[TL_MAX_RANK];
    /* errors in the parameter's shape point at the fn; the note, at the call that found them */
    int errs = s->d->nerrors;
    for (int d = 0; d < at->rank; d++) {
        Expr *x = pt->dims.v[d];
        int64_t ext = at->dims[d];
        dims[d] = ext;
        if (is_new_shape_name(s, x)) {
            if (shape_name_clash(s, fn, p, x)) {
                diag_note(s->d, call->loc, "in this call of '%s'", fn->name.s);
                return NULL;
            }
            Sym *ds = sym_new(s, SYM_LET, x->str, x->loc, ty_scalar(DT_I32));
            if (ext >= 0)
                ds->cv = cv_int(ext);
            else if (ext == DIM_UNKNOWN)
                ds->cv = cv_unknown();
            else
                add_shape_bind(s, ic, ds, i, d, false);
            scope_add(s, ds);
            continue;
        }
        int64_t want;
        if (tile) {
            ConstIntResult rc = require_const_int(s, x, "an extent of a tile parameter", &want);
            if (rc == CI_ERROR) {
                if (s->d->nerrors > errs)
                    diag_note(s->d, call->loc, "in this call of '%s'", fn->name.s);
                return NULL;
            }
            if (rc == CI_UNKNOWN)
                continue;
        } else {
            Type *xt = check_expr(s, x, NULL);
            if (!is_err(xt) && !is_int_type(xt))
                ERR(x->loc, "a tensor extent must be an integer, found %s", tstr(s, xt));
            if (is_err(xt) || !is_int_type(xt)) {
                if (s->d->nerrors > errs)
                    diag_note(s->d, call->loc, "in this call of '%s'", fn->name.s);
                return NULL;
            }
            if (x->cv.kind != CV_INT)
                continue; /* known at run time only: not checked */
            want = x->cv.i;
        }
        if (ext >= 0 && want != ext) {
            ERR(arg->loc, "argument %d of '%s' has extent %lld in dimension %d, but parameter '%s' wants %lld", i + 1,
                fn->name.s, (long long)ext, d, p->name.s, (long long)want);
            return NULL;
        }
        if (ext < 0)
            dims[d] = want;
    }
    if (!tile) {
        for (int d = 0; d < pt->strides.n && pt->strides.n == at->rank; d++) {
            Expr *x = pt->strides.v[d];
            if (!is_new_shape_name(s, x))
                continue; /* other entries are not checked at a call */
            Sym *ds = sym_new(s, SYM_LET, x->str, x->loc, ty_scalar(DT_I64));
            add_shape_bind(s, ic, ds, i, d, true);
            scope_add(s, ds);
        }
        Sym *ps = sym_new(s, SYM_LET, p->name.s, p->name.loc, ty_region(s->arena, TY_TENSOR, SC_GLOBAL, at->dt,
                                                                         at->generic_name, at->rank, dims));
        ps->varying = arg->varying;
        return ps;
    }
    Sym *ps = sym_new(s, SYM_STORAGE, p->name.s, p->name.loc,
                      ty_region(s->arena, TY_TILE, pt->scope, at->dt, at->generic_name, at->rank, dims));
    ps->tile_param = true;
    ps->tile_whole = whole;
    ps->tile_root = sema_tile_root(arg);
    ps->varying = arg->varying;
    return ps;
}

/* A fn called where the runtime evaluates the expression before a launch (the grid, a shape, a
 * requirement) becomes part of that expression (signature.c writes the value it returns with its
 * lets substituted), so its body may hold only lets, `if const` and the return. */
static bool launch_fn_body(SemaCtx *s, InlineCall *ic, StmtList l, Expr *call)
{
    for (int i = 0; i < l.n; i++) {
        Stmt *st = l.v[i];
        if ((st->kind == ST_LET && st->nnames == 1) || (st->kind == ST_EXPR && st->e->builtin == BI_STATIC_ASSERT))
            continue;
        if (st->kind == ST_IF && st->is_const && st->const_taken >= 0) {
            if (!launch_fn_body(s, ic, st->const_taken ? st->body : st->els, call))
                return false;
            continue;
        }
        if (st->kind == ST_RETURN)
            return true;
        ERR(st->loc, "fn '%s' is evaluated before the launch here, so its body may hold only 'let', 'if const' and "
                     "'return'", ic->fn->name.s);
        diag_note(s->d, call->loc, "called here, in %s", s->in_require ? "a requirement" : "the kernel's signature");
        return false;
    }
    return true;
}

/* Instantiates a fn for this call: binds generics (explicit or inferred from argument
 * types), checks the arguments, and checks a copy of the body. */
static Type *check_fn_call(SemaCtx *s, Expr *e, Sym *fs)
{
    Item *fn = fs->item;
    if (s->inline_depth >= TL_MAX_INLINE_DEPTH) {
        ERR(e->loc, "fn calls nest deeper than %d levels (is '%s' recursive?)", TL_MAX_INLINE_DEPTH, fn->name.s);
        return ty_error();
    }
    /* every call inlines a copy of the body: fns that each call the next twice would double the
     * code at every level, so the total is bounded (reported once) */
    if (!s->inline_over) {
        int64_t size = stmts_nodes(fn->body);
        s->inlined_nodes += size;
        if (s->inlined_nodes > TL_MAX_INLINE_NODES) {
            ERR(e->loc, "inlining fn '%s' here makes the inlined fn bodies larger than %d syntax nodes", fn->name.s,
                TL_MAX_INLINE_NODES);
            s->inline_over = true;
        } else if (!sema_count_checked(s, fn->body, CHECK_COPY, e->loc)) {
            s->inline_over = true;
        }
    }
    if (s->inline_over)
        return ty_error();
    if (!check_named(s, e, fn->name.s, NULL))
        return ty_error();
    if (e->args.n != fn->nparams) {
        ERR(e->loc, "fn '%s' takes %d argument%s, %d given", fn->name.s, fn->nparams, fn->nparams == 1 ? "" : "s", e->args.n);
        diag_note(s->d, fn->name.loc, "'%s' is declared here", fn->name.s);
        return ty_error();
    }
    if (e->targs.n > fn->ngenerics) {
        ERR(e->loc, "fn '%s' takes %d generic argument%s, %d given", fn->name.s, fn->ngenerics, fn->ngenerics == 1 ? "" : "s",
            e->targs.n);
        return ty_error();
    }
    bool varying = false;
    for (int i = 0; i < e->args.n; i++) {
        check_expr(s, e->args.v[i], NULL);
        if (is_err(e->args.v[i]->type))
            return ty_error();
        varying |= e->args.v[i]->varying;
    }
    /* a tile or a tensor where the parameter wants one (before generics are inferred from it) */
    for (int i = 0; i < e->args.n; i++) {
        TypeExpr *pt = fn->params[i].ty;
        Type *at = e->args.v[i]->type;
        if (pt->kind == TE_TENSOR && at->kind != TY_TENSOR) {
            ERR(e->args.v[i]->loc, "argument %d of '%s' must be a tensor, found %s", i + 1, fn->name.s, tstr(s, at));
            return ty_error();
        }
        if (pt->kind == TE_TILE && (at->kind != TY_TILE || at->scope != pt->scope)) {
            ERR(e->args.v[i]->loc, "argument %d of '%s' must be a %s tile, found %s", i + 1, fn->name.s,
                scope_name(pt->scope), tstr(s, at));
            return ty_error();
        }
    }
    /* the callee's scope: generics, then parameters; nothing of the caller is visible */
    InlineCall *ic = ARENA_NEW(s->arena, InlineCall);
    ic->fn = fn;
    ic->nparams = fn->nparams;
    ic->params = ARENA_ARRAY(s->arena, Sym *, fn->nparams);
    SymScope saved_scope = s->scope;
    PtrVec saved_marks = s->marks;
    memset(&s->scope, 0, sizeof s->scope);
    memset(&s->marks, 0, sizeof s->marks);
    scope_push(s);
    bool ok = true;
    for (int g = 0; g < fn->ngenerics; g++) {
        GenericParam *gp = &fn->generics[g];
        Sym *gs = sym_new(s, SYM_GENERIC, gp->name.s, gp->name.loc, NULL);
        gs->item = fn;
        gs->index = g;
        gs->type = gp->kind == GK_TYPE ? ty_typeval() : gp->kind == GK_INT ? ty_untyped_int() :
                   gp->kind == GK_FLOAT ? ty_untyped_float() : ty_scalar(DT_BOOL);
        gs->cv.kind = CV_NONE;
        if (g < e->targs.n) {
            Expr *ta = e->targs.v[g];
            /* generic arguments are evaluated in the caller's scope */
            SymScope inner = s->scope;
            PtrVec inner_m = s->marks;
            s->scope = saved_scope;
            s->marks = saved_marks;
            if (gp->kind == GK_TYPE) {
                Type *t = type_arg(s, ta);
                gs->cv.kind = t->kind == TY_SCALAR ? CV_TYPE : CV_UNKNOWN;
                gs->cv.t = t;
            } else {
                Type *t = check_expr(s, ta, NULL);
                if (!is_err(t) && ta->cv.kind == CV_NONE) {
                    ERR(ta->loc, "generic argument '%s' must be a compile-time constant", gp->name.s);
                    ok = false;
                }
                gs->cv = ta->cv;
                if (gp->kind == GK_FLOAT && ta->cv.kind == CV_INT)
                    gs->cv = cv_float((double)ta->cv.i);
            }
            s->scope = inner;
            s->marks = inner_m;
        }
        scope_add(s, gs);
    }
    /* infer type generics from parameter types, and generics from the element types and
     * extents of tile and tensor parameters */
    for (int i = 0; i < fn->nparams && ok; i++) {
        TypeExpr *pt = fn->params[i].ty;
        if (pt->kind == TE_TILE || pt->kind == TE_TENSOR)
            infer_from_region(s, &fn->params[i], e->args.v[i]->type);
        if (pt->kind != TE_NAMED)
            continue;
        Sym *gs = scope_lookup(s, pt->name);
        if (gs && gs->kind == SYM_GENERIC && gs->type->kind == TY_TYPE && gs->cv.kind == CV_NONE) {
            Type *at = e->args.v[i]->type;
            if (at->kind == TY_SCALAR) {
                gs->cv.kind = CV_TYPE;
                gs->cv.t = at;
            } else if (at->kind == TY_UNTYPED_INT || at->kind == TY_UNTYPED_FLOAT) {
                gs->cv.kind = CV_TYPE;
                gs->cv.t = default_type(at);
            } else {
                gs->cv.kind = CV_UNKNOWN;
            }
        }
    }
    for (int g = 0; g < fn->ngenerics && ok; g++) {
        Sym *gs = scope_lookup(s, fn->generics[g].name.s);
        if (gs->cv.kind == CV_NONE) {
            if (fn->generics[g].deflt) {
                Type *t = check_expr(s, fn->generics[g].deflt, NULL);
                if (!is_err(t))
                    gs->cv = fn->generics[g].deflt->cv;
            }
            if (gs->cv.kind == CV_NONE) {
                ERR(e->loc, "cannot infer generic '%s' of fn '%s'; give it explicitly: %s::<...>(...)", gs->name, fn->name.s,
                    fn->name.s);
                ok = false;
            }
        }
    }
    for (int i = 0; i < fn->nparams && ok; i++) {
        Param *p = &fn->params[i];
        Expr *arg = e->args.v[i];
        if (p->ty->kind == TE_TENSOR || p->ty->kind == TE_TILE) {
            Sym *ps = bind_region_param(s, ic, fn, i, arg, e);
            if (!ps) {
                ok = false;
                break;
            }
            /* tile parameters do not alias: a fn may write one and read another */
            for (int j = 0; j < i && p->ty->kind == TE_TILE; j++)
                if (fn->params[j].ty->kind == TE_TILE && ps->tile_root && ic->params[j]->tile_root == ps->tile_root) {
                    ERR(arg->loc, "arguments %d and %d of '%s' are the same tile '%s' (or parts of it); tile parameters do not alias",
                        j + 1, i + 1, fn->name.s, ps->tile_root->name);
                    ok = false;
                }
            ic->params[i] = ps;
            scope_add(s, ps);
            continue;
        }
        Sym *ps = sym_new(s, SYM_LET, p->name.s, p->name.loc, NULL);
        Type *pt = resolve_type(s, p->ty, false);
        if (is_err(pt)) {
            ok = false;
            break;
        }
        if (pt->kind == TY_SCALAR) {
            SymScope inner = s->scope;
            PtrVec inner_m = s->marks;
            s->scope = saved_scope;
            s->marks = saved_marks;
            if (!coerce(s, arg, pt, "argument"))
                ok = false;
            s->scope = inner;
            s->marks = inner_m;
        }
        ps->type = pt;
        ps->cv = arg->cv;
        ps->varying = arg->varying;
        ic->params[i] = ps;
        scope_add(s, ps);
    }
    Type *ret = ty_void();
    if (ok && fn->ret) {
        ret = resolve_type(s, fn->ret, false);
        if (is_err(ret))
            ok = false;
    }
    if (ok) {
        ic->ret = ret;
        ic->body = ast_clone_stmts(s->arena, fn->body);
        e->inl = ic;
        check_body_inline(s, ic, e);
        if (s->in_signature || s->in_require)
            ok = launch_fn_body(s, ic, ic->body, e);
    }
    scope_pop(s);
    scope_free(&s->scope);
    ptrvec_free(&s->marks);
    s->scope = saved_scope;
    s->marks = saved_marks;
    e->varying = ok ? (varying || ic->ret_varying) : false;
    return ok ? ret : ty_error();
}

bool expr_is_lvalue(SemaCtx *s, Expr *e, bool report)
{
    if (e->kind == EX_NAME) {
        Sym *sym = e->sym;
        if (sym && sym->kind == SYM_VAR)
            return true;
        if (report && sym) {
            const char *what = sym->kind == SYM_LET ? "a 'let' binding" : sym->kind == SYM_LOOP ? "a loop variable" :
                               sym->kind == SYM_PINDEX ? "a parallel index" : sym->kind == SYM_SCALAR ? "a scalar parameter" :
                               sym->kind == SYM_GENERIC ? "a generic parameter" : sym->kind == SYM_CONST ? "a constant" :
                               sym->kind == SYM_DIM ? "a shape or stride" : "not a variable";
            ERR(e->loc, "cannot assign to '%s': it is %s", e->str, what);
            if (sym->kind == SYM_LET)
                diag_note(s->d, sym->loc, "declared here; use 'var' for a mutable variable");
            else if (sym->kind == SYM_TENSOR || sym->kind == SYM_STORAGE)
                diag_note(s->d, sym->loc, "assign to its elements instead, e.g. %s[i] = ...", e->str);
        }
        return false;
    }
    if (e->kind == EX_INDEX && e->type && e->type->kind != TY_ERROR && !is_region(e->type))
        return true;
    if (report)
        ERR(e->loc, "this expression cannot be assigned to");
    return false;
}

static Type *check_expr_here(SemaCtx *s, Expr *e, Type *expected);

/* Every walk of the compiler recurses as deep as an expression nests, and a fn call inlines the
 * fn's body at its place, so the nesting that counts is that of the expressions and statements
 * being checked one inside the other, through the calls. */
bool sema_enter_nesting(SemaCtx *s, Loc loc)
{
    if (s->nest_depth >= TL_MAX_CHECK_NESTING) {
        if (!s->nest_over)
            ERR(loc, "expressions and statements nest more than %d levels deep here, counting the bodies of the fns "
                "called (each is inlined at its call); split the expression with 'let' or call fewer fns inside one "
                "another", TL_MAX_CHECK_NESTING);
        s->nest_over = true;
        return false;
    }
    s->nest_depth++;
    return true;
}

Type *check_expr(SemaCtx *s, Expr *e, Type *expected)
{
    if (!sema_enter_nesting(s, e->loc)) {
        memset(&e->cv, 0, sizeof e->cv);
        e->type = ty_error();
        return e->type;
    }
    Type *t = check_expr_here(s, e, expected);
    s->nest_depth--;
    return t;
}

static Type *check_expr_here(SemaCtx *s, Expr *e, Type *expected)
{
    Type *t = ty_error();
    memset(&e->cv, 0, sizeof e->cv);
    e->varying = false;
    switch (e->kind) {
    case EX_INT:
        e->cv = cv_int(e->ival);
        t = ty_untyped_int();
        break;
    case EX_FLOAT:
        e->cv = cv_float(e->fval);
        t = ty_untyped_float();
        break;
    case EX_BOOL:
        e->cv = cv_bool(e->bval);
        t = ty_scalar(DT_BOOL);
        break;
    case EX_STRING: t = ty_string(); break;
    case EX_NAME: t = check_name(s, e); break;
    case EX_TYPE:
        e->cv.kind = CV_TYPE;
        e->cv.t = ty_scalar(e->prim);
        t = ty_typeval();
        break;
    case EX_UNARY: t = check_unary(s, e); break;
    case EX_BINARY: t = check_binary(s, e); break;
    case EX_CALL: t = check_call(s, e); break;
    case EX_INDEX: t = check_index(s, e); break;
    case EX_MEMBER: t = check_member(s, e); break;
    case EX_SLICE:
        ERR(e->loc, "a slice can only appear inside [...]");
        break;
    case EX_LIST:
        ERR(e->loc, "a list can only be the shape of a view");
        break;
    case EX_TERNARY: break;
    }
    e->type = t;
    /* an untyped constant takes the type the context expects, when it can without a
     * diagnostic; otherwise the caller's own coerce() reports it, once and in its words */
    if (expected && expected->kind == TY_SCALAR && (t->kind == TY_UNTYPED_INT || t->kind == TY_UNTYPED_FLOAT)) {
        DType dt = expected->dt;
        if (!(t->kind == TY_UNTYPED_FLOAT && dtype_is_int(dt)) && dt != DT_BOOL && dtype_kind(dt) != DK_SCALE &&
            cv_fits(e->cv, dt))
            coerce(s, e, expected, "value");
    }
    return e->type;
}
