"""Packing driver (drivers/src/ts_pack.c, straight from the C tree): every panel packer and
the packed-B handle against an independent statement of the layout and conversions
(tests/c/drv_pack.c), byte for byte, under qemu; built with gcc and clang-19, and once with
Advanced SIMD disabled so the plain C loops are checked too."""
from __future__ import annotations

import pytest

from cross import TEST_C, compile_aarch64, run_qemu
from gen.drivers import DRIVERS


@pytest.fixture(scope="module")
def folder():
    return DRIVERS / "src"


@pytest.mark.parametrize("compiler,march", [("gcc", "armv8-a"), ("clang", "armv8-a"),
                                            ("gcc", "armv8-a+nosimd")])
def test_packing_matches_reference_layout(folder, tmp_path, compiler, march):
    sources = [TEST_C / "drv_pack.c", folder / "ts_pack.c", folder / "ts_error.c"]
    binary = compile_aarch64(sources,
                             tmp_path / f"drv_pack_{compiler}",
                             includes=[DRIVERS / "include", folder],
                             compiler=compiler, march=march,
                             flags=["-std=c99", "-Wpedantic", "-Werror"])
    proc = run_qemu(binary, cpu="max", check=False, timeout=600)
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), proc.stdout[-3000:]
    assert int(proc.stdout.split("checked ")[1].split()[0]) > 2000
