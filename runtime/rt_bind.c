/* rt_bind.c — the launch path before the driver: checks each argument against the signature
 * (reporting the first violation by argument name, a list's tensors as 'xs[3]'), evaluates
 * requirements and the grid, and packs the kernel parameters (a list's tensor pointers
 * included). Everything lives on the caller's stack: no heap, no locks. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rt_internal.h"

static tilec_status rt_launch_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *rt_kind_str(tilec_rt_arg_kind k)
{
    return k == TILEC_RT_ARG_SCALAR   ? "a scalar"
           : k == TILEC_RT_ARG_ABSENT ? "an absent tensor"
           : k == TILEC_RT_ARG_TENSOR ? "a tensor"
           : k == TILEC_RT_ARG_LIST   ? "a list of tensors"
                                      : "an invalid argument kind";
}
static tilec_status rt_launch_fail(const char *fmt, ...)
{
    char msg[RT_MAX_ERROR];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rt_fail(TILEC_ERROR_LAUNCH, "%s", msg);
}

static const char *rt_dtype_str(int dt)
{
    return (unsigned)dt < TILEC_RT_NUM_DTYPES ? rt_dtypes[dt].name : "an invalid dtype";
}

/* ---- scalars ---- */

static uint16_t rt_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
    return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

static uint16_t rt_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, man = x & 0x7fffff;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00);
    uint32_t h, rem, mid;
    if (e <= 0) { /* subnormal result: the value in units of 2^-24, rounded */
        if (e < -10)
            return (uint16_t)sign;
        uint32_t m = man | 0x800000;
        int shift = 14 - e;
        h = m >> shift;
        rem = m & ((1u << shift) - 1);
        mid = 1u << (shift - 1);
    } else {
        h = ((uint32_t)e << 10) | (man >> 13);
        rem = man & 0x1fff;
        mid = 0x1000;
    }
    if (rem > mid || (rem == mid && (h & 1)))
        h++; /* a carry into the exponent is the right answer, up to infinity */
    return (uint16_t)(sign | h);
}

static double rt_half_value(int dt, uint16_t h)
{
    float f;
    if (dt == TILEC_RT_BF16) {
        uint32_t x = (uint32_t)h << 16;
        memcpy(&f, &x, 4);
        return f;
    }
    int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    double v = exp == 0 ? ldexp(man, -24) : exp == 31 ? (man ? NAN : INFINITY) : ldexp(man | 0x400, exp - 25);
    return (h & 0x8000) ? -v : v;
}

/* Converts scalar argument a to parameter p's type: *bits as the kernel gets them (low bytes),
 * *val as expressions see it. */
