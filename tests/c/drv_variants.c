/* Run-time kernel variants (per core class): which class the running core is, what each CPU
 * name selects, that every variant of an instruction computes the same bits, and which packed
 * handles a call accepts when its kernel is another variant.
 *
 * Output, one fact per line (tests/test_drivers_variants.py checks them against the manifest
 * and its own MIDR table):
 *   features=<bits> class=<n>                ts_cpu_features, the running core's class
 *                                            (ts_current_core_class)
 *   midr=<hex> class=<n>                     ts_core_class_of_midr for each argv MIDR value
 *   core=<name> part=<hex> class=<n> l1d=<bytes> l2=<bytes>
 *                                            each row of ts_cpu_cores (the names a context
 *                                            may set, with the MIDR part each stands for and
 *                                            the caches of a call's blocks on it, 0: unknown)
 *   cpu=<name> rc=<rc> <type>=<symbol> ...   ts_cpu_lookup / ts_select_path_cpu per name
 *   ctx=<name> rc=<rc> <type>=<symbol> ...   a context after ts_context_set_cpu(name): what
 *                                            ts_select_path_ctx picks (the engine's choice)
 *   auto <type>=<symbol> ...                 ts_gemm_kernel
 *   same <type> <symbol> <symbol>            two variants of one instruction, bit-identical
 *   tail <symbol> <rows>=<symbol|NULL> ...   ts_tail_path of each path for 1 .. ep-1 rows (the
 *                                            kernel of a call's last, shorter A panel)
 *   ntail <symbol> <cols>=<symbol|NULL> ...  ts_ntail_of of each path for 1 .. hp-1 columns (the
 *                                            column-tail kernel of a last, narrower B panel)
 *   handle <type> <packed symbol> rc=<rc>    a *_prepacked call (M rows, then M = 1: the GEMV
 *                                            kernel where the path has one) with a handle
 *                                            packed for that path
 *   failures <n>
 * With the single argument "names": the features, core, ctx and auto lines only (what a
 * context naming each core selects, for a run with qemu reporting that core's MIDR).
 * Results of every path are also checked against an integer reference (int types). */
#include "drv_api_common.h"   /* first: sets _DEFAULT_SOURCE */

#include <stdint.h>

#include "ts_context_internal.h"
#include "ts_gemm_internal.h"

typedef struct {
    int type;
    const char *label;
    int run;   /* 1: variants and handles checked here; 0: selection only (the fp16 types'
                  results and handles: drv_api_gemm / drv_api_errors; qdyn: drv_api_qdyn) */
} gemm_type_name;

static const gemm_type_name TYPES[] = {
    { TS_GEMM_F32, "f32", 1 }, { TS_GEMM_BF16, "bf16", 1 }, { TS_GEMM_INT8, "int8", 1 },
    { TS_GEMM_U8S8, "u8s8", 1 }, { TS_GEMM_U8U32, "u8u32", 1 }, { TS_GEMM_F16, "f16", 0 },
    { TS_GEMM_F16F32, "f16f32", 0 }, { TS_GEMM_QDYN, "qdyn", 0 },
};
#define N_TYPES (sizeof TYPES / sizeof TYPES[0])

enum { M = 31, N = 29, K = 67 };

static unsigned char A[M * K * 4], B[K * N * 4];

static void fill_inputs(int type)
{
    for (size_t i = 0; i < M * K; ++i) {
        if (type == TS_GEMM_F32 || type == TS_GEMM_BF16) {
            float v = rand_f32();
            memcpy(A + 4 * i, &v, 4);
        } else {
            A[i] = (unsigned char)rand_s8();
        }
    }
    for (size_t i = 0; i < K * N; ++i) {
        if (type == TS_GEMM_F32 || type == TS_GEMM_BF16) {
            float v = rand_f32();
            memcpy(B + 4 * i, &v, 4);
        } else {
            B[i] = (unsigned char)rand_s8();
        }
    }
}

/* C = A * B on one path (its own packed B, the engine's blocked loop on this thread), raw
 * results: 0, or -1 on allocation failure. */
