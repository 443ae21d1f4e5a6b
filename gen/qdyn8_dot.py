"""The qdyn int8 decode kernel of the dotprod path: raw `sdot` over the int8 handle's panels.

On the dotprod path an int8 (ts_pack_b_qs8) handle holds the panels of the path's raw int8
kernel (sdot 8 x hp, k-steps of 4) with the per-column sums and scales beside them, and
ts_qdyn.c runs that kernel into an int32 tile, then its C epilogue (dequant_block: the
zero-point correction, t = scale[m] * wscale, u = t * (float)acc, bias, clamp). At M <= 4 the
8-row tile spends 7 of 8 rows' `sdot` on padding. This module picks the tile of fewer rows
that reads the same panels as they are (the same hp and lp: no second copy of the weights)
and serves M <= 4 in passes of its rows; the driver runs it with the same C epilogue, so the
results are the same bits (the int32 sums are exact whatever the tile).

The choice (`choose`): among the solver's tiles of the instruction (gen.tiling.candidates with
the latency rule relaxed to one accumulator: a one-row tile of hp columns has hp / 4) with the
path's hp and at most 4 rows that the emitter builds, the fewest modeled cycles per byte of B on
the worst covered core (gen.gemv.cycles_per_b_byte: MAC pipes, loads, issue and each
accumulator's chain of one `sdot` per k-step), then fewer instructions per byte of B. For the
sdot 8 x 12 path that is 2 x 12 (6 accumulators; the solver offers no 1 x 12 tile: its 3 B
registers cannot hide a refill on the in-order cores): at M = 1 the chain of one `sdot` per
accumulator and k-step bounds it on every core but Cortex-A55, the same bound as a one-row
tile, and M = 2 runs in one pass.

Since the decode kernel below (several of the same panels per call, the fp32 epilogue inside:
qdyn kind 5 of the dotprod path) runs M <= 4 on every whole group of whole panels, this tile
and the C epilogue serve the rest of a decode call's panels (fewer than a group, a partial one).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import epilogue as ep_mod
from . import gemv
from .cores import CoreModel
from .isa import INSTRUCTIONS
from .loop import KernelPlanError
from .qdyn4 import (COUNT_REG, OFF, ROWS_REG, SIGNATURES, STRIDE_REG, PanelColumns, _advance,
                    _load, _v, final_code, render_kernel, scheduled)
from .schedule import Insn
from .tiling import DEFAULT_REGS, Candidate, candidates, covered_cores, plan_for

# path instructions whose qdyn int8 handles are raw panels (no fused int8 kernel: gen.qdyn4
# weights "s8" is smmla only) and get this decode tile
QDYN8_DOT_INSTRUCTIONS = ("sdot",)
MAX_ROWS = gemv.SMALL_M_MAX


@dataclass(frozen=True)
class Qdyn8DotChoice:
    candidate: Candidate
    max_m: int                  # M = 1 .. max_m run in passes of candidate.ep rows
    cycles: tuple               # ((core, modeled B bytes per cycle at M = 1), ...)

    @property
    def label(self) -> str:
        return self.candidate.label


def ranked(instruction: str, hp: int, regs: int = DEFAULT_REGS, cpu: str = "generic") -> list:
    """The tiles of `instruction` with hp columns and at most MAX_ROWS rows the emitter builds,
    best first (module comment)."""
    from .emit import buildable        # late: gen.emit imports the tiling and templates
    cores = covered_cores(INSTRUCTIONS[instruction], cpu)
    pool = [c for c in candidates(instruction, regs, cpu, min_accumulators=1)
            if c.hp == hp and c.ep <= MAX_ROWS and buildable(plan_for(c, cpu))]
    key = lambda c: (max(gemv.cycles_per_b_byte(c, k) for k in cores),
                     gemv.instructions_per_b_byte(c), c.regs_total, c.strategy)
    return sorted(pool, key=key)


def max_m(small: Candidate, main_ep: int, main_hp: int, main_strategy: str,
          regs: int = DEFAULT_REGS, cpu: str = "generic") -> int:
    """Largest M <= MAX_ROWS whose ceil(M / ep) passes of the small tile over B take no more
    instructions per byte of B (as emitted for cpu) than the main tile's one pass (unlike
    gen.gemv.max_m, M beyond the small tile's rows counts: the weights are packed once for the
    main tile, so the passes re-read the same panels, with no second layout to pay for)."""
    main = gemv.main_step_instructions(small.instruction, main_ep, main_hp, main_strategy,
                                       regs, cpu)
    small_step = gemv.instructions_per_step(small, cpu)
    return max((m for m in range(1, MAX_ROWS + 1)
                if -(-m // small.ep) * small_step <= main), default=0)


def choose(instruction: str, main_ep: int, main_hp: int, main_strategy: str,
           regs: int = DEFAULT_REGS, cpu: str = "generic") -> Qdyn8DotChoice | None:
    """The decode tile of the qdyn path whose raw int8 kernel is main_ep x main_hp, or None
    (not a QDYN8_DOT_INSTRUCTIONS path, no tile, or no M it runs in fewer instructions per byte
    of B than the main tile: gen.gemv.max_m)."""
    if instruction not in QDYN8_DOT_INSTRUCTIONS:
        return None
    tiles = [c for c in ranked(instruction, main_hp, regs, cpu) if c.ep < main_ep]
    if not tiles:
        return None
    best = tiles[0]
    m = max_m(best, main_ep, main_hp, main_strategy, regs, cpu)
    if m == 0:
        return None
    cores = covered_cores(INSTRUCTIONS[instruction], cpu)
    return Qdyn8DotChoice(best, m, tuple((k.name, 1 / gemv.cycles_per_b_byte(best, k))
                                         for k in cores))


# ---- the fused decode kernel: several raw panels per call, the fp32 epilogue inside ---------------
# qdyn kind 5 on the dotprod path (gen.registry.qdyn_kind: weights "s8", decode): one row (or
# row pair) over `panels` of the raw sdot kernel's panels per call (hp = panels x the main
# kernel's hp, lp 4: the handle's panels as they are, each its own B stream x1, x9.. chained by
# args->b_stride, as gen/qdyn4_dot.py's scale-block decode kernel), with the per-channel
# epilogue of tilesmith.h in the kernel: the accumulators start at (-zp[m]) x sum qb[n] (the
# zero-point correction; the raw C path's acc - zp * sum qb, the same value modulo 2^32), the
# k-steps' `sdot` by element, then scvtf, t = scale[m] * wscale[n] (`fmul` by element: the
# same IEEE product as ts_qdyn.c dequant_block's wscale * scale), u = t * (float)acc, + bias,
# clamp (gen.qdyn4.final_code). The raw handle keeps its column sums and scales beside the
# panels (one int32 and one fp32 per column, N contiguous), so the kernel reads them through
# args->col_sums / col_scales (from its first column) instead of from the panel.
# The choice (decode_candidates): per k-step of ep rows x panels the sdot, the loads and all
# instructions, each accumulator's chain of one `sdot` per k-step, on the worst covered core,
# at M = 1 (weight bytes per modeled cycle); ties: fewer instructions per weight byte, more
# panels.

DECODE_LP = 4               # k per k-step (the sdot layout of the raw panels)
DECODE_UNROLL = 4           # k-steps per inner-loop iteration (one 16-byte A load per row)
DECODE_EPS = (1, 2)
DECODE_MAX_PANELS = 7       # B streams x1, x9-x15
COLS_REG = "x17"            # args->col_sums, then args->col_scales


@dataclass(frozen=True)
class Qdyn8DecodePlan(PanelColumns):
    ep: int
    hp: int                     # panels x the raw kernel's hp
    panels: int
    cpu: str = "generic"
    instruction = "sdot"
    weights = "s8"
    blocked = False
    int4 = False
    decode = True
    mask = None
    GROUP_COLS = 4              # B streams and offsets (PanelColumns) per column quad

    @property
    def cq(self) -> int:        # column quads: one accumulator per row each
        return self.hp // 4

    @property
    def rp(self) -> int:        # row pairs of the row data ((r0 r0 r1 r1) per register)
        return -(-self.ep // 2)

    @property
    def acc_regs(self):
        n = self.ep * self.cq
        return tuple(range(32 - n, 32))

    @property
    def sum_regs(self):         # one block: the fp32 result replaces the int32 sum (s = u_0)
        return self.acc_regs

    @property
    def a_regs(self):           # DECODE_UNROLL k-steps of ep rows: ep registers
        return tuple(range(self.ep))

    @property
    def b_regs(self):
        return tuple(range(self.ep, 32 - self.ep * self.cq))

    def acc(self, r, q):
        return self.acc_regs[r * self.cq + q]

    def fsum(self, r, q):
        return self.sum_regs[r * self.cq + q]

    def a_word(self, step, r):
        """(A register index, lane) of row r's 4 k of k-step `step` of an iteration."""
        return divmod(step * self.ep + r, 4)

    def free_regs(self):
        return [v for v in range(32) if v not in self.acc_regs]

    def row_scaling(self, regs):            # per channel: none (final_code, blocked False)
        return []

    def tile_plan(self):
        from .plan import TilePlan
        temps = tuple(self.free_regs())
        return TilePlan("sdot", self.ep, self.hp, DECODE_LP, "resident", temps[:0], temps,
                        self.sum_regs, 0.0, self.cpu)

    def a_step_bytes(self):     # per k-step
        return self.ep * DECODE_LP

    def b_step_bytes(self):     # per k-step and panel
        return self.pc * DECODE_LP


