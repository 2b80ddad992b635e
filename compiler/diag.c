/* diag.c — renders `file:line:col: error: message`, the source line and a caret/underline. */
#include "diag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void diag_init(DiagEngine *d)
{
    memset(d, 0, sizeof *d);
    d->max_errors = TL_MAX_ERRORS;
}

void diag_free(DiagEngine *d)
{
    for (int i = 0; i < d->nfiles; i++) {
        free(d->files[i]->path);
        free(d->files[i]->text);
        free(d->files[i]->line_starts);
        free(d->files[i]);
    }
    d->nfiles = 0;
    sb_free(&d->out);
}

int diag_add_file(DiagEngine *d, const char *path, const char *text, size_t len)
{
    if (d->nfiles >= TL_MAX_FILES)
        return -1;
    SourceFile *f = tl_xcalloc(1, sizeof *f);
    f->path = tl_xmalloc(strlen(path) + 1);
    strcpy(f->path, path);
    f->text = tl_xmalloc(len + 1);
    memcpy(f->text, text, len);
    f->text[len] = 0;
    f->len = (uint32_t)len;
    int cap = 64;
    f->line_starts = tl_xmalloc(sizeof(uint32_t) * (size_t)cap);
    f->line_starts[0] = 0;
    f->nlines = 1;
    /* a line ends at LF, CR LF or a lone CR, as in the lexer */
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '\n' || (text[i] == '\r' && (i + 1 == len || text[i + 1] != '\n'))) {
            if (f->nlines == cap) {
                cap *= 2;
                f->line_starts = tl_xrealloc(f->line_starts, sizeof(uint32_t) * (size_t)cap);
            }
            f->line_starts[f->nlines++] = (uint32_t)(i + 1);
        }
    }
    d->files[d->nfiles] = f;
    return d->nfiles++;
}

