/* ts_pack.c — packing of A and B panels for every kernel path, and the packed-B handle.
 * Layout: ts_pack_internal.h and README "Micro-kernel ABI". Plain C99; AArch64 Advanced SIMD (Armv8.0, arm_neon.h)
 * for the bulk of the work where available, the plain C loops for the rest (and everywhere
 * else), computing the same bytes. */
#include <stdlib.h>
#include <string.h>

#include "ts_error_internal.h"
#include "ts_pack_internal.h"

#if (defined(__aarch64__) && defined(__ARM_NEON)) || defined(_M_ARM64)
#  include <arm_neon.h>
#  define TS_HAVE_NEON 1
#else
#  define TS_HAVE_NEON 0
#endif
#if TS_HAVE_NEON && (defined(__GNUC__) || defined(__clang__))
#  define TS_HAVE_BFCVT 1     /* GNU inline asm: BFCVTN for bf16 packing (bf16_cvt_x8) */
#else
#  define TS_HAVE_BFCVT 0
#endif


/* ---- element conversions --------------------------------------------------------------------- */

/* fp32 -> bf16 (the high half of the fp32), rounded to nearest, ties to even. Adding 0x7FFF
 * plus the lowest kept bit carries into the kept half exactly when the dropped half is above
 * 0x8000, or equal to it with an odd kept half; finite values past the bf16 range round to
 * infinity (IEEE 754 RNE). A NaN would carry into the exponent or lose its payload, so it is
 * truncated and made quiet (bit 6 of the bf16 = fraction MSB) instead: it stays a NaN. */
static uint16_t f32_to_bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* x rounded to bf16 precision, as an fp32 (what the bfmmla path multiplies). */
static float bf16_rounded(float x)
{
    uint32_t u = (uint32_t)f32_to_bf16(x) << 16;
    float y;
    memcpy(&y, &u, sizeof y);
    return y;
}

#if TS_HAVE_NEON
/* f32_to_bf16 of 8 values, bit for bit, on 16-bit lanes: the kept (high) and dropped (low)
 * halves of the fp32s separated by UZP2 / UZP1. Rounding carries into the kept half when
 * dropped + 0x7FFF + (kept & 1) overflows 16 bits, i.e. dropped > 0x8000 - (kept & 1). A NaN
 * is |x| > 0x7F800000 as 32 bits, i.e. (kept & 0x7FFF) + (dropped != 0) > 0x7F80 (the sum
 * stays below 2^16); it becomes kept | 0x0040. Integer operations only, like the scalar code
 * (no FP flags raised). */
static inline uint16x8_t bf16_bits_x8(float32x4_t lo, float32x4_t hi)
{
    const uint16x8_t a = vreinterpretq_u16_f32(lo), b = vreinterpretq_u16_f32(hi);
    const uint16x8_t kept = vuzp2q_u16(a, b), dropped = vuzp1q_u16(a, b);
    const uint16x8_t odd = vandq_u16(kept, vdupq_n_u16(1));
    const uint16x8_t carry = vcgtq_u16(dropped, vsubq_u16(vdupq_n_u16(0x8000), odd));   /* 0 or -1 */
    const uint16x8_t rounded = vsubq_u16(kept, carry);
    const uint16x8_t magnitude = vsubq_u16(vandq_u16(kept, vdupq_n_u16(0x7FFF)),
                                           vtstq_u16(dropped, dropped));
    const uint16x8_t nan = vcgtq_u16(magnitude, vdupq_n_u16(0x7F80));
    return vbslq_u16(nan, vorrq_u16(kept, vdupq_n_u16(0x0040)), rounded);
}

/* bf16_rounded of 8 values: the bf16 bits back in the high halves (ZIP with zeros). */
static inline void bf16_rounded_x8(float32x4_t *lo, float32x4_t *hi)
{
    const uint16x8_t bits = bf16_bits_x8(*lo, *hi), zero = vdupq_n_u16(0);
    *lo = vreinterpretq_f32_u16(vzip1q_u16(zero, bits));
    *hi = vreinterpretq_f32_u16(vzip2q_u16(zero, bits));
}

/* bf16_rounded of src[0..7] into dst[0..7]. */
static inline void bf16_rounded_8(float *dst, const float *src)
{
    float32x4_t lo = vld1q_f32(src), hi = vld1q_f32(src + 4);
    bf16_rounded_x8(&lo, &hi);
    vst1q_f32(dst, lo);
    vst1q_f32(dst + 4, hi);
}

/* bf16_rounded of 4 values. */
static inline float32x4_t bf16_rounded_x4(float32x4_t x)
{
    float32x4_t unused = x;
    bf16_rounded_x8(&x, &unused);
    return x;
}

/* f32_to_bf16 of 4 values. */
static inline uint16x4_t bf16_bits_x4(float32x4_t x)
{
    return vget_low_u16(bf16_bits_x8(x, x));
}

/* The same 8 values with BFCVTN / BFCVTN2 (FEAT_BF16: 2 instructions instead of ~12). They
 * round by FPCR (Arm ARM, BFCVTN: FPConvertBF with FPCR.RMode, FZ, DN, AH, FIZ), which gives
 * f32_to_bf16's bits exactly when all of those are 0 — round to nearest even, denormals kept,
 * NaNs quieted with their payload truncated (FPProcessNaN then the kept half) — and raise FP
 * exceptions, harmless while no trap is enabled. bf16_hw_usable() checks both per packed
 * panel. The assembler gets the instruction through .arch_extension (GCC / Clang inline asm;
 * other compilers keep the integer form). */
#if TS_HAVE_BFCVT
/* Four conversions (val[i]: lo.val[i] in lanes 0-3, hi.val[i] in 4-7) in one statement: the
 * four BFCVTN before the four BFCVTN2, so an in-order core (Cortex-A510: latency 4) does not
 * wait on each conversion's first half. */
static inline uint16x8x4_t bf16_cvt_x8x4(float32x4x4_t lo, float32x4x4_t hi)
{
    uint16x8x4_t r;
    __asm__(".arch_extension bf16\n\t"
            "bfcvtn  %0.4h, %4.4s\n\tbfcvtn  %1.4h, %5.4s\n\t"
            "bfcvtn  %2.4h, %6.4s\n\tbfcvtn  %3.4h, %7.4s\n\t"
            "bfcvtn2 %0.8h, %8.4s\n\tbfcvtn2 %1.8h, %9.4s\n\t"
            "bfcvtn2 %2.8h, %10.4s\n\tbfcvtn2 %3.8h, %11.4s"
            : "=&w"(r.val[0]), "=&w"(r.val[1]), "=&w"(r.val[2]), "=&w"(r.val[3])
            : "w"(lo.val[0]), "w"(lo.val[1]), "w"(lo.val[2]), "w"(lo.val[3]),
              "w"(hi.val[0]), "w"(hi.val[1]), "w"(hi.val[2]), "w"(hi.val[3]));
    return r;
}

/* bf16_cvt_x8x4, then ST4 of the four results to dst (64 bytes): converted straight into
 * v16-v19, the registers ST4 takes in a row (no moves). */
static inline void bf16_cvt_st4(uint16_t *dst, float32x4x4_t lo, float32x4x4_t hi)
{
    __asm__(".arch_extension bf16\n\t"
            "bfcvtn  v16.4h, %1.4s\n\tbfcvtn  v17.4h, %2.4s\n\t"
            "bfcvtn  v18.4h, %3.4s\n\tbfcvtn  v19.4h, %4.4s\n\t"
            "bfcvtn2 v16.8h, %5.4s\n\tbfcvtn2 v17.8h, %6.4s\n\t"
            "bfcvtn2 v18.8h, %7.4s\n\tbfcvtn2 v19.8h, %8.4s\n\t"
            "st4     {v16.8h, v17.8h, v18.8h, v19.8h}, [%9]"
            : "=m"(*(uint16_t (*)[32])dst)
            : "w"(lo.val[0]), "w"(lo.val[1]), "w"(lo.val[2]), "w"(lo.val[3]),
              "w"(hi.val[0]), "w"(hi.val[1]), "w"(hi.val[2]), "w"(hi.val[3]), "r"(dst)
            : "v16", "v17", "v18", "v19");
}
#endif

/* f32_to_bf16 of lo.val[i] (lanes 0-3 of val[i]) and hi.val[i] (lanes 4-7), i = 0..3: BFCVTN
 * when `hw` (bf16_hw_usable), else the integer form; inlined with hw a constant, each packer
 * below has one loop per form. */
static TS_ALWAYS_INLINE uint16x8x4_t bf16_x8x4(int hw, float32x4x4_t lo, float32x4x4_t hi)
{
    uint16x8x4_t r;
#if TS_HAVE_BFCVT
    if (hw)
        return bf16_cvt_x8x4(lo, hi);
#endif
    (void)hw;
    r.val[0] = bf16_bits_x8(lo.val[0], hi.val[0]);
    r.val[1] = bf16_bits_x8(lo.val[1], hi.val[1]);
    r.val[2] = bf16_bits_x8(lo.val[2], hi.val[2]);
    r.val[3] = bf16_bits_x8(lo.val[3], hi.val[3]);
    return r;
}

/* vst4q_u16(dst, bf16_x8x4(hw, lo, hi)). */
static TS_ALWAYS_INLINE void bf16_st4(int hw, uint16_t *dst, float32x4x4_t lo, float32x4x4_t hi)
{
#if TS_HAVE_BFCVT
    if (hw) {
        bf16_cvt_st4(dst, lo, hi);
        return;
    }
#endif
    vst4q_u16(dst, bf16_x8x4(hw, lo, hi));
}
#endif

/* Whether the bf16 packers of `path` may use BFCVTN: its kernels need FEAT_BF16 (a path is
 * chosen only where the CPU has its features, ts_select_path_ctx) and the FPCR fields below
 * are 0 — FIZ [0], AH [1], the trap enables IOE..IXE [12:8] and IDE [15], RMode [23:22],
 * FZ [24], DN [25] (Arm ARM, FPCR) — as they are by default (Linux starts every thread with
 * FPCR 0); otherwise the integer form, the same bits. */
#define TS_FPCR_BFCVT_FIELDS 0x03C09F03u

static int bf16_hw_usable(const ts_path *path)
{
#if TS_HAVE_BFCVT
    uint64_t fpcr;
    if (!(path->features & TS_FEAT_BF16))
        return 0;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    return (fpcr & TS_FPCR_BFCVT_FIELDS) == 0;
#else
    (void)path;
    return 0;
#endif
}

/* ---- IEEE binary16 <-> fp32 --------------------------------------------------------------- */

float ts_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu, u;
    if (e == 0x1F)                          /* inf, or NaN made quiet (bit 22) */
        u = sign | 0x7F800000u | (m << 13) | (m != 0 ? 0x00400000u : 0u);
    else if (e != 0)                        /* normal: rebias 15 -> 127 */
        u = sign | ((e + 112u) << 23) | (m << 13);
    else if (m == 0)
        u = sign;
    else {                                  /* subnormal m * 2^-24: normalise */
        e = 113u;
        while (!(m & 0x400u)) {
            m <<= 1;
            --e;
        }
        u = sign | (e << 23) | ((m & 0x3FFu) << 13);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t ts_f32_to_f16(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u)                    /* NaN: quiet, top 9 payload bits kept */
        return (uint16_t)(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
    if (a >= 0x477FF000u)                   /* >= 65520 (halfway past 65504, odd): infinity */
        return (uint16_t)(sign | 0x7C00u);
    if (a >= 0x38800000u) {                 /* normal half: drop 13 bits, RNE, rebias */
        a += 0xFFFu + ((a >> 13) & 1u);
        return (uint16_t)(sign | ((a - 0x38000000u) >> 13));
    }
    if (a <= 0x33000000u)                   /* <= 2^-25 (the tie rounds to even 0) */
        return sign;
    /* subnormal half: value / 2^-24 = mant * 2^(e - 126), rounded to nearest even */
    const uint32_t e = a >> 23, mant = (a & 0x7FFFFFu) | 0x800000u, shift = 126u - e;
    uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u)))
        ++q;
    return (uint16_t)(sign | q);
}

void ts_narrow_rows_f16(const float *src, size_t ld_src, size_t rows, size_t cols,
                        uint16_t *dst, size_t ld_dst)
{
    for (size_t r = 0; r < rows; ++r) {
        const float *s = src + r * ld_src;
        uint16_t *d = dst + r * ld_dst;
        size_t c = 0;
#if TS_HAVE_NEON
        for (; c + 4 <= cols; c += 4)
            vst1_u16(d + c, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(s + c))));
#endif
        for (; c < cols; ++c)
            d[c] = ts_f32_to_f16(s[c]);
    }
}

/* ---- element sizes and single conversions ----------------------------------------------- */

/* Bytes of one packed (kernel) element and of one source element of `kind`. */
static TS_ALWAYS_INLINE size_t packed_size(ts_pack_kind kind)
{
    switch (kind) {
    case TS_PACK_F32: case TS_PACK_F32_BF16: case TS_PACK_F32_F16: return 4;
    case TS_PACK_BF16: case TS_PACK_S16: case TS_PACK_U16: case TS_PACK_F16: return 2;
    case TS_PACK_S8: case TS_PACK_U8_S8: return 1;
    }
    return 0;
}

static TS_ALWAYS_INLINE size_t source_size(ts_pack_kind kind)
{
    return kind == TS_PACK_S8 || kind == TS_PACK_U8_S8 || kind == TS_PACK_S16
                   || kind == TS_PACK_U16 ? 1
           : kind == TS_PACK_F16 || kind == TS_PACK_F32_F16 ? 2 : sizeof(float);
}

/* dst[di] = src[si] converted (element indices of the packed and the source type). */
static TS_ALWAYS_INLINE void convert_one(ts_pack_kind kind, void *dst, size_t di,
                                         const void *src, size_t si)
{
    switch (kind) {
    case TS_PACK_F32: ((float *)dst)[di] = ((const float *)src)[si]; return;
    case TS_PACK_F32_BF16: ((float *)dst)[di] = bf16_rounded(((const float *)src)[si]); return;
    case TS_PACK_BF16: ((uint16_t *)dst)[di] = f32_to_bf16(((const float *)src)[si]); return;
    case TS_PACK_S8: ((int8_t *)dst)[di] = ((const int8_t *)src)[si]; return;
    case TS_PACK_S16: ((int16_t *)dst)[di] = ((const int8_t *)src)[si]; return;
    case TS_PACK_U16: ((int16_t *)dst)[di] = ((const uint8_t *)src)[si]; return;
    case TS_PACK_F16: ((uint16_t *)dst)[di] = ((const uint16_t *)src)[si]; return;
    case TS_PACK_F32_F16: ((float *)dst)[di] = ts_f16_to_f32(((const uint16_t *)src)[si]); return;
    case TS_PACK_U8_S8:   /* a - 128: bit 7 flipped, as int8 */
        ((uint8_t *)dst)[di] = (uint8_t)(((const uint8_t *)src)[si] ^ 0x80u);
        return;
    }
}



/* The element-wise rest of a k-major (lp 1) panel: k_end..K-1 of rows 0..r0-1 (the vector
 * loops did k 0..k_end-1 of those), then every k of rows r0..rows-1. */
static TS_ALWAYS_INLINE void convert_rest(ts_pack_kind kind, void *dst, const void *src,
                                          size_t width, size_t row_stride, size_t K, size_t r0,
                                          size_t rows, size_t k_end)
{
    for (size_t r = 0; r < r0; ++r)
        for (size_t k = k_end; k < K; ++k)
            convert_one(kind, dst, k * width + r, src, r * row_stride + k);
    for (; r0 < rows; ++r0)
        for (size_t k = 0; k < K; ++k)
            convert_one(kind, dst, k * width + r0, src, r0 * row_stride + k);
}

