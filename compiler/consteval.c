/* consteval.c — arithmetic on compile-time values, with the target's semantics:
 * integers wrap to their width, f32 operations are single-precision IEEE (no contraction). */
#include "sema.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

ConstVal cv_int(int64_t v) { ConstVal c = {0}; c.kind = CV_INT; c.i = v; return c; }
ConstVal cv_float(double v) { ConstVal c = {0}; c.kind = CV_FLOAT; c.f = v; return c; }
ConstVal cv_bool(bool v) { ConstVal c = {0}; c.kind = CV_BOOL; c.b = v; return c; }
ConstVal cv_unknown(void) { ConstVal c = {0}; c.kind = CV_UNKNOWN; return c; }

float tl_f32_round(double d)
{
    return (float)d; /* round to nearest even, as the target does */
}

static int64_t wrap_int(int64_t v, DType dt)
{
    int bits = dtype_bits(dt);
    if (bits >= 64 || bits <= 0)
        return v;
    uint64_t mask = (1ull << bits) - 1;
    uint64_t u = (uint64_t)v & mask;
    if (dtype_is_signed(dt) && (u >> (bits - 1)))
        u |= ~mask;
    return (int64_t)u;
}

/* The values of the float types, for rounding constants: precision (mantissa bits), the exponent
 * of the smallest normal value, the largest finite value, whether the type has infinities and
 * NaNs, and whether its conversions saturate (FP8 and FP4: §13.1) instead of overflowing. */
typedef struct FloatFormat {
    int mant, emin;
    double max;
    bool inf, nan, saturates;
} FloatFormat;

static bool float_format(DType dt, FloatFormat *f)
{
    static const struct { DType dt; FloatFormat f; } formats[] = {
        {DT_F16, {10, -14, 65504.0, true, true, false}},
        {DT_BF16, {7, -126, 0x1.fep127, true, true, false}},
        {DT_F32, {23, -126, 0x1.fffffep127, true, true, false}},
        {DT_E4M3, {3, -6, 448.0, false, true, true}},
        {DT_E5M2, {2, -14, 57344.0, true, true, true}},
        {DT_E2M1, {1, 0, 6.0, false, false, true}},
    };
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (formats[i].dt == dt) {
            *f = formats[i].f;
            return true;
        }
    return false;
}

/* d rounded once to a float type, to nearest with ties to even, as the type's conversion from
 * f32 does (§13.1): past the largest finite value, ±inf, or that value for the saturating types
 * (which also take infinities to it, and NaN to +6 for e2m1, as the hardware does). *over: the
 * value was finite and left the finite range, or cannot be represented (an infinity or NaN the
 * type lacks). */
static double round_float(double d, DType dt, bool *over)
{
    *over = false;
    FloatFormat f;
    if (dt == DT_F64 || !float_format(dt, &f))
        return d;
    if (isnan(d)) {
        *over = !f.nan;
        return f.nan ? d : f.max;
    }
    double a = fabs(d), r;
    if (isinf(d)) {
        *over = !f.inf || f.saturates;
        r = f.saturates ? f.max : a;
    } else if (a == 0) {
        r = a;
    } else {
        int e;
        frexp(a, &e); /* a = m * 2^e, m in [0.5, 1): the leading bit is 2^(e - 1) */
        int q = (e - 1 > f.emin ? e - 1 : f.emin) - f.mant; /* the spacing of values around a: 2^q */
        r = ldexp(nearbyint(ldexp(a, -q)), q);              /* ties to even (the default rounding mode) */
        if (r > f.max) {
            *over = true;
            r = f.saturates ? f.max : INFINITY;
        }
    }
    return copysign(r, d);
}

/* an integer rounded once to a float type: below 2^53 it is exact as a double; above, it is
 * rounded here, since rounding it to a double first could make a tie of a value that is not */
static double round_int(int64_t v, DType dt, bool *over)
{
    FloatFormat f;
    uint64_t a = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    if (a < (1ull << 53) || dt == DT_F64 || !float_format(dt, &f))
        return round_float((double)v, dt, over);
    int q = 63 - __builtin_clzll(a) - f.mant; /* q > 0: the spacing of values around a is 2^q */
    uint64_t rem = a & ((1ull << q) - 1), half = 1ull << (q - 1);
    a >>= q;
    if (rem > half || (rem == half && (a & 1)))
        a++;
    return round_float(copysign(ldexp((double)a, q), (double)v), dt, over); /* exact now: checks the range */
}

bool cv_fits(ConstVal v, DType dt)
{
    if (dtype_is_float(dt) && (v.kind == CV_INT || v.kind == CV_FLOAT)) {
        bool over;
        if (v.kind == CV_INT)
            round_int(v.i, dt, &over);
        else
            round_float(v.f, dt, &over);
        return !over;
    }
    if (v.kind != CV_INT)
        return true;
    if (dt == DT_U64)
        return v.i >= 0;
    return wrap_int(v.i, dt) == v.i;
}

