/* sema.h — symbols, the semantic-analysis context and the compilation that owns them.
 *
 * Semantic analysis runs once per kernel with its generic parameters either bound to values
 * (a specialisation, which TIR lowering follows) or unknown (a generic check, used by
 * `tilec check` on kernels that declare no specialisation). It annotates the AST in place:
 * every expression gets a type, a compile-time value where it has one, its symbol and whether
 * it may differ between the threads of a block. */
#ifndef TILEC_SEMA_H
#define TILEC_SEMA_H

#include "ast.h"
#include "builtins.h"

typedef enum SymKind {
    SYM_CONST,     /* module-level const */
    SYM_FN,
    SYM_KERNEL,
    SYM_GENERIC,   /* generic parameter; cv is its value (CV_UNKNOWN in a generic check) */
    SYM_TENSOR,    /* tensor parameter */
    SYM_SCALAR,    /* scalar parameter */
    SYM_DIM,       /* a shape or stride name bound from a tensor argument at launch */
    SYM_LET,
    SYM_VAR,
    SYM_STORAGE,   /* shared / frag / local tile */
    SYM_LOOP,      /* for-loop variable */
    SYM_PINDEX,    /* parallel-loop index */
} SymKind;

struct Sym {
    SymKind kind;
    const char *name;
    Loc loc;
    Type *type;
    ConstVal cv;
    Item *item;          /* CONST / FN / KERNEL: its item; GENERIC / params: the owning item */
    Stmt *decl;          /* LET / VAR / STORAGE / LOOP / PINDEX: the declaring statement */
    int index;           /* GENERIC / TENSOR / SCALAR: position in the signature */
    int dim_param;       /* DIM: the tensor parameter that binds it */
    int dim_axis;        /* DIM: the axis */
    bool dim_is_stride;
    bool optional;       /* TENSOR declared with `?` */
    bool present;        /* TENSOR: whether an optional tensor was given (specialisation) */
    bool varying;        /* LET / VAR: value may differ between threads */
    int parallel_level;  /* nesting level of `parallel` where declared */
    /* STORAGE: a fn's tile parameter, bound to the caller's tile (all of it, or a slice or view
     * of it: then `parallel` cannot walk it); tile_root is that tile's own symbol, which tells
     * two arguments of one call apart */
    bool tile_param;
    bool tile_whole;
    Sym *tile_root;
    bool used;
    int const_state;     /* CONST: CONST_UNCHECKED, CONST_BUSY (being evaluated), CONST_DONE */
    void *tir;           /* filled in by TIR lowering */
    int id;
};

enum { CONST_UNCHECKED, CONST_BUSY, CONST_DONE };

typedef struct Define { const char *name; const char *value; } Define;

/* One compilation: the files (the root and its imports), their modules, the global symbols. */
typedef struct Compilation {
    Arena arena;
    DiagEngine diag;
    const char **include_dirs;
    int ninclude;
    Define *defines;
    int ndefines;
    Module *modules[TL_MAX_FILES];
    int nmodules;
    /* the items of every module in load order (the modules' order, each module's items in
     * source order): what everything that walks the program walks */
    Item **items;
    int nitems, capitems;
    /* global namespace: consts, fns and kernels of every module */
    Sym **globals;
    int nglobals, capglobals;
    Sym **global_index;  /* open-addressing hash of globals by name (capacity a power of two) */
    int global_index_cap;
    bool resolved;       /* module-level resolution done */
    bool resolve_ok;     /* ... without errors (later errors in one kernel do not undo it) */
    /* Syntax nodes checked so far: a kernel body once per check (each specialisation is one),
     * a fn body once per call (it is inlined: copied, so it counts 4 times) and once on its own.
     * Checks allocate from the arena and take time in proportion, and a small input can ask for
     * many (4096 instances of a big kernel, many kernels calling one big fn), so past
     * TL_MAX_CHECKED_NODES a check is an error. A long-lived compilation (the JIT) may set it
     * back to 0 between requests. */
    int64_t checked_nodes;
    int next_sym_id;
    /* Import spellings that named a file already loaded under another path (the same file by
     * realpath): what a replay (comp_load_snapshot) needs to resolve them the same way. */
    struct { const char *path; int file; } *aliases;
    int naliases, capaliases;
    /* A replay reads its files from this compilation's texts instead of the file system. */
    const struct Compilation *snapshot;
} Compilation;

