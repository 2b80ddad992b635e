/* sema_int.h — the state shared by the semantic-analysis files (sema*.c). */
#ifndef TILEC_SEMA_INT_H
#define TILEC_SEMA_INT_H

#include "sema.h"

typedef struct SemaCtx {
    Compilation *comp;
    Arena *arena;
    DiagEngine *d;
    Item *kernel;             /* kernel being checked (NULL for consts and fn checks) */
    bool generic;             /* generic values unknown */
    PtrVec scope;             /* Sym*, innermost last */
    PtrVec marks;             /* scope start indices */
    int parallel_level;
    Sym *parallel_tile;       /* tile of the innermost parallel loop */
    int loop_depth;
    int loop_parallel_level;  /* parallel level of the innermost loop */
    bool in_signature;        /* checking tensor shapes / launch expressions */
    bool in_launch;           /* launch expressions: num_sms allowed */
    bool in_require;          /* a requirement: shapes of absent tensors allowed (dropped) */
    bool varying_cf;          /* control flow depends on the thread */
    Loc varying_cf_loc;
    bool partial;             /* some threads may have returned */
    Loc partial_loc;
    int inline_depth;
    Type *fn_ret;             /* inside an inlined fn: its return type (void for none) */
    Item *fn_item;
    bool fn_generic_check;    /* checking a fn body on its own */
    int fn_parallel_level;    /* parallel nesting where the inlined fn was called */
    bool fn_ret_varying;      /* a value the inlined fn returns depends on the thread */
    bool loop_diverged;       /* a thread-dependent break/continue in the current loop */
    int stmt_index;           /* index of the statement in the kernel body (require placement) */
} SemaCtx;

/* scopes */
void scope_push(SemaCtx *s);
void scope_pop(SemaCtx *s);
Sym *scope_lookup(SemaCtx *s, const char *name);
Sym *sym_new(SemaCtx *s, SymKind k, const char *name, Loc loc, Type *t);
void scope_add(SemaCtx *s, Sym *sym);

/* expressions (sema_expr.c) */
Type *check_expr(SemaCtx *s, Expr *e, Type *expected);
bool coerce(SemaCtx *s, Expr *e, Type *to, const char *what);
Type *resolve_type(SemaCtx *s, TypeExpr *te, bool allow_tensor);
bool is_region(const Type *t);
bool expr_is_lvalue(SemaCtx *s, Expr *e, bool report);
Type *default_type(Type *t);
bool require_const_int(SemaCtx *s, Expr *e, const char *what, int64_t *out);

/* statements (sema_stmt.c) */
void check_stmts(SemaCtx *s, StmtList l);
void check_body_inline(SemaCtx *s, InlineCall *ic, Expr *call);

#endif
