/* tilesmith.h — public API of the tilesmith GEMM / conv2d drivers.
 * Plain C99, no dependency beyond libc.
 * Row-major matrices, strides in elements. Every function is re-entrant and thread-safe,
 * except ts_set_feature_mask (process-global state) and a context's setters, which must not
 * run while a call uses that context (see the execution context section).
 * Outputs must not overlap inputs: a call whose output (C, output, cols, out; also a conv's
 * workspace) shares a byte with a buffer it reads (A, B, acc, input, filter, a packed handle,
 * a ts_quant and its arrays) or with its other written buffer returns TS_EINVAL, nothing written.
 * Overlap is judged on the bytes the call touches: a matrix of rows x cols with stride ld
 * spans ((rows-1)*ld + cols) elements, so buffers that only touch end to end are fine.
 * Alignment: a pointer needs only its element type's (4 bytes for float / int32, none for
 * int8 / uint8 data); a caller's workspace (ts_context_set_workspace, the conv2d workspace) may
 * start at any address: the sizes the library reports include the room to align it.
 * Lifetime: a handle (ts_packed_b, ts_packed_a) copies what it needs when it is made and refers
 * to no caller memory or context: the packed inputs and the ts_context it was packed with may be
 * freed before it. */
#ifndef TS_TILESMITH_H
#define TS_TILESMITH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
/* The API keeps default visibility when the library is built with -fvisibility=hidden (its
 * CMake target is), so an engine's shared object that links it exports no internal symbol;
 * the CMake target also keeps the API out of such an object's exports unless configured with
 * <PREFIX>EXPORT_API=ON (README "Shared objects"). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* Version of the generator and C library that made this folder (also in manifest.json, with a
 * digest of the sources). Bumped when the C API, the kernel contract or a packed layout changes. */
#define TS_VERSION "0.14.0"

#define TS_OK      0
#define TS_EINVAL (-1)   /* bad argument: nothing written */
#define TS_ENOMEM (-2)   /* an allocation failed, or the memory a call needs overflows size_t */
#define TS_EBUSY  (-3)   /* the context's workspace is in use by another call: nothing written */
/* Why the calling thread's most recent failing call failed: a static string naming the argument
 * and the rule it broke, e.g. "lda < K (A's row stride)", "C overlaps A"; "" before any failure.
 * Successful calls leave it as it is (like errno). Per thread (one slot for the process when
 * built with TS_NO_THREADS). */
const char *ts_last_error(void);

/* ---- CPU features and dispatch -------------------------------------------------------- */
#define TS_FEAT_DOTPROD 1u
#define TS_FEAT_I8MM    2u
#define TS_FEAT_BF16    4u
#define TS_FEAT_FP16    8u    /* FEAT_FP16 half-precision arithmetic (Linux asimdhp) */
#define TS_FEAT_FHM     16u   /* FEAT_FHM fmlal/fmlal2 (Linux asimdfhm) */
/* FEAT_SME: streaming mode and ZA (the ARCH=v92 SME kernels, preferred to every other path of
 * f32, bf16, f16f32, int8 and uint8 x int8 where the build has them). Linux: HWCAP2_SME and the
 * outer products they use, HWCAP2_SME_F32F32, _B16F32, _F16F32, _I8I32 (all mandatory with
 * FEAT_SME, required anyway); Apple: hw.optional.arm.FEAT_SME; Windows: never. The tiles are
 * sized by the streaming vector length, read (RDSVL) at every selection. */
#define TS_FEAT_SME     32u
unsigned ts_cpu_features(void);               /* detected at run time, cached */
void     ts_set_feature_mask(unsigned mask);  /* dispatch uses detected & mask; ~0u restores */

/* ---- GEMM: C = A(MxK) * B(KxN) ------------------------------------------------------
 * Every GEMM (plain, prepacked, _ctx): lda >= K, ldb >= N, ldc >= N, else TS_EINVAL.
 * M = 0 or N = 0 is an empty call: TS_OK, nothing read or written (once the strides pass).
 * K = 0 gives the empty sum: C = 0 (with an epilogue: the epilogue of 0).
 * Floating-point inputs are not checked: NaN / Inf in A or B propagate as IEEE arithmetic
 * says (only the qdyn path below rejects them, because it quantises). */
int ts_gemm_f32 (size_t M, size_t N, size_t K, const float  *A, size_t lda,
                 const float  *B, size_t ldb, float   *C, size_t ldc);
/* A and B rounded to bf16 (round to nearest even), products summed in fp32 (bfmmla where the CPU has it).
 * The products of bf16 values are exact in fp32; how they are summed depends on the path, so
 * results differ bitwise between CPUs (and feature masks): bfmmla / bfdot / SME BFMOPA follow
 * the Arm ARM's BFDotAdd without FEAT_EBF16 (two products summed, then added: each sum rounded
 * to odd, FPCR's rounding mode ignored, subnormal inputs and results flushed to zero), the
 * Armv8.0 path adds each product with an fp32 fmla (round to nearest even, subnormals kept).
 * On every path |C - S| <= (K+1) * 2^-23 * sum_k |a_k*b_k| (to first order; tested), S the
 * exact sum of the bf16-rounded products, plus the flushed subnormals on the bf16 paths. */
int ts_gemm_bf16(size_t M, size_t N, size_t K, const float  *A, size_t lda,
                 const float  *B, size_t ldb, float   *C, size_t ldc);
int ts_gemm_s8s32(size_t M, size_t N, size_t K, const int8_t *A, size_t lda,
                  const int8_t *B, size_t ldb, int32_t *C, size_t ldc);   /* exact, K bound below */

/* fp32 GEMM with a fused bias and clamp (an FC / conv layer's bias and ReLU / ReLU6): per
 * element, x the ts_gemm_f32 result (the same bits: the same kernels' fused multiply-add
 * chain over k), in this fp32 order, one rounding per step (no contraction):
 *   y = x + bias[n]          (bias NULL: y = x + -0.0f, which is x under round to nearest)
 *   z = max(y, cmin)         (FMAX: a NaN y stays NaN; +0 counts above -0)
 *   C[m][n] = min(z, cmax)   (FMIN: of two zeros the negative one)
 * cmin = -INFINITY, cmax = INFINITY: no clamp. Where the kernel path has fused _biasclamp
 * kernels (fmla fp32, fmopa) they store C directly on the last K block; elsewhere (the GEMV /
 * small-M kernels, a path without them) the driver applies the same three operations to
 * each tile after it, so every path returns the bits of ts_gemm_f32 followed by those steps
 * in C. TS_EINVAL (nothing written) as ts_gemm_f32, and for cmin > cmax or a NaN bound, and
 * for C overlapping bias (N floats). bias is not checked: a NaN or infinity propagates. */
int ts_gemm_f32_bias_clamp(size_t M, size_t N, size_t K, const float *A, size_t lda,
                           const float *B, size_t ldb, const float *bias, float cmin,
                           float cmax, float *C, size_t ldc);
/* The same three steps on the ts_gemm_bf16 result x (the same bits: the path's kernels, fused
 * _biasclamp ones on the bfmmla and SME bfmopa paths, the fp32 fmla ones on Armv8.0). */
int ts_gemm_bf16_bias_clamp(size_t M, size_t N, size_t K, const float *A, size_t lda,
                            const float *B, size_t ldb, const float *bias, float cmin,
                            float cmax, float *C, size_t ldc);

