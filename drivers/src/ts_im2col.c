/* ts_im2col.c — conv2d geometry checks and the im2col transform.
 * Plain C99.
 *
 * Geometry, per direction (h with pad_top/pad_bottom, w with pad_left/pad_right):
 *   padded = in + pad_a + pad_b,  span = dilation*(k-1) + 1   (extent of the dilated kernel)
 *   out    = (padded - span) / stride + 1                      (valid when span <= padded)
 * Output pixel o reads padded coordinate o*stride + tap*dilation, i.e. input coordinate
 * o*stride + tap*dilation - pad_a; taps outside 0..in-1 read the padding value.
 *
 * im2col matrix: row (b*out_h + oy)*out_w + ox holds that output pixel's receptive field,
 * k_h*k_w*in_c bytes in (kh, kw, ic) order — NHWC input makes each (kh, kw) tap in_c
 * contiguous bytes, and with dilation_w == 1 each kernel row's in-bounds taps one contiguous
 * run, so a patch row is at most: memset (left padding), memcpy (run), memset (right padding). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tilesmith.h"
#include "ts_error_internal.h"
#include "ts_quant_internal.h"
#include "ts_span_internal.h"

/* ---- geometry ------------------------------------------------------------------------------- */

/* a*b into *r; 0 on success, 1 on size_t overflow. */
static int mul_overflows(size_t a, size_t b, size_t *r)
{
    if (a != 0 && b > SIZE_MAX / a) return 1;
    *r = a * b;
    return 0;
}

static int add_overflows(size_t a, size_t b, size_t *r)
{
    if (b > SIZE_MAX - a) return 1;
    *r = a + b;
    return 0;
}

/* Output size of one direction, or 0 when the geometry is invalid (zero size, stride or
 * dilation, dilated kernel larger than the padded input, or size_t overflow). */
static size_t out_size(size_t in, size_t pad_a, size_t pad_b, size_t k, size_t stride,
                       size_t dilation)
{
    size_t padded, span;
    if (in == 0 || k == 0 || stride == 0 || dilation == 0)
        return 0;
    if (add_overflows(in, pad_a, &padded) || add_overflows(padded, pad_b, &padded)
        || mul_overflows(dilation, k - 1, &span) || add_overflows(span, 1, &span)
        || span > padded)
        return 0;
    return (padded - span) / stride + 1;
}

size_t ts_conv2d_out_h(const ts_conv2d *c)
{
    return c == NULL ? 0 : out_size(c->in_h, c->pad_top, c->pad_bottom, c->k_h, c->stride_h,
                                    c->dilation_h);
}

size_t ts_conv2d_out_w(const ts_conv2d *c)
{
    return c == NULL ? 0 : out_size(c->in_w, c->pad_left, c->pad_right, c->k_w, c->stride_w,
                                    c->dilation_w);
}

int ts_conv2d_validate(const ts_conv2d *c)
{
    if (c == NULL)
        return ts_fail(TS_EINVAL, "the conv (ts_conv2d *) is NULL");
    if (c->batch == 0 || c->in_c == 0 || c->out_c == 0)
        return ts_fail(TS_EINVAL, "conv batch, in_c or out_c is 0");
    const size_t out_h = ts_conv2d_out_h(c), out_w = ts_conv2d_out_w(c);
    size_t row_len, rows, total, input_len, padded;
    if (add_overflows(c->in_h, c->pad_top, &padded) || add_overflows(padded, c->pad_bottom, &padded)
        || add_overflows(c->in_w, c->pad_left, &padded)
        || add_overflows(padded, c->pad_right, &padded))
        return ts_fail(TS_EINVAL, "conv sizes overflow size_t (the padded input)");
    if (out_h == 0 || out_w == 0)
        return ts_fail(TS_EINVAL, "conv geometry: an input size, kernel size, stride or "
                                  "dilation is 0, or the dilated kernel exceeds the padded input");
    if (mul_overflows(c->k_h, c->k_w, &row_len) || mul_overflows(row_len, c->in_c, &row_len)
        || mul_overflows(c->batch, out_h, &rows) || mul_overflows(rows, out_w, &rows)
        || mul_overflows(rows, row_len, &total)
        || mul_overflows(c->batch, c->in_h, &input_len)
        || mul_overflows(input_len, c->in_w, &input_len)
        || mul_overflows(input_len, c->in_c, &input_len)
        || mul_overflows(c->out_c, row_len, &total))
        return ts_fail(TS_EINVAL, "conv sizes overflow size_t");
    return TS_OK;
}

/* ---- im2col --------------------------------------------------------------------------------- */

/* Taps tap_lo .. tap_hi-1 (of k) of an output pixel whose window starts at padded coordinate
 * origin land inside the input: pad <= origin + tap*dilation < pad + in. */
