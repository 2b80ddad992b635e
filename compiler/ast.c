/* ast.c — node constructors and the `--stage=ast` printer (one S-expression per node). */
#include "ast.h"

#include <stdio.h>
#include <string.h>

Expr *ast_expr(Arena *a, ExprKind k, Loc loc)
{
    Expr *e = ARENA_NEW(a, Expr);
    e->kind = k;
    e->loc = loc;
    e->depth = 1;
    e->height = 1;
    return e;
}

Stmt *ast_stmt(Arena *a, StmtKind k, Loc loc)
{
    Stmt *s = ARENA_NEW(a, Stmt);
    s->kind = k;
    s->loc = loc;
    s->depth = 1;
    return s;
}

Item *ast_item(Arena *a, ItemKind k, Loc loc)
{
    Item *it = ARENA_NEW(a, Item);
    it->kind = k;
    it->loc = loc;
    return it;
}

TypeExpr *ast_type(Arena *a, TypeExprKind k, Loc loc)
{
    TypeExpr *t = ARENA_NEW(a, TypeExpr);
    t->kind = k;
    t->loc = loc;
    return t;
}

void exprlist_push(Arena *a, ExprList *l, Expr *e)
{
    /* lists are short; grow by copying into the arena at powers of two */
    if ((l->n & (l->n - 1)) == 0) {
        int cap = l->n ? l->n * 2 : 2;
        Expr **v = ARENA_ARRAY(a, Expr *, cap);
        if (l->n)
            memcpy(v, l->v, sizeof(Expr *) * (size_t)l->n);
        l->v = v;
    }
    l->v[l->n++] = e;
}

void stmtlist_push(Arena *a, StmtList *l, Stmt *s)
{
    if ((l->n & (l->n - 1)) == 0) {
        int cap = l->n ? l->n * 2 : 2;
        Stmt **v = ARENA_ARRAY(a, Stmt *, cap);
        if (l->n)
            memcpy(v, l->v, sizeof(Stmt *) * (size_t)l->n);
        l->v = v;
    }
    l->v[l->n++] = s;
}

const char *op_spelling(OpKind op)
{
    switch (op) {
    case OP_ADD: return "+";
    case OP_SUB: return "-";
    case OP_MUL: return "*";
    case OP_DIV: return "/";
    case OP_MOD: return "%";
    case OP_SHL: return "<<";
    case OP_SHR: return ">>";
    case OP_BAND: return "&";
    case OP_BOR: return "|";
    case OP_BXOR: return "^";
    case OP_EQ: return "==";
    case OP_NE: return "!=";
    case OP_LT: return "<";
    case OP_LE: return "<=";
    case OP_GT: return ">";
    case OP_GE: return ">=";
    case OP_LAND: return "&&";
    case OP_LOR: return "||";
    case OP_NEG: return "-";
    case OP_NOT: return "!";
    case OP_BNOT: return "~";
    default: return "?";
    }
}

const char *generic_kind_name(GenericKind k)
{
    switch (k) {
    case GK_INT: return "int";
    case GK_BOOL: return "bool";
    case GK_FLOAT: return "float";
    case GK_TYPE: return "type";
    }
    return "?";
}

static void print_string(StrBuf *out, const char *s)
{
    sb_puts(out, "\"");
    for (; *s; s++) {
        switch (*s) {
        case '\n': sb_puts(out, "\\n"); break;
        case '\t': sb_puts(out, "\\t"); break;
        case '"': sb_puts(out, "\\\""); break;
        case '\\': sb_puts(out, "\\\\"); break;
        default: sb_append(out, s, 1);
        }
    }
    sb_puts(out, "\"");
}

static void print_list(StrBuf *out, ExprList l)
{
    for (int i = 0; i < l.n; i++) {
        sb_puts(out, " ");
        ast_print_expr(out, l.v[i]);
    }
}

