/* lower_gemm.c — gemm(a, b, c) on tensor cores: the mma.sync fragment layouts of the frags a gemm
 * touches (called by the layout pass before any other layout is chosen), the swizzle or padding
 * of shared operands against bank conflicts, and the lowering to ldmatrix + mma.sync (called by
 * lower_tiles).
 *
 * Instructions. One warp computes a 16 x 8 block of C per mma.sync.aligned.m16n8kK.row.col:
 *   f16 / bf16: m16n8k16    f32 (as tf32, low 13 bits ignored by the hardware): m16n8k8
 *   e4m3 / e5m2: m16n8k32 (a and b of the same type)
 * Every operand register is 32 bits and holds E = 4 / sizeof(element) elements along K
 * (E = 2, 1, 4), so the instruction's K is 8E. With g = lane / 4 and t = lane % 4, the PTX ISA
 * ("Matrix Fragments for mma.m16n8k16 / m16n8k8 / m16n8k32") places, for all three types alike:
 *   A (16 x 8E), registers q = 0..3, element j = 0..E-1 of each:
 *       row = g + 8 (q & 1)           col = E t + j + 4E (q >> 1)
 *   B (8E x 8), registers q = 0..1:   row = E t + j + 4E q            col = g
 *   C (16 x 8, f32), elements c0..c3: row = g + 8 (c >> 1)           col = 2t + (c & 1)
 * (bf16: a0a1 at (g, 2t..2t+1), a2a3 at (g+8, ..), a4a5 at (g, 2t+8..), a6a7 at (g+8, 2t+8..);
 *  tf32: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); b0 (t, g), b1 (t+4, g).)
 *
 * Tiling. The block's warps form a WM x WN grid over C (warp w: wn = w % WN, wm = w / WN % WM;
 * further warps, if the tile is too small for all of them, repeat the work as replicas). A warp
 * owns MI x NI instruction tiles: rows wm*(M/WM) + 16 mi, columns wn*(N/WN) + 8 ni. In the
 * layout language of layout_algebra.c (register digits first, then thread digits):
 *   C:  r2->n*1  r2->m*8  rNI->n*8  rMI->m*16 | t4->n*2  t8->m*1  tWN->n*(N/WN)  tWM->m*(M/WM)
 *       so register c + 4 (ni + NI mi) is element c of instruction tile (mi, ni);
 *   A:  rE->k*1  r2->m*8  r2->k*4E  rKS->k*8E  rMI->m*16 | t4->k*E  t8->m*1  tWN->rep  tWM->m*(M/WM)
 *   B:  rE->k*1  r2->k*4E  rKS->k*8E  rNI->n*8 | t4->k*E  t8->n*1  tWN->n*(N/WN)  tWM->rep
 * so a frag operand's registers are already in instruction order (packed E at a time), and
 * parallel loops, reductions and copies work on c like on any frag.
 *
 * Shared operands are read with ldmatrix.m8n8.x4.b16: each of the 4 matrices is 8 rows of 16
 * bytes, lanes 8i..8i+7 give the row addresses of matrix i, and every lane receives row g,
 * bytes 4t..4t+3 of each matrix (with .trans: the 8 x 8 b16 matrix transposed, so row 2t..2t+1,
 * column g). Read as 32-bit registers this is exactly the A register q = (row g + 8(q&1), K bytes
 * 16(q>>1)..) and the B register q of a K-contiguous B for every element width; a 16-bit operand
 * stored with M (A) or N (B) contiguous takes .trans. Other cases (a 32- or 8-bit operand stored
 * with M or N contiguous, misaligned tiles) load elements one by one: ldmatrix has no form that
 * moves 32-bit elements transposed (.trans swaps 16-bit halves).
 *
 * Bank conflicts (place_shared). ldmatrix reads each matrix's 8 rows of 16 bytes in one
 * wavefront when they fall in 8 different 16-byte bank groups; the element loads of an M- or
 * N-contiguous tf32 operand read, per register, lane (g, t) at row k0 + t (k0 a multiple of 4)
 * and word w0 + g (w0 a multiple of 8), 32 words that must fall in 32 different banks. f32
 * Padding serves each alone: rows of an odd number of 16-byte chunks for ldmatrix, a row stride
 * of 8 mod 16 words for the element loads (t * stride + g distinct mod 32). A 32-bit tile that
 * both read (the mHC backward's g tile: element-wise as A^T of one gemm, with ldmatrix as A of
 * another) gets the gemm swizzle instead (tir.h), when its rows are multiples of 128 bytes:
 * chunk c of row r goes to chunk c ^ key(r % 8), key(x) = 2 (x % 4) + x / 4, which serves both
 * at once: key is a permutation of 0..7 (8 rows at one chunk: 8 chunks), and rows k0 .. k0+3
 * have keys 0, 2, 4, 6 or 1, 3, 5, 7, so the chunk pair (w0 / 4, w0 / 4 + 1) ^ key covers all 8
 * chunks of the 128-byte line. The copies into it still move whole 16-byte chunks (permuted
 * inside each 128-byte line, so their writes stay conflict-free too). tests/codegen/tileops/
 * tirsim.c counts the wavefronts of every shared access of the gemm kernels and requires the
 * minimum. */
