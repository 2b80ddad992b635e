/* api.c — the public compiler API (tilec/compiler.h) over the internal pipeline. */
#include "tilec/compiler.h"

#include "compile.h"
#include "tilec_version.h"

#include <stdlib.h>
#include <string.h>

struct tilec_program {
    Compilation comp;
    uint64_t hash;
    char **kernel_names;
    int nkernels;
    Define *defines;
    size_t last_start; /* where the diagnostics of the latest tilec_compile begin in diag.out */
    StrBuf iface;      /* the latest tilec_program_kernel_interface */
};

const char *tilec_status_name(tilec_status s)
{
    switch (s) {
    case TILEC_OK: return "ok";
    case TILEC_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case TILEC_ERROR_COMPILE: return "compile error";
    case TILEC_ERROR_NOT_FOUND: return "not found";
    case TILEC_ERROR_INTERNAL: return "internal error";
    case TILEC_ERROR_IO: return "i/o error";
    case TILEC_ERROR_DRIVER: return "CUDA driver error";
    case TILEC_ERROR_LAUNCH: return "launch error";
    case TILEC_ERROR_UNSUPPORTED: return "unsupported";
    }
    return "unknown status";
}

const char *tilec_version(void) { return TILEC_VERSION; }

static tilec_status finish_program(tilec_program *p, bool loaded)
{
    Compilation *c = &p->comp;
    bool ok = loaded && comp_resolve(c);
    /* the program hash covers every file and the defines */
    uint64_t h = 0x74696c656300ull;
    for (int i = 0; i < c->diag.nfiles; i++)
        h = tl_hash_bytes(c->diag.files[i]->text, c->diag.files[i]->len, h);
    for (int i = 0; i < c->ndefines; i++) {
        h = tl_hash_bytes(c->defines[i].name, strlen(c->defines[i].name), h);
        h = tl_hash_bytes(c->defines[i].value, strlen(c->defines[i].value), h);
    }
    p->hash = h;
    p->kernel_names = tl_xcalloc((size_t)c->nitems + 1, sizeof(char *));
    for (int i = 0; i < c->nitems; i++)
        if (c->items[i]->kind == IT_KERNEL)
            p->kernel_names[p->nkernels++] = (char *)c->items[i]->name.s;
    if (c->diag.ice)
        return TILEC_ERROR_INTERNAL;
    return ok && !diag_has_errors(&c->diag) ? TILEC_OK : TILEC_ERROR_COMPILE;
}

static tilec_program *new_program(const tilec_program_options *opts)
{
    tilec_program *p = tl_xcalloc(1, sizeof *p);
    comp_init(&p->comp);
    if (opts) {
        p->comp.include_dirs = (const char **)opts->include_dirs;
        p->comp.ninclude = opts->ninclude;
        if (opts->ndefines > 0) {
            p->defines = tl_xcalloc((size_t)opts->ndefines, sizeof(Define));
            for (int i = 0; i < opts->ndefines; i++) {
                const char *d = opts->defines[i];
                const char *eq = d ? strchr(d, '=') : NULL;
                p->defines[i].name = eq ? arena_strndup(&p->comp.arena, d, (size_t)(eq - d)) : arena_strdup(&p->comp.arena, d ? d : "");
                p->defines[i].value = eq ? eq + 1 : "";
            }
            p->comp.defines = p->defines;
            p->comp.ndefines = opts->ndefines;
        }
    }
    return p;
}

tilec_status tilec_program_from_file(const char *path, const tilec_program_options *opts, tilec_program **out)
{
    if (!path || !out)
        return TILEC_ERROR_INVALID_ARGUMENT;
    tilec_program *p = new_program(opts);
    *out = p;
    bool loaded = comp_load_file(&p->comp, path);
    if (!loaded && p->comp.diag.nfiles == 0)
        return TILEC_ERROR_NOT_FOUND;
    return finish_program(p, loaded);
}

tilec_status tilec_program_from_string(const char *name, const char *text, const tilec_program_options *opts,
                                       tilec_program **out)
{
    if (!name || !text || !out)
        return TILEC_ERROR_INVALID_ARGUMENT;
    tilec_program *p = new_program(opts);
    *out = p;
    return finish_program(p, comp_load_string(&p->comp, name, text));
}

void tilec_program_destroy(tilec_program *p)
{
    if (!p)
        return;
    free(p->kernel_names);
    free(p->defines);
    sb_free(&p->iface);
    comp_free(&p->comp);
    free(p);
}

const char *tilec_program_diagnostics(const tilec_program *p)
{
    if (!p || !p->comp.diag.out.data)
        return "";
    return p->comp.diag.out.data;
}

const char *tilec_program_last_diagnostics(const tilec_program *p)
{
    if (!p || !p->comp.diag.out.data || p->last_start > p->comp.diag.out.len)
        return "";
    return p->comp.diag.out.data + p->last_start;
}

uint64_t tilec_program_hash(const tilec_program *p) { return p ? p->hash : 0; }
int tilec_program_num_kernels(const tilec_program *p) { return p ? p->nkernels : 0; }
const char *tilec_program_kernel_name(const tilec_program *p, int i)
{
    return p && i >= 0 && i < p->nkernels ? p->kernel_names[i] : NULL;
}

