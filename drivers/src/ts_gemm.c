/* ts_gemm.c — the public GEMM entry points (plain and prepacked B) and the blocked loop
 * around the micro-kernels.
 *
 * Loop (BLIS-style, one level): B is packed whole into hp-column panels (or comes prepacked);
 * for every ep-row panel of A: pack it, then run the kernel against each B panel. Full tiles
 * are written straight into C; edge tiles go through an ep x hp scratch tile, of which only
 * the valid rows and columns are copied. The int8 quantized GEMM computes each ep-row strip
 * into int32 scratch and requantizes the whole strip in one call. Every buffer is allocated
 * before the first output byte is written, so an error never leaves C half-written.
 * Plain C99. */
#include <stdlib.h>
#include <string.h>

#include "ts_gemm_internal.h"
#include "ts_quant_internal.h"

/* ---- scratch ---------------------------------------------------------------------------------- */

/* Byte offsets of the scratch areas (each 16-aligned) from the aligned scratch start. */
typedef struct {
    size_t a_panel;      /* packed A panel: ep rows over K */
    size_t tile;         /* one ep x hp tile of results (path->c_bytes each) */
    size_t strip;        /* requantize / fp16 narrowing: ep x N int32 or float results */
    size_t col_offset;   /* requantize: N int32, -a_zero_point * column sums of B */
    size_t im2col;       /* conv: ep im2col rows of K bytes */
    size_t total;
} scratch_layout;

/* Appends `bytes` (rounded up to 16) at offset *end; returns -1 on overflow. */
static int place(size_t bytes, size_t *end, size_t *offset)
{
    size_t rounded;
    *offset = *end;
    return ts_size_round_up(bytes, 16, &rounded) || ts_size_add(*end, rounded, end);
}

/* requantize: 1 = strip and column offsets, 2 = strip only (fp16 narrowing), 0 = neither. */
static int layout_scratch(const ts_path *path, size_t N, size_t K, int requantize, int im2col,
                          scratch_layout *l)
{
    size_t end = 0, a_panel, strip, n_bytes, rows_bytes;
    memset(l, 0, sizeof *l);
    if (ts_panel_bytes(path, path->ep, K, &a_panel) || place(a_panel, &end, &l->a_panel)
        || place(path->ep * path->hp * path->c_bytes, &end, &l->tile))
        return -1;
    if (requantize && (ts_size_mul(N, sizeof(int32_t), &n_bytes) || ts_size_mul(n_bytes, path->ep, &strip)
                       || place(strip, &end, &l->strip)
                       || (requantize == 1 && place(n_bytes, &end, &l->col_offset))))
        return -1;
    if (im2col && (ts_size_mul(K, path->ep, &rows_bytes) || place(rows_bytes, &end, &l->im2col)))
        return -1;
    l->total = end;
    return 0;
}

int ts_gemm_scratch_bytes(const ts_path *path, size_t N, size_t K, int requantize,
                          int im2col, size_t *out)
{
    scratch_layout l;
    return layout_scratch(path, N, K, requantize, im2col, &l) || ts_size_add(l.total, 15, out);
}

/* Whether the sink narrows the path's fp32 results into fp16 (through the strip). */
static int narrows(const ts_path *path, const ts_c_sink *out)
{
    return out->f16_output && path->c_bytes == sizeof(float);
}

static int strip_use(const ts_path *path, const ts_c_sink *out)
{
    return out->q != NULL ? 1 : narrows(path, out) ? 2 : 0;
}

int ts_gemm_sink_scratch_bytes(const ts_path *path, size_t N, size_t K, const ts_c_sink *out,
                               size_t *bytes)
{
    return ts_gemm_scratch_bytes(path, N, K, strip_use(path, out), 0, bytes);
}

/* ---- the loop ----------------------------------------------------------------------------------- */

/* Runs the kernel over one packed A panel against every B panel: rows x N results
 * (path->c_bytes each) into dst, row stride ld_bytes. K = 0 yields zeros (the kernels need ksteps >= 1). */
