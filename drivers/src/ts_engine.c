/* ts_engine.c — the blocked macro-kernel behind every GEMM and conv2d call (BLIS's loops,
 * README "C API"), as tasks any thread pool can run.
 *
 * Two parallel phases, each a set of independent tasks run by the context:
 *   1. pack: task t packs its share of the B panels (unless prepacked, with their column
 *      sums) and, for the requantized GEMMs, of the per-column epilogue parameters;
 *   2. compute: the ep-panels x hp-panels of C are split into an m_tasks x n_tasks grid
 *      (ts_gemm_grid); each task runs, over its block: for each K block (the whole K up to
 *      kw_steps k-steps, beyond that as few blocks of at most kc_steps as possible, of equal
 *      length: the split depends on K only), for each M block of A panels (mc_panels, more
 *      when the K block is shorter than kc_steps: m_block_panels; the two loops swapped
 *      where the results are staged, compute_task): pack that MC x KC block
 *      of A into the task's own area (conv2d: straight from the input, ts_pack_conv_panels),
 *      then, where K has kc_steps or more, for each group of B panels whose results fill
 *      whole lines (b_group; the fused requantisation's 1-byte results through the task's
 *      line stage where a group fills only part of a line: line_unit), for each A panel, for
 *      each B panel of the group: one kernel call; with a shorter K, for each B panel, for
 *      each A panel. kc_steps, mc_panels
 *      and kw_steps come from the per-core cache sizes and bandwidths (gen/blocking.py, or
 *      re-derived for the context's sizes: ts_blocks.c; the SME paths: K whole while their
 *      panels fit an assumed L2, SME_L2_BYTES).
 * K blocks accumulate with the kernels' acc argument (contract v2): raw outputs in place in C,
 * the requantized and fp16-narrowed ones in the task's 4-byte stage (int32 / fp32) of one M
 * block of its columns, those calls running the K blocks inside the M blocks (stage_bytes); the
 * fused _requant (_requant_u8) kernel runs on the last K block only, otherwise the staged tile goes to C
 * after its last K block (ts_requant_rows, ts_narrow_rows_f16). Partial tiles are stored by
 * the kernel (m_rem, n_rem); on a core-class variant, a last A panel that a generic tile of the
 * same instruction holds runs on that smaller kernel (ts_tail_path: no padding rows computed);
 * a last B panel that a column-tail kernel of the path holds (gen/ntail.py, ts_ntail_of) is
 * packed that kernel's width and runs on it (no padding columns computed): when B is packed
 * in the call, and in handles whose readers all have that kernel (ts_handle_tail_hp). Every
 * output element is computed by the same kernel calls over the same K blocks whatever the
 * grid, so the results do not depend on the number of threads (fp32: the same fused
 * multiply-add chain).
 * Plain C99. */
#include <string.h>

#include "ts_context_internal.h"
#include "ts_epilogue_internal.h"
#include "ts_gemm_internal.h"
#include "ts_quant_internal.h"

/* ---- work area ------------------------------------------------------------------------------- */

/* Byte offsets of the work areas (each 16-aligned) from the aligned start. */
typedef struct {
    size_t a_blocks;     /* per compute task, one MC x KC block of packed A */
    size_t pad_row;      /* conv: in_c bytes of the pad value (its padding taps read them) */
    size_t col_offset;   /* requantize, or A packed with an offset (ts_a_offset): N int32,
                            bias - (a_zero_point - ts_a_offset) * column sums of B */
    size_t params;       /* fused requantize: column parameters per B panel */
    size_t c32;          /* per compute task, one M block of its 4-byte results (stage_bytes) */
    size_t lines;        /* fused requantisation: per compute task, a line stage (line_unit) */
    size_t total;
} work_layout;

/* Appends `bytes` (rounded up to 16) at offset *end; returns -1 on overflow. */
static int place(size_t bytes, size_t *end, size_t *offset)
{
    size_t rounded;
    *offset = *end;
    return ts_size_round_up(bytes, 16, &rounded) || ts_size_add(*end, rounded, end);
}

static size_t div_up(size_t a, size_t b)
{
    return a / b + (a % b != 0);
}

static size_t ksteps_of(const ts_path *path, size_t K)
{
    return div_up(K, path->lp);
}

/* Bias values a fused _biasclamp kernel can be given from a copy (call.bias_pad): the last B
 * panel's, or -0.0f for a NULL bias, up to this many columns (hp rounded up to 4: every
 * path's today, SME's at 2048 bits included); a wider tile runs the epilogue in C. */
#define TS_BIAS_PAD 256

/* Whether the epilogue runs in the fused kernel (path->fused, the GEMM type's own): the
 * requantization (int8, or uint8 for ts_gemm_u8), or bias and clamp on fp32 results where
 * the bias the kernel reads (hp columns, rounded up to 4, per panel) comes from the caller's
 * array or call.bias_pad. */
static int fused_epilogue(const ts_path *path, const ts_packed_b *b, const ts_c_sink *out)
{
    if (path->fused == NULL)
        return 0;
    if (out->q != NULL)
        return 1;
    const size_t last = b->tail_hp != 0 ? b->tail_hp : path->hp;
    return out->bias_clamp && path->hp % 4 == 0 && (path->hp + 3) / 4 * 4 <= TS_BIAS_PAD
           && (last + 3) / 4 * 4 <= TS_BIAS_PAD;
}

int ts_gemm_stage(const ts_path *path, const ts_c_sink *out)
{
    return out->q != NULL ? TS_STAGE_REQUANT
           : out->f16_output && path->c_bytes == sizeof(float) ? TS_STAGE_F16 : TS_STAGE_NONE;
}

int ts_gemm_stage_of_type(int gemm_type, const ts_path *path)
{
    return ts_keeps_col_sums(gemm_type) ? TS_STAGE_REQUANT
           : gemm_type == TS_GEMM_F16 && path->c_bytes == sizeof(float) ? TS_STAGE_F16
           : TS_STAGE_NONE;
}

/* K-block length in k-steps: the whole K up to kw_steps (a split would only cost accumulator
 * passes, gen/blocking.py whole_k_steps); beyond, as few blocks of at most kc_steps as
 * possible, of equal lengths. */
static size_t k_block_steps(const ts_path *path, size_t ksteps)
{
    if (ksteps == 0)
        return 1;
    if (ksteps <= path->kw_steps)
        return ksteps;
    return div_up(ksteps, div_up(ksteps, path->kc_steps));
}

/* Number of K blocks of a call with ksteps k-steps (1 for K = 0). */
static size_t k_blocks(const ts_path *path, size_t ksteps)
{
    return ksteps == 0 ? 1 : div_up(ksteps, k_block_steps(path, ksteps));
}

/* Whether the 4-byte copy of C (int32 or fp32) is needed: fp16 narrowing, requantized results
 * that are not fused, or fused ones over more than one K block. */
static int needs_c32(const ts_path *path, size_t K, int stage, int fused)
{
    return stage == TS_STAGE_F16
           || (stage == TS_STAGE_REQUANT && (!fused || k_blocks(path, ksteps_of(path, K)) > 1));
}

/* Params bytes of one B panel. */
static size_t params_panel_bytes(const ts_path *path)
{
    return div_up(path->hp, path->params_cols) * TS_REQUANT_BLOCK_BYTES;
}

/* A panels per M block at a K block of k_steps: as many as the path's A-block budget takes at
 * this length (mc_panels panels of kc_steps k-steps, half of L2: Low et al., gen/blocking.py),
 * never fewer than mc_panels. So a short K (a 1x1 conv, K = 24) gets tall M blocks and each B
 * micro-panel serves many A panels; a whole K of kc_steps .. kw_steps k-steps keeps mc_panels
 * (its A block then exceeds half of L2, within the ways whole_k_steps leaves it). Not more:
 * the B panels of a group (b_group) and the lines of C need the rest of L2; an A block filling
 * all of L2 (30 panels at K = 4096 int8 on the N2's 1 MiB) made the bench's N2 model move
 * 235 MiB from DRAM for int8 prefill M=512 N=K=4096. The SME paths (no cache facts,
 * block_l1 0: their kw_steps is an assumed L2's, SME_L2_BYTES) give a whole K of kc_steps ..
 * kw_steps the most panels whose A block plus one B panel stay within that assumption,
 * (panels * ep + hp) * k_steps <= (mc_panels * ep + hp) * kw_steps. */
static size_t m_block_panels(const ts_path *path, size_t k_steps)
{
    if (path->kc_steps == (size_t)-1 || k_steps > path->kw_steps)
        return path->mc_panels;
    if (k_steps < path->kc_steps)
        return path->mc_panels * path->kc_steps / k_steps;
    if (path->block_l1 != 0)
        return path->mc_panels;
    const size_t budget = (path->mc_panels * path->ep + path->hp) * path->kw_steps / k_steps;
    const size_t panels = (budget - path->hp) / path->ep;     /* budget >= mc * ep + hp */
    return panels > path->mc_panels ? panels : path->mc_panels;
}

/* Bytes of one task's packed A block: m_block_panels (at most the task's) panels of one K
 * block. */
static int a_block_bytes(const ts_path *path, size_t K, size_t task_panels, size_t *out)
{
    size_t steps = k_block_steps(path, div_up(K, path->lp));
    size_t mc = m_block_panels(path, steps), panels = task_panels < mc ? task_panels : mc;
    return ts_panel_bytes(path, path->ep, steps * path->lp, out)
           || ts_size_round_up(*out, 16, out) || ts_size_mul(*out, panels, out);
}