void ast_print_expr(StrBuf *out, const Expr *e)
{
    if (!e) {
        sb_puts(out, "_");
        return;
    }
    switch (e->kind) {
    case EX_INT: sb_printf(out, "%lld", (long long)e->ival); break;
    case EX_FLOAT: {
        char buf[64];
        snprintf(buf, sizeof buf, "%.17g", e->fval);
        if (!strpbrk(buf, ".eEn"))
            strcat(buf, ".0");
        sb_puts(out, buf);
        break;
    }
    case EX_BOOL: sb_puts(out, e->bval ? "true" : "false"); break;
    case EX_STRING: print_string(out, e->str); break;
    case EX_NAME: sb_puts(out, e->str); break;
    case EX_TYPE: sb_puts(out, dtype_name(e->prim)); break;
    case EX_UNARY:
        sb_printf(out, "(%s ", op_spelling(e->op));
        ast_print_expr(out, e->a);
        sb_puts(out, ")");
        break;
    case EX_BINARY:
        sb_printf(out, "(%s ", op_spelling(e->op));
        ast_print_expr(out, e->a);
        sb_puts(out, " ");
        ast_print_expr(out, e->b);
        sb_puts(out, ")");
        break;
    case EX_TERNARY: break;
    case EX_CALL:
        sb_puts(out, "(call ");
        ast_print_expr(out, e->a);
        if (e->targs.n) {
            sb_puts(out, " (targs");
            print_list(out, e->targs);
            sb_puts(out, ")");
        }
        for (int i = 0; i < e->args.n; i++) {
            sb_puts(out, " ");
            if (e->arg_names && e->arg_names[i])
                sb_printf(out, "%s=", e->arg_names[i]);
            ast_print_expr(out, e->args.v[i]);
        }
        sb_puts(out, ")");
        break;
    case EX_INDEX:
        sb_puts(out, "(index ");
        ast_print_expr(out, e->a);
        print_list(out, e->args);
        sb_puts(out, ")");
        break;
    case EX_MEMBER:
        ast_print_expr(out, e->a);
        sb_printf(out, ".%s", e->str);
        break;
    case EX_SLICE:
        sb_puts(out, "(: ");
        ast_print_expr(out, e->a);
        sb_puts(out, " ");
        ast_print_expr(out, e->b);
        sb_puts(out, ")");
        break;
    case EX_LIST:
        sb_puts(out, "(list");
        print_list(out, e->args);
        sb_puts(out, ")");
        break;
    }
}

void ast_print_type(StrBuf *out, const TypeExpr *t)
{
    if (!t) {
        sb_puts(out, "_");
        return;
    }
    switch (t->kind) {
    case TE_PRIM: sb_puts(out, dtype_name(t->prim)); break;
    case TE_NAMED: sb_puts(out, t->name); break;
    case TE_TENSOR:
        sb_puts(out, "(tensor ");
        ast_print_type(out, t->elem);
        sb_puts(out, " [");
        for (int i = 0; i < t->dims.n; i++) {
            if (i)
                sb_puts(out, " ");
            ast_print_expr(out, t->dims.v[i]);
        }
        sb_puts(out, "]");
        if (t->strides.n) {
            sb_puts(out, " strides [");
            for (int i = 0; i < t->strides.n; i++) {
                if (i)
                    sb_puts(out, " ");
                ast_print_expr(out, t->strides.v[i]);
            }
            sb_puts(out, "]");
        }
        if (t->optional)
            sb_puts(out, " optional");
        sb_puts(out, ")");
        break;
    case TE_TILE:
        sb_printf(out, "(tile %s ", scope_name(t->scope));
        ast_print_type(out, t->elem);
        sb_puts(out, " [");
        for (int i = 0; i < t->dims.n; i++) {
            if (i)
                sb_puts(out, " ");
            ast_print_expr(out, t->dims.v[i]);
        }
        sb_puts(out, "])");
        break;
    case TE_LIST:
        sb_puts(out, "(list ");
        ast_print_type(out, t->elem);
        sb_puts(out, " ");
        ast_print_expr(out, t->len);
        if (t->cap) {
            sb_printf(out, " %s ", t->cap_name);
            ast_print_expr(out, t->cap);
        }
        sb_puts(out, ")");
        break;
    case TE_TUPLE:
        sb_puts(out, "(tuple");
        for (int i = 0; i < t->nelems; i++) {
            sb_puts(out, " ");
            ast_print_type(out, t->elems[i]);
        }
        sb_puts(out, ")");
        break;
    }
}