/* ---- fp16 GEMM (IEEE binary16 as uint16_t bits, so plain C99 callers can use it) -------
 * ts_gemm_f16: fp16 in and out, fp16 accumulation (fmla .8h, FEAT_FP16): each k adds one
 * fused multiply-add rounded to fp16, so |C - exact| <= gamma_K * sum_k |A[m][k]*B[k][n]|
 * (gamma_K = K*u/(1-K*u), u = 2^-11) plus K * 2^-25 for underflow; a partial sum beyond
 * 65504 becomes infinity even when the final sum is in range.
 * Without FEAT_FP16 (Armv8.0 cores, or the feature masked): A and B converted to fp32
 * (exact), the fp32 fmla kernel accumulates in fp32 and each result is rounded once to fp16
 * (RNE): |C - exact| <= u * |exact| + gamma_K(2^-24) * sum|A*B| (+ 2^-25), tighter than the
 * fp16 path, and only a final sum beyond 65504 overflows. The two paths therefore differ by
 * the accumulation precision alone (same inputs, same order of k); results are not bitwise
 * equal across cores with and without fp16.
 * ts_gemm_f16f32: fp16 in, fp32 accumulation and output (fmlal/fmlal2, FEAT_FHM; products
 * exact in fp32); without FHM the fp32 fmla kernel on the converted (exact) values: the same
 * sums up to fp32 rounding (fmlal rounds each term once, fmla too: both gamma_K(2^-24)).
 * With SME (v92, FMOPA (widening, 2-way)) each k pair (2j, 2j+1) is one step: its two
 * products summed, then added to the accumulator (QEMU 7.2 rounds the pair sum to fp32, then
 * the add): at most one rounding per term, so within the same bound, but not bitwise equal to
 * the fmlal / fmla paths.
 * NaN inputs propagate (a NaN result); inf * 0 gives NaN. */
int ts_gemm_f16(size_t M, size_t N, size_t K, const uint16_t *A, size_t lda,
                const uint16_t *B, size_t ldb, uint16_t *C, size_t ldc);
int ts_gemm_f16f32(size_t M, size_t N, size_t K, const uint16_t *A, size_t lda,
                   const uint16_t *B, size_t ldb, float *C, size_t ldc);
/* ts_gemm_f32_bias_clamp's three steps (bias, FMAX, FMIN; its argument rules) on the
 * ts_gemm_f16f32 result x (the same bits: the path's kernels, fused _biasclamp ones on the
 * fmlal and SME fmopa paths, the fp32 fmla ones of the fallback without FHM). bias, cmin, cmax
 * and C are fp32. */
int ts_gemm_f16f32_bias_clamp(size_t M, size_t N, size_t K, const uint16_t *A, size_t lda,
                              const uint16_t *B, size_t ldb, const float *bias, float cmin,
                              float cmax, float *C, size_t ldc);

/* ---- K bounds of the integer GEMMs (inclusive) -----------------------------------------
 * Integer results are exact: a call whose K lets the 32-bit accumulator of some output
 * overflow for some input returns TS_EINVAL (nothing written). Per type, the largest
 * |term| one k adds (bias excluded; it is added after, modulo 2^32 as in TFLite):
 *   s8s32    A, B in -128..127: a*b in -16256..16384, so K*16384 <= 2^31-1: K <= 131071.
 *   s8       (A - a_zero_point) spans -255..255 (a_zero_point in -128..127), B -128..127:
 *            |term| <= 255*128 = 32640, K*32640 <= 2^31-1: K <= 65793. Also conv2d_s8 with
 *            K = k_h*k_w*in_c, and ts_gemm_s8_prepacked with the handle's K.
 *   u8s8s32  A 0..255, B -128..127: |term| <= 32640: K <= 65793.
 *   u8u32    A, B 0..255: term <= 65025 summed into uint32, K*65025 <= 2^32-1: K <= 66051.
 *   u8       (A - a_zero_point) spans -255..255 (a_zero_point in 0..255), B -128..127: 65793.
 * Partial sums: the kernels add 1 (smlal), 4 (sdot/udot) or 8 (smmla/ummla/usmmla) products
 * to a 32-bit lane at a time, and the lanes (and the drivers' zero-point correction
 * sum A*B - a_zero_point * sum B; the u8s8 sdot path's sum (A-128)*B + 128 * sum B) wrap
 * modulo 2^32 like the instructions do; a sum of wrapping
 * terms is exact whenever the true total fits, whatever the order, so the bound on the total
 * is the only one. Each bound is tight: at MAX_K + 1, constant extreme inputs (e.g. s8s32: A and
 * B all -128) would overflow.
 * A handle from ts_pack_b_s8 / ts_pack_b_u8s8 / ts_pack_b_u8u32 has K up to the raw type's
 * bound; the quantized *_prepacked call checks its own. */
#define TS_GEMM_S8S32_MAX_K   131071
#define TS_GEMM_S8_MAX_K      65793
#define TS_GEMM_U8S8S32_MAX_K 65793
#define TS_GEMM_U8U32_MAX_K   66051
#define TS_GEMM_U8_MAX_K      65793

/* ---- int8 quantized GEMM (TFLite semantics, one deliberate exception) -------------------
 * Bit-identical to TFLite's MultiplyByQuantizedMultiplier whenever TFLite's int32
 * intermediates do not overflow. Where they do, TFLite's result is undefined behaviour and
 * tilesmith saturates instead. The case that matters: a positive shift with |x| * 2^shift
 * beyond int32 (x = accumulator + bias). TFLite computes x * (1 << left_shift), which wraps
 * on common compilers: x = {1 << 24, 9000000}, multiplier 1 << 30, shift 8, c_zp 0, clamp
 * -128..127 gives {0, -128} there; tilesmith saturates x * 2^shift to INT32_MAX and gives
 * {127, 127}, the clamp of the true (huge positive) value. (Likewise y + c_zero_point and the
 * single-rounding result saturate: those only differ where the output clamps anyway.) */
#define TS_ROUND_DOUBLE 0   /* gemmlowp SaturatingRoundingDoublingHighMul + RoundingDivideByPOT (TFLite default) */
#define TS_ROUND_SINGLE 1   /* TFLITE_SINGLE_ROUNDING */

typedef struct {
    int32_t a_zero_point;        /* A zero point, -128..127 (uint8 A: 0..255); B symmetric */
    int32_t c_zero_point;        /* output zero point, -128..127 (uint8 output: 0..255) */
    const int32_t *bias;         /* N values or NULL */
    const int32_t *multiplier;   /* Q31, >= 0; N values if per_channel else 1 */
    const int32_t *shift;        /* TFLite exponent -31..30: >0 left shift, <0 right shift; same count */
    int per_channel;             /* 1: multiplier and shift per column; 0: one for all */
    int32_t act_min, act_max;    /* -128 <= act_min <= act_max <= 127 (uint8 output: 0..255) */
    int rounding;                /* TS_ROUND_DOUBLE (0, default) or TS_ROUND_SINGLE */
} ts_quant;

/* C[m][n] = clamp(MultiplyByQuantizedMultiplier(sum_k (A[m][k]-a_zp)*B[k][n] + bias[n],
 *                 multiplier[n], shift[n]) + c_zp, act_min, act_max)
 * (TFLite int8 semantics, saturating where TFLite's int32 arithmetic overflows: see above) */
int ts_gemm_s8(size_t M, size_t N, size_t K, const int8_t *A, size_t lda,
               const int8_t *B, size_t ldb, const ts_quant *q, int8_t *C, size_t ldc);
/* uint8 A x int8 B (ONNX Runtime QLinearMatMul / MatMulInteger with a uint8 activation and
 * symmetric int8 weights): exact int32 results (usmmla where the CPU has i8mm; with dotprod
 * only, sdot on A - 128 plus 128 * sum_k B[k][n]: the same bits). */
int ts_gemm_u8s8s32(size_t M, size_t N, size_t K, const uint8_t *A, size_t lda,
                    const int8_t *B, size_t ldb, int32_t *C, size_t ldc);
/* uint8 A x uint8 B: exact uint32 results (ummla with i8mm, udot with dotprod). */
int ts_gemm_u8u32(size_t M, size_t N, size_t K, const uint8_t *A, size_t lda,
                  const uint8_t *B, size_t ldb, uint32_t *C, size_t ldc);
/* The quantized uint8 form (ONNX Runtime QLinearMatMul semantics with int8 symmetric weights):
 *   C[m][n] = clamp(MultiplyByQuantizedMultiplier(sum_k (A[m][k]-a_zp)*B[k][n] + bias[n],
 *                   multiplier[n], shift[n]) + c_zp, act_min, act_max)
 * the same requantization as ts_gemm_s8, with a_zero_point, c_zero_point, act_min and
 * act_max in 0..255 (0 <= act_min <= act_max <= 255). */
