/* emu_loader.c — loads the x86-64 ELF relocatable object that the compiler makes for the host
 * target: maps its allocated sections, resolves its symbols (the emulator ABI from a table,
 * anything else, such as libm, from the process), applies the relocations, and registers the
 * code with gdb's JIT interface so that a debugger sees the kernel's symbols.
 *
 * Why not dlopen: that needs a shared library, so a system linker at run time; and why not
 * LLVM's JIT: the runtime then needs LLVM to run a cached kernel. The object is small (one
 * kernel), made by one compiler with the small code model and PIC, so the relocation types
 * are few. Calls to functions outside the mapping go through stubs placed beside the code,
 * and GOT-relative references through a table there, so that everything stays within the
 * ±2 GiB that 32-bit displacements reach. */
#include "emu_internal.h"

#include <dlfcn.h>
#include <elf.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---------------- gdb's JIT interface (the GDB manual, "JIT Compilation Interface") -------- */

struct jit_code_entry {
    struct jit_code_entry *next_entry;
    struct jit_code_entry *prev_entry;
    const char *symfile_addr;
    uint64_t symfile_size;
};

struct jit_descriptor {
    uint32_t version;
    uint32_t action_flag; /* 0 none, 1 register, 2 unregister */
    struct jit_code_entry *relevant_entry;
    struct jit_code_entry *first_entry;
};

/* weak: when another JIT in the process (LLVM's) defines them too, all use one copy */
__attribute__((weak, visibility("default"), noinline)) void __jit_debug_register_code(void);
__attribute__((weak, visibility("default"), noinline)) void __jit_debug_register_code(void) { __asm__ volatile(""); }
__attribute__((weak, visibility("default"))) struct jit_descriptor __jit_debug_descriptor = {1, 0, NULL, NULL};

static pthread_mutex_t gdb_lock = PTHREAD_MUTEX_INITIALIZER;

static void gdb_register(tl_emu_kernel *k, char *image, size_t size)
{
    struct jit_code_entry *e = calloc(1, sizeof *e);
    if (!e) {
        free(image);
        return;
    }
    e->symfile_addr = image;
    e->symfile_size = size;
    pthread_mutex_lock(&gdb_lock);
    e->next_entry = __jit_debug_descriptor.first_entry;
    if (e->next_entry)
        e->next_entry->prev_entry = e;
    __jit_debug_descriptor.first_entry = e;
    __jit_debug_descriptor.relevant_entry = e;
    __jit_debug_descriptor.action_flag = 1;
    __jit_debug_register_code();
    pthread_mutex_unlock(&gdb_lock);
    k->gdb_entry = e;
}

static void gdb_unregister(tl_emu_kernel *k)
{
    struct jit_code_entry *e = k->gdb_entry;
    if (!e)
        return;
    pthread_mutex_lock(&gdb_lock);
    if (e->prev_entry)
        e->prev_entry->next_entry = e->next_entry;
    else
        __jit_debug_descriptor.first_entry = e->next_entry;
    if (e->next_entry)
        e->next_entry->prev_entry = e->prev_entry;
    __jit_debug_descriptor.relevant_entry = e;
    __jit_debug_descriptor.action_flag = 2;
    __jit_debug_register_code();
    pthread_mutex_unlock(&gdb_lock);
    free((void *)e->symfile_addr);
    free(e);
    k->gdb_entry = NULL;
}

/* ---------------- symbols the kernel code may call ---------------- */

typedef struct AbiSym {
    const char *name;
    void *addr;
} AbiSym;

