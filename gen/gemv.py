"""The solver's second objective: GEMV and small M (M <= SMALL_M_MAX).

Why a second objective: the GEMM objective (gen.tiling) minimises bytes of A and B loaded per
MAC, which wants ep ~ hp (8 x 12). At M = 1 a decode step runs that tile with 7 of 8 rows
padding, and B is streamed from memory exactly once: what matters is the work per byte of B,
not per MAC. So for M <= SMALL_M_MAX:

  tile        ep = the instruction's smallest row block (inst.c_rows_per_reg: 1 for the by-element
              forms fmla / smlal / sdot / udot, 2 for the 2x2 matrix forms smmla / ummla / usmmla /
              bfmmla, whose second row is zero padding at M = 1); A is resident (a few
              registers per k-step, reused by every column), B streams.
  objective   instructions per byte of B (MACs + load instructions, gen.tiling.load_instructions),
              then modeled cycles per byte of B on the worst covered core (cycles_per_b_byte),
              then fewer registers. Every candidate keeps the solver's other constraints:
              enough accumulators for every covered core's latency x MACs per cycle, refills
              hidden on in-order cores, single-load last registers (gen.tiling.candidates).
  dispatch    a GEMV kernel serves M up to max_m: the largest M <= min(ep, SMALL_M_MAX) whose
              one pass over B costs no more instructions per byte of B than one pass of the
              GEMM tile (the driver picks it, ts_gemm.c `gemv_view`). M > ep would stream B
              ceil(M / ep) times: from memory that costs more than the GEMM tile's padding.
              Very narrow B: the driver keeps the GEMM tile when ceil(N / hp_gemv) GEMV panels
              take more instructions per k-step than ceil(N / hp_gemm) GEMM panels (both
              counts, step_instructions, are in the dispatch table: ts_use_gemv).

Cycles per byte of B for one k-step of a tile (per core; loop overhead left out, it is amortised
over the unrolled k-steps):
  max(MACs / MACs per cycle, vector loads / loads per cycle, instructions / issue width,
      MAC latency (each accumulator takes one MAC per k-step, a chain))  /  B bytes per k-step.
The compute bound of a GEMV (bench) is the same expression with the latency term left out, for
the best instruction mix: one MAC instruction per 16-byte B register (every form here consumes
exactly one B register per MAC at ep = c_rows_per_reg, smlal two MACs per register) and the B
loads as `ld1 {4 regs}` / `ldr q`.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from .cores import CoreModel
from .emit import buildable, chosen_main_loop, step_instructions
from .isa import INSTRUCTIONS, TYPE_BYTES, MacInstruction
from .tiling import (DEFAULT_REGS, Candidate, candidates, covered_cores, load_instructions,
                     plan_for)

SMALL_M_MAX = 4          # the objective applies to M <= 4 (issue 12, deliverable 4)

# The instructions whose GEMM kernel (a dispatch path's) gets a GEMV / small-M sibling: every
# path instruction (GEMV kernels, dispatch and bit-identity tested for each). sudot and bfdot
# are on no dispatch path; they serve as the GEMV form of usmmla and bfmmla (GEMV_FORMS).
GEMV_INSTRUCTIONS = ("fmla_f32", "fmla_f16", "fmlal", "smlal", "sdot", "udot", "smmla", "ummla",
                     "usmmla", "bfmmla")

# The other instructions whose GEMV tile may serve a path's small M, ranked by the same
# objective as the path's own: they need the same CPU feature (so wherever the path runs, they
# can), read the same packed element types from the same sources (only lp differs: the GEMV
# layout of a handle is packed for the GEMV kernel's lp) and compute each result as the same
# chain of operations over k, so small M stays bit-identical to the GEMM tile:
#  - bfdot / bfmmla: both accumulate each output through BFDotAdd of consecutive k pairs in k
#    order (Arm ARM DDI0487 BFDOT (vector, by element) and BFMMLA pseudocode: BFMMLA's 4 k per
#    output are two BFDotAdd steps, k 0-1 then 2-3);
#  - sudot / usmmla: uint8 A x int8 B into int32, exact.
# smmla / sdot and ummla / udot are not paired: sdot / udot need FEAT_DotProd, which a core
# with FEAT_I8MM need not report; they have paths of their own.
GEMV_FORMS = {"bfmmla": ("bfdot",), "usmmla": ("sudot",)}


def b_bytes_per_step(inst: MacInstruction, hp: int) -> int:
    return hp * inst.k * TYPE_BYTES[inst.b_type]


def macs_per_step(c: Candidate) -> int:
    """MAC instructions of one k-step: one per accumulator (smlal: the low and high halves of a
    B register feed two accumulators, each one MAC)."""
    return c.regs_c


def instructions_per_step(c: Candidate, cpu: str | None = None) -> int:
    """Instructions (MACs and loads) of one k-step of tile `c`. With `cpu`: counted in the main
    loop the emitter builds for `cpu` (emitted_step_instructions), what the dispatch table,
    the manifest and `make tiles` report. Without: the solver's estimate that ranks the
    candidates (gen.tiling.load_instructions: a double-buffered operand as multi-register
    `ld1`), which undercounts a loop the emitter builds with `ldr q` per register because
    that models faster for `cpu` (sdot / udot 1x32x4 on Cortex-A55: 17, estimate 11)."""
    if cpu is not None:
        return emitted_step_instructions(c, cpu)
    inst = INSTRUCTIONS[c.instruction]
    return macs_per_step(c) + load_instructions(inst, c.ep, c.hp, c.strategy)


@lru_cache(maxsize=None)
def emitted_step_instructions(c: Candidate, cpu: str) -> int:
    """MAC and load instructions per k-step of the main loop gen.emit emits for tile `c` and
    `cpu` (gen.emit.step_instructions), rounded up: the dispatch table holds integers."""
    fraction = step_instructions(chosen_main_loop(plan_for(c, cpu), cpu))
    return -(-fraction.numerator // fraction.denominator)


def instructions_per_b_byte(c: Candidate, cpu: str | None = None) -> Fraction:
    return Fraction(instructions_per_step(c, cpu),
                    b_bytes_per_step(INSTRUCTIONS[c.instruction], c.hp))


def vector_loads_per_step(c: Candidate) -> int:
    """128-bit (or narrower) register loads of one k-step, whatever instruction loads them."""
    inst = INSTRUCTIONS[c.instruction]
    return inst.a_regs(c.ep) + inst.b_regs(c.hp)


def cycles_per_b_byte(c: Candidate, core: CoreModel, latency: bool = True) -> float:
    """Modeled cycles per byte of B of tile `c` on `core` (module comment)."""
    inst = INSTRUCTIONS[c.instruction]
    cycles = max(macs_per_step(c) / core.throughput(inst.name),
                 vector_loads_per_step(c) / core.loads_per_cycle,
                 instructions_per_step(c) / core.issue_width,
                 core.latency(inst.name) if latency else 0)
    return cycles / b_bytes_per_step(inst, c.hp)


def compute_bound(instruction: str, core: CoreModel) -> float:
    """Bytes of B per cycle no GEMV kernel of `instruction` beats on `core` (instruction mix:
    one MAC per B register, B loaded 4 registers per `ld1`, A's loads amortised away)."""
    inst = INSTRUCTIONS[instruction]
    reg_bytes = inst.b_cols_per_reg * inst.k * TYPE_BYTES[inst.b_type]
    macs_per_reg = inst.halves
    cycles = max(macs_per_reg / core.throughput(instruction), 1 / core.loads_per_cycle,
                 (macs_per_reg + 0.25) / core.issue_width)
    return reg_bytes / cycles


@dataclass(frozen=True)
class GemvChoice:
    candidate: Candidate
    max_m: int                     # the GEMV kernel serves M = 1 .. max_m
    step_instructions: int         # instructions of one k-step of the GEMV tile (as emitted)
    main_step_instructions: int    # of the GEMM tile (as emitted; the driver's narrow-N rule)
    instructions_per_b_byte: Fraction   # as emitted
    cycles: tuple                  # ((core, cycles per B byte), ...)
    runners_up: tuple              # Candidates ranked after it

    @property
    def label(self) -> str:
        return self.candidate.label


def gemv_candidates(instruction: str, regs: int = DEFAULT_REGS, cpu: str = "generic") -> list:
    """The solver's feasible tiles with ep = the instruction's smallest row block that the
    emitter can build (gen.emit.buildable: at M = 1 the wide B tiles are where a k-step's loads
    can outgrow every load form), ranked by the GEMV objective (module comment)."""
    inst = INSTRUCTIONS[instruction]
    cores = covered_cores(inst, cpu)
    pool = [c for c in candidates(instruction, regs, cpu)
            if c.ep == inst.c_rows_per_reg and buildable(plan_for(c, cpu))]
    key = lambda c: (instructions_per_b_byte(c),
                     max(cycles_per_b_byte(c, k) for k in cores), c.regs_total, c.hp,
                     c.strategy)
    return sorted(pool, key=key)


def main_candidate(instruction: str, ep: int, hp: int, strategy: str,
                   regs: int = DEFAULT_REGS, cpu: str = "generic") -> Candidate:
    """The GEMM tile as a Candidate (for its instruction counts): the solver's own candidate
    (registers assigned, so it can be emitted and counted), else one with the shape only."""
    inst = INSTRUCTIONS[instruction]
    for c in candidates(instruction, regs, cpu, min_accumulators=1):   # gen.tile_policy may relax
        if (c.ep, c.hp, c.strategy) == (ep, hp, strategy):
            return c
    return Candidate(inst.name, ep, hp, inst.lp, strategy, 0, 0, inst.c_regs(ep, hp), 0.0)


def main_step_instructions(instruction: str, ep: int, hp: int, strategy: str,
                           regs: int = DEFAULT_REGS, cpu: str = "generic") -> int:
    """Instructions per k-step of the GEMM tile ep x hp as the emitter builds it for `cpu` (the
    driver's narrow-B rule compares it with the GEMV kernel's); the estimate for a shape the
    solver does not offer."""
    main = main_candidate(instruction, ep, hp, strategy, regs, cpu)
    return instructions_per_step(main, cpu if main.regs_a or main.regs_b else None)


def max_m(small: Candidate, main_ep: int, main_hp: int, main_strategy: str,
          main_instruction: str | None = None) -> int:
    """Largest M <= min(ep, SMALL_M_MAX) for which the one pass of the GEMV tile over B costs no
    more instructions per byte of B than the GEMM tile's (0: never). main_instruction: the
    GEMM tile's, when the GEMV tile is of another form (GEMV_FORMS)."""
    main = main_candidate(main_instruction or small.instruction, main_ep, main_hp, main_strategy)
    best = 0
    for m in range(1, min(SMALL_M_MAX, main_ep, small.ep) + 1):
        passes = -(-m // small.ep)
        if passes * instructions_per_b_byte(small) <= instructions_per_b_byte(main):
            best = m
    return best


def choose(instruction: str, main_ep: int, main_hp: int, main_strategy: str,
           regs: int = DEFAULT_REGS, cpu: str = "generic") -> GemvChoice | None:
    """The GEMV kernel serving `instruction`'s GEMM tile main_ep x main_hp: the best tile, by
    the GEMV objective on the cores `instruction` covers, of the instruction itself and of its
    GEMV_FORMS; None when no tile fits, it would never beat the GEMM tile or the instruction is
    not in GEMV_INSTRUCTIONS."""
    if instruction not in GEMV_INSTRUCTIONS:
        return None
    cores = covered_cores(INSTRUCTIONS[instruction], cpu)
    # per form its own ranking's best first; across forms: instructions, then modeled cycles,
    # per byte of B at M = 1 (decode), then the more M served (max_m), then the path's own
    # instruction (the sort is stable)
    served = lambda c: max_m(c, main_ep, main_hp, main_strategy, instruction)
    key = lambda c: (instructions_per_b_byte(c), max(cycles_per_b_byte(c, k) for k in cores),
                     -served(c))
    ranked = sorted((c for form in (instruction, *GEMV_FORMS.get(instruction, ()))
                     for c in gemv_candidates(form, regs, cpu)), key=key)
    if not ranked:
        return None
    best = ranked[0]
    m = served(best)
    if m == 0:
        return None
    main_step = main_step_instructions(instruction, main_ep, main_hp, main_strategy, regs, cpu)
    return GemvChoice(best, m, instructions_per_step(best, cpu), main_step,
                      instructions_per_b_byte(best, cpu),
                      tuple((k.name, cycles_per_b_byte(best, k)) for k in cores),
                      tuple(ranked[1:4]))


# ---- dot versus mmla at M = 1 ------------------------------------------------------------------
# Each matrix form and the by-element dot form over the same element types, A (by element)
# first: uint8 A x int8 B is sudot (usdot's by-element operand is the signed one, gen.isa).
DOT_OF_MMLA = {"smmla": "sdot", "ummla": "udot", "usmmla": "sudot", "bfmmla": "bfdot"}


def dot_vs_mmla(mmla: str, regs: int = DEFAULT_REGS, cpu: str = "generic") -> str:
    """One paragraph for `make tiles`: which of the mmla instruction and its dot form wins at
    M = 1, and why, from the GEMV objective of each."""
    dot = DOT_OF_MMLA[mmla]
    lines = []
    best = {}
    for name in (mmla, dot):
        inst = INSTRUCTIONS[name]
        try:
            ranked = gemv_candidates(name, regs, cpu)
        except Exception:               # noqa: BLE001  (no core of cpu has it)
            ranked = []
        if not ranked:
            lines.append(f"{name}: no GEMV tile fits")
            continue
        c = best[name] = ranked[0]
        cores = covered_cores(inst, cpu)
        useful = inst.cols * inst.k if inst.acc_shape == "row" else 2 * inst.k
        cyc = ", ".join(f"{k.name} {1 / cycles_per_b_byte(c, k):.1f}" for k in cores)
        lines.append(f"{name} {c.label}: {useful} useful MACs and "
                     f"{inst.b_cols_per_reg * inst.k * TYPE_BYTES[inst.b_type]} B bytes per "
                     f"instruction, {float(instructions_per_b_byte(c, cpu)):.4f} instructions per B "
                     f"byte, modeled B bytes/cycle {cyc}")
    if len(best) == 2:
        ipb = {n: instructions_per_b_byte(best[n], cpu) for n in best}   # as emitted
        cores = [k for k in covered_cores(INSTRUCTIONS[mmla], cpu)
                 if k.has(INSTRUCTIONS[dot].feature)]
        rate = {n: {k.name: 1 / cycles_per_b_byte(best[n], k) for k in cores} for n in best}
        faster = sorted({k.name for k in cores if rate[mmla][k.name] > rate[dot][k.name] + 1e-9})
        slower = sorted({k.name for k in cores if rate[dot][k.name] > rate[mmla][k.name] + 1e-9})
        fewer = mmla if ipb[mmla] < ipb[dot] else dot if ipb[dot] < ipb[mmla] else None
        same_rate = all(k.throughput(mmla) == k.throughput(dot) for k in cores)
        shape = {n: (f"{best[n].label}: {best[n].regs_c} accumulators, "
                     f"{instructions_per_step(best[n], cpu) - macs_per_step(best[n])}"
                     f" load instructions per k-step of {b_bytes_per_step(INSTRUCTIONS[n], best[n].hp)}"
                     f" B bytes") for n in best}
        from .registry import GEMM_TYPES      # late: gen.registry imports gen.isa only
        paths = {p.instruction for t in GEMM_TYPES for p in t.chain}
        if dot in GEMV_FORMS.get(mmla, ()):
            served = choose(mmla, *_main_tile(mmla, regs, cpu), regs, cpu)
            runs = served.candidate.instruction if served else None
            dispatch = (f"{dot} needs the same feature as {mmla} and computes the same results, "
                        f"so it may serve the {mmla} path's small M (GEMV_FORMS): the {mmla} path "
                        f"runs the {runs} GEMV kernel ({served.label if served else 'none'}; the "
                        f"handle's GEMV layout is packed for its lp).")
        else:
            dispatch = (f"The {mmla} path runs its {mmla} GEMV kernel"
                        + (f", the {dot} path its {dot} one" if dot in paths else "")
                        + f": {dot} needs another CPU feature than {mmla}.")
        lines.append(
            f"verdict at M = 1: {'tie' if fewer is None else fewer + ' wins'} on instructions "
            f"per B byte ({float(ipb[dot]):.4f} for {dot} vs {float(ipb[mmla]):.4f}); modeled "
            f"B bytes/cycle: {mmla} faster on {', '.join(faster) or 'no core'}, {dot} faster on "
            f"{', '.join(slower) or 'no core'}. Why: at M = 1 both read one 16-byte B register "
            f"per MAC instruction (the {mmla} tile's second row is zero padding, so its useful "
            f"MACs per instruction equal {dot}'s)"
            + (", and both issue at the same MAC rate on every modeled core, so neither does "
               "more work per byte of B; " if same_rate else
               "; their MAC rates differ on some core; ")
            + f"what differs is the loads and registers: {dot} holds 4 columns per accumulator, "
            f"{mmla} 2 useful ones, so the tiles differ ({shape[dot]}; {shape[mmla]}). "
            + dispatch)
    return "\n".join(lines)


def _main_tile(instruction: str, regs: int, cpu: str) -> tuple:
    """(ep, hp, strategy) of the GEMM tile the generator emits for `instruction`."""
    from .tile_policy import solve    # late: the tile policy imports gen.tiling
    plan = solve(instruction, regs=regs, cpu=cpu)
    return plan.ep, plan.hp, plan.strategy
