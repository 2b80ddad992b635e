/* rt_expr.c — the prefix expressions of signatures: parsing (bounded in depth and size),
 * evaluation with C semantics on int64 or on doubles, without traps on any input, and an infix
 * rendering for error messages. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

/* prec: binding strength of the infix form; 0 for function-like operators. */
static const struct {
    const char *name;
    uint8_t min, max;
    const char *infix;
    int8_t prec;
} rt_ops[RT_NUM_OPS] = {
    [RT_OP_ADD] = {"+", 2, 255, "+", 6},
    [RT_OP_SUB] = {"-", 2, 2, "-", 6},
    [RT_OP_MUL] = {"*", 2, 255, "*", 7},
    [RT_OP_DIV] = {"/", 2, 2, "/", 7},
    [RT_OP_MOD] = {"%", 2, 2, "%", 7},
    [RT_OP_CDIV] = {"cdiv", 2, 2, NULL, 0},
    [RT_OP_ALIGN] = {"align", 2, 2, NULL, 0},
    [RT_OP_FLOORDIV] = {"floordiv", 2, 2, NULL, 0},
    [RT_OP_FLOORMOD] = {"floormod", 2, 2, NULL, 0},
    [RT_OP_MIN] = {"min", 2, 255, NULL, 0},
    [RT_OP_MAX] = {"max", 2, 255, NULL, 0},
    [RT_OP_EQ] = {"==", 2, 2, "==", 4},
    [RT_OP_NE] = {"!=", 2, 2, "!=", 4},
    [RT_OP_LT] = {"<", 2, 2, "<", 5},
    [RT_OP_LE] = {"<=", 2, 2, "<=", 5},
    [RT_OP_GT] = {">", 2, 2, ">", 5},
    [RT_OP_GE] = {">=", 2, 2, ">=", 5},
    [RT_OP_AND] = {"&&", 2, 255, "&&", 3},
    [RT_OP_OR] = {"||", 2, 255, "||", 2},
    [RT_OP_NOT] = {"!", 1, 1, "!", 8},
    [RT_OP_NEG] = {"neg", 1, 1, "-", 8},
    [RT_OP_SELECT] = {"select", 3, 3, NULL, 0},
};

/* ---- parsing ---- */

static void rt_skip_spaces(rt_expr_parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t'))
        ps->p++;
}

static int rt_is_delim(char c)
{
    return c == ' ' || c == '\t' || c == '(' || c == ')' || c == '"';
}

static tilec_status rt_perr(const rt_expr_parser *ps, const char *what, const char *tok, size_t n)
{
    return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "malformed signature, line %d: %s '%.*s'", ps->line, what,
                   (int)(n > 64 ? 64 : n), tok);
}

static rt_expr *rt_new_node(rt_expr_parser *ps, int kind)
{
    if (++ps->nodes > RT_MAX_EXPR_NODES)
        return NULL;
    rt_expr *e = rt_arena_alloc(ps->arena, sizeof *e);
    if (e) {
        e->kind = (uint8_t)kind;
        e->slot = -1;
        e->has_float = kind == RT_E_FLOAT;
    }
    return e;
}

static tilec_status rt_nodes_exhausted(const rt_expr_parser *ps)
{
    if (ps->nodes > RT_MAX_EXPR_NODES)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "malformed signature, line %d: more than %d expression nodes",
                       ps->line, RT_MAX_EXPR_NODES);
    return rt_fail(TILEC_ERROR_INTERNAL, "out of memory parsing a signature");
}

static int rt_is_ident(const char *s, size_t n)
{
    if (n == 0 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '_'))
            return 0;
    return 1;
}

