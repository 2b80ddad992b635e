/* lower_reduce.c — reduce_{sum,max,min,absmax}(src, dst, dim = d[, group = g]) on frags: a
 * thread combines its registers that map to one result, then lanes combine with xor shuffles
 * (the part of a reduced thread mode within a warp), then the warps' partial results meet
 * through shared scratch. */
#include "tir.h"

typedef struct ReduceLowering {
    TKernel *k;
    bool ok;
} ReduceLowering;

static TExpr *i32c(ReduceLowering *L, int64_t v) { return tx_const_int(L->k, DT_I32, v); }

static TExpr *combine(ReduceLowering *L, RedOp op, TExpr *a, TExpr *b)
{
    TKernel *k = L->k;
    if (op == RED_SUM)
        return tx_bin(k, OP_ADD, a, b);
    TExpr *args[2] = {a, b};
    return tx_call(k, op == RED_MIN ? BI_MIN : BI_MAX, a->dt, args, 2);
}

static TExpr *prepare(ReduceLowering *L, RedOp op, TExpr *x, DType acc)
{
    x = tx_cvt(L->k, acc, x, RND_DEFAULT);
    if (op == RED_ABSMAX)
        return tx_call(L->k, BI_ABS, acc, &x, 1);
    return x;
}

static TBuf *scratch(ReduceLowering *L, DType dt, int64_t n)
{
    TKernel *k = L->k;
    TBuf *b = tir_buf(k, "scratch", SC_SHARED, dt, 1, &n);
    b->scratch = true;
    return b;
}

/* Beyond this many shared-memory reads per thread (digits x result registers), the warps'
 * partial results are combined in two steps (exchange_split) instead of by every thread. */
enum { SPLIT_EXCHANGE_READS = 16 };

/* `base`: the thread whose digit of mode m is zero, among those that share this thread's result */
static TVar *base_thread(ReduceLowering *L, TStmt *out, TExpr *tid, const LMode *m)
{
    TKernel *k = L->k;
    TExpr *digit = tx_bin(k, OP_MOD, tx_bin(k, OP_DIV, tid, i32c(L, m->div)), i32c(L, m->size));
    TVar *v = tir_var(k, "base", DT_I32, false);
    ts_push(k, out, ts_decl(k, v, tx_bin(k, OP_SUB, tid, tx_bin(k, OP_MUL, digit, i32c(L, m->div)))));
    return v;
}

/* The warps' partial results of a reduction through shared memory, every thread reading all of
 * them: scratch[r][t], then each thread combines the digits of mode m in order. */
static void exchange_all(ReduceLowering *L, TStmt *out, RedOp red, DType acc, TVar **accv, int ndst, const LMode *m)
{
    TKernel *k = L->k;
    TBuf *typed = scratch(L, acc, (int64_t)ndst * k->nthreads);
    TExpr *tid = tx_special(k, SP_TID_X);
    for (int r = 0; r < ndst; r++) {
        TExpr *ix = tx_bin(k, OP_ADD, i32c(L, (int64_t)r * k->nthreads), tid);
        ts_push(k, out, ts_store(k, typed, &ix, 1, tx_var(k, accv[r])));
    }
    ts_push(k, out, ts_barrier(k));
    TVar *bv = base_thread(L, out, tid, m);
    for (int r = 0; r < ndst; r++) {
        for (int d = 0; d < m->size; d++) {
            TExpr *ix = tx_bin(k, OP_ADD, tx_var(k, bv), i32c(L, (int64_t)r * k->nthreads + (int64_t)d * m->div));
            TExpr *v = tx_load(k, typed, &ix, 1);
            if (d == 0)
                ts_push(k, out, ts_assign(k, accv[r], v));
            else
                ts_push(k, out, ts_assign(k, accv[r], combine(L, red, tx_var(k, accv[r]), v)));
        }
    }
    ts_push(k, out, ts_barrier(k));
}

/* The same in two steps, for many digits or registers: scratch[t][r] (a thread's registers side
 * by side); then one thread per result (register r of base thread b: the reduced digit zero)
 * combines the digits in the same order as exchange_all, so sums round alike, and writes the
 * result over digit 0's slot; then every thread reads its results. Per thread that is about
 * ndst + size * ndst * bases / nthreads reads instead of size * ndst (H200 SASS, per-channel
 * SwiGLU tile: 64 loads and 56 maxima per thread before). */
