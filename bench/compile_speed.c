/* compile_speed.c — median milliseconds per specialisation from source to PTX (parse, check,
 * lower, LLVM O3) and to cubin (plus ptxas), over the specialisations kernels.tl declares.
 * Usage: compile_speed KERNELS.TL [ARCH] [REPEATS] [--ptx-only] [--each] [--every N] [--only NAME]
 * (--ptx-only skips ptxas: the sanitizer build uses it to check that compiling the whole library
 * leaks nothing; --each prints each specialisation's times; --every N compiles every Nth
 * specialisation; --only NAME those of kernels whose name contains NAME, --only =NAME those of the kernel NAME) */
#include "compile.h"
#include "cuda_tools.h"
#include "driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}


int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: compile_speed KERNELS.TL [sm_90a|sm_100a] [repeats] [--ptx-only] [--each] [--every N] [--only NAME]\n");
        return 2;
    }
    const char *file = argv[1];
    int sm = argc > 2 ? driver_arch(argv[2]) : 90;
    if (!sm)
        return 2;
    int reps = argc > 3 ? atoi(argv[3]) : 1;
    bool ptx_only = false, per_spec = false;
    int every = 1;
    const char *only = NULL;
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "--ptx-only"))
            ptx_only = true;
        else if (!strcmp(argv[i], "--each"))
            per_spec = true;
        else if (!strcmp(argv[i], "--every") && i + 1 < argc)
            every = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else {
            fprintf(stderr, "compile_speed: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (every < 1)
        every = 1;
    /* the list of specialisations */
    Compilation c;
    comp_init(&c);
    if (!comp_load_file(&c, file) || !comp_resolve(&c)) {
        fputs(c.diag.out.data ? c.diag.out.data : "", stderr);
        return 1;
    }
    typedef struct { char name[128]; GenericArgs args; } Spec;
    Spec *specs = malloc(sizeof(Spec) * 8192);
    int nspec = 0;
    GenericArgs *tmp = malloc(sizeof(GenericArgs) * TL_MAX_SPECIALIZATIONS);
    for (int i = 0; i < c.nitems; i++) {
        Item *it = c.items[i];
        if (it->kind != IT_SPECIALIZE)
            continue;
        Item *k;
        int n = sema_expand_specialize(&c, it, &k, tmp, TL_MAX_SPECIALIZATIONS);
        for (int s = 0; s < n && nspec < 8192; s++) {
            if (only && (only[0] == '=' ? strcmp(k->name.s, only + 1) != 0 : !strstr(k->name.s, only)))
                continue;
            snprintf(specs[nspec].name, sizeof specs[nspec].name, "%s", k->name.s);
            specs[nspec++].args = tmp[s];
        }
    }
    free(tmp);
    comp_free(&c);
    double *ptx_ms = malloc(sizeof(double) * (size_t)nspec * (size_t)reps);
    double *cubin_ms = malloc(sizeof(double) * (size_t)nspec * (size_t)reps);
    int n = 0;
    for (int r = 0; r < reps; r++)
        for (int s = 0; s < nspec; s += every) {
            /* cold: every specialisation parses and checks the source itself, as a JIT miss does */
            double t0 = now_ms();
            Compilation cc;
            comp_init(&cc);
            bool ok = comp_load_file(&cc, file) && comp_resolve(&cc);
            Sym *ks = ok ? comp_lookup_global(&cc, specs[s].name) : NULL;
            CompileRequest rq = {0};
            rq.kernel = ks ? ks->item : NULL;
            rq.args = specs[s].args;
            rq.sm = sm;
            rq.opt_level = 3;
            rq.stage = STAGE_PTX;
            CompileResult res;
            if (!rq.kernel || !compile_specialization(&cc, &rq, &res)) {
                fputs(cc.diag.out.data ? cc.diag.out.data : "", stderr);
                return 1;
            }
            double t1 = now_ms();
            if (!ptx_only) {
                char *cubin;
                size_t cn;
                if (!tool_ptxas(&cc.diag, res.text, res.size, sm, 3, false, &cubin, &cn, NULL)) {
                    fputs(cc.diag.out.data ? cc.diag.out.data : "", stderr);
                    return 1;
                }
                free(cubin);
            }
            double t2 = now_ms();
            compile_result_free(&res);
            comp_free(&cc);
            if (per_spec)
                printf("%-40s %8.2f %8.2f\n", specs[s].name, t1 - t0, t2 - t0);
            ptx_ms[n] = t1 - t0;
            cubin_ms[n] = t2 - t0;
            n++;
        }
    qsort(ptx_ms, (size_t)n, sizeof(double), cmp);
    qsort(cubin_ms, (size_t)n, sizeof(double), cmp);
    if (!n) {
        fprintf(stderr, "compile_speed: no specialisation selected\n");
        return 1;
    }
    printf("specialisations %d x %d, sm_%da\n", n / reps, reps, sm);
    printf("source -> PTX   : median %.1f ms, p90 %.1f ms, max %.1f ms\n", ptx_ms[n / 2], ptx_ms[n * 9 / 10], ptx_ms[n - 1]);
    if (!ptx_only)
        printf("source -> cubin : median %.1f ms, p90 %.1f ms, max %.1f ms\n", cubin_ms[n / 2], cubin_ms[n * 9 / 10],
               cubin_ms[n - 1]);
    free(ptx_ms);
    free(cubin_ms);
    free(specs);
    return 0;
}
