/* ts_gemm_f32_bias_clamp, ts_gemm_bf16_bias_clamp and ts_gemm_f16f32_bias_clamp (plain, _ctx,
 * _prepacked, _prepacked_ctx) against GEMM-then-bias-then-clamp: ts_gemm_f32's (ts_gemm_bf16's,
 * ts_gemm_f16f32's) result on the same path (bit for bit: the same kernels), then
 * y = x + bias[n] (NULL: + -0.0f), z = max(y, cmin), C = min(z, cmax) by the hardware's own
 * FMAX / FMIN (NEON vmaxq_f32 / vminq_f32 on one lane), compared byte for byte; and within
 * the fp32 summation bound of a naive double GEMM (of the bf16-rounded inputs for bf16; fp16
 * inputs are fp16 values, stored as floats for the reference and as fp16 bits for the library)
 * clamped the same way. Clamps: none
 * (+-Inf), ReLU, ReLU6, a narrow band, a single value, and (-0.0f, -0.0f) on K = 0 (FMIN of
 * +0 and -0); a NaN bias column, an infinite A element (NaN and Inf results). Every buffer
 * flush against a guard page, gaps between C's rows checked untouched. Then the errors:
 * cmin > cmax, NaN bounds, C overlapping bias, bias in the context's workspace, a handle of
 * another type -> TS_EINVAL with C untouched.
 *
 *   drv_api_bias_clamp MASKS M,N,K ...
 * Last line "failures <n>"; exit status 1 on any failure. */
#include "drv_api_common.h"   /* first: its _DEFAULT_SOURCE */

#include <arm_neon.h>

static float hw_max(float a, float b)
{
    return vgetq_lane_f32(vmaxq_f32(vdupq_n_f32(a), vdupq_n_f32(b)), 0);
}

static float hw_min(float a, float b)
{
    return vgetq_lane_f32(vminq_f32(vdupq_n_f32(a), vdupq_n_f32(b)), 0);
}

static float ref_epilogue(float x, const float *bias, size_t n, float cmin, float cmax)
{
    volatile float y = x + (bias != NULL ? bias[n] : -0.0f);   /* one fp32 add */
    return hw_min(hw_max(y, cmin), cmax);
}

static const float CLAMPS[][2] = { { -INFINITY, INFINITY }, { 0.0f, INFINITY }, { 0.0f, 6.0f },
                                   { -1.5f, 0.25f }, { 0.5f, 0.5f } };
#define N_CLAMPS (sizeof CLAMPS / sizeof CLAMPS[0])

enum { PLAIN, CTX, PREPACKED, PREPACKED_NK_CTX, N_FORMS };
static const char *form_name[] = { "plain", "ctx", "prepacked", "prepacked_nk_ctx" };

/* The entry points of one type under test: fp32, bf16 or fp16 -> fp32. A and B (and B's N x K
 * copy) are the type's input elements (float, or fp16 bits: uint16_t), hence the void
 * pointers; bias, bounds and C are fp32 for all three. */
typedef struct {
    const char *name;
    int (*gemm)(size_t, size_t, size_t, const void *, size_t, const void *, size_t, float *,
                size_t);
    int (*plain)(size_t, size_t, size_t, const void *, size_t, const void *, size_t,
                 const float *, float, float, float *, size_t);
    int (*ctx)(const ts_context *, size_t, size_t, size_t, const void *, size_t, const void *,
               size_t, const float *, float, float, float *, size_t);
    int (*pack)(size_t, size_t, const void *, size_t, ts_packed_b **);
    int (*pack_nk_ctx)(const ts_context *, size_t, size_t, const void *, size_t,
                       ts_packed_b **);
    int (*prepacked)(size_t, const void *, size_t, const ts_packed_b *, const float *, float,
                     float, float *, size_t);
    int (*prepacked_ctx)(const ts_context *, size_t, const void *, size_t, const ts_packed_b *,
                         const float *, float, float, float *, size_t);
    int bf16;                 /* inputs rounded to bf16 (the naive reference too) */
    int f16;                  /* inputs are fp16 bits (the values: fp16-representable floats) */
} type_fns;

/* The type's seven entry points with void pointers for its element type (names spelled out,
 * so each call below is a literal call of the library function). */
