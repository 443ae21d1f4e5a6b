/* llm_linear.c: an LLM linear layer, fp32 activations x int4 weights -> fp32 (the "qdyn" path:
 * each activation row is quantised to int8 on the fly, the weights are int4 with one fp32
 * scale per block of 32 inputs, as in GGML's Q4 formats).
 *
 * What an inference engine does:
 *   at load time:  quantise the fp32 weights (ts_quantize_qs4, or take a checkpoint's int4
 *                  data in tilesmith.h's nibble order: GGML's Q4_0 blocks are reordered and
 *                  recoded first, as tilesmith.h says) and pack them once
 *                  (ts_pack_b_qs4_ctx); the raw weights may be freed then;
 *   per token:     decode, M = 1 row of activations (ts_gemm_qdyn_f32);
 *   per prompt:    prefill, M > 1 rows through the same handle.
 * int8 weights: ts_quantize_qs8 and ts_pack_b_qs8_ctx (one scale per output channel), the
 * calls after packing unchanged. Several layers on the same activations (Q, K, V) can share
 * their quantisation: ts_pack_a_qdyn once, then ts_gemm_qdyn_f32_packed_a per layer.
 * Checked against a plain-C float64 product of the activations and the dequantised weights,
 * within the error bound tilesmith.h documents (the activations' int8 quantisation step), and
 * decode against prefill: a row's result does not depend on M. Prints one line; exit 0 on OK. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilesmith.h"

enum { N = 96, K = 256, BL = 32, NB = K / BL, PREFILL_M = 9 };   /* out x in features */

/* int4 weight k of row n as ts_quantize_qs4 stores it: two per byte, low nibble first */
static int weight_q4(const uint8_t *q, size_t n, size_t k) {
    int v = (q[n * (K / 2) + k / 2] >> (4 * (k & 1))) & 15;
    return v >= 8 ? v - 16 : v;
}

/* Reference for row m: worst |C - C64| / bound over the row, with C64 the float64 product
 * A[m] . w[n] + bias[n] (w = scale x int4 value) and the bound of tilesmith.h's accuracy
 * note, sum_k (1.5 step + 2^-22 |A|) |w| plus a few fp32 roundings of the result. */
static double ref_row_error(const float *a, const uint8_t *q, const float *scales,
                            const float *bias, const float *c) {
    double lo = 0, hi = 0;
    for (size_t k = 0; k < K; k++) {
        if (a[k] < lo) lo = a[k];
        if (a[k] > hi) hi = a[k];
    }
    double step = (hi - lo) / 255;                     /* the row's int8 quantisation step */
    double worst = 0;
    for (size_t n = 0; n < N; n++) {
        double sum = bias[n], bound = 0, magnitude = fabs(bias[n]);
        for (size_t k = 0; k < K; k++) {
            double w = (double)scales[n * NB + k / BL] * weight_q4(q, n, k);
            sum += a[k] * w;
            magnitude += fabs(a[k] * w);
            bound += (1.5 * step + 0x1p-22 * fabs(a[k])) * fabs(w);
        }
        bound += (NB + 3) * 0x1p-23 * magnitude + 1e-30;
        double e = fabs(c[n] - sum) / bound;
        if (!(e <= worst)) worst = e;                  /* NaN counts as a failure */
    }
    return worst;
}

static uint32_t rng = 2024u;
static float random_unit(void) {                       /* uniform in [-1, 1) */
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / 8388608.0f - 1.0f;
}

#define TRY(call) do { int rc_ = (call); if (rc_ != TS_OK) { \
    printf("llm_linear: FAILED: %s returned %d (%s)\n", #call, rc_, ts_last_error()); \
    return 1; } } while (0)

int main(void) {
    /* ---- load time: quantise and pack the weights (N x K, PyTorch's out x in layout) ---- */
    float *W = malloc(sizeof(float) * N * K), bias[N];
    for (size_t n = 0; n < N; n++)                     /* magnitudes vary by block and row */
        for (size_t k = 0; k < K; k++)
            W[n * K + k] = 0.02f * (float)(1 + (n + 3 * (k / BL)) % 5) * random_unit();
    for (size_t n = 0; n < N; n++) bias[n] = random_unit();
    uint8_t *q4 = malloc(N * K / 2);                   /* rows of K/2 bytes */
    float *scales = malloc(sizeof(float) * N * NB);    /* N x K/BL */
    TRY(ts_quantize_qs4(N, K, W, K, BL, q4, scales));

    ts_context *ctx;
    TRY(ts_context_create(&ctx));
    /* 2 threads; a library built with TS_NO_THREADS runs one (the same results) */
    const unsigned threads = ts_context_set_num_threads(ctx, 2) == TS_OK ? 2 : 1;
    ts_packed_b *weights;                              /* one handle for decode and prefill */
    TRY(ts_pack_b_qs4_ctx(ctx, N, K, q4, K / 2, scales, BL, &weights));

    /* ---- activations: PREFILL_M tokens of K features ---- */
    float *A = malloc(sizeof(float) * PREFILL_M * K);
    for (size_t i = 0; i < (size_t)PREFILL_M * K; i++) A[i] = 2.0f * random_unit();
    float decode[N], *prefill = malloc(sizeof(float) * PREFILL_M * N);

    /* decode: one token (M = 1); no clamp (cmin, cmax = -inf, +inf) */
    TRY(ts_gemm_qdyn_f32(ctx, 1, A, K, weights, bias, -INFINITY, INFINITY, decode, N));
    /* prefill: all tokens at once, same handle */
    TRY(ts_gemm_qdyn_f32(ctx, PREFILL_M, A, K, weights, bias, -INFINITY, INFINITY, prefill, N));

    /* ---- check ---- */
    double worst = ref_row_error(A, q4, scales, bias, decode);
    for (size_t m = 0; m < PREFILL_M; m++) {
        double e = ref_row_error(A + m * K, q4, scales, bias, prefill + m * N);
        if (!(e <= worst)) worst = e;
    }
    int same_bits = memcmp(decode, prefill, sizeof decode) == 0;   /* row 0 either way */
    int ok = worst <= 1.0 && same_bits;
    printf("llm_linear: %s: int4 N=%d K=%d bl=%d, decode M=1 (kernel %s) and prefill M=%d"
           " (kernel %s), %u threads: worst error %.3f of the bound, decode row %s prefill row 0\n",
           ok ? "OK" : "FAILED", N, K, BL, ts_gemm_qdyn_kernel(ctx, weights, 1), PREFILL_M,
           ts_gemm_qdyn_kernel(ctx, weights, PREFILL_M), threads, worst,
           same_bits ? "==" : "!=");

    ts_packed_free(weights);
    ts_context_free(ctx);
    free(W); free(q4); free(scales); free(A); free(prefill);
    return ok ? 0 : 1;
}