static void compute_strip(const ts_packed_b *b, const void *a_panel, size_t rows,
                          unsigned char *dst, size_t ld_bytes, unsigned char *tile)
{
    const ts_path *path = b->path;
    const size_t c_bytes = path->c_bytes, tile_ld = path->hp * c_bytes;
    for (size_t j = 0; j < b->panels; ++j) {
        size_t n0 = j * path->hp;
        size_t cols = b->N - n0 < path->hp ? b->N - n0 : path->hp;
        unsigned char *out = dst + n0 * c_bytes;
        const unsigned char *b_panel = (const unsigned char *)b->data + j * b->panel_bytes;
        if (b->ksteps == 0) {
            for (size_t r = 0; r < rows; ++r)
                memset(out + r * ld_bytes, 0, cols * c_bytes);   /* 0.0f and 0 are all-zero bits */
        } else if (rows == path->ep && cols == path->hp) {
            path->kernel(a_panel, b_panel, b->ksteps, out, ld_bytes, NULL);
        } else {
            path->kernel(a_panel, b_panel, b->ksteps, tile, tile_ld, NULL);
            for (size_t r = 0; r < rows; ++r)
                memcpy(out + r * ld_bytes, tile + r * tile_ld, cols * c_bytes);
        }
    }
}

/* Rows m0 .. m0+rows-1 of A: a pointer to them and their row stride in elements. */
static const void *a_rows(const ts_a_source *a, size_t K, size_t m0, size_t rows,
                          size_t src_elem, int8_t *im2col, size_t *lda)
{
    if (a->conv == NULL) {
        *lda = a->lda;
        return (const unsigned char *)a->A + m0 * a->lda * src_elem;
    }
    ts_im2col_rows_s8(a->conv, (const int8_t *)a->A, a->pad_value, m0, rows, im2col, K);
    *lda = K;
    return im2col;
}

void ts_gemm_run(const ts_packed_b *b, size_t M, const ts_a_source *a,
                 const ts_c_sink *out, void *scratch)
{
    const ts_path *path = b->path;
    size_t N = b->N, K = b->K, src_elem = ts_source_elem_bytes(path->pack_a);
    scratch_layout l;
    layout_scratch(path, N, K, strip_use(path, out), a->conv != NULL, &l);   /* sized by the caller */
    unsigned char *base = (unsigned char *)ts_align16(scratch);
    void *a_panel = base + l.a_panel;
    unsigned char *tile = base + l.tile;
    int32_t *strip = (int32_t *)(base + l.strip);
    int32_t *col_offset = (int32_t *)(base + l.col_offset);

    /* sum_k (A-zp)*B = sum_k A*B - zp * sum_k B: the correction per column, with the bias
     * folded in (bias - zp * sum_k B), wrapping modulo 2^32 like the int32 accumulators; the
     * requantization then sees no separate bias. */
    ts_quant q_fused;
    if (out->q != NULL) {
        const int32_t *bias = out->q->bias;
        for (size_t n = 0; n < N; ++n) {
            uint32_t offset = 0u - (uint32_t)out->q->a_zero_point * (uint32_t)b->col_sums[n];
            col_offset[n] = (int32_t)(offset + (bias != NULL ? (uint32_t)bias[n] : 0u));
        }
        if (out->u8_output)
            ts_quant_u8_as_s8(out->q, &q_fused);   /* int8 epilogue, bit 7 flipped after */
        else
            q_fused = *out->q;
        q_fused.bias = NULL;
    }

    for (size_t m0 = 0; m0 < M; m0 += path->ep) {
        size_t rows = M - m0 < path->ep ? M - m0 : path->ep, lda;
        const void *src = a_rows(a, K, m0, rows, src_elem, (int8_t *)(base + l.im2col), &lda);
        ts_pack_panel_as(path->pack_a, path, a_panel, src, rows, path->ep, K, lda, 1);
        if (narrows(path, out)) {
            compute_strip(b, a_panel, rows, (unsigned char *)strip, N * sizeof(float), tile);
            ts_narrow_rows_f16((const float *)strip, N, rows, N,
                               (uint16_t *)out->C + m0 * out->ldc, out->ldc);
            continue;
        }
        if (out->q == NULL) {
            unsigned char *c = (unsigned char *)out->C + m0 * out->ldc * path->c_bytes;
            compute_strip(b, a_panel, rows, c, out->ldc * path->c_bytes, tile);
            continue;
        }
        compute_strip(b, a_panel, rows, (unsigned char *)strip, N * sizeof(int32_t), tile);
        if (out->u8_output)
            ts_requant_rows_u8(strip, N, rows, N, 0, &q_fused, col_offset,
                               (uint8_t *)out->C + m0 * out->ldc, out->ldc);
        else
            ts_requant_rows(strip, N, rows, N, 0, &q_fused, col_offset,
                            (int8_t *)out->C + m0 * out->ldc, out->ldc);
    }
}

