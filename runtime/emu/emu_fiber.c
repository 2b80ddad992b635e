/* emu_fiber.c — fibers: a hand-written x86-64 context switch (six callee-saved registers and the
 * stack pointer; no signal mask, unlike swapcontext, which makes a system call per switch), the
 * stacks, with a guard page below each, kept in a pool between launches, and a worker's switches
 * between its scheduler and its fibers, with its queue of fibers ready to run. */
#include "emu_internal.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_ASAN 1
#endif
#endif
#ifdef EMU_ASAN
/* AddressSanitizer must be told about stack switches, or it sees one stack overflowing into
 * another */
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old, size_t *size_old);
#endif

_Thread_local EmuWorker *emu_tls;

#if defined(__x86_64__)

/* emu_ctx_switch(save = rdi, to = rsi) */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl emu_ctx_switch\n"
        ".hidden emu_ctx_switch\n"
        ".type emu_ctx_switch, @function\n"
        "emu_ctx_switch:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size emu_ctx_switch, .-emu_ctx_switch\n"
        ".section .note.GNU-stack,\"\",@progbits\n"
        ".text\n");

void *emu_stack_init(char *lo, size_t size, void (*entry)(void))
{
    uintptr_t top = ((uintptr_t)lo + size) & ~(uintptr_t)15;
    void **sp = (void **)top;
    *--sp = NULL;            /* entry's return address: never used; keeps the ABI's alignment */
    *--sp = (void *)entry;   /* where the first switch's `ret` goes */
    for (int i = 0; i < 6; i++)
        *--sp = NULL;        /* rbp (0 ends a debugger's backtrace), rbx, r12-r15 */
    return sp;
}

#else
#error "the emulator needs an x86-64 host (the compiler emits x86-64 code for it)"
#endif

bool emu_stacks_reserve(EmuStacks *s, size_t count, size_t size)
{
    size = (size + 4095) & ~(size_t)4095;
    if (s->base && s->count >= count && s->each - (s->guards ? 4096 : 0) == size)
        return true;
    emu_stacks_release(s);
    /* guard pages split the mapping into two areas per fiber; the kernel limits how many areas a
     * process may have, so very large (cooperative) launches go without them */
    bool guards = count <= 16384;
    size_t each = size + (guards ? 4096 : 0);
    void *p = mmap(NULL, each * count, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return false;
    s->base = p;
    s->each = each;
    s->count = count;
    s->guards = guards;
    if (guards)
        for (size_t i = 0; i < count; i++)
            mprotect(s->base + i * each, 4096, PROT_NONE);
    return true;
}

void emu_stacks_release(EmuStacks *s)
{
    if (s->base)
        munmap(s->base, s->each * s->count);
    memset(s, 0, sizeof *s);
}

/* Stacks outlive launches: mapping them, placing the guard pages and faulting their first pages
 * in again cost more than a small launch itself (7 ms for a block of 1024 threads). A few sets
 * are kept for the next launches. */
enum { POOL = 8 };
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static EmuStacks pool[POOL];

bool emu_stacks_get(EmuStacks *s, size_t count, size_t size)
{
    size = (size + 4095) & ~(size_t)4095;
    pthread_mutex_lock(&pool_lock);
    int best = -1;
    for (int i = 0; i < POOL; i++)
        if (pool[i].base && pool[i].count >= count && emu_stack_size(&pool[i]) == size &&
            (best < 0 || pool[i].count < pool[best].count))
            best = i;
    if (best >= 0) {
        *s = pool[best];
        memset(&pool[best], 0, sizeof pool[best]);
    }
    pthread_mutex_unlock(&pool_lock);
    return best >= 0 || emu_stacks_reserve(s, count, size);
}

void emu_stacks_put(EmuStacks *s)
{
    if (!s->base)
        return;
    pthread_mutex_lock(&pool_lock);
    for (int i = 0; i < POOL && s->base; i++)
        if (!pool[i].base && s->count <= 16384) { /* the huge sets of cooperative launches go back */
            pool[i] = *s;
            memset(s, 0, sizeof *s);
        }
    pthread_mutex_unlock(&pool_lock);
    emu_stacks_release(s);
}

/* ---------------- a worker's switches between its scheduler and its fibers ---------------- */

void emu_fiber_entered(EmuWorker *w)
{
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(NULL, &w->sched_lo, &w->sched_size);
#else
    (void)w;
#endif
}

void emu_run_fiber(EmuWorker *w, EmuFiber *f)
{
    w->cur = f;
    f->state = F_RUNNING;
#ifdef EMU_ASAN
    __sanitizer_start_switch_fiber(&w->asan_fake, f->stack_lo, f->stack_size);
#endif
    emu_ctx_switch(&w->sched_sp, f->sp);
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(w->asan_fake, NULL, NULL);
#endif
    w->cur = NULL;
}

void emu_to_scheduler(EmuFiber *f, bool final)
{
    EmuWorker *w = f->blk->w;
#ifdef EMU_ASAN
    __sanitizer_start_switch_fiber(final ? NULL : &f->asan_fake, w->sched_lo, w->sched_size);
#else
    (void)final;
#endif
    emu_ctx_switch(&f->sp, w->sched_sp);
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(f->asan_fake, &w->sched_lo, &w->sched_size);
#endif
}

void emu_make_ready(EmuWorker *w, EmuFiber *f)
{
    f->state = F_READY;
    w->ready[(w->rhead + w->rcount++) % w->rcap] = f;
}

EmuFiber *emu_pop_ready(EmuWorker *w)
{
    if (!w->rcount)
        return NULL;
    EmuFiber *f = w->ready[w->rhead];
    w->rhead = (w->rhead + 1) % w->rcap;
    w->rcount--;
    return f;
}

void emu_wait(EmuFiber *f, int state)
{
    f->state = state;
    emu_to_scheduler(f, false);
}

_Noreturn void emu_abort_fiber(EmuFiber *f)
{
    f->state = F_ABORTED;
    emu_to_scheduler(f, true);
    __builtin_unreachable();
}
