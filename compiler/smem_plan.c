/* smem_plan.c — places shared tiles in dynamic shared memory: each tile at a 16-byte aligned
 * offset, rows padded where the layout pass asked for it; all compiler scratch buffers share one
 * region after the tiles (their uses are separated by barriers). */
#include "tir.h"

static int64_t tile_bytes(const TBuf *b)
{
    int64_t n = 1;
    for (int d = 0; d < b->rank; d++)
        n *= b->shape[d] + (d == b->rank - 1 ? b->row_pad : 0);
    if (b->dt == DT_E2M1)
        return (n + 1) / 2;
    return n * dtype_storage_bytes(b->dt);
}

bool pass_smem_plan(TKernel *k)
{
    int64_t off = 0, scratch = 0;
    for (int i = 0; i < k->nbufs; i++) {
        TBuf *b = k->bufs[i];
        if (b->scope != SC_SHARED || b->scratch)
            continue;
        b->smem_offset = off;
        off += (tile_bytes(b) + 15) & ~(int64_t)15;
    }
    for (int i = 0; i < k->nbufs; i++) {
        TBuf *b = k->bufs[i];
        if (b->scope != SC_SHARED || !b->scratch)
            continue;
        b->smem_offset = off;
        int64_t n = tile_bytes(b);
        if (n > scratch)
            scratch = n;
    }
    k->smem_bytes = off + ((scratch + 15) & ~(int64_t)15);
    /* sm_90 and sm_100 alike: 227 KiB per block, 228 KiB per SM of which the hardware keeps
     * 1 KiB for each resident block */
    enum { SMEM_PER_BLOCK = 232448, SMEM_PER_SM = 233472, SMEM_RESERVED_PER_BLOCK = 1024 };
    const int64_t limit = SMEM_PER_BLOCK;
    if (k->smem_bytes > limit) {
        /* the specialisation matters when there is one: its generics set the tile sizes */
        diag_error(k->diag, k->item->name.loc,
                   "kernel '%s' needs %lld bytes of shared memory; a block can have at most %lld",
                   k->item->ngenerics ? k->key : k->name,
                   (long long)k->smem_bytes, (long long)limit);
        return false;
    }
    if (k->blocks_per_sm > 0 && k->blocks_per_sm * (k->smem_bytes + SMEM_RESERVED_PER_BLOCK) > SMEM_PER_SM) {
        diag_error(k->diag, k->item->launch.blocks_per_sm->loc,
                   "blocks_per_sm(%d) cannot be met: kernel '%s' needs %lld bytes of shared memory per block, "
                   "and %d blocks of it (with the 1 KiB the hardware keeps for each) exceed an SM's 228 KiB",
                   k->blocks_per_sm, k->item->ngenerics ? k->key : k->name, (long long)k->smem_bytes,
                   k->blocks_per_sm);
        return false;
    }
    return true;
}
