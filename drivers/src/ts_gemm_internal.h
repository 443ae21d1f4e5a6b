/* ts_gemm_internal.h — the blocked GEMM loop shared by the GEMM and conv2d entry points.
 * Not public API. Plain C99. */
#ifndef TS_GEMM_INTERNAL_H
#define TS_GEMM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tilesmith.h"
#include "ts_pack_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where the rows of A come from: a row-major matrix (conv == NULL), or the im2col rows of a
 * conv2d input, built an A panel at a time (padded taps = pad_value). */
typedef struct {
    const void *A;            /* matrix, or the conv input (NHWC) */
    size_t lda;               /* matrix row stride in elements */
    const ts_conv2d *conv;
    int8_t pad_value;
} ts_a_source;

/* Where the results go: the kernel's results (path->c_bytes each: fp16, float, int32, uint32)
 * when q is NULL, else int8 (uint8 with u8_output) through the requantization epilogue with q
 * (validated for that output) and the A zero-point correction. With f16_output, C holds fp16:
 * a kernel with fp32 results (the fp16 GEMM's fallback) has them rounded (RNE) into it. */
typedef struct {
    void *C;
    size_t ldc;               /* row stride in elements */
    const ts_quant *q;
    int u8_output;            /* q's zero points and clamp range are uint8 (ts_gemm_u8) */
    int f16_output;           /* C is fp16 (ts_gemm_f16) */
} ts_c_sink;

/* Scratch bytes ts_gemm_run needs for B's path and shape (including 15 bytes to align an
 * arbitrary pointer to 16). Returns 0, or -1 on size_t overflow. */
int ts_gemm_scratch_bytes(const ts_path *path, size_t N, size_t K, int requantize,
                          int im2col, size_t *out);
/* The same for a sink (requantize when out->q, narrowing fp32 results to fp16). */
int ts_gemm_sink_scratch_bytes(const ts_path *path, size_t N, size_t K, const ts_c_sink *out,
                               size_t *bytes);

/* C(M x b->N) = A(M x b->K) * B, one ep-row panel of A at a time against every B panel; edge
 * tiles through scratch. Arguments must be valid; scratch as sized above. Never fails. */
void ts_gemm_run(const ts_packed_b *b, size_t M, const ts_a_source *a,
                 const ts_c_sink *out, void *scratch);

/* 16-byte aligned pointer at or after p. */
static inline void *ts_align16(void *p)
{
    return (void *)(((uintptr_t)p + 15) & ~(uintptr_t)15);
}

#ifdef __cplusplus
}
#endif
#endif /* TS_GEMM_INTERNAL_H */