/* Bytes of a cache line of C: 64 on every modeled core (gen/cores.py MEMORY). */
#define TS_LINE 64

/* Bytes of one task's line stage (line_unit): a line for each row of its M blocks. 0 where
 * no line is staged: not the fused requantisation (1-byte C), or no cache blocks (GEMV). */
static size_t line_stage_bytes(const ts_path *path, size_t K, int stage, int fused,
                               size_t task_panels)
{
    if (stage != TS_STAGE_REQUANT || fused == 0 || path->kc_steps == (size_t)-1)
        return 0;
    const size_t mc = m_block_panels(path, k_block_steps(path, ksteps_of(path, K)));
    return (task_panels < mc ? task_panels : mc) * path->ep * TS_LINE;
}

/* A panels per M block of a call whose 4-byte results are staged (needs_c32): m_block_panels,
 * at most 2 MC. Several K blocks are each over half of KC k-steps long (k_block_steps), so
 * their M blocks never reach 2 MC: the cap only bounds a single short K block (fp16 narrowing
 * or an unfused requantisation, K = 24: m_block_panels would give hundreds of panels), where
 * the stage would otherwise grow towards M x N. */
static size_t staged_m_block_panels(const ts_path *path, size_t k_steps)
{
    const size_t mc = m_block_panels(path, k_steps);
    return mc / 2 < path->mc_panels ? mc : 2 * path->mc_panels;
}

/* Row stride in bytes of a task's stage: its columns, at most ceil(b_panels / n_tasks) B
 * panels of hp and at most N (the kernels store n_rem columns of a partial panel). */
static size_t stage_ld(const ts_path *path, size_t N, size_t n_tasks)
{
    const size_t cols = div_up(div_up(N, path->hp), n_tasks) * path->hp;
    return (cols < N ? cols : N) * sizeof(int32_t);
}

/* Bytes of one task's stage of 4-byte results (int32 / fp32): the rows of one M block (at
 * most the task's A panels, at most M: the kernels store m_rem rows of a partial panel) x the
 * task's columns. The K blocks of a staged call run inside its M blocks (compute_task), so the
 * stage holds one M block's sums across the K blocks and is bounded by the blocks, not by M. */
static int stage_bytes(const ts_path *path, size_t M, size_t N, size_t K, size_t task_panels,
                       size_t n_tasks, size_t *out)
{
    const size_t mc = staged_m_block_panels(path, k_block_steps(path, ksteps_of(path, K)));
    const size_t rows = (task_panels < mc ? task_panels : mc) * path->ep;
    return ts_size_mul(rows < M ? rows : M, stage_ld(path, N, n_tasks), out);
}

/* `fused` may be -1: size for either (the larger). m_tasks x n_tasks: the call's grid
 * (ts_gemm_grid). */
static int layout_work(const ts_path *path, size_t M, size_t N, size_t K, int stage,
                       int fused, size_t pad_bytes, size_t m_tasks, size_t n_tasks,
                       work_layout *l)
{
    size_t end = 0, bytes, a_block, panels = div_up(M, path->ep);
    memset(l, 0, sizeof *l);
    if (a_block_bytes(path, K, div_up(panels, m_tasks), &a_block)
        || ts_size_mul(a_block, m_tasks * n_tasks, &bytes) || place(bytes, &end, &l->a_blocks))
        return -1;
    if (pad_bytes != 0 && place(pad_bytes, &end, &l->pad_row))
        return -1;
    bytes = line_stage_bytes(path, K, stage, fused, div_up(panels, m_tasks));
    if (bytes != 0 && (ts_size_mul(bytes, m_tasks * n_tasks, &bytes)
                       || place(bytes, &end, &l->lines)))
        return -1;
    if ((stage == TS_STAGE_REQUANT || ts_a_offset(path) != 0)
        && (ts_size_mul(N, sizeof(int32_t), &bytes) || place(bytes, &end, &l->col_offset)))
        return -1;
    if (stage == TS_STAGE_REQUANT
        && (ts_size_mul(div_up(N, path->hp), params_panel_bytes(path), &bytes)
            || place(bytes, &end, &l->params)))
        return -1;
    if (stage != TS_STAGE_NONE) {
        size_t c32 = 0;
        if ((fused < 0 || needs_c32(path, K, stage, fused))
            && (stage_bytes(path, M, N, K, div_up(panels, m_tasks), n_tasks, &c32)
                || ts_size_round_up(c32, 16, &c32) || ts_size_mul(c32, m_tasks * n_tasks, &c32)))
            return -1;
        if (place(c32, &end, &l->c32))
            return -1;
    }
    l->total = end;
    return 0;
}

/* ts_gemm_grid through memo (the same threads at every use of one memo). */
static void grid_memoised(ts_grid_memo *memo, size_t a_panels, size_t b_panels,
                          unsigned threads, size_t *m_tasks, size_t *n_tasks)
{
    for (size_t i = 0; i < memo->count; ++i)
        if (memo->found[i].a_panels == a_panels && memo->found[i].b_panels == b_panels) {
            *m_tasks = memo->found[i].m_tasks;
            *n_tasks = memo->found[i].n_tasks;
            return;
        }
    ts_gemm_grid(a_panels, b_panels, threads, m_tasks, n_tasks);
    if (memo->count < TS_GRID_MEMO) {
        memo->found[memo->count].a_panels = a_panels;
        memo->found[memo->count].b_panels = b_panels;
        memo->found[memo->count].m_tasks = *m_tasks;
        memo->found[memo->count].n_tasks = *n_tasks;
        ++memo->count;
    }
}

int ts_gemm_work_bytes_memo(const ts_path *path, size_t M, size_t N, size_t K, int stage,
                            size_t pad_bytes, unsigned threads, ts_grid_memo *memo,
                            size_t *out)
{
    work_layout l;
    size_t m_tasks, n_tasks;
    grid_memoised(memo, div_up(M, path->ep), div_up(N, path->hp), threads, &m_tasks, &n_tasks);
    return layout_work(path, M, N, K, stage, -1, pad_bytes, m_tasks, n_tasks, &l)
           || ts_size_add(l.total, 15, out);
}

int ts_gemm_work_bytes(const ts_path *path, size_t M, size_t N, size_t K, int stage,
                       size_t pad_bytes, unsigned threads, size_t *out)
{
    ts_grid_memo memo;
    memo.count = 0;
    return ts_gemm_work_bytes_memo(path, M, N, K, stage, pad_bytes, threads, &memo, out);
}

/* ---- one call ------------------------------------------------------------------------------- */

typedef struct {
    const ts_path *path;
    const ts_b_source *bsrc;
    const ts_packed_b *b;
    const ts_a_source *a;
    const ts_c_sink *out;
    size_t M, N, K, ksteps, a_panels, a_block_bytes;
    unsigned char *a_blocks, *params;
    unsigned char *lines;       /* the tasks' line stages (line_unit), line_bytes apart, or NULL */
    size_t line_bytes;
    const int8_t *pad_row;      /* conv: in_c bytes of the pad value */
    int32_t *col_offset;
    unsigned char *c32;         /* the tasks' stages (stage_bytes), stage_task bytes apart */
    size_t stage_task, stage_ld;    /* (stage_ld: their row stride in bytes) */
    int staged;                 /* needs_c32: the K blocks run inside the M blocks */
    ts_quant q;                 /* requantize: bias folded into col_offset; uint8 as int8 */
    int fused, stage;           /* fused: the path's fused kernel runs the last K block */
    int32_t rounding;           /* fused: the kernels' rounding mode (ts_kernel_rounding) */
    const ts_path *tail;        /* the last A panel's path when it is not `path` (ts_tail_path) */
    const ts_ntail_kernel *ntail, *tail_ntail;  /* the last B panel's kernels (ts_ntail_of) on
                                   `path` and on `tail`, or NULL: that panel is hp wide */
    ts_packed_b local_b;        /* B packed in the call: the handle with its tail_hp */
    size_t pack_tasks, m_tasks, n_tasks;
    /* last (not cleared per call; set by fill_bias_pad when used): for a fused bias_clamp,
     * what the kernel reads as bias where the caller's N values end before its hp (rounded
     * up to 4) columns do: the last panel's values, then -0.0f (all -0.0f for a NULL bias,
     * serving every panel) */
    float bias_pad[TS_BIAS_PAD];
} call;

/* [begin, end) of part t of `count` items split into `parts` near-equal runs. */
static void share(size_t count, size_t parts, size_t t, size_t *begin, size_t *end)
{
    *begin = count * t / parts;
    *end = count * (t + 1) / parts;
}

/* What the zero-point correction subtracts per unit of a column sum of B: a_zero_point (0
 * without requantisation) less what the packed A values already lack (ts_a_offset: the u8s8
 * sdot path's a - 128), so sum_k (a - zp) * b = sum_k packed a * b - this * sum_k b. */
static int32_t col_sum_factor(const ts_path *path, const ts_c_sink *out)
{
    return (out->q != NULL ? out->q->a_zero_point : 0) - ts_a_offset(path);
}

/* Phase 1, task t: share t of the padded input's rows (a conv's, a->padded_from), of B's
 * panels, of the column offsets and parameters. */
