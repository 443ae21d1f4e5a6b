/* Context API harness (ts_context_*, the _ctx twins): for every GEMM type on the dispatch path
 * of each feature mask given, shapes around the cache blocks of that path (K over 1-3 K blocks
 * at remainders 0, 1, lp-1, lp, lp+1 and half a block; M over several M blocks; partial tiles)
 * and conv2d (im2col and pointwise):
 *   - the one-thread result against an independent scalar reference (int64 sums, TFLite
 *     requantization from the formulas; fp32 within the Higham bound);
 *   - the NULL-context call, the built-in pool with 1..8 threads and a caller's parallel_for
 *     (instrumented: every task exactly once, tasks run in reverse order, or on 3 pthreads)
 *     give byte-identical C;
 *   - requantization with every shift negative in every other case (the fused kernels'
 *     rounding mode 2 when double rounding is asked for);
 *   - a caller workspace of exactly ts_context_workspace_size bytes ending at a guard page:
 *     identical C; 16 bytes: TS_EINVAL with C untouched;
 *   - conv2d's checked workspace (caller's buffer exact / one byte short, NULL: allocation or
 *     the context's workspace exact / one byte short; plain and prepacked filter).
 * fp16 (fp16 and fp32 accumulation) likewise, within the fp16 bounds of drv_api_common.h. qdyn
 * (int8 / int4 weights, per channel and per block; A quantised by the call or packed): the NULL
 * context's result (drv_api_qdyn.c checks it against the formulas) must come back bit for bit
 * from every thread count and pool and from the caller's workspace.
 * Arguments: a comma-separated list of feature masks. Prints "failures N" last. */
#include "drv_api_common.h"   /* first: it sets _DEFAULT_SOURCE */

#include <pthread.h>

#include "ts_context_internal.h"
#include "ts_gemm_internal.h"

enum kind { F32, BF16, S8S32, S8, U8S8S32, U8U32, U8, F16, F16F32, KINDS };
static const char *kind_name[] = { "f32", "bf16", "s8s32", "s8", "u8s8s32", "u8u32", "u8", "f16",
                                   "f16f32" };
static const int kind_type[] = { TS_GEMM_F32, TS_GEMM_BF16, TS_GEMM_INT8, TS_GEMM_INT8,
                                 TS_GEMM_U8S8, TS_GEMM_U8U32, TS_GEMM_U8S8, TS_GEMM_F16,
                                 TS_GEMM_F16F32 };
static int is_float(enum kind k) { return k == F32 || k == BF16; }
static int quantized(enum kind k) { return k == S8 || k == U8; }
static int half_in(enum kind k) { return k == F16 || k == F16F32; }
static size_t in_bytes(enum kind k) { return is_float(k) ? 4 : half_in(k) ? 2 : 1; }
static size_t out_bytes(enum kind k) { return quantized(k) ? 1 : k == F16 ? 2 : 4; }
static int a_unsigned(enum kind k) { return k == U8S8S32 || k == U8U32 || k == U8; }
static int b_unsigned(enum kind k) { return k == U8U32; }

/* ---- instrumented parallel_for ------------------------------------------------------------- */
#define MAX_TASKS 4096
typedef struct {
    unsigned counts[MAX_TASKS];
    int threaded;           /* 0: tasks in reverse order on this thread; 1: on 3 pthreads */
    size_t calls, bad;      /* calls made; calls where some task ran other than once */
    size_t n, next;
    ts_task_fn task;
    void *arg;
} recorder;

static void *recorder_worker(void *p)
{
    recorder *r = (recorder *)p;
    for (;;) {
        size_t i = __atomic_fetch_add(&r->next, 1, __ATOMIC_RELAXED);
        if (i >= r->n)
            return NULL;
        __atomic_fetch_add(&r->counts[i], 1, __ATOMIC_RELAXED);
        r->task(r->arg, i);
    }
}

static void recording_parallel_for(void *pool, size_t n, ts_task_fn task, void *arg)
{
    recorder *r = (recorder *)pool;
    if (n > MAX_TASKS) { printf("too many tasks %zu\n", n); exit(2); }
    memset(r->counts, 0, sizeof r->counts);
    r->calls++;
    r->n = n;
    r->next = 0;
    r->task = task;
    r->arg = arg;
    if (r->threaded) {
        pthread_t t[3];
        for (int i = 0; i < 3; ++i)
            pthread_create(&t[i], NULL, recorder_worker, r);
        for (int i = 0; i < 3; ++i)
            pthread_join(t[i], NULL);
    } else {
        for (size_t i = n; i-- > 0;) {
            r->counts[i]++;
            task(arg, i);
        }
    }
    for (size_t i = 0; i < n; ++i)
        if (r->counts[i] != 1) { r->bad++; break; }
}

/* A caller's parallel_for that, before running the tasks of its first call, makes a second
 * call on the same context (second(second_arg), rc kept): while the first call holds the
 * context's workspace, the second must return TS_EBUSY with nothing written. */
typedef struct {
    int (*second)(void *);
    void *second_arg;
    int rc, calls;
} nester;

static void nesting_parallel_for(void *pool, size_t n, ts_task_fn task, void *arg)
{
    nester *r = (nester *)pool;
    if (r->calls++ == 0)
        r->rc = r->second(r->second_arg);
    for (size_t i = 0; i < n; ++i)
        task(arg, i);
}

/* ---- one GEMM call through the _ctx twins --------------------------------------------------- */
typedef struct { int32_t bias[512], mult[512], shift[512]; ts_quant q; } quant_store;