size_t ts_pack_elem_bytes(ts_pack_kind kind)
{
    return packed_size(kind);
}

size_t ts_source_elem_bytes(ts_pack_kind kind)
{
    return source_size(kind);
}

int ts_panel_bytes(const ts_path *path, size_t width, size_t K, size_t *out)
{
    size_t k_padded, elems;
    if (ts_size_round_up(K, path->lp, &k_padded) || ts_size_mul(k_padded, width, &elems)
        || ts_size_mul(elems, packed_size(path->pack), out)) {
        *out = 0;
        return -1;
    }
    return 0;
}

/* ---- NEON row packers (used by the panel packers below) ------------------------------------ */
#if TS_HAVE_NEON
/* ---- lp = 1 with contiguous k (A panels of fmla / smlal): ksteps are one k of every row ----
 * Rows are taken 4 at a time and transposed in registers (4 rows x 4 or 8 k); the rows past
 * the last multiple of 4 and the k past the last whole vector go element by element. */

/* The low (high = 0) or high 64-bit halves of a and b, in that order (ZIP1 / ZIP2 .2D). */
static TS_ALWAYS_INLINE float32x4_t zip_halves(float32x4_t a, float32x4_t b, int high)
{
    const float64x2_t a64 = vreinterpretq_f64_f32(a), b64 = vreinterpretq_f64_f32(b);
    return vreinterpretq_f32_f64(high ? vzip2q_f64(a64, b64) : vzip1q_f64(a64, b64));
}

/* 4 rows x 4 k of fp32 (rows r[0..3]) -> k i's 4 rows at dst + i * width. */
static TS_ALWAYS_INLINE void transpose_f32_4x4(const float32x4_t r[4], float *dst, size_t width)
{
    const float32x4_t t0 = vtrn1q_f32(r[0], r[1]), t1 = vtrn2q_f32(r[0], r[1]);
    const float32x4_t t2 = vtrn1q_f32(r[2], r[3]), t3 = vtrn2q_f32(r[2], r[3]);
    vst1q_f32(dst, zip_halves(t0, t2, 0));
    vst1q_f32(dst + width, zip_halves(t1, t3, 0));
    vst1q_f32(dst + 2 * width, zip_halves(t0, t2, 1));
    vst1q_f32(dst + 3 * width, zip_halves(t1, t3, 1));
}

/* 4 k of one row as fp32 (kinds with 4-byte packed elements): as given (F32), rounded to bf16
 * (F32_BF16), or converted from fp16 (F32_F16: FCVTL, exact, a NaN made quiet like
 * ts_f16_to_f32). */
static TS_ALWAYS_INLINE float32x4_t load_f32_x4(ts_pack_kind kind, const unsigned char *p)
{
    if (kind == TS_PACK_F32_F16)
        return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(const void *)p)));
    const float32x4_t x = vld1q_f32((const float *)(const void *)p);
    return kind == TS_PACK_F32_BF16 ? bf16_rounded_x4(x) : x;
}

/* Rows a, b (4 k each) -> the 64-bit pairs (a, b) of k 0, 1 (low) and 2, 3 (high). */
static TS_ALWAYS_INLINE float64x2_t pair_rows(float32x4_t a, float32x4_t b, int high)
{
    return vreinterpretq_f64_f32(high ? vzip2q_f32(a, b) : vzip1q_f32(a, b));
}

/* 4-byte rows (k contiguous: fp32, bf16-rounded fp32, fp16 widened to fp32) into an lp = 1
 * panel of `width` rows. A full panel of 8 rows: 4 k at a time, rows zipped in pairs and
 * stored by ST4 (.2D) as whole k-steps, 4 of them in two 64-byte stores; otherwise 4 rows x
 * 4 k transposed into one 16-byte store per k. The rest element by element. */
static TS_ALWAYS_INLINE void pack_rows_lp1_32(ts_pack_kind kind, float *dst, const void *source,
                                              size_t rows, size_t width, size_t K,
                                              size_t row_stride)
{
    const unsigned char *src = (const unsigned char *)source;
    const size_t ld = row_stride * source_size(kind);   /* row stride in bytes */
    const size_t sb = source_size(kind), k_end = K / 4 * 4;
    size_t r0 = 0;
    if (width == 8 && rows == 8) {
        for (size_t k = 0; k < k_end; k += 4) {
            const unsigned char *p = src + k * sb;
            const float32x4_t r0_ = load_f32_x4(kind, p), r1_ = load_f32_x4(kind, p + ld);
            const float32x4_t r2_ = load_f32_x4(kind, p + 2 * ld), r3_ = load_f32_x4(kind, p + 3 * ld);
            const float32x4_t r4_ = load_f32_x4(kind, p + 4 * ld), r5_ = load_f32_x4(kind, p + 5 * ld);
            const float32x4_t r6_ = load_f32_x4(kind, p + 6 * ld), r7_ = load_f32_x4(kind, p + 7 * ld);
            const float64x2x4_t lo = { { pair_rows(r0_, r1_, 0), pair_rows(r2_, r3_, 0),
                                         pair_rows(r4_, r5_, 0), pair_rows(r6_, r7_, 0) } };
            const float64x2x4_t hi = { { pair_rows(r0_, r1_, 1), pair_rows(r2_, r3_, 1),
                                         pair_rows(r4_, r5_, 1), pair_rows(r6_, r7_, 1) } };
            vst4q_f64(ts_region(dst, k * 8 * sizeof(float)), lo);           /* k, k+1 */
            vst4q_f64(ts_region(dst, (k * 8 + 16) * sizeof(float)), hi);    /* k+2, k+3 */
        }
        r0 = 8;
    }
    for (; r0 + 4 <= rows; r0 += 4) {
        const unsigned char *row = src + r0 * ld;
        for (size_t k = 0; k < k_end; k += 4) {
            const unsigned char *p = row + k * sb;
            const float32x4_t r[4] = { load_f32_x4(kind, p), load_f32_x4(kind, p + ld),
                                       load_f32_x4(kind, p + 2 * ld), load_f32_x4(kind, p + 3 * ld) };
            transpose_f32_4x4(r, dst + k * width + r0, width);
        }
    }
    /* the k past the last multiple of 4 of the rows done so far, then the remaining rows */
    convert_rest(kind, dst, src, width, row_stride, K, r0, rows, k_end);
}

/* 8 source elements at p as 16-bit lanes: int8 sign-extended (S16), uint8 zero-extended
 * (U16), fp16 bits as given (F16). */
static TS_ALWAYS_INLINE int16x8_t widen_x8(ts_pack_kind kind, const unsigned char *p)
{
    return kind == TS_PACK_F16 ? vreinterpretq_s16_u16(vld1q_u16((const uint16_t *)(const void *)p))
           : kind == TS_PACK_U16 ? vreinterpretq_s16_u16(vmovl_u8(vld1_u8(p)))
                                 : vmovl_s8(vld1_s8((const int8_t *)p));
}

/* 16-bit units: the 32-bit (ZIP .4S) and 64-bit (ZIP .2D) interleaves of a and b. */
static TS_ALWAYS_INLINE int16x8_t zip32_s16(int16x8_t a, int16x8_t b, int high)
{
    const int32x4_t a32 = vreinterpretq_s32_s16(a), b32 = vreinterpretq_s32_s16(b);
    return vreinterpretq_s16_s32(high ? vzip2q_s32(a32, b32) : vzip1q_s32(a32, b32));
}

static TS_ALWAYS_INLINE int16x8_t zip64_s16(int16x8_t a, int16x8_t b, int high)
{
    const int64x2_t a64 = vreinterpretq_s64_s16(a), b64 = vreinterpretq_s64_s16(b);
    return vreinterpretq_s16_s64(high ? vzip2q_s64(a64, b64) : vzip1q_s64(a64, b64));
}

/* 4 rows x 8 k of 16-bit values (r0..r3, k contiguous) -> q[j]: k 2j and 2j+1 of the 4 rows
 * (rows 0-3 of k 2j in the low half). */
static TS_ALWAYS_INLINE void transpose_s16_4x8(int16x8_t r0, int16x8_t r1, int16x8_t r2,
                                               int16x8_t r3, int16x8_t q[4])
{
    const int16x8_t a0 = vzip1q_s16(r0, r1), a1 = vzip2q_s16(r0, r1);   /* rows 0|1: k0-3, k4-7 */
    const int16x8_t a2 = vzip1q_s16(r2, r3), a3 = vzip2q_s16(r2, r3);   /* rows 2|3 */
    q[0] = zip32_s16(a0, a2, 0);
    q[1] = zip32_s16(a0, a2, 1);
    q[2] = zip32_s16(a1, a3, 0);
    q[3] = zip32_s16(a1, a3, 1);
}

/* Two consecutive k of 8 rows (lo: rows 0-3, hi: rows 4-7, each k k+1 as low | high half)
 * -> k at d, k+1 at d + width: one 16-byte store each. */
static TS_ALWAYS_INLINE void store_k_pair_8(int16_t *d, size_t width, int16x8_t lo, int16x8_t hi)
{
    vst1q_s16(d, zip64_s16(lo, hi, 0));
    vst1q_s16(d + width, zip64_s16(lo, hi, 1));
}

/* Two consecutive k of 4 rows (k | k+1 halves) -> k at d, k+1 at d + width. */
static TS_ALWAYS_INLINE void store_k_pair_4(int16_t *d, size_t width, int16x8_t q)
{
    vst1_s16(d, vget_low_s16(q));
    vst1_s16(d + width, vget_high_s16(q));
}

/* The 4 rows at p (row stride ld bytes), 8 k, transposed into k pairs (transpose_s16_4x8). */
static TS_ALWAYS_INLINE void rows4_k_pairs(ts_pack_kind kind, const unsigned char *p, size_t ld,
                                           int16x8_t q[4])
{
    transpose_s16_4x8(widen_x8(kind, p), widen_x8(kind, p + ld), widen_x8(kind, p + 2 * ld),
                      widen_x8(kind, p + 3 * ld), q);
}

/* k pairs j of 2, 3 or 4 groups of 4 rows -> 2 whole k-steps of a panel of 8, 12 or 16 rows
 * at d: ST2 / ST3 / ST4 (.2D) interleave the groups' 8-byte halves (k 2j, then 2j+1). */
static TS_ALWAYS_INLINE void store_k_pair_whole(int16_t *d, int groups, const int16x8_t *a,
                                                const int16x8_t *b, const int16x8_t *c,
                                                const int16x8_t *e, int j)
{
    int64_t *p = ts_region(d, 0);
    if (groups == 2) {
        const int64x2x2_t v = { { vreinterpretq_s64_s16(a[j]), vreinterpretq_s64_s16(b[j]) } };
        vst2q_s64(p, v);
    } else if (groups == 3) {
        const int64x2x3_t v = { { vreinterpretq_s64_s16(a[j]), vreinterpretq_s64_s16(b[j]),
                                  vreinterpretq_s64_s16(c[j]) } };
        vst3q_s64(p, v);
    } else {
        const int64x2x4_t v = { { vreinterpretq_s64_s16(a[j]), vreinterpretq_s64_s16(b[j]),
                                  vreinterpretq_s64_s16(c[j]), vreinterpretq_s64_s16(e[j]) } };
        vst4q_s64(p, v);
    }
}

/* A full panel of 4 * groups rows (8, 12 or 16) of 16-bit values over k 0 .. k_end - 1 (a
 * multiple of 8): per 8 k, each group of 4 rows transposed into k pairs, then one ST2 / ST3 /
 * ST4 per 2 k-steps. */
static TS_ALWAYS_INLINE void pack_whole_16(ts_pack_kind kind, int16_t *dst,
                                           const unsigned char *src, size_t ld, size_t sb,
                                           size_t k_end, int groups)
{
    const size_t width = 4 * (size_t)groups;
    for (size_t k = 0; k < k_end; k += 8) {
        const unsigned char *p = src + k * sb;
        int16x8_t a[4], b[4], c[4], e[4];
        rows4_k_pairs(kind, p, ld, a);
        rows4_k_pairs(kind, p + 4 * ld, ld, b);
        if (groups > 2)
            rows4_k_pairs(kind, p + 8 * ld, ld, c);
        if (groups > 3)
            rows4_k_pairs(kind, p + 12 * ld, ld, e);
        int16_t *d = dst + k * width;
        store_k_pair_whole(d, groups, a, b, c, e, 0);
        store_k_pair_whole(d + 2 * width, groups, a, b, c, e, 1);
        store_k_pair_whole(d + 4 * width, groups, a, b, c, e, 2);
        store_k_pair_whole(d + 6 * width, groups, a, b, c, e, 3);
    }
}

/* 8-bit rows (S16 / U16, widened) or fp16 rows (F16) with k contiguous into an lp = 1 16-bit
 * panel, 8 k at a time: 8 rows transposed (16-, 32-, then 64-bit zips) into one 16-byte store
 * per k, then 4 rows into one 8-byte store per k; the rest element by element. */
static TS_ALWAYS_INLINE void pack_rows_lp1_widened(ts_pack_kind kind, int16_t *dst,
                                                   const void *source, size_t rows,
                                                   size_t width, size_t K, size_t row_stride)
{
    const unsigned char *src = (const unsigned char *)source;
    const size_t sb = kind == TS_PACK_F16 ? 2 : 1;   /* source element bytes */
    const size_t ld = row_stride * sb;               /* row stride in bytes */
    const size_t k_end = K / 8 * 8;
    size_t r0 = 0;
    if (rows == width && (width == 8 || width == 12 || width == 16)) {   /* whole k-steps */
        if (width == 8)
            pack_whole_16(kind, dst, src, ld, sb, k_end, 2);
        else if (width == 12)
            pack_whole_16(kind, dst, src, ld, sb, k_end, 3);
        else
            pack_whole_16(kind, dst, src, ld, sb, k_end, 4);
        r0 = rows;
    }
    for (; r0 + 8 <= rows; r0 += 8) {
        const unsigned char *row = src + r0 * ld;
        for (size_t k = 0; k < k_end; k += 8) {
            const unsigned char *p = row + k * sb;
            int16x8_t lo[4], hi[4];   /* rows 0-3 / 4-7, k pairs 0|1, 2|3, 4|5, 6|7 */
            transpose_s16_4x8(widen_x8(kind, p), widen_x8(kind, p + ld),
                              widen_x8(kind, p + 2 * ld), widen_x8(kind, p + 3 * ld), lo);
            transpose_s16_4x8(widen_x8(kind, p + 4 * ld), widen_x8(kind, p + 5 * ld),
                              widen_x8(kind, p + 6 * ld), widen_x8(kind, p + 7 * ld), hi);
            int16_t *d = dst + k * width + r0;
            store_k_pair_8(d, width, lo[0], hi[0]);
            store_k_pair_8(d + 2 * width, width, lo[1], hi[1]);
            store_k_pair_8(d + 4 * width, width, lo[2], hi[2]);
            store_k_pair_8(d + 6 * width, width, lo[3], hi[3]);
        }
    }
    for (; r0 + 4 <= rows; r0 += 4) {
        const unsigned char *row = src + r0 * ld;
        for (size_t k = 0; k < k_end; k += 8) {
            const unsigned char *p = row + k * sb;
            int16x8_t q[4];
            transpose_s16_4x8(widen_x8(kind, p), widen_x8(kind, p + ld),
                              widen_x8(kind, p + 2 * ld), widen_x8(kind, p + 3 * ld), q);
            int16_t *d = dst + k * width + r0;
            store_k_pair_4(d, width, q[0]);
            store_k_pair_4(d + 2 * width, width, q[1]);
            store_k_pair_4(d + 4 * width, width, q[2]);
            store_k_pair_4(d + 6 * width, width, q[3]);
        }
    }
    /* the k past the last multiple of 8 of the rows done so far, then the remaining rows */
    convert_rest(kind, dst, src, width, row_stride, K, r0, rows, k_end);
}

