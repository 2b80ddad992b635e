/* tilec/runtime.h — the tilec runtime (libtilec_runtime): loads kernel libraries (JIT from .tl
 * sources or AOT fatbins), caches compiled specialisations in memory and on disk, checks launch
 * arguments against each kernel's signature and launches on a CUDA stream.
 *
 * Conventions. Every function that can fail returns a tilec_status; TILEC_OK is 0. When a call
 * fails, tilec_rt_last_error() returns a message for this thread saying what was wrong. Nothing
 * here exits or aborts the process. The CUDA driver is loaded with dlopen, so a program using
 * this header does not link libcuda. Handles are opaque; a handle's documentation says who
 * owns it. Functions are safe to call from several threads unless a comment says otherwise. */
#ifndef TILEC_RUNTIME_H
#define TILEC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "tilec/compiler.h" /* tilec_status */

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TILEC_RT_API __attribute__((visibility("default")))
#else
#define TILEC_RT_API
#endif

/* The largest tensor rank the runtime accepts (the language's limit is lower). */
#define TILEC_RT_MAX_RANK 8

/* ---- status and errors ------------------------------------------------------------------- */

/* The name of a status ("TILEC_ERROR_LAUNCH"); "unknown status" for values outside the enum. */
TILEC_RT_API const char *tilec_rt_status_name(tilec_status s);

/* The message of the most recent call on this thread that did not return TILEC_OK. The text stays
 * valid until the next failing call on this thread. Successful calls do not clear it. Never NULL:
 * "" if no call on this thread has failed. */
TILEC_RT_API const char *tilec_rt_last_error(void);

/* ---- element types ------------------------------------------------------------------------- */

/* Element types, with the language's names. e2m1 (FP4) is stored two per byte: its shapes and
 * strides count elements (nibbles), not bytes. */
typedef enum tilec_rt_dtype {
    TILEC_RT_BOOL = 0,
    TILEC_RT_I8,
    TILEC_RT_I16,
    TILEC_RT_I32,
    TILEC_RT_I64,
    TILEC_RT_U8,
    TILEC_RT_U16,
    TILEC_RT_U32,
    TILEC_RT_U64,
    TILEC_RT_F16,
    TILEC_RT_BF16,
    TILEC_RT_F32,
    TILEC_RT_F64,
    TILEC_RT_E4M3,
    TILEC_RT_E5M2,
    TILEC_RT_E2M1,
    TILEC_RT_UE8M0,
    TILEC_RT_NUM_DTYPES
} tilec_rt_dtype;

/* The language's name of a dtype ("bf16"); NULL for values outside the enum. */
TILEC_RT_API const char *tilec_rt_dtype_name(tilec_rt_dtype t);
/* Bits per element (e2m1: 4, bool: 8, as stored); 0 for values outside the enum. */
TILEC_RT_API int tilec_rt_dtype_bits(tilec_rt_dtype t);
/* Looks a dtype up by its language name.
 * Errors: TILEC_ERROR_INVALID_ARGUMENT if name or out is NULL; TILEC_ERROR_NOT_FOUND if no dtype
 * has that name. */
TILEC_RT_API tilec_status tilec_rt_dtype_from_name(const char *name, tilec_rt_dtype *out);

/* ---- runtime context ------------------------------------------------------------------------ */

typedef struct tilec_rt tilec_rt;

enum tilec_rt_flags {
    TILEC_RT_NO_DISK_CACHE = 1u << 0, /* keep compiled kernels in memory only */
    TILEC_RT_QUIET = 1u << 1,         /* do not print the cache-directory warning of tilec_rt_create */
    /* Run kernels on the CPU emulator (docs/debugging.md) instead of a GPU: no CUDA driver is
     * loaded, tensors are host pointers, launches are synchronous, and what the emulator finds
     * in a launch (a deadlock, a trap or failed assert, a shared-memory race) is reported as
     * TILEC_ERROR_DRIVER with its description. TILEC_DEVICE=cpu in the environment sets it. */
    TILEC_RT_CPU = 1u << 2,
};