static int call(const ts_context *ctx, enum kind kind, int prepacked, size_t M, size_t N,
                size_t K, const void *A, size_t lda, const void *B, size_t ldb,
                const ts_quant *q, void *C, size_t ldc)
{
    if (!prepacked) {
        switch (kind) {
        case F32: return ts_gemm_f32_ctx(ctx, M, N, K, A, lda, B, ldb, C, ldc);
        case BF16: return ts_gemm_bf16_ctx(ctx, M, N, K, A, lda, B, ldb, C, ldc);
        case S8S32: return ts_gemm_s8s32_ctx(ctx, M, N, K, A, lda, B, ldb, C, ldc);
        case S8: return ts_gemm_s8_ctx(ctx, M, N, K, A, lda, B, ldb, q, C, ldc);
        case U8S8S32: return ts_gemm_u8s8s32_ctx(ctx, M, N, K, A, lda, B, ldb, C, ldc);
        case U8U32: return ts_gemm_u8u32_ctx(ctx, M, N, K, A, lda, B, ldb, C, ldc);
        case F16: return ts_gemm_f16_ctx(ctx, M, N, K, A, lda, B, ldb, C, ldc);
        case F16F32: return ts_gemm_f16f32_ctx(ctx, M, N, K, A, lda, B, ldb, C, ldc);
        default: return ts_gemm_u8_ctx(ctx, M, N, K, A, lda, B, ldb, q, C, ldc);
        }
    }
    ts_packed_b *pb = NULL;
    int rc = kind == F32 ? ts_pack_b_f32_ctx(ctx, K, N, B, ldb, &pb)
           : kind == BF16 ? ts_pack_b_bf16_ctx(ctx, K, N, B, ldb, &pb)
           : kind == U8U32 ? ts_pack_b_u8u32_ctx(ctx, K, N, B, ldb, &pb)
           : kind == F16 ? ts_pack_b_f16_ctx(ctx, K, N, B, ldb, &pb)
           : kind == F16F32 ? ts_pack_b_f16f32_ctx(ctx, K, N, B, ldb, &pb)
           : a_unsigned(kind) ? ts_pack_b_u8s8_ctx(ctx, K, N, B, ldb, &pb)
           : ts_pack_b_s8_ctx(ctx, K, N, B, ldb, &pb);
    if (rc != TS_OK)
        return rc;
    switch (kind) {
    case F32: rc = ts_gemm_f32_prepacked_ctx(ctx, M, A, lda, pb, C, ldc); break;
    case BF16: rc = ts_gemm_bf16_prepacked_ctx(ctx, M, A, lda, pb, C, ldc); break;
    case S8S32: rc = ts_gemm_s8s32_prepacked_ctx(ctx, M, A, lda, pb, C, ldc); break;
    case S8: rc = ts_gemm_s8_prepacked_ctx(ctx, M, A, lda, pb, q, C, ldc); break;
    case U8S8S32: rc = ts_gemm_u8s8s32_prepacked_ctx(ctx, M, A, lda, pb, C, ldc); break;
    case U8U32: rc = ts_gemm_u8u32_prepacked_ctx(ctx, M, A, lda, pb, C, ldc); break;
    case F16: rc = ts_gemm_f16_prepacked_ctx(ctx, M, A, lda, pb, C, ldc); break;
    case F16F32: rc = ts_gemm_f16f32_prepacked_ctx(ctx, M, A, lda, pb, C, ldc); break;
    default: rc = ts_gemm_u8_prepacked_ctx(ctx, M, A, lda, pb, q, C, ldc); break;
    }
    ts_packed_free(pb);
    return rc;
}

typedef struct {
    const ts_context *ctx;
    enum kind kind;
    int prepacked;
    size_t M, N, K, lda, ldb, ldc;
    const void *A, *B;
    const ts_quant *q;
    void *C;
} call_args;

static int call_from_args(void *p)
{
    call_args *a = (call_args *)p;
    return call(a->ctx, a->kind, a->prepacked, a->M, a->N, a->K, a->A, a->lda, a->B, a->ldb,
                a->q, a->C, a->ldc);
}

/* ---- independent reference -------------------------------------------------------------------- */
static int64_t ref_int(enum kind kind, const void *A, size_t lda, const void *B, size_t ldb,
                       size_t m, size_t n, size_t K, int32_t a_zp)
{
    int64_t s = 0;
    for (size_t k = 0; k < K; ++k) {
        int32_t a = a_unsigned(kind) ? ((const uint8_t *)A)[m * lda + k]
                                     : ((const int8_t *)A)[m * lda + k];
        int32_t b = b_unsigned(kind) ? ((const uint8_t *)B)[k * ldb + n]
                                     : ((const int8_t *)B)[k * ldb + n];
        s += (int64_t)(a - a_zp) * b;
    }
    return s;
}

/* TFLite requantization of column n, result before the cast (int8 or uint8 range per q). */
static int32_t ref_requant_value(int32_t acc, size_t n, const ts_quant *q)
{
    int32_t x = (int32_t)((uint32_t)acc + (uint32_t)(q->bias ? q->bias[n] : 0));
    size_t ch = q->per_channel ? n : 0;
    int64_t y = (int64_t)ref_mbqm(x, q->multiplier[ch], q->shift[ch], q->rounding) + q->c_zero_point;
    return (int32_t)(y < q->act_min ? q->act_min : y > q->act_max ? q->act_max : y);
}

/* Checks C (M x N, ldc) against the reference; returns the number of bad elements. */
static int check_reference(enum kind kind, size_t M, size_t N, size_t K, const void *A,
                           size_t lda, const void *B, size_t ldb, const ts_quant *q,
                           const unsigned char *C, size_t ldc, int fp16_acc)
{
    int bad = 0;
    size_t out = out_bytes(kind);
    for (size_t m = 0; m < M; ++m)
        for (size_t n = 0; n < N; ++n) {
            const unsigned char *c = C + (m * ldc + n) * out;
            if (half_in(kind)) {
                double s = 0, abs_sum = 0, got;
                for (size_t k = 0; k < K; ++k) {
                    double p = half_value(((const uint16_t *)A)[m * lda + k])
                               * half_value(((const uint16_t *)B)[k * ldb + n]);
                    s += p;
                    abs_sum += fabs(p);
                }
                if (kind == F16) {
                    uint16_t h;
                    memcpy(&h, c, 2);
                    got = half_value(h);
                } else {
                    float f;
                    memcpy(&f, c, 4);
                    got = f;
                }
                bad += !(fabs(got - s) <= half_bound(fp16_acc, kind == F16, K, s, abs_sum));
            } else if (is_float(kind)) {
                double s = 0, abs_sum = 0;
                for (size_t k = 0; k < K; ++k) {
                    double a = ((const float *)A)[m * lda + k], b = ((const float *)B)[k * ldb + n];
                    if (kind == BF16) { a = ref_bf16((float)a); b = ref_bf16((float)b); }
                    s += a * b;
                    abs_sum += fabs(a * b);
                }
                float got;
                memcpy(&got, c, 4);
                /* Higham's bound gamma_K * sum|ab|; bfmmla's round-to-odd doubles u */
                double u = ldexp(1.0, -24) * (kind == BF16 ? 2 : 1);
                bad += !(fabs(got - s) <= 1.01 * (double)(K + 1) * u * abs_sum + 1e-30);
            } else {
                int32_t a_zp = quantized(kind) ? q->a_zero_point : 0;
                uint32_t acc = (uint32_t)ref_int(kind, A, lda, B, ldb, m, n, K, a_zp);
                if (kind == S8)
                    bad += *(const int8_t *)c != (int8_t)ref_requant_value((int32_t)acc, n, q);
                else if (kind == U8)
                    bad += *c != (uint8_t)ref_requant_value((int32_t)acc, n, q);
                else {
                    uint32_t got;
                    memcpy(&got, c, 4);
                    bad += got != acc;
                }
            }
        }
    return bad;
}