ConstVal cv_convert(ConstVal v, DType to, bool *lossy)
{
    *lossy = false;
    if (v.kind == CV_UNKNOWN || v.kind == CV_NONE)
        return v;
    DKind k = dtype_kind(to);
    if (to == DT_BOOL) {
        if (v.kind == CV_BOOL)
            return v;
        *lossy = true;
        return v;
    }
    if (k == DK_SINT || k == DK_UINT) {
        if (v.kind == CV_INT) {
            int64_t w = wrap_int(v.i, to);
            if (!cv_fits(v, to))
                *lossy = true;
            return cv_int(w);
        }
        if (v.kind == CV_BOOL)
            return cv_int(v.b ? 1 : 0);
        if (v.kind == CV_FLOAT) {
            double t = trunc(v.f);
            if (t != v.f)
                *lossy = true;
            if (isnan(t) || t >= 9.2e18 || t <= -9.2e18) {
                *lossy = true;
                return cv_int(0);
            }
            return cv_int(wrap_int((int64_t)t, to));
        }
        return v;
    }
    if (k == DK_FLOAT || k == DK_HALF || k == DK_FP8 || k == DK_FP4) {
        /* rounded once from the exact value */
        bool over;
        if (v.kind == CV_INT) {
            double r = round_int(v.i, to, &over);
            if (r >= 0x1p63 || r < -0x1p63 || (int64_t)r != v.i)
                *lossy = true;
            return cv_float(r);
        }
        double d = v.kind == CV_FLOAT ? v.f : v.kind == CV_BOOL ? (double)v.b : 0;
        double r = round_float(d, to, &over);
        if (r != d && !(isnan(r) && isnan(d)))
            *lossy = true;
        return cv_float(r);
    }
    /* ue8m0 constants are not folded: the conversion happens at run time */
    ConstVal n = {0};
    n.kind = CV_NONE;
    return n;
}

static bool is_unsigned(DType dt) { return dtype_kind(dt) == DK_UINT; }