const char *tilec_program_kernel_interface(tilec_program *p, const char *kernel)
{
    if (!p || !kernel)
        return NULL;
    Compilation *c = &p->comp;
    Item *k = NULL;
    for (int i = 0; i < c->nitems && !k; i++)
        if (c->items[i]->kind == IT_KERNEL && !strcmp(c->items[i]->name.s, kernel))
            k = c->items[i];
    if (!k)
        return NULL;
    StrBuf *out = &p->iface;
    out->len = 0;
    sb_printf(out, "tilec-iface 1\nkernel %s\n", k->name.s);
    for (int g = 0; g < k->ngenerics; g++) {
        GenericParam *gp = &k->generics[g];
        sb_printf(out, "generic %s %s", gp->name.s, generic_kind_name(gp->kind));
        if (gp->deflt) {
            sb_puts(out, " ");
            ast_print_src(out, gp->deflt);
        }
        sb_puts(out, "\n");
    }
    for (int i = 0; i < k->nparams; i++) {
        const TypeExpr *t = k->params[i].ty;
        const TypeExpr *e = t->kind == TE_TENSOR ? t->elem : t;
        const char *elem = e->kind == TE_PRIM ? dtype_name(e->prim) : e->kind == TE_NAMED ? e->name : "?";
        if (t->kind == TE_TENSOR)
            sb_printf(out, "tensor %s %s %d%s\n", k->params[i].name.s, elem, t->dims.n, t->optional ? " optional" : "");
        else
            sb_printf(out, "scalar %s %s\n", k->params[i].name.s, elem);
    }
    for (const char *d = k->doc; d && *d;) {
        const char *eol = strchr(d, '\n');
        size_t n = eol ? (size_t)(eol - d) : strlen(d);
        sb_printf(out, "doc %.*s\n", (int)n, d);
        d += n + (eol != NULL);
    }
    sb_puts(out, "end\n");
    return out->data;
}

static tilec_status compile_request(tilec_program *p, const char *kernel, const char *const *generics, int ngenerics,
                                    const tilec_target *target, tilec_artifact **out);

tilec_status tilec_compile(tilec_program *p, const char *kernel, const char *const *generics, int ngenerics,
                           const tilec_target *target, tilec_artifact **out)
{
    if (!p || !kernel || !out || ngenerics < 0 || (ngenerics > 0 && !generics))
        return TILEC_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    Compilation *c = &p->comp;
    p->last_start = c->diag.out.len;
    if (diag_has_errors(&c->diag)) /* the program itself has errors */
        return TILEC_ERROR_COMPILE;
    int errs = c->diag.nerrors;
    tilec_status st = compile_request(p, kernel, generics, ngenerics, target, out);
    /* errors of one request must not poison later ones: the program stays usable */
    if (st != TILEC_OK) {
        c->diag.nerrors = errs;
        c->diag.ice = false;
        if (c->diag.nerrors == 0)
            c->diag.capped = false;
    }
    return st;
}

static tilec_status compile_request(tilec_program *p, const char *kernel, const char *const *generics, int ngenerics,
                                    const tilec_target *target, tilec_artifact **out)
{
    Compilation *c = &p->comp;
    int sm = target ? target->sm : 90;
    if (sm != 90 && sm != 100) {
        diag_error(&c->diag, loc_none(), "unsupported target sm_%d (sm_90a and sm_100a are supported)", sm);
        return TILEC_ERROR_UNSUPPORTED;
    }
    Item *k = NULL;
    Sym *s = comp_lookup_global(c, kernel);
    if (s && s->kind == SYM_KERNEL)
        k = s->item;
    if (!k) {
        diag_error(&c->diag, loc_none(), "no kernel named '%s'", kernel);
        return TILEC_ERROR_NOT_FOUND;
    }
    c->checked_nodes = 0; /* the bound on checking work is per request, not per program */
    CompileRequest rq = {0};
    if (!sema_generic_args_from_strings(c, k, (const char **)generics, ngenerics, &rq.args))
        return TILEC_ERROR_COMPILE;
    rq.kernel = k;
    rq.sm = sm;
    rq.opt_level = target ? target->opt_level : 3;
    rq.stage = STAGE_PTX;
    rq.host = target && target->host;
    CompileResult res;
    if (!compile_specialization(c, &rq, &res))
        return c->diag.ice ? TILEC_ERROR_INTERNAL : TILEC_ERROR_COMPILE;
    tilec_artifact *a = tl_xcalloc(1, sizeof *a);
    if (rq.host) { /* host target: an x86-64 object for the emulator */
        a->object = res.text;
        a->object_size = res.size;
    } else {
        a->ptx = res.text;
        a->ptx_size = res.size;
    }
    a->signature = res.signature;
    a->entry = res.entry;
    *out = a;
    return TILEC_OK;
}

void tilec_artifact_destroy(tilec_artifact *a)
{
    if (!a)
        return;
    free(a->ptx);
    free(a->object);
    free(a->signature);
    free(a->entry);
    free(a);
}
