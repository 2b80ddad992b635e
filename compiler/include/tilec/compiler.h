/* tilec/compiler.h — the compiler as a library (libtilec).
 *
 * A program is a set of .tl sources (a root file and its imports), parsed and checked once.
 * A specialisation is a kernel of the program with values for its generic parameters; compiling
 * one gives PTX (and, with ptxas, a cubin) plus its signature: what the runtime needs to check
 * arguments, compute the grid and launch. Every function returns a status; on errors the
 * program's diagnostics say what was wrong. Nothing here exits or aborts on bad input. */
#ifndef TILEC_COMPILER_H
#define TILEC_COMPILER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tilec_status {
    TILEC_OK = 0,
    TILEC_ERROR_INVALID_ARGUMENT = 1, /* a NULL pointer, an unknown option, a malformed value */
    TILEC_ERROR_COMPILE = 2,          /* the source has errors: see tilec_program_diagnostics */
    TILEC_ERROR_NOT_FOUND = 3,        /* no such kernel / file */
    TILEC_ERROR_INTERNAL = 4,         /* a bug in tilec: an internal compiler error */
    TILEC_ERROR_IO = 5,
    TILEC_ERROR_DRIVER = 6,           /* runtime: the CUDA driver reported an error */
    TILEC_ERROR_LAUNCH = 7,           /* runtime: an argument does not match the signature */
    TILEC_ERROR_UNSUPPORTED = 8,      /* a feature the target lacks */
} tilec_status;

const char *tilec_status_name(tilec_status s);
const char *tilec_version(void);
/* The version, the LLVM version and a hash of the compiler's sources ("0.1.0+llvm22.1.0+<16 hex>"):
 * two builds with the same id generate the same code, so caches of compiled kernels key on it. */
const char *tilec_build_id(void);

typedef struct tilec_program tilec_program;

typedef struct tilec_program_options {
    const char *const *include_dirs;  /* searched for imports after the importing file's folder */
    int ninclude;
    const char *const *defines;       /* "NAME=VALUE" */
    int ndefines;
} tilec_program_options;

/* Parses and checks a root file and its imports. On TILEC_ERROR_COMPILE *out is still set, so
 * that the diagnostics can be read; destroy it in every case where *out is non-NULL. */
tilec_status tilec_program_from_file(const char *path, const tilec_program_options *opts, tilec_program **out);
tilec_status tilec_program_from_string(const char *name, const char *text, const tilec_program_options *opts,
                                       tilec_program **out);
void tilec_program_destroy(tilec_program *p);
/* All diagnostics so far, rendered (`file:line:col: error: ...` with source lines). */
const char *tilec_program_diagnostics(const tilec_program *p);
/* The diagnostics of the latest tilec_compile on p only (empty if it printed none). A failed
 * tilec_compile leaves the program usable for further requests. */
const char *tilec_program_last_diagnostics(const tilec_program *p);
/* A 64-bit hash of every source file of the program (root and imports) and the defines. */
uint64_t tilec_program_hash(const tilec_program *p);
int tilec_program_num_kernels(const tilec_program *p);
const char *tilec_program_kernel_name(const tilec_program *p, int i);
/* The interface of kernel `kernel` as declared, before any specialisation, in the text format
 * "tilec-iface 1" below: what a caller needs to choose generic values from its arguments (the
 * Python package infers a `type` generic from the dtype of the first tensor declared with it).
 * Owned by the program, valid until the next call on p or tilec_program_destroy. NULL if p has
 * no kernel of that name.
 *
 *   tilec-iface 1
 *   kernel NAME
 *   generic NAME KIND [DEFAULT]     KIND: int, float, bool or type; DEFAULT as source text
 *   tensor NAME ELEM RANK [optional] ELEM: a dtype name or the name of a `type` generic
 *   scalar NAME ELEM
 *   doc TEXT                        one line per line of the `///` comment
 *   end
 *
 * in declaration order (generics first, then the parameters). */
const char *tilec_program_kernel_interface(tilec_program *p, const char *kernel);

/* Compilation target. */
typedef struct tilec_target {
    int sm;          /* 90 or 100; the "a" (architecture-specific) variants are always used */
    int opt_level;   /* 0..3; 3 is the default used by the runtime */
    int host;        /* 1: compile for the CPU emulator instead of NVPTX */
} tilec_target;

