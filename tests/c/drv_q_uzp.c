/* Harness for the uzp driver (ts_uzp.c). Driven by tests/test_drivers_uzp.py:
 *
 *   drv_q_uzp mmla <rows> <cols> <k> <ldo>   (-cpu max: needs i8mm + bf16)
 *       Computes C = A(rows x k) * B(k x cols) with real SMMLA (int8 -> int32) and BFMMLA
 *       (bf16 -> fp32) instructions, one 2x2 accumulator per (row pair, column pair), stores the
 *       raw accumulators in (row-pair, column-pair) order, unzips them with ts_uzp_mmla_s32 /
 *       _f32 and compares with a plain C GEMM. Prints "s32 <wrong> <gap> f32 <wrong> <gap>"
 *       (wrong elements; changed bytes between rows of out).
 *   drv_q_uzp bad   bad arguments: EINVAL and nothing written; prints "ok <name>" lines.
 *
 * Tiles and outputs sit against guard pages. */
#define _DEFAULT_SOURCE
#include <arm_neon.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guarded.h"
#include "tilesmith.h"

/* The instructions themselves (`.arch`: gas 2.40 refuses `.arch_extension i8mm` on armv8-a;
 * the directive only widens what the rest of this test file may assemble); 2x8 int8 x 8x2 int8
 * and 2x4 bf16 x 4x2 bf16 into a 2x2 accumulator. */
static int32x4_t smmla(int32x4_t acc, int8x16_t a, int8x16_t b)
{
    __asm__(".arch armv8.2-a+i8mm\n\tsmmla %0.4s, %1.16b, %2.16b" : "+w"(acc) : "w"(a), "w"(b));
    return acc;
}

static float32x4_t bfmmla(float32x4_t acc, uint16x8_t a, uint16x8_t b)
{
    __asm__(".arch armv8.2-a+bf16\n\tbfmmla %0.4s, %1.8h, %2.8h" : "+w"(acc) : "w"(a), "w"(b));
    return acc;
}

/* bf16 bits of a small integer (exactly representable, so truncation is exact) */
static uint16_t bf16_of(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, 4);
    return (uint16_t)(bits >> 16);
}

static size_t count_gap_changes(const unsigned char *out, size_t rows, size_t cols, size_t ldo)
{
    size_t changed = 0;
    for (size_t r = 0; r + 1 < rows; ++r)
        for (size_t b = cols * 4; b < ldo * 4; ++b) changed += out[r * ldo * 4 + b] != 0xEE;
    return changed;
}

static int run_mmla(size_t rows, size_t cols, size_t k, size_t ldo)
{
    int8_t *A = malloc(rows * k), *B = malloc(k * cols);
    for (size_t i = 0; i < rows * k; ++i) A[i] = (int8_t)(rng_next() >> 56);
    for (size_t i = 0; i < k * cols; ++i) B[i] = (int8_t)(rng_next() >> 56);
    const size_t tiles_len = rows * cols, out_len = (rows - 1) * ldo + cols;
    guarded_region regions[4];
    int32_t *tiles_s = guarded_alloc_at(tiles_len * 4, 0, &regions[0]);
    float *tiles_f = guarded_alloc_at(tiles_len * 4, 1, &regions[1]);
    int32_t *out_s = guarded_alloc_at(out_len * 4, 1, &regions[2]);
    float *out_f = guarded_alloc_at(out_len * 4, 0, &regions[3]);
    memset(out_s, 0xEE, out_len * 4);
    memset(out_f, 0xEE, out_len * 4);

    for (size_t rp = 0; rp < rows / 2; ++rp) {
        for (size_t cp = 0; cp < cols / 2; ++cp) {
            int32x4_t acc_s = vdupq_n_s32(0);
            float32x4_t acc_f = vdupq_n_f32(0.0f);
            for (size_t k0 = 0; k0 < k; k0 += 8) {   /* SMMLA: 8 k per step */
                int8_t a[16], b[16];
                for (size_t i = 0; i < 2; ++i)
                    for (size_t kk = 0; kk < 8; ++kk) {
                        a[i * 8 + kk] = A[(2 * rp + i) * k + k0 + kk];
                        b[i * 8 + kk] = B[(k0 + kk) * cols + 2 * cp + i];
                    }
                acc_s = smmla(acc_s, vld1q_s8(a), vld1q_s8(b));
            }
            for (size_t k0 = 0; k0 < k; k0 += 4) {   /* BFMMLA: 4 k per step */
                uint16_t a[8], b[8];
                for (size_t i = 0; i < 2; ++i)
                    for (size_t kk = 0; kk < 4; ++kk) {
                        a[i * 4 + kk] = bf16_of(A[(2 * rp + i) * k + k0 + kk]);
                        b[i * 4 + kk] = bf16_of(B[(k0 + kk) * cols + 2 * cp + i]);
                    }
                acc_f = bfmmla(acc_f, vld1q_u16(a), vld1q_u16(b));
            }
            vst1q_s32(tiles_s + (rp * (cols / 2) + cp) * 4, acc_s);
            vst1q_f32(tiles_f + (rp * (cols / 2) + cp) * 4, acc_f);
        }
    }
    const int rc_s = ts_uzp_mmla_s32(tiles_s, rows, cols, out_s, ldo);
    const int rc_f = ts_uzp_mmla_f32(tiles_f, rows, cols, out_f, ldo);
    size_t wrong_s = 0, wrong_f = 0;
    for (size_t i = 0; i < rows; ++i)
        for (size_t j = 0; j < cols; ++j) {
            int32_t ref = 0;   /* |ref| <= k * 2^14: exact in int32 and in fp32 */
            for (size_t kk = 0; kk < k; ++kk) ref += A[i * k + kk] * B[kk * cols + j];
            wrong_s += out_s[i * ldo + j] != ref;
            wrong_f += out_f[i * ldo + j] != (float)ref;
        }
    printf("rc %d %d\n", rc_s, rc_f);
    printf("s32 %zu %zu f32 %zu %zu\n", wrong_s, count_gap_changes((void *)out_s, rows, cols, ldo),
           wrong_f, count_gap_changes((void *)out_f, rows, cols, ldo));
    for (int r = 0; r < 4; ++r) guarded_free(&regions[r]);
    free(A);
    free(B);
    return 0;
}

