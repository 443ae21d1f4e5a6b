/* Shared pieces of the GEMM / conv2d API harnesses: independent scalar references (double
 * sums, int64 sums, TFLite requantization written from the TFLite formulas, bf16 rounding by
 * arithmetic rather than bit tricks), guarded buffers and failure reporting. */
#ifndef DRV_API_COMMON_H
#define DRV_API_COMMON_H
#define _DEFAULT_SOURCE 1   /* MAP_ANONYMOUS (guarded.h) under -std=c99 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guarded.h"
#include "tilesmith.h"

static int failures;

#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            if (failures < 40) {                                                          \
                printf("FAIL %s:%d: ", __FILE__, __LINE__);                               \
                printf(__VA_ARGS__);                                                      \
                printf("\n");                                                             \
            }                                                                             \
            failures++;                                                                   \
        }                                                                                 \
    } while (0)

/* ---- guarded buffers: up to 16 live at once, released together ----------------------------- */
static guarded_region regions[16];
static int n_regions;

static inline void *guarded(size_t bytes)
{
    if (n_regions == 16) { printf("too many guarded buffers\n"); exit(2); }
    return guarded_alloc(bytes, &regions[n_regions++]);
}

static inline void release_all(void)
{
    while (n_regions > 0)
        guarded_free(&regions[--n_regions]);
}

/* bytes of a rows x cols matrix with row stride ld (last row ends at the buffer end) */
static inline size_t matrix_bytes(size_t rows, size_t cols, size_t ld, size_t elem)
{
    return rows == 0 || cols == 0 ? 0 : ((rows - 1) * ld + cols) * elem;
}

static inline int8_t rand_s8(void) { return (int8_t)(rng_next() >> 56); }
static inline float rand_f32(void) { return (float)((int64_t)(rng_next() >> 40) - (1 << 23)) / (float)(1 << 22); }

/* ---- fp16 ------------------------------------------------------------------------------------ */
/* IEEE binary16 through the compiler's __fp16 (hardware FCVT): independent of the library's
 * conversions. */
static inline double half_value(uint16_t h)
{
    __fp16 x;
    memcpy(&x, &h, 2);
    return (double)(float)x;
}

static inline uint16_t half_bits(float f)
{
    __fp16 x = (__fp16)f;
    uint16_t h;
    memcpy(&h, &x, 2);
    return h;
}

/* Error bounds of the fp16 GEMMs (tilesmith.h; Higham, Accuracy and Stability, 2nd ed., 3.1),
 * over S = sum_k |a*b| (products of fp16 values: exact in double and in fp32):
 *  fp16 accumulation (fmla .8h): K fused multiply-adds rounded to fp16: ((1 + u16)^K - 1) * S,
 *     u16 = 2^-11 (each product carries at most K relative roundings; gamma_K(u16), which
 *     bounds this for K u16 < 1, is negative beyond: K >= 2048 runs on the out-of-order
 *     cores' K blocks), plus K * 2^-25 where a rounding underflows (half the fp16 subnormal
 *     step);
 *  fp32 accumulation (fmlal, or fmla fp32 on the exact conversions): gamma_K(2^-24) * S plus
 *     K * 2^-150; for fp16 output one more rounding: u16 * |ref + that| + 2^-25.
 * gamma_n = n u / (1 - n u). */
static inline double gamma_n(size_t n, double u) { return (double)n * u / (1 - (double)n * u); }
static inline double half_bound(int fp16_acc, int f16_out, size_t K, double ref, double abs_sum)
{
    if (fp16_acc)
        return expm1((double)K * log1p(ldexp(1, -11))) * abs_sum + (double)K * ldexp(1, -25);
    double e32 = gamma_n(K, ldexp(1, -24)) * abs_sum + (double)K * ldexp(1, -150);
    return f16_out ? e32 + ldexp(1, -11) * (fabs(ref) + e32) + ldexp(1, -25) : e32;
}

/* ---- bf16 rounding by arithmetic: nearest multiple of the bf16 quantum, ties to even
 * (rint in the default rounding mode). bf16 keeps 8 significant bits: quantum = 2^(e-7) for
 * |x| in [2^e, 2^(e+1)). Test data stays in the normal range. */
