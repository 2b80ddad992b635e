/* rt_sig.c — parses a "tilec-sig 1" signature (see tilec/compiler.h) into an rt_sig, checks it
 * for consistency, resolves names, lays out the kernel parameters and builds the launch plan.
 * Any malformed input gives an error naming the line; nothing is trusted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

typedef struct rt_sig_parser {
    rt_sig *sig;
    rt_expr_parser ex;      /* .p/.end: the rest of the current line */
    rt_param params[RT_MAX_PARAMS];
    int defined[RT_MAX_PARAMS];
    int max_index;          /* highest parameter index seen */
    int nparams;            /* from the nparams line, -1 until seen */
    int seen_flags, seen_smem, seen_cluster, seen_threads;
} rt_sig_parser;

static tilec_status rt_lerr(const rt_sig_parser *sp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static tilec_status rt_lerr(const rt_sig_parser *sp, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "malformed signature, line %d: %s", sp->ex.line, what);
}

static tilec_status rt_oom(void)
{
    return rt_fail(TILEC_ERROR_INTERNAL, "out of memory parsing a signature");
}

/* The next space-separated word of the line, NUL-terminated in tmp (truncated to its size). */
static int rt_word(rt_sig_parser *sp, char *tmp, size_t cap)
{
    rt_expr_parser *ps = &sp->ex;
    while (ps->p < ps->end && *ps->p == ' ')
        ps->p++;
    const char *w = ps->p;
    while (ps->p < ps->end && *ps->p != ' ')
        ps->p++;
    size_t n = (size_t)(ps->p - w);
    if (n >= cap)
        n = cap - 1;
    memcpy(tmp, w, n);
    tmp[n] = 0;
    return ps->p > w;
}

static tilec_status rt_uint_field(rt_sig_parser *sp, const char *what, long max, long *out)
{
    char w[32];
    if (!rt_word(sp, w, sizeof w))
        return rt_lerr(sp, "missing %s", what);
    char *end;
    long v = strtol(w, &end, 10);
    if (*end || w[0] < '0' || w[0] > '9' || v < 0 || v > max)
        return rt_lerr(sp, "%s must be an integer in 0..%ld, got '%s'", what, max, w);
    *out = v;
    return TILEC_OK;
}

static tilec_status rt_line_done(rt_sig_parser *sp)
{
    rt_expr_parser *ps = &sp->ex;
    while (ps->p < ps->end && *ps->p == ' ')
        ps->p++;
    if (ps->p < ps->end)
        return rt_lerr(sp, "unexpected '%.*s' at the end of the line", (int)(ps->end - ps->p > 64 ? 64 : ps->end - ps->p),
                       ps->p);
    return TILEC_OK;
}