static inline void in_bounds_taps(size_t origin, size_t pad, size_t in, size_t k, size_t dilation,
                                  size_t *tap_lo, size_t *tap_hi)
{
    /* ceil(a / d) as (a - 1) / d + 1 for a > 0: no overflow even for a huge dilation; no
     * division at all for the common dilation 1 */
    size_t lo = origin >= pad ? 0 : dilation == 1 ? pad - origin : (pad - origin - 1) / dilation + 1;
    size_t hi = origin >= pad + in ? 0
              : dilation == 1 ? pad + in - origin : (pad + in - origin - 1) / dilation + 1;
    if (lo > k) lo = k;
    if (hi > k) hi = k;
    if (hi < lo) hi = lo;
    *tap_lo = lo;
    *tap_hi = hi;
}

/* memset of n padding bytes; most patches have none (no call then). */
static void pad_bytes(int8_t *dst, int8_t pad_value, size_t n)
{
    if (n != 0)
        memset(dst, (unsigned char)pad_value, n);
}

/* One kernel row (k_w taps x in_c) of a patch from input row `src_row` (in_w x in_c), or
 * padding taps where the window leaves the input horizontally. */
static void copy_kernel_row(const ts_conv2d *c, const int8_t *src_row, size_t x_origin,
                            size_t kw_lo, size_t kw_hi, int8_t pad_value, int8_t *dst)
{
    const size_t in_c = c->in_c;
    pad_bytes(dst, pad_value, kw_lo * in_c);
    if (c->dilation_w == 1 && kw_hi > kw_lo) {
        /* adjacent taps are adjacent pixels: one run */
        memcpy(dst + kw_lo * in_c, src_row + (x_origin + kw_lo - c->pad_left) * in_c,
               (kw_hi - kw_lo) * in_c);
    } else {
        for (size_t kw = kw_lo; kw < kw_hi; ++kw)
            memcpy(dst + kw * in_c, src_row + (x_origin + kw * c->dilation_w - c->pad_left) * in_c,
                   in_c);
    }
    pad_bytes(dst + kw_hi * in_c, pad_value, (c->k_w - kw_hi) * in_c);
}

/* The receptive field of output pixel (oy, ox) of image `image` (in_h x in_w x in_c). */
static void write_patch(const ts_conv2d *c, const int8_t *image, size_t oy, size_t ox,
                        int8_t pad_value, int8_t *dst)
{
    const size_t kernel_row_len = c->k_w * c->in_c;
    const size_t y_origin = oy * c->stride_h, x_origin = ox * c->stride_w;
    size_t kh_lo, kh_hi, kw_lo, kw_hi;
    in_bounds_taps(y_origin, c->pad_top, c->in_h, c->k_h, c->dilation_h, &kh_lo, &kh_hi);
    in_bounds_taps(x_origin, c->pad_left, c->in_w, c->k_w, c->dilation_w, &kw_lo, &kw_hi);
    /* kernel rows above and below the input are all padding */
    pad_bytes(dst, pad_value, kh_lo * kernel_row_len);
    for (size_t kh = kh_lo; kh < kh_hi; ++kh) {
        const size_t y = y_origin + kh * c->dilation_h - c->pad_top;
        copy_kernel_row(c, image + y * c->in_w * c->in_c, x_origin, kw_lo, kw_hi, pad_value,
                        dst + kh * kernel_row_len);
    }
    pad_bytes(dst + kh_hi * kernel_row_len, pad_value, (c->k_h - kh_hi) * kernel_row_len);
}

void ts_im2col_rows_s8(const ts_conv2d *c, const int8_t *input, int8_t pad_value,
                       size_t row0, size_t nrows, int8_t *cols, size_t ld_cols)
{
    const size_t out_h = ts_conv2d_out_h(c), out_w = ts_conv2d_out_w(c);
    const size_t image_len = c->in_h * c->in_w * c->in_c;
    size_t ox = row0 % out_w, oy = row0 / out_w % out_h, b = row0 / out_w / out_h;
    for (size_t r = 0; r < nrows; ++r) {
        write_patch(c, input + b * image_len, oy, ox, pad_value, cols + r * ld_cols);
        if (++ox == out_w) {
            ox = 0;
            if (++oy == out_h) { oy = 0; ++b; }
        }
    }
}

int ts_im2col_s8(const ts_conv2d *c, const int8_t *input, int8_t pad_value, int8_t *cols)
{
    if (ts_conv2d_validate(c) != TS_OK)
        return TS_EINVAL;
    if (input == NULL || cols == NULL)
        return ts_fail(TS_EINVAL, "input or cols is NULL");
    const size_t rows = c->batch * ts_conv2d_out_h(c) * ts_conv2d_out_w(c);
    const size_t row_len = c->k_h * c->k_w * c->in_c;
    if (ts_spans_overlap(cols, rows * row_len, input, ts_conv2d_input_bytes(c)))
        return ts_fail(TS_EINVAL, "cols overlaps input");   /* validate: rows * row_len fits */
    ts_im2col_rows_s8(c, input, pad_value, 0, rows, cols, row_len);
    return TS_OK;
}
