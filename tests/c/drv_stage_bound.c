/* The int32 / fp32 staging of the blocked loop is bounded by the cache blocks, not by M
 * (ts_engine.c stage_bytes: the K blocks of a staged call run inside its M blocks, so each task
 * stages one M block):
 *   bound    at L1D 4 KiB / L2 16 KiB (K blocks of a few dozen k-steps, M blocks of a few
 *            panels) the workspace of the int8 / uint8 requantised and fp16 GEMMs at N = K =
 *            1024 is the same at M = 4096 and M = 2^20, for 1 and 3 threads, and below the
 *            M x N x 4 bytes of an int32 copy of the whole output at M = 4096 (before, the
 *            workspace held that copy: 16.8 MB more at M = 4096);
 *   results  int8 requantised, N = 44 (a partial last B panel): with those sizes M = 4096,
 *            K = 1000 (several K blocks, the last one shorter); with L1D 4 KiB / L2 64 KiB
 *            M = 4093 (a partial last A panel), K = 320 (smmla, sdot) and 150 (smlal): one K
 *            block over KC k-steps, so groups of 2-3 B panels, each A panel's full tiles of a
 *            group in one call of the fused kernel's strip entry (ts_engine.c
 *            run_full_tiles_strip, run_rest); on each feature mask given, 1 and 3 threads, B
 *            packed in the call and prepacked: a caller workspace of exactly
 *            ts_context_workspace_size(_prepacked) bytes ending at a guard page, C equal to an
 *            independent int64 / TFLite reference.
 * Arguments: a comma-separated list of feature masks. Prints "failures N" last. */
#include "drv_api_common.h"

#define M 4096      /* the most rows and k of a results run (A's row stride K) */
#define N 44
#define K 1000
#define BIG_N 1024
#define BIG_K 1024

static int8_t A[M * K], B[K * N], R[M * N];
static int runs;

static const int BOUND_TYPES[] = { TS_GEMM_INT8, TS_GEMM_U8S8, TS_GEMM_F16 };

static void check_bound(unsigned threads)
{
    ts_context *ctx;
    CHECK(ts_context_create(&ctx) == TS_OK && ts_context_set_cache_sizes(ctx, 4096, 16384) == TS_OK
          && ts_context_set_num_threads(ctx, threads) == TS_OK, "context");
    for (size_t i = 0; i < sizeof BOUND_TYPES / sizeof BOUND_TYPES[0]; ++i) {
        const int type = BOUND_TYPES[i];
        const size_t at_4096 = ts_context_workspace_size(ctx, type, 4096, BIG_N, BIG_K);
        const size_t at_big = ts_context_workspace_size(ctx, type, (size_t)1 << 20, BIG_N, BIG_K);
        printf("workspace type %d threads %u M=4096 %zu M=2^20 %zu\n", type, threads, at_4096,
               at_big);
        CHECK(at_4096 > 0 && at_big == at_4096,
              "type %d, %u threads: workspace %zu at M = 4096, %zu at M = 2^20 (grows with M)",
              type, threads, at_4096, at_big);
        CHECK(at_4096 < (size_t)4096 * BIG_N * sizeof(int32_t),
              "type %d, %u threads: workspace %zu not below an int32 copy of C (%zu)", type,
              threads, at_4096, (size_t)4096 * BIG_N * sizeof(int32_t));
    }
    ts_context_free(ctx);
}

/* The results runs: rows, k (A rows of stride K, B's first k rows), L1D and L2 bytes. */
static const size_t SHAPES[][4] = {
    { 4096, 1000, 4096, 16384 }, { 4093, 320, 4096, 65536 }, { 4093, 150, 4096, 65536 },
};
#define N_SHAPES (sizeof SHAPES / sizeof SHAPES[0])

static void reference(size_t rows, size_t k_len, const ts_quant *q)
{
    for (size_t m = 0; m < rows; ++m)
        for (size_t n = 0; n < N; ++n) {
            int64_t s = 0;
            for (size_t k = 0; k < k_len; ++k)
                s += ((int64_t)A[m * K + k] - q->a_zero_point) * B[k * N + n];
            R[m * N + n] = ref_requant((int32_t)s, n, q);
        }
}

static void check_shape(unsigned mask, const size_t *shape)
{
    static int32_t bias[N], mult[N], shift[N];
    const size_t rows = shape[0], k_len = shape[1];
    ts_quant q;
    random_quant(&q, N, bias, mult, shift, 1, 0);
    reference(rows, k_len, &q);
    for (unsigned threads = 1; threads <= 3; threads += 2)
        for (int prepacked = 0; prepacked < 2; ++prepacked) {
            ts_context *ctx;
            ts_packed_b *pb = NULL;
            CHECK(ts_context_create(&ctx) == TS_OK
                  && ts_context_set_feature_mask(ctx, mask) == TS_OK
                  && ts_context_set_cache_sizes(ctx, shape[2], shape[3]) == TS_OK
                  && ts_context_set_num_threads(ctx, threads) == TS_OK, "context");
            const size_t ws = prepacked ? ts_context_workspace_size_prepacked(ctx, TS_GEMM_INT8,
                                                                                 rows, N, k_len)
                                        : ts_context_workspace_size(ctx, TS_GEMM_INT8, rows, N,
                                                                    k_len);
            unsigned char *w = guarded(ws);
            int8_t *C = guarded(rows * N);
            memset(C, 0xA5, rows * N);
            CHECK(ts_context_set_workspace(ctx, w, ws) == TS_OK, "set_workspace");
            int rc;
            if (prepacked) {
                CHECK(ts_pack_b_s8_ctx(ctx, k_len, N, B, N, &pb) == TS_OK, "pack");
                rc = ts_gemm_s8_prepacked_ctx(ctx, rows, A, K, pb, &q, C, N);
            } else
                rc = ts_gemm_s8_ctx(ctx, rows, N, k_len, A, K, B, N, &q, C, N);
            const int same = memcmp(C, R, rows * N) == 0;
            CHECK(rc == TS_OK && same,
                  "mask %#x, M %zu K %zu, %u threads, prepacked %d: rc %d (%s), C %s the "
                  "reference", mask, rows, k_len, threads, prepacked, rc,
                  rc == TS_OK ? "" : ts_last_error(), same ? "equal to" : "differs from");
            ts_packed_free(pb);
            ts_context_free(ctx);
            release_all();
            runs++;
        }
}

static void check_results(unsigned mask)
{
    for (size_t s = 0; s < N_SHAPES; ++s)
        check_shape(mask, SHAPES[s]);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        printf("usage: drv_stage_bound MASK[,MASK...]\n");
        return 2;
    }
    check_bound(1);
    check_bound(3);
    for (size_t i = 0; i < M * K; ++i)
        A[i] = rand_s8();
    for (size_t i = 0; i < K * N; ++i)
        B[i] = rand_s8();
    for (const char *p = argv[1]; *p != '\0';) {
        char *end;
        const unsigned long mask = strtoul(p, &end, 10);
        if (end == p || (*end != ',' && *end != '\0')) {
            printf("bad mask list %s\n", argv[1]);
            return 2;
        }
        check_results((unsigned)mask);
        p = *end == ',' ? end + 1 : end;
    }
    printf("runs %d\nfailures %d\n", runs, failures);
    return failures != 0;
}