static int find_line(const SourceFile *f, uint32_t off)
{
    int lo = 0, hi = f->nlines - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (f->line_starts[mid] <= off)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Columns count code points, so that a caret under UTF-8 text lines up. */
static int count_cols(const char *s, uint32_t n)
{
    int c = 0;
    for (uint32_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            c++;
    return c;
}

void diag_line_col(const DiagEngine *d, Loc loc, int *line, int *col)
{
    *line = 0;
    *col = 0;
    if (loc.file < 0 || loc.file >= d->nfiles)
        return;
    const SourceFile *f = d->files[loc.file];
    uint32_t off = loc.begin > f->len ? f->len : loc.begin;
    int l = find_line(f, off);
    *line = l + 1;
    *col = count_cols(f->text + f->line_starts[l], off - f->line_starts[l]) + 1;
}

enum { SNIPPET_MAX = 160, SNIPPET_BEFORE = 60 }; /* bytes of a long source line shown */

static void render_snippet(DiagEngine *d, Loc loc)
{
    const SourceFile *f = d->files[loc.file];
    uint32_t off = loc.begin > f->len ? f->len : loc.begin;
    int l = find_line(f, off);
    uint32_t ls = f->line_starts[l];
    uint32_t le = ls;
    while (le < f->len && f->text[le] != '\n' && f->text[le] != '\r')
        le++;
    /* a long line (generated or minified code) is shown as a window around the caret, so that
     * each diagnostic prints a bounded amount of text */
    uint32_t ws = ls, we = le;
    if (le - ls > SNIPPET_MAX) {
        if (off > ls + SNIPPET_BEFORE)
            ws = off - SNIPPET_BEFORE;
        while (ws > ls && ((unsigned char)f->text[ws] & 0xC0) == 0x80)
            ws--;
        we = ws + SNIPPET_MAX < le ? ws + SNIPPET_MAX : le;
        while (we < le && ((unsigned char)f->text[we] & 0xC0) == 0x80)
            we++;
    }
    /* a caret past the end of the line (e.g. at end of file) points just after it */
    uint32_t end = loc.end;
    if (end <= off)
        end = off + 1;
    if (end > we)
        end = we > off ? we : off + 1;
    char gutter[32];
    int gw = snprintf(gutter, sizeof gutter, "%d", l + 1);
    if (gw < 4)
        gw = 4;
    sb_printf(&d->out, " %*d | %s", gw, l + 1, ws > ls ? "..." : "");
    for (uint32_t i = ws; i < we; i++) {
        char c = f->text[i];
        /* control characters would garble the terminal; show them as '?' */
        if ((unsigned char)c < 0x20 && c != '\t')
            c = '?';
        sb_append(&d->out, &c, 1);
    }
    sb_puts(&d->out, we < le ? "...\n" : "\n");
    sb_printf(&d->out, " %*s | %s", gw, "", ws > ls ? "   " : "");
    for (uint32_t i = ws; i < off; i++) {
        unsigned char c = (unsigned char)f->text[i];
        if ((c & 0xC0) == 0x80)
            continue;
        sb_append(&d->out, c == '\t' ? "\t" : " ", 1);
    }
    sb_puts(&d->out, "^");
    for (uint32_t i = off + 1; i < end; i++) {
        unsigned char c = (unsigned char)f->text[i];
        if ((c & 0xC0) == 0x80)
            continue;
        sb_puts(&d->out, "~");
    }
    sb_puts(&d->out, "\n");
}

static void emit(DiagEngine *d, DiagLevel level, Loc loc, const char *fmt, va_list ap)
{
    static const char *names[] = {"error", "warning", "note"};
    if (level == DIAG_NOTE) {
        if (!d->last_printed)
            return;
    } else {
        if (level == DIAG_ERROR)
            d->nerrors++;
        else
            d->nwarnings++;
        if (level == DIAG_ERROR && d->nerrors > d->max_errors) {
            if (!d->capped) {
                d->capped = true;
                sb_printf(&d->out, "tilec: error: too many errors (%d); stopping\n", d->max_errors);
            }
            d->last_printed = false;
            return;
        }
        if (d->capped) {
            d->last_printed = false;
            return;
        }
        /* warnings are bounded like errors, so that no input prints without end */
        if (level == DIAG_WARNING && d->nwarnings > d->max_errors) {
            if (!d->warnings_capped) {
                d->warnings_capped = true;
                sb_printf(&d->out, "tilec: warning: too many warnings (%d); not showing the others\n", d->max_errors);
            }
            d->last_printed = false;
            return;
        }
        d->last_printed = true;
    }
    if (loc.file >= 0 && loc.file < d->nfiles) {
        int line, col;
        diag_line_col(d, loc, &line, &col);
        sb_printf(&d->out, "%s:%d:%d: %s: ", d->files[loc.file]->path, line, col, names[level]);
        sb_vprintf(&d->out, fmt, ap);
        sb_puts(&d->out, "\n");
        render_snippet(d, loc);
    } else {
        sb_printf(&d->out, "tilec: %s: ", names[level]);
        sb_vprintf(&d->out, fmt, ap);
        sb_puts(&d->out, "\n");
    }
}

void diag_verror(DiagEngine *d, Loc loc, const char *fmt, va_list ap)
{
    emit(d, DIAG_ERROR, loc, fmt, ap);
}

void diag_error(DiagEngine *d, Loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit(d, DIAG_ERROR, loc, fmt, ap);
    va_end(ap);
}

void diag_warning(DiagEngine *d, Loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit(d, d->werror ? DIAG_ERROR : DIAG_WARNING, loc, fmt, ap);
    va_end(ap);
}

void diag_note(DiagEngine *d, Loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit(d, DIAG_NOTE, loc, fmt, ap);
    va_end(ap);
}

void diag_ice(DiagEngine *d, const char *pass, const char *fmt, ...)
{
    d->ice = true;
    d->nerrors++;
    d->last_printed = true;
    sb_printf(&d->out, "tilec: internal compiler error in %s: ", pass);
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&d->out, fmt, ap);
    va_end(ap);
    sb_puts(&d->out, "\n");
}
