/* tir_print.c — the textual form of the tile IR (`tilec emit --stage=tir`, `--dump-after`). */
#include "tir.h"

#include <stdio.h>
#include <string.h>

static const char *special_name(Special s)
{
    static const char *n[] = {"tid.x", "tid.y", "tid.z", "ctaid.x", "ctaid.y", "ctaid.z", "ntid.x", "ntid.y",
                              "ntid.z", "nctaid.x", "nctaid.y", "nctaid.z", "lane", "warp"};
    return (unsigned)s < sizeof n / sizeof n[0] ? n[s] : "?";
}

static const char *call_name(int b)
{
    if (b > 0 && b < BI_COUNT)
        return builtin_info((BuiltinId)b)->name;
    switch (b) {
    case TI_SHFL_XOR_RAW: return "shfl.bfly";
    case TI_SHFL_IDX_RAW: return "shfl.idx";
    case TI_ADDR: return "addr";
    case TI_PACK: return "pack";
    case TI_TRANSPOSE_B8: return "transpose.b8";
    case TI_LDMATRIX: return "ldmatrix";
    case TI_MMA: return "mma";
    case TI_CP_ASYNC: return "cp.async";
    case TI_CP_COMMIT: return "cp.async.commit";
    case TI_CP_WAIT: return "cp.async.wait";
    default: return "?";
    }
}

static const char *rnd_name(Rounding r)
{
    switch (r) {
    case RND_RN: return ".rn";
    case RND_RZ: return ".rz";
    case RND_RM: return ".rm";
    case RND_RP: return ".rp";
    default: return "";
    }
}

void tir_print_expr(StrBuf *out, const TExpr *e)
{
    if (!e) {
        sb_puts(out, "_");
        return;
    }
    switch (e->kind) {
    case TX_CONST:
        if (dtype_is_float(e->dt)) {
            char buf[64];
            snprintf(buf, sizeof buf, "%.9g", e->fval);
            if (!strpbrk(buf, ".eEn"))
                strcat(buf, ".0");
            sb_printf(out, "%s", buf);
            if (e->dt != DT_F32)
                sb_printf(out, ":%s", dtype_name(e->dt));
        } else if (e->dt == DT_BOOL) {
            sb_puts(out, e->ival ? "true" : "false");
        } else {
            sb_printf(out, "%lld", (long long)e->ival);
            if (e->dt != DT_I32)
                sb_printf(out, ":%s", dtype_name(e->dt));
        }
        break;
    case TX_VAR: sb_printf(out, "%s.%d", e->var->name, e->var->id); break;
    case TX_PARAM: sb_printf(out, "param%d", e->param); break;
    case TX_DIM: sb_printf(out, "dim(%d,%d)", e->param, e->axis); break;
    case TX_LEN: sb_printf(out, "len(%d)", e->param); break;
    case TX_STRIDE: sb_printf(out, "stride(%d,%d)", e->param, e->axis); break;
    case TX_SPECIAL: sb_puts(out, special_name(e->special)); break;
    case TX_UN:
        sb_printf(out, "%s", op_spelling(e->op));
        tir_print_expr(out, e->a);
        break;
    case TX_BIN:
        sb_puts(out, "(");
        tir_print_expr(out, e->a);
        sb_printf(out, " %s ", op_spelling(e->op));
        tir_print_expr(out, e->b);
        sb_puts(out, ")");
        break;
    case TX_SELECT:
        sb_puts(out, "select(");
        tir_print_expr(out, e->a);
        sb_puts(out, ", ");
        tir_print_expr(out, e->b);
        sb_puts(out, ", ");
        tir_print_expr(out, e->c);
        sb_puts(out, ")");
        break;
    case TX_CVT:
        sb_printf(out, "%s%s(", dtype_name(e->dt), rnd_name(e->round));
        tir_print_expr(out, e->a);
        sb_puts(out, ")");
        break;
    case TX_BITCAST:
        sb_printf(out, "bitcast<%s>(", dtype_name(e->dt));
        tir_print_expr(out, e->a);
        sb_puts(out, ")");
        break;
    case TX_LOAD:
        sb_printf(out, "%s[", e->buf->name);
        for (int i = 0; i < e->nargs; i++) {
            if (i)
                sb_puts(out, ", ");
            tir_print_expr(out, e->args[i]);
        }
        sb_puts(out, "]");
        if (e->align)
            sb_printf(out, "{align %d}", e->align);
        break;
    case TX_CALL:
        sb_printf(out, "%s(", call_name(e->builtin));
        if (e->str)
            sb_printf(out, "\"%s\"%s", e->str, e->nargs ? ", " : "");
        for (int i = 0; i < e->nargs; i++) {
            if (i)
                sb_puts(out, ", ");
            tir_print_expr(out, e->args[i]);
        }
        sb_puts(out, ")");
        if (e->dt != DT_NONE)
            sb_printf(out, ":%s", dtype_name(e->dt));
        break;
    }
}