#define TYPE_WRAPPERS(tag, elem, gemm_fn, plain_fn, ctx_fn, pack_fn, pack_nk_ctx_fn, pp_fn,         \
                      pp_ctx_fn)                                                                 \
    static int tag##_gemm(size_t M, size_t N, size_t K, const void *A, size_t lda,             \
                          const void *B, size_t ldb, float *C, size_t ldc)                     \
    {                                                                                          \
        return gemm_fn(M, N, K, (const elem *)A, lda, (const elem *)B, ldb, C, ldc);           \
    }                                                                                          \
    static int tag##_plain(size_t M, size_t N, size_t K, const void *A, size_t lda,            \
                           const void *B, size_t ldb, const float *bias, float cmin,           \
                           float cmax, float *C, size_t ldc)                                   \
    {                                                                                          \
        return plain_fn(M, N, K, (const elem *)A, lda, (const elem *)B, ldb, bias, cmin, cmax, \
                        C, ldc);                                                               \
    }                                                                                          \
    static int tag##_ctx(const ts_context *ctx, size_t M, size_t N, size_t K, const void *A,   \
                         size_t lda, const void *B, size_t ldb, const float *bias, float cmin, \
                         float cmax, float *C, size_t ldc)                                     \
    {                                                                                          \
        return ctx_fn(ctx, M, N, K, (const elem *)A, lda, (const elem *)B, ldb, bias, cmin,    \
                      cmax, C, ldc);                                                           \
    }                                                                                          \
    static int tag##_pack(size_t K, size_t N, const void *B, size_t ldb, ts_packed_b **h)      \
    {                                                                                          \
        return pack_fn(K, N, (const elem *)B, ldb, h);                                         \
    }                                                                                          \
    static int tag##_pack_nk_ctx(const ts_context *ctx, size_t N, size_t K, const void *B,     \
                                 size_t ldb, ts_packed_b **h)                                  \
    {                                                                                          \
        return pack_nk_ctx_fn(ctx, N, K, (const elem *)B, ldb, h);                             \
    }                                                                                          \
    static int tag##_prepacked(size_t M, const void *A, size_t lda, const ts_packed_b *h,      \
                               const float *bias, float cmin, float cmax, float *C, size_t ldc) \
    {                                                                                          \
        return pp_fn(M, (const elem *)A, lda, h, bias, cmin, cmax, C, ldc);                    \
    }                                                                                          \
    static int tag##_prepacked_ctx(const ts_context *ctx, size_t M, const void *A, size_t lda, \
                                   const ts_packed_b *h, const float *bias, float cmin,        \
                                   float cmax, float *C, size_t ldc)                           \
    {                                                                                          \
        return pp_ctx_fn(ctx, M, (const elem *)A, lda, h, bias, cmin, cmax, C, ldc);           \
    }
TYPE_WRAPPERS(f32, float, ts_gemm_f32, ts_gemm_f32_bias_clamp, ts_gemm_f32_bias_clamp_ctx,
              ts_pack_b_f32, ts_pack_b_f32_nk_ctx, ts_gemm_f32_bias_clamp_prepacked,
              ts_gemm_f32_bias_clamp_prepacked_ctx)
TYPE_WRAPPERS(bf16, float, ts_gemm_bf16, ts_gemm_bf16_bias_clamp, ts_gemm_bf16_bias_clamp_ctx,
              ts_pack_b_bf16, ts_pack_b_bf16_nk_ctx, ts_gemm_bf16_bias_clamp_prepacked,
              ts_gemm_bf16_bias_clamp_prepacked_ctx)
TYPE_WRAPPERS(f16f32, uint16_t, ts_gemm_f16f32, ts_gemm_f16f32_bias_clamp,
              ts_gemm_f16f32_bias_clamp_ctx, ts_pack_b_f16f32, ts_pack_b_f16f32_nk_ctx,
              ts_gemm_f16f32_bias_clamp_prepacked, ts_gemm_f16f32_bias_clamp_prepacked_ctx)
#define TYPE_FNS(tag)                                                                          \
    #tag, tag##_gemm, tag##_plain, tag##_ctx, tag##_pack, tag##_pack_nk_ctx, tag##_prepacked,  \
        tag##_prepacked_ctx
