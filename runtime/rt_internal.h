/* rt_internal.h — the runtime's internal types and the entry points of its files, grouped by
 * file in the order a launch meets them: utilities, driver, signature, validation, cache,
 * modules, libraries. Nothing here is exported from libtilec_runtime.so. */
#ifndef TILEC_RT_INTERNAL_H
#define TILEC_RT_INTERNAL_H

#ifdef TILEC_NO_CUDA_H /* no CUDA toolkit: tilec's own declarations of the driver's ABI */
#include "cuda_abi.h"
#else
#include <cuda.h>
#include <cudaTypedefs.h>
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_compiler.h"
#include "tilec/runtime.h"

/* Bounds that keep a hostile signature, manifest or argument list from costing more than it
 * should; exceeding one is an error, never a crash. */
enum {
    RT_MAX_PARAMS = 64,          /* parameters of one kernel */
    RT_MAX_NAMES = 128,          /* shape, stride and scalar names of one signature */
    RT_MAX_EXPR_DEPTH = 32,      /* nesting of one signature expression */
    RT_MAX_EXPR_NODES = 4096,    /* nodes of all expressions of one signature */
    RT_MAX_PARAM_BYTES = 32764,  /* kernel parameter space (CUDA 12.1+), packed on the stack */
    RT_OLD_PARAM_BYTES = 4096,   /* ... what drivers before CUDA 12.1 take */
    RT_MAX_LIST = 4096,          /* tensors of one list parameter */
    RT_MAX_PTX_PARAMS = 512,     /* PTX parameters (a rank-R tensor has 1 + 2R) */
    RT_MAX_GENERICS = 64,        /* generic values of one specialisation */
    RT_MAX_GENERICS_TEXT = 2048, /* their canonical text, "A=1,B=bf16" */
    RT_MAX_SIG_BYTES = 1 << 20,
    RT_MAX_ERROR = 8192,         /* bytes of the thread-local error message */
    RT_SMEM_NO_OPTIN = 48 * 1024 /* dynamic smem a kernel may use without opting in */
};

