"""qdyn int4 kernels for one scale per output channel: two output channels share a byte.

The unpack of gen/qdyn4.py (shl + and: two vector operations per 16 packed bytes) bounds its
loop at 2 of every 2 + 2R vector operations. Here a byte holds, at the same k, weight w_lo of
one column in its low nibble as w_lo + 8 (0..15) and weight w_hi of another column in its high
nibble (two's complement): as an int8 the byte is b = 16 w_hi + w_lo + 8 (-128..127). Per packed
register one `and #0x0f` gives L = w_lo + 8; the MACs on the raw bytes and on L then give
  R = sum qa (16 w_hi + w_lo + 8) = 16 D_hi + D_lo + 8 sum qa,   L = D_lo + 8 sum qa
(D = sum qa w), so one vector operation per two B registers (issue 12's "two output
channels sharing a byte, recovered from two dot products and the activation row sum").
The accumulators start at L0 = -8 sum_k qa[m] - zp[m] sum_k w_lo and R0 = L0 - 16 zp[m] sum_k w_hi;
at the end L = S_lo and R - L = 16 S_hi exactly (S = sum (qa - zp) w, the header's acc), modulo
2^32, exact while 16 S fits int32 (a block of at most QDYN4_MAX_BL k, as gen/qdyn4.py).
`scvtf` (L) and `scvtf #4` (R - L) give (float)S exactly; then t = scale * wscale, s = t * f, as
the header says for one block (s = u_0), + bias, clamp (gen.qdyn4.final_code).

One scheme, three MAC families (`FAMILIES`, the instruction is the plan's parameter): a B
register is 16 bytes = `lp` k of `columns` columns, the low nibbles holding columns
0 .. columns/2 - 1 and the high nibbles the others (column j + columns/2 shares column j's byte):
- smmla (i8mm), lp 8, 4 columns: bytes 0-7 k = 0..7 of (c0 low, c2 high), bytes 8-15 (c1, c3);
  the accumulators are 2x2 tiles (rows 2i, 2i+1 x columns c0 c1 in L, c2 c3 in R).
- sdot (dotprod), lp 4, 8 columns: bytes 4j..4j+3 k = 0..3 of (cj low, cj+4 high); `sdot` by
  element (A: 4 rows x 4 k per register, the int8 sdot kernels' A layout) gives one row x 4
  columns per accumulator: L columns c0-c3, R (then R - L) c4-c7.
- smlal (the Armv8.0 path), the sdot layout: per row a `ld1r` replicates its 4 k, `smull` /
  `smull2` multiply 8 bytes (2 columns x 4 k) into int16 products (exact: |qa b| <= 2^14) and
  `sadalp` adds their pairs into int32 lanes (c0 k0+k1, c0 k2+k3, c1 ..): two accumulators per
  4 columns, reduced once by `addp` after the loop (their initial values are L0 and R0 zipped
  with zeros, so the pair sums start at them). The path's own kernels read int16 (smlal by
  element); these read the int8 A of sdot.
Column data before the nibbles of a panel (8 x columns bytes): int32 sum w_lo of the columns/2
low columns, int32 sum w_lo + 16 sum w_hi of each (low, high) pair, fp32 scales of every column.

Two kernels per family: prefill (many rows, one panel per call) and decode (M <= the family's
row unit per pass, P panels per call, each its own B stream, `args->b_stride` apart: enough
accumulators for the MAC latency with one row or row pair). The solver (`candidates`) counts per
k-step: MACs, ands, loads, all instructions and each accumulator's MAC chain, per covered core,
and the registers the loop, the prologue and the epilogue need (unpacked nibbles, the mask,
product temporaries, row and column data).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from . import epilogue as ep_mod
from .cores import CoreModel
from .isa import INSTRUCTIONS
from .loop import KernelPlanError
from .plan import TilePlan
from .qdyn4 import (OFF, SIGNATURE, _advance, _load, _v, final_code, render_kernel,
                    scheduled)
from .schedule import Insn, best_body
from .tiling import covered_cores

ROWS_REG, COUNT_REG, STRIDE_REG = "x6", "x7", "x8"
BODY_K = 16             # k per loop iteration (K is padded to a multiple of 32)
LP = 8                  # smmla's k per k-step (the other families: Family.lp)


@dataclass(frozen=True)
class Family:
    """How one MAC instruction family runs the scheme (see the module docstring)."""
    key: str            # gen.isa key of the qdyn path's instruction: the path that runs it
    mnemonic: str       # in the kernel symbol
    mac: str            # gen.isa / gen.cores key the MAC operations are timed as
    lp: int             # k per k-step (per 16-byte B register)
    row_unit: int       # rows per accumulator register
    accs: int           # accumulator registers per row unit and panel
    mac_ops: int        # MAC-pipe operations per row unit, panel and k-step
    temps: int          # product temporaries of the k-loop
    prologue_temps: int  # registers the prologue needs besides the column sums
    eps: tuple          # prefill tile rows the solver tries

    @property
    def columns(self) -> int:
        """Columns per panel: 16 bytes hold lp k of columns/2 bytes-sharing column pairs."""
        return 32 // self.lp

    @property
    def steps(self) -> int:
        return BODY_K // self.lp

    @property
    def head(self) -> int:
        """Bytes of column data before a panel's nibbles."""
        return 8 * self.columns

    def a_registers(self, ep: int) -> int:
        if self.key == "smmla":
            return ep // 2                 # a row pair x 8 k per register
        if self.key == "sdot":
            return -(-ep // 4)             # 4 rows x 4 k per register
        return ep                          # one ld1r'd row each

    def a_loads(self, ep: int) -> float:
        """A loads per k-step."""
        return {"smmla": ep / 2, "sdot": ep / 4}.get(self.key, ep)


# smull / sadalp are timed as the smlal class: the integer multiply(-accumulate) operations of
# the same SIMD pipes in the LLVM 19 models gen/cores.py reads (an approximation for sadalp).
# 8 product temporaries: with 4, an in-order core issues a smull only when the sadalp of the
# smull 4 before it has read its register (llvm-mca-19, cortex-a510: 4 x 8 loop 257 -> 176
# cycles with 8; the same on the other modeled cores).
FAMILIES = {f.key: f for f in (
    Family("smmla", "smmla", "smmla", 8, 2, 2, 2, 0, 2, tuple(range(2, 17, 2))),
    Family("sdot", "sdot", "sdot", 4, 1, 2, 2, 0, 3, (4, 8, 12, 16)),
    Family("smlal", "sadalp", "smlal", 4, 1, 4, 8, 8, 4, tuple(range(1, 9))),
)}
QDYN4_RL_INSTRUCTIONS = tuple(FAMILIES)


@dataclass(frozen=True)
class RLPlan:
    instruction: str
    ep: int
    panels: int                 # panels of `columns` columns per call (decode > 1)
    cpu: str = "generic"
    decode: bool = False        # the decode kernel (M <= ep per pass over B)
    banks: int = 1              # B register banks: k-step s uses bank s % banks (2: the next
                                # step's loads need not wait for this step's MACs)
    blocked = False

    @property
    def family(self) -> Family:
        return FAMILIES[self.instruction]

    @property
    def lp(self) -> int:
        return self.family.lp

    @property
    def hp(self) -> int:
        return self.family.columns * self.panels

    @property
    def rp(self) -> int:
        """Row units: row pairs (smmla) or rows."""
        return self.ep // self.family.row_unit

    @property
    def a_regs(self):
        return tuple(range(self.family.a_registers(self.ep)))

    @property
    def b_packed(self):
        n = len(self.a_regs)
        return tuple(range(n, n + self.panels * self.banks))

    @property
    def b_low(self):
        n = len(self.a_regs) + self.panels * self.banks
        return tuple(range(n, n + self.panels * self.banks))

    def raw(self, p, step):
        """Panel p's packed bytes in k-step `step`."""
        return self.b_packed[step % self.banks * self.panels + p]

    def lows(self, p, step):
        """... and its low nibbles."""
        return self.b_low[step % self.banks * self.panels + p]

    @property
    def mask(self) -> int:
        return len(self.a_regs) + 2 * self.panels * self.banks

    @property
    def temps(self):
        """Product temporaries of the k-loop (smull / sadalp)."""
        return tuple(range(self.mask + 1, self.mask + 1 + self.family.temps))

    @property
    def acc_regs(self):
        n = self.family.accs * self.rp * self.panels
        return tuple(range(32 - n, 32))

    sum_regs = acc_regs

    def _acc(self, r, p, i):
        return self.acc_regs[(r * self.panels + p) * self.family.accs + i]

    def low(self, r, p):          # L: the low-nibble columns of row unit r, panel p
        return self._acc(r, p, 0)

    def high(self, r, p):         # R, then R - L: the high-nibble columns
        return self._acc(r, p, 1)

    def low2(self, r, p):         # smlal family: the second pair-sum register of L ...
        return self._acc(r, p, 2)

    def high2(self, r, p):        # ... and of R
        return self._acc(r, p, 3)

    @property
    def result_regs(self):
        """The tile after the epilogue, row unit by row unit, columns left to right."""
        return tuple(reg for r in range(self.rp) for p in range(self.panels)
                     for reg in (self.low(r, p), self.high(r, p)))

    def free_regs(self):
        used = set(self.acc_regs) | {self.mask}
        return [v for v in range(32) if v not in used]

    def tile_plan(self) -> TilePlan:
        temps = tuple(self.free_regs())
        return TilePlan(self.family.mac, self.ep, self.hp, self.lp, "resident", temps[:0], temps,
                        self.result_regs, 0.0, self.cpu)

    def b_pointer(self, p) -> str:
        """x9..: panel p's nibble stream (x1 stays at panel 0's start for the epilogue)."""
        return f"x{9 + p}"


def registers_needed(ep: int, panels: int, instruction: str = "smmla", banks: int = 1) -> int:
    """The most vector registers live at once: in the loop the accumulators + A + B (raw and low
    nibbles per panel) + the mask + product temporaries; in the prologue the accumulators, the
    mask, 2 column-sum registers per panel and the row data (-zp, the row term, a broadcast);
    in the epilogue the accumulators, the mask, the row scales (one register per row pair),
    2 column-scale registers per panel and 2 temporaries."""
    f = FAMILIES[instruction]
    acc = f.accs * (ep // f.row_unit) * panels
    loop = acc + f.a_registers(ep) + 2 * panels * banks + 1 + f.temps
    pro = acc + 1 + 2 * panels + f.prologue_temps
    epi = acc + 1 + -(-ep // 2) + 2 * panels + 2
    return max(loop, pro, epi)


def step_counts(ep: int, panels: int, instruction: str = "smmla") -> dict:
    """Instructions per k-step (the loop's pointer adds, count and branch spread over its
    steps)."""
    f = FAMILIES[instruction]
    rp = ep // f.row_unit
    adds = panels + (0 if f.key == "smlal" else 1)       # smlal: A post-indexed
    alu = 1 + panels / 2 if f.key == "smmla" else (adds + 2) / f.steps
    return dict(mac=f.mac_ops * rp * panels, unpack=panels, loads=f.a_loads(ep) + panels, alu=alu)


def step_cycles(ep: int, panels: int, core: CoreModel, latency: bool = True,
                instruction: str = "smmla") -> float:
    """Modeled cycles of one k-step: vector pipes (MACs and the ands share them on every
    modeled core), load pipes, issue width, and (latency) each accumulator's MAC chain."""
    c = step_counts(ep, panels, instruction)
    mac = FAMILIES[instruction].mac
    pipes = (c["mac"] + c["unpack"]) / core.throughput(mac)
    return max(pipes, c["loads"] / core.loads_per_cycle, sum(c.values()) / core.issue_width,
               core.latency(mac) if latency else 0)


def compute_bound(core: CoreModel, panels: int = 64, instruction: str = "smmla") -> float:
    """int4 weight bytes per cycle no decode kernel of this scheme beats on `core` (one row
    unit, many panels: per 16 bytes one load, one and, the family's MACs; A's load amortised;
    no latency)."""
    f = FAMILIES[instruction]
    return 16 * panels / step_cycles(f.row_unit, panels, core, latency=False,
                                     instruction=instruction)


def candidates(instruction: str = "smmla", cpu: str = "generic", decode: bool = False) -> list:
    """(ep, panels, worst modeled fraction of the MAC peak) of every fitting tile, best first.
    decode: one row unit only (M <= its rows per B pass), ranked the same (per byte of B, which
    for a fixed ep is per MAC)."""
    f = FAMILIES[instruction]
    cores = covered_cores(INSTRUCTIONS[instruction], cpu)
    out = []
    for ep in ((f.row_unit,) if decode else f.eps):
        for panels in range(1, 9 if decode else 3):
            if registers_needed(ep, panels, instruction) > 32 or (panels > 1 and not decode):
                continue
            macs = step_counts(ep, panels, instruction)["mac"]
            worst = min(macs / core.throughput(f.mac)
                        / step_cycles(ep, panels, core, instruction=instruction)
                        for core in cores)
            out.append((ep, panels, worst))
    return sorted(out, key=lambda t: (-round(t[2], 6), registers_needed(t[0], t[1], instruction),
                                      -t[0], t[1]))


def solve(instruction: str = "smmla", cpu: str = "generic", decode: bool = False) -> RLPlan:
    if instruction not in FAMILIES:
        raise KernelPlanError(f"no per-channel qdyn int4 kernel for {instruction}")
    ep, panels, _ = candidates(instruction, cpu, decode)[0]
    return RLPlan(instruction, ep, panels, cpu, decode)


# ---- instruction lists ---------------------------------------------------------------------------
def a_loads(plan: RLPlan, step: int) -> list[Insn]:
    """The A loads of k-step `step` of a loop body (x0: the body's first k-step)."""
    f, code = plan.family, []
    if f.key == "smmla":
        for r, reg in enumerate(plan.a_regs):
            code.append(_load(f"ldr q{reg}, [x0, #{(step * plan.rp + r) * 16}]", reg, "x0",
                              f"A rows {2 * r}-{2 * r + 1}, 8 k"))
    elif f.key == "sdot":             # row r of step s at byte 4 (s ep + r): 4 per register
        for r in range(0, plan.ep, 4) if plan.ep % 4 == 0 else range(plan.ep):
            off = (step * plan.ep + r) * 4
            if off % 16 == 0:
                reg = plan.a_regs[off // 16 % len(plan.a_regs)]
                code.append(_load(f"ldr q{reg}, [x0, #{off}]", reg, "x0",
                                  f"A: 16 bytes from row {r} of k-step {step} (4 k per row)"))
    else:                             # smlal: each row's 4 k replicated, post-indexed
        for r, reg in enumerate(plan.a_regs):
            code.append(Insn(f"ld1r {{v{reg}.4s}}, [x0], #4", "load", defs=(f"v{reg}", "x0"),
                             uses=("x0",), comment=f"A row {r}: its 4 k, 4 times"))
    return code


def macs(plan: RLPlan, step: int) -> list[Insn]:
    """The MAC operations of k-step `step`: per row unit and panel, R from the raw bytes and L
    from the low nibbles."""
    f, code = plan.family, []

    def mac(text, acc, *uses):
        return Insn(text, "mac", defs=(f"v{acc}",), uses=(f"v{acc}",) + tuple(f"v{u}" for u in uses),
                    instruction=f.mac)
    t = 0
    for r in range(plan.rp):
        if f.key == "sdot":
            pos = step * plan.ep + r
            a, lane = plan.a_regs[pos // 4 % len(plan.a_regs)], pos % 4
        else:
            a = plan.a_regs[r]
        for p in range(plan.panels):
            raw, low = plan.raw(p, step), plan.lows(p, step)
            if f.key == "smmla":
                for acc, b in ((plan.high(r, p), raw), (plan.low(r, p), low)):
                    code.append(mac(f"smmla v{acc}.4s, v{a}.16b, v{b}.16b", acc, a, b))
            elif f.key == "sdot":
                for acc, b in ((plan.high(r, p), raw), (plan.low(r, p), low)):
                    code.append(mac(f"sdot v{acc}.4s, v{b}.16b, v{a}.4b[{lane}]", acc, a, b))
            else:
                for acc, b, half in ((plan.high(r, p), raw, ""), (plan.high2(r, p), raw, "2"),
                                     (plan.low(r, p), low, ""), (plan.low2(r, p), low, "2")):
                    tmp = plan.temps[t % len(plan.temps)]
                    t += 1
                    arr = "16b" if half else "8b"
                    code.append(Insn(f"smull{half} v{tmp}.8h, v{b}.{arr}, v{a}.{arr}", "mac",
                                     defs=(f"v{tmp}",), uses=(f"v{b}", f"v{a}"),
                                     instruction=f.mac,
                                     comment="2 columns x 4 k, exact int16 products"))
                    code.append(mac(f"sadalp v{acc}.4s, v{tmp}.8h", acc, tmp))
    return code


def b_loads(plan: RLPlan, step: int) -> list[Insn]:
    """Per panel: its 16 bytes of k-step `step` and the low nibbles."""
    code, f = [], plan.family
    for p in range(plan.panels):
        raw, low, ptr = plan.raw(p, step), plan.lows(p, step), plan.b_pointer(p)
        code.append(_load(f"ldr q{raw}, [{ptr}, #{16 * step}]", raw, ptr,
                          f"panel {p}: 16 w_hi + w_lo + 8 of {f.columns} columns, {f.lp} k"))
        code.append(_v(f"and v{low}.16b, v{raw}.16b, v{plan.mask}.16b", "w_lo + 8",
                       (f"v{low}",), (f"v{raw}", f"v{plan.mask}")))
    return code


def k_step(plan: RLPlan, step: int) -> list[Insn]:
    return a_loads(plan, step) + b_loads(plan, step) + macs(plan, step)


# ld1 form (one panel): each load from a pointer register of its own, A four registers per
# ld1 (gen/loop.py "Load forms": on the in-order cores a short-latency ldr issued after the
# MACs waits for their in-order write-back; ld1 issues alongside them and takes fewer slots).
LD1_POINTERS = tuple(f"x{n}" for n in range(10, 18))


def ld1_pointers(plan: RLPlan) -> list[tuple[str, str, int]]:
    """(pointer, base, offset) of every ld1 of the loop body: A chunks of up to 4 registers
    per step, then B per step."""
    out, regs, n = [], iter(LD1_POINTERS), len(plan.a_regs)
    for step in range(plan.family.steps):
        for first in range(0, n, 4):
            out.append((next(regs), "x0", (step * n + first) * 16))
    for step in range(plan.family.steps):
        out.append((next(regs), plan.b_pointer(0), 16 * step))
    return out


def ld1_form_fits(plan: RLPlan) -> bool:
    """One panel, A in whole registers per k-step (not the smlal family's ld1r), and a pointer
    register for every load."""
    f = plan.family
    whole = f.key == "smmla" or (f.key == "sdot" and plan.ep % 4 == 0)
    return (plan.panels == 1 and whole
            and f.steps * (-(-len(plan.a_regs) // 4) + 1) <= len(LD1_POINTERS))


def ld1_setup(plan: RLPlan) -> list[Insn]:
    return [ep_mod._i(f"add {ptr}, {base}, #{off}" if off else f"mov {ptr}, {base}",
                      "ld1 pointer") for ptr, base, off in ld1_pointers(plan)]


def ld1_loads(plan: RLPlan, step: int) -> list[Insn]:
    ptrs = ld1_pointers(plan)
    a_chunks = -(-len(plan.a_regs) // 4)
    code = []
    for j, first in enumerate(range(0, len(plan.a_regs), 4)):
        regs = plan.a_regs[first:first + 4]
        ptr = ptrs[step * a_chunks + j][0]
        code.append(Insn(f"ld1 {{v{regs[0]}.16b-v{regs[-1]}.16b}}, [{ptr}]" if len(regs) > 1
                         else f"ld1 {{v{regs[0]}.16b}}, [{ptr}]", "load",
                         defs=tuple(f"v{r}" for r in regs), uses=(ptr,),
                         comment=f"A rows {plan.family.row_unit * first}-"
                                 f"{plan.family.row_unit * (first + len(regs)) - 1}, "
                                 f"{plan.lp} k" if plan.family.key == "smmla" else
                                 f"A: {len(regs)} x 4 rows, 4 k"))
    raw = plan.raw(0, step)
    ptr = ptrs[plan.family.steps * a_chunks + step][0]
    code.append(Insn(f"ld1 {{v{raw}.16b}}, [{ptr}]", "load", defs=(f"v{raw}",), uses=(ptr,),
                     comment=f"16 w_hi + w_lo + 8 of {plan.family.columns} columns, {plan.lp} k"))
    return code


# Rotated ld1 form (smmla, two B banks): the in-order cores wait for a load issued right before
# its first use (ld1 of 4 registers: 4 cycles on Cortex-A510, the smmla's latency), and the ld1
# form above loads each k-step at its start. Here every A chunk (4 row pairs) is reloaded as
# soon as its k-step's smmla have read it, with the next k-step's rows (the next iteration's
# first k-step in the second), and the B bytes of each k-step one k-step ahead into the other
# bank, its and AND_DELAY smmla later; the loads spread over the smmla, one after every
# ROT_SPACING. Every pointer add and the count come first in the body: a 1-cycle operation
# after the smmla waits for their in-order write-back on Cortex-A510 (llvm-mca-19: 2 cycles
# each). So the pointers of k-step 1 start one iteration behind and advance before their loads.
# The loop runs K/16 - 1 times, the last iteration (no loads ahead: nothing read past A or B)
# starts the tail; the prologue loads the first k-step. llvm-mca-19 per 16 k of 16 x 4 (32
# smmla, 2026-11-23): ld1 form N2 17.1 / V1 8.6 / A510 27.0 cycles, this form (see emit).
ROT_SPACING = 2
AND_DELAY = 6          # smmla between a B load and its and


def rotated_fits(plan: RLPlan) -> bool:
    """smmla, one panel, the ld1 form's pointers, two B banks in the registers, and at least two
    A chunks (with one, a chunk's reload is the next k-step's first use)."""
    return (plan.family.key == "smmla" and ld1_form_fits(plan) and len(plan.a_regs) > 4
            and registers_needed(plan.ep, plan.panels, plan.instruction, 2) <= 32)


def _chunk_loads(plan: RLPlan, step: int, chunk: int) -> Insn:
    """The ld1 of A chunk `chunk` (4 row pairs) of k-step `step`."""
    return next(i for i in ld1_loads(plan, step) if i.defs[0] == f"v{plan.a_regs[4 * chunk]}")


def _b_load_and(plan: RLPlan, step: int) -> list[Insn]:
    """k-step `step`'s B load (its bank) and its low nibbles."""
    raw, low = plan.raw(0, step), plan.lows(0, step)
    return [ld1_loads(plan, step)[-1],
            _v(f"and v{low}.16b, v{raw}.16b, v{plan.mask}.16b", "w_lo + 8",
               (f"v{low}",), (f"v{raw}", f"v{plan.mask}"))]


def _stride(plan: RLPlan, base: str) -> int:
    return BODY_K * plan.ep if base == "x0" else 16 * plan.family.steps


def _rotated_groups(plan: RLPlan):
    """(pointers of k-step 0, pointers of the other k-steps) of ld1_pointers."""
    chunks = -(-len(plan.a_regs) // 4)
    ptrs = ld1_pointers(plan)
    first = [ptrs[c] for c in range(chunks)] + [ptrs[plan.family.steps * chunks]]
    return first, [p for p in ptrs if p not in first]


def rotated_body(plan: RLPlan, last: bool) -> list[Insn]:
    """One iteration (16 k) of the rotated form whose first k-step is loaded (A, B and its low
    nibbles); not `last`: loads the next iteration's first k-step."""
    f = plan.family
    chunks = -(-len(plan.a_regs) // 4)
    first, rest = _rotated_groups(plan)
    code = [_advance(ptr, _stride(plan, base), "next 16 k")
            for ptr, base, _ in ([] if last else first) + rest]
    if not last:
        code.append(Insn(f"subs {COUNT_REG}, {COUNT_REG}, #1", "alu", defs=(COUNT_REG, "nzcv"),
                         uses=(COUNT_REG,)))
    # queue items [insn, the load it waits for (None: none), smmla after that load]
    queue, done, count = [], {}, 0

    def put_b(step):                        # k-step `step`'s B and, AND_DELAY later, its and
        load, and_ = _b_load_and(plan, step)
        queue.extend([[load, None, 0], [and_, load, AND_DELAY]])

    def pop():
        for item in queue:
            insn, after, delay = item
            if after is None or (id(after) in done and count - done[id(after)] >= delay):
                queue.remove(item)
                code.append(insn)
                done[id(insn)] = count
                return
    put_b(1)                                # k-step 1's B into the other bank
    all_macs = macs(plan, 0), macs(plan, 1)
    for step in range(f.steps):
        for c in range(chunks):
            rows = range(4 * c, min(4 * c + 4, plan.rp))
            seg = [m for m in all_macs[step] if any(f"v{plan.a_regs[r]}" in m.uses for r in rows)]
            for mac in seg:
                code.append(mac)
                count += 1
                if count % ROT_SPACING == 0:
                    pop()
            # this chunk's registers are read: the next k-step's rows (the next iteration's)
            if step + 1 < f.steps or not last:
                queue.insert(0, [_chunk_loads(plan, (step + 1) % f.steps, c), None, 0])
            if step == 0 and c == chunks - 1 and not last:
                put_b(0)                    # bank 0 is read: the next iteration's first B
    while queue:
        before = len(queue)
        pop()
        if len(queue) == before:            # only delayed ands left: their wait is over
            count += AND_DELAY
    return code if last else code + [Insn("b.ne K_INNER", "branch", uses=("nzcv",))]


def rotated_setup(plan: RLPlan) -> list[Insn]:
    """The ld1 pointers (k-step 1's one iteration behind), the first k-step's A and B (and its
    low nibbles), one iteration fewer."""
    chunks = -(-len(plan.a_regs) // 4)
    first, rest = _rotated_groups(plan)
    code = []
    for ptr, base, off in first + rest:
        off -= 0 if (ptr, base, off) in first else _stride(plan, base)
        code.append(ep_mod._i(f"mov {ptr}, {base}" if off == 0 else
                               f"add {ptr}, {base}, #{off}" if off > 0 else
                               f"sub {ptr}, {base}, #{-off}",
                               "ld1 pointer" + ("" if (ptr, base, off) in first else
                                                ", one iteration behind")))
    return (code + [_chunk_loads(plan, 0, c) for c in range(chunks)] + _b_load_and(plan, 0)
            + [ep_mod._i(f"sub {COUNT_REG}, {COUNT_REG}, #1",
                         "the last 16 k after the loop (K / 16 >= 2)")])


def loop_end(plan: RLPlan, advances: list[Insn]) -> list[Insn]:
    return advances + [Insn(f"subs {COUNT_REG}, {COUNT_REG}, #1", "alu", defs=(COUNT_REG, "nzcv"),
                            uses=(COUNT_REG,)),
                       Insn("b.ne K_INNER", "branch", uses=("nzcv",))]


def inner_body(plan: RLPlan, form: str = "ldr") -> list[Insn]:
    """The k-steps of 16 k; the loop runs K/16 times (K padded to a multiple of 32). form
    "ldr": immediate offsets from x0 and the panel pointers; "ld1": see LD1_POINTERS."""
    f = plan.family
    if form == "ld1":
        code = []
        for step in range(f.steps):
            body = k_step(plan, step)
            code += ld1_loads(plan, step) + [i for i in body if i.kind != "load"]
        return code + loop_end(plan, [_advance(ptr, BODY_K * plan.ep if base == "x0" else 16 * f.steps,
                                        "next 16 k") for ptr, base, _ in ld1_pointers(plan)])
    code = [i for step in range(f.steps) for i in k_step(plan, step)]
    advances = [] if f.key == "smlal" else [_advance("x0", BODY_K * plan.ep, "A: next 16 k")]
    advances += [_advance(plan.b_pointer(p), 16 * f.steps, f"B panel {p}: next 16 k")
                 for p in range(plan.panels)]
    return code + loop_end(plan, advances)


def row_data_load(plan: RLPlan, reg: int, array: int, pair: int, what: str) -> Insn:
    """Row pair `pair`'s entries (r r r' r') of row-data array `array` (0 scales, 1 -zp, 2 -8 sum
    qa; each 2 ep 4-byte entries); an odd last row: its 2 entries (ldr d)."""
    off = 8 * plan.ep * array + 16 * pair
    size = "q" if 2 * pair + 1 < plan.ep else "d"
    return _load(f"ldr {size}{reg}, [{ROWS_REG}, #{off}]", reg, ROWS_REG,
                 f"{what} of rows {2 * pair}-{2 * pair + 1}")


def epilogue_body(plan: RLPlan) -> list[Insn]:
    """R - L, both converted, times scale[m] * wscale[n] (header order; one block: s = u)."""
    f = plan.family
    free = [v for v in plan.free_regs()]
    nscale = -(-plan.ep // 2)
    scale = free[:nscale]
    ws = free[nscale:nscale + 2 * plan.panels]
    temps = free[nscale + 2 * plan.panels:]
    code = []
    if f.key == "smlal":              # the pair sums of each 2 columns, once
        for r in range(plan.rp):
            for p in range(plan.panels):
                for a, b in ((plan.low(r, p), plan.low2(r, p)), (plan.high(r, p), plan.high2(r, p))):
                    code.append(_v(f"addp v{a}.4s, v{a}.4s, v{b}.4s", "pair sums: 4 columns",
                                   (f"v{a}",), (f"v{a}", f"v{b}")))
    for j, reg in enumerate(scale):
        code.append(row_data_load(plan, reg, 0, j, "scale") if f.key != "smmla" else
                    _load(f"ldr q{reg}, [{ROWS_REG}, #{16 * j}]", reg, ROWS_REG,
                          f"scale of rows {2 * j}-{2 * j + 1}"))
    for p in range(plan.panels):       # column scales
        ptr = f"x{9 + p}"
        code.append(Insn(f"add {ptr}, x1, #{4 * f.columns}" if p == 0 else
                         f"add {ptr}, x{8 + p}, {STRIDE_REG}",
                         "alu", defs=(ptr,), uses=("x1",) if p == 0 else (f"x{8 + p}", STRIDE_REG)))
        if f.key == "smmla":           # (c0 c1 c0 c1), (c2 c3 c2 c3)
            for h in range(2):
                reg = ws[2 * p + h]
                code.append(_load(f"ld1r {{v{reg}.2d}}, [{ptr}]" if h == 0 else
                                  f"ldr d{reg}, [{ptr}, #8]", reg, ptr,
                                  f"panel {p}: scales of columns {2 * h}-{2 * h + 1}"))
            code.append(_v(f"zip1 v{ws[2 * p + 1]}.2d, v{ws[2 * p + 1]}.2d, v{ws[2 * p + 1]}.2d",
                           "twice", (f"v{ws[2 * p + 1]}",), (f"v{ws[2 * p + 1]}",)))
        else:                          # c0-c3, c4-c7
            for h in range(2):
                reg = ws[2 * p + h]
                code.append(_load(f"ldr q{reg}, [{ptr}, #{16 * h}]", reg, ptr,
                                  f"panel {p}: scales of columns {4 * h}-{4 * h + 3}"))
    k = 0
    for r in range(plan.rp):
        for p in range(plan.panels):
            lo, hi = plan.low(r, p), plan.high(r, p)
            t0, t1 = temps[k % len(temps)], temps[(k + 1) % len(temps)]
            k += 2
            if f.key == "smmla":
                ts = [_v(f"fmul v{t}.4s, v{scale[r]}.4s, v{ws[2 * p + h]}.4s",
                         "t = scale[m] * wscale[n]" if h == 0 else "",
                         (f"v{t}",), (f"v{scale[r]}", f"v{ws[2 * p + h]}"))
                      for h, t in enumerate((t0, t1))]
            else:                      # wscale[n] * scale[m]: the same product
                s, lane = scale[r // 2], 2 * (r % 2)
                ts = [_v(f"fmul v{t}.4s, v{ws[2 * p + h]}.4s, v{s}.s[{lane}]",
                         f"t = scale[{r}] * wscale[n]" if h == 0 else "",
                         (f"v{t}",), (f"v{s}", f"v{ws[2 * p + h]}"))
                      for h, t in enumerate((t0, t1))]
            code += [
                _v(f"sub v{hi}.4s, v{hi}.4s, v{lo}.4s", "R - L = 16 acc of the high columns",
                   (f"v{hi}",), (f"v{hi}", f"v{lo}")),
                _v(f"scvtf v{lo}.4s, v{lo}.4s", "(float)acc, low columns", (f"v{lo}",), (f"v{lo}",)),
                _v(f"scvtf v{hi}.4s, v{hi}.4s, #4", "(float)acc, high columns",
                   (f"v{hi}",), (f"v{hi}",)),
                *ts,
                _v(f"fmul v{lo}.4s, v{t0}.4s, v{lo}.4s", "s = u = t * (float)acc",
                   (f"v{lo}",), (f"v{t0}", f"v{lo}")),
                _v(f"fmul v{hi}.4s, v{t1}.4s, v{hi}.4s", "", (f"v{hi}",), (f"v{t1}", f"v{hi}")),
            ]
    return code


def prologue(plan: RLPlan) -> list[Insn]:
    """Pointers, the mask, and the accumulators L0 = -8 sum qa - zp sum w_lo, R0 = L0 - 16 zp
    sum w_hi from the rows (-zp, -8 sum qa per row) and each panel's column data (smlal
    family: zipped with zeros into the pair-sum registers)."""
    i = ep_mod._i
    f = plan.family
    code = [i(f"ldr {ROWS_REG}, [x5, #{OFF['rows']}]", "row scales, -zp, -8 sum qa", "load"),
            i(f"ldr {STRIDE_REG}, [x5, #{OFF['b_stride']}]", "bytes from one panel to the next",
              "load"),
            i(f"movi v{plan.mask}.16b, #0x0f", "low-nibble mask")]
    free = plan.free_regs()
    ylo, yhi = free[:plan.panels], free[plan.panels:2 * plan.panels]
    zp, rowterm, bcast, zero = free[2 * plan.panels:2 * plan.panels + 4] + [None] * (
        4 - len(free[2 * plan.panels:2 * plan.panels + 4]))
    if f.key == "smlal":
        code.append(i(f"movi v{zero}.4s, #0", "zeros: the second lane of each pair sum"))
    for p in range(plan.panels):
        ptr = plan.b_pointer(p)
        code.append(i(f"mov {ptr}, x1" if p == 0 else f"add {ptr}, x{8 + p}, {STRIDE_REG}",
                      f"panel {p}"))
        if f.key == "smmla":
            code += [i(f"ldr q{ylo[p]}, [{ptr}]", f"panel {p}: sums of w_lo; w_lo + 16 w_hi",
                       "load"),
                     i(f"zip2 v{yhi[p]}.2d, v{ylo[p]}.2d, v{ylo[p]}.2d", "(c0,c2) (c1,c3) twice"),
                     i(f"zip1 v{ylo[p]}.2d, v{ylo[p]}.2d, v{ylo[p]}.2d", "(c0 c1) twice")]
        else:
            code += [i(f"ldr q{ylo[p]}, [{ptr}]", f"panel {p}: sums of w_lo, columns 0-3", "load"),
                     i(f"ldr q{yhi[p]}, [{ptr}, #16]", "sums of w_lo + 16 w_hi (columns j, j+4)",
                       "load")]
    for r in range(plan.rp):
        if f.key == "smmla":
            code += [i(f"ldr q{zp}, [{ROWS_REG}, #{16 * (plan.rp + r)}]",
                       f"-zp, rows {2*r}-{2*r+1}", "load"),
                     i(f"ldr q{rowterm}, [{ROWS_REG}, #{16 * (2 * plan.rp + r)}]", "-8 sum qa",
                       "load")]
            for p in range(plan.panels):
                lo, hi = plan.low(r, p), plan.high(r, p)
                code += [i(f"mul v{lo}.4s, v{zp}.4s, v{ylo[p]}.4s"),
                         i(f"add v{lo}.4s, v{lo}.4s, v{rowterm}.4s", "L0"),
                         i(f"mul v{hi}.4s, v{zp}.4s, v{yhi[p]}.4s"),
                         i(f"add v{hi}.4s, v{hi}.4s, v{rowterm}.4s", "R0")]
            continue
        lane = 2 * (r % 2)
        if r % 2 == 0:
            code += [row_data_load(plan, zp, 1, r // 2, "-zp"),
                     row_data_load(plan, rowterm, 2, r // 2, "-8 sum qa")]
        code.append(i(f"dup v{bcast}.4s, v{rowterm}.s[{lane}]", f"row {r}: -8 sum qa, 4 times"))
        for p in range(plan.panels):
            for y, acc, second in ((ylo[p], plan.low(r, p), "low2"), (yhi[p], plan.high(r, p), "high2")):
                dst = getattr(plan, second)(r, p) if f.key == "smlal" else acc
                code += [i(f"mul v{dst}.4s, v{y}.4s, v{zp}.s[{lane}]", f"row {r}: -zp x column sums"),
                         i(f"add v{dst}.4s, v{dst}.4s, v{bcast}.4s", "L0" if y == ylo[p] else "R0")]
                if f.key == "smlal":
                    code += [i(f"zip1 v{acc}.4s, v{dst}.4s, v{zero}.4s", "(x0 0 x1 0)"),
                             i(f"zip2 v{dst}.4s, v{dst}.4s, v{zero}.4s", "(x2 0 x3 0)")]
    code += [i(f"add {plan.b_pointer(p)}, {plan.b_pointer(p)}, #{f.head}",
               f"panel {p}: its nibbles") for p in range(plan.panels)]
    code.append(i(f"ldr {COUNT_REG}, [x5, #{OFF['kpairs']}]", "16-k steps (K / 16)", "load"))
    return code


def kernel_symbol(prefix: str, plan: RLPlan) -> str:
    from .naming import cpu_suffix
    return (f"{prefix}gemm_{SIGNATURE}_{plan.family.mnemonic}_"
            f"{plan.ep}x{plan.hp}x{plan.lp}_pc{cpu_suffix(plan.cpu)}")


def doc_lines(plan: RLPlan) -> list[str]:
    """The kernel file's description of its operands and its loop."""
    f = plan.family
    half = f.columns // 2
    if f.key == "smmla":
        a = (f"K/8 k-steps (K padded to a multiple of 32) of the smmla A layout ({plan.ep} rows "
             f"x 8 int8, row pairs of 16 bytes): {plan.ep * f.lp} bytes each.")
        nib = ("per 8 k 16 bytes: bytes 0-7 k = 0..7 of c0 (low nibble, w + 8) and c2 (high "
               "nibble), bytes 8-15 of c1 and c3.")
        mac = "smmla into R and L"
    else:
        a = (f"K/4 k-steps (K padded to a multiple of 32) of the sdot A layout ({plan.ep} rows "
             f"x 4 int8, row r's 4 k contiguous): {plan.ep * f.lp} bytes each.")
        nib = ("per 4 k 16 bytes: bytes 4j..4j+3 k = 0..3 of cj (low nibble, w + 8) and cj+4 "
               "(high nibble).")
        mac = ("sdot (by element: one row, 4 columns) into R and L" if f.key == "sdot" else
               "ld1r (a row's 4 k, 4 times), smull / smull2 (int16 products) and sadalp (pair "
               "sums, reduced by addp after the loop) into R and L")
    sums = ", ".join([f"sum w[c{j}]" for j in range(half)]
                     + [f"sum w[c{j}] + 16 sum w[c{j + half}]" for j in range(half)])
    return [
        f"  x0 a_packed  {a}",
        f"  x1 b_packed  {plan.panels} panel(s) of {f.columns} columns c0..c{f.columns - 1}, "
        f"args->b_stride bytes apart: int32 {sums}; fp32 scales of c0..c{f.columns - 1}; then "
        f"{nib}",
        "  x2 blocks    1 (one scale per output channel); x3 c, x4 ldc_bytes: fp32 C tile.",
        "  x5 args      m_rem, n_rem, kpairs (K/16), rows (per row pair fp32x4 scale, int32x4 "
        "-zp, int32x4 -8 sum_k qa, each as r0 r0 r1 r1), bias (hp fp32, -0.0f for none), cmin, "
        "cmax, b_stride, clamp (0: cmin, cmax = -Inf, +Inf: no clamp).",
        f"Two channels per byte (gen/qdyn4_rl.py): per panel one load and one and #0x0f give R "
        f"(raw bytes, 16 w_hi + w_lo + 8) and L (w_lo + 8); {mac} from L0 = -8 sum qa - zp sum "
        f"w_lo, R0 = L0 - 16 zp sum w_hi; at the end L = acc of the low columns, R - L = 16 acc "
        f"of the high ones; scvtf (#4), t = scale * wscale, s = t * (float)acc (one block: "
        f"s = u_0).",
    ]


def emit(plan: RLPlan, prefix: str, inst_mode: str, env):
    import re
    import textwrap
    from .emit import arch_directive, frame_bytes, restore_registers, save_registers
    f = plan.family
    if registers_needed(plan.ep, plan.panels, plan.instruction, plan.banks) > 32:
        raise KernelPlanError(f"qdyn4 pc {plan.ep}x{plan.hp}: more than 32 vector registers")
    inst = INSTRUCTIONS[plan.instruction]
    symbol = kernel_symbol(prefix, plan)
    # the load form and (sdot, smlal) the B register banks: the model's pick per CPU among those
    # that fit the registers
    choices = [(plan, "ldr")] + ([(plan, "ld1")] if ld1_form_fits(plan) else [])
    double = replace(plan, banks=2)
    if f.key != "smmla" and registers_needed(plan.ep, plan.panels, plan.instruction, 2) <= 32:
        choices.append((double, "ldr"))
    if rotated_fits(double):
        # the rotated form as built (module comment at ROT_SPACING): gen.schedule, which sees
        # one iteration, cannot move loads into the one before
        plan, form = double, "rotated"
        inner = rotated_body(plan, last=False)
    else:
        bodies = [inner_body(p, form) for p, form in choices]
        plan, form = choices[best_body(bodies, plan.cpu)]
        inner = scheduled(inner_body(plan, form), plan.cpu)
    tplan = plan.tile_plan()
    tail = scheduled(epilogue_body(plan), plan.cpu)
    if form == "rotated":
        tail = rotated_body(plan, last=True) + tail
    final, clamp, pieces = final_code(plan)
    write = ep_mod.store_row_pieces(tplan, pieces)
    pro = prologue(plan) + {"ld1": ld1_setup, "rotated": rotated_setup}.get(form, lambda _: [])(plan)
    used = sorted({int(n) for i in inner + tail + final + clamp + pro
                   for n in re.findall(r"\b[vqd](\d+)\b", i.text)})
    saved = [f"d{r}" for r in range(8, 16) if r in used]
    args_offset, tile_offset, frame = ep_mod.frame_layout(frame_bytes(saved), tplan)
    layout = (f"panels of {f.columns} columns, {f.head} bytes of column data then 16 bytes per "
              f"{f.lp} k (K padded to 32); {plan.panels} panel(s) per call, args->b_stride apart")
    doc = [w for line in doc_lines(plan)
           for w in textwrap.wrap(line, 96, subsequent_indent=" " * (15 if line[:2] == "  " else 0))]
    context = dict(
        symbol=symbol, plan=plan, inst=inst, lp=f.lp, prefix=prefix, rl=True, doc=doc, weights="s4",
        regs_line=None,
        mnemonic="smull / smull2, sadalp" if f.key == "smlal" else inst.mnemonic,
        arch_directive=arch_directive(inst) if inst_mode == "never" else None,
        save=save_registers(saved, frame, args_offset), restore=restore_registers(saved, frame),
        saved=saved, prologue=pro, inner=inner,
        tail=tail, tail_exit=[], final=final, clamp=clamp, clamp_flag=OFF["clamp"],
        store_setup=ep_mod.store_setup(tplan, args_offset, tile_offset, 4, require_args=True),
        write=write, copy_out=ep_mod.copy_out(tplan, tile_offset, 4),
        a_step=plan.ep * f.lp, b_step=16, panel=layout)
    return render_kernel(env, inst_mode, context, plan.instruction, f.mnemonic, used, saved,
                         ep=plan.ep, hp=plan.hp, lp=f.lp, a_lp=f.lp, a_step_bytes=plan.ep * f.lp,
                         b_step_bytes=16, blocked=False, panels=plan.panels, decode=plan.decode,
                         b_layout=layout)
