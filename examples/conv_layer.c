/* conv_layer.c: an int8 conv2d layer and a fully connected (FC) layer with TFLite
 * requantisation, run through an execution context (threads + a caller-owned workspace).
 *
 * What an inference engine does per layer:
 *   at load time:  create a context, pack the filter once (ts_pack_conv2d_filter_s8_ctx),
 *                  size the workspace for the context's threads;
 *   per inference: ts_conv2d_s8_prepacked_ctx / ts_gemm_s8_ctx, no allocation.
 * Each result is checked bit for bit against a plain-C reference written from TFLite's
 * definitions (below). Prints one line; exit status 0 when every output matches. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tilesmith.h"

/* ---- plain-C reference (TFLite int8 semantics, default double rounding) ---------------- */

/* gemmlowp SaturatingRoundingDoublingHighMul: round(a * b / 2^31), saturating INT32_MIN^2 */
static int32_t ref_high_mul(int32_t a, int32_t b) {
    if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
    int64_t ab = (int64_t)a * b;
    int64_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

/* gemmlowp RoundingDivideByPOT: x / 2^e rounded half away from zero */
static int32_t ref_div_pot(int32_t x, int e) {
    int32_t mask = (int32_t)(((int64_t)1 << e) - 1), rem = x & mask;
    int32_t threshold = (mask >> 1) + (x < 0);
    return (x >> e) + (rem > threshold);
}

/* TFLite MultiplyByQuantizedMultiplier for the right shifts (shift <= 0) used here */
static int32_t ref_requant(int32_t acc, int32_t multiplier, int32_t shift) {
    return ref_div_pot(ref_high_mul(acc, multiplier), (int)-shift);
}

static int8_t ref_output(int32_t acc, const ts_quant *q, size_t channel) {
    size_t i = q->per_channel ? channel : 0;
    int32_t v = ref_requant(acc + q->bias[channel], q->multiplier[i], q->shift[i]) + q->c_zero_point;
    return (int8_t)(v < q->act_min ? q->act_min : v > q->act_max ? q->act_max : v);
}

/* conv2d over NHWC input and OHWI filter, padding taps = a_zero_point (so they add 0) */
static void ref_conv2d(const ts_conv2d *c, const int8_t *in, const int8_t *filter,
                       const ts_quant *q, int8_t *out) {
    size_t oh = ts_conv2d_out_h(c), ow = ts_conv2d_out_w(c);
    for (size_t b = 0; b < c->batch; b++)
        for (size_t y = 0; y < oh; y++)
            for (size_t x = 0; x < ow; x++)
                for (size_t o = 0; o < c->out_c; o++) {
                    int32_t acc = 0;
                    for (size_t ky = 0; ky < c->k_h; ky++)
                        for (size_t kx = 0; kx < c->k_w; kx++) {
                            long iy = (long)(y * c->stride_h + ky * c->dilation_h) - (long)c->pad_top;
                            long ix = (long)(x * c->stride_w + kx * c->dilation_w) - (long)c->pad_left;
                            if (iy < 0 || ix < 0 || iy >= (long)c->in_h || ix >= (long)c->in_w)
                                continue;
                            const int8_t *px = in + ((b * c->in_h + (size_t)iy) * c->in_w + (size_t)ix) * c->in_c;
                            const int8_t *w = filter + ((o * c->k_h + ky) * c->k_w + kx) * c->in_c;
                            for (size_t ic = 0; ic < c->in_c; ic++)
                                acc += (px[ic] - q->a_zero_point) * w[ic];
                        }
                    out[((b * oh + y) * ow + x) * c->out_c + o] = ref_output(acc, q, o);
                }
}

/* ---- helpers ---------------------------------------------------------------------------- */

static uint32_t rng = 12345u;
static int8_t random_s8(void) { rng = rng * 1664525u + 1013904223u; return (int8_t)(rng >> 24); }

static size_t count_diffs(const int8_t *a, const int8_t *b, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += a[i] != b[i];
    return bad;
}

#define TRY(call) do { int rc_ = (call); if (rc_ != TS_OK) { \
    printf("conv_layer: FAILED: %s returned %d (%s)\n", #call, rc_, ts_last_error()); \
    return 1; } } while (0)

