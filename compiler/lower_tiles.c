/* lower_tiles.c — tile operations become thread-level code.
 *
 * Frags become per-thread register arrays (indexed by compile-time constants only). A copy is
 * driven by the frag's layout (or, between memory spaces, by a default layout over the copied
 * shape): each thread moves its runs of `vec` elements with one vector access where the
 * addresses are provably aligned, with a per-element masked path for ragged tails. Reductions
 * combine a thread's registers, then lanes with xor shuffles, then warps through shared
 * scratch. A parallel loop is unrolled over the thread's registers, frag accesses in its body
 * resolved to registers at compile time. */
#include "tir.h"

#include <stdio.h>
#include <string.h>

/* How a copy's memory accesses are emitted. A copy is lowered FAST first, every run as vector
 * accesses with no checks, collecting in `all_in` the condition that every run is inside the
 * tensor. Unless that condition is statically true, the copy is split: one branch per thread
 * takes the FAST version when it holds, otherwise an edge version: GUARDED (each run as vector
 * accesses under the check of its first element) when every run is known to lie wholly inside or
 * wholly outside the tensor (its start and the extent along its dimension are multiples of its
 * length), else SAFE, element by element with a check each. `copy(..., split = false)` keeps one
 * version, GUARDED where it applies: less code, which some kernels run faster. Consecutive split
 * copies from global memory into frags share one branch for their FAST versions
 * (lower_load_copies). */
typedef enum { COPY_FAST, COPY_SAFE, COPY_GUARDED } CopyMode;

typedef struct LT {
    TKernel *k;
    bool ok;
    TBuf *scratch;
    CopyMode mode;
    TExpr *all_in;
    bool all_whole;     /* FAST: every run so far is wholly inside or wholly outside */
} LT;

static TExpr *i32c(LT *L, int64_t v) { return tx_const_int(L->k, DT_I32, v); }

static TBuf *regs_of(LT *L, TBuf *f)
{
    if (!f->regs) {
        int64_t n = f->layout ? f->layout->nregs : 1;
        f->regs = tir_buf(L->k, arena_printf(L->k->arena, "%s.r", f->name), SC_LOCAL, f->dt, 1, &n);
    }
    return f->regs;
}

static TExpr *reg_load(LT *L, TBuf *f, int r)
{
    TExpr *i = i32c(L, r);
    return tx_load(L->k, regs_of(L, f), &i, 1);
}

static TStmt *reg_store(LT *L, TBuf *f, int r, TExpr *v)
{
    TExpr *i = i32c(L, r);
    return ts_store(L->k, regs_of(L, f), &i, 1, tx_cvt(L->k, f->dt, v, RND_DEFAULT));
}

static TStmt *guard(LT *L, TExpr *pred, TStmt *s)
{
    if (!pred)
        return s;
    TStmt *i = ts_if(L->k, pred);
    ts_push(L->k, i, s);
    return i;
}

/* ---- memory sides of copies ---- */

/* stride (in elements) of buffer dim d, as an expression (shared/local: compile-time) */
static TExpr *buf_stride(LT *L, TBuf *b, int d)
{
    if (b->scope == SC_GLOBAL)
        return b->gstride[d];
    int64_t s = 1;
    for (int i = b->rank - 1; i > d; i--)
        s *= b->shape[i] + (i == b->rank - 1 ? b->row_pad : 0);
    return tx_const_int(L->k, DT_I64, s);
}

static bool unit_stride(LT *L, TBuf *b, int d)
{
    int64_t v;
    if (d != b->rank - 1)
        return false;
    return tx_is_const(buf_stride(L, b, d), &v) && v == 1;
}

/* bytes the address of element idx[] is known to be aligned to */
static int known_align(LT *L, TBuf *b, TExpr **idx)
{
    int64_t es_num = dtype_bits(b->dt), base = b->scope == SC_GLOBAL ? (b->align ? b->align : 1) : 16;
    /* alignment in bytes = gcd(base, es * div(sum idx_d * stride_d)) */
    int64_t div = 1 << 12;
    for (int d = 0; d < b->rank; d++) {
        int64_t di = tir_known_div(L->k, idx[d]) * tir_known_div(L->k, buf_stride(L, b, d));
        if (di > (1 << 12))
            di = 1 << 12;
        if (di < div)
            div = di;
    }
    int64_t bytes_bits = div * es_num; /* in bits */
    int64_t bytes = bytes_bits / 8;
    if (bytes < 1)
        bytes = 1;
    int64_t a = tl_gcd(base, bytes);
    return (int)(a > 16 ? 16 : a);
}

/* in-bounds predicate for a run of `len` elements starting at idx along buffer dim `inner` */
static TExpr *bounds_pred(LT *L, Region *r, TExpr **idx, int inner, int len)
{
    TKernel *k = L->k;
    TBuf *b = r->buf;
    if (b->scope != SC_GLOBAL)
        return NULL;
    TExpr *p = NULL;
    for (int i = 0; i < r->rank; i++) {
        int d = r->src_dim[i];
        TExpr *last = d == inner ? tx_bin(k, OP_ADD, idx[d], i32c(L, len - 1)) : idx[d];
        int64_t lv, ext;
        if (tx_is_const(last, &lv) && tx_is_const(b->gdim[d], &ext) && lv < ext)
            continue;
        /* start + extent within a statically sized dimension with a constant start */
        TExpr *c = tx_bin(k, OP_LT, tx_cvt(k, DT_U32, last, RND_DEFAULT), tx_cvt(k, DT_U32, b->gdim[d], RND_DEFAULT));
        p = p ? tx_bin(k, OP_LAND, p, c) : c;
    }
    return p;
}

