/* ts_build_internal.h — how the library's sources must be compiled, checked in every
 * translation unit (each internal header includes this one), and the compiler attributes they
 * share. Not public API. Plain C99. */
#ifndef TS_BUILD_INTERNAL_H
#define TS_BUILD_INTERNAL_H

/* The drivers' results are specified bit for bit in IEEE single precision, and NaN / Inf
 * inputs are rejected by tests the compiler may delete under finite-math assumptions: a build
 * with -ffast-math, -Ofast or -ffinite-math-only would silently break both, so it stops here. */
#if defined(__FAST_MATH__) || (defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__)
#  error "build tilesmith's sources without -ffast-math / -Ofast / -ffinite-math-only (IEEE results and NaN/Inf checks depend on it)"
#endif
/* The flags that change results without defining __FAST_MATH__: GCC names them (its
 * predefined macros; -funsafe-math-optimizations sets all three), so they stop here too.
 * clang names none: its reassociation and reciprocal approximations are switched off for the
 * rest of each translation unit instead (#pragma clang fp, clang 18+ for reciprocal: LLVM
 * commit 0237f1b; Apple's clang 17 is LLVM 19), and its -fno-signed-zeros cannot be seen —
 * README "Using the generated folder" says to leave it out. */
#if defined(__RECIPROCAL_MATH__) || defined(__NO_SIGNED_ZEROS__) || defined(__ASSOCIATIVE_MATH__)
#  error "build tilesmith's sources without -funsafe-math-optimizations / -freciprocal-math / -fno-signed-zeros / -fassociative-math (the fp32 results are specified bit for bit)"
#endif
#if defined(__clang__)
#  pragma clang fp reassociate(off)
#  if (defined(__apple_build_version__) && __clang_major__ >= 17) \
      || (!defined(__apple_build_version__) && __clang_major__ >= 18)
#    pragma clang fp reciprocal(off)
#  endif
#endif

/* A helper specialised by inlining it with constant arguments (ts_pack.c, ts_qdyn_lhs.c, the
 * NEON row loop of ts_requant.c). */
#if defined(__GNUC__)
#  define TS_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#  define TS_ALWAYS_INLINE inline
#endif
/* A function kept out of line: its loop gets registers of its own instead of competing with
 * the caller's live values (ts_engine.c run_full_tiles, ts_qdyn.c fused_strip). */
#if defined(__GNUC__)
#  define TS_NOINLINE __attribute__((noinline))
#else
#  define TS_NOINLINE
#endif
/* Before a loop of constant trip count to be unrolled whole, so arrays indexed by its counter
 * stay in registers (ts_qdyn_lhs.c, ts_pack.c gather_panel_overlap_lp8). */
#if defined(__GNUC__)                 /* GCC and clang */
#  define TS_UNROLLED _Pragma("GCC unroll 16")
#else
#  define TS_UNROLLED
#endif

#endif
