/* rt_library.c — kernel libraries and their specialisations: opening sources and AOT manifests,
 * the in-memory map from (kernel, generic values) to a loaded kernel, and the path a miss takes:
 * AOT fatbin, then the disk cache, then the compiler (once per key across processes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_internal.h"

/* ---- the in-memory map ---- */

static uint64_t rt_kernel_hash(const char *kernel, const char *generics)
{
    return rt_hash(generics, strlen(generics), rt_hash(kernel, strlen(kernel), 0x6b65726eull));
}

static tilec_rt_kernel *rt_map_find(const tilec_rt_library *lib, uint64_t h, const char *kernel, const char *generics)
{
    if (!lib->nslots)
        return NULL;
    for (size_t i = h & (lib->nslots - 1);; i = (i + 1) & (lib->nslots - 1)) {
        tilec_rt_kernel *k = lib->slots[i];
        if (!k)
            return NULL;
        if (k->hash == h && !strcmp(k->name, kernel) && !strcmp(k->generics, generics))
            return k;
    }
}

static int rt_map_insert(tilec_rt_library *lib, tilec_rt_kernel *k)
{
    if (2 * (lib->nkernels + 1) > lib->nslots) {
        size_t n = lib->nslots ? 2 * lib->nslots : 16;
        tilec_rt_kernel **slots = calloc(n, sizeof *slots);
        if (!slots)
            return -1;
        for (size_t i = 0; i < lib->nslots; i++) {
            tilec_rt_kernel *old = lib->slots[i];
            if (!old)
                continue;
            size_t j = old->hash & (n - 1);
            while (slots[j])
                j = (j + 1) & (n - 1);
            slots[j] = old;
        }
        free(lib->slots);
        lib->slots = slots;
        lib->nslots = n;
    }
    size_t j = k->hash & (lib->nslots - 1);
    while (lib->slots[j])
        j = (j + 1) & (lib->nslots - 1);
    lib->slots[j] = k;
    lib->nkernels++;
    return 0;
}

static void rt_kernel_free(tilec_rt *rt, tilec_rt_kernel *k)
{
    if (!k)
        return;
    if (k->module)
        rt->drv->cuModuleUnload(k->module);
    if (k->emu)
        rt_emu_free(k);
    rt_sig_free(k->owned_sig);
    free(k->name);
    free(k->generics);
    free(k);
}

/* ---- AOT manifests ---- */

/* "tilec-manifest 1", optional "compiler VERSION", then signature blocks ("tilec-sig 1" .. "end"),
 * one per specialisation that the fatbin holds; lines starting with '#' outside blocks are notes
 * (registers, spills) for people. */
static tilec_status rt_manifest_load(tilec_rt_library *lib, const char *path)
{
    char *text;
    size_t len;
    tilec_status s = rt_read_file(path, &text, &len);
    if (s != TILEC_OK)
        return s;
    const char *p = text, *end = text + len;
    int line = 1, block_line = 0;
    const char *block = NULL;
    int cap = 0;
    for (; s == TILEC_OK && p < end; line++) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *next = eol ? eol + 1 : end;
        size_t n = (size_t)((eol ? eol : end) - p);
        if (n && p[n - 1] == '\r')
            n--;
        if (line == 1) {
            if (n != 16 || memcmp(p, "tilec-manifest 1", 16))
                s = rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "manifest '%s', line 1: expected 'tilec-manifest 1'", path);
        } else if (block) {
            if (n == 3 && !memcmp(p, "end", 3)) {
                rt_sig *sig;
                s = rt_sig_parse(block, (size_t)(next - block), &sig);
                if (s != TILEC_OK) {
                    rt_fail_prefix(s, "manifest '%s', signature at line %d", path, block_line);
                    break;
                }
                if (lib->naot == cap) {
                    cap = cap ? 2 * cap : 8;
                    rt_aot_entry *grown = realloc(lib->aot, sizeof *grown * (size_t)cap);
                    if (!grown) {
                        rt_sig_free(sig);
                        s = rt_fail(TILEC_ERROR_INTERNAL, "out of memory reading manifest '%s'", path);
                        break;
                    }
                    lib->aot = grown;
                }
                rt_aot_entry *e = &lib->aot[lib->naot];
                e->sig = sig;
                if (!sig->key || rt_sig_key_generics(sig, e->generics, sizeof e->generics) != 0) {
                    rt_sig_free(sig);
                    s = rt_fail(TILEC_ERROR_INVALID_ARGUMENT,
                                "manifest '%s', signature at line %d: missing or malformed 'key' line", path,
                                block_line);
                    break;
                }
                lib->naot++;
                block = NULL;
            }
        } else if (n == 11 && !memcmp(p, "tilec-sig 1", 11)) {
            block = p;
            block_line = line;
        } else if (n && p[0] != '#' && !(n > 9 && !memcmp(p, "compiler ", 9))) {
            s = rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "manifest '%s', line %d: unexpected '%.*s'", path, line,
                        (int)(n > 60 ? 60 : n), p);
        }
        p = next;
    }
    if (s == TILEC_OK && block)
        s = rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "manifest '%s': the signature at line %d has no 'end'", path,
                    block_line);
    free(text);
    return s;
}

