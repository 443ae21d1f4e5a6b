/* ts_qdyn.c — dynamically quantised int8 activations x int8 / int4 weights -> fp32
 * (tilesmith.h "dynamically quantised ..."; the semantics are written there and followed here
 * operation by operation).
 *
 * Build with -ffp-contract=off (the generated CMakeLists.txt does, for this file): every fp32
 * operation below is its own statement, and no multiply may be fused with the add after it,
 * or the paths would not return the same bits as the documented order.
 *
 * How it runs. Weights on a path with a qdyn kernel that has the fp32 epilogue inside for
 * them (path->qdyn; gen/qdyn4.py, gen/qdyn4_dot.py, gen/qdyn4_rl.py, README "qdyn kernels")
 * are packed for it: int4 per channel (pack_rl) and int4 scale blocks (pack_q4) on every path
 * at 4 bits per weight, int8 per channel on i8mm as they are (pack_q8).
 * Per ep-row strip the rows are quantised straight into the kernel's A panel (or copied from a
 * ts_packed_a: strip_panel, ts_qdyn_lhs.c), and one kernel call per hp-column panel (for
 * M <= 4: the decode kernel's call per group of panels, on i8mm for int8 too) does everything
 * else: the int4 unpack, the zero-point correction, the per-block int32 sums, their
 * fp32 dequantisation in the header's order, bias and clamp (fused_strip). Everywhere else
 * (int8 weights on the dotprod / Armv8.0 paths, which have no such kernel yet; a block beyond
 * the kernels' bound, 65793 k) the weights are packed (int4 widened to
 * int8) into the panels of the raw int8 kernel of the path (smmla -> sdot -> smlal) with the
 * per-block weight sums and scales beside them, the raw kernel (for M <= 4 on the dotprod
 * path: its small-M tile over the same panels, raw_run_path) computes
 * sum qa*qb per block into an int32 tile, and the C epilogue below (dequant_block) subtracts zp[m] * sum qb
 * (modulo 2^32: exact whenever the true block sum fits, which the K bounds guarantee), scales
 * and accumulates the blocks in fp32, then adds the bias and clamps. The integer part is exact and both fp32 parts run the
 * same IEEE operations in the same order (the kernels' s starts at -0.0, or is u_0 itself for
 * one block, and a missing bias is -0.0: x + -0.0 == x for every x), hence the bit-identical
 * results. On the dotprod path int8 per channel at M <= 4 runs, for whole groups of whole
 * panels, a decode kernel over several of those raw panels per call with the same epilogue
 * inside (raw_decode, gen/qdyn8_dot.py: the column sums and scales through its argument
 * block), the rest of the panels the small-M tile and dequant_block.
 * Threads (the context's tasks) split the row strips and panels (for the fused kernels: panel
 * groups, one kernel call each) of the same calls, so the bits do not depend on the grid.
 * Plain C99. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ts_context_internal.h"
#include "ts_error_internal.h"
#include "ts_gemm_internal.h"
#include "ts_qdyn_internal.h"

#if (defined(__aarch64__) && defined(__ARM_NEON)) || defined(_M_ARM64)
#  include <arm_neon.h>
#  define TS_QDYN_NEON 1
#else
#  define TS_QDYN_NEON 0
#endif


struct ts_packed_a {
    uint32_t tag;     /* TS_TAG_PACKED_A while live (ts_error_internal.h); first member */
    size_t M, K;
    int8_t *qa;       /* M x K quantised rows, row-major (stride K) */
    float *scale;     /* M */
    int32_t *zp;      /* M */
    int32_t *sum;     /* M: sum_k qa[m][k] (the per-channel int4 kernels' row term) */
    void *owned;      /* the one malloc block holding all of it */
};

/* ---- argument helpers -------------------------------------------------------------------------- */

/* Why a matrix argument is refused (ts_last_error, ts_matrix_ok). */
static const ts_matrix_why A_WHY = { "A is NULL (M and K > 0)", "lda < K (A's row stride)",
                                     "A's span (M, K, lda) overflows size_t" };
static const ts_matrix_why B8_WHY = { "B is NULL (N and K > 0)",
                                      "ldb < K (the row stride of the N x K weights)",
                                      "B's span (N, K, ldb) overflows size_t" };
static const ts_matrix_why B4_WHY = { "B is NULL (N and K > 0)",
                                      "ldb_bytes < ceil(K / 2) (the row stride of the N x K "
                                      "int4 weights, in bytes)",
                                      "B's span (N, ceil(K / 2), ldb_bytes) overflows size_t" };
static const ts_matrix_why W_WHY = { "W is NULL (N and K > 0)", "ldw < K (W's row stride)",
                                     "W's span (N, K, ldw) overflows size_t" };
static const ts_matrix_why C_WHY = { "C is NULL (M and N > 0)", "ldc < N (C's row stride)",
                                     "C's span (M, N, ldc) overflows size_t" };

/* The values are finite (ts_qdyn_all_finite); else `why` recorded. */
static int finite_ok(const float *v, size_t rows, size_t cols, size_t ld, const char *why)
{
    return ts_qdyn_all_finite(v, rows, cols, ld) || ts_reject(why);
}

static size_t matrix_len(size_t rows, size_t cols, size_t ld, size_t elem)
{
    size_t len = 0;
    ts_matrix_span_bytes(rows, cols, ld, elem, &len);
    return len;
}

/* ---- handle memory ------------------------------------------------------------------------------ */

/* TS_ENOMEM with the reason every handle allocation of this file records. */
static int handle_oom(void)
{
    /* TS_ENOMEM as a constant, not ts_fail's result: the compiler sees a failing
     * handle_alloc return non-zero, so gcc -O3 (CMake's Release flags) does not warn that the
     * outputs it leaves unset may be used (-Wmaybe-uninitialized in pack_qdyn) */
    (void)ts_fail(TS_ENOMEM, "out of memory, or a handle size beyond size_t");
    return TS_ENOMEM;
}

/* One allocation (*block) for a handle: its struct of `head` bytes, then `data` bytes
 * (*data_at), then `count` items of `item` bytes (*items_at); struct and data each rounded up
 * to 16 bytes, so both parts are 16-byte aligned. TS_OK, or handle_oom on a size beyond size_t
 * or a failed malloc. */
static int handle_alloc(size_t head, size_t data, size_t count, size_t item,
                        void **block, size_t *total_out, unsigned char **data_at,
                        void **items_at)
{
    size_t extra, total;
    head = (head + 15) / 16 * 16;
    if (ts_size_round_up(data, 16, &data) || ts_size_mul(count, item, &extra)
        || ts_size_add(head, data, &total) || ts_size_add(total, extra, &total))
        return handle_oom();
    *block = malloc(total);   /* aligned for any object: the struct at its start */
    if (*block == NULL)
        return handle_oom();
    *total_out = total;
    *data_at = ts_region(*block, head);
    *items_at = ts_region(*block, head + data);
    return TS_OK;
}

/* ---- weights ----------------------------------------------------------------------------------- */

/* sum of n int8 (exact: |sum| <= 128 n) */
static int32_t sum_s8(const int8_t *w, size_t n)
{
    int32_t s = 0;
    size_t k = 0;
#if TS_QDYN_NEON
    int32x4_t acc = vdupq_n_s32(0);
    for (; k + 16 <= n; k += 16)
        acc = vpadalq_s16(acc, vpaddlq_s8(vld1q_s8(w + k)));
    s = vaddvq_s32(acc);
#endif
    for (; k < n; ++k)
        s += w[k];
    return s;
}

/* Packs int8 weights W (N x K, element (n, k) at W[n*ldw + k]) with scales (N x blocks) into a
 * fresh handle for `path`. blocks * bl == K. */
static int pack_qdyn(const ts_path *path, size_t N, size_t K, const int8_t *W, size_t ldw,
                     const float *scales, size_t bl, int scale_last, ts_packed_b **out)
{
    size_t blocks = K / bl, panels, nb, total;
    unsigned char *data;
    void *block, *items;
    if (ts_packed_b_bytes(path, TS_LAYOUT_GEMM, K, N, &panels) || ts_size_mul(N, blocks, &nb))
        return handle_oom();
    int rc = handle_alloc(sizeof(ts_packed_b), panels, nb, sizeof(float) + sizeof(int32_t),
                          &block, &total, &data, &items);
    if (rc != TS_OK)
        return rc;
    ts_packed_b *b = block;
    ts_packed_b_init(b, path, TS_LAYOUT_GEMM, K, N, W, 1, ldw, 0, data);
    float *ws = items;
    int32_t *sums = ts_region(items, nb * sizeof(float));
    for (size_t n = 0; n < N; ++n)
        for (size_t j = 0; j < blocks; ++j) {
            /* |sum| <= 128 * bl: fits (bl <= TS_QDYN_S4_MAX_BL); block-major: columns contiguous */
            sums[j * N + n] = sum_s8(W + n * ldw + j * bl, bl);
            ws[j * N + n] = scales[n * blocks + j];
        }
    b->owned = block;
    b->owned_bytes = total;
    b->bl = bl;
    b->blocks = blocks;
    b->scale_last = scale_last;
    b->wscales = ws;
    b->blk_sums = sums;
    *out = b;
    return TS_OK;
}

/* The path a qdyn handle is packed for and run with: ctx's choice (NULL: this thread's). */
static const ts_path *qdyn_path(const ts_context *ctx)
{
    return ts_select_path_ctx(ctx, TS_GEMM_QDYN);
}

