/* tirsim.c — runs the thread-level tile IR of a kernel on the CPU, block by block, all threads of
 * a block in lock step, to check what the gemm, cumsum and pipeline lowerings compute without a
 * GPU.
 *
 * It compiles a .tl kernel through the same passes as compile.c (lower_ast, layout, pipeline,
 * lower_tiles, smem_plan) and interprets the result: every expression is evaluated for all
 * active threads at once, so shuffles read the other lanes' operands directly, a barrier checks
 * that every live thread reaches it, and an `if` narrows the set of active threads. The target
 * instructions follow the PTX ISA: mma.sync builds the 16 x 8 x K product from the fragment
 * formulas of the ISA (written out per type here, independently of lower_gemm.c's generic
 * formula), ldmatrix takes row addresses from lanes 8i..8i+7, cp.async copies at once with its
 * zero-fill (so an ordering bug of the pipeline is not caught, a wrong address or stage is), and
 * every vector or asynchronous access checks the alignment the compiler claimed. Global and
 * shared accesses are bounds-checked.
 *
 * The cases at the bottom give each kernel integer-valued inputs, so that products and sums are
 * exact in f32 and the results can be compared bit for bit with a plain C reference. */
#include "sema.h"
#include "tir.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef union V {
    double f;
    int64_t i;
} V;

typedef struct Tensor {
    DType dt;
    int rank;
    int64_t dims[TL_MAX_RANK];
    int64_t strides[TL_MAX_RANK];
    uint8_t *data;
    int64_t bytes;
} Tensor;

typedef struct Sim {
    TKernel *k;
    int nt;
    Tensor *tensors;      /* by kernel parameter */
    V *scalars;
    uint8_t *smem;
    int64_t smem_size;
    V **vars;             /* by id: one value per thread */
    V **locals;           /* by buffer id: nt * size values */
    int ctaid[3], nctaid[3];
    bool *returned, *brk, *cont;
    bool failed;
    char err[512];
} Sim;