/* ---- rows with contiguous k whose k-steps are 8 or 4 bytes (A panels of smmla / sdot /
 * bfmmla, conv filters) --------------------------------------------------------------------------
 * 16 bytes of packed values of a row are 2 (resp. 4) k-steps: rows are taken in pairs (resp.
 * quads) and interleaved in registers so each store writes one k-step's slots of those rows
 * (ZIP of 64-bit, resp. 32-bit then 64-bit units). Each returns how many rows it packed, each
 * over k 0 .. *k_done - 1; the caller packs the rest. */

/* Rows a, b as two 16-byte vectors of 2 k-steps each -> k-step 0 at d, k-step 1 at d + step_bytes. */
static inline void store_row_pair(unsigned char *d, size_t step_bytes, int64x2_t a, int64x2_t b)
{
    vst1q_u8(d, vreinterpretq_u8_s64(vzip1q_s64(a, b)));
    vst1q_u8(d + step_bytes, vreinterpretq_u8_s64(vzip2q_s64(a, b)));
}

/* bf16, lp 4: a k-step of a row pair is 4 values of each row, i.e. the 8 lanes of one
 * conversion (row a's 4 fp32 in lanes 0-3, row b's in 4-7); 16 k per row at a time (4
 * k-steps), then 8. */
static TS_ALWAYS_INLINE size_t pack_rows_bf16_paired_as(int hw, uint16_t *dst, const float *src,
                                                        size_t rows, size_t step, size_t K,
                                                        size_t row_stride, size_t *k_done)
{
    const size_t k_end = K / 8 * 8;
    size_t r = 0;
    for (; r + 2 <= rows; r += 2) {
        const float *a = src + r * row_stride, *b = a + row_stride;
        uint16_t *d = dst + r * 4;
        size_t k = 0;
        for (; k + 16 <= k_end; k += 16, d += 4 * step) {
            const uint16x8x4_t out = bf16_x8x4(hw, vld1q_f32_x4(a + k), vld1q_f32_x4(b + k));
            vst1q_u16(d, out.val[0]);
            vst1q_u16(d + step, out.val[1]);
            vst1q_u16(d + 2 * step, out.val[2]);
            vst1q_u16(d + 3 * step, out.val[3]);
        }
        for (; k < k_end; k += 8, d += 2 * step) {
            vst1q_u16(d, bf16_bits_x8(vld1q_f32(a + k), vld1q_f32(b + k)));
            vst1q_u16(d + step, bf16_bits_x8(vld1q_f32(a + k + 4), vld1q_f32(b + k + 4)));
        }
    }
    *k_done = k_end;
    return r;
}

static size_t pack_rows_bf16_paired(int hw, uint16_t *dst, const float *src, size_t rows,
                                    size_t step, size_t K, size_t row_stride, size_t *k_done)
{
    return hw
           ? pack_rows_bf16_paired_as(1, dst, src, rows, step, K, row_stride, k_done)
           : pack_rows_bf16_paired_as(0, dst, src, rows, step, K, row_stride, k_done);
}

/* Four rows' 16 bytes of 4-byte k-steps (q[i]: row i, k-steps 0-3) -> k-step j's 16 bytes
 * (rows 0-3) at d + j * step_bytes: the 4 x 4 transpose of 32-bit units. */
static TS_ALWAYS_INLINE void store_quad_steps(unsigned char *d, size_t step_bytes,
                                              const int32x4_t q[4])
{
    const int64x2_t t0 = vreinterpretq_s64_s32(vzip1q_s32(q[0], q[1]));   /* k-steps 0, 1 */
    const int64x2_t t1 = vreinterpretq_s64_s32(vzip2q_s32(q[0], q[1]));   /* k-steps 2, 3 */
    const int64x2_t t2 = vreinterpretq_s64_s32(vzip1q_s32(q[2], q[3]));
    const int64x2_t t3 = vreinterpretq_s64_s32(vzip2q_s32(q[2], q[3]));
    vst1q_u8(d, vreinterpretq_u8_s64(vzip1q_s64(t0, t2)));
    vst1q_u8(d + step_bytes, vreinterpretq_u8_s64(vzip2q_s64(t0, t2)));
    vst1q_u8(d + 2 * step_bytes, vreinterpretq_u8_s64(vzip1q_s64(t1, t3)));
    vst1q_u8(d + 3 * step_bytes, vreinterpretq_u8_s64(vzip2q_s64(t1, t3)));
}

/* 8 values of a row from k as 16 packed bytes: bf16 bits of fp32 (BF16), or fp16 as given. */
static TS_ALWAYS_INLINE int32x4_t load_16bit_x8(ts_pack_kind kind, const void *row, size_t k)
{
    if (kind == TS_PACK_BF16) {
        const float *p = (const float *)row + k;
        return vreinterpretq_s32_u16(bf16_bits_x8(vld1q_f32(p), vld1q_f32(p + 4)));
    }
    return vreinterpretq_s32_u16(vld1q_u16((const uint16_t *)row + k));
}

/* bf16 (from fp32) or fp16, lp 2 (the SME bfmopa / widening fmopa panels): a k-step of a row
 * is 4 bytes, as int8's with lp 4; rows in quads, 8 values (4 k-steps) of each at a time. */
static TS_ALWAYS_INLINE size_t pack_rows_16bit_lp2(ts_pack_kind kind, uint16_t *dst,
                                                   const void *src, size_t rows, size_t step,
                                                   size_t K, size_t row_stride, size_t *k_done)
{
    const size_t k_end = K / 8 * 8, sb = kind == TS_PACK_BF16 ? 4 : 2;
    const unsigned char *base = (const unsigned char *)src;
    size_t r = 0;
    for (; r + 4 <= rows; r += 4) {
        const unsigned char *row = base + r * row_stride * sb;
        uint16_t *d = dst + r * 2;
        for (size_t k = 0; k < k_end; k += 8, d += 4 * step) {
            const int32x4_t q[4] = { load_16bit_x8(kind, row, k),
                                     load_16bit_x8(kind, row + row_stride * sb, k),
                                     load_16bit_x8(kind, row + 2 * row_stride * sb, k),
                                     load_16bit_x8(kind, row + 3 * row_stride * sb, k) };
            store_quad_steps((unsigned char *)d, step * 2, q);
        }
    }
    *k_done = k_end;
    return r;
}

/* 16 bytes at p, bit 7 flipped when `flip` (TS_PACK_U8_S8: uint8 a as int8 a - 128; a
 * constant at every call, so the plain copy has no EOR). */
static TS_ALWAYS_INLINE int8x16_t load_s8_x16(const int8_t *p, int flip)
{
    const int8x16_t v = vld1q_s8(p);
    return flip ? veorq_s8(v, vdupq_n_s8(INT8_MIN)) : v;
}

/* int8 (uint8 with bit 7 flipped when `flip`), lp 8 (pairs) or 4 (quads). */
static TS_ALWAYS_INLINE size_t pack_rows_s8_grouped(int8_t *dst, const int8_t *src,
                                                       size_t rows, size_t step, size_t K,
                                                       size_t lp, size_t row_stride,
                                                       int flip, size_t *k_done)
{
    const size_t group = lp == 8 ? 2 : 4, k_end = K / 16 * 16;
    size_t r = 0;
    for (; r + group <= rows; r += group) {
        const int8_t *row = src + r * row_stride;
        int8_t *d = dst + r * lp;
        size_t k = 0;
        /* lp 8: 32 k of the pair per step, the four loads first: an in-order core waits for
         * one load latency per 64 bytes instead of per 32 (the bench's Cortex-A510 model: 8.0
         * -> 5.5 cycles per 32 bytes; Neoverse N2 / V1 unchanged) */
        for (; lp == 8 && k + 32 <= k_end; k += 32, d += 4 * step) {
            const int8x16_t a0 = load_s8_x16(row + k, flip);
            const int8x16_t b0 = load_s8_x16(row + row_stride + k, flip);
            const int8x16_t a1 = load_s8_x16(row + k + 16, flip);
            const int8x16_t b1 = load_s8_x16(row + row_stride + k + 16, flip);
            store_row_pair((unsigned char *)d, step, vreinterpretq_s64_s8(a0),
                           vreinterpretq_s64_s8(b0));
            store_row_pair((unsigned char *)d + 2 * step, step, vreinterpretq_s64_s8(a1),
                           vreinterpretq_s64_s8(b1));
        }
        for (; k < k_end; k += 16, d += 16 / lp * step) {
            if (lp == 8) {
                store_row_pair((unsigned char *)d, step,
                               vreinterpretq_s64_s8(load_s8_x16(row + k, flip)),
                               vreinterpretq_s64_s8(load_s8_x16(row + row_stride + k, flip)));
            } else {
                const int32x4_t q[4] = {
                    vreinterpretq_s32_s8(load_s8_x16(row + k, flip)),
                    vreinterpretq_s32_s8(load_s8_x16(row + row_stride + k, flip)),
                    vreinterpretq_s32_s8(load_s8_x16(row + 2 * row_stride + k, flip)),
                    vreinterpretq_s32_s8(load_s8_x16(row + 3 * row_stride + k, flip)) };
                store_quad_steps((unsigned char *)d, step, q);
            }
        }
    }
    *k_done = k_end;
    return r;
}
#endif /* TS_HAVE_NEON */

/* ---- panel packers: one set of loops for every conversion --------------------------------------
 * Padding (rows past `rows`, k past K) is zeroed first, then the source is read in the order
 * its memory runs: row by row when k is contiguous (A, conv filter), k by k when the rows are
 * (row-major B), so every source byte is read once and in sequence.
 * Each function takes the conversion `kind` (and often lp) as an argument and is always
 * inlined, so each call with constant arguments compiles to code specialised for it:
 * pack_panel_from instantiates pack_panel_kind once per kind. A run converter (n consecutive
 * elements; NEON for whole vectors) serves the lp values of a row and the rows of one k when
 * lp = 1. */

/* n consecutive elements: whole vectors with NEON where the conversion has a vector form, the
 * rest element by element (8-bit as given: memcpy). */
static TS_ALWAYS_INLINE void convert_run(ts_pack_kind kind, void *dst, const void *src, size_t n)
{
    size_t i = 0;
    if (kind == TS_PACK_S8) {
        if (n != 0)   /* an empty run may come from a NULL source (K = 0): memcpy wants non-NULL */
            memcpy(dst, src, n);
        return;
    }
#if TS_HAVE_NEON
    if (kind == TS_PACK_F16) {   /* whole vectors inline: runs are one k-step (16-32 bytes) */
        uint16_t *d = (uint16_t *)dst;
        const uint16_t *s = (const uint16_t *)src;
        for (; i + 8 <= n; i += 8)
            vst1q_u16(d + i, vld1q_u16(s + i));
    } else if (kind == TS_PACK_F32) {   /* 8 at a time (LDP / STP Q): a B k-step of the SME
                                            * paths is 2 S = 8 to 128 values */
        float *d = (float *)dst;
        const float *s = (const float *)src;
        for (; i + 8 <= n; i += 8) {
            const float32x4_t lo = vld1q_f32(s + i), hi = vld1q_f32(s + i + 4);
            vst1q_f32(d + i, lo);
            vst1q_f32(d + i + 4, hi);
        }
        for (; i + 4 <= n; i += 4)
            vst1q_f32(d + i, vld1q_f32(s + i));
    } else if (kind == TS_PACK_F32_BF16) {
        float *d = (float *)dst;
        const float *s = (const float *)src;
        for (; i + 8 <= n; i += 8)
            bf16_rounded_8(d + i, s + i);
        for (; i + 4 <= n; i += 4)
            vst1q_f32(d + i, bf16_rounded_x4(vld1q_f32(s + i)));
    } else if (kind == TS_PACK_BF16) {
        uint16_t *d = (uint16_t *)dst;
        const float *s = (const float *)src;
        for (; i + 8 <= n; i += 8)
            vst1q_u16(d + i, bf16_bits_x8(vld1q_f32(s + i), vld1q_f32(s + i + 4)));
        for (; i + 4 <= n; i += 4)
            vst1_u16(d + i, bf16_bits_x4(vld1q_f32(s + i)));
    } else if (kind == TS_PACK_S16 || kind == TS_PACK_U16) {
        int16_t *d = (int16_t *)dst;
        for (; i + 8 <= n; i += 8)
            vst1q_s16(d + i, widen_x8(kind, (const unsigned char *)src + i));
    } else if (kind == TS_PACK_U8_S8) {   /* a - 128: bit 7 flipped */
        uint8_t *d = (uint8_t *)dst;
        const uint8_t *s = (const uint8_t *)src;
        for (; i + 16 <= n; i += 16)
            vst1q_u8(d + i, veorq_u8(vld1q_u8(s + i), vdupq_n_u8(0x80)));
    } else if (kind == TS_PACK_F32_F16) {   /* FCVTL: exact, NaN quieted like ts_f16_to_f32 */
        float *d = (float *)dst;
        const uint16_t *s = (const uint16_t *)src;
        for (; i + 4 <= n; i += 4)
            vst1q_f32(d + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(s + i))));
    }
#endif
    for (; i < n; ++i)
        convert_one(kind, dst, i, src, i);
}

/* Rows with contiguous k: each k-step's lp values of a row are one run. */
static TS_ALWAYS_INLINE void pack_rows(ts_pack_kind kind, void *dst, const void *src,
                                       size_t rows, size_t step, size_t K, size_t lp,
                                       size_t row_stride, int bfcvt)
{
    (void)bfcvt;   /* bf16 lp 4 only (pack_rows_bf16_paired) */
    const size_t db = packed_size(kind), sb = source_size(kind);
    size_t grouped = 0, k_grouped = 0;   /* rows, and their k, packed by a NEON path */
#if TS_HAVE_NEON
    if ((kind == TS_PACK_S8 || kind == TS_PACK_U8_S8) && (lp == 4 || lp == 8))
        grouped = pack_rows_s8_grouped((int8_t *)dst, (const int8_t *)src, rows, step, K, lp,
                                       row_stride, kind == TS_PACK_U8_S8, &k_grouped);
    else if (kind == TS_PACK_BF16 && lp == 4)
        grouped = pack_rows_bf16_paired(bfcvt, (uint16_t *)dst, (const float *)src, rows, step, K,
                                        row_stride, &k_grouped);
    else if ((kind == TS_PACK_BF16 || kind == TS_PACK_F16) && lp == 2)
        grouped = pack_rows_16bit_lp2(kind, (uint16_t *)dst, src, rows, step, K, row_stride,
                                      &k_grouped);
#endif
    /* the rows a NEON path packed whole need nothing more */
    for (size_t r = k_grouped == K ? grouped : 0; r < rows; ++r) {
        const size_t k_begin = r < grouped ? k_grouped : 0;
        const unsigned char *row = (const unsigned char *)src + r * row_stride * sb;
        unsigned char *d = (unsigned char *)dst + (r * lp + k_begin / lp * step) * db;
        size_t k0 = k_begin;
        for (; k0 + lp <= K; k0 += lp, d += step * db)
            convert_run(kind, d, row + k0 * sb, lp);
        convert_run(kind, d, row + k0 * sb, K - k0);
    }
}

#if TS_HAVE_NEON
/* `count` runs of `bytes` bytes, src + i * src_stride -> dst + i * dst_stride: 64, 32 and 16
 * bytes per vector move, the rest by memcpy. */
