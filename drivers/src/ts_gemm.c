/* ts_gemm.c — the public GEMM entry points (plain and prepacked B, with and without a
 * context): argument checks, the call's memory (the context's workspace or one malloc block:
 * B's packed panels unless prepacked, then the macro-kernel's work area, ts_engine.c), all
 * obtained before the first output byte is written, so an error never leaves C half-written.
 * Plain C99. */
#include <stdlib.h>
#include <string.h>

#include "ts_context_internal.h"
#include "ts_error_internal.h"
#include "ts_gemm_internal.h"
#include "ts_quant_internal.h"

/* ---- argument checks ---------------------------------------------------------------------------- */

/* Why a matrix argument is refused (ts_last_error, ts_matrix_ok). */
static const ts_matrix_why A_WHY = { "A is NULL (M and K > 0)", "lda < K (A's row stride)",
                                  "A's span (M, K, lda) overflows size_t" };
static const ts_matrix_why B_WHY = { "B is NULL (K and N > 0)", "ldb < N (B's row stride)",
                                  "B's span (K, N, ldb) overflows size_t" };
/* B given N x K ("out x in", the ts_pack_b_*_nk packers): row n holds column n of B. */
static const ts_matrix_why B_NK_WHY = { "B is NULL (N and K > 0)",
                                        "ldb < K (B's row stride, N x K)",
                                        "B's span (N, K, ldb) overflows size_t" };
static const ts_matrix_why C_WHY = { "C is NULL (M and N > 0)", "ldc < N (C's row stride)",
                                  "C's span (M, N, ldc) overflows size_t" };

/* Bytes of a matrix that passed matrix_ok (its span fits in size_t). */
static size_t matrix_len(size_t rows, size_t cols, size_t ld, size_t elem_bytes)
{
    size_t len = 0;
    ts_matrix_span_bytes(rows, cols, ld, elem_bytes, &len);
    return len;
}

/* What a public GEMM entry point computes: its GEMM type, its K bound (tilesmith.h), and its
 * output: the kernel's raw results, int8 / uint8 through the requantization epilogue, fp16
 * (the fp32 fallback's results rounded to fp16), or fp32 through bias and clamp. */
enum { OUT_RAW, OUT_S8, OUT_U8, OUT_F16, OUT_BIAS_CLAMP };
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
static const gemm_op OP_F32_BIAS_CLAMP = { TS_GEMM_F32, SIZE_MAX, OUT_BIAS_CLAMP };
static const gemm_op OP_BF16_BIAS_CLAMP = { TS_GEMM_BF16, SIZE_MAX, OUT_BIAS_CLAMP };
static const gemm_op OP_F16F32_BIAS_CLAMP = { TS_GEMM_F16F32, SIZE_MAX, OUT_BIAS_CLAMP };

/* The bias and clamp of an OUT_BIAS_CLAMP call (ts_gemm_f32_bias_clamp*). */
typedef struct {
    const float *bias;        /* N values or NULL */
    float cmin, cmax;
} bias_clamp;

/* Bytes of one element of C as the caller passes it. */
static size_t out_bytes(const gemm_op *op, const ts_path *path)
{
    return op->output == OUT_S8 || op->output == OUT_U8 ? 1
           : op->output == OUT_F16 ? sizeof(uint16_t) : path->c_bytes;
}

/* The sink of op's output into C (bc: the bias and clamp of an OUT_BIAS_CLAMP op). */
static ts_c_sink sink_of(const gemm_op *op, void *C, size_t ldc, const ts_quant *q,
                         const bias_clamp *bc)
{
    ts_c_sink out = { C, ldc, q, op->output == OUT_U8, op->output == OUT_F16, 0, NULL, 0, 0 };
    if (op->output == OUT_BIAS_CLAMP) {
        out.bias_clamp = 1;
        out.bias = bc->bias;
        out.cmin = bc->cmin;
        out.cmax = bc->cmax;
    }
    return out;
}

/* Bounds of a bias-and-clamp op: neither NaN, cmin <= cmax (the infinities: no clamp). */
static int clamp_ok(const gemm_op *op, const bias_clamp *bc)
{
    if (op->output != OUT_BIAS_CLAMP)
        return 1;
    return (bc->cmin <= bc->cmax)   /* false for a NaN bound too */
           || ts_reject("cmin > cmax, or a NaN bound (cmin, cmax)");
}

/* Bytes of the bias an op reads: N floats for a bias-and-clamp op with a bias, else 0. */
static size_t bias_len(const gemm_op *op, const bias_clamp *bc, size_t N)
{
    return op->output == OUT_BIAS_CLAMP && bc->bias != NULL ? N * sizeof(float) : 0;
}

