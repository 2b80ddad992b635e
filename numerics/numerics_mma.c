/* numerics_mma.c — the model of the Hopper tensor core's mma.sync arithmetic (f32 accumulators)
 * that numerics.h describes. f16, bf16, tf32: exact products, one alignment to the largest
 * exponent with the terms cut toward zero, an exact sum, one normalisation cut toward zero.
 * e4m3, e5m2 (m16n8k32): that same f16 step twice, on the products at k mod 4 = 0, 1 from a zero
 * accumulator and then on those at k mod 4 = 2, 3, and c added last by an f32 addition rounded
 * to nearest even. The emulator runs every mma.sync through tl_num_mma_m16n8;
 * tests/gpu/numerics/mma_model.cu checks it on a GPU. */
#include "numerics.h"

enum { F32_NAN = 0x7FFFFFFFu, F32_INF = 0x7F800000u };

/* the lowest alignment exponent: the model of arXiv:2512.07004 clamps R there (min_exp_limit),
 * so terms below 2^(-133 - F) vanish even when every term is that small */
enum { R_MIN = -133 };

/* an operand format: sign, ebits exponent bits, mbits fraction bits; `ieee`: the top exponent
 * is inf / NaN (f16, bf16, tf32, e5m2), else only S.1..1.1..1 is NaN (e4m3) */
typedef struct OpFmt {
    int ebits, mbits;
    bool ieee;
} OpFmt;

static const OpFmt OP_F16 = {5, 10, true}, OP_BF16 = {8, 7, true}, OP_TF32 = {8, 10, true},
                   OP_E4M3 = {4, 3, false}, OP_E5M2 = {5, 2, true}, OP_F32 = {8, 23, true};

enum { V_ZERO, V_FINITE, V_INF, V_NAN };

/* |x| = m * 2^q, and e = its binade's exponent (floor(log2 |x|), the smallest normal one for
 * subnormals): the exponent the adder aligns on */
typedef struct Val {
    int cls;
    bool neg;
    uint32_t m;
    int q, e;
} Val;

static Val decode(const OpFmt *f, uint32_t code)
{
    Val v = {V_ZERO, false, 0, 0, 0};
    int bias = (1 << (f->ebits - 1)) - 1;
    uint32_t frac = code & ((1u << f->mbits) - 1);
    uint32_t ex = (code >> f->mbits) & ((1u << f->ebits) - 1);
    uint32_t emax = (1u << f->ebits) - 1;
    v.neg = (code >> (f->ebits + f->mbits)) & 1;
    if (f->ieee && ex == emax) {
        v.cls = frac ? V_NAN : V_INF;
        return v;
    }
    if (!f->ieee && ex == emax && frac == (1u << f->mbits) - 1) {
        v.cls = V_NAN;
        return v;
    }
    if (ex == 0 && frac == 0)
        return v;
    v.cls = V_FINITE;
    v.e = ex ? (int)ex - bias : 1 - bias;
    v.m = ex ? frac | 1u << f->mbits : frac;
    v.q = v.e - f->mbits;
    return v;
}

/* (-1)^neg * n * 2^lsb, n > 0, cut toward zero to `p` fraction bits with f32's exponent range
 * (subnormals at 2^-149 when p = 23, at 2^(-126 - p) generally); 2^128 and above -> inf */
static uint32_t cut_to_f32(bool neg, uint64_t n, int lsb, int p)
{
    uint32_t sign = (uint32_t)neg << 31;
    int msb = 63 - __builtin_clzll(n) + lsb;
    if (msb >= 128)
        return sign | F32_INF;
    int eb = msb < -126 ? -126 : msb;
    int quantum = eb - p;
    if (quantum > lsb) {
        int sh = quantum - lsb;
        n = sh >= 64 ? 0 : n >> sh;
        lsb = quantum;
    }
    if (n == 0)
        return sign;
    /* exact now: n * 2^lsb on f32's grid of that binade, whose spacing is 2^(eb - 23) */
    uint64_t sig = n << (lsb - (eb - 23));
    if (sig < (1u << 23)) /* a subnormal (eb is -126) */
        return sign | (uint32_t)sig;
    return sign | (uint32_t)(eb + 127) << 23 | ((uint32_t)sig & 0x7FFFFFu);
}

