/* compile.c — the pipeline for one specialisation:
 *   sema(kernel, generics) -> lower_ast -> layout -> pipeline -> lower_tiles -> smem_plan -> LLVM -> PTX
 * with the IR verifier between passes, and the external steps that need the CUDA toolkit. */
#include "compile.h"

#include "codegen.h"
#include "emu_lower.h"
#include "signature.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static bool dump_wanted(const CompileRequest *rq, const char *pass)
{
    return rq->dump && rq->dump_after && (!strcmp(rq->dump_after, "all") || !strcmp(rq->dump_after, pass));
}

/* a pass, the verifier, the dump; false when this specialisation has errors (errs: the count
 * before it began, so that one failing specialisation does not stop the next) */
static bool run_pass(Compilation *c, const CompileRequest *rq, TKernel *k, const char *name, bool (*pass)(TKernel *),
                     int errs)
{
    if (pass && !pass(k))
        return false;
    if (!tir_verify(k, name))
        return false;
    if (dump_wanted(rq, name)) {
        sb_printf(rq->dump, "// ---- after %s ----\n", name);
        tir_print(rq->dump, k);
    }
    return c->diag.nerrors == errs;
}

static double ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* TILEC_TIMING=1 prints the time of each phase to stderr */
static void phase(const char *name, double *t)
{
    static int on = -1;
    if (on < 0)
        on = getenv("TILEC_TIMING") != NULL;
    double n = ms_now();
    if (on)
        fprintf(stderr, "tilec: %-12s %7.2f ms\n", name, n - *t);
    *t = n;
}

bool compile_specialization(Compilation *c, const CompileRequest *rq, CompileResult *out)
{
    memset(out, 0, sizeof *out);
    double t = ms_now();
    int errs = c->diag.nerrors;
    if (!sema_kernel(c, rq->kernel, &rq->args))
        return false;
    phase("sema", &t);
    TKernel *k;
    if (!lower_ast(c, rq->kernel, &rq->args, rq->sm, rq->host, &k))
        return false;
    if (!run_pass(c, rq, k, "lower_ast", NULL, errs) || !run_pass(c, rq, k, "layout", pass_layout, errs) ||
        !run_pass(c, rq, k, "pipeline", pass_pipeline, errs) || !run_pass(c, rq, k, "lower_tiles", pass_lower_tiles, errs) ||
        !run_pass(c, rq, k, "smem_plan", pass_smem_plan, errs))
        return false;
    phase("tir passes", &t);
    StrBuf sig = {0};
    if (!signature_write(&sig, k, &c->diag)) {
        sb_free(&sig);
        return false;
    }
    out->signature = sb_take(&sig);
    out->entry = strdup(k->entry);
    if (rq->stage == STAGE_TIR) {
        StrBuf text = {0};
        tir_print(&text, k);
        out->size = text.len;
        out->text = sb_take(&text);
        return true;
    }
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef m = cg_build_module(k, ctx);
    phase("llvm ir", &t);
    bool ok = false;
    if (m) {
        if (rq->host) { /* host target: the same module, lowered for the CPU emulator */
            out->text = emu_emit_host(k, m, rq->opt_level, rq->stage != STAGE_LLVM, &out->size);
        } else if (rq->stage == STAGE_LLVM) {
            out->text = cg_emit_llvm_text(k, m, rq->opt_level);
            if (out->text)
                out->size = strlen(out->text);
        } else {
            out->text = cg_emit_ptx(k, m, rq->opt_level, &out->size);
        }
        ok = out->text != NULL;
        phase("llvm->ptx", &t);
        LLVMDisposeModule(m);
    }
    LLVMContextDispose(ctx);
    if (!ok) {
        compile_result_free(out);
        return false;
    }
    return true;
}

void compile_result_free(CompileResult *r)
{
    free(r->text);
    free(r->signature);
    free(r->entry);
    memset(r, 0, sizeof *r);
}

/* ---- CUDA toolkit programs ---- */
/* TILEC_CUDA_HOME, when set, is the only place looked at: a test (or a user) that names a
 * toolkit must get that one, not whichever another variable or /usr/local/cuda happens to hold. */
bool cuda_tool(const char *name, char *path, size_t size)
{
    const char *only = getenv("TILEC_CUDA_HOME");
    const char *homes[] = {only, getenv("CUDA_HOME"), "/usr/local/cuda"};
    int n = only && *only ? 1 : 3;
    for (int i = 0; i < n; i++) {
        if (!homes[i] || !*homes[i])
            continue;
        if (snprintf(path, size, "%s/bin/%s", homes[i], name) >= (int)size)
            continue;
        if (access(path, X_OK) == 0)
            return true;
    }
    return false;
}