static tilec_status rt_scalar(const rt_param *p, const tilec_rt_scalar *a, uint64_t *bits, rt_value *val)
{
    int pk = rt_dtypes[p->dtype].kind;
    int ak = (unsigned)a->dtype < TILEC_RT_NUM_DTYPES ? rt_dtypes[a->dtype].kind : -1;
    int a_int = ak == RT_DK_BOOL || ak == RT_DK_SINT || ak == RT_DK_UINT;
    int a_float = a->dtype == TILEC_RT_F32 || a->dtype == TILEC_RT_F64;
    int big = a->dtype == TILEC_RT_U64 && a->v.i < 0; /* a u64 above INT64_MAX */
    val->is_float = 0;
    val->f = 0;
    if (pk == RT_DK_BOOL || pk == RT_DK_SINT || pk == RT_DK_UINT) {
        if (!a_int)
            return rt_launch_fail("argument '%s': expected an integer for %s, got %s", p->name,
                                  rt_dtypes[p->dtype].name, rt_dtype_str(a->dtype));
        int nbits = pk == RT_DK_BOOL ? 1 : rt_dtypes[p->dtype].bits;
        int fits;
        if (pk == RT_DK_SINT)
            fits = !big && (nbits == 64 || (a->v.i >= -(INT64_C(1) << (nbits - 1)) && a->v.i < (INT64_C(1) << (nbits - 1))));
        else
            fits = big ? nbits == 64 : a->v.i >= 0 && (nbits == 64 || a->v.i < (INT64_C(1) << nbits));
        if (!fits) {
            if (big)
                return rt_launch_fail("argument '%s': value %llu does not fit %s", p->name,
                                      (unsigned long long)a->v.u, rt_dtypes[p->dtype].name);
            return rt_launch_fail("argument '%s': value %lld does not fit %s", p->name, (long long)a->v.i,
                                  rt_dtypes[p->dtype].name);
        }
        *bits = a->v.u;
        val->i = a->v.i;
        return TILEC_OK;
    }
    if (pk == RT_DK_FLOAT || pk == RT_DK_HALF) {
        if (a->dtype == p->dtype && pk == RT_DK_HALF) {
            if (a->v.bits > 0xffff)
                return rt_launch_fail("argument '%s': encoding 0x%llx does not fit %s", p->name,
                                      (unsigned long long)a->v.bits, rt_dtypes[p->dtype].name);
            *bits = a->v.bits;
        } else if (a_int || a_float) {
            double d = a_float ? a->v.f : big ? (double)a->v.u : (double)a->v.i;
            if (p->dtype == TILEC_RT_F64) {
                memcpy(bits, &d, 8);
                val->is_float = 1;
                val->f = d;
                return TILEC_OK;
            }
            float f = (float)d;
            uint32_t x;
            memcpy(&x, &f, 4);
            *bits = p->dtype == TILEC_RT_F32 ? x : p->dtype == TILEC_RT_BF16 ? rt_f32_to_bf16(f) : rt_f32_to_f16(f);
        } else {
            return rt_launch_fail("argument '%s': expected %s, got %s", p->name, rt_dtypes[p->dtype].name,
                                  rt_dtype_str(a->dtype));
        }
        val->is_float = 1;
        if (p->dtype == TILEC_RT_F32) {
            float f;
            uint32_t x = (uint32_t)*bits;
            memcpy(&f, &x, 4);
            val->f = f;
        } else {
            val->f = rt_half_value(p->dtype, (uint16_t)*bits);
        }
        return TILEC_OK;
    }
    /* fp8, fp4 and ue8m0 travel as their encoding only */
    if (a->dtype != p->dtype)
        return rt_launch_fail("argument '%s': expected %s, got %s", p->name, rt_dtypes[p->dtype].name,
                              rt_dtype_str(a->dtype));
    uint64_t mask = pk == RT_DK_FP4 ? 0xf : 0xff;
    if (a->v.bits & ~mask)
        return rt_launch_fail("argument '%s': encoding 0x%llx does not fit %s", p->name,
                              (unsigned long long)a->v.bits, rt_dtypes[p->dtype].name);
    *bits = a->v.bits;
    val->i = (int64_t)a->v.bits;
    return TILEC_OK;
}

/* ---- messages about expressions ---- */

typedef struct rt_names_ctx {
    const rt_value *slots;
    rt_sbuf *b;
    int n;
    int seen[RT_MAX_NAMES];
} rt_names_ctx;

static void rt_name_value(const rt_expr *e, void *vctx)
{
    rt_names_ctx *c = vctx;
    if (c->seen[e->slot])
        return;
    c->seen[e->slot] = 1;
    rt_sb_puts(c->b, c->n++ ? ", " : " (");
    rt_sb_printf(c->b, "%s = ", e->name);
    rt_value_render(c->b, c->slots[e->slot]);
}