typedef struct tilec_rt_options {
    /* Disk cache directory; NULL: $TILEC_CACHE_DIR, else $HOME/.cache/tilec. Created if missing
     * (mode 0700, and so are the parents it creates). It is used only if it belongs to the
     * calling user (effective uid) and is not writable by group or others, checked here and at
     * every use; otherwise, or if it cannot be created or written, the runtime caches in memory
     * only and prints one warning on stderr per process saying why (unless TILEC_RT_QUIET).
     * Entries are trusted only as regular files of that user, not writable by group or others,
     * reached without following symbolic links (docs/runtime.md, "Caches"). */
    const char *cache_dir;
    /* Device ordinal whose primary context is used when the calling thread has no current
     * context at tilec_rt_create. Ignored when a context is current. */
    int device;
    unsigned flags;          /* enum tilec_rt_flags */
    int opt_level;           /* compiler optimisation level, 0..3 */
    /* Target architecture: 90 (sm_90a) or 100 (sm_100a); 0 derives it from the device's compute
     * capability (9.x: 90, 10.x: 100). */
    int sm;
} tilec_rt_options;

/* The defaults: no cache_dir override, device 0, no flags, opt_level 3, sm 0. */
TILEC_RT_API tilec_rt_options tilec_rt_default_options(void);

/* Creates a runtime context: loads the CUDA driver (dlopen of "libcuda.so.1", or the path in
 * $TILEC_LIBCUDA), initialises it, and binds the runtime to the calling thread's current CUDA
 * context, or, if there is none, retains the primary context of opts->device and makes it
 * current. Modules are loaded into that context; launches must be made with it current.
 * opts may be NULL (defaults). On success *out owns the runtime: free it with tilec_rt_destroy.
 * Errors: TILEC_ERROR_INVALID_ARGUMENT (out NULL, opt_level outside 0..3, sm not 0/90/100);
 *         TILEC_ERROR_DRIVER (libcuda cannot be loaded, lacks CUDA 12 entry points, or a driver
 *         call fails; the message names the call and the CUDA error);
 *         TILEC_ERROR_UNSUPPORTED (sm 0 and the device is neither 9.x nor 10.x). */
TILEC_RT_API tilec_status tilec_rt_create(const tilec_rt_options *opts, tilec_rt **out);

/* Closes every library still open, unloads their modules, releases the primary context if
 * tilec_rt_create retained it, and frees rt. NULL is ignored. Not to be called while another
 * thread uses rt or one of its libraries. */
TILEC_RT_API void tilec_rt_destroy(tilec_rt *rt);

/* The disk cache directory in use, or NULL when caching in memory only. Owned by rt. */
TILEC_RT_API const char *tilec_rt_cache_dir(const tilec_rt *rt);

/* Counters since tilec_rt_create, over all libraries of rt. */
typedef struct tilec_rt_stats {
    uint64_t memory_hits; /* tilec_rt_get_kernel answered from memory */
    uint64_t disk_hits;   /* loaded from the disk cache (the load succeeded) */
    uint64_t aot_hits;    /* loaded from an AOT fatbin */
    uint64_t compiles;    /* compiled by the JIT */
    uint64_t disk_rejects; /* disk entries not used, then rebuilt: corrupt, truncated or foreign;
                            * not a regular file, a symbolic link, another user's or writable by
                            * group or others; or valid but rejected by the driver or emulator */
} tilec_rt_stats;

/* Copies the counters into *out. Errors: TILEC_ERROR_INVALID_ARGUMENT if rt or out is NULL. */
TILEC_RT_API tilec_status tilec_rt_get_stats(const tilec_rt *rt, tilec_rt_stats *out);

/* ---- kernel libraries --------------------------------------------------------------------- */

typedef struct tilec_rt_library tilec_rt_library;

typedef struct tilec_rt_library_options {
    /* Root .tl file for JIT compilation, or NULL. */
    const char *source;
    const char *const *include_dirs; /* searched for imports (see tilec_program_options) */
    int ninclude;
    const char *const *defines;      /* "NAME=VALUE" */
    int ndefines;
    /* AOT: a fatbin (or cubin) built by `tilec` and its manifest; both or neither. */
    const char *fatbin;
    const char *manifest;
} tilec_rt_library_options;

/* Opens a kernel library. With `source`, the sources are parsed and checked now (compile
 * errors are reported here); kernels are compiled on first use. With `fatbin` + `manifest`,
 * the manifest is read now and the fatbin is loaded on the first kernel it holds. With both,
 * a kernel in the manifest comes from the fatbin and any other is compiled from the source.
 * On success *out is owned by the caller; close it with tilec_rt_library_close (or let
 * tilec_rt_destroy close it).
 * Errors: TILEC_ERROR_INVALID_ARGUMENT (NULL rt/opts/out, neither source nor fatbin given, only
 *         one of fatbin/manifest, a malformed manifest);
 *         TILEC_ERROR_NOT_FOUND / TILEC_ERROR_IO (a file is missing or unreadable);
 *         TILEC_ERROR_COMPILE (the sources have errors; the message holds the diagnostics);
 *         TILEC_ERROR_UNSUPPORTED (source given but this runtime was built without the
 *         compiler). */
