/* test_emu_gemm.c — gemm on the emulator, every operand type (f16, bf16, tf32, e4m3, e5m2) and
 * every way an operand is read (ldmatrix, ldmatrix.trans, element loads, frags), with the
 * racecheck on, on the kernels of tests/codegen/tileops: the result bit for bit against the
 * tensor-core model applied instruction by instruction in k order (numerics.h,
 * tl_num_mma_*: what the emulator's mma.sync is meant to compute), and within the bound the model
 * implies against the exact product (docs/language.md §12):
 *   |d - exact| <= S ((k + 1) 2^-F max(Q, B, 2^-133) + 2^-p Q + 2^(-126 - p))
 * with S instructions of K = k each along the gemm's K, Q = sum |a b|, B the largest 2^(ea + eb),
 * F, p = 25, 23 (16-bit forms, tf32) or 25, 21 (FP8: its two steps of 16 products cut 16 + 17 =
 * k + 1 terms and two results, 2^-23 (|d1| + |d2|) <= 2^-22 Q, and the addition of c rounds by
 * half an ulp, 2^-24 |d|). Inputs: normal values, wide exponent
 * ranges with subnormals, cancelling columns, and a few inf / NaN (bits only). */
#include "emu_harness.h"
#include "numerics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { OP_F16, OP_BF16, OP_TF32, OP_E4M3, OP_E5M2 } Op;

static const struct {
    const char *name;
    int bytes, k, F, p, emin;
} OPS[] = {
    [OP_F16] = {"f16", 2, 16, 25, 23, -14},  [OP_BF16] = {"bf16", 2, 16, 25, 23, -126},
    [OP_TF32] = {"f32", 4, 8, 25, 23, -126}, [OP_E4M3] = {"e4m3", 1, 32, 25, 21, -6},
    [OP_E5M2] = {"e5m2", 1, 32, 25, 21, -14},
};

/* inputs: 0 normal, 1 wide exponent range (subnormals included), 2 cancelling pairs along K,
 * 3 like 0 with a few inf / NaN */
enum { IN_NORMAL, IN_WIDE, IN_CANCEL, IN_SPECIAL, IN_COUNT };
static const char *IN_NAMES[] = {"normal", "wide", "cancel", "special"};

static uint32_t encode(Op op, float x)
{
    uint32_t u = tl_num_bits(x);
    switch (op) {
    case OP_F16: return tl_num_f32_to_f16(u, TL_NUM_RN);
    case OP_BF16: return tl_num_f32_to_bf16(u, TL_NUM_RN);
    case OP_TF32: return u;
    case OP_E4M3: return tl_num_f32_to_e4m3(u);
    default: return tl_num_f32_to_e5m2(u);
    }
}

static long double value(Op op, uint32_t code)
{
    switch (op) {
    case OP_F16: return tl_num_float(tl_num_f16_to_f32((uint16_t)code));
    case OP_BF16: return tl_num_float(tl_num_bf16_to_f32((uint16_t)code));
    case OP_TF32: return tl_num_float(code & 0xFFFFE000u);
    case OP_E4M3: return tl_num_float(tl_num_e4m3_to_f32((uint8_t)code));
    default: return tl_num_float(tl_num_e5m2_to_f32((uint8_t)code));
    }
}

static float draw(Op op, int kind, uint64_t *s)
{
    float x = eh_randn(s);
    if (kind == IN_WIDE) {
        int lo = OPS[op].emin - 8, hi = op == OP_E4M3 ? 7 : op == OP_E5M2 || op == OP_F16 ? 14 : 40;
        x = ldexpf(x, lo + (int)(eh_rand(s) % (uint64_t)(hi - lo)));
    } else if (op == OP_E4M3 || op == OP_E5M2) {
        x *= 8;
    }
    return x;
}

