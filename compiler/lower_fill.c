/* lower_fill.c — fill(dst, v): every register of a frag, or every element of a shared or local
 * tile region, spread over the threads by a default layout (one replica of a replicated element
 * stores). */
#include "tir.h"

static TExpr *ic(TKernel *k, int64_t v) { return tx_const_int(k, DT_I32, v); }

/* (a fill cannot fail once its destination has a layout: ok stays) */
TStmt *lower_fill(TKernel *k, TStmt *s, bool *ok)
{
    (void)ok;
    TStmt *out = ts_seq(k);
    TBuf *b = s->dst.buf;
    if (b->scope == SC_FRAG) {
        for (int r = 0; r < b->layout->nregs; r++)
            ts_push(k, out, ts_frag_reg_store(k, b, r, s->e));
        return out;
    }
    Region *dst = &s->dst;
    int64_t shape[TL_MAX_RANK];
    for (int i = 0; i < dst->rank; i++)
        shape[i] = dst->extent[i];
    int nt = b->scope == SC_LOCAL ? 1 : k->nthreads;
    Layout *lay = layout_default(k->arena, dst->rank, shape, nt, 1, 0, 0);
    for (int r = 0; r < lay->nregs; r++) {
        TExpr *idx[TL_MAX_RANK];
        for (int d = 0; d < b->rank; d++)
            idx[d] = dst->start[d];
        for (int i = 0; i < dst->rank; i++) {
            TExpr *c = b->scope == SC_LOCAL ? ic(k, layout_reg_coord(lay, r, i))
                                            : tx_bin(k, OP_ADD, layout_thread_coord(k, lay, i), ic(k, layout_reg_coord(lay, r, i)));
            idx[dst->src_dim[i]] = tx_bin(k, OP_ADD, dst->start[dst->src_dim[i]], c);
        }
        TStmt *st = ts_store(k, b, idx, b->rank, s->e);
        ts_push(k, out, b->scope == SC_LOCAL ? st : ts_guard(k, layout_leader_pred(k, lay), st));
    }
    return out;
}
