/* ts_qdyn_lhs.c — the qdyn GEMM's LHS quantise-pack: fp32 rows of A -> int8 rows in a kernel's
 * A panel layout (or row-major), with their scales, zero points and sums (ts_qdyn_internal.h;
 * the semantics are tilesmith.h's, followed operation by operation).
 *
 * Two passes per row: its range (min / max), then quantise-and-store straight into the layout
 * (no intermediate row, no second packing pass). AArch64 Advanced SIMD (Armv8.0, arm_neon.h)
 * for whole groups of 16 k, the plain C loop for the rest (and everywhere else): both compute
 * the same bytes. Build with -ffp-contract=off, like ts_qdyn.c (the pragmas below hold under
 * any flags too). Plain C99. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "ts_pack_internal.h"    /* its guard: no -ffast-math build (IEEE results, NaN/Inf checks) */
#include "ts_qdyn_internal.h"

#if (defined(__aarch64__) && defined(__ARM_NEON)) || defined(_M_ARM64)
#  include <arm_neon.h>
#  define TS_LHS_NEON 1
#else
#  define TS_LHS_NEON 0
#endif
/* The product a * inv rounded on its own, never fused with rint_lanes's FADD into an FMLA: GCC
 * keeps its optimize("fp-contract=off") pragma (ts_qdyn_internal.h) under -ffp-contract=fast,
 * clang 19 drops its STDC FP_CONTRACT OFF there (tests/test_drivers_qdyn.py builds both), so
 * clang gets the empty-asm barrier too; under GCC the barrier would cost the in-order schedule
 * of quantize_64 (llvm-mca-19, Cortex-A510, gcc 12 -march=armv8-a -O2 as the bench builds it,
 * lp 8: 43 -> 55.5 cycles per 64 k). */
#if defined(__clang__)
#  define TS_LHS_UNFUSED(x) TS_FP_OPAQUE(x)
#else
#  define TS_LHS_UNFUSED(x) ((void)0)
#endif



float ts_qdyn_rint(float x)
{
    /* No libm call (truncf would need -lm at -O0): the int32 conversion truncates. */
    if (!((x < 0.0f ? -x : x) < 8388608.0f))   /* |x| >= 2^23 or NaN: already an integer */
        return x;
    float t = (float)(int32_t)x;         /* |x| < 2^23: the truncation and x - t are exact */
    float f = x - t;
    if (f < 0.0f)
        f = -f;
    if (f > 0.5f || (f == 0.5f && ((int32_t)t & 1) != 0))   /* |t| < 2^23: exact */
        t = x < 0.0f ? t - 1.0f : t + 1.0f;
    return t;
}

ts_qdyn_layout ts_qdyn_panel_layout(size_t width, size_t lp, size_t ksteps)
{
    ts_qdyn_layout l;
    l.lp = lp;
    l.row_bytes = lp;
    l.step_bytes = width * lp;
    l.kpad = ksteps * lp;
    return l;
}

/* ---- pass 1: the range of a row -> scale, 1/scale, zero point ---------------------------------- */

#if TS_LHS_NEON
/* the 8 vectors of a[0..32) */
static TS_ALWAYS_INLINE void load_32(const float *a, float32x4_t v[8])
{
    TS_UNROLLED
    for (int i = 0; i < 8; ++i)
        v[i] = vld1q_f32(a + 4 * i);
}

/* v[i] into min chain l[i % 4] and max chain h[i % 4] */
static TS_ALWAYS_INLINE void range_32(const float32x4_t v[8], float32x4_t l[4], float32x4_t h[4])
{
    TS_UNROLLED
    for (int i = 0; i < 8; ++i) {
        l[i % 4] = vminq_f32(l[i % 4], v[i]);
        h[i % 4] = vmaxq_f32(h[i % 4], v[i]);
    }
}
#endif

/* lo = min(0, min_k a[k]), hi = max(0, max_k a[k]); returns whether every a[k] is finite
 * (then so are lo and hi). With NEON the minimum of a row holding -0.0 and nothing below may
 * be -0.0 where the scalar loop keeps +0.0: scale, 1/scale and zp come out the same either way
 * (hi - (-0.0)/255 = hi - 0.0; -128 - (-0.0) = -128). FMIN / FMAX (and FMINV / FMAXV) return a
 * NaN when an input is one, and an infinity is its own extreme: lo and hi are finite exactly
 * when the NEON part is; the scalar tail checks its elements. */
