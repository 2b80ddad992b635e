/* rt_launch.c — tilec_rt_check and tilec_rt_launch: bind the arguments on the stack, then one
 * driver call (cuLaunchKernelEx when the kernel needs launch attributes). No heap, no locks, no
 * synchronisation, so a launch can be captured into a CUDA graph. */
#include <string.h>

#include "rt_internal.h"

static tilec_status rt_launch_args_ok(const tilec_rt_kernel *k, const tilec_rt_arg *args, int nargs,
                                      const tilec_rt_launch_options *opts, int *num_sms)
{
    *num_sms = 0;
    if (!k || (!args && nargs > 0))
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "tilec_rt_launch: NULL kernel or arguments");
    *num_sms = k->device_sms;
    if (opts && opts->num_sms < 0)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "tilec_rt_launch: num_sms %d is negative", opts->num_sms);
    if (opts && opts->num_sms > 0)
        *num_sms = opts->num_sms;
    return TILEC_OK;
}

tilec_status tilec_rt_check(const tilec_rt_kernel *k, const tilec_rt_arg *args, int nargs,
                            const tilec_rt_launch_options *opts, tilec_rt_launch_config *out)
{
    int num_sms;
    tilec_status s = rt_launch_args_ok(k, args, nargs, opts, &num_sms);
    if (s != TILEC_OK)
        return s;
    tilec_rt_launch_config cfg;
    s = rt_bind(k->sig, args, nargs, num_sms, &cfg, NULL, NULL);
    if (s == TILEC_OK && out)
        *out = cfg;
    return s;
}

tilec_status tilec_rt_launch(const tilec_rt_kernel *k, const tilec_rt_arg *args, int nargs,
                             const tilec_rt_launch_options *opts)
{
    int num_sms;
    tilec_status s = rt_launch_args_ok(k, args, nargs, opts, &num_sms);
    if (s != TILEC_OK)
        return s;
    _Alignas(16) unsigned char buf[RT_MAX_PARAM_BYTES];
    void *ptrs[RT_MAX_PTX_PARAMS];
    tilec_rt_launch_config cfg;
    const rt_sig *sig = k->sig;
    if ((s = rt_bind(sig, args, nargs, num_sms, &cfg, buf, ptrs)) != TILEC_OK)
        return s;
    if (!cfg.grid[0] || !cfg.grid[1] || !cfg.grid[2])
        return TILEC_OK; /* an empty grid: nothing to do */
    if (k->emu)
        return rt_emu_launch(k, args, ptrs, &cfg);
    CUstream stream = opts ? (CUstream)opts->stream : NULL;
    CUresult r;
    if (!sig->clustered && !sig->cooperative && !sig->pdl) {
        r = k->drv->cuLaunchKernel(k->fn, cfg.grid[0], cfg.grid[1], cfg.grid[2], cfg.block[0], 1, 1, cfg.smem, stream,
                                   ptrs, NULL);
        if (r != CUDA_SUCCESS)
            return rt_fail_prefix(rt_cu_fail(k->drv, r, "cuLaunchKernel"), "launching %s", sig->key ? sig->key
                                                                                                     : sig->kernel);
        return TILEC_OK;
    }
    CUlaunchAttribute attrs[3];
    memset(attrs, 0, sizeof attrs);
    unsigned n = 0;
    if (sig->clustered) {
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attrs[n].value.clusterDim.x = sig->cluster[0];
        attrs[n].value.clusterDim.y = sig->cluster[1];
        attrs[n].value.clusterDim.z = sig->cluster[2];
        n++;
    }
    if (sig->cooperative) {
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        attrs[n].value.cooperative = 1;
        n++;
    }
    if (sig->pdl) {
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attrs[n].value.programmaticStreamSerializationAllowed = 1;
        n++;
    }
    CUlaunchConfig lc;
    memset(&lc, 0, sizeof lc);
    lc.gridDimX = cfg.grid[0];
    lc.gridDimY = cfg.grid[1];
    lc.gridDimZ = cfg.grid[2];
    lc.blockDimX = cfg.block[0];
    lc.blockDimY = lc.blockDimZ = 1;
    lc.sharedMemBytes = cfg.smem;
    lc.hStream = stream;
    lc.attrs = attrs;
    lc.numAttrs = n;
    r = k->drv->cuLaunchKernelEx(&lc, k->fn, ptrs, NULL);
    if (r != CUDA_SUCCESS)
        return rt_fail_prefix(rt_cu_fail(k->drv, r, "cuLaunchKernelEx"), "launching %s",
                              sig->key ? sig->key : sig->kernel);
    return TILEC_OK;
}
