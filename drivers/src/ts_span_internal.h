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

/* A matrix as the bytes it covers: `rows` rows of `row_bytes` bytes, `stride_bytes` apart
 * (a matrix that passed the span checks: (rows-1)*stride + row_bytes fits in size_t). */
typedef struct {
    const void *p;
    size_t rows, row_bytes, stride_bytes;
} ts_strided;

static inline ts_strided ts_strided_of(const void *p, size_t rows, size_t cols, size_t ld,
                                       size_t elem_bytes)
{
    ts_strided m = { p, rows, cols * elem_bytes, ld * elem_bytes };
    return m;
}

/* The bytes from a matrix's first to its last byte (0 when it has none). */
static inline size_t ts_strided_bytes(const ts_strided *m)
{
    return m->rows == 0 || m->row_bytes == 0 ? 0 : (m->rows - 1) * m->stride_bytes + m->row_bytes;
}

/* floor(a / b) for b > 0 (C's / truncates towards 0) */
static inline int64_t ts_floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && a < 0);
}

/* Whether two matrices share a byte. Exact when their spans are apart, and for two matrices of
 * the same byte stride (each row within it): row i of x covers [i*s, i*s + wx) from x's start,
 * row j of y [d + j*s, d + j*s + wy) with d = y - x, so they meet iff some t = i - j in
 * [-(ry-1), rx-1] has d - wx < t*s < d + wy; that is what lets a caller write C into columns
 * of the buffer A lives in (an in-place concatenation, A = buf[:, 0:K], C = buf[:, K:K+N]).
 * Any other pair whose spans overlap counts as overlapping (a safe refusal). */
static inline int ts_strided_overlap(const ts_strided *x, const ts_strided *y)
{
    if (!ts_spans_overlap(x->p, ts_strided_bytes(x), y->p, ts_strided_bytes(y)))
        return 0;
    const size_t s = x->stride_bytes;
    if (s != y->stride_bytes || x->row_bytes > s || y->row_bytes > s
        || s > (size_t)INT64_MAX / 4)
        return 1;
    /* the spans overlap, so |d| is below the longer span: within int64 for any real buffer */
    const int64_t d = (int64_t)((uintptr_t)y->p - (uintptr_t)x->p), ss = (int64_t)s;
    int64_t lo = ts_floor_div(d - (int64_t)x->row_bytes, ss) + 1;    /* least t: t*s > d - wx */
    int64_t hi = ts_floor_div(d + (int64_t)y->row_bytes - 1, ss);     /* most t: t*s < d + wy */
    const int64_t t_min = -(int64_t)(y->rows - 1), t_max = (int64_t)(x->rows - 1);
    if (lo < t_min) lo = t_min;
    if (hi > t_max) hi = t_max;
    return lo <= hi;
}

#endif /* TS_SPAN_INTERNAL_H */
