"""Register-tiling solver: picks the ep x hp x lp tile and the register map for one MAC instruction.

Model (GEMM C[M][N] += A[M][K] * B[K][N], tiled into ep x hp blocks of C, k-step lp = inst.k):
  cost        bytes of A and B loaded per multiply-accumulate, inst.bytes_per_mac(ep, hp)
              = (ep + hp) * operand_bytes / (ep * hp): falls as 1/ep + 1/hp
              (seed 001, section 通用矩阵乘实现: memory traffic of an ep x hp tiling).
  registers   accumulators inst.c_regs(ep, hp) + live A + live B <= budget (32 NEON registers).
  residency   "resident"  all A and B registers of a k-step live: inst.a_regs(ep) + inst.b_regs(hp);
              "stream_b"  A resident, the k-step's B registers rotate through a set of s >= 2;
              "stream_a"  B resident, A rotates. Streaming is what lets a larger tile fit
              (MNN's bfmmla 12x8, seed 001 section GemmBF16实现);
              "double_b"  B double-buffered (two banks, k-step s in bank s % 2), A resident;
              "double_a", "stream_a_double_b", "stream_b_double_a", "double" likewise.
              Resident is offered when it fits and hides its refills; otherwise every other
              form that does.
  MAC order   the streamed (else the single-buffered, else the longer) operand is the outer
              loop: each of its chunks is read by one contiguous group of MACs; the other
              (inner) operand is read by every group.
  refills     an in-order core issues the load that refills a register after the MACs that
              last read it, and the refilled value must arrive before its first read: at least
              refill_gap_needed = refill latency x MACs per cycle MACs must issue in between
              (gen.cores.CoreModel.refill_latency: the `ld1`/`ldr` the kernels use there).
              Outer operand, set of s registers (s divides its register count, so chunk j of
              every k-step maps to register j % s and the rotation runs on into the next
              k-step): the MAC groups of the s - 1 chunks in between (outer_gap). Inner
              operand single-buffered: only the groups of the last outer chunk after it and of
              the next k-step's first outer chunk before it (inner_gap), usually too few;
              double-buffered: a whole k-step. An out-of-order core renames the register and
              issues the load early, so none of this applies there (s = 2 suffices).
  latency     accumulators >= core.min_accumulators(inst) (latency x MACs per cycle) for every
              core the CPU choice covers that has the instruction (gen.cores.cores_for).
  by-element  row forms read A by element: A must live in v0..v(inst.a_index_regs - 1).
  loads       a partly filled last A or B register (inst.tile_ok allows it) must take one
              load: 1, 2, 4, 8 or 16 bytes (LDR B/H/S/D/Q, Arm ARM C7.2 "LDR (immediate,
              SIMD&FP)"); e.g. 3 fp32 rows (12 bytes) would need two loads.
Ranking: fewest bytes per MAC; then, when an in-order core is covered, fewest load instructions
per MAC (load_instructions: each costs an issue slot there, and an `ld1` a pointer advance in
the loop's control window); then fewest registers; then the squarer tile (|ep - hp|); then
fewer A registers, smaller ep, strategy name (a fixed, deterministic order).

Public API (the kernel generator codes against it):
  solve(instruction, regs=32, cpu="generic") -> gen.plan.TilePlan
  candidates(instruction, regs=32, cpu="generic") -> list[Candidate], best first
  TilingError(ValueError)
"""
from __future__ import annotations

from dataclasses import dataclass, asdict
from fractions import Fraction

from .cores import CoreModel, check_cpu, cores_for
from .isa import INSTRUCTIONS, NUM_VREGS, TYPE_BYTES, MacInstruction
from .plan import STRATEGIES, TilePlan, operand_mode, outer_operand

DEFAULT_REGS = NUM_VREGS
# AAPCS64 (Arm IHI 0055, "SIMD and Floating-Point registers"): v8-v15 are callee-saved
# (their low 64 bits); all other vector registers are caller-saved.
CALLEE_SAVED = frozenset(range(8, 16))
MIN_STREAM = 2
LD1_MAX_REGS = 4      # LD1 (multiple structures) loads 1 to 4 consecutive registers
# Sizes one SIMD&FP load (LDR Bt/Ht/St/Dt/Qt) transfers, in bytes.
LOAD_BYTES = frozenset({1, 2, 4, 8, 16})


