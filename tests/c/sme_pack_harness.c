/* Runs the generated streaming-mode packers of the SME paths (gen/sme_pack.py) against the
 * panel layout written out here, at the streaming vector length qemu was started with.
 * Usage: sme_pack_harness SVL_BYTES. Prints "ok <symbol>: 0 failure(s)" per packer; exit
 * status 1 on any failure.
 *
 * With S = SVL/32:
 *   A packer (tr, group g): panel of ep = tr*S rows, k-step s = words g*s .. g*s + g - 1 of
 *     every row (4 bytes each), a row's g words side by side: dst word (s*ep + r)*g + j = bytes
 *     4(g*s + j) .. + 3 of source row r, zero for r >= rows and for bytes >= k_bytes;
 *   B packer (elem_bytes e, lp, tc): panel of hp = tc*S columns, k-step s = rows s*lp .. of B:
 *     dst element ((s*hp + c)*lp + i) = B[s*lp + i][c], zero for c >= cols or k >= K;
 *   bf16 packers (convert): the same layouts of bf16 (lp 2) from fp32 sources, each value
 *     rounded as ts_pack.c f32_to_bf16 (written out again here: RNE on the bits, NaN kept and
 *     made quiet), fp32 data with NaNs (quiet, signalling, negative), infinities, the largest
 *     finite values (round to infinity), ties to even both ways and denormals mixed in;
 *     They run under FPCR 0 (their BFCVT loop) and again under round-toward-zero, flush-to-zero
 *     and default-NaN FPCRs (the integer loop: BFCVT would give other bits there), with FPCR
 *     unchanged by the call;
 *   int8 B packers: also sum_k B[k][c] as int32 into x5 (ceil(cols/4)*4 of them, 0 past cols;
 *     at a guard page), or nothing with x5 = NULL.
 * Rows / columns around every tile boundary, k_bytes / K around every word, vector and k-step
 * boundary, row strides with and without a gap. The source sits flush against a guard page
 * (in turn after its end and before its start), so does the panel (every byte of it compared,
 * sentinels first); after every call (sme_call_checked) x19-x28, d8-d15, x18, sp preserved,
 * SVCR = 0, TPIDR2_EL0 = 0; the A packers (they use ZA) commit a pending lazy ZA save. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fpcr.h"
#include "guarded.h"

long sme_svl_bytes(void);
uint64_t sme_svcr(void);
uint64_t sme_tpidr2(void);
void sme_set_tpidr2(uint64_t);
void sme_za_fill(const uint8_t *src);
uint64_t sme_call_checked(void *fn, const void *a, const void *b, size_t ksteps, void *c,
                          size_t ldc, const void *args, uint64_t after[2]);

typedef struct {
    const char *symbol;
    void *fn;
    int role;                   /* 'a' or 'b' */
    long tr;                    /* A */
    long elem_bytes, lp, tc;    /* B */
    int convert;                /* fp32 source rounded to bf16 pairs */
    int sums;                   /* B: also the int32 column sums (x5, NULL: none) */
    long group;                 /* A: words per k-step (gen/sme_tiling.py GROUP) */
} sme_packer_info;

#include "sme_pack_table.h"

static long S;
static int failures;
#define FAIL(...) do { if (failures++ < 20) { printf(__VA_ARGS__); putchar('\n'); } } while (0)
#define SENTINEL8 0xa5

/* fp32 bits -> bf16 bits, round to nearest even; a NaN keeps its high half, made quiet. */
static uint16_t bf16_of(uint32_t u)
{
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    uint32_t low = u & 0xffffu, high = u >> 16;
    if (low > 0x8000u || (low == 0x8000u && (high & 1u))) high++;
    return (uint16_t)high;
}

/* Source data: random bytes; for fp32 sources every 5th value one of the special cases. */
static void fill_source(uint8_t *src, size_t len, int convert)
{
    static const uint32_t special[] = {
        0x7f800001u, 0x7fc00000u, 0xffffffffu, 0xff812345u, 0x7f800000u, 0xff800000u,
        0x7f7fffffu, 0xff7fffffu, 0x3f808000u, 0x3f818000u, 0x3f807fffu, 0x3f808001u,
        0x00008000u, 0x00018000u, 0x80000001u, 0x00000000u, 0x80000000u, 0x7f7f8000u};
    for (size_t i = 0; i < len; i++) src[i] = (uint8_t)(rng_next() >> 11);
    if (!convert) return;
    for (size_t i = 0; i + 4 <= len; i += 4)
        if (i / 4 % 5 == 2) {
            uint32_t v = special[rng_next() % (sizeof special / sizeof special[0])];
            memcpy(src + i, &v, 4);
        }
}

/* Byte b (0-3) of the packed word of source values at `lo` and `hi` (fp32, NULL: absent). */
static uint8_t bf16_pair_byte(const uint8_t *lo, const uint8_t *hi, size_t b)
{
    uint32_t u = 0, half;
    const uint8_t *p = b < 2 ? lo : hi;
    if (p == NULL) return 0;
    memcpy(&u, p, 4);
    half = bf16_of(u);
    return (uint8_t)(half >> (8 * (b % 2)));
}

