/* test_emu_recorded.c — the emulator against bytes a GPU produced: each case that
 * tests/gpu/emu_vs_gpu.py --dump recorded in DIR (inputs and the GPU's outputs; DIR/README.md)
 * runs on the emulator, at the runtime's optimisation level and at 0, and every output must
 * equal the GPU's byte for byte.    Usage: test_emu_recorded DIR */
#include "emu_harness.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the dumps do not hold: the source file of each kernel and the values of its scalar
 * arguments, in argument order (from emu_vs_gpu.py's case definitions). Every recording of
 * DIR runs; one with no entry here fails the test, so that none goes unchecked. */
typedef struct Case {
    const char *name;   /* DIR/<name>.txt */
    const char *source; /* relative to the source tree */
    int nscalars;
    float scalars[2];   /* every scalar of these kernels is f32 */
} Case;

static const Case cases[] = {
    {"mhc_sinkhorn_r10", "kernels.tl", 1, {1e-6f}},
    {"mhc_sinkhorn_r1", "kernels.tl", 1, {1e-6f}},
    {"mhc_sinkhorn_r3", "kernels.tl", 1, {1e-6f}},
    {"mhc_sinkhorn_r10_specials", "kernels.tl", 1, {1e-6f}},
    {"probe_arith", "tests/gpu/emu_probe.tl", 0, {0}},
    {"probe_math", "tests/gpu/emu_probe.tl", 0, {0}},
    {"probe_cvt", "tests/gpu/emu_probe.tl", 0, {0}},
    {"probe_atomic", "tests/gpu/emu_probe.tl", 0, {0}},
    {"probe_f64", "tests/gpu/emu_probe.tl", 0, {0}},
    {"probe_f64_order", "tests/gpu/emu_probe.tl", 0, {0}},
};
enum { NCASES = sizeof cases / sizeof cases[0], MAXARGS = 16, MAXGEN = 16 };

/* emu_vs_gpu.py fills output buffers with this byte before a launch; a recording leaves out
 * the inputs of outputs that start so */
#define SENTINEL 0xEE

typedef struct Arg {
    bool scalar, out;
    char dtype[8];
    int rank;
    int64_t shape[6];
    size_t bytes;
} Arg;

typedef struct Recorded {
    char label[512];
    char kernel[64];
    char genbuf[512];
    const char *generics[MAXGEN];
    int ngenerics;
    int nargs;
    Arg args[MAXARGS];
} Recorded;

static int dtype_size(const char *t)
{
    static const struct {
        const char *name;
        int size;
    } sizes[] = {{"bool", 1}, {"i8", 1},  {"u8", 1},   {"e4m3", 1}, {"e5m2", 1}, {"ue8m0", 1}, {"i16", 2},
                 {"u16", 2},  {"f16", 2}, {"bf16", 2}, {"i32", 4},  {"u32", 4},  {"f32", 4},   {"i64", 8},
                 {"u64", 8},  {"f64", 8}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (!strcmp(t, sizes[i].name))
            return sizes[i].size;
    return 0;
}

/* the file's bytes and a NUL after them */
static void *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0, got;
    do {
        if (n + 1 >= cap) {
            cap = cap ? 2 * cap : 65536;
            buf = realloc(buf, cap);
            if (!buf) {
                fclose(f);
                return NULL;
            }
        }
        got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
    } while (got > 0);
    fclose(f);
    buf[n] = 0;
    *size = n;
    return buf;
}

/* "mhc_sinkhorn<H=4,BLOCK=32,REPEAT=10>" or "probe_arith (what it tests)", then one line per
 * argument: "arg 0: f32 [70, 4, 4]", "arg 1: f32 [70, 4, 4] out", "arg 2: scalar" */
static bool parse_txt(const char *path, Recorded *r)
{
    size_t n;
    char *text = read_file(path, &n);
    if (!text) {
        EH_CHECK(0, "cannot read %s", path);
        return false;
    }
    memset(r, 0, sizeof *r);
    bool ok = true;
    int line = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && ok; l = strtok_r(NULL, "\n", &save), line++) {
        if (line == 0) {
            snprintf(r->label, sizeof r->label, "%s", l);
            size_t k = strcspn(l, "< ");
            snprintf(r->kernel, sizeof r->kernel, "%.*s", (int)k, l);
            if (l[k] == '<') {
                char *end = strchr(l + k, '>');
                ok = end != NULL;
                snprintf(r->genbuf, sizeof r->genbuf, "%.*s", ok ? (int)(end - l - k - 1) : 0, l + k + 1);
                for (char *s2 = NULL, *g = strtok_r(r->genbuf, ",", &s2); g && r->ngenerics < MAXGEN;
                     g = strtok_r(NULL, ",", &s2))
                    r->generics[r->ngenerics++] = g;
            }
            continue;
        }
        int idx, used = 0;
        if (sscanf(l, "arg %d: %n", &idx, &used) != 1 || idx != r->nargs || idx >= MAXARGS) {
            ok = false;
            break;
        }
        Arg *a = &r->args[r->nargs++];
        const char *p = l + used;
        if (!strncmp(p, "scalar", 6)) {
            a->scalar = true;
            continue;
        }
        int k = 0;
        ok = sscanf(p, "%7s [%n", a->dtype, &k) == 1 && k > 0 && dtype_size(a->dtype) > 0;
        p += k;
        a->bytes = ok ? (size_t)dtype_size(a->dtype) : 0;
        while (ok && *p != ']') {
            char *e;
            long long d = strtoll(p, &e, 10);
            ok = e != p && d >= 0 && a->rank < 6;
            if (ok) {
                a->shape[a->rank++] = d;
                a->bytes *= (size_t)d;
                p = e;
                while (*p == ',' || *p == ' ')
                    p++;
            }
        }
        a->out = ok && strstr(p, " out") != NULL;
    }
    EH_CHECK(ok && r->kernel[0], "%s: line %d is not what emu_vs_gpu.py --dump writes", path, line);
    free(text);
    return ok && r->kernel[0];
}

