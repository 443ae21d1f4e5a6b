"""A small throughput model of an SME unit, and the instruction classes it needs (issue 14
deliverable 6). llvm-mca has no SME model, so the SME workloads are estimated from their
dynamic instruction mix (QEMU plugin counts, bench/sme.py) with a few per-cycle rates:

  streaming cycles  = max(MOPAs / MOPA rate, vector loads / load rate,
                          ZA<->Z moves and ZA slice loads/stores / move rate,
                          vector stores / store rate, other streaming instructions / other rate)
                      for the SME kernels, and the same max for the streaming packers
                      (gen/sme_pack.py) as a phase of its own;
                      loads and stores count the Z registers they move (a structure load or
                      store, LD4W / ST2H / ST4B, counts 4 / 2 / 4: see load_per_cycle)
  core cycles       = instructions outside streaming mode (packing, driver loop, requant) / core IPC
  total             = kernels + packers + core (the core waits for the SME unit between calls
                      and the unit idles while the core works: no overlap assumed)
  % of model peak   = useful MACs / (total x peak MACs per cycle), peak = MOPA rate x S*S*k.

The rates are those of one Apple M4 P-cluster SME unit at SVL 512 (the only SME implementation
with published measurements); the model keeps them per instruction at every SVL (a wider unit
is assumed to scale with its vector length), which is what "% of model peak" compares against.
"""
from __future__ import annotations

from dataclasses import dataclass

# ---- instruction classes of an A64 word (Arm ARM DDI0487 A64 encoding index / DDI0616) -----
MOPA, LOAD, STORE, ZA_MOVE, ZA_ZERO, SMSTART, OTHER = (
    "mopa", "load", "store", "za_move", "za_zero", "smstart", "other")
CLASSES = (MOPA, LOAD, STORE, ZA_MOVE, ZA_ZERO, SMSTART, OTHER)


def classify_word(word: int) -> str:
    """The class of one A64 instruction word, for the SME kernels' mix:
    MOPA   SME outer products, 32-bit tiles: op0 bits[31:29] = 100 / 101, bits[28:25] = 0000,
           bit 23 set (FMOPA 0x808..., widening FMOPA 0x81a..., BFMOPA 0x818..., SMOPA 0xa08...,
           USMOPA 0xa18..., their MOPS forms);
    LOAD   SVE contiguous / structure / replicating loads into Z: bits[28:25] = 0010 with
           bits[31:29] = 100 (LD1R*) or 101 (LD1B/H/W, LD4W);
    STORE  SVE stores from Z: bits[31:29] = 111, bits[28:25] = 0010;
    ZA_MOVE ZA tile slice loads / stores (0xe0/0xe1: LD1W/ST1W {ZAnH.S[...]}) and MOVA
           between ZA and Z (0xc0, not ZERO): what moves data into or out of the tiles; also
           ADDHA / ADDVA (0xc090 / 0xc091: a vector added to a whole tile, the int8 requant
           kernel's column offsets, one per tile and call);
    ZA_ZERO ZERO {za...} (0xc008....);
    SMSTART SMSTART / SMSTOP (MSR SVCR*, 0xd50340 7f pattern);
    OTHER  everything else (scalar, branches, predicates, CNTW, ADDVL, the epilogue's vector ALU).
    """
    top, op0, op1 = word >> 24, word >> 29, (word >> 25) & 0xF
    if top in (0x80, 0x81, 0xA0, 0xA1) and word & (1 << 23):
        return MOPA
    if op1 == 0b0010 and op0 in (0b100, 0b101):
        return LOAD
    if op1 == 0b0010 and op0 == 0b111:
        return STORE
    if top in (0xE0, 0xE1):
        return ZA_MOVE
    if top == 0xC0:
        return ZA_ZERO if (word & 0xFFFFFF00) == 0xC0080000 else ZA_MOVE
    if (word & 0xFFFFF0FF) == 0xD503407F:
        return SMSTART
    return OTHER


