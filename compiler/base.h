/* base.h — small utilities shared by every layer of the compiler: the arena allocator,
 * growable arrays, string helpers and the limits that keep hostile input bounded. */
#ifndef TILEC_BASE_H
#define TILEC_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bounds on user input: exceeding any of them is a diagnostic, never a crash. */
enum {
    TL_MAX_SOURCE_BYTES = 8 << 20,   /* one .tl file */
    TL_MAX_FILES = 256,              /* files per compilation (imports included) */
    TL_MAX_IMPORT_DEPTH = 32,
    TL_MAX_NESTING = 200,            /* expression / statement nesting depth */
    TL_MAX_EXPR_HEIGHT = 500,        /* operations inside one another in an expression, binary ones too */
    TL_MAX_CHECK_NESTING = 1000,     /* expressions and statements one inside the other, through inlining */
    TL_MAX_ERRORS = 20,              /* errors printed before giving up */
    TL_MAX_RANK = 6,                 /* tensor and tile rank */
    TL_MAX_TILE_ELEMS = 1 << 20,     /* elements of one shared/frag/local tile */
    TL_MAX_UNROLL = 4096,            /* iterations of one unrolled loop, and their product along a nest */
    TL_MAX_UNROLL_TOTAL = 16384,     /* copies of unrolled loop bodies in a kernel (the sum over its loops) */
    TL_MAX_CODE_SIZE = 1 << 16,      /* operations of a kernel's code after lowering and unrolling */
    TL_MAX_LLVM_BLOCK = 1 << 14,     /* LLVM instructions of a basic block before optimisation */
    TL_MAX_SPECIALIZATIONS = 4096,   /* instances of one `specialize` declaration */
    TL_MAX_IDENT = 128,
    TL_MAX_INLINE_DEPTH = 32,        /* nested fn calls being inlined */
    TL_MAX_INLINE_NODES = 1 << 16,   /* syntax nodes of fn bodies inlined into one kernel */
    TL_MAX_CHECKED_NODES = 1 << 21,  /* syntax nodes checked by one compilation (see sema.h) */
    TL_MAX_GENERICS = 16,            /* generic parameters of one kernel or fn */
    TL_MAX_PARAMS = 64,              /* parameters of one kernel */
    TL_MAX_LIST = 4096,              /* elements of one tensor list parameter (its `max`) */
    TL_LIST_DEFAULT_MAX = 64,        /* ... when neither its length nor `max = N` fixes it */
    TL_MAX_PARAM_BYTES = 32764,      /* kernel parameter space (CUDA 12.1+, sm_70 and newer) */
};

/* ---- arena: one per compilation, freed at once ---- */
typedef struct ArenaBlock ArenaBlock;
typedef struct Arena {
    ArenaBlock *head;
    size_t used_total;
} Arena;

void arena_init(Arena *a);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t size);            /* zeroed, 16-byte aligned */
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *arena_vprintf(Arena *a, const char *fmt, va_list ap);
#define ARENA_NEW(a, T) ((T *)arena_alloc((a), sizeof(T)))
#define ARENA_ARRAY(a, T, n) ((T *)arena_alloc((a), sizeof(T) * (size_t)(n)))

/* ---- growable array of pointers (heap-backed, owner frees) ---- */
typedef struct PtrVec {
    void **items;
    int len, cap;
} PtrVec;
void ptrvec_push(PtrVec *v, void *p);
void ptrvec_free(PtrVec *v);

/* ---- growable byte buffer (heap-backed) ---- */
typedef struct StrBuf {
    char *data;
    size_t len, cap;
} StrBuf;
void sb_append(StrBuf *b, const char *s, size_t n);
void sb_puts(StrBuf *b, const char *s);
void sb_printf(StrBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vprintf(StrBuf *b, const char *fmt, va_list ap);
void sb_free(StrBuf *b);
char *sb_take(StrBuf *b); /* returns malloc'd NUL-terminated string, resets b */

/* Out-of-memory in the compiler: report and abort; this is the only abort path and it is
 * not reachable from user input (all input sizes are bounded above). */
void tl_oom(void) __attribute__((noreturn));
void *tl_xmalloc(size_t n);
void *tl_xrealloc(void *p, size_t n);
void *tl_xcalloc(size_t n, size_t m);

uint64_t tl_hash_bytes(const void *data, size_t n, uint64_t seed); /* FNV-1a 64 */
bool tl_is_pow2(int64_t v);
int tl_log2_floor(uint64_t v);
int64_t tl_gcd(int64_t a, int64_t b);   /* greatest common divisor, never negative */

#endif
