/* fuzz_kernels.c — libFuzzer target over the whole compiler, from token-level mutations of the
 * shipped kernels (the .tl files of kernels/ and dsl/): each input is checked as `tilec check`
 * does (every kernel and fn generically, a sample of the declared specialisations through the
 * tile IR passes), and a few specialisations go on through LLVM to PTX (sm_90a, sm_100a) or to a
 * host object for the CPU emulator. The input is named as a file of kernels/, so that its imports
 * find dsl/.
 *
 * A crash, a sanitizer report, a leak, an internal compiler error, and a compilation that fails
 * without a diagnostic are bugs (abort()); so is an input slower than libFuzzer's -timeout.
 *
 * The mutator (LLVMFuzzerCustomMutator) works on tokens: it deletes, duplicates, swaps and moves
 * runs of tokens, replaces a token by another of the language (keywords, element types,
 * operators, builtins) or by a name of the input, and changes numbers to boundary values; now
 * and then it leaves the bytes to libFuzzer's own mutator. */
#include "compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

#ifndef TILEC_SOURCE_DIR
#define TILEC_SOURCE_DIR "."
#endif

/* per input: specialisations through the tile IR passes, and through LLVM */
enum { MAX_INSTANCES = 64, MAX_LOWERED = 12, MAX_CODEGEN = 2 };

/* ---------------------------------------------------------------- one input */
static uint64_t hash_input(const uint8_t *d, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ d[i]) * 1099511628211ull;
    return h;
}

/* a failure must have said why */
static void expect_reason(Compilation *c, bool ok, int errs_before, const char *what)
{
    if (c->diag.ice) {
        fwrite(c->diag.out.data, 1, c->diag.out.len, stderr);
        fprintf(stderr, "fuzz_kernels: internal compiler error (%s)\n", what);
        abort();
    }
    if (!ok && c->diag.nerrors == errs_before) {
        fwrite(c->diag.out.data, 1, c->diag.out.len, stderr);
        fprintf(stderr, "fuzz_kernels: %s failed without a diagnostic\n", what);
        abort();
    }
}

static void compile_one(Compilation *c, Item *k, const GenericArgs *args, CompileStage stage, int sm, bool host)
{
    CompileRequest rq = {.kernel = k, .args = *args, .sm = sm, .opt_level = 3, .stage = stage, .host = host};
    CompileResult r;
    int errs = c->diag.nerrors;
    bool ok = compile_specialization(c, &rq, &r);
    expect_reason(c, ok, errs, stage == STAGE_TIR ? "lowering" : host ? "host code generation" : "PTX code generation");
    if (ok && stage == STAGE_PTX && (!r.text || !r.size)) {
        fprintf(stderr, "fuzz_kernels: code generation succeeded with no output\n");
        abort();
    }
    compile_result_free(&r);
    /* diagnostics of earlier specialisations are not needed any more; keep memory flat */
    c->diag.out.len = 0;
}

static bool has_optional_param(const Item *k)
{
    for (int p = 0; p < k->nparams; p++)
        if (k->params[p].ty->kind == TE_TENSOR && k->params[p].ty->optional)
            return true;
    return false;
}

