/* qdyn GEMM (int8 activations quantised per row x int8 / int4 weights -> fp32) under every
 * forced feature mask: results compared bit for bit with a scalar reference written from the
 * formulas of tilesmith.h (rint ties to even by floorf, whatever the rounding mode; int64 block
 * sums, nibbles decoded by shifts), and within a bound of a float64 GEMM of the unquantised activations; the
 * quantisation alone through an identity B; weight quantisers; bad inputs (TS_EINVAL, nothing
 * written). Every buffer sits against a guard page.
 * usage: drv_api_qdyn MASKS     prints a hash of every result per mask (equal across paths). */
#include "drv_api_common.h"   /* first: its _DEFAULT_SOURCE */

#include <fenv.h>
#include <float.h>

#include "ts_pack_internal.h"    /* the handle's fused kernel (ts_packed_b.qdyn) */
#include "ts_qdyn_internal.h"    /* the LHS quantise-pack on its own */

/* ---- reference --------------------------------------------------------------------------------- */

static int32_t clampi(int32_t v, int32_t lo, int32_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* rint(v), ties to even, in any rounding mode: floorf and v - floorf(v) are exact (|v| < 2^23) */
static float ref_rint(float v)
{
    if (!(fabsf(v) < 8388608.0f))
        return v;
    float f = floorf(v), d = v - f;
    return d > 0.5f || (d == 0.5f && fmodf(f, 2.0f) != 0.0f) ? f + 1.0f : f;
}

/* clamp(rint(v)) in float first, so huge values do not overflow the conversion */
static int32_t ref_rint_clamp(float v, float lo, float hi)
{
    float r = ref_rint(v);
    return (int32_t)(r < lo ? lo : r > hi ? hi : r);
}

/* rint(a[k] * inv) + zp of a row, before the clamp to int8 */
static int32_t ref_unclamped(const float *a, size_t K, size_t k)
{
    float lo = 0.0f, hi = 0.0f;
    for (size_t i = 0; i < K; ++i) {
        lo = fminf(lo, a[i]);
        hi = fmaxf(hi, a[i]);
    }
    float inv = 1.0f / fmaxf(hi / 255.0f - lo / 255.0f, FLT_MIN);
    return ref_rint_clamp(a[k] * inv, -4096.0f, 4096.0f)
           + ref_rint_clamp(-128.0f - lo * inv, -128.0f, 127.0f);
}

static void ref_quantize_row(const float *a, size_t K, int8_t *q, float *scale, int32_t *zp)
{
    float lo = 0.0f, hi = 0.0f;
    for (size_t k = 0; k < K; ++k) {
        lo = fminf(lo, a[k]);
        hi = fmaxf(hi, a[k]);
    }
    float h = hi / 255.0f, l = lo / 255.0f;
    float s = fmaxf(h - l, FLT_MIN);
    float inv = 1.0f / s;
    float li = lo * inv;
    *zp = ref_rint_clamp(-128.0f - li, -128.0f, 127.0f);
    for (size_t k = 0; k < K; ++k) {
        float v = a[k] * inv;
        q[k] = (int8_t)clampi(ref_rint_clamp(v, -4096.0f, 4096.0f) + *zp, -128, 127);
    }
    *scale = s;
}

/* weight element (n, k) of a qs8 or qs4 matrix */
static int32_t ref_weight(int bits, const void *B, size_t ldb, size_t n, size_t k)
{
    if (bits == 8)
        return ((const int8_t *)B)[n * ldb + k];
    uint8_t byte = ((const uint8_t *)B)[n * ldb + k / 2];
    /* low nibble for even k: shift it to the top, arithmetic shift back */
    int8_t v = (int8_t)(k % 2 == 0 ? (uint8_t)(byte << 4) : byte);
    return (int32_t)v / 16 - ((int32_t)v % 16 != 0 && v < 0);   /* floor(v / 16) */
}

/* C by the formulas of tilesmith.h; also the float64 check of each element against A itself */
static void ref_gemm(size_t M, size_t N, size_t K, const float *A, size_t lda, int bits,
                     const void *B, size_t ldb, const float *ws, size_t bl, const float *bias,
                     float cmin, float cmax, float *C, double *err_ratio)
{
    size_t block = bl == 0 ? K : bl, nb = K / block;
    int8_t *q = malloc(K ? K : 1);
    *err_ratio = 0.0;
    for (size_t m = 0; m < M; ++m) {
        float scale;
        int32_t zp;
        ref_quantize_row(A + m * lda, K, q, &scale, &zp);
        for (size_t n = 0; n < N; ++n) {
            float s = 0.0f;
            double exact = 0.0, qerr = 0.0, u_abs = 0.0;
            for (size_t b = 0; b < nb; ++b) {
                int64_t acc = 0;
                for (size_t k = b * block; k < (b + 1) * block; ++k) {
                    int32_t w = ref_weight(bits, B, ldb, n, k);
                    acc += (int64_t)(q[k] - zp) * w;
                    double wd = (double)ws[n * nb + b] * w;
                    exact += (double)A[m * lda + k] * wd;
                    qerr += (1.5 * scale + fabs(A[m * lda + k]) * ldexp(1.0, -22)) * fabs(wd);
                }
                /* per channel: u = (scale * wscale) * (float)acc; scale blocks (bl > 0):
                 * v_b = wscale * (float)acc_b summed, the row scale after the last block */
                float t = bl == 0 ? scale * ws[n * nb + b] : ws[n * nb + b];
                float u = t * (float)(int32_t)acc;
                s = b == 0 ? u : s + u;
                u_abs += fabs((double)scale * ws[n * nb + b] * (double)acc);
            }
            float y = bl == 0 ? s : scale * s;
            float x = y;
            if (bias != NULL) {
                x = y + bias[n];
                exact += bias[n];
                u_abs += fabsf(bias[n]);
            }
            x = x < cmin ? cmin : x;
            x = x > cmax ? cmax : x;
            C[m * N + n] = x;
            /* tilesmith.h's bound: quantisation of A (1.5 steps) + fp32 rounding of the epilogue */
            double clamped = exact < cmin ? cmin : exact > cmax ? cmax : exact;
            double bound = qerr + (double)(nb + 3) * ldexp(1.0, -23) * u_abs + 1e-30;
            double r = fabs((double)x - clamped) / bound;
            if (!isfinite(x))   /* fp32 overflow: only where the exact value is beyond FLT_MAX too */
                r = fabs(clamped) > 3.0e38 && (x > 0) == (clamped > 0) ? 0.0 : INFINITY;
            if (r > *err_ratio)
                *err_ratio = r;
        }
    }
    free(q);
}

/* ---- data -------------------------------------------------------------------------------------- */

static uint64_t hash = 1469598103934665603ull;
static void hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; ++i)
        hash = (hash ^ b[i]) * 1099511628211ull;
}