class TilingError(ValueError):
    """Bad arguments, or no tile fits the constraints."""


@dataclass(frozen=True)
class Candidate:
    instruction: str
    ep: int
    hp: int
    lp: int
    strategy: str               # one of gen.plan.STRATEGIES
    regs_a: int                 # live A registers (the rotating set when streaming A)
    regs_b: int
    regs_c: int
    bytes_per_mac: float
    rank: int = 0               # 0 = the solver's choice
    why: str = ""               # why it is ranked where it is
    stream_note: str = ""       # how the stream size was chosen ("" when resident)
    loads_per_mac: Fraction = Fraction(0)   # load instructions per MAC, counted when an
                                # in-order core is covered (see load_instructions)

    @property
    def regs_total(self) -> int:
        return self.regs_a + self.regs_b + self.regs_c

    @property
    def macs_per_byte(self) -> float:
        return 1.0 / self.bytes_per_mac

    @property
    def exact_bytes_per_mac(self) -> Fraction:
        inst = INSTRUCTIONS[self.instruction]
        return Fraction((self.ep + self.hp) * inst.operand_bytes, self.ep * self.hp)

    def sort_key(self) -> tuple:
        return (self.exact_bytes_per_mac, self.loads_per_mac, self.regs_total,
                abs(self.ep - self.hp), self.regs_a, self.ep, self.hp,
                STRATEGIES.index(self.strategy))

    @property
    def label(self) -> str:
        return f"{self.ep}x{self.hp}x{self.lp} {self.strategy}"

    def to_json(self) -> dict:
        d = asdict(self)
        d.update(regs_total=self.regs_total, macs_per_byte=round(self.macs_per_byte, 4),
                 bytes_per_mac=round(self.bytes_per_mac, 4),
                 loads_per_mac=round(float(self.loads_per_mac), 4))
        return d


# ---- argument checks ----------------------------------------------------------------------

def _instruction(name) -> MacInstruction:
    if name not in INSTRUCTIONS:
        raise TilingError(f"unknown instruction {name!r}: valid values are "
                          f"{', '.join(INSTRUCTIONS)}")
    return INSTRUCTIONS[name]


def check_regs(regs) -> int:
    if isinstance(regs, bool) or not isinstance(regs, int):
        raise TilingError(f"register budget must be an integer, got {regs!r}")
    if not 1 <= regs <= NUM_VREGS:
        raise TilingError(f"register budget {regs} out of range: AArch64 has {NUM_VREGS} "
                          f"vector registers (use 1..{NUM_VREGS})")
    return regs


def covered_cores(inst: MacInstruction, cpu: str) -> list[CoreModel]:
    """The core models `cpu` covers that have `inst` (the ones whose constraints apply)."""
    try:
        check_cpu(cpu)
    except ValueError as e:
        raise TilingError(str(e)) from None
    cores = [c for c in cores_for(cpu) if c.has(inst.feature)]
    if not cores:
        raise TilingError(f"CPU {cpu!r} does not have {inst.feature} ({inst.name} needs it)")
    return cores


def required_accumulators(inst: MacInstruction, cores: list[CoreModel]) -> int:
    return max(c.min_accumulators(inst.name) for c in cores)


# ---- load hiding ----------------------------------------------------------------------------