/* ---- libraries ---- */

tilec_status tilec_rt_library_open(tilec_rt *rt, const tilec_rt_library_options *opts, tilec_rt_library **out)
{
    if (!rt || !opts || !out)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "tilec_rt_library_open: NULL argument");
    *out = NULL;
    if (!opts->source && !opts->fatbin && !opts->manifest)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "tilec_rt_library_open: give a source, or a fatbin and its manifest");
    if (!opts->fatbin != !opts->manifest)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "tilec_rt_library_open: a fatbin needs its manifest and a "
                                                     "manifest its fatbin");
    if (opts->source && !rt->compiler)
        return rt_fail(TILEC_ERROR_UNSUPPORTED,
                       "cannot compile '%s': this runtime was built without the compiler (JIT); open an AOT fatbin",
                       opts->source);
    if ((opts->ninclude && !opts->include_dirs) || (opts->ndefines && !opts->defines) || opts->ninclude < 0 ||
        opts->ndefines < 0)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "tilec_rt_library_open: bad include_dirs or defines count");
    tilec_rt_library *lib = calloc(1, sizeof *lib);
    if (!lib)
        return rt_fail(TILEC_ERROR_INTERNAL, "out of memory opening a library");
    lib->rt = rt;
    pthread_mutex_init(&lib->lock, NULL);
    pthread_mutex_init(&lib->build_lock, NULL);
    tilec_status s = TILEC_OK;
    if (opts->manifest) {
        s = rt_manifest_load(lib, opts->manifest);
        if (s == TILEC_OK && access(opts->fatbin, R_OK) != 0)
            s = rt_fail(TILEC_ERROR_NOT_FOUND, "cannot read fatbin '%s'", opts->fatbin);
        if (s == TILEC_OK && !(lib->fatbin_path = strdup(opts->fatbin)))
            s = rt_fail(TILEC_ERROR_INTERNAL, "out of memory opening a library");
    }
    if (s == TILEC_OK && opts->source) {
        tilec_program_options po = {opts->include_dirs, opts->ninclude, opts->defines, opts->ndefines};
        lib->compiler = rt->compiler;
        s = lib->compiler->open(lib->compiler->self, opts->source, &po, &lib->program);
        if (s == TILEC_OK)
            lib->program_hash = lib->compiler->program_hash(lib->compiler->self, lib->program);
    }
    if (s != TILEC_OK) {
        tilec_rt_library_close(lib);
        return s;
    }
    pthread_mutex_lock(&rt->lock);
    lib->next = rt->libs;
    rt->libs = lib;
    pthread_mutex_unlock(&rt->lock);
    *out = lib;
    return TILEC_OK;
}

void tilec_rt_library_close(tilec_rt_library *lib)
{
    if (!lib)
        return;
    tilec_rt *rt = lib->rt;
    pthread_mutex_lock(&rt->lock);
    for (tilec_rt_library **pp = &rt->libs; *pp; pp = &(*pp)->next)
        if (*pp == lib) {
            *pp = lib->next;
            break;
        }
    pthread_mutex_unlock(&rt->lock);
    int pushed = 0;
    int entered = rt_ctx_enter(rt, &pushed) == TILEC_OK; /* modules unload from their context */
    for (size_t i = 0; i < lib->nslots; i++)
        rt_kernel_free(rt, lib->slots[i]);
    if (lib->aot_module)
        rt->drv->cuModuleUnload(lib->aot_module);
    if (entered)
        rt_ctx_leave(rt, pushed);
    for (int i = 0; i < lib->naot; i++)
        rt_sig_free(lib->aot[i].sig);
    if (lib->program)
        lib->compiler->close(lib->compiler->self, lib->program);
    for (rt_iface *f = lib->ifaces, *next; f; f = next) {
        next = f->next;
        free(f->kernel);
        free(f->text);
        free(f);
    }
    free(lib->aot);
    free(lib->slots);
    free(lib->fatbin_path);
    pthread_mutex_destroy(&lib->lock);
    pthread_mutex_destroy(&lib->build_lock);
    free(lib);
}