/* one instruction of the model: d = c + sum a[k] b[k], k = 0 .. K-1 */
static uint32_t mma_step(Op op, const uint32_t *a, const uint32_t *b, uint32_t c)
{
    uint16_t a16[16], b16[16];
    uint8_t a8[32], b8[32];
    for (int i = 0; i < OPS[op].k; i++) {
        a16[i & 15] = (uint16_t)a[i], b16[i & 15] = (uint16_t)b[i];
        a8[i] = (uint8_t)a[i], b8[i] = (uint8_t)b[i];
    }
    switch (op) {
    case OP_F16: return tl_num_mma_f16(a16, b16, c);
    case OP_BF16: return tl_num_mma_bf16(a16, b16, c);
    case OP_TF32: return tl_num_mma_tf32(a, b, c);
    case OP_E4M3: return tl_num_mma_e4m3(a8, b8, c);
    default: return tl_num_mma_e5m2(a8, b8, c);
    }
}

static void put(Op op, uint8_t *base, int64_t i, uint32_t code)
{
    memcpy(base + i * OPS[op].bytes, &code, (size_t)OPS[op].bytes); /* little-endian: the low bytes */
}

/* what the checks of one output tensor found */
typedef struct Tally {
    int bad, bad_bound;
    long double worst;   /* the largest error, as a fraction of the bound */
} Tally;

/* One output element d, of the gemm of a row a and a column b of length K: bit for bit the model
 * applied instruction by instruction in k order from c = 0 (then converted to bf16 RNE when
 * `bf16`), and within the bound of the exact sum. */
static void check_elem(Tally *t, const char *what, const char *tensor, int m, int n, Op op, const uint32_t *a,
                       const uint32_t *b, int K, uint32_t got, bool bf16)
{
    int ik = OPS[op].k, steps = (K + ik - 1) / ik;
    uint32_t acc = 0, ra[32], rb[32];
    long double exact = 0, Q = 0, Bmax = 0;
    bool finite = true;
    for (int s = 0; s < steps; s++) {
        for (int j = 0; j < ik; j++) {
            int kk = s * ik + j;
            ra[j] = kk < K ? a[kk] : 0;
            rb[j] = kk < K ? b[kk] : 0;
            long double x = value(op, ra[j]), y = value(op, rb[j]);
            finite &= isfinite(x) && isfinite(y);
            if (x != 0 && y != 0 && isfinite(x) && isfinite(y)) {
                exact += x * y;
                Q += fabsl(x * y);
                int ex, ey;
                frexpl(x, &ex);
                frexpl(y, &ey);
                ex = ex - 1 < OPS[op].emin ? OPS[op].emin : ex - 1;
                ey = ey - 1 < OPS[op].emin ? OPS[op].emin : ey - 1;
                if (ldexpl(1.0L, ex + ey) > Bmax)
                    Bmax = ldexpl(1.0L, ex + ey);
            }
        }
        acc = mma_step(op, ra, rb, acc);
    }
    uint32_t want = bf16 ? tl_num_f32_to_bf16(acc, TL_NUM_RN) : acc;
    if (got != want && t->bad++ < 3)
        EH_CHECK(0, "%s: %s[%d, %d] = %08x, the model gives %08x", what, tensor, m, n, got, want);
    if (!finite || bf16 || (acc & 0x7F800000u) == 0x7F800000u)
        return;
    long double big = Q > Bmax ? Q : Bmax;
    big = big > 0x1p-133L ? big : 0x1p-133L;
    long double bound = steps * ((ik + 1) * ldexpl(big, -OPS[op].F) + ldexpl(Q, -OPS[op].p) +
                                 ldexpl(1.0L, -126 - OPS[op].p)) + Q * 0x1p-60L;
    long double e = fabsl((long double)tl_num_float(acc) - exact);
    if (e / bound > t->worst)
        t->worst = e / bound;
    if (e > bound && t->bad_bound++ < 3)
        EH_CHECK(0, "%s: %s[%d, %d] = %.9Lg is %.3Lg from the exact %.9Lg, more than the bound %.3Lg", what, tensor, m,
                 n, (long double)tl_num_float(acc), e, exact, bound);
}

typedef struct Case {
    const char *file, *kernel;
    const char *gens[2];
    int ngens;
    Op op;
    bool a_km, b_nk;   /* A stored K x M, B stored N x K */
    int M, N, K;
    bool out_bf16;     /* c: bf16 (converted RNE from the accumulator) instead of f32 */
    bool c_nm;         /* c stored N x M */
} Case;

