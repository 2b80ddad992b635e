/* fake_compiler.c — an rt_compiler for tests: a "program" is a text file of canned kernels, each a
 * signature (and optionally PTX) with $NAME placeholders for generic values; without @ptx, the
 * PTX is generated from the signature by this file's own reading of the parameter ABI.
 *
 *   @kernel NAME            starts a kernel
 *   @default G VALUE        a generic parameter and its default
 *   @sig / @ptx             the following lines, up to the next @ line, are its signature / PTX
 *   @compile_error TEXT     compiling this kernel fails with TEXT as the diagnostic
 *   @open_error TEXT        (anywhere) opening the program fails with TEXT
 * $ARCH is replaced by the target ("sm_90a"). Every compile appends "NAME<generics>" to the file
 * in $TILEC_FAKE_COMPILE_LOG (one write per line, O_APPEND) and sleeps
 * $TILEC_FAKE_COMPILE_DELAY_MS; $TILEC_FAKE_COMPILER_VERSION overrides the version string. */
#include "fake_compiler.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rt_internal.h"

typedef struct fake_kernel {
    char name[64];
    int ngen;
    char gen[16][2][64];
    char *sig, *ptx, *compile_error;
} fake_kernel;

typedef struct fake_program {
    char *text;
    size_t len;
    int nkernels;
    fake_kernel kernels[32];
} fake_program;

static long fake_compile_count;

long fake_compiler_compiles(void)
{
    return fake_compile_count;
}

static const char *fc_version(void *self)
{
    const char *v = getenv("TILEC_FAKE_COMPILER_VERSION");
    return v && *v ? v : "fake-compiler 1";
}

static char *fc_append(char *s, const char *line, size_t n)
{
    size_t have = s ? strlen(s) : 0;
    char *r = realloc(s, have + n + 2);
    if (!r) {
        free(s);
        return NULL;
    }
    memcpy(r + have, line, n);
    r[have + n] = '\n';
    r[have + n + 1] = 0;
    return r;
}

static void fc_free_program(fake_program *p)
{
    for (int i = 0; i < p->nkernels; i++) {
        free(p->kernels[i].sig);
        free(p->kernels[i].ptx);
        free(p->kernels[i].compile_error);
    }
    free(p->text);
    free(p);
}

static tilec_status fc_open(void *self, const char *path, const tilec_program_options *opts, void **out)
{
    fake_program *p = calloc(1, sizeof *p);
    if (!p)
        return rt_fail(TILEC_ERROR_INTERNAL, "fake compiler: out of memory");
    tilec_status s = rt_read_file(path, &p->text, &p->len);
    if (s != TILEC_OK) {
        free(p);
        return s;
    }
    fake_kernel *k = NULL;
    char **section = NULL;
    for (char *line = p->text; *line;) {
        char *eol = strchr(line, '\n');
        size_t n = eol ? (size_t)(eol - line) : strlen(line);
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)n, line);
        if (buf[0] == '@') {
            section = NULL;
            if (!strncmp(buf, "@open_error ", 12)) {
                rt_fail(TILEC_ERROR_COMPILE, "%s:1:1: error: %s", path, buf + 12);
                fc_free_program(p);
                return TILEC_ERROR_COMPILE;
            } else if (!strncmp(buf, "@kernel ", 8) && p->nkernels < 32) {
                k = &p->kernels[p->nkernels++];
                snprintf(k->name, sizeof k->name, "%.63s", buf + 8);
            } else if (k && !strncmp(buf, "@default ", 9) && k->ngen < 16) {
                sscanf(buf + 9, "%63s %63s", k->gen[k->ngen][0], k->gen[k->ngen][1]);
                k->ngen++;
            } else if (k && !strcmp(buf, "@sig")) {
                section = &k->sig;
            } else if (k && !strcmp(buf, "@ptx")) {
                section = &k->ptx;
            } else if (k && !strncmp(buf, "@compile_error ", 15)) {
                k->compile_error = strdup(buf + 15);
            }
        } else if (section) {
            *section = fc_append(*section, line, n);
        }
        line = eol ? eol + 1 : line + n;
    }
    *out = p;
    return TILEC_OK;
}

static void fc_close(void *self, void *program)
{
    fc_free_program(program);
}