static void pack_task(void *arg, size_t t)
{
    call *c = (call *)arg;
    const ts_path *path = c->path;
    const ts_padded_input *padded = c->a->padded_from;
    size_t j0, j1;
    if (padded != NULL) {
        share(ts_conv_padded_rows(padded->conv), c->pack_tasks, t, &j0, &j1);
        ts_pack_conv_padded_rows(padded->conv, padded->input, c->a->pad_value, padded->copy,
                                 j0, j1);
    }
    share(c->b->panels, c->pack_tasks, t, &j0, &j1);
    if (c->bsrc->fill)
        ts_packed_b_fill(c->b, c->bsrc->src, c->bsrc->k_stride, c->bsrc->n_stride, j0, j1);
    if (c->out->q == NULL && ts_a_offset(path) == 0)
        return;
    /* sum_k (A-zp)*B = sum_k A*B - zp * sum_k B: the correction per column (zp less the packed
     * A's offset: col_sum_factor), with the bias folded in, wrapping modulo 2^32 like the
     * int32 accumulators. Raw results start from it (setup_block). */
    const size_t n0 = j0 * path->hp, n1 = j1 * path->hp < c->N ? j1 * path->hp : c->N;
    const int32_t *bias = c->out->q != NULL ? c->out->q->bias : NULL;
    const uint32_t factor = (uint32_t)col_sum_factor(path, c->out);
    for (size_t n = n0; n < n1; ++n) {
        /* no sums packed (skip_col_sums): the factor is 0, the correction too */
        uint32_t sum = c->b->col_sums != NULL ? (uint32_t)c->b->col_sums[n] : 0u;
        uint32_t offset = 0u - factor * sum;
        c->col_offset[n] = (int32_t)(offset + (bias != NULL ? (uint32_t)bias[n] : 0u));
    }
    if (c->fused)
        for (size_t j = j0; j < j1; ++j) {
            size_t cols = c->N - j * path->hp < path->hp ? c->N - j * path->hp : path->hp;
            ts_pack_requant_params(c->params + j * params_panel_bytes(path), j * path->hp, cols,
                                   path->hp, path->params_cols, &c->q, c->rounding,
                                   c->col_offset);
        }
}

/* How the tiles of one K block run: the kernel, the argument block's fields that are the same
 * for every tile (set once per block, not per tile), where results go and where the
 * accumulators come from (NULL: the first K block). */
typedef struct {
    ts_kernel_fn kernel;
    ts_kernel_fn last_kernel;    /* the last B panel's: `kernel`, or a column tail's */
    struct ts_tile_args args;
    unsigned char *dst;          /* the tile at row row0, B panel j0 (dst_at) */
    size_t dst_ld, dst_elem;     /* row stride in bytes, bytes per element */
    size_t row0, j0;             /* 0, 0; a line stage's or a task's stage's first row and B
                                    panel (line_unit, stage_block) */
    const unsigned char *acc;    /* the accumulators at row acc_row0, B panel acc_j0, or NULL */
    size_t acc_ld;               /* their row stride in bytes (elements: 4 bytes, or dst's);
                                    0: one row for every tile row (a column correction) */
    size_t acc_elem, acc_row0, acc_j0;
    int last;
} block_run;

/* Where the results of the tile at row m0, B panel j go (dst_step: bytes per B panel). */
static unsigned char *dst_at(const block_run *r, size_t m0, size_t j, size_t dst_step)
{
    return r->dst + (m0 - r->row0) * r->dst_ld + (j - r->j0) * dst_step;
}

/* The accumulators of the tile at row m0, B panel j (r->acc not NULL; hp columns a panel). */
static const unsigned char *acc_at(const block_run *r, size_t m0, size_t j, size_t hp)
{
    return r->acc + (m0 - r->acc_row0) * r->acc_ld + (j - r->acc_j0) * hp * r->acc_elem;
}

/* The kernel of a block run on `kernel` (path's raw or fused one) for the last B panel: the
 * column tail's matching kernel, or `kernel` itself without a column tail. */
static ts_kernel_fn last_panel_kernel(const ts_path *path, const ts_ntail_kernel *ntail,
                                      ts_kernel_fn kernel)
{
    if (ntail == NULL)
        return kernel;
    return kernel == path->kernel ? ntail->kernel : ntail->fused;
}

/* r for one K block (first, last: of the call's K blocks); task t's M block from A panel ib
 * on over its B panels from j0 on where the results are staged (c->c32: the task's stage
 * holds that M block only, compute_task). */
static void setup_block(const call *c, int first, int last, size_t t, size_t ib, size_t j0,
                        block_run *r)
{
    const ts_path *path = c->path;
    memset(r, 0, sizeof *r);
    r->kernel = path->kernel;
    r->last = last;
    if (c->stage == TS_STAGE_NONE) {
        r->dst = (unsigned char *)c->out->C;
        r->dst_ld = c->out->ldc * path->c_bytes;
        r->dst_elem = path->c_bytes;
    } else {
        r->dst = c->c32 + t * c->stage_task;    /* int32 or fp32 results */
        r->dst_ld = c->stage_ld;
        r->dst_elem = sizeof(int32_t);
        r->row0 = ib * path->ep;
        r->j0 = j0;
    }
    r->acc = first ? NULL : r->dst;          /* in place: raw kernels may read c as acc */
    r->acc_ld = r->dst_ld;
    r->acc_row0 = r->row0;
    r->acc_j0 = r->j0;
    if (first && c->stage == TS_STAGE_NONE && ts_a_offset(path) != 0) {
        /* raw results on A packed with an offset start at the column correction, the same
         * row for every tile row (ld_acc_bytes 0) */
        r->acc = (const unsigned char *)c->col_offset;
        r->acc_ld = 0;
    }
    r->acc_elem = r->dst_elem;
    r->args.ld_acc_bytes = r->acc_ld;
    if (c->fused && last && c->out->q == NULL) {
        r->kernel = path->fused;                /* bias and clamp, in place in C */
        r->args.clamp_min = c->out->cmin;
        r->args.clamp_max = c->out->cmax;
    } else if (c->fused && last) {
        r->kernel = path->fused;
        r->args.rounding = c->rounding;
        /* the caller's output zero point and clamp, in the kernel's output type (uint8 for
         * the _requant_u8 kernels; c->q holds their int8 form for ts_requant_rows_u8) */
        r->args.c_zero_point = c->out->q->c_zero_point;
        r->args.act_min = c->out->q->act_min;
        r->args.act_max = c->out->q->act_max;
        r->dst = (unsigned char *)c->out->C;
        r->dst_ld = c->out->ldc;
        r->dst_elem = 1;
        r->row0 = r->j0 = 0;
    }
    r->last_kernel = last_panel_kernel(path, c->ntail, r->kernel);
}

/* What run_full_tiles runs: `rows` A panels from a (a_step bytes apart: negative to run them
 * last to first), their results from dst (row_step apart), each with `cols` B panels from b
 * (b_step apart, results dst_step apart, fused parameters from params, params_step apart),
 * the kernel over `steps` k-steps into C of stride dst_ld; after the first K block the
 * accumulators from acc (acc_row_step apart per A panel, acc_step per B panel; in place, at
 * dst, for the unfused kernels). */
typedef struct {
    ts_kernel_fn kernel;
    const unsigned char *a, *b, *params, *acc;
    unsigned char *dst;
    ptrdiff_t a_step, row_step, acc_row_step;
    size_t rows, cols, steps, dst_ld, b_step, dst_step, params_step, acc_step;
} full_tiles;

/* What the accumulators of full_tiles_loops' calls are: none (the first K block), C itself
 * (the unfused kernels' later K blocks: args.acc is the call's dst), or a pointer of their
 * own (the fused kernel's last K block reads the 4-byte staging copy; the first K block of
 * an offset A, ts_a_offset, its column correction: one row, acc_row_step 0). */
enum { ACC_NONE, ACC_IN_PLACE, ACC_OWN };

/* run_full_tiles' loops, `fused` and `acc` constants: the unfused tiles step two pointers per
 * call, the fused ones three (the column parameters too), a separate accumulator one more.
 * The argument block is a copy on this frame (its address is the stack pointer's offset, not
 * a register's), so with the kernel, A, B, C, C's end, the steps and C's stride the inner
 * loop's values fit the 10 callee-saved registers x19..x28 (the frame pointer kept) — fused,
 * with the parameters and their step too, gcc 12 -O2 reloads the k-steps and C's stride with
 * one LDP per call instead. */
static TS_ALWAYS_INLINE void full_tiles_loops(const full_tiles *f,
                                              const struct ts_tile_args *in, int fused, int acc)
{
    struct ts_tile_args args = *in;
    const ts_kernel_fn kernel = f->kernel;
    const size_t steps = f->steps, dst_ld = f->dst_ld, b_step = f->b_step;
    const size_t dst_step = f->dst_step, params_step = f->params_step;
    /* from the end of a row of results to the start of the next */
    const size_t span = f->cols * dst_step;
    const ptrdiff_t next_row = f->row_step - (ptrdiff_t)span;
    const ptrdiff_t next_acc_row = f->acc_row_step - (ptrdiff_t)(f->cols * f->acc_step);
    const unsigned char *a = f->a, *accs = f->acc;
    unsigned char *dst = f->dst;
    for (size_t x = f->rows;;) {
        const unsigned char *b = f->b, *params = f->params;
        /* to an end pointer on C: B panels are 0 bytes apart when K = 0 */
        unsigned char *const end = dst + span;
        do {
            if (fused) {
                args.params = params;
                params += params_step;
            }
            if (acc == ACC_IN_PLACE)
                args.acc = dst;
            if (acc == ACC_OWN) {
                args.acc = accs;
                accs += f->acc_step;
            }
            kernel(a, b, steps, dst, dst_ld, &args);
            b += b_step;
            dst += dst_step;
        } while (dst != end);
        if (--x == 0)
            break;
        a += f->a_step;         /* stepped only while in the block (a_step may be negative) */
        dst += next_row;
        if (acc == ACC_OWN)
            accs += next_acc_row;
    }
}

