/* Harness for the requantization driver (ts_requant.c, included so its static scalar and NEON
 * paths can be called directly). Driven by tests/test_drivers_requant.py:
 *
 *   drv_q_requant mul   stdin: count, then count x (rounding x multiplier shift)
 *                       stdout: one line per case "scalar neon no_left right" (the int32
 *                       multiply alone; NEON lanes take 4 consecutive cases, so per-lane
 *                       shifts differ; the double rounding's special forms, "na" where the
 *                       driver would not use them: no_left without the left shift step, for
 *                       shift <= 0; right the all-right-shift form, for shift < 0)
 *   drv_q_requant row   stdin: count, then count cases (see read_row_case)
 *                       stdout: per case the int8 outputs of every path (see run_row_case)
 *   drv_q_requant bad   bad arguments: EINVAL and nothing written; prints "ok <name>" lines
 *
 * Every buffer sits against a guard page (front or back, alternating). */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guarded.h"
#include "ts_requant.c"

static long long next_int(void)
{
    long long v;
    if (scanf("%lld", &v) != 1) { fprintf(stderr, "malformed input\n"); exit(3); }
    return v;
}

/* ---- mul: the int32 multiply of both rounding modes, scalar vs NEON ------------------------ */
static int run_mul(void)
{
    const size_t count = (size_t)next_int();
    guarded_region regions[4];
    int32_t *rounding = guarded_alloc(count * 4 + 16, &regions[0]);
    int32_t *x = guarded_alloc(count * 4 + 16, &regions[1]);
    int32_t *mult = guarded_alloc(count * 4 + 16, &regions[2]);
    int32_t *shift = guarded_alloc(count * 4 + 16, &regions[3]);
    for (size_t i = 0; i < count; ++i) {
        rounding[i] = (int32_t)next_int(); x[i] = (int32_t)next_int();
        mult[i] = (int32_t)next_int(); shift[i] = (int32_t)next_int();
    }
    for (size_t i = count; i < count + 4; ++i) { rounding[i] = 0; x[i] = 0; mult[i] = 0; shift[i] = 0; }
    for (size_t i = 0; i < count; i += 4) {
        const int32x4_t vx = vld1q_s32(x + i), vm = vld1q_s32(mult + i), vs = vld1q_s32(shift + i);
        int32x4_t left, right;
        double_rounding_shifts(vs, &left, &right);
        const int32x4_t total = vsubq_s32(vs, vdupq_n_s32(31));
        int32_t dbl[4], no_left[4], right_only[4], sgl[4];
        vst1q_s32(dbl, multiply_double_x4(vx, vm, left, right, 1));
        vst1q_s32(no_left, multiply_double_x4(vx, vm, left, right, 0));
        vst1q_s32(right_only, multiply_double_right_x4(vx, vm, right_shift_multiplier(vs)));
        vst1q_s32(sgl, multiply_single_x4(vx, vm, vmovl_s32(vget_low_s32(total)),
                                          vmovl_high_s32(total)));
        for (size_t l = 0; l < 4 && i + l < count; ++l) {
            const size_t k = i + l;
            const int single = rounding[k] == TS_ROUND_SINGLE;
            const int32_t scalar = single ? multiply_single_rounding(x[k], mult[k], shift[k])
                                          : multiply_double_rounding(x[k], mult[k], shift[k]);
            printf("%ld %ld ", (long)scalar, (long)(single ? sgl[l] : dbl[l]));
            if (!single && shift[k] <= 0) printf("%ld ", (long)no_left[l]);
            else printf("na ");
            if (!single && shift[k] < 0) printf("%ld\n", (long)right_only[l]);
            else printf("na\n");
        }
    }
    for (int r = 0; r < 4; ++r) guarded_free(&regions[r]);
    return 0;
}

/* ---- row: requant_row, requant_rows, scalar, NEON alone, the public requantize ----------- */
typedef struct {
    ts_quant q;
    size_t M, N, ld_acc, ldc, col0;
    int has_offset, front;
    int32_t *acc, *bias, *offset, *mult, *shift;
    guarded_region regions[5];
} row_case;

