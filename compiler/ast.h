/* ast.h — the syntax tree built by the parser and annotated by semantic analysis.
 * All nodes live in the compilation's arena. */
#ifndef TILEC_AST_H
#define TILEC_AST_H

#include "diag.h"
#include "types.h"

typedef struct Expr Expr;
typedef struct Stmt Stmt;
typedef struct Item Item;
typedef struct Sym Sym;
typedef struct TypeExpr TypeExpr;

typedef struct ExprList { Expr **v; int n; } ExprList;
typedef struct StmtList { Stmt **v; int n; } StmtList;

/* ---- compile-time values ---- */
typedef enum { CV_NONE, CV_UNKNOWN, CV_INT, CV_FLOAT, CV_BOOL, CV_TYPE } CvKind;
typedef struct ConstVal {
    CvKind kind;     /* NONE: run-time value; UNKNOWN: compile-time but not known yet */
    int64_t i;       /* CV_INT: value, wrapped to the expression's type */
    double f;        /* CV_FLOAT: value, already rounded to the expression's type */
    bool b;
    Type *t;         /* CV_TYPE */
} ConstVal;

/* ---- syntactic types ---- */
typedef enum { TE_NAMED, TE_PRIM, TE_TENSOR, TE_LIST, TE_TUPLE, TE_TILE } TypeExprKind;
struct TypeExpr {
    TypeExprKind kind;
    Loc loc;
    DType prim;          /* TE_PRIM */
    const char *name;    /* TE_NAMED: a `type` generic */
    TypeExpr *elem;      /* TE_TENSOR / TE_TILE element; TE_LIST: the tensor type of every element */
    ExprList dims;       /* TE_TENSOR / TE_TILE shape */
    Scope scope;         /* TE_TILE: a fn parameter `t: frag f32[R, C]` (shared, frag or local) */
    ExprList strides;    /* TE_TENSOR: explicit strides, n == 0 when omitted */
    bool optional;       /* TE_TENSOR followed by `?` */
    Expr *len;           /* TE_LIST: the length (a new name binds it) */
    Expr *cap;           /* TE_LIST: `max = N`, the most elements it takes, or NULL */
    const char *cap_name;
    Loc cap_loc;
    TypeExpr **elems;    /* TE_TUPLE */
    int nelems;
};

/* ---- expressions ---- */
typedef enum {
    EX_INT, EX_FLOAT, EX_BOOL, EX_STRING,
    EX_NAME,      /* identifier */
    EX_TYPE,      /* a primitive type keyword used as a value or callee: f32(x) */
    EX_UNARY, EX_BINARY, EX_TERNARY,
    EX_CALL,      /* callee(args, name = value); callee is EX_NAME / EX_TYPE / EX_MEMBER */
    EX_INDEX,     /* base[i, j : k, :] */
    EX_MEMBER,    /* base.name (thread.x, block.y, tile.T) */
    EX_SLICE,     /* only inside EX_INDEX: lo : hi, either may be NULL */
    EX_LIST,      /* [a, b] (view shapes) */
} ExprKind;

typedef enum {
    OP_NONE,
    /* binary */
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD,
    OP_SHL, OP_SHR, OP_BAND, OP_BOR, OP_BXOR,
    OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE,
    OP_LAND, OP_LOR,
    /* unary */
    OP_NEG, OP_NOT, OP_BNOT,
} OpKind;

const char *op_spelling(OpKind op);

struct Expr {
    ExprKind kind;
    Loc loc;
    int depth;                /* nesting in the source (not counting binary operators): TL_MAX_NESTING */
    int height;               /* nodes on the longest path down from here: TL_MAX_EXPR_HEIGHT */
    /* literals */
    int64_t ival;
    double fval;
    bool bval;
    const char *str;          /* EX_STRING (decoded), EX_NAME / EX_MEMBER name */
    DType prim;               /* EX_TYPE */
    OpKind op;
    Expr *a, *b, *c;          /* operands; EX_CALL: a = callee; EX_INDEX: a = base; EX_SLICE: a = lo, b = hi */
    ExprList args;            /* EX_CALL positional args; EX_INDEX indices; EX_LIST elements */
    const char **arg_names;   /* EX_CALL: name of each arg, NULL for positional */
    ExprList targs;           /* EX_CALL: explicit generic arguments f::<a, b>(...) or bitcast<T> */
    /* set by sema */
    Type *type;
    ConstVal cv;
    Sym *sym;                 /* EX_NAME: the resolved symbol */
    bool varying;             /* value may differ between threads of a block */
    int builtin;              /* EX_CALL / EX_NAME / EX_MEMBER: builtin id, 0 = none */
    struct InlineCall *inl;   /* EX_CALL of a fn: the instantiated body */
    int region_perm;          /* EX_MEMBER `.T`: 1 when this is a transposed view */
};

/* A fn call, instantiated for one call site: sema checks a copy of the body with the
 * parameters bound to the arguments; TIR lowering inlines it. */
/* A shape or stride name of a fn's tensor parameter whose value is known only at run time: TIR
 * lowering binds it to the argument's extent (or stride) `axis`. */
typedef struct ShapeBind {
    Sym *sym;
    int param;
    int axis;
    bool stride;
} ShapeBind;

typedef struct InlineCall {
    struct Item *fn;
    Sym **params;             /* one per fn parameter, bound to the argument */
    int nparams;
    ShapeBind *shapes;        /* run-time shape and stride names of tensor parameters */
    int nshapes;
    StmtList body;
    Type *ret;
    void *tuple_bind;         /* lowering: the variables holding a tuple result */
    bool ret_varying;         /* a returned value depends on the thread */
} InlineCall;

