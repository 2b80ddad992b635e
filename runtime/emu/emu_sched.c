/* emu_sched.c — launches: blocks handed out to worker threads, one fiber per GPU thread (the
 * switches and the run queue are emu_fiber.c's), block barriers and grid syncs, thread exits,
 * special registers, traps and asserts, and deadlock reports.
 *
 * A fiber runs until it must wait (a barrier, a warp operation, a grid sync) or exits; the
 * scheduler then runs the next ready fiber of the worker. When no fiber is ready but some have
 * not exited, nothing can ever wake them: that is a deadlock, reported with what every thread
 * of the block is doing, instead of a hang. */
#include "emu_internal.h"
#include "numerics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xmmintrin.h>

const char *tl_emu_status_name(tl_emu_status s)
{
    switch (s) {
    case TL_EMU_OK: return "ok";
    case TL_EMU_ERROR_INVALID: return "invalid argument";
    case TL_EMU_ERROR_DEADLOCK: return "deadlock";
    case TL_EMU_ERROR_TRAP: return "trap";
    case TL_EMU_ERROR_WARP: return "warp operation error";
    case TL_EMU_ERROR_MEMORY: return "memory access out of bounds";
    case TL_EMU_ERROR_RACE: return "shared memory race";
    case TL_EMU_ERROR_SYSTEM: return "system error";
    }
    return "unknown";
}

/* ---------------- barriers ---------------- */

static void release_barrier(EmuBlock *b)
{
    b->at_barrier = 0;
    b->epoch = ++b->w->epoch_counter;
    for (int i = 0; i < b->nthreads; i++)
        if (b->fibers[i].state == F_BARRIER)
            emu_make_ready(b->w, &b->fibers[i]);
}

static void release_grid(EmuWorker *w)
{
    w->L->grid_arrived = 0;
    for (int bi = 0; bi < w->nblocks; bi++) {
        EmuBlock *b = &w->blocks[bi];
        b->epoch = ++w->epoch_counter;
        for (int i = 0; i < b->nthreads; i++)
            if (b->fibers[i].state == F_GRID)
                emu_make_ready(w, &b->fibers[i]);
    }
}

static EmuFiber *current(void)
{
    EmuWorker *w = emu_tls;
    if (!w || !w->cur) {
        /* only a C test kernel called outside tl_emu_launch can get here */
        fprintf(stderr, "tl_emu: an emulator function was called outside a kernel launch\n");
        abort();
    }
    return w->cur;
}

void tl_emu_barrier(uint32_t site)
{
    EmuFiber *f = current();
    EmuBlock *b = f->blk;
    f->site = site;
    if (++b->at_barrier == b->alive) {
        release_barrier(b);
        return;
    }
    emu_wait(f, F_BARRIER);
}

void tl_emu_grid_sync(uint32_t site)
{
    EmuFiber *f = current();
    EmuWorker *w = f->blk->w;
    EmuLaunch *L = w->L;
    f->site = site;
    if (!L->cfg.cooperative) {
        char bn[48];
        emu_block_name(f->blk, bn, sizeof bn);
        emu_fail(L, TL_EMU_ERROR_INVALID, "grid_sync in kernel %s (%s, thread %d) needs a cooperative launch",
                 L->k->name, bn, f->tid);
        emu_abort_fiber(f);
    }
    if (++L->grid_arrived == L->grid_alive) {
        release_grid(w);
        return;
    }
    emu_wait(f, F_GRID);
}

/* ---------------- special registers ---------------- */

uint32_t tl_emu_sreg(uint32_t which)
{
    EmuFiber *f = current();
    EmuBlock *b = f->blk;
    const tl_emu_launch_config *c = &b->w->L->cfg;
    switch (which) {
    case TL_EMU_SREG_TID_X: return (uint32_t)f->tid;
    case TL_EMU_SREG_CTAID_X: return b->ctaid[0];
    case TL_EMU_SREG_CTAID_Y: return b->ctaid[1];
    case TL_EMU_SREG_CTAID_Z: return b->ctaid[2];
    case TL_EMU_SREG_NTID_X: return c->block;
    case TL_EMU_SREG_NTID_Y:
    case TL_EMU_SREG_NTID_Z: return 1;
    case TL_EMU_SREG_NCTAID_X: return c->grid[0];
    case TL_EMU_SREG_NCTAID_Y: return c->grid[1];
    case TL_EMU_SREG_NCTAID_Z: return c->grid[2];
    default: return 0; /* tid.y, tid.z: blocks are 1-D */
    }
}

