/* ts_error.c — the calling thread's last error reason (ts_last_error, tilesmith.h). Plain C99
 * apart from the per-thread storage class: GCC / Clang `__thread` (ELF and Mach-O both have
 * it); one process-wide slot when built with TS_NO_THREADS. */
#include "tilesmith.h"
#include "ts_error_internal.h"
#include "ts_span_internal.h"

#ifdef TS_NO_THREADS
static const char *last_error = "";
#else
static __thread const char *last_error = "";
#endif

int ts_fail(int code, const char *why)
{
    last_error = why;
    return code;
}

int ts_reject(const char *why)
{
    last_error = why;
    return 0;
}

int ts_matrix_ok(const void *p, size_t rows, size_t cols, size_t ld, size_t elem_bytes,
                 const ts_matrix_why *why)
{
    if (p == NULL && rows != 0 && cols != 0)
        return ts_reject(why->null);
    if (ld < cols)
        return ts_reject(why->stride);
    if (ts_matrix_span_overflows(rows, cols, ld, elem_bytes))
        return ts_reject(why->span);
    return 1;
}

int ts_handle_ok(const void *handle, uint32_t tag, const char *why)
{
    /* every handle struct's first member is its uint32_t tag (ts_error_internal.h) */
    return *(const uint32_t *)handle == tag || ts_reject(why);
}

int ts_context_ok(const void *ctx)
{
    return ctx == NULL
           || ts_handle_ok(ctx, TS_TAG_CONTEXT, "ctx is not a live ts_context (another handle "
                                                "type, or freed)");
}

const char *ts_last_error(void)
{
    return last_error;
}