static void indent(StrBuf *out, int n)
{
    for (int i = 0; i < n; i++)
        sb_puts(out, "  ");
}

static void print_region(StrBuf *out, const Region *r)
{
    sb_printf(out, "%s[", r->buf->name);
    for (int d = 0; d < r->buf->rank; d++) {
        if (d)
            sb_puts(out, ", ");
        if (r->dropped[d]) {
            tir_print_expr(out, r->start[d]);
            continue;
        }
        int rd = -1;
        for (int i = 0; i < r->rank; i++)
            if (r->src_dim[i] == d)
                rd = i;
        tir_print_expr(out, r->start[d]);
        sb_printf(out, " :+%lld", (long long)(rd >= 0 ? r->extent[rd] : -1));
    }
    sb_puts(out, "]");
    bool perm = false;
    for (int i = 0, last = -1; i < r->rank; i++) {
        if (r->src_dim[i] < last)
            perm = true;
        last = r->src_dim[i];
    }
    if (perm) {
        sb_puts(out, ".perm(");
        for (int i = 0; i < r->rank; i++)
            sb_printf(out, "%s%d", i ? "," : "", r->src_dim[i]);
        sb_puts(out, ")");
    }
}

static void print_stmt(StrBuf *out, const TStmt *s, int ind);

static void print_list(StrBuf *out, TStmt **v, int n, int ind)
{
    for (int i = 0; i < n; i++)
        print_stmt(out, v[i], ind);
}

static const char *red_name(RedOp r)
{
    switch (r) {
    case RED_SUM: return "sum";
    case RED_MAX: return "max";
    case RED_MIN: return "min";
    case RED_ABSMAX: return "absmax";
    }
    return "?";
}

