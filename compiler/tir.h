/* tir.h — the tile IR: a structured, typed program for ONE kernel specialisation.
 *
 * It starts as a direct image of the checked AST (tile operations still collective, frags still
 * tiles) and is rewritten by the passes into thread-level code: after lower_tiles there are no
 * tile operations left, frags are per-thread register arrays, and codegen maps each node to LLVM.
 * Every node lives in the compilation's arena. */
#ifndef TILEC_TIR_H
#define TILEC_TIR_H

#include "sema.h"

typedef struct TExpr TExpr;
typedef struct TStmt TStmt;
typedef struct TBuf TBuf;
typedef struct TVar TVar;
typedef struct Layout Layout;

/* ---- layouts of frag tiles: which thread holds which element ----
 * coord[dim] = sum over the modes of that dim of  ((src / div) % size) * stride
 * where src is the thread index (thread modes) or the register index (register modes).
 * A thread mode with dim == -1 replicates: the threads that differ only in it hold the same
 * elements. */
typedef struct LMode {
    int size;
    int div;
    bool thread;
    int dim;          /* tile dimension, -1 = replication */
    int64_t stride;   /* in elements of that dimension */
} LMode;

struct Layout {
    int nthreads;
    int nregs;        /* registers (elements) per thread */
    int nmodes;
    LMode modes[24];
    int rank;
    int64_t shape[TL_MAX_RANK];
    int vec;          /* length of the innermost contiguous register run */
};

/* ---- variables: scalars held in registers ---- */
struct TVar {
    int id;
    const char *name;
    DType dt;
    bool mutable_;
    int64_t div;      /* known power-of-two divisor of its value (alignment analysis), 1 if none */
    void *cg;         /* codegen: the alloca holding it */
    void *cg_val;     /* codegen: its SSA value (immutable variables) */
};

/* ---- buffers: global tensors, shared tiles, frags, per-thread arrays ---- */
struct TBuf {
    int id;
    const char *name;
    Scope scope;
    DType dt;
    int rank;
    int64_t shape[TL_MAX_RANK];   /* tiles: extents; global: -1 where the extent is run-time */
    /* global tensors */
    int param;                    /* kernel parameter index, -1 for a view */
    TExpr *gdim[TL_MAX_RANK];     /* run-time extents (TE_PARAMDIM or constants) */
    TExpr *gstride[TL_MAX_RANK];  /* strides in elements */
    TExpr *addr;                  /* views: the u64 base address */
    int list_cap;                 /* > 0: a tensor list parameter (the pattern of its elements, never
                                     accessed itself), the pointers it takes */
    TBuf *list;                   /* an element of this tensor list parameter, ... */
    TExpr *list_index;            /* ... the one at this index (i32) */
    int align;                    /* bytes the base pointer is known to be aligned to */
    bool written;
    /* frags */
    Layout *layout;
    int vec_hint;                 /* layout(vec = n) */
    int tpr_hint;                 /* layout(threads_per_row = n) */
    int row_run_hint;             /* layout(row_run = n) */
    /* shared */
    int64_t smem_offset;          /* bytes from the start of dynamic shared memory */
    int64_t row_pad;              /* extra elements at the end of each innermost row */
    bool transposed_access;       /* read or written column-wise (padding pays) */
    bool scratch;                 /* compiler scratch: all scratch buffers share one region */
    int swizzle;                  /* shared, rank >= 2: the 16-byte chunk of (row, col) is XORed with
                                     key((row / swizzle) % 8); 0 = no swizzle */
    bool swizzle_gemm;            /* key(x) = 2 (x % 4) + x / 4 (tf32 gemm operands, lower_gemm.c)
                                     instead of key(x) = x */
    /* after lowering: a frag becomes a register array of this buffer */
    TBuf *regs;
    void *cg;
};

/* ---- expressions ---- */
typedef enum {
    TX_CONST,      /* ival / fval, of type dt */
    TX_VAR,        /* var */
    TX_PARAM,      /* scalar kernel parameter `param` */
    TX_DIM,        /* run-time extent (`axis` of tensor param `param`), i32 */
    TX_STRIDE,     /* run-time stride, i64 */
    TX_LEN,        /* the length of tensor list param `param`, i32 */
    TX_SPECIAL,    /* builtin variable: thread.x etc (special) */
    TX_UN,         /* op a */
    TX_BIN,        /* a op b */
    TX_SELECT,     /* a ? b : c */
    TX_CVT,        /* convert a to dt with rounding `round` */
    TX_BITCAST,
    TX_LOAD,       /* buf[idx...] element */
    TX_CALL,       /* builtin call (math, thread-level, atomics) with args */
} TExprKind;

