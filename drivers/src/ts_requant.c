/* ts_requant.c — int32 accumulators -> int8, TFLite int8 requantization.
 * Plain C99; NEON (Armv8.0 AdvSIMD, arm_neon.h) on AArch64.
 *
 * Per output element (column c, channel ch = per_channel ? c : 0):
 *   x   = acc + col_offset[c] + bias[c]                 (int32, wrapping adds)
 *   y   = MultiplyByQuantizedMultiplier(x, multiplier[ch], shift[ch])
 *   out = clamp(y + c_zero_point, act_min, act_max)
 *
 * MultiplyByQuantizedMultiplier comes in TFLite's two flavours, both from
 * tensorflow/lite/kernels/internal/common.cc:
 *   TS_ROUND_DOUBLE (TFLite default)
 *       RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x << max(shift,0), m), max(-shift,0))
 *       with gemmlowp's definitions (gemmlowp fixedpoint/fixedpoint.h).
 *   TS_ROUND_SINGLE (TFLITE_SINGLE_ROUNDING)
 *       total = 31 - shift (shift in -31..30, TFLITE_DCHECKed there);
 *       y = (x * (int64)m + (1 << (total-1))) >> total
 *
 * Where TFLite's int32 arithmetic overflows (it marks these functions
 * TFLITE_NO_SANITIZE_INTEGER_OVERFLOW and lets them wrap), this file saturates instead:
 *   - the left shift x << max(shift,0) saturates to int32 (SQSHL semantics);
 *   - the single-rounding result saturates to int32 (TFLite DCHECKs it is in range);
 *   - y + c_zero_point saturates before the clamp.
 * Those cases only arise when the exact result is far outside int8 (so the clamp decides it);
 * whenever TFLite's int32 intermediates do not overflow the output is bit-identical to TFLite.
 *
 * The NEON path and the scalar path compute the same function bit for bit; the scalar path
 * handles rows shorter than 8 columns (and everything on non-AArch64 hosts). */
#include <stddef.h>
#include <stdint.h>

#include "tilesmith.h"
#include "ts_error_internal.h"
#include "ts_quant_internal.h"
#include "ts_span_internal.h"

#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define TS_REQUANT_NEON 1
#endif

/* The NEON row loop is written once and specialised by inlining it with constant flags
 * (TS_ALWAYS_INLINE: ts_build_internal.h, through ts_span_internal.h). */

/* ---- argument checks ------------------------------------------------------------------------ */

/* q's zero points and bounds, in the order they are checked (each with its own reason) */
enum { QF_A_ZP, QF_C_ZP, QF_ACT_MIN, QF_ACT_MAX, QF_COUNT };
static const char *const outside_s8[QF_COUNT] = {
    "q->a_zero_point is outside -128..127", "q->c_zero_point is outside -128..127",
    "q->act_min is outside -128..127", "q->act_max is outside -128..127" };
static const char *const outside_u8[QF_COUNT] = {
    "q->a_zero_point is outside 0..255 (uint8 A)", "q->c_zero_point is outside 0..255 (uint8 C)",
    "q->act_min is outside 0..255 (uint8 C)", "q->act_max is outside 0..255 (uint8 C)" };

/* TS_OK when q's fields first .. QF_COUNT-1 are in lo..hi, else TS_EINVAL naming the first
 * that is not (why[field]). */
static int quant_fields_in(const ts_quant *q, int first, int32_t lo, int32_t hi,
                           const char *const why[QF_COUNT])
{
    const int32_t value[QF_COUNT] = { q->a_zero_point, q->c_zero_point, q->act_min, q->act_max };
    for (int f = first; f < QF_COUNT; ++f)
        if (value[f] < lo || value[f] > hi)
            return ts_fail(TS_EINVAL, why[f]);
    return TS_OK;
}