static void run_case(const char *dir, const Case *c, int opt)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.txt", dir, c->name);
    Recorded r;
    if (!parse_txt(path, &r))
        return;
    char src[1024];
    snprintf(src, sizeof src, "%s/%s", eh_source_dir(), c->source);
    EhKernel k;
    if (!eh_compile_opt(src, NULL, r.kernel, r.generics, r.ngenerics, opt, &k)) {
        EH_CHECK(0, "%s: %s does not compile from %s", c->name, r.label, c->source);
        return;
    }
    void *data[MAXARGS] = {0};
    EhArg args[MAXARGS];
    bool ok = true;
    int nscalar = 0;
    for (int i = 0; i < r.nargs && ok; i++) {
        Arg *a = &r.args[i];
        if (a->scalar) {
            ok = nscalar < c->nscalars;
            EH_CHECK(ok, "%s: argument %d is a scalar, and the test gives the case %d scalar(s)", c->name, i,
                     c->nscalars);
            if (ok)
                args[i] = eh_f32(c->scalars[nscalar++]);
            continue;
        }
        snprintf(path, sizeof path, "%s/%s.in.%d.bin", dir, c->name, i);
        size_t n = 0;
        data[i] = read_file(path, &n);
        if (!data[i] && a->out) {
            data[i] = malloc(a->bytes ? a->bytes : 1);
            memset(data[i], SENTINEL, a->bytes);
            n = a->bytes;
        }
        ok = data[i] && n == a->bytes;
        EH_CHECK(data[i], "%s: the input %s is missing", c->name, path);
        EH_CHECK(!data[i] || ok, "%s: %s holds %zu bytes; argument %d is %zu bytes of %s", c->name, path, n, i,
                 a->bytes, a->dtype);
        args[i] = eh_tensor(data[i], a->rank, a->shape, NULL);
    }
    EH_CHECK(!ok || nscalar == c->nscalars, "%s: the test gives %d scalar(s), the recording has %d", c->name,
             c->nscalars, nscalar);
    if (ok) {
        char err[4096];
        tl_emu_status st = eh_run(&k, args, r.nargs, NULL, err, sizeof err);
        EH_CHECK(st == TL_EMU_OK, "%s (O%d): %s", c->name, opt, err);
        for (int i = 0; i < r.nargs && st == TL_EMU_OK; i++) {
            if (!r.args[i].out)
                continue;
            snprintf(path, sizeof path, "%s/%s.gpu.%d.bin", dir, c->name, i);
            size_t n = 0;
            void *want = read_file(path, &n);
            EH_CHECK(want, "%s: the GPU's output %s is missing", c->name, path);
            EH_CHECK(!want || n == r.args[i].bytes, "%s: %s holds %zu bytes; argument %d is %zu bytes of %s",
                     c->name, path, n, i, r.args[i].bytes, r.args[i].dtype);
            if (want && n == r.args[i].bytes) {
                char what[256];
                snprintf(what, sizeof what, "%s (O%d) argument %d", c->name, opt, i);
                size_t bad = eh_compare_bytes(what, data[i], want, n, (size_t)dtype_size(r.args[i].dtype));
                EH_CHECK(bad == 0, "%s: %s differs from the GPU's bytes", what, r.label);
            }
            free(want);
        }
    }
    for (int i = 0; i < r.nargs; i++)
        free(data[i]);
    eh_free(&k);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR (a directory of tests/gpu/recorded/)\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    DIR *d = opendir(dir);
    EH_CHECK(d != NULL, "cannot open the directory %s", dir);
    char *names[256];
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL && n < 256;) {
        size_t len = strlen(e->d_name);
        if (len > 4 && !strcmp(e->d_name + len - 4, ".txt"))
            names[n++] = strndup(e->d_name, len - 4);
    }
    if (d)
        closedir(d);
    EH_CHECK(!d || n > 0, "%s holds no recorded case (<name>.txt)", dir);
    qsort(names, (size_t)n, sizeof names[0], by_name);
    for (int i = 0; i < n; i++) {
        const Case *c = NULL;
        for (int j = 0; j < NCASES; j++)
            if (!strcmp(cases[j].name, names[i]))
                c = &cases[j];
        EH_CHECK(c != NULL, "%s/%s.txt: a recorded case that test_emu_recorded.c has no entry for", dir, names[i]);
        if (c) {
            run_case(dir, c, 3);
            run_case(dir, c, 0);
        }
        free(names[i]);
    }
    return eh_finish("emu_recorded");
}