void *tl_emu_smem(void) { return current()->blk->smem; }

const char *tl_emu_where(void)
{
    static _Thread_local char buf[256];
    EmuWorker *w = emu_tls;
    if (!w || !w->cur)
        return "not in a kernel";
    EmuFiber *f = w->cur;
    char bn[48];
    emu_block_name(f->blk, bn, sizeof bn);
    snprintf(buf, sizeof buf, "kernel %s, %s, thread %d (warp %d, lane %d)", w->L->k->name, bn, f->tid, f->tid / 32,
             f->tid % 32);
    return buf;
}

/* ---------------- traps and asserts ---------------- */

_Noreturn void tl_emu_trap(uint32_t site)
{
    EmuFiber *f = current();
    EmuLaunch *L = f->blk->w->L;
    char bn[48];
    emu_block_name(f->blk, bn, sizeof bn);
    emu_fail(L, TL_EMU_ERROR_TRAP, "kernel %s trapped (%s) in %s, thread %d", L->k->name,
             emu_site(L->k, site, "trap"), bn, f->tid);
    emu_abort_fiber(f);
}

_Noreturn void tl_emu_assertfail(const char *message, const char *file, uint32_t line, const char *function,
                                 uint64_t char_size)
{
    (void)function;
    (void)char_size;
    EmuFiber *f = current();
    EmuLaunch *L = f->blk->w->L;
    char bn[48];
    emu_block_name(f->blk, bn, sizeof bn);
    emu_fail(L, TL_EMU_ERROR_TRAP, "%s:%u: assertion failed in kernel %s, %s, thread %d: %s", file ? file : "?", line,
             L->k->name, bn, f->tid, message ? message : "");
    emu_abort_fiber(f);
}

/* ---------------- fibers start and end ---------------- */

static void fiber_exit(EmuFiber *f)
{
    EmuBlock *b = f->blk;
    EmuWorker *w = b->w;
    EmuLaunch *L = w->L;
    f->state = F_EXITED;
    b->alive--;
    emu_warp_lane_exit(f);
    if (b->at_barrier > 0 && b->at_barrier == b->alive)
        release_barrier(b);
    if (L->cfg.cooperative) {
        L->grid_alive--;
        if (L->grid_arrived > 0 && L->grid_arrived == L->grid_alive)
            release_grid(w);
    }
    emu_to_scheduler(f, true);
    __builtin_unreachable();
}

static void fiber_main(void)
{
    EmuWorker *w = emu_tls;
    EmuFiber *f = w->cur;
    emu_fiber_entered(w);
    w->L->k->fn(w->L->params);
    fiber_exit(f);
}

/* ---------------- deadlock reports ---------------- */

static void describe(const EmuFiber *f, char *buf, size_t n)
{
    const tl_emu_kernel *k = f->blk->w->L->k;
    const EmuWarp *wp = &f->blk->warps[f->tid / 32];
    switch (f->state) {
    case F_BARRIER: snprintf(buf, n, "wait at %s", emu_site(k, f->site, "sync_threads")); break;
    case F_GRID: snprintf(buf, n, "wait at %s", emu_site(k, f->site, "grid_sync")); break;
    case F_WARP: {
        int lane = f->tid % 32;
        snprintf(buf, n, "wait at %s for lanes 0x%08x of warp %d",
                 emu_site(k, f->site, emu_warp_op_name(wp->op[lane], wp->mode[lane])), wp->mask[lane], f->tid / 32);
        break;
    }
    case F_EXITED: snprintf(buf, n, "have exited"); break;
    default: snprintf(buf, n, "are runnable"); break;
    }
}

static void report_deadlock(EmuWorker *w)
{
    EmuLaunch *L = w->L;
    int stuck = 0;
    EmuBlock *first = NULL;
    for (int bi = 0; bi < w->nblocks; bi++)
        if (w->blocks[bi].alive > 0) {
            stuck++;
            if (!first)
                first = &w->blocks[bi];
        }
    if (!first)
        return;
    char *msg = NULL;
    size_t len = 0;
    char bn[48];
    emu_block_name(first, bn, sizeof bn);
    emu_appendf(&msg, &len, "deadlock in kernel %s, %s: no thread can continue", L->k->name, bn);
    if (stuck > 1)
        emu_appendf(&msg, &len, " (and %d more blocks)", stuck - 1);
    int *tids = malloc(sizeof(int) * (size_t)first->nthreads);
    char *done = calloc((size_t)first->nthreads, 1);
    for (int i = 0; tids && done && i < first->nthreads; i++) {
        if (done[i])
            continue;
        char what[256], other[256];
        describe(&first->fibers[i], what, sizeof what);
        int n = 0;
        for (int j = i; j < first->nthreads; j++) {
            if (done[j])
                continue;
            describe(&first->fibers[j], other, sizeof other);
            if (!strcmp(what, other)) {
                tids[n++] = j;
                done[j] = 1;
            }
        }
        char ranges[512];
        emu_thread_ranges(ranges, sizeof ranges, tids, n);
        emu_appendf(&msg, &len, "\n  thread%s %s: %s", n > 1 ? "s" : "", ranges, what);
    }
    free(tids);
    free(done);
    emu_fail(L, TL_EMU_ERROR_DEADLOCK, "%s", msg ? msg : "deadlock");
    free(msg);
}

