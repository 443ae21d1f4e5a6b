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
"""
from __future__ import annotations

from dataclasses import dataclass

from . import gemv
from .isa import INSTRUCTIONS
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
