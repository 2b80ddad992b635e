/* rt_compiler.h — the runtime's view of the compiler: a table of functions, so that the JIT can
 * be libtilec (rt_compiler_tilec.c) or, in tests, a fake that returns canned PTX and signatures.
 * Each function that fails sets the thread's error message (rt_fail) before returning. */
#ifndef TILEC_RT_COMPILER_H
#define TILEC_RT_COMPILER_H

#include <stddef.h>
#include <stdint.h>

#include "tilec/compiler.h"

/* What one compile hands back; every pointer is the compiler's until release(). */
typedef struct rt_compiled {
    const char *ptx;        /* NUL-terminated */
    size_t ptx_size;        /* bytes, without the NUL */
    const char *signature;  /* "tilec-sig 1" text */
    const void *object;     /* host target (CPU emulator): the x86-64 object instead of PTX */
    size_t object_size;
    void *handle;           /* the compiler's own object, for release() */
} rt_compiled;

typedef struct rt_compiler {
    void *self;
    /* A string that changes whenever generated code may change; part of every cache key. */
    const char *(*version)(void *self);
    /* Parses and checks a root file and its imports into *program. */
    tilec_status (*open)(void *self, const char *path, const tilec_program_options *opts, void **program);
    void (*close)(void *self, void *program);
    /* Hash of every source file of the program and the defines. */
    uint64_t (*program_hash)(void *self, void *program);
    tilec_status (*compile)(void *self, void *program, const char *kernel, const char *const *generics, int ngenerics,
                            const tilec_target *target, rt_compiled *out);
    void (*release)(void *self, rt_compiled *out);
    /* Optional (NULL: the library answers NOT_FOUND): kernel i of the program (NULL past the
     * last), and kernel `kernel`'s interface ("tilec-iface 1", tilec/compiler.h; NULL: no such
     * kernel), valid until the next call on the program. */
    const char *(*kernel_name)(void *self, void *program, int i);
    const char *(*interface)(void *self, void *program, const char *kernel);
} rt_compiler;

/* The compiler this build links (libtilec), or NULL when built without it. */
const rt_compiler *rt_default_compiler(void);

#endif