static void fail(Sim *S, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(Sim *S, const char *fmt, ...)
{
    if (S->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(S->err, sizeof S->err, fmt, ap);
    va_end(ap);
    S->failed = true;
}

/* ---- numbers ---- */

static int64_t wrap_int(DType dt, int64_t v)
{
    int bits = dtype_bits(dt);
    if (dt == DT_BOOL)
        return v != 0;
    if (bits >= 64)
        return v;
    uint64_t m = (1ull << bits) - 1, u = (uint64_t)v & m;
    if (dtype_is_signed(dt) && (u >> (bits - 1)))
        u |= ~m;
    return (int64_t)u;
}

static float bits_f32(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static uint32_t f32_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t b = f32_bits(f);
    if ((b & 0x7FFFFFFF) > 0x7F800000)
        return (uint16_t)((b >> 16) | 0x40);
    b += 0x7FFF + ((b >> 16) & 1);
    return (uint16_t)(b >> 16);
}

static double decode_e4m3(uint8_t c)
{
    int s = c >> 7, e = (c >> 3) & 15, m = c & 7;
    if (e == 15 && m == 7)
        return NAN;
    double v = e ? ldexp(1.0 + m / 8.0, e - 7) : ldexp(m / 8.0, -6);
    return s ? -v : v;
}

static double decode_e5m2(uint8_t c)
{
    int s = c >> 7, e = (c >> 2) & 31, m = c & 3;
    double v;
    if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = e ? ldexp(1.0 + m / 4.0, e - 15) : ldexp(m / 4.0, -14);
    return s ? -v : v;
}

/* the value of an element of type dt in memory */
static V mem_get(DType dt, const uint8_t *p)
{
    V v = {0};
    switch (dt) {
    case DT_F32: {
        uint32_t b;
        memcpy(&b, p, 4);
        v.f = bits_f32(b);
        break;
    }
    case DT_F64: memcpy(&v.f, p, 8); break;
    case DT_BF16: {
        uint16_t h;
        memcpy(&h, p, 2);
        v.f = bits_f32((uint32_t)h << 16);
        break;
    }
    case DT_F16: {
        _Float16 h;
        memcpy(&h, p, 2);
        v.f = (double)h;
        break;
    }
    case DT_E4M3: v.f = decode_e4m3(*p); break;
    case DT_E5M2: v.f = decode_e5m2(*p); break;
    default: {
        int64_t x = 0;
        memcpy(&x, p, (size_t)dtype_storage_bytes(dt));
        v.i = wrap_int(dt == DT_BOOL ? DT_U8 : dt, x);
        break;
    }
    }
    return v;
}

/* rounds a double to the values of float type dt */
static double round_to(DType dt, double x)
{
    switch (dt) {
    case DT_F32: return (float)x;
    case DT_BF16: return bits_f32((uint32_t)f32_to_bf16((float)x) << 16);
    case DT_F16: return (double)(_Float16)(float)x;
    default: return x;
    }
}

static bool mem_put(DType dt, uint8_t *p, V v)
{
    switch (dt) {
    case DT_F32: {
        uint32_t b = f32_bits((float)v.f);
        memcpy(p, &b, 4);
        return true;
    }
    case DT_F64: memcpy(p, &v.f, 8); return true;
    case DT_BF16: {
        uint16_t h = f32_to_bf16((float)v.f);
        memcpy(p, &h, 2);
        return true;
    }
    case DT_F16: {
        _Float16 h = (_Float16)(float)v.f;
        memcpy(p, &h, 2);
        return true;
    }
    case DT_E4M3:
    case DT_E5M2:
        /* only values that came from fp8 memory are stored back: find their code */
        for (int c = 0; c < 256; c++)
            if ((dt == DT_E4M3 ? decode_e4m3((uint8_t)c) : decode_e5m2((uint8_t)c)) == v.f) {
                *p = (uint8_t)c;
                return true;
            }
        return false;
    default: memcpy(p, &v.i, (size_t)dtype_storage_bytes(dt)); return true;
    }
}

/* a value as the raw bits of its storage (bitcast, packing) */
static uint64_t raw_bits(DType dt, V v)
{
    uint8_t b[8] = {0};
    if (dt == DT_E4M3 || dt == DT_E5M2) {
        /* only values that came from memory reach here; find the code */
        for (int c = 0; c < 256; c++)
            if ((dt == DT_E4M3 ? decode_e4m3((uint8_t)c) : decode_e5m2((uint8_t)c)) == v.f)
                return (uint64_t)c;
        return 0;
    }
    mem_put(dt, b, v);
    uint64_t r;
    memcpy(&r, b, 8);
    int bits = dtype_bits(dt);
    return bits >= 64 ? r : r & ((1ull << bits) - 1);
}

static V from_bits(DType dt, uint64_t bits)
{
    uint8_t b[8];
    memcpy(b, &bits, 8);
    return mem_get(dt, b);
}

static V convert(DType from, DType to, V v)
{
    V r = {0};
    bool fi = dtype_is_float(from), ti = dtype_is_float(to);
    if (fi && ti)
        r.f = round_to(to, v.f);
    else if (!fi && ti)
        r.f = round_to(to, dtype_kind(from) == DK_UINT ? (double)(uint64_t)v.i : (double)v.i);
    else if (fi && !ti) {
        if (to == DT_BOOL)
            r.i = v.f != 0;
        else if (isnan(v.f))
            r.i = 0;
        else {
            double t = trunc(v.f);
            int bits = dtype_bits(to);
            double lo = dtype_is_signed(to) ? -ldexp(1, bits - 1) : 0, hi = dtype_is_signed(to) ? ldexp(1, bits - 1) - 1 : ldexp(1, bits) - 1;
            r.i = wrap_int(to, (int64_t)(t < lo ? lo : t > hi ? hi : t));
        }
    } else
        r.i = to == DT_BOOL ? v.i != 0 : wrap_int(to, v.i);
    return r;
}

/* ---- addresses ----
 * An address is space << 48 | byte offset: space 1 + p for tensor parameter p, 0x7FFF for shared. */
#define SHARED_SPACE 0x7FFFll

static int64_t elem_lin(Sim *S, const TBuf *b, const int64_t *idx)
{
    int64_t lin = 0;
    for (int d = 0; d < b->rank; d++) {
        int64_t s;
        if (b->scope == SC_GLOBAL) {
            s = S->tensors[b->param].strides[d];
        } else {
            s = 1;
            for (int i = b->rank - 1; i > d; i--)
                s *= b->shape[i] + (i == b->rank - 1 ? b->row_pad : 0);
        }
        lin += idx[d] * s;
    }
    if (b->scope == SC_SHARED && b->swizzle && b->rank >= 2) { /* as tir.h says: 16-byte chunks XOR key */
        int64_t x = (idx[b->rank - 2] / b->swizzle) & 7;
        int64_t key = b->swizzle_gemm ? 2 * (x % 4) + x / 4 : x;
        lin ^= key * (16 / dtype_storage_bytes(b->dt));
    }
    return lin;
}

static int64_t elem_addr(Sim *S, const TBuf *b, const int64_t *idx)
{
    int64_t lin = elem_lin(S, b, idx);
    int es = dtype_storage_bytes(b->dt);
    if (b->scope == SC_SHARED)
        return (SHARED_SPACE << 48) | (b->smem_offset + lin * es);
    if (b->param < 0) {
        fail(S, "views are not simulated");
        return 0;
    }
    return ((int64_t)(b->param + 1) << 48) | (lin * es);
}

static uint8_t *resolve(Sim *S, int64_t addr, int bytes)
{
    int64_t space = (addr >> 48) & 0x7FFF, off = addr & ((1ll << 48) - 1);
    if (space == SHARED_SPACE) {
        if (off < 0 || off + bytes > S->smem_size) {
            fail(S, "shared access at byte %lld (+%d) outside the %lld bytes of shared memory", (long long)off, bytes,
                 (long long)S->smem_size);
            return NULL;
        }
        return S->smem + off;
    }
    Tensor *t = &S->tensors[space - 1];
    if (off < 0 || off + bytes > t->bytes) {
        fail(S, "global access at byte %lld (+%d) outside tensor %lld (%lld bytes)", (long long)off, bytes,
             (long long)(space - 1), (long long)t->bytes);
        return NULL;
    }
    return t->data + off;
}

/* ---- expressions: one value per thread, for the threads in m ---- */

static void eval(Sim *S, const TExpr *e, const bool *m, V *out);

static V *tmp(Sim *S) { return calloc((size_t)S->nt, sizeof(V)); }

static int64_t special(Sim *S, Special sp, int t)
{
    switch (sp) {
    case SP_TID_X: return t;
    case SP_TID_Y:
    case SP_TID_Z: return 0;
    case SP_CTAID_X: return S->ctaid[0];
    case SP_CTAID_Y: return S->ctaid[1];
    case SP_CTAID_Z: return S->ctaid[2];
    case SP_NTID_X: return S->nt;
    case SP_NTID_Y:
    case SP_NTID_Z: return 1;
    case SP_NCTAID_X: return S->nctaid[0];
    case SP_NCTAID_Y: return S->nctaid[1];
    case SP_NCTAID_Z: return S->nctaid[2];
    case SP_LANE: return t % 32;
    case SP_WARP: return t / 32;
    }
    return 0;
}

static V binop(Sim *S, OpKind op, DType dt, V a, V b)
{
    V r = {0};
    if (dtype_is_float(dt)) {
        if (dt == DT_F32) {
            float x = (float)a.f, y = (float)b.f;
            switch (op) {
            case OP_ADD: r.f = x + y; return r;
            case OP_SUB: r.f = x - y; return r;
            case OP_MUL: r.f = x * y; return r;
            case OP_DIV: r.f = x / y; return r;
            default: break;
            }
        } else {
            switch (op) {
            case OP_ADD: r.f = round_to(dt, a.f + b.f); return r;
            case OP_SUB: r.f = round_to(dt, a.f - b.f); return r;
            case OP_MUL: r.f = round_to(dt, a.f * b.f); return r;
            case OP_DIV: r.f = round_to(dt, a.f / b.f); return r;
            default: break;
            }
        }
        switch (op) {
        case OP_EQ: r.i = a.f == b.f; return r;
        case OP_NE: r.i = a.f != b.f; return r;
        case OP_LT: r.i = a.f < b.f; return r;
        case OP_LE: r.i = a.f <= b.f; return r;
        case OP_GT: r.i = a.f > b.f; return r;
        case OP_GE: r.i = a.f >= b.f; return r;
        default: fail(S, "float operation %d", op); return r;
        }
    }
    bool s = dtype_is_signed(dt);
    uint64_t ua = (uint64_t)a.i, ub = (uint64_t)b.i;
    int bits = dt == DT_BOOL ? 1 : dtype_bits(dt);
    switch (op) {
    case OP_ADD: r.i = wrap_int(dt, (int64_t)(ua + ub)); return r;
    case OP_SUB: r.i = wrap_int(dt, (int64_t)(ua - ub)); return r;
    case OP_MUL: r.i = wrap_int(dt, (int64_t)(ua * ub)); return r;
    case OP_DIV:
    case OP_MOD:
        if (b.i == 0) {
            fail(S, "integer division by zero");
            return r;
        }
        if (s)
            r.i = op == OP_DIV ? a.i / b.i : a.i % b.i;
        else
            r.i = (int64_t)(op == OP_DIV ? ua / ub : ua % ub);
        r.i = wrap_int(dt, r.i);
        return r;
    case OP_SHL: r.i = b.i >= bits ? 0 : wrap_int(dt, (int64_t)(ua << b.i)); return r;
    case OP_SHR:
        if (s)
            r.i = b.i >= bits ? (a.i < 0 ? -1 : 0) : a.i >> b.i;
        else
            r.i = b.i >= bits ? 0 : (int64_t)((ua & (bits >= 64 ? ~0ull : (1ull << bits) - 1)) >> b.i);
        return r;
    case OP_BAND:
    case OP_LAND: r.i = a.i & b.i; return r;
    case OP_BOR:
    case OP_LOR: r.i = a.i | b.i; return r;
    case OP_BXOR: r.i = wrap_int(dt, a.i ^ b.i); return r;
    case OP_EQ: r.i = a.i == b.i; return r;
    case OP_NE: r.i = a.i != b.i; return r;
    case OP_LT: r.i = s ? a.i < b.i : ua < ub; return r;
    case OP_LE: r.i = s ? a.i <= b.i : ua <= ub; return r;
    case OP_GT: r.i = s ? a.i > b.i : ua > ub; return r;
    case OP_GE: r.i = s ? a.i >= b.i : ua >= ub; return r;
    default: fail(S, "integer operation %d", op); return r;
    }
}

static void load_idx(Sim *S, const TExpr *e, const bool *m, int64_t **idx)
{
    for (int d = 0; d < e->nargs; d++) {
        V *v = tmp(S);
        eval(S, e->args[d], m, v);
        for (int t = 0; t < S->nt; t++)
            idx[t][d] = v[t].i;
        free(v);
    }
}

static V *local_of(Sim *S, const TBuf *b)
{
    if (!S->locals[b->id]) {
        int64_t n = 1;
        for (int d = 0; d < b->rank; d++)
            n *= b->shape[d];
        S->locals[b->id] = calloc((size_t)(n * S->nt), sizeof(V));
    }
    return S->locals[b->id];
}

static int64_t local_size(const TBuf *b)
{
    int64_t n = 1;
    for (int d = 0; d < b->rank; d++)
        n *= b->shape[d];
    return n;
}

/* Shared-memory wavefronts, against the fewest the bytes need: a warp's request takes as many
 * wavefronts as the most distinct 4-byte words any one of the 32 banks serves, and at least one
 * per 128 bytes. warp_wavefronts adds up one instruction over the warps of the block (the lanes
 * in m; ldmatrix passes one matrix's 8 lanes at a time, the unit it reads in). */
static void warp_wavefronts(Sim *S, const int64_t *addr, const bool *m, int bytes, int64_t *wf, int64_t *ideal_wf)
{
    for (int w = 0; w * 32 < S->nt; w++) {
        int64_t words[32][32];
        int nwords[32] = {0}, total = 0, worst = 0;
        for (int t = w * 32; t < w * 32 + 32 && t < S->nt; t++) {
            if (!m[t])
                continue;
            total += bytes;
            for (int64_t word = addr[t] / 4; word < (addr[t] + bytes + 3) / 4; word++) {
                int bank = (int)(word % 32), seen = 0;
                for (int i = 0; i < nwords[bank]; i++)
                    seen |= words[bank][i] == word;
                if (!seen && nwords[bank] < 32)
                    words[bank][nwords[bank]++] = word;
                if (nwords[bank] > worst)
                    worst = nwords[bank];
            }
        }
        int ideal = (total + 127) / 128;
        *wf += worst > ideal ? worst : ideal;
        *ideal_wf += ideal;
    }
}

/* the vector accesses' total, for the transposes */
static int64_t smem_wavefronts, smem_wavefronts_ideal;

static void count_wavefronts(Sim *S, const int64_t *addr, const bool *m, int bytes)
{
    warp_wavefronts(S, addr, m, bytes, &smem_wavefronts, &smem_wavefronts_ideal);
}

/* every shared access by buffer and kind, for the gemm cases */
enum { ACC_LOAD, ACC_STORE, ACC_VLOAD, ACC_VSTORE, ACC_LDMATRIX, ACC_CP_ASYNC, ACC_KINDS };
static const char *const ACC_NAMES[ACC_KINDS] = {"loads", "stores", "vector loads", "vector stores", "ldmatrix",
                                                 "cp.async"};
#define ACC_READS ((1u << ACC_LOAD) | (1u << ACC_VLOAD) | (1u << ACC_LDMATRIX))
#define ACC_WRITES ((1u << ACC_STORE) | (1u << ACC_VSTORE) | (1u << ACC_CP_ASYNC))
typedef struct BankTally {
    char buf[64];
    int64_t wf[ACC_KINDS], ideal[ACC_KINDS];
} BankTally;
static BankTally bank_tally[16];
static int nbank_tally;

static void tally_banks(Sim *S, const TBuf *b, int kind, const int64_t *addr, const bool *m, int bytes)
{
    int i = 0;
    while (i < nbank_tally && strcmp(bank_tally[i].buf, b->name))
        i++;
    if (i == nbank_tally) {
        if (nbank_tally == 16)
            return;
        memset(&bank_tally[i], 0, sizeof bank_tally[i]);
        snprintf(bank_tally[i].buf, sizeof bank_tally[i].buf, "%s", b->name);
        nbank_tally++;
    }
    warp_wavefronts(S, addr, m, bytes, &bank_tally[i].wf[kind], &bank_tally[i].ideal[kind]);
}

/* the shared tile that holds byte `off` */
static const TBuf *shared_at(Sim *S, int64_t off)
{
    for (int i = 0; i < S->k->nbufs; i++) {
        const TBuf *b = S->k->bufs[i];
        if (b->scope != SC_SHARED || b->scratch || off < b->smem_offset)
            continue;
        int64_t n = dtype_storage_bytes(b->dt);
        for (int d = 0; d < b->rank; d++)
            n *= b->shape[d] + (d == b->rank - 1 ? b->row_pad : 0);
        if (off < b->smem_offset + n)
            return b;
    }
    return NULL;
}

static void eval_load(Sim *S, const TExpr *e, const bool *m, V *out)
{
    int64_t(*idx)[TL_MAX_RANK] = calloc((size_t)S->nt, sizeof *idx);
    int64_t *rows[1024];
    for (int t = 0; t < S->nt; t++)
        rows[t] = idx[t];
    load_idx(S, e, m, rows);
    const TBuf *b = e->buf;
    int64_t *offs = calloc((size_t)S->nt, sizeof *offs);
    for (int t = 0; t < S->nt && !S->failed; t++) {
        if (!m[t])
            continue;
        if (b->scope == SC_LOCAL) {
            int64_t lin = 0;
            for (int d = 0; d < b->rank; d++)
                lin = lin * b->shape[d] + idx[t][d];
            if (lin < 0 || lin >= local_size(b)) {
                fail(S, "register array %s index %lld out of range", b->name, (long long)lin);
                break;
            }
            out[t] = local_of(S, b)[lin * S->nt + t];
            continue;
        }
        if (b->scope == SC_FRAG) {
            fail(S, "frag access after lowering");
            break;
        }
        int64_t a = elem_addr(S, b, idx[t]);
        offs[t] = a & ((1ll << 48) - 1);
        uint8_t *p = resolve(S, a, dtype_storage_bytes(b->dt));
        if (p)
            out[t] = mem_get(b->dt, p);
    }
    if (b->scope == SC_SHARED && !S->failed)
        tally_banks(S, b, ACC_LOAD, offs, m, dtype_storage_bytes(b->dt));
    free(idx);
    free(offs);
}

static bool warp_full(Sim *S, const bool *m, int t)
{
    int w = t / 32 * 32;
    for (int l = 0; l < 32; l++)
        if (!m[w + l])
            return false;
    return true;
}

static void eval_call(Sim *S, const TExpr *e, const bool *m, V *out)
{
    int n = e->nargs;
    V *a[8] = {0};
    if (e->builtin == TI_ADDR) {
        const TExpr *ld = e->args[0];
        int64_t(*idx)[TL_MAX_RANK] = calloc((size_t)S->nt, sizeof *idx);
        int64_t *rows[1024];
        for (int t = 0; t < S->nt; t++)
            rows[t] = idx[t];
        load_idx(S, ld, m, rows);
        for (int t = 0; t < S->nt; t++)
            if (m[t])
                out[t].i = elem_addr(S, ld->buf, idx[t]);
        free(idx);
        return;
    }
    if (n > 8) {
        fail(S, "call with %d arguments", n);
        return;
    }
    for (int i = 0; i < n; i++) {
        a[i] = tmp(S);
        eval(S, e->args[i], m, a[i]);
    }
    DType at = n ? e->args[0]->dt : DT_NONE;
    for (int t = 0; t < S->nt && !S->failed; t++) {
        if (!m[t])
            continue;
        switch (e->builtin) {
        case BI_MIN:
        case BI_MAX: {
            bool lt = dtype_is_float(at) ? a[0][t].f < a[1][t].f
                                          : (dtype_is_signed(at) ? a[0][t].i < a[1][t].i : (uint64_t)a[0][t].i < (uint64_t)a[1][t].i);
            out[t] = (e->builtin == BI_MIN) == lt ? a[0][t] : a[1][t];
            break;
        }
        case BI_CDIV: {
            int64_t x = a[0][t].i, y = a[1][t].i;
            out[t].i = (x + y - 1) / y;
            break;
        }
        case BI_SELECT: out[t] = a[0][t].i ? a[1][t] : a[2][t]; break;
        case BI_SHFL:
        case BI_SHFL_UP:
        case BI_SHFL_DOWN:
        case BI_SHFL_XOR: {
            if (!warp_full(S, m, t)) {
                fail(S, "shuffle with inactive lanes in the warp of thread %d", t);
                break;
            }
            if (n > 2) {
                fail(S, "shuffle widths are not simulated");
                break;
            }
            int lane = t % 32, src = lane;
            int64_t x = a[1][t].i;
            if (e->builtin == BI_SHFL)
                src = (int)(x & 31);
            else if (e->builtin == BI_SHFL_UP)
                src = lane - x >= 0 ? (int)(lane - x) : lane;
            else if (e->builtin == BI_SHFL_DOWN)
                src = lane + x < 32 ? (int)(lane + x) : lane;
            else
                src = (int)((lane ^ x) & 31);
            out[t] = a[0][t - lane + src];
            break;
        }
        case TI_PACK: {
            int w = 32 / n;
            uint64_t r = 0;
            for (int i = 0; i < n; i++)
                r |= (raw_bits(e->args[i]->dt, a[i][t]) & ((1ull << w) - 1)) << (i * w);
            out[t].i = (int64_t)r;
            break;
        }
        default: fail(S, "call of builtin %d is not simulated", e->builtin); break;
        }
    }
    for (int i = 0; i < n; i++)
        free(a[i]);
}

static void eval(Sim *S, const TExpr *e, const bool *m, V *out)
{
    if (S->failed)
        return;
    switch (e->kind) {
    case TX_CONST:
        for (int t = 0; t < S->nt; t++) {
            if (dtype_is_float(e->dt))
                out[t].f = e->fval;
            else
                out[t].i = e->ival;
        }
        return;
    case TX_VAR: {
        V *v = S->vars[e->var->id];
        if (!v) {
            fail(S, "variable %s.%d read before it is set", e->var->name, e->var->id);
            return;
        }
        for (int t = 0; t < S->nt; t++)
            if (m[t])
                out[t] = v[t];
        return;
    }
    case TX_PARAM:
        for (int t = 0; t < S->nt; t++)
            out[t] = S->scalars[e->param];
        return;
    case TX_DIM:
        for (int t = 0; t < S->nt; t++)
            out[t].i = S->tensors[e->param].dims[e->axis];
        return;
    case TX_STRIDE:
        for (int t = 0; t < S->nt; t++)
            out[t].i = S->tensors[e->param].strides[e->axis];
        return;
    case TX_LEN: fail(S, "tensor lists are not simulated (the emulator runs them)"); return;
    case TX_SPECIAL:
        for (int t = 0; t < S->nt; t++)
            out[t].i = special(S, e->special, t);
        return;
    case TX_UN: {
        eval(S, e->a, m, out);
        for (int t = 0; t < S->nt; t++) {
            if (!m[t])
                continue;
            if (e->op == OP_NEG) {
                if (dtype_is_float(e->dt))
                    out[t].f = -out[t].f;
                else
                    out[t].i = wrap_int(e->dt, -out[t].i);
            } else if (e->op == OP_NOT) {
                out[t].i = !out[t].i;
            } else {
                out[t].i = wrap_int(e->dt, ~out[t].i);
            }
        }
        return;
    }
    case TX_BIN: {
        V *b = tmp(S);
        eval(S, e->a, m, out);
        if (e->op == OP_LAND || e->op == OP_LOR) {
            /* the right side only where the left does not decide (it may guard a load) */
            bool *m2 = calloc((size_t)S->nt, 1);
            for (int t = 0; t < S->nt; t++)
                m2[t] = m[t] && (e->op == OP_LAND ? out[t].i != 0 : out[t].i == 0);
            eval(S, e->b, m2, b);
            for (int t = 0; t < S->nt; t++)
                if (m2[t])
                    out[t].i = b[t].i != 0;
            free(m2);
            free(b);
            return;
        }
        eval(S, e->b, m, b);
        for (int t = 0; t < S->nt; t++)
            if (m[t])
                out[t] = binop(S, e->op, e->a->dt, out[t], b[t]);
        free(b);
        return;
    }
    case TX_SELECT: {
        V *c = tmp(S), *b = tmp(S);
        eval(S, e->a, m, c);
        eval(S, e->b, m, out);
        eval(S, e->c, m, b);
        for (int t = 0; t < S->nt; t++)
            if (m[t] && !c[t].i)
                out[t] = b[t];
        free(c);
        free(b);
        return;
    }
    case TX_CVT:
        eval(S, e->a, m, out);
        for (int t = 0; t < S->nt; t++)
            if (m[t])
                out[t] = convert(e->a->dt, e->dt, out[t]);
        return;
    case TX_BITCAST:
        eval(S, e->a, m, out);
        for (int t = 0; t < S->nt; t++)
            if (m[t])
                out[t] = from_bits(e->dt, raw_bits(e->a->dt, out[t]));
        return;
    case TX_LOAD: eval_load(S, e, m, out); return;
    case TX_CALL: eval_call(S, e, m, out); return;
    }
}

/* ---- target instructions ---- */

/* Element (row, col) that lane l, register q, element j of a fragment holds, per the PTX ISA. */
typedef struct Frag { int row, col; } Frag;

static Frag frag_a(DType dt, int lane, int q, int j)
{
    int g = lane >> 2, t = lane & 3;
    Frag f = {0, 0};
    if (dt == DT_BF16 || dt == DT_F16) { /* m16n8k16: a0..a7, two per register */
        int i = 2 * q + j;
        f.row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
        f.col = t * 2 + (i & 1) + (i >= 4 ? 8 : 0);
    } else if (dt == DT_F32) { /* m16n8k8 .tf32: a0..a3 */
        f.row = (q == 0 || q == 2) ? g : g + 8;
        f.col = (q < 2) ? t : t + 4;
    } else { /* m16n8k32 .e4m3/.e5m2: a0..a15, four per register */
        int i = 4 * q + j;
        f.row = (i < 4 || (i >= 8 && i < 12)) ? g : g + 8;
        f.col = t * 4 + (i & 3) + (i >= 8 ? 16 : 0);
    }
    return f;
}

static Frag frag_b(DType dt, int lane, int q, int j)
{
    int g = lane >> 2, t = lane & 3;
    Frag f = {0, g};
    if (dt == DT_BF16 || dt == DT_F16) {
        int i = 2 * q + j;
        f.row = t * 2 + (i & 1) + (i >= 2 ? 8 : 0);
    } else if (dt == DT_F32) {
        f.row = q == 0 ? t : t + 4;
    } else {
        int i = 4 * q + j;
        f.row = t * 4 + (i & 3) + (i >= 4 ? 16 : 0);
    }
    return f;
}

static double elem_from_reg(DType dt, uint32_t reg, int j)
{
    if (dt == DT_F32) /* tf32: the low 13 bits are ignored */
        return bits_f32(reg & ~0x1FFFu);
    if (dt == DT_BF16)
        return bits_f32(((reg >> (16 * j)) & 0xFFFF) << 16);
    if (dt == DT_F16) {
        uint16_t h = (uint16_t)(reg >> (16 * j));
        _Float16 x;
        memcpy(&x, &h, 2);
        return (double)x;
    }
    uint8_t c = (uint8_t)(reg >> (8 * j));
    return dt == DT_E4M3 ? decode_e4m3(c) : decode_e5m2(c);
}

static void sim_mma(Sim *S, DType dt, V **args, const bool *m, V **res)
{
    int E = dt == DT_F32 ? 1 : (dt == DT_BF16 || dt == DT_F16) ? 2 : 4, K = 8 * E;
    for (int w = 0; w < S->nt; w += 32) {
        if (!m[w])
            continue;
        if (!warp_full(S, m, w)) {
            fail(S, "mma.sync with inactive lanes");
            return;
        }
        double A[16][32], B[32][8], C[16][8];
        for (int l = 0; l < 32; l++) {
            for (int q = 0; q < 4; q++)
                for (int j = 0; j < E; j++) {
                    Frag f = frag_a(dt, l, q, j);
                    A[f.row][f.col] = elem_from_reg(dt, (uint32_t)args[q][w + l].i, j);
                }
            for (int q = 0; q < 2; q++)
                for (int j = 0; j < E; j++) {
                    Frag f = frag_b(dt, l, q, j);
                    B[f.row][f.col] = elem_from_reg(dt, (uint32_t)args[4 + q][w + l].i, j);
                }
            for (int c = 0; c < 4; c++) /* C: row g (+8 for c2, c3), col 2t + (c & 1) */
                C[(l >> 2) + (c >= 2 ? 8 : 0)][(l & 3) * 2 + (c & 1)] = args[6 + c][w + l].f;
        }
        for (int l = 0; l < 32; l++)
            for (int c = 0; c < 4; c++) {
                int r = (l >> 2) + (c >= 2 ? 8 : 0), col = (l & 3) * 2 + (c & 1);
                double acc = C[r][col];
                for (int kk = 0; kk < K; kk++)
                    acc += A[r][kk] * B[kk][col];
                res[c][w + l].f = (float)acc;
            }
    }
}

static void sim_ldmatrix(Sim *S, int num, bool trans, V *addr, const bool *m, V **res)
{
    for (int i = 0; i < num; i++) { /* bank conflicts: matrix by matrix, 8 rows of 16 bytes */
        bool rows[1024] = {0};
        int64_t offs[1024];
        const TBuf *b = NULL;
        for (int t = 0; t < S->nt; t++)
            if (m[t] && t % 32 / 8 == i) {
                rows[t] = true;
                offs[t] = addr[t].i & ((1ll << 48) - 1);
                b = b ? b : shared_at(S, offs[t]);
            }
        if (b)
            tally_banks(S, b, ACC_LDMATRIX, offs, rows, 16);
    }
    for (int w = 0; w < S->nt; w += 32) {
        if (!m[w])
            continue;
        if (!warp_full(S, m, w)) {
            fail(S, "ldmatrix with inactive lanes");
            return;
        }
        for (int i = 0; i < num; i++) {
            uint16_t mat[8][8];
            for (int r = 0; r < 8; r++) {
                int64_t a = addr[w + 8 * i + r].i;
                if (((a >> 48) & 0x7FFF) != SHARED_SPACE || a % 16) {
                    fail(S, "ldmatrix row address %llx is not a 16-byte aligned shared address", (unsigned long long)a);
                    return;
                }
                uint8_t *p = resolve(S, a, 16);
                if (!p)
                    return;
                memcpy(mat[r], p, 16);
            }
            for (int l = 0; l < 32; l++) {
                int g = l >> 2, t = l & 3;
                uint32_t lo = trans ? mat[2 * t][g] : mat[g][2 * t];
                uint32_t hi = trans ? mat[2 * t + 1][g] : mat[g][2 * t + 1];
                res[i][w + l].i = (int64_t)(lo | hi << 16);
            }
        }
    }
}

static void exec_intrin(Sim *S, const TStmt *s, const bool *m)
{
    const TExpr *c = s->e;
    int n = c->nargs;
    V *a[16] = {0}, *res[16] = {0};
    for (int i = 0; i < n; i++) {
        a[i] = tmp(S);
        eval(S, c->args[i], m, a[i]);
    }
    for (int i = 0; i < s->nidx; i++)
        res[i] = tmp(S);
    switch (c->builtin) {
    case TI_MMA: sim_mma(S, (DType)c->ival, a, m, res); break;
    case TI_LDMATRIX: sim_ldmatrix(S, (int)(c->ival >> 1), c->ival & 1, a[0], m, res); break;
    case TI_CP_ASYNC:
        for (int t = 0; t < S->nt && !S->failed; t++) {
            if (!m[t])
                continue;
            int bytes = (int)c->ival;
            int64_t src_bytes = a[2][t].i;
            if ((a[0][t].i & ((1ll << 48) - 1)) % bytes || (a[1][t].i & ((1ll << 48) - 1)) % bytes) {
                fail(S, "cp.async of %d bytes at a misaligned address", bytes);
                break;
            }
            if (src_bytes < 0 || src_bytes > bytes) {
                fail(S, "cp.async source size %lld", (long long)src_bytes);
                break;
            }
            uint8_t *d = resolve(S, a[0][t].i, bytes);
            uint8_t *sp = src_bytes ? resolve(S, a[1][t].i, (int)src_bytes) : NULL;
            if (!d || (src_bytes && !sp))
                break;
            memset(d, 0, (size_t)bytes);
            if (src_bytes)
                memcpy(d, sp, (size_t)src_bytes);
        }
        if (!S->failed) { /* the lanes' destinations, by the tile the first one lands in */
            int64_t offs[1024];
            const TBuf *b = NULL;
            for (int t = 0; t < S->nt; t++)
                if (m[t]) {
                    offs[t] = a[0][t].i & ((1ll << 48) - 1);
                    b = b ? b : shared_at(S, offs[t]);
                }
            if (b)
                tally_banks(S, b, ACC_CP_ASYNC, offs, m, (int)c->ival);
        }
        break;
    case TI_CP_COMMIT:
    case TI_CP_WAIT: break; /* copies are done at once */
    case TI_TRANSPOSE_B8: /* out[4 c + r] = in[4 r + c] */
        for (int r = 0; r < 4; r++)
            for (int col = 0; col < 4; col++)
                for (int t = 0; t < S->nt; t++)
                    res[4 * col + r][t] = a[4 * r + col][t];
        break;
    default: fail(S, "target instruction %d is not simulated", c->builtin); break;
    }
    for (int i = 0; i < s->nidx && !S->failed; i++) {
        const TExpr *o = s->idx[i];
        V *regs = local_of(S, o->buf);
        int64_t r = o->args[0]->ival;
        for (int t = 0; t < S->nt; t++)
            if (m[t])
                regs[r * S->nt + t] = res[i][t];
    }
    for (int i = 0; i < n; i++)
        free(a[i]);
    for (int i = 0; i < s->nidx; i++)
        free(res[i]);
}

/* ---- statements ---- */

static void exec(Sim *S, const TStmt *s, const bool *m0);

static void active(Sim *S, const bool *m0, bool *m)
{
    for (int t = 0; t < S->nt; t++)
        m[t] = m0[t] && !S->returned[t] && !S->brk[t] && !S->cont[t];
}

static bool any(Sim *S, const bool *m)
{
    for (int t = 0; t < S->nt; t++)
        if (m[t])
            return true;
    return false;
}

static void exec_list(Sim *S, TStmt **v, int n, const bool *m)
{
    for (int i = 0; i < n && !S->failed; i++)
        exec(S, v[i], m);
}

static void set_var(Sim *S, const TVar *var, const bool *m, const V *val)
{
    if (!S->vars[var->id])
        S->vars[var->id] = calloc((size_t)S->nt, sizeof(V));
    for (int t = 0; t < S->nt; t++)
        if (m[t])
            S->vars[var->id][t] = val[t];
}

static void exec_store(Sim *S, const TStmt *s, const bool *m)
{
    V *val = tmp(S);
    eval(S, s->e, m, val);
    TExpr fake = {0};
    fake.nargs = s->nidx;
    fake.args = s->idx;
    int64_t(*idx)[TL_MAX_RANK] = calloc((size_t)S->nt, sizeof *idx);
    int64_t *rows[1024];
    for (int t = 0; t < S->nt; t++)
        rows[t] = idx[t];
    load_idx(S, &fake, m, rows);
    const TBuf *b = s->buf;
    int64_t *offs = calloc((size_t)S->nt, sizeof *offs);
    for (int t = 0; t < S->nt && !S->failed; t++) {
        if (!m[t])
            continue;
        V v = val[t];
        if (b->scope == SC_LOCAL) {
            int64_t lin = 0;
            for (int d = 0; d < b->rank; d++)
                lin = lin * b->shape[d] + idx[t][d];
            if (lin < 0 || lin >= local_size(b)) {
                fail(S, "register array %s index out of range", b->name);
                break;
            }
            if (dtype_is_float(b->dt))
                v.f = round_to(b->dt, v.f);
            local_of(S, b)[lin * S->nt + t] = v;
            continue;
        }
        int64_t a = elem_addr(S, b, idx[t]);
        offs[t] = a & ((1ll << 48) - 1);
        uint8_t *p = resolve(S, a, dtype_storage_bytes(b->dt));
        if (p && !mem_put(b->dt, p, v))
            fail(S, "store of %s is not simulated", dtype_name(b->dt));
    }
    if (b->scope == SC_SHARED && !S->failed)
        tally_banks(S, b, ACC_STORE, offs, m, dtype_storage_bytes(b->dt));
    free(idx);
    free(val);
    free(offs);
}

static void exec_vec(Sim *S, const TStmt *s, const bool *m)
{
    TExpr fake = {0};
    fake.nargs = s->nidx;
    fake.args = s->idx;
    int64_t(*idx)[TL_MAX_RANK] = calloc((size_t)S->nt, sizeof *idx);
    int64_t *rows[1024];
    for (int t = 0; t < S->nt; t++)
        rows[t] = idx[t];
    load_idx(S, &fake, m, rows);
    const TBuf *b = s->buf;
    int es = dtype_storage_bytes(b->dt);
    V *regs = local_of(S, s->regs);
    int64_t offs[1024];
    for (int t = 0; t < S->nt && !S->failed; t++) {
        if (!m[t])
            continue;
        int64_t a = elem_addr(S, b, idx[t]);
        offs[t] = a & ((1ll << 48) - 1);
        if ((a & ((1ll << 48) - 1)) % (s->align > es ? s->align : es)) {
            fail(S, "vector access of %s claims %d-byte alignment, address is %lld", b->name, s->align,
                 (long long)(a & ((1ll << 48) - 1)));
            break;
        }
        uint8_t *p = resolve(S, a, es * s->vec);
        if (!p)
            break;
        for (int i = 0; i < s->vec; i++) {
            V *r = &regs[(s->roff + i) * S->nt + t];
            if (s->kind == TS_VLOAD)
                *r = convert(b->dt, s->regs->dt, mem_get(b->dt, p + i * es));
            else if (!mem_put(b->dt, p + i * es, convert(s->regs->dt, b->dt, *r)))
                fail(S, "store of %s is not simulated", dtype_name(b->dt));
        }
    }
    if (b->scope == SC_SHARED && !S->failed) {
        count_wavefronts(S, offs, m, es * s->vec);
        tally_banks(S, b, s->kind == TS_VLOAD ? ACC_VLOAD : ACC_VSTORE, offs, m, es * s->vec);
    }
    free(idx);
}

static void exec(Sim *S, const TStmt *s, const bool *m0)
{
    bool m[1024];
    active(S, m0, m);
    if (S->failed || !any(S, m))
        return;
    switch (s->kind) {
    case TS_SEQ: exec_list(S, s->body, s->nbody, m); break;
    case TS_DECL:
    case TS_ASSIGN: {
        V *v = tmp(S);
        if (s->e)
            eval(S, s->e, m, v);
        set_var(S, s->var, m, v);
        free(v);
        break;
    }
    case TS_STORE: exec_store(S, s, m); break;
    case TS_EVAL: {
        V *v = tmp(S);
        eval(S, s->e, m, v);
        free(v);
        break;
    }
    case TS_IF: {
        V *c = tmp(S);
        eval(S, s->e, m, c);
        bool mt[1024], mf[1024];
        for (int t = 0; t < S->nt; t++) {
            mt[t] = m[t] && c[t].i;
            mf[t] = m[t] && !c[t].i;
        }
        free(c);
        if (any(S, mt))
            exec_list(S, s->body, s->nbody, mt);
        if (any(S, mf))
            exec_list(S, s->els, s->nels, mf);
        break;
    }
    case TS_FOR: {
        V *lo = tmp(S), *hi = tmp(S), *st = tmp(S);
        eval(S, s->lo, m, lo);
        eval(S, s->hi, m, hi);
        eval(S, s->step, m, st);
        set_var(S, s->var, m, lo);
        bool *saved = malloc((size_t)S->nt);
        memcpy(saved, S->brk, (size_t)S->nt);
        memset(S->brk, 0, (size_t)S->nt);
        bool live[1024];
        memcpy(live, m, sizeof live);
        for (long iter = 0; !S->failed; iter++) {
            bool in[1024];
            bool more = false;
            for (int t = 0; t < S->nt; t++) {
                int64_t v = S->vars[s->var->id][t].i;
                bool lt = dtype_is_signed(s->var->dt) ? v < hi[t].i : (uint64_t)v < (uint64_t)hi[t].i;
                in[t] = live[t] && !S->brk[t] && !S->returned[t] && lt;
                more |= in[t];
            }
            if (!more)
                break;
            if (iter > 1000000) {
                fail(S, "loop runs away");
                break;
            }
            exec_list(S, s->body, s->nbody, in);
            memset(S->cont, 0, (size_t)S->nt);
            for (int t = 0; t < S->nt; t++)
                if (in[t] && !S->brk[t])
                    S->vars[s->var->id][t].i = wrap_int(s->var->dt, S->vars[s->var->id][t].i + st[t].i);
        }
        memcpy(S->brk, saved, (size_t)S->nt);
        free(saved);
        free(lo);
        free(hi);
        free(st);
        break;
    }
    case TS_BREAK:
        for (int t = 0; t < S->nt; t++)
            if (m[t])
                S->brk[t] = true;
        break;
    case TS_CONTINUE:
        for (int t = 0; t < S->nt; t++)
            if (m[t])
                S->cont[t] = true;
        break;
    case TS_RETURN:
        for (int t = 0; t < S->nt; t++)
            if (m[t])
                S->returned[t] = true;
        break;
    case TS_BARRIER:
        for (int t = 0; t < S->nt; t++)
            if (!S->returned[t] && !m[t]) {
                fail(S, "barrier not reached by thread %d (divergent control flow)", t);
                break;
            }
        break;
    case TS_VLOAD:
    case TS_VSTORE: exec_vec(S, s, m); break;
    case TS_INTRIN: exec_intrin(S, s, m); break;
    default: fail(S, "statement kind %d is not simulated", s->kind); break;
    }
}

/* ---- driving a kernel ---- */

typedef struct Arg {
    DType dt;
    int rank;
    int64_t dims[TL_MAX_RANK];
    void *data;          /* host array of dt (bf16 as uint16_t, fp8 as uint8_t) */
} Arg;

static int64_t numel(const Arg *a)
{
    int64_t n = 1;
    for (int d = 0; d < a->rank; d++)
        n *= a->dims[d];
    return n;
}

/* Compiles `kernel` of `file` with generics and runs it on grid (gx, gy) over the tensor
 * arguments (in parameter order; scalars are not used by the cases). Output tensors are written
 * back into their Arg's data. Returns false with a message on stderr. */
static bool run_kernel(const char *file, const char *kernel, const char **generics, int ngen, Arg *args, int nargs, int gx, int gy)
{
    Compilation c;
    comp_init(&c);
    bool ok = comp_load_file(&c, file) && comp_resolve(&c);
    Sym *sym = ok ? comp_lookup_global(&c, kernel) : NULL;
    GenericArgs ga = {0};
    TKernel *k = NULL;
    if (!sym || sym->kind != SYM_KERNEL)
        ok = false;
    ok = ok && sema_generic_args_from_strings(&c, sym->item, generics, ngen, &ga) && sema_kernel(&c, sym->item, &ga) &&
         lower_ast(&c, sym->item, &ga, 90, false, &k);
    ok = ok && tir_verify(k, TIR_AFTER_LOWER_AST) && pass_layout(k) && tir_verify(k, TIR_AFTER_LAYOUT) &&
         pass_pipeline(k) && tir_verify(k, TIR_AFTER_PIPELINE) && pass_lower_tiles(k) &&
         tir_verify(k, TIR_AFTER_LOWER_TILES) && pass_smem_plan(k) && tir_verify(k, TIR_AFTER_SMEM_PLAN) &&
         !diag_has_errors(&c.diag);
    if (!ok) {
        fprintf(stderr, "%s: %s does not compile:\n%s", file, kernel, c.diag.out.data ? c.diag.out.data : "");
        comp_free(&c);
        return false;
    }
    Sim S = {0};
    S.k = k;
    S.nt = k->nthreads;
    S.tensors = calloc((size_t)k->nparams + 1, sizeof(Tensor));
    S.scalars = calloc((size_t)k->nparams + 1, sizeof(V));
    for (int p = 0, a = 0; p < k->nparams; p++) {
        if (!k->params[p])
            continue;
        if (a >= nargs) {
            fprintf(stderr, "%s: too few arguments\n", kernel);
            return false;
        }
        Tensor *t = &S.tensors[p];
        Arg *ar = &args[a++];
        t->dt = ar->dt;
        t->rank = ar->rank;
        int64_t st = 1;
        for (int d = ar->rank - 1; d >= 0; d--) {
            t->dims[d] = ar->dims[d];
            t->strides[d] = st;
            st *= ar->dims[d];
        }
        t->bytes = numel(ar) * dtype_storage_bytes(ar->dt);
        t->data = ar->data;
    }
    S.smem_size = k->smem_bytes;
    S.smem = calloc((size_t)S.smem_size + 16, 1);
    S.vars = calloc((size_t)k->next_id + 1, sizeof(V *));
    S.locals = calloc((size_t)k->next_id + 1, sizeof(V *));
    S.returned = calloc((size_t)S.nt, 1);
    S.brk = calloc((size_t)S.nt, 1);
    S.cont = calloc((size_t)S.nt, 1);
    S.nctaid[0] = gx;
    S.nctaid[1] = gy;
    S.nctaid[2] = 1;
    bool all[1024];
    for (int t = 0; t < S.nt; t++)
        all[t] = true;
    for (int by = 0; by < gy && !S.failed; by++)
        for (int bx = 0; bx < gx && !S.failed; bx++) {
            S.ctaid[0] = bx;
            S.ctaid[1] = by;
            memset(S.smem, 0xA5, (size_t)S.smem_size); /* stale data, so that unwritten reads show */
            memset(S.returned, 0, (size_t)S.nt);
            for (int i = 0; i < k->next_id + 1; i++) {
                free(S.vars[i]);
                free(S.locals[i]);
                S.vars[i] = S.locals[i] = NULL;
            }
            exec(&S, k->body, all);
        }
    if (S.failed)
        fprintf(stderr, "%s (%s): simulation failed: %s\n", kernel, file, S.err);
    for (int i = 0; i < k->next_id + 1; i++) {
        free(S.vars[i]);
        free(S.locals[i]);
    }
    bool res = !S.failed;
    free(S.vars);
    free(S.locals);
    free(S.returned);
    free(S.brk);
    free(S.cont);
    free(S.smem);
    free(S.tensors);
    free(S.scalars);
    comp_free(&c);
    return res;
}

/* ---- the cases ---- */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static int64_t rnd(int lo, int hi)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (int64_t)(rng % (uint64_t)(hi - lo + 1));
}

static const char *dir = ".";

static char *path_of(const char *name)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return buf;
}