/* The kernel calls of full-height tiles whose results need no driver pass (every call of a
 * GEMM whose K is one block, but the last A panel's when M is not a multiple of ep and the
 * call's last B panel), A panel by A panel over a group's B panels (f->rows, f->cols >= 1):
 * B, the results, the accumulators and the fused parameters step by constants and the rest
 * of the argument block is set once, so the loop keeps what it needs in callee-saved
 * registers (fields read through the call's structures would be reloaded after every call:
 * the kernel is called through a pointer and may write memory). Each combination of fused
 * kernel and accumulators is a function of its own (full_tiles_loops, TS_NOINLINE): inlined,
 * the caller's values would compete for their registers. The bench's models, GEMM 512^3 int8
 * smmla, driver cycles per tile (B panel outer, before the groups): Cortex-A510 24.7 -> 8.6,
 * Neoverse N2 4.9 -> 3.4, V1 5.2 -> 3.4. */
static TS_NOINLINE void run_full_tiles(const full_tiles *f, const struct ts_tile_args *args)
{
    full_tiles_loops(f, args, 0, ACC_NONE);
}

static TS_NOINLINE void run_full_tiles_fused(const full_tiles *f,
                                             const struct ts_tile_args *args)
{
    full_tiles_loops(f, args, 1, ACC_NONE);
}

/* K blocks after the first, unfused: accumulating in place */
static TS_NOINLINE void run_full_tiles_acc(const full_tiles *f, const struct ts_tile_args *args)
{
    full_tiles_loops(f, args, 0, ACC_IN_PLACE);
}

/* unfused, from accumulators apart from the results: the first K block of a call whose A is
 * packed with an offset (ts_a_offset: one row of N int32 column corrections, acc_ld 0) */
static TS_NOINLINE void run_full_tiles_own_acc(const full_tiles *f,
                                               const struct ts_tile_args *args)
{
    full_tiles_loops(f, args, 0, ACC_OWN);
}

/* the last of several K blocks, fused: from the staging copy */
static TS_NOINLINE void run_full_tiles_fused_acc(const full_tiles *f,
                                                 const struct ts_tile_args *args)
{
    full_tiles_loops(f, args, 1, ACC_OWN);
}

/* run_full_tiles_fused on a fused kernel with a strip entry (README "Micro-kernel ABI",
 * strips; the first K block: acc NULL, which a strip shares among its tiles): per A panel one
 * call of it runs the panel's tiles on the group's B panels (B, C and the column parameters
 * stepping), so the kernel's frame, saves, argument loads and fast-path test come once per A
 * panel of a group, not once per tile. */
static TS_NOINLINE void run_full_tiles_strip(ts_strip_fn strip, const full_tiles *f,
                                             const struct ts_tile_args *in)
{
    struct ts_tile_args args = *in;
    const struct ts_strip row = {f->cols, 0, (ptrdiff_t)f->b_step, (ptrdiff_t)f->dst_step,
                                 (ptrdiff_t)f->params_step};
    const unsigned char *a = f->a;
    unsigned char *dst = f->dst;
    args.params = f->params;
    for (size_t x = f->rows;;) {
        strip(a, f->b, f->steps, dst, f->dst_ld, &args, &row);
        if (--x == 0)
            break;
        a += f->a_step;         /* stepped only while in the block (a_step may be negative) */
        dst += f->row_step;
    }
}

/* One B panel's kernel calls on `rows` full-height A panels from a (a_step bytes apart,
 * results row_step apart: negative to run them last to first), the argument block (its
 * params included) set by the caller: the groups of one B panel (b_group 1, BLIS's order),
 * as the whole loop was before the groups. Two pointers step; a function of its own like
 * run_full_tiles. */
static TS_NOINLINE void run_full_column(ts_kernel_fn kernel, const unsigned char *a,
                                        ptrdiff_t a_step, size_t rows, const unsigned char *b,
                                        size_t steps, unsigned char *dst, size_t dst_ld,
                                        ptrdiff_t row_step, const struct ts_tile_args *args)
{
    for (;;) {
        kernel(a, b, steps, dst, dst_ld, args);
        if (--rows == 0)
            break;
        a += a_step;            /* stepped only while in the block (a_step may be negative) */
        dst += row_step;
    }
}

/* run_full_column after the first K block: the accumulators from acc, acc_row_step apart
 * (in place: acc is dst and acc_row_step row_step). */
static TS_NOINLINE void run_full_column_acc(ts_kernel_fn kernel, const unsigned char *a,
                                            ptrdiff_t a_step, size_t rows,
                                            const unsigned char *b, size_t steps,
                                            unsigned char *dst, size_t dst_ld,
                                            ptrdiff_t row_step, const unsigned char *acc,
                                            ptrdiff_t acc_row_step,
                                            const struct ts_tile_args *in)
{
    struct ts_tile_args args = *in;
    for (;;) {
        args.acc = acc;
        kernel(a, b, steps, dst, dst_ld, &args);
        if (--rows == 0)
            break;
        a += a_step;
        dst += row_step;
        acc += acc_row_step;
    }
}

/* The bias a fused _biasclamp kernel reads for B panel j: the caller's from column j*hp on
 * while its hp (rounded up to 4: hp % 4 == 0, fused_epilogue) columns are all there, else the
 * copy (the last panel; every panel of a NULL bias). */
static const float *bias_params(const call *c, size_t j)
{
    const size_t n0 = j * c->path->hp;
    if (c->out->bias != NULL && n0 + c->path->hp <= c->N)
        return c->out->bias + n0;
    return c->bias_pad;
}

/* The fused kernel's column parameters of B panel j: the requantisation's (c->params), or the
 * bias (bias_params). */
static const unsigned char *fused_params(const call *c, size_t j)
{
    if (c->out->q != NULL)
        return c->params + j * params_panel_bytes(c->path);
    return (const unsigned char *)bias_params(c, j);
}

/* Bytes from B panel j's fused parameters to panel j+1's while j+1 is not the call's last
 * panel (whose bias may be the copy: fused_params); 0 for a NULL bias (every panel reads
 * call.bias_pad). */
static size_t fused_params_step(const call *c)
{
    return c->out->q != NULL ? params_panel_bytes(c->path)
           : c->out->bias != NULL ? c->path->hp * sizeof(float) : 0;
}

/* call.bias_pad for a fused bias_clamp call (before the tasks, which only read it). */
static void fill_bias_pad(call *c)
{
    const size_t n0 = (c->b->panels - 1) * c->path->hp;
    for (size_t i = 0; i < TS_BIAS_PAD; ++i)
        c->bias_pad[i] = c->out->bias != NULL && n0 + i < c->N ? c->out->bias[n0 + i] : -0.0f;
}

/* A tile's staged int32 / fp32 results (m_rem x n_rem at `tile` in its task's stage) to C
 * at row m0, column n0: fp16 narrowing, or the requantisation the kernels did not fuse; or
 * bias and clamp on the tile's fp32 results in C. */
static void stage_to_c(const call *c, const unsigned char *tile, size_t m0, size_t n0,
                       size_t m_rem, size_t n_rem)
{
    const int32_t *staged = (const int32_t *)(const void *)tile;
    const size_t ld = c->stage_ld / sizeof(int32_t);
    if (c->out->bias_clamp)
        ts_bias_clamp_rows((float *)c->out->C + m0 * c->out->ldc + n0, c->out->ldc, m_rem, n_rem,
                           c->out->bias != NULL ? c->out->bias + n0 : NULL, c->out->cmin,
                           c->out->cmax);
    else if (c->stage == TS_STAGE_F16)
        ts_narrow_rows_f16((const float *)(const void *)staged, ld, m_rem, n_rem,
                           (uint16_t *)c->out->C + m0 * c->out->ldc + n0, c->out->ldc);
    else if (c->out->u8_output)
        ts_requant_rows_u8(staged, ld, m_rem, n_rem, n0, &c->q, c->col_offset,
                           (uint8_t *)c->out->C + m0 * c->out->ldc + n0, c->out->ldc);
    else
        ts_requant_rows(staged, ld, m_rem, n_rem, n0, &c->q, c->col_offset,
                        (int8_t *)c->out->C + m0 * c->out->ldc + n0, c->out->ldc);
}

/* What run_tiles' calls share: the tiles' results go to C through the driver (after the last
 * K block, not fused: to_c); B panels j0 .. j1-1 but the call's last (jf: a column tail or
 * partial, set per tile) step by pointer increments, the tile loop being the driver's inner
 * loop. */
typedef struct {
    const call *c;
    const block_run *r;
    const unsigned char *block;     /* A panel ib */
    size_t panel_bytes, ib, s0, steps, step_bytes, pp, dst_step;
    int to_c;
} tile_run;

