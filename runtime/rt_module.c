/* rt_module.c — from code to a launchable function: PTX linked into a cubin by the driver's
 * linker, images loaded as modules, entry points looked up and opted into large dynamic
 * shared memory. Callers hold the runtime's context current (rt_ctx_enter). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

tilec_status rt_link_ptx(tilec_rt *rt, const char *ptx, size_t ptx_len, char **out, size_t *out_len)
{
    const rt_driver *d = rt->drv;
    char log[4096];
    log[0] = 0;
    CUjit_option opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
    CUlinkState st;
    CUresult r = d->cuLinkCreate(2, opts, vals, &st);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(d, r, "cuLinkCreate");
    const char *call = "cuLinkAddData";
    r = d->cuLinkAddData(st, CU_JIT_INPUT_PTX, (void *)ptx, ptx_len + 1, "tilec.ptx", 0, NULL, NULL);
    void *cubin = NULL;
    size_t size = 0;
    if (r == CUDA_SUCCESS) {
        call = "cuLinkComplete";
        r = d->cuLinkComplete(st, &cubin, &size);
    }
    tilec_status s = TILEC_OK;
    if (r != CUDA_SUCCESS) {
        log[sizeof log - 1] = 0;
        s = rt_cu_fail(d, r, call);
        if (log[0]) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", tilec_rt_last_error());
            rt_fail(s, "%s; linker log: %s", msg, log);
        }
    } else if (!(*out = malloc(size + 1))) {
        s = rt_fail(TILEC_ERROR_INTERNAL, "out of memory copying a %zu-byte cubin", size);
    } else {
        memcpy(*out, cubin, size); /* the cubin belongs to the link state */
        (*out)[size] = 0;
        *out_len = size;
    }
    d->cuLinkDestroy(st);
    return s;
}

tilec_status rt_load_module(tilec_rt *rt, const void *image, CUmodule *out)
{
    CUresult r = rt->drv->cuModuleLoadData(out, image);
    return r == CUDA_SUCCESS ? TILEC_OK : rt_cu_fail(rt->drv, r, "cuModuleLoadData");
}

tilec_status rt_get_function(tilec_rt *rt, CUmodule module, const rt_sig *sig, CUfunction *out)
{
    const rt_driver *d = rt->drv;
    /* kernel parameters past 4 KiB (tensor lists) are a CUDA 12.1 feature */
    if (sig->param_bytes > RT_OLD_PARAM_BYTES && rt->driver_version < 12010)
        return rt_fail(TILEC_ERROR_UNSUPPORTED,
                       "entry '%s' takes %d bytes of parameters; more than %d needs a CUDA 12.1 or newer driver (this "
                       "one is %d.%d)",
                       sig->entry, sig->param_bytes, RT_OLD_PARAM_BYTES, rt->driver_version / 1000,
                       rt->driver_version % 1000 / 10);
    CUresult r = d->cuModuleGetFunction(out, module, sig->entry);
    if (r != CUDA_SUCCESS)
        return rt_fail_prefix(rt_cu_fail(d, r, "cuModuleGetFunction"), "entry '%s'", sig->entry);
    if (sig->smem > RT_SMEM_NO_OPTIN) {
        r = d->cuFuncSetAttribute(*out, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)sig->smem);
        if (r != CUDA_SUCCESS)
            return rt_fail_prefix(rt_cu_fail(d, r, "cuFuncSetAttribute"), "entry '%s' asks for %u bytes of shared "
                                  "memory", sig->entry, sig->smem);
    }
    /* more than 8 blocks per cluster is allowed on Hopper only after opting in */
    if (sig->cluster[0] * sig->cluster[1] * sig->cluster[2] > 8) {
        r = d->cuFuncSetAttribute(*out, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
        if (r != CUDA_SUCCESS)
            return rt_fail_prefix(rt_cu_fail(d, r, "cuFuncSetAttribute"), "entry '%s' (non-portable cluster size)",
                                  sig->entry);
    }
    return TILEC_OK;
}
