/* Runs generated micro-kernels against a C reference (driven by tests/test_kernels_run.py and
 * tests/test_kernels_v2.py).
 *
 *   kernel_harness SYMBOL KSTEPS...        contract v1 (args NULL): every KSTEPS value
 *   kernel_harness -v2 SYMBOL KSTEPS...    contract v2 (README "Micro-kernel ABI"), see run_v2
 *
 * For every KSTEPS the kernel runs twice: with the packed panels and C flush against a guard
 * page at their end, then at their start (tests/c/guarded.h), so any access outside them
 * faults. C has a row stride larger than hp; the gaps and the tile start filled with sentinels:
 * the gaps must stay untouched, the tile fully overwritten. The call goes through
 * call_checked (kernel_harness_regs.c), which checks x18, x19-x28, d8-d15 and sp survive it.
 * Integers must match exactly; fp32, bf16 and fp16 results must lie within an error bound of
 * a double-precision reference (see fp_bound). Exit status 0 = all passed.
 *
 * The build defines the kernel table in "kernel_table.h" (generated from manifest.json):
 *   static const kernel_info KERNELS[] = { {"sym", sym, "a_type", "b_type", "c_type", ep, hp, lp}, ... };
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guarded.h"

#include "harness_prefix.h"     /* the build's <prefix>kernels.h, h_tile_args, H_* names */

typedef void (*kernel_fn)(const void *a_packed, const void *b_packed, size_t ksteps, void *c,
                          size_t ldc_bytes, const h_tile_args *args);
typedef void (*strip_fn)(const void *a_packed, const void *b_packed, size_t ksteps, void *c,
                         size_t ldc_bytes, const h_tile_args *args, const h_strip *strip);
typedef struct {
    const char *name;
    kernel_fn fn;
    const char *a_type, *b_type, *c_type;
    int ep, hp, lp;
    const char *epilogue;     /* "raw", "requant", "biasclamp" */
    kernel_fn raw;            /* the raw kernel of the same tile (fn itself for raw) */
    int params_cols;          /* requant: columns per 64-byte parameter block (4, or 2 for the
                                 MMLA 2x2 tiles); 0 otherwise */
    strip_fn strip;           /* its strip entry (README "Micro-kernel ABI", strips), or NULL */
} kernel_info;

/* Returns 0 when the callee-saved state survived the kernel call, else a bit mask:
 * bits 0-9 x19-x28, 10-17 d8-d15, 18 x18, 19 sp. */
unsigned call_checked(kernel_fn fn, const void *a, const void *b, size_t ksteps, void *c,
                      size_t ldc_bytes, const h_tile_args *args);
/* the same check for a strip entry (its seventh argument passed on) */
unsigned call_checked_strip(strip_fn fn, const void *a, const void *b, size_t ksteps, void *c,
                            size_t ldc_bytes, const h_tile_args *args, const h_strip *strip);

#include "kernel_table.h"

/* ---- element types ----------------------------------------------------------------------- */
enum elem { E_FP32, E_INT8, E_UINT8, E_INT16_FROM_INT8, E_BF16, E_INT32, E_UINT32, E_FP16 };

static enum elem elem_of(const char *name)
{
    static const struct { const char *name; enum elem e; } names[] = {
        {"fp32", E_FP32}, {"int8", E_INT8}, {"uint8", E_UINT8}, {"int16", E_INT16_FROM_INT8},
        {"bf16", E_BF16}, {"int32", E_INT32}, {"uint32", E_UINT32}, {"fp16", E_FP16}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(names[i].name, name)) return names[i].e;
    fprintf(stderr, "unknown element type %s\n", name);
    exit(2);
}

static size_t elem_bytes(enum elem e)
{
    switch (e) {
    case E_INT8: case E_UINT8: return 1;
    case E_INT16_FROM_INT8: case E_BF16: case E_FP16: return 2;
    default: return 4;
    }
}