int ts_gemm_u8(size_t M, size_t N, size_t K, const uint8_t *A, size_t lda,
               const int8_t *B, size_t ldb, const ts_quant *q, uint8_t *C, size_t ldc);
/* same epilogue on given int32 accumulators (a_zero_point ignored); C must not overlap acc.
 * TFLite int8 semantics with the saturating exception described above. */
int ts_requantize(size_t M, size_t N, const int32_t *acc, size_t ld_acc,
                  const ts_quant *q, int8_t *C, size_t ldc);

/* ---- conv2d (int8, NHWC input, OHWI filter, NHWC output) ------------------------------ */
typedef struct {
    size_t batch, in_h, in_w, in_c, out_c, k_h, k_w;
    size_t stride_h, stride_w, dilation_h, dilation_w;
    size_t pad_top, pad_left, pad_bottom, pad_right;
} ts_conv2d;
/* A valid conv has batch, in_c, out_c >= 1 and out_h, out_w >= 1 (below); any other -> TS_EINVAL
 * from every conv call (batch 0 is not an empty call, unlike a GEMM with M = 0). */
size_t ts_conv2d_out_h(const ts_conv2d *c);
size_t ts_conv2d_out_w(const ts_conv2d *c);
/* Bytes of workspace ts_conv2d_s8 needs (also enough for _prepacked, which needs less:
 * ts_conv2d_s8_prepacked_workspace_size; the largest over this build's int8 kernels; 0 for an
 * invalid conv): the packed filter and the blocked loop's work area (per task
 * one packed block of A, the requantization staging, one padding row of in_c bytes), and for a
 * padded conv whose padded input (batch x (pad_top+in_h+pad_bottom) x (pad_left+in_w+pad_right)
 * x in_c bytes) is at most a quarter of its im2col matrix (M x K bytes) a copy of the input with
 * the padding made real, which A is then packed from. The im2col matrix is never formed
 * (implicit im2col: A is packed straight from the input or that copy). */
size_t ts_conv2d_s8_workspace_size(const ts_conv2d *c);
/* input NHWC, filter OHWI (TFLite), output NHWC; q per tensor or per output channel
 * (q->per_channel, out_c values); padded taps equal a_zero_point.
 * output and workspace must not overlap each other, input, filter or q (the struct or its arrays).
 * workspace: at least ts_conv2d_s8_workspace_size(c) bytes, any alignment (NULL: TS_EINVAL).
 * Taken on trust: without a size argument the call cannot check it, and it writes up to that
 * many bytes, so a smaller buffer is overrun. To have the size checked, call
 * ts_conv2d_s8_ctx(NULL, c, input, filter, q, output, workspace, workspace_bytes) instead: the
 * same call (a NULL context: one thread, the global feature mask), TS_EINVAL when
 * workspace_bytes < ts_conv2d_s8_workspace_size(c). */
int ts_conv2d_s8(const ts_conv2d *c, const int8_t *input, const int8_t *filter,
                 const ts_quant *q, int8_t *output, void *workspace);
/* The im2col matrix, as a utility (ts_conv2d_s8 does not use it):
 * cols: [batch*out_h*out_w][k_h*k_w*in_c], inner order (kh, kw, ic); padded taps = pad_value;
 * cols must not overlap input.
 * out_h/out_w: (in + pad_a + pad_b - dilation*(k-1) - 1) / stride + 1, or 0 when that direction's
 * geometry is invalid (zero size/stride/dilation, dilated kernel larger than the padded input). */
int ts_im2col_s8(const ts_conv2d *c, const int8_t *input, int8_t pad_value, int8_t *cols);

/* ---- raw MMLA accumulators -> row-major ------------------------------------------------
 * For code that runs smmla/ummla/usmmla (int32) or bfmmla (fp32) itself. Each accumulator
 * register holds a 2x2 block of C, lanes (r0c0, r0c1, r1c0, r1c1). `tiles` holds the blocks of a
 * rows x cols matrix (both even) as stored registers, in (row-pair, column-pair) order:
 *   tiles[(rp*(cols/2) + cp)*4 + 2*i + j] = out[(2*rp + i)*ldo + 2*cp + j]   (i, j in 0..1)
 * Writes rows x cols of out (row stride ldo >= cols elements); tiles and out must not overlap.
 * TS_EINVAL (nothing written) on odd rows/cols, NULL pointers, ldo < cols, overlap. */
int ts_uzp_mmla_s32(const int32_t *tiles, size_t rows, size_t cols, int32_t *out, size_t ldo);
int ts_uzp_mmla_f32(const float *tiles, size_t rows, size_t cols, float *out, size_t ldo);

/* ---- prepacked weights: pack B (or a conv filter) once, run many times -------------------
 * A ts_packed_b holds B (K x N) in the panel layout of the kernel the dispatcher chose when it
 * was packed, and remembers that kernel and the GEMM type. Dispatch picks a kernel per call,
 * from the CPU features, the feature mask and the core the calling thread runs on (a build may
 * hold a kernel variant per core class, e.g. out-of-order vs in-order, see README "C API and
 * runtime dispatch"). A handle runs with the kernel chosen for the call when that kernel reads
 * the same B panels (same tile width hp, k-step lp and element conversion; the tile height ep
 * may differ). A *_prepacked call returns TS_EINVAL (nothing written) when the handle was
 * packed for another GEMM type or when the kernel chosen now reads another B layout (e.g.
 * after ts_set_feature_mask, or on a core of another class whose variant has another tile
 * width; ts_packed_kernel and ts_gemm_kernel name both): pack again.
 * An SME handle's layout is that of the streaming vector length it was packed at: after the
 * SVL changed (Linux prctl PR_SME_SET_VL) it is another kernel's layout, TS_EINVAL likewise.
 * Handles are read-only while in use: any number of threads may share one.
 * Handle checks: every handle carries a type tag, set when it is made and overwritten when it
 * is freed; the types are a GEMM handle (ts_pack_b_*, the qdyn ts_pack_b_qs8 / _qs4), a conv
 * filter (ts_pack_conv2d_filter_s8: ts_conv2d_s8_prepacked only, and only it takes one), a
 * ts_packed_a and a ts_context. An entry point given a handle of another type (a ts_packed_a
 * cast to ts_packed_b, a conv filter passed to ts_gemm_s8_prepacked or a ts_pack_b_s8 handle
 * to ts_conv2d_s8_prepacked), or a freed one whose memory still holds the overwritten tag,
 * returns TS_EINVAL with nothing written (the name queries NULL, the size queries 0), and
 * ts_last_error() names it ("B is not a live ts_packed_b of ts_pack_b_* (another handle type,
 * e.g. a conv filter's, or freed)"); ts_packed_free, ts_packed_a_free and ts_context_free
 * ignore such a pointer (no double free). Memory the allocator has reused may hold anything:
 * using a freed handle stays undefined behaviour, the check only catches the common mistakes.
 * A handle of the right type but another GEMM type (a qdyn handle to ts_gemm_f32_prepacked, an
 * f32 one to ts_gemm_bf16_prepacked) is TS_EINVAL as before.
 * GEMV and small M: when the chosen kernel has a GEMV / small-M kernel (every NEON kernel of
 * the build, see ts_kernels.h *_GEMV; on an SME core of ARCH=v92 a NEON one beside the SME
 * tile: fp32 fmla, bf16 bfmmla, int8 smmla, uint8 x int8 sudot — none for fp16 -> fp32, and
 * none for fp32 at streaming vector lengths of 1024 bits and more, where the SME tile is
 * modeled faster at every N), the handle also holds B in that kernel's wider panels, so one
 * handle serves M = 1 decode and M = 128 prefill alike: packed B takes twice the memory.
 * A call with M <= the GEMV kernel's max_m (1; 2 for the mmla kernels) runs it unless B is so
 * narrow (small N) that the GEMM tile needs fewer instructions (on an SME path: fewer modeled
 * cycles, so wide B at large vector lengths keeps the SME tile; README "SME kernels"); unpacked
 * calls choose the same way and pack only the layout they run. A context can ask its packers
 * for one layout only (ts_context_set_pack_layouts: half the memory). Both kernels compute each
 * result with the same operations over the same k order: every result, fp32 included, is
 * bit-identical whichever of them runs — except that the SME fp32 tile (FMOPA) makes every NaN
 * result the default NaN, which the fmla GEMV kernel does not (it propagates an input NaN
 * unless FPCR.DN is set): on an SME path an fp32 NaN result may differ in its bits, never in
 * being a NaN. */
