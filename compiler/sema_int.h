/* sema_int.h — the state shared by the semantic-analysis files (sema*.c). */
#ifndef TILEC_SEMA_INT_H
#define TILEC_SEMA_INT_H

#include "sema.h"

/* The names in scope, innermost last, with a hash index from a name to the position of its
 * innermost symbol, so that a lookup costs O(1) however many names are declared (a linear scan
 * made 100k declarations take 40 s). A fn call swaps in a fresh SymScope for the callee and puts
 * the caller's back afterwards; the index travels with the struct. */
typedef struct ScopeSlot ScopeSlot;
typedef struct SymScope {
    Sym **items;
    int *prev;           /* prev[i]: position of the next-outer symbol named like items[i], or -1 */
    int len, cap;
    ScopeSlot *slots;    /* name -> position of its innermost symbol (-1: none now) */
    int nslots, capslots;
} SymScope;

typedef struct SemaCtx {
    Compilation *comp;
    Arena *arena;
    DiagEngine *d;
    Item *kernel;             /* kernel being checked (NULL for consts and fn checks) */
    bool generic;             /* generic values unknown */
    SymScope scope;           /* names in scope, innermost last */
    PtrVec marks;             /* scope start indices */
    int parallel_level;
    Sym *parallel_tile;       /* tile of the innermost parallel loop */
    int loop_depth;
    int loop_parallel_level;  /* parallel level of the innermost loop */
    bool in_signature;        /* checking tensor shapes / launch expressions */
    bool in_launch;           /* launch expressions: num_sms allowed */
    bool in_tiles;            /* the tile counts of a persistent launch: evaluated in the kernel too */
    bool in_tile_loop;        /* inside a `for tile` body */
    bool in_require;          /* a requirement: shapes of absent tensors allowed (dropped) */
    bool varying_cf;          /* control flow depends on the thread */
    Loc varying_cf_loc;
    bool partial;             /* some threads may have returned */
    Loc partial_loc;
    int inline_depth;
    int nest_depth;           /* expressions and statements being checked, one inside the other,
                               * through inlined fn bodies too (TL_MAX_CHECK_NESTING) */
    bool nest_over;           /* that limit was reported */
    int64_t unroll_copies;    /* copies of the code here that unrolling makes: the product of the trips of
                               * the enclosing `for unroll` loops, through inlined fns (0 stands for 1) */
    int64_t unroll_total;     /* copies of unrolled bodies in the kernel so far: the sum over its loops */
    bool unroll_over;         /* the kernel's total was reported */
    int64_t inlined_nodes;    /* size of the fn bodies inlined so far (TL_MAX_INLINE_NODES) */
    bool inline_over;         /* a limit on inlining was reported: further calls are errors */
    Type *fn_ret;             /* inside an inlined fn: its return type (void for none) */
    int fn_parallel_level;    /* inside an inlined fn: parallel_level at the call */
    Item *fn_item;
    bool fn_generic_check;    /* checking a fn body on its own */
    bool fn_ret_varying;      /* a value the inlined fn returns depends on the thread */
    bool loop_diverged;       /* a thread-dependent break/continue in the current loop */
    int stmt_index;           /* index of the statement in the kernel body (require placement) */
    int const_depth;          /* constants being evaluated, one inside the other */
} SemaCtx;

/* One more level of expressions and statements checked one inside the other (sema_expr.c);
 * false, after a diagnostic at loc (once), past TL_MAX_CHECK_NESTING; the caller that gets true
 * decrements s->nest_depth when it is done. */
bool sema_enter_nesting(SemaCtx *s, Loc loc);

/* symbols and scopes (sema_scope.c) */
Sym *sym_new(SemaCtx *s, SymKind k, const char *name, Loc loc, Type *t);
void scope_push(SemaCtx *s);
void scope_pop(SemaCtx *s);
Sym *scope_lookup(SemaCtx *s, const char *name);
/* the symbol of this name declared since the last scope_push, or NULL */
Sym *scope_lookup_innermost(SemaCtx *s, const char *name);
void scope_add(SemaCtx *s, Sym *sym);
void scope_free(SymScope *sc);

/* syntax nodes of a list of statements (sema_expr.c) */
int64_t stmts_nodes(StmtList l);
/* counts a body about to be checked (weight: 1 in place, 4 for a copy) into
 * comp->checked_nodes; false (after a diagnostic at loc) past TL_MAX_CHECKED_NODES */
enum { CHECK_IN_PLACE = 1, CHECK_COPY = 4 };
bool sema_count_checked(SemaCtx *s, StmtList body, int weight, Loc loc);

/* evaluates a module-level constant (its value and type), before its first use (sema.c) */
void sema_check_const(SemaCtx *s, Sym *sym);

/* expressions (sema_expr.c) */
Type *check_expr(SemaCtx *s, Expr *e, Type *expected);
bool coerce(SemaCtx *s, Expr *e, Type *to, const char *what);
Type *resolve_type(SemaCtx *s, TypeExpr *te, bool allow_tensor);
bool is_region(const Type *t);
bool expr_is_lvalue(SemaCtx *s, Expr *e, bool report);
/* the tile (or tensor) a region expression is part of, through lets and tile parameters */
Sym *sema_tile_root(const Expr *e);
Type *default_type(Type *t);
/* A compile-time integer: CI_KNOWN with its value in *out, CI_UNKNOWN when it depends on generic
 * values not known yet (a generic check), CI_ERROR after a diagnostic. (A separate result,
 * because any int64 value, DIM_UNKNOWN's included, can be written as a constant.) */
typedef enum { CI_ERROR, CI_KNOWN, CI_UNKNOWN } ConstIntResult;
ConstIntResult require_const_int(SemaCtx *s, Expr *e, const char *what, int64_t *out);

/* statements (sema_stmt.c) */
void check_stmts(SemaCtx *s, StmtList l);
void check_body_inline(SemaCtx *s, InlineCall *ic, Expr *call);

#endif
