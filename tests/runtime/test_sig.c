/* test_sig.c — the signature parser and the expression evaluator: exact errors for malformed
 * lines, evaluation semantics (C division, floor/ceil variants, short-circuits, overflow), infix
 * rendering, and a mutation fuzz loop that must never crash or accept garbage silently. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_test.h"

static const char *const good =
    "tilec-sig 1\n"
    "kernel k\n"
    "entry k_entry\n"
    "key k<T=f32,B=4>\n"
    "arch sm_90a\n"
    "threads 128\n"
    "smem 1024\n"
    "cluster 2 1 1\n"
    "flags pdl\n"
    "nparams 3\n"
    "tensor 0 x f32 2 16\n"
    "dim 0 0 (bind M)\n"
    "dim 0 1 (bind N)\n"
    "stride 0 0 (bind sx)\n"
    "stride 0 1 1\n"
    "tensor 1 y bf16 2 16 written\n"
    "dim 1 0 M\n"
    "dim 1 1 N\n"
    "scalar 2 eps f32\n"
    "grid (cdiv M 64) (min N num_sms)\n"
    "require (== (% N 64) 0) \"N must be a multiple of 64 \\\"really\\\" \\\\ ok\"\n"
    "end\n";

static void test_good(void)
{
    rt_sig *s = NULL;
    CHECK_OK(rt_sig_parse(good, strlen(good), &s));
    if (!s)
        return;
    CHECK_STR(s->kernel, "k");
    CHECK_STR(s->entry, "k_entry");
    CHECK_STR(s->arch, "sm_90a");
    CHECK(s->threads == 128 && s->smem == 1024 && s->clustered && s->cluster[0] == 2 && s->pdl && !s->cooperative);
    CHECK(s->nparams == 3 && s->params[0].has_strides && !s->params[1].has_strides);
    CHECK(s->params[1].flags == TILEC_RT_PARAM_WRITTEN && s->params[1].dtype == TILEC_RT_BF16);
    CHECK(s->nptx == 5 + 5 + 1);
    CHECK(s->params[0].offset == 0 && s->params[1].offset == 32 && s->params[2].offset == 64 && s->param_bytes == 68);
    CHECK(s->nrequires == 1);
    CHECK_STR(s->requires[0].message, "N must be a multiple of 64 \"really\" \\ ok");
    char g[256];
    CHECK(rt_sig_key_generics(s, g, sizeof g) == 0);
    CHECK_STR(g, "B=4,T=f32");
    CHECK(s->nbinds == 3 && s->nchecks == 3);
    rt_sig_free(s);
}

/* Each case: a replacement for one line of `good` (or an addition), and the exact error. */
static const struct {
    const char *from, *to, *message;
} bad[] = {
    {"tilec-sig 1\n", "tilec-sig 2\n", "malformed signature, line 1: expected 'tilec-sig 1' (format version 1)"},
    {"end\n", "", "malformed signature: missing 'end'"},
    {"end\n", "end\nkernel z\n", "malformed signature, line 23: text after 'end'"},
    {"kernel k\n", "", "malformed signature: missing 'kernel' line"},
    {"kernel k\n", "kernel k\nkernel k\n", "malformed signature, line 3: kernel given twice"},
    {"kernel k\n", "kernel 9k\n", "malformed signature, line 2: bad kernel name '9k'"},
    {"entry k_entry\n", "entry\n", "malformed signature, line 3: missing entry"},
    {"key k<T=f32,B=4>\n", "key q<T=f32>\n", "malformed signature: key 'q<T=f32>' is not k<...>"},
    {"arch sm_90a\n", "arch sm_80\n", "malformed signature, line 5: unknown arch 'sm_80' (sm_90a, sm_100a or host)"},
    {"threads 128\n", "threads 0\n", "malformed signature, line 6: threads must be at least 1"},
    {"threads 128\n", "threads 2048\n", "malformed signature, line 6: threads must be an integer in 0..1024, got '2048'"},
    {"threads 128\n", "threads 12x\n", "malformed signature, line 6: threads must be an integer in 0..1024, got '12x'"},
    {"threads 128\n", "threads 128 9\n", "malformed signature, line 6: unexpected '9' at the end of the line"},
    {"threads 128\n", "threads -1\n", "malformed signature, line 6: threads must be an integer in 0..1024, got '-1'"},
    {"cluster 2 1 1\n", "cluster 2 0 1\n", "malformed signature, line 8: cluster dimensions must be at least 1"},
    {"cluster 2 1 1\n", "cluster 2 1\n", "malformed signature, line 8: missing cluster dimension"},
    {"flags pdl\n", "flags pdl fast\n", "malformed signature, line 9: unknown flag 'fast'"},
    {"nparams 3\n", "nparams 2\n", "malformed signature: parameter 2 is beyond nparams 2"},
    {"nparams 3\n", "nparams 4\n", "malformed signature: parameter 3 has no tensor, list or scalar line"},
    {"nparams 3\n", "", "malformed signature: missing 'nparams' line"},
    {"tensor 0 x f32 2 16\n", "tensor 0 x f33 2 16\n", "malformed signature, line 11: unknown dtype 'f33'"},
    {"tensor 0 x f32 2 16\n", "tensor 0 x f32 9 16\n",
     "malformed signature, line 11: rank must be an integer in 0..8, got '9'"},
    {"tensor 0 x f32 2 16\n", "tensor 0 x f32 2 12\n", "malformed signature, line 11: alignment must be a power of two, got 12"},
    {"tensor 0 x f32 2 16\n", "tensor 0 x f32 2 16 absent\n",
     "malformed signature, line 11: tensor 'x' is absent but not optional"},
    {"tensor 0 x f32 2 16\n", "tensor 0 x f32 2 16 sideways\n", "malformed signature, line 11: unknown tensor flag 'sideways'"},
    {"tensor 0 x f32 2 16\n", "tensor 99 x f32 2 16\n",
     "malformed signature, line 11: parameter index must be an integer in 0..63, got '99'"},
    {"tensor 0 x f32 2 16\n", "tensor 0 y f32 2 16\n", "malformed signature: parameter name 'y' is used twice"},
    {"tensor 1 y bf16 2 16 written\n", "tensor 0 y bf16 2 16 written\n", "malformed signature, line 16: parameter 0 is defined twice"},
    {"dim 0 1 (bind N)\n", "", "malformed signature: tensor 'x' has no dim line for axis 1"},
    {"dim 0 1 (bind N)\n", "dim 0 1 (bind N)\ndim 0 1 N\n", "malformed signature, line 14: dim given twice for this axis"},
    {"stride 0 1 1\n", "", "malformed signature: tensor 'x' has stride lines, but none for axis 1"},
    {"dim 1 1 N\n", "dim 1 1 N\ndim 1 2 N\n", "malformed signature: 'y' has a dim or stride line for axis 2 beyond its rank"},
    {"dim 1 1 N\n", "dim 1 1 Q\n", "malformed signature: name 'Q' is used but never bound"},
    {"dim 1 1 N\n", "dim 1 1 (+ N)\n", "malformed signature, line 18: '+' needs at least 2 operands, got 1"},
    {"dim 1 1 N\n", "dim 1 1 (- N 1 2)\n", "malformed signature, line 18: too many operands for '-' (at most 2)"},
    {"dim 1 1 N\n", "dim 1 1 (pow N 2)\n", "malformed signature, line 18: unknown operator 'pow'"},
    {"dim 1 1 N\n", "dim 1 1 (+ N 1\n", "malformed signature, line 18: missing ')'"},
    {"dim 1 1 N\n", "dim 1 1 (+ N 1))\n", "malformed signature, line 18: unexpected ')' at the end of the line"},
    {"dim 1 1 N\n", "dim 1 1 ()\n", "malformed signature, line 18: expected an operator after '('"},
    {"dim 1 1 N\n", "dim 1 1\n", "malformed signature, line 18: expected an expression"},
    {"dim 1 1 N\n", "dim 1 1 (+ (bind Z) 1)\n", "malformed signature, line 18: 'any' and (bind NAME) cannot be operands"},
    {"dim 1 1 N\n", "dim 1 1 (bind 3)\n", "malformed signature, line 18: (bind NAME) needs a name, found '3'"},
    {"dim 1 1 N\n", "dim 1 1 99999999999999999999\n", "malformed signature, line 18: number out of range '99999999999999999999'"},
    {"dim 1 1 N\n", "dim 1 1 1.2.3\n", "malformed signature, line 18: bad number '1.2.3'"},
    {"dim 1 1 N\n", "dim 1 1 N#\n", "malformed signature, line 18: unexpected 'N#'"},
    {"scalar 2 eps f32\n", "scalar 2 M f32\n", "malformed signature: 'M' is both a scalar and a shape or stride name"},
    {"scalar 2 eps f32\n", "scalar 2 num_sms f32\n", "malformed signature: scalar 'num_sms' has a reserved name"},
    {"scalar 2 eps f32\ngrid (cdiv M 64) (min N num_sms)\n", "scalar 2 eps e4m3\ngrid (cdiv M 64) (min N eps)\n",
     "malformed signature: scalar 'eps' of type e4m3 cannot appear in an expression"},
    {"grid (cdiv M 64) (min N num_sms)\n", "grid\n", "malformed signature, line 20: grid needs 1 to 3 expressions"},
    {"grid (cdiv M 64) (min N num_sms)\n", "grid 1 2 3 4\n", "malformed signature, line 20: grid has more than 3 dimensions"},
    {"grid (cdiv M 64) (min N num_sms)\n", "grid any\n",
     "malformed signature, line 20: 'any' and (bind NAME) cannot be grid dimensions"},
    {"grid (cdiv M 64) (min N num_sms)\n", "", "malformed signature: missing 'grid' line"},
    {"require (== (% N 64) 0) \"N must be a multiple of 64 \\\"really\\\" \\\\ ok\"\n", "require (== N 0)\n",
     "malformed signature, line 21: require needs a quoted message after its expression"},
    {"require (== (% N 64) 0) \"N must be a multiple of 64 \\\"really\\\" \\\\ ok\"\n", "require (== N 0) \"open\n",
     "malformed signature, line 21: unterminated message"},
    {"require (== (% N 64) 0) \"N must be a multiple of 64 \\\"really\\\" \\\\ ok\"\n", "require (== N 0) \"a\\n\"\n",
     "malformed signature, line 21: bad escape in message (only \\\" and \\\\)"},
    {"smem 1024\n", "smem 1024\nsmem 1\n", "malformed signature, line 8: smem given twice"},
    {"smem 1024\n", "shmem 1024\n", "malformed signature, line 7: unknown item 'shmem'"},
    {"dim 0 0 (bind M)\n", "dim 0 0 (bind num_sms)\n", "malformed signature: 'num_sms' cannot be bound from a tensor"},
};