typedef struct ts_packed_b ts_packed_b;
/* Each returns TS_OK and *out, or TS_EINVAL / TS_ENOMEM and leaves *out untouched. */
int ts_pack_b_f32 (size_t K, size_t N, const float  *B, size_t ldb, ts_packed_b **out);
int ts_pack_b_bf16(size_t K, size_t N, const float  *B, size_t ldb, ts_packed_b **out);
int ts_pack_b_f16 (size_t K, size_t N, const uint16_t *B, size_t ldb, ts_packed_b **out);
int ts_pack_b_f16f32(size_t K, size_t N, const uint16_t *B, size_t ldb, ts_packed_b **out);
/* for ts_gemm_s8s32_prepacked and ts_gemm_s8_prepacked (keeps the column sums of B) */
int ts_pack_b_s8  (size_t K, size_t N, const int8_t *B, size_t ldb, ts_packed_b **out);
/* for ts_gemm_u8s8s32_prepacked and ts_gemm_u8_prepacked (int8 B, keeps its column sums) */
int ts_pack_b_u8s8 (size_t K, size_t N, const int8_t *B, size_t ldb, ts_packed_b **out);
/* for ts_gemm_u8u32_prepacked */
int ts_pack_b_u8u32(size_t K, size_t N, const uint8_t *B, size_t ldb, ts_packed_b **out);
/* B given N x K ("out x in": row n holds the K weights of output column n, B[n*ldb + k], the
 * layout of TFLite FULLY_CONNECTED and PyTorch nn.Linear weights), ldb >= K: the same handle
 * as packing its transpose with the K x N packer above (the same bytes, so the same results,
 * bit for bit, with every *_prepacked call of that type). (N, K) in the order of the matrix,
 * like ts_pack_b_qs8. TS_EINVAL (nothing allocated, *out untouched) for B NULL with N and K
 * > 0, ldb < K, a span (N, K, ldb) beyond size_t, out NULL, K beyond the type's bound. */
int ts_pack_b_f32_nk   (size_t N, size_t K, const float *B, size_t ldb, ts_packed_b **out);
int ts_pack_b_bf16_nk  (size_t N, size_t K, const float *B, size_t ldb, ts_packed_b **out);
int ts_pack_b_f16_nk   (size_t N, size_t K, const uint16_t *B, size_t ldb, ts_packed_b **out);
int ts_pack_b_f16f32_nk(size_t N, size_t K, const uint16_t *B, size_t ldb, ts_packed_b **out);
int ts_pack_b_s8_nk    (size_t N, size_t K, const int8_t *B, size_t ldb, ts_packed_b **out);
int ts_pack_b_u8s8_nk  (size_t N, size_t K, const int8_t *B, size_t ldb, ts_packed_b **out);
int ts_pack_b_u8u32_nk (size_t N, size_t K, const uint8_t *B, size_t ldb, ts_packed_b **out);
/* filter OHWI of conv c as B (K = k_h*k_w*in_c, N = out_c), for ts_conv2d_s8_prepacked */
int ts_pack_conv2d_filter_s8(const ts_conv2d *c, const int8_t *filter, ts_packed_b **out);
void ts_packed_free(ts_packed_b *b);      /* NULL is a no-op */

/* As the functions above with B = the packed handle (its K and N); C (output, workspace)
 * must not overlap the handle's memory either. */
int ts_gemm_f32_prepacked  (size_t M, const float  *A, size_t lda, const ts_packed_b *B,
                            float   *C, size_t ldc);
int ts_gemm_bf16_prepacked (size_t M, const float  *A, size_t lda, const ts_packed_b *B,
                            float   *C, size_t ldc);
/* ts_gemm_f32_bias_clamp with B a ts_pack_b_f32 / ts_pack_b_f32_nk handle */
int ts_gemm_f32_bias_clamp_prepacked(size_t M, const float *A, size_t lda,
                                     const ts_packed_b *B, const float *bias, float cmin,
                                     float cmax, float *C, size_t ldc);
/* ts_gemm_bf16_bias_clamp with B a ts_pack_b_bf16 / ts_pack_b_bf16_nk handle */
int ts_gemm_bf16_bias_clamp_prepacked(size_t M, const float *A, size_t lda,
                                      const ts_packed_b *B, const float *bias, float cmin,
                                      float cmax, float *C, size_t ldc);
int ts_gemm_f16_prepacked  (size_t M, const uint16_t *A, size_t lda, const ts_packed_b *B,
                            uint16_t *C, size_t ldc);
int ts_gemm_f16f32_prepacked(size_t M, const uint16_t *A, size_t lda, const ts_packed_b *B,
                             float *C, size_t ldc);
/* ts_gemm_f16f32_bias_clamp with B a ts_pack_b_f16f32 / ts_pack_b_f16f32_nk handle */
int ts_gemm_f16f32_bias_clamp_prepacked(size_t M, const uint16_t *A, size_t lda,
                                        const ts_packed_b *B, const float *bias, float cmin,
                                        float cmax, float *C, size_t ldc);
int ts_gemm_s8s32_prepacked(size_t M, const int8_t *A, size_t lda, const ts_packed_b *B,
                            int32_t *C, size_t ldc);
int ts_gemm_s8_prepacked   (size_t M, const int8_t *A, size_t lda, const ts_packed_b *B,
                            const ts_quant *q, int8_t *C, size_t ldc);
int ts_gemm_u8s8s32_prepacked(size_t M, const uint8_t *A, size_t lda, const ts_packed_b *B,
                              int32_t *C, size_t ldc);
int ts_gemm_u8u32_prepacked  (size_t M, const uint8_t *A, size_t lda, const ts_packed_b *B,
                              uint32_t *C, size_t ldc);
int ts_gemm_u8_prepacked     (size_t M, const uint8_t *A, size_t lda, const ts_packed_b *B,
                              const ts_quant *q, uint8_t *C, size_t ldc);
/* Bytes of workspace a prepacked conv needs: ts_conv2d_s8_workspace_size without the packed
 * filter (the handle holds it), i.e. the blocked loop's work area and the padded copy of the
 * input where the conv makes one; the largest over this build's int8 kernels, 0 for an invalid
 * conv. (ts_conv2d_s8_workspace_size(c), larger, is still enough.) E.g. 3x3 512->512 on 14x14
 * on ARCH=v86: 1,432,143 bytes instead of 5,774,415 (most of it the packed filter, int16-widened
 * on the Armv8.0 path). */
size_t ts_conv2d_s8_prepacked_workspace_size(const ts_conv2d *c);
/* workspace: at least ts_conv2d_s8_prepacked_workspace_size(c) bytes, any alignment (NULL:
 * TS_EINVAL). Taken on trust, as ts_conv2d_s8's: a smaller buffer is overrun; the checked form
 * is ts_conv2d_s8_prepacked_ctx(NULL, ..., workspace, workspace_bytes). filter must come
 * from ts_pack_conv2d_filter_s8(_ctx) for the same out_c, k_h, k_w and in_c as c (TS_EINVAL
 * naming the one that differs; the other geometry - input size, stride, padding, dilation -
 * may differ, as the packed filter does not depend on it). */
int ts_conv2d_s8_prepacked(const ts_conv2d *c, const int8_t *input,
                           const ts_packed_b *filter, const ts_quant *q, int8_t *output,
                           void *workspace);

