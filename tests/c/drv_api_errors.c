/* Argument-error harness: every entry point with bad arguments returns TS_EINVAL (or TS_ENOMEM
 * for sizes no allocation can hold) and leaves its output untouched; the valid corner cases
 * (M, N or K = 0, NULL buffers of no element) return TS_OK with the right contents.
 * Aliasing: an output overlapping an input (exactly, or by one element) is TS_EINVAL with
 * nothing written; an input that only touches the output end to end runs normally.
 * Every failure records a reason of its own in ts_last_error(); a sample names its problem.
 *   drv_api_errors        last line "failures <n>"; exit status 1 on any failure. */
#include "drv_api_common.h"   /* first: sets _DEFAULT_SOURCE */

#include <math.h>
#include <stdint.h>

#include "ts_pack_internal.h"   /* ts_packed_b fields: handles built at chosen addresses */

enum kind { F32, BF16, S8S32, S8, U8S8S32, U8U32, U8 };
static const char *kind_name[] = { "f32", "bf16", "s8s32", "s8", "u8s8s32", "u8u32", "u8" };

typedef struct {
    enum kind kind;
    size_t M, N, K, lda, ldb, ldc;
    const void *A, *B;
    void *C;
    const ts_quant *q;
} gemm_args;

static int call_gemm(const gemm_args *g)
{
    switch (g->kind) {
    case F32: return ts_gemm_f32(g->M, g->N, g->K, g->A, g->lda, g->B, g->ldb, g->C, g->ldc);
    case BF16: return ts_gemm_bf16(g->M, g->N, g->K, g->A, g->lda, g->B, g->ldb, g->C, g->ldc);
    case S8S32: return ts_gemm_s8s32(g->M, g->N, g->K, g->A, g->lda, g->B, g->ldb, g->C, g->ldc);
    case S8: return ts_gemm_s8(g->M, g->N, g->K, g->A, g->lda, g->B, g->ldb, g->q, g->C, g->ldc);
    case U8S8S32:
        return ts_gemm_u8s8s32(g->M, g->N, g->K, g->A, g->lda, g->B, g->ldb, g->C, g->ldc);
    case U8U32:
        return ts_gemm_u8u32(g->M, g->N, g->K, g->A, g->lda, g->B, g->ldb, g->C, g->ldc);
    case U8: return ts_gemm_u8(g->M, g->N, g->K, g->A, g->lda, g->B, g->ldb, g->q, g->C, g->ldc);
    }
    return 99;
}

#define M0 5
#define N0 6
#define K0 7
static float Af[M0 * K0], Bf[K0 * N0];
static int8_t A8[M0 * K0], B8[K0 * N0];
static unsigned char Cbuf[M0 * N0 * 4];
static int32_t bias[N0] = { 100, -200, 300, -400, 500, -600 }, mult[N0], shift[N0];

static ts_quant valid_quant(void)
{
    for (int n = 0; n < N0; ++n) { mult[n] = 1 << 30; shift[n] = -2; }
    ts_quant q = { 3, -5, bias, mult, shift, 1, -128, 127, TS_ROUND_DOUBLE };
    return q;
}

/* valid_quant, for ts_gemm_u8 moved to uint8 zero points and clamp range */
static ts_quant quant_for(enum kind kind)
{
    ts_quant q = valid_quant();
    if (kind == U8) {
        q.a_zero_point += 128;
        q.c_zero_point += 128;
        q.act_min += 128;
        q.act_max += 128;
    }
    return q;
}

static gemm_args valid_gemm(enum kind kind, const ts_quant *q)
{
    int is_float = kind == F32 || kind == BF16;
    gemm_args g = { kind, M0, N0, K0, K0, N0, N0, is_float ? (const void *)Af : (const void *)A8,
                    is_float ? (const void *)Bf : (const void *)B8, Cbuf, q };
    return g;
}

/* A known reason in ts_last_error() (a NULL ts_context_create), so a failure after it must
 * have recorded its own. Returns that reason. */
static const char *known_last_error(void)
{
    ts_context_create(NULL);
    return ts_last_error();
}

/* Runs g, expects rc, and C (Cbuf) untouched unless rc is TS_OK; a failure records a reason of
 * its own in ts_last_error(). */
static void expect(const gemm_args *g, int rc_want, const char *what)
{
    memset(Cbuf, 0xA5, sizeof Cbuf);
    const char *before = known_last_error();
    int rc = call_gemm(g);
    CHECK(rc == rc_want, "%s %s: rc %d, want %d", kind_name[g->kind], what, rc, rc_want);
    if (rc_want != TS_OK) {
        CHECK(all_bytes(Cbuf, sizeof Cbuf, 0xA5), "%s %s: output written", kind_name[g->kind], what);
        CHECK(ts_last_error() != before && ts_last_error()[0] != '\0',
              "%s %s: no reason recorded (ts_last_error \"%s\")", kind_name[g->kind], what,
              ts_last_error());
    }
}

/* ts_last_error names the problem: after each failing call below, its reason contains the
 * expected words (the reasons are tilesmith.h's promise: argument and rule). */
static void expect_reason(int rc, const char *words, const char *what)
{
    CHECK(rc != TS_OK && strstr(ts_last_error(), words) != NULL,
          "%s: rc %d, reason \"%s\", want one containing \"%s\"", what, rc, ts_last_error(),
          words);
}

/* A context workspace holding q (the struct, or its bias / multiplier / shift array) is
 * TS_EINVAL with C untouched, for ts_gemm_s8_ctx, ts_gemm_u8_ctx and
 * ts_gemm_s8_prepacked_ctx: the call would overwrite q while reading it (q at the workspace's
 * start: every call uses it from there). */
static void workspace_holds_q(void)
{
    ts_context *ctx = NULL;
    ts_packed_b *pb = NULL;
    CHECK(ts_context_create(&ctx) == TS_OK && ts_pack_b_s8_ctx(ctx, K0, N0, B8, N0, &pb) == TS_OK,
          "workspace_holds_q set-up");
    const size_t ws = ts_context_workspace_size(ctx, TS_GEMM_INT8, M0, N0, K0);
    unsigned char *w = malloc(ws);
    ts_context_set_workspace(ctx, w, ws);
    for (int part = 0; part < 4; ++part) {               /* struct, bias, multiplier, shift */
        const size_t bytes = part == 0 ? sizeof(ts_quant) : N0 * sizeof(int32_t);
        unsigned char *const at = w;
        for (int call = 0; call < 3; ++call) {           /* s8, u8, s8 prepacked */
            ts_quant q = quant_for(call == 1 ? U8 : S8), *qp = &q;
            int32_t *arrays[3] = { bias, mult, shift };
            if (part == 0) {
                memcpy(at, &q, sizeof q);
                qp = (ts_quant *)(void *)at;
            } else {
                memcpy(at, arrays[part - 1], bytes);
                if (part == 1) q.bias = (int32_t *)(void *)at;
                if (part == 2) q.multiplier = (int32_t *)(void *)at;
                if (part == 3) q.shift = (int32_t *)(void *)at;
            }
            memset(Cbuf, 0xA5, sizeof Cbuf);
            int rc = call == 0 ? ts_gemm_s8_ctx(ctx, M0, N0, K0, A8, K0, B8, N0, qp, (int8_t *)Cbuf, N0)
                   : call == 1 ? ts_gemm_u8_ctx(ctx, M0, N0, K0, (const uint8_t *)A8, K0, B8, N0, qp,
                                                (uint8_t *)Cbuf, N0)
                   : ts_gemm_s8_prepacked_ctx(ctx, M0, A8, K0, pb, qp, (int8_t *)Cbuf, N0);
            CHECK(rc == TS_EINVAL && all_bytes(Cbuf, sizeof Cbuf, 0xA5)
                  && strstr(ts_last_error(), "workspace overlaps q") != NULL,
                  "workspace holds q (part %d, call %d): rc %d, reason \"%s\"", part, call,
                  rc, ts_last_error());
        }
    }
    free(w);
    ts_packed_free(pb);
    ts_context_free(ctx);
}