/* ---- building a specialisation on a miss ---- */

static tilec_status rt_from_aot(tilec_rt_library *lib, const rt_aot_entry *e, tilec_rt_kernel *k)
{
    tilec_rt *rt = lib->rt;
    int pushed;
    tilec_status s = rt_ctx_enter(rt, &pushed);
    if (s != TILEC_OK)
        return s;
    if (!lib->aot_module) {
        char *image;
        size_t len;
        s = rt_read_file(lib->fatbin_path, &image, &len);
        if (s == TILEC_OK) {
            s = rt_load_module(rt, image, &lib->aot_module); /* the driver keeps its own copy */
            if (s != TILEC_OK)
                rt_fail_prefix(s, "loading fatbin '%s'", lib->fatbin_path);
            free(image);
        }
    }
    if (s == TILEC_OK)
        s = rt_get_function(rt, lib->aot_module, e->sig, &k->fn);
    rt_ctx_leave(rt, pushed);
    if (s == TILEC_OK) {
        k->sig = e->sig;
        atomic_fetch_add(&rt->aot_hits, 1);
    }
    return s;
}

/* Everything that can change the generated code is in the key; the entry stores it whole and
 * a load compares it, so a hash collision reads as a foreign entry, never as a wrong kernel. */
static void rt_cache_key(const tilec_rt_library *lib, const char *kernel, const char *generics, char *buf, size_t cap)
{
    const tilec_rt *rt = lib->rt;
    const rt_compiler *c = lib->compiler;
    snprintf(buf, cap,
             "tilec-cache-key 1\ncompiler %s\nprogram %016llx\nkernel %s\ngenerics %s\narch %s\nopt %d\ndriver %d\n",
             c->version(c->self), (unsigned long long)lib->program_hash, kernel, generics,
             rt->arch, rt->opt_level, rt->driver_version);
}

static tilec_status rt_compile(tilec_rt_library *lib, const char *kernel, const char *const *generics, int ngenerics,
                               rt_entry *e)
{
    tilec_rt *rt = lib->rt;
    const rt_compiler *c = lib->compiler;
    tilec_target target = {rt->sm, rt->opt_level, rt->cpu};
    rt_compiled out;
    memset(&out, 0, sizeof out);
    tilec_status s = c->compile(c->self, lib->program, kernel, generics, ngenerics, &target, &out);
    if (s != TILEC_OK)
        return s;
    atomic_fetch_add(&rt->compiles, 1);
    e->sig_len = strlen(out.signature);
    e->sig = rt_strndup(out.signature, e->sig_len);
    if (!e->sig) {
        s = rt_fail(TILEC_ERROR_INTERNAL, "out of memory after compiling '%s'", kernel);
    } else if (rt->cpu) { /* the CPU device: an x86-64 object for the emulator */
        e->payload_len = out.object_size;
        if (!out.object || !(e->payload = rt_strndup(out.object, out.object_size)))
            s = rt_fail(TILEC_ERROR_INTERNAL, "compiling '%s' for the CPU gave no object", kernel);
        e->kind = RT_PAYLOAD_HOST_OBJECT;
    } else if (rt->drv->has_link) {
        int pushed;
        if ((s = rt_ctx_enter(rt, &pushed)) == TILEC_OK) {
            s = rt_link_ptx(rt, out.ptx, out.ptx_size, &e->payload, &e->payload_len);
            rt_ctx_leave(rt, pushed);
        }
        e->kind = RT_PAYLOAD_CUBIN;
    } else {
        /* no driver linker: keep the PTX, which cuModuleLoadData JIT-compiles itself */
        e->payload_len = out.ptx_size;
        if (!(e->payload = rt_strndup(out.ptx, out.ptx_size)))
            s = rt_fail(TILEC_ERROR_INTERNAL, "out of memory after compiling '%s'", kernel);
        e->kind = RT_PAYLOAD_PTX;
    }
    c->release(c->self, &out);
    if (s != TILEC_OK)
        rt_entry_free(e);
    return s;
}