ConstVal cv_binary(OpKind op, ConstVal a, ConstVal b, DType dt, const char **err)
{
    ConstVal none = {0};
    *err = NULL;
    if (a.kind == CV_UNKNOWN || b.kind == CV_UNKNOWN)
        return cv_unknown();
    if (a.kind == CV_NONE || b.kind == CV_NONE)
        return none;
    if (a.kind == CV_BOOL && b.kind == CV_BOOL) {
        switch (op) {
        case OP_LAND: return cv_bool(a.b && b.b);
        case OP_LOR: return cv_bool(a.b || b.b);
        case OP_EQ: return cv_bool(a.b == b.b);
        case OP_NE: return cv_bool(a.b != b.b);
        case OP_BAND: return cv_bool(a.b & b.b);
        case OP_BOR: return cv_bool(a.b | b.b);
        case OP_BXOR: return cv_bool(a.b ^ b.b);
        default: return none;
        }
    }
    if (a.kind == CV_TYPE && b.kind == CV_TYPE) {
        bool eq = a.t && b.t && a.t->kind == b.t->kind && a.t->dt == b.t->dt;
        if (op == OP_EQ)
            return cv_bool(eq);
        if (op == OP_NE)
            return cv_bool(!eq);
        return none;
    }
    if ((a.kind == CV_INT && b.kind == CV_FLOAT) || (a.kind == CV_FLOAT && b.kind == CV_INT)) {
        /* untyped mixed constants: the integer becomes a float */
        if (a.kind == CV_INT)
            a = cv_float((double)a.i);
        else
            b = cv_float((double)b.i);
    }
    if (a.kind == CV_INT && b.kind == CV_INT) {
        int64_t x = a.i, y = b.i, r = 0;
        if (dt == DT_NONE) {
            /* untyped constants do not wrap: overflow is an error */
            bool ov = false;
            if (op == OP_ADD)
                ov = __builtin_add_overflow(x, y, &r);
            else if (op == OP_SUB)
                ov = __builtin_sub_overflow(x, y, &r);
            else if (op == OP_MUL)
                ov = __builtin_mul_overflow(x, y, &r);
            else if (op == OP_SHL && y >= 64) /* (a negative amount is an error below) */
                ov = x != 0;
            else if (op == OP_SHL && y >= 0) /* x * 2^y must fit: 1 << 63 does not, -1 << 63 does */
                ov = (x > (INT64_MAX >> y)) || (x < (INT64_MIN >> y));
            else if (op == OP_DIV || op == OP_MOD)
                ov = x == INT64_MIN && y == -1; /* the quotient 2^63 does not fit, nor a - (a / b) * b */
            if (ov) {
                *err = "integer overflow (beyond 64 bits)";
                return none;
            }
        }
        bool u = is_unsigned(dt);
        uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
        int bits = dt == DT_NONE ? 64 : dtype_bits(dt);
        switch (op) {
        case OP_ADD: r = (int64_t)(ux + uy); break;
        case OP_SUB: r = (int64_t)(ux - uy); break;
        case OP_MUL: r = (int64_t)(ux * uy); break;
        case OP_DIV:
        case OP_MOD:
            if (y == 0) {
                *err = op == OP_DIV ? "division by zero" : "remainder by zero";
                return none;
            }
            if (u)
                r = op == OP_DIV ? (int64_t)(ux / uy) : (int64_t)(ux % uy);
            else if (x == INT64_MIN && y == -1)
                r = op == OP_DIV ? INT64_MIN : 0;
            else
                r = op == OP_DIV ? x / y : x % y;
            break;
        case OP_SHL:
        case OP_SHR:
            if (y < 0) {
                *err = "negative shift amount";
                return none;
            }
            if (y >= bits)
                r = (op == OP_SHR && !u && x < 0) ? -1 : 0;
            else if (op == OP_SHL)
                r = (int64_t)(ux << y);
            else if (u)
                r = (int64_t)((bits < 64 ? (ux & ((1ull << bits) - 1)) : ux) >> y);
            else
                r = x >> y;
            break;
        case OP_BAND: r = x & y; break;
        case OP_BOR: r = x | y; break;
        case OP_BXOR: r = x ^ y; break;
        case OP_EQ: return cv_bool(x == y);
        case OP_NE: return cv_bool(x != y);
        case OP_LT: return cv_bool(u ? ux < uy : x < y);
        case OP_LE: return cv_bool(u ? ux <= uy : x <= y);
        case OP_GT: return cv_bool(u ? ux > uy : x > y);
        case OP_GE: return cv_bool(u ? ux >= uy : x >= y);
        default: return none;
        }
        return cv_int(dt == DT_NONE ? r : wrap_int(r, dt));
    }
    if (a.kind == CV_FLOAT && b.kind == CV_FLOAT) {
        double x = a.f, y = b.f;
        if (dt == DT_F32) {
            float fx = (float)x, fy = (float)y, fr;
            switch (op) {
            case OP_ADD: fr = fx + fy; break;
            case OP_SUB: fr = fx - fy; break;
            case OP_MUL: fr = fx * fy; break;
            case OP_DIV: fr = fx / fy; break;
            case OP_EQ: return cv_bool(fx == fy);
            case OP_NE: return cv_bool(fx != fy);
            case OP_LT: return cv_bool(fx < fy);
            case OP_LE: return cv_bool(fx <= fy);
            case OP_GT: return cv_bool(fx > fy);
            case OP_GE: return cv_bool(fx >= fy);
            default: return none;
            }
            return cv_float((double)fr);
        }
        switch (op) {
        case OP_ADD: return cv_float(x + y);
        case OP_SUB: return cv_float(x - y);
        case OP_MUL: return cv_float(x * y);
        case OP_DIV: return cv_float(x / y);
        case OP_EQ: return cv_bool(x == y);
        case OP_NE: return cv_bool(x != y);
        case OP_LT: return cv_bool(x < y);
        case OP_LE: return cv_bool(x <= y);
        case OP_GT: return cv_bool(x > y);
        case OP_GE: return cv_bool(x >= y);
        default: return none;
        }
    }
    return none;
}

ConstVal cv_unary(OpKind op, ConstVal a, DType dt, const char **err)
{
    ConstVal none = {0};
    *err = NULL;
    if (a.kind == CV_UNKNOWN)
        return a;
    switch (op) {
    case OP_NEG:
        if (a.kind == CV_INT && dt == DT_NONE && a.i == INT64_MIN) {
            *err = "integer overflow (beyond 64 bits)"; /* untyped constants do not wrap */
            return none;
        }
        if (a.kind == CV_INT)
            return cv_int(dt == DT_NONE ? (int64_t)(0 - (uint64_t)a.i) : wrap_int((int64_t)(0 - (uint64_t)a.i), dt));
        if (a.kind == CV_FLOAT)
            return cv_float(-a.f);
        break;
    case OP_NOT:
        if (a.kind == CV_BOOL)
            return cv_bool(!a.b);
        break;
    case OP_BNOT:
        if (a.kind == CV_INT)
            return cv_int(dt == DT_NONE ? ~a.i : wrap_int(~a.i, dt));
        break;
    default: break;
    }
    return none;
}

void cv_print(StrBuf *out, ConstVal v)
{
    switch (v.kind) {
    case CV_INT: sb_printf(out, "%lld", (long long)v.i); break;
    case CV_FLOAT: {
        char buf[64];
        snprintf(buf, sizeof buf, "%.9g", isnan(v.f) ? NAN : v.f); /* "nan", whatever its sign bit */
        if (!strpbrk(buf, ".eEn"))
            strcat(buf, ".0");
        sb_puts(out, buf);
        break;
    }
    case CV_BOOL: sb_puts(out, v.b ? "true" : "false"); break;
    case CV_TYPE:
        if (v.t)
            ty_print(out, v.t);
        break;
    case CV_UNKNOWN: sb_puts(out, "?"); break;
    case CV_NONE: sb_puts(out, "<runtime>"); break;
    }
}
