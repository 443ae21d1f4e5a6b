"""Packing driver (templates/c/pack.c.j2): every panel packer and the packed-B handle of a
generated v86 folder against an independent statement of the layout and conversions
(tests/c/drv_pack.c), byte for byte, under qemu; built with gcc and clang-19, and once with
Advanced SIMD disabled so the plain C loops are checked too."""
from __future__ import annotations

import subprocess
import sys

import pytest

from cross import ROOT, TEST_C, compile_aarch64, run_qemu


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen_v86")
    subprocess.run([sys.executable, "-m", "gen", "generate", "--arch", "v86", "--out", str(out)],
                   cwd=ROOT, check=True, capture_output=True, text=True)
    return out


@pytest.mark.parametrize("compiler,march", [("gcc", "armv8-a"), ("clang", "armv8-a"),
                                            ("gcc", "armv8-a+nosimd")])
def test_packing_matches_reference_layout(folder, tmp_path, compiler, march):
    binary = compile_aarch64([TEST_C / "drv_pack.c", folder / "ts_pack.c"],
                             tmp_path / f"drv_pack_{compiler}", includes=[folder],
                             compiler=compiler, march=march,
                             flags=["-std=c99", "-Wpedantic", "-Werror"])
    proc = run_qemu(binary, cpu="max", check=False, timeout=600)
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), proc.stdout[-3000:]
    assert int(proc.stdout.split("checked ")[1].split()[0]) > 2000
