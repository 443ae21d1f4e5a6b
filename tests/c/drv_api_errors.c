/* Argument-error harness: every entry point with bad arguments returns TS_EINVAL (or TS_ENOMEM
 * for sizes no allocation can hold) and leaves its output untouched; the valid corner cases
 * (M, N or K = 0, NULL buffers of no element) return TS_OK with the right contents.
 *   drv_api_errors        last line "failures <n>"; exit status 1 on any failure. */
#include "drv_api_common.h"   /* first: sets _DEFAULT_SOURCE */

#include <stdint.h>

enum kind { F32, BF16, S8S32, S8 };
static const char *kind_name[] = { "f32", "bf16", "s8s32", "s8" };

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

static gemm_args valid_gemm(enum kind kind, const ts_quant *q)
{
    int is_float = kind == F32 || kind == BF16;
    gemm_args g = { kind, M0, N0, K0, K0, N0, N0, is_float ? (const void *)Af : (const void *)A8,
                    is_float ? (const void *)Bf : (const void *)B8, Cbuf, q };
    return g;
}

/* Runs g, expects rc, and C (Cbuf) untouched unless rc is TS_OK. */
static void expect(const gemm_args *g, int rc_want, const char *what)
{
    memset(Cbuf, 0xA5, sizeof Cbuf);
    int rc = call_gemm(g);
    CHECK(rc == rc_want, "%s %s: rc %d, want %d", kind_name[g->kind], what, rc, rc_want);
    if (rc_want != TS_OK)
        CHECK(all_bytes(Cbuf, sizeof Cbuf, 0xA5), "%s %s: output written", kind_name[g->kind], what);
}

static void gemm_errors(enum kind kind)
{
    ts_quant q = valid_quant();
    gemm_args g;
#define CASE(mutation, rc) do { g = valid_gemm(kind, &q); mutation; expect(&g, rc, #mutation); q = valid_quant(); } while (0)
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
    CASE((g.M = 1, g.N = (size_t)1 << 42, g.K = 1, g.ldb = g.N, g.ldc = g.N, q.per_channel = 0),
         TS_ENOMEM);
    /* strides whose span (rows-1)*ld + cols elements is more bytes than size_t counts: the
     * byte offset of row 1 would wrap around (for fp32 / int32, 2^62+1 elements = 2^64 + 4
     * bytes, i.e. 4: row 1 would land on element 1 of row 0) */
    size_t in_bytes = kind == F32 || kind == BF16 ? 4 : 1, c_bytes = kind == S8 ? 1 : 4;
    CASE((g.M = 2, g.lda = SIZE_MAX / in_bytes - 1), TS_EINVAL);
    CASE((g.K = 2, g.ldb = SIZE_MAX / in_bytes - 1), TS_EINVAL);
    CASE((g.M = 2, g.ldc = SIZE_MAX / c_bytes - 1), TS_EINVAL);
    if (in_bytes == 4)
        CASE((g.M = 2, g.lda = ((size_t)1 << 62) + 1), TS_EINVAL);
    if (c_bytes == 4)
        CASE((g.M = 2, g.ldc = ((size_t)1 << 62) + 1), TS_EINVAL);
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
    CHECK(ts_packed_kernel(NULL) == NULL && ts_gemm_kernel(7) == NULL, "name of nothing");
    ts_packed_free(pb);
}

static void conv_errors(void)
{
    static int8_t in[2 * 6 * 6 * 3], f[4 * 3 * 3 * 3], out[2 * 6 * 6 * 4], ws[1 << 16];
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
    CHECK(ts_pack_conv2d_filter_s8(&c0, NULL, &keep) == TS_EINVAL, "pack NULL filter");
    q = q0;
    CHECK(ts_conv2d_s8(&c0, in, f, &q, out, ws) == TS_OK, "valid conv");
    CHECK(ts_conv2d_s8_prepacked(&c0, in, pf, &q, out, ws) == TS_OK, "valid prepacked conv");
    ts_packed_free(pf);
    ts_packed_free(other);
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    for (enum kind kind = F32; kind <= S8; ++kind)
        gemm_errors(kind);
    k_zero_results();
    prepacked_errors();
    conv_errors();
    printf("failures %d\n", failures);
    return failures != 0;
}