static int failures, cases;

static void report(const char *what, bool ok, const char *detail)
{
    cases++;
    if (!ok)
        failures++;
    printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what, detail ? ": " : "", detail ? detail : "");
}

/* a small integer as an operand element (exact in every operand type for |v| <= 4) */
static void put_operand(DType dt, uint8_t *p, int v)
{
    if (dt == DT_E4M3 || dt == DT_E5M2) {
        for (int c = 0; c < 256; c++)
            if ((dt == DT_E4M3 ? decode_e4m3((uint8_t)c) : decode_e5m2((uint8_t)c)) == v) {
                *p = (uint8_t)c;
                return;
            }
        return;
    }
    V x;
    x.f = v;
    mem_put(dt, p, x);
}

/* The shared wavefronts of the last case, per tile and kind of access; whether the kinds in
 * `need` are at the minimum (no bank conflicts), with what is not in *detail. */
static bool banks_report(unsigned need, char *detail, size_t cap, char *summary, size_t scap)
{
    bool ok = true;
    size_t n = 0, sn = 0;
    summary[0] = 0;
    for (int i = 0; i < nbank_tally; i++)
        for (int kd = 0; kd < ACC_KINDS; kd++) {
            const BankTally *t = &bank_tally[i];
            if (!t->ideal[kd])
                continue;
            sn += (size_t)snprintf(summary + sn, sn < scap ? scap - sn : 0, "%s%s %s %lld/%lld", sn ? ", " : "",
                                   t->buf, ACC_NAMES[kd], (long long)t->wf[kd], (long long)t->ideal[kd]);
            if ((need >> kd & 1) && t->wf[kd] > t->ideal[kd]) {
                ok = false;
                n += (size_t)snprintf(detail + n, n < cap ? cap - n : 0, "%sbank conflicts in the %s of %s: %lld shared "
                                      "wavefronts where %lld suffice", n ? "; " : "", ACC_NAMES[kd], t->buf,
                                      (long long)t->wf[kd], (long long)t->ideal[kd]);
            }
        }
    return ok;
}

