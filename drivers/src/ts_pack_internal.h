/* ts_pack_internal.h — internal contract of the GEMM / conv2d drivers:
 * kernel paths, runtime dispatch, panel packing and the packed-B handle. Not public API.
 * Plain C99.
 *
 * Panel layout (README "Micro-kernel ABI"): a panel of `width` rows (ep rows of A, or hp
 * columns of B) over K is ksteps = ceil(K / lp) k-steps; k-step s holds, for each row r in
 * 0..width-1, the lp values k = s*lp .. s*lp+lp-1 of that row contiguously. Rows past the
 * matrix edge and k past K are zero. */
#ifndef TS_PACK_INTERNAL_H
#define TS_PACK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tilesmith.h"
#include "ts_span_internal.h"   /* ts_size_*, ts_matrix_span_*; TS_ALWAYS_INLINE, TS_NOINLINE
                                   (ts_build_internal.h) */

#ifdef __cplusplus
extern "C" {
#endif

/* The region `offset` bytes into a block that starts 16-byte aligned (ts_align16, malloc):
 * every work and handle layout places its regions at multiples of 16 bytes (or, inside a
 * region, after whole elements of at least the next one's size), which is aligned for the
 * element type the region holds (int32, float, a handle struct), so the region is returned
 * as void * and converts to that type without a cast. Likewise the packers' typed NEON stores
 * into panels (ts_pack.c, ts_qdyn_lhs.c): a panel starts 16-byte aligned and each store's
 * offset is a multiple of its element size (e.g. ST4 .2D at k-steps of 8 floats). */
static inline void *ts_region(void *block, size_t offset)
{
    return (unsigned char *)block + offset;
}

/* ---- micro-kernels (ABI in README); this build's are declared in ts_kernels.h ------------- */
struct ts_tile_args;   /* ts_kernels.h; NULL = full tile, overwrite, raw */
typedef void (*ts_kernel_fn)(const void *a_packed, const void *b_packed, size_t ksteps,
                              void *c, size_t ldc_bytes, const struct ts_tile_args *args);
struct ts_strip;       /* ts_kernels.h: the tiles of a strip entry call and their steps */
typedef void (*ts_strip_fn)(const void *a_packed, const void *b_packed, size_t ksteps,
                            void *c, size_t ldc_bytes, const struct ts_tile_args *args,
                            const struct ts_strip *strip);

/* ---- kernel paths and dispatch (cpu.c; the tables are generated: ts_dispatch.c) ------------ */

/* Element conversion the packer applies (source type -> what the kernel reads). */
typedef enum {
    TS_PACK_F32,        /* float -> float */
    TS_PACK_F32_BF16,   /* float -> float holding the bf16-rounded value (RNE) */
    TS_PACK_BF16,       /* float -> bf16 bits (RNE) */
    TS_PACK_S8,         /* 8-bit -> 8-bit as given (int8, or uint8 for the u8 kernels) */
    TS_PACK_S16,        /* int8  -> int16 (sign-extended) */
    TS_PACK_U16,        /* uint8 -> int16 (zero-extended: 0..255) */
    TS_PACK_F16,        /* fp16 bits (uint16_t) -> as given */
    TS_PACK_F32_F16,    /* fp16 bits -> float (exact; a NaN made quiet, as FCVTL does) */
    TS_PACK_U8_S8       /* uint8 -> int8 a - 128 (bit 7 flipped): uint8 A on int8 kernels,
                           the driver adds ts_a_offset * sum_k B[k][n] per column */
} ts_pack_kind;

/* The GEMV / small-M kernel of a path (gen/gemv.py): the path's instruction, or a form of it
 * with the same feature and packing that computes the same results (gen/gemv.py GEMV_FORMS:
 * bfdot for bfmmla, sudot for usmmla), a tile of ep (1, or 2 for the matrix forms) x hp rows
 * for M <= max_m, k-steps of lp, whose B panels are hp columns wide (a second layout in a
 * ts_packed_b). kernel NULL: none in this build. */
typedef struct {
    const char *symbol;
    ts_kernel_fn kernel;
    size_t ep, hp, lp;
    size_t max_m;              /* the driver runs it for 1 <= M <= max_m ... */
    size_t step, main_step;    /* ... unless ceil(N / hp) * step (instructions per k-step of
                                  this tile) exceeds ceil(N / path hp) * main_step (of the
                                  path's GEMM tile): very narrow B */
} ts_gemv_kernel;

/* A column-tail kernel of a path (gen/ntail.py): the path's instruction and rows (ep), a
 * narrower tile of hp columns, for the last B panel of a call whose N mod the path's hp it
 * holds (ts_engine.c; that panel packed hp columns wide: ts_packed_b.tail_hp). fused: its
 * variant with the path's fused epilogue (ts_path.fused; NULL: none). kernel NULL: no such entry. */
#define TS_NTAILS 3            /* entries of ts_path.ntail (gen/registry.py NTAILS) */
typedef struct {
    const char *symbol;
    ts_kernel_fn kernel;
    ts_kernel_fn fused;
    size_t hp;
} ts_ntail_kernel;

/* The qdyn kernels of a path with the fp32 epilogue inside (gen/qdyn4.py, gen/qdyn4_rl.py,
 * README "qdyn kernels"): int8 A x int4 B (two nibbles per byte) or int8 B -> fp32 with the
 * scale blocks, bias and clamp in the kernel, for scale blocks of up to max_bl k. kernel NULL:
 * none (ts_qdyn.c then runs the raw int8 kernel and its C epilogue, int4 widened to int8). Its
 * argument block, as <prefix>kernels.h declares it: */
#ifndef TS_QDYN_ARGS_DEFINED
#define TS_QDYN_ARGS_DEFINED
typedef struct ts_qdyn_args {
    size_t m_rem;                 /*  0: rows to store, 1..ep */
    size_t n_rem;                 /*  8: columns to store, 1..hp */
    size_t kpairs;                /* 16: k-steps (16 k) per scale block / 2, >= 1 */
    const void *rows;             /* 24: ep/2 fp32x4 row scales, ep/2 int32x4 -zp (per-channel
                                           kernels: then ep/2 int32x4 -8 sum_k qa) */
    const float *bias;            /* 32: hp fp32 (rounded up to 4): bias, or -0.0f for none */
    float cmin;                   /* 40: clamp: x < cmin -> cmin, then x > cmax -> cmax */
    float cmax;                   /* 44 */
    size_t b_stride;              /* 48: decode, per-channel kernels: bytes between B panels */
    size_t clamp;                 /* 56: 0: cmin = -Inf and cmax = +Inf (the clamp changes
                                           nothing: skipped) */
    const int32_t *col_sums;      /* 64: raw-panel int8 decode kernel (gen/qdyn8_dot.py): hp
                                           int32 sum_k qb, from its first column */
    const float *col_scales;      /* 72: ... and hp fp32 wscale */
} ts_qdyn_args;
typedef void (*ts_qdyn_kernel_fn)(const void *a_packed, const void *b_packed, size_t blocks,
                                  float *c, size_t ldc_bytes, const ts_qdyn_args *args);
#endif
typedef struct {
    const char *symbol;
    ts_qdyn_kernel_fn kernel;
    size_t ep, hp;
    size_t max_bl;             /* longest scale block (16 * block sum fits int32) */
    size_t panels;             /* B panels per call, of hp / panels columns (> 1 only for
                                  decode kernels; per channel: panels of 4 columns for smmla, 8
                                  for sdot and the Armv8.0 kernels; scale blocks: kind 0's hp) */
    size_t lp;                 /* k per k-step of its int8 A panel: 8 (the smmla layout) or 4
                                  (the sdot layout: sdot and the Armv8.0 kernels) */
} ts_qdyn_kernel;
#define TS_QDYN_KINDS 6        /* entries of ts_path.qdyn (gen/registry.py qdyn_kind) */

/* Core classes of the run-time kernel variants (gen/cores.py CORE_CLASSES): a CPU=generic
 * build holds, per instruction, the generic kernel and the class variants whose tile or
 * schedule differs from it; a call runs the variant of the class of the core it runs on, or
 * the generic kernel when there is none (or the core is unknown). */
typedef enum {
    TS_CORE_GENERIC = 0,
    TS_CORE_OOO = 1,          /* out-of-order: tuned for Neoverse N2 / V1, Cortex-A710 */
    TS_CORE_INORDER = 2       /* in-order: tuned for Cortex-A510 / A55 */
} ts_core_class;
#define TS_CORE_AUTO (-1)     /* select: the class of the core the calling thread runs on */

/* The streaming packers of the SME paths (generated, <prefix>kernels.h). */
typedef void (*ts_sme_pack_a_fn)(void *dst, const void *src, size_t rows, size_t k_bytes,
                                 size_t lda_bytes);
typedef void (*ts_sme_pack_b_fn)(void *dst, const void *src, size_t cols, size_t K,
                                 size_t ldb_bytes, int32_t *col_sums);

/* One way to run a GEMM type: a kernel, its tile, its packing and the CPU features it needs. */
typedef struct {
    int gemm_type;             /* TS_GEMM_* */
    const char *symbol;        /* kernel symbol, for ts_gemm_kernel / ts_packed_kernel */
    ts_kernel_fn kernel;
    unsigned features;         /* TS_FEAT_* bits the CPU must have */
    size_t ep, hp, lp;         /* tile rows, tile columns, k per k-step */
    ts_pack_kind pack;         /* conversion of B (ts_pack_panel, ts_packed_b_init) */
    ts_pack_kind pack_a;       /* conversion of A (differs from B's for the widened u8 x s8 path) */
    size_t c_bytes;            /* bytes of one kernel result (fp16, float, int32 or uint32) */
    ts_kernel_fn fused;        /* the same tile with the GEMM type's fused epilogue
                                  (_requant: int8 C; _requant_u8: uint8 C; _biasclamp: fp32 C
                                  of ts_gemm_f32_bias_clamp), or NULL */
    size_t params_cols;        /* columns per 64-byte block of the fused requant epilogue's
                                  column parameters: 4, or 2 (MMLA 2x2 tiles; README
                                  "Micro-kernel ABI") */
    size_t kc_steps;           /* cache blocks (gen/blocking.py): K block in k-steps, */
    size_t mc_panels;          /* M block in ep-row panels */
    size_t kw_steps;           /* K runs unsplit up to this many k-steps (gen/blocking.py
                                  whole_k_steps), beyond it in blocks of at most kc_steps */
    ts_gemv_kernel gemv;       /* small-M kernel of the same instruction, or kernel NULL (the
                                  qdyn type: the int8 handles' raw tile for M <= max_m over
                                  the main kernel's panels, gen/qdyn8_dot.py; same hp, lp) */
    size_t svl_bytes;          /* 0, or an SME path (TS_FEAT_SME): the streaming vector length
                                  its ep x hp tile is sized for; chosen only at that SVL */
    const ts_qdyn_kernel *qdyn; /* TS_GEMM_QDYN: NULL, or the TS_QDYN_KINDS fused kernels of
                                  the instruction: int4 [0] for scale blocks (gen/qdyn4.py), [1]
                                  per channel and [2] per channel for M <= its ep
                                  (gen/qdyn4_rl.py: the same packed layout, two channels per
                                  byte); int8 [3] per channel (gen/qdyn4.py, weights "s8");
                                  int4 [4] scale blocks for M <= 4, one row per pass over
                                  `panels` of [0]'s panels (gen/qdyn4_dot.py decode);
                                  int8 [5] per channel for M <= 4, one row pair per pass
                                  over `panels` of [3]'s panels (gen/qdyn4.py decode), or
                                  where [3] is NULL (sdot) ep rows per pass over `panels` of
                                  the raw kernel's panels (gen/qdyn8_dot.py: raw int8 handles);
                                  kernel NULL: none */
    int core_class;            /* ts_core_class it is tuned for (TS_CORE_GENERIC: any core) */
    /* SME paths (gen/sme_pack.py): NULL, or the streaming-mode packer of A panels (rows x
     * k_bytes, k contiguous) / of B panels (K rows x cols, columns contiguous) for pack_a /
     * pack; ts_pack.c calls them instead of the C packers (the int8 B packers, pack
     * TS_PACK_S8, also write the column sums: ceil(cols / 4) * 4 of them) */
    ts_sme_pack_a_fn sme_pack_a;
    ts_sme_pack_b_fn sme_pack_b;
    ts_ntail_kernel ntail[TS_NTAILS];  /* column-tail kernels, narrowest first (ts_ntail_of) */
    /* What re-derives kc_steps, mc_panels and kw_steps for other cache sizes (ts_blocks.c,
     * gen/blocking.py run_time_facts): the L1D and L2 bytes they were sized for (0: blocks that
     * do not follow a core's caches, the SME and GEMV paths), the A element's bytes, and whether
     * kw_steps comes from the L2 fit (else it is kc_steps). */
    size_t block_l1, block_l2;
    unsigned block_elem;
    int kw_from_l2;
    ts_strip_fn strip;         /* fused's strip entry (README "Micro-kernel ABI", strips: its
                                  tiles in one call), or NULL */
} ts_path;

/* The Arm cores run-time detection knows (generated: ts_dispatch.c, from gen/cores.py
 * ARM_PARTS and MEMORY; the one table of them): the name ts_context_set_cpu accepts for each
 * (besides "auto" and "generic"), its MIDR_EL1 part number (implementer 0x41), the class of
 * kernel variants a core with that MIDR gets, and the L1D and L2 bytes whose blocks a call on
 * it runs when its context passes no cache sizes (ts_blocks.c; 0: not modeled, the path's own
 * blocks). *count of them. */
typedef struct {
    const char *name;
    unsigned part;
    int core_class;            /* ts_core_class */
    size_t l1d_bytes, l2_bytes;
} ts_cpu_core;
const ts_cpu_core *ts_cpu_cores(size_t *count);

/* How much less than the caller's A values the packed ones are (TS_PACK_U8_S8: 128), 0 when
 * they are the same. The uint8 x int8 GEMM on int8 x int8 kernels (gen/registry.py: the u8s8
 * sdot path) computes sum_k (a - 128) * b; the driver adds ts_a_offset * sum_k B[k][n] to each
 * column (raw: from the accumulators' start; requantised: in the zero-point correction,
 * -(a_zero_point - 128) * sum_k B[k][n]). Padding A values stay 0: they meet zero B. */
static inline int32_t ts_a_offset(const ts_path *path)
{
    return path->pack_a == TS_PACK_U8_S8 ? 128 : 0;
}

/* Whether packed B handles of `gemm_type` keep the column sums of B: the types whose
 * quantized form subtracts a_zero_point * sum_k B[k][n] (int8 B). */
static inline int ts_keeps_col_sums(int gemm_type)
{
    return gemm_type == TS_GEMM_INT8 || gemm_type == TS_GEMM_U8S8;
}

/* ---- path selection (cpu.c; ts_select_path_ctx, ts_context_internal.h, builds on these):
 *
 *   ts_cpu_lookup("auto" | "generic" | a core name, &cls)  TS_OK and cls = TS_CORE_AUTO,
 *                                                   TS_CORE_GENERIC or the class of that core
 *                                                   (ts_cpu_cores); TS_EINVAL for any other
 *                                                   string/NULL
 *   ts_select_path_class(type, mask, cls)           the path a call of `type` runs with the
 *                                                   features ts_cpu_features() & mask on a core
 *                                                   of class cls (TS_CORE_AUTO: detect now)
 *   ts_select_path_cpu(type, mask, "auto" | name)   the same from a name (NULL if unknown)
 *   ts_select_path(type)                            the global mask, "auto": what the public
 *                                                   entry points without a context use
 *
 * Selection: the first path (most preferred first: the SME paths, then the NEON chain with
 * each instruction's class variants before its generic kernel) whose features are all usable,
 * whose class is `cls` or generic and, for an SME path, that ts_sme_path_fits; when there is
 * none (a CPU= build: its CPU's class only), the first usable path of another class. All
 * return NULL for an unknown gemm_type. */
int ts_cpu_lookup(const char *cpu, int *core_class);
/* The MIDR_EL1 part number of core name `cpu` (ts_cpu_cores), 0 for any other string. */
unsigned ts_cpu_named_part(const char *cpu);
const ts_path *ts_select_path_class(int gemm_type, unsigned feature_mask, int core_class);
const ts_path *ts_select_path_cpu(int gemm_type, unsigned feature_mask, const char *cpu);
const ts_path *ts_select_path(int gemm_type);
/* The class of the core the calling thread runs on now (TS_CORE_GENERIC when unknown), and the
 * class of a MIDR_EL1 value (exposed for tests). ts_current_core also gives that core's part
 * number for an Arm Ltd core (MIDR_EL1 read once), else 0 (no Arm part is 0). */
int ts_current_core_class(void);
int ts_current_core(unsigned *arm_part);
int ts_core_class_of_midr(uint64_t midr);
/* Whether B panels packed for path `packed_for` are what path `run` reads (same GEMM type,
 * hp, lp and B conversion, the same GEMV layout and streaming vector length: ep and the core
 * class may differ). */
int ts_same_b_layout(const ts_path *packed_for, const ts_path *run);
/* The path whose kernel runs the last A panel of a call on core-class variant `path` when
 * that panel has only `rows` rows: the generic kernel of the same instruction (same features,
 * B panels, A conversion, result size and fused epilogue; GEMV layouts are not compared) whose smaller tile still holds them
 * (ts_engine.c: a 12-row variant does not compute 4 padding rows of a 512-row GEMM); NULL when
 * `path` is generic or no such kernel exists. Results are the same bits (README "Per-core
 * kernel variants"). */
const ts_path *ts_tail_path(const ts_path *path, size_t rows);
/* The column-tail kernel (gen/ntail.py) that runs a last B panel of `cols` columns on `path`:
 * the narrowest of path->ntail whose hp holds them (and that has the path's fused epilogue
 * variant when the path has one); NULL when none does (cols >= every tail's hp, or none). */
const ts_ntail_kernel *ts_ntail_of(const ts_path *path, size_t cols);
/* Every path of `gemm_type` compiled into this build (*count of them), for worst-case sizing. */
const ts_path *ts_paths_of(int gemm_type, size_t *count);

/* ---- SME (sme.c) ---------------------------------------------------------------------------- */

/* The streaming vector length in bytes (RDSVL #1: legal outside streaming mode, no SVE
 * instruction). Call only when the CPU has FEAT_SME (TS_FEAT_SME); 0 on a compiler or
 * target without the query. Read at every call: a PR_SME_SET_VL changes it. */
size_t ts_sme_svl_bytes(void);
/* Whether `path` can run at this moment as far as the streaming vector length goes: not an
 * SME path (svl_bytes 0), or one sized for the current SVL. Call only with TS_FEAT_SME usable
 * for SME paths (it executes RDSVL for them). */
int ts_sme_path_fits(const ts_path *path);

/* ---- packing (pack.c) ----------------------------------------------------------------------- */

/* Bytes of one packed element of `kind`. */
size_t ts_pack_elem_bytes(ts_pack_kind kind);
/* Bytes of one source element of `kind` (float; 2 for the fp16 kinds; 1 for the 8-bit ones). */
size_t ts_source_elem_bytes(ts_pack_kind kind);

/* IEEE binary16 <-> fp32 (pack.c). ts_f16_to_f32 is exact (a NaN made quiet: fraction MSB
 * set, payload kept, as FCVTL); ts_f32_to_f16 rounds to nearest even (overflow to infinity,
 * gradual underflow; a NaN keeps its sign and top 9 payload bits and is made quiet, as FCVTN
 * with FPCR.DN = 0). Plain integer code: same bits on every target. */
float ts_f16_to_f32(uint16_t h);
uint16_t ts_f32_to_f16(float x);
/* rows x cols floats (row stride ld_src) -> fp16 (row stride ld_dst), ts_f32_to_f16 each
 * (NEON FCVTN where available: the same bits under the default FPCR). */
void ts_narrow_rows_f16(const float *src, size_t ld_src, size_t rows, size_t cols,
                        uint16_t *dst, size_t ld_dst);

/* Bytes of one packed panel of `width` rows over K (ceil(K/lp)*lp*width elements); 0 with -1
 * returned on overflow. */
int ts_panel_bytes(const ts_path *path, size_t width, size_t K, size_t *out);

/* Packs one panel with path->pack: rows 0..rows-1 of the source, where element (r, k) is
 * src[r*row_stride + k*k_stride] (float for the F32/BF16 kinds, 8-bit for S8/S16/U16), into
 * `width` rows of `dst` (rows >= rows zero), K values each (zero-padded to whole k-steps). */
void ts_pack_panel(const ts_path *path, void *dst, const void *src, size_t rows,
                   size_t width, size_t K, size_t row_stride, size_t k_stride);
/* The same with conversion `kind` (an A panel: path->pack_a; same element size as path->pack). */
void ts_pack_panel_as(ts_pack_kind kind, const ts_path *path, void *dst, const void *src,
                      size_t rows, size_t width, size_t K, size_t row_stride, size_t k_stride);

/* Implicit im2col: A panels gathered row by row. ts_pack_clear_padding zeroes what a panel of
 * `rows` (< width: the rows past them) over K (the k past K) holds beyond the data, as
 * ts_pack_panel does; ts_pack_gather then writes `runs` runs of n k each into rows 0..rows-1
 * of the panel at dst (width rows, k-step lp, conversion kind): run j is k = k0 + j*n ..
 * k0 + (j+1)*n - 1, row r reading the n source elements at src[r] + offset + j*stride (a
 * conv window's kernel rows: stride = one input row). Any k0 and n (partial k-steps element by
 * element). */
typedef struct {
    size_t k0, n;             /* the first run's k, and k per run */
    size_t runs;
    size_t offset, stride;    /* in source elements, from src[r] */
} ts_gather_runs;
void ts_pack_clear_padding(ts_pack_kind kind, size_t lp, void *dst, size_t rows,
                            size_t width, size_t K);
void ts_pack_gather(ts_pack_kind kind, size_t lp, size_t width, void *dst,
                    const void *const *src, size_t rows, const ts_gather_runs *g);
/* The same for rows of consecutive panels (panel_bytes apart) read from one strided source:
 * row i (0 .. rows-1) is row (first + i) % width of panel (first + i) / width, its run j read
 * at src + i * src_stride + g->offset + j * g->stride source elements (an output row's
 * windows with no padding tap: one input pixel stride apart). */
void ts_pack_gather_strided(ts_pack_kind kind, size_t lp, size_t width, void *dst,
                            size_t panel_bytes, size_t first, const void *src,
                            size_t src_stride, size_t rows, const ts_gather_runs *g);
/* The same for `runs` runs of n k each from k0 on, run j of row r reading its n source
 * elements at src[j * rows + r] (a table of rows x runs pointers, run by run: a conv window's
 * taps, each tap its own pointer). */
void ts_pack_gather_taps(ts_pack_kind kind, size_t lp, size_t width, void *dst,
                         const void *const *src, size_t rows, size_t k0, size_t n, size_t runs);
/* `count` runs of `bytes` bytes, src + i * src_stride -> dst + i * dst_stride, by vector moves
 * (with NEON: 64, 32 and 16 bytes at a time); runs must not overlap. */
void ts_pack_copy_runs(void *dst, size_t dst_stride, const void *src, size_t src_stride,
                       size_t bytes, size_t count);
/* `count` runs of `bytes` bytes set to `value`, run i at dst + i * dst_stride, by vector stores
 * (with NEON; no libc call). */
void ts_pack_fill_runs(void *dst, size_t dst_stride, unsigned char value, size_t bytes,
                       size_t count);
/* Rows ts_pack_gather packs together (2 for 8-bit lp 8; with NEON 4 for 8-bit lp 4 and for the
 * widened 16-bit lp 1), 0 when any count suits it: callers gathering rows in groups of this
 * size keep them whole. */
size_t ts_pack_gather_group(ts_pack_kind kind, size_t lp);

/* B (K x N) packed for one path: panels of hp columns, and when the path has a GEMV kernel
 * (path->gemv.kernel) a second copy in panels of gemv.hp columns, which the small-M calls
 * (M <= gemv.max_m) read. Both layouts serve the same handle: prefill (GEMM kernel) and
 * decode (GEMV kernel) run on one prepacked B, at the cost of storing it twice. */
struct ts_packed_b {
    uint32_t tag;          /* TS_TAG_PACKED_B or TS_TAG_CONV_FILTER while live
                              (ts_error_internal.h); first member */
    const ts_path *path;   /* the kernel it was packed for (also gives the GEMM type) */
    size_t K, N;
    size_t ksteps;             /* ceil(K / lp) */
    size_t panels;             /* ceil(N / hp) */
    size_t panel_bytes;        /* bytes of one B panel */
    void *data;                /* panels * panel_bytes bytes */
    int32_t *col_sums;         /* ts_keeps_col_sums types: sum_k B[k][n], N values */
    void *owned;               /* malloc block to free with the handle, or NULL */
    size_t owned_bytes;        /* its size (ts_packed_size), 0 without one */
    /* TS_GEMM_QDYN handles only (ts_qdyn.c; 0 / NULL otherwise): the weights' scale blocks */
    size_t bl;                 /* k per scale block: K for one scale per output channel */
    size_t blocks;             /* K / bl */
    int scale_last;            /* 1: qs4 with bl > 0, tilesmith.h's block order (the row scale
                                  after the sum of the blocks); 0: the per-channel order */
    const float *wscales;      /* blocks x N fp32 weight scales (block-major: a block's
                                  columns contiguous) */
    const int32_t *blk_sums;   /* blocks x N: sum of the int weights over each block */
    const ts_qdyn_kernel *qdyn;  /* handles of a fused qdyn kernel (one of path->qdyn): data
                                  holds its panels (gen/qdyn4.py layout); NULL otherwise */
    size_t qdyn_kpairs;        /* ... and its k-step pairs (16 k each) per block */
    size_t tail_hp;            /* 0: every panel hp columns wide; else the last panel (N mod
                                  hp columns) is packed tail_hp wide for a column-tail kernel
                                  (ts_ntail_of): B packed inside a call (ts_engine.c chooses)
                                  and handles of ts_pack_b_* / ts_pack_conv2d_filter_s8
                                  (ts_handle_tail_hp: one width for every path that reads
                                  the handle); qdyn handles keep 0 (their kernels read hp-wide
                                  panels) */
    size_t conv_k_h, conv_k_w; /* TS_TAG_CONV_FILTER handles: the filter's window (in_c =
                                  K / (k_h * k_w)), checked by ts_conv2d_s8_prepacked; 0
                                  otherwise */
    size_t gemv_panels;        /* ceil(N / gemv.hp), 0 without a GEMV layout */
    size_t gemv_panel_bytes;
    void *gemv_data;           /* gemv_panels * gemv_panel_bytes bytes, or NULL */
    /* A handle packed with TS_LAYOUT_GEMV alone (ts_context_set_pack_layouts) has no GEMM
     * layout: data NULL, panels and panel_bytes 0 (ts_packed_gemm_layout). */
};

/* Whether b holds the GEMM tile's panels (else only the GEMV layout: M <= gemv.max_m). */
static inline int ts_packed_gemm_layout(const ts_packed_b *b)
{
    return b->data != NULL;
}

/* `path` without its GEMV kernel: for a B packed inside one call, whose M is known, only the
 * layout that call runs is packed (ts_packed_b_init packs the GEMV layout too when the path
 * has a GEMV kernel). */
static inline ts_path ts_single_layout_path(const ts_path *path)
{
    ts_path v = *path;
    v.gemv.symbol = NULL;
    v.gemv.kernel = NULL;
    v.gemv.ep = v.gemv.hp = v.gemv.lp = v.gemv.max_m = v.gemv.step = v.gemv.main_step = 0;
    return v;
}

/* The path that runs the GEMV kernel of `path` as if it were the main one: its kernel,
 * symbol and tile (ep, hp, lp), everything else (packing, features) the same, no GEMV kernel
 * of its own. Requires path->gemv.kernel != NULL. */
static inline ts_path ts_gemv_path(const ts_path *path)
{
    ts_path v = ts_single_layout_path(path);
    v.symbol = path->gemv.symbol;
    v.kernel = path->gemv.kernel;
    v.ep = path->gemv.ep;
    v.hp = path->gemv.hp;
    v.lp = path->gemv.lp;
    /* raw only; its one A panel (M <= max_m) reads each B panel once, so a K block would
     * only add accumulator loads and stores: the whole K is one block */
    v.fused = NULL;
    v.kc_steps = (size_t)-1;
    v.mc_panels = 1;
    v.kw_steps = (size_t)-1;
    v.block_l1 = v.block_l2 = 0;
    v.sme_pack_a = NULL;        /* the GEMV kernel's layout is not the SME kernel's */
    v.sme_pack_b = NULL;
    memset(v.ntail, 0, sizeof v.ntail);   /* the column tails are the GEMM tile's */
    return v;
}

/* Whether a call with M rows of A and N columns of B runs the GEMV kernel of `path`:
 * 1 <= M <= gemv.max_m, and its panels over N take no more instructions per k-step than the
 * GEMM tile's (gen/gemv.py: very narrow B keeps the GEMM tile). */
static inline int ts_use_gemv(const ts_path *path, size_t M, size_t N)
{
    if (path->gemv.kernel == NULL || M < 1 || M > path->gemv.max_m)
        return 0;
    size_t gemv_panels = N / path->gemv.hp + (N % path->gemv.hp != 0);
    size_t main_panels = N / path->hp + (N % path->hp != 0);
    return gemv_panels * path->gemv.step <= main_panels * path->gemv.main_step;
}

/* Whether [p, p+len) shares a byte with anything a GEMM reads from handle b: the struct, its
 * panels and its column sums. */
static inline int ts_packed_b_overlaps(const ts_packed_b *b, const void *p, size_t len)
{
    return ts_spans_overlap(p, len, b, sizeof *b)
           || ts_spans_overlap(p, len, b->data, b->panels * b->panel_bytes)
           || ts_spans_overlap(p, len, b->gemv_data, b->gemv_panels * b->gemv_panel_bytes)
           || ts_spans_overlap(p, len, b->col_sums,
                                 b->col_sums != NULL ? b->N * sizeof(int32_t) : 0)
           || ts_spans_overlap(p, len, b->wscales, b->N * b->blocks * sizeof(float))
           || ts_spans_overlap(p, len, b->blk_sums, b->N * b->blocks * sizeof(int32_t));
}

/* The B layouts of a handle (tilesmith.h TS_LAYOUT_GEMM / TS_LAYOUT_GEMV bits, at least one):
 * TS_LAYOUTS_ALL packs the GEMV layout beside the GEMM one when the path has a GEMV kernel; a
 * path without one always gets its GEMM layout. */
#define TS_LAYOUTS_ALL (TS_LAYOUT_GEMM | TS_LAYOUT_GEMV)

/* Whether a handle of path packed with `layouts` holds the GEMV layout / the GEMM one. */
static inline int ts_keeps_gemv_layout(const ts_path *path, unsigned layouts)
{
    return path->gemv.kernel != NULL && (layouts & TS_LAYOUT_GEMV) != 0;
}

static inline int ts_keeps_gemm_layout(const ts_path *path, unsigned layouts)
{
    return !ts_keeps_gemv_layout(path, layouts) || (layouts & TS_LAYOUT_GEMM) != 0;
}

/* Bytes ts_packed_b_init needs for (path, layouts, K, N): the panels of each layout, plus
 * column sums for INT8. Returns 0, or -1 on size_t overflow. */
int ts_packed_b_bytes(const ts_path *path, unsigned layouts, size_t K, size_t N, size_t *out);

/* Packs B into `memory` (ts_packed_b_bytes bytes, 4-byte aligned) and fills *b (owned = NULL).
 * Element (k, n) of B is B[k*k_stride + n*n_stride]: (ldb, 1) for a row-major K x N matrix,
 * (1, K) for an OHWI conv filter (B transposed). tail_hp: the handle's ts_packed_b.tail_hp
 * (0, or ts_handle_tail_hp). Arguments must be valid. */
void ts_packed_b_init(ts_packed_b *b, const ts_path *path, unsigned layouts, size_t K,
                      size_t N, const void *B, size_t k_stride, size_t n_stride, size_t tail_hp,
                      void *memory);
/* The width a handle of (path, layouts) packs its last panel of N columns (N mod hp of them)
 * for a column-tail kernel: that of ts_ntail_of(path, N mod hp) when every path of the GEMM
 * type this build has that reads the same B panels (ts_same_b_layout) runs such a panel on a
 * kernel of that width, so the handle stays valid on each of them (the core-class variants
 * share their generic kernel's column tails, gen/registry.py); else 0 (hp wide). */
size_t ts_handle_tail_hp(const ts_path *path, unsigned layouts, size_t N);
/* A handle's B panels as `run` reads them: ts_same_b_layout, and a last panel packed
 * tail_hp wide only for a path with a column-tail kernel of that width for it. */
int ts_handle_b_layout_ok(const ts_packed_b *b, const ts_path *run);

/* ts_packed_b_init in two steps: the layout (fields of *b, nothing packed), then panels
 * j0 .. j1-1 of the GEMM layout (and their columns' sums) from B; any panel ranges may be
 * filled concurrently. */
void ts_packed_b_layout(ts_packed_b *b, const ts_path *path, unsigned layouts, size_t K,
                        size_t N, void *memory);
void ts_packed_b_fill(const ts_packed_b *b, const void *B, size_t k_stride, size_t n_stride,
                      size_t j0, size_t j1);

/* ts_packed_b_init into a fresh malloc block, returned through *out.
 * TS_OK, or TS_ENOMEM (size overflow or malloc failure; *out untouched). */
int ts_packed_b_create(const ts_path *path, unsigned layouts, size_t K, size_t N,
                       const void *B, size_t k_stride, size_t n_stride, size_t tail_hp,
                       ts_packed_b **out);

#ifdef __cplusplus
}
#endif
#endif /* TS_PACK_INTERNAL_H */
