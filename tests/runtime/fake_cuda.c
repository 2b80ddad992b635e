/* fake_cuda.c — a stand-in for libcuda.so.1 for tests without a GPU: exports cuGetProcAddress(_v2)
 * and implements the entry points the runtime uses, keeps count of live driver objects, logs
 * calls (TILEC_FAKE_LOG) and fails chosen calls (TILEC_FAKE_FAIL). Environment, read at load and
 * by fake_cuda_configure():
 *   TILEC_FAKE_FAIL=SYM[:N][=CODE],...  fail SYM (every call, or only its Nth) with CODE (default 999)
 *   TILEC_FAKE_MISSING=SYM,...          cuGetProcAddress does not find SYM
 *   TILEC_FAKE_LOG=path                 append one line per call
 *   TILEC_FAKE_SMS (132) TILEC_FAKE_CC (90) TILEC_FAKE_DRIVER_VERSION (13000)
 *   TILEC_FAKE_CONTEXT=1                the configuring thread starts with a current (user) context
 * Images it loads are text: PTX (".entry" lines) or the fake cubin its linker produces. */
#ifdef TILEC_NO_CUDA_H /* no CUDA toolkit: tilec's own declarations of the driver's ABI */
#include "cuda_abi.h"
#else
#include <cuda.h>
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_API __attribute__((visibility("default")))

/* test controls, found by dlsym */
FAKE_API void fake_cuda_configure(void);
FAKE_API int fake_cuda_live(void);
FAKE_API long fake_cuda_calls(const char *name);
FAKE_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                      CUdriverProcAddressQueryResult *status);
#undef cuGetProcAddress
FAKE_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);

enum { FAKE_MAX_PARAMS = 512, FAKE_MAX_FUNCS = 32, FAKE_MAX_RULES = 16 };

typedef struct fake_function {
    char name[128];
    int nparams;
    char types[FAKE_MAX_PARAMS][6]; /* "u64", "s32", "f32" ..., "b8[]" for a byte array */
    int bytes[FAKE_MAX_PARAMS];     /* of a byte array */
    int max_smem;                   /* opted-in dynamic shared memory */
    int nonportable;
} fake_function;

typedef struct fake_module {
    int nfuncs;
    fake_function funcs[FAKE_MAX_FUNCS];
} fake_module;

typedef struct fake_link {
    char *errlog;
    size_t errlog_size;
    char *ptx;
    char *cubin;
} fake_link;

struct CUctx_st {
    int id;
};
static struct CUctx_st fake_primary = {1}, fake_user = {2};

/* ---- configuration ---- */

typedef struct fake_rule {
    char sym[64];
    long nth;
    CUresult code;
} fake_rule;

static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
static fake_rule fake_rules[FAKE_MAX_RULES];
static int fake_nrules;
static char fake_missing[1024];
static int fake_sms = 132, fake_cc = 90, fake_driver_version = 13000;
static FILE *fake_log;
static atomic_int fake_live_modules, fake_live_links, fake_primary_refs;
static _Thread_local CUcontext fake_current;
static _Thread_local CUcontext fake_stack[8];
static _Thread_local int fake_depth;

static int fake_env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

/* ---- the symbol table ---- */

#define FAKE_SYMBOLS(X)                                                                                               \
    X(cuGetErrorName, 6000, 0) X(cuGetErrorString, 6000, 0) X(cuInit, 2000, 0) X(cuDriverGetVersion, 2020, 0)      \
    X(cuDeviceGet, 2000, 0) X(cuDeviceGetAttribute, 2000, 0) X(cuDevicePrimaryCtxRetain, 7000, 0)                  \
    X(cuDevicePrimaryCtxRelease, 11000, 0) X(cuCtxGetCurrent, 4000, 0) X(cuCtxSetCurrent, 4000, 0)                 \
    X(cuCtxGetDevice, 2000, 13000) X(cuCtxPushCurrent, 4000, 0) X(cuCtxPopCurrent, 4000, 0)                        \
    X(cuModuleLoadData, 2000, 0) X(cuModuleUnload, 2000, 0) X(cuModuleGetFunction, 2000, 0)                        \
    X(cuFuncSetAttribute, 9000, 0) X(cuLaunchKernel, 4000, 0) X(cuLaunchKernelEx, 11060, 0)                        \
    X(cuLinkCreate, 6050, 0) X(cuLinkAddData, 6050, 0) X(cuLinkComplete, 5050, 0) X(cuLinkDestroy, 5050, 0)