static int pack_q8(const ts_path *path, size_t N, size_t K, const int8_t *B, size_t ldb,
                   const float *scales, ts_packed_b **out);

int ts_pack_b_qs8_ctx(const ts_context *ctx, size_t N, size_t K, const int8_t *B, size_t ldb,
                      const float *scales, ts_packed_b **out)
{
    if (!ts_context_ok(ctx))
        return TS_EINVAL;
    const ts_path *path = qdyn_path(ctx);
    if (path == NULL)
        return ts_fail(TS_EINVAL, "no qdyn kernel path on this CPU / feature mask");
    if (out == NULL)
        return ts_fail(TS_EINVAL, "out (where the handle goes) is NULL");
    if (K == 0 || K > TS_QDYN_S8_MAX_K)
        return ts_fail(TS_EINVAL, "K is 0 or beyond TS_QDYN_S8_MAX_K");
    if (!ts_matrix_ok(B, N, K, ldb, 1, &B8_WHY))
        return TS_EINVAL;
    if (N > 0 && scales == NULL)
        return ts_fail(TS_EINVAL, "scales is NULL");
    if (!finite_ok(scales, 1, N, N, "a weight scale is NaN or infinite"))
        return TS_EINVAL;
    /* the path's int8 kernel with the fp32 epilogue inside: K is within its int32 bound */
    if (path->qdyn != NULL && path->qdyn[3].kernel != NULL && K <= path->qdyn[3].max_bl)
        return pack_q8(path, N, K, B, ldb, scales, out);
    return pack_qdyn(path, N, K, B, ldb, scales, K, 0, out);
}

int ts_pack_b_qs8(size_t N, size_t K, const int8_t *B, size_t ldb, const float *scales,
                  ts_packed_b **out)
{
    return ts_pack_b_qs8_ctx(NULL, N, K, B, ldb, scales, out);
}

/* ---- int4 handles of a path's scale-block kernel (gen/qdyn4.py, gen/qdyn4_dot.py) --------
 * Per panel of hp columns: int32 16 * (sum of block 0's weights) per column; then per block:
 * its k-steps of 16 k, the block's fp32 scale per column, and the next block's sums (zeros
 * after the last). A k-step holds 16 / (2 h) groups of 2 h k (h = the kernel's A k-step lp:
 * 8 for smmla, 4 for the sdot layout), each 16 bytes per 16 / h columns: byte t holds column
 * t / h at k = t % h in its low nibble and k = t % h + h in its high one (smmla: per column
 * pair, bytes 0-7 column 2i, k = j and j + 8; sdot layout: per column quad and 8 k, byte
 * 4j + t column j, k = t and t + 4); the nibbles keep their 4 bits.
 * Columns past N and k past K (a per-channel block is padded to a multiple of 32) are zero.
 * The smmla layout (lp 8) stores the sums and scales per column pair twice, (c0 c1 c0 c1) in
 * 16 bytes: the 2x2 tiles' lane order, one `ldr q` each (gen/qdyn4.py column_bytes); the sdot
 * layout one value per column. */
#define TS_Q4_LP 16

/* The decode kernel (M <= 4) of each handle kind, which reads that kind's packed layout: int4
 * scale blocks (0) qdyn[4], int4 per channel (1) qdyn[2], int8 (3) qdyn[5]; -1 for the decode
 * kinds themselves, which no handle is packed for. */
static const int DECODE_OF_KIND[TS_QDYN_KINDS] = {4, 2, -1, 5, -1, -1};

/* The entry of ts_path.qdyn that runs M <= 4 on a handle of this kind; NULL for a decode kind. */
static const ts_qdyn_kernel *decode_kernel(const ts_path *path, size_t kind)
{
    return DECODE_OF_KIND[kind] < 0 ? NULL : &path->qdyn[DECODE_OF_KIND[kind]];
}

/* Panels per call of the decode kernel of a handle kind, 1 when the path has none: the
 * handle's panel count is a multiple. */
static size_t decode_group(const ts_path *path, size_t kind)
{
    const ts_qdyn_kernel *decode = decode_kernel(path, kind);
    return decode != NULL && decode->kernel != NULL ? decode->panels : 1;
}

/* Panels of hp columns for N, rounded up to a multiple of group (the extra panels are zero). */
static size_t grouped_panels(size_t N, size_t hp, size_t group)
{
    return ((N + hp - 1) / hp + group - 1) / group * group;
}

/* Column c's 4-byte value into a per-column array: at 4 c, or (twice) at both places of its
 * column pair's (c0 c1 c0 c1). */
static void q4_column(unsigned char *dst, size_t c, size_t twice, const void *value)
{
    if (twice == 1) {
        memcpy(dst + 4 * c, value, 4);
        return;
    }
    memcpy(dst + c / 2 * 16 + c % 2 * 4, value, 4);
    memcpy(dst + c / 2 * 16 + c % 2 * 4 + 8, value, 4);
}

static unsigned q4_nibble(const uint8_t *B, size_t ldb, size_t N, size_t K, size_t n, size_t k)
{
    return n < N && k < K ? (unsigned)(B[n * ldb + k / 2] >> (4 * (k % 2))) & 15u : 0u;
}

/* hp int32: 16 * the sum of block j's weights of columns n0.. (0 past N or for j == blocks) */
static void q4_sums(unsigned char *dst, const uint8_t *B, size_t ldb, size_t N, size_t K,
                    size_t n0, size_t hp, size_t twice, size_t j, size_t blocks, size_t block)
{
    for (size_t c = 0; c < hp; ++c) {
        int32_t s = 0;
        for (size_t k = j * block; j < blocks && k < (j + 1) * block; ++k) {
            unsigned nib = q4_nibble(B, ldb, N, K, n0 + c, k);
            s += (int32_t)nib - (nib >= 8 ? 16 : 0);
        }
        s *= 16;                     /* |s| <= 16 * 8 * block: fits (block <= qdyn.max_bl) */
        q4_column(dst, c, twice, &s);
    }
}

/* The panels of an int4 scale-block handle of N columns on path: hp = qdyn[0].hp each, rounded
 * up to a multiple of the decode kernel's panels per call (qdyn[4], which reads the same
 * layout; the extra panels are zero). */
static size_t q4_panels(const ts_path *path, size_t N)
{
    return grouped_panels(N, path->qdyn[0].hp, decode_group(path, 0));
}

/* A handle of `panels` panels of `panel_bytes` for one of the fused qdyn kernels: header and
 * panels in one allocation (the header rounded up to 16 bytes), every other field zero or
 * NULL; the caller sets the kernel-specific counts. Nonzero on overflow or a failed malloc. */
static int new_kernel_handle(const ts_path *path, const ts_qdyn_kernel *kernel, size_t N,
                             size_t K, size_t panels, size_t panel_bytes, ts_packed_b **out)
{
    const size_t head = (sizeof(ts_packed_b) + 15) / 16 * 16;
    size_t data, total;
    if (ts_size_mul(panel_bytes, panels, &data) || ts_size_add(head, data, &total))
        return -1;
    void *mem = malloc(total);   /* aligned for any object: the struct at its start */
    if (mem == NULL)
        return -1;
    ts_packed_b *b = mem;
    memset(b, 0, sizeof *b);
    b->tag = TS_TAG_PACKED_B;
    b->path = path;
    b->K = K;
    b->N = N;
    b->panels = panels;
    b->panel_bytes = panel_bytes;
    b->data = ts_region(mem, head);
    b->owned = mem;
    b->owned_bytes = total;
    b->qdyn = kernel;
    *out = b;
    return 0;
}

static int pack_q4(const ts_path *path, const ts_qdyn_kernel *kernel, size_t N, size_t K,
                   const uint8_t *B, size_t ldb, const float *scales, size_t block,
                   ts_packed_b **out)
{
    const size_t hp = kernel->hp, blocks = K / block;
    const size_t kb = (block + 31) / 32 * 2;                   /* k-steps of 16 per block */
    const size_t panels = q4_panels(path, N);
    const size_t twice = kernel->lp == 8 ? 2 : 1;              /* the smmla 2x2 tiles' pairs */
    const size_t column_bytes = hp * 4 * twice;                /* one per-column array */
    size_t per_block, panel_bytes;
    ts_packed_b *b;
    if (ts_size_mul(kb, hp * 8, &per_block)
        || ts_size_add(per_block, 2 * column_bytes, &per_block)
        || ts_size_mul(per_block, blocks, &panel_bytes)
        || ts_size_add(panel_bytes, column_bytes, &panel_bytes)
        || new_kernel_handle(path, kernel, N, K, panels, panel_bytes, &b))
        return handle_oom();
    b->ksteps = blocks * kb;
    b->bl = block;
    b->blocks = blocks;
    b->scale_last = 1;
    b->qdyn_kpairs = kb / 2;
    const size_t h = kernel->lp, width = 16 / h;       /* k per nibble half, columns per 16 B */
    for (size_t p = 0; p < panels; ++p) {
        unsigned char *dst = (unsigned char *)b->data + p * panel_bytes;
        const size_t n0 = p * hp;
        q4_sums(dst, B, ldb, N, K, n0, hp, twice, 0, blocks, block);
        dst += column_bytes;
        for (size_t j = 0; j < blocks; ++j) {
            for (size_t s = 0; s < kb; ++s)
                for (size_t g = 0; g < TS_Q4_LP / (2 * h); ++g)
                    for (size_t c = 0; c < hp; c += width)
                        for (size_t t = 0; t < 16; ++t, ++dst) {
                            size_t n = n0 + c + t / h;
                            size_t k = j * block + s * TS_Q4_LP + g * 2 * h + t % h;
                            *dst = (unsigned char)(q4_nibble(B, ldb, N, K, n, k)
                                                   | q4_nibble(B, ldb, N, K, n, k + h) << 4);
                        }
            for (size_t c = 0; c < hp; ++c) {
                float w = n0 + c < N ? scales[(n0 + c) * blocks + j] : 0.0f;
                q4_column(dst, c, twice, &w);
            }
            dst += column_bytes;
            q4_sums(dst, B, ldb, N, K, n0, hp, twice, j + 1, blocks, block);
            dst += column_bytes;
        }
    }
    *out = b;
    return TS_OK;
}