static char *replace(const char *text, const char *from, const char *to);

/* a tensor list between a tensor and a scalar: layout, names (the length binds before the shapes),
 * plan */
static const char *const good_list =
    "tilec-sig 1\n"
    "kernel k\n"
    "entry k\n"
    "arch sm_90a\n"
    "threads 64\n"
    "nparams 4\n"
    "tensor 0 r bf16 3 16\n"
    "dim 0 0 (bind N)\n"
    "dim 0 1 (bind M)\n"
    "dim 0 2 (bind H)\n"
    "list 1 xs f32 2 16 10 written\n"
    "len 1 (bind L)\n"
    "dim 1 0 N\n"
    "dim 1 1 (bind C)\n"
    "stride 1 0 (bind sx)\n"
    "stride 1 1 1\n"
    "list 2 ys bf16 1 16 3\n"
    "len 2 (- L 1)\n"
    "dim 2 0 H\n"
    "scalar 3 eps f32\n"
    "grid N\n"
    "end\n";

static void test_list(void)
{
    rt_sig *s = NULL;
    CHECK_OK(rt_sig_parse(good_list, strlen(good_list), &s));
    if (!s)
        return;
    const rt_param *xs = &s->params[1], *ys = &s->params[2];
    CHECK(xs->kind == RT_P_LIST && xs->max == 10 && xs->rank == 2 && xs->flags == TILEC_RT_PARAM_WRITTEN &&
          xs->has_strides && xs->len);
    CHECK(ys->kind == RT_P_LIST && ys->max == 3 && !ys->has_strides);
    /* r: 8 + 12, strides at 24: 48; xs at 48: 80 pointer bytes, length at 128, extents at 132,
     * strides at 144: 160; ys at 160: 24 pointer bytes, length at 184, extent at 188, stride at 192:
     * 200; eps at 200 */
    CHECK(s->params[0].offset == 0 && xs->offset == 48 && ys->offset == 160 && s->params[3].offset == 200);
    CHECK(s->param_bytes == 204);
    CHECK(s->nptx == 7 + 6 + 4 + 1);
    /* L, C, sx bind from xs (the length first); N, H and ys's length are checks */
    CHECK(s->nbinds == 3 + 3 && s->nchecks == 1 + 1 + 1 + 1);
    CHECK(s->binds[3].what == RT_W_LEN && s->binds[3].param == 1 && s->binds[4].what == RT_W_DIM &&
          s->binds[5].what == RT_W_STRIDE);
    rt_sig_free(s);
    /* the most a kernel's parameters take, 32764 bytes: a list of 4090 tensors and a scalar */
    const char *big = "tilec-sig 1\nkernel k\nentry k\narch sm_90a\nthreads 32\nnparams 2\nlist 0 xs u8 1 16 4090\n"
                      "len 0 (bind L)\ndim 0 0 (bind N)\nscalar 1 c i32\ngrid 1\nend\n";
    CHECK_OK(rt_sig_parse(big, strlen(big), &s));
    CHECK(s && s->param_bytes == 32720 + 4 + 4 + 8 + 4);
    rt_sig_free(s);
    const char *over = "tilec-sig 1\nkernel k\nentry k\narch sm_90a\nthreads 32\nnparams 2\nlist 0 xs u8 1 16 4095\n"
                       "len 0 (bind L)\ndim 0 0 (bind N)\nscalar 1 c i32\ngrid 1\nend\n";
    CHECK_ERR(rt_sig_parse(over, strlen(over), &s), TILEC_ERROR_UNSUPPORTED,
              "kernel parameters take 32780 bytes in 5 PTX parameters; the runtime supports 32764 bytes and 512 "
              "parameters");
}