/* ---- dynamically quantised int8 activations x int8 / int4 weights -> fp32 (LLM inference) --
 * Semantics (every dispatch path and thread count returns the same bits):
 * All fp32 arithmetic is IEEE single precision under the calling thread's FPCR, like any C
 * code: round-to-nearest-even and no flush-to-zero unless the caller changed them (the
 * accuracy bound below assumes those defaults; under another rounding mode every path and
 * thread count still returns the same bits, not the same bits as under the default). It is
 * evaluated unfused (no FMA contraction; the drivers are built with -ffp-contract=off and write
 * one operation per statement), and rint() below is round half to even whatever the current
 * rounding mode.
 *
 * Activation quantisation, per row m of A (M x K fp32), in this order:
 *   lo = min(0, min_k A[m][k]),  hi = max(0, max_k A[m][k])
 *   scale[m] = max((hi / 255) - (lo / 255), FLT_MIN)   (the span and 1/scale cannot overflow;
 *                                                        an all-zero row gets FLT_MIN)
 *   inv = 1 / scale[m]
 *   zp[m] = clamp(rint(-128 - (lo * inv)), -128, 127)
 *   qa[m][k] = clamp(rint(A[m][k] * inv) + zp[m], -128, 127)      (the + in integers)
 * A NaN or infinity anywhere in the M x K part of A -> TS_EINVAL, nothing written.
 *
 * Weights: the N x K ("out x in") layout of PyTorch / GGML checkpoints, symmetric.
 *   qs8: int8 (-128 allowed) B[n*ldb + k], one fp32 scale per output channel n.
 *   qs4: int4 -8..7, two per byte: element k of row n in byte n*ldb_bytes + k/2, the low nibble
 *        for even k, the high nibble for odd k (two's complement nibbles); one fp32 scale per
 *        channel (bl = 0: one block of all K, scales[n]) or per block of bl consecutive k
 *        (bl a multiple of 32 dividing K: scales[n*(K/bl) + b], row-major N x K/bl).
 *   Scales may be any finite value (negative or zero included); NaN / Inf -> TS_EINVAL.
 *   GGML's Q4_0 (blocks of 32 k, bl = 32) orders and codes its nibbles otherwise: byte j of a
 *   block holds elements j (low nibble) and j + 16 (high), each as v + 8. Its data becomes qs4
 *   by taking, for byte i of the block, elements 2i (low) and 2i + 1 (high), each nibble XOR 8
 *   (v + 8 -> two's complement v), and its fp16 scales as fp32. Q8_0's per-block scales have
 *   no qs8 form (qs8 is per channel): ts_quantize_qs8 on the dequantised weights.
 *   Each handle (packed B, packed A) copies what it needs: inputs may be freed after packing.
 *
 * Result, with the blocks b = 0 .. nb-1 of bl k each (per channel / qs8: nb = 1, bl = K):
 *   acc_b[m][n] = sum_{k in block b} (qa[m][k] - zp[m]) * qb[n][k]        (exact int32)
 *   per channel (qs8, qs4 with bl = 0):
 *     t = scale[m] * wscale[n];   y = t * (float)acc_0[m][n]             ((float): RNE)
 *   scale blocks (qs4 with bl > 0: the row scale once, after the blocks):
 *     v_b = wscale[n][b] * (float)acc_b[m][n]
 *     s = v_0;  s = s + v_b for b = 1 .. nb-1 in increasing b
 *     y = scale[m] * s
 *   x = y + bias[n]     (skipped when bias is NULL: x = y)
 *   C[m][n] = min(max(x, cmin), cmax)                   (max, then min; cmin <= cmax required)
 *   as comparisons: max(x, cmin) = x < cmin ? cmin : x, min(z, cmax) = z > cmax ? cmax : z, so
 *   a -0 x stays -0 against a +0 bound (ReLU, cmin = 0: -0 where acc is 0 and the scale is
 *   negative), unlike the FMAX / FMIN of ts_gemm_f32_bias_clamp (the same on every path)
 * The block sum must fit int32 for every input: |term| <= 255*128 (qs8) or 255*8 (qs4), so
 * qs8 needs K <= TS_QDYN_S8_MAX_K and qs4 needs its block length (bl, or K when bl = 0) <=
 * TS_QDYN_S4_MAX_BL; larger -> TS_EINVAL. The kernels compute sum qa*qb and subtract
 * zp[m] * sum_k qb[n][k] (per block) modulo 2^32: exact whenever the true block sum fits.
 * Accuracy (tested): with w[n][k] = wscale[n][b] * qb[n][k], u_b = scale[m] * wscale[n][b] *
 * acc_b[m][n] (exact) and C64 = clamp(sum_k A[m][k] * w[n][k] + bias[n]) in float64,
 *   |C - C64| <= sum_k (1.5 * scale[m] + 2^-22 * |A[m][k]|) * |w[n][k]|
 *                + (nb + 3) * 2^-23 * (sum_b |u_b| + |bias[n]|)
 * (the quantisation step of A, one extra step where qa clamps, the rounding of A * inv; then
 * the fp32 roundings of the epilogue). fp32 overflow of the epilogue gives +-Inf (NaN where
 * Inf * 0), only where the float64 value is beyond FLT_MAX too, or (scale blocks) where an
 * intermediate wscale[n][b] * acc_b or partial sum s is.
 *
 * ctx: the execution context (below: threads, workspace, feature mask); NULL = one thread,
 * malloc, the global mask. The ep-row strips x hp-column panels of C are split over its threads;
 * every scale block's int32 sum completes inside one kernel call, so results are bit-identical
 * for every thread count and pool. A handle is tied to the path its ctx (or NULL) picked.
 * Errors: TS_EINVAL (NULL handle or output, NULL A or scales, NaN/Inf input, K = 0 (packing
 * B or A; N = 0 and M = 0 are empty calls), bad bl, K bound,
 * cmin > cmax or NaN bounds, NaN / Inf bias, C overlapping an input, a handle packed for another
 * path than ctx picks now, ctx's workspace smaller than this call needs for its handle and M
 * (ts_context_workspace_size(ctx, TS_GEMM_QDYN, M, N, K), the most any handle needs, is always
 * enough) or overlapping a buffer of the call), TS_ENOMEM; nothing is written to
 * C or *out on error. */
#define TS_QDYN_S8_MAX_K  65793     /* 65793 * 255 * 128 <= 2^31 - 1 < 65794 * 255 * 128 */
#define TS_QDYN_S4_MAX_BL 1052688   /* 1052688 * 255 * 8 <= 2^31 - 1 < 1052689 * 255 * 8 */
typedef struct ts_context ts_context;   /* execution context (below); NULL = defaults */
typedef struct ts_packed_a ts_packed_a;
/* N x K int8 weights with one scale per output channel. */
int ts_pack_b_qs8(size_t N, size_t K, const int8_t *B, size_t ldb, const float *scales,
                  ts_packed_b **out);
/* N x K int4 weights (bytes: ldb_bytes >= ceil(K/2)), per channel (bl = 0) or per block. */
int ts_pack_b_qs4(size_t N, size_t K, const uint8_t *B, size_t ldb_bytes, const float *scales,
                  size_t bl, ts_packed_b **out);
/* The same, packed for the kernel ctx's cpu / feature mask would choose (NULL: this thread's). */
int ts_pack_b_qs8_ctx(const ts_context *ctx, size_t N, size_t K, const int8_t *B, size_t ldb,
                      const float *scales, ts_packed_b **out);
int ts_pack_b_qs4_ctx(const ts_context *ctx, size_t N, size_t K, const uint8_t *B,
                      size_t ldb_bytes, const float *scales, size_t bl, ts_packed_b **out);
/* C (M x N, fp32) from fp32 A (M x K, K of the handle) as described above. */
int ts_gemm_qdyn_f32(const ts_context *ctx, size_t M, const float *A, size_t lda,
                     const ts_packed_b *B, const float *bias, float cmin, float cmax,
                     float *C, size_t ldc);
/* The activation quantisation alone (qa, scale, zp, per-row sums): share it across GEMMs with
 * the same A (Q/K/V projections). ts_gemm_qdyn_f32_packed_a is bit-identical to
 * ts_gemm_qdyn_f32 on the same A; the handle's K must equal B's. */
int ts_pack_a_qdyn(size_t M, size_t K, const float *A, size_t lda, ts_packed_a **out);
void ts_packed_a_free(ts_packed_a *a);   /* NULL is a no-op */
int ts_gemm_qdyn_f32_packed_a(const ts_context *ctx, const ts_packed_a *A,
                              const ts_packed_b *B, const float *bias, float cmin, float cmax,
                              float *C, size_t ldc);
