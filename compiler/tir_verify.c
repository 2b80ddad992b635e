/* tir_verify.c — structural checks of the tile IR, run after every pass of every compile
 * (compile.c's run_pass, in release builds too, and tirsim in the tests): operand types agree,
 * variables are declared before use, indices match ranks, exits/breaks have targets, and from
 * the stage after lower_tiles on, no tile operation or frag access is left. A failure is an
 * internal compiler error naming the pass that produced the IR. */
#include "tir.h"

#include <stdlib.h>

typedef struct Verifier {
    TKernel *k;
    TirStage stage;
    bool lowered;         /* after lower_tiles: thread-level code only */
    bool ok;
    unsigned char *declared; /* by var id */
    int nids;
    int loops;
    int labels[256];
    int nlabels;
} Verifier;

static void fail(Verifier *v, const char *what)
{
    if (v->ok)
        diag_ice(v->k->diag, tir_stage_name(v->stage), "tile IR is malformed: %s (kernel %s)", what, v->k->key);
    v->ok = false;
}

static void check_expr(Verifier *v, const TExpr *e)
{
    if (!e) {
        fail(v, "missing expression");
        return;
    }
    switch (e->kind) {
    case TX_VAR:
        if (e->var->id >= v->nids || !v->declared[e->var->id])
            fail(v, "variable used before its declaration");
        break;
    case TX_BIN:
        check_expr(v, e->a);
        check_expr(v, e->b);
        if (e->op != OP_SHL && e->op != OP_SHR && e->a->dt != e->b->dt)
            fail(v, "binary operands of different types");
        break;
    case TX_UN: check_expr(v, e->a); break;
    case TX_SELECT:
        check_expr(v, e->a);
        check_expr(v, e->b);
        check_expr(v, e->c);
        if (e->a->dt != DT_BOOL || e->b->dt != e->c->dt)
            fail(v, "select with a non-bool condition or mismatched arms");
        break;
    case TX_CVT:
    case TX_BITCAST: check_expr(v, e->a); break;
    case TX_LOAD:
        if (e->nargs != e->buf->rank)
            fail(v, "load with the wrong number of indices");
        if (v->lowered && e->buf->scope == SC_FRAG)
            fail(v, "frag element access after lower_tiles");
        for (int i = 0; i < e->nargs; i++)
            check_expr(v, e->args[i]);
        break;
    case TX_CALL:
        for (int i = 0; i < e->nargs; i++)
            check_expr(v, e->args[i]);
        break;
    default: break;
    }
}

static void check_list(Verifier *v, TStmt **s, int n);

static void check_stmt(Verifier *v, const TStmt *s)
{
    switch (s->kind) {
    case TS_SEQ: check_list(v, s->body, s->nbody); break;
    case TS_DECL:
        if (s->e)
            check_expr(v, s->e);
        if (s->var->id < v->nids)
            v->declared[s->var->id] = 1;
        if (s->e && s->e->dt != s->var->dt)
            fail(v, "declaration initialised with a value of another type");
        break;
    case TS_ASSIGN:
        check_expr(v, s->e);
        if (!s->var->mutable_)
            fail(v, "assignment to an immutable variable");
        if (s->var->id >= v->nids || !v->declared[s->var->id])
            fail(v, "assignment before declaration");
        if (s->e->dt != s->var->dt)
            fail(v, "assignment of a value of another type");
        break;
    case TS_STORE:
        if (s->nidx != s->buf->rank)
            fail(v, "store with the wrong number of indices");
        if (v->lowered && s->buf->scope == SC_FRAG)
            fail(v, "frag element store after lower_tiles");
        for (int i = 0; i < s->nidx; i++)
            check_expr(v, s->idx[i]);
        check_expr(v, s->e);
        break;
    case TS_EVAL: check_expr(v, s->e); break;
    case TS_IF:
        check_expr(v, s->e);
        if (s->e->dt != DT_BOOL)
            fail(v, "if condition is not bool");
        check_list(v, s->body, s->nbody);
        check_list(v, s->els, s->nels);
        break;
    case TS_FOR:
        check_expr(v, s->lo);
        check_expr(v, s->hi);
        if (s->var->id < v->nids)
            v->declared[s->var->id] = 1;
        v->loops++;
        check_list(v, s->body, s->nbody);
        v->loops--;
        break;
    case TS_WHILE:
        check_expr(v, s->e);
        v->loops++;
        check_list(v, s->body, s->nbody);
        v->loops--;
        break;
    case TS_BREAK:
    case TS_CONTINUE:
        if (!v->loops)
            fail(v, "break/continue outside a loop");
        break;
    case TS_BLOCK:
        if (v->nlabels < 256)
            v->labels[v->nlabels++] = s->label;
        check_list(v, s->body, s->nbody);
        v->nlabels--;
        break;
    case TS_EXIT: {
        bool found = false;
        for (int i = 0; i < v->nlabels; i++)
            if (v->labels[i] == s->label)
                found = true;
        if (!found)
            fail(v, "exit from a block that does not enclose it");
        break;
    }
    case TS_VLOAD:
    case TS_VSTORE:
        for (int i = 0; i < s->nidx; i++)
            check_expr(v, s->idx[i]);
        if (s->roff + s->vec > s->regs->shape[0])
            fail(v, "vector access past the end of its register array");
        break;
    case TS_INTRIN:
        if (!s->e || s->e->kind != TX_CALL || s->e->builtin <= TI_FIRST) {
            fail(v, "target instruction without its call");
            break;
        }
        check_expr(v, s->e);
        for (int i = 0; i < s->nidx; i++) {
            const TExpr *o = s->idx[i];
            int64_t r;
            if (o->kind != TX_LOAD || o->buf->scope != SC_LOCAL || o->nargs != 1 || !tx_is_const(o->args[0], &r) || r < 0 ||
                r >= o->buf->shape[0])
                fail(v, "a result of a target instruction is not a register-array element");
        }
        break;
    case TS_COPY:
    case TS_FILL:
    case TS_REDUCE:
    case TS_CUMSUM:
    case TS_GEMM:
        if (v->lowered)
            fail(v, "tile operation left after lower_tiles");
        if (s->kind == TS_FILL)
            check_expr(v, s->e);
        break;
    case TS_PARALLEL:
        if (v->lowered)
            fail(v, "parallel loop left after lower_tiles");
        for (int i = 0; i < s->npvars; i++)
            if (s->pvars[i]->id < v->nids)
                v->declared[s->pvars[i]->id] = 1;
        check_list(v, s->body, s->nbody);
        break;
    default: break;
    }
}

static void check_list(Verifier *v, TStmt **s, int n)
{
    for (int i = 0; i < n; i++)
        check_stmt(v, s[i]);
}

const char *tir_stage_name(TirStage s)
{
    static const char *const names[] = {
#define TIR_STAGE_NAME(id, name) [TIR_AFTER_##id] = name,
        TIR_STAGES(TIR_STAGE_NAME)
#undef TIR_STAGE_NAME
    };
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

bool tir_verify(TKernel *k, TirStage after)
{
    Verifier v = {0};
    v.k = k;
    v.stage = after;
    v.ok = true;
    v.lowered = after >= TIR_AFTER_LOWER_TILES;
    v.nids = k->next_id;
    v.declared = tl_xcalloc((size_t)v.nids + 1, 1);
    check_stmt(&v, k->body);
    free(v.declared);
    return v.ok;
}