/* one random input element of `in` bytes: fp32 in (-2, 2), fp16 in (-2, 2), int8 / uint8 */
static void fill_elem(unsigned char *p, size_t in)
{
    float f = rand_f32();
    uint16_t h = half_bits(f);
    if (in == 4) memcpy(p, &f, 4);
    else if (in == 2) memcpy(p, &h, 2);
    else *p = (unsigned char)rand_s8();
}

/* ---- one case: every way of running it gives the reference's, identical bytes (C's gaps
 * between rows included: they keep the 0xA5 fill) --------------------------------------------- */
static unsigned mask;
static size_t cases, runs;

static void run_case(enum kind kind, int prepacked, size_t M, size_t N, size_t K)
{
    size_t in = in_bytes(kind), out = out_bytes(kind);
    size_t lda = K + 3, ldb = N + 1, ldc = N + 2;
    unsigned char *A = guarded(matrix_bytes(M, K, lda, in) + 1);
    unsigned char *B = guarded(matrix_bytes(K, N, ldb, in) + 1);
    size_t c_bytes = matrix_bytes(M, N, ldc, out);
    unsigned char *C = guarded(c_bytes + 1), *want = malloc(c_bytes + 1);
    static quant_store qs;
    for (size_t i = 0; i < matrix_bytes(M, K, lda, in); i += in)
        fill_elem(A + i, in);
    for (size_t i = 0; i < matrix_bytes(K, N, ldb, in); i += in)
        fill_elem(B + i, in);
    random_quant(&qs.q, N, qs.bias, qs.mult, qs.shift, (int)(rng_next() & 1), (int)(rng_next() & 1));
    if (cases % 2 == 1)   /* every shift negative: the kernels' rounding mode 2 with double rounding */
        for (size_t n = 0; n < N; ++n)
            qs.shift[n] = qs.shift[n] >= 0 ? -1 - qs.shift[n] : qs.shift[n];
    if (kind == U8) {
        qs.q.a_zero_point += 128;
        qs.q.c_zero_point += 128;
        qs.q.act_min += 128;
        qs.q.act_max += 128;
    }
    const ts_quant *q = quantized(kind) ? &qs.q : NULL;
    ts_context *ctx = NULL;
    ts_context_create(&ctx);
    ts_context_set_feature_mask(ctx, mask);
    cases++;

    /* one thread with the context, against the reference */
    memset(C, 0xA5, c_bytes);
    int rc = call(ctx, kind, prepacked, M, N, K, A, lda, B, ldb, q, C, ldc);
    CHECK(rc == TS_OK, "%s %zux%zux%zu rc %d", kind_name[kind], M, N, K, rc);
    const char *kernel = ts_gemm_kernel_ctx(ctx, kind_type[kind]);
    int bad = check_reference(kind, M, N, K, A, lda, B, ldb, q, C, ldc,
                              kind == F16 && strstr(kernel, "_f16_fmla_") != NULL);
    CHECK(bad == 0, "%s%s %zux%zux%zu mask %u: %d elements differ from the reference (%s)",
          kind_name[kind], prepacked ? " prepacked" : "", M, N, K, mask, bad,
          ts_gemm_kernel_ctx(ctx, kind_type[kind]));
    memcpy(want, C, c_bytes);

    /* NULL context with the same global mask */
    ts_set_feature_mask(mask);
    memset(C, 0xA5, c_bytes);
    rc = call(NULL, kind, prepacked, M, N, K, A, lda, B, ldb, q, C, ldc);
    ts_set_feature_mask(~0u);
    CHECK(rc == TS_OK && memcmp(C, want, c_bytes) == 0, "%s %zux%zux%zu: NULL context differs",
          kind_name[kind], M, N, K);

    /* the built-in pool, 1..8 threads */
    for (unsigned t = 1; t <= 8; ++t) {
        CHECK(ts_context_set_num_threads(ctx, t) == TS_OK, "set_num_threads %u", t);
        memset(C, 0xA5, c_bytes);
        rc = call(ctx, kind, prepacked, M, N, K, A, lda, B, ldb, q, C, ldc);
        CHECK(rc == TS_OK && memcmp(C, want, c_bytes) == 0,
              "%s%s %zux%zux%zu: %u threads differ (rc %d)", kind_name[kind],
              prepacked ? " prepacked" : "", M, N, K, t, rc);
        runs++;
    }

    /* a caller's parallel_for, serial reverse for the default width (8) and on 3 pthreads for
     * pool widths 3 and 16 (ts_context_set_pool_width: the split changes, the bits do not) */
    static recorder rec;
    static const unsigned widths[3] = { 8, 3, 16 };
    for (int variant = 0; variant < 3; ++variant) {
        const int threaded = variant > 0;
        rec.threaded = threaded;
        rec.calls = rec.bad = 0;
        CHECK(ts_context_set_pool_width(ctx, widths[variant]) == TS_OK, "set_pool_width");
        ts_context_set_parallel_for(ctx, recording_parallel_for, &rec);
        memset(C, 0xA5, c_bytes);
        rc = call(ctx, kind, prepacked, M, N, K, A, lda, B, ldb, q, C, ldc);
        CHECK(rc == TS_OK && memcmp(C, want, c_bytes) == 0,
              "%s %zux%zux%zu: caller parallel_for (threaded %d, width %u) differs",
              kind_name[kind], M, N, K, threaded, widths[variant]);
        /* at most a pack round and a compute round, each a fork-join only with two tasks or
         * more: a prepacked B has nothing to pack (its column parameters, O(N), are set on the
         * calling thread), so at most the compute round; one B panel packs on the calling
         * thread, so one tile (a small GEMM) makes no fork-join at all */
        const int one_tile = M <= 8 && N <= 8, no_pack_round = prepacked;
        CHECK(rec.bad == 0 && rec.calls <= 2 && (!one_tile || rec.calls == 0),
              "%s %zux%zux%zu: parallel_for calls %zu, %zu with a task not run exactly once",
              kind_name[kind], M, N, K, rec.calls, rec.bad);
        CHECK(!no_pack_round || rec.calls <= 1,
              "%s prepacked %zux%zux%zu: %zu parallel_for rounds, want at most 1",
              kind_name[kind], M, N, K, rec.calls);
        runs++;
    }

    /* the caller's workspace: exact size at a guard page; one byte short */
    size_t ws = ts_context_workspace_size(ctx, kind_type[kind], M, N, K);
    CHECK(ws > 0, "%s workspace size 0", kind_name[kind]);
    unsigned char *w = guarded(ws);
    ts_context_set_workspace(ctx, w, ws);
    memset(C, 0xA5, c_bytes);
    rc = call(ctx, kind, prepacked, M, N, K, A, lda, B, ldb, q, C, ldc);
    CHECK(rc == TS_OK && memcmp(C, want, c_bytes) == 0,
          "%s %zux%zux%zu: caller workspace differs (rc %d)", kind_name[kind], M, N, K, rc);
    if (M > 0 && N > 0) {   /* a second call while this one holds the workspace: TS_EBUSY */
        unsigned char *C2 = guarded(c_bytes + 1);
        memset(C2, 0xA5, c_bytes);
        call_args second = { ctx, kind, prepacked, M, N, K, lda, ldb, ldc, A, B, q, C2 };
        nester nest = { call_from_args, &second, 0, 0 };
        ts_context_set_parallel_for(ctx, nesting_parallel_for, &nest);
        memset(C, 0xA5, c_bytes);
        rc = call(ctx, kind, prepacked, M, N, K, A, lda, B, ldb, q, C, ldc);
        /* (a call whose rounds are one task each makes no fork-join to nest in: nothing to
         * check there) */
        const int one_task = nest.calls == 0;
        CHECK(rc == TS_OK && memcmp(C, want, c_bytes) == 0 && (nest.calls > 0 || one_task)
              && (nest.rc == TS_EBUSY || one_task) && all_bytes(C2, c_bytes, 0xA5),
              "%s %zux%zux%zu: call during a call on the workspace: rc %d / %d, C %s, C2 %s",
              kind_name[kind], M, N, K, rc, nest.rc,
              memcmp(C, want, c_bytes) == 0 ? "right" : "wrong",
              all_bytes(C2, c_bytes, 0xA5) ? "untouched" : "written");
        ts_context_set_parallel_for(ctx, NULL, NULL);
        memset(C, 0xA5, c_bytes);   /* the workspace is free again once the call returned */
        rc = call(ctx, kind, prepacked, M, N, K, A, lda, B, ldb, q, C, ldc);
        CHECK(rc == TS_OK && memcmp(C, want, c_bytes) == 0,
              "%s %zux%zux%zu: workspace not released (rc %d)", kind_name[kind], M, N, K, rc);
    }
    if (M > 0 && N > 0) {   /* the size is the largest over the type's paths: 16 bytes */
        ts_context_set_workspace(ctx, w + ws - 16, 16);
        memset(C, 0xA5, c_bytes);
        rc = call(ctx, kind, prepacked, M, N, K, A, lda, B, ldb, q, C, ldc);
        CHECK(rc == TS_EINVAL && all_bytes(C, c_bytes, 0xA5),
              "%s %zux%zux%zu: workspace too small: rc %d, C %s", kind_name[kind], M, N,
              K, rc, all_bytes(C, c_bytes, 0xA5) ? "untouched" : "written");
    }
    /* a prepacked call's own size: without B's panels (at least K x N bytes less: every layout
     * packs an element into a byte or more), and exactly that at a guard page runs it */
    size_t wsp = ts_context_workspace_size_prepacked(ctx, kind_type[kind], M, N, K);
    CHECK(wsp > 0 && wsp + K * N <= ws,
          "%s %zux%zux%zu: prepacked workspace %zu not below %zu by B's bytes", kind_name[kind],
          M, N, K, wsp, ws);
    if (prepacked && wsp > 0 && wsp <= ws) {
        ts_context_set_workspace(ctx, w + ws - wsp, wsp);
        memset(C, 0xA5, c_bytes);
        rc = call(ctx, kind, prepacked, M, N, K, A, lda, B, ldb, q, C, ldc);
        CHECK(rc == TS_OK && memcmp(C, want, c_bytes) == 0,
              "%s prepacked %zux%zux%zu: ts_context_workspace_size_prepacked bytes: rc %d",
              kind_name[kind], M, N, K, rc);
    }
    ts_context_free(ctx);
    free(want);
    release_all();
}

