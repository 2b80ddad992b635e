/* main.c — the tilec command line: check, list, emit, build.
 * Exit status: 0 success, 1 errors in the user's input, 2 internal errors. */
#include "driver.h"
#include "tir.h"
#include "tilec/compiler.h"
#include "tilec_version.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *usage =
    "usage: tilec <command> [options] FILE\n"
    "\n"
    "commands:\n"
    "  check FILE            check and lower every kernel (and every declared specialisation)\n"
    "  list FILE             list kernels: signatures, generic parameters, documentation\n"
    "  emit --stage=S FILE   print a stage: ast, tir, sig, llvm, ptx, cubin (obj with --target=host)\n"
    "  build FILE -o OUT     compile every declared specialisation into a fatbin\n"
    "\n"
    "options:\n"
    "  -I DIR                look for imports in DIR (repeatable)\n"
    "  -D NAME=VALUE         define (or override) a constant (repeatable, once per name)\n"
    "  -k KERNEL             emit: the kernel to compile\n"
    "  -g NAME=VALUE         emit: a generic value (repeatable)\n"
    "  --arch=A[,B]          sm_90a (default), sm_100a\n"
    "  --target=host         emit: x86-64 code for the CPU emulator instead of PTX\n"
    "  --dump-after=PASS     emit --stage=tir: print the IR after PASS (or 'all')\n"
    "  -O0 | -O3             LLVM optimisation level (default -O3)\n"
    "  -j N                  build: parallel jobs\n"
    "  -o FILE               emit, build: output file (emit's default: standard output)\n"
    "  -Werror               treat warnings as errors\n"
    "  --version, --help\n"
    "an option that takes one value may be given once\n";

static int fail_usage(const char *msg, const char *arg)
{
    fprintf(stderr, "tilec: error: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    fprintf(stderr, "run 'tilec --help' for usage\n");
    return 1;
}

/* the values of a repeatable option, as many as given */
typedef struct Values {
    const char **v;
    int n, cap;
} Values;

static void values_push(Values *l, const char *v)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = tl_xrealloc(l->v, sizeof(const char *) * (size_t)l->cap);
    }
    l->v[l->n++] = v;
}

/* What went to standard output must have got there: a full disk or a closed pipe is an error,
 * not exit status 0. */
static int flush_stdout(int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "tilec: error: cannot write standard output: %s\n", strerror(errno ? errno : EIO));
        return rc ? rc : 1;
    }
    return rc;
}

/* The whole CLI lives in libtilec (tilec_cli_main), so that the tilec executable is tiny and
 * shares the library's copy of LLVM. */
int tilec_cli_main(int argc, char **argv);
static int cli(int argc, char **argv, DriverOptions *o, Values *incs, Values *gens, Define **defs, int *ndefs);

int tilec_cli_main(int argc, char **argv)
{
    DriverOptions o;
    driver_options_init(&o);
    Values incs = {0}, gens = {0};
    Define *defs = NULL;
    int ndefs = 0;
    int rc = cli(argc, argv, &o, &incs, &gens, &defs, &ndefs);
    for (int i = 0; i < ndefs; i++)
        free((char *)defs[i].name);
    free(defs);
    free(incs.v);
    free(gens.v);
    return flush_stdout(rc);
}

/* the options that take a value, as `-o FILE`, `-oFILE`, `--arch sm_90a` or `--arch=sm_90a` */
enum { OPT_STAGE, OPT_ARCH, OPT_TARGET, OPT_DUMP_AFTER, OPT_INCLUDE, OPT_DEFINE, OPT_KERNEL, OPT_GENERIC,
       OPT_OUTPUT, OPT_JOBS, OPT_COUNT };
static const char *const value_options[OPT_COUNT] = {"--stage", "--arch", "--target", "--dump-after", "-I",
                                                     "-D",      "-k",     "-g",       "-o",           "-j"};

/* Which value option argv[*i] is (its value in *val, *i past a separate value), or -1. */
static int take_value(int argc, char **argv, int *i, const char **val)
{
    const char *a = argv[*i];
    for (int k = 0; k < OPT_COUNT; k++) {
        const char *f = value_options[k];
        size_t n = strlen(f);
        if (!strcmp(a, f)) {
            if (*i + 1 >= argc)
                return -1;
            *val = argv[++*i];
            return k;
        }
        if (!strncmp(a, f, n) && a[n]) {
            *val = a + n + (a[n] == '=');
            return k;
        }
    }
    return -1;
}