/* row m of A: random, or one of the special rows (ties, zero, one huge value, negative only) */
static void fill_row(float *a, size_t K, size_t m)
{
    for (size_t k = 0; k < K; ++k)
        a[k] = rand_f32() * 3.0f;
    switch (m % 7) {
    case 1:   /* ties: hi = 255, lo = 0 -> scale 1, zp -128, values k + 0.5 */
        for (size_t k = 0; k < K; ++k)
            a[k] = (float)(k % 255) + 0.5f;
        a[0] = 255.0f;
        break;
    case 2:   /* all zero, +0.0 and -0.0 */
        for (size_t k = 0; k < K; ++k)
            a[k] = k % 2 ? -0.0f : 0.0f;
        break;
    case 3:   /* one huge value */
        a[K / 2] = FLT_MAX;
        break;
    case 4:   /* negative only, ties: lo = -255 -> scale 1, zp 127 */
        for (size_t k = 0; k < K; ++k)
            a[k] = -(float)(k % 255) - 0.5f;
        a[K - 1] = -255.0f;
        break;
    case 5:   /* negative only, random */
        for (size_t k = 0; k < K; ++k)
            a[k] = -fabsf(a[k]) - 1e-3f;
        break;
    default:
        break;
    }
}

static float rand_scale(void)
{
    float s = (float)(rng_next() % 1000 + 1) / 4096.0f;
    return rng_next() % 5 == 0 ? -s : s;       /* negative scales occur in GGML checkpoints */
}

/* ---- one GEMM case ----------------------------------------------------------------------------- */

static void run_case(int bits, size_t bl, size_t M, size_t N, size_t K, int with_bias, int clamp)
{
    size_t block = bl == 0 ? K : bl, nb = K / block;
    size_t ldb = bits == 8 ? K + (N % 3) : (K + 1) / 2 + (N % 2);
    size_t lda = K + (M % 2), ldc = N + 1;
    size_t b_bytes = bits == 8 ? matrix_bytes(N, K, ldb, 1) : matrix_bytes(N, (K + 1) / 2, ldb, 1);
    float *A = guarded(matrix_bytes(M, K, lda, 4));
    unsigned char *B = guarded(b_bytes);
    float *ws = guarded(N * nb * 4), *bias = guarded(N * 4);
    float *C = guarded(matrix_bytes(M, N, ldc, 4)), *C2 = guarded(matrix_bytes(M, N, ldc, 4));
    float *R = malloc(M * N * 4 + 4);
    for (size_t m = 0; m < M; ++m)
        fill_row(A + m * lda, K, m + K);
    for (size_t i = 0; i < b_bytes; ++i)
        B[i] = (unsigned char)(rng_next() >> 56);
    if (bits == 8 && N > 0 && K > 0)
        B[0] = 0x80;   /* -128 */
    for (size_t i = 0; i < N * nb; ++i)
        ws[i] = rand_scale();
    for (size_t n = 0; n < N; ++n)
        bias[n] = rand_f32();
    /* clamp 0: none (-Inf, +Inf: the kernels skip it), 1: both bounds, 2: the upper only */
    float cmin = clamp == 1 ? -2.0f : -INFINITY, cmax = clamp ? 3.0f : INFINITY;
    const float *bp = with_bias ? bias : NULL;

    ts_packed_b *pb = NULL;
    int rc;
    if (M % 2 == 0)   /* the _ctx twins with ctx NULL: the calling thread's dispatch */
        rc = bits == 8 ? ts_pack_b_qs8_ctx(NULL, N, K, (const int8_t *)B, ldb, ws, &pb)
                       : ts_pack_b_qs4_ctx(NULL, N, K, B, ldb, ws, bl, &pb);
    else
        rc = bits == 8 ? ts_pack_b_qs8(N, K, (const int8_t *)B, ldb, ws, &pb)
                       : ts_pack_b_qs4(N, K, B, ldb, ws, bl, &pb);
    CHECK(rc == TS_OK, "pack qs%d bl %zu N %zu K %zu rc %d", bits, bl, N, K, rc);
    CHECK(rc != TS_OK || ts_packed_size(pb) >= N * K / (bits == 8 ? 1 : 2),
          "qs%d handle of %zu bytes for N %zu K %zu", bits, ts_packed_size(pb), N, K);
    /* the kernel the call runs (which one: main's dispatch lines, tests/test_drivers_qdyn.py):
     * the handle's own for M > 4 */
    CHECK(rc != TS_OK || (ts_gemm_qdyn_kernel(NULL, pb, M) != NULL
                          && (M <= 4 || strcmp(ts_gemm_qdyn_kernel(NULL, pb, M),
                                               ts_packed_kernel(pb)) == 0)),
          "handle packed for %s runs %s at M %zu", ts_packed_kernel(pb),
          ts_gemm_qdyn_kernel(NULL, pb, M), M);
    if (rc != TS_OK) { free(R); release_all(); return; }
    CHECK(ts_gemm_qdyn_f32(NULL, M, A, lda, pb, bp, cmin, cmax, C, ldc) == TS_OK, "gemm rc");
    ts_packed_a *pa = NULL;
    CHECK(ts_pack_a_qdyn(M, K, A, lda, &pa) == TS_OK, "pack_a rc");
    CHECK(ts_gemm_qdyn_f32_packed_a(NULL, pa, pb, bp, cmin, cmax, C2, ldc) == TS_OK, "packed_a rc");
    ts_packed_a_free(pa);
    ts_packed_free(pb);

    double ratio;
    ref_gemm(M, N, K, A, lda, bits, B, ldb, ws, bl, bp, cmin, cmax, R, &ratio);
    int bad = 0;
    for (size_t m = 0; m < M; ++m)
        for (size_t n = 0; n < N; ++n) {
            float c = C[m * ldc + n], c2 = C2[m * ldc + n], r = R[m * N + n];
            if (memcmp(&c, &r, 4) != 0 || memcmp(&c2, &r, 4) != 0) {
                if (bad++ < 3)
                    CHECK(0, "qs%d bl %zu M %zu N %zu K %zu C[%zu][%zu] %a packed_a %a ref %a",
                          bits, bl, M, N, K, m, n, c, c2, r);
            }
            hash_bytes(&c, 4);
        }
    if (bad)
        failures += bad - (bad < 3 ? bad : 3);
    CHECK(ratio <= 1.0, "qs%d bl %zu M %zu N %zu K %zu: error %.3g x the float64 bound", bits, bl,
          M, N, K, ratio);
    free(R);
    release_all();
}

