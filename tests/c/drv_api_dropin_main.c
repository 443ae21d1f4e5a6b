/* Drop-in check: a user program that sees only the generated folder (tilesmith.h). It runs
 * each public entry point once on small data and compares with its own triple loops.
 * Prints the kernels used and "dropin ok", or the first mismatch; exit status 1 on failure. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tilesmith.h"

#define M 19
#define N 23
#define K 37

static int fail(const char *what)
{
    printf("mismatch: %s\n", what);
    return 1;
}

int main(void)
{
    static float af[M * K], bf[K * N], cf[M * N];
    static int8_t a8[M * K], b8[K * N], c8[M * N];
    static int32_t c32[M * N];
    for (int i = 0; i < M * K; ++i) { a8[i] = (int8_t)(i * 37 % 255 - 127); af[i] = (float)a8[i] / 64; }
    for (int i = 0; i < K * N; ++i) { b8[i] = (int8_t)(i * 91 % 251 - 125); bf[i] = (float)b8[i] / 32; }

    /* f32 and bf16: inputs are multiples of 2^-6 / 2^-5 with <= 8 significant bits, so every
     * product and partial sum is exact in fp32 (|sum| < 2^17 with 11 fraction bits): both
     * GEMMs must give the exact integer-based sum. */
    if (ts_gemm_f32(M, N, K, af, K, bf, N, cf, N) != TS_OK) return fail("gemm_f32 rc");
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
            long s = 0;
            for (int k = 0; k < K; ++k) s += (long)a8[m * K + k] * b8[k * N + n];
            if (cf[m * N + n] != (float)s / 2048) return fail("gemm_f32");
        }
    if (ts_gemm_bf16(M, N, K, af, K, bf, N, cf, N) != TS_OK) return fail("gemm_bf16 rc");
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
            long s = 0;
            for (int k = 0; k < K; ++k) s += (long)a8[m * K + k] * b8[k * N + n];
            if (cf[m * N + n] != (float)s / 2048) return fail("gemm_bf16");
        }

    if (ts_gemm_s8s32(M, N, K, a8, K, b8, N, c32, N) != TS_OK) return fail("gemm_s8s32 rc");
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
            int32_t s = 0;
            for (int k = 0; k < K; ++k) s += a8[m * K + k] * b8[k * N + n];
            if (c32[m * N + n] != s) return fail("gemm_s8s32");
        }

    /* gemm_s8 with multiplier 2^30 (0.5), shift -8, single rounding: y = floor(x/512 + 1/2). */
    int32_t mult = 1 << 30, shift = -8;
    ts_quant q = { 0, 0, NULL, &mult, &shift, 0, -128, 127, TS_ROUND_SINGLE };
    if (ts_gemm_s8(M, N, K, a8, K, b8, N, &q, c8, N) != TS_OK) return fail("gemm_s8 rc");
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
            long t = c32[m * N + n] + 256, r = t >= 0 ? t / 512 : -((-t + 511) / 512);
            r = r < -128 ? -128 : r > 127 ? 127 : r;
            if (c8[m * N + n] != r) return fail("gemm_s8");
        }

    /* conv2d: 1x1 kernel over a 1x19 image = the GEMM above with B = filter^T. */
    ts_conv2d c = { 1, 1, M, K, N, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0 };
    static int8_t filter[N * K];
    for (int n = 0; n < N; ++n)
        for (int k = 0; k < K; ++k) filter[n * K + k] = b8[k * N + n];
    void *ws = malloc(ts_conv2d_s8_workspace_size(&c));
    static int8_t out[M * N];
    if (ws == NULL || ts_conv2d_s8(&c, a8, filter, &q, out, ws) != TS_OK) return fail("conv2d rc");
    for (int i = 0; i < M * N; ++i)
        if (out[i] != c8[i]) return fail("conv2d");
    free(ws);

    printf("features %u kernels %s %s %s\ndropin ok\n", ts_cpu_features(),
           ts_gemm_kernel(TS_GEMM_F32), ts_gemm_kernel(TS_GEMM_BF16), ts_gemm_kernel(TS_GEMM_INT8));
    return 0;
}