static const struct {
    const char *from, *to, *message;
} bad_list[] = {
    {"list 1 xs f32 2 16 10 written\n", "list 1 xs f32 2 16 0 written\n",
     "malformed signature, line 11: a list takes at least 1 tensor"},
    {"list 1 xs f32 2 16 10 written\n", "list 1 xs f32 2 16 5000 written\n",
     "malformed signature, line 11: list max must be an integer in 0..4096, got '5000'"},
    {"list 1 xs f32 2 16 10 written\n", "list 1 xs f32 2 16 written\n",
     "malformed signature, line 11: list max must be an integer in 0..4096, got 'written'"},
    {"list 1 xs f32 2 16 10 written\n", "list 1 xs f32 2 16 10 optional\n",
     "malformed signature, line 11: unknown list flag 'optional'"},
    {"len 1 (bind L)\n", "", "malformed signature: list 'xs' has no len line"},
    {"len 1 (bind L)\n", "len 1 (bind L)\nlen 1 3\n", "malformed signature, line 13: len given twice for this list"},
    {"len 1 (bind L)\n", "len 1 any\n", "malformed signature: the length of list 'xs' cannot be 'any' or num_sms"},
    {"dim 0 0 (bind N)\n", "dim 0 0 (bind N)\nlen 0 3\n", "malformed signature: 'r' has a len line but is not a list"},
    {"dim 1 1 (bind C)\n", "", "malformed signature: list 'xs' has no dim line for axis 1"},
    {"stride 1 1 1\n", "", "malformed signature: list 'xs' has stride lines, but none for axis 1"},
    {"len 2 (- L 1)\n", "len 2 (- Q 1)\n", "malformed signature: name 'Q' is used but never bound"},
};

