/* ts_conv2d.c — int8 conv2d as a GEMM: C[M = batch*out_h*out_w][N = out_c]
 * = im2col(input)[M][K = k_h*k_w*in_c] * filter^T, requantized per output channel.
 *
 * The filter (OHWI) is B transposed: B[k][n] = filter[n*K + k], packed straight from it.
 * Implicit im2col: the engine packs each MC x KC block of A straight from the NHWC input
 * (ts_pack_conv_panels), padded taps equal to a_zero_point so they add nothing once the zero
 * point is subtracted; the im2col matrix is never written, not even a panel's rows. A 1x1
 * stride-1 unpadded conv reads the input as A directly (a matrix A, row stride in_c).
 * A padded conv whose input is small beside its im2col matrix first copies the input with the
 * padding made real (padded_copy_bytes): the conv over that copy has no padding, so every output
 * row's windows are packed as one run (ts_conv_pack.c: no padding taps to look up).
 * Everything lives in the workspace (that copy, the packed filter, the engine's work area with
 * one padding row of in_c bytes): the caller's buffer, or with _ctx and a NULL workspace the
 * context's workspace or one allocation. Plain C99. */
#include "ts_context_internal.h"
#include "ts_error_internal.h"
#include "ts_gemm_internal.h"
#include "ts_quant_internal.h"

/* K of the conv's GEMM (validated conv: no overflow). */
static size_t conv_k(const ts_conv2d *c)
{
    return c->k_h * c->k_w * c->in_c;
}

static size_t conv_m(const ts_conv2d *c)
{
    return c->batch * ts_conv2d_out_h(c) * ts_conv2d_out_w(c);
}

/* Whether any side of the input is padded. */
static int has_padding(const ts_conv2d *c)
{
    return c->pad_top != 0 || c->pad_left != 0 || c->pad_bottom != 0 || c->pad_right != 0;
}

/* Whether the im2col matrix is the input itself (row m = pixel m, K = in_c). */
static int is_pointwise(const ts_conv2d *c)
{
    return c->k_h == 1 && c->k_w == 1 && c->stride_h == 1 && c->stride_w == 1 && !has_padding(c);
}

/* The copy of the input with the padding made real pays when it is small beside the im2col
 * matrix (M x K bytes) that the padded windows are a part of: at most 1/PAD_COPY_RATIO of it.
 * Measured (make bench, ResNet-50 3x3 64->64 56x56, i8mm on Neoverse N2): the 215 KB copy beside
 * the 1.8 MB matrix cut the packing share from 6.06 % to 4.97 % (whole call -1.0 %); with its pad
 * fills as packing code and 64-byte row moves (ts_pack_fill_runs, ts_pack_copy_runs) 4.88 %. */
#define PAD_COPY_RATIO 4

/* Bytes of that copy (ts_pack_conv_padded_rows), a multiple of 16, or 0 when the call packs
 * from the input itself: a conv without padding, or one whose copy would not pay. For a
 * validated conv. */
static size_t padded_copy_bytes(const ts_conv2d *c)
{
    size_t bytes;
    if (!has_padding(c))
        return 0;
    if (ts_size_mul(c->batch, c->in_h + c->pad_top + c->pad_bottom, &bytes)   /* sums: fit */
        || ts_size_mul(bytes, c->in_w + c->pad_left + c->pad_right, &bytes)
        || ts_size_mul(bytes, c->in_c, &bytes)
        || bytes > conv_m(c) / PAD_COPY_RATIO * conv_k(c))
        return 0;
    return (bytes + 15) & ~(size_t)15;   /* <= M*K / 4: no overflow */
}

/* The conv over that copy: the same output, no padding, the input grown by it. */
static ts_conv2d over_padded_copy(const ts_conv2d *c)
{
    ts_conv2d u = *c;
    u.in_h += c->pad_top + c->pad_bottom;
    u.in_w += c->pad_left + c->pad_right;
    u.pad_top = u.pad_left = u.pad_bottom = u.pad_right = 0;
    return u;
}

