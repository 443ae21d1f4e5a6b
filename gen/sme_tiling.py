"""ZA-tiling solver for SME outer products: which arrangement of the ZA tiles a kernel uses.

An SME kernel's accumulators are the four 32-bit ZA tiles (gen.isa.ZA_TILES_32), each S x S
with S = SVL / 32 unknown until run time. A kernel arranges `tr x tc` of them (tr * tc <= 4)
into one C tile of ep = tr*S rows and hp = tc*S columns; ZA tile (r, c) is za(r*tc + c).s.
Per k-step it loads tr A vectors and tc B vectors (one streaming vector each: S rows or columns
times k elements, gen.isa.OuterProductInstruction) and issues tr * tc MOPAs, each reading one A
and one B vector.

Model (everything in units of S, so the choice is the same at every vector length):
  cost       bytes of A and B loaded per MAC = (tr + tc) * SVL_bytes / (tr * tc * S*S * k)
             = 4 * (tr + tc) / (tr * tc * k * S): the NEON solver's 1/ep + 1/hp
             (gen.tiling), which favours square arrangements: 2x2 loads 1 vector per MOPA,
             1x4 and 4x1 1.25, 1x2 1.5, 1x1 2.
  rows       a C row must fill whole streaming vectors in the type's output element type
             (`out_type`): a row of hp elements of b bytes is tc*S*b bytes; whole vectors
             (4*S bytes each) iff tc * b % 4 == 0. For 4-byte outputs (fp32, int32) every
             arrangement passes. For int8 outputs (the int8 GEMM types requantise their int32
             sums to int8, the uint8 x int8 one to uint8) only tc = 4 does: four int32 row vectors narrow (UZP1 .h then .b)
             into exactly one int8 vector, stored with one full-width ST1B; a 2-column-tile
             row would be half a vector, stored under a partial predicate. This is why Arm's
             int8-output SME kernels are 1VLx4VL (ACL's sme2_*_s8q_mopa_1VLx4VL, KleidiAI's
             *_1vlx4vl_* int8 kernels) while their fp32 ones are 2VLx2VL.
  tiles      every arrangement uses at most the four ZA.S tiles; using fewer only raises the
             cost.
Ranking: arrangements whose rows fill whole vectors first; then fewest bytes per MAC; then more
ZA tiles used; then fewer rows (tr: a smaller ep pads less on short M, e.g. GEMV); then tr, tc
(a fixed, deterministic order).

Result: fmopa_f32, fmopa_f16f32, bfmopa -> 2x2 (ep = hp = 2S); smopa, usmopa -> 1x4 (ep = S,
hp = 4S). `python3 -m gen tiles --arch v92` prints the ranking.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .isa import SME_INSTRUCTIONS, TYPE_BYTES, OuterProductInstruction
from .tiling import TilingError

VECTOR_BYTES_PER_S = 4      # a streaming vector is 4 * S bytes (S = SVL / 32)
# Instruction k-steps per panel k-step. With SME (not SME2) every LD1 fills one Z register, so
# a tr x tc step loads tr + tc vectors for tr * tc MOPAs. The panels therefore keep GROUP
# consecutive instruction k-steps of a row (column) side by side -- each row's GROUP words
# contiguous, i.e. the NEON panel layout with lp = GROUP * k -- and one LD4W (SVE structure
# load, legal in streaming mode: Arm DDI0487 LD4W; not in the "illegal when PSTATE.SM is 1"
# list) de-interleaves the 4 words of S rows into 4 vectors, one per instruction k-step:
# (tr + tc) loads per 4 * tr * tc MOPAs.
GROUP = 4


@dataclass(frozen=True)
class ZaCandidate:
    instruction: str
    tr: int                 # ZA tiles down (ep = tr * S rows)
    tc: int                 # ZA tiles across (hp = tc * S columns)
    whole_rows: bool        # a C row fills whole vectors in the output type
    bytes_per_mac_s: Fraction   # bytes of A and B per MAC, times S
    rank: int = 0
    why: str = ""

    @property
    def tiles(self) -> int:
        return self.tr * self.tc

    @property
    def label(self) -> str:
        return f"{self.tr}VLx{self.tc}VL"

    def sort_key(self) -> tuple:
        return (not self.whole_rows, self.bytes_per_mac_s, -self.tiles, self.tr, self.tc)


@dataclass(frozen=True)
class ZaPlan:
    """What the SME emitter needs: the arrangement and which ZA tile holds which block."""
    instruction: str
    tr: int
    tc: int
    notes: tuple[str, ...] = ()

    @property
    def inst(self) -> OuterProductInstruction:
        return SME_INSTRUCTIONS[self.instruction]

    @property
    def group(self) -> int:
        """Instruction k-steps per panel k-step (one LD4W per row / column block)."""
        return GROUP

    @property
    def lp(self) -> int:
        """Elements of a row per panel k-step: GROUP instruction k-steps of k each."""
        return self.inst.k * GROUP

    def tile(self, r: int, c: int) -> int:
        """ZA tile number of row block r, column block c."""
        return r * self.tc + c

    @property
    def shape_label(self) -> str:
        """ep x hp x lp with ep, hp in units of VL = S (the 32-bit lanes of a streaming vector)."""
        return f"{self.tr}vlx{self.tc}vlx{self.lp}"


def _instruction(name: str) -> OuterProductInstruction:
    if name not in SME_INSTRUCTIONS:
        raise TilingError(f"unknown SME instruction {name!r}: valid values are "
                          f"{', '.join(SME_INSTRUCTIONS)}")
    return SME_INSTRUCTIONS[name]


def whole_rows(inst: OuterProductInstruction, tc: int) -> bool:
    return tc * TYPE_BYTES[inst.out_type] % VECTOR_BYTES_PER_S == 0


def _why(c: ZaCandidate, best: ZaCandidate) -> str:
    if c == best:
        return (f"chosen: rows fill whole vectors ({c.whole_rows}), "
                f"{float(c.bytes_per_mac_s):.3f}/S bytes per MAC")
    labels = ("rows not whole vectors in the output type", "bytes per MAC (x S)",
              "ZA tiles used", "tile rows", "tile columns")
    for label, mine, theirs in zip(labels, c.sort_key(), best.sort_key()):
        if mine != theirs:
            return f"loses to {best.label} on {label}: {mine} vs {theirs}"
    return "identical to the choice"


def candidates(instruction: str) -> list[ZaCandidate]:
    """Every arrangement of the ZA tiles for `instruction`, best first."""
    inst = _instruction(instruction)
    found = []
    for tr in range(1, inst.za_tiles + 1):
        for tc in range(1, inst.za_tiles // tr + 1):
            cost = Fraction(VECTOR_BYTES_PER_S * (tr + tc), tr * tc * inst.k)
            found.append(ZaCandidate(inst.name, tr, tc, whole_rows(inst, tc), cost))
    found.sort(key=ZaCandidate.sort_key)
    best = found[0]
    return [ZaCandidate(c.instruction, c.tr, c.tc, c.whole_rows, c.bytes_per_mac_s, i,
                        _why(c, best)) for i, c in enumerate(found)]


def solve(instruction: str) -> ZaPlan:
    best = candidates(instruction)[0]
    inst = _instruction(instruction)
    notes = (
        f"{best.label}: ZA tiles za0.s-za{best.tiles - 1}.s as {best.tr} x {best.tc}, "
        f"ep = {best.tr}*S rows, hp = {best.tc}*S columns (S = SVL/32)",
        f"per k-step {best.tr} A + {best.tc} B vectors, {best.tiles} {inst.mnemonic}: "
        f"{float(best.bytes_per_mac_s):.3f}/S bytes per MAC",
        f"panel k-step = {GROUP} instruction k-steps (lp = {GROUP * inst.k}): one LD4W per "
        f"row / column block, {best.tr + best.tc} loads per {GROUP * best.tiles} "
        f"{inst.mnemonic}",
        f"a C row is {best.tc}*S {inst.out_type} = "
        f"{Fraction(best.tc * TYPE_BYTES[inst.out_type], VECTOR_BYTES_PER_S)} streaming "
        f"vector(s) of {VECTOR_BYTES_PER_S}*S bytes",
    )
    return ZaPlan(inst.name, best.tr, best.tc, notes)