static void indent(StrBuf *out, int n)
{
    for (int i = 0; i < n; i++)
        sb_puts(out, "  ");
}

static void print_stmts(StrBuf *out, StmtList l, int ind);

static void print_stmt(StrBuf *out, const Stmt *s, int ind)
{
    indent(out, ind);
    switch (s->kind) {
    case ST_BLOCK:
        sb_puts(out, "(block\n");
        print_stmts(out, s->body, ind + 1);
        indent(out, ind);
        sb_puts(out, ")");
        break;
    case ST_LET:
        sb_puts(out, "(let");
        for (int i = 0; i < s->nnames; i++)
            sb_printf(out, " %s", s->names[i].s);
        if (s->ty) {
            sb_puts(out, " : ");
            ast_print_type(out, s->ty);
        }
        sb_puts(out, " ");
        ast_print_expr(out, s->e);
        sb_puts(out, ")");
        break;
    case ST_VAR:
        sb_printf(out, "(var %s", s->names[0].s);
        if (s->ty) {
            sb_puts(out, " : ");
            ast_print_type(out, s->ty);
        }
        if (s->e) {
            sb_puts(out, " ");
            ast_print_expr(out, s->e);
        }
        sb_puts(out, ")");
        break;
    case ST_STORAGE:
        sb_printf(out, "(%s %s ", scope_name(s->scope), s->names[0].s);
        ast_print_type(out, s->ty);
        sb_puts(out, " [");
        for (int i = 0; i < s->dims.n; i++) {
            if (i)
                sb_puts(out, " ");
            ast_print_expr(out, s->dims.v[i]);
        }
        sb_puts(out, "]");
        if (s->has_layout) {
            sb_puts(out, " (layout");
            for (int i = 0; i < s->layout_args.n; i++) {
                sb_printf(out, " %s=", s->layout_names[i]);
                ast_print_expr(out, s->layout_args.v[i]);
            }
            sb_puts(out, ")");
        }
        sb_puts(out, ")");
        break;
    case ST_ASSIGN:
        sb_printf(out, "(%s%s ", s->assign_op == OP_NONE ? "" : op_spelling(s->assign_op), "=");
        ast_print_expr(out, s->lhs);
        sb_puts(out, " ");
        ast_print_expr(out, s->e);
        sb_puts(out, ")");
        break;
    case ST_EXPR:
        ast_print_expr(out, s->e);
        break;
    case ST_IF:
        sb_puts(out, s->is_const ? "(if-const " : "(if ");
        ast_print_expr(out, s->e);
        sb_puts(out, "\n");
        print_stmts(out, s->body, ind + 1);
        if (s->has_else) {
            indent(out, ind);
            sb_puts(out, " else\n");
            print_stmts(out, s->els, ind + 1);
        }
        indent(out, ind);
        sb_puts(out, ")");
        break;
    case ST_FOR:
        if (s->for_kind == FOR_TILE) {
            sb_puts(out, "(for-tile");
            for (int i = 0; i < s->nnames; i++)
                sb_printf(out, " %s", s->names[i].s);
            sb_puts(out, "\n");
            print_stmts(out, s->body, ind + 1);
            indent(out, ind);
            sb_puts(out, ")");
            break;
        }
        sb_printf(out, "(for%s %s ", s->for_kind == FOR_UNROLL ? "-unroll" : s->for_kind == FOR_PIPELINED ? "-pipelined" : "",
                  s->names[0].s);
        if (s->stages) {
            sb_puts(out, "stages=");
            ast_print_expr(out, s->stages);
            sb_puts(out, " ");
        }
        ast_print_expr(out, s->lo);
        sb_puts(out, " ");
        ast_print_expr(out, s->hi);
        if (s->step) {
            sb_puts(out, " step=");
            ast_print_expr(out, s->step);
        }
        sb_puts(out, "\n");
        print_stmts(out, s->body, ind + 1);
        indent(out, ind);
        sb_puts(out, ")");
        break;
    case ST_WHILE:
        sb_puts(out, "(while ");
        ast_print_expr(out, s->e);
        sb_puts(out, "\n");
        print_stmts(out, s->body, ind + 1);
        indent(out, ind);
        sb_puts(out, ")");
        break;
    case ST_PARALLEL:
        sb_puts(out, "(parallel (");
        for (int i = 0; i < s->nnames; i++)
            sb_printf(out, "%s%s", i ? " " : "", s->names[i].s);
        sb_printf(out, ") %s\n", s->target.s);
        print_stmts(out, s->body, ind + 1);
        indent(out, ind);
        sb_puts(out, ")");
        break;
    case ST_RETURN:
        sb_puts(out, "(return");
        if (s->e) {
            sb_puts(out, " ");
            ast_print_expr(out, s->e);
        }
        sb_puts(out, ")");
        break;
    case ST_BREAK: sb_puts(out, "(break)"); break;
    case ST_CONTINUE: sb_puts(out, "(continue)"); break;
    case ST_REQUIRE:
        sb_puts(out, "(require ");
        ast_print_expr(out, s->e);
        if (s->msg) {
            sb_puts(out, " ");
            print_string(out, s->msg);
        }
        sb_puts(out, ")");
        break;
    }
    sb_puts(out, "\n");
}

