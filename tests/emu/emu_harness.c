/* emu_harness.c — compiling for the host, binding arguments to the kernel parameter ABI, and the
 * signature's grid and requirement expressions, for the emulator tests. */
#include "emu_harness.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int eh_failures;

void eh_report(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: FAILED: ", file, line);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

int eh_finish(const char *name)
{
    if (eh_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, eh_failures);
        return 1;
    }
    printf("%s: ok\n", name);
    return 0;
}

const char *eh_source_dir(void) { return TILEC_SOURCE_DIR; }

uint64_t eh_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

float eh_randn(uint64_t *s)
{
    double u1 = ((double)(eh_rand(s) >> 11) + 0.5) / 9007199254740992.0;
    double u2 = ((double)(eh_rand(s) >> 11) + 0.5) / 9007199254740992.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

size_t eh_compare_bytes(const char *what, const void *got, const void *want, size_t n, size_t elem)
{
    const uint8_t *g = got, *w = want;
    size_t bad = 0;
    for (size_t i = 0; i < n; i += elem) {
        if (memcmp(g + i, w + i, elem) == 0)
            continue;
        if (bad < 5) {
            fprintf(stderr, "  %s: element %zu differs: got", what, i / elem);
            for (size_t j = elem; j-- > 0;)
                fprintf(stderr, "%s%02x", j + 1 == elem ? " 0x" : "", g[i + j]);
            fprintf(stderr, ", want");
            for (size_t j = elem; j-- > 0;)
                fprintf(stderr, "%s%02x", j + 1 == elem ? " 0x" : "", w[i + j]);
            fprintf(stderr, "\n");
        }
        bad++;
    }
    if (bad)
        fprintf(stderr, "  %s: %zu of %zu elements differ\n", what, bad, n / elem);
    return bad;
}

/* ---------------- compiling ---------------- */

static char *line_word(char **p)
{
    while (**p == ' ')
        (*p)++;
    char *s = *p;
    while (**p && **p != ' ' && **p != '\n')
        (*p)++;
    if (**p == ' ')
        *(*p)++ = 0;
    return s;
}

static bool parse_signature(EhKernel *k)
{
    char *copy = strdup(k->signature);
    for (char *line = strtok(copy, "\n"); line; line = strtok(NULL, "\n")) {
        char *p = line;
        char *w = line_word(&p);
        if (!strcmp(w, "key")) {
            snprintf(k->key, sizeof k->key, "%s", p);
        } else if (!strcmp(w, "threads")) {
            k->threads = atoi(p);
        } else if (!strcmp(w, "smem")) {
            k->smem = (size_t)atoll(p);
        } else if (!strcmp(w, "flags")) {
            k->cooperative = strstr(p, "cooperative") != NULL;
        } else if (!strcmp(w, "tensor") || !strcmp(w, "scalar")) {
            int i = atoi(line_word(&p));
            if (i < 0 || i >= EH_MAX_PARAMS)
                return false;
            EhParam *pa = &k->params[i];
            pa->tensor = w[0] == 't';
            snprintf(pa->name, sizeof pa->name, "%s", line_word(&p));
            snprintf(pa->dtype, sizeof pa->dtype, "%s", line_word(&p));
            if (pa->tensor)
                pa->rank = atoi(line_word(&p));
            if (i + 1 > k->nparams)
                k->nparams = i + 1;
        } else if (!strcmp(w, "dim") || !strcmp(w, "stride")) {
            int i = atoi(line_word(&p));
            int ax = atoi(line_word(&p));
            if (i < 0 || i >= EH_MAX_PARAMS || ax < 0 || ax >= 6)
                return false;
            (w[0] == 'd' ? k->params[i].dims : k->params[i].strides)[ax] = strdup(p);
        } else if (!strcmp(w, "grid")) {
            /* up to three expressions, each balanced */
            while (*p && k->ngrid < 3) {
                while (*p == ' ')
                    p++;
                char *s = p;
                int depth = 0;
                do {
                    if (*p == '(')
                        depth++;
                    else if (*p == ')')
                        depth--;
                    p++;
                } while (*p && (depth > 0 || (*p != ' ')));
                k->grid[k->ngrid++] = strndup(s, (size_t)(p - s));
            }
        } else if (!strcmp(w, "require") && k->nrequires < 16) {
            k->requires[k->nrequires++] = strdup(p);
        }
    }
    free(copy);
    return k->threads > 0 && k->ngrid > 0;
}

bool eh_compile(const char *path, const char *source, const char *kernel, const char *const *generics, int ngenerics,
                EhKernel *out)
{
    return eh_compile_opt(path, source, kernel, generics, ngenerics, 3, out);
}

bool eh_compile_opt(const char *path, const char *source, const char *kernel, const char *const *generics,
                    int ngenerics, int opt_level, EhKernel *out)
{
    memset(out, 0, sizeof *out);
    tilec_program *p = NULL;
    tilec_status st = source ? tilec_program_from_string(path, source, NULL, &p) : tilec_program_from_file(path, NULL, &p);
    if (st != TILEC_OK) {
        fprintf(stderr, "%s: %s\n%s", path, tilec_status_name(st), p ? tilec_program_diagnostics(p) : "");
        tilec_program_destroy(p);
        return false;
    }
    tilec_target t = {90, opt_level, 1};
    tilec_artifact *a = NULL;
    st = tilec_compile(p, kernel, generics, ngenerics, &t, &a);
    if (st != TILEC_OK) {
        fprintf(stderr, "compiling %s: %s\n%s", kernel, tilec_status_name(st), tilec_program_diagnostics(p));
        tilec_program_destroy(p);
        return false;
    }
    out->signature = strdup(a->signature);
    bool ok = parse_signature(out);
    if (!ok)
        fprintf(stderr, "cannot read the signature of %s:\n%s", kernel, a->signature);
    char err[512];
    if (ok && tl_emu_kernel_load(a->object, a->object_size, a->entry, out->key, &out->k, err, sizeof err) != TL_EMU_OK) {
        fprintf(stderr, "loading %s: %s\n", kernel, err);
        ok = false;
    }
    tilec_artifact_destroy(a);
    tilec_program_destroy(p);
    return ok;
}

void eh_free(EhKernel *k)
{
    tl_emu_kernel_free(k->k);
    free(k->signature);
    for (int i = 0; i < EH_MAX_PARAMS; i++)
        for (int d = 0; d < 6; d++) {
            free(k->params[i].dims[d]);
            free(k->params[i].strides[d]);
        }
    for (int i = 0; i < k->ngrid; i++)
        free(k->grid[i]);
    for (int i = 0; i < k->nrequires; i++)
        free(k->requires[i]);
    memset(k, 0, sizeof *k);
}

/* ---------------- arguments ---------------- */

EhArg eh_tensor(void *data, int rank, const int64_t *shape, const int64_t *strides)
{
    EhArg a = {0};
    a.tensor = true;
    a.data = data;
    a.rank = rank;
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        a.shape[d] = shape[d];
        a.strides[d] = strides ? strides[d] : s;
        s *= shape[d];
    }
    return a;
}