static TS_ALWAYS_INLINE void pack_copy_runs_of(unsigned char *dst, size_t dst_stride,
                                          const unsigned char *src, size_t src_stride,
                                          size_t bytes, size_t count)
{
    for (size_t n = 0; n < count; ++n, dst += dst_stride, src += src_stride) {
        size_t i = 0;
        for (; i + 64 <= bytes; i += 64) {     /* long runs (conv input rows): fewer loop steps */
            const uint8x16_t a = vld1q_u8(src + i), b = vld1q_u8(src + i + 16);
            const uint8x16_t c = vld1q_u8(src + i + 32), d = vld1q_u8(src + i + 48);
            vst1q_u8(dst + i, a);
            vst1q_u8(dst + i + 16, b);
            vst1q_u8(dst + i + 32, c);
            vst1q_u8(dst + i + 48, d);
        }
        if (i + 32 <= bytes) {
            const uint8x16_t a = vld1q_u8(src + i), b = vld1q_u8(src + i + 16);
            vst1q_u8(dst + i, a);
            vst1q_u8(dst + i + 16, b);
            i += 32;
        }
        if (i + 16 <= bytes) {
            vst1q_u8(dst + i, vld1q_u8(src + i));
            i += 16;
        }
        if (i < bytes)
            memcpy(dst + i, src + i, bytes - i);
    }
}

/* pack_copy_runs_of with the run sizes of the full fmla B panels (fp16 hp 12 / 16: 24 / 32 bytes;
 * fp32 hp 12 / 16: 48 / 64) as constants, so each run is one straight block of moves. */
static void pack_copy_runs(unsigned char *dst, size_t dst_stride, const unsigned char *src,
                      size_t src_stride, size_t bytes, size_t count)
{
    switch (bytes) {
    case 24: pack_copy_runs_of(dst, dst_stride, src, src_stride, 24, count); return;
    case 32: pack_copy_runs_of(dst, dst_stride, src, src_stride, 32, count); return;
    case 48: pack_copy_runs_of(dst, dst_stride, src, src_stride, 48, count); return;
    case 64: pack_copy_runs_of(dst, dst_stride, src, src_stride, 64, count); return;
    default: pack_copy_runs_of(dst, dst_stride, src, src_stride, bytes, count); return;
    }
}
#endif

void ts_pack_copy_runs(void *dst, size_t dst_stride, const void *src, size_t src_stride,
                       size_t bytes, size_t count)
{
#if TS_HAVE_NEON
    pack_copy_runs_of((unsigned char *)dst, dst_stride, (const unsigned char *)src, src_stride,
                      bytes, count);
#else
    for (size_t n = 0; n < count; ++n)
        memcpy((unsigned char *)dst + n * dst_stride, (const unsigned char *)src + n * src_stride,
               bytes);
#endif
}

/* `count` runs of `bytes` bytes of `value`, the run i at dst + i * dst_stride (the pad seams of
 * the conv's padded input copy): with NEON 64 and 16 bytes per vector store group, a last
 * 16-byte store overlapping the one before it, runs under 16 bytes by 8/4/2/1-byte stores (no
 * libc call when optimised, so the fill is packing code like the copy beside it). */
void ts_pack_fill_runs(void *dst, size_t dst_stride, unsigned char value, size_t bytes,
                       size_t count)
{
    unsigned char *d = (unsigned char *)dst;
#if TS_HAVE_NEON
    const uint8x16_t v = vdupq_n_u8(value);
    for (size_t n = 0; n < count; ++n, d += dst_stride) {
        size_t i = 0;
        if (bytes >= 16) {
            for (; i + 64 <= bytes; i += 64) {
                vst1q_u8(d + i, v);
                vst1q_u8(d + i + 16, v);
                vst1q_u8(d + i + 32, v);
                vst1q_u8(d + i + 48, v);
            }
            for (; i + 16 <= bytes; i += 16)
                vst1q_u8(d + i, v);
            if (i < bytes)
                vst1q_u8(d + bytes - 16, v);            /* overlaps bytes already written */
            continue;
        }
        if (bytes & 8) {
            vst1_u8(d + i, vget_low_u8(v));
            i += 8;
        }
        /* 4 and 2 bytes through memcpy (a single unaligned str / strh): d + i has no alignment,
         * so storing through a uint32_t / uint16_t pointer would be undefined behaviour */
        if (bytes & 4) {
            const uint32_t word = 0x01010101u * value;
            memcpy(d + i, &word, sizeof word);
            i += 4;
        }
        if (bytes & 2) {
            const uint16_t half = (uint16_t)(0x0101u * value);
            memcpy(d + i, &half, sizeof half);
            i += 2;
        }
        if (bytes & 1)
            vst1_lane_u8(d + i, vget_low_u8(v), 0);
    }
#else
    for (size_t n = 0; n < count; ++n, d += dst_stride)
        memset(d, value, bytes);
#endif
}

/* k by k from k_begin on (the k-steps before it are already packed): when lp = 1 the rows of
 * one k are a run (row_stride 1). */
static TS_ALWAYS_INLINE void pack_columns(ts_pack_kind kind, void *dst, const void *src,
                                          size_t rows, size_t step, size_t K, size_t lp,
                                          size_t row_stride, size_t k_stride, size_t k_begin)
{
    const size_t db = packed_size(kind), sb = source_size(kind);
    unsigned char *kstep = (unsigned char *)dst + k_begin / lp * step * db;   /* k_begin: lp multiple */
#if TS_HAVE_NEON
    if (lp == 1 && row_stride == 1 && (kind == TS_PACK_F32 || kind == TS_PACK_F16)) {
        /* the rows of one k are a run of bytes copied as given (fp32 / fp16 B of fmla) */
        pack_copy_runs(kstep, step * db, (const unsigned char *)src + k_begin * k_stride * sb,
                  k_stride * sb, rows * db, K - k_begin);
        return;
    }
#endif
    for (size_t k = k_begin, i = 0; k < K; ++k) {
        const unsigned char *in = (const unsigned char *)src + k * k_stride * sb;
        unsigned char *d = kstep + i * db;                                   /* i = k % lp */
        if (lp == 1 && row_stride == 1) {
            convert_run(kind, d, in, rows);
        } else {
            for (size_t r = 0; r < rows; ++r)
                convert_one(kind, d, r * lp, in, r * row_stride);
        }
        if (++i == lp) {
            i = 0;
            kstep += step * db;
        }
    }
}

/* The panel from k-step k_begin / lp on (k_begin a multiple of lp; 0 for a whole panel). */
static TS_ALWAYS_INLINE void pack_panel_kind(ts_pack_kind kind, void *dst, const void *src,
                                             size_t rows, size_t width, size_t K, size_t lp,
                                             size_t row_stride, size_t k_stride, size_t k_begin,
                                             int bfcvt)
{
    const size_t db = packed_size(kind);
    size_t step = width * lp, ksteps = K / lp + (K % lp != 0);   /* elements per k-step */
    if (rows < width)
        memset(dst, 0, ksteps * step * db);
    else if (K % lp != 0)                   /* only the last k-step has k past K */
        memset((unsigned char *)dst + (ksteps - 1) * step * db, 0, step * db);
    if (k_stride == 1 && k_begin == 0) {
#if TS_HAVE_NEON
        if (lp == 1) {          /* a k-step is one k of every row: transposes */
            switch (kind) {
            case TS_PACK_F32: case TS_PACK_F32_BF16: case TS_PACK_F32_F16:
                pack_rows_lp1_32(kind, (float *)dst, src, rows, width, K, row_stride);
                return;
            case TS_PACK_S16: case TS_PACK_U16: case TS_PACK_F16:
                pack_rows_lp1_widened(kind, (int16_t *)dst, src, rows, width, K, row_stride);
                return;
            default:
                break;
            }
        }
#endif
        /* lp as a constant: each k-step's lp values become one fixed-size move */
        switch (lp) {
        case 1: pack_rows(kind, dst, src, rows, step, K, 1, row_stride, bfcvt); return;
        case 2: pack_rows(kind, dst, src, rows, step, K, 2, row_stride, bfcvt); return;
        case 4: pack_rows(kind, dst, src, rows, step, K, 4, row_stride, bfcvt); return;
        case 8: pack_rows(kind, dst, src, rows, step, K, 8, row_stride, bfcvt); return;
        default: pack_rows(kind, dst, src, rows, step, K, lp, row_stride, bfcvt); return;
        }
    }
    pack_columns(kind, dst, src, rows, step, K, lp, row_stride, k_stride, k_begin);
}


/* ---- B, row-major: whole k-steps of the full panels with NEON transposes ---------------------
 * Row-major B holds each k-step of a panel as lp rows of hp consecutive values; the panel
 * wants them column by column (lp values per column). These transpose lp rows x 16 columns
 * (int8; bf16: 8) at a time with ZIP1/ZIP2 (byte pairs, then 16-bit, then 32-bit units),
 * reading every row of B once, in order. The result comes in "groups" of 4 columns (hp is a
 * multiple of 4), each stored where its panel has it; a cursor walks the groups. */
#if TS_HAVE_NEON
/* Where the next group of 4 columns starts in k-step 0 (add s * kstep_bytes for k-step s). */
typedef struct {
    unsigned char *at;
    size_t column;        /* in its panel */
    size_t hp, group_bytes, panel_skip;
} group_cursor;

static group_cursor group_cursor_start(const ts_packed_b *b, size_t elem_bytes)
{
    group_cursor c;
    c.at = (unsigned char *)b->data;
    c.column = 0;
    c.hp = b->path->hp;
    c.group_bytes = 4 * b->path->lp * elem_bytes;
    c.panel_skip = b->panel_bytes - c.hp * b->path->lp * elem_bytes;   /* to the next panel */
    return c;
}

static inline unsigned char *next_group(group_cursor *c)
{
    unsigned char *at = c->at;
    c->at += c->group_bytes;
    c->column += 4;
    if (c->column == c->hp) {
        c->column = 0;
        c->at += c->panel_skip;
    }
    return at;
}

/* Group gi's k-step 0 when a panel holds `per_panel` groups (a constant where it is inlined:
 * a shift or a multiplication, no branch): what next_group returns for the gi-th group. */
static TS_ALWAYS_INLINE unsigned char *group_at(const ts_packed_b *b, size_t gi, size_t per_panel,
                                                size_t group_bytes)
{
    return (unsigned char *)b->data + gi / per_panel * b->panel_bytes
           + gi % per_panel * group_bytes;
}

/* lp (4 or 8) rows of `cols` (16, 8 or 4) int8 columns from src (row stride ld), zeros past
 * cols. */
static TS_ALWAYS_INLINE void load_s8_rows(int8x16_t r[8], const int8_t *src, size_t ld, size_t lp,
                                              size_t cols)
{
    for (size_t i = 0; i < lp; ++i) {
        const int8_t *p = src + i * ld;
        if (cols == 16)
            r[i] = vld1q_s8(p);
        else if (cols == 8)
            r[i] = vcombine_s8(vld1_s8(p), vdup_n_s8(0));
        else {
            int32_t four;
            memcpy(&four, p, 4);
            r[i] = vreinterpretq_s8_s32(vsetq_lane_s32(four, vdupq_n_s32(0), 0));
        }
    }
}

/* Rows r[0..7] of 16 columns -> per column its 8 values; groups of 4 columns (32 bytes) go to
 * dst[0 .. cols/4 - 1] + offset. */
static TS_ALWAYS_INLINE void transpose_s8_lp8(const int8x16_t r[8], unsigned char *const dst[4],
                                                  size_t offset, size_t cols)
{
    int16x8_t a[8];   /* a[2i] / a[2i+1]: rows 2i, 2i+1 interleaved, columns 0-7 / 8-15 */
    for (int i = 0; i < 4; ++i) {
        a[2 * i] = vreinterpretq_s16_s8(vzip1q_s8(r[2 * i], r[2 * i + 1]));
        a[2 * i + 1] = vreinterpretq_s16_s8(vzip2q_s8(r[2 * i], r[2 * i + 1]));
    }
    for (size_t half = 0; 8 * half < cols; ++half) {
        const int16x8_t *h = a + half;   /* h[0], h[2], h[4], h[6]: k pairs 01, 23, 45, 67 */
        const int32x4_t c0 = vreinterpretq_s32_s16(vzip1q_s16(h[0], h[2]));   /* k0-3, columns 0-3 */
        const int32x4_t c1 = vreinterpretq_s32_s16(vzip2q_s16(h[0], h[2]));   /* k0-3, columns 4-7 */
        const int32x4_t c2 = vreinterpretq_s32_s16(vzip1q_s16(h[4], h[6]));   /* k4-7, columns 0-3 */
        const int32x4_t c3 = vreinterpretq_s32_s16(vzip2q_s16(h[4], h[6]));   /* k4-7, columns 4-7 */
        int8_t *g0 = (int8_t *)(dst[2 * half] + offset);
        vst1q_s8(g0, vreinterpretq_s8_s32(vzip1q_s32(c0, c2)));        /* columns 0, 1 */
        vst1q_s8(g0 + 16, vreinterpretq_s8_s32(vzip2q_s32(c0, c2)));   /* columns 2, 3 */
        if (8 * half + 4 < cols) {
            int8_t *g1 = (int8_t *)(dst[2 * half + 1] + offset);
            vst1q_s8(g1, vreinterpretq_s8_s32(vzip1q_s32(c1, c3)));        /* columns 4, 5 */
            vst1q_s8(g1 + 16, vreinterpretq_s8_s32(vzip2q_s32(c1, c3)));   /* columns 6, 7 */
        }
    }
}

/* Rows r[0..3] of 16 columns -> per column its 4 values; groups of 4 columns (16 bytes) go to
 * dst[0 .. cols/4 - 1] + offset. */
static TS_ALWAYS_INLINE void transpose_s8_lp4(const int8x16_t r[4], unsigned char *const dst[4],
                                                  size_t offset, size_t cols)
{
    for (size_t half = 0; 8 * half < cols; ++half) {
        const int8x16_t k01 = half ? vzip2q_s8(r[0], r[1]) : vzip1q_s8(r[0], r[1]);
        const int8x16_t k23 = half ? vzip2q_s8(r[2], r[3]) : vzip1q_s8(r[2], r[3]);
        const int16x8_t a = vreinterpretq_s16_s8(k01), b = vreinterpretq_s16_s8(k23);
        vst1q_s8((int8_t *)(dst[2 * half] + offset), vreinterpretq_s8_s16(vzip1q_s16(a, b)));
        if (8 * half + 4 < cols)
            vst1q_s8((int8_t *)(dst[2 * half + 1] + offset), vreinterpretq_s8_s16(vzip2q_s16(a, b)));
    }
}

/* 16 columns x lp (8 or 4) rows of int8 from p (row stride ld) transposed into the 4 groups
 * dst[0..3] + offset: what load_s8_rows and transpose_s8_lp8 / lp4 do for 16 columns, with
 * every row and intermediate vector named (GCC -O2 copied the loops' arrays through the
 * stack: 4.4 instead of 0.3 instructions per byte). */
