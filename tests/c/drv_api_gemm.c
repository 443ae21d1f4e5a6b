/* GEMM API harness: ts_gemm_f32 / bf16 / s8s32 / s8 / u8s8s32 / u8u32 / u8 / f16 / f16f32
 * and their prepacked variants against
 * scalar references, every buffer flush against guard pages, gaps between rows (ld > cols)
 * poisoned in the inputs and checked untouched in the output.
 *
 *   drv_api_gemm MASKS M,N,K ...
 * MASKS: comma-separated feature masks (decimal); for each, the harness sets the mask, prints
 * "mask=<m> f32=<kernel> bf16=<kernel> int8=<kernel> u8s8=<kernel> u8u32=<kernel> f16=<kernel>
 * f16f32=<kernel>" and runs
 * every shape through every
 * entry point. Last line "failures <n>"; exit status 1 on any failure. */
#include "drv_api_common.h"

enum kind { F32, BF16, S8S32, S8, U8S8S32, U8U32, U8, F16, F16F32 };
static const char *kind_name[] = { "f32", "bf16", "s8s32", "s8", "u8s8s32", "u8u32", "u8", "f16",
                                   "f16f32" };
static const int kind_type[] = { TS_GEMM_F32, TS_GEMM_BF16, TS_GEMM_INT8, TS_GEMM_INT8,
                                 TS_GEMM_U8S8, TS_GEMM_U8U32, TS_GEMM_U8S8, TS_GEMM_F16,
                                 TS_GEMM_F16F32 };
static int half_in(enum kind k) { return k == F16 || k == F16F32; }
static int a_unsigned(enum kind k) { return k == U8S8S32 || k == U8U32 || k == U8; }
static int b_unsigned(enum kind k) { return k == U8U32; }
static int quantized(enum kind k) { return k == S8 || k == U8; }

typedef struct { int32_t bias[1024], mult[1024], shift[1024]; ts_quant q; } quant_store;

/* float inputs: value or, in a gap between rows, NaN (a read of a gap poisons the result) */
static void fill_float(float *p, size_t rows, size_t cols, size_t ld)
{
    size_t n = rows == 0 || cols == 0 ? 0 : (rows - 1) * ld + cols;
    for (size_t i = 0; i < n; ++i)
        p[i] = i % ld < cols ? rand_f32() : NAN;
}

/* fp16 inputs in (-2, 2) (|a*b| < 4: K*4 stays far below 65504 for every K here); in a gap
 * between rows a NaN (0x7E00). */
static void fill_half(uint16_t *p, size_t rows, size_t cols, size_t ld)
{
    size_t n = rows == 0 || cols == 0 ? 0 : (rows - 1) * ld + cols;
    for (size_t i = 0; i < n; ++i)
        p[i] = i % ld < cols ? half_bits(rand_f32()) : 0x7E00u;
}

static double ref_half(const uint16_t *A, size_t lda, const uint16_t *B, size_t ldb, size_t m,
                       size_t n, size_t K, double *abs_sum)
{
    double s = 0, a_s = 0;
    for (size_t k = 0; k < K; ++k) {
        double p = half_value(A[m * lda + k]) * half_value(B[k * ldb + n]);
        s += p;
        a_s += fabs(p);
    }
    *abs_sum = a_s;
    return s;
}

/* Whether dispatch runs the fp16-accumulating kernel for ts_gemm_f16 now. */
static int f16_accumulates_in_fp16(void)
{
    return strstr(ts_gemm_kernel(TS_GEMM_F16), "_f16_fmla_") != NULL;
}

static void fill_s8(int8_t *p, size_t rows, size_t cols, size_t ld)
{
    size_t n = rows == 0 || cols == 0 ? 0 : (rows - 1) * ld + cols;
    for (size_t i = 0; i < n; ++i)
        p[i] = rand_s8();
}

