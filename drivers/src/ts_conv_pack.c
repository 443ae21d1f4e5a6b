/* ts_conv_pack.c — implicit im2col: the A panels of a conv2d GEMM packed straight from the
 * NHWC input, never writing im2col rows. Row m of the (virtual) im2col matrix is output pixel
 * m = (b*out_h + oy)*out_w + ox, its K = k_h*k_w*in_c values in (kh, kw, ic) order, as
 * ts_im2col_s8 writes them (geometry: ts_im2col.c). Each tap (kh, kw) of a row is in_c
 * contiguous input bytes, or a padding tap. The engine packs A per MC x KC block (ts_engine.c
 * pack_a_block) with one plan per K block (ts_conv_plan_init): a k-range [k0, k0 + klen) of
 * K, the kernel rows and taps it cuts taken in part. Rows whose windows have no padding tap
 * in it are gathered from one pointer per row (ts_pack_gather), a kernel row (dilation_w 1) as
 * one run of k_w*in_c bytes; an output row's run of such windows is one stretch across panels
 * from one strided source (pack_conv_stretch, ts_pack_gather_strided), the other rows go in
 * chunks within a panel, those of one output row without windows (pack_conv_row). Row
 * groups with a padding tap go tap by tap from a table of one pointer per row and tap
 * (ts_pack_gather_taps), padding taps pointing at a row of in_c pad values.
 * Plain C99. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ts_gemm_internal.h"

/* Rows gathered per ts_pack_gather call (a panel's rows are taken in chunks of this many). */
#define GATHER_ROWS 16

/* The input window of one output pixel: its image, the input coordinates (y, x) of its
 * top-left tap (negative inside the top / left padding), and its kernel rows ky_lo .. ky_hi-1
 * and columns kw_lo .. kw_hi-1 that land inside the input (computed once per window). */
typedef struct {
    const int8_t *image;
    ptrdiff_t y, x;
    size_t ky_lo, ky_hi, kw_lo, kw_hi;
} window;

/* The plan of one K block (ts_conv_plan, ts_gemm_internal.h). */
typedef ts_conv_plan conv_pack;

/* Taps [*lo, *hi) of k, dilation d, whose coordinate origin + tap*d is in [0, in). */
static void im2col_taps_inside(ptrdiff_t origin, size_t in, size_t k, size_t d, size_t *lo,
                               size_t *hi)
{
    size_t l = 0, h = k;
    if (origin >= 0 && origin + (ptrdiff_t)((k - 1) * d) < (ptrdiff_t)in) {
        *lo = 0;            /* the common case, an interior window: every tap inside */
        *hi = k;
        return;
    }
    while (l < k && origin + (ptrdiff_t)(l * d) < 0)
        ++l;
    while (h > l && origin + (ptrdiff_t)((h - 1) * d) >= (ptrdiff_t)in)
        --h;
    *lo = l;
    *hi = h;
}

/* Where tap (kh, kw) of window w reads its in_c channels: the input pixel, or pad_row. */
static const int8_t *im2col_tap(const conv_pack *p, const window *w, size_t kh, size_t kw)
{
    const ts_conv2d *c = p->c;
    if (kh < w->ky_lo || kh >= w->ky_hi || kw < w->kw_lo || kw >= w->kw_hi)
        return p->pad_row;
    const size_t y = (size_t)(w->y + (ptrdiff_t)(kh * c->dilation_h));
    const size_t x = (size_t)(w->x + (ptrdiff_t)(kw * c->dilation_w));
    return w->image + (y * c->in_w + x) * c->in_c;
}

/* One tap's part [a, e) of the call's k-range (a and e inside tap (kh, kw), which starts at
 * k = t0) of windows w[0..n-1], into the panel at dst (row 0 of the group). */