/* ---- int8 handles of a path's int8 kernel (gen/qdyn4.py, weights "s8"; one scale block) ------
 * Per panel of hp columns: int32 sum_k qb per column pair twice, (c0 c1 c0 c1) per 16 bytes as
 * the int4 handles' (q4_column: one `ldr q` per pair, the 2x2 tiles' lane order); per 16 k (K
 * padded to 32) two 8-k steps of the smmla B layout (per column pair 16 bytes: 8 k of column
 * 2i, then of 2i+1); the fp32 scales the same paired way; 2 hp int32 zeros (the sums of a next
 * block: none). Columns past N and k past K are zero. The k-steps are the layout of an A panel
 * of hp rows (ts_qdyn_pack_s8, which sums each row on the way). */
static int pack_q8(const ts_path *path, size_t N, size_t K, const int8_t *B, size_t ldb,
                   const float *scales, ts_packed_b **out)
{
    const ts_qdyn_kernel *kernel = &path->qdyn[3];
    const size_t hp = kernel->hp, kpad = (K + 31) / 32 * 32;
    const size_t panels = grouped_panels(N, hp, decode_group(path, 3));
    size_t panel_bytes;
    ts_packed_b *b;
    /* hp rows of B in the layout of an A panel of hp rows, k-steps of 8, K padded to 32 */
    const ts_qdyn_layout layout = ts_qdyn_panel_layout(hp, 8, kpad / 8);
    if (hp > 64 || ts_size_mul(kpad, hp, &panel_bytes)
        || ts_size_add(panel_bytes, hp * 24, &panel_bytes)
        || new_kernel_handle(path, kernel, N, K, panels, panel_bytes, &b))
        return handle_oom();
    b->ksteps = kpad / TS_Q4_LP;
    b->bl = K;
    b->blocks = 1;
    b->qdyn_kpairs = kpad / 32;
    for (size_t p = 0; p < panels; ++p) {
        unsigned char *dst = (unsigned char *)b->data + p * panel_bytes;
        /* cols 0: a zero panel past N (the panel count is a multiple of the decode group) */
        const size_t n0 = p * hp, cols = n0 >= N ? 0 : N - n0 < hp ? N - n0 : hp;
        int32_t sums[64];                 /* hp <= 64 (checked above; the tiles have <= 16) */
        ts_qdyn_pack_s8(cols > 0 ? B + n0 * ldb : B, ldb, cols, hp, K, &layout,
                        (int8_t *)(dst + hp * 8), sums);
        for (size_t c = 0; c < hp; ++c) {
            int32_t s = c < cols ? sums[c] : 0;
            float w = c < cols ? scales[n0 + c] : 0.0f;
            q4_column(dst, c, 2, &s);
            q4_column(dst + hp * 8 + kpad * hp, c, 2, &w);
        }
        memset(dst + hp * 16 + kpad * hp, 0, hp * 8);
    }
    *out = b;
    return TS_OK;
}

/* ---- per-channel int4 handles (gen/qdyn4_rl.py: two channels per byte) -----------------------
 * One layout per MAC family, given by the columns per panel pc (4 for smmla, 8 for sdot and the
 * Armv8.0 path's smull / sadalp kernels; gen/qdyn4_rl.py Family.columns): 16 bytes hold lp =
 * 32 / pc k of the panel, byte t holding k = t % lp of column t / lp (low nibble, w + 8) and of
 * column t / lp + pc/2 (high nibble). A panel: int32 sum w[c] of the pc/2 low columns, int32
 * sum w[c] + 16 sum w[c + pc/2] of each pair, fp32 scales of the pc columns (8 pc bytes), then
 * per lp k (K padded to 32) 16 bytes. For smmla: sum w[c0], sum w[c1], sum w[c0] + 16 sum w[c2],
 * sum w[c1] + 16 sum w[c3], scales, then bytes 0-7 k = 0..7 of (c0, c2), bytes 8-15 of (c1, c3).
 * Columns past N are weight 0 (low nibble 8). The panel count is rounded up to a multiple of
 * the decode kernel's panels per call. */
/* Columns per handle panel of a fused kernel (hp / panels: the per-channel panel of pc columns;
 * the scale-block kernels, kind 0 and its decode kernel: qdyn[0].hp) */
static size_t rl_columns(const ts_qdyn_kernel *kern)
{
    return kern->hp / kern->panels;
}

static size_t rl_lp(const ts_qdyn_kernel *kern)
{
    return 32 / rl_columns(kern);
}