/* ---- conv2d with a context -------------------------------------------------------------------- */
/* One conv with ctx: the filter from OHWI (`pb` NULL) or the handle `pb`. */
static int conv_call(const ts_context *ctx, const ts_conv2d *c, const int8_t *input,
                     const int8_t *filter, const ts_packed_b *pb, const ts_quant *q,
                     int8_t *output, void *workspace, size_t workspace_bytes)
{
    if (pb != NULL)
        return ts_conv2d_s8_prepacked_ctx(ctx, c, input, pb, q, output, workspace,
                                          workspace_bytes);
    return ts_conv2d_s8_ctx(ctx, c, input, filter, q, output, workspace, workspace_bytes);
}

/* The checked workspace of ts_conv2d_s8_ctx and _prepacked_ctx (w: ws bytes, exactly what
 * ts_conv2d_s8_workspace_size_ctx says; the prepacked call's size is
 * ts_conv2d_s8_prepacked_workspace_size_ctx, at least the filter's K * out_c bytes less, and
 * ws is enough for it too): one byte short, or (NULL, bytes != 0), is TS_EINVAL with the
 * output untouched; (NULL, 0) runs from an allocation, then from the context's workspace
 * (TS_EINVAL, output untouched, when that is one byte short), each giving `want`. */
static void check_conv_workspace(ts_context *ctx, const ts_conv2d *c, const int8_t *input,
                                 const int8_t *filter, const ts_quant *q, int8_t *output,
                                 const int8_t *want, size_t out_bytes, void *w, size_t ws)
{
    ts_packed_b *handle = NULL;
    int rc = ts_pack_conv2d_filter_s8_ctx(ctx, c, filter, &handle);
    CHECK(rc == TS_OK, "conv filter pack rc %d", rc);
    const size_t filter_bytes = c->out_c * c->k_h * c->k_w * c->in_c;
    const size_t ws_p = ts_conv2d_s8_prepacked_workspace_size_ctx(ctx, c);
    CHECK(ws_p != 0 && ws_p + filter_bytes <= ws,
          "prepacked conv workspace %zu not below the conv's %zu by the filter's %zu bytes",
          ws_p, ws, filter_bytes);
    for (int prepacked = 0; prepacked < 2; ++prepacked) {
        const size_t need = prepacked ? ws_p : ws;
        const struct { void *buf; size_t bytes, ctx_bytes; int want_rc; } tries[] = {
            { w, need - 1, 0, TS_EINVAL },      /* the caller's buffer, one byte short */
            { w, need, 0, TS_OK },              /* ... exact */
            { w, ws, 0, TS_OK },                /* the unpacked conv's size: enough for both */
            { NULL, need, 0, TS_EINVAL },       /* no buffer but a size */
            { NULL, 0, 0, TS_OK },              /* one allocation */
            { NULL, 0, need - 1, TS_EINVAL },   /* the context's workspace, one byte short */
            { NULL, 0, need, TS_OK },           /* the context's workspace, exact */
        };
        for (size_t i = 0; i < sizeof tries / sizeof tries[0]; ++i) {
            ts_context_set_workspace(ctx, tries[i].ctx_bytes ? w : NULL, tries[i].ctx_bytes);
            memset(output, 0x5A, out_bytes);
            rc = conv_call(ctx, c, input, filter, prepacked ? handle : NULL, q, output,
                           tries[i].buf, tries[i].bytes);
            int ok = tries[i].want_rc == TS_OK ? memcmp(output, want, out_bytes) == 0
                                               : all_bytes(output, out_bytes, 0x5A);
            CHECK(rc == tries[i].want_rc && ok,
                  "conv workspace case %zu (prepacked %d): rc %d, output %s", i, prepacked, rc,
                  ok ? "as expected" : "wrong");
        }
    }
    ts_context_set_workspace(ctx, NULL, 0);
    ts_packed_free(handle);
}