/* ---- argument checks ---------------------------------------------------------------------------- */

/* A buffer may be NULL only when it holds no element. */
static int buffer_ok(const void *p, size_t rows, size_t cols)
{
    return p != NULL || rows == 0 || cols == 0;
}

/* Non-NULL unless empty, ld >= cols, and its span (rows-1)*ld + cols addressable. */
static int matrix_ok(const void *p, size_t rows, size_t cols, size_t ld, size_t elem_bytes)
{
    return buffer_ok(p, rows, cols) && ld >= cols
           && !ts_matrix_span_overflows(rows, cols, ld, elem_bytes);
}

/* Bytes of a matrix that passed matrix_ok (its span fits in size_t). */
static size_t matrix_len(size_t rows, size_t cols, size_t ld, size_t elem_bytes)
{
    size_t len = 0;
    ts_matrix_span_bytes(rows, cols, ld, elem_bytes, &len);
    return len;
}

/* What a public GEMM entry point computes: its GEMM type, its K bound (tilesmith.h), and its
 * output: the kernel's raw results, or int8 / uint8 through the requantization epilogue. */
enum { OUT_RAW, OUT_S8, OUT_U8, OUT_F16 };
typedef struct {
    int gemm_type;
    size_t max_k;             /* SIZE_MAX: no bound (float) */
    int output;               /* OUT_* */
} gemm_op;

static const gemm_op OP_F32 = { TS_GEMM_F32, SIZE_MAX, OUT_RAW };
static const gemm_op OP_BF16 = { TS_GEMM_BF16, SIZE_MAX, OUT_RAW };
static const gemm_op OP_S8S32 = { TS_GEMM_INT8, TS_GEMM_S8S32_MAX_K, OUT_RAW };
static const gemm_op OP_S8 = { TS_GEMM_INT8, TS_GEMM_S8_MAX_K, OUT_S8 };
static const gemm_op OP_U8S8S32 = { TS_GEMM_U8S8, TS_GEMM_U8S8S32_MAX_K, OUT_RAW };
static const gemm_op OP_U8U32 = { TS_GEMM_U8U32, TS_GEMM_U8U32_MAX_K, OUT_RAW };
static const gemm_op OP_U8 = { TS_GEMM_U8S8, TS_GEMM_U8_MAX_K, OUT_U8 };
static const gemm_op OP_F16 = { TS_GEMM_F16, SIZE_MAX, OUT_F16 };
static const gemm_op OP_F16F32 = { TS_GEMM_F16F32, SIZE_MAX, OUT_RAW };

/* Bytes of one element of C as the caller passes it. */
static size_t out_bytes(const gemm_op *op, const ts_path *path)
{
    return op->output == OUT_S8 || op->output == OUT_U8 ? 1
           : op->output == OUT_F16 ? sizeof(uint16_t) : path->c_bytes;
}

