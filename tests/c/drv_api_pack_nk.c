/* N x K ("out x in") weight packing: ts_pack_b_<type>_nk (and _ctx) against an independent
 * reference. For every GEMM type with a K x N packer, every shape and the given feature masks:
 *   - B is drawn K x N, its N x K transpose written by a plain C loop (row stride K + pad, the
 *     gaps poisoned: NaN / 0x7E00 / 0x5A), flush against a guard page (after the last byte, or
 *     before the first: both ends);
 *   - the N x K handle and the K x N handle (ts_pack_b_<type>) run the same *_prepacked call
 *     (the quantized forms too, a_zero_point != 0: the column sums) and must give the same
 *     bytes;
 *   - the N x K results are checked against a naive GEMM on the K x N matrix: exact for the
 *     integer types, within the fp32 summation bound for f32 / bf16 / f16f32, the fp16 one for
 *     f16 (drv_api_common.h);
 *   - the _ctx twin (a context with 3 threads) gives the same bytes.
 * Then the errors: NULL B, ldb < K, a span beyond size_t, out NULL, K beyond the bound ->
 * TS_EINVAL with *out untouched.
 *
 *   drv_api_pack_nk MASKS M,N,K ...
 * Last line "failures <n>"; exit status 1 on any failure. */
#include "drv_api_common.h"

enum kind { F32, BF16, F16, F16F32, S8, U8S8, U8U32, N_KINDS };
static const char *kind_name[] = { "f32", "bf16", "f16", "f16f32", "s8", "u8s8", "u8u32" };
static const size_t elem_bytes[] = { 4, 4, 2, 2, 1, 1, 1 };
static const size_t out_bytes[] = { 4, 4, 2, 4, 4, 4, 4 };

/* The packers of each kind, K x N and N x K. */
static int pack_kn(enum kind k, const ts_context *ctx, size_t K, size_t N, const void *B,
                   size_t ldb, ts_packed_b **out)
{
    switch (k) {
    case F32: return ts_pack_b_f32_ctx(ctx, K, N, B, ldb, out);
    case BF16: return ts_pack_b_bf16_ctx(ctx, K, N, B, ldb, out);
    case F16: return ts_pack_b_f16_ctx(ctx, K, N, B, ldb, out);
    case F16F32: return ts_pack_b_f16f32_ctx(ctx, K, N, B, ldb, out);
    case S8: return ts_pack_b_s8_ctx(ctx, K, N, B, ldb, out);
    case U8S8: return ts_pack_b_u8s8_ctx(ctx, K, N, B, ldb, out);
    default: return ts_pack_b_u8u32_ctx(ctx, K, N, B, ldb, out);
    }
}

static int pack_nk(enum kind k, size_t N, size_t K, const void *B, size_t ldb, ts_packed_b **out)
{
    switch (k) {
    case F32: return ts_pack_b_f32_nk(N, K, B, ldb, out);
    case BF16: return ts_pack_b_bf16_nk(N, K, B, ldb, out);
    case F16: return ts_pack_b_f16_nk(N, K, B, ldb, out);
    case F16F32: return ts_pack_b_f16f32_nk(N, K, B, ldb, out);
    case S8: return ts_pack_b_s8_nk(N, K, B, ldb, out);
    case U8S8: return ts_pack_b_u8s8_nk(N, K, B, ldb, out);
    default: return ts_pack_b_u8u32_nk(N, K, B, ldb, out);
    }
}

static int pack_nk_ctx(enum kind k, const ts_context *ctx, size_t N, size_t K, const void *B,
                       size_t ldb, ts_packed_b **out)
{
    switch (k) {
    case F32: return ts_pack_b_f32_nk_ctx(ctx, N, K, B, ldb, out);
    case BF16: return ts_pack_b_bf16_nk_ctx(ctx, N, K, B, ldb, out);
    case F16: return ts_pack_b_f16_nk_ctx(ctx, N, K, B, ldb, out);
    case F16F32: return ts_pack_b_f16f32_nk_ctx(ctx, N, K, B, ldb, out);
    case S8: return ts_pack_b_s8_nk_ctx(ctx, N, K, B, ldb, out);
    case U8S8: return ts_pack_b_u8s8_nk_ctx(ctx, N, K, B, ldb, out);
    default: return ts_pack_b_u8u32_nk_ctx(ctx, N, K, B, ldb, out);
    }
}