static tilec_status rt_parse_atom(rt_expr_parser *ps, const char *tok, size_t n, rt_expr **out)
{
    char buf[80];
    if ((tok[0] >= '0' && tok[0] <= '9') || tok[0] == '-' || tok[0] == '.') {
        if (n >= sizeof buf)
            return rt_perr(ps, "number too long", tok, n);
        memcpy(buf, tok, n);
        buf[n] = 0;
        char *endp;
        errno = 0;
        int is_float = strpbrk(buf, ".eE") != NULL;
        rt_expr *e = rt_new_node(ps, is_float ? RT_E_FLOAT : RT_E_INT);
        if (!e)
            return rt_nodes_exhausted(ps);
        if (is_float)
            e->v.f = strtod(buf, &endp);
        else
            e->v.i = strtoll(buf, &endp, 10);
        if (*endp || endp == buf)
            return rt_perr(ps, "bad number", tok, n);
        if (errno == ERANGE)
            return rt_perr(ps, "number out of range", tok, n);
        *out = e;
        return TILEC_OK;
    }
    if (!rt_is_ident(tok, n))
        return rt_perr(ps, "unexpected", tok, n);
    rt_expr *e = rt_new_node(ps, n == 3 && memcmp(tok, "any", 3) == 0 ? RT_E_ANY : RT_E_NAME);
    if (!e)
        return rt_nodes_exhausted(ps);
    if (e->kind == RT_E_NAME && !(e->name = rt_arena_strndup(ps->arena, tok, n)))
        return rt_nodes_exhausted(ps);
    *out = e;
    return TILEC_OK;
}

static const char *rt_token(rt_expr_parser *ps, size_t *n)
{
    const char *t = ps->p;
    while (ps->p < ps->end && !rt_is_delim(*ps->p))
        ps->p++;
    *n = (size_t)(ps->p - t);
    return t;
}

static tilec_status rt_parse_expr(rt_expr_parser *ps, int depth, rt_expr **out)
{
    rt_skip_spaces(ps);
    if (ps->p >= ps->end)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "malformed signature, line %d: expected an expression",
                       ps->line);
    if (*ps->p == ')' || *ps->p == '"')
        return rt_perr(ps, "expected an expression, found", ps->p, 1);
    size_t n;
    if (*ps->p != '(') {
        const char *t = rt_token(ps, &n);
        return rt_parse_atom(ps, t, n, out);
    }
    if (depth >= RT_MAX_EXPR_DEPTH)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "malformed signature, line %d: expression nested deeper than %d",
                       ps->line, RT_MAX_EXPR_DEPTH);
    ps->p++;
    rt_skip_spaces(ps);
    const char *t = rt_token(ps, &n);
    if (n == 0)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "malformed signature, line %d: expected an operator after '('",
                       ps->line);
    if (n == 4 && memcmp(t, "bind", 4) == 0) {
        rt_skip_spaces(ps);
        const char *name = rt_token(ps, &n);
        if (!rt_is_ident(name, n) || (n == 3 && memcmp(name, "any", 3) == 0))
            return rt_perr(ps, "(bind NAME) needs a name, found", name, n);
        rt_expr *e = rt_new_node(ps, RT_E_BIND);
        if (!e || !(e->name = rt_arena_strndup(ps->arena, name, n)))
            return rt_nodes_exhausted(ps);
        rt_skip_spaces(ps);
        if (ps->p >= ps->end || *ps->p != ')')
            return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "malformed signature, line %d: expected ')' after (bind %s",
                           ps->line, e->name);
        ps->p++;
        *out = e;
        return TILEC_OK;
    }
    int op = -1;
    for (int i = 0; i < RT_NUM_OPS; i++)
        if (strlen(rt_ops[i].name) == n && memcmp(rt_ops[i].name, t, n) == 0)
            op = i;
    if (op < 0)
        return rt_perr(ps, "unknown operator", t, n);
    rt_expr *args[256];
    int nargs = 0;
    for (;;) {
        rt_skip_spaces(ps);
        if (ps->p < ps->end && *ps->p == ')') {
            ps->p++;
            break;
        }
        if (ps->p >= ps->end)
            return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "malformed signature, line %d: missing ')'", ps->line);
        if (nargs >= rt_ops[op].max)
            return rt_fail(TILEC_ERROR_INVALID_ARGUMENT,
                           "malformed signature, line %d: too many operands for '%s' (at most %d)", ps->line,
                           rt_ops[op].name, rt_ops[op].max);
        tilec_status s = rt_parse_expr(ps, depth + 1, &args[nargs]);
        if (s != TILEC_OK)
            return s;
        if (args[nargs]->kind == RT_E_ANY || args[nargs]->kind == RT_E_BIND)
            return rt_fail(TILEC_ERROR_INVALID_ARGUMENT,
                           "malformed signature, line %d: 'any' and (bind NAME) cannot be operands", ps->line);
        nargs++;
    }
    if (nargs < rt_ops[op].min)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "malformed signature, line %d: '%s' needs %s%d operand%s, got %d",
                       ps->line, rt_ops[op].name, rt_ops[op].max == rt_ops[op].min ? "" : "at least ",
                       rt_ops[op].min, rt_ops[op].min == 1 ? "" : "s", nargs);
    rt_expr *e = rt_new_node(ps, RT_E_OP);
    if (!e || !(e->args = rt_arena_alloc(ps->arena, sizeof(rt_expr *) * (size_t)nargs)))
        return rt_nodes_exhausted(ps);
    e->op = (uint8_t)op;
    e->nargs = (uint16_t)nargs;
    memcpy(e->args, args, sizeof(rt_expr *) * (size_t)nargs);
    for (int i = 0; i < nargs; i++)
        e->has_float |= args[i]->has_float;
    *out = e;
    return TILEC_OK;
}

