/* driver.c — the pipeline in one place:
 *   load (parse + imports) → resolve → sema(kernel, generics) → lower → passes → codegen → PTX/cubin
 * and the CLI commands built on it. */
#include "driver.h"

#include "compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool sema_fn_generic(Compilation *c, Item *fn);

void driver_options_init(DriverOptions *o)
{
    memset(o, 0, sizeof *o);
    o->opt_level = 3;
    o->jobs = 1;
    o->arch = "sm_90a";
}

const char *driver_llvm_version(void) { return "22"; }

static void flush_diags(Compilation *c)
{
    if (c->diag.out.len)
        fwrite(c->diag.out.data, 1, c->diag.out.len, stderr);
    c->diag.out.len = 0;
}

static int exit_code(Compilation *c)
{
    if (c->diag.ice)
        return 2;
    return diag_has_errors(&c->diag) ? 1 : 0;
}

static bool load(Compilation *c, const DriverOptions *o, const char *file)
{
    comp_init(c);
    c->include_dirs = o->include_dirs;
    c->ninclude = o->ninclude;
    c->defines = o->defines;
    c->ndefines = o->ndefines;
    c->diag.werror = o->werror;
    if (!comp_load_file(c, file))
        return false;
    return comp_resolve(c);
}

/* A specialisation through the tile IR passes for each target (not LLVM): the errors that only
 * lowering finds (layouts, shared memory, features of the target) show up in `check` too. */
static bool lower_one(Compilation *c, Item *k, const GenericArgs *args, const int *sms, int nsm)
{
    for (int i = 0; i < nsm; i++) {
        CompileRequest rq = {.kernel = k, .args = *args, .sm = sms[i], .opt_level = 3, .stage = STAGE_TIR};
        CompileResult r;
        bool ok = compile_specialization(c, &rq, &r);
        compile_result_free(&r);
        if (!ok)
            return false;
    }
    return true;
}

static bool has_optional_param(const Item *k)
{
    for (int p = 0; p < k->nparams; p++)
        if (k->params[p].ty->kind == TE_TENSOR && k->params[p].ty->optional)
            return true;
    return false;
}

/* every kernel: each declared specialisation, sema and lowering for each target; a kernel that
 * declares none is checked generically, and also lowered when it has nothing to specialise
 * (no generics, no optional tensors) */
static void check_all(Compilation *c, const int *sms, int nsm)
{
    bool has_spec[4096] = {0};
    for (int m = 0; m < c->nmodules; m++) {
        Module *mod = c->modules[m];
        for (int i = 0; i < mod->nitems; i++) {
            Item *it = mod->items[i];
            if (it->kind != IT_SPECIALIZE)
                continue;
            Item *k = NULL;
            GenericArgs *args = tl_xmalloc(sizeof(GenericArgs) * TL_MAX_SPECIALIZATIONS);
            int n = sema_expand_specialize(c, it, &k, args, TL_MAX_SPECIALIZATIONS);
            for (int j = 0; j < n; j++) {
                int errs = c->diag.nerrors;
                lower_one(c, k, &args[j], sms, nsm);
                if (c->diag.nerrors > errs) {
                    StrBuf b = {0};
                    sema_format_generic_args(&b, k, &args[j]);
                    diag_note(&c->diag, it->loc, "in the specialisation %s<%s> declared here", k->name.s, b.data);
                    sb_free(&b);
                    break; /* one failing instance is enough to show */
                }
            }
            if (k && k->sym && k->sym->id < 4096)
                has_spec[k->sym->id] = true;
            free(args);
        }
    }
    for (int m = 0; m < c->nmodules; m++) {
        Module *mod = c->modules[m];
        for (int i = 0; i < mod->nitems; i++) {
            Item *it = mod->items[i];
            if (it->kind == IT_KERNEL && !(it->sym && it->sym->id < 4096 && has_spec[it->sym->id])) {
                GenericArgs none;
                if (it->ngenerics == 0 && !has_optional_param(it) &&
                    sema_generic_args_from_strings(c, it, NULL, 0, &none))
                    lower_one(c, it, &none, sms, nsm);
                else
                    sema_kernel(c, it, NULL);
            } else if (it->kind == IT_FN) {
                sema_fn_generic(c, it);
            }
        }
    }
}

