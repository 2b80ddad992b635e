/* emu_internal.h — the emulator's shared state: loaded kernels, fibers, blocks, workers and
 * one launch; the pieces (loader, fibers, scheduler, reports, warp operations, racecheck, global
 * bounds check, faults, printf, numerics) each live in their own emu_*.c file. */
#ifndef TILEC_EMU_INTERNAL_H
#define TILEC_EMU_INTERNAL_H

#include "tilec/tl_emu.h"
#include "tilec/tl_emu_abi.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- loaded kernels (emu_loader.c) ---- */

/* a shared buffer of the kernel, for naming addresses in race reports */
typedef struct EmuSmemBuf {
    char name[64];
    char dtype[8];
    uint64_t offset, bytes;
    int elem_bytes;       /* 0 for e2m1 (two per byte) */
    int rank;
    int64_t shape[6];     /* padded innermost extent included in strides, not in shape */
    int64_t row_pad;
} EmuSmemBuf;

struct tl_emu_kernel {
    void (*fn)(void **params);
    char *name;
    /* the mapping of the loaded object (NULL for kernels from C functions) */
    void *map;
    size_t map_size;
    char **syms;          /* defined symbol names and addresses, for tl_emu_kernel_symbol */
    void **sym_addr;
    int nsyms;
    char **sites;         /* "what (file:line:col)" per site id */
    int nsites;
    EmuSmemBuf *smem_bufs;
    int nsmem_bufs;
    void *gdb_entry;      /* registration with gdb's JIT interface */
};

/* "what at file:line:col" of a site, or a generic text */
static inline const char *emu_site(const tl_emu_kernel *k, uint32_t site, const char *fallback)
{
    if (k && site < (uint32_t)k->nsites && k->sites[site][0])
        return k->sites[site];
    return fallback;
}

/* ---- fibers (emu_fiber.c) ---- */

typedef struct EmuStacks {
    char *base;
    size_t each;          /* bytes per fiber, guard page included */
    size_t count;
    bool guards;
} EmuStacks;

/* A context switch: saves the callee-saved registers and the stack pointer in *save, then
 * continues on the stack `to` (a pointer saved by an earlier switch or made by emu_stack_init). */
void emu_ctx_switch(void **save, void *to);
/* A fresh stack whose first switch-in calls entry(), which must never return. */
void *emu_stack_init(char *lo, size_t size, void (*entry)(void));
bool emu_stacks_reserve(EmuStacks *s, size_t count, size_t size);
void emu_stacks_release(EmuStacks *s);
/* From / back to a process-wide pool of stack sets kept between launches. */
bool emu_stacks_get(EmuStacks *s, size_t count, size_t size);
void emu_stacks_put(EmuStacks *s);
static inline char *emu_stack_lo(const EmuStacks *s, size_t i) { return s->base + i * s->each + (s->guards ? 4096 : 0); }
static inline size_t emu_stack_size(const EmuStacks *s) { return s->each - (s->guards ? 4096 : 0); }

/* ---- execution state (emu_sched.c) ---- */

enum { F_READY, F_RUNNING, F_BARRIER, F_WARP, F_GRID, F_EXITED, F_ABORTED };

typedef struct EmuBlock EmuBlock;
typedef struct EmuWorker EmuWorker;
typedef struct EmuLaunch EmuLaunch;

typedef struct EmuFiber {
    void *sp;             /* saved stack pointer while switched out */
    EmuBlock *blk;
    char *stack_lo;
    size_t stack_size;
    void *asan_fake;
    uint64_t result;      /* result of the warp operation it waited for */
    uint32_t site;        /* where it waits */
    int tid;
    int state;
} EmuFiber;

/* warp operations */
enum { WOP_NONE, WOP_SYNC, WOP_SHFL, WOP_VOTE, WOP_MATCH, WOP_MMA, WOP_LDMATRIX };

typedef struct EmuWarp {
    uint32_t pending;     /* lanes waiting at a warp operation */
    uint32_t exited;
    uint32_t sync_gen;    /* completed warp syncs, for the racecheck's ordering */
    uint8_t op[32], mode[32];
    uint32_t mask[32], b[32], c[32];
    uint64_t val[32];     /* mma / ldmatrix: the address of the lane's operands */
} EmuWarp;

/* racecheck shadow of one byte of shared memory */
typedef struct EmuShadow {
    uint32_t w_epoch, r_epoch, a_epoch;
    uint16_t w_tid, r1_tid, r2_tid, a1_tid, a2_tid;
    uint16_t w_ws, r1_ws, r2_ws, a1_ws, a2_ws;
    uint16_t w_site, r1_site, r2_site, a1_site, a2_site;
} EmuShadow;