TILEC_RT_API tilec_status tilec_rt_library_open(tilec_rt *rt, const tilec_rt_library_options *opts,
                                                tilec_rt_library **out);

/* The kernels the library's source declares: their number (0 without a source) and the name of
 * kernel i (NULL outside 0..n-1), owned by the library. */
TILEC_RT_API int tilec_rt_library_num_kernels(const tilec_rt_library *lib);
TILEC_RT_API const char *tilec_rt_library_kernel_name(const tilec_rt_library *lib, int i);

/* Kernel `kernel`'s interface as its source declares it, before specialisation: its generic
 * parameters (kinds, defaults) and parameters (element types, ranks, optional), in the
 * "tilec-iface 1" format of tilec/compiler.h. *out is owned by the library and valid until it
 * is closed.
 * Errors: TILEC_ERROR_INVALID_ARGUMENT (NULL arguments); TILEC_ERROR_NOT_FOUND (no such kernel
 *         in the source, or a library without a source). */
TILEC_RT_API tilec_status tilec_rt_library_interface(tilec_rt_library *lib, const char *kernel, const char **out);

/* The specialisations the library's AOT manifest holds: their number (0 without a fatbin) and
 * the signature of entry i ("tilec-sig 1": its kernel and key lines name the specialisation),
 * owned by the library; NULL outside 0..n-1. */
TILEC_RT_API int tilec_rt_library_num_aot(const tilec_rt_library *lib);
TILEC_RT_API const char *tilec_rt_library_aot_signature(const tilec_rt_library *lib, int i);

/* Unloads the library's modules and frees it and all its kernels. NULL is ignored. No kernel
 * of the library may be in use by another thread. */
TILEC_RT_API void tilec_rt_library_close(tilec_rt_library *lib);

/* ---- kernels (specialisations) -------------------------------------------------------------- */

typedef struct tilec_rt_kernel tilec_rt_kernel;

/* Returns the specialisation of `kernel` for the generic values `generics` ("NAME=VALUE" strings,
 * in any order, as tilec_compile takes them: "T=bf16", "BLOCK=128", "mask=present"). Values not
 * given take the kernel's defaults. Looked up in memory, then in the AOT manifest (which must
 * list exactly the given names), then in the disk cache; compiled on a miss. The disk cache
 * never makes this call fail or block for long: an entry it does not trust, or that does not
 * load, is rebuilt; a key another process holds locked longer than the bound (5 s,
 * $TILEC_CACHE_LOCK_TIMEOUT) is compiled here anyway, with a warning. *out is owned by the
 * library and stays valid until the library is closed.
 * Errors: TILEC_ERROR_INVALID_ARGUMENT (NULL arguments, a malformed or repeated generic);
 *         TILEC_ERROR_NOT_FOUND (no such kernel; or not in the manifest and no source);
 *         TILEC_ERROR_COMPILE (compilation failed; the message holds the diagnostics);
 *         TILEC_ERROR_DRIVER (linking or loading the code failed; the message names the call, the
 *         CUDA error and the linker log);
 *         TILEC_ERROR_INTERNAL (the compiler produced a malformed signature). */
TILEC_RT_API tilec_status tilec_rt_get_kernel(tilec_rt_library *lib, const char *kernel, const char *const *generics,
                                              int ngenerics, tilec_rt_kernel **out);

/* The kernel's signature in the "tilec-sig 1" text format (see tilec/compiler.h). Owned by the
 * kernel. NULL if k is NULL. */
TILEC_RT_API const char *tilec_rt_kernel_signature(const tilec_rt_kernel *k);

typedef enum tilec_rt_param_kind {
    TILEC_RT_PARAM_TENSOR = 1,
    TILEC_RT_PARAM_SCALAR = 2,
    TILEC_RT_PARAM_LIST = 3, /* a list of tensors (list<T[dims], LEN> in the language) */
} tilec_rt_param_kind;

enum tilec_rt_param_flags {
    TILEC_RT_PARAM_WRITTEN = 1u << 0,  /* the kernel stores to this tensor */
    TILEC_RT_PARAM_OPTIONAL = 1u << 1, /* an optional tensor */
    TILEC_RT_PARAM_ABSENT = 1u << 2,   /* specialised without it: pass tilec_rt_arg_absent() */
};

