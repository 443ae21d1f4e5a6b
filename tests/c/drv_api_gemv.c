/* GEMV / small-M dispatch harness (gen/gemv.py, ts_gemm.c gemv_view): for every raw GEMM type,
 * one prepacked B serves M = 1 .. 17 (the GEMV kernel for M <= its max_m, the GEMM tile above);
 * every call's C must equal, bit for bit, the first M rows of the M = 17 call (GEMM path) and
 * of the unpacked call, and the M = 17 call must match an independent scalar reference:
 * integers exactly; fp32 exactly against a fused multiply-add chain over k = 0 .. K-1 from +0
 * (the order both fmla kernels use); bf16 on the bfmmla path within the bound of
 * drv_api_gemm.c, on the fmla path exactly like fp32 on the bf16-rounded inputs; fp16 -> fp32
 * exactly like fp32 on the (exactly) converted inputs (fmlal: one fused rounding per k, like
 * the fmla fallback); fp16 -> fp16 within drv_api_gemm.c's bound (fp16 accumulation on the
 * fmla .8h path, one final rounding on the fallback).
 * C sits against a guard page; the gap between rows (ldc > N) must stay untouched. NaN
 * results: check_nans.
 *
 * It also prints, per mask, "pick <type> M N <symbol>" (ts_gemm_kernel_mn) for M = 1 .. 5 and
 * the shapes' N, which the test checks against its own restatement of the rule, and checks
 * that every handle names the GEMV kernel whose layout it holds (ts_packed_gemv_kernel).
 * Handles of one layout (ts_context_set_pack_layouts): TS_LAYOUT_GEMM alone runs every M with
 * the same bits and names no GEMV kernel; TS_LAYOUT_GEMV alone the same bits for M up to the
 * GEMV kernel's max_m (where ts_gemm_kernel_mn picks it for a wide B) and TS_EINVAL with C
 * untouched above; each is smaller than the two-layout handle (ts_packed_size), and the
 * setter refuses 0, unknown bits and a NULL context.
 *
 *   drv_api_gemv MASKS N,K ...
 * Last line "failures <n>"; exit status 1 on any failure. */
#include "drv_api_common.h"

enum kind { F32, BF16, S8S32, U8S8S32, U8U32, F16, F16F32 };
static const char *kind_name[] = { "f32", "bf16", "s8s32", "u8s8s32", "u8u32", "f16", "f16f32" };
static const char *kind_label[] = { "f32", "bf16", "int8", "u8s8", "u8u32", "f16",
                                    "f16f32" };   /* registry test_label */
static const int kind_type[] = { TS_GEMM_F32, TS_GEMM_BF16, TS_GEMM_INT8, TS_GEMM_U8S8,
                                 TS_GEMM_U8U32, TS_GEMM_F16, TS_GEMM_F16F32 };
#define MAX_M 17

static int half_in(enum kind k) { return k == F16 || k == F16F32; }
static size_t in_bytes(enum kind k) { return k <= BF16 ? 4 : half_in(k) ? 2 : 1; }
static size_t out_bytes(enum kind k) { return k == F16 ? 2 : 4; }

/* ctx NULL: the packers without a context (both layouts) */
static int pack(const ts_context *ctx, enum kind kind, size_t K, size_t N, const void *B,
                size_t ldb, ts_packed_b **pb)
{
    if (ctx == NULL) {
        switch (kind) {
        case F32: return ts_pack_b_f32(K, N, B, ldb, pb);
        case BF16: return ts_pack_b_bf16(K, N, B, ldb, pb);
        case S8S32: return ts_pack_b_s8(K, N, B, ldb, pb);
        case U8S8S32: return ts_pack_b_u8s8(K, N, B, ldb, pb);
        case U8U32: return ts_pack_b_u8u32(K, N, B, ldb, pb);
        case F16: return ts_pack_b_f16(K, N, B, ldb, pb);
        case F16F32: return ts_pack_b_f16f32(K, N, B, ldb, pb);
        }
    }
    switch (kind) {
    case F32: return ts_pack_b_f32_ctx(ctx, K, N, B, ldb, pb);
    case BF16: return ts_pack_b_bf16_ctx(ctx, K, N, B, ldb, pb);
    case S8S32: return ts_pack_b_s8_ctx(ctx, K, N, B, ldb, pb);
    case U8S8S32: return ts_pack_b_u8s8_ctx(ctx, K, N, B, ldb, pb);
    case U8U32: return ts_pack_b_u8u32_ctx(ctx, K, N, B, ldb, pb);
    case F16: return ts_pack_b_f16_ctx(ctx, K, N, B, ldb, pb);
    case F16F32: return ts_pack_b_f16f32_ctx(ctx, K, N, B, ldb, pb);
    }
    return -1;
}