#include "tir.h"

#include <string.h>

typedef struct Plan {
    DType dt;
    int es;               /* bytes per operand element */
    int E;                /* elements per 32-bit register */
    int ik;               /* instruction K */
    int64_t M, N, K;
    int wm, wn, rep;      /* warp grid over C and replicas */
    int mi, ni, ks;       /* instruction tiles per warp along M and N, k steps */
    /* buffer dims of the logical dims */
    int am, ak, bk, bn, cm, cn;
} Plan;

static TExpr *ic(TKernel *k, int64_t v) { return tx_const_int(k, DT_I32, v); }

static bool whole_tile(const Region *r)
{
    if (r->rank != r->buf->rank)
        return false;
    for (int i = 0; i < r->rank; i++)
        if (r->extent[i] != r->buf->shape[r->src_dim[i]])
            return false;
    return true;
}

/* Works out instruction, sizes and warp grid; false after a diagnostic. */
static bool make_plan(TKernel *k, const TStmt *s, Plan *p)
{
    memset(p, 0, sizeof *p);
    const Region *a = &s->src, *b = &s->dst, *c = &s->c;
    p->dt = a->buf->dt;
    switch (p->dt) {
    case DT_F16:
    case DT_BF16: p->es = 2; break;
    case DT_F32: p->es = 4; break;
    case DT_E4M3:
    case DT_E5M2: p->es = 1; break;
    default:
        diag_error(k->diag, s->loc, "'gemm' has no tensor-core instruction for %s operands", dtype_name(p->dt));
        return false;
    }
    p->E = 4 / p->es;
    p->ik = 8 * p->E;
    int ram = s->trans_a ? 1 : 0, rbk = s->trans_b ? 1 : 0;
    p->M = a->extent[ram];
    p->K = a->extent[1 - ram];
    p->N = b->extent[1 - rbk];
    p->am = a->src_dim[ram];
    p->ak = a->src_dim[1 - ram];
    p->bk = b->src_dim[rbk];
    p->bn = b->src_dim[1 - rbk];
    p->cm = c->src_dim[0];
    p->cn = c->src_dim[1];
    if (c->buf->scope != SC_FRAG || !whole_tile(c)) {
        diag_error(k->diag, s->loc, "'gemm' accumulates into a whole frag tile; '%s' is not one", c->buf->name);
        return false;
    }
    if ((a->buf->scope == SC_FRAG && !whole_tile(a)) || (b->buf->scope == SC_FRAG && !whole_tile(b))) {
        diag_error(k->diag, s->loc, "a frag operand of 'gemm' must be the whole frag, not a slice of it");
        return false;
    }
    if (p->M % 16 || p->N % 8 || p->K % p->ik) {
        diag_error(k->diag, s->loc,
                   "'gemm' of %s needs M a multiple of 16, N of 8 and K of %d (mma.sync m16n8k%d); this one is "
                   "M = %lld, N = %lld, K = %lld",
                   dtype_name(p->dt), p->ik, p->ik, (long long)p->M, (long long)p->N, (long long)p->K);
        return false;
    }
    /* the warp grid: as many warps as the tile allows, then the least operand traffic per warp */
    int nw = k->nthreads / 32;
    int64_t tm = p->M / 16, tn = p->N / 8;
    int best_used = 0;
    int64_t best_cost = 0;
    for (int wm = 1; wm <= nw; wm++) {
        if (nw % wm || tm % wm)
            continue;
        for (int wn = 1; wm * wn <= nw; wn++) {
            if ((nw / wm) % wn || tn % wn)
                continue;
            int used = wm * wn;
            int64_t cost = p->M / wm + p->N / wn;
            if (used > best_used || (used == best_used && cost < best_cost)) {
                best_used = used;
                best_cost = cost;
                p->wm = wm;
                p->wn = wn;
            }
        }
    }
    p->rep = nw / (p->wm * p->wn);
    p->mi = (int)(tm / p->wm);
    p->ni = (int)(tn / p->wn);
    p->ks = (int)(p->K / p->ik);
    int64_t acc_regs = 4LL * p->mi * p->ni;
    if (acc_regs > 256) {
        diag_error(k->diag, s->loc,
                   "'gemm' of a %lld x %lld tile with %d threads needs %lld accumulator registers per thread; "
                   "at most 256 fit: use a smaller tile or more threads",
                   (long long)p->M, (long long)p->N, k->nthreads, (long long)acc_regs);
        return false;
    }
    return true;
}