static void print_stmts(StrBuf *out, StmtList l, int ind)
{
    for (int i = 0; i < l.n; i++)
        print_stmt(out, l.v[i], ind);
}

static void print_generics(StrBuf *out, const Item *it)
{
    if (!it->ngenerics)
        return;
    sb_puts(out, "  (generics");
    for (int i = 0; i < it->ngenerics; i++) {
        sb_printf(out, " (%s %s", it->generics[i].name.s, generic_kind_name(it->generics[i].kind));
        if (it->generics[i].deflt) {
            sb_puts(out, " = ");
            ast_print_expr(out, it->generics[i].deflt);
        }
        sb_puts(out, ")");
    }
    sb_puts(out, ")\n");
}

static void print_params(StrBuf *out, const Item *it)
{
    sb_puts(out, "  (params");
    for (int i = 0; i < it->nparams; i++) {
        sb_printf(out, "\n    (%s ", it->params[i].name.s);
        ast_print_type(out, it->params[i].ty);
        sb_puts(out, ")");
    }
    sb_puts(out, ")\n");
}

void ast_print_module(StrBuf *out, const Module *m)
{
    for (int i = 0; i < m->nitems; i++) {
        const Item *it = m->items[i];
        switch (it->kind) {
        case IT_IMPORT:
            sb_puts(out, "(import ");
            print_string(out, it->path);
            sb_puts(out, ")\n");
            break;
        case IT_CONST:
            sb_printf(out, "(const %s", it->name.s);
            if (it->ty) {
                sb_puts(out, " : ");
                ast_print_type(out, it->ty);
            }
            sb_puts(out, " ");
            ast_print_expr(out, it->value);
            sb_puts(out, ")\n");
            break;
        case IT_FN:
        case IT_KERNEL:
            sb_printf(out, "(%s %s\n", it->kind == IT_FN ? "fn" : "kernel", it->name.s);
            if (it->doc) {
                sb_puts(out, "  (doc ");
                print_string(out, it->doc);
                sb_puts(out, ")\n");
            }
            print_generics(out, it);
            print_params(out, it);
            if (it->kind == IT_FN && it->ret) {
                sb_puts(out, "  (returns ");
                ast_print_type(out, it->ret);
                sb_puts(out, ")\n");
            }
            if (it->kind == IT_KERNEL) {
                sb_puts(out, "  (launch ");
                if (it->launch.persistent) {
                    sb_puts(out, "(persistent (tiles");
                    print_list(out, it->launch.tiles);
                    sb_puts(out, ")");
                    if (it->launch.waves) {
                        sb_puts(out, " (waves ");
                        ast_print_expr(out, it->launch.waves);
                        sb_puts(out, ")");
                    }
                    if (it->launch.stages) {
                        sb_puts(out, " (stages ");
                        ast_print_expr(out, it->launch.stages);
                        sb_puts(out, ")");
                    }
                    sb_puts(out, ") ");
                }
                sb_puts(out, "(grid");
                print_list(out, it->launch.grid);
                sb_puts(out, ") (threads ");
                ast_print_expr(out, it->launch.threads);
                sb_puts(out, ")");
                if (it->launch.cluster.n) {
                    sb_puts(out, " (cluster");
                    print_list(out, it->launch.cluster);
                    sb_puts(out, ")");
                }
                if (it->launch.cooperative)
                    sb_puts(out, " cooperative");
                if (it->launch.pdl)
                    sb_puts(out, " pdl");
                if (it->launch.blocks_per_sm) {
                    sb_puts(out, " (blocks_per_sm ");
                    ast_print_expr(out, it->launch.blocks_per_sm);
                    sb_puts(out, ")");
                }
                sb_puts(out, ")\n");
            }
            sb_puts(out, "  (body\n");
            print_stmts(out, it->body, 2);
            sb_puts(out, "  ))\n");
            break;
        case IT_SPECIALIZE:
            sb_printf(out, "(specialize %s", it->name.s);
            for (int j = 0; j < it->nsargs; j++) {
                sb_printf(out, " (%s", it->sargs[j].name.s);
                print_list(out, it->sargs[j].values);
                sb_puts(out, ")");
            }
            sb_puts(out, ")\n");
            break;
        }
    }
}

