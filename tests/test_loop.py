"""The k-loop transforms of gen/loop.py (unrolled main loop, single-step remainder, ld1 loads
from pointer registers, ldr with register offsets, double-buffered banks) checked by running the generated instruction
lists symbolically: registers hold "bytes b..b+n of panel A/B" instead of data, and every MAC
must multiply exactly the A and B bytes the tile geometry says (computed here from ep, hp and
the packed layout, not from gen.loop), for every k-step of every k-step count, with no load
outside the panels. The scheduled main loop must compute the same as the unscheduled one."""
from __future__ import annotations

import re

import pytest

from gen import emit, loop
from gen.isa import TYPE_BYTES
from gen.plan import TilePlan
from gen.tiling import solve

VECTOR = 16


class Machine:
    """Registers: x-registers hold (panel, byte address) or an integer; v-registers hold
    (panel, address, bytes) of what was last loaded into them."""

    def __init__(self, plan: TilePlan, ksteps: int):
        self.limit = {"A": ksteps * loop.step_bytes(plan, "a"),
                      "B": ksteps * loop.step_bytes(plan, "b")}
        self.x = {"x0": ("A", 0), "x1": ("B", 0), "x2": ksteps}
        self.v = {}
        self.macs = []          # (accumulator, A content, B content, text)

    def _load(self, regs, base, offset, size):
        panel, address = self.x[base]
        for k, reg in enumerate(regs):
            start = address + offset + k * size
            assert 0 <= start and start + size <= self.limit[panel], \
                f"load of {panel}[{start}:{start + size}] outside the panel"
            self.v[reg] = (panel, start, size)

    def run(self, insns):
        for insn in insns:
            self.step(insn.text)

    def step(self, text):
        op, _, rest = text.partition(" ")
        args = [a.strip() for a in re.split(r",(?![^{]*})", rest)]
        if op in ("ldr", "ldur"):
            size = {"q": 16, "d": 8, "s": 4, "h": 2, "b": 1}[args[0][0]]
            base, offset, index = re.fullmatch(r"\[(x\d+)(?:, #(-?\d+)|, (x\d+))?\]",
                                               ", ".join(args[1:])).groups()
            offset = self.x[index] if index else int(offset or 0)    # ldr_r: register offset
            self._load([f"v{args[0][1:]}"], base, offset, size)
        elif op == "ld1":
            regs = re.findall(r"v(\d+)\.(\w+)", args[0])
            size = {"16b": 16, "8b": 8}[regs[0][1]]
            numbers = [int(r) for r, _ in regs]
            assert numbers == list(range(numbers[0], numbers[0] + len(numbers))), text
            self._load([f"v{r}" for r in numbers], args[1].strip("[]"), 0, size)
        elif op in ("add", "sub"):
            dst, src, imm = args[0], args[1], int(args[2].lstrip("#"))
            value = self.x[src]
            sign = 1 if op == "add" else -1
            self.x[dst] = (value[0], value[1] + sign * imm) if isinstance(value, tuple) \
                else value + sign * imm
        elif op == "mov":
            self.x[args[0]] = int(args[1][1:]) if args[1].startswith("#") else self.x[args[1]]
        elif op == "subs":
            self.x[args[0]] = self.x[args[1]] - int(args[2].lstrip("#"))
        elif op in ("b.hs", "b.ne"):
            pass                                   # control flow is driven by run_kernel
        else:                                      # a MAC: accumulator, then its operands
            regs = re.findall(r"v(\d+)", text)
            acc, first, second = (f"v{r}" for r in regs[:3])
            index = re.search(r"\[(\d+)\]", text)
            self.macs.append((acc, self.v[first], self.v[second],
                              int(index.group(1)) if index else None, op))


def run_kernel(plan: TilePlan, ksteps: int, main: loop.MainLoop) -> Machine:
    """The control flow of templates/kernel.S.j2 with the instruction lists gen/loop.py makes."""
    m = Machine(plan, ksteps)
    if ksteps == 0:
        return m
    m.run(loop.preload(plan))
    remaining = ksteps - 1
    if remaining >= main.unroll:
        m.run(loop.pointer_setup(plan, main))
        while remaining >= main.unroll:
            m.run(main.body)
            remaining -= main.unroll
        if remaining == main.unroll - 1:       # the peeled last iteration ends the k-loop
            m.run(loop.loop_tail(main))
            return m
        m.run(loop.panel_fixup(plan, main))
    for _ in range(remaining):
        m.run(loop.iteration_body(plan))
    m.run(loop.peeled_last_step(plan))
    return m