static void run_case(const Case *cs, EhKernel *kp, int kind)
{
    Op op = cs->op;
    int M = cs->M, N = cs->N, K = cs->K, es = OPS[op].bytes;
    uint32_t *A = calloc((size_t)M * K, 4), *B = calloc((size_t)K * N, 4); /* codes, [m][k] and [k][n] */
    uint64_t s = 0x6E11 + (uint64_t)kind * 977 + (uint64_t)M * 31 + (uint64_t)K;
    for (int i = 0; i < M * K; i++)
        A[i] = encode(op, draw(op, kind, &s));
    for (int i = 0; i < K * N; i++)
        B[i] = encode(op, draw(op, kind, &s));
    if (kind == IN_CANCEL) /* most products of the second half of K cancel one of the first half */
        for (int kk = 0; kk < K / 2; kk++) {
            if (eh_rand(&s) % 4 == 0)
                continue;
            for (int n = 0; n < N; n++)
                B[(K / 2 + kk) * N + n] = B[kk * N + n];
            for (int m = 0; m < M; m++)
                A[m * K + K / 2 + kk] = A[m * K + kk] ^ (op == OP_TF32 ? 0x80000000u : es == 2 ? 0x8000u : 0x80u);
        }
    if (kind == IN_SPECIAL) {
        static const uint32_t sp[][2] = {{0x7C00, 0x7E00}, {0x7F80, 0x7FC0}, {0x7F800000u, 0x7FC00000u},
                                         {0x7F, 0x7F}, {0x7C, 0x7F}};
        for (int n = 0; n < 3; n++) {
            A[eh_rand(&s) % (uint64_t)(M * K)] = sp[op][n & 1] | (n == 2 ? (es == 4 ? 0x80000000u : es == 2 ? 0x8000u : 0x80u) : 0);
            B[eh_rand(&s) % (uint64_t)(K * N)] = sp[op][0];
        }
    }
    uint8_t *ad = malloc((size_t)M * K * es), *bd = malloc((size_t)K * N * es);
    for (int m = 0; m < M; m++)
        for (int kk = 0; kk < K; kk++)
            put(op, ad, cs->a_km ? (int64_t)kk * M + m : (int64_t)m * K + kk, A[m * K + kk]);
    for (int kk = 0; kk < K; kk++)
        for (int n = 0; n < N; n++)
            put(op, bd, cs->b_nk ? (int64_t)n * K + kk : (int64_t)kk * N + n, B[kk * N + n]);
    int ces = cs->out_bf16 ? 2 : 4;
    uint8_t *cd = malloc((size_t)M * N * ces);
    memset(cd, 0xEE, (size_t)M * N * ces);
    int64_t sa[2] = {cs->a_km ? K : M, cs->a_km ? M : K}, sb[2] = {cs->b_nk ? N : K, cs->b_nk ? K : N};
    int64_t sc[2] = {cs->c_nm ? N : M, cs->c_nm ? M : N};
    EhArg args[3] = {eh_tensor(ad, 2, sa, NULL), eh_tensor(bd, 2, sb, NULL), eh_tensor(cd, 2, sc, NULL)};
    char err[2048];
    tl_emu_status st = eh_run(kp, args, 3, NULL, err, sizeof err);
    char what[160];
    snprintf(what, sizeof what, "%s %s%s%s %dx%dx%d %s", cs->file, cs->kernel, cs->ngens ? " " : "",
             cs->ngens ? cs->gens[0] : "", M, N, K, IN_NAMES[kind]);
    EH_CHECK(st == TL_EMU_OK, "%s: %s", what, err);
    Tally t = {0, 0, 0};
    uint32_t ra[4096], rb[4096];
    for (int m = 0; m < M && st == TL_EMU_OK; m++)
        for (int n = 0; n < N; n++) {
            for (int kk = 0; kk < K; kk++) {
                ra[kk] = A[m * K + kk];
                rb[kk] = B[kk * N + n];
            }
            uint32_t got = 0;
            memcpy(&got, cd + (cs->c_nm ? (int64_t)n * M + m : (int64_t)m * N + n) * ces, (size_t)ces);
            check_elem(&t, what, "c", m, n, op, ra, rb, K, got, cs->out_bf16);
        }
    int bad = t.bad;
    long double worst = t.worst;
    if (st == TL_EMU_OK)
        printf("%s: %s (largest error %.3Lf of the bound)\n", what, bad ? "MISMATCH" : "bit-exact", worst);
    free(A);
    free(B);
    free(ad);
    free(bd);
    free(cd);
}

