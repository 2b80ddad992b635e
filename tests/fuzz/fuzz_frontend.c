/* fuzz_frontend.c — libFuzzer target over the front end: parse, resolve, then what `tilec check`
 * does — semantic analysis of every kernel (generic check) and fn, and each declared
 * specialisation (and each kernel without generics) through the tile IR passes on sm_90a — and
 * the AST printer as `tilec emit --stage=ast` does. Any crash, sanitizer report, leak or slow
 * input is a bug: the compiler runs inside long-lived processes (the JIT). */
#include "compile.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_INSTANCES = 8 }; /* per `specialize`: enough to reach the instance paths */

/* sema, lowering and the tile IR passes of one specialisation, as `tilec check` runs them */
static void lower_one(Compilation *c, Item *k, const GenericArgs *args)
{
    CompileRequest rq = {.kernel = k, .args = *args, .sm = 90, .opt_level = 3, .stage = STAGE_TIR};
    CompileResult r;
    compile_specialization(c, &rq, &r);
    compile_result_free(&r);
}

static void check_kernels(Compilation *c)
{
    GenericArgs *args = malloc(sizeof(GenericArgs) * MAX_INSTANCES);
    for (int i = 0; i < c->nitems; i++) {
        Item *it = c->items[i];
        if (it->kind == IT_KERNEL) {
            sema_kernel(c, it, NULL);
            GenericArgs none;
            if (it->ngenerics == 0 && sema_generic_args_from_strings(c, it, NULL, 0, &none))
                lower_one(c, it, &none);
        } else if (it->kind == IT_FN) {
            sema_fn_generic(c, it);
        } else if (it->kind == IT_SPECIALIZE) {
            Item *k = NULL;
            int n = sema_expand_specialize(c, it, &k, args, MAX_INSTANCES);
            for (int j = 0; j < n; j++) {
                lower_one(c, k, &args[j]);
                StrBuf b = {0};
                sema_format_specialization(&b, k, &args[j]);
                sb_free(&b);
            }
        }
    }
    free(args);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a NUL ends the text as comp_load_string sees it; keep the input as one C string */
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    Compilation c;
    comp_init(&c);
    if (comp_load_string(&c, "fuzz.tl", text)) {
        StrBuf ast = {0};
        ast_print_module(&ast, c.modules[0]);
        sb_free(&ast);
        if (comp_resolve(&c))
            check_kernels(&c);
    }
    comp_free(&c);
    free(text);
    return 0;
}
