"""Tile choice for a CPU= option: the solver's ranking, checked against the modeled % of peak
on every core the option covers, and the maximin policy for CPU=generic when the solver's
choice misses a core's target.

Why a policy: the solver (gen.tiling) ranks tiles by bytes per MAC among those with enough
accumulators for every covered core (latency x MACs per cycle). For CPU=generic that can leave
no tile that runs well everywhere: bfmmla needs >= 20 accumulators on Neoverse V1 (latency 5 x
4 per cycle), and every such tile loads ~13 B registers per 24 MACs, more than Cortex-A510's
3-wide in-order issue feeds with its pointer updates (modeled ~60 % of peak there).

Policy (CPU=generic and the core classes of its run-time variants, gen.cores.CORE_CLASSES;
a named core keeps the solver's choice):
  1. The solver's first choice is estimated on every covered core (below). When it reaches
     every target (TARGETS: >= 97 % of peak on out-of-order cores, >= 80 % on in-order ones,
     the issue's goals), it is kept.
  2. Otherwise the choice is the maximin: the tile whose worst estimated % of peak over the
     covered cores is highest; ties go to fewer bytes per MAC, then the solver's order. The
     tiles weighed (bounded generation time): per accumulator count (any count, the latency
     rule relaxed) the solver's best-ranked tile, counts from most to fewest, stopping once a
     count's latency bound cannot beat the best worst case found. Why one tile per count: the
     out-of-order estimate depends on the count alone, and within a count the solver's own
     ranking (bytes, then load instructions per MAC) is its in-order proxy.
Estimates (fraction of a core's MAC peak):
  in-order cores  the issue model (gen.issue_model, llvm-mca's in-order rules) of the main loop
                  gen.emit generates for the tile: the searched loop that is emitted for the
                  solver's first choice; the best list-scheduled variant for the other tiles
                  (cheaper; the loop emitted for a chosen tile is searched and only gains);
  out-of-order    min(1, accumulators / (latency x MACs per cycle)): every accumulator takes
                  one MAC per k-step, so a k-step lasts at least one MAC latency; renaming and
                  three load pipes hide the loads (bench/kernels_mca.py measures 100 % for the
                  tiles with enough accumulators).
The latency bound applies to in-order cores as well; it is what the stopping rule uses.

Public API: choose(instruction, regs, cpu) -> Choice; solve(instruction, regs, cpu) -> TilePlan.
"""
from __future__ import annotations

from dataclasses import dataclass

from .cores import CORES, GENERIC, CoreModel
from .emit import main_loop_fractions
from .isa import INSTRUCTIONS
from .plan import TilePlan
from .tiling import DEFAULT_REGS, Candidate, candidates, covered_cores, plan_for

# Fraction of peak the issue asks for: in-order core -> 0.80, out-of-order -> 0.97
# (also bench/kernels_mca.py's TARGET).
TARGETS = {True: 0.80, False: 0.97}
_EPSILON = 1e-9


def latency_bound(core: CoreModel, instruction: str, accumulators: int) -> float:
    """Fraction of peak `accumulators` independent chains allow: each takes one MAC per
    latency, the core issues latency x MACs per cycle of them."""
    return min(1.0, accumulators / (core.latency(instruction) * core.throughput(instruction)))


@dataclass(frozen=True)
class Estimate:
    candidate: Candidate
    fractions: tuple[tuple[str, float], ...]   # (core, estimated fraction of peak)
    searched: bool                             # in-order figures from the searched loop

    @property
    def worst(self) -> tuple[str, float]:
        """(core, fraction) of the lowest estimate (the first such core on a tie)."""
        return min(self.fractions, key=lambda cf: cf[1])

    def meets_targets(self) -> bool:
        return all(value >= TARGETS[CORES[core].in_order] - _EPSILON
                   for core, value in self.fractions)

    def summary(self) -> str:
        core, value = self.worst
        figures = ", ".join(f"{c} {100 * v:.1f}" for c, v in self.fractions)
        return (f"{self.candidate.label} ({self.candidate.regs_c} accumulators, "
                f"{float(self.candidate.exact_bytes_per_mac):.4f} B/MAC): % of peak {figures}; "
                f"worst {100 * value:.1f} ({core})")


@dataclass(frozen=True)
class Choice:
    candidate: Candidate                   # the tile to generate
    first: Estimate | None                 # the solver's first choice (None: a named core)
    weighed: tuple[Estimate, ...]          # the maximin's tiles (() when the first is kept)
    policy: str                            # which rule chose, in one sentence


def estimate(c: Candidate, cpu: str, searched: bool) -> Estimate:
    inst = INSTRUCTIONS[c.instruction]
    in_order = main_loop_fractions(plan_for(c, cpu), cpu, search=searched)
    fractions = []
    for core in covered_cores(inst, cpu):
        if core.in_order and core.name not in in_order:
            continue    # an in-order core that never runs the instruction (gen.schedule.targets)
        bound = latency_bound(core, c.instruction, c.regs_c)
        value = min(bound, in_order[core.name]) if core.in_order else bound
        fractions.append((core.name, value))
    return Estimate(c, tuple(fractions), searched)


def _better(a: Estimate, b: Estimate, order: dict) -> bool:
    """Whether `a` beats `b` under the maximin: higher worst case, then fewer bytes per MAC,
    then the solver's order."""
    if abs(a.worst[1] - b.worst[1]) > _EPSILON:
        return a.worst[1] > b.worst[1]
    key = lambda e: (e.candidate.exact_bytes_per_mac, order[_tile(e.candidate)])
    return key(a) < key(b)


def _tile(c: Candidate) -> tuple:
    return c.ep, c.hp, c.strategy


def choose(instruction: str, regs: int = DEFAULT_REGS, cpu: str = GENERIC) -> Choice:
    """The tile `make gen` generates for `instruction` on `cpu` (see the module comment)."""
    ranked = candidates(instruction, regs, cpu)
    if cpu in CORES:
        return Choice(ranked[0], None, (), f"solver's choice for {cpu}")
    first = estimate(ranked[0], cpu, searched=True)
    if first.meets_targets():
        return Choice(ranked[0], first, (), "solver's choice: meets the targets on every core")
    pool = candidates(instruction, regs, cpu, min_accumulators=1)
    order = {_tile(c): k for k, c in enumerate(pool)}
    per_count: dict[int, Candidate] = {}
    for c in pool:
        per_count.setdefault(c.regs_c, c)
    cores = covered_cores(INSTRUCTIONS[instruction], cpu)
    best, weighed = first, []
    for count in sorted(per_count, reverse=True):
        bound = min(latency_bound(core, instruction, count) for core in cores)
        if bound < best.worst[1] - _EPSILON:
            break           # this and every smaller count cannot beat the best worst case
        c = per_count[count]
        e = first if _tile(c) == _tile(ranked[0]) else estimate(c, cpu, searched=False)
        weighed.append(e)
        if _better(e, best, order):
            best = e
    core, value = best.worst
    return Choice(best.candidate, first, tuple(weighed),
                  f"maximin: the solver's choice {ranked[0].label} misses a target "
                  f"({first.worst[0]} {100 * first.worst[1]:.1f} %); {best.candidate.label} "
                  f"has the highest worst-case % of peak of the {len(weighed)} tiles weighed "
                  f"({100 * value:.1f} on {core})")


def solve(instruction: str, regs: int = DEFAULT_REGS, cpu: str = GENERIC) -> TilePlan:
    """The plan `make gen` generates for `instruction` on `cpu`."""
    return plan_for(choose(instruction, regs, cpu).candidate, cpu)