/* Moves `len` elements along buffer dim `bd` between memory (region r, first element at idx[])
 * and registers tmp[toff..]: vector accesses where the run is contiguous and aligned, masked
 * element accesses for ragged tails of global tensors. */
static void emit_side(LT *L, TStmt *out, bool load, Region *r, TExpr **idx, int bd, int len, TBuf *tmp, int toff,
                      TExpr *other, TExpr *store_pred)
{
    TKernel *k = L->k;
    TBuf *b = r->buf;
    TStmt *res = ts_seq(k);
    if (L->mode == COPY_FAST || L->mode == COPY_GUARDED) {
        bool contiguous = unit_stride(L, b, bd);
        int es_bits = dtype_bits(b->dt);
        int piece = 1;
        if (contiguous && len > 1) {
            piece = len;
            int align = known_align(L, b, idx);
            while (piece > 1 && (int64_t)piece * es_bits / 8 > align)
                piece /= 2;
        }
        if (b->dt == DT_E2M1 && piece < 2)
            piece = 2; /* nibbles move in whole bytes */
        TExpr *full = bounds_pred(L, r, idx, bd, len);
        if (full && L->mode == COPY_FAST) {
            L->all_in = L->all_in ? tx_bin(k, OP_LAND, L->all_in, full) : full;
            if (len > 1 && !(contiguous && b->dt != DT_E2M1 && tir_known_div(k, idx[bd]) % len == 0 &&
                             tir_known_div(k, b->gdim[bd]) % len == 0))
                L->all_whole = false;
        }
        TExpr *first = L->mode == COPY_GUARDED && full ? bounds_pred(L, r, idx, bd, 1) : NULL;
        TStmt *vecs = first ? ts_seq(k) : res;
        for (int j = 0; j < len; j += piece) {
            TStmt *v = ts_new(k, load ? TS_VLOAD : TS_VSTORE, loc_none());
            v->buf = b;
            v->nidx = b->rank;
            v->idx = ARENA_ARRAY(k->arena, TExpr *, v->nidx);
            for (int d = 0; d < v->nidx; d++)
                v->idx[d] = d == bd ? tx_bin(k, OP_ADD, idx[d], i32c(L, j)) : idx[d];
            v->vec = piece;
            v->align = known_align(L, b, v->idx);
            v->regs = tmp;
            v->roff = toff + j;
            ts_push(k, vecs, v);
        }
        if (first && load) {
            TExpr *oth = other ? other : (dtype_is_float(tmp->dt) ? tx_const_float(k, DT_F32, 0) : i32c(L, 0));
            TStmt *ie = ts_if(k, first);
            ts_push(k, ie, vecs);
            for (int q = 0; q < len; q++) {
                TExpr *ri = i32c(L, toff + q);
                ts_push_else(k, ie, ts_store(k, tmp, &ri, 1, tx_cvt(k, tmp->dt, oth, RND_DEFAULT)));
            }
            ts_push(k, res, ie);
        } else if (first) {
            ts_push(k, res, guard(L, first, vecs));
        }
    } else {
        TExpr *oth = other ? other : (dtype_is_float(tmp->dt) ? tx_const_float(k, DT_F32, 0) : i32c(L, 0));
        int step = b->dt == DT_E2M1 ? 2 : 1;
        for (int j = 0; j < len; j += step) {
            TExpr *eidx[TL_MAX_RANK];
            for (int d = 0; d < b->rank; d++)
                eidx[d] = d == bd ? tx_bin(k, OP_ADD, idx[d], i32c(L, j)) : idx[d];
            TExpr *pj = bounds_pred(L, r, eidx, bd, step);
            TStmt *v = ts_new(k, load ? TS_VLOAD : TS_VSTORE, loc_none());
            v->buf = b;
            v->nidx = b->rank;
            v->idx = ARENA_ARRAY(k->arena, TExpr *, v->nidx);
            memcpy(v->idx, eidx, sizeof(TExpr *) * (size_t)v->nidx);
            v->vec = step;
            v->align = known_align(L, b, eidx);
            v->regs = tmp;
            v->roff = toff + j;
            if (load) {
                TStmt *ie = ts_if(k, pj ? pj : tx_bool(k, true));
                ts_push(k, ie, v);
                for (int q = 0; q < step; q++) {
                    TExpr *ri = i32c(L, toff + j + q);
                    ts_push_else(k, ie, ts_store(k, tmp, &ri, 1, tx_cvt(k, tmp->dt, oth, RND_DEFAULT)));
                }
                ts_push(k, res, pj ? ie : v);
            } else {
                ts_push(k, res, guard(L, pj, v));
            }
        }
    }
    ts_push(k, out, load ? res : guard(L, store_pred, res));
}

