/* rt_context.c — the runtime context: the driver, the CUDA context the runtime works in (the
 * caller's, or a retained primary context), device facts, the cache directory, counters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

tilec_rt_options tilec_rt_default_options(void)
{
    tilec_rt_options o;
    memset(&o, 0, sizeof o);
    o.opt_level = 3;
    return o;
}

static tilec_status rt_attr(tilec_rt *rt, CUdevice_attribute a, const char *what, int *out)
{
    CUresult r = rt->drv->cuDeviceGetAttribute(out, a, rt->dev);
    return r == CUDA_SUCCESS ? TILEC_OK : rt_fail_prefix(rt_cu_fail(rt->drv, r, "cuDeviceGetAttribute"), "%s", what);
}

/* Finds or makes the context, and reads what the runtime needs to know about its device. */
static tilec_status rt_setup_device(tilec_rt *rt, const tilec_rt_options *o)
{
    const rt_driver *d = rt->drv;
    CUresult r = d->cuDriverGetVersion(&rt->driver_version);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(d, r, "cuDriverGetVersion");
    r = d->cuCtxGetCurrent(&rt->ctx);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(d, r, "cuCtxGetCurrent");
    if (rt->ctx) {
        if ((r = d->cuCtxGetDevice(&rt->dev)) != CUDA_SUCCESS)
            return rt_cu_fail(d, r, "cuCtxGetDevice");
    } else {
        if ((r = d->cuDeviceGet(&rt->dev, o->device)) != CUDA_SUCCESS)
            return rt_fail_prefix(rt_cu_fail(d, r, "cuDeviceGet"), "device %d", o->device);
        if ((r = d->cuDevicePrimaryCtxRetain(&rt->ctx, rt->dev)) != CUDA_SUCCESS)
            return rt_cu_fail(d, r, "cuDevicePrimaryCtxRetain");
        rt->retained_primary = 1;
        if ((r = d->cuCtxSetCurrent(rt->ctx)) != CUDA_SUCCESS)
            return rt_cu_fail(d, r, "cuCtxSetCurrent");
    }
    int major, minor;
    tilec_status s;
    if ((s = rt_attr(rt, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SM count", &rt->num_sms)) != TILEC_OK ||
        (s = rt_attr(rt, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability", &major)) != TILEC_OK ||
        (s = rt_attr(rt, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability", &minor)) != TILEC_OK)
        return s;
    rt->sm = o->sm;
    if (!rt->sm) {
        if (major != 9 && major != 10)
            return rt_fail(TILEC_ERROR_UNSUPPORTED,
                           "device compute capability %d.%d is not supported: tilec targets sm_90a (9.x) and sm_100a "
                           "(10.x)",
                           major, minor);
        rt->sm = major * 10;
    }
    snprintf(rt->arch, sizeof rt->arch, "sm_%da", rt->sm);
    return TILEC_OK;
}

static void rt_release_context(tilec_rt *rt)
{
    if (!rt->retained_primary)
        return;
    CUcontext cur = NULL;
    /* do not leave the thread pointing at a context that the release may destroy */
    if (rt->drv->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == rt->ctx)
        rt->drv->cuCtxSetCurrent(NULL);
    rt->drv->cuDevicePrimaryCtxRelease(rt->dev);
    rt->retained_primary = 0;
}

/* The CPU device: kernels are compiled for the host target and run on the emulator. num_sms is
 * an H200's (132) unless TILEC_EMU_SMS says otherwise, so that grids sized by it match the GPU's. */
static tilec_status rt_create_cpu(const tilec_rt_options *o, tilec_rt **out)
{
    tilec_rt *rt = calloc(1, sizeof *rt);
    if (!rt)
        return rt_fail(TILEC_ERROR_INTERNAL, "out of memory creating a runtime");
    rt->cpu = 1;
    rt->opt_level = o->opt_level;
    rt->flags = o->flags;
    rt->sm = o->sm ? o->sm : 90;
    const char *sms = getenv("TILEC_EMU_SMS");
    rt->num_sms = sms && atoi(sms) > 0 ? atoi(sms) : 132;
    snprintf(rt->arch, sizeof rt->arch, "host");
    if (!(o->flags & TILEC_RT_NO_DISK_CACHE))
        rt->cache_dir = rt_cache_open_dir(o->cache_dir, (o->flags & TILEC_RT_QUIET) != 0);
    rt->compiler = rt_default_compiler();
    pthread_mutex_init(&rt->lock, NULL);
    *out = rt;
    return TILEC_OK;
}

tilec_status tilec_rt_create(const tilec_rt_options *opts, tilec_rt **out)
{
    if (!out)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "tilec_rt_create: out is NULL");
    *out = NULL;
    tilec_rt_options o = opts ? *opts : tilec_rt_default_options();
    if (o.opt_level < 0 || o.opt_level > 3)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "tilec_rt_create: opt_level %d is outside 0..3", o.opt_level);
    if (o.sm != 0 && o.sm != 90 && o.sm != 100)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "tilec_rt_create: sm %d is not 0, 90 or 100", o.sm);
    if (o.device < 0)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "tilec_rt_create: device %d is negative", o.device);
    const char *env = getenv("TILEC_DEVICE");
    if (env && *env && strcmp(env, "cpu") && strcmp(env, "cuda"))
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "TILEC_DEVICE is '%s': it must be 'cpu' or 'cuda'", env);
    if (env && !strcmp(env, "cpu"))
        o.flags |= TILEC_RT_CPU;
    if (o.flags & TILEC_RT_CPU)
        return rt_create_cpu(&o, out);
    const rt_driver *drv;
    tilec_status s = rt_driver_get(&drv);
    if (s != TILEC_OK)
        return s;
    tilec_rt *rt = calloc(1, sizeof *rt);
    if (!rt)
        return rt_fail(TILEC_ERROR_INTERNAL, "out of memory creating a runtime");
    rt->drv = drv;
    rt->opt_level = o.opt_level;
    rt->flags = o.flags;
    if ((s = rt_setup_device(rt, &o)) != TILEC_OK) {
        rt_release_context(rt);
        free(rt);
        return s;
    }
    if (!(o.flags & TILEC_RT_NO_DISK_CACHE))
        rt->cache_dir = rt_cache_open_dir(o.cache_dir, (o.flags & TILEC_RT_QUIET) != 0);
    rt->compiler = rt_default_compiler();
    pthread_mutex_init(&rt->lock, NULL);
    *out = rt;
    return TILEC_OK;
}

void tilec_rt_destroy(tilec_rt *rt)
{
    if (!rt)
        return;
    while (rt->libs)
        tilec_rt_library_close(rt->libs);
    rt_release_context(rt);
    pthread_mutex_destroy(&rt->lock);
    free(rt->cache_dir);
    free(rt);
}

const char *tilec_rt_cache_dir(const tilec_rt *rt)
{
    return rt ? rt->cache_dir : NULL;
}

tilec_status tilec_rt_get_stats(const tilec_rt *rt, tilec_rt_stats *out)
{
    if (!rt || !out)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "tilec_rt_get_stats: NULL argument");
    out->memory_hits = atomic_load(&rt->memory_hits);
    out->disk_hits = atomic_load(&rt->disk_hits);
    out->aot_hits = atomic_load(&rt->aot_hits);
    out->compiles = atomic_load(&rt->compiles);
    out->disk_rejects = atomic_load(&rt->disk_rejects);
    return TILEC_OK;
}

void rt_set_compiler(tilec_rt *rt, const rt_compiler *c)
{
    rt->compiler = c;
}
