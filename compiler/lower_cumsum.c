/* lower_cumsum.c — cumsum(src, dst, dim = d[, exclusive]) on frags: prefix sums along one
 * dimension of any layout the layout pass produces.
 *
 * The position along d is a mixed-radix number whose digits are the layout's modes of d (register
 * digits and thread digits, sorted by stride). The scan goes up the digits, lowest stride first,
 * carrying for every register two values: B, the total of the block of elements that agree with
 * it on all digits from the current one up (the sum over the digits below), and P, the sum of
 * the elements before it that the digits so far have accounted for. At a digit of size S:
 *   P += sum of B over the digit values below this element's;  B = sum of B over all S values.
 * Register digits are done inside the thread; lane digits with warp shuffles (a Hillis-Steele
 * scan with shfl.up, then the exclusive part and the total with one shuffle each); warp digits
 * through shared scratch: every thread stores its B, one barrier, and each warp scans the S warp
 * totals in its first S lanes with shuffles (or, when other dimensions share the warp, each
 * thread adds the S values itself). The result is P + x (inclusive) or P (exclusive).
 * Integers narrower than 32 bits are summed in 32 bits and truncated (the same result modulo
 * 2^n); f16/bf16 are summed in f32. Registers whose B values coincide share their shuffles. */
#include "tir.h"

#include <string.h>

typedef struct CS {
    TKernel *k;
    TStmt *out;
    DType acc;
    int n;             /* registers */
    TVar **B, **P;     /* per register; P NULL while still 0 */
} CS;

static TExpr *ic(TKernel *k, int64_t v) { return tx_const_int(k, DT_I32, v); }

static TVar *let(CS *C, const char *name, TExpr *e)
{
    TVar *v = tir_var(C->k, name, e->dt, false);
    ts_push(C->k, C->out, ts_decl(C->k, v, e));
    return v;
}

static TExpr *zero(CS *C)
{
    return dtype_is_float(C->acc) ? tx_const_float(C->k, C->acc, 0) : tx_const_int(C->k, C->acc, 0);
}

static TExpr *sum(CS *C, TExpr *a, TExpr *b) { return a ? tx_bin(C->k, OP_ADD, a, b) : b; }

static void add_p(CS *C, int r, TVar *e)
{
    C->P[r] = let(C, "pre", C->P[r] ? tx_bin(C->k, OP_ADD, tx_var(C->k, C->P[r]), tx_var(C->k, e)) : tx_var(C->k, e));
}

static TExpr *digit_of(CS *C, const LMode *m, int nthreads)
{
    TKernel *k = C->k;
    TExpr *t = tx_special(k, SP_TID_X);
    if (m->div > 1)
        t = tx_bin(k, OP_DIV, t, ic(k, m->div));
    if ((int64_t)m->div * m->size < nthreads)
        t = tx_bin(k, OP_MOD, t, ic(k, m->size));
    return t;
}

/* index of v among the distinct B variables so far (adding it), for shared shuffles */
static int distinct(TVar **seen, int *nseen, TVar *v)
{
    for (int i = 0; i < *nseen; i++)
        if (seen[i] == v)
            return i;
    seen[*nseen] = v;
    return (*nseen)++;
}

/* a register digit: sums over registers, no communication */
static void reg_level(CS *C, const LMode *m, bool need_total)
{
    TKernel *k = C->k;
    TVar **nb = ARENA_ARRAY(k->arena, TVar *, C->n);
    /* groups with the same B variables compute the same sums once */
    TVar ***memo_in = ARENA_ARRAY(k->arena, TVar **, C->n);
    TVar ***memo_pre = ARENA_ARRAY(k->arena, TVar **, C->n);
    int nmemo = 0;
    for (int r0 = 0; r0 < C->n; r0++) {
        if ((r0 / m->div) % m->size)
            continue; /* not the first register of its group */
        TVar **in = ARENA_ARRAY(k->arena, TVar *, m->size);
        for (int v = 0; v < m->size; v++)
            in[v] = C->B[r0 + v * m->div];
        TVar **pre = NULL;
        for (int i = 0; i < nmemo && !pre; i++)
            if (!memcmp(memo_in[i], in, sizeof(TVar *) * (size_t)m->size))
                pre = memo_pre[i];
        if (!pre) {
            /* pre[v] = B[0] + ... + B[v-1]; pre[size] = the group's total */
            pre = ARENA_ARRAY(k->arena, TVar *, m->size + 1);
            TExpr *run = NULL;
            for (int v = 0; v < m->size; v++) {
                if (v > 0)
                    pre[v] = let(C, "part", run);
                run = sum(C, v > 0 ? tx_var(k, pre[v]) : NULL, tx_var(k, in[v]));
            }
            pre[m->size] = need_total ? let(C, "total", run) : NULL;
            memo_in[nmemo] = in;
            memo_pre[nmemo++] = pre;
        }
        for (int v = 0; v < m->size; v++) {
            int r = r0 + v * m->div;
            if (v > 0)
                add_p(C, r, pre[v]);
            nb[r] = pre[m->size];
        }
    }
    memcpy(C->B, nb, sizeof(TVar *) * (size_t)C->n);
}