/* d = c + sum a[k] b[k], the operands decoded; F: fraction bits kept below the alignment
 * exponent; p: fraction bits of the result */
static uint32_t dot(const Val *a, const Val *b, int k, uint32_t cbits, int F, int p)
{
    Val c = decode(&OP_F32, cbits);
    bool nan = c.cls == V_NAN, pinf = c.cls == V_INF && !c.neg, ninf = c.cls == V_INF && c.neg;
    bool any = c.cls == V_FINITE;
    int R = c.cls == V_FINITE ? c.e : R_MIN;
    for (int i = 0; i < k; i++) {
        if (a[i].cls == V_NAN || b[i].cls == V_NAN) {
            nan = true;
        } else if (a[i].cls == V_INF || b[i].cls == V_INF) {
            if (a[i].cls == V_ZERO || b[i].cls == V_ZERO)
                nan = true;
            else if (a[i].neg != b[i].neg)
                ninf = true;
            else
                pinf = true;
        } else if (a[i].cls == V_FINITE && b[i].cls == V_FINITE) {
            any = true;
            if (a[i].e + b[i].e > R)
                R = a[i].e + b[i].e;
        }
    }
    if (nan || (pinf && ninf))
        return F32_NAN;
    if (pinf || ninf)
        return pinf ? F32_INF : F32_INF | 0x80000000u;
    if (!any)
        return 0;
    if (R < R_MIN)
        R = R_MIN;
    int lsb = R - F;
    /* every cut term is below 2^(F + 2): a product's significand is under 4 */
    int64_t sum = 0;
    for (int i = 0; i <= k; i++) {
        uint64_t m;
        int q;
        bool neg;
        if (i < k) {
            if (a[i].cls != V_FINITE || b[i].cls != V_FINITE)
                continue;
            m = (uint64_t)a[i].m * b[i].m;
            q = a[i].q + b[i].q;
            neg = a[i].neg != b[i].neg;
        } else {
            if (c.cls != V_FINITE)
                continue;
            m = c.m;
            q = c.q;
            neg = c.neg;
        }
        int sh = q - lsb;
        uint64_t t = sh >= 0 ? m << sh : -sh >= 64 ? 0 : m >> -sh;
        sum += neg ? -(int64_t)t : (int64_t)t;
    }
    if (sum == 0)
        return 0;
    return cut_to_f32(sum < 0, sum < 0 ? (uint64_t)-sum : (uint64_t)sum, lsb, p);
}

/* F and p of an f16 / bf16 / tf32 instruction, and of each of the two steps of an FP8 one */
enum { F_WIDE = 25, P_WIDE = 23 };

/* x + y in f32, rounded to nearest even (IEEE 754 addition, subnormals kept): the last step of
 * an FP8 instruction. NaN and inf are the caller's; x and y are finite or zero. */
