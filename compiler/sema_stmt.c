/* sema_stmt.c — statements: declarations, assignments, control flow, parallel loops,
 * requirements; the rules on where block-wide operations may appear. */
#include "sema_int.h"

#include <string.h>

#define ERR(loc, ...) diag_error(s->d, (loc), __VA_ARGS__)

static const char *tstr(SemaCtx *s, const Type *t) { return ty_str(s->arena, t); }
static bool is_err(const Type *t) { return t->kind == TY_ERROR; }

static void check_stmt(SemaCtx *s, Stmt *st);

static void declare(SemaCtx *s, Sym *sym)
{
    /* shadowing within one scope is an error; across scopes it is allowed */
    Sym *o = scope_lookup_innermost(s, sym->name);
    if (o) {
        ERR(sym->loc, "'%s' is already declared in this scope", sym->name);
        diag_note(s->d, o->loc, "previous declaration is here");
        return;
    }
    scope_add(s, sym);
}

static void check_block(SemaCtx *s, StmtList l)
{
    scope_push(s);
    check_stmts(s, l);
    scope_pop(s);
}

static void check_let(SemaCtx *s, Stmt *st)
{
    Type *ann = st->ty ? resolve_type(s, st->ty, false) : NULL;
    Type *t = check_expr(s, st->e, ann && ann->kind == TY_SCALAR ? ann : NULL);
    st->syms = ARENA_ARRAY(s->arena, Sym *, st->nnames);
    if (st->nnames > 1) {
        if (!is_err(t) && (t->kind != TY_TUPLE || t->nelems != st->nnames)) {
            ERR(st->e->loc, "%d names are bound but the value is %s", st->nnames, tstr(s, t));
            t = ty_error();
        }
        for (int i = 0; i < st->nnames; i++) {
            Sym *sym = sym_new(s, SYM_LET, st->names[i].s, st->names[i].loc, is_err(t) ? t : t->elems[i]);
            sym->varying = st->e->varying || s->varying_cf;
            sym->decl = st;
            sym->parallel_level = s->parallel_level;
            st->syms[i] = sym;
            st->names[i].sym = sym;
            declare(s, sym);
        }
        return;
    }
    if (ann && !is_err(ann) && !is_err(t))
        coerce(s, st->e, ann, "initializer");
    if (!is_err(t) && (t->kind == TY_VOID || t->kind == TY_STRING || t->kind == TY_TUPLE || t->kind == TY_LIST)) {
        ERR(st->e->loc, "cannot bind a value of type %s", tstr(s, t));
        t = ty_error();
    }
    Type *vt = ann && !is_err(ann) ? ann : default_type(st->e->type);
    if (!ann && (t->kind == TY_UNTYPED_INT || t->kind == TY_UNTYPED_FLOAT))
        coerce(s, st->e, vt, "initializer");
    Sym *sym = sym_new(s, SYM_LET, st->names[0].s, st->names[0].loc, vt);
    if (is_region(vt))
        sym->tile_root = sema_tile_root(st->e);
    sym->cv = st->e->cv;
    sym->varying = st->e->varying || (s->varying_cf && st->e->cv.kind == CV_NONE);
    sym->decl = st;
    sym->parallel_level = s->parallel_level;
    st->syms[0] = sym;
    st->names[0].sym = sym;
    declare(s, sym);
}

static void check_var(SemaCtx *s, Stmt *st)
{
    Type *t = st->ty ? resolve_type(s, st->ty, false) : NULL;
    if (st->e) {
        Type *it = check_expr(s, st->e, t && t->kind == TY_SCALAR ? t : NULL);
        if (t && !is_err(t) && !is_err(it))
            coerce(s, st->e, t, "initializer");
        if (!t)
            t = default_type(it);
        if (!is_err(it) && t->kind == TY_UNTYPED_INT)
            t = ty_scalar(DT_I32);
        if (!st->ty && (it->kind == TY_UNTYPED_INT || it->kind == TY_UNTYPED_FLOAT))
            coerce(s, st->e, t, "initializer");
    } else if (!t) {
        ERR(st->loc, "'var %s' needs a type or an initial value", st->names[0].s);
        t = ty_error();
    }
    if (!is_err(t) && t->kind != TY_SCALAR && t->kind != TY_GENERIC) {
        ERR(st->names[0].loc, "a 'var' holds a scalar, not %s; declare a local, shared or frag tile", tstr(s, t));
        t = ty_error();
    }
    Sym *sym = sym_new(s, SYM_VAR, st->names[0].s, st->names[0].loc, t);
    sym->varying = (st->e && st->e->varying) || s->varying_cf;
    sym->decl = st;
    sym->parallel_level = s->parallel_level;
    st->sym = sym;
    st->names[0].sym = sym;
    declare(s, sym);
}

