/* diag.h — source files, locations and diagnostics.
 * Locations are byte offsets into a file; line:col is computed only when printing. */
#ifndef TILEC_DIAG_H
#define TILEC_DIAG_H

#include "base.h"

typedef struct Loc {
    int file;          /* index into DiagEngine.files; -1 = no location */
    uint32_t begin;    /* byte offsets, [begin, end) */
    uint32_t end;
} Loc;

static inline Loc loc_none(void) { Loc l = {-1, 0, 0}; return l; }
static inline Loc loc_span(Loc a, Loc b)
{
    Loc l = a;
    if (b.file == a.file && b.end > l.end)
        l.end = b.end;
    return l;
}

typedef struct SourceFile {
    char *path;        /* as given by the user (or resolved import path) */
    char *text;        /* NUL-terminated, owned */
    uint32_t len;
    uint32_t *line_starts;
    int nlines;
} SourceFile;

typedef enum { DIAG_ERROR, DIAG_WARNING, DIAG_NOTE } DiagLevel;

typedef struct DiagEngine {
    SourceFile *files[TL_MAX_FILES];
    int nfiles;
    int nerrors, nwarnings;
    int max_errors;
    bool capped;        /* error cap reached; further errors are counted, not printed */
    bool warnings_capped; /* as many warnings printed as errors may be; the rest are counted */
    bool ice;           /* an internal compiler error was reported */
    bool last_printed;  /* whether the last error/warning was printed (notes follow it) */
    bool werror;
    StrBuf out;         /* rendered diagnostics, in order */
} DiagEngine;

void diag_init(DiagEngine *d);
void diag_free(DiagEngine *d);

/* Adds a file's text (copied). Returns the file index, or -1 when too many files. */
int diag_add_file(DiagEngine *d, const char *path, const char *text, size_t len);
void diag_line_col(const DiagEngine *d, Loc loc, int *line, int *col);

void diag_error(DiagEngine *d, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_warning(DiagEngine *d, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_note(DiagEngine *d, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_verror(DiagEngine *d, Loc loc, const char *fmt, va_list ap);
/* Internal invariant failure: never the user's fault. Printed as
 * "internal compiler error in PASS: message". */
void diag_ice(DiagEngine *d, const char *pass, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static inline bool diag_has_errors(const DiagEngine *d) { return d->nerrors > 0; }

#endif