/* |C - ref| bound of an fp32 sum of K exact products in any order, with or without FMA:
 * gamma_K * sum|a*b| (Higham, Accuracy and Stability, Thm 3.5), gamma_K ~ K*u, u = 2^-24.
 * The bf16 products are exact in fp32; bfmmla (before FEAT_EBF16) rounds its internal sums to
 * odd, up to 1 ulp = 2u each: bound doubled. */
static double float_bound(size_t K, double abs_sum, int bf16)
{
    double u = ldexp(1.0, -24) * (bf16 ? 2 : 1);
    return 1.01 * (double)(K + 1) * u * abs_sum + 1e-30;
}

static double ref_float(enum kind kind, const float *A, size_t lda, const float *B, size_t ldb,
                        size_t m, size_t n, size_t K, double *abs_sum)
{
    double s = 0, a_s = 0;
    for (size_t k = 0; k < K; ++k) {
        double a = A[m * lda + k], b = B[k * ldb + n];
        if (kind == BF16) { a = ref_bf16((float)a); b = ref_bf16((float)b); }
        s += a * b;
        a_s += fabs(a * b);
    }
    *abs_sum = a_s;
    return s;
}

/* Integer reference: sum_k (A[m][k] - a_zp) * B[k][n] in int64, A and/or B read as uint8 per kind,
 * row m of A (m < 0: a row of zeros, imopa_row). */
static int64_t ref_int_signs(enum kind kind, const void *A, size_t lda, const void *B,
                             size_t ldb, long m, size_t n, size_t K, int32_t a_zp)
{
    int64_t s = 0;
    for (size_t k = 0; k < K; ++k) {
        int32_t a = m < 0 ? 0 : a_unsigned(kind) ? ((const uint8_t *)A)[(size_t)m * lda + k]
                                                 : ((const int8_t *)A)[(size_t)m * lda + k];
        int32_t b = b_unsigned(kind) ? ((const uint8_t *)B)[k * ldb + n]
                                     : ((const int8_t *)B)[k * ldb + n];
        s += (int64_t)(a - a_zp) * b;
    }
    return s;
}

/* ONNX Runtime QLinearMatMul output: the TFLite requantization, uint8 zero point and clamp. */
static uint8_t ref_requant_u8(int32_t acc, size_t n, const ts_quant *q)
{
    int32_t x = (int32_t)((uint32_t)acc + (uint32_t)(q->bias ? q->bias[n] : 0));
    size_t ch = q->per_channel ? n : 0;
    int64_t y = (int64_t)ref_mbqm(x, q->multiplier[ch], q->shift[ch], q->rounding) + q->c_zero_point;
    y = y < q->act_min ? q->act_min : y > q->act_max ? q->act_max : y;
    return (uint8_t)y;
}