static int rt_ident_ok(const char *s)
{
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return 0;
    for (s++; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return 1;
}

static tilec_status rt_name_field(rt_sig_parser *sp, const char *what, const char **out)
{
    char w[256];
    if (!rt_word(sp, w, sizeof w))
        return rt_lerr(sp, "missing %s", what);
    if (!rt_ident_ok(w) || strlen(w) >= sizeof w - 1)
        return rt_lerr(sp, "bad name '%s'", w);
    if (!(*out = rt_arena_strndup(&sp->sig->arena, w, strlen(w))))
        return rt_oom();
    return TILEC_OK;
}

static tilec_status rt_index_field(rt_sig_parser *sp, long *out)
{
    tilec_status s = rt_uint_field(sp, "parameter index", RT_MAX_PARAMS - 1, out);
    if (s == TILEC_OK && *out > sp->max_index)
        sp->max_index = (int)*out;
    return s;
}

/* the fields a tensor and a scalar line share: index (defined once), name, dtype */
static tilec_status rt_param_head(rt_sig_parser *sp, int kind, const char *what, rt_param **out)
{
    long i;
    char w[64];
    tilec_status s;
    if ((s = rt_index_field(sp, &i)) != TILEC_OK)
        return s;
    rt_param *p = &sp->params[i];
    if (sp->defined[i])
        return rt_lerr(sp, "parameter %ld is defined twice", i);
    sp->defined[i] = 1;
    p->kind = (uint8_t)kind;
    if ((s = rt_name_field(sp, what, &p->name)) != TILEC_OK)
        return s;
    if (!rt_word(sp, w, sizeof w))
        return rt_lerr(sp, "missing %s", "dtype");
    int dt = rt_dtype_lookup(w, strlen(w));
    if (dt < 0)
        return rt_lerr(sp, "unknown dtype '%s'", w);
    p->dtype = (uint8_t)dt;
    *out = p;
    return TILEC_OK;
}

/* the RANK and ALIGN fields of a tensor or list line */
static tilec_status rt_rank_align(rt_sig_parser *sp, rt_param *p)
{
    long rank, align;
    tilec_status s;
    if ((s = rt_uint_field(sp, "rank", TILEC_RT_MAX_RANK, &rank)) != TILEC_OK)
        return s;
    p->rank = (uint8_t)rank;
    if ((s = rt_uint_field(sp, "alignment", 4096, &align)) != TILEC_OK)
        return s;
    if (align == 0 || (align & (align - 1)))
        return rt_lerr(sp, "alignment must be a power of two, got %ld", align);
    p->align = (int)align;
    return TILEC_OK;
}

static tilec_status rt_parse_tensor(rt_sig_parser *sp)
{
    char w[64];
    rt_param *p;
    tilec_status s = rt_param_head(sp, RT_P_TENSOR, "tensor name", &p);
    if (s != TILEC_OK)
        return s;
    if ((s = rt_rank_align(sp, p)) != TILEC_OK)
        return s;
    while (rt_word(sp, w, sizeof w)) {
        if (!strcmp(w, "written"))
            p->flags |= TILEC_RT_PARAM_WRITTEN;
        else if (!strcmp(w, "optional"))
            p->flags |= TILEC_RT_PARAM_OPTIONAL;
        else if (!strcmp(w, "absent"))
            p->flags |= TILEC_RT_PARAM_ABSENT;
        else
            return rt_lerr(sp, "unknown tensor flag '%s'", w);
    }
    if ((p->flags & TILEC_RT_PARAM_ABSENT) && !(p->flags & TILEC_RT_PARAM_OPTIONAL))
        return rt_lerr(sp, "tensor '%s' is absent but not optional", p->name);
    return TILEC_OK;
}

/* list I NAME DTYPE RANK ALIGN MAX [written] */
static tilec_status rt_parse_list(rt_sig_parser *sp)
{
    long max;
    char w[64];
    rt_param *p;
    tilec_status s = rt_param_head(sp, RT_P_LIST, "list name", &p);
    if (s != TILEC_OK)
        return s;
    if ((s = rt_rank_align(sp, p)) != TILEC_OK)
        return s;
    if ((s = rt_uint_field(sp, "list max", RT_MAX_LIST, &max)) != TILEC_OK)
        return s;
    if (max == 0)
        return rt_lerr(sp, "%s", "a list takes at least 1 tensor");
    p->max = (int)max;
    while (rt_word(sp, w, sizeof w)) {
        if (!strcmp(w, "written"))
            p->flags |= TILEC_RT_PARAM_WRITTEN;
        else
            return rt_lerr(sp, "unknown list flag '%s'", w);
    }
    return TILEC_OK;
}

/* len I EXPR: may precede its list line, like dim and stride lines */
static tilec_status rt_parse_len(rt_sig_parser *sp)
{
    long i;
    tilec_status s;
    if ((s = rt_index_field(sp, &i)) != TILEC_OK)
        return s;
    if (sp->params[i].len)
        return rt_lerr(sp, "%s", "len given twice for this list");
    if ((s = rt_expr_parse(&sp->ex, &sp->params[i].len)) != TILEC_OK)
        return s;
    return rt_line_done(sp);
}

static tilec_status rt_parse_scalar(rt_sig_parser *sp)
{
    rt_param *p;
    tilec_status s = rt_param_head(sp, RT_P_SCALAR, "scalar name", &p);
    return s != TILEC_OK ? s : rt_line_done(sp);
}

/* dim / stride lines may precede their tensor line: the axis is checked once all are read */
static tilec_status rt_parse_axis_expr(rt_sig_parser *sp, int is_stride)
{
    long i, axis;
    tilec_status s;
    if ((s = rt_index_field(sp, &i)) != TILEC_OK)
        return s;
    if ((s = rt_uint_field(sp, "axis", TILEC_RT_MAX_RANK - 1, &axis)) != TILEC_OK)
        return s;
    rt_expr **slot = is_stride ? &sp->params[i].stride[axis] : &sp->params[i].dim[axis];
    if (*slot)
        return rt_lerr(sp, "%s given twice for this axis", is_stride ? "stride" : "dim");
    if ((s = rt_expr_parse(&sp->ex, slot)) != TILEC_OK)
        return s;
    if (is_stride)
        sp->params[i].has_strides = 1;
    return rt_line_done(sp);
}

static tilec_status rt_parse_grid(rt_sig_parser *sp)
{
    rt_sig *sig = sp->sig;
    if (sig->ngrid)
        return rt_lerr(sp, "%s given twice", "grid");
    for (;;) {
        while (sp->ex.p < sp->ex.end && *sp->ex.p == ' ')
            sp->ex.p++;
        if (sp->ex.p >= sp->ex.end)
            break;
        if (sig->ngrid == 3)
            return rt_lerr(sp, "%s", "grid has more than 3 dimensions");
        tilec_status s = rt_expr_parse(&sp->ex, &sig->grid[sig->ngrid]);
        if (s != TILEC_OK)
            return s;
        if (sig->grid[sig->ngrid]->kind == RT_E_ANY || sig->grid[sig->ngrid]->kind == RT_E_BIND)
            return rt_lerr(sp, "%s", "'any' and (bind NAME) cannot be grid dimensions");
        sig->ngrid++;
    }
    if (!sig->ngrid)
        return rt_lerr(sp, "%s", "grid needs 1 to 3 expressions");
    return TILEC_OK;
}

static tilec_status rt_parse_require(rt_sig_parser *sp)
{
    rt_sig *sig = sp->sig;
    rt_require r;
    tilec_status s = rt_expr_parse(&sp->ex, &r.e);
    if (s != TILEC_OK)
        return s;
    if (r.e->kind == RT_E_ANY || r.e->kind == RT_E_BIND)
        return rt_lerr(sp, "%s", "'any' and (bind NAME) cannot be requirements");
    rt_expr_parser *ps = &sp->ex;
    while (ps->p < ps->end && *ps->p == ' ')
        ps->p++;
    if (ps->p >= ps->end || *ps->p != '"')
        return rt_lerr(sp, "%s", "require needs a quoted message after its expression");
    ps->p++;
    char *msg = rt_arena_alloc(&sig->arena, (size_t)(ps->end - ps->p) + 1), *m = msg;
    if (!msg)
        return rt_oom();
    for (;;) {
        if (ps->p >= ps->end)
            return rt_lerr(sp, "%s", "unterminated message");
        char c = *ps->p++;
        if (c == '"')
            break;
        if (c == '\\') {
            if (ps->p >= ps->end || (*ps->p != '"' && *ps->p != '\\'))
                return rt_lerr(sp, "%s", "bad escape in message (only \\\" and \\\\)");
            c = *ps->p++;
        }
        *m++ = c;
    }
    *m = 0;
    r.message = msg;
    if ((s = rt_line_done(sp)) != TILEC_OK)
        return s;
    rt_require *grown = rt_arena_alloc(&sig->arena, sizeof *grown * (size_t)(sig->nrequires + 1));
    if (!grown)
        return rt_oom();
    if (sig->nrequires)
        memcpy(grown, sig->requires, sizeof *grown * (size_t)sig->nrequires);
    grown[sig->nrequires++] = r;
    sig->requires = grown;
    return TILEC_OK;
}

static tilec_status rt_parse_flags(rt_sig_parser *sp)
{
    char w[64];
    if (sp->seen_flags++)
        return rt_lerr(sp, "%s given twice", "flags");
    while (rt_word(sp, w, sizeof w)) {
        if (!strcmp(w, "cooperative"))
            sp->sig->cooperative = 1;
        else if (!strcmp(w, "pdl"))
            sp->sig->pdl = 1;
        else
            return rt_lerr(sp, "unknown flag '%s'", w);
    }
    return TILEC_OK;
}

static tilec_status rt_string_field(rt_sig_parser *sp, const char *what, const char **field, int whole_line)
{
    if (*field)
        return rt_lerr(sp, "%s given twice", what);
    rt_expr_parser *ps = &sp->ex;
    while (ps->p < ps->end && *ps->p == ' ')
        ps->p++;
    const char *w = ps->p;
    while (ps->p < ps->end && (whole_line || *ps->p != ' '))
        ps->p++;
    if (ps->p == w)
        return rt_lerr(sp, "missing %s", what);
    if (!(*field = rt_arena_strndup(&sp->sig->arena, w, (size_t)(ps->p - w))))
        return rt_oom();
    return rt_line_done(sp);
}

static tilec_status rt_parse_line(rt_sig_parser *sp, const char *kw)
{
    rt_sig *sig = sp->sig;
    long v;
    tilec_status s;
    if (!strcmp(kw, "kernel")) {
        if ((s = rt_string_field(sp, "kernel", &sig->kernel, 0)) == TILEC_OK && !rt_ident_ok(sig->kernel))
            return rt_lerr(sp, "bad kernel name '%s'", sig->kernel);
        return s;
    }
    if (!strcmp(kw, "entry"))
        return rt_string_field(sp, "entry", &sig->entry, 0);
    if (!strcmp(kw, "key"))
        return rt_string_field(sp, "key", &sig->key, 1);
    if (!strcmp(kw, "arch")) {
        if ((s = rt_string_field(sp, "arch", &sig->arch, 0)) != TILEC_OK)
            return s;
        if (strcmp(sig->arch, "sm_90a") && strcmp(sig->arch, "sm_100a") && strcmp(sig->arch, "host"))
            return rt_lerr(sp, "unknown arch '%s' (sm_90a, sm_100a or host)", sig->arch);
        return TILEC_OK;
    }
    if (!strcmp(kw, "threads")) {
        if (sp->seen_threads++)
            return rt_lerr(sp, "%s given twice", "threads");
        if ((s = rt_uint_field(sp, "threads", 1024, &v)) != TILEC_OK)
            return s;
        if (v == 0)
            return rt_lerr(sp, "%s", "threads must be at least 1");
        sig->threads = (int)v;
        return rt_line_done(sp);
    }
    if (!strcmp(kw, "smem")) {
        if (sp->seen_smem++)
            return rt_lerr(sp, "%s given twice", "smem");
        if ((s = rt_uint_field(sp, "smem", 1 << 30, &v)) != TILEC_OK)
            return s;
        sig->smem = (unsigned)v;
        return rt_line_done(sp);
    }
    if (!strcmp(kw, "cluster")) {
        if (sp->seen_cluster++)
            return rt_lerr(sp, "%s given twice", "cluster");
        for (int d = 0; d < 3; d++) {
            if ((s = rt_uint_field(sp, "cluster dimension", 1024, &v)) != TILEC_OK)
                return s;
            if (v == 0)
                return rt_lerr(sp, "%s", "cluster dimensions must be at least 1");
            sig->cluster[d] = (unsigned)v;
        }
        sig->clustered = 1;
        return rt_line_done(sp);
    }
    if (!strcmp(kw, "flags"))
        return rt_parse_flags(sp);
    if (!strcmp(kw, "nparams")) {
        if (sp->nparams >= 0)
            return rt_lerr(sp, "%s given twice", "nparams");
        if ((s = rt_uint_field(sp, "nparams", RT_MAX_PARAMS, &v)) != TILEC_OK)
            return s;
        sp->nparams = (int)v;
        return rt_line_done(sp);
    }
    if (!strcmp(kw, "tensor"))
        return rt_parse_tensor(sp);
    if (!strcmp(kw, "scalar"))
        return rt_parse_scalar(sp);
    if (!strcmp(kw, "list"))
        return rt_parse_list(sp);
    if (!strcmp(kw, "len"))
        return rt_parse_len(sp);
    if (!strcmp(kw, "dim"))
        return rt_parse_axis_expr(sp, 0);
    if (!strcmp(kw, "stride"))
        return rt_parse_axis_expr(sp, 1);
    if (!strcmp(kw, "grid"))
        return rt_parse_grid(sp);
    if (!strcmp(kw, "require"))
        return rt_parse_require(sp);
    return rt_lerr(sp, "unknown item '%s'", kw);
}

/* ---- after all lines: consistency, names, layout, plan ---- */

static tilec_status rt_serr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static tilec_status rt_serr(const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "malformed signature: %s", what);
}