#if TS_LHS_NEON
/* The NEON part of row_range (K >= 16): the min and max chains of a[0 .. 16 floor(K / 16)),
 * started at 0, combined into one vector each (*l, *h); the caller reduces their lanes. */
static TS_ALWAYS_INLINE void row_chains(const float *a, size_t K, float32x4_t *l_out,
                                        float32x4_t *h_out)
{
    /* four min and four max chains (two of the eight vectors of 32 k each), the next 32 k
     * loaded before this block's operations (v and w alternate: no copies); then one step of
     * 16. An in-order core overlaps the loads with the operations instead of waiting for
     * them at the top of each block (llvm-mca-19, gcc 12 -O2, per 64 k: Cortex-A510
     * 32 -> 28 cycles, N2 16, V1 8 either way). FMIN / FMAX are exact, so the order of
     * the chains changes nothing (a NaN propagates through any of them). */
    float32x4_t l[4], h[4], v[8], w[8];
    size_t k = 0;
    TS_UNROLLED
    for (int i = 0; i < 4; ++i)
        l[i] = h[i] = vdupq_n_f32(0.0f);
    const size_t blocks = K / 32;
    if (blocks > 0) {
        size_t b = 1;
        load_32(a, v);
        for (; b + 2 <= blocks; b += 2) {
            load_32(a + 32 * b, w);
            range_32(v, l, h);
            load_32(a + 32 * (b + 1), v);
            range_32(w, l, h);
        }
        if (b < blocks) {
            load_32(a + 32 * b, w);
            range_32(v, l, h);
            range_32(w, l, h);
        } else {
            range_32(v, l, h);
        }
        k = 32 * blocks;
    }
    if (k + 16 <= K) {
        TS_UNROLLED
        for (int i = 0; i < 4; ++i) {
            float32x4_t x = vld1q_f32(a + k + 4 * i);
            l[i] = vminq_f32(l[i], x);
            h[i] = vmaxq_f32(h[i], x);
        }
    }
    *l_out = vminq_f32(vminq_f32(l[0], l[1]), vminq_f32(l[2], l[3]));
    *h_out = vmaxq_f32(vmaxq_f32(h[0], h[1]), vmaxq_f32(h[2], h[3]));
}
#endif

/* a[k0 .. K) into *lo, *hi (the scalar tail of row_range); returns whether each is finite */
static int range_tail(const float *a, size_t k0, size_t K, float *lo, float *hi)
{
    int finite = 1;
    for (size_t k = k0; k < K; ++k) {
        finite &= isfinite(a[k]) != 0;
        if (a[k] < *lo)
            *lo = a[k];
        if (a[k] > *hi)
            *hi = a[k];
    }
    return finite;
}

/* lo = min(0, min_k a[k]), hi = max(0, max_k a[k]); returns whether every a[k] is finite
 * (then so are lo and hi). With NEON the minimum of a row holding -0.0 and nothing below may
 * be -0.0 where the scalar loop keeps +0.0: scale, 1/scale and zp come out the same either way
 * (hi - (-0.0)/255 = hi - 0.0; -128 - (-0.0) = -128). FMIN / FMAX (and FMINV / FMAXV, FMINP /
 * FMAXP) return a NaN when an input is one, and an infinity is its own extreme: lo and hi are
 * finite exactly when the NEON part is; the scalar tail checks its elements. */
static int row_range(const float *a, size_t K, float *lo_out, float *hi_out)
{
    float lo = 0.0f, hi = 0.0f;
    size_t k = 0;
#if TS_LHS_NEON
    if (K >= 16) {
        float32x4_t l, h;
        row_chains(a, K, &l, &h);
        lo = vminvq_f32(l);
        hi = vmaxvq_f32(h);
        k = K / 16 * 16;
    }
#endif
    int finite = lo >= -FLT_MAX && hi <= FLT_MAX;     /* false for a NaN */
    finite &= range_tail(a, k, K, &lo, &hi);
    *lo_out = lo;
    *hi_out = hi;
    return finite;
}

int32_t ts_qdyn_rint_clamp(float v, float lo, float hi)
{
    float r = ts_qdyn_rint(v);
    if (r < lo)
        r = lo;
    if (r > hi)
        r = hi;
    return (int32_t)r;
}

#if !TS_LHS_NEON
/* zp of a row with minimum lo and inv = 1/scale (tilesmith.h, in the written order) */
static int32_t row_zp(float lo, float inv)
{
    float p = lo * inv;
    TS_FP_OPAQUE(p);
    float z = -128.0f - p;
    return ts_qdyn_rint_clamp(z, -128.0f, 127.0f);
}
#endif