static int32_t *read_array(size_t n, int front, guarded_region *r)
{
    int32_t *a = guarded_alloc_at(n * sizeof(int32_t), !front, r);
    for (size_t i = 0; i < n; ++i) a[i] = (int32_t)next_int();
    return a;
}

/* header: rounding per_channel c_zp act_min act_max M N ld_acc ldc col0 has_bias has_offset front
 * then acc[M*ld_acc], bias[col0+N] if has_bias, offset[col0+N] if has_offset,
 * multiplier[per_channel ? col0+N : 1], shift[same] */
static void read_row_case(row_case *c)
{
    memset(c, 0, sizeof *c);
    c->q.rounding = (int)next_int(); c->q.per_channel = (int)next_int();
    c->q.c_zero_point = (int32_t)next_int();
    c->q.act_min = (int32_t)next_int(); c->q.act_max = (int32_t)next_int();
    c->M = (size_t)next_int(); c->N = (size_t)next_int();
    c->ld_acc = (size_t)next_int(); c->ldc = (size_t)next_int(); c->col0 = (size_t)next_int();
    const int has_bias = (int)next_int();
    c->has_offset = (int)next_int(); c->front = (int)next_int();
    const size_t cols = c->col0 + c->N, channels = c->q.per_channel ? cols : 1;
    c->acc = read_array(c->M * c->ld_acc, c->front, &c->regions[0]);
    if (has_bias) c->bias = read_array(cols, c->front, &c->regions[1]);
    if (c->has_offset) c->offset = read_array(cols, c->front, &c->regions[2]);
    c->mult = read_array(channels, c->front, &c->regions[3]);
    c->shift = read_array(channels, c->front, &c->regions[4]);
    c->q.bias = c->bias; c->q.multiplier = c->mult; c->q.shift = c->shift;
    c->q.a_zero_point = 0;
}

static void print_s8(const char *tag, const int8_t *v, size_t n)
{
    printf("%s", tag);
    for (size_t i = 0; i < n; ++i) printf(" %d", v[i]);
    printf("\n");
}

/* C (M rows of N, row stride ldc) against a guard page, padding bytes 0x5A. */
static int8_t *alloc_c(const row_case *c, guarded_region *region)
{
    const size_t c_bytes = c->M ? (c->M - 1) * c->ldc + c->N : 0;
    int8_t *C = guarded_alloc_at(c_bytes ? c_bytes : 1, !c->front, region);
    memset(C, 0x5A, c_bytes);
    return C;
}

/* Prints the M rows of C with `tag` and a "gaps <n>" line counting changed bytes in the
 * padding between N and ldc. */
static void print_c(const char *tag, const row_case *c, const int8_t *C)
{
    size_t gaps = 0;
    for (size_t m = 0; m < c->M; ++m) {
        print_s8(tag, C + m * c->ldc, c->N);
        for (size_t j = c->N; j < c->ldc && m + 1 < c->M; ++j) gaps += C[m * c->ldc + j] != 0x5A;
    }
    printf("gaps %zu\n", gaps);
}

/* Prints, per row m: "row", "scalar" and (N >= 8 only) "neon" lines; then "rows" lines from
 * ts_requant_rows on all M rows at once and its "gaps" line; then (only when col0 == 0 and no
 * offset) "api" lines from ts_requantize on the whole matrix and its "gaps" line. */