static int run_path(const ts_path *path, void *C)
{
    ts_packed_b *b;
    size_t bytes;
    if (ts_packed_b_create(path, TS_LAYOUTS_ALL, K, N, B, N, 1,
                           ts_handle_tail_hp(path, TS_LAYOUTS_ALL, N), &b) != TS_OK)
        return -1;
    if (ts_gemm_work_bytes(path, M, N, K, TS_STAGE_NONE, 0, 1, &bytes)) {
        ts_packed_free(b);
        return -1;
    }
    void *work = malloc(bytes);
    if (work == NULL) { ts_packed_free(b); return -1; }
    ts_a_source a = { A, K, NULL, 0, NULL };
    ts_b_source bs = { b, 0, NULL, 0, 0 };
    ts_c_sink out = { C, N, NULL, 0, 0, 0, NULL, 0, 0 };
    ts_gemm_exec(NULL, &bs, M, &a, &out, ts_align16(work));
    free(work);
    ts_packed_free(b);
    return 0;
}

/* Integer reference of the int types (int64 sums, then the int32 / uint32 bits). */
static void check_int_reference(int type, const ts_path *path, const uint32_t *C)
{
    for (size_t m = 0; m < M; ++m)
        for (size_t n = 0; n < N; ++n) {
            int64_t sum = 0;
            for (size_t k = 0; k < K; ++k) {
                int64_t a = type == TS_GEMM_INT8 ? (int8_t)A[m * K + k] : (int64_t)A[m * K + k];
                int64_t b = type == TS_GEMM_U8U32 ? (int64_t)B[k * N + n] : (int8_t)B[k * N + n];
                sum += a * b;
            }
            CHECK(C[m * N + n] == (uint32_t)sum, "%s: C[%zu][%zu] %u, want %u", path->symbol,
                  m, n, (unsigned)C[m * N + n], (unsigned)(uint32_t)sum);
        }
}

/* Every path of the type the CPU can run: int paths against the reference; paths of one
 * instruction (same features and conversions) with each other, bit for bit. */
static void check_variants_agree(const gemm_type_name *t)
{
    static uint32_t C[16][M * N];
    size_t count;
    const ts_path *paths = ts_paths_of(t->type, &count);
    fill_inputs(t->type);
    for (size_t i = 0; i < count && i < 16; ++i) {
        if ((paths[i].features & ~ts_cpu_features()) != 0)
            continue;
        CHECK(run_path(&paths[i], C[i]) == 0, "%s: no memory", paths[i].symbol);
        if (t->type != TS_GEMM_F32 && t->type != TS_GEMM_BF16)
            check_int_reference(t->type, &paths[i], C[i]);
        for (size_t j = 0; j < i; ++j) {
            if ((paths[j].features & ~ts_cpu_features()) != 0
                || paths[j].features != paths[i].features || paths[j].pack != paths[i].pack
                || paths[j].pack_a != paths[i].pack_a)
                continue;
            int same = memcmp(C[i], C[j], sizeof C[i]) == 0;
            CHECK(same, "%s and %s differ", paths[j].symbol, paths[i].symbol);
            if (same)
                printf("same %s %s %s\n", t->label, paths[j].symbol, paths[i].symbol);
        }
    }
}

/* A handle packed for each path the CPU can run, used by the public prepacked call of the
 * type: TS_OK exactly when the kernel chosen now reads the same B layout; then C is the
 * product (compared with the path's own run), else C is untouched. */
static int prepacked(int type, size_t m, const ts_packed_b *b, void *C)
{
    switch (type) {
    case TS_GEMM_F32: return ts_gemm_f32_prepacked(m, (const float *)A, K, b, (float *)C, N);
    case TS_GEMM_BF16: return ts_gemm_bf16_prepacked(m, (const float *)A, K, b, (float *)C, N);
    case TS_GEMM_INT8: return ts_gemm_s8s32_prepacked(m, (const int8_t *)A, K, b, (int32_t *)C, N);
    case TS_GEMM_U8S8: return ts_gemm_u8s8s32_prepacked(m, A, K, b, (int32_t *)C, N);
    default: return ts_gemm_u8u32_prepacked(m, A, K, b, (uint32_t *)C, N);
    }
}

