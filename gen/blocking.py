"""Cache blocking of the macro-kernel (BLIS's KC and MC loops) from the per-core cache sizes of
gen.cores.MEMORY.

Following the analytical model of Low, Igual, Smith and Quintana-Orti, "Analytical Modeling Is
Enough for High-Performance BLIS", ACM TOMS 43(2), 2016: a KC x hp micro-panel of B stays in
L1D while the ep x KC micro-panels of A stream past it, so KC is chosen for the B micro-panel
to fill half of L1D (the other half for the A micro-panel and C); an MC x KC block of packed A
stays in L2 while the B micro-panels stream, so MC is chosen for the A block to fill half of
L2. NC (the B block held in L3) is the task's whole column range: no L3 is modeled.

For CPU=generic the smallest L1D and L2 of the modeled cores are used (blocks sized for the
smallest cache still fit the larger ones). Fitting is not enough beyond L2, though: the B block
(KC x N) is re-read from memory once per M block, so an M block sized for the A55's 128 KB L2
(48 fp32 rows) makes an N2 / V1 (1 MB L2) read B eleven times at 512^3 where an A block of
half its own L2 would need two passes. So a CPU=generic build also carries, for each
core class whose blocks (`class_blocks`) differ from the generic ones, a block variant of the
path (`block_variant_classes`: the same kernel, that class's KC / MC / unsplit K), chosen at run
time like a kernel variant (gen/drivers.py with_blocks, ts_cpu.c). A class's smallest L2 still
need not be the core's (A710's 512 KB for an N2 or V1 that may have 1 MB), so each path also
carries the sizes its blocks assume (run_time_facts), from which the engine re-derives them by
these rules for the sizes a context gives (ts_context_set_cache_sizes, drivers/src/ts_blocks.c).

A K block is not free: every extra block makes each tile load and store its accumulators once
more and adds a kernel call (measured: single-thread fp32 512^3 split 2 x 256 lost 0.5-1 % of
the modeled cycles). So K is split only when the split buys something (`whole_k_steps`):
KC's L1 role (B micro-panel reused across A micro-panels) matters only where L2 cannot stream
both micro-panels at the kernel's peak, and with K whole the M block keeps its height (MC
panels, so B is re-read as often as with the split) as long as that A block and one B
micro-panel fit the L2 capacity. The M block keeps MC panels (more only below KC k-steps, at
MC x KC's bytes: drivers/src/ts_engine.c m_block_panels), and the engine runs the tiles of
each A panel with a group of B panels whose results fill whole lines of C (ts_engine.c
b_group), two groups (the one in use and the next) in at most a quarter of L2: with the A
block's half that leaves 2 of an 8-way L2's ways to C's lines, as in Low et al.'s L2 rule
(C_Ac = W_L2 - 1 - the ways of two B micro-panels: one way for C). Measured on the bench's N2
model (1 MiB, 8-way, true LRU), int8 prefill M=512 N=K=4096 with blocks for its caches
(ts_context_set_cache_sizes): an A block filling the L2 (30 panels, the whole-K M block these
rules gave before) moved 235 MiB from DRAM, 22 panels 134 MiB, 16 panels B panel after B panel
126 MiB (C's lines open across 8 B panels, rows of C 4096 bytes apart sharing 32 of the 2048
sets, crowded out by A), 16 panels in groups of 8 B panels 118 MiB (A and two 256 KiB groups
fill all 8 ways), in groups of 4 108 MiB.

The SME outer products (`SME_INSTRUCTIONS`) keep their accumulators in ZA, not in registers
that a KC-deep B micro-panel must keep busy from L1: a K split buys them nothing and costs
every tile, per extra block, a kernel call (SMSTART / SMSTOP, the lazy-save check), the ZA
load of its accumulator tile (2S or 4S slice loads) and the store of its C rows -- at SVL 512
and GEMM 512^3 the engine's L1-sized KC made 2-4 blocks (bench --sme). So their K stays whole
while the packed panels a K block streams, the A block of MC panels and one B panel over the
whole K, fit `SME_L2_BYTES`; beyond that it splits into blocks of at most KC (the M
block: MC, or below KC more as for any path; a whole K of KC up to that limit takes the most
panels whose A block plus one B panel fit the same SME_L2_BYTES, ts_engine.c m_block_panels).
SME_L2_BYTES is an assumption, not a modeled cache (gen/cores.py has no SME core): that the
SME unit streams its panels from an L2 of at least 2 MiB (Apple M4, the only SME core with
published figures, is reported with a 16 MB L2 shared by its P cluster, which the cluster's
SME unit loads from). Results do not depend on the split (fp32: each output's MOPAs in k
order either way; the accumulators pass through C exactly).
"""
from __future__ import annotations

from .cores import CORE_CLASSES, GENERIC, MEMORY, cores_for
from .isa import INSTRUCTIONS, SME_INSTRUCTIONS, TYPE_BYTES

# Assumption (module docstring): the L2 bytes the SME paths' packed panels of one K block may
# take, the A block of MC panels plus one B panel.
SME_L2_BYTES = 2 << 20