static TExpr *shfl(CS *C, int bi, TExpr *v, TExpr *lane)
{
    TExpr *args[2] = {v, lane};
    return tx_call(C->k, bi, v->dt, args, 2);
}

/* Inclusive scan of x over `size` lanes spaced `stride` apart, whose digit is `digit`: lanes
 * with digit >= off add the value `off` positions below. */
static TVar *warp_scan(CS *C, TVar *x, TExpr *digit, int size, int stride)
{
    TKernel *k = C->k;
    TVar *incl = x;
    for (int off = 1; off < size; off *= 2) {
        TExpr *y = shfl(C, BI_SHFL_UP, tx_var(k, incl), ic(k, (int64_t)off * stride));
        TExpr *take = tx_bin(k, OP_GE, digit, ic(k, off));
        incl = let(C, "scan", tx_select(k, take, tx_bin(k, OP_ADD, tx_var(k, incl), y), tx_var(k, incl)));
    }
    return incl;
}

/* a lane digit: shuffles within the warp */
static void lane_level(CS *C, const LMode *m, int nthreads, bool need_total)
{
    TKernel *k = C->k;
    TVar **seen = ARENA_ARRAY(k->arena, TVar *, C->n);
    TVar **ex = ARENA_ARRAY(k->arena, TVar *, C->n), **tot = ARENA_ARRAY(k->arena, TVar *, C->n);
    int nseen = 0;
    TVar *digit = let(C, "digit", digit_of(C, m, nthreads));
    TVar *lane = NULL;
    for (int r = 0; r < C->n; r++) {
        int before = nseen;
        int j = distinct(seen, &nseen, C->B[r]);
        if (j < before)
            continue;
        TVar *incl = warp_scan(C, C->B[r], tx_var(k, digit), m->size, m->div);
        /* the exclusive part: exact by subtraction for integers, one more shuffle for floats */
        if (dtype_is_float(C->acc)) {
            TExpr *up = shfl(C, BI_SHFL_UP, tx_var(k, incl), ic(k, m->div));
            ex[j] = let(C, "excl", tx_select(k, tx_bin(k, OP_EQ, tx_var(k, digit), ic(k, 0)), zero(C), up));
        } else {
            ex[j] = let(C, "excl", tx_bin(k, OP_SUB, tx_var(k, incl), tx_var(k, C->B[r])));
        }
        if (need_total) {
            if (!lane)
                lane = let(C, "lane", tx_bin(k, OP_MOD, tx_special(k, SP_TID_X), ic(k, 32)));
            /* the lane of this group whose digit is size - 1 holds the total */
            TExpr *last = tx_bin(k, OP_ADD, tx_var(k, lane),
                                 tx_bin(k, OP_MUL, tx_bin(k, OP_SUB, ic(k, m->size - 1), tx_var(k, digit)), ic(k, m->div)));
            tot[j] = let(C, "total", shfl(C, BI_SHFL, tx_var(k, incl), last));
        }
    }
    for (int r = 0; r < C->n; r++) {
        int j = distinct(seen, &nseen, C->B[r]);
        add_p(C, r, ex[j]);
        C->B[r] = need_total ? tot[j] : NULL;
    }
}

