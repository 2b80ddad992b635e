/* lower_copy.c — copy(src, dst) between any two scopes, as thread-level code.
 *
 * A copy is driven by the frag's layout (or, between memory spaces, by a default layout over
 * the copied shape): each thread moves its runs of `vec` elements with one vector access where
 * the addresses are provably aligned, with a per-element masked path for ragged tails. A copy
 * from a shared tile read column-wise to global memory moves micro-tiles through registers
 * (lower_transposing_copy). */
#include "tir.h"

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

typedef struct CopyLowering {
    TKernel *k;
    bool ok;
    CopyMode mode;
    TExpr *all_in;
    bool all_whole;     /* FAST: every run so far is wholly inside or wholly outside */
} CopyLowering;

static TExpr *i32c(CopyLowering *L, int64_t v) { return tx_const_int(L->k, DT_I32, v); }

/* ---- memory sides of copies ---- */

/* stride (in elements) of buffer dim d, as an expression (shared/local: compile-time) */
static TExpr *buf_stride(CopyLowering *L, TBuf *b, int d)
{
    if (b->scope == SC_GLOBAL)
        return b->gstride[d];
    int64_t s = 1;
    for (int i = b->rank - 1; i > d; i--)
        s *= b->shape[i] + (i == b->rank - 1 ? b->row_pad : 0);
    return tx_const_int(L->k, DT_I64, s);
}

static bool unit_stride(CopyLowering *L, TBuf *b, int d)
{
    int64_t v;
    if (d != b->rank - 1)
        return false;
    return tx_is_const(buf_stride(L, b, d), &v) && v == 1;
}

/* bytes the address of element idx[] is known to be aligned to */
static int known_align(CopyLowering *L, TBuf *b, TExpr **idx)
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
static TExpr *bounds_pred(CopyLowering *L, Region *r, TExpr **idx, int inner, int len)
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
static void emit_side(CopyLowering *L, TStmt *out, bool load, Region *r, TExpr **idx, int bd, int len, TBuf *tmp, int toff,
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
            ts_push(k, res, ts_guard(L->k, first, vecs));
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
                ts_push(k, res, ts_guard(L->k, pj, v));
            }
        }
    }
    ts_push(k, out, load ? res : ts_guard(L->k, store_pred, res));
}

/* buffer indices of the element at region coordinates coord[] */
static void elem_index(CopyLowering *L, Region *r, TExpr **coord, TExpr **idx)
{
    for (int d = 0; d < r->buf->rank; d++)
        idx[d] = r->start[d];
    for (int i = 0; i < r->rank; i++)
        idx[r->src_dim[i]] = tx_bin(L->k, OP_ADD, r->start[r->src_dim[i]], coord[i]);
}

/* One run of `len` registers / elements along region dim rd, first element at coord[]. */
static void move_run(CopyLowering *L, TStmt *out, Region *src, Region *dst, TBuf *sfrag, TBuf *dfrag, int r0, TExpr **coord,
                     int rd, int len, TExpr *other, TExpr *store_pred)
{
    TKernel *k = L->k;
    int64_t n = len;
    TBuf *tmp;
    int toff;
    if (sfrag) {
        tmp = tir_frag_regs(L->k, sfrag);
        toff = r0;
    } else if (dfrag) {
        tmp = tir_frag_regs(L->k, dfrag);
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
                ts_push(k, out, ts_frag_reg_store(L->k, dfrag, r0 + j, tx_frag_reg(L->k, sfrag, r0 + j)));
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
static TStmt *lower_transposing_copy(CopyLowering *L, TStmt *s, TStmt *out)
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
         * blocks of prmt (H200, A/B of 2026-12-01: e4m3 transpose 87.6 -> 88.6 % of the copy
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

static TStmt *lower_copy_body(CopyLowering *L, TStmt *s)
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
static void lower_copy_versions(CopyLowering *L, TStmt *s, TExpr **cond, TStmt **fast, TStmt **edge)
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

static TStmt *lower_one_copy(CopyLowering *L, TStmt *s)
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
static TStmt *lower_load_copies(CopyLowering *L, TStmt **c, int n)
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
        ts_push(k, apart, lower_one_copy(L, c[m])); /* built anew: no statement sits in two places */
    }
    if (nsplit < 2)
        return apart;
    TStmt *i = ts_if(k, all);
    ts_push(k, i, together);
    ts_push_else(k, i, apart);
    return i;
}

TStmt *lower_copy(TKernel *k, TStmt **v, int n, int *taken, bool *ok)
{
    CopyLowering L = {0};
    L.k = k;
    L.ok = true;
    int g = 1;
    if (loads_into_frag(v[0]))
        while (g < n && loads_into_frag(v[g]))
            g++;
    *taken = g;
    TStmt *r = g > 1 ? lower_load_copies(&L, v, g) : lower_one_copy(&L, v[0]);
    if (!L.ok)
        *ok = false;
    return r;
}