static int rt_find_name(const rt_sig *sig, const char *name)
{
    for (int i = 0; i < sig->nnames; i++)
        if (!strcmp(sig->names[i].name, name))
            return i;
    return -1;
}

static tilec_status rt_add_name(rt_sig *sig, const char *name, int kind, int param, int axis, int *slot)
{
    if (sig->nnames >= RT_MAX_NAMES)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "malformed signature: more than %d names", RT_MAX_NAMES);
    rt_name *n = &sig->names[sig->nnames];
    n->name = name;
    n->kind = (uint8_t)kind;
    n->param = (int16_t)param;
    n->axis = (uint8_t)axis;
    *slot = sig->nnames++;
    return TILEC_OK;
}

typedef struct rt_resolve_ctx {
    rt_sig *sig;
    tilec_status status;
    int ready; /* the latest parameter whose binding the expression needs */
} rt_resolve_ctx;

static void rt_resolve_one(const rt_expr *e, void *vctx)
{
    rt_resolve_ctx *ctx = vctx;
    rt_expr *n = (rt_expr *)e;
    if (ctx->status != TILEC_OK)
        return;
    int slot = rt_find_name(ctx->sig, n->name);
    if (slot < 0 && !strcmp(n->name, "num_sms")) {
        ctx->status = rt_add_name(ctx->sig, "num_sms", RT_N_NUM_SMS, -1, 0, &slot);
        ctx->sig->num_sms_slot = slot;
    }
    if (ctx->status != TILEC_OK)
        return;
    if (slot < 0) {
        ctx->status = rt_serr("name '%s' is used but never bound", n->name);
        return;
    }
    const rt_name *nm = &ctx->sig->names[slot];
    if (nm->kind == RT_N_SCALAR) {
        int kind = rt_dtypes[ctx->sig->params[nm->param].dtype].kind;
        if (kind == RT_DK_FP8 || kind == RT_DK_FP4 || kind == RT_DK_SCALE) {
            ctx->status = rt_serr("scalar '%s' of type %s cannot appear in an expression", n->name,
                                  rt_dtypes[ctx->sig->params[nm->param].dtype].name);
            return;
        }
    }
    n->slot = (int16_t)slot;
    if (nm->param > ctx->ready)
        ctx->ready = nm->param;
}