/* q present exactly when the op requantizes, and valid for its output type and N columns. */
static int quant_ok(const gemm_op *op, const ts_quant *q, size_t N)
{
    if (op->output == OUT_RAW || op->output == OUT_F16)
        return q == NULL;
    return (op->output == OUT_U8 ? ts_quant_validate_u8(q, N) : ts_quant_validate(q, N)) == TS_OK;
}

/* A handle usable for `op` now: packed for its GEMM type and for the kernel the dispatcher
 * picks at this moment (else its layout is not what would run), K within op's bound. */
static int packed_ok(const ts_packed_b *b, const gemm_op *op)
{
    return b != NULL && b->path->gemm_type == op->gemm_type
           && b->path == ts_select_path(op->gemm_type) && b->K <= op->max_k;
}

/* Valid arguments of a GEMM with a row-major B: K within the bound, matrices as matrix_ok, q
 * as quant_ok, and C sharing no byte with A, B or q's arrays. */
static int unpacked_args_ok(const gemm_op *op, size_t M, size_t N, size_t K, const void *A,
                            size_t lda, const void *B, size_t ldb, const ts_quant *q,
                            const void *C, size_t ldc)
{
    /* element sizes as the caller passes them: every path of a type reads the same sources */
    const ts_path *path = ts_select_path(op->gemm_type);
    const size_t a_bytes = ts_source_elem_bytes(path->pack_a);
    const size_t b_bytes = ts_source_elem_bytes(path->pack);
    const size_t c_bytes = out_bytes(op, path);
    if (K > op->max_k || !matrix_ok(A, M, K, lda, a_bytes) || !matrix_ok(B, K, N, ldb, b_bytes)
        || !matrix_ok(C, M, N, ldc, c_bytes) || !quant_ok(op, q, N))
        return 0;
    const size_t c_len = matrix_len(M, N, ldc, c_bytes);
    return !ts_spans_overlap(C, c_len, A, matrix_len(M, K, lda, a_bytes))
           && !ts_spans_overlap(C, c_len, B, matrix_len(K, N, ldb, b_bytes))
           && !(q != NULL && ts_quant_overlaps(q, N, C, c_len));
}

/* As unpacked_args_ok with B a handle for op (packed_ok): C shares no byte with A, the handle
 * or q's arrays. */
static int prepacked_args_ok(const gemm_op *op, size_t M, const void *A, size_t lda,
                             const ts_packed_b *B, const ts_quant *q, const void *C,
                             size_t ldc)
{
    if (!packed_ok(B, op))
        return 0;
    const size_t a_bytes = ts_source_elem_bytes(B->path->pack_a);
    const size_t c_bytes = out_bytes(op, B->path);
    if (!matrix_ok(A, M, B->K, lda, a_bytes) || !matrix_ok(C, M, B->N, ldc, c_bytes)
        || !quant_ok(op, q, B->N))
        return 0;
    const size_t c_len = matrix_len(M, B->N, ldc, c_bytes);
    return !ts_spans_overlap(C, c_len, A, matrix_len(M, B->K, lda, a_bytes))
           && !ts_packed_b_overlaps(B, C, c_len)
           && !(q != NULL && ts_quant_overlaps(q, B->N, C, c_len));
}

/* ---- dispatch on M: the GEMV / small-M kernel (gen/gemv.py) ----------------------------------- */

/* For M <= path->gemv.max_m (and B not too narrow, ts_use_gemv) the GEMV kernel runs instead of the GEMM tile: *view becomes the
 * handle's GEMV layout under the GEMV path *gemv (both the caller's, alive for the call) and
 * is returned; otherwise b itself. The GEMV kernel computes every result with the same
 * instruction over the same k order as the GEMM kernel (an fp32 result is the same chain of
 * fused multiply-adds, k = 0 .. K-1), so both return identical bits. */