static int run(enum kind kind, const ts_packed_b *pb, size_t M, size_t N, size_t K,
               const void *A, size_t lda, const void *B, size_t ldb, void *C, size_t ldc)
{
    if (pb != NULL) {
        switch (kind) {
        case F32: return ts_gemm_f32_prepacked(M, A, lda, pb, C, ldc);
        case BF16: return ts_gemm_bf16_prepacked(M, A, lda, pb, C, ldc);
        case S8S32: return ts_gemm_s8s32_prepacked(M, A, lda, pb, C, ldc);
        case U8S8S32: return ts_gemm_u8s8s32_prepacked(M, A, lda, pb, C, ldc);
        case U8U32: return ts_gemm_u8u32_prepacked(M, A, lda, pb, C, ldc);
        case F16: return ts_gemm_f16_prepacked(M, A, lda, pb, C, ldc);
        case F16F32: return ts_gemm_f16f32_prepacked(M, A, lda, pb, C, ldc);
        }
    }
    switch (kind) {
    case F32: return ts_gemm_f32(M, N, K, A, lda, B, ldb, C, ldc);
    case BF16: return ts_gemm_bf16(M, N, K, A, lda, B, ldb, C, ldc);
    case S8S32: return ts_gemm_s8s32(M, N, K, A, lda, B, ldb, C, ldc);
    case U8S8S32: return ts_gemm_u8s8s32(M, N, K, A, lda, B, ldb, C, ldc);
    case U8U32: return ts_gemm_u8u32(M, N, K, A, lda, B, ldb, C, ldc);
    case F16: return ts_gemm_f16(M, N, K, A, lda, B, ldb, C, ldc);
    case F16F32: return ts_gemm_f16f32(M, N, K, A, lda, B, ldb, C, ldc);
    }
    return -1;
}

/* Reference of C[m][n]: 32-bit pattern (integers: from row arow of A, imopa_row; -1: 0). *exact: whether the result must equal it bit for bit
 * (else *bound holds the allowed |difference|). */
static uint32_t reference(enum kind kind, int bfmmla, int pairs, const void *A, size_t lda,
                          const void *B, size_t ldb, size_t m, size_t n, size_t K, int *exact,
                          double *bound, double *value, long arow)
{
    uint32_t bits;
    *exact = 1;
    if (half_in(kind)) {
        /* fp16 products are exact in fp32: fp32 accumulation is the fused chain over k; or
         * (pairs: the widening FMOPA's FPDot) per k pair 2j, 2j+1 the sum of the two exact
         * products rounded once (the fused multiply-add onto the first), then added */
        const uint16_t *a = A, *b = B;
        float acc = 0.0f;
        double s = 0, abs_sum = 0;
        for (size_t k = 0; k < K; ++k) {
            const float x = half_value(a[m * lda + k]), y = half_value(b[k * ldb + n]);
            if (pairs && k % 2 == 0) {
                const float x1 = k + 1 < K ? half_value(a[m * lda + k + 1]) : 0.0f;
                const float y1 = k + 1 < K ? half_value(b[(k + 1) * ldb + n]) : 0.0f;
                acc = acc + fmaf(x1, y1, x * y);
            } else if (!pairs) {
                acc = fmaf(x, y, acc);
            }
            s += (double)x * y;
            abs_sum += fabs((double)x * y);
        }
        if (kind == F16) {
            /* drv_api_gemm.c half_bound: fp16 accumulation, gamma_K(2^-11) * S + K * 2^-25
             * (it covers the fallback's fp32 sum and one final rounding too); gamma_K has no
             * finite value for K >= 2^11, where only the bit-identity checks below apply */
            const double u = ldexp(1.0, -11);
            *exact = 0;
            *bound = (double)K * u >= 1 ? INFINITY
                     : (double)K * u / (1 - (double)K * u) * abs_sum + (double)K * ldexp(1.0, -25);
            *value = s;
        }
        memcpy(&bits, &acc, 4);
        return bits;
    }
    if (kind == F32 || kind == BF16) {
        const float *a = A, *b = B;
        float acc = 0.0f;
        double s = 0, abs_sum = 0;
        for (size_t k = 0; k < K; ++k) {
            float x = a[m * lda + k], y = b[k * ldb + n];
            if (kind == BF16) { x = ref_bf16(x); y = ref_bf16(y); }
            acc = fmaf(x, y, acc);
            s += (double)x * y;
            abs_sum += fabs((double)x * y);
        }
        if (kind == BF16 && bfmmla) {
            /* bfmmla rounds its internal sums (round to odd before FEAT_EBF16): bound only */
            *exact = 0;
            *bound = 1.01 * (double)(K + 1) * ldexp(1.0, -23) * abs_sum + 1e-30;
            *value = s;
        }
        memcpy(&bits, &acc, 4);
        return bits;
    }
    int64_t s = 0;
    if (arow < 0)
        return 0;
    m = (size_t)arow;
    for (size_t k = 0; k < K; ++k) {
        int32_t x = kind == S8S32 ? ((const int8_t *)A)[m * lda + k] : ((const uint8_t *)A)[m * lda + k];
        int32_t y = kind == U8U32 ? ((const uint8_t *)B)[k * ldb + n] : ((const int8_t *)B)[k * ldb + n];
        s += (int64_t)x * y;
    }
    return (uint32_t)s;
}