static void run_row_case(row_case *c)
{
    guarded_region out_region;
    int8_t *out = guarded_alloc_at(c->N ? c->N : 1, !c->front, &out_region);
    for (size_t m = 0; m < c->M; ++m) {
        const int32_t *acc = c->acc + m * c->ld_acc;
        ts_requant_row(acc, c->N, c->col0, &c->q, c->offset, out);
        print_s8("row", out, c->N);
        requant_row_scalar(acc, c->N, c->col0, &c->q, c->offset, out);
        print_s8("scalar", out, c->N);
        if (c->N >= 8) {
            requant_rows_neon(acc, 0, 1, c->N, c->col0, &c->q, c->offset, out, 0);
            print_s8("neon", out, c->N);
        }
    }
    guarded_free(&out_region);

    guarded_region rows_region;
    int8_t *R = alloc_c(c, &rows_region);
    ts_requant_rows(c->acc, c->ld_acc, c->M, c->N, c->col0, &c->q, c->offset, R, c->ldc);
    print_c("rows", c, R);
    guarded_free(&rows_region);
    if (c->col0 != 0 || c->has_offset) return;

    guarded_region c_region;
    int8_t *C = alloc_c(c, &c_region);
    const int rc = ts_requantize(c->M, c->N, c->acc, c->ld_acc, &c->q, C, c->ldc);
    printf("rc %d\n", rc);
    print_c("api", c, C);
    guarded_free(&c_region);
}

static int run_rows(void)
{
    const size_t count = (size_t)next_int();
    for (size_t i = 0; i < count; ++i) {
        row_case c;
        read_row_case(&c);
        printf("case %zu\n", i);
        run_row_case(&c);
        for (int r = 0; r < 5; ++r) guarded_free(&c.regions[r]);
    }
    return 0;
}

/* ---- bad arguments ------------------------------------------------------------------------- */
enum { BAD_M = 3, BAD_N = 5 };

typedef struct {
    int32_t acc[BAD_M * BAD_N], bias[BAD_N], mult[BAD_N], shift[BAD_N];
    ts_quant q;
} bad_setup;

static void valid_setup(bad_setup *s)
{
    for (int i = 0; i < BAD_M * BAD_N; ++i) s->acc[i] = i * 1000 - 7000;
    for (int j = 0; j < BAD_N; ++j) { s->bias[j] = j; s->mult[j] = 1 << 30; s->shift[j] = -3; }
    memset(&s->q, 0, sizeof s->q);
    s->q.a_zero_point = 0; s->q.c_zero_point = 1; s->q.bias = s->bias;
    s->q.multiplier = s->mult; s->q.shift = s->shift; s->q.per_channel = 1;
    s->q.act_min = -128; s->q.act_max = 127; s->q.rounding = TS_ROUND_DOUBLE;
}

/* Calls ts_requantize on a mutated setup; it must return EINVAL and leave C untouched. */
static int expect_einval(const char *name, const bad_setup *s, size_t M, size_t N,
                         const int32_t *acc, size_t ld_acc, const ts_quant *q, int use_null_c,
                         size_t ldc)
{
    int8_t C[BAD_M * BAD_N + 16];
    memset(C, 0x5A, sizeof C);
    const int rc = ts_requantize(M, N, acc, ld_acc, q, use_null_c ? NULL : C, ldc);
    int untouched = 1;
    for (size_t i = 0; i < sizeof C; ++i) untouched &= C[i] == 0x5A;
    (void)s;
    if (rc != TS_EINVAL || !untouched) {
        printf("FAIL %s rc=%d untouched=%d\n", name, rc, untouched);
        return 1;
    }
    printf("ok %s\n", name);
    return 0;
}

#define BAD_Q(name, mutation) do {                                                        \
        bad_setup s; valid_setup(&s); ts_quant *q = &s.q; (void)q; mutation;             \
        failures += expect_einval(name, &s, BAD_M, BAD_N, s.acc, BAD_N, &s.q, 0, BAD_N);  \
    } while (0)

/* ts_quant_validate: the GEMM driver's check, incl. a_zero_point */
static int expect_validate(const char *name, const ts_quant *q, size_t N, int want)
{
    const int rc = ts_quant_validate(q, N);
    if (rc != want) { printf("FAIL %s rc=%d want=%d\n", name, rc, want); return 1; }
    printf("ok %s\n", name);
    return 0;
}

