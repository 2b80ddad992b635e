/* signature.c — writes a specialisation's signature ("tilec-sig 1", see tilec/compiler.h):
 * what the runtime checks before launch, and how it computes the grid. */
#include "signature.h"

#include <stdio.h>
#include <string.h>

static const char *op_name(OpKind op)
{
    switch (op) {
    case OP_LAND: return "&&";
    case OP_LOR: return "||";
    default: return op_spelling(op);
    }
}

/* What the names of an inlined fn body stand for while its result is written: each parameter the
 * argument of the call, each let its value, each with the bindings of the place it comes from. */
typedef struct Env Env;
struct Env {
    const Sym *sym;
    const Expr *value;
    const Env *value_env;
    const Env *next;
};

/* The runtime reads at most this many expression nodes per signature (RT_MAX_EXPR_NODES); a fn's
 * lets are written out at each use, so a few lines of source can ask for more. */
enum { SIG_MAX_NODES = 4096 };

typedef struct SX {
    StrBuf *out;
    const Expr *bad;   /* the innermost part the runtime cannot evaluate, for the diagnostic */
    const Expr *call;  /* ... and the outermost fn call it is inside, for a note */
    int nodes;         /* written so far, over the whole signature */
    bool big_reported;
} SX;

static bool sexpr_in(SX *x, const Expr *e, const Env *env);

/* A fn call: the value its body returns (sema allowed only lets, `if const` and the return), the
 * names of the body standing for what `env` binds them to. */
static bool sexpr_fn(SX *x, const Expr *call, StmtList body, const Env *env)
{
    for (int i = 0; i < body.n; i++) {
        const Stmt *st = body.v[i];
        if (st->kind == ST_LET && st->nnames == 1 && st->syms) {
            Env let = {st->syms[0], st->e, env, env};
            StmtList rest = {body.v + i + 1, body.n - i - 1};
            return sexpr_fn(x, call, rest, &let);
        }
        if (st->kind == ST_IF && st->is_const && st->const_taken >= 0)
            return sexpr_fn(x, call, st->const_taken ? st->body : st->els, env);
        if (st->kind == ST_RETURN && st->e)
            return sexpr_in(x, st->e, env);
        if (st->kind == ST_RETURN)
            break;
    }
    x->bad = call;
    return false;
}

/* Writes e in the runtime's prefix notation; false if it cannot, with x->bad set. */
static bool sexpr_in(SX *x, const Expr *e, const Env *env)
{
    StrBuf *out = x->out;
    if (++x->nodes > SIG_MAX_NODES) {
        x->bad = e;
        return false;
    }
    if (e->cv.kind == CV_INT) {
        sb_printf(out, "%lld", (long long)e->cv.i);
        return true;
    }
    if (e->cv.kind == CV_FLOAT) {
        /* always with a '.' or exponent, so that the reader sees a float */
        char buf[64];
        snprintf(buf, sizeof buf, "%.17g", e->cv.f);
        if (!strpbrk(buf, ".eEn"))
            strcat(buf, ".0");
        sb_puts(out, buf);
        return true;
    }
    if (e->cv.kind == CV_BOOL) {
        sb_puts(out, e->cv.b ? "1" : "0");
        return true;
    }
    switch (e->kind) {
    case EX_NAME:
        if (e->builtin == BI_NUM_SMS) {
            sb_puts(out, "num_sms");
            return true;
        }
        for (const Env *b = env; b; b = b->next)
            if (b->sym == e->sym) {
                x->nodes--; /* the value's own nodes count */
                return sexpr_in(x, b->value, b->value_env);
            }
        if (e->sym && (e->sym->kind == SYM_DIM || e->sym->kind == SYM_SCALAR)) {
            sb_puts(out, e->sym->name);
            return true;
        }
        x->bad = e;
        return false;
    case EX_BINARY:
        sb_printf(out, "(%s ", op_name(e->op));
        if (!sexpr_in(x, e->a, env))
            return false;
        sb_puts(out, " ");
        if (!sexpr_in(x, e->b, env))
            return false;
        sb_puts(out, ")");
        return true;
    case EX_UNARY:
        sb_puts(out, e->op == OP_NEG ? "(neg " : e->op == OP_NOT ? "(! " : "(~ ");
        if (!sexpr_in(x, e->a, env))
            return false;
        sb_puts(out, ")");
        return true;
    case EX_CALL: {
        if (e->inl) {
            /* the fn's parameters stand for the arguments, evaluated where the call stands */
            const InlineCall *ic = e->inl;
            Env *params = NULL;
            Env local[TL_MAX_PARAMS];
            for (int i = 0; i < ic->nparams && i < TL_MAX_PARAMS; i++) {
                local[i] = (Env){ic->params[i], e->args.v[i], env, params};
                params = &local[i];
            }
            x->nodes--;
            if (sexpr_fn(x, e, ic->body, params))
                return true;
            x->call = e;
            return false;
        }
        const char *f = NULL;
        switch (e->builtin) {
        case BI_CDIV: f = "cdiv"; break;
        case BI_ALIGN: f = "align"; break;
        case BI_FLOORDIV: f = "floordiv"; break;
        case BI_FLOORMOD: f = "floormod"; break;
        case BI_MIN: f = "min"; break;
        case BI_MAX: f = "max"; break;
        case BI_SELECT: f = "select"; break;
        default: break;
        }
        if (!f && (e->a->kind == EX_TYPE || (e->a->sym && e->a->sym->kind == SYM_GENERIC)) && e->args.n == 1) {
            x->nodes--; /* integer conversions: values fit the runtime's int64 */
            return sexpr_in(x, e->args.v[0], env);
        }
        if (!f) {
            x->bad = e;
            return false;
        }
        sb_printf(out, "(%s", f);
        for (int i = 0; i < e->args.n; i++) {
            sb_puts(out, " ");
            if (!sexpr_in(x, e->args.v[i], env))
                return false;
        }
        sb_puts(out, ")");
        return true;
    }
    default:
        x->bad = e;
        return false;
    }
}

