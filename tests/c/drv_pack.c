/* Packing harness: ts_pack_panel and ts_packed_b_init of a generated folder (ts_pack.c) against
 * an independent statement of the panel layout (README "Micro-kernel ABI") and of the element
 * conversions, byte for byte, for every pack kind, lp 1/2/4/8, panel widths 4..24, A-style
 * (k contiguous) and B-style (rows contiguous) sources with padded strides, row-major and OHWI
 * B. Sources and packed buffers sit flush against guard pages (a read or write outside them
 * faults). Float sources mix random values with the cases rounding to bf16 must get right
 * (ties, NaN payloads, infinities, the largest finite values, subnormals); fp16 sources mix
 * random halves with ±0, subnormals, ±inf, signalling and quiet NaNs. The IEEE binary16
 * conversions (ts_f16_to_f32 every half, ts_f32_to_f16 / ts_narrow_rows_f16 a sweep of fp32
 * values with every tie, overflow and underflow edge) are checked against a double-precision
 * statement and against the hardware FCVT (__fp16 casts).
 *
 *   drv_pack        prints "checked <n>" and "failures <n>"; exit status 1 on any failure. */
#define _DEFAULT_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>

#if defined(__aarch64__)
#include "fpcr.h"
#endif
#include "guarded.h"
#include "ts_pack_internal.h"

static int failures;
static size_t checked;

#define CHECK(cond, ...) do {                                                  \
        if (!(cond)) {                                                         \
            if (failures++ < 20) { printf("FAIL "); printf(__VA_ARGS__); printf("\n"); } \
        }                                                                      \
    } while (0)

static const char *kind_name[] = { "F32", "F32_BF16", "BF16", "S8", "S16", "U16", "F16",
                                   "F32_F16", "U8_S8" };

static int is_float_kind(ts_pack_kind kind)
{
    return kind == TS_PACK_F32 || kind == TS_PACK_F32_BF16 || kind == TS_PACK_BF16;
}

static int is_half_kind(ts_pack_kind kind)
{
    return kind == TS_PACK_F16 || kind == TS_PACK_F32_F16;
}

static size_t source_bytes(ts_pack_kind kind)
{
    return is_float_kind(kind) ? 4 : is_half_kind(kind) ? 2 : 1;
}
static size_t packed_bytes(ts_pack_kind kind)
{
    return kind == TS_PACK_F32 || kind == TS_PACK_F32_BF16 || kind == TS_PACK_F32_F16 ? 4
           : kind == TS_PACK_S8 || kind == TS_PACK_U8_S8 ? 1 : 2;
}

/* fp16 bits -> fp32 bits, stated through double: (-1)^s * significand * 2^(exponent - 25);
 * a NaN keeps its sign and payload (shifted to the top of the fp32 fraction), made quiet. */
static uint32_t ref_half_to_float_bits(uint16_t h)
{
    const int e = (h >> 10) & 31, m = h & 1023;
    const uint32_t sign = (uint32_t)(h >> 15) << 31;
    if (e == 31)
        return sign | 0x7F800000u | (m ? 0x00400000u | ((uint32_t)m << 13) : 0u);
    double v = e == 0 ? ldexp(m, -24) : ldexp(m + 1024, e - 25);
    float f = (float)v;          /* exact: 11 significant bits, exponent in fp32 range */
    uint32_t u;
    memcpy(&u, &f, 4);
    return sign | u;
}

/* fp32 -> fp16 bits, round to nearest even, stated through double: below 2^-14 the result is
 * the subnormal count nearbyint(|x| * 2^24); above, frexp's |x| = m * 2^e with 11 bits kept
 * (nearbyint(m * 2^11), a carry moving to the next binade); exponent field e + 14 >= 31 is
 * infinity. NaN: quiet, sign and top 9 payload bits kept. */
static uint16_t ref_float_to_half_bits(uint32_t u)
{
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    float f;
    memcpy(&f, &u, 4);
    if (isnan(f))
        return (uint16_t)(sign | 0x7E00u | ((u >> 13) & 0x3FFu));
    double a = fabs((double)f);
    if (isinf(a))
        return (uint16_t)(sign | 0x7C00u);
    if (a < ldexp(1, -14))
        return (uint16_t)(sign | (uint16_t)nearbyint(a * ldexp(1, 24)));
    int e;
    double m = frexp(a, &e);
    double q = nearbyint(m * 2048);
    if (q == 2048) { q = 1024; ++e; }
    if (e + 14 >= 31)
        return (uint16_t)(sign | 0x7C00u);
    return (uint16_t)(sign | (uint16_t)((e + 14) << 10) | (uint16_t)(q - 1024));
}

