"""qdyn int4 scale-block kernels of the dotprod (sdot) and Armv8.0 (smull / sadalp) paths.

The same computation as gen/qdyn4.py's smmla block kernel (tilesmith.h's block order, README
"qdyn kernels"), with accumulators of one row x 4 columns:
  per block b: acc = (-zp[m]) x (16 sum_k qb[n][k]); 16 x the block's products; scvtf #4
  (exactly (float)acc_b); v = wscale[n][b] * (float)acc_b; s = s + v (s starts at -0.0);
  after the last block y = scale[m] * s, + bias, clamp (gen.qdyn4.final_code).

B (the packed panel of hp = 4 cq columns, the layout of gen/qdyn4.py with column quads): per
8 k and column quad 16 bytes, byte 4j + t holding column j's k = t in its low nibble and
k = t + 4 in its high one, so one load, `shl #4` (16 x k 0-3) and `and #0xf0` (16 x k 4-7) give
the B registers of two 4-k steps (4 columns x 4 k, the sdot B layout); per 16 k the two 8-k
groups, each quad by quad; per block the fp32 scales and the next block's 16 x sums after its
k-steps, block 0's sums at the panel's start (ts_qdyn.c pack_q4, lp 4).
A: the int8 sdot A layout (k-steps of 4: ep rows x 4 bytes).

Families (the path's instruction is the plan's parameter):
- sdot (dotprod): `sdot acc.4s, B.16b, A.4b[r % 4]` (A: 4 rows x 4 k per register); the
  correction `mul acc, sums, -zp.s[lane]` starts each block's accumulators.
- smlal (the Armv8.0 path): per row `ld1r` of its 4 k; `smull` / `smull2` (2 columns x 4 k,
  exact int16 products: |qa 16 w| <= 2^14) and `sadalp` into two pair-sum registers per row and
  quad (c0 c0 c1 c1, c2 c2 c3 c3); at the block's end `addp` (4 columns), `mla` of -zp x the
  block's sums (kept from the previous tail), the fp32 steps, and the pair sums zeroed (movi).

The solver (`candidates`) counts per block of 32 k the vector operations (MACs, unpack,
epilogue), loads and all instructions of each tile that fits the 32 registers, ranked like
gen/qdyn4.py by the worst covered core's modeled fraction of the MAC peak.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import epilogue as ep_mod
from .cores import CoreModel
from .isa import INSTRUCTIONS
from .loop import KernelPlanError
from .plan import TilePlan
from .qdyn4 import (BLOCK_LOOP_EXIT, OFF, SIGNATURE, PanelColumns, _advance, _load, _v,
                    block_loop_end, final_code, render_kernel, scheduled)
from .schedule import Insn
from .tiling import covered_cores

ROWS_REG, KPAIRS_REG, COUNT_REG = "x6", "x7", "x8"
STRIDE_REG = "x16"      # args->b_stride in the prologue (decode: panel p's pointer x8 + p)
MAX_PANELS = 8          # decode: B streams x1, x9-x15
LP = 4                  # k per A k-step (the sdot layout)
BODY_K = 16             # k per half of a loop body (a body: 32 k, one k-step pair of gen/qdyn4.py)


@dataclass(frozen=True)
class DotFamily:
    key: str            # gen.isa key of the path's instruction
    mnemonic: str       # in the kernel symbol
    mac: str            # gen.cores key the MAC operations are timed as
    mac_ops: int        # MAC-pipe operations per row, column quad and 4-k step
    pair: bool          # two pair-sum registers per row and quad (sadalp), reduced by addp
    temps: int          # product temporaries (smull)
    eps: tuple          # tile rows the solver tries


FAMILIES = {f.key: f for f in (
    DotFamily("sdot", "sdot", "sdot", 1, False, 0, (4, 8, 12)),
    DotFamily("smlal", "sadalp", "smlal", 4, True, 8, (2, 4, 6, 8)),
)}
QDYN4_DOT_INSTRUCTIONS = tuple(FAMILIES)
# families with a scale-block decode kernel (one row, several panels per call); the smlal one
# would reach 1.36 weight bytes per modeled cycle, no more than its prefill tile
DECODE_INSTRUCTIONS = ("sdot",)


@dataclass(frozen=True)
class DotBlockPlan(PanelColumns):
    instruction: str
    ep: int
    hp: int
    cpu: str = "generic"
    decode: bool = False        # the decode kernel: one row, `panels` panels per call
    panels: int = 1             # B panels per call (of the prefill kernel's hp), b_stride apart
    weights = "s4"
    blocked = True
    int4 = True
    GROUP_COLS = 4              # B streams and offsets (PanelColumns) per column quad

    def a_word(self, step, r):
        """(A register, lane) of row r's 4 k of 4-k step `step` in the 16 k of a half body: the
        sdot layout's (step x ep + r)-th word."""
        return divmod(step * self.ep + r, 4)

    @property
    def family(self) -> DotFamily:
        return FAMILIES[self.instruction]

    @property
    def cq(self) -> int:          # column quads
        return self.hp // 4

    @property
    def rp(self) -> int:          # registers of row data ((r0 r0 r1 r1) per row pair)
        return -(-self.ep // 2)

    # registers: A v0.., B (packed, then low nibbles; per 8-k group and quad), the mask, the
    # product temporaries; pair sums, int32 accumulators and fp32 sums at the top
    @property
    def a_regs(self):
        """sdot: 16 k of A (4 k-steps x ep/4 registers); smlal: one ld1r'd row each."""
        return tuple(range(self.ep))

    def b_packed(self, g, q):
        return self.ep + g * self.cq + q

    def b_low(self, g, q):
        return self.ep + 2 * self.cq + g * self.cq + q

    @property
    def mask(self) -> int:
        return self.ep + 4 * self.cq

    @property
    def temps(self):
        return tuple(range(self.mask + 1, self.mask + 1 + self.family.temps))

    @property
    def sums_cur(self):
        """smlal family: the current block's 16 x sums, one register per quad."""
        if not self.family.pair:
            return ()
        base = self.mask + 1 + self.family.temps
        return tuple(range(base, base + self.cq))

    @property
    def sum_regs(self):
        n = self.ep * self.cq
        return tuple(range(32 - n, 32))

    @property
    def acc_regs(self):
        n = self.ep * self.cq * (2 if self.family.pair else 1)
        return tuple(range(32 - self.ep * self.cq - n, 32 - self.ep * self.cq))

    def acc(self, r, q, i=0):
        return self.acc_regs[((r * self.cq + q) * (2 if self.family.pair else 1)) + i]

    def fsum(self, r, q):
        return self.sum_regs[r * self.cq + q]

    def row_scaling(self, regs) -> list:
        return row_scaling(self, regs)

    def free_regs(self):
        used = set(self.acc_regs + self.sum_regs + self.sums_cur + (self.mask,))
        return [v for v in range(32) if v not in used]

    def tile_plan(self) -> TilePlan:
        temps = tuple(self.free_regs())
        return TilePlan(self.family.mac, self.ep, self.hp, LP, "resident", temps[:0], temps,
                        self.sum_regs, 0.0, self.cpu)

    def a_step_bytes(self):       # per 16 k
        return self.ep * BODY_K

    def b_step_bytes(self):       # per 16 k and panel
        return self.pc * BODY_K // 2


def registers_needed(ep: int, hp: int, instruction: str = "sdot") -> int:
    """The loop: accumulators (pair sums: two per row and quad) + fp32 sums + A + B (packed
    and low nibbles of two 8-k groups per quad) + mask + temporaries (+ the current sums per
    quad, smlal family); the block epilogue reuses A, B and the temporaries for the column
    scales, sums and -zp (cq + cq + ceil(ep/2)); the final row scaling ceil(ep/2)."""
    f = FAMILIES[instruction]
    cq = hp // 4
    n = ep * cq * (3 if f.pair else 2)
    loop = n + ep + 4 * cq + 1 + f.temps + (cq if f.pair else 0)
    epi = n + 1 + (cq if f.pair else 0) + 2 * cq + -(-ep // 2)
    return max(loop, epi)


def block_counts(ep: int, hp: int, bl: int = 32, instruction: str = "sdot",
                 panels: int = 1) -> dict:
    """Instructions of one scale block of `bl` k for an ep x hp tile (the kernel's own mix),
    its B in `panels` streams (a pointer add each per 32 k and per block)."""
    f = FAMILIES[instruction]
    cq, steps = hp // 4, bl // LP
    n = ep * cq
    epi = 7 * n if f.pair else 4 * n        # (addp, mla, movi x 2,) mul / scvtf, fmul, fadd
    a_loads = ep * steps if f.pair else ep * bl // 16
    return dict(mac=f.mac_ops * n * steps, unpack=2 * cq * (bl // 8), epilogue=epi,
                loads=a_loads + cq * (bl // 8) + 2 * cq + -(-ep // 2),
                alu=(1 + panels) * (bl // 32) + 2 + panels)


def block_cycles(ep: int, hp: int, core: CoreModel, bl: int = 32,
                 instruction: str = "sdot", panels: int = 1, latency: bool = True) -> float:
    """Modeled cycles per block: the vector pipes (in-order cores: fp32 ops on their own two),
    loads, issue, (latency) each accumulator's MAC chain."""
    f = FAMILIES[instruction]
    c = block_counts(ep, hp, bl, instruction, panels)
    n = ep * (hp // 4)
    fp = 3 * n
    if core.in_order:
        pipes = max((c["mac"] + c["unpack"] + c["epilogue"] - fp) / core.throughput(f.mac),
                    fp / 2)
    else:
        pipes = (c["mac"] + c["unpack"] + c["epilogue"]) / core.throughput(f.mac)
    chain = ((bl // LP) * (2 if f.pair else 1) * core.latency(f.mac) / (2 if f.pair else 1)
             if latency else 0)
    return max(pipes, c["loads"] / core.loads_per_cycle, sum(c.values()) / core.issue_width,
               chain)


BOUND_COLUMNS = 256     # the idealised decode kernel of compute_bound (as gen.qdyn4's)


def compute_bound(core: CoreModel, instruction: str = "sdot", bl: int = 32) -> float:
    """int4 weight bytes per cycle no scale-block decode kernel of this family (one row, B
    streamed once) beats on `core`: block_counts' mix of one row and BOUND_COLUMNS columns for
    a block of bl k (per 16 weight bytes one load, `shl`, `and`, the MACs; per column quad and
    block the correction and the fp32 steps), without latency."""
    return BOUND_COLUMNS * bl / 2 / block_cycles(1, BOUND_COLUMNS, core, bl, instruction,
                                                 latency=False)


def candidates(instruction: str = "sdot", cpu: str = "generic") -> list:
    """(ep, hp, worst modeled fraction of the MAC peak) of every fitting tile, best first."""
    f = FAMILIES[instruction]
    cores = covered_cores(INSTRUCTIONS[instruction], cpu)
    out = []
    for ep in f.eps:
        for hp in (4, 8, 12):
            if registers_needed(ep, hp, instruction) > 32:
                continue
            macs = block_counts(ep, hp, 32, instruction)["mac"]
            worst = min(macs / core.throughput(f.mac) / block_cycles(ep, hp, core, 32, instruction)
                        for core in cores)
            out.append((ep, hp, worst))
    return sorted(out, key=lambda t: (-round(t[2], 6), registers_needed(t[0], t[1], instruction),
                                      -t[0], t[1]))


def decode_candidates(instruction: str = "sdot", cpu: str = "generic") -> list:
    """The decode kernel (one row; M > 1 in passes): (panels, worst modeled int4 weight bytes
    per cycle at bl = 32) of each count of the prefill kernel's panels (its hp columns each:
    the same handle) that fits the 32 registers, best first (ties: more panels, fewer calls per row)."""
    pc = solve(instruction, cpu).hp
    cores = covered_cores(INSTRUCTIONS[instruction], cpu)
    out = []
    for panels in range(1, MAX_PANELS + 1):
        if registers_needed(1, pc * panels, instruction) > 32:
            break
        hp = pc * panels
        worst = min(hp * 16 / block_cycles(1, hp, core, 32, instruction, panels)
                    for core in cores)
        out.append((panels, worst))
    return sorted(out, key=lambda t: (-round(t[1], 6), -t[0]))


def solve(instruction: str = "sdot", cpu: str = "generic", decode: bool = False) -> DotBlockPlan:
    if instruction not in FAMILIES:
        raise KernelPlanError(f"no dot-family qdyn scale-block kernel for {instruction}")
    if decode:
        panels, _ = decode_candidates(instruction, cpu)[0]
        return DotBlockPlan(instruction, 1, solve(instruction, cpu).hp * panels, cpu, True,
                            panels)
    ep, hp, _ = candidates(instruction, cpu)[0]
    return DotBlockPlan(instruction, ep, hp, cpu)


# ---- instruction lists ---------------------------------------------------------------------------
def half_body(plan: DotBlockPlan, half: int) -> list[Insn]:
    """16 k (`half` 0 or 1 of a 32-k body): loads, unpack, MACs. A at x0 + half * a_step
    (smlal family: post-indexed ld1r), B at x1 + half * b_step."""
    f, code = plan.family, []
    if not f.pair:
        for i, reg in enumerate(plan.a_regs):
            code.append(_load(f"ldr q{reg}, [x0, #{half * plan.a_step_bytes() + 16 * i}]", reg,
                              "x0", a_comment(plan, i)))
    b0 = half * plan.b_step_bytes()
    for g in range(2):
        for q in range(plan.cq):
            p, lo, ptr = plan.b_packed(g, q), plan.b_low(g, q), plan.b_pointer(q)
            off = b0 + g * plan.b_step_bytes() // 2 + plan.b_offset(q)
            code.append(_load(f"ldr q{p}, [{ptr}, #{off}]", p, ptr,
                              f"B columns {4 * q}-{4 * q + 3}, k {8 * g}-{8 * g + 7} as nibbles"))
            code.append(_v(f"shl v{lo}.16b, v{p}.16b, #4", f"16 x k {8 * g}-{8 * g + 3}",
                           (f"v{lo}",), (f"v{p}",)))
            code.append(_v(f"and v{p}.16b, v{p}.16b, v{plan.mask}.16b",
                           f"16 x k {8 * g + 4}-{8 * g + 7}", (f"v{p}",), (f"v{p}", f"v{plan.mask}")))
    t = 0
    for step in range(4):                       # 4-k steps of the 16 k
        g, hi = divmod(step, 2)
        if f.pair:
            for r, reg in enumerate(plan.a_regs):
                code.append(Insn(f"ld1r {{v{reg}.4s}}, [x0], #4", "load", defs=(f"v{reg}", "x0"),
                                 uses=("x0",), comment=f"A row {r}: its 4 k, 4 times"))
        for r in range(plan.ep):
            for q in range(plan.cq):
                b = plan.b_packed(g, q) if hi else plan.b_low(g, q)
                if not f.pair:
                    i, lane = plan.a_word(step, r)
                    a = plan.a_regs[i]
                    acc = plan.acc(r, q)
                    code.append(Insn(f"sdot v{acc}.4s, v{b}.16b, v{a}.4b[{lane}]", "mac",
                                     defs=(f"v{acc}",), uses=(f"v{acc}", f"v{a}", f"v{b}"),
                                     instruction=f.mac))
                    continue
                a = plan.a_regs[r]
                for i, (sfx, arr) in enumerate((("", "8b"), ("2", "16b"))):
                    tmp = plan.temps[t % len(plan.temps)]
                    t += 1
                    acc = plan.acc(r, q, i)
                    code.append(Insn(f"smull{sfx} v{tmp}.8h, v{b}.{arr}, v{a}.{arr}", "mac",
                                     defs=(f"v{tmp}",), uses=(f"v{b}", f"v{a}"), instruction=f.mac,
                                     comment="2 columns x 4 k, exact int16 products"))
                    code.append(Insn(f"sadalp v{acc}.4s, v{tmp}.8h", "mac", defs=(f"v{acc}",),
                                     uses=(f"v{acc}", f"v{tmp}"), instruction=f.mac))
    return code


def a_comment(plan: DotBlockPlan, i: int) -> str:
    """What A register i of a half body holds (words 4i..4i+3, plan.a_word)."""
    step, row = divmod(4 * i, plan.ep)
    if plan.ep >= 4:
        return f"A k-step {step}, rows {row}-{row + 3}"
    return f"A k-steps {step}-{(4 * i + 3) // plan.ep}" + (f", rows 0-{plan.ep - 1}" if plan.ep > 1 else "")


def body(plan: DotBlockPlan) -> list[Insn]:
    code = half_body(plan, 0) + half_body(plan, 1)
    if not plan.family.pair:                    # smlal family: A post-indexed
        code.append(_advance("x0", 2 * plan.a_step_bytes(), "A: next 32 k"))
    code += [_advance(ptr, 2 * plan.b_step_bytes(), "B: next 32 k")
             for ptr in pointers(plan)]
    return code


def pointers(plan: DotBlockPlan) -> list[str]:
    """The B streams, one per panel."""
    return [plan.b_pointer(p * (plan.pc // 4)) for p in range(plan.panels)]


def inner_body(plan: DotBlockPlan) -> list[Insn]:
    """32 k of a block (not its last 32)."""
    return body(plan) + [
        Insn(f"subs {COUNT_REG}, {COUNT_REG}, #1", "alu", defs=(COUNT_REG, "nzcv"),
             uses=(COUNT_REG,)),
        Insn("b.ne K_INNER", "branch", uses=("nzcv",))]


def row_zp(plan: DotBlockPlan, regs) -> list[Insn]:
    rows_zp = 8 * plan.ep                       # after ep fp32 scales x 2 (r0 r0 r1 r1)
    return [_load(f"ldr q{reg}, [{ROWS_REG}, #{rows_zp + 16 * j}]", reg, ROWS_REG,
                  f"-zp of rows {2 * j}-{2 * j + 1}") for j, reg in enumerate(regs)]


def lane_of(r):
    """(register index, lane) of row r in the (r0 r0 r1 r1) row-data layout."""
    return r // 2, 2 * (r % 2)


def correction(plan: DotBlockPlan, zp, sums, op="mul") -> list[Insn]:
    """acc (sdot) = -zp x 16 sums, by element; smlal family: `mla` onto the block's total."""
    code = []
    for r in range(plan.ep):
        j, lane = lane_of(r)
        for q in range(plan.cq):
            acc = plan.acc(r, q)
            code.append(_v(f"{op} v{acc}.4s, v{sums[q]}.4s, v{zp[j]}.s[{lane}]",
                           "-zp x 16 sum qb: the zero-point correction" if r == q == 0 else "",
                           (f"v{acc}",), ((f"v{acc}",) if op == "mla" else ())
                           + (f"v{sums[q]}", f"v{zp[j]}")))
    return code


def tail_body(plan: DotBlockPlan) -> list[Insn]:
    """The last 32 k of a block, its fp32 epilogue (the header's block order), the next block's
    correction (sdot; smlal family: its sums loaded), pointer advance, the block loop's branch."""
    f = plan.family
    code = body(plan)
    free = [v for v in plan.free_regs() if v not in plan.temps]
    ws, nxt = free[:plan.cq], free[plan.cq:2 * plan.cq]
    zp = free[2 * plan.cq:2 * plan.cq + plan.rp]
    # x1 has advanced past the 32 k: the block's scales, then the next block's sums
    for q, reg in enumerate(ws):
        ptr = plan.b_pointer(q)
        code.append(_load(f"ldr q{reg}, [{ptr}, #{plan.b_offset(q)}]", reg, ptr,
                          f"block scales of columns {4 * q}-{4 * q + 3}"))
    for q, reg in enumerate(nxt):
        ptr = plan.b_pointer(q)
        code.append(_load(f"ldr q{reg}, [{ptr}, #{plan.pc * 4 + plan.b_offset(q)}]", reg, ptr,
                          f"16 x the next block's sums, columns {4 * q}-{4 * q + 3}"))
    code += row_zp(plan, zp)
    if f.pair:                                  # the block's totals, then its correction
        for r in range(plan.ep):
            for q in range(plan.cq):
                a, b = plan.acc(r, q, 0), plan.acc(r, q, 1)
                code.append(_v(f"addp v{a}.4s, v{a}.4s, v{b}.4s", "pair sums: 4 columns",
                               (f"v{a}",), (f"v{a}", f"v{b}")))
        code += correction(plan, zp, plan.sums_cur, "mla")
    for r in range(plan.ep):
        for q in range(plan.cq):
            acc, s = plan.acc(r, q), plan.fsum(r, q)
            code += [
                _v(f"scvtf v{acc}.4s, v{acc}.4s, #4", "(float)acc: 16 acc with 4 fraction bits",
                   (f"v{acc}",), (f"v{acc}",)),
                _v(f"fmul v{acc}.4s, v{acc}.4s, v{ws[q]}.4s", "v = wscale[n][b] * (float)acc",
                   (f"v{acc}",), (f"v{acc}", f"v{ws[q]}")),
                _v(f"fadd v{s}.4s, v{s}.4s, v{acc}.4s", "s = s + v", (f"v{s}",),
                   (f"v{s}", f"v{acc}"))]
    if f.pair:                                  # the next block: zero pair sums, its sums
        for r in range(plan.ep):
            for q in range(plan.cq):
                for i in range(2):
                    acc = plan.acc(r, q, i)
                    code.append(_v(f"movi v{acc}.4s, #0", "", (f"v{acc}",), ()))
        for q in range(plan.cq):
            cur = plan.sums_cur[q]
            code.append(_v(f"mov v{cur}.16b, v{nxt[q]}.16b", "the next block's sums",
                           (f"v{cur}",), (f"v{nxt[q]}",)))
    else:
        code += correction(plan, zp, nxt)
    code += [_advance(ptr, 2 * plan.pc * 4, "B: past the scales and the next block's sums")
             for ptr in pointers(plan)]
    code += block_loop_end()
    return code


def row_scaling(plan: DotBlockPlan, regs) -> list[Insn]:
    """After the last block: y = scale[m] * s, the row's scale by element."""
    code = [ep_mod._i(f"ldr q{reg}, [{ROWS_REG}, #{16 * j}]", f"scale of rows {2 * j}-{2 * j + 1}",
                      "load") for j, reg in enumerate(regs)]
    for r in range(plan.ep):
        j, lane = lane_of(r)
        for q in range(plan.cq):
            s = plan.fsum(r, q)
            code.append(ep_mod._i(f"fmul v{s}.4s, v{s}.4s, v{regs[j]}.s[{lane}]",
                                  "y = scale[m] * s" if r == q == 0 else ""))
    return code


def prologue(plan: DotBlockPlan) -> list[Insn]:
    i = ep_mod._i
    f = plan.family
    code = [i(f"ldr {KPAIRS_REG}, [x5, #{OFF['kpairs']}]", "32-k steps per block", "load"),
            i(f"ldr {ROWS_REG}, [x5, #{OFF['rows']}]", "row scales and -zp", "load"),
            i(f"movi v{plan.mask}.16b, #0xf0", "high-nibble mask")]
    ptrs = pointers(plan)
    if len(ptrs) > 1:
        code.append(i(f"ldr {STRIDE_REG}, [x5, #{OFF['b_stride']}]",
                      "bytes from one B panel to the next", "load"))
        code += [i(f"add {ptr}, {ptrs[p - 1]}, {STRIDE_REG}", f"panel {p}")
                 for p, ptr in enumerate(ptrs) if p > 0]
    code += [i(f"movi v{s}.4s, #0x80, lsl #24", "s = -0.0 (-0.0 + v_0 = v_0)")
             for s in plan.sum_regs]
    free = [v for v in plan.free_regs() if v not in plan.temps]
    sums = list(plan.sums_cur) if f.pair else free[:plan.cq]
    zp = free[plan.cq:plan.cq + plan.rp]
    code += [i(f"ldr q{reg}, [{plan.b_pointer(q)}, #{plan.b_offset(q)}]",
               f"16 x block 0's sums, columns {4*q}-{4*q+3}", "load") for q, reg in enumerate(sums)]
    if f.pair:
        code += [i(f"movi v{a}.4s, #0", "pair sums = 0" if a == plan.acc_regs[0] else "")
                 for a in plan.acc_regs]
    else:
        code += [i(insn.text, insn.comment, insn.kind) for insn in row_zp(plan, zp)]
        code += [i(insn.text, insn.comment) for insn in correction(plan, zp, sums)]
    code += [i(f"add {ptr}, {ptr}, #{plan.pc * 4}", "B: block 0's k-steps" if p == 0 else "")
             for p, ptr in enumerate(ptrs)]
    return code


def kernel_symbol(prefix: str, plan: DotBlockPlan) -> str:
    from .naming import cpu_suffix
    return (f"{prefix}gemm_{SIGNATURE}_{plan.family.mnemonic}_{plan.ep}x{plan.hp}x{LP}"
            f"{cpu_suffix(plan.cpu)}")


def doc_lines(plan: DotBlockPlan) -> list[str]:
    f = plan.family
    mac = ("sdot by element (one row x 4 columns per accumulator)" if not f.pair else
           "ld1r (a row's 4 k, 4 times), smull / smull2 (int16 products) and sadalp into two "
           "pair-sum registers per row and quad, addp at the block's end")
    panels = (f"{plan.panels} panels of {plan.pc} columns, args->b_stride bytes apart, each"
              if plan.panels > 1 else f"one panel of {plan.hp} columns")
    return [
        f"  x0 a_packed  blocks * bl/4 k-steps of the sdot A layout ({plan.ep} rows x 4 int8, row "
        f"r's 4 k contiguous): {plan.ep * LP} bytes each.",
        f"  x1 b_packed  {panels}: int32 16*sum(qb) of block 0 per column, "
        f"then per block: per 8 k and column quad 16 bytes (byte 4j + t: column j, k = t in the "
        f"low nibble, k = t + 4 in the high one), the block's fp32 column scales, the next "
        f"block's 16*sums (zeros after the last).",
        "  x2 blocks    scale blocks (>= 1); x3 c, x4 ldc_bytes: fp32 C tile.",
        "  x5 args      m_rem, n_rem, kpairs (bl / 32), rows (per row pair fp32x4 scale, then "
        "int32x4 -zp, each as r0 r0 r1 r1), bias (hp fp32, -0.0f for none), cmin, cmax, "
        + ("b_stride, " if plan.panels > 1 else "") + "clamp.",
        f"Per block: shl #4 / and #0xf0 per packed register, {mac}; accumulators from -zp x 16 "
        f"sums; scvtf #4 (exactly (float)acc), v = wscale * (float)acc, s = s + v; after the "
        f"last block y = scale[m] * s (tilesmith.h's block order).",
    ]


def emit(plan: DotBlockPlan, prefix: str, inst_mode: str, env):
    import re
    import textwrap
    from .emit import arch_directive, frame_bytes, restore_registers, save_registers
    f = plan.family
    if registers_needed(plan.ep, plan.hp, plan.instruction) > 32:
        raise KernelPlanError(f"qdyn4 {f.key} blocks {plan.ep}x{plan.hp}: more than 32 registers")
    inst = INSTRUCTIONS[plan.instruction]
    symbol = kernel_symbol(prefix, plan)
    inner = scheduled(inner_body(plan), plan.cpu)
    tail = scheduled(tail_body(plan), plan.cpu)
    tplan = plan.tile_plan()
    final, clamp, pieces = final_code(plan)
    write = ep_mod.store_row_pieces(tplan, pieces)
    pro = prologue(plan)
    used = sorted({int(n) for i in inner + tail + final + clamp + pro
                   for n in re.findall(r"\b[vqd](\d+)\b", i.text)})
    saved = [f"d{r}" for r in range(8, 16) if r in used]
    args_offset, tile_offset, frame = ep_mod.frame_layout(frame_bytes(saved), tplan)
    layout = (f"hp*4 + blocks * (bl/16 * {plan.b_step_bytes()} + hp*8) bytes per panel "
              f"(per 8 k and column quad 16 bytes)" if plan.panels == 1 else
              f"{plan.panels} panels of {plan.pc} columns per call, args->b_stride apart, "
              f"{plan.pc * 4} + blocks * (bl/16 * {plan.b_step_bytes()} + {plan.pc * 8}) bytes "
              f"each (per 8 k and column quad 16 bytes)")
    doc = [w for line in doc_lines(plan)
           for w in textwrap.wrap(line, 96, subsequent_indent=" " * (15 if line[:2] == "  " else 0))]
    context = dict(
        symbol=symbol, plan=plan, inst=inst, lp=LP, prefix=prefix, rl=False, doc=doc,
        weights="s4", mnemonic="smull / smull2, sadalp" if f.pair else inst.mnemonic,
        arch_directive=arch_directive(inst) if inst_mode == "never" else None,
        save=save_registers(saved, frame, args_offset), restore=restore_registers(saved, frame),
        saved=saved, prologue=pro, inner=inner, tail=tail, final=final, clamp=clamp,
        tail_exit=[BLOCK_LOOP_EXIT],
        clamp_flag=OFF["clamp"],
        store_setup=ep_mod.store_setup(tplan, args_offset, tile_offset, 4, require_args=True),
        write=write, copy_out=ep_mod.copy_out(tplan, tile_offset, 4),
        a_step=plan.ep * LP, b_step=plan.b_step_bytes(), panel=layout, regs_line=(
            f"A v{plan.a_regs[0]}-v{plan.a_regs[-1]}, B v{plan.ep}-v{plan.mask - 1}, "
            f"mask v{plan.mask}, int32 v{plan.acc_regs[0]}-v{plan.acc_regs[-1]}, fp32 sums "
            f"v{plan.sum_regs[0]}-v{plan.sum_regs[-1]}"))
    return render_kernel(env, inst_mode, context, plan.instruction, f.mnemonic, used, saved,
                         ep=plan.ep, hp=plan.hp, lp=LP, a_lp=LP, a_step_bytes=plan.ep * LP,
                         b_step_bytes=plan.b_step_bytes(), blocked=True, panels=plan.panels,
                         decode=plan.decode,
                         weights="s4", b_layout=layout)