/* The range pass of the call's input check (ts_qdyn_row_ranges) and the quantising pass that
 * takes its ranges (ts_qdyn_quant_pack_ranged, no sums: the smmla panel of lp 8) give
 * ref_quantize_row's bytes, scales and zero points; the range pass finds a NaN or an infinity
 * at the start, middle and end (the scalar tail where K is not a multiple of 16) of any row. */
static void test_ranges(float *A, size_t lda, size_t M, size_t K, const int8_t *want,
                        const float *wscale, const int32_t *wzp)
{
    size_t ksteps = (K + 7) / 8, bytes = M * ksteps * 8;
    float *lohi = guarded(2 * M * 4), *sc = guarded(M * 4);
    int32_t *zp = guarded(M * 4);
    int8_t *dst = guarded(bytes);
    CHECK(ts_qdyn_row_ranges(A, lda, M, K, lohi) == 1, "ranges M %zu K %zu: finite", M, K);
    ts_qdyn_layout layout = ts_qdyn_panel_layout(M, 8, ksteps);
    ts_qdyn_quant_pack_ranged(A, lda, M, M, K, &layout, lohi, dst, sc, zp, NULL);
    int bad = 0;
    for (size_t m = 0; m < M; ++m) {
        bad += memcmp(&sc[m], &wscale[m], 4) != 0 || zp[m] != wzp[m];
        for (size_t k = 0; k < ksteps * 8; ++k)
            bad += dst[k / 8 * M * 8 + m * 8 + k % 8] != (k < K ? want[m * K + k] : 0);
    }
    CHECK(bad == 0, "quant_pack_ranged M %zu K %zu: %d bytes / rows differ", M, K, bad);
    static const float specials[3] = { NAN, INFINITY, -INFINITY };
    const size_t where[3] = { 0, K / 2, K - 1 };
    for (size_t v = 0; v < 3; ++v)
        for (size_t w = 0; w < 3; ++w) {
            float *x = &A[(M - 1 - (v + w) % M) * lda + where[w]], keep = *x;
            *x = specials[v];
            CHECK(ts_qdyn_row_ranges(A, lda, M, K, lohi) == 0, "ranges M %zu K %zu: %g at k "
                  "%zu not found", M, K, specials[v], where[w]);
            *x = keep;
        }
}

/* The LHS quantise-pack alone (ts_qdyn_quant_pack: what every qdyn path quantises with) against
 * ref_quantize_row byte for byte, in every panel layout a path could ask for (lp 1, 2, 4, 8, 16;
 * partial strips: rows past M zero; k-steps past K zero) and row-major with a stride (the bytes
 * between rows untouched): M = 1..17, odd and even K, the special rows of fill_row (ties,
 * all-zero, one huge value, negative only); scale, zp and the row sums too. */
static void test_quant_pack(void)
{
    static const size_t lps[] = { 1, 2, 4, 8, 16 };
    for (size_t M = 1; M <= 17; ++M) {
        const size_t Ks[2] = { 2 * M + 1, 16 * M + (M % 4) * 5 };
        for (size_t ki = 0; ki < 2; ++ki) {
            size_t K = Ks[ki], lda = K + M % 3;
            float *A = guarded(M * lda * 4), *sc = guarded(M * 4);
            int32_t *zp = guarded(M * 4), *sums = guarded(M * 4);
            int8_t *want = malloc(M * K);
            float *wscale = malloc(M * 4);
            int32_t *wzp = malloc(M * 4), *wsum = calloc(M, 4);
            for (size_t m = 0; m < M; ++m) {
                fill_row(A + m * lda, K, m + K);
                ref_quantize_row(A + m * lda, K, want + m * K, &wscale[m], &wzp[m]);
                for (size_t k = 0; k < K; ++k)
                    wsum[m] += want[m * K + k];
            }
            for (size_t li = 0; li <= 5; ++li) {
                /* li < 5: a panel of width M + M % 3 rows, one k-step more than K needs;
                 * li == 5: row-major rows of stride K + 3 */
                size_t lp = li < 5 ? lps[li] : 16, width = li < 5 ? M + M % 3 : M;
                size_t ksteps = (K + lp - 1) / lp + 1, ld = K + 3;
                ts_qdyn_layout layout = li < 5 ? ts_qdyn_panel_layout(width, lp, ksteps)
                                               : (ts_qdyn_layout){ 16, ld, 16, K };
                size_t bytes = li < 5 ? width * ksteps * lp : M * ld;
                int8_t *dst = guarded(bytes);
                memset(dst, 0x5a, bytes);
                memset(sc, 0, M * 4);
                ts_qdyn_quant_pack(A, lda, M, width, K, &layout, dst, sc, zp, sums);
                int bad = 0;
                for (size_t i = 0; i < bytes; ++i) {
                    size_t r, k;
                    if (li < 5) {
                        size_t step = i / (width * lp), in = i % (width * lp);
                        r = in / lp;
                        k = step * lp + in % lp;
                    } else {
                        r = i / ld;
                        k = i % ld;
                    }
                    int expect = li == 5 && k >= K ? 0x5a          /* between rows: untouched */
                                 : r < M && k < K ? want[r * K + k] : 0;
                    if (dst[i] != (int8_t)expect && bad++ < 3)
                        CHECK(0, "quant_pack M %zu K %zu lp %zu layout %zu: row %zu k %zu "
                              "= %d, want %d", M, K, lp, li, r, k, dst[i], expect);
                }
                failures += bad > 3 ? bad - 3 : 0;
                for (size_t m = 0; m < M; ++m)
                    CHECK(memcmp(&sc[m], &wscale[m], 4) == 0 && zp[m] == wzp[m]
                          && sums[m] == wsum[m], "quant_pack M %zu K %zu row %zu: scale %a zp "
                          "%d sum %d, want %a %d %d", M, K, m, sc[m], zp[m], sums[m],
                          wscale[m], wzp[m], wsum[m]);
                for (size_t m = 0; m < M; ++m)
                    hash_bytes(&sc[m], 4);
                hash_bytes(dst, bytes);
            }
            test_ranges(A, lda, M, K, want, wscale, wzp);
            free(want);
            free(wscale);
            free(wzp);
            free(wsum);
            release_all();
        }
    }
}