/* mhc_bwd_gemms: fn_grad = g^T @ x (32 x N, accumulated over the tokens in order) and x_grad =
 * g @ w (T x N) from one shared g tile, the backward's two gemms in one kernel */
static void run_mhc_bwd(EhKernel *kp, int T, int N, int kind)
{
    uint32_t *g = malloc(sizeof(uint32_t) * (size_t)T * 32), *x = malloc(sizeof(uint32_t) * (size_t)T * N),
             *w = malloc(sizeof(uint32_t) * 32 * (size_t)N), *fg = malloc(sizeof(uint32_t) * 32 * (size_t)N),
             *xg = malloc(sizeof(uint32_t) * (size_t)T * N);
    uint64_t s = 0x3C7 + (uint64_t)kind;
    for (int i = 0; i < T * 32; i++)
        g[i] = encode(OP_TF32, draw(OP_TF32, kind, &s));
    for (int i = 0; i < T * N; i++)
        x[i] = encode(OP_TF32, draw(OP_TF32, kind, &s));
    for (int i = 0; i < 32 * N; i++)
        w[i] = encode(OP_TF32, draw(OP_TF32, kind, &s));
    memset(fg, 0xEE, sizeof(uint32_t) * 32 * (size_t)N);
    memset(xg, 0xEE, sizeof(uint32_t) * (size_t)T * N);
    int64_t sg[2] = {T, 32}, sx[2] = {T, N}, sw[2] = {32, N};
    EhArg args[5] = {eh_tensor(g, 2, sg, NULL), eh_tensor(x, 2, sx, NULL), eh_tensor(w, 2, sw, NULL),
                     eh_tensor(fg, 2, sw, NULL), eh_tensor(xg, 2, sx, NULL)};
    char err[2048], what[128];
    snprintf(what, sizeof what, "gemm_tf32.tl mhc_bwd_gemms T=%d N=%d %s", T, N, IN_NAMES[kind]);
    tl_emu_status st = eh_run(kp, args, 5, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "%s: %s", what, err);
    Tally t = {0, 0, 0};
    uint32_t *ra = malloc(sizeof(uint32_t) * (size_t)(T > 32 ? T : 32)), *rb = malloc(sizeof(uint32_t) * (size_t)(T > 32 ? T : 32));
    for (int j = 0; j < 32 && st == TL_EMU_OK; j++)
        for (int n = 0; n < N; n++) {
            for (int tk = 0; tk < T; tk++) {
                ra[tk] = g[tk * 32 + j];
                rb[tk] = x[(int64_t)tk * N + n];
            }
            check_elem(&t, what, "fn_grad", j, n, OP_TF32, ra, rb, T, fg[j * N + n], false);
        }
    for (int tk = 0; tk < T && st == TL_EMU_OK; tk++)
        for (int n = 0; n < N; n++) {
            for (int j = 0; j < 32; j++) {
                ra[j] = g[tk * 32 + j];
                rb[j] = w[j * N + n];
            }
            check_elem(&t, what, "x_grad", tk, n, OP_TF32, ra, rb, 32, xg[(int64_t)tk * N + n], false);
        }
    if (st == TL_EMU_OK)
        printf("%s: %s (largest error %.3Lf of the bound)\n", what, t.bad ? "MISMATCH" : "bit-exact", t.worst);
    free(ra);
    free(rb);
    free(g);
    free(x);
    free(w);
    free(fg);
    free(xg);
}