static void error_reasons(void)
{
    ts_quant q = valid_quant();
    int8_t *C8 = (int8_t *)Cbuf;
    expect_reason(ts_gemm_f32(M0, N0, K0, Af, K0 - 1, Bf, N0, (float *)Cbuf, N0), "lda < K",
                  "f32 lda");
    expect_reason(ts_gemm_f32(M0, N0, K0, Af, K0, Bf, N0, NULL, N0), "C is NULL", "f32 C NULL");
    expect_reason(ts_gemm_s8(M0, N0, K0, A8, K0, B8, N0, NULL, C8, N0), "q is NULL", "s8 q NULL");
    shift[3] = 31;
    expect_reason(ts_gemm_s8(M0, N0, K0, A8, K0, B8, N0, &q, C8, N0), "shift", "s8 shift 31");
    /* each field of q named alone (int8 and uint8 ranges) */
    static const struct { int field; int32_t value; const char *s8, *u8; } bad_field[] = {
        { 0, 128, "q->a_zero_point is outside -128..127", NULL },
        { 0, 256, NULL, "q->a_zero_point is outside 0..255" },
        { 1, -129, "q->c_zero_point is outside -128..127", "q->c_zero_point is outside 0..255" },
        { 2, -200, "q->act_min is outside -128..127", "q->act_min is outside 0..255" },
        { 3, 300, "q->act_max is outside -128..127", "q->act_max is outside 0..255" },
        { 4, 5, "q->per_channel is not 0 or 1", "q->per_channel is not 0 or 1" },
    };
    for (size_t i = 0; i < sizeof bad_field / sizeof bad_field[0]; ++i)
        for (int u8 = 0; u8 < 2; ++u8) {
            const char *want = u8 ? bad_field[i].u8 : bad_field[i].s8;
            if (want == NULL)
                continue;
            q = valid_quant();
            q.a_zero_point = q.c_zero_point = q.act_min = 0;   /* valid for both types */
            int32_t *field[] = { &q.a_zero_point, &q.c_zero_point, &q.act_min, &q.act_max,
                                 &q.per_channel };
            *field[bad_field[i].field] = bad_field[i].value;
            expect_reason(u8 ? ts_gemm_u8(M0, N0, K0, (const uint8_t *)A8, K0, B8, N0, &q,
                                          (uint8_t *)C8, N0)
                             : ts_gemm_s8(M0, N0, K0, A8, K0, B8, N0, &q, C8, N0),
                          want, "q field out of range");
        }
    q = valid_quant();
    q.multiplier = NULL;
    expect_reason(ts_gemm_s8(M0, N0, K0, A8, K0, B8, N0, &q, C8, N0), "q->multiplier is NULL",
                  "s8 multiplier NULL");
    q = valid_quant();
    q.shift = NULL;
    expect_reason(ts_gemm_s8(M0, N0, K0, A8, K0, B8, N0, &q, C8, N0), "q->shift is NULL",
                  "s8 shift NULL");
    q = valid_quant();
    expect_reason(ts_gemm_s8s32(M0, N0, K0, (const int8_t *)Cbuf, K0, B8, N0, (int32_t *)Cbuf, N0),
                  "C overlaps A", "s8s32 C == A");
    ts_context *ctx = NULL;
    CHECK(ts_context_create(&ctx) == TS_OK, "context");
    expect_reason(ts_context_set_cpu(ctx, "cortex-z9"),
                  "cpu is not \"auto\", \"generic\" or a core name", "set_cpu unknown");
    expect_reason(ts_context_set_cpu(ctx, NULL), "cpu is NULL", "set_cpu NULL");
    expect_reason(ts_context_set_num_threads(ctx, 0), "thread count", "0 threads");
    expect_reason(ts_context_set_num_threads(NULL, 2), "ctx is NULL", "NULL context");
    ts_conv2d c = { 1, 4, 4, 2, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1 };
    size_t ws = ts_conv2d_s8_workspace_size_ctx(ctx, &c);
    void *w = malloc(ws);
    int8_t in[4 * 4 * 2] = { 0 }, filter[3 * 3 * 3 * 2] = { 0 }, out[4 * 4 * 3];
    /* this conv packs from a padded copy of its input (ts_conv2d.c: 6*6*2 = 72 bytes, a quarter
     * of its 16 x 18 im2col matrix), so ws counts it: one byte short is refused with neither
     * the output nor the workspace (where the copy would go) written */
    memset(out, 0xA5, sizeof out);
    memset(w, 0xA5, ws);
    for (size_t i = 0; i < sizeof in; ++i)
        in[i] = (int8_t)(i * 7);
    expect_reason(ts_conv2d_s8_ctx(ctx, &c, in, filter, &q, out, w, ws - 1), "workspace_bytes",
                  "conv workspace short");
    CHECK(all_bytes(out, sizeof out, 0xA5) && all_bytes(w, ws, 0xA5),
          "conv workspace short: output or workspace written");
    CHECK(ts_conv2d_s8_ctx(ctx, &c, in, filter, &q, out, w, ws) == TS_OK,
          "conv with the exact workspace");
    expect_reason(ts_conv2d_s8_ctx(ctx, &c, in, NULL, &q, out, w, ws), "filter is NULL",
                  "conv filter NULL");
    c.stride_w = 0;
    expect_reason(ts_conv2d_s8_ctx(ctx, &c, in, filter, &q, out, w, ws), "stride",
                  "conv stride 0");
    expect_reason(ts_im2col_s8(NULL, in, 0, out), "NULL", "im2col conv NULL");
    expect_reason(ts_requantize(1, 4, (const int32_t *)Cbuf, 3, &q, C8 + 64, 4), "ld_acc < N",
                  "requantize ld_acc");
    expect_reason(ts_requantize(1, 4, (const int32_t *)Cbuf, 4, &q, C8 + 64, 3), "ldc < N",
                  "requantize ldc");
    float scales[4] = { 1.0f, 1.0f, NAN, 1.0f }, wf[4 * 64] = { 0 };
    uint8_t w4[4 * 32] = { 0 };
    int8_t w8[4 * 64] = { 0 };
    ts_packed_b *pb = NULL;
    expect_reason(ts_pack_b_qs4(4, 64, w4, 32, scales, 33, &pb), "multiple of 32", "qs4 bl 33");
    expect_reason(ts_pack_b_qs8(4, 64, w8, 64, scales, &pb), "NaN",
                  "qs8 NaN scale");
    wf[70] = INFINITY;
    expect_reason(ts_quantize_qs8(4, 64, wf, 64, (int8_t *)Cbuf, scales), "W holds",
                  "quantize Inf");
    expect_reason(ts_gemm_qdyn_f32(NULL, 1, wf, 64, NULL, NULL, 0.0f, 1.0f, (float *)Cbuf, 4),
                  "B (the packed handle) is NULL", "qdyn NULL handle");
    /* the qdyn matrix checks name their argument and stride */
    expect_reason(ts_pack_b_qs8(4, 64, w8, 63, scales, &pb), "ldb < K", "qs8 ldb");
    expect_reason(ts_pack_b_qs4(4, 64, w4, 31, scales, 0, &pb), "ldb_bytes < ceil(K / 2)",
                  "qs4 ldb_bytes");
    expect_reason(ts_pack_b_qs4(4, 64, NULL, 32, scales, 0, &pb), "B is NULL", "qs4 B NULL");
    expect_reason(ts_quantize_qs8(4, 64, wf, 63, (int8_t *)Cbuf, scales), "ldw < K",
                  "quantize ldw");
    ts_packed_a *pa = NULL;
    expect_reason(ts_pack_a_qdyn(2, 64, wf, 63, &pa), "lda < K", "pack_a lda");
    size_t l2 = 0;
    expect_reason(ts_cache_sizes_sysfs(0, NULL, &l2), "l1d_bytes or l2_bytes is NULL",
                  "sysfs NULL");
    CHECK(ts_context_workspace_size(NULL, 99, 4, 4, 4) == 0
          && strstr(ts_last_error(), "gemm_type") != NULL,
          "workspace size of type 99: reason \"%s\"", ts_last_error());
    /* the kernel-name queries: NULL with the reason (each after another failure's reason) */
    for (int i = 0; i < 3; ++i) {
        (void)ts_cache_sizes_sysfs(0, NULL, &l2);     /* reason: "l1d_bytes or l2_bytes ..." */
        const char *name = i == 0 ? ts_gemm_kernel(99) : i == 1 ? ts_gemm_kernel_mn(-1, 1, 8)
                                                               : ts_gemm_kernel_ctx(ctx, -1);
        CHECK(name == NULL && strstr(ts_last_error(), "gemm_type is not a TS_GEMM_* value"),
              "kernel-name query %d of an unknown type: reason \"%s\"", i, ts_last_error());
    }
    free(w);
    ts_context_free(ctx);
}

/* Handles of the wrong type or freed (tilesmith.h "Handle checks"): a ts_packed_a cast to
 * ts_packed_b (crashed before the tags), a conv filter to a GEMM and a GEMM handle of the same
 * K and N to the conv, a handle cast to a context, a ts_packed_b as a ts_packed_a, a freed
 * handle whose memory still holds the cleared tag: each TS_EINVAL, outputs untouched, a reason
 * naming the handle; the size / name queries 0 / NULL; the frees ignore it. */
