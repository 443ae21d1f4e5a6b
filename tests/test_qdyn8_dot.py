"""gen/qdyn8_dot.py: the dotprod path's small-M tile for qdyn int8 handles (raw sdot over the
8 x 12 kernel's panels as they are). The choice is checked against figures worked by hand from
the core models, not against the module's own output."""
from __future__ import annotations

import pytest

from gen import qdyn8_dot
from gen.tile_policy import solve


def test_the_tile_reads_the_main_panels_and_serves_m_up_to_4():
    main = solve("sdot")
    assert (main.ep, main.hp, main.lp) == (8, 12, 4)
    choice = qdyn8_dot.choose("sdot", main.ep, main.hp, main.strategy)
    c = choice.candidate
    # the handle's layout: same hp and lp, fewer rows
    assert (c.instruction, c.ep, c.hp, c.lp) == ("sdot", 2, 12, 4)
    # by hand, per k-step of 48 weight bytes: 6 sdot (2 rows x 3 column quads) and 4 loads
    # (3 B, 1 A: 8 bytes) against the 8 x 12 tile's 24 sdot and 5 loads; the emitted loops
    # add their loop control (10 and 29 as emitted): two passes (M = 3, 4) 20 <= 29
    assert choice.max_m == 4
    # by hand, modeled weight bytes per cycle at M = 1: max(6 sdot / rate, each accumulator's
    # chain = the sdot latency, 4 loads / load rate) cycles per 48 bytes
    # N2 (lat 3, 2/cycle): 3 -> 16; V1 (lat 2, 4/cycle): 2 -> 24; A510 (lat 4): 4 -> 12;
    # A55 (lat 4, 1/cycle, 1 load/cycle): 6 -> 8
    rates = dict(choice.cycles)
    for core, want in (("neoverse-n2", 16), ("neoverse-v1", 24), ("cortex-a510", 12),
                       ("cortex-a55", 8)):
        assert rates[core] == pytest.approx(want)


def test_no_tile_for_other_paths():
    # smmla has its fused int8 decode kernel (gen/qdyn4.py), smlal none (Armv8.0)
    for inst in ("smmla", "smlal"):
        main = solve(inst)
        assert qdyn8_dot.choose(inst, main.ep, main.hp, main.strategy) is None
