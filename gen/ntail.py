"""Column-tail (N-tail) kernels: narrower tiles of the same instruction for the last B panel.

Why: the driver pads N to a multiple of the GEMM tile's hp, so the last column panel of a
call computes hp columns for N mod hp real ones (fp32 8x12, N = 512: 43 panels, the last
computing 12 columns for 8, 0.78 % of the MACs wasted). A kernel of the same instruction and
the same rows (ep) whose hp still holds the remainder computes only what it must. The results
are the same bits: each output element is the same chain of MAC instructions over k in the
same order (fp32: the same fused multiply-adds), whatever the tile's width.

  tiles       for a GEMM tile ep x hp: per narrower width hp' < hp, the solver's best-ranked
              tile ep x hp' (gen.tiling.candidates for the same CPU option: enough
              accumulators for every covered core, loads hidden on the in-order ones), so a
              tail kernel runs its MACs at the main kernel's rate and costs hp' / hp of it per
              k-step; widths no feasible tile has get no kernel.
  dispatch    the engine (ts_engine.c) runs the last B panel of a call whose N mod hp fits a
              tail kernel on the narrowest such kernel, with that panel packed hp' columns wide
              (ts_packed_b.tail_hp): B packed inside the call, and prepacked handles when every
              path reading the same panels (the core-class variants share these kernels,
              gen/registry.py) has a tail of that width (ts_cpu.c ts_handle_tail_hp); else
              the handle keeps hp and pads.
  instructions
              N_TAIL_INSTRUCTIONS, a generator parameter: each listed instruction's GEMM
              kernels (generic build and CPU= builds) get their tails, with the same epilogue
              variants as the main kernel (gen.epilogue: a fused requantisation on the last K
              block needs the tail's _requant). Listed are the instructions of a dispatch path
              whose whole operations lose to the padding: fmla fp32 8x12 and sdot 8x12x4
              (int8 -> int8 on Cortex-A55), N = 512: 8 of 12 columns in the last panel (issue
              11's GEMM targets); smlal 8x12x1, the int8 path of Armv8.0 cores (Cortex-A53 /
              A57 / A72): 64-channel convs (ResNet-50) compute 4 of every 12 columns of their
              last panel for nothing. (udot and fmlal have the same 8x12 tile and no workload
              that needs it yet: each listed instruction costs a kernel family per tail width.)
"""
from __future__ import annotations

from .tiling import DEFAULT_REGS, Candidate, candidates

N_TAIL_INSTRUCTIONS = ("fmla_f32", "sdot", "smlal")


def tails(instruction: str, ep: int, hp: int, regs: int = DEFAULT_REGS,
          cpu: str = "generic") -> list[Candidate]:
    """The tail tiles of `instruction`'s GEMM tile ep x hp, narrowest first ([] when the
    instruction is not in N_TAIL_INSTRUCTIONS or no narrower tile of ep rows is feasible)."""
    if instruction not in N_TAIL_INSTRUCTIONS:
        return []
    best: dict[int, Candidate] = {}
    for c in candidates(instruction, regs, cpu):      # best first
        if c.ep == ep and c.hp < hp:
            best.setdefault(c.hp, c)
    return [best[w] for w in sorted(best)]