/* "EXPR = VALUE (A = 1, B = 2)" or, for a single name, "M = 128 (bound by 'x' dimension 1)". */
static void rt_describe(rt_sbuf *b, const rt_sig *sig, const rt_expr *e, const rt_value *slots, const rt_value *v)
{
    if (e->kind == RT_E_INT || e->kind == RT_E_FLOAT) {
        rt_expr_render(b, e);
        return;
    }
    if (e->kind == RT_E_NAME || e->kind == RT_E_BIND) {
        const rt_name *n = &sig->names[e->slot];
        rt_sb_printf(b, "%s = ", e->name);
        rt_value_render(b, slots[e->slot]);
        if (n->kind == RT_N_DIM || n->kind == RT_N_STRIDE)
            rt_sb_printf(b, " (bound by '%s%s' %s %d)", sig->params[n->param].name,
                         sig->params[n->param].kind == RT_P_LIST ? "[0]" : "",
                         n->kind == RT_N_DIM ? "dimension" : "stride", n->axis);
        else if (n->kind == RT_N_LEN)
            rt_sb_printf(b, " (the length of '%s')", sig->params[n->param].name);
        else if (n->kind == RT_N_SCALAR)
            rt_sb_puts(b, " (a scalar argument)");
        return;
    }
    rt_expr_render(b, e);
    if (v) {
        rt_sb_puts(b, " = ");
        rt_value_render(b, *v);
    }
    rt_names_ctx c;
    memset(&c, 0, sizeof c);
    c.slots = slots;
    c.b = b;
    rt_expr_walk_names(e, rt_name_value, &c);
    if (c.n)
        rt_sb_puts(b, ")");
}

/* "xs[3]": how messages name tensor i of list p (a tensor: its name) */
static const char *rt_elem_name(char *buf, size_t cap, const rt_param *p, int i)
{
    if (p->kind != RT_P_LIST)
        return p->name;
    snprintf(buf, cap, "%s[%d]", p->name, i);
    return buf;
}

/* a tensor argument, or the tensors of a list argument (n of them) */
static const tilec_rt_tensor *rt_tensors(const rt_param *p, const tilec_rt_arg *a, int *n)
{
    if (p->kind == RT_P_LIST) {
        *n = a->u.list.count;
        return a->u.list.tensors;
    }
    *n = 1;
    return &a->u.tensor;
}

static tilec_status rt_check(const rt_sig *sig, const rt_check_step *c, const tilec_rt_arg *args,
                             const rt_value *slots)
{
    const rt_param *p = &sig->params[c->param];
    static const char *const whats[] = {"dimension", "stride", "length"};
    const char *what = whats[c->what];
    rt_value v;
    char buf[1024];
    rt_sbuf b;
    rt_sb_init(&b, buf, sizeof buf);
    const char *err = rt_expr_eval(c->e, slots, &v);
    if (err) {
        rt_describe(&b, sig, c->e, slots, NULL);
        if (c->what == RT_W_LEN)
            return rt_launch_fail("argument '%s': cannot evaluate its length, %s: %s", p->name, buf, err);
        return rt_launch_fail("argument '%s': cannot evaluate %s %d, %s: %s", p->name, what, c->axis, buf, err);
    }
    if (c->what == RT_W_LEN) {
        int64_t have = args[c->param].u.list.count;
        if (v.is_float ? (double)have == v.f : have == v.i)
            return TILEC_OK;
        rt_describe(&b, sig, c->e, slots, &v);
        return rt_launch_fail("argument '%s': %lld tensors but %s", p->name, (long long)have, buf);
    }
    int n;
    const tilec_rt_tensor *ts = rt_tensors(p, &args[c->param], &n);
    for (int i = 0; i < n; i++) {
        int64_t have = c->what == RT_W_STRIDE ? ts[i].strides[c->axis] : ts[i].shape[c->axis];
        if (v.is_float ? (double)have == v.f : have == v.i)
            continue;
        char nb[96];
        rt_describe(&b, sig, c->e, slots, &v);
        return rt_launch_fail("argument '%s': %s %d is %lld but %s", rt_elem_name(nb, sizeof nb, p, i), what, c->axis,
                              (long long)have, buf);
    }
    return TILEC_OK;
}

/* ---- tensors ---- */