static void exchange_split(ReduceLowering *L, TStmt *out, RedOp red, DType acc, TVar **accv, int ndst, const LMode *m)
{
    TKernel *k = L->k;
    TBuf *typed = scratch(L, acc, (int64_t)ndst * k->nthreads);
    TExpr *tid = tx_special(k, SP_TID_X);
    for (int r = 0; r < ndst; r++) {
        TExpr *ix = tx_bin(k, OP_ADD, tx_bin(k, OP_MUL, tid, i32c(L, ndst)), i32c(L, r));
        ts_push(k, out, ts_store(k, typed, &ix, 1, tx_var(k, accv[r])));
    }
    ts_push(k, out, ts_barrier(k));
    int64_t results = (int64_t)ndst * (k->nthreads / m->size);
    for (int64_t j0 = 0; j0 < results; j0 += k->nthreads) {
        /* result j = j0 + tid: base b = j / ndst, register r = j % ndst; the b-th base thread is
         * tb = (b / div) * (div * size) + b % div */
        TExpr *j = tx_bin(k, OP_ADD, tid, i32c(L, j0));
        TStmt *body = ts_seq(k);
        TVar *bv = tir_var(k, "b", DT_I32, false), *rv = tir_var(k, "r", DT_I32, false);
        TVar *tbv = tir_var(k, "tb", DT_I32, false), *av = tir_var(k, "acc", acc, true);
        ts_push(k, body, ts_decl(k, bv, tx_bin(k, OP_DIV, j, i32c(L, ndst))));
        ts_push(k, body, ts_decl(k, rv, tx_bin(k, OP_MOD, j, i32c(L, ndst))));
        TExpr *tb = tx_bin(k, OP_ADD,
                           tx_bin(k, OP_MUL, tx_bin(k, OP_DIV, tx_var(k, bv), i32c(L, m->div)),
                                  i32c(L, (int64_t)m->div * m->size)),
                           tx_bin(k, OP_MOD, tx_var(k, bv), i32c(L, m->div)));
        ts_push(k, body, ts_decl(k, tbv, tb));
        for (int d = 0; d < m->size; d++) {
            TExpr *ix = tx_bin(k, OP_ADD,
                               tx_bin(k, OP_MUL, tx_bin(k, OP_ADD, tx_var(k, tbv), i32c(L, (int64_t)d * m->div)),
                                      i32c(L, ndst)),
                               tx_var(k, rv));
            TExpr *v = tx_load(k, typed, &ix, 1);
            ts_push(k, body, d == 0 ? ts_decl(k, av, v) : ts_assign(k, av, combine(L, red, tx_var(k, av), v)));
        }
        TExpr *ox = tx_bin(k, OP_ADD, tx_bin(k, OP_MUL, tx_var(k, tbv), i32c(L, ndst)), tx_var(k, rv));
        ts_push(k, body, ts_store(k, typed, &ox, 1, tx_var(k, av)));
        if (j0 + k->nthreads > results) {
            TStmt *i = ts_if(k, tx_bin(k, OP_LT, j, i32c(L, results)));
            ts_push(k, i, body);
            body = i;
        }
        ts_push(k, out, body);
    }
    ts_push(k, out, ts_barrier(k));
    TVar *basev = base_thread(L, out, tid, m);
    for (int r = 0; r < ndst; r++) {
        TExpr *ix = tx_bin(k, OP_ADD, tx_bin(k, OP_MUL, tx_var(k, basev), i32c(L, ndst)), i32c(L, r));
        ts_push(k, out, ts_assign(k, accv[r], tx_load(k, typed, &ix, 1)));
    }
    ts_push(k, out, ts_barrier(k));
}