/* C (M x N, f32) = A (M x K) @ B, B given as K x N (b_nk = false) or N x K; inputs small integers.
 * conflict_free: the kinds of shared access (ACC_*) that must have no bank conflicts */
static void gemm_case(const char *file, const char *kernel, const char **gen, int ngen, DType dt, bool a_km, bool b_nk, int M,
                      int N, int K, int bm, int bn, DType cdt, unsigned conflict_free)
{
    int64_t *A = malloc(sizeof(int64_t) * (size_t)(M * K)), *B = malloc(sizeof(int64_t) * (size_t)(K * N));
    int es = dtype_storage_bytes(dt);
    uint8_t *ad = malloc((size_t)(M * K * es)), *bd = malloc((size_t)(K * N * es));
    int ces = dtype_storage_bytes(cdt);
    uint8_t *cd = malloc((size_t)(M * N * ces));
    memset(cd, 0xFF, (size_t)(M * N * ces)); /* NaN poison: unwritten outputs show */
    for (int i = 0; i < M * K; i++)
        A[i] = rnd(-4, 4);
    for (int i = 0; i < K * N; i++)
        B[i] = rnd(-4, 4);
    for (int m = 0; m < M; m++)
        for (int kk = 0; kk < K; kk++) {
            int64_t at = a_km ? (int64_t)kk * M + m : (int64_t)m * K + kk;
            put_operand(dt, ad + at * es, (int)A[m * K + kk]);
        }
    for (int kk = 0; kk < K; kk++)
        for (int n = 0; n < N; n++) {
            int64_t at = b_nk ? (int64_t)n * K + kk : (int64_t)kk * N + n;
            put_operand(dt, bd + at * es, (int)B[kk * N + n]);
        }
    Arg args[3] = {{dt, 2, {a_km ? K : M, a_km ? M : K}, ad}, {dt, 2, {b_nk ? N : K, b_nk ? K : N}, bd}, {cdt, 2, {M, N}, cd}};
    char what[256];
    snprintf(what, sizeof what, "%s %s M=%d N=%d K=%d", file, kernel, M, N, K);
    nbank_tally = 0;
    bool ok = run_kernel(path_of(file), kernel, gen, ngen, args, 3, (N + bn - 1) / bn, (M + bm - 1) / bm);
    char detail[1024] = "", summary[1024];
    for (int m = 0; ok && m < M; m++)
        for (int n = 0; ok && n < N; n++) {
            int64_t ref = 0;
            for (int kk = 0; kk < K; kk++)
                ref += A[m * K + kk] * B[kk * N + n];
            V got = mem_get(cdt, cd + (m * N + n) * ces);
            if (got.f != (double)ref) {
                snprintf(detail, sizeof detail, "c[%d, %d] = %g, expected %lld", m, n, got.f, (long long)ref);
                ok = false;
            }
        }
    if (ok && !banks_report(conflict_free, detail, sizeof detail, summary, sizeof summary))
        ok = false;
    report(what, ok, ok ? NULL : detail);
    if (ok && conflict_free)
        printf("      shared wavefronts / minimum: %s\n", summary);
    free(A);
    free(B);
    free(ad);
    free(bd);
    free(cd);
}