def vectors_moved(word: int) -> int:
    """Z registers an SVE load / store word moves: 2-4 for the structure forms LD2x-LD4x /
    ST2x-ST4x (scalar plus immediate: bits[15:13] = 111, bit 20 = 1 (stores) / bits[31:25] =
    1010010 with bits[15:13] = 111 (loads), nreg = bits[22:21]; scalar plus scalar: bits[15:13]
    = 110 (loads) / 011 (stores), nreg != 0), else 1 (Arm ARM DDI0487, SVE load/store encodings)."""
    top7, op13, nreg = word >> 25, (word >> 13) & 7, (word >> 21) & 3
    if top7 == 0b1010010 and nreg and (op13 == 0b111 and not word & (1 << 20) or op13 == 0b110):
        return nreg + 1
    if top7 == 0b1110010 and nreg and (op13 == 0b111 and word & (1 << 20) or op13 == 0b011):
        return nreg + 1
    return 1


def block_vectors(code: bytes) -> dict:
    """{LOAD: Z registers loaded, STORE: stored} by one block's SVE loads and stores."""
    moved = {LOAD: 0, STORE: 0}
    for i in range(0, len(code), 4):
        word = int.from_bytes(code[i:i + 4], "little")
        cls = classify_word(word)
        if cls in moved:
            moved[cls] += vectors_moved(word)
    return moved


def block_mix(code: bytes) -> dict:
    """{class: instructions} of one block's little-endian A64 words."""
    mix = dict.fromkeys(CLASSES, 0)
    for i in range(0, len(code), 4):
        mix[classify_word(int.from_bytes(code[i:i + 4], "little"))] += 1
    return mix


# ---- the unit ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class SmeUnit:
    name: str
    mopa_per_cycle: dict      # SME instruction (gen.isa SME_INSTRUCTIONS key) -> MOPAs per cycle
    load_per_cycle: float     # Z registers loaded per cycle (LD1: 1, LD4W: 4)
    store_per_cycle: float    # Z registers stored per cycle (ST1: 1, ST2H: 2, ST4B: 4)
    move_per_cycle: float     # ZA <-> Z moves and ZA slice loads / stores per cycle
    other_per_cycle: float    # other streaming-mode instructions (scalar, predicates) per cycle
    core_ipc: float           # instructions per cycle of the non-streaming driver code
    sources: tuple            # where each figure comes from

    def peak_macs(self, instruction: str, macs_per_mopa: int) -> float:
        """Peak MACs per cycle of one outer product at a given S*S*k."""
        return self.mopa_per_cycle[instruction] * macs_per_mopa