/* deep copies, used to instantiate fn bodies per call site */
static ExprList clone_list(Arena *a, ExprList l)
{
    ExprList r = {0};
    for (int i = 0; i < l.n; i++)
        exprlist_push(a, &r, ast_clone_expr(a, l.v[i]));
    return r;
}

Expr *ast_clone_expr(Arena *a, const Expr *e)
{
    if (!e)
        return NULL;
    Expr *c = ARENA_NEW(a, Expr);
    *c = *e;
    c->type = NULL;
    c->sym = NULL;
    c->inl = NULL;
    memset(&c->cv, 0, sizeof c->cv);
    c->a = ast_clone_expr(a, e->a);
    c->b = ast_clone_expr(a, e->b);
    c->c = ast_clone_expr(a, e->c);
    c->args = clone_list(a, e->args);
    c->targs = clone_list(a, e->targs);
    return c;
}

/* ---- the grid of a persistent launch ---- */
static Expr *syn(Arena *a, ExprKind k, Loc loc, int depth)
{
    Expr *e = ast_expr(a, k, loc);
    e->depth = depth;
    return e;
}

static Expr *syn_int(Arena *a, int64_t v, Loc loc)
{
    Expr *e = syn(a, EX_INT, loc, 1);
    e->ival = v;
    return e;
}

static Expr *syn_bin(Arena *a, OpKind op, Expr *x, Expr *y)
{
    Expr *e = syn(a, EX_BINARY, x->loc, 1 + (x->depth > y->depth ? x->depth : y->depth));
    e->op = op;
    e->a = x;
    e->b = y;
    return e;
}

/* a call of a builtin by name (`min`, `max`, `select`, `num_sms` are not keywords) */
static Expr *syn_call(Arena *a, const char *fname, Loc loc, Expr *x, Expr *y, Expr *z)
{
    Expr *e = syn(a, EX_CALL, loc, 1);
    e->a = syn(a, EX_NAME, loc, 1);
    e->a->str = fname;
    Expr *args[3] = {x, y, z};
    for (int i = 0; i < 3 && args[i]; i++) {
        exprlist_push(a, &e->args, args[i]);
        if (args[i]->depth >= e->depth)
            e->depth = args[i]->depth + 1;
    }
    e->arg_names = ARENA_ARRAY(a, const char *, 3);
    return e;
}

/* The grid: with stages > 0, min(T0 * T1 * T2, num_sms * waves) blocks in one dimension (the
 * blocks walk the tiles); with stages = 0, (T0, T1, T2), a block per tile. An expression for the
 * stages becomes select(stages > 0, ..., ...) in each dimension, decided per specialisation.
 * The counts are copies: the launch is checked on the host's terms and the tile loop on the
 * device's, each annotating its own nodes. */