enum {
#define X(name, since, changed) FAKE_##name,
    FAKE_SYMBOLS(X)
#undef X
        FAKE_NSYMS
};
static const char *const fake_names[FAKE_NSYMS] = {
#define X(name, since, changed) #name,
    FAKE_SYMBOLS(X)
#undef X
};
static atomic_long fake_calls[FAKE_NSYMS];

static void fake_logf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fake_logf(const char *fmt, ...)
{
    if (!fake_log)
        return;
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&fake_lock);
    vfprintf(fake_log, fmt, ap);
    fflush(fake_log);
    pthread_mutex_unlock(&fake_lock);
    va_end(ap);
}

/* Counts the call, logs its name, and returns the injected failure if a rule matches. */
static CUresult fake_enter(int sym)
{
    long n = atomic_fetch_add(&fake_calls[sym], 1) + 1;
    for (int i = 0; i < fake_nrules; i++)
        if (!strcmp(fake_rules[i].sym, fake_names[sym]) && (fake_rules[i].nth == 0 || fake_rules[i].nth == n)) {
            fake_logf("%s -> injected %d\n", fake_names[sym], (int)fake_rules[i].code);
            return fake_rules[i].code;
        }
    return CUDA_SUCCESS;
}

void fake_cuda_configure(void)
{
    pthread_mutex_lock(&fake_lock);
    fake_nrules = 0;
    const char *spec = getenv("TILEC_FAKE_FAIL");
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", spec ? spec : "");
    for (char *save, *item = strtok_r(buf, ",", &save); item && fake_nrules < FAKE_MAX_RULES;
         item = strtok_r(NULL, ",", &save)) {
        fake_rule *r = &fake_rules[fake_nrules++];
        r->nth = 0;
        r->code = CUDA_ERROR_UNKNOWN;
        char *eq = strchr(item, '=');
        if (eq) {
            *eq = 0;
            r->code = (CUresult)atoi(eq + 1);
        }
        char *colon = strchr(item, ':');
        if (colon) {
            *colon = 0;
            r->nth = atol(colon + 1);
        }
        snprintf(r->sym, sizeof r->sym, "%s", item);
    }
    const char *missing = getenv("TILEC_FAKE_MISSING");
    snprintf(fake_missing, sizeof fake_missing, ",%s,", missing ? missing : "");
    fake_sms = fake_env_int("TILEC_FAKE_SMS", 132);
    fake_cc = fake_env_int("TILEC_FAKE_CC", 90);
    fake_driver_version = fake_env_int("TILEC_FAKE_DRIVER_VERSION", 13000);
    if (fake_log)
        fclose(fake_log);
    const char *log = getenv("TILEC_FAKE_LOG");
    fake_log = log && *log ? fopen(log, "a") : NULL;
    for (int i = 0; i < FAKE_NSYMS; i++)
        atomic_store(&fake_calls[i], 0);
    pthread_mutex_unlock(&fake_lock);
    fake_current = fake_env_int("TILEC_FAKE_CONTEXT", 0) ? &fake_user : NULL;
    fake_depth = 0;
}

__attribute__((constructor)) static void fake_cuda_load(void)
{
    fake_cuda_configure();
}

__attribute__((destructor)) static void fake_cuda_unload(void)
{
    if (fake_log)
        fclose(fake_log);
    fake_log = NULL;
}