/* Whether a handle packed for `packed` serves calls that run `now`: the same B panels (the
 * documented rule: hp, lp and conversion) and the same GEMV / small-M panels. */
static int same_panels(const ts_path *packed, const ts_path *now)
{
    return packed->hp == now->hp && packed->lp == now->lp && packed->pack == now->pack
           && (packed->gemv.kernel != NULL) == (now->gemv.kernel != NULL)
           && packed->gemv.hp == now->gemv.hp && packed->gemv.lp == now->gemv.lp;
}

static void check_handles(const gemm_type_name *t)
{
    static uint32_t want[M * N], got[M * N];
    size_t count;
    const ts_path *paths = ts_paths_of(t->type, &count);
    const ts_path *now = ts_select_path(t->type);
    fill_inputs(t->type);
    for (size_t i = 0; i < count; ++i) {
        ts_packed_b *b;
        if ((paths[i].features & ~ts_cpu_features()) != 0
            || ts_packed_b_create(&paths[i], TS_LAYOUTS_ALL, K, N, B, N, 1,
                                  ts_handle_tail_hp(&paths[i], TS_LAYOUTS_ALL, N), &b) != TS_OK)
            continue;
        const int compatible = same_panels(&paths[i], now);
        static const size_t ROWS[] = { M, 1 };
        for (size_t r = 0; r < sizeof ROWS / sizeof ROWS[0]; ++r) {
            const size_t m = ROWS[r];
            memset(got, 0x5A, sizeof got);
            int rc = prepacked(t->type, m, b, got);
            printf("handle %s %s m=%zu rc=%d\n", t->label, paths[i].symbol, m, rc);
            CHECK(rc == (compatible ? TS_OK : TS_EINVAL), "%s handle on %s: rc %d",
                  paths[i].symbol, now->symbol, rc);
            if (rc == TS_OK) {
                /* M = 1 may run the GEMV kernel: the same bits as row 0 of the GEMM tile */
                CHECK(run_path(now, want) == 0, "no memory");
                CHECK(memcmp(got, want, m * N * sizeof got[0]) == 0,
                      "%s handle run by %s, M = %zu: results differ", paths[i].symbol,
                      now->symbol, m);
            } else {
                int untouched = 1;
                for (size_t k = 0; k < M * N; ++k)
                    untouched &= got[k] == 0x5A5A5A5Au;
                CHECK(untouched, "%s handle rejected but C written", paths[i].symbol);
            }
        }
        ts_packed_free(b);
    }
}

/* ts_tail_path of every path of the type for each shorter last panel. */
static void print_tails(const gemm_type_name *t)
{
    size_t count;
    const ts_path *paths = ts_paths_of(t->type, &count);
    for (size_t i = 0; i < count; ++i) {
        printf("tail %s", paths[i].symbol);
        for (size_t rows = 1; rows < paths[i].ep; ++rows) {
            const ts_path *tail = ts_tail_path(&paths[i], rows);
            const ts_path single = ts_single_layout_path(&paths[i]);   /* the engine's copy */
            CHECK(ts_tail_path(&single, rows) == tail, "%s: tail of its single-layout copy",
                  paths[i].symbol);
            printf(" %zu=%s", rows, tail != NULL ? tail->symbol : "NULL");
        }
        printf("\n");
        printf("ntail %s", paths[i].symbol);
        for (size_t cols = 1; cols < paths[i].hp; ++cols) {
            const ts_ntail_kernel *nt = ts_ntail_of(&paths[i], cols);
            const ts_path single = ts_single_layout_path(&paths[i]);   /* the engine's copy */
            const ts_path gemv = paths[i].gemv.kernel != NULL ? ts_gemv_path(&paths[i]) : single;
            CHECK(ts_ntail_of(&single, cols) == (nt != NULL ? &single.ntail[nt - paths[i].ntail] : NULL),
                  "%s: column tail of its single-layout copy", paths[i].symbol);
            CHECK(paths[i].gemv.kernel == NULL || ts_ntail_of(&gemv, cols) == NULL,
                  "%s: the GEMV path has no column tail", paths[i].symbol);
            CHECK(nt == NULL || (nt->hp >= cols && nt->hp < paths[i].hp),
                  "%s: column tail of %zu columns", paths[i].symbol, nt != NULL ? nt->hp : 0);
            printf(" %zu=%s", cols, nt != NULL ? nt->symbol : "NULL");
        }
        printf("\n");
    }
}