/* a digit across warps (or any digit shuffles cannot do): through shared scratch */
static void shared_level(CS *C, const Layout *l, const LMode *m, bool need_total, bool warp_fast)
{
    TKernel *k = C->k;
    int nt = l->nthreads;
    TVar **seen = ARENA_ARRAY(k->arena, TVar *, C->n);
    int nseen = 0;
    for (int r = 0; r < C->n; r++)
        distinct(seen, &nseen, C->B[r]);
    int64_t words = (int64_t)nseen * nt;
    TBuf *scr = tir_buf(k, "scratch", SC_SHARED, C->acc, 1, &words);
    scr->scratch = true;
    TExpr *tid = tx_special(k, SP_TID_X);
    /* every user of the scratch region ends with a barrier after its reads, so writing is safe */
    for (int j = 0; j < nseen; j++) {
        TExpr *ix = tx_bin(k, OP_ADD, ic(k, (int64_t)j * nt), tid);
        ts_push(k, C->out, ts_store(k, scr, &ix, 1, tx_var(k, seen[j])));
    }
    ts_push(k, C->out, ts_barrier(k));
    TVar *digit = let(C, "digit", digit_of(C, m, nt));
    TVar **ex = ARENA_ARRAY(k->arena, TVar *, nseen), **tot = ARENA_ARRAY(k->arena, TVar *, nseen);
    if (warp_fast) {
        /* every thread of a warp has the same B: lane v < S fetches the total of warp digit v */
        TVar *lane = let(C, "lane", tx_bin(k, OP_MOD, tid, ic(k, 32)));
        TExpr *wbase = tx_bin(k, OP_SUB, tid, tx_var(k, lane));
        TVar *base = let(C, "base", tx_bin(k, OP_SUB, wbase, tx_bin(k, OP_MUL, tx_var(k, digit), ic(k, m->div))));
        TExpr *args[2] = {tx_var(k, lane), ic(k, m->size - 1)};
        TVar *v = let(C, "v", tx_call(k, BI_MIN, DT_I32, args, 2));
        TExpr *inrange = tx_bin(k, OP_LT, tx_var(k, lane), ic(k, m->size));
        for (int j = 0; j < nseen; j++) {
            TExpr *ix = tx_bin(k, OP_ADD, tx_bin(k, OP_ADD, tx_var(k, base), ic(k, (int64_t)j * nt)),
                               tx_bin(k, OP_MUL, tx_var(k, v), ic(k, m->div)));
            TVar *w = let(C, "wtotal", tx_select(k, inrange, tx_load(k, scr, &ix, 1), zero(C)));
            TVar *incl = warp_scan(C, w, tx_var(k, lane), m->size, 1);
            TExpr *below = tx_bin(k, OP_SUB, tx_var(k, digit), ic(k, 1));
            TExpr *from = tx_select(k, tx_bin(k, OP_EQ, tx_var(k, digit), ic(k, 0)), ic(k, 0), below);
            TExpr *e = shfl(C, BI_SHFL, tx_var(k, incl), from);
            ex[j] = let(C, "excl", tx_select(k, tx_bin(k, OP_EQ, tx_var(k, digit), ic(k, 0)), zero(C), e));
            if (need_total)
                tot[j] = let(C, "total", shfl(C, BI_SHFL, tx_var(k, incl), ic(k, m->size - 1)));
        }
    } else {
        /* each thread adds the S values of its own group in order */
        TVar *base = let(C, "base", tx_bin(k, OP_SUB, tid, tx_bin(k, OP_MUL, tx_var(k, digit), ic(k, m->div))));
        for (int j = 0; j < nseen; j++) {
            TVar *e = tir_var(k, "excl", C->acc, true), *t = tir_var(k, "total", C->acc, true);
            ts_push(k, C->out, ts_decl(k, e, zero(C)));
            ts_push(k, C->out, ts_decl(k, t, zero(C)));
            for (int v = 0; v < m->size; v++) {
                TExpr *ix = tx_bin(k, OP_ADD, tx_var(k, base), ic(k, (int64_t)j * nt + (int64_t)v * m->div));
                TVar *x = let(C, "w", tx_load(k, scr, &ix, 1));
                TExpr *before = tx_bin(k, OP_LT, ic(k, v), tx_var(k, digit));
                ts_push(k, C->out, ts_assign(k, e, tx_select(k, before, tx_bin(k, OP_ADD, tx_var(k, e), tx_var(k, x)), tx_var(k, e))));
                if (need_total)
                    ts_push(k, C->out, ts_assign(k, t, tx_bin(k, OP_ADD, tx_var(k, t), tx_var(k, x))));
            }
            ex[j] = e;
            tot[j] = t;
        }
    }
    ts_push(k, C->out, ts_barrier(k)); /* reads done before the scratch region is reused */
    for (int r = 0; r < C->n; r++) {
        int j = distinct(seen, &nseen, C->B[r]);
        add_p(C, r, ex[j]);
        C->B[r] = need_total ? tot[j] : NULL;
    }
}

/* Splits thread modes that cross the lane / warp boundary, so that each digit is either within a
 * warp (shuffles) or across warps (shared memory). */
