/* rt_driver.c — loads the CUDA driver with dlopen and takes every entry point from
 * cuGetProcAddress with the CUDA version whose signature the runtime was written against; makes
 * a runtime's context current around the driver calls that need it. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

/* The version asked for each symbol is the one of its PFN_ typedef: some later versions take
 * other arguments (cuCtxSynchronize_v2 takes a context; cuCtxGetDevice_v13000 too). */
static const struct {
    const char *name;
    int version;
    size_t offset;
    int optional;
} rt_symbols[] = {
#define SYM(name, ver) {#name, ver, offsetof(rt_driver, name), 0}
#define OPT(name, ver) {#name, ver, offsetof(rt_driver, name), 1}
    SYM(cuGetErrorName, 6000),
    SYM(cuGetErrorString, 6000),
    SYM(cuInit, 2000),
    SYM(cuDriverGetVersion, 2020),
    SYM(cuDeviceGet, 2000),
    SYM(cuDeviceGetAttribute, 2000),
    SYM(cuDevicePrimaryCtxRetain, 7000),
    SYM(cuDevicePrimaryCtxRelease, 11000),
    SYM(cuCtxGetCurrent, 4000),
    SYM(cuCtxSetCurrent, 4000),
    SYM(cuCtxGetDevice, 2000),
    SYM(cuCtxPushCurrent, 4000),
    SYM(cuCtxPopCurrent, 4000),
    SYM(cuModuleLoadData, 2000),
    SYM(cuModuleUnload, 2000),
    SYM(cuModuleGetFunction, 2000),
    SYM(cuFuncSetAttribute, 9000),
    SYM(cuLaunchKernel, 4000),
    SYM(cuLaunchKernelEx, 11060),
    OPT(cuLinkCreate, 6050),
    OPT(cuLinkAddData, 6050),
    OPT(cuLinkComplete, 5050),
    OPT(cuLinkDestroy, 5050),
#undef SYM
#undef OPT
};

static pthread_mutex_t rt_driver_lock = PTHREAD_MUTEX_INITIALIZER;
static rt_driver rt_the_driver;
static int rt_driver_loaded;

/* Loading is retried after a failure (a later call may find the library); once it has
 * succeeded the table is shared by every runtime of the process and never unloaded. */
static tilec_status rt_driver_load(rt_driver *d)
{
    const char *path = getenv("TILEC_LIBCUDA");
    if (!path || !*path)
        path = "libcuda.so.1";
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl)
        return rt_fail(TILEC_ERROR_DRIVER, "cannot load the CUDA driver '%s': %s", path, dlerror());
    PFN_cuGetProcAddress_v12000 get;
    void *sym = dlsym(dl, "cuGetProcAddress_v2");
    if (!sym) {
        dlclose(dl);
        return rt_fail(TILEC_ERROR_DRIVER,
                       "the CUDA driver '%s' has no cuGetProcAddress_v2: tilec needs a CUDA 12.0 or newer driver",
                       path);
    }
    memcpy(&get, &sym, sizeof sym);
    memset(d, 0, sizeof *d);
    int nlink = 0;
    for (size_t i = 0; i < sizeof rt_symbols / sizeof rt_symbols[0]; i++) {
        void *fn = NULL;
        CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        CUresult r = get(rt_symbols[i].name, &fn, rt_symbols[i].version, CU_GET_PROC_ADDRESS_DEFAULT, &found);
        if (r != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS || !fn) {
            if (rt_symbols[i].optional)
                continue;
            dlclose(dl);
            return rt_fail(TILEC_ERROR_DRIVER, "the CUDA driver '%s' does not provide %s (CUDA %d.%d version)", path,
                           rt_symbols[i].name, rt_symbols[i].version / 1000, rt_symbols[i].version % 1000 / 10);
        }
        memcpy((char *)d + rt_symbols[i].offset, &fn, sizeof fn);
        if (rt_symbols[i].optional)
            nlink++;
    }
    d->has_link = nlink == 4;
    CUresult r = d->cuInit(0);
    if (r != CUDA_SUCCESS) {
        tilec_status s = rt_cu_fail(d, r, "cuInit");
        dlclose(dl);
        return s;
    }
    return TILEC_OK;
}

tilec_status rt_driver_get(const rt_driver **out)
{
    pthread_mutex_lock(&rt_driver_lock);
    tilec_status s = TILEC_OK;
    if (!rt_driver_loaded) {
        s = rt_driver_load(&rt_the_driver);
        rt_driver_loaded = s == TILEC_OK;
    }
    pthread_mutex_unlock(&rt_driver_lock);
    *out = &rt_the_driver;
    return s;
}

tilec_status rt_cu_fail(const rt_driver *d, CUresult r, const char *call)
{
    const char *name = NULL, *desc = NULL;
    if (d->cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
        return rt_fail(TILEC_ERROR_DRIVER, "%s failed: CUDA error %d", call, (int)r);
    if (d->cuGetErrorString(r, &desc) != CUDA_SUCCESS || !desc)
        return rt_fail(TILEC_ERROR_DRIVER, "%s failed: %s", call, name);
    return rt_fail(TILEC_ERROR_DRIVER, "%s failed: %s (%s)", call, name, desc);
}

/* ---- the runtime's context current around driver calls off the launch path ---- */

tilec_status rt_ctx_enter(tilec_rt *rt, int *pushed)
{
    CUcontext cur = NULL;
    *pushed = 0;
    if (rt->cpu)
        return TILEC_OK;
    CUresult r = rt->drv->cuCtxGetCurrent(&cur);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt->drv, r, "cuCtxGetCurrent");
    if (cur == rt->ctx)
        return TILEC_OK;
    if ((r = rt->drv->cuCtxPushCurrent(rt->ctx)) != CUDA_SUCCESS)
        return rt_cu_fail(rt->drv, r, "cuCtxPushCurrent");
    *pushed = 1;
    return TILEC_OK;
}

void rt_ctx_leave(tilec_rt *rt, int pushed)
{
    CUcontext popped;
    if (pushed)
        rt->drv->cuCtxPopCurrent(&popped);
}