/* Calls the entry point under test; prepacked: pack B first (and check the handle's kernel). */
static int call(enum kind kind, int prepacked, size_t M, size_t N, size_t K, const void *A,
                size_t lda, const void *B, size_t ldb, const ts_quant *q, void *C, size_t ldc)
{
    if (!prepacked) {
        switch (kind) {
        case F32: return ts_gemm_f32(M, N, K, A, lda, B, ldb, C, ldc);
        case BF16: return ts_gemm_bf16(M, N, K, A, lda, B, ldb, C, ldc);
        case S8S32: return ts_gemm_s8s32(M, N, K, A, lda, B, ldb, C, ldc);
        case S8: return ts_gemm_s8(M, N, K, A, lda, B, ldb, q, C, ldc);
        case U8S8S32: return ts_gemm_u8s8s32(M, N, K, A, lda, B, ldb, C, ldc);
        case U8U32: return ts_gemm_u8u32(M, N, K, A, lda, B, ldb, C, ldc);
        case U8: return ts_gemm_u8(M, N, K, A, lda, B, ldb, q, C, ldc);
        case F16: return ts_gemm_f16(M, N, K, A, lda, B, ldb, C, ldc);
        case F16F32: return ts_gemm_f16f32(M, N, K, A, lda, B, ldb, C, ldc);
        }
    }
    ts_packed_b *pb = NULL;
    int rc = kind == F32 ? ts_pack_b_f32(K, N, B, ldb, &pb)
           : kind == BF16 ? ts_pack_b_bf16(K, N, B, ldb, &pb)
           : kind == U8U32 ? ts_pack_b_u8u32(K, N, B, ldb, &pb)
           : kind == F16 ? ts_pack_b_f16(K, N, B, ldb, &pb)
           : kind == F16F32 ? ts_pack_b_f16f32(K, N, B, ldb, &pb)
           : a_unsigned(kind) ? ts_pack_b_u8s8(K, N, B, ldb, &pb) : ts_pack_b_s8(K, N, B, ldb, &pb);
    CHECK(rc == TS_OK && pb != NULL, "pack %s rc %d", kind_name[kind], rc);
    if (rc != TS_OK)
        return rc;
    CHECK(strcmp(ts_packed_kernel(pb), ts_gemm_kernel(kind_type[kind])) == 0,
          "handle kernel %s vs dispatch %s", ts_packed_kernel(pb), ts_gemm_kernel(kind_type[kind]));
    switch (kind) {
    case F32: rc = ts_gemm_f32_prepacked(M, A, lda, pb, C, ldc); break;
    case BF16: rc = ts_gemm_bf16_prepacked(M, A, lda, pb, C, ldc); break;
    case S8S32: rc = ts_gemm_s8s32_prepacked(M, A, lda, pb, C, ldc); break;
    case S8: rc = ts_gemm_s8_prepacked(M, A, lda, pb, q, C, ldc); break;
    case U8S8S32: rc = ts_gemm_u8s8s32_prepacked(M, A, lda, pb, C, ldc); break;
    case U8U32: rc = ts_gemm_u8u32_prepacked(M, A, lda, pb, C, ldc); break;
    case U8: rc = ts_gemm_u8_prepacked(M, A, lda, pb, q, C, ldc); break;
    case F16: rc = ts_gemm_f16_prepacked(M, A, lda, pb, C, ldc); break;
    case F16F32: rc = ts_gemm_f16f32_prepacked(M, A, lda, pb, C, ldc); break;
    }
    ts_packed_free(pb);
    return rc;
}

