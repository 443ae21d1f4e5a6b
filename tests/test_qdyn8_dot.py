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


def test_decode_kernel_choice_by_hand():
    """The fused decode kernel over the raw 8 x 12 panels (kind 5 on the dotprod path): one
    row over 5 panels (60 columns). By hand per k-step of ep rows x P panels of 12 columns:
    3P ep sdot, 3P + ep/4 loads (B per column quad, A 16 bytes per 4 k-steps), (1 + P + 2) / 4
    pointer adds, subs and branch. Registers: 3P ep accumulators + ep A + 3P B <= 32, so one
    row takes at most 5 panels (6: 37), a row pair 3 (4: 38)."""
    assert qdyn8_dot.decode_registers(1, 15) == 31 and qdyn8_dot.decode_registers(1, 18) == 37
    assert qdyn8_dot.decode_registers(2, 9) == 29 and qdyn8_dot.decode_registers(2, 12) == 38
    plan = qdyn8_dot.solve_decode(12)
    assert (plan.ep, plan.panels, plan.hp, plan.pc) == (1, 5, 60, 12)
    # 1 x 5 panels: 15 sdot, 15.25 loads, 2 others = 32.25 instructions per 240 weight bytes;
    # N2 (sdot 2/cycle, chain 3): 7.5 cycles -> 32; V1 (sdot 4/cycle, 3 loads/cycle): 5.083 ->
    # 47.2; A510 (3-wide issue): 10.75 -> 22.3; A55 (2-wide issue): 16.125 -> 14.9. The worst
    # core (A55) ranks it: 1 x 4 panels there 192 / 13 = 14.77 < 14.88
    ranked = qdyn8_dot.decode_candidates(12)
    assert ranked[0][:2] == (1, 5) and ranked[0][2] == pytest.approx(240 / 16.125)
    assert ranked[1][:2] == (1, 4) and ranked[1][2] == pytest.approx(192 / 13)
    from gen.cores import cores_for
    want = {"neoverse-n2": 32, "neoverse-v1": 240 / (15.25 / 3), "cortex-a510": 240 / 10.75,
            "cortex-a55": 240 / 16.125}
    for core in cores_for("generic"):
        if core.name in want:
            assert 240 / qdyn8_dot.decode_cycles(1, 12, 5, core) == pytest.approx(want[core.name])


def test_decode_kernel_reads_each_panel_k_step_and_lane_once():
    """The emitted inner loop (as scheduled) and single k-step: every accumulator (column quad
    q of panel p) gets one sdot per k-step s of the iteration, with the B register last loaded
    from panel p's stream at 48 s + 16 (q % 3) (the raw panel's k-step, column quad) and A's
    lane s (the row's k-step s); the prologue chains the streams by b_stride."""
    import re
    from gen.emit import environment
    plan = qdyn8_dot.solve_decode(12)
    streams = qdyn8_dot.decode_pointers(plan)
    assert streams == ["x1", "x9", "x10", "x11", "x12"]
    for steps in (qdyn8_dot.DECODE_UNROLL, 1):
        from gen.qdyn4 import scheduled
        body = scheduled(qdyn8_dot.decode_steps(plan, steps), "generic")
        loaded, seen = {}, []
        for insn in body:
            m = re.match(r"ldr q(\d+), \[(x\d+), #(\d+)\]", insn.text)
            if m:
                loaded[int(m[1])] = (m[2], int(m[3]))
            m = re.match(r"sdot v(\d+)\.4s, v(\d+)\.16b, v0\.4b\[(\d)\]", insn.text)
            if m:
                q = plan.acc_regs.index(int(m[1]))
                ptr, off = loaded[int(m[2])]
                lane = int(m[3])
                assert ptr == streams[q // 3]
                s = lane if steps > 1 else 0
                assert off == 48 * s + 16 * (q % 3), insn.text
                seen.append((q, s))
        assert sorted(seen) == [(q, s) for q in range(15) for s in range(steps)]
        adds = [i.text for i in body if i.text.startswith("add ")]
        assert sorted(adds) == sorted([f"add x0, x0, #{4 * steps}"]
                                      + [f"add {p}, {p}, #{48 * steps}" for p in streams])
    pro = [i.text for i in qdyn8_dot.decode_prologue(plan)]
    assert [t for t in pro if t.startswith("add x")] == [
        "add x9, x1, x16", "add x10, x9, x16", "add x11, x10, x16", "add x12, x11, x16"]
    kernel = qdyn8_dot.emit_decode(plan, "ts_", "auto", environment())
    assert kernel.manifest["weights"] == "s8" and kernel.manifest["decode"]
    from gen.registry import qdyn_kind
    assert qdyn_kind(kernel.manifest) == 5