/* ---- layouts ---- */

static Layout *new_layout(TKernel *k, const TBuf *f)
{
    Layout *l = ARENA_NEW(k->arena, Layout);
    l->nthreads = k->nthreads;
    l->rank = f->rank;
    memcpy(l->shape, f->shape, sizeof(int64_t) * (size_t)f->rank);
    return l;
}

static void finish(Layout *l, int nregs)
{
    l->nregs = nregs;
    l->vec = 1;
    for (int i = 0; i < l->nmodes; i++)
        if (!l->modes[i].thread && l->modes[i].div == 1 && l->modes[i].dim == l->rank - 1 && l->modes[i].stride == 1)
            l->vec = l->modes[i].size;
}

static Layout *layout_c(TKernel *k, const Plan *p, const TBuf *f)
{
    Layout *l = new_layout(k, f);
    layout_add_mode(l, 2, 1, false, p->cn, 1);
    layout_add_mode(l, 2, 2, false, p->cm, 8);
    layout_add_mode(l, p->ni, 4, false, p->cn, 8);
    layout_add_mode(l, p->mi, 4 * p->ni, false, p->cm, 16);
    layout_add_mode(l, 4, 1, true, p->cn, 2);
    layout_add_mode(l, 8, 4, true, p->cm, 1);
    layout_add_mode(l, p->wn, 32, true, p->cn, p->N / p->wn);
    layout_add_mode(l, p->wm, 32 * p->wn, true, p->cm, p->M / p->wm);
    layout_add_mode(l, p->rep, 32 * p->wn * p->wm, true, -1, 0);
    finish(l, 4 * p->mi * p->ni);
    return l;
}

static Layout *layout_a(TKernel *k, const Plan *p, const TBuf *f)
{
    Layout *l = new_layout(k, f);
    int E = p->E;
    layout_add_mode(l, E, 1, false, p->ak, 1);
    layout_add_mode(l, 2, E, false, p->am, 8);
    layout_add_mode(l, 2, 2 * E, false, p->ak, 4 * E);
    layout_add_mode(l, p->ks, 4 * E, false, p->ak, p->ik);
    layout_add_mode(l, p->mi, 4 * E * p->ks, false, p->am, 16);
    layout_add_mode(l, 4, 1, true, p->ak, E);
    layout_add_mode(l, 8, 4, true, p->am, 1);
    layout_add_mode(l, p->wn, 32, true, -1, 0);
    layout_add_mode(l, p->wm, 32 * p->wn, true, p->am, p->M / p->wm);
    layout_add_mode(l, p->rep, 32 * p->wn * p->wm, true, -1, 0);
    finish(l, 4 * E * p->ks * p->mi);
    return l;
}