static int pack_rl(const ts_path *path, size_t N, size_t K, const uint8_t *B, size_t ldb,
                   const float *scales, ts_packed_b **out)
{
    const ts_qdyn_kernel *kern = &path->qdyn[1];
    const size_t pc = rl_columns(kern), half = pc / 2, lp = rl_lp(kern);
    const size_t kpad = (K + 31) / 32 * 32;
    const size_t group = decode_group(path, 1);
    size_t panels = (N + pc - 1) / pc, panel_bytes;
    ts_packed_b *b;
    panels = (panels + group - 1) / group * group;
    if (ts_size_mul(kpad, pc / 2, &panel_bytes) || ts_size_add(panel_bytes, 8 * pc, &panel_bytes)
        || new_kernel_handle(path, kern, N, K, panels, panel_bytes, &b))
        return handle_oom();
    b->ksteps = kpad / lp;
    b->bl = K;
    b->blocks = 1;
    b->qdyn_kpairs = kpad / 16;
    /* the pc columns of a panel as int8 weights (0 past N and K), decoded once per panel */
    int8_t *w = (int8_t *)malloc(pc * kpad);
    if (w == NULL) {
        free(b->owned);
        return handle_oom();
    }
    for (size_t p = 0; p < panels; ++p) {
        unsigned char *dst = (unsigned char *)b->data + p * panel_bytes;
        const size_t n0 = pc * p;
        int32_t sum[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
        memset(w, 0, pc * kpad);
        for (size_t c = 0; c < pc && n0 + c < N; ++c) {
            const uint8_t *row = B + (n0 + c) * ldb;
            for (size_t k = 0; k < K; ++k) {
                unsigned nib = (unsigned)(row[k / 2] >> (4 * (k % 2))) & 15u;
                w[c * kpad + k] = (int8_t)((int)nib - (nib >= 8 ? 16 : 0));
                sum[c] += w[c * kpad + k];               /* |sum| <= 8 K: fits */
            }
        }
        for (size_t c = 0; c < half; ++c) {
            int32_t y[2] = { sum[c], sum[c] + 16 * sum[c + half] };
            memcpy(dst + 4 * c, &y[0], 4);
            memcpy(dst + 4 * (half + c), &y[1], 4);
        }
        for (size_t c = 0; c < pc; ++c) {
            float s = n0 + c < N ? scales[n0 + c] : 0.0f;
            memcpy(dst + 4 * pc + 4 * c, &s, 4);
        }
        dst += 8 * pc;
        for (size_t k0 = 0; k0 < kpad; k0 += lp)
            for (size_t t = 0; t < 16; ++t, ++dst) {
                size_t lo = t / lp, k = k0 + t % lp;
                unsigned l = (unsigned)(w[lo * kpad + k] + 8);
                unsigned h = (unsigned)w[(lo + half) * kpad + k] & 15u;
                *dst = (unsigned char)(l | h << 4);
            }
    }
    free(w);
    *out = b;
    return TS_OK;
}

int ts_pack_b_qs4_ctx(const ts_context *ctx, size_t N, size_t K, const uint8_t *B,
                      size_t ldb_bytes, const float *scales, size_t bl, ts_packed_b **out)
{
    if (!ts_context_ok(ctx))
        return TS_EINVAL;
    const ts_path *path = qdyn_path(ctx);
    size_t row_bytes = K / 2 + K % 2, block = bl == 0 ? K : bl, wbytes;
    if (path == NULL)
        return ts_fail(TS_EINVAL, "no qdyn kernel path on this CPU / feature mask");
    if (out == NULL)
        return ts_fail(TS_EINVAL, "out (where the handle goes) is NULL");
    if (K == 0)
        return ts_fail(TS_EINVAL, "K is 0");
    if (bl != 0 && (bl % 32 != 0 || K % bl != 0))
        return ts_fail(TS_EINVAL, "bl is not a multiple of 32 dividing K");
    if (block > TS_QDYN_S4_MAX_BL)
        return ts_fail(TS_EINVAL, "the block (bl, or K when bl is 0) is beyond TS_QDYN_S4_MAX_BL");
    if (!ts_matrix_ok(B, N, row_bytes, ldb_bytes, 1, &B4_WHY))
        return TS_EINVAL;
    if (N > 0 && scales == NULL)
        return ts_fail(TS_EINVAL, "scales is NULL");
    if (!finite_ok(scales, N, K / block, K / block, "a weight scale is NaN or infinite"))
        return TS_EINVAL;
    /* the path's int4 kernel: per channel (one block) or scale blocks, within its bound */
    const ts_qdyn_kernel *q4 = path->qdyn != NULL ? &path->qdyn[bl == 0 ? 1 : 0] : NULL;
    if (q4 != NULL && q4->kernel != NULL && block <= q4->max_bl)
        return bl == 0 ? pack_rl(path, N, K, B, ldb_bytes, scales, out)
                       : pack_q4(path, q4, N, K, B, ldb_bytes, scales, block, out);
    /* no int4 kernel (or a block beyond its int32 bound: K > 65793 per channel): widened to
     * int8 (sign-extended nibbles) for the int8 kernels and the C epilogue below */
    if (ts_size_mul(N, K, &wbytes))
        return handle_oom();
    int8_t *w = (int8_t *)malloc(wbytes ? wbytes : 1);
    if (w == NULL)
        return handle_oom();
    for (size_t n = 0; n < N; ++n)
        for (size_t k = 0; k < K; ++k) {
            unsigned nib = (B[n * ldb_bytes + k / 2] >> (4 * (k % 2))) & 15u;
            w[n * K + k] = (int8_t)((int)nib - (nib >= 8 ? 16 : 0));
        }
    int rc = pack_qdyn(path, N, K, w, K, scales, block, bl != 0, out);
    free(w);
    return rc;
}

int ts_pack_b_qs4(size_t N, size_t K, const uint8_t *B, size_t ldb_bytes, const float *scales,
                  size_t bl, ts_packed_b **out)
{
    return ts_pack_b_qs4_ctx(NULL, N, K, B, ldb_bytes, scales, bl, out);
}

/* ---- weight quantisers ------------------------------------------------------------------------- */

/* amax over n's k in [k0, k0+len) -> scale (amax / qmax, 1 for amax 0), q = clamp(rint(w/scale)) */
static float block_scale(const float *w, size_t len, float qmax)
{
    float amax = 0.0f;
    for (size_t k = 0; k < len; ++k)
        if (fabsf(w[k]) > amax)
            amax = fabsf(w[k]);
    return amax == 0.0f ? 1.0f : amax / qmax;
}

static int32_t quantize_weight(float w, float scale, float lo, float hi)
{
    if (w == 0.0f)
        return 0;
    float v = w / scale;                 /* +-Inf when scale underflowed to 0: clamps */
    return ts_qdyn_rint_clamp(v, lo, hi);
}

int ts_quantize_qs8(size_t N, size_t K, const float *W, size_t ldw, int8_t *q, float *scales)
{
    if (!ts_matrix_ok(W, N, K, ldw, sizeof(float), &W_WHY))
        return TS_EINVAL;
    if ((N > 0 && K > 0 && q == NULL) || (N > 0 && scales == NULL))
        return ts_fail(TS_EINVAL, "q or scales is NULL");
    if (!finite_ok(W, N, K, ldw, "W holds a NaN or an infinity"))
        return TS_EINVAL;
    size_t w_len = matrix_len(N, K, ldw, sizeof(float)), q_len = N * K;
    if (ts_spans_overlap(q, q_len, W, w_len) || ts_spans_overlap(scales, N * sizeof(float), W, w_len)
        || ts_spans_overlap(scales, N * sizeof(float), q, q_len))
        return ts_fail(TS_EINVAL, "q, scales and W overlap");
    for (size_t n = 0; n < N; ++n) {
        const float *row = W + n * ldw;
        float scale = block_scale(row, K, 127.0f);
        for (size_t k = 0; k < K; ++k)
            q[n * K + k] = (int8_t)quantize_weight(row[k], scale, -127.0f, 127.0f);
        scales[n] = scale;
    }
    return TS_OK;
}

int ts_quantize_qs4(size_t N, size_t K, const float *W, size_t ldw, size_t bl, uint8_t *q,
                    float *scales)
{
    size_t block = bl == 0 ? K : bl, row_bytes = K / 2 + K % 2;
    if (bl != 0 && (bl % 32 != 0 || K % bl != 0))
        return ts_fail(TS_EINVAL, "bl is not a multiple of 32 dividing K");
    if (!ts_matrix_ok(W, N, K, ldw, sizeof(float), &W_WHY))
        return TS_EINVAL;
    if (N > 0 && (q == NULL || scales == NULL))
        return ts_fail(TS_EINVAL, "q or scales is NULL");
    if (!finite_ok(W, N, K, ldw, "W holds a NaN or an infinity"))
        return TS_EINVAL;
    size_t blocks = block == 0 ? 1 : K / block;
    size_t w_len = matrix_len(N, K, ldw, sizeof(float)), q_len = N * row_bytes;
    size_t s_len = N * blocks * sizeof(float);
    if (ts_spans_overlap(q, q_len, W, w_len) || ts_spans_overlap(scales, s_len, W, w_len)
        || ts_spans_overlap(scales, s_len, q, q_len))
        return ts_fail(TS_EINVAL, "q, scales and W overlap");
    for (size_t n = 0; n < N; ++n) {
        const float *row = W + n * ldw;
        memset(q + n * row_bytes, 0, row_bytes);
        for (size_t j = 0; j < blocks; ++j) {
            float scale = block_scale(row + j * block, block, 7.0f);
            for (size_t k = j * block; k < (j + 1) * block; ++k) {
                unsigned nib = (unsigned)quantize_weight(row[k], scale, -8.0f, 7.0f) & 15u;
                q[n * row_bytes + k / 2] |= (uint8_t)(nib << (4 * (k % 2)));
            }
            scales[n * blocks + j] = scale;
        }
    }
    return TS_OK;
}

/* ---- packed activations -------------------------------------------------------------------------- */

/* Fresh M x K packed-A storage (not filled). */
static int packed_a_alloc(size_t M, size_t K, ts_packed_a **out)
{
    size_t q, total;
    unsigned char *qa;
    void *block, *rows;
    if (ts_size_mul(M, K, &q))
        return handle_oom();
    int rc = handle_alloc(sizeof(ts_packed_a), q, M, sizeof(float) + 2 * sizeof(int32_t), &block,
                          &total, &qa, &rows);
    if (rc != TS_OK)
        return rc;
    ts_packed_a *a = block;
    a->tag = TS_TAG_PACKED_A;
    a->M = M;
    a->K = K;
    a->qa = (int8_t *)qa;
    a->scale = rows;
    a->zp = (int32_t *)(a->scale + M);
    a->sum = a->zp + M;
    a->owned = block;
    *out = a;
    return TS_OK;
}

int ts_pack_a_qdyn(size_t M, size_t K, const float *A, size_t lda, ts_packed_a **out)
{
    if (out == NULL)
        return ts_fail(TS_EINVAL, "out (where the handle goes) is NULL");
    if (K == 0)   /* as the B packers: tilesmith.h, K = 0 is TS_EINVAL when packing */
        return ts_fail(TS_EINVAL, "K is 0");
    if (!ts_matrix_ok(A, M, K, lda, sizeof(float), &A_WHY)
        || !finite_ok(A, M, K, lda, "A holds a NaN or an infinity"))
        return TS_EINVAL;
    ts_packed_a *a = NULL;
    int rc = packed_a_alloc(M, K, &a);
    if (rc != TS_OK)
        return rc;
    const ts_qdyn_layout rows = { 16, K, 16, K };          /* row-major, stride K */
    ts_qdyn_quant_pack(A, lda, M, M, K, &rows, a->qa, a->scale, a->zp, a->sum);
    *out = a;
    return TS_OK;
}

void ts_packed_a_free(ts_packed_a *a)
{
    /* not a live handle (another type, freed already): nothing to free */
    if (a == NULL || !ts_handle_ok(a, TS_TAG_PACKED_A, "ts_packed_a_free: not a live ts_packed_a"))
        return;
    a->tag = TS_TAG_FREED;
    free(a->owned);
}

/* ---- the GEMM ------------------------------------------------------------------------------------ */

/* The fp32 epilogue of one tile block (tilesmith.h order): itile holds sum qa*qb of block j
 * (ep x hp int32, row stride hp); acc (ep x hp fp32) receives u_0 for j == 0, else += u_j,
 * with u_j = (scale[m] * wscale) * (float)acc_j (per channel), or v_j = wscale * (float)acc_j
 * (b->scale_last: scale blocks; the row scale follows the last block, in qdyn_task).
 * The NEON lanes do the same IEEE operations (SCVTF, FMUL, FADD: never FMLA) as the scalar
 * tail, so the bits do not depend on the column. */
static void dequant_block(const ts_packed_b *b, size_t j, size_t n0, size_t rows, size_t cols,
                          const int32_t *itile, const float *scale, const int32_t *zp,
                          float *acc, size_t hp)
{
    size_t c0 = 0;
    const int last = b->scale_last;
#if TS_QDYN_NEON
    /* column groups outer: their block sums and scales are loaded once for all rows */
    for (; c0 + 4 <= cols; c0 += 4) {
        size_t w = j * b->N + n0 + c0;
        const uint32x4_t bs = vreinterpretq_u32_s32(vld1q_s32(b->blk_sums + w));
        const float32x4_t ws = vld1q_f32(b->wscales + w);
        for (size_t r = 0; r < rows; ++r) {
            uint32x4_t corr = vmulq_n_u32(bs, (uint32_t)zp[r]);
            uint32x4_t raw = vsubq_u32(vreinterpretq_u32_s32(vld1q_s32(itile + r * hp + c0)), corr);
            /* t = scale[m] * wscale (commutes), or wscale alone */
            float32x4_t t = last ? ws : vmulq_n_f32(ws, scale[r]);
            float32x4_t u = vmulq_f32(t, vcvtq_f32_s32(vreinterpretq_s32_u32(raw)));
            TS_FP_OPAQUE(u);
            if (j != 0)
                u = vaddq_f32(vld1q_f32(acc + r * hp + c0), u);
            vst1q_f32(acc + r * hp + c0, u);
        }
    }
#endif
    for (size_t r = 0; r < rows; ++r)
        for (size_t c = c0; c < cols; ++c) {
            size_t w = j * b->N + n0 + c;
            /* sum (qa - zp) qb = sum qa qb - zp sum qb, modulo 2^32 like the kernel's lanes */
            uint32_t raw = (uint32_t)itile[r * hp + c] - (uint32_t)zp[r] * (uint32_t)b->blk_sums[w];
            int32_t exact = (int32_t)raw;
            float t = b->wscales[w];
            if (!last)
                t = scale[r] * t;
            float u = t * (float)exact;
            TS_FP_OPAQUE(u);
            if (j == 0) {
                acc[r * hp + c] = u;
            } else {
                float s = acc[r * hp + c] + u;
                acc[r * hp + c] = s;
            }
        }
}

/* Whether kern is one of the two-channels-per-byte int4 kernels (gen/qdyn4_rl.py: per channel,
 * panels of rl_columns(kern) columns, A in k-steps of rl_lp(kern): smmla 4 / 8, sdot and
 * smull / sadalp 8 / 4), not a scale-block one ([0]: gen/qdyn4.py for smmla, gen/qdyn4_dot.py
 * for sdot and smull / sadalp) or the int8 per-channel one ([3], gen/qdyn4.py: smmla only); A in
 * k-steps of kern->lp, the handle's k-steps of 16). */
static int is_rl(const ts_path *path, const ts_qdyn_kernel *kern)
{
    return kern == &path->qdyn[1] || kern == &path->qdyn[2];
}

/* One call as its tasks see it. */
typedef struct {
    const ts_packed_b *b;
    size_t M;
    const float *A;
    size_t lda;
    const ts_packed_a *pa;
    const float *bias;
    float cmin, cmax;
    float *C;
    size_t ldc;
    unsigned char *scratch;       /* task t's area at t * task_bytes */
    size_t task_bytes, a_panel_bytes, m_tasks, n_tasks;
    const float *lohi;            /* from A: each row's range (ts_qdyn_row_ranges), 2 M */
    int sums;                     /* the kernel reads the rows' sums (is_rl) */
} qdyn_call;

/* The quantised rows of one strip: per row its scale, zero point and sum_k qa. */
typedef struct {
    const float *scale;
    const int32_t *zp;
    const int32_t *sum;
} strip_rows;

/* Bytes of a strip's row buffer (strip_panel): ep scales, zero points and sums, then ep
 * quantised rows of K (used only where the panel is not int8). */
static int strip_buf_bytes(size_t ep, size_t K, size_t *out)
{
    size_t q;
    return ts_size_mul(ep, K, &q) || ts_size_round_up(q, 16, &q)
           || ts_size_add(q, ep * 12 + 16, out) || ts_size_round_up(*out, 16, out);
}

/* Rows m0..m0+rows-1 of the call into the A panel of `view` (its ep rows, k-steps of its lp
 * elements of its pack_a; `ksteps` of them: zero past K and for rows past `rows`). From A:
 * int8 panels (the i8mm and dotprod paths) are quantised straight into the panel, with the
 * rows' ranges of the call's check of A (c->lohi) in one pass that stores
 * (ts_qdyn_quant_pack_ranged); another element (the widened smlal panel) goes through
 * quantised row-major rows in buf. The rows' sums only where the kernel reads them (c->sums).
 * From a packed A: its rows copied into the panel (ts_qdyn_pack_s8; ts_pack_panel_as for
 * another element).
 * The same bits every way: one function of the same inputs. */
static strip_rows strip_panel(const qdyn_call *c, const ts_path *view, size_t m0, size_t rows,
                              size_t ksteps, unsigned char *a_panel, void *buf)
{
    const size_t K = c->b->K, ep = view->ep, lp = view->lp;
    float *sb = buf;
    int32_t *zb = (int32_t *)(sb + ep), *ub = zb + ep;
    int8_t *qrows = (int8_t *)(ub + ep);
    strip_rows out;
    out.scale = sb;
    out.zp = zb;
    out.sum = ub;
    if (view->pack_a == TS_PACK_S8 && 16 % lp == 0) {
        const ts_qdyn_layout panel = ts_qdyn_panel_layout(ep, lp, ksteps);
        if (c->pa == NULL) {
            ts_qdyn_quant_pack_ranged(c->A + m0 * c->lda, c->lda, rows, ep, K, &panel,
                                      c->lohi + 2 * m0, (int8_t *)a_panel, sb, zb,
                                      c->sums ? ub : NULL);
            return out;
        }
        ts_qdyn_pack_s8(c->pa->qa + m0 * K, K, rows, ep, K, &panel, (int8_t *)a_panel, NULL);
        out.scale = c->pa->scale + m0;
        out.zp = c->pa->zp + m0;
        out.sum = c->pa->sum + m0;
        return out;
    }
    const int8_t *q = qrows;
    if (c->pa != NULL) {
        q = c->pa->qa + m0 * K;
        out.scale = c->pa->scale + m0;
        out.zp = c->pa->zp + m0;
        out.sum = c->pa->sum + m0;
    } else {
        const ts_qdyn_layout row_major = { 16, K, 16, K };
        ts_qdyn_quant_pack_ranged(c->A + m0 * c->lda, c->lda, rows, rows, K, &row_major,
                                  c->lohi + 2 * m0, qrows, sb, zb, c->sums ? ub : NULL);
    }
    size_t packed = 0, want = ksteps * ep * lp * ts_pack_elem_bytes(view->pack_a);
    ts_panel_bytes(view, ep, K, &packed);
    ts_pack_panel_as(view->pack_a, view, a_panel, q, rows, ep, K, K, 1);
    memset(a_panel + packed, 0, want - packed);
    return out;
}

/* The row data of a qdyn kernel's argument block (args->rows, 24 ep bytes) for a strip of
 * `rows` <= ep rows: per row pair fp32x4 scales, then int32x4 -zp, each (r0 r0 r1 r1), then
 * (rl kernels) int32x4 -8 sum_k qa; zeros for the rows past `rows`. */
static void row_data_fill(size_t ep, size_t rows, strip_rows q, int rl, void *row_data)
{
    float *rs = (float *)row_data;
    int32_t *rz = (int32_t *)(rs + 2 * ep), *rt = rz + 2 * ep;
    for (size_t i = 0; i < 2 * ep; ++i) {          /* (r0 r0 r1 r1) per row pair */
        size_t r = i / 4 * 2 + (i % 4) / 2;
        rs[i] = r < rows ? q.scale[r] : 0.0f;
        rz[i] = r < rows ? -q.zp[r] : 0;
        if (rl)                                     /* -8 sum_k qa: the low nibbles' + 8 */
            rt[i] = r < rows ? -8 * q.sum[r] : 0;   /* |sum| <= 128 K: fits for K <= 2^21 */
    }
}

/* One ep-row strip of a kernel with the fp32 epilogue inside (b->qdyn: int4 or int8 weights):
 * the strip's rows (in a_panel: the kernel's int8 A layout, zero past K up to its k-steps) ->
 * the row data of the kernel's argument block, then one kernel call per panel of hp columns
 * (per rl group of panels), which writes C directly (partial tiles included). */
/* TS_NOINLINE: its own registers for the per-tile call loop (else inlined into fused_task,
 * whose live values push the loop's to the stack) */
static TS_NOINLINE void fused_strip(const ts_packed_b *b, const ts_qdyn_kernel *kern,
                                         size_t rows, strip_rows q, const float *bias_pad,
                                         float cmin, float cmax, float *C, size_t ldc,
                                         const unsigned char *a_panel, void *row_data,
                                         size_t p_begin, size_t p_end)
{
    const size_t ep = kern->ep, hp = kern->hp;
    row_data_fill(ep, rows, q, is_rl(b->path, kern), row_data);
    ts_qdyn_args args;
    args.m_rem = rows;
    args.kpairs = b->qdyn_kpairs;
    args.rows = row_data;
    args.cmin = cmin;
    args.cmax = cmax;
    args.b_stride = b->panel_bytes;
    args.clamp = !(cmin == -INFINITY && cmax == INFINITY);
    /* one kernel call per step handle panels (hp columns): the call count first, then only the
     * pointers step (the loop runs once per tile, 4096 times for a 512^3 GEMM, its values in
     * callee-saved registers across the calls) */
    const size_t step = kern->panels;              /* handle panels per call */
    const size_t N = b->N, blocks = b->blocks, ldc_bytes = ldc * sizeof(float);
    const size_t b_step = step * b->panel_bytes;
    const ts_qdyn_kernel_fn kernel = kern->kernel;
    const size_t n0 = p_begin * rl_columns(kern);
    if (p_begin >= p_end || n0 >= N)
        return;
    size_t calls = (p_end - p_begin + step - 1) / step, left = N - n0;
    if (calls > (left + hp - 1) / hp)
        calls = (left + hp - 1) / hp;
    const unsigned char *bp = (const unsigned char *)b->data + p_begin * b->panel_bytes;
    float *c = C + n0;
    const float *bias = bias_pad + n0;
    /* every call but the last stores whole panels (calls <= ceil(left / hp)): n_rem is set
     * once and the loop carries no column count (gcc 12 -march=armv8-a -O2: 16 -> 13
     * instructions per tile, no compare-and-select, one stack reload less) */
    const size_t last = left - (calls - 1) * hp;
    args.n_rem = hp;
    for (; calls > 1; --calls, bp += b_step, c += hp, bias += hp) {
        args.bias = bias;
        kernel(a_panel, bp, blocks, c, ldc_bytes, &args);
    }
    args.n_rem = last < hp ? last : hp;
    args.bias = bias;
    kernel(a_panel, bp, blocks, c, ldc_bytes, &args);
}

/* The kernel that runs M rows of a handle packed for b->qdyn: the decode kernel of its kind
 * (decode_kernel: int4 per channel qdyn[2], scale blocks qdyn[4], int8 qdyn[5]; the same
 * packed layout) for M <= 4 (in passes of its ep rows), else the handle's own. */
static const ts_qdyn_kernel *fused_kernel(const ts_packed_b *b, size_t M)
{
    const ts_qdyn_kernel *decode = decode_kernel(b->path, (size_t)(b->qdyn - b->path->qdyn));
    return decode != NULL && decode->kernel != NULL && M <= 4 ? decode : b->qdyn;
}

/* The A panel's k-steps of kern->lp k (the k per k-step of the kernel's int8 A panel: 8 for
 * the smmla layout, 4 for the sdot layout, also the Armv8.0 path's smull / sadalp kernels',
 * whose path's own int8 kernel reads int16) for kern on handle b (the handle's k-steps are
 * the rl kernel's own, or of TS_Q4_LP = 16 k). */
static size_t fused_ksteps(const ts_packed_b *b, const ts_qdyn_kernel *kern)
{
    return b->ksteps * (is_rl(b->path, kern) ? 1 : TS_Q4_LP / kern->lp);
}

/* Scratch of one task of a fused kernel (kern, M rows of b): the A panel (*a_panel bytes),
 * the row data, the padded bias, the strip's row buffer. */
static int fused_task_bytes(const ts_packed_b *b, const ts_qdyn_kernel *kern, size_t *a_panel,
                            size_t *out)
{
    const size_t ep = kern->ep;
    size_t bias, rows;
    /* bias: every packed column (a call reads hp, rounded up to 4, from its first) + 64 */
    return ts_size_mul(fused_ksteps(b, kern), kern->lp * ep, a_panel)
           || ts_size_mul(b->panels, b->qdyn->hp, &bias)
           || ts_size_add(bias, 64, &bias) || ts_size_mul(bias, sizeof(float), &bias)
           || strip_buf_bytes(ep, b->K, &rows)
           || ts_size_add(*a_panel, 24 * ep, out) || ts_size_add(*out, bias, out)
           || ts_size_add(*out, rows, out) || ts_size_round_up(*out, 16, out);
}

static size_t raw_decode_bytes(const ts_path *path);

/* The raw-panel int8 decode kernel of path (qdyn[5] where the path has no fused int8 kernel
 * [3]: gen/qdyn8_dot.py), NULL when it has none. */
static const ts_qdyn_kernel *path_raw_decode(const ts_path *path)
{
    const ts_qdyn_kernel *k = path->qdyn != NULL && path->qdyn[3].kernel == NULL
                              ? &path->qdyn[5] : NULL;
    return k != NULL && k->kernel != NULL ? k : NULL;
}

/* Bytes of that kernel's row data (24 ep, rounded to 16). */
static size_t raw_row_data_bytes(const ts_qdyn_kernel *k)
{
    return (24 * k->ep + 15) / 16 * 16;
}

/* Scratch of one task for path and K: the packed A panel, the int32 and fp32 tiles, the
 * strip's row buffer, the raw decode kernel's row data and -0.0f bias (raw_decode_bytes).
 * 0, or -1 on size_t overflow. */
static int task_bytes(const ts_path *path, size_t K, size_t *a_panel, size_t *out)
{
    size_t rows;
    return ts_panel_bytes(path, path->ep, K, a_panel) || ts_size_round_up(*a_panel, 16, a_panel)
           || strip_buf_bytes(path->ep, K, &rows) || ts_size_add(*a_panel, rows, out)
           || ts_size_add(*out, path->ep * path->hp * 8, out)
           || ts_size_add(*out, raw_decode_bytes(path), out)
           || ts_size_round_up(*out, 16, out);
}

/* [begin, end) of part t of `count` items split into `parts` near-equal runs. */
static void share(size_t count, size_t parts, size_t t, size_t *begin, size_t *end)
{
    *begin = count * t / parts;
    *end = count * (t + 1) / parts;
}

/* Task t's part of c's grid (m_tasks x n_tasks): rows [*m_begin, *m_end) in strips of ep (every
 * strip starts at a multiple of ep) and column units [*u0, *u1) of `units`. */
static void task_part(const qdyn_call *c, size_t t, size_t ep, size_t units, size_t *m_begin,
                      size_t *m_end, size_t *u0, size_t *u1)
{
    size_t i0, i1;
    share((c->M + ep - 1) / ep, c->m_tasks, t / c->n_tasks, &i0, &i1);
    share(units, c->n_tasks, t % c->n_tasks, u0, u1);
    *m_begin = i0 * ep;
    *m_end = i1 * ep < c->M ? i1 * ep : c->M;
}

/* Task t of a call on a fused-kernel handle: its row strips (kernel ep) and panel groups (one
 * kernel call each); every output is computed by the same kernel call whatever the grid. Rows
 * come from a packed A or are quantised strip by strip (a task splitting N with others
 * quantises the same rows again: the same function of the same inputs, the same bits). */
static void fused_task(const qdyn_call *c, size_t t)
{
    const ts_packed_b *b = c->b;
    const ts_qdyn_kernel *kern = fused_kernel(b, c->M);
    const size_t ep = kern->ep;
    const size_t step = kern->panels, groups = b->panels / step;
    unsigned char *scratch = c->scratch + t * c->task_bytes, *a_panel = scratch;
    void *row_data = scratch + c->a_panel_bytes;
    float *bias_pad = ts_region(scratch, c->a_panel_bytes + 24 * ep);
    const size_t padded = b->panels * b->qdyn->hp + 64;
    void *buf = bias_pad + padded;
    ts_path view = *b->path;    /* the kernel's A panel: ep rows, int8 in k-steps of kern->lp */
    view.ep = ep;
    view.lp = kern->lp;
    view.pack_a = TS_PACK_S8;   /* int8 on every path (the smlal path's own A panel is int16) */
    view.pack = TS_PACK_S8;     /* ts_panel_bytes sizes by pack */
    size_t m_begin, m_end, g0, g1;
    task_part(c, t, ep, groups, &m_begin, &m_end, &g0, &g1);
    for (size_t n = 0; n < padded; ++n)     /* -0.0f: x + -0.0f == x for every x */
        bias_pad[n] = c->bias == NULL ? -0.0f : n < b->N ? c->bias[n] : 0.0f;
    for (size_t m0 = m_begin; m0 < m_end; m0 += ep) {
        size_t rows = c->M - m0 < ep ? c->M - m0 : ep;
        strip_rows q = strip_panel(c, &view, m0, rows, fused_ksteps(b, kern), a_panel, buf);
        fused_strip(b, kern, rows, q, bias_pad, c->cmin, c->cmax, c->C + m0 * c->ldc, c->ldc,
                    a_panel, row_data, g0 * step, g1 * step);
    }
}

/* The int8 decode kernel with the fp32 epilogue inside over a raw-panel handle (b->qdyn NULL;
 * gen/qdyn8_dot.py: the dotprod path's qdyn[5], where the path has no fused int8 kernel [3]):
 * M <= 4 rows in passes of its ep, `panels` of the raw kernel's panels per call (the handle's
 * panels as they are: its hp is panels x the path's, the same lp), its column sums and scales
 * read from the handle's per-channel arrays (one block: b->blk_sums, b->wscales), for N of at
 * least one call's columns. NULL: the raw kernel and the C epilogue run the call. */
static const ts_qdyn_kernel *raw_decode_kernel(const ts_packed_b *b, size_t M)
{
    const ts_path *path = b->path;
    const ts_qdyn_kernel *k = path_raw_decode(path);
    if (k == NULL || b->qdyn != NULL || M > 4 || b->blocks != 1
        || b->scale_last || k->lp != path->lp || k->hp != k->panels * path->hp
        || b->N < k->hp || b->K > k->max_bl)
        return NULL;
    return k;
}

/* Scratch of the raw decode kernel's calls beside a raw task's (task_bytes): the row data
 * (24 ep bytes, rounded to 16) and hp fp32 -0.0f (the bias of a call without one). */
static size_t raw_decode_bytes(const ts_path *path)
{
    const ts_qdyn_kernel *k = path_raw_decode(path);
    return k != NULL ? raw_row_data_bytes(k) + 4 * k->hp : 0;
}

/* Rows [m_begin, m_end) x the whole call groups of panels [p_begin, p_end) (their columns all
 * below N) of a raw-panel handle through its decode kernel k (raw_decode_kernel): per strip of
 * k->ep rows the A panel (k-steps of the path's lp), the row data, then one call per group. */
static void raw_decode(const qdyn_call *c, const ts_qdyn_kernel *k, size_t m_begin,
                       size_t m_end, size_t p_begin, size_t p_end, unsigned char *a_panel,
                       void *row_data, float *neg_zero, void *buf)
{
    const ts_packed_b *b = c->b;
    const size_t hp = b->path->hp;
    ts_path view = *b->path;            /* the kernel's A panel: k->ep rows, the path's lp */
    view.ep = k->ep;
    for (size_t n = 0; n < k->hp; ++n)  /* -0.0f: x + -0.0f == x for every x */
        neg_zero[n] = -0.0f;
    ts_qdyn_args args;
    args.n_rem = k->hp;
    args.kpairs = 0;
    args.rows = row_data;
    args.cmin = c->cmin;
    args.cmax = c->cmax;
    args.b_stride = b->panel_bytes;
    args.clamp = !(c->cmin == -INFINITY && c->cmax == INFINITY);
    for (size_t m0 = m_begin; m0 < m_end; m0 += k->ep) {
        const size_t rows = m_end - m0 < k->ep ? m_end - m0 : k->ep;
        strip_rows q = strip_panel(c, &view, m0, rows, b->ksteps, a_panel, buf);
        row_data_fill(k->ep, rows, q, 0, row_data);
        args.m_rem = rows;
        for (size_t p = p_begin; p < p_end; p += k->panels) {
            const size_t n0 = p * hp;
            args.bias = c->bias != NULL ? c->bias + n0 : neg_zero;
            args.col_sums = b->blk_sums + n0;
            args.col_scales = b->wscales + n0;
            k->kernel(a_panel, (const unsigned char *)b->data + p * b->panel_bytes, b->ksteps,
                      c->C + m0 * c->ldc + n0, c->ldc * sizeof(float), &args);
        }
    }
}

/* The raw int8 kernel that runs M rows of a handle of the raw kernel's panels (b->qdyn NULL):
 * the path's small-M tile (path->gemv: on the dotprod path gen/qdyn8_dot.py's, ep rows per
 * pass) for M <= its max_m when it reads the path's panels as they are (the same hp and lp),
 * else the path's own kernel. The same C epilogue follows either: the same bits. */
static ts_path raw_run_path(const ts_path *path, size_t M)
{
    ts_path run = *path;
    if (path->gemv.kernel != NULL && M <= path->gemv.max_m && path->gemv.hp == path->hp
        && path->gemv.lp == path->lp) {
        run.symbol = path->gemv.symbol;
        run.kernel = path->gemv.kernel;
        run.ep = path->gemv.ep;
    }
    return run;
}

static void qdyn_task(void *arg, size_t t)
{
    const qdyn_call *c = (const qdyn_call *)arg;
    if (c->b->qdyn != NULL) {
        fused_task(c, t);
        return;
    }
    const ts_packed_b *b = c->b;
    const ts_path run = raw_run_path(b->path, c->M), *path = &run;
    const size_t ep = path->ep, hp = path->hp, K = b->K;
    const size_t step_a = ep * path->lp * ts_pack_elem_bytes(path->pack_a);
    const size_t step_b = hp * path->lp * ts_pack_elem_bytes(path->pack);
    const size_t kb = b->bl / path->lp;            /* k-steps per block (bl: multiple of 32) */
    unsigned char *scratch = c->scratch + t * c->task_bytes;
    unsigned char *a_panel = scratch;
    int32_t *itile = ts_region(scratch, c->a_panel_bytes);
    float *acc = ts_region(itile, ep * hp * sizeof(int32_t));
    void *buf = acc + ep * hp;
    const float *bias = c->bias;
    const float cmin = c->cmin, cmax = c->cmax;
    size_t m_begin, m_end, p0, p1;
    task_part(c, t, ep, b->panels, &m_begin, &m_end, &p0, &p1);
    const ts_qdyn_kernel *dk = raw_decode_kernel(b, c->M);
    if (dk != NULL) {
        /* the task's whole groups of whole panels through the decode kernel (the fp32
         * epilogue inside, the same bits), the rest below */
        const size_t whole = b->N / hp, end = p1 < whole ? p1 : whole;
        const size_t pk = end > p0 ? p0 + (end - p0) / dk->panels * dk->panels : p0;
        size_t rows_bytes = 0;
        strip_buf_bytes(ep, K, &rows_bytes);        /* fits: task_bytes counted it */
        void *row_data = ts_region(buf, rows_bytes);
        raw_decode(c, dk, m_begin, m_end, p0, pk, a_panel, row_data,
                   ts_region(row_data, raw_row_data_bytes(dk)), buf);
        p0 = pk;
    }

    for (size_t m0 = m_begin; m0 < m_end && p0 < p1; m0 += ep) {
        size_t rows = c->M - m0 < ep ? c->M - m0 : ep;
        strip_rows q = strip_panel(c, path, m0, rows, (K + path->lp - 1) / path->lp, a_panel,
                                   buf);
        const float *scale = q.scale;
        const int32_t *zp = q.zp;
        for (size_t p = p0; p < p1; ++p) {
            size_t n0 = p * hp, cols = b->N - n0 < hp ? b->N - n0 : hp;
            const unsigned char *b_panel = (const unsigned char *)b->data + p * b->panel_bytes;
            for (size_t j = 0; j < b->blocks; ++j) {
                /* per channel: one block of all ksteps (K padded to whole k-steps) */
                size_t steps = b->blocks == 1 ? b->ksteps : kb;
                path->kernel((const unsigned char *)a_panel + j * kb * step_a,
                             b_panel + j * kb * step_b, steps, itile, hp * sizeof(int32_t), NULL);
                dequant_block(b, j, n0, rows, cols, itile, scale, zp, acc, hp);
            }
            for (size_t r = 0; r < rows; ++r) {
                size_t col = 0;
                float *out = c->C + (m0 + r) * c->ldc + n0;
#if TS_QDYN_NEON
                const float32x4_t lo = vdupq_n_f32(cmin), hi = vdupq_n_f32(cmax);
                for (; col + 4 <= cols; col += 4) {
                    float32x4_t x = vld1q_f32(acc + r * hp + col);
                    if (b->scale_last)                        /* y = scale[m] * s */
                        x = vmulq_n_f32(x, scale[r]);
                    TS_FP_OPAQUE(x);
                    if (bias != NULL)
                        x = vaddq_f32(x, vld1q_f32(bias + n0 + col));
                    x = vbslq_f32(vcltq_f32(x, lo), lo, x);   /* as the scalar tail: NaN stays */
                    x = vbslq_f32(vcgtq_f32(x, hi), hi, x);
                    vst1q_f32(out + col, x);
                }
#endif
                for (; col < cols; ++col) {
                    float x = acc[r * hp + col];
                    if (b->scale_last) {
                        float y = scale[r] * x;
                        x = y;
                    }
                    TS_FP_OPAQUE(x);
                    if (bias != NULL) {
                        float y = x + bias[n0 + col];
                        x = y;
                    }
                    x = x < cmin ? cmin : x;     /* max(x, cmin); a NaN x stays NaN */
                    x = x > cmax ? cmax : x;     /* min(x, cmax) */
                    out[col] = x;
                }
            }
        }
    }
}

/* Bytes of a call on a raw-panel handle of handle_path (the kernel raw_run_path picks for M):
 * one scratch area per task of the grid ctx's threads get, and 15
 * to align. 0, or -1 on size_t overflow. */
static int call_bytes(const ts_context *ctx, const ts_path *handle_path, size_t M, size_t N,
                      size_t K, size_t *m_tasks, size_t *n_tasks, size_t *a_panel,
                      size_t *per_task, size_t *out)
{
    const ts_path run = raw_run_path(handle_path, M), *path = &run;   /* as qdyn_task runs */
    ts_gemm_grid((M + path->ep - 1) / path->ep, N / path->hp + (N % path->hp != 0),
                 ts_context_threads(ctx), m_tasks, n_tasks);
    return task_bytes(path, K, a_panel, per_task)
           || ts_size_mul(*per_task, *m_tasks * *n_tasks, out) || ts_size_add(*out, 15, out);
}

/* The same for a handle of a fused kernel: the grid over its row strips and panel groups. */
static int fused_call_bytes(const ts_context *ctx, const ts_packed_b *b, size_t M,
                            size_t *m_tasks, size_t *n_tasks, size_t *a_panel, size_t *per_task,
                            size_t *out)
{
    const ts_qdyn_kernel *kern = fused_kernel(b, M);
    const size_t step = kern->panels;
    ts_gemm_grid((M + kern->ep - 1) / kern->ep, b->panels / step, ts_context_threads(ctx),
                 m_tasks, n_tasks);
    return fused_task_bytes(b, kern, a_panel, per_task)
           || ts_size_mul(*per_task, *m_tasks * *n_tasks, out) || ts_size_add(*out, 15, out);
}

/* A call's scratch `bytes` (16-aligned task areas, + 15) and the rows' ranges after them
 * (ts_qdyn_row_ranges: 2 M floats). 0, or -1 on size_t overflow. */
static int ranges_bytes(size_t M, size_t bytes, size_t *out)
{
    size_t r;
    return ts_size_mul(M, 2 * sizeof(float), &r) || ts_size_add(bytes, r, out);
}

size_t ts_qdyn_workspace_size(const ts_context *ctx, size_t M, size_t N, size_t K)
{
    size_t count, most = 0, bytes, m_tasks, n_tasks, a_panel, per_task;
    const ts_path *paths = ts_paths_of(TS_GEMM_QDYN, &count);
    for (size_t i = 0; i < count; ++i) {
        if (call_bytes(ctx, &paths[i], M, N, K, &m_tasks, &n_tasks, &a_panel, &per_task, &bytes))
            return 0;
        most = bytes > most ? bytes : most;
        for (size_t kind = 0; paths[i].qdyn != NULL && kind < TS_QDYN_KINDS; ++kind) {
            /* a fused-kernel handle of this path (int4 scale blocks or per channel, int8 per
             * channel), as pack_q4 / pack_rl / pack_q8 would shape it (the decode kinds read
             * those handles: DECODE_OF_KIND) */
            const ts_qdyn_kernel *q = &paths[i].qdyn[kind];
            if (q->kernel == NULL || DECODE_OF_KIND[kind] < 0)
                continue;
            ts_packed_b view;
            memset(&view, 0, sizeof view);
            view.path = &paths[i];
            view.qdyn = q;
            view.K = K;
            view.N = N;
            if (kind != 1) {
                view.ksteps = (K + 31) / 32 * 2;
                view.panels = grouped_panels(N, q->hp, decode_group(&paths[i], kind));
            } else {
                size_t group = decode_group(&paths[i], 1);
                size_t pc = rl_columns(q);
                view.ksteps = (K + 31) / 32 * 32 / rl_lp(q);
                view.panels = ((N + pc - 1) / pc + group - 1) / group * group;
            }
            if (fused_call_bytes(ctx, &view, M, &m_tasks, &n_tasks, &a_panel, &per_task, &bytes))
                return 0;
            most = bytes > most ? bytes : most;
        }
    }
    return ranges_bytes(M, most, &most) ? 0 : most;
}

static int qdyn_gemm(const ts_context *ctx, size_t M, const float *A, size_t lda,
                     const ts_packed_a *pa, const ts_packed_b *B, const float *bias, float cmin,
                     float cmax, float *C, size_t ldc)
{
    /* A handle runs with the path it was packed for when the path chosen now (another core
     * class's variant) reads the same layout: the same int4 kernels, correct on any core. */
    if (!ts_context_ok(ctx))
        return TS_EINVAL;
    if (B == NULL)
        return ts_fail(TS_EINVAL, "B (the packed handle) is NULL");
    if (!ts_handle_ok(B, TS_TAG_PACKED_B, "B is not a live ts_packed_b (another handle type, or "
                                          "freed)"))
        return TS_EINVAL;
    if (B->path->gemm_type != TS_GEMM_QDYN)
        return ts_fail(TS_EINVAL, "B is not a qdyn handle (ts_pack_b_qs8 / _qs4)");
    if (!ts_same_b_layout(B->path, qdyn_path(ctx)))
        return ts_fail(TS_EINVAL, "B was packed for a kernel whose layout this call's kernel does "
                                  "not read (another feature mask or CPU choice)");
    if (isnan(cmin) || isnan(cmax) || cmin > cmax)
        return ts_fail(TS_EINVAL, "cmin > cmax, or a NaN bound");
    if (!ts_matrix_ok(C, M, B->N, ldc, sizeof(float), &C_WHY))
        return TS_EINVAL;
    const size_t K = B->K, N = B->N;
    size_t c_len = matrix_len(M, N, ldc, sizeof(float)), a_len = 0, qlen = 0;
    if (bias != NULL && !finite_ok(bias, 1, N, N, "bias holds a NaN or an infinity"))
        return TS_EINVAL;
    if (bias != NULL && ts_spans_overlap(C, c_len, bias, N * sizeof(float)))
        return ts_fail(TS_EINVAL, "C overlaps bias");
    if (ts_packed_b_overlaps(B, C, c_len))
        return ts_fail(TS_EINVAL, "C overlaps B");
    if (pa != NULL) {
        qlen = (pa->M * pa->K + 15) / 16 * 16 + pa->M * (sizeof(float) + 2 * sizeof(int32_t));
        if (pa->K != K)
            return ts_fail(TS_EINVAL, "the packed A's K is not B's");
        if (ts_spans_overlap(C, c_len, pa, sizeof *pa) || ts_spans_overlap(C, c_len, pa->qa, qlen))
            return ts_fail(TS_EINVAL, "C overlaps the packed A");
    } else {
        /* A's NaN / Inf check: below, with the rows' ranges (one pass over A) */
        a_len = matrix_len(M, K, lda, sizeof(float));
        if (!ts_matrix_ok(A, M, K, lda, sizeof(float), &A_WHY))
            return TS_EINVAL;
        const ts_strided c_m = ts_strided_of(C, M, N, ldc, sizeof(float));
        const ts_strided a_m = ts_strided_of(A, M, K, lda, sizeof(float));
        if (ts_strided_overlap(&c_m, &a_m))   /* C may sit between A's rows (a concatenation) */
            return ts_fail(TS_EINVAL, "C overlaps A");
    }
    if (M == 0 || N == 0)     /* nothing to compute; A is checked all the same */
        return pa != NULL || finite_ok(A, M, K, lda, "A holds a NaN or an infinity")
               ? TS_OK : TS_EINVAL;
    qdyn_call c;
    size_t bytes;
    void *mem, *owned;
    memset(&c, 0, sizeof c);
    if ((B->qdyn != NULL ? fused_call_bytes(ctx, B, M, &c.m_tasks, &c.n_tasks, &c.a_panel_bytes,
                                            &c.task_bytes, &bytes)
                         : call_bytes(ctx, B->path, M, N, K, &c.m_tasks, &c.n_tasks,
                                      &c.a_panel_bytes, &c.task_bytes, &bytes))
        || ranges_bytes(M, bytes, &bytes))
        return ts_fail(ctx != NULL && ctx->workspace != NULL ? TS_EINVAL : TS_ENOMEM,
                       "the call's workspace size overflows size_t");
    /* the workspace must not share a byte with anything the call reads or writes */
    const void *spans[6] = { C, A, pa != NULL ? (const void *)pa->qa : NULL, pa, bias, B->data };
    const size_t span_len[6] = { c_len, a_len, qlen, pa != NULL ? sizeof *pa : 0,
                                 bias != NULL ? N * sizeof(float) : 0,
                                 B->panels * B->panel_bytes };
    if (ctx != NULL && ctx->workspace != NULL && ts_packed_b_overlaps(B, ctx->workspace, bytes))
        return ts_fail(TS_EINVAL, "the context's workspace overlaps B");
    int err = ts_call_memory(ctx, bytes, spans, span_len, 6, NULL, 0, &mem, &owned);
    if (err != TS_OK)
        return err;
    c.scratch = (unsigned char *)ts_align16(mem);
    float *lohi = ts_region(c.scratch, c.task_bytes * c.m_tasks * c.n_tasks);
    if (pa == NULL && !ts_qdyn_row_ranges(A, lda, M, K, lohi)) {    /* NaN / Inf in A */
        ts_call_memory_done(ctx, owned);
        return ts_fail(TS_EINVAL, "A holds a NaN or an infinity");
    }
    c.lohi = lohi;
    c.sums = B->qdyn != NULL && is_rl(B->path, fused_kernel(B, M));
    c.b = B;
    c.M = M;
    c.A = A;
    c.lda = lda;
    c.pa = pa;
    c.bias = bias;
    c.cmin = cmin;
    c.cmax = cmax;
    c.C = C;
    c.ldc = ldc;
    ts_context_run(ctx, c.m_tasks * c.n_tasks, qdyn_task, &c);
    ts_call_memory_done(ctx, owned);
    return TS_OK;
}

const char *ts_gemm_qdyn_kernel(const ts_context *ctx, const ts_packed_b *B, size_t M)
{
    /* qdyn_gemm's choice: NULL where it returns TS_EINVAL for the handle; no kernel for M 0 */
    if (B == NULL || !ts_context_ok(ctx)
        || !ts_handle_ok(B, TS_TAG_PACKED_B, "B is not a live ts_packed_b (another handle type, "
                                             "or freed)")
        || B->path->gemm_type != TS_GEMM_QDYN || !ts_same_b_layout(B->path, qdyn_path(ctx))
        || M == 0)
        return NULL;
    if (B->qdyn != NULL)
        return fused_kernel(B, M)->symbol;
    const ts_qdyn_kernel *decode = raw_decode_kernel(B, M);
    return decode != NULL ? decode->symbol : raw_run_path(B->path, M).symbol;
}

int ts_gemm_qdyn_f32(const ts_context *ctx, size_t M, const float *A, size_t lda,
                     const ts_packed_b *B, const float *bias, float cmin, float cmax,
                     float *C, size_t ldc)
{
    return qdyn_gemm(ctx, M, A, lda, NULL, B, bias, cmin, cmax, C, ldc);
}

int ts_gemm_qdyn_f32_packed_a(const ts_context *ctx, const ts_packed_a *A,
                              const ts_packed_b *B, const float *bias, float cmin, float cmax,
                              float *C, size_t ldc)
{
    if (A == NULL)
        return ts_fail(TS_EINVAL, "A (the packed A) is NULL");
    if (!ts_handle_ok(A, TS_TAG_PACKED_A, "A is not a live ts_packed_a (another handle type, or "
                                          "freed)"))
        return TS_EINVAL;
    return qdyn_gemm(ctx, A->M, NULL, 0, A, B, bias, cmin, cmax, C, ldc);
}