static TS_ALWAYS_INLINE void transpose_s8_16(const int8_t *p, size_t ld, size_t lp,
                                                 unsigned char *const dst[4], size_t offset)
{
    const int8x16_t r0 = vld1q_s8(p), r1 = vld1q_s8(p + ld);
    const int8x16_t r2 = vld1q_s8(p + 2 * ld), r3 = vld1q_s8(p + 3 * ld);
    if (lp == 4) {
        const int16x8_t lo01 = vreinterpretq_s16_s8(vzip1q_s8(r0, r1));   /* columns 0-7 */
        const int16x8_t lo23 = vreinterpretq_s16_s8(vzip1q_s8(r2, r3));
        const int16x8_t hi01 = vreinterpretq_s16_s8(vzip2q_s8(r0, r1));   /* columns 8-15 */
        const int16x8_t hi23 = vreinterpretq_s16_s8(vzip2q_s8(r2, r3));
        /* stored as bytes (the same 16 bytes): no alignment assumed of dst[g] + offset */
        vst1q_u8(dst[0] + offset, vreinterpretq_u8_s16(vzip1q_s16(lo01, lo23)));
        vst1q_u8(dst[1] + offset, vreinterpretq_u8_s16(vzip2q_s16(lo01, lo23)));
        vst1q_u8(dst[2] + offset, vreinterpretq_u8_s16(vzip1q_s16(hi01, hi23)));
        vst1q_u8(dst[3] + offset, vreinterpretq_u8_s16(vzip2q_s16(hi01, hi23)));
        return;
    }
    const int8x16_t r4 = vld1q_s8(p + 4 * ld), r5 = vld1q_s8(p + 5 * ld);
    const int8x16_t r6 = vld1q_s8(p + 6 * ld), r7 = vld1q_s8(p + 7 * ld);
    /* k pairs 01, 23, 45, 67 interleaved per column: columns 0-7, then 8-15 */
    const int16x8_t a01 = vreinterpretq_s16_s8(vzip1q_s8(r0, r1));
    const int16x8_t a23 = vreinterpretq_s16_s8(vzip1q_s8(r2, r3));
    const int16x8_t a45 = vreinterpretq_s16_s8(vzip1q_s8(r4, r5));
    const int16x8_t a67 = vreinterpretq_s16_s8(vzip1q_s8(r6, r7));
    const int16x8_t b01 = vreinterpretq_s16_s8(vzip2q_s8(r0, r1));
    const int16x8_t b23 = vreinterpretq_s16_s8(vzip2q_s8(r2, r3));
    const int16x8_t b45 = vreinterpretq_s16_s8(vzip2q_s8(r4, r5));
    const int16x8_t b67 = vreinterpretq_s16_s8(vzip2q_s8(r6, r7));
    for (int half = 0; half < 2; ++half) {
        const int16x8_t h01 = half ? b01 : a01, h23 = half ? b23 : a23;
        const int16x8_t h45 = half ? b45 : a45, h67 = half ? b67 : a67;
        const int32x4_t c0 = vreinterpretq_s32_s16(vzip1q_s16(h01, h23));   /* k0-3, columns 0-3 */
        const int32x4_t c1 = vreinterpretq_s32_s16(vzip2q_s16(h01, h23));   /* k0-3, columns 4-7 */
        const int32x4_t c2 = vreinterpretq_s32_s16(vzip1q_s16(h45, h67));   /* k4-7, columns 0-3 */
        const int32x4_t c3 = vreinterpretq_s32_s16(vzip2q_s16(h45, h67));   /* k4-7, columns 4-7 */
        unsigned char *g0 = dst[2 * half] + offset, *g1 = dst[2 * half + 1] + offset;
        vst1q_u8(g0, vreinterpretq_u8_s32(vzip1q_s32(c0, c2)));        /* columns 0, 1 */
        vst1q_u8(g0 + 16, vreinterpretq_u8_s32(vzip2q_s32(c0, c2)));   /* columns 2, 3 */
        vst1q_u8(g1, vreinterpretq_u8_s32(vzip1q_s32(c1, c3)));        /* columns 4, 5 */
        vst1q_u8(g1 + 16, vreinterpretq_u8_s32(vzip2q_s32(c1, c3)));   /* columns 6, 7 */
    }
}

/* The whole k-steps of the first `groups` groups, int8 with lp 4 or 8; `pairs`: panels of
 * two groups (hp 8, the mmla tiles), whose four group pointers per 16 columns are computed
 * (group_at) instead of walked by the cursor, whose test per group cost as much as the
 * transposes on the bench's Cortex-A510 model (smmla 8x8, GEMM 512^3: 58 K of the 130 K
 * cycles of pack_b_transposed). */
static TS_ALWAYS_INLINE void pack_b_groups_s8(const ts_packed_b *b, const int8_t *B,
                                                  size_t ldb, size_t groups, size_t lp,
                                                  int pairs)
{
    const size_t kstep_bytes = b->path->hp * lp;
    for (size_t s = 0; s < b->K / lp; ++s) {
        const int8_t *rows = B + s * lp * ldb;
        group_cursor cursor = group_cursor_start(b, 1);
        for (size_t g = 0; g < groups; g += 4) {
            const size_t cols = groups - g >= 4 ? 16 : 4 * (groups - g);
            unsigned char *dst[4];
            int8x16_t r[8];
            if (pairs && cols == 16) {
                /* groups g .. g+3: panels g/2 and g/2 + 1, two groups each */
                dst[0] = (unsigned char *)b->data + g / 2 * b->panel_bytes;
                dst[1] = dst[0] + 4 * lp;
                dst[2] = dst[0] + b->panel_bytes;
                dst[3] = dst[2] + 4 * lp;
            } else {
                for (size_t i = 0; i < cols / 4; ++i)
                    dst[i] = pairs ? group_at(b, g + i, 2, 4 * lp) : next_group(&cursor);
            }
            if (cols == 16) {
                transpose_s8_16(rows + 4 * g, ldb, lp, dst, s * kstep_bytes);
            } else {            /* the last 4, 8 or 12 columns: 8 and/or 4 at a time */
                for (size_t done = 0; done < cols; ) {
                    const size_t part = cols - done >= 8 ? 8 : 4;
                    load_s8_rows(r, rows + 4 * g + done, ldb, lp, part);
                    if (lp == 8) transpose_s8_lp8(r, dst + done / 4, s * kstep_bytes, part);
                    else transpose_s8_lp4(r, dst + done / 4, s * kstep_bytes, part);
                    done += part;
                }
            }
        }
    }
}

/* 4 rows of `cols` (8 or 4) floats from src (row stride ld) -> bf16, per column its 4 values;
 * groups of 4 columns (32 bytes) to dst[0 .. cols/4 - 1] + offset. */
static TS_ALWAYS_INLINE void transpose_bf16_lp4(int hw, const float *src, size_t ld,
                                                    unsigned char *const dst[2], size_t offset,
                                                    size_t cols)
{
    float32x4x4_t lo, hi;
    lo.val[0] = vld1q_f32(src);
    lo.val[1] = vld1q_f32(src + ld);
    lo.val[2] = vld1q_f32(src + 2 * ld);
    lo.val[3] = vld1q_f32(src + 3 * ld);
    hi = lo;
    if (cols == 8) {
        hi.val[0] = vld1q_f32(src + 4);
        hi.val[1] = vld1q_f32(src + ld + 4);
        hi.val[2] = vld1q_f32(src + 2 * ld + 4);
        hi.val[3] = vld1q_f32(src + 3 * ld + 4);
    }
    const uint16x8x4_t t = bf16_x8x4(hw, lo, hi);
    const uint16x8_t r[4] = { t.val[0], t.val[1], t.val[2], t.val[3] };
    for (size_t half = 0; 4 * half < cols; ++half) {
        const uint16x8_t a = half ? vzip2q_u16(r[0], r[1]) : vzip1q_u16(r[0], r[1]);
        const uint16x8_t b = half ? vzip2q_u16(r[2], r[3]) : vzip1q_u16(r[2], r[3]);
        const uint32x4_t k01 = vreinterpretq_u32_u16(a), k23 = vreinterpretq_u32_u16(b);
        uint16_t *g = ts_region(dst[half], offset);
        vst1q_u16(g, vreinterpretq_u16_u32(vzip1q_u32(k01, k23)));       /* columns 0, 1 */
        vst1q_u16(g + 8, vreinterpretq_u16_u32(vzip2q_u32(k01, k23)));   /* columns 2, 3 */
    }
}

static TS_ALWAYS_INLINE void pack_b_groups_bf16_as(int hw, const ts_packed_b *b, const float *B,
                                                   size_t ldb, size_t groups)
{
    const size_t kstep_bytes = b->path->hp * 4 * 2;
    for (size_t s = 0; s < b->K / 4; ++s) {
        const float *rows = B + s * 4 * ldb;
        group_cursor cursor = group_cursor_start(b, 2);
        for (size_t g = 0; g < groups; g += 2) {
            unsigned char *dst[2];
            dst[0] = next_group(&cursor);
            if (g + 1 < groups) {
                dst[1] = next_group(&cursor);
                transpose_bf16_lp4(hw, rows + 4 * g, ldb, dst, s * kstep_bytes, 8);
            } else {
                transpose_bf16_lp4(hw, rows + 4 * g, ldb, dst, s * kstep_bytes, 4);
            }
        }
    }
}

/* bf16, lp 4, hp a multiple of 8, the whole k-steps of the first `panels` panels: k-step s of a
 * panel holds each column's 4 values (rows 4s .. 4s+3 of B) in turn, so ST4 of the 4 rows'
 * converted values of 8 columns writes those 8 columns' k-step (64 bytes) with no transposes. */
static TS_ALWAYS_INLINE void pack_b_bf16_st4_as(int hw, const ts_packed_b *b, const float *B,
                                                size_t ldb, size_t panels, size_t hp)
{
    const size_t kstep_bytes = hp * 4 * 2;
    for (size_t s = 0; s < b->K / 4; ++s) {
        const float *row = B + 4 * s * ldb;
        unsigned char *panel = (unsigned char *)b->data + s * kstep_bytes;
        for (size_t j = 0; j < panels; ++j, panel += b->panel_bytes)
            for (size_t c = 0; c < hp; c += 8) {
                const float *p = row + j * hp + c;
                float32x4x4_t lo, hi;
                lo.val[0] = vld1q_f32(p);
                hi.val[0] = vld1q_f32(p + 4);
                lo.val[1] = vld1q_f32(p + ldb);
                hi.val[1] = vld1q_f32(p + ldb + 4);
                lo.val[2] = vld1q_f32(p + 2 * ldb);
                hi.val[2] = vld1q_f32(p + 2 * ldb + 4);
                lo.val[3] = vld1q_f32(p + 3 * ldb);
                hi.val[3] = vld1q_f32(p + 3 * ldb + 4);
                bf16_st4(hw, ts_region(panel, c * 8), lo, hi);
            }
    }
}

static void pack_b_groups_bf16(const ts_packed_b *b, const float *B, size_t ldb, size_t groups)
{
    const int hw = bf16_hw_usable(b->path);
    const size_t hp = b->path->hp;
    if (hp == 8 && hw)              /* the bfmmla tiles' hp: a constant, one ST4 per panel */
        pack_b_bf16_st4_as(1, b, B, ldb, groups / 2, 8);
    else if (hp % 8 == 0 && hw)
        pack_b_bf16_st4_as(1, b, B, ldb, groups * 4 / hp, hp);
    else if (hp % 8 == 0)
        pack_b_bf16_st4_as(0, b, B, ldb, groups * 4 / hp, hp);
    else if (hw)
        pack_b_groups_bf16_as(1, b, B, ldb, groups);
    else
        pack_b_groups_bf16_as(0, b, B, ldb, groups);
}

/* 16-bit kinds (bf16 from fp32, fp16), lp 2: rows 2s and 2s+1 of B, 8 (or the last 4) columns
 * at a time; ZIP1 / ZIP2 of the two rows' 16-bit values give each column's k-step (4 bytes)
 * for 4 columns: one group. */
static TS_ALWAYS_INLINE uint16x8_t load_b_16bit(ts_pack_kind kind, const void *row, size_t n0,
                                                size_t cols)
{
    if (kind == TS_PACK_BF16) {
        const float *p = (const float *)row + n0;
        const float32x4_t lo = vld1q_f32(p);
        return bf16_bits_x8(lo, cols == 8 ? vld1q_f32(p + 4) : lo);
    }
    const uint16_t *p = (const uint16_t *)row + n0;
    return cols == 8 ? vld1q_u16(p) : vcombine_u16(vld1_u16(p), vld1_u16(p));
}

static TS_ALWAYS_INLINE void pack_b_groups_16bit_lp2(const ts_packed_b *b, ts_pack_kind kind,
                                                     const void *B, size_t ldb, size_t groups)
{
    const size_t kstep_bytes = b->path->hp * 2 * 2, sb = kind == TS_PACK_BF16 ? 4 : 2;
    for (size_t s = 0; s < b->K / 2; ++s) {
        const unsigned char *r0 = (const unsigned char *)B + 2 * s * ldb * sb, *r1 = r0 + ldb * sb;
        group_cursor cursor = group_cursor_start(b, 2);
        for (size_t g = 0; g < groups; g += 2) {
            const size_t cols = g + 1 < groups ? 8 : 4;
            const uint16x8_t a = load_b_16bit(kind, r0, 4 * g, cols);
            const uint16x8_t c = load_b_16bit(kind, r1, 4 * g, cols);
            vst1q_u16(ts_region(next_group(&cursor), s * kstep_bytes), vzip1q_u16(a, c));
            if (cols == 8)
                vst1q_u16(ts_region(next_group(&cursor), s * kstep_bytes), vzip2q_u16(a, c));
        }
    }
}

/* Packs the whole k-steps of every full panel of row-major B (k_stride ldb, n_stride 1) when
 * this path has a transpose for it; returns how many panels it packed (0: none). */
static size_t pack_b_transposed(const ts_packed_b *b, const void *B, size_t ldb)
{
    const ts_path *path = b->path;
    const size_t full_panels = b->N / path->hp, groups = full_panels * path->hp / 4;
    if (path->hp % 4 != 0 || full_panels == 0)
        return 0;
    if (path->pack == TS_PACK_S8 && path->lp == 8 && path->hp == 8)   /* the mmla panels */
        pack_b_groups_s8(b, (const int8_t *)B, ldb, groups, 8, 1);
    else if (path->pack == TS_PACK_S8 && path->lp == 8)
        pack_b_groups_s8(b, (const int8_t *)B, ldb, groups, 8, 0);
    else if (path->pack == TS_PACK_S8 && path->lp == 4)
        pack_b_groups_s8(b, (const int8_t *)B, ldb, groups, 4, 0);
    else if (path->pack == TS_PACK_BF16 && path->lp == 4)
        pack_b_groups_bf16(b, (const float *)B, ldb, groups);
    else if (path->pack == TS_PACK_BF16 && path->lp == 2)
        pack_b_groups_16bit_lp2(b, TS_PACK_BF16, B, ldb, groups);
    else if (path->pack == TS_PACK_F16 && path->lp == 2)
        pack_b_groups_16bit_lp2(b, TS_PACK_F16, B, ldb, groups);
    else
        return 0;
    return full_panels;
}
#endif /* TS_HAVE_NEON */

/* One instance of the packer per conversion (kind a constant in each case); bf16 from fp32
 * with BFCVTN where the path allows it (bf16_hw_usable). */
static void pack_panel_from(const ts_path *path, ts_pack_kind kind, void *dst, const void *src,
                            size_t rows, size_t width, size_t K, size_t row_stride,
                            size_t k_stride, size_t k_begin)
{
    const size_t lp = path->lp;
    const int bfcvt = kind == TS_PACK_BF16 && bf16_hw_usable(path);
    switch (kind) {
#define TS_PACK_CASE(k) \
    case k: pack_panel_kind(k, dst, src, rows, width, K, lp, row_stride, k_stride, k_begin, \
                            bfcvt); break;
    TS_PACK_CASE(TS_PACK_F32)
    TS_PACK_CASE(TS_PACK_F32_BF16)
    TS_PACK_CASE(TS_PACK_BF16)
    TS_PACK_CASE(TS_PACK_S8)
    TS_PACK_CASE(TS_PACK_S16)
    TS_PACK_CASE(TS_PACK_U16)
    TS_PACK_CASE(TS_PACK_F16)
    TS_PACK_CASE(TS_PACK_F32_F16)
    TS_PACK_CASE(TS_PACK_U8_S8)
#undef TS_PACK_CASE
    }
}

void ts_pack_panel(const ts_path *path, void *dst, const void *src, size_t rows,
                   size_t width, size_t K, size_t row_stride, size_t k_stride)
{
    pack_panel_from(path, path->pack, dst, src, rows, width, K, row_stride, k_stride, 0);
}

