"""The kernel's k-loop as instructions: operand chunks, MAC order, software-pipelined loads,
unrolling and load forms.

One k-step reads an A chunk list and a B chunk list (each chunk = one vector register's worth
of the packed panel, the last one possibly narrower) and performs every MAC of the ep x hp tile.
Where a chunk lives (gen.plan strategies):
  resident / stream   chunk j of every k-step lives in regs[j % len(regs)];
  double              k-step s uses bank s % 2: chunk j lives in regs[(s % 2) * chunks + j].

Software pipeline (per k-step s, positions counted in MACs of the step):
  * a chunk that is the first occupant of its register in a k-step is loaded for step s+1 in
    step s, right after the MAC that last reads the register in step s;
  * a later occupant (streamed chunk j >= len(regs)) is loaded for step s itself, right after
    the last MAC reading the chunk j - len(regs) that held the register before it;
  * a double-buffered chunk is loaded for step s+1 at the start of step s (its bank was last
    read in step s-1); the scheduler moves it to where it costs least.
No load reads more than one k-step ahead.

Loop structure (templates/kernel.S.j2): step 0 is preloaded; the main loop runs `unroll` k-steps
per iteration (amortising the pointer/counter/branch instructions, which an in-order core with
in-order write-back can only issue a few cycles after the last MAC) while at least `unroll`
further k-steps exist; the single-step loop does the remaining ones, and the last k-step is
peeled (`tail`) without the loads of a next step: no byte past the panels is read. The single-
step loop and the tail hold a double-buffered operand in its first bank only (`single_step_view`),
which is where the main loop leaves the next k-step (`unroll` is even for double buffering).
When exactly unroll - 1 k-steps follow the loaded one after the main loop (K a multiple of
unroll k-steps), the last iteration runs peeled instead (`loop_tail`: the body without the
next iteration's loads and the loop control) and no single step runs.

Load forms (`LOAD_FORMS`):
  "ldr"  `ldr q/d/s..., [x0|x1, #offset]` from the k-step panel pointers; one `add` per pointer
         per iteration.
  "ld1"  every 16- or 8-byte chunk load as `ld1 {vN.16b[-vN+k.16b]}` / `ld1 {vN.8b}` from a
         pointer register of its own (x5-x17), chunks that load at the same place with
         consecutive registers merged into one multi-register `ld1` (up to 4). The pointer
         registers advance by one iteration's panel bytes at its end. Why: on the in-order
         models (LLVM's Cortex-A510 and Cortex-A55) dot-product, matrix and smlal MACs write
         back in order, so a load with a shorter latency than the MACs issued just before it
         waits for them (A510 `ldr q` 2 cycles after a 4-cycle MAC: a bubble per load; A55 `ldr`
         3 cycles); `ld1` (A510: 3-4 cycles, A55: 4-5) issues alongside the MACs. On the real
         Cortex-A510 multi-register `ld1` issued well ahead of use is the recommended way to
         feed the NEON pipes (Arm Cortex-A510 Software Optimization Guide, "Load/store"). The
         real Cortex-A55 prefers 64-bit loads (`ldr d` + `ldr x` + `ins`, which dual-issue with
         NEON ops); LLVM 19's A55 model charges `ins` a full 128-bit NEON issue slot and the
         64-bit loads the in-order write-back stall (3 cycles per 16 bytes: measured 46 vs 28
         cycles for 24 sdot + 6 x 16 loaded bytes), so tilesmith does not use that form.
  "ldr_r" every chunk load as `ldr q/d/s..., [x0|x1, xR]`: a register offset, xR (x5-x17) set
         once before the loop to the load's byte offset from the iteration's panel pointer
         (one register per distinct offset, shared by A and B loads), so only x0 and x1
         advance per iteration. Why: LLVM 19's Cortex-A55 model gives this form 4 cycles
         (the MAC latency: no in-order write-back stall, unlike the immediate form's 3) and
         the load pipe for 1 cycle (ld1: 2), and the pointer `add`s, which the A55 can only
         issue in a window after the MACs (2 per cycle), shrink to two: measured 101 instead
         of 111-114 cycles for the sdot 8x12x4 main loop (96 MACs). On Cortex-A510 the
         form is 2 cycles (an in-order write-back stall per load): the scheduler's objective
         decides (gen.schedule.targets).
  Post-indexed loads are never used: LLVM 19 models the base write-back with latency 0 on the
  in-order cores (the load then waits for every MAC before it) and with the load latency on N2.

`iteration_body` is the one place that decides the order; gen.schedule.schedule_loop may then
reorder it within its dependencies (checked by `check_same_dependencies`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .isa import TYPE_BYTES, VECTOR_BYTES
from .plan import TilePlan, operand_mode, outer_operand
from .schedule import Insn

# Label macros of the kernel template (templates/kernel.S.j2 defines them per object format).
LOOP_LABEL, SINGLE_LABEL, SINGLE_START_LABEL, LAST_STEP_LABEL, STORE_LABEL = (
    "K_LOOP", "K_SINGLE", "K_SINGLE_START", "K_LAST_STEP", "K_STORE")

# Argument registers of the kernel ABI (AAPCS64 x0-x4): see README "Micro-kernel ABI".
A_PTR, B_PTR, KSTEPS, C_PTR, LDC = "x0", "x1", "x2", "x3", "x4"
# Pointer registers of `ld1` loads: caller-saved scratch registers (AAPCS64: x9-x15, and
# x5-x8 / x16-x17 which this leaf function does not need for arguments or veneers); x5 is reused
# by the C store after the loop. x18 (platform register) is never touched.
POINTER_REGS = tuple(f"x{n}" for n in range(5, 18))
# More pointer registers when a loop needs them and every load is an ld1 (none from x0/x1):
# x4 (ldc, saved in the frame's spare word beside args and reloaded at K_STORE: `LDC_REG`),
# then the panel pointers x0 and x1 themselves (set last; panel_fixup recomputes them from the
# first pointer of their operand after the loop). 8 k-steps of smmla 8x8 take 16 pointers.
EXTRA_POINTER_REGS = ("x4", "x0", "x1")
LDC_REG = "x4"

LOAD_FORMS = ("ldr", "ld1", "ldr_r")
LD1_MAX_REGS = 4          # LD1 (multiple structures): 1 to 4 consecutive registers

# SIMD&FP register name per load size in bytes: LDR Bt/Ht/St/Dt/Qt (Arm ARM C7.2 "LDR
# (immediate, SIMD&FP)"); the unsigned offset is scaled by the size, LDUR takes -256..255.
LOAD_REG_PREFIX = {1: "b", 2: "h", 4: "s", 8: "d", 16: "q"}
# LD1 arrangement per chunk size: 16 bytes `.16b`, 8 bytes `.8b` (zeroes the upper half).
LD1_ARRANGEMENT = {16: "16b", 8: "8b"}
LDR_MAX_SCALED_OFFSET = 4095
LDUR_RANGE = range(-256, 256)
ADD_IMMEDIATE_MAX = 4095    # ADD (immediate): imm12 unshifted


class KernelPlanError(ValueError):
    """The plan cannot be turned into a kernel (names the problem)."""


@dataclass(frozen=True)
class Chunk:
    operand: str      # "a" | "b"
    index: int        # chunk number within one k-step
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


@dataclass(frozen=True)
class Load:
    """Consecutive chunks of one operand, loaded together into consecutive registers."""
    operand: str
    chunks: tuple[Chunk, ...]
    regs: tuple[int, ...]
    step: int         # k-step (counted from the iteration's first) whose data it loads
    comment: str

    @property
    def size(self) -> int:
        return sum(c.size for c in self.chunks)

    def offset(self, plan: TilePlan) -> int:
        """Byte offset from the iteration's panel pointer."""
        return self.step * step_bytes(plan, self.operand) + self.chunks[0].offset