tilec_status rt_expr_parse(rt_expr_parser *ps, rt_expr **out)
{
    return rt_parse_expr(ps, 0, out);
}

/* ---- evaluation ---- */

static const char *const rt_div_zero = "division by zero";
static const char *const rt_overflow = "integer overflow";

static double rt_as_double(rt_value v)
{
    return v.is_float ? v.f : (double)v.i;
}

static int rt_truth(rt_value v)
{
    return v.is_float ? v.f != 0 : v.i != 0;
}

static rt_value rt_int(int64_t i)
{
    rt_value v = {0, i, 0};
    return v;
}

static rt_value rt_float(double f)
{
    rt_value v = {1, 0, f};
    return v;
}

static const char *rt_int_binop(int op, int64_t a, int64_t b, int64_t *r)
{
    switch (op) {
    case RT_OP_ADD: return __builtin_add_overflow(a, b, r) ? rt_overflow : NULL;
    case RT_OP_SUB: return __builtin_sub_overflow(a, b, r) ? rt_overflow : NULL;
    case RT_OP_MUL: return __builtin_mul_overflow(a, b, r) ? rt_overflow : NULL;
    case RT_OP_MIN: *r = a < b ? a : b; return NULL;
    case RT_OP_MAX: *r = a > b ? a : b; return NULL;
    case RT_OP_EQ: *r = a == b; return NULL;
    case RT_OP_NE: *r = a != b; return NULL;
    case RT_OP_LT: *r = a < b; return NULL;
    case RT_OP_LE: *r = a <= b; return NULL;
    case RT_OP_GT: *r = a > b; return NULL;
    case RT_OP_GE: *r = a >= b; return NULL;
    default: break;
    }
    /* the division family */
    if (b == 0)
        return rt_div_zero;
    if (a == INT64_MIN && b == -1)
        return rt_overflow;
    int64_t q = a / b, m = a % b;
    switch (op) {
    case RT_OP_DIV: *r = q; return NULL;
    case RT_OP_MOD: *r = m; return NULL;
    case RT_OP_CDIV: *r = q + (m != 0 && ((a < 0) == (b < 0))); return NULL;
    case RT_OP_FLOORDIV: *r = q - (m != 0 && ((a < 0) != (b < 0))); return NULL;
    case RT_OP_FLOORMOD: *r = m != 0 && ((m < 0) != (b < 0)) ? m + b : m; return NULL;
    case RT_OP_ALIGN: return __builtin_mul_overflow(q + (m != 0 && ((a < 0) == (b < 0))), b, r) ? rt_overflow : NULL;
    default: return "bad operator";
    }
}

