/* driver.c — the tilec commands check, list and emit over the pipeline
 *   load (parse + imports) → resolve → sema(kernel, generics) → lower → passes → codegen → PTX/cubin
 * and what every command shares (build.c's too): loading, architectures, diagnostics. */
#include "driver.h"

#include "compile.h"
#include "cuda_tools.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void driver_options_init(DriverOptions *o)
{
    memset(o, 0, sizeof *o);
    o->opt_level = 3;
    o->jobs = 1;
    o->arch = "sm_90a";
}

int driver_flush(Compilation *c)
{
    if (c->diag.out.len)
        fwrite(c->diag.out.data, 1, c->diag.out.len, stderr);
    c->diag.out.len = 0;
    if (c->diag.ice)
        return 2;
    return diag_has_errors(&c->diag) ? 1 : 0;
}

bool driver_load(Compilation *c, const DriverOptions *o, const char *file, bool resolve)
{
    comp_init(c);
    c->include_dirs = o->include_dirs;
    c->ninclude = o->ninclude;
    c->defines = o->defines;
    c->ndefines = o->ndefines;
    c->diag.werror = o->werror;
    if (!comp_load_file(c, file))
        return false;
    return !resolve || comp_resolve(c);
}

/* the architecture of the first len bytes of name, or 0 after the one message for every command */
static int arch_named(const char *name, size_t len)
{
    static const struct { const char *name; int sm; } archs[] = {
        {"sm_90a", 90}, {"sm_90", 90}, {"sm_100a", 100}, {"sm_100", 100}};
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (strlen(archs[i].name) == len && !memcmp(archs[i].name, name, len))
            return archs[i].sm;
    fprintf(stderr, "tilec: error: unknown architecture '%.*s' (sm_90a or sm_100a)\n", (int)len, name);
    return 0;
}

int driver_arch(const char *name) { return arch_named(name, strlen(name)); }

int driver_arch_list(const char *list, int sms[2])
{
    int n = 0;
    for (const char *p = list;; p++) {
        size_t len = strcspn(p, ",");
        if (!len) { /* "sm_90a,,sm_100a", a comma first or last */
            fprintf(stderr, "tilec: error: an empty name in the list of architectures '%s'\n", list);
            return 0;
        }
        int sm = arch_named(p, len);
        if (!sm)
            return 0;
        bool seen = false; /* an architecture named twice is built once */
        for (int a = 0; a < n; a++)
            seen |= sms[a] == sm;
        if (!seen)
            sms[n++] = sm;
        p += len;
        if (!*p)
            return n;
    }
}

bool driver_write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "tilec: error: cannot write '%s': %s\n", path, strerror(errno));
        return false;
    }
    errno = 0;
    bool ok = fwrite(data, 1, n, f) == n && fflush(f) == 0;
    int err = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (!ok)
        fprintf(stderr, "tilec: error: cannot write '%s': %s\n", path, strerror(err ? err : EIO));
    return ok;
}

bool driver_output_is_source(Compilation *c, const char *output)
{
    struct stat out_st, in_st;
    if (stat(output, &out_st) != 0 || !S_ISREG(out_st.st_mode))
        return false; /* a new file, or a device such as /dev/null: no source */
    for (int i = 0; i < c->diag.nfiles; i++) {
        const char *path = c->diag.files[i]->path;
        if (stat(path, &in_st) != 0 || in_st.st_dev != out_st.st_dev || in_st.st_ino != out_st.st_ino)
            continue;
        if (i == 0)
            diag_error(&c->diag, loc_none(), "the output '%s' is the input file", output);
        else
            diag_error(&c->diag, loc_none(), "the output '%s' is the imported file '%s'", output, path);
        return true;
    }
    return false;
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
    bool *has_spec = tl_xcalloc((size_t)c->next_sym_id + 1, sizeof(bool)); /* by the kernel's symbol */
    for (int i = 0; i < c->nitems; i++) {
        Item *it = c->items[i];
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
                sema_format_specialization(&b, k, &args[j]);
                diag_note(&c->diag, it->loc, "in the specialisation %s declared here", b.data);
                sb_free(&b);
                break; /* one failing instance is enough to show */
            }
        }
        if (k && k->sym)
            has_spec[k->sym->id] = true;
        free(args);
    }
    for (int i = 0; i < c->nitems; i++) {
        Item *it = c->items[i];
        if (it->kind == IT_KERNEL && !(it->sym && has_spec[it->sym->id])) {
            GenericArgs none;
            if (it->ngenerics == 0 && !has_optional_param(it) && sema_generic_args_from_strings(c, it, NULL, 0, &none))
                lower_one(c, it, &none, sms, nsm);
            else
                sema_kernel(c, it, NULL);
        } else if (it->kind == IT_FN) {
            sema_fn_generic(c, it);
        }
    }
    free(has_spec);
}

int driver_check(const DriverOptions *o, const char *file)
{
    int sms[2], nsm = driver_arch_list(o->arch, sms);
    if (!nsm)
        return 1;
    Compilation c;
    if (driver_load(&c, o, file, true))
        check_all(&c, sms, nsm);
    int rc = driver_flush(&c);
    comp_free(&c);
    return rc;
}

