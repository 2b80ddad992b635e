/* sema.c — the compilation: loading files and imports, the global namespace, constants,
 * kernel signatures and launch geometry, `specialize` declarations, and the entry points of
 * semantic analysis. */
#include "sema_int.h"
#include "parse.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ERR(loc, ...) diag_error(s->d, (loc), __VA_ARGS__)

static uint64_t name_hash(const char *name) { return tl_hash_bytes(name, strlen(name), 0); }

static void sema_init(SemaCtx *s, Compilation *c)
{
    memset(s, 0, sizeof *s);
    s->comp = c;
    s->arena = &c->arena;
    s->d = &c->diag;
}

static void sema_done(SemaCtx *s)
{
    scope_free(&s->scope);
    ptrvec_free(&s->marks);
}

/* ---- the compilation ---- */
void comp_init(Compilation *c)
{
    memset(c, 0, sizeof *c);
    arena_init(&c->arena);
    diag_init(&c->diag);
}

void comp_free(Compilation *c)
{
    free(c->aliases);
    free(c->items);
    free(c->globals);
    free(c->global_index);
    diag_free(&c->diag);
    arena_free(&c->arena);
}

/* why a path that is not a regular file cannot be a source file */
static const char *not_regular(mode_t m)
{
    if (S_ISDIR(m))
        return "it is a directory, not a regular file";
    if (S_ISFIFO(m))
        return "it is a named pipe (FIFO), not a regular file";
    if (S_ISCHR(m))
        return "it is a character device, not a regular file";
    if (S_ISBLK(m))
        return "it is a block device, not a regular file";
    if (S_ISSOCK(m))
        return "it is a socket, not a regular file";
    return "not a regular file";
}

/* A source file: regular files only. It is opened without blocking (a FIFO would wait for a
 * writer, a terminal for input) and checked with fstat before anything is read. */
