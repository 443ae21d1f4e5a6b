/* ts_build_internal.h — how the library's sources must be compiled, checked in every
 * translation unit (each internal header includes this one). Not public API. Plain C99. */
#ifndef TS_BUILD_INTERNAL_H
#define TS_BUILD_INTERNAL_H

/* The drivers' results are specified bit for bit in IEEE single precision, and NaN / Inf
 * inputs are rejected by tests the compiler may delete under finite-math assumptions: a build
 * with -ffast-math, -Ofast or -ffinite-math-only would silently break both, so it stops here. */
#if defined(__FAST_MATH__) || (defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__)
#  error "build tilesmith's sources without -ffast-math / -Ofast / -ffinite-math-only (IEEE results and NaN/Inf checks depend on it)"
#endif

#endif