def decode_registers(ep: int, cq: int) -> int:
    """Accumulators (ep x cq) + A (ep) + the B registers of one k-step (cq)."""
    return ep * cq + ep + cq


def decode_counts(ep: int, pc: int, panels: int) -> dict:
    """Instructions per k-step of the inner loop: sdot, loads (B; A amortised over the
    DECODE_UNROLL k-steps of a load), pointer adds and the loop's subs / branch."""
    cq = pc // 4 * panels
    return dict(mac=ep * cq, loads=cq + ep / DECODE_UNROLL,
                alu=(1 + panels + 2) / DECODE_UNROLL)


def decode_cycles(ep: int, pc: int, panels: int, core: CoreModel) -> float:
    """Modeled cycles per k-step: sdot pipes, loads, issue, each accumulator's sdot chain."""
    c = decode_counts(ep, pc, panels)
    return max(c["mac"] / core.throughput("sdot"), c["loads"] / core.loads_per_cycle,
               sum(c.values()) / core.issue_width, core.latency("sdot"))


def decode_candidates(pc: int, cpu: str = "generic") -> list:
    """(ep, panels, worst modeled weight bytes per cycle at M = 1, instructions per weight
    byte) of every fitting decode kernel over panels of pc columns, best first."""
    cores = covered_cores(INSTRUCTIONS["sdot"], cpu)
    out = []
    for ep in DECODE_EPS:
        for panels in range(1, DECODE_MAX_PANELS + 1):
            if decode_registers(ep, pc // 4 * panels) > 32:
                continue
            weight = pc * DECODE_LP * panels          # bytes per k-step
            worst = min(weight / decode_cycles(ep, pc, panels, k) for k in cores)
            per_byte = sum(decode_counts(ep, pc, panels).values()) / weight
            out.append((ep, panels, worst, per_byte))
    return sorted(out, key=lambda t: (-round(t[2], 6), round(t[3], 6), -t[1]))


def compute_bound(core: CoreModel) -> float:
    """int8 weight bytes per cycle no decode kernel of this scheme (one row, B streamed once)
    beats on `core`: per 16 weight bytes one load and one sdot (A's loads, the pointer adds and
    the once-per-call epilogue amortised away), without the accumulator chain."""
    return 16 / max(1 / core.throughput("sdot"), 1 / core.loads_per_cycle, 2 / core.issue_width)


def solve_decode(pc: int, cpu: str = "generic") -> Qdyn8DecodePlan:
    ep, panels, _, _ = decode_candidates(pc, cpu)[0]
    return Qdyn8DecodePlan(ep, pc * panels, panels, cpu)


def decode_pointers(plan: Qdyn8DecodePlan) -> list[str]:
    return [plan.b_pointer(p * (plan.pc // 4)) for p in range(plan.panels)]


def decode_steps(plan: Qdyn8DecodePlan, steps: int) -> list[Insn]:
    """`steps` k-steps (DECODE_UNROLL: the inner loop's; 1: a single k-step): A (16 bytes per
    row for DECODE_UNROLL k-steps, one k-step's 4 ep bytes else), per k-step and column quad
    one B load and the rows' `sdot` by element; the pointers advance, the count and branch."""
    a_bytes = plan.a_step_bytes()
    if steps == 1:
        form = {4: "s", 8: "d", 16: "q"}[a_bytes]
        code = [_load(f"ldr {form}{plan.a_regs[0]}, [x0]", plan.a_regs[0], "x0",
                      f"A: rows 0-{plan.ep - 1}, one k-step" if plan.ep > 1 else "A: one k-step")]
    else:
        code = [_load(f"ldr q{reg}, [x0, #{16 * i}]", reg, "x0",
                      f"A: k-steps {4 * i // plan.ep}-{(4 * i + 3) // plan.ep}")
                for i, reg in enumerate(plan.a_regs[:-(-steps * plan.ep // 4)])]
    b = 0
    for s in range(steps):
        for q in range(plan.cq):
            reg = plan.b_regs[b % len(plan.b_regs)]
            b += 1
            ptr = plan.b_pointer(q)
            code.append(_load(f"ldr q{reg}, [{ptr}, #{s * plan.b_step_bytes() + plan.b_offset(q)}]",
                              reg, ptr, f"B: k-step {s}, columns {4 * (q % (plan.pc // 4))}-"
                                        f"{4 * (q % (plan.pc // 4)) + 3} of panel "
                                        f"{q // (plan.pc // 4)}"))
            for r in range(plan.ep):
                i, lane = plan.a_word(s, r) if steps > 1 else (0, r)
                a, acc = plan.a_regs[i], plan.acc(r, q)
                code.append(Insn(f"sdot v{acc}.4s, v{reg}.16b, v{a}.4b[{lane}]", "mac",
                                 defs=(f"v{acc}",), uses=(f"v{acc}", f"v{a}", f"v{reg}"),
                                 instruction="sdot"))
    code.append(_advance("x0", steps * a_bytes, "A: next k-steps"))
    code += [_advance(ptr, steps * plan.b_step_bytes(), "B: next k-steps")
             for ptr in decode_pointers(plan)]
    code += [Insn(f"subs {COUNT_REG}, {COUNT_REG}, #{steps}", "alu", defs=(COUNT_REG, "nzcv"),
                  uses=(COUNT_REG,)),
             Insn("b.hs K_INNER" if steps > 1 else "b.ne K_SINGLE", "branch", uses=("nzcv",))]
    return code


def decode_prologue(plan: Qdyn8DecodePlan) -> list[Insn]:
    """The row data pointer, the panels' streams, accumulators = (-zp[m]) x sum qb[n] (by
    element: the row's -zp lane of (r0 r0 r1 r1)), the k-step count."""
    from .qdyn4_dot import lane_of
    i = ep_mod._i
    code = [i(f"ldr {ROWS_REG}, [x5, #{OFF['rows']}]", "row scales and -zp", "load"),
            i(f"ldr {COLS_REG}, [x5, #{OFF['col_sums']}]", "the columns' sum qb", "load")]
    ptrs = decode_pointers(plan)
    if len(ptrs) > 1:
        code.append(i(f"ldr {STRIDE_REG}, [x5, #{OFF['b_stride']}]",
                      "bytes from one B panel to the next", "load"))
        code += [i(f"add {ptr}, {ptrs[p - 1]}, {STRIDE_REG}", f"panel {p}")
                 for p, ptr in enumerate(ptrs) if p > 0]
    zp = plan.b_regs[:plan.rp]
    sums = plan.b_regs[plan.rp:]
    code += [i(f"ldr q{reg}, [{ROWS_REG}, #{8 * plan.ep + 16 * j}]",
               f"-zp of rows {2 * j}-{2 * j + 1}", "load") for j, reg in enumerate(zp)]
    for q in range(plan.cq):
        s = sums[q % len(sums)]
        code.append(i(f"ldr q{s}, [{COLS_REG}, #{16 * q}]", f"sum qb, columns {4 * q}-{4 * q + 3}",
                      "load"))
        for r in range(plan.ep):
            j, lane = lane_of(r)
            code.append(i(f"mul v{plan.acc(r, q)}.4s, v{s}.4s, v{zp[j]}.s[{lane}]",
                          "-zp x sum qb: the zero-point correction" if r == q == 0 else ""))
    code.append(i(f"subs {COUNT_REG}, x2, #{DECODE_UNROLL}",
                  f"k-steps past the first {DECODE_UNROLL}"))
    return code


def decode_tail(plan: Qdyn8DecodePlan) -> list[Insn]:
    """After the last k-step, per accumulator: scvtf, t = scale[m] * wscale[n] (by element),
    s = u = t * (float)acc in place (tilesmith.h's per-channel order, ts_qdyn.c's)."""
    from .qdyn4_dot import lane_of
    code = [Insn(f"ldr {COLS_REG}, [x5, #{OFF['col_scales']}]", "load", defs=(COLS_REG,),
                 uses=("x5",), comment="the columns' wscale")]
    free = [v for v in plan.free_regs()]
    scale, rest = free[:plan.rp], free[plan.rp:]
    ws_pool, temps = rest[:len(rest) // 2], rest[len(rest) // 2:]
    code += [_load(f"ldr q{reg}, [{ROWS_REG}, #{16 * j}]", reg, ROWS_REG,
                   f"scale of rows {2 * j}-{2 * j + 1}") for j, reg in enumerate(scale)]
    k = 0
    for q in range(plan.cq):
        ws = ws_pool[q % len(ws_pool)]
        code.append(_load(f"ldr q{ws}, [{COLS_REG}, #{16 * q}]", ws, COLS_REG,
                          f"wscale, columns {4 * q}-{4 * q + 3}"))
        for r in range(plan.ep):
            j, lane = lane_of(r)
            acc, t = plan.acc(r, q), temps[k % len(temps)]
            k += 1
            code += [
                _v(f"scvtf v{acc}.4s, v{acc}.4s", "(float)acc", (f"v{acc}",), (f"v{acc}",)),
                _v(f"fmul v{t}.4s, v{ws}.4s, v{scale[j]}.s[{lane}]", "t = scale[m] * wscale[n]",
                   (f"v{t}",), (f"v{ws}", f"v{scale[j]}")),
                _v(f"fmul v{acc}.4s, v{t}.4s, v{acc}.4s", "s = u = t * (float)acc",
                   (f"v{acc}",), (f"v{t}", f"v{acc}"))]
    return code


def decode_symbol(prefix: str, plan: Qdyn8DecodePlan) -> str:
    from .naming import cpu_suffix
    return (f"{prefix}gemm_{SIGNATURES['s8']}_sdot_{plan.ep}x{plan.hp}x{DECODE_LP}"
            f"{cpu_suffix(plan.cpu)}")


def decode_doc(plan: Qdyn8DecodePlan) -> list[str]:
    return [
        f"  x0 a_packed  k-steps of the sdot A layout ({plan.ep} row{'s' if plan.ep > 1 else ''} "
        f"x 4 int8, row r's 4 k contiguous): {plan.a_step_bytes()} bytes each.",
        f"  x1 b_packed  {plan.panels} of the raw sdot kernel's panels of {plan.pc} columns, "
        f"args->b_stride bytes apart, each x2 k-steps of {plan.b_step_bytes()} bytes (per column "
        f"quad 16 bytes: column j's 4 k at 4j), as ts_pack_b_qs8 packs them for the raw kernel.",
        "  x2 ksteps    k-steps (>= 1); x3 c, x4 ldc_bytes: fp32 C tile.",
        "  x5 args      m_rem, n_rem, rows (per row pair fp32x4 scale, then int32x4 -zp, each as "
        "r0 r0 r1 r1), bias (hp fp32, -0.0f for none), cmin, cmax, b_stride, clamp, col_sums "
        "(hp int32 sum qb), col_scales (hp fp32 wscale).",
        f"Accumulators = (-zp) x sum qb; {DECODE_UNROLL} k-steps per iteration, then single "
        "k-steps: per column quad one B load, sdot by element; epilogue: scvtf (exactly "
        "(float)acc), t = scale * wscale (by element), s = u = t * (float)acc in place "
        "(tilesmith.h's per-channel order).",
    ]


def emit_decode(plan: Qdyn8DecodePlan, prefix: str, inst_mode: str, env):
    import re
    import textwrap
    from .emit import arch_directive, frame_bytes, restore_registers, save_registers
    if decode_registers(plan.ep, plan.cq) > 32 or plan.panels > DECODE_MAX_PANELS:
        raise KernelPlanError(f"qdyn8 sdot decode {plan.ep}x{plan.hp}: does not fit")
    inst = INSTRUCTIONS["sdot"]
    symbol = decode_symbol(prefix, plan)
    inner = scheduled(decode_steps(plan, DECODE_UNROLL), plan.cpu)
    single = scheduled(decode_steps(plan, 1), plan.cpu)
    tail = scheduled(decode_tail(plan), plan.cpu)
    tplan = plan.tile_plan()
    final, clamp, pieces = final_code(plan)
    write = ep_mod.store_row_pieces(tplan, pieces)
    pro = decode_prologue(plan)
    used = sorted({int(n) for i in inner + single + tail + final + clamp + pro
                   for n in re.findall(r"\b[vqds](\d+)\b", i.text)})
    saved = [f"d{r}" for r in range(8, 16) if r in used]
    args_offset, tile_offset, frame = ep_mod.frame_layout(frame_bytes(saved), tplan)
    layout = (f"{plan.panels} raw panels of {plan.pc} columns per call, args->b_stride apart, "
              f"ksteps * {plan.b_step_bytes()} bytes each")
    doc = [w for line in decode_doc(plan)
           for w in textwrap.wrap(line, 96, subsequent_indent=" " * (15 if line[:2] == "  " else 0))]
    i = ep_mod._i
    context = dict(
        symbol=symbol, plan=plan, inst=inst, lp=DECODE_LP, prefix=prefix, rl=False, doc=doc,
        weights="s8", mnemonic=inst.mnemonic,
        arch_directive=arch_directive(inst) if inst_mode == "never" else None,
        save=save_registers(saved, frame, args_offset), restore=restore_registers(saved, frame),
        saved=saved, prologue=pro, inner=inner, tail=tail, final=final, clamp=clamp,
        entry=[i("b.lo K_REM", f"fewer than {DECODE_UNROLL}: single k-steps")],
        rem=[i(f"adds {COUNT_REG}, {COUNT_REG}, #{DECODE_UNROLL}", "k-steps left"),
             i("b.eq K_TAIL", "none: the epilogue")],
        single=single, resync=[], ld1_steps=DECODE_UNROLL,
        loop_notes=(f"{DECODE_UNROLL} k-steps per iteration while {DECODE_UNROLL} are left.",
                    "The rest one k-step at a time.", "The fp32 epilogue."),
        tail_exit=[], clamp_flag=OFF["clamp"],
        store_setup=ep_mod.store_setup(tplan, args_offset, tile_offset, 4, require_args=True),
        write=write, copy_out=ep_mod.copy_out(tplan, tile_offset, 4),
        a_step=plan.a_step_bytes(), b_step=plan.b_step_bytes(), panel=layout, regs_line=(
            f"A v{plan.a_regs[0]}-v{plan.a_regs[-1]}, B v{plan.b_regs[0]}-v{plan.b_regs[-1]}, "
            f"int32 / fp32 v{plan.acc_regs[0]}-v{plan.acc_regs[-1]}"))
    return render_kernel(env, inst_mode, context, "sdot", inst.mnemonic, used, saved,
                         ep=plan.ep, hp=plan.hp, lp=DECODE_LP, a_lp=DECODE_LP,
                         a_step_bytes=plan.a_step_bytes(), b_step_bytes=plan.b_step_bytes(),
                         blocked=False, panels=plan.panels, decode=True, weights="s8",
                         b_layout=layout, raw_panels=True)