/* Disk cache, else compile under the per-key lock (re-reading first: another process may have
 * finished while this one waited). use_disk 0 skips reading the entry (the one there did not
 * load: it is rebuilt and replaced); *from_disk says where e came from. A lock that cannot be
 * taken, or not within the bound, does not stop the compile, nor the write (a rename: safe
 * without the lock). */
static tilec_status rt_entry_for(tilec_rt_library *lib, const char *kernel, const char *generics,
                                 const char *const *raw, int nraw, int use_disk, rt_entry *e, int *from_disk)
{
    tilec_rt *rt = lib->rt;
    char key[RT_MAX_GENERICS_TEXT + 1024];
    rt_cache_key(lib, kernel, generics, key, sizeof key);
    const char *dir = rt->cache_dir;
    int found = 0, rejected = 0;
    tilec_status s;
    *from_disk = 0;
    if (dir && use_disk) {
        if ((s = rt_cache_load(dir, key, e, &found, &rejected)) != TILEC_OK)
            return s;
        if (found) {
            *from_disk = 1;
            return TILEC_OK;
        }
    }
    int fd = dir ? rt_cache_lock(dir, key) : -1; /* warns itself when it gives up */
    if (fd >= 0 && use_disk) {
        int rejected_again;
        if ((s = rt_cache_load(dir, key, e, &found, &rejected_again)) != TILEC_OK) {
            rt_cache_unlock(fd);
            return s;
        }
        if (found) {
            rt_cache_unlock(fd);
            *from_disk = 1;
            return TILEC_OK;
        }
        rejected |= rejected_again;
    }
    if (rejected)
        atomic_fetch_add(&rt->disk_rejects, 1);
    s = rt_compile(lib, kernel, raw, nraw, e);
    if (s == TILEC_OK && dir)
        rt_cache_store(dir, key, e); /* a failure is warned about, and the kernel works from memory */
    rt_cache_unlock(fd);
    return s;
}

/* Parses and checks e's signature and loads its payload into k. On failure k may hold a
 * signature and a module: rt_unload_partial clears them. */
static tilec_status rt_load_entry(tilec_rt_library *lib, tilec_rt_kernel *k, const rt_entry *e)
{
    tilec_rt *rt = lib->rt;
    tilec_status s = rt_sig_parse(e->sig, e->sig_len, &k->owned_sig);
    if (s != TILEC_OK)
        return rt_fail_prefix(TILEC_ERROR_INTERNAL, "the signature of %s<%s> is invalid", k->name, k->generics);
    const rt_sig *sig = k->owned_sig;
    if (strcmp(sig->kernel, k->name) || strcmp(sig->arch, rt->arch))
        return rt_fail(TILEC_ERROR_INTERNAL, "the signature of %s<%s> is for kernel '%s' on %s, not '%s' on %s",
                       k->name, k->generics, sig->kernel, sig->arch, k->name, rt->arch);
    int pushed;
    if (rt->cpu) {
        s = e->kind == RT_PAYLOAD_HOST_OBJECT ? rt_emu_load(k, sig, e->payload, e->payload_len)
                                               : rt_fail(TILEC_ERROR_INTERNAL, "a GPU payload for the CPU device");
    } else if ((s = rt_ctx_enter(rt, &pushed)) == TILEC_OK) {
        s = rt_load_module(rt, e->payload, &k->module);
        if (s == TILEC_OK)
            s = rt_get_function(rt, k->module, sig, &k->fn);
        rt_ctx_leave(rt, pushed);
    }
    if (s == TILEC_OK)
        k->sig = sig;
    return s;
}

static void rt_unload_partial(tilec_rt *rt, tilec_rt_kernel *k)
{
    if (k->module) {
        int pushed;
        int entered = rt_ctx_enter(rt, &pushed) == TILEC_OK;
        rt->drv->cuModuleUnload(k->module);
        if (entered)
            rt_ctx_leave(rt, pushed);
        k->module = NULL;
    }
    if (k->emu)
        rt_emu_free(k);
    rt_sig_free(k->owned_sig);
    k->owned_sig = NULL;
    k->sig = NULL;
    k->fn = NULL;
}