static void print_selection(const char *cpu)
{
    int cls = 99;
    int rc = ts_cpu_lookup(cpu, &cls);
    printf("cpu=%s rc=%d", cpu, rc);
    for (size_t t = 0; t < N_TYPES; ++t) {
        const ts_path *p = ts_select_path_cpu(TYPES[t].type, ~0u, cpu);
        printf(" %s=%s", TYPES[t].label, p != NULL ? p->symbol : "NULL");
        if (rc == TS_OK)
            CHECK(p == ts_select_path_class(TYPES[t].type, ~0u, cls), "%s: class path", cpu);
    }
    printf("\n");
}

/* The engine's choice for a context naming `cpu` (ts_context_set_cpu; rejected: the context
 * keeps "auto" and selects as such). */
static void print_context_selection(const char *cpu)
{
    ts_context *ctx = NULL;
    CHECK(ts_context_create(&ctx) == TS_OK, "context");
    if (ctx == NULL)
        return;
    int rc = ts_context_set_cpu(ctx, cpu);
    printf("ctx=%s rc=%d", cpu, rc);
    for (size_t t = 0; t < N_TYPES; ++t) {
        const ts_path *p = ts_select_path_ctx(ctx, TYPES[t].type);
        printf(" %s=%s", TYPES[t].label, p != NULL ? p->symbol : "NULL");
    }
    printf("\n");
    ts_context_free(ctx);
}

/* ts_gemm_kernel of every type: what a call without a context runs here (MIDR detection). */
static void print_auto(void)
{
    printf("auto");
    for (size_t t = 0; t < N_TYPES; ++t)
        printf(" %s=%s", TYPES[t].label, ts_gemm_kernel(TYPES[t].type));
    printf("\n");
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    printf("features=%u class=%d\n", ts_cpu_features(), ts_current_core_class());
    const int names_only = argc == 2 && strcmp(argv[1], "names") == 0;
    for (int i = 1; i < argc && !names_only; ++i) {
        uint64_t midr = strtoull(argv[i], NULL, 0);
        printf("midr=0x%llx class=%d\n", (unsigned long long)midr, ts_core_class_of_midr(midr));
    }
    size_t n_cores;
    const ts_cpu_core *cores = ts_cpu_cores(&n_cores);
    for (size_t i = 0; i < n_cores; ++i) {
        printf("core=%s part=0x%x class=%d l1d=%zu l2=%zu\n", cores[i].name, cores[i].part,
               cores[i].core_class, cores[i].l1d_bytes, cores[i].l2_bytes);
        CHECK(ts_core_class_of_midr(0x410F0000u | (uint64_t)cores[i].part << 4)
              == cores[i].core_class, "%s: the MIDR class of its part", cores[i].name);
    }
    for (size_t i = 0; i < n_cores; ++i)
        print_context_selection(cores[i].name);
    print_context_selection("generic");
    print_context_selection("auto");
    print_context_selection("cortex-a99");
    if (names_only) {
        print_auto();
        printf("failures %d\n", failures);
        return failures != 0;
    }
    for (size_t i = 0; i < n_cores; ++i)
        print_selection(cores[i].name);
    print_selection("generic");
    print_selection("auto");
    print_selection("cortex-a99");
    print_selection("Generic");
    print_selection("");
    int cls = 7;
    CHECK(ts_cpu_lookup(NULL, &cls) == TS_EINVAL && cls == 7, "NULL name");
    CHECK(ts_select_path_cpu(TS_GEMM_F32, ~0u, NULL) == NULL, "NULL name selects");
    CHECK(ts_select_path_class(12345, ~0u, TS_CORE_AUTO) == NULL, "unknown type");
    print_auto();
    for (size_t t = 0; t < N_TYPES; ++t) {
        if (!TYPES[t].run)
            continue;
        print_tails(&TYPES[t]);
        check_variants_agree(&TYPES[t]);
        check_handles(&TYPES[t]);
    }
    printf("failures %d\n", failures);
    return failures != 0;
}
