/* K bounds of the integer GEMMs (tilesmith.h TS_GEMM_*_MAX_K) and the one documented
 * difference of the requantization from TFLite.
 *
 *   drv_api_kbound MASKS
 * For each feature mask (decimal, comma-separated): prints "mask=<m> int8=<kernel>
 * u8s8=<kernel> u8u32=<kernel>", then runs every integer entry point at K = MAX_K with the
 * inputs that reach the bound (rows of A and columns of B constant, at the extremes of their
 * range and zero point), checked against the closed form K * (a - a_zp) * b computed in
 * int64; and at K = MAX_K + 1, which must return TS_EINVAL with C (and a handle pointer)
 * untouched. Last line "failures <n>". */
#include "drv_api_common.h"

#define ROWS 3
#define COLS 3

/* A rows / B columns: value per row / column (the extremes and a small one). */
static const int32_t S8_VALUES[ROWS] = { -128, 127, -1 };
static const int32_t U8_VALUES[ROWS] = { 255, 0, 1 };

typedef enum { S8S32, S8, U8S8S32, U8U32, U8, CONV, N_OPS } op_t;
static const char *op_name[] = { "s8s32", "s8", "u8s8s32", "u8u32", "u8", "conv2d_s8" };
static const size_t op_max_k[] = { TS_GEMM_S8S32_MAX_K, TS_GEMM_S8_MAX_K, TS_GEMM_U8S8S32_MAX_K,
                                   TS_GEMM_U8U32_MAX_K, TS_GEMM_U8_MAX_K, TS_GEMM_S8_MAX_K };

static int a_is_u8(op_t op) { return op == U8S8S32 || op == U8U32 || op == U8; }
static int b_is_u8(op_t op) { return op == U8U32; }
static int quantized(op_t op) { return op == S8 || op == U8 || op == CONV; }

/* A (ROWS x K, row r constant) and B (K x COLS, column c constant); as OHWI filter for conv
 * (COLS filters of K values). */
static void fill(op_t op, unsigned char *A, unsigned char *B, size_t K)
{
    for (size_t r = 0; r < ROWS; ++r)
        memset(A + r * K, (unsigned char)(a_is_u8(op) ? U8_VALUES[r] : S8_VALUES[r]), K);
    for (size_t k = 0; k < K; ++k)
        for (size_t c = 0; c < COLS; ++c) {
            unsigned char v = (unsigned char)(b_is_u8(op) ? U8_VALUES[c] : S8_VALUES[c]);
            if (op == CONV) B[c * K + k] = v; else B[k * COLS + c] = v;
        }
}

/* Requantization chosen so the worst sums stay visible: multiplier 0.5, shift -24 (x / 2^25,
 * rounded): +-(2^31 - 128) -> +-64; a wrapped sum would change sign. */
static int32_t MULT = 1 << 30, SHIFT = -24;

static void make_quant(op_t op, ts_quant *q, int32_t a_zp)
{
    memset(q, 0, sizeof *q);
    q->a_zero_point = a_zp;
    q->c_zero_point = op == U8 ? 128 : 0;
    q->multiplier = &MULT;
    q->shift = &SHIFT;
    q->act_min = op == U8 ? 0 : -128;
    q->act_max = op == U8 ? 255 : 127;
    q->rounding = TS_ROUND_DOUBLE;
}

/* The exact accumulator of output (r, c), and the byte the quantized ops must produce. */
static int64_t exact(op_t op, size_t K, size_t r, size_t c, int32_t a_zp)
{
    int32_t a = a_is_u8(op) ? U8_VALUES[r] : S8_VALUES[r];
    int32_t b = b_is_u8(op) ? U8_VALUES[c] : S8_VALUES[c];
    return (int64_t)K * (a - a_zp) * b;
}

