"""The kernel plan: what the tiling solver decides and the emitter/scheduler consume.

A plan fixes, for one MAC instruction, the register tile ep x hp x lp and which vector
registers hold A, B and C. The packed panel layouts follow from it (see `a_layout`/`b_layout`).

Operand residency (`strategy`):
  "resident"  every A and B register of a k-step is live at once
              (len(a_regs) == inst.a_regs(ep) and len(b_regs) == inst.b_regs(hp)).
  "stream_b"  A is resident; the k-step's B registers are streamed through the smaller rotating
              set `b_regs` (B chunk j lives in b_regs[j % len(b_regs)]), each chunk loaded after
              the MACs of the chunk that last used its register (MNN's bfmmla 12x8).
  "stream_a"  the same with the roles of A and B swapped.
  "double_b"  A resident; B double-buffered: b_regs holds two banks of inst.b_regs(hp)
              registers, k-step s uses bank s % 2, so step s+1's B loads while step s
              multiplies (an in-order core cannot otherwise hide the load of an operand every
              MAC group reads, see gen/tiling.py).
  "double_a"  the same with the roles of A and B swapped.
  "stream_a_double_b", "stream_b_double_a"
              one operand streamed, the other double-buffered.
  "double"    both double-buffered.
The streamed or the single-buffered operand is the outer loop of the MAC order
(`outer_operand`), the other one is read by every group of it.
"""
from __future__ import annotations

from dataclasses import dataclass, field, asdict

from .isa import INSTRUCTIONS, MacInstruction

# strategy -> (how A is held, how B is held)
STRATEGY_MODES = {
    "resident": ("resident", "resident"), "stream_a": ("stream", "resident"),
    "stream_b": ("resident", "stream"), "double_a": ("double", "resident"),
    "double_b": ("resident", "double"), "stream_a_double_b": ("stream", "double"),
    "stream_b_double_a": ("double", "stream"), "double": ("double", "double")}
STRATEGIES = tuple(STRATEGY_MODES)


def operand_mode(strategy: str, operand: str) -> str:
    """How `strategy` holds operand "a" or "b": "resident", "stream" or "double"."""
    return STRATEGY_MODES[strategy]["ab".index(operand)]


def outer_operand(strategy: str, a_chunks: int, b_chunks: int) -> str:
    """The operand whose chunks run in the outer loop of the MAC order: the streamed one, else
    the single-buffered one, else (both resident) the one with more chunks, B on a tie."""
    modes = {x: operand_mode(strategy, x) for x in "ab"}
    for x in "ab":
        if modes[x] == "stream":
            return x
    for x, other in (("a", "b"), ("b", "a")):
        if modes[other] == "double" and modes[x] != "double":
            return x
    return "a" if a_chunks > b_chunks else "b"


@dataclass(frozen=True)
class TilePlan:
    instruction: str            # key of gen.isa.INSTRUCTIONS
    ep: int                     # C rows per tile (M direction, rows of A)
    hp: int                     # C columns per tile (N direction, columns of B)
    lp: int                     # k per step = the instruction's k
    strategy: str               # one of STRATEGIES
    a_regs: tuple[int, ...]     # vector register numbers holding A (live set)
    b_regs: tuple[int, ...]     # vector register numbers holding B (live set)
    c_regs: tuple[int, ...]     # accumulators, row-block-major: see c_reg_for()
    bytes_per_mac: float
    cpu: str = "generic"
    edge: str = ""              # how the driver handles M/N remainders (explained)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def inst(self) -> MacInstruction:
        return INSTRUCTIONS[self.instruction]

    @property
    def regs_total(self) -> int:
        return len(self.a_regs) + len(self.b_regs) + len(self.c_regs)

    def c_reg_for(self, row_block: int, col_block: int) -> int:
        """Accumulator register of C row block `row_block` (inst.c_rows_per_reg rows) and
        column block `col_block` (inst.c_cols_per_reg columns)."""
        per_row = self.hp // self.inst.c_cols_per_reg
        return self.c_regs[row_block * per_row + col_block]

    @property
    def a_layout(self) -> str:
        return (f"per k-step: {self.ep} rows x {self.lp} {self.inst.a_type}, row-major "
                f"(row r's {self.lp} k-values contiguous)")

    @property
    def b_layout(self) -> str:
        return (f"per k-step: {self.hp} columns x {self.lp} {self.inst.b_type}, column-major "
                f"(column c's {self.lp} k-values contiguous)")

    def to_json(self) -> dict:
        d = asdict(self)
        d.update(regs_a=len(self.a_regs), regs_b=len(self.b_regs), regs_c=len(self.c_regs))
        return d