/* ---- reference conversions ------------------------------------------------------------------- */

/* fp32 bits -> bf16 bits, stated as a comparison of the dropped half with one half-unit:
 * above rounds up, equal rounds to the even kept half, below truncates (a carry out of the
 * largest finite value gives infinity, IEEE 754 roundTiesToEven). A NaN keeps its sign and
 * top payload bits and is made quiet (fraction MSB set). */
static uint16_t ref_bf16_bits(uint32_t u)
{
    const uint32_t kept = u >> 16, dropped = u & 0xFFFFu;
    const int nan = (u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu) != 0;
    if (nan)
        return (uint16_t)(kept | 0x0040u);
    if (dropped > 0x8000u || (dropped == 0x8000u && (kept & 1u)))
        return (uint16_t)(kept + 1u);
    return (uint16_t)kept;
}

/* The packed bytes of source element `src` (kind's source type) into out. */
static void ref_convert(ts_pack_kind kind, const void *src, unsigned char *out)
{
    uint32_t u;
    int8_t v;
    uint16_t h;
    int16_t w;
    switch (kind) {
    case TS_PACK_F32:
        memcpy(out, src, 4);
        break;
    case TS_PACK_F32_BF16:
        memcpy(&u, src, 4);
        u = (uint32_t)ref_bf16_bits(u) << 16;
        memcpy(out, &u, 4);
        break;
    case TS_PACK_BF16:
        memcpy(&u, src, 4);
        h = ref_bf16_bits(u);
        memcpy(out, &h, 2);
        break;
    case TS_PACK_S8:
        memcpy(out, src, 1);
        break;
    case TS_PACK_S16:
        memcpy(&v, src, 1);
        w = v;
        memcpy(out, &w, 2);
        break;
    case TS_PACK_U16:   /* uint8 zero-extended */
        w = *(const uint8_t *)src;
        memcpy(out, &w, 2);
        break;
    case TS_PACK_F16:
        memcpy(out, src, 2);
        break;
    case TS_PACK_F32_F16:
        memcpy(&h, src, 2);
        u = ref_half_to_float_bits(h);
        memcpy(out, &u, 4);
        break;
    case TS_PACK_U8_S8:   /* uint8 a as the int8 a - 128 */
        v = (int8_t)((int)*(const uint8_t *)src - 128);
        memcpy(out, &v, 1);
        break;
    }
}

/* ---- sources ------------------------------------------------------------------------------------ */

static const uint32_t special_floats[] = {
    0x3F808000u, 0x3F818000u, 0xBF808000u, 0xBF818000u,   /* ties: even kept half, odd kept half */
    0x3F808001u, 0x3F807FFFu, 0x3F80FFFFu,                /* just above / below a tie; carry */
    0x7F7FFFFFu, 0x7F7F8000u, 0x7F7F7FFFu, 0xFF7FFFFFu,   /* largest finite: to inf, tie, down */
    0x7F800000u, 0xFF800000u, 0x00000000u, 0x80000000u,   /* infinities, zeros */
    0x7F800001u, 0xFF800001u, 0x7FBFFFFFu, 0x7FC00000u,   /* NaNs: payload only in the low half, */
    0xFFFFFFFFu, 0x7F808000u, 0x7FFF8000u,                /* signalling, quiet, all ones, ties */
    0x00008000u, 0x00018000u, 0x0000FFFFu, 0x807FFFFFu,   /* subnormals */
};

static const uint16_t special_halves[] = {
    0x0000u, 0x8000u, 0x0001u, 0x03FFu, 0x8200u, 0x0400u,   /* zeros, subnormals, smallest normal */
    0x7BFFu, 0xFBFFu, 0x7C00u, 0xFC00u,                     /* largest finite, infinities */
    0x7C01u, 0x7DFFu, 0xFD55u, 0x7E00u, 0xFFFFu, 0x3C00u,   /* signalling / quiet NaNs, 1.0 */
};