static int call(op_t op, int prepacked, size_t K, const void *A, const void *B,
                const ts_quant *q, void *C, ts_packed_b **handle)
{
    if (op == CONV) {
        ts_conv2d c;
        memset(&c, 0, sizeof c);
        c.batch = 1; c.in_h = 1; c.in_w = ROWS; c.in_c = K; c.out_c = COLS; c.k_h = c.k_w = 1;
        c.stride_h = c.stride_w = c.dilation_h = c.dilation_w = 1;
        size_t ws = ts_conv2d_s8_workspace_size(&c);
        void *workspace = malloc(ws ? ws : 1);
        int rc;
        if (!prepacked) {
            rc = ts_conv2d_s8(&c, A, B, q, C, workspace);
        } else {
            rc = ts_pack_conv2d_filter_s8(&c, B, handle);
            if (rc == TS_OK)
                rc = ts_conv2d_s8_prepacked(&c, A, *handle, q, C, workspace);
        }
        free(workspace);
        return rc;
    }
    if (!prepacked) {
        switch (op) {
        case S8S32: return ts_gemm_s8s32(ROWS, COLS, K, A, K, B, COLS, C, COLS);
        case S8: return ts_gemm_s8(ROWS, COLS, K, A, K, B, COLS, q, C, COLS);
        case U8S8S32: return ts_gemm_u8s8s32(ROWS, COLS, K, A, K, B, COLS, C, COLS);
        case U8U32: return ts_gemm_u8u32(ROWS, COLS, K, A, K, B, COLS, C, COLS);
        case U8: return ts_gemm_u8(ROWS, COLS, K, A, K, B, COLS, q, C, COLS);
        default: return -100;
        }
    }
    int rc = op == U8U32 ? ts_pack_b_u8u32(K, COLS, B, COLS, handle)
           : a_is_u8(op) ? ts_pack_b_u8s8(K, COLS, B, COLS, handle)
           : ts_pack_b_s8(K, COLS, B, COLS, handle);
    if (rc != TS_OK)
        return rc;
    switch (op) {
    case S8S32: return ts_gemm_s8s32_prepacked(ROWS, A, K, *handle, C, COLS);
    case S8: return ts_gemm_s8_prepacked(ROWS, A, K, *handle, q, C, COLS);
    case U8S8S32: return ts_gemm_u8s8s32_prepacked(ROWS, A, K, *handle, C, COLS);
    case U8U32: return ts_gemm_u8u32_prepacked(ROWS, A, K, *handle, C, COLS);
    case U8: return ts_gemm_u8_prepacked(ROWS, A, K, *handle, q, C, COLS);
    default: return -100;
    }
}

/* K = MAX_K: exact; with every a_zero_point extreme for the quantized ops. */
static void check_at_bound(op_t op, int prepacked)
{
    const size_t K = op_max_k[op], out_bytes = quantized(op) ? 1 : 4;
    unsigned char *A = malloc(ROWS * K), *B = malloc(K * COLS);
    unsigned char C[ROWS * COLS * 4];
    fill(op, A, B, K);
    const int32_t zps_s8[] = { 127, -128, 0 }, zps_u8[] = { 255, 0, 128 }, none[] = { 0 };
    const int32_t *zps = !quantized(op) ? none : op == U8 ? zps_u8 : zps_s8;
    const size_t n_zps = quantized(op) ? 3 : 1;
    for (size_t z = 0; z < n_zps; ++z) {
        ts_quant q;
        make_quant(op, &q, zps[z]);
        ts_packed_b *handle = NULL;
        memset(C, 0xA5, sizeof C);
        int rc = call(op, prepacked, K, A, B, quantized(op) ? &q : NULL, C, &handle);
        CHECK(rc == TS_OK, "%s%s K=%zu a_zp %d: rc %d", op_name[op], prepacked ? " prepacked" : "",
              K, zps[z], rc);
        for (size_t r = 0; r < ROWS && rc == TS_OK; ++r)
            for (size_t c = 0; c < COLS; ++c) {
                int64_t want = exact(op, K, r, c, zps[z]);
                const unsigned char *at = C + (r * COLS + c) * out_bytes;
                if (!quantized(op)) {
                    uint32_t got;
                    memcpy(&got, at, 4);
                    int fits = op == U8U32 ? want >= 0 && want <= (int64_t)UINT32_MAX
                                           : want >= INT32_MIN && want <= INT32_MAX;
                    CHECK(fits && got == (uint32_t)want, "%s%s K=%zu C[%zu][%zu] = %u, exact %lld",
                          op_name[op], prepacked ? " prepacked" : "", K, r, c, got,
                          (long long)want);
                } else {
                    CHECK(want >= INT32_MIN && want <= INT32_MAX, "bound too loose: %lld",
                          (long long)want);
                    int32_t y = ref_mbqm((int32_t)want, MULT, SHIFT, TS_ROUND_DOUBLE)
                                + q.c_zero_point;
                    y = y < q.act_min ? q.act_min : y > q.act_max ? q.act_max : y;
                    int got = op == U8 ? *at : *(const int8_t *)at;
                    CHECK(got == y, "%s%s K=%zu a_zp %d C[%zu][%zu] = %d, want %d (acc %lld)",
                          op_name[op], prepacked ? " prepacked" : "", K, zps[z], r, c, got, y,
                          (long long)want);
                }
            }
        ts_packed_free(handle);
    }
    free(A);
    free(B);
}