static float float_of_bits(uint32_t bits) { float f; memcpy(&f, &bits, 4); return f; }
static uint32_t bits_of_float(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* IEEE binary16 bits -> double (exact: every fp16 value is a double). */
static double half_value(uint16_t h)
{
    int e = (h >> 10) & 0x1F, m = h & 0x3FF;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m | 0x400, e - 25);
    return h & 0x8000 ? -v : v;
}

/* Random value with sign, a power-of-two exponent in [lo, hi] and a random significand. */
static float random_float(int lo, int hi)
{
    float m = 1.0f + (float)(rng_next() >> 41) / (float)(1u << 23);   /* [1, 2) */
    int e = lo + (int)(rng_next() % (uint64_t)(hi - lo + 1));
    return (rng_next() & 1 ? -1.0f : 1.0f) * ldexpf(m, e);
}

/* Test data: uniform values with a quarter of extremes (int8 -128/127, uint8 0/255); fp32
 * mostly moderate magnitudes with some zeros, tiny values (products near and below the
 * smallest normal) and large ones; bf16 exact bf16 values (the high half of an fp32). */
static void fill(void *buf, size_t count, enum elem e)
{
    for (size_t i = 0; i < count; i++) {
        uint64_t r = rng_next();
        int extreme = (r & 3) == 0, which = (int)((r >> 2) & 1);
        switch (e) {
        case E_INT8: ((int8_t *)buf)[i] = extreme ? (which ? 127 : -128) : (int8_t)(r >> 8); break;
        case E_UINT8: ((uint8_t *)buf)[i] = extreme ? (which ? 255 : 0) : (uint8_t)(r >> 8); break;
        case E_INT16_FROM_INT8:
            ((int16_t *)buf)[i] = extreme ? (which ? 127 : -128) : (int8_t)(r >> 8); break;
        case E_FP32: {
            int kind = (int)((r >> 8) % 20);
            float f = kind == 0 ? 0.0f : kind == 1 ? random_float(-75, -60)
                    : kind == 2 ? random_float(40, 50) : random_float(-20, 20);
            ((float *)buf)[i] = f;
            break;
        }
        case E_BF16: {
            int kind = (int)((r >> 8) % 16);
            float f = kind == 0 ? 0.0f : random_float(-30, 30);
            ((uint16_t *)buf)[i] = (uint16_t)(bits_of_float(f) >> 16);   /* truncation: exact bf16 */
            break;
        }
        case E_FP16: {
            /* fp16 values: zeros, subnormals (2^-24..2^-15, products far below the smallest
             * subnormal: they test the rounding near zero) and 2^-6..2^3 magnitudes with a
             * random 10-bit significand: |a*b| < 2^8, so 300 k of them stay below 65504 and
             * the fp16 accumulators never overflow. */
            int kind = (int)((r >> 8) % 16);
            uint16_t sign = (uint16_t)((r >> 16) & 1) << 15, frac = (uint16_t)((r >> 17) & 0x3FF);
            uint16_t h = kind == 0 ? sign : kind == 1 ? (uint16_t)(sign | (frac ? frac : 1))
                       : (uint16_t)(sign | (uint16_t)(9 + (r >> 27) % 9) << 10 | frac);
            ((uint16_t *)buf)[i] = h;
            break;
        }
        default: fprintf(stderr, "not an operand type\n"); exit(2);
        }
    }
}

static double value(const void *buf, size_t i, enum elem e)
{
    switch (e) {
    case E_FP32: return ((const float *)buf)[i];
    case E_INT8: return ((const int8_t *)buf)[i];
    case E_UINT8: return ((const uint8_t *)buf)[i];
    case E_INT16_FROM_INT8: return ((const int16_t *)buf)[i];
    case E_BF16: return float_of_bits((uint32_t)((const uint16_t *)buf)[i] << 16);
    case E_FP16: return half_value(((const uint16_t *)buf)[i]);
    default: fprintf(stderr, "not an operand type\n"); exit(2);
    }
}