static void run_case(enum kind kind, int prepacked, size_t M, size_t N, size_t K, size_t pad)
{
    int is_float = kind == F32 || kind == BF16;
    size_t in_elem = is_float ? 4 : half_in(kind) ? 2 : 1;
    size_t out_elem = quantized(kind) ? 1 : kind == F16 ? 2 : 4;
    size_t lda = K + pad, ldb = N + pad, ldc = N + pad;
    void *A = guarded(matrix_bytes(M, K, lda, in_elem));
    void *B = guarded(matrix_bytes(K, N, ldb, in_elem));
    size_t c_bytes = matrix_bytes(M, N, ldc, out_elem);
    unsigned char *C = guarded(c_bytes);
    static quant_store qs;
    if (is_float) { fill_float(A, M, K, lda); fill_float(B, K, N, ldb); }
    else if (half_in(kind)) { fill_half(A, M, K, lda); fill_half(B, K, N, ldb); }
    else { fill_s8(A, M, K, lda); fill_s8(B, K, N, ldb); }
    const int fp16_acc = kind == F16 && f16_accumulates_in_fp16();
    random_quant(&qs.q, N, qs.bias, qs.mult, qs.shift, (int)(rng_next() & 1), (int)(rng_next() & 1));
    if (kind == U8) {   /* the same draw moved to uint8 zero points and clamp range */
        qs.q.a_zero_point += 128;
        qs.q.c_zero_point += 128;
        qs.q.act_min += 128;
        qs.q.act_max += 128;
    }
    /* a quarter of the cases with a_zero_point 0: B packed in the call then keeps no column
     * sums (ts_engine.c skip_col_sums), the requantisation has no correction to add */
    if ((rng_next() & 3) == 0)
        qs.q.a_zero_point = 0;
    /* uint8: an eighth each with a_zero_point 255 and 128, the ends of the u8s8 sdot path's
     * correction (a_zero_point - 128) * sum_k B[k][n]: 127, and 0 (column sums skipped) */
    const unsigned zp_draw = (unsigned)(rng_next() & 7);
    if (kind == U8 && zp_draw < 2)
        qs.q.a_zero_point = zp_draw == 0 ? 255 : 128;
    memset(C, 0xA5, c_bytes);
    const int bugged = imopa_s != 0 && sme_tile_runs(kind_type[kind], M, N);   /* QEMU issue 2083 model */

    int rc = call(kind, prepacked, M, N, K, A, lda, B, ldb, &qs.q, C, ldc);
    CHECK(rc == TS_OK, "%s%s %zux%zux%zu rc %d", kind_name[kind], prepacked ? " prepacked" : "",
          M, N, K, rc);
    int bad = 0;
    for (size_t m = 0; m < M && N > 0 && !bad; ++m) {   /* N = 0: C has no byte */
        for (size_t n = 0; n < ldc && (m + 1 < M || n < N) && !bad; ++n) {
            unsigned char *c = C + (m * ldc + n) * out_elem;
            if (n >= N) {                            /* gap between rows: untouched */
                bad = !all_bytes(c, out_elem, 0xA5);
                CHECK(!bad, "%s %zux%zux%zu wrote gap (%zu,%zu)", kind_name[kind], M, N, K, m, n);
            } else if (half_in(kind)) {
                double abs_sum, ref = ref_half(A, lda, B, ldb, m, n, K, &abs_sum);
                double got;
                if (kind == F16) {
                    uint16_t h;
                    memcpy(&h, c, 2);
                    got = half_value(h);
                } else {
                    float f;
                    memcpy(&f, c, 4);
                    got = f;
                }
                double bound = half_bound(fp16_acc, kind == F16, K, ref, abs_sum);
                bad = !(fabs(got - ref) <= bound);
                CHECK(!bad, "%s%s %zux%zux%zu C[%zu][%zu] = %.9g, ref %.9g +- %.3g (%s)",
                      kind_name[kind], prepacked ? " prepacked" : "", M, N, K, m, n, got, ref,
                      bound, ts_gemm_kernel(kind_type[kind]));
            } else if (is_float) {
                double abs_sum, ref = ref_float(kind, A, lda, B, ldb, m, n, K, &abs_sum);
                float got;
                memcpy(&got, c, 4);
                bad = !(fabs(got - ref) <= float_bound(K, abs_sum, kind == BF16));
                CHECK(!bad, "%s%s %zux%zux%zu C[%zu][%zu] = %.9g, ref %.9g", kind_name[kind],
                      prepacked ? " prepacked" : "", M, N, K, m, n, got, ref);
            } else if (kind >= U8S8S32 && kind <= U8) {
                int32_t a_zp = kind == U8 ? qs.q.a_zero_point : 0;
                uint32_t acc = (uint32_t)ref_int_signs(kind, A, lda, B, ldb,
                                                       imopa_row(bugged, m, n, M), n, K, a_zp);
                if (kind == U8) {
                    uint8_t want = ref_requant_u8((int32_t)acc, n, &qs.q);
                    bad = *c != want;
                    CHECK(!bad, "u8%s %zux%zux%zu C[%zu][%zu] = %u, ref %u",
                          prepacked ? " prepacked" : "", M, N, K, m, n, *c, want);
                } else {
                    uint32_t got;
                    memcpy(&got, c, 4);
                    bad = got != acc;
                    CHECK(!bad, "%s%s %zux%zux%zu C[%zu][%zu] = %u, ref %u", kind_name[kind],
                          prepacked ? " prepacked" : "", M, N, K, m, n, got, acc);
                }
            } else {
                int32_t a_zp = kind == S8 ? qs.q.a_zero_point : 0;
                int32_t acc = (int32_t)(uint32_t)ref_int_signs(kind, A, lda, B, ldb,
                                                               imopa_row(bugged, m, n, M), n, K, a_zp);
                if (kind == S8) {
                    int8_t want = ref_requant(acc, n, &qs.q);
                    bad = *(int8_t *)c != want;
                    CHECK(!bad, "s8%s %zux%zux%zu C[%zu][%zu] = %d, ref %d",
                          prepacked ? " prepacked" : "", M, N, K, m, n, *(int8_t *)c, want);
                } else {
                    int32_t got;
                    memcpy(&got, c, 4);
                    bad = got != acc;
                    CHECK(!bad, "s8s32%s %zux%zux%zu C[%zu][%zu] = %d, ref %d",
                          prepacked ? " prepacked" : "", M, N, K, m, n, got, acc);
                }
            }
        }
    }
    /* A plain call packs B itself and may run its last B panel on a column-tail kernel
     * (gen/ntail.py); a handle keeps the uniform layout and pads. Every element is the same
     * operations in the same order either way: the float results too are the same bits. */
    if (!prepacked && rc == TS_OK && (is_float || half_in(kind)) && M > 0 && N > 0) {
        unsigned char *C2 = guarded(c_bytes);
        memset(C2, 0xA5, c_bytes);
        CHECK(call(kind, 1, M, N, K, A, lda, B, ldb, &qs.q, C2, ldc) == TS_OK,
              "%s prepacked twin %zux%zux%zu rc", kind_name[kind], M, N, K);
        CHECK(memcmp(C, C2, c_bytes) == 0, "%s %zux%zux%zu: plain and prepacked results differ "
              "(%s)", kind_name[kind], M, N, K, ts_gemm_kernel(kind_type[kind]));
    }
    release_all();
}

