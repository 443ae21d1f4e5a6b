"""Cycle model of in-order issue, the judge the scheduler consults.

It mirrors the rules of llvm-mca's in-order pipeline (llvm/lib/MCA/Stages/InOrderIssueStage.cpp,
LLVM 19), which is how tilesmith's in-order targets (Cortex-A510, Cortex-A55) are measured:
  * instructions issue in program order, at most `issue_width` micro-ops per cycle; one that
    does not fit waits for the next cycle; a BeginGroup instruction must be first in its cycle;
  * an instruction waits until every register it reads is written (producer latency, minus the
    core's ALU forwarding for ALU-to-ALU);
  * it waits until the pipeline units it needs are free (units are held `cycles` each);
  * write-back is in order: unless RetireOOO, its first result may not come earlier than the
    last result of the previously issued non-RetireOOO instruction;
  * a waiting instruction blocks everything behind it.
The out-of-order cores are approximated with the same rules (all RetireOOO), which is enough to
rank orders there: their hardware reorders anyway.
"""
from __future__ import annotations

from dataclasses import dataclass

from .cores import CoreModel, OpTiming


@dataclass(frozen=True)
class IssueOp:
    """One instruction as the model sees it."""
    timing: OpTiming
    defs: tuple[tuple[str, int], ...]   # (register, cycles until readable)
    uses: tuple[str, ...]
    is_alu: bool


class IssueState:
    """The pipeline after the instructions issued so far."""

    def __init__(self, core: CoreModel):
        self.core = core
        self.cycle = 0            # cycle of the most recent issue
        self.used = 0             # micro-ops issued in that cycle
        self.ready: dict[str, tuple[int, bool]] = {}   # reg -> (cycle readable, by an ALU op)
        self.free_at = {unit: [0] * count for unit, count in core.units.items()}
        self.last_write = 0       # cycle of the last in-order write-back

    def copy(self) -> "IssueState":
        other = IssueState.__new__(IssueState)
        other.core, other.cycle, other.used = self.core, self.cycle, self.used
        other.ready = dict(self.ready)
        other.free_at = {u: list(f) for u, f in self.free_at.items()}
        other.last_write = self.last_write
        return other

    def earliest(self, op: IssueOp) -> int:
        """The cycle `op` would issue in if it came next."""
        t = self.cycle
        timing = op.timing
        if (self.used + timing.uops > self.core.issue_width and self.used > 0) or (
                timing.begin_group and self.used > 0):
            t += 1
        for reg in op.uses:
            produced = self.ready.get(reg)
            if produced is not None:
                when, by_alu = produced
                if by_alu and op.is_alu:
                    when -= self.core.alu_forward
                t = max(t, when)
        if not timing.retire_ooo:
            t = max(t, self.last_write - timing.first_result)
        for unit, count, _cycles in timing.units:
            slots = self.free_at[unit]
            t = max(t, min(slots) if count == 1 else sorted(slots)[count - 1])
        return t

    def issue(self, op: IssueOp, t: int | None = None) -> int:
        t = self.earliest(op) if t is None else t
        timing = op.timing
        if t > self.cycle:
            self.cycle, self.used = t, 0
        self.used += timing.uops
        for reg, latency in op.defs:
            self.ready[reg] = (t + latency, op.is_alu)
        for unit, count, cycles in timing.units:
            slots = self.free_at[unit]
            for _ in range(count):
                # the first unit free by cycle t (one is: earliest() waited for it)
                i = next((k for k, free in enumerate(slots) if free <= t), 0)
                slots[i] = t + cycles
        if not timing.retire_ooo:
            self.last_write = max(self.last_write, t + timing.latency)
        return t


def run(ops: list[IssueOp], core: CoreModel, iterations: int,
        state: IssueState | None = None) -> tuple[list[int], IssueState]:
    """Issue `iterations` back-to-back copies of the loop body `ops`; returns the issue cycle
    of each iteration's first instruction and the end state."""
    state = IssueState(core) if state is None else state
    starts = []
    for _ in range(iterations):
        for k, op in enumerate(ops):
            t = state.issue(op)
            if k == 0:
                starts.append(t)
    return starts, state


def compile_ops(ops: list[IssueOp], core: CoreModel) -> list[tuple]:
    """The per-instruction facts `iteration_starts` reads, prepared once (the scheduler's
    local search permutes the prepared list instead of preparing every candidate order)."""
    unit_index = {unit: k for k, unit in enumerate(core.units)}
    reg_index: dict[str, int] = {}
    number = lambda reg: reg_index.setdefault(reg, len(reg_index))
    return [(op.timing.uops, op.timing.begin_group, tuple(number(r) for r in op.uses),
             op.is_alu, op.timing.retire_ooo, op.timing.first_result, op.timing.latency,
             tuple((unit_index[u], count, cycles) for u, count, cycles in op.timing.units),
             tuple((number(reg), lat) for reg, lat in op.defs))
            for op in ops]


def iteration_starts(ops: list[IssueOp], core: CoreModel, iterations: int,
                     compiled: list[tuple] | None = None) -> list[int]:
    """`run(ops, core, iterations)[0]` computed with the same rules, inlined for speed (the
    scheduler's local search spends its time here; tests/test_schedule.py checks the two
    agree). `compiled`: `compile_ops(ops, core)` when the caller has it already."""
    width, forward = core.issue_width, core.alu_forward
    units = [[0] * count for count in core.units.values()]
    plan = compile_ops(ops, core) if compiled is None else compiled
    registers = 1 + max((r for entry in plan for r in entry[2] + tuple(d for d, _ in entry[8])),
                        default=0)
    ready_at = [0] * registers            # cycle each register is readable (0: from the start)
    by_alu_op = [False] * registers       # written by an ALU op (forwarding applies)
    cycle = used = last_write = 0
    starts = []
    for _ in range(iterations):
        first = True
        for uops, begin, uses, is_alu, ooo, first_result, latency, op_units, defs in plan:
            t = cycle
            if used and (used + uops > width or begin):
                t += 1
            for reg in uses:
                when = ready_at[reg] - forward if is_alu and by_alu_op[reg] else ready_at[reg]
                if when > t:
                    t = when
            if not ooo and last_write - first_result > t:
                t = last_write - first_result
            for unit, count, _cycles in op_units:
                slots = units[unit]
                free = min(slots) if count == 1 else sorted(slots)[count - 1]
                if free > t:
                    t = free
            if t > cycle:
                cycle, used = t, 0
            used += uops
            for reg, lat in defs:
                ready_at[reg] = t + lat
                by_alu_op[reg] = is_alu
            for unit, count, cycles in op_units:
                slots = units[unit]
                for _ in range(count):
                    for k, free in enumerate(slots):
                        if free <= t:
                            slots[k] = t + cycles
                            break
                    else:
                        slots[0] = t + cycles
            if not ooo and t + latency > last_write:
                last_write = t + latency
            if first:
                starts.append(t)
                first = False
    return starts


def cycles_per_iteration(ops: list[IssueOp], core: CoreModel, warmup: int = 3,
                         measured: int = 4, compiled: list[tuple] | None = None) -> float:
    """Steady-state cycles per loop iteration (after `warmup` iterations)."""
    starts = iteration_starts(ops, core, warmup + measured + 1, compiled)
    return (starts[warmup + measured] - starts[warmup]) / measured