static void cumsum_case(const char *kernel, const char **gen, int ngen, int n, bool exclusive)
{
    int32_t *x = malloc(sizeof(int32_t) * (size_t)n), *y = malloc(sizeof(int32_t) * (size_t)n);
    for (int i = 0; i < n; i++)
        x[i] = (int32_t)rnd(-1000000, 1000000);
    memset(y, 0x5A, sizeof(int32_t) * (size_t)n);
    Arg args[2] = {{DT_I32, 1, {n}, x}, {DT_I32, 1, {n}, y}};
    char what[256];
    snprintf(what, sizeof what, "cumsum.tl %s %s n=%d", kernel, ngen ? gen[0] : "", n);
    bool ok = run_kernel(path_of("cumsum.tl"), kernel, gen, ngen, args, 2, 1, 1);
    char detail[256] = "";
    int64_t acc = 0;
    for (int i = 0; ok && i < n; i++) {
        int32_t want = (int32_t)(exclusive ? acc : acc + x[i]);
        acc += x[i];
        if (y[i] != want) {
            snprintf(detail, sizeof detail, "y[%d] = %d, expected %d", i, y[i], want);
            ok = false;
        }
    }
    report(what, ok, ok ? NULL : detail);
    free(x);
    free(y);
}

/* 2-D scans of small integers (exact as floats); rank-1 tensors with R = 1 */
static void cumsum2d_case(const char *kernel, const char **gen, int ngen, int R, int C, int dim, DType dt, DType odt,
                          bool exclusive)
{
    int es = dtype_storage_bytes(dt), oes = dtype_storage_bytes(odt);
    uint8_t *x = malloc((size_t)(R * C * es)), *y = malloc((size_t)(R * C * oes));
    int64_t *v = malloc(sizeof(int64_t) * (size_t)(R * C));
    for (int i = 0; i < R * C; i++) {
        v[i] = dtype_kind(dt) == DK_UINT ? rnd(0, 255) : rnd(-50, 50);
        V val;
        if (dtype_is_float(dt))
            val.f = (double)v[i];
        else
            val.i = v[i];
        mem_put(dt, x + i * es, val);
    }
    memset(y, 0x7F, (size_t)(R * C * oes));
    Arg args[2] = {{dt, R > 1 ? 2 : 1, {R > 1 ? R : C, C}, x}, {odt, R > 1 ? 2 : 1, {R > 1 ? R : C, C}, y}};
    char what[256];
    snprintf(what, sizeof what, "cumsum.tl %s %dx%d dim %d %s -> %s%s", kernel, R, C, dim, dtype_name(dt), dtype_name(odt),
             exclusive ? " exclusive" : "");
    bool ok = run_kernel(path_of("cumsum.tl"), kernel, gen, ngen, args, 2, 1, 1);
    char detail[256] = "";
    for (int r = 0; ok && r < R; r++)
        for (int c = 0; ok && c < C; c++) {
            int64_t want = 0;
            for (int j = 0; j < (dim ? c : r) + !exclusive; j++)
                want += dim ? v[r * C + j] : v[j * C + c];
            if (dtype_is_int(odt))
                want = wrap_int(odt, want);
            V got = mem_get(odt, y + (r * C + c) * oes);
            DType dt2 = odt;
            double g = dtype_is_float(dt2) ? got.f : (double)got.i;
            if (g != (double)want) {
                snprintf(detail, sizeof detail, "y[%d, %d] = %g, expected %lld", r, c, g, (long long)want);
                ok = false;
            }
        }
    report(what, ok, ok ? NULL : detail);
    free(x);
    free(y);
    free(v);
}

