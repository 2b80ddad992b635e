/* tl_emu.h — the CPU emulator: runs kernels compiled for the host target (tilec_target.host)
 * with the GPU's execution model. Each GPU thread of a block is a fiber; barriers, warp
 * operations and grid syncs switch fibers; shared memory is a buffer per block; conversions
 * and the special instructions are bit-exact software versions (numerics/numerics.h).
 *
 * A kernel comes from an ELF object (tilec_artifact.object), loaded by a small loader of our
 * own, so that neither LLVM nor a system linker is needed at run time. A launch is synchronous:
 * it returns when every block has finished, or at the first error (deadlock, trap, failed
 * assert, divergent warp operation, shared- or global-memory access out of bounds), which it
 * describes in `err`. Shared-memory races are reported after the kernel has run to completion.
 * Nothing here exits or aborts the process. */
#ifndef TILEC_EMU_H
#define TILEC_EMU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tl_emu_status {
    TL_EMU_OK = 0,
    TL_EMU_ERROR_INVALID = 1,  /* a NULL argument, a malformed object, a bad launch configuration */
    TL_EMU_ERROR_DEADLOCK = 2, /* threads wait at a barrier that the others never reach */
    TL_EMU_ERROR_TRAP = 3,     /* trap() or a failed assert */
    TL_EMU_ERROR_WARP = 4,     /* lanes of a warp disagree on a warp operation, or one exited */
    TL_EMU_ERROR_MEMORY = 5,   /* a shared- or global-memory access out of bounds, a memory fault */
    TL_EMU_ERROR_RACE = 6,     /* the racecheck found conflicting shared-memory accesses */
    TL_EMU_ERROR_SYSTEM = 7,   /* out of memory, or a thread / mapping could not be created */
} tl_emu_status;

/* "deadlock", "trap", ...; "unknown" for other values */
const char *tl_emu_status_name(tl_emu_status s);

typedef struct tl_emu_kernel tl_emu_kernel;

/* Loads an x86-64 ELF relocatable object made by the compiler for the host target and finds
 * kernel `entry` (the entry symbol of the signature). `name` is how reports name the kernel
 * (the specialisation key, e.g. "topk_gate<E=64,K=6>"); NULL uses `entry`. The object bytes
 * are copied. On failure *out is NULL and err says why. */
tl_emu_status tl_emu_kernel_load(const void *object, size_t size, const char *entry, const char *name,
                                 tl_emu_kernel **out, char *err, size_t errcap);
/* A kernel written in C against the emulator ABI (tl_emu_abi.h), for tests of the emulator. */
tl_emu_status tl_emu_kernel_from_fn(void (*fn)(void **params), const char *name, tl_emu_kernel **out);
void tl_emu_kernel_free(tl_emu_kernel *k);
/* The address of a symbol of the loaded object (for debuggers and tests), or NULL. */
void *tl_emu_kernel_symbol(const tl_emu_kernel *k, const char *symbol);

typedef struct tl_emu_options {
    /* OS threads that run blocks in parallel; 0: $TILEC_EMU_THREADS, else the number of CPUs
     * (at most 8, and one per 4096 GPU threads of the grid). Cooperative launches always run
     * on one thread. */
    int workers;
    /* shared-memory race detection: -1: $TILEC_EMU_RACECHECK (0 or 1; default 1), 0 off, 1 on */
    int racecheck;
    /* bytes of stack per GPU thread; 0: $TILEC_EMU_STACK, else 256 KiB */
    size_t stack_size;
    /* where printf output goes; NULL: standard output. Called under a lock, one call per printf. */
    void (*output)(void *ctx, const char *text, size_t n);
    void *output_ctx;
    /* races described in err before the rest are only counted; 0: 8 */
    int max_reports;
} tl_emu_options;

/* The global memory of one tensor parameter, or of one tensor of a tensor list: the bytes
 * [base, base + bytes) that its shape and strides span. Global accesses are checked against these
 * (tl_emu_launch_config.ranges). */
typedef struct tl_emu_range {
    const void *base;   /* the lowest byte (the data pointer unless a stride is negative); NULL: absent */
    size_t bytes;       /* 0 for an empty tensor */
    const char *name;   /* the parameter, for reports; may be NULL */
    int element;        /* a tensor of a list: its index + 1 (reported as name[index]); -1 for the range
                         * after a list's, which an index outside 0 .. max - 1 takes; 0 otherwise */
    int length;         /* ... and the list's length: the ranges of the elements past it have no memory */
} tl_emu_range;

/* The range of a tensor with elements of elem_bits bits (4: two to a byte, as e2m1), shape and
 * strides in elements: element size × (1 + Σ (shape_d − 1)·stride_d) bytes, 0 when a dimension
 * is 0. A NULL data pointer gives an absent range. */
tl_emu_range tl_emu_tensor_range(const void *data, int elem_bits, int rank, const int64_t *shape,
                                 const int64_t *strides, const char *name);

typedef struct tl_emu_launch_config {
    unsigned grid[3];   /* blocks */
    unsigned block;     /* threads per block (1-D), 1..1024 */
    size_t smem;        /* bytes of shared memory per block */
    int cooperative;    /* every block resident at once (grid_sync) */
    /* one range per tensor parameter and MAX + 1 per tensor list parameter, in parameter order
     * (an absent optional tensor too; see TL_EMU_MAX_RANGES in tl_emu_abi.h); an access through a
     * tensor parameter or a list's tensor outside its range stops the launch
     * (TL_EMU_ERROR_MEMORY). NULL: global accesses are not checked. Read during the launch. */
    const tl_emu_range *ranges;
    int nranges;
} tl_emu_launch_config;

/* The MUFU units (ex2.approx.ftz behind exp, rsqrt.approx) are bit-exact with the tables
 * tests/gpu/numerics/mufu_dump measures on a GPU. Those of an H200 (numerics/data) are built
 * into the library and installed at the first launch; TILEC_EMU_MUFU=FILE[:FILE] (mufu_ex2.bin,
 * mufu_rsqrt.bin, ...) installs other measurements over them. A file that cannot be read or is
 * malformed fails that launch (TL_EMU_ERROR_INVALID). */

/* Runs the kernel. params: one pointer per kernel parameter of the ABI (compiler.h: a tensor is
 * a data pointer, its extents and its strides, each a separate parameter; a tensor list's
 * pointers are one parameter, an array of MAX of them), exactly as
 * cuLaunchKernel takes them; data pointers are host pointers. opts may be NULL. err (may be
 * NULL) receives a description of any error, several lines for deadlocks and races. */
tl_emu_status tl_emu_launch(const tl_emu_kernel *k, void **params, const tl_emu_launch_config *cfg,
                            const tl_emu_options *opts, char *err, size_t errcap);

#ifdef __cplusplus
}
#endif
#endif