static tilec_status rt_resolve(rt_sig *sig, rt_expr *e, int *ready)
{
    rt_resolve_ctx ctx = {sig, TILEC_OK, -1};
    rt_expr_walk_names(e, rt_resolve_one, &ctx);
    if (ready)
        *ready = ctx.ready;
    if (ctx.status == TILEC_OK) {
        uint8_t float_slots[RT_MAX_NAMES] = {0};
        for (int i = 0; i < sig->nnames; i++)
            if (sig->names[i].kind == RT_N_SCALAR) {
                int k = rt_dtypes[sig->params[sig->names[i].param].dtype].kind;
                float_slots[i] = k == RT_DK_FLOAT || k == RT_DK_HALF;
            }
        rt_expr_mark_float(e, float_slots);
    }
    return ctx.status;
}

static tilec_status rt_check_params(rt_sig_parser *sp)
{
    rt_sig *sig = sp->sig;
    if (sp->nparams < 0)
        return rt_serr("missing 'nparams' line");
    if (sp->max_index >= sp->nparams)
        return rt_serr("parameter %d is beyond nparams %d", sp->max_index, sp->nparams);
    for (int i = 0; i < sp->nparams; i++) {
        rt_param *p = &sp->params[i];
        if (!sp->defined[i])
            return rt_serr("parameter %d has no tensor, list or scalar line", i);
        for (int j = 0; j < i; j++)
            if (!strcmp(sp->params[j].name, p->name))
                return rt_serr("parameter name '%s' is used twice", p->name);
        for (int a = 0; a < TILEC_RT_MAX_RANK; a++) {
            int in_rank = p->kind != RT_P_SCALAR && a < p->rank;
            if (!in_rank && (p->dim[a] || p->stride[a]))
                return rt_serr("'%s' has a dim or stride line for axis %d beyond its rank", p->name, a);
            if (in_rank && !p->dim[a])
                return rt_serr("%s '%s' has no dim line for axis %d", p->kind == RT_P_LIST ? "list" : "tensor", p->name,
                               a);
            if (in_rank && p->has_strides && !p->stride[a])
                return rt_serr("%s '%s' has stride lines, but none for axis %d", p->kind == RT_P_LIST ? "list" : "tensor",
                               p->name, a);
        }
        if (p->kind == RT_P_LIST && !p->len)
            return rt_serr("list '%s' has no len line", p->name);
        if (p->kind != RT_P_LIST && p->len)
            return rt_serr("'%s' has a len line but is not a list", p->name);
        if (p->kind == RT_P_LIST && (p->len->kind == RT_E_ANY || (p->len->kind == RT_E_BIND && !strcmp(p->len->name, "num_sms"))))
            return rt_serr("the length of list '%s' cannot be 'any' or num_sms", p->name);
    }
    sig->nparams = sp->nparams;
    sig->params = rt_arena_alloc(&sig->arena, sizeof(rt_param) * (size_t)(sig->nparams ? sig->nparams : 1));
    sig->names = rt_arena_alloc(&sig->arena, sizeof(rt_name) * RT_MAX_NAMES);
    if (!sig->params || !sig->names)
        return rt_oom();
    memcpy(sig->params, sp->params, sizeof(rt_param) * (size_t)sig->nparams);
    return TILEC_OK;
}