typedef enum { RND_DEFAULT, RND_RN, RND_RZ, RND_RM, RND_RP } Rounding;

typedef enum {
    SP_TID_X, SP_TID_Y, SP_TID_Z, SP_CTAID_X, SP_CTAID_Y, SP_CTAID_Z,
    SP_NTID_X, SP_NTID_Y, SP_NTID_Z, SP_NCTAID_X, SP_NCTAID_Y, SP_NCTAID_Z,
    SP_LANE, SP_WARP,
} Special;

struct TExpr {
    TExprKind kind;
    DType dt;
    int64_t ival;
    double fval;
    TVar *var;
    int param, axis;
    Special special;
    OpKind op;
    Rounding round;
    TExpr *a, *b, *c;
    TBuf *buf;
    TExpr **args;          /* LOAD indices / CALL arguments */
    int nargs;
    int builtin;           /* CALL: BuiltinId, or an internal intrinsic (TI_*) */
    const char *str;       /* CALL: printf format / assert message */
    int align;             /* LOAD: known byte alignment of the address (0 = element size) */
    Loc loc;
};

/* internal intrinsics used by the lowering, beyond the user-visible builtins */
enum {
    TI_FIRST = 1000,
    TI_SHFL_XOR_RAW,       /* shfl.sync.bfly on a 32-bit value: (value, lane mask) */
    TI_SHFL_IDX_RAW,
    TI_VLOAD,              /* vector load: (buf, base index...) width in ival -> packed in a var array */
    TI_ASSUME_ALIGNED,
    /* tensor-core and asynchronous-copy support (lower_gemm.c, pipeline.c; codegen in codegen_mma.c) */
    TI_ADDR,               /* (buf[idx...]) -> the element's address (u64 nominally; only an intrinsic argument) */
    TI_PACK,               /* (x0, x1[, x2, x3]) 16- or 8-bit values -> u32, x0 in the lowest bits */
    TI_LDMATRIX,           /* TS_INTRIN: (addr) -> ival>>1 u32 registers; ival&1 = .trans (ldmatrix.m8n8.b16) */
    TI_MMA,                /* TS_INTRIN: (a0..a3 u32, b0 b1 u32, c0..c3 f32) -> d0..d3 f32; ival = operand DType */
    TI_CP_ASYNC,           /* TS_INTRIN: (shared addr, global addr, src bytes i32): cp.async of ival bytes, the
                            * bytes past `src bytes` zero-filled */
    TI_CP_COMMIT,          /* TS_INTRIN: cp.async.commit_group */
    TI_CP_WAIT,            /* TS_INTRIN: cp.async.wait_group ival */
    TI_TRANSPOSE_B8,       /* TS_INTRIN: (16 one-byte values, 4 rows of 4) -> the 16 of the transpose */
};

/* ---- statements ---- */
typedef enum {
    TS_SEQ,
    TS_DECL,       /* var = init (init may be NULL) */
    TS_ASSIGN,     /* var = e */
    TS_STORE,      /* buf[idx...] = e */
    TS_EVAL,       /* e (a call with effects) */
    TS_IF,
    TS_FOR,
    TS_WHILE,
    TS_BREAK,
    TS_CONTINUE,
    TS_RETURN,     /* leave the kernel (this thread) */
    TS_BLOCK,      /* a labelled block that TS_EXIT leaves (inlined fn bodies) */
    TS_EXIT,       /* leave the enclosing TS_BLOCK with label `label` */
    TS_BARRIER,    /* bar.sync 0 (inserted by lowering) */
    TS_VLOAD,      /* regs[roff .. roff+vec) = convert(buf[idx .. idx+vec)) : a vector access */
    TS_VSTORE,     /* buf[idx .. idx+vec) = convert(regs[roff .. roff+vec)) */
    TS_INTRIN,     /* idx[0..nidx) (register-array elements) = e, a TX_CALL of a TI_* target instruction
                    * with several results or none (mma, ldmatrix, cp.async) */
    /* tile operations, removed by lower_tiles */
    TS_COPY,
    TS_FILL,
    TS_REDUCE,
    TS_CUMSUM,
    TS_GEMM,
    TS_PARALLEL,
} TStmtKind;