/* Symbol of the kernel ts_gemm_qdyn_f32(ctx, M, ..., B, ...) (or _packed_a with M rows) runs
 * now: the handle's kernel with the fp32 epilogue inside (ts_packed_kernel), or for M <= 4 on
 * an int4 per-channel handle the path's decode kernel when it has one; for a handle without
 * such a kernel (int8 weights and int4 scale blocks on the dotprod / Armv8.0 paths, a block
 * beyond the kernels' bound) the path's raw int8 kernel, the epilogue in C. NULL for a NULL or
 * non-qdyn handle, for M = 0, and where the call would return TS_EINVAL for the handle (packed
 * for a path whose layout ctx's choice does not read). */
const char *ts_gemm_qdyn_kernel(const ts_context *ctx, const ts_packed_b *B, size_t M);
/* Weight quantisers (fp32 N x K, row stride ldw; finite values, else TS_EINVAL):
 *   qs8: per row n, amax = max_k |W|, scale = amax / 127 (amax = 0: 1),
 *        q = clamp(rint(W / scale), -127, 127); q rows of K bytes, scales N.
 *   qs4: per row (bl = 0) or per block of bl k (bl a multiple of 32 dividing K): amax, scale =
 *        amax / 7 (amax = 0: 1), q = clamp(rint(W / scale), -8, 7), packed as ts_pack_b_qs4
 *        reads it with rows of ceil(K/2) bytes; scales N or N x K/bl.
 *   A zero W gives q = 0 (also where amax / 127 or amax / 7 underflows to 0, where W / scale
 *   is +-Inf and clamps). */
int ts_quantize_qs8(size_t N, size_t K, const float *W, size_t ldw, int8_t *q, float *scales);
int ts_quantize_qs4(size_t N, size_t K, const float *W, size_t ldw, size_t bl, uint8_t *q,
                    float *scales);
/* ---- execution context: threads, workspace, feature mask, CPU --------------------------
 * A ts_context carries what an engine decides per call site: how work runs in parallel (its
 * own pool through ts_parallel_for_fn, or a built-in pthreads pool), a caller-owned workspace
 * (then no call allocates), a feature mask and a CPU choice. Every GEMM / conv2d entry point
 * has a _ctx twin taking the context first; a NULL context is today's behaviour (one thread,
 * malloc, the global feature mask). Results do not depend on the context's threads: integer
 * outputs are bit-identical and fp32 outputs identical (same order of operations) for every
 * thread count and pool. Setters must not run while a call uses the context; any number of
 * calls may share a context otherwise (the built-in pool runs one call's tasks at a time),
 * except that a workspace serves one call at a time: a call that finds the context's
 * workspace in use by another returns TS_EBUSY with nothing written (give each calling
 * thread its own context, or its own workspace).
 * A task run on another thread (the built-in pool's or the caller's) runs with the calling
 * thread's FPCR (rounding mode, flush-to-zero) and, on Linux with SME, its streaming vector
 * length (prctl PR_SME_SET_VL is per thread), and gives them back after the task. After fork()
 * (between calls) a context with a built-in pool still works in the child: its tasks run on
 * the calling thread (the workers are not copied); ts_context_free frees it.
 * Built with TS_NO_THREADS defined (no pthreads), ts_context_set_num_threads accepts 1 only.
 * The CPU choice picks the kernel variant: a CPU= name runs that name's core class's kernels
 * (its class variants where the build has them, else the generic ones; README "Per-core
 * kernel variants") on whatever core the call runs; "auto" (default,
 * and a NULL context) reads the running core's class per call (MIDR_EL1 on Linux / Android;
 * elsewhere the generic kernels). */
typedef void (*ts_task_fn)(void *arg, size_t task);
/* run task(arg, i) for every i in [0, n), on any threads; return when all are done */
typedef void (*ts_parallel_for_fn)(void *pool, size_t n, ts_task_fn task, void *arg);
int  ts_context_create(ts_context **out);                 /* TS_OK, TS_EINVAL (NULL), TS_ENOMEM */
void ts_context_free(ts_context *ctx);                    /* NULL is a no-op */
/* the caller's pool (fn NULL: back to one thread); replaces a built-in pool */
int  ts_context_set_parallel_for(ts_context *ctx, ts_parallel_for_fn fn, void *pool);
/* how many threads the caller's parallel_for runs at once (1..TS_MAX_THREADS; default 8): the
 * work is split into balanced shares for that many; kept across ts_context_set_parallel_for */
int  ts_context_set_pool_width(ts_context *ctx, unsigned n);
/* built-in pthreads pool of n threads (the calling thread is one of them; 1: no pool);
 * n in 1..TS_MAX_THREADS; replaces a caller's parallel_for */
int  ts_context_set_num_threads(ts_context *ctx, unsigned n);
int  ts_context_set_feature_mask(ts_context *ctx, unsigned mask);   /* as ts_set_feature_mask */
/* drop the context's own mask: its calls follow the global ts_set_feature_mask again (the
 * state of a new context); TS_EINVAL for NULL */
int  ts_context_clear_feature_mask(ts_context *ctx);
/* Which core's kernel variants (and, without ts_context_set_cache_sizes, cache blocks) the
 * context's calls run, whatever core they run on:
 *   "auto" (the default)  read MIDR_EL1 per call (Linux / Android, where the kernel emulates
 *                         the read: about a microsecond a call; elsewhere: "generic");
 *   "generic"             the generic kernels (what an unknown core gets);
 *   a core name           what run-time detection gives a core with that MIDR_EL1 part (its
 *                         class's kernels and the blocks of its modelled caches), no MIDR read:
 *     in-order:     cortex-a35, cortex-a53, cortex-a55, cortex-a510, cortex-a520;
 *     out-of-order: cortex-a57, cortex-a72, cortex-a73, cortex-a75, cortex-a76, cortex-a77,
 *                   cortex-a78, cortex-a710, cortex-a715, cortex-a720, cortex-x1, cortex-x2,
 *                   cortex-x3, cortex-x4, neoverse-n1, neoverse-n2, neoverse-v1, neoverse-v2.
 * (The make gen CPU= names other than generic are among them.) Features stay those detected
 * (and masked): a name picks the variant class, not the instructions. TS_EINVAL (context
 * unchanged) for ctx NULL, cpu NULL or any other string (exact, lower case). */
int  ts_context_set_cpu(ts_context *ctx, const char *cpu);
/* The L1D and L2 data-cache bytes of the cores the calls run on, for the cache blocks (the
 * K and M blocks of the macro-kernel); 0 (the default) for either: those of the core the call
 * runs on ("auto") or is named (ts_context_set_cpu) when the build models its caches
 * (gen/cores.py MEMORY), else the size the build's kernel path assumes, the smallest of its
 * core class (an out-of-order core gets blocks for Cortex-A710's 512 KB L2 although a
 * Neoverse N2 or V1 may have 1 MB, which needs fewer passes over B beyond L2). Not read from the system: an engine that knows its hardware sets
 * it (one core's private L2, or its share of a shared one). Outputs do not depend on the
 * sizes (the same kernels accumulate over k in the same order; fp32 identical), only the
 * memory traffic and the workspace (query ts_context_workspace_size after setting them). The
 * SME paths keep their blocks. TS_EINVAL (nothing changed) for ctx NULL, a size that is not 0
 * and outside TS_CACHE_MIN_BYTES .. TS_CACHE_MAX_BYTES, or an L2 smaller than the L1D. */
#define TS_CACHE_MIN_BYTES ((size_t)1 << 12)    /* 4 KiB */
#define TS_CACHE_MAX_BYTES ((size_t)1 << 30)    /* 1 GiB */
int  ts_context_set_cache_sizes(ts_context *ctx, size_t l1d_bytes, size_t l2_bytes);
/* What Linux says of core `cpu`'s L1D and L2 (/sys/devices/system/cpu/cpuN/cache), for
 * ts_context_set_cache_sizes; TS_OK, or TS_EINVAL (no such files, or not parsable; outputs
 * untouched). Read on request only: under an emulator or in a container the files describe
 * the host, and on a big.LITTLE system each core type has its own sizes (the caller knows
 * which cores its threads run on; a shared L2 is reported whole). */
