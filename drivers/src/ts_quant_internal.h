/* ts_quant_internal.h — internal contract between the GEMM / conv2d drivers and the
 * requantization and im2col drivers. Not part of the public API.
 * Plain C99.
 *
 * Division of work:
 *   - public entry points validate their arguments (with the *_validate functions below) and
 *     return TS_EINVAL before writing anything;
 *   - the row/segment workers below assume validated arguments and never fail. */
#ifndef TS_QUANT_INTERNAL_H
#define TS_QUANT_INTERNAL_H

#include "ts_build_internal.h"   /* no -ffast-math */

#include <stddef.h>
#include <stdint.h>

#include "tilesmith.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- requantization (requant.c) ----------------------------------------------------------- */

/* Checks a ts_quant for an output of N columns. Returns TS_OK, or TS_EINVAL when:
 * q, q->multiplier or q->shift is NULL; a_zero_point or c_zero_point is outside -128..127;
 * act_min > act_max or either is outside -128..127; rounding is neither TS_ROUND_DOUBLE nor
 * TS_ROUND_SINGLE; any multiplier (N of them if per_channel, else 1) is negative; any shift
 * is outside -31..30. q->bias may be NULL. With per_channel and N == 0 no entry is read. */
int ts_quant_validate(const ts_quant *q, size_t N);

/* As ts_quant_validate for a uint8 GEMM (ts_gemm_u8): a_zero_point, c_zero_point, act_min
 * and act_max in 0..255 instead of -128..127, the rest the same. */
int ts_quant_validate_u8(const ts_quant *q, size_t N);

/* The int8 epilogue that computes a uint8 one: *s8 = *q with c_zero_point, act_min and
 * act_max lowered by 128. For v = y + c_zero_point clamped to [act_min, act_max] (a subset of
 * 0..255), clamp(y + c_zero_point - 128, act_min - 128, act_max - 128) = v - 128, whose int8
 * byte is v ^ 0x80: requantizing with *s8 and flipping bit 7 of every output byte gives the
 * uint8 result exactly. */
void ts_quant_u8_as_s8(const ts_quant *q, ts_quant *s8);

/* Whether a validated q for N columns — the struct itself, or its arrays (bias: N values if not
 * NULL; multiplier and shift: N if per_channel, else 1) — shares a byte with [p, p+len). */
int ts_quant_overlaps(const ts_quant *q, size_t N, const void *p, size_t len);

/* Requantizes one row segment: columns col0 .. col0+n-1 of an output row.
 *   for j in 0..n-1, c = col0 + j:
 *     x      = acc[j] + (col_offset ? col_offset[c] : 0) + (q->bias ? q->bias[c] : 0)
 *     y      = MultiplyByQuantizedMultiplier(x, multiplier[ch], shift[ch])
 *              with ch = per_channel ? c : 0
 *     out[j] = (int8_t) clamp(y + q->c_zero_point, q->act_min, q->act_max)
 * acc and out are indexed from 0 (the segment); bias, col_offset, multiplier and shift by the
 * absolute column c. The additions in x wrap modulo 2^32 (as int32 adds do on every TFLite
 * target); a valid model never comes close. y follows q->rounding exactly (see requant.c).
 * col_offset is the GEMM's zero-point correction, e.g. -a_zero_point * sum_k B[k][c], or NULL.
 * q->a_zero_point is not read here. Preconditions: ts_quant_validate(q, N) == TS_OK for
 * some N >= col0+n; n may be 0; acc and out do not overlap. NEON (Armv8.0) on AArch64. */
void ts_requant_row(const int32_t *acc, size_t n, size_t col0, const ts_quant *q,
                    const int32_t *col_offset, int8_t *out);

/* ts_requant_row on `rows` rows at once: row r reads acc + r*ld_acc and writes
 * out + r*ldc (same columns, same col_offset). Faster than row by row: the column constants
 * are set up once for all rows. Same preconditions; no row's acc overlaps any row's out. */
void ts_requant_rows(const int32_t *acc, size_t ld_acc, size_t rows, size_t n, size_t col0,
                     const ts_quant *q, const int32_t *col_offset, int8_t *out, size_t ldc);

/* ts_requant_rows for a uint8 output: q_s8 is ts_quant_u8_as_s8 of the uint8 quant; the int8
 * results are written, then bit 7 of each flipped (see ts_quant_u8_as_s8). */
void ts_requant_rows_u8(const int32_t *acc, size_t ld_acc, size_t rows, size_t n, size_t col0,
                        const ts_quant *q_s8, const int32_t *col_offset, uint8_t *out,
                        size_t ldc);

/* ---- conv2d geometry and im2col (im2col.c) ----------------------------------------------- */

/* Checks a ts_conv2d. Returns TS_OK, or TS_EINVAL when: c is NULL; any of batch, in_h,
 * in_w, in_c, out_c, k_h, k_w, stride_*, dilation_* is 0; the dilated kernel
 * dilation*(k-1)+1 is larger than the padded input in+pad_a+pad_b (in either direction); or a
 * size computation (padded extent, im2col row length k_h*k_w*in_c, rows batch*out_h*out_w,
 * their product) overflows size_t. */
int ts_conv2d_validate(const ts_conv2d *c);

/* Bytes of the NHWC input of a validated conv (batch*in_h*in_w*in_c: fits, validate checked). */
static inline size_t ts_conv2d_input_bytes(const ts_conv2d *c)
{
    return c->batch * c->in_h * c->in_w * c->in_c;
}

/* Writes rows row0 .. row0+nrows-1 of the im2col matrix of ts_im2col_s8 (row index =
 * (b*out_h + oy)*out_w + ox, inner order (kh, kw, ic), padded taps = pad_value) to
 * cols[(r-row0)*ld_cols + 0 .. k_h*k_w*in_c-1]; the bytes between k_h*k_w*in_c and ld_cols of
 * each row are not touched. ts_im2col_s8's row writer, tested chunk by chunk
 * (tests/test_drivers_im2col.py); conv2d does not use it (implicit im2col, ts_conv_pack.c).
 * Preconditions: ts_conv2d_validate(c) == TS_OK, row0+nrows <= batch*out_h*out_w,
 * ld_cols >= k_h*k_w*in_c. */
void ts_im2col_rows_s8(const ts_conv2d *c, const int8_t *input, int8_t pad_value,
                       size_t row0, size_t nrows, int8_t *cols, size_t ld_cols);

#ifdef __cplusplus
}
#endif
#endif /* TS_QUANT_INTERNAL_H */
