/* builtins.h — ids and metadata of the builtins listed in builtins.def. */
#ifndef TILEC_BUILTINS_H
#define TILEC_BUILTINS_H

typedef enum BuiltinId {
    BI_NONE = 0,
#define BUILTIN(id, name, cls, mn, mx, doc) BI_##id,
#include "builtins.def"
#undef BUILTIN
    BI_COUNT
} BuiltinId;

typedef enum { BC_MATH, BC_INT, BC_CT, BC_THREAD, BC_ATOMIC, BC_TILE, BC_CONV, BC_VAR } BuiltinClass;

typedef struct BuiltinInfo {
    const char *name;
    BuiltinClass cls;
    int min_args, max_args;
    const char *doc;
} BuiltinInfo;

const BuiltinInfo *builtin_info(BuiltinId id);
BuiltinId builtin_lookup(const char *name);

#endif