static void test_list_malformed(void)
{
    for (size_t i = 0; i < sizeof bad_list / sizeof bad_list[0]; i++) {
        char *t = replace(good_list, bad_list[i].from, bad_list[i].to);
        rt_sig *s = NULL;
        CHECK_ERR(rt_sig_parse(t, strlen(t), &s), TILEC_ERROR_INVALID_ARGUMENT, bad_list[i].message);
        CHECK(s == NULL);
        free(t);
    }
}

static char *replace(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    if (!at) {
        fprintf(stderr, "test bug: '%s' not in the signature\n", from);
        exit(2);
    }
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *r = malloc(n);
    snprintf(r, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return r;
}

static void test_malformed(void)
{
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *t = replace(good, bad[i].from, bad[i].to);
        rt_sig *s = NULL;
        CHECK_ERR(rt_sig_parse(t, strlen(t), &s), TILEC_ERROR_INVALID_ARGUMENT, bad[i].message);
        CHECK(s == NULL);
        free(t);
    }
    rt_sig *s = NULL;
    CHECK_ERR(rt_sig_parse("tilec-sig 1\n\0end\n", 17, &s), TILEC_ERROR_INVALID_ARGUMENT,
              "malformed signature: it contains a NUL byte");
    CHECK_ERR(rt_sig_parse("", 0, &s), TILEC_ERROR_INVALID_ARGUMENT, "malformed signature: missing 'end'");
    /* nesting and size limits */
    char deep[400];
    int n = snprintf(deep, sizeof deep, "%s", "tilec-sig 1\nkernel k\nentry e\narch sm_90a\nthreads 1\nnparams 0\ngrid ");
    for (int i = 0; i < 40; i++)
        n += snprintf(deep + n, sizeof deep - (size_t)n, "(neg ");
    n += snprintf(deep + n, sizeof deep - (size_t)n, "1");
    for (int i = 0; i < 40; i++)
        n += snprintf(deep + n, sizeof deep - (size_t)n, ")");
    snprintf(deep + n, sizeof deep - (size_t)n, "\nend\n");
    CHECK_ERR(rt_sig_parse(deep, strlen(deep), &s), TILEC_ERROR_INVALID_ARGUMENT,
              "malformed signature, line 7: expression nested deeper than 32");
}

