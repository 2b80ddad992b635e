/* api_requests_test.c — one tilec_program serving many tilec_compile requests, as the runtime's
 * JIT does: a failing request (unknown kernel, bad generic value, unsupported target, an error
 * only one specialisation has) reports its own diagnostics through
 * tilec_program_last_diagnostics and leaves the program usable for the next request. */
#include "tilec/compiler.h"

#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);              \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static const char *source =
    "kernel scale<N: int>(x: f32[M], y: f32[M]) grid(cdiv(M, 128)) threads(128)\n"
    "{\n"
    "    require N > 0, \"N must be positive\";\n"
    "    let i = block.x * 128 + thread.x;\n"
    "    if i < M { y[i] = x[i] * f32(N); }\n"
    "}\n"
    "kernel rows<B: int>(x: f32[R, C]) grid(R) threads(B)\n"
    "{\n"
    "    frag t: f32[B];\n"
    "    copy(x[block.x, 0 : B], t);\n"
    "}\n";

/* compiles kernel with one generic; returns the status, destroys any artifact */
static tilec_status compile1(tilec_program *p, const char *kernel, const char *generic, int sm)
{
    tilec_target t = {sm, 3, 0};
    tilec_artifact *a = NULL;
    const char *g[1] = {generic};
    tilec_status s = tilec_compile(p, kernel, g, generic ? 1 : 0, &t, &a);
    if (s == TILEC_OK)
        CHECK(a && a->ptx && strstr(a->ptx, ".entry"));
    if (a)
        tilec_artifact_destroy(a);
    return s;
}

static int has(const char *text, const char *part) { return strstr(text, part) != NULL; }

int main(void)
{
    tilec_program *p = NULL;
    CHECK(tilec_program_from_string("req.tl", source, NULL, &p) == TILEC_OK);
    if (!p)
        return 1;

    CHECK(compile1(p, "scale", "N=2", 90) == TILEC_OK);
    CHECK(strcmp(tilec_program_last_diagnostics(p), "") == 0);

    CHECK(compile1(p, "nope", NULL, 90) == TILEC_ERROR_NOT_FOUND);
    CHECK(has(tilec_program_last_diagnostics(p), "error: no kernel named 'nope'"));

    CHECK(compile1(p, "scale", "N=f32", 90) == TILEC_ERROR_COMPILE);
    CHECK(has(tilec_program_last_diagnostics(p), "generic 'N' of 'scale' is an int; 'f32' is not"));
    CHECK(!has(tilec_program_last_diagnostics(p), "nope")); /* only this request's messages */

    CHECK(compile1(p, "scale", "N=2", 75) == TILEC_ERROR_UNSUPPORTED);
    CHECK(has(tilec_program_last_diagnostics(p), "error: unsupported target sm_75 (sm_90a and sm_100a are supported)"));

    /* an error of one specialisation only (a requirement that fails for N = 0) */
    CHECK(compile1(p, "scale", "N=0", 90) == TILEC_ERROR_COMPILE);
    CHECK(has(tilec_program_last_diagnostics(p), "N must be positive"));

    /* after all of that the program still compiles, for both architectures */
    CHECK(compile1(p, "scale", "N=3", 90) == TILEC_OK);
    CHECK(compile1(p, "rows", "B=256", 100) == TILEC_OK);
    CHECK(strcmp(tilec_program_last_diagnostics(p), "") == 0);
    /* the whole record keeps every message */
    CHECK(has(tilec_program_diagnostics(p), "no kernel named 'nope'"));

    tilec_program_destroy(p);
    if (failures)
        fprintf(stderr, "api_requests_test: %d failed\n", failures);
    else
        printf("api_requests_test: ok\n");
    return failures ? 1 : 0;
}