int fake_cuda_live(void)
{
    return atomic_load(&fake_live_modules) + atomic_load(&fake_live_links) + atomic_load(&fake_primary_refs);
}

long fake_cuda_calls(const char *name)
{
    for (int i = 0; i < FAKE_NSYMS; i++)
        if (!strcmp(fake_names[i], name))
            return atomic_load(&fake_calls[i]);
    return -1;
}

/* ---- errors, init, devices ---- */

static const struct {
    CUresult code;
    const char *name, *text;
} fake_errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult fake_cuGetErrorName(CUresult e, const char **s)
{
    CUresult r = fake_enter(FAKE_cuGetErrorName);
    if (r)
        return r;
    for (size_t i = 0; i < sizeof fake_errors / sizeof fake_errors[0]; i++)
        if (fake_errors[i].code == e) {
            *s = fake_errors[i].name;
            return CUDA_SUCCESS;
        }
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult fake_cuGetErrorString(CUresult e, const char **s)
{
    CUresult r = fake_enter(FAKE_cuGetErrorString);
    if (r)
        return r;
    for (size_t i = 0; i < sizeof fake_errors / sizeof fake_errors[0]; i++)
        if (fake_errors[i].code == e) {
            *s = fake_errors[i].text;
            return CUDA_SUCCESS;
        }
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult fake_cuInit(unsigned flags)
{
    CUresult r = fake_enter(FAKE_cuInit);
    return r ? r : flags ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

static CUresult fake_cuDriverGetVersion(int *v)
{
    CUresult r = fake_enter(FAKE_cuDriverGetVersion);
    if (!r)
        *v = fake_driver_version;
    return r;
}

static CUresult fake_cuDeviceGet(CUdevice *d, int ordinal)
{
    CUresult r = fake_enter(FAKE_cuDeviceGet);
    if (r)
        return r;
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *d = 0;
    return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    CUresult r = fake_enter(FAKE_cuDeviceGetAttribute);
    if (r)
        return r;
    if (d != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = fake_sms; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = fake_cc / 10; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = fake_cc % 10; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
    default: *v = 0; break;
    }
    return CUDA_SUCCESS;
}

/* ---- contexts ---- */

static CUresult fake_cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
    CUresult r = fake_enter(FAKE_cuDevicePrimaryCtxRetain);
    if (r)
        return r;
    if (d != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    atomic_fetch_add(&fake_primary_refs, 1);
    *c = &fake_primary;
    return CUDA_SUCCESS;
}

static CUresult fake_cuDevicePrimaryCtxRelease(CUdevice d)
{
    CUresult r = fake_enter(FAKE_cuDevicePrimaryCtxRelease);
    if (r)
        return r;
    if (d != 0 || atomic_load(&fake_primary_refs) <= 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    atomic_fetch_sub(&fake_primary_refs, 1);
    return CUDA_SUCCESS;
}

static CUresult fake_cuCtxGetCurrent(CUcontext *c)
{
    CUresult r = fake_enter(FAKE_cuCtxGetCurrent);
    if (!r)
        *c = fake_current;
    return r;
}

static CUresult fake_cuCtxSetCurrent(CUcontext c)
{
    CUresult r = fake_enter(FAKE_cuCtxSetCurrent);
    if (!r)
        fake_current = c;
    return r;
}

static CUresult fake_cuCtxGetDevice(CUdevice *d)
{
    CUresult r = fake_enter(FAKE_cuCtxGetDevice);
    if (r)
        return r;
    if (!fake_current)
        return CUDA_ERROR_INVALID_CONTEXT;
    *d = 0;
    return CUDA_SUCCESS;
}

static CUresult fake_cuCtxPushCurrent(CUcontext c)
{
    CUresult r = fake_enter(FAKE_cuCtxPushCurrent);
    if (r)
        return r;
    if (fake_depth == 8)
        return CUDA_ERROR_INVALID_VALUE;
    fake_stack[fake_depth++] = fake_current;
    fake_current = c;
    return CUDA_SUCCESS;
}

static CUresult fake_cuCtxPopCurrent(CUcontext *c)
{
    CUresult r = fake_enter(FAKE_cuCtxPopCurrent);
    if (r)
        return r;
    if (fake_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (c)
        *c = fake_current;
    fake_current = fake_stack[--fake_depth];
    return CUDA_SUCCESS;
}

/* ---- modules ---- */

static const char *fake_skip(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ',')
        p++;
    return p;
}

/* Reads ".entry NAME( .param .TYPE NAME, ... )" declarations out of PTX text. */
static CUresult fake_parse_image(const char *text, fake_module *m)
{
    if (strncmp(text, "FAKECUBIN\n", 10) && !strstr(text, ".version"))
        return CUDA_ERROR_INVALID_IMAGE;
    for (const char *p = strstr(text, ".entry "); p; p = strstr(p, ".entry ")) {
        if (m->nfuncs == FAKE_MAX_FUNCS)
            return CUDA_ERROR_INVALID_IMAGE;
        fake_function *f = &m->funcs[m->nfuncs++];
        p = fake_skip(p + 7);
        size_t n = strcspn(p, "( \n");
        if (n == 0 || n >= sizeof f->name)
            return CUDA_ERROR_INVALID_IMAGE;
        memcpy(f->name, p, n);
        f->name[n] = 0;
        p = fake_skip(p + n);
        if (*p != '(')
            return CUDA_ERROR_INVALID_IMAGE;
        p = fake_skip(p + 1);
        while (*p != ')') {
            if (strncmp(p, ".param .", 8) || f->nparams == FAKE_MAX_PARAMS)
                return CUDA_ERROR_INVALID_IMAGE;
            int align, bytes, used = 0;
            char an[128];
            if (sscanf(p, ".param .align %d .b8 %127[A-Za-z0-9_][%d]%n", &align, an, &bytes, &used) == 3 && used) {
                /* an array parameter (a tensor list's pointers): .param .align A .b8 NAME[N] */
                strcpy(f->types[f->nparams], "b8[]");
                f->bytes[f->nparams++] = bytes;
                p = fake_skip(p + used);
                if (!*p)
                    return CUDA_ERROR_INVALID_IMAGE;
                continue;
            }
            p += 8;
            size_t t = strcspn(p, " ");
            if (t == 0 || t >= sizeof f->types[0])
                return CUDA_ERROR_INVALID_IMAGE;
            memcpy(f->types[f->nparams], p, t);
            f->types[f->nparams++][t] = 0;
            p += t;
            p = fake_skip(p + strspn(p, " "));
            p += strcspn(p, ",)\n"); /* the parameter's name */
            p = fake_skip(p);
            if (!*p)
                return CUDA_ERROR_INVALID_IMAGE;
        }
    }
    return CUDA_SUCCESS;
}

static CUresult fake_cuModuleLoadData(CUmodule *mod, const void *image)
{
    CUresult r = fake_enter(FAKE_cuModuleLoadData);
    if (r)
        return r;
    if (!mod || !image)
        return CUDA_ERROR_INVALID_VALUE;
    fake_module *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((r = fake_parse_image(image, m)) != CUDA_SUCCESS) {
        free(m);
        return r;
    }
    fake_logf("cuModuleLoadData %s functions=%d\n", strncmp(image, "FAKECUBIN\n", 10) ? "ptx" : "cubin", m->nfuncs);
    /* keep only the functions the image has (the whole table is 100 kB: a test that loads
     * hundreds of modules measures the runtime's memory, not this one's) */
    size_t keep = offsetof(fake_module, funcs) + sizeof(fake_function) * (size_t)(m->nfuncs ? m->nfuncs : 1);
    fake_module *small = malloc(keep);
    if (small) {
        memcpy(small, m, keep);
        free(m);
        m = small;
    }
    atomic_fetch_add(&fake_live_modules, 1);
    *mod = (CUmodule)m;
    return CUDA_SUCCESS;
}

static CUresult fake_cuModuleUnload(CUmodule mod)
{
    CUresult r = fake_enter(FAKE_cuModuleUnload);
    if (r)
        return r;
    if (!mod)
        return CUDA_ERROR_INVALID_HANDLE;
    free(mod);
    atomic_fetch_sub(&fake_live_modules, 1);
    return CUDA_SUCCESS;
}

static CUresult fake_cuModuleGetFunction(CUfunction *fn, CUmodule mod, const char *name)
{
    CUresult r = fake_enter(FAKE_cuModuleGetFunction);
    if (r)
        return r;
    fake_module *m = (fake_module *)mod;
    for (int i = 0; i < m->nfuncs; i++)
        if (!strcmp(m->funcs[i].name, name)) {
            *fn = (CUfunction)&m->funcs[i];
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}

static CUresult fake_cuFuncSetAttribute(CUfunction fn, CUfunction_attribute a, int v)
{
    CUresult r = fake_enter(FAKE_cuFuncSetAttribute);
    if (r)
        return r;
    fake_function *f = (fake_function *)fn;
    fake_logf("cuFuncSetAttribute %s attr=%d value=%d\n", f->name, (int)a, v);
    if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        if (v < 0 || v > 232448)
            return CUDA_ERROR_INVALID_VALUE;
        f->max_smem = v;
    } else if (a == CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED) {
        f->nonportable = v;
    }
    return CUDA_SUCCESS;
}

/* ---- the linker ---- */

static CUresult fake_cuLinkCreate(unsigned n, CUjit_option *opts, void **vals, CUlinkState *out)
{
    CUresult r = fake_enter(FAKE_cuLinkCreate);
    if (r)
        return r;
    fake_link *l = calloc(1, sizeof *l);
    if (!l)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (unsigned i = 0; i < n; i++) {
        if (opts[i] == CU_JIT_ERROR_LOG_BUFFER)
            l->errlog = vals[i];
        else if (opts[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            l->errlog_size = (size_t)(uintptr_t)vals[i];
    }
    atomic_fetch_add(&fake_live_links, 1);
    *out = (CUlinkState)l;
    return CUDA_SUCCESS;
}

static CUresult fake_cuLinkAddData(CUlinkState st, CUjitInputType type, void *data, size_t size, const char *name,
                                   unsigned n, CUjit_option *opts, void **vals)
{
    CUresult r = fake_enter(FAKE_cuLinkAddData);
    if (r)
        return r;
    fake_link *l = (fake_link *)st;
    if (type != CU_JIT_INPUT_PTX || !data || size == 0 || ((char *)data)[size - 1] != 0 || l->ptx)
        return CUDA_ERROR_INVALID_VALUE;
    if (strstr(data, "FAKE_INVALID_PTX")) {
        if (l->errlog && l->errlog_size)
            snprintf(l->errlog, l->errlog_size, "ptxas fatal   : fake syntax error in %s", name ? name : "input");
        return CUDA_ERROR_INVALID_PTX;
    }
    l->ptx = strdup(data);
    return l->ptx ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult fake_cuLinkComplete(CUlinkState st, void **cubin, size_t *size)
{
    CUresult r = fake_enter(FAKE_cuLinkComplete);
    if (r)
        return r;
    fake_link *l = (fake_link *)st;
    if (!l->ptx)
        return CUDA_ERROR_INVALID_VALUE;
    size_t n = strlen(l->ptx);
    free(l->cubin);
    l->cubin = malloc(10 + n);
    if (!l->cubin)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(l->cubin, "FAKECUBIN\n", 10);
    memcpy(l->cubin + 10, l->ptx, n); /* a real cubin is not NUL-terminated either */
    *cubin = l->cubin;
    *size = 10 + n;
    return CUDA_SUCCESS;
}

static CUresult fake_cuLinkDestroy(CUlinkState st)
{
    CUresult r = fake_enter(FAKE_cuLinkDestroy);
    if (r)
        return r;
    fake_link *l = (fake_link *)st;
    free(l->ptx);
    free(l->cubin);
    free(l);
    atomic_fetch_sub(&fake_live_links, 1);
    return CUDA_SUCCESS;
}

/* ---- launches ---- */

static void fake_log_params(char *buf, size_t cap, const fake_function *f, void **params)
{
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < f->nparams && len + 32 < cap; i++) {
        const char *t = f->types[i];
        const void *p = params[i];
        char v[48];
        if (!strcmp(t, "b8[]")) { /* 8-byte words, trailing zeros shown as their count */
            int words = f->bytes[i] / 8, used = words;
            while (used > 0 && !memcmp((const char *)p + 8 * (used - 1), "\0\0\0\0\0\0\0\0", 8))
                used--;
            len += (size_t)snprintf(buf + len, cap - len, "%s[", i ? "," : "");
            for (int w = 0; w < used && len + 32 < cap; w++) {
                uint64_t x;
                memcpy(&x, (const char *)p + 8 * w, 8);
                len += (size_t)snprintf(buf + len, cap - len, "%s0x%llx", w ? " " : "", (unsigned long long)x);
            }
            if (len + 32 < cap)
                len += (size_t)snprintf(buf + len, cap - len, "%s+%d zero]", used ? " " : "", words - used);
            continue;
        }
        if (!strcmp(t, "u64") || !strcmp(t, "b64")) {
            uint64_t x;
            memcpy(&x, p, 8);
            snprintf(v, sizeof v, "0x%llx", (unsigned long long)x);
        } else if (!strcmp(t, "s64")) {
            int64_t x;
            memcpy(&x, p, 8);
            snprintf(v, sizeof v, "%lld", (long long)x);
        } else if (!strcmp(t, "s32")) {
            int32_t x;
            memcpy(&x, p, 4);
            snprintf(v, sizeof v, "%d", x);
        } else if (!strcmp(t, "u32") || !strcmp(t, "b32")) {
            uint32_t x;
            memcpy(&x, p, 4);
            snprintf(v, sizeof v, "%u", x);
        } else if (!strcmp(t, "f32")) {
            float x;
            memcpy(&x, p, 4);
            snprintf(v, sizeof v, "%g", x);
        } else if (!strcmp(t, "f64")) {
            double x;
            memcpy(&x, p, 8);
            snprintf(v, sizeof v, "%g", x);
        } else if (!strcmp(t, "s16")) {
            int16_t x;
            memcpy(&x, p, 2);
            snprintf(v, sizeof v, "%d", x);
        } else if (!strcmp(t, "u16") || !strcmp(t, "b16")) {
            uint16_t x;
            memcpy(&x, p, 2);
            snprintf(v, sizeof v, "0x%04x", x);
        } else if (!strcmp(t, "s8")) {
            int8_t x;
            memcpy(&x, p, 1);
            snprintf(v, sizeof v, "%d", x);
        } else {
            uint8_t x;
            memcpy(&x, p, 1);
            snprintf(v, sizeof v, "0x%02x", x);
        }
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? "," : "", v);
    }
}

static CUresult fake_check_launch(const fake_function *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                  unsigned by, unsigned bz, unsigned smem, void **params, void **extra)
{
    if (!f || !gx || !gy || !gz || !bx || !by || !bz || (uint64_t)bx * by * bz > 1024 || extra)
        return CUDA_ERROR_INVALID_VALUE;
    if (smem > (unsigned)(f->max_smem > 48 * 1024 ? f->max_smem : 48 * 1024))
        return CUDA_ERROR_INVALID_VALUE;
    if (f->nparams && !params)
        return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < f->nparams; i++)
        if (!params[i])
            return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static CUresult fake_cuLaunchKernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                    unsigned bz, unsigned smem, CUstream stream, void **params, void **extra)
{
    CUresult r = fake_enter(FAKE_cuLaunchKernel);
    if (r)
        return r;
    const fake_function *f = (const fake_function *)fn;
    if ((r = fake_check_launch(f, gx, gy, gz, bx, by, bz, smem, params, extra)) != CUDA_SUCCESS)
        return r;
    if (fake_log) {
        char p[4096];
        fake_log_params(p, sizeof p, f, params);
        fake_logf("cuLaunchKernel %s grid=%u,%u,%u block=%u,%u,%u smem=%u stream=%p params=%s\n", f->name, gx, gy, gz,
                  bx, by, bz, smem, (void *)stream, p);
    }
    return CUDA_SUCCESS;
}

static CUresult fake_cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction fn, void **params, void **extra)
{
    CUresult r = fake_enter(FAKE_cuLaunchKernelEx);
    if (r)
        return r;
    const fake_function *f = (const fake_function *)fn;
    if ((r = fake_check_launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
                               c->sharedMemBytes, params, extra)) != CUDA_SUCCESS)
        return r;
    unsigned cx = 1, cy = 1, cz = 1;
    int coop = 0, pdl = 0;
    for (unsigned i = 0; i < c->numAttrs; i++) {
        const CUlaunchAttribute *a = &c->attrs[i];
        if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
            cx = a->value.clusterDim.x;
            cy = a->value.clusterDim.y;
            cz = a->value.clusterDim.z;
        } else if (a->id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
            coop = a->value.cooperative;
        } else if (a->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION) {
            pdl = a->value.programmaticStreamSerializationAllowed;
        } else {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    if (!cx || !cy || !cz || c->gridDimX % cx || c->gridDimY % cy || c->gridDimZ % cz)
        return CUDA_ERROR_INVALID_VALUE;
    if (cx * cy * cz > 8 && !f->nonportable)
        return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    if (fake_log) {
        char p[4096];
        fake_log_params(p, sizeof p, f, params);
        fake_logf("cuLaunchKernelEx %s grid=%u,%u,%u block=%u,%u,%u smem=%u cluster=%u,%u,%u cooperative=%d pdl=%d "
                  "stream=%p params=%s\n",
                  f->name, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
                  c->sharedMemBytes, cx, cy, cz, coop, pdl, (void *)c->hStream, p);
    }
    return CUDA_SUCCESS;
}

/* ---- cuGetProcAddress ---- */

static void *fake_lookup(const char *symbol, int version, CUdriverProcAddressQueryResult *status)
{
    char key[80];
    snprintf(key, sizeof key, ",%s,", symbol);
    *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (strstr(fake_missing, key))
        return NULL;
    static const struct {
        int since, changed;
    } versions[FAKE_NSYMS] = {
#define X(name, since, changed) {since, changed},
        FAKE_SYMBOLS(X)
#undef X
    };
    void *fns[FAKE_NSYMS] = {
#define X(name, since, changed) (void *)fake_##name,
        FAKE_SYMBOLS(X)
#undef X
    };
    for (int i = 0; i < FAKE_NSYMS; i++) {
        if (strcmp(fake_names[i], symbol))
            continue;
        /* a version at or past `changed` would get an entry point with other arguments, which this
         * fake does not implement: the runtime must not ask for it */
        if (version < versions[i].since || (versions[i].changed && version >= versions[i].changed)) {
            *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
            fake_logf("cuGetProcAddress %s version %d refused\n", symbol, version);
            return NULL;
        }
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return fns[i];
    }
    return NULL;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
    CUdriverProcAddressQueryResult st;
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = fake_lookup(symbol, cudaVersion, &st);
    if (status)
        *status = st;
    return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
