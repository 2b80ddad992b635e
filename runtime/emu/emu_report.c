/* emu_report.c — what the emulator's reports are made of: the launch's first error (which
 * stops it), growing message text, and the names of blocks and runs of threads. */
#include "emu_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void emu_appendf(char **s, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    char *p = realloc(*s, *len + (size_t)n + 1);
    if (!p)
        return;
    va_start(ap, fmt);
    vsnprintf(p + *len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    *s = p;
    *len += (size_t)n;
}

void emu_fail(EmuLaunch *L, tl_emu_status st, const char *fmt, ...)
{
    pthread_mutex_lock(&L->lock);
    if (L->status == TL_EMU_OK) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        L->msg = malloc(n > 0 ? (size_t)n + 1 : 1);
        if (L->msg) {
            va_start(ap, fmt);
            vsnprintf(L->msg, n > 0 ? (size_t)n + 1 : 1, fmt, ap);
            va_end(ap);
        }
        L->status = st;
    }
    pthread_mutex_unlock(&L->lock);
    atomic_store(&L->stop, 1);
}

void emu_block_name(const EmuBlock *b, char *buf, size_t n)
{
    snprintf(buf, n, "block (%u,%u,%u)", b->ctaid[0], b->ctaid[1], b->ctaid[2]);
}

/* "0-31, 40, 64-95" */
void emu_thread_ranges(char *buf, size_t n, const int *tids, int count)
{
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < count && len + 1 < n;) {
        int j = i;
        while (j + 1 < count && tids[j + 1] == tids[j] + 1)
            j++;
        int w = j > i ? snprintf(buf + len, n - len, "%s%d-%d", len ? ", " : "", tids[i], tids[j])
                      : snprintf(buf + len, n - len, "%s%d", len ? ", " : "", tids[i]);
        if (w < 0)
            break;
        len += (size_t)w;
        if (len >= n)
            break;
        i = j + 1;
    }
}