static char *read_file(const char *path, size_t *len, const char **err)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        *err = strerror(errno);
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        *err = strerror(errno);
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        *err = not_regular(st.st_mode);
        close(fd);
        return NULL;
    }
    if (st.st_size > TL_MAX_SOURCE_BYTES) {
        close(fd);
        *err = "file is larger than 8 MiB";
        return NULL;
    }
    /* read to the end (the file may change under us): at most one byte past the limit */
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *buf = tl_xmalloc(cap + 1);
    for (;;) {
        if (n == cap) {
            if (cap > TL_MAX_SOURCE_BYTES) {
                free(buf);
                close(fd);
                *err = "file is larger than 8 MiB";
                return NULL;
            }
            cap *= 2;
            buf = tl_xrealloc(buf, cap + 1);
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            *err = strerror(errno);
            free(buf);
            close(fd);
            return NULL;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    if (n > TL_MAX_SOURCE_BYTES) {
        free(buf);
        *err = "file is larger than 8 MiB";
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

static bool has_nul(const char *text, size_t len) { return memchr(text, 0, len) != NULL; }

static int load_module(Compilation *c, const char *path, const char *text, size_t len, Loc from, int depth);

/* A replay's view of a path: the file of the snapshot it names (its path or an alias), or -1. */
static int snapshot_file(const Compilation *c, const char *p)
{
    const Compilation *from = c->snapshot;
    for (int i = 0; i < from->diag.nfiles; i++)
        if (!strcmp(from->diag.files[i]->path, p))
            return i;
    for (int i = 0; i < from->naliases; i++)
        if (!strcmp(from->aliases[i].path, p))
            return from->aliases[i].file;
    return -1;
}

/* an import names the first path that exists, whatever it is: reading it says what is wrong
 * with one that is not a regular file (a replay looks among the files its snapshot loaded) */
static bool file_exists_in(const Compilation *c, const char *p)
{
    if (c->snapshot)
        return snapshot_file(c, p) >= 0;
    struct stat st;
    return stat(p, &st) == 0;
}

/* import paths: relative to the importing file, then each -I directory */
static char *resolve_import(Compilation *c, const char *from_path, const char *rel)
{
    char buf[PATH_MAX];
    if (rel[0] == '/')
        return file_exists_in(c, rel) ? arena_strdup(&c->arena, rel) : NULL;
    const char *slash = from_path ? strrchr(from_path, '/') : NULL;
    if (slash) {
        snprintf(buf, sizeof buf, "%.*s/%s", (int)(slash - from_path), from_path, rel);
        if (file_exists_in(c, buf))
            return arena_strdup(&c->arena, buf);
    } else if (file_exists_in(c, rel)) {
        return arena_strdup(&c->arena, rel);
    }
    for (int i = 0; i < c->ninclude; i++) {
        snprintf(buf, sizeof buf, "%s/%s", c->include_dirs[i], rel);
        if (file_exists_in(c, buf))
            return arena_strdup(&c->arena, buf);
    }
    return NULL;
}

static int find_loaded(Compilation *c, const char *path)
{
    if (c->snapshot) { /* the file of the snapshot, if this replay loaded it already */
        int f = snapshot_file(c, path);
        const char *as = f >= 0 ? c->snapshot->diag.files[f]->path : NULL;
        for (int i = 0; as && i < c->diag.nfiles; i++)
            if (!strcmp(c->diag.files[i]->path, as))
                return i;
        return -1;
    }
    char real[PATH_MAX];
    if (!realpath(path, real))
        return -1;
    for (int i = 0; i < c->diag.nfiles; i++) {
        char other[PATH_MAX];
        if (realpath(c->diag.files[i]->path, other) && strcmp(real, other) == 0)
            return i;
    }
    return -1;
}

static int load_module(Compilation *c, const char *path, const char *text, size_t len, Loc from, int depth)
{
    DiagEngine *d = &c->diag;
    if (len > TL_MAX_SOURCE_BYTES) {
        diag_error(d, from, "'%s' is larger than 8 MiB", path);
        return -1;
    }
    if (has_nul(text, len)) {
        diag_error(d, from, "'%s' contains a NUL byte; it is not a text file", path);
        return -1;
    }
    int fid = diag_add_file(d, path, text, len);
    if (fid < 0) {
        diag_error(d, from, "too many source files (the limit is %d)", TL_MAX_FILES);
        return -1;
    }
    ParseCtx pc = {0};
    pc.arena = &c->arena;
    pc.diag = d;
    pc.file = fid;
    pc.text = d->files[fid]->text;
    parse_file(&pc);
    Module *m = pc.module;
    c->modules[c->nmodules++] = m;
    if (pc.too_deep) {
        m->nitems = 0; /* never walk a tree that hit the nesting limit */
        return fid;
    }
    if (c->nitems + m->nitems > c->capitems) {
        c->capitems = c->capitems * 2 > c->nitems + m->nitems ? c->capitems * 2 : c->nitems + m->nitems;
        c->items = tl_xrealloc(c->items, sizeof(Item *) * (size_t)c->capitems);
    }
    for (int i = 0; i < m->nitems; i++)
        c->items[c->nitems++] = m->items[i];
    for (int i = 0; i < m->nitems; i++) {
        Item *it = m->items[i];
        if (it->kind != IT_IMPORT)
            continue;
        if (depth >= TL_MAX_IMPORT_DEPTH) {
            diag_error(d, it->loc, "imports nest deeper than %d levels", TL_MAX_IMPORT_DEPTH);
            continue;
        }
        char *p = resolve_import(c, d->files[fid]->path, it->path);
        if (!p) {
            diag_error(d, it->loc, "cannot find import '%s'", it->path);
            if (c->ninclude == 0)
                diag_note(d, it->loc, "imports are looked up next to this file and in -I directories");
            continue;
        }
        int existing = find_loaded(c, p);
        if (existing >= 0) {
            it->imported_file = existing;
            if (!c->snapshot && strcmp(p, d->files[existing]->path)) {
                if (c->naliases == c->capaliases) {
                    c->capaliases = c->capaliases ? 2 * c->capaliases : 8;
                    c->aliases = tl_xrealloc(c->aliases, sizeof *c->aliases * (size_t)c->capaliases);
                }
                c->aliases[c->naliases].path = p;
                c->aliases[c->naliases++].file = existing;
            }
            continue;
        }
        if (c->snapshot) {
            const SourceFile *f = c->snapshot->diag.files[snapshot_file(c, p)];
            it->imported_file = load_module(c, p, f->text, f->len, it->loc, depth + 1);
            continue;
        }
        size_t n;
        const char *err;
        char *t = read_file(p, &n, &err);
        if (!t) {
            diag_error(d, it->loc, "cannot read import '%s': %s", it->path, err);
            continue;
        }
        it->imported_file = load_module(c, p, t, n, it->loc, depth + 1);
        free(t);
    }
    return fid;
}

bool comp_load_file(Compilation *c, const char *path)
{
    size_t n;
    const char *err;
    char *t = read_file(path, &n, &err);
    if (!t) {
        diag_error(&c->diag, loc_none(), "cannot read '%s': %s", path, err);
        return false;
    }
    int errs = c->diag.nerrors;
    load_module(c, path, t, n, loc_none(), 0);
    free(t);
    return c->diag.nerrors == errs;
}

bool comp_load_snapshot(Compilation *c, const Compilation *from)
{
    if (from->diag.nfiles == 0)
        return false;
    c->snapshot = from;
    const SourceFile *root = from->diag.files[0];
    int errs = c->diag.nerrors;
    load_module(c, root->path, root->text, root->len, loc_none(), 0);
    c->snapshot = NULL;
    return c->diag.nerrors == errs && c->diag.nfiles == from->diag.nfiles;
}

bool comp_load_string(Compilation *c, const char *name, const char *text)
{
    int errs = c->diag.nerrors;
    load_module(c, name, text, strlen(text), loc_none(), 0);
    return c->diag.nerrors == errs;
}

/* The index slot of a name: its symbol's, or the empty one where it would go. */
static Sym **global_slot(Compilation *c, const char *name)
{
    size_t mask = (size_t)c->global_index_cap - 1;
    for (size_t i = name_hash(name) & mask;; i = (i + 1) & mask)
        if (!c->global_index[i] || strcmp(c->global_index[i]->name, name) == 0)
            return &c->global_index[i];
}

Sym *comp_lookup_global(Compilation *c, const char *name)
{
    return c->global_index_cap ? *global_slot(c, name) : NULL;
}

static void add_global(SemaCtx *s, Sym *sym)
{
    Compilation *c = s->comp;
    Sym *old = comp_lookup_global(c, sym->name);
    if (old) {
        ERR(sym->loc, "'%s' is already defined", sym->name);
        diag_note(s->d, old->loc, "previous definition is here");
        return;
    }
    if (builtin_lookup(sym->name) != BI_NONE) {
        ERR(sym->loc, "'%s' is the name of a builtin", sym->name);
        return;
    }
    if (c->nglobals == c->capglobals) {
        c->capglobals = c->capglobals ? c->capglobals * 2 : 64;
        c->globals = tl_xrealloc(c->globals, sizeof(Sym *) * (size_t)c->capglobals);
        /* the index keeps at least half of its slots free */
        free(c->global_index);
        c->global_index_cap = c->capglobals * 2;
        c->global_index = tl_xcalloc((size_t)c->global_index_cap, sizeof(Sym *));
        for (int i = 0; i < c->nglobals; i++)
            *global_slot(c, c->globals[i]->name) = c->globals[i];
    }
    c->globals[c->nglobals++] = sym;
    *global_slot(c, sym->name) = sym;
}

static void check_const_value(SemaCtx *s, Sym *sym, Item *it);

/* -D NAME=VALUE: an integer, float, bool or type name */
static bool parse_define_value(const char *v, ConstVal *out, Type **type)
{
    char *end;
    errno = 0;
    long long i = strtoll(v, &end, 0);
    if (*v && !*end && errno == 0) {
        *out = cv_int(i);
        *type = ty_untyped_int();
        return true;
    }
    if (*v && !*end)
        return false; /* an integer past 64 bits is not a float */
    errno = 0;
    double f = strtod(v, &end);
    if (*v && !*end && errno == 0) {
        *out = cv_float(f);
        *type = ty_untyped_float();
        return true;
    }
    if (!strcmp(v, "true") || !strcmp(v, "false")) {
        *out = cv_bool(v[0] == 't');
        *type = ty_scalar(DT_BOOL);
        return true;
    }
    DType dt = dtype_from_name(v);
    if (dt != DT_NONE) {
        out->kind = CV_TYPE;
        out->t = ty_scalar(dt);
        *type = ty_typeval();
        return true;
    }
    return false;
}

/* Constants are evaluated in the order they are used: a constant's initializer evaluates the
 * constants it names (check_name calls back here), whatever their order in the file. */
void sema_check_const(SemaCtx *s, Sym *sym)
{
    Item *it = sym->item;
    if (!it || sym->const_state != CONST_UNCHECKED)
        return;
    if (s->const_depth >= 64) {
        ERR(it->loc, "constants refer to each other too deeply");
        sym->const_state = CONST_DONE;
        return;
    }
    sym->const_state = CONST_BUSY; /* a use of it meanwhile is a cycle */
    s->const_depth++;
    check_const_value(s, sym, it);
    s->const_depth--;
    sym->const_state = CONST_DONE;
}

static void check_const_value(SemaCtx *s, Sym *sym, Item *it)
{
    Type *ann = it->ty ? resolve_type(s, it->ty, false) : NULL;
    Type *t = check_expr(s, it->value, ann && ann->kind == TY_SCALAR ? ann : NULL);
    if (t->kind == TY_ERROR) {
        sym->type = t;
        return;
    }
    if (ann && ann->kind != TY_ERROR)
        coerce(s, it->value, ann, "constant");
    if (it->value->cv.kind == CV_NONE || it->value->cv.kind == CV_UNKNOWN) {
        ERR(it->value->loc, "the value of constant '%s' is not known at compile time", sym->name);
        sym->type = ty_error();
        return;
    }
    sym->type = ann ? ann : it->value->type;
    sym->cv = it->value->cv;
}

bool comp_resolve(Compilation *c)
{
    if (c->resolved)
        return c->resolve_ok;
    c->resolved = true;
    SemaCtx sc, *s = &sc;
    sema_init(s, c);
    for (int i = 0; i < c->nitems; i++) {
        Item *it = c->items[i];
        SymKind k;
        if (it->kind == IT_CONST)
            k = SYM_CONST;
        else if (it->kind == IT_FN)
            k = SYM_FN;
        else if (it->kind == IT_KERNEL)
            k = SYM_KERNEL;
        else
            continue;
        Sym *sym = sym_new(s, k, it->name.s, it->name.loc, k == SYM_CONST ? NULL : ty_void());
        sym->item = it;
        it->sym = sym;
        add_global(s, sym);
    }
    for (int i = 0; i < c->ndefines; i++) {
        ConstVal v;
        Type *t;
        if (!parse_define_value(c->defines[i].value, &v, &t)) {
            diag_error(&c->diag, loc_none(), "-D %s=%s: the value must be a 64-bit integer, a float, true, false or a type name",
                       c->defines[i].name, c->defines[i].value);
            continue;
        }
        Sym *sym = comp_lookup_global(c, c->defines[i].name);
        if (sym && sym->kind != SYM_CONST) {
            diag_error(&c->diag, loc_none(), "-D %s: '%s' is a %s, not a constant", c->defines[i].name, c->defines[i].name,
                       sym->kind == SYM_FN ? "fn" : "kernel");
            continue;
        }
        if (!sym) {
            sym = sym_new(s, SYM_CONST, c->defines[i].name, loc_none(), t);
            add_global(s, sym);
        }
        sym->type = t;
        sym->cv = v;
        sym->const_state = CONST_DONE; /* the value given overrides the source */
    }
    for (int i = 0; i < c->nglobals; i++) {
        Sym *sym = c->globals[i];
        if (sym->kind == SYM_CONST)
            sema_check_const(s, sym);
    }
    sema_done(s);
    c->resolve_ok = !diag_has_errors(&c->diag);
    return c->resolve_ok;
}

/* ---- kernel signatures ---- */
/* a generic kind with its article, for messages: "an int", "a type" */
static const char *a_kind(GenericKind k)
{
    return k == GK_INT ? "an int" : k == GK_BOOL ? "a bool" : k == GK_FLOAT ? "a float" : "a type";
}

static Type *generic_type(GenericKind k)
{
    switch (k) {
    case GK_INT: return ty_untyped_int();
    case GK_FLOAT: return ty_untyped_float();
    case GK_BOOL: return ty_scalar(DT_BOOL);
    case GK_TYPE: return ty_typeval();
    }
    return ty_error();
}

static bool value_matches_kind(GenericKind k, ConstVal v)
{
    switch (k) {
    case GK_INT: return v.kind == CV_INT;
    case GK_FLOAT: return v.kind == CV_FLOAT || v.kind == CV_INT;
    case GK_BOOL: return v.kind == CV_BOOL;
    case GK_TYPE: return v.kind == CV_TYPE;
    }
    return false;
}

static void bind_generics(SemaCtx *s, Item *it, const GenericArgs *args)
{
    if (it->ngenerics > TL_MAX_GENERICS)
        ERR(it->name.loc, "'%s' has %d generic parameters; the limit is %d", it->name.s, it->ngenerics, TL_MAX_GENERICS);
    for (int g = 0; g < it->ngenerics && g < TL_MAX_GENERICS; g++) {
        GenericParam *gp = &it->generics[g];
        for (int h = 0; h < g; h++)
            if (strcmp(it->generics[h].name.s, gp->name.s) == 0) {
                ERR(gp->name.loc, "generic parameter '%s' is declared twice", gp->name.s);
                diag_note(s->d, it->generics[h].name.loc, "first declared here");
            }
        Sym *gs = sym_new(s, SYM_GENERIC, gp->name.s, gp->name.loc, generic_type(gp->kind));
        gs->item = it;
        gs->index = g;
        if (args) {
            gs->cv = args->vals[g];
            if (gp->kind == GK_FLOAT && gs->cv.kind == CV_INT)
                gs->cv = cv_float((double)gs->cv.i);
        } else {
            gs->cv = cv_unknown();
        }
        if (gp->deflt) {
            /* defaults are checked against the kind even when a value is given */
            SymScope saved = s->scope;
            Type *t = check_expr(s, gp->deflt, NULL);
            s->scope = saved;
            if (t->kind != TY_ERROR && gp->deflt->cv.kind != CV_UNKNOWN && !value_matches_kind(gp->kind, gp->deflt->cv))
                ERR(gp->deflt->loc, "default of '%s' is not %s", gp->name.s, a_kind(gp->kind));
        }
        gp->sym = gs;
        scope_add(s, gs);
    }
}

/* Marks the shape expressions of a rejected tensor type as erroneous, so that the later checks
 * of the signature do not report their names as unknown. */
static void drop_dims(TypeExpr *te)
{
    for (int i = 0; i < te->dims.n; i++)
        te->dims.v[i]->type = ty_error();
    for (int i = 0; i < te->strides.n; i++)
        te->strides.v[i]->type = ty_error();
}

/* Whether a name in a signature is new: not a local, parameter, module-level name or builtin. */
static bool fresh_name(SemaCtx *s, const Expr *d)
{
    return d->kind == EX_NAME && strcmp(d->str, "_") != 0 && !scope_lookup(s, d->str) &&
           !comp_lookup_global(s->comp, d->str) && builtin_lookup(d->str) == BI_NONE;
}

/* Binds the shape and stride names of one tensor parameter (te: its type; for a tensor list, the
 * type of its elements). */
static void bind_tensor_dims(SemaCtx *s, TypeExpr *te, const char *pname, int pindex, Sym *ts)
{
    int rank = te->dims.n;
    if (rank == 0) {
        ERR(te->loc, "a tensor needs at least one dimension");
        return;
    }
    if (rank > TL_MAX_RANK) {
        ERR(te->loc, "a tensor has at most %d dimensions", TL_MAX_RANK);
        drop_dims(te);
        return;
    }
    if (te->strides.n && te->strides.n != rank) {
        ERR(te->loc, "'%s' has %d dimension%s but %d stride%s", pname, rank, rank == 1 ? "" : "s", te->strides.n,
            te->strides.n == 1 ? "" : "s");
        drop_dims(te);
        return;
    }
    int64_t dims[TL_MAX_RANK];
    for (int k = 0; k < 2; k++) {
        ExprList l = k == 0 ? te->dims : te->strides;
        for (int i = 0; i < l.n; i++) {
            Expr *d = l.v[i];
            if (fresh_name(s, d)) {
                Sym *ds = sym_new(s, SYM_DIM, d->str, d->loc, ty_scalar(k == 0 ? DT_I32 : DT_I64));
                ds->dim_param = pindex;
                ds->dim_axis = i;
                ds->dim_is_stride = k == 1;
                d->sym = ds;
                d->type = ds->type;
                scope_add(s, ds);
                if (k == 0)
                    dims[i] = DIM_RUNTIME;
                continue;
            }
            if (d->kind == EX_NAME && strcmp(d->str, "_") == 0) {
                if (k == 0) {
                    ERR(d->loc, "'_' can only stand for a stride, not an extent");
                    dims[i] = DIM_RUNTIME;
                }
                d->type = ty_scalar(DT_I64);
                continue;
            }
            Type *t = check_expr(s, d, NULL);
            if (t->kind != TY_ERROR && t->kind != TY_UNTYPED_INT && !(t->kind == TY_SCALAR && dtype_is_int(t->dt))) {
                ERR(d->loc, "a tensor %s must be an integer, found %s", k == 0 ? "extent" : "stride", ty_str(s->arena, t));
            } else if (d->cv.kind == CV_INT && d->cv.i < (k == 0 ? 0 : 0)) {
                ERR(d->loc, "a tensor %s cannot be negative", k == 0 ? "extent" : "stride");
            }
            if (k == 0)
                dims[i] = d->cv.kind == CV_INT ? d->cv.i : d->cv.kind == CV_UNKNOWN ? DIM_UNKNOWN : DIM_RUNTIME;
        }
    }
    Type *et = resolve_type(s, te->elem, false);
    if (et->kind == TY_ERROR)
        return;
    if (et->kind == TY_SCALAR && et->dt == DT_BOOL)
        ERR(te->elem->loc, "tensors of bool are not supported; use u8");
    ts->type = ty_region(s->arena, TY_TENSOR, SC_GLOBAL, et->kind == TY_SCALAR ? et->dt : DT_NONE,
                         et->kind == TY_GENERIC ? et->generic_name : NULL, rank, dims);
}

/* The length and the `max` of a tensor list parameter, then its elements' shape names. A new
 * name binds the length (an i32, like an extent); a compile-time length fixes it (and is the max);
 * any other integer expression is checked at launch. The max sets the parameter's size: the
 * kernel takes that many pointers, whatever the length at launch. */
static void bind_list(SemaCtx *s, Param *p, int pindex, Sym *ts)
{
    TypeExpr *te = p->ty, *el = te->elem;
    Expr *len = te->len;
    int64_t n = DIM_RUNTIME, cap = DIM_UNKNOWN;
    if (fresh_name(s, len)) {
        Sym *ls = sym_new(s, SYM_DIM, len->str, len->loc, ty_scalar(DT_I32));
        ls->dim_param = pindex;
        ls->dim_axis = -1;
        len->sym = ls;
        len->type = ls->type;
        scope_add(s, ls);
    } else if (len->kind == EX_NAME && !strcmp(len->str, "_")) {
        ERR(len->loc, "the length of a tensor list is a name or an integer, not '_'");
        len->type = ty_error();
    } else {
        Type *t = check_expr(s, len, NULL);
        if (t->kind != TY_ERROR && t->kind != TY_UNTYPED_INT && !(t->kind == TY_SCALAR && dtype_is_int(t->dt)))
            ERR(len->loc, "the length of a tensor list must be an integer, found %s", ty_str(s->arena, t));
        else if (len->cv.kind == CV_INT && (len->cv.i < 1 || len->cv.i > TL_MAX_LIST))
            ERR(len->loc, "a tensor list of constant length holds 1 to %d tensors, not %lld", TL_MAX_LIST,
                (long long)len->cv.i);
        else if (len->cv.kind == CV_INT)
            n = cap = len->cv.i;
        else if (len->cv.kind == CV_UNKNOWN)
            n = DIM_UNKNOWN;
    }
    if (te->cap) {
        int64_t v;
        if (strcmp(te->cap_name, "max") != 0)
            ERR(te->cap_loc, "a tensor list takes 'max = N' after its length, not '%s'", te->cap_name);
        else if (require_const_int(s, te->cap, "the max of a tensor list", &v) == CI_KNOWN) {
            if (v < 1 || v > TL_MAX_LIST)
                ERR(te->cap->loc, "the max of a tensor list is 1 to %d tensors, not %lld", TL_MAX_LIST, (long long)v);
            else if (n >= 0 && n > v)
                ERR(len->loc, "'%s' has length %lld, more than its max = %lld", p->name.s, (long long)n, (long long)v);
            else
                cap = v;
        }
    } else if (n < 0 && n != DIM_UNKNOWN) {
        cap = TL_LIST_DEFAULT_MAX;
    }
    if (el->kind != TE_TENSOR) {
        ERR(el->loc, "a tensor list holds tensors: list<T[dims], LENGTH>");
        return;
    }
    if (el->optional) {
        ERR(el->loc, "the tensors of a list cannot be optional");
        drop_dims(el);
        return;
    }
    bind_tensor_dims(s, el, p->name.s, pindex, ts);
    if (ts->type->kind == TY_TENSOR) {
        ts->type->kind = TY_LIST;
        ts->type->list_len = n;
        ts->type->list_cap = cap;
    }
}

/* a parameter may not take the name of an extent or stride that a tensor parameter bound: the
 * name would mean two values (`x: f32[N], N: i32`; to make an extent equal a scalar, declare the
 * scalar first: `N: i32, x: f32[N]`) */
static void dim_name_clash(SemaCtx *s, Item *it, Param *p, Sym *g)
{
    if (!g || g->kind != SYM_DIM)
        return;
    const char *what = g->dim_axis < 0 ? "length" : g->dim_is_stride ? "stride" : "extent";
    ERR(p->name.loc, "parameter '%s' has the name of %s %s of '%s'", p->name.s,
        g->dim_axis < 0 ? "the" : g->dim_is_stride ? "a" : "an", what, it->params[g->dim_param].name.s);
    if (&it->params[g->dim_param] == p)
        diag_note(s->d, g->loc, "bound here");
    else
        diag_note(s->d, g->loc, "bound here; a parameter declared before '%s' would make the %s equal to it",
                  it->params[g->dim_param].name.s, what);
}

static void check_params(SemaCtx *s, Item *it, const GenericArgs *args)
{
    if (it->nparams > TL_MAX_PARAMS)
        ERR(it->name.loc, "'%s' has %d parameters; the limit is %d", it->name.s, it->nparams, TL_MAX_PARAMS);
    for (int i = 0; i < it->nparams && i < TL_MAX_PARAMS; i++) {
        Param *p = &it->params[i];
        for (int j = 0; j < i; j++)
            if (strcmp(it->params[j].name.s, p->name.s) == 0) {
                ERR(p->name.loc, "parameter '%s' is declared twice", p->name.s);
                diag_note(s->d, it->params[j].name.loc, "first declared here");
            }
        Sym *g = scope_lookup(s, p->name.s);
        if (g && g->kind == SYM_GENERIC) {
            ERR(p->name.loc, "parameter '%s' has the name of a generic parameter", p->name.s);
            diag_note(s->d, g->loc, "the generic parameter is declared here");
        }
        dim_name_clash(s, it, p, g);
        if (p->ty->kind == TE_TENSOR) {
            Sym *ts = sym_new(s, SYM_TENSOR, p->name.s, p->name.loc, ty_error());
            ts->item = it;
            ts->index = i;
            ts->optional = p->ty->optional;
            ts->present = !ts->optional || (args && args->present[i]);
            p->sym = ts;
            bind_tensor_dims(s, p->ty, p->name.s, i, ts);
            Sym *own = scope_lookup(s, p->name.s); /* x: f32[x] */
            if (own && own->kind == SYM_DIM && own->dim_param == i)
                dim_name_clash(s, it, p, own);
            scope_add(s, ts);
        } else if (p->ty->kind == TE_LIST) {
            Sym *ts = sym_new(s, SYM_TENSOR, p->name.s, p->name.loc, ty_error());
            ts->item = it;
            ts->index = i;
            ts->present = true;
            p->sym = ts;
            bind_list(s, p, i, ts);
            Sym *own = scope_lookup(s, p->name.s); /* xs: list<f32[N], xs> */
            if (own && own->kind == SYM_DIM && own->dim_param == i)
                dim_name_clash(s, it, p, own);
            scope_add(s, ts);
        } else {
            Type *t = resolve_type(s, p->ty, false);
            if (t->kind == TY_TUPLE) {
                ERR(p->ty->loc, "a parameter cannot be a tuple");
                t = ty_error();
            }
            Sym *ps = sym_new(s, SYM_SCALAR, p->name.s, p->name.loc, t);
            ps->item = it;
            ps->index = i;
            p->sym = ps;
            scope_add(s, ps);
        }
    }
}

/* persistent(tiles = ..., waves = ..., stages = ...): the counts are evaluated on the host (the
 * grid) and in the kernel (the tile loop's bounds), so they use the names both know; the grid
 * itself, expanded by the parser, is checked as any grid is */
static bool check_persistent(SemaCtx *s, Launch *l)
{
    int errs = s->d->nerrors;
    if (l->tiles.n > 3)
        ERR(l->tiles.v[3]->loc, "'tiles' counts tiles in 1 to 3 dimensions, %d given", l->tiles.n);
    for (int i = 0; i < l->tiles.n; i++) {
        Expr *t = l->tiles.v[i];
        s->in_tiles = true;
        Type *tt = check_expr(s, t, NULL);
        s->in_tiles = false;
        if (tt->kind == TY_ERROR)
            continue;
        if (tt->kind != TY_UNTYPED_INT && !(tt->kind == TY_SCALAR && dtype_is_int(tt->dt)))
            ERR(t->loc, "a number of tiles must be an integer, found %s", ty_str(s->arena, tt));
        else if (t->cv.kind == CV_INT && t->cv.i < 1)
            ERR(t->loc, "a number of tiles must be positive, found %lld", (long long)t->cv.i);
    }
    if (l->waves) {
        s->in_launch = true;
        Type *wt = check_expr(s, l->waves, NULL);
        s->in_launch = false;
        if (wt->kind != TY_ERROR && wt->kind != TY_UNTYPED_INT && !(wt->kind == TY_SCALAR && dtype_is_int(wt->dt)))
            ERR(l->waves->loc, "'waves' must be an integer, found %s", ty_str(s->arena, wt));
        else if (l->waves->cv.kind == CV_INT && l->waves->cv.i < 1)
            ERR(l->waves->loc, "'waves' is the number of blocks per SM, at least 1; found %lld", (long long)l->waves->cv.i);
    }
    int64_t st;
    if (l->stages && require_const_int(s, l->stages, "the number of stages", &st) == CI_KNOWN && (st < 0 || st > 8))
        ERR(l->stages->loc, "'persistent' takes 0 to 8 stages, found %lld", (long long)st);
    if (l->cluster.n)
        ERR(l->loc, "a 'persistent' launch cannot be clustered: its grid is no multiple of the cluster");
    return s->d->nerrors == errs;
}

static void check_launch(SemaCtx *s, Item *it)
{
    Launch *l = &it->launch;
    s->in_signature = true;
    /* the grid a persistent launch stands for is made of its counts: after an error in them, it
     * would only repeat the error */
    bool grid_ok = !l->persistent || check_persistent(s, l);
    s->in_launch = true;
    if (grid_ok && (l->grid.n < 1 || l->grid.n > 3))
        ERR(l->loc, "grid(...) takes 1 to 3 dimensions, %d given", l->grid.n);
    for (int i = 0; i < l->grid.n && grid_ok; i++) {
        Expr *g = l->grid.v[i];
        Type *t = check_expr(s, g, NULL);
        if (t->kind == TY_ERROR)
            continue;
        if (t->kind != TY_UNTYPED_INT && !(t->kind == TY_SCALAR && dtype_is_int(t->dt))) {
            ERR(g->loc, "a grid dimension must be an integer, found %s", ty_str(s->arena, t));
            continue;
        }
        if (g->cv.kind == CV_INT && (g->cv.i < 1 || g->cv.i > (i == 0 ? INT32_MAX : 65535)))
            ERR(g->loc, "grid dimension %d is %lld; it must be between 1 and %d", i, (long long)g->cv.i, i == 0 ? INT32_MAX : 65535);
    }
    s->in_launch = false;
    int64_t nt = 0;
    if (require_const_int(s, l->threads, "the number of threads", &nt) == CI_KNOWN &&
        (nt < 32 || nt > 1024 || nt % 32 != 0))
        ERR(l->threads->loc, "threads(%lld): a block has 32 to 1024 threads, a multiple of 32", (long long)nt);
    if (l->cluster.n > 3)
        ERR(l->loc, "cluster(...) takes 1 to 3 dimensions");
    int64_t csize = 1;
    for (int i = 0; i < l->cluster.n && i < 3; i++) {
        int64_t v;
        if (require_const_int(s, l->cluster.v[i], "a cluster dimension", &v) == CI_KNOWN) {
            if (v < 1)
                ERR(l->cluster.v[i]->loc, "a cluster dimension must be positive");
            else if (__builtin_mul_overflow(csize, v, &csize))
                csize = INT64_MAX;
        }
    }
    if (csize > 16)
        ERR(l->loc, "a cluster holds at most 16 blocks, found %lld", (long long)csize);
    if (l->cooperative && l->cluster.n)
        ERR(l->loc, "a kernel cannot be both 'cooperative' and clustered");
    int64_t bps;
    if (l->blocks_per_sm && require_const_int(s, l->blocks_per_sm, "blocks_per_sm", &bps) == CI_KNOWN) {
        if (bps < 0 || bps > 32)
            ERR(l->blocks_per_sm->loc, "blocks_per_sm(%lld): an SM holds 1 to 32 blocks (0: no request)", (long long)bps);
        else if (nt > 0 && bps * nt > 2048)
            ERR(l->blocks_per_sm->loc, "blocks_per_sm(%lld) with threads(%lld) asks for %lld threads on one SM; it holds 2048",
                (long long)bps, (long long)nt, (long long)(bps * nt));
    }
    s->in_signature = false;
}

static void check_signature_dims(SemaCtx *s, Item *it)
{
    /* shape expressions that are not bare names are checked at launch: they may only use
     * names the runtime knows */
    s->in_signature = true;
    for (int i = 0; i < it->nparams; i++) {
        Param *p = &it->params[i];
        TypeExpr *te = p->ty->kind == TE_LIST ? p->ty->elem : p->ty;
        if (te->kind != TE_TENSOR)
            continue;
        for (int k = 0; k < 2; k++) {
            ExprList l = k ? te->strides : te->dims;
            for (int j = 0; j < l.n; j++) {
                Expr *d = l.v[j];
                if (d->kind == EX_NAME && d->sym && d->sym->kind == SYM_DIM && d->sym->dim_param == i)
                    continue;
                if (d->kind == EX_NAME && strcmp(d->str, "_") == 0)
                    continue;
                if (d->type && d->type->kind == TY_ERROR)
                    continue;
                check_expr(s, d, NULL);
            }
        }
    }
    s->in_signature = false;
}

/* The bytes of a kernel's parameters as the ABI of tilec/compiler.h lays them out (each aligned
 * to its size, as CUDA does); -1 while a tensor list's max is not known (a generic check). */
static int64_t param_bytes(const Item *it)
{
    int64_t off = 0;
    for (int i = 0; i < it->nparams; i++) {
        const Param *p = &it->params[i];
        const Type *t = p->sym ? p->sym->type : NULL;
        if (!t || t->kind == TY_ERROR)
            continue;
        if (t->kind == TY_TENSOR || t->kind == TY_LIST) {
            if (t->kind == TY_LIST && t->list_cap < 0)
                return -1;
            off = (off + 7) & ~(int64_t)7;
            off += t->kind == TY_LIST ? 8 * t->list_cap + 4 : 8; /* pointers (and a list's length) */
            off += 4 * t->rank;
            off = ((off + 7) & ~(int64_t)7) + 8 * t->rank;
        } else if (t->kind == TY_SCALAR) {
            int64_t size = dtype_bits(t->dt) <= 8 ? 1 : dtype_bits(t->dt) / 8;
            off = ((off + size - 1) & ~(size - 1)) + size;
        }
    }
    return off;
}

/* Kernel parameter space: 32764 bytes (CUDA 12.1 and newer; the runtime refuses an older driver
 * for a kernel above the 4096 bytes it had before). Only tensor lists take that much. */
static void check_param_space(SemaCtx *s, Item *it, const GenericArgs *args)
{
    int64_t n = param_bytes(it);
    if (n <= TL_MAX_PARAM_BYTES)
        return;
    StrBuf name = {0};
    if (it->ngenerics && args) /* the specialisation: its generics may set the max */
        sema_format_specialization(&name, it, args);
    ERR(it->name.loc, "the parameters of '%s' take %lld bytes; a kernel takes at most %d (a tensor list takes 8 bytes "
                      "for each tensor of its max)", name.data ? name.data : it->name.s, (long long)n, TL_MAX_PARAM_BYTES);
    sb_free(&name);
}

bool sema_count_checked(SemaCtx *s, StmtList body, int weight, Loc loc)
{
    Compilation *c = s->comp;
    if (c->checked_nodes > TL_MAX_CHECKED_NODES)
        return false; /* reported when it was passed */
    c->checked_nodes += weight * stmts_nodes(body);
    if (c->checked_nodes > TL_MAX_CHECKED_NODES) {
        ERR(loc, "this compilation checks more than %d syntax nodes (a kernel once per specialisation, a fn once "
                 "per call); stopping here", TL_MAX_CHECKED_NODES);
        return false;
    }
    return true;
}

bool sema_kernel(Compilation *c, Item *kernel, const GenericArgs *args)
{
    int errs = c->diag.nerrors;
    if (!comp_resolve(c))
        return false;
    SemaCtx sc, *s = &sc;
    sema_init(s, c);
    if (!sema_count_checked(s, kernel->body, CHECK_IN_PLACE, kernel->name.loc))
        return false;
    s->kernel = kernel;
    s->generic = args == NULL;
    scope_push(s);
    bind_generics(s, kernel, args);
    s->in_signature = true;
    check_params(s, kernel, args);
    s->in_signature = false;
    check_signature_dims(s, kernel);
    check_param_space(s, kernel, args);
    check_launch(s, kernel);
    scope_push(s);
    s->stmt_index = 0;
    check_stmts(s, kernel->body);
    scope_pop(s);
    scope_pop(s);
    sema_done(s);
    return c->diag.nerrors == errs;
}

/* whether an expression uses a shape name of a tensor parameter */
static bool uses_shape_name(const Expr *e)
{
    if (!e)
        return false;
    if (e->kind == EX_NAME && e->sym && e->sym->kind == SYM_DIM)
        return true;
    if (uses_shape_name(e->a) || uses_shape_name(e->b) || uses_shape_name(e->c))
        return true;
    for (int i = 0; i < e->args.n; i++)
        if (uses_shape_name(e->args.v[i]))
            return true;
    return false;
}

/* A tile parameter of a fn checked on its own: its extents are new names (of unknown value),
 * or compile-time integers over the fn's generics, the constants and the shape names of its
 * tensor parameters (whose values a call gives: unknown here). */
static Sym *generic_tile_param(SemaCtx *s, Item *fn, Param *p)
{
    TypeExpr *te = p->ty;
    Type *et = resolve_type(s, te->elem, false);
    bool ok = et->kind != TY_ERROR;
    if (te->dims.n > TL_MAX_RANK) {
        ERR(te->loc, "a tile has at most %d dimensions", TL_MAX_RANK);
        ok = false;
    }
    if (ok && et->kind == TY_SCALAR && et->dt == DT_BOOL && te->scope == SC_SHARED) {
        ERR(te->elem->loc, "shared tiles of bool are not supported; use u8");
        ok = false;
    }
    int64_t dims[TL_MAX_RANK];
    for (int d = 0; ok && d < te->dims.n; d++) {
        Expr *x = te->dims.v[d];
        dims[d] = DIM_UNKNOWN;
        if (x->kind == EX_NAME && strcmp(x->str, "_") != 0 && !scope_lookup(s, x->str) &&
            !comp_lookup_global(s->comp, x->str) && builtin_lookup(x->str) == BI_NONE) {
            for (int j = 0; j < fn->nparams; j++)
                if (!strcmp(fn->params[j].name.s, x->str)) {
                    ERR(fn->params[j].name.loc, "parameter '%s' has the name of %s of '%s'", x->str, "an extent", p->name.s);
                    diag_note(s->d, x->loc, "bound here");
                }
            Sym *ds = sym_new(s, SYM_LET, x->str, x->loc, ty_scalar(DT_I32));
            ds->cv = cv_unknown();
            scope_add(s, ds);
            continue;
        }
        int64_t v;
        Type *xt = check_expr(s, x, NULL);
        if (xt->kind != TY_ERROR && uses_shape_name(x))
            continue;
        ConstIntResult rc = require_const_int(s, x, "an extent of a tile parameter", &v);
        if (rc == CI_ERROR)
            ok = false;
        else if (rc == CI_KNOWN && v <= 0) {
            ERR(x->loc, "a tile extent must be positive, found %lld", (long long)v);
            ok = false;
        } else if (rc == CI_KNOWN) {
            dims[d] = v;
        }
    }
    Type *t = ok ? ty_region(s->arena, TY_TILE, te->scope, et->kind == TY_SCALAR ? et->dt : DT_NONE,
                             et->kind == TY_GENERIC ? et->generic_name : NULL, te->dims.n, dims)
                 : ty_error();
    Sym *ps = sym_new(s, SYM_STORAGE, p->name.s, p->name.loc, t);
    ps->tile_param = true;
    ps->tile_whole = true;
    return ps;
}

bool sema_fn_generic(Compilation *c, Item *fn)
{
    int errs = c->diag.nerrors;
    SemaCtx sc, *s = &sc;
    sema_init(s, c);
    s->fn_generic_check = true;
    if (!sema_count_checked(s, fn->body, CHECK_COPY, fn->name.loc))
        return false;
    if (fn->nparams > TL_MAX_PARAMS) {
        /* as for kernels; the duplicate check below is quadratic */
        ERR(fn->name.loc, "'%s' has %d parameters; the limit is %d", fn->name.s, fn->nparams, TL_MAX_PARAMS);
        return false;
    }
    s->generic = true;
    scope_push(s);
    bind_generics(s, fn, NULL);
    for (int i = 0; i < fn->nparams; i++) {
        Param *p = &fn->params[i];
        for (int j = 0; j < i; j++)
            if (strcmp(fn->params[j].name.s, p->name.s) == 0) {
                ERR(p->name.loc, "parameter '%s' is declared twice", p->name.s);
                diag_note(s->d, fn->params[j].name.loc, "first declared here");
            }
        Sym *ps = sym_new(s, SYM_LET, p->name.s, p->name.loc, NULL);
        if (p->ty->kind == TE_TENSOR) {
            Sym *ts = sym_new(s, SYM_TENSOR, p->name.s, p->name.loc, ty_error());
            ts->item = fn;
            ts->index = i;
            ts->present = true;
            bind_tensor_dims(s, p->ty, p->name.s, i, ts);
            ps = ts;
        } else if (p->ty->kind == TE_TILE) {
            ps = generic_tile_param(s, fn, p);
        } else {
            /* uniform or not as its argument is: a block-wide operation under a condition on a
             * scalar parameter is checked at each call, where that is known */
            ps->type = resolve_type(s, p->ty, false);
        }
        p->sym = ps;
        scope_add(s, ps);
    }
    InlineCall ic = {0};
    ic.fn = fn;
    ic.ret = fn->ret ? resolve_type(s, fn->ret, false) : ty_void();
    ic.body = ast_clone_stmts(s->arena, fn->body);
    Expr call = {0};
    call.loc = fn->name.loc;
    if (ic.ret->kind != TY_ERROR)
        check_body_inline(s, &ic, &call);
    scope_pop(s);
    sema_done(s);
    return c->diag.nerrors == errs;
}

/* ---- specialisations ---- */
static bool eval_spec_value(SemaCtx *s, GenericKind k, Expr *e, ConstVal *out)
{
    if (e->kind == EX_TYPE) {
        if (k != GK_TYPE) {
            ERR(e->loc, "expected %s value, found the type '%s'", a_kind(k), dtype_name(e->prim));
            return false;
        }
        out->kind = CV_TYPE;
        out->t = ty_scalar(e->prim);
        return true;
    }
    Type *t = check_expr(s, e, NULL);
    if (t->kind == TY_ERROR)
        return false;
    if (!cv_known(e->cv)) {
        ERR(e->loc, "a specialisation value must be a compile-time constant");
        return false;
    }
    if (!value_matches_kind(k, e->cv)) {
        ERR(e->loc, "expected %s value", a_kind(k));
        return false;
    }
    *out = e->cv;
    if (k == GK_FLOAT && out->kind == CV_INT)
        *out = cv_float((double)out->i);
    return true;
}

/* Fills the generics not given (given[g] false) from their defaults, in order, with the
 * earlier generics visible: a default may use them (BM: int = 4096 / BK). */
static bool fill_defaults(SemaCtx *s, Item *k, GenericArgs *ga, const bool *given)
{
    bool ok = true;
    scope_push(s);
    for (int g = 0; g < k->ngenerics && g < TL_MAX_GENERICS; g++) {
        GenericParam *gp = &k->generics[g];
        if (!given[g]) {
            if (!gp->deflt) {
                ERR(gp->name.loc, "kernel '%s' needs a value for generic '%s'", k->name.s, gp->name.s);
                ok = false;
                break;
            }
            if (!eval_spec_value(s, gp->kind, gp->deflt, &ga->vals[g])) {
                ok = false;
                break;
            }
        }
        Sym *gs = sym_new(s, SYM_GENERIC, gp->name.s, gp->name.loc, generic_type(gp->kind));
        gs->cv = ga->vals[g];
        scope_add(s, gs);
    }
    scope_pop(s);
    return ok;
}

int sema_expand_specialize(Compilation *c, Item *spec, Item **kernel_out, GenericArgs *out, int max)
{
    SemaCtx sc, *s = &sc;
    sema_init(s, c);
    Sym *ks = comp_lookup_global(c, spec->name.s);
    if (!ks || ks->kind != SYM_KERNEL) {
        ERR(spec->name.loc, ks ? "'%s' is not a kernel" : "unknown kernel '%s'", spec->name.s);
        sema_done(s);
        return -1;
    }
    Item *k = ks->item;
    *kernel_out = k;
    /* which spec arg gives each generic / optional tensor */
    int given_g[TL_MAX_GENERICS], given_p[TL_MAX_PARAMS];
    for (int i = 0; i < TL_MAX_GENERICS; i++)
        given_g[i] = -1;
    for (int i = 0; i < TL_MAX_PARAMS; i++)
        given_p[i] = -1;
    bool ok = true;
    for (int a = 0; a < spec->nsargs; a++) {
        SpecArg *sa = &spec->sargs[a];
        int gi = -1, pi = -1;
        for (int g = 0; g < k->ngenerics && g < TL_MAX_GENERICS; g++)
            if (strcmp(k->generics[g].name.s, sa->name.s) == 0)
                gi = g;
        for (int p = 0; p < k->nparams && p < TL_MAX_PARAMS; p++)
            if (strcmp(k->params[p].name.s, sa->name.s) == 0 && k->params[p].ty->kind == TE_TENSOR && k->params[p].ty->optional)
                pi = p;
        if (gi < 0 && pi < 0) {
            ERR(sa->name.loc, "kernel '%s' has no generic parameter or optional tensor '%s'", k->name.s, sa->name.s);
            diag_note(s->d, k->name.loc, "'%s' is declared here", k->name.s);
            ok = false;
            continue;
        }
        int *slot = gi >= 0 ? &given_g[gi] : &given_p[pi];
        if (*slot >= 0) {
            ERR(sa->name.loc, "'%s' is given twice", sa->name.s);
            ok = false;
            continue;
        }
        *slot = a;
    }
    for (int g = 0; g < k->ngenerics && g < TL_MAX_GENERICS; g++)
        if (given_g[g] < 0 && !k->generics[g].deflt) {
            ERR(spec->loc, "specialize '%s' does not give '%s', which has no default", k->name.s, k->generics[g].name.s);
            ok = false;
        }
    if (!ok) {
        sema_done(s);
        return -1;
    }
    /* evaluate each dimension's values, then take the cartesian product */
    int ndims = 0;
    ConstVal *vals[TL_MAX_GENERICS + TL_MAX_PARAMS];
    int nvals[TL_MAX_GENERICS + TL_MAX_PARAMS];
    int slot_g[TL_MAX_GENERICS + TL_MAX_PARAMS], slot_p[TL_MAX_GENERICS + TL_MAX_PARAMS];
    for (int g = 0; g < k->ngenerics && g < TL_MAX_GENERICS; g++) {
        GenericParam *gp = &k->generics[g];
        if (given_g[g] < 0)
            continue;
        ExprList l = spec->sargs[given_g[g]].values;
        vals[ndims] = ARENA_ARRAY(s->arena, ConstVal, l.n);
        nvals[ndims] = l.n;
        slot_g[ndims] = g;
        slot_p[ndims] = -1;
        for (int i = 0; i < l.n; i++)
            if (!eval_spec_value(s, gp->kind, l.v[i], &vals[ndims][i]))
                ok = false;
        ndims++;
    }
    for (int p = 0; p < k->nparams && p < TL_MAX_PARAMS; p++) {
        if (given_p[p] < 0)
            continue;
        ExprList l = spec->sargs[given_p[p]].values;
        vals[ndims] = ARENA_ARRAY(s->arena, ConstVal, l.n);
        nvals[ndims] = l.n;
        slot_g[ndims] = -1;
        slot_p[ndims] = p;
        for (int i = 0; i < l.n; i++)
            if (!eval_spec_value(s, GK_BOOL, l.v[i], &vals[ndims][i]))
                ok = false;
        ndims++;
    }
    if (!ok) {
        sema_done(s);
        return -1;
    }
    int64_t total = 1;
    for (int i = 0; i < ndims; i++) {
        total *= nvals[i];
        if (total > TL_MAX_SPECIALIZATIONS) {
            diag_error(&c->diag, spec->loc, "specialize '%s' expands to more than %d instances", k->name.s, TL_MAX_SPECIALIZATIONS);
            sema_done(s);
            return -1;
        }
    }
    int count = 0;
    for (int64_t idx = 0; idx < total; idx++) {
        if (count >= max)
            break;
        GenericArgs *ga = &out[count++];
        memset(ga, 0, sizeof *ga);
        ga->n = k->ngenerics;
        for (int p = 0; p < k->nparams && p < TL_MAX_PARAMS; p++)
            ga->present[p] = !(k->params[p].ty->kind == TE_TENSOR && k->params[p].ty->optional);
        int64_t rem = idx;
        for (int i = ndims - 1; i >= 0; i--) {
            ConstVal v = vals[i][rem % nvals[i]];
            rem /= nvals[i];
            if (slot_g[i] >= 0)
                ga->vals[slot_g[i]] = v;
            else
                ga->present[slot_p[i]] = v.b;
        }
        bool given[TL_MAX_GENERICS] = {0};
        for (int g = 0; g < k->ngenerics && g < TL_MAX_GENERICS; g++)
            given[g] = given_g[g] >= 0;
        if (!fill_defaults(s, k, ga, given)) {
            sema_done(s);
            return -1;
        }
    }
    sema_done(s);
    return count;
}

bool sema_generic_args_from_strings(Compilation *c, Item *k, const char **assigns, int n, GenericArgs *out)
{
    memset(out, 0, sizeof *out);
    out->n = k->ngenerics;
    bool given[TL_MAX_GENERICS] = {0}, param_given[TL_MAX_PARAMS] = {0};
    for (int p = 0; p < k->nparams && p < TL_MAX_PARAMS; p++)
        out->present[p] = !(k->params[p].ty->kind == TE_TENSOR && k->params[p].ty->optional);
    for (int i = 0; i < n; i++) {
        const char *eq = strchr(assigns[i], '=');
        if (!eq) {
            diag_error(&c->diag, loc_none(), "generic value '%s' must be written NAME=VALUE", assigns[i]);
            return false;
        }
        char name[TL_MAX_IDENT + 1];
        size_t nl = (size_t)(eq - assigns[i]);
        if (nl > TL_MAX_IDENT)
            nl = TL_MAX_IDENT;
        memcpy(name, assigns[i], nl);
        name[nl] = 0;
        const char *val = eq + 1;
        int gi = -1;
        for (int g = 0; g < k->ngenerics && g < TL_MAX_GENERICS; g++)
            if (strcmp(k->generics[g].name.s, name) == 0)
                gi = g;
        if (gi < 0) {
            int pi = -1;
            for (int p = 0; p < k->nparams && p < TL_MAX_PARAMS; p++)
                if (strcmp(k->params[p].name.s, name) == 0 && k->params[p].ty->kind == TE_TENSOR && k->params[p].ty->optional)
                    pi = p;
            if (pi >= 0 && (!strcmp(val, "true") || !strcmp(val, "false") || !strcmp(val, "present") || !strcmp(val, "absent"))) {
                if (param_given[pi]) {
                    diag_error(&c->diag, loc_none(), "optional tensor '%s' of '%s' is given twice", name, k->name.s);
                    return false;
                }
                param_given[pi] = true;
                out->present[pi] = val[0] == 't' || val[0] == 'p';
                continue;
            }
            diag_error(&c->diag, loc_none(), "kernel '%s' has no generic parameter '%s'", k->name.s, name);
            return false;
        }
        if (given[gi]) {
            diag_error(&c->diag, loc_none(), "generic '%s' of '%s' is given twice", name, k->name.s);
            return false;
        }
        ConstVal v;
        Type *t;
        if (!parse_define_value(val, &v, &t) || !value_matches_kind(k->generics[gi].kind, v)) {
            diag_error(&c->diag, loc_none(), "generic '%s' of '%s' is %s; '%s' is not", name, k->name.s,
                       a_kind(k->generics[gi].kind), val);
            return false;
        }
        if (k->generics[gi].kind == GK_FLOAT && v.kind == CV_INT)
            v = cv_float((double)v.i);
        out->vals[gi] = v;
        given[gi] = true;
    }
    SemaCtx sc, *s = &sc;
    sema_init(s, c);
    bool ok = fill_defaults(s, k, out, given);
    sema_done(s);
    return ok;
}

void sema_format_generic_args(StrBuf *out, const Item *k, const GenericArgs *args)
{
    bool first = true;
    for (int g = 0; g < k->ngenerics && g < TL_MAX_GENERICS; g++) {
        sb_printf(out, "%s%s=", first ? "" : ",", k->generics[g].name.s);
        cv_print(out, args->vals[g]);
        first = false;
    }
    for (int p = 0; p < k->nparams && p < TL_MAX_PARAMS; p++) {
        if (k->params[p].ty->kind == TE_TENSOR && k->params[p].ty->optional) {
            sb_printf(out, "%s%s=%s", first ? "" : ",", k->params[p].name.s, args->present[p] ? "present" : "absent");
            first = false;
        }
    }
}

void sema_format_specialization(StrBuf *out, const Item *k, const GenericArgs *args)
{
    sb_printf(out, "%s<", k->name.s);
    sema_format_generic_args(out, k, args);
    sb_puts(out, ">");
}