static uint64_t fc_program_hash(void *self, void *program)
{
    const fake_program *p = program;
    uint64_t h = 1469598103934665603ull; /* FNV-1a: independent of the runtime's hash */
    for (size_t i = 0; i < p->len; i++)
        h = (h ^ (unsigned char)p->text[i]) * 1099511628211ull;
    return h;
}

/* Replaces $NAME by its value; $ARCH by the target. */
static char *fc_substitute(const char *in, const fake_kernel *k, char vals[16][64], const char *arch)
{
    size_t cap = strlen(in) * 2 + 256, len = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    for (const char *p = in; *p;) {
        const char *val = NULL;
        size_t skip = 1;
        if (*p == '$') {
            size_t n = 1;
            while ((p[n] >= 'a' && p[n] <= 'z') || (p[n] >= 'A' && p[n] <= 'Z') || (p[n] >= '0' && p[n] <= '9') ||
                   p[n] == '_')
                n++;
            if (n == 5 && !strncmp(p + 1, "ARCH", 4))
                val = arch;
            for (int i = 0; i < k->ngen && !val; i++)
                if (strlen(k->gen[i][0]) == n - 1 && !strncmp(p + 1, k->gen[i][0], n - 1))
                    val = vals[i];
            if (val)
                skip = n;
        }
        size_t add = val ? strlen(val) : 1;
        if (len + add + 1 > cap) {
            cap = 2 * (len + add + 1);
            char *grown = realloc(out, cap);
            if (!grown) {
                free(out);
                return NULL;
            }
            out = grown;
        }
        memcpy(out + len, val ? val : p, add);
        len += add;
        p += skip;
    }
    out[len] = 0;
    return out;
}