static void check_storage(SemaCtx *s, Stmt *st)
{
    Type *et = resolve_type(s, st->ty, false);
    bool ok = !is_err(et);
    if (s->parallel_level > 0) {
        ERR(st->loc, "tiles cannot be declared inside a 'parallel' loop");
        ok = false;
    }
    if (st->dims.n > TL_MAX_RANK) {
        ERR(st->loc, "a tile has at most %d dimensions", TL_MAX_RANK);
        ok = false;
    }
    int64_t dims[TL_MAX_RANK] = {0};
    int64_t total = 1;
    for (int i = 0; ok && i < st->dims.n; i++) {
        int64_t v;
        ConstIntResult rc = require_const_int(s, st->dims.v[i], "a tile extent", &v);
        if (rc == CI_ERROR) {
            ok = false;
            break;
        }
        if (rc == CI_KNOWN && v <= 0) {
            ERR(st->dims.v[i]->loc, "a tile extent must be positive, found %lld", (long long)v);
            ok = false;
            break;
        }
        dims[i] = v;
        if (v > 0 && total > 0) {
            if (__builtin_mul_overflow(total, v, &total))
                total = INT64_MAX;
            if (total > TL_MAX_TILE_ELEMS) {
                ERR(st->loc, "tile '%s' has more than %d elements", st->names[0].s, TL_MAX_TILE_ELEMS);
                ok = false;
            }
        } else {
            total = -1;
        }
    }
    if (ok && et->kind == TY_SCALAR && et->dt == DT_E2M1 && st->scope == SC_SHARED && st->dims.n > 0 &&
        dims[st->dims.n - 1] > 0 && dims[st->dims.n - 1] % 2) {
        ERR(st->dims.v[st->dims.n - 1]->loc, "a shared tile of e2m1 needs an even last extent (two elements share a byte), "
            "found %lld", (long long)dims[st->dims.n - 1]);
        ok = false;
    }
    if (ok && et->kind == TY_SCALAR && et->dt == DT_BOOL && st->scope == SC_SHARED) {
        ERR(st->ty->loc, "shared tiles of bool are not supported; use u8");
        ok = false;
    }
    if (ok && st->has_layout) {
        if (st->scope != SC_FRAG) {
            ERR(st->loc, "a layout can only be given for a frag tile");
            ok = false;
        }
        for (int i = 0; ok && i < st->layout_args.n; i++) {
            const char *nm = st->layout_names[i];
            if (strcmp(nm, "vec") != 0 && strcmp(nm, "threads_per_row") != 0 && strcmp(nm, "row_run") != 0) {
                ERR(st->layout_args.v[i]->loc, "unknown layout argument '%s'; a frag layout takes 'vec', 'threads_per_row' and 'row_run'", nm);
                ok = false;
                break;
            }
            int64_t v;
            ConstIntResult rc = require_const_int(s, st->layout_args.v[i], "a layout argument", &v);
            if (rc == CI_ERROR) {
                ok = false;
                break;
            }
            if (rc == CI_KNOWN && !tl_is_pow2(v)) {
                ERR(st->layout_args.v[i]->loc, "'%s' must be a power of two, found %lld", nm, (long long)v);
                ok = false;
            }
        }
    }
    Type *t = ok ? ty_region(s->arena, TY_TILE, st->scope, et->kind == TY_SCALAR ? et->dt : DT_NONE,
                             et->kind == TY_GENERIC ? et->generic_name : NULL, st->dims.n, dims)
                 : ty_error();
    Sym *sym = sym_new(s, SYM_STORAGE, st->names[0].s, st->names[0].loc, t);
    sym->decl = st;
    st->sym = sym;
    st->names[0].sym = sym;
    declare(s, sym);
}

