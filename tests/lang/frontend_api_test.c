/* frontend_api_test.c — checks of the front end's library entry points that the tilec CLI does
 * not reach: loading from a string, generic values given as "NAME=VALUE" strings (the runtime's
 * way to name a specialisation), and their printing. Each EXPECT_DIAG message is counted by the
 * message-coverage check (run_golden.py --coverage). */
#include "sema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                          \
        }                                                                        \
    } while (0)

/* the rendered diagnostics contain "error: MSG" as one whole line */
static void expect_diag(Compilation *c, const char *msg, int line)
{
    const char *out = c->diag.out.data ? c->diag.out.data : "";
    char want[512];
    snprintf(want, sizeof want, "error: %s\n", msg);
    if (!strstr(out, want)) {
        fprintf(stderr, "%s:%d: no diagnostic \"%s\" in:\n%s\n", __FILE__, line, msg, out);
        failures++;
    }
}
#define EXPECT_DIAG(c, msg) expect_diag((c), (msg), __LINE__)

static const char *program =
    "kernel k<T: type, N: int, F: float = 0.5, B: bool = false>(x: T[M], y: f32[M]?)\n"
    "    grid(cdiv(M, N)) threads(128)\n"
    "{\n"
    "}\n"
    "specialize k<T = (f32, bf16), N = (64, 128), y = (true, false)>;\n";

static Item *kernel_named(Compilation *c, const char *name)
{
    Sym *s = comp_lookup_global(c, name);
    return s && s->kind == SYM_KERNEL ? s->item : NULL;
}

static void test_generic_strings(void)
{
    Compilation c;
    comp_init(&c);
    CHECK(comp_load_string(&c, "prog.tl", program));
    CHECK(comp_resolve(&c));
    Item *k = kernel_named(&c, "k");
    CHECK(k != NULL);
    if (!k) {
        comp_free(&c);
        return;
    }
    GenericArgs ga;
    const char *good[] = {"T=bf16", "N=64", "y=absent"};
    CHECK(sema_generic_args_from_strings(&c, k, good, 3, &ga));
    CHECK(ga.vals[0].kind == CV_TYPE && ga.vals[1].kind == CV_INT && ga.vals[1].i == 64);
    CHECK(ga.vals[2].kind == CV_FLOAT && ga.vals[2].f == 0.5); /* the default */
    CHECK(ga.vals[3].kind == CV_BOOL && !ga.vals[3].b);
    CHECK(!ga.present[1]);
    CHECK(sema_kernel(&c, k, &ga));
    StrBuf b = {0};
    sema_format_generic_args(&b, k, &ga);
    CHECK(b.data && strcmp(b.data, "T=bf16,N=64,F=0.5,B=false,y=absent") == 0);
    sb_free(&b);

    const char *float_from_int[] = {"T=f32", "N=32", "F=2", "y=present"};
    CHECK(sema_generic_args_from_strings(&c, k, float_from_int, 4, &ga));
    CHECK(ga.vals[2].kind == CV_FLOAT && ga.vals[2].f == 2.0 && ga.present[1]);

    const char *no_eq[] = {"T"};
    CHECK(!sema_generic_args_from_strings(&c, k, no_eq, 1, &ga));
    EXPECT_DIAG(&c, "generic value 'T' must be written NAME=VALUE");
    const char *unknown[] = {"Q=1"};
    CHECK(!sema_generic_args_from_strings(&c, k, unknown, 1, &ga));
    EXPECT_DIAG(&c, "kernel 'k' has no generic parameter 'Q'");
    const char *wrong_kind[] = {"N=f32"};
    CHECK(!sema_generic_args_from_strings(&c, k, wrong_kind, 1, &ga));
    EXPECT_DIAG(&c, "generic 'N' of 'k' is an int; 'f32' is not");
    const char *missing[] = {"T=f32"};
    CHECK(!sema_generic_args_from_strings(&c, k, missing, 1, &ga));
    EXPECT_DIAG(&c, "kernel 'k' needs a value for generic 'N'");
    comp_free(&c);
}

static void test_specialize_expansion(void)
{
    Compilation c;
    comp_init(&c);
    CHECK(comp_load_string(&c, "prog.tl", program));
    CHECK(comp_resolve(&c));
    Module *m = c.modules[0];
    Item *spec = m->nitems == 2 ? m->items[1] : NULL;
    CHECK(spec && spec->kind == IT_SPECIALIZE);
    if (spec) {
        GenericArgs args[16];
        Item *k = NULL;
        /* 2 types x 2 sizes x present/absent, in order, the last name varying fastest */
        CHECK(sema_expand_specialize(&c, spec, &k, args, 16) == 8);
        CHECK(k && strcmp(k->name.s, "k") == 0);
        StrBuf b = {0};
        sema_format_generic_args(&b, k, &args[7]);
        CHECK(b.data && strcmp(b.data, "T=bf16,N=128,F=0.5,B=false,y=absent") == 0);
        sb_free(&b);
        CHECK(sema_expand_specialize(&c, spec, &k, args, 3) == 3); /* `max` is respected */
    }
    comp_free(&c);
}

static void test_big_string(void)
{
    /* files are refused before they are read; a string is checked when it is loaded */
    size_t n = (8u << 20) + 16;
    char *text = malloc(n + 1);
    memset(text, ' ', n);
    text[n] = 0;
    Compilation c;
    comp_init(&c);
    CHECK(!comp_load_string(&c, "big.tl", text));
    EXPECT_DIAG(&c, "'big.tl' is larger than 8 MiB");
    comp_free(&c);
    free(text);
}

static void test_reuse(void)
{
    /* the same Compilation checks a kernel many times (the JIT does): no state leaks between runs */
    Compilation c;
    comp_init(&c);
    CHECK(comp_load_string(&c, "r.tl",
                           "fn sq(v: f32) -> f32 { return v * v; }\n"
                           "kernel r(x: f32[N]) grid(cdiv(N, 128)) threads(128) {\n"
                           "    frag t: f32[128];\n"
                           "    copy(x[block.x * 128 : block.x * 128 + 128], t);\n"
                           "    parallel (i) in t { t[i] = sq(t[i]); }\n"
                           "    copy(t, x[block.x * 128 : block.x * 128 + 128]);\n"
                           "}\n"));
    Item *k = kernel_named(&c, "r");
    for (int i = 0; i < 100 && k; i++)
        CHECK(sema_kernel(&c, k, NULL));
    CHECK(c.diag.nerrors == 0);
    comp_free(&c);
}

int main(void)
{
    test_generic_strings();
    test_specialize_expansion();
    test_big_string();
    test_reuse();
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    else
        printf("frontend_api_test: all checks passed\n");
    return failures ? 1 : 0;
}