/* K = MAX_K + 1: TS_EINVAL, C untouched; a pack of that K (beyond the raw type's bound) leaves
 * the handle pointer untouched. */
static void check_beyond_bound(op_t op, int prepacked)
{
    const size_t K = op_max_k[op] + 1;
    unsigned char *A = malloc(ROWS * K), *B = malloc(K * COLS);
    unsigned char C[ROWS * COLS * 4];
    fill(op, A, B, K);
    ts_quant q;
    make_quant(op, &q, op == U8 ? 255 : 127);
    ts_packed_b *handle = NULL;
    memset(C, 0xA5, sizeof C);
    int rc = call(op, prepacked, K, A, B, quantized(op) ? &q : NULL, C, &handle);
    CHECK(rc == TS_EINVAL && all_bytes(C, sizeof C, 0xA5), "%s%s K=%zu: rc %d, C %s",
          op_name[op], prepacked ? " prepacked" : "", K, rc,
          all_bytes(C, sizeof C, 0xA5) ? "untouched" : "written");
    /* the raw types' packers refuse K beyond their bound; the quantized ops share the raw
     * type's handle and refuse it at the call (s8: S8_MAX_K < S8S32_MAX_K) */
    if (prepacked && (op == S8S32 || op == U8S8S32 || op == U8U32 || op == CONV))
        CHECK(handle == NULL, "%s: pack of K=%zu returned a handle", op_name[op], K);
    ts_packed_free(handle);
    free(A);
    free(B);
}

/* ts_requantize vs TFLite where TFLite's x * (1 << left_shift) overflows int32. */
static void check_requantize_saturates(void)
{
    const int32_t acc[2] = { 1 << 24, 9000000 };
    int32_t mult = 1 << 30, shift = 8;
    ts_quant q;
    memset(&q, 0, sizeof q);
    q.multiplier = &mult;
    q.shift = &shift;
    q.act_min = -128;
    q.act_max = 127;
    int8_t out[2] = { 0x55, 0x55 };
    CHECK(ts_requantize(1, 2, acc, 2, &q, out, 2) == TS_OK, "requantize rc");
    CHECK(out[0] == 127 && out[1] == 127, "requantize saturating case: %d %d, want 127 127",
          out[0], out[1]);
    /* the TFLite formula (wrapping left shift, as ref_mbqm states it) gives 0, -128 */
    int8_t tflite[2];
    for (int i = 0; i < 2; ++i) {
        int32_t y = ref_mbqm(acc[i], mult, shift, TS_ROUND_DOUBLE);
        tflite[i] = (int8_t)(y < -128 ? -128 : y > 127 ? 127 : y);
    }
    CHECK(tflite[0] == 0 && tflite[1] == -128, "TFLite's wrapping result: %d %d", tflite[0],
          tflite[1]);
    printf("requantize saturating %d %d tflite %d %d\n", out[0], out[1], tflite[0], tflite[1]);
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: %s MASKS\n", argv[0]); return 2; }
    setvbuf(stdout, NULL, _IONBF, 0);
    for (char *mask_s = strtok(argv[1], ","); mask_s; mask_s = strtok(NULL, ",")) {
        unsigned mask = (unsigned)strtoul(mask_s, NULL, 0);
        ts_set_feature_mask(mask);
        printf("mask=%u int8=%s u8s8=%s u8u32=%s qdyn=%s\n", mask, ts_gemm_kernel(TS_GEMM_INT8),
               ts_gemm_kernel(TS_GEMM_U8S8), ts_gemm_kernel(TS_GEMM_U8U32),
               ts_gemm_kernel(TS_GEMM_QDYN));   /* qdyn's bounds: drv_api_qdyn.c test_k_bounds */
        for (int op = 0; op < N_OPS; ++op)
            for (int prepacked = 0; prepacked < 2; ++prepacked) {
                check_at_bound((op_t)op, prepacked);
                check_beyond_bound((op_t)op, prepacked);
            }
    }
    ts_set_feature_mask(~0u);
    check_requantize_saturates();
    printf("failures %d\n", failures);
    return failures != 0;
}