static inline float ref_bf16(float x)
{
    if (x == 0.0f || !isfinite(x))
        return x;
    int e = ilogb(x);
    double quantum = ldexp(1.0, e - 7);
    return (float)(rint((double)x / quantum) * quantum);
}

/* ---- TFLite requantization (tensorflow/lite/kernels/internal/common.h) -------------------- */
static inline int32_t ref_srdhm(int32_t a, int32_t b)   /* SaturatingRoundingDoublingHighMul */
{
    if (a == INT32_MIN && b == INT32_MIN)
        return INT32_MAX;
    int64_t ab = (int64_t)a * b;
    int64_t nudge = ab >= 0 ? (1ll << 30) : 1 - (1ll << 30);
    return (int32_t)((ab + nudge) / (1ll << 31));
}

static inline int32_t ref_rdbpot(int32_t x, int e)      /* RoundingDivideByPOT */
{
    int32_t mask = (int32_t)((1ll << e) - 1);
    int32_t remainder = x & mask;
    int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> e) + (remainder > threshold ? 1 : 0);
}

static inline int32_t ref_mbqm(int32_t x, int32_t m, int shift, int rounding)
{
    if (rounding == TS_ROUND_SINGLE) {            /* TFLITE_SINGLE_ROUNDING */
        int total = 31 - shift;
        int64_t r = ((int64_t)x * m + (1ll << (total - 1))) >> total;
        return r > INT32_MAX ? INT32_MAX : r < INT32_MIN ? INT32_MIN : (int32_t)r;
    }
    int left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
    return ref_rdbpot(ref_srdhm((int32_t)((uint32_t)x << left), m), right);
}

/* acc already includes the zero-point correction; adds bias, requantizes column n */
static inline int8_t ref_requant(int32_t acc, size_t n, const ts_quant *q)
{
    int32_t x = (int32_t)((uint32_t)acc + (uint32_t)(q->bias ? q->bias[n] : 0));
    size_t ch = q->per_channel ? n : 0;
    int32_t y = ref_mbqm(x, q->multiplier[ch], q->shift[ch], q->rounding) + q->c_zero_point;
    y = y < q->act_min ? q->act_min : y > q->act_max ? q->act_max : y;
    return (int8_t)y;
}

/* A random valid quant for N channels; arrays in caller-owned storage of N (>= 1) entries. */
static inline void random_quant(ts_quant *q, size_t N, int32_t *bias, int32_t *mult, int32_t *shift,
                         int per_channel, int rounding)
{
    for (size_t n = 0; n < (N ? N : 1); ++n) {
        bias[n] = (int32_t)(rng_next() % 20001) - 10000;
        mult[n] = (int32_t)(1u << 30) + (int32_t)(rng_next() % (1u << 30));  /* [0.5, 1) Q31 */
        shift[n] = (int32_t)(rng_next() % 12) - 10;                          /* -10 .. 1 */
    }
    q->a_zero_point = (int32_t)(rng_next() % 256) - 128;
    q->c_zero_point = (int32_t)(rng_next() % 256) - 128;
    q->bias = (rng_next() & 3) ? bias : NULL;
    q->multiplier = mult;
    q->shift = shift;
    q->per_channel = per_channel;
    q->act_min = -128 + (int32_t)(rng_next() % 20);
    q->act_max = 127 - (int32_t)(rng_next() % 20);
    q->rounding = rounding;
}

/* Fills a rows x cols region with `byte` in every byte (sentinel for "untouched"). */
static inline int all_bytes(const void *p, size_t n, unsigned char byte)
{
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; ++i)
        if (b[i] != byte)
            return 0;
    return 1;
}

