/* emu_fault.c — memory faults in kernel code: an invalid global access or a fiber's stack
 * overflowing into its guard page raises SIGSEGV / SIGBUS on the worker thread. While launches
 * run, a handler (on an alternate signal stack, since the fiber's stack may be the problem)
 * reports the fault with the kernel, block and thread, and abandons the fiber, so that the
 * launch fails instead of the process dying. Faults outside kernel code go to the handler that
 * was installed before. */
#include "emu_internal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;
static int fault_users;
static struct sigaction old_segv, old_bus;

static bool in_guard(const EmuWorker *w, uintptr_t a)
{
    const EmuStacks *s = &w->stacks;
    if (!s->guards || a < (uintptr_t)s->base || a >= (uintptr_t)s->base + s->each * s->count)
        return false;
    return (a - (uintptr_t)s->base) % s->each < 4096;
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    EmuWorker *w = emu_tls;
    EmuFiber *f = w ? w->cur : NULL;
    if (!f) {
        /* not ours: let the previous disposition see the fault again */
        struct sigaction *old = sig == SIGSEGV ? &old_segv : &old_bus;
        if (old->sa_flags & SA_SIGINFO) {
            if (old->sa_sigaction) {
                old->sa_sigaction(sig, si, uc);
                return;
            }
        } else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
            old->sa_handler(sig);
            return;
        }
        signal(sig, SIG_DFL);
        return;
    }
    EmuLaunch *L = w->L;
    uintptr_t a = (uintptr_t)si->si_addr;
    char bn[48];
    emu_block_name(f->blk, bn, sizeof bn);
    if (in_guard(w, a))
        emu_fail(L, TL_EMU_ERROR_MEMORY,
                 "kernel %s, %s, thread %d: stack overflow (the emulator gives each thread %zu bytes; set "
                 "TILEC_EMU_STACK for more)",
                 L->k->name, bn, f->tid, f->stack_size);
    else
        emu_fail(L, TL_EMU_ERROR_MEMORY, "kernel %s, %s, thread %d: invalid memory access at address 0x%llx (%s)",
                 L->k->name, bn, f->tid, (unsigned long long)a, sig == SIGBUS ? "bus error" : "segmentation fault");
    /* leave the handler for good: unblock the signal that the kernel blocked while it runs,
     * then continue in the scheduler as if the fiber had aborted */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGSEGV);
    sigaddset(&set, SIGBUS);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    emu_abort_fiber(f);
}

void emu_fault_enter(void)
{
    pthread_mutex_lock(&fault_lock);
    if (fault_users++ == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fault;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, &old_segv);
        sigaction(SIGBUS, &sa, &old_bus);
    }
    pthread_mutex_unlock(&fault_lock);
}

void emu_fault_leave(void)
{
    pthread_mutex_lock(&fault_lock);
    if (--fault_users == 0) {
        sigaction(SIGSEGV, &old_segv, NULL);
        sigaction(SIGBUS, &old_bus, NULL);
    }
    pthread_mutex_unlock(&fault_lock);
}

bool emu_altstack_push(void **mem, stack_t *old)
{
    size_t size = 64 << 10;
    *mem = malloc(size);
    if (!*mem)
        return false;
    stack_t ss = {.ss_sp = *mem, .ss_size = size, .ss_flags = 0};
    if (sigaltstack(&ss, old) != 0) {
        free(*mem);
        *mem = NULL;
        return false;
    }
    return true;
}

void emu_altstack_pop(void *mem, const stack_t *old)
{
    if (!mem)
        return;
    stack_t cur;
    /* restore what the thread had (an empty one is disabled) */
    if (old->ss_flags & SS_DISABLE) {
        stack_t off = {.ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE};
        sigaltstack(&off, &cur);
    } else {
        sigaltstack(old, &cur);
    }
    free(mem);
}