static void handle_type_errors(void)
{
    static float Aq[M0 * 64];
    for (size_t i = 0; i < sizeof Aq / sizeof Aq[0]; ++i)
        Aq[i] = (float)(i % 13) - 6.0f;
    ts_packed_a *pa = NULL;
    ts_packed_b *gemm8 = NULL, *filter = NULL, *f32 = NULL;
    /* a 1x1 conv with K = in_c = K0, N = out_c = N0: the same K x N as gemm8 */
    ts_conv2d c = { 1, 1, M0, K0, N0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0 };
    static int8_t wfilter[N0 * K0], B8s[K0 * N0], conv_out[M0 * N0], ws[1 << 16];
    ts_quant q = valid_quant();
    for (size_t n = 0; n < N0; ++n)   /* OHWI filter = B transposed */
        for (size_t k = 0; k < K0; ++k)
            wfilter[n * K0 + k] = (int8_t)(B8[k * N0 + n] + (int8_t)(k * 3 + n));
    memcpy(B8s, B8, sizeof B8s);
    for (size_t n = 0; n < N0; ++n)
        for (size_t k = 0; k < K0; ++k)
            B8s[k * N0 + n] = wfilter[n * K0 + k];
    CHECK(ts_pack_a_qdyn(M0, 64, Aq, 64, &pa) == TS_OK && ts_pack_b_s8(K0, N0, B8s, N0, &gemm8) == TS_OK
          && ts_pack_conv2d_filter_s8(&c, wfilter, &filter) == TS_OK
          && ts_pack_b_f32(K0, N0, Bf, N0, &f32) == TS_OK, "handle_type_errors: packing");
    const ts_packed_b *a_as_b = (const ts_packed_b *)(const void *)pa;
    memset(Cbuf, 0xA5, sizeof Cbuf);
    expect_reason(ts_gemm_f32_prepacked(M0, Af, 64, a_as_b, (float *)Cbuf, N0),
                  "not a live ts_packed_b", "ts_packed_a as ts_packed_b (f32 prepacked)");
    expect_reason(ts_gemm_qdyn_f32(NULL, M0, Aq, 64, a_as_b, NULL, -1.0f, 1.0f, (float *)Cbuf, N0),
                  "not a live ts_packed_b", "ts_packed_a as ts_packed_b (qdyn)");
    expect_reason(ts_gemm_qdyn_f32_packed_a(NULL, (const ts_packed_a *)(const void *)gemm8, f32,
                                            NULL, -1.0f, 1.0f, (float *)Cbuf, N0),
                  "not a live ts_packed_a", "ts_packed_b as ts_packed_a");
    expect_reason(ts_gemm_s8_prepacked(M0, A8, K0, filter, &q, (int8_t *)Cbuf, N0),
                  "not a live ts_packed_b of ts_pack_b_*", "conv filter to ts_gemm_s8_prepacked");
    expect_reason(ts_gemm_s8s32_prepacked(M0, A8, K0, filter, (int32_t *)Cbuf, N0),
                  "not a live ts_packed_b of ts_pack_b_*", "conv filter to ts_gemm_s8s32_prepacked");
    const ts_context *b_as_ctx = (const ts_context *)(const void *)f32;
    expect_reason(ts_gemm_f32_ctx(b_as_ctx, M0, N0, K0, Af, K0, Bf, N0, (float *)Cbuf, N0),
                  "not a live ts_context", "ts_packed_b as ts_context (f32_ctx)");
    expect_reason(ts_gemm_f32_prepacked_ctx(b_as_ctx, M0, Af, K0, f32, (float *)Cbuf, N0),
                  "not a live ts_context", "ts_packed_b as ts_context (prepacked_ctx)");
    expect_reason(ts_context_set_num_threads((ts_context *)(void *)f32, 2),
                  "not a live ts_context", "ts_packed_b as ts_context (setter)");
    CHECK(all_bytes(Cbuf, sizeof Cbuf, 0xA5), "handle_type_errors: C written");
    CHECK(ts_context_workspace_size(b_as_ctx, TS_GEMM_F32, M0, N0, K0) == 0
          && ts_context_workspace_size_prepacked(b_as_ctx, TS_GEMM_F32, M0, N0, K0) == 0
          && ts_conv2d_s8_workspace_size_ctx(b_as_ctx, &c) == 0
          && ts_gemm_kernel_ctx(b_as_ctx, TS_GEMM_F32) == NULL
          && ts_packed_kernel(a_as_b) == NULL && ts_gemm_qdyn_kernel(NULL, a_as_b, 1) == NULL,
          "handle_type_errors: a query answered for a wrong handle");
    memset(conv_out, 0x5A, sizeof conv_out);
    expect_reason(ts_conv2d_s8_prepacked(&c, A8, gemm8, &q, conv_out, ws),
                  "not a live conv-filter handle", "ts_pack_b_s8 handle to ts_conv2d_s8_prepacked");
    CHECK(all_bytes(conv_out, sizeof conv_out, 0x5A), "handle_type_errors: conv output written");
    CHECK(ts_conv2d_s8_prepacked(&c, A8, filter, &q, conv_out, ws) == TS_OK
          && ts_gemm_s8_prepacked(M0, A8, K0, gemm8, &q, (int8_t *)Cbuf, N0) == TS_OK
          && memcmp(conv_out, Cbuf, sizeof conv_out) == 0,
          "handle_type_errors: the right handles (conv = GEMM with B = filter^T)");
    /* freed: a handle in the caller's memory (ts_packed_b_init: no block to free) keeps the
     * cleared tag after ts_packed_free */
    static ts_packed_b h;
    static union { unsigned char b[1 << 12]; long double align; } h_mem;
    ts_packed_b_init(&h, ts_select_path(TS_GEMM_F32), TS_LAYOUTS_ALL, K0, N0, Bf, N0, 1, 0, h_mem.b);
    memset(Cbuf, 0xA5, sizeof Cbuf);
    CHECK(ts_gemm_f32_prepacked(M0, Af, K0, &h, (float *)Cbuf, N0) == TS_OK, "live handle");
    ts_packed_free(&h);
    ts_packed_free(&h);   /* again: ignored */
    memset(Cbuf, 0xA5, sizeof Cbuf);
    expect_reason(ts_gemm_f32_prepacked(M0, Af, K0, &h, (float *)Cbuf, N0), "freed",
                  "freed handle");
    CHECK(all_bytes(Cbuf, sizeof Cbuf, 0xA5), "handle_type_errors: freed handle wrote C");
    ts_packed_a_free((ts_packed_a *)(void *)gemm8);   /* wrong type: ignored */
    ts_context_free((ts_context *)(void *)gemm8);     /* likewise */
    ts_packed_free((ts_packed_b *)(void *)pa);        /* likewise */
    ts_packed_a_free(pa);
    ts_packed_free(gemm8);
    ts_packed_free(filter);
    ts_packed_free(f32);
}

static void gemm_errors(enum kind kind)
{
    ts_quant q = quant_for(kind);
    gemm_args g;
#define CASE(mutation, rc) do { g = valid_gemm(kind, &q); mutation; expect(&g, rc, #mutation); q = quant_for(kind); } while (0)
    CASE((void)0, TS_OK);
    CASE(g.A = NULL, TS_EINVAL);
    CASE(g.B = NULL, TS_EINVAL);
    CASE(g.C = NULL, TS_EINVAL);
    CASE(g.lda = K0 - 1, TS_EINVAL);
    CASE(g.ldb = N0 - 1, TS_EINVAL);
    CASE(g.ldc = N0 - 1, TS_EINVAL);
    CASE((g.M = 0, g.A = NULL, g.C = NULL), TS_OK);
    CASE((g.N = 0, g.B = NULL, g.C = NULL, g.ldb = 0, g.ldc = 0), TS_OK);
    CASE((g.K = 0, g.A = NULL, g.B = NULL, g.lda = 0), TS_OK);
    /* sizes whose packing buffers overflow size_t / exceed any allocation (never touched) */
    /* B (K0 x SIZE_MAX/2) spans more bytes than size_t counts: no buffer holds it */
    CASE((g.M = 1, g.N = SIZE_MAX / 2, g.ldb = g.N, g.ldc = g.N, q.per_channel = 0), TS_EINVAL);
    /* C (1 x 2^42) stands at 2^46, clear of what A and B claim from Af / Bf (at most 2^44 bytes;
     * in place C's claimed span would cover them: TS_EINVAL); never written, the packing
     * allocation fails first */
    CASE((g.M = 1, g.N = (size_t)1 << 42, g.K = 1, g.ldb = g.N, g.ldc = g.N, q.per_channel = 0,
          g.C = (void *)((uintptr_t)1 << 46)), TS_ENOMEM);
    /* strides whose span (rows-1)*ld + cols elements is more bytes than size_t counts: the
     * byte offset of row 1 would wrap around (for fp32 / int32, 2^62+1 elements = 2^64 + 4
     * bytes, i.e. 4: row 1 would land on element 1 of row 0) */
    size_t in_bytes = kind == F32 || kind == BF16 ? 4 : 1, c_bytes = kind == S8 || kind == U8 ? 1 : 4;
    CASE((g.M = 2, g.lda = SIZE_MAX / in_bytes - 1), TS_EINVAL);
    CASE((g.K = 2, g.ldb = SIZE_MAX / in_bytes - 1), TS_EINVAL);
    CASE((g.M = 2, g.ldc = SIZE_MAX / c_bytes - 1), TS_EINVAL);
    if (in_bytes == 4)
        CASE((g.M = 2, g.lda = ((size_t)1 << 62) + 1), TS_EINVAL);
    if (c_bytes == 4)
        CASE((g.M = 2, g.ldc = ((size_t)1 << 62) + 1), TS_EINVAL);
    if (kind == U8) {   /* uint8 ranges: a_zero_point, c_zero_point, act_min, act_max in 0..255 */
        CASE(g.q = NULL, TS_EINVAL);
        CASE(q.a_zero_point = 256, TS_EINVAL);
        CASE(q.a_zero_point = -1, TS_EINVAL);
        CASE(q.c_zero_point = 256, TS_EINVAL);
        CASE(q.c_zero_point = -1, TS_EINVAL);
        CASE(q.act_max = 256, TS_EINVAL);
        CASE(q.act_min = -1, TS_EINVAL);
        CASE((q.act_min = 10, q.act_max = 9), TS_EINVAL);
        CASE(shift[3] = 31, TS_EINVAL);
        CASE(mult[2] = -1, TS_EINVAL);
        CASE(q.rounding = 2, TS_EINVAL);
        CASE((q.a_zero_point = 255, q.c_zero_point = 0, q.act_min = 0, q.act_max = 255), TS_OK);
        CASE((q.a_zero_point = 0, q.c_zero_point = 255, q.act_min = 255), TS_OK);
        return;
    }
    if (kind != S8)
        return;
    CASE(g.q = NULL, TS_EINVAL);
    CASE(q.a_zero_point = 128, TS_EINVAL);
    CASE(q.a_zero_point = -129, TS_EINVAL);
    CASE(q.c_zero_point = 128, TS_EINVAL);
    CASE((q.act_min = 10, q.act_max = 9), TS_EINVAL);
    CASE(q.act_max = 128, TS_EINVAL);
    CASE(q.act_min = -129, TS_EINVAL);
    CASE(shift[3] = 31, TS_EINVAL);
    CASE(shift[5] = -32, TS_EINVAL);
    CASE(mult[2] = -1, TS_EINVAL);
    CASE(q.multiplier = NULL, TS_EINVAL);
    CASE(q.shift = NULL, TS_EINVAL);
    CASE(q.rounding = 2, TS_EINVAL);
    CASE(shift[0] = 30, TS_OK);
    CASE(shift[0] = -31, TS_OK);
#undef CASE
}

