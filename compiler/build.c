/* build.c — `tilec build`: every specialisation a program declares, for every requested
 * architecture, compiled in parallel (each worker parses the sources itself: a compilation is
 * single-threaded), assembled by ptxas into relocatable objects, linked per architecture by
 * nvlink, and packed into one fatbin with a manifest of what it holds. */
#include "compile.h"
#include "driver.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>


typedef struct Job {
    int kernel_index;      /* index among the program's kernels (stable across workers) */
    GenericArgs args;
    int sm;
    /* results */
    char *obj;             /* relocatable cubin */
    size_t obj_size;
    char *signature;
    char *key;
    int regs, spills, stack;
    char *diags;
    bool ok;
} Job;

typedef struct Build {
    const DriverOptions *o;
    const char *file;
    Job *jobs;
    int njobs;
    int next;
    int done;
    bool tty;
    pthread_mutex_t mu;
} Build;

static bool load_program(Compilation *c, const DriverOptions *o, const char *file)
{
    comp_init(c);
    c->include_dirs = o->include_dirs;
    c->ninclude = o->ninclude;
    c->defines = o->defines;
    c->ndefines = o->ndefines;
    return comp_load_file(c, file) && comp_resolve(c);
}

static Item *kernel_by_index(Compilation *c, int idx)
{
    int n = 0;
    for (int m = 0; m < c->nmodules; m++)
        for (int i = 0; i < c->modules[m]->nitems; i++)
            if (c->modules[m]->items[i]->kind == IT_KERNEL && n++ == idx)
                return c->modules[m]->items[i];
    return NULL;
}

static int kernel_index(Compilation *c, Item *k)
{
    int n = 0;
    for (int m = 0; m < c->nmodules; m++)
        for (int i = 0; i < c->modules[m]->nitems; i++)
            if (c->modules[m]->items[i]->kind == IT_KERNEL) {
                if (c->modules[m]->items[i] == k)
                    return n;
                n++;
            }
    return -1;
}

static int parse_int_after(const char *s, const char *key)
{
    const char *p = strstr(s, key);
    if (!p)
        return 0;
    while (p > s && p[-1] == ' ')
        p--;
    while (p > s && (p[-1] >= '0' && p[-1] <= '9'))
        p--;
    return atoi(p);
}

static void *worker(void *arg)
{
    Build *B = arg;
    Compilation c;
    bool loaded = load_program(&c, B->o, B->file);
    for (;;) {
        pthread_mutex_lock(&B->mu);
        int i = B->next < B->njobs ? B->next++ : -1;
        pthread_mutex_unlock(&B->mu);
        if (i < 0)
            break;
        Job *j = &B->jobs[i];
        if (loaded) {
            Item *k = kernel_by_index(&c, j->kernel_index);
            CompileRequest rq = {0};
            rq.kernel = k;
            rq.args = j->args;
            rq.sm = j->sm;
            rq.opt_level = B->o->opt_level;
            rq.stage = STAGE_PTX;
            CompileResult res;
            int errs = c.diag.nerrors;
            if (k && compile_specialization(&c, &rq, &res)) {
                StrBuf info = {0};
                if (run_ptxas(&c.diag, res.text, res.size, j->sm, B->o->opt_level, true, &j->obj, &j->obj_size, &info)) {
                    const char *s = info.data ? info.data : "";
                    j->regs = parse_int_after(s, " registers");
                    j->spills = parse_int_after(s, " bytes spill stores");
                    j->stack = parse_int_after(s, " bytes stack frame");
                    j->ok = true;
                }
                sb_free(&info);
                j->signature = res.signature;
                res.signature = NULL;
                compile_result_free(&res);
            }
            StrBuf key = {0};
            if (k) {
                sb_printf(&key, "%s<", k->name.s);
                sema_format_generic_args(&key, k, &j->args);
                sb_printf(&key, "> sm_%da", j->sm);
            }
            j->key = sb_take(&key);
            if (c.diag.nerrors > errs || !j->ok) {
                j->diags = c.diag.out.data ? strdup(c.diag.out.data) : strdup("");
                j->ok = false;
            }
            c.diag.out.len = 0;
            if (c.diag.out.data)
                c.diag.out.data[0] = 0;
            c.diag.nerrors = 0;
            c.diag.capped = false;
        }
        pthread_mutex_lock(&B->mu);
        B->done++;
        if (B->tty) {
            fprintf(stderr, "\r[%d/%d] %-70.70s", B->done, B->njobs, j->key ? j->key : "");
            fflush(stderr);
        }
        pthread_mutex_unlock(&B->mu);
    }
    comp_free(&c);
    return NULL;
}