int  ts_cache_sizes_sysfs(unsigned cpu, size_t *l1d_bytes, size_t *l2_bytes);
/* buf NULL (or bytes 0): calls allocate as without a context. Otherwise a call needing more
 * than `bytes` returns TS_EINVAL, nothing written; buf must not overlap a call's buffers. */
int  ts_context_set_workspace(ts_context *ctx, void *buf, size_t bytes);
/* Workspace bytes any _ctx GEMM of gemm_type (TS_GEMM_*) and this shape needs with this
 * context's threads, on any kernel path of the build (prepacked B and the quantized forms
 * included); 0 for an unknown type or on size_t overflow. ctx NULL: one thread. */
size_t ts_context_workspace_size(const ts_context *ctx, int gemm_type, size_t M, size_t N,
                                 size_t K);
/* The same for the *_prepacked calls of gemm_type (B a handle of K x N: no B panels packed in
 * the call, so the work area alone: at most ts_context_workspace_size, which stays enough).
 * E.g. int8, M = 1, N = 1000, K = 1280, one thread, ARCH=v86: 42,846 bytes instead of
 * 2,611,246 (M = 64: 444,094 instead of 3,028,622). Sized for handles of ctx's layouts
 * (ts_context_set_pack_layouts; NULL: both): a small-M call on a handle without the GEMV layout
 * runs the GEMM tile, whose work area is larger (the M = 1 example: 50,782 bytes), and with a
 * smaller workspace returns TS_EINVAL, nothing written. TS_GEMM_QDYN: as
 * ts_context_workspace_size (qdyn handles are always prepacked). */
size_t ts_context_workspace_size_prepacked(const ts_context *ctx, int gemm_type, size_t M,
                                           size_t N, size_t K);
#define TS_MAX_THREADS 256

/* The _ctx twins: as the functions without _ctx, run with ctx (NULL: as without). */
int ts_gemm_f32_ctx (const ts_context *ctx, size_t M, size_t N, size_t K, const float *A,
                     size_t lda, const float *B, size_t ldb, float *C, size_t ldc);
int ts_gemm_bf16_ctx(const ts_context *ctx, size_t M, size_t N, size_t K, const float *A,
                     size_t lda, const float *B, size_t ldb, float *C, size_t ldc);
int ts_gemm_f32_bias_clamp_ctx(const ts_context *ctx, size_t M, size_t N, size_t K,
                               const float *A, size_t lda, const float *B, size_t ldb,
                               const float *bias, float cmin, float cmax, float *C,
                               size_t ldc);
int ts_gemm_bf16_bias_clamp_ctx(const ts_context *ctx, size_t M, size_t N, size_t K,
                                const float *A, size_t lda, const float *B, size_t ldb,
                                const float *bias, float cmin, float cmax, float *C,
                                size_t ldc);
int ts_gemm_s8s32_ctx(const ts_context *ctx, size_t M, size_t N, size_t K, const int8_t *A,
                      size_t lda, const int8_t *B, size_t ldb, int32_t *C, size_t ldc);
int ts_gemm_s8_ctx(const ts_context *ctx, size_t M, size_t N, size_t K, const int8_t *A,
                   size_t lda, const int8_t *B, size_t ldb, const ts_quant *q, int8_t *C,
                   size_t ldc);
int ts_gemm_u8s8s32_ctx(const ts_context *ctx, size_t M, size_t N, size_t K,
                        const uint8_t *A, size_t lda, const int8_t *B, size_t ldb,
                        int32_t *C, size_t ldc);
int ts_gemm_u8u32_ctx(const ts_context *ctx, size_t M, size_t N, size_t K, const uint8_t *A,
                      size_t lda, const uint8_t *B, size_t ldb, uint32_t *C, size_t ldc);
int ts_gemm_u8_ctx(const ts_context *ctx, size_t M, size_t N, size_t K, const uint8_t *A,
                   size_t lda, const int8_t *B, size_t ldb, const ts_quant *q, uint8_t *C,
                   size_t ldc);
/* packing with the context's feature mask / CPU (the handle then matches its _ctx calls) */
int ts_pack_b_f32_ctx  (const ts_context *ctx, size_t K, size_t N, const float *B, size_t ldb,
                        ts_packed_b **out);
int ts_pack_b_bf16_ctx (const ts_context *ctx, size_t K, size_t N, const float *B, size_t ldb,
                        ts_packed_b **out);
int ts_pack_b_s8_ctx   (const ts_context *ctx, size_t K, size_t N, const int8_t *B, size_t ldb,
                        ts_packed_b **out);
int ts_pack_b_u8s8_ctx (const ts_context *ctx, size_t K, size_t N, const int8_t *B, size_t ldb,
                        ts_packed_b **out);
int ts_pack_b_u8u32_ctx(const ts_context *ctx, size_t K, size_t N, const uint8_t *B,
                        size_t ldb, ts_packed_b **out);
int ts_pack_b_f32_nk_ctx   (const ts_context *ctx, size_t N, size_t K, const float *B,
                           size_t ldb, ts_packed_b **out);
int ts_pack_b_bf16_nk_ctx  (const ts_context *ctx, size_t N, size_t K, const float *B,
                           size_t ldb, ts_packed_b **out);
int ts_pack_b_f16_nk_ctx   (const ts_context *ctx, size_t N, size_t K, const uint16_t *B,
                           size_t ldb, ts_packed_b **out);
int ts_pack_b_f16f32_nk_ctx(const ts_context *ctx, size_t N, size_t K, const uint16_t *B,
                           size_t ldb, ts_packed_b **out);
int ts_pack_b_s8_nk_ctx    (const ts_context *ctx, size_t N, size_t K, const int8_t *B,
                           size_t ldb, ts_packed_b **out);
int ts_pack_b_u8s8_nk_ctx  (const ts_context *ctx, size_t N, size_t K, const int8_t *B,
                           size_t ldb, ts_packed_b **out);
int ts_pack_b_u8u32_nk_ctx (const ts_context *ctx, size_t N, size_t K, const uint8_t *B,
                           size_t ldb, ts_packed_b **out);
int ts_pack_conv2d_filter_s8_ctx(const ts_context *ctx, const ts_conv2d *c,
                                 const int8_t *filter, ts_packed_b **out);
/* The B layouts a handle of the ts_pack_b_*_ctx packers above holds (ts_context_set_pack_layouts):
 *   TS_LAYOUT_GEMM  the GEMM tile's panels: runs every M;
 *   TS_LAYOUT_GEMV  the GEMV / small-M kernel's panels (see "GEMV and small M" above): runs
 *                   M <= that kernel's max_m only (1; 2 for the mmla kernels; the
 *                   handle's ts_packed_gemv_kernel).
 * The default, both, lets one handle serve decode and prefill at twice the memory. With
 * TS_LAYOUT_GEMM alone a small-M call runs the GEMM tile (the same bits, more instructions);
 * with TS_LAYOUT_GEMV alone a call with a larger M returns TS_EINVAL, nothing written. A path
 * without a GEMV kernel stores its GEMM layout whatever the setting (ts_packed_gemv_kernel is
 * NULL for a handle without the GEMV layout). Conv filters hold the GEMM layout only (a conv
 * never runs the GEMV kernel) and qdyn handles their one layout: the setting does not apply.
 * TS_EINVAL (nothing changed) for ctx NULL, 0 or a bit outside the two. */
#define TS_LAYOUT_GEMM 1u
#define TS_LAYOUT_GEMV 2u
int ts_context_set_pack_layouts(ts_context *ctx, unsigned layouts);
/* Bytes of memory a handle of any ts_pack_* function holds (one allocation: header, panels,
 * sums and scales); 0 for NULL or a handle that is not live. */
size_t ts_packed_size(const ts_packed_b *b);
int ts_gemm_f32_prepacked_ctx  (const ts_context *ctx, size_t M, const float *A, size_t lda,
                                const ts_packed_b *B, float *C, size_t ldc);
