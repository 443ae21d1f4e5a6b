"""`python3 -m bench` command line: bad --arch / --cpu / --inst values are bench's own errors,
reported before any generation or profiling starts."""
from __future__ import annotations

import subprocess
import sys

import pytest

from cross import ROOT
from gen.cores import CPU_NAMES
from gen.emit import INST_MODES
from gen.isa import ARCH_LEVELS


@pytest.mark.parametrize("option,value,valid", [("--arch", "v9", ARCH_LEVELS),
                                                ("--cpu", "foo", CPU_NAMES),
                                                ("--inst", "sometimes", INST_MODES)])
def test_bad_build_option_is_a_clear_bench_error(option, value, valid, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "bench", option, value, "--out-dir", str(tmp_path),
                           "--report", str(tmp_path / "report.md")],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    message = proc.stderr.strip()
    assert message.startswith(f"bench: {option}: unknown ") and repr(value) in message, message
    assert all(v in message for v in valid), message    # lists the valid values
    assert "gen generate" not in message and "Traceback" not in message, message
    assert list(tmp_path.iterdir()) == []                 # nothing generated or profiled


def test_sme_arch_without_sme_option_is_a_clear_bench_error(tmp_path):
    """v92 is a valid ARCH, but the cycle report models no SME instruction: --sme takes it."""
    proc = subprocess.run([sys.executable, "-m", "bench", "--arch", "v92", "--out-dir",
                           str(tmp_path), "--report", str(tmp_path / "report.md")],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("bench: --arch v92 is the SME build") and "--sme" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_threads_option_adds_newest_path_copies_with_the_pool_argument():
    """--threads 1,4,8: each selected workload once per path, then a copy per count > 1 on its
    newest path, run as `workloads threads=N …` (bench/workloads.c's context)."""
    from bench.__main__ import select_runs
    runs, _ = select_runs("v86", "gemm512-s8", "1,4,8")
    names = [(w.name, p.name, w.threads) for w, p in runs]
    base = [r for r in names if r[2] == 1]
    assert len(base) == 3                                       # smlal, sdot, smmla
    assert [r for r in names if r[2] > 1] == [("gemm512-s8-4t", "i8mm", 4),
                                               ("gemm512-s8-8t", "i8mm", 8)]
    w4 = next(w for w, _ in runs if w.threads == 4)
    assert w4.args(runs[-1][1])[0] == "threads=4"
    with pytest.raises(ValueError, match="--threads"):
        select_runs("v86", "gemm512-s8", "0")