static void check_assign(SemaCtx *s, Stmt *st)
{
    Type *lt = check_expr(s, st->lhs, NULL);
    if (is_err(lt)) {
        check_expr(s, st->e, NULL);
        return;
    }
    if (!expr_is_lvalue(s, st->lhs, true)) {
        check_expr(s, st->e, NULL);
        return;
    }
    Expr *l = st->lhs;
    if (l->kind == EX_NAME && l->sym && l->sym->kind == SYM_VAR) {
        Sym *v = l->sym;
        if (s->parallel_level > v->parallel_level) {
            ERR(l->loc, "a 'parallel' body cannot assign '%s', which is declared outside it", v->name);
            diag_note(s->d, v->loc, "declared here; accumulate into a frag tile and reduce it instead");
        }
        if (s->varying_cf)
            v->varying = true;
    }
    if (l->kind == EX_INDEX) {
        Type *bt = l->a->type;
        if (bt->kind == TY_TILE && bt->scope == SC_FRAG && s->parallel_level <= (s->fn_ret ? s->fn_parallel_level : 0))
            ERR(l->loc, "elements of a frag can only be written inside a 'parallel' loop");
        /* memory is written in bytes; frag and local tiles are registers, one element each */
        if (bt->dt == DT_E2M1 && (bt->kind == TY_TENSOR || (bt->kind == TY_TILE && bt->scope == SC_SHARED)))
            ERR(st->loc, "a single e2m1 element cannot be stored to memory (two share a byte); store pairs with a tile copy");
    }
    Type *rt = check_expr(s, st->e, lt->kind == TY_SCALAR ? lt : NULL);
    if (is_err(rt))
        return;
    if (st->assign_op != OP_NONE) {
        OpKind op = st->assign_op;
        bool intop = op == OP_MOD || op == OP_SHL || op == OP_SHR || op == OP_BAND || op == OP_BOR || op == OP_BXOR;
        if (lt->kind == TY_SCALAR && intop && !dtype_is_int(lt->dt) && !(lt->dt == DT_BOOL && op != OP_MOD && op != OP_SHL && op != OP_SHR)) {
            ERR(st->loc, "'%s=' needs an integer target, found %s", op_spelling(op), tstr(s, lt));
            return;
        }
        if (lt->kind == TY_SCALAR && !intop && (lt->dt == DT_BOOL || !dtype_is_arith(lt->dt))) {
            if (lt->dt == DT_BOOL || dtype_kind(lt->dt) == DK_SCALE) {
                ERR(st->loc, "'%s=' needs a number, found %s", op_spelling(op), tstr(s, lt));
                return;
            }
            /* f16/bf16/fp8 targets: computed in f32 and converted back */
            if (rt->kind == TY_UNTYPED_INT || rt->kind == TY_UNTYPED_FLOAT)
                coerce(s, st->e, ty_scalar(DT_F32), "value");
            else if (rt->kind == TY_SCALAR && !dtype_is_float(rt->dt))
                ERR(st->e->loc, "value of type %s for a %s target; convert explicitly", tstr(s, rt), tstr(s, lt));
            return;
        }
        if (op == OP_SHL || op == OP_SHR) {
            if (rt->kind == TY_UNTYPED_INT)
                coerce(s, st->e, lt, "shift amount");
            else if (rt->kind != TY_SCALAR || !dtype_is_int(rt->dt))
                ERR(st->e->loc, "a shift amount must be an integer, found %s", tstr(s, rt));
            return;
        }
    }
    if (lt->kind == TY_SCALAR && dtype_kind(lt->dt) != DK_FLOAT && !dtype_is_int(lt->dt) && lt->dt != DT_BOOL &&
        rt->kind == TY_SCALAR && rt->dt != lt->dt) {
        ERR(st->e->loc, "value of type %s for a %s element; convert explicitly with %s(x)", tstr(s, rt), tstr(s, lt),
            tstr(s, lt));
        return;
    }
    coerce(s, st->e, lt, "assignment");
}

static bool cond_bool(SemaCtx *s, Expr *c, const char *what)
{
    Type *t = check_expr(s, c, NULL);
    if (is_err(t))
        return false;
    if (t->kind != TY_GENERIC && !(t->kind == TY_SCALAR && t->dt == DT_BOOL)) {
        ERR(c->loc, "the condition of '%s' must be bool, found %s", what, tstr(s, t));
        return false;
    }
    return true;
}