int main(void) {
    /* 3x3 conv, stride 1, padding 1: 2 x 12 x 12 x 16 -> 2 x 12 x 12 x 24 */
    ts_conv2d c = { .batch = 2, .in_h = 12, .in_w = 12, .in_c = 16, .out_c = 24,
                    .k_h = 3, .k_w = 3, .stride_h = 1, .stride_w = 1,
                    .dilation_h = 1, .dilation_w = 1,
                    .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1 };
    size_t in_n = c.batch * c.in_h * c.in_w * c.in_c;
    size_t f_n = c.out_c * c.k_h * c.k_w * c.in_c;
    size_t out_n = c.batch * ts_conv2d_out_h(&c) * ts_conv2d_out_w(&c) * c.out_c;

    int8_t *input = malloc(in_n), *filter = malloc(f_n);
    int8_t *output = malloc(out_n), *expected = malloc(out_n);
    for (size_t i = 0; i < in_n; i++) input[i] = random_s8();
    for (size_t i = 0; i < f_n; i++) filter[i] = random_s8();

    /* per-channel requantisation as a TFLite converter writes it: bias, Q31 multiplier and a
     * right shift per output channel; the output clamped to the fused ReLU's range */
    int32_t bias[24], multiplier[24], shift[24];
    for (size_t o = 0; o < c.out_c; o++) {
        bias[o] = (int32_t)(o * 97) - 1000;
        multiplier[o] = 1300000000 + (int32_t)o * 20000000;   /* 0.6 .. 0.83 in Q31 */
        shift[o] = -9 - (int32_t)(o % 3);                      /* / 2^9 .. / 2^11 */
    }
    ts_quant q = { .a_zero_point = -3, .c_zero_point = 5, .bias = bias,
                   .multiplier = multiplier, .shift = shift, .per_channel = 1,
                   .act_min = 5, .act_max = 127,               /* ReLU: output >= c_zero_point */
                   .rounding = TS_ROUND_DOUBLE };
    ref_conv2d(&c, input, filter, &q, expected);

    /* Load time: a context with 2 threads (or ts_context_set_parallel_for for the engine's
     * own pool), the filter packed once, and a workspace sized for those threads. */
    ts_context *ctx;
    TRY(ts_context_create(&ctx));
    /* 2 threads; a library built with TS_NO_THREADS runs one (the same results) */
    const unsigned threads = ts_context_set_num_threads(ctx, 2) == TS_OK ? 2 : 1;
    ts_packed_b *packed_filter;
    TRY(ts_pack_conv2d_filter_s8_ctx(ctx, &c, filter, &packed_filter));
    size_t ws_bytes = ts_conv2d_s8_workspace_size_ctx(ctx, &c);
    void *workspace = malloc(ws_bytes);

    /* Per inference: no allocation, the workspace is checked against ws_bytes */
    TRY(ts_conv2d_s8_prepacked_ctx(ctx, &c, input, packed_filter, &q, output,
                                   workspace, ws_bytes));
    size_t conv_bad = count_diffs(output, expected, out_n);

    /* FC layer: 4 x 200 activations times 200 x 10 weights (K x N, row-major), per-tensor
     * requantisation, no clamp beyond int8. The context's workspace serves every _ctx GEMM. */
    enum { M = 4, K = 200, N = 10 };
    int8_t A[M * K], B[K * N], C[M * N], C_ref[M * N];
    for (size_t i = 0; i < M * K; i++) A[i] = random_s8();
    for (size_t i = 0; i < K * N; i++) B[i] = random_s8();
    int32_t fc_bias[N], fc_mult = 1518500250, fc_shift = -10;  /* 0.707 / 2^10 */
    for (size_t n = 0; n < N; n++) fc_bias[n] = (int32_t)n * 300;
    ts_quant fq = { .a_zero_point = 7, .c_zero_point = -2, .bias = fc_bias,
                    .multiplier = &fc_mult, .shift = &fc_shift, .per_channel = 0,
                    .act_min = -128, .act_max = 127, .rounding = TS_ROUND_DOUBLE };
    for (size_t m = 0; m < M; m++)
        for (size_t n = 0; n < N; n++) {
            int32_t acc = 0;
            for (size_t k = 0; k < K; k++) acc += (A[m * K + k] - fq.a_zero_point) * B[k * N + n];
            C_ref[m * N + n] = ref_output(acc, &fq, n);
        }
    size_t gemm_ws = ts_context_workspace_size(ctx, TS_GEMM_INT8, M, N, K);
    void *gemm_workspace = malloc(gemm_ws);
    TRY(ts_context_set_workspace(ctx, gemm_workspace, gemm_ws));
    TRY(ts_gemm_s8_ctx(ctx, M, N, K, A, K, B, N, &fq, C, N));
    size_t fc_bad = count_diffs(C, C_ref, M * N);

    int ok = conv_bad == 0 && fc_bad == 0;
    printf("conv_layer: %s: conv2d %zu/%zu and fc %zu/%zu int8 outputs differ from the reference"
           " (kernel %s, workspace %zu bytes, %u threads)\n", ok ? "OK" : "FAILED",
           conv_bad, out_n, fc_bad, (size_t)(M * N), ts_packed_kernel(packed_filter), ws_bytes,
           threads);

    ts_packed_free(packed_filter);
    ts_context_free(ctx);
    free(gemm_workspace); free(workspace);
    free(input); free(filter); free(output); free(expected);
    return ok ? 0 : 1;
}
