/* rt_error.c — the thread-local error message behind tilec_rt_last_error, status names, and the
 * once-per-process cache warning. */
#include <stdio.h>
#include <string.h>

#include "rt_internal.h"

/* A fixed buffer: recording an error must not allocate (it can happen on the launch path). */
static _Thread_local char rt_message[RT_MAX_ERROR];

static tilec_status rt_vset(tilec_status s, const char *fmt, va_list ap)
{
    int n = vsnprintf(rt_message, sizeof rt_message, fmt, ap);
    if (n >= (int)sizeof rt_message)
        memcpy(rt_message + sizeof rt_message - 4, "...", 4);
    return s;
}

tilec_status rt_fail(tilec_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rt_vset(s, fmt, ap);
    va_end(ap);
    return s;
}

tilec_status rt_fail_prefix(tilec_status s, const char *fmt, ...)
{
    char old[RT_MAX_ERROR];
    memcpy(old, rt_message, sizeof old);
    char prefix[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    return rt_fail(s, "%s: %s", prefix, old);
}

const char *tilec_rt_last_error(void)
{
    return rt_message;
}

const char *tilec_rt_status_name(tilec_status s)
{
    switch (s) {
    case TILEC_OK: return "TILEC_OK";
    case TILEC_ERROR_INVALID_ARGUMENT: return "TILEC_ERROR_INVALID_ARGUMENT";
    case TILEC_ERROR_COMPILE: return "TILEC_ERROR_COMPILE";
    case TILEC_ERROR_NOT_FOUND: return "TILEC_ERROR_NOT_FOUND";
    case TILEC_ERROR_INTERNAL: return "TILEC_ERROR_INTERNAL";
    case TILEC_ERROR_IO: return "TILEC_ERROR_IO";
    case TILEC_ERROR_DRIVER: return "TILEC_ERROR_DRIVER";
    case TILEC_ERROR_LAUNCH: return "TILEC_ERROR_LAUNCH";
    case TILEC_ERROR_UNSUPPORTED: return "TILEC_ERROR_UNSUPPORTED";
    }
    return "unknown status";
}

void rt_warn_cache_once(const char *fmt, ...)
{
    static atomic_int warned;
    if (atomic_exchange(&warned, 1))
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "tilec: warning: %s\n", line);
}