/* Names bind on first use, in parameter order (a list's length, dims, then strides, then the
 * scalar itself); an absent tensor binds nothing. */
static tilec_status rt_bind_names(rt_sig *sig)
{
    tilec_status s;
    for (int i = 0; i < sig->nparams; i++) {
        rt_param *p = &sig->params[i];
        if (p->kind == RT_P_SCALAR) {
            int slot = -1;
            if (!strcmp(p->name, "num_sms"))
                return rt_serr("scalar 'num_sms' has a reserved name");
            if ((s = rt_add_name(sig, p->name, RT_N_SCALAR, i, 0, &slot)) != TILEC_OK)
                return s;
            p->slot = (int16_t)slot;
            continue;
        }
        if (p->flags & TILEC_RT_PARAM_ABSENT)
            continue;
        for (int st = -1; st < 2; st++)
            for (int a = 0; a < (st < 0 ? 1 : p->rank); a++) {
                rt_expr *e = st < 0 ? p->len : st ? p->stride[a] : p->dim[a];
                if (!e || e->kind != RT_E_BIND)
                    continue;
                if (!strcmp(e->name, "num_sms"))
                    return rt_serr("'num_sms' cannot be bound from a tensor");
                for (int j = 0; j < sig->nparams; j++)
                    if (sig->params[j].kind == RT_P_SCALAR && !strcmp(sig->params[j].name, e->name))
                        return rt_serr("'%s' is both a scalar and a shape or stride name", e->name);
                if (rt_find_name(sig, e->name) >= 0)
                    continue; /* bound before: this use compares */
                int slot = -1;
                if ((s = rt_add_name(sig, e->name, st < 0 ? RT_N_LEN : st ? RT_N_STRIDE : RT_N_DIM, i, a, &slot)) !=
                    TILEC_OK)
                    return s;
                e->slot = (int16_t)slot;
            }
    }
    return TILEC_OK;
}