void ast_expand_persistent(Arena *a, Launch *l)
{
    memset(&l->grid, 0, sizeof l->grid);
    if (l->tiles.n < 1 || l->tiles.n > 3)
        return; /* reported by sema */
    Loc loc = l->tiles.v[0]->loc;
    Expr *count = ast_clone_expr(a, l->tiles.v[0]);
    for (int i = 1; i < l->tiles.n; i++)
        count = syn_bin(a, OP_MUL, count, ast_clone_expr(a, l->tiles.v[i]));
    Expr *waves = l->waves ? ast_clone_expr(a, l->waves)
                  : l->blocks_per_sm ? syn_call(a, "max", l->blocks_per_sm->loc, ast_clone_expr(a, l->blocks_per_sm),
                                                syn_int(a, 1, l->blocks_per_sm->loc), NULL)
                                     : syn_int(a, 1, loc);
    Expr *sms = syn(a, EX_NAME, loc, 1);
    sms->str = "num_sms";
    Expr *walk = syn_call(a, "min", loc, count, syn_bin(a, OP_MUL, sms, waves), NULL);
    const Expr *st = l->stages;
    if (!st || (st->kind == EX_INT && st->ival > 0)) {
        exprlist_push(a, &l->grid, walk);
        return;
    }
    for (int i = 0; i < l->tiles.n; i++) {
        Expr *one = ast_clone_expr(a, l->tiles.v[i]);
        if (st->kind == EX_INT) { /* 0 */
            exprlist_push(a, &l->grid, one);
            continue;
        }
        Expr *cond = syn_bin(a, OP_GT, ast_clone_expr(a, st), syn_int(a, 0, st->loc));
        Expr *walking = i == 0 ? walk : syn_int(a, 1, one->loc);
        exprlist_push(a, &l->grid, syn_call(a, "select", one->loc, cond, walking, one));
    }
}

static Stmt *clone_stmt(Arena *a, const Stmt *s)
{
    Stmt *c = ARENA_NEW(a, Stmt);
    *c = *s;
    c->sym = NULL;
    c->syms = NULL;
    c->body = ast_clone_stmts(a, s->body);
    c->els = ast_clone_stmts(a, s->els);
    if (s->nnames) {
        c->names = ARENA_ARRAY(a, Name, s->nnames);
        memcpy(c->names, s->names, sizeof(Name) * (size_t)s->nnames);
        for (int i = 0; i < s->nnames; i++)
            c->names[i].sym = NULL;
    }
    c->dims = clone_list(a, s->dims);
    c->layout_args = clone_list(a, s->layout_args);
    c->e = ast_clone_expr(a, s->e);
    c->lhs = ast_clone_expr(a, s->lhs);
    c->lo = ast_clone_expr(a, s->lo);
    c->hi = ast_clone_expr(a, s->hi);
    c->step = ast_clone_expr(a, s->step);
    c->stages = ast_clone_expr(a, s->stages);
    return c;
}

StmtList ast_clone_stmts(Arena *a, StmtList l)
{
    StmtList r = {0};
    for (int i = 0; i < l.n; i++)
        stmtlist_push(a, &r, clone_stmt(a, l.v[i]));
    return r;
}

/* ---- source-like printing, for `tilec list` and messages ---- */
static int prec(const Expr *e)
{
    if (e->kind != EX_BINARY)
        return 100;
    switch (e->op) {
    case OP_LOR: return 1;
    case OP_LAND: return 2;
    case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE: return 3;
    case OP_BOR: return 4;
    case OP_BXOR: return 5;
    case OP_BAND: return 6;
    case OP_SHL: case OP_SHR: return 7;
    case OP_ADD: case OP_SUB: return 8;
    default: return 9;
    }
}