static void pack_conv_tap_part(const conv_pack *p, void *dst, const window *w, size_t n,
                               size_t kh, size_t kw, size_t a, size_t e, size_t t0)
{
    const void *src[GATHER_ROWS];
    const ts_gather_runs g = { a - p->k0, e - a, 1, a - t0, 0 };
    for (size_t r = 0; r < n; ++r)
        src[r] = im2col_tap(p, &w[r], kh, kw);
    ts_pack_gather(p->kind, p->path->lp, p->path->ep, dst, src, n, &g);
}

/* Where `taps` consecutive taps of window w from (kh, kw) on read, tap j into table[j * n]:
 * the input pixel, or pad_row (im2col_tap), kernel row by kernel row: its padding taps left of
 * the input, its taps inside (one pixel apart), its padding taps right of it. */
static void window_taps(const conv_pack *p, const window *w, size_t kh, size_t kw, size_t taps,
                        const void **table, size_t n)
{
    const ts_conv2d *c = p->c;
    const size_t k_w = c->k_w, dx = c->dilation_w * c->in_c;
    const ptrdiff_t dy = (ptrdiff_t)(c->dilation_h * c->in_w * c->in_c);
    /* offset of tap (kh, 0) from the image, as if inside (a pointer only where it is) */
    ptrdiff_t row = (w->y * (ptrdiff_t)c->in_w + w->x) * (ptrdiff_t)c->in_c + (ptrdiff_t)kh * dy;
    for (; taps != 0; ++kh, kw = 0, row += dy) {
        const size_t stop = k_w - kw < taps ? k_w : kw + taps;     /* this kernel row's end */
        size_t lo = w->kw_lo > kw ? w->kw_lo : kw, hi = w->kw_hi < stop ? w->kw_hi : stop;
        taps -= stop - kw;
        if (kh < w->ky_lo || kh >= w->ky_hi || lo > hi)
            lo = hi = stop;                     /* the whole kernel row is padding */
        for (; kw < lo; ++kw, table += n)
            *table = p->pad_row;
        if (kw < hi) {
            const int8_t *px = w->image + row + (ptrdiff_t)(kw * dx);
            for (; kw < hi; ++kw, table += n, px += dx)
                *table = px;
        }
        for (; kw < stop; ++kw, table += n)
            *table = p->pad_row;
    }
}

/* Taps gathered per ts_pack_gather_taps call of pack_conv_padded (its pointer table: this
 * many taps x GATHER_ROWS rows). */
#define TAP_BATCH 16

/* Windows w[0..n-1], some with a padding tap in the call's k-range: tap by tap, each row's tap
 * from its own pointer (the input pixel or the padding row), the whole taps TAP_BATCH at a
 * time through one pointer table (ts_pack_gather_taps), a tap cut by k0 or k1 alone
 * (plan_taps). */
static void pack_conv_padded(const conv_pack *p, void *dst, const window *w, size_t n)
{
    const size_t in_c = p->c->in_c, k_w = p->c->k_w;
    const void *table[TAP_BATCH * GATHER_ROWS];
    if (p->k_whole != p->k0)
        pack_conv_tap_part(p, dst, w, n, p->head_kh, p->head_kw, p->k0, p->k_whole,
                           p->k0 - p->k0 % in_c);
    size_t kh = p->whole_kh, kw = p->whole_kw, k = p->k_whole;
    for (size_t t = 0; t < p->taps;) {
        const size_t taps = p->taps - t < TAP_BATCH ? p->taps - t : TAP_BATCH;
        for (size_t r = 0; r < n; ++r)
            window_taps(p, &w[r], kh, kw, taps, table + r, n);
        ts_pack_gather_taps(p->kind, p->path->lp, p->path->ep, dst, table, n, k - p->k0, in_c,
                            taps);
        t += taps;
        k += taps * in_c;
        for (kw += taps; kw >= k_w; kw -= k_w)
            ++kh;
    }
    if (p->k_tail != p->k1)
        pack_conv_tap_part(p, dst, w, n, p->tail_kh, p->tail_kw, p->k_tail, p->k1, p->k_tail);
}