/* The raw prepacked GEMM of each kind, and the quantized one of s8 / u8s8. */
static int run_prepacked(enum kind k, const ts_context *ctx, size_t M, const void *A,
                         size_t lda, const ts_packed_b *B, void *C, size_t ldc)
{
    switch (k) {
    case F32: return ts_gemm_f32_prepacked_ctx(ctx, M, A, lda, B, C, ldc);
    case BF16: return ts_gemm_bf16_prepacked_ctx(ctx, M, A, lda, B, C, ldc);
    case F16: return ts_gemm_f16_prepacked_ctx(ctx, M, A, lda, B, C, ldc);
    case F16F32: return ts_gemm_f16f32_prepacked_ctx(ctx, M, A, lda, B, C, ldc);
    case S8: return ts_gemm_s8s32_prepacked_ctx(ctx, M, A, lda, B, C, ldc);
    case U8S8: return ts_gemm_u8s8s32_prepacked_ctx(ctx, M, A, lda, B, C, ldc);
    default: return ts_gemm_u8u32_prepacked_ctx(ctx, M, A, lda, B, C, ldc);
    }
}

static int run_quantized(enum kind k, size_t M, const void *A, size_t lda, const ts_packed_b *B,
                         const ts_quant *q, void *C, size_t ldc)
{
    return k == S8 ? ts_gemm_s8_prepacked(M, A, lda, B, q, C, ldc)
                   : ts_gemm_u8_prepacked(M, A, lda, B, q, C, ldc);
}

