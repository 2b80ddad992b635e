/* emu_printf.c — the vprintf system call as PTX code makes it: a format string and a buffer
 * holding the arguments, each at an offset aligned to its size, after C's default promotions.
 * The format decides how many bytes each conversion reads, as on the GPU: no length modifier
 * (or hh, h) is 4 bytes, l, ll, z, j, t are 8, floating conversions read a double, %s and %p
 * a pointer. The text of one call goes to the output in one piece. */
#include "emu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void out_default(void *ctx, const char *text, size_t n)
{
    (void)ctx;
    fwrite(text, 1, n, stdout);
    fflush(stdout);
}

int32_t tl_emu_vprintf(const char *format, const void *args)
{
    const uint8_t *buf = args;
    size_t off = 0;
    char *out = NULL;
    size_t len = 0;
    int nargs = 0;
    for (const char *p = format ? format : ""; *p;) {
        if (*p != '%') {
            const char *q = strchr(p, '%');
            size_t n = q ? (size_t)(q - p) : strlen(p);
            emu_appendf(&out, &len, "%.*s", (int)n, p);
            p += n;
            continue;
        }
        if (p[1] == '%') {
            emu_appendf(&out, &len, "%%");
            p += 2;
            continue;
        }
        /* %[flags][width][.precision][length]conversion, rebuilt without the length */
        char spec[64];
        size_t sl = 0;
        const char *q = p + 1;
        spec[sl++] = '%';
        while (*q && strchr("-+ #0'", *q) && sl < 40)
            spec[sl++] = *q++;
        while (*q >= '0' && *q <= '9' && sl < 48)
            spec[sl++] = *q++;
        if (*q == '.') {
            spec[sl++] = *q++;
            while (*q >= '0' && *q <= '9' && sl < 56)
                spec[sl++] = *q++;
        }
        int wide = 0;
        while (*q && strchr("hlLqjzt", *q)) {
            if (strchr("lLqjzt", *q))
                wide = 1;
            q++;
        }
        char conv = *q;
        if (!conv) {
            emu_appendf(&out, &len, "%s", p);
            break;
        }
        q++;
        size_t size = 4;
        if (strchr("fFeEgGaA", conv) || strchr("sp", conv) || wide)
            size = 8;
        if (strchr("diouxXcfFeEgGaAsp", conv) == NULL) {
            /* not a conversion the GPU formats: print it as written */
            emu_appendf(&out, &len, "%.*s", (int)(q - p), p);
            p = q;
            continue;
        }
        off = (off + size - 1) / size * size;
        uint64_t raw = 0;
        if (buf)
            memcpy(&raw, buf + off, size);
        off += size;
        nargs++;
        if (strchr("fFeEgGaA", conv)) {
            double d;
            memcpy(&d, &raw, 8);
            spec[sl++] = conv;
            spec[sl] = 0;
            emu_appendf(&out, &len, spec, d);
        } else if (conv == 's') {
            /* kernels cannot pass strings; print the pointer as the GPU's formatter could not */
            emu_appendf(&out, &len, "(string 0x%llx)", (unsigned long long)raw);
        } else if (conv == 'p') {
            spec[sl++] = 'p';
            spec[sl] = 0;
            emu_appendf(&out, &len, spec, (void *)(uintptr_t)raw);
        } else if (conv == 'c') {
            spec[sl++] = 'c';
            spec[sl] = 0;
            emu_appendf(&out, &len, spec, (int)(uint32_t)raw);
        } else {
            spec[sl++] = 'l';
            spec[sl++] = 'l';
            spec[sl++] = conv;
            spec[sl] = 0;
            bool sgn = conv == 'd' || conv == 'i';
            if (size == 4)
                raw = sgn ? (uint64_t)(int64_t)(int32_t)(uint32_t)raw : (uint64_t)(uint32_t)raw;
            if (sgn)
                emu_appendf(&out, &len, spec, (long long)raw);
            else
                emu_appendf(&out, &len, spec, (unsigned long long)raw);
        }
        p = q;
    }
    EmuWorker *w = emu_tls;
    if (out) {
        if (w && w->L) {
            EmuLaunch *L = w->L;
            pthread_mutex_lock(&L->lock);
            (L->output ? L->output : out_default)(L->output_ctx, out, len);
            pthread_mutex_unlock(&L->lock);
        } else {
            out_default(NULL, out, len);
        }
    }
    free(out);
    return nargs;
}
