/* ts_span_internal.h — overflow-checked sizes and the byte spans of caller buffers, shared by
 * every driver. Header-only, so requant.c, im2col.c and uzp.c still build on
 * their own. Not public API. Plain C99. */
#ifndef TS_SPAN_INTERNAL_H
#define TS_SPAN_INTERNAL_H

#include "ts_build_internal.h"   /* no -ffast-math */

#include <stddef.h>
#include <stdint.h>

/* ---- sizes (overflow-checked: each returns 0 on success, -1 when size_t overflows) ---------- */
static inline int ts_size_mul(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > (size_t)-1 / a) return -1;
    *out = a * b;
    return 0;
}
static inline int ts_size_add(size_t a, size_t b, size_t *out)
{
    if (b > (size_t)-1 - a) return -1;
    *out = a + b;
    return 0;
}
/* a rounded up to a multiple of b (b > 0) */
static inline int ts_size_round_up(size_t a, size_t b, size_t *out)
{
    return ts_size_mul(a / b + (a % b != 0), b, out);
}

/* ---- buffer spans ---------------------------------------------------------------------------- */

/* Bytes a rows x cols matrix of elem_bytes elements with row stride ld elements spans:
 * ((rows-1)*ld + cols) * elem_bytes, 0 when rows or cols is 0. Returns 0, or -1 when that
 * overflows size_t (no buffer could hold it). */
static inline int ts_matrix_span_bytes(size_t rows, size_t cols, size_t ld, size_t elem_bytes,
                                       size_t *out)
{
    size_t span;
    if (rows == 0 || cols == 0) {
        *out = 0;
        return 0;
    }
    if (ts_size_mul(rows - 1, ld, &span) || ts_size_add(span, cols, &span)
        || ts_size_mul(span, elem_bytes, out))
        return -1;
    return 0;
}
/* 0 when the span above fits in size_t (so every address the drivers compute in it is exact),
 * -1 when no buffer could hold it. */
static inline int ts_matrix_span_overflows(size_t rows, size_t cols, size_t ld,
                                          size_t elem_bytes)
{
    size_t span;
    return ts_matrix_span_bytes(rows, cols, ld, elem_bytes, &span);
}

/* Whether the byte ranges [a, a+a_len) and [b, b+b_len) share a byte (an empty range shares
 * none). The public entry points reject an output that overlaps any buffer they read (or
 * another buffer they write) with this, before writing anything: the drivers read inputs
 * after writing outputs, so an overlap would give a wrong answer. */
static inline int ts_spans_overlap(const void *a, size_t a_len, const void *b, size_t b_len)
{
    const uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
    return a_len != 0 && b_len != 0 && pa < pb + b_len && pb < pa + a_len;
}

#endif /* TS_SPAN_INTERNAL_H */
