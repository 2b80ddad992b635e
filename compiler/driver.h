/* driver.h — the pipeline as the CLI and the runtime drive it. */
#ifndef TILEC_DRIVER_H
#define TILEC_DRIVER_H

#include "sema.h"

#define TILEC_VERSION "0.1.0"

typedef struct DriverOptions {
    const char *stage;        /* emit: ast, tir, llvm, ptx, cubin */
    const char *arch;         /* "sm_90a", "sm_100a" or a comma list (build) */
    const char *target;       /* NULL (the GPU) or "host" (the CPU emulator) */
    const char *dump_after;   /* TIR pass name or "all" */
    const char **include_dirs;
    int ninclude;
    Define *defines;
    int ndefines;
    const char *kernel;
    const char **generic_assigns;
    int ngenerics;
    const char *output;
    int opt_level;
    int jobs;
    bool werror;
} DriverOptions;

void driver_options_init(DriverOptions *o);
const char *driver_llvm_version(void);
int driver_check(const DriverOptions *o, const char *file);
int driver_list(const DriverOptions *o, const char *file);
int driver_emit(const DriverOptions *o, const char *file);
int driver_build(const DriverOptions *o, const char *file);

#endif