/* Workspace bytes for one path and `threads` tasks at once: the packed filter (16-aligned;
 * with_filter 0, a prepacked call: none) and the macro-kernel's work area (its task grid
 * through memo). */
static int workspace_for(const ts_path *path, const ts_conv2d *c, unsigned threads,
                         int with_filter, ts_grid_memo *memo, size_t *out)
{
    size_t filter = 0, work;
    return (with_filter && (ts_packed_b_bytes(path, TS_LAYOUT_GEMM, conv_k(c), c->out_c, &filter)
                            || ts_size_round_up(filter, 16, &filter)))
           || ts_gemm_work_bytes_memo(path, conv_m(c), c->out_c, conv_k(c), 1,
                                      is_pointwise(c) ? 0 : c->in_c, threads, memo, &work)
           || ts_size_add(filter, work, out)
           || ts_size_add(*out, padded_copy_bytes(c), out);
}

/* The largest need over every int8 path of this build, so a size queried before a
 * feature-mask change still fits (with_filter 0: a prepacked call's, without the filter). 0 for
 * an invalid conv or ctx, or on size_t overflow. */
static size_t workspace_size(const ts_context *ctx, const ts_conv2d *c, int with_filter)
{
    size_t count, most = 0, bytes;
    ts_grid_memo memo;      /* paths of one tile share their grid (every call runs this) */
    memo.count = 0;
    if (!ts_context_ok(ctx) || ts_conv2d_validate(c) != TS_OK)
        return 0;
    const ts_path *paths = ts_paths_of(TS_GEMM_INT8, &count);
    for (size_t i = 0; i < count; ++i) {
        ts_path sized;
        const ts_path *path;
        ts_blocks_seen seen;
        seen.count = 0;
        /* every path with the blocks of every core it may run on (ts_sized_path_at), each
         * distinct set of blocks once */
        for (size_t s = 0; (path = ts_sized_path_at(ctx, &paths[i], s, &sized)) != NULL; ++s) {
            if (ts_blocks_seen_before(&seen, path))
                continue;
            if (workspace_for(path, c, ts_context_threads(ctx), with_filter, &memo, &bytes))
                return 0;
            most = bytes > most ? bytes : most;
        }
    }
    return most;
}

size_t ts_conv2d_s8_workspace_size_ctx(const ts_context *ctx, const ts_conv2d *c)
{
    return workspace_size(ctx, c, 1);
}

size_t ts_conv2d_s8_workspace_size(const ts_conv2d *c)
{
    return workspace_size(NULL, c, 1);
}

size_t ts_conv2d_s8_prepacked_workspace_size_ctx(const ts_context *ctx, const ts_conv2d *c)
{
    return workspace_size(ctx, c, 0);
}

size_t ts_conv2d_s8_prepacked_workspace_size(const ts_conv2d *c)
{
    return workspace_size(NULL, c, 0);
}

/* Checks shared by both entry points (the filter and the workspace are checked by each). A
 * conv whose workspace size or output (M x out_c bytes) overflows size_t is invalid: no buffer
 * could hold it; so is one with K = k_h*k_w*in_c beyond TS_GEMM_S8_MAX_K (its int32 sums could
 * overflow). *need: the call's workspace size (ts_conv2d_s8_workspace_size_ctx, or for a
 * prepacked filter ts_conv2d_s8_prepacked_workspace_size_ctx), once valid. */
