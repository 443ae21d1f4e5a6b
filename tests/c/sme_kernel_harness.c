/* Runs generated SME kernels (contract v2) against a C reference at the streaming vector
 * length qemu was started with.  Usage: sme_kernel_harness SVL_BYTES [symbol ...]
 * Prints "ok <symbol>: 0 failure(s)" per kernel; exit status 1 on any failure.
 *
 * Per kernel, with S = SVL/32, ep = tr*S, hp = tc*S:
 *   - k-steps 0..9, 16, 17, 64 with args = NULL (full tile, overwrite);
 *   - partial tiles (m_rem, n_rem) over every row block / column tile boundary, with and
 *     without an accumulator tile, acc separate or acc == c;
 *   - packed panels and C flush against guard pages; C's row stride leaves a gap whose
 *     sentinels (and every element outside m_rem x n_rem) must survive;
 *   - after every call (sme_call_checked): x19-x28, d8-d15, x18, sp preserved; SVCR = 0
 *     (PSTATE.SM = PSTATE.ZA = 0); TPIDR2_EL0 = 0;
 *   - a lazy ZA save pending on entry (ZA filled, TPIDR2_EL0 -> a TPIDR2 block) is committed:
 *     the buffer holds ZA's first num_za_save_slices vectors, nothing after them is written.
 * biasclamp kernels: always called with args, the bias array (n_rem fp32) flush against a guard
 * page, clamp bounds that cut some outputs. requant (requant_u8) kernels: int8 (uint8) C, the
 * three rounding modes in turn with their parameter blocks (hp columns, at a guard page), the
 * whole int8 (uint8) range (clamp-free loops) or bounds that cut, checked against the
 * TFLite definitions written out here (requant_ref). Values are small integers, so every sum is exact in
 * every type and results must match the reference exactly (int64 arithmetic). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guarded.h"

/* The generated <prefix>kernels.h (through sme_kernel_table.h): the SME kernels' declarations
 * and the contract v2 argument block, as tile_args. */
#include "sme_kernel_table_types.h"

typedef void (*sme_kernel_fn)(const void *, const void *, size_t, void *, size_t,
                              const tile_args *);
typedef struct {
    const char *symbol;
    sme_kernel_fn fn;
    const char *a_type, *b_type, *c_type;
    int tr, tc, lp;
    int epilogue;           /* 0 raw, 1 biasclamp, 2 requant, 3 requant_u8 (args always given
                               for 1..3) */
} sme_kernel_info;

long sme_svl_bytes(void);
uint64_t sme_svcr(void);
uint64_t sme_tpidr2(void);
void sme_set_tpidr2(uint64_t);
void sme_za_fill(const uint8_t *src);
void sme_za_off(void);
void sme_imopa_probe(const int8_t *a, const int8_t *b, int32_t *out);
uint64_t sme_call_checked(sme_kernel_fn fn, const void *a, const void *b, size_t ksteps, void *c,
                          size_t ldc, const tile_args *args, uint64_t after[2]);

#include "sme_kernel_table.h"

static long S;              /* 32-bit lanes of a streaming vector */
/* How this emulator computes 32-bit integer MOPAs (SMOPA/USMOPA .s), from imopa_probe():
 * 0 as the architecture says (SME supplement DDI0616, SMOPA: ZA[i][j] += sum over kk < 4 of
 * Zn[4i + kk] * Zm[4j + kk]); 1 as QEMU before 8.2.2 / 9.0 does (QEMU issue 2083, "target/arm:
 * Fix 32-bit SMOPA", 2024): it computes two outputs per 64-bit lane pair, so in every tile even
 * rows i get, at even columns j, the right sum, at odd columns j the sum of row i+1 and column
 * j, and odd rows are left unchanged. Under 1 the integer kernels are checked against that
 * behaviour: every load, predicate, ZA slice, store and ABI check still applies, and every
 * A row / B column still reaches a checked output. */
static int imopa_mode;
static int failures;

#define FAIL(...) do { if (failures++ < 20) { printf(__VA_ARGS__); putchar('\n'); } } while (0)

/* ---- element types ------------------------------------------------------------------------ */
static int type_bytes(const char *t)
{
    return !strcmp(t, "fp32") || !strcmp(t, "int32") ? 4 : !strcmp(t, "fp16") || !strcmp(t, "bf16") ? 2 : 1;
}