/* A branch whose condition depends on the thread makes everything below it "varying". */
static void with_cf(SemaCtx *s, Expr *cond, StmtList body)
{
    bool saved = s->varying_cf;
    Loc saved_loc = s->varying_cf_loc;
    bool saved_partial = s->partial;
    if (cond && cond->varying && !s->varying_cf) {
        s->varying_cf = true;
        s->varying_cf_loc = cond->loc;
    }
    check_block(s, body);
    /* a return under a varying branch leaves the rest of the kernel to a subset of threads */
    bool returned_partially = s->partial && !saved_partial;
    s->varying_cf = saved;
    s->varying_cf_loc = saved_loc;
    if (!returned_partially)
        s->partial = saved_partial;
}

static void check_if(SemaCtx *s, Stmt *st)
{
    bool ok = cond_bool(s, st->e, st->is_const ? "if const" : "if");
    st->const_taken = -1;
    if (st->is_const && ok) {
        if (st->e->cv.kind == CV_NONE) {
            ERR(st->e->loc, "the condition of 'if const' must be known at compile time");
            ok = false;
        } else if (st->e->cv.kind == CV_BOOL) {
            st->const_taken = st->e->cv.b ? 1 : 0;
        }
    }
    if (st->const_taken == 1) {
        check_block(s, st->body);
        return;
    }
    if (st->const_taken == 0) {
        if (st->has_else)
            check_block(s, st->els);
        return;
    }
    with_cf(s, ok ? st->e : NULL, st->body);
    if (st->has_else)
        with_cf(s, ok ? st->e : NULL, st->els);
}

static void check_for(SemaCtx *s, Stmt *st)
{
    Type *tl = check_expr(s, st->lo, NULL);
    Type *th = check_expr(s, st->hi, NULL);
    Type *ts = st->step ? check_expr(s, st->step, NULL) : NULL;
    Type *t = ty_error();
    int64_t new_copies = -1; /* an unrolled loop: the copies of its body */
    if (!is_err(tl) && !is_err(th) && (!ts || !is_err(ts))) {
        bool ints = (tl->kind == TY_UNTYPED_INT || (tl->kind == TY_SCALAR && dtype_is_int(tl->dt)) || tl->kind == TY_GENERIC) &&
                    (th->kind == TY_UNTYPED_INT || (th->kind == TY_SCALAR && dtype_is_int(th->dt)) || th->kind == TY_GENERIC);
        if (!ints) {
            ERR(st->lo->loc, "loop bounds must be integers, found %s and %s", tstr(s, tl), tstr(s, th));
        } else {
            t = tl->kind == TY_UNTYPED_INT ? th : tl;
            if (t->kind == TY_UNTYPED_INT)
                t = ty_scalar(DT_I32);
            if (tl->kind == TY_SCALAR && th->kind == TY_SCALAR && tl->dt != th->dt) {
                DType a = tl->dt, b = th->dt;
                if (dtype_is_signed(a) == dtype_is_signed(b))
                    t = ty_scalar(dtype_bits(a) >= dtype_bits(b) ? a : b);
                else {
                    ERR(st->lo->loc, "loop bounds have types %s and %s; convert one explicitly", dtype_name(a), dtype_name(b));
                    t = ty_error();
                }
            }
            if (!is_err(t) && t->kind == TY_SCALAR) {
                coerce(s, st->lo, t, "loop bound");
                coerce(s, st->hi, t, "loop bound");
                if (st->step)
                    coerce(s, st->step, t, "loop step");
            }
            if (st->step && st->step->cv.kind == CV_INT && st->step->cv.i <= 0) {
                ERR(st->step->loc, "the step of a loop must be positive, found %lld", (long long)st->step->cv.i);
                t = ty_error();
            }
        }
    }
    if (st->for_kind == FOR_UNROLL && !is_err(t) && !s->generic) {
        if (st->lo->cv.kind != CV_INT || st->hi->cv.kind != CV_INT || (st->step && st->step->cv.kind != CV_INT)) {
            ERR(st->loc, "an 'unroll' loop needs compile-time bounds and step");
        } else {
            int64_t step = st->step ? st->step->cv.i : 1;
            /* hi - lo fits in 64 unsigned bits however large the bounds */
            uint64_t span = st->hi->cv.i > st->lo->cv.i ? (uint64_t)st->hi->cv.i - (uint64_t)st->lo->cv.i : 0;
            uint64_t trips = span / (uint64_t)step + (span % (uint64_t)step != 0);
            if (trips > TL_MAX_UNROLL) {
                ERR(st->loc, "an 'unroll' loop of %llu iterations; the limit is %d", (unsigned long long)trips, TL_MAX_UNROLL);
            } else {
                /* the body is made once per iteration of this loop and of those around it: the
                 * product along a nest and the sum over the kernel are bounded too */
                uint64_t around = s->unroll_copies ? (uint64_t)s->unroll_copies : 1, copies = around * trips;
                if (copies > TL_MAX_UNROLL) {
                    ERR(st->loc, "this 'unroll' loop of %llu iterations inside others of %llu makes %llu copies of its body; "
                        "the limit for a nest is %d", (unsigned long long)trips, (unsigned long long)around,
                        (unsigned long long)copies, TL_MAX_UNROLL);
                } else {
                    s->unroll_total += (int64_t)copies;
                    if (s->unroll_total > TL_MAX_UNROLL_TOTAL && !s->unroll_over) {
                        ERR(st->loc, "with this loop the 'unroll' loops of the kernel make more than %d copies of their "
                            "bodies in all", TL_MAX_UNROLL_TOTAL);
                        s->unroll_over = true;
                    }
                    new_copies = (int64_t)copies;
                }
            }
        }
    }
    if (st->for_kind == FOR_PIPELINED) {
        int64_t stages;
        if (require_const_int(s, st->stages, "the number of stages", &stages) == CI_KNOWN &&
            (stages < 1 || stages > 8))
            ERR(st->stages->loc, "'pipelined' takes 1 to 8 stages, found %lld", (long long)stages);
        if (s->parallel_level > 0)
            ERR(st->loc, "a 'pipelined' loop cannot be inside a 'parallel' loop");
    }
    bool varying = st->lo->varying || st->hi->varying || (st->step && st->step->varying);
    int64_t saved_copies = s->unroll_copies;
    if (new_copies >= 0)
        s->unroll_copies = new_copies;
    scope_push(s);
    Sym *iv = sym_new(s, SYM_LOOP, st->names[0].s, st->names[0].loc, t);
    iv->varying = varying || s->varying_cf;
    iv->decl = st;
    iv->parallel_level = s->parallel_level;
    st->sym = iv;
    st->names[0].sym = iv;
    scope_add(s, iv);
    s->loop_depth++;
    bool saved_div = s->loop_diverged;
    s->loop_diverged = false;
    int saved_lpl = s->loop_parallel_level;
    s->loop_parallel_level = s->parallel_level;
    Expr cond = {0};
    cond.varying = varying;
    cond.loc = st->lo->loc;
    with_cf(s, &cond, st->body);
    s->loop_diverged = saved_div;
    s->loop_parallel_level = saved_lpl;
    s->loop_depth--;
    scope_pop(s);
    s->unroll_copies = saved_copies;
}