/* The strip entry of r's kernel when it is a fused one (the call's path's, or the tail path's
 * for the last A panel) that has one, else NULL. */
static ts_strip_fn strip_of(const call *c, const block_run *r)
{
    if (r->kernel == c->path->fused)
        return c->path->strip;
    return c->tail != NULL && r->kernel == c->tail->fused ? c->tail->strip : NULL;
}

/* The tiles of A panels xb .. xe-1 (last to first when `down`) x B panels j0 .. j1-1 (A panel
 * by A panel) that run_full_tiles did not run: those of A panels below fe on B panels from jf
 * on, and every tile of the others (an A panel's tiles before B panel jf, the same arguments
 * but for the stepping pointers, in one call of the fused kernel's strip entry where it has
 * one and the first K block's are not staged). */
static void run_rest(const tile_run *t, struct ts_tile_args *args, size_t xb, size_t xe,
                     size_t fe, size_t j0, size_t j1, size_t jf, int down)
{
    const call *c = t->c;
    const block_run *r = t->r;
    const size_t ep = c->path->ep, hp = c->path->hp, pp = t->pp, dst_step = t->dst_step;
    const unsigned char *b0 = (const unsigned char *)c->b->data + j0 * c->b->panel_bytes
                              + t->s0 * hp * t->step_bytes;
    const unsigned char *p0 = c->fused && r->last ? fused_params(c, j0) : NULL;
    const ts_strip_fn strip = p0 != NULL && r->acc == NULL && !t->to_c ? strip_of(c, r) : NULL;
    for (size_t x = xb; x < xe; ++x) {
        const size_t i = down ? xe - 1 - (x - xb) : x, m0 = i * ep;
        const unsigned char *a = t->block + (i - t->ib) * t->panel_bytes;
        /* the full-height A panels' calls from B panel jf on */
        size_t j = i < fe ? jf : j0;
        if (j >= j1)
            continue;
        args->m_rem = c->M - m0 < ep ? c->M - m0 : ep;
        args->n_rem = hp;
        const unsigned char *b = b0 + (j - j0) * c->b->panel_bytes;
        const unsigned char *params = p0 != NULL ? p0 + (j - j0) * pp : NULL;
        const unsigned char *acc = r->acc != NULL ? acc_at(r, m0, j, hp) : NULL;
        unsigned char *dst = dst_at(r, m0, j, dst_step);
        if (strip != NULL && j < jf) {
            const struct ts_strip row = {jf - j, 0, (ptrdiff_t)c->b->panel_bytes,
                                         (ptrdiff_t)dst_step, (ptrdiff_t)pp};
            args->params = params;
            args->acc = NULL;
            strip(a, b, t->steps, dst, r->dst_ld, args, &row);
            b += (jf - j) * c->b->panel_bytes;
            dst += (jf - j) * dst_step;
            params += (jf - j) * pp;
            j = jf;
        }
        for (; j < j1; ++j) {
            const size_t n0 = j * hp;
            ts_kernel_fn kernel = r->kernel;
            if (j >= jf) {
                /* the last panel of a column-tail call is tail_hp wide, run by its kernel */
                const int narrow = c->b->tail_hp != 0;
                kernel = narrow ? r->last_kernel : r->kernel;
                b = (const unsigned char *)c->b->data + j * c->b->panel_bytes
                    + t->s0 * (narrow ? c->b->tail_hp : hp) * t->step_bytes;
                args->n_rem = c->N - n0 < hp ? c->N - n0 : hp;
                params = params != NULL ? fused_params(c, j) : NULL;    /* may be the copy */
            }
            args->params = params;
            args->acc = acc;
            kernel(a, b, t->steps, dst, r->dst_ld, args);
            if (t->to_c)
                stage_to_c(c, dst, m0, n0, args->m_rem, args->n_rem);
            b += c->b->panel_bytes;
            dst += dst_step;
            acc = acc != NULL ? acc + hp * r->acc_elem : NULL;
            params = params != NULL ? params + pp : NULL;
        }
    }
}

/* The kernel calls of A panels ib .. ie-1 (packed in `block`, panel p at (p - ib) *
 * panel_bytes) x B panels j0 .. j1-1 over k-steps s0 .. s0+steps-1, with what r says; on the
 * last K block the results that are staged (fp16 narrowing, unfused requantisation) go to C
 * per tile. j0 .. j1-1 is one group (b_group): A panel by A panel (last to first when
 * `down`); or, `columns` (groups of one B panel), B panel by B panel, A panels last to first
 * on every other one (`down`: the first). The full-height tiles of a first K block whose
 * results need no driver pass run in run_full_tiles (run_full_column), the rest in
 * run_rest. */
static void run_tiles(const call *c, const block_run *r, const unsigned char *block,
                      size_t panel_bytes, size_t ib, size_t ie, size_t j0, size_t j1,
                      size_t s0, size_t steps, int down, int columns)
{
    const ts_path *path = c->path;
    const size_t ep = path->ep, hp = path->hp;
    const tile_run t = {c, r, block, panel_bytes, ib, s0, steps,
                        path->lp * ts_pack_elem_bytes(path->pack),      /* per column */
                        fused_params_step(c), hp * r->dst_elem,
                        r->last && (c->stage != TS_STAGE_NONE || c->out->bias_clamp) && !c->fused};
    struct ts_tile_args args = r->args;
    const size_t jf = j1 < c->b->panels ? j1 : c->b->panels - 1;
    const unsigned char *b0 = (const unsigned char *)c->b->data + j0 * c->b->panel_bytes
                              + s0 * hp * t.step_bytes;
    const unsigned char *p0 = c->fused && r->last ? fused_params(c, j0) : NULL;
    /* A panels ib .. full_end-1 are ep rows high: their tiles on B panels j0 .. jf-1 run in
     * run_full_tiles when nothing is done with their results here */
    const size_t full_end = c->M / ep < ie ? c->M / ep : ie;
    const size_t fe = !t.to_c && jf > j0 && full_end > ib ? full_end : ib;
    const ptrdiff_t a_step = (ptrdiff_t)panel_bytes, row_step = (ptrdiff_t)(ep * r->dst_ld);
    const ptrdiff_t acc_row_step = (ptrdiff_t)(ep * r->acc_ld);
    const size_t acc_step = hp * r->acc_elem;
    if (columns) {
        /* here the call's last B panel's full-height tiles run in run_full_column too, on
         * its own kernel and width */
        const size_t fc = !t.to_c ? full_end : ib;
        if (fc == ib && ie - ib == 1) {
            /* one A panel, none full-height (a tail path's): one pass over the B panels */
            run_rest(&t, &args, ib, ie, ib, j0, j1, jf, 0);
            return;
        }
        /* the first and the last full-height A panel and their results on B panel j, and
         * B panel j's data and parameters: stepped per B panel */
        const size_t last = fc > ib ? fc - 1 - ib : 0;
        const unsigned char *a_hi = block + last * panel_bytes;
        unsigned char *d_lo = dst_at(r, ib * ep, j0, t.dst_step);
        unsigned char *d_hi = d_lo + last * ep * r->dst_ld;
        const unsigned char *acc_lo = r->acc != NULL ? acc_at(r, ib * ep, j0, hp) : NULL;
        const unsigned char *acc_hi = r->acc != NULL ? acc_lo + last * ep * r->acc_ld : NULL;
        const unsigned char *b = b0, *params = p0;
        for (size_t j = j0; j < j1; ++j, down = !down) {
            if (fc > ib) {
                ts_kernel_fn kernel = r->kernel;
                args.m_rem = ep;        /* (run_rest sets them per tile) */
                args.n_rem = hp;
                args.acc = NULL;
                if (j + 1 == c->b->panels) {
                    /* the last panel of a column-tail call is tail_hp wide, run by its
                     * kernel; the last panel of any call may be partial */
                    const int narrow = c->b->tail_hp != 0;
                    kernel = narrow ? r->last_kernel : r->kernel;
                    b = (const unsigned char *)c->b->data + j * c->b->panel_bytes
                        + s0 * (narrow ? c->b->tail_hp : hp) * t.step_bytes;
                    args.n_rem = c->N - j * hp < hp ? c->N - j * hp : hp;
                    params = params != NULL ? fused_params(c, j) : NULL;
                }
                args.params = params;
                if (r->acc == NULL && kernel == path->fused && path->strip != NULL) {
                    /* the fused kernel's strip entry: the column's tiles in one call */
                    const struct ts_strip strip = {fc - ib, down ? -a_step : a_step, 0,
                                                   down ? -row_step : row_step, 0};
                    path->strip(down ? a_hi : block, b, steps, down ? d_hi : d_lo, r->dst_ld,
                                &args, &strip);
                } else if (r->acc == NULL)
                    run_full_column(kernel, down ? a_hi : block, down ? -a_step : a_step,
                                    fc - ib, b, steps, down ? d_hi : d_lo, r->dst_ld,
                                    down ? -row_step : row_step, &args);
                else
                    run_full_column_acc(kernel, down ? a_hi : block, down ? -a_step : a_step,
                                        fc - ib, b, steps, down ? d_hi : d_lo, r->dst_ld,
                                        down ? -row_step : row_step, down ? acc_hi : acc_lo,
                                        down ? -acc_row_step : acc_row_step, &args);
            }
            b += c->b->panel_bytes;
            d_lo += t.dst_step;
            d_hi += t.dst_step;
            acc_lo = acc_lo != NULL ? acc_lo + acc_step : NULL;
            acc_hi = acc_hi != NULL ? acc_hi + acc_step : NULL;
            params = params != NULL ? params + t.pp : NULL;
            if (fc < ie)
                run_rest(&t, &args, fc, ie, fc, j, j + 1, jf, down);
        }
        return;
    }
    if (fe > ib) {
        /* A panels ib .. fe-1, the last first when down */
        const size_t first = down ? fe - 1 - ib : 0;
        const unsigned char *acc = r->acc != NULL ? acc_at(r, (ib + first) * ep, j0, hp)
                                                  : NULL;
        const full_tiles f = {r->kernel, block + first * panel_bytes, b0, p0, acc,
                              dst_at(r, (ib + first) * ep, j0, t.dst_step),
                              down ? -a_step : a_step, down ? -row_step : row_step,
                              down ? -acc_row_step : acc_row_step, fe - ib, jf - j0, steps,
                              r->dst_ld, c->b->panel_bytes, t.dst_step, t.pp, acc_step};
        args.m_rem = ep;
        args.n_rem = hp;
        args.acc = NULL;
        const ts_strip_fn strip = p0 != NULL ? strip_of(c, r) : NULL;
        if (acc == NULL && strip != NULL)
            run_full_tiles_strip(strip, &f, &args);
        else if (acc == NULL)
            (p0 != NULL ? run_full_tiles_fused : run_full_tiles)(&f, &args);
        else if (p0 != NULL)    /* the last of several K blocks, fused */
            run_full_tiles_fused_acc(&f, &args);
        else if (r->acc == r->dst)  /* unfused: accumulating in place (setup_block) */
            run_full_tiles_acc(&f, &args);
        else                        /* unfused: a column correction (ts_a_offset) */
            run_full_tiles_own_acc(&f, &args);
    }
    if (fe < ie || jf < j1)
        run_rest(&t, &args, ib, ie, fe, j0, j1, jf, down);
}