/* ---- expressions ---- */

static rt_expr *expr(rt_arena *a, const char *text)
{
    rt_expr_parser ps = {a, text, text + strlen(text), 1, 0};
    rt_expr *e = NULL;
    if (rt_expr_parse(&ps, &e) != TILEC_OK) {
        fprintf(stderr, "test bug: '%s' does not parse: %s\n", text, tilec_rt_last_error());
        exit(2);
    }
    return e;
}

static const char *eval(const char *text, rt_value *v)
{
    rt_arena a = {0};
    const char *err = rt_expr_eval(expr(&a, text), NULL, v);
    rt_arena_free(&a);
    return err;
}

static int eval_int(const char *text, int64_t want)
{
    rt_value v;
    const char *err = eval(text, &v);
    if (err || v.is_float || v.i != want) {
        fprintf(stderr, "  %s = %lld (%s), expected %lld\n", text, (long long)v.i, err ? err : "ok", (long long)want);
        return 0;
    }
    return 1;
}

static int eval_float(const char *text, double want)
{
    rt_value v;
    const char *err = eval(text, &v);
    return !err && v.is_float && v.f == want;
}

static void test_eval(void)
{
    CHECK(eval_int("(/ -7 2)", -3));
    CHECK(eval_int("(% -7 2)", -1));
    CHECK(eval_int("(cdiv 7 2)", 4));
    CHECK(eval_int("(cdiv -7 2)", -3));
    CHECK(eval_int("(cdiv 8 2)", 4));
    CHECK(eval_int("(floordiv -7 2)", -4));
    CHECK(eval_int("(floordiv 7 -2)", -4));
    CHECK(eval_int("(floormod -7 2)", 1));
    CHECK(eval_int("(floormod 7 -2)", -1));
    CHECK(eval_int("(align 100 64)", 128));
    CHECK(eval_int("(align 128 64)", 128));
    CHECK(eval_int("(min 5 3 9)", 3));
    CHECK(eval_int("(max 5 3 9)", 9));
    CHECK(eval_int("(+ 1 2 3 4)", 10));
    CHECK(eval_int("(* 2 3 4)", 24));
    CHECK(eval_int("(select (< 1 2) 10 20)", 10));
    CHECK(eval_int("(select 0 (/ 1 0) 20)", 20)); /* the untaken branch is not evaluated */
    CHECK(eval_int("(|| 1 (/ 1 0))", 1));
    CHECK(eval_int("(&& 0 (/ 1 0))", 0));
    CHECK(eval_int("(&& 1 2 3)", 1));
    CHECK(eval_int("(! 0)", 1));
    CHECK(eval_int("(neg 5)", -5));
    CHECK(eval_int("(>= 3 3)", 1));
    CHECK(eval_int("(!= 3 3)", 0));
    CHECK(eval_float("(/ 1 2.0)", 0.5));
    CHECK(eval_float("(* 2 0.25)", 0.5));
    CHECK(eval_float("(cdiv 5 2.0)", 3.0));
    CHECK(eval_int("(< 0.5 1)", 1));
    rt_value v;
    CHECK_STR(eval("(/ 1 0)", &v), "division by zero");
    CHECK_STR(eval("(% 1 0)", &v), "division by zero");
    CHECK_STR(eval("(cdiv 1 0)", &v), "division by zero");
    CHECK_STR(eval("(/ -9223372036854775808 -1)", &v), "integer overflow");
    CHECK_STR(eval("(* 9223372036854775807 2)", &v), "integer overflow");
    CHECK_STR(eval("(+ 9223372036854775807 1)", &v), "integer overflow");
    CHECK_STR(eval("(neg -9223372036854775808)", &v), "integer overflow");
    CHECK_STR(eval("(align 9223372036854775807 2)", &v), "integer overflow");
}