/* dtype, rank, extents of tensor t, named `name` */
static tilec_status rt_tensor_shape(const rt_param *p, const char *name, const tilec_rt_tensor *t)
{
    if (t->dtype != (tilec_rt_dtype)p->dtype)
        return rt_launch_fail("argument '%s': expected dtype %s, got %s", name, rt_dtypes[p->dtype].name,
                              rt_dtype_str(t->dtype));
    if (t->rank != p->rank)
        return rt_launch_fail("argument '%s': expected rank %d, got %d", name, p->rank, t->rank);
    for (int i = 0; i < p->rank; i++)
        if (t->shape[i] < 0 || t->shape[i] > INT32_MAX)
            return rt_launch_fail("argument '%s': dimension %d is %lld, outside 0..%d", name, i, (long long)t->shape[i],
                                  INT32_MAX);
    return TILEC_OK;
}

static tilec_status rt_tensor_head(const rt_param *p, const tilec_rt_arg *a)
{
    if (p->flags & TILEC_RT_PARAM_ABSENT) {
        if (a->kind != TILEC_RT_ARG_ABSENT)
            return rt_launch_fail("argument '%s': the kernel was specialised without this optional tensor "
                                  "(%s=absent); pass an absent argument",
                                  p->name, p->name);
        return TILEC_OK;
    }
    if (a->kind != TILEC_RT_ARG_TENSOR)
        return rt_launch_fail("argument '%s': expected a tensor, got %s", p->name, rt_kind_str(a->kind));
    return rt_tensor_shape(p, p->name, &a->u.tensor);
}

/* a list: its length (0..max, the tensors given), then each tensor's dtype, rank and extents */
static tilec_status rt_list_head(const rt_param *p, const tilec_rt_arg *a)
{
    if (a->kind != TILEC_RT_ARG_LIST)
        return rt_launch_fail("argument '%s': expected a list of tensors, got %s", p->name, rt_kind_str(a->kind));
    int n = a->u.list.count;
    if (n < 0)
        return rt_launch_fail("argument '%s': a list of %d tensors", p->name, n);
    if (n > p->max)
        return rt_launch_fail("argument '%s': %d tensors, more than the %d the kernel takes (its list's max)", p->name,
                              n, p->max);
    if (n > 0 && !a->u.list.tensors)
        return rt_launch_fail("argument '%s': %d tensors at a NULL array", p->name, n);
    char nb[96];
    for (int i = 0; i < n; i++) {
        tilec_status s = rt_tensor_shape(p, rt_elem_name(nb, sizeof nb, p, i), &a->u.list.tensors[i]);
        if (s != TILEC_OK)
            return s;
    }
    return TILEC_OK;
}

/* contiguity, written overlap, data pointer of tensor t */
static tilec_status rt_tensor_tail(const rt_param *p, const char *name, const tilec_rt_tensor *t)
{
    int empty = 0;
    for (int i = 0; i < p->rank; i++)
        empty |= t->shape[i] == 0;
    if (!p->has_strides && !empty) {
        int64_t want = 1;
        for (int i = p->rank - 1; i >= 0; i--) {
            if (t->shape[i] != 1 && t->strides[i] != want)
                return rt_launch_fail("argument '%s': expected a contiguous tensor, but stride %d is %lld "
                                      "(contiguous: %lld)",
                                      name, i, (long long)t->strides[i], (long long)want);
            if (__builtin_mul_overflow(want, t->shape[i], &want))
                return rt_launch_fail("argument '%s': more elements than int64 can count", name);
        }
    }
    if ((p->flags & TILEC_RT_PARAM_WRITTEN) && !empty) /* no elements, no overlap */
        for (int i = 0; i < p->rank; i++)
            if (t->strides[i] == 0 && t->shape[i] > 1)
                return rt_launch_fail("argument '%s': stride %d is 0 on a dimension of extent %lld, but the kernel "
                                      "writes '%s' (its elements would overlap)",
                                      name, i, (long long)t->shape[i], name);
    uintptr_t addr = (uintptr_t)t->data;
    if (!t->data && !empty)
        return rt_launch_fail("argument '%s': data pointer is NULL", name);
    if (addr % (uintptr_t)p->align)
        return rt_launch_fail("argument '%s': data pointer 0x%llx is not aligned to %d bytes", name,
                              (unsigned long long)addr, p->align);
    return TILEC_OK;
}

