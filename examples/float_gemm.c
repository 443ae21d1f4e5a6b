/* float_gemm.c: fp32 GEMM C = A x B with prepacked weights and threads.
 *
 * What an inference engine does:
 *   at load time:  create a context with threads, pack the constant B (K x N) once;
 *   per inference: ts_gemm_f32_prepacked_ctx for any number of rows M (the handle holds
 *                  B for the GEMV kernel too, so M = 1 and M = 37 share it).
 * Sizes are deliberately odd (not multiples of any tile) and A has a row stride > K.
 * tilesmith's fp32 results are specified bit for bit: each C[m][n] is the chain of fused
 * multiply-adds over k = 0 .. K-1 in order, starting from 0, on every path and thread count.
 * The plain-C reference below computes exactly that with fmaf, and the check is bit-exact.
 * Prints one line; exit status 0 when every output matches. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilesmith.h"

enum { MAX_M = 37, N = 45, K = 131, LDA = K + 3 };

/* C[m][n] = fma(A[m][K-1], B[K-1][n], ... fma(A[m][0], B[0][n], 0.0f)) */
static void ref_gemm_f32(size_t M, const float *A, const float *B, float *C) {
    for (size_t m = 0; m < M; m++)
        for (size_t n = 0; n < N; n++) {
            float acc = 0.0f;
            for (size_t k = 0; k < K; k++) acc = fmaf(A[m * LDA + k], B[k * N + n], acc);
            C[m * N + n] = acc;
        }
}

static uint32_t rng = 7u;
static float random_unit(void) {                       /* uniform in [-1, 1) */
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / 8388608.0f - 1.0f;
}

#define TRY(call) do { int rc_ = (call); if (rc_ != TS_OK) { \
    printf("float_gemm: FAILED: %s returned %d (%s)\n", #call, rc_, ts_last_error()); \
    return 1; } } while (0)

int main(void) {
    float *A = malloc(sizeof(float) * MAX_M * LDA), *B = malloc(sizeof(float) * K * N);
    float *C = malloc(sizeof(float) * MAX_M * N), *C_ref = malloc(sizeof(float) * MAX_M * N);
    for (size_t i = 0; i < (size_t)MAX_M * LDA; i++) A[i] = random_unit();
    for (size_t i = 0; i < (size_t)K * N; i++) B[i] = random_unit();

    /* load time: 3 threads from the built-in pool; B packed once */
    ts_context *ctx;
    TRY(ts_context_create(&ctx));
    /* 3 threads; a library built with TS_NO_THREADS runs one (the same results) */
    const unsigned threads = ts_context_set_num_threads(ctx, 3) == TS_OK ? 3 : 1;
    ts_packed_b *packed_b;
    TRY(ts_pack_b_f32_ctx(ctx, K, N, B, N, &packed_b));

    /* per inference: one row (GEMV kernel), then a batch of rows (GEMM tile) */
    size_t rows[2] = { 1, MAX_M }, bad = 0, checked = 0;
    for (int i = 0; i < 2; i++) {
        size_t M = rows[i];
        TRY(ts_gemm_f32_prepacked_ctx(ctx, M, A, LDA, packed_b, C, N));
        ref_gemm_f32(M, A, B, C_ref);
        for (size_t j = 0; j < M * N; j++) bad += memcmp(&C[j], &C_ref[j], sizeof(float)) != 0;
        checked += M * N;
    }

    printf("float_gemm: %s: %zu of %zu fp32 outputs (M=1 and M=%d, N=%d, K=%d) differ from the"
           " fmaf chain (kernels %s, %s; %u threads)\n", bad ? "FAILED" : "OK", bad, checked,
           MAX_M, N, K, ts_gemm_kernel_mn(TS_GEMM_F32, 1, N),
           ts_gemm_kernel_mn(TS_GEMM_F32, MAX_M, N), threads);

    ts_packed_free(packed_b);
    ts_context_free(ctx);
    free(A); free(B); free(C); free(C_ref);
    return bad ? 1 : 0;
}