static Layout *layout_b(TKernel *k, const Plan *p, const TBuf *f)
{
    Layout *l = new_layout(k, f);
    int E = p->E;
    layout_add_mode(l, E, 1, false, p->bk, 1);
    layout_add_mode(l, 2, E, false, p->bk, 4 * E);
    layout_add_mode(l, p->ks, 2 * E, false, p->bk, p->ik);
    layout_add_mode(l, p->ni, 2 * E * p->ks, false, p->bn, 8);
    layout_add_mode(l, 4, 1, true, p->bk, E);
    layout_add_mode(l, 8, 4, true, p->bn, 1);
    layout_add_mode(l, p->wn, 32, true, p->bn, p->N / p->wn);
    layout_add_mode(l, p->wm, 32 * p->wn, true, -1, 0);
    layout_add_mode(l, p->rep, 32 * p->wn * p->wm, true, -1, 0);
    finish(l, 2 * E * p->ks * p->ni);
    return l;
}

/* Gives frag f the layout `want`, or checks that it already has it. */
static bool claim(TKernel *k, const TStmt *s, TBuf *f, Layout *want, const char *role)
{
    if (!f->layout) {
        f->layout = want;
        return true;
    }
    if (layout_equal(f->layout, want))
        return true;
    diag_error(k->diag, s->loc,
               "frag '%s' (%s of this gemm) is also used by another gemm that needs a different register layout; "
               "give each gemm its own frag",
               f->name, role);
    return false;
}

/* the ways a shared operand is read */
typedef enum { RD_LDMATRIX, RD_LDMATRIX_TRANS, RD_ELEMENTS } ReadKind;

/* how operand X is read, given which buffer dim is K and which is M (or N) */
static ReadKind read_kind(const Plan *p, const TBuf *buf, int kdim, int odim)
{
    int last = buf->rank - 1;
    if (kdim == last)
        return RD_LDMATRIX;
    if (odim == last && p->E == 2)
        return RD_LDMATRIX_TRANS;
    return RD_ELEMENTS;
}

/* the ways each shared operand tile is read, over all the gemms of the kernel */
typedef struct SharedUse {
    TBuf *buf;
    int es;
    unsigned kinds;   /* 1 << ReadKind */
    ReadKind first;
} SharedUse;

typedef struct Uses {
    SharedUse v[32];
    int n;
} Uses;

static void note_use(Uses *u, const Plan *p, TBuf *buf, ReadKind rk)
{
    int i = 0;
    while (i < u->n && u->v[i].buf != buf)
        i++;
    if (i == u->n) {
        if (u->n == (int)(sizeof u->v / sizeof u->v[0]))
            return; /* more than 32 operand tiles: the rest stay as they are (correct, maybe conflicted) */
        u->v[u->n++] = (SharedUse){buf, p->es, 0, rk};
    }
    u->v[i].kinds |= 1u << rk;
}

/* Padding where one way of reading needs it (no extra instructions: the addresses stay a base
 * plus constants), the gemm swizzle for a 32-bit tile that ldmatrix and element loads both read
 * (no padding serves both: ldmatrix wants an odd number of 16-byte chunks per row, the element
 * loads a stride of 8 mod 16 words). The swizzle costs address arithmetic: as the only layout
 * of gemm_tf32.tl's tiles it took gemm_tf32_tn from 56 to 92 registers and made gemm_tf32_k256
 * spill (ptxas 13.0, sm_90a). */
static void place_shared(const SharedUse *u)
{
    TBuf *buf = u->buf;
    if (buf->row_pad || buf->swizzle || buf->rank < 2)
        return;
    int64_t row = buf->shape[buf->rank - 1] * u->es;
    bool elems = u->kinds & (1u << RD_ELEMENTS), rows = u->kinds & ~(1u << RD_ELEMENTS);
    if (u->es == 4 && elems && rows && row % 128 == 0) {
        buf->swizzle = 1;
        buf->swizzle_gemm = true;
    } else if (u->first != RD_ELEMENTS) {
        if (row % 16 == 0 && (row / 16) % 2 == 0)
            buf->row_pad = 16 / u->es;
    } else if (u->es == 4 && row % 16 == 0) {
        int64_t words = row / 4;
        buf->row_pad = ((8 - words % 16) + 16) % 16;
    }
}