static bool sexpr(SX *x, const Expr *e)
{
    x->bad = x->call = NULL;
    return sexpr_in(x, e, NULL);
}

static void sexpr_note(const SX *x, DiagEngine *d)
{
    if (x->call && x->call != x->bad)
        diag_note(d, x->call->loc, "in this call of '%s'", x->call->inl->fn->name.s);
}

/* After a failed sexpr: whether it failed because the signature grew past what the runtime reads
 * (reported here); otherwise the caller reports x->bad. */
static bool sexpr_too_big(SX *x, DiagEngine *d, const Expr *e)
{
    if (x->nodes <= SIG_MAX_NODES)
        return false;
    if (x->big_reported)
        return true;
    x->big_reported = true;
    diag_error(d, e->loc, "the launch expressions of this kernel take more than %d nodes (a fn's lets are written out "
                          "at each use); the runtime reads no more", SIG_MAX_NODES);
    return true;
}

static void quoted(StrBuf *out, const char *s)
{
    sb_puts(out, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            sb_append(out, "\\", 1);
        if (*s == '\n') {
            sb_puts(out, " ");
            continue;
        }
        sb_append(out, s, 1);
    }
    sb_puts(out, "\"");
}

/* whether an expression uses a shape name bound by an optional tensor this specialisation lacks */
static bool uses_absent(const Item *it, const Expr *e)
{
    if (!e)
        return false;
    if (e->kind == EX_NAME && e->sym && e->sym->kind == SYM_DIM) {
        const Param *p = &it->params[e->sym->dim_param];
        if (p->sym && p->sym->optional && !p->sym->present)
            return true;
    }
    if (uses_absent(it, e->a) || uses_absent(it, e->b))
        return true;
    for (int i = 0; i < e->args.n; i++)
        if (uses_absent(it, e->args.v[i]))
            return true;
    return false;
}

