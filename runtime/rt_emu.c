/* rt_emu.c — the CPU device (TILEC_RT_CPU, TILEC_DEVICE=cpu): kernels compiled for the host
 * target run on the emulator (runtime/emu) with host pointers, synchronously. What the emulator
 * finds in a launch (deadlock, trap or failed assert, divergent warp operation, shared or global
 * memory out of bounds, race) comes back as TILEC_ERROR_DRIVER, where a GPU's fault would come
 * from the driver, with the emulator's description as the message. */
#include <stdlib.h>

#include "rt_internal.h"
#include "tilec/tl_emu.h"

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

tilec_status rt_emu_launch(const tilec_rt_kernel *k, const tilec_rt_arg *args, void **ptrs,
                           const tilec_rt_launch_config *cfg)
{
    /* the memory of each tensor parameter and of each tensor of a list, which the emulator checks
     * global accesses against (args have passed rt_bind: dtypes, ranks and shapes are the
     * signature's); a list has max + 1 ranges, those past its length without memory
     * (tl_emu_abi.h). The CPU device launches synchronously and may allocate. */
    const rt_sig *sig = k->sig;
    int nranges = 0;
    for (int i = 0; i < sig->nparams; i++)
        nranges += sig->params[i].kind == RT_P_LIST ? sig->params[i].max + 1 : sig->params[i].kind == RT_P_TENSOR;
    tl_emu_range *ranges = calloc((size_t)nranges + 1, sizeof *ranges);
    if (!ranges)
        return rt_fail(TILEC_ERROR_INTERNAL, "out of memory launching %s on the CPU emulator", k->name);
    int n = 0;
    for (int i = 0; i < sig->nparams; i++) {
        const rt_param *p = &sig->params[i];
        int bits = rt_dtypes[p->dtype].bits;
        if (p->kind == RT_P_LIST) {
            const tilec_rt_tensor_list *l = &args[i].u.list;
            for (int e = 0; e <= p->max; e++) {
                if (e < l->count) {
                    const tilec_rt_tensor *t = &l->tensors[e];
                    ranges[n] = tl_emu_tensor_range(t->data, bits, p->rank, t->shape, t->strides, p->name);
                } else {
                    ranges[n] = (tl_emu_range){NULL, 0, p->name, 0, 0};
                }
                ranges[n].element = e < p->max ? e + 1 : -1;
                ranges[n++].length = l->count;
            }
            continue;
        }
        if (p->kind != RT_P_TENSOR)
            continue;
        const tilec_rt_tensor *t = &args[i].u.tensor;
        if (p->flags & TILEC_RT_PARAM_ABSENT)
            ranges[n++] = (tl_emu_range){NULL, 0, p->name, 0, 0};
        else
            ranges[n++] = tl_emu_tensor_range(t->data, bits, p->rank, t->shape, t->strides, p->name);
    }
    tl_emu_launch_config c = {{cfg->grid[0], cfg->grid[1], cfg->grid[2]}, cfg->block[0], cfg->smem, cfg->cooperative,
                              ranges, n};
    static _Thread_local char err[RT_MAX_ERROR];
    tl_emu_status st = tl_emu_launch(k->emu, ptrs, &c, NULL, err, sizeof err);
    free(ranges);
    if (st == TL_EMU_OK)
        return TILEC_OK;
    return rt_fail(st == TL_EMU_ERROR_INVALID ? TILEC_ERROR_LAUNCH : TILEC_ERROR_DRIVER, "%s", err);
}

void rt_emu_free(tilec_rt_kernel *k)
{
    tl_emu_kernel_free(k->emu);
    k->emu = NULL;
}
