/* sema_types.c — constructors and printing of semantic types. */
#include "sema.h"

#include <string.h>

static Type t_error = {.kind = TY_ERROR};
static Type t_void = {.kind = TY_VOID};
static Type t_uint = {.kind = TY_UNTYPED_INT};
static Type t_ufloat = {.kind = TY_UNTYPED_FLOAT};
static Type t_string = {.kind = TY_STRING};
static Type t_typeval = {.kind = TY_TYPE};
static Type t_scalars[DT_COUNT];
static bool scalars_ready;

Type *ty_error(void) { return &t_error; }
Type *ty_void(void) { return &t_void; }
Type *ty_untyped_int(void) { return &t_uint; }
Type *ty_untyped_float(void) { return &t_ufloat; }
Type *ty_string(void) { return &t_string; }
Type *ty_typeval(void) { return &t_typeval; }

Type *ty_scalar(DType dt)
{
    /* the table is immutable after first use; building it is idempotent */
    if (!scalars_ready) {
        for (int i = 0; i < DT_COUNT; i++) {
            t_scalars[i].kind = TY_SCALAR;
            t_scalars[i].dt = (DType)i;
        }
        scalars_ready = true;
    }
    return &t_scalars[dt];
}

Type *ty_generic(Arena *a, const char *name)
{
    Type *t = ARENA_NEW(a, Type);
    t->kind = TY_GENERIC;
    t->generic_name = name;
    return t;
}

Type *ty_region(Arena *a, TypeKind kind, Scope sc, DType dt, const char *gname, int rank, const int64_t *dims)
{
    Type *t = ARENA_NEW(a, Type);
    t->kind = kind;
    t->scope = sc;
    t->dt = dt;
    t->generic_name = gname;
    t->rank = rank;
    for (int i = 0; i < rank && i < TL_MAX_RANK; i++)
        t->dims[i] = dims ? dims[i] : DIM_RUNTIME;
    return t;
}

Type *ty_tuple(Arena *a, Type **elems, int n)
{
    Type *t = ARENA_NEW(a, Type);
    t->kind = TY_TUPLE;
    t->nelems = n;
    t->elems = ARENA_ARRAY(a, Type *, n);
    memcpy(t->elems, elems, sizeof(Type *) * (size_t)n);
    return t;
}

bool ty_is_numeric_scalar(const Type *t)
{
    return t->kind == TY_UNTYPED_INT || t->kind == TY_UNTYPED_FLOAT || t->kind == TY_GENERIC ||
           (t->kind == TY_SCALAR && t->dt != DT_BOOL);
}

static void print_elem(StrBuf *out, const Type *t)
{
    if (t->dt == DT_NONE)
        sb_puts(out, t->generic_name ? t->generic_name : "?");
    else
        sb_puts(out, dtype_name(t->dt));
}

void ty_print(StrBuf *out, const Type *t)
{
    switch (t->kind) {
    case TY_ERROR: sb_puts(out, "<error>"); break;
    case TY_VOID: sb_puts(out, "void"); break;
    case TY_SCALAR: sb_puts(out, dtype_name(t->dt)); break;
    case TY_UNTYPED_INT: sb_puts(out, "integer constant"); break;
    case TY_UNTYPED_FLOAT: sb_puts(out, "float constant"); break;
    case TY_STRING: sb_puts(out, "string"); break;
    case TY_TYPE: sb_puts(out, "type"); break;
    case TY_GENERIC: sb_puts(out, t->generic_name ? t->generic_name : "?"); break;
    case TY_TENSOR:
    case TY_TILE:
        if (t->kind == TY_TILE)
            sb_printf(out, "%s ", scope_name(t->scope));
        print_elem(out, t);
        sb_puts(out, "[");
        for (int i = 0; i < t->rank; i++) {
            if (i)
                sb_puts(out, ", ");
            if (t->dims[i] >= 0)
                sb_printf(out, "%lld", (long long)t->dims[i]);
            else
                sb_puts(out, "?");
        }
        sb_puts(out, "]");
        break;
    case TY_LIST: {
        Type el = *t;
        el.kind = TY_TENSOR;
        sb_puts(out, "list<");
        ty_print(out, &el);
        if (t->list_len >= 0)
            sb_printf(out, ", %lld", (long long)t->list_len);
        sb_puts(out, ">");
        break;
    }
    case TY_TUPLE:
        sb_puts(out, "(");
        for (int i = 0; i < t->nelems; i++) {
            if (i)
                sb_puts(out, ", ");
            ty_print(out, t->elems[i]);
        }
        sb_puts(out, ")");
        break;
    }
}

const char *ty_str(Arena *a, const Type *t)
{
    StrBuf b = {0};
    ty_print(&b, t);
    char *s = arena_strdup(a, b.data ? b.data : "");
    sb_free(&b);
    return s;
}