static uint32_t float_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bits_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* A small integer value of type t: int8 -128..127, uint8 0..255, floats -8..8. */
static long random_value(const char *t)
{
    uint64_t r = rng_next() >> 11;
    if (!strcmp(t, "int8")) return (long)(r % 256) - 128;
    if (!strcmp(t, "uint8")) return (long)(r % 256);
    return (long)(r % 17) - 8;
}

static void put_value(void *buf, size_t i, const char *t, long v)
{
    if (!strcmp(t, "fp32")) ((float *)buf)[i] = (float)v;
    else if (!strcmp(t, "fp16")) ((__fp16 *)buf)[i] = (__fp16)(float)v;
    else if (!strcmp(t, "bf16")) ((uint16_t *)buf)[i] = (uint16_t)(float_bits((float)v) >> 16);
    else if (!strcmp(t, "int8")) ((int8_t *)buf)[i] = (int8_t)v;
    else ((uint8_t *)buf)[i] = (uint8_t)v;
}

/* C elements: fp32 or int32, compared as exact values. */
static int64_t get_c(const void *row, long j, int is_float)
{
    if (is_float) return (int64_t)((const float *)row)[j];
    return ((const int32_t *)row)[j];
}
static void put_c(void *row, long j, int is_float, int64_t v)
{
    if (is_float) ((float *)row)[j] = (float)v;
    else ((int32_t *)row)[j] = (int32_t)v;
}
static int c_exact(const void *row, long j, int is_float, int64_t want)
{
    if (is_float) return ((const float *)row)[j] == (float)want;
    return ((const int32_t *)row)[j] == (int32_t)want;
}

#define SENTINEL 0x7fc0dead  /* a NaN pattern for floats, an unlikely int32 */
#define SENTINEL8 0x5a       /* int8 / uint8 C */

/* ---- TFLite int8 requantisation, written out from its definitions -------------------------
 * gemmlowp (fixedpoint.h) SaturatingRoundingDoublingHighMul and RoundingDivideByPOT; TFLite
 * (kernels/internal/common.cc) MultiplyByQuantizedMultiplier, double rounding (default) and
 * single rounding (TFLITE_SINGLE_ROUNDING); tilesmith saturates the left shift, the int32
 * result and the zero-point add (README, ts_requant.c). rounding 2 is double rounding. */
static int32_t sat32(int64_t v) { return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v; }
static int32_t srdhm(int32_t a, int32_t b)
{
    if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
    int64_t ab = (int64_t)a * b, nudge = ab >= 0 ? (1 << 30) : 1 - (1 << 30);
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}
static int32_t rdbp(int32_t x, int e)
{
    int32_t mask = (int32_t)(((int64_t)1 << e) - 1), rem = x & mask;
    int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> e) + (rem > threshold ? 1 : 0);
}
static int requant_ref(int32_t acc, int mode, int32_t offset, int32_t mult, int shift, int zp,
                          int lo, int hi)
{
    int32_t x = (int32_t)((uint32_t)acc + (uint32_t)offset), y;
    if (mode == 1) {
        int total = 31 - shift;
        y = sat32(((int64_t)x * mult + ((int64_t)1 << (total - 1))) >> total);
    } else {
        y = rdbp(srdhm(sat32((int64_t)x * ((int64_t)1 << (shift > 0 ? shift : 0))), mult),
                 shift > 0 ? 0 : -shift);
    }
    int64_t v = (int64_t)y + zp;
    return (int)(v < lo ? lo : v > hi ? hi : v);   /* lo..hi: int8 or uint8 */
}

/* The same with round-half-up right shifts (SRSHL alone, no tie fix-up): outputs where it
 * differs show the test sees the fix-up. */
static int requant_ref_half_up(int32_t acc, int mode, int32_t offset, int32_t mult, int shift,
                                  int zp, int lo, int hi)
{
    if (mode == 1 || shift >= 0) return requant_ref(acc, mode, offset, mult, shift, zp, lo, hi);
    int32_t x = (int32_t)((uint32_t)acc + (uint32_t)offset), h = srdhm(x, mult);
    int32_t y = (int32_t)(((int64_t)h + ((int64_t)1 << (-shift - 1))) >> -shift);
    int64_t v = (int64_t)y + zp;
    return (int)(v < lo ? lo : v > hi ? hi : v);   /* lo..hi: int8 or uint8 */
}