/* B panels per group at a K block of k_steps: the fewest whose tiles' columns of the results
 * (C, or the 4-byte staging copy: elem_bytes) fill whole 64-byte lines (every modeled core's
 * line, gen/cores.py MEMORY; int8 C of 8-column panels 8, fp32 of 12-column panels 4), but no
 * more than two groups (the one in use and the next, streaming in) in a quarter of the bytes
 * of the path's MC x KC A block, itself half of L2 (gen/blocking.py, Low et al.'s L2 rule:
 * the A block and two B micro-panels, the rest of the ways for C). The tiles of one A panel
 * and one group run together, so a line of results is finished within a group or two and then
 * left; B panel after B panel over the whole M block (BLIS's order) kept every line open
 * across 8 sweeps of the A block, and rows of C a power of two apart share few L2 sets (int8
 * N = 4096: 32 of the N2's 2048), which the A block's lines then crowded out. Measured on the
 * bench's N2 model, int8 prefill M=512 N=K=4096, 16-panel M blocks: 1.31 M L2 misses in the
 * kernels B panel by B panel, 1.26 M in groups of 8 (the A block and two groups of 256 KiB
 * fill all 8 ways), 1.14 M in groups of 4 (1.08 M compulsory). GEMV paths (no blocks): 1. */
static size_t b_group(const ts_path *path, size_t k_steps, size_t elem_bytes)
{
    if (path->kc_steps == (size_t)-1 || k_steps == 0)       /* K = 0: one empty K block */
        return 1;
    size_t a = 64, b = path->hp * elem_bytes;
    while (b != 0) {                   /* a = gcd(64, the bytes of a tile's row) */
        const size_t rest = a % b;
        a = b;
        b = rest;
    }
    const size_t line = 64 / a;
    const size_t most = path->mc_panels * path->ep * path->kc_steps / (4 * path->hp * k_steps);
    return line < most ? line : most != 0 ? most : 1;
}

/* Groups per line stage: the fused requantisation's 1-byte results of a group of B panels may
 * fill only part of a line of C (int8 C, 8-column panels in groups of 4: half), and rows of C
 * a power of two apart share few L2 sets (N = 4096: 32 of the N2's 2048), so a line begun by
 * one group was evicted before the next group finished it, written back and read again. So
 * the groups of one line write their tiles into the task's line stage (a line per row of the
 * M block, contiguous: every set), and lines_to_c copies each finished row of lines to C in
 * whole lines, which the L2 takes without reading them (the bench's model: write streaming).
 * Where C's lines are not those columns (whole_lines) a copy would begin and end inside
 * lines: the groups write C directly there. Measured on the bench's N2 model, int8 prefill
 * M=512 N=K=4096 (C on 64-byte lines): kernel L2 write-backs 66.2 K lines (C's 32.8 K lines
 * nearly all twice) -> 40.7 K, DRAM 106.8 -> 103.4 MiB (docs/PERFORMANCE.md "Cache model").
 * 1: no stage (a group's results fill whole lines, or not the fused requantisation). */
static size_t line_unit(const call *c, const block_run *r, size_t group)
{
    const size_t bytes = group * c->path->hp * r->dst_elem;     /* a group's row of results */
    if (c->lines == NULL || !(c->fused && r->last && c->out->q != NULL) || bytes >= TS_LINE
        || TS_LINE % bytes != 0)
        return 1;
    return TS_LINE / bytes;
}

/* Whether the line stage's columns from B panel j0 on are whole lines of C in every row (C
 * there and its row stride multiples of TS_LINE bytes): else a copied row would begin and end
 * inside lines of C, each of them written by two copies (read, written back, read again). */
static int whole_lines(const call *c, size_t j0)
{
    const unsigned char *at = (const unsigned char *)c->out->C + j0 * c->path->hp;
    return (uintptr_t)at % TS_LINE == 0 && c->out->ldc % TS_LINE == 0;
}

/* r (a block run of the fused last K block) into task t's line stage: rows from A panel ib's
 * first, columns from B panel j0's first. */
static void stage_lines(const call *c, block_run *r, size_t t, size_t ib, size_t j0)
{
    r->dst = c->lines + t * c->line_bytes;
    r->dst_ld = TS_LINE;
    r->row0 = ib * c->path->ep;
    r->j0 = j0;
}

/* A line stage's rows (of A panels from r->row0 up to panel ie, within M) to C, columns of B
 * panels j0 .. j1-1 (within N): one whole line per row where C's lines are those columns. */
static void lines_to_c(const call *c, const block_run *r, size_t ie, size_t j0, size_t j1)
{
    const size_t hp = c->path->hp, m1 = ie * c->path->ep < c->M ? ie * c->path->ep : c->M;
    const size_t n0 = j0 * hp, cols = (j1 * hp < c->N ? j1 * hp : c->N) - n0;
    const unsigned char *src = r->dst;
    unsigned char *dst = (unsigned char *)c->out->C + r->row0 * c->out->ldc + n0;
    if (cols == TS_LINE)        /* a constant length: two 32-byte loads and stores */
        for (size_t m = r->row0; m < m1; ++m, src += TS_LINE, dst += c->out->ldc)
            memcpy(dst, src, TS_LINE);
    else
        for (size_t m = r->row0; m < m1; ++m, src += TS_LINE, dst += c->out->ldc)
            memcpy(dst, src, cols);
}

/* k = k0 .. k0 + *klen - 1: the K block of k-steps s0 .. s0+steps-1 (the last one ends at K). */
static size_t k_block_range(const call *c, size_t s0, size_t steps, size_t *klen)
{
    const size_t lp = c->path->lp, k0 = s0 * lp;
    *klen = c->K - k0 < steps * lp ? c->K - k0 : steps * lp;
    return k0;
}

/* Packs A panels ib .. ie-1 over k-steps s0 .. s0+steps-1 into block (panel p at
 * (p - ib) * panel_bytes): from the matrix, or (conv) straight from the input with that K
 * block's plan. */
static void pack_a_block(const call *c, const ts_conv_plan *plan, size_t ib, size_t ie,
                         size_t s0, size_t steps, unsigned char *block, size_t panel_bytes)
{
    const ts_path *path = c->path;
    const ts_a_source *a = c->a;
    size_t klen;
    const size_t k0 = k_block_range(c, s0, steps, &klen);
    const size_t m_end = c->M < ie * path->ep ? c->M : ie * path->ep;
    if (a->conv != NULL) {
        ts_pack_conv_panels(plan, ib * path->ep, m_end - ib * path->ep, block, panel_bytes);
        return;
    }
    const size_t src_elem = ts_source_elem_bytes(path->pack_a);
    for (size_t i = ib; i < ie; ++i) {
        size_t m0 = i * path->ep, rows = m_end - m0 < path->ep ? m_end - m0 : path->ep;
        const unsigned char *src = (const unsigned char *)a->A + (m0 * a->lda + k0) * src_elem;
        const ts_path *as = i + 1 == c->a_panels && c->tail != NULL ? c->tail : path;
        ts_pack_panel_as(path->pack_a, as, block + (i - ib) * panel_bytes, src, rows, as->ep,
                         klen, a->lda, 1);
    }
}

/* What compute_task's M blocks share: task t's A panels i0 .. i1-1 and B panels j0 .. j1-1,
 * its M blocks of mc A panels packed into `block` (panel_bytes apart). */
typedef struct {
    size_t t, i0, i1, j0, j1, mc, panel_bytes;
    unsigned char *block;
} task_span;

