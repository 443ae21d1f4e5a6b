/* Harness for the im2col driver (ts_im2col.c). Driven by tests/test_drivers_im2col.py:
 *
 *   drv_q_im2col shapes  stdin: count, then count x (batch in_h in_w in_c k_h k_w stride_h
 *                        stride_w dilation_h dilation_w pad_top pad_left pad_bottom pad_right
 *                        pad_value). Per shape prints "shape <out_h> <out_w> <mismatches>
 *                        <chunk_mismatches>" after comparing ts_im2col_s8 (and
 *                        ts_im2col_rows_s8 in chunks with a wider ld) with a direct reference.
 *   drv_q_im2col bad     bad arguments: EINVAL and nothing written; prints "ok <name>" lines.
 *
 * Input and output buffers are exactly sized and sit against guard pages (back, then front). */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guarded.h"
#include "tilesmith.h"
#include "ts_quant_internal.h"

static long long next_int(void)
{
    long long v;
    if (scanf("%lld", &v) != 1) { fprintf(stderr, "malformed input\n"); exit(3); }
    return v;
}

/* Reference: every element from its definition, with signed input coordinates. */
static int8_t reference_tap(const ts_conv2d *c, const int8_t *input, int8_t pad_value,
                            long b, long oy, long ox, long kh, long kw, long ic)
{
    const long y = oy * (long)c->stride_h + kh * (long)c->dilation_h - (long)c->pad_top;
    const long x = ox * (long)c->stride_w + kw * (long)c->dilation_w - (long)c->pad_left;
    if (y < 0 || y >= (long)c->in_h || x < 0 || x >= (long)c->in_w) return pad_value;
    return input[((b * (long)c->in_h + y) * (long)c->in_w + x) * (long)c->in_c + ic];
}

/* Counts elements of rows row0.. of `cols` (row stride ld) that differ from the reference. */
static size_t count_mismatches(const ts_conv2d *c, const int8_t *input, int8_t pad_value,
                               long out_h, long out_w, size_t row0, size_t nrows,
                               const int8_t *cols, size_t ld)
{
    size_t bad = 0;
    for (size_t r = row0; r < row0 + nrows; ++r) {
        const long b = (long)r / (out_h * out_w), oy = (long)r / out_w % out_h;
        const long ox = (long)r % out_w;
        const int8_t *row = cols + (r - row0) * ld;
        size_t i = 0;
        for (long kh = 0; kh < (long)c->k_h; ++kh)
            for (long kw = 0; kw < (long)c->k_w; ++kw)
                for (long ic = 0; ic < (long)c->in_c; ++ic, ++i)
                    bad += row[i] != reference_tap(c, input, pad_value, b, oy, ox, kh, kw, ic);
    }
    return bad;
}

/* ts_im2col_rows_s8 in uneven chunks into a buffer with ld = row_len + 5; the 5 bytes after each
 * row must stay untouched. Returns mismatches + touched gap bytes. */
static size_t check_chunks(const ts_conv2d *c, const int8_t *input, int8_t pad_value,
                           size_t out_h, size_t out_w, size_t rows, size_t row_len, int front)
{
    const size_t ld = row_len + 5;
    const size_t chunk_sizes[] = {1, 3, 7, 2, 12, 5};
    guarded_region region;
    int8_t *buf = guarded_alloc_at(12 * ld, !front, &region);
    size_t bad = 0, row0 = 0;
    for (size_t k = 0; row0 < rows; ++k) {
        size_t n = chunk_sizes[k % 6];
        if (n > rows - row0) n = rows - row0;
        memset(buf, 0x77, 12 * ld);
        ts_im2col_rows_s8(c, input, pad_value, row0, n, buf, ld);
        bad += count_mismatches(c, input, pad_value, (long)out_h, (long)out_w, row0, n, buf, ld);
        for (size_t r = 0; r < n; ++r)
            for (size_t g = row_len; g < ld; ++g) bad += buf[r * ld + g] != 0x77;
        for (size_t i = n * ld; i < 12 * ld; ++i) bad += buf[i] != 0x77;
        row0 += n;
    }
    guarded_free(&region);
    return bad;
}

static void run_shape(const ts_conv2d *c, int8_t pad_value, int front)
{
    const size_t out_h = ts_conv2d_out_h(c), out_w = ts_conv2d_out_w(c);
    if (ts_conv2d_validate(c) != TS_OK) { printf("shape invalid %zu %zu\n", out_h, out_w); return; }
    const size_t in_len = c->batch * c->in_h * c->in_w * c->in_c;
    const size_t rows = c->batch * out_h * out_w, row_len = c->k_h * c->k_w * c->in_c;
    guarded_region in_region, out_region;
    int8_t *input = guarded_alloc_at(in_len, !front, &in_region);
    int8_t *cols = guarded_alloc_at(rows * row_len, !front, &out_region);
    for (size_t i = 0; i < in_len; ++i) {
        input[i] = (int8_t)(rng_next() >> 56);
        if (input[i] == pad_value) input[i] ^= 1;   /* padding is told apart from data */
    }
    memset(cols, 0x33 ^ pad_value, rows * row_len);
    const int rc = ts_im2col_s8(c, input, pad_value, cols);
    const size_t bad = rc != TS_OK ? (size_t)-1
        : count_mismatches(c, input, pad_value, (long)out_h, (long)out_w, 0, rows, cols, row_len);
    const size_t chunk_bad = check_chunks(c, input, pad_value, out_h, out_w, rows, row_len, front);
    printf("shape %zu %zu %zu %zu\n", out_h, out_w, bad, chunk_bad);
    guarded_free(&in_region);
    guarded_free(&out_region);
}