static long rq_outputs, rq_unclamped, rq_tie_sensitive;   /* per kernel run */

typedef struct { int32_t offset, mult; int shift; } rq_column;

/* The parameter block of hp columns for `mode` (gen/sme_emit.py, kv2's layout): 64 bytes per
 * group of 4 columns. */
static void rq_params(int32_t *block, const rq_column *col, long hp, int mode)
{
    for (long j = 0; j < hp; j++) {
        long g = j / 4, t = j % 4;
        int32_t *w = block + 16 * g;
        w[t] = col[j].offset;
        w[4 + t] = col[j].mult;
        if (mode == 0) {
            w[8 + t] = col[j].shift > 0 ? col[j].shift : 0;
            w[12 + t] = col[j].shift < 0 ? col[j].shift : 0;
        } else if (mode == 1) {
            int64_t s64 = (int64_t)col[j].shift - 31;
            memcpy(w + 8 + 2 * t, &s64, 8);
        } else {
            w[8 + t] = (int32_t)((int64_t)1 << (31 + col[j].shift));
            w[12 + t] = 0;
        }
    }
}
static int rq_counter;

/* ---- one call ----------------------------------------------------------------------------- */
typedef struct {
    size_t ksteps;
    long m_rem, n_rem;      /* -1: args = NULL */
    int acc;                /* 0 none, 1 separate tile, 2 acc == c */
} test_case;

