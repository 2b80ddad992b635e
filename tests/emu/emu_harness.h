/* emu_harness.h — what the emulator tests share: compile a kernel for the host target through
 * libtilec, load it into the emulator, bind arguments as the kernel parameter ABI lays them out
 * (tilec/compiler.h), compute the grid from the signature, launch; plus small checking helpers.
 * (The runtime does the same work for programs; these tests do not depend on it.) */
#ifndef TILEC_TESTS_EMU_HARNESS_H
#define TILEC_TESTS_EMU_HARNESS_H

#include "tilec/compiler.h"
#include "tilec/tl_emu.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EH_MAX_PARAMS 64

typedef struct EhParam {
    bool tensor;
    char name[64];
    char dtype[8];
    int rank;
    char *dims[6], *strides[6];   /* signature expressions */
} EhParam;

typedef struct EhKernel {
    tl_emu_kernel *k;
    char *signature;
    char key[256];
    int threads;
    size_t smem;
    bool cooperative;
    int nparams;
    EhParam params[EH_MAX_PARAMS];
    char *grid[3];
    int ngrid;
    char *requires[16];
    int nrequires;
} EhKernel;

typedef struct EhArg {
    bool tensor;
    void *data;
    int rank;
    int64_t shape[6], strides[6];
    uint64_t bits;                /* scalars: the value's bytes (little-endian) */
    int size;                     /* scalars: bytes */
    double fval;                  /* scalars: the value for signature expressions */
} EhArg;

/* Compiles `kernel` of the .tl file (or source text when `source` is non-NULL, `path` then
 * names it) with generics "NAME=VALUE", for the host. Prints diagnostics and returns false on
 * errors. */
bool eh_compile(const char *path, const char *source, const char *kernel, const char *const *generics, int ngenerics,
                EhKernel *out);
/* the same at an optimisation level other than the runtime's default 3 */
bool eh_compile_opt(const char *path, const char *source, const char *kernel, const char *const *generics,
                    int ngenerics, int opt_level, EhKernel *out);
void eh_free(EhKernel *k);

EhArg eh_tensor(void *data, int rank, const int64_t *shape, const int64_t *strides);
EhArg eh_i32(int32_t v);
EhArg eh_i64(int64_t v);
EhArg eh_f32(float v);
EhArg eh_bool(bool v);

/* Checks the arguments against the signature (shapes, strides, requires), computes the grid and
 * launches. Returns the emulator's status; argument errors are TL_EMU_ERROR_INVALID with a
 * message in err. opts may be NULL (one worker, racecheck on). */
tl_emu_status eh_run(EhKernel *k, const EhArg *args, int nargs, const tl_emu_options *opts, char *err, size_t errcap);

/* ---- checks ---- */
extern int eh_failures;
#define EH_CHECK(cond, ...)                                                                              \
    do {                                                                                                 \
        if (!(cond)) {                                                                                   \
            eh_failures++;                                                                               \
            eh_report(__FILE__, __LINE__, __VA_ARGS__);                                                  \
        }                                                                                                \
    } while (0)
void eh_report(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* the number of differing bytes; prints the first few */
size_t eh_compare_bytes(const char *what, const void *got, const void *want, size_t n, size_t elem);
/* xorshift random numbers, reproducible */
uint64_t eh_rand(uint64_t *s);
float eh_randn(uint64_t *s);
/* the source directory of the kernels (set by CMake) */
const char *eh_source_dir(void);
int eh_finish(const char *name);

#endif