static void fill_source(ts_pack_kind kind, void *p, size_t n)
{
    if (is_half_kind(kind)) {
        const size_t specials = sizeof special_halves / sizeof special_halves[0];
        for (size_t i = 0; i < n; ++i) {
            uint64_t r = rng_next();
            ((uint16_t *)p)[i] = r % 4 == 0 ? special_halves[(r >> 8) % specials]
                                            : (uint16_t)(r >> 40);
        }
        return;
    }
    if (!is_float_kind(kind)) {
        for (size_t i = 0; i < n; ++i)
            ((int8_t *)p)[i] = (int8_t)(rng_next() >> 56);
        return;
    }
    const size_t specials = sizeof special_floats / sizeof special_floats[0];
    for (size_t i = 0; i < n; ++i) {
        uint64_t r = rng_next();
        uint32_t u = r % 4 == 0 ? special_floats[(r >> 8) % specials]
                   : r % 4 == 1 ? (uint32_t)(r >> 32)                          /* any bits */
                   : (uint32_t)(r >> 32) & 0x3FFFFFFFu;                         /* ordinary */
        memcpy((unsigned char *)p + 4 * i, &u, 4);
    }
}

static unsigned path_features;   /* the TS_FEAT_* bits of the paths make_path builds */

static ts_path make_path(ts_pack_kind kind, size_t width, size_t lp)
{
    ts_path path;
    memset(&path, 0, sizeof path);
    path.features = path_features;
    path.gemm_type = kind == TS_PACK_F32 ? TS_GEMM_F32
                   : is_float_kind(kind) ? TS_GEMM_BF16
                   : is_half_kind(kind) ? TS_GEMM_F16 : TS_GEMM_INT8;
    path.symbol = "test";
    path.ep = width;
    path.hp = width;
    path.lp = lp;
    path.pack = kind;
    return path;
}

/* The expected panel: element (r, k) of the source at src + (r*row_stride + k*k_stride)
 * source elements; zeros past rows and K. */
static void ref_panel(ts_pack_kind kind, const unsigned char *src, size_t rows, size_t width,
                      size_t K, size_t lp, size_t row_stride, size_t k_stride,
                      unsigned char *out)
{
    const size_t ksteps = (K + lp - 1) / lp, eb = packed_bytes(kind), sb = source_bytes(kind);
    memset(out, 0, ksteps * width * lp * eb);
    for (size_t r = 0; r < rows; ++r)
        for (size_t k = 0; k < K; ++k)
            ref_convert(kind, src + (r * row_stride + k * k_stride) * sb,
                        out + ((k / lp * width + r) * lp + k % lp) * eb);
}

static size_t first_difference(const unsigned char *a, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        if (a[i] != b[i])
            return i;
    return n;
}

/* ---- ts_pack_panel ------------------------------------------------------------------------------ */

static void check_panel(ts_pack_kind kind, size_t width, size_t lp, size_t rows, size_t K,
                        size_t row_stride, size_t k_stride)
{
    ts_path path = make_path(kind, width, lp);
    size_t bytes;
    if (ts_panel_bytes(&path, width, K, &bytes) || bytes == 0)
        return;
    const size_t extent = rows == 0 || K == 0 ? 0 : (rows - 1) * row_stride + (K - 1) * k_stride + 1;
    guarded_region rs, rd;
    unsigned char *src = guarded_alloc(extent * source_bytes(kind) + (extent == 0), &rs);
    unsigned char *dst = guarded_alloc(bytes, &rd);
    unsigned char *want = malloc(bytes);
    fill_source(kind, src, extent);
    memset(dst, 0xA5, bytes);
    ts_pack_panel(&path, dst, src, rows, width, K, row_stride, k_stride);
    ref_panel(kind, src, rows, width, K, lp, row_stride, k_stride, want);
    const size_t at = first_difference(dst, want, bytes);
    CHECK(at == bytes, "pack_panel %s width %zu lp %zu rows %zu K %zu strides %zu,%zu: byte %zu "
          "is %02x, want %02x", kind_name[kind], width, lp, rows, K, row_stride, k_stride, at,
          dst[at], want[at]);
    ++checked;
    free(want);
    guarded_free(&rs);
    guarded_free(&rd);
}

/* ---- ts_packed_b_init ---------------------------------------------------------------------------- */

