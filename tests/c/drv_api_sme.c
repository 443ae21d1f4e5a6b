/* SME dispatch harness: the streaming vector length is read at every selection and a packed B
 * handle keeps the layout (SVL) it was packed for.
 *
 *   drv_api_sme
 * On a CPU with SME (TS_FEAT_SME): for every SVL the kernel allows (Linux prctl PR_SME_SET_VL,
 * 2048 bits down to 128), every GEMM type with an SME path still selects it, results match the
 * reference (fp32 and fp16 -> fp32 GEMM 37 x 45 x 19 against double sums; int8 through the QEMU issue 2083
 * model where the emulator has it), a handle packed at the previous SVL is rejected (TS_EINVAL,
 * C untouched) and one packed now is accepted; TS_FEAT_SME masked off rejects SME handles and
 * runs the NEON paths. Prints "svl=<bytes> f32=<kernel> ..." per SVL; last line
 * "failures <n>". Without SME it checks that no SME path is chosen. */
#include "drv_api_common.h"

#define PR_SME_SET_VL 63   /* linux/prctl.h */

static const int SME_TYPES[] = { TS_GEMM_F32, TS_GEMM_BF16, TS_GEMM_INT8, TS_GEMM_U8S8,
                                 TS_GEMM_F16F32 };

static void fill(float *p, size_t n) { for (size_t i = 0; i < n; ++i) p[i] = rand_f32(); }

/* fp32 GEMM (plain, and through handle h when h != NULL) checked against double sums. */
static void check_f32(size_t M, size_t N, size_t K, const float *A, const float *B, float *C,
                      const ts_packed_b *h, const char *what)
{
    int rc = h ? ts_gemm_f32_prepacked(M, A, K, h, C, N) : ts_gemm_f32(M, N, K, A, K, B, N, C, N);
    CHECK(rc == TS_OK, "%s rc %d", what, rc);
    for (size_t m = 0; m < M; ++m)
        for (size_t n = 0; n < N; ++n) {
            double s = 0, a_s = 0;
            for (size_t k = 0; k < K; ++k) {
                s += (double)A[m * K + k] * B[k * N + n];
                a_s += fabs((double)A[m * K + k] * B[k * N + n]);
            }
            double bound = 1.01 * (double)(K + 1) * ldexp(1, -24) * a_s + 1e-30;
            CHECK(fabs(C[m * N + n] - s) <= bound, "%s C[%zu][%zu] = %g, ref %g", what, m, n,
                  C[m * N + n], s);
        }
}

/* fp16 -> fp32 GEMM on fp16 values with fractions (sums not exact in fp32) against double sums
 * within tilesmith.h's fp32-accumulation bound: the SME path's FMOPA (widening) adds each k
 * pair as one step, the NEON paths one product at a time; both must stay inside it. */
static void check_f16f32(size_t M, size_t N, size_t K, const uint16_t *A, const uint16_t *B,
                         float *C, const char *what)
{
    CHECK(ts_gemm_f16f32(M, N, K, A, K, B, N, C, N) == TS_OK, "%s rc", what);
    for (size_t m = 0; m < M; ++m)
        for (size_t n = 0; n < N; ++n) {
            double s = 0, a_s = 0;
            for (size_t k = 0; k < K; ++k) {
                double p = half_value(A[m * K + k]) * half_value(B[k * N + n]);
                s += p;
                a_s += fabs(p);
            }
            CHECK(fabs(C[m * N + n] - s) <= half_bound(0, 0, K, s, a_s),
                  "%s svl %ld C[%zu][%zu] = %.9g, ref %.9g", what, sme_vl_bytes(), m, n,
                  C[m * N + n], s);
        }
}

