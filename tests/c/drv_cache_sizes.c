/* ts_context_set_cache_sizes (ts_context.c) and the blocks it gives (ts_blocks.c):
 *   rule     for every path of every GEMM type whose blocks follow a core's caches, the
 *            run-time rule at the sizes the generator assumed gives the generator's blocks
 *            (gen/blocking.py); the blocks of every path at L1D 64 KiB / L2 1 MiB are printed
 *            ("blocks SYMBOL CLASS KC MC KW") for the Python side to check by hand;
 *   results  int8 requantized, int8 -> int32 and fp32 GEMMs (B packed in the call and
 *            prepacked) with no sizes and with tiny, the ooo class's, 1 MiB and 1 GiB L2 (K
 *            and M blocks from many to one) give the same bytes, the integer ones equal to an
 *            independent int64 reference, fp32 within its error bound of a double reference;
 *   selected (argument "selected" alone) the path and blocks of a call without a context on
 *            the core QEMU reports (print_selected), nothing else;
 *   errors   ctx NULL, sizes outside TS_CACHE_MIN_BYTES..TS_CACHE_MAX_BYTES, L2 < L1D:
 *            TS_EINVAL, a reason naming the argument (ts_last_error), the sizes unchanged.
 *   sysfs    ts_parse_cache_size on sizes as Linux writes them and on garbage; with a
 *            directory argument, ts_cache_sizes_in on each of its subdirectories (fake
 *            /sys/devices/system/cpu/cpuN/cache trees made by the Python side), printed as
 *            "sysfs NAME RC L1D L2";
 * Run with -cpu max (i8mm); the context's CPU is neoverse-n2 (the ooo class). Prints
 * "failures N" last. */
#include "drv_api_common.h"

#include "ts_context_internal.h"

#define M 100
#define N 128       /* rows of int8 C on whole 64-byte lines: the line stage (line_unit) */
#define K 3000

static int8_t A8[M * K], B8[K * N], R8[M * N];
static int8_t C8[M * N] __attribute__((aligned(64)));
static int32_t I32[M * N], R32[M * N];
static float Af[M * K], Bf[K * N], Cf[M * N], Rf[M * N];

static const char *const CLASS_NAMES[] = { "generic", "ooo", "inorder" };

/* The sizes of each run: {0, 0} = none set. 4096 / 65536: K blocks of 32 k-steps, M blocks
 * of 16 panels, so the int8 GEMMs run groups of 4 B panels and the requantized one stages
 * its lines (ts_engine.c line_unit: two lines of 128-byte rows, the tail path's panel too),
 * on the fused kernel after 11 K blocks of accumulation. */
static const size_t SIZES[][2] = {
    { 0, 0 }, { 4096, 16384 }, { 65536, 524288 }, { 65536, 1u << 20 }, { 0, 1u << 30 },
    { 32768, 0 }, { 4096, 65536 },
};
#define RUNS (sizeof SIZES / sizeof SIZES[0])

static void check_rule(void)
{
    ts_context *ctx;
    CHECK(ts_context_create(&ctx) == TS_OK, "context");
    for (int type = TS_GEMM_F32; type <= TS_GEMM_F16F32; ++type) {
        size_t count;
        const ts_path *paths = ts_paths_of(type, &count);
        for (size_t i = 0; i < count; ++i) {
            const ts_path *p = &paths[i];
            ts_path sized;
            if (p->block_l1 == 0) {
                CHECK(ts_context_set_cache_sizes(ctx, 4096, 16384) == TS_OK, "set");
                CHECK(ts_sized_path(ctx, p, &sized) == p, "%s: blocks not from caches re-sized",
                      p->symbol);
                continue;
            }
            CHECK(ts_context_set_cache_sizes(ctx, p->block_l1, p->block_l2) == TS_OK, "set");
            const ts_path *s = ts_sized_path(ctx, p, &sized);
            CHECK(s->kc_steps == p->kc_steps && s->mc_panels == p->mc_panels
                  && s->kw_steps == p->kw_steps,
                  "%s (%s): at the generator's %zu / %zu bytes the rule gives %zu %zu %zu, the "
                  "generator %zu %zu %zu", p->symbol, CLASS_NAMES[p->core_class], p->block_l1,
                  p->block_l2, s->kc_steps, s->mc_panels, s->kw_steps, p->kc_steps,
                  p->mc_panels, p->kw_steps);
            CHECK(ts_context_set_cache_sizes(ctx, 65536, 1u << 20) == TS_OK, "set");
            s = ts_sized_path(ctx, p, &sized);
            printf("blocks %s %s %zu %zu %zu\n", p->symbol, CLASS_NAMES[p->core_class],
                   s->kc_steps, s->mc_panels, s->kw_steps);
        }
    }
    ts_context_free(ctx);
}

