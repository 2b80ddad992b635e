/* cuda_tools.h — what compiling needs from the host machine, kept apart from the pipeline: the
 * CUDA toolkit's programs (ptxas, nvlink, fatbinary) and running them, private temporary
 * directories, and the phase timer of TILEC_TIMING. */
#ifndef TILEC_CUDA_TOOLS_H
#define TILEC_CUDA_TOOLS_H

#include "diag.h"

/* The path of a CUDA toolkit program: under $TILEC_CUDA_HOME/bin when that is set, else under
 * $CUDA_HOME/bin or /usr/local/cuda/bin. False if it is not there (or path is too small). */
bool tool_find(const char *name, char *path, size_t size);
void tool_places(StrBuf *out);      /* where tool_find looks, for messages */

/* A new private directory $TMPDIR/tilec-WHAT-XXXXXX (TMPDIR unset or empty: /tmp), malloc'd;
 * NULL with errno set if it cannot be made. */
char *tool_temp_dir(const char *what);
const char *tool_temp_base(void);
/* Writes data to DIR/NAME; the path (malloc'd), or NULL with errno set (nothing left behind). */
char *tool_write_file(const char *dir, const char *name, const void *data, size_t n);

/* The whole file at path (malloc'd, NUL-terminated; its size in *n), or NULL. */
char *tool_read_file(const char *path, size_t *n);

/* Runs argv[0] with argv; with out, its standard output and error are captured there, else they
 * go where tilec's go. The exit status, or -1 if it could not run. */
int tool_run(char *const argv[], StrBuf *out);

/* ptxas: PTX text -> cubin bytes (malloc'd). info (optional) receives ptxas -v output. False
 * after a diagnostic in d. */
bool tool_ptxas(DiagEngine *d, const char *ptx, size_t n, int sm, int opt_level, bool relocatable, char **cubin,
                size_t *cubin_size, StrBuf *info);

/* Milliseconds of a monotonic clock. tool_phase: with TILEC_TIMING set, prints the time since *t
 * as phase NAME to stderr; sets *t to now either way. */
double tool_ms_now(void);
void tool_phase(const char *name, double *t);

#endif