/* ---- rt_error.c ---- */
/* Sets this thread's error message and returns s, so that `return rt_fail(...)` reads well. */
tilec_status rt_fail(tilec_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Puts "PREFIX: " before the current message (which a callee set); returns s. */
tilec_status rt_fail_prefix(tilec_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints the cache-directory warning on stderr, at most once per process. */
void rt_warn_cache_once(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- rt_util.c: hashing, an arena, a bounded string builder ---- */
uint64_t rt_hash(const void *p, size_t n, uint64_t seed);

typedef struct rt_arena_block rt_arena_block;
typedef struct rt_arena {
    rt_arena_block *head;
} rt_arena;
void *rt_arena_alloc(rt_arena *a, size_t size); /* zeroed, 16-byte aligned; NULL when out of memory */
char *rt_arena_strndup(rt_arena *a, const char *s, size_t n);
char *rt_strndup(const char *s, size_t n);   /* malloc'd copy of n bytes plus a NUL; NULL when out of memory */
void rt_arena_free(rt_arena *a);

/* Appends to a fixed buffer, truncating with "..." rather than overflowing: error messages are
 * built in place so that the launch path needs no heap. */
typedef struct rt_sbuf {
    char *p;
    size_t len, cap;
} rt_sbuf;
void rt_sb_init(rt_sbuf *b, char *p, size_t cap);
void rt_sb_puts(rt_sbuf *b, const char *s);
void rt_sb_printf(rt_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reads a whole file, NUL-terminated; *len excludes the NUL. TILEC_ERROR_NOT_FOUND / _IO. */
tilec_status rt_read_file(const char *path, char **out, size_t *len);

/* ---- rt_dtype.c ---- */
enum rt_dtype_kind { RT_DK_BOOL, RT_DK_SINT, RT_DK_UINT, RT_DK_FLOAT, RT_DK_HALF, RT_DK_FP8, RT_DK_FP4, RT_DK_SCALE };
typedef struct rt_dtype_info {
    const char *name;
    uint8_t bits;  /* as stored: bool 8, e2m1 4 */
    uint8_t kind;  /* enum rt_dtype_kind */
} rt_dtype_info;
extern const rt_dtype_info rt_dtypes[TILEC_RT_NUM_DTYPES];
int rt_dtype_lookup(const char *s, size_t n); /* -1 when no dtype has that name */

/* ---- rt_driver.c: libcuda through dlopen + cuGetProcAddress ---- */
typedef struct rt_driver {
    PFN_cuGetErrorName_v6000 cuGetErrorName;
    PFN_cuGetErrorString_v6000 cuGetErrorString;
    PFN_cuInit_v2000 cuInit;
    PFN_cuDriverGetVersion_v2020 cuDriverGetVersion;
    PFN_cuDeviceGet_v2000 cuDeviceGet;
    PFN_cuDeviceGetAttribute_v2000 cuDeviceGetAttribute;
    PFN_cuDevicePrimaryCtxRetain_v7000 cuDevicePrimaryCtxRetain;
    PFN_cuDevicePrimaryCtxRelease_v11000 cuDevicePrimaryCtxRelease;
    PFN_cuCtxGetCurrent_v4000 cuCtxGetCurrent;
    PFN_cuCtxSetCurrent_v4000 cuCtxSetCurrent;
    PFN_cuCtxGetDevice_v2000 cuCtxGetDevice;
    PFN_cuCtxPushCurrent_v4000 cuCtxPushCurrent;
    PFN_cuCtxPopCurrent_v4000 cuCtxPopCurrent;
    PFN_cuModuleLoadData_v2000 cuModuleLoadData;
    PFN_cuModuleUnload_v2000 cuModuleUnload;
    PFN_cuModuleGetFunction_v2000 cuModuleGetFunction;
    PFN_cuFuncSetAttribute_v9000 cuFuncSetAttribute;
    PFN_cuLaunchKernel_v4000 cuLaunchKernel;
    PFN_cuLaunchKernelEx_v11060 cuLaunchKernelEx;
    /* optional: without them PTX is handed to cuModuleLoadData (the driver JIT-compiles it) */
    PFN_cuLinkCreate_v6050 cuLinkCreate;
    PFN_cuLinkAddData_v6050 cuLinkAddData;
    PFN_cuLinkComplete_v5050 cuLinkComplete;
    PFN_cuLinkDestroy_v5050 cuLinkDestroy;
    int has_link;
} rt_driver;

/* The process's driver table, loaded on first success and kept for the process's life. */
tilec_status rt_driver_get(const rt_driver **out);
/* Sets "CALL failed: CUDA_ERROR_X (description)" and returns TILEC_ERROR_DRIVER. */
tilec_status rt_cu_fail(const rt_driver *d, CUresult r, const char *call);
/* Makes rt's context current (pushing it if another is) for driver calls outside the launch
 * path; pair with rt_ctx_leave(rt, pushed). Nothing to do on the CPU device. */
tilec_status rt_ctx_enter(tilec_rt *rt, int *pushed);
void rt_ctx_leave(tilec_rt *rt, int pushed);

/* ---- rt_expr.c: signature expressions ---- */
enum rt_expr_kind { RT_E_INT, RT_E_FLOAT, RT_E_NAME, RT_E_ANY, RT_E_BIND, RT_E_OP };
enum rt_op {
    RT_OP_ADD, RT_OP_SUB, RT_OP_MUL, RT_OP_DIV, RT_OP_MOD, RT_OP_CDIV, RT_OP_ALIGN, RT_OP_FLOORDIV,
    RT_OP_FLOORMOD, RT_OP_MIN, RT_OP_MAX, RT_OP_EQ, RT_OP_NE, RT_OP_LT, RT_OP_LE, RT_OP_GT, RT_OP_GE,
    RT_OP_AND, RT_OP_OR, RT_OP_NOT, RT_OP_NEG, RT_OP_SELECT, RT_NUM_OPS
};
typedef struct rt_expr rt_expr;
struct rt_expr {
    uint8_t kind;   /* enum rt_expr_kind */
    uint8_t op;     /* enum rt_op */
    uint8_t has_float; /* a float literal or float scalar below: evaluate on doubles */
    uint16_t nargs;
    int16_t slot;   /* NAME, BIND: index into the signature's names, once resolved */
    const char *name;
    union {
        int64_t i;
        double f;
    } v;
    rt_expr **args;
};

typedef struct rt_value {
    int is_float;
    int64_t i;
    double f;
} rt_value;

typedef struct rt_expr_parser {
    rt_arena *arena;
    const char *p, *end; /* the rest of the current line */
    int line;
    int nodes;           /* shared budget over the whole signature */
} rt_expr_parser;

/* Parses one prefix expression at ps->p, skipping spaces before it. */
tilec_status rt_expr_parse(rt_expr_parser *ps, rt_expr **out);
/* Evaluates e with names' values in slots. Returns NULL on success, else why it failed
 * ("division by zero", "integer overflow"). Never traps. */
const char *rt_expr_eval(const rt_expr *e, const rt_value *slots, rt_value *out);
/* Recomputes has_float once names are resolved; float_slots[s] is 1 for float scalars. */
void rt_expr_mark_float(rt_expr *e, const uint8_t *float_slots);
/* Infix rendering for messages: (== (% M 64) 0) -> "M % 64 == 0". */
void rt_expr_render(rt_sbuf *b, const rt_expr *e);
/* Calls fn for each NAME / BIND node of e, depth first, left to right. */
void rt_expr_walk_names(const rt_expr *e, void (*fn)(const rt_expr *name, void *ctx), void *ctx);
void rt_value_render(rt_sbuf *b, rt_value v);

/* ---- rt_sig.c: the "tilec-sig 1" signature ---- */
enum rt_param_kind { RT_P_TENSOR = 1, RT_P_SCALAR = 2, RT_P_LIST = 3 };
typedef struct rt_param {
    const char *name;
    uint8_t kind;    /* enum rt_param_kind */
    uint8_t dtype;   /* tilec_rt_dtype */
    uint8_t rank;    /* a list: of each of its tensors (and so for dim, stride, align) */
    uint8_t has_strides;
    unsigned flags;  /* enum tilec_rt_param_flags */
    int align;
    rt_expr *dim[TILEC_RT_MAX_RANK];
    rt_expr *stride[TILEC_RT_MAX_RANK];
    rt_expr *len;    /* lists: the number of tensors */
    int max;         /* lists: the most tensors it takes, the size of its pointer array */
    uint16_t offset; /* byte offset of the first PTX parameter in the packed layout */
    int16_t slot;    /* scalars: their name's slot */
} rt_param;

enum rt_name_kind { RT_N_DIM, RT_N_STRIDE, RT_N_SCALAR, RT_N_NUM_SMS, RT_N_LEN };
typedef struct rt_name {
    const char *name;
    uint8_t kind;   /* enum rt_name_kind: what binds it */
    uint8_t axis;
    int16_t param;  /* the binding parameter (-1 for num_sms) */
} rt_name;

/* The launch plan: argument p is checked, then the binds of p run, then every check whose
 * names are all bound by then (`at` == p), so the first violation is found in argument order
 * without evaluating anything twice. A step is about an extent, a stride or a list's length. */
enum rt_what { RT_W_DIM, RT_W_STRIDE, RT_W_LEN };
typedef struct rt_bind_step {
    int16_t param, slot;
    uint8_t what, axis; /* enum rt_what */
} rt_bind_step;
typedef struct rt_check_step {
    int16_t at, param;
    uint8_t what, axis;
    const rt_expr *e;
} rt_check_step;
typedef struct rt_require {
    rt_expr *e;
    const char *message;
} rt_require;

typedef struct rt_sig {
    rt_arena arena;
    const char *text;      /* the signature as given */
    const char *kernel, *entry, *key, *arch;
    int threads;
    unsigned smem;
    unsigned cluster[3];
    int clustered, cooperative, pdl;
    int nparams;
    rt_param *params;
    int nnames;
    rt_name *names;
    int num_sms_slot;      /* -1 when no expression uses num_sms */
    int ngrid;
    rt_expr *grid[3];
    int nrequires;
    rt_require *requires;
    int nbinds, nchecks;
    rt_bind_step *binds;
    rt_check_step *checks;
    int nptx;              /* PTX parameters */
    int param_bytes;
} rt_sig;

/* Parses and checks a signature. Errors name the line: TILEC_ERROR_INVALID_ARGUMENT. */
tilec_status rt_sig_parse(const char *text, size_t len, rt_sig **out);
void rt_sig_free(rt_sig *s);
/* The generic values of the `key` line ("A=1,B=2" of NAME<A=1,B=2>) in canonical order, into
 * buf; -1 when there is no key line or its values are malformed. */
int rt_sig_key_generics(const rt_sig *s, char *buf, size_t cap);
/* Writes the canonical generics (validated, sorted by name, comma-joined) into buf. */
tilec_status rt_canonical_generics(const char *const *generics, int n, char *buf, size_t cap);

/* ---- rt_bind.c: argument validation, grid, parameter packing ---- */
/* Checks args against sig, fills cfg, and if buf is non-NULL packs the parameters into buf (at
 * least sig->param_bytes bytes, 16-aligned) and ptrs (sig->nptx pointers). No heap, no locks. */
tilec_status rt_bind(const rt_sig *sig, const tilec_rt_arg *args, int nargs, int num_sms, tilec_rt_launch_config *cfg,
                     unsigned char *buf, void **ptrs);

/* ---- rt_cache.c: the disk cache ---- */
enum rt_payload_kind { RT_PAYLOAD_CUBIN = 1, RT_PAYLOAD_PTX = 2, RT_PAYLOAD_HOST_OBJECT = 3 };
typedef struct rt_entry {
    char *sig;           /* NUL-terminated */
    size_t sig_len;
    char *payload;       /* NUL-terminated after payload_len bytes (PTX must be) */
    size_t payload_len;
    int kind;            /* enum rt_payload_kind */
} rt_entry;
void rt_entry_free(rt_entry *e);

/* The directory to use (created 0700 if missing), or NULL when it cannot be used or is not
 * trusted: not this user's, or writable by group or others (warned once). */
char *rt_cache_open_dir(const char *requested, int quiet);
/* Loads the entry for key; *found 0 on a miss. A corrupt, truncated or foreign entry, or one that
 * is not trusted (not a regular file, a symbolic link, another user's or writable by group or
 * others: warned about), counts as a miss with *rejected set. Never blocks. Errors only for out
 * of memory. */
tilec_status rt_cache_load(const char *dir, const char *key, rt_entry *out, int *found, int *rejected);
/* Takes the per-key lock, waiting at most the bound (RT_CACHE_LOCK_WAIT_S in rt_cache.c,
 * $TILEC_CACHE_LOCK_TIMEOUT). Returns an fd, or -1 (warned about) if the lock file cannot be
 * used or the wait ran out: the caller compiles and stores anyway. */
int rt_cache_lock(const char *dir, const char *key);
void rt_cache_unlock(int fd);
/* Writes the entry through a temporary file and a rename. Failure is not an error for the
 * caller (the kernel still works; it is warned about once per process): returns 0 on success,
 * -1 with errno otherwise. */
int rt_cache_store(const char *dir, const char *key, const rt_entry *e);
/* The file name stem of key: 16 hex digits of its hash. */
void rt_cache_stem(const char *key, char out[17]);

/* ---- rt_context.c ---- */
struct tilec_rt {
    int cpu;               /* the CPU emulator (TILEC_RT_CPU): no driver, no context */
    const rt_driver *drv;
    CUcontext ctx;
    CUdevice dev;
    int retained_primary;
    int driver_version;    /* part of cache keys: this driver links the cubins */
    int sm;
    int num_sms;
    char arch[16];
    int opt_level;
    unsigned flags;
    char *cache_dir;       /* NULL: memory only */
    const rt_compiler *compiler;
    pthread_mutex_t lock;  /* the library list */
    tilec_rt_library *libs;
    _Atomic uint64_t memory_hits, disk_hits, aot_hits, compiles, disk_rejects;
};
/* Tests replace the compiler (a fake that returns canned PTX); NULL disables JIT. */
void rt_set_compiler(tilec_rt *rt, const rt_compiler *c);

/* ---- rt_module.c: PTX -> cubin -> module -> function ---- */
/* Links PTX into a cubin with the driver linker; *out is malloc'd, NUL-terminated. */
tilec_status rt_link_ptx(tilec_rt *rt, const char *ptx, size_t ptx_len, char **out, size_t *out_len);
/* Loads an image (cubin, fatbin or NUL-terminated PTX) into rt's context. */
tilec_status rt_load_module(tilec_rt *rt, const void *image, CUmodule *out);
/* Finds sig's entry in module and opts it into sig->smem bytes of dynamic shared memory. */
tilec_status rt_get_function(tilec_rt *rt, CUmodule module, const rt_sig *sig, CUfunction *out);

/* ---- rt_library.c ---- */
typedef struct rt_aot_entry {
    rt_sig *sig;
    char generics[RT_MAX_GENERICS_TEXT]; /* canonical */
} rt_aot_entry;

struct tilec_rt_kernel {
    /* what a launch reads, together */
    CUfunction fn;
    const rt_sig *sig;
    const rt_driver *drv;
    int device_sms;
    /* bookkeeping */
    uint64_t hash;
    char *name;
    char *generics;        /* canonical */
    rt_sig *owned_sig;     /* NULL when the sig belongs to the AOT manifest */
    CUmodule module;       /* owned; NULL when the function lives in the AOT module */
    void *emu;             /* the CPU emulator's kernel (tl_emu_kernel), owned */
};

struct tilec_rt_library {
    tilec_rt *rt;
    tilec_rt_library *next;
    const rt_compiler *compiler; /* the one that opened `program` */
    void *program;          /* compiler's handle, NULL without source */
    uint64_t program_hash;
    char *fatbin_path;
    int naot;
    rt_aot_entry *aot;
    CUmodule aot_module;    /* loaded on first use */
    pthread_mutex_t lock;   /* the kernel map, `building` */
    pthread_cond_t built;   /* signalled when a build ends */
    struct rt_building *building; /* keys being built now, one thread each */
    /* Loading code into the driver or the emulator (and the AOT fatbin once): one at a time per
     * library. Compiles and disk-cache reads of different keys run in parallel. */
    pthread_mutex_t build_lock;
    tilec_rt_kernel **slots;
    size_t nslots, nkernels;
    struct rt_iface *ifaces; /* kernel interfaces handed out (tilec_rt_library_interface), under build_lock */
};

typedef struct rt_iface {
    struct rt_iface *next;
    char *kernel, *text;
} rt_iface;

/* ---- rt_emu.c: the CPU device ---- */
/* Loads a host object (RT_PAYLOAD_HOST_OBJECT) for sig into k->emu. */
tilec_status rt_emu_load(tilec_rt_kernel *k, const rt_sig *sig, const void *object, size_t size);
/* Runs k on the emulator with the packed parameters, global accesses checked against the tensor
 * arguments (bound by rt_bind); synchronous. */
tilec_status rt_emu_launch(const tilec_rt_kernel *k, const tilec_rt_arg *args, void **ptrs,
                           const tilec_rt_launch_config *cfg);
void rt_emu_free(tilec_rt_kernel *k);

#endif
