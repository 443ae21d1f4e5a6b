"""Small M on the SME paths (ARCH v92): which NEON GEMV kernel serves an SME path, and the cost
of its SME tile in the GEMV kernel's units for the driver's narrow-B rule.

At M = 1 the SME tile computes tr*S rows of which one is used (fp32 / bf16 2S rows, int8 S:
at SVL 512 1/32 and 1/16 of every MOPA); a NEON GEMV kernel (gen/gemv.py) uses every MAC.
An SME core implements the NEON features the kernels below need: FEAT_SME is OPTIONAL from
Armv9.2 (DDI0616), and Armv9.2 includes Armv8.7, by which FEAT_DotProd (mandatory from 8.4),
FEAT_I8MM and FEAT_BF16 (from 8.6) are mandatory (Arm ARM DDI0487, the Armv8.x extension
lists); LLVM's +sme implies +bf16 for the same reason. The dispatch table still asks for the
feature (an SME path with the GEMV kernel needs TS_FEAT_SME
and the GEMV kernel's bit, a second one without it needs TS_FEAT_SME alone), so a feature mask
is obeyed.

Which GEMV kernel (SME_GEMV): one that computes each result as the SME tile does, so small M
keeps the README's promise of the NEON GEMV paths (results of M <= max_m as the GEMM tile's):
  fmopa_f32 -> fmla_f32   one fused multiply-add per k, k in order (FMOPA non-widening and
                          FMLA: FPMulAdd per element, DDI0616 / DDI0487). FMOPA is an
                          SME ZA-targeting instruction: it behaves as if FPCR.DN were 1
                          (default NaN), FMLA propagates an input NaN: non-NaN results are
                          the same bits, a NaN result is a NaN of another payload;
  bfmopa    -> bfmmla     one BFDotAdd per consecutive k pair, in k order (BFMOPA, BFMMLA's
                          two steps, BFDOT: the same BFDotAdd, default NaN in all), so the
                          same bits; the bfmmla path's GEMV kernel (2x42x4);
  smopa     -> smmla      int32, exact (the i8mm path's 2x42x8, which serves M = 2 too; the
                          dotprod path's sdot 1x32x4 counts 11 instructions per k-step in
                          gen/gemv.py but its emitted loop runs 17 (one LDR Q per B register):
                          decode N = K = 4096 at SVL 512 on the bench model 615,118 cycles
                          against the SME tile's 598,079);
  usmopa    -> usmmla     int32, exact (its GEMV form sudot, 1x32x4).
fmopa_f16f32 (fp16 -> fp32) has none: the widening FMOPA adds each k pair's two products
with one rounding (FPDot) and then adds that to the accumulator unfused, FMLAL makes two fused
multiply-adds; the results differ, and no GEMV kernel of that order is generated.

The narrow-B rule (ts_pack_internal.h ts_use_gemv): the GEMV kernel runs when its panels over N
take no more instructions per k-step than the GEMM tile's panels. For an SME tile the cost of a
k-step is not its instruction count (a MOPA is S*S*k MACs): main_step is the tile's modeled
cycles for one GEMV k-step of one column panel (max of MOPAs / MOPA rate and streaming vectors
loaded / load rate) times the core's instructions per cycle, the GEMV kernel's instructions
in the same model. The figures are bench/sme_model.py's (APPLE_M4, sources there;
tests/test_gemv.py checks they are the same). The SME tile's cost per panel does not grow with
the SVL while its columns do: wide B keeps the tile at large SVLs (measured: README "SME
kernels", docs/PERFORMANCE.md "Decode on an SME core"); an SVL at which no N runs the GEMV
kernel gets none (gen/registry.py sme_dispatch_paths).
"""
from __future__ import annotations

import math
from fractions import Fraction

from .isa import SME_INSTRUCTIONS

# SME instruction -> the NEON instruction whose GEMV kernel serves its small M (module comment)
SME_GEMV = {"fmopa_f32": "fmla_f32", "bfmopa": "bfmmla", "smopa": "smmla", "usmopa": "usmmla"}

# bench/sme_model.py APPLE_M4: MOPAs per cycle, streaming vectors loaded per cycle, core IPC
SME_MOPA_PER_CYCLE = {"fmopa_f32": Fraction(1), "bfmopa": Fraction(1, 2),
                      "fmopa_f16f32": Fraction(1, 2), "smopa": Fraction(1, 2),
                      "usmopa": Fraction(1, 2)}
SME_LOADS_PER_CYCLE = Fraction(1)
SME_CORE_IPC = Fraction(4)


def sme_tile_cycles_per_k(instruction: str, tr: int, tc: int) -> Fraction:
    """Modeled cycles of one k-value of one ep x hp SME panel: tr*tc MOPAs and tr + tc vectors
    per instruction k-step of k values (whatever M is: the tile computes every row)."""
    k = SME_INSTRUCTIONS[instruction].k
    return max(Fraction(tr * tc, k) / SME_MOPA_PER_CYCLE[instruction],
               Fraction(tr + tc, k) / SME_LOADS_PER_CYCLE)


def sme_main_step(instruction: str, tr: int, tc: int, gemv_lp: int) -> int:
    """main_step of an SME path: its tile's cost of one GEMV k-step (gemv_lp k-values) of one
    column panel, in the GEMV kernel's instructions (cycles x core IPC), rounded up."""
    return math.ceil(sme_tile_cycles_per_k(instruction, tr, tc) * gemv_lp * SME_CORE_IPC)