/* B (K x N) with element (k, n) at B[k*k_stride + n*n_stride]: row-major (ldb, 1) or OHWI (1, K). */
static void check_packed_b(ts_pack_kind kind, size_t hp, size_t lp, size_t K, size_t N,
                           size_t k_stride, size_t n_stride)
{
    ts_path path = make_path(kind, hp, lp);
    size_t bytes, panel;
    if (ts_packed_b_bytes(&path, TS_LAYOUTS_ALL, K, N, &bytes) || ts_panel_bytes(&path, hp, K, &panel) || bytes == 0)
        return;
    const size_t extent = K == 0 || N == 0 ? 0 : (K - 1) * k_stride + (N - 1) * n_stride + 1;
    guarded_region rs, rd;
    unsigned char *B = guarded_alloc(extent * source_bytes(kind) + (extent == 0), &rs);
    unsigned char *memory = guarded_alloc(bytes, &rd);
    unsigned char *want = malloc(bytes);
    fill_source(kind, B, extent);
    memset(memory, 0xA5, bytes);
    ts_packed_b b;
    ts_packed_b_init(&b, &path, TS_LAYOUTS_ALL, K, N, B, k_stride, n_stride, 0, memory);

    /* column sums first (int8 GEMM), rounded up to 16 bytes, then the panels */
    size_t sums_bytes = 0;
    memset(want, 0, bytes);
    if (path.gemm_type == TS_GEMM_INT8) {
        sums_bytes = (N * 4 + 15) / 16 * 16;
        for (size_t n = 0; n < N; ++n) {
            int32_t sum = 0;
            for (size_t k = 0; k < K; ++k)
                sum += ((const int8_t *)B)[k * k_stride + n * n_stride];
            memcpy(want + 4 * n, &sum, 4);
        }
        memcpy(want + N * 4, memory + N * 4, sums_bytes - N * 4);   /* alignment padding: any */
    }
    for (size_t j = 0; j * hp < N; ++j) {
        const size_t cols = N - j * hp < hp ? N - j * hp : hp;
        ref_panel(kind, B + j * hp * n_stride * source_bytes(kind), cols, hp, K, lp, n_stride,
                  k_stride, want + sums_bytes + j * panel);
    }
    const size_t at = first_difference(memory, want, bytes);
    CHECK(at == bytes && b.data == memory + sums_bytes && b.N == N && b.K == K,
          "packed_b %s hp %zu lp %zu K %zu N %zu strides %zu,%zu: byte %zu of %zu (sums %zu) "
          "is %02x, want %02x", kind_name[kind], hp, lp, K, N, k_stride, n_stride, at, bytes,
          sums_bytes, at < bytes ? memory[at] : 0, at < bytes ? want[at] : 0);
    ++checked;
    free(want);
    guarded_free(&rs);
    guarded_free(&rd);
}

/* The binary16 conversions: every half through ts_f16_to_f32, fp32 values through
 * ts_f32_to_f16 and (NEON when built with it) ts_narrow_rows_f16, against the double
 * statements above and the hardware FCVT (__fp16; FPCR default: RNE, no flush, DN = 0). */
#if defined(__ARM_NEON)
#  define HW_FCVT 1    /* GCC moves __fp16 bits through SIMD registers: not with +nosimd */
#else
#  define HW_FCVT 0
#endif
static void check_half_conversions(void)
{
    for (uint32_t h = 0; h < 0x10000u; ++h) {
        float f = ts_f16_to_f32((uint16_t)h);
        uint32_t got, hw = ref_half_to_float_bits((uint16_t)h);
        memcpy(&got, &f, 4);
#if HW_FCVT
        __fp16 x;
        uint16_t hb = (uint16_t)h;
        memcpy(&x, &hb, 2);
        float fx = (float)x;
        memcpy(&hw, &fx, 4);
#endif
        CHECK(got == ref_half_to_float_bits((uint16_t)h) && got == hw,
              "f16_to_f32 %04x = %08x, want %08x (FCVT %08x)", h, got,
              ref_half_to_float_bits((uint16_t)h), hw);
        ++checked;
    }
    /* fp32 values: each half value, the midpoints to its neighbours and one ulp either side
     * of them (ties, just above/below), plus strided bit patterns and the edges */
    enum { BATCH = 64 };
    static float in[BATCH];
    static uint16_t out[BATCH];
    size_t filled = 0;
    for (uint64_t i = 0; i < 0x10000u * 6 + 0x100000u + 8; ++i) {
        uint32_t u;
        if (i < 0x10000u * 6) {
            uint32_t h = (uint32_t)(i / 6) & 0x7FFFu, sign = (uint32_t)(i / 6) & 0x8000u;
            float lo = ts_f16_to_f32((uint16_t)h), hi = ts_f16_to_f32((uint16_t)(h + 1));
            float mid = (float)(((double)lo + (double)hi) / 2);   /* exact: 12 bits */
            uint32_t m;
            memcpy(&m, &mid, 4);
            if (h >= 0x7C00u) {
                memcpy(&m, &lo, 4);
                m += (uint32_t)(i % 6) * 0x1000u;   /* inf, NaN payloads */
            }
            switch (i % 6) {
            case 0: memcpy(&u, &lo, 4); break;
            case 1: u = m; break;
            case 2: u = m + 1; break;
            case 3: u = m - 1; break;
            case 4: u = m + 0x1000u; break;
            default: u = m ^ 0x1FFFu; break;
            }
            u |= sign << 16;
        } else if (i < 0x10000u * 6 + 0x100000u) {
            u = (uint32_t)(i - 0x10000u * 6) * 4099u;     /* strided over all bit patterns */
        } else {
            static const uint32_t edges[8] = { 0x477FEFFFu, 0x477FF000u, 0x477FF001u, 0x33000000u,
                                               0x33000001u, 0x387FFFFFu, 0x38800000u, 0x7F800001u };
            u = edges[i - 0x10000u * 6 - 0x100000u];
        }
        float f;
        memcpy(&f, &u, 4);
        uint16_t got = ts_f32_to_f16(f), want = ref_float_to_half_bits(u), hw = want;
#if HW_FCVT
        __fp16 x = (__fp16)f;
        memcpy(&hw, &x, 2);
#endif
        CHECK(got == want && got == hw, "f32_to_f16 %08x = %04x, want %04x (FCVT %04x)", u,
              got, want, hw);
        ++checked;
        in[filled++] = f;
        if (filled == BATCH) {
            ts_narrow_rows_f16(in, 8, 8, 7, out, 8);   /* 8 rows of 7, strides 8 */
            for (size_t r = 0; r < 8; ++r)
                for (size_t c = 0; c < 7; ++c)
                    CHECK(out[r * 8 + c] == ts_f32_to_f16(in[r * 8 + c]),
                          "narrow_rows (%zu,%zu) %04x vs %04x", r, c, out[r * 8 + c],
                          ts_f32_to_f16(in[r * 8 + c]));
            filled = 0;
        }
    }
}

