/* emu_warp.c — warp operations (bar.warp.sync, shfl.sync, vote.sync, match.any.sync): each lane
 * of the member mask deposits its operands and waits; the last lane to arrive computes every
 * lane's result with the PTX semantics and wakes the others. Lanes that disagree on the
 * operation or the mask, and lanes that exit while others wait for them, are errors (the GPU's
 * behaviour is undefined there), reported instead of hanging. */
#include "emu_internal.h"

#include <stdio.h>

const char *emu_warp_op_name(int op, int mode)
{
    static const char *shfl[] = {"shfl_up", "shfl_down", "shfl_xor", "shfl"};
    static const char *vote[] = {"ballot", "vote.all", "vote.any", "vote.uni"};
    switch (op) {
    case WOP_SYNC: return "sync_warp";
    case WOP_SHFL: return mode < 4 ? shfl[mode] : "shfl";
    case WOP_VOTE: return mode < 4 ? vote[mode] : "vote";
    case WOP_MATCH: return "match_any";
    default: return "a warp operation";
    }
}

/* shfl.sync's source lane, as the PTX ISA defines it: c holds the clamp value (bits 4..0) and
 * the segment mask (bits 12..8) */
static int shfl_source(int lane, uint32_t mode, uint32_t b, uint32_t c)
{
    int bval = (int)(b & 31), cval = (int)(c & 31), seg = (int)((c >> 8) & 31);
    int max_lane = (lane & seg) | (cval & ~seg);
    int min_lane = lane & seg;
    int j;
    bool ok;
    switch (mode) {
    case TL_EMU_SHFL_UP: j = lane - bval; ok = j >= max_lane; break;
    case TL_EMU_SHFL_DOWN: j = lane + bval; ok = j <= max_lane; break;
    case TL_EMU_SHFL_BFLY: j = lane ^ bval; ok = j <= max_lane; break;
    default: j = min_lane | (bval & ~seg); ok = j <= max_lane; break;
    }
    return ok ? j : lane;
}

static void complete(EmuBlock *blk, EmuWarp *wp, int warp, uint32_t mask, int op, uint32_t mode)
{
    EmuFiber *base = &blk->fibers[warp * 32];
    for (int lane = 0; lane < 32; lane++) {
        if (!(mask >> lane & 1))
            continue;
        uint64_t r = 0;
        switch (op) {
        case WOP_SHFL: {
            int j = shfl_source(lane, mode, wp->b[lane], wp->c[lane]);
            /* a source outside the member mask is unpredictable on the GPU; this reads its own */
            r = (mask >> j & 1) ? wp->val[j] : wp->val[lane];
            break;
        }
        case WOP_VOTE: {
            uint32_t set = 0;
            for (int k = 0; k < 32; k++)
                if ((mask >> k & 1) && wp->val[k])
                    set |= 1u << k;
            switch (mode) {
            case TL_EMU_VOTE_BALLOT: r = set; break;
            case TL_EMU_VOTE_ALL: r = set == mask; break;
            case TL_EMU_VOTE_ANY: r = set != 0; break;
            default: r = set == mask || set == 0; break;
            }
            break;
        }
        case WOP_MATCH: {
            uint32_t same = 0;
            for (int k = 0; k < 32; k++)
                if ((mask >> k & 1) && wp->val[k] == wp->val[lane])
                    same |= 1u << k;
            r = same;
            break;
        }
        default: break;
        }
        base[lane].result = r;
    }
    if (op == WOP_SYNC)
        wp->sync_gen++;
}

static _Noreturn void warp_fail(EmuFiber *f, const char *what)
{
    EmuLaunch *L = f->blk->w->L;
    char bn[48];
    emu_block_name(f->blk, bn, sizeof bn);
    emu_fail(L, TL_EMU_ERROR_WARP, "kernel %s, %s, thread %d (warp %d, lane %d): %s", L->k->name, bn, f->tid,
             f->tid / 32, f->tid % 32, what);
    emu_abort_fiber(f);
}