/* for tile t { ... }: the walk over the tiles of the kernel's persistent launch. Its coordinates
 * are uniform i32 values; break and continue work as in any loop. */
static void check_tile_loop(SemaCtx *s, Stmt *st)
{
    Item *k = s->kernel;
    int dims = 0;
    if (!k || s->fn_ret) {
        ERR(st->loc, "'for tile' walks the tiles of a kernel's 'persistent' launch; it belongs in the kernel's body");
    } else if (!k->launch.persistent) {
        ERR(st->loc, "'for tile' walks the tiles of a 'persistent' launch, and kernel '%s' has a grid(...)", k->name.s);
        diag_note(s->d, k->launch.loc, "the launch is here: persistent(tiles = N, ...) makes one");
    } else {
        dims = k->launch.tiles.n;
        if (st->nnames != dims)
            ERR(st->loc, "'for tile' names %d coordinate%s, but the launch counts tiles in %d dimension%s", st->nnames,
                st->nnames == 1 ? "" : "s", dims, dims == 1 ? "" : "s");
    }
    if (s->parallel_level > 0)
        ERR(st->loc, "a 'for tile' loop cannot be inside a 'parallel' loop");
    else if (s->in_tile_loop)
        ERR(st->loc, "a 'for tile' loop cannot be inside another: each walks all the block's tiles");
    bool saved_in_tile = s->in_tile_loop;
    s->in_tile_loop = true;
    scope_push(s);
    st->syms = ARENA_ARRAY(s->arena, Sym *, st->nnames);
    for (int i = 0; i < st->nnames; i++) {
        Sym *iv = sym_new(s, SYM_LOOP, st->names[i].s, st->names[i].loc, ty_scalar(DT_I32));
        iv->varying = s->varying_cf;
        iv->decl = st;
        iv->parallel_level = s->parallel_level;
        st->syms[i] = iv;
        st->names[i].sym = iv;
        declare(s, iv);
    }
    st->sym = st->nnames ? st->syms[0] : NULL;
    s->loop_depth++;
    bool saved_div = s->loop_diverged;
    s->loop_diverged = false;
    int saved_lpl = s->loop_parallel_level;
    s->loop_parallel_level = s->parallel_level;
    with_cf(s, NULL, st->body);
    s->loop_diverged = saved_div;
    s->loop_parallel_level = saved_lpl;
    s->loop_depth--;
    s->in_tile_loop = saved_in_tile;
    scope_pop(s);
}