typedef enum { RED_SUM, RED_MAX, RED_MIN, RED_ABSMAX } RedOp;

/* a rectangular part of a buffer, as a tile operation sees it */
typedef struct Region {
    TBuf *buf;
    int rank;                      /* rank of the region */
    int src_dim[TL_MAX_RANK];      /* region dim -> buffer dim */
    int64_t extent[TL_MAX_RANK];   /* region extents (compile-time) */
    TExpr *start[TL_MAX_RANK];     /* per BUFFER dim: start (or the fixed index of a dropped dim) */
    bool dropped[TL_MAX_RANK];     /* per buffer dim: indexed by a scalar, not part of the region */
} Region;

struct TStmt {
    TStmtKind kind;
    Loc loc;
    TStmt **body;         /* SEQ / FOR / WHILE / BLOCK / PARALLEL / IF-then */
    int nbody;
    TStmt **els;
    int nels;
    TVar *var;            /* DECL / ASSIGN / FOR induction variable */
    TExpr *e;             /* DECL init / ASSIGN / STORE value / EVAL / IF+WHILE cond / FILL value */
    TBuf *buf;            /* STORE */
    TExpr **idx;
    int nidx;
    TExpr *lo, *hi, *step;
    ForKind for_kind;
    int stages;
    int label;            /* BLOCK / EXIT */
    int vec;              /* VLOAD / VSTORE: elements */
    int align;            /* STORE / VLOAD / VSTORE: known byte alignment of the address */
    TBuf *regs;           /* VLOAD / VSTORE: the register array */
    int roff;             /* VLOAD / VSTORE: first register */
    /* tile operations */
    Region src, dst, c;   /* COPY src->dst; REDUCE/CUMSUM src->dst; GEMM a=src b=dst c=c */
    TExpr *other;         /* COPY: value for reads outside the source */
    RedOp red;
    int dim;
    int group;            /* REDUCE: reduce groups of `group` consecutive elements (0 = whole dim) */
    bool clear, exclusive, trans_a, trans_b;
    bool no_split;        /* COPY: split = false, one version with checks (lower_copy.c) */
    TVar **pvars;         /* PARALLEL loop indices */
    int npvars;
    TBuf *ptile;          /* PARALLEL: the tile iterated */
};

/* ---- one kernel specialisation ---- */
typedef struct TKernel {
    const char *name;        /* kernel name */
    const char *entry;       /* mangled entry symbol */
    const char *key;         /* name<generics> */
    Item *item;
    int nthreads;
    int64_t smem_bytes;      /* after smem planning */
    int64_t smem_static;     /* scratch from lowering (reductions) before planning */
    bool cooperative, pdl;
    int cluster[3];
    int blocks_per_sm;       /* 0, or the blocks one SM must hold (registers are limited to fit) */
    TBuf **bufs;             /* all buffers */
    int nbufs, capbufs;
    TBuf **params;           /* per kernel parameter: its global buffer (tensors, tensor lists) or NULL */
    DType *param_dt;         /* scalar parameters: their type */
    int nparams;
    TStmt *body;             /* a TS_SEQ */
    int next_id;
    int next_label;
    Arena *arena;
    DiagEngine *diag;
    /* signature pieces (host-evaluated) kept as AST for the signature writer */
    GenericArgs args;
    /* facts from `require X % C == 0`: a known power-of-two divisor of an extent, stride or
     * integer scalar parameter (axis -1 for scalars) */
    struct { int param, axis; bool stride; int64_t div; } facts[64];
    int nfacts;
    int sm;                  /* target architecture: 90 or 100 */
    bool host;               /* CPU emulator target */
} TKernel;

/* construction helpers (tir.c) */
TVar *tir_var(TKernel *k, const char *name, DType dt, bool mut);
TBuf *tir_buf(TKernel *k, const char *name, Scope sc, DType dt, int rank, const int64_t *shape);
/* element `index` of a tensor list parameter: the list's extents, strides and alignment, its own
 * base pointer (read from the list's parameter where it is used) */