static EhArg scalar(uint64_t bits, int size, double v)
{
    EhArg a = {0};
    a.bits = bits;
    a.size = size;
    a.fval = v;
    return a;
}

EhArg eh_i32(int32_t v) { return scalar((uint32_t)v, 4, v); }
EhArg eh_i64(int64_t v) { return scalar((uint64_t)v, 8, (double)v); }
EhArg eh_bool(bool v) { return scalar(v, 1, v); }
EhArg eh_f32(float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    return scalar(u, 4, v);
}

/* ---------------- signature expressions ---------------- */

typedef struct Env {
    char names[128][64];
    int64_t vals[128];
    int n;
} Env;

static bool lookup(Env *e, const char *name, int64_t *v)
{
    for (int i = 0; i < e->n; i++)
        if (!strcmp(e->names[i], name)) {
            *v = e->vals[i];
            return true;
        }
    return false;
}

static void bind(Env *e, const char *name, int64_t v)
{
    if (e->n < 128) {
        snprintf(e->names[e->n], 64, "%s", name);
        e->vals[e->n++] = v;
    }
}

static void skip(const char **p)
{
    while (**p == ' ')
        (*p)++;
}

static bool token(const char **p, char *buf, size_t n)
{
    skip(p);
    size_t i = 0;
    while (**p && **p != ' ' && **p != '(' && **p != ')' && i + 1 < n)
        buf[i++] = *(*p)++;
    buf[i] = 0;
    return i > 0;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a % b < 0) != (b < 0))) ? q - 1 : q;
}