/* ---------------- workers ---------------- */

static void schedule(EmuWorker *w)
{
    EmuLaunch *L = w->L;
    while (!atomic_load_explicit(&L->stop, memory_order_relaxed)) {
        EmuFiber *f = emu_pop_ready(w);
        if (!f)
            break;
        emu_run_fiber(w, f);
    }
    if (!atomic_load(&L->stop))
        report_deadlock(w);
}

/* runs blocks [first, first + count) together */
static void run_group(EmuWorker *w, uint64_t first, int count)
{
    EmuLaunch *L = w->L;
    int n = (int)L->cfg.block;
    size_t smem = L->cfg.smem;
    w->nblocks = count;
    w->rhead = w->rcount = 0;
    for (int bi = 0; bi < count; bi++) {
        EmuBlock *b = &w->blocks[bi];
        uint64_t lin = first + (uint64_t)bi;
        b->w = w;
        b->ctaid[0] = (unsigned)(lin % L->cfg.grid[0]);
        b->ctaid[1] = (unsigned)(lin / L->cfg.grid[0] % L->cfg.grid[1]);
        b->ctaid[2] = (unsigned)(lin / ((uint64_t)L->cfg.grid[0] * L->cfg.grid[1]));
        b->nthreads = n;
        b->alive = n;
        b->at_barrier = 0;
        b->epoch = ++w->epoch_counter;
        b->smem = w->smem ? w->smem + (size_t)bi * smem : NULL;
        if (b->smem) /* 0xFF bytes: NaN in every float format, -1 in every integer one. A GPU's
                      * shared memory holds what the SM's last block left there, so a kernel that
                      * uses a value it never wrote must not pass here by reading zeros */
            memset(b->smem, 0xFF, smem);
        b->shadow = w->shadow ? w->shadow + (size_t)bi * smem : NULL;
        b->fibers = w->fibers + (size_t)bi * (size_t)n;
        b->warps = w->warps + (size_t)bi * (size_t)(n / 32 + 1);
        memset(b->warps, 0, sizeof(EmuWarp) * (size_t)(n / 32 + 1));
        if (n % 32) /* the lanes a partial last warp lacks count as exited */
            b->warps[n / 32].exited = ~((1u << (n % 32)) - 1);
        for (int t = 0; t < n; t++) {
            EmuFiber *f = &b->fibers[t];
            size_t slot = (size_t)bi * (size_t)n + (size_t)t;
            memset(f, 0, sizeof *f);
            f->blk = b;
            f->tid = t;
            f->stack_lo = emu_stack_lo(&w->stacks, slot);
            f->stack_size = emu_stack_size(&w->stacks);
            f->sp = emu_stack_init(f->stack_lo, f->stack_size, fiber_main);
            emu_make_ready(w, f);
        }
    }
    L->grid_alive = (uint64_t)count * (uint64_t)n;
    L->grid_arrived = 0;
    schedule(w);
}

static bool worker_alloc(EmuWorker *w, int resident)
{
    EmuLaunch *L = w->L;
    size_t nf = (size_t)resident * L->cfg.block;
    w->blocks = calloc((size_t)resident, sizeof(EmuBlock));
    w->fibers = calloc(nf, sizeof(EmuFiber));
    w->warps = calloc((size_t)resident * (L->cfg.block / 32 + 1), sizeof(EmuWarp));
    w->ready = calloc(nf, sizeof(EmuFiber *));
    w->rcap = nf;
    if (L->cfg.smem) {
        w->smem = aligned_alloc(128, ((size_t)resident * L->cfg.smem + 127) & ~(size_t)127);
        if (L->racecheck)
            w->shadow = calloc((size_t)resident * L->cfg.smem, sizeof(EmuShadow));
    }
    if (!w->blocks || !w->fibers || !w->warps || !w->ready || (L->cfg.smem && !w->smem) ||
        (L->cfg.smem && L->racecheck && !w->shadow))
        return false;
    return emu_stacks_get(&w->stacks, nf, L->stack_size);
}