/* Every panel and packed-B case of the kinds kinds[0 .. n-1]. */
static void check_kinds(const ts_pack_kind *kinds, size_t n)
{
    static const size_t lps[] = { 1, 2, 4, 8 }, widths[] = { 4, 8, 12, 16, 24 };
    for (size_t ki = 0; ki < n; ++ki)
        for (size_t li = 0; li < 4; ++li)
            for (size_t wi = 0; wi < 5; ++wi) {
                const ts_pack_kind kind = kinds[ki];
                const size_t lp = lps[li], w = widths[wi];
                const size_t ks[] = { 1, lp + 1, 2 * lp, 3 * lp + 1, 17, 40 };
                const size_t rows[] = { 1, w / 2 + 1, w - 1, w };
                for (size_t i = 0; i < 6; ++i) {
                    const size_t K = ks[i];
                    for (size_t r = 0; r < 4; ++r) {
                        check_panel(kind, w, lp, rows[r], K, K + i % 3, 1);      /* A: k contiguous */
                        check_panel(kind, w, lp, rows[r], K, 1, rows[r] + r);    /* B: rows adjacent */
                    }
                    const size_t ns[] = { 1, w - 1, w, w + 1, 2 * w, 3 * w + 1, 5 * w + 2, 7 * w };
                    for (size_t n = 0; n < 8; ++n) {
                        check_packed_b(kind, w, lp, K, ns[n], ns[n] + n % 3, 1);   /* row-major */
                        check_packed_b(kind, w, lp, K, ns[n], 1, K);               /* OHWI */
                    }
                }
            }
}

int main(void)
{
    static const ts_pack_kind kinds[] = {
        TS_PACK_F32, TS_PACK_F32_BF16, TS_PACK_BF16, TS_PACK_S8, TS_PACK_S16, TS_PACK_U16,
        TS_PACK_F16, TS_PACK_F32_F16, TS_PACK_U8_S8 };
    static const ts_pack_kind bf16_kinds[] = { TS_PACK_F32_BF16, TS_PACK_BF16 };
    check_half_conversions();
    check_kinds(kinds, sizeof kinds / sizeof kinds[0]);
    path_features = TS_FEAT_BF16;
    check_kinds(bf16_kinds, 2);
#if defined(__aarch64__)
    /* FPCR.RMode = round toward zero [23:22], FZ [24], DN [25] (Arm ARM, FPCR) */
    static const uint64_t fpcrs[] = { 3u << 22, 1u << 24, 1u << 25 };
    const uint64_t fpcr = get_fpcr();
    for (size_t i = 0; i < 3; ++i) {
        set_fpcr(fpcr | fpcrs[i]);
        check_kinds(bf16_kinds, 2);
        set_fpcr(fpcr);
    }
#endif
    printf("checked %zu\nfailures %d\n", checked, failures);
    return failures != 0;
}
