/* driver.h — the tilec commands (check, list, emit: driver.c; build: build.c) and what they
 * share: the options, loading the program, the architectures, printing the diagnostics. */
#ifndef TILEC_DRIVER_H
#define TILEC_DRIVER_H

#include "sema.h"

typedef struct DriverOptions {
    const char *stage;        /* emit: ast, tir, llvm, ptx, cubin */
    const char *arch;         /* "sm_90a", "sm_100a" or a comma list (check, build) */
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

/* The program of FILE and its imports into c (which it initialises) with the options' import
 * directories, defines and -Werror; with `resolve`, the module-level checks too. False after
 * errors, which stay in c's diagnostics; c is freed by comp_free either way. */
bool driver_load(Compilation *c, const DriverOptions *o, const char *file, bool resolve);
/* The architecture of a name ("sm_90a" -> 90, "sm_100a" -> 100; "sm_90", "sm_100" too), or 0
 * after a message on stderr. */
int driver_arch(const char *name);
/* The architectures of a comma list, each once, into sms; their number, or 0 after a message. */
int driver_arch_list(const char *list, int sms[2]);
/* Writes n bytes to the file at path (created or truncated); false after a message on stderr
 * ("cannot write 'PATH': why") when it cannot be opened, written or closed. */
bool driver_write_file(const char *path, const void *data, size_t n);
/* Whether output names one of the files c loaded (the input or an import: the same file, by
 * device and inode), after an error in c's diagnostics. Checked before anything is written. */
bool driver_output_is_source(Compilation *c, const char *output);
/* Prints c's diagnostics (and forgets them); the exit status they call for: 0, 1 (errors in the
 * input) or 2 (an internal error). */
int driver_flush(Compilation *c);

int driver_check(const DriverOptions *o, const char *file);
int driver_list(const DriverOptions *o, const char *file);
int driver_emit(const DriverOptions *o, const char *file);
int driver_build(const DriverOptions *o, const char *file);

#endif