/* Compares rows 0 .. M-1 of C (row stride ldc) with `full`: bit for bit in the N columns, the
 * gap bytes (0xA5 when written) untouched. Returns 1 when they agree. */
/* The operands of the shape run_shape checks, for the QEMU issue 2083 case of rows_agree. */
static const void *cur_A, *cur_B;
static size_t cur_lda, cur_ldb;

/* Whether kind is an integer type dispatch runs on an SME path whose MOPAs have QEMU issue
 * 2083 (drv_api_common.h): its GEMM tile's results are then that model's, not the GEMV
 * kernel's, so each call is checked against the exact reference (imopa_row) instead of the
 * M = 17 call — for exact integers the same test on a correct emulator. */
static int bugged_kind(enum kind kind)
{
    return imopa_s != 0 && (kind == S8S32 || kind == U8S8S32) && sme_path(kind_type[kind]);
}

static int rows_agree(enum kind kind, const char *what, const unsigned char *C,
                      const unsigned char *full, size_t M, size_t N, size_t K, size_t ldc,
                      int ran_tile)
{
    const size_t oe = out_bytes(kind);
    const int bugged = bugged_kind(kind);
    for (size_t m = 0; m < M; ++m)
        for (size_t n = 0; n < ldc && (m + 1 < M || n < N); ++n) {
            const size_t at = (m * ldc + n) * oe;
            if (n >= N) {
                CHECK(all_bytes(C + at, oe, 0xA5), "%s%s M=%zu wrote the gap at (%zu,%zu)",
                      kind_name[kind], what, M, m, n);
                if (!all_bytes(C + at, oe, 0xA5)) return 0;
            } else if (bugged) {
                int exact; double bound, value;
                uint32_t got, want = reference(kind, 0, 0, cur_A, cur_lda, cur_B, cur_ldb, m, n, K,
                                               &exact, &bound, &value,
                                               imopa_row(ran_tile, m, n, M));
                memcpy(&got, C + at, 4);
                CHECK(got == want, "%s%s %zux%zux%zu C[%zu][%zu] = %08x, ref %08x (issue 2083: %s)",
                      kind_name[kind], what, M, N, K, m, n, got, want, ran_tile ? "tile" : "GEMV");
                if (got != want) return 0;
            } else {
                CHECK(memcmp(C + at, full + at, oe) == 0,
                      "%s%s %zux%zux%zu C[%zu][%zu] differs from the GEMM path's",
                      kind_name[kind], what, M, N, K, m, n);
                if (memcmp(C + at, full + at, oe) != 0) return 0;
            }
        }
    return 1;
}

/* Whether dispatch runs GEMV kernel `gemv` for M rows at some N (<= 1024): the M its layout
 * serves (an SME path keeps its tile where the model says it is faster: wide B at large SVL). */
static int gemv_serves(enum kind kind, const char *gemv, size_t M)
{
    for (size_t n = 1; gemv != NULL && n <= 1024; ++n)
        if (strcmp(ts_gemm_kernel_mn(kind_type[kind], M, n), gemv) == 0)
            return 1;
    return 0;
}

/* A handle packed with one layout (ts_context_set_pack_layouts) against `full` (M = 17 on the
 * two-layout handle `both`): see the header comment. */