static const char *rt_float_binop(int op, double a, double b, rt_value *r)
{
    switch (op) {
    case RT_OP_ADD: *r = rt_float(a + b); return NULL;
    case RT_OP_SUB: *r = rt_float(a - b); return NULL;
    case RT_OP_MUL: *r = rt_float(a * b); return NULL;
    case RT_OP_MIN: *r = rt_float(a < b ? a : b); return NULL;
    case RT_OP_MAX: *r = rt_float(a > b ? a : b); return NULL;
    case RT_OP_EQ: *r = rt_int(a == b); return NULL;
    case RT_OP_NE: *r = rt_int(a != b); return NULL;
    case RT_OP_LT: *r = rt_int(a < b); return NULL;
    case RT_OP_LE: *r = rt_int(a <= b); return NULL;
    case RT_OP_GT: *r = rt_int(a > b); return NULL;
    case RT_OP_GE: *r = rt_int(a >= b); return NULL;
    default: break;
    }
    if (b == 0)
        return rt_div_zero;
    switch (op) {
    case RT_OP_DIV: *r = rt_float(a / b); return NULL;
    case RT_OP_MOD: *r = rt_float(fmod(a, b)); return NULL;
    case RT_OP_CDIV: *r = rt_float(ceil(a / b)); return NULL;
    case RT_OP_FLOORDIV: *r = rt_float(floor(a / b)); return NULL;
    case RT_OP_FLOORMOD: *r = rt_float(a - floor(a / b) * b); return NULL;
    case RT_OP_ALIGN: *r = rt_float(ceil(a / b) * b); return NULL;
    default: return "bad operator";
    }
}

void rt_expr_mark_float(rt_expr *e, const uint8_t *float_slots)
{
    if (e->kind == RT_E_NAME || e->kind == RT_E_BIND)
        e->has_float = e->slot >= 0 && float_slots && float_slots[e->slot];
    if (e->kind != RT_E_OP)
        return;
    e->has_float = 0;
    for (int i = 0; i < e->nargs; i++) {
        rt_expr_mark_float(e->args[i], float_slots);
        e->has_float |= e->args[i]->has_float;
    }
}

/* The common case, integers only, kept apart from rt_value so that nothing but int64s moves
 * through memory on the launch path. */
static const char *rt_eval_int(const rt_expr *e, const rt_value *slots, int64_t *out)
{
    const char *err;
    int64_t a, b;
    switch (e->kind) {
    case RT_E_INT: *out = e->v.i; return NULL;
    case RT_E_NAME:
    case RT_E_BIND: *out = slots[e->slot].i; return NULL;
    case RT_E_OP: break;
    default: return "'any' has no value";
    }
    switch (e->op) {
    case RT_OP_AND:
    case RT_OP_OR:
        for (int i = 0; i < e->nargs; i++) {
            if ((err = rt_eval_int(e->args[i], slots, &a)))
                return err;
            if ((a != 0) != (e->op == RT_OP_AND)) {
                *out = e->op == RT_OP_OR;
                return NULL;
            }
        }
        *out = e->op == RT_OP_AND;
        return NULL;
    case RT_OP_SELECT:
        if ((err = rt_eval_int(e->args[0], slots, &a)))
            return err;
        return rt_eval_int(e->args[a ? 1 : 2], slots, out);
    case RT_OP_NOT:
        if ((err = rt_eval_int(e->args[0], slots, &a)))
            return err;
        *out = !a;
        return NULL;
    case RT_OP_NEG:
        if ((err = rt_eval_int(e->args[0], slots, &a)))
            return err;
        if (a == INT64_MIN)
            return rt_overflow;
        *out = -a;
        return NULL;
    default: break;
    }
    if ((err = rt_eval_int(e->args[0], slots, &a)))
        return err;
    for (int i = 1; i < e->nargs; i++)
        if ((err = rt_eval_int(e->args[i], slots, &b)) || (err = rt_int_binop(e->op, a, b, &a)))
            return err;
    *out = a;
    return NULL;
}