static void check_program(Compilation *c, uint64_t h)
{
    GenericArgs *args = malloc(sizeof(GenericArgs) * MAX_INSTANCES);
    int lowered = 0, generated = 0;
    for (int i = 0; i < c->nitems; i++) {
        Item *it = c->items[i];
        int errs = c->diag.nerrors;
        if (it->kind == IT_KERNEL) {
            expect_reason(c, sema_kernel(c, it, NULL), errs, "the generic check of a kernel");
            GenericArgs none;
            if (it->ngenerics == 0 && !has_optional_param(it) && lowered < MAX_LOWERED &&
                sema_generic_args_from_strings(c, it, NULL, 0, &none)) {
                lowered++;
                compile_one(c, it, &none, STAGE_TIR, 90, false);
            }
        } else if (it->kind == IT_FN) {
            expect_reason(c, sema_fn_generic(c, it), errs, "the check of a fn");
        } else if (it->kind == IT_SPECIALIZE && lowered < MAX_LOWERED) {
            Item *k = NULL;
            int n = sema_expand_specialize(c, it, &k, args, MAX_INSTANCES);
            expect_reason(c, n >= 0, errs, "a specialize declaration");
            if (n <= 0)
                continue;
            /* one instance of each declaration, chosen by the input; now and then through LLVM */
            uint64_t pick = h ^ (uint64_t)i * 0x9E3779B97F4A7C15ull;
            const GenericArgs *a = &args[pick % (uint64_t)n];
            lowered++;
            if (generated < MAX_CODEGEN && (pick >> 20) % 3 == 0) {
                generated++;
                bool host = (pick >> 24) % 4 == 0;
                compile_one(c, k, a, STAGE_PTX, (pick >> 28) % 2 ? 100 : 90, host);
            } else {
                compile_one(c, k, a, STAGE_TIR, (pick >> 28) % 2 ? 100 : 90, false);
            }
        }
    }
    free(args);
    if (getenv("TILEC_FUZZ_VERBOSE"))
        fprintf(stderr, "fuzz_kernels: %d specialisations lowered, %d through LLVM\n", lowered, generated);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a NUL ends the text as comp_load_string sees it; keep the input as one C string */
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    static const char *incs[] = {TILEC_SOURCE_DIR};
    Compilation c;
    comp_init(&c);
    c.include_dirs = incs;
    c.ninclude = 1;
    int errs = c.diag.nerrors;
    bool ok = comp_load_string(&c, TILEC_SOURCE_DIR "/kernels/fuzz_input.tl", text);
    expect_reason(&c, ok, errs, "loading");
    if (ok) {
        errs = c.diag.nerrors;
        bool resolved = comp_resolve(&c);
        expect_reason(&c, resolved, errs, "resolving");
        if (resolved)
            check_program(&c, hash_input(data, size));
    }
    comp_free(&c);
    free(text);
    return 0;
}

/* ---------------------------------------------------------------- the token mutator */
typedef struct Tok {
    uint32_t off, len; /* of the token in the input */
    uint32_t sep;      /* start of the text (blanks, comments) before it */
} Tok;