static void check_one_layout(enum kind kind, unsigned layouts, const ts_packed_b *both,
                             const unsigned char *full, size_t N, size_t K, const void *A,
                             size_t lda, const void *B, size_t ldb, size_t ldc)
{
    const char *what = layouts == TS_LAYOUT_GEMM ? " GEMM-layout" : " GEMV-layout";
    ts_context *ctx = NULL;
    ts_packed_b *pb = NULL;
    int rc = ts_context_create(&ctx);
    CHECK(rc == TS_OK && ts_context_set_pack_layouts(ctx, layouts) == TS_OK, "set layouts");
    rc = pack(ctx, kind, K, N, B, ldb, &pb);
    CHECK(rc == TS_OK, "%s%s pack rc %d", kind_name[kind], what, rc);
    if (rc != TS_OK) { ts_context_free(ctx); return; }
    CHECK(ts_packed_size(pb) < ts_packed_size(both) && ts_packed_size(pb) >= K * N,
          "%s%s %zux%zu: %zu bytes, both layouts %zu", kind_name[kind], what, N, K,
          ts_packed_size(pb), ts_packed_size(both));
    const char *gemv = ts_packed_gemv_kernel(pb);
    CHECK(layouts == TS_LAYOUT_GEMM ? gemv == NULL
                                    : gemv != NULL && strcmp(gemv, ts_packed_gemv_kernel(both)) == 0,
          "%s%s handle names GEMV kernel %s", kind_name[kind], what, gemv ? gemv : "(none)");
    for (size_t M = 1; M <= MAX_M; ++M) {
        const size_t c_bytes = matrix_bytes(M, N, ldc, out_bytes(kind));
        const int gemv_rows = gemv_serves(kind, ts_packed_gemv_kernel(both), M);
        const int refused = layouts == TS_LAYOUT_GEMV && !gemv_rows;
        guarded_region region;
        unsigned char *C = guarded_alloc(c_bytes, &region);
        memset(C, 0xA5, c_bytes);
        rc = run(kind, pb, M, N, K, A, lda, B, ldb, C, ldc);
        CHECK(rc == (refused ? TS_EINVAL : TS_OK), "%s%s M=%zu rc %d", kind_name[kind], what, M, rc);
        if (refused)
            CHECK(all_bytes(C, c_bytes, 0xA5), "%s%s M=%zu refused but wrote C", kind_name[kind],
                  what, M);
        else
            rows_agree(kind, what, C, full, M, N, K, ldc, layouts == TS_LAYOUT_GEMM);
        guarded_free(&region);
    }
    ts_packed_free(pb);
    ts_context_free(ctx);
}

