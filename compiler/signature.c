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

static bool sexpr(StrBuf *out, const Expr *e)
{
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
        if (e->sym && (e->sym->kind == SYM_DIM || e->sym->kind == SYM_SCALAR)) {
            sb_puts(out, e->sym->name);
            return true;
        }
        return false;
    case EX_BINARY:
        sb_printf(out, "(%s ", op_name(e->op));
        if (!sexpr(out, e->a))
            return false;
        sb_puts(out, " ");
        if (!sexpr(out, e->b))
            return false;
        sb_puts(out, ")");
        return true;
    case EX_UNARY:
        sb_puts(out, e->op == OP_NEG ? "(neg " : e->op == OP_NOT ? "(! " : "(~ ");
        if (!sexpr(out, e->a))
            return false;
        sb_puts(out, ")");
        return true;
    case EX_CALL: {
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
        if (!f && (e->a->kind == EX_TYPE || (e->a->sym && e->a->sym->kind == SYM_GENERIC)) && e->args.n == 1)
            return sexpr(out, e->args.v[0]); /* integer conversions: values fit the runtime's int64 */
        if (!f)
            return false;
        sb_printf(out, "(%s", f);
        for (int i = 0; i < e->args.n; i++) {
            sb_puts(out, " ");
            if (!sexpr(out, e->args.v[i]))
                return false;
        }
        sb_puts(out, ")");
        return true;
    }
    default: return false;
    }
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
    for (int i = 0; i < it->nparams; i++) {
        Param *p = &it->params[i];
        if (p->ty->kind != TE_TENSOR) {
            sb_printf(out, "scalar %d %s %s\n", i, p->name.s, dtype_name(p->sym->type->dt));
            continue;
        }
        TBuf *b = k->params[i];
        Sym *ts = p->sym;
        sb_printf(out, "tensor %d %s %s %d %d%s%s%s\n", i, p->name.s, dtype_name(ts->type->dt), ts->type->rank, b->align,
                  b->written ? " written" : "", ts->optional ? " optional" : "", ts->optional && !ts->present ? " absent" : "");
        for (int kind = 0; kind < 2; kind++) {
            ExprList l = kind ? p->ty->strides : p->ty->dims;
            for (int a = 0; a < l.n; a++) {
                Expr *e = l.v[a];
                sb_printf(out, "%s %d %d ", kind ? "stride" : "dim", i, a);
                if (e->kind == EX_NAME && e->sym && e->sym->kind == SYM_DIM && e->sym->dim_param == i &&
                    e->sym->dim_axis == a && e->sym->dim_is_stride == (kind == 1))
                    sb_printf(out, "(bind %s)", e->sym->name);
                else if (e->kind == EX_NAME && !strcmp(e->str, "_"))
                    sb_puts(out, "any");
                else if (!sexpr(out, e)) {
                    diag_error(d, e->loc, "this shape expression cannot be checked at launch");
                    ok = false;
                }
                sb_puts(out, "\n");
            }
        }
    }
    sb_puts(out, "grid");
    for (int i = 0; i < it->launch.grid.n; i++) {
        sb_puts(out, " ");
        if (!sexpr(out, it->launch.grid.v[i])) {
            diag_error(d, it->launch.grid.v[i]->loc, "this grid expression cannot be evaluated at launch");
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
        if (!sexpr(out, st->e)) {
            diag_error(d, st->e->loc, "this requirement cannot be evaluated at launch");
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