/* Whether window w has every tap of kernel rows kh0 .. kh1-1 in the input, adjacent. */
static int im2col_window_inside(const ts_conv2d *c, const window *w, size_t kh0, size_t kh1)
{
    return c->dilation_w == 1 && w->kw_lo == 0 && w->kw_hi == c->k_w && w->ky_lo <= kh0
           && w->ky_hi >= kh1;
}

/* The k-range of n windows inside for every kernel row of it, kernel row kh0 of window r at
 * src[r]: at most three gathers (conv_pack head, whole, tail). */
static void pack_conv_gathers(const conv_pack *p, void *dst, const void *const *src, size_t n)
{
    const ts_path *path = p->path;
    if (p->head.n != 0)
        ts_pack_gather(p->kind, path->lp, path->ep, dst, src, n, &p->head);
    if (p->whole.runs != 0)
        ts_pack_gather(p->kind, path->lp, path->ep, dst, src, n, &p->whole);
    if (p->tail.n != 0)
        ts_pack_gather(p->kind, path->lp, path->ep, dst, src, n, &p->tail);
}

/* Windows w[0..n-1], inside for every kernel row of the call's k-range. */
static void pack_conv_inside(const conv_pack *p, void *dst, const window *w, size_t n)
{
    const ts_conv2d *c = p->c;
    const void *src[GATHER_ROWS];
    const size_t y0 = p->kh0 * c->dilation_h;     /* kernel row kh0: inside, so y + y0 >= 0 */
    for (size_t r = 0; r < n; ++r)
        src[r] = w[r].image + ((size_t)(w[r].y + (ptrdiff_t)y0) * c->in_w + (size_t)w[r].x)
                              * c->in_c;
    pack_conv_gathers(p, dst, src, n);
}

/* The windows of rows oy, ox (of image b) on: n of them, advancing *b, *oy, *ox. */
static void im2col_windows(const conv_pack *p, size_t *b, size_t *oy, size_t *ox, window *w,
                           size_t n)
{
    const ts_conv2d *c = p->c;
    size_t ky_lo = 0, ky_hi = 0;
    ptrdiff_t y = (ptrdiff_t)(*oy * c->stride_h) - (ptrdiff_t)c->pad_top;
    im2col_taps_inside(y, c->in_h, c->k_h, c->dilation_h, &ky_lo, &ky_hi);
    for (size_t r = 0; r < n; ++r) {
        const ptrdiff_t x = (ptrdiff_t)(*ox * c->stride_w) - (ptrdiff_t)c->pad_left;
        w[r].image = p->input + *b * p->image_len;
        w[r].y = y;
        w[r].x = x;
        w[r].ky_lo = ky_lo;
        w[r].ky_hi = ky_hi;
        if (x >= 0 && (size_t)x + p->span_w < c->in_w) {   /* interior: every column inside */
            w[r].kw_lo = 0;
            w[r].kw_hi = c->k_w;
        } else {
            im2col_taps_inside(x, c->in_w, c->k_w, c->dilation_w, &w[r].kw_lo, &w[r].kw_hi);
        }
        if (++*ox == p->out_w) {       /* next output row: its vertical taps */
            *ox = 0;
            if (++*oy == p->out_h) { *oy = 0; ++*b; }
            y = (ptrdiff_t)(*oy * c->stride_h) - (ptrdiff_t)c->pad_top;
            im2col_taps_inside(y, c->in_h, c->k_h, c->dilation_h, &ky_lo, &ky_hi);
        }
    }
}

/* Rows first .. end-1 of n from output pixel (b, oy, ox), in one output row, tap by tap. */
static void pack_conv_columns(const conv_pack *p, unsigned char *dst, size_t b, size_t oy,
                              size_t ox, size_t first, size_t end, size_t row_bytes)
{
    window w[GATHER_ROWS];
    ox += first;
    im2col_windows(p, &b, &oy, &ox, w, end - first);
    pack_conv_padded(p, dst + first * row_bytes, w, end - first);
}