/* One K block (k-steps s0 .. s0+steps-1, run as r says) of the M block of A panels ib ..
 * ie-1 of task s: its A block packed (conv: with `plan`), then its tiles. */
static void run_m_block(const call *c, const task_span *s, const block_run *r,
                        const ts_conv_plan *plan, size_t ib, size_t ie, size_t s0, size_t steps)
{
    const ts_path *path = c->path;
    const size_t i0 = s->i0, j0 = s->j0, j1 = s->j1, mc = s->mc, panel_bytes = s->panel_bytes;
    unsigned char *block = s->block;
    /* B panels in groups (b_group) where K has KC k-steps or more (whole or split: an M
     * block of about MC panels, its A block half of L2); a shorter K (taller M blocks of
     * short A panels: GEMM 512^3) keeps BLIS's order, B panel by B panel, as do groups
     * of one: that loop steps two pointers per tile, not three (run_full_column); in
     * groups, GEMM 512^3 int8 smmla on the Cortex-A510 model lost 0.4 points of peak */
    const size_t group = c->ksteps < path->kc_steps ? 1 : b_group(path, steps, r->dst_elem);
    const size_t groups = div_up(j1 - j0, group);
    /* every other M block runs the groups last to first, from the B panels the M
     * block before (the first: the pack phase) left in L2 */
    const int back = ((ib - i0) / mc) % 2 == 0;
    /* the last A panel on the tail path's kernel (ts_tail_path), after the others */
    const int tailed = c->tail != NULL && ie == c->a_panels;
    block_run tail = *r;
    if (tailed) {
        tail.kernel = r->kernel == path->kernel ? c->tail->kernel : c->tail->fused;
        tail.last_kernel = last_panel_kernel(c->tail, c->tail_ntail, tail.kernel);
    }
    pack_a_block(c, plan, ib, ie, s0, steps, block, panel_bytes);
    if (group == 1) {
        /* B panel by B panel (BLIS's order), A panels serpentine; the tail panel
         * after the others */
        run_tiles(c, r, block, panel_bytes, ib, ie - (size_t)tailed, j0, j1, s0, steps, 0, 1);
        if (tailed)
            run_tiles(c, &tail, block + (ie - 1 - ib) * panel_bytes, panel_bytes, ie - 1, ie,
                      j0, j1, s0, steps, 0, 1);
        return;
    }
    /* every other group runs the A panels last to first, so a group starts on the
     * A panels the group before used last (most recently in L2) */
    const size_t unit = line_unit(c, r, group);
    block_run staged = *r, staged_tail = tail;
    for (size_t n = 0; n < groups; ++n) {
        const size_t g = back ? groups - 1 - n : n;
        const size_t jb = j0 + g * group, je = j1 - jb < group ? j1 : jb + group;
        const int down = (int)(n & 1);
        const block_run *run = r, *run_tail = &tail;
        /* the line stage of groups g - g % unit ..: B panels uj0 .. uj1-1 */
        const size_t uj0 = j0 + (g - g % unit) * group;
        const size_t uj1 = j1 - uj0 < unit * group ? j1 : uj0 + unit * group;
        /* its last group in this order */
        const int unit_done = back ? g % unit == 0 : g % unit == unit - 1 || je == j1;
        if (unit > 1 && whole_lines(c, uj0)) {
            stage_lines(c, &staged, s->t, ib, uj0);
            stage_lines(c, &staged_tail, s->t, ib, uj0);
            run = &staged;
            run_tail = &staged_tail;
        }
        if (tailed && down)
            run_tiles(c, run_tail, block + (ie - 1 - ib) * panel_bytes, panel_bytes, ie - 1,
                      ie, jb, je, s0, steps, 0, 0);
        run_tiles(c, run, block, panel_bytes, ib, ie - (size_t)tailed, jb, je, s0, steps,
                  down, 0);
        if (tailed && !down)
            run_tiles(c, run_tail, block + (ie - 1 - ib) * panel_bytes, panel_bytes, ie - 1,
                      ie, jb, je, s0, steps, 0, 0);
        if (run == &staged && unit_done)
            lines_to_c(c, &staged, ie, uj0, uj1);
    }
}

/* K block kb of kc k-steps (the last one ends at K): its first k-step *s0 and length; for a
 * conv, the plan its A blocks share. */
static void k_block_of(const call *c, size_t kb, size_t kc, size_t *s0, size_t *steps,
                       ts_conv_plan *plan)
{
    *s0 = kb * kc;
    *steps = c->ksteps - *s0 < kc ? c->ksteps - *s0 : kc;
    if (c->a->conv != NULL) {
        size_t klen;
        const size_t k0 = k_block_range(c, *s0, *steps, &klen);
        ts_conv_plan_init(plan, c->path, c->a->conv, (const int8_t *)c->a->A, c->pad_row, k0,
                          klen);
    }
}

/* Phase 2, task t: its block of tiles, K block by K block, M block by M block; where the
 * results are staged (fp16 narrowing, requantisation the kernels do not fuse or that has
 * several K blocks: needs_c32), M block by M block, K block by K block, so that the task's
 * stage holds one M block's 4-byte sums (stage_bytes: bounded by the blocks, not by M; the
 * M x N int32 copy of before was 17.4 MB at M = 4096, N = 1024). Either way every tile gets
 * the same kernel calls over the same K blocks in order: the same results. */
static void compute_task(void *arg, size_t t)
{
    const call *c = (const call *)arg;
    const ts_path *path = c->path;
    task_span s;
    s.t = t;
    s.block = c->a_blocks + t * c->a_block_bytes;
    share(c->a_panels, c->m_tasks, t / c->n_tasks, &s.i0, &s.i1);
    share(c->b->panels, c->n_tasks, t % c->n_tasks, &s.j0, &s.j1);
    const size_t kc = k_block_steps(path, c->ksteps);
    const size_t n_kb = k_blocks(path, c->ksteps);
    s.mc = c->staged ? staged_m_block_panels(path, kc) : m_block_panels(path, kc);
    ts_panel_bytes(path, path->ep, kc * path->lp, &s.panel_bytes);
    ts_size_round_up(s.panel_bytes, 16, &s.panel_bytes);
    block_run r;
    ts_conv_plan plan;      /* conv: what packing the A blocks of a K block shares */
    size_t s0, steps;
    if (c->staged) {
        for (size_t ib = s.i0; ib < s.i1; ib += s.mc) {
            const size_t ie = s.i1 - ib < s.mc ? s.i1 : ib + s.mc;
            for (size_t kb = 0; kb < n_kb; ++kb) {
                k_block_of(c, kb, kc, &s0, &steps, &plan);
                setup_block(c, kb == 0, kb + 1 == n_kb, t, ib, s.j0, &r);
                run_m_block(c, &s, &r, &plan, ib, ie, s0, steps);
            }
        }
        return;
    }
    for (size_t kb = 0; kb < n_kb; ++kb) {
        k_block_of(c, kb, kc, &s0, &steps, &plan);
        setup_block(c, kb == 0, kb + 1 == n_kb, t, 0, 0, &r);
        for (size_t ib = s.i0; ib < s.i1; ib += s.mc)
            run_m_block(c, &s, &r, &plan, ib, s.i1 - ib < s.mc ? s.i1 : ib + s.mc, s0, steps);
    }
}

/* Divisors the grid search divides by without a division: task counts per dimension, at most
 * 4 per thread (16 threads: 64). udiv takes 20 cycles and does not pipeline on Neoverse N2
 * (llvm-mca-19: 4 independent udiv, 80 cycles); the search's ~170 of them cost ~4 K cycles on
 * the calling thread while every other thread waited for the grid. */
#define GRID_DIVISORS 65
/* ceil(2^64 / d) for 2 <= d < GRID_DIVISORS (entries 0 and 1 unused) */
#define RECIP(d) (UINT64_MAX / (d) + 1)
#define RECIP4(d) RECIP(d), RECIP((d) + 1), RECIP((d) + 2), RECIP((d) + 3)
static const uint64_t grid_reciprocal[GRID_DIVISORS] = {
    0, 0, RECIP(2), RECIP(3), RECIP4(4), RECIP4(8), RECIP4(12), RECIP4(16), RECIP4(20),
    RECIP4(24), RECIP4(28), RECIP4(32), RECIP4(36), RECIP4(40), RECIP4(44), RECIP4(48),
    RECIP4(52), RECIP4(56), RECIP4(60), RECIP(64)
};
#undef RECIP4
#undef RECIP

/* The high 64 bits of x * y for x < 2^32, in C99 integers (no 128-bit type): x * (y >> 32)
 * and the carry of x * (y & 0xFFFFFFFF) fit 64 bits (at most 2^64 - 2^33 + 1 and 2^32 - 1). */
static uint64_t mul_high_u32(uint64_t x, uint64_t y)
{
    return (x * (y >> 32) + ((x * (y & 0xFFFFFFFFu)) >> 32)) >> 32;
}

/* ceil(x / d) for d >= 1; without a division when 1 <= x <= 2^32 and d < GRID_DIVISORS:
 * floor((x - 1) / d) is the high half of (x - 1) * ceil(2^64 / d) — the product exceeds
 * (x - 1) / d * 2^64 by less than x - 1 < 2^32, which leaves the quotient's fraction (at most
 * 1 - 1/d) below 1 (Granlund & Montgomery, "Division by invariant integers using
 * multiplication", PLDI 1994). */