bool signature_write(StrBuf *out, TKernel *k, DiagEngine *d)
{
    Item *it = k->item;
    sb_puts(out, "tilec-sig 1\n");
    sb_printf(out, "kernel %s\nentry %s\nkey %s\narch %s\nthreads %d\nsmem %lld\n", k->name, k->entry, k->key,
              k->host ? "host" : k->sm >= 100 ? "sm_100a" : "sm_90a", k->nthreads, (long long)k->smem_bytes);
    if (it->launch.cluster.n)
        sb_printf(out, "cluster %d %d %d\n", k->cluster[0], k->cluster[1], k->cluster[2]);
    sb_printf(out, "flags%s%s\n", k->cooperative ? " cooperative" : "", k->pdl ? " pdl" : "");
    sb_printf(out, "nparams %d\n", it->nparams);
    bool ok = true;
    SX x = {out, NULL, NULL, 0, false};
    for (int i = 0; i < it->nparams; i++) {
        Param *p = &it->params[i];
        if (p->ty->kind != TE_TENSOR && p->ty->kind != TE_LIST) {
            sb_printf(out, "scalar %d %s %s\n", i, p->name.s, dtype_name(p->sym->type->dt));
            continue;
        }
        TBuf *b = k->params[i];
        Sym *ts = p->sym;
        TypeExpr *te = p->ty;
        if (te->kind == TE_LIST) {
            sb_printf(out, "list %d %s %s %d %d %d%s\n", i, p->name.s, dtype_name(ts->type->dt), ts->type->rank, b->align,
                      b->list_cap, b->written ? " written" : "");
            Expr *e = te->len;
            sb_printf(out, "len %d ", i);
            if (e->kind == EX_NAME && e->sym && e->sym->kind == SYM_DIM && e->sym->dim_param == i && e->sym->dim_axis < 0) {
                sb_printf(out, "(bind %s)", e->sym->name);
                x.nodes++;
            } else if (!sexpr(&x, e)) {
                if (!sexpr_too_big(&x, d, e)) {
                    diag_error(d, x.bad->loc, "this shape expression cannot be checked at launch");
                    sexpr_note(&x, d);
                }
                ok = false;
            }
            sb_puts(out, "\n");
            te = te->elem;
        } else {
            sb_printf(out, "tensor %d %s %s %d %d%s%s%s\n", i, p->name.s, dtype_name(ts->type->dt), ts->type->rank,
                      b->align, b->written ? " written" : "", ts->optional ? " optional" : "",
                      ts->optional && !ts->present ? " absent" : "");
        }
        for (int kind = 0; kind < 2; kind++) {
            ExprList l = kind ? te->strides : te->dims;
            for (int a = 0; a < l.n; a++) {
                Expr *e = l.v[a];
                sb_printf(out, "%s %d %d ", kind ? "stride" : "dim", i, a);
                if (e->kind == EX_NAME && e->sym && e->sym->kind == SYM_DIM && e->sym->dim_param == i &&
                    e->sym->dim_axis == a && e->sym->dim_is_stride == (kind == 1)) {
                    sb_printf(out, "(bind %s)", e->sym->name);
                    x.nodes++;
                } else if (e->kind == EX_NAME && !strcmp(e->str, "_")) {
                    sb_puts(out, "any");
                    x.nodes++;
                } else if (!sexpr(&x, e)) {
                    if (!sexpr_too_big(&x, d, e)) {
                        diag_error(d, x.bad->loc, "this shape expression cannot be checked at launch");
                        sexpr_note(&x, d);
                    }
                    ok = false;
                }
                sb_puts(out, "\n");
            }
        }
    }
    sb_puts(out, "grid");
    for (int i = 0; i < it->launch.grid.n; i++) {
        sb_puts(out, " ");
        if (!sexpr(&x, it->launch.grid.v[i])) {
            if (!sexpr_too_big(&x, d, it->launch.grid.v[i])) {
                diag_error(d, x.bad->loc, "this grid expression cannot be evaluated at launch");
                sexpr_note(&x, d);
            }
            ok = false;
        }
    }
    sb_puts(out, "\n");
    for (int i = 0; i < it->body.n; i++) {
        Stmt *st = it->body.v[i];
        if (st->kind != ST_REQUIRE)
            break;
        if (st->e->cv.kind == CV_BOOL)
            continue; /* decided at specialisation */
        if (uses_absent(it, st->e))
            continue; /* about a tensor this specialisation does not take */
        sb_puts(out, "require ");
        if (!sexpr(&x, st->e)) {
            if (!sexpr_too_big(&x, d, st->e)) {
                diag_error(d, x.bad->loc, "this requirement cannot be evaluated at launch");
                sexpr_note(&x, d);
            }
            ok = false;
        }
        sb_puts(out, " ");
        if (st->msg) {
            quoted(out, st->msg);
        } else {
            StrBuf src = {0};
            ast_print_src(&src, st->e);
            quoted(out, src.data ? src.data : "");
            sb_free(&src);
        }
        sb_puts(out, "\n");
    }
    sb_puts(out, "end\n");
    return ok;
}
