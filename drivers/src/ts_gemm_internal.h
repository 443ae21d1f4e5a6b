/* ts_gemm_internal.h — the blocked macro-kernel (ts_engine.c) shared by the GEMM and conv2d
 * entry points. Not public API. Plain C99. */
#ifndef TS_GEMM_INTERNAL_H
#define TS_GEMM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tilesmith.h"
#include "ts_pack_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A conv input whose padding the call makes real (ts_conv2d.c, when that pays): the conv as
 * called, its input and where the copy goes (ts_a_source.A); the call's first phase writes the
 * copy (its threads a share of the rows each, ts_pack_conv_padded_rows) before any task reads
 * it. */
typedef struct {
    const ts_conv2d *conv;
    const int8_t *input;
    int8_t *copy;
} ts_padded_input;

/* Where the rows of A come from: a row-major matrix (conv == NULL), or the im2col rows of a
 * conv2d input, packed straight from the input an A block at a time (implicit im2col,
 * ts_pack_conv_panels; padded taps = pad_value). */
typedef struct {
    const void *A;            /* matrix, or the conv input (NHWC) */
    size_t lda;               /* matrix row stride in elements */
    const ts_conv2d *conv;
    int8_t pad_value;
    const ts_padded_input *padded_from;   /* non-NULL: A is padded_from->copy, to be written
                                             (pad_value around the input) */
} ts_a_source;

/* Where B comes from: a handle already packed (fill 0), or one laid out with
 * ts_packed_b_layout whose panels the call packs from src (element (k, n) at
 * src[k*k_stride + n*n_stride]; src may be NULL when K is 0). */
typedef struct {
    const ts_packed_b *b;
    int fill;
    const void *src;
    size_t k_stride, n_stride;
} ts_b_source;

/* Where the results go: the kernel's results (path->c_bytes each: fp16, float, int32, uint32)
 * when q is NULL, else int8 (uint8 with u8_output) through the requantization epilogue with q
 * (validated for that output) and the A zero-point correction. With f16_output, C holds fp16:
 * a kernel with fp32 results (the fp16 GEMM's fallback) has them rounded (RNE) into it. With
 * bias_clamp (fp32 results, q NULL), C = min(max(x + bias[n], cmin), cmax) (ts_bias_clamp_rows;
 * bias NULL: + -0.0f), by the path's fused _biasclamp kernel or in C after the last K block. */
typedef struct {
    void *C;
    size_t ldc;               /* row stride in elements */
    const ts_quant *q;
    int u8_output;            /* q's zero points and clamp range are uint8 (ts_gemm_u8) */
    int f16_output;           /* C is fp16 (ts_gemm_f16) */
    int bias_clamp;           /* fp32 C through bias and clamp (ts_gemm_f32_bias_clamp) */
    const float *bias;        /* bias_clamp: N values or NULL */
    float cmin, cmax;         /* bias_clamp: not NaN, cmin <= cmax */
} ts_c_sink;

/* What happens to the kernel's results between the kernel and C: nothing (stored by the
 * kernel), requantization to int8 / uint8 (fused in the kernel or ts_requant_rows), or the
 * rounding of fp32 results into fp16 C (ts_gemm_f16 on the fp32 fallback path). */
enum { TS_STAGE_NONE, TS_STAGE_REQUANT, TS_STAGE_F16 };
/* The stage of a call with path into out. */
int ts_gemm_stage(const ts_path *path, const ts_c_sink *out);
/* The largest stage any call of gemm_type on path may need (workspace sizing). */
int ts_gemm_stage_of_type(int gemm_type, const ts_path *path);

/* Work-area bytes ts_gemm_exec needs for this path and shape with `threads` tasks at once
 * (including 15 bytes to align an arbitrary pointer to 16), B's packed panels excluded, for
 * `stage` (TS_STAGE_*); pad_bytes: a conv's padding row (its in_c: A from ts_a_source.conv),
 * 0 for a matrix A. Returns 0, or -1 on size_t overflow. */
int ts_gemm_work_bytes(const ts_path *path, size_t M, size_t N, size_t K, int stage,
                       size_t pad_bytes, unsigned threads, size_t *out);
/* The grids ts_gemm_grid found, kept by a caller that sizes many paths of one shape for one
 * thread count (ts_conv2d.c: the workspace bound over every int8 path, several of one tile):
 * the grid is a search over ~130 candidates (8 threads), run on the calling thread before any
 * task.
 * Zero-initialised; full: further grids are found again, not kept. */
#define TS_GRID_MEMO 8
typedef struct {
    size_t count;
    struct { size_t a_panels, b_panels, m_tasks, n_tasks; } found[TS_GRID_MEMO];
} ts_grid_memo;
/* ts_gemm_work_bytes with the grid looked up in (and added to) *memo. */
int ts_gemm_work_bytes_memo(const ts_path *path, size_t M, size_t N, size_t K, int stage,
                            size_t pad_bytes, unsigned threads, ts_grid_memo *memo,
                            size_t *out);

