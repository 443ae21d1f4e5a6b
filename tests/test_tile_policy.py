"""Tests of the tile policy (gen/tile_policy.py): the solver's choice kept where it meets the
targets, the maximin for CPU=generic where it does not, and the estimates checked against
llvm-mca-19 on the kernel that is generated (the reference the issue's targets are stated in)."""
import shutil

import pytest

from bench import kernels_mca as km
from gen import tile_policy
from gen.cores import CORES
from gen.emit import emit_kernel
from gen.tiling import candidates

needs_mca = pytest.mark.skipif(not (shutil.which(km.LLVM_MCA) and shutil.which(km.GCC)),
                               reason="needs llvm-mca-19 and aarch64-linux-gnu-gcc (make deps)")


def _tile(c):
    return c.ep, c.hp, c.strategy


def test_latency_bound_by_hand():
    # Neoverse V1 bfmmla: latency 5, 4 per cycle (gen/cores.py) -> 20 chains keep it busy.
    assert tile_policy.latency_bound(CORES["neoverse-v1"], "bfmmla", 16) == pytest.approx(0.8)
    assert tile_policy.latency_bound(CORES["neoverse-v1"], "bfmmla", 24) == 1.0
    # Neoverse N2 bfmmla: 5 x 2 = 10.
    assert tile_policy.latency_bound(CORES["neoverse-n2"], "bfmmla", 5) == pytest.approx(0.5)


def test_solver_choice_kept_where_it_meets_the_targets():
    choice = tile_policy.choose("sdot")
    assert _tile(choice.candidate) == _tile(candidates("sdot")[0])
    assert choice.first.meets_targets() and choice.weighed == ()
    # every core with dotprod, except Cortex-A510: it has i8mm, so dispatch runs smmla there
    # and the sdot loop is not judged on it (gen.schedule.targets)
    assert {core for core, _ in choice.first.fractions} == {
        "neoverse-n2", "cortex-a710", "neoverse-v1", "cortex-a55"}


def test_named_core_keeps_the_solver_choice():
    choice = tile_policy.choose("bfmmla", cpu="cortex-a510")
    assert _tile(choice.candidate) == _tile(candidates("bfmmla", cpu="cortex-a510")[0])
    assert choice.first is None and choice.weighed == ()


def test_bfmmla_generic_is_the_maximin_of_every_accumulator_count():
    """The stopping rule skips nothing better: every count's best-ranked tile, estimated here
    without stopping, has a worst case no higher than the chosen tile's."""
    choice = tile_policy.choose("bfmmla")
    first = candidates("bfmmla")[0]
    assert not choice.first.meets_targets() and _tile(choice.first.candidate) == _tile(first)
    chosen = next(e for e in choice.weighed if _tile(e.candidate) == _tile(choice.candidate))
    per_count = {}
    for c in candidates("bfmmla", min_accumulators=1):
        per_count.setdefault(c.regs_c, c)
    for count, c in per_count.items():
        e = (choice.first if _tile(c) == _tile(first)
             else tile_policy.estimate(c, "generic", searched=False))
        assert e.worst[1] <= chosen.worst[1] + 1e-9, (count, e.summary())
        if abs(e.worst[1] - chosen.worst[1]) < 1e-9:     # a tie goes to fewer bytes per MAC
            assert e.candidate.exact_bytes_per_mac >= choice.candidate.exact_bytes_per_mac
    assert chosen.worst[1] > choice.first.worst[1]


@needs_mca
def test_estimates_agree_with_llvm_mca(tmp_path):
    """The generated bfmmla kernel's loop under llvm-mca-19: in-order cores at least the
    estimate (the emitted loop is also searched), out-of-order cores at the latency bound."""
    choice = tile_policy.choose("bfmmla")
    kernel = emit_kernel(tile_policy.solve("bfmmla"), "ts_", inst_mode="never")
    path = tmp_path / kernel.file
    path.write_text(kernel.text)
    region = km.loop_regions(km.preprocess(path))[kernel.symbol]
    estimate = next(e for e in choice.weighed if _tile(e.candidate) == _tile(choice.candidate))
    for core, value in estimate.fractions:
        cycles = km.run_mca({kernel.symbol: region}, core, iterations=200)[kernel.symbol]
        (row,) = km.kernel_rows(kernel.symbol, kernel.manifest, region, {core: cycles})
        measured = row["% peak"] / 100
        if CORES[core].in_order:
            assert measured >= value - 0.005, (core, measured, value)
        else:
            assert measured == pytest.approx(value, abs=0.01), (core, measured, value)
