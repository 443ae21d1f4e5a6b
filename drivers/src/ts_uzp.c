/* ts_uzp.c — 2x2-interleaved MMLA accumulator tiles -> row-major.
 * Plain C99; NEON (Armv8.0 AdvSIMD) on AArch64.
 *
 * SMMLA/UMMLA/USMMLA/BFMMLA accumulate a 2x2 block of C in one 128-bit register, 32-bit lanes
 * in the order (r0c0, r0c1, r1c0, r1c1) (Arm ARM DDI 0487, C7.2 SMMLA: result element
 * [i*2 + j] = row i, column j). A `tiles` buffer of a rows x cols block (both even) holds those
 * registers as stored by `st1 {v.4s}` / `str q`, in (row-pair, column-pair) order:
 *
 *   tile (rp, cp) = tiles[(rp*(cols/2) + cp)*4 .. +3] = C[2rp][2cp],   C[2rp][2cp+1],
 *                                                       C[2rp+1][2cp], C[2rp+1][2cp+1]
 *
 * In 64-bit halves, a tile is (row 2rp pair, row 2rp+1 pair), so two neighbouring tiles unzip
 * with UZP1/UZP2 .2d into four columns of row 2rp and of row 2rp+1. The data is only moved,
 * never interpreted: the int32 and fp32 versions are the same byte shuffle. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tilesmith.h"
#include "ts_error_internal.h"
#include "ts_span_internal.h"

#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define TS_UZP_NEON 1
#endif

enum { ELEM = 4, PAIR = 2 * ELEM, TILE = 4 * ELEM };   /* bytes: element, column pair, tile */

/* One row pair: `pairs` tiles from `tiles` -> rows `row0` and `row1`. Byte pointers (and
 * memcpy / byte loads) keep this free of type punning between int32 and float. */
static void unzip_row_pair(const unsigned char *tiles, size_t pairs, unsigned char *row0,
                           unsigned char *row1)
{
    size_t cp = 0;
#ifdef TS_UZP_NEON
    for (; cp + 2 <= pairs; cp += 2) {
        const uint64x2_t t0 = vreinterpretq_u64_u8(vld1q_u8(tiles + cp * TILE));
        const uint64x2_t t1 = vreinterpretq_u64_u8(vld1q_u8(tiles + cp * TILE + TILE));
        vst1q_u8(row0 + cp * PAIR, vreinterpretq_u8_u64(vuzp1q_u64(t0, t1)));
        vst1q_u8(row1 + cp * PAIR, vreinterpretq_u8_u64(vuzp2q_u64(t0, t1)));
    }
#endif
    for (; cp < pairs; ++cp) {
        memcpy(row0 + cp * PAIR, tiles + cp * TILE, PAIR);
        memcpy(row1 + cp * PAIR, tiles + cp * TILE + PAIR, PAIR);
    }
}

static int uzp_mmla_bytes(const void *tiles, size_t rows, size_t cols, void *out, size_t ldo)
{
    if (rows % 2 != 0 || cols % 2 != 0)
        return ts_fail(TS_EINVAL, "rows or cols is odd (2x2 mmla tiles)");
    if (rows == 0 || cols == 0)
        return TS_OK;
    size_t tiles_len, out_len;   /* tiles: rows x cols packed; out: rows x cols, stride ldo */
    if (tiles == NULL || out == NULL)
        return ts_fail(TS_EINVAL, "tiles or out is NULL");
    if (ldo < cols)
        return ts_fail(TS_EINVAL, "ldo < cols");
    if (ts_matrix_span_bytes(rows, cols, cols, ELEM, &tiles_len)
        || ts_matrix_span_bytes(rows, cols, ldo, ELEM, &out_len))
        return ts_fail(TS_EINVAL, "tiles' or out's span overflows size_t");
    if (ts_spans_overlap(tiles, tiles_len, out, out_len))
        return ts_fail(TS_EINVAL, "out overlaps tiles");
    const size_t pairs = cols / 2, row_bytes = ldo * ELEM;
    const unsigned char *src = tiles;
    unsigned char *dst = out;
    for (size_t rp = 0; rp < rows / 2; ++rp) {
        unzip_row_pair(src + rp * pairs * TILE, pairs, dst + 2 * rp * row_bytes,
                       dst + (2 * rp + 1) * row_bytes);
    }
    return TS_OK;
}

int ts_uzp_mmla_s32(const int32_t *tiles, size_t rows, size_t cols, int32_t *out, size_t ldo)
{
    return uzp_mmla_bytes(tiles, rows, cols, out, ldo);
}

int ts_uzp_mmla_f32(const float *tiles, size_t rows, size_t cols, float *out, size_t ldo)
{
    return uzp_mmla_bytes(tiles, rows, cols, out, ldo);
}