#define FN(f) {#f, (void *)(f)}
static const AbiSym abi_syms[] = {
    FN(tl_emu_sreg), FN(tl_emu_smem), FN(tl_emu_barrier), FN(tl_emu_warp_sync), FN(tl_emu_shfl), FN(tl_emu_vote),
    FN(tl_emu_match_any), FN(tl_emu_grid_sync), FN(tl_emu_trap), FN(tl_emu_assertfail), FN(tl_emu_vprintf),
    FN(tl_emu_shared_access), FN(tl_emu_cp_async), FN(tl_emu_global_ranges), FN(tl_emu_global_access),
    FN(tl_emu_mma), FN(tl_emu_ldmatrix), FN(tl_emu_cvt), FN(tl_emu_cvt_x2), FN(tl_emu_fma_rm),
    FN(tl_emu_sat), FN(tl_emu_prmt), FN(tl_emu_ex2), FN(tl_emu_rsqrt), FN(tl_emu_fminf), FN(tl_emu_fmaxf), FN(tl_emu_fmin),
    FN(tl_emu_fmax), FN(tl_emu_atomic_add_f32), FN(tl_emu_atomic_add_f32_shared),
    /* what LLVM may call for intrinsics the CPU lacks */
    FN(memcpy), FN(memmove), FN(memset), FN(fmaf), FN(fma), FN(floorf), FN(floor), FN(ceilf), FN(ceil), FN(truncf),
    FN(trunc), FN(rintf), FN(rint), FN(nearbyintf), FN(nearbyint), FN(sqrtf), FN(sqrt), FN(fminf), FN(fmaxf),
    FN(fmin), FN(fmax), FN(roundf), FN(round), FN(copysignf), FN(copysign),
};
#undef FN

static void *resolve_external(const char *name)
{
    for (size_t i = 0; i < sizeof abi_syms / sizeof abi_syms[0]; i++)
        if (!strcmp(abi_syms[i].name, name))
            return abi_syms[i].addr;
    return dlsym(RTLD_DEFAULT, name);
}

/* ---------------- metadata the compiler leaves in the object ---------------- */

/* "line\nline\n..." -> array of lines */
static char **split_lines(const char *text, int *n)
{
    int count = 0;
    for (const char *p = text; *p; p++)
        count += *p == '\n';
    char **v = calloc((size_t)count + 1, sizeof(char *));
    if (!v)
        return NULL;
    int i = 0;
    for (const char *p = text; *p && i < count;) {
        const char *e = strchr(p, '\n');
        if (!e)
            break;
        v[i] = strndup(p, (size_t)(e - p));
        if (!v[i])
            break;
        i++;
        p = e + 1;
    }
    *n = i;
    return v;
}

