/* conv2d API harness: ts_conv2d_s8 and ts_conv2d_s8_prepacked against a direct convolution
 * (loops over output pixel, tap and channel; no im2col), requantized per output channel by
 * the TFLite reference of drv_api_common.h. Input, filter, output and workspaces (exactly
 * ts_conv2d_s8_workspace_size, ts_conv2d_s8_prepacked_workspace_size bytes: the sizes
 * tilesmith.h documents for the calls that take them on trust) sit flush against guard pages;
 * the checked _ctx forms refuse one byte less.
 *
 *   drv_api_conv MASKS      comma-separated feature masks (decimal), as drv_api_gemm.
 * Last line "failures <n>"; exit status 1 on any failure. */
#include "drv_api_common.h"

/* batch, in_h, in_w, in_c, out_c, k_h, k_w, stride_h, stride_w, dilation_h, dilation_w,
 * pad_top, pad_left, pad_bottom, pad_right */
static const ts_conv2d shapes[] = {
    { 1, 5, 7, 3, 7, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0 },      /* 1x1 (input read as A) */
    { 1, 7, 7, 13, 5, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0 },     /* 1x1 stride 2 */
    { 1, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 },      /* 1x1 with padding */
    { 1, 8, 8, 3, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1 },     /* 3x3 stride 1 */
    { 1, 9, 9, 7, 33, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1 },     /* 3x3 stride 2 */
    { 1, 8, 8, 13, 7, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1 },     /* 3x3 stride 2, TF "SAME" asymmetric */
    { 1, 7, 6, 3, 7, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2 },      /* 5x5 */
    { 1, 9, 9, 7, 3, 5, 5, 1, 1, 1, 1, 0, 0, 0, 0 },      /* 5x5 valid */
    { 1, 9, 9, 3, 13, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2 },     /* dilation 2 */
    { 1, 10, 8, 7, 7, 3, 3, 1, 1, 2, 2, 0, 0, 0, 0 },     /* dilation 2, no padding */
    { 1, 6, 7, 13, 7, 3, 3, 1, 1, 1, 1, 0, 2, 1, 0 },     /* asymmetric padding */
    { 2, 5, 5, 7, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1 },     /* batch 2 */
    { 2, 4, 3, 33, 7, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0 },     /* batch 2, 1x1 */
    { 1, 3, 3, 13, 7, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0 },     /* 1x1 output */
    { 1, 5, 5, 3, 33, 5, 5, 2, 2, 1, 1, 0, 0, 0, 0 },     /* 1x1 output, stride 2 */
    { 1, 5, 5, 33, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1 },    /* 33 -> 33 channels */
    { 1, 4, 9, 7, 13, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1 },     /* 1x3 kernel */
    { 1, 9, 4, 3, 7, 3, 1, 2, 1, 1, 1, 1, 0, 1, 0 },      /* 3x1 kernel, stride (2, 1) */
    { 1, 8, 9, 13, 3, 3, 3, 1, 2, 2, 1, 2, 1, 2, 1 },     /* dilation (2, 1), stride (1, 2) */
    { 1, 4, 4, 3, 7, 3, 3, 1, 1, 1, 1, 3, 3, 3, 3 },      /* padding wider than the kernel reach */
    { 1, 6, 6, 7, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1 },      /* one output channel */
    { 1, 7, 7, 1, 13, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1 },     /* one input channel */
    { 2, 11, 11, 3, 7, 5, 5, 2, 2, 2, 2, 4, 4, 4, 4 },    /* batch 2, 5x5, stride 2, dilation 2 */
    { 1, 12, 12, 33, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1 },  /* M 144, N 40, K 297 */
    /* implicit im2col: in_c a multiple of the k-step (whole taps per k-step, NEON gather of
     * 16-byte runs, unpadded kernel rows gathered as one run) */
    { 1, 10, 10, 16, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1 },  /* 3x3 padded, in_c 16 */
    { 2, 9, 9, 32, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1 },     /* batch 2, stride 2, in_c 32 */
    { 1, 9, 9, 16, 8, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2 },     /* dilation 2, in_c 16 */
    { 1, 7, 7, 8, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1 },      /* in_c 8: one smmla k-step per tap */
    { 1, 6, 6, 4, 9, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0 },      /* in_c 4, no padding: rows of 12 */
    { 1, 8, 8, 24, 16, 3, 3, 2, 1, 1, 2, 0, 1, 1, 0 },    /* stride (2,1), dilation (1,2) */
    { 3, 6, 6, 64, 16, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0 },    /* 1x1 direct, batch 3, in_c 64 */
    { 2, 14, 14, 64, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1 },  /* ResNet-like 3x3 64, batch 2 */
    /* whole 8-row smmla panels inside one output row's windows: the overlapping-rows gather
     * (ts_pack.c gather_panel_overlap_lp8), k_w 2 and 3, in_c / 8 odd and even; out_w 15 mixes
     * them with partial panels */
    { 1, 9, 9, 24, 7, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0 },     /* 2x2, in_c 24 */
    { 1, 18, 17, 40, 9, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0 },   /* 3x3, in_c 40, out_w 15 */
    { 1, 10, 10, 16, 6, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0 },   /* 3x3, in_c 16 */
    /* K = k_h*k_w*in_c beyond every int8 path's unsplit K (kw_steps k-steps: smmla 409 x 8,
     * sdot 546 x 4, smlal 1092 x 1 at most, gen/blocking.py whole_k_steps; the int8 SME path at
     * 2048 bits 102 x 16): the engine packs A per K block, whose boundaries cut kernel rows and
     * taps */
    { 1, 5, 5, 380, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1 },    /* K 3420, in_c off the k-step */
    { 1, 6, 6, 384, 7, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0 },    /* K 3456, stride 2, in_c 384 */
    { 1, 7, 7, 136, 5, 5, 5, 1, 1, 2, 2, 2, 2, 2, 2 },    /* K 3400, 5x5 dilation 2 */
    { 1, 10, 10, 384, 5, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0 },  /* K 3456, stride 1, full panels */
    /* a padded conv whose padded input is at most a quarter of its im2col matrix packs from a
     * copy with the padding made real (ts_conv2d.c padded_copy_bytes; most padded shapes above
     * do, those with the quarter exceeded — e.g. 3x3 stride 2 — do not): padding on one side
     * only, each side; every window padded, with the copy and without; stride 2 with it */
    { 1, 6, 7, 16, 8, 3, 3, 1, 1, 1, 1, 2, 0, 0, 0 },     /* top only */
    { 1, 6, 7, 16, 8, 3, 3, 1, 1, 1, 1, 0, 2, 0, 0 },     /* left only */
    { 1, 6, 7, 16, 8, 3, 3, 1, 1, 1, 1, 0, 0, 2, 0 },     /* bottom only */
    { 1, 6, 7, 16, 8, 3, 3, 1, 1, 1, 1, 0, 0, 0, 2 },     /* right only */
    { 1, 3, 3, 5, 7, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2 },      /* every window padded, copied */
    { 1, 2, 2, 3, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1 },      /* every window padded, not copied */
    { 1, 16, 16, 8, 5, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2 },    /* 5x5 stride 2, copied */
    { 1, 11, 10, 16, 9, 3, 3, 1, 1, 2, 2, 2, 1, 3, 2 },   /* dilation 2, uneven padding */
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

static size_t ref_out(size_t in, size_t pa, size_t pb, size_t k, size_t s, size_t d)
{
    return (in + pa + pb - d * (k - 1) - 1) / s + 1;
}

/* The int32 sum of output pixel `pix` (batch-major, then rows, then columns of oh x ow) and
 * channel oc; pix < 0: the sum of an all-zero im2col row (imopa_row), -a_zp * sum of the
 * filter's weights, what the kernel's zero plus the driver's zero-point correction give. */
static int64_t ref_acc(const ts_conv2d *c, const int8_t *in, const int8_t *f, const ts_quant *q,
                       long pix, size_t oh, size_t ow, size_t oc)
{
    int64_t acc = 0;
    if (pix < 0) {
        for (size_t k = 0; k < c->k_h * c->k_w * c->in_c; ++k)
            acc += (int64_t)(0 - q->a_zero_point) * f[oc * c->k_h * c->k_w * c->in_c + k];
        return acc;
    }
    size_t b = (size_t)pix / (oh * ow), oy = (size_t)pix / ow % oh, ox = (size_t)pix % ow;
    for (size_t kh = 0; kh < c->k_h; ++kh) {
        long iy = (long)(oy * c->stride_h + kh * c->dilation_h) - (long)c->pad_top;
        for (size_t kw = 0; kw < c->k_w; ++kw) {
            long ix = (long)(ox * c->stride_w + kw * c->dilation_w) - (long)c->pad_left;
            if (iy < 0 || ix < 0 || iy >= (long)c->in_h || ix >= (long)c->in_w)
                continue;                      /* padding: (a_zp - a_zp) * w = 0 */
            for (size_t ic = 0; ic < c->in_c; ++ic) {
                int32_t x = in[((b * c->in_h + (size_t)iy) * c->in_w + (size_t)ix) * c->in_c + ic];
                int32_t w = f[((oc * c->k_h + kh) * c->k_w + kw) * c->in_c + ic];
                acc += (int64_t)(x - q->a_zero_point) * w;
            }
        }
    }
    return acc;
}

static void run_shape(const ts_conv2d *c, size_t index)
{
    size_t oh = ref_out(c->in_h, c->pad_top, c->pad_bottom, c->k_h, c->stride_h, c->dilation_h);
    size_t ow = ref_out(c->in_w, c->pad_left, c->pad_right, c->k_w, c->stride_w, c->dilation_w);
    CHECK(ts_conv2d_out_h(c) == oh && ts_conv2d_out_w(c) == ow, "shape %zu: out %zux%zu, want %zux%zu",
          index, ts_conv2d_out_h(c), ts_conv2d_out_w(c), oh, ow);
    size_t in_n = c->batch * c->in_h * c->in_w * c->in_c;
    size_t f_n = c->out_c * c->k_h * c->k_w * c->in_c;
    size_t out_n = c->batch * oh * ow * c->out_c;
    /* each call's workspace exactly the size tilesmith.h documents for it, its last byte
     * before a guard page (so at any alignment): a call that wrote more would fault */
    size_t ws_n = ts_conv2d_s8_workspace_size(c), pws_n = ts_conv2d_s8_prepacked_workspace_size(c);
    CHECK(ws_n > 0 && pws_n > 0 && pws_n <= ws_n, "shape %zu: workspace sizes %zu, %zu", index,
          ws_n, pws_n);
    int8_t *in = guarded(in_n), *f = guarded(f_n), *out = guarded(out_n), *ws = guarded(ws_n);
    int8_t *pws = guarded(pws_n);
    for (size_t i = 0; i < in_n; ++i) in[i] = rand_s8();
    for (size_t i = 0; i < f_n; ++i) f[i] = rand_s8();
    static int32_t bias[64], mult[64], shift[64];
    ts_quant q;
    random_quant(&q, c->out_c, bias, mult, shift, 1, (int)(index & 1));

    ts_packed_b *pf = NULL;
    CHECK(ts_pack_conv2d_filter_s8(c, f, &pf) == TS_OK, "shape %zu: pack filter", index);
    /* the GEMM tile's layout only (a conv never runs the GEMV kernel), at least the filter */
    CHECK(pf != NULL && ts_packed_gemv_kernel(pf) == NULL && ts_packed_size(pf) >= f_n,
          "shape %zu: filter handle of %zu bytes with GEMV layout %s", index,
          pf ? ts_packed_size(pf) : 0, pf && ts_packed_gemv_kernel(pf) ? "yes" : "no");
    for (int prepacked = 0; prepacked < 2; ++prepacked) {
        memset(out, 0x5A, out_n);
        int rc = prepacked ? ts_conv2d_s8_prepacked(c, in, pf, &q, out, pws)
                           : ts_conv2d_s8(c, in, f, &q, out, ws);
        CHECK(rc == TS_OK, "shape %zu%s: rc %d", index, prepacked ? " prepacked" : "", rc);
        int bad = 0;
        const int bugged = imopa_s != 0 && sme_path(TS_GEMM_INT8);   /* QEMU issue 2083 model */
        for (size_t b = 0; b < c->batch && !bad; ++b)
            for (size_t oy = 0; oy < oh && !bad; ++oy)
                for (size_t ox = 0; ox < ow && !bad; ++ox)
                    for (size_t oc = 0; oc < c->out_c && !bad; ++oc) {
                        int8_t got = out[((b * oh + oy) * ow + ox) * c->out_c + oc];
                        size_t pix = (b * oh + oy) * ow + ox;
                        long row = imopa_row(bugged, pix, oc, c->batch * oh * ow);
                        int8_t want = ref_requant((int32_t)ref_acc(c, in, f, &q, row, oh, ow, oc),
                                                  oc, &q);
                        bad = got != want;
                        CHECK(!bad, "shape %zu%s: out[%zu][%zu][%zu][%zu] = %d, ref %d", index,
                              prepacked ? " prepacked" : "", b, oy, ox, oc, got, want);
                    }
    }
    /* the checked forms tilesmith.h names for them: one byte less than the documented size is
     * refused, nothing written; the documented size runs */
    memset(out, 0x5A, out_n);
    CHECK(ts_conv2d_s8_ctx(NULL, c, in, f, &q, out, ws + 1, ws_n - 1) == TS_EINVAL
          && ts_conv2d_s8_prepacked_ctx(NULL, c, in, pf, &q, out, pws + 1, pws_n - 1) == TS_EINVAL
          && out[0] == 0x5A && out[out_n - 1] == 0x5A, "shape %zu: a workspace 1 byte short",
          index);
    CHECK(ts_conv2d_s8_ctx(NULL, c, in, f, &q, out, ws, ws_n) == TS_OK
          && ts_conv2d_s8_prepacked_ctx(NULL, c, in, pf, &q, out, pws, pws_n) == TS_OK,
          "shape %zu: checked calls at the documented sizes", index);
    ts_packed_free(pf);
    release_all();
}

int main(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "usage: %s MASKS\n", argv[0]); return 2; }
    setvbuf(stdout, NULL, _IONBF, 0);
    imopa_probe();
    for (char *mask_s = strtok(argv[1], ","); mask_s; mask_s = strtok(NULL, ",")) {
        unsigned mask = (unsigned)strtoul(mask_s, NULL, 0);
        ts_set_feature_mask(mask);
        printf("mask=%u int8=%s\n", mask, ts_gemm_kernel(TS_GEMM_INT8));
        for (size_t i = 0; i < N_SHAPES; ++i)
            run_shape(&shapes[i], i);
    }
    printf("shapes %zu\nfailures %d\n", N_SHAPES, failures);
    return failures != 0;
}