static bool assign_in(TKernel *k, TStmt **v, int n, Uses *u)
{
    bool ok = true;
    for (int i = 0; i < n; i++) {
        TStmt *s = v[i];
        if (s->kind == TS_GEMM) {
            Plan p;
            if (!make_plan(k, s, &p)) {
                ok = false;
                continue;
            }
            TBuf *a = s->src.buf, *b = s->dst.buf, *c = s->c.buf;
            ok &= claim(k, s, c, layout_c(k, &p, c), "the accumulator");
            if (a->scope == SC_FRAG)
                ok &= claim(k, s, a, layout_a(k, &p, a), "operand a");
            else if (a->scope == SC_SHARED)
                note_use(u, &p, a, read_kind(&p, a, p.ak, p.am));
            if (b->scope == SC_FRAG)
                ok &= claim(k, s, b, layout_b(k, &p, b), "operand b");
            else if (b->scope == SC_SHARED)
                note_use(u, &p, b, read_kind(&p, b, p.bk, p.bn));
            continue;
        }
        ok &= assign_in(k, s->body, s->nbody, u);
        ok &= assign_in(k, s->els, s->nels, u);
    }
    return ok;
}

bool gemm_assign_layouts(TKernel *k)
{
    Uses u = {.n = 0};
    bool ok = assign_in(k, k->body->body, k->body->nbody, &u);
    for (int i = 0; i < u.n; i++)
        place_shared(&u.v[i]);
    return ok;
}


/* ---- lowering ---- */

typedef struct GemmLowering {
    TKernel *k;
    const TStmt *s;
    Plan p;
    TStmt *out;
    TVar *grp, *tig, *lane8, *lanerow;  /* lane / 4 (groupID), lane % 4, lane / 8, lane % 8 */
    TVar *m0, *n0;                  /* the warp's first row of C and first column */
    TBuf *areg, *breg;              /* packed operands of one k step */
} GemmLowering;

static TExpr *reg(TKernel *k, TBuf *regs, int64_t i)
{
    TExpr *x = ic(k, i);
    return tx_load(k, regs, &x, 1);
}

static TVar *let(GemmLowering *L, const char *name, TExpr *e)
{
    TVar *v = tir_var(L->k, name, DT_I32, false);
    ts_push(L->k, L->out, ts_decl(L->k, v, e));
    return v;
}

static TExpr *add(TKernel *k, TExpr *a, TExpr *b) { return tx_bin(k, OP_ADD, a, b); }
static TExpr *mul(TKernel *k, TExpr *a, int64_t c) { return tx_bin(k, OP_MUL, a, ic(k, c)); }

/* buffer indices of operand element (x along dim dx, y along dim dy) of region r */
static void elem_idx(TKernel *k, const Region *r, int dx, TExpr *x, int dy, TExpr *y, TExpr **idx)
{
    for (int d = 0; d < r->buf->rank; d++)
        idx[d] = r->start[d];
    idx[dx] = add(k, r->start[dx], x);
    idx[dy] = add(k, r->start[dy], y);
}

static TExpr *addr_of(TKernel *k, TBuf *b, TExpr **idx)
{
    TExpr *ld = tx_load(k, b, idx, b->rank);
    return tx_call(k, TI_ADDR, DT_U64, &ld, 1);
}

/* Can the rows that ldmatrix reads from this region start on 16-byte boundaries? The in-tile
 * offsets the lowering adds along the contiguous dim are multiples of 16 bytes already. */
static bool ldmatrix_aligned(const GemmLowering *L, const Region *r)
{
    const TBuf *b = r->buf;
    int last = b->rank - 1;
    int es = L->p.es;
    if (((b->shape[last] + b->row_pad) * es) % 16)
        return false;
    return (tir_known_div(L->k, r->start[last]) * es) % 16 == 0;
}

static void intrin(GemmLowering *L, int id, int64_t ival, TExpr **args, int nargs, TExpr **outs, int nouts)
{
    ts_push(L->k, L->out, ts_intrin(L->k, id, ival, args, nargs, outs, nouts, L->s->loc));
}

