/* rt_dtype.c — the element types, generated from numerics/dtypes.def (the table the compiler's
 * types come from) so that the runtime and the language cannot disagree on names or sizes. */
#include <string.h>

#include "rt_internal.h"

/* The public enum is written out in runtime.h (an installed header cannot include the table);
 * these asserts keep it in the table's order. */
enum {
#define DTYPE(ID, kw, bits, kind) RT_DTYPE_INDEX_##ID,
#include "dtypes.def"
#undef DTYPE
    RT_DTYPE_COUNT
};
#define DTYPE(ID, kw, bits, kind) _Static_assert((int)TILEC_RT_##ID == (int)RT_DTYPE_INDEX_##ID, "dtype order");
#include "dtypes.def"
#undef DTYPE
_Static_assert((int)RT_DTYPE_COUNT == (int)TILEC_RT_NUM_DTYPES, "dtype count");

const rt_dtype_info rt_dtypes[TILEC_RT_NUM_DTYPES] = {
#define DTYPE(ID, kw, bits, kind) {kw, (bits) == 1 ? 8 : (bits), RT_DK_##kind},
#include "dtypes.def"
#undef DTYPE
};

int rt_dtype_lookup(const char *s, size_t n)
{
    for (int i = 0; i < TILEC_RT_NUM_DTYPES; i++)
        if (strlen(rt_dtypes[i].name) == n && memcmp(rt_dtypes[i].name, s, n) == 0)
            return i;
    return -1;
}

const char *tilec_rt_dtype_name(tilec_rt_dtype t)
{
    return (unsigned)t < TILEC_RT_NUM_DTYPES ? rt_dtypes[t].name : NULL;
}

int tilec_rt_dtype_bits(tilec_rt_dtype t)
{
    return (unsigned)t < TILEC_RT_NUM_DTYPES ? rt_dtypes[t].bits : 0;
}

tilec_status tilec_rt_dtype_from_name(const char *name, tilec_rt_dtype *out)
{
    if (!name || !out)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "tilec_rt_dtype_from_name: NULL argument");
    int i = rt_dtype_lookup(name, strlen(name));
    if (i < 0)
        return rt_fail(TILEC_ERROR_NOT_FOUND, "unknown dtype '%s'", name);
    *out = (tilec_rt_dtype)i;
    return TILEC_OK;
}
