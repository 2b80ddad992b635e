/* build.c — `tilec build`: every specialisation a program declares, for every requested
 * architecture, compiled in parallel (each worker parses the sources itself: a compilation is
 * single-threaded), assembled by ptxas into relocatable objects, linked per architecture by
 * nvlink, and packed into one fatbin with a manifest of what it holds. */
#include "compile.h"
#include "cuda_tools.h"
#include "driver.h"
#include "tilec_version.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct Job {
    int item;              /* the kernel's index in the compilation's items (the same in every worker) */
    GenericArgs args;
    int sm;
    /* results */
    char *obj;             /* relocatable cubin */
    size_t obj_size;
    char *signature;
    char *key;
    int regs, spills, stack;
    char *diags;           /* what compiling it printed: the errors, or the warnings of a job that worked */
    bool ok;
} Job;

typedef struct Build {
    const DriverOptions *o;
    const char *file;
    int sms[2], nsm;
    char nvlink[4096], fatbinary[4096];
    Job *jobs;
    int njobs;
    char *dir;             /* the private temporary directory */
    char *cubins[2];       /* per architecture: its objects linked by nvlink */
    char *fatbin;          /* what fatbinary packed, in the temporary directory, for the output */
    char *manifest;        /* the manifest's path: the output's, with .manifest added */
    /* the workers' queue */
    int next;
    int done;
    bool tty;
    pthread_mutex_t mu;
} Build;

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

/* ---- the steps of a build, in order; each returns the exit status so far (0: go on) ---- */

/* the programs of the CUDA toolkit, before anything is compiled */
static int find_tools(Build *B)
{
    char ptxas[4096];
    if (tool_find("nvlink", B->nvlink, sizeof B->nvlink) && tool_find("fatbinary", B->fatbinary, sizeof B->fatbinary) &&
        tool_find("ptxas", ptxas, sizeof ptxas))
        return 0;
    StrBuf where = {0};
    tool_places(&where);
    fprintf(stderr, "tilec: error: build needs ptxas, nvlink and fatbinary of the CUDA 13 toolkit; they are not all in %s\n",
            where.data);
    sb_free(&where);
    return 1;
}

/* the jobs: every declared specialisation x every architecture */
static int plan_jobs(Build *B)
{
    Compilation c;
    if (!driver_load(&c, B->o, B->file, true) || driver_output_is_source(&c, B->o->output) ||
        driver_output_is_source(&c, B->manifest)) {
        int rc = driver_flush(&c);
        comp_free(&c);
        return rc;
    }
    GenericArgs *tmp = tl_xmalloc(sizeof(GenericArgs) * TL_MAX_SPECIALIZATIONS);
    int cap = 0;
    for (int i = 0; i < c.nitems; i++) {
        Item *it = c.items[i];
        if (it->kind != IT_SPECIALIZE)
            continue;
        Item *k = NULL;
        int n = sema_expand_specialize(&c, it, &k, tmp, TL_MAX_SPECIALIZATIONS);
        int item = 0;
        while (n > 0 && c.items[item] != k)
            item++;
        for (int s = 0; s < n; s++)
            for (int a = 0; a < B->nsm; a++) {
                if (B->njobs == cap) {
                    cap = cap ? cap * 2 : 64;
                    B->jobs = tl_xrealloc(B->jobs, sizeof(Job) * (size_t)cap);
                }
                Job *j = &B->jobs[B->njobs++];
                memset(j, 0, sizeof *j);
                j->item = item;
                j->args = tmp[s];
                j->sm = B->sms[a];
            }
    }
    free(tmp);
    int rc = driver_flush(&c);
    comp_free(&c);
    if (!rc && B->njobs == 0) {
        fprintf(stderr, "tilec: error: '%s' declares no specialisations (add 'specialize' declarations)\n", B->file);
        rc = 1;
    }
    return rc;
}

/* the temporary directory before compiling: a build that cannot finish should fail first */
static int make_temp_dir(Build *B)
{
    B->dir = tool_temp_dir("build");
    if (B->dir)
        return 0;
    fprintf(stderr, "tilec: error: cannot create a temporary directory in '%s': %s\n", tool_temp_base(), strerror(errno));
    return 1;
}