/* The common case: n rows from output pixel (b, oy, ox) that lie in one output row whose
 * windows are inside vertically for the call's kernel rows. The row groups whose windows are
 * all inside horizontally (output columns ox_lo .. ox_hi-1) need no windows: kernel row kh0
 * of row r starts r * stride_w pixels after the first's; the groups before and after them
 * (a window in the left / right padding) go tap by tap (pack_conv_padded). Returns 0 (nothing
 * packed) when the rows are not such rows. */
static int pack_conv_row(const conv_pack *p, unsigned char *dst, size_t b, size_t oy, size_t ox,
                         size_t n, size_t group, size_t row_bytes)
{
    const ts_conv2d *c = p->c;
    const void *src[GATHER_ROWS];
    size_t lo, hi;
    if (ox + n > p->out_w)
        return 0;
    const ptrdiff_t y = (ptrdiff_t)(oy * c->stride_h) - (ptrdiff_t)c->pad_top;
    im2col_taps_inside(y, c->in_h, c->k_h, c->dilation_h, &lo, &hi);
    if (lo > p->kh0 || hi < p->kh1)
        return 0;
    /* rows i0 .. i1-1 inside, in whole groups (the last may end the chunk) */
    size_t i0 = p->ox_lo > ox ? p->ox_lo - ox : 0, i1 = p->ox_hi > ox ? p->ox_hi - ox : 0;
    if (i1 > n)
        i1 = n;
    i0 = (i0 + group - 1) & ~(group - 1);
    if (i1 < n)
        i1 &= ~(group - 1);
    if (i0 >= i1)
        i0 = i1 = n;                            /* none: every row tap by tap */
    else {
        const size_t y0 = (size_t)(y + (ptrdiff_t)(p->kh0 * c->dilation_h));
        const size_t dx = c->stride_w * c->in_c;
        const int8_t *corner = p->input + b * p->image_len
                               + (y0 * c->in_w + (ox + i0) * c->stride_w - c->pad_left) * c->in_c;
        for (size_t r = 0; r < i1 - i0; ++r)
            src[r] = corner + r * dx;
        pack_conv_gathers(p, dst + i0 * row_bytes, src, i1 - i0);
    }
    if (i0 > 0)
        pack_conv_columns(p, dst, b, oy, ox, 0, i0, row_bytes);
    if (i1 < n)
        pack_conv_columns(p, dst, b, oy, ox, i1, n, row_bytes);
    return 1;
}

/* One chunk of n <= GATHER_ROWS rows of a panel (at dst: its row 0) with windows w, over the
 * call's k-range (kernel rows kh0 .. kh1-1). Consecutive row groups (the gather's pair / quad)
 * whose windows have no padding tap there go together (pack_conv_inside), and so do those with
 * one (pack_conv_padded), so a padded window slows only its own group. */
static void pack_conv_chunk(const conv_pack *p, unsigned char *dst, const window *w, size_t n,
                            size_t group, size_t row_bytes)
{
    const ts_conv2d *c = p->c;
    const size_t kh0 = p->kh0, kh1 = p->kh1;
    for (size_t g = 0; g < n;) {
        size_t e = g;
        while (e < n && im2col_window_inside(c, &w[e], kh0, kh1))
            ++e;
        if (e < n)
            e = g + ((e - g) & ~(group - 1));   /* whole groups only (group: a power of 2) */
        if (e > g) {
            pack_conv_inside(p, dst + g * row_bytes, w + g, e - g);
            g = e;
            continue;
        }
        /* groups with a padded window, up to the next group without one */
        for (e = g; e < n; e += group) {
            size_t r = e, end = n - e < group ? n : e + group;
            while (r < end && im2col_window_inside(c, &w[r], kh0, kh1))
                ++r;
            if (r == end)
                break;
        }
        if (e > n)
            e = n;
        pack_conv_padded(p, dst + g * row_bytes, w + g, e - g);
        g = e;
    }
}

/* The k-range [k0, k1) of an inside window as gathers from its kernel row kh0 (conv_pack), and
 * the output columns whose windows are inside horizontally. */