static const char *fc_ptx_type(const char *dtype)
{
    static const char *const map[][2] = {
        {"bool", "u8"},  {"i8", "s8"},   {"i16", "s16"},  {"i32", "s32"}, {"i64", "s64"}, {"u8", "u8"},
        {"u16", "u16"},  {"u32", "u32"}, {"u64", "u64"},  {"f16", "b16"}, {"bf16", "b16"}, {"f32", "f32"},
        {"f64", "f64"},  {"e4m3", "b8"}, {"e5m2", "b8"},  {"e2m1", "b8"}, {"ue8m0", "b8"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(map[i][0], dtype))
            return map[i][1];
    return "b8";
}

/* The ABI as compiler.h states it: tensor -> u64 pointer, RANK s32 extents, RANK s64 strides;
 * list -> its pointers (.param .align 8 .b8 NAME[8 * MAX]), s32 length, extents, strides. */
static char *fc_ptx_from_sig(const char *sig)
{
    char entry[128] = "missing_entry";
    char params[64][256];
    int nparams = 0;
    memset(params, 0, sizeof params);
    const char *line = sig;
    while (*line) {
        char name[64], dtype[16];
        int idx, rank, align, max;
        if (sscanf(line, "entry %127s", entry) == 1) {
        } else if (sscanf(line, "list %d %63s %15s %d %d %d", &idx, name, dtype, &rank, &align, &max) == 6 && idx >= 0 &&
                   idx < 64) {
            int n = snprintf(params[idx], sizeof params[idx], ".param .align 8 .b8 %s[%d], .param .s32 %s_len", name,
                             8 * max, name);
            for (int a = 0; a < rank && n < 200; a++)
                n += snprintf(params[idx] + n, sizeof params[idx] - (size_t)n, ", .param .s32 %s_e%d", name, a);
            for (int a = 0; a < rank && n < 200; a++)
                n += snprintf(params[idx] + n, sizeof params[idx] - (size_t)n, ", .param .s64 %s_s%d", name, a);
            if (idx + 1 > nparams)
                nparams = idx + 1;
        } else if (sscanf(line, "tensor %d %63s %15s %d", &idx, name, dtype, &rank) == 4 && idx >= 0 && idx < 64) {
            int n = snprintf(params[idx], sizeof params[idx], ".param .u64 %s", name);
            for (int a = 0; a < rank && n < 200; a++)
                n += snprintf(params[idx] + n, sizeof params[idx] - (size_t)n, ", .param .s32 %s_e%d", name, a);
            for (int a = 0; a < rank && n < 200; a++)
                n += snprintf(params[idx] + n, sizeof params[idx] - (size_t)n, ", .param .s64 %s_s%d", name, a);
            if (idx + 1 > nparams)
                nparams = idx + 1;
        } else if (sscanf(line, "scalar %d %63s %15s", &idx, name, dtype) == 3 && idx >= 0 && idx < 64) {
            snprintf(params[idx], sizeof params[idx], ".param .%s %s", fc_ptx_type(dtype), name);
            if (idx + 1 > nparams)
                nparams = idx + 1;
        }
        const char *eol = strchr(line, '\n');
        line = eol ? eol + 1 : line + strlen(line);
    }
    size_t cap = 512 + 256 * (size_t)nparams;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    int n = snprintf(out, cap, "// fake PTX\n.version 8.7\n.target sm_90a\n.address_size 64\n.visible .entry %s(\n",
                     entry);
    for (int i = 0; i < nparams; i++)
        n += snprintf(out + n, cap - (size_t)n, "    %s%s\n", params[i], i + 1 < nparams ? "," : "");
    snprintf(out + n, cap - (size_t)n, ")\n{\n    ret;\n}\n");
    return out;
}

static void fc_log_compile(const char *kernel, const char *const *generics, int n)
{
    fake_compile_count++;
    const char *path = getenv("TILEC_FAKE_COMPILE_LOG");
    if (path && *path) {
        char line[1024];
        int len = snprintf(line, sizeof line, "%s<", kernel);
        for (int i = 0; i < n && len < 900; i++)
            len += snprintf(line + len, sizeof line - (size_t)len, "%s%s", i ? "," : "", generics[i]);
        len += snprintf(line + len, sizeof line - (size_t)len, ">\n");
        int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0) {
            if (write(fd, line, (size_t)len) != len)
                fprintf(stderr, "fake compiler: short write to %s\n", path);
            close(fd);
        }
    }
    const char *delay = getenv("TILEC_FAKE_COMPILE_DELAY_MS");
    if (delay && atoi(delay) > 0) {
        long ms = atol(delay);
        struct timespec ts = {ms / 1000, ms % 1000 * 1000000L}; /* tv_nsec must stay below 1 s */
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
}

static tilec_status fc_compile(void *self, void *program, const char *kernel, const char *const *generics, int n,
                               const tilec_target *target, rt_compiled *out)
{
    fake_program *p = program;
    fake_kernel *k = NULL;
    for (int i = 0; i < p->nkernels; i++)
        if (!strcmp(p->kernels[i].name, kernel))
            k = &p->kernels[i];
    if (!k)
        return rt_fail(TILEC_ERROR_NOT_FOUND, "no kernel named '%s'", kernel);
    if (k->compile_error)
        return rt_fail(TILEC_ERROR_COMPILE, "kernels.fake:3:7: error: %s", k->compile_error);
    char vals[16][64];
    for (int i = 0; i < k->ngen; i++)
        memcpy(vals[i], k->gen[i][1], 64);
    for (int g = 0; g < n; g++) {
        const char *eq = strchr(generics[g], '=');
        int found = 0;
        for (int i = 0; i < k->ngen && eq; i++)
            if (strlen(k->gen[i][0]) == (size_t)(eq - generics[g]) && !strncmp(generics[g], k->gen[i][0], (size_t)(eq - generics[g]))) {
                snprintf(vals[i], sizeof vals[i], "%s", eq + 1);
                found = 1;
            }
        if (!found)
            return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "kernel '%s' has no generic parameter '%s'", kernel,
                           generics[g]);
    }
    fc_log_compile(kernel, generics, n);
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%da", target->sm);
    char *sig = fc_substitute(k->sig ? k->sig : "", k, vals, arch);
    char *ptx = NULL;
    if (sig)
        ptx = k->ptx ? fc_substitute(k->ptx, k, vals, arch) : fc_ptx_from_sig(sig);
    if (!sig || !ptx) {
        free(sig);
        free(ptx);
        return rt_fail(TILEC_ERROR_INTERNAL, "fake compiler: out of memory");
    }
    out->signature = sig;
    out->ptx = ptx;
    out->ptx_size = strlen(ptx);
    out->handle = NULL;
    return TILEC_OK;
}

static void fc_release(void *self, rt_compiled *out)
{
    free((char *)out->signature);
    free((char *)out->ptx);
}

static const rt_compiler fc_table = {NULL, fc_version, fc_open, fc_close, fc_program_hash, fc_compile, fc_release,
                                     NULL, NULL};

const rt_compiler *fake_compiler(void)
{
    return &fc_table;
}