static TStmt *reduce(ReduceLowering *L, TStmt *s)
{
    TKernel *k = L->k;
    TStmt *out = ts_seq(k);
    TBuf *src = s->src.buf, *dst = s->dst.buf;
    int group = s->group;
    Layout *ref = layout_refine_for_reduce(k->arena, src->layout, s->dim, group);
    Layout *dl = dst->layout;
    if (!ref || !dl) {
        diag_ice(k->diag, "lower_tiles", "reduction without a layout");
        L->ok = false;
        return out;
    }
    DType acc = dst->dt;
    int ndst = dl->nregs;
    TVar **accv = ARENA_ARRAY(k->arena, TVar *, ndst);
    bool *init = ARENA_ARRAY(k->arena, bool, ndst);
    /* 1. within the thread: registers mapping to the same result */
    for (int r = 0; r < ref->nregs; r++) {
        int64_t c[TL_MAX_RANK], dc[TL_MAX_RANK];
        layout_coord(ref, 0, r, c);
        /* result coordinate for thread 0; the register index is the same for every thread */
        for (int d = 0, o = 0; d < ref->rank; d++) {
            if (d == s->dim) {
                if (group)
                    dc[o++] = c[d] / group;
                continue;
            }
            dc[o++] = c[d];
        }
        if (dl->rank == 1 && ref->rank == 1 && !group)
            dc[0] = 0;
        int dr = layout_find_reg(dl, 0, dc);
        if (dr < 0) {
            diag_ice(k->diag, "lower_tiles", "reduction register mapping failed");
            L->ok = false;
            return out;
        }
        TExpr *x = prepare(L, s->red, tx_frag_reg(L->k, src, r), acc);
        if (!init[dr]) {
            accv[dr] = tir_var(k, "acc", acc, true);
            ts_push(k, out, ts_decl(k, accv[dr], x));
            init[dr] = true;
        } else {
            ts_push(k, out, ts_assign(k, accv[dr], combine(L, s->red, tx_var(k, accv[dr]), x)));
        }
    }
    /* 2. across threads: the reduced thread modes. The part of a mode whose lanes lie within a
     * warp (its lowest power-of-two digits) is combined with shuffles; what remains (the warps'
     * partial results) goes through shared memory, one value per warp instead of one per lane. */
    for (int i = 0; i < ref->nmodes; i++) {
        const LMode *mode = &ref->modes[i];
        if (!mode->thread || mode->dim != s->dim || (group && mode->stride * mode->size > group))
            continue;
        LMode rest = *mode;
        int inner = 1;
        if (tl_is_pow2(mode->div) && dtype_bits(acc) >= 32)
            while (mode->size % (inner * 2) == 0 && (int64_t)mode->div * inner * 2 <= 32)
                inner *= 2;
        for (int off = mode->div; off < mode->div * inner; off *= 2) {
            for (int r = 0; r < ndst; r++) {
                TExpr *args[2] = {tx_var(k, accv[r]), i32c(L, off)};
                TExpr *sh = tx_call(k, BI_SHFL_XOR, acc, args, 2);
                ts_push(k, out, ts_assign(k, accv[r], combine(L, s->red, tx_var(k, accv[r]), sh)));
            }
        }
        if (inner == mode->size)
            continue;
        rest.size = mode->size / inner;
        rest.div = mode->div * inner;
        const LMode *m = &rest;
        /* through shared memory */
        if ((int64_t)m->size * ndst >= SPLIT_EXCHANGE_READS)
            exchange_split(L, out, s->red, acc, accv, ndst, m);
        else
            exchange_all(L, out, s->red, acc, accv, ndst, m);
        ts_push(k, out, ts_barrier(k));
    }
    /* 3. the result */
    for (int r = 0; r < ndst; r++) {
        if (!init[r]) {
            diag_ice(k->diag, "lower_tiles", "reduction result register %d has no source", r);
            L->ok = false;
            return out;
        }
        TExpr *v = tx_var(k, accv[r]);
        if (!s->clear)
            v = combine(L, s->red, tx_frag_reg(L->k, dst, r), v);
        ts_push(k, out, ts_frag_reg_store(L->k, dst, r, v));
    }
    return out;
}

TStmt *lower_reduce(TKernel *k, TStmt *s, bool *ok)
{
    ReduceLowering L = {k, true};
    TStmt *out = reduce(&L, s);
    if (!L.ok)
        *ok = false;
    return out;
}