static void run_case(const sme_kernel_info *k, test_case tc)
{
    long ep = k->tr * S, hp = k->tc * S, lp = k->lp;
    int ab = type_bytes(k->a_type), bb = type_bytes(k->b_type);
    int is_float = !strcmp(k->c_type, "fp32");
    int biasclamp = k->epilogue == 1, requant = k->epilogue >= 2, cb = requant ? 1 : 4;
    int u8 = k->epilogue == 3;      /* uint8 C: zero point and clamp bounds 0..255 */
    int out_min = u8 ? 0 : -128, out_max = u8 ? 255 : 127;
    if (k->epilogue && tc.acc == 2) tc.acc = 1;     /* acc may be c for raw kernels only */
    long m = tc.m_rem < 0 ? ep : tc.m_rem, n = tc.n_rem < 0 ? hp : tc.n_rem;
    size_t a_len = tc.ksteps * ep * lp, b_len = tc.ksteps * hp * lp;
    guarded_region ra, rb, rc, racc = {0};
    uint8_t *a = guarded_alloc(a_len * ab, &ra), *b = guarded_alloc(b_len * bb, &rb);
    long *av = malloc(sizeof(long) * (a_len + 1)), *bv = malloc(sizeof(long) * (b_len + 1));
    for (size_t i = 0; i < a_len; i++) put_value(a, i, k->a_type, av[i] = random_value(k->a_type));
    for (size_t i = 0; i < b_len; i++) put_value(b, i, k->b_type, bv[i] = random_value(k->b_type));

    /* C: ep rows, row stride hp + 3 elements; the last row ends at a guard page. */
    size_t ldc = (size_t)(hp + 3) * cb, c_bytes = (size_t)(ep - 1) * ldc + (size_t)hp * cb;
    uint8_t *c = guarded_alloc(c_bytes, &rc);
    if (requant) memset(c, SENTINEL8, c_bytes);
    else for (size_t i = 0; i < c_bytes / 4; i++) ((uint32_t *)c)[i] = SENTINEL;

    tile_args args = {0};
    int use_args = tc.m_rem >= 0 || k->epilogue;
    if (use_args) { args.m_rem = (size_t)m; args.n_rem = (size_t)n; }
    guarded_region rbias = {0};
    long *bias = calloc((size_t)hp + 1, sizeof(long)), lo = -1000000, hi = 1000000;
    uint32_t *nan_bits = calloc((size_t)hp + 1, sizeof(uint32_t));
    /* The exact int32/fp32 results before the epilogue (the requant parameters are scaled to
     * them, so that most outputs land inside the int8 clamp). */
    int64_t *expect = calloc((size_t)(ep * hp), sizeof(int64_t));
    for (long i = 0; i < m; i++)
        for (long j = 0; j < n; j++) {
            long ai = i;
            if (imopa_mode && !is_float) {      /* QEMU issue 2083 model, see imopa_mode */
                long li = i % S, lj = j % S;
                ai = li % 2 ? -1 : (lj % 2 ? i + 1 : i);
            }
            int64_t sum = 0;
            for (size_t s = 0; s < tc.ksteps && ai >= 0; s++)
                for (long kk = 0; kk < lp; kk++)
                    sum += (int64_t)av[(s * ep + ai) * lp + kk] * bv[(s * hp + j) * lp + kk];
            expect[i * hp + j] = sum;       /* + acc, added once acc is made below */
        }
    guarded_region rrq = {0};
    rq_column *rq = calloc((size_t)hp, sizeof(rq_column));
    /* rounding modes in turn; every other three cases the whole output range (int8 -128..127,
     * uint8 0..255: the kernel's clamp-free loops), else clamp bounds that cut */
    int rq_case = rq_counter++, rq_mode = rq_case % 3, full_range = rq_case / 3 % 2;
    int zp = 0, act_lo = out_min, act_hi = out_max;
    if (requant) {
        int32_t *block = guarded_alloc((size_t)hp / 4 * 64, &rrq);
        for (long j = 0; j < hp; j++) {
            /* |x| below 2^bits over the column (acc adds at most 8000); multiplier ~2^-1 or,
             * every 5th column, ~2^-11 (then a left shift); the shift maps x to ~2^8, so most
             * outputs stay inside the clamp; every 7th column and column 1 of every column
             * tile multiplier 0.5 and the smallest right shift that does: ties (x / 2^e
             * exactly .5) are frequent there, in every ZA tile's columns. */
            int64_t most = 8000 + 2000;
            for (long i = 0; i < m; i++)
                most = llabs(expect[i * hp + j]) + 10000 > most ? llabs(expect[i * hp + j]) + 10000 : most;
            int bits = 0;
            while (((int64_t)1 << bits) <= most) bits++;
            rq[j].offset = (int32_t)(rng_next() % 2001) - 1000;
            int small = j % 5 == 1, half = j % 7 == 3 || j % S == 1;
            rq[j].mult = half ? (1 << 30) : small ? (int32_t)((1u << 20) + rng_next() % (1u << 20))
                                                  : (int32_t)((1u << 30) + rng_next() % (1u << 30));
            int shift = (small ? 11 : 1) + 8 - bits + (int)(rng_next() % 3) - 1;
            if (half) shift = 8 - bits;
            if (rq_mode == 2 && shift > -1) shift = -1;
            rq[j].shift = shift < -31 ? -31 : shift > 30 ? 30 : shift;
        }
        rq_params(block, rq, hp, rq_mode);
        zp = (int)(rng_next() % 256) + out_min;
        act_lo = full_range ? out_min : out_min + (int)(rng_next() % 40) + 1;
        act_hi = full_range ? out_max : out_max - (int)(rng_next() % 40);
        args.params = block;
        args.rounding = rq_mode;
        args.c_zero_point = zp;
        args.act_min = act_lo;
        args.act_max = act_hi;
    }
    if (biasclamp) {
        float *params = guarded_alloc((size_t)n * 4, &rbias);
        for (long j = 0; j < n; j++) params[j] = (float)(bias[j] = random_value("fp32") * 37);
        /* NaN biases, quiet and signalling with payloads, in some columns: FADD returns the
         * NaN operand quieted (FPCR.DN = 0), FMAX/FMIN propagate it (Arm ARM DDI0487 FPProcessNaNs):
         * the output is the bias's bits with the quiet bit (22) set. */
        static const uint32_t nans[] = {0x7fc00000u, 0xffc12345u, 0x7f800001u, 0xffa5a5a5u};
        for (long j = 5; j < n; j += 11) {
            nan_bits[j] = nans[(j / 11) % 4];
            memcpy(&params[j], &nan_bits[j], 4);
        }
        lo = -(long)(rng_next() % 400) - 1;
        hi = (long)(rng_next() % 400) + 1;
        args.params = params;
        args.clamp_min = (float)lo;
        args.clamp_max = (float)hi;
    }
    if (tc.acc == 1) {
        size_t ld = (size_t)(n + 1) * 4, bytes = m ? (size_t)(m - 1) * ld + (size_t)n * 4 : 0;
        uint8_t *acc = guarded_alloc(bytes, &racc);
        for (long i = 0; i < m; i++)
            for (long j = 0; j < n; j++) {
                long v = random_value("fp32") * 1000;
                put_c(acc + i * ld, j, is_float, v);
                expect[i * hp + j] += v;
            }
        args.acc = acc; args.ld_acc_bytes = ld;
    } else if (tc.acc == 2) {
        for (long i = 0; i < m; i++)
            for (long j = 0; j < n; j++) {
                long v = random_value("fp32") * 1000;
                put_c(c + i * ldc, j, is_float, v);
                expect[i * hp + j] += v;
            }
        args.acc = c; args.ld_acc_bytes = ldc;
    }

    uint64_t after[2] = {~0ull, ~0ull};
    uint64_t mask = sme_call_checked(k->fn, a, b, tc.ksteps, c, ldc,
                                     use_args ? &args : NULL, after);
    char what[160];
    snprintf(what, sizeof what, "%s ksteps=%zu m_rem=%ld n_rem=%ld acc=%d rounding=%d (S=%ld)",
             k->symbol, tc.ksteps, tc.m_rem, tc.n_rem, tc.acc, requant ? rq_mode : -1, S);
    if (mask) FAIL("%s: callee-saved registers changed, mask 0x%llx", what, (unsigned long long)mask);
    if (after[0]) FAIL("%s: SVCR = 0x%llx after the call (PSTATE.SM/ZA left on)", what,
                       (unsigned long long)after[0]);
    if (after[1]) FAIL("%s: TPIDR2_EL0 = 0x%llx after the call", what, (unsigned long long)after[1]);

    int bad = 0;
    for (long i = 0; i < ep && !bad; i++) {
        uint8_t *row = c + i * ldc;
        long cols = i == ep - 1 ? hp : hp + 3;
        for (long j = 0; j < cols && !bad; j++) {
            if (i < m && j < n) {
                int64_t want = expect[i * hp + j];
                if (biasclamp) {
                    want += bias[j];
                    want = want < lo ? lo : want > hi ? hi : want;
                }
                if (requant) {
                    int w8 = requant_ref((int32_t)want, rq_mode, rq[j].offset, rq[j].mult,
                                            rq[j].shift, zp, act_lo, act_hi);
                    rq_outputs++;
                    rq_unclamped += w8 > act_lo && w8 < act_hi;
                    rq_tie_sensitive += w8 != requant_ref_half_up((int32_t)want, rq_mode,
                        rq[j].offset, rq[j].mult, rq[j].shift, zp, act_lo, act_hi);
                    int got8 = u8 ? row[j] : (int8_t)row[j];
                    if (got8 != w8) {
                        FAIL("%s: C[%ld][%ld] = %d, expected %d (int32 %lld, shift %d)", what,
                             i, j, got8, w8, (long long)want, rq[j].shift);
                        bad = 1;
                    }
                } else if (biasclamp && nan_bits[j]) {
                    uint32_t got;
                    memcpy(&got, row + 4 * j, 4);
                    if (got != (nan_bits[j] | 0x00400000u)) {
                        FAIL("%s: C[%ld][%ld] = 0x%08x, expected the NaN 0x%08x", what, i, j,
                             got, nan_bits[j] | 0x00400000u);
                        bad = 1;
                    }
                } else if (!c_exact(row, j, is_float, want)) {
                    FAIL("%s: C[%ld][%ld] = %lld, expected %lld", what, i, j,
                         (long long)get_c(row, j, is_float), (long long)want);
                    bad = 1;
                }
            } else if (requant ? row[j] != SENTINEL8 : ((uint32_t *)row)[j] != SENTINEL) {
                FAIL("%s: C[%ld][%ld] outside the %ldx%ld tile written", what, i, j, m, n);
                bad = 1;
            }
        }
    }
    guarded_free(&ra); guarded_free(&rb); guarded_free(&rc); guarded_free(&racc);
    guarded_free(&rbias); guarded_free(&rrq);
    free(av); free(bv); free(expect); free(bias); free(rq); free(nan_bits);
}