/* A handle stays valid over many calls; a handle packed for another kernel or type is
 * rejected with EINVAL and C left untouched. */
static void test_prepacked_reuse_and_rejection(unsigned mask)
{
    size_t M = 9, N = 13, K = 11;
    int8_t *A = guarded(M * K), *B = guarded(K * N);
    int32_t *C = guarded(M * N * 4);
    fill_s8(A, M, K, K); fill_s8(B, K, N, N);
    ts_packed_b *pb = NULL, *pf = NULL;
    CHECK(ts_pack_b_s8(K, N, B, N, &pb) == TS_OK, "pack_b_s8");
    CHECK(ts_pack_b_f32(0, 0, NULL, 0, &pf) == TS_OK, "pack_b_f32 empty");
    for (int round = 0; round < 3; ++round) {
        size_t rows = M - (size_t)round * 3;
        const int bugged = imopa_s != 0 && sme_tile_runs(TS_GEMM_INT8, rows, N);   /* QEMU issue 2083 model */
        CHECK(ts_gemm_s8s32_prepacked(rows, A, K, pb, C, N) == TS_OK, "reuse %d", round);
        for (size_t m = 0; m < rows; ++m)
            for (size_t n = 0; n < N; ++n)
                CHECK(C[m * N + n] == (int32_t)ref_int_signs(S8S32, A, K, B, N,
                                                             imopa_row(bugged, m, n, rows), n, K, 0),
                      "reuse %d (%zu,%zu)", round, m, n);
    }
    memset(C, 0xA5, M * N * 4);
    CHECK(ts_gemm_f32_prepacked(M, (const float *)A, K, pb, (float *)C, N) == TS_EINVAL,
          "int8 handle accepted by gemm_f32_prepacked");
    CHECK(ts_gemm_s8s32_prepacked(M, A, K, pf, C, N) == TS_EINVAL, "f32 handle accepted by s8s32");
    /* change the dispatch: every other mask that selects another int8 kernel must reject */
    unsigned others[] = { 0u, TS_FEAT_DOTPROD, ~0u, ~TS_FEAT_SME };
    for (size_t i = 0; i < 4; ++i) {
        ts_set_feature_mask(others[i]);
        int same = strcmp(ts_gemm_kernel(TS_GEMM_INT8), ts_packed_kernel(pb)) == 0;
        int rc = ts_gemm_s8s32_prepacked(M, A, K, pb, C, N);
        CHECK(same ? rc == TS_OK : rc == TS_EINVAL, "mask %u: kernel %s, handle %s, rc %d",
              others[i], ts_gemm_kernel(TS_GEMM_INT8), ts_packed_kernel(pb), rc);
        if (!same)
            CHECK(all_bytes(C, M * N * 4, 0xA5), "rejected call wrote C");
        memset(C, 0xA5, M * N * 4);
    }
    ts_set_feature_mask(mask);
    ts_packed_free(pb);
    ts_packed_free(pf);
    ts_packed_free(NULL);
    release_all();
}