static int cli(int argc, char **argv, DriverOptions *o, Values *incs, Values *gens, Define **defs, int *ndefs)
{
    const char *cmd = NULL;
    const char *file = NULL;
    int capdefs = 0;
    /* the options that take one value: what each was given (a second one is an error, not
     * "the last one wins"; -I, -D and -g are repeatable) */
    const char *given[OPT_COUNT] = {0};
    const char *given_opt = NULL; /* -O0 ... -O3 */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        int opt;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("tilec %s (LLVM %s)\nbuild %s\n", TILEC_VERSION, TILEC_LLVM_MAJOR, tilec_build_id());
            return 0;
        } else if (!strcmp(a, "-Werror")) {
            o->werror = true;
        } else if (!strcmp(a, "-O0") || !strcmp(a, "-O1") || !strcmp(a, "-O2") || !strcmp(a, "-O3")) {
            if (given_opt) {
                fprintf(stderr, "tilec: error: %s is given twice (%s, then %s)\n", "-O", given_opt, a);
                return 1;
            }
            given_opt = a;
            o->opt_level = a[2] - '0';
        } else if ((opt = take_value(argc, argv, &i, &val)) >= 0) {
            /* an empty value (--arch=, -o '') is never what was meant */
            if (!*val)
                return fail_usage("this option needs a value", a);
            if (opt != OPT_INCLUDE && opt != OPT_DEFINE && opt != OPT_GENERIC) {
                if (given[opt]) {
                    fprintf(stderr, "tilec: error: %s is given twice (%s, then %s)\n", value_options[opt], given[opt], val);
                    return 1;
                }
                given[opt] = val;
            }
            switch (opt) {
            case OPT_STAGE: o->stage = val; break;
            case OPT_ARCH: o->arch = val; break;
            case OPT_TARGET: o->target = val; break;
            case OPT_DUMP_AFTER: o->dump_after = val; break;
            case OPT_INCLUDE: values_push(incs, val); break;
            case OPT_KERNEL: o->kernel = val; break;
            case OPT_GENERIC: values_push(gens, val); break;
            case OPT_OUTPUT: o->output = val; break;
            case OPT_DEFINE: {
                const char *eq = strchr(val, '=');
                if (!eq || eq == val)
                    return fail_usage("-D takes NAME=VALUE", val);
                for (int d = 0; d < *ndefs; d++)
                    if (strlen((*defs)[d].name) == (size_t)(eq - val) && !memcmp((*defs)[d].name, val, (size_t)(eq - val))) {
                        fprintf(stderr, "tilec: error: -D %.*s is given twice (%s, then %s)\n", (int)(eq - val), val,
                                (*defs)[d].value, eq + 1);
                        return 1;
                    }
                if (*ndefs == capdefs) {
                    capdefs = capdefs ? 2 * capdefs : 16;
                    *defs = tl_xrealloc(*defs, sizeof(Define) * (size_t)capdefs);
                }
                (*defs)[*ndefs].name = strndup(val, (size_t)(eq - val));
                (*defs)[(*ndefs)++].value = eq + 1;
                break;
            }
            default: { /* OPT_JOBS */
                char *end;
                long j = strtol(val, &end, 10);
                if (*end || j < 1 || j > 256)
                    return fail_usage("-j takes a number from 1 to 256", val);
                o->jobs = (int)j;
            }
            }
        } else if (a[0] == '-' && a[1]) {
            /* a known option that takes a value, given last without one */
            for (int k = 0; k < OPT_COUNT; k++)
                if (!strcmp(a, value_options[k]))
                    return fail_usage("this option needs a value", a);
            return fail_usage("unknown option", a);
        } else if (!cmd) {
            cmd = a;
        } else if (!file) {
            file = a;
        } else {
            return fail_usage("more than one input file", a);
        }
    }
    o->include_dirs = incs->v;
    o->ninclude = incs->n;
    o->defines = *defs;
    o->ndefines = *ndefs;
    o->generic_assigns = gens->v;
    o->ngenerics = gens->n;
    if (!cmd)
        return fail_usage("no command given", NULL);
    if (!file)
        return fail_usage("no input file", NULL);
    /* check and list print to standard output only */
    if (o->output && (!strcmp(cmd, "check") || !strcmp(cmd, "list")))
        return fail_usage("-o works with emit and build", o->output);
    /* writing the output would destroy the source before (or while) it is read (the imports
     * are compared once they are loaded: driver_output_is_source) */
    struct stat in_st, out_st;
    if (o->output && stat(file, &in_st) == 0 && stat(o->output, &out_st) == 0 && in_st.st_dev == out_st.st_dev &&
        in_st.st_ino == out_st.st_ino && S_ISREG(in_st.st_mode)) {
        fprintf(stderr, "tilec: error: the output '%s' is the input file\n", o->output);
        return 1;
    }
    if (o->dump_after && (strcmp(cmd, "emit") || !o->stage || strcmp(o->stage, "tir")))
        return fail_usage("--dump-after works with emit --stage=tir", o->dump_after);
    if (o->dump_after) {
        static const char *const passes[] = {"all",
#define TIR_STAGE_NAME(id, name) name,
                                             TIR_STAGES(TIR_STAGE_NAME)
#undef TIR_STAGE_NAME
        };
        bool known = false;
        for (size_t p = 0; p < sizeof passes / sizeof *passes; p++)
            known |= !strcmp(o->dump_after, passes[p]);
        if (!known)
            return fail_usage("--dump-after takes all, lower_ast, layout, pipeline, lower_tiles or smem_plan",
                              o->dump_after);
    }
    if (!strcmp(cmd, "check"))
        return driver_check(o, file);
    if (!strcmp(cmd, "list"))
        return driver_list(o, file);
    if (!strcmp(cmd, "emit")) {
        if (!o->stage)
            return fail_usage("emit needs --stage=ast|tir|sig|llvm|ptx|cubin", NULL);
        return driver_emit(o, file);
    }
    if (!strcmp(cmd, "build"))
        return driver_build(o, file);
    return fail_usage("unknown command", cmd);
}