static void render_is(const char *text, const char *want)
{
    rt_arena a = {0};
    char buf[256];
    rt_sbuf b;
    rt_sb_init(&b, buf, sizeof buf);
    rt_expr_render(&b, expr(&a, text));
    CHECK_STR(buf, want);
    rt_arena_free(&a);
}

static void test_render(void)
{
    render_is("(== (% M 64) 0)", "M % 64 == 0");
    render_is("(* (+ a b) c)", "(a + b) * c");
    render_is("(- a (- b c))", "a - (b - c)");
    render_is("(- (- a b) c)", "a - b - c");
    render_is("(&& (< a b) (|| c d))", "a < b && (c || d)");
    render_is("(neg (+ a 1))", "-(a + 1)");
    render_is("(! (== a b))", "!(a == b)");
    render_is("(cdiv (* M N) 128)", "cdiv(M * N, 128)");
    render_is("(select c 1 2.5)", "select(c, 1, 2.5)");
}

/* ---- fuzz ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void mutate(char *t, size_t *len, size_t cap)
{
    static const char *const tokens[] = {"(", ")", " ", "\n", "\"", "\\", "bind", "any", "-", "0", "999999", "x",
                                         "M", "tensor 0 ", "dim 0 0 ", "end\n", "(cdiv ", "1.5", "nparams 64\n"};
    int ops = 1 + (int)(next() % 4);
    for (int k = 0; k < ops; k++) {
        size_t at = *len ? next() % *len : 0;
        switch (next() % 5) {
        case 0: /* flip a byte */
            if (*len)
                t[at] = (char)(next() % 256 ? next() % 128 : 0);
            break;
        case 1: /* truncate */
            *len = at;
            break;
        case 2: { /* insert a token */
            const char *tok = tokens[next() % (sizeof tokens / sizeof tokens[0])];
            size_t n = strlen(tok);
            if (*len + n < cap) {
                memmove(t + at + n, t + at, *len - at);
                memcpy(t + at, tok, n);
                *len += n;
            }
            break;
        }
        case 3: { /* delete a span */
            size_t n = next() % 16;
            if (at + n > *len)
                n = *len - at;
            memmove(t + at, t + at + n, *len - at - n);
            *len -= n;
            break;
        }
        default: { /* duplicate a span */
            size_t n = next() % 40;
            if (at + n > *len)
                n = *len - at;
            if (*len + n < cap) {
                memmove(t + at + n, t + at, *len - at);
                *len += n;
            }
            break;
        }
        }
    }
}