/* Everything the epilogue reads (all of ts_quant except a_zero_point). */
static int epilogue_validate(const ts_quant *q, size_t N)
{
    if (q == NULL)
        return ts_fail(TS_EINVAL, "q is NULL");
    if (q->multiplier == NULL)
        return ts_fail(TS_EINVAL, "q->multiplier is NULL");
    if (q->shift == NULL)
        return ts_fail(TS_EINVAL, "q->shift is NULL");
    if (quant_fields_in(q, QF_C_ZP, -128, 127, outside_s8) != TS_OK)
        return TS_EINVAL;
    if (q->act_min > q->act_max)
        return ts_fail(TS_EINVAL, "q->act_min > q->act_max");
    if (q->rounding != TS_ROUND_DOUBLE && q->rounding != TS_ROUND_SINGLE)
        return ts_fail(TS_EINVAL, "q->rounding is not TS_ROUND_DOUBLE or TS_ROUND_SINGLE");
    if (q->per_channel != 0 && q->per_channel != 1)
        return ts_fail(TS_EINVAL, "q->per_channel is not 0 or 1");
    const size_t channels = q->per_channel ? N : 1;
    for (size_t i = 0; i < channels; ++i) {
        if (q->multiplier[i] < 0)
            return ts_fail(TS_EINVAL, "a q->multiplier is negative");
        if (q->shift[i] < -31 || q->shift[i] > 30)
            return ts_fail(TS_EINVAL, "a q->shift is outside -31..30");
    }
    return TS_OK;
}

int ts_quant_validate(const ts_quant *q, size_t N)
{
    if (q != NULL && quant_fields_in(q, QF_A_ZP, -128, 127, outside_s8) != TS_OK)
        return TS_EINVAL;
    return epilogue_validate(q, N);
}

void ts_quant_u8_as_s8(const ts_quant *q, ts_quant *s8)
{
    *s8 = *q;
    s8->c_zero_point = q->c_zero_point - 128;
    s8->act_min = q->act_min - 128;
    s8->act_max = q->act_max - 128;
}

int ts_quant_validate_u8(const ts_quant *q, size_t N)
{
    ts_quant s8;
    if (q == NULL)
        return ts_fail(TS_EINVAL, "q is NULL");
    if (quant_fields_in(q, QF_A_ZP, 0, 255, outside_u8) != TS_OK)
        return TS_EINVAL;
    ts_quant_u8_as_s8(q, &s8);
    return epilogue_validate(&s8, N);
}

int ts_quant_overlaps(const ts_quant *q, size_t N, const void *p, size_t len)
{
    const size_t channels = q->per_channel ? N : 1;
    return ts_spans_overlap(p, len, q, sizeof *q)
           || ts_spans_overlap(p, len, q->bias, q->bias != NULL ? N * sizeof(int32_t) : 0)
           || ts_spans_overlap(p, len, q->multiplier, channels * sizeof(int32_t))
           || ts_spans_overlap(p, len, q->shift, channels * sizeof(int32_t));
}

/* ---- scalar reference ----------------------------------------------------------------------- */