/* fp error bounds (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., 3.1):
 * a sum of n terms computed with at most n roundings, each with relative error <= u, is off
 * by at most gamma_n * sum|terms|, gamma_n = n u / (1 - n u); each rounding that underflows
 * adds an absolute error of at most `eta`.
 *  fp32 fmla: one fused multiply-add per term, round to nearest: u = 2^-24, eta = 2^-150
 *             (half the subnormal spacing); n = K.
 *  bfmmla:    products of bf16 values are exact in fp32 (8 + 8 significand bits); each
 *             BFDotAdd rounds the sum of two products and then the accumulation, with
 *             round-to-odd and flush-to-zero (Arm ARM DDI0487 BFMMLA / BFDotAdd, FEAT_EBF16
 *             off): <= K roundings per element, u = 2^-23 (one ulp), eta = 2^-126.
 *  fmlal:     fp16 x fp16 products are exact in fp32 (11 + 11 significand bits), each
 *             FMLAL/FMLAL2 adds one with a single fp32 rounding: as fp32 fmla.
 *  fmla .8h:  one fused multiply-add per term rounded to fp16 (FPCR.FZ16 = 0, Linux's
 *             default): u = 2^-11, eta = 2^-25 (half the fp16 subnormal spacing 2^-24); n = K.
 *             With K = 300 that is gamma = 0.17 of sum|terms|: the derived worst case.
 * The double reference adds at most K * 2^-53 * sum|terms|. */
static double fp_bound(enum elem operand, enum elem acc, size_t K, double abs_sum)
{
    double u = acc == E_FP16 ? ldexp(1, -11) : operand == E_BF16 ? ldexp(1, -23) : ldexp(1, -24);
    double eta = acc == E_FP16 ? ldexp(1, -25) : operand == E_BF16 ? ldexp(1, -126) : ldexp(1, -150);
    double n = (double)K;
    return n * u / (1 - n * u) * abs_sum + n * eta + n * ldexp(1, -53) * abs_sum;
}

#define SENTINEL 0x7FBADBADu   /* an fp32 signalling NaN / int32 value no kernel here writes */
#define SENTINEL16 0x7DBAu     /* an fp16 signalling NaN */

static uint32_t c_at(const void *c, size_t i, size_t bytes)
{
    return bytes == 2 ? ((const uint16_t *)c)[i] : ((const uint32_t *)c)[i];
}