static inline size_t grid_div_up(size_t x, size_t d)
{
    if (d == 1)
        return x;
    if (d < GRID_DIVISORS && x >= 1 && x - 1 <= 0xFFFFFFFFu)
        return (size_t)mul_high_u32(x - 1, grid_reciprocal[d]) + 1;
    return div_up(x, d);
}

/* The grid m x n (at most 4 tasks per thread, m <= a_panels, n <= b_panels) whose busiest
 * thread computes the fewest tiles: with tasks dealt statically (ts_pool.c) a thread runs
 * ceil(m*n / threads) tasks of up to ceil(a_panels/m) x ceil(b_panels/n) tiles. Among equals
 * the fewest tasks, then the most M blocks (each of the n tasks of an M block packs that
 * block's A panels again). Fewer tiles than threads: one task per tile.
 * It runs on the calling thread before the tasks (serial time: every thread waits for it), so
 * it visits only the candidates that can win: of the m giving the same ceil(a_panels/m) the
 * smallest (the same tiles per task in fewer tasks), likewise of the n (m descending, n
 * ascending: the order of the rule's tie-breaks), with two quotients per candidate, by
 * multiplication while the divisor is below GRID_DIVISORS (grid_div_up: up to 16 threads,
 * only a few quotients by large row or column counts divide). */
void ts_gemm_grid(size_t a_panels, size_t b_panels, unsigned threads, size_t *m_tasks,
                  size_t *n_tasks)
{
    size_t best = (size_t)-1, best_tasks = 0;
    const size_t most = 4 * (size_t)threads;
    *m_tasks = *n_tasks = 1;
    if (threads <= 1)
        return;
    for (size_t m = a_panels < most ? a_panels : most; m >= 1; --m) {
        const size_t rows = grid_div_up(a_panels, m);
        m = grid_div_up(a_panels, rows);        /* the smallest m with these rows */
        for (size_t n = 1; n <= b_panels && m * n <= most;) {
            const size_t cols = grid_div_up(b_panels, n), tasks = m * n;
            /* tasks per thread, ceil(tasks / threads): 1..4 as tasks <= most, no division */
            const size_t per = tasks <= threads ? 1 : tasks <= 2 * (size_t)threads ? 2
                             : tasks <= 3 * (size_t)threads ? 3 : 4;
            const size_t busiest = per * rows * cols;
            if (busiest < best || (busiest == best && tasks < best_tasks)) {
                best = busiest;
                best_tasks = tasks;
                *m_tasks = m;
                *n_tasks = n;
            }
            n = cols > 1 ? grid_div_up(b_panels, cols - 1) : b_panels + 1;  /* next fewer cols */
        }
    }
}

/* The column tails of a call (c->ntail, c->tail_ntail): with B packed in the call and N not
 * a multiple of hp, the narrowest column-tail kernel of the path that holds the last panel's
 * columns — when the last A panel runs on a tail path, only if that path has one of the same
 * width (the corner tile); c->b then packs the last panel that wide. A handle whose last
 * panel is packed narrow (tail_hp, ts_handle_tail_hp) runs it on the path's kernel of that
 * width (ts_handle_b_layout_ok checked there is one), and its last A panel on the call's path
 * unless the tail path has a corner kernel of that width. */
static void choose_column_tail(call *c, const ts_b_source *bsrc)
{
    const size_t cols = c->N % c->path->hp;
    if (!bsrc->fill && c->b->tail_hp != 0) {
        c->ntail = ts_ntail_of(c->path, cols);
        c->tail_ntail = c->tail != NULL ? ts_ntail_of(c->tail, cols) : NULL;
        if (c->tail_ntail == NULL || c->tail_ntail->hp != c->ntail->hp) {
            c->tail = NULL;
            c->tail_ntail = NULL;
        }
        return;
    }
    if (!bsrc->fill || cols == 0)
        return;
    const ts_ntail_kernel *nt = ts_ntail_of(c->path, cols);
    const ts_ntail_kernel *corner = nt != NULL && c->tail != NULL ? ts_ntail_of(c->tail, cols) : NULL;
    if (nt == NULL || (c->tail != NULL && (corner == NULL || corner->hp != nt->hp)))
        return;
    c->ntail = nt;
    c->tail_ntail = corner;
    c->local_b = *bsrc->b;
    c->local_b.tail_hp = nt->hp;
    c->b = &c->local_b;
}

/* B packed in the call keeps no column sums when nothing reads them: the correction
 * col_sum_factor * sum_k B[k][n] is 0 (no requantisation or a_zero_point 0 on A packed as
 * given; a_zero_point 128 on the u8s8 sdot path). The packers skip that work (the streaming
 * int8 B packer's sum-free loop, no NEON sum passes). */
static void skip_col_sums(call *c, const ts_b_source *bsrc)
{
    if (!bsrc->fill || c->b->col_sums == NULL || col_sum_factor(c->path, c->out) != 0)
        return;
    if (c->b != &c->local_b) {
        c->local_b = *c->b;
        c->b = &c->local_b;
    }
    c->local_b.col_sums = NULL;
}

void ts_gemm_exec(const ts_context *ctx, const ts_b_source *bsrc, size_t M,
                  const ts_a_source *a, const ts_c_sink *out, void *work)
{
    const ts_packed_b *b = bsrc->b;
    const ts_path *path = b->path;
    const unsigned threads = ts_context_threads(ctx);
    const int requantize = out->q != NULL;
    call c;
    work_layout l;
    memset(&c, 0, offsetof(call, bias_pad));   /* bias_pad: fill_bias_pad, when used */
    c.path = path;
    c.bsrc = bsrc;
    c.b = b;
    c.a = a;
    c.out = out;
    c.M = M;
    c.N = b->N;
    c.K = b->K;
    c.ksteps = b->ksteps;
    c.a_panels = div_up(M, path->ep);
    /* conv panels are gathered at the path's ep (ts_pack_conv_panels): no tail path there */
    c.tail = M % path->ep != 0 && a->conv == NULL ? ts_tail_path(path, M % path->ep) : NULL;
    choose_column_tail(&c, bsrc);
    skip_col_sums(&c, bsrc);
    ts_gemm_grid(c.a_panels, b->panels, threads, &c.m_tasks, &c.n_tasks);
    a_block_bytes(path, b->K, div_up(c.a_panels, c.m_tasks), &c.a_block_bytes);
    c.stage = ts_gemm_stage(path, out);
    c.fused = fused_epilogue(path, c.b, out);
    if (c.fused && out->bias_clamp)
        fill_bias_pad(&c);
    const size_t pad_bytes = a->conv != NULL ? a->conv->in_c : 0;
    layout_work(path, M, c.N, c.K, c.stage, c.fused, pad_bytes, c.m_tasks, c.n_tasks, &l);
    unsigned char *base = (unsigned char *)ts_align16(work);
    c.a_blocks = base + l.a_blocks;
    c.line_bytes = line_stage_bytes(path, c.K, c.stage, c.fused, div_up(c.a_panels, c.m_tasks));
    c.lines = c.line_bytes != 0 ? base + l.lines : NULL;
    if (pad_bytes != 0) {
        memset(base + l.pad_row, (unsigned char)a->pad_value, pad_bytes);
        c.pad_row = (const int8_t *)(base + l.pad_row);
    }
    c.col_offset = ts_region(base, l.col_offset);
    c.params = base + l.params;
    c.c32 = base + l.c32;
    c.staged = c.stage != TS_STAGE_NONE && needs_c32(path, c.K, c.stage, c.fused);
    if (c.staged) {
        c.stage_ld = stage_ld(path, c.N, c.n_tasks);
        stage_bytes(path, M, c.N, c.K, div_up(c.a_panels, c.m_tasks), c.n_tasks, &c.stage_task);
        ts_size_round_up(c.stage_task, 16, &c.stage_task);
    }
    if (requantize) {
        if (out->u8_output)
            ts_quant_u8_as_s8(out->q, &c.q);   /* int8 epilogue, bit 7 flipped after */
        else
            c.q = *out->q;
        c.q.bias = NULL;
        c.rounding = ts_kernel_rounding(&c.q, c.N);
    }
    /* phase 1's tasks: a share of B's panels each when B is packed here (no more tasks than
     * panels), else one on the calling thread: the column parameters of a prepacked B are
     * O(N), not worth a fork-join per call (a barrier per layer and token in decode); a conv's
     * padded input copy, O(input), is shared by every thread (no more tasks than its rows) */
    c.pack_tasks = !bsrc->fill ? 1 : threads < b->panels ? threads : b->panels;
    if (a->padded_from != NULL) {
        const size_t rows = ts_conv_padded_rows(a->padded_from->conv);
        const size_t copy_tasks = threads < rows ? threads : rows;
        c.pack_tasks = copy_tasks > c.pack_tasks ? copy_tasks : c.pack_tasks;
    }
    /* phase 1 only when it has work: a prepacked B without requantization (fp32, bf16, fp16,
     * the raw integer types but for A packed with an offset, which need the column
     * correction) and no padded copy would be one empty fork-join per call */
    if (bsrc->fill || requantize || ts_a_offset(path) != 0 || a->padded_from != NULL)
        ts_context_run(ctx, c.pack_tasks, pack_task, &c);
    ts_context_run(ctx, c.m_tasks * c.n_tasks, compute_task, &c);
}