static const ts_packed_b *gemv_view(const ts_packed_b *b, size_t M, ts_path *gemv,
                                    ts_packed_b *view)
{
    if (!ts_use_gemv(b->path, M, b->N) || b->gemv_data == NULL)
        return b;
    *gemv = ts_gemv_path(b->path);
    *view = *b;
    view->path = gemv;
    view->ksteps = b->K / gemv->lp + (b->K % gemv->lp != 0);   /* the GEMV kernel's lp */
    view->panels = b->gemv_panels;
    view->panel_bytes = b->gemv_panel_bytes;
    view->data = b->gemv_data;
    view->gemv_panels = 0;
    view->gemv_panel_bytes = 0;
    view->gemv_data = NULL;
    return view;
}

/* The path an unpacked call with M rows packs B for and runs (copied into *copy): the GEMV
 * path for small M, else `path`; either without a GEMV kernel, so B is packed in the one
 * layout the call runs. */
static const ts_path *unpacked_path(const ts_path *path, size_t M, size_t N, ts_path *copy)
{
    *copy = ts_use_gemv(path, M, N) ? ts_gemv_path(path) : ts_single_layout_path(path);
    return copy;
}

/* ---- entry points -------------------------------------------------------------------------------- */

/* Runs a validated GEMM with a prepacked B; allocates only the scratch. */
static int run_prepacked(const ts_packed_b *packed, size_t M, const void *A, size_t lda,
                         const ts_c_sink *out)
{
    size_t bytes;
    ts_path gemv;
    ts_packed_b view;
    if (M == 0 || packed->N == 0)
        return TS_OK;
    const ts_packed_b *b = gemv_view(packed, M, &gemv, &view);
    if (ts_gemm_sink_scratch_bytes(b->path, b->N, b->K, out, &bytes))
        return TS_ENOMEM;
    void *scratch = malloc(bytes);
    if (scratch == NULL)
        return TS_ENOMEM;
    ts_a_source a = { A, lda, NULL, 0 };
    ts_gemm_run(b, M, &a, out, scratch);
    free(scratch);
    return TS_OK;
}

/* Runs a validated GEMM of `gemm_type`: packs B (row-major K x N) and the scratch in one block. */
static int run_unpacked(int gemm_type, size_t M, size_t N, size_t K, const void *A, size_t lda,
                        const void *B, size_t ldb, const ts_c_sink *out)
{
    ts_path gemv;
    const ts_path *path = unpacked_path(ts_select_path(gemm_type), M, N, &gemv);
    size_t b_bytes, scratch_bytes, total;
    if (M == 0 || N == 0)
        return TS_OK;
    if (ts_packed_b_bytes(path, K, N, &b_bytes) || ts_size_round_up(b_bytes, 16, &b_bytes)
        || ts_gemm_sink_scratch_bytes(path, N, K, out, &scratch_bytes)
        || ts_size_add(b_bytes, scratch_bytes, &total))
        return TS_ENOMEM;
    unsigned char *block = (unsigned char *)malloc(total);   /* malloc: aligned for any type */
    if (block == NULL)
        return TS_ENOMEM;
    ts_packed_b packed;
    ts_packed_b_init(&packed, path, K, N, B, ldb, 1, block);
    ts_a_source a = { A, lda, NULL, 0 };
    ts_gemm_run(&packed, M, &a, out, block + b_bytes);
    free(block);
    return TS_OK;
}

/* Every GEMM with a row-major B (q NULL for the raw ones). */
static int gemm(const gemm_op *op, size_t M, size_t N, size_t K, const void *A, size_t lda,
                const void *B, size_t ldb, const ts_quant *q, void *C, size_t ldc)
{
    if (!unpacked_args_ok(op, M, N, K, A, lda, B, ldb, q, C, ldc))
        return TS_EINVAL;
    ts_c_sink out = { C, ldc, q, op->output == OUT_U8, op->output == OUT_F16 };
    return run_unpacked(op->gemm_type, M, N, K, A, lda, B, ldb, &out);
}