/* whether e binds its name here: from axis `axis` of parameter pi (kind RT_N_DIM / RT_N_STRIDE) */
static int rt_binds_here(const rt_sig *sig, const rt_expr *e, int pi, int kind, int axis)
{
    if (e->kind != RT_E_BIND || e->slot < 0)
        return 0;
    const rt_name *n = &sig->names[e->slot];
    return n->param == pi && n->kind == kind && n->axis == axis;
}

/* The tensors of a list share the extents and strides the kernel gets (those of the first): an
 * axis whose name the list binds must have the first's extent, and, where the signature gives
 * strides, an axis of extent > 1 whose stride the list binds or leaves free ('any') the first's
 * stride (an axis of extent 1 is never stepped along). Axes with a check expression are compared
 * with it, tensor by tensor, by rt_check. */
static tilec_status rt_list_agree(const rt_sig *sig, int pi, const tilec_rt_arg *a, const rt_value *slots)
{
    const rt_param *p = &sig->params[pi];
    const tilec_rt_tensor *ts = a->u.list.tensors;
    char nb[96], buf[512];
    rt_sbuf b;
    for (int i = 1; i < a->u.list.count; i++)
        for (int ax = 0; ax < p->rank; ax++) {
            const rt_expr *d = p->dim[ax], *st = p->stride[ax];
            if (ts[i].shape[ax] != ts[0].shape[ax] && rt_binds_here(sig, d, pi, RT_N_DIM, ax)) {
                rt_sb_init(&b, buf, sizeof buf);
                rt_describe(&b, sig, d, slots, NULL);
                return rt_launch_fail("argument '%s': dimension %d is %lld but %s", rt_elem_name(nb, sizeof nb, p, i),
                                      ax, (long long)ts[i].shape[ax], buf);
            }
            if (p->has_strides && ts[i].shape[ax] > 1 && ts[i].strides[ax] != ts[0].strides[ax] &&
                (st->kind == RT_E_ANY || rt_binds_here(sig, st, pi, RT_N_STRIDE, ax)))
                return rt_launch_fail("argument '%s': stride %d is %lld but '%s[0]' has %lld (the tensors of a list "
                                      "share their strides)",
                                      rt_elem_name(nb, sizeof nb, p, i), ax, (long long)ts[i].strides[ax], p->name,
                                      (long long)ts[0].strides[ax]);
        }
    return TILEC_OK;
}

/* ---- requirements and grid ---- */

static tilec_status rt_requires(const rt_sig *sig, const rt_value *slots)
{
    for (int r = 0; r < sig->nrequires; r++) {
        const rt_require *q = &sig->requires[r];
        rt_value v;
        const char *err = rt_expr_eval(q->e, slots, &v);
        if (!err && (v.is_float ? v.f != 0 : v.i != 0))
            continue;
        char buf[1024];
        rt_sbuf b;
        rt_sb_init(&b, buf, sizeof buf);
        rt_describe(&b, sig, q->e, slots, NULL);
        if (err)
            return rt_launch_fail("cannot evaluate requirement %s: %s", buf, err);
        return rt_launch_fail("requirement failed: %s: %s", buf, q->message);
    }
    return TILEC_OK;
}

