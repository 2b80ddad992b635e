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

static bool exact_in_half(double d, DType dt);

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

bool cv_fits(ConstVal v, DType dt)
{
    if (v.kind != CV_INT)
        return true;
    if (dt == DT_U64)
        return v.i >= 0;
    return wrap_int(v.i, dt) == v.i;
}

static double round_to(double d, DType dt)
{
    switch (dt) {
    case DT_F32: return (double)(float)d;
    case DT_F64: return d;
    default: return (double)(float)d; /* 16-bit and narrower floats are folded via f32 only when exact */
    }
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
    if (k == DK_FLOAT || k == DK_HALF) {
        double d = v.kind == CV_INT ? (double)v.i : v.kind == CV_FLOAT ? v.f : v.kind == CV_BOOL ? (double)v.b : 0;
        double r = round_to(d, to);
        if (v.kind == CV_INT && (double)v.i != d)
            *lossy = true;
        if (r != d && !(isnan(r) && isnan(d)))
            *lossy = true;
        if (k == DK_HALF && !exact_in_half(d, to)) {
            /* values not exact in the 16-bit format are converted at run time */
            ConstVal n = {0};
            n.kind = CV_NONE;
            return n;
        }
        return cv_float(r);
    }
    /* fp8 / fp4 / ue8m0 constants are not folded: conversions happen at run time */
    ConstVal n = {0};
    n.kind = CV_NONE;
    return n;
}

static bool exact_in_half(double d, DType dt)
{
    if (d == 0 || isnan(d))
        return true;
    double a = fabs(d);
    if (dt == DT_BF16) {
        float f = (float)d;
        uint32_t bits;
        memcpy(&bits, &f, 4);
        return (double)f == d && (bits & 0xFFFF) == 0;
    }
    if (a > 65504)
        return false;
    int e;
    frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    int shift = a < 0x1p-14 ? 24 : 11 - e;
    double scaled = ldexp(a, shift);
    return scaled == trunc(scaled);
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
            else if (op == OP_SHL && y >= 0 && y < 63)
                ov = (x > (INT64_MAX >> y)) || (x < (INT64_MIN >> y));
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

ConstVal cv_unary(OpKind op, ConstVal a, DType dt)
{
    ConstVal none = {0};
    if (a.kind == CV_UNKNOWN)
        return a;
    switch (op) {
    case OP_NEG:
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
        snprintf(buf, sizeof buf, "%.9g", v.f);
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