static void plan_inside(conv_pack *p)
{
    const size_t rs = p->c->dilation_h * p->c->in_w * p->c->in_c;   /* kernel row to the next */
    const ts_gather_runs none = { 0, 0, 0, 0, 0 };
    size_t k = p->k0, kh = p->kh0;
    p->head = p->whole = p->tail = none;
    if (k % p->row_len != 0) {                  /* kernel row kh0 from k0 on */
        const size_t end = (kh + 1) * p->row_len < p->k1 ? (kh + 1) * p->row_len : p->k1;
        const ts_gather_runs g = { 0, end - k, 1, k % p->row_len, 0 };
        p->head = g;
        k = end;
        ++kh;
    }
    const size_t whole = (p->k1 - k) / p->row_len;
    if (whole != 0) {
        const ts_gather_runs g = { k - p->k0, p->row_len, whole, (kh - p->kh0) * rs, rs };
        p->whole = g;
        k += whole * p->row_len;
        kh += whole;
    }
    if (k < p->k1) {                            /* kernel row kh up to k1 */
        const ts_gather_runs g = { k - p->k0, p->k1 - k, 1, (kh - p->kh0) * rs, 0 };
        p->tail = g;
    }
    /* x = ox*stride_w - pad_left >= 0 and x + span_w <= in_w - 1 */
    const ts_conv2d *c = p->c;
    p->ox_lo = (c->pad_left + c->stride_w - 1) / c->stride_w;
    p->ox_hi = 0;
    if (c->dilation_w == 1 && c->in_w - 1 + c->pad_left >= p->span_w)
        p->ox_hi = (c->in_w - 1 + c->pad_left - p->span_w) / c->stride_w + 1;
    if (p->ox_hi > p->out_w)
        p->ox_hi = p->out_w;
}

/* The k-range [k0, k1) tap by tap (conv_pack head_kh ... tail_kw). */
static void plan_taps(conv_pack *p)
{
    const size_t in_c = p->c->in_c, k_w = p->c->k_w;
    const size_t t0 = p->k0 / in_c, t1 = p->k1 / in_c;     /* taps of k0, k1 */
    const size_t whole = t0 + (p->k0 != t0 * in_c);        /* the first whole tap */
    p->head_kh = t0 / k_w;
    p->head_kw = t0 - p->head_kh * k_w;
    p->k_whole = whole * in_c < p->k1 ? whole * in_c : p->k1;
    p->taps = t1 > whole ? t1 - whole : 0;
    p->whole_kh = p->head_kh;
    p->whole_kw = p->head_kw;
    if (whole != t0 && ++p->whole_kw == k_w) {
        p->whole_kw = 0;
        ++p->whole_kh;
    }
    p->k_tail = p->k_whole + p->taps * in_c;
    p->tail_kh = t1 / k_w;
    p->tail_kw = t1 - p->tail_kh * k_w;
}

void ts_conv_plan_init(ts_conv_plan *p, const ts_path *path, const ts_conv2d *c,
                       const int8_t *input, const int8_t *pad_row, size_t k0, size_t klen)
{
    const size_t row_len = c->k_w * c->in_c, k1 = k0 + klen;
    size_t group = ts_pack_gather_group(path->pack_a, path->lp);
    memset(p, 0, sizeof *p);
    p->path = path;
    p->kind = path->pack_a;
    p->c = c;
    p->input = input;
    p->pad_row = pad_row;
    p->out_h = ts_conv2d_out_h(c);
    p->out_w = ts_conv2d_out_w(c);
    p->row_len = row_len;
    p->k0 = k0;
    p->k1 = k1;
    p->kh0 = k0 / row_len;
    p->kh1 = (k1 + row_len - 1) / row_len;
    p->image_len = c->in_h * c->in_w * c->in_c;
    p->span_w = (c->k_w - 1) * c->dilation_w;
    p->row_bytes = path->lp * ts_pack_elem_bytes(p->kind);
    /* rows per group: the gather's pair / quad (1 when it packs rows one by one), so a padded
     * window slows only its own group */
    p->group = group == 0 || group > GATHER_ROWS ? 1 : group;
    p->k_padded = klen % path->lp != 0;         /* the last k-step holds k past klen */
    plan_inside(p);
    plan_taps(p);
}