static tilec_status rt_build_plan(rt_sig *sig)
{
    int nbind = 0, ncheck = 0;
    for (int i = 0; i < sig->nparams; i++)
        ncheck += 2 * sig->params[i].rank + 1;
    sig->binds = rt_arena_alloc(&sig->arena, sizeof(rt_bind_step) * (size_t)(ncheck + 1));
    sig->checks = rt_arena_alloc(&sig->arena, sizeof(rt_check_step) * (size_t)(ncheck + 1));
    if (!sig->binds || !sig->checks)
        return rt_oom();
    ncheck = 0;
    tilec_status s;
    for (int i = 0; i < sig->nparams; i++) {
        rt_param *p = &sig->params[i];
        if (p->kind == RT_P_SCALAR || (p->flags & TILEC_RT_PARAM_ABSENT))
            continue;
        /* in the order names bind: a list's length, then extents, then strides */
        static const uint8_t name_kind[3] = {RT_N_DIM, RT_N_STRIDE, RT_N_LEN};
        static const uint8_t order[2][3] = {{RT_W_DIM, RT_W_STRIDE, RT_W_DIM}, {RT_W_LEN, RT_W_DIM, RT_W_STRIDE}};
        int is_list = p->kind == RT_P_LIST;
        for (int n = 0; n < (is_list ? 3 : 2); n++) {
            int w = order[is_list][n];
            for (int a = 0; a < (w == RT_W_LEN ? 1 : p->rank); a++) {
                rt_expr *e = w == RT_W_LEN ? p->len : w == RT_W_STRIDE ? p->stride[a] : p->dim[a];
                if (!e || e->kind == RT_E_ANY)
                    continue;
                if (e->kind == RT_E_BIND && e->slot >= 0 && sig->names[e->slot].param == i &&
                    sig->names[e->slot].axis == a && sig->names[e->slot].kind == name_kind[w]) {
                    rt_bind_step b = {(int16_t)i, e->slot, (uint8_t)w, (uint8_t)a};
                    sig->binds[nbind++] = b;
                    continue;
                }
                int ready;
                if ((s = rt_resolve(sig, e, &ready)) != TILEC_OK)
                    return s;
                rt_check_step c = {(int16_t)(ready > i ? ready : i), (int16_t)i, (uint8_t)w, (uint8_t)a, e};
                /* stable insertion by `at`: equal `at` keeps parameter order */
                int k = ncheck++;
                while (k > 0 && sig->checks[k - 1].at > c.at) {
                    sig->checks[k] = sig->checks[k - 1];
                    k--;
                }
                sig->checks[k] = c;
            }
        }
    }
    sig->nbinds = nbind;
    sig->nchecks = ncheck;
    for (int g = 0; g < sig->ngrid; g++)
        if ((s = rt_resolve(sig, sig->grid[g], NULL)) != TILEC_OK)
            return s;
    for (int r = 0; r < sig->nrequires; r++)
        if ((s = rt_resolve(sig, sig->requires[r].e, NULL)) != TILEC_OK)
            return s;
    return TILEC_OK;
}