static const type_fns TYPES[] = {
    { TYPE_FNS(f32), 0, 0 }, { TYPE_FNS(bf16), 1, 0 }, { TYPE_FNS(f16f32), 0, 1 },
};
#define N_TYPES (sizeof TYPES / sizeof TYPES[0])

static int call_form(const type_fns *t, int form, const ts_context *ctx, size_t M, size_t N,
                     size_t K, const void *A, size_t lda, const void *B, size_t ldb,
                     const void *Bt, const float *bias, float cmin, float cmax, float *C,
                     size_t ldc)
{
    ts_packed_b *h = NULL;
    int rc;
    switch (form) {
    case PLAIN:
        return t->plain(M, N, K, A, lda, B, ldb, bias, cmin, cmax, C, ldc);
    case CTX:
        return t->ctx(ctx, M, N, K, A, lda, B, ldb, bias, cmin, cmax, C, ldc);
    case PREPACKED:
        rc = t->pack(K, N, B, ldb, &h);
        if (rc == TS_OK)
            rc = t->prepacked(M, A, lda, h, bias, cmin, cmax, C, ldc);
        break;
    default:
        rc = t->pack_nk_ctx(ctx, N, K, Bt, K, &h);
        if (rc == TS_OK)
            rc = t->prepacked_ctx(ctx, M, A, lda, h, bias, cmin, cmax, C, ldc);
        break;
    }
    ts_packed_free(h);
    return rc;
}

/* A random input value of type t (fp16: rounded to fp16, so the float holds the fp16 value). */
static float rand_input(const type_fns *t)
{
    const float v = rand_f32();
    return t->f16 ? (float)half_value(half_bits(v)) : v;
}

/* The argument the library reads for a float matrix of `elems` values: the matrix itself,
 * or (fp16 types) a guarded copy in fp16 bits (exact: the values are fp16 values, or NaN /
 * infinity). */
static const void *as_input(const type_fns *t, const float *x, size_t elems)
{
    if (!t->f16)
        return x;
    uint16_t *h = guarded(elems * 2 + 2);
    for (size_t i = 0; i < elems; ++i)
        h[i] = half_bits(x[i]);
    return h;
}

static size_t shapes_run;