/* "name dtype offset bytes elem_bytes row_pad rank d0 d1 ..." per shared buffer */
static void parse_smem_map(tl_emu_kernel *k, const char *text)
{
    int n = 0;
    char **lines = split_lines(text, &n);
    if (!lines)
        return;
    k->smem_bufs = calloc((size_t)n + 1, sizeof(EmuSmemBuf));
    for (int i = 0; i < n && k->smem_bufs; i++) {
        EmuSmemBuf *b = &k->smem_bufs[k->nsmem_bufs];
        unsigned long long off, bytes;
        long long pad, sh[6] = {0};
        int eb, rank;
        int got = sscanf(lines[i], "%63s %7s %llu %llu %d %lld %d %lld %lld %lld %lld %lld %lld", b->name, b->dtype,
                         &off, &bytes, &eb, &pad, &rank, &sh[0], &sh[1], &sh[2], &sh[3], &sh[4], &sh[5]);
        if (got >= 7 && rank >= 0 && rank <= 6 && got == 7 + rank) {
            b->offset = off;
            b->bytes = bytes;
            b->elem_bytes = eb;
            b->row_pad = pad;
            b->rank = rank;
            for (int d = 0; d < rank; d++)
                b->shape[d] = sh[d];
            k->nsmem_bufs++;
        }
    }
    for (int i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
}

/* ---------------- the loader ---------------- */

typedef struct Loader {
    const uint8_t *obj;
    size_t size;
    const Elf64_Ehdr *eh;
    const Elf64_Shdr *sh;
    int nsec;
    uint64_t *sec_addr;  /* load address per section, 0 if not loaded */
    const Elf64_Sym *syms;
    size_t nsyms;
    const char *strtab;
    size_t strtab_size;
    uint64_t *sym_addr;
    uint64_t *got;       /* GOT slot address per symbol, 0 if none yet */
    uint64_t *stub;      /* call stub address per symbol */
    uint8_t *stub_next, *stub_end;
    uint8_t *got_next, *got_end;
    char *err;
    size_t errcap;
} Loader;

static tl_emu_status lfail(Loader *l, const char *fmt, const char *a)
{
    if (l->err && l->errcap) {
        int n = snprintf(l->err, l->errcap, "cannot load the emulator object: ");
        if (n > 0 && (size_t)n < l->errcap)
            snprintf(l->err + n, l->errcap - (size_t)n, fmt, a ? a : "");
    }
    return TL_EMU_ERROR_INVALID;
}

static bool in_obj(const Loader *l, uint64_t off, uint64_t len) { return off <= l->size && len <= l->size - off; }

static const char *sym_name(const Loader *l, const Elf64_Sym *s)
{
    return s->st_name < l->strtab_size ? l->strtab + s->st_name : "";
}

static bool loaded(const Elf64_Shdr *s) { return (s->sh_flags & SHF_ALLOC) && s->sh_size > 0; }

static uint64_t got_slot(Loader *l, size_t si)
{
    if (!l->got[si]) {
        if (l->got_next + 8 > l->got_end)
            return 0;
        memcpy(l->got_next, &l->sym_addr[si], 8);
        l->got[si] = (uint64_t)(uintptr_t)l->got_next;
        l->got_next += 8;
    }
    return l->got[si];
}

/* jmp *0(%rip); .quad target */
static uint64_t call_stub(Loader *l, size_t si)
{
    if (!l->stub[si]) {
        if (l->stub_next + 16 > l->stub_end)
            return 0;
        static const uint8_t jmp[6] = {0xFF, 0x25, 0, 0, 0, 0};
        memcpy(l->stub_next, jmp, 6);
        memcpy(l->stub_next + 6, &l->sym_addr[si], 8);
        l->stub[si] = (uint64_t)(uintptr_t)l->stub_next;
        l->stub_next += 16;
    }
    return l->stub[si];
}

static bool fits32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

static tl_emu_status relocate(Loader *l, const Elf64_Shdr *rs)
{
    if (rs->sh_info >= (unsigned)l->nsec || !l->sec_addr[rs->sh_info])
        return TL_EMU_OK; /* relocations of a section that is not loaded (debug info) */
    const Elf64_Shdr *target = &l->sh[rs->sh_info];
    if (!in_obj(l, rs->sh_offset, rs->sh_size) || rs->sh_entsize != sizeof(Elf64_Rela))
        return lfail(l, "a malformed relocation section%s", NULL);
    const Elf64_Rela *r = (const Elf64_Rela *)(l->obj + rs->sh_offset);
    size_t n = rs->sh_size / sizeof(Elf64_Rela);
    for (size_t i = 0; i < n; i++) {
        size_t si = ELF64_R_SYM(r[i].r_info);
        uint32_t type = ELF64_R_TYPE(r[i].r_info);
        if (si >= l->nsyms || r[i].r_offset > target->sh_size)
            return lfail(l, "a relocation out of range%s", NULL);
        uint64_t P = l->sec_addr[rs->sh_info] + r[i].r_offset;
        uint64_t S = l->sym_addr[si];
        int64_t A = r[i].r_addend;
        bool ext = l->syms[si].st_shndx == SHN_UNDEF;
        if (ext && !S && ELF64_ST_BIND(l->syms[si].st_info) != STB_WEAK)
            return lfail(l, "undefined symbol '%s'", sym_name(l, &l->syms[si]));
        uint8_t *at = (uint8_t *)(uintptr_t)P;
        size_t room = target->sh_size - r[i].r_offset;
        int64_t v;
        switch (type) {
        case R_X86_64_NONE: break;
        case R_X86_64_64:
            if (room < 8)
                return lfail(l, "a relocation out of range%s", NULL);
            v = (int64_t)(S + (uint64_t)A);
            memcpy(at, &v, 8);
            break;
        case R_X86_64_PC64:
            if (room < 8)
                return lfail(l, "a relocation out of range%s", NULL);
            v = (int64_t)(S + (uint64_t)A - P);
            memcpy(at, &v, 8);
            break;
        case R_X86_64_PC32:
        case R_X86_64_PLT32: {
            if (room < 4)
                return lfail(l, "a relocation out of range%s", NULL);
            v = (int64_t)(S + (uint64_t)A - P);
            if (!fits32(v) && ext) {
                uint64_t st = call_stub(l, si);
                v = (int64_t)(st + (uint64_t)A - P);
                if (!st)
                    return lfail(l, "too many call stubs%s", NULL);
            }
            if (!fits32(v))
                return lfail(l, "'%s' is out of reach of a 32-bit displacement", sym_name(l, &l->syms[si]));
            int32_t v32 = (int32_t)v;
            memcpy(at, &v32, 4);
            break;
        }
        case R_X86_64_GOTPCREL:
        case R_X86_64_GOTPCRELX:
        case R_X86_64_REX_GOTPCRELX: {
            if (room < 4)
                return lfail(l, "a relocation out of range%s", NULL);
            uint64_t g = got_slot(l, si);
            if (!g)
                return lfail(l, "too many GOT entries%s", NULL);
            v = (int64_t)(g + (uint64_t)A - P);
            if (!fits32(v))
                return lfail(l, "a GOT entry is out of reach%s", NULL);
            int32_t v32 = (int32_t)v;
            memcpy(at, &v32, 4);
            break;
        }
        case R_X86_64_32:
        case R_X86_64_32S: {
            if (room < 4)
                return lfail(l, "a relocation out of range%s", NULL);
            v = (int64_t)(S + (uint64_t)A);
            if (type == R_X86_64_32 ? (v < 0 || v > (int64_t)UINT32_MAX) : !fits32(v))
                return lfail(l, "an absolute 32-bit relocation to '%s' (compile with PIC)", sym_name(l, &l->syms[si]));
            uint32_t v32 = (uint32_t)v;
            memcpy(at, &v32, 4);
            break;
        }
        default: {
            char t[32];
            snprintf(t, sizeof t, "%u", type);
            return lfail(l, "unsupported relocation type %s", t);
        }
        }
    }
    return TL_EMU_OK;
}

static void *find_symbol(const tl_emu_kernel *k, const char *name)
{
    for (int i = 0; i < k->nsyms; i++)
        if (!strcmp(k->syms[i], name))
            return k->sym_addr[i];
    return NULL;
}

void *tl_emu_kernel_symbol(const tl_emu_kernel *k, const char *symbol)
{
    return k && symbol ? find_symbol(k, symbol) : NULL;
}

static tl_emu_status load(Loader *l, tl_emu_kernel *k, const char *entry)
{
    if (l->size < sizeof(Elf64_Ehdr))
        return lfail(l, "the object is too short%s", NULL);
    const Elf64_Ehdr *eh = l->eh = (const Elf64_Ehdr *)l->obj;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_ident[EI_DATA] != ELFDATA2LSB)
        return lfail(l, "not a 64-bit little-endian ELF file%s", NULL);
    if (eh->e_type != ET_REL || eh->e_machine != EM_X86_64)
        return lfail(l, "not an x86-64 relocatable object%s", NULL);
    if (eh->e_shentsize != sizeof(Elf64_Shdr) || !in_obj(l, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
        return lfail(l, "malformed section headers%s", NULL);
    l->sh = (const Elf64_Shdr *)(l->obj + eh->e_shoff);
    l->nsec = eh->e_shnum;
    l->sec_addr = calloc((size_t)l->nsec + 1, sizeof(uint64_t));
    if (!l->sec_addr)
        return TL_EMU_ERROR_SYSTEM;
    /* the symbol table */
    for (int i = 0; i < l->nsec; i++) {
        const Elf64_Shdr *s = &l->sh[i];
        if (s->sh_type != SHT_SYMTAB)
            continue;
        if (s->sh_entsize != sizeof(Elf64_Sym) || !in_obj(l, s->sh_offset, s->sh_size) || s->sh_link >= (unsigned)l->nsec)
            return lfail(l, "a malformed symbol table%s", NULL);
        const Elf64_Shdr *st = &l->sh[s->sh_link];
        if (!in_obj(l, st->sh_offset, st->sh_size) || st->sh_size == 0 || l->obj[st->sh_offset + st->sh_size - 1])
            return lfail(l, "a malformed string table%s", NULL);
        l->syms = (const Elf64_Sym *)(l->obj + s->sh_offset);
        l->nsyms = s->sh_size / sizeof(Elf64_Sym);
        l->strtab = (const char *)(l->obj + st->sh_offset);
        l->strtab_size = st->sh_size;
    }
    if (!l->syms)
        return lfail(l, "no symbol table%s", NULL);
    /* layout: code, call stubs | data, GOT; each part page-aligned */
    uint64_t off = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < l->nsec; i++) {
            const Elf64_Shdr *s = &l->sh[i];
            if (!loaded(s) || ((s->sh_flags & SHF_EXECINSTR) != 0) != (pass == 0))
                continue;
            if (s->sh_type != SHT_NOBITS && !in_obj(l, s->sh_offset, s->sh_size))
                return lfail(l, "a section lies outside the file%s", NULL);
            uint64_t al = s->sh_addralign > 1 ? s->sh_addralign : 1;
            if (al > 4096 || (al & (al - 1)))
                return lfail(l, "a section has an unsupported alignment%s", NULL);
            off = (off + al - 1) & ~(al - 1);
            l->sec_addr[i] = off + 1; /* offset + 1 until the mapping exists */
            off += s->sh_size;
        }
        if (pass == 0) {
            off = (off + 15) & ~(uint64_t)15;
            off += 16 * l->nsyms; /* call stubs */
            off = (off + 4095) & ~(uint64_t)4095;
        }
    }
    uint64_t code_end = 0;
    for (int i = 0; i < l->nsec; i++)
        if (l->sec_addr[i] && (l->sh[i].sh_flags & SHF_EXECINSTR) && l->sec_addr[i] - 1 + l->sh[i].sh_size > code_end)
            code_end = l->sec_addr[i] - 1 + l->sh[i].sh_size;
    uint64_t stubs_off = (code_end + 15) & ~(uint64_t)15;
    uint64_t text_size = (stubs_off + 16 * l->nsyms + 4095) & ~(uint64_t)4095;
    off = (off + 7) & ~(uint64_t)7;
    uint64_t got_off = off;
    off += 8 * l->nsyms;
    size_t map_size = (size_t)((off + 4095) & ~(uint64_t)4095);
    uint8_t *map = mmap(NULL, map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        return TL_EMU_ERROR_SYSTEM;
    k->map = map;
    k->map_size = map_size;
    for (int i = 0; i < l->nsec; i++) {
        if (!l->sec_addr[i])
            continue;
        uint64_t o = l->sec_addr[i] - 1;
        l->sec_addr[i] = (uint64_t)(uintptr_t)(map + o);
        if (l->sh[i].sh_type != SHT_NOBITS)
            memcpy(map + o, l->obj + l->sh[i].sh_offset, l->sh[i].sh_size);
    }
    l->stub_next = map + stubs_off;
    l->stub_end = map + stubs_off + 16 * l->nsyms;
    l->got_next = map + got_off;
    l->got_end = map + got_off + 8 * l->nsyms;
    /* symbols */
    l->sym_addr = calloc(l->nsyms + 1, sizeof(uint64_t));
    l->got = calloc(l->nsyms + 1, sizeof(uint64_t));
    l->stub = calloc(l->nsyms + 1, sizeof(uint64_t));
    k->syms = calloc(l->nsyms + 1, sizeof(char *));
    k->sym_addr = calloc(l->nsyms + 1, sizeof(void *));
    if (!l->sym_addr || !l->got || !l->stub || !k->syms || !k->sym_addr)
        return TL_EMU_ERROR_SYSTEM;
    for (size_t i = 1; i < l->nsyms; i++) {
        const Elf64_Sym *s = &l->syms[i];
        const char *name = sym_name(l, s);
        if (s->st_shndx == SHN_UNDEF) {
            if (*name)
                l->sym_addr[i] = (uint64_t)(uintptr_t)resolve_external(name);
        } else if (s->st_shndx == SHN_ABS) {
            l->sym_addr[i] = s->st_value;
        } else if (s->st_shndx < l->nsec && l->sec_addr[s->st_shndx]) {
            l->sym_addr[i] = l->sec_addr[s->st_shndx] + s->st_value;
            if (*name && ELF64_ST_TYPE(s->st_info) != STT_SECTION) {
                k->syms[k->nsyms] = strdup(name);
                k->sym_addr[k->nsyms++] = (void *)(uintptr_t)l->sym_addr[i];
            }
        } else if (s->st_shndx == SHN_COMMON) {
            return lfail(l, "common symbol '%s' (not supported)", name);
        }
    }
    for (int i = 0; i < l->nsec; i++)
        if (l->sh[i].sh_type == SHT_RELA) {
            tl_emu_status st = relocate(l, &l->sh[i]);
            if (st != TL_EMU_OK)
                return st;
        } else if (l->sh[i].sh_type == SHT_REL && l->sh[i].sh_info < (unsigned)l->nsec && l->sec_addr[l->sh[i].sh_info]) {
            return lfail(l, "REL relocations (x86-64 objects use RELA)%s", NULL);
        }
    if (mprotect(map, (size_t)text_size, PROT_READ | PROT_EXEC) != 0)
        return TL_EMU_ERROR_SYSTEM;
    /* the entry wrapper and the metadata */
    char wrapper[512];
    snprintf(wrapper, sizeof wrapper, "__tl_emu_%s", entry);
    k->fn = (void (*)(void **))find_symbol(k, wrapper);
    if (!k->fn)
        return lfail(l, "no entry '%s' in the object", wrapper);
    const char *sites = find_symbol(k, "__tl_emu_sites");
    if (sites)
        k->sites = split_lines(sites, &k->nsites);
    const char *smem = find_symbol(k, "__tl_emu_smem");
    if (smem)
        parse_smem_map(k, smem);
    /* gdb reads a copy of the object whose sections carry their load addresses */
    char *image = malloc(l->size);
    if (image) {
        memcpy(image, l->obj, l->size);
        Elf64_Shdr *sh = (Elf64_Shdr *)(image + eh->e_shoff);
        for (int i = 0; i < l->nsec; i++)
            if (l->sec_addr[i])
                sh[i].sh_addr = l->sec_addr[i];
        gdb_register(k, image, l->size);
    }
    return TL_EMU_OK;
}

tl_emu_status tl_emu_kernel_load(const void *object, size_t size, const char *entry, const char *name,
                                 tl_emu_kernel **out, char *err, size_t errcap)
{
    if (out)
        *out = NULL;
    if (err && errcap)
        err[0] = 0;
    if (!object || !entry || !out) {
        if (err && errcap)
            snprintf(err, errcap, "tl_emu_kernel_load: NULL object, entry or result");
        return TL_EMU_ERROR_INVALID;
    }
    tl_emu_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return TL_EMU_ERROR_SYSTEM;
    k->name = strdup(name ? name : entry);
    Loader l = {0};
    l.obj = object;
    l.size = size;
    l.err = err;
    l.errcap = errcap;
    tl_emu_status st = k->name ? load(&l, k, entry) : TL_EMU_ERROR_SYSTEM;
    free(l.sec_addr);
    free(l.sym_addr);
    free(l.got);
    free(l.stub);
    if (st != TL_EMU_OK) {
        if (st == TL_EMU_ERROR_SYSTEM && err && errcap && !err[0])
            snprintf(err, errcap, "cannot load the emulator object: out of memory or mapping failed");
        tl_emu_kernel_free(k);
        return st;
    }
    *out = k;
    return TL_EMU_OK;
}

tl_emu_status tl_emu_kernel_from_fn(void (*fn)(void **params), const char *name, tl_emu_kernel **out)
{
    if (!fn || !out)
        return TL_EMU_ERROR_INVALID;
    tl_emu_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return TL_EMU_ERROR_SYSTEM;
    k->fn = fn;
    k->name = strdup(name ? name : "kernel");
    *out = k;
    return TL_EMU_OK;
}

void tl_emu_kernel_free(tl_emu_kernel *k)
{
    if (!k)
        return;
    gdb_unregister(k);
    if (k->map)
        munmap(k->map, k->map_size);
    for (int i = 0; i < k->nsyms; i++)
        free(k->syms[i]);
    free(k->syms);
    free(k->sym_addr);
    for (int i = 0; i < k->nsites; i++)
        free(k->sites[i]);
    free(k->sites);
    free(k->smem_bufs);
    free(k->name);
    free(k);
}