static void run_conv(size_t k, size_t stride, size_t pad, size_t in_c, size_t out_c)
{
    ts_conv2d c = { 2, 9, 7, in_c, out_c, k, k, stride, stride, 1, 1, pad, pad, pad, pad };
    size_t in_bytes = c.batch * c.in_h * c.in_w * c.in_c, K = k * k * in_c;
    size_t out_bytes = c.batch * ts_conv2d_out_h(&c) * ts_conv2d_out_w(&c) * out_c;
    int8_t *input = guarded(in_bytes), *filter = guarded(out_c * K), *output = guarded(out_bytes);
    int8_t *want = malloc(out_bytes);
    static quant_store qs;
    for (size_t i = 0; i < in_bytes; ++i) input[i] = rand_s8();
    for (size_t i = 0; i < out_c * K; ++i) filter[i] = rand_s8();
    random_quant(&qs.q, out_c, qs.bias, qs.mult, qs.shift, 1, (int)(rng_next() & 1));
    ts_set_feature_mask(mask);
    void *w0 = guarded(ts_conv2d_s8_workspace_size(&c));
    int rc = ts_conv2d_s8(&c, input, filter, &qs.q, output, w0);
    ts_set_feature_mask(~0u);
    CHECK(rc == TS_OK, "conv rc %d", rc);
    memcpy(want, output, out_bytes);
    ts_context *ctx = NULL;
    ts_context_create(&ctx);
    ts_context_set_feature_mask(ctx, mask);
    static recorder rec;
    for (unsigned t = 1; t <= 9; ++t) {
        if (t <= 8)
            ts_context_set_num_threads(ctx, t);
        else
            ts_context_set_parallel_for(ctx, recording_parallel_for, &rec);
        size_t ws = ts_conv2d_s8_workspace_size_ctx(ctx, &c);
        void *w = guarded(ws);
        memset(output, 0x5A, out_bytes);
        rc = ts_conv2d_s8_ctx(ctx, &c, input, filter, &qs.q, output, w, ws);
        CHECK(rc == TS_OK && memcmp(output, want, out_bytes) == 0,
              "conv k%zu s%zu p%zu %zu->%zu: threads %u differ (rc %d)", k, stride, pad, in_c,
              out_c, t, rc);
        check_conv_workspace(ctx, &c, input, filter, &qs.q, output, want, out_bytes, w, ws);
        runs++;
        n_regions--;            /* this run's workspace */
        guarded_free(&regions[n_regions]);
    }
    cases++;
    ts_context_free(ctx);
    free(want);
    release_all();
}

/* ---- qdyn with a context ----------------------------------------------------------------------
 * bits 8 (qs8) or 4 (qs4, bl 0 = per channel); packed_a: through ts_pack_a_qdyn. */
static int qdyn_call(const ts_context *ctx, int packed_a, size_t M, size_t K, const float *A,
                     size_t lda, const ts_packed_b *pb, const float *bias, float *C, size_t ldc)
{
    if (!packed_a)
        return ts_gemm_qdyn_f32(ctx, M, A, lda, pb, bias, -3.0f, 3.0f, C, ldc);
    ts_packed_a *pa = NULL;
    int rc = ts_pack_a_qdyn(M, K, A, lda, &pa);
    if (rc == TS_OK)
        rc = ts_gemm_qdyn_f32_packed_a(ctx, pa, pb, bias, -3.0f, 3.0f, C, ldc);
    ts_packed_a_free(pa);
    return rc;
}