static int32_t saturate_s32(int64_t v)
{
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

static int32_t wrapping_add(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

/* gemmlowp SaturatingRoundingDoublingHighMul: the high half of 2*a*b, rounded to nearest
 * (nudge +2^30 / 1-2^30, then truncating division by 2^31); only INT32_MIN*INT32_MIN
 * overflows and saturates to INT32_MAX. Equal to the SQRDMULH instruction. */
static int32_t saturating_rounding_doubling_high_mul(int32_t a, int32_t b)
{
    if (a == INT32_MIN && b == INT32_MIN)
        return INT32_MAX;
    const int64_t ab = (int64_t)a * b;
    const int64_t nudge = ab >= 0 ? ((int64_t)1 << 30) : 1 - ((int64_t)1 << 30);
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

/* gemmlowp RoundingDivideByPOT: x / 2^exponent rounded to nearest, ties away from zero
 * (0 <= exponent <= 31). */
static int32_t rounding_divide_by_pot(int32_t x, int exponent)
{
    const int32_t mask = (int32_t)(((int64_t)1 << exponent) - 1);
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

static int32_t multiply_double_rounding(int32_t x, int32_t multiplier, int32_t shift)
{
    const int left_shift = shift > 0 ? shift : 0;
    const int right_shift = shift > 0 ? 0 : -shift;
    const int32_t shifted = saturate_s32((int64_t)x * ((int64_t)1 << left_shift));
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted, multiplier),
                                  right_shift);
}

static int32_t multiply_single_rounding(int32_t x, int32_t multiplier, int32_t shift)
{
    const int total_shift = 31 - shift;                       /* 1 .. 62 */
    const int64_t round = (int64_t)1 << (total_shift - 1);
    return saturate_s32(((int64_t)x * multiplier + round) >> total_shift);
}

static int8_t to_output(int32_t y, const ts_quant *q)
{
    int64_t v = (int64_t)y + q->c_zero_point;
    v = v < q->act_min ? q->act_min : v > q->act_max ? q->act_max : v;
    return (int8_t)v;
}

static void requant_row_scalar(const int32_t *acc, size_t n, size_t col0, const ts_quant *q,
                               const int32_t *col_offset, int8_t *out)
{
    for (size_t j = 0; j < n; ++j) {
        const size_t c = col0 + j;
        const size_t ch = q->per_channel ? c : 0;
        int32_t x = acc[j];
        if (col_offset != NULL)
            x = wrapping_add(x, col_offset[c]);
        if (q->bias != NULL)
            x = wrapping_add(x, q->bias[c]);
        const int32_t y = q->rounding == TS_ROUND_SINGLE
                              ? multiply_single_rounding(x, q->multiplier[ch], q->shift[ch])
                              : multiply_double_rounding(x, q->multiplier[ch], q->shift[ch]);
        out[j] = to_output(y, q);
    }
}

/* ---- NEON ----------------------------------------------------------------------------------- */
#ifdef TS_REQUANT_NEON

/* The NEON path works on column blocks of 16 (or 8) columns and runs down the rows of a block:
 * everything that depends on the column alone (offset + bias, multiplier, shift amounts) is
 * set up once per block, so the row loop is one branch-free block of loads, arithmetic and
 * one store. A row tail shorter than the block is handled by a last block that overlaps the
 * previous one (it rewrites a few outputs with the same values), so no scalar tail runs once
 * n >= 8. */

/* How a block multiplies: which of the two TFLite roundings and, for double rounding, which
 * steps the block's shifts need: every shift negative (the common case: a right shift in every
 * column), none positive (no left shift), or any (both steps, per lane). */
typedef enum {
    ROUND_DOUBLE_RIGHT, ROUND_DOUBLE_NO_LEFT, ROUND_DOUBLE_LEFT, ROUND_SINGLE_ALL
} block_mode;

/* The column constants of 4 consecutive columns (those the block mode uses are set). */
typedef struct {
    int32x4_t offset;          /* col_offset + bias (wrapping add), 0 where absent */
    int32x4_t multiplier;
    int32x4_t left;            /* double rounding: max(shift, 0) */
    int32x4_t right;           /* double rounding: min(shift, 0), the negated right shift */
    int32x4_t right_multiplier;     /* 2^(31 + shift) where shift < 0 (see divide_by_pot_x4) */
    int64x2_t total_lo, total_hi;   /* single rounding: shift - 31 (-62 .. -1) per lane */
} lane_params;

/* Double rounding, the column constants from the shifts (see multiply_double_x4). */
static inline void double_rounding_shifts(int32x4_t shift, int32x4_t *left, int32x4_t *right)
{
    *left = vmaxq_s32(shift, vdupq_n_s32(0));
    *right = vminq_s32(shift, vdupq_n_s32(0));
}

/* Double rounding on 4 lanes: SQSHL (saturating left shift by max(shift,0), when use_left),
 * SQRDMULH (= gemmlowp's high mul), then SRSHL by min(shift,0). SRSHL rounds ties upwards;
 * gemmlowp rounds them away from zero, so negative values are first decremented by one where
 * a right shift follows: the fix-up of gemmlowp's fixedpoint_neon.h RoundingDivideByPOT.
 * (high & right) >> 31 is -1 exactly there (both sign bits set). The fix-up add need not
 * saturate: with multiplier >= 0 SQRDMULH never returns INT32_MIN (its smallest result is
 * -2^31 + 1, from INT32_MIN * INT32_MAX), so high - 1 fits. */
static inline int32x4_t multiply_double_x4(int32x4_t x, int32x4_t multiplier, int32x4_t left,
                                           int32x4_t right, int use_left)
{
    const int32x4_t high = vqrdmulhq_s32(use_left ? vqshlq_s32(x, left) : x, multiplier);
    return vrshlq_s32(vsraq_n_s32(high, vandq_s32(high, right), 31), right);
}

/* The double rounding of a block whose shifts are all negative (right shift e = -shift of
 * 1..31 in every lane, no left shift). The fix-up of multiply_double_x4 applies in every lane:
 * high + (high >> 31) (SSRA). The rounding right shift is done by SQRDMULH with 2^(31-e)
 * instead of SRSHL: (2 * v * 2^(31-e) + 2^31) >> 32 = (v + 2^(e-1)) >> e exactly (it never
 * saturates, 2^(31-e) <= 2^30), the same round-half-up shift. The result is the same; the
 * multiply runs on the other vector pipe than shifts and narrows on Neoverse cores (their
 * optimisation guides), which the narrowing steps keep busy. */
static inline int32x4_t right_shift_multiplier(int32x4_t shift)     /* 2^(31 + shift) */
{
    return vshlq_s32(vdupq_n_s32(1), vaddq_s32(shift, vdupq_n_s32(31)));
}

static inline int32x4_t multiply_double_right_x4(int32x4_t x, int32x4_t multiplier,
                                                 int32x4_t right_multiplier)
{
    const int32x4_t high = vqrdmulhq_s32(x, multiplier);
    return vqrdmulhq_s32(vsraq_n_s32(high, high, 31), right_multiplier);
}

/* Single rounding on 4 lanes: exact 64-bit products (SMULL), rounding right shift by
 * 31 - shift (SRSHL with a negative count adds 2^(n-1) before shifting, at full precision),
 * saturating narrow to int32 (SQXTN). total_lo / total_hi: shift - 31 of lanes 0-1 / 2-3. */
static inline int32x4_t multiply_single_x4(int32x4_t x, int32x4_t multiplier, int64x2_t total_lo,
                                           int64x2_t total_hi)
{
    const int64x2_t lo = vrshlq_s64(vmull_s32(vget_low_s32(x), vget_low_s32(multiplier)), total_lo);
    const int64x2_t hi = vrshlq_s64(vmull_high_s32(x, multiplier), total_hi);
    return vqmovn_high_s64(vqmovn_s64(lo), hi);
}

/* Where a block's per-column inputs are read from: 16 consecutive values each. An absent
 * offset or bias reads zeros, a per-tensor multiplier or shift reads 16 copies of its value,
 * so the block setup is the same straight-line code in every case. */
typedef struct {
    const int32_t *col_offset, *bias, *multiplier, *shift;
} block_columns;

/* 16 copies of the per-tensor multiplier and shift (unused when per-channel). */
typedef struct {
    int32_t multiplier[16], shift[16];
} tensor_columns;

static const int32_t zero_columns[16];

static void tensor_columns_for(tensor_columns *t, const ts_quant *q)
{
    for (size_t i = 0; i < 16; ++i) {
        t->multiplier[i] = q->multiplier[0];
        t->shift[i] = q->shift[0];
    }
}

/* The inputs of the block from absolute column c. */
static TS_ALWAYS_INLINE block_columns block_columns_at(const ts_quant *q,
                                                         const int32_t *col_offset,
                                                         const tensor_columns *t, size_t c)
{
    block_columns b;
    b.col_offset = col_offset != NULL ? col_offset + c : zero_columns;
    b.bias = q->bias != NULL ? q->bias + c : zero_columns;
    b.multiplier = q->per_channel ? q->multiplier + c : t->multiplier;
    b.shift = q->per_channel ? q->shift + c : t->shift;
    return b;
}

/* The constants of block columns g .. g+3 that `mode` uses. */
static TS_ALWAYS_INLINE lane_params lane_params_at(const block_columns *b, size_t g,
                                                     block_mode mode)
{
    lane_params p;
    const int32x4_t shift = vld1q_s32(b->shift + g);
    p.offset = vaddq_s32(vld1q_s32(b->col_offset + g), vld1q_s32(b->bias + g));
    p.multiplier = vld1q_s32(b->multiplier + g);
    if (mode == ROUND_DOUBLE_RIGHT) {
        p.right_multiplier = right_shift_multiplier(shift);
    } else if (mode == ROUND_SINGLE_ALL) {
        const int32x4_t total = vsubq_s32(shift, vdupq_n_s32(31));
        p.total_lo = vmovl_s32(vget_low_s32(total));
        p.total_hi = vmovl_high_s32(total);
    } else {
        double_rounding_shifts(shift, &p.left, &p.right);
    }
    return p;
}

/* Output constants, broadcast: the zero point as int16, the clamp bounds as int8. */
typedef struct {
    int16x8_t zero_point;
    int8x16_t act_min, act_max;
} out_params;

static out_params out_params_for(const ts_quant *q)
{
    out_params o;
    o.zero_point = vdupq_n_s16((int16_t)q->c_zero_point);
    o.act_min = vdupq_n_s8((int8_t)q->act_min);
    o.act_max = vdupq_n_s8((int8_t)q->act_max);
    return o;
}

/* acc[0..3] through offset and multiply with the constants of p. */
static TS_ALWAYS_INLINE int32x4_t requant_x4(const int32_t *acc, const lane_params *p,
                                                block_mode mode)
{
    const int32x4_t x = vaddq_s32(vld1q_s32(acc), p->offset);
    if (mode == ROUND_SINGLE_ALL)
        return multiply_single_x4(x, p->multiplier, p->total_lo, p->total_hi);
    if (mode == ROUND_DOUBLE_RIGHT)
        return multiply_double_right_x4(x, p->multiplier, p->right_multiplier);
    return multiply_double_x4(x, p->multiplier, p->left, p->right, mode == ROUND_DOUBLE_LEFT);
}

/* acc[0..7] requantized up to the zero point, as int16: SQXTN to int16, then the zero point
 * added with int16 saturation. Saturating to int16 (and later to int8) before the clamp
 * cannot change the result: the clamp bounds lie inside int8 and a saturated value stays on
 * the same side of them (|zero point| <= 128 is far from the int16 limits). */
static TS_ALWAYS_INLINE int16x8_t requant_x8_s16(const int32_t *acc, const lane_params *p,
                                                    const out_params *o, block_mode mode)
{
    const int32x4_t lo = requant_x4(acc, &p[0], mode), hi = requant_x4(acc + 4, &p[1], mode);
    return vqaddq_s16(vqmovn_high_s32(vqmovn_s32(lo), hi), o->zero_point);
}

/* One row of a block of 16 columns (as 16 int8), or of 8 (in the low half). */
static TS_ALWAYS_INLINE int8x16_t requant_block_row(const int32_t *acc, const lane_params *p,
                                                       const out_params *o, size_t width,
                                                       block_mode mode)
{
    const int16x8_t h0 = requant_x8_s16(acc, p, o, mode);
    const int8x8_t b0 = vqmovn_s16(h0);
    const int8x16_t b = width == 16 ? vqmovn_high_s16(b0, requant_x8_s16(acc + 8, p + 2, o, mode))
                                    : vcombine_s8(b0, b0);
    return vminq_s8(vmaxq_s8(b, o->act_min), o->act_max);
}

static TS_ALWAYS_INLINE void store_block_row(int8_t *out, int8x16_t b, size_t width)
{
    if (width == 16)
        vst1q_s8(out, b);
    else
        vst1_s8(out, vget_low_s8(b));
}

/* Rows of one block of `width` (8 or 16) columns; p holds width/4 lane constants. Two rows
 * per iteration, both computed before either is stored (an int8 store may alias the next
 * row's accumulators, so the compiler would not move its loads above it): twice the
 * independent dependency chains, which in-order cores (Cortex-A510/A55) need to hide the 3-4
 * cycle latencies. Called with constant width and mode: each use compiles to its own
 * branch-free row loop. */
static TS_ALWAYS_INLINE void requant_block(const int32_t *acc, size_t ld_acc, size_t rows,
                                              const lane_params *p, const out_params *o,
                                              int8_t *out, size_t ldc, size_t width,
                                              block_mode mode)
{
    size_t r = 0;
    for (; r + 2 <= rows; r += 2, acc += 2 * ld_acc, out += 2 * ldc) {
        const int8x16_t first = requant_block_row(acc, p, o, width, mode);
        const int8x16_t second = requant_block_row(acc + ld_acc, p, o, width, mode);
        store_block_row(out, first, width);
        store_block_row(out + ldc, second, width);
    }
    if (r < rows)
        store_block_row(out, requant_block_row(acc, p, o, width, mode), width);
}

/* The mode of a block of `width` (8 or 16) columns. */
static TS_ALWAYS_INLINE block_mode block_mode_of(const ts_quant *q, const block_columns *b,
                                                    size_t width)
{
    if (q->rounding == TS_ROUND_SINGLE)
        return ROUND_SINGLE_ALL;
    int32x4_t shift = vmaxq_s32(vld1q_s32(b->shift), vld1q_s32(b->shift + 4));
    if (width == 16)
        shift = vmaxq_s32(shift, vmaxq_s32(vld1q_s32(b->shift + 8), vld1q_s32(b->shift + 12)));
    const int32_t most = vmaxvq_s32(shift);
    return most < 0 ? ROUND_DOUBLE_RIGHT : most == 0 ? ROUND_DOUBLE_NO_LEFT : ROUND_DOUBLE_LEFT;
}

/* All rows of a block of `width` columns (acc and out at its first column) in `mode`: the
 * constants, then the row loop. */
static TS_ALWAYS_INLINE void requant_block_in_mode(const int32_t *acc, size_t ld_acc,
                                                      size_t rows, const block_columns *b,
                                                      const out_params *o, int8_t *out,
                                                      size_t ldc, size_t width, block_mode mode)
{
    lane_params p[4];
    p[0] = lane_params_at(b, 0, mode);
    p[1] = lane_params_at(b, 4, mode);
    if (width == 16) {
        p[2] = lane_params_at(b, 8, mode);
        p[3] = lane_params_at(b, 12, mode);
    }
    requant_block(acc, ld_acc, rows, p, o, out, ldc, width, mode);
}

/* One block of `width` (8 or 16) columns starting at segment column j, all rows. */
static TS_ALWAYS_INLINE void requant_block_at(const int32_t *acc, size_t ld_acc, size_t rows,
                                                 size_t j, size_t col0, const ts_quant *q,
                                                 const int32_t *col_offset,
                                                 const tensor_columns *t, const out_params *o,
                                                 int8_t *out, size_t ldc, size_t width)
{
    const block_columns b = block_columns_at(q, col_offset, t, col0 + j);
    acc += j;
    out += j;
    switch (block_mode_of(q, &b, width)) {
    case ROUND_DOUBLE_RIGHT:
        requant_block_in_mode(acc, ld_acc, rows, &b, o, out, ldc, width, ROUND_DOUBLE_RIGHT);
        break;
    case ROUND_DOUBLE_NO_LEFT:
        requant_block_in_mode(acc, ld_acc, rows, &b, o, out, ldc, width, ROUND_DOUBLE_NO_LEFT);
        break;
    case ROUND_DOUBLE_LEFT:
        requant_block_in_mode(acc, ld_acc, rows, &b, o, out, ldc, width, ROUND_DOUBLE_LEFT);
        break;
    case ROUND_SINGLE_ALL:
        requant_block_in_mode(acc, ld_acc, rows, &b, o, out, ldc, width, ROUND_SINGLE_ALL);
        break;
    }
}

/* n >= 8 columns of `rows` rows: blocks of 16 columns (8 when n < 16), the last one moved
 * left to end at column n (overlapping its predecessor when n is not a multiple). */
static void requant_rows_neon(const int32_t *acc, size_t ld_acc, size_t rows, size_t n,
                              size_t col0, const ts_quant *q, const int32_t *col_offset,
                              int8_t *out, size_t ldc)
{
    const out_params o = out_params_for(q);
    tensor_columns t;
    if (!q->per_channel)
        tensor_columns_for(&t, q);
    const size_t width = n >= 16 ? 16 : 8;
    for (size_t j = 0; j < n; j += width) {
        const size_t at = j + width <= n ? j : n - width;
        if (width == 16)
            requant_block_at(acc, ld_acc, rows, at, col0, q, col_offset, &t, &o, out, ldc, 16);
        else
            requant_block_at(acc, ld_acc, rows, at, col0, q, col_offset, &t, &o, out, ldc, 8);
    }
}
#endif /* TS_REQUANT_NEON */

/* ---- entry points --------------------------------------------------------------------------- */

void ts_requant_rows(const int32_t *acc, size_t ld_acc, size_t rows, size_t n, size_t col0,
                     const ts_quant *q, const int32_t *col_offset, int8_t *out, size_t ldc)
{
#ifdef TS_REQUANT_NEON
    if (n >= 8) {
        requant_rows_neon(acc, ld_acc, rows, n, col0, q, col_offset, out, ldc);
        return;
    }
#endif
    for (size_t r = 0; r < rows; ++r)
        requant_row_scalar(acc + r * ld_acc, n, col0, q, col_offset, out + r * ldc);
}

void ts_requant_rows_u8(const int32_t *acc, size_t ld_acc, size_t rows, size_t n, size_t col0,
                        const ts_quant *q_s8, const int32_t *col_offset, uint8_t *out,
                        size_t ldc)
{
    ts_requant_rows(acc, ld_acc, rows, n, col0, q_s8, col_offset, (int8_t *)out, ldc);
    for (size_t r = 0; r < rows; ++r, out += ldc) {   /* int8 v - 128 -> uint8 v: flip bit 7 */
        size_t j = 0;
#ifdef TS_REQUANT_NEON
        for (; j + 16 <= n; j += 16)
            vst1q_u8(out + j, veorq_u8(vld1q_u8(out + j), vdupq_n_u8(0x80)));
#endif
        for (; j < n; ++j)
            out[j] ^= 0x80u;
    }
}

void ts_requant_row(const int32_t *acc, size_t n, size_t col0, const ts_quant *q,
                    const int32_t *col_offset, int8_t *out)
{
    ts_requant_rows(acc, 0, 1, n, col0, q, col_offset, out, 0);
}

/* Rows per ts_requant_rows call: the column constants are set up once per block of this many
 * rows, while the rows' accumulators stay in cache. */
#define TS_REQUANT_ROWS_PER_CALL 16

int ts_requantize(size_t M, size_t N, const int32_t *acc, size_t ld_acc,
                  const ts_quant *q, int8_t *C, size_t ldc)
{
    if (epilogue_validate(q, N) != TS_OK)
        return TS_EINVAL;
    if (M == 0 || N == 0)
        return TS_OK;
    /* both spans, (M-1)*ld + N elements, addressable; C shares no byte with what is read */
    size_t acc_len, c_len;
    if (acc == NULL || C == NULL)
        return ts_fail(TS_EINVAL, "acc or C is NULL");
    if (ld_acc < N)
        return ts_fail(TS_EINVAL, "ld_acc < N");
    if (ldc < N)
        return ts_fail(TS_EINVAL, "ldc < N");
    if (ts_matrix_span_bytes(M, N, ld_acc, sizeof(int32_t), &acc_len)
        || ts_matrix_span_bytes(M, N, ldc, 1, &c_len))
        return ts_fail(TS_EINVAL, "acc's or C's span overflows size_t");
    if (ts_spans_overlap(C, c_len, acc, acc_len) || ts_quant_overlaps(q, N, C, c_len))
        return ts_fail(TS_EINVAL, "C overlaps acc, q or one of its arrays");
    for (size_t m = 0; m < M; m += TS_REQUANT_ROWS_PER_CALL) {
        const size_t rows = M - m < TS_REQUANT_ROWS_PER_CALL ? M - m : TS_REQUANT_ROWS_PER_CALL;
        ts_requant_rows(acc + m * ld_acc, ld_acc, rows, N, 0, q, NULL, C + m * ldc, ldc);
    }
    return TS_OK;
}