static void run_shape(enum kind kind, size_t N, size_t K, size_t pad)
{
    const size_t elem = in_bytes(kind), oe = out_bytes(kind);
    const size_t lda = K + pad, ldb = N + pad, ldc = N + pad;
    void *A = guarded(matrix_bytes(MAX_M, K, lda, elem));
    void *B = guarded(matrix_bytes(K, N, ldb, elem));
    const size_t all_bytes_c = matrix_bytes(MAX_M, N, ldc, oe);
    unsigned char *full = guarded(all_bytes_c);
    for (size_t i = 0; i < matrix_bytes(MAX_M, K, lda, elem) / elem; ++i) {
        if (elem == 4) ((float *)A)[i] = rand_f32();
        else if (elem == 2) ((uint16_t *)A)[i] = half_bits(rand_f32());   /* in (-2, 2) */
        else ((int8_t *)A)[i] = rand_s8();
    }
    for (size_t i = 0; i < matrix_bytes(K, N, ldb, elem) / elem; ++i) {
        if (elem == 4) ((float *)B)[i] = rand_f32();
        else if (elem == 2) ((uint16_t *)B)[i] = half_bits(rand_f32());
        else ((int8_t *)B)[i] = rand_s8();
    }
    ts_packed_b *pb = NULL;
    int rc = pack(NULL, kind, K, N, B, ldb, &pb);
    CHECK(rc == TS_OK, "%s pack %zux%zu rc %d", kind_name[kind], N, K, rc);
    if (rc != TS_OK) { release_all(); return; }
    /* bfmmla and the SME bfmopa: BFDotAdd steps (round to odd inside), a bound; the SME
     * widening fmopa (fp16 -> fp32): per k pair one rounded sum of the two exact products,
     * added unfused */
    const int bfmmla = strstr(ts_packed_kernel(pb), "bfmmla") != NULL
                       || strstr(ts_packed_kernel(pb), "bfmopa") != NULL;
    const int pairs = kind == F16F32 && strstr(ts_packed_kernel(pb), "fmopa") != NULL;
    const char *small = ts_gemm_kernel_mn(kind_type[kind], 1, 1u << 20);   /* wide B, M = 1 */
    /* a path without a GEMV kernel (the SME fp16 -> fp32 path, README "SME kernels") runs
     * its GEMM tile at M = 1 and its handles name none; with one, M = 1 runs it for some N
     * (an SME path keeps its tile for a wide B where its model is faster) */
    const int has_gemv = ts_packed_gemv_kernel(pb) != NULL;
    const int bugged = bugged_kind(kind);
    cur_A = A; cur_lda = lda; cur_B = B; cur_ldb = ldb;
    CHECK(has_gemv ? gemv_serves(kind, ts_packed_gemv_kernel(pb), 1)
                     && (strcmp(small, ts_packed_gemv_kernel(pb)) == 0
                         || strcmp(small, ts_packed_kernel(pb)) == 0)
                   : strcmp(small, ts_packed_kernel(pb)) == 0,
          "%s handle's GEMV kernel %s, M = 1 runs %s", kind_name[kind],
          ts_packed_gemv_kernel(pb) ? ts_packed_gemv_kernel(pb) : "(none)", small ? small : "(none)");

    /* M = 17: the GEMM path, against the reference */
    rc = run(kind, pb, MAX_M, N, K, A, lda, B, ldb, full, ldc);
    CHECK(rc == TS_OK, "%s M=17 rc %d", kind_name[kind], rc);
    for (size_t m = 0; m < MAX_M; ++m)
        for (size_t n = 0; n < N; ++n) {
            int exact; double bound = 0, value = 0;
            uint32_t want = reference(kind, bfmmla, pairs, A, lda, B, ldb, m, n, K, &exact,
                                      &bound, &value, imopa_row(bugged, m, n, MAX_M));
            uint32_t got = 0;
            uint16_t half = 0;
            if (oe == 4)
                memcpy(&got, full + (m * ldc + n) * 4, 4);
            else
                memcpy(&half, full + (m * ldc + n) * 2, 2);
            if (exact) {
                CHECK(got == want, "%s %zux%zux%zu C[%zu][%zu] = %08x, ref %08x", kind_name[kind],
                      (size_t)MAX_M, N, K, m, n, got, want);
            } else {
                float g;
                if (oe == 4) memcpy(&g, &got, 4); else g = half_value(half);
                CHECK(fabs(g - value) <= bound, "%s C[%zu][%zu] = %.9g, ref %.9g", kind_name[kind],
                      m, n, g, value);
            }
        }
    /* M = 1 .. 16, prepacked and unpacked: the first M rows of the M = 17 result, bit for bit */
    for (size_t M = 1; M < MAX_M; ++M)
        for (int prepacked = 1; prepacked >= 0; --prepacked) {
            const size_t c_bytes = matrix_bytes(M, N, ldc, oe);
            guarded_region region;
            unsigned char *C = guarded_alloc(c_bytes, &region);
            memset(C, 0xA5, c_bytes);
            rc = run(kind, prepacked ? pb : NULL, M, N, K, A, lda, B, ldb, C, ldc);
            CHECK(rc == TS_OK, "%s M=%zu rc %d", kind_name[kind], M, rc);
            rows_agree(kind, prepacked ? " prepacked" : "", C, full, M, N, K, ldc,
                       strcmp(ts_gemm_kernel_mn(kind_type[kind], M, N), ts_packed_kernel(pb)) == 0);
            guarded_free(&region);
        }
    if (has_gemv) {
        check_one_layout(kind, TS_LAYOUT_GEMM, pb, full, N, K, A, lda, B, ldb, ldc);
        check_one_layout(kind, TS_LAYOUT_GEMV, pb, full, N, K, A, lda, B, ldb, ldc);
    }
    ts_packed_free(pb);
    release_all();
}

/* NaN results (fp32, bf16): row 0 of A and one element of B hold NaNs (a signalling one with
 * a payload, a quiet negative one); M = 1 .. 3 against the M = 17 call on one handle. The
 * same bits wherever both kernels propagate NaNs alike; on the SME fp32 path (FMOPA: every
 * NaN result the default NaN, README "SME kernels") a NaN where the tile has one and the same
 * bits elsewhere. */
