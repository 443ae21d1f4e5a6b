/* Kernel contract v2 cases of kernel_harness.c (included by it; uses its helpers).
 *
 *   kernel_harness -v2 SYMBOL KSTEPS...
 *
 * For every KSTEPS, every accumulator input (none; a separate tile; for raw kernels C itself)
 * and every partial tile 1 <= m_rem <= ep, 1 <= n_rem <= hp, the kernel runs once with C, the
 * accumulator tile, the epilogue parameters and the h_tile_args block each flush against a
 * guard page -- after the buffer when m_rem + n_rem is even, before it otherwise -- so a read
 * or write outside them faults. C's row gaps hold sentinels that must survive; registers are
 * checked around the call (call_checked). Expected values:
 *   raw int32/uint32  exact sum over k + the accumulator input (wrapping), from the C reference;
 *   raw fp32/bf16     the raw kernel's own full tile, bit for bit (a partial tile stores the
 *                     same values); that full tile lies within fp_bound of a double reference
 *                     whose terms include the accumulator input;
 *   requant           requant.c's scalar reference (requant_row_scalar, ts_requantize's own
 *                     code, #included from the generated folder) on the exact int32 tile, with
 *                     the TFLite parameters the kernel's packed column parameters came from;
 *                     the configurations double/single rounding x per-tensor/per-channel,
 *                     and double rounding with every shift negative (args->rounding 2, its
 *                     own parameter form) rotate over the cases;
 *   requant_u8        uint8 C (zero point, clamp 0..255): the same reference with zero point
 *                     and clamp - 128, + 128 (ts_quant_u8_as_s8's identity; the kernel
 *                     narrows with SQXTUN and clamps unsigned, another route);
 *   biasclamp         C float arithmetic on the raw kernel's tile (same accumulator input):
 *                     x + bias[c] (NaN biases included), then max/min with the clamp bounds
 *                     as FMAX/FMIN do them;
 *   K split (raw)     two calls, the second accumulating onto the first's tile, equal the
 *                     unsplit call bit for bit (fp32 included). */
#include H_REQUANT_C

#define V2_REGION_BYTES 65536u      /* C, acc, params, args: placed inside one mapping each */

/* A buffer of `size` bytes placed flush against the guard page after (tail) or before a
 * mapping made once (guarded_alloc_at with the region's full size). */
typedef struct { guarded_region r; unsigned char *body; size_t body_len; } v2_region;

static void v2_region_init(v2_region *v)
{
    v->body = guarded_alloc_at(V2_REGION_BYTES, 0, &v->r);
    v->body_len = V2_REGION_BYTES;
}

static void *v2_place(v2_region *v, size_t size, int tail)
{
    if (size > v->body_len) { fprintf(stderr, "v2 region too small\n"); exit(2); }
    return tail ? v->body + v->body_len - size : v->body;
}

static int32_t v2_rand_range(int32_t lo, int32_t hi)
{
    return lo + (int32_t)(rng_next() % (uint64_t)((int64_t)hi - lo + 1));
}

/* FMAX / FMIN (Arm ARM C7.2 FMAX/FMIN, FPMax/FPMin): the larger / smaller, +0 > -0; a NaN
 * operand gives that NaN (the first if both; FPCR.DN = 0 on Linux), a signalling one quieted.
 * Only quiet NaNs reach these here (the fadd before them quiets). */
static float v2_fmax(float a, float b)
{
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    if (a == b) return signbit(a) ? b : a;
    return a > b ? a : b;
}
static float v2_fmin(float a, float b)
{
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    if (a == b) return signbit(a) ? a : b;
    return a < b ? a : b;
}

/* Tile limits of this harness: rows, columns (per-column arrays) and elements (tile arrays;
 * the fp16 GEMV tile is 1 x 168). */
#define V2_MAX_EP 32
#define V2_MAX_HP 256
#define V2_MAX_TILE (32 * 128)

/* TFLite parameters of one ksteps run: hp columns each. */
typedef struct {
    int32_t col_offset[V2_MAX_HP], bias[V2_MAX_HP], multiplier[V2_MAX_HP], shift[V2_MAX_HP];
    int has_bias;
    float fbias[V2_MAX_HP];
} v2_columns;

