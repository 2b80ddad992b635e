/* main.c — the tilec command line: check, list, emit, build.
 * Exit status: 0 success, 1 errors in the user's input, 2 internal errors. */
#include "driver.h"
#include "tilec/compiler.h"
#include "tilec_version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    "  -I DIR                look for imports in DIR\n"
    "  -D NAME=VALUE         define (or override) a constant\n"
    "  -k KERNEL             emit: the kernel to compile\n"
    "  -g NAME=VALUE         emit: a generic value (repeatable)\n"
    "  --arch=A[,B]          sm_90a (default), sm_100a\n"
    "  --target=host         emit: x86-64 code for the CPU emulator instead of PTX\n"
    "  --dump-after=PASS     emit --stage=tir: print the IR after PASS (or 'all')\n"
    "  -O0 | -O3             LLVM optimisation level (default -O3)\n"
    "  -j N                  build: parallel jobs\n"
    "  -o FILE               output file (default: standard output)\n"
    "  -Werror               treat warnings as errors\n"
    "  --version, --help\n";

static int fail_usage(const char *msg, const char *arg)
{
    fprintf(stderr, "tilec: error: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    fprintf(stderr, "run 'tilec --help' for usage\n");
    return 1;
}

/* The whole CLI lives in libtilec (tilec_cli_main), so that the tilec executable is tiny and
 * shares the library's copy of LLVM. */
int tilec_cli_main(int argc, char **argv);
int tilec_cli_main(int argc, char **argv)
{
    DriverOptions o;
    driver_options_init(&o);
    const char *cmd = NULL;
    const char *file = NULL;
    static const char *incs[64], *gens[64];
    static Define defs[64];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
#define TAKE(flag)                                                                      \
    ((strcmp(a, flag) == 0 && i + 1 < argc && (val = argv[++i])) ||                    \
     (strncmp(a, flag, strlen(flag)) == 0 && a[strlen(flag)] && (val = a + strlen(flag) + (a[strlen(flag)] == '='))))
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("tilec %s (LLVM %s)\nbuild %s\n", TILEC_VERSION, TILEC_LLVM_MAJOR, tilec_build_id());
            return 0;
        } else if (!strcmp(a, "-Werror")) {
            o.werror = true;
        } else if (!strcmp(a, "-O0") || !strcmp(a, "-O1") || !strcmp(a, "-O2") || !strcmp(a, "-O3")) {
            o.opt_level = a[2] - '0';
        } else if (TAKE("--stage")) {
            o.stage = val;
        } else if (TAKE("--arch")) {
            o.arch = val;
        } else if (TAKE("--target")) {
            o.target = val;
        } else if (TAKE("--dump-after")) {
            o.dump_after = val;
        } else if (TAKE("-I")) {
            if (o.ninclude >= 64)
                return fail_usage("too many -I options", NULL);
            incs[o.ninclude++] = val;
        } else if (TAKE("-D")) {
            const char *eq = strchr(val, '=');
            if (!eq || eq == val || o.ndefines >= 64)
                return fail_usage("-D takes NAME=VALUE", val);
            defs[o.ndefines].name = strndup(val, (size_t)(eq - val));
            defs[o.ndefines++].value = eq + 1;
        } else if (TAKE("-k")) {
            o.kernel = val;
        } else if (TAKE("-g")) {
            if (o.ngenerics >= 64)
                return fail_usage("too many -g options", NULL);
            gens[o.ngenerics++] = val;
        } else if (TAKE("-o")) {
            o.output = val;
        } else if (TAKE("-j")) {
            o.jobs = atoi(val);
            if (o.jobs < 1 || o.jobs > 256)
                return fail_usage("-j takes a number from 1 to 256", val);
        } else if (a[0] == '-' && a[1]) {
            /* a known option that takes a value, given last without one */
            static const char *const with_value[] = {"-I", "-D", "-k", "-g", "-o", "-j", "--stage", "--arch",
                                                     "--dump-after", NULL};
            for (int k = 0; with_value[k]; k++)
                if (!strcmp(a, with_value[k]))
                    return fail_usage("this option needs a value", a);
            return fail_usage("unknown option", a);
        } else if (!cmd) {
            cmd = a;
        } else if (!file) {
            file = a;
        } else {
            return fail_usage("more than one input file", a);
        }
#undef TAKE
    }
    o.include_dirs = incs;
    o.defines = defs;
    o.generic_assigns = gens;
    if (!cmd)
        return fail_usage("no command given", NULL);
    if (!file)
        return fail_usage("no input file", NULL);
    int rc;
    if (!strcmp(cmd, "check"))
        rc = driver_check(&o, file);
    else if (!strcmp(cmd, "list"))
        rc = driver_list(&o, file);
    else if (!strcmp(cmd, "emit")) {
        if (!o.stage)
            return fail_usage("emit needs --stage=ast|tir|sig|llvm|ptx|cubin", NULL);
        rc = driver_emit(&o, file);
    } else if (!strcmp(cmd, "build"))
        rc = driver_build(&o, file);
    else
        return fail_usage("unknown command", cmd);
    for (int i = 0; i < o.ndefines; i++)
        free((char *)defs[i].name);
    return rc;
}
