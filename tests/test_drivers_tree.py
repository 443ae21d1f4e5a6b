"""The C tree under drivers/ is ordinary C: every source compiles as it is (no generator run),
C99, pedantic, warnings as errors (also -Wshadow, -Wsign-conversion, -Wcast-align and
-Wcast-qual, which engines often build with: clang warns of a cast to a more aligned pointer,
gcc and clang of one that drops const), with aarch64 gcc and clang-19 for -march=armv8-a, and
with gcc for a target without Advanced SIMD (the plain C loops)."""
from __future__ import annotations

import subprocess

import pytest

from cross import CLANG, GCC
from gen.drivers import DRIVERS

SOURCES = sorted((DRIVERS / "src").glob("ts_*.c"))
# warnings engines build with beyond -Wall -Wextra -Wpedantic (also test_drivers_dropin's)
ENGINE_WARNINGS = ["-Wshadow", "-Wsign-conversion", "-Wcast-align", "-Wcast-qual"]
COMPILERS = {"gcc": [GCC, "-march=armv8-a"], "clang": [CLANG, "--target=aarch64-linux-gnu",
                                                        "-march=armv8-a"],
             "gcc-nosimd": [GCC, "-march=armv8-a+nosimd"],
             "gcc-nothreads": [GCC, "-march=armv8-a", "-DTS_NO_THREADS"]}


@pytest.mark.parametrize("compiler", sorted(COMPILERS))
def test_tree_compiles_as_is(compiler, tmp_path):
    assert SOURCES
    for source in SOURCES:
        cmd = [*COMPILERS[compiler], "-std=c99", "-O2", "-Wall", "-Wextra", "-Wpedantic",
               *ENGINE_WARNINGS, "-Werror",
               "-I", str(DRIVERS / "include"), "-I", str(DRIVERS / "src"), "-c", str(source),
               "-o", str(tmp_path / (source.stem + ".o"))]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"


@pytest.mark.parametrize("flag,named", [
    ("-ffast-math", "-ffast-math"), ("-Ofast", "-ffast-math"), ("-ffinite-math-only", "-ffast-math"),
    # without __FAST_MATH__: GCC's own macros for them (ts_build_internal.h)
    ("-funsafe-math-optimizations", "-funsafe-math-optimizations"),
    ("-freciprocal-math", "-freciprocal-math"), ("-fno-signed-zeros", "-fno-signed-zeros")])
def test_fast_math_builds_stop_with_a_clear_error(flag, named, tmp_path):
    """The fp32 sources' bit-exact results and NaN / Inf checks need IEEE semantics: a
    finite-math or unsafe-math build must fail at compile time, naming the flags, not run
    wrong."""
    for name in sorted(p.name for p in (DRIVERS / "src").glob("ts_*.c")):
        cmd = [*COMPILERS["gcc"], flag, "-I", str(DRIVERS / "include"), "-I",
               str(DRIVERS / "src"), "-c", str(DRIVERS / "src" / name), "-o",
               str(tmp_path / "x.o")]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode != 0 and named in proc.stderr, f"{' '.join(cmd)}\n{proc.stderr}"