/* ---- bad arguments ------------------------------------------------------------------------ */
static int expect(const char *name, int rc, int want, const int32_t *out, size_t n)
{
    int untouched = 1;
    for (size_t i = 0; i < n; ++i) untouched &= out[i] == 0x5A5A5A5A;
    if (rc != want || (want != TS_OK && !untouched)) {
        printf("FAIL %s rc=%d untouched=%d\n", name, rc, untouched);
        return 1;
    }
    printf("ok %s\n", name);
    return 0;
}

static int run_bad(void)
{
    static int32_t tiles[64], out[64];
    static float tiles_f[64], out_f[64];
    int failures = 0;
    memset(out, 0x5A, sizeof out);
    for (int i = 0; i < 64; ++i) tiles[i] = i;
    failures += expect("odd_rows", ts_uzp_mmla_s32(tiles, 3, 4, out, 4), TS_EINVAL, out, 64);
    failures += expect("odd_cols", ts_uzp_mmla_s32(tiles, 4, 3, out, 4), TS_EINVAL, out, 64);
    failures += expect("null_tiles", ts_uzp_mmla_s32(NULL, 2, 2, out, 2), TS_EINVAL, out, 64);
    failures += expect("null_out", ts_uzp_mmla_s32(tiles, 2, 2, NULL, 2), TS_EINVAL, out, 64);
    failures += expect("ldo_small", ts_uzp_mmla_s32(tiles, 2, 4, out, 3), TS_EINVAL, out, 64);
    failures += expect("overlap", ts_uzp_mmla_s32(tiles, 4, 4, tiles + 8, 4), TS_EINVAL, out, 64);
    failures += expect("overlap_in_place", ts_uzp_mmla_s32(tiles, 2, 2, tiles, 2), TS_EINVAL, out, 64);
    failures += expect("size_overflow", ts_uzp_mmla_s32(tiles, 2, SIZE_MAX - 1, out, SIZE_MAX - 1),
                       TS_EINVAL, out, 64);
    failures += expect("f32_odd_cols", ts_uzp_mmla_f32(tiles_f, 2, 5, out_f, 6), TS_EINVAL, out, 64);
    failures += expect("empty_rows", ts_uzp_mmla_s32(NULL, 0, 4, NULL, 0), TS_OK, out, 64);
    failures += expect("empty_cols", ts_uzp_mmla_s32(NULL, 2, 0, NULL, 0), TS_OK, out, 64);
    for (int i = 0; i < 64; ++i) if (tiles[i] != i) { printf("FAIL tiles_changed\n"); return 1; }
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "mmla") == 0)
        return run_mmla(strtoul(argv[2], NULL, 10), strtoul(argv[3], NULL, 10),
                        strtoul(argv[4], NULL, 10), strtoul(argv[5], NULL, 10));
    if (argc == 2 && strcmp(argv[1], "bad") == 0) return run_bad();
    fprintf(stderr, "usage: %s mmla <rows> <cols> <k> <ldo> | bad\n", argv[0]);
    return 2;
}