static void references(const ts_quant *q)
{
    for (size_t m = 0; m < M; ++m)
        for (size_t n = 0; n < N; ++n) {
            int64_t s = 0, sq = 0;
            double d = 0;
            for (size_t k = 0; k < K; ++k) {
                s += (int64_t)A8[m * K + k] * B8[k * N + n];
                sq += ((int64_t)A8[m * K + k] - q->a_zero_point) * B8[k * N + n];
                d += (double)Af[m * K + k] * Bf[k * N + n];
            }
            R32[m * N + n] = (int32_t)s;
            R8[m * N + n] = ref_requant((int32_t)sq, n, q);
            Rf[m * N + n] = (float)d;
        }
}

static double f32_bound(size_t m, size_t n)
{
    double bound = 0;
    for (size_t k = 0; k < K; ++k)
        bound += fabs((double)Af[m * K + k] * Bf[k * N + n]);
    return gamma_n(K, ldexp(1.0, -24)) * bound;
}

static void check_results(void)
{
    static int32_t bias[N], mult[N], shift[N];
    static float first_f[M * N];
    ts_quant q;
    for (size_t i = 0; i < M * K; ++i) {
        A8[i] = rand_s8();
        Af[i] = rand_f32();
    }
    for (size_t i = 0; i < K * N; ++i) {
        B8[i] = rand_s8();
        Bf[i] = rand_f32();
    }
    random_quant(&q, N, bias, mult, shift, 1, 0);
    references(&q);
    for (size_t r = 0; r < RUNS; ++r) {
        ts_context *ctx;
        ts_packed_b *pb8 = NULL, *pbf = NULL;
        /* the last run on 3 threads too (a grid of tasks, each with its line stage) */
        CHECK(ts_context_create(&ctx) == TS_OK && ts_context_set_cpu(ctx, "neoverse-n2") == TS_OK
              && ts_context_set_cache_sizes(ctx, SIZES[r][0], SIZES[r][1]) == TS_OK
              && ts_context_set_num_threads(ctx, r + 1 == RUNS ? 3 : 1) == TS_OK,
              "context %zu", r);
        for (int prepacked = 0; prepacked < 2; ++prepacked) {
            memset(C8, 0, sizeof C8);
            memset(I32, 0, sizeof I32);
            memset(Cf, 0, sizeof Cf);
            if (prepacked) {
                CHECK(ts_pack_b_s8_ctx(ctx, K, N, B8, N, &pb8) == TS_OK
                      && ts_pack_b_f32_ctx(ctx, K, N, Bf, N, &pbf) == TS_OK, "pack %zu", r);
                CHECK(ts_gemm_s8_prepacked_ctx(ctx, M, A8, K, pb8, &q, C8, N) == TS_OK
                      && ts_gemm_s8s32_prepacked_ctx(ctx, M, A8, K, pb8, I32, N) == TS_OK
                      && ts_gemm_f32_prepacked_ctx(ctx, M, Af, K, pbf, Cf, N) == TS_OK,
                      "prepacked calls at %zu / %zu: %s", SIZES[r][0], SIZES[r][1],
                      ts_last_error());
            } else {
                CHECK(ts_gemm_s8_ctx(ctx, M, N, K, A8, K, B8, N, &q, C8, N) == TS_OK
                      && ts_gemm_s8s32_ctx(ctx, M, N, K, A8, K, B8, N, I32, N) == TS_OK
                      && ts_gemm_f32_ctx(ctx, M, N, K, Af, K, Bf, N, Cf, N) == TS_OK,
                      "calls at %zu / %zu: %s", SIZES[r][0], SIZES[r][1], ts_last_error());
            }
            CHECK(memcmp(C8, R8, sizeof C8) == 0, "int8 at %zu / %zu (prepacked %d) differs "
                  "from the reference", SIZES[r][0], SIZES[r][1], prepacked);
            CHECK(memcmp(I32, R32, sizeof I32) == 0, "int32 at %zu / %zu (prepacked %d) differs "
                  "from the reference", SIZES[r][0], SIZES[r][1], prepacked);
            if (r == 0 && !prepacked) {
                memcpy(first_f, Cf, sizeof Cf);
                for (size_t m = 0; m < M; ++m)
                    for (size_t n = 0; n < N; ++n)
                        CHECK(fabs((double)Cf[m * N + n] - Rf[m * N + n])
                                  <= f32_bound(m, n) + fabs((double)Rf[m * N + n]) * 0x1p-24,
                              "fp32 [%zu][%zu] %.9g, reference %.9g", m, n, Cf[m * N + n],
                              Rf[m * N + n]);
            }
            CHECK(memcmp(Cf, first_f, sizeof Cf) == 0, "fp32 at %zu / %zu (prepacked %d) not "
                  "the bits of the run without sizes", SIZES[r][0], SIZES[r][1], prepacked);
        }
        ts_packed_free(pb8);
        ts_packed_free(pbf);
        ts_context_free(ctx);
    }
}