/* Implicit im2col (ts_conv_pack.c). A plan: what every packing call of one K block of conv c
 * shares, set once by ts_conv_plan_init for k = k0 .. k0+klen-1 of K = k_h*k_w*in_c (a K
 * block: k0 a multiple of path->lp), input and pad_row (in_c bytes of the pad value, which a
 * padding tap reads) included; its fields are ts_conv_pack.c's. ts_pack_conv_panels then
 * packs rows m0 .. m0+rows-1 of the im2col matrix of c (ts_im2col_rows_s8's rows) over that
 * k-range straight from the input, as consecutive A panels of path->ep rows (conversion
 * path->pack_a), panel p at dst + p * panel_bytes: each as ts_pack_panel_as packs those rows
 * and k of the matrix (rows past `rows` and k past klen zero). Preconditions: c validated,
 * m0 + rows <= batch*out_h*out_w, k0 + klen <= K. */
typedef struct {
    const ts_path *path;
    ts_pack_kind kind;          /* path->pack_a */
    const ts_conv2d *c;
    const int8_t *input;
    const int8_t *pad_row;
    size_t out_h, out_w, row_len, k0, k1, kh0, kh1;   /* row_len = k_w * in_c; kernel rows
                                                          kh0 .. kh1-1 meet [k0, k1) */
    size_t image_len, span_w;   /* bytes of one image; dilated kernel width - 1 */
    size_t row_bytes, group;    /* bytes of a row in a k-step; rows the gather packs together */
    int k_padded;               /* the last k-step holds k past k1 */
    size_t ox_lo, ox_hi;        /* output columns whose windows have every tap column inside,
                                   adjacent (dilation_w 1; else none) */
    /* the k-range of a window with no padding tap as at most three gathers from its kernel
     * row kh0 (pack_conv_inside): a kernel row cut by k0, the whole kernel rows (runs one
     * input row apart), a kernel row cut by k1 (n or runs 0: none) */
    ts_gather_runs head, whole, tail;
    /* the k-range tap by tap (plan_taps, pack_conv_padded): the tap k0 cuts (kh, kw) up to
     * k_whole (k_whole == k0: none), taps whole taps from tap (whole_kh, whole_kw) on, and the
     * tap (tail_kh, tail_kw) that k1 cuts, from k_tail on (k_tail == k1: none) */
    size_t head_kh, head_kw, k_whole, whole_kh, whole_kw, taps, k_tail, tail_kh, tail_kw;
} ts_conv_plan;
void ts_conv_plan_init(ts_conv_plan *p, const ts_path *path, const ts_conv2d *c,
                       const int8_t *input, const int8_t *pad_row, size_t k0, size_t klen);
void ts_pack_conv_panels(const ts_conv_plan *p, size_t m0, size_t rows, void *dst,
                         size_t panel_bytes);
/* The input of conv c with its padding made real (ts_conv2d.c, when that pays): in dst,
 * batch x (pad_top + in_h + pad_bottom) x (pad_left + in_w + pad_right) x in_c bytes, the
 * input pixels where they fall and `pad` (the A zero point) around them, so that the same conv
 * without padding over dst has the same im2col matrix and every window is inside (one stretch
 * per output row). ts_pack_conv_padded_rows writes its rows [first, last) (counted over the
 * batch, ts_conv_padded_rows of them): disjoint ranges write disjoint bytes. Preconditions: c
 * validated, dst that many bytes, not overlapping input. */
size_t ts_conv_padded_rows(const ts_conv2d *c);
void ts_pack_conv_padded_rows(const ts_conv2d *c, const int8_t *input, int8_t pad, int8_t *dst,
                              size_t first, size_t last);

/* Memory for one call (ts_gemm.c): `bytes` of ctx's workspace, claimed for this call, or a
 * fresh malloc block (*owned; NULL with a workspace). TS_EINVAL when the workspace is too
 * small or shares a byte with one of the `n_spans` caller buffers or with q (NULL: none) and
 * its arrays for N columns, TS_EBUSY when another call holds it, TS_ENOMEM when malloc fails.
 * Every TS_OK is paired with one ts_call_memory_done, which frees *owned or gives the
 * workspace back. */
int ts_call_memory(const struct ts_context *ctx, size_t bytes, const void *const *spans,
                   const size_t *span_len, int n_spans, const ts_quant *q, size_t N, void **mem,
                   void **owned);
void ts_call_memory_done(const struct ts_context *ctx, void *owned);

/* ts_context_workspace_size for TS_GEMM_QDYN (ts_qdyn.c): the largest need of any qdyn path
 * for M x N x K with ctx's threads, 0 on size_t overflow. */
size_t ts_qdyn_workspace_size(const struct ts_context *ctx, size_t M, size_t N, size_t K);

/* The task grid of an M x N block split for `threads` (ts_engine.c): m_tasks x n_tasks tasks
 * (a multiple of threads, at most 4 per thread) over a_panels x b_panels tiles whose busiest
 * thread gets the fewest tiles; 1 x 1 for one thread. */
void ts_gemm_grid(size_t a_panels, size_t b_panels, unsigned threads, size_t *m_tasks,
                  size_t *n_tasks);

/* C(M x N) = A(M x K) * B with the blocked loop, its tasks run by ctx (NULL: this thread).
 * Arguments must be valid; work as sized above for ts_context_threads(ctx). Never fails. */
void ts_gemm_exec(const struct ts_context *ctx, const ts_b_source *b, size_t M,
                  const ts_a_source *a, const ts_c_sink *out, void *work);

/* 16-byte aligned pointer at or after p. */
static inline void *ts_align16(void *p)
{
    return (void *)(((uintptr_t)p + 15) & ~(uintptr_t)15);
}

#ifdef __cplusplus
}
#endif
#endif /* TS_GEMM_INTERNAL_H */
