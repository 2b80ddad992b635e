/* api.c — the public compiler API (tilec/compiler.h) over the internal pipeline. */
#include "tilec/compiler.h"

#include "compile.h"
#include "tilec_version.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Compiling a specialisation annotates the syntax tree in place and allocates from the
 * compilation's arena, so requests do not compile in the program's own parse: each takes an
 * idle worker (a second parse of the same texts, comp_load_snapshot), or makes one, and gives
 * it back afterwards. A worker whose arena has grown past WORKER_BUDGET is freed instead, so
 * a long-lived program (the JIT's) holds at most MAX_IDLE_WORKERS bounded workers whatever the
 * number of specialisations it compiles, and requests on several threads compile in parallel,
 * each in its own worker. */
#define MAX_IDLE_WORKERS 8
#define WORKER_BUDGET ((size_t)8 << 20)

typedef struct Worker {
    Compilation comp;
    size_t base; /* arena bytes after loading */
} Worker;

struct tilec_program {
    Compilation comp;
    uint64_t hash;
    uint64_t serial;   /* tells programs apart in the per-thread diagnostics */
    char **kernel_names;
    int nkernels;
    Define *defines;
    StrBuf iface;      /* the latest tilec_program_kernel_interface */
    const char **include_dirs;
    pthread_mutex_t lock; /* idle workers, comp.diag.out */
    Worker *idle[MAX_IDLE_WORKERS];
    int nidle;
};

/* The diagnostics of the latest tilec_compile of this thread, and the program it was on. */
typedef struct LastDiag {
    uint64_t serial;
    char *text;
} LastDiag;

static pthread_key_t last_key;
static pthread_once_t last_once = PTHREAD_ONCE_INIT;
static atomic_uint_fast64_t next_serial = 1;

static void last_free(void *v)
{
    LastDiag *l = v;
    free(l->text);
    free(l);
}

static void last_init(void) { pthread_key_create(&last_key, last_free); }

static LastDiag *last_diag(void)
{
    pthread_once(&last_once, last_init);
    LastDiag *l = pthread_getspecific(last_key);
    if (!l) {
        l = tl_xcalloc(1, sizeof *l);
        pthread_setspecific(last_key, l);
    }
    return l;
}

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
    pthread_mutex_init(&p->lock, NULL);
    p->serial = atomic_fetch_add(&next_serial, 1);
    if (opts) {
        /* copies: workers parse again after the caller's arrays are gone */
        if (opts->ninclude > 0 && opts->include_dirs) {
            p->include_dirs = tl_xcalloc((size_t)opts->ninclude, sizeof(char *));
            for (int i = 0; i < opts->ninclude; i++)
                p->include_dirs[i] = arena_strdup(&p->comp.arena, opts->include_dirs[i] ? opts->include_dirs[i] : "");
            p->comp.include_dirs = p->include_dirs;
            p->comp.ninclude = opts->ninclude;
        }
        if (opts->ndefines > 0) {
            p->defines = tl_xcalloc((size_t)opts->ndefines, sizeof(Define));
            for (int i = 0; i < opts->ndefines; i++) {
                const char *d = opts->defines[i];
                const char *eq = d ? strchr(d, '=') : NULL;
                p->defines[i].name = eq ? arena_strndup(&p->comp.arena, d, (size_t)(eq - d)) : arena_strdup(&p->comp.arena, d ? d : "");
                p->defines[i].value = arena_strdup(&p->comp.arena, eq ? eq + 1 : "");
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

static void worker_free(Worker *w)
{
    comp_free(&w->comp);
    free(w);
}

void tilec_program_destroy(tilec_program *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->nidle; i++)
        worker_free(p->idle[i]);
    pthread_mutex_destroy(&p->lock);
    free(p->include_dirs);
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
    if (!p)
        return "";
    LastDiag *l = last_diag();
    return l->serial == p->serial && l->text ? l->text : "";
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

static tilec_status compile_request(Compilation *c, const char *kernel, const char *const *generics, int ngenerics,
                                    const tilec_target *target, tilec_artifact **out);

/* An idle worker of p, or a new one (NULL if the texts do not load again: they always should). */
static Worker *worker_take(tilec_program *p)
{
    pthread_mutex_lock(&p->lock);
    Worker *w = p->nidle ? p->idle[--p->nidle] : NULL;
    pthread_mutex_unlock(&p->lock);
    if (w)
        return w;
    w = tl_xcalloc(1, sizeof *w);
    comp_init(&w->comp);
    w->comp.include_dirs = p->comp.include_dirs;
    w->comp.ninclude = p->comp.ninclude;
    w->comp.defines = p->comp.defines;
    w->comp.ndefines = p->comp.ndefines;
    if (!comp_load_snapshot(&w->comp, &p->comp) || !comp_resolve(&w->comp)) {
        worker_free(w);
        return NULL;
    }
    w->base = w->comp.arena.used_total;
    return w;
}

static void worker_give_back(tilec_program *p, Worker *w)
{
    pthread_mutex_lock(&p->lock);
    if (p->nidle < MAX_IDLE_WORKERS && w->comp.arena.used_total - w->base <= WORKER_BUDGET &&
        w->comp.diag.out.len <= WORKER_BUDGET) {
        p->idle[p->nidle++] = w;
        w = NULL;
    }
    pthread_mutex_unlock(&p->lock);
    if (w)
        worker_free(w);
}

tilec_status tilec_compile(tilec_program *p, const char *kernel, const char *const *generics, int ngenerics,
                           const tilec_target *target, tilec_artifact **out)
{
    if (!p || !kernel || !out || ngenerics < 0 || (ngenerics > 0 && !generics))
        return TILEC_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    LastDiag *l = last_diag();
    l->serial = p->serial;
    free(l->text);
    l->text = NULL;
    if (diag_has_errors(&p->comp.diag)) /* the program itself has errors */
        return TILEC_ERROR_COMPILE;
    Worker *w = worker_take(p);
    if (!w) {
        l->text = strdup("internal error: the program's sources did not parse a second time\n");
        return TILEC_ERROR_INTERNAL;
    }
    Compilation *c = &w->comp;
    size_t start = c->diag.out.len;
    int errs = c->diag.nerrors;
    tilec_status st = compile_request(c, kernel, generics, ngenerics, target, out);
    /* errors of one request must not poison later ones: the program stays usable */
    if (st != TILEC_OK) {
        c->diag.nerrors = errs;
        c->diag.ice = false;
        if (c->diag.nerrors == 0)
            c->diag.capped = false;
    }
    if (c->diag.out.len > start) { /* this request's diagnostics: the thread's, and the program's */
        const char *text = c->diag.out.data + start;
        l->text = strdup(text);
        pthread_mutex_lock(&p->lock);
        sb_printf(&p->comp.diag.out, "%s", text);
        pthread_mutex_unlock(&p->lock);
    }
    worker_give_back(p, w);
    return st;
}

static tilec_status compile_request(Compilation *c, const char *kernel, const char *const *generics, int ngenerics,
                                    const tilec_target *target, tilec_artifact **out)
{
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