static void expect_einval(ts_context *ctx, size_t l1, size_t l2, const char *word)
{
    int rc = ts_context_set_cache_sizes(ctx, l1, l2);
    CHECK(rc == TS_EINVAL && strstr(ts_last_error(), word) != NULL,
          "set_cache_sizes(%zu, %zu): rc %d, reason \"%s\" (expected one naming %s)", l1, l2, rc,
          ts_last_error(), word);
}

static void check_errors(void)
{
    ts_context *ctx;
    CHECK(ts_context_create(&ctx) == TS_OK
          && ts_context_set_cache_sizes(ctx, 65536, 1u << 20) == TS_OK, "context");
    expect_einval(NULL, 65536, 1u << 20, "ctx");
    expect_einval(ctx, 1, 1u << 20, "l1d_bytes");
    expect_einval(ctx, TS_CACHE_MIN_BYTES - 1, 0, "l1d_bytes");
    expect_einval(ctx, TS_CACHE_MAX_BYTES + 1, 0, "l1d_bytes");
    expect_einval(ctx, 0, 100, "l2_bytes");
    expect_einval(ctx, 65536, TS_CACHE_MAX_BYTES + 1, "l2_bytes");
    expect_einval(ctx, 65536, 32768, "smaller than l1d_bytes");
    expect_einval(ctx, (size_t)-1, (size_t)-1, "l1d_bytes");
    CHECK(ctx->l1d_bytes == 65536 && ctx->l2_bytes == (1u << 20),
          "a refused call changed the sizes (%zu, %zu)", ctx->l1d_bytes, ctx->l2_bytes);
    CHECK(ts_context_set_cache_sizes(ctx, TS_CACHE_MIN_BYTES, TS_CACHE_MAX_BYTES) == TS_OK
          && ts_context_set_cache_sizes(ctx, 0, 0) == TS_OK, "the limits themselves refused");
    ts_context_free(ctx);
}

static void check_parse(void)
{
    static const struct { const char *text; int rc; size_t bytes; } cases[] = {
        { "1024K\n", 0, 1u << 20 }, { "2M\n", 0, 2u << 20 }, { "64K", 0, 65536 },
        { "1G\n", 0, 1u << 30 }, { "32768\n", 0, 32768 }, { "", -1, 0 }, { "K\n", -1, 0 },
        { "12Q\n", -1, 0 }, { "1024KB\n", -1, 0 }, { "-1\n", -1, 0 }, { " 64K", -1, 0 },
        { "1024K\n\n", -1, 0 }, { "99999999999999999999999\n", -1, 0 },
        { "18014398509481984K", -1, 0 },       /* 2^54 KiB: beyond size_t */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        size_t out = 12345;
        int rc = ts_parse_cache_size(cases[i].text, &out);
        CHECK(rc == cases[i].rc && out == (rc == 0 ? cases[i].bytes : 12345),
              "parse \"%s\": rc %d, %zu", cases[i].text, rc, out);
    }
}

static void print_sysfs(const char *root, const char *name)
{
    char dir[300];
    size_t l1 = 0, l2 = 0;
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    int rc = ts_cache_sizes_in(dir, &l1, &l2);
    printf("sysfs %s %d %zu %zu %s\n", name, rc, l1, l2, rc != TS_OK ? ts_last_error() : "");
}

/* "selected TYPE SYMBOL CLASS KC MC KW": the path and blocks a call with no context runs on
 * the core QEMU reports (ts_select_sized_path: the known part's caches, or the path's own);
 * with `cpu`, a call whose context names that core (ts_context_set_cpu). */
static void print_selected(const char *cpu)
{
    ts_context *ctx = NULL;
    if (cpu != NULL && (ts_context_create(&ctx) != TS_OK || ts_context_set_cpu(ctx, cpu) != TS_OK)) {
        printf("FAIL context for %s: %s\n", cpu, ts_last_error());
        ts_context_free(ctx);
        return;
    }
    for (int type = TS_GEMM_F32; type <= TS_GEMM_F16F32; ++type) {
        ts_path sized;
        const ts_path *p = ts_select_sized_path(ctx, type, &sized);
        if (p != NULL)
            printf("selected %d %s %s %zu %zu %zu\n", type, p->symbol,
                   CLASS_NAMES[p->core_class], p->kc_steps, p->mc_panels, p->kw_steps);
    }
    ts_context_free(ctx);
}

int main(int argc, char **argv)
{
    if ((argc == 2 || argc == 3) && strcmp(argv[1], "selected") == 0) {
        print_selected(argc == 3 ? argv[2] : NULL);
        return 0;
    }
    check_rule();
    check_results();
    check_errors();
    check_parse();
    for (int i = 2; i < argc; ++i)
        print_sysfs(argv[1], argv[i]);
    printf("failures %d\n", failures);
    return failures != 0;
}
