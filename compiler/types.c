/* types.c — the dtype table. */
#include "types.h"

#include <string.h>

static const struct {
    const char *name;
    int bits;
    DKind kind;
} dtab[DT_COUNT] = {
    [DT_NONE] = {"<none>", 0, DK_NONE},
#define DTYPE(id, kw, b, k) [DT_##id] = {kw, b, DK_##k},
#include "dtypes.def"
#undef DTYPE
};

const char *dtype_name(DType t) { return (t >= 0 && t < DT_COUNT) ? dtab[t].name : "<bad>"; }
int dtype_bits(DType t) { return (t >= 0 && t < DT_COUNT) ? dtab[t].bits : 0; }
DKind dtype_kind(DType t) { return (t >= 0 && t < DT_COUNT) ? dtab[t].kind : DK_NONE; }

int dtype_storage_bytes(DType t)
{
    int b = dtype_bits(t);
    return b <= 8 ? 1 : b / 8;
}

DType dtype_from_name(const char *s)
{
    for (int i = 1; i < DT_COUNT; i++)
        if (dtab[i].name[0] == s[0] && strcmp(dtab[i].name, s) == 0)
            return (DType)i;
    return DT_NONE;
}

const char *scope_name(Scope s)
{
    switch (s) {
    case SC_GLOBAL: return "global";
    case SC_SHARED: return "shared";
    case SC_FRAG: return "frag";
    case SC_LOCAL: return "local";
    default: return "none";
    }
}
