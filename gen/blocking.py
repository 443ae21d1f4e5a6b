"""Cache blocking of the macro-kernel (BLIS's KC and MC loops) from the per-core cache sizes of
gen.cores.MEMORY.

Following the analytical model of Low, Igual, Smith and Quintana-Orti, "Analytical Modeling Is
Enough for High-Performance BLIS", ACM TOMS 43(2), 2016: a KC x hp micro-panel of B stays in
L1D while the ep x KC micro-panels of A stream past it, so KC is chosen for the B micro-panel
to fill half of L1D (the other half for the A micro-panel and C); an MC x KC block of packed A
stays in L2 while the B micro-panels stream, so MC is chosen for the A block to fill half of
L2. NC (the B block held in L3) is the task's whole column range: no L3 is modeled.

For CPU=generic the smallest L1D and L2 of the modeled cores are used (blocks sized for the
smallest cache still fit the larger ones; K blocks only cost one extra accumulator load each).
"""
from __future__ import annotations

from .cores import MEMORY, cores_for
from .isa import INSTRUCTIONS, SME_INSTRUCTIONS, TYPE_BYTES


def cache_sizes(cpu: str) -> tuple[int, int]:
    """(L1D bytes, L2 bytes) the blocks of a CPU= build are sized for."""
    memories = [MEMORY[c.name] for c in cores_for(cpu)]
    return min(m.l1d.size for m in memories), min(m.l2.size for m in memories)


def block_sizes(cpu: str, instruction: str, ep: int, hp: int, lp: int) -> tuple[int, int]:
    """(KC in k-steps, MC in ep-row panels) for one kernel of a CPU= build; both >= 1."""
    l1, l2 = cache_sizes(cpu)
    inst = INSTRUCTIONS.get(instruction) or SME_INSTRUCTIONS[instruction]   # NEON or SME
    elem = TYPE_BYTES[inst.a_type]
    kc_steps = max(1, (l1 // 2) // (hp * lp * elem))
    mc_panels = max(1, (l2 // 2) // (kc_steps * lp * elem * ep))
    return kc_steps, mc_panels