/* Element i of a buffer of kind k, as a double (uint8 where the operand is unsigned). */
static double value(enum kind k, const void *p, size_t i, int is_a)
{
    switch (k) {
    case F32: return ((const float *)p)[i];
    case BF16: return ref_bf16(((const float *)p)[i]);
    case F16: case F16F32: return half_value(((const uint16_t *)p)[i]);
    case S8: return ((const int8_t *)p)[i];
    case U8S8: return is_a ? ((const uint8_t *)p)[i] : ((const int8_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

/* Random operand of kind k into element i (a gap: the poison). */
static void draw(enum kind k, void *p, size_t i, int gap)
{
    switch (k) {
    case F32: case BF16: ((float *)p)[i] = gap ? NAN : rand_f32(); break;
    case F16: case F16F32: ((uint16_t *)p)[i] = gap ? 0x7E00u : half_bits(rand_f32()); break;
    default: ((uint8_t *)p)[i] = gap ? 0x5A : (uint8_t)rand_s8(); break;
    }
}

static void copy_elem(enum kind k, void *dst, size_t i, const void *src, size_t j)
{
    memcpy((unsigned char *)dst + i * elem_bytes[k], (const unsigned char *)src + j * elem_bytes[k],
           elem_bytes[k]);
}

static void check_result(enum kind k, size_t M, size_t N, size_t K, const void *A, size_t lda,
                         const void *B, size_t ldb, const void *C, size_t ldc)
{
    int bad = 0;
    const int fp16_acc = k == F16 && strstr(ts_gemm_kernel(TS_GEMM_F16), "_f16_fmla_") != NULL;
    /* the SME int8 paths under QEMU issue 2083 (drv_api_common.h imopa_probe) */
    const int bugged = imopa_s != 0 && (k == S8 || k == U8S8)
                       && sme_tile_runs(k == S8 ? TS_GEMM_INT8 : TS_GEMM_U8S8, M, N);
    for (size_t m = 0; m < M && !bad; ++m)
        for (size_t n = 0; n < N && !bad; ++n) {
            double s = 0, abs_sum = 0;
            const long row = imopa_row(bugged, m, n, M);
            for (size_t kk = 0; kk < K && row >= 0; ++kk) {
                double p = value(k, A, (size_t)row * lda + kk, 1) * value(k, B, kk * ldb + n, 0);
                s += p;
                abs_sum += fabs(p);
            }
            double got, bound;
            switch (k) {
            case F32: case BF16: case F16F32:
                got = ((const float *)C)[m * ldc + n];
                bound = 1.01 * (double)(K + 1) * ldexp(1, k == BF16 ? -23 : -24) * abs_sum + 1e-30;
                break;
            case F16:
                got = half_value(((const uint16_t *)C)[m * ldc + n]);
                bound = half_bound(fp16_acc, 1, K, s, abs_sum);
                break;
            case U8U32:
                got = ((const uint32_t *)C)[m * ldc + n];
                bound = 0;
                break;
            default:
                got = ((const int32_t *)C)[m * ldc + n];
                bound = 0;
                break;
            }
            if (!(fabs(got - s) <= bound)) {
                CHECK(0, "%s nk %zux%zux%zu C[%zu][%zu] = %.9g, reference %.9g (bound %.3g)",
                      kind_name[k], M, N, K, m, n, got, s, bound);
                bad = 1;
            }
        }
}

static void run_case(enum kind k, const ts_context *ctx3, size_t M, size_t N, size_t K,
                     size_t pad, int front)
{
    const size_t e = elem_bytes[k], oe = out_bytes[k];
    const size_t lda = K + pad, ldb = N + pad, ldt = K + pad, ldc = N;
    void *A = guarded(matrix_bytes(M, K, lda, e));
    void *B = guarded(matrix_bytes(K, N, ldb, e));
    void *Bt = guarded_alloc_at(matrix_bytes(N, K, ldt, e), !front, &regions[n_regions++]);
    const size_t c_bytes = matrix_bytes(M, N, ldc, oe);
    unsigned char *C_kn = guarded(c_bytes), *C_nk = guarded(c_bytes), *C_ctx = guarded(c_bytes);
    for (size_t i = 0; i < matrix_bytes(M, K, lda, 1); ++i)
        draw(k, A, i, i % lda >= K);
    for (size_t i = 0; i < matrix_bytes(K, N, ldb, 1); ++i)
        draw(k, B, i, i % ldb >= N);
    /* the transpose, by a plain loop; the gaps between its rows poisoned */
    for (size_t i = 0; i < matrix_bytes(N, K, ldt, 1); ++i)
        draw(k, Bt, i, 1);
    for (size_t n = 0; n < N; ++n)
        for (size_t kk = 0; kk < K; ++kk)
            copy_elem(k, Bt, n * ldt + kk, B, kk * ldb + n);

    ts_packed_b *kn = NULL, *nk = NULL, *nk_ctx = NULL;
    int rc1 = pack_kn(k, NULL, K, N, B, ldb, &kn);
    int rc2 = pack_nk(k, N, K, Bt, ldt, &nk);
    int rc3 = pack_nk_ctx(k, ctx3, N, K, Bt, ldt, &nk_ctx);
    CHECK(rc1 == TS_OK && rc2 == TS_OK && rc3 == TS_OK, "%s pack %zux%zu rc %d %d %d",
          kind_name[k], N, K, rc1, rc2, rc3);
    if (rc1 == TS_OK && rc2 == TS_OK && rc3 == TS_OK) {
        CHECK(strcmp(ts_packed_kernel(kn), ts_packed_kernel(nk)) == 0, "%s kernels %s %s",
              kind_name[k], ts_packed_kernel(kn), ts_packed_kernel(nk));
        memset(C_kn, 0xA5, c_bytes);
        memset(C_nk, 0x5A, c_bytes);
        memset(C_ctx, 0x3C, c_bytes);
        rc1 = run_prepacked(k, NULL, M, A, lda, kn, C_kn, ldc);
        rc2 = run_prepacked(k, NULL, M, A, lda, nk, C_nk, ldc);
        rc3 = run_prepacked(k, ctx3, M, A, lda, nk_ctx, C_ctx, ldc);
        CHECK(rc1 == TS_OK && rc2 == TS_OK && rc3 == TS_OK, "%s run %zux%zux%zu rc %d %d %d",
              kind_name[k], M, N, K, rc1, rc2, rc3);
        CHECK(memcmp(C_kn, C_nk, c_bytes) == 0, "%s %zux%zux%zu: N x K handle != K x N handle",
              kind_name[k], M, N, K);
        CHECK(memcmp(C_nk, C_ctx, c_bytes) == 0, "%s %zux%zux%zu: _ctx twin differs",
              kind_name[k], M, N, K);
        check_result(k, M, N, K, A, lda, B, ldb, C_nk, ldc);
        if (k == S8 || k == U8S8) {
            /* the quantized form reads the column sums (a_zero_point != 0) */
            static int32_t bias[1024], mult[1024], shift[1024];
            ts_quant q;
            random_quant(&q, N, bias, mult, shift, 1, TS_ROUND_DOUBLE);
            q.a_zero_point = k == S8 ? 77 : 200;
            if (k == U8S8) {
                q.c_zero_point += 128;
                q.act_min += 128;
                q.act_max += 128;
            }
            const size_t q_bytes = matrix_bytes(M, N, ldc, 1);
            memset(C_kn, 0xA5, q_bytes);
            memset(C_nk, 0x5A, q_bytes);
            rc1 = run_quantized(k, M, A, lda, kn, &q, C_kn, ldc);
            rc2 = run_quantized(k, M, A, lda, nk, &q, C_nk, ldc);
            CHECK(rc1 == TS_OK && rc2 == TS_OK && memcmp(C_kn, C_nk, q_bytes) == 0,
                  "%s quantized %zux%zux%zu: rc %d %d, N x K handle != K x N handle",
                  kind_name[k], M, N, K, rc1, rc2);
        }
    }
    ts_packed_free(kn);
    ts_packed_free(nk);
    ts_packed_free(nk_ctx);
    release_all();
}

/* Bad arguments: TS_EINVAL, *out untouched, the reason recorded. */
static void check_errors(enum kind k, const ts_context *ctx3)
{
    unsigned char buf[64] = { 0 };
    ts_packed_b *const sentinel = (ts_packed_b *)(uintptr_t)0x5A5A5A50u, *out = sentinel;
    struct { size_t N, K, ldb; const void *B; const char *why; } bad[] = {
        { 3, 4, 4, NULL, "B is NULL" },
        { 3, 4, 3, buf, "ldb < K" },
        { 2, 4, SIZE_MAX - 2, buf, "overflows size_t" },
        { SIZE_MAX / 2, 2, 4, buf, "overflows size_t" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        out = sentinel;
        int rc = pack_nk(k, bad[i].N, bad[i].K, bad[i].B, bad[i].ldb, &out);
        CHECK(rc == TS_EINVAL && out == sentinel && strstr(ts_last_error(), bad[i].why) != NULL,
              "%s nk bad case %zu: rc %d, out %s, why \"%s\"", kind_name[k], i, rc,
              out == sentinel ? "untouched" : "written", ts_last_error());
        rc = pack_nk_ctx(k, ctx3, bad[i].N, bad[i].K, bad[i].B, bad[i].ldb, &out);
        CHECK(rc == TS_EINVAL && out == sentinel, "%s nk_ctx bad case %zu: rc %d", kind_name[k],
              i, rc);
    }
    out = sentinel;
    CHECK(pack_nk(k, 3, 4, buf, 4, NULL) == TS_EINVAL
          && strstr(ts_last_error(), "out") != NULL, "%s nk out NULL", kind_name[k]);
    /* K beyond the raw type's bound (B's span is only computed, never read) */
    const size_t max_k = k == S8 ? TS_GEMM_S8S32_MAX_K : k == U8S8 ? TS_GEMM_U8S8S32_MAX_K
                       : k == U8U32 ? TS_GEMM_U8U32_MAX_K : 0;
    if (max_k != 0) {
        int rc = pack_nk(k, 2, max_k + 1, buf, max_k + 1, &out);
        CHECK(rc == TS_EINVAL && out == sentinel && strstr(ts_last_error(), "K beyond") != NULL,
              "%s nk K bound: rc %d", kind_name[k], rc);
    }
    /* empty shapes are valid handles (K = 0: C = 0) */
    ts_packed_b *h = NULL;
    CHECK(pack_nk(k, 0, 5, NULL, 5, &h) == TS_OK && h != NULL, "%s nk N = 0", kind_name[k]);
    ts_packed_free(h);
    h = NULL;
    CHECK(pack_nk(k, 5, 0, NULL, 0, &h) == TS_OK && h != NULL, "%s nk K = 0", kind_name[k]);
    ts_packed_free(h);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MASKS M,N,K ...\n", argv[0]);
        return 2;
    }
    ts_context *ctx3 = NULL;
    if (ts_context_create(&ctx3) != TS_OK || ts_context_set_num_threads(ctx3, 3) != TS_OK) {
        printf("context setup failed\n");
        return 2;
    }
    size_t shapes = 0;
    for (char *mask_s = strtok(argv[1], ","); mask_s != NULL; mask_s = strtok(NULL, ",")) {
        unsigned mask = (unsigned)strtoul(mask_s, NULL, 10);
        ts_set_feature_mask(mask);
        ts_context_set_feature_mask(ctx3, mask);
        imopa_probe();
        printf("mask=%u f32=%s bf16=%s f16=%s f16f32=%s int8=%s u8s8=%s u8u32=%s\n", mask,
               ts_gemm_kernel(TS_GEMM_F32), ts_gemm_kernel(TS_GEMM_BF16),
               ts_gemm_kernel(TS_GEMM_F16), ts_gemm_kernel(TS_GEMM_F16F32),
               ts_gemm_kernel(TS_GEMM_INT8), ts_gemm_kernel(TS_GEMM_U8S8),
               ts_gemm_kernel(TS_GEMM_U8U32));
        for (int a = 2; a < argc; ++a) {
            size_t M, N, K;
            if (sscanf(argv[a], "%zu,%zu,%zu", &M, &N, &K) != 3) {
                fprintf(stderr, "bad shape %s\n", argv[a]);
                return 2;
            }
            for (int k = 0; k < N_KINDS; ++k)
                run_case((enum kind)k, ctx3, M, N, K, (size_t)(a % 3), a % 2);
            ++shapes;
        }
        for (int k = 0; k < N_KINDS; ++k)
            check_errors((enum kind)k, ctx3);
    }
    ts_set_feature_mask(~0u);
    ts_context_free(ctx3);
    printf("shapes %zu\nfailures %d\n", shapes, failures);
    return failures != 0;
}