static tilec_status rt_grid(const rt_sig *sig, const rt_value *slots, tilec_rt_launch_config *cfg)
{
    static const char axis[] = "xyz";
    static const int64_t limit[3] = {INT32_MAX, 65535, 65535};
    for (int d = 0; d < 3; d++) {
        cfg->grid[d] = 1;
        if (d >= sig->ngrid)
            continue;
        rt_value v;
        const char *err = rt_expr_eval(sig->grid[d], slots, &v);
        const char *bad = err;
        if (!bad && v.is_float && (v.f != floor(v.f) || !(fabs(v.f) < 9e18)))
            bad = "not an integer";
        int64_t n = bad ? 0 : v.is_float ? (int64_t)v.f : v.i;
        if (!bad && n < 0)
            bad = "negative";
        if (!bad && n > limit[d])
            bad = d ? "more than 65535" : "more than 2147483647";
        if (bad) {
            char buf[1024];
            rt_sbuf b;
            rt_sb_init(&b, buf, sizeof buf);
            rt_describe(&b, sig, sig->grid[d], slots, err ? NULL : &v);
            return rt_launch_fail("grid dimension %c: %s is %s", axis[d], buf, bad);
        }
        cfg->grid[d] = (unsigned)n;
    }
    if (sig->clustered && cfg->grid[0] && cfg->grid[1] && cfg->grid[2])
        for (int d = 0; d < 3; d++)
            if (cfg->grid[d] % sig->cluster[d])
                return rt_launch_fail("grid (%u, %u, %u) is not a multiple of the cluster (%u, %u, %u)", cfg->grid[0],
                                      cfg->grid[1], cfg->grid[2], sig->cluster[0], sig->cluster[1], sig->cluster[2]);
    return TILEC_OK;
}

/* ---- packing ---- */

static void rt_pack(const rt_sig *sig, const tilec_rt_arg *args, const uint64_t *sbits, unsigned char *buf,
                    void **ptrs)
{
    int k = 0;
    for (int i = 0; i < sig->nparams; i++) {
        const rt_param *p = &sig->params[i];
        unsigned char *at = buf + p->offset;
        if (p->kind == RT_P_SCALAR) {
            size_t size = rt_dtypes[p->dtype].bits <= 8 ? 1 : rt_dtypes[p->dtype].bits / 8;
            memcpy(at, &sbits[i], size); /* little-endian: the low bytes */
            ptrs[k++] = at;
            continue;
        }
        int absent = (p->flags & TILEC_RT_PARAM_ABSENT) != 0;
        const tilec_rt_tensor *t = &args[i].u.tensor;
        size_t head = 8; /* a tensor's pointer; a list's pointers and length */
        if (p->kind == RT_P_LIST) {
            const tilec_rt_tensor_list *l = &args[i].u.list;
            for (int e = 0; e < p->max; e++) {
                uint64_t ptr = e < l->count ? (uint64_t)(uintptr_t)l->tensors[e].data : 0;
                memcpy(at + 8 * e, &ptr, 8);
            }
            ptrs[k++] = at;
            int32_t n = l->count;
            head = 8 * (size_t)p->max;
            memcpy(at + head, &n, 4);
            ptrs[k++] = at + head;
            head += 4;
            absent = l->count == 0; /* an empty list: zero extents and strides */
            t = l->tensors;
        } else {
            uint64_t ptr = absent ? 0 : (uint64_t)(uintptr_t)t->data;
            memcpy(at, &ptr, 8);
            ptrs[k++] = at;
        }
        for (int a = 0; a < p->rank; a++) {
            int32_t e = absent ? 0 : (int32_t)t->shape[a];
            memcpy(at + head + 4 * a, &e, 4);
            ptrs[k++] = at + head + 4 * a;
        }
        unsigned char *st = buf + ((p->offset + head + 4 * (size_t)p->rank + 7) & ~(size_t)7);
        for (int a = 0; a < p->rank; a++) {
            int64_t s = absent ? 0 : t->strides[a];
            memcpy(st + 8 * a, &s, 8);
            ptrs[k++] = st + 8 * a;
        }
    }
}