static void worker_free(EmuWorker *w)
{
    free(w->blocks);
    free(w->fibers);
    free(w->warps);
    free(w->ready);
    free(w->smem);
    free(w->shadow);
    emu_stacks_put(&w->stacks);
}

static void *worker_main(void *arg)
{
    EmuWorker *w = arg;
    EmuLaunch *L = w->L;
    /* the GPU's arithmetic: round to nearest, no flush-to-zero, no denormals-are-zero, whatever
     * the calling program set */
    unsigned csr = _mm_getcsr();
    _mm_setcsr(0x1F80);
    void *alt = NULL;
    stack_t old_alt;
    emu_altstack_push(&alt, &old_alt); /* without one a stack overflow kills the process */
    emu_tls = w;
    int resident = L->cfg.cooperative ? (int)L->nblocks : 1;
    if (!worker_alloc(w, resident)) {
        emu_fail(L, TL_EMU_ERROR_SYSTEM, "out of memory for %d block(s) of %u threads (%zu bytes of stack each)",
                 resident, L->cfg.block, L->stack_size);
    } else if (L->cfg.cooperative) {
        run_group(w, 0, resident);
    } else {
        while (!atomic_load(&L->stop)) {
            uint64_t i = atomic_fetch_add(&L->next_block, 1);
            if (i >= L->nblocks)
                break;
            run_group(w, i, 1);
        }
    }
    worker_free(w);
    emu_tls = NULL;
    emu_altstack_pop(alt, &old_alt);
    _mm_setcsr(csr);
    return NULL;
}

/* ---------------- launch ---------------- */

static long env_long(const char *name, long dflt)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end == 'k' || *end == 'K')
        v <<= 10;
    else if (*end == 'm' || *end == 'M')
        v <<= 20;
    return v;
}

/* The measured MUFU tables, installed once per process: those built into the library
 * (numerics/data), then any that TILEC_EMU_MUFU=FILE[:FILE] names, which replace them */
static pthread_once_t mufu_once = PTHREAD_ONCE_INIT;
static char mufu_error[512];

static void mufu_install(void)
{
    char why[256];
    if (tl_num_mufu_install_builtin(why, sizeof why) < 0) {
        snprintf(mufu_error, sizeof mufu_error, "built-in MUFU tables: %s", why);
        return;
    }
    const char *env = getenv("TILEC_EMU_MUFU");
    if (!env || !*env)
        return;
    char *list = strdup(env);
    for (char *path = list ? strtok(list, ":") : NULL; path; path = strtok(NULL, ":")) {
        FILE *f = fopen(path, "rb");
        void *blob = NULL;
        long n = -1;
        if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
            (blob = malloc((size_t)n)) && fread(blob, 1, (size_t)n, f) == (size_t)n) {
            char err[256];
            if (tl_num_mufu_install(blob, (size_t)n, err, sizeof err) != 0)
                snprintf(mufu_error, sizeof mufu_error, "TILEC_EMU_MUFU: %s: %s", path, err);
        } else {
            snprintf(mufu_error, sizeof mufu_error, "TILEC_EMU_MUFU: cannot read '%s'", path);
        }
        free(blob);
        if (f)
            fclose(f);
        if (mufu_error[0])
            break;
    }
    free(list);
}

static void set_err(char *err, size_t cap, const char *msg)
{
    if (err && cap) {
        snprintf(err, cap, "%s", msg);
    }
}