static tilec_status rt_from_source(tilec_rt_library *lib, const char *const *raw, int nraw, tilec_rt_kernel *k)
{
    tilec_rt *rt = lib->rt;
    rt_entry e;
    memset(&e, 0, sizeof e);
    int from_disk;
    tilec_status s = rt_entry_for(lib, k->name, k->generics, raw, nraw, 1, &e, &from_disk);
    if (s != TILEC_OK)
        return s;
    s = rt_load_entry(lib, k, &e);
    rt_entry_free(&e);
    if (s != TILEC_OK && from_disk) {
        /* the entry passed its checksum but the signature check, the driver or the emulator
         * rejects it: discard it, rebuild it and replace it (once: a rebuilt kernel that does not
         * load either is the error) */
        atomic_fetch_add(&rt->disk_rejects, 1);
        rt_unload_partial(rt, k);
        if ((s = rt_entry_for(lib, k->name, k->generics, raw, nraw, 0, &e, &from_disk)) != TILEC_OK)
            return s;
        s = rt_load_entry(lib, k, &e);
        rt_entry_free(&e);
    } else if (s == TILEC_OK && from_disk) {
        atomic_fetch_add(&rt->disk_hits, 1);
    }
    return s;
}

static tilec_status rt_build(tilec_rt_library *lib, const char *kernel, const char *generics, uint64_t h,
                             const char *const *raw, int nraw, tilec_rt_kernel **out)
{
    tilec_rt *rt = lib->rt;
    tilec_rt_kernel *k = calloc(1, sizeof *k);
    if (!k || !(k->name = strdup(kernel)) || !(k->generics = strdup(generics))) {
        rt_kernel_free(rt, k);
        return rt_fail(TILEC_ERROR_INTERNAL, "out of memory loading kernel '%s'", kernel);
    }
    k->hash = h;
    k->drv = rt->drv;
    k->device_sms = rt->num_sms;
    const rt_aot_entry *aot = NULL;
    for (int i = 0; i < lib->naot && !aot; i++)
        if (!strcmp(lib->aot[i].sig->kernel, kernel) && !strcmp(lib->aot[i].generics, generics) &&
            !strcmp(lib->aot[i].sig->arch, rt->arch))
            aot = &lib->aot[i];
    tilec_status s;
    if (aot)
        s = rt_from_aot(lib, aot, k);
    else if (lib->program)
        s = rt_from_source(lib, raw, nraw, k);
    else
        s = rt_fail(TILEC_ERROR_NOT_FOUND,
                    "kernel %s<%s> for %s is not in the library's manifest, and the library has no source to "
                    "compile it from",
                    kernel, generics, rt->arch);
    if (s != TILEC_OK) {
        int pushed;
        int entered = k->module && rt_ctx_enter(rt, &pushed) == TILEC_OK;
        rt_kernel_free(rt, k);
        if (entered)
            rt_ctx_leave(rt, pushed);
        return s;
    }
    *out = k;
    return TILEC_OK;
}

tilec_status tilec_rt_get_kernel(tilec_rt_library *lib, const char *kernel, const char *const *generics, int ngenerics,
                                 tilec_rt_kernel **out)
{
    if (!lib || !kernel || !out || (ngenerics > 0 && !generics))
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "tilec_rt_get_kernel: NULL argument");
    char canon[RT_MAX_GENERICS_TEXT];
    tilec_status s = rt_canonical_generics(generics, ngenerics, canon, sizeof canon);
    if (s != TILEC_OK)
        return s;
    uint64_t h = rt_kernel_hash(kernel, canon);
    pthread_mutex_lock(&lib->lock);
    tilec_rt_kernel *k = rt_map_find(lib, h, kernel, canon);
    pthread_mutex_unlock(&lib->lock);
    if (k) {
        atomic_fetch_add(&lib->rt->memory_hits, 1);
        *out = k;
        return TILEC_OK;
    }
    pthread_mutex_lock(&lib->build_lock);
    pthread_mutex_lock(&lib->lock);
    k = rt_map_find(lib, h, kernel, canon); /* built by another thread while this one waited */
    pthread_mutex_unlock(&lib->lock);
    if (!k) {
        s = rt_build(lib, kernel, canon, h, generics, ngenerics, &k);
        if (s == TILEC_OK) {
            pthread_mutex_lock(&lib->lock);
            int r = rt_map_insert(lib, k);
            pthread_mutex_unlock(&lib->lock);
            if (r != 0) {
                rt_kernel_free(lib->rt, k);
                s = rt_fail(TILEC_ERROR_INTERNAL, "out of memory caching kernel '%s'", kernel);
            }
        }
    } else {
        atomic_fetch_add(&lib->rt->memory_hits, 1);
    }
    pthread_mutex_unlock(&lib->build_lock);
    if (s == TILEC_OK)
        *out = k;
    return s;
}