/* buffer indices of the element at region coordinates coord[] */
static void elem_index(LT *L, Region *r, TExpr **coord, TExpr **idx)
{
    for (int d = 0; d < r->buf->rank; d++)
        idx[d] = r->start[d];
    for (int i = 0; i < r->rank; i++)
        idx[r->src_dim[i]] = tx_bin(L->k, OP_ADD, r->start[r->src_dim[i]], coord[i]);
}

/* One run of `len` registers / elements along region dim rd, first element at coord[]. */
static void move_run(LT *L, TStmt *out, Region *src, Region *dst, TBuf *sfrag, TBuf *dfrag, int r0, TExpr **coord,
                     int rd, int len, TExpr *other, TExpr *store_pred)
{
    TKernel *k = L->k;
    int64_t n = len;
    TBuf *tmp;
    int toff;
    if (sfrag) {
        tmp = regs_of(L, sfrag);
        toff = r0;
    } else if (dfrag) {
        tmp = regs_of(L, dfrag);
        toff = r0;
    } else {
        tmp = tir_buf(k, "tmp", SC_LOCAL, src->buf->dt, 1, &n);
        toff = 0;
    }
    if (!sfrag) {
        int sd = src->src_dim[rd];
        if (unit_stride(L, src->buf, sd) || len == 1) {
            TExpr *idx[TL_MAX_RANK];
            elem_index(L, src, coord, idx);
            emit_side(L, out, true, src, idx, sd, len, tmp, toff, other, NULL);
        } else {
            for (int j = 0; j < len; j++) {
                TExpr *cj[TL_MAX_RANK], *idx[TL_MAX_RANK];
                memcpy(cj, coord, sizeof(TExpr *) * (size_t)src->rank);
                cj[rd] = tx_bin(k, OP_ADD, coord[rd], i32c(L, j));
                elem_index(L, src, cj, idx);
                emit_side(L, out, true, src, idx, sd, 1, tmp, toff + j, other, NULL);
            }
        }
    }
    if (dfrag) {
        if (sfrag) /* frag to frag with the same layout: register moves, converting */
            for (int j = 0; j < len; j++)
                ts_push(k, out, reg_store(L, dfrag, r0 + j, reg_load(L, sfrag, r0 + j)));
        return;
    }
    int dd = dst->src_dim[rd];
    if (unit_stride(L, dst->buf, dd) || len == 1) {
        TExpr *idx[TL_MAX_RANK];
        elem_index(L, dst, coord, idx);
        emit_side(L, out, false, dst, idx, dd, len, tmp, toff, NULL, store_pred);
    } else {
        for (int j = 0; j < len; j++) {
            TExpr *cj[TL_MAX_RANK], *idx[TL_MAX_RANK];
            memcpy(cj, coord, sizeof(TExpr *) * (size_t)dst->rank);
            cj[rd] = tx_bin(k, OP_ADD, coord[rd], i32c(L, j));
            elem_index(L, dst, cj, idx);
            emit_side(L, out, false, dst, idx, dd, 1, tmp, toff + j, NULL, store_pred);
        }
    }
}

/* shared.T -> global: each thread moves micro-tiles of R rows of V elements: R vector reads of V
 * elements along the shared tile's rows, a transpose in registers, V vector writes of R elements
 * along the global rows (R = V, or 2 V for bytes, whose writes are then 16 bytes). Both sides
 * stay vectorised; the tile's XOR swizzle (layout pass) keeps the R-row reads free of bank
 * conflicts. */
