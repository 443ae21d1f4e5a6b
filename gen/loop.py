"""The kernel's k-loop as instructions: operand chunks, MAC order, software-pipelined loads.

One k-step reads an A chunk list and a B chunk list (each chunk = one vector register's worth
of the packed panel, the last one possibly narrower) and performs every MAC of the ep x hp tile.
Chunk j of an operand always lives in register regs[j % len(regs)] (gen.plan: "resident" when
there is one register per chunk, "stream_a"/"stream_b" when chunks rotate through fewer).

Software pipeline (one loop iteration = the MACs of step s):
  * a chunk that is the first occupant of its register in a k-step is loaded for step s+1 in
    iteration s, right after the MAC that last reads the register in step s;
  * a later occupant (streamed chunk j >= len(regs)) is loaded for step s itself, right after
    the last MAC reading the chunk j - len(regs) that held the register before it.
So the loop runs ksteps-1 times and the last k-step is peeled (`tail`) without the loads of the
next step: no byte past the panels is read. Pointers: loads use immediate offsets from the
step-s panel pointers; one `add` per pointer per iteration moves them to step s+1 (LLVM 19
models post-indexed `ldr q` write-back with the full load latency on N2/A710).

`iteration_body` is the one place that decides the order; gen.schedule.schedule_loop may then
reorder it within its dependencies (checked by `check_same_dependencies`).
"""
from __future__ import annotations

from dataclasses import dataclass

from .isa import TYPE_BYTES, VECTOR_BYTES
from .plan import TilePlan
from .schedule import Insn

# Label macros of the kernel template (templates/kernel.S.j2 defines them per object format).
LOOP_LABEL, LAST_STEP_LABEL, STORE_LABEL = "K_LOOP", "K_LAST_STEP", "K_STORE"

# Argument registers of the kernel ABI (AAPCS64 x0-x4): see README "Micro-kernel ABI".
A_PTR, B_PTR, KSTEPS, C_PTR, LDC = "x0", "x1", "x2", "x3", "x4"

# SIMD&FP register name per load size in bytes: LDR Bt/Ht/St/Dt/Qt (Arm ARM C7.2 "LDR
# (immediate, SIMD&FP)"); the unsigned offset is scaled by the size, LDUR takes -256..255.
LOAD_REG_PREFIX = {1: "b", 2: "h", 4: "s", 8: "d", 16: "q"}
LDR_MAX_SCALED_OFFSET = 4095
LDUR_RANGE = range(-256, 256)


class KernelPlanError(ValueError):
    """The plan cannot be turned into a kernel (names the problem)."""


@dataclass(frozen=True)
class Chunk:
    operand: str      # "a" | "b"
    index: int        # chunk number within one k-step
    reg: int          # vector register it lives in
    offset: int       # byte offset within the k-step's panel slice
    size: int         # bytes loaded (1, 2, 4, 8 or 16)


@dataclass(frozen=True)
class Mac:
    c_reg: int
    a_chunk: int
    b_chunk: int
    index: int        # A element index (row forms)
    half: int         # B half (smlal/smlal2)
    order_key: tuple  # position within the operand-major order (see mac_order)


def step_bytes(plan: TilePlan, operand: str) -> int:
    inst = plan.inst
    if operand == "a":
        return plan.ep * plan.lp * TYPE_BYTES[inst.a_type]
    return plan.hp * plan.lp * TYPE_BYTES[inst.b_type]


def chunks(plan: TilePlan, operand: str) -> list[Chunk]:
    """The register-sized pieces of one k-step of operand 'a' or 'b'."""
    regs = plan.a_regs if operand == "a" else plan.b_regs
    total = step_bytes(plan, operand)
    result = []
    for index, offset in enumerate(range(0, total, VECTOR_BYTES)):
        size = min(VECTOR_BYTES, total - offset)
        if size not in LOAD_REG_PREFIX:
            raise KernelPlanError(
                f"{plan.instruction} {plan.ep}x{plan.hp}: the last {operand.upper()} register of a "
                f"k-step would hold {size} bytes, which no single load transfers (1, 2, 4, 8, 16)")
        result.append(Chunk(operand, index, regs[index % len(regs)], offset, size))
    return result