/* ---- introspection ---- */

int tilec_rt_library_num_kernels(const tilec_rt_library *lib)
{
    int n = 0;
    if (lib && lib->program && lib->compiler->kernel_name)
        while (lib->compiler->kernel_name(lib->compiler->self, lib->program, n))
            n++;
    return n;
}

const char *tilec_rt_library_kernel_name(const tilec_rt_library *lib, int i)
{
    if (!lib || !lib->program || !lib->compiler->kernel_name || i < 0)
        return NULL;
    return lib->compiler->kernel_name(lib->compiler->self, lib->program, i);
}

tilec_status tilec_rt_library_interface(tilec_rt_library *lib, const char *kernel, const char **out)
{
    if (!lib || !kernel || !out)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "tilec_rt_library_interface: NULL argument");
    *out = NULL;
    if (!lib->program || !lib->compiler->interface)
        return rt_fail(TILEC_ERROR_NOT_FOUND, "kernel '%s': the library has no source to describe it", kernel);
    tilec_status s = TILEC_OK;
    pthread_mutex_lock(&lib->build_lock); /* the compiler is not reentrant */
    rt_iface *f = lib->ifaces;
    while (f && strcmp(f->kernel, kernel))
        f = f->next;
    if (!f) {
        const char *text = lib->compiler->interface(lib->compiler->self, lib->program, kernel);
        if (!text) {
            s = rt_fail(TILEC_ERROR_NOT_FOUND, "no kernel '%s' in the library", kernel);
        } else if (!(f = calloc(1, sizeof *f)) || !(f->kernel = strdup(kernel)) || !(f->text = strdup(text))) {
            if (f)
                free(f->kernel);
            free(f);
            f = NULL;
            s = rt_fail(TILEC_ERROR_INTERNAL, "out of memory describing kernel '%s'", kernel);
        } else {
            f->next = lib->ifaces;
            lib->ifaces = f;
        }
    }
    pthread_mutex_unlock(&lib->build_lock);
    if (f)
        *out = f->text;
    return s;
}

int tilec_rt_library_num_aot(const tilec_rt_library *lib)
{
    return lib ? lib->naot : 0;
}

const char *tilec_rt_library_aot_signature(const tilec_rt_library *lib, int i)
{
    return lib && i >= 0 && i < lib->naot ? lib->aot[i].sig->text : NULL;
}

const char *tilec_rt_kernel_signature(const tilec_rt_kernel *k)
{
    return k ? k->sig->text : NULL;
}

int tilec_rt_kernel_num_params(const tilec_rt_kernel *k)
{
    return k ? k->sig->nparams : 0;
}

tilec_status tilec_rt_kernel_param(const tilec_rt_kernel *k, int i, tilec_rt_param_info *out)
{
    if (!k || !out)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "tilec_rt_kernel_param: NULL argument");
    if (i < 0 || i >= k->sig->nparams)
        return rt_fail(TILEC_ERROR_INVALID_ARGUMENT, "tilec_rt_kernel_param: index %d outside 0..%d", i,
                       k->sig->nparams - 1);
    const rt_param *p = &k->sig->params[i];
    out->name = p->name;
    out->kind = p->kind == RT_P_TENSOR ? TILEC_RT_PARAM_TENSOR : p->kind == RT_P_LIST ? TILEC_RT_PARAM_LIST
                                                                                   : TILEC_RT_PARAM_SCALAR;
    out->dtype = (tilec_rt_dtype)p->dtype;
    out->rank = p->rank;
    out->align = p->align;
    out->flags = p->flags;
    out->max_length = p->kind == RT_P_LIST ? p->max : 0;
    return TILEC_OK;
}