/* scale, inv = 1/scale and zp of n <= 4 rows (lohi: their lo, hi pairs; inv: 4 floats), in
 * tilesmith.h's written order: h = hi / 255, l = lo / 255, scale = h - l (FLT_MIN when below
 * it), inv = 1 / scale, then row_zp. With NEON the three divisions of the four rows run as one
 * vector FDIV each: division is correctly rounded lane by lane as in the scalar form, under the
 * same FPCR, and the FLT_MIN floor selects as the scalar compare does (false for a NaN): the
 * same bits. The scalar FDIV is not pipelined on the in-order cores (llvm-mca-19, Cortex-A510:
 * 10 cycles each, latency 13), and three per row were most of a row's parameter cost. */
static void rows_params(const float *lohi, size_t n, float *scale, float *inv, int32_t *zp)
{
#if TS_LHS_NEON
    float32x4x2_t lh;                        /* lh.val[0]: the rows' lo, val[1]: their hi */
    if (n == 4) {
        /* LD2: the four pairs de-interleaved, no copies (a vector load of lanes just written
         * by scalar stores is a store-to-load forwarding case the cores do not forward) */
        lh = vld2q_f32(lohi);
    } else {
        float lo[4] = { 0.0f, 0.0f, 0.0f, 0.0f }, hi[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
        for (size_t i = 0; i < n; ++i) {     /* unused lanes: [0, 0] (scale FLT_MIN, no trap) */
            lo[i] = lohi[2 * i];
            hi[i] = lohi[2 * i + 1];
        }
        lh.val[0] = vld1q_f32(lo);
        lh.val[1] = vld1q_f32(hi);
    }
    const float32x4_t c255 = vdupq_n_f32(255.0f), floor_ = vdupq_n_f32(FLT_MIN);
    float32x4_t s = vsubq_f32(vdivq_f32(lh.val[1], c255), vdivq_f32(lh.val[0], c255));
    s = vbslq_f32(vcltq_f32(s, floor_), floor_, s);
    const float32x4_t iv = vdivq_f32(vdupq_n_f32(1.0f), s);
    /* row_zp's operations lane by lane: p = lo * inv (rounded on its own), z = -128 - p, then
     * FRINTN (ties to even whatever FPCR says, as ts_qdyn_rint; -0.0 for +0.0 changes no
     * integer) and the clamp (z is finite or +-Inf: FMAX / FMIN select as the compares do) */
    float32x4_t p = vmulq_f32(lh.val[0], iv);
    TS_FP_OPAQUE(p);
    float32x4_t z = vrndnq_f32(vsubq_f32(vdupq_n_f32(-128.0f), p));
    z = vminq_f32(vmaxq_f32(z, vdupq_n_f32(-128.0f)), vdupq_n_f32(127.0f));
    float sv[4];
    int32_t zv[4];
    vst1q_f32(sv, s);
    vst1q_f32(inv, iv);
    vst1q_s32(zv, vcvtq_s32_f32(z));
    for (size_t i = 0; i < n; ++i) {
        scale[i] = sv[i];
        zp[i] = zv[i];
    }
#else
    for (size_t i = 0; i < n; ++i) {
        const float lo = lohi[2 * i], hi = lohi[2 * i + 1];
        float h = hi / 255.0f;
        float l = lo / 255.0f;
        float sc = h - l;
        if (sc < FLT_MIN)
            sc = FLT_MIN;
        scale[i] = sc;
        inv[i] = 1.0f / sc;
        zp[i] = row_zp(lo, inv[i]);
    }
#endif
}

/* ---- pass 2: quantise and store ------------------------------------------------------------------ */

/* qa of one element (the scalar form; |a * inv| <= ~255, so +-1024 clamps nothing that
 * survives the final clamp) */
static int8_t quantize_one(float a, float inv, int32_t zp)
{
    float v = a * inv;
    int32_t x = ts_qdyn_rint_clamp(v, -1024.0f, 1024.0f) + zp;
    return (int8_t)(x < -128 ? -128 : x > 127 ? 127 : x);
}

#if TS_LHS_NEON
/* rint(v) of an fp32 vector with |v| < 2^22, ties to even, as int32 lanes whose low 16 bits are
 * rint(v) (every |v| here is below 256, tilesmith.h's qa: |A * inv| <= 255 (1 + a few ulp), so
 * the int16 value is exact; the UZP1 that narrows keeps the low halves). Two forms:
 * - rne (FPCR at its default: fpcr_default): FADD of 1.5 * 2^23. The sum lies in
 *   [2^23, 2^24), where the fp32 spacing is 1, so the one rounding (to nearest, ties to even)
 *   is rint(v) + 1.5 * 2^23 exactly; its bits are 0x4B400000 + rint(v), whose low 16 bits are
 *   rint(v) (0x4B400000 ends in 16 zero bits). One FADD instead of FCVTNS: on Neoverse N2 an
 *   FCVTNS .4s takes pipe V0 for two cycles, an FADD either pipe for one (LLVM 19 models).
 * - otherwise FCVTNS (round to nearest, ties to even, whatever FPCR says: Arm ARM, FCVTNS
 *   (vector)): the same int32. */
static TS_ALWAYS_INLINE int32x4_t rint_lanes(float32x4_t v, int rne)
{
    if (rne)
        return vreinterpretq_s32_f32(vaddq_f32(v, vdupq_n_f32(12582912.0f)));   /* 1.5 * 2^23 */
    return vcvtnq_s32_f32(v);
}

/* 16 consecutive k (from a multiple of 16) of one row: FMUL, rint_lanes, UZP1 of the int32 pairs
 * (their low halves: exact, |rint| <= 256), ADD zp in int16 (|x + zp| <= 384: no overflow),
 * SQXTN to int8: the clamp to -128..127. */
static TS_ALWAYS_INLINE int8x16_t quantize_16(const float *a, float32x4_t inv, int16x8_t zp,
                                              int rne)
{
    float32x4_t f0 = vmulq_f32(vld1q_f32(a), inv), f1 = vmulq_f32(vld1q_f32(a + 4), inv);
    float32x4_t f2 = vmulq_f32(vld1q_f32(a + 8), inv), f3 = vmulq_f32(vld1q_f32(a + 12), inv);
    TS_LHS_UNFUSED(f0);          /* the product rounded on its own (no FMLA with the FADD) */
    TS_LHS_UNFUSED(f1);
    TS_LHS_UNFUSED(f2);
    TS_LHS_UNFUSED(f3);
    int16x8_t h0 = vuzp1q_s16(vreinterpretq_s16_s32(rint_lanes(f0, rne)),
                              vreinterpretq_s16_s32(rint_lanes(f1, rne)));
    int16x8_t h1 = vuzp1q_s16(vreinterpretq_s16_s32(rint_lanes(f2, rne)),
                              vreinterpretq_s16_s32(rint_lanes(f3, rne)));
    return vqmovn_high_s16(vqmovn_s16(vaddq_s16(h0, zp)), vaddq_s16(h1, zp));
}

/* 64 consecutive k the same way as quantize_16 up to the ADD of zp (h: 8 int16 vectors; store_64
 * narrows them), each operation on all 16 vectors before the next (an in-order core waits out each result's latency otherwise: llvm-mca-19, Cortex-A510,
 * 87 -> 64 cycles per 64 k of an lp-8 panel, gcc 12 -O2, 2026-11-23; N2 44, V1 22 either way;
 * with the FADD rint and UZP1, as the bench builds it (gcc 12 -march=armv8-a -O2), lp 8:
 * A510 57, N2 32, V1 16; with quant_row_lp's stores between two blocks: A510 51.5; with
 * store_64's STR d: 43). */
static TS_ALWAYS_INLINE void quantize_64(const float *a, float32x4_t inv, int16x8_t zp, int rne,
                                         int16x8_t h[8])
{
    float32x4_t f[16];
    int32x4_t n[16];
    TS_UNROLLED
    for (int i = 0; i < 16; ++i)
        f[i] = vld1q_f32(a + 4 * i);
    TS_UNROLLED
    for (int i = 0; i < 16; ++i) {
        f[i] = vmulq_f32(f[i], inv);
        TS_LHS_UNFUSED(f[i]);
    }
    TS_UNROLLED
    for (int i = 0; i < 16; ++i)
        n[i] = rint_lanes(f[i], rne);
    TS_UNROLLED
    for (int j = 0; j < 8; ++j)
        h[j] = vuzp1q_s16(vreinterpretq_s16_s32(n[2 * j]), vreinterpretq_s16_s32(n[2 * j + 1]));
    TS_UNROLLED
    for (int j = 0; j < 8; ++j)
        h[j] = vaddq_s16(h[j], zp);
}

/* The 16 values of k-steps k/lp .. k/lp + 16/lp - 1 (lp divides 16): one store per k-step. */
static TS_ALWAYS_INLINE void store_16(int8_t *row, size_t k, size_t lp, size_t step, int8x16_t q)
{
    int8_t *d = row + k / lp * step;
    if (lp == 16) {
        vst1q_s8(d, q);
    } else if (lp == 8) {      /* the high half by a lane store (ST1 {v.d}[1]), no extra move */
        vst1_s8(d, vget_low_s8(q));
        vst1q_lane_s64(ts_region(d, step), vreinterpretq_s64_s8(q), 1);
    } else {
        int8_t t[16];
        vst1q_s8(t, q);
        for (size_t j = 0; j < 16 / lp; ++j)
            memcpy(d + j * step, t + j * lp, lp);
    }
}

/* The 64 values of quantize_64's h (SQXTN of each: the clamp to -128..127) into the k-steps
 * from row (64 / lp of them), and their sum into acc when want_sum (|lane| <= 128 K / 4: fits).
 * lp 8 without sums: one k-step per h[j], SQXTN to 8 bytes and a store at a register offset;
 * the lane store of a high half needs an address register of its own, an integer ADD that
 * the in-order A510 issues only ~3 cycles after vector operations (llvm-mca-19: FMUL, FMUL,
 * ADD take 3 cycles; with STR d instead of ST1 {v.d}[1], A510 51.5 -> 43 cycles per 64 k,
 * N2 32 and V1 16 either way). */
static TS_ALWAYS_INLINE void store_64(int8_t *row, size_t lp, size_t step, const int16x8_t h[8],
                                      int want_sum, int32x4_t *acc)
{
    if (lp == 8 && !want_sum) {
        TS_UNROLLED
        for (int j = 0; j < 8; ++j)
            vst1_s8(row + (size_t)j * step, vqmovn_s16(h[j]));
        return;
    }
    int8x16_t q[4];
    TS_UNROLLED
    for (int j = 0; j < 4; ++j)
        q[j] = vqmovn_high_s16(vqmovn_s16(h[2 * j]), h[2 * j + 1]);
    if (want_sum) {
        *acc = vpadalq_s16(*acc, vaddq_s16(vpaddlq_s8(q[0]), vpaddlq_s8(q[1])));
        *acc = vpadalq_s16(*acc, vaddq_s16(vpaddlq_s8(q[2]), vpaddlq_s8(q[3])));
    }
    store_16(row, 0, lp, step, q[0]);
    store_16(row, 16, lp, step, q[1]);
    store_16(row, 32, lp, step, q[2]);
    store_16(row, 48, lp, step, q[3]);
}
#endif

/* One int8 row into the layout (zeros for k in [K, kpad)); returns its sum. lp: as below. */
static TS_ALWAYS_INLINE int32_t copy_row_lp(const int8_t *w, size_t K, size_t lp, size_t step,
                                            size_t kpad, int8_t *row)
{
    size_t k = 0;
    int32_t sum = 0;
#if TS_LHS_NEON
    int32x4_t acc = vdupq_n_s32(0);
    for (; k + 16 <= K; k += 16) {
        int8x16_t q = vld1q_s8(w + k);
        acc = vpadalq_s16(acc, vpaddlq_s8(q));
        store_16(row, k, lp, step, q);
    }
    sum = vaddvq_s32(acc);
#endif
    for (; k < kpad; ++k) {
        int8_t q = k < K ? w[k] : 0;
        row[k / lp * step + k % lp] = q;
        sum += q;
    }
    return sum;
}

/* One row: qa into the layout (zeros for k in [K, kpad)); returns sum_k qa when want_sum (else
 * 0: the NEON part skips the two additions per 16 k). lp and want_sum are constants where it is
 * inlined (TS_QUANT_ROWS), so store_16 has no run-time choice left. Two blocks of 64 k per
 * iteration (quantize_64: sixteen independent chains of dependent operations for the in-order
 * cores; the stores of one block after the next block's operations). */
static TS_ALWAYS_INLINE int32_t quant_row_lp(const float *a, size_t K, float inv, int32_t zp,
                                             size_t lp, size_t step, size_t kpad, int8_t *row,
                                             int want_sum, int rne)
{
    size_t k = 0;
    int32_t sum = 0;
    (void)want_sum;                               /* the NEON part's only */
    (void)rne;
#if TS_LHS_NEON
    const float32x4_t iv = vdupq_n_f32(inv);
    const int16x8_t zv = vdupq_n_s16((int16_t)zp);
    int32x4_t acc = vdupq_n_s32(0);
    /* Blocks of 64 k, each block's stores after the next block's loads and operations: written
     * so, the stores (int8: they may alias A, so nothing moves across them) sit between two
     * blocks' operations, where the in-order cores overlap them with the arithmetic instead of
     * waiting at the end of each block (llvm-mca-19, gcc 12 -march=armv8-a -O2, lp 8, per
     * 64 k: Cortex-A510 57 -> 51.5 cycles, 43 with store_64's STR d; with sums 71 -> 64;
     * N2 32, V1 16 either way).
     * q and p alternate: no register copies. */
    const size_t blocks = K / 64, blk = 64 / lp * step;   /* blk: bytes per 64 k of the row */
    if (blocks > 0) {
        int16x8_t q[8], p[8];
        size_t b = 1;
        quantize_64(a, iv, zv, rne, q);
        for (; b + 2 <= blocks; b += 2) {
            quantize_64(a + 64 * b, iv, zv, rne, p);
            store_64(row + (b - 1) * blk, lp, step, q, want_sum, &acc);
            quantize_64(a + 64 * (b + 1), iv, zv, rne, q);
            store_64(row + b * blk, lp, step, p, want_sum, &acc);
        }
        if (b < blocks) {
            quantize_64(a + 64 * b, iv, zv, rne, p);
            store_64(row + (b - 1) * blk, lp, step, q, want_sum, &acc);
            store_64(row + b * blk, lp, step, p, want_sum, &acc);
        } else {
            store_64(row + (b - 1) * blk, lp, step, q, want_sum, &acc);
        }
        k = 64 * blocks;
    }
    for (; k + 16 <= K; k += 16) {
        int8x16_t q = quantize_16(a + k, iv, zv, rne);
        if (want_sum)
            acc = vpadalq_s16(acc, vpaddlq_s8(q));
        store_16(row, k, lp, step, q);
    }
    sum = vaddvq_s32(acc);
#endif
    for (; k < kpad; ++k) {
        int8_t q = k < K ? quantize_one(a[k], inv, zp) : 0;
        row[k / lp * step + k % lp] = q;
        sum += q;
    }
    return sum;
}

/* The n rows of a group (each row's inv and zp; sums[i] when want_sum) into layout l, rows
 * row_bytes apart from dst: one function per lp (1, 2, 4, 8 or 16), want_sum and rne, each
 * its own inlined quant_row_lp with the three as constants (with sums, the lp of the kernels
 * that read them: smmla 8, sdot and the Armv8.0 kernels 4, row-major 16; any other lp in one
 * copy). ts_qdyn_quant_pack_ranged picks the function once per call (quant_rows_for): the
 * row loop runs inside it, so the choice of lp, want_sum and rne (three compares and branches
 * per row) and the function's entry and exit (the callee-saved registers of quant_row_lp's
 * 16 vector chains) are paid once per group of rows, not once per row. */
typedef void (*quant_rows_fn)(const float *A, size_t lda, size_t n, size_t K, const float *inv,
                              const int32_t *zp, const ts_qdyn_layout *l, int8_t *dst,
                              int32_t *sums);

#define TS_QUANT_ROWS(name, lp, want_sum, rne)                                                \
    static void name(const float *A, size_t lda, size_t n, size_t K, const float *inv,      \
                     const int32_t *zp, const ts_qdyn_layout *l, int8_t *dst, int32_t *sums) \
    {                                                                                         \
        for (size_t i = 0; i < n; ++i) {                                                      \
            int32_t s = quant_row_lp(A + i * lda, K, inv[i], zp[i], lp, l->step_bytes,        \
                                     l->kpad, dst + i * l->row_bytes, want_sum, rne);         \
            if (want_sum)                                                                     \
                sums[i] = s;                                                                  \
        }                                                                                     \
    }
TS_QUANT_ROWS(quant_rows_16s, 16, 1, 0)
TS_QUANT_ROWS(quant_rows_8s, 8, 1, 0)
TS_QUANT_ROWS(quant_rows_4s, 4, 1, 0)
TS_QUANT_ROWS(quant_rows_ls, l->lp, 1, 0)
TS_QUANT_ROWS(quant_rows_16, 16, 0, 0)
TS_QUANT_ROWS(quant_rows_8, 8, 0, 0)
TS_QUANT_ROWS(quant_rows_4, 4, 0, 0)
TS_QUANT_ROWS(quant_rows_2, 2, 0, 0)
TS_QUANT_ROWS(quant_rows_1, 1, 0, 0)
TS_QUANT_ROWS(quant_rows_16s_rne, 16, 1, 1)
TS_QUANT_ROWS(quant_rows_8s_rne, 8, 1, 1)
TS_QUANT_ROWS(quant_rows_4s_rne, 4, 1, 1)
TS_QUANT_ROWS(quant_rows_ls_rne, l->lp, 1, 1)
TS_QUANT_ROWS(quant_rows_16_rne, 16, 0, 1)
TS_QUANT_ROWS(quant_rows_8_rne, 8, 0, 1)
TS_QUANT_ROWS(quant_rows_4_rne, 4, 0, 1)
TS_QUANT_ROWS(quant_rows_2_rne, 2, 0, 1)
TS_QUANT_ROWS(quant_rows_1_rne, 1, 0, 1)

/* The quant_rows function of layout lp (1, 2, 4, 8 or 16), want_sum and rne. */
static quant_rows_fn quant_rows_for(size_t lp, int want_sum, int rne)
{
    /* [rne][want_sum][lp 16, 8, 4, 2, 1] */
    static const quant_rows_fn table[2][2][5] = {
        { { quant_rows_16, quant_rows_8, quant_rows_4, quant_rows_2, quant_rows_1 },
          { quant_rows_16s, quant_rows_8s, quant_rows_4s, quant_rows_ls, quant_rows_ls } },
        { { quant_rows_16_rne, quant_rows_8_rne, quant_rows_4_rne, quant_rows_2_rne,
            quant_rows_1_rne },
          { quant_rows_16s_rne, quant_rows_8s_rne, quant_rows_4s_rne, quant_rows_ls_rne,
            quant_rows_ls_rne } } };
    const size_t i = lp == 16 ? 0 : lp == 8 ? 1 : lp == 4 ? 2 : lp == 2 ? 3 : 4;
    return table[rne != 0][want_sum != 0][i];
}

static int32_t copy_row_as(const int8_t *w, size_t K, const ts_qdyn_layout *l, int8_t *row)
{
    switch (l->lp) {       /* each case its own inlined copy (constant lp) */
    case 16: return copy_row_lp(w, K, 16, l->step_bytes, l->kpad, row);
    case 8:  return copy_row_lp(w, K, 8, l->step_bytes, l->kpad, row);
    case 4:  return copy_row_lp(w, K, 4, l->step_bytes, l->kpad, row);
    case 2:  return copy_row_lp(w, K, 2, l->step_bytes, l->kpad, row);
    default: return copy_row_lp(w, K, 1, l->step_bytes, l->kpad, row);
    }
}

/* Zeros for element (r, k), every k < kpad, of row r (a row past the strip's). */
static void zero_row(const ts_qdyn_layout *l, int8_t *row)
{
    for (size_t s = 0; s * l->lp < l->kpad; ++s)
        memset(row + s * l->step_bytes, 0, l->lp);
}

/* Whether FPCR is at its default for the fields that could change the FADD of rint_lanes (or
 * trap on it): FIZ [0], AH [1], the trap enables IOE..IXE [12:8] and IDE [15], RMode [23:22],
 * FZ [24], DN [25] (Arm ARM, FPCR; the fields ts_pack.c's BFCVTN check reads). Linux starts
 * every thread with FPCR 0; elsewhere (and without GNU asm) FCVTNS: the same bytes. */
static int fpcr_default(void)
{
#if TS_LHS_NEON && defined(__GNUC__) && defined(__aarch64__)
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    return (fpcr & 0x03C09F03u) == 0;
#else
    return 0;
#endif
}

int ts_qdyn_row_ranges(const float *A, size_t lda, size_t rows, size_t K, float *lohi)
{
    int finite = 1;
    size_t r = 0;
#if TS_LHS_NEON
    if (K >= 16) {
        /* Four rows at a time: their chains (row_chains) reduced together by pairwise FMINP /
         * FMAXP into one vector of the four rows' lo and one of their hi (the same FMIN /
         * FMAX of the same values as row_range's FMINV / FMAXV, in another order: the same
         * lo and hi but for the sign of a zero, see row_range), one finiteness test and one
         * interleaving ST2 store of the four (lo, hi) pairs, then the scalar tails. Per row
         * row_range's reduction is a chain of dependent operations (3 FMIN, FMINV, the
         * compares and their branch) that an in-order core waits out row by row; four rows'
         * chains are independent and fill each other's latencies, and the per-row call,
         * compares and scalar stores go. */
        const float32x4_t fmax = vdupq_n_f32(FLT_MAX), fmin = vdupq_n_f32(-FLT_MAX);
        uint32x4_t ok = vdupq_n_u32(0xFFFFFFFFu);
        for (; r + 4 <= rows; r += 4) {
            float32x4_t l[4], h[4];
            for (size_t i = 0; i < 4; ++i)
                row_chains(A + (r + i) * lda, K, &l[i], &h[i]);
            float32x4x2_t v;
            v.val[0] = vpminq_f32(vpminq_f32(l[0], l[1]), vpminq_f32(l[2], l[3]));
            v.val[1] = vpmaxq_f32(vpmaxq_f32(h[0], h[1]), vpmaxq_f32(h[2], h[3]));
            ok = vandq_u32(ok, vandq_u32(vcgeq_f32(v.val[0], fmin), vcleq_f32(v.val[1], fmax)));
            vst2q_f32(lohi + 2 * r, v);
            for (size_t i = 0; K % 16 != 0 && i < 4; ++i)
                finite &= range_tail(A + (r + i) * lda, K / 16 * 16, K, &lohi[2 * (r + i)],
                                     &lohi[2 * (r + i) + 1]);
        }
        finite &= vminvq_u32(ok) != 0;         /* false for a NaN (the compares are false) */
    }
#endif
    for (; r < rows; ++r)
        finite &= row_range(A + r * lda, K, &lohi[2 * r], &lohi[2 * r + 1]);
    return finite;
}

void ts_qdyn_quant_pack_ranged(const float *A, size_t lda, size_t rows, size_t width, size_t K,
                               const ts_qdyn_layout *layout, const float *lohi, int8_t *dst,
                               float *scale, int32_t *zp, int32_t *sums)
{
    const quant_rows_fn quant = quant_rows_for(layout->lp, sums != NULL, fpcr_default());
    const size_t live = rows < width ? rows : width;
    for (size_t r0 = 0; r0 < live; r0 += 4) {          /* four rows' parameters at a time */
        const size_t n = live - r0 < 4 ? live - r0 : 4;
        float own[8], inv[4];
        const float *lh = own;
        if (lohi != NULL)
            lh = lohi + 2 * r0;
        else
            for (size_t i = 0; i < n; ++i)
                row_range(A + (r0 + i) * lda, K, &own[2 * i], &own[2 * i + 1]);
        rows_params(lh, n, scale + r0, inv, zp + r0);
        quant(A + r0 * lda, lda, n, K, inv, zp + r0, layout, dst + r0 * layout->row_bytes,
              sums != NULL ? sums + r0 : NULL);
    }
    for (size_t r = live; r < width; ++r)
        zero_row(layout, dst + r * layout->row_bytes);
}

void ts_qdyn_quant_pack(const float *A, size_t lda, size_t rows, size_t width, size_t K,
                        const ts_qdyn_layout *layout, int8_t *dst, float *scale, int32_t *zp,
                        int32_t *sums)
{
    ts_qdyn_quant_pack_ranged(A, lda, rows, width, K, layout, NULL, dst, scale, zp, sums);
}

void ts_qdyn_pack_s8(const int8_t *W, size_t ldw, size_t rows, size_t width, size_t K,
                     const ts_qdyn_layout *layout, int8_t *dst, int32_t *sums)
{
    for (size_t r = 0; r < width; ++r) {
        int8_t *row = dst + r * layout->row_bytes;
        if (r >= rows) {
            zero_row(layout, row);
            continue;
        }
        int32_t s = copy_row_as(W + r * ldw, K, layout, row);
        if (sums != NULL)
            sums[r] = s;
    }
}

int ts_qdyn_all_finite(const float *p, size_t rows, size_t cols, size_t ld)
{
    for (size_t r = 0; r < rows; ++r) {
        const float *a = p + r * ld;
        size_t k = 0;
#if TS_LHS_NEON
        /* FMAX returns a NaN when either input is one, so max |a| is finite exactly when every
         * element is (an infinity gives +Inf, a NaN a NaN); the comparison is false for both */
        float32x4_t m0 = vdupq_n_f32(0.0f), m1 = m0;
        for (; k + 8 <= cols; k += 8) {
            m0 = vmaxq_f32(m0, vabsq_f32(vld1q_f32(a + k)));
            m1 = vmaxq_f32(m1, vabsq_f32(vld1q_f32(a + k + 4)));
        }
        if (!(vmaxvq_f32(vmaxq_f32(m0, m1)) <= FLT_MAX))
            return 0;
#endif
        for (; k < cols; ++k)
            if (!isfinite(a[k]))
                return 0;
    }
    return 1;
}