static TStmt *lower_transposing_copy(LT *L, TStmt *s, TStmt *out)
{
    TKernel *k = L->k;
    Region *src = &s->src, *dst = &s->dst;
    int es = dtype_storage_bytes(src->buf->dt);
    int v = transpose_vec(es, src->extent[0], src->extent[1], k->nthreads);
    int rv = transpose_rows(es, src->extent[0], src->extent[1], k->nthreads);
    int64_t grid[2] = {src->extent[0] / v, src->extent[1] / rv};
    /* Micro-rows narrower than the swizzle's 16-byte chunk (u8 with V = 8): a warp whose lanes
     * all read the same part of a chunk reaches only 16 of the 32 banks. Lanes then take H = 16 /
     * (V bytes) neighbouring micro-tile columns and 32 / H micro-tile rows, so their reads cover
     * every part of the chunks (two wavefronts per 256 bytes instead of four); the writes stay
     * runs of 32 / H vectors along the destination rows. */
    int h = 16 / (v * es);
    int64_t lanes_i = 32 / (h > 0 ? h : 1);
    bool split = h > 1 && grid[0] % h == 0 && grid[1] % lanes_i == 0;
    if (split) {
        grid[0] /= h;
        grid[1] *= h;
    }
    Layout *lay = layout_default(k->arena, 2, grid, k->nthreads, 1, 0, 0);
    int64_t n = (int64_t)v * rv;
    TBuf *in = tir_buf(k, "tin", SC_LOCAL, src->buf->dt, 1, &n);
    TBuf *tr = tir_buf(k, "tout", SC_LOCAL, src->buf->dt, 1, &n);
    TExpr *tc0 = layout_thread_coord(L->k, lay, 0), *tc1 = layout_thread_coord(L->k, lay, 1);
    TExpr *store_pred = layout_leader_pred(L->k, lay);
    for (int r = 0; r < lay->nregs; r++) {
        TExpr *q0 = tx_bin(k, OP_ADD, tc0, i32c(L, layout_reg_coord(lay, r, 0)));
        TExpr *q1 = tx_bin(k, OP_ADD, tc1, i32c(L, layout_reg_coord(lay, r, 1)));
        if (split) {
            /* q1 = (hi * H + sub) * lanes_i + lo  ->  micro-tile (q0 * H + sub, hi * lanes_i + lo) */
            TExpr *lo = tx_bin(k, OP_MOD, q1, i32c(L, lanes_i));
            TExpr *sub = tx_bin(k, OP_MOD, tx_bin(k, OP_DIV, q1, i32c(L, lanes_i)), i32c(L, h));
            TExpr *hi = tx_bin(k, OP_DIV, q1, i32c(L, lanes_i * h));
            q0 = tx_bin(k, OP_ADD, tx_bin(k, OP_MUL, q0, i32c(L, h)), sub);
            q1 = tx_bin(k, OP_ADD, tx_bin(k, OP_MUL, hi, i32c(L, lanes_i)), lo);
        }
        TExpr *c0 = tx_bin(k, OP_MUL, q0, i32c(L, v));
        TExpr *c1 = tx_bin(k, OP_MUL, q1, i32c(L, rv));
        /* reads: for each b, the run (c0 .. c0+v, c1 + b) is contiguous in the shared tile */
        for (int b = 0; b < rv; b++) {
            TExpr *coord[2] = {c0, tx_bin(k, OP_ADD, c1, i32c(L, b))};
            TExpr *idx[TL_MAX_RANK];
            elem_index(L, src, coord, idx);
            emit_side(L, out, true, src, idx, src->src_dim[0], v, in, b * v, NULL, NULL);
        }
        /* the transpose: tr[a * rv + b] = in[b * v + a]; bytes of micro-tiles of 8 and more in 4 x 4
         * blocks of prmt (H200, session 17 call 8: e4m3 transpose 87.6 -> 88.6 % of the copy
         * ceiling with the 16-byte writes). 4 x 4 micro-tiles keep the element moves (12 prmt
         * against 8): with the block, per_channel_cast_and_transpose with one scale per 32 rows
         * measured 84.4 -> 80.7, a case that also varies by about 5 points between runs */
        if (es == 1 && v >= 8 && v % 4 == 0 && rv % 4 == 0) {
            for (int a0 = 0; a0 < v; a0 += 4)
                for (int b0 = 0; b0 < rv; b0 += 4) {
                    TExpr *args[16], *outs[16];
                    for (int rr = 0; rr < 4; rr++)
                        for (int c = 0; c < 4; c++) {
                            TExpr *ri = i32c(L, (b0 + rr) * v + a0 + c), *wi = i32c(L, (a0 + c) * rv + b0 + rr);
                            args[4 * rr + c] = tx_load(k, in, &ri, 1);
                            outs[4 * c + rr] = tx_load(k, tr, &wi, 1);
                        }
                    ts_push(k, out, ts_intrin(k, TI_TRANSPOSE_B8, 0, args, 16, outs, 16, s->loc));
                }
        } else {
            for (int a = 0; a < v; a++)
                for (int b = 0; b < rv; b++) {
                    TExpr *ri = i32c(L, b * v + a), *wi = i32c(L, a * rv + b);
                    ts_push(k, out, ts_store(k, tr, &wi, 1, tx_load(k, in, &ri, 1)));
                }
        }
        /* writes: for each a, the run (c0 + a, c1 .. c1+rv) is contiguous in the destination */
        for (int a = 0; a < v; a++) {
            TExpr *coord[2] = {tx_bin(k, OP_ADD, c0, i32c(L, a)), c1};
            TExpr *idx[TL_MAX_RANK];
            elem_index(L, dst, coord, idx);
            emit_side(L, out, false, dst, idx, dst->src_dim[1], rv, tr, a * rv, NULL, store_pred);
        }
    }
    return out;
}

static bool whole(const Region *r)
{
    if (r->rank != r->buf->rank)
        return false;
    for (int i = 0; i < r->rank; i++)
        if (r->src_dim[i] != i)
            return false;
    return true;
}

