/* cuda_tools.c — the host side of compiling: finding the CUDA toolkit's programs, running them
 * (ptxas on one specialisation's PTX; nvlink and fatbinary for `tilec build`), the private
 * temporary directories their files go through, and the phase timer. */
#include "cuda_tools.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the toolkit ---- */
/* TILEC_CUDA_HOME, when set, is the only place looked at: a test (or a user) that names a
 * toolkit must get that one, not whichever another variable or /usr/local/cuda happens to hold. */
bool tool_find(const char *name, char *path, size_t size)
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

void tool_places(StrBuf *out)
{
    const char *only = getenv("TILEC_CUDA_HOME"), *home = getenv("CUDA_HOME");
    if (only && *only)
        sb_printf(out, "'%s/bin' (TILEC_CUDA_HOME)", only);
    else if (home && *home)
        sb_printf(out, "'%s/bin' (CUDA_HOME) or '/usr/local/cuda/bin'", home);
    else
        sb_puts(out, "'/usr/local/cuda/bin'");
}

/* ---- temporary files ---- */
const char *tool_temp_base(void)
{
    const char *base = getenv("TMPDIR");
    return base && *base ? base : "/tmp";
}

char *tool_temp_dir(const char *what)
{
    const char *base = tool_temp_base();
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

char *tool_write_file(const char *dir, const char *name, const void *data, size_t n)
{
    size_t len = strlen(dir) + strlen(name) + 2;
    char *path = tl_xmalloc(len);
    snprintf(path, len, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    bool ok = fd >= 0 && write_all(fd, data, n);
    int err = ok ? 0 : errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (ok)
        return path;
    unlink(path);
    free(path);
    errno = err;
    return NULL;
}

char *tool_read_file(const char *path, size_t *n)
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

/* ---- running a program ---- */
int tool_run(char *const argv[], StrBuf *out)
{
    int pipefd[2];
    if (out && pipe(pipefd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        if (out) {
            close(pipefd[0]);
            close(pipefd[1]);
        }
        return -1;
    }
    if (pid == 0) {
        if (out) {
            dup2(pipefd[1], 1);
            dup2(pipefd[1], 2);
            close(pipefd[0]);
            close(pipefd[1]);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    if (out) {
        close(pipefd[1]);
        char buf[4096];
        ssize_t n;
        while ((n = read(pipefd[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
            if (n > 0)
                sb_append(out, buf, (size_t)n);
        close(pipefd[0]);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

bool tool_ptxas(DiagEngine *d, const char *ptx, size_t n, int sm, int opt_level, bool relocatable, char **cubin,
                size_t *cubin_size, StrBuf *info)
{
    char ptxas[4096];
    if (!tool_find("ptxas", ptxas, sizeof ptxas)) {
        StrBuf where = {0};
        tool_places(&where);
        diag_error(d, loc_none(), "ptxas not found in %s; install the CUDA 13 toolkit or set TILEC_CUDA_HOME", where.data);
        sb_free(&where);
        return false;
    }
    char *dir = tool_temp_dir("ptxas");
    if (!dir) {
        diag_error(d, loc_none(), "cannot create a temporary directory in '%s': %s", tool_temp_base(), strerror(errno));
        return false;
    }
    char *in = tool_write_file(dir, "k.ptx", ptx, n);
    if (!in) {
        diag_error(d, loc_none(), "cannot write a temporary PTX file in '%s': %s", tool_temp_base(), strerror(errno));
        rmdir(dir);
        free(dir);
        return false;
    }
    size_t plen = strlen(dir) + 16;
    char *outp = tl_xmalloc(plen);
    snprintf(outp, plen, "%s/k.cubin", dir);
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
    int rc = tool_run(argv, &log);
    bool ok;
    if (rc != 0) {
        while (log.len && (log.data[log.len - 1] == '\n' || log.data[log.len - 1] == ' '))
            log.data[--log.len] = 0; /* the diagnostic ends the line itself */
        diag_error(d, loc_none(), "ptxas failed (exit %d):\n%s", rc, log.len ? log.data : "(it printed nothing)");
        ok = false;
    } else {
        *cubin = tool_read_file(outp, cubin_size);
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

/* ---- timing ---- */
double tool_ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void tool_phase(const char *name, double *t)
{
    static int on = -1;
    if (on < 0)
        on = getenv("TILEC_TIMING") != NULL;
    double n = tool_ms_now();
    if (on)
        fprintf(stderr, "tilec: %-12s %7.2f ms\n", name, n - *t);
    *t = n;
}