/* y[r] = sum over c of x[c, r] (C x R bf16, small integers) */
static void col_sum_case(int R, int C)
{
    uint16_t *x = malloc(sizeof(uint16_t) * (size_t)(R * C));
    float *y = malloc(sizeof(float) * (size_t)R);
    int64_t *v = malloc(sizeof(int64_t) * (size_t)(R * C));
    for (int i = 0; i < R * C; i++) {
        v[i] = rnd(-100, 100);
        x[i] = f32_to_bf16((float)v[i]);
    }
    memset(y, 0xFF, sizeof(float) * (size_t)R);
    Arg args[2] = {{DT_BF16, 2, {C, R}, x}, {DT_F32, 1, {R}, y}};
    char what[128];
    snprintf(what, sizeof what, "pipe_sum.tl pipe_col_sum_t R=%d C=%d", R, C);
    bool ok = run_kernel(path_of("pipe_sum.tl"), "pipe_col_sum_t", NULL, 0, args, 2, (R + 31) / 32, 1);
    char detail[256] = "";
    for (int r = 0; ok && r < R; r++) {
        int64_t want = 0;
        for (int c = 0; c < C; c++)
            want += v[c * R + r];
        if (y[r] != (double)want) {
            snprintf(detail, sizeof detail, "y[%d] = %g, expected %lld", r, y[r], (long long)want);
            ok = false;
        }
    }
    report(what, ok, ok ? NULL : detail);
    free(x);
    free(y);
    free(v);
}