/* the targets of --arch (a comma list); false after a message if one is unknown */
static bool parse_arch_list(const char *list, int *sms, int *nsm)
{
    *nsm = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", list ? list : "sm_90a");
    for (char *save = NULL, *a = strtok_r(buf, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
        int sm = driver_parse_arch(a);
        if (!sm) {
            fprintf(stderr, "tilec: error: unknown architecture '%s' (sm_90a or sm_100a)\n", a);
            return false;
        }
        if (*nsm < 2 && (*nsm == 0 || sms[0] != sm))
            sms[(*nsm)++] = sm;
    }
    return *nsm > 0;
}

int driver_check(const DriverOptions *o, const char *file)
{
    int sms[2], nsm;
    if (!parse_arch_list(o->arch, sms, &nsm))
        return 1;
    Compilation c;
    if (load(&c, o, file))
        check_all(&c, sms, nsm);
    flush_diags(&c);
    int rc = exit_code(&c);
    comp_free(&c);
    return rc;
}

static void list_kernel(StrBuf *out, Compilation *c, Item *k)
{
    sb_printf(out, "kernel %s", k->name.s);
    if (k->ngenerics) {
        sb_puts(out, "<");
        for (int g = 0; g < k->ngenerics; g++) {
            GenericParam *gp = &k->generics[g];
            sb_printf(out, "%s%s: %s", g ? ", " : "", gp->name.s, generic_kind_name(gp->kind));
            if (gp->deflt) {
                sb_puts(out, " = ");
                ast_print_src(out, gp->deflt);
            }
        }
        sb_puts(out, ">");
    }
    sb_puts(out, "(\n");
    for (int p = 0; p < k->nparams; p++) {
        sb_printf(out, "    %s: ", k->params[p].name.s);
        ast_print_type_src(out, k->params[p].ty);
        sb_puts(out, p + 1 < k->nparams ? ",\n" : "\n");
    }
    sb_puts(out, ")\n    grid(");
    for (int i = 0; i < k->launch.grid.n; i++) {
        if (i)
            sb_puts(out, ", ");
        ast_print_src(out, k->launch.grid.v[i]);
    }
    sb_puts(out, ") threads(");
    ast_print_src(out, k->launch.threads);
    sb_puts(out, ")");
    if (k->launch.cooperative)
        sb_puts(out, " cooperative");
    if (k->launch.pdl)
        sb_puts(out, " pdl");
    if (k->launch.blocks_per_sm) {
        sb_puts(out, " blocks_per_sm(");
        ast_print_src(out, k->launch.blocks_per_sm);
        sb_puts(out, ")");
    }
    sb_puts(out, "\n");
    for (int i = 0; i < k->body.n; i++) {
        Stmt *st = k->body.v[i];
        if (st->kind != ST_REQUIRE)
            break;
        sb_puts(out, "    require ");
        ast_print_src(out, st->e);
        if (st->msg)
            sb_printf(out, "  (\"%s\")", st->msg);
        sb_puts(out, "\n");
    }
    if (k->doc) {
        sb_puts(out, "  ");
        for (const char *p = k->doc; *p; p++) {
            sb_append(out, p, 1);
            if (*p == '\n')
                sb_puts(out, "  ");
        }
        sb_puts(out, "\n");
    }
    /* declared specialisations */
    int total = 0;
    for (int m = 0; m < c->nmodules; m++)
        for (int i = 0; i < c->modules[m]->nitems; i++) {
            Item *it = c->modules[m]->items[i];
            if (it->kind == IT_SPECIALIZE && strcmp(it->name.s, k->name.s) == 0) {
                Item *kk;
                GenericArgs *args = tl_xmalloc(sizeof(GenericArgs) * TL_MAX_SPECIALIZATIONS);
                int n = sema_expand_specialize(c, it, &kk, args, TL_MAX_SPECIALIZATIONS);
                if (n > 0)
                    total += n;
                free(args);
            }
        }
    if (total)
        sb_printf(out, "  specialisations: %d\n", total);
    sb_puts(out, "\n");
}

int driver_list(const DriverOptions *o, const char *file)
{
    Compilation c;
    StrBuf out = {0};
    if (load(&c, o, file)) {
        for (int m = 0; m < c.nmodules; m++)
            for (int i = 0; i < c.modules[m]->nitems; i++)
                if (c.modules[m]->items[i]->kind == IT_KERNEL)
                    list_kernel(&out, &c, c.modules[m]->items[i]);
    }
    flush_diags(&c);
    int rc = exit_code(&c);
    if (rc == 0 && out.len)
        fwrite(out.data, 1, out.len, stdout);
    sb_free(&out);
    comp_free(&c);
    return rc;
}

static bool write_output(const DriverOptions *o, const void *data, size_t n)
{
    FILE *f = o->output ? fopen(o->output, "wb") : stdout;
    if (!f) {
        fprintf(stderr, "tilec: error: cannot write '%s'\n", o->output);
        return false;
    }
    bool ok = fwrite(data, 1, n, f) == n;
    if (o->output)
        ok = fclose(f) == 0 && ok;
    return ok;
}


static Item *find_kernel(Compilation *c, const char *name)
{
    Item *only = NULL;
    int n = 0;
    for (int m = 0; m < c->nmodules; m++)
        for (int i = 0; i < c->modules[m]->nitems; i++) {
            Item *it = c->modules[m]->items[i];
            if (it->kind != IT_KERNEL)
                continue;
            if (name && !strcmp(it->name.s, name))
                return it;
            only = it;
            n++;
        }
    if (name) {
        diag_error(&c->diag, loc_none(), "no kernel named '%s'", name);
        return NULL;
    }
    if (n != 1) {
        diag_error(&c->diag, loc_none(), n ? "the file has %d kernels; choose one with -k NAME" : "the file has no kernel", n);
        return NULL;
    }
    return only;
}

int driver_emit(const DriverOptions *o, const char *file)
{
    Compilation c;
    StrBuf out = {0};
    int rc;
    const char *stage = o->stage;
    if (!strcmp(stage, "ast")) {
        comp_init(&c);
        c.include_dirs = o->include_dirs;
        c.ninclude = o->ninclude;
        if (comp_load_file(&c, file))
            ast_print_module(&out, c.modules[0]);
    } else if (!strcmp(stage, "tir") || !strcmp(stage, "llvm") || !strcmp(stage, "ptx") || !strcmp(stage, "cubin") ||
               !strcmp(stage, "obj")) {
        int sm = driver_parse_arch(o->arch);
        if (!sm) {
            fprintf(stderr, "tilec: error: unknown architecture '%s' (sm_90a or sm_100a)\n", o->arch);
            return 1;
        }
        /* host target (CPU emulator): LLVM IR or an x86-64 object instead of PTX / cubin */
        bool host = o->target && !strcmp(o->target, "host");
        if (o->target && !host) {
            fprintf(stderr, "tilec: error: unknown target '%s' (the GPU by default, or host)\n", o->target);
            return 1;
        }
        if (host != !strcmp(stage, "obj") && strcmp(stage, "tir") && strcmp(stage, "llvm")) {
            if (host)
                fprintf(stderr, "tilec: error: --target=host emits --stage=tir, llvm or obj\n");
            else
                fprintf(stderr, "tilec: error: --stage=obj needs --target=host\n");
            return 1;
        }
        if (load(&c, o, file)) {
            Item *k = find_kernel(&c, o->kernel);
            CompileRequest rq = {0};
            if (k && sema_generic_args_from_strings(&c, k, o->generic_assigns, o->ngenerics, &rq.args)) {
                rq.kernel = k;
                rq.sm = sm;
                rq.opt_level = o->opt_level;
                rq.stage = !strcmp(stage, "tir") ? STAGE_TIR : !strcmp(stage, "llvm") ? STAGE_LLVM : STAGE_PTX;
                rq.host = host;
                rq.dump_after = o->dump_after;
                rq.dump = &out;
                CompileResult res;
                if (compile_specialization(&c, &rq, &res)) {
                    if (!strcmp(stage, "cubin")) {
                        char *cubin;
                        size_t n;
                        if (run_ptxas(&c.diag, res.text, res.size, sm, o->opt_level, false, &cubin, &n, NULL)) {
                            sb_append(&out, cubin, n);
                            free(cubin);
                        }
                    } else if (!o->dump_after || strcmp(stage, "tir") != 0) {
                        sb_append(&out, res.text, res.size);
                    }
                    compile_result_free(&res);
                }
            }
        }
    } else {
        comp_init(&c);
        diag_error(&c.diag, loc_none(), "unknown stage '%s' (ast, tir, llvm, ptx, cubin, obj)", stage);
    }
    flush_diags(&c);
    rc = exit_code(&c);
    if (rc == 0 && !write_output(o, out.data ? out.data : "", out.len))
        rc = 1;
    sb_free(&out);
    comp_free(&c);
    return rc;
}