/* M = 0 or N = 0 is an empty call (tilesmith.h): TS_OK without reading A or B, so they may
 * be NULL; the strides are still checked. */
static void test_empty_calls_read_nothing(void)
{
    ts_packed_b *h = NULL;
    CHECK(ts_gemm_f32(0, 8, 4, NULL, 4, NULL, 8, NULL, 8) == TS_OK, "M = 0, A and B NULL");
    CHECK(ts_gemm_f32(2, 0, 4, NULL, 4, NULL, 0, NULL, 0) == TS_OK, "N = 0, A and B NULL");
    CHECK(ts_gemm_s8s32(0, 5, 3, NULL, 3, NULL, 5, NULL, 5) == TS_OK, "int8 M = 0, NULLs");
    CHECK(ts_gemm_f32(0, 8, 4, NULL, 4, NULL, 7, NULL, 8) == TS_EINVAL, "M = 0, ldb < N");
    CHECK(ts_pack_b_f32(4, 0, NULL, 0, &h) == TS_OK, "pack_b_f32 N = 0");
    CHECK(h != NULL && ts_gemm_f32_prepacked(3, NULL, 4, h, NULL, 0) == TS_OK,
          "prepacked N = 0, A and C NULL");
    ts_packed_free(h);
}

/* A NaN input stays NaN through bf16 rounding: its row of C is NaN, the others finite. */
static void test_bf16_nan(void)
{
    size_t M = 3, N = 5, K = 7;
    float *A = guarded(M * K * 4), *B = guarded(K * N * 4), *C = guarded(M * N * 4);
    fill_float(A, M, K, K); fill_float(B, K, N, N);
    A[1 * K + 4] = NAN;
    CHECK(ts_gemm_bf16(M, N, K, A, K, B, N, C, N) == TS_OK, "bf16 NaN rc");
    for (size_t m = 0; m < M; ++m)
        for (size_t n = 0; n < N; ++n)
            CHECK(m == 1 ? isnan(C[m * N + n]) : isfinite(C[m * N + n]), "bf16 NaN C[%zu][%zu] = %g",
                  m, n, C[m * N + n]);
    release_all();
}

/* Special values through both fp16 GEMMs on the current path: a NaN in A poisons its row of C
 * (NaN), +inf times positive values gives +inf, inf * 0 gives NaN, subnormal sums are exact,
 * products of -0 sum to +0 (the accumulators start at +0; IEEE: +0 + -0 = +0). */