/* One row set through ts_qdyn_quant_pack (an lp-8 panel with sums, and row-major) against
 * ref_quantize_row byte for byte, with scales, zero points and sums; returns the failures. */
static int quant_pack_matches(const float *A, size_t lda, size_t M, size_t K, const char *what)
{
    int bad = 0;
    int8_t *want = malloc(M * K);
    float *wscale = malloc(M * 4);
    int32_t *wzp = malloc(M * 4), *wsum = calloc(M, 4);
    for (size_t m = 0; m < M; ++m) {
        ref_quantize_row(A + m * lda, K, want + m * K, &wscale[m], &wzp[m]);
        for (size_t k = 0; k < K; ++k)
            wsum[m] += want[m * K + k];
    }
    for (size_t lp = 8; lp <= 16; lp += 8) {
        size_t ksteps = (K + lp - 1) / lp, bytes = M * ksteps * lp;
        int8_t *dst = guarded(bytes);
        float *sc = guarded(M * 4);
        int32_t *zp = guarded(M * 4), *sums = guarded(M * 4);
        ts_qdyn_layout layout = lp == 8 ? ts_qdyn_panel_layout(M, 8, ksteps)
                                        : (ts_qdyn_layout){ 16, K, 16, K };
        ts_qdyn_quant_pack(A, lda, M, M, K, &layout, dst, sc, zp, lp == 8 ? sums : NULL);
        for (size_t m = 0; m < M; ++m) {
            bad += memcmp(&sc[m], &wscale[m], 4) != 0 || zp[m] != wzp[m]
                   || (lp == 8 && sums[m] != wsum[m]);
            for (size_t k = 0; k < K; ++k) {
                int8_t got = lp == 8 ? dst[k / 8 * M * 8 + m * 8 + k % 8] : dst[m * K + k];
                if (got != want[m * K + k] && bad++ < 3)
                    printf("  %s: lp %zu row %zu k %zu = %d, want %d\n", what, lp, m, k, got,
                           want[m * K + k]);
            }
        }
        hash_bytes(dst, bytes);
    }
    free(want);
    free(wscale);
    free(wzp);
    free(wsum);
    release_all();
    return bad;
}

/* rint(A * inv) + zp is one past the int8 range before the clamp: 128 at a row's maximum, -129
 * at its minimum (zp = rint(-128 - lo * inv) rounds -128 - lo * inv, a tie after its own
 * rounding, away from rint(lo * inv)). Rows found by a search over (lo, hi) with numpy's float32
 * of the same formulas, checked here against the reference; each extreme sits at k = 5 (the
 * 64-k NEON blocks), 70 (the 16-k block) and 81 (the scalar tail) of K = 83 in turn, the other
 * k between lo and hi. The clamp must give 127 / -128 on every path. */
static void test_quant_preclamp(void)
{
    static const float rows[3][2] = {      /* lo, hi */
        { -0x1.b347eep-9f, 0x1.1f59dap-1f },     /* 128 at hi */
        { -0x1.2c4558p+1f, 0x1.6b4ecp-2f },      /* 128 at hi */
        { -0x1.1fa3bap-9f, 0x1.1df44p+0f },      /* -129 at lo */
    };
    static const size_t at[3] = { 5, 70, 81 };
    const size_t K = 83, M = 9, lda = K + 1;
    float *A = malloc(M * lda * 4);
    for (size_t r = 0; r < 3; ++r)
        for (size_t p = 0; p < 3; ++p) {
            float *a = A + (3 * r + p) * lda, lo = rows[r][0], hi = rows[r][1];
            for (size_t k = 0; k < K; ++k)
                a[k] = lo + (hi - lo) * (float)((k * 37) % 101) / 101.0f * 0.999f;
            a[at[p]] = r < 2 ? hi : lo;
            a[at[(p + 1) % 3]] = r < 2 ? lo : hi;
            int32_t x = ref_unclamped(a, K, at[p]);
            CHECK(x == (r < 2 ? 128 : -129), "preclamp row %zu k %zu: %d before the clamp",
                  r, at[p], x);
        }
    CHECK(quant_pack_matches(A, lda, M, K, "preclamp") == 0, "quant_pack: rows past int8 "
          "before the clamp");
    free(A);
}

/* qa does not depend on the rounding mode's rint (tilesmith.h: ties to even whatever FPCR
 * says); the fp32 products and quotients do, in the reference too. Under each mode the
 * quantise-pack gives the reference's bytes (fill_row's rows: ties, zeros, one huge value,
 * negative only; K past one 64-k block, a 16-k block and a scalar tail). */
static void test_quant_rounding_modes(void)
{
    static const int modes[4] = { FE_TONEAREST, FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO };
    const size_t M = 7, K = 147, lda = K;
    float *A = malloc(M * lda * 4);
    for (size_t m = 0; m < M; ++m)
        fill_row(A + m * lda, K, m);
    for (size_t i = 0; i < 4; ++i) {
        CHECK(fesetround(modes[i]) == 0, "fesetround %d", modes[i]);
        int bad = quant_pack_matches(A, lda, M, K, "rounding mode");
        fesetround(FE_TONEAREST);
        CHECK(bad == 0, "quant_pack under rounding mode %zu: %d differ", i, bad);
    }
    free(A);
}

/* Quantisation alone: B = identity (qs8, scale 1) gives C[m][k] = scale[m] * (qa - zp). */
static void test_quantisation_identity(void)
{
    size_t M = 14, K = 300, ldc = K;
    float *A = guarded(M * K * 4), *ws = guarded(K * 4), *C = guarded(M * K * 4);
    int8_t *B = guarded(K * K), *q = malloc(K);
    memset(B, 0, K * K);
    for (size_t n = 0; n < K; ++n) {
        B[n * K + n] = 1;
        ws[n] = 1.0f;
    }
    for (size_t m = 0; m < M; ++m)
        fill_row(A + m * K, K, m);
    ts_packed_b *pb = NULL;
    CHECK(ts_pack_b_qs8(K, K, B, K, ws, &pb) == TS_OK, "identity pack");
    CHECK(ts_gemm_qdyn_f32(NULL, M, A, K, pb, NULL, -INFINITY, INFINITY, C, ldc) == TS_OK, "identity gemm");
    ts_packed_free(pb);
    for (size_t m = 0; m < M; ++m) {
        float scale;
        int32_t zp;
        ref_quantize_row(A + m * K, K, q, &scale, &zp);
        for (size_t k = 0; k < K; ++k) {
            float want = scale * (float)(q[k] - zp);
            CHECK(memcmp(&want, &C[m * ldc + k], 4) == 0, "quant row %zu k %zu: %a != %a (A %a)",
                  m, k, C[m * ldc + k], want, A[m * K + k]);
        }
    }
    /* spot values of the tie rows: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2 (scale 1, zp -128 / 127) */
    CHECK(C[1 * ldc + 0] == 255.0f && C[1 * ldc + 1] == 2.0f && C[1 * ldc + 2] == 2.0f
          && C[1 * ldc + 3] == 4.0f, "ties row: %g %g %g %g", C[ldc], C[ldc + 1], C[ldc + 2], C[ldc + 3]);
    CHECK(C[4 * ldc + 0] == 0.0f && C[4 * ldc + 1] == -2.0f && C[4 * ldc + 2] == -2.0f,
          "negative ties row: %g %g %g", C[4 * ldc], C[4 * ldc + 1], C[4 * ldc + 2]);
    for (size_t k = 0; k < K; ++k)
        CHECK(C[2 * ldc + k] == 0.0f, "zero row");
    free(q);
    release_all();
}