static char *tmp_write(const char *dir, const char *name, const void *data, size_t n)
{
    char *path = tl_xmalloc(strlen(dir) + strlen(name) + 2);
    sprintf(path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(data, 1, n, f) == n;
    if (f)
        ok = fclose(f) == 0 && ok;
    if (!ok) {
        fprintf(stderr, "tilec: error: cannot write '%s'\n", path);
        unlink(path);
        free(path);
        return NULL;
    }
    return path;
}

static int run_tool(char **argv)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int driver_build(const DriverOptions *o, const char *file)
{
    if (!o->output) {
        fprintf(stderr, "tilec: error: build needs -o FILE (the fatbin to write)\n");
        return 1;
    }
    int sms[4], nsm = 0;
    char archs[128];
    snprintf(archs, sizeof archs, "%s", o->arch);
    for (char *tok = strtok(archs, ","); tok; tok = strtok(NULL, ",")) {
        int sm = driver_parse_arch(tok);
        if (!sm) {
            fprintf(stderr, "tilec: error: unknown architecture '%s' (sm_90a, sm_100a)\n", tok);
            return 1;
        }
        bool seen = false; /* an architecture named twice is built once */
        for (int a = 0; a < nsm; a++)
            seen |= sms[a] == sm;
        if (!seen && nsm < 4)
            sms[nsm++] = sm;
    }
    char nvlink[4096], fatbinary[4096], ptxas[4096];
    if (!cuda_tool("nvlink", nvlink, sizeof nvlink) || !cuda_tool("fatbinary", fatbinary, sizeof fatbinary) ||
        !cuda_tool("ptxas", ptxas, sizeof ptxas)) {
        StrBuf where = {0};
        cuda_tool_places(&where);
        fprintf(stderr, "tilec: error: build needs ptxas, nvlink and fatbinary of the CUDA 13 toolkit; they are not all in %s\n",
                where.data);
        sb_free(&where);
        return 1;
    }
    /* the jobs: every declared specialisation x every architecture */
    Compilation c;
    if (!load_program(&c, o, file)) {
        fwrite(c.diag.out.data ? c.diag.out.data : "", 1, c.diag.out.len, stderr);
        int rc = c.diag.ice ? 2 : 1;
        comp_free(&c);
        return rc;
    }
    Build B = {0};
    B.o = o;
    B.file = file;
    pthread_mutex_init(&B.mu, NULL);
    GenericArgs *tmp = tl_xmalloc(sizeof(GenericArgs) * TL_MAX_SPECIALIZATIONS);
    int cap = 0;
    for (int m = 0; m < c.nmodules; m++)
        for (int i = 0; i < c.modules[m]->nitems; i++) {
            Item *it = c.modules[m]->items[i];
            if (it->kind != IT_SPECIALIZE)
                continue;
            Item *k = NULL;
            int n = sema_expand_specialize(&c, it, &k, tmp, TL_MAX_SPECIALIZATIONS);
            for (int s = 0; s < n; s++)
                for (int a = 0; a < nsm; a++) {
                    if (B.njobs == cap) {
                        cap = cap ? cap * 2 : 64;
                        B.jobs = tl_xrealloc(B.jobs, sizeof(Job) * (size_t)cap);
                    }
                    Job *j = &B.jobs[B.njobs++];
                    memset(j, 0, sizeof *j);
                    j->kernel_index = kernel_index(&c, k);
                    j->args = tmp[s];
                    j->sm = sms[a];
                }
        }
    free(tmp);
    if (diag_has_errors(&c.diag)) {
        fwrite(c.diag.out.data, 1, c.diag.out.len, stderr);
        comp_free(&c);
        free(B.jobs);
        return 1;
    }
    comp_free(&c);
    if (B.njobs == 0) {
        fprintf(stderr, "tilec: error: '%s' declares no specialisations (add 'specialize' declarations)\n", file);
        return 1;
    }
    /* the temporary directory first: a build that cannot finish should fail before compiling */
    char *dir = temp_dir_create("build");
    if (!dir) {
        fprintf(stderr, "tilec: error: cannot create a temporary directory in '%s': %s\n", temp_dir_base(), strerror(errno));
        free(B.jobs);
        pthread_mutex_destroy(&B.mu);
        return 1;
    }
    B.tty = isatty(2);
    int nthreads = o->jobs < B.njobs ? o->jobs : B.njobs;
    pthread_t th[256];
    for (int i = 0; i < nthreads; i++)
        pthread_create(&th[i], NULL, worker, &B);
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    if (B.tty)
        fprintf(stderr, "\n");
    int failed = 0;
    for (int i = 0; i < B.njobs; i++)
        if (!B.jobs[i].ok) {
            failed++;
            fprintf(stderr, "tilec: error: %s failed\n%s", B.jobs[i].key ? B.jobs[i].key : "?", B.jobs[i].diags ? B.jobs[i].diags : "");
        }
    int rc = failed ? 1 : 0;
    /* link each architecture's objects, then the fatbin */
    char *cubins[4] = {0};
    for (int a = 0; !rc && a < nsm; a++) {
        char **argv = tl_xcalloc((size_t)B.njobs + 8, sizeof(char *));
        int n = 0;
        char archarg[32], name[64];
        snprintf(archarg, sizeof archarg, "-arch=sm_%da", sms[a]);
        snprintf(name, sizeof name, "sm_%da.cubin", sms[a]);
        cubins[a] = tl_xmalloc(strlen(dir) + strlen(name) + 2);
        sprintf(cubins[a], "%s/%s", dir, name);
        argv[n++] = nvlink;
        argv[n++] = archarg;
        argv[n++] = "-o";
        argv[n++] = cubins[a];
        for (int i = 0; i < B.njobs; i++) {
            if (B.jobs[i].sm != sms[a])
                continue;
            snprintf(name, sizeof name, "k%d.o", i);
            char *p = tmp_write(dir, name, B.jobs[i].obj, B.jobs[i].obj_size);
            if (!p) {
                rc = 1;
                break;
            }
            argv[n++] = p;
        }
        if (!rc && run_tool(argv) != 0) {
            fprintf(stderr, "tilec: error: nvlink failed for sm_%da\n", sms[a]);
            rc = 1;
        }
        for (int i = 4; i < n; i++) {
            unlink(argv[i]);
            free(argv[i]);
        }
        free(argv);
    }
    if (!rc) {
        char *argv[16];
        int n = 0;
        char create[4200], img[4][4200];
        snprintf(create, sizeof create, "--create=%s", o->output);
        argv[n++] = fatbinary;
        argv[n++] = create;
        argv[n++] = "-64";
        for (int a = 0; a < nsm; a++) {
            snprintf(img[a], sizeof img[a], "--image3=kind=elf,sm=%da,file=%s", sms[a], cubins[a]);
            argv[n++] = img[a];
        }
        argv[n] = NULL;
        if (run_tool(argv) != 0) {
            fprintf(stderr, "tilec: error: fatbinary failed\n");
            rc = 1;
        }
    }
    for (int a = 0; a < nsm; a++) {
        if (cubins[a])
            unlink(cubins[a]);
        free(cubins[a]);
    }
    rmdir(dir);
    free(dir);
    /* the manifest: what the fatbin holds */
    if (!rc) {
        char mpath[4200];
        snprintf(mpath, sizeof mpath, "%s.manifest", o->output);
        FILE *f = fopen(mpath, "w");
        if (!f) {
            fprintf(stderr, "tilec: error: cannot write '%s'\n", mpath);
            rc = 1;
        } else {
            fprintf(f, "tilec-manifest 1\ncompiler %s\n# %d specialisations\n", TILEC_VERSION, B.njobs);
            int spills = 0;
            for (int i = 0; i < B.njobs; i++) {
                Job *j = &B.jobs[i];
                fprintf(f, "\n# specialisation %d: %d registers, %d bytes spilled, %d bytes of stack\n%s", i, j->regs, j->spills,
                        j->stack, j->signature ? j->signature : "");
                if (j->spills || j->stack)
                    spills++;
            }
            fclose(f);
            fprintf(stderr, "tilec: built %d specialisations for %s into %s (%d with spills or a stack frame)\n", B.njobs, o->arch,
                    o->output, spills);
        }
    }
    for (int i = 0; i < B.njobs; i++) {
        free(B.jobs[i].obj);
        free(B.jobs[i].signature);
        free(B.jobs[i].key);
        free(B.jobs[i].diags);
    }
    free(B.jobs);
    pthread_mutex_destroy(&B.mu);
    return rc;
}