/* A shift that maps magnitudes around 2^bits into int8 range, or an extreme one. */
static int32_t v2_shift(int bits)
{
    uint64_t r = rng_next() % 10;
    if (r == 0) return v2_rand_range(1, 30);
    if (r == 1) return v2_rand_range(-31, -20);
    if (r == 2) return v2_rand_range(-31, 30);
    int32_t s = 7 - bits + v2_rand_range(-3, 3);
    return s < -31 ? -31 : s > 30 ? 30 : s;
}

static void v2_make_columns(v2_columns *c, size_t hp, int bits, int negative)
{
    c->has_bias = (rng_next() & 3) != 0;
    for (size_t j = 0; j < hp; j++) {
        c->col_offset[j] = v2_rand_range(-(1 << 20), 1 << 20);
        c->bias[j] = (rng_next() & 7) == 0 ? v2_rand_range(INT32_MIN, INT32_MAX)
                                          : v2_rand_range(-(1 << 16), 1 << 16);
        uint64_t r = rng_next() % 20;
        c->multiplier[j] = r == 0 ? 0 : r == 1 ? v2_rand_range(1, 1 << 20)
                         : r == 2 ? INT32_MAX : v2_rand_range(1 << 30, INT32_MAX);
        c->shift[j] = v2_shift(bits);
        if (negative && c->shift[j] >= 0) c->shift[j] = v2_rand_range(-31, -1);
        if (rng_next() % 4 == 0) {
            /* a small right shift e after a multiplier that leaves about 2^(7+e): the last
             * rounding meets exact halves often (ties away from zero vs SRSHL's upwards) */
            int e = v2_rand_range(1, 3), p = 31 - bits + 7 + e;
            c->shift[j] = -e;
            c->multiplier[j] = p >= 31 ? INT32_MAX : p < 0 ? 1 : (int32_t)1 << p;
        }
        c->fbias[j] = (rng_next() & 7) == 0 ? 0.0f : random_float(-20, 20);
        if (rng_next() % 24 == 0)       /* a NaN bias, quiet or signalling, with a payload */
            c->fbias[j] = float_of_bits(rng_next() & 1 ? 0x7FC12345u : 0xFF812345u);
    }
}

/* The requant column parameters of q + col_offset (ABI: 64 bytes per block of `cols`
 * columns, lane l of block g for column g * cols + l % cols: cols 4 for the int32 row vectors,
 * 2 for the MMLA 2x2 tiles, [c c+1 c c+1]), in the form args->rounding `mode` says (2: double
 * rounding, every shift < 0). */
static void v2_pack_requant(unsigned char *dst, size_t hp, size_t cols, const H_QUANT *q,
                            const int32_t *col_offset, int mode)
{
    size_t groups = (hp + cols - 1) / cols;
    memset(dst, 0, groups * 64);
    for (size_t i = 0; i < groups * 4; i++) {
        size_t g = i / 4, l = i % 4, c = g * cols + l % cols;
        int32_t *w = (int32_t *)(dst + 64 * g);
        int64_t *d = (int64_t *)(dst + 64 * g + 32);
        int32_t off = 0, m = 0, s = -31;
        if (c < hp) {
            size_t ch = q->per_channel ? c : 0;
            off = (int32_t)((uint32_t)col_offset[c] + (q->bias ? (uint32_t)q->bias[c] : 0u));
            m = q->multiplier[ch];
            s = q->shift[ch];
        }
        w[l] = off;
        w[4 + l] = m;
        if (q->rounding == H_ROUND_SINGLE) {
            d[l] = (int64_t)s - 31;          /* lanes 0-1 at +32, 2-3 at +48 */
        } else if (mode == 2) {
            w[8 + l] = (int32_t)((int64_t)1 << (31 + (s < 0 ? s : -1)));   /* 2^(31 + shift) */
        } else {
            w[8 + l] = s > 0 ? s : 0;
            w[12 + l] = s > 0 ? 0 : s;
        }
    }
}

#define V2_SENTINEL 0x5A