static uint32_t add_f32_rne(uint32_t xbits, uint32_t ybits)
{
    Val x = decode(&OP_F32, xbits), y = decode(&OP_F32, ybits);
    if (x.cls == V_ZERO && y.cls == V_ZERO) /* -0 only for -0 + -0 */
        return xbits & ybits & 0x80000000u;
    if (x.cls == V_ZERO)
        return ybits;
    if (y.cls == V_ZERO)
        return xbits;
    if (x.q < y.q) {
        Val t = x;
        x = y, y = t;
    }
    /* y's lsb at most 38 below x's: further down, y is below a quarter of the result's ulp
     * either way and only its sign counts (a sticky bit), so it is replaced by one unit there */
    int d = x.q - y.q;
    uint64_t my = y.m;
    if (d > 38) {
        d = 38;
        my = 1;
    }
    int64_t s = (x.neg ? -1 : 1) * (int64_t)((uint64_t)x.m << d) + (y.neg ? -1 : 1) * (int64_t)my;
    if (s == 0)
        return 0;
    bool neg = s < 0;
    uint64_t n = neg ? (uint64_t)-s : (uint64_t)s;
    int lsb = x.q - d;
    int msb = 63 - __builtin_clzll(n) + lsb;
    int eb = msb < -126 ? -126 : msb, quantum = eb - 23;
    uint64_t sig; /* the significand on the grid 2^quantum, at most 2^24 after rounding */
    if (quantum > lsb) {
        int sh = quantum - lsb;
        uint64_t rem = n & ((1ull << sh) - 1), half = 1ull << (sh - 1);
        sig = n >> sh;
        if (rem > half || (rem == half && (sig & 1)))
            sig++;
    } else {
        sig = n << (lsb - quantum);
    }
    /* (eb + 126) << 23 plus a significand in [2^23, 2^24] is the f32 code, a carry to 2^24 and
     * a subnormal (eb = -126, sig < 2^23) included */
    uint64_t code = ((uint64_t)(eb + 126) << 23) + sig;
    if (code >= F32_INF)
        return (uint32_t)neg << 31 | F32_INF;
    return (uint32_t)neg << 31 | (uint32_t)code;
}

/* an FP8 instruction: d1 = the f16 step over the products at k mod 4 = 0, 1 from +0, d2 = the
 * step over those at k mod 4 = 2, 3 from d1, d = c + d2 rounded to nearest even (H200,
 * 2026-12-02, tests/gpu/numerics/mma_model --n 16 --dump: every one of its 28,672 FP8 outputs).
 * k mod 4 = 0, 1 are the low two bytes of each A and B register in the PTX ISA's fragment
 * layout, 2, 3 the high two. (Every e4m3 and e5m2 value is an f16 value, e5m2's subnormals
 * f16 subnormals; decoded in f16, an e4m3 subnormal's exponent would be its own floor(log2),
 * not -6, which changes no result: an R that comes from such a product is at most 2, and no
 * e4m3 product nor d1 has a bit below 2^-18 > 2^(2 - 25).) */
static uint32_t mma_fp8(const OpFmt *f, const uint8_t a[32], const uint8_t b[32], uint32_t c)
{
    Val lo_a[16], lo_b[16], hi_a[16], hi_b[16];
    int nlo = 0, nhi = 0;
    for (int i = 0; i < 32; i++) {
        if (i & 2) {
            hi_a[nhi] = decode(f, a[i]);
            hi_b[nhi++] = decode(f, b[i]);
        } else {
            lo_a[nlo] = decode(f, a[i]);
            lo_b[nlo++] = decode(f, b[i]);
        }
    }
    uint32_t d = dot(lo_a, lo_b, 16, 0, F_WIDE, P_WIDE);
    d = dot(hi_a, hi_b, 16, d, F_WIDE, P_WIDE);
    Val vc = decode(&OP_F32, c), vd = decode(&OP_F32, d);
    if (vc.cls == V_NAN || vd.cls == V_NAN || (vc.cls == V_INF && vd.cls == V_INF && vc.neg != vd.neg))
        return F32_NAN;
    if (vc.cls == V_INF)
        return c;
    if (vd.cls == V_INF)
        return d;
    return add_f32_rne(c, d);
}

uint32_t tl_num_mma_f16(const uint16_t a[16], const uint16_t b[16], uint32_t c)
{
    Val va[16], vb[16];
    for (int i = 0; i < 16; i++) {
        va[i] = decode(&OP_F16, a[i]);
        vb[i] = decode(&OP_F16, b[i]);
    }
    return dot(va, vb, 16, c, F_WIDE, P_WIDE);
}