/* ---- statements ---- */
typedef enum {
    ST_BLOCK, ST_LET, ST_VAR, ST_STORAGE, ST_ASSIGN, ST_EXPR, ST_IF, ST_FOR, ST_WHILE,
    ST_PARALLEL, ST_RETURN, ST_BREAK, ST_CONTINUE, ST_REQUIRE,
} StmtKind;

/* FOR_TILE: `for tile t { ... }`, the walk over the tiles of a `persistent` launch (its names
 * are the tile's coordinates; lower_ast expands it as docs/language.md §7.8 says) */
typedef enum { FOR_SERIAL, FOR_UNROLL, FOR_PIPELINED, FOR_TILE } ForKind;

typedef struct Name { const char *s; Loc loc; Sym *sym; } Name;

struct Stmt {
    StmtKind kind;
    Loc loc;
    int depth;
    StmtList body;            /* BLOCK; IF then; FOR/WHILE/PARALLEL body */
    StmtList els;             /* IF else (a block or a single nested if) */
    bool has_else;
    bool is_const;            /* IF const */
    Name *names;              /* LET pattern / PARALLEL loop variables / FOR variable / VAR / STORAGE */
    int nnames;
    TypeExpr *ty;             /* LET / VAR annotation; STORAGE element type */
    Scope scope;              /* STORAGE */
    ExprList dims;            /* STORAGE shape */
    ExprList layout_args;     /* STORAGE layout(name = value, ...) */
    const char **layout_names;
    bool has_layout;
    Expr *e;                  /* LET/VAR init; ASSIGN rhs; EXPR; IF/WHILE cond; REQUIRE cond; RETURN value */
    Expr *lhs;                /* ASSIGN target */
    OpKind assign_op;         /* ASSIGN: OP_NONE for `=`, else compound op */
    Expr *lo, *hi, *step;     /* FOR range */
    ForKind for_kind;
    Expr *stages;             /* FOR pipelined(stages = n) */
    Name target;              /* PARALLEL: the tile iterated over */
    const char *msg;          /* REQUIRE message */
    int const_taken;          /* IF const: 1 then-branch, 0 else-branch, -1 not known (sema) */
    Sym *sym;                 /* VAR / STORAGE / FOR: the declared symbol (sema) */
    Sym **syms;               /* LET / PARALLEL: the declared symbols (sema) */
};

/* ---- items ---- */
typedef enum { IT_IMPORT, IT_CONST, IT_FN, IT_KERNEL, IT_SPECIALIZE } ItemKind;

typedef enum { GK_INT, GK_BOOL, GK_FLOAT, GK_TYPE } GenericKind;
const char *generic_kind_name(GenericKind k);

typedef struct GenericParam {
    Name name;
    GenericKind kind;
    Expr *deflt;              /* default value or NULL */
    Sym *sym;
} GenericParam;

typedef struct Param {
    Name name;
    TypeExpr *ty;
    Sym *sym;
} Param;

typedef struct Launch {
    ExprList grid;            /* 1..3 expressions; for `persistent(...)`, its expansion */
    Expr *threads;
    ExprList cluster;
    bool cooperative;
    bool pdl;
    Expr *blocks_per_sm;      /* NULL: no occupancy request */
    /* persistent(tiles = T | [T0, T1, T2], waves = W, stages = S) */
    bool persistent;
    ExprList tiles;           /* the tile counts, one per dimension of the tile space */
    Expr *waves;              /* blocks per SM; NULL: blocks_per_sm's, or 1 */
    Expr *stages;             /* NULL: 1 */
    Loc loc;
} Launch;

typedef struct SpecArg {
    Name name;
    ExprList values;          /* one value, or a parenthesised list (cartesian product) */
} SpecArg;

struct Item {
    ItemKind kind;
    Loc loc;
    Name name;
    const char *doc;          /* `///` comment block above the item, or NULL */
    int file;
    /* IMPORT */
    const char *path;
    int imported_file;        /* set by the driver */
    /* CONST */
    TypeExpr *ty;
    Expr *value;
    /* FN / KERNEL */
    GenericParam *generics;
    int ngenerics;
    Param *params;
    int nparams;
    TypeExpr *ret;            /* FN: return type or NULL */
    Launch launch;            /* KERNEL */
    StmtList body;
    /* SPECIALIZE */
    SpecArg *sargs;
    int nsargs;
    Sym *sym;
};

typedef struct Module {
    Item **items;
    int nitems;
    int file;
} Module;

/* constructors used by the parser */
typedef struct AstCtx AstCtx;
Expr *ast_expr(Arena *a, ExprKind k, Loc loc);
Stmt *ast_stmt(Arena *a, StmtKind k, Loc loc);
Item *ast_item(Arena *a, ItemKind k, Loc loc);
TypeExpr *ast_type(Arena *a, TypeExprKind k, Loc loc);
void exprlist_push(Arena *a, ExprList *l, Expr *e);
void stmtlist_push(Arena *a, StmtList *l, Stmt *s);

/* printer for `tilec emit --stage=ast` */
Expr *ast_clone_expr(Arena *a, const Expr *e);
/* fills l->grid with the grid a persistent launch stands for (docs/language.md §7.8) */
void ast_expand_persistent(Arena *a, Launch *l);
StmtList ast_clone_stmts(Arena *a, StmtList l);
void ast_print_module(StrBuf *out, const Module *m);
void ast_print_expr(StrBuf *out, const Expr *e);
void ast_print_type(StrBuf *out, const TypeExpr *t);
void ast_print_src(StrBuf *out, const Expr *e);          /* infix, as written */
void ast_print_type_src(StrBuf *out, const TypeExpr *t);

#endif