void comp_init(Compilation *c);
void comp_free(Compilation *c);
/* Loads a root file (and, transitively, its imports). Returns false on errors. */
bool comp_load_file(Compilation *c, const char *path);
bool comp_load_string(Compilation *c, const char *name, const char *text);
/* Loads the same files as `from` (its root and imports, resolved as `from` resolved them) from
 * the texts `from` holds, without reading the file system: a second, independent parse of a
 * loaded program. c must be fresh, with from's include directories and defines; `from` must
 * outlive c's loading and must not change meanwhile. */
bool comp_load_snapshot(Compilation *c, const Compilation *from);
/* Module-level checks: duplicate names, consts, signatures, specialize declarations. */
bool comp_resolve(Compilation *c);
Sym *comp_lookup_global(Compilation *c, const char *name);

/* A set of generic values for one kernel, in signature order. */
typedef struct GenericArgs {
    int n;
    ConstVal vals[TL_MAX_GENERICS];
    bool present[TL_MAX_PARAMS];    /* optional tensor parameters given (by parameter index) */
} GenericArgs;

/* Runs semantic analysis on a kernel. args == NULL: generic check (values unknown).
 * Returns false when errors were reported. */
bool sema_kernel(Compilation *c, Item *kernel, const GenericArgs *args);

/* Expands a `specialize` declaration into its instances (cartesian product).
 * Returns the number of instances written to out (at most max), -1 on errors. */
int sema_expand_specialize(Compilation *c, Item *spec, Item **kernel_out, GenericArgs *out, int max);

/* Parses "NAME=VALUE" generic assignments (the CLI's --generic flags and the runtime's keys)
 * into args for the kernel. Returns false with a diagnostic on errors. */
bool sema_generic_args_from_strings(Compilation *c, Item *kernel, const char **assigns, int n, GenericArgs *out);
/* Writes "T=bf16,N=128" for a set of generic values. */
void sema_format_generic_args(StrBuf *out, const Item *kernel, const GenericArgs *args);
/* Writes "name<T=bf16,N=128>" ("name<>" for a kernel without generic values): how diagnostics,
 * `tilec build` and the tile IR name a specialisation. */
void sema_format_specialization(StrBuf *out, const Item *kernel, const GenericArgs *args);

/* Checks a fn on its own (what `tilec check` does for every fn): generics unknown, parameters
 * typed by their declarations. Returns false when errors were reported. */
bool sema_fn_generic(Compilation *c, Item *fn);

/* ---- constant values (consteval.c) ---- */
ConstVal cv_int(int64_t v);
ConstVal cv_float(double v);
ConstVal cv_bool(bool v);
ConstVal cv_unknown(void);
static inline bool cv_known(ConstVal v) { return v.kind == CV_INT || v.kind == CV_FLOAT || v.kind == CV_BOOL || v.kind == CV_TYPE; }
/* Wraps/rounds a constant to a type; sets *lossy when the value does not survive exactly. */
ConstVal cv_convert(ConstVal v, DType to, bool *lossy);
/* Folds a binary/unary operation on constants of type dt (DT_NONE: untyped, exact in 64 bits);
 * returns CV_NONE if not foldable (*err set to a message for division by zero, an untyped result
 * beyond 64 bits and the like). */
ConstVal cv_binary(OpKind op, ConstVal a, ConstVal b, DType dt, const char **err);
ConstVal cv_unary(OpKind op, ConstVal a, DType dt, const char **err);
bool cv_fits(ConstVal v, DType dt);
void cv_print(StrBuf *out, ConstVal v);
float tl_f32_round(double d);

/* ---- types (sema_types.c) ---- */
Type *ty_error(void);
Type *ty_void(void);
Type *ty_scalar(DType dt);
Type *ty_untyped_int(void);
Type *ty_untyped_float(void);
Type *ty_string(void);
Type *ty_typeval(void);
Type *ty_generic(Arena *a, const char *name);
Type *ty_region(Arena *a, TypeKind kind, Scope sc, DType dt, const char *gname, int rank, const int64_t *dims);
Type *ty_tuple(Arena *a, Type **elems, int n);
void ty_print(StrBuf *out, const Type *t);
const char *ty_str(Arena *a, const Type *t);
bool ty_is_numeric_scalar(const Type *t);

enum { DIM_RUNTIME = -1, DIM_UNKNOWN = -2 };

#endif