/* Result of compiling one specialisation. */
typedef struct tilec_artifact {
    char *ptx;            /* NUL-terminated PTX (NULL for host targets) */
    size_t ptx_size;
    char *object;         /* host target: an ELF object with the kernel; else NULL */
    size_t object_size;
    char *signature;      /* the signature in the text format below */
    char *entry;          /* PTX entry / host symbol name */
} tilec_artifact;

/* Compiles kernel `kernel` with generic values given as "NAME=VALUE" strings (types by name:
 * "T=bf16"; optional tensors: "mask=present" / "mask=absent"). Missing values take defaults. */
tilec_status tilec_compile(tilec_program *p, const char *kernel, const char *const *generics, int ngenerics,
                           const tilec_target *target, tilec_artifact **out);
void tilec_artifact_destroy(tilec_artifact *a);

/* ---------------------------------------------------------------------------------------
 * Signature format ("tilec-sig 1"), one item per line, tokens separated by single spaces:
 *
 *   tilec-sig 1
 *   kernel NAME
 *   entry SYMBOL                    PTX .entry name
 *   key NAME<G1=V1,G2=V2>           the specialisation (generic values as in tilec_compile)
 *   arch sm_90a | sm_100a | host
 *   threads N                       threads per block (1-D blocks)
 *   smem BYTES                      dynamic shared memory to request at launch
 *   cluster X Y Z                   (only for clustered kernels)
 *   flags [cooperative] [pdl]       (the line is present, possibly with no words)
 *   nparams N
 *   tensor I NAME DTYPE RANK ALIGN [written] [optional] [absent]
 *                                   I: position; ALIGN: byte alignment the code assumes for
 *                                   the data pointer; written: the kernel stores to it
 *   dim I AXIS EXPR                 extent of axis AXIS of tensor I (of every tensor of list I)
 *   stride I AXIS EXPR              stride (in elements) of axis AXIS of tensor I (list I)
 *   list I NAME DTYPE RANK ALIGN MAX [written]
 *                                   a list of tensors, each with this dtype, rank, the dim and
 *                                   stride lines of I, its data pointer aligned to ALIGN; at
 *                                   most MAX of them (1..4096)
 *   len I EXPR                      the number of tensors of list I
 *   scalar I NAME DTYPE
 *   grid EXPR [EXPR [EXPR]]
 *   require EXPR "MESSAGE"          checked before launch; MESSAGE escapes \" and \\
 *   end
 *
 * EXPR is a prefix S-expression:  INT | FLOAT | NAME | (OP ARG...) | (bind NAME) | any
 *   (bind NAME) binds a shape, stride or length name from the argument (the first use of a
 *   name; a list's shapes and strides bind from its first tensor, and its other tensors must
 *   equal them);
 *   any accepts any value; every other EXPR is evaluated once all names are bound and must
 *   equal the argument's value. NAME is a shape/stride name, a scalar parameter, or num_sms.
 *   OPs: + - * / % (C semantics on int64), cdiv align floordiv floormod min max,
 *   == != < <= > >= && || ! neg, and (select c a b). A float literal or float scalar makes the
 *   operation a double operation. Extents are int32, strides int64; e2m1 tensors count
 *   elements (nibbles), two per byte. Tensors without explicit strides are contiguous.
 *
 * Kernel parameter ABI, in signature order:
 *   tensor: u64 data pointer, then RANK int32 extents, then RANK int64 strides (in elements)
 *   list:   MAX u64 data pointers (one PTX parameter, .param .align 8 .b8 [8 * MAX]: the
 *           length's first, the rest 0), int32 length, then RANK int32 extents and RANK int64
 *           strides, shared by the tensors (those of the first; zeros for an empty list)
 *   scalar: its value in its natural size (bool: 1 byte, f16/bf16: 2, e4m3/e5m2/ue8m0: 1)
 * each aligned to its size, as CUDA lays out kernel parameters; at most 32764 bytes in all
 * (CUDA 12.1 and newer: more than 4096 needs such a driver).
 * --------------------------------------------------------------------------------------- */

#ifdef __cplusplus
}
#endif
#endif