tl_emu_status tl_emu_launch(const tl_emu_kernel *k, void **params, const tl_emu_launch_config *cfg,
                            const tl_emu_options *opts, char *err, size_t errcap)
{
    if (err && errcap)
        err[0] = 0;
    if (!k || !cfg) {
        set_err(err, errcap, "tl_emu_launch: NULL kernel or configuration");
        return TL_EMU_ERROR_INVALID;
    }
    if (cfg->block < 1 || cfg->block > 1024) {
        char m[128];
        snprintf(m, sizeof m, "tl_emu_launch: %u threads per block (1 to 1024 are possible)", cfg->block);
        set_err(err, errcap, m);
        return TL_EMU_ERROR_INVALID;
    }
    if (cfg->smem > ((size_t)1 << 30)) {
        set_err(err, errcap, "tl_emu_launch: more than 1 GiB of shared memory per block");
        return TL_EMU_ERROR_INVALID;
    }
    if (cfg->nranges < 0 || (cfg->nranges > 0 && !cfg->ranges)) {
        set_err(err, errcap, "tl_emu_launch: a negative number of ranges, or NULL ranges");
        return TL_EMU_ERROR_INVALID;
    }
    pthread_once(&mufu_once, mufu_install);
    if (mufu_error[0]) {
        set_err(err, errcap, mufu_error);
        return TL_EMU_ERROR_INVALID;
    }
    uint64_t nblocks = (uint64_t)cfg->grid[0] * cfg->grid[1] * cfg->grid[2];
    if (nblocks == 0)
        return TL_EMU_OK;
    tl_emu_options o = {0};
    if (opts)
        o = *opts;
    EmuLaunch L;
    memset(&L, 0, sizeof L);
    L.k = k;
    L.params = params;
    L.cfg = *cfg;
    L.nblocks = nblocks;
    long nw = o.workers > 0 ? o.workers : env_long("TILEC_EMU_THREADS", 0);
    if (nw <= 0) {
        /* a thread costs more to start than a few thousand GPU threads take to run */
        nw = sysconf(_SC_NPROCESSORS_ONLN);
        if (nw > 8)
            nw = 8;
        uint64_t enough = (nblocks * cfg->block + 4095) / 4096;
        if ((uint64_t)nw > enough)
            nw = (long)enough;
    }
    if (nw < 1)
        nw = 1;
    if ((uint64_t)nw > nblocks)
        nw = (long)nblocks;
    if (cfg->cooperative)
        nw = 1;
    L.workers = (int)nw;
    L.racecheck = o.racecheck >= 0 ? o.racecheck != 0 : env_long("TILEC_EMU_RACECHECK", 1) != 0;
    L.max_reports = o.max_reports > 0 ? o.max_reports : 8;
    long st = o.stack_size ? (long)o.stack_size : env_long("TILEC_EMU_STACK", 256 << 10);
    if (st < (64 << 10))
        st = 64 << 10;
    if (cfg->cooperative && nblocks * cfg->block > 16384 && st > (64 << 10))
        st = 64 << 10; /* every thread of the grid is resident */
    L.stack_size = (size_t)st;
    L.output = o.output;
    L.output_ctx = o.output_ctx;
    L.granges = malloc(sizeof(uint64_t) * 2 * TL_EMU_MAX_RANGES);
    if (!L.granges) {
        set_err(err, errcap, "tl_emu_launch: out of memory");
        return TL_EMU_ERROR_SYSTEM;
    }
    emu_global_setup(&L);
    atomic_init(&L.next_block, 0);
    atomic_init(&L.stop, 0);
    pthread_mutex_init(&L.lock, NULL);

    EmuWorker *ws = calloc((size_t)L.workers, sizeof(EmuWorker));
    if (!ws) {
        pthread_mutex_destroy(&L.lock);
        free(L.granges);
        set_err(err, errcap, "tl_emu_launch: out of memory");
        return TL_EMU_ERROR_SYSTEM;
    }
    emu_fault_enter();
    int started = 0;
    for (int i = 1; i < L.workers; i++) {
        ws[i].L = &L;
        ws[i].index = i;
        if (pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]) != 0)
            break;
        started++;
    }
    ws[0].L = &L;
    EmuWorker *outer = emu_tls; /* a launch from inside a kernel is not possible, but keep it intact */
    worker_main(&ws[0]);
    emu_tls = outer;
    for (int i = 1; i <= started; i++)
        pthread_join(ws[i].thread, NULL);
    emu_fault_leave();
    free(ws);

    tl_emu_status s = L.status;
    if (s != TL_EMU_OK) {
        set_err(err, errcap, L.msg ? L.msg : tl_emu_status_name(s));
    } else if (L.nraces > 0) {
        s = TL_EMU_ERROR_RACE;
        char *m = NULL;
        size_t len = 0;
        emu_appendf(&m, &len, "%s", L.races ? L.races : "");
        if (L.nraces > L.max_reports)
            emu_appendf(&m, &len, "\n(%d more races not shown)", L.nraces - L.max_reports);
        set_err(err, errcap, m ? m : "shared memory race");
        free(m);
    }
    free(L.msg);
    free(L.races);
    free(L.granges);
    pthread_mutex_destroy(&L.lock);
    return s;
}