/* int4 nibble order and sign: byte 0x8F holds k even = -1 (0xF), k odd = -8 (0x8); 0x70 holds
 * k even = 0, k odd = 7. With A one-hot (qa - zp known) the column picks each nibble. */
static void test_nibbles(void)
{
    size_t N = 2, K = 64, M = 4;
    uint8_t *B = guarded(N * K / 2);
    float *ws = guarded(N * 2 * 4), *A = guarded(M * K * 4), *C = guarded(M * N * 4);
    memset(B, 0, N * K / 2);
    B[0] = 0x8F;               /* row 0: k0 = -1, k1 = -8 */
    B[K / 2 + 1] = 0x70;       /* row 1: k2 = 0, k3 = 7 */
    ws[0] = ws[1] = ws[2] = ws[3] = 1.0f;   /* N x 2 blocks */
    memset(A, 0, M * K * 4);
    for (size_t m = 0; m < M; ++m)
        A[m * K + m] = 255.0f; /* scale 1, zp -128, qa[m] = 127: qa - zp = 255 at k = m, 0 elsewhere */
    ts_packed_b *pb = NULL;
    CHECK(ts_pack_b_qs4(N, K, B, K / 2, ws, 32, &pb) == TS_OK, "nibble pack");
    CHECK(ts_gemm_qdyn_f32(NULL, M, A, K, pb, NULL, -INFINITY, INFINITY, C, N) == TS_OK, "nibble gemm");
    ts_packed_free(pb);
    const float want[4][2] = { { -255.0f, 0.0f }, { -2040.0f, 0.0f }, { 0.0f, 0.0f }, { 0.0f, 1785.0f } };
    for (size_t m = 0; m < M; ++m)
        for (size_t n = 0; n < N; ++n)
            CHECK(C[m * N + n] == want[m][n], "nibble C[%zu][%zu] = %g, want %g", m, n, C[m * N + n],
                  want[m][n]);
    release_all();
}

/* ts_quantize_qs8 / qs4 against the formulas, and a round trip through the GEMM. */
static void test_weight_quantisers(void)
{
    size_t N = 5, K = 96, ldw = 100;
    float *W = guarded(N * ldw * 4), *s8 = guarded(N * 4), *s4 = guarded(N * 3 * 4);
    int8_t *q8 = guarded(N * K);
    uint8_t *q4 = guarded(N * K / 2);
    for (size_t i = 0; i < N * ldw; ++i)
        W[i] = rand_f32();
    for (size_t k = 0; k < K; ++k)
        W[3 * ldw + k] = 0.0f;               /* amax 0 -> scale 1 */
    W[1 * ldw + 5] = 7.0f;                   /* exact tie candidates */
    CHECK(ts_quantize_qs8(N, K, W, ldw, q8, s8) == TS_OK, "quantize_qs8 rc");
    CHECK(ts_quantize_qs4(N, K, W, ldw, 32, q4, s4) == TS_OK, "quantize_qs4 rc");
    for (size_t n = 0; n < N; ++n) {
        float amax = 0.0f;
        for (size_t k = 0; k < K; ++k)
            amax = fmaxf(amax, fabsf(W[n * ldw + k]));
        float sc = amax == 0.0f ? 1.0f : amax / 127.0f;
        CHECK(memcmp(&sc, &s8[n], 4) == 0, "qs8 scale %zu", n);
        for (size_t k = 0; k < K; ++k) {
            float v = W[n * ldw + k] / sc;
            CHECK(q8[n * K + k] == ref_rint_clamp(v, -127.0f, 127.0f), "qs8 q[%zu][%zu]", n, k);
        }
        for (size_t b = 0; b < 3; ++b) {
            float am = 0.0f;
            for (size_t k = b * 32; k < b * 32 + 32; ++k)
                am = fmaxf(am, fabsf(W[n * ldw + k]));
            float s = am == 0.0f ? 1.0f : am / 7.0f;
            CHECK(memcmp(&s, &s4[n * 3 + b], 4) == 0, "qs4 scale %zu %zu", n, b);
            for (size_t k = b * 32; k < b * 32 + 32; ++k) {
                float v = W[n * ldw + k] / s;
                CHECK(ref_weight(4, q4, K / 2, n, k) == ref_rint_clamp(v, -8.0f, 7.0f),
                      "qs4 q[%zu][%zu] = %d", n, k, (int)ref_weight(4, q4, K / 2, n, k));
            }
        }
    }
    release_all();
}