static int conv_args_ok(const ts_context *ctx, const ts_conv2d *c, int prepacked,
                        const int8_t *input, const ts_quant *q, const int8_t *output,
                        size_t *need)
{
    if (!ts_context_ok(ctx) || ts_conv2d_validate(c) != TS_OK)
        return 0;
    if ((*need = workspace_size(ctx, c, !prepacked)) == 0)
        return ts_reject("the conv's workspace size overflows size_t");
    if (conv_k(c) > TS_GEMM_S8_MAX_K)
        return ts_reject("k_h * k_w * in_c beyond TS_GEMM_S8_MAX_K");
    if (ts_matrix_span_overflows(conv_m(c), c->out_c, c->out_c, 1))
        return ts_reject("the output's size overflows size_t");
    if (input == NULL || output == NULL)
        return ts_reject("input or output is NULL");
    return ts_quant_validate(q, c->out_c) == TS_OK;
}

/* Whether the buffers a conv writes (output, `need` bytes of workspace) share a byte with what it
 * reads (input, the filter: `filter_bytes` bytes at `filter`, or the handle `packed`; q's
 * arrays) or with each other. Arguments as conv_args_ok. */
static int conv_buffers_overlap(const ts_conv2d *c, const int8_t *input, const void *filter,
                                size_t filter_bytes, const ts_packed_b *packed,
                                const ts_quant *q, const int8_t *output,
                                const void *workspace, size_t need)
{
    const size_t out_len = conv_m(c) * c->out_c, in_len = ts_conv2d_input_bytes(c);
    const void *written[2] = { output, workspace };
    const size_t written_len[2] = { out_len, need };
    static const char *const why[2] = { "output overlaps input, the filter or q",
                                         "the workspace overlaps input, the filter or q" };
    for (int i = 0; i < 2; ++i) {
        if (ts_spans_overlap(written[i], written_len[i], input, in_len)
            || ts_spans_overlap(written[i], written_len[i], filter, filter_bytes)
            || (packed != NULL && ts_packed_b_overlaps(packed, written[i], written_len[i]))
            || ts_quant_overlaps(q, c->out_c, written[i], written_len[i]))
            return !ts_reject(why[i]);
    }
    return ts_spans_overlap(output, out_len, workspace, written_len[1])
           && !ts_reject("output overlaps the workspace");
}

/* The call's workspace (*mem, 16-aligned), for validated arguments (`need`: conv_args_ok's): the
 * caller's buffer of workspace_bytes (at least need, else TS_EINVAL), or for workspace NULL and
 * workspace_bytes 0 the context's workspace (TS_EINVAL when too small, TS_EBUSY when in use) or
 * an allocation (*owned, TS_ENOMEM). TS_EINVAL too when the memory shares a byte with a buffer
 * the conv reads or with the output. On TS_OK with workspace NULL the caller ends with
 * ts_call_memory_done(ctx, *owned). */
static int conv_memory(const ts_context *ctx, const ts_conv2d *c, size_t need,
                       const int8_t *input, const void *filter, size_t filter_bytes,
                       const ts_packed_b *packed, const ts_quant *q, const int8_t *output,
                       void *workspace, size_t workspace_bytes, void **mem, void **owned)
{
    *owned = NULL;
    if (workspace != NULL) {
        if (workspace_bytes < need)
            return ts_fail(TS_EINVAL, packed != NULL
                           ? "workspace_bytes < ts_conv2d_s8_prepacked_workspace_size_ctx(ctx, c)"
                           : "workspace_bytes < ts_conv2d_s8_workspace_size_ctx(ctx, c)");
        *mem = workspace;
    } else {
        if (workspace_bytes != 0)
            return ts_fail(TS_EINVAL, "workspace is NULL but workspace_bytes is not 0");
        int rc = ts_call_memory(ctx, need, NULL, NULL, 0, NULL, 0, mem, owned);
        if (rc != TS_OK)
            return rc;
    }
    if (conv_buffers_overlap(c, input, filter, filter_bytes, packed, q, output, *mem, need)) {
        if (workspace == NULL)
            ts_call_memory_done(ctx, *owned);
        return TS_EINVAL;
    }
    return TS_OK;
}