static bool eval(const char **p, Env *e, int64_t *out)
{
    skip(p);
    if (**p != '(') {
        char t[64];
        if (!token(p, t, sizeof t))
            return false;
        if ((t[0] >= '0' && t[0] <= '9') || t[0] == '-') {
            if (strpbrk(t, ".eE"))
                return false; /* float expressions: not needed by these tests */
            *out = strtoll(t, NULL, 10);
            return true;
        }
        return lookup(e, t, out);
    }
    (*p)++;
    char op[16];
    if (!token(p, op, sizeof op))
        return false;
    int64_t a[3] = {0};
    int n = 0;
    skip(p);
    while (**p && **p != ')' && n < 3) {
        if (!eval(p, e, &a[n++]))
            return false;
        skip(p);
    }
    if (**p != ')')
        return false;
    (*p)++;
    int64_t x = a[0], y = a[1];
    bool zero = (y == 0);
    if (!strcmp(op, "+")) *out = x + y;
    else if (!strcmp(op, "-")) *out = n == 1 ? -x : x - y;
    else if (!strcmp(op, "*")) *out = x * y;
    else if (!strcmp(op, "/")) *out = zero ? 0 : x / y;
    else if (!strcmp(op, "%")) *out = zero ? 0 : x % y;
    else if (!strcmp(op, "cdiv")) *out = zero ? 0 : -floor_div(-x, y);
    else if (!strcmp(op, "align")) *out = zero ? 0 : -floor_div(-x, y) * y;
    else if (!strcmp(op, "floordiv")) *out = zero ? 0 : floor_div(x, y);
    else if (!strcmp(op, "floormod")) *out = zero ? 0 : x - floor_div(x, y) * y;
    else if (!strcmp(op, "min")) *out = x < y ? x : y;
    else if (!strcmp(op, "max")) *out = x > y ? x : y;
    else if (!strcmp(op, "==")) *out = x == y;
    else if (!strcmp(op, "!=")) *out = x != y;
    else if (!strcmp(op, "<")) *out = x < y;
    else if (!strcmp(op, "<=")) *out = x <= y;
    else if (!strcmp(op, ">")) *out = x > y;
    else if (!strcmp(op, ">=")) *out = x >= y;
    else if (!strcmp(op, "&&")) *out = x && y;
    else if (!strcmp(op, "||")) *out = x || y;
    else if (!strcmp(op, "!")) *out = !x;
    else if (!strcmp(op, "neg")) *out = -x;
    else if (!strcmp(op, "select")) *out = x ? y : a[2];
    else return false;
    return true;
}

/* a dim / stride expression against an argument's value: binds, accepts or compares */
static bool match(Env *e, const char *expr, int64_t v, const char *what, char *err, size_t cap)
{
    if (!expr || !strcmp(expr, "any"))
        return true;
    if (!strncmp(expr, "(bind ", 6)) {
        char name[64];
        const char *p = expr + 6;
        token(&p, name, sizeof name);
        int64_t old;
        if (lookup(e, name, &old) && old != v) {
            snprintf(err, cap, "%s: %s is %lld, expected %lld", what, name, (long long)v, (long long)old);
            return false;
        }
        bind(e, name, v);
        return true;
    }
    const char *p = expr;
    int64_t want;
    if (!eval(&p, e, &want)) {
        snprintf(err, cap, "%s: cannot evaluate '%s'", what, expr);
        return false;
    }
    if (want != v) {
        snprintf(err, cap, "%s is %lld, the signature wants %s = %lld", what, (long long)v, expr, (long long)want);
        return false;
    }
    return true;
}