static bool is_id0(int c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
static bool is_id(int c) { return is_id0(c) || (c >= '0' && c <= '9'); }

/* The tokens of s as the lexer sees them, roughly: names, numbers (with exponents), strings,
 * operators (the longest of the language's), anything else one byte. Blanks and comments go
 * with the token after them. */
static int tokenize(const char *s, size_t n, Tok *out, int cap)
{
    static const char *const ops[] = {"<<=", ">>=", "::", "..", "->", "==", "!=", "<=", ">=", "&&", "||", "<<", ">>",
                                      "+=",  "-=",  "*=", "/=", "%=", "&=", "|=", "^=", NULL};
    int nt = 0;
    size_t i = 0;
    while (i < n && nt < cap) {
        size_t sep = i;
        for (;;) {
            while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\f' || s[i] == '\v'))
                i++;
            if (i + 1 < n && s[i] == '/' && s[i + 1] == '/') {
                while (i < n && s[i] != '\n')
                    i++;
            } else if (i + 1 < n && s[i] == '/' && s[i + 1] == '*') {
                const char *e = NULL;
                for (size_t j = i + 2; j + 1 < n; j++)
                    if (s[j] == '*' && s[j + 1] == '/') {
                        e = s + j;
                        break;
                    }
                i = e ? (size_t)(e - s) + 2 : n;
            } else {
                break;
            }
        }
        if (i >= n)
            break;
        size_t b = i;
        unsigned char c = (unsigned char)s[i];
        if (is_id0(c)) {
            while (i < n && is_id((unsigned char)s[i]))
                i++;
        } else if (c >= '0' && c <= '9') {
            bool hex = i + 1 < n && s[i] == '0' && (s[i + 1] | 0x20) == 'x';
            char exp = hex ? 'p' : 'e';
            for (i++; i < n; i++) {
                if (s[i] == '.' && i + 1 < n && s[i + 1] == '.')
                    break; /* 0 .. N */
                bool sign = (s[i] == '+' || s[i] == '-') && (s[i - 1] | 0x20) == exp;
                if (!is_id((unsigned char)s[i]) && s[i] != '.' && !sign)
                    break;
            }
        } else if (c == '"') {
            i++;
            while (i < n && s[i] != '"' && s[i] != '\n')
                i += s[i] == '\\' && i + 1 < n ? 2 : 1;
            if (i < n && s[i] == '"')
                i++;
        } else {
            i++;
            for (int k = 0; ops[k]; k++) {
                size_t l = strlen(ops[k]);
                if (b + l <= n && !memcmp(s + b, ops[k], l)) {
                    i = b + l;
                    break;
                }
            }
        }
        out[nt].sep = (uint32_t)sep;
        out[nt].off = (uint32_t)b;
        out[nt].len = (uint32_t)(i - b);
        nt++;
    }
    return nt;
}

/* the language's tokens: keywords, element types, operators and punctuation, builtins */
static const char *const lang_tokens[] = {
    "import", "const", "fn", "kernel", "specialize", "let", "var", "shared", "frag", "local", "if", "else", "for",
    "in", "unroll", "pipelined", "while", "parallel", "return", "break", "continue", "require", "grid", "threads",
    "cluster", "cooperative", "pdl", "blocks_per_sm", "layout", "strides", "step", "true", "false", "int", "float",
    "type", "bitcast", "convert", "view", "stages", "vec", "threads_per_row", "row_run", "dim", "clear", "other",
    "split", "exclusive", "group", "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16",
    "f32", "f64", "e4m3", "e5m2", "e2m1", "ue8m0", "+", "-", "*", "/", "%", "&", "|", "^", "~", "!", "<<", ">>",
    "==", "!=", "<", "<=", ">", ">=", "&&", "||", "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=",
    ">>=", "(", ")", "[", "]", "{", "}", ",", ";", ":", "::", ".", "..", "->", "?", "_", ".T", "thread", "block",
    "x", "y", "z", "lane", "warp", "inf", "num_sms", "\"x.tl\"", "\"%d %f\\n\"", "\"%lld\"", NULL};
static const char *const boundary_numbers[] = {
    "0", "1", "2", "3", "4", "5", "7", "8", "15", "16", "17", "31", "32", "33", "63", "64", "65", "127", "128",
    "255", "256", "257", "511", "512", "1023", "1024", "1025", "2047", "2048", "4095", "4096", "4097", "8192",
    "16384", "32768", "65535", "65536", "1048576", "1048577", "2147483647", "2147483648", "4294967295",
    "4294967296", "9223372036854775807", "0x7FFFFFFF", "0xFFFFFFFF", "0x8000000000000000", "0b1", "0.0", "0.5",
    "1.0", "-1", "1e38", "3.5e38", "1e39", "1e-45", "1e-6", "448.0", "464.0", "57344.0", "6.0", "7.0", "65504.0",
    "65520.0", "0x1p-149", "0x1.fffffep127", "1e308", "0.1", NULL};

static int count(const char *const *v)
{
    int n = 0;
    while (v[n])
        n++;
    return n;
}

/* a piece of the new text: bytes of the input, or a string of ours */
typedef struct Piece {
    const char *p;
    size_t n;
} Piece;

static uint32_t rnd(uint64_t *st)
{
    *st ^= *st << 13;
    *st ^= *st >> 7;
    *st ^= *st << 17;
    return (uint32_t)(*st >> 11);
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + 1;
    if (rnd(&st) % 16 == 0 || size == 0)
        return LLVMFuzzerMutate(data, size, max_size);
    const char *s = (const char *)data;
    int cap = (int)(size / 2 + 2);
    Tok *t = malloc(sizeof(Tok) * (size_t)cap);
    int nt = tokenize(s, size, t, cap);
    if (nt == 0) {
        free(t);
        return LLVMFuzzerMutate(data, size, max_size);
    }
    /* the new text as pieces: for each token, its separator and itself; edits change the list */
    int np = 2 * nt + 1;
    Piece *pc = malloc(sizeof(Piece) * (size_t)(np + 64));
    for (int i = 0; i < nt; i++) {
        pc[2 * i] = (Piece){s + t[i].sep, t[i].off - t[i].sep};
        pc[2 * i + 1] = (Piece){s + t[i].off, t[i].len};
    }
    uint32_t end = t[nt - 1].off + t[nt - 1].len;
    pc[2 * nt] = (Piece){s + end, size - end};
    int edits = 1 + (int)(rnd(&st) % 3);
    Piece *tmp = malloc(sizeof(Piece) * (size_t)(np + 64));
    for (int e = 0; e < edits && np + 16 < 2 * nt + 64; e++) {
        int ntok = (np - 1) / 2; /* tokens: pieces 1, 3, 5, ... */
        if (ntok == 0)
            break;
        int a = (int)(rnd(&st) % (uint32_t)ntok), len = 1 + (int)(rnd(&st) % 4);
        if (a + len > ntok)
            len = ntok - a;
        switch (rnd(&st) % 8) {
        case 0: /* delete a run */
            memmove(pc + 2 * a + 1, pc + 2 * (a + len) + 1, sizeof(Piece) * (size_t)(np - 2 * (a + len) - 1));
            np -= 2 * len;
            break;
        case 1: { /* duplicate a run after itself */
            int n = 2 * len;
            memcpy(tmp, pc + 2 * a + 1, sizeof(Piece) * (size_t)n);
            memmove(pc + 2 * a + 1 + n, pc + 2 * a + 1, sizeof(Piece) * (size_t)(np - 2 * a - 1));
            memcpy(pc + 2 * a + 1, tmp, sizeof(Piece) * (size_t)n);
            pc[2 * a + 1 + n - 1] = (Piece){" ", 1};
            np += n;
            break;
        }
        case 2: { /* swap two tokens */
            int b = (int)(rnd(&st) % (uint32_t)ntok);
            Piece x = pc[2 * a + 1];
            pc[2 * a + 1] = pc[2 * b + 1];
            pc[2 * b + 1] = x;
            break;
        }
        case 3:
        case 4: { /* a token of the language in place of one, or before it */
            const char *w = lang_tokens[rnd(&st) % (uint32_t)count(lang_tokens)];
            if (rnd(&st) % 2) {
                pc[2 * a + 1] = (Piece){w, strlen(w)};
            } else {
                memmove(pc + 2 * a + 3, pc + 2 * a + 1, sizeof(Piece) * (size_t)(np - 2 * a - 1));
                pc[2 * a + 1] = (Piece){w, strlen(w)};
                pc[2 * a + 2] = (Piece){" ", 1};
                np += 2;
            }
            break;
        }
        case 5: { /* a number: a boundary value */
            for (int k = 0; k < 64; k++) {
                int b = (int)(rnd(&st) % (uint32_t)ntok);
                Piece *p = &pc[2 * b + 1];
                if (p->n && p->p[0] >= '0' && p->p[0] <= '9') {
                    const char *w = boundary_numbers[rnd(&st) % (uint32_t)count(boundary_numbers)];
                    *p = (Piece){w, strlen(w)};
                    break;
                }
            }
            break;
        }
        case 6: { /* a name of the input in place of another */
            int from = -1;
            for (int k = 0; k < 64 && from < 0; k++) {
                int b = (int)(rnd(&st) % (uint32_t)ntok);
                if (pc[2 * b + 1].n && is_id0((unsigned char)pc[2 * b + 1].p[0]))
                    from = b;
            }
            for (int k = 0; k < 64 && from >= 0; k++) {
                int b = (int)(rnd(&st) % (uint32_t)ntok);
                if (pc[2 * b + 1].n && is_id0((unsigned char)pc[2 * b + 1].p[0])) {
                    pc[2 * b + 1] = pc[2 * from + 1];
                    break;
                }
            }
            break;
        }
        default: { /* move a run elsewhere */
            int n = 2 * len;
            memcpy(tmp, pc + 2 * a + 1, sizeof(Piece) * (size_t)n);
            memmove(pc + 2 * a + 1, pc + 2 * a + 1 + n, sizeof(Piece) * (size_t)(np - 2 * a - 1 - n));
            np -= n;
            int rest = (np - 1) / 2, b = rest ? (int)(rnd(&st) % (uint32_t)(rest + 1)) : 0;
            memmove(pc + 2 * b + 1 + n, pc + 2 * b + 1, sizeof(Piece) * (size_t)(np - 2 * b - 1));
            memcpy(pc + 2 * b + 1, tmp, sizeof(Piece) * (size_t)n);
            np += n;
            break;
        }
        }
    }
    /* write the pieces back (the input's own bytes are read from a copy) */
    char *copy = malloc(size);
    memcpy(copy, data, size);
    size_t out = 0;
    for (int i = 0; i < np; i++) {
        const char *p = pc[i].p;
        if (p >= s && p < s + size)
            p = copy + (p - s);
        size_t n = pc[i].n;
        if (out + n > max_size)
            n = max_size - out;
        memcpy(data + out, p, n);
        out += n;
    }
    free(copy);
    free(tmp);
    free(pc);
    free(t);
    return out;
}
