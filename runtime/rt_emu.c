/* rt_emu.c — the CPU device (TILEC_RT_CPU, TILEC_DEVICE=cpu): kernels compiled for the host
 * target run on the emulator (runtime/emu) with host pointers, synchronously. What the emulator
 * finds in a launch (deadlock, trap or failed assert, divergent warp operation, shared memory out
 * of bounds, race) comes back as TILEC_ERROR_DRIVER, where a GPU's fault would come from the
 * driver, with the emulator's description as the message. */
#include "rt_internal.h"
#include "tl_emu.h"

tilec_status rt_emu_load(tilec_rt_kernel *k, const rt_sig *sig, const void *object, size_t size)
{
    char err[1024];
    tl_emu_kernel *ek = NULL;
    tl_emu_status st = tl_emu_kernel_load(object, size, sig->entry, sig->key ? sig->key : sig->kernel, &ek, err,
                                          sizeof err);
    if (st != TL_EMU_OK)
        return rt_fail(TILEC_ERROR_INTERNAL, "loading %s<%s> into the CPU emulator: %s", k->name, k->generics, err);
    k->emu = ek;
    return TILEC_OK;
}

tilec_status rt_emu_launch(const tilec_rt_kernel *k, void **ptrs, const tilec_rt_launch_config *cfg)
{
    tl_emu_launch_config c = {{cfg->grid[0], cfg->grid[1], cfg->grid[2]}, cfg->block[0], cfg->smem, cfg->cooperative};
    static _Thread_local char err[RT_MAX_ERROR];
    tl_emu_status st = tl_emu_launch(k->emu, ptrs, &c, NULL, err, sizeof err);
    if (st == TL_EMU_OK)
        return TILEC_OK;
    return rt_fail(st == TL_EMU_ERROR_INVALID ? TILEC_ERROR_LAUNCH : TILEC_ERROR_DRIVER, "%s", err);
}

void rt_emu_free(tilec_rt_kernel *k)
{
    tl_emu_kernel_free(k->emu);
    k->emu = NULL;
}
