/* ts_cpu.c — runtime CPU-feature detection, the feature mask, the core class of the running
 * core and the choice of micro-kernel per GEMM type. The kernel paths of a build are the
 * generated tables of ts_dispatch.c (ts_paths_of); a path that needs an extension is chosen
 * only when the CPU reports it and the feature mask allows it, and a core-class variant only on
 * a core of its class.
 *
 * The core: Linux / Android read MIDR_EL1 with `mrs` on every selection (the thread may have
 * moved between big and LITTLE cores since the last call). User-space reads of MIDR_EL1 trap
 * and the kernel emulates them with the value of the CPU the thread runs on, advertised by
 * HWCAP_CPUID (Linux Documentation/arch/arm64/cpu-feature-registers.rst, section 4; one trap,
 * about a microsecond, per GEMM call); qemu-user emulates it too. Elsewhere (Apple, Windows,
 * other systems) the running core's class is not determined: macOS offers no per-thread core
 * identity (only hw.perflevel* sizes), Windows' registry MIDR values (CentralProcessor\N
 * "CP 4000") describe a processor but not the one the thread runs on; those systems get the
 * generic kernels unless a context names a CPU. Plain C99. */
#include "ts_context_internal.h"
#include "ts_error_internal.h"

#include <string.h>

#if defined(__aarch64__) || defined(_M_ARM64)
#  if defined(__linux__) || defined(__ANDROID__)
#    include <sys/auxv.h>
/* Values from Linux include/uapi/linux/auxvec.h and arch/arm64/include/uapi/asm/hwcap.h, for
 * libc headers that predate them. */
#    ifndef AT_HWCAP
#      define AT_HWCAP 16
#    endif
#    ifndef AT_HWCAP2
#      define AT_HWCAP2 26
#    endif
#    ifndef HWCAP_ASIMDHP
#      define HWCAP_ASIMDHP (1UL << 10)
#    endif
#    ifndef HWCAP_ASIMDFHM
#      define HWCAP_ASIMDFHM (1UL << 23)
#    endif
#    ifndef HWCAP_CPUID
#      define HWCAP_CPUID (1UL << 11)
#    endif
#    ifndef HWCAP_ASIMDDP
#      define HWCAP_ASIMDDP (1UL << 20)
#    endif
#    ifndef HWCAP2_I8MM
#      define HWCAP2_I8MM (1UL << 13)
#    endif
#    ifndef HWCAP2_BF16
#      define HWCAP2_BF16 (1UL << 14)
#    endif
/* FEAT_SME and the outer products the SME kernels use (ID_AA64SMFR0_EL1 F32F32, B16F32,
 * F16F32, I8I32: all mandatory with FEAT_SME, required here anyway). */
#    ifndef HWCAP2_SME
#      define HWCAP2_SME (1UL << 23)
#    endif
#    ifndef HWCAP2_SME_I8I32
#      define HWCAP2_SME_I8I32 (1UL << 26)
#    endif
#    ifndef HWCAP2_SME_F16F32
#      define HWCAP2_SME_F16F32 (1UL << 27)
#    endif
#    ifndef HWCAP2_SME_B16F32
#      define HWCAP2_SME_B16F32 (1UL << 28)
#    endif
#    ifndef HWCAP2_SME_F32F32
#      define HWCAP2_SME_F32F32 (1UL << 29)
#    endif
#    define TS_HWCAP2_SME_ALL (HWCAP2_SME | HWCAP2_SME_I8I32 | HWCAP2_SME_F16F32 | \
                               HWCAP2_SME_B16F32 | HWCAP2_SME_F32F32)
#    define TS_DETECT_LINUX 1
#  elif defined(__APPLE__)
#    include <sys/types.h>
#    include <sys/sysctl.h>
#    define TS_DETECT_APPLE 1
#  elif defined(_WIN32)
#    include <windows.h>
#    define TS_DETECT_WINDOWS 1
#  endif
#endif

/* ---- the library's only mutable state: detected features (cached) and the mask ------------
 * Both are 32-bit words accessed with relaxed atomic loads and stores (GCC / Clang builtins).
 * That is all the safety they need: the cache only ever goes from "unknown" to the one value
 * every thread computes (a race just detects twice), and a mask change takes effect at the
 * next call; each call reads the mask once and keeps its choice. Where the builtins are absent
 * (MSVC), volatile aligned 32-bit accesses are single-copy atomic on AArch64 (Arm ARM B2.2.1). */
#if defined(__GNUC__) || defined(__clang__)
#  define TS_LOAD(x)     __atomic_load_n(&(x), __ATOMIC_RELAXED)
#  define TS_STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
typedef unsigned ts_shared_word;
#else
#  define TS_LOAD(x)     (x)
#  define TS_STORE(x, v) ((x) = (v))
typedef volatile unsigned ts_shared_word;
#endif