uint64_t emu_warp_op(EmuFiber *f, int op, uint32_t mode, uint32_t mask, uint64_t val, uint32_t b, uint32_t c,
                     uint32_t site)
{
    EmuBlock *blk = f->blk;
    int warp = f->tid / 32, lane = f->tid % 32;
    EmuWarp *wp = &blk->warps[warp];
    uint32_t bit = 1u << lane;
    const char *name = emu_site(blk->w->L->k, site, emu_warp_op_name(op, (int)mode));
    f->site = site;
    char what[512];
    if (!(mask & bit)) {
        snprintf(what, sizeof what, "%s with member mask 0x%08x, which leaves out the calling lane", name, mask);
        warp_fail(f, what);
    }
    if (mask & wp->exited) {
        snprintf(what, sizeof what, "%s with member mask 0x%08x names lanes that have exited (lane %d first)", name,
                 mask, __builtin_ctz(mask & wp->exited));
        warp_fail(f, what);
    }
    uint32_t waiting = wp->pending & mask;
    for (int k = 0; k < 32; k++)
        if ((waiting >> k & 1) && (wp->mask[k] != mask || wp->op[k] != op || wp->mode[k] != mode)) {
            snprintf(what, sizeof what, "%s (member mask 0x%08x) while lane %d of the warp waits at %s (member mask 0x%08x)",
                     name, mask, k,
                     emu_site(blk->w->L->k, blk->fibers[warp * 32 + k].site, emu_warp_op_name(wp->op[k], wp->mode[k])),
                     wp->mask[k]);
            warp_fail(f, what);
        }
    wp->op[lane] = (uint8_t)op;
    wp->mode[lane] = (uint8_t)mode;
    wp->mask[lane] = mask;
    wp->val[lane] = val;
    wp->b[lane] = b;
    wp->c[lane] = c;
    wp->pending |= bit;
    if ((wp->pending & mask) == mask) {
        complete(blk, wp, warp, mask, op, mode);
        wp->pending &= ~mask;
        for (int k = 0; k < 32; k++)
            if ((mask >> k & 1) && k != lane)
                emu_make_ready(blk->w, &blk->fibers[warp * 32 + k]);
        return f->result;
    }
    emu_wait(f, F_WARP);
    return f->result;
}

void emu_warp_lane_exit(EmuFiber *f)
{
    EmuBlock *blk = f->blk;
    EmuWarp *wp = &blk->warps[f->tid / 32];
    uint32_t bit = 1u << (f->tid % 32);
    wp->exited |= bit;
    for (int k = 0; k < 32; k++)
        if ((wp->pending >> k & 1) && (wp->mask[k] & bit)) {
            EmuLaunch *L = blk->w->L;
            char bn[48];
            emu_block_name(blk, bn, sizeof bn);
            const EmuFiber *o = &blk->fibers[(f->tid / 32) * 32 + k];
            emu_fail(L, TL_EMU_ERROR_WARP,
                     "kernel %s, %s: thread %d exited while lane %d of its warp waits for it at %s "
                     "(member mask 0x%08x)",
                     L->k->name, bn, f->tid, k, emu_site(L->k, o->site, emu_warp_op_name(wp->op[k], wp->mode[k])),
                     wp->mask[k]);
            return;
        }
}

static EmuFiber *cur_fiber(void)
{
    EmuWorker *w = emu_tls;
    return w ? w->cur : NULL;
}

void tl_emu_warp_sync(uint32_t mask, uint32_t site)
{
    EmuFiber *f = cur_fiber();
    if (f)
        emu_warp_op(f, WOP_SYNC, 0, mask, 0, 0, 0, site);
}

uint32_t tl_emu_shfl(uint32_t mode, uint32_t mask, uint32_t value, uint32_t b, uint32_t c, uint32_t site)
{
    EmuFiber *f = cur_fiber();
    return f ? (uint32_t)emu_warp_op(f, WOP_SHFL, mode & 3, mask, value, b, c, site) : value;
}

uint32_t tl_emu_vote(uint32_t mode, uint32_t mask, uint32_t pred, uint32_t site)
{
    EmuFiber *f = cur_fiber();
    return f ? (uint32_t)emu_warp_op(f, WOP_VOTE, mode & 3, mask, pred != 0, 0, 0, site) : 0;
}

uint32_t tl_emu_match_any(uint32_t mask, uint64_t value, uint32_t site)
{
    EmuFiber *f = cur_fiber();
    return f ? (uint32_t)emu_warp_op(f, WOP_MATCH, 0, mask, value, 0, 0, site) : 0;
}