static TStmt *lower_copy_body(LT *L, TStmt *s)
{
    TKernel *k = L->k;
    TStmt *out = ts_seq(k);
    Region *src = &s->src, *dst = &s->dst;
    TBuf *sfrag = src->buf->scope == SC_FRAG ? src->buf : NULL;
    TBuf *dfrag = dst->buf->scope == SC_FRAG ? dst->buf : NULL;
    int rank = src->rank;
    if ((sfrag && !whole(src)) || (dfrag && !whole(dst))) {
        diag_error(k->diag, s->loc, "copy of part of a frag is not supported");
        L->ok = false;
        return out;
    }
    if (!sfrag && !dfrag && rank == 2 && src->buf->scope == SC_SHARED && dst->buf->scope == SC_GLOBAL &&
        src->src_dim[1] != src->buf->rank - 1 && src->src_dim[0] == src->buf->rank - 1 &&
        unit_stride(L, dst->buf, dst->src_dim[1]) && src->buf->dt == dst->buf->dt && src->buf->dt != DT_E2M1)
        return lower_transposing_copy(L, s, out);
    const Layout *lay;
    if (dfrag)
        lay = dfrag->layout;
    else if (sfrag)
        lay = sfrag->layout;
    else {
        /* memory to memory: vectorise along the global side's contiguous dimension */
        int64_t shape[TL_MAX_RANK];
        for (int i = 0; i < rank; i++)
            shape[i] = src->extent[i];
        TBuf *g = src->buf->scope == SC_GLOBAL ? src->buf : dst->buf;
        int es = dtype_storage_bytes(g->dt);
        int vec = 16 / es;
        if (g->dt == DT_E2M1)
            vec = 32;
        lay = layout_default(k->arena, rank, shape, k->nthreads, vec, 0, 0);
    }
    if (sfrag && dfrag) {
        const Layout *a = sfrag->layout, *b = dfrag->layout;
        if (!layout_equal(a, b)) {
            diag_error(k->diag, s->loc, "copy between frags '%s' and '%s' with different layouts is not supported",
                       sfrag->name, dfrag->name);
            L->ok = false;
            return out;
        }
    }
    /* runs: consecutive registers along the innermost region dim */
    int run = lay->vec > 0 ? lay->vec : 1;
    int rd = rank - 1;
    TExpr *tc[TL_MAX_RANK];
    for (int i = 0; i < rank; i++)
        tc[i] = layout_thread_coord(L->k, lay, i);
    TExpr *store_pred = (!dfrag) ? layout_leader_pred(L->k, lay) : NULL;
    for (int r0 = 0; r0 < lay->nregs; r0 += run) {
        TExpr *coord[TL_MAX_RANK];
        for (int i = 0; i < rank; i++)
            coord[i] = tx_bin(k, OP_ADD, tc[i], i32c(L, layout_reg_coord(lay, r0, i)));
        move_run(L, out, src, dst, sfrag, dfrag, r0, coord, rd, run, s->other, store_pred);
    }
    return out;
}

/* A copy's versions: the check-free one and the condition under which it applies (NULL: it
 * always does, and `*edge` is NULL), and, unless `edge` is NULL, the version for the other
 * tiles. */
static void lower_copy_versions(LT *L, TStmt *s, TExpr **cond, TStmt **fast, TStmt **edge)
{
    L->mode = COPY_FAST;
    L->all_in = NULL;
    L->all_whole = true;
    *fast = lower_copy_body(L, s);
    *cond = L->all_in;
    if (edge)
        *edge = NULL;
    if (!*cond)
        return;
    /* Tiles wholly inside take the check-free path, the others the edge version (measured on an
     * H200: the check-free path is up to 16 % faster on whole tiles, the per-vector checks several
     * times faster than element-wise copies on the partial tiles at the edges) */
    L->mode = L->all_whole ? COPY_GUARDED : COPY_SAFE;
    if (s->no_split && L->all_whole) {
        *fast = lower_copy_body(L, s);
        *cond = NULL;
    } else if (edge) {
        *edge = lower_copy_body(L, s);
    }
    L->mode = COPY_FAST;
}

static TStmt *lower_copy(LT *L, TStmt *s)
{
    TExpr *cond;
    TStmt *fast, *edge;
    lower_copy_versions(L, s, &cond, &fast, &edge);
    if (!cond)
        return fast;
    TStmt *i = ts_if(L->k, cond);
    ts_push(L->k, i, fast);
    ts_push_else(L->k, i, edge);
    return i;
}

/* Copies that lower_load_copies may take together: from global memory into frags, from 16- or
 * 32-bit elements. FP8 sources are left alone: taking the SwiGLU backward's two e4m3 halves and
 * its bf16 gradient together made it slower (73 % -> 65 % of the copy ceiling, H200; not
 * analysed). */
static bool loads_into_frag(const TStmt *s)
{
    return s->kind == TS_COPY && s->src.buf->scope == SC_GLOBAL && s->dst.buf->scope == SC_FRAG &&
           dtype_bits(s->src.buf->dt) >= 16;
}

/* Consecutive copies from global memory into frags, n >= 2 of them, each split into its two
 * versions: one branch takes every check-free version when all of them apply, otherwise each copy
 * chooses on its own. Split one by one, the copies were regions of their own, and the widening of
 * one copy's data (bf16 -> f32 is folded into the loading branch) kept the next copy's loads
 * behind the first's data in ptxas' schedule: SwiGLU's two halves, 75 % of the copy ceiling
 * against 83 % with all four loads in flight (H200). */
static TStmt *lower_load_copies(LT *L, TStmt **c, int n)
{
    TKernel *k = L->k;
    TStmt *together = ts_seq(k), *apart = ts_seq(k);
    TExpr *all = NULL;
    int nsplit = 0;
    for (int m = 0; m < n; m++) {
        TExpr *cond;
        TStmt *fast;
        lower_copy_versions(L, c[m], &cond, &fast, NULL);
        ts_push(k, together, fast);
        if (cond) {
            all = all ? tx_bin(k, OP_LAND, all, cond) : cond;
            nsplit++;
        }
        ts_push(k, apart, lower_copy(L, c[m])); /* built anew: no statement sits in two places */
    }
    if (nsplit < 2)
        return apart;
    TStmt *i = ts_if(k, all);
    ts_push(k, i, together);
    ts_push_else(k, i, apart);
    return i;
}