def step_bytes(plan: TilePlan, operand: str) -> int:
    inst = plan.inst
    if operand == "a":
        return plan.ep * plan.lp * TYPE_BYTES[inst.a_type]
    return plan.hp * plan.lp * TYPE_BYTES[inst.b_type]


def operand_regs(plan: TilePlan, operand: str) -> tuple[int, ...]:
    return plan.a_regs if operand == "a" else plan.b_regs


def chunks(plan: TilePlan, operand: str) -> list[Chunk]:
    """The register-sized pieces of one k-step of operand 'a' or 'b'."""
    total = step_bytes(plan, operand)
    result = []
    for index, offset in enumerate(range(0, total, VECTOR_BYTES)):
        size = min(VECTOR_BYTES, total - offset)
        if size not in LOAD_REG_PREFIX:
            raise KernelPlanError(
                f"{plan.instruction} {plan.ep}x{plan.hp}: the last {operand.upper()} register of a "
                f"k-step would hold {size} bytes, which no single load transfers (1, 2, 4, 8, 16)")
        result.append(Chunk(operand, index, offset, size))
    return result


def chunk_register(plan: TilePlan, operand: str, index: int, step: int) -> int:
    """Register of chunk `index` of `operand` in k-step `step` (counted from any even step)."""
    regs = operand_regs(plan, operand)
    if operand_mode(plan.strategy, operand) == "double":
        return regs[(step % 2) * (len(regs) // 2) + index]
    return regs[index % len(regs)]


def single_step_view(plan: TilePlan) -> TilePlan:
    """The plan as the single-step loop and the tail use it: a double-buffered operand in its
    first bank only (resident)."""
    regs, modes = {}, {}
    for operand in ("a", "b"):
        mode = operand_mode(plan.strategy, operand)
        own = operand_regs(plan, operand)
        regs[operand] = own[:len(own) // 2] if mode == "double" else own
        modes[operand] = "resident" if mode == "double" else mode
    streamed = [x for x in "ab" if modes[x] == "stream"]
    strategy = f"stream_{streamed[0]}" if streamed else "resident"
    return replace(plan, strategy=strategy, a_regs=regs["a"], b_regs=regs["b"])


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
    """The operand whose chunks run in the outer loop of the MAC order (gen.plan.outer_operand):
    the streamed one, else the single-buffered one, else the one with more chunks (B on a tie),
    so that most registers are freed (and refilled for the next step) progressively through the
    step."""
    return outer_operand(plan.strategy, len(chunks(plan, "a")), len(chunks(plan, "b")))


def mac_order(plan: TilePlan, macs: list[Mac]) -> list[Mac]:
    """Outer loop over the chunks of `streamed_operand`, then the other operand's chunks,
    then the B half, then the A element (row)."""
    if streamed_operand(plan) == "a":
        return sorted(macs, key=lambda m: m.order_key)
    return sorted(macs, key=lambda m: (m.b_chunk, m.a_chunk, m.order_key[2], m.order_key[3]))


def mac_insn(plan: TilePlan, mac: Mac, step: int = 0) -> Insn:
    inst = plan.inst
    a_reg = chunk_register(plan, "a", mac.a_chunk, step)
    b_reg = chunk_register(plan, "b", mac.b_chunk, step)
    text = inst.mac_text(mac.c_reg, a_reg, b_reg, index=mac.index, half=mac.half)
    regs = (f"v{mac.c_reg}", f"v{a_reg}", f"v{b_reg}")
    return Insn(text, "mac", defs=(regs[0],), uses=regs, instruction=plan.instruction)


# ---- load placement ----------------------------------------------------------------------------

def _step_loads(plan: TilePlan, macs: list[Mac], step: int, next_step: bool
                ) -> dict[int, list[Load]]:
    """Loads issued during k-step `step`, keyed by the position of the MAC they follow (-1:
    before the first MAC), one Load per chunk."""
    placed: dict[int, list[Load]] = {}
    for operand in ("a", "b"):
        pieces = chunks(plan, operand)
        mode = operand_mode(plan.strategy, operand)
        n_regs = len(operand_regs(plan, operand))
        chunk_of = (lambda m: m.a_chunk) if operand == "a" else (lambda m: m.b_chunk)
        reads = {c.index: [i for i, m in enumerate(macs) if chunk_of(m) == c.index] for c in pieces}
        name = operand.upper()
        for chunk in pieces:
            if mode == "double":
                if next_step:
                    reg = chunk_register(plan, operand, chunk.index, step + 1)
                    placed.setdefault(-1, []).append(Load(
                        operand, (chunk,), (reg,), step + 1,
                        f"{name}{chunk.index} of the next k-step (other bank)"))
                continue
            reg = chunk_register(plan, operand, chunk.index, step)
            if chunk.index >= n_regs:
                # streamed occupant of this step: after the last read of the chunk before it
                previous = chunk.index - n_regs
                position = max(reads[previous])
                if position > min(reads[chunk.index]):
                    raise KernelPlanError(f"{name} chunk {chunk.index} is read before "
                                          f"chunk {previous} is done with v{reg}")
                placed.setdefault(position, []).append(
                    Load(operand, (chunk,), (reg,), step, f"{name}{chunk.index} of this k-step"))
            elif next_step:
                # first occupant: load step s+1's chunk after the register's last read in step s
                later = [c.index for c in pieces if c.index % n_regs == chunk.index % n_regs
                         and c.index > chunk.index]
                position = max(reads[later[-1] if later else chunk.index])
                placed.setdefault(position, []).append(
                    Load(operand, (chunk,), (reg,), step + 1,
                         f"{name}{chunk.index} of the next k-step"))
    return placed


def merge_loads(loads: list[Load], limit: int = LD1_MAX_REGS) -> list[Load]:
    """Merge loads of consecutive full chunks of one operand and k-step into consecutive
    registers (at most `limit` per load), keeping their order of first appearance."""
    merged: list[Load] = []
    for load in loads:
        last = merged[-1] if merged else None
        if (last and last.operand == load.operand and last.step == load.step
                and len(last.chunks) < limit
                and all(c.size == VECTOR_BYTES for c in last.chunks + load.chunks)
                and load.chunks[0].index == last.chunks[-1].index + 1
                and load.regs[0] == last.regs[-1] + 1):
            comment = (f"{load.operand.upper()}{last.chunks[0].index}-"
                       f"{load.chunks[-1].index} of {last.comment.split(' of ', 1)[1]}")
            merged[-1] = Load(load.operand, last.chunks + load.chunks, last.regs + load.regs,
                              load.step, comment)
        else:
            merged.append(load)
    return merged


# ---- load instructions -------------------------------------------------------------------------

def load_text(reg: int, size: int, base: str, offset: int) -> str:
    name = f"{LOAD_REG_PREFIX[size]}{reg}"
    if offset % size == 0 and 0 <= offset // size <= LDR_MAX_SCALED_OFFSET:
        return f"ldr {name}, [{base}, #{offset}]" if offset else f"ldr {name}, [{base}]"
    if offset in LDUR_RANGE:
        return f"ldur {name}, [{base}, #{offset}]"
    raise KernelPlanError(f"load offset {offset} from {base} is out of range of LDR/LDUR")


def panel_pointer(operand: str) -> str:
    return A_PTR if operand == "a" else B_PTR


def ldr_insn(plan: TilePlan, load: Load) -> Insn:
    (chunk,), (reg,) = load.chunks, load.regs
    base = panel_pointer(load.operand)
    return Insn(load_text(reg, chunk.size, base, load.offset(plan)), "load",
                defs=(f"v{reg}",), uses=(base,), comment=load.comment)


def ldr_r_insn(load: Load, offset_reg: str) -> Insn:
    """`ldr <reg>, [x0|x1, offset_reg]` of a one-chunk load (load form "ldr_r")."""
    (chunk,), (reg,) = load.chunks, load.regs
    base = panel_pointer(load.operand)
    return Insn(f"ldr {LOAD_REG_PREFIX[chunk.size]}{reg}, [{base}, {offset_reg}]", "load",
                defs=(f"v{reg}",), uses=(base, offset_reg), comment=load.comment)


def ld1_insn(load: Load, pointer: str) -> Insn:
    arrangement = LD1_ARRANGEMENT[load.chunks[0].size]
    regs = ", ".join(f"v{r}.{arrangement}" for r in load.regs)
    return Insn(f"ld1 {{{regs}}}, [{pointer}]", "load", defs=tuple(f"v{r}" for r in load.regs),
                uses=(pointer,), comment=load.comment)


def loads_ld1_can_take(load: Load) -> bool:
    return all(c.size in LD1_ARRANGEMENT for c in load.chunks)


@dataclass(frozen=True)
class Pointer:
    """A pointer register of `ld1` loads: starts at panel + offset, advances per iteration."""
    reg: str
    operand: str
    offset: int


# ---- loop bodies -------------------------------------------------------------------------------

@dataclass(frozen=True)
class MainLoop:
    """The unrolled main loop: its body in dependency order and the pointer registers it uses."""
    body: list[Insn]
    unroll: int
    pointers: tuple[Pointer, ...]
    advances_panels: tuple[str, ...]    # panel pointers (x0/x1) the body itself advances
    offset_regs: tuple[tuple[str, int], ...] = ()   # load form "ldr_r": (register, offset)
    next_loads: tuple[str, ...] = ()    # texts of the loads of the next iteration's first step

    @property
    def spills_ldc(self) -> bool:
        """Whether x4 (ldc) serves as a pointer (saved in the frame, reloaded at K_STORE)."""
        return any(p.reg == LDC_REG for p in self.pointers)


def _interleave(plan: TilePlan, steps: int, next_step: bool, merge: int = 1
                ) -> list[tuple[str, object]]:
    """The MACs of `steps` consecutive k-steps with their loads: ("mac", Insn) and
    ("load", Load) items in dependency order (per-chunk loads merged up to `merge`
    registers where they can be)."""
    macs = step_macs(plan)
    items: list[tuple[str, object]] = []
    for step in range(steps):
        loads = _step_loads(plan, macs, step, next_step or step + 1 < steps)
        items += [("load", x) for x in merge_loads(loads.get(-1, []), merge)]
        for position, mac in enumerate(macs):
            items.append(("mac", mac_insn(plan, mac, step)))
            items += [("load", x) for x in merge_loads(loads.get(position, []), merge)]
    return items


def _ldr_only(plan: TilePlan, items) -> list[Insn]:
    result = []
    for kind, item in items:
        if kind == "mac":
            result.append(item)
        else:
            result += [ldr_insn(plan, Load(item.operand, (c,), (r,), item.step, item.comment))
                       for c, r in zip(item.chunks, item.regs)]
    return result


def _loop_control(label: str, branch: str, steps: int) -> list[Insn]:
    return [Insn(f"subs {KSTEPS}, {KSTEPS}, #{steps}", "alu", defs=(KSTEPS, "nzcv"),
                 uses=(KSTEPS,), comment=f"{steps} k-step(s) done"),
            Insn(f"{branch} {label}", "branch", uses=("nzcv",))]


def _advance(pointer: str, amount: int, comment: str) -> Insn:
    if not 0 < amount <= ADD_IMMEDIATE_MAX:
        raise KernelPlanError(f"pointer advance {amount} does not fit ADD (immediate)")
    return Insn(f"add {pointer}, {pointer}, #{amount}", "alu", defs=(pointer,), uses=(pointer,),
                comment=comment)


def main_loop(plan: TilePlan, unroll: int, form: str, merge: int = LD1_MAX_REGS,
              min_ld1_regs: int = 1, extra_pointers: bool = True) -> MainLoop:
    """The main loop: `unroll` k-steps per iteration, each loading its successor's chunks;
    loads in form `form` (LOAD_FORMS), ld1 loads merged up to `merge` registers, and only
    loads of at least `min_ld1_regs` registers made ld1 (the others stay ldr: where issue
    slots are scarce, one ld1 plus its pointer advance only pays for several registers);
    ends with `subs x2, x2, #unroll` and `b.hs`."""
    if form not in LOAD_FORMS:
        raise KernelPlanError(f"unknown load form {form!r} (valid: {', '.join(LOAD_FORMS)})")
    if not 1 <= merge <= LD1_MAX_REGS:
        raise KernelPlanError(f"ld1 merges 1 to {LD1_MAX_REGS} registers, not {merge}")
    check_unroll(plan, unroll)
    items = _interleave(plan, unroll, next_step=True, merge=merge if form == "ld1" else 1)
    body: list[Insn] = []
    pointers: list[Pointer] = []
    offset_regs: dict[int, str] = {}
    next_loads: list[str] = []
    regs = POINTER_REGS
    loads = [item for kind, item in items if kind == "load"]
    if (extra_pointers and form == "ld1" and len(POINTER_REGS) < len(loads)
            <= len(POINTER_REGS) + len(EXTRA_POINTER_REGS)
            and all(loads_ld1_can_take(x) and len(x.regs) >= min_ld1_regs for x in loads)):
        regs = POINTER_REGS + EXTRA_POINTER_REGS
    for kind, item in items:
        if kind == "load" and item.step == unroll:
            mark = len(body)
        if kind == "mac":
            body.append(item)
        elif form == "ldr_r":
            offset = item.offset(plan)
            if offset not in offset_regs:
                if len(offset_regs) == len(POINTER_REGS):
                    raise KernelPlanError(f"load form ldr_r: more than {len(POINTER_REGS)} "
                                          f"distinct load offsets per iteration")
                offset_regs[offset] = POINTER_REGS[len(offset_regs)]
            body.append(ldr_r_insn(item, offset_regs[offset]))
        elif (form == "ld1" and loads_ld1_can_take(item) and len(pointers) < len(regs)
              and len(item.regs) >= min_ld1_regs):
            pointer = Pointer(regs[len(pointers)], item.operand, item.offset(plan))
            pointers.append(pointer)
            body.append(ld1_insn(item, pointer.reg))
        else:
            body += _ldr_only(plan, [(kind, item)])
        if kind == "load" and item.step == unroll:
            next_loads += [insn.text for insn in body[mark:]]
    for p in pointers:
        body.append(_advance(p.reg, unroll * step_bytes(plan, p.operand),
                             f"{p.operand.upper()} + {p.offset}, next iteration"))
    if any(p.reg in (A_PTR, B_PTR) and p.reg != panel_pointer(p.operand) for p in pointers):
        # x0 would be set from x1 or the reverse: keep to the registers of POINTER_REGS
        return main_loop(plan, unroll, form, merge, min_ld1_regs, extra_pointers=False)
    pointer_regs = {p.reg for p in pointers}
    advanced = tuple(panel_pointer(x) for x in "ab"
                     if panel_pointer(x) not in pointer_regs
                     and any(panel_pointer(x) in insn.uses for insn in body))
    for x in "ab":
        if panel_pointer(x) in advanced:
            body.append(_advance(panel_pointer(x), unroll * step_bytes(plan, x),
                                 "next iteration"))
    body += _loop_control(LOOP_LABEL, "b.hs", unroll)
    return MainLoop(body, unroll, tuple(pointers), advanced,
                    tuple((reg, offset) for offset, reg in offset_regs.items()),
                    tuple(next_loads))


def loop_tail(loop: MainLoop) -> list[Insn]:
    """The main loop's last iteration peeled, for when exactly unroll - 1 k-steps follow the
    loaded one after the loop: its body as scheduled without the next iteration's loads, the
    pointer advances and the loop control. Its last k-step is the tile's last, so no load passes
    the panels, and no single step runs: K a multiple of unroll k-steps (the common K: 64 and
    128 smmla k-steps at unroll 8) pays no remainder. On Cortex-A510 (llvm-mca-19) a single step
    costs 14 cycles for 8 cycles of MACs, the loop control about 2 + (pointers + 2) / 3 per
    iteration: smmla 8x8 at K = 512 (64 k-steps) 10 iterations of 6 (55.0 cycles), 3 single
    steps and the last step (18.0 with the store set-up) -> 7 iterations of 8 (73.0) and this
    tail (75.0): 610 -> 586 cycles."""
    dropped = set(loop.next_loads)
    return [insn for insn in loop.body
            if insn.text not in dropped and not is_loop_control(loop, insn)]


def is_loop_control(loop: MainLoop, insn: Insn) -> bool:
    """The loop's branch, or an ALU instruction writing its k-step counter, a panel pointer or
    a register the panel advances use: what a peeled copy of the body leaves out."""
    control = {KSTEPS, *(p.reg for p in loop.pointers), *loop.advances_panels}
    return insn.kind == "branch" or (insn.kind == "alu" and bool(set(insn.defs) & control))


def check_unroll(plan: TilePlan, unroll: int) -> None:
    if not isinstance(unroll, int) or unroll < 1:
        raise KernelPlanError(f"unroll must be a positive integer, got {unroll!r}")
    doubled = [x for x in "ab" if operand_mode(plan.strategy, x) == "double"]
    if doubled and unroll % 2:
        raise KernelPlanError(f"{plan.strategy}: a double-buffered operand alternates banks, so "
                              f"the main loop needs an even unroll, got {unroll}")


def pointer_setup(plan: TilePlan, loop: MainLoop) -> list[Insn]:
    """Before the main loop: each ld1 pointer = its panel pointer + offset; each ldr_r offset
    register = its offset."""
    code = [Insn(f"mov {reg}, #{offset}", "alu", comment=f"load offset {offset}")
            for reg, offset in loop.offset_regs]
    panels = (A_PTR, B_PTR)      # a panel pointer that is an ld1 pointer too is set last
    for p in sorted(loop.pointers, key=lambda p: p.reg in panels):
        base = panel_pointer(p.operand)
        if p.offset > ADD_IMMEDIATE_MAX:
            raise KernelPlanError(f"ld1 pointer offset {p.offset} does not fit ADD (immediate)")
        code.append(Insn(f"add {p.reg}, {base}, #{p.offset}" if p.offset else
                         f"mov {p.reg}, {base}", "alu",
                         comment=f"{p.operand.upper()} + {p.offset}: ld1 pointer"))
    return code


def panel_fixup(plan: TilePlan, loop: MainLoop) -> list[Insn]:
    """After the main loop: x0/x1 to the next k-step's panels when the loop advanced only the
    ld1 pointers (the single-step loop and the tail load from x0/x1)."""
    code = []
    for operand in ("a", "b"):
        base = panel_pointer(operand)
        if base in loop.advances_panels:
            continue
        own = [p for p in loop.pointers if p.operand == operand]
        if not own:
            continue
        p = own[0]
        code.append(Insn(f"sub {base}, {p.reg}, #{p.offset}" if p.offset else
                         f"mov {base}, {p.reg}", "alu",
                         comment=f"{operand.upper()} panel of the next k-step"))
    return code


def iteration_body(plan: TilePlan) -> list[Insn]:
    """The single-step loop: MACs of step s with the loads interleaved (ldr form), the pointer
    advance, the loop counter and the back branch. Works on single_step_view(plan)."""
    view = single_step_view(plan)
    body = _ldr_only(view, _interleave(view, 1, next_step=True))
    for pointer, operand in ((A_PTR, "a"), (B_PTR, "b")):
        body.append(_advance(pointer, step_bytes(view, operand), "next k-step"))
    return body + _loop_control(SINGLE_LABEL, "b.ne", 1)


def peeled_last_step(plan: TilePlan) -> list[Insn]:
    """The last k-step: its MACs (and in-step streamed loads) without next-step loads."""
    view = single_step_view(plan)
    return _ldr_only(view, _interleave(view, 1, next_step=False))


def preload(plan: TilePlan) -> list[Insn]:
    """Loads of step 0's first-occupant chunks (first bank), before the loops."""
    view = single_step_view(plan)
    result = []
    for operand in ("a", "b"):
        n_regs = len(operand_regs(view, operand))
        for chunk in chunks(view, operand)[:n_regs]:
            reg = chunk_register(view, operand, chunk.index, 0)
            result.append(ldr_insn(view, Load(operand, (chunk,), (reg,), 0,
                                              f"{operand.upper()}{chunk.index} of k-step 0")))
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