static void check_while(SemaCtx *s, Stmt *st)
{
    bool ok = cond_bool(s, st->e, "while");
    s->loop_depth++;
    bool saved_div = s->loop_diverged;
    s->loop_diverged = false;
    int saved_lpl = s->loop_parallel_level;
    s->loop_parallel_level = s->parallel_level;
    with_cf(s, ok ? st->e : NULL, st->body);
    s->loop_diverged = saved_div;
    s->loop_parallel_level = saved_lpl;
    s->loop_depth--;
}

static void check_parallel(SemaCtx *s, Stmt *st)
{
    Sym *tile = scope_lookup(s, st->target.s);
    bool ok = true;
    if (!tile) {
        ERR(st->target.loc, "unknown name '%s'", st->target.s);
        ok = false;
    } else if (tile->kind != SYM_STORAGE) {
        ERR(st->target.loc, "'parallel' iterates over a shared, frag or local tile; '%s' is not one", st->target.s);
        ok = false;
    } else if (tile->tile_param && !tile->tile_whole) {
        ERR(st->target.loc, "'parallel' iterates over a whole tile, and '%s' is bound to a part of one", st->target.s);
        ok = false;
    } else if (!is_err(tile->type) && tile->type->rank != st->nnames) {
        ERR(st->loc, "'%s' has %d dimension%s but the loop names %d ind%s", st->target.s, tile->type->rank,
            tile->type->rank == 1 ? "" : "s", st->nnames, st->nnames == 1 ? "ex" : "ices");
        ok = false;
    }
    if (s->parallel_level > 0) {
        ERR(st->loc, "'parallel' loops cannot be nested");
        ok = false;
    }
    if (ok && tile->type->kind == TY_TILE && tile->type->scope != SC_FRAG && tile->type->scope != SC_SHARED &&
        tile->type->scope != SC_LOCAL)
        ok = false;
    if (ok && (s->varying_cf || s->partial)) {
        ERR(st->loc, "a 'parallel' loop is block-wide and cannot be under thread-dependent control flow");
        diag_note(s->d, s->varying_cf ? s->varying_cf_loc : s->partial_loc, "here the threads diverge");
        ok = false;
    }
    st->target.sym = tile;
    scope_push(s);
    st->syms = ARENA_ARRAY(s->arena, Sym *, st->nnames);
    for (int i = 0; i < st->nnames; i++) {
        Sym *pi = sym_new(s, SYM_PINDEX, st->names[i].s, st->names[i].loc, ty_scalar(DT_I32));
        pi->varying = true;
        pi->decl = st;
        st->syms[i] = pi;
        st->names[i].sym = pi;
        declare(s, pi);
    }
    s->parallel_level++;
    Sym *saved_tile = s->parallel_tile;
    s->parallel_tile = ok ? tile : NULL;
    check_block(s, st->body);
    s->parallel_tile = saved_tile;
    s->parallel_level--;
    scope_pop(s);
}

