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

/* Why a matrix argument is refused, each a string literal naming it: NULL although not empty,
 * its row stride below its width, its span beyond size_t. */
#include <stddef.h>
typedef struct {
    const char *null, *stride, *span;
} ts_matrix_why;
/* 1 when p is non-NULL (unless rows or cols is 0), ld >= cols and the span (rows-1)*ld + cols
 * elements of elem_bytes fits size_t; else records the reason from `why` and returns 0. */
int ts_matrix_ok(const void *p, size_t rows, size_t cols, size_t ld, size_t elem_bytes,
                 const ts_matrix_why *why);

/* ---- handle tags: a wrong or dead handle is an argument error, not a crash ----------------
 * Every opaque handle (ts_packed_b: GEMM, conv-filter and qdyn weights; ts_packed_a;
 * ts_context) starts with a uint32_t tag naming its type, set when it is made and overwritten
 * with TS_TAG_FREED when it is freed. A public entry point reads that first word through
 * ts_handle_ok before any other field: a handle of another type (a ts_packed_a passed as a
 * ts_packed_b), a freed one whose block still holds TS_TAG_FREED, or a pointer to other
 * memory that happens not to hold the tag is refused with TS_EINVAL. (A freed block that the
 * allocator has reused may hold anything: use after free stays undefined, this only catches
 * the common cases.) */
#include <stdint.h>
#define TS_TAG_PACKED_B 0x42707354u   /* "Tspb" little-endian: ts_pack_b_*, qdyn weights */
#define TS_TAG_CONV_FILTER 0x46637354u /* "TscF": a ts_packed_b from ts_pack_conv2d_filter_s8 */
#define TS_TAG_PACKED_A 0x41707354u   /* "TspA" */
#define TS_TAG_CONTEXT  0x43787354u   /* "TsxC" */
#define TS_TAG_FREED    0x44656144u   /* "DaeD" */
/* 1 when `handle` (not NULL) starts with `tag`; else records `why` and returns 0. A ts_packed_b
 * is TS_TAG_CONV_FILTER (conv2d_s8_prepacked) or TS_TAG_PACKED_B (every other prepacked call),
 * both the same struct: the free and name functions take either. */
int ts_handle_ok(const void *handle, uint32_t tag, const char *why);
/* ts_handle_ok for a context argument, where NULL means the defaults: 1 for NULL or a live
 * ts_context, else 0 with the reason recorded. */
int ts_context_ok(const void *ctx);

#endif /* TS_ERROR_INTERNAL_H */
