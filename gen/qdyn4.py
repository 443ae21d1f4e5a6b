"""qdyn kernels with the fp32 epilogue inside: int8 activations x int4 weights (two per byte,
scale blocks; `weights="s4"`) or int8 weights (one scale per output channel; `weights="s8"`)
-> fp32, with the int4 unpack in registers and the whole fp32 dequantisation epilogue of
tilesmith.h in the kernel (issue 12, deliverable 3). First instruction: smmla (i8mm).

What one call computes (README "qdyn kernels"): one ep x hp tile of, for int4 scale blocks
(bl > 0, tilesmith.h's block order)
  C[m][n] = clamp(scale[m] * sum_b (wscale[n][b] * (float)acc_b[m][n]) + bias[n], cmin, cmax)
and for int8 per channel (one block, the header's per-channel order)
  C[m][n] = clamp((scale[m] * wscale[n]) * (float)acc[m][n] + bias[n], cmin, cmax)
with acc_b = sum over block b of (qa[m][k] - zp[m]) * qb[n][k], exact in int32, and the fp32
operations in the header's order (blocks: v_b = wscale * (float)acc_b; s = -0.0; s = s + v_b for
every block b in order, which equals the header's s = v_0, s + v_1, ...: -0.0 + v = v for every
v; y = scale[m] * s once per tile; then + bias, then the compare-and-select clamp of ts_qdyn.c:
x < cmin -> cmin, x > cmax -> cmax, NaN kept). The block order puts the row scale after the
block sum, so a block costs mul (correction), scvtf, fmul, fadd per accumulator: no
t = scale * wscale per block (README "qdyn kernels": the bound per block).

The int4 unpack (seed 002: KleidiAI's shl / and): one packed byte holds two signed nibbles of
the same column, k and k + 8 of a 16-k step. `shl #4` leaves 16 * low nibble as an int8,
`and #0xf0` leaves 16 * high nibble: two smmla B registers from one load in two vector
operations, each value 16 times the weight. The block's int32 sums are therefore 16 * acc_b;
`scvtf #4` (fixed point, 4 fraction bits) converts 16 * acc_b / 16 with one rounding: exactly
(float)acc_b. 16 * acc_b must fit int32 (|acc_b| <= bl * 255 * 8): bl <= QDYN4_MAX_BL.
The zero-point correction starts each block's accumulators at (-zp[m]) * (16 * sum_k qb[n][k])
(one MUL per accumulator, in place of zeroing them), so the smmla sums end at 16 * acc_b exactly
(modulo 2^32, exact when 16 * acc_b fits).

int8 weights (`weights="s8"`, per channel: one block of all of K, padded to 32): the same
loops without the unpack (two B registers per column pair and 16-k step, loaded as they are:
two 8-k steps of the smmla B layout), `scvtf` without fraction bits, the correction from the
plain sums (-zp[m]) * sum_k qb[n][k] (|acc| <= K * 255 * 128: K <= QDYN4_MAX_BL, the same
bound), and, as the header's s = u_0 for one block, the fp32 result in place of each
accumulator (no separate sums: an 8 x 8 tile fits the 32 registers); no block loop.

The tile solver (`solve`) counts, per block of 32 k, the vector operations (smmla, unpack,
epilogue), the loads and all instructions of each ep x hp that fits the 32 registers (int32
accumulators + fp32 sums + A + B + unpack temporaries + the nibble mask), and ranks by the
modeled cycles per smmla on the worst covered core (`block_cycles`); the scheduler
(gen.schedule) orders the inner k-loop and the block tail (last two k-steps + epilogue + the
next block's correction), both as loop bodies.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import epilogue as ep_mod
from .cores import CoreModel
from .isa import INSTRUCTIONS
from .loop import KernelPlanError
from .plan import TilePlan
from .schedule import Insn, schedule_loop
from .tiling import covered_cores

if TYPE_CHECKING:                  # the annotations only (gen.emit imports this module's users)
    from .emit import Kernel

# The instructions that get a qdyn int4 kernel (their paths in the qdyn chain use it).
QDYN4_INSTRUCTIONS = ("smmla",)
SIGNATURE = "s8s4f32"   # symbols <prefix>gemm_s8s4f32_<mnemonic>_<ep>x<hp>x<lp>[_pc]
SIGNATURES = {"s4": SIGNATURE, "s8": "s8s8f32"}    # by weights
WEIGHTS = tuple(SIGNATURES)
LP = 16                 # k per k-step: one packed register feeds two 8-deep smmla
QDYN4_MAX_BL = 65793    # 65793 * 255 * 8 * 16 <= 2^31 - 1 < 65794 * 255 * 8 * 16
                        # (int8 weights: 65793 * 255 * 128, the same products)
# Argument block (x5), 80 bytes: m_rem / n_rem where every v2 kernel has them (the partial-tile
# store of gen.epilogue reads them there).
ARGS_FIELDS = (
    ("m_rem", 0, "size_t", "rows to store, 1..ep"),
    ("n_rem", 8, "size_t", "columns to store, 1..hp"),
    ("kpairs", 16, "size_t", "k-steps (16 k) per scale block / 2, >= 1"),
    ("rows", 24, "const void *", "ep/2 fp32x4 (s[2i], s[2i], s[2i+1], s[2i+1]) row scales, "
                                 "then ep/2 int32x4 (-zp) the same way; per-channel kernels: "
                                 "then ep/2 int32x4 (-8 sum_k qa)"),
    ("bias", 32, "const float *", "hp fp32 (rounded up to 4): bias, or -0.0f for none"),
    ("cmin", 40, "float", "clamp: x < cmin -> cmin, then x > cmax -> cmax (NaN kept)"),
    ("cmax", 44, "float", ""),
    ("b_stride", 48, "size_t", "decode, per-channel kernels: bytes between B panels"),
    ("clamp", 56, "size_t", "0: cmin = -Inf and cmax = +Inf (the clamp changes nothing: "
                            "skipped)"),
    ("col_sums", 64, "const int32_t *", "raw-panel int8 decode kernel (gen/qdyn8_dot.py): hp "
                                        "int32 sum_k qb, from its first column"),
    ("col_scales", 72, "const float *", "... and hp fp32 wscale"),
)
OFF = {name: off for name, off, _, _ in ARGS_FIELDS}
ROWS_REG, KPAIRS_REG, COUNT_REG = "x6", "x7", "x8"
STRIDE_REG = "x16"      # args->b_stride in the decode kernel's prologue
MAX_PANELS = 7          # decode: B streams x1, x9-x14


class PanelColumns:
    """The B panels of a qdyn plan and their column groups, one 16-byte group of a panel's k-step
    each: GROUP_COLS columns per group (Qdyn4Plan: column pairs of the smmla layout; gen.qdyn4_dot
    DotBlockPlan: column quads of the sdot one). A subclass has hp and panels."""
    GROUP_COLS = 2

    @property
    def pc(self) -> int:          # columns per B panel
        return self.hp // self.panels

    def b_pointer(self, g) -> str:
        """Column group g's B stream: x1 for panel 0, x9.. for the next panels (decode)."""
        p = g // (self.pc // self.GROUP_COLS)
        return "x1" if p == 0 else f"x{8 + p}"

    def b_offset(self, g) -> int:
        """Column group g's byte offset within its panel's k-step (16 bytes a group; column pairs:
        likewise in a paired per-column array)."""
        return 16 * (g % (self.pc // self.GROUP_COLS))


@dataclass(frozen=True)
class Qdyn4Plan(PanelColumns):
    instruction: str
    ep: int
    hp: int
    cpu: str = "generic"
    weights: str = "s4"           # "s4": int4 scale blocks; "s8": int8, one block (per channel)
    decode: bool = False          # decode kernel: one row pair, `panels` panels per call
    panels: int = 1               # B panels per call (of the prefill kernel's hp), b_stride apart

    @property
    def blocked(self) -> bool:    # a loop over scale blocks (int4 per channel: gen/qdyn4_rl.py)
        return self.weights == "s4"

    @property
    def int4(self) -> bool:
        return self.weights == "s4"

    @property
    def rp(self) -> int:          # row pairs
        return self.ep // 2

    @property
    def cp(self) -> int:          # column pairs
        return self.hp // 2

    # registers: A v0.. (2 per row pair), B (packed + low nibbles; int8: k 8-15 + k 0-7)
    # after, then the mask (int4); int32 accumulators and fp32 sums (int4) at the top.
    @property
    def a_regs(self):
        return tuple(range(2 * self.rp))

    @property
    def b_packed(self):
        base = 2 * self.rp
        return tuple(range(base, base + self.cp))

    @property
    def b_low(self):
        base = 2 * self.rp + self.cp
        return tuple(range(base, base + self.cp))

    @property
    def acc_regs(self):
        n = self.rp * self.cp
        return tuple(range(32 - 2 * n, 32 - n)) if self.blocked else tuple(range(32 - n, 32))

    @property
    def sum_regs(self):
        """fp32 running sums of the blocks (one block: the fp32 result replaces the int32 sum,
        s = u_0)."""
        n = self.rp * self.cp
        return tuple(range(32 - n, 32)) if self.blocked else self.acc_regs

    def acc(self, r, c):
        return self.acc_regs[r * self.cp + c]

    def fsum(self, r, c):
        return self.sum_regs[r * self.cp + c]

    @property
    def mask(self):
        """The register holding 0xf0 in every byte: right after A and B (int4; None: int8)."""
        return 2 * self.rp + 2 * self.cp if self.int4 else None

    def row_scaling(self, regs) -> list:
        return row_scaling(self, regs)

    def free_regs(self):
        used = set(self.acc_regs + self.sum_regs + (self.mask,))
        return [v for v in range(32) if v not in used]

    def a_step_bytes(self):
        return self.ep * LP

    def b_step_bytes(self):       # per k-step and panel
        return self.pc * LP // (2 if self.int4 else 1)

    def tile_plan(self) -> TilePlan:
        """A gen.plan view for the shared store helpers: the fp32 sums as the 2x2 tiles."""
        temps = tuple(v for v in self.free_regs())
        return TilePlan(self.instruction, self.ep, self.hp, 8, "resident", temps[:0],
                        temps, self.sum_regs, 0.0, self.cpu)


def registers_needed(ep: int, hp: int, weights: str = "s4") -> int:
    """int4: int32 accumulators + fp32 sums + A (two per row pair) + B (packed +
    unpacked low nibbles per column pair) + the mask; the block epilogue reuses the A/B
    registers (-zp: one per row pair; column scales, block sums: 2 per column pair; the fmul
    works in place, no temporary), the final row scaling one per row pair. int8: accumulators (which become the fp32 results) + A + B (two per column
    pair); the epilogue's row scales, column scales and temporary fit the A/B registers."""
    rp, cp = ep // 2, hp // 2
    if weights == "s8":
        n = rp * cp
        return max(n + 2 * rp + 2 * cp, n + rp + cp + 1)
    n = 2 * rp * cp
    return max(n + 2 * rp + 2 * cp + 1, n + 1 + rp + 2 * cp)


def block_counts(ep: int, hp: int, bl: int = 32, weights: str = "s4", panels: int = 1) -> dict:
    """Instructions of one scale block of `bl` k for an ep x hp tile (the kernel's own mix),
    its B in `panels` streams (a pointer add each per two k-steps and per block)."""
    rp, cp, steps = ep // 2, hp // 2, bl // LP
    n = rp * cp
    if weights == "s8":                              # per channel: bl = K
        return dict(mac=2 * n * steps, unpack=0,
                    epilogue=4 * n,                  # mul, scvtf, fmul t, fmul u
                    loads=(2 * rp + 2 * cp) * steps + 2 * rp + 2 * cp,
                    alu=(1 + panels) * (steps // 2) + 2 + 2 * cp)
    return dict(mac=2 * n * steps, unpack=2 * cp * steps,
                epilogue=4 * n,                      # mul, scvtf, fmul v, fadd
                loads=(2 * rp + cp) * steps + 2 * rp + 2 * cp,
                alu=(1 + panels) * (steps // 2) + 1 + panels + 2 * cp)  # pointer adds, subs / branch


def block_cycles(ep: int, hp: int, core: CoreModel, bl: int = 32, weights: str = "s4",
                 panels: int = 1, latency: bool = True) -> float:
    """Modeled cycles per block: the busiest of the MAC/vector pipes, the load pipes and issue,
    and (latency) the MAC latency (each accumulator's chain of MACs)."""
    c = block_counts(ep, hp, bl, weights, panels)
    vector = c["mac"] + c["unpack"] + c["epilogue"]
    # every vector operation shares the MAC pipes: N2 / V1 (V pipes) and Cortex-A510 alike
    # (llvm-mca-19: scvtf, fmul, fadd and mul .4s on the A510's two SIMD ALUs with smmla; only
    # fmla / fmls use its MAC pipes; gen/cores.py "vfp")
    pipes = vector / core.throughput("smmla")
    total = sum(c.values())
    chain = c["mac"] / (ep // 2 * (hp // 2)) * core.latency("smmla") if latency else 0
    return max(pipes, c["loads"] / core.loads_per_cycle, total / core.issue_width, chain)


# Columns of the idealised decode kernel of compute_bound: enough that A's loads and the
# pointer adds weigh nothing (no register limit: a bound, not a kernel).
BOUND_COLUMNS = 256


def compute_bound(core: CoreModel, weights: str = "s4", bl: int = 32,
                  instruction: str = "smmla") -> float:
    """Weight bytes per cycle no decode kernel of this scheme (one row pair, B streamed once)
    beats on `core`: block_counts' mix of one row pair and BOUND_COLUMNS columns for a block
    of bl k, without latency — int4 scale blocks per 16 weight bytes one load, `shl`, `and`,
    two `smmla`, and per column pair and block the correction and the three fp32 steps; int8
    (bl = K, per channel: one block) per 16 weight bytes one load and one `smmla`, the
    epilogue once per K."""
    if instruction not in QDYN4_INSTRUCTIONS:
        raise KernelPlanError(f"no qdyn kernel of gen.qdyn4 for {instruction}")
    bl = -(-bl // 32) * 32              # the kernels' k-step pairs: K padded to 32
    return (weight_bytes(BOUND_COLUMNS, bl, weights)
            / block_cycles(2, BOUND_COLUMNS, core, bl, weights, latency=False))


# The block length the tiles are ranked for: int4 bl = 32 (the common GGML / KleidiAI block);
# int8 (per channel: the block is K) K = 512, the shortest K of issue 12's int8 workloads
# (GEMM 512³), where the once-per-tile epilogue weighs most.
RANK_BL = {"s4": 32, "s8": 512}


def candidates(instruction: str = "smmla", cpu: str = "generic", weights: str = "s4") -> list:
    """(ep, hp, worst modeled fraction of the smmla peak) of every tile that fits, best first."""
    inst = INSTRUCTIONS[instruction]
    cores = covered_cores(inst, cpu)
    bl = RANK_BL[weights]
    out = []
    for ep in range(2, 17, 2):
        for hp in range(2, 17, 2):
            if registers_needed(ep, hp, weights) > 32 or hp % 4 and hp != 2:
                continue
            macs = block_counts(ep, hp, bl, weights)["mac"]
            worst = min(macs / core.throughput(instruction)
                        / block_cycles(ep, hp, core, bl, weights) for core in cores)
            out.append((ep, hp, worst))
    return sorted(out, key=lambda t: (-round(t[2], 6), registers_needed(t[0], t[1], weights),
                                      -t[0], t[1]))


def weight_bytes(hp: int, bl: int, weights: str) -> int:
    """Bytes of packed weights in one block of bl k of hp columns (int4: half a byte each)."""
    return hp * bl // (2 if weights == "s4" else 1)


def decode_candidates(instruction: str = "smmla", cpu: str = "generic",
                      weights: str = "s4") -> list:
    """The decode kernel (one row pair: M <= 2 per pass) of int4 scale blocks or int8 weights:
    (panels, worst modeled weight bytes per cycle at the ranking block, RANK_BL) of each count
    of the prefill kernel's panels (its hp columns each: the same handle) that fits the 32
    registers, best first (ties: more panels, fewer calls per row pair)."""
    pc = solve(instruction, cpu, weights).hp
    cores = covered_cores(INSTRUCTIONS[instruction], cpu)
    bl = RANK_BL[weights]
    out = []
    for panels in range(1, MAX_PANELS + 1):
        hp = pc * panels
        if registers_needed(2, hp, weights) > 32:
            break
        worst = min(weight_bytes(hp, bl, weights) / block_cycles(2, hp, core, bl, weights, panels)
                    for core in cores)
        out.append((panels, worst))
    return sorted(out, key=lambda t: (-round(t[1], 6), -t[0]))


def solve(instruction: str = "smmla", cpu: str = "generic", weights: str = "s4",
          decode: bool = False) -> Qdyn4Plan:
    if instruction not in QDYN4_INSTRUCTIONS:
        raise KernelPlanError(f"no qdyn int4 kernel for {instruction} yet")
    if decode:
        panels, _ = decode_candidates(instruction, cpu, weights)[0]
        return Qdyn4Plan(instruction, 2, solve(instruction, cpu, weights).hp * panels, cpu,
                         weights, True, panels)
    ep, hp, _ = candidates(instruction, cpu, weights)[0]
    return Qdyn4Plan(instruction, ep, hp, cpu, weights)


# ---- instruction lists ---------------------------------------------------------------------------
def _v(text, comment="", defs=(), uses=()):
    return Insn(text, "alu", defs=tuple(defs), uses=tuple(uses), comment=comment)


def _load(text, reg, base, comment=""):
    return Insn(text, "load", defs=(f"v{reg}",), uses=(base,), comment=comment)


def k_step(plan: Qdyn4Plan, step: int) -> list[Insn]:
    """Loads, unpack and smmla of k-step `step` (0 or 1) of a two-step body: A at x0 + step *
    a_step, B at x1 + step * b_step."""
    code = []
    a0 = step * plan.a_step_bytes()
    for i, reg in enumerate(plan.a_regs):
        half, r = divmod(i, plan.rp)
        code.append(_load(f"ldr q{reg}, [x0, #{a0 + 16 * i}]", reg, "x0",
                          f"A rows {2 * r}-{2 * r + 1}, k {8 * half}-{8 * half + 7}"))
    b0 = step * plan.b_step_bytes()
    if not plan.int4:       # int8: two 8-k steps of the smmla B layout, no unpack
        for half, bregs in ((0, plan.b_low), (1, plan.b_packed)):
            for c, reg in enumerate(bregs):
                ptr = plan.b_pointer(c)      # decode: each panel its own stream
                code.append(_load(f"ldr q{reg}, [{ptr}, #{b0 + half * plan.pc * 8 + plan.b_offset(c)}]",
                                  reg, ptr, f"B columns {2 * c}-{2 * c + 1}, "
                                            f"k {8 * half}-{8 * half + 7}"))
    for c, reg in enumerate(plan.b_packed if plan.int4 else ()):
        ptr = plan.b_pointer(c)
        code.append(_load(f"ldr q{reg}, [{ptr}, #{b0 + plan.b_offset(c)}]", reg, ptr,
                          f"B columns {2 * c}-{2 * c + 1}, 16 k as nibbles"))
    for c in range(plan.cp if plan.int4 else 0):
        p, lo = plan.b_packed[c], plan.b_low[c]
        code.append(_v(f"shl v{lo}.16b, v{p}.16b, #4", f"16 x k 0-7 of columns {2*c}-{2*c+1}",
                       (f"v{lo}",), (f"v{p}",)))
        code.append(_v(f"and v{p}.16b, v{p}.16b, v{plan.mask}.16b", "16 x k 8-15",
                       (f"v{p}",), (f"v{p}", f"v{plan.mask}")))
    return code + half_macs(plan, 0) + half_macs(plan, 1)


def half_regs(plan: Qdyn4Plan, half: int):
    """(A registers, B registers) of the 8-k half `half` of a k-step."""
    return (plan.a_regs[half * plan.rp:(half + 1) * plan.rp],
            plan.b_low if half == 0 else plan.b_packed)


def half_macs(plan: Qdyn4Plan, half: int) -> list[Insn]:
    """The smmla of one 8-k half of a k-step: every row pair x column pair."""
    code = []
    aregs, bregs = half_regs(plan, half)
    for r, a in enumerate(aregs):
        for c in range(plan.cp):
            acc = plan.acc(r, c)
            code.append(Insn(f"smmla v{acc}.4s, v{a}.16b, v{bregs[c]}.16b", "mac",
                             defs=(f"v{acc}",), uses=(f"v{acc}", f"v{a}", f"v{bregs[c]}"),
                             instruction=plan.instruction))
    return code


# ---- ld1 form, rotated (int8 weights) ---------------------------------------------------------
# Every A and B register of the 32 is in use (8 x 8), so no k-step can be loaded ahead into
# spare registers; but each 8-k half's registers are free while the other half's smmla run. The
# rotated body loads half h + 1 during half h's smmla (the next iteration's first half at its
# end; the prologue loads the first), with 4-register ld1 from one pointer per group (on the
# in-order cores an ldr after the smmla waits for their in-order write-back, gen/loop.py "Load
# forms"; ld1 of 4 registers has the smmla's 4-cycle latency on Cortex-A510). llvm-mca-19 per
# two k-steps of 8 x 8 (64 smmla, 2026-11-23): ldr form N2 32.1 / V1 16.1 / A510 52.0 cycles,
# this form 32.1 / 16.1 / 36.0.
# LD1_STEPS k-steps per main-loop iteration, four pointers each (A and B of both halves): on
# Cortex-A510's model a pointer add, the subs and the branch wait for the smmla before them to
# write back and issue 3 a cycle with no MAC beside them (gen/emit.py MAIN_LOOP_VARIANTS, the
# raw kernels' 6 k-step variant), so an iteration pays about 2 + (pointers + 2) / 3 cycles
# beyond its smmla. llvm-mca-19, 8 x 8, 2026-11-23: 2 k-steps (8 pointers) A510 38 cycles per
# 64 smmla (84.2 % of the peak), 3 k-steps (12 pointers) 55 per 96 (87.3 %); N2 and V1 at the
# peak either way (32.0 / 16.1 per 64). The k-steps beyond whole iterations run one at a time
# (SINGLE loop, the first step's pointers), the last two in the tail. Pointers: x10-x17 for
# the first two steps (the tail's), then x2, x9, x7 and x0 (x7's k-step pairs are read before,
# x0 is written last, after every A pointer is derived from it; x9 is the tail's scratch, which
# only needs the first two steps' pointers).
LD1_POINTERS = tuple(f"x{n}" for n in range(10, 18)) + ("x2", "x9", "x7", "x0")
LD1_STEPS = 3
LD1_SPACING = 2          # smmla per load of the next half in the rotated body (llvm-mca-19: 1-4 alike)


def halves(steps: int) -> tuple:
    """(k-step, half) of a body of `steps` k-steps, in order."""
    return tuple((s, h) for s in range(steps) for h in (0, 1))


HALVES = halves(2)       # the tail's two k-steps


def ld1_groups(plan: Qdyn4Plan) -> dict:
    """{(step, half): [(pointer, registers, base, offset)]} for the LD1_STEPS k-steps of an
    iteration: each half's A and B registers in runs of at most 4 consecutive registers (one
    ld1 each), every run its own pointer."""
    ptrs, out = iter(LD1_POINTERS), {}
    for step, half in halves(LD1_STEPS):
        aregs, bregs = half_regs(plan, half)
        runs = []
        for regs, base, off in ((aregs, "x0", (2 * step + half) * plan.ep * 8),
                                (bregs, "x1", step * plan.b_step_bytes() + half * plan.hp * 8)):
            for j in range(0, len(regs), 4):
                runs.append((next(ptrs), regs[j:j + 4], base, off + 16 * j))
        out[step, half] = runs
    return out


def ld1_form_fits(plan: Qdyn4Plan) -> bool:
    """int8 weights, 4 consecutive registers per run, pointers enough (LD1_POINTERS). Not the
    decode kernel: its further panels' B streams are x9.. (b_pointer), which LD1_POINTERS
    takes, and at one row pair it has registers to spare for the scheduled ldr form (a k-step
    loaded while the last one's smmla run)."""
    if plan.int4 or plan.decode:
        return False
    runs = sum(-(-n // 4) for n in (plan.rp, plan.cp)) * len(halves(LD1_STEPS))
    regs_ok = all(r[-1] - r[0] == len(r) - 1 for half in (0, 1) for r in half_regs(plan, half))
    return runs <= len(LD1_POINTERS) and regs_ok


# ---- ld1 form of the int8 decode kernel ------------------------------------------------------------
# At one row pair a k-step is one 32-byte A run (both 8-k halves: 2 registers) and, per panel and
# half, 64 contiguous bytes of B (4 column pairs: 4 registers). Loaded by ldr q, each load placed
# after an smmla waits on Cortex-A510 for the smmla's in-order write-back (gen/loop.py "Load
# forms"); a 4-register ld1 has the smmla's latency and does not. ld1 takes no offset, so each
# run of the body's two k-steps has its own pointer: x0 (A), x1 / x9 (the panels' streams, which
# the tail's scale loads and the prologue's sums read at immediate offsets) and
# DECODE_LD1_POINTERS for the rest. llvm-mca-19 per two k-steps of 2 x 16 (512 weight bytes,
# 2026-11-24): ldr form N2 / V1 / A510 16.0 / 12.0 / 39.0 cycles, this form 16.1 / 12.1 / 30.0.
DECODE_LD1_POINTERS = ("x10", "x11", "x12", "x13", "x14", "x15", "x17")


def decode_ld1_runs(plan: Qdyn4Plan) -> dict:
    """{k-step: [(pointer, registers, base, offset)]} of the decode kernel's two-step body: the
    A run, then per half (k 0-7, 8-15) and panel its B registers."""
    spare, out = iter(DECODE_LD1_POINTERS), {}
    streams = b_pointers(plan)
    for step in (0, 1):
        off = step * plan.a_step_bytes()
        runs = [(next(spare) if off else "x0", plan.a_regs, "x0", off)]
        for half, bregs in ((0, plan.b_low), (1, plan.b_packed)):
            for p, base in enumerate(streams):
                off = step * plan.b_step_bytes() + half * plan.pc * 8
                regs = bregs[p * (plan.pc // 2):(p + 1) * (plan.pc // 2)]
                runs.append((next(spare) if off else base, regs, base, off))
        out[step] = runs
    return out


def decode_ld1_fits(plan: Qdyn4Plan) -> bool:
    """The int8 decode kernel with 4-register B runs and pointers enough."""
    if plan.int4 or not plan.decode or plan.pc // 2 > 4 or plan.rp != 1:
        return False
    spare = sum(1 for runs in (0, 1) for _ in range(1 + 2 * plan.panels)) - 1 - plan.panels
    consecutive = all(r[-1] - r[0] == len(r) - 1 for half in (0, 1)
                      for r in half_regs(plan, half))
    return spare <= len(DECODE_LD1_POINTERS) and consecutive


def decode_ld1_step(plan: Qdyn4Plan, step: int) -> list[Insn]:
    """One k-step of the decode ld1 form: its runs' loads, then both halves' smmla."""
    code = []
    for ptr, regs, base, off in decode_ld1_runs(plan)[step]:
        what = "A rows 0-1, k 0-15" if base == "x0" else (
            f"B panel {b_pointers(plan).index(base)}, k {8 * (regs[0] in plan.b_packed)}-"
            f"{8 * (regs[0] in plan.b_packed) + 7}")
        code.append(Insn(f"ld1 {{v{regs[0]}.16b-v{regs[-1]}.16b}}, [{ptr}]", "load",
                         defs=tuple(f"v{r}" for r in regs), uses=(ptr,),
                         comment=f"{what}, k-step {step}"))
    return code + half_macs(plan, 0) + half_macs(plan, 1)


def decode_ld1_setup(plan: Qdyn4Plan) -> list[Insn]:
    """The prologue's pointer derivations (after the streams are at block 0's k-steps)."""
    return [ep_mod._i(f"add {ptr}, {base}, #{off}", f"ld1 pointer: k-step {step}")
            for step, runs in decode_ld1_runs(plan).items()
            for ptr, _, base, off in runs if ptr != base]


def ld1_loads(plan: Qdyn4Plan, key) -> list[Insn]:
    code = []
    for ptr, regs, base, off in ld1_groups(plan)[key]:
        what = "A" if base == "x0" else "B"
        code.append(Insn(f"ld1 {{v{regs[0]}.16b-v{regs[-1]}.16b}}, [{ptr}]" if len(regs) > 1
                         else f"ld1 {{v{regs[0]}.16b}}, [{ptr}]", "load",
                         defs=tuple(f"v{r}" for r in regs), uses=(ptr,),
                         comment=f"{what}, k-step {key[0]}, k {8 * key[1]}-{8 * key[1] + 7}"))
    return code


def ld1_setup(plan: Qdyn4Plan) -> list[Insn]:
    """The pointers (after the prologue's x1 += column_bytes) and the first half's registers;
    in ld1_groups order, so the pointer that is x0 itself is written after the A pointers."""
    code = [ep_mod._i(f"add {ptr}, {base}, #{off}" if off else f"mov {ptr}, {base}",
                      f"ld1 pointer: k-step {key[0]}, half {key[1]}")
            for key, runs in ld1_groups(plan).items() for ptr, _, base, off in runs]
    return code + ld1_loads(plan, HALVES[0])


def rotated_steps(plan: Qdyn4Plan, last: bool, steps: int = 2) -> list[Insn]:
    """`steps` k-steps whose first half is loaded (the first `steps` steps' pointers): each
    half's smmla, then the next half's loads; not `last`: the pointers advance by `steps`
    k-steps and the next iteration's first half is loaded."""
    keys = halves(steps)
    size = {"x0": steps * plan.a_step_bytes(), "x1": steps * plan.b_step_bytes()}
    groups = ld1_groups(plan)
    what = "next k-step" if steps == 1 else f"next {steps} k-steps"
    advance = {key: [_advance(ptr, size[base], what) for ptr, _, base, _ in groups[key]]
               for key in keys}
    # the first half's pointers advance first (their registers are loaded), so the next
    # iteration's first half can load during the last half's smmla
    code = [] if last else advance[keys[0]]
    for i, (step, half) in enumerate(keys):
        loads = (ld1_loads(plan, keys[i + 1]) if i + 1 < len(keys)
                 else [] if last else ld1_loads(plan, keys[0]))
        for j, mac in enumerate(half_macs(plan, half)):
            code.append(mac)
            if j % LD1_SPACING == LD1_SPACING - 1 and loads:
                code.append(loads.pop(0))      # one load after every LD1_SPACING smmla
        code += loads
    if not last:
        code += [a for key in keys[1:] for a in advance[key]]
    return code


def _advance(reg, amount, comment):
    return Insn(f"add {reg}, {reg}, #{amount}", "alu", defs=(reg,), uses=(reg,), comment=comment)


def _loop_end(steps: int, cond: str, label: str) -> list[Insn]:
    return [Insn(f"subs {COUNT_REG}, {COUNT_REG}, #{steps}", "alu", defs=(COUNT_REG, "nzcv"),
                 uses=(COUNT_REG,)),
            Insn(f"b.{cond} {label}", "branch", uses=("nzcv",))]


def inner_body(plan: Qdyn4Plan) -> list[Insn]:
    """The main loop's body: ld1 form LD1_STEPS k-steps (COUNT_REG: k-steps left before the
    tail's two, less LD1_STEPS; loops while LD1_STEPS more are left), else two k-steps of a
    block (not its last two; COUNT_REG: iterations left)."""
    if ld1_form_fits(plan):
        return rotated_steps(plan, last=False, steps=LD1_STEPS) + _loop_end(LD1_STEPS, "hs",
                                                                           "K_INNER")
    if decode_ld1_fits(plan):
        code = decode_ld1_step(plan, 0) + decode_ld1_step(plan, 1)
        code += [_advance(ptr, 2 * (plan.a_step_bytes() if base == "x0" else plan.b_step_bytes()),
                          "next two k-steps")
                 for runs in decode_ld1_runs(plan).values() for ptr, _, base, _ in runs]
        return code + [Insn(f"subs {COUNT_REG}, {COUNT_REG}, #1", "alu",
                            defs=(COUNT_REG, "nzcv"), uses=(COUNT_REG,)),
                       Insn("b.ne K_INNER", "branch", uses=("nzcv",))]
    code = k_step(plan, 0) + k_step(plan, 1)
    code += [_advance("x0", 2 * plan.a_step_bytes(), "A: next two k-steps")]
    code += [_advance(ptr, 2 * plan.b_step_bytes(), "B: next two k-steps")
             for ptr in b_pointers(plan)]
    code += [Insn(f"subs {COUNT_REG}, {COUNT_REG}, #1", "alu", defs=(COUNT_REG, "nzcv"),
                  uses=(COUNT_REG,)),
             Insn("b.ne K_INNER", "branch", uses=("nzcv",))]
    return code


def single_body(plan: Qdyn4Plan) -> list[Insn]:
    """ld1 form: one k-step (the first step's pointers), while COUNT_REG k-steps are left
    before the tail's two."""
    return rotated_steps(plan, last=False, steps=1) + _loop_end(1, "ne", "K_SINGLE")


def resync(plan: Qdyn4Plan) -> list[Insn]:
    """After single steps: the second step's pointers (the tail's) from the first step's."""
    groups = ld1_groups(plan)
    return [ep_mod._i(f"add {p1}, {p0}, #{plan.a_step_bytes() if base == 'x0' else plan.b_step_bytes()}",
                      f"ld1 pointer: k-step 1, half {half}")
            for half in (0, 1)
            for (p0, _, base, _), (p1, _, _, _) in zip(groups[0, half], groups[1, half])]


def loop_count(plan: Qdyn4Plan) -> list[Insn]:
    """ld1 form, in the prologue right after COUNT_REG = 2 kpairs k-steps: the k-steps before
    the tail's two, less LD1_STEPS (the flags for loop_entry's branch, which no instruction
    between them changes)."""
    return [ep_mod._i(f"subs {COUNT_REG}, {COUNT_REG}, #{2 + LD1_STEPS}",
                      f"k-steps before the last two, less {LD1_STEPS}")]


def loop_entry(plan: Qdyn4Plan) -> list[Insn]:
    """ld1 form, after the prologue (loop_count's flags): to K_REM when fewer than LD1_STEPS
    k-steps precede the tail's two."""
    return [ep_mod._i("b.lo K_REM", f"fewer than {LD1_STEPS}: single k-steps")]


def loop_rem(plan: Qdyn4Plan) -> list[Insn]:
    """K_REM: the k-steps left after whole iterations (0 .. LD1_STEPS - 1)."""
    return [ep_mod._i(f"adds {COUNT_REG}, {COUNT_REG}, #{LD1_STEPS}",
                      "k-steps left before the last two"),
            ep_mod._i("b.eq K_TAIL", "none: the tail")]


def b_pointers(plan: Qdyn4Plan) -> list[str]:
    """The B streams, one per panel (x1, then x9..: the decode kernel's further panels)."""
    return [plan.b_pointer(p * (plan.pc // plan.GROUP_COLS)) for p in range(plan.panels)]


def pointer_setup(plan: Qdyn4Plan) -> list[Insn]:
    """Decode: panel p's pointer = panel p - 1's + args->b_stride."""
    ptrs = b_pointers(plan)
    if len(ptrs) == 1:
        return []
    return ([ep_mod._i(f"ldr {STRIDE_REG}, [x5, #{OFF['b_stride']}]",
                       "bytes from one B panel to the next", "load")]
            + [ep_mod._i(f"add {ptr}, {ptrs[p - 1]}, {STRIDE_REG}", f"panel {p}")
               for p, ptr in enumerate(ptrs) if p > 0])


def column_bytes(plan: Qdyn4Plan) -> int:
    """Bytes of one per-column array (scales, block sums) in a panel: each column pair twice,
    (c0 c1 c0 c1) per 16 bytes, the 2x2 tile layout that one `ldr q` loads at an immediate
    offset. From a compact array (hp values) each pair took an `ld1r .2d`, which takes a vector
    pipe too on Neoverse N2 / V1 (their software optimisation guides: ASIMD load, replicate —
    L and V micro-ops; llvm-mca-19 likewise), plus an integer `add` for its address (no
    immediate offset): int4 scale blocks, the 8x4 tail per 32-k block 38.1 -> 36.1 cycles on
    N2, 19.1 -> 18.1 on V1; int8 per channel (once per tile: the correction's sums and the
    tail's scales) 8 `add` and 8 `ld1r` -> 8 `ldr q`. Per panel: a decode kernel's panels
    each have their own."""
    return plan.pc * 8


def column_loads(plan: Qdyn4Plan, offset: int, regs, what: str,
                 base: str = "x1") -> list[Insn]:
    """Each column pair's values as (c0 c1 c0 c1), the 2x2 tile layout: one `ldr q` per pair
    from its panel's paired array at offset (column_bytes) — from the pair's own B stream for
    base x1 (a decode kernel has one per panel), else from base."""
    return [_load(f"ldr q{reg}, [{ptr}, #{offset + plan.b_offset(c)}]", reg, ptr,
                  f"{what} of columns {2 * c}-{2 * c + 1}, twice")
            for c, reg in enumerate(regs)
            for ptr in (plan.b_pointer(c) if base == "x1" else base,)]


def correction(plan: Qdyn4Plan, bsum_offset: int, zp_regs, bsum_regs) -> list[Insn]:
    """Accumulators = (-zp) x (16 x block sums) of the next block (int8: x the sums), B sums at
    x1 + offset."""
    sums = "16 x block sums" if plan.int4 else "sums of the weights"
    code = []
    rows_zp = plan.rp * 16
    for r, reg in enumerate(zp_regs):
        code.append(_load(f"ldr q{reg}, [{ROWS_REG}, #{rows_zp + 16 * r}]", reg, ROWS_REG,
                          f"-zp of rows {2 * r}-{2 * r + 1}"))
    code += column_loads(plan, bsum_offset, bsum_regs, sums)
    for r in range(plan.rp):
        for c in range(plan.cp):
            acc = plan.acc(r, c)
            code.append(_v(f"mul v{acc}.4s, v{zp_regs[r]}.4s, v{bsum_regs[c]}.4s",
                           f"-{'16 ' if plan.int4 else ''}zp sum qb: the zero-point correction",
                           (f"v{acc}",), (f"v{zp_regs[r]}", f"v{bsum_regs[c]}")))
    return code


# The bias pointer loaded in the ld1 form's tail (args_head): x2, the third k-step's pointer,
# which the tail does not read, so the load is free to go early (in x11, the tail's scale base,
# it had to follow the scale loads and came last, right before its first use at K_STORE: a
# load-use wait on an in-order core).
TAIL_BIAS_REG = "x2"


def args_head(plan: Qdyn4Plan) -> list[Insn]:
    """The store's argument loads (final_code with head=False), in the tail: the bias pointer
    (TAIL_BIAS_REG) and cmin / cmax arrive before the unzip needs them (x12-x13: the tail's
    last reads of them come first, the scheduler keeps that order)."""
    return [Insn(f"ldr {TAIL_BIAS_REG}, [x5, #{OFF['bias']}]", "load", defs=(TAIL_BIAS_REG,),
                 uses=("x5",), comment="args->bias"),
            Insn(f"ldp w12, w13, [x5, #{OFF['cmin']}]", "load", defs=("x12", "x13"),
                 uses=("x5",), comment="cmin, cmax")]


def epilogue_regs(plan: Qdyn4Plan):
    """Row scales, column scales, -zp, block sums, temporaries. One block (int8): -zp and the
    sums serve the prologue's correction only, so they share the scales' registers. Scale
    blocks: no row scales (applied once after the last block, final_code)."""
    free = [v for v in plan.free_regs()]
    if plan.blocked:
        ws, zp = free[:plan.cp], free[plan.cp:plan.cp + plan.rp]
        bsum = free[plan.cp + plan.rp:2 * plan.cp + plan.rp]
        return [], ws, zp, bsum, free[2 * plan.cp + plan.rp:]
    scale = free[:plan.rp]
    ws = free[plan.rp:plan.rp + plan.cp]
    corr = 0 if plan.blocked else plan.rp + plan.cp          # where -zp and the sums start
    zp = free[plan.rp + plan.cp - corr:2 * plan.rp + plan.cp - corr]
    bsum = free[2 * plan.rp + plan.cp - corr:2 * plan.rp + 2 * plan.cp - corr]
    temps = free[2 * plan.rp + 2 * plan.cp - corr:]
    if not temps:
        raise KernelPlanError(f"qdyn4 {plan.ep}x{plan.hp}: no register left for the epilogue")
    return scale, ws, zp, bsum, temps


def tail_body(plan: Qdyn4Plan) -> list[Insn]:
    """The last two k-steps of a block, its fp32 epilogue (header order), the correction of the
    next block (whose sums follow this block's scales in the panel), the pointer advance and
    the block loop's branch (scale blocks: v = wscale * (float)acc, s = s + v per accumulator;
    the row scale follows the last block, final_code). One block (int8, per channel): the last
    two k-steps and s = u = t * (float)acc in place of each accumulator, nothing after."""
    ld1 = ld1_form_fits(plan)
    code = (rotated_steps(plan, last=True) if ld1 else
            decode_ld1_step(plan, 0) + decode_ld1_step(plan, 1) if decode_ld1_fits(plan) else
            k_step(plan, 0) + k_step(plan, 1))
    scale, ws, zp, bsum, temps = epilogue_regs(plan)
    ws_offset = 2 * plan.b_step_bytes()
    for r, reg in enumerate(scale):
        code.append(_load(f"ldr q{reg}, [{ROWS_REG}, #{16 * r}]", reg, ROWS_REG,
                          f"scale of rows {2 * r}-{2 * r + 1}"))
    # the B pointer of the first k-step's first half is where x1 would be (B: these k-steps)
    base = next(r[0] for r in ld1_groups(plan)[HALVES[0]] if r[2] == "x1") if ld1 else "x1"
    code += column_loads(plan, ws_offset, ws, "block scales", base=base)
    if ld1:
        code += args_head(plan)[1:]
    k = 0
    for r in range(plan.rp):
        for c in range(plan.cp):
            acc, s = plan.acc(r, c), plan.fsum(r, c)
            if plan.blocked:          # the block order: v = wscale * (float)acc, s = s + v
                code += [
                    _v(f"scvtf v{acc}.4s, v{acc}.4s, #4",
                       "(float)acc: 16 acc with 4 fraction bits", (f"v{acc}",), (f"v{acc}",)),
                    _v(f"fmul v{acc}.4s, v{acc}.4s, v{ws[c]}.4s", "v = wscale[n][b] * (float)acc",
                       (f"v{acc}",), (f"v{acc}", f"v{ws[c]}")),
                    _v(f"fadd v{s}.4s, v{s}.4s, v{acc}.4s", "s = s + v",
                       (f"v{s}",), (f"v{s}", f"v{acc}"))]
                continue
            t = temps[k % len(temps)]
            k += 1
            code += [
                _v(f"scvtf v{acc}.4s, v{acc}.4s", "(float)acc", (f"v{acc}",), (f"v{acc}",)),
                _v(f"fmul v{t}.4s, v{scale[r]}.4s, v{ws[c]}.4s", "t = scale[m] * wscale[n]",
                   (f"v{t}",), (f"v{scale[r]}", f"v{ws[c]}")),
                _v(f"fmul v{acc}.4s, v{t}.4s, v{acc}.4s", "s = u = t * (float)acc",
                   (f"v{acc}",), (f"v{t}", f"v{acc}")),
            ]
    if not plan.blocked:
        return code
    code += correction(plan, ws_offset + column_bytes(plan), zp, bsum)
    code += [_advance("x0", 2 * plan.a_step_bytes(), "A: next block"),
             *[_advance(ptr, 2 * plan.b_step_bytes() + 2 * column_bytes(plan),
                        "B: past the scales and the next block's sums")
               for ptr in b_pointers(plan)],
             *block_loop_end()]
    return code


def block_loop_end() -> list[Insn]:
    """The block loop's count and branch at the end of the block tail (scale blocks, every
    family: gen/qdyn4_dot.py too). One k-step pair (32 k) per block, bl = 32: the next block is
    all tail, so the loop is the tail alone, without a pass through K_BLOCK's subs / b.eq per
    block (llvm-mca-19: 0.5 cycle on N2 / V1, 1 on A510); none left: Z = 0, fall through to
    BLOCK_LOOP_EXIT."""
    return [Insn("subs x2, x2, #1", "alu", defs=("x2", "nzcv"), uses=("x2",),
                 comment="blocks left"),
            Insn(f"ccmp {KPAIRS_REG}, #1, #0, ne", "alu", defs=("nzcv",),
                 uses=(KPAIRS_REG, "nzcv"), comment="blocks left: Z = (kpairs == 1)"),
            Insn("b.eq K_TAIL", "branch", uses=("nzcv",))]


# After the scheduled block tail (outside its llvm-mca region: bl = 32 never runs it but
# once): longer blocks go through K_BLOCK (the inner loop first), the last falls through to
# the store.
BLOCK_LOOP_EXIT = Insn("cbnz x2, K_BLOCK", "branch", uses=("x2",),
                       comment="blocks left (kpairs > 1): the inner loop first")


def row_scaling(plan: Qdyn4Plan, regs) -> list[Insn]:
    """Scale blocks, after the last block: y = scale[m] * s for every fp32 sum (the row scales
    (s[2i], s[2i], s[2i+1], s[2i+1]) match the 2x2 tiles' rows), before the unzip."""
    code = [ep_mod._i(f"ldr q{reg}, [{ROWS_REG}, #{16 * r}]",
                      f"scale of rows {2 * r}-{2 * r + 1}", "load") for r, reg in enumerate(regs)]
    for r in range(plan.rp):
        for c in range(plan.cp):
            s = plan.fsum(r, c)
            code.append(ep_mod._i(f"fmul v{s}.4s, v{s}.4s, v{regs[r]}.4s",
                                  "y = scale[m] * s" if r == c == 0 else ""))
    return code


def final_code(plan: Qdyn4Plan, hoist: bool = False,
               head: bool = True) -> tuple[list[Insn], list[Insn], list]:
    """After the last block: unzip the fp32 sums into rows, + bias (code), clamp (clamp: the
    template skips it when args->clamp is 0: with cmin = -Inf and cmax = +Inf neither compare is
    ever true and a NaN is kept anyway, the same bits), store (pieces). hoist: the argument and
    bias loads before the unzip, each bias group in a register of its own (an in-order core
    then does not wait for them; llvm-mca-19, int8 8 x 8: Cortex-A510 27 -> 22 cycles). head:
    False when the tail has loaded the bias pointer and cmin / cmax (args_head)."""
    tplan = plan.tile_plan()
    pool = [v for v in plan.free_regs() if v != plan.mask]
    pool = pool + [v for v in plan.acc_regs if v not in plan.sum_regs]
    code = plan.row_scaling(pool[-plan.rp:]) if plan.blocked else []
    groups = -(-plan.hp // 4)
    bias_reg = "x11" if head else TAIL_BIAS_REG
    head = [ep_mod._i(f"ldr x11, [x5, #{OFF['bias']}]", "args->bias", "load"),
            ep_mod._i(f"ldp w12, w13, [x5, #{OFF['cmin']}]", "cmin, cmax", "load")] if head else []
    if hoist:
        reserved = pool[len(pool) - 3 - groups:]
        del pool[len(pool) - 3 - groups:]
        lo, hi, m, biases = reserved[0], reserved[1], reserved[2], reserved[3:]
        head += [ep_mod._i(f"ldr q{b}, [{bias_reg}, #{16 * g}]", f"bias of columns {4 * g}-{4 * g + 3}",
                           "load") for g, b in enumerate(biases)]
        rows_code, rows = ep_mod.tile_rows(tplan, pool)
        code += head + [ep_mod._i(f"dup v{lo}.4s, w12"), ep_mod._i(f"dup v{hi}.4s, w13")] + rows_code
    else:
        more, rows = ep_mod.tile_rows(tplan, pool)
        code += more
        lo, hi, bias, m = pool[:4]
        biases = [bias] * groups
        code += head + [ep_mod._i(f"dup v{lo}.4s, w12"), ep_mod._i(f"dup v{hi}.4s, w13")]
    for g in range(max(len(r) for r in rows)):
        if not hoist:
            code.append(ep_mod._i(f"ldr q{biases[g]}, [{bias_reg}, #{16 * g}]",
                                  f"bias of columns {4 * g}-{4 * g + 3}", "load"))
        code += [ep_mod._i(f"fadd v{row[g][0]}.4s, v{row[g][0]}.4s, v{biases[g]}.4s",
                           f"row {r}: + bias")
                 for r, row in enumerate(rows) if g < len(row)]
    pieces, clamp = [], []
    for r, row in enumerate(rows):
        col, out = 0, []
        for v, n in row:
            clamp += [ep_mod._i(f"fcmgt v{m}.4s, v{lo}.4s, v{v}.4s", f"row {r}: x < cmin"),
                     ep_mod._i(f"bit v{v}.16b, v{lo}.16b, v{m}.16b", "-> cmin"),
                     ep_mod._i(f"fcmgt v{m}.4s, v{v}.4s, v{hi}.4s", "x > cmax"),
                     ep_mod._i(f"bit v{v}.16b, v{hi}.16b, v{m}.16b", "-> cmax")]
            out.append((v, 4 * n, 4 * col))
            col += n
        pieces.append(out)
    return code, clamp, pieces


def store_args_early() -> list[Insn]:
    """ld1 form: the clamp flag (x15) and m_rem / n_rem (x9, x10; ep_mod.rem_loads) loaded
    first at K_STORE, from args in x5 (no ld1 pointer: args from entry to the store, read by
    the tail too), so that the unzip and bias operations cover their load-use latency: an
    in-order core (Cortex-A510) issues in program order and stalls an instruction whose
    operand is not ready, so a load placed right before its use (x5 reload -> ldp -> cmp,
    ldr -> cbz) costs its whole latency, and one placed 20 instructions earlier costs
    nothing on any core. x9, x10 and x15 are the tail's pointers, dead after it."""
    return [ep_mod._i(f"ldr x15, [x5, #{OFF['clamp']}]", "args->clamp", "load"),
            *ep_mod.rem_loads()]


def prologue(plan: Qdyn4Plan) -> list[Insn]:
    code = [ep_mod._i(f"ldr {KPAIRS_REG}, [x5, #{OFF['kpairs']}]", "k-step pairs per block",
                      "load"),
            ep_mod._i(f"ldr {ROWS_REG}, [x5, #{OFF['rows']}]", "row scales and -zp", "load")]
    if plan.blocked:
        code.append(ep_mod._i(f"movi v{plan.mask}.16b, #0xf0", "high-nibble mask"))
        code += [ep_mod._i(f"movi v{s}.4s, #0x80, lsl #24", "s = -0.0 (-0.0 + u_0 = u_0)")
                 for s in plan.sum_regs]
    scale, ws, zp, bsum, _ = epilogue_regs(plan)
    if ld1_form_fits(plan):
        # every load first, the multiplies last (an in-order core waits for each load at its
        # first use): -zp and the sums in the registers of the second half, which the loop
        # loads after the first half's smmla (llvm-mca-19, Cortex-A510: 31 -> 20 cycles); the
        # sums from x1 before it steps past them, and they cover the kpairs load's latency
        # before the k-step count (before x7 becomes an ld1 pointer: LD1_POINTERS) and the
        # loop entry's compare, which is not left behind the multiplies
        corr = correction(plan, 0, plan.a_regs[plan.rp:], plan.b_packed)
        setup = ld1_setup(plan)
        sums = [i for i in corr if i.kind == "load" and "[x1," in i.text]
        return (code + sums
                + [ep_mod._i(f"add x1, x1, #{column_bytes(plan)}", "B: block 0's k-steps"),
                   ep_mod._i(f"lsl {COUNT_REG}, {KPAIRS_REG}, #1", "k-steps (2 per pair)"),
                   *loop_count(plan)]
                + [i for i in setup if i.kind != "load"]
                + [i for i in corr if i.kind == "load" and i not in sums]
                + [i for i in setup if i.kind == "load"]
                + [i for i in corr if i.kind != "load"])
    code += pointer_setup(plan)
    code += [i for i in correction(plan, 0, zp, bsum)]
    code += [ep_mod._i(f"add {ptr}, {ptr}, #{column_bytes(plan)}",
                       "B: block 0's k-steps" if p == 0 else "")
             for p, ptr in enumerate(b_pointers(plan))]
    return code + (decode_ld1_setup(plan) if decode_ld1_fits(plan) else [])


def kernel_symbol(prefix: str, plan: Qdyn4Plan) -> str:
    from .naming import cpu_suffix
    return (f"{prefix}gemm_{SIGNATURES[plan.weights]}_{INSTRUCTIONS[plan.instruction].mnemonic}_"
            f"{plan.ep}x{plan.hp}x{LP}{cpu_suffix(plan.cpu)}")


def panel_bytes_formula(plan: Qdyn4Plan) -> str:
    if not plan.int4 and plan.panels > 1:
        return (f"{plan.panels} panels of {plan.pc} columns per call, args->b_stride apart, "
                f"{plan.pc * 8} + kb * {plan.b_step_bytes()} + {plan.pc * 16} bytes each "
                f"(kb = K/16 k-steps, K padded to 32)")
    if not plan.int4:
        return (f"hp*8 + kb * {plan.b_step_bytes()} + hp*16 bytes per panel "
                f"(kb = K/16 k-steps, K padded to 32)")
    if plan.panels > 1:
        return (f"{plan.panels} panels of {plan.pc} columns per call, args->b_stride apart, "
                f"{plan.pc * 8} + blocks * (kb * {plan.b_step_bytes()} + {plan.pc * 16}) bytes "
                f"each (kb = bl/16 k-steps, even; scales and sums per column pair twice)")
    return (f"hp*8 + blocks * (kb * {plan.b_step_bytes()} + hp*16) bytes per panel "
            f"(kb = bl/16 k-steps, even; scales and sums per column pair twice)")


def scheduled(body: list[Insn], cpu: str) -> list[Insn]:
    """`body` ordered by gen.schedule, checked to keep every dependency (a body without a
    branch, the per-channel tail, may end with any instruction)."""
    from .loop import check_same_dependencies
    order = schedule_loop(body, cpu)
    end = [] if body[-1].kind == "branch" else [Insn("b 1f", "branch")]
    check_same_dependencies(body + end, order + end)
    return order


def emit(plan: Qdyn4Plan, prefix: str, inst_mode: str, env) -> "Kernel":
    from .emit import arch_directive, frame_bytes, restore_registers, save_registers
    if registers_needed(plan.ep, plan.hp, plan.weights) > 32:
        raise KernelPlanError(f"qdyn4 {plan.ep}x{plan.hp}: more than 32 vector registers")
    inst = INSTRUCTIONS[plan.instruction]
    symbol = kernel_symbol(prefix, plan)
    tplan = plan.tile_plan()
    # the rotated ld1 body as built (its loads spread over the smmla): gen.schedule's in-order
    # model packs the loads after the smmla, which llvm-mca-19 times at 41 cycles per two
    # k-steps on Cortex-A510 against 38 as built (N2 32.1, V1 16.1 either way)
    ld1 = ld1_form_fits(plan)
    # the decode ld1 form likewise (its plain order: llvm-mca-19 A510 30 cycles per two k-steps)
    inner = (inner_body(plan) if ld1 or decode_ld1_fits(plan)
             else scheduled(inner_body(plan), plan.cpu))
    # ld1 form: the bias pointer's load first (gen.schedule, whose window ends with the tail,
    # would put it last, right before its use at K_STORE)
    tail = (args_head(plan)[:1] if ld1 else []) + scheduled(tail_body(plan), plan.cpu)
    final, clamp, pieces = final_code(plan, hoist=not plan.blocked, head=not ld1)
    if ld1:
        final = store_args_early() + final
    write = ep_mod.store_row_pieces(tplan, pieces)
    everything = inner + tail + final + clamp + prologue(plan)
    used = sorted({int(n) for i in everything for n in __import__("re").findall(
        r"\bv(\d+)\b", i.text)})
    saved = [f"d{r}" for r in range(8, 16) if r in used]
    args_offset, tile_offset, frame = ep_mod.frame_layout(frame_bytes(saved), tplan)
    context = dict(
        symbol=symbol, plan=plan, inst=inst, lp=LP, prefix=prefix, rl=False, weights=plan.weights,
        doc=None, regs_line=None,
        arch_directive=arch_directive(inst) if inst_mode == "never" else None,
        save=save_registers(saved, frame, args_offset, keep_args=not ld1),
        restore=restore_registers(saved, frame),
        saved=saved, prologue=prologue(plan), inner=inner, tail=tail, final=final, clamp=clamp,
        entry=loop_entry(plan) if ld1 else [], rem=loop_rem(plan) if ld1 else [],
        single=single_body(plan) if ld1 else [], resync=resync(plan) if ld1 else [],
        ld1_steps=LD1_STEPS, tail_exit=[BLOCK_LOOP_EXIT] if plan.blocked else [],
        clamp_flag=OFF["clamp"],
        store_setup=ep_mod.store_setup(tplan, args_offset, tile_offset, 4, require_args=True,
                                       rem_loaded=ld1),
        clamp_loaded=ld1,
        write=write, copy_out=ep_mod.copy_out(tplan, tile_offset, 4),
        a_step=plan.a_step_bytes(), b_step=plan.b_step_bytes(),
        panel=panel_bytes_formula(plan))
    return render_kernel(env, inst_mode, context, plan.instruction, inst.mnemonic, used, saved,
                         ep=plan.ep, hp=plan.hp, lp=LP, a_lp=8, a_step_bytes=plan.a_step_bytes(),
                         b_step_bytes=plan.b_step_bytes(), blocked=plan.blocked,
                         panels=plan.panels, decode=plan.decode, weights=plan.weights,
                         b_layout=panel_bytes_formula(plan))


# The labels of templates/kernel_qdyn4.S.j2's loops and store (besides gen.epilogue.LABELS),
# each defined only where the kernel uses it (ep_mod.render_with_used_labels).
QDYN_LABELS = ("K_BLOCK", "K_INNER", "K_TAIL", "K_REM", "K_SINGLE", "K_STORE", "K_CLAMPED")


def render_kernel(env, inst_mode: str, context: dict, instruction: str, mnemonic: str,
                  used: list, saved: list, **shape) -> "Kernel":
    """Every qdyn kernel's last step (gen.qdyn4, gen.qdyn4_rl, gen.qdyn4_dot): render
    kernel_qdyn4.S.j2 with `context` (its `symbol` names the kernel), rewrite the instructions
    the assembler may lack to .inst words per inst_mode, and build the manifest entry: what
    every qdyn kernel records, with `shape` (tile, k-steps, layout, ...) in the middle."""
    from encoder import rewrite_text
    from .emit import Kernel, gp_registers_used, inst_features
    symbol, inst = context["symbol"], INSTRUCTIONS[instruction]
    text = ep_mod.render_with_used_labels(env.get_template("kernel_qdyn4.S.j2"), context,
                                          QDYN_LABELS + ep_mod.LABELS)
    features = inst_features(inst_mode)
    if features:
        text = rewrite_text(text, features, filename=f"{symbol}.S")
    entry = {"symbol": symbol, "file": f"{symbol}.S", "instruction": instruction,
             "mnemonic": mnemonic, "role": "qdyn4", "feature": inst.feature, "arch": inst.arch,
             **shape, "max_bl": QDYN4_MAX_BL, "vregs_used": used,
             "gpregs_used": gp_registers_used(text), "callee_saved_used": saved, "variants": []}
    return Kernel(symbol, f"{symbol}.S", text, entry)


def c_struct(prefix: str) -> str:
    """The argument block's C declaration; the drivers' ts_pack_internal.h declares the same
    under the same guard (the layout is the ABI, tests/test_qdyn4.py compares them)."""
    guard = f"{prefix.upper()}QDYN_ARGS_DEFINED"
    lines = [f"#ifndef {guard}", f"#define {guard}", f"typedef struct {prefix}qdyn_args {{"]
    for name, offset, ctype, comment in ARGS_FIELDS:
        decl = f"    {ctype} {name};" if not ctype.endswith("*") else f"    {ctype}{name};"
        lines.append(f"{decl:<34}/* {offset:2}: {comment} */" if comment else
                     f"{decl:<34}/* {offset:2} */")
    lines.append(f"}} {prefix}qdyn_args;")
    lines.append(f"typedef void (*{prefix}qdyn_kernel_fn)(const void *a_packed, const void *b_packed, "
                 f"size_t blocks,\n{' ' * 29}float *c, size_t ldc_bytes, "
                 f"const {prefix}qdyn_args *args);")
    lines.append("#endif")
    return "\n".join(lines)