/* q present exactly when the op requantizes, and valid for its output type and N columns. */
static int quant_ok(const gemm_op *op, const ts_quant *q, size_t N)
{
    if (op->output != OUT_S8 && op->output != OUT_U8)
        return q == NULL || ts_reject("q given to a GEMM without requantization");
    return (op->output == OUT_U8 ? ts_quant_validate_u8(q, N) : ts_quant_validate(q, N)) == TS_OK;
}

/* K within op's bound (tilesmith.h: beyond it the int32 sums could overflow). */
static int k_ok(const gemm_op *op, size_t K)
{
    return K <= op->max_k || ts_reject("K beyond this GEMM type's bound (its *_MAX_K)");
}

/* A handle usable for `op` with the kernel `run` the dispatcher picked for this call: packed
 * for its GEMM type with the B panel layout `run` reads (the same kernel, or a core-class
 * variant of the same hp, lp and conversion), K within op's bound. */
static int packed_ok(const ts_packed_b *b, const gemm_op *op, const ts_path *run)
{
    if (b == NULL)
        return ts_reject("B (the packed handle) is NULL");
    if (!ts_handle_ok(b, TS_TAG_PACKED_B, "B is not a live ts_packed_b of ts_pack_b_* (another "
                                          "handle type, e.g. a conv filter's, or freed)"))
        return 0;
    if (b->path->gemm_type != op->gemm_type)
        return ts_reject("B was packed for another GEMM type");
    if (!ts_handle_b_layout_ok(b, run))
        return ts_reject("B was packed for a kernel whose panel layout this call's kernel does "
                         "not read (another feature mask or CPU choice)");
    return k_ok(op, b->K);
}

/* None of C's bytes is a byte read: of A, of B (a row-major matrix, or else the handle
 * `packed`), of q's arrays. A and B as matrices (ts_strided_overlap: C may sit between A's
 * rows, as in an in-place concatenation), the rest as spans. */
static int c_apart(const ts_strided *C, const ts_strided *A, const ts_strided *B,
                   const ts_packed_b *packed, const ts_quant *q, size_t N, const float *bias,
                   size_t bias_bytes)
{
    const size_t c_len = ts_strided_bytes(C);
    if (ts_strided_overlap(C, A))
        return ts_reject("C overlaps A");
    if ((B != NULL && ts_strided_overlap(C, B))
        || (packed != NULL && ts_packed_b_overlaps(packed, C->p, c_len)))
        return ts_reject("C overlaps B");
    if (ts_spans_overlap(C->p, c_len, bias, bias_bytes))
        return ts_reject("C overlaps bias");
    if (q != NULL && ts_quant_overlaps(q, N, C->p, c_len))   /* q: only where quant_ok wants it */
        return ts_reject("C overlaps q or one of its arrays");
    return 1;
}

/* Valid arguments of a GEMM with a row-major B: K within the bound, matrices as matrix_ok, q
 * as quant_ok, the clamp as clamp_ok, and C sharing no byte with A, B, q's arrays or the
 * bias. */
static int unpacked_args_ok(const ts_path *path, const gemm_op *op, size_t M, size_t N, size_t K, const void *A,
                            size_t lda, const void *B, size_t ldb, const ts_quant *q,
                            const bias_clamp *bc, const void *C, size_t ldc)
{
    /* element sizes as the caller passes them: every path of a type reads the same sources */
    const size_t a_bytes = ts_source_elem_bytes(path->pack_a);
    const size_t b_bytes = ts_source_elem_bytes(path->pack);
    const size_t c_bytes = out_bytes(op, path);
    /* an empty call (M or N 0) reads neither A nor B: only their strides are checked */
    const int empty = M == 0 || N == 0;
    if (!k_ok(op, K) || !ts_matrix_ok(A, empty ? 0 : M, K, lda, a_bytes, &A_WHY)
        || !ts_matrix_ok(B, empty ? 0 : K, N, ldb, b_bytes, &B_WHY)
        || !ts_matrix_ok(C, M, N, ldc, c_bytes, &C_WHY)
        || !quant_ok(op, q, N) || !clamp_ok(op, bc))
        return 0;
    const ts_strided c = ts_strided_of(C, M, N, ldc, c_bytes), a = ts_strided_of(A, M, K, lda, a_bytes);
    const ts_strided b = ts_strided_of(B, K, N, ldb, b_bytes);
    return c_apart(&c, &a, &b, NULL, q, N, bc != NULL ? bc->bias : NULL, bias_len(op, bc, N));
}

/* As unpacked_args_ok with B a handle for op (packed_ok): C shares no byte with A, the handle
 * or q's arrays. */