static void test_f16_special_values(void)
{
    enum { M = 6, N = 5, K = 2 };
    uint16_t A[M * K] = {
        0x0001u, 0x03FFu,     /* row 0: subnormals: with B = 1.0 the sums are exact */
        0x7E00u, 0x3C00u,     /* row 1: quiet NaN */
        0x7C00u, 0x0000u,     /* row 2: +inf, then 0 * B */
        0x8000u, 0x8000u,     /* row 3: -0, -0 */
        0x7C01u, 0x3C00u,     /* row 4: signalling NaN */
        0xFC00u, 0x3C00u };   /* row 5: -inf */
    uint16_t B[K * N];
    for (size_t i = 0; i < K * N; ++i)
        B[i] = 0x3C00u;       /* 1.0 */
    B[1 * N + 4] = 0x7C00u;   /* column 4, k 1: +inf -> row 2 (0 * inf) NaN, row 3 -0*inf NaN */
    for (int prepacked = 0; prepacked < 2; ++prepacked) {
        uint16_t C16[M * N];
        float C32[M * N];
        CHECK(call(F16, prepacked, M, N, K, A, K, B, N, NULL, C16, N) == TS_OK, "f16 special rc");
        CHECK(call(F16F32, prepacked, M, N, K, A, K, B, N, NULL, C32, N) == TS_OK, "f16f32 special rc");
        for (size_t m = 0; m < M; ++m)
            for (size_t n = 0; n < N; ++n) {
                double h = half_value(C16[m * N + n]), f = C32[m * N + n];
                int inf_col = n == 4;
                double want = m == 0 ? (inf_col ? INFINITY : ldexp(1 + 0x3FF, -24))
                            : m == 1 || m == 4 ? NAN
                            : m == 2 ? (inf_col ? NAN : INFINITY)
                            : m == 3 ? (inf_col ? NAN : 0.0)
                            : (inf_col ? NAN : -INFINITY);
                int ok16 = isnan(want) ? isnan(h) : h == want;
                int ok32 = isnan(want) ? isnan(f) : f == want;
                if (m == 3 && !inf_col) {   /* +0 exactly (bits) */
                    ok16 = ok16 && C16[m * N + n] == 0x0000u;
                    ok32 = ok32 && !signbit(f);
                }
                CHECK(ok16 && ok32, "special%s C[%zu][%zu]: f16 %04x (%s), f16f32 %g (%s), want %g",
                      prepacked ? " prepacked" : "", m, n, C16[m * N + n],
                      ts_gemm_kernel(TS_GEMM_F16), f, ts_gemm_kernel(TS_GEMM_F16F32), want);
            }
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: %s MASKS M,N,K...\n", argv[0]); return 2; }
    setvbuf(stdout, NULL, _IONBF, 0);   /* keep the output of a crashing run */
    printf("features=%u\n", ts_cpu_features());
    imopa_probe();
    for (char *mask_s = strtok(argv[1], ","); mask_s; mask_s = strtok(NULL, ",")) {
        unsigned mask = (unsigned)strtoul(mask_s, NULL, 0);
        ts_set_feature_mask(mask);
        printf("mask=%u f32=%s bf16=%s int8=%s u8s8=%s u8u32=%s qdyn=%s f16=%s f16f32=%s\n", mask,
               ts_gemm_kernel(TS_GEMM_F32), ts_gemm_kernel(TS_GEMM_BF16),
               ts_gemm_kernel(TS_GEMM_INT8), ts_gemm_kernel(TS_GEMM_U8S8),
               ts_gemm_kernel(TS_GEMM_U8U32), ts_gemm_kernel(TS_GEMM_QDYN),   /* qdyn: drv_api_qdyn.c */
               ts_gemm_kernel(TS_GEMM_F16), ts_gemm_kernel(TS_GEMM_F16F32));
        for (int i = 2; i < argc; ++i) {
            size_t M, N, K;
            if (sscanf(argv[i], "%zu,%zu,%zu", &M, &N, &K) != 3) { fprintf(stderr, "bad shape\n"); return 2; }
            for (int kind = F32; kind <= F16F32; ++kind)
                for (int prepacked = 0; prepacked < 2; ++prepacked)
                    run_case((enum kind)kind, prepacked, M, N, K, (size_t)(i % 3) * 2);
        }
        test_prepacked_reuse_and_rejection(mask);
        test_bf16_nan();
        test_empty_calls_read_nothing();
        test_f16_special_values();
    }
    ts_set_feature_mask(~0u);
    printf("failures %d\n", failures);
    return failures != 0;
}