/* Bad inputs: TS_EINVAL, C and *out untouched. */
static void test_bad_inputs(void)
{
    size_t M = 3, N = 5, K = 64;
    float *A = guarded(M * K * 4), *ws = guarded(N * 2 * 4), *bias = guarded(N * 4);
    float *C = guarded(M * N * 4);
    int8_t *B8 = guarded(N * K);
    uint8_t *B4 = guarded(N * K / 2);
    for (size_t i = 0; i < M * K; ++i) A[i] = rand_f32();
    for (size_t i = 0; i < N * K; ++i) B8[i] = rand_s8();
    for (size_t i = 0; i < N * K / 2; ++i) B4[i] = (uint8_t)rand_s8();
    for (size_t i = 0; i < N * 2; ++i) ws[i] = 0.5f;
    for (size_t i = 0; i < N; ++i) bias[i] = 0.25f;
    ts_packed_b *sentinel = (ts_packed_b *)(uintptr_t)0x1234, *pb = sentinel;
    ts_packed_a *pa_s = (ts_packed_a *)(uintptr_t)0x5678, *pa = pa_s;

    CHECK(ts_pack_b_qs4(N, K, B4, K / 2, ws, 16, &pb) == TS_EINVAL && pb == sentinel, "bl 16");
    CHECK(ts_pack_b_qs4(N, K, B4, K / 2, ws, 48, &pb) == TS_EINVAL && pb == sentinel, "bl 48");
    CHECK(ts_pack_b_qs4(N, 96, B4, 48, ws, 64, &pb) == TS_EINVAL && pb == sentinel, "bl 64 K 96");
    CHECK(ts_pack_b_qs4(N, K, B4, K / 2, NULL, 32, &pb) == TS_EINVAL && pb == sentinel, "NULL scales 4");
    CHECK(ts_pack_b_qs8(N, K, B8, K, NULL, &pb) == TS_EINVAL && pb == sentinel, "NULL scales 8");
    ws[3] = NAN;
    CHECK(ts_pack_b_qs8(N, K, B8, K, ws, &pb) == TS_EINVAL && pb == sentinel, "NaN scale");
    ws[3] = INFINITY;
    CHECK(ts_pack_b_qs4(N, K, B4, K / 2, ws, 32, &pb) == TS_EINVAL && pb == sentinel, "Inf scale");
    ws[3] = 0.5f;
    ws[N * 2 - 1] = NAN;        /* the last block's scale of the last column (bl 32: 2 blocks) */
    CHECK(ts_pack_b_qs4(N, K, B4, K / 2, ws, 32, &pb) == TS_EINVAL && pb == sentinel,
          "NaN last block scale");
    ws[N - 1] = -INFINITY;      /* bl 64: one block, N scales */
    CHECK(ts_pack_b_qs4(N, K, B4, K / 2, ws, 64, &pb) == TS_EINVAL && pb == sentinel,
          "-Inf scale bl 64");
    ws[N * 2 - 1] = ws[N - 1] = 0.5f;
    CHECK(ts_pack_b_qs4(N, K, B4, K / 2, ws, 33, &pb) == TS_EINVAL && pb == sentinel, "bl 33");
    CHECK(ts_pack_b_qs4(N, K, B4, K / 2, ws, 128, &pb) == TS_EINVAL && pb == sentinel,
          "bl 128 > K");
    CHECK(ts_pack_b_qs4(N, 160, B4, 80, ws, 64, &pb) == TS_EINVAL && pb == sentinel,
          "bl 64 K 160");
    CHECK(ts_pack_b_qs8(N, TS_QDYN_S8_MAX_K + 1, B8, TS_QDYN_S8_MAX_K + 1, ws, &pb) == TS_EINVAL
          && pb == sentinel, "qs8 K bound");
    CHECK(ts_pack_b_qs4(1, (size_t)TS_QDYN_S4_MAX_BL + 1, B4, 1 << 20, ws, 0, &pb) == TS_EINVAL
          && pb == sentinel, "qs4 block bound");
    CHECK(ts_pack_b_qs8(N, K, B8, K - 1, ws, &pb) == TS_EINVAL && pb == sentinel, "ldb < K");

    CHECK(ts_pack_b_qs4(N, K, B4, K / 2, ws, 32, &pb) == TS_OK, "pack ok");
    /* ts_gemm_qdyn_kernel: NULL exactly where the call cannot run the handle */
    CHECK(ts_gemm_qdyn_kernel(NULL, NULL, 1) == NULL && ts_gemm_qdyn_kernel(NULL, pb, 0) == NULL,
          "qdyn kernel of nothing");
    ts_packed_b *f32 = NULL;
    CHECK(ts_pack_b_f32(1, 1, A, 1, &f32) == TS_OK && ts_gemm_qdyn_kernel(NULL, f32, 1) == NULL,
          "qdyn kernel of an fp32 handle");
    ts_packed_free(f32);
    ts_context *v80 = NULL;
    CHECK(ts_context_create(&v80) == TS_OK && ts_context_set_feature_mask(v80, 0) == TS_OK,
          "context");
    int runs = ts_gemm_qdyn_f32(v80, M, A, K, pb, bias, -1.0f, 1.0f, C, N);
    CHECK((ts_gemm_qdyn_kernel(v80, pb, M) == NULL) == (runs == TS_EINVAL),
          "Armv8.0 context: kernel %s, call rc %d", ts_gemm_qdyn_kernel(v80, pb, M), runs);
    ts_context_free(v80);
    memset(C, 0x5A, M * N * 4);
    A[M * K - 1] = NAN;
    CHECK(ts_gemm_qdyn_f32(NULL, M, A, K, pb, bias, -1.0f, 1.0f, C, N) == TS_EINVAL, "NaN A");
    CHECK(ts_pack_a_qdyn(M, K, A, K, &pa) == TS_EINVAL && pa == pa_s, "NaN A pack_a");
    CHECK(ts_pack_a_qdyn(M, 0, A, K, &pa) == TS_EINVAL && pa == pa_s, "pack_a K = 0");
    A[M * K - 1] = -INFINITY;
    CHECK(ts_gemm_qdyn_f32(NULL, M, A, K, pb, bias, -1.0f, 1.0f, C, N) == TS_EINVAL, "Inf A");
    A[M * K - 1] = 1.0f;
    bias[2] = NAN;
    CHECK(ts_gemm_qdyn_f32(NULL, M, A, K, pb, bias, -1.0f, 1.0f, C, N) == TS_EINVAL, "NaN bias");
    bias[2] = 0.25f;
    CHECK(ts_gemm_qdyn_f32(NULL, M, A, K, pb, bias, 1.0f, -1.0f, C, N) == TS_EINVAL, "cmin > cmax");
    CHECK(ts_gemm_qdyn_f32(NULL, M, A, K, pb, bias, NAN, 1.0f, C, N) == TS_EINVAL, "NaN cmin");
    CHECK(ts_gemm_qdyn_f32(NULL, M, A, K, NULL, bias, -1.0f, 1.0f, C, N) == TS_EINVAL, "NULL B");
    CHECK(ts_gemm_qdyn_f32(NULL, M, NULL, K, pb, bias, -1.0f, 1.0f, C, N) == TS_EINVAL, "NULL A");
    CHECK(ts_gemm_qdyn_f32(NULL, M, A, K, pb, bias, -1.0f, 1.0f, C, N - 1) == TS_EINVAL, "ldc < N");
    CHECK(ts_gemm_qdyn_f32(NULL, M, A, K, pb, bias, -1.0f, 1.0f, (float *)A, N) == TS_EINVAL, "C aliases A");
    CHECK(all_bytes(C, M * N * 4, 0x5A), "C written on error");
    ts_packed_b *other = NULL;
    CHECK(ts_pack_b_s8(K, N, B8, N, &other) == TS_OK, "s8 pack");
    CHECK(ts_gemm_qdyn_f32(NULL, M, A, K, other, NULL, -1.0f, 1.0f, C, N) == TS_EINVAL, "s8 handle");
    CHECK(ts_pack_a_qdyn(2, K + 1, A, K + 1, &pa) == TS_OK, "pack_a");
    CHECK(ts_gemm_qdyn_f32_packed_a(NULL, pa, pb, NULL, -1.0f, 1.0f, C, N) == TS_EINVAL, "packed A of other K");
    CHECK(ts_gemm_qdyn_f32_packed_a(NULL, NULL, pb, NULL, -1.0f, 1.0f, C, N) == TS_EINVAL, "NULL packed A");
    CHECK(all_bytes(C, M * N * 4, 0x5A), "C written on error");
    ts_packed_a_free(pa);
    ts_packed_free(other);
    ts_packed_free(pb);
    float *W = guarded(N * K * 4);
    int8_t *q = guarded(N * K);
    float *s = guarded(N * 4);
    for (size_t i = 0; i < N * K; ++i) W[i] = rand_f32();
    W[7] = INFINITY;
    memset(q, 0x33, N * K);
    CHECK(ts_quantize_qs8(N, K, W, K, q, s) == TS_EINVAL && all_bytes(q, N * K, 0x33), "quantize Inf");
    W[7] = 0.0f;
    CHECK(ts_quantize_qs4(N, K, W, K, 48, (uint8_t *)q, s) == TS_EINVAL && all_bytes(q, N * K, 0x33),
          "quantize_qs4 bl 48");
    CHECK(ts_quantize_qs8(N, K, W, K, q, NULL) == TS_EINVAL && all_bytes(q, N * K, 0x33), "quantize NULL scales");
    release_all();
}