typedef struct {
    const ts_context *ctx;
    int packed_a;
    size_t M, K, lda, ldc;
    const float *A, *bias;
    const ts_packed_b *pb;
    float *C;
} qdyn_args;

static int qdyn_call_args(void *p)
{
    qdyn_args *a = (qdyn_args *)p;
    return qdyn_call(a->ctx, a->packed_a, a->M, a->K, a->A, a->lda, a->pb, a->bias, a->C,
                     a->ldc);
}

static void run_qdyn(int bits, size_t bl, int packed_a, size_t M, size_t N, size_t K)
{
    size_t lda = K + 1, ldc = N + 3, row = bits == 8 ? K : (K + 1) / 2, ldb = row + 2;
    size_t blocks = bl == 0 ? 1 : K / bl, c_bytes = matrix_bytes(M, N, ldc, 4);
    float *A = guarded(matrix_bytes(M, K, lda, 4) + 4), *bias = guarded(N * 4 + 4);
    float *scales = guarded(N * blocks * 4 + 4);
    unsigned char *B = guarded(matrix_bytes(N, row, ldb, 1) + 1);
    unsigned char *C = guarded(c_bytes + 1), *want = malloc(c_bytes + 1);
    for (size_t i = 0; i < matrix_bytes(M, K, lda, 4) / 4; ++i) A[i] = rand_f32();
    for (size_t i = 0; i < N; ++i) bias[i] = rand_f32();
    for (size_t i = 0; i < N * blocks; ++i) scales[i] = rand_f32() / 64;
    for (size_t i = 0; i < matrix_bytes(N, row, ldb, 1); ++i) B[i] = (unsigned char)rand_s8();
    ts_context *ctx = NULL;
    ts_context_create(&ctx);
    ts_context_set_feature_mask(ctx, mask);
    ts_packed_b *pb = NULL;
    int rc = bits == 8 ? ts_pack_b_qs8_ctx(ctx, N, K, (const int8_t *)B, ldb, scales, &pb)
                       : ts_pack_b_qs4_ctx(ctx, N, K, B, ldb, scales, bl, &pb);
    CHECK(rc == TS_OK, "qdyn pack rc %d", rc);
    cases++;

    /* the NULL context under the same global mask: the result every other run must match */
    ts_set_feature_mask(mask);
    memset(C, 0xA5, c_bytes);
    rc = qdyn_call(NULL, packed_a, M, K, A, lda, pb, bias, (float *)C, ldc);
    ts_set_feature_mask(~0u);
    CHECK(rc == TS_OK, "qdyn NULL ctx rc %d", rc);
    memcpy(want, C, c_bytes);
    memset(C, 0xA5, c_bytes);
    rc = qdyn_call(ctx, packed_a, M, K, A, lda, pb, bias, (float *)C, ldc);
    CHECK(rc == TS_OK && memcmp(C, want, c_bytes) == 0, "qdyn%d bl %zu %zux%zux%zu: one-thread "
          "context differs from NULL (rc %d)", bits, bl, M, N, K, rc);
    for (unsigned t = 1; t <= 8; ++t) {
        ts_context_set_num_threads(ctx, t);
        memset(C, 0xA5, c_bytes);
        rc = qdyn_call(ctx, packed_a, M, K, A, lda, pb, bias, (float *)C, ldc);
        CHECK(rc == TS_OK && memcmp(C, want, c_bytes) == 0,
              "qdyn%d bl %zu%s %zux%zux%zu: %u threads differ (rc %d)", bits, bl,
              packed_a ? " packed A" : "", M, N, K, t, rc);
        runs++;
    }
    static recorder rec;
    for (int threaded = 0; threaded < 2; ++threaded) {
        rec.threaded = threaded;
        rec.calls = rec.bad = 0;
        ts_context_set_parallel_for(ctx, recording_parallel_for, &rec);
        memset(C, 0xA5, c_bytes);
        rc = qdyn_call(ctx, packed_a, M, K, A, lda, pb, bias, (float *)C, ldc);
        CHECK(rc == TS_OK && memcmp(C, want, c_bytes) == 0 && rec.bad == 0 && rec.calls <= 1,
              "qdyn%d %zux%zux%zu: caller parallel_for (threaded %d) differs or tasks not once "
              "(calls %zu bad %zu)", bits, M, N, K, threaded, rec.calls, rec.bad);
        runs++;
    }
    size_t ws = ts_context_workspace_size(ctx, TS_GEMM_QDYN, M, N, K);
    CHECK(ws > 0, "qdyn workspace size 0");
    unsigned char *w = guarded(ws);
    ts_context_set_workspace(ctx, w, ws);
    memset(C, 0xA5, c_bytes);
    rc = qdyn_call(ctx, packed_a, M, K, A, lda, pb, bias, (float *)C, ldc);
    CHECK(rc == TS_OK && memcmp(C, want, c_bytes) == 0,
          "qdyn%d %zux%zux%zu: caller workspace differs (rc %d)", bits, M, N, K, rc);
    unsigned char *C2 = guarded(c_bytes + 1);   /* a call during a call: TS_EBUSY */
    memset(C2, 0xA5, c_bytes);
    qdyn_args second = { ctx, packed_a, M, K, lda, ldc, A, bias, pb, (float *)C2 };
    nester nest = { qdyn_call_args, &second, 0, 0 };
    ts_context_set_parallel_for(ctx, nesting_parallel_for, &nest);
    memset(C, 0xA5, c_bytes);
    rc = qdyn_call(ctx, packed_a, M, K, A, lda, pb, bias, (float *)C, ldc);
    CHECK(rc == TS_OK && memcmp(C, want, c_bytes) == 0 && nest.rc == TS_EBUSY
          && all_bytes(C2, c_bytes, 0xA5), "qdyn%d %zux%zux%zu: call during a call on the "
          "workspace: rc %d / %d", bits, M, N, K, rc, nest.rc);
    ts_context_set_parallel_for(ctx, NULL, NULL);
    ts_context_set_workspace(ctx, w + ws - 16, 16);
    memset(C, 0xA5, c_bytes);
    rc = qdyn_call(ctx, packed_a, M, K, A, lda, pb, bias, (float *)C, ldc);
    CHECK(rc == TS_EINVAL && all_bytes(C, c_bytes, 0xA5),
          "qdyn%d %zux%zux%zu: workspace too small: rc %d, C %s", bits, M, N, K, rc,
          all_bytes(C, c_bytes, 0xA5) ? "untouched" : "written");
    ts_packed_free(pb);
    ts_context_free(ctx);
    free(want);
    release_all();
}

