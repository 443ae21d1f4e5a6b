"""bench.kernels_mca on a hand-written marked loop: structure of the table (cores, columns,
figures consistent with each other), `.inst` lines fed to llvm-mca in mnemonic form, clear
errors. Numbers are llvm-mca's; they are not asserted as timings."""
import json
import shutil

import pytest

from bench import kernels_mca as km

pytestmark = pytest.mark.skipif(not (shutil.which(km.LLVM_MCA) and shutil.which(km.GCC)),
                                reason="needs llvm-mca-19 and aarch64-linux-gnu-gcc (make deps)")

KERNEL = """\
#define STEP_A 32
        .text
// a hand-written 4x4 smmla loop (2 A registers, 2 B registers, 4 accumulators)
// LLVM-MCA-BEGIN {symbol}
1:
        ldr q0, [x0]
        ldr q1, [x0, #16]
        ldr q2, [x1]
        ldr q3, [x1, #16]
        .inst 0x4e82a410 // smmla v16.4s, v0.16b, v2.16b
        .inst 0x4e83a411 // smmla v17.4s, v0.16b, v3.16b
        smmla v18.4s, v1.16b, v2.16b
        smmla v19.4s, v1.16b, v3.16b
        add x0, x0, #STEP_A
        add x1, x1, #32
        subs x2, x2, #1
        b.ne 1b
// LLVM-MCA-END
        ret
"""


def write_kernel(folder, symbol="ts_test_smmla_4x4x8", text=KERNEL):
    (folder / f"{symbol}.S").write_text(text.format(symbol=symbol))
    manifest = {"arch": "v86", "kernels": [
        {"symbol": symbol, "file": f"{symbol}.S", "instruction": "smmla", "ep": 4, "hp": 4,
         "lp": 8}]}
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_table_structure(tmp_path):
    write_kernel(tmp_path)
    rows = km.kernel_table(tmp_path, iterations=100)
    # smmla needs i8mm: every benchmarked core but the Cortex-A55
    assert [r["core"] for r in rows] == [c for c in km.BENCH_CORES if c != "cortex-a55"]
    for row in rows:
        assert row["kernel"] == "ts_test_smmla_4x4x8" and row["tile"] == "4x4x8"
        assert row["cycles/iter"] > 0
        # 4 smmla per iteration, 32 MACs each
        assert row["MACs/cycle"] == pytest.approx(4 * 32 / row["cycles/iter"], rel=0.01)
        assert 0 < row["% peak"] <= 100.5
        assert row["bound %"] is None or 0 < row["bound %"] <= 100


def test_one_core_and_cli(tmp_path, capsys):
    write_kernel(tmp_path)
    assert km.main([str(tmp_path), "--cpu", "cortex-a510", "--iterations", "50"]) == 0
    out = capsys.readouterr().out
    assert "ts_test_smmla_4x4x8" in out and "cortex-a510" in out and "% peak" in out


def test_inst_lines_become_mnemonics():
    assert km.mnemonic_form("  .inst 0x4e82a410 // smmla v16.4s, v0.16b, v2.16b") == \
        "  smmla v16.4s, v0.16b, v2.16b"
    assert km.mnemonic_form("  ldr q0, [x0]") == "  ldr q0, [x0]"
    with pytest.raises(km.KernelBenchError, match="no mnemonic comment"):
        km.mnemonic_form("  .inst 0x4e82a410")


def test_numeric_labels_are_named():
    lines = km.named_labels(["1:", "  add x0, x0, #1", "  b.ne 1b"], "tsloop0")
    assert lines == ["tsloop0_1:", "  add x0, x0, #1", "  b.ne tsloop0_1"]


def test_errors_name_the_problem(tmp_path):
    with pytest.raises(km.KernelBenchError, match="manifest.json"):
        km.kernel_table(tmp_path)
    write_kernel(tmp_path, text=KERNEL.replace("// LLVM-MCA-END", ""))
    with pytest.raises(km.KernelBenchError, match="no LLVM-MCA-END"):
        km.kernel_table(tmp_path)
    with pytest.raises(km.KernelBenchError, match="unknown core"):
        km.kernel_table(tmp_path, cores=("cortex-x9",))