/* Rows from output pixel (oy, ox) on, at most `left`, of one output row whose windows have no
 * padding tap in the call's k-range (columns ox_lo .. ox_hi-1 of an output row inside
 * vertically for kernel rows kh0 .. kh1-1); short of `left`, whole groups. 0: none. */
static size_t inside_stretch(const conv_pack *p, size_t oy, size_t ox, size_t left)
{
    const ts_conv2d *c = p->c;
    size_t lo, hi;
    if (ox < p->ox_lo || ox >= p->ox_hi)
        return 0;
    im2col_taps_inside((ptrdiff_t)(oy * c->stride_h) - (ptrdiff_t)c->pad_top, c->in_h, c->k_h,
                       c->dilation_h, &lo, &hi);
    if (lo > p->kh0 || hi < p->kh1)
        return 0;
    const size_t n = p->ox_hi - ox;
    return n >= left ? left : n & ~(p->group - 1);
}

/* An inside stretch (inside_stretch) of n rows from output pixel (b, oy, ox), call row `first`
 * on (panels at dst, panel_bytes apart): each of the plan's gathers (head, whole, tail) over
 * all its rows at once, row i's kernel row kh0 i * stride_w pixels after the first's. */
static void pack_conv_stretch(const conv_pack *p, void *dst, size_t panel_bytes, size_t first,
                              size_t b, size_t oy, size_t ox, size_t n)
{
    const ts_conv2d *c = p->c;
    const ts_path *path = p->path;
    const size_t y0 = oy * c->stride_h + p->kh0 * c->dilation_h - c->pad_top;  /* inside */
    const int8_t *corner = p->input + b * p->image_len
                           + (y0 * c->in_w + ox * c->stride_w - c->pad_left) * c->in_c;
    const size_t dx = c->stride_w * c->in_c;
    const ts_gather_runs *const g[3] = { &p->head, &p->whole, &p->tail };
    for (size_t i = 0; i < 3; ++i)
        if (g[i]->n != 0 && g[i]->runs != 0)
            ts_pack_gather_strided(p->kind, path->lp, path->ep, dst, panel_bytes, first, corner,
                                   dx, n, g[i]);
}

/* Rows of the next chunk from output pixel (oy, ox), row pr of its panel, `left` rows to go:
 * within the panel, GATHER_ROWS at most; where output rows have inside stretches, within the
 * output row, and a left edge (windows in the left padding) only up to the group where the
 * stretch can start. */
static size_t chunk_rows(const conv_pack *p, size_t ox, size_t pr, size_t left)
{
    const size_t ep = p->path->ep, group = p->group;
    size_t n = ep - pr < left ? ep - pr : left;
    if (n > GATHER_ROWS)
        n = GATHER_ROWS;
    if (p->ox_hi > p->ox_lo) {
        if (n > p->out_w - ox)
            n = p->out_w - ox;
        if (ox < p->ox_lo) {
            const size_t edge = (p->ox_lo - ox + group - 1) & ~(group - 1);
            if (n > edge)
                n = edge;
        }
    }
    return n;
}

/* Moves output pixel (b, oy, ox) n rows on. */
static void advance_pixel(const conv_pack *p, size_t *b, size_t *oy, size_t *ox, size_t n)
{
    *ox += n;
    while (*ox >= p->out_w) {
        *ox -= p->out_w;
        if (++*oy == p->out_h) { *oy = 0; ++*b; }
    }
}