static int prepacked_args_ok(const gemm_op *op, const ts_path *run, size_t M, const void *A,
                             size_t lda, const ts_packed_b *B, const ts_quant *q,
                             const bias_clamp *bc, const void *C, size_t ldc)
{
    if (!packed_ok(B, op, run))
        return 0;
    if (!ts_packed_gemm_layout(B) && M > B->path->gemv.max_m)
        return ts_reject("B holds only the GEMV layout (TS_LAYOUT_GEMV), which runs M up to the "
                         "GEMV kernel's max_m; pack with TS_LAYOUT_GEMM for this M");
    const size_t a_bytes = ts_source_elem_bytes(B->path->pack_a);
    const size_t c_bytes = out_bytes(op, B->path);
    const size_t a_rows = B->N == 0 ? 0 : M;       /* N = 0: an empty call, A not read */
    if (!ts_matrix_ok(A, a_rows, B->K, lda, a_bytes, &A_WHY)
        || !ts_matrix_ok(C, M, B->N, ldc, c_bytes, &C_WHY)
        || !quant_ok(op, q, B->N) || !clamp_ok(op, bc))
        return 0;
    const ts_strided c = ts_strided_of(C, M, B->N, ldc, c_bytes);
    const ts_strided a = ts_strided_of(A, M, B->K, lda, a_bytes);
    return c_apart(&c, &a, NULL, B, q, B->N, bc != NULL ? bc->bias : NULL,
                   bias_len(op, bc, B->N));
}

/* ---- entry points -------------------------------------------------------------------------------- */

int ts_call_memory(const ts_context *ctx, size_t bytes, const void *const *spans,
                   const size_t *span_len, int n_spans, const ts_quant *q, size_t N, void **mem,
                   void **owned)
{
    *owned = NULL;
    if (ctx != NULL && ctx->workspace != NULL) {
        if (bytes > ctx->workspace_bytes)
            return ts_fail(TS_EINVAL, "the context's workspace is smaller than the call needs "
                                      "(ts_context_workspace_size)");
        for (int i = 0; i < n_spans; ++i)
            if (ts_spans_overlap(ctx->workspace, bytes, spans[i], span_len[i]))
                return ts_fail(TS_EINVAL, "the context's workspace overlaps a buffer of the call");
        if (q != NULL && ts_quant_overlaps(q, N, ctx->workspace, bytes))
            return ts_fail(TS_EINVAL, "the context's workspace overlaps q or one of its arrays");
        if (!TS_TRY_CLAIM(*ctx->workspace_busy))
            return ts_fail(TS_EBUSY, "the context's workspace is in use by another call");
        *mem = ctx->workspace;
        return TS_OK;
    }
    *owned = malloc(bytes != 0 ? bytes : 1);
    *mem = *owned;
    return *owned != NULL ? TS_OK : ts_fail(TS_ENOMEM, "out of memory (the call's workspace)");
}

void ts_call_memory_done(const ts_context *ctx, void *owned)
{
    if (ctx != NULL && ctx->workspace != NULL)
        TS_UNCLAIM(*ctx->workspace_busy);
    free(owned);
}

/* Data-cache line of every modeled core (gen/cores.py MEMORY: 64 bytes, from the Arm TRMs).
 * B packed in the call starts its panels on a line: the row-major packers write one k-step of
 * every panel in turn (ts_pack.c pack_b_transposed), 64 bytes per panel for the 8-column int8 /
 * bf16 tiles, so on a line they write whole lines (no read of the destination, write
 * streaming) instead of halves of two lines a whole sweep apart (read from memory, written
 * back twice: prefill M=512 int8 on the bench's N2 model, 48 MiB more traffic). */
#define TS_LINE_BYTES 64

/* Bytes a call with path needs with ctx's threads: B's panels (unless prepacked, with room to
 * start them on a line) and the macro-kernel's work area (stage: TS_STAGE_*). */
static int call_bytes(const ts_context *ctx, const ts_path *path, size_t M, size_t N, size_t K,
                      int stage, int pack_b, size_t *out)
{
    size_t b_bytes = 0, work;
    if (pack_b && (ts_packed_b_bytes(path, TS_LAYOUTS_ALL, K, N, &b_bytes) || ts_size_round_up(b_bytes, 16, &b_bytes)
                   || ts_size_add(b_bytes, TS_LINE_BYTES - 16, &b_bytes)))
        return -1;
    return ts_gemm_work_bytes(path, M, N, K, stage, 0, ts_context_threads(ctx), &work)
           || ts_size_add(b_bytes, work, out) || ts_size_add(*out, 15, out);
}

/* ---- dispatch on M: the GEMV / small-M kernel (gen/gemv.py) ----------------------------------- */

/* For M <= path->gemv.max_m (and B not too narrow, ts_use_gemv, or a handle with only the GEMV
 * layout) the GEMV kernel runs instead of the GEMM tile: *view becomes the handle's GEMV
 * layout under the GEMV path *gemv (both the caller's, alive for the call) and is returned;
 * otherwise b itself (a handle without the GEMV layout: the GEMM tile for every M). The GEMV
 * kernel computes every result with the same instruction over the same k order as the GEMM
 * kernel (an fp32 result is the same chain of fused multiply-adds, k = 0 .. K-1), so both
 * return identical bits. */