TBuf *tir_list_element(TKernel *k, TBuf *list, TExpr *index);
/* a global buffer is stored to (and so is the tensor list it is an element of) */
void tir_mark_written(TBuf *b);
TExpr *tx_const_int(TKernel *k, DType dt, int64_t v);
TExpr *tx_const_float(TKernel *k, DType dt, double v);
TExpr *tx_bool(TKernel *k, bool v);
TExpr *tx_var(TKernel *k, TVar *v);
TExpr *tx_special(TKernel *k, Special s);
TExpr *tx_bin(TKernel *k, OpKind op, TExpr *a, TExpr *b);   /* folds constants */
TExpr *tx_un(TKernel *k, OpKind op, TExpr *a);
TExpr *tx_select(TKernel *k, TExpr *c, TExpr *a, TExpr *b);
TExpr *tx_cvt(TKernel *k, DType to, TExpr *a, Rounding r);
TExpr *tx_bitcast(TKernel *k, DType to, TExpr *a);
TExpr *tx_load(TKernel *k, TBuf *b, TExpr **idx, int n);
TExpr *tx_call(TKernel *k, int builtin, DType dt, TExpr **args, int n);
TExpr *tx_cast_int(TKernel *k, TExpr *e, DType to);        /* integer widening/narrowing */
/* a copy of e whose operands (a, b, c, args) are map(ctx, operand): how a pass rewrites the
 * expressions below the node it does not change itself */
TExpr *tx_rebuild(TKernel *k, const TExpr *e, TExpr *(*map)(void *ctx, TExpr *operand), void *ctx);
bool tx_is_const(const TExpr *e, int64_t *v);
TStmt *ts_new(TKernel *k, TStmtKind kind, Loc loc);
TStmt *ts_seq(TKernel *k);
void ts_push(TKernel *k, TStmt *seq, TStmt *s);
void ts_push_else(TKernel *k, TStmt *ifs, TStmt *s);
TStmt *ts_decl(TKernel *k, TVar *v, TExpr *init);
TStmt *ts_assign(TKernel *k, TVar *v, TExpr *e);
TStmt *ts_store(TKernel *k, TBuf *b, TExpr **idx, int n, TExpr *e);
TStmt *ts_eval(TKernel *k, TExpr *e);
TStmt *ts_if(TKernel *k, TExpr *c);
TStmt *ts_for(TKernel *k, TVar *v, TExpr *lo, TExpr *hi, TExpr *step, ForKind kind);
TStmt *ts_barrier(TKernel *k);
/* a target instruction (TI_*) with its arguments and the register-array elements it writes */
TStmt *ts_intrin(TKernel *k, int id, int64_t ival, TExpr **args, int nargs, TExpr **outs, int nouts, Loc loc);
/* s under `if pred` (s itself when pred is NULL) */
TStmt *ts_guard(TKernel *k, TExpr *pred, TStmt *s);
/* the register array a frag becomes (made on first use: one element per register of its
 * layout), register r of it, and a store into it converting to the frag's type */
TBuf *tir_frag_regs(TKernel *k, TBuf *f);
TExpr *tx_frag_reg(TKernel *k, TBuf *f, int r);
TStmt *ts_frag_reg_store(TKernel *k, TBuf *f, int r, TExpr *v);

/* analyses (tir.c): a power-of-two divisor of an integer expression (from constants, variables'
 * divisors and the kernel's `require` facts; at most 4096) */
int64_t tir_known_div(const TKernel *k, const TExpr *e);
/* The trips of a `for unroll` loop with compile-time bounds (codegen unrolls it), -1 for any other
 * statement. */
int64_t tir_unroll_trips(const TStmt *s);
/* The size of the code a statement makes: its nodes (statements, expressions, the elements of
 * vector accesses), an unrolled loop's body once per iteration. The count stops soon after it
 * passes cap (the result is then above cap), so that it costs O(cap) whatever the IR. */
int64_t tir_code_size(const TStmt *s, int64_t cap);
/* Where most of the code of s is made, for a diagnostic: going down through the part that makes
 * most of it, the first unrolled loop, else the last statement with a location. */
const TStmt *tir_code_size_culprit(const TStmt *s, int64_t cap);
/* The diagnostic for code over TL_MAX_CODE_SIZE, at loc (compile.c, lower_tiles.c,
 * lower_parallel.c: each before it makes more). */
void tir_code_size_error(TKernel *k, Loc loc);

/* The stages of the tile IR: after each pass of the pipeline, in order (compile.c runs them).
 * X(ID, name): the name is the pass's, for --dump-after and internal errors. */