static void run_case(const type_fns *t, const ts_context *ctx, size_t M, size_t N, size_t K,
                     size_t pad, size_t clamp, int special)
{
    const size_t lda = K + pad, ldb = N + pad, ldc = N + pad;
    float *A = guarded(matrix_bytes(M, K, lda, 4) + 4);
    float *B = guarded(matrix_bytes(K, N, ldb, 4) + 4);
    float *Bt = guarded(matrix_bytes(N, K, K, 4) + 4);
    float *bias = (rng_next() & 3) == 0 ? NULL : guarded(N * 4 + 4);
    const size_t c_len = matrix_bytes(M, N, ldc, 4);
    float *X = guarded(c_len + 4), *C = guarded(c_len + 4);
    float cmin = CLAMPS[clamp][0], cmax = CLAMPS[clamp][1];
    for (size_t i = 0; i < matrix_bytes(M, K, lda, 1); ++i)
        A[i] = i % lda < K ? rand_input(t) : NAN;
    for (size_t i = 0; i < matrix_bytes(K, N, ldb, 1); ++i)
        B[i] = i % ldb < N ? rand_input(t) : NAN;
    for (size_t n = 0; n < N; ++n)
        for (size_t k = 0; k < K; ++k)
            Bt[n * K + k] = B[k * ldb + n];
    if (bias != NULL)
        for (size_t n = 0; n < N; ++n)
            bias[n] = rand_f32();
    if (special && bias != NULL && N > 2)
        bias[N / 2] = NAN;                            /* a NaN column */
    if (special && M > 1 && K > 0)
        A[(M - 1) * lda] = INFINITY;                  /* Inf and NaN (Inf * 0: none) results */
    if (special == 2) {          /* K = 0, no bias: y = +0 + -0.0f = +0; FMIN(+0, -0) = -0 */
        bias = NULL;
        cmin = -0.0f;
        cmax = -0.0f;
    }
    const void *in_a = as_input(t, A, matrix_bytes(M, K, lda, 1));
    const void *in_b = as_input(t, B, matrix_bytes(K, N, ldb, 1));
    const void *in_bt = as_input(t, Bt, matrix_bytes(N, K, K, 1));
    /* the GEMM alone on the same path, then the epilogue by the hardware's FMAX / FMIN */
    int rc = t->gemm(M, N, K, in_a, lda, in_b, ldb, X, ldc);
    CHECK(rc == TS_OK, "gemm_%s %zux%zux%zu rc %d", t->name, M, N, K, rc);
    for (size_t m = 0; m < M; ++m)
        for (size_t n = 0; n < N; ++n)
            X[m * ldc + n] = ref_epilogue(X[m * ldc + n], bias, n, cmin, cmax);
    for (int form = 0; form < N_FORMS; ++form) {
        memset(C, 0xA5, c_len);
        rc = call_form(t, form, ctx, M, N, K, in_a, lda, in_b, ldb, in_bt, bias, cmin, cmax, C,
                       ldc);
        CHECK(rc == TS_OK, "%s %s %zux%zux%zu rc %d (%s)", t->name, form_name[form], M, N, K,
              rc, ts_last_error());
        int bad = 0;
        for (size_t m = 0; m < M && !bad; ++m)
            for (size_t n = 0; n < (m + 1 < M ? ldc : N) && !bad; ++n) {
                const float *got = &C[m * ldc + n];
                if (n >= N) {
                    bad = !all_bytes(got, 4, 0xA5);
                    CHECK(!bad, "%s %zux%zux%zu: gap C[%zu][%zu] written", form_name[form], M, N,
                          K, m, n);
                    continue;
                }
                bad = memcmp(got, &X[m * ldc + n], 4) != 0;
                CHECK(!bad, "%s %s %zux%zux%zu clamp %zu%s: C[%zu][%zu] = %a, GEMM then bias "
                      "then clamp %a", t->name, form_name[form], M, N, K, clamp,
                      bias ? "" : " (no bias)", m, n, (double)*got, (double)X[m * ldc + n]);
            }
    }
    /* the naive double GEMM, clamped: within the fp32 summation bound (clamping is monotone) */
    int bad = 0;
    for (size_t m = 0; m < M && !special && !bad; ++m)
        for (size_t n = 0; n < N && !bad; ++n) {
            double s = 0, abs_sum = 0;
            for (size_t k = 0; k < K; ++k) {
                float a = A[m * lda + k], b = B[k * ldb + n];
                if (t->bf16) { a = ref_bf16(a); b = ref_bf16(b); }
                s += (double)a * b;
                abs_sum += fabs((double)a * b);
            }
            double b = bias != NULL ? bias[n] : 0.0;
            double want = fmin(fmax(s + b, cmin), cmax);
            /* fp32 and fp16 -> fp32 (exact products, fp32 sums): gamma_(K+2)(2^-24); bf16 paths
             * (tilesmith.h): (K+1) * 2^-23, plus the add */
            double u = t->bf16 ? ldexp(1, -23) : ldexp(1, -24);
            double bound = 1.01 * (double)(K + 2) * u * (abs_sum + fabs(b)) + 1e-30;
            bad = !(fabs(C[m * ldc + n] - want) <= bound);
            CHECK(!bad, "%s %zux%zux%zu C[%zu][%zu] = %.9g, reference %.9g", t->name, M, N, K, m,
                  n, (double)C[m * ldc + n], want);
        }
    release_all();
    ++shapes_run;
}