struct EmuBlock {
    EmuWorker *w;
    unsigned ctaid[3];
    int nthreads, alive, at_barrier;
    uint32_t epoch;       /* racecheck: barrier interval, unique within the worker */
    uint8_t *smem;
    EmuShadow *shadow;
    EmuFiber *fibers;
    EmuWarp *warps;
};

struct EmuWorker {
    EmuLaunch *L;
    void *sched_sp;
    const void *sched_lo;
    size_t sched_size;
    void *asan_fake;
    EmuFiber *cur;
    EmuBlock *blocks;     /* resident blocks: 1, or the whole grid for cooperative launches */
    int nblocks;
    EmuFiber **ready;     /* ring of runnable fibers */
    size_t rcap, rhead, rcount;
    EmuStacks stacks;
    EmuFiber *fibers;
    EmuWarp *warps;
    uint8_t *smem;
    EmuShadow *shadow;
    uint32_t epoch_counter;
    pthread_t thread;
    int index;
};

struct EmuLaunch {
    const tl_emu_kernel *k;
    void **params;
    tl_emu_launch_config cfg;
    uint64_t nblocks;
    int workers;
    bool racecheck;
    int max_reports;
    size_t stack_size;
    void (*output)(void *ctx, const char *text, size_t n);
    void *output_ctx;
    atomic_uint_fast64_t next_block;
    atomic_int stop;
    pthread_mutex_t lock;
    tl_emu_status status;  /* the first error */
    char *msg;             /* its text (malloc'd) */
    char *races;           /* race reports (malloc'd) */
    size_t races_len;
    int nraces;
    uint32_t seen[256];    /* reported (site, other site) pairs */
    int nseen;
    uint64_t grid_alive, grid_arrived;
    uint64_t *granges;   /* tl_emu_global_ranges: 2 * TL_EMU_MAX_RANGES */
};

/* ---- a worker's switches between its scheduler and its fibers (emu_fiber.c) ---- */

/* the worker running on this OS thread, NULL outside a launch */
extern _Thread_local EmuWorker *emu_tls;

/* scheduler -> fiber f, until f waits, exits or aborts */
void emu_run_fiber(EmuWorker *w, EmuFiber *f);
/* fiber -> scheduler; `final`: the fiber never runs again */
void emu_to_scheduler(EmuFiber *f, bool final);
/* the first thing a fiber does on its new stack */
void emu_fiber_entered(EmuWorker *w);
/* the worker's queue of fibers ready to run */
void emu_make_ready(EmuWorker *w, EmuFiber *f);
EmuFiber *emu_pop_ready(EmuWorker *w);
/* Suspends the current fiber in `state` until another makes it ready. */
void emu_wait(EmuFiber *f, int state);
/* Ends the current fiber after an error: it never runs again. */
_Noreturn void emu_abort_fiber(EmuFiber *f);

/* ---- reports (emu_report.c) ---- */

/* Records the launch's first error (later ones are dropped) and stops the launch. */
void emu_fail(EmuLaunch *L, tl_emu_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "block (x,y,z)", and runs of thread indices: "0-31, 40, 64-95" */
void emu_block_name(const EmuBlock *b, char *buf, size_t n);
void emu_thread_ranges(char *buf, size_t n, const int *tids, int count);
/* appends to a malloc'd string */
void emu_appendf(char **s, size_t *len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- warp operations (emu_warp.c) ---- */
uint64_t emu_warp_op(EmuFiber *f, int op, uint32_t mode, uint32_t mask, uint64_t val, uint32_t b, uint32_t c,
                     uint32_t site);
void emu_warp_lane_exit(EmuFiber *f);
const char *emu_warp_op_name(int op, int mode);

/* ---- memory faults in kernel code (emu_fault.c) ---- */
/* Installs the fault handler while at least one launch runs (process-wide, reference counted). */
void emu_fault_enter(void);
void emu_fault_leave(void);
/* An alternate signal stack for the calling worker thread, and back. */
bool emu_altstack_push(void **mem, stack_t *old);
void emu_altstack_pop(void *mem, const stack_t *old);

/* ---- racecheck (emu_race.c) ---- */
void emu_race_access(EmuFiber *f, uint64_t offset, uint32_t size, uint32_t kind, uint32_t site);
/* "reads", "writes", "atomically updates" (TL_EMU_READ ...) */
const char *emu_access_verb(uint32_t kind);

/* ---- global bounds check (emu_global.c) ---- */
/* Fills L->granges from L->cfg.ranges. */
void emu_global_setup(EmuLaunch *L);

#endif
