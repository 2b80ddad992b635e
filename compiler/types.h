/* types.h — element types (from dtypes.def) and the semantic types of expressions. */
#ifndef TILEC_TYPES_H
#define TILEC_TYPES_H

#include "base.h"

typedef enum DType {
    DT_NONE = 0,
#define DTYPE(id, kw, bits, kind) DT_##id,
#include "dtypes.def"
#undef DTYPE
    DT_COUNT
} DType;

typedef enum DKind { DK_NONE, DK_BOOL, DK_SINT, DK_UINT, DK_FLOAT, DK_HALF, DK_FP8, DK_FP4, DK_SCALE } DKind;

const char *dtype_name(DType t);
int dtype_bits(DType t);          /* 4 for e2m1, 1 for bool */
int dtype_storage_bytes(DType t); /* bytes per element in memory; e2m1: 1 per pair, reported as 1 */
DKind dtype_kind(DType t);
DType dtype_from_name(const char *s);
static inline bool dtype_is_int(DType t) { DKind k = dtype_kind(t); return k == DK_SINT || k == DK_UINT; }
static inline bool dtype_is_signed(DType t) { return dtype_kind(t) == DK_SINT; }
static inline bool dtype_is_float(DType t)
{
    DKind k = dtype_kind(t);
    return k == DK_FLOAT || k == DK_HALF || k == DK_FP8 || k == DK_FP4;
}
/* types on which + - * / are defined directly (f16/bf16/fp8 promote to f32 first) */
static inline bool dtype_is_arith(DType t)
{
    DKind k = dtype_kind(t);
    return k == DK_SINT || k == DK_UINT || k == DK_FLOAT;
}

/* Memory scope of a buffer. */
typedef enum Scope { SC_NONE, SC_GLOBAL, SC_SHARED, SC_FRAG, SC_LOCAL } Scope;
const char *scope_name(Scope s);

typedef enum TypeKind {
    TY_ERROR,        /* an error was already reported; suppresses follow-on errors */
    TY_VOID,
    TY_SCALAR,       /* dt */
    TY_UNTYPED_INT,  /* integer literal / constant not yet given a type */
    TY_UNTYPED_FLOAT,
    TY_TENSOR,       /* global tensor parameter (or a view); dt, rank */
    TY_LIST,         /* tensor list parameter: dt, rank, dims of every element; list_len, list_cap */
    TY_TILE,         /* shared / frag / local tile; dt, rank, dims */
    TY_TUPLE,        /* multiple return values */
    TY_TYPE,         /* a type used as a value: `f32`, or a `type` generic */
    TY_STRING,
    TY_GENERIC,      /* element type is a `type` generic whose value is unknown (generic check) */
} TypeKind;

typedef struct Type Type;
struct Type {
    TypeKind kind;
    DType dt;            /* SCALAR, TENSOR, TILE element */
    Scope scope;         /* TENSOR: SC_GLOBAL; TILE: shared/frag/local */
    int rank;
    int64_t dims[TL_MAX_RANK]; /* TILE: extents; -1 = not known yet (generic check) */
    int64_t list_len;    /* LIST: the length when known at compile time, else DIM_RUNTIME / DIM_UNKNOWN */
    int64_t list_cap;    /* LIST: the most elements the kernel takes (DIM_UNKNOWN in a generic check) */
    int nelems;          /* TUPLE */
    Type **elems;
    const char *generic_name; /* TY_GENERIC: name of the type parameter */
};

#endif
