/* workloads.c — the whole operations `python3 -m bench` profiles under qemu-aarch64.
 *
 *   workloads gemm[-prepacked] f32|bf16|s8|u8s8|u8u32|f16|f16f32 FEATURES M N K
 *   workloads conv[-prepacked] FEATURES IN_H IN_W IN_C OUT_C K_H K_W STRIDE
 *                              PAD_TOP PAD_LEFT PAD_BOTTOM PAD_RIGHT [BATCH]
 *
 * FEATURES ("none" or names joined by '+', e.g. "dotprod+i8mm") becomes the
 * ts_set_feature_mask() that forces one dispatch path. The
 * program makes deterministic inputs, runs the operation ONCE and prints a checksum of the
 * output, so paths of one integer workload can be compared. "-prepacked" packs B (the
 * weights, or the conv filter) once with ts_pack_* before the measurement and runs the
 * *_prepacked call: the steady state of inference with packed weights. bench_mark() runs right
 * before the measured call; the profiler counts only what follows it. Every function of this
 * harness is named bench_* and kept out of line: the profiler files them under "setup", apart
 * from the operation (the public ts_* call and everything it runs). Conv batch 1 unless BATCH
 * is given; no dilation. Optional leading arguments, in this order: threads=N (a context with
 * the built-in pool of N threads) and cache=L1D:L2 (bytes; a context whose blocks are sized
 * for those caches, ts_context_set_cache_sizes: the cache model's core, whose sizes QEMU does
 * not show the program).
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilesmith.h"

#define HARNESS __attribute__((noinline))

static uint32_t bench_rng_state = 12345u;

/* Cheap deterministic values (32-bit LCG, Numerical Recipes constants): setup time under QEMU
 * matters for the 4096 x 4096 operands, their quality does not. */
static inline uint32_t bench_rng(void)
{
    bench_rng_state = bench_rng_state * 1664525u + 1013904223u;
    return bench_rng_state >> 8;
}

HARNESS static void bench_fill_f32(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)((int32_t)(bench_rng() & 0xffff) - 0x8000) / 32768.0f;
}

HARNESS static void bench_fill_s8(int8_t *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = (int8_t)(bench_rng() & 0xff);
}

/* Zeroed buffers on whole 64-byte lines, as engines' tensor arenas give them (TFLite:
 * kDefaultTensorAlignment = 64, tensorflow/lite/util.h); glibc's calloc starts large blocks
 * 16 bytes into a page (its mmap chunk header), so every row of a 4096-byte-wide matrix
 * would begin and end inside lines. */
HARNESS static void *bench_alloc(size_t n, size_t size)
{
    void *p = NULL;
    const size_t bytes = (n ? n : 1) * size;
    if (posix_memalign(&p, 64, (bytes + 63) / 64 * 64) != 0) {
        fprintf(stderr, "workloads: out of memory (%zu x %zu bytes)\n", n, size);
        exit(2);
    }
    return memset(p, 0, bytes);
}

/* FNV-1a over the output bytes. */
HARNESS static uint64_t bench_checksum(const void *data, size_t bytes)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < bytes; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* Per-output-channel requantization typical of a TFLite int8 layer. */
HARNESS static void bench_quant(ts_quant *q, size_t n, int32_t *bias, int32_t *mult, int32_t *shift)
{
    for (size_t i = 0; i < n; i++) {
        bias[i] = (int32_t)(bench_rng() & 0x3ff) - 0x200;
        mult[i] = 0x40000000 + (int32_t)(bench_rng() & 0xfffff);
        shift[i] = -8 - (int32_t)(i % 3);
    }
    memset(q, 0, sizeof *q);
    q->a_zero_point = -3;
    q->c_zero_point = 5;
    q->bias = bias;
    q->multiplier = mult;
    q->shift = shift;
    q->per_channel = 1;
    q->act_min = -128;
    q->act_max = 127;
    q->rounding = TS_ROUND_DOUBLE;
}

HARNESS static size_t bench_size(const char *text)
{
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (*text == '\0' || *end != '\0') {
        fprintf(stderr, "workloads: not a number: %s\n", text);
        exit(2);
    }
    return (size_t)v;
}

HARNESS static int bench_report(int status, const char *op, uint64_t checksum)
{
    if (status != TS_OK) {
        fprintf(stderr, "workloads: %s returned %d\n", op, status);
        return 1;
    }
    printf("checksum %016" PRIx64 "\n", checksum);
    return 0;
}

