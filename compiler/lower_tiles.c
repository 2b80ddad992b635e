/* lower_tiles.c — the pass that removes the tile operations: a walk over the kernel that hands
 * each to the lowering of its family, each in a file of its own (lower_copy.c, lower_fill.c,
 * lower_reduce.c, lower_parallel.c, lower_cumsum.c, lower_gemm.c), fences the shared memory a
 * tile operation writes with barriers and drops the barriers that order nothing. Frags become
 * per-thread register arrays (tir_frag_regs), indexed by compile-time constants only. */
#include "tir.h"

typedef struct LT {
    TKernel *k;
    bool ok;
    int64_t size; /* of the code the tile operations lowered so far make (TL_MAX_CODE_SIZE) */
} LT;

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
    case TS_FILL: {
        TStmt *r = lower_fill(L->k, s, &L->ok);
        return s->dst.buf->scope == SC_SHARED ? fenced(L, r) : r;
    }
    case TS_REDUCE: return lower_reduce(L->k, s, &L->ok);
    case TS_PARALLEL: {
        TStmt *r = lower_parallel(L->k, s, &L->ok);
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

static bool is_tile_op(const TStmt *s)
{
    return s->kind == TS_COPY || s->kind == TS_FILL || s->kind == TS_REDUCE || s->kind == TS_PARALLEL ||
           s->kind == TS_CUMSUM || s->kind == TS_GEMM;
}

/* A lowered tile operation keeps its statement's location (for diagnostics about the code it
 * makes), and what the lowered operations make stays within TL_MAX_CODE_SIZE as it is made: false
 * after the diagnostic, when the rest is left as it is. */
static bool lowered(LT *L, const TStmt *s, TStmt *r)
{
    if (r->loc.file < 0)
        r->loc = s->loc;
    L->size += tir_code_size(r, TL_MAX_CODE_SIZE);
    if (L->size <= TL_MAX_CODE_SIZE)
        return true;
    if (L->ok)
        tir_code_size_error(L->k, s->loc);
    L->ok = false;
    return false;
}

/* A copy may take the copies after it along (lower_copy.c): their places become empty. */
static void lower_list(LT *L, TStmt **v, int n)
{
    for (int i = 0; i < n && L->size <= TL_MAX_CODE_SIZE; i++) {
        TStmt *s = v[i];
        if (s->kind != TS_COPY) {
            v[i] = lower_stmt(L, s);
            if (is_tile_op(s) && !lowered(L, s, v[i]))
                return;
            continue;
        }
        int taken;
        TStmt *r = lower_copy(L->k, v + i, n - i, &taken, &L->ok);
        v[i] = s->dst.buf->scope == SC_SHARED ? fenced(L, r) : r;
        for (int m = i + 1; m < i + taken; m++)
            v[m] = ts_seq(L->k);
        if (!lowered(L, s, v[i]))
            return;
        i += taken - 1;
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
            tir_frag_regs(k, k->bufs[i]);
    return L.ok;
}