/* Every GEMM with a prepacked B. */
static int gemm_prepacked(const gemm_op *op, size_t M, const void *A, size_t lda,
                          const ts_packed_b *B, const ts_quant *q, void *C, size_t ldc)
{
    if (!prepacked_args_ok(op, M, A, lda, B, q, C, ldc))
        return TS_EINVAL;
    ts_c_sink out = { C, ldc, q, op->output == OUT_U8, op->output == OUT_F16 };
    return run_prepacked(B, M, A, lda, &out);
}

/* Packs row-major B for the raw op of a GEMM type (the largest K bound of that type). */
static int pack_b(const gemm_op *op, size_t K, size_t N, const void *B, size_t ldb,
                  ts_packed_b **out)
{
    const ts_path *path = ts_select_path(op->gemm_type);
    if (out == NULL || K > op->max_k || !matrix_ok(B, K, N, ldb, ts_source_elem_bytes(path->pack)))
        return TS_EINVAL;
    return ts_packed_b_create(path, K, N, B, ldb, 1, out);
}

int ts_gemm_f32(size_t M, size_t N, size_t K, const float *A, size_t lda,
                const float *B, size_t ldb, float *C, size_t ldc)
{
    return gemm(&OP_F32, M, N, K, A, lda, B, ldb, NULL, C, ldc);
}

int ts_gemm_bf16(size_t M, size_t N, size_t K, const float *A, size_t lda,
                 const float *B, size_t ldb, float *C, size_t ldc)
{
    return gemm(&OP_BF16, M, N, K, A, lda, B, ldb, NULL, C, ldc);
}

int ts_gemm_s8s32(size_t M, size_t N, size_t K, const int8_t *A, size_t lda,
                  const int8_t *B, size_t ldb, int32_t *C, size_t ldc)
{
    return gemm(&OP_S8S32, M, N, K, A, lda, B, ldb, NULL, C, ldc);
}

int ts_gemm_s8(size_t M, size_t N, size_t K, const int8_t *A, size_t lda,
               const int8_t *B, size_t ldb, const ts_quant *q, int8_t *C, size_t ldc)
{
    return gemm(&OP_S8, M, N, K, A, lda, B, ldb, q, C, ldc);
}

int ts_gemm_u8s8s32(size_t M, size_t N, size_t K, const uint8_t *A, size_t lda,
                    const int8_t *B, size_t ldb, int32_t *C, size_t ldc)
{
    return gemm(&OP_U8S8S32, M, N, K, A, lda, B, ldb, NULL, C, ldc);
}

int ts_gemm_u8u32(size_t M, size_t N, size_t K, const uint8_t *A, size_t lda,
                  const uint8_t *B, size_t ldb, uint32_t *C, size_t ldc)
{
    return gemm(&OP_U8U32, M, N, K, A, lda, B, ldb, NULL, C, ldc);
}

int ts_gemm_u8(size_t M, size_t N, size_t K, const uint8_t *A, size_t lda,
               const int8_t *B, size_t ldb, const ts_quant *q, uint8_t *C, size_t ldc)
{
    return gemm(&OP_U8, M, N, K, A, lda, B, ldb, q, C, ldc);
}

int ts_gemm_f16(size_t M, size_t N, size_t K, const uint16_t *A, size_t lda,
                const uint16_t *B, size_t ldb, uint16_t *C, size_t ldc)
{
    return gemm(&OP_F16, M, N, K, A, lda, B, ldb, NULL, C, ldc);
}

int ts_gemm_f16f32(size_t M, size_t N, size_t K, const uint16_t *A, size_t lda,
                   const uint16_t *B, size_t ldb, float *C, size_t ldc)
{
    return gemm(&OP_F16F32, M, N, K, A, lda, B, ldb, NULL, C, ldc);
}

/* ---- prepacked B ----------------------------------------------------------------------------------- */