typedef struct tilec_rt_param_info {
    const char *name;       /* owned by the kernel */
    tilec_rt_param_kind kind;
    tilec_rt_dtype dtype;
    int rank;               /* tensors, and each tensor of a list */
    int align;              /* tensors: byte alignment required of the data pointer (of each, in a list) */
    unsigned flags;         /* enum tilec_rt_param_flags */
    int max_length;         /* lists: the most tensors the kernel takes; 0 otherwise */
} tilec_rt_param_info;

/* The number of parameters of k (0 if k is NULL). */
TILEC_RT_API int tilec_rt_kernel_num_params(const tilec_rt_kernel *k);
/* Describes parameter i of k. Errors: TILEC_ERROR_INVALID_ARGUMENT (NULL k/out, i out of range). */
TILEC_RT_API tilec_status tilec_rt_kernel_param(const tilec_rt_kernel *k, int i, tilec_rt_param_info *out);

/* ---- arguments ---------------------------------------------------------------------------- */

/* A tensor argument: a device pointer, its dtype, and shape and strides in elements. */
typedef struct tilec_rt_tensor {
    void *data;
    tilec_rt_dtype dtype;
    int rank;
    int64_t shape[TILEC_RT_MAX_RANK];
    int64_t strides[TILEC_RT_MAX_RANK];
} tilec_rt_tensor;

/* A scalar argument. Which member holds the value depends on dtype: bool and the integer types
 * use i (u for u64 values above INT64_MAX), f32 and f64 use f, and f16, bf16, e4m3, e5m2, e2m1
 * and ue8m0 give their encoding in bits. At launch an integer converts to any integer or
 * floating parameter type (range checked), f32/f64 converts to f16, bf16, f32 or f64 (rounded
 * to nearest even), and an encoded type must match the parameter's type exactly. */
typedef struct tilec_rt_scalar {
    tilec_rt_dtype dtype;
    union {
        int64_t i;
        uint64_t u;
        double f;
        uint64_t bits;
    } v;
} tilec_rt_scalar;

/* A list of tensors: count tensors at `tensors`, an array the caller owns. A launch reads it
 * during the call only (the pointers go into the kernel's parameters); nothing is copied to the
 * heap. */
typedef struct tilec_rt_tensor_list {
    const tilec_rt_tensor *tensors;
    int count;
} tilec_rt_tensor_list;

typedef enum tilec_rt_arg_kind {
    TILEC_RT_ARG_TENSOR = 1,
    TILEC_RT_ARG_SCALAR = 2,
    TILEC_RT_ARG_ABSENT = 3, /* an optional tensor the specialisation was compiled without */
    TILEC_RT_ARG_LIST = 4,   /* a list of tensors, for a list parameter */
} tilec_rt_arg_kind;

typedef struct tilec_rt_arg {
    tilec_rt_arg_kind kind;
    union {
        tilec_rt_tensor tensor;
        tilec_rt_scalar scalar;
        tilec_rt_tensor_list list;
    } u;
} tilec_rt_arg;

/* A tensor; strides NULL means contiguous (row-major). rank is clamped to 0..MAX_RANK; a rank
 * outside that range is reported at launch. */
static inline tilec_rt_tensor tilec_rt_tensor_make(void *data, tilec_rt_dtype dtype, int rank, const int64_t *shape,
                                                   const int64_t *strides)
{
    tilec_rt_tensor t;
    int n = rank < 0 ? 0 : rank > TILEC_RT_MAX_RANK ? TILEC_RT_MAX_RANK : rank;
    uint64_t s = 1; /* unsigned: a hostile shape must not overflow a signed product */
    t.data = data;
    t.dtype = dtype;
    t.rank = rank;
    for (int i = 0; i < TILEC_RT_MAX_RANK; i++) {
        t.shape[i] = 0;
        t.strides[i] = 0;
    }
    for (int i = n - 1; i >= 0; i--) {
        t.shape[i] = shape[i];
        t.strides[i] = strides ? strides[i] : (int64_t)s;
        s *= (uint64_t)shape[i];
    }
    return t;
}

/* A tensor argument (see tilec_rt_tensor_make). */
static inline tilec_rt_arg tilec_rt_arg_tensor(void *data, tilec_rt_dtype dtype, int rank, const int64_t *shape,
                                               const int64_t *strides)
{
    tilec_rt_arg a;
    a.kind = TILEC_RT_ARG_TENSOR;
    a.u.tensor = tilec_rt_tensor_make(data, dtype, rank, shape, strides);
    return a;
}