/* Element i (cb = 2 or 4 bytes) of a tile of raw results, as bits, and its value (fp16 / fp32). */
static uint32_t v2_get(const void *tile, size_t i, size_t cb)
{
    uint32_t u = 0;
    memcpy(&u, (const unsigned char *)tile + i * cb, cb);
    return u;
}

static void v2_put(void *tile, size_t i, uint32_t bits, size_t cb)
{
    memcpy((unsigned char *)tile + i * cb, &bits, cb);
}

static double v2_fp_value(uint32_t bits, size_t cb)
{
    return cb == 2 ? half_value((uint16_t)bits) : float_of_bits(bits);
}

static int run_v2(const kernel_info *k, size_t ksteps, v2_region *reg)
{
    enum elem ea = elem_of(k->a_type), eb = elem_of(k->b_type), ec = elem_of(k->c_type);
    const int raw = !strcmp(k->epilogue, "raw");
    /* requant_u8: uint8 C, zero point and clamp in 0..255 */
    const int u8 = !strcmp(k->epilogue, "requant_u8");
    const int requant = u8 || !strcmp(k->epilogue, "requant");
    const int is_fp = ec == E_FP32 || ec == E_FP16;
    const size_t cb = elem_bytes(ec);     /* bytes of one raw result: 4, or 2 for fp16 */
    size_t ep = (size_t)k->ep, hp = (size_t)k->hp, lp = (size_t)k->lp, K = ksteps * lp;
    size_t a_count = ksteps * ep * lp, b_count = ksteps * hp * lp;
    size_t out_bytes = requant ? 1 : cb;
    int failures = 0;

    guarded_region ra[2], rb[2];
    void *a[2], *b[2];
    for (int t = 0; t < 2; t++) {
        a[t] = guarded_alloc_at(a_count * elem_bytes(ea), t, &ra[t]);
        b[t] = guarded_alloc_at(b_count * elem_bytes(eb), t, &rb[t]);
    }
    fill(a[0], a_count, ea);
    fill(b[0], b_count, eb);
    memcpy(a[1], a[0], a_count * elem_bytes(ea));
    memcpy(b[1], b[0], b_count * elem_bytes(eb));

    /* reference products, the accumulator-input tile */
    static int64_t prod[V2_MAX_TILE];
    static double dsum[V2_MAX_TILE], dabs[V2_MAX_TILE];
    static uint32_t acc_in[V2_MAX_TILE], full[2][V2_MAX_TILE];
    int64_t most = 1;
    for (size_t i = 0; i < ep; i++)
        for (size_t j = 0; j < hp; j++) {
            double sum = 0, abs_sum = 0;
            int64_t isum = 0;
            for (size_t s = 0; s < ksteps; s++)
                for (size_t l = 0; l < lp; l++) {
                    double x = value(a[0], (s * ep + i) * lp + l, ea);
                    double y = value(b[0], (s * hp + j) * lp + l, eb);
                    sum += x * y;
                    abs_sum += fabs(x * y);
                    if (!is_fp) isum += (int64_t)x * (int64_t)y;
                }
            prod[i * hp + j] = isum;
            dsum[i * hp + j] = sum;
            dabs[i * hp + j] = abs_sum;
            if (is_fp && cb == 2) {   /* an fp16 value of moderate size (no overflow) */
                uint64_t r = rng_next();
                acc_in[i * hp + j] = (uint32_t)((r & 1) << 15 | (10 + (r >> 1) % 8) << 10
                                                | ((r >> 8) & 0x3FF));
            } else if (is_fp) {
                float f = random_float(-20, 20);
                acc_in[i * hp + j] = bits_of_float(f);
            } else {
                acc_in[i * hp + j] = (uint32_t)v2_rand_range(-(1 << 20), 1 << 20);
                if ((rng_next() & 15) == 0) acc_in[i * hp + j] = (uint32_t)rng_next();
            }
            int64_t mag = llabs(isum) + (1 << 20);
            if (mag > most) most = mag;
        }
    int bits = 0;
    while (bits < 40 && ((int64_t)1 << bits) < most) bits++;

    /* fp: the raw kernel's full tiles without / with the accumulator input, checked against
     * the double reference (the accumulator input is one more term) */
    static uint32_t acc_tile[V2_MAX_TILE];    /* acc_in as cb-byte elements, row stride hp */
    for (size_t i = 0; i < ep * hp; i++)
        v2_put(acc_tile, i, acc_in[i], cb);
    if (is_fp) {
        static uint32_t tile[2][V2_MAX_TILE];
        h_tile_args full_args = {ep, hp, acc_tile, hp * cb, NULL, 0, 0, 0, 0, 0, 0};
        k->raw(a[0], b[0], ksteps, tile[0], hp * cb, NULL);
        k->raw(a[0], b[0], ksteps, tile[1], hp * cb, &full_args);
        for (int m = 0; m < 2; m++)
            for (size_t i = 0; i < ep * hp; i++) {
                full[m][i] = v2_get(tile[m], i, cb);
                double in = m ? v2_fp_value(acc_in[i], cb) : 0.0;
                double want = dsum[i] + in, g = v2_fp_value(full[m][i], cb);
                double bound = fp_bound(ea, ec, K + 1, dabs[i] + fabs(in));
                if (!(fabs(g - want) <= bound) && failures++ < 8)
                    printf("FAIL %s ksteps=%zu raw full tile%s: C[%zu][%zu] = %.9g, want %.9g (+-%.3g)\n",
                           k->name, ksteps, m ? " + acc" : "", i / hp, i % hp, g, want, bound);
            }
    }

    /* K split into two blocks (raw kernels): the second call accumulates onto the first one's
     * tile and must give the unsplit tile bit for bit -- for fp32 too, since the products
     * continue the same fused multiply-add chain from the stored value */
    if (raw && ksteps >= 2) {
        static uint32_t whole[V2_MAX_TILE], part[V2_MAX_TILE];
        size_t s1 = ksteps / 2;
        h_tile_args acc_args = {ep, hp, part, hp * cb, NULL, 0, 0, 0, 0, 0, 0};
        k->fn(a[0], b[0], ksteps, whole, hp * cb, NULL);
        k->fn(a[0], b[0], s1, part, hp * cb, NULL);
        k->fn((const char *)a[0] + s1 * ep * lp * elem_bytes(ea),
              (const char *)b[0] + s1 * hp * lp * elem_bytes(eb), ksteps - s1, part, hp * cb,
              &acc_args);
        for (size_t i = 0; i < ep * hp; i++)
            if (v2_get(part, i, cb) != v2_get(whole, i, cb) && failures++ < 8)
                printf("FAIL %s ksteps=%zu split %zu + %zu: C[%zu][%zu] = 0x%08x, unsplit 0x%08x\n",
                       k->name, ksteps, s1, ksteps - s1, i / hp, i % hp, v2_get(part, i, cb),
                       v2_get(whole, i, cb));
    }

    v2_columns all_cols[2];          /* any shifts; every shift < 0 */
    v2_make_columns(&all_cols[0], hp, bits, 0);
    v2_make_columns(&all_cols[1], hp, bits, 1);
    const int32_t out_min = u8 ? 0 : -128, out_max = u8 ? 255 : 127;
    int32_t zp = v2_rand_range(out_min, out_max);
    int32_t lo = v2_rand_range(out_min, out_max), hi = v2_rand_range(out_min, out_max);
    if (lo > hi) { int32_t t = lo; lo = hi; hi = t; }
    if ((rng_next() & 3) == 0) { lo = out_min; hi = out_max; }

    const int modes = raw ? 3 : 2;      /* 0: no acc, 1: separate acc tile, 2: acc == c */
    size_t case_no = 0;
    for (int mode = 0; mode < modes; mode++)
    for (size_t m_rem = 1; m_rem <= ep; m_rem++)
    for (size_t n_rem = 1; n_rem <= hp; n_rem++, case_no++) {
        int tail = (m_rem + n_rem) % 2 == 0;
        size_t ldc = (n_rem + (m_rem + n_rem + ksteps) % 3) * out_bytes;
        size_t c_len = (m_rem - 1) * ldc + n_rem * out_bytes;
        unsigned char *c = v2_place(&reg[0], c_len, tail);
        memset(c, V2_SENTINEL, c_len);
        const size_t acc_bytes = requant ? 4 : cb;   /* the accumulator type's */
        size_t ld_acc = (n_rem + (m_rem + 2 * n_rem) % 4) * acc_bytes;
        const void *acc = NULL;
        if (mode == 1) {
            size_t acc_len = (m_rem - 1) * ld_acc + n_rem * acc_bytes;
            unsigned char *buf = v2_place(&reg[1], acc_len, tail);
            memset(buf, 0xEE, acc_len);
            for (size_t i = 0; i < m_rem; i++)
                for (size_t j = 0; j < n_rem; j++)
                    v2_put(buf + i * ld_acc, j, acc_in[i * hp + j], acc_bytes);
            acc = buf;
        } else if (mode == 2) {
            for (size_t i = 0; i < m_rem; i++)
                for (size_t j = 0; j < n_rem; j++)
                    v2_put(c + i * ldc, j, acc_in[i * hp + j], cb);
            acc = c;
            ld_acc = ldc;
        }
        /* epilogue parameters */
        H_QUANT q;
        memset(&q, 0, sizeof q);
        /* cfg: 0-3 double/single x per-tensor/per-channel on any shifts; 4-5 double rounding
         * per-tensor/per-channel with every shift < 0 (args->rounding 2) */
        int cfg = (int)((m_rem * 7 + n_rem + (size_t)mode) % 6);
        const v2_columns *cols = &all_cols[cfg >= 4];
        q.rounding = cfg < 4 && (cfg & 1) ? H_ROUND_SINGLE : H_ROUND_DOUBLE;
        q.per_channel = cfg < 4 ? cfg >> 1 : cfg - 4;
        int rounding_arg = cfg >= 4 ? 2 : q.rounding == H_ROUND_SINGLE;
        q.bias = cols->has_bias ? cols->bias : NULL;
        q.multiplier = cols->multiplier;
        q.shift = cols->shift;
        /* the cases rotate: the whole output range (the kernels skip that clamp), one bound
         * at the type's limit and the other one inside it (clamped), random bounds */
        const int32_t act_lo = case_no % 4 == 0 || case_no % 4 == 1 ? out_min
                               : case_no % 4 == 2 ? out_min + 1 : lo;
        const int32_t act_hi = case_no % 4 == 0 || case_no % 4 == 2 ? out_max
                               : case_no % 4 == 1 ? out_max - 1 : hi;
        q.c_zero_point = zp;
        q.act_min = act_lo;
        q.act_max = act_hi;
        size_t groups = (hp + 3) / 4;
        void *params = NULL;
        float fmin_v = -INFINITY, fmax_v = INFINITY;
        if (requant) {
            size_t blocks = (hp + (size_t)k->params_cols - 1) / (size_t)k->params_cols;
            params = v2_place(&reg[2], blocks * 64, tail);
            v2_pack_requant(params, hp, (size_t)k->params_cols, &q, cols->col_offset,
                            rounding_arg);
        } else if (!raw) {
            params = v2_place(&reg[2], groups * 16, tail);
            memset(params, 0, groups * 16);
            memcpy(params, cols->fbias, hp * 4);
            if (cfg != 0) {       /* clamp bounds from the tile's own values */
                float x = float_of_bits(full[mode != 0][rng_next() % (ep * hp)]);
                float y = float_of_bits(full[mode != 0][rng_next() % (ep * hp)]);
                fmin_v = x < y ? x : y;
                fmax_v = x < y ? y : x;
            }
        }
        h_tile_args *args = v2_place(&reg[3], sizeof(h_tile_args), tail);
        h_tile_args init = {m_rem, n_rem, acc, ld_acc, params, rounding_arg, zp, act_lo, act_hi,
                             fmin_v, fmax_v};
        *args = init;

        unsigned regs = call_checked(k->fn, a[tail], b[tail], ksteps, c, ldc, args);
        if (regs && failures++ < 8)
            printf("FAIL %s ksteps=%zu: callee-saved state clobbered, mask 0x%x\n", k->name,
                   ksteps, regs);
        for (size_t i = 0; i < m_rem; i++) {
            int8_t want8[V2_MAX_HP];
            if (requant) {
                int32_t x[V2_MAX_HP];
                for (size_t j = 0; j < n_rem; j++)
                    x[j] = (int32_t)((uint32_t)prod[i * hp + j]
                                     + (mode ? acc_in[i * hp + j] : 0u));
                /* uint8: the int8 reference with zero point and clamp - 128, then + 128
                 * (the kernel narrows with SQXTUN and clamps with UMAX/UMIN instead) */
                H_QUANT qs = q;
                if (u8) {
                    qs.c_zero_point -= 128;
                    qs.act_min -= 128;
                    qs.act_max -= 128;
                }
                requant_row_scalar(x, n_rem, 0, &qs, cols->col_offset, want8);
            }
            for (size_t j = 0; j < n_rem; j++) {
                unsigned char *cell = c + i * ldc + j * out_bytes;
                uint32_t got = 0, want = 0;
                if (requant) {
                    got = u8 ? cell[0] : (uint32_t)(int32_t)(int8_t)cell[0];
                    want = u8 ? (uint32_t)(want8[j] + 128) : (uint32_t)(int32_t)want8[j];
                } else {
                    memcpy(&got, cell, cb);
                    if (!is_fp) {
                        want = (uint32_t)prod[i * hp + j] + (mode ? acc_in[i * hp + j] : 0u);
                    } else {
                        want = full[mode != 0][i * hp + j];
                        if (!raw) {
                            float v = float_of_bits(want) + cols->fbias[j];
                            want = bits_of_float(v2_fmin(v2_fmax(v, fmin_v), fmax_v));
                        }
                    }
                }
                if (got != want && failures++ < 8)
                    printf("FAIL %s ksteps=%zu mode=%d m_rem=%zu n_rem=%zu cfg=%d: C[%zu][%zu] "
                           "= 0x%08x, want 0x%08x\n", k->name, ksteps, mode, m_rem, n_rem, cfg,
                           i, j, got, want);
            }
            for (size_t g = n_rem * out_bytes; i + 1 < m_rem && g < ldc; g++)
                if (c[i * ldc + g] != V2_SENTINEL && failures++ < 8)
                    printf("FAIL %s ksteps=%zu mode=%d m_rem=%zu n_rem=%zu: wrote row %zu byte "
                           "%zu, outside the tile\n", k->name, ksteps, mode, m_rem, n_rem, i, g);
        }
    }
    /* m_rem or n_rem 0 writes nothing: C, acc and params are empty buffers at a guard page */
    for (int empty = 0; empty < 2; empty++) {
        void *c = v2_place(&reg[0], 0, 1), *acc = v2_place(&reg[1], 0, 1);
        void *params = requant ? v2_place(&reg[2], (hp + (size_t)k->params_cols - 1)
                                                   / (size_t)k->params_cols * 64, 1)
                       : raw ? NULL : v2_place(&reg[2], (hp + 3) / 4 * 16, 1);
        h_tile_args *args = v2_place(&reg[3], sizeof(h_tile_args), 1);
        h_tile_args init = {empty ? ep : 0, empty ? 0 : hp, acc, 0, params, 0, 0, -128, 127,
                            -INFINITY, INFINITY};
        *args = init;
        unsigned regs = call_checked(k->fn, a[1], b[1], ksteps, c, 0, args);
        if (regs && failures++ < 8)
            printf("FAIL %s ksteps=%zu empty tile: callee-saved state clobbered, mask 0x%x\n",
                   k->name, ksteps, regs);
    }
    for (int t = 0; t < 2; t++) {
        guarded_free(&ra[t]);
        guarded_free(&rb[t]);
    }
    (void)case_no;
    return failures;
}