/* K = 0: C = 0, or the requantized bias for gemm_s8. */
static void k_zero_results(void)
{
    ts_quant q = valid_quant();
    gemm_args g = valid_gemm(S8, &q);
    g.K = 0;
    g.A = g.B = NULL;
    memset(Cbuf, 0xA5, sizeof Cbuf);
    CHECK(call_gemm(&g) == TS_OK, "s8 K=0");
    for (int m = 0; m < M0; ++m)
        for (int n = 0; n < N0; ++n)
            CHECK(((int8_t *)Cbuf)[m * N0 + n] == ref_requant(0, (size_t)n, &q), "s8 K=0 (%d,%d)", m, n);
    for (enum kind kind = F32; kind <= S8S32; ++kind) {
        g = valid_gemm(kind, NULL);
        g.K = 0;
        memset(Cbuf, 0xA5, sizeof Cbuf);
        CHECK(call_gemm(&g) == TS_OK, "%s K=0", kind_name[kind]);
        CHECK(all_bytes(Cbuf, M0 * N0 * 4, 0), "%s K=0: C not zero", kind_name[kind]);
    }
}

static void prepacked_errors(void)
{
    ts_packed_b *pb = (ts_packed_b *)&Cbuf;   /* sentinel: must stay as is on error */
    CHECK(ts_pack_b_f32(K0, N0, NULL, N0, &pb) == TS_EINVAL && pb == (ts_packed_b *)&Cbuf, "pack NULL B");
    CHECK(ts_pack_b_s8(K0, N0, B8, N0 - 1, &pb) == TS_EINVAL && pb == (ts_packed_b *)&Cbuf, "pack ldb < N");
    CHECK(ts_pack_b_f32(2, N0, Bf, ((size_t)1 << 62) + 1, &pb) == TS_EINVAL && pb == (ts_packed_b *)&Cbuf,
          "pack ldb wraps");
    CHECK(ts_pack_b_bf16(K0, N0, Bf, N0, NULL) == TS_EINVAL, "pack out NULL");
    CHECK(ts_pack_b_s8(1, SIZE_MAX / 2, B8, SIZE_MAX / 2, &pb) == TS_ENOMEM && pb == (ts_packed_b *)&Cbuf,
          "pack overflow");
    pb = NULL;
    CHECK(ts_pack_b_s8(K0, N0, B8, N0, &pb) == TS_OK && pb != NULL, "pack s8");
    ts_quant q = valid_quant();
    memset(Cbuf, 0xA5, sizeof Cbuf);
    CHECK(ts_gemm_s8_prepacked(M0, A8, K0 - 1, pb, &q, (int8_t *)Cbuf, N0) == TS_EINVAL, "lda < K");
    CHECK(ts_gemm_s8_prepacked(M0, A8, K0, pb, &q, (int8_t *)Cbuf, N0 - 1) == TS_EINVAL, "ldc < N");
    CHECK(ts_gemm_s8_prepacked(M0, NULL, K0, pb, &q, (int8_t *)Cbuf, N0) == TS_EINVAL, "A NULL");
    CHECK(ts_gemm_s8_prepacked(M0, A8, SIZE_MAX - 1, pb, &q, (int8_t *)Cbuf, N0) == TS_EINVAL, "lda wraps");
    CHECK(ts_gemm_s8_prepacked(M0, A8, K0, pb, &q, (int8_t *)Cbuf, SIZE_MAX - 1) == TS_EINVAL, "ldc wraps");
    CHECK(ts_gemm_s8s32_prepacked(M0, A8, K0, pb, (int32_t *)Cbuf, ((size_t)1 << 62) + 1) == TS_EINVAL,
          "s32 ldc wraps");
    CHECK(ts_requantize(2, N0, (const int32_t *)Bf, ((size_t)1 << 62) + 1, &q, (int8_t *)Cbuf, N0)
          == TS_EINVAL, "requantize ld_acc wraps");
    CHECK(ts_requantize(2, N0, (const int32_t *)Bf, N0, &q, (int8_t *)Cbuf, SIZE_MAX - 1) == TS_EINVAL,
          "requantize ldc wraps");
    CHECK(ts_gemm_s8_prepacked(M0, A8, K0, NULL, &q, (int8_t *)Cbuf, N0) == TS_EINVAL, "handle NULL");
    CHECK(ts_gemm_s8s32_prepacked(M0, A8, K0, NULL, (int32_t *)Cbuf, N0) == TS_EINVAL, "handle NULL");
    q.c_zero_point = 300;
    CHECK(ts_gemm_s8_prepacked(M0, A8, K0, pb, &q, (int8_t *)Cbuf, N0) == TS_EINVAL, "bad quant");
    CHECK(all_bytes(Cbuf, sizeof Cbuf, 0xA5), "prepacked error wrote C");
    CHECK(ts_packed_kernel(NULL) == NULL && ts_gemm_kernel(1000) == NULL, "name of nothing");
    ts_packed_free(pb);
}

static void conv_errors(void)
{
    static int8_t in[2 * 6 * 6 * 9], f[4 * 3 * 3 * 3], out[2 * 6 * 6 * 4], ws[1 << 16];   /* in: room for in_c 9 */
    ts_conv2d c0 = { 2, 6, 6, 3, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1 }, c;
    int32_t cb[4] = { 1, 2, 3, 4 }, cm[4] = { 1 << 30, 1 << 30, 1 << 30, 1 << 30 }, cs[4] = { 0 };
    ts_quant q0 = { 0, 0, cb, cm, cs, 1, -128, 127, TS_ROUND_DOUBLE }, q;
    CHECK(ts_conv2d_s8_workspace_size(&c0) <= sizeof ws, "workspace %zu", ts_conv2d_s8_workspace_size(&c0));
    ts_packed_b *pf = NULL, *other = NULL;
    CHECK(ts_pack_conv2d_filter_s8(&c0, f, &pf) == TS_OK, "pack filter");
    static float f32_filter[27 * 4];
    CHECK(ts_pack_b_f32(27, 4, f32_filter, 4, &other) == TS_OK, "pack f32 handle");
#define CASE(mutation, ...) do {                                                             \
        c = c0; q = q0;                                                                        \
        const ts_conv2d *cp = &c; const int8_t *ip = in, *fp = f; int8_t *op = out;            \
        void *wp = ws; const ts_packed_b *pp = pf; const ts_quant *qp = &q;                    \
        mutation;                                                                              \
        memset(out, 0x5A, sizeof out);                                                         \
        int rc1 = ts_conv2d_s8(cp, ip, fp, qp, op, wp);                                        \
        int rc2 = ts_conv2d_s8_prepacked(cp, ip, pp, qp, op, wp);                              \
        CHECK(rc1 == TS_EINVAL && rc2 == TS_EINVAL, "conv %s: rc %d %d", #mutation, rc1, rc2); \
        CHECK(all_bytes(out, sizeof out, 0x5A), "conv %s: output written", #mutation);        \
    } while (0)
    CASE(cp = NULL);
    CASE(c.stride_h = 0);
    CASE(c.stride_w = 0);
    CASE(c.dilation_h = 0);
    CASE(c.in_c = 0);
    CASE(c.out_c = 0);
    CASE(c.batch = 0);
    CASE(c.k_w = 0);
    CASE((c.k_h = 9, c.pad_top = c.pad_bottom = 1));          /* kernel taller than padded input */
    CASE((c.dilation_w = 4, c.pad_left = c.pad_right = 0));   /* dilated span 9 > 6 */
    CASE(ip = NULL);
    CASE(op = NULL);
    CASE(wp = NULL);
    CASE((fp = NULL, pp = NULL));
    CASE(q.a_zero_point = 128);
    CASE((q.act_min = 100, q.act_max = 50));
    CASE(q.act_max = -129);
    CASE(cs[1] = 31);
    CASE(qp = NULL);
    CASE((c.in_c = 2, fp = NULL));                           /* handle K != conv K */
    CASE((c.out_c = 3, fp = NULL));                          /* handle N != conv N */
    /* the same K = 27 and out_c from another window: 1x1 over 27 channels, 3x1 over 9 */
    CASE((c.batch = 1, c.in_h = c.in_w = 2, c.in_c = 27, c.k_h = c.k_w = 1,
          c.pad_top = c.pad_left = c.pad_bottom = c.pad_right = 0, fp = NULL));
    CASE((c.in_c = 9, c.k_w = 1, fp = NULL));
    CASE((pp = other, fp = NULL));                           /* handle of the f32 GEMM */
    CASE(c.out_c = (size_t)1 << 62);                         /* packed filter overflows size_t */
    /* output M x out_c = 2^32 x 2^33 bytes overflows size_t (filter, input, workspace do not) */
    CASE((c.batch = 1, c.in_h = c.in_w = (size_t)1 << 16, c.in_c = 1, c.k_h = c.k_w = 1,
          c.pad_top = c.pad_left = c.pad_bottom = c.pad_right = 0, c.out_c = (size_t)1 << 33));
#undef CASE
    cs[1] = 0;
    c = c0;
    c.stride_h = 0;
    CHECK(ts_conv2d_s8_workspace_size(&c) == 0 && ts_conv2d_s8_workspace_size(NULL) == 0,
          "workspace size of an invalid conv");
    ts_packed_b *keep = (ts_packed_b *)ws;
    CHECK(ts_pack_conv2d_filter_s8(&c, f, &keep) == TS_EINVAL && keep == (ts_packed_b *)ws, "pack bad conv");
    c = c0;
    c.pad_top = SIZE_MAX - 3;                   /* in_h + padding wraps: named as an overflow */
    CHECK(ts_pack_conv2d_filter_s8(&c, f, &keep) == TS_EINVAL && keep == (ts_packed_b *)ws
          && strstr(ts_last_error(), "overflow") != NULL, "padding overflow: %s", ts_last_error());
    CHECK(ts_pack_conv2d_filter_s8(&c0, NULL, &keep) == TS_EINVAL, "pack NULL filter");
    q = q0;
    c = c0;
    c.in_c = 9;
    c.k_w = 1;
    expect_reason(ts_conv2d_s8_prepacked(&c, in, pf, &q, out, ws), "k_h or k_w differs",
                  "conv filter of another window");
    c = c0;
    c.in_c = 2;
    expect_reason(ts_conv2d_s8_prepacked(&c, in, pf, &q, out, ws), "in_c differs",
                  "conv filter of another in_c");
    CHECK(ts_conv2d_s8(&c0, in, f, &q, out, ws) == TS_OK, "valid conv");
    CHECK(ts_conv2d_s8_prepacked(&c0, in, pf, &q, out, ws) == TS_OK, "valid prepacked conv");
    ts_packed_free(pf);
    ts_packed_free(other);
}

/* ---- aliasing ------------------------------------------------------------------------------
 * One case = an entry point with one input ("in", in_len bytes) and one output ("out",
 * out_len bytes) placed in a shared pool; every other buffer is separate. Placements: in at
 * out (exact), in starting in out's last 4 bytes (partial), in ending where out starts
 * (before), in starting where out ends, rounded up to in's alignment (after). The first two
 * must be TS_EINVAL with the pool untouched; the last two must return TS_OK, leave in and
 * everything outside out untouched, and write into out what the same call writes into a
 * separate buffer with a separate copy of in (all of out is compared, gaps included). */
typedef struct {
    const char *name;
    size_t in_len, out_len, in_align;
    int (*call)(const unsigned char *in, unsigned char *out);
    void (*fill)(unsigned char *in);   /* valid contents of in (NULL: the pool pattern) */
    int in_written;                    /* in is a second output (a workspace): skip its checks */
} alias_case;

enum place { EXACT, PARTIAL, BEFORE, AFTER };
static const char *place_name[] = { "exact", "partial", "adjacent before", "adjacent after" };

#define POOL (1 << 18)
#define OUT_OFF (1 << 16)
/* 16-byte aligned (long double), so scratch alignment matches between pool and reference */
static union { unsigned char b[POOL]; long double align; } pool, snapshot, in_copy, out_ref;

static size_t place_in(enum place where, const alias_case *a)
{
    switch (where) {
    case EXACT: return OUT_OFF;
    case PARTIAL: return OUT_OFF + ((a->out_len - 1) & ~(size_t)3);
    case BEFORE: return OUT_OFF - a->in_len;
    case AFTER: return OUT_OFF + (a->out_len + a->in_align - 1) / a->in_align * a->in_align;
    }
    return 0;
}

static void fill_pattern(unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n / 4; ++i) {   /* small floats; as int8 / int32 data just as good */
        float v = (float)((int)(i % 7) - 3);
        memcpy(p + 4 * i, &v, 4);
    }
}