static int run_shapes(void)
{
    const size_t count = (size_t)next_int();
    for (size_t i = 0; i < count; ++i) {
        ts_conv2d c;
        size_t *fields[] = {&c.batch, &c.in_h, &c.in_w, &c.in_c, &c.k_h, &c.k_w, &c.stride_h,
                            &c.stride_w, &c.dilation_h, &c.dilation_w, &c.pad_top, &c.pad_left,
                            &c.pad_bottom, &c.pad_right};
        for (size_t f = 0; f < sizeof fields / sizeof fields[0]; ++f) *fields[f] = (size_t)next_int();
        c.out_c = 1;
        const int8_t pad_value = (int8_t)next_int();
        run_shape(&c, pad_value, (int)(i % 2));
    }
    return 0;
}

/* ---- bad arguments ------------------------------------------------------------------------ */
static ts_conv2d valid_conv(void)
{
    ts_conv2d c = {1, 5, 5, 3, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    return c;
}

static int expect_einval(const char *name, const ts_conv2d *c, int null_input, int null_cols)
{
    static int8_t input[5 * 5 * 3 * 4];
    static int8_t cols[4096];
    memset(cols, 0x5A, sizeof cols);
    const int rc = ts_im2col_s8(c, null_input ? NULL : input, 0, null_cols ? NULL : cols);
    int untouched = 1;
    for (size_t i = 0; i < sizeof cols; ++i) untouched &= cols[i] == 0x5A;
    const int validate_rc = null_input || null_cols ? TS_EINVAL : ts_conv2d_validate(c);
    if (rc != TS_EINVAL || !untouched || validate_rc != TS_EINVAL) {
        printf("FAIL %s rc=%d validate=%d untouched=%d\n", name, rc, validate_rc, untouched);
        return 1;
    }
    printf("ok %s\n", name);
    return 0;
}

#define BAD_CONV(name, mutation) do {                                   \
        ts_conv2d c = valid_conv(); mutation;                            \
        failures += expect_einval(name, &c, 0, 0);                       \
    } while (0)

static int run_bad(void)
{
    int failures = 0;
    BAD_CONV("batch_zero", c.batch = 0);
    BAD_CONV("in_h_zero", c.in_h = 0);
    BAD_CONV("in_w_zero", c.in_w = 0);
    BAD_CONV("in_c_zero", c.in_c = 0);
    BAD_CONV("out_c_zero", c.out_c = 0);
    BAD_CONV("k_h_zero", c.k_h = 0);
    BAD_CONV("k_w_zero", c.k_w = 0);
    BAD_CONV("stride_h_zero", c.stride_h = 0);
    BAD_CONV("stride_w_zero", c.stride_w = 0);
    BAD_CONV("dilation_h_zero", c.dilation_h = 0);
    BAD_CONV("dilation_w_zero", c.dilation_w = 0);
    BAD_CONV("kernel_taller_than_padded", (c.k_h = 8, c.pad_top = 1, c.pad_bottom = 1));
    BAD_CONV("kernel_wider_than_padded", (c.k_w = 6, c.pad_left = 0, c.pad_right = 0));
    BAD_CONV("dilated_kernel_too_big", (c.dilation_w = 4, c.pad_left = 0, c.pad_right = 0));
    BAD_CONV("pad_overflow", (c.pad_top = SIZE_MAX, c.pad_bottom = 2));
    BAD_CONV("dilation_overflow", (c.k_h = 3, c.dilation_h = SIZE_MAX / 2 + 1));
    BAD_CONV("size_overflow", (c.in_c = SIZE_MAX / 4, c.k_h = 1, c.k_w = 5, c.pad_left = 0,
                               c.pad_right = 0, c.pad_top = 0, c.pad_bottom = 0));
    {
        ts_conv2d c = valid_conv();
        failures += expect_einval("null_conv", NULL, 0, 0);
        failures += expect_einval("null_input", &c, 1, 0);
        failures += expect_einval("null_cols", &c, 0, 1);
    }
    {   /* out size helpers: formula on valid input, 0 on invalid */
        ts_conv2d c = valid_conv();
        c.in_h = 7; c.k_h = 3; c.dilation_h = 2; c.pad_top = 2; c.pad_bottom = 0; c.stride_h = 2;
        const size_t h = ts_conv2d_out_h(&c);         /* (7+2+0-2*2-1)/2+1 = 3 */
        ts_conv2d z = valid_conv(); z.stride_w = 0;
        const size_t zero_w = ts_conv2d_out_w(&z), null_h = ts_conv2d_out_h(NULL);
        if (h != 3 || zero_w != 0 || null_h != 0) {
            printf("FAIL out_size %zu %zu %zu\n", h, zero_w, null_h);
            ++failures;
        } else {
            printf("ok out_size\n");
        }
    }
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "shapes") == 0) return run_shapes();
    if (argc == 2 && strcmp(argv[1], "bad") == 0) return run_bad();
    fprintf(stderr, "usage: %s shapes|bad\n", argv[0]);
    return 2;
}