/* The context of every call: NULL (one thread, as the plain entry points), or one with the
 * built-in pool of N threads when the first argument is threads=N (set up before the mark). */
static ts_context *bench_ctx;

/* Called right before the measured operation: the profiler passes this function's address to
 * the tbcount plugin (mark=), which counts only what runs after it. */
HARNESS void bench_mark(void)
{
    __asm__ volatile("" ::: "memory");
}

/* The pack-once step of a prepacked run: part of the setup, before the mark. */
HARNESS static ts_packed_b *bench_pack_weights(int status, ts_packed_b *packed)
{
    if (status != TS_OK) {
        fprintf(stderr, "workloads: packing the weights returned %d\n", status);
        exit(1);
    }
    return packed;
}

HARNESS static int bench_gemm_float(int bf16, size_t M, size_t N, size_t K, int prepacked)
{
    float *A = bench_alloc(M * K, sizeof *A), *B = bench_alloc(K * N, sizeof *B);
    float *C = bench_alloc(M * N, sizeof *C);
    ts_packed_b *packed = NULL;
    int status;
    bench_fill_f32(A, M * K);
    bench_fill_f32(B, K * N);
    if (prepacked) {
        packed = bench_pack_weights(bf16 ? ts_pack_b_bf16_ctx(bench_ctx, K, N, B, N, &packed)
                                         : ts_pack_b_f32_ctx(bench_ctx, K, N, B, N, &packed), packed);
        bench_mark();
        status = bf16 ? ts_gemm_bf16_prepacked_ctx(bench_ctx, M, A, K, packed, C, N)
                      : ts_gemm_f32_prepacked_ctx(bench_ctx, M, A, K, packed, C, N);
    } else {
        bench_mark();
        status = bf16 ? ts_gemm_bf16_ctx(bench_ctx, M, N, K, A, K, B, N, C, N) : ts_gemm_f32_ctx(bench_ctx, M, N, K, A, K, B, N, C, N);
    }
    return bench_report(status, "gemm", bench_checksum(C, M * N * sizeof *C));
}

/* fp16 in (IEEE binary16 bits of the fp32 fill: values k/32768, exact in fp16 when |x| >= 2^-4,
 * else rounded by the hardware conversion); fp16 out (f16) or fp32 out (f16f32). */
HARNESS static void bench_fill_f16(uint16_t *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        __fp16 h = (__fp16)((float)((int32_t)(bench_rng() & 0xffff) - 0x8000) / 32768.0f);
        memcpy(&x[i], &h, sizeof x[i]);
    }
}

HARNESS static int bench_gemm_f16(int f32_out, size_t M, size_t N, size_t K, int prepacked)
{
    uint16_t *A = bench_alloc(M * K, 2), *B = bench_alloc(K * N, 2);
    size_t c_elem = f32_out ? 4 : 2;
    void *C = bench_alloc(M * N, c_elem);
    ts_packed_b *packed = NULL;
    int status;
    bench_fill_f16(A, M * K);
    bench_fill_f16(B, K * N);
    if (prepacked) {
        packed = bench_pack_weights(f32_out ? ts_pack_b_f16f32(K, N, B, N, &packed)
                                            : ts_pack_b_f16(K, N, B, N, &packed), packed);
        bench_mark();
        status = f32_out ? ts_gemm_f16f32_prepacked(M, A, K, packed, C, N)
                         : ts_gemm_f16_prepacked(M, A, K, packed, C, N);
    } else {
        bench_mark();
        status = f32_out ? ts_gemm_f16f32(M, N, K, A, K, B, N, C, N)
                         : ts_gemm_f16(M, N, K, A, K, B, N, C, N);
    }
    return bench_report(status, "gemm", bench_checksum(C, M * N * c_elem));
}

HARNESS static int bench_gemm_s8(size_t M, size_t N, size_t K, int prepacked)
{
    int8_t *A = bench_alloc(M * K, 1), *B = bench_alloc(K * N, 1), *C = bench_alloc(M * N, 1);
    int32_t *bias = bench_alloc(N, 4), *mult = bench_alloc(N, 4), *shift = bench_alloc(N, 4);
    ts_packed_b *packed = NULL;
    ts_quant q;
    int status;
    bench_fill_s8(A, M * K);
    bench_fill_s8(B, K * N);
    bench_quant(&q, N, bias, mult, shift);
    if (prepacked) {
        packed = bench_pack_weights(ts_pack_b_s8_ctx(bench_ctx, K, N, B, N, &packed), packed);
        bench_mark();
        status = ts_gemm_s8_prepacked_ctx(bench_ctx, M, A, K, packed, &q, C, N);
    } else {
        bench_mark();
        status = ts_gemm_s8_ctx(bench_ctx, M, N, K, A, K, B, N, &q, C, N);
    }
    return bench_report(status, "gemm", bench_checksum(C, M * N));
}