static void call(const sme_packer_info *p, void *dst, const void *src, size_t n, size_t k,
                 size_t ld, void *x5)
{
    uint64_t after[2] = {1, 1}, fpcr = get_fpcr();
    uint64_t mask = sme_call_checked(p->fn, dst, src, n, k, ld, x5, after);
    if (get_fpcr() != fpcr) FAIL("%s: FPCR 0x%llx on return, 0x%llx before", p->symbol,
                                 (unsigned long long)get_fpcr(), (unsigned long long)fpcr);
    if (mask) FAIL("%s: callee-saved registers changed, mask 0x%llx", p->symbol,
                   (unsigned long long)mask);
    if (after[0] || after[1]) FAIL("%s: SVCR 0x%llx, TPIDR2_EL0 0x%llx on return", p->symbol,
                                   (unsigned long long)after[0], (unsigned long long)after[1]);
}

/* A: rows x k_bytes of A, row stride lda; the source at a guard page (tail: after its end). */
static void run_a(const sme_packer_info *p, long rows, size_t k_bytes, size_t gap, int tail)
{
    long ep = p->tr * S;
    size_t lda = k_bytes + gap, words = (k_bytes + (p->convert ? 7 : 3)) / (p->convert ? 8 : 4);
    size_t g = (size_t)p->group, steps = (words + g - 1) / g;
    size_t panel = steps * g * (size_t)ep * 4;
    size_t src_len = rows ? (size_t)(rows - 1) * lda + k_bytes : 0;
    guarded_region rs, rd;
    uint8_t *src = guarded_alloc_at(src_len, tail, &rs), *dst = guarded_alloc_at(panel, !tail, &rd);
    fill_source(src, src_len, p->convert);
    memset(dst, SENTINEL8, panel);
    call(p, dst, src, (size_t)rows, k_bytes, lda, NULL);
    for (size_t s = 0; s < steps * g; s++)       /* s: word of the row */
        for (long r = 0; r < ep; r++)
            for (size_t b = 0; b < 4; b++) {
                size_t at = ((s / g * (size_t)ep + (size_t)r) * g + s % g) * 4 + b, kb = s * 4 + b;
                uint8_t want = r < rows && kb < k_bytes ? src[(size_t)r * lda + kb] : 0;
                if (p->convert) {       /* values 2s (low half), 2s + 1 (high half) of row r */
                    const uint8_t *row = src + (size_t)r * lda;
                    size_t k0 = 2 * s * 4, k1 = k0 + 4;
                    want = r >= rows ? 0 : bf16_pair_byte(k0 < k_bytes ? row + k0 : NULL,
                                                          k1 < k_bytes ? row + k1 : NULL, b);
                }
                if (dst[at] != want) {
                    FAIL("%s: rows %ld k_bytes %zu lda %zu: k-step %zu row %ld byte %zu = 0x%02x, "
                         "expected 0x%02x", p->symbol, rows, k_bytes, lda, s, r, b, dst[at], want);
                    goto done;
                }
            }
done:
    guarded_free(&rs); guarded_free(&rd);
}

/* B: K rows x cols of row-major B (elements of e bytes), row stride ldb bytes. */
static void run_b(const sme_packer_info *p, long cols, size_t K, size_t gap, int tail)
{
    long e = p->elem_bytes, lp = p->lp, hp = p->tc * S, se = p->convert ? 4 : e;
    size_t ldb = (size_t)(cols * se) + gap, steps = (K + (size_t)lp - 1) / (size_t)lp;
    size_t panel = steps * (size_t)(hp * lp * e);
    size_t src_len = K ? (K - 1) * ldb + (size_t)(cols * se) : 0;
    guarded_region rs, rd;
    uint8_t *src = guarded_alloc_at(src_len, tail, &rs), *dst = guarded_alloc_at(panel, !tail, &rd);
    fill_source(src, src_len, p->convert);
    memset(dst, SENTINEL8, panel);
    /* column sums: every other call, ceil(cols / 4) * 4 int32 at a guard page */
    size_t groups = ((size_t)cols + 3) / 4 * 4;
    guarded_region rsum = {0};
    int32_t *sums = p->sums && tail ? guarded_alloc(groups * 4, &rsum) : NULL;
    for (size_t i = 0; sums && i < groups; i++) sums[i] = 0x5a5a5a5a;
    call(p, dst, src, (size_t)cols, K, ldb, sums);
    for (size_t c = 0; sums && c < groups; c++) {
        int32_t want = 0;
        for (size_t k = 0; k < K && c < (size_t)cols; k++) want += (int8_t)src[k * ldb + c];
        if (sums[c] != want) {
            FAIL("%s: cols %ld K %zu: column sum %zu = %d, expected %d", p->symbol, cols, K, c,
                 sums[c], want);
            break;
        }
    }
    guarded_free(&rsum);
    for (size_t s = 0; s < steps; s++)
        for (long c = 0; c < hp; c++)
            for (long i = 0; i < lp; i++)
                for (long b = 0; b < e; b++) {
                    size_t k = s * (size_t)lp + (size_t)i;
                    size_t at = ((s * (size_t)hp + (size_t)c) * (size_t)lp + (size_t)i) * (size_t)e
                                + (size_t)b;
                    uint8_t want = c < cols && k < K ? src[k * ldb + (size_t)(c * e + b)] : 0;
                    if (p->convert)     /* bf16 of B[k][c], byte b */
                        want = c < cols && k < K
                               ? bf16_pair_byte(src + k * ldb + (size_t)c * 4, NULL, (size_t)b) : 0;
                    if (dst[at] != want) {
                        FAIL("%s: cols %ld K %zu ldb %zu: k-step %zu column %ld k+%ld byte %ld = "
                             "0x%02x, expected 0x%02x", p->symbol, cols, K, ldb, s, c, i, b,
                             dst[at], want);
                        goto done;
                    }
                }
done:
    guarded_free(&rs); guarded_free(&rd);
}