# Apple M4 (P cluster). Figures:
#  - FMOPA fp32: about 2.3 TFLOPS (Remke & Breuer, "Hello SME! Generating Fast Matrix
#    Multiplication Kernels Using the Scalable Matrix Extension", arXiv:2409.18779, 2024; also
#    ~2 TFLOPS in tzakharko/m4-sme-exploration, reports/02-sme-outer-product.md): 512 FLOP per
#    FMOPA at SVL 512 and ~4.4 GHz is one FMOPA per cycle, reached only with 4 independent ZA
#    tiles in flight (the 2VLx2VL kernels use all four).
#  - BFMOPA / widening FMOPA (fp16): the same FLOP rate as fp32 ("FP32-centric", both sources):
#    twice the MACs per instruction, so half an instruction per cycle.
#  - SMOPA / USMOPA (int8 -> int32): about twice the fp32 operation rate (both sources), four
#    times the MACs per instruction: half an instruction per cycle.
#  - loads: assumed one streaming vector (SVL/8 bytes) per cycle from L1. Neither source gives
#    a per-instruction rate for single-vector LD1W into Z; Remke & Breuer measure the transfers
#    into ZA and find loading through Z (then MOVA) faster than direct ZA slice loads.
#    Structure loads / stores (LD4W, ST2H, ST4B) are assumed to move their registers at the same
#    bytes per cycle as single-vector ones (an n-register structure access = n vector loads /
#    stores): neither source measures them, and assuming the de-interleave free would flatter
#    the packers; the model therefore counts registers, not instructions, for the load and
#    store bounds.
#  - stores, ZA<->Z moves, ZA slice loads/stores: assumed one per cycle (the kernels' epilogues
#    only; not a bound at K = 512).
#  - other streaming instructions: assumed 4 per cycle (scalar and predicate work issues on the
#    core's integer pipes beside the unit). This class also holds the streaming vector ALU
#    instructions (the int8 requant epilogue, the column sums and the bf16 rounding of the
#    streaming packers), and for those the figure is optimistic: tzakharko/m4-sme-exploration
#    (results/ssve-vector.json, reports/01-sme-overview.md) measures SVE FMLA in streaming mode
#    on M4 at about 31 GFLOPS fp32 for one thread, i.e. about one 512-bit vector instruction
#    per 4 cycles, whatever the unroll. No integer vector op is measured there; if they run at
#    that rate too, the bf16 packers (about 0.3 M vector instructions at GEMM 512^3) and the
#    requant epilogue cost several times what this model gives them.
#  - core IPC: assumed 4 for the NEON / scalar packing and driver code (a wide out-of-order
#    core; llvm-mca models the same code at 2.5-3.5 on Neoverse V1, see the main report).
APPLE_M4 = SmeUnit(
    name="Apple M4 SME unit (model)",
    mopa_per_cycle={"fmopa_f32": 1.0, "bfmopa": 0.5, "fmopa_f16f32": 0.5,
                    "smopa": 0.5, "usmopa": 0.5},
    load_per_cycle=1.0, store_per_cycle=1.0, move_per_cycle=1.0, other_per_cycle=4.0,
    core_ipc=4.0,
    sources=("MOPA rates: Remke & Breuer, arXiv:2409.18779 (2024); "
             "tzakharko/m4-sme-exploration reports/02-sme-outer-product.md",
             "load / store / move / other rates and core IPC: assumptions (see bench/sme_model.py)"))


@dataclass(frozen=True)
class Estimate:
    streaming_cycles: float
    core_cycles: float
    bound: str                # which rate bounds the streaming part: "mopa", "load", ...
    cycles: float
    macs_per_cycle: float
    peak_macs_per_cycle: float
    percent_of_peak: float
    packing_cycles: float = 0.0   # the streaming packers' phase (0: none ran)


def _phase(unit: SmeUnit, instruction: str, mix: dict, vectors: dict | None) -> tuple:
    """(cycles, bound) of one streaming phase: {class: instructions}, {LOAD/STORE: registers
    moved} (None: one register per load / store instruction)."""
    vectors = vectors or {}
    limits = {
        MOPA: mix.get(MOPA, 0) / unit.mopa_per_cycle[instruction],
        LOAD: vectors.get(LOAD, mix.get(LOAD, 0)) / unit.load_per_cycle,
        STORE: vectors.get(STORE, mix.get(STORE, 0)) / unit.store_per_cycle,
        ZA_MOVE: mix.get(ZA_MOVE, 0) / unit.move_per_cycle,
        OTHER: sum(mix.get(c, 0) for c in (OTHER, ZA_ZERO, SMSTART)) / unit.other_per_cycle,
    }
    bound = max(limits, key=limits.get)
    return limits[bound], bound


def estimate(unit: SmeUnit, instruction: str, streaming: dict, core_instructions: int,
             useful_macs: int, macs_per_mopa: int, vectors: dict | None = None,
             packing: dict | None = None, packing_vectors: dict | None = None) -> Estimate:
    """The model's cycles for one operation: `streaming` {class: dynamic instructions executed
    in streaming mode by the SME kernels} (`vectors`: the registers their loads / stores move),
    `packing` the same of the streaming packers, `core_instructions` executed outside
    streaming mode."""
    kernel, bound = _phase(unit, instruction, streaming, vectors)
    packed = _phase(unit, instruction, packing, packing_vectors)[0] if packing else 0.0
    core = core_instructions / unit.core_ipc
    cycles = kernel + packed + core
    peak = unit.peak_macs(instruction, macs_per_mopa)
    rate = useful_macs / cycles if cycles else 0.0
    return Estimate(kernel, core, bound, cycles, rate, peak,
                    100.0 * rate / peak if peak else 0.0, packed)
