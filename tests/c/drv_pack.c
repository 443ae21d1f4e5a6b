/* Packing harness: ts_pack_panel and ts_packed_b_init of a generated folder (ts_pack.c) against
 * an independent statement of the panel layout (README "Micro-kernel ABI") and of the element
 * conversions, byte for byte, for every pack kind, lp 1/2/4/8, panel widths 4..24, A-style
 * (k contiguous) and B-style (rows contiguous) sources with padded strides, row-major and OHWI
 * B. Sources and packed buffers sit flush against guard pages (a read or write outside them
 * faults). Float sources mix random values with the cases rounding to bf16 must get right
 * (ties, NaN payloads, infinities, the largest finite values, subnormals).
 *
 *   drv_pack        prints "checked <n>" and "failures <n>"; exit status 1 on any failure. */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <string.h>

#include "guarded.h"
#include "ts_pack_internal.h"

static int failures;
static size_t checked;

#define CHECK(cond, ...) do {                                                  \
        if (!(cond)) {                                                         \
            if (failures++ < 20) { printf("FAIL "); printf(__VA_ARGS__); printf("\n"); } \
        }                                                                      \
    } while (0)

static const char *kind_name[] = { "F32", "F32_BF16", "BF16", "S8", "S16", "U16" };

static int is_float_kind(ts_pack_kind kind)
{
    return kind == TS_PACK_F32 || kind == TS_PACK_F32_BF16 || kind == TS_PACK_BF16;
}

static size_t source_bytes(ts_pack_kind kind) { return is_float_kind(kind) ? 4 : 1; }
static size_t packed_bytes(ts_pack_kind kind)
{
    return kind == TS_PACK_F32 || kind == TS_PACK_F32_BF16 ? 4 : kind == TS_PACK_S8 ? 1 : 2;
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

static void fill_source(ts_pack_kind kind, void *p, size_t n)
{
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

static ts_path make_path(ts_pack_kind kind, size_t width, size_t lp)
{
    ts_path path;
    memset(&path, 0, sizeof path);
    path.gemm_type = kind == TS_PACK_F32 ? TS_GEMM_F32
                   : is_float_kind(kind) ? TS_GEMM_BF16 : TS_GEMM_INT8;
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
    if (ts_packed_b_bytes(&path, K, N, &bytes) || ts_panel_bytes(&path, hp, K, &panel) || bytes == 0)
        return;
    const size_t extent = K == 0 || N == 0 ? 0 : (K - 1) * k_stride + (N - 1) * n_stride + 1;
    guarded_region rs, rd;
    unsigned char *B = guarded_alloc(extent * source_bytes(kind) + (extent == 0), &rs);
    unsigned char *memory = guarded_alloc(bytes, &rd);
    unsigned char *want = malloc(bytes);
    fill_source(kind, B, extent);
    memset(memory, 0xA5, bytes);
    ts_packed_b b;
    ts_packed_b_init(&b, &path, K, N, B, k_stride, n_stride, memory);

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

int main(void)
{
    static const ts_pack_kind kinds[] = {
        TS_PACK_F32, TS_PACK_F32_BF16, TS_PACK_BF16, TS_PACK_S8, TS_PACK_S16, TS_PACK_U16 };
    static const size_t lps[] = { 1, 2, 4, 8 }, widths[] = { 4, 8, 12, 16, 24 };
    for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ++ki)
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
    printf("checked %zu\nfailures %d\n", checked, failures);
    return failures != 0;
}