/* ---- lazy ZA save ------------------------------------------------------------------------- */
#include "sme_lazy_save.h"

/* one call of kernel k for check_lazy_save: results, SVCR = 0 and TPIDR2_EL0 = 0 checked */
static void lazy_save_call(const void *k)
{
    run_case((const sme_kernel_info *)k, (test_case){3, -1, -1, 0});
}

static void run_lazy_save(const sme_kernel_info *k, unsigned slices)
{
    check_lazy_save(k->symbol, slices, lazy_save_call, k);
}

/* 0: architectural 32-bit integer MOPA; 1: QEMU issue 2083's; -1 (and a message): neither. */
static int imopa_probe(void)
{
    int8_t a[256], b[256];
    int32_t out[64 * 64];
    for (int i = 0; i < 256; i++) { a[i] = (int8_t)(rng_next() >> 13); b[i] = (int8_t)(rng_next() >> 13); }
    sme_imopa_probe(a, b, out);
    int arch_ok = 1, bug_ok = 1;
    for (long i = 0; i < S; i++)
        for (long j = 0; j < S; j++) {
            int32_t want = 0, bug = 0;
            long bi = j % 2 ? i + 1 : i;
            for (int kk = 0; kk < 4; kk++) {
                want += a[4 * i + kk] * b[4 * j + kk];
                if (i % 2 == 0) bug += a[4 * bi + kk] * b[4 * j + kk];
            }
            arch_ok &= out[i * S + j] == want;
            bug_ok &= out[i * S + j] == bug;
        }
    if (arch_ok) return 0;
    if (bug_ok) return 1;
    printf("SMOPA probe: neither the architectural result nor QEMU issue 2083's\n");
    return -1;
}