/* A list argument: count tensors at `tensors` (not copied: keep them until the call returns). */
static inline tilec_rt_arg tilec_rt_arg_list(const tilec_rt_tensor *tensors, int count)
{
    tilec_rt_arg a;
    a.kind = TILEC_RT_ARG_LIST;
    a.u.list.tensors = tensors;
    a.u.list.count = count;
    return a;
}

static inline tilec_rt_arg tilec_rt_arg_int(tilec_rt_dtype dtype, int64_t v)
{
    tilec_rt_arg a;
    a.kind = TILEC_RT_ARG_SCALAR;
    a.u.scalar.dtype = dtype;
    a.u.scalar.v.i = v;
    return a;
}

static inline tilec_rt_arg tilec_rt_arg_float(tilec_rt_dtype dtype, double v)
{
    tilec_rt_arg a;
    a.kind = TILEC_RT_ARG_SCALAR;
    a.u.scalar.dtype = dtype;
    a.u.scalar.v.f = v;
    return a;
}

static inline tilec_rt_arg tilec_rt_arg_bits(tilec_rt_dtype dtype, uint64_t bits)
{
    tilec_rt_arg a;
    a.kind = TILEC_RT_ARG_SCALAR;
    a.u.scalar.dtype = dtype;
    a.u.scalar.v.bits = bits;
    return a;
}

static inline tilec_rt_arg tilec_rt_arg_absent(void)
{
    tilec_rt_arg a;
    a.kind = TILEC_RT_ARG_ABSENT;
    a.u.scalar.dtype = TILEC_RT_BOOL;
    a.u.scalar.v.i = 0;
    return a;
}

/* ---- launch ------------------------------------------------------------------------------- */

typedef struct tilec_rt_launch_options {
    void *stream;  /* a CUstream; NULL is the legacy default stream */
    int num_sms;   /* value of `num_sms` in grid expressions; 0: the device's SM count */
} tilec_rt_launch_options;

/* What a launch would use: computed by tilec_rt_check. */
typedef struct tilec_rt_launch_config {
    unsigned grid[3];
    unsigned block[3];
    unsigned smem;          /* dynamic shared memory, bytes */
    unsigned cluster[3];    /* 1,1,1 when the kernel is not clustered */
    int cooperative;
    int pdl;                /* programmatic dependent launch */
    int param_bytes;        /* bytes of kernel parameters */
} tilec_rt_launch_config;

/* Checks args against k's signature and computes the launch configuration, without launching.
 * opts may be NULL. See tilec_rt_launch for the checks and errors. */
TILEC_RT_API tilec_status tilec_rt_check(const tilec_rt_kernel *k, const tilec_rt_arg *args, int nargs,
                                         const tilec_rt_launch_options *opts, tilec_rt_launch_config *out);

/* Checks args against k's signature, then launches k on opts->stream (opts may be NULL). The
 * checks, in argument order (the first violation is reported, naming the argument): the number
 * of arguments, each argument's kind (tensor / scalar / absent / list), dtype, rank, extents (0 to
 * INT32_MAX), shape and stride relations of the signature (binding names on first use, then
 * comparing), contiguity of tensors the signature gives no strides for, no zero stride on an
 * axis of extent > 1 of a written tensor, alignment of the data pointer; then each `require` of
 * the signature, then the grid. A list is checked for its length (at most the parameter's
 * max_length; the length relation of the signature) and then tensor by tensor as above, each
 * named by its index ('xs[3]'): one dtype, rank and shape for all, and, where the signature
 * gives strides, the same strides (the kernel takes one set). The call neither allocates nor
 * synchronises, so it can be captured into a CUDA graph: a list's pointers go into the kernel's
 * parameters. A grid with 0 blocks in some dimension launches nothing and returns TILEC_OK.
 * Errors: TILEC_ERROR_INVALID_ARGUMENT (k NULL, args NULL with nargs > 0);
 *         TILEC_ERROR_LAUNCH (an argument does not match; a requirement fails; the grid is
 *         negative, too large, or not a multiple of the cluster);
 *         TILEC_ERROR_DRIVER (the driver rejected the launch: the message names the CUDA error). */
TILEC_RT_API tilec_status tilec_rt_launch(const tilec_rt_kernel *k, const tilec_rt_arg *args, int nargs,
                                          const tilec_rt_launch_options *opts);

#ifdef __cplusplus
}
#endif
#endif
