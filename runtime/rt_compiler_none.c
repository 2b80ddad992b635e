/* rt_compiler_none.c — the compiler table of a runtime built without libtilec: no JIT, so only
 * AOT fatbins can be opened. */
#include <stddef.h>

#include "rt_compiler.h"

const rt_compiler *rt_default_compiler(void)
{
    return NULL;
}