void ts_pack_conv_panels(const ts_conv_plan *plan, size_t m0, size_t rows, void *dst,
                         size_t panel_bytes)
{
    const conv_pack *p = plan;
    const ts_path *path = p->path;
    const size_t row_bytes = p->row_bytes, ep = path->ep, group = p->group;
    size_t ox = m0 % p->out_w, oy = m0 / p->out_w % p->out_h, b = m0 / p->out_w / p->out_h;
    unsigned char *const panels = (unsigned char *)dst;
    /* what the panels hold beyond the data: zero first (rows past `rows`, k past k1) */
    for (size_t r = 0; r < rows; r += ep) {
        const size_t panel_rows = rows - r < ep ? rows - r : ep;
        if (panel_rows < ep || p->k_padded)
            ts_pack_clear_padding(p->kind, path->lp, panels + r / ep * panel_bytes, panel_rows,
                                  ep, p->k1 - p->k0);
    }
    for (size_t r = 0; r < rows;) {
        size_t n = inside_stretch(p, oy, ox, rows - r);
        if (n != 0) {                   /* inside windows, across panels */
            pack_conv_stretch(p, panels, panel_bytes, r, b, oy, ox, n);
        } else {                        /* a chunk within one panel */
            unsigned char *const at = panels + r / ep * panel_bytes + r % ep * row_bytes;
            n = chunk_rows(p, ox, r % ep, rows - r);
            if (!pack_conv_row(p, at, b, oy, ox, n, group, row_bytes)) {
                window w[GATHER_ROWS];
                size_t wb = b, woy = oy, wox = ox;
                im2col_windows(p, &wb, &woy, &wox, w, n);
                pack_conv_chunk(p, at, w, n, group, row_bytes);
            }
        }
        advance_pixel(p, &b, &oy, &ox, n);
        r += n;
    }
}

size_t ts_conv_padded_rows(const ts_conv2d *c)
{
    return c->batch * (c->pad_top + c->in_h + c->pad_bottom);
}

/* Rows [first, last) of the padded input (ts_gemm_internal.h), image by image: the pad value
 * before, between and after the input rows that fall in the range (ts_pack_fill_runs: the
 * right padding of one row and the left of the next are one run), the input rows into the
 * middle in one strided copy (ts_pack_copy_runs): every byte written by the packing module's
 * vector moves, no libc. */
void ts_pack_conv_padded_rows(const ts_conv2d *c, const int8_t *input, int8_t pad, int8_t *dst,
                              size_t first, size_t last)
{
    const size_t in_c = c->in_c, row = c->in_w * in_c;
    const size_t left = c->pad_left * in_c, right = c->pad_right * in_c;
    const size_t padded_row = left + row + right;
    const size_t padded_h = c->pad_top + c->in_h + c->pad_bottom;
    const unsigned char value = (unsigned char)pad;
    while (first < last) {
        /* this image's rows p0 .. p1-1 hold its input rows y0 .. y1-1 */
        const size_t b = first / padded_h, p0 = first % padded_h;
        const size_t p1 = last - first < padded_h - p0 ? p0 + (last - first) : padded_h;
        const size_t y0 = p0 > c->pad_top ? p0 - c->pad_top : 0;
        const size_t y1 = p1 <= c->pad_top ? 0 : p1 - c->pad_top < c->in_h ? p1 - c->pad_top
                                                                           : c->in_h;
        int8_t *image = dst + b * padded_h * padded_row;
        size_t at = p0 * padded_row;   /* the first byte of the range not yet written */
        if (y0 < y1) {
            const size_t copy_at = (c->pad_top + y0) * padded_row + left, rows = y1 - y0;
            ts_pack_fill_runs(image + at, 0, value, copy_at - at, 1);
            if (rows > 1)
                ts_pack_fill_runs(image + copy_at + row, padded_row, value, right + left,
                                  rows - 1);
            ts_pack_copy_runs(image + copy_at, padded_row, input + (b * c->in_h + y0) * row,
                              row, row, rows);
            at = copy_at + (rows - 1) * padded_row + row;
        }
        ts_pack_fill_runs(image + at, 0, value, p1 * padded_row - at, 1);
        first += p1 - p0;
    }
}