static const ts_packed_b *gemv_view(const ts_packed_b *b, size_t M, ts_path *gemv,
                                    ts_packed_b *view)
{
    if (b->gemv_data == NULL || (ts_packed_gemm_layout(b) && !ts_use_gemv(b->path, M, b->N)))
        return b;
    *gemv = ts_gemv_path(b->path);
    *view = *b;
    view->path = gemv;
    view->ksteps = b->K / gemv->lp + (b->K % gemv->lp != 0);   /* the GEMV kernel's lp */
    view->panels = b->gemv_panels;
    view->panel_bytes = b->gemv_panel_bytes;
    view->data = b->gemv_data;
    view->tail_hp = 0;
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

/* The path a prepacked call with M rows runs (copied into *copy) on a handle of path with
 * `layouts` (ts_context_set_pack_layouts), as gemv_view chooses: with both layouts the
 * unpacked call's; with the GEMM layout alone the GEMM tile; with the GEMV layout alone the
 * GEMV kernel for every M it runs (larger M is refused: sized as the GEMM tile). */
static const ts_path *prepacked_path(const ts_path *path, unsigned layouts, size_t M, size_t N,
                                     ts_path *copy)
{
    const int use_gemv = ts_keeps_gemv_layout(path, layouts) && M <= path->gemv.max_m
                         && (!ts_keeps_gemm_layout(path, layouts) || ts_use_gemv(path, M, N));
    *copy = use_gemv ? ts_gemv_path(path) : ts_single_layout_path(path);
    return copy;
}

/* The largest call_bytes over the type's paths (B packed in the call or prepacked: pack_b),
 * for ctx's threads and cache sizes; 0 for a dead ctx, an unknown type or on overflow. A
 * prepacked call runs the path prepacked_path gives for a handle of ctx's layouts (with both:
 * the unpacked call's, the GEMV path for small M), without B's panels. qdyn handles are always
 * prepacked. */
static size_t workspace_size(const ts_context *ctx, int gemm_type, size_t M, size_t N,
                             size_t K, int pack_b)
{
    size_t count, most = 0, bytes;
    if (!ts_context_ok(ctx))
        return 0;
    if (gemm_type == TS_GEMM_QDYN)
        return ts_qdyn_workspace_size(ctx, M, N, K);
    const ts_path *paths = ts_paths_of(gemm_type, &count);
    if (count == 0)
        return (size_t)ts_reject("gemm_type is not a TS_GEMM_* value");
    for (size_t i = 0; i < count; ++i) {
        ts_path copy, sized;
        const ts_path *path;
        ts_blocks_seen seen;
        seen.count = 0;
        /* every path with the blocks of every core it may run on (ts_sized_path_at), each
         * distinct set of blocks once */
        for (size_t s = 0; (path = ts_sized_path_at(ctx, &paths[i], s, &sized)) != NULL; ++s) {
            if (ts_blocks_seen_before(&seen, path))
                continue;
            path = pack_b ? unpacked_path(path, M, N, &copy)
                          : prepacked_path(path, ts_context_pack_layouts(ctx), M, N, &copy);
            if (call_bytes(ctx, path, M, N, K, ts_gemm_stage_of_type(gemm_type, path), pack_b,
                           &bytes))
                return 0;
            most = bytes > most ? bytes : most;
        }
    }
    return most;
}

size_t ts_context_workspace_size(const ts_context *ctx, int gemm_type, size_t M, size_t N,
                                 size_t K)
{
    return workspace_size(ctx, gemm_type, M, N, K, 1);
}

size_t ts_context_workspace_size_prepacked(const ts_context *ctx, int gemm_type, size_t M,
                                           size_t N, size_t K)
{
    return workspace_size(ctx, gemm_type, M, N, K, 0);
}

/* The buffers a call reads or writes, for the workspace overlap check: A, B (or the handle's
 * panels), C, the handle's GEMV panels, the bias. */
#define TS_CALL_SPANS 5
typedef struct {
    const void *p[TS_CALL_SPANS];
    size_t len[TS_CALL_SPANS];
} call_spans;

/* Runs a validated GEMM: B row-major K x N (`packed` NULL) or prepacked. For small M the
 * GEMV path runs (packed: the handle's GEMV layout). */
static int run(const ts_context *ctx, const ts_path *path, const ts_packed_b *packed,
               size_t M, size_t N, size_t K, const void *A, size_t lda, const void *B,
               size_t ldb, const ts_c_sink *out, const call_spans *spans)
{
    size_t bytes, b_bytes = 0;
    void *mem, *owned;
    ts_path gemv;
    ts_packed_b view;
    if (M == 0 || N == 0)
        return TS_OK;
    if (packed != NULL) {
        packed = gemv_view(packed, M, &gemv, &view);
        path = packed->path;
    } else {
        path = unpacked_path(path, M, N, &gemv);
    }
    if (call_bytes(ctx, path, M, N, K, ts_gemm_stage(path, out), packed == NULL, &bytes))
        return ts_fail(ctx != NULL && ctx->workspace != NULL ? TS_EINVAL : TS_ENOMEM,
                       "the call's workspace size overflows size_t");
    int err = ts_call_memory(ctx, bytes, spans->p, spans->len, TS_CALL_SPANS, out->q, N, &mem,
                             &owned);
    if (err != TS_OK)
        return err;
    unsigned char *base = (unsigned char *)ts_align16(mem);
    ts_packed_b local;
    ts_b_source b = { packed, 0, NULL, 0, 0 };
    if (packed == NULL) {
        ts_packed_b_bytes(path, TS_LAYOUTS_ALL, K, N, &b_bytes);
        ts_size_round_up(b_bytes, 16, &b_bytes);
        /* the panels on a line (TS_LINE_BYTES): move the block by at most 48 bytes */
        ts_packed_b_layout(&local, path, TS_LAYOUTS_ALL, K, N, base);
        base += (TS_LINE_BYTES - (uintptr_t)local.data % TS_LINE_BYTES) % TS_LINE_BYTES;
        ts_packed_b_layout(&local, path, TS_LAYOUTS_ALL, K, N, base);
        b.b = &local;
        b.fill = 1;
        b.src = B;
        b.k_stride = ldb;
        b.n_stride = 1;
    }
    ts_a_source a = { A, lda, NULL, 0, NULL };
    ts_gemm_exec(ctx, &b, M, &a, out, base + b_bytes);
    ts_call_memory_done(ctx, owned);
    return TS_OK;
}

/* Every GEMM with a row-major B (q NULL for the raw ones; bc NULL but for OUT_BIAS_CLAMP). */
static int gemm(const ts_context *ctx, const gemm_op *op, size_t M, size_t N, size_t K,
                const void *A, size_t lda, const void *B, size_t ldb, const ts_quant *q,
                const bias_clamp *bc, void *C, size_t ldc)
{
    ts_path sized;
    if (!ts_context_ok(ctx))
        return TS_EINVAL;
    const ts_path *path = ts_select_sized_path(ctx, op->gemm_type, &sized);
    if (!unpacked_args_ok(path, op, M, N, K, A, lda, B, ldb, q, bc, C, ldc))
        return TS_EINVAL;
    const size_t a_bytes = ts_source_elem_bytes(path->pack_a);
    const size_t b_bytes = ts_source_elem_bytes(path->pack);
    const size_t c_bytes = out_bytes(op, path);
    call_spans spans = { { A, B, C, NULL, bc != NULL ? bc->bias : NULL },
                         { matrix_len(M, K, lda, a_bytes), matrix_len(K, N, ldb, b_bytes),
                           matrix_len(M, N, ldc, c_bytes), 0, bias_len(op, bc, N) } };
    ts_c_sink out = sink_of(op, C, ldc, q, bc);
    return run(ctx, path, NULL, M, N, K, A, lda, B, ldb, &out, &spans);
}

/* Every GEMM with a prepacked B. */
static int gemm_prepacked(const ts_context *ctx, const gemm_op *op, size_t M, const void *A,
                          size_t lda, const ts_packed_b *B, const ts_quant *q,
                          const bias_clamp *bc, void *C, size_t ldc)
{
    ts_path sized;   /* selected once: the thread may migrate */
    if (!ts_context_ok(ctx))
        return TS_EINVAL;
    const ts_path *path = ts_select_sized_path(ctx, op->gemm_type, &sized);
    if (path == NULL)
        return ts_fail(TS_EINVAL, "no kernel path of this GEMM type on this CPU / feature mask");
    if (!prepacked_args_ok(op, path, M, A, lda, B, q, bc, C, ldc))
        return TS_EINVAL;
    const size_t a_bytes = ts_source_elem_bytes(B->path->pack_a);
    const size_t c_bytes = out_bytes(op, B->path);
    call_spans spans = { { A, C, B->data }, { matrix_len(M, B->K, lda, a_bytes),
                                              matrix_len(M, B->N, ldc, c_bytes),
                                              B->panels * B->panel_bytes } };
    spans.p[3] = B->gemv_data;
    spans.len[3] = B->gemv_panels * B->gemv_panel_bytes;
    spans.p[4] = bc != NULL ? bc->bias : NULL;
    spans.len[4] = bias_len(op, bc, B->N);
    ts_c_sink out = sink_of(op, C, ldc, q, bc);
    ts_packed_b as_run = *B;      /* the same panels, read by this call's kernel variant */
    as_run.path = path;
    return run(ctx, path, &as_run, M, B->N, B->K, A, lda, NULL, 0, &out, &spans);
}

/* Packs B for the raw op of a GEMM type (the largest K bound of that type): K x N row-major
 * (nk 0), or N x K row-major (nk 1: element (k, n) at B[n*ldb + k], the transposed strides of
 * the same packer, ts_packed_b_init), into the same handle either way. */
static int pack_b(const ts_context *ctx, const gemm_op *op, int nk, size_t K, size_t N,
                  const void *B, size_t ldb, ts_packed_b **out)
{
    if (!ts_context_ok(ctx))
        return TS_EINVAL;
    const ts_path *path = ts_select_path_ctx(ctx, op->gemm_type);
    const size_t b_bytes = ts_source_elem_bytes(path->pack);
    if (out == NULL)
        return ts_fail(TS_EINVAL, "out (where the handle goes) is NULL");
    if (!k_ok(op, K))
        return TS_EINVAL;
    const unsigned layouts = ts_context_pack_layouts(ctx);
    const size_t tail_hp = ts_handle_tail_hp(path, layouts, N);
    if (nk)
        return ts_matrix_ok(B, N, K, ldb, b_bytes, &B_NK_WHY)
               ? ts_packed_b_create(path, layouts, K, N, B, 1, ldb, tail_hp, out) : TS_EINVAL;
    return ts_matrix_ok(B, K, N, ldb, b_bytes, &B_WHY)
           ? ts_packed_b_create(path, layouts, K, N, B, ldb, 1, tail_hp, out) : TS_EINVAL;
}

/* The public entry points: each _ctx function, and its twin with ctx NULL. (The names are
 * spelled out, not pasted: gen/drivers.py applies PREFIX to whole ts_ identifiers.) */
#define TS_GEMM_ENTRY(name, name_ctx, op, ta, tb, tc)                                              \
    int name_ctx(const ts_context *ctx, size_t M, size_t N, size_t K, const ta *A,                 \
                        size_t lda, const tb *B, size_t ldb, tc *C, size_t ldc)                    \
    {                                                                                              \
        return gemm(ctx, &op, M, N, K, A, lda, B, ldb, NULL, NULL, C, ldc);                              \
    }                                                                                              \
    int name(size_t M, size_t N, size_t K, const ta *A, size_t lda, const tb *B,                   \
                  size_t ldb, tc *C, size_t ldc)                                                   \
    {                                                                                              \
        return gemm(NULL, &op, M, N, K, A, lda, B, ldb, NULL, NULL, C, ldc);                             \
    }
#define TS_GEMM_Q_ENTRY(name, name_ctx, op, ta, tc)                                                \
    int name_ctx(const ts_context *ctx, size_t M, size_t N, size_t K, const ta *A,                 \
                        size_t lda, const int8_t *B, size_t ldb, const ts_quant *q, tc *C,         \
                        size_t ldc)                                                                \
    {                                                                                              \
        return gemm(ctx, &op, M, N, K, A, lda, B, ldb, q, NULL, C, ldc);                                 \
    }                                                                                              \
    int name(size_t M, size_t N, size_t K, const ta *A, size_t lda, const int8_t *B,               \
                  size_t ldb, const ts_quant *q, tc *C, size_t ldc)                                \
    {                                                                                              \
        return gemm(NULL, &op, M, N, K, A, lda, B, ldb, q, NULL, C, ldc);                                \
    }
#define TS_PACK_ENTRY(name, name_ctx, op, tb)                                                      \
    int name_ctx(const ts_context *ctx, size_t K, size_t N, const tb *B, size_t ldb,               \
                        ts_packed_b **out)                                                         \
    {                                                                                              \
        return pack_b(ctx, &op, 0, K, N, B, ldb, out);                                             \
    }                                                                                              \
    int name(size_t K, size_t N, const tb *B, size_t ldb, ts_packed_b **out)                       \
    {                                                                                              \
        return pack_b(NULL, &op, 0, K, N, B, ldb, out);                                            \
    }
/* The N x K twins: (N, K) in the order of the matrix, like ts_pack_b_qs8. */
#define TS_PACK_NK_ENTRY(name, name_ctx, op, tb)                                                   \
    int name_ctx(const ts_context *ctx, size_t N, size_t K, const tb *B, size_t ldb,               \
                        ts_packed_b **out)                                                         \
    {                                                                                              \
        return pack_b(ctx, &op, 1, K, N, B, ldb, out);                                             \
    }                                                                                              \
    int name(size_t N, size_t K, const tb *B, size_t ldb, ts_packed_b **out)                       \
    {                                                                                              \
        return pack_b(NULL, &op, 1, K, N, B, ldb, out);                                            \
    }
#define TS_PREPACKED_ENTRY(name, name_ctx, op, ta, tc)                                             \
    int name_ctx(const ts_context *ctx, size_t M, const ta *A, size_t lda,                         \
                        const ts_packed_b *B, tc *C, size_t ldc)                                   \
    {                                                                                              \
        return gemm_prepacked(ctx, &op, M, A, lda, B, NULL, NULL, C, ldc);                               \
    }                                                                                              \
    int name(size_t M, const ta *A, size_t lda, const ts_packed_b *B, tc *C, size_t ldc)           \
    {                                                                                              \
        return gemm_prepacked(NULL, &op, M, A, lda, B, NULL, NULL, C, ldc);                              \
    }
#define TS_PREPACKED_Q_ENTRY(name, name_ctx, op, ta, tc)                                           \
    int name_ctx(const ts_context *ctx, size_t M, const ta *A, size_t lda,                         \
                        const ts_packed_b *B, const ts_quant *q, tc *C, size_t ldc)                \
    {                                                                                              \
        return gemm_prepacked(ctx, &op, M, A, lda, B, q, NULL, C, ldc);                                  \
    }                                                                                              \
    int name(size_t M, const ta *A, size_t lda, const ts_packed_b *B, const ts_quant *q,           \
                  tc *C, size_t ldc)                                                               \
    {                                                                                              \
        return gemm_prepacked(NULL, &op, M, A, lda, B, q, NULL, C, ldc);                                 \
    }

TS_GEMM_ENTRY(ts_gemm_f32, ts_gemm_f32_ctx, OP_F32, float, float, float)
TS_GEMM_ENTRY(ts_gemm_bf16, ts_gemm_bf16_ctx, OP_BF16, float, float, float)
TS_GEMM_ENTRY(ts_gemm_s8s32, ts_gemm_s8s32_ctx, OP_S8S32, int8_t, int8_t, int32_t)
TS_GEMM_ENTRY(ts_gemm_u8s8s32, ts_gemm_u8s8s32_ctx, OP_U8S8S32, uint8_t, int8_t, int32_t)
TS_GEMM_ENTRY(ts_gemm_u8u32, ts_gemm_u8u32_ctx, OP_U8U32, uint8_t, uint8_t, uint32_t)
TS_GEMM_Q_ENTRY(ts_gemm_s8, ts_gemm_s8_ctx, OP_S8, int8_t, int8_t)
TS_GEMM_Q_ENTRY(ts_gemm_u8, ts_gemm_u8_ctx, OP_U8, uint8_t, uint8_t)

TS_PACK_ENTRY(ts_pack_b_f32, ts_pack_b_f32_ctx, OP_F32, float)
TS_PACK_ENTRY(ts_pack_b_bf16, ts_pack_b_bf16_ctx, OP_BF16, float)
TS_PACK_ENTRY(ts_pack_b_s8, ts_pack_b_s8_ctx, OP_S8S32, int8_t)
TS_PACK_ENTRY(ts_pack_b_u8s8, ts_pack_b_u8s8_ctx, OP_U8S8S32, int8_t)
TS_PACK_ENTRY(ts_pack_b_u8u32, ts_pack_b_u8u32_ctx, OP_U8U32, uint8_t)
TS_PACK_NK_ENTRY(ts_pack_b_f32_nk, ts_pack_b_f32_nk_ctx, OP_F32, float)
TS_PACK_NK_ENTRY(ts_pack_b_bf16_nk, ts_pack_b_bf16_nk_ctx, OP_BF16, float)
TS_PACK_NK_ENTRY(ts_pack_b_s8_nk, ts_pack_b_s8_nk_ctx, OP_S8S32, int8_t)
TS_PACK_NK_ENTRY(ts_pack_b_u8s8_nk, ts_pack_b_u8s8_nk_ctx, OP_U8S8S32, int8_t)
TS_PACK_NK_ENTRY(ts_pack_b_u8u32_nk, ts_pack_b_u8u32_nk_ctx, OP_U8U32, uint8_t)

TS_PREPACKED_ENTRY(ts_gemm_f32_prepacked, ts_gemm_f32_prepacked_ctx, OP_F32, float, float)
TS_PREPACKED_ENTRY(ts_gemm_bf16_prepacked, ts_gemm_bf16_prepacked_ctx, OP_BF16, float, float)
TS_PREPACKED_ENTRY(ts_gemm_s8s32_prepacked, ts_gemm_s8s32_prepacked_ctx, OP_S8S32, int8_t, int32_t)
TS_PREPACKED_ENTRY(ts_gemm_u8s8s32_prepacked, ts_gemm_u8s8s32_prepacked_ctx,
                   OP_U8S8S32, uint8_t, int32_t)
TS_PREPACKED_ENTRY(ts_gemm_u8u32_prepacked, ts_gemm_u8u32_prepacked_ctx,
                   OP_U8U32, uint8_t, uint32_t)
TS_PREPACKED_Q_ENTRY(ts_gemm_s8_prepacked, ts_gemm_s8_prepacked_ctx, OP_S8, int8_t, int8_t)
TS_PREPACKED_Q_ENTRY(ts_gemm_u8_prepacked, ts_gemm_u8_prepacked_ctx, OP_U8, uint8_t, uint8_t)

TS_GEMM_ENTRY(ts_gemm_f16, ts_gemm_f16_ctx, OP_F16, uint16_t, uint16_t, uint16_t)
TS_GEMM_ENTRY(ts_gemm_f16f32, ts_gemm_f16f32_ctx, OP_F16F32, uint16_t, uint16_t, float)
TS_PACK_ENTRY(ts_pack_b_f16, ts_pack_b_f16_ctx, OP_F16, uint16_t)
TS_PACK_ENTRY(ts_pack_b_f16f32, ts_pack_b_f16f32_ctx, OP_F16F32, uint16_t)
TS_PACK_NK_ENTRY(ts_pack_b_f16_nk, ts_pack_b_f16_nk_ctx, OP_F16, uint16_t)
TS_PACK_NK_ENTRY(ts_pack_b_f16f32_nk, ts_pack_b_f16f32_nk_ctx, OP_F16F32, uint16_t)
TS_PREPACKED_ENTRY(ts_gemm_f16_prepacked, ts_gemm_f16_prepacked_ctx, OP_F16, uint16_t, uint16_t)
TS_PREPACKED_ENTRY(ts_gemm_f16f32_prepacked, ts_gemm_f16f32_prepacked_ctx,
                   OP_F16F32, uint16_t, float)

/* fp32-accumulating GEMM, then bias and clamp (tilesmith.h): the path's fused _biasclamp
 * kernels where it has them, else the same operations in C after the last K block
 * (ts_bias_clamp_rows). The four entry points of one type (names spelled out, as above). */
#define TS_BIAS_CLAMP_ENTRY(name, name_ctx, name_pp, name_pp_ctx, op, ta)                          \
    int name_ctx(const ts_context *ctx, size_t M, size_t N, size_t K, const ta *A, size_t lda,     \
                 const ta *B, size_t ldb, const float *bias, float cmin, float cmax, float *C,     \
                 size_t ldc)                                                                       \
    {                                                                                              \
        const bias_clamp bc = { bias, cmin, cmax };                                                \
        return gemm(ctx, &op, M, N, K, A, lda, B, ldb, NULL, &bc, C, ldc);                         \
    }                                                                                              \
    int name(size_t M, size_t N, size_t K, const ta *A, size_t lda, const ta *B, size_t ldb,       \
             const float *bias, float cmin, float cmax, float *C, size_t ldc)                      \
    {                                                                                              \
        return name_ctx(NULL, M, N, K, A, lda, B, ldb, bias, cmin, cmax, C, ldc);                  \
    }                                                                                              \
    int name_pp_ctx(const ts_context *ctx, size_t M, const ta *A, size_t lda,                      \
                    const ts_packed_b *B, const float *bias, float cmin, float cmax, float *C,     \
                    size_t ldc)                                                                    \
    {                                                                                              \
        const bias_clamp bc = { bias, cmin, cmax };                                                \
        return gemm_prepacked(ctx, &op, M, A, lda, B, NULL, &bc, C, ldc);                          \
    }                                                                                              \
    int name_pp(size_t M, const ta *A, size_t lda, const ts_packed_b *B, const float *bias,        \
                float cmin, float cmax, float *C, size_t ldc)                                      \
    {                                                                                              \
        return name_pp_ctx(NULL, M, A, lda, B, bias, cmin, cmax, C, ldc);                          \
    }

TS_BIAS_CLAMP_ENTRY(ts_gemm_f32_bias_clamp, ts_gemm_f32_bias_clamp_ctx,
                    ts_gemm_f32_bias_clamp_prepacked, ts_gemm_f32_bias_clamp_prepacked_ctx,
                    OP_F32_BIAS_CLAMP, float)
TS_BIAS_CLAMP_ENTRY(ts_gemm_bf16_bias_clamp, ts_gemm_bf16_bias_clamp_ctx,
                    ts_gemm_bf16_bias_clamp_prepacked, ts_gemm_bf16_bias_clamp_prepacked_ctx,
                    OP_BF16_BIAS_CLAMP, float)
TS_BIAS_CLAMP_ENTRY(ts_gemm_f16f32_bias_clamp, ts_gemm_f16f32_bias_clamp_ctx,
                    ts_gemm_f16f32_bias_clamp_prepacked, ts_gemm_f16f32_bias_clamp_prepacked_ctx,
                    OP_F16F32_BIAS_CLAMP, uint16_t)
