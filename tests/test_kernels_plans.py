"""The emitter on hand-made tile plans: shapes and strategies the solver does not pick today
(stream_b, rotations that do not divide, partial registers, odd MMLA column blocks, one row,
no callee-saved registers) run under qemu against the C reference; bad plans and broken
schedules are rejected with a message."""
from __future__ import annotations

import json
import re

import pytest

import gen.emit
from cross import run_qemu
from gen.emit import emit_kernel
from gen.loop import KernelPlanError, check_same_dependencies, iteration_body
from gen.plan import TilePlan
import kernel_build
from drv_q_support import render_templates

KSTEPS = tuple(range(0, 18)) + (64,)      # every remainder of an unroll of 2, 4, 6 or 8


def plan(instruction, ep, hp, lp, strategy, a, b, c):
    return TilePlan(instruction, ep, hp, lp, strategy, tuple(a), tuple(b), tuple(c), 0.0)


def span(first, count):
    return range(first, first + count)


HAND_PLANS = {
    "fmla 8x12 resident": plan("fmla_f32", 8, 12, 1, "resident", span(0, 2), span(2, 3), span(5, 24)),
    "fmla 12x8 stream_a 3 chunks in 2 regs": plan("fmla_f32", 12, 8, 1, "stream_a", span(0, 2),
                                                  span(2, 2), span(4, 24)),
    "fmla 6x4 partial A (ldr d, ldur)": plan("fmla_f32", 6, 4, 1, "resident", span(0, 2),
                                             span(2, 1), span(3, 6)),
    "fmla 1x4 one row": plan("fmla_f32", 1, 4, 1, "resident", [0], [1], [2]),
    "fmla 4x4 no callee-saved": plan("fmla_f32", 4, 4, 1, "resident", [16], [17], [18, 19, 20, 21]),
    "smlal 8x12 partial B (ldr d)": plan("smlal", 8, 12, 1, "resident", [0], span(1, 2), span(3, 24)),
    "smlal 2x8 partial A (ldr s)": plan("smlal", 2, 8, 1, "resident", [15], [1], span(2, 4)),
    "sdot 8x12 resident": plan("sdot", 8, 12, 4, "resident", span(0, 2), span(2, 3), span(5, 24)),
    "udot 8x12 stream_b": plan("udot", 8, 12, 4, "stream_b", span(0, 2), span(2, 2), span(4, 24)),
    "smmla 8x12 stream_b": plan("smmla", 8, 12, 8, "stream_b", span(0, 4), span(4, 4), span(8, 24)),
    "ummla 4x6 odd column block": plan("ummla", 4, 6, 8, "resident", span(0, 2), span(2, 3), span(5, 6)),
    "usmmla 6x2 stream_a 1 reg": plan("usmmla", 6, 2, 8, "stream_a", [0], [1], span(2, 3)),
    "bfmmla 12x8 stream_b": plan("bfmmla", 12, 8, 4, "stream_b", span(0, 6), span(6, 2), span(8, 24)),
    "bfmmla 2x10 odd, regs high": plan("bfmmla", 2, 10, 4, "resident", [31], span(26, 5), span(16, 5)),
}


@pytest.fixture(scope="module")
def hand_harness(tmp_path_factory):
    out = tmp_path_factory.mktemp("hand-plans")
    kernels = [emit_kernel(p, prefix="hand_") for p in HAND_PLANS.values()]
    assert len({k.symbol for k in kernels}) == len(kernels), "two hand plans with one symbol"
    entries = []
    for p, k in zip(HAND_PLANS.values(), kernels):
        (out / k.file).write_text(k.text)
        variant = emit_kernel(p, prefix="hand_", epilogue=hand_epilogue(p))
        (out / variant.file).write_text(variant.text)
        entries.append(dict(k.manifest, variants=[variant.manifest]))
    manifest = {"prefix": "hand_", "kernels": entries}
    render_templates(out, ["requant.c"], prefix="hand_")     # the requant reference
    header = gen.emit.environment().get_template("kernels.h.j2").render(
        p="hand_", P="HAND_", arch="v86", cpu="generic", inst="auto", kernels=manifest["kernels"],
        sme_kernels=[], sme_packers=[], qdyn_kernels=[])
    (out / "hand_kernels.h").write_text(header)
    (out / "manifest.json").write_text(json.dumps(manifest))
    binary = kernel_build.build_harness(out, manifest, out / "harness")
    return binary, {name: k for name, k in zip(HAND_PLANS, kernels)}


def hand_epilogue(p):
    """The fused epilogue a hand plan is also emitted with: fp32 accumulators biasclamp,
    integer ones requant (uint32 ones read as int32 bits: only the epilogue is under test)."""
    return "biasclamp" if p.inst.c_type == "fp32" else "requant"


@pytest.mark.parametrize("name", list(HAND_PLANS))
def test_hand_plan_contract_v2(hand_harness, name):
    """Partial tiles, accumulator input and the fused epilogue on the odd shapes (odd MMLA
    column blocks, one row, partial registers, no callee-saved registers)."""
    binary, kernels = hand_harness
    raw = kernels[name].symbol
    for symbol in (raw, raw + ("_biasclamp" if hand_epilogue(HAND_PLANS[name]) == "biasclamp"
                               else "_requant")):
        proc = run_qemu(binary, "-v2", symbol, *KSTEPS, cpu="max")
        assert proc.stdout.strip().endswith(f"ok v2 {symbol}: 0 failure(s)"), proc.stdout