/* y[i] = sum of rows 0 .. i of x (R x C f32): a scan of a reduction's (replicated) layout */
static void rowsum_scan_case(int R, int C)
{
    float *x = malloc(sizeof(float) * (size_t)(R * C)), *y = malloc(sizeof(float) * (size_t)R);
    for (int i = 0; i < R * C; i++)
        x[i] = (float)rnd(-100, 100);
    memset(y, 0xFF, sizeof(float) * (size_t)R);
    Arg args[2] = {{DT_F32, 2, {R, C}, x}, {DT_F32, 1, {R}, y}};
    bool ok = run_kernel(path_of("cumsum.tl"), "cumsum_of_rowsums", NULL, 0, args, 2, 1, 1);
    char detail[256] = "";
    double acc = 0;
    for (int r = 0; ok && r < R; r++) {
        for (int c = 0; c < C; c++)
            acc += x[r * C + c];
        if (y[r] != acc) {
            snprintf(detail, sizeof detail, "y[%d] = %g, expected %g", r, y[r], acc);
            ok = false;
        }
    }
    report("cumsum.tl cumsum_of_rowsums", ok, ok ? NULL : detail);
    free(x);
    free(y);
}

/* out[r] = sum of row r of x (R x C f32), through a pipelined loop over column tiles */
static void pipe_sum_case(const char *kernel, const char **gen, int ngen, int R, int C)
{
    float *x = malloc(sizeof(float) * (size_t)(R * C)), *y = malloc(sizeof(float) * (size_t)R);
    for (int i = 0; i < R * C; i++)
        x[i] = (float)rnd(-100, 100);
    memset(y, 0xFF, sizeof(float) * (size_t)R);
    Arg args[2] = {{DT_F32, 2, {R, C}, x}, {DT_F32, 1, {R}, y}};
    char what[256];
    snprintf(what, sizeof what, "pipe_sum.tl %s %s R=%d C=%d", kernel, ngen ? gen[0] : "", R, C);
    bool ok = run_kernel(path_of("pipe_sum.tl"), kernel, gen, ngen, args, 2, (R + 31) / 32, 1);
    char detail[256] = "";
    for (int r = 0; ok && r < R; r++) {
        double want = 0;
        for (int c = 0; c < C; c++)
            want += x[r * C + c];
        if (y[r] != want) {
            snprintf(detail, sizeof detail, "y[%d] = %g, expected %g", r, y[r], want);
            ok = false;
        }
    }
    report(what, ok, ok ? NULL : detail);
    free(x);
    free(y);
}

/* mhc_bwd_gemms (gemm_tf32.tl): fn_grad = g^T @ x and x_grad = g @ w from one shared g tile, read
 * element-wise by the first gemm and with ldmatrix by the second; small integers, exact */
static void mhc_bwd_case(int T, int N)
{
    int64_t *g = malloc(sizeof(int64_t) * (size_t)(T * 32)), *x = malloc(sizeof(int64_t) * (size_t)(T * N)),
            *w = malloc(sizeof(int64_t) * (size_t)(32 * N));
    float *gd = malloc(sizeof(float) * (size_t)(T * 32)), *xd = malloc(sizeof(float) * (size_t)(T * N)),
          *wd = malloc(sizeof(float) * (size_t)(32 * N)), *fg = malloc(sizeof(float) * (size_t)(32 * N)),
          *xg = malloc(sizeof(float) * (size_t)(T * N));
    for (int i = 0; i < T * 32; i++)
        gd[i] = (float)(g[i] = rnd(-4, 4));
    for (int i = 0; i < T * N; i++)
        xd[i] = (float)(x[i] = rnd(-4, 4));
    for (int i = 0; i < 32 * N; i++)
        wd[i] = (float)(w[i] = rnd(-4, 4));
    memset(fg, 0xFF, sizeof(float) * (size_t)(32 * N));
    memset(xg, 0xFF, sizeof(float) * (size_t)(T * N));
    Arg args[5] = {{DT_F32, 2, {T, 32}, gd}, {DT_F32, 2, {T, N}, xd}, {DT_F32, 2, {32, N}, wd},
                   {DT_F32, 2, {32, N}, fg}, {DT_F32, 2, {T, N}, xg}};
    char what[128], detail[1024] = "", summary[1024];
    snprintf(what, sizeof what, "gemm_tf32.tl mhc_bwd_gemms T=%d N=%d", T, N);
    nbank_tally = 0;
    bool ok = run_kernel(path_of("gemm_tf32.tl"), "mhc_bwd_gemms", NULL, 0, args, 5, (N + 127) / 128, 1);
    for (int j = 0; ok && j < 32; j++)
        for (int n = 0; ok && n < N; n++) {
            int64_t want = 0;
            for (int t = 0; t < T; t++)
                want += g[t * 32 + j] * x[t * N + n];
            if (fg[j * N + n] != (float)want) {
                snprintf(detail, sizeof detail, "fn_grad[%d, %d] = %g, expected %lld", j, n, fg[j * N + n], (long long)want);
                ok = false;
            }
        }
    for (int t = 0; ok && t < T; t++)
        for (int n = 0; ok && n < N; n++) {
            int64_t want = 0;
            for (int j = 0; j < 32; j++)
                want += g[t * 32 + j] * w[j * N + n];
            if (xg[t * N + n] != (float)want) {
                snprintf(detail, sizeof detail, "x_grad[%d, %d] = %g, expected %lld", t, n, xg[t * N + n], (long long)want);
                ok = false;
            }
        }
    /* whole tiles only: a ragged last tile leaves lanes out, which the count cannot judge */
    if (ok && T % 32 == 0 && !banks_report(ACC_READS | ACC_WRITES, detail, sizeof detail, summary, sizeof summary))
        ok = false;
    report(what, ok, ok ? NULL : detail);
    if (ok && T % 32 == 0)
        printf("      shared wavefronts / minimum: %s\n", summary);
    free(g);
    free(x);
    free(w);
    free(gd);
    free(xd);
    free(wd);
    free(fg);
    free(xg);
}

/* y = x^T through a shared tile (transpose.tl): bit-exact, and for whole tiles at most
 * max_excess times the shared wavefronts the bytes need (1: free of bank conflicts, what the XOR
 * swizzle of 128-byte rows and the lane mapping of the transposing copy give; narrower rows are
 * padded by a word instead, which leaves some conflicts on the row-wise stores) */