static void run_kernel(const sme_kernel_info *k)
{
    long ep = k->tr * S, hp = k->tc * S;
    static const size_t ksteps[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 64};
    for (size_t i = 0; i < sizeof ksteps / sizeof ksteps[0]; i++)
        run_case(k, (test_case){ksteps[i], -1, -1, 0});
    /* partial tiles: rows around every row-block boundary, columns around every column tile */
    long ms[] = {0, 1, S - 1, S, S + 1, ep - 1, ep}, ns[] = {0, 1, S - 1, S, S + 1, hp - 1, hp};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++) {
            if (ms[i] > ep || ns[j] > hp) continue;
            run_case(k, (test_case){(i + j) % 3 + 1, ms[i], ns[j], (int)((i + 2 * j) % 3)});
        }
    run_case(k, (test_case){0, ep, hp, 1});     /* ksteps 0: C = acc */
    run_case(k, (test_case){5, ep, hp, 2});     /* in place */
    run_case(k, (test_case){5, ep, hp, 0});
    run_lazy_save(k, (unsigned)(S * 4));        /* every ZA vector */
    run_lazy_save(k, 3);                        /* the first 3 */
    run_lazy_save(k, 0);
    if (k->epilogue >= 2) {     /* the requant cases must be able to fail */
        if (rq_unclamped * 3 < rq_outputs || rq_tie_sensitive == 0)
            FAIL("%s: weak requant cases: %ld of %ld outputs inside the clamp, %ld decided by "
                 "the tie fix-up", k->symbol, rq_unclamped, rq_outputs, rq_tie_sensitive);
        rq_outputs = rq_unclamped = rq_tie_sensitive = 0;
    }
}

int main(int argc, char **argv)
{
    long want = argc > 1 ? atol(argv[1]) : 0;
    long svl = sme_svl_bytes();
    if (svl != want) { printf("SVL %ld bytes, expected %ld\n", svl, want); return 1; }
    S = svl / 4;
    imopa_mode = imopa_probe();
    if (imopa_mode < 0) return 1;
    if (imopa_mode)
        printf("note: this emulator's 32-bit integer MOPA is QEMU issue 2083's: int8 kernels "
               "checked against that behaviour\n");
    int ran = 0;
    for (size_t i = 0; i < sizeof KERNELS / sizeof KERNELS[0]; i++) {
        int selected = argc <= 2;
        for (int a = 2; a < argc; a++) selected |= !strcmp(argv[a], KERNELS[i].symbol);
        if (!selected) continue;
        int before = failures;
        run_kernel(&KERNELS[i]);
        printf("%s %s: %d failure(s)\n", failures == before ? "ok" : "FAILED", KERNELS[i].symbol,
               failures - before);
        ran++;
    }
    if (!ran) { printf("no kernel selected\n"); return 1; }
    return failures != 0;
}