/* K bounds: at TS_QDYN_S8_MAX_K (qs8) and TS_QDYN_S4_MAX_BL (qs4 per channel) with the inputs
 * that reach them (A constant positive: qa - zp = 255; B all -128 / -8) the block sum
 * -255*128*K (-255*8*K) is exact; one more is TS_EINVAL (test_bad_inputs). */
static void test_k_bounds(void)
{
    for (int bits = 8; bits >= 4; bits -= 4) {
        size_t K = bits == 8 ? TS_QDYN_S8_MAX_K : TS_QDYN_S4_MAX_BL, bytes = bits == 8 ? K : K / 2;
        float *A = guarded(K * 4), *ws = guarded(4), *C = guarded(4);
        unsigned char *B = guarded(bytes);
        for (size_t k = 0; k < K; ++k)
            A[k] = 1.0f;
        memset(B, bits == 8 ? 0x80 : 0x88, bytes);
        ws[0] = 1.0f;
        ts_packed_b *pb = NULL;
        int rc = bits == 8 ? ts_pack_b_qs8(1, K, (const int8_t *)B, K, ws, &pb)
                           : ts_pack_b_qs4(1, K, B, bytes, ws, 0, &pb);
        CHECK(rc == TS_OK, "bound pack qs%d", bits);
        if (rc == TS_OK) {
            CHECK(ts_gemm_qdyn_f32(NULL, 1, A, K, pb, NULL, -INFINITY, INFINITY, C, 1) == TS_OK, "bound gemm");
            int64_t acc = -255 * (int64_t)(bits == 8 ? 128 : 8) * (int64_t)K;
            float scale = 1.0f / 255.0f;
            float want = scale * (float)(int32_t)acc;
            CHECK(acc >= INT32_MIN && memcmp(&want, C, 4) == 0, "bound qs%d: %a != %a", bits, C[0], want);
            ts_packed_free(pb);
        }
        release_all();
    }
}

/* The kernel a qs8 (bits 8) or qs4 (bits 4, bl) handle of the current dispatch runs at M rows
 * (ts_gemm_qdyn_kernel): the Python side checks it against the manifest (the fused kernels,
 * the fp32 epilogue inside, where the path's instruction has them, the decode kernel for small
 * M, else the raw int8 kernel), so the cases above test them. ts_packed_kernel names the
 * handle's kernel of M > 4. */