static void alias_check(const alias_case *a)
{
    for (enum place where = EXACT; where <= AFTER; ++where) {
        const size_t in_off = place_in(where, a);
        CHECK(in_off + a->in_len <= POOL && OUT_OFF + a->out_len <= POOL, "%s: pool too small", a->name);
        fill_pattern(pool.b, POOL);
        if (a->fill)
            a->fill(pool.b + in_off);
        memcpy(snapshot.b, pool.b, POOL);
        int rc = a->call(pool.b + in_off, pool.b + OUT_OFF);
        if (where <= PARTIAL) {
            CHECK(rc == TS_EINVAL, "%s %s: rc %d", a->name, place_name[where], rc);
            CHECK(memcmp(pool.b, snapshot.b, POOL) == 0, "%s %s: written", a->name, place_name[where]);
            continue;
        }
        CHECK(rc == TS_OK, "%s %s: rc %d", a->name, place_name[where], rc);
        CHECK(a->in_written
              || (memcmp(pool.b, snapshot.b, OUT_OFF) == 0
                  && memcmp(pool.b + OUT_OFF + a->out_len, snapshot.b + OUT_OFF + a->out_len,
                            POOL - OUT_OFF - a->out_len) == 0),
              "%s %s: wrote outside the output", a->name, place_name[where]);
        if (a->in_written)
            continue;
        memcpy(in_copy.b, snapshot.b + in_off, a->in_len);
        memcpy(out_ref.b + OUT_OFF, snapshot.b + OUT_OFF, a->out_len);
        CHECK(a->call(in_copy.b, out_ref.b + OUT_OFF) == TS_OK, "%s reference", a->name);
        CHECK(memcmp(pool.b + OUT_OFF, out_ref.b + OUT_OFF, a->out_len) == 0,
              "%s %s: output differs from separate buffers", a->name, place_name[where]);
    }
}

/* GEMM cases: kind, and a handle of it in hmem (the pool copy of a handle is rebased). */
static enum kind a_kind;
static ts_quant a_q;
static int32_t a_mult[N0], a_shift[N0];
static ts_packed_b a_handle;   /* K0 x N0 handle, memory at a_handle_mem */
static union { unsigned char b[1 << 12]; long double align; } a_handle_mem;

static const void *A_of(enum kind k) { return k == F32 || k == BF16 ? (const void *)Af : (const void *)A8; }
static const void *B_of(enum kind k) { return k == F32 || k == BF16 ? (const void *)Bf : (const void *)B8; }
static size_t in_elem(enum kind k) { return k == F32 || k == BF16 ? 4 : 1; }
static size_t c_elem(enum kind k) { return k == S8 || k == U8 ? 1 : 4; }
static int gemm_type_of(enum kind k)
{
    return k == F32 ? TS_GEMM_F32 : k == BF16 ? TS_GEMM_BF16 : k == U8U32 ? TS_GEMM_U8U32
         : k == U8S8S32 || k == U8 ? TS_GEMM_U8S8 : TS_GEMM_INT8;
}

static int plain(const void *A, const void *B, const ts_quant *q, void *C)
{
    gemm_args g = { a_kind, M0, N0, K0, K0, N0, N0, A, B, C, q };
    return call_gemm(&g);
}

static int prepacked(const void *A, const ts_packed_b *h, const ts_quant *q, void *C)
{
    switch (a_kind) {
    case F32: return ts_gemm_f32_prepacked(M0, A, K0, h, C, N0);
    case BF16: return ts_gemm_bf16_prepacked(M0, A, K0, h, C, N0);
    case S8S32: return ts_gemm_s8s32_prepacked(M0, A, K0, h, C, N0);
    case S8: return ts_gemm_s8_prepacked(M0, A, K0, h, q, C, N0);
    case U8S8S32: return ts_gemm_u8s8s32_prepacked(M0, A, K0, h, C, N0);
    case U8U32: return ts_gemm_u8u32_prepacked(M0, A, K0, h, C, N0);
    case U8: return ts_gemm_u8_prepacked(M0, A, K0, h, q, C, N0);
    }
    return 99;
}

/* a_handle with its memory moved to `mem` (same bytes) */
static ts_packed_b rebased(const unsigned char *mem)
{
    ts_packed_b h = a_handle;
    h.data = (unsigned char *)mem + ((unsigned char *)a_handle.data - a_handle_mem.b);
    if (h.col_sums != NULL)
        h.col_sums = (int32_t *)(mem + ((unsigned char *)a_handle.col_sums - a_handle_mem.b));
    return h;
}

static const ts_quant *q_of_kind(void) { return a_kind == S8 || a_kind == U8 ? &a_q : NULL; }
static int gemm_in_A(const unsigned char *in, unsigned char *out) { return plain(in, B_of(a_kind), q_of_kind(), out); }
static int gemm_in_B(const unsigned char *in, unsigned char *out) { return plain(A_of(a_kind), in, q_of_kind(), out); }
static int pre_in_A(const unsigned char *in, unsigned char *out) { return prepacked(in, &a_handle, q_of_kind(), out); }
static int pre_in_handle(const unsigned char *in, unsigned char *out)
{
    ts_packed_b h = rebased(in);
    return prepacked(A_of(a_kind), &h, q_of_kind(), out);
}
/* in = the per-channel multipliers of q */
static void fill_mult(unsigned char *in)
{
    for (int n = 0; n < N0; ++n) { int32_t m = (1 << 30) - n; memcpy(in + 4 * n, &m, 4); }
}
static ts_quant q_with_mult(const unsigned char *in) { ts_quant q = a_q; q.multiplier = (const int32_t *)(const void *)in; return q; }
static int gemm_in_mult(const unsigned char *in, unsigned char *out) { ts_quant q = q_with_mult(in); return plain(A8, B8, &q, out); }
static int pre_in_mult(const unsigned char *in, unsigned char *out) { ts_quant q = q_with_mult(in); return prepacked(A8, &a_handle, &q, out); }
static size_t a_handle_bytes;
static void fill_handle(unsigned char *in) { memcpy(in, a_handle_mem.b, a_handle_bytes); }