static void check_return(SemaCtx *s, Stmt *st)
{
    /* a fn's return leaves the fn, which may be called inside a 'parallel' loop */
    if (s->parallel_level > (s->fn_ret ? s->fn_parallel_level : 0)) {
        ERR(st->loc, "'return' cannot leave a 'parallel' loop");
        return;
    }
    if (s->fn_ret) {
        if (s->fn_ret->kind == TY_VOID) {
            if (st->e) {
                check_expr(s, st->e, NULL);
                ERR(st->e->loc, "fn '%s' returns no value", s->fn_item->name.s);
            }
            return;
        }
        if (!st->e) {
            ERR(st->loc, "fn '%s' must return %s", s->fn_item->name.s, tstr(s, s->fn_ret));
            return;
        }
        if (s->fn_ret->kind == TY_TUPLE) {
            if (st->e->kind != EX_LIST || st->e->args.n != s->fn_ret->nelems) {
                if (st->e->kind != EX_LIST)
                    check_expr(s, st->e, NULL);
                ERR(st->e->loc, "fn '%s' returns %d values", s->fn_item->name.s, s->fn_ret->nelems);
                return;
            }
            for (int i = 0; i < st->e->args.n; i++) {
                Type *t = check_expr(s, st->e->args.v[i], NULL);
                if (!is_err(t))
                    coerce(s, st->e->args.v[i], s->fn_ret->elems[i], "return value");
                s->fn_ret_varying |= st->e->args.v[i]->varying || s->varying_cf;
            }
            st->e->type = s->fn_ret;
            return;
        }
        if (st->e->kind == EX_LIST) {
            ERR(st->e->loc, "fn '%s' returns one value", s->fn_item->name.s);
            return;
        }
        Type *t = check_expr(s, st->e, s->fn_ret->kind == TY_SCALAR ? s->fn_ret : NULL);
        if (!is_err(t))
            coerce(s, st->e, s->fn_ret, "return value");
        s->fn_ret_varying |= st->e->varying || s->varying_cf;
        return;
    }
    if (st->e) {
        if (st->e->kind != EX_LIST)
            check_expr(s, st->e, NULL);
        ERR(st->e->loc, "a kernel returns no value");
        return;
    }
    if (s->varying_cf && !s->partial) {
        s->partial = true;
        s->partial_loc = st->loc;
    }
}

/* Only signature names may appear in a requirement: the runtime checks it before launch. */
static bool only_signature_names(SemaCtx *s, Expr *e)
{
    if (!e)
        return true;
    if (e->kind == EX_NAME && e->sym) {
        SymKind k = e->sym->kind;
        if (k != SYM_FN && k != SYM_GENERIC && k != SYM_SCALAR && k != SYM_DIM && k != SYM_CONST) {
            ERR(e->loc, "a requirement may only use generic parameters, scalar parameters and tensor shapes; '%s' is not one", e->str);
            return false;
        }
    }
    if (e->kind == EX_NAME && (e->builtin == BI_LANE || e->builtin == BI_WARP)) {
        ERR(e->loc, "a requirement is checked before launch and cannot use '%s'", e->str);
        return false;
    }
    if (e->kind == EX_MEMBER && e->builtin) {
        ERR(e->loc, "a requirement is checked before launch and cannot use '%s.%s'", e->a->str, e->str);
        return false;
    }
    /* lane, warp and the thread-level, atomic and tile builtins (a callee is a name too) */
    if (e->kind == EX_NAME && e->builtin) {
        BuiltinClass cls = builtin_info(e->builtin)->cls;
        if (cls == BC_THREAD || cls == BC_ATOMIC || cls == BC_TILE || e->builtin == BI_LANE || e->builtin == BI_WARP) {
            ERR(e->loc, "a requirement is checked before launch and cannot use '%s'", e->str);
            return false;
        }
    }
    if (e->kind == EX_INDEX) {
        ERR(e->loc, "a requirement is checked on the host and cannot read tensor elements");
        return false;
    }
    bool ok = only_signature_names(s, e->a) && only_signature_names(s, e->b);
    for (int i = 0; i < e->args.n; i++)
        ok = ok && only_signature_names(s, e->args.v[i]);
    return ok;
}

static void check_require(SemaCtx *s, Stmt *st)
{
    if (!s->kernel || s->fn_ret || s->loop_depth || s->parallel_level || s->varying_cf || s->stmt_index < 0) {
        ERR(st->loc, "'require' belongs at the top of a kernel body, before its other statements");
        check_expr(s, st->e, NULL);
        return;
    }
    s->in_require = true;
    bool ok = cond_bool(s, st->e, "require");
    s->in_require = false;
    if (!ok)
        return;
    if (!only_signature_names(s, st->e))
        return;
    if (st->e->cv.kind == CV_BOOL && !st->e->cv.b) {
        StrBuf b = {0};
        ast_print_src(&b, st->e);
        if (st->msg)
            ERR(st->e->loc, "requirement fails for this specialisation: %s", st->msg);
        else
            ERR(st->e->loc, "requirement fails for this specialisation: %s", b.data);
        sb_free(&b);
    }
}

