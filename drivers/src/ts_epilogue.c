/* ts_epilogue.c — column parameters of the fused requant epilogue (README "Micro-kernel ABI",
 * column parameters; what ts_requantize's NEON path precomputes per block), and the biasclamp
 * epilogue in C for the paths without a fused one. Plain C99. */
#include <string.h>

#include "ts_epilogue_internal.h"

/* The argument block's layout is the kernels' ABI (gen/epilogue.py ARGS_FIELDS). */
typedef char ts_args_size_check[sizeof(struct ts_tile_args) == 64 ? 1 : -1];
typedef char ts_args_params_check[offsetof(struct ts_tile_args, params) == 32 ? 1 : -1];
typedef char ts_args_rounding_check[offsetof(struct ts_tile_args, rounding) == 40 ? 1 : -1];
typedef char ts_args_clamp_check[offsetof(struct ts_tile_args, clamp_min) == 56 ? 1 : -1];

int32_t ts_kernel_rounding(const ts_quant *q, size_t N)
{
    if (q->rounding != TS_ROUND_DOUBLE)
        return q->rounding;
    for (size_t n = 0; n < (q->per_channel ? N : 1); ++n)
        if (q->shift[n] >= 0)
            return q->rounding;
    return TS_KERNEL_ROUND_DOUBLE_RIGHT;
}

void ts_pack_requant_params(unsigned char *dst, size_t n0, size_t cols, size_t hp,
                            size_t block_cols, const ts_quant *q, int32_t rounding,
                            const int32_t *col_offset)
{
    const unsigned shift_cols = block_cols == 2 ? 1u : 2u;     /* block_cols: 2 or 4 */
    memset(dst, 0, ((hp + block_cols - 1) >> shift_cols) * TS_REQUANT_BLOCK_BYTES);
    for (size_t c = 0; c < cols; ++c) {
        unsigned char *g = dst + (c >> shift_cols) * TS_REQUANT_BLOCK_BYTES;
        const size_t ch = q->per_channel ? n0 + c : 0;
        const int32_t shift = q->shift[ch];
        int32_t words[2] = { col_offset[n0 + c], q->multiplier[ch] };
        int64_t s = (int64_t)shift - 31;
        int32_t right2 = 0, left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : shift;
        if (rounding == TS_KERNEL_ROUND_DOUBLE_RIGHT)
            right2 = (int32_t)((uint32_t)1 << (31 + shift));   /* shift in -31..-1 */
        /* the lanes of column c: c mod 4 (row vectors), or c mod 2 and c mod 2 + 2 (the MMLA
         * 2x2 tiles: rows 2i and 2i+1) */
        for (size_t lane = c & (block_cols - 1); lane < 4; lane += block_cols) {
            memcpy(g + 4 * lane, &words[0], 4);
            memcpy(g + 16 + 4 * lane, &words[1], 4);
            if (rounding == TS_ROUND_SINGLE) {
                memcpy(g + 32 + 8 * lane, &s, 8);       /* lanes 0-1 at +32, 2-3 at +48 */
            } else if (rounding == TS_KERNEL_ROUND_DOUBLE_RIGHT) {
                memcpy(g + 32 + 4 * lane, &right2, 4);
            } else {
                memcpy(g + 32 + 4 * lane, &left, 4);
                memcpy(g + 48 + 4 * lane, &right, 4);
            }
        }
    }
}

/* Whether x's sign bit is set (-0.0f included). */
static int sign_set(float x)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    return (bits >> 31) != 0;
}

/* FMAX (Arm ARM, FPMax) with a bound that is not NaN: a NaN x is returned, of two zeros the
 * positive one. */
static float max_a64(float x, float lo)
{
    if (x != x)
        return x;
    if (x == lo)
        return sign_set(x) ? lo : x;
    return x > lo ? x : lo;
}

/* FMIN (FPMin) likewise: of two zeros the negative one. */
static float min_a64(float x, float hi)
{
    if (x != x)
        return x;
    if (x == hi)
        return sign_set(x) ? x : hi;
    return x < hi ? x : hi;
}

void ts_bias_clamp_rows(float *c, size_t ld, size_t rows, size_t cols, const float *bias,
                        float cmin, float cmax)
{
    for (size_t i = 0; i < rows; ++i)
        for (size_t j = 0; j < cols; ++j) {
            float x = c[i * ld + j];
            x = x + (bias != NULL ? bias[j] : -0.0f);
            c[i * ld + j] = min_a64(max_a64(x, cmin), cmax);
        }
}