static void gemm_alias_errors(enum kind kind)
{
    a_kind = kind;
    for (int n = 0; n < N0; ++n) { a_mult[n] = 1 << 30; a_shift[n] = -2; }
    ts_quant q = { 3, -5, bias, a_mult, a_shift, 1, -128, 127, TS_ROUND_DOUBLE };
    if (kind == U8)
        q = (ts_quant){ 131, 123, bias, a_mult, a_shift, 1, 0, 255, TS_ROUND_DOUBLE };
    a_q = q;
    for (int i = 0; i < M0 * K0; ++i) { Af[i] = (float)(i % 5) - 2.0f; A8[i] = (int8_t)(i * 7 - 60); }
    for (int i = 0; i < K0 * N0; ++i) { Bf[i] = (float)(i % 3) - 1.0f; B8[i] = (int8_t)(i * 5 - 90); }
    const ts_path *path = ts_select_path(gemm_type_of(kind));
    size_t h_bytes = 0;
    CHECK(ts_packed_b_bytes(path, TS_LAYOUTS_ALL, K0, N0, &h_bytes) == 0 && h_bytes <= sizeof a_handle_mem.b,
          "handle bytes %zu", h_bytes);
    ts_packed_b_init(&a_handle, path, TS_LAYOUTS_ALL, K0, N0, B_of(kind), N0, 1, 0, a_handle_mem.b);
    a_handle_bytes = h_bytes;

    const size_t a_len = M0 * K0 * in_elem(kind), b_len = K0 * N0 * in_elem(kind);
    const size_t c_len = M0 * N0 * c_elem(kind), al = in_elem(kind);
    char names[6][64];
    const char *what[6] = { "A", "B", "multiplier", "prepacked A", "prepacked handle", "prepacked multiplier" };
    for (int i = 0; i < 6; ++i)
        snprintf(names[i], sizeof names[i], "%s C vs %s", kind_name[kind], what[i]);
    alias_case cases[6] = {
        { names[0], a_len, c_len, al, gemm_in_A, NULL, 0 },
        { names[1], b_len, c_len, al, gemm_in_B, NULL, 0 },
        { names[2], N0 * 4, c_len, 4, gemm_in_mult, fill_mult, 0 },
        { names[3], a_len, c_len, al, pre_in_A, NULL, 0 },
        { names[4], h_bytes, c_len, 16, pre_in_handle, fill_handle, 0 },
        { names[5], N0 * 4, c_len, 4, pre_in_mult, fill_mult, 0 },
    };
    for (int i = 0; i < 6; ++i)
        if (kind == S8 || kind == U8 || (i != 2 && i != 5))
            alias_check(&cases[i]);
}

/* requantize: C (M0 x N0 int8) vs acc (M0 x N0 int32) */
static int32_t acc_fixed[M0 * N0];
static int rq_in_acc(const unsigned char *in, unsigned char *out)
{
    return ts_requantize(M0, N0, (const int32_t *)(const void *)in, N0, &a_q, (int8_t *)out, N0);
}
static int rq_in_mult(const unsigned char *in, unsigned char *out)
{
    ts_quant q = q_with_mult(in);
    return ts_requantize(M0, N0, acc_fixed, N0, &q, (int8_t *)out, N0);
}

/* conv2d: c0 of conv_errors; output, workspace and the filter handle separate unless tested */
static const ts_conv2d conv0 = { 2, 6, 6, 3, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1 };
#define CONV_IN (2 * 6 * 6 * 3)
#define CONV_F (4 * 3 * 3 * 3)
#define CONV_OUT (2 * 6 * 6 * 4)
static int8_t cv_in[CONV_IN], cv_f[CONV_F], cv_out[CONV_OUT];
static union { unsigned char b[1 << 16]; long double align; } cv_ws;
static ts_packed_b *cv_handle;
static int32_t cv_mult[4] = { 1 << 30, 1 << 30, 1 << 30, 1 << 30 }, cv_shift[4];
static const ts_quant cv_q = { 1, -2, NULL, cv_mult, cv_shift, 1, -128, 127, TS_ROUND_DOUBLE };

/* which: 0 conv2d_s8, 1 conv2d_s8_prepacked */
static int conv_call(int which, const int8_t *input, const int8_t *filter, int8_t *output, void *ws)
{
    return which == 0 ? ts_conv2d_s8(&conv0, input, filter, &cv_q, output, ws)
                      : ts_conv2d_s8_prepacked(&conv0, input, cv_handle, &cv_q, output, ws);
}
static int cv_out_in(const unsigned char *in, unsigned char *out) { return conv_call(0, (const int8_t *)in, cv_f, (int8_t *)out, cv_ws.b); }
static int cv_out_filter(const unsigned char *in, unsigned char *out) { return conv_call(0, cv_in, (const int8_t *)in, (int8_t *)out, cv_ws.b); }
static int cv_ws_in(const unsigned char *in, unsigned char *out) { return conv_call(0, (const int8_t *)in, cv_f, cv_out, out); }
static int cv_ws_filter(const unsigned char *in, unsigned char *out) { return conv_call(0, cv_in, (const int8_t *)in, cv_out, out); }
static int cv_out_ws(const unsigned char *in, unsigned char *out) { return conv_call(0, cv_in, cv_f, (int8_t *)out, (void *)in); }
static int pcv_out_in(const unsigned char *in, unsigned char *out) { return conv_call(1, (const int8_t *)in, NULL, (int8_t *)out, cv_ws.b); }
static int pcv_ws_in(const unsigned char *in, unsigned char *out) { return conv_call(1, (const int8_t *)in, NULL, cv_out, out); }
static int pcv_out_ws(const unsigned char *in, unsigned char *out) { return conv_call(1, cv_in, NULL, (int8_t *)out, (void *)in); }
static int im2col_in(const unsigned char *in, unsigned char *out) { return ts_im2col_s8(&conv0, (const int8_t *)in, 7, (int8_t *)out); }
static int uzp_in(const unsigned char *in, unsigned char *out)
{
    return ts_uzp_mmla_s32((const int32_t *)(const void *)in, 4, 6, (int32_t *)(void *)out, 6);
}