void ts_pack_panel_as(ts_pack_kind kind, const ts_path *path, void *dst, const void *src,
                      size_t rows, size_t width, size_t K, size_t row_stride, size_t k_stride)
{
    /* SME paths: A panels (k contiguous) by the streaming packer (gen/sme_pack.py), which
     * serves copy kinds only (a k-step is one 4-byte word of the source row) */
    if (path->sme_pack_a != NULL && kind == path->pack_a && k_stride == 1 && width == path->ep) {
        const size_t e = source_size(kind);
        path->sme_pack_a(dst, src, rows, K * e, row_stride * e);
        return;
    }
    pack_panel_from(path, kind, dst, src, rows, width, K, row_stride, k_stride, 0);
}

/* ---- gathered rows: each row of a panel from its own pointer (implicit im2col) ---------------
 * Runs of a panel whose row r reads consecutive source elements from its own pointer src[r]
 * (a conv window: a kernel row's taps, one tap, or the padding row), or from a table of one
 * pointer per row and run (ts_pack_gather_taps: a padded window's taps), or across panels from
 * one strided source (ts_pack_gather_strided: an output row's inside windows). Whole k-steps
 * of 8-bit A panels with lp 8 / 4 go by row quads and pairs (gather_rows_lp8) / quads
 * (store_quad_steps); partial k-steps (a tap boundary inside a k-step) and the other
 * conversions element by element or run by run. */

void ts_pack_clear_padding(ts_pack_kind kind, size_t lp, void *dst, size_t rows,
                            size_t width, size_t K)
{
    const size_t db = packed_size(kind), step = width * lp, ksteps = K / lp + (K % lp != 0);
    if (rows < width)
        memset(dst, 0, ksteps * step * db);
    else if (K % lp != 0)
        memset((unsigned char *)dst + (ksteps - 1) * step * db, 0, step * db);
}

/* Elements k0 .. k0+n-1 (within one k-step) of every row, one by one, row r from
 * src[r] + src_offset elements. */
static TS_ALWAYS_INLINE void pack_gather_elements(ts_pack_kind kind, size_t lp, size_t step,
                                                  void *dst, const void *const *src,
                                                  size_t rows, size_t k0, size_t n,
                                                  size_t src_offset)
{
    const size_t sb = source_size(kind), base = k0 / lp * step + k0 % lp;
    for (size_t r = 0; r < rows; ++r) {
        const unsigned char *s = (const unsigned char *)src[r] + src_offset * sb;
        for (size_t i = 0; i < n; ++i)
            convert_one(kind, dst, base + r * lp + i, s, i);
    }
}

/* 8 bytes at p as one register (no alignment or aliasing assumption), and back: a NEON D
 * register where there is NEON (GCC and clang pair adjacent ones into LDP / STP Dn), else a
 * general register through memcpy. */
#if TS_HAVE_NEON
typedef uint8x8_t bytes8;
static TS_ALWAYS_INLINE bytes8 load8(const unsigned char *p) { return vld1_u8(p); }
static TS_ALWAYS_INLINE void store8(unsigned char *p, bytes8 v) { vst1_u8(p, v); }
#else
typedef uint64_t bytes8;
static TS_ALWAYS_INLINE bytes8 load8(const unsigned char *p)
{
    bytes8 v;
    memcpy(&v, p, 8);
    return v;
}
static TS_ALWAYS_INLINE void store8(unsigned char *p, bytes8 v) { memcpy(p, &v, 8); }
#endif

/* GCC's induction-variable pass would address rows c and e (and a, b) from one index
 * register — LDR Dn, [Xa, Xi] — which cannot pair into LDP: an empty asm statement makes each
 * pointer its own induction variable (no instruction emitted). */
#if defined(__GNUC__) || defined(__clang__)
#  define OWN_POINTER(p) __asm__("" : "+r"(p))
#else
#  define OWN_POINTER(p) ((void)0)
#endif

/* int8, lp 8: k-steps 0 .. steps-1 of rows a and b (with `quad` also c and e) into their
 * slots (k-step s of row i at d + s * step + 8 * i): four k-steps per round, 32 bytes of each
 * row (two LDP), one k-step of a row pair per 16-byte store (STP), then the last steps % 4 one
 * by one. 8-byte D registers rather than general ones or a NEON ZIP interleave: llvm-mca-19
 * cycles per 64 bytes of a pair, this loop (step 64) / the general-register one (LDP/STP Xn,
 * 16 bytes of each row per round) / LDR Q + ZIP1/ZIP2 + STR Q: Neoverse N2 2.7 / 3.1 / 4.1,
 * V1 2.7 / 4.0 / 2.8, Cortex-A510 9 / 16 / 16, Cortex-A55 17 / 26 / 26 — the best on every
 * modeled core, so no per-core-class choice. On N2 the load/store pipes bound it (8 of their
 * operations per 64 bytes, 3 pipes); a vector store's data and a ZIP share its two vector
 * pipes, and mixing general-register pairs with ZIP pairs gains N2 12 % but costs V1 13 %
 * (one class). A quad of rows halves the per-run overhead of the runs loops at the same
 * rate (N2 5.4 cycles per 128 bytes). */
static TS_ALWAYS_INLINE void gather_rows_lp8(unsigned char *d, size_t step,
                                             const unsigned char *a, const unsigned char *b,
                                             const unsigned char *c, const unsigned char *e,
                                             int quad, size_t steps)
{
    const unsigned char *const end = a + steps / 4 * 32;
    for (; a != end; a += 32, b += 32, d += 4 * step) {
        const bytes8 a0 = load8(a), a1 = load8(a + 8), a2 = load8(a + 16), a3 = load8(a + 24);
        const bytes8 b0 = load8(b), b1 = load8(b + 8), b2 = load8(b + 16), b3 = load8(b + 24);
        store8(d, a0);
        store8(d + 8, b0);
        store8(d + step, a1);
        store8(d + step + 8, b1);
        store8(d + 2 * step, a2);
        store8(d + 2 * step + 8, b2);
        store8(d + 3 * step, a3);
        store8(d + 3 * step + 8, b3);
        if (quad) {
            const bytes8 c0 = load8(c), c1 = load8(c + 8), c2 = load8(c + 16), c3 = load8(c + 24);
            const bytes8 e0 = load8(e), e1 = load8(e + 8), e2 = load8(e + 16), e3 = load8(e + 24);
            store8(d + 16, c0);
            store8(d + 24, e0);
            store8(d + step + 16, c1);
            store8(d + step + 24, e1);
            store8(d + 2 * step + 16, c2);
            store8(d + 2 * step + 24, e2);
            store8(d + 3 * step + 16, c3);
            store8(d + 3 * step + 24, e3);
            c += 32;
            e += 32;
            OWN_POINTER(c);
            OWN_POINTER(e);
        }
    }
    for (size_t s = 0; s < steps % 4; ++s, a += 8, b += 8, c += 8, e += 8, d += step) {
        store8(d, load8(a));
        store8(d + 8, load8(b));
        if (quad) {
            store8(d + 16, load8(c));
            store8(d + 24, load8(e));
        }
    }
}

/* The pair a, b (gather_rows_lp8 of two rows). */
static TS_ALWAYS_INLINE void gather_pair_lp8(unsigned char *d, size_t step,
                                             const unsigned char *a, const unsigned char *b,
                                             size_t steps)
{
    gather_rows_lp8(d, step, a, b, a, b, 0, steps);
}

/* Whole k-steps: `steps` of them from k-step s0, row r reading at src[r] + src_offset elements. */
static TS_ALWAYS_INLINE void pack_gather_steps(ts_pack_kind kind, size_t lp, size_t step,
                                               void *dst, const void *const *src, size_t rows,
                                               size_t s0, size_t steps, size_t src_offset)
{
    const size_t db = packed_size(kind), sb = source_size(kind);
    unsigned char *panel = (unsigned char *)dst + s0 * step * db;
    size_t r = 0, done = 0;   /* rows r and k-steps done packed by the pair / quad loops */
    if (kind == TS_PACK_S8 && lp == 8) {
        done = steps;
        for (; r + 2 <= rows; r += 2)
            gather_pair_lp8(panel + r * 8, step, (const unsigned char *)src[r] + src_offset,
                            (const unsigned char *)src[r + 1] + src_offset, steps);
    }
#if TS_HAVE_NEON
    if (kind == TS_PACK_S8 && lp == 4) {
        done = steps / 4 * 4;
        for (; r + 4 <= rows; r += 4) {
            const int8_t *p[4];
            for (size_t i = 0; i < 4; ++i)
                p[i] = (const int8_t *)src[r + i] + src_offset;
            unsigned char *d = panel + r * 4;
            for (size_t k = 0; k < done * 4; k += 16, d += 4 * step) {
                const int32x4_t q[4] = { vreinterpretq_s32_s8(vld1q_s8(p[0] + k)),
                                         vreinterpretq_s32_s8(vld1q_s8(p[1] + k)),
                                         vreinterpretq_s32_s8(vld1q_s8(p[2] + k)),
                                         vreinterpretq_s32_s8(vld1q_s8(p[3] + k)) };
                store_quad_steps(d, step, q);
            }
        }
    }
    if ((kind == TS_PACK_S16 || kind == TS_PACK_U16) && lp == 1) {
        /* the widened panels of smlal: 8 k of 8 (then 4) rows transposed as pack_rows_lp1_widened
         * does, one 16-byte (8-byte) store per k */
        done = steps / 8 * 8;
        for (; r + 8 <= rows; r += 8) {
            const unsigned char *p[8];
            for (size_t i = 0; i < 8; ++i)
                p[i] = (const unsigned char *)src[r + i] + src_offset;
            for (size_t k = 0; k < done; k += 8) {
                int16x8_t lo[4], hi[4];   /* rows 0-3 / 4-7, k pairs 0|1, 2|3, 4|5, 6|7 */
                transpose_s16_4x8(widen_x8(kind, p[0] + k), widen_x8(kind, p[1] + k),
                                  widen_x8(kind, p[2] + k), widen_x8(kind, p[3] + k), lo);
                transpose_s16_4x8(widen_x8(kind, p[4] + k), widen_x8(kind, p[5] + k),
                                  widen_x8(kind, p[6] + k), widen_x8(kind, p[7] + k), hi);
                int16_t *d = ts_region(panel, (k * step + r) * sizeof(int16_t));
                store_k_pair_8(d, step, lo[0], hi[0]);
                store_k_pair_8(d + 2 * step, step, lo[1], hi[1]);
                store_k_pair_8(d + 4 * step, step, lo[2], hi[2]);
                store_k_pair_8(d + 6 * step, step, lo[3], hi[3]);
            }
        }
        for (; r + 4 <= rows; r += 4) {
            const unsigned char *p[4];
            for (size_t i = 0; i < 4; ++i)
                p[i] = (const unsigned char *)src[r + i] + src_offset;
            for (size_t k = 0; k < done; k += 8) {
                int16x8_t q[4];
                transpose_s16_4x8(widen_x8(kind, p[0] + k), widen_x8(kind, p[1] + k),
                                  widen_x8(kind, p[2] + k), widen_x8(kind, p[3] + k), q);
                int16_t *d = ts_region(panel, (k * step + r) * sizeof(int16_t));
                store_k_pair_4(d, step, q[0]);
                store_k_pair_4(d + 2 * step, step, q[1]);
                store_k_pair_4(d + 4 * step, step, q[2]);
                store_k_pair_4(d + 6 * step, step, q[3]);
            }
        }
    }
#endif
    if (r == rows && done == steps)
        return;
    for (size_t row = 0; row < rows; ++row) {
        const size_t first = row < r ? done : 0;   /* k-steps the groups already packed */
        const unsigned char *s = (const unsigned char *)src[row] + (src_offset + first * lp) * sb;
        unsigned char *d = panel + (first * step + row * lp) * db;
        for (size_t i = first; i < steps; ++i, s += lp * sb, d += step * db)
            convert_run(kind, d, s, lp);
    }
}

size_t ts_pack_gather_group(ts_pack_kind kind, size_t lp)
{
    if (kind == TS_PACK_S8 && lp == 8)
        return 2;
#if TS_HAVE_NEON
    if ((kind == TS_PACK_S8 && lp == 4) || ((kind == TS_PACK_S16 || kind == TS_PACK_U16) && lp == 1))
        return 4;
#endif
    return 0;
}

/* The whole gather with kind and lp as constants where inlined (lp a power of two: the
 * divisions by lp become shifts): per run a partial k-step head, whole k-steps, a partial
 * tail. */
static TS_ALWAYS_INLINE void pack_gather_lp(ts_pack_kind kind, size_t lp, size_t width,
                                            void *dst, const void *const *src, size_t rows,
                                            const ts_gather_runs *g)
{
    const size_t step = width * lp;
    for (size_t j = 0; j < g->runs; ++j) {
        const size_t k0 = g->k0 + j * g->n, offset = g->offset + j * g->stride;
        size_t head = (lp - k0 % lp) % lp;
        if (head > g->n)
            head = g->n;
        if (head != 0)
            pack_gather_elements(kind, lp, step, dst, src, rows, k0, head, offset);
        const size_t k = k0 + head, steps = (g->n - head) / lp, tail = (g->n - head) % lp;
        if (steps != 0)
            pack_gather_steps(kind, lp, step, dst, src, rows, k / lp, steps, offset + head);
        if (tail != 0)
            pack_gather_elements(kind, lp, step, dst, src, rows, k + steps * lp, tail,
                                 offset + head + steps * lp);
    }
}

/* Where row r of a gather reads: its own pointer src[r], or (src NULL: rows of one strided
 * source, ts_pack_gather_strided) base + r * stride bytes. */
static TS_ALWAYS_INLINE const unsigned char *row_source(const void *const *src,
                                                        const unsigned char *base,
                                                        size_t stride, size_t r)
{
    return src != NULL ? (const unsigned char *)src[r] : base + r * stride;
}

/* int8, lp 8, runs of whole k-steps (k0 % 8 == 0, n % 8 == 0): row pair by row pair, its
 * runs one after the other (consecutive k-steps of the panel), so a run costs the pair a
 * pointer update rather than a pass through the general loops; rows 0 .. rows/2*2-1, row r
 * from row_source(src, base, stride, r). `width` is a constant where inlined
 * (ts_pack_gather: the panel rows of the smmla tiles), so the pair loop's stores take
 * immediate offsets. */
static TS_ALWAYS_INLINE void gather_pairs_runs_lp8(unsigned char *dst, size_t width,
                                                   const void *const *src,
                                                   const unsigned char *base, size_t stride,
                                                   size_t rows, const ts_gather_runs *g)
{
    const size_t step = width * 8, steps = g->n / 8;
    unsigned char *const panel = dst + g->k0 * width;     /* k-step k0 / 8 */
    for (size_t r = 0; r + 2 <= rows;) {
        const int quad = r + 4 <= rows;
        const unsigned char *a = row_source(src, base, stride, r) + g->offset;
        const unsigned char *b = row_source(src, base, stride, r + 1) + g->offset;
        const unsigned char *c = quad ? row_source(src, base, stride, r + 2) + g->offset : a;
        const unsigned char *e = quad ? row_source(src, base, stride, r + 3) + g->offset : b;
        unsigned char *d = panel + r * 8;
        for (size_t j = 0; j < g->runs; ++j, d += steps * step) {
            if (quad)
                gather_rows_lp8(d, step, a, b, c, e, 1, steps);
            else
                gather_pair_lp8(d, step, a, b, steps);
            a += g->stride;
            b += g->stride;
            c += g->stride;
            e += g->stride;
        }
        r += quad ? 4 : 2;
    }
}

/* pack_gather_lp with the A panels of the int8 kernels specialised: smmla (lp 8), sdot / smopa
 * (lp 4), smlal (int16, lp 1). */