void ast_print_src(StrBuf *out, const Expr *e)
{
    if (!e)
        return;
    switch (e->kind) {
    case EX_UNARY:
        sb_puts(out, op_spelling(e->op));
        if (prec(e->a) < 100)
            sb_puts(out, "(");
        ast_print_src(out, e->a);
        if (prec(e->a) < 100)
            sb_puts(out, ")");
        return;
    case EX_BINARY: {
        int p = prec(e);
        bool pa = prec(e->a) < p, pb = prec(e->b) <= p && prec(e->b) < 100;
        if (pa) sb_puts(out, "(");
        ast_print_src(out, e->a);
        if (pa) sb_puts(out, ")");
        sb_printf(out, " %s ", op_spelling(e->op));
        if (pb) sb_puts(out, "(");
        ast_print_src(out, e->b);
        if (pb) sb_puts(out, ")");
        return;
    }
    case EX_CALL:
        ast_print_src(out, e->a);
        if (e->targs.n) {
            sb_puts(out, "<");
            for (int i = 0; i < e->targs.n; i++) {
                if (i) sb_puts(out, ", ");
                ast_print_src(out, e->targs.v[i]);
            }
            sb_puts(out, ">");
        }
        sb_puts(out, "(");
        for (int i = 0; i < e->args.n; i++) {
            if (i) sb_puts(out, ", ");
            if (e->arg_names && e->arg_names[i])
                sb_printf(out, "%s = ", e->arg_names[i]);
            ast_print_src(out, e->args.v[i]);
        }
        sb_puts(out, ")");
        return;
    case EX_INDEX:
        ast_print_src(out, e->a);
        sb_puts(out, "[");
        for (int i = 0; i < e->args.n; i++) {
            if (i) sb_puts(out, ", ");
            ast_print_src(out, e->args.v[i]);
        }
        sb_puts(out, "]");
        return;
    case EX_SLICE:
        if (e->a) ast_print_src(out, e->a);
        sb_puts(out, e->a && e->b ? " : " : ":");
        if (e->b) ast_print_src(out, e->b);
        return;
    case EX_MEMBER:
        ast_print_src(out, e->a);
        sb_printf(out, ".%s", e->str);
        return;
    case EX_LIST:
        sb_puts(out, "[");
        for (int i = 0; i < e->args.n; i++) {
            if (i) sb_puts(out, ", ");
            ast_print_src(out, e->args.v[i]);
        }
        sb_puts(out, "]");
        return;
    default:
        ast_print_expr(out, e);
    }
}

void ast_print_type_src(StrBuf *out, const TypeExpr *t)
{
    switch (t->kind) {
    case TE_PRIM: sb_puts(out, dtype_name(t->prim)); break;
    case TE_NAMED: sb_puts(out, t->name); break;
    case TE_TUPLE:
        sb_puts(out, "(");
        for (int i = 0; i < t->nelems; i++) {
            if (i) sb_puts(out, ", ");
            ast_print_type_src(out, t->elems[i]);
        }
        sb_puts(out, ")");
        break;
    case TE_TENSOR:
        ast_print_type_src(out, t->elem);
        sb_puts(out, "[");
        for (int i = 0; i < t->dims.n; i++) {
            if (i) sb_puts(out, ", ");
            ast_print_src(out, t->dims.v[i]);
        }
        sb_puts(out, "]");
        if (t->strides.n) {
            sb_puts(out, " strides(");
            for (int i = 0; i < t->strides.n; i++) {
                if (i) sb_puts(out, ", ");
                ast_print_src(out, t->strides.v[i]);
            }
            sb_puts(out, ")");
        }
        if (t->optional)
            sb_puts(out, "?");
        break;
    case TE_TILE:
        sb_printf(out, "%s ", scope_name(t->scope));
        ast_print_type_src(out, t->elem);
        sb_puts(out, "[");
        for (int i = 0; i < t->dims.n; i++) {
            if (i) sb_puts(out, ", ");
            ast_print_src(out, t->dims.v[i]);
        }
        sb_puts(out, "]");
        break;
    case TE_LIST:
        sb_puts(out, "list<");
        ast_print_type_src(out, t->elem);
        sb_puts(out, ", ");
        ast_print_src(out, t->len);
        if (t->cap) {
            sb_printf(out, ", %s = ", t->cap_name);
            ast_print_src(out, t->cap);
        }
        sb_puts(out, ">");
        break;
    }
}