def cache_sizes(cpu: str) -> tuple[int, int]:
    """(L1D bytes, L2 bytes) the blocks of a CPU= build are sized for."""
    memories = [MEMORY[c.name] for c in cores_for(cpu)]
    return min(m.l1d.size for m in memories), min(m.l2.size for m in memories)


def _element_bytes(instruction: str) -> int:
    """Bytes of one A element of a NEON (gen.isa INSTRUCTIONS) or SME outer-product
    (SME_INSTRUCTIONS) instruction."""
    inst = INSTRUCTIONS.get(instruction) or SME_INSTRUCTIONS[instruction]
    return TYPE_BYTES[inst.a_type]


def block_sizes(cpu: str, instruction: str, ep: int, hp: int, lp: int) -> tuple[int, int]:
    """(KC in k-steps, MC in ep-row panels) for one kernel of a CPU= build; both >= 1."""
    l1, l2 = cache_sizes(cpu)
    elem = _element_bytes(instruction)
    kc_steps = max(1, (l1 // 2) // (hp * lp * elem))
    mc_panels = max(1, (l2 // 2) // (kc_steps * lp * elem * ep))
    return kc_steps, mc_panels


def streams_from_l2(cpu: str, instruction: str, ep: int, hp: int, lp: int) -> bool:
    """Whether every core of a CPU= build that has the instruction can feed the kernel its A and
    B micro-panels from L2 at the kernel's peak: (ep + hp) * lp * elem bytes per k-step within
    the cycles of one k-step at the MAC peak (ep * hp * lp MACs at throughput x MACs per
    instruction, gen/cores.py) times the L2 -> L1D fill bandwidth (MEMORY). The SME outer
    products have no core model (no llvm-mca SME model, gen/cores.py has no SME unit): false
    (whole_k_steps gives them their own rule)."""
    if instruction in SME_INSTRUCTIONS:
        return False
    inst = INSTRUCTIONS[instruction]
    elem = TYPE_BYTES[inst.a_type]
    for core in cores_for(cpu):
        if not core.has(inst.feature):
            continue
        cycles = ep * hp * lp / (core.throughput(instruction) * inst.macs)
        if (ep + hp) * lp * elem > cycles * MEMORY[core.name].l2_bytes_per_cycle:
            return False
    return True


def whole_k_steps(cpu: str, instruction: str, ep: int, hp: int, lp: int) -> int:
    """The most k-steps a call runs without splitting K: KC (block_sizes) when the kernel needs
    L1 reuse of its B micro-panel (streams_from_l2 false); otherwise the largest K for which an
    A block of MC panels over the whole K plus one B micro-panel fit the build's L2
    ((MC * ep + hp) * K * elem <= L2; Low et al. target half of L2 for the A block to leave room
    for the streaming B micro-panels; a whole-K block may fill the rest). The SME outer
    products: the same with L2 = SME_L2_BYTES (module docstring: ZA holds the accumulators, so
    only the panels' L2 footprint limits K). Never below KC."""
    kc_steps, mc_panels = block_sizes(cpu, instruction, ep, hp, lp)
    elem = _element_bytes(instruction)
    if instruction in SME_INSTRUCTIONS:
        return max(kc_steps, SME_L2_BYTES // ((mc_panels * ep + hp) * lp * elem))
    if not streams_from_l2(cpu, instruction, ep, hp, lp):
        return kc_steps
    _, l2 = cache_sizes(cpu)
    return max(kc_steps, l2 // ((mc_panels * ep + hp) * lp * elem))


def class_blocks(cpu: str, instruction: str, ep: int, hp: int, lp: int) -> tuple[int, int, int]:
    """(KC, MC, the longest unsplit K) of a kernel for a CPU= build or a core class: what a
    dispatch path carries (ts_path kc_steps, mc_panels, kw_steps)."""
    return (*block_sizes(cpu, instruction, ep, hp, lp), whole_k_steps(cpu, instruction, ep, hp, lp))


def run_time_facts(cpu: str, instruction: str, ep: int, hp: int, lp: int) -> tuple[int, int, int, int]:
    """What the engine needs to re-derive a path's blocks for other cache sizes at run time
    (drivers/src/ts_blocks.c, ts_context_set_cache_sizes): (the L1D and L2 bytes the build's
    blocks were sized for, the A element's bytes, whether the longest unsplit K comes from the
    L2 fit: streams_from_l2). The SME outer products keep their blocks (SME_L2_BYTES, not a core's
    cache): all 0."""
    if instruction in SME_INSTRUCTIONS:
        return 0, 0, 0, 0
    l1, l2 = cache_sizes(cpu)
    return l1, l2, _element_bytes(instruction), int(streams_from_l2(cpu, instruction, ep, hp, lp))


def block_variant_classes(instruction: str, ep: int, hp: int, lp: int) -> list[str]:
    """The core classes (gen.cores.CORE_CLASSES, in order) whose cores get other blocks than a
    CPU=generic build's for this kernel: a generic build gives them a block variant of the
    path. SME outer products: none (their paths are chosen by streaming vector length, not by
    core class)."""
    if instruction in SME_INSTRUCTIONS:
        return []
    generic = class_blocks(GENERIC, instruction, ep, hp, lp)
    return [cls for cls in CORE_CLASSES
            if class_blocks(cls, instruction, ep, hp, lp) != generic]
