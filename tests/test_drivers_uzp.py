"""uzp driver (drivers/src/ts_uzp.c): raw SMMLA / BFMMLA accumulators, produced by the real
instructions under qemu -cpu max, unzipped by ts_uzp_mmla_s32 / _f32 and compared with a plain C
GEMM (tests/c/drv_q_uzp.c); bad arguments; Armv8.0 build."""
from __future__ import annotations

import pytest

from cross import run_qemu
from drv_q_support import build_harness

# rows, cols, k, ldo: column pairs even and odd (NEON pairs + scalar tail), padded ldo
SHAPES = [(2, 2, 8, 2), (2, 4, 8, 4), (4, 6, 16, 6), (6, 10, 24, 13), (8, 12, 8, 12),
          (10, 2, 16, 7), (16, 18, 32, 20)]


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    return build_harness(tmp_path_factory.mktemp("uzp"), "drv_q_uzp.c", ["uzp.c"],
                         link=["uzp.c"])


@pytest.mark.parametrize("rows,cols,k,ldo", SHAPES)
def test_unzips_real_mmla_accumulators(harness, rows, cols, k, ldo):
    out = run_qemu(harness, "mmla", rows, cols, k, ldo, cpu="max").stdout.split()
    assert out == ["rc", "0", "0", "s32", "0", "0", "f32", "0", "0"], out


BAD_ARGUMENT_CHECKS = {"odd_rows", "odd_cols", "null_tiles", "null_out", "ldo_small", "overlap",
                       "overlap_in_place", "size_overflow", "f32_odd_cols", "empty_rows",
                       "empty_cols"}


@pytest.mark.parametrize("compiler,cpu", [("gcc", "max"), ("clang", "cortex-a57")])
def test_bad_arguments(tmp_path, compiler, cpu):
    binary = build_harness(tmp_path, "drv_q_uzp.c", ["uzp.c"], link=["uzp.c"], compiler=compiler)
    proc = run_qemu(binary, "bad", cpu=cpu, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ok = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("ok ")]
    assert sorted(ok) == sorted(BAD_ARGUMENT_CHECKS), proc.stdout