def step_macs(plan: TilePlan) -> list[Mac]:
    """Every MAC of one k-step, in the order `mac_order` picks."""
    inst = plan.inst
    macs = []
    if inst.acc_shape == "tile2x2":
        for rb in range(plan.ep // 2):
            for cb in range(plan.hp // 2):
                macs.append(Mac(plan.c_reg_for(rb, cb), rb, cb, 0, 0, (rb, cb, 0, 0)))
    else:
        for row in range(plan.ep):
            a_chunk, index = divmod(row, inst.a_rows_per_reg)
            for cb in range(plan.hp // inst.c_cols_per_reg):
                b_chunk, half = divmod(cb, inst.halves)
                macs.append(Mac(plan.c_reg_for(row, cb), a_chunk, b_chunk, index, half,
                                (a_chunk, b_chunk, half, index)))
    return mac_order(plan, macs)


def streamed_operand(plan: TilePlan) -> str:
    """The operand whose chunks run in the outer loop of the MAC order: the streamed one, or
    for a resident plan the one with more chunks (B on a tie), so that most registers are
    freed (and refilled for the next step) progressively through the step."""
    if plan.strategy == "stream_a":
        return "a"
    if plan.strategy == "stream_b":
        return "b"
    return "a" if len(chunks(plan, "a")) > len(chunks(plan, "b")) else "b"


def mac_order(plan: TilePlan, macs: list[Mac]) -> list[Mac]:
    """Outer loop over the chunks of `streamed_operand`, then the other operand's chunks,
    then the B half, then the A element (row)."""
    if streamed_operand(plan) == "a":
        return sorted(macs, key=lambda m: m.order_key)
    return sorted(macs, key=lambda m: (m.b_chunk, m.a_chunk, m.order_key[2], m.order_key[3]))


def mac_insn(plan: TilePlan, mac: Mac) -> Insn:
    inst = plan.inst
    a_reg = plan.a_regs[mac.a_chunk % len(plan.a_regs)]
    b_reg = plan.b_regs[mac.b_chunk % len(plan.b_regs)]
    text = inst.mac_text(mac.c_reg, a_reg, b_reg, index=mac.index, half=mac.half)
    regs = (f"v{mac.c_reg}", f"v{a_reg}", f"v{b_reg}")
    return Insn(text, "mac", defs=(regs[0],), uses=regs, instruction=plan.instruction)


def load_text(reg: int, size: int, base: str, offset: int) -> str:
    name = f"{LOAD_REG_PREFIX[size]}{reg}"
    if offset % size == 0 and 0 <= offset // size <= LDR_MAX_SCALED_OFFSET:
        return f"ldr {name}, [{base}, #{offset}]" if offset else f"ldr {name}, [{base}]"
    if offset in LDUR_RANGE:
        return f"ldur {name}, [{base}, #{offset}]"
    raise KernelPlanError(f"load offset {offset} from {base} is out of range of LDR/LDUR")


def load_insn(chunk: Chunk, step_offset: int, comment: str) -> Insn:
    base = A_PTR if chunk.operand == "a" else B_PTR
    text = load_text(chunk.reg, chunk.size, base, step_offset + chunk.offset)
    return Insn(text, "load", defs=(f"v{chunk.reg}",), uses=(base,), comment=comment)


def _pipelined_loads(plan: TilePlan, macs: list[Mac], next_step: bool) -> dict[int, list[Insn]]:
    """Loads keyed by the position of the MAC they follow (-1: before the first MAC)."""
    placed: dict[int, list[Insn]] = {}
    for operand in ("a", "b"):
        pieces = chunks(plan, operand)
        n_regs = len(plan.a_regs if operand == "a" else plan.b_regs)
        chunk_of = (lambda m: m.a_chunk) if operand == "a" else (lambda m: m.b_chunk)
        reads = {c.index: [i for i, m in enumerate(macs) if chunk_of(m) == c.index] for c in pieces}
        for chunk in pieces:
            later = [c.index for c in pieces if c.reg == chunk.reg and c.index > chunk.index]
            if chunk.index >= n_regs:
                # streamed occupant of step s: after the last read of the chunk before it
                previous = chunk.index - n_regs
                position = max(reads[previous])
                if position > min(reads[chunk.index]):
                    raise KernelPlanError(f"{operand.upper()} chunk {chunk.index} is read before "
                                          f"chunk {previous} is done with v{chunk.reg}")
                placed.setdefault(position, []).append(
                    load_insn(chunk, 0, f"{operand.upper()}{chunk.index} of this k-step"))
            elif next_step:
                # first occupant: load step s+1's chunk after the register's last read in step s
                last_occupant = later[-1] if later else chunk.index
                position = max(reads[last_occupant])
                placed.setdefault(position, []).append(
                    load_insn(chunk, step_bytes(plan, operand),
                              f"{operand.upper()}{chunk.index} of the next k-step"))
    return placed


def _interleave(plan: TilePlan, next_step: bool) -> list[Insn]:
    macs = step_macs(plan)
    loads = _pipelined_loads(plan, macs, next_step)
    body = list(loads.get(-1, []))
    for position, mac in enumerate(macs):
        body.append(mac_insn(plan, mac))
        body.extend(loads.get(position, []))
    return body


def iteration_body(plan: TilePlan) -> list[Insn]:
    """One loop iteration in dependency order: MACs of step s with the loads interleaved, the
    pointer advance, the loop counter and the back branch to LOOP_LABEL."""
    body = _interleave(plan, next_step=True)
    for pointer, operand in ((A_PTR, "a"), (B_PTR, "b")):
        body.append(Insn(f"add {pointer}, {pointer}, #{step_bytes(plan, operand)}", "alu",
                         defs=(pointer,), uses=(pointer,), comment="next k-step"))
    body.append(Insn(f"subs {KSTEPS}, {KSTEPS}, #1", "alu", defs=(KSTEPS, "nzcv"),
                     uses=(KSTEPS,)))
    body.append(Insn(f"b.ne {LOOP_LABEL}", "branch", uses=("nzcv",)))
    return body


def peeled_last_step(plan: TilePlan) -> list[Insn]:
    """The last k-step: its MACs (and in-step streamed loads) without next-step loads."""
    return _interleave(plan, next_step=False)


def preload(plan: TilePlan) -> list[Insn]:
    """Loads of step 0's first-occupant chunks, before the loop."""
    result = []
    for operand in ("a", "b"):
        n_regs = len(plan.a_regs if operand == "a" else plan.b_regs)
        for chunk in chunks(plan, operand)[:n_regs]:
            result.append(load_insn(chunk, 0, f"{operand.upper()}{chunk.index} of k-step 0"))
    return result


def _conflicts(first: Insn, second: Insn) -> bool:
    """Whether `second` depends on `first` (RAW, WAR or WAW on any register or the flags)."""
    return bool(set(first.defs) & (set(second.uses) | set(second.defs))
                or set(first.uses) & set(second.defs))


def check_same_dependencies(original: list[Insn], scheduled: list[Insn]) -> None:
    """Raise unless `scheduled` is a reordering of `original` keeping every dependent pair's
    order and the branch last (what makes a reordered loop body compute the same)."""
    if sorted(map(repr, original)) != sorted(map(repr, scheduled)):
        raise KernelPlanError("the scheduler returned a different set of instructions")
    if scheduled and scheduled[-1] != original[-1]:
        raise KernelPlanError("the scheduler moved the loop branch")
    position = {}
    for i, insn in enumerate(scheduled):
        position.setdefault(repr(insn), []).append(i)
    taken: dict[str, int] = {}
    new_index = []
    for insn in original:
        key = repr(insn)
        new_index.append(position[key][taken.get(key, 0)])
        taken[key] = taken.get(key, 0) + 1
    for i, first in enumerate(original):
        for j in range(i + 1, len(original)):
            if _conflicts(first, original[j]) and new_index[i] > new_index[j]:
                raise KernelPlanError(f"the scheduler broke a dependency: {first.text!r} must "
                                      f"stay before {original[j].text!r}")