#define TS_FEATURES_KNOWN 0x80000000u   /* set in the cache once detection ran */
static ts_shared_word detected_features;   /* 0: not detected yet */
static ts_shared_word feature_mask = ~0u;

#if defined(TS_DETECT_APPLE)
/* Apple: "Determining Instruction Set Characteristics" (sysctl hw.optional.arm.FEAT_*). */
static int apple_has(const char *name)
{
    int value = 0;
    size_t size = sizeof value;
    return sysctlbyname(name, &value, &size, NULL, 0) == 0 && value != 0;
}
#endif

/* The FEAT_* bits the CPU and OS report (0 where this OS offers no way to ask). */
static unsigned detect_features(void)
{
    unsigned f = 0;
#if defined(TS_DETECT_LINUX)
    unsigned long hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
    if (hwcap & HWCAP_ASIMDDP) f |= TS_FEAT_DOTPROD;
    if (hwcap2 & HWCAP2_I8MM)  f |= TS_FEAT_I8MM;
    if (hwcap2 & HWCAP2_BF16)  f |= TS_FEAT_BF16;
    if ((hwcap2 & TS_HWCAP2_SME_ALL) == TS_HWCAP2_SME_ALL) f |= TS_FEAT_SME;
    if (hwcap & HWCAP_ASIMDHP) f |= TS_FEAT_FP16;
    if (hwcap & HWCAP_ASIMDFHM) f |= TS_FEAT_FHM;
#elif defined(TS_DETECT_APPLE)
    if (apple_has("hw.optional.arm.FEAT_DotProd")) f |= TS_FEAT_DOTPROD;
    if (apple_has("hw.optional.arm.FEAT_I8MM"))    f |= TS_FEAT_I8MM;
    if (apple_has("hw.optional.arm.FEAT_BF16"))    f |= TS_FEAT_BF16;
    if (apple_has("hw.optional.arm.FEAT_SME"))     f |= TS_FEAT_SME;
    if (apple_has("hw.optional.arm.FEAT_FP16"))    f |= TS_FEAT_FP16;
    if (apple_has("hw.optional.arm.FEAT_FHM"))     f |= TS_FEAT_FHM;
#elif defined(TS_DETECT_WINDOWS)
    /* winnt.h: PF_ARM_V82_DP_INSTRUCTIONS_AVAILABLE = 43. Windows reports i8mm / bf16 only
     * through its SVE flags (SVE i8mm/bf16 imply the Advanced SIMD forms, Arm ARM
     * ID_AA64ZFR0_EL1); without them those paths stay off. SME is not detected on Windows
     * (TS_FEAT_SME stays off). No PF_ARM_* constant for FEAT_FP16 / FEAT_FHM is documented
     * (learn.microsoft.com IsProcessorFeaturePresent, 2026): the fp16 GEMMs take their fp32
     * fallbacks on Windows. */
    if (IsProcessorFeaturePresent(43)) f |= TS_FEAT_DOTPROD;
#  ifdef PF_ARM_SVE_I8MM_INSTRUCTIONS_AVAILABLE
    if (IsProcessorFeaturePresent(PF_ARM_SVE_I8MM_INSTRUCTIONS_AVAILABLE)) f |= TS_FEAT_I8MM;
#  endif
#  ifdef PF_ARM_SVE_BF16_INSTRUCTIONS_AVAILABLE
    if (IsProcessorFeaturePresent(PF_ARM_SVE_BF16_INSTRUCTIONS_AVAILABLE)) f |= TS_FEAT_BF16;
#  endif
#endif
    return f;
}

unsigned ts_cpu_features(void)
{
    unsigned cached = TS_LOAD(detected_features);
    if (!(cached & TS_FEATURES_KNOWN)) {
        cached = detect_features() | TS_FEATURES_KNOWN;
        TS_STORE(detected_features, cached);
    }
    return cached & ~TS_FEATURES_KNOWN;
}

void ts_set_feature_mask(unsigned mask)
{
    TS_STORE(feature_mask, mask);
}

/* ---- the running core's class --------------------------------------------------------------
 * MIDR_EL1 fields (Arm ARM D23.2 "MIDR_EL1"): implementer [31:24], part number [15:4]. The Arm
 * Ltd parts, their names and classes: ts_cpu_cores (generated from gen/cores.py ARM_PARTS, the
 * one table of run-time detection, ts_core_class_of_midr, the names a context may set,
 * ts_cpu_lookup, and the cache blocks, ts_blocks.c); other implementers and parts not listed
 * are unknown and get the generic kernels. */