#define TIR_STAGES(X)                                                                                                  \
    X(LOWER_AST, "lower_ast")                                                                                          \
    X(LAYOUT, "layout")                                                                                                \
    X(PIPELINE, "pipeline")                                                                                            \
    X(LOWER_TILES, "lower_tiles")                                                                                      \
    X(SMEM_PLAN, "smem_plan")
typedef enum TirStage {
#define TIR_STAGE_ENUM(id, name) TIR_AFTER_##id,
    TIR_STAGES(TIR_STAGE_ENUM)
#undef TIR_STAGE_ENUM
} TirStage;
const char *tir_stage_name(TirStage s);

/* the printer and the verifier (tir_print.c, tir_verify.c) */
void tir_print(StrBuf *out, const TKernel *k);
void tir_print_expr(StrBuf *out, const TExpr *e);
bool tir_verify(TKernel *k, TirStage after);

/* passes, one per file, each with one entry point; false = errors reported */
bool lower_ast(Compilation *c, Item *kernel, const GenericArgs *args, int sm, bool host, TKernel **out);
bool pass_layout(TKernel *k);        /* layout.c: frag layouts and vector widths */
bool pass_lower_tiles(TKernel *k);   /* lower_tiles.c: tile ops -> thread-level code */
bool pass_smem_plan(TKernel *k);     /* smem_plan.c: shared-memory offsets and padding */
bool pass_pipeline(TKernel *k);      /* pipeline.c: pipelined loops -> cp.async into rotating buffers */

/* the tile-operation families, a file each, called by lower_tiles.c (and layout.c for gemm's
 * layouts): each returns the statement's thread-level code; *ok = false after errors */
bool gemm_assign_layouts(TKernel *k);              /* lower_gemm.c: mma fragment layouts, operand swizzle / padding */
TStmt *lower_gemm(TKernel *k, TStmt *s, bool *ok);   /* lower_gemm.c: gemm -> ldmatrix + mma.sync */
TStmt *lower_cumsum(TKernel *k, TStmt *s, bool *ok); /* lower_cumsum.c: prefix sums along a dim */
TStmt *lower_fill(TKernel *k, TStmt *s, bool *ok);   /* lower_fill.c */
TStmt *lower_reduce(TKernel *k, TStmt *s, bool *ok); /* lower_reduce.c: registers, shuffles, shared scratch */
TStmt *lower_parallel(TKernel *k, TStmt *s, bool *ok); /* lower_parallel.c: unrolled over a thread's elements */
/* lower_copy.c: the copy v[0], with the copies from global memory into frags that follow it when
 * it is one of them (*taken: how many of the n statements of v it lowered) */
TStmt *lower_copy(TKernel *k, TStmt **v, int n, int *taken, bool *ok);

/* the layout algebra (layout_algebra.c) */
Layout *layout_default(Arena *a, int rank, const int64_t *shape, int nthreads, int vec, int threads_per_row,
                       int row_run);
Layout *layout_reduce(Arena *a, const Layout *src, int dim, int group);
Layout *layout_refine_for_reduce(Arena *a, const Layout *src, int dim, int group);
bool layout_equal(const Layout *a, const Layout *b);
/* a transposing copy through shared memory moves micro-tiles of R rows of V elements: V (the
 * elements per shared read and the rows written) and R (the rows read and the elements per write) */
int transpose_vec(int elem_bytes, int64_t r0, int64_t r1, int nthreads);
int transpose_rows(int elem_bytes, int64_t r0, int64_t r1, int nthreads);
/* thread-level coordinates of a layout: the part of an element's coordinate along dim that the
 * thread index gives, the constant part register r gives, and the predicate that is true for
 * one replica of replicated elements (NULL if none) */
TExpr *layout_thread_coord(TKernel *k, const Layout *l, int dim);
int64_t layout_reg_coord(const Layout *l, int r, int dim);
/* appends a mode (size <= 1 adds none; at most 24 modes) */
void layout_add_mode(Layout *l, int size, int div, bool thread, int dim, int64_t stride);
TExpr *layout_leader_pred(TKernel *k, const Layout *l);
void layout_coord(const Layout *l, int t, int r, int64_t *coord);
int layout_find_reg(const Layout *l, int t, const int64_t *coord);  /* -1 if thread t does not hold it */
void layout_print(StrBuf *out, const Layout *l);  /* tir_print.c */

#endif