@pytest.mark.parametrize("name", list(HAND_PLANS))
def test_hand_plan_kernel_matches_reference(hand_harness, name):
    binary, kernels = hand_harness
    symbol = kernels[name].symbol
    proc = run_qemu(binary, symbol, *KSTEPS, cpu="max")
    assert proc.stdout.strip().endswith(f"ok {symbol}: 0 failure(s)"), proc.stdout


def test_manifest_registers_of_hand_plans(hand_harness):
    _, kernels = hand_harness
    assert kernels["fmla 4x4 no callee-saved"].manifest["callee_saved_used"] == []
    # contract v2: every kernel has a frame (args across the k-loop, the stack tile) but saves
    # no d register it does not use
    body = kernels["fmla 4x4 no callee-saved"].text.split("KERNEL_SYMBOL:")[1]
    assert not re.search(r"\b(stp|str|ldp|ldr) d\d+, .*\[sp", body)
    used = kernels["fmla 1x4 one row"].manifest["gpregs_used"]
    assert used[:5] == ["x0", "x1", "x2", "x3", "x4"] and int(used[-1][1:]) <= 17
    assert kernels["fmla 8x12 resident"].manifest["callee_saved_used"] == [
        f"d{n}" for n in range(8, 16)]


@pytest.mark.parametrize("bad,message", [
    (plan("fmla_f32", 8, 12, 4, "resident", span(0, 2), span(2, 3), span(5, 24)), "lp must be"),
    (plan("fmla_f32", 8, 10, 1, "resident", span(0, 2), span(2, 3), span(5, 20)), "hp of 4"),
    (plan("fmla_f32", 8, 12, 1, "sideways", span(0, 2), span(2, 3), span(5, 24)), "unknown strategy"),
    (plan("fmla_f32", 8, 12, 1, "resident", span(0, 2), span(2, 2), span(5, 24)), "B registers"),
    (plan("fmla_f32", 8, 12, 1, "stream_b", span(0, 2), span(2, 3), span(5, 24)), "B registers"),
    (plan("fmla_f32", 8, 12, 1, "resident", span(0, 2), span(2, 3), span(5, 23)), "accumulators"),
    (plan("fmla_f32", 8, 12, 1, "resident", span(0, 2), span(1, 3), span(5, 24)), "distinct"),
    (plan("fmla_f32", 4, 4, 1, "resident", [0], [1], [2, 3, 4, 32]), "distinct"),
    (plan("smlal", 8, 12, 1, "resident", [30], span(0, 2), span(2, 24)), "v0-v15"),
    (plan("fmla_f32", 3, 4, 1, "resident", [0], [1], [2, 3, 4]), "12 bytes"),
    (plan("nope", 3, 4, 1, "resident", [0], [1], [2, 3, 4]), "unknown instruction"),
])
def test_bad_plan_is_rejected_with_the_reason(bad, message):
    with pytest.raises(KernelPlanError, match=message):
        emit_kernel(bad, prefix="ts_")


def test_dependency_check_accepts_independent_swaps_only():
    body = iteration_body(HAND_PLANS["smmla 8x12 stream_b"])
    macs = [i for i, insn in enumerate(body) if insn.kind == "mac"]
    swapped = list(body)
    swapped[macs[0]], swapped[macs[1]] = swapped[macs[1]], swapped[macs[0]]
    check_same_dependencies(body, swapped)          # two MACs into different accumulators
    load = next(i for i, insn in enumerate(body) if insn.kind == "load")
    early = [body[load]] + body[:load] + body[load + 1:]
    with pytest.raises(KernelPlanError, match="broke a dependency"):
        check_same_dependencies(body, early)        # the load would overwrite a live operand
    with pytest.raises(KernelPlanError, match="branch"):
        check_same_dependencies(body, body[-1:] + body[:-1])
    with pytest.raises(KernelPlanError, match="different set"):
        check_same_dependencies(body, body[1:])


def test_a_schedule_breaking_dependencies_stops_generation(monkeypatch):
    monkeypatch.setattr(gen.emit, "schedule_loop", lambda body, cpu: list(reversed(body[:-1])) + body[-1:])
    with pytest.raises(KernelPlanError):
        emit_kernel(HAND_PLANS["fmla 8x12 resident"], prefix="ts_")


def test_loop_loads_stay_inside_the_panels():
    """Offsets of the peeled step and of the preloads stay below one k-step; loop loads reach
    at most one k-step ahead (the loop runs ksteps - 1 times)."""
    from gen.loop import peeled_last_step, preload, step_bytes
    import re
    for p in HAND_PLANS.values():
        limit = {"x0": step_bytes(p, "a"), "x1": step_bytes(p, "b")}
        for code, ahead in ((peeled_last_step(p), 0), (preload(p), 0), (iteration_body(p), 1)):
            for insn in code:
                if insn.kind != "load":
                    continue
                match = re.fullmatch(r"ldu?r ([bhsdq])\d+, \[(x[01])(?:, #(-?\d+))?\]", insn.text)
                assert match, insn.text
                size = {"b": 1, "h": 2, "s": 4, "d": 8, "q": 16}[match[1]]
                offset = int(match[3] or 0)
                assert 0 <= offset and offset + size <= (1 + ahead) * limit[match[2]], insn.text