/* ---- fill ---- */
static TStmt *lower_fill(LT *L, TStmt *s)
{
    TKernel *k = L->k;
    TStmt *out = ts_seq(k);
    TBuf *b = s->dst.buf;
    if (b->scope == SC_FRAG) {
        for (int r = 0; r < b->layout->nregs; r++)
            ts_push(k, out, reg_store(L, b, r, s->e));
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
            TExpr *c = b->scope == SC_LOCAL ? i32c(L, layout_reg_coord(lay, r, i))
                                            : tx_bin(k, OP_ADD, layout_thread_coord(L->k, lay, i), i32c(L, layout_reg_coord(lay, r, i)));
            idx[dst->src_dim[i]] = tx_bin(k, OP_ADD, dst->start[dst->src_dim[i]], c);
        }
        TStmt *st = ts_store(k, b, idx, b->rank, s->e);
        ts_push(k, out, b->scope == SC_LOCAL ? st : guard(L, layout_leader_pred(L->k, lay), st));
    }
    return out;
}

/* ---- reductions ---- */
static TExpr *combine(LT *L, RedOp op, TExpr *a, TExpr *b)
{
    TKernel *k = L->k;
    if (op == RED_SUM)
        return tx_bin(k, OP_ADD, a, b);
    TExpr *args[2] = {a, b};
    return tx_call(k, op == RED_MIN ? BI_MIN : BI_MAX, a->dt, args, 2);
}

static TExpr *prepare(LT *L, RedOp op, TExpr *x, DType acc)
{
    x = tx_cvt(L->k, acc, x, RND_DEFAULT);
    if (op == RED_ABSMAX)
        return tx_call(L->k, BI_ABS, acc, &x, 1);
    return x;
}

static TBuf *scratch(LT *L, DType dt, int64_t n)
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
static TVar *base_thread(LT *L, TStmt *out, TExpr *tid, const LMode *m)
{
    TKernel *k = L->k;
    TExpr *digit = tx_bin(k, OP_MOD, tx_bin(k, OP_DIV, tid, i32c(L, m->div)), i32c(L, m->size));
    TVar *v = tir_var(k, "base", DT_I32, false);
    ts_push(k, out, ts_decl(k, v, tx_bin(k, OP_SUB, tid, tx_bin(k, OP_MUL, digit, i32c(L, m->div)))));
    return v;
}

/* The warps' partial results of a reduction through shared memory, every thread reading all of
 * them: scratch[r][t], then each thread combines the digits of mode m in order. */
static void exchange_all(LT *L, TStmt *out, RedOp red, DType acc, TVar **accv, int ndst, const LMode *m)
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
static void exchange_split(LT *L, TStmt *out, RedOp red, DType acc, TVar **accv, int ndst, const LMode *m)
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

static TStmt *lower_reduce(LT *L, TStmt *s)
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
        TExpr *x = prepare(L, s->red, reg_load(L, src, r), acc);
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
            v = combine(L, s->red, reg_load(L, dst, r), v);
        ts_push(k, out, reg_store(L, dst, r, v));
    }
    return out;
}

/* ---- parallel loops ---- */
typedef struct Subst {
    LT *L;
    TStmt *par;
    const Layout *lay;    /* layout of the iterated tile (NULL: per-thread local tile) */
    int r;                /* register being expanded */
    TExpr *coord[TL_MAX_RANK];
    int64_t *const_coord; /* local tiles: compile-time coordinates */
    TExpr *leader;        /* predicate for stores on replicated tiles */
    bool err;
} Subst;

/* compile-time evaluation of an index expression with the loop indices bound */
static bool eval_idx(Subst *S, const TExpr *e, const int64_t *pv, int64_t *out)
{
    switch (e->kind) {
    case TX_CONST:
        *out = e->ival;
        return dtype_is_int(e->dt);
    case TX_VAR:
        for (int i = 0; i < S->par->npvars; i++)
            if (S->par->pvars[i] == e->var) {
                *out = pv[i];
                return true;
            }
        return false;
    case TX_CVT: return dtype_is_int(e->dt) && eval_idx(S, e->a, pv, out);
    case TX_BIN: {
        int64_t a, b;
        if (!eval_idx(S, e->a, pv, &a) || !eval_idx(S, e->b, pv, &b))
            return false;
        const char *err;
        ConstVal v = cv_binary(e->op, cv_int(a), cv_int(b), DT_I64, &err);
        if (v.kind != CV_INT)
            return false;
        *out = v.i;
        return true;
    }
    default: return false;
    }
}

/* the register of frag g that holds g[idx] for the element being expanded, the same in every
 * thread; -1 when there is none */