/* A pending lazy ZA save (every ZA vector, 3, none) is committed by an A packer. */
#include "sme_lazy_save.h"

/* one call of A packer p for check_lazy_save: rows ep - 1, so the row never loaded must be
 * zero, not the caller's dormant ZA; SVCR = 0 and TPIDR2_EL0 = 0 checked afterwards */
static void lazy_save_call(const void *arg)
{
    const sme_packer_info *p = (const sme_packer_info *)arg;
    run_a(p, p->tr * S - 1, p->convert ? 8 * (size_t)S + 12 : 4 * (size_t)S + 5, p->convert ? 4 : 3,
          1);
}

static void run_lazy_save(const sme_packer_info *p, unsigned slices)
{
    check_lazy_save(p->symbol, slices, lazy_save_call, p);
}

static void run_packer(const sme_packer_info *p)
{
    int tail = 0;
    if (p->role == 'a') {
        long ep = p->tr * S;
        long rows[] = {1, S - 1, S, S + 1, ep - 1, ep};
        size_t kb[] = {0, 1, 2, 3, 4, 5, 7, 8, 13, 16, 17, (size_t)(4 * S - 1), (size_t)(4 * S),
                       (size_t)(4 * S + 1), (size_t)(8 * S + 3), (size_t)(12 * S + 4)};
        /* fp32 sources: K values 0, 1, 2, 3, ... around pairs, S and 2S (a chunk) */
        size_t kf[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, (size_t)(2 * S - 1), (size_t)(2 * S),
                       (size_t)(2 * S + 1), (size_t)(4 * S + 3), (size_t)(6 * S + 4)};
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
            for (size_t j = 0; j < sizeof kb / sizeof kb[0]; j++) {
                if (rows[i] < 1 || rows[i] > ep) continue;
                if (p->convert)
                    run_a(p, rows[i], 4 * kf[j], (i + j) % 2 ? 12 : 0, tail ^= 1);
                else
                    run_a(p, rows[i], kb[j], (i + j) % 2 ? 5 : 0, tail ^= 1);
            }
        run_lazy_save(p, (unsigned)(S * 4));
        run_lazy_save(p, 3);
        run_lazy_save(p, 0);
    } else {
        long hp = p->tc * S;
        long cols[] = {1, S - 1, S, S + 1, hp - 1, hp};
        size_t ks[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 33};
        for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
            for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++) {
                if (cols[i] < 1 || cols[i] > hp) continue;
                size_t gap = (i + j) % 2 ? (size_t)(p->convert ? 12 : 3 * p->elem_bytes) : 0;
                run_b(p, cols[i], ks[j], gap, tail ^= 1);
            }
    }
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);       /* what ran before a fault stays visible */
    long want = argc > 1 ? atol(argv[1]) : 0;
    long svl = sme_svl_bytes();
    if (svl != want) { printf("SVL %ld bytes, expected %ld\n", svl, want); return 1; }
    S = svl / 4;
    /* FPCR RMode = toward zero, FZ, DN (Arm ARM, FPCR): each makes BFCVT differ from bf16_of on
     * the special values (non-ties, denormals, NaN payloads) */
    static const uint64_t other_fpcr[] = {0x00c00000u, 0x01000000u, 0x02000000u};
    for (size_t i = 0; i < sizeof PACKERS / sizeof PACKERS[0]; i++) {
        int before = failures;
        set_fpcr(0);
        run_packer(&PACKERS[i]);
        for (size_t f = 0; PACKERS[i].convert && f < sizeof other_fpcr / sizeof other_fpcr[0]; f++) {
            set_fpcr(other_fpcr[f]);
            run_packer(&PACKERS[i]);
            set_fpcr(0);
        }
        printf("%s %s: %d failure(s)\n", failures == before ? "ok" : "FAILED", PACKERS[i].symbol,
               failures - before);
    }
    return failures != 0;
}