/* ---- SME int8 outer products under QEMU issue 2083 ------------------------------------------
 * QEMU before 8.2.2 / 9.0 mis-emulates the 32-bit SMOPA / USMOPA (QEMU issue 2083, "target/arm:
 * Fix 32-bit SMOPA", 2024; tests/c/sme_kernel_harness.c imopa_mode): in every S x S ZA tile
 * (S = SVL/32) even rows get, at even columns, their own sum, at odd columns the sum of the
 * next row of A with that column, and odd rows are left as they were (zero: the kernels start
 * from a zeroed ZA). The driver's tiles start at multiples of ep and hp, both multiples of S,
 * so the model applies to C's rows and columns modulo S. imopa_probe() finds out which
 * behaviour this emulator has through the public API (the int8 GEMM on its SME path); the
 * harnesses then check the SME int8 paths against it (with a note), every other path and every
 * float SME path against the architectural results. On hardware or a fixed QEMU: mode 0. */
#include <sys/prctl.h>

static long imopa_s;        /* S when this emulator's 32-bit integer MOPAs are issue 2083's, else 0 */

/* The streaming vector length in bytes (Linux PR_SME_GET_VL = 64, low 16 bits), 0 without SME. */
static inline long sme_vl_bytes(void)
{
    long r = prctl(64, 0, 0, 0, 0);
    return r < 0 ? 0 : (r & 0xffff);
}

/* Whether dispatch runs an SME outer-product kernel for gemm_type now. */
static inline int sme_path(int gemm_type)
{
    const char *k = ts_gemm_kernel(gemm_type);
    return k != NULL && strstr(k, "mopa_") != NULL;
}

/* Whether a gemm_type call with M rows and N columns runs an SME outer-product kernel (not
 * the SME path's NEON GEMV kernel, which small M runs where dispatch picks it: README "SME
 * kernels"). A handle packed with both layouts runs what the unpacked call runs. */
static inline int sme_tile_runs(int gemm_type, size_t M, size_t N)
{
    const char *k = ts_gemm_kernel_mn(gemm_type, M, N);
    return k != NULL && strstr(k, "mopa_") != NULL;
}

/* Sets imopa_s (and says so) from one 5 x 2 x 4 int8 GEMM on the SME tile (5 rows: more than
 * any GEMV kernel serves, gen/gemv.py SMALL_M_MAX): A rows of 1s, 2s and three of 0s, B of 1s:
 * architecturally C = 4 4 / 8 8 / 0 0 ...; issue 2083: 8 8 -> C[0][1] = 8, row 1 = 0. Leaves
 * imopa_s 0 when the int8 GEMM has no SME path (the mask or the CPU). */
static inline void imopa_probe(void)
{
    int8_t A[20] = { 1, 1, 1, 1, 2, 2, 2, 2 }, B[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
    int32_t C[10];
    imopa_s = 0;
    if (!sme_tile_runs(TS_GEMM_INT8, 5, 2) || ts_gemm_s8s32(5, 2, 4, A, 4, B, 2, C, 2) != TS_OK)
        return;
    for (int i = 4; i < 10; ++i)
        if (C[i] != 0) {
            printf("FAIL imopa probe: C[%d] = %d, not 0\n", i, C[i]);
            failures++;
        }
    if (C[0] == 4 && C[1] == 4 && C[2] == 8 && C[3] == 8)
        return;
    if (C[0] == 4 && C[1] == 8 && C[2] == 0 && C[3] == 0) {
        imopa_s = sme_vl_bytes() / 4;
        printf("note: this emulator's 32-bit integer MOPA is QEMU issue 2083's: SME int8 paths "
               "checked against that behaviour (S = %ld)\n", imopa_s);
        return;
    }
    printf("FAIL imopa probe: neither the architectural result nor QEMU issue 2083's "
           "(%d %d %d %d)\n", C[0], C[1], C[2], C[3]);
    failures++;
}

/* The row of A whose products land in C[m][n] (M rows) of an integer GEMM of gemm_type on the
 * current path: m, or with the issue-2083 model on an SME path the row above; -1: none (the
 * result is the zero row's). `bugged`: sme_path(gemm_type) && imopa_s, hoisted by the caller. */
static inline long imopa_row(int bugged, size_t m, size_t n, size_t M)
{
    if (!bugged)
        return (long)m;
    if ((m % (size_t)imopa_s) % 2)
        return -1;
    if ((n % (size_t)imopa_s) % 2)
        return m + 1 < M ? (long)m + 1 : -1;
    return (long)m;
}
#endif