static const char *fused_kernel_of(int bits, size_t bl, size_t M)
{
    static unsigned char B[64 * 64];
    static const float ws[64 * 2] = { 1.0f };
    ts_packed_b *pb = NULL;
    /* qs8: 64 columns, at least one call of the dotprod path's decode kernel over the raw
     * panels (it runs N of at least its hp) */
    int rc = bits == 8 ? ts_pack_b_qs8(64, 64, (const int8_t *)B, 64, ws, &pb)
                       : ts_pack_b_qs4(8, 64, B, 32, ws, bl, &pb);
    if (rc != TS_OK)
        return "error";
    const char *name = ts_gemm_qdyn_kernel(NULL, pb, M);
    CHECK(name != NULL && strcmp(ts_gemm_qdyn_kernel(NULL, pb, 5), ts_packed_kernel(pb)) == 0,
          "qs%d bl %zu: packed for %s, M 5 runs %s", bits, bl, ts_packed_kernel(pb),
          ts_gemm_qdyn_kernel(NULL, pb, 5));
    ts_packed_free(pb);
    return name != NULL ? name : "null";
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: %s MASKS\n", argv[0]); return 2; }
    setvbuf(stdout, NULL, _IONBF, 0);
    printf("features=%u\n", ts_cpu_features());
    static const size_t Ns[] = { 1, 7, 13, 33 };
    for (char *mask_s = strtok(argv[1], ","); mask_s; mask_s = strtok(NULL, ",")) {
        unsigned mask = (unsigned)strtoul(mask_s, NULL, 0);
        ts_set_feature_mask(mask);
        printf("mask=%u qdyn=%s qdyn_s8=%s qdyn_s4=%s qdyn_s4pc=%s qdyn_s8_m1=%s qdyn_s4_m1=%s "
               "qdyn_s4pc_m4=%s\n", mask, ts_gemm_kernel(TS_GEMM_QDYN), fused_kernel_of(8, 0, 8),
               fused_kernel_of(4, 32, 8), fused_kernel_of(4, 0, 8), fused_kernel_of(8, 0, 1),
               fused_kernel_of(4, 32, 1), fused_kernel_of(4, 0, 4));
        hash = 1469598103934665603ull;
        ts_test_rng = 0x9E3779B97F4A7C15ull;
        int cases = 0;
        for (size_t M = 1; M <= 17; ++M) {
            size_t N = Ns[M % 4], K = 32 * (1 + M % 5) + (M % 3 == 0 ? 0 : 0);
            run_case(8, 0, M, N, K + M % 2, M % 2, M % 3 == 0 ? 1 + M % 2 : 0); ++cases; /* odd K qs8 */
            run_case(4, 0, M, N, K + M % 2, M % 2 == 0, M % 4 == 0); ++cases;       /* qs4 channel */
            run_case(4, 32, M, N, K, M % 3 != 0, M % 5 == 0); ++cases;              /* qs4 bl 32 */
            /* qs4 bl 64: K = 64 (one block) .. 192, the other bias / clamp mix */
            run_case(4, 64, M, N, 64 * (1 + M % 3), M % 2 == 1, M % 4 == 1); ++cases;
        }
        run_case(4, 64, 9, 21, 4096, 1, 0); ++cases;
        run_case(4, 128, 3, 11, 2048, 0, 1); ++cases;
        run_case(4, 32, 1, 35, 4096, 1, 0); ++cases;
        run_case(4, 0, 17, 9, 3001, 1, 0); ++cases;
        run_case(8, 0, 16, 17, 4099, 1, 0); ++cases;
        run_case(8, 0, 2, 5, 1, 1, 0); ++cases;
        /* int4 kernels: both tiles' row strips (8, 12) partial and whole, odd N, K in the
         * thousands; per channel with K past the kernels' 16 x sum bound (65793): the widened
         * int8 path, the same bits */
        run_case(4, 64, 17, 13, 1024, 1, 1); ++cases;
        run_case(4, 0, 13, 5, 4097, 0, 1); ++cases;
        run_case(4, 32, 16, 3, 2080, 1, 0); ++cases;
        /* scale blocks in the thousands of k for the dot-family block kernels (8 x 4 sdot,
         * 4 x 4 smull / sadalp): partial row strips and column panels */
        run_case(4, 32, 13, 9, 3072, 0, 1); ++cases;
        run_case(4, 64, 5, 15, 2560, 1, 1); ++cases;
        run_case(4, 0, 3, 3, 65824, 1, 0); ++cases;
        /* a scale block past the kernels' bound (one block of 65824 k, bl > 0): the widened
         * int8 path and the C epilogue in the block order */
        run_case(4, 65824, 2, 5, 65824, 1, 1); ++cases;
        /* per-channel decode kernel (M <= 4, in passes of 2 rows): many panel groups, odd N */
        run_case(4, 0, 1, 301, 1056, 1, 1); ++cases;
        run_case(4, 0, 4, 29, 544, 0, 0); ++cases;
        /* the sdot / Armv8.0 per-channel kernels (8-column panels, decode 1 row per pass):
         * K in the thousands, odd N over several decode panel groups, a partial last group */
        run_case(4, 0, 1, 67, 4100, 1, 1); ++cases;
        run_case(4, 0, 3, 45, 2048, 0, 0); ++cases;
        run_case(4, 0, 11, 19, 1000, 1, 0); ++cases;
        /* the sdot scale-block decode kernel (M <= 4, one row per pass over several of the
         * 8 x 4 kernel's panels): K = bl up to thousands, odd N with a partial last panel
         * group, N = 1, blocks of 32..128 */
        run_case(4, 32, 1, 41, 4096, 1, 1); ++cases;
        run_case(4, 64, 3, 23, 2048, 0, 0); ++cases;
        run_case(4, 128, 4, 61, 1024, 1, 2); ++cases;
        run_case(4, 32, 2, 1, 32, 0, 1); ++cases;
        run_case(4, 96, 1, 107, 2976, 1, 0); ++cases;
        /* the int8 decode kernel (i8mm: M <= 4 in passes of one row pair over several of the
         * 8 x 8 kernel's panels): M = 1..4, odd N with a partial last panel group and N below
         * one panel, K from one k-step pair (no inner loop) to thousands, odd K */
        run_case(8, 0, 1, 41, 4096, 1, 1); ++cases;
        run_case(8, 0, 2, 17, 1000, 0, 0); ++cases;
        run_case(8, 0, 3, 35, 2049, 1, 2); ++cases;
        run_case(8, 0, 4, 9, 544, 0, 1); ++cases;
        run_case(8, 0, 1, 3, 31, 1, 0); ++cases;
        run_case(8, 0, 3, 23, 64, 0, 1); ++cases;
        /* the dotprod path's int8 decode tile (raw sdot 2 x 12 over the 8 x 12 kernel's panels,
         * M <= 4 in passes of 2 rows, the C epilogue): one k-step (K 1, 4), a single column,
         * one whole panel, odd N over many panels with K in the thousands, M 1..4 */
        run_case(8, 0, 1, 1, 1, 0, 0); ++cases;
        run_case(8, 0, 1, 12, 4, 1, 1); ++cases;
        run_case(8, 0, 3, 7, 9, 1, 0); ++cases;
        run_case(8, 0, 2, 25, 4095, 1, 2); ++cases;
        run_case(8, 0, 4, 13, 4096, 0, 1); ++cases;
        run_case(8, 0, 1, 127, 3000, 1, 1); ++cases;
        /* ... and its int8 decode kernel with the fp32 epilogue inside (gen/qdyn8_dot.py:
         * several raw panels per call, whole groups of whole panels; the rest through the raw
         * tile): one group and a partial panel (K 4096: k-steps in whole iterations), K odd in
         * the thousands, one iteration and no single k-step (K 13), single k-steps after
         * iterations (K 2050, 23), one k-step only (K 1), groups only (N 240), M 1..4 */
        run_case(8, 0, 1, 61, 4096, 1, 1); ++cases;
        run_case(8, 0, 2, 131, 4095, 0, 0); ++cases;
        run_case(8, 0, 3, 125, 13, 1, 2); ++cases;
        run_case(8, 0, 4, 240, 2050, 1, 1); ++cases;
        run_case(8, 0, 1, 60, 1, 0, 1); ++cases;
        run_case(8, 0, 4, 187, 23, 0, 0); ++cases;
        test_quant_pack();
        test_quant_preclamp();
        test_quant_rounding_modes();
        test_quantisation_identity();
        test_nibbles();
        test_weight_quantisers();
        test_bad_inputs();
        test_k_bounds();
        printf("cases %d hash %016llx\n", cases, (unsigned long long)hash);
    }
    ts_set_feature_mask(~0u);
    printf("failures %d\n", failures);
    return failures != 0;
}