static int run_bad(void)
{
    int failures = 0;
    BAD_Q("null_multiplier", q->multiplier = NULL);
    BAD_Q("null_shift", q->shift = NULL);
    BAD_Q("c_zp_high", q->c_zero_point = 128);
    BAD_Q("c_zp_low", q->c_zero_point = -129);
    BAD_Q("act_min_gt_max", (q->act_min = 10, q->act_max = 9));
    BAD_Q("act_min_low", q->act_min = -129);
    BAD_Q("act_max_high", q->act_max = 128);
    BAD_Q("shift_low", s.shift[BAD_N - 1] = -32);
    BAD_Q("shift_high", s.shift[BAD_N - 1] = 31);
    BAD_Q("multiplier_negative", s.mult[BAD_N - 1] = -1);
    BAD_Q("multiplier_min", s.mult[2] = INT32_MIN);
    BAD_Q("rounding_2", q->rounding = 2);
    BAD_Q("rounding_neg", q->rounding = -1);
    BAD_Q("per_tensor_shift", (q->per_channel = 0, s.shift[0] = 40));
    {
        bad_setup s; valid_setup(&s);
        failures += expect_einval("null_q", &s, BAD_M, BAD_N, s.acc, BAD_N, NULL, 0, BAD_N);
        failures += expect_einval("null_acc", &s, BAD_M, BAD_N, NULL, BAD_N, &s.q, 0, BAD_N);
        failures += expect_einval("null_c", &s, BAD_M, BAD_N, s.acc, BAD_N, &s.q, 1, BAD_N);
        failures += expect_einval("ld_acc_small", &s, BAD_M, BAD_N, s.acc, BAD_N - 1, &s.q, 0, BAD_N);
        failures += expect_einval("ldc_small", &s, BAD_M, BAD_N, s.acc, BAD_N, &s.q, 0, BAD_N - 1);
        failures += expect_einval("empty_but_bad_q", &s, 0, 0, NULL, 0, NULL, 1, 0);
    }
    {   /* empty problems are valid and touch nothing (NULL buffers allowed) */
        bad_setup s; valid_setup(&s);
        int rc0 = ts_requantize(0, BAD_N, NULL, 0, &s.q, NULL, 0);
        int rc1 = ts_requantize(BAD_M, 0, NULL, 0, &s.q, NULL, 0);
        if (rc0 != TS_OK || rc1 != TS_OK) { printf("FAIL empty rc=%d %d\n", rc0, rc1); ++failures; }
        else printf("ok empty\n");
    }
    {   /* a_zero_point: ignored by requantize, checked by quant_validate */
        bad_setup s; valid_setup(&s);
        s.q.a_zero_point = 200;
        int8_t C[BAD_M * BAD_N];
        int rc = ts_requantize(BAD_M, BAD_N, s.acc, BAD_N, &s.q, C, BAD_N);
        if (rc != TS_OK) { printf("FAIL requantize_ignores_a_zp rc=%d\n", rc); ++failures; }
        else printf("ok requantize_ignores_a_zp\n");
        failures += expect_validate("validate_a_zp_high", &s.q, BAD_N, TS_EINVAL);
        s.q.a_zero_point = -129;
        failures += expect_validate("validate_a_zp_low", &s.q, BAD_N, TS_EINVAL);
        s.q.a_zero_point = -128;
        failures += expect_validate("validate_ok", &s.q, BAD_N, TS_OK);
        s.shift[BAD_N - 1] = 31;
        failures += expect_validate("validate_last_channel", &s.q, BAD_N, TS_EINVAL);
        failures += expect_validate("validate_channels_read", &s.q, BAD_N - 1, TS_OK);
        failures += expect_validate("validate_null", NULL, BAD_N, TS_EINVAL);
    }
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "mul") == 0) return run_mul();
    if (argc == 2 && strcmp(argv[1], "row") == 0) return run_rows();
    if (argc == 2 && strcmp(argv[1], "bad") == 0) return run_bad();
    fprintf(stderr, "usage: %s mul|row|bad\n", argv[0]);
    return 2;
}