void cuda_tool_places(StrBuf *out)
{
    const char *only = getenv("TILEC_CUDA_HOME"), *home = getenv("CUDA_HOME");
    if (only && *only)
        sb_printf(out, "'%s/bin' (TILEC_CUDA_HOME)", only);
    else if (home && *home)
        sb_printf(out, "'%s/bin' (CUDA_HOME) or '/usr/local/cuda/bin'", home);
    else
        sb_puts(out, "'/usr/local/cuda/bin'");
}

const char *temp_dir_base(void)
{
    const char *base = getenv("TMPDIR");
    return base && *base ? base : "/tmp";
}

char *temp_dir_create(const char *what)
{
    const char *base = temp_dir_base();
    size_t n = strlen(base) + strlen(what) + 16;
    char *dir = tl_xmalloc(n);
    snprintf(dir, n, "%s/tilec-%s-XXXXXX", base, what);
    if (!mkdtemp(dir)) {
        int err = errno;
        free(dir);
        errno = err;
        return NULL;
    }
    return dir;
}

static bool write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        c += w;
        n -= (size_t)w;
    }
    return true;
}

static char *read_whole(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (sz < 0) {
        fclose(f);
        return NULL;
    }
    char *buf = tl_xmalloc((size_t)sz + 1);
    size_t got = fread(buf, 1, (size_t)sz, f);
    fclose(f);
    buf[got] = 0;
    *n = got;
    return buf;
}

/* Runs argv, capturing stdout+stderr into `out`. Returns the exit status (-1 if it could not run). */
static int run_capture(char *const argv[], StrBuf *out)
{
    int pipefd[2];
    if (pipe(pipefd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(pipefd[0]);
        close(pipefd[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(pipefd[1], 1);
        dup2(pipefd[1], 2);
        close(pipefd[0]);
        close(pipefd[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(pipefd[1]);
    char buf[4096];
    ssize_t n;
    while ((n = read(pipefd[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0 && out)
            sb_append(out, buf, (size_t)n);
    close(pipefd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

bool run_ptxas(DiagEngine *d, const char *ptx, size_t n, int sm, int opt_level, bool relocatable, char **cubin, size_t *cubin_size,
               StrBuf *info)
{
    char ptxas[4096];
    if (!cuda_tool("ptxas", ptxas, sizeof ptxas)) {
        StrBuf where = {0};
        cuda_tool_places(&where);
        diag_error(d, loc_none(), "ptxas not found in %s; install the CUDA 13 toolkit or set TILEC_CUDA_HOME", where.data);
        sb_free(&where);
        return false;
    }
    char *dir = temp_dir_create("ptxas");
    if (!dir) {
        diag_error(d, loc_none(), "cannot create a temporary directory in '%s': %s", temp_dir_base(), strerror(errno));
        return false;
    }
    size_t plen = strlen(dir) + 16;
    char *in = tl_xmalloc(plen), *outp = tl_xmalloc(plen);
    snprintf(in, plen, "%s/k.ptx", dir);
    snprintf(outp, plen, "%s/k.cubin", dir);
    int fd = open(in, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    bool ok = fd >= 0 && write_all(fd, ptx, n);
    int err = ok ? 0 : errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (!ok) {
        diag_error(d, loc_none(), "cannot write a temporary PTX file in '%s': %s", temp_dir_base(), strerror(err));
        unlink(in);
        rmdir(dir);
        free(in);
        free(outp);
        free(dir);
        return false;
    }
    char arch[32], opt[8];
    snprintf(arch, sizeof arch, "-arch=sm_%da", sm);
    snprintf(opt, sizeof opt, "-O%d", opt_level < 0 ? 0 : opt_level > 3 ? 3 : opt_level);
    char *argv[12];
    int a = 0;
    argv[a++] = ptxas;
    argv[a++] = arch;
    argv[a++] = opt;
    argv[a++] = "-v";
    if (relocatable)
        argv[a++] = "-c";
    argv[a++] = "-o";
    argv[a++] = outp;
    argv[a++] = in;
    argv[a] = NULL;
    StrBuf log = {0};
    int rc = run_capture(argv, &log);
    if (rc != 0) {
        while (log.len && (log.data[log.len - 1] == '\n' || log.data[log.len - 1] == ' '))
            log.data[--log.len] = 0; /* the diagnostic ends the line itself */
        diag_error(d, loc_none(), "ptxas failed (exit %d):\n%s", rc, log.len ? log.data : "(it printed nothing)");
        ok = false;
    } else {
        *cubin = read_whole(outp, cubin_size);
        ok = *cubin != NULL;
        if (!ok)
            diag_error(d, loc_none(), "ptxas produced no output");
        if (info && log.data)
            sb_append(info, log.data, log.len);
    }
    sb_free(&log);
    unlink(in);
    unlink(outp);
    rmdir(dir);
    free(in);
    free(outp);
    free(dir);
    return ok;
}

int driver_parse_arch(const char *a)
{
    if (!strcmp(a, "sm_90a") || !strcmp(a, "sm_90"))
        return 90;
    if (!strcmp(a, "sm_100a") || !strcmp(a, "sm_100"))
        return 100;
    return 0;
}
