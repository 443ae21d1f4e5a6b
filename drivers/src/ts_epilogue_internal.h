/* ts_epilogue_internal.h — what the drivers hand a contract-v2 kernel (README "Micro-kernel
 * ABI"): the argument block and the fused epilogues' column parameters. Not public API.
 * Plain C99. ts_kernels.h declares the same block as ts_tile_args (gen/epilogue.py
 * ARGS_FIELDS); a file includes one or the other (the same for ts_strip). */
#ifndef TS_EPILOGUE_INTERNAL_H
#define TS_EPILOGUE_INTERNAL_H

#include "ts_build_internal.h"   /* no -ffast-math */

#include <stddef.h>
#include <stdint.h>

#include "tilesmith.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ts_tile_args {
    size_t m_rem, n_rem;        /*  0,  8: rows and columns stored (1..ep, 1..hp) */
    const void *acc;            /* 16: NULL or the tile added before the epilogue */
    size_t ld_acc_bytes;        /* 24 */
    const void *params;         /* 32: the epilogue's column parameters */
    int32_t rounding;           /* 40: requant: 0 double, 1 single, 2 double with shifts < 0 */
    int32_t c_zero_point;       /* 44 */
    int32_t act_min, act_max;   /* 48, 52 */
    float clamp_min, clamp_max; /* 56, 60: biasclamp */
};

/* A strip entry call's tiles (README "Micro-kernel ABI", strips; ts_kernels.h ts_strip, the
 * same layout: gen/strip.py STRIP_FIELDS): tile t on A + t a_step, B + t b_step, C + t c_step
 * and column parameters args->params + t params_step, bytes. */
struct ts_strip {
    size_t tiles;               /*  0: >= 1 */
    ptrdiff_t a_step, b_step;   /*  8, 16 */
    ptrdiff_t c_step;           /* 24 */
    ptrdiff_t params_step;      /* 32 */
};

/* Bytes of requant column parameters per block (README "Micro-kernel ABI": offset,
 * multiplier, then the rounding's shift form, int32 x 4 each in the lanes of the kernel's
 * accumulators of one column block). */
#define TS_REQUANT_BLOCK_BYTES 64

/* args->rounding of the kernels (README "Micro-kernel ABI"): q->rounding, or
 * TS_KERNEL_ROUND_DOUBLE_RIGHT for double rounding where every shift of q's columns
 * 0 .. N-1 is negative: one SQRDMULH by 2^(31 + shift) instead of the left and right steps,
 * the same results (ts_requant.c's ROUND_DOUBLE_RIGHT). */
#define TS_KERNEL_ROUND_DOUBLE_RIGHT 2
int32_t ts_kernel_rounding(const ts_quant *q, size_t N);

/* Requant parameters for columns n0 .. n0+cols-1 (cols <= hp) of a validated q (int8 zero
 * points and clamp; its bias already folded into col_offset, q->bias ignored) into dst, in the
 * layout of the kernel rounding mode `rounding` (ts_kernel_rounding): ceil(hp / block_cols)
 * blocks of TS_REQUANT_BLOCK_BYTES, lane l of block b for column b * block_cols +
 * l % block_cols (block_cols 4: the int32 row vectors' lanes; 2: the MMLA 2x2 tiles',
 * [c, c+1, c, c+1]), columns past cols with multiplier 0. col_offset is indexed by the
 * absolute column (the wrapped -a_zero_point * column sum + bias). */
void ts_pack_requant_params(unsigned char *dst, size_t n0, size_t cols, size_t hp,
                            size_t block_cols, const ts_quant *q, int32_t rounding,
                            const int32_t *col_offset);

/* The biasclamp epilogue in C, as the _biasclamp kernels compute it (README "Micro-kernel
 * ABI": FADD, FMAX, FMIN), in place on rows x cols fp32 results (row stride ld elements):
 *   x = c + bias[j] (bias NULL: x = c + -0.0f, the kernels' padding), y = max(x, cmin),
 *   c = min(y, cmax)
 * with FMAX / FMIN's rules: a NaN x stays NaN (cmin, cmax are not NaN), +0 is above -0. One
 * fp32 operation per step (no contraction), so the same bits as the kernels under any FPCR. */
void ts_bias_clamp_rows(float *c, size_t ld, size_t rows, size_t cols, const float *bias,
                        float cmin, float cmax);

#ifdef __cplusplus
}
#endif
#endif /* TS_EPILOGUE_INTERNAL_H */