tilec_status rt_bind(const rt_sig *sig, const tilec_rt_arg *args, int nargs, int num_sms, tilec_rt_launch_config *cfg,
                     unsigned char *buf, void **ptrs)
{
    if (nargs != sig->nparams) {
        if (nargs >= 0 && nargs < sig->nparams)
            return rt_launch_fail("expected %d arguments, got %d (missing '%s')", sig->nparams, nargs,
                                  sig->params[nargs].name);
        return rt_launch_fail("expected %d arguments, got %d", sig->nparams, nargs);
    }
    rt_value slots[RT_MAX_NAMES];
    uint64_t sbits[RT_MAX_PARAMS];
    if (sig->num_sms_slot >= 0) {
        slots[sig->num_sms_slot].is_float = 0;
        slots[sig->num_sms_slot].i = num_sms;
    }
    int bi = 0, ci = 0;
    tilec_status s;
    for (int i = 0; i < sig->nparams; i++) {
        const rt_param *p = &sig->params[i];
        const tilec_rt_arg *a = &args[i];
        if (p->kind == RT_P_SCALAR) {
            if (a->kind != TILEC_RT_ARG_SCALAR)
                return rt_launch_fail("argument '%s': expected a scalar, got %s", p->name, rt_kind_str(a->kind));
            if ((s = rt_scalar(p, &a->u.scalar, &sbits[i], &slots[p->slot])) != TILEC_OK)
                return s;
        } else if ((s = p->kind == RT_P_LIST ? rt_list_head(p, a) : rt_tensor_head(p, a)) != TILEC_OK) {
            return s;
        }
        for (; bi < sig->nbinds && sig->binds[bi].param == i; bi++) {
            const rt_bind_step *b = &sig->binds[bi];
            slots[b->slot].is_float = 0;
            if (b->what == RT_W_LEN) {
                slots[b->slot].i = a->u.list.count;
                continue;
            }
            const tilec_rt_tensor *t = p->kind == RT_P_LIST ? a->u.list.tensors : &a->u.tensor;
            if (p->kind == RT_P_LIST && a->u.list.count == 0)
                return rt_launch_fail("argument '%s': an empty list gives '%s' no value (its tensors' %s %d); bind the "
                                      "name with an earlier parameter",
                                      p->name, sig->names[b->slot].name, b->what == RT_W_STRIDE ? "stride" : "dimension",
                                      b->axis);
            slots[b->slot].i = b->what == RT_W_STRIDE ? t->strides[b->axis] : t->shape[b->axis];
        }
        if (p->kind == RT_P_LIST && (s = rt_list_agree(sig, i, a, slots)) != TILEC_OK)
            return s;
        for (; ci < sig->nchecks && sig->checks[ci].at == i; ci++)
            if ((s = rt_check(sig, &sig->checks[ci], args, slots)) != TILEC_OK)
                return s;
        if (p->kind == RT_P_TENSOR && !(p->flags & TILEC_RT_PARAM_ABSENT) &&
            (s = rt_tensor_tail(p, p->name, &a->u.tensor)) != TILEC_OK)
            return s;
        char nb[96];
        for (int e = 0; p->kind == RT_P_LIST && e < a->u.list.count; e++)
            if ((s = rt_tensor_tail(p, rt_elem_name(nb, sizeof nb, p, e), &a->u.list.tensors[e])) != TILEC_OK)
                return s;
    }
    if ((s = rt_requires(sig, slots)) != TILEC_OK || (s = rt_grid(sig, slots, cfg)) != TILEC_OK)
        return s;
    cfg->block[0] = (unsigned)sig->threads;
    cfg->block[1] = cfg->block[2] = 1;
    cfg->smem = sig->smem;
    memcpy(cfg->cluster, sig->cluster, sizeof cfg->cluster);
    cfg->cooperative = sig->cooperative;
    cfg->pdl = sig->pdl;
    cfg->param_bytes = sig->param_bytes;
    if (buf)
        rt_pack(sig, args, sbits, buf, ptrs);
    return TILEC_OK;
}
