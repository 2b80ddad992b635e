/* builtins.c — the builtin table. */
#include "builtins.h"

#include <string.h>

static const BuiltinInfo table[BI_COUNT] = {
    [BI_NONE] = {"<none>", BC_MATH, 0, 0, ""},
#define BUILTIN(id, nm, cls, mn, mx, d) [BI_##id] = {nm, BC_##cls, mn, mx, d},
#include "builtins.def"
#undef BUILTIN
};

const BuiltinInfo *builtin_info(BuiltinId id)
{
    return (id > BI_NONE && id < BI_COUNT) ? &table[id] : &table[0];
}

BuiltinId builtin_lookup(const char *name)
{
    for (int i = 1; i < BI_COUNT; i++)
        if (strcmp(table[i].name, name) == 0)
            return (BuiltinId)i;
    return BI_NONE;
}