/* one job: its PTX, and ptxas' relocatable object with the resources it reports */
static void compile_job(Build *B, Compilation *c, Job *j)
{
    Item *k = j->item < c->nitems && c->items[j->item]->kind == IT_KERNEL ? c->items[j->item] : NULL;
    CompileRequest rq = {0};
    rq.kernel = k;
    rq.args = j->args;
    rq.sm = j->sm;
    rq.opt_level = B->o->opt_level;
    rq.stage = STAGE_PTX;
    CompileResult res;
    int errs = c->diag.nerrors;
    if (k && compile_specialization(c, &rq, &res)) {
        StrBuf info = {0};
        if (tool_ptxas(&c->diag, res.text, res.size, j->sm, B->o->opt_level, true, &j->obj, &j->obj_size, &info)) {
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
        sema_format_specialization(&key, k, &j->args);
        sb_printf(&key, " sm_%da", j->sm);
    }
    j->key = sb_take(&key);
    if (c->diag.nerrors > errs)
        j->ok = false;
    if (!j->ok || c->diag.out.len)
        j->diags = strdup(c->diag.out.data ? c->diag.out.data : "");
    /* the next job starts with no diagnostics */
    c->diag.out.len = 0;
    if (c->diag.out.data)
        c->diag.out.data[0] = 0;
    c->diag.nerrors = 0;
    c->diag.nwarnings = 0;
    c->diag.capped = false;
    c->diag.warnings_capped = false;
}

static void *worker(void *arg)
{
    Build *B = arg;
    Compilation c;
    bool loaded = driver_load(&c, B->o, B->file, true);
    for (;;) {
        pthread_mutex_lock(&B->mu);
        int i = B->next < B->njobs ? B->next++ : -1;
        pthread_mutex_unlock(&B->mu);
        if (i < 0)
            break;
        Job *j = &B->jobs[i];
        if (loaded)
            compile_job(B, &c, j);
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

/* every job, in parallel: each worker parses the sources itself (a compilation is one thread's) */
static void compile_jobs(Build *B)
{
    B->tty = isatty(2);
    int nthreads = B->o->jobs < B->njobs ? B->o->jobs : B->njobs;
    pthread_t th[256];
    for (int i = 0; i < nthreads; i++)
        pthread_create(&th[i], NULL, worker, B);
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    if (B->tty)
        fprintf(stderr, "\n");
}

/* what the jobs printed, in job order: each failure with its errors, and the warnings of the
 * others (a warning that every specialisation or architecture repeats, once) */
static int report_jobs(Build *B)
{
    int failed = 0;
    for (int i = 0; i < B->njobs; i++) {
        Job *j = &B->jobs[i];
        if (!j->ok) {
            failed++;
            fprintf(stderr, "tilec: error: %s failed\n%s", j->key ? j->key : "?", j->diags ? j->diags : "");
            continue;
        }
        bool seen = !j->diags;
        for (int p = 0; p < i && !seen; p++)
            seen = B->jobs[p].ok && B->jobs[p].diags && !strcmp(B->jobs[p].diags, j->diags);
        if (!seen)
            fputs(j->diags, stderr);
    }
    return failed ? 1 : 0;
}

/* each architecture's objects linked by nvlink into one cubin */
static int link_archs(Build *B)
{
    int rc = 0;
    for (int a = 0; !rc && a < B->nsm; a++) {
        char **argv = tl_xcalloc((size_t)B->njobs + 8, sizeof(char *));
        int n = 0;
        char archarg[32], name[64];
        snprintf(archarg, sizeof archarg, "-arch=sm_%da", B->sms[a]);
        snprintf(name, sizeof name, "sm_%da.cubin", B->sms[a]);
        B->cubins[a] = tl_xmalloc(strlen(B->dir) + strlen(name) + 2);
        sprintf(B->cubins[a], "%s/%s", B->dir, name);
        argv[n++] = B->nvlink;
        argv[n++] = archarg;
        argv[n++] = "-o";
        argv[n++] = B->cubins[a];
        for (int i = 0; i < B->njobs; i++) {
            if (B->jobs[i].sm != B->sms[a])
                continue;
            snprintf(name, sizeof name, "k%d.o", i);
            char *p = tool_write_file(B->dir, name, B->jobs[i].obj, B->jobs[i].obj_size);
            if (!p) {
                fprintf(stderr, "tilec: error: cannot write '%s/%s': %s\n", B->dir, name, strerror(errno));
                rc = 1;
                break;
            }
            argv[n++] = p;
        }
        if (!rc && tool_run(argv, NULL) != 0) {
            fprintf(stderr, "tilec: error: nvlink failed for sm_%da\n", B->sms[a]);
            rc = 1;
        }
        for (int i = 4; i < n; i++) {
            unlink(argv[i]);
            free(argv[i]);
        }
        free(argv);
    }
    return rc;
}

/* the architectures' cubins packed by fatbinary in the temporary directory (tilec writes the
 * output itself, so that it says why when it cannot) */
static int pack_fatbin(Build *B)
{
    char *argv[16];
    int n = 0;
    char create[4200], img[2][4200];
    B->fatbin = tl_xmalloc(strlen(B->dir) + sizeof "/k.fatbin");
    sprintf(B->fatbin, "%s/k.fatbin", B->dir);
    snprintf(create, sizeof create, "--create=%s", B->fatbin);
    argv[n++] = B->fatbinary;
    argv[n++] = create;
    argv[n++] = "-64";
    for (int a = 0; a < B->nsm; a++) {
        snprintf(img[a], sizeof img[a], "--image3=kind=elf,sm=%da,file=%s", B->sms[a], B->cubins[a]);
        argv[n++] = img[a];
    }
    argv[n] = NULL;
    if (tool_run(argv, NULL) == 0)
        return 0;
    fprintf(stderr, "tilec: error: fatbinary failed\n");
    return 1;
}

/* the fatbin to the output */
static int write_fatbin(Build *B)
{
    size_t n;
    char *data = tool_read_file(B->fatbin, &n);
    if (!data) { /* fatbinary said it succeeded, but wrote nothing */
        fprintf(stderr, "tilec: error: fatbinary failed\n");
        return 1;
    }
    bool ok = driver_write_file(B->o->output, data, n);
    free(data);
    return ok ? 0 : 1;
}

/* the manifest next to the fatbin: what it holds */
static int write_manifest(Build *B)
{
    StrBuf m = {0};
    sb_printf(&m, "tilec-manifest 1\ncompiler %s\n# %d specialisations\n", TILEC_VERSION, B->njobs);
    int spills = 0;
    for (int i = 0; i < B->njobs; i++) {
        Job *j = &B->jobs[i];
        sb_printf(&m, "\n# specialisation %d: %d registers, %d bytes spilled, %d bytes of stack\n%s", i, j->regs, j->spills,
                  j->stack, j->signature ? j->signature : "");
        if (j->spills || j->stack)
            spills++;
    }
    bool ok = driver_write_file(B->manifest, m.data, m.len);
    sb_free(&m);
    if (!ok)
        return 1;
    fprintf(stderr, "tilec: built %d specialisations for %s into %s (%d with spills or a stack frame)\n", B->njobs,
            B->o->arch, B->o->output, spills);
    return 0;
}

static void remove_temp_dir(Build *B)
{
    for (int a = 0; a < B->nsm; a++) {
        if (B->cubins[a])
            unlink(B->cubins[a]);
        free(B->cubins[a]);
    }
    if (B->fatbin)
        unlink(B->fatbin);
    free(B->fatbin);
    if (B->dir)
        rmdir(B->dir);
    free(B->dir);
}

static void free_jobs(Build *B)
{
    for (int i = 0; i < B->njobs; i++) {
        free(B->jobs[i].obj);
        free(B->jobs[i].signature);
        free(B->jobs[i].key);
        free(B->jobs[i].diags);
    }
    free(B->jobs);
}

int driver_build(const DriverOptions *o, const char *file)
{
    if (!o->output) {
        fprintf(stderr, "tilec: error: build needs -o FILE (the fatbin to write)\n");
        return 1;
    }
    Build B = {.o = o, .file = file};
    B.manifest = tl_xmalloc(strlen(o->output) + sizeof ".manifest");
    sprintf(B.manifest, "%s.manifest", o->output);
    B.nsm = driver_arch_list(o->arch, B.sms);
    int rc = B.nsm ? 0 : 1;
    pthread_mutex_init(&B.mu, NULL);
    if (!rc)
        rc = find_tools(&B);
    if (!rc)
        rc = plan_jobs(&B);
    if (!rc)
        rc = make_temp_dir(&B);
    if (!rc) {
        compile_jobs(&B);
        rc = report_jobs(&B);
    }
    if (!rc)
        rc = link_archs(&B);
    if (!rc)
        rc = pack_fatbin(&B);
    if (!rc)
        rc = write_fatbin(&B);
    remove_temp_dir(&B);
    if (!rc)
        rc = write_manifest(&B);
    free_jobs(&B);
    free(B.manifest);
    pthread_mutex_destroy(&B.mu);
    return rc;
}