/* one packed register from E elements x[0..E) */
static TExpr *pack(TKernel *k, TExpr **x, int E)
{
    if (E == 1)
        return tx_bitcast(k, DT_U32, x[0]);
    return tx_call(k, TI_PACK, DT_U32, x, E);
}

/* A registers of k step at k0 (run-time expression) into areg[4 mi + q] */
static void load_a(GemmLowering *L, TExpr *k0)
{
    TKernel *k = L->k;
    const Plan *p = &L->p;
    const Region *r = &L->s->src;
    ReadKind rk = read_kind(p, r->buf, p->ak, p->am);
    if (rk != RD_ELEMENTS && !ldmatrix_aligned(L, r))
        rk = RD_ELEMENTS;
    for (int mi = 0; mi < p->mi; mi++) {
        TExpr *mbase = add(k, tx_var(k, L->m0), ic(k, 16 * mi));
        TExpr *outs[4];
        for (int q = 0; q < 4; q++)
            outs[q] = reg(k, L->areg, 4 * mi + q);
        if (rk != RD_ELEMENTS) {
            /* lane l gives row l % 8 of matrix q = l / 8, which holds register q */
            TExpr *q = tx_var(k, L->lane8), *row = tx_var(k, L->lanerow);
            TExpr *m, *kk;
            TExpr *qlo = tx_bin(k, OP_BAND, q, ic(k, 1)), *qhi = tx_bin(k, OP_SHR, q, ic(k, 1));
            if (rk == RD_LDMATRIX) { /* rows are M, 16 bytes of K each */
                m = add(k, mbase, add(k, row, mul(k, qlo, 8)));
                kk = add(k, k0, mul(k, qhi, 4 * p->E));
            } else { /* rows are K, 8 elements of M each, transposed on the way */
                m = add(k, mbase, mul(k, qlo, 8));
                kk = add(k, k0, add(k, row, mul(k, qhi, 8)));
            }
            TExpr *idx[TL_MAX_RANK];
            elem_idx(k, r, p->am, m, p->ak, kk, idx);
            TExpr *ad = addr_of(k, r->buf, idx);
            intrin(L, TI_LDMATRIX, (4 << 1) | (rk == RD_LDMATRIX_TRANS), &ad, 1, outs, 4);
            continue;
        }
        for (int q = 0; q < 4; q++) {
            TExpr *x[4];
            for (int j = 0; j < p->E; j++) {
                TExpr *m = add(k, mbase, add(k, tx_var(k, L->grp), ic(k, 8 * (q & 1))));
                TExpr *kk = add(k, k0, add(k, mul(k, tx_var(k, L->tig), p->E), ic(k, j + 4 * p->E * (q >> 1))));
                TExpr *idx[TL_MAX_RANK];
                elem_idx(k, r, p->am, m, p->ak, kk, idx);
                x[j] = tx_load(k, r->buf, idx, r->buf->rank);
            }
            TExpr *ri = ic(k, 4 * mi + q);
            ts_push(k, L->out, ts_store(k, L->areg, &ri, 1, pack(k, x, p->E)));
        }
    }
}