def expected_macs(plan: TilePlan, ksteps: int):
    """Per accumulator register, the sorted (A bytes, B bytes) pairs it must receive: row form
    - accumulator (row r, column block j) reads the A register holding row r at k-step s and
    the B register holding columns 4j..4j+3; tile form - (row pair i, column pair j) reads A
    rows 2i, 2i+1 and B columns 2j, 2j+1 (16 packed bytes each)."""
    inst = plan.inst
    a_row = plan.lp * TYPE_BYTES[inst.a_type]            # bytes of one row per k-step
    b_col = plan.lp * TYPE_BYTES[inst.b_type]
    a_step, b_step = plan.ep * a_row, plan.hp * b_col
    want = {}
    for s in range(ksteps):
        for rb in range(plan.ep // inst.c_rows_per_reg):
            for cb in range(plan.hp // inst.c_cols_per_reg):
                row, col = rb * inst.c_rows_per_reg, cb * inst.c_cols_per_reg
                a_reg = (row * a_row) // VECTOR
                b_reg = (col * b_col) // VECTOR
                a_start = s * a_step + a_reg * VECTOR
                b_start = s * b_step + b_reg * VECTOR
                a_size = min(VECTOR, a_step - a_reg * VECTOR)
                b_size = min(VECTOR, b_step - b_reg * VECTOR)
                acc = f"v{plan.c_reg_for(rb, cb)}"
                # row forms: A element = row within its register; smlal2 takes B's high half
                index = row % inst.a_rows_per_reg if inst.acc_shape == "row" else None
                half = (col * b_col // 8) % 2 if inst.halves > 1 else 0
                want.setdefault(acc, []).append((("A", a_start, a_size), ("B", b_start, b_size),
                                                 index, half))
    return {k: sorted(v) for k, v in want.items()}


def observed_macs(plan: TilePlan, machine: Machine):
    got = {}
    for acc, first, second, index, op in machine.macs:
        # row forms name B first (vB.4s, vA.s[i]); tile forms A first
        a, b = (second, first) if plan.inst.acc_shape == "row" else (first, second)
        got.setdefault(acc, []).append((a, b, index, int(op.endswith("2"))))
    return {k: sorted(v) for k, v in got.items()}


PLANS = {name: solve(name) for name in ("fmla_f32", "smlal", "sdot", "smmla", "bfmmla")}
PLANS["smmla stream_b (hand)"] = TilePlan("smmla", 8, 12, 8, "stream_b", tuple(range(4)),
                                          (4, 5), tuple(range(8, 32)), 0.0)
PLANS["fmla 12x8 stream_a 3 in 2 (hand)"] = TilePlan("fmla_f32", 12, 8, 1, "stream_a", (0, 1),
                                                     (2, 3), tuple(range(4, 28)), 0.0)
PLANS["sdot 12x8 double_b (hand)"] = TilePlan("sdot", 12, 8, 4, "double_b", (0, 1, 2),
                                              (3, 4, 5, 6), tuple(range(7, 31)), 0.0)


@pytest.mark.parametrize("name", list(PLANS))
@pytest.mark.parametrize("variant", emit.MAIN_LOOP_VARIANTS)
def test_every_mac_reads_its_k_step(name, variant):
    plan = PLANS[name]
    try:
        main = loop.main_loop(plan, *variant)
    except loop.KernelPlanError as error:
        # only ldr_r can be out of registers (one per distinct offset: bfmmla's 4 k-steps of
        # 8 A and 4 B chunks need 16); gen.emit.main_loop_variants leaves such a variant out
        assert variant[1] == "ldr_r" and "distinct load offsets" in str(error), error
        assert len(emit.main_loop_variants(plan)) < len(emit.MAIN_LOOP_VARIANTS)
        return
    for ksteps in range(0, 2 * variant[0] + 3):
        machine = run_kernel(plan, ksteps, main)
        assert observed_macs(plan, machine) == (expected_macs(plan, ksteps) if ksteps else {}), \
            f"{name} {variant} ksteps={ksteps}"


@pytest.mark.parametrize("name", ["sdot", "smmla", "fmla_f32"])
def test_scheduled_main_loop_computes_the_same(name):
    plan = PLANS[name]
    chosen = emit.scheduled_main_loop(plan, "generic")
    for ksteps in (chosen.unroll + 1, 3 * chosen.unroll + 2):
        machine = run_kernel(plan, ksteps, chosen)
        assert observed_macs(plan, machine) == expected_macs(plan, ksteps)


def test_a_broken_transform_is_caught():
    """The checker must fail when one load of the main loop reads the wrong k-step."""
    plan = PLANS["sdot"]
    main = loop.main_loop(plan, 2, "ldr")
    k = next(i for i, insn in enumerate(main.body) if insn.text.startswith("ldr q"))
    wrong = re.sub(r"#(\d+)\]", lambda m: f"#{int(m.group(1)) + 16}]", main.body[k].text)
    if wrong == main.body[k].text:
        wrong = main.body[k].text.replace("]", ", #16]")
    body = main.body[:k] + [loop.Insn(wrong, "load")] + main.body[k + 1:]
    broken = loop.MainLoop(body, main.unroll, main.pointers, main.advances_panels)
    machine = run_kernel(plan, 5, broken)
    assert observed_macs(plan, machine) != expected_macs(plan, 5)


def test_ld1_forms_and_pointers():
    """ld1 variants load through pointer registers x5-x17 (beyond 13 pointers, with every load
    an ld1: x4, x0, x1), merge consecutive registers, never post-index; the ldr variant uses
    x0/x1 only."""
    plan = PLANS["smmla"]
    merged = loop.main_loop(plan, 4, "ld1", 4)
    texts = [i.text for i in merged.body if i.kind == "load"]
    assert texts and all(t.startswith("ld1 {") and t.endswith("]") for t in texts)
    assert any(t.count(".16b") == 4 for t in texts)
    assert {p.reg for p in merged.pointers} <= set(loop.POINTER_REGS)
    # 8 k-steps take 16 pointers: x5-x17, then x4 (ldc, spilled), x0 for A, x1 for B
    wide = loop.main_loop(plan, 8, "ld1", 4)
    regs = [p.reg for p in wide.pointers]
    assert regs == list(loop.POINTER_REGS) + ["x4", "x0", "x1"] and wide.spills_ldc
    assert [p.operand for p in wide.pointers if p.reg in ("x0", "x1")] == ["a", "b"]
    assert not wide.advances_panels and not merged.spills_ldc
    setup = [i.text for i in loop.pointer_setup(plan, wide)]
    assert setup[-2:] == ["add x0, x0, #512", "add x1, x1, #512"]    # after every x0/x1 read
    tail = loop.loop_tail(wide)
    assert len([i for i in tail if i.kind == "load"]) == 14 and len(wide.next_loads) == 2
    assert all(i.kind in ("load", "mac") for i in tail)
    single = loop.main_loop(plan, 4, "ld1", 1)
    assert all(i.text.count(".16b") == 1 for i in single.body if i.text.startswith("ld1"))
    plain = loop.main_loop(plan, 2, "ldr")
    assert not plain.pointers and all(re.search(r"\[x[01]", i.text)
                                      for i in plain.body if i.kind == "load")
    # ldr_r: x0/x1 plus one offset register per distinct offset, set once; only x0/x1 advance
    regs = loop.main_loop(PLANS["sdot"], 4, "ldr_r")
    loads = [i.text for i in regs.body if i.kind == "load"]
    offsets = dict(regs.offset_regs)
    assert loads and all(re.fullmatch(r"ldr q\d+, \[x[01], (x\d+)\]", t) for t in loads)
    assert set(offsets) <= set(loop.POINTER_REGS) and len(set(offsets.values())) == len(offsets)
    assert not regs.pointers and [i.text.split(",")[0] for i in regs.body
                                  if i.text.startswith("add")] == ["add x0", "add x1"]
    assert [i.text for i in loop.pointer_setup(PLANS["sdot"], regs)] == \
        [f"mov {r}, #{o}" for r, o in regs.offset_regs]


@pytest.mark.parametrize("args,message", [
    ((PLANS["smmla"], 3, "ld1"), "even unroll"),
    ((PLANS["sdot"], 0, "ldr"), "positive integer"),
    ((PLANS["sdot"], 2, "ldp"), "unknown load form"),
    ((PLANS["sdot"], 2, "ld1", 5), "1 to 4"),
])
def test_bad_main_loop_arguments(args, message):
    with pytest.raises(loop.KernelPlanError, match=message):
        loop.main_loop(*args)