static TS_ALWAYS_INLINE void pack_gather_kinds(ts_pack_kind kind, size_t lp, size_t width,
                                               void *dst, const void *const *src, size_t rows,
                                               const ts_gather_runs *g)
{
    if (kind == TS_PACK_S8 && lp == 8)
        pack_gather_lp(TS_PACK_S8, 8, width, dst, src, rows, g);
    else if (kind == TS_PACK_S8 && lp == 4)
        pack_gather_lp(TS_PACK_S8, 4, width, dst, src, rows, g);
    else if (kind == TS_PACK_S16 && lp == 1)
        pack_gather_lp(TS_PACK_S16, 1, width, dst, src, rows, g);
    else
        pack_gather_lp(kind, lp, width, dst, src, rows, g);
}

void ts_pack_gather(ts_pack_kind kind, size_t lp, size_t width, void *dst,
                    const void *const *src, size_t rows, const ts_gather_runs *g)
{
    if (kind == TS_PACK_S8 && lp == 8 && g->k0 % 8 == 0 && g->n % 8 == 0) {
        /* the common case of the smmla panels: in_c a multiple of 8 */
        if (width == 8)             /* the 8-row smmla tile: constant store offsets */
            gather_pairs_runs_lp8((unsigned char *)dst, 8, src, NULL, 0, rows, g);
        else
            gather_pairs_runs_lp8((unsigned char *)dst, width, src, NULL, 0, rows, g);
        if (rows % 2 == 0)
            return;
        dst = (unsigned char *)dst + (rows - 1) * 8;        /* the last row, alone */
        src += rows - 1;
        rows = 1;
    }
    pack_gather_kinds(kind, lp, width, dst, src, rows, g);
}

/* ---- a whole panel of overlapping strided rows (a stride-1 conv's kernel rows) -------------
 * Row i of a full 8-row smmla panel reads src + i * dx, and one run is L * D k-steps with
 * dx = D k-steps (8 bytes each): a kernel row of k_w taps of in_c bytes, the windows one
 * pixel apart (L = k_w, D = in_c / 8). Piece p of a run (bytes 8p .. 8p+7) is then k-step
 * p - i * D of every row i it falls in, up to L rows: k-step s0 + c * D (s0 < D, c < L) of
 * row i is piece s0 + (c + i) * D. So for each s0 the pieces s0 + m * D (m = 0 .. L + 6) are
 * loaded once and give L k-steps of all 8 rows: (L + 7) loads for 8 L stored k-steps, where
 * the row-quad loop (gather_rows_lp8) loads every k-step it stores. Two residues s0, s0 + 1
 * go together (one LDP per m, two k-step rows per STP). What is left is bound by the stores:
 * llvm-mca-19 cycles per 128 bytes, L = 3, this loop / the quad loop: Neoverse N2 4.0 / 5.4,
 * V1 4.0 / 5.4, Cortex-A510 12 / 19, Cortex-A55 16 / 30. L = 2 and 3 (3x3 and 2x2 kernels);
 * longer runs keep the quad loop (their pieces would take more than the 32 vector registers
 * at two residues a round). */
#define OVERLAP_MAX_L 3
#define OVERLAP_PIECES (OVERLAP_MAX_L + 7)     /* pieces per residue a round: L + 7 */

/* Residues s0 (and s0 + 1 with `pair`) of one run: pieces from p[m] (= s + m * dx + 8 s0),
 * k-step s0 + c * D of row i to d + c * D * 64 + 8 i (d: k-step s0 of row 0). */
static TS_ALWAYS_INLINE void overlap_residues_lp8(unsigned char *const *d,
                                                  const unsigned char *const *p, size_t L,
                                                  int pair)
{
    bytes8 q[OVERLAP_PIECES][2];
    TS_UNROLLED
    for (size_t m = 0; m < L + 7; ++m) {
        q[m][0] = load8(p[m]);
        q[m][1] = pair ? load8(p[m] + 8) : q[m][0];
    }
    TS_UNROLLED
    for (size_t c = 0; c < L; ++c) {
        TS_UNROLLED
        for (size_t i = 0; i < 8; ++i) {
            store8(d[c] + 8 * i, q[c + i][0]);
            if (pair)
                store8(d[c] + 64 + 8 * i, q[c + i][1]);
        }
    }
}

/* The runs of g (k0 % 8 == 0, n == L * dx) for all 8 rows of the panel at dst, row i from
 * src + i * dx; L a constant where inlined. */
static TS_ALWAYS_INLINE void gather_panel_overlap_lp8(unsigned char *dst, const unsigned char *src,
                                                      size_t dx, size_t L,
                                                      const ts_gather_runs *g)
{
    const size_t D = dx / 8, pairs = D / 2;
    const unsigned char *p[OVERLAP_PIECES];
    unsigned char *d[OVERLAP_MAX_L];
    TS_UNROLLED
    for (size_t m = 0; m < L + 7; ++m)
        p[m] = src + g->offset + m * dx;
    TS_UNROLLED
    for (size_t c = 0; c < L; ++c)
        d[c] = dst + (g->k0 / 8 + c * D) * 64;
    /* from the end of run j's residue pairs to run j + 1's first */
    const size_t p_next = g->stride - pairs * 16, d_next = g->n * 8 - pairs * 128;
    for (size_t j = 0; j < g->runs; ++j) {
        for (size_t s0 = 0; s0 < pairs; ++s0) {
            overlap_residues_lp8(d, p, L, 1);
            TS_UNROLLED
            for (size_t m = 0; m < L + 7; ++m) {
                p[m] += 16;
                OWN_POINTER(p[m]);
            }
            TS_UNROLLED
            for (size_t c = 0; c < L; ++c) {
                d[c] += 128;
                OWN_POINTER(d[c]);
            }
        }
        if (D % 2 != 0)
            overlap_residues_lp8(d, p, L, 0);
        TS_UNROLLED
        for (size_t m = 0; m < L + 7; ++m)
            p[m] += p_next;
        TS_UNROLLED
        for (size_t c = 0; c < L; ++c)
            d[c] += d_next;
    }
}

/* L when the runs of g, for rows dx source bytes apart, suit gather_panel_overlap_lp8
 * (whole k-steps, each run L row strides long, 2 <= L <= OVERLAP_MAX_L); else 0. */
static size_t overlap_runs(size_t dx, const ts_gather_runs *g)
{
    if (g->k0 % 8 != 0 || dx == 0 || dx % 8 != 0)
        return 0;
    for (size_t L = 2; L <= OVERLAP_MAX_L; ++L)     /* no division: this runs per panel */
        if (g->n == L * dx)
            return L;
    return 0;
}

/* Rows ts_pack_gather_strided hands ts_pack_gather at a time (its pointer table). */
#define STRIDED_CHUNK 16

/* Rows first .. first+rows-1 of one panel from one strided source (source row i at
 * src + i * stride bytes): the smmla panels (ts_pack_gather's common case) by the pair loops
 * straight from the stride, the others through pointer tables of STRIDED_CHUNK rows. */
static void pack_strided_panel(ts_pack_kind kind, size_t lp, size_t width,
                               unsigned char *panel, size_t first,
                               const unsigned char *src, size_t stride, size_t rows,
                               const ts_gather_runs *g)
{
    unsigned char *dst = panel + first * lp * packed_size(kind);
    if (kind == TS_PACK_S8 && lp == 8 && width == 8 && first == 0 && rows == 8) {
        const size_t L = overlap_runs(stride, g);
        if (L == 2) {
            gather_panel_overlap_lp8(dst, src, stride, 2, g);
            return;
        }
        if (L == 3) {
            gather_panel_overlap_lp8(dst, src, stride, 3, g);
            return;
        }
    }
    if (kind == TS_PACK_S8 && lp == 8 && g->k0 % 8 == 0 && g->n % 8 == 0) {
        if (width == 8)
            gather_pairs_runs_lp8(dst, 8, NULL, src, stride, rows, g);
        else
            gather_pairs_runs_lp8(dst, width, NULL, src, stride, rows, g);
        if (rows % 2 == 0)
            return;
        const void *last = src + (rows - 1) * stride;       /* the last row, alone */
        pack_gather_kinds(kind, lp, width, dst + (rows - 1) * 8, &last, 1, g);
        return;
    }
    for (size_t r = 0; r < rows; r += STRIDED_CHUNK) {
        const void *table[STRIDED_CHUNK];
        const size_t n = rows - r < STRIDED_CHUNK ? rows - r : STRIDED_CHUNK;
        for (size_t i = 0; i < n; ++i)
            table[i] = src + (r + i) * stride;
        ts_pack_gather(kind, lp, width, dst + r * lp * packed_size(kind), table, n, g);
    }
}

void ts_pack_gather_strided(ts_pack_kind kind, size_t lp, size_t width, void *dst,
                            size_t panel_bytes, size_t first, const void *src,
                            size_t src_stride, size_t rows, const ts_gather_runs *g)
{
    const size_t stride = src_stride * source_size(kind);
    unsigned char *panel = (unsigned char *)dst + first / width * panel_bytes;
    const unsigned char *s = (const unsigned char *)src;
    size_t row = first % width;
    while (rows != 0) {                 /* panel by panel */
        const size_t n = width - row < rows ? width - row : rows;
        pack_strided_panel(kind, lp, width, panel, row, s, stride, n, g);
        s += n * stride;
        rows -= n;
        row = 0;
        panel += panel_bytes;
    }
}

/* int8, lp 8, whole k-steps (k0 % 8 == 0, n % 8 == 0) from a pointer table: run j of row r at
 * src[j * rows + r]; rows 0 .. rows/2*2-1 by quads and pairs, each group's runs one after the
 * other. */
static TS_ALWAYS_INLINE void gather_pairs_taps_lp8(unsigned char *dst, size_t width,
                                                   const void *const *src, size_t rows,
                                                   size_t k0, size_t n, size_t runs)
{
    const size_t step = width * 8, steps = n / 8;
    unsigned char *const panel = dst + k0 * width;        /* k-step k0 / 8 */
    for (size_t r = 0; r + 2 <= rows;) {
        const int quad = r + 4 <= rows;
        const void *const *s = src + r;
        unsigned char *d = panel + r * 8;
        for (size_t j = 0; j < runs; ++j, s += rows, d += steps * step) {
            const unsigned char *a = (const unsigned char *)s[0], *b = (const unsigned char *)s[1];
            if (quad)
                gather_rows_lp8(d, step, a, b, (const unsigned char *)s[2],
                                (const unsigned char *)s[3], 1, steps);
            else
                gather_pair_lp8(d, step, a, b, steps);
        }
        r += quad ? 4 : 2;
    }
}

void ts_pack_gather_taps(ts_pack_kind kind, size_t lp, size_t width, void *dst,
                         const void *const *src, size_t rows, size_t k0, size_t n, size_t runs)
{
    size_t done = 0;    /* rows packed by the pair loop */
    if (kind == TS_PACK_S8 && lp == 8 && k0 % 8 == 0 && n % 8 == 0) {
        if (width == 8)
            gather_pairs_taps_lp8((unsigned char *)dst, 8, src, rows, k0, n, runs);
        else
            gather_pairs_taps_lp8((unsigned char *)dst, width, src, rows, k0, n, runs);
        done = rows / 2 * 2;
        if (done == rows)
            return;
    }
    for (size_t j = 0; j < runs; ++j) {
        const ts_gather_runs g = { k0 + j * n, n, 1, 0, 0 };
        pack_gather_kinds(kind, lp, width, (unsigned char *)dst + done * lp * packed_size(kind),
                          src + j * rows + done, rows - done, &g);
    }
}

/* ---- packed B ---------------------------------------------------------------------------------- */

/* Column sums come first in the block, rounded up to 16 bytes so the panels stay 16-aligned. */
static int col_sums_bytes(const ts_path *path, size_t N, size_t *out)
{
    if (!ts_keeps_col_sums(path->gemm_type)) {
        *out = 0;
        return 0;
    }
    size_t bytes;
    return ts_size_mul(N, sizeof(int32_t), &bytes) || ts_size_round_up(bytes, 16, out);
}

/* Bytes of the panels of one layout (hp columns each); with a GEMV layout after them, rounded
 * up to 16 so it starts 16-aligned. */
static int layout_bytes(const ts_path *path, size_t hp, size_t K, size_t N, size_t *out)
{
    size_t panel, panels;
    if (ts_panel_bytes(path, hp, K, &panel))
        return -1;
    panels = N / hp + (N % hp != 0);
    return ts_size_mul(panels, panel, out)
           || (path->gemv.kernel != NULL && ts_size_round_up(*out, 16, out));
}

int ts_packed_b_bytes(const ts_path *path, unsigned layouts, size_t K, size_t N, size_t *out)
{
    size_t sums, data = 0, gemv = 0;
    ts_path small;
    if (path->gemv.kernel != NULL)
        small = ts_gemv_path(path);       /* its hp and lp */
    if (col_sums_bytes(path, N, &sums)
        || (ts_keeps_gemm_layout(path, layouts) && layout_bytes(path, path->hp, K, N, &data))
        || (ts_keeps_gemv_layout(path, layouts) && layout_bytes(&small, small.hp, K, N, &gemv))
        || ts_size_add(data, sums, out) || ts_size_add(*out, gemv, out))
        return -1;
    return 0;
}

/* sums[n] = sum over k of B(k, n); int8 sums fit int32 for any K below 2^24. */
#if TS_HAVE_NEON
/* Rows per pass of column_sums_s8 over a row-major B (n_stride 1). A pass reads each of its
 * rows' 64-byte lines once per 16-column group, four times, so its rows must stay cached in
 * between: 32 lines of a column fit an 8-way L2 at any row stride up to 16 KiB (8 sets x 8
 * ways); one pass over all K rows (K = 4096 at a 4 KiB stride: 4096 lines in 32 sets) read
 * every line from memory four times. At most 256 rows: 256 int8 values sum to -32768 .. 32512,
 * inside the int16 partial sums. */
#define TS_SUM_PASS_ROWS 32

/* sums[0..15] (+)= the sums of 16 adjacent columns over `rows` <= TS_SUM_PASS_ROWS rows (store
 * when `first`, else add): int16 partial sums (SADDL of two rows, then ADD), widened once. */