/* Raw 32-bit output, no requantisation: int8 x int8 -> int32 (ts_gemm_s8s32: the SME section's
 * raw int8 row), or with u8 uint8 x uint8 -> uint32 (ts_gemm_u8u32). Both fill A and B with the
 * same bytes. */
HARNESS static int bench_gemm_raw32(int u8, size_t M, size_t N, size_t K, int prepacked)
{
    void *A = bench_alloc(M * K, 1), *B = bench_alloc(K * N, 1), *C = bench_alloc(M * N, 4);
    ts_packed_b *packed = NULL;
    int status;
    bench_fill_s8(A, M * K);
    bench_fill_s8(B, K * N);
    if (prepacked) {
        packed = bench_pack_weights(u8 ? ts_pack_b_u8u32_ctx(bench_ctx, K, N, B, N, &packed)
                                       : ts_pack_b_s8_ctx(bench_ctx, K, N, B, N, &packed), packed);
        bench_mark();
        status = u8 ? ts_gemm_u8u32_prepacked_ctx(bench_ctx, M, A, K, packed, C, N)
                    : ts_gemm_s8s32_prepacked_ctx(bench_ctx, M, A, K, packed, C, N);
    } else {
        bench_mark();
        status = u8 ? ts_gemm_u8u32_ctx(bench_ctx, M, N, K, A, K, B, N, C, N)
                    : ts_gemm_s8s32_ctx(bench_ctx, M, N, K, A, K, B, N, C, N);
    }
    return bench_report(status, "gemm", bench_checksum(C, M * N * 4));
}

/* uint8 activations x int8 weights, quantized uint8 output (ts_gemm_u8: QLinearMatMul). */
HARNESS static int bench_gemm_u8s8(size_t M, size_t N, size_t K, int prepacked)
{
    uint8_t *A = bench_alloc(M * K, 1), *C = bench_alloc(M * N, 1);
    int8_t *B = bench_alloc(K * N, 1);
    int32_t *bias = bench_alloc(N, 4), *mult = bench_alloc(N, 4), *shift = bench_alloc(N, 4);
    ts_packed_b *packed = NULL;
    ts_quant q;
    int status;
    bench_fill_s8((int8_t *)A, M * K);
    bench_fill_s8(B, K * N);
    bench_quant(&q, N, bias, mult, shift);
    q.a_zero_point += 128;   /* the int8 layer's parameters moved to uint8 */
    q.c_zero_point += 128;
    q.act_min += 128;
    q.act_max += 128;
    if (prepacked) {
        packed = bench_pack_weights(ts_pack_b_u8s8_ctx(bench_ctx, K, N, B, N, &packed), packed);
        bench_mark();
        status = ts_gemm_u8_prepacked_ctx(bench_ctx, M, A, K, packed, &q, C, N);
    } else {
        bench_mark();
        status = ts_gemm_u8_ctx(bench_ctx, M, N, K, A, K, B, N, &q, C, N);
    }
    return bench_report(status, "gemm", bench_checksum(C, M * N));
}

/* qdyn (issue 12): fp32 A quantised per row in the call, weights N x K int8 per channel ("qdyn"),
 * int4 per channel ("qdyn4") or int4 per block of 32 ("qdyn4b32"); bias, no clamp. Prepacked:
 * the weights are packed before the mark; otherwise packing them is part of the measurement. */
