/* emu_warp.c — warp operations (bar.warp.sync, shfl.sync, vote.sync, match.any.sync, and the
 * tensor-core mma.sync and ldmatrix): each lane of the member mask deposits its operands and
 * waits; the last lane to arrive computes every lane's result with the PTX semantics and wakes
 * the others. Lanes that disagree on the operation or the mask, and lanes that exit while others
 * wait for them, are errors (the GPU's behaviour is undefined there), reported instead of
 * hanging. mma and ldmatrix deposit the address of their operands on the lane's stack, where the
 * results go too: a block's fibers share one OS thread, and a waiting fiber's stack stays. */
#include "emu_internal.h"
#include "numerics.h"

#include <stdio.h>
#include <string.h>

const char *emu_warp_op_name(int op, int mode)
{
    static const char *shfl[] = {"shfl_up", "shfl_down", "shfl_xor", "shfl"};
    static const char *vote[] = {"ballot", "vote.all", "vote.any", "vote.uni"};
    switch (op) {
    case WOP_SYNC: return "sync_warp";
    case WOP_SHFL: return mode < 4 ? shfl[mode] : "shfl";
    case WOP_VOTE: return mode < 4 ? vote[mode] : "vote";
    case WOP_MATCH: return "match_any";
    case WOP_MMA: return "mma.sync";
    case WOP_LDMATRIX: return "ldmatrix";
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

/* an ldmatrix lane's operands: its row address (lanes 0 .. 8N-1) and where its registers go */
typedef struct LdmLane {
    const uint8_t *row;
    uint32_t *out;
} LdmLane;

static const TlNumMma mma_forms[TL_EMU_MMA_COUNT] = {
    [TL_EMU_MMA_F16] = TL_NUM_MMA_F16, [TL_EMU_MMA_BF16] = TL_NUM_MMA_BF16, [TL_EMU_MMA_TF32] = TL_NUM_MMA_TF32,
    [TL_EMU_MMA_E4M3] = TL_NUM_MMA_E4M3, [TL_EMU_MMA_E5M2] = TL_NUM_MMA_E5M2};

/* the whole warp's mma: the lanes' regs[10] (A 0..3, B 4..5, C 6..9) -> D in regs[6..9] */
static void complete_mma(EmuWarp *wp, uint32_t form)
{
    uint32_t a[32][4], b[32][2], c[32][4], d[32][4];
    for (int l = 0; l < 32; l++) {
        const uint32_t *r = (const uint32_t *)(uintptr_t)wp->val[l];
        memcpy(a[l], r, sizeof a[l]);
        memcpy(b[l], r + 4, sizeof b[l]);
        memcpy(c[l], r + 6, sizeof c[l]);
    }
    tl_num_mma_m16n8(mma_forms[form], a, b, c, d);
    for (int l = 0; l < 32; l++)
        memcpy((uint32_t *)(uintptr_t)wp->val[l] + 6, d[l], sizeof d[l]);
}

/* ldmatrix: matrix i is the 8 rows lanes 8i .. 8i+7 point at, 8 b16 each; lane (g, t) = (l / 4,
 * l % 4) receives row g, elements 2t and 2t+1 of each, or with .trans column g, rows 2t, 2t+1 */
static void complete_ldmatrix(EmuWarp *wp, uint32_t mode)
{
    int num = (int)(mode & 7);
    bool trans = mode & 8;
    for (int i = 0; i < num; i++) {
        uint16_t m[8][8];
        for (int r = 0; r < 8; r++)
            memcpy(m[r], ((const LdmLane *)(uintptr_t)wp->val[8 * i + r])->row, 16);
        for (int l = 0; l < 32; l++) {
            int g = l / 4, t = l % 4;
            uint32_t lo = trans ? m[2 * t][g] : m[g][2 * t], hi = trans ? m[2 * t + 1][g] : m[g][2 * t + 1];
            ((const LdmLane *)(uintptr_t)wp->val[l])->out[i] = lo | hi << 16;
        }
    }
}

static void complete(EmuBlock *blk, EmuWarp *wp, int warp, uint32_t mask, int op, uint32_t mode)
{
    EmuFiber *base = &blk->fibers[warp * 32];
    if (op == WOP_MMA) {
        complete_mma(wp, mode);
        return;
    }
    if (op == WOP_LDMATRIX) {
        complete_ldmatrix(wp, mode);
        return;
    }
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

void tl_emu_mma(uint32_t form, uint32_t *regs, uint32_t site)
{
    EmuFiber *f = cur_fiber();
    if (!f)
        return;
    if (form >= TL_EMU_MMA_COUNT)
        warp_fail(f, "mma.sync of an unknown form");
    emu_warp_op(f, WOP_MMA, form, 0xFFFFFFFFu, (uint64_t)(uintptr_t)regs, 0, 0, site);
}

void tl_emu_ldmatrix(uint32_t mode, const void *row, uint32_t *out, uint32_t site)
{
    EmuFiber *f = cur_fiber();
    if (!f)
        return;
    int num = (int)(mode & 7);
    if (num != 1 && num != 2 && num != 4)
        warp_fail(f, "ldmatrix with a matrix count other than 1, 2 or 4");
    if (f->tid % 32 < 8 * num) { /* this lane gives a row: it reads 16 bytes of shared memory */
        if ((uintptr_t)row % 16) {
            char what[160];
            snprintf(what, sizeof what, "%s: the row address is not 16-byte aligned",
                     emu_site(f->blk->w->L->k, site, "ldmatrix"));
            warp_fail(f, what);
        }
        tl_emu_shared_access(row, 16, TL_EMU_READ, site);
    }
    LdmLane lane = {row, out};
    emu_warp_op(f, WOP_LDMATRIX, mode & 15, 0xFFFFFFFFu, (uint64_t)(uintptr_t)&lane, 0, 0, site);
}