const char *rt_expr_eval(const rt_expr *e, const rt_value *slots, rt_value *out)
{
    const char *err;
    if (!e->has_float) {
        out->is_float = 0;
        out->f = 0;
        return rt_eval_int(e, slots, &out->i);
    }
    rt_value a, b;
    switch (e->kind) {
    case RT_E_INT: *out = rt_int(e->v.i); return NULL;
    case RT_E_FLOAT: *out = rt_float(e->v.f); return NULL;
    case RT_E_NAME:
    case RT_E_BIND: *out = slots[e->slot]; return NULL;
    case RT_E_ANY: return "'any' has no value";
    default: break;
    }
    switch (e->op) {
    case RT_OP_AND:
    case RT_OP_OR:
        for (int i = 0; i < e->nargs; i++) {
            if ((err = rt_expr_eval(e->args[i], slots, &a)))
                return err;
            if (rt_truth(a) != (e->op == RT_OP_AND)) {
                *out = rt_int(e->op == RT_OP_OR);
                return NULL;
            }
        }
        *out = rt_int(e->op == RT_OP_AND);
        return NULL;
    case RT_OP_SELECT:
        if ((err = rt_expr_eval(e->args[0], slots, &a)))
            return err;
        return rt_expr_eval(e->args[rt_truth(a) ? 1 : 2], slots, out);
    case RT_OP_NOT:
        if ((err = rt_expr_eval(e->args[0], slots, &a)))
            return err;
        *out = rt_int(!rt_truth(a));
        return NULL;
    case RT_OP_NEG:
        if ((err = rt_expr_eval(e->args[0], slots, &a)))
            return err;
        if (a.is_float) {
            *out = rt_float(-a.f);
            return NULL;
        }
        if (a.i == INT64_MIN)
            return rt_overflow;
        *out = rt_int(-a.i);
        return NULL;
    default: break;
    }
    /* binary, or n-ary folded from the left */
    if ((err = rt_expr_eval(e->args[0], slots, &a)))
        return err;
    for (int i = 1; i < e->nargs; i++) {
        if ((err = rt_expr_eval(e->args[i], slots, &b)))
            return err;
        if (a.is_float || b.is_float) {
            if ((err = rt_float_binop(e->op, rt_as_double(a), rt_as_double(b), &a)))
                return err;
        } else {
            int64_t r;
            if ((err = rt_int_binop(e->op, a.i, b.i, &r)))
                return err;
            a = rt_int(r);
        }
    }
    *out = a;
    return NULL;
}

/* ---- rendering ---- */

void rt_value_render(rt_sbuf *b, rt_value v)
{
    if (v.is_float)
        rt_sb_printf(b, "%g", v.f);
    else
        rt_sb_printf(b, "%lld", (long long)v.i);
}

static void rt_render(rt_sbuf *b, const rt_expr *e, int min_prec)
{
    switch (e->kind) {
    case RT_E_INT: rt_sb_printf(b, "%lld", (long long)e->v.i); return;
    case RT_E_FLOAT: rt_sb_printf(b, "%g", e->v.f); return;
    case RT_E_NAME:
    case RT_E_BIND: rt_sb_puts(b, e->name); return;
    case RT_E_ANY: rt_sb_puts(b, "any"); return;
    default: break;
    }
    const char *infix = rt_ops[e->op].infix;
    if (!infix) {
        rt_sb_printf(b, "%s(", rt_ops[e->op].name);
        for (int i = 0; i < e->nargs; i++) {
            if (i)
                rt_sb_puts(b, ", ");
            rt_render(b, e->args[i], 0);
        }
        rt_sb_puts(b, ")");
        return;
    }
    int prec = rt_ops[e->op].prec;
    int paren = prec < min_prec;
    if (paren)
        rt_sb_puts(b, "(");
    if (e->nargs == 1) {
        rt_sb_puts(b, infix);
        rt_render(b, e->args[0], prec);
    } else {
        /* left-associative: only operands after the first need parentheses at equal strength */
        for (int i = 0; i < e->nargs; i++) {
            if (i)
                rt_sb_printf(b, " %s ", infix);
            rt_render(b, e->args[i], i ? prec + 1 : prec);
        }
    }
    if (paren)
        rt_sb_puts(b, ")");
}

void rt_expr_render(rt_sbuf *b, const rt_expr *e)
{
    rt_render(b, e, 0);
}

void rt_expr_walk_names(const rt_expr *e, void (*fn)(const rt_expr *name, void *ctx), void *ctx)
{
    if (e->kind == RT_E_NAME || e->kind == RT_E_BIND)
        fn(e, ctx);
    if (e->kind == RT_E_OP)
        for (int i = 0; i < e->nargs; i++)
            rt_expr_walk_names(e->args[i], fn, ctx);
}