static void check_stmt(SemaCtx *s, Stmt *st)
{
    if (st->kind != ST_REQUIRE && s->kernel && !s->fn_ret && s->loop_depth == 0 && s->parallel_level == 0)
        s->stmt_index = -1;
    switch (st->kind) {
    case ST_BLOCK: check_block(s, st->body); break;
    case ST_LET: check_let(s, st); break;
    case ST_VAR: check_var(s, st); break;
    case ST_STORAGE: check_storage(s, st); break;
    case ST_ASSIGN: check_assign(s, st); break;
    case ST_EXPR: {
        Type *t = check_expr(s, st->e, NULL);
        if (!is_err(t) && st->e->kind != EX_CALL)
            ERR(st->e->loc, "this expression has no effect");
        break;
    }
    case ST_IF: check_if(s, st); break;
    case ST_FOR:
        if (st->for_kind == FOR_TILE)
            check_tile_loop(s, st);
        else
            check_for(s, st);
        break;
    case ST_WHILE: check_while(s, st); break;
    case ST_PARALLEL: check_parallel(s, st); break;
    case ST_RETURN: check_return(s, st); break;
    case ST_BREAK:
    case ST_CONTINUE:
        if (s->loop_depth > 0 && s->varying_cf && !s->partial) {
            /* threads that leave early make the rest of the loop body thread-dependent */
            s->loop_diverged = true;
            s->partial_loc = st->loc;
        }
        if (s->loop_depth == 0)
            ERR(st->loc, "'%s' outside a loop", st->kind == ST_BREAK ? "break" : "continue");
        else if (s->parallel_level > s->loop_parallel_level && s->loop_depth > 0)
            ERR(st->loc, "'%s' cannot leave a 'parallel' loop", st->kind == ST_BREAK ? "break" : "continue");
        break;
    case ST_REQUIRE: check_require(s, st); break;
    }
}

void check_stmts(SemaCtx *s, StmtList l)
{
    for (int i = 0; i < l.n; i++) {
        if (!sema_enter_nesting(s, l.v[i]->loc))
            return;
        check_stmt(s, l.v[i]);
        s->nest_depth--;
    }
}

/* whether every path through the statements ends in a return */
static bool always_returns(StmtList l)
{
    if (l.n == 0)
        return false;
    Stmt *last = l.v[l.n - 1];
    switch (last->kind) {
    case ST_RETURN: return true;
    case ST_BLOCK: return always_returns(last->body);
    case ST_IF:
        if (last->const_taken == 1)
            return always_returns(last->body);
        if (last->const_taken == 0)
            return last->has_else && always_returns(last->els);
        return last->has_else && always_returns(last->body) && always_returns(last->els);
    default: return false;
    }
}

void check_body_inline(SemaCtx *s, InlineCall *ic, Expr *call)
{
    Type *saved_ret = s->fn_ret;
    Item *saved_fn = s->fn_item;
    int saved_loops = s->loop_depth;
    int saved_pl = s->fn_parallel_level;
    bool saved_rv = s->fn_ret_varying;
    s->fn_ret_varying = false;
    s->fn_parallel_level = s->parallel_level;
    s->fn_ret = ic->ret;
    s->fn_item = ic->fn;
    s->loop_depth = 0;
    s->inline_depth++;
    int errs = s->d->nerrors;
    check_block(s, ic->body);
    /* a fn checked on its own has no call to point at; of a deep chain of calls (recursion)
     * the outermost few are shown */
    if (s->d->nerrors > errs && !(s->fn_generic_check && s->inline_depth == 1) && s->inline_depth <= 4)
        diag_note(s->d, call->loc, "in this call of '%s'", ic->fn->name.s);
    /* a fn with a result must return on every path */
    if (ic->ret->kind != TY_VOID && !is_err(ic->ret) && !always_returns(ic->body))
        ERR(ic->fn->name.loc, "fn '%s' must return a value on every path", ic->fn->name.s);
    s->inline_depth--;
    ic->ret_varying = s->fn_ret_varying;
    s->fn_ret_varying = saved_rv;
    s->fn_parallel_level = saved_pl;
    s->loop_depth = saved_loops;
    s->fn_ret = saved_ret;
    s->fn_item = saved_fn;
}