static bool split_warp(Layout *l)
{
    Layout out = *l;
    out.nmodes = 0;
    for (int i = 0; i < l->nmodes; i++) {
        LMode m = l->modes[i];
        if (!m.thread || m.div >= 32 || (int64_t)m.div * m.size <= 32) {
            out.modes[out.nmodes++] = m;
            continue;
        }
        if (32 % m.div || m.size % (32 / m.div) || out.nmodes + 2 > 24)
            return false;
        LMode lo = m, hi = m;
        lo.size = 32 / m.div;
        hi.size = m.size / lo.size;
        hi.div = 32;
        hi.stride = m.stride * lo.size;
        out.modes[out.nmodes++] = lo;
        out.modes[out.nmodes++] = hi;
    }
    *l = out;
    return true;
}

/* Do all lanes of a warp hold the same B when the scan reaches warp digit m? Yes when every
 * lane digit is a replication or a lower digit of d, already summed into B. */
static bool warp_uniform(const Layout *l, const LMode *m, int d)
{
    for (int i = 0; i < l->nmodes; i++) {
        const LMode *o = &l->modes[i];
        if (o->thread && o->div < 32 && o->dim >= 0 && (o->dim != d || o->stride > m->stride))
            return false;
    }
    return true;
}

TStmt *lower_cumsum(TKernel *k, TStmt *s, bool *ok)
{
    CS C = {0};
    C.k = k;
    C.out = ts_seq(k);
    TBuf *src = s->src.buf, *dst = s->dst.buf;
    if (!src->layout || !dst->layout) {
        diag_ice(k->diag, "lower_tiles", "cumsum without a layout");
        *ok = false;
        return C.out;
    }
    if (!layout_equal(src->layout, dst->layout)) {
        diag_error(k->diag, s->loc, "'cumsum' into '%s', which is laid out differently from '%s'; scan into a new frag",
                   dst->name, src->name);
        *ok = false;
        return C.out;
    }
    Layout l = *src->layout;
    int d = s->dim;
    if (!split_warp(&l)) {
        diag_error(k->diag, s->loc, "'cumsum' cannot split the threads of '%s' into lanes and warps", src->name);
        *ok = false;
        return C.out;
    }
    /* the digits of dim d, lowest stride first; they must number the positions 0 .. extent-1 */
    int order[24], nl = 0;
    for (int i = 0; i < l.nmodes; i++)
        if (l.modes[i].dim == d)
            order[nl++] = i;
    for (int i = 1; i < nl; i++)
        for (int j = i; j > 0 && l.modes[order[j]].stride < l.modes[order[j - 1]].stride; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    int64_t expect = 1;
    for (int i = 0; i < nl; i++) {
        if (l.modes[order[i]].stride != expect)
            break;
        expect *= l.modes[order[i]].size;
    }
    if (expect != l.shape[d]) {
        diag_error(k->diag, s->loc, "'cumsum' along dimension %d: '%s' is spread over threads in a way the scan does not "
                   "handle; give it a default layout", d, src->name);
        *ok = false;
        return C.out;
    }

    DType dt = dst->dt;
    C.acc = dtype_kind(dt) == DK_HALF ? DT_F32 : dtype_is_int(dt) && dtype_bits(dt) < 32 ? (dtype_is_signed(dt) ? DT_I32 : DT_U32) : dt;
    C.n = l.nregs;
    C.B = ARENA_ARRAY(k->arena, TVar *, C.n);
    C.P = ARENA_ARRAY(k->arena, TVar *, C.n);
    TVar **x = ARENA_ARRAY(k->arena, TVar *, C.n);
    TBuf *sr = tir_frag_regs(k, src), *dr = tir_frag_regs(k, dst);
    for (int r = 0; r < C.n; r++) {
        TExpr *ri = ic(k, r);
        x[r] = let(&C, "x", tx_cvt(k, C.acc, tx_load(k, sr, &ri, 1), RND_DEFAULT));
        C.B[r] = x[r];
    }
    for (int i = 0; i < nl; i++) {
        const LMode *m = &l.modes[order[i]];
        bool need_total = i + 1 < nl;
        if (!m->thread)
            reg_level(&C, m, need_total);
        else if ((int64_t)m->div * m->size <= 32)
            lane_level(&C, m, l.nthreads, need_total);
        else
            shared_level(&C, &l, m, need_total, warp_uniform(&l, m, d) && m->size <= 32);
    }
    for (int r = 0; r < C.n; r++) {
        TExpr *v;
        if (s->exclusive)
            v = C.P[r] ? tx_var(k, C.P[r]) : zero(&C);
        else
            v = C.P[r] ? tx_bin(k, OP_ADD, tx_var(k, C.P[r]), tx_var(k, x[r])) : tx_var(k, x[r]);
        TExpr *ri = ic(k, r);
        ts_push(k, C.out, ts_store(k, dr, &ri, 1, tx_cvt(k, dt, v, RND_DEFAULT)));
    }
    return C.out;
}