static int resolve_reg(Subst *S, TBuf *g, TExpr **idx, Loc loc)
{
    TKernel *k = S->L->k;
    const Layout *lf = S->lay, *lg = g->layout;
    if (!lf || !lg) {
        diag_error(k->diag, loc, "frag '%s' cannot be accessed in a parallel loop over a non-frag tile", g->name);
        return -1;
    }
    /* the common case: same layout, indexed by the loop indices */
    bool direct = lf == lg && S->par->npvars == g->rank;
    for (int i = 0; direct && i < g->rank; i++)
        direct = idx[i]->kind == TX_VAR && idx[i]->var == S->par->pvars[i];
    if (direct)
        return S->r;
    int found = -2;
    for (int t = 0; t < k->nthreads; t++) {
        int64_t fc[TL_MAX_RANK], gc[TL_MAX_RANK];
        layout_coord(lf, t, S->r, fc);
        for (int i = 0; i < g->rank; i++)
            if (!eval_idx(S, idx[i], fc, &gc[i])) {
                diag_error(k->diag, loc, "the indices of frag '%s' must be computed from the loop indices and constants", g->name);
                return -1;
            }
        int r = layout_find_reg(lg, t, gc);
        if (r < 0 || (found >= 0 && r != found)) {
            diag_error(k->diag, loc, "frag '%s' is not laid out like '%s': its element is not held by the same thread; "
                       "index it with the loop indices of a tile of the same layout", g->name, S->par->ptile->name);
            return -1;
        }
        found = r;
    }
    return found;
}

static TExpr *rw_expr(Subst *S, TExpr *e);
static TExpr *rw_operand(void *S, TExpr *e) { return rw_expr(S, e); }

static TExpr *rw_expr(Subst *S, TExpr *e)
{
    if (!e)
        return NULL;
    TKernel *k = S->L->k;
    if (e->kind == TX_VAR) {
        for (int i = 0; i < S->par->npvars; i++)
            if (S->par->pvars[i] == e->var)
                return S->const_coord ? i32c(S->L, S->const_coord[i]) : S->coord[i];
        return e;
    }
    if (e->kind == TX_LOAD && e->buf->scope == SC_FRAG) {
        int r = resolve_reg(S, e->buf, e->args, e->loc);
        if (r < 0) {
            S->err = true;
            return i32c(S->L, 0);
        }
        return reg_load(S->L, e->buf, r);
    }
    return tx_rebuild(k, e, rw_operand, S);
}

static TStmt *rw_stmt(Subst *S, TStmt *s);

static TStmt **rw_list(Subst *S, TStmt **v, int n)
{
    TStmt **o = ARENA_ARRAY(S->L->k->arena, TStmt *, n ? n : 1);
    for (int i = 0; i < n; i++)
        o[i] = rw_stmt(S, v[i]);
    return o;
}

static bool has_side_effect_call(const TExpr *e)
{
    if (!e)
        return false;
    if (e->kind == TX_CALL && e->builtin >= BI_ATOMIC_ADD && e->builtin <= BI_ATOMIC_CAS)
        return true;
    if (e->kind == TX_CALL && e->builtin == BI_PRINTF)
        return true;
    if (has_side_effect_call(e->a) || has_side_effect_call(e->b) || has_side_effect_call(e->c))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (has_side_effect_call(e->args[i]))
            return true;
    return false;
}

static TStmt *rw_stmt(Subst *S, TStmt *s)
{
    TKernel *k = S->L->k;
    if (s->kind == TS_STORE && s->buf->scope == SC_FRAG) {
        int r = resolve_reg(S, s->buf, s->idx, s->loc);
        if (r < 0) {
            S->err = true;
            return ts_seq(k);
        }
        return reg_store(S->L, s->buf, r, rw_expr(S, s->e));
    }
    TStmt *c = ARENA_NEW(k->arena, TStmt);
    *c = *s;
    c->e = rw_expr(S, s->e);
    c->lo = rw_expr(S, s->lo);
    c->hi = rw_expr(S, s->hi);
    c->step = rw_expr(S, s->step);
    if (s->nidx) {
        c->idx = ARENA_ARRAY(k->arena, TExpr *, s->nidx);
        for (int i = 0; i < s->nidx; i++)
            c->idx[i] = rw_expr(S, s->idx[i]);
    }
    c->body = rw_list(S, s->body, s->nbody);
    c->els = rw_list(S, s->els, s->nels);
    /* effects on memory happen once per element, even when replicas hold the element */
    if (S->leader && ((s->kind == TS_STORE && s->buf->scope != SC_LOCAL) || (s->kind == TS_EVAL && has_side_effect_call(s->e))))
        return guard(S->L, S->leader, c);
    return c;
}