static void column_sums_s8_x16(int32_t *sums, const int8_t *B, size_t rows, size_t k_stride,
                               int first)
{
    int16x8_t lo = vdupq_n_s16(0), hi = vdupq_n_s16(0);
    size_t k = 0;
    /* 8 rows per step, loads first, one addition into each sum: on an in-order core the
     * additions of the first rows run while the last loads arrive (the bench's Cortex-A510
     * model: 14.0 cycles per 4 rows -> 21.0 per 8; GEMM 512^3 int8 sums 70.8 -> 57.1 K
     * cycles; N2 23.0 -> 23.3 K, V1 12.3 -> 12.4 K) */
    for (; k + 8 <= rows; k += 8) {
        const int8_t *p = B + k * k_stride;
        const int8x16_t a = vld1q_s8(p), b = vld1q_s8(p + k_stride);
        const int8x16_t c = vld1q_s8(p + 2 * k_stride), d = vld1q_s8(p + 3 * k_stride);
        const int8x16_t e = vld1q_s8(p + 4 * k_stride), f = vld1q_s8(p + 5 * k_stride);
        const int8x16_t g = vld1q_s8(p + 6 * k_stride), h = vld1q_s8(p + 7 * k_stride);
        const int16x8_t lo4 = vaddq_s16(vaddl_s8(vget_low_s8(a), vget_low_s8(b)),
                                        vaddl_s8(vget_low_s8(c), vget_low_s8(d)));
        const int16x8_t hi4 = vaddq_s16(vaddl_high_s8(a, b), vaddl_high_s8(c, d));
        const int16x8_t lo8 = vaddq_s16(vaddl_s8(vget_low_s8(e), vget_low_s8(f)),
                                        vaddl_s8(vget_low_s8(g), vget_low_s8(h)));
        const int16x8_t hi8 = vaddq_s16(vaddl_high_s8(e, f), vaddl_high_s8(g, h));
        lo = vaddq_s16(lo, vaddq_s16(lo4, lo8));
        hi = vaddq_s16(hi, vaddq_s16(hi4, hi8));
    }
    /* 4 rows per step, loads first, one addition into each sum: the bench's Cortex-A510
     * model 9.0 -> 7.0 cycles per 2 rows, Neoverse V1 2.1 -> 1.1 (N2 the same 2.1: its two
     * vector pipes run the same operations) */
    for (; k + 4 <= rows; k += 4) {
        const int8x16_t a = vld1q_s8(B + k * k_stride), b = vld1q_s8(B + (k + 1) * k_stride);
        const int8x16_t c = vld1q_s8(B + (k + 2) * k_stride), d = vld1q_s8(B + (k + 3) * k_stride);
        lo = vaddq_s16(lo, vaddq_s16(vaddl_s8(vget_low_s8(a), vget_low_s8(b)),
                                     vaddl_s8(vget_low_s8(c), vget_low_s8(d))));
        hi = vaddq_s16(hi, vaddq_s16(vaddl_high_s8(a, b), vaddl_high_s8(c, d)));
    }
    for (; k + 2 <= rows; k += 2) {
        const int8x16_t a = vld1q_s8(B + k * k_stride), b = vld1q_s8(B + (k + 1) * k_stride);
        lo = vaddq_s16(lo, vaddl_s8(vget_low_s8(a), vget_low_s8(b)));
        hi = vaddq_s16(hi, vaddl_high_s8(a, b));
    }
    if (k < rows) {
        const int8x16_t a = vld1q_s8(B + k * k_stride);
        lo = vaddw_s8(lo, vget_low_s8(a));
        hi = vaddw_high_s8(hi, a);
    }
    int32x4_t s[4] = { vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0) };
    if (!first)
        for (size_t i = 0; i < 4; ++i)
            s[i] = vld1q_s32(sums + 4 * i);
    s[0] = vaddw_s16(s[0], vget_low_s16(lo));
    s[1] = vaddw_high_s16(s[1], lo);
    s[2] = vaddw_s16(s[2], vget_low_s16(hi));
    s[3] = vaddw_high_s16(s[3], hi);
    for (size_t i = 0; i < 4; ++i)
        vst1q_s32(sums + 4 * i, s[i]);
}

/* Columns 0 .. n16-1 (a multiple of 16) of a row-major B: passes of TS_SUM_PASS_ROWS rows,
 * each over every 16-column group (exact int32 sums, so the order does not matter); the sums
 * start at 0 when `first`, else these K rows are added to them. */
static void column_sums_s8_rows(int32_t *sums, const int8_t *B, size_t K, size_t n16,
                                size_t k_stride, int first)
{
    size_t k0 = 0;
    do {
        const size_t rows = K - k0 < TS_SUM_PASS_ROWS ? K - k0 : TS_SUM_PASS_ROWS;
        for (size_t n = 0; n < n16; n += 16)
            column_sums_s8_x16(sums + n, B + k0 * k_stride + n, rows, k_stride,
                               first && k0 == 0);
        k0 += rows;
    } while (k0 < K);
}

/* One column of K contiguous values (n_stride K, k_stride 1: an OHWI filter): pairwise
 * widening adds (SADDLP into int16, SADALP into int32), 16 values at a time. */
static int32_t column_sum_s8_contiguous(const int8_t *column, size_t K)
{
    int32x4_t acc = vdupq_n_s32(0);
    size_t k = 0;
    for (; k + 16 <= K; k += 16)
        acc = vpadalq_s16(acc, vpaddlq_s8(vld1q_s8(column + k)));
    int32_t sum = vaddvq_s32(acc);
    for (; k < K; ++k)
        sum += column[k];
    return sum;
}
#endif

/* sums[n] = the sum of column n over the K rows of B when `first`; otherwise the K rows are
 * added to sums[n] (row passes of a larger B: ts_pack_b_s8_passes). Exact in int32 (wrapping
 * like the accumulators), so any order gives the same sums. */
static void column_sums_s8_part(int32_t *sums, const int8_t *B, size_t K, size_t N,
                                size_t k_stride, size_t n_stride, int first)
{
    size_t n = 0;
#if TS_HAVE_NEON
    if (n_stride == 1 && N >= 16) {
        n = N - N % 16;
        column_sums_s8_rows(sums, B, K, n, k_stride, first);
    }
    if (k_stride == 1) {
        for (; n < N; ++n)
            sums[n] = (int32_t)((first ? 0u : (uint32_t)sums[n])
                                + (uint32_t)column_sum_s8_contiguous(B + n * n_stride, K));
        return;
    }
#endif
    for (; n < N; ++n) {
        uint32_t sum = first ? 0u : (uint32_t)sums[n];
        for (size_t k = 0; k < K; ++k) {
            const int32_t v = B[k * k_stride + n * n_stride];
            sum += (uint32_t)v;   /* wraps like the int32 sum it stands for */
        }
        sums[n] = (int32_t)sum;
    }
}

static void column_sums_s8(int32_t *sums, const int8_t *B, size_t K, size_t N, size_t k_stride,
                           size_t n_stride)
{
    column_sums_s8_part(sums, B, K, N, k_stride, n_stride, 1);
}

#if TS_HAVE_NEON
/* Row-major B (n_stride 1) with column sums: the sums and the NEON transposes
 * (pack_b_transposed) in passes of TS_SUM_PASS_ROWS rows (a multiple of every lp): each
 * pass's sums, then its k-steps packed, so the packer reads rows the sums have just brought
 * into the caches (128 KiB at N = 4096) instead of reading B from memory a second time
 * (prefill M=512 int8, B 16 MiB, on the bench's N2 model). Returns what pack_b_transposed
 * returns: the panels whose whole k-steps it packed (0: none, the sums are complete anyway). */
static size_t pack_b_s8_passes(const ts_packed_b *b, const int8_t *B, size_t ldb)
{
    const size_t step_bytes = b->path->hp * b->path->lp * ts_pack_elem_bytes(b->path->pack);
    size_t packed, k0 = 0;
    do {                              /* K = 0 too: its sums are 0 */
        const size_t rows = b->K - k0 < TS_SUM_PASS_ROWS ? b->K - k0 : TS_SUM_PASS_ROWS;
        ts_packed_b pass = *b;        /* k-steps k0 / lp ..: the same panels, K rows later */
        column_sums_s8_part(b->col_sums, B + k0 * ldb, rows, b->N, ldb, 1, k0 == 0);
        pass.K = rows;
        pass.data = (unsigned char *)b->data + k0 / b->path->lp * step_bytes;
        packed = pack_b_transposed(&pass, B + k0 * ldb, ldb);
        k0 += rows;
    } while (k0 < b->K);
    return packed;
}
#endif

/* Sets b's path, sizes and panel geometry for path's hp (b->data is the caller's). */
static void set_geometry(ts_packed_b *b, const ts_path *path, size_t K, size_t N)
{
    b->path = path;
    b->K = K;
    b->N = N;
    b->ksteps = K / path->lp + (K % path->lp != 0);
    b->panels = N / path->hp + (N % path->hp != 0);
    ts_panel_bytes(path, path->hp, K, &b->panel_bytes);
}

void ts_packed_b_layout(ts_packed_b *b, const ts_path *path, unsigned layouts, size_t K,
                        size_t N, void *memory)
{
    size_t sums = 0, data = 0;
    const int gemm = ts_keeps_gemm_layout(path, layouts);
    col_sums_bytes(path, N, &sums);     /* cannot fail: ts_packed_b_bytes succeeded */
    if (gemm)
        layout_bytes(path, path->hp, K, N, &data);
    set_geometry(b, path, K, N);
    b->tag = TS_TAG_PACKED_B;
    b->tail_hp = 0;
    b->gemv_panels = 0;
    b->gemv_panel_bytes = 0;
    b->gemv_data = NULL;
    if (ts_keeps_gemv_layout(path, layouts)) {
        /* the GEMV layout: the same packer with the GEMV tile's hp, after the main panels */
        ts_path gemv = ts_gemv_path(path);
        ts_packed_b view;
        set_geometry(&view, &gemv, K, N);
        b->gemv_panels = view.panels;
        b->gemv_panel_bytes = view.panel_bytes;
        b->gemv_data = (unsigned char *)memory + sums + data;
    }
    b->col_sums = sums ? (int32_t *)memory : NULL;
    b->data = (unsigned char *)memory + sums;
    if (!gemm) {          /* the GEMV layout alone (ts_packed_gemm_layout) */
        b->data = NULL;
        b->panels = 0;
        b->panel_bytes = 0;
    }
    b->owned = NULL;
    b->owned_bytes = 0;
    b->bl = 0;
    b->blocks = 0;
    b->wscales = NULL;
    b->blk_sums = NULL;
    b->qdyn = NULL;
    b->qdyn_kpairs = 0;
}

void ts_packed_b_fill(const ts_packed_b *b, const void *B, size_t k_stride, size_t n_stride,
                      size_t j0, size_t j1)
{
    const ts_path *path = b->path;
    const size_t n0 = j0 * path->hp, n1 = j1 * path->hp < b->N ? j1 * path->hp : b->N;
    const size_t src_elem = ts_source_elem_bytes(path->pack);
    if (j0 >= j1)
        return;
    /* the panels j0 .. j1-1 of B are the packed B of columns n0 .. n1-1 */
    ts_packed_b part = *b;
    part.N = n1 - n0;
    part.panels = j1 - j0;
    part.data = (unsigned char *)b->data + j0 * b->panel_bytes;
    part.col_sums = b->col_sums != NULL ? b->col_sums + n0 : NULL;
    B = (const unsigned char *)B + n0 * n_stride * src_elem;
    /* SME paths, row-major B: each panel by the streaming packer (gen/sme_pack.py), the int8
     * ones with its column sums (ceil(cols / 4) * 4 of them: only the last panel can be
     * partial, and col_sums_bytes sizes the sums in whole groups of 4) */
    if (path->sme_pack_b != NULL && n_stride == 1) {
        const int packer_sums = path->pack == TS_PACK_S8;
        if (part.col_sums && !packer_sums)
            column_sums_s8(part.col_sums, (const int8_t *)B, part.K, part.N, k_stride, n_stride);
        for (size_t j = 0; j < part.panels; ++j) {
            size_t c0 = j * path->hp;
            size_t cols = part.N - c0 < path->hp ? part.N - c0 : path->hp;
            path->sme_pack_b((unsigned char *)part.data + j * part.panel_bytes,
                             (const unsigned char *)B + c0 * src_elem, cols, part.K,
                             k_stride * src_elem,
                             part.col_sums && packer_sums ? part.col_sums + c0 : NULL);
        }
        return;
    }
    /* Panel j = columns j*hp .. j*hp+hp-1 of B, i.e. rows of B^T: row stride n_stride. The
     * NEON transposes may have packed the whole k-steps of the first `transposed` panels
     * (with the column sums: in row passes, pack_b_s8_passes). */
    size_t transposed = 0;
    int summed = 0;
#if TS_HAVE_NEON
    if (n_stride == 1 && part.col_sums) {
        transposed = pack_b_s8_passes(&part, (const int8_t *)B, k_stride);
        summed = 1;
    } else if (n_stride == 1) {
        transposed = pack_b_transposed(&part, B, k_stride);
    }
#endif
    if (part.col_sums && !summed)
        column_sums_s8(part.col_sums, (const int8_t *)B, part.K, part.N, k_stride, n_stride);
    for (size_t j = 0; j < part.panels; ++j) {
        size_t c0 = j * path->hp;
        size_t cols = part.N - c0 < path->hp ? part.N - c0 : path->hp;
        const void *src = (const unsigned char *)B + c0 * n_stride * src_elem;
        /* the last panel of a column-tail call: tail_hp wide (fits in panel_bytes) */
        size_t width = j0 + j + 1 == b->panels && b->tail_hp != 0 ? b->tail_hp : path->hp;
        pack_panel_from(path, path->pack, (unsigned char *)part.data + j * part.panel_bytes,
                        src, cols, width, part.K, n_stride, k_stride,
                        j < transposed ? part.K / path->lp * path->lp : 0);
    }
}

void ts_packed_b_init(ts_packed_b *b, const ts_path *path, unsigned layouts, size_t K,
                      size_t N, const void *B, size_t k_stride, size_t n_stride, size_t tail_hp,
                      void *memory)
{
    ts_packed_b_layout(b, path, layouts, K, N, memory);
    b->tail_hp = tail_hp;
    ts_packed_b_fill(b, B, k_stride, n_stride, 0, b->panels);
    if (b->gemv_data != NULL) {
        /* the GEMV layout of the same B (its column sums with the GEMM layout's, if any) */
        ts_path gemv = ts_gemv_path(path);
        ts_packed_b view = *b;
        view.path = &gemv;
        view.panels = b->gemv_panels;
        view.panel_bytes = b->gemv_panel_bytes;
        view.data = b->gemv_data;
        view.tail_hp = 0;                   /* the column tails are the GEMM tile's */
        view.col_sums = ts_packed_gemm_layout(b) ? NULL : b->col_sums;
        ts_packed_b_fill(&view, B, k_stride, n_stride, 0, view.panels);
    }
}

int ts_packed_b_create(const ts_path *path, unsigned layouts, size_t K, size_t N,
                       const void *B, size_t k_stride, size_t n_stride, size_t tail_hp,
                       ts_packed_b **out)
{
    /* one block: the handle, padding to 16 bytes, the packed data */
    size_t head = (sizeof(ts_packed_b) + 15) / 16 * 16, bytes, total;
    if (ts_packed_b_bytes(path, layouts, K, N, &bytes) || ts_size_add(head, bytes, &total))
        return ts_fail(TS_ENOMEM, "the packed handle's size overflows size_t");
    /* malloc's result is aligned for any object (16 bytes on AArch64 Linux, Apple, Windows). */
    void *block = malloc(total);
    if (block == NULL)
        return ts_fail(TS_ENOMEM, "out of memory (the packed handle)");
    ts_packed_b *b = block;
    ts_packed_b_init(b, path, layouts, K, N, B, k_stride, n_stride, tail_hp,
                     (unsigned char *)block + head);
    b->owned = block;
    b->owned_bytes = total;
    *out = b;
    return TS_OK;
}

/* b is a live ts_packed_b of either kind (GEMM / qdyn weights or a conv filter). */
static int live_packed_b(const ts_packed_b *b)
{
    return b->tag == TS_TAG_CONV_FILTER
           || ts_handle_ok(b, TS_TAG_PACKED_B, "not a live ts_packed_b (another handle type, "
                                               "or freed)");
}

void ts_packed_free(ts_packed_b *b)
{
    /* not a live handle (another type, freed already): nothing to free */
    if (b == NULL || !live_packed_b(b))
        return;
    b->tag = TS_TAG_FREED;
    free(b->owned);
}

const char *ts_packed_kernel(const ts_packed_b *b)
{
    if (b == NULL || !live_packed_b(b))
        return NULL;
    /* a qdyn handle of a kernel with the fp32 epilogue inside: that kernel (its M > 4 one,
     * ts_gemm_qdyn_kernel: per M), not the raw int8 kernel of its path */
    return b->qdyn != NULL ? b->qdyn->symbol : b->path->symbol;
}

const char *ts_packed_gemv_kernel(const ts_packed_b *b)
{
    return b != NULL && live_packed_b(b) && b->gemv_data != NULL ? b->path->gemv.symbol : NULL;
}

size_t ts_packed_size(const ts_packed_b *b)
{
    return b != NULL && live_packed_b(b) ? b->owned_bytes : 0;
}