int ts_core_class_of_midr(uint64_t midr)
{
    const unsigned implementer = (unsigned)(midr >> 24) & 0xFFu;
    const unsigned part = (unsigned)(midr >> 4) & 0xFFFu;
    size_t count;
    const ts_cpu_core *cores = ts_cpu_cores(&count);
    if (implementer != 0x41u)   /* 0x41: Arm Limited */
        return TS_CORE_GENERIC;
    for (size_t i = 0; i < count; ++i)
        if (cores[i].part == part)
            return cores[i].core_class;
    return TS_CORE_GENERIC;
}

int ts_current_core(unsigned *arm_part)
{
    *arm_part = 0;
#if defined(TS_DETECT_LINUX) && defined(__GNUC__)
    if (getauxval(AT_HWCAP) & HWCAP_CPUID) {
        uint64_t midr;
        __asm__ volatile("mrs %0, midr_el1" : "=r"(midr));
        if (((midr >> 24) & 0xFFu) == 0x41u)    /* 0x41: Arm Limited */
            *arm_part = (unsigned)(midr >> 4) & 0xFFFu;
        return ts_core_class_of_midr(midr);
    }
#endif
    return TS_CORE_GENERIC;
}

int ts_current_core_class(void)
{
    unsigned part;
    return ts_current_core(&part);
}

/* ---- path selection ----------------------------------------------------------------------- */

int ts_cpu_lookup(const char *cpu, int *core_class)
{
    if (cpu == NULL || core_class == NULL)
        return TS_EINVAL;
    if (strcmp(cpu, "auto") == 0) {
        *core_class = TS_CORE_AUTO;
        return TS_OK;
    }
    if (strcmp(cpu, "generic") == 0) {      /* what a core no table row names gets */
        *core_class = TS_CORE_GENERIC;
        return TS_OK;
    }
    size_t count;
    const ts_cpu_core *cores = ts_cpu_cores(&count);
    for (size_t i = 0; i < count; ++i)
        if (strcmp(cpu, cores[i].name) == 0) {
            *core_class = cores[i].core_class;
            return TS_OK;
        }
    return TS_EINVAL;
}

unsigned ts_cpu_named_part(const char *cpu)
{
    size_t count;
    const ts_cpu_core *cores = ts_cpu_cores(&count);
    for (size_t i = 0; cpu != NULL && i < count; ++i)
        if (strcmp(cpu, cores[i].name) == 0)
            return cores[i].part;
    return 0;
}

const ts_path *ts_select_path_class(int gemm_type, unsigned mask, int core_class)
{
    unsigned usable = ts_cpu_features() & mask;
    size_t count;
    const ts_path *paths = ts_paths_of(gemm_type, &count);
    const ts_path *other_class = NULL;
    if (core_class == TS_CORE_AUTO)
        core_class = ts_current_core_class();
    for (size_t i = 0; i < count; ++i)
        if ((paths[i].features & ~usable) == 0 && ts_sme_path_fits(&paths[i])) {
            if (paths[i].core_class == TS_CORE_GENERIC || paths[i].core_class == core_class)
                return &paths[i];
            if (other_class == NULL)
                other_class = &paths[i];
        }
    /* A CPU= build holds its CPU's class's kernels only (no generic ones): on a core of another
     * class, or one MIDR_EL1 does not name, they run as they are (the same bits; scheduled for
     * the other core). NULL: an unknown type (every type ends with an Armv8.0 path). */
    return other_class;
}

const ts_path *ts_select_path_cpu(int gemm_type, unsigned mask, const char *cpu)
{
    int core_class;
    if (ts_cpu_lookup(cpu, &core_class) != TS_OK)
        return NULL;
    return ts_select_path_class(gemm_type, mask, core_class);
}

const ts_path *ts_select_path(int gemm_type)
{
    return ts_select_path_class(gemm_type, TS_LOAD(feature_mask), TS_CORE_AUTO);
}

/* Whether two paths' fused qdyn kernels (README "qdyn kernels") are the same code: a
 * handle's layout is that of its path's qdyn kernels. */
static int same_qdyn(const ts_qdyn_kernel *a, const ts_qdyn_kernel *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    for (size_t i = 0; i < TS_QDYN_KINDS; ++i)
        if ((a[i].symbol == NULL) != (b[i].symbol == NULL)
            || (a[i].symbol != NULL && strcmp(a[i].symbol, b[i].symbol) != 0))
            return 0;
    return 1;
}

int ts_same_b_layout(const ts_path *packed_for, const ts_path *run)
{
    return packed_for->gemm_type == run->gemm_type && packed_for->hp == run->hp
           && packed_for->lp == run->lp && packed_for->pack == run->pack
           && (packed_for->gemv.kernel == NULL) == (run->gemv.kernel == NULL)
           && packed_for->gemv.hp == run->gemv.hp && packed_for->gemv.lp == run->gemv.lp
           && packed_for->svl_bytes == run->svl_bytes && same_qdyn(packed_for->qdyn, run->qdyn);
}