/* As CUDA lays kernel parameters out: each aligned to its size. */
static tilec_status rt_layout(rt_sig *sig)
{
    size_t off = 0;
    int nptx = 0;
    for (int i = 0; i < sig->nparams; i++) {
        rt_param *p = &sig->params[i];
        if (p->kind != RT_P_SCALAR) {
            /* a tensor: pointer, extents, strides; a list: its pointers, length, extents, strides */
            off = (off + 7) & ~(size_t)7;
            p->offset = (uint16_t)(off > 0xffff ? 0xffff : off);
            off += p->kind == RT_P_LIST ? 8 * (size_t)p->max + 4 : 8;
            off += 4 * (size_t)p->rank;
            if (p->rank)
                off = ((off + 7) & ~(size_t)7) + 8 * (size_t)p->rank;
            nptx += (p->kind == RT_P_LIST ? 2 : 1) + 2 * p->rank;
        } else {
            size_t size = rt_dtypes[p->dtype].bits <= 8 ? 1 : rt_dtypes[p->dtype].bits / 8;
            off = (off + size - 1) & ~(size - 1);
            p->offset = (uint16_t)(off > 0xffff ? 0xffff : off);
            off += size;
            nptx += 1;
        }
    }
    if (off > RT_MAX_PARAM_BYTES || nptx > RT_MAX_PTX_PARAMS)
        return rt_fail(TILEC_ERROR_UNSUPPORTED,
                       "kernel parameters take %zu bytes in %d PTX parameters; the runtime supports %d bytes and %d "
                       "parameters",
                       off, nptx, RT_MAX_PARAM_BYTES, RT_MAX_PTX_PARAMS);
    sig->param_bytes = (int)off;
    sig->nptx = nptx;
    return TILEC_OK;
}

static tilec_status rt_finish(rt_sig_parser *sp)
{
    rt_sig *sig = sp->sig;
    static const char *const required[] = {"kernel", "entry", "arch", "threads", "grid"};
    const int have[] = {sig->kernel != NULL, sig->entry != NULL, sig->arch != NULL, sp->seen_threads, sig->ngrid};
    for (int i = 0; i < 5; i++)
        if (!have[i])
            return rt_serr("missing '%s' line", required[i]);
    if (sig->key) {
        size_t n = strlen(sig->kernel), k = strlen(sig->key);
        if (strncmp(sig->key, sig->kernel, n) || sig->key[n] != '<' || sig->key[k - 1] != '>')
            return rt_serr("key '%s' is not %s<...>", sig->key, sig->kernel);
    }
    if (!sig->clustered)
        sig->cluster[0] = sig->cluster[1] = sig->cluster[2] = 1;
    tilec_status s;
    if ((s = rt_check_params(sp)) != TILEC_OK || (s = rt_bind_names(sig)) != TILEC_OK ||
        (s = rt_build_plan(sig)) != TILEC_OK)
        return s;
    return rt_layout(sig);
}

tilec_status rt_sig_parse(const char *text, size_t len, rt_sig **out)
{
    *out = NULL;
    if (!text)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "malformed signature: no text");
    if (len > RT_MAX_SIG_BYTES)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "malformed signature: %zu bytes, more than %d", len,
                       RT_MAX_SIG_BYTES);
    if (memchr(text, 0, len))
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "malformed signature: it contains a NUL byte");
    rt_sig_parser *sp = calloc(1, sizeof *sp);
    rt_sig *sig = calloc(1, sizeof *sig);
    if (!sp || !sig) {
        free(sp);
        free(sig);
        return rt_oom();
    }
    sp->sig = sig;
    sig->num_sms_slot = -1;
    sp->nparams = -1;
    sp->max_index = -1;
    sp->ex.arena = &sig->arena;
    tilec_status s = TILEC_OK;
    char *copy = rt_arena_strndup(&sig->arena, text, len);
    if (!copy)
        s = rt_oom();
    sig->text = copy;
    const char *p = copy, *end = copy + len;
    int ended = 0;
    for (int line = 1; s == TILEC_OK && p < end; line++) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *next = eol ? eol + 1 : end;
        if (!eol)
            eol = end;
        if (eol > p && eol[-1] == '\r')
            eol--;
        sp->ex.line = line;
        sp->ex.p = p;
        sp->ex.end = eol;
        if (line == 1) {
            if ((size_t)(eol - p) != 11 || memcmp(p, "tilec-sig 1", 11))
                s = rt_fail(TILEC_ERROR_INVALID_ARGUMENT,
                            "malformed signature, line 1: expected 'tilec-sig 1' (format version 1)");
        } else if (eol == p) {
            /* blank lines are harmless */
        } else if (ended) {
            s = rt_lerr(sp, "%s", "text after 'end'");
        } else {
            char kw[32];
            rt_word(sp, kw, sizeof kw);
            if (!strcmp(kw, "end"))
                ended = 1, s = rt_line_done(sp);
            else
                s = rt_parse_line(sp, kw);
        }
        p = next;
    }
    if (s == TILEC_OK && !ended)
        s = rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "malformed signature: missing 'end'");
    if (s == TILEC_OK)
        s = rt_finish(sp);
    free(sp);
    if (s != TILEC_OK) {
        rt_sig_free(sig);
        return s;
    }
    *out = sig;
    return TILEC_OK;
}