static void transpose_case(const char *tname, DType dt, int bx, int by, int M, int N, double max_excess)
{
    int es = dtype_storage_bytes(dt);
    uint8_t *x = malloc((size_t)(M * N * es)), *y = malloc((size_t)(M * N * es));
    for (int i = 0; i < M * N * es; i++)
        x[i] = (uint8_t)rnd(0, 255);
    if (dt == DT_F32) /* keep the bits of an f32 payload a finite value, so it round-trips through V */
        for (int i = 0; i < M * N; i++)
            x[i * 4 + 3] &= 0x3F;
    if (dt == DT_BF16)
        for (int i = 0; i < M * N; i++)
            x[i * 2 + 1] &= 0x3F;
    memset(y, 0xEE, (size_t)(M * N * es));
    char gt[32], gx[32], gy[32];
    snprintf(gt, sizeof gt, "T=%s", tname);
    snprintf(gx, sizeof gx, "BX=%d", bx);
    snprintf(gy, sizeof gy, "BY=%d", by);
    const char *gen[] = {gt, gx, gy};
    Arg args[2] = {{dt, 2, {M, N}, x}, {dt, 2, {N, M}, y}};
    smem_wavefronts = smem_wavefronts_ideal = 0;
    bool ok = run_kernel(path_of("transpose.tl"), "transpose2d", gen, 3, args, 2, (N + by - 1) / by, (M + bx - 1) / bx);
    char what[256], detail[256] = "";
    snprintf(what, sizeof what, "transpose.tl %s %dx%d tile %dx%d", tname, M, N, bx, by);
    for (int i = 0; ok && i < M; i++)
        for (int j = 0; ok && j < N; j++)
            if (memcmp(y + ((int64_t)j * M + i) * es, x + ((int64_t)i * N + j) * es, (size_t)es)) {
                snprintf(detail, sizeof detail, "y[%d, %d] differs from x[%d, %d]", j, i, i, j);
                ok = false;
            }
    if (ok && M % bx == 0 && N % by == 0 && smem_wavefronts > max_excess * (double)smem_wavefronts_ideal) {
        snprintf(detail, sizeof detail, "bank conflicts: %lld shared wavefronts where %lld suffice",
                 (long long)smem_wavefronts, (long long)smem_wavefronts_ideal);
        ok = false;
    }
    report(what, ok, ok ? NULL : detail);
    free(x);
    free(y);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        dir = argv[1];
    const char *s1[] = {"S=1"}, *s2[] = {"S=2"}, *s3[] = {"S=3"};
    /* cumsum of 1024 i32 over 256 and 1024 threads (get_fused_mapping's block scan) */
    const char *t256[] = {"T=256"}, *t1024[] = {"T=1024"}, *t128[] = {"T=128"};
    cumsum_case("cumsum_i32", t256, 1, 1024, false);
    cumsum_case("cumsum_i32", t1024, 1, 1024, false);
    cumsum_case("cumsum_i32", t128, 1, 1024, false);
    cumsum_case("cumsum_i32_exclusive", t256, 1, 1024, true);
    cumsum_case("cumsum_i32_exclusive", t1024, 1, 1024, true);
    cumsum2d_case("cumsum_rows", NULL, 0, 16, 64, 1, DT_F32, DT_F32, false);
    cumsum2d_case("cumsum_cols", NULL, 0, 64, 16, 0, DT_F32, DT_F32, false);
    cumsum2d_case("cumsum_cols_i64", NULL, 0, 64, 16, 0, DT_I64, DT_I64, false);
    cumsum2d_case("cumsum_mma", NULL, 0, 64, 64, 1, DT_F32, DT_F32, false);
    cumsum2d_case("cumsum_mma_cols", NULL, 0, 64, 64, 0, DT_F32, DT_F32, false);
    cumsum2d_case("cumsum_bf16_exclusive", NULL, 0, 8, 256, 1, DT_BF16, DT_F32, true);
    cumsum2d_case("cumsum_u8", NULL, 0, 1, 64, 1, DT_U8, DT_U8, false);
    rowsum_scan_case(32, 64);
    /* gemm: bf16 64x64x64 (shared operands, ldmatrix; .trans for B), ragged shapes, pipelined */
    gemm_case("gemm_bf16.tl", "gemm_bf16", s1, 1, DT_BF16, false, false, 64, 64, 64, 64, 64,
              DT_F32, ACC_READS | ACC_WRITES);
    gemm_case("gemm_bf16.tl", "gemm_bf16", s1, 1, DT_BF16, false, false, 128, 192, 128, 64, 64,
              DT_F32, ACC_READS | ACC_WRITES);
    gemm_case("gemm_bf16.tl", "gemm_bf16", s2, 1, DT_BF16, false, false, 100, 72, 136, 64, 64,
              DT_F32, ACC_READS | ACC_WRITES);
    gemm_case("gemm_bf16.tl", "gemm_bf16", s3, 1, DT_BF16, false, false, 64, 64, 200, 64, 64,
              DT_F32, ACC_READS | ACC_WRITES);
    gemm_case("gemm_bf16.tl", "gemm_bf16_out", NULL, 0, DT_BF16, false, false, 64, 64, 64, 64, 64,
              DT_BF16, ACC_READS | ACC_WRITES);
    gemm_case("gemm_bf16.tl", "gemm_bf16_any", NULL, 0, DT_BF16, false, false, 64, 72, 104, 64, 64,
              DT_F32, ACC_READS | ACC_WRITES);
    gemm_case("gemm_bf16.tl", "gemm_bf16_any", NULL, 0, DT_BF16, false, false, 70, 66, 71, 64, 64, DT_F32, ACC_READS);
    /* tf32: A row-major and B as N x K (ldmatrix), and A as K x M, B as K x N (element loads) */
    gemm_case("gemm_tf32.tl", "gemm_tf32_nt", s2, 1, DT_F32, false, true, 32, 24, 512, 32, 32,
              DT_F32, ACC_READS | ACC_WRITES);
    gemm_case("gemm_tf32.tl", "gemm_tf32_nt", s1, 1, DT_F32, false, true, 64, 32, 96, 32, 32,
              DT_F32, ACC_READS | ACC_WRITES);
    gemm_case("gemm_tf32.tl", "gemm_tf32_tn", NULL, 0, DT_F32, true, false, 64, 64, 64, 32, 32,
              DT_F32, ACC_READS | ACC_WRITES);
    gemm_case("gemm_tf32.tl", "gemm_tf32_k256", NULL, 0, DT_F32, false, true, 40, 48, 600, 32, 24,
              DT_F32, ACC_READS | ACC_WRITES);
    gemm_case("gemm_tf32.tl", "gemm_tf32_tt", NULL, 0, DT_F32, true, true, 64, 96, 96, 32, 32,
              DT_F32, ACC_READS | ACC_WRITES);
    /* mhc_pre_norm_fn's backward: 32 x 128 x 128 tokens with A^T (element loads), 128 tokens x 128
     * x 32 (ldmatrix for A, element loads for B), and both from one g tile (the gemm swizzle) */
    gemm_case("gemm_tf32.tl", "mhc_bwd_fn_grad", NULL, 0, DT_F32, true, false, 32, 256, 300, 32, 128, DT_F32,
              ACC_READS | ACC_WRITES);
    gemm_case("gemm_tf32.tl", "mhc_bwd_x_grad", NULL, 0, DT_F32, false, false, 200, 256, 32, 128, 128, DT_F32,
              ACC_READS | ACC_WRITES);
    mhc_bwd_case(96, 256);
    mhc_bwd_case(70, 128);
    /* f16 with both operands transposed: ldmatrix.trans for A, ldmatrix for B */
    gemm_case("gemm_bf16.tl", "gemm_f16_tt", NULL, 0, DT_F16, true, true, 64, 128, 96, 64, 64,
              DT_F32, ACC_READS | ACC_WRITES);
    /* fp8: K-major operands (ldmatrix), and e5m2 with an N-major B (element loads) */
    gemm_case("gemm_fp8.tl", "gemm_e4m3", s2, 1, DT_E4M3, false, true, 64, 64, 128, 64, 64,
              DT_F32, ACC_READS | ACC_WRITES);
    gemm_case("gemm_fp8.tl", "gemm_e5m2_nn", NULL, 0, DT_E5M2, false, false, 64, 32, 128, 32, 32, DT_F32, 0);
    /* frag operands, and a parallel loop and reduction over the accumulator */
    gemm_case("gemm_frag.tl", "gemm_frag", NULL, 0, DT_BF16, false, false, 32, 32, 64, 32, 32, DT_F32, 0);
    gemm_case("gemm_frag.tl", "gemm_small", NULL, 0, DT_BF16, false, false, 16, 8, 16, 16, 8,
              DT_F32, ACC_READS | ACC_WRITES);
    /* a 2-stage pipelined copy-and-sum, with ragged rows and columns */
    pipe_sum_case("pipe_row_sum16", s2, 1, 64, 256);
    pipe_sum_case("pipe_row_sum16", s2, 1, 50, 200);
    pipe_sum_case("pipe_row_sum16", s3, 1, 40, 100);
    pipe_sum_case("pipe_row_sum", s2, 1, 32, 37);
    pipe_sum_case("pipe_row_sum", s2, 1, 48, 96);
    pipe_sum_case("pipe_row_sum", s3, 1, 70, 161);
    pipe_sum_case("pipe_row_sum", s1, 1, 40, 100);
    col_sum_case(50, 70);
    /* transposes: 16-byte micro-rows (bf16, f32), 8- and 4-byte micro-rows (u8, small tiles), ragged */
    transpose_case("u8", DT_U8, 256, 128, 512, 256, 1.0);
    transpose_case("u8", DT_U8, 64, 64, 128, 64, 1.5);
    transpose_case("u8", DT_U8, 256, 128, 300, 200, 1.0);
    transpose_case("u8", DT_U8, 256, 256, 512, 512, 1.0);
    transpose_case("u8", DT_U8, 256, 256, 320, 576, 1.0);
    transpose_case("bf16", DT_BF16, 128, 128, 256, 128, 1.0);
    transpose_case("bf16", DT_BF16, 64, 64, 128, 128, 1.0);
    transpose_case("bf16", DT_BF16, 128, 128, 130, 70, 1.0);
    transpose_case("f32", DT_F32, 64, 128, 128, 256, 1.0);
    transpose_case("f32", DT_F32, 64, 64, 64, 64, 1.0);
    printf("%d of %d cases passed\n", cases - failures, cases);
    return failures ? 1 : 0;
}