int ts_gemm_bf16_prepacked_ctx (const ts_context *ctx, size_t M, const float *A, size_t lda,
                                const ts_packed_b *B, float *C, size_t ldc);
int ts_gemm_f32_bias_clamp_prepacked_ctx(const ts_context *ctx, size_t M, const float *A,
                                         size_t lda, const ts_packed_b *B, const float *bias,
                                         float cmin, float cmax, float *C, size_t ldc);
int ts_gemm_bf16_bias_clamp_prepacked_ctx(const ts_context *ctx, size_t M, const float *A,
                                          size_t lda, const ts_packed_b *B, const float *bias,
                                          float cmin, float cmax, float *C, size_t ldc);
int ts_gemm_s8s32_prepacked_ctx(const ts_context *ctx, size_t M, const int8_t *A, size_t lda,
                                const ts_packed_b *B, int32_t *C, size_t ldc);
int ts_gemm_s8_prepacked_ctx   (const ts_context *ctx, size_t M, const int8_t *A, size_t lda,
                                const ts_packed_b *B, const ts_quant *q, int8_t *C,
                                size_t ldc);
int ts_gemm_u8s8s32_prepacked_ctx(const ts_context *ctx, size_t M, const uint8_t *A,
                                  size_t lda, const ts_packed_b *B, int32_t *C, size_t ldc);
int ts_gemm_u8u32_prepacked_ctx  (const ts_context *ctx, size_t M, const uint8_t *A,
                                  size_t lda, const ts_packed_b *B, uint32_t *C, size_t ldc);
int ts_gemm_u8_prepacked_ctx     (const ts_context *ctx, size_t M, const uint8_t *A,
                                  size_t lda, const ts_packed_b *B, const ts_quant *q,
                                  uint8_t *C, size_t ldc);
int ts_gemm_f16_ctx(const ts_context *ctx, size_t M, size_t N, size_t K, const uint16_t *A,
                    size_t lda, const uint16_t *B, size_t ldb, uint16_t *C, size_t ldc);
int ts_gemm_f16f32_ctx(const ts_context *ctx, size_t M, size_t N, size_t K,
                       const uint16_t *A, size_t lda, const uint16_t *B, size_t ldb,
                       float *C, size_t ldc);
int ts_pack_b_f16_ctx   (const ts_context *ctx, size_t K, size_t N, const uint16_t *B,
                         size_t ldb, ts_packed_b **out);
int ts_pack_b_f16f32_ctx(const ts_context *ctx, size_t K, size_t N, const uint16_t *B,
                         size_t ldb, ts_packed_b **out);
int ts_gemm_f16_prepacked_ctx   (const ts_context *ctx, size_t M, const uint16_t *A,
                                 size_t lda, const ts_packed_b *B, uint16_t *C, size_t ldc);
int ts_gemm_f16f32_prepacked_ctx(const ts_context *ctx, size_t M, const uint16_t *A,
                                 size_t lda, const ts_packed_b *B, float *C, size_t ldc);
int ts_gemm_f16f32_bias_clamp_ctx(const ts_context *ctx, size_t M, size_t N, size_t K,
                                  const uint16_t *A, size_t lda, const uint16_t *B, size_t ldb,
                                  const float *bias, float cmin, float cmax, float *C,
                                  size_t ldc);
int ts_gemm_f16f32_bias_clamp_prepacked_ctx(const ts_context *ctx, size_t M,
                                            const uint16_t *A, size_t lda,
                                            const ts_packed_b *B, const float *bias,
                                            float cmin, float cmax, float *C, size_t ldc);
/* conv2d with a context: the workspace is checked, unlike the calls without _ctx (which take
 * ts_conv2d_s8_workspace_size(c) bytes on trust). Either a buffer of workspace_bytes, at least
 * ts_conv2d_s8_workspace_size_ctx(ctx, c) — with threads that is at least (often more than)
 * ts_conv2d_s8_workspace_size(c): one work area per task; size it again after
 * ts_context_set_num_threads / _set_parallel_for — or workspace NULL with workspace_bytes 0:
 * the context's workspace (ts_context_set_workspace; TS_EINVAL when smaller than
 * ts_conv2d_s8_workspace_size_ctx, TS_EBUSY when another call uses it) or, when the context
 * has none (or ctx is NULL), one allocation for the call (TS_ENOMEM). A buffer smaller than
 * that, or workspace NULL with workspace_bytes not 0 → TS_EINVAL, nothing written. */
size_t ts_conv2d_s8_workspace_size_ctx(const ts_context *ctx, const ts_conv2d *c);
/* ts_conv2d_s8_prepacked_ctx's workspace_bytes: as ts_conv2d_s8_workspace_size_ctx without
 * the packed filter (ts_conv2d_s8_prepacked_workspace_size with ctx's threads); the larger
 * ts_conv2d_s8_workspace_size_ctx(ctx, c) is accepted too. */
size_t ts_conv2d_s8_prepacked_workspace_size_ctx(const ts_context *ctx, const ts_conv2d *c);
int ts_conv2d_s8_ctx(const ts_context *ctx, const ts_conv2d *c, const int8_t *input,
                     const int8_t *filter, const ts_quant *q, int8_t *output,
                     void *workspace, size_t workspace_bytes);
int ts_conv2d_s8_prepacked_ctx(const ts_context *ctx, const ts_conv2d *c,
                               const int8_t *input, const ts_packed_b *filter,
                               const ts_quant *q, int8_t *output, void *workspace,
                               size_t workspace_bytes);
/* the kernel the next _ctx call of that GEMM type uses with ctx (NULL: ts_gemm_kernel) */
const char *ts_gemm_kernel_ctx(const ts_context *ctx, int gemm_type);

/* ---- which micro-kernel runs (logs, tests) ------------------------------------------------ */
#define TS_GEMM_F32  0
#define TS_GEMM_BF16 1
#define TS_GEMM_INT8 2   /* gemm_s8s32, gemm_s8, conv2d_s8 */
#define TS_GEMM_U8S8 3   /* gemm_u8s8s32, gemm_u8 (uint8 A, int8 B) */
#define TS_GEMM_U8U32 4  /* gemm_u8u32 (uint8 A and B) */
#define TS_GEMM_QDYN 5   /* gemm_qdyn_f32 (int8 A quantised per row, int8 / int4 weights) */
#define TS_GEMM_F16  6   /* gemm_f16 (fp16 accumulation) */
#define TS_GEMM_F16F32 7 /* gemm_f16f32 (fp16 inputs, fp32 accumulation) */
/* symbol of the (GEMM tile) kernel the next call of that GEMM type uses, M <= max_m
 * excepted (its GEMV kernel, above); NULL for an unknown type (ts_last_error says so, as for
 * ts_gemm_kernel_mn and ts_gemm_kernel_ctx). TS_GEMM_QDYN: the raw int8
 * kernel of the path qdyn handles are packed for now, which names the path; what a qdyn call
 * runs depends on the handle and M: ts_gemm_qdyn_kernel */
const char *ts_gemm_kernel(int gemm_type);
/* symbol of the kernel a call of that type with M rows of A and N columns of B runs now:
 * the GEMV / small-M kernel or the GEMM tile's (see "GEMV and small M" above). TS_GEMM_QDYN:
 * the raw int8 kernel an int8 handle without a fused kernel runs (on the dotprod path for
 * M <= 4 its small-M tile over the same panels); per handle: ts_gemm_qdyn_kernel */
const char *ts_gemm_kernel_mn(int gemm_type, size_t M, size_t N);
/* symbol of the kernel a handle was packed for (a qdyn handle: the kernel with the fp32
 * epilogue inside it runs for M > 4, see ts_gemm_qdyn_kernel); NULL for NULL */
const char *ts_packed_kernel(const ts_packed_b *b);
/* symbol of the GEMV / small-M kernel whose layout the handle also holds; NULL for NULL or
 * when it holds none */
const char *ts_packed_gemv_kernel(const ts_packed_b *b);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif /* TS_TILESMITH_H */