HARNESS static int bench_gemm_qdyn(const char *type, size_t M, size_t N, size_t K, int prepacked)
{
    int int4 = strcmp(type, "qdyn") != 0, bl = strcmp(type, "qdyn4b32") == 0 ? 32 : 0;
    size_t row = int4 ? K / 2 : K, nb = bl ? K / (size_t)bl : 1;
    float *A = bench_alloc(M * K, sizeof(float)), *C = bench_alloc(M * N, sizeof(float));
    float *scales = bench_alloc(N * nb, sizeof(float)), *bias = bench_alloc(N, sizeof(float));
    int8_t *B = bench_alloc(N * row, 1);
    ts_packed_b *packed = NULL;
    bench_fill_f32(A, M * K);
    bench_fill_s8(B, N * row);
    for (size_t i = 0; i < N * nb; i++)
        scales[i] = (float)(bench_rng() % 1000 + 1) / 65536.0f;
    bench_fill_f32(bias, N);
    if (!prepacked)
        bench_mark();
    int status = int4 ? ts_pack_b_qs4(N, K, (const uint8_t *)B, row, scales, (size_t)bl, &packed)
                      : ts_pack_b_qs8(N, K, B, K, scales, &packed);
    packed = bench_pack_weights(status, packed);
    if (prepacked)
        bench_mark();
    status = ts_gemm_qdyn_f32(NULL, M, A, K, packed, bias, -INFINITY, INFINITY, C, N);
    return bench_report(status, "gemm", bench_checksum(C, M * N * sizeof *C));
}

HARNESS static int bench_gemm(const char *type, char **dims, int prepacked)
{
    size_t M = bench_size(dims[0]), N = bench_size(dims[1]), K = bench_size(dims[2]);
    if (strcmp(type, "f32") == 0 || strcmp(type, "bf16") == 0)
        return bench_gemm_float(type[0] == 'b', M, N, K, prepacked);
    if (strcmp(type, "s8") == 0)
        return bench_gemm_s8(M, N, K, prepacked);
    if (strcmp(type, "s8s32") == 0)
        return bench_gemm_raw32(0, M, N, K, prepacked);
    if (strcmp(type, "u8s8") == 0)
        return bench_gemm_u8s8(M, N, K, prepacked);
    if (strcmp(type, "u8u32") == 0)
        return bench_gemm_raw32(1, M, N, K, prepacked);
    if (strncmp(type, "qdyn", 4) == 0)
        return bench_gemm_qdyn(type, M, N, K, prepacked);
    if (strcmp(type, "f16") == 0 || strcmp(type, "f16f32") == 0)
        return bench_gemm_f16(type[3] == 'f', M, N, K, prepacked);
    fprintf(stderr, "workloads: unknown GEMM type %s (f32, bf16, s8, s8s32, u8s8, u8u32, qdyn, qdyn4, "
                    "qdyn4b32, f16, f16f32)\n", type);
    return 2;
}

HARNESS static int bench_conv(char **arg, int prepacked, size_t batch)
{
    ts_conv2d c;
    memset(&c, 0, sizeof c);
    c.batch = batch;
    c.in_h = bench_size(arg[0]);
    c.in_w = bench_size(arg[1]);
    c.in_c = bench_size(arg[2]);
    c.out_c = bench_size(arg[3]);
    c.k_h = bench_size(arg[4]);
    c.k_w = bench_size(arg[5]);
    c.stride_h = c.stride_w = bench_size(arg[6]);
    c.dilation_h = c.dilation_w = 1;
    c.pad_top = bench_size(arg[7]);
    c.pad_left = bench_size(arg[8]);
    c.pad_bottom = bench_size(arg[9]);
    c.pad_right = bench_size(arg[10]);
    size_t out_h = ts_conv2d_out_h(&c), out_w = ts_conv2d_out_w(&c);
    size_t in_n = batch * c.in_h * c.in_w * c.in_c, filter_n = c.out_c * c.k_h * c.k_w * c.in_c;
    size_t out_n = batch * out_h * out_w * c.out_c;
    int8_t *input = bench_alloc(in_n, 1), *filter = bench_alloc(filter_n, 1);
    int8_t *output = bench_alloc(out_n, 1);
    int32_t *bias = bench_alloc(c.out_c, 4), *mult = bench_alloc(c.out_c, 4);
    int32_t *shift = bench_alloc(c.out_c, 4);
    size_t workspace_bytes = ts_conv2d_s8_workspace_size_ctx(bench_ctx, &c);
    void *workspace = bench_alloc(workspace_bytes, 1);
    ts_packed_b *packed = NULL;
    ts_quant q;
    int status;
    bench_fill_s8(input, in_n);
    bench_fill_s8(filter, filter_n);
    bench_quant(&q, c.out_c, bias, mult, shift);
    if (prepacked) {
        packed = bench_pack_weights(ts_pack_conv2d_filter_s8_ctx(bench_ctx, &c, filter, &packed), packed);
        bench_mark();
        status = ts_conv2d_s8_prepacked_ctx(bench_ctx, &c, input, packed, &q, output, workspace,
                                             workspace_bytes);
    } else {
        bench_mark();
        status = ts_conv2d_s8_ctx(bench_ctx, &c, input, filter, &q, output, workspace,
                                  workspace_bytes);
    }
    return bench_report(status, "conv2d", bench_checksum(output, out_n));
}

