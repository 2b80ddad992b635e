/* rt_compiler_tilec.c — the compiler table over libtilec (tilec/compiler.h): what the JIT calls
 * in a runtime built with TILEC_RUNTIME_WITH_COMPILER. */
#include "rt_internal.h"

static const char *tc_version(void *self)
{
    return tilec_build_id(); /* any change to the compiler changes the cache key */
}

static tilec_status tc_open(void *self, const char *path, const tilec_program_options *opts, void **program)
{
    tilec_program *p = NULL;
    tilec_status s = tilec_program_from_file(path, opts, &p);
    if (s == TILEC_OK) {
        *program = p;
        return TILEC_OK;
    }
    if (p) {
        rt_fail(s, "%s", tilec_program_diagnostics(p));
        tilec_program_destroy(p);
        return s;
    }
    return rt_fail(s, "cannot load program '%s': %s", path, tilec_status_name(s));
}

static void tc_close(void *self, void *program)
{
    tilec_program_destroy(program);
}

static uint64_t tc_program_hash(void *self, void *program)
{
    return tilec_program_hash(program);
}

static tilec_status tc_compile(void *self, void *program, const char *kernel, const char *const *generics,
                               int ngenerics, const tilec_target *target, rt_compiled *out)
{
    tilec_artifact *a = NULL;
    tilec_status s = tilec_compile(program, kernel, generics, ngenerics, target, &a);
    if (s != TILEC_OK) {
        if (a)
            tilec_artifact_destroy(a);
        return rt_fail(s, "compiling kernel '%s' failed (%s):\n%s", kernel, tilec_status_name(s),
                       tilec_program_last_diagnostics(program));
    }
    if (!a || (!a->ptx && !a->object) || !a->signature) {
        if (a)
            tilec_artifact_destroy(a);
        return rt_fail(TILEC_ERROR_INTERNAL, "compiling kernel '%s' gave no PTX or no signature", kernel);
    }
    out->ptx = a->ptx;
    out->ptx_size = a->ptx_size;
    out->object = a->object; /* host target */
    out->object_size = a->object_size;
    out->signature = a->signature;
    out->handle = a;
    return TILEC_OK;
}

static void tc_release(void *self, rt_compiled *out)
{
    tilec_artifact_destroy(out->handle);
}

static const char *tc_kernel_name(void *self, void *program, int i)
{
    return tilec_program_kernel_name(program, i);
}

static const char *tc_interface(void *self, void *program, const char *kernel)
{
    return tilec_program_kernel_interface(program, kernel);
}

static const rt_compiler tc_table = {NULL,       tc_version, tc_open,        tc_close,    tc_program_hash,
                                     tc_compile, tc_release, tc_kernel_name, tc_interface};

const rt_compiler *rt_default_compiler(void)
{
    return &tc_table;
}