/* B registers of k step at k0 into breg[2 ni + q] */
static void load_b(GemmLowering *L, TExpr *k0)
{
    TKernel *k = L->k;
    const Plan *p = &L->p;
    const Region *r = &L->s->dst;
    ReadKind rk = read_kind(p, r->buf, p->bk, p->bn);
    if (rk != RD_ELEMENTS && !ldmatrix_aligned(L, r))
        rk = RD_ELEMENTS;
    if (rk != RD_ELEMENTS) {
        /* x4: matrices (ni, q0) (ni, q1) (ni+1, q0) (ni+1, q1); an odd last tile takes x2 */
        for (int ni = 0; ni < p->ni; ni += 2) {
            int num = ni + 1 < p->ni ? 4 : 2;
            TExpr *q = tx_var(k, L->lane8), *row = tx_var(k, L->lanerow);
            TExpr *qlo = tx_bin(k, OP_BAND, q, ic(k, 1));
            TExpr *nt = num == 4 ? tx_bin(k, OP_SHR, q, ic(k, 1)) : ic(k, 0);
            TExpr *nbase = add(k, tx_var(k, L->n0), add(k, ic(k, 8 * ni), mul(k, nt, 8)));
            TExpr *n, *kk;
            if (rk == RD_LDMATRIX) { /* rows are N, 16 bytes of K each */
                n = add(k, nbase, row);
                kk = add(k, k0, mul(k, qlo, 4 * p->E));
            } else { /* rows are K, transposed */
                n = nbase;
                kk = add(k, k0, add(k, row, mul(k, qlo, 8)));
            }
            TExpr *idx[TL_MAX_RANK];
            elem_idx(k, r, p->bn, n, p->bk, kk, idx);
            TExpr *ad = addr_of(k, r->buf, idx);
            TExpr *outs[4];
            for (int o = 0; o < num; o++)
                outs[o] = reg(k, L->breg, 2 * ni + o);
            intrin(L, TI_LDMATRIX, (num << 1) | (rk == RD_LDMATRIX_TRANS), &ad, 1, outs, num);
        }
        return;
    }
    for (int ni = 0; ni < p->ni; ni++)
        for (int q = 0; q < 2; q++) {
            TExpr *x[4];
            for (int j = 0; j < p->E; j++) {
                TExpr *n = add(k, tx_var(k, L->n0), add(k, tx_var(k, L->grp), ic(k, 8 * ni)));
                TExpr *kk = add(k, k0, add(k, mul(k, tx_var(k, L->tig), p->E), ic(k, j + 4 * p->E * q)));
                TExpr *idx[TL_MAX_RANK];
                elem_idx(k, r, p->bn, n, p->bk, kk, idx);
                x[j] = tx_load(k, r->buf, idx, r->buf->rank);
            }
            TExpr *ri = ic(k, 2 * ni + q);
            ts_push(k, L->out, ts_store(k, L->breg, &ri, 1, pack(k, x, p->E)));
        }
}

/* the packed A register q of tile mi at k step kk: from the staging array or the frag */
static TExpr *a_operand(GemmLowering *L, int mi, int kk, int q)
{
    TKernel *k = L->k;
    const Plan *p = &L->p;
    TBuf *a = L->s->src.buf;
    if (a->scope != SC_FRAG)
        return reg(k, L->areg, 4 * mi + q);
    TBuf *ar = tir_frag_regs(k, a);
    TExpr *x[4];
    for (int j = 0; j < p->E; j++)
        x[j] = reg(k, ar, j + p->E * q + 4 * p->E * (kk + p->ks * mi));
    return pack(k, x, p->E);
}

static TExpr *b_operand(GemmLowering *L, int ni, int kk, int q)
{
    TKernel *k = L->k;
    const Plan *p = &L->p;
    TBuf *b = L->s->dst.buf;
    if (b->scope != SC_FRAG)
        return reg(k, L->breg, 2 * ni + q);
    TBuf *br = tir_frag_regs(k, b);
    TExpr *x[4];
    for (int j = 0; j < p->E; j++)
        x[j] = reg(k, br, j + p->E * q + 2 * p->E * (kk + p->ks * ni));
    return pack(k, x, p->E);
}

/* One k step: operands for all tiles, then MI x NI mma. kk is the compile-time step (frag
 * operands need it) or -1 inside a run-time loop, where k0 says where the step starts. */
static void k_step(GemmLowering *L, int kk, TExpr *k0)
{
    TKernel *k = L->k;
    const Plan *p = &L->p;
    if (L->s->src.buf->scope != SC_FRAG)
        load_a(L, k0);
    if (L->s->dst.buf->scope != SC_FRAG)
        load_b(L, k0);
    TBuf *cr = tir_frag_regs(k, L->s->c.buf);
    for (int mi = 0; mi < p->mi; mi++)
        for (int nj = 0; nj < p->ni; nj++) {
            /* serpentine order: consecutive mma share an operand */
            int ni = (mi & 1) ? p->ni - 1 - nj : nj;
            TExpr *args[10], *outs[4];
            for (int q = 0; q < 4; q++)
                args[q] = a_operand(L, mi, kk, q);
            for (int q = 0; q < 2; q++)
                args[4 + q] = b_operand(L, ni, kk, q);
            for (int c = 0; c < 4; c++) {
                outs[c] = reg(k, cr, c + 4 * (ni + p->ni * mi));
                args[6 + c] = outs[c];
            }
            intrin(L, TI_MMA, p->dt, args, 10, outs, 4);
        }
}