/* ---- generic values: the canonical text of a set (the key of a specialisation) ---- */

static int rt_generic_value_ok(const char *v)
{
    if (!*v)
        return 0;
    for (; *v; v++)
        if (*v <= ' ' || *v > '~' || strchr(",<>\"\\", *v))
            return 0;
    return 1;
}

static size_t rt_generic_name_len(const char *g)
{
    const char *eq = strchr(g, '=');
    return eq ? (size_t)(eq - g) : strlen(g);
}

static int rt_generic_cmp(const char *a, const char *b)
{
    size_t na = rt_generic_name_len(a), nb = rt_generic_name_len(b);
    int c = memcmp(a, b, na < nb ? na : nb);
    return c ? c : (na > nb) - (na < nb);
}

tilec_status rt_canonical_generics(const char *const *generics, int n, char *buf, size_t cap)
{
    if (n < 0 || n > RT_MAX_GENERICS)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "%d generic values; the runtime takes 0 to %d", n,
                       RT_MAX_GENERICS);
    const char *sorted[RT_MAX_GENERICS];
    for (int i = 0; i < n; i++) {
        const char *g = generics[i];
        if (!g)
            return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "generic value %d is NULL", i);
        size_t nl = rt_generic_name_len(g);
        int ident = nl > 0 && !(g[0] >= '0' && g[0] <= '9');
        for (size_t j = 0; j < nl; j++)
            ident &= (g[j] >= 'a' && g[j] <= 'z') || (g[j] >= 'A' && g[j] <= 'Z') || (g[j] >= '0' && g[j] <= '9') ||
                     g[j] == '_';
        if (!g[nl] || !ident || !rt_generic_value_ok(g + nl + 1))
            return rt_fail(TILEC_ERROR_INVALID_ARGUMENT,
                           "generic value '%.200s' is malformed: expected NAME=VALUE (VALUE without spaces, commas, "
                           "quotes or angle brackets)",
                           g);
        int k = i;
        while (k > 0 && rt_generic_cmp(sorted[k - 1], g) > 0) {
            sorted[k] = sorted[k - 1];
            k--;
        }
        if (k > 0 && rt_generic_cmp(sorted[k - 1], g) == 0)
            return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "generic '%.*s' is given twice", (int)nl, g);
        sorted[k] = g;
    }
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        size_t gl = strlen(sorted[i]);
        if (len + gl + 2 > cap)
            return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "generic values are longer than %zu bytes", cap - 1);
        if (i)
            buf[len++] = ',';
        memcpy(buf + len, sorted[i], gl);
        len += gl;
    }
    buf[len] = 0;
    return TILEC_OK;
}

void rt_sig_free(rt_sig *s)
{
    if (!s)
        return;
    rt_arena_free(&s->arena);
    free(s);
}

int rt_sig_key_generics(const rt_sig *s, char *buf, size_t cap)
{
    if (!s->key)
        return -1;
    const char *open = strchr(s->key, '<');
    size_t n = strlen(open + 1) - 1; /* without the closing '>' (checked by rt_finish) */
    char tmp[RT_MAX_GENERICS_TEXT];
    if (n >= sizeof tmp)
        return -1;
    memcpy(tmp, open + 1, n);
    tmp[n] = 0;
    const char *parts[RT_MAX_GENERICS];
    int np = 0;
    for (char *q = tmp; n > 0; q++) {
        if (np == RT_MAX_GENERICS)
            return -1;
        parts[np++] = q;
        q = strchr(q, ',');
        if (!q)
            break;
        *q = 0;
    }
    return rt_canonical_generics(parts, np, buf, cap) == TILEC_OK ? 0 : -1;
}