/* Runs a validated conv with the filter packed (b->src NULL) or packed on the way; work
 * (16-aligned) starts with the padded copy of the input when the conv makes one
 * (padded_copy_bytes: the engine's first phase writes it, every task reads it), then the
 * engine's work area. */
static void run_conv(const ts_context *ctx, const ts_conv2d *c, const int8_t *input,
                     const ts_b_source *b, const ts_quant *q, int8_t *output, void *work)
{
    const size_t copy = padded_copy_bytes(c);
    const ts_conv2d u = over_padded_copy(c);
    const ts_padded_input padded = { c, input, (int8_t *)work };
    ts_a_source a = { input, c->in_c, NULL, (int8_t)q->a_zero_point, NULL };
    if (copy != 0) {
        a.A = padded.copy;
        a.padded_from = &padded;
        work = (unsigned char *)work + copy;
        c = &u;
    }
    if (!is_pointwise(c))
        a.conv = c;
    ts_c_sink out = { output, c->out_c, q, 0, 0, 0, NULL, 0, 0 };
    ts_gemm_exec(ctx, b, conv_m(c), &a, &out, work);
}

int ts_conv2d_s8_ctx(const ts_context *ctx, const ts_conv2d *c, const int8_t *input,
                     const int8_t *filter, const ts_quant *q, int8_t *output, void *workspace,
                     size_t workspace_bytes)
{
    void *mem, *owned;
    size_t need;
    if (!conv_args_ok(ctx, c, 0, input, q, output, &need))
        return TS_EINVAL;
    if (filter == NULL)
        return ts_fail(TS_EINVAL, "filter is NULL");
    int rc = conv_memory(ctx, c, need, input, filter, c->out_c * conv_k(c), NULL, q, output,
                         workspace, workspace_bytes, &mem, &owned);
    if (rc != TS_OK)   /* out_c * K fits: conv2d_validate */
        return rc;
    /* the filter packed for this call only: the GEMM tile's layout (the engine runs it) */
    ts_path sized;
    const ts_path single = ts_single_layout_path(
        ts_select_sized_path(ctx, TS_GEMM_INT8, &sized));
    const ts_path *path = &single;
    size_t K = conv_k(c), filter_bytes;
    ts_packed_b_bytes(path, TS_LAYOUT_GEMM, K, c->out_c, &filter_bytes);   /* fits: workspace_size checked it */
    ts_size_round_up(filter_bytes, 16, &filter_bytes);
    unsigned char *base = (unsigned char *)ts_align16(mem);
    ts_packed_b packed;
    ts_packed_b_layout(&packed, path, TS_LAYOUT_GEMM, K, c->out_c, base);
    ts_b_source b = { &packed, 1, filter, 1, K };   /* B[k][n] = filter[n*K + k] */
    run_conv(ctx, c, input, &b, q, output, base + filter_bytes);
    if (workspace == NULL)
        ts_call_memory_done(ctx, owned);
    return TS_OK;
}

int ts_conv2d_s8(const ts_conv2d *c, const int8_t *input, const int8_t *filter,
                 const ts_quant *q, int8_t *output, void *workspace)
{
    return workspace == NULL ? ts_fail(TS_EINVAL, "workspace is NULL")
           : ts_conv2d_s8_ctx(NULL, c, input, filter, q, output, workspace,
                              ts_conv2d_s8_workspace_size(c));
}