def pair_macs(inst: MacInstruction, ep: int, hp: int) -> list[list[int]]:
    """MACs of one k-step that read A chunk a and B chunk b, as [a][b] (a chunk = one operand
    register's worth of the k-step)."""
    counts = [[0] * inst.b_regs(hp) for _ in range(inst.a_regs(ep))]
    for rb in range(ep // inst.c_rows_per_reg):
        for cb in range(hp // inst.c_cols_per_reg):
            a = rb * inst.c_rows_per_reg // inst.a_rows_per_reg
            b = cb * inst.c_cols_per_reg // inst.b_cols_per_reg
            counts[a][b] += 1
    return counts


def _oriented(inst, ep, hp, outer: str) -> list[list[int]]:
    """pair_macs indexed [outer chunk][inner chunk]."""
    counts = pair_macs(inst, ep, hp)
    return counts if outer == "a" else [list(col) for col in zip(*counts)]


def refill_gap_needed(inst: MacInstruction, cores: list[CoreModel]) -> int:
    """MACs that must issue between the last read of an operand register and the first read
    of its refilled value so the refill load lands in time on every in-order core: refill
    latency x MACs per cycle (gen.cores.CoreModel.refill_latency). 0 when no core is
    in-order: an out-of-order core renames the register and issues the load early."""
    return max([-(-c.refill_latency(inst.name) * c.throughput(inst.name) // 1)
                for c in cores if c.in_order], default=0)


def outer_gap(inst, ep, hp, outer: str, size: int) -> int:
    """MACs between the last read of an outer chunk j and the first read of the chunk that
    refills its register `size` chunks later (j + size, into the next k-step when past the
    last; `size` divides the chunk count): the MAC groups of the size - 1 chunks in between,
    each outer chunk being read by one contiguous group (the worst j counts)."""
    groups = [sum(row) for row in _oriented(inst, ep, hp, outer)]
    n = len(groups)
    return min(sum(groups[(j + k) % n] for k in range(1, size)) for j in range(n))


def inner_gap(inst, ep, hp, outer: str) -> int:
    """MACs between the last read of a single-buffered inner chunk in k-step s and its first
    read in s+1: the MAC groups of the last outer chunk of s that follow it and of the first
    outer chunk of s+1 that precede it (the worst inner chunk counts)."""
    counts = _oriented(inst, ep, hp, outer)
    first, last = counts[0], counts[-1]
    return min(sum(last[i + 1:]) + sum(first[:i]) for i in range(len(first)))


def stream_size(inst, cores, ep, hp, streamed: str):
    """Smallest rotating-set size for streaming operand `streamed` ("a" or "b"), or None when
    no size below the operand's register count works (then the operand stays resident)."""
    chunks = inst.b_regs(hp) if streamed == "b" else inst.a_regs(ep)
    need = refill_gap_needed(inst, cores)
    for size in range(MIN_STREAM, chunks):
        if chunks % size == 0 and outer_gap(inst, ep, hp, streamed, size) >= need:
            return size
    return None


def _stream_note(inst, cores, ep, hp, streamed, size) -> str:
    chunks = inst.b_regs(hp) if streamed == "b" else inst.a_regs(ep)
    gap = outer_gap(inst, ep, hp, streamed, size)
    in_order = [c for c in cores if c.in_order]
    why = "; ".join(f"{c.name}: {gap} MACs at {c.throughput(inst.name)}/cycle >= "
                    f"{c.refill_latency(inst.name)}-cycle refill load" for c in in_order)
    return (f"{streamed.upper()} streamed: {chunks} registers per k-step rotate through {size} "
            f"(chunk j -> set[j % {size}], {size} divides {chunks}); each refill load issues "
            f"after the last MAC reading its register and lands while the other {size - 1} "
            f"chunk(s) are multiplied"
            + (f" ({why})" if why else "")
            + "; out-of-order cores rename the register, so the load also issues early there.")


def _double_note(inst, cores, doubled: str) -> str:
    in_order = ", ".join(c.name for c in cores if c.in_order)
    return (f"{doubled.upper()} double-buffered: two banks of {doubled.upper()} registers, k-step "
            f"s uses bank s % 2, so the next k-step's {doubled.upper()} loads during a whole "
            f"k-step; single-buffered, every MAC group reads it and its refill could not land "
            f"in time on {in_order}.")


# ---- enumeration ----------------------------------------------------------------------------

def _tile_options(inst, ep, hp, regs, cores):
    """(strategy, regs_a, regs_b, note) for tile ep x hp within `regs`. Resident when it fits
    and hides its refills; otherwise every streamed and (for in-order cores) double-buffered
    variant that does."""
    chunks = {"a": inst.a_regs(ep), "b": inst.b_regs(hp)}
    nc = inst.c_regs(ep, hp)
    need = refill_gap_needed(inst, cores)
    fits = lambda ra, rb: ra + rb + nc <= regs
    outer = outer_operand("resident", chunks["a"], chunks["b"])
    if (fits(chunks["a"], chunks["b"])
            and outer_gap(inst, ep, hp, outer, chunks[outer]) >= need
            and inner_gap(inst, ep, hp, outer) >= need):
        yield "resident", chunks["a"], chunks["b"], ""
        return
    for outer, inner in (("a", "b"), ("b", "a")):
        size = stream_size(inst, cores, ep, hp, outer)
        sets = {outer: size, inner: chunks[inner]}
        if size and inner_gap(inst, ep, hp, outer) >= need and fits(sets["a"], sets["b"]):
            yield (f"stream_{outer}", sets["a"], sets["b"],
                   _stream_note(inst, cores, ep, hp, outer, size))
    if not need:
        return                  # double buffering only helps an in-order core
    macs_per_step = sum(map(sum, pair_macs(inst, ep, hp)))
    for outer, inner in (("a", "b"), ("b", "a")):
        if macs_per_step < need:
            break
        doubled = {inner: 2 * chunks[inner]}
        note = _double_note(inst, cores, inner)
        if outer_gap(inst, ep, hp, outer, chunks[outer]) >= need:
            sets = {outer: chunks[outer], **doubled}
            if fits(sets["a"], sets["b"]):
                yield f"double_{inner}", sets["a"], sets["b"], note
        size = stream_size(inst, cores, ep, hp, outer)
        if size:
            sets = {outer: size, **doubled}
            if fits(sets["a"], sets["b"]):
                yield (f"stream_{outer}_double_{inner}", sets["a"], sets["b"],
                       _stream_note(inst, cores, ep, hp, outer, size) + " " + note)
    if macs_per_step >= need and fits(2 * chunks["a"], 2 * chunks["b"]):
        yield ("double", 2 * chunks["a"], 2 * chunks["b"],
               _double_note(inst, cores, "a") + " " + _double_note(inst, cores, "b"))


def last_register_bytes(inst: MacInstruction, ep: int, hp: int) -> tuple[int, int]:
    """Bytes per k-step in the last A register and in the last B register of a tile."""
    a_rows = ep - (inst.a_regs(ep) - 1) * inst.a_rows_per_reg
    b_cols = hp - (inst.b_regs(hp) - 1) * inst.b_cols_per_reg
    return a_rows * inst.k * inst.operand_bytes, b_cols * inst.k * TYPE_BYTES[inst.b_type]


def _single_loads(inst: MacInstruction, ep: int, hp: int) -> bool:
    return all(n in LOAD_BYTES for n in last_register_bytes(inst, ep, hp))


def load_instructions(inst: MacInstruction, ep: int, hp: int, strategy: str) -> int:
    """Load instructions per k-step: one per chunk of a resident or streamed operand (each is
    refilled after its own last read), one per LD1_MAX_REGS chunks of a double-buffered one
    (a bank loads as multi-register `ld1`s)."""
    total = 0
    for operand, chunks in (("a", inst.a_regs(ep)), ("b", inst.b_regs(hp))):
        doubled = operand_mode(strategy, operand) == "double"
        total += -(-chunks // LD1_MAX_REGS) if doubled else chunks
    return total


def _feasible(inst: MacInstruction, regs: int, cores: list[CoreModel],
              need_acc: int) -> list[Candidate]:
    in_order = any(c.in_order for c in cores)
    found = []
    for ep in range(inst.c_rows_per_reg, regs * inst.c_rows_per_reg + 1, inst.c_rows_per_reg):
        for hp in range(inst.c_cols_per_reg, regs * inst.c_cols_per_reg + 1, inst.c_cols_per_reg):
            nc = inst.c_regs(ep, hp)
            if (not inst.tile_ok(ep, hp) or nc < need_acc or nc > regs
                    or not _single_loads(inst, ep, hp)):
                continue
            for strategy, ra, rb, note in _tile_options(inst, ep, hp, regs, cores):
                if ra > inst.a_index_regs:      # A sits at v0.. so it fits iff the count does
                    continue
                loads = (Fraction(load_instructions(inst, ep, hp, strategy), nc) if in_order
                         else Fraction(0))
                found.append(Candidate(inst.name, ep, hp, inst.lp, strategy, ra, rb, nc,
                                       inst.bytes_per_mac(ep, hp), stream_note=note,
                                       loads_per_mac=loads))
    return found


def _why(c: Candidate, best: Candidate, rank: int) -> str:
    if rank == 0:
        return (f"chosen: fewest bytes per MAC ({float(c.exact_bytes_per_mac):.4f}), "
                f"{c.regs_total} registers")
    labels = ("bytes per MAC", "load instructions per MAC", "registers", "squareness |ep-hp|",
              "A registers", "ep", "hp", "strategy order")
    values = (lambda x: (f"{float(x.exact_bytes_per_mac):.4f}", f"{float(x.loads_per_mac):.4f}",
                         x.regs_total, abs(x.ep - x.hp), x.regs_a, x.ep, x.hp, x.strategy))
    for label, mine, theirs, vm, vt in zip(labels, c.sort_key(), best.sort_key(),
                                           values(c), values(best)):
        if mine != theirs:
            tie = "" if label == labels[0] else "ties on bytes per MAC, "
            return f"{tie}loses to {best.label} on {label}: {vm} vs {vt}"
    return "identical to the choice"  # unreachable: (ep, hp, strategy) is unique


def candidates(instruction: str, regs: int = DEFAULT_REGS, cpu: str = "generic",
               min_accumulators: int | None = None) -> list[Candidate]:
    """Every feasible (tile, strategy) for `instruction` within `regs` vector registers on
    `cpu`, best first. `min_accumulators` relaxes the latency rule (default: every covered
    core's latency x MACs per cycle; gen.tile_policy weighs fewer accumulators against the
    other cores). Raises TilingError on bad arguments or when nothing fits."""
    inst = _instruction(instruction)
    regs = check_regs(regs)
    cores = covered_cores(inst, cpu)
    need_acc = required_accumulators(inst, cores) if min_accumulators is None else min_accumulators
    if isinstance(need_acc, bool) or not isinstance(need_acc, int) or need_acc < 1:
        raise TilingError(f"min_accumulators must be a positive integer, got {need_acc!r}")
    found = sorted(_feasible(inst, regs, cores, need_acc), key=Candidate.sort_key)
    if not found:
        need = need_acc
        demanding = next((c for c in cores if c.min_accumulators(inst.name) == need), None)
        why = (f" ({demanding.name}: latency {demanding.latency(inst.name)} x "
               f"{demanding.throughput(inst.name)} MACs/cycle)" if demanding else "")
        raise TilingError(
            f"no {instruction} tile fits {regs} vector registers on CPU {cpu!r}: every tile "
            f"needs >= {need} accumulators{why} "
            f"plus its A and B registers (all resident, or one operand streamed through a "
            f"rotating set of >= {MIN_STREAM} that hides the load latency)")
    best = found[0]
    return [Candidate(**{**asdict(c), "rank": i, "why": _why(c, best, i)})
            for i, c in enumerate(found)]


# ---- register assignment and plan -----------------------------------------------------------

def register_order(total: int) -> list[int]:
    """Physical registers to hand out, low first. A tile that fits in the 24 caller-saved
    registers skips v8-v15 so the kernel need not save d8-d15."""
    if total <= NUM_VREGS - len(CALLEE_SAVED):
        return [r for r in range(NUM_VREGS) if r not in CALLEE_SAVED]
    return list(range(NUM_VREGS))


def assign_registers(c: Candidate) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(a_regs, b_regs, c_regs): A lowest (by-element forms index A in v0..v15), then B, then
    the accumulators in row-block-major order (gen.plan.TilePlan.c_reg_for)."""
    order = register_order(c.regs_total)
    a = tuple(order[:c.regs_a])
    b = tuple(order[c.regs_a:c.regs_a + c.regs_b])
    acc = tuple(order[c.regs_a + c.regs_b:c.regs_total])
    return a, b, acc


def edge_handling(inst: MacInstruction, ep: int, hp: int) -> str:
    """How the driver handles M % ep and N % hp remainders, and what it costs."""
    from .ntail import N_TAIL_INSTRUCTIONS     # late: gen.ntail builds on this module
    variants = (ep // inst.c_rows_per_reg) * (hp // inst.c_cols_per_reg) - 1
    tails = (f" Narrower kernels: {inst.name} is one of gen/ntail.py's N_TAIL_INSTRUCTIONS, "
             f"so with B packed in the call the last column panel runs on a kernel of the same "
             f"instruction as narrow as N mod {hp} allows (the same bits); prepacked handles "
             f"keep the full {hp}-column panels, as a handle may run on another path's kernel."
             if inst.name in N_TAIL_INSTRUCTIONS else "")
    return (
        f"The driver zero-pads the packed A panel to a multiple of ep={ep} rows, the packed B "
        f"panel to a multiple of hp={hp} columns (and K to a multiple of lp={inst.lp}). On an "
        f"edge tile (rm < {ep} rows and/or rn < {hp} columns left) the kernel computes the "
        f"whole tile and stores only its rm x rn part (kernel contract v2: m_rem / n_rem), so "
        f"it never writes outside C. Wasted MACs: 1 - rm*rn/({ep}*{hp}) of that tile; over "
        f"an M x N GEMM 1 - M*N/(ceil(M/{ep})*{ep} * ceil(N/{hp})*{hp}), at most "
        f"({ep}-1)/M + ({hp}-1)/N.{tails} Edge kernels for every shape (MNN's approach) would "
        f"be up to {variants} extra tile shapes to generate, schedule and test, while the "
        f"padding waste touches only the last row and column of tiles and shrinks as 1/M and "
        f"1/N. Row tails: a per-core variant's taller tile hands its last rows to the "
        f"generic tile (ts_tail_path).")


def _accumulator_note(inst: MacInstruction, cores: list[CoreModel], count: int) -> str:
    need = required_accumulators(inst, cores)
    if count >= need:
        return (f"accumulators: {count} >= {need} needed (latency x MACs/cycle, max over "
                f"{', '.join(k.name for k in cores)})")
    short = ", ".join(f"{k.name} at most {count}/{k.min_accumulators(inst.name)} of peak"
                      for k in cores if k.min_accumulators(inst.name) > count)
    return (f"accumulators: {count}, fewer than the {need} (latency x MACs/cycle) that keep "
            f"every core's MAC pipes busy ({short}): chosen by the tile policy "
            f"(gen/tile_policy.py)")


def plan_for(c: Candidate, cpu: str = "generic") -> TilePlan:
    """The TilePlan (physical registers, edge handling, notes) for candidate `c`."""
    inst = INSTRUCTIONS[c.instruction]
    cores = covered_cores(inst, cpu)
    a, b, acc = assign_registers(c)
    if a and max(a) >= inst.a_index_regs:   # guards assign_registers; cannot happen for A at v0
        raise TilingError(f"A registers {a} exceed v{inst.a_index_regs - 1} ({inst.name})")
    saved = sorted(CALLEE_SAVED.intersection(a + b + acc))
    notes = [
        f"{c.ep}x{c.hp}x{c.lp}: {c.regs_a} A + {c.regs_b} B + {c.regs_c} C = {c.regs_total} "
        f"registers, {float(c.exact_bytes_per_mac):.4f} bytes per MAC "
        f"({c.macs_per_byte:.2f} MACs per loaded byte)",
        _accumulator_note(inst, cores, c.regs_c),
        (f"uses callee-saved v{saved[0]}-v{saved[-1]}: the kernel saves/restores d8-d15"
         if saved else "fits in caller-saved registers: no d8-d15 save needed"),
    ]
    if inst.a_index_regs < NUM_VREGS:
        notes.append(f"A is read by element: it must sit in v0-v{inst.a_index_regs - 1} "
                     f"(here v{a[0]}-v{a[-1]})")
    if c.stream_note:
        notes.append(c.stream_note)
    return TilePlan(instruction=c.instruction, ep=c.ep, hp=c.hp, lp=c.lp, strategy=c.strategy,
                    a_regs=a, b_regs=b, c_regs=acc, bytes_per_mac=c.bytes_per_mac, cpu=cpu,
                    edge=edge_handling(inst, c.ep, c.hp), notes=tuple(notes))


def solve(instruction: str, regs: int = DEFAULT_REGS, cpu: str = "generic") -> TilePlan:
    """The best plan for `instruction` within `regs` vector registers on `cpu`."""
    return plan_for(candidates(instruction, regs, cpu)[0], cpu)
