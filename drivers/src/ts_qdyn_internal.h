/* ts_qdyn_internal.h — the qdyn GEMM's LHS quantise-pack (ts_qdyn_lhs.c), shared by every
 * qdyn path (ts_qdyn.c). Not public API. Plain C99.
 *
 * The quantisation is tilesmith.h's, operation by operation ("dynamically quantised ..."):
 *   lo = min(0, min_k A[m][k]), hi = max(0, max_k A[m][k]),
 *   scale = max(hi/255 - lo/255, FLT_MIN), inv = 1/scale,
 *   zp = clamp(rint(-128 - lo*inv), -128, 127), qa[k] = clamp(rint(A[m][k]*inv) + zp, -128, 127)
 * in IEEE fp32, unfused, rint ties to even whatever the rounding mode. */
#ifndef TS_QDYN_INTERNAL_H
#define TS_QDYN_INTERNAL_H

#include "ts_build_internal.h"   /* no -ffast-math */

#include <stddef.h>
#include <stdint.h>

/* No contraction in the files that include this (ts_qdyn.c, ts_qdyn_lhs.c), whatever the
 * build flags. clang honours the standard pragma (except under -ffp-contract=fast); GCC
 * ignores it and contracts across statements and NEON intrinsics in its GNU modes, hence its
 * own pragma (it applies to every function defined after it). Each product that an addition
 * consumes also passes through TS_FP_OPAQUE (an empty asm the compiler cannot see through, no
 * instruction), which holds under any flag. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
#if defined(__GNUC__) && (defined(__aarch64__) || defined(__arm__))
#  define TS_FP_OPAQUE(x) __asm__("" : "+w"(x))
#else
#  define TS_FP_OPAQUE(x) ((void)0)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Where quantised element (r, k) of a strip of rows goes: dst + r * row_bytes
 * + (k / lp) * step_bytes + k % lp, for every k < kpad (k >= K: 0). lp is 1, 2, 4, 8 or 16.
 *   a kernel's A panel of width rows, k-steps of lp int8 (ts_pack_internal.h's layout):
 *     { lp, lp, width * lp, ksteps * lp }  (smmla: lp 8; sdot: lp 4)
 *   row-major rows of stride ld:  { 16, ld, 16, K } */
typedef struct {
    size_t lp, row_bytes, step_bytes, kpad;
} ts_qdyn_layout;

/* The panel layout of `width` rows, k-steps of lp, ksteps of them. */
ts_qdyn_layout ts_qdyn_panel_layout(size_t width, size_t lp, size_t ksteps);

/* Rows 0..rows-1 of A (fp32, finite, row stride lda, K columns) quantised into dst in
 * `layout`, with scale[r], zp[r] and, when sums != NULL, sums[r] = sum_k qa[r][k] (exact:
 * |sum| <= 128 K). Rows rows..width-1 (a partial strip of a panel) are written as zeros (and
 * get no scale, zp or sum). One pass per row for its range (NEON min / max), one that
 * quantises and stores straight into the layout (NEON FMUL, FCVTNS: ties to even whatever
 * FPCR says; saturating narrowings for the clamps); the scalar tail does the same. */
void ts_qdyn_quant_pack(const float *A, size_t lda, size_t rows, size_t width, size_t K,
                        const ts_qdyn_layout *layout, int8_t *dst, float *scale, int32_t *zp,
                        int32_t *sums);

/* The range pass alone, for rows 0..rows-1 of A (row stride lda, K columns): lohi[2r] = lo,
 * lohi[2r + 1] = hi of row r as ts_qdyn_quant_pack computes them; returns whether every
 * element is finite (the qdyn GEMM's input check: one pass over A does both). */
int ts_qdyn_row_ranges(const float *A, size_t lda, size_t rows, size_t K, float *lohi);
/* ts_qdyn_quant_pack with the rows' ranges from ts_qdyn_row_ranges (lohi; NULL: computed):
 * the same bytes, the quantising pass only. */
void ts_qdyn_quant_pack_ranged(const float *A, size_t lda, size_t rows, size_t width, size_t K,
                               const ts_qdyn_layout *layout, const float *lohi, int8_t *dst,
                               float *scale, int32_t *zp, int32_t *sums);

/* int8 rows 0..rows-1 of W (row stride ldw, K columns) copied into dst in `layout` (rows
 * rows..width-1 and k past K zero), with sums[r] = sum_k W[r][k] when sums != NULL: the packed
 * A rows of a ts_packed_a into a kernel's panel, int8 weights into a handle's panels. */
void ts_qdyn_pack_s8(const int8_t *W, size_t ldw, size_t rows, size_t width, size_t K,
                     const ts_qdyn_layout *layout, int8_t *dst, int32_t *sums);

/* Whether every element of the rows x cols fp32 matrix p (row stride ld) is finite (NEON: max
 * |x| per row, which a NaN or an infinity makes non-finite). */
int ts_qdyn_all_finite(const float *p, size_t rows, size_t cols, size_t ld);

/* rint(x), ties to even, whatever the current rounding mode (exact: no rounded operation). */
float ts_qdyn_rint(float x);
/* clamp(ts_qdyn_rint(v), lo, hi) as an integer; v finite or +-Inf. */
int32_t ts_qdyn_rint_clamp(float v, float lo, float hi);

#ifdef __cplusplus
}
#endif
#endif