static void test_fuzz(void)
{
    const char *seeds[] = {good, good_list,
                           "tilec-sig 1\nkernel t\nentry t\nkey t<>\narch sm_100a\nthreads 256\nflags cooperative\n"
                           "nparams 3\ntensor 0 x e2m1 3 1 optional\ndim 0 0 (bind B)\ndim 0 1 (align B 8)\n"
                           "dim 0 2 any\ntensor 1 m u8 1 1 optional absent\ndim 1 0 (bind Z)\nscalar 2 s i64\n"
                           "grid (select (> s 0) (floordiv B s) 1) (max 1 (floormod B 3))\n"
                           "require (|| (== s 0) (== (% B s) 0)) \"B % s\"\nend\n"};
    enum { CAP = 4096 };
    char *t = malloc(CAP);
    int accepted = 0, rejected = 0;
    for (int iter = 0; iter < 20000; iter++) {
        const char *seed = seeds[iter % 3];
        size_t len = strlen(seed);
        memcpy(t, seed, len);
        mutate(t, &len, CAP);
        rt_sig *s = NULL;
        tilec_status st = rt_sig_parse(t, len, &s);
        if (st == TILEC_OK) {
            accepted++;
            /* a parsed signature must also survive validation with arbitrary arguments */
            tilec_rt_arg args[RT_MAX_PARAMS];
            static tilec_rt_tensor pool[RT_MAX_PARAMS][4]; /* the tensors of list arguments */
            for (int i = 0; i < s->nparams; i++) {
                int64_t shape[TILEC_RT_MAX_RANK], strides[TILEC_RT_MAX_RANK];
                for (int a = 0; a < TILEC_RT_MAX_RANK; a++) {
                    shape[a] = (int64_t)(next() % 5) - 1;
                    strides[a] = (int64_t)(next() % 5) - 1;
                }
                const rt_param *p = &s->params[i];
                if (p->kind == RT_P_SCALAR)
                    args[i] = tilec_rt_arg_int(next() % 3 ? (tilec_rt_dtype)p->dtype : TILEC_RT_I64,
                                               (int64_t)(next() % 7) - 3);
                else if (p->flags & TILEC_RT_PARAM_ABSENT)
                    args[i] = tilec_rt_arg_absent();
                else if (p->kind == RT_P_LIST) {
                    int n = (int)(next() % 5);
                    for (int e = 0; e < n; e++)
                        pool[i][e] = tilec_rt_tensor_make((void *)(uintptr_t)(next() % 4 * 16), (tilec_rt_dtype)p->dtype,
                                                          next() % 8 ? p->rank : p->rank + 1, shape, strides);
                    args[i] = tilec_rt_arg_list(pool[i], n);
                } else
                    args[i] = tilec_rt_arg_tensor((void *)(uintptr_t)(next() % 4 * 16), (tilec_rt_dtype)p->dtype,
                                                  next() % 8 ? p->rank : p->rank + 1, shape, strides);
            }
            tilec_rt_launch_config cfg;
            _Alignas(16) unsigned char buf[RT_MAX_PARAM_BYTES];
            void *ptrs[RT_MAX_PTX_PARAMS];
            tilec_status b = rt_bind(s, args, s->nparams, 132, &cfg, buf, ptrs);
            CHECK(b == TILEC_OK || (b == TILEC_ERROR_LAUNCH && tilec_rt_last_error()[0]));
            rt_sig_free(s);
        } else {
            rejected++;
            if (st != TILEC_ERROR_INVALID_ARGUMENT || strncmp(tilec_rt_last_error(), "malformed signature", 19)) {
                CHECK(!"a rejected signature gives TILEC_ERROR_INVALID_ARGUMENT and a 'malformed signature' message");
                fprintf(stderr, "  input: %.*s\n  status %d: %s\n", (int)len, t, (int)st, tilec_rt_last_error());
                break;
            }
        }
    }
    printf("fuzz: %d accepted, %d rejected\n", accepted, rejected);
    CHECK(accepted > 150 && rejected > 1500);
    free(t);
}

int main(int argc, char **argv)
{
    static const rt_test_case cases[] = {
        RT_TEST(test_good), RT_TEST(test_malformed), RT_TEST(test_list), RT_TEST(test_list_malformed),
        RT_TEST(test_eval), RT_TEST(test_render),       RT_TEST(test_fuzz),
    };
    return rt_test_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