/* "none" | feature names joined by '+' -> TS_FEAT_* mask; exits on an unknown name. */
HARNESS static unsigned bench_feature_mask(const char *text)
{
    static const struct { const char *name; unsigned bit; } features[] = {
        {"dotprod", TS_FEAT_DOTPROD}, {"i8mm", TS_FEAT_I8MM}, {"bf16", TS_FEAT_BF16},
        {"fp16", TS_FEAT_FP16}, {"fp16fml", TS_FEAT_FHM}, {"sme", TS_FEAT_SME},
    };
    unsigned mask = 0;
    if (strcmp(text, "none") == 0) return 0;
    for (const char *p = text; *p; ) {
        size_t len = strcspn(p, "+"), i;
        for (i = 0; i < sizeof features / sizeof features[0]; i++)
            if (strlen(features[i].name) == len && strncmp(p, features[i].name, len) == 0) break;
        if (i == sizeof features / sizeof features[0]) {
            fprintf(stderr, "workloads: unknown feature in %s (dotprod, i8mm, bf16, fp16, fp16fml, sme or none)\n", text);
            exit(2);
        }
        mask |= features[i].bit;
        p += len + (p[len] == '+');
    }
    return mask;
}

/* OP is gemm, conv, gemm-prepacked or conv-prepacked. */
int main(int argc, char **argv)
{
    if (argc > 1 && strncmp(argv[1], "threads=", 8) == 0) {
        unsigned threads = (unsigned)bench_size(argv[1] + 8);
        if (ts_context_create(&bench_ctx) != TS_OK
            || ts_context_set_num_threads(bench_ctx, threads) != TS_OK) {
            fprintf(stderr, "workloads: no context with %u threads\n", threads);
            return 1;
        }
        argc--;
        argv++;
    }
    /* cache=L1D:L2 (bytes): the cache sizes of the core the cache model simulates, which
     * QEMU's /sys does not show (ts_context_set_cache_sizes) */
    if (argc > 1 && strncmp(argv[1], "cache=", 6) == 0) {
        char *end;
        unsigned long long l1 = strtoull(argv[1] + 6, &end, 10);
        unsigned long long l2 = *end == ':' ? strtoull(end + 1, &end, 10) : 0;
        if ((bench_ctx == NULL && ts_context_create(&bench_ctx) != TS_OK) || *end != '\0'
            || ts_context_set_cache_sizes(bench_ctx, (size_t)l1, (size_t)l2) != TS_OK) {
            fprintf(stderr, "workloads: bad %s (%s)\n", argv[1], ts_last_error());
            return 1;
        }
        argc--;
        argv++;
    }
    const char *op = argc > 1 ? argv[1] : "";
    int gemm = strcmp(op, "gemm") == 0, gemm_prepacked = strcmp(op, "gemm-prepacked") == 0;
    int conv = strcmp(op, "conv") == 0, conv_prepacked = strcmp(op, "conv-prepacked") == 0;
    if (argc == 7 && (gemm || gemm_prepacked)) {
        ts_set_feature_mask(bench_feature_mask(argv[3]));
        return bench_gemm(argv[2], argv + 4, gemm_prepacked);
    }
    if ((argc == 14 || argc == 15) && (conv || conv_prepacked)) {
        ts_set_feature_mask(bench_feature_mask(argv[2]));
        return bench_conv(argv + 3, conv_prepacked, argc == 15 ? bench_size(argv[14]) : 1);
    }
    fprintf(stderr, "usage: workloads gemm[-prepacked] f32|bf16|s8|u8s8|u8u32|f16|f16f32 FEATURES M N K\n"
                    "       workloads conv[-prepacked] FEATURES IN_H IN_W IN_C OUT_C K_H K_W STRIDE "
                    "PAD_TOP PAD_LEFT PAD_BOTTOM PAD_RIGHT [BATCH]\n");
    return 2;
}