size_t ts_handle_tail_hp(const ts_path *path, unsigned layouts, size_t N)
{
    const size_t cols = N % path->hp;
    const ts_ntail_kernel *nt = cols != 0 ? ts_ntail_of(path, cols) : NULL;
    size_t count;
    const ts_path *paths = ts_paths_of(path->gemm_type, &count);
    if (nt == NULL || !ts_keeps_gemm_layout(path, layouts))
        return 0;
    for (size_t i = 0; i < count; ++i) {
        const ts_ntail_kernel *other = ts_ntail_of(&paths[i], cols);
        if (ts_same_b_layout(path, &paths[i]) && (other == NULL || other->hp != nt->hp))
            return 0;
    }
    return nt->hp;
}

int ts_handle_b_layout_ok(const ts_packed_b *b, const ts_path *run)
{
    const ts_ntail_kernel *nt = b->tail_hp != 0 ? ts_ntail_of(run, b->N % run->hp) : NULL;
    return ts_same_b_layout(b->path, run)
           && (b->tail_hp == 0 || (nt != NULL && nt->hp == b->tail_hp));
}

const ts_path *ts_tail_path(const ts_path *path, size_t rows)
{
    size_t count;
    const ts_path *paths = ts_paths_of(path->gemm_type, &count), *best = NULL;
    if (path->core_class == TS_CORE_GENERIC || rows >= path->ep)
        return NULL;
    for (size_t i = 0; i < count; ++i) {
        const ts_path *p = &paths[i];
        /* the engine's B panels only (its path may be a copy without the GEMV layout) */
        if (p->core_class == TS_CORE_GENERIC && p->features == path->features
            && p->hp == path->hp && p->lp == path->lp && p->pack == path->pack
            && p->svl_bytes == path->svl_bytes && same_qdyn(p->qdyn, path->qdyn)
            && p->pack_a == path->pack_a
            && p->c_bytes == path->c_bytes && (p->fused == NULL) == (path->fused == NULL)
            && p->params_cols == path->params_cols
            && rows <= p->ep && p->ep < path->ep && (best == NULL || p->ep < best->ep))
            best = p;
    }
    return best;
}

const ts_ntail_kernel *ts_ntail_of(const ts_path *path, size_t cols)
{
    for (size_t i = 0; i < TS_NTAILS && path->ntail[i].kernel != NULL; ++i)
        if (cols <= path->ntail[i].hp && (path->fused == NULL || path->ntail[i].fused != NULL))
            return &path->ntail[i];     /* narrowest first */
    return NULL;
}

const ts_path *ts_select_path_core(const ts_context *ctx, int gemm_type, unsigned *arm_part)
{
    *arm_part = ctx != NULL ? ctx->cpu_part : 0;    /* a named core: its part, no MIDR read */
    unsigned mask = ctx != NULL && ctx->has_mask ? ctx->feature_mask : TS_LOAD(feature_mask);
    int core_class = ctx != NULL ? ctx->core_class : TS_CORE_AUTO;
    if (core_class == TS_CORE_AUTO)
        core_class = ts_current_core(arm_part);
    return ts_select_path_class(gemm_type, mask, core_class);
}

/* The one place a context's choices pick a kernel path: its feature mask (the global one when
 * ctx is NULL or has none) and its CPU (ctx->core_class: the class of the ts_context_set_cpu
 * name; TS_CORE_AUTO for "auto": the class of the core the thread runs on, read per call). */
const ts_path *ts_select_path_ctx(const ts_context *ctx, int gemm_type)
{
    unsigned part;
    return ts_select_path_core(ctx, gemm_type, &part);
}

/* path, or NULL with ts_last_error saying why there is none (the kernel-name queries) */
static const ts_path *path_or_why(const ts_path *path, int gemm_type)
{
    size_t count;
    if (path == NULL)
        (void)ts_fail(TS_EINVAL, ts_paths_of(gemm_type, &count) == NULL || count == 0
                                     ? "gemm_type is not a TS_GEMM_* value"
                                     : "no kernel of this GEMM type on this CPU / feature mask");
    return path;
}

const char *ts_gemm_kernel(int gemm_type)
{
    const ts_path *path = path_or_why(ts_select_path(gemm_type), gemm_type);
    return path != NULL ? path->symbol : NULL;
}

const char *ts_gemm_kernel_mn(int gemm_type, size_t M, size_t N)
{
    const ts_path *path = path_or_why(ts_select_path(gemm_type), gemm_type);
    if (path == NULL)
        return NULL;
    return ts_use_gemv(path, M, N) ? path->gemv.symbol : path->symbol;
}

const char *ts_gemm_kernel_ctx(const ts_context *ctx, int gemm_type)
{
    if (!ts_context_ok(ctx))
        return NULL;
    const ts_path *path = path_or_why(ts_select_path_ctx(ctx, gemm_type), gemm_type);
    return path != NULL ? path->symbol : NULL;
}