static void check_errors(ts_context *ctx)
{
    float A[12], B[12], bias[4], C[16];
    for (int i = 0; i < 12; ++i)
        A[i] = B[i] = (float)i;
    for (int i = 0; i < 4; ++i)
        bias[i] = 1.0f;
    const float bad_bounds[][2] = { { 1.0f, 0.0f }, { NAN, 1.0f }, { 0.0f, NAN } };
    for (size_t i = 0; i < 3; ++i) {
        memset(C, 0x5A, sizeof C);
        int rc = ts_gemm_f32_bias_clamp(3, 4, 3, A, 3, B, 4, bias, bad_bounds[i][0],
                                        bad_bounds[i][1], C, 4);
        CHECK(rc == TS_EINVAL && all_bytes(C, sizeof C, 0x5A)
              && strstr(ts_last_error(), "cmin > cmax") != NULL,
              "bad bounds %zu: rc %d, why \"%s\"", i, rc, ts_last_error());
    }
    /* C overlapping the bias (C's last row is the bias) */
    float CB[16];
    memset(CB, 0x5A, sizeof CB);
    int rc = ts_gemm_f32_bias_clamp(3, 4, 3, A, 3, B, 4, CB + 8, 0.0f, 6.0f, CB, 4);
    CHECK(rc == TS_EINVAL && all_bytes(CB, sizeof CB, 0x5A)
          && strstr(ts_last_error(), "C overlaps bias") != NULL, "C overlaps bias: rc %d (%s)",
          rc, ts_last_error());
    ts_packed_b *h = NULL, *hb = NULL;
    CHECK(ts_pack_b_f32(3, 4, B, 4, &h) == TS_OK && ts_pack_b_bf16(3, 4, B, 4, &hb) == TS_OK,
          "pack for the error cases");
    memset(CB, 0x5A, sizeof CB);
    rc = ts_gemm_f32_bias_clamp_prepacked(3, A, 3, h, CB + 8, 0.0f, 6.0f, CB, 4);
    CHECK(rc == TS_EINVAL && all_bytes(CB, sizeof CB, 0x5A), "prepacked C overlaps bias: rc %d",
          rc);
    memset(C, 0x5A, sizeof C);
    rc = ts_gemm_f32_bias_clamp_prepacked(3, A, 3, hb, bias, 0.0f, 6.0f, C, 4);
    CHECK(rc == TS_EINVAL && all_bytes(C, sizeof C, 0x5A), "bf16 handle: rc %d", rc);
    rc = ts_gemm_f32_bias_clamp_prepacked(3, A, 3, h, bias, 2.0f, 1.0f, C, 4);
    CHECK(rc == TS_EINVAL && all_bytes(C, sizeof C, 0x5A), "prepacked cmin > cmax: rc %d", rc);
    /* bf16: its checks are the same code; the handle must be a bf16 one */
    rc = ts_gemm_bf16_bias_clamp_prepacked(3, A, 3, h, bias, 0.0f, 6.0f, C, 4);
    CHECK(rc == TS_EINVAL && all_bytes(C, sizeof C, 0x5A), "bf16 on an f32 handle: rc %d", rc);
    rc = ts_gemm_bf16_bias_clamp(3, 4, 3, A, 3, B, 4, bias, NAN, 1.0f, C, 4);
    CHECK(rc == TS_EINVAL && all_bytes(C, sizeof C, 0x5A), "bf16 NaN bound: rc %d", rc);
    /* f16f32: the same checks; its handles are ts_pack_b_f16f32 ones */
    uint16_t A16[12], B16[12];
    for (int i = 0; i < 12; ++i)
        A16[i] = B16[i] = half_bits((float)i);
    rc = ts_gemm_f16f32_bias_clamp(3, 4, 3, A16, 3, B16, 4, bias, 1.0f, 0.0f, C, 4);
    CHECK(rc == TS_EINVAL && all_bytes(C, sizeof C, 0x5A)
          && strstr(ts_last_error(), "cmin > cmax") != NULL, "f16f32 cmin > cmax: rc %d", rc);
    memset(CB, 0x5A, sizeof CB);
    rc = ts_gemm_f16f32_bias_clamp(3, 4, 3, A16, 3, B16, 4, CB + 8, 0.0f, 6.0f, CB, 4);
    CHECK(rc == TS_EINVAL && all_bytes(CB, sizeof CB, 0x5A)
          && strstr(ts_last_error(), "C overlaps bias") != NULL, "f16f32 C overlaps bias: rc %d",
          rc);
    rc = ts_gemm_f16f32_bias_clamp_prepacked(3, A16, 3, h, bias, 0.0f, 6.0f, C, 4);
    CHECK(rc == TS_EINVAL && all_bytes(C, sizeof C, 0x5A)
          && strstr(ts_last_error(), "another GEMM type") != NULL,
          "f16f32 on an f32 handle: rc %d (%s)", rc, ts_last_error());
    ts_packed_b *h16 = NULL;
    CHECK(ts_pack_b_f16f32(3, 4, B16, 4, &h16) == TS_OK, "f16f32 pack for the error cases");
    rc = ts_gemm_f16f32_bias_clamp_prepacked(3, A16, 3, h16, bias, 0.0f, NAN, C, 4);
    CHECK(rc == TS_EINVAL && all_bytes(C, sizeof C, 0x5A), "f16f32 prepacked NaN bound: rc %d",
          rc);
    rc = ts_gemm_f32_bias_clamp_prepacked(3, A, 3, h16, bias, 0.0f, 6.0f, C, 4);
    CHECK(rc == TS_EINVAL && all_bytes(C, sizeof C, 0x5A), "f32 on an f16f32 handle: rc %d", rc);
    rc = ts_gemm_f16f32_bias_clamp_prepacked(3, A16, 3, h16, bias, 0.0f, 6.0f, C, 4);
    CHECK(rc == TS_OK && C[0] == 6.0f && C[1] == 6.0f, "f16f32 prepacked: rc %d C[0] %g", rc,
          (double)C[0]);
    ts_packed_free(h16);
    memset(C, 0x5A, sizeof C);
    /* the bias inside the context's workspace */
    ts_context *wctx = NULL;
    size_t ws_bytes = ts_context_workspace_size(NULL, TS_GEMM_F32, 3, 4, 3);
    unsigned char *ws = malloc(ws_bytes + 64);
    CHECK(ts_context_create(&wctx) == TS_OK && ws != NULL
          && ts_context_set_workspace(wctx, ws, ws_bytes + 64) == TS_OK, "workspace context");
    memcpy(ws + 16, bias, sizeof bias);
    rc = ts_gemm_f32_bias_clamp_ctx(wctx, 3, 4, 3, A, 3, B, 4, (const float *)(ws + 16), 0.0f,
                                    6.0f, C, 4);
    CHECK(rc == TS_EINVAL && all_bytes(C, sizeof C, 0x5A)
          && strstr(ts_last_error(), "workspace overlaps") != NULL,
          "bias in the workspace: rc %d (%s)", rc, ts_last_error());
    /* and a good call through that workspace */
    rc = ts_gemm_f32_bias_clamp_ctx(wctx, 3, 4, 3, A, 3, B, 4, bias, 0.0f, 6.0f, C, 4);
    CHECK(rc == TS_OK && C[0] == 6.0f, "workspace call: rc %d C[0] %g", rc, (double)C[0]);
    ts_context_free(wctx);
    free(ws);
    ts_packed_free(h);
    ts_packed_free(hb);
    (void)ctx;
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
    for (char *mask_s = strtok(argv[1], ","); mask_s != NULL; mask_s = strtok(NULL, ",")) {
        unsigned mask = (unsigned)strtoul(mask_s, NULL, 10);
        ts_set_feature_mask(mask);
        ts_context_set_feature_mask(ctx3, mask);
        printf("mask=%u f32=%s bf16=%s f16f32=%s\n", mask, ts_gemm_kernel(TS_GEMM_F32),
               ts_gemm_kernel(TS_GEMM_BF16), ts_gemm_kernel(TS_GEMM_F16F32));
        for (int a = 2; a < argc; ++a) {
            size_t M, N, K;
            if (sscanf(argv[a], "%zu,%zu,%zu", &M, &N, &K) != 3) {
                fprintf(stderr, "bad shape %s\n", argv[a]);
                return 2;
            }
            for (size_t t = 0; t < N_TYPES; ++t) {
                for (size_t clamp = 0; clamp < N_CLAMPS; ++clamp)
                    run_case(&TYPES[t], ctx3, M, N, K, (size_t)(a % 3), clamp, 0);
                run_case(&TYPES[t], ctx3, M, N, K, 1, (size_t)a % N_CLAMPS, K == 0 ? 2 : 1);
            }
        }
        check_errors(ctx3);
    }
    ts_set_feature_mask(~0u);
    ts_context_free(ctx3);
    printf("shapes %zu\nfailures %d\n", shapes_run, failures);
    return failures != 0;
}