static void other_alias_errors(void)
{
    for (int i = 0; i < M0 * N0; ++i) acc_fixed[i] = i * 1000 - 7000;
    for (int i = 0; i < CONV_IN; ++i) cv_in[i] = (int8_t)(i * 3 - 100);
    for (int i = 0; i < CONV_F; ++i) cv_f[i] = (int8_t)(i * 11 - 50);
    CHECK(ts_pack_conv2d_filter_s8(&conv0, cv_f, &cv_handle) == TS_OK, "alias: pack filter");
    const size_t ws = ts_conv2d_s8_workspace_size(&conv0), rows = 2 * 6 * 6, row_len = 27;
    const size_t wsp = ts_conv2d_s8_prepacked_workspace_size(&conv0);   /* _prepacked's */
    CHECK(ws != 0 && ws <= sizeof cv_ws.b && wsp != 0 && wsp < ws, "alias: workspace %zu %zu",
          ws, wsp);
    alias_case cases[] = {
        { "requantize C vs acc", M0 * N0 * 4, M0 * N0, 4, rq_in_acc, NULL, 0 },
        { "requantize C vs multiplier", N0 * 4, M0 * N0, 4, rq_in_mult, fill_mult, 0 },
        { "conv2d output vs input", CONV_IN, CONV_OUT, 1, cv_out_in, NULL, 0 },
        { "conv2d output vs filter", CONV_F, CONV_OUT, 1, cv_out_filter, NULL, 0 },
        { "conv2d workspace vs input", CONV_IN, ws, 1, cv_ws_in, NULL, 0 },
        { "conv2d workspace vs filter", CONV_F, ws, 1, cv_ws_filter, NULL, 0 },
        { "conv2d output vs workspace", ws, CONV_OUT, 16, cv_out_ws, NULL, 1 },
        { "conv2d_prepacked output vs input", CONV_IN, CONV_OUT, 1, pcv_out_in, NULL, 0 },
        { "conv2d_prepacked workspace vs input", CONV_IN, wsp, 1, pcv_ws_in, NULL, 0 },
        { "conv2d_prepacked output vs workspace", wsp, CONV_OUT, 16, pcv_out_ws, NULL, 1 },
        { "im2col cols vs input", CONV_IN, rows * row_len, 1, im2col_in, NULL, 0 },
        { "uzp out vs tiles", 4 * 6 * 4, 4 * 6 * 4, 4, uzp_in, NULL, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
        alias_check(&cases[i]);
    /* the handle's own memory as output */
    float *C = (float *)(void *)pool.b;
    ts_packed_b *h = NULL;
    CHECK(ts_pack_b_f32(K0, N0, Bf, N0, &h) == TS_OK, "alias: pack f32");
    CHECK(ts_gemm_f32_prepacked(1, Af, K0, h, (float *)(void *)h, N0) == TS_EINVAL, "C over the handle struct");
    CHECK(ts_gemm_f32_prepacked(1, Af, K0, h, (float *)h->data, N0) == TS_EINVAL, "C over the handle panels");
    CHECK(ts_gemm_f32_prepacked(1, Af, K0, h, C, N0) == TS_OK, "handle elsewhere");
    ts_packed_free(h);
    /* the conv filter handle's memory as output / workspace */
    CHECK(ts_conv2d_s8_prepacked(&conv0, cv_in, cv_handle, &cv_q, (int8_t *)cv_handle->data, cv_ws.b)
          == TS_EINVAL, "conv output over the filter handle");
    CHECK(ts_conv2d_s8_prepacked(&conv0, cv_in, cv_handle, &cv_q, cv_out, cv_handle->col_sums)
          == TS_EINVAL, "conv workspace over the filter handle");
    ts_packed_free(cv_handle);
}

/* A handle serves only the GEMM type it was packed for: the u8 types and int8 do not share. */
static void u8_handle_errors(void)
{
    ts_packed_b *s8 = NULL, *u8s8 = NULL, *u8u32 = NULL;
    CHECK(ts_pack_b_s8(K0, N0, B8, N0, &s8) == TS_OK, "pack s8");
    CHECK(ts_pack_b_u8s8(K0, N0, B8, N0, &u8s8) == TS_OK, "pack u8s8");
    CHECK(ts_pack_b_u8u32(K0, N0, (const uint8_t *)B8, N0, &u8u32) == TS_OK, "pack u8u32");
    ts_packed_b *pb = (ts_packed_b *)&Cbuf;
    CHECK(ts_pack_b_u8s8(K0, N0, B8, N0 - 1, &pb) == TS_EINVAL && pb == (ts_packed_b *)&Cbuf,
          "pack u8s8 ldb < N");
    CHECK(ts_pack_b_u8u32(K0, N0, NULL, N0, &pb) == TS_EINVAL && pb == (ts_packed_b *)&Cbuf,
          "pack u8u32 NULL B");
    ts_quant q = quant_for(U8), qs = valid_quant();
    const uint8_t *A = (const uint8_t *)A8;
    struct { const char *what; int rc; } cases[8];
    int n = 0;
#define REJECT(call) do { memset(Cbuf, 0xA5, sizeof Cbuf); cases[n].what = #call; cases[n++].rc = (call); \
        CHECK(cases[n - 1].rc == TS_EINVAL && all_bytes(Cbuf, sizeof Cbuf, 0xA5), "%s: rc %d", #call, \
              cases[n - 1].rc); } while (0)
    REJECT(ts_gemm_s8s32_prepacked(M0, A8, K0, u8s8, (int32_t *)Cbuf, N0));
    REJECT(ts_gemm_s8_prepacked(M0, A8, K0, u8s8, &qs, (int8_t *)Cbuf, N0));
    REJECT(ts_gemm_u8s8s32_prepacked(M0, A, K0, s8, (int32_t *)Cbuf, N0));
    REJECT(ts_gemm_u8_prepacked(M0, A, K0, s8, &q, (uint8_t *)Cbuf, N0));
    REJECT(ts_gemm_u8_prepacked(M0, A, K0, u8u32, &q, (uint8_t *)Cbuf, N0));
    REJECT(ts_gemm_u8u32_prepacked(M0, A, K0, u8s8, (uint32_t *)Cbuf, N0));
    REJECT(ts_gemm_u8_prepacked(M0, A, K0, u8s8, &qs, (uint8_t *)Cbuf, N0));   /* int8 ranges */
    REJECT(ts_gemm_u8_prepacked(M0, A, K0, u8s8, NULL, (uint8_t *)Cbuf, N0));
#undef REJECT
    CHECK(ts_gemm_u8_prepacked(M0, A, K0, u8s8, &q, (uint8_t *)Cbuf, N0) == TS_OK, "u8 prepacked");
    CHECK(ts_gemm_u8s8s32_prepacked(M0, A, K0, u8s8, (int32_t *)Cbuf, N0) == TS_OK,
          "u8s8s32 prepacked");
    CHECK(ts_gemm_u8u32_prepacked(M0, A, K0, u8u32, (uint32_t *)Cbuf, N0) == TS_OK,
          "u8u32 prepacked");
    ts_packed_free(s8);
    ts_packed_free(u8s8);
    ts_packed_free(u8u32);
}

/* A u8s8 handle packed for one path (usmmla lp 8, sdot lp 4 with A's bit 7 flipped, smlal
 * int16) on another: TS_EINVAL, C untouched, for every pair of the feature masks that move
 * dispatch between them on this CPU (on max: all three paths, 6 pairs); OK on its own. */
static void u8s8_layout_errors(void)
{
    static const unsigned masks[] = { ~0u, TS_FEAT_DOTPROD, 0u };
    const uint8_t *A = (const uint8_t *)A8;
    ts_quant q = quant_for(U8);
    int rejected = 0;
    for (size_t p = 0; p < 3; ++p) {
        ts_set_feature_mask(masks[p]);
        ts_packed_b *h = NULL;
        CHECK(ts_pack_b_u8s8(K0, N0, B8, N0, &h) == TS_OK, "pack u8s8 mask %#x", masks[p]);
        for (size_t r = 0; r < 3 && h != NULL; ++r) {
            ts_set_feature_mask(masks[r]);
            const int other = strcmp(ts_gemm_kernel(TS_GEMM_U8S8), ts_packed_kernel(h)) != 0;
            const int want = other ? TS_EINVAL : TS_OK;
            memset(Cbuf, 0xA5, sizeof Cbuf);
            int rc = ts_gemm_u8s8s32_prepacked(M0, A, K0, h, (int32_t *)Cbuf, N0);
            CHECK(rc == want && (!other || all_bytes(Cbuf, sizeof Cbuf, 0xA5)),
                  "u8s8s32 packed for %s run on %s: rc %d", ts_packed_kernel(h),
                  ts_gemm_kernel(TS_GEMM_U8S8), rc);
            memset(Cbuf, 0xA5, sizeof Cbuf);
            rc = ts_gemm_u8_prepacked(M0, A, K0, h, &q, (uint8_t *)Cbuf, N0);
            CHECK(rc == want && (!other || all_bytes(Cbuf, sizeof Cbuf, 0xA5)),
                  "u8 packed for %s run on %s: rc %d", ts_packed_kernel(h),
                  ts_gemm_kernel(TS_GEMM_U8S8), rc);
            rejected += other;
        }
        ts_packed_free(h);
    }
    ts_set_feature_mask(~0u);
    printf("u8s8 layout rejections %d\n", rejected);
}

/* The fp16 GEMMs (2-byte A, B and, for f16, C): bad arguments, 2-byte stride overflow,
 * aliasing, handles of another type or of a kernel dispatch no longer picks: TS_EINVAL with
 * nothing written; valid calls TS_OK. */
static void f16_errors(void)
{
    static uint16_t A[M0 * K0], B[K0 * N0];
    for (size_t i = 0; i < M0 * K0; ++i) A[i] = 0x3C00u;          /* 1.0 */
    for (size_t i = 0; i < K0 * N0; ++i) B[i] = 0xBC00u;          /* -1.0 */
    uint16_t *C16 = (uint16_t *)(void *)Cbuf;
    float *C32 = (float *)(void *)Cbuf;
    int n = 0;
#define F16_REJECT(call) do { memset(Cbuf, 0xA5, sizeof Cbuf); int rc_ = (call); ++n; \
        CHECK(rc_ == TS_EINVAL && all_bytes(Cbuf, sizeof Cbuf, 0xA5), "%s: rc %d", #call, rc_); } while (0)
    F16_REJECT(ts_gemm_f16(M0, N0, K0, NULL, K0, B, N0, C16, N0));
    F16_REJECT(ts_gemm_f16(M0, N0, K0, A, K0, NULL, N0, C16, N0));
    F16_REJECT(ts_gemm_f16(M0, N0, K0, A, K0 - 1, B, N0, C16, N0));
    F16_REJECT(ts_gemm_f16(M0, N0, K0, A, K0, B, N0 - 1, C16, N0));
    F16_REJECT(ts_gemm_f16(M0, N0, K0, A, K0, B, N0, C16, N0 - 1));
    F16_REJECT(ts_gemm_f16(2, N0, K0, A, K0, B, N0, C16, SIZE_MAX / 2 - 1));   /* span wraps */
    F16_REJECT(ts_gemm_f16f32(2, N0, K0, A, SIZE_MAX / 2 - 1, B, N0, C32, N0));
    F16_REJECT(ts_gemm_f16f32(M0, N0, K0, A, K0, B, N0, C32, N0 - 1));
    F16_REJECT(ts_gemm_f16f32(M0, N0, K0, A, K0, B, N0, NULL, N0));
    /* aliasing, in a scratch array X: C over A or B (by one element), or touching A */
    uint16_t X[16];
    float Y[8];
    for (size_t i = 0; i < 16; ++i) X[i] = 0x3C00u;
    CHECK(ts_gemm_f16(1, 2, 2, X, 2, X + 4, 2, X + 5, 2) == TS_EINVAL, "f16 C over B by one");
    CHECK(ts_gemm_f16(1, 2, 2, X, 2, X + 4, 2, X + 1, 2) == TS_EINVAL, "f16 C over A");
    CHECK(ts_gemm_f16f32(1, 2, 2, X, 2, X + 4, 2, (float *)(void *)(X + 6), 2) == TS_EINVAL,
          "f16f32 C over B");
    CHECK(ts_gemm_f16f32(1, 2, 2, X, 2, X + 4, 2, Y, 2) == TS_OK && Y[0] == 2.0f, "f16f32 apart");
    CHECK(ts_gemm_f16(1, 2, 2, X, 2, X + 4, 2, X + 2, 2) == TS_OK && X[2] == 0x4000u,
          "f16 C touching A end to end");
    /* handles */
    ts_packed_b *h16 = NULL, *h1632 = NULL, *hf = NULL, *pb = (ts_packed_b *)&Cbuf;
    CHECK(ts_pack_b_f16(K0, N0, NULL, N0, &pb) == TS_EINVAL && pb == (ts_packed_b *)&Cbuf,
          "pack f16 NULL B");
    CHECK(ts_pack_b_f16f32(K0, N0, B, N0 - 1, &pb) == TS_EINVAL && pb == (ts_packed_b *)&Cbuf,
          "pack f16f32 ldb < N");
    CHECK(ts_pack_b_f16(K0, N0, B, N0, &h16) == TS_OK, "pack f16");
    CHECK(ts_pack_b_f16f32(K0, N0, B, N0, &h1632) == TS_OK, "pack f16f32");
    CHECK(ts_pack_b_f32(K0, N0, Bf, N0, &hf) == TS_OK, "pack f32");
    F16_REJECT(ts_gemm_f16_prepacked(M0, A, K0, h1632, C16, N0));
    F16_REJECT(ts_gemm_f16f32_prepacked(M0, A, K0, h16, C32, N0));
    F16_REJECT(ts_gemm_f16_prepacked(M0, A, K0, hf, C16, N0));
    F16_REJECT(ts_gemm_f32_prepacked(M0, Af, K0, h16, C32, N0));
    F16_REJECT(ts_gemm_f16_prepacked(M0, A, K0, NULL, C16, N0));
    CHECK(ts_gemm_f16_prepacked(M0, A, K0, h16, C16, N0) == TS_OK, "f16 prepacked");
    for (size_t i = 0; i < M0 * N0; ++i)
        CHECK(C16[i] == 0xC700u, "f16 prepacked C[%zu] = %04x, want -7 (c700)", i, C16[i]);
    CHECK(ts_gemm_f16f32_prepacked(M0, A, K0, h1632, C32, N0) == TS_OK, "f16f32 prepacked");
    for (size_t i = 0; i < M0 * N0; ++i)
        CHECK(C32[i] == -7.0f, "f16f32 prepacked C[%zu] = %g", i, C32[i]);
    /* a mask that moves dispatch to the fallback: the fp16-path handles no longer fit */
    ts_set_feature_mask(0);
    int moved = strcmp(ts_gemm_kernel(TS_GEMM_F16), ts_packed_kernel(h16)) != 0;
    if (moved)
        F16_REJECT(ts_gemm_f16_prepacked(M0, A, K0, h16, C16, N0));
    if (strcmp(ts_gemm_kernel(TS_GEMM_F16F32), ts_packed_kernel(h1632)) != 0)
        F16_REJECT(ts_gemm_f16f32_prepacked(M0, A, K0, h1632, C32, N0));
    ts_set_feature_mask(~0u);
    CHECK(ts_gemm_f16_prepacked(M0, A, K0, h16, C16, N0) == TS_OK, "f16 prepacked after unmask");
#undef F16_REJECT
    printf("f16 rejections %d (mask moved f16: %d)\n", n, moved);
    ts_packed_free(h16);
    ts_packed_free(h1632);
    ts_packed_free(hf);
}

/* ts_strided_overlap against marking the bytes: every pair of small matrices (rows 1..3, widths
 * up to the stride, equal and unequal strides) at every offset -40..40 of each other. Exact for
 * equal strides; otherwise never "apart" when a byte is shared. */
static void strided_overlap_exhaustive(void)
{
    static unsigned char mem[256];
    int checked = 0;
    for (size_t sx = 1; sx <= 6; ++sx)
        for (size_t sy = 1; sy <= 6; ++sy)
            for (size_t wx = 1; wx <= sx; ++wx)
                for (size_t wy = 1; wy <= sy; ++wy)
                    for (size_t rx = 1; rx <= 3; ++rx)
                        for (size_t ry = 1; ry <= 3; ++ry)
                            for (int d = -40; d <= 40; ++d) {
                                const ts_strided x = { mem + 100, rx, wx, sx };
                                const ts_strided y = { mem + 100 + d, ry, wy, sy };
                                unsigned char mark[256] = { 0 };
                                int shared = 0;
                                for (size_t i = 0; i < rx; ++i)
                                    for (size_t b = 0; b < wx; ++b)
                                        mark[100 + i * sx + b] = 1;
                                for (size_t j = 0; j < ry; ++j)
                                    for (size_t b = 0; b < wy; ++b)
                                        shared |= mark[(size_t)(100 + d) + j * sy + b];
                                const int got = ts_strided_overlap(&x, &y);
                                CHECK(sx == sy ? got == shared : got >= shared,
                                      "strided overlap s %zu/%zu w %zu/%zu r %zu/%zu d %d: %d, bytes say %d",
                                      sx, sy, wx, wy, rx, ry, d, got, shared);
                                ++checked;
                            }
    CHECK(checked > 100000, "strided overlap: %d cases", checked);
}

/* An output written between the rows of its input (an in-place concatenation: A = buf[:, 0:K],
 * C = buf[:, K:K+N], the same stride): no byte is shared, so the call runs and gives the bits of
 * the same call on separate buffers, leaving A and the columns past C as they were. C one
 * element further left (its first column on A's last) is TS_EINVAL with nothing written. */
#define IC_M 9
#define IC_K 13
#define IC_N 11
#define IC_LD (IC_K + IC_N + 3)
static void interleaved_outputs(void)
{
    static float fbuf[IC_M * IC_LD], fsnap[IC_M * IC_LD], fA[IC_M * IC_K], fB[IC_K * IC_N],
        fC[IC_M * IC_N];
    static int8_t bbuf[IC_M * IC_LD], bsnap[IC_M * IC_LD], bA[IC_M * IC_K], bB[IC_K * IC_N],
        bC[IC_M * IC_N];
    static int8_t wq[IC_N * IC_K];
    static float wscale[IC_N], qbuf[IC_M * IC_LD], qsnap[IC_M * IC_LD], qC[IC_M * IC_N];
    int32_t mu = 1 << 30, sh = -3;
    const ts_quant q = { 3, -5, NULL, &mu, &sh, 0, -128, 127, TS_ROUND_DOUBLE };
    for (int i = 0; i < IC_M * IC_LD; ++i) {
        fbuf[i] = -77.0f;
        bbuf[i] = (int8_t)-77;
    }
    for (int m = 0; m < IC_M; ++m)
        for (int k = 0; k < IC_K; ++k) {
            fA[m * IC_K + k] = fbuf[m * IC_LD + k] = (float)((m * 7 + k * 3) % 11) - 5.0f;
            bA[m * IC_K + k] = bbuf[m * IC_LD + k] = (int8_t)((m * 37 + k * 11) % 200 - 100);
        }
    for (int i = 0; i < IC_K * IC_N; ++i) {
        fB[i] = (float)(i % 7) - 3.0f;
        bB[i] = (int8_t)(i * 13 % 150 - 75);
        wq[i] = (int8_t)(i * 29 % 200 - 100);
    }
    for (int n = 0; n < IC_N; ++n)
        wscale[n] = 0.01f * (float)(n + 1);
    memcpy(qbuf, fbuf, sizeof qbuf);
    memcpy(fsnap, fbuf, sizeof fsnap);
    memcpy(bsnap, bbuf, sizeof bsnap);
    memcpy(qsnap, qbuf, sizeof qsnap);

    /* one element too far left: C's first column is A's last */
    CHECK(ts_gemm_f32(IC_M, IC_N, IC_K, fbuf, IC_LD, fB, IC_N, fbuf + IC_K - 1, IC_LD) == TS_EINVAL
          && strstr(ts_last_error(), "C overlaps A") != NULL
          && memcmp(fbuf, fsnap, sizeof fbuf) == 0, "interleaved f32: C on A's last column accepted");
    CHECK(ts_gemm_s8(IC_M, IC_N, IC_K, bbuf, IC_LD, bB, IC_N, &q, bbuf + IC_K - 1, IC_LD) == TS_EINVAL
          && memcmp(bbuf, bsnap, sizeof bbuf) == 0, "interleaved s8: C on A's last column accepted");

    /* C right after A in each row */
    CHECK(ts_gemm_f32(IC_M, IC_N, IC_K, fA, IC_K, fB, IC_N, fC, IC_N) == TS_OK
          && ts_gemm_f32(IC_M, IC_N, IC_K, fbuf, IC_LD, fB, IC_N, fbuf + IC_K, IC_LD) == TS_OK,
          "interleaved f32: %s", ts_last_error());
    CHECK(ts_gemm_s8(IC_M, IC_N, IC_K, bA, IC_K, bB, IC_N, &q, bC, IC_N) == TS_OK
          && ts_gemm_s8(IC_M, IC_N, IC_K, bbuf, IC_LD, bB, IC_N, &q, bbuf + IC_K, IC_LD) == TS_OK,
          "interleaved s8: %s", ts_last_error());
    ts_packed_b *w = NULL;
    CHECK(ts_pack_b_qs8(IC_N, IC_K, wq, IC_K, wscale, &w) == TS_OK
          && ts_gemm_qdyn_f32(NULL, IC_M, fA, IC_K, w, NULL, -INFINITY, INFINITY, qC, IC_N) == TS_OK
          && ts_gemm_qdyn_f32(NULL, IC_M, qbuf, IC_LD, w, NULL, -INFINITY, INFINITY, qbuf + IC_K,
                              IC_LD) == TS_OK, "interleaved qdyn: %s", ts_last_error());
    ts_packed_free(w);
    for (int m = 0; m < IC_M; ++m)
        for (int j = 0; j < IC_LD; ++j) {
            const int i = m * IC_LD + j, in_c = j >= IC_K && j < IC_K + IC_N;
            const float fwant = in_c ? fC[m * IC_N + j - IC_K] : fsnap[i];
            const float qwant = in_c ? qC[m * IC_N + j - IC_K] : qsnap[i];
            const int8_t bwant = in_c ? bC[m * IC_N + j - IC_K] : bsnap[i];
            CHECK(memcmp(&fbuf[i], &fwant, sizeof fwant) == 0, "interleaved f32 (%d,%d): %g, want %g",
                  m, j, (double)fbuf[i], (double)fwant);
            CHECK(bbuf[i] == bwant, "interleaved s8 (%d,%d): %d, want %d", m, j, bbuf[i], bwant);
            CHECK(memcmp(&qbuf[i], &qwant, sizeof qwant) == 0, "interleaved qdyn (%d,%d): %g, want %g",
                  m, j, (double)qbuf[i], (double)qwant);
        }
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    f16_errors();
    for (enum kind kind = F32; kind <= U8; ++kind)
        gemm_errors(kind);
    k_zero_results();
    prepacked_errors();
    u8_handle_errors();
    u8s8_layout_errors();
    conv_errors();
    error_reasons();
    handle_type_errors();
    workspace_holds_q();
    for (enum kind kind = F32; kind <= U8; ++kind)
        gemm_alias_errors(kind);
    gemm_alias_errors(S8);   /* other_alias_errors uses the int8 a_q and the int8 data */
    other_alias_errors();
    strided_overlap_exhaustive();
    interleaved_outputs();
    printf("failures %d\n", failures);
    return failures != 0;
}