static TStmt *lower_parallel(LT *L, TStmt *s)
{
    TKernel *k = L->k;
    TStmt *out = ts_seq(k);
    TBuf *t = s->ptile;
    Subst S = {0};
    S.L = L;
    S.par = s;
    if (t->scope == SC_LOCAL) {
        /* every thread walks the whole per-thread tile, fully unrolled */
        int64_t total = 1;
        for (int d = 0; d < t->rank; d++)
            total *= t->shape[d];
        int64_t cc[TL_MAX_RANK];
        S.const_coord = cc;
        for (int64_t e = 0; e < total; e++) {
            int64_t rem = e;
            for (int d = t->rank - 1; d >= 0; d--) {
                cc[d] = rem % t->shape[d];
                rem /= t->shape[d];
            }
            TStmt *blk = ts_seq(k);
            blk->body = rw_list(&S, s->body, s->nbody);
            blk->nbody = s->nbody;
            ts_push(k, out, blk);
            if (S.err)
                break; /* one report, not one per element */
        }
    } else {
        const Layout *lay = t->layout;
        if (t->scope == SC_SHARED)
            lay = layout_default(k->arena, t->rank, t->shape, k->nthreads, 1, 0, 0);
        S.lay = t->scope == SC_FRAG ? lay : NULL;
        S.leader = layout_leader_pred(L->k, lay);
        TExpr *tc[TL_MAX_RANK];
        for (int d = 0; d < t->rank; d++)
            tc[d] = layout_thread_coord(L->k, lay, d);
        for (int r = 0; r < lay->nregs; r++) {
            S.r = r;
            for (int d = 0; d < t->rank; d++)
                S.coord[d] = tx_bin(k, OP_ADD, tc[d], i32c(L, layout_reg_coord(lay, r, d)));
            TStmt *blk = ts_seq(k);
            blk->body = rw_list(&S, s->body, s->nbody);
            blk->nbody = s->nbody;
            if (t->scope == SC_SHARED && S.leader)
                blk = guard(L, S.leader, blk);
            ts_push(k, out, blk);
            if (S.err)
                break;
        }
        if (t->scope == SC_SHARED)
            S.leader = NULL;
    }
    if (S.err)
        L->ok = false;
    return out;
}

/* ---- the walk ---- */
static void lower_list(LT *L, TStmt **v, int n);

/* Shared memory written by a tile operation is fenced by barriers on both sides: before, so
 * that no thread still reads what is overwritten; after, so that every thread sees it. */
static TStmt *fenced(LT *L, TStmt *body)
{
    TStmt *out = ts_seq(L->k);
    ts_push(L->k, out, ts_barrier(L->k));
    ts_push(L->k, out, body);
    ts_push(L->k, out, ts_barrier(L->k));
    return out;
}

static TStmt *lower_stmt(LT *L, TStmt *s)
{
    switch (s->kind) {
    case TS_COPY: {
        TStmt *r = lower_copy(L, s);
        return s->dst.buf->scope == SC_SHARED ? fenced(L, r) : r;
    }
    case TS_FILL: {
        TStmt *r = lower_fill(L, s);
        return s->dst.buf->scope == SC_SHARED ? fenced(L, r) : r;
    }
    case TS_REDUCE: return lower_reduce(L, s);
    case TS_PARALLEL: {
        TStmt *r = lower_parallel(L, s);
        lower_list(L, r->body, r->nbody);
        return s->ptile->scope == SC_SHARED ? fenced(L, r) : r;
    }
    case TS_CUMSUM: return lower_cumsum(L->k, s, &L->ok);
    case TS_GEMM: return lower_gemm(L->k, s, &L->ok);
    default:
        lower_list(L, s->body, s->nbody);
        lower_list(L, s->els, s->nels);
        return s;
    }
}

static void lower_list(LT *L, TStmt **v, int n)
{
    for (int i = 0; i < n; i++) {
        int j = i;
        while (loads_into_frag(v[i]) && j + 1 < n && loads_into_frag(v[j + 1]))
            j++;
        if (j > i) {
            v[i] = lower_load_copies(L, v + i, j - i + 1);
            for (int m = i + 1; m <= j; m++)
                v[m] = ts_seq(L->k);
            i = j;
            continue;
        }
        v[i] = lower_stmt(L, v[i]);
    }
}

/* Flattens nested sequences and drops barriers that follow another barrier (nothing between
 * them) or open the kernel. */
static void tidy(TKernel *k, TStmt *seq, bool *last_barrier)
{
    TStmt **out = NULL;
    int n = 0;
    TStmt holder = {0};
    for (int i = 0; i < seq->nbody; i++) {
        TStmt *s = seq->body[i];
        if (s->kind == TS_SEQ) {
            tidy(k, s, last_barrier);
            for (int j = 0; j < s->nbody; j++)
                ts_push(k, &holder, s->body[j]);
            continue;
        }
        if (s->kind == TS_BARRIER) {
            if (*last_barrier)
                continue;
            *last_barrier = true;
            ts_push(k, &holder, s);
            continue;
        }
        bool lb = false;
        if (s->nbody || s->nels) {
            TStmt tmp = {0};
            tmp.body = s->body;
            tmp.nbody = s->nbody;
            tidy(k, &tmp, &lb);
            s->body = tmp.body;
            s->nbody = tmp.nbody;
            lb = false;
            tmp.body = s->els;
            tmp.nbody = s->nels;
            tidy(k, &tmp, &lb);
            s->els = tmp.body;
            s->nels = tmp.nbody;
        }
        *last_barrier = false;
        ts_push(k, &holder, s);
    }
    (void)out;
    (void)n;
    seq->body = holder.body;
    seq->nbody = holder.nbody;
}

bool pass_lower_tiles(TKernel *k)
{
    LT L = {0};
    L.k = k;
    L.ok = true;
    lower_list(&L, k->body->body, k->body->nbody);
    bool lb = true; /* a barrier first thing in the kernel orders nothing */
    tidy(k, k->body, &lb);
    /* register arrays exist for every frag, even ones only read */
    for (int i = 0; i < k->nbufs; i++)
        if (k->bufs[i]->scope == SC_FRAG && k->bufs[i]->layout)
            regs_of(&L, k->bufs[i]);
    return L.ok;
}
