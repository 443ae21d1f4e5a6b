/* ts_cpu.c — runtime CPU-feature detection, the feature mask and the choice of micro-kernel
 * per GEMM type. The kernel paths of a build are the generated tables of ts_dispatch.c
 * (ts_paths_of); a path that needs an extension is chosen only when the CPU reports it and the
 * feature mask allows it. Plain C99. */
#include "ts_context_internal.h"

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

/* The first path of gemm_type whose features are all in `usable`. */
static const ts_path *first_usable(int gemm_type, unsigned usable)
{
    size_t count;
    const ts_path *paths = ts_paths_of(gemm_type, &count);
    for (size_t i = 0; i < count; ++i)
        if ((paths[i].features & ~usable) == 0 && ts_sme_path_fits(&paths[i]))
            return &paths[i];
    return NULL;   /* unknown type (every type ends with an Armv8.0 path) */
}

const ts_path *ts_select_path(int gemm_type)
{
    return first_usable(gemm_type, ts_cpu_features() & TS_LOAD(feature_mask));
}

/* The one place a context's choices pick a kernel path: its feature mask today; its CPU
 * (ctx->cpu, the index of the ts_context_set_cpu name in ts_cpu_names, -1 for "auto") is where
 * a per-core variant selection hooks in. */
const ts_path *ts_select_path_ctx(const ts_context *ctx, int gemm_type)
{
    if (ctx == NULL || !ctx->has_mask)
        return ts_select_path(gemm_type);
    return first_usable(gemm_type, ts_cpu_features() & ctx->feature_mask);
}

const char *ts_gemm_kernel(int gemm_type)
{
    const ts_path *path = ts_select_path(gemm_type);
    return path != NULL ? path->symbol : NULL;
}

const char *ts_gemm_kernel_mn(int gemm_type, size_t M, size_t N)
{
    const ts_path *path = ts_select_path(gemm_type);
    if (path == NULL)
        return NULL;
    return ts_use_gemv(path, M, N) ? path->gemv.symbol : path->symbol;
}

const char *ts_gemm_kernel_ctx(const ts_context *ctx, int gemm_type)
{
    const ts_path *path = ts_select_path_ctx(ctx, gemm_type);
    return path != NULL ? path->symbol : NULL;
}