static void print_stmt(StrBuf *out, const TStmt *s, int ind)
{
    indent(out, ind);
    switch (s->kind) {
    case TS_SEQ:
        sb_puts(out, "{\n");
        print_list(out, s->body, s->nbody, ind + 1);
        indent(out, ind);
        sb_puts(out, "}\n");
        return;
    case TS_DECL:
        sb_printf(out, "%s %s.%d: %s", s->var->mutable_ ? "var" : "let", s->var->name, s->var->id, dtype_name(s->var->dt));
        if (s->e) {
            sb_puts(out, " = ");
            tir_print_expr(out, s->e);
        }
        break;
    case TS_ASSIGN:
        sb_printf(out, "%s.%d = ", s->var->name, s->var->id);
        tir_print_expr(out, s->e);
        break;
    case TS_STORE:
        sb_printf(out, "%s[", s->buf->name);
        for (int i = 0; i < s->nidx; i++) {
            if (i)
                sb_puts(out, ", ");
            tir_print_expr(out, s->idx[i]);
        }
        sb_puts(out, "]");
        if (s->align)
            sb_printf(out, "{align %d}", s->align);
        sb_puts(out, " = ");
        tir_print_expr(out, s->e);
        break;
    case TS_EVAL: tir_print_expr(out, s->e); break;
    case TS_IF:
        sb_puts(out, "if ");
        tir_print_expr(out, s->e);
        sb_puts(out, " {\n");
        print_list(out, s->body, s->nbody, ind + 1);
        indent(out, ind);
        if (s->nels) {
            sb_puts(out, "} else {\n");
            print_list(out, s->els, s->nels, ind + 1);
            indent(out, ind);
        }
        sb_puts(out, "}\n");
        return;
    case TS_FOR:
        sb_printf(out, "for%s %s.%d in ", s->for_kind == FOR_UNROLL ? " unroll" : s->for_kind == FOR_PIPELINED ? " pipelined" : "",
                  s->var->name, s->var->id);
        tir_print_expr(out, s->lo);
        sb_puts(out, " .. ");
        tir_print_expr(out, s->hi);
        if (s->step) {
            sb_puts(out, " step ");
            tir_print_expr(out, s->step);
        }
        if (s->for_kind == FOR_PIPELINED)
            sb_printf(out, " stages %d", s->stages);
        sb_puts(out, " {\n");
        print_list(out, s->body, s->nbody, ind + 1);
        indent(out, ind);
        sb_puts(out, "}\n");
        return;
    case TS_WHILE:
        sb_puts(out, "while ");
        tir_print_expr(out, s->e);
        sb_puts(out, " {\n");
        print_list(out, s->body, s->nbody, ind + 1);
        indent(out, ind);
        sb_puts(out, "}\n");
        return;
    case TS_BREAK: sb_puts(out, "break"); break;
    case TS_CONTINUE: sb_puts(out, "continue"); break;
    case TS_RETURN: sb_puts(out, "return"); break;
    case TS_BLOCK:
        sb_printf(out, "block L%d {\n", s->label);
        print_list(out, s->body, s->nbody, ind + 1);
        indent(out, ind);
        sb_puts(out, "}\n");
        return;
    case TS_EXIT: sb_printf(out, "exit L%d", s->label); break;
    case TS_BARRIER: sb_puts(out, "barrier"); break;
    case TS_VLOAD:
    case TS_VSTORE: {
        bool ld = s->kind == TS_VLOAD;
        if (ld)
            sb_printf(out, "%s[%d:%d] = ", s->regs->name, s->roff, s->roff + s->vec);
        sb_printf(out, "%s[", s->buf->name);
        for (int i = 0; i < s->nidx; i++) {
            if (i)
                sb_puts(out, ", ");
            tir_print_expr(out, s->idx[i]);
        }
        sb_printf(out, " :+%d]{align %d}", s->vec, s->align);
        if (!ld)
            sb_printf(out, " = %s[%d:%d]", s->regs->name, s->roff, s->roff + s->vec);
        break;
    }
    case TS_INTRIN:
        for (int i = 0; i < s->nidx; i++) {
            sb_puts(out, i ? ", " : "(");
            tir_print_expr(out, s->idx[i]);
        }
        if (s->nidx)
            sb_puts(out, ") = ");
        tir_print_expr(out, s->e);
        if (s->e->builtin == TI_LDMATRIX)
            sb_printf(out, " x%d%s", (int)(s->e->ival >> 1), s->e->ival & 1 ? " trans" : "");
        else if (s->e->builtin == TI_MMA)
            sb_printf(out, " %s", dtype_name((DType)s->e->ival));
        else if (s->e->builtin != TI_CP_COMMIT)
            sb_printf(out, " %lld", (long long)s->e->ival);
        break;
    case TS_COPY:
        sb_puts(out, "copy ");
        print_region(out, &s->src);
        sb_puts(out, " -> ");
        print_region(out, &s->dst);
        if (s->other) {
            sb_puts(out, " other ");
            tir_print_expr(out, s->other);
        }
        if (s->no_split)
            sb_puts(out, " nosplit");
        break;
    case TS_FILL:
        sb_puts(out, "fill ");
        print_region(out, &s->dst);
        sb_puts(out, " = ");
        tir_print_expr(out, s->e);
        break;
    case TS_REDUCE:
        sb_printf(out, "reduce_%s ", red_name(s->red));
        print_region(out, &s->src);
        sb_puts(out, " -> ");
        print_region(out, &s->dst);
        sb_printf(out, " dim %d", s->dim);
        if (s->group)
            sb_printf(out, " group %d", s->group);
        if (!s->clear)
            sb_puts(out, " accumulate");
        break;
    case TS_CUMSUM:
        sb_puts(out, "cumsum ");
        print_region(out, &s->src);
        sb_puts(out, " -> ");
        print_region(out, &s->dst);
        sb_printf(out, " dim %d%s", s->dim, s->exclusive ? " exclusive" : "");
        break;
    case TS_GEMM:
        sb_puts(out, "gemm ");
        print_region(out, &s->src);
        sb_puts(out, s->trans_a ? "^T x " : " x ");
        print_region(out, &s->dst);
        sb_puts(out, s->trans_b ? "^T -> " : " -> ");
        print_region(out, &s->c);
        break;
    case TS_PARALLEL:
        sb_puts(out, "parallel (");
        for (int i = 0; i < s->npvars; i++)
            sb_printf(out, "%s%s.%d", i ? ", " : "", s->pvars[i]->name, s->pvars[i]->id);
        sb_printf(out, ") in %s {\n", s->ptile->name);
        print_list(out, s->body, s->nbody, ind + 1);
        indent(out, ind);
        sb_puts(out, "}\n");
        return;
    }
    sb_puts(out, "\n");
}

