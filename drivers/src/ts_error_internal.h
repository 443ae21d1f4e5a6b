/* ts_error_internal.h — recording why a call failed, for ts_last_error() (tilesmith.h).
 * Every check that makes a public function return an error records a static string naming the
 * argument and the rule it broke ("lda < K (A's row stride)"), so an engine can log more than
 * TS_EINVAL. Not public API. Plain C99 (the per-thread slot is a GCC / Clang extension). */
#ifndef TS_ERROR_INTERNAL_H
#define TS_ERROR_INTERNAL_H

#include "ts_build_internal.h"   /* no -ffast-math */

/* Records `why` (a string literal) as the calling thread's last error; returns `code`. */
int ts_fail(int code, const char *why);
/* Records `why` and returns 0: the "false" of a yes/no argument check. */
int ts_reject(const char *why);

#endif /* TS_ERROR_INTERNAL_H */