static int run_case(const kernel_info *k, size_t ksteps, int tail, size_t ldc)
{
    enum elem ea = elem_of(k->a_type), eb = elem_of(k->b_type), ec = elem_of(k->c_type);
    size_t ep = (size_t)k->ep, hp = (size_t)k->hp, lp = (size_t)k->lp, K = ksteps * lp;
    size_t a_count = ksteps * ep * lp, b_count = ksteps * hp * lp;
    size_t c_count = (ep - 1) * ldc + hp;
    guarded_region ra, rb, rc;
    void *a = guarded_alloc_at(a_count * elem_bytes(ea), tail, &ra);
    void *b = guarded_alloc_at(b_count * elem_bytes(eb), tail, &rb);
    size_t cb = elem_bytes(ec);
    uint32_t sentinel = cb == 2 ? SENTINEL16 : SENTINEL;
    void *c = guarded_alloc_at(c_count * cb, tail, &rc);
    fill(a, a_count, ea);
    fill(b, b_count, eb);
    for (size_t i = 0; i < c_count; i++) {
        if (cb == 2) ((uint16_t *)c)[i] = (uint16_t)sentinel;
        else ((uint32_t *)c)[i] = sentinel;
    }

    unsigned regs = call_checked(k->fn, a, b, ksteps, c, ldc * cb, NULL);
    int failures = 0;
    if (regs) {
        printf("FAIL %s ksteps=%zu: callee-saved state clobbered, mask 0x%x "
               "(bits 0-9 x19-x28, 10-17 d8-d15, 18 x18, 19 sp)\n", k->name, ksteps, regs);
        failures++;
    }
    for (size_t i = 0; i < ep; i++) {
        for (size_t j = 0; j < hp; j++) {
            /* reference: sum over k-steps s and l < lp of A[s][i][l] * B[s][j][l] */
            double sum = 0, abs_sum = 0;
            int64_t isum = 0;
            for (size_t s = 0; s < ksteps; s++) {
                for (size_t l = 0; l < lp; l++) {
                    double x = value(a, (s * ep + i) * lp + l, ea);
                    double y = value(b, (s * hp + j) * lp + l, eb);
                    sum += x * y;
                    abs_sum += fabs(x * y);
                    if (ec != E_FP32 && ec != E_FP16) isum += (int64_t)x * (int64_t)y;
                }
            }
            uint32_t got = c_at(c, i * ldc + j, cb);
            int ok;
            char want[64], have[64];
            if (ec == E_FP32 || ec == E_FP16) {
                double g = ec == E_FP16 ? half_value((uint16_t)got) : float_of_bits(got);
                double bound = fp_bound(ea, ec, K, abs_sum);
                ok = fabs(g - sum) <= bound;
                snprintf(want, sizeof want, "%.9g (+-%.3g)", sum, bound);
                snprintf(have, sizeof have, "%.9g", g);
            } else {
                int64_t lo = ec == E_INT32 ? INT32_MIN : 0, hi = ec == E_INT32 ? INT32_MAX : UINT32_MAX;
                if (isum < lo || isum > hi) {
                    fprintf(stderr, "test data overflow: reference %lld\n", (long long)isum);
                    exit(2);
                }
                int64_t g = ec == E_INT32 ? (int64_t)(int32_t)got : (int64_t)got;
                ok = g == isum;
                snprintf(want, sizeof want, "%lld", (long long)isum);
                snprintf(have, sizeof have, "%lld", (long long)g);
            }
            if (!ok && failures++ < 8)
                printf("FAIL %s ksteps=%zu %s ldc=%zu: C[%zu][%zu] = %s, want %s\n", k->name,
                       ksteps, tail ? "tail-guarded" : "front-guarded", ldc, i, j, have, want);
        }
        for (size_t j = hp; i + 1 < ep && j < ldc; j++) {
            if (c_at(c, i * ldc + j, cb) != sentinel && failures++ < 8)
                printf("FAIL %s ksteps=%zu: wrote C[%zu][%zu], outside the tile (hp=%zu)\n",
                       k->name, ksteps, i, j, hp);
        }
    }
    guarded_free(&ra);
    guarded_free(&rb);
    guarded_free(&rc);
    return failures;
}

static uint64_t seed_of(const char *name, size_t ksteps)
{
    uint64_t h = 1469598103934665603ull;      /* FNV-1a */
    for (const char *p = name; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
    return (h ^ ksteps) | 1;
}

#include "kernel_harness_v2.h"

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "-v2"))
        return main_v2(argc - 1, argv + 1);
    if (argc >= 4 && !strcmp(argv[1], "-strip"))
        return main_strip(argc - 1, argv + 1);
    if (argc < 3) {
        fprintf(stderr, "usage: %s [-v2] SYMBOL KSTEPS...\n", argv[0]);
        return 2;
    }
    const kernel_info *k = NULL;
    for (size_t i = 0; i < sizeof KERNELS / sizeof KERNELS[0]; i++)
        if (!strcmp(KERNELS[i].name, argv[1])) k = &KERNELS[i];
    if (!k) {
        fprintf(stderr, "no kernel %s in this harness\n", argv[1]);
        return 2;
    }
    int failures = 0;
    for (int i = 2; i < argc; i++) {
        size_t ksteps = (size_t)strtoul(argv[i], NULL, 10);
        ts_test_rng = seed_of(k->name, ksteps);
        failures += run_case(k, ksteps, 1, (size_t)k->hp + 3);
        failures += run_case(k, ksteps, 0, (size_t)k->hp + 1 + ksteps % 4);
    }
    /* a tight row stride (ldc == hp) once */
    failures += run_case(k, 3, 1, (size_t)k->hp);
    printf("%s %s: %d failure(s)\n", failures ? "FAIL" : "ok", k->name, failures);
    return failures != 0;
}