void layout_print(StrBuf *out, const Layout *l)
{
    sb_printf(out, "layout(regs %d, vec %d:", l->nregs, l->vec);
    for (int i = 0; i < l->nmodes; i++) {
        const LMode *m = &l->modes[i];
        if (m->dim < 0)
            sb_printf(out, " %s%d/%d->rep", m->thread ? "t" : "r", m->size, m->div);
        else
            sb_printf(out, " %s%d/%d->d%d*%lld", m->thread ? "t" : "r", m->size, m->div, m->dim, (long long)m->stride);
    }
    sb_puts(out, ")");
}

void tir_print(StrBuf *out, const TKernel *k)
{
    sb_printf(out, "kernel %s threads(%d)", k->key, k->nthreads);
    if (k->blocks_per_sm)
        sb_printf(out, " blocks_per_sm(%d)", k->blocks_per_sm);
    if (k->smem_bytes)
        sb_printf(out, " smem(%lld)", (long long)k->smem_bytes);
    sb_puts(out, "\n");
    for (int i = 0; i < k->nbufs; i++) {
        const TBuf *b = k->bufs[i];
        sb_printf(out, "  %s %s: %s[", scope_name(b->scope), b->name, dtype_name(b->dt));
        for (int d = 0; d < b->rank; d++) {
            if (d)
                sb_puts(out, ", ");
            if (b->shape[d] >= 0)
                sb_printf(out, "%lld", (long long)b->shape[d]);
            else
                tir_print_expr(out, b->gdim[d]);
        }
        sb_puts(out, "]");
        if (b->scope == SC_GLOBAL) {
            sb_puts(out, " strides(");
            for (int d = 0; d < b->rank; d++) {
                if (d)
                    sb_puts(out, ", ");
                tir_print_expr(out, b->gstride[d]);
            }
            sb_printf(out, ") align %d%s", b->align, b->written ? " written" : "");
            if (b->param >= 0)
                sb_printf(out, " param %d", b->param);
            if (b->list_cap)
                sb_printf(out, " list max %d", b->list_cap);
            if (b->list) {
                sb_printf(out, " element ");
                tir_print_expr(out, b->list_index);
                sb_printf(out, " of list %d", b->list->param);
            }
        }
        if (b->scope == SC_SHARED && (b->row_pad || b->smem_offset))
            sb_printf(out, " pad %lld @%lld", (long long)b->row_pad, (long long)b->smem_offset);
        if (b->scope == SC_SHARED && b->swizzle)
            sb_printf(out, " swizzle %s%d", b->swizzle_gemm ? "gemm " : "", b->swizzle);
        if (b->layout) {
            sb_puts(out, " ");
            layout_print(out, b->layout);
        }
        sb_puts(out, "\n");
    }
    print_stmt(out, k->body, 0);
}