int main(void)
{
    static const Case cases[] = {
        /* bf16 / f16: ldmatrix for A, ldmatrix.trans for a row-major B; pipelined; ragged */
        {"gemm_bf16.tl", "gemm_bf16", {"S=1"}, 1, OP_BF16, false, false, 64, 64, 64, false, false},
        {"gemm_bf16.tl", "gemm_bf16", {"S=3"}, 1, OP_BF16, false, false, 100, 72, 136, false, false},
        {"gemm_bf16.tl", "gemm_bf16_out", {0}, 0, OP_BF16, false, false, 64, 64, 64, true, false},
        {"gemm_bf16.tl", "gemm_bf16_any", {0}, 0, OP_BF16, false, false, 70, 66, 71, false, false},
        {"gemm_bf16.tl", "gemm_f16_tt", {0}, 0, OP_F16, true, true, 64, 128, 96, false, false},
        /* tf32: ldmatrix for K-contiguous operands, element loads for M- and N-contiguous ones */
        {"gemm_tf32.tl", "gemm_tf32_nt", {"S=2"}, 1, OP_TF32, false, true, 32, 24, 512, false, false},
        {"gemm_tf32.tl", "gemm_tf32_tn", {0}, 0, OP_TF32, true, false, 64, 64, 64, false, false},
        {"gemm_tf32.tl", "gemm_tf32_k256", {0}, 0, OP_TF32, false, true, 40, 48, 600, false, false},
        {"gemm_tf32.tl", "gemm_tf32_tt", {0}, 0, OP_TF32, true, true, 64, 96, 96, false, false},
        /* mhc_pre_norm_fn's backward shapes: 32 x 128 x 128 tokens with A^T, 128 tokens x 128 x 32 */
        {"gemm_tf32.tl", "mhc_bwd_fn_grad", {0}, 0, OP_TF32, true, false, 32, 128, 300, false, false},
        {"gemm_tf32.tl", "mhc_bwd_x_grad", {0}, 0, OP_TF32, false, false, 130, 128, 32, false, false},
        /* fp8: K-contiguous (ldmatrix), and e5m2 with an N-contiguous B (element loads) */
        {"gemm_fp8.tl", "gemm_e4m3", {"S=2"}, 1, OP_E4M3, false, true, 64, 64, 128, false, false},
        {"gemm_fp8.tl", "gemm_e5m2_nn", {0}, 0, OP_E5M2, false, false, 64, 32, 128, false, false},
        /* frag operands and a tile smaller than the block (replicated warps) */
        {"gemm_frag.tl", "gemm_frag_plain", {0}, 0, OP_BF16, false, false, 32, 32, 64, false, false},
        {"gemm_frag.tl", "gemm_small", {0}, 0, OP_BF16, false, false, 16, 8, 16, false, false},
        /* transposed views of a frag operand and of the accumulator */
        {"gemm_frag.tl", "gemm_frag_t", {0}, 0, OP_BF16, true, false, 64, 32, 64, false, false},
        {"gemm_frag.tl", "gemm_acc_t", {0}, 0, OP_BF16, false, false, 64, 64, 64, false, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/tests/codegen/tileops/%s", eh_source_dir(), cases[i].file);
        EhKernel k;
        if (!eh_compile(path, NULL, cases[i].kernel, cases[i].gens, cases[i].ngens, &k)) {
            eh_failures++;
            continue;
        }
        for (int kind = 0; kind < IN_COUNT; kind++)
            run_case(&cases[i], &k, kind);
        eh_free(&k);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/tests/codegen/tileops/gemm_tf32.tl", eh_source_dir());
    EhKernel k;
    if (eh_compile(path, NULL, "mhc_bwd_gemms", NULL, 0, &k)) {
        for (int kind = 0; kind < IN_COUNT; kind++)
            run_mhc_bwd(&k, kind == IN_NORMAL ? 96 : 70, kind == IN_NORMAL ? 256 : 128, kind);
        eh_free(&k);
    } else {
        eh_failures++;
    }
    return eh_finish("test_emu_gemm");
}