static void check_nans(enum kind kind)
{
    enum { K = 5, N = 67 };
    static float A[MAX_M * K], B[K * N];
    static uint32_t full[MAX_M * N], part[3 * N];
    const uint32_t snan = 0x7fa00001u, qnan = 0xffc12345u;
    for (size_t i = 0; i < MAX_M * K; ++i) A[i] = (float)(1 + i % 3);
    for (size_t i = 0; i < K * N; ++i) B[i] = 0.5f;
    memcpy(&A[2], &snan, 4);
    memcpy(&B[3 * N + 5], &qnan, 4);
    ts_packed_b *pb = NULL;
    CHECK(pack(NULL, kind, K, N, B, N, &pb) == TS_OK, "%s NaN pack", kind_name[kind]);
    if (pb == NULL) return;
    const int default_nan = kind == F32 && strstr(ts_packed_kernel(pb), "mopa_") != NULL;
    CHECK(run(kind, pb, MAX_M, N, K, A, K, B, N, full, N) == TS_OK, "%s NaN M=17", kind_name[kind]);
    for (size_t M = 1; M <= 3; ++M) {
        CHECK(run(kind, pb, M, N, K, A, K, B, N, part, N) == TS_OK, "%s NaN M=%zu", kind_name[kind], M);
        for (size_t i = 0; i < M * N; ++i) {
            const int nan_t = (full[i] & 0x7fffffffu) > 0x7f800000u;
            const int nan_p = (part[i] & 0x7fffffffu) > 0x7f800000u;
            CHECK(default_nan && nan_t ? nan_p : part[i] == full[i],
                  "%s NaN M=%zu C[%zu][%zu] = %08x, M = 17: %08x (%s)", kind_name[kind], M,
                  i / N, i % N, part[i], full[i], ts_gemm_kernel_mn(kind_type[kind], M, N));
        }
    }
    CHECK((full[0] & 0x7fffffffu) > 0x7f800000u && (full[N + 5] & 0x7fffffffu) > 0x7f800000u,
          "%s NaN inputs gave no NaN", kind_name[kind]);
    ts_packed_free(pb);
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: %s MASKS N,K...\n", argv[0]); return 2; }
    setvbuf(stdout, NULL, _IONBF, 0);
    printf("features=%u\n", ts_cpu_features());
    ts_context *ctx = NULL;
    CHECK(ts_context_create(&ctx) == TS_OK, "context");
    CHECK(ts_context_set_pack_layouts(ctx, 0) == TS_EINVAL, "layouts 0 accepted");
    CHECK(ts_context_set_pack_layouts(ctx, 4) == TS_EINVAL, "layouts 4 accepted");
    CHECK(ts_context_set_pack_layouts(NULL, TS_LAYOUT_GEMM) == TS_EINVAL, "NULL ctx accepted");
    CHECK(ts_context_set_pack_layouts(ctx, TS_LAYOUT_GEMM | TS_LAYOUT_GEMV) == TS_OK, "both");
    ts_context_free(ctx);
    CHECK(ts_packed_size(NULL) == 0, "size of NULL");
    int shapes = 0;
    for (char *mask_s = strtok(argv[1], ","); mask_s; mask_s = strtok(NULL, ",")) {
        unsigned mask = (unsigned)strtoul(mask_s, NULL, 0);
        ts_set_feature_mask(mask);
        printf("mask=%u", mask);
        for (int kind = F32; kind <= F16F32; ++kind)
            printf(" %s=%s", kind_label[kind], ts_gemm_kernel(kind_type[kind]));
        printf("\n");
        imopa_probe();      /* QEMU issue 2083 on the int8 SME paths (drv_api_common.h) */
        check_nans(F32);
        check_nans(BF16);
        for (int i = 2; i < argc; ++i) {
            size_t N, K;
            if (sscanf(argv[i], "%zu,%zu", &N, &K) != 2) { fprintf(stderr, "bad shape\n"); return 2; }
            for (int kind = F32; kind <= F16F32; ++kind)
                for (size_t M = 1; M <= 5; ++M)
                    printf("pick %s %zu %zu %s\n", kind_label[kind], M, N,
                           ts_gemm_kernel_mn(kind_type[kind], M, N));
        }
        for (int i = 2; i < argc; ++i) {
            size_t N, K;
            if (sscanf(argv[i], "%zu,%zu", &N, &K) != 2) { fprintf(stderr, "bad shape\n"); return 2; }
            for (int kind = F32; kind <= F16F32; ++kind)
                run_shape((enum kind)kind, N, K, (size_t)(i % 3));
            ++shapes;
        }
    }
    ts_set_feature_mask(~0u);
    printf("shapes %d\nfailures %d\n", shapes, failures);
    return failures != 0;
}