static int main_v2(int argc, char **argv)
{
    const kernel_info *k = NULL;
    for (size_t i = 0; i < sizeof KERNELS / sizeof KERNELS[0]; i++)
        if (!strcmp(KERNELS[i].name, argv[1])) k = &KERNELS[i];
    if (!k) {
        fprintf(stderr, "no kernel %s in this harness\n", argv[1]);
        return 2;
    }
    if (k->ep > V2_MAX_EP || k->hp > V2_MAX_HP || k->ep * k->hp > V2_MAX_TILE) {
        fprintf(stderr, "tile too large for the v2 harness\n");
        return 2;
    }
    v2_region reg[4];
    for (int i = 0; i < 4; i++) v2_region_init(&reg[i]);
    int failures = 0;
    for (int i = 2; i < argc; i++) {
        size_t ksteps = (size_t)strtoul(argv[i], NULL, 10);
        ts_test_rng = seed_of(k->name, ksteps) ^ 0x5eed;
        failures += run_v2(k, ksteps, reg);
    }
    printf("%s v2 %s: %d failure(s)\n", failures ? "FAIL" : "ok", k->name, failures);
    return failures != 0;
}

/* ---- strip entries (README "Micro-kernel ABI", strips) --------------------------------------
 * <kernel>_strip(a, b, ksteps, c, ldc, args, strip) must give, byte for byte, what one tile
 * entry call per tile gives (the tile entry itself is checked against the scalar reference by
 * run_v2): T tiles stepping A and C (a column of tiles, as the engine runs them), B, C and the
 * column parameters (a row), every step negative (the last tile first), no tile; on the fast
 * path (full tiles, rounding 2, no clamp, no acc) and off it (each other rounding, a clamp,
 * partial tiles, an acc tile: the strip calls the tile entry per tile). Bytes of C between and
 * around the tiles keep their sentinel; callee-saved registers survive. */