/* int8 GEMM through the public API against int64 sums (issue 2083 model on an SME path). */
static void check_s8(size_t M, size_t N, size_t K, const int8_t *A, const int8_t *B, int32_t *C)
{
    const int bugged = imopa_s != 0 && sme_tile_runs(TS_GEMM_INT8, M, N);
    CHECK(ts_gemm_s8s32(M, N, K, A, K, B, N, C, N) == TS_OK, "s8s32 rc");
    for (size_t m = 0; m < M; ++m)
        for (size_t n = 0; n < N; ++n) {
            long row = imopa_row(bugged, m, n, M);
            int64_t s = 0;
            for (size_t k = 0; k < K && row >= 0; ++k)
                s += (int64_t)A[(size_t)row * K + k] * B[k * N + n];
            CHECK(C[m * N + n] == (int32_t)s, "s8s32 svl %ld C[%zu][%zu] = %d, ref %lld",
                  sme_vl_bytes(), m, n, C[m * N + n], (long long)s);
        }
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    enum { M = 37, N = 45, K = 19 };
    float *A = guarded(M * K * 4), *B = guarded(K * N * 4), *C = guarded(M * N * 4);
    int8_t *A8 = guarded(M * K), *B8 = guarded(K * N);
    int32_t *C32 = guarded(M * N * 4);
    uint16_t *A16 = guarded(M * K * 2), *B16 = guarded(K * N * 2);
    fill(A, M * K);
    fill(B, K * N);
    for (size_t i = 0; i < M * K; ++i) A8[i] = rand_s8();
    for (size_t i = 0; i < K * N; ++i) B8[i] = rand_s8();
    for (size_t i = 0; i < M * K; ++i) A16[i] = half_bits(rand_f32());
    for (size_t i = 0; i < K * N; ++i) B16[i] = half_bits(rand_f32());
    int sme = (ts_cpu_features() & TS_FEAT_SME) != 0;
    printf("sme=%d\n", sme);
    if (!sme) {   /* no SME: no SME path, whatever the mask */
        for (size_t t = 0; t < sizeof SME_TYPES / sizeof SME_TYPES[0]; ++t)
            CHECK(!sme_path(SME_TYPES[t]), "type %d: SME kernel %s without SME", SME_TYPES[t],
                  ts_gemm_kernel(SME_TYPES[t]));
        check_f32(M, N, K, A, B, C, NULL, "f32 no SME");
        printf("failures %d\n", failures);
        return failures != 0;
    }
    ts_packed_b *prev = NULL;
    long start = sme_vl_bytes();
    for (long vl = 256; vl >= 16; vl /= 2) {
        long got = prctl(PR_SME_SET_VL, vl, 0, 0, 0);
        if (got < 0 || (got & 0xffff) != vl) {   /* above this CPU's largest SVL */
            CHECK(vl > start, "PR_SME_SET_VL %ld: %ld", vl, got);
            continue;
        }
        imopa_probe();
        printf("svl=%ld f32=%s bf16=%s int8=%s u8s8=%s f16f32=%s\n", vl,
               ts_gemm_kernel(TS_GEMM_F32), ts_gemm_kernel(TS_GEMM_BF16),
               ts_gemm_kernel(TS_GEMM_INT8), ts_gemm_kernel(TS_GEMM_U8S8),
               ts_gemm_kernel(TS_GEMM_F16F32));
        for (size_t t = 0; t < sizeof SME_TYPES / sizeof SME_TYPES[0]; ++t)
            CHECK(sme_path(SME_TYPES[t]), "svl %ld type %d: %s", vl, SME_TYPES[t],
                  ts_gemm_kernel(SME_TYPES[t]));
        check_f32(M, N, K, A, B, C, NULL, "f32");
        check_s8(M, N, K, A8, B8, C32);
        check_f16f32(M, N, K, A16, B16, C, "f16f32");
        if (prev != NULL) {   /* packed at the previous (larger) SVL: another tile, rejected */
            CHECK(strcmp(ts_packed_kernel(prev), ts_gemm_kernel(TS_GEMM_F32)) == 0,
                  "same kernel symbol at every SVL");
            memset(C, 0xA5, M * N * 4);
            CHECK(ts_gemm_f32_prepacked(M, A, K, prev, C, N) == TS_EINVAL,
                  "svl %ld: handle of the previous SVL accepted", vl);
            CHECK(all_bytes(C, M * N * 4, 0xA5), "svl %ld: rejected call wrote C", vl);
            ts_packed_free(prev);
        }
        CHECK(ts_pack_b_f32(K, N, B, N, &prev) == TS_OK, "pack at svl %ld", vl);
        check_f32(M, N, K, A, B, C, prev, "f32 prepacked");
        /* TS_FEAT_SME masked off: the NEON path, and the SME handle rejected */
        ts_set_feature_mask(~TS_FEAT_SME);
        CHECK(!sme_path(TS_GEMM_F32) && !sme_path(TS_GEMM_INT8), "mask: %s",
              ts_gemm_kernel(TS_GEMM_F32));
        memset(C, 0xA5, M * N * 4);
        CHECK(ts_gemm_f32_prepacked(M, A, K, prev, C, N) == TS_EINVAL, "masked: SME handle accepted");
        CHECK(all_bytes(C, M * N * 4, 0xA5), "masked: rejected call wrote C");
        check_f32(M, N, K, A, B, C, NULL, "f32 masked");
        check_s8(M, N, K, A8, B8, C32);
        check_f16f32(M, N, K, A16, B16, C, "f16f32 masked");
        ts_set_feature_mask(~0u);
    }
    ts_packed_free(prev);
    release_all();
    printf("failures %d\n", failures);
    return failures != 0;
}