uint32_t tl_num_mma_bf16(const uint16_t a[16], const uint16_t b[16], uint32_t c)
{
    Val va[16], vb[16];
    for (int i = 0; i < 16; i++) {
        va[i] = decode(&OP_BF16, a[i]);
        vb[i] = decode(&OP_BF16, b[i]);
    }
    return dot(va, vb, 16, c, F_WIDE, P_WIDE);
}

uint32_t tl_num_mma_tf32(const uint32_t a[8], const uint32_t b[8], uint32_t c)
{
    Val va[8], vb[8];
    for (int i = 0; i < 8; i++) { /* bits 31..13: sign, 8 exponent and 10 fraction bits */
        va[i] = decode(&OP_TF32, a[i] >> 13);
        vb[i] = decode(&OP_TF32, b[i] >> 13);
    }
    return dot(va, vb, 8, c, F_WIDE, P_WIDE);
}

uint32_t tl_num_mma_e4m3(const uint8_t a[32], const uint8_t b[32], uint32_t c)
{
    return mma_fp8(&OP_E4M3, a, b, c);
}

uint32_t tl_num_mma_e5m2(const uint8_t a[32], const uint8_t b[32], uint32_t c)
{
    return mma_fp8(&OP_E5M2, a, b, c);
}

int tl_num_mma_k(TlNumMma form)
{
    switch (form) {
    case TL_NUM_MMA_TF32: return 8;
    case TL_NUM_MMA_E4M3:
    case TL_NUM_MMA_E5M2: return 32;
    default: return 16;
    }
}

void tl_num_mma_m16n8(TlNumMma form, const uint32_t a[32][4], const uint32_t b[32][2], const uint32_t c[32][4],
                      uint32_t d[32][4])
{
    int K = tl_num_mma_k(form), E = K / 8, w = 32 / E;
    uint32_t mask = w == 32 ? 0xFFFFFFFFu : (1u << w) - 1;
    /* the element codes of A (16 x K, row-major) and B (K x 8, column-major), and C */
    uint32_t A[16][32], B[8][32], C[16][8];
    for (int l = 0; l < 32; l++) {
        int g = l / 4, t = l % 4;
        for (int q = 0; q < 4; q++)
            for (int j = 0; j < E; j++)
                A[g + 8 * (q & 1)][E * t + j + 4 * E * (q >> 1)] = (a[l][q] >> (w * j)) & mask;
        for (int q = 0; q < 2; q++)
            for (int j = 0; j < E; j++)
                B[g][E * t + j + 4 * E * q] = (b[l][q] >> (w * j)) & mask;
        for (int i = 0; i < 4; i++)
            C[g + 8 * (i >> 1)][2 * t + (i & 1)] = c[l][i];
    }
    uint32_t D[16][8];
    for (int r = 0; r < 16; r++)
        for (int n = 0; n < 8; n++) {
            uint16_t a16[16], b16[16];
            uint8_t a8[32], b8[32];
            switch (form) {
            case TL_NUM_MMA_F16:
            case TL_NUM_MMA_BF16:
                for (int k = 0; k < 16; k++) {
                    a16[k] = (uint16_t)A[r][k];
                    b16[k] = (uint16_t)B[n][k];
                }
                D[r][n] = form == TL_NUM_MMA_F16 ? tl_num_mma_f16(a16, b16, C[r][n]) : tl_num_mma_bf16(a16, b16, C[r][n]);
                break;
            case TL_NUM_MMA_TF32: D[r][n] = tl_num_mma_tf32(A[r], B[n], C[r][n]); break;
            default:
                for (int k = 0; k < 32; k++) {
                    a8[k] = (uint8_t)A[r][k];
                    b8[k] = (uint8_t)B[n][k];
                }
                D[r][n] = form == TL_NUM_MMA_E4M3 ? tl_num_mma_e4m3(a8, b8, C[r][n]) : tl_num_mma_e5m2(a8, b8, C[r][n]);
                break;
            }
        }
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < 4; i++)
            d[l][i] = D[l / 4 + 8 * (i >> 1)][2 * (l % 4) + (i & 1)];
}