TStmt *lower_gemm(TKernel *k, TStmt *s, bool *ok)
{
    GemmLowering gl = {0}, *L = &gl;
    L->k = k;
    L->s = s;
    L->out = ts_seq(k);
    if (!make_plan(k, s, &L->p)) {
        *ok = false;
        return L->out;
    }
    const Plan *p = &L->p;
    TBuf *a = s->src.buf, *b = s->dst.buf, *c = s->c.buf;
    if (!c->layout || !layout_equal(c->layout, layout_c(k, p, c)) ||
        (a->scope == SC_FRAG && (!a->layout || !layout_equal(a->layout, layout_a(k, p, a)))) ||
        (b->scope == SC_FRAG && (!b->layout || !layout_equal(b->layout, layout_b(k, p, b))))) {
        diag_ice(k->diag, "lower_tiles", "gemm operand without its mma layout");
        *ok = false;
        return L->out;
    }
    TBuf *cr = tir_frag_regs(k, c);
    if (s->clear)
        for (int r = 0; r < c->layout->nregs; r++) {
            TExpr *ri = ic(k, r);
            ts_push(k, L->out, ts_store(k, cr, &ri, 1, tx_const_float(k, DT_F32, 0)));
        }
    TExpr *tid = tx_special(k, SP_TID_X);
    TVar *warp = let(L, "warp", tx_bin(k, OP_DIV, tid, ic(k, 32)));
    TVar *lane = let(L, "lane", tx_bin(k, OP_MOD, tid, ic(k, 32)));
    L->grp = let(L, "g", tx_bin(k, OP_DIV, tx_var(k, lane), ic(k, 4)));
    L->tig = let(L, "t", tx_bin(k, OP_MOD, tx_var(k, lane), ic(k, 4)));
    L->lane8 = let(L, "mat", tx_bin(k, OP_DIV, tx_var(k, lane), ic(k, 8)));
    L->lanerow = let(L, "mrow", tx_bin(k, OP_MOD, tx_var(k, lane), ic(k, 8)));
    TExpr *wn = tx_bin(k, OP_MOD, tx_var(k, warp), ic(k, p->wn));
    TExpr *wm = tx_bin(k, OP_MOD, tx_bin(k, OP_DIV, tx_var(k, warp), ic(k, p->wn)), ic(k, p->wm));
    L->m0 = let(L, "m0", mul(k, wm, p->M / p->wm));
    L->n0 = let(L, "n0", mul(k, wn, p->N / p->wn));
    int64_t na = 4LL * p->mi, nb = 2LL * p->ni;
    L->areg = tir_buf(k, "a.op", SC_LOCAL, DT_U32, 1, &na);
    L->breg = tir_buf(k, "b.op", SC_LOCAL, DT_U32, 1, &nb);
    bool frag_operand = a->scope == SC_FRAG || b->scope == SC_FRAG;
    if (frag_operand || p->ks <= 16) {
        for (int kk = 0; kk < p->ks; kk++)
            k_step(L, kk, ic(k, (int64_t)kk * p->ik));
        return L->out;
    }
    /* long K from shared memory: a loop, a few k steps per iteration */
    int u = p->ks % 4 == 0 ? 4 : p->ks % 2 == 0 ? 2 : 1;
    TVar *kv = tir_var(k, "kstep", DT_I32, false);
    TStmt *loop = ts_for(k, kv, ic(k, 0), ic(k, p->ks), ic(k, u), FOR_SERIAL);
    TStmt *outer = L->out;
    L->out = ts_seq(k);
    for (int j = 0; j < u; j++)
        k_step(L, -1, mul(k, add(k, tx_var(k, kv), ic(k, j)), p->ik));
    loop->body = L->out->body;
    loop->nbody = L->out->nbody;
    ts_push(k, outer, loop);
    return outer;
}