int ts_pack_b_f32(size_t K, size_t N, const float *B, size_t ldb, ts_packed_b **out)
{
    return pack_b(&OP_F32, K, N, B, ldb, out);
}

int ts_pack_b_bf16(size_t K, size_t N, const float *B, size_t ldb, ts_packed_b **out)
{
    return pack_b(&OP_BF16, K, N, B, ldb, out);
}

int ts_pack_b_s8(size_t K, size_t N, const int8_t *B, size_t ldb, ts_packed_b **out)
{
    return pack_b(&OP_S8S32, K, N, B, ldb, out);
}

int ts_pack_b_u8s8(size_t K, size_t N, const int8_t *B, size_t ldb, ts_packed_b **out)
{
    return pack_b(&OP_U8S8S32, K, N, B, ldb, out);
}

int ts_pack_b_u8u32(size_t K, size_t N, const uint8_t *B, size_t ldb, ts_packed_b **out)
{
    return pack_b(&OP_U8U32, K, N, B, ldb, out);
}

int ts_pack_b_f16(size_t K, size_t N, const uint16_t *B, size_t ldb, ts_packed_b **out)
{
    return pack_b(&OP_F16, K, N, B, ldb, out);
}

int ts_pack_b_f16f32(size_t K, size_t N, const uint16_t *B, size_t ldb, ts_packed_b **out)
{
    return pack_b(&OP_F16F32, K, N, B, ldb, out);
}

int ts_gemm_f16_prepacked(size_t M, const uint16_t *A, size_t lda, const ts_packed_b *B,
                          uint16_t *C, size_t ldc)
{
    return gemm_prepacked(&OP_F16, M, A, lda, B, NULL, C, ldc);
}

int ts_gemm_f16f32_prepacked(size_t M, const uint16_t *A, size_t lda, const ts_packed_b *B,
                             float *C, size_t ldc)
{
    return gemm_prepacked(&OP_F16F32, M, A, lda, B, NULL, C, ldc);
}

int ts_gemm_f32_prepacked(size_t M, const float *A, size_t lda, const ts_packed_b *B,
                          float *C, size_t ldc)
{
    return gemm_prepacked(&OP_F32, M, A, lda, B, NULL, C, ldc);
}

int ts_gemm_bf16_prepacked(size_t M, const float *A, size_t lda, const ts_packed_b *B,
                           float *C, size_t ldc)
{
    return gemm_prepacked(&OP_BF16, M, A, lda, B, NULL, C, ldc);
}

int ts_gemm_s8s32_prepacked(size_t M, const int8_t *A, size_t lda, const ts_packed_b *B,
                            int32_t *C, size_t ldc)
{
    return gemm_prepacked(&OP_S8S32, M, A, lda, B, NULL, C, ldc);
}

int ts_gemm_s8_prepacked(size_t M, const int8_t *A, size_t lda, const ts_packed_b *B,
                         const ts_quant *q, int8_t *C, size_t ldc)
{
    return gemm_prepacked(&OP_S8, M, A, lda, B, q, C, ldc);
}

int ts_gemm_u8s8s32_prepacked(size_t M, const uint8_t *A, size_t lda, const ts_packed_b *B,
                              int32_t *C, size_t ldc)
{
    return gemm_prepacked(&OP_U8S8S32, M, A, lda, B, NULL, C, ldc);
}

int ts_gemm_u8u32_prepacked(size_t M, const uint8_t *A, size_t lda, const ts_packed_b *B,
                            uint32_t *C, size_t ldc)
{
    return gemm_prepacked(&OP_U8U32, M, A, lda, B, NULL, C, ldc);
}

int ts_gemm_u8_prepacked(size_t M, const uint8_t *A, size_t lda, const ts_packed_b *B,
                         const ts_quant *q, uint8_t *C, size_t ldc)
{
    return gemm_prepacked(&OP_U8, M, A, lda, B, q, C, ldc);
}