int ts_pack_conv2d_filter_s8_ctx(const ts_context *ctx, const ts_conv2d *c,
                                 const int8_t *filter, ts_packed_b **out)
{
    if (!ts_context_ok(ctx) || ts_conv2d_validate(c) != TS_OK)
        return TS_EINVAL;
    if (conv_k(c) > TS_GEMM_S8_MAX_K)
        return ts_fail(TS_EINVAL, "k_h * k_w * in_c beyond TS_GEMM_S8_MAX_K");
    if (filter == NULL || out == NULL)
        return ts_fail(TS_EINVAL, "filter or out is NULL");
    size_t K = conv_k(c);
    /* the GEMM layout only: a conv never runs the GEMV kernel */
    const ts_path *path = ts_select_path_ctx(ctx, TS_GEMM_INT8);
    int rc = ts_packed_b_create(path, TS_LAYOUT_GEMM, K, c->out_c, filter, 1, K,
                                ts_handle_tail_hp(path, TS_LAYOUT_GEMM, c->out_c), out);
    if (rc == TS_OK) {
        (*out)->tag = TS_TAG_CONV_FILTER;   /* for ts_conv2d_s8_prepacked only */
        (*out)->conv_k_h = c->k_h;
        (*out)->conv_k_w = c->k_w;
    }
    return rc;
}

int ts_pack_conv2d_filter_s8(const ts_conv2d *c, const int8_t *filter, ts_packed_b **out)
{
    return ts_pack_conv2d_filter_s8_ctx(NULL, c, filter, out);
}

int ts_conv2d_s8_prepacked_ctx(const ts_context *ctx, const ts_conv2d *c,
                               const int8_t *input, const ts_packed_b *filter,
                               const ts_quant *q, int8_t *output, void *workspace,
                               size_t workspace_bytes)
{
    ts_path sized;   /* selected once (the thread may migrate), from a live ctx */
    void *mem, *owned;
    size_t need;
    if (!conv_args_ok(ctx, c, 1, input, q, output, &need))
        return TS_EINVAL;
    const ts_path *run = ts_select_sized_path(ctx, TS_GEMM_INT8, &sized);
    if (filter == NULL)
        return ts_fail(TS_EINVAL, "filter (the packed handle) is NULL");
    if (!ts_handle_ok(filter, TS_TAG_CONV_FILTER, "filter is not a live conv-filter handle of "
                                                  "ts_pack_conv2d_filter_s8 (another handle "
                                                  "type, or freed)"))
        return TS_EINVAL;
    if (run == NULL)
        return ts_fail(TS_EINVAL, "no int8 kernel path on this CPU / feature mask");
    if (filter->path->gemm_type != TS_GEMM_INT8)
        return ts_fail(TS_EINVAL, "filter was packed for another GEMM type");
    if (!ts_handle_b_layout_ok(filter, run))
        return ts_fail(TS_EINVAL, "filter was packed for a kernel whose panel layout this call's "
                                  "kernel does not read (another feature mask or CPU choice)");
    if (filter->N != c->out_c)
        return ts_fail(TS_EINVAL, "filter was packed for another conv (out_c differs)");
    if (filter->conv_k_h != c->k_h || filter->conv_k_w != c->k_w)
        return ts_fail(TS_EINVAL, "filter was packed for another conv (k_h or k_w differs)");
    if (filter->K != conv_k(c))
        return ts_fail(TS_EINVAL, "filter was packed for another conv (in_c differs)");
    int rc = conv_memory(ctx, c, need, input, NULL, 0, filter, q, output, workspace,
                         workspace_bytes, &mem, &owned);
    if (rc != TS_OK)
        return rc;
    ts_packed_b as_run = *filter;   /* the same panels, read by this call's kernel variant */
    as_run.path = run;
    ts_b_source b = { &as_run, 0, NULL, 0, 0 };
    run_conv(ctx, c, input, &b, q, output, ts_align16(mem));
    if (workspace == NULL)
        ts_call_memory_done(ctx, owned);
    return TS_OK;
}

int ts_conv2d_s8_prepacked(const ts_conv2d *c, const int8_t *input,
                           const ts_packed_b *filter, const ts_quant *q, int8_t *output,
                           void *workspace)
{
    return workspace == NULL ? ts_fail(TS_EINVAL, "workspace is NULL")
           : ts_conv2d_s8_prepacked_ctx(NULL, c, input, filter, q, output, workspace,
                                        ts_conv2d_s8_prepacked_workspace_size(c));
}