static void list_kernel(StrBuf *out, Item *k, int nspec)
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
    if (k->launch.persistent) {
        /* as written: the grid it stands for is the language's business (docs/language.md §7.8) */
        sb_puts(out, ")\n    persistent(tiles = ");
        if (k->launch.tiles.n > 1)
            sb_puts(out, "[");
        for (int i = 0; i < k->launch.tiles.n; i++) {
            if (i)
                sb_puts(out, ", ");
            ast_print_src(out, k->launch.tiles.v[i]);
        }
        if (k->launch.tiles.n > 1)
            sb_puts(out, "]");
        if (k->launch.waves) {
            sb_puts(out, ", waves = ");
            ast_print_src(out, k->launch.waves);
        }
        if (k->launch.stages) {
            sb_puts(out, ", stages = ");
            ast_print_src(out, k->launch.stages);
        }
    } else {
        sb_puts(out, ")\n    grid(");
        for (int i = 0; i < k->launch.grid.n; i++) {
            if (i)
                sb_puts(out, ", ");
            ast_print_src(out, k->launch.grid.v[i]);
        }
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
    if (nspec)
        sb_printf(out, "  specialisations: %d\n", nspec);
    sb_puts(out, "\n");
}

/* every kernel with the number of instances its `specialize` declarations make: one walk over
 * the declarations, each expanded once (not once per kernel) */
static void list_all(StrBuf *out, Compilation *c)
{
    int *nspec = tl_xcalloc((size_t)c->next_sym_id + 1, sizeof(int)); /* by the kernel's symbol */
    GenericArgs *args = tl_xmalloc(sizeof(GenericArgs) * TL_MAX_SPECIALIZATIONS);
    for (int i = 0; i < c->nitems; i++) {
        Item *k = NULL;
        if (c->items[i]->kind != IT_SPECIALIZE)
            continue;
        int n = sema_expand_specialize(c, c->items[i], &k, args, TL_MAX_SPECIALIZATIONS);
        if (n > 0 && k && k->sym)
            nspec[k->sym->id] += n;
    }
    free(args);
    for (int i = 0; i < c->nitems; i++) {
        Item *k = c->items[i];
        if (k->kind == IT_KERNEL)
            list_kernel(out, k, k->sym ? nspec[k->sym->id] : 0);
    }
    free(nspec);
}

int driver_list(const DriverOptions *o, const char *file)
{
    Compilation c;
    StrBuf out = {0};
    if (driver_load(&c, o, file, true))
        list_all(&out, &c);
    int rc = driver_flush(&c);
    if (rc == 0 && out.len)
        fwrite(out.data, 1, out.len, stdout);
    sb_free(&out);
    comp_free(&c);
    return rc;
}

/* to -o FILE, or to standard output (whose errors main reports once it has flushed it) */
static bool write_output(const DriverOptions *o, const void *data, size_t n)
{
    if (o->output)
        return driver_write_file(o->output, data, n);
    return fwrite(data, 1, n, stdout) == n;
}


static Item *find_kernel(Compilation *c, const char *name)
{
    Item *only = NULL;
    int n = 0;
    for (int i = 0; i < c->nitems; i++) {
        Item *it = c->items[i];
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
        if (driver_load(&c, o, file, false) && !(o->output && driver_output_is_source(&c, o->output)))
            ast_print_module(&out, c.modules[0]);
    } else if (!strcmp(stage, "tir") || !strcmp(stage, "sig") || !strcmp(stage, "llvm") || !strcmp(stage, "ptx") ||
               !strcmp(stage, "cubin") || !strcmp(stage, "obj")) {
        int sm = driver_arch(o->arch);
        if (!sm)
            return 1;
        /* host target (CPU emulator): LLVM IR or an x86-64 object instead of PTX / cubin */
        bool host = o->target && !strcmp(o->target, "host");
        if (o->target && !host) {
            fprintf(stderr, "tilec: error: unknown target '%s' (the GPU by default, or host)\n", o->target);
            return 1;
        }
        if (host != !strcmp(stage, "obj") && strcmp(stage, "tir") && strcmp(stage, "sig") && strcmp(stage, "llvm")) {
            if (host)
                fprintf(stderr, "tilec: error: --target=host emits --stage=tir, sig, llvm or obj\n");
            else
                fprintf(stderr, "tilec: error: --stage=obj needs --target=host\n");
            return 1;
        }
        if (driver_load(&c, o, file, true) && !(o->output && driver_output_is_source(&c, o->output))) {
            Item *k = find_kernel(&c, o->kernel);
            CompileRequest rq = {0};
            if (k && sema_generic_args_from_strings(&c, k, o->generic_assigns, o->ngenerics, &rq.args)) {
                rq.kernel = k;
                rq.sm = sm;
                rq.opt_level = o->opt_level;
                /* sig: the launch signature the runtime checks arguments against (tilec/compiler.h) */
                bool sig = !strcmp(stage, "sig");
                rq.stage = !strcmp(stage, "tir") || sig ? STAGE_TIR : !strcmp(stage, "llvm") ? STAGE_LLVM : STAGE_PTX;
                rq.host = host;
                rq.dump_after = o->dump_after;
                rq.dump = &out;
                CompileResult res;
                if (compile_specialization(&c, &rq, &res)) {
                    if (sig) {
                        sb_puts(&out, res.signature);
                    } else if (!strcmp(stage, "cubin")) {
                        char *cubin;
                        size_t n;
                        if (tool_ptxas(&c.diag, res.text, res.size, sm, o->opt_level, false, &cubin, &n, NULL)) {
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
        diag_error(&c.diag, loc_none(), "unknown stage '%s' (ast, tir, sig, llvm, ptx, cubin, obj)", stage);
    }
    rc = driver_flush(&c);
    if (rc == 0 && !write_output(o, out.data ? out.data : "", out.len))
        rc = 1;
    sb_free(&out);
    comp_free(&c);
    return rc;
}
