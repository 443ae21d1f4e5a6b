/* ts_error.c — the calling thread's last error reason (ts_last_error, tilesmith.h). Plain C99
 * apart from the per-thread storage class: GCC / Clang `__thread` (ELF and Mach-O both have
 * it); one process-wide slot when built with TS_NO_THREADS. */
#include "tilesmith.h"
#include "ts_error_internal.h"

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

const char *ts_last_error(void)
{
    return last_error;
}