#define STRIP_TILES 3

static int run_strip(const kernel_info *k, size_t ksteps)
{
    const size_t ep = (size_t)k->ep, hp = (size_t)k->hp, lp = (size_t)k->lp;
    const int u8 = !strcmp(k->epilogue, "requant_u8");
    const enum elem ea = elem_of(k->a_type), eb = elem_of(k->b_type);
    const size_t a_panel = ksteps * ep * lp * elem_bytes(ea);              /* bytes */
    const size_t b_panel = ksteps * hp * lp * elem_bytes(eb);
    const size_t gap = 64;                  /* between panels: strides are not panel sizes */
    const size_t blocks = (hp + (size_t)k->params_cols - 1) / (size_t)k->params_cols;
    const size_t pbytes = blocks * 64;
    int failures = 0;
    unsigned char *a = malloc(STRIP_TILES * (a_panel + gap) + 1);
    unsigned char *b = malloc(STRIP_TILES * (b_panel + gap) + 1);
    unsigned char *params = malloc(STRIP_TILES * (pbytes + gap));
    int32_t *acc = malloc(ep * hp * sizeof(int32_t));
    fill(a, STRIP_TILES * (a_panel + gap) / elem_bytes(ea), ea);
    fill(b, STRIP_TILES * (b_panel + gap) / elem_bytes(eb), eb);
    for (size_t i = 0; i < ep * hp; i++)
        acc[i] = v2_rand_range(-(1 << 20), 1 << 20);
    v2_columns cols[2];
    v2_make_columns(&cols[0], hp, 24, 0);
    v2_make_columns(&cols[1], hp, 24, 1);
    const int32_t out_min = u8 ? 0 : -128, out_max = u8 ? 255 : 127;
    /* cases: 0-1 fast (per-tensor, per-channel), 2 double rounding, 3 single, 4 a clamp,
     * 5 partial tile, 6 acc tile */
    for (int cfg = 0; cfg < 7; cfg++)
    for (int shape = 0; shape < 4; shape++) {
        H_QUANT q;
        memset(&q, 0, sizeof q);
        const v2_columns *cv = &cols[cfg != 2 && cfg != 3];
        q.rounding = cfg == 3 ? H_ROUND_SINGLE : H_ROUND_DOUBLE;
        q.per_channel = cfg != 0;
        q.bias = cv->has_bias ? cv->bias : NULL;
        q.multiplier = cv->multiplier;
        q.shift = cv->shift;
        q.c_zero_point = v2_rand_range(out_min, out_max);
        q.act_min = cfg == 4 ? out_min + 3 : out_min;
        q.act_max = cfg == 4 ? out_max - 5 : out_max;
        const int rounding_arg = cfg == 2 ? 0 : cfg == 3 ? 1 : 2;
        for (size_t t = 0; t < STRIP_TILES; t++) {  /* each tile's parameters its own */
            v2_pack_requant(params + t * (pbytes + gap), hp, (size_t)k->params_cols, &q,
                            cv->col_offset, rounding_arg);
            int32_t *w = (int32_t *)(void *)(params + t * (pbytes + gap));
            w[0] += (int32_t)t * 977;               /* an offset of tile t's own */
        }
        /* shape 0: a column (A and C step), 1: a row (B, C and params step), 2: the column
         * last tile first, 3: no tile */
        const size_t tiles = shape == 3 ? 0 : STRIP_TILES;
        const size_t ldc = shape == 1 ? STRIP_TILES * hp + 5 : hp + 3;     /* int8 C */
        const size_t c_len = (shape == 1 ? ep : STRIP_TILES * ep) * ldc;
        ptrdiff_t a_step = 0, b_step = 0, c_step = 0, p_step = 0;
        size_t a0 = 0, c0 = 0;
        if (shape == 1) {
            b_step = (ptrdiff_t)(b_panel + gap);
            c_step = (ptrdiff_t)hp;
            p_step = (ptrdiff_t)(pbytes + gap);
        } else {
            a_step = (ptrdiff_t)(a_panel + gap);
            c_step = (ptrdiff_t)(ep * ldc);
            if (shape == 2) {
                a0 = (STRIP_TILES - 1) * (a_panel + gap);
                c0 = (STRIP_TILES - 1) * ep * ldc;
                a_step = -a_step;
                c_step = -c_step;
            }
        }
        unsigned char *got = malloc(c_len), *want = malloc(c_len);
        memset(got, V2_SENTINEL, c_len);
        memset(want, V2_SENTINEL, c_len);
        h_tile_args args = {cfg == 5 ? ep - 1 : ep, cfg == 5 ? hp - 1 : hp,
                            cfg == 6 ? acc : NULL, hp * 4, params, rounding_arg,
                            q.c_zero_point, q.act_min, q.act_max, 0, 0};
        for (size_t t = 0; t < tiles; t++) {
            h_tile_args one = args;
            one.params = params + (ptrdiff_t)t * p_step;
            k->fn(a + a0 + (ptrdiff_t)t * a_step, b + (ptrdiff_t)t * b_step, ksteps,
                  want + c0 + (ptrdiff_t)t * c_step, ldc, &one);
        }
        const h_strip strip = {tiles, a_step, b_step, c_step, p_step};
        unsigned regs = call_checked_strip(k->strip, a + a0, b, ksteps, got + c0, ldc, &args,
                                           &strip);
        if (regs && failures++ < 8)
            printf("FAIL %s_strip ksteps=%zu cfg=%d shape=%d: callee-saved state clobbered, "
                   "mask 0x%x\n", k->name, ksteps, cfg, shape, regs);
        for (size_t i = 0; i < c_len; i++)
            if (got[i] != want[i] && failures++ < 8)
                printf("FAIL %s_strip ksteps=%zu cfg=%d shape=%d: C byte %zu (row %zu, column "
                       "%zu) = 0x%02x, the tile entry's 0x%02x\n", k->name, ksteps, cfg, shape,
                       i, i / ldc, i % ldc, got[i], want[i]);
        free(got);
        free(want);
    }
    free(a);
    free(b);
    free(params);
    free(acc);
    return failures;
}

static int main_strip(int argc, char **argv)
{
    const kernel_info *k = NULL;
    for (size_t i = 0; i < sizeof KERNELS / sizeof KERNELS[0]; i++)
        if (!strcmp(KERNELS[i].name, argv[1])) k = &KERNELS[i];
    if (!k || !k->strip) {
        fprintf(stderr, "no kernel %s with a strip entry in this harness\n", argv[1]);
        return 2;
    }
    int failures = 0;
    for (int i = 2; i < argc; i++) {
        size_t ksteps = (size_t)strtoul(argv[i], NULL, 10);
        ts_test_rng = seed_of(k->name, ksteps) ^ 0x5171;
        failures += run_strip(k, ksteps);
    }
    printf("%s strip %s: %d failure(s)\n", failures ? "FAIL" : "ok", k->name, failures);
    return failures != 0;
}