/* ---- context API errors ------------------------------------------------------------------------ */
static int same_kernel(const char *a, const char *b)
{
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* ts_context_clear_feature_mask: after a context mask of 0 (the baseline int8 kernel) the
 * context follows the global mask again, read at each call: the NULL context's kernel under
 * the default mask, the baseline one under a global mask of 0. */
static void check_clear_mask(ts_context *ctx)
{
    CHECK(ts_context_set_feature_mask(ctx, 0) == TS_OK, "set mask 0");
    const char *own = ts_gemm_kernel_ctx(ctx, TS_GEMM_INT8);
    const char *global = ts_gemm_kernel_ctx(NULL, TS_GEMM_INT8);
    if (ts_cpu_features() & (TS_FEAT_DOTPROD | TS_FEAT_I8MM))   /* the check below can fail */
        CHECK(!same_kernel(own, global), "mask 0 and the default mask pick one kernel %s", own);
    CHECK(ts_context_clear_feature_mask(ctx) == TS_OK, "clear mask");
    CHECK(same_kernel(ts_gemm_kernel_ctx(ctx, TS_GEMM_INT8), global),
          "cleared context: kernel %s, the global mask's is %s",
          ts_gemm_kernel_ctx(ctx, TS_GEMM_INT8), global);
    ts_set_feature_mask(0);
    CHECK(same_kernel(ts_gemm_kernel_ctx(ctx, TS_GEMM_INT8), own),
          "cleared context under the global mask 0: kernel %s, expected %s",
          ts_gemm_kernel_ctx(ctx, TS_GEMM_INT8), own);
    ts_set_feature_mask(~0u);
    CHECK(ts_context_clear_feature_mask(ctx) == TS_OK, "clear twice");
    CHECK(ts_context_clear_feature_mask(NULL) == TS_EINVAL, "clear mask NULL ctx");
}

static void check_api(void)
{
    ts_context *ctx = NULL;
    CHECK(ts_context_create(NULL) == TS_EINVAL, "create(NULL)");
    CHECK(ts_context_create(&ctx) == TS_OK && ctx != NULL, "create");
    CHECK(ts_context_set_num_threads(ctx, 0) == TS_EINVAL, "0 threads");
    CHECK(ts_context_set_num_threads(ctx, TS_MAX_THREADS + 1) == TS_EINVAL, "too many threads");
    CHECK(ts_context_set_num_threads(NULL, 2) == TS_EINVAL, "NULL ctx");
    CHECK(ts_context_set_cpu(ctx, "auto") == TS_OK, "cpu auto");
    CHECK(ts_context_set_cpu(ctx, "generic") == TS_OK, "cpu generic");
    CHECK(ts_context_set_cpu(ctx, "no-such-core") == TS_EINVAL, "unknown cpu");
    CHECK(ts_context_set_cpu(ctx, NULL) == TS_EINVAL, "NULL cpu");
    size_t n;
    const ts_cpu_core *cores = ts_cpu_cores(&n);
    for (size_t i = 0; i < n; ++i)
        CHECK(ts_context_set_cpu(ctx, cores[i].name) == TS_OK, "cpu %s", cores[i].name);
    /* a rejected name leaves the context's choice as it was (the last core's class) */
    CHECK(n > 0 && ctx->core_class == cores[n - 1].core_class, "core class of %s",
          n > 0 ? cores[n - 1].name : "?");
    CHECK(ts_context_set_cpu(ctx, "Cortex-A55") == TS_EINVAL
          && ts_context_set_cpu(ctx, "cortex-a55 ") == TS_EINVAL
          && ts_context_set_cpu(ctx, "") == TS_EINVAL && ts_context_set_cpu(ctx, NULL) == TS_EINVAL
          && n > 0 && ctx->core_class == cores[n - 1].core_class, "rejected names kept the class");
    /* the running core's class again: the NULL context's kernels (a class with variants of its
     * own, the last core's, would pick another int8 kernel than check_clear_mask's NULL one) */
    CHECK(ts_context_set_cpu(ctx, "auto") == TS_OK, "cpu auto again");
    check_clear_mask(ctx);
    CHECK(ts_context_workspace_size(ctx, 99, 8, 8, 8) == 0, "unknown type");
    CHECK(ts_context_set_workspace(NULL, NULL, 0) == TS_EINVAL, "workspace NULL ctx");
    CHECK(ts_context_set_pool_width(ctx, 0) == TS_EINVAL, "pool width 0");
    CHECK(ts_context_set_pool_width(ctx, TS_MAX_THREADS + 1) == TS_EINVAL, "pool width too big");
    CHECK(ts_context_set_pool_width(NULL, 4) == TS_EINVAL, "pool width NULL ctx");
    /* the width sets the split of a caller's pool: 16 shares for 16, not 8 */
    static recorder rec;
    static float A[256 * 16], B[16 * 256], C[256 * 256];
    size_t tasks[2];
    for (int i = 0; i < 2; ++i) {
        CHECK(ts_context_set_pool_width(ctx, i == 0 ? 8 : 16) == TS_OK, "pool width");
        CHECK(ts_context_set_parallel_for(ctx, recording_parallel_for, &rec) == TS_OK, "pfor");
        CHECK(ts_gemm_f32_ctx(ctx, 256, 256, 16, A, 16, B, 256, C, 256) == TS_OK, "width gemm");
        tasks[i] = rec.n;
    }
    CHECK(tasks[1] > tasks[0] && tasks[1] >= 16, "pool width 16: %zu tasks, width 8: %zu",
          tasks[1], tasks[0]);
    ts_context_free(ctx);
    ts_context_free(NULL);
}

/* K values around where the path starts splitting K (kw = kw_steps k-steps: one block up to
 * there), then blocks of at most kc = kc_steps k-steps of equal length: K whole at kw - 1 and
 * kw; split just beyond (remainders 1, lp - 1, lp + 1: k-step padding inside a block), at
 * kw + kc / 2 + 1 and at 2 kw + 3 (three or more blocks). */
static size_t shape_ks(const ts_path *p, size_t *ks)
{
    size_t kw = p->kw_steps * p->lp, kc = p->kc_steps * p->lp, lp = p->lp, n = 0;
    const size_t list[] = { 0, 5, kw - 1, kw, kw + 1, kw + lp - 1, kw + lp + 1, kw + kc / 2 + 1,
                            2 * kw + 3 };
    for (size_t i = 0; i < sizeof list / sizeof list[0]; ++i)
        ks[n++] = list[i];
    return n;
}

/* ts_gemm_grid against the rule it documents, by brute force over every grid m x n (m <=
 * a_panels, n <= b_panels, m*n <= 4 threads): the fewest tiles on the busiest thread
 * (ceil(m*n / threads) tasks of ceil(a/m) x ceil(b/n) tiles), then the fewest tasks, then the
 * most M blocks; one thread: 1 x 1. Panel counts around the divisions' edges (and beyond
 * 2^32: the search's division-free quotients stop there), 1-20, 33 and 64 threads (beyond
 * 16: divisors past its reciprocal table). */
static void check_grid(void)
{
    static const size_t big[] = { 1000, 4095, 4096, 4097, 65537, (size_t)1 << 32,
                                  ((size_t)1 << 32) + 1, ((size_t)1 << 32) + 7 };
    size_t panels[96 + sizeof big / sizeof big[0]], np = 0, checked = 0;
    for (size_t v = 1; v <= 96; ++v)
        panels[np++] = v;
    for (size_t i = 0; i < sizeof big / sizeof big[0]; ++i)
        panels[np++] = big[i];
    static const unsigned wide[] = { 33, 64 };
    for (unsigned ti = 1; ti <= 20 + sizeof wide / sizeof wide[0]; ++ti) {
        const unsigned t = ti <= 20 ? ti : wide[ti - 21];
        for (size_t i = 0; i < np; ++i)
            for (size_t j = 0; j < np; j += (i % 7 == 0 ? 1 : 5)) {
                const size_t a = panels[i], b = panels[j], most = 4 * (size_t)t;
                size_t em = 1, en = 1, best = (size_t)-1, best_tasks = 0, m, n;
                for (size_t cm = 1; t > 1 && cm <= a && cm <= most; ++cm)
                    for (size_t cn = 1; cn <= b && cm * cn <= most; ++cn) {
                        const size_t tasks = cm * cn, per = (tasks + t - 1) / t;
                        const size_t busiest = per * ((a + cm - 1) / cm) * ((b + cn - 1) / cn);
                        if (busiest < best || (busiest == best && (tasks < best_tasks
                                               || (tasks == best_tasks && cm > em)))) {
                            best = busiest;
                            best_tasks = tasks;
                            em = cm;
                            en = cn;
                        }
                    }
                ts_gemm_grid(a, b, t, &m, &n);
                CHECK(m == em && n == en, "grid %zu x %zu panels, %u threads: %zu x %zu, the rule "
                      "gives %zu x %zu", a, b, t, m, n, em, en);
                ++checked;
            }
    }
    printf("grids checked %zu\n", checked);
}

int main(int argc, char **argv)
{
    const char *masks = argc > 1 ? argv[1] : "4294967295";
    check_api();
    check_grid();
    for (const char *s = masks; *s;) {
        mask = (unsigned)strtoul(s, (char **)&s, 10);
        if (*s == ',') ++s;
        for (int kind = 0; kind < KINDS; ++kind) {
            ts_context *ctx = NULL;
            ts_context_create(&ctx);
            ts_context_set_feature_mask(ctx, mask);
            const ts_path *p = ts_select_path_ctx(ctx, kind_type[kind]);
            ts_context_free(ctx);
            size_t ks[32], nk = shape_ks(p, ks);
            for (size_t i = 0; i < nk; ++i)   /* K blocks: small M, N with partial tiles */
                run_case((enum kind)kind, i % 3 == 2, 2 * p->ep + 3, p->hp + 5, ks[i]);
            /* several M blocks and a grid: moderate K */
            /* as ts_engine.c m_block_panels: a K block shorter than kc_steps gets taller M
             * blocks (the same A-block bytes) */
            size_t k_small = 3 * p->lp + 1, steps = (k_small + p->lp - 1) / p->lp;
            size_t mb = p->mc_panels * p->kc_steps / steps * p->ep;
            run_case((enum kind)kind, 0, 2 * mb + p->ep + 1, 2 * p->hp + 3, k_small);
            run_case((enum kind)kind, 1, 1, 9 * p->hp + 1, 20);           /* GEMV: N split */
            run_case((enum kind)kind, 0, 2, 9 * p->hp + 1, 37);           /* M = 2 */
            run_case((enum kind)kind, 0, 3 * p->ep, 0, 7);                  /* empty */
            run_case((enum kind)kind, 0, 4, 4, 4);      /* one tile: no fork-join at all */
            run_case((enum kind)kind, 1, 4, 4, 4);
        }
        run_conv(3, 1, 1, 5, 11);
        run_conv(3, 2, 0, 8, 17);
        run_conv(1, 1, 0, 24, 40);
        run_conv(3, 1, 1, 380, 9);     /* K 3420: several K blocks on every int8 path */
        run_qdyn(8, 0, 0, 19, 45, 70);     /* several strips and panels, odd N */
        run_qdyn(8, 0, 1, 1, 77, 64);      /* decode: N split */
        run_qdyn(8, 0, 0, 3, 53, 1000);    /* int8 decode kernel (i8mm): passes, groups split */
        run_qdyn(8, 0, 1, 4, 250, 130);    /* ... (dotprod: 5 raw panels a call), groups split */
        run_qdyn(4, 0, 0, 3, 50, 33);      /* int4 per channel, odd K */
        run_qdyn(4, 32, 1, 17, 29, 96);    /* int4 per block of 32 */
        run_qdyn(4, 64, 0, 3, 61, 256);    /* its decode kernel (M <= 4): panel groups split */
        printf("mask=%u cases %zu runs %zu\n", mask, cases, runs);
    }
    printf("failures %d\n", failures);
    return failures != 0;
}