/* bits per element of a signature dtype: e2m1 packs two to a byte; fp8, ue8m0 and bool take one */
static int elem_bits(const char *dt)
{
    if (!strcmp(dt, "e2m1"))
        return 4;
    size_t n = strlen(dt);
    while (n > 0 && dt[n - 1] >= '0' && dt[n - 1] <= '9')
        n--;
    int b = atoi(dt + n);
    return b == 16 || b == 32 || b == 64 ? b : 8;
}

tl_emu_status eh_run(EhKernel *k, const EhArg *args, int nargs, const tl_emu_options *opts, char *err, size_t errcap)
{
    err[0] = 0;
    if (nargs != k->nparams) {
        snprintf(err, errcap, "%d arguments for %d parameters", nargs, k->nparams);
        return TL_EMU_ERROR_INVALID;
    }
    Env *e = calloc(1, sizeof *e);
    tl_emu_range ranges[EH_MAX_PARAMS]; /* what global accesses are checked against */
    int nranges = 0;
    /* each ABI parameter in its own slot, aligned for any type */
    uint64_t *slots = calloc(EH_MAX_PARAMS * 13, sizeof(uint64_t));
    void **params = calloc(EH_MAX_PARAMS * 13, sizeof(void *));
    int np = 0;
    tl_emu_status st = TL_EMU_ERROR_INVALID;
    for (int i = 0; i < nargs; i++) {
        const EhParam *pa = &k->params[i];
        const EhArg *a = &args[i];
        char what[96];
        if (pa->tensor != a->tensor || (pa->tensor && pa->rank != a->rank)) {
            snprintf(err, errcap, "argument %d (%s) does not match the signature", i, pa->name);
            goto out;
        }
        if (pa->tensor) {
            ranges[nranges++] =
                tl_emu_tensor_range(a->data, elem_bits(pa->dtype), a->rank, a->shape, a->strides, pa->name);
            slots[np] = (uint64_t)(uintptr_t)a->data;
            params[np] = &slots[np];
            np++;
            for (int d = 0; d < a->rank; d++) {
                snprintf(what, sizeof what, "%s dim %d", pa->name, d);
                if (!match(e, pa->dims[d], a->shape[d], what, err, errcap))
                    goto out;
                int32_t ext = (int32_t)a->shape[d];
                memcpy(&slots[np], &ext, 4);
                params[np] = &slots[np];
                np++;
            }
            for (int d = 0; d < a->rank; d++) {
                snprintf(what, sizeof what, "%s stride %d", pa->name, d);
                if (!match(e, pa->strides[d], a->strides[d], what, err, errcap))
                    goto out;
                memcpy(&slots[np], &a->strides[d], 8);
                params[np] = &slots[np];
                np++;
            }
        } else {
            memcpy(&slots[np], &a->bits, 8);
            params[np] = &slots[np];
            np++;
            bind(e, pa->name, (int64_t)a->fval);
        }
    }
    bind(e, "num_sms", 3); /* what grid expressions see: a few SMs, so persistent grids loop */
    for (int i = 0; i < k->nrequires; i++) {
        const char *p = k->requires[i];
        int64_t v;
        if (!eval(&p, e, &v)) {
            snprintf(err, errcap, "cannot evaluate the requirement %s", k->requires[i]);
            goto out;
        }
        if (!v) {
            snprintf(err, errcap, "requirement failed: %s", k->requires[i]);
            goto out;
        }
    }
    tl_emu_launch_config cfg = {{1, 1, 1}, (unsigned)k->threads, k->smem, k->cooperative, ranges, nranges};
    for (int g = 0; g < k->ngrid; g++) {
        const char *p = k->grid[g];
        int64_t v;
        if (!eval(&p, e, &v) || v < 0) {
            snprintf(err, errcap, "cannot evaluate the grid expression %s", k->grid[g]);
            goto out;
        }
        cfg.grid[g] = (unsigned)v;
    }
    tl_emu_options o = {0};
    if (opts)
        o = *opts;
    else
        o.workers = 1, o.racecheck = 1;
    st = tl_emu_launch(k->k, params, &cfg, &o, err, errcap);
    if (st != TL_EMU_OK && getenv("EH_VERBOSE"))
        fprintf(stderr, "[%s] %s\n", tl_emu_status_name(st), err);
out:
    free(e);
    free(slots);
    free(params);
    return st;
}
