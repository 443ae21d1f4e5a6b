"""Instruction descriptions: the data every later stage (solver, scheduler, emitter) reads.

One `MacInstruction` per multiply-accumulate instruction tilesmith knows. Nothing downstream
hard-codes an instruction's shape: it asks these descriptions.

Terms (GEMM C[M][N] += A[M][K] * B[K][N]):
  rows x cols x k   the block of C one instruction updates (rows of A, columns of B) and the
                    depth of the dot product it performs per output element.
  a_rows_per_reg    rows of A (each k deep) held by one 128-bit A register.
  b_cols_per_reg    columns of B (each k deep) held by one 128-bit B register.
  acc_shape         "row"     : the accumulator is a row vector of C (rows=1, `lanes` columns);
                                A is consumed by element (`vA.s[i]`, `vA.4b[i]`, `vA.h[i]`).
                    "tile2x2" : the accumulator is a 2x2 tile of C in lane order
                                (r0c0, r0c1, r1c0, r1c1); both operands are full vectors.
                                Tiles are unzipped with uzp1/uzp2 .2d before stores.

Semantics are from the Arm Architecture Reference Manual (DDI 0487, section C7.2: FMLA (by
element), SDOT/UDOT/USDOT (by element), SMMLA/UMMLA/USMMLA (vector), BFMMLA, BFDOT (by element),
SMLAL/SMLAL2 (by element)) and the lane pseudo-code quoted in ../shared/seeds/000_* and 001_*.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

ARCH_LEVELS = ("v8", "v82", "v86", "v92")
# The architecture each ARCH level names, as GNU/LLVM `-march` / `.arch` spell it.
ARCH_NAMES = {"v8": "armv8-a", "v82": "armv8.2-a", "v86": "armv8.6-a", "v92": "armv9.2-a"}

# Bytes per element of each operand type.
TYPE_BYTES = {"int8": 1, "uint8": 1, "int16": 2, "bf16": 2, "fp16": 2,
              "fp32": 4, "int32": 4, "uint32": 4}

VECTOR_BYTES = 16   # one NEON register
NUM_VREGS = 32


@dataclass(frozen=True)
class MacInstruction:
    name: str                 # key, e.g. "smmla" or "fmla_f32"
    mnemonic: str             # assembler mnemonic ("smlal" also uses "smlal2", see halves)
    a_type: str               # element type of the A operand as the kernel reads it
    b_type: str
    c_type: str               # accumulator element type
    rows: int                 # C rows one instruction updates
    cols: int                 # C columns one instruction updates
    k: int                    # dot-product depth per output element
    acc_shape: str            # "row" | "tile2x2"
    a_rows_per_reg: int
    b_cols_per_reg: int
    arch: str                 # first ARCH level that has it: v8 | v82 | v86
    feature: Optional[str]    # CPU feature the CPU needs, as GNU `-march` spells it: None,
                              # dotprod, i8mm, bf16, fp16, fp16fml (FEAT_FHM)
    a_index_regs: int = 32    # by-element forms: A must live in v0..v(a_index_regs-1)
    halves: int = 1           # B register columns split across `halves` instructions
                              # (smlal uses the low 4 lanes, smlal2 the high 4)
    source_type: Optional[str] = None  # user-facing input type when packing widens it
    c_arrangement: str = "4s"
    a_arrangement: str = ""   # vector arrangement of A (tile forms) or element suffix (row forms)
    b_arrangement: str = ""
    note: str = ""

    # ---- derived shape facts -------------------------------------------------------------
    @property
    def macs(self) -> int:
        """Multiply-accumulates one instruction performs."""
        return self.rows * self.cols * self.k

    @property
    def operand_bytes(self) -> int:
        return TYPE_BYTES[self.a_type]

    @property
    def lanes(self) -> int:
        """Accumulator lanes per register."""
        return VECTOR_BYTES // TYPE_BYTES[self.c_type]

    @property
    def lp(self) -> int:
        """k granularity of the packed panels (one k-step)."""
        return self.k

    @property
    def c_cols_per_reg(self) -> int:
        return self.lanes if self.acc_shape == "row" else 2

    @property
    def c_rows_per_reg(self) -> int:
        return 1 if self.acc_shape == "row" else 2

    def a_regs(self, ep: int) -> int:
        """A registers one k-step of an ep-row tile needs."""
        return -(-ep // self.a_rows_per_reg)

    def b_regs(self, hp: int) -> int:
        return -(-hp // self.b_cols_per_reg)

    def c_regs(self, ep: int, hp: int) -> int:
        return (-(-ep // self.c_rows_per_reg)) * (-(-hp // self.c_cols_per_reg))

    def tile_ok(self, ep: int, hp: int) -> bool:
        """Whether an ep x hp tile maps onto whole accumulator registers. A and B registers
        may be partly filled (the last one of a k-step is then loaded with a narrower load,
        e.g. `ldr d`): their counts round up (a_regs, b_regs)."""
        return (ep > 0 and hp > 0 and ep % self.c_rows_per_reg == 0
                and hp % self.c_cols_per_reg == 0)

    def bytes_per_mac(self, ep: int, hp: int) -> float:
        """Bytes of A and B loaded per multiply-accumulate for an ep x hp tile."""
        return (ep + hp) * self.operand_bytes / (ep * hp)

    # ---- assembly text -------------------------------------------------------------------
    def mac_text(self, c: int, a: int, b: int, index: int = 0, half: int = 0) -> str:
        """Assembly for one MAC: C register c += A register a (element `index` for row forms)
        times B register b (its `half`-th group of columns when halves > 1)."""
        if self.acc_shape == "tile2x2":
            return (f"{self.mnemonic} v{c}.{self.c_arrangement}, v{a}.{self.a_arrangement}, "
                    f"v{b}.{self.b_arrangement}")
        mnemonic = self.mnemonic + ("2" if half else "")
        b_arr = self.b_arrangement.split("/")[half]
        return f"{mnemonic} v{c}.{self.c_arrangement}, v{b}.{b_arr}, v{a}.{self.a_arrangement}[{index}]"


def _row(name, mnemonic, a, b, c, cols, k, a_rows, arch, feature, a_elem, b_arr, **kw):
    return MacInstruction(name=name, mnemonic=mnemonic, a_type=a, b_type=b, c_type=c, rows=1,
                          cols=cols, k=k, acc_shape="row", a_rows_per_reg=a_rows,
                          b_cols_per_reg=kw.pop("b_cols", cols), arch=arch, feature=feature,
                          a_arrangement=a_elem, b_arrangement=b_arr, **kw)


def _tile(name, mnemonic, a, b, c, k, arch, feature, arr):
    return MacInstruction(name=name, mnemonic=mnemonic, a_type=a, b_type=b, c_type=c, rows=2,
                          cols=2, k=k, acc_shape="tile2x2", a_rows_per_reg=2, b_cols_per_reg=2,
                          arch=arch, feature=feature, a_arrangement=arr, b_arrangement=arr)


INSTRUCTIONS: dict[str, MacInstruction] = {i.name: i for i in (
    # Armv8.0 fp32: FMLA Vd.4S, Vn.4S, Vm.S[i] -- A register = 4 rows at one k.
    _row("fmla_f32", "fmla", "fp32", "fp32", "fp32", 4, 1, 4, "v8", None, "s", "4s"),
    # Armv8.2 FP16: FMLA Vd.8H, Vn.8H, Vm.H[i] (Vm in v0-v15), fp16 accumulators.
    _row("fmla_f16", "fmla", "fp16", "fp16", "fp16", 8, 1, 8, "v82", "fp16", "h", "8h",
         a_index_regs=16, c_arrangement="8h"),
    # Armv8.2 FEAT_FHM: FMLAL/FMLAL2 Vd.4S, Vn.4H, Vm.H[i] (Vm in v0-v15): fp16 products
    # widened to fp32 (exact), accumulated in fp32 (one rounding per term). FMLAL reads the
    # low four halves of Vn, FMLAL2 the high four: like smlal, one B register of 8 columns
    # feeds two MACs (Arm ARM DDI0487 C7.2 FMLAL, FMLAL2 (by element)).
    _row("fmlal", "fmlal", "fp16", "fp16", "fp32", 4, 1, 8, "v82", "fp16fml", "h", "4h/4h",
         b_cols=8, a_index_regs=16, halves=2),
    # Armv8.0 int8 path: operands widened to int16 when packed (exact: |a*b| <= 2^14), then
    # SMLAL/SMLAL2 Vd.4S, Vn.4H/8H, Vm.H[i] (Vm in v0-v15); one B register feeds two MACs.
    _row("smlal", "smlal", "int16", "int16", "int32", 4, 1, 8, "v8", None, "h", "4h/8h",
         b_cols=8, a_index_regs=16, halves=2, source_type="int8"),
    # Armv8.2 dotprod: SDOT/UDOT Vd.4S, Vn.16B, Vm.4B[i] -- A register = 4 rows x 4 k.
    _row("sdot", "sdot", "int8", "int8", "int32", 4, 4, 4, "v82", "dotprod", "4b", "16b"),
    _row("udot", "udot", "uint8", "uint8", "uint32", 4, 4, 4, "v82", "dotprod", "4b", "16b"),
    # Armv8.6 i8mm: USDOT Vd.4S, Vn.16B (unsigned), Vm.4B[i] (signed). In the row form A is
    # the by-element operand, so usdot computes int8 A x uint8 B: not the uint8 x int8 GEMM
    # (that would need B by element and C transposed). SUDOT Vd.4S, Vn.16B (signed),
    # Vm.4B[i] (unsigned) is its mirror and has exactly the u8s8 roles: B (int8) the vector,
    # A (uint8) by element (Arm ARM DDI0487 C7.2 USDOT (by element), SUDOT (by element)).
    _row("usdot", "usdot", "int8", "uint8", "int32", 4, 4, 4, "v86", "i8mm", "4b", "16b"),
    _row("sudot", "sudot", "uint8", "int8", "int32", 4, 4, 4, "v86", "i8mm", "4b", "16b"),
    # Armv8.6 BF16: BFDOT Vd.4S, Vn.8H, Vm.2H[i] -- A register = 4 rows x 2 k.
    _row("bfdot", "bfdot", "bf16", "bf16", "fp32", 4, 2, 4, "v86", "bf16", "2h", "8h"),
    # Armv8.6 i8mm: [2x8] x [8x2] -> 2x2 int32 (seed 001, SMMLA pseudo-code).
    _tile("smmla", "smmla", "int8", "int8", "int32", 8, "v86", "i8mm", "16b"),
    _tile("ummla", "ummla", "uint8", "uint8", "uint32", 8, "v86", "i8mm", "16b"),
    # USMMLA Vd.4S, Vn.16B (unsigned A), Vm.16B (signed B).
    _tile("usmmla", "usmmla", "uint8", "int8", "int32", 8, "v86", "i8mm", "16b"),
    # Armv8.6 BF16: [2x4] x [4x2] -> 2x2 fp32 (seed 001, BFMMLA pseudo-code).
    _tile("bfmmla", "bfmmla", "bf16", "bf16", "fp32", 4, "v86", "bf16", "8h"),
)}

# Which instructions `make gen ARCH=...` turns into kernels (issue: kernel generator).
# v82 gains the FEAT_FP16 / FEAT_FHM fp16 kernels (both Armv8.2 extensions; FHM is optional
# there and mandatory from Armv8.4 with FP16), v86 the FEAT_I8MM / FEAT_BF16 dot forms.
# Not generated: usdot (no int8 x uint8 GEMM type, see its description), bfmlalb/t (see
# NOT_GENERATED).
GENERATED = {
    "v8": ("fmla_f32", "smlal"),
    "v82": ("fmla_f32", "smlal", "sdot", "udot", "fmla_f16", "fmlal"),
    "v86": ("fmla_f32", "smlal", "sdot", "udot", "fmla_f16", "fmlal", "smmla", "ummla",
            "usmmla", "sudot", "bfdot", "bfmmla"),
    # v92: the v86 set (every CPU with SME has i8mm and bf16: Armv9.2 includes Armv8.6) plus the
    # SME kernels of SME_GENERATED, called only after a run-time SME check.
    "v92": ("fmla_f32", "smlal", "sdot", "udot", "fmla_f16", "fmlal", "smmla", "ummla",
            "usmmla", "sudot", "bfdot", "bfmmla"),
}

# Features a CPU of an ARCH level may lack (optional in the architecture at that level): a
# per-CPU build (CPU=...) of a core without one leaves those kernels out instead of refusing.
# FEAT_FHM is optional in Armv8.2 (mandatory with FP16 from Armv8.4; Cortex-A55 lacks it).
OPTIONAL_FEATURES = {"v8": (), "v82": ("fp16fml",), "v86": ("fp16fml",), "v92": ()}

# Instructions considered and left out: {name: (ARCH level, the reason `make tiles` prints)}. BFMLALB/BFMLALT
# Vd.4S, Vn.8H, Vm.H[i] (FEAT_BF16) multiply the even (B) or odd (T) bf16 elements of Vn by one
# bf16 element and add to 4 fp32 lanes: 4 MACs per instruction where BFDOT does 8 and BFMMLA
# 16, at the same issue rate on every modeled core (LLVM 19: bfmlalb 2/cycle on N2 and A510,
# 4/cycle on V1, latency 4), so per cycle it peaks at half of bfdot and a quarter of bfmmla.
# What it offers is IEEE fp32 accumulation (no round-to-odd / flush-to-zero of BFDotAdd),
# which the bf16 GEMM type does not promise.
NOT_GENERATED = {
    "bfmlalb": ("v86",
                "4 MACs per instruction (bfdot 8, bfmmla 16) at bfdot's issue rate on every "
                "modeled core: half of bfdot's peak; kept out (its only gain, IEEE fp32 "
                "accumulation, is not part of the bf16 GEMM contract)"),
}

# Type signature used in kernel symbols: ts_gemm_<sig>_<mnemonic>_<ep>x<hp>x<lp>.
SIGNATURES = {
    ("fp32", "fp32"): "f32", ("fp16", "fp16"): "f16", ("int16", "int16"): "s8s32",
    ("int8", "int8"): "s8s32", ("uint8", "uint8"): "u8u32", ("int8", "uint8"): "s8u8s32",
    ("uint8", "int8"): "u8s8s32", ("bf16", "bf16"): "bf16f32",
}
# fp16 operands with fp32 accumulation (fmlal) are f16f32, fp16 accumulation (fmla .8h) f16.
_WIDENING = {("fp16", "fp16", "fp32"): "f16f32"}


def signature(inst: MacInstruction) -> str:
    return _WIDENING.get((inst.a_type, inst.b_type, inst.c_type),
                         SIGNATURES[(inst.a_type, inst.b_type)])


def arch_includes(arch: str, level: str) -> bool:
    """Whether ARCH `arch` offers instructions introduced at `level`."""
    return ARCH_LEVELS.index(level) <= ARCH_LEVELS.index(arch)


def check_arch(arch: str) -> str:
    if arch not in ARCH_LEVELS:
        raise ValueError(f"unknown ARCH {arch!r}: valid values are {', '.join(ARCH_LEVELS)}")
    return arch


def instructions_for(arch: str) -> list[MacInstruction]:
    """Every described instruction available at ARCH level `arch`."""
    check_arch(arch)
    return [i for i in INSTRUCTIONS.values() if arch_includes(arch, i.arch)]


def generated_by_some_arch(name: str) -> bool:
    """Whether any ARCH level generates kernels of instruction `name` (the solver knows more)."""
    return any(name in names for names in GENERATED.values())


def generated_for(arch: str) -> list[MacInstruction]:
    """The instructions that get kernels at ARCH level `arch`."""
    check_arch(arch)
    return [INSTRUCTIONS[n] for n in GENERATED[arch]]


# ---- SME outer products (ARCH v92) ----------------------------------------------------------
# An SME kernel is vector-length agnostic: the same code runs at every streaming vector length
# SVL (128..2048 bits, a power of two; SME supplement DDI0616, "Streaming SVE mode"). Shapes are
# therefore counted in units of S = SVL / 32: the 32-bit lanes of one streaming vector, which is
# also the number of rows and of columns of one 32-bit ZA tile (ZA0.S-ZA3.S, each S x S; the
# four tiles together are the whole ZA array of SVL/8 x SVL/8 bytes).
ZA_TILES_32 = 4


@dataclass(frozen=True)
class OuterProductInstruction:
    """One SME outer product (MOPA) into a 32-bit ZA tile, described with SVL-relative shape.

    `FMOPA ZAda.S, Pn/M, Pm/M, Zn.T, Zm.T` (SME supplement DDI0616, FMOPA (non-widening),
    FMOPA (widening), BFMOPA, SMOPA, USMOPA): Zn holds S rows of A, each `k` consecutive
    elements deep; Zm holds S columns of B, `k` deep; every element (i, j) of the S x S tile
    gains sum over kk < k of Zn[i*k + kk] * Zm[j*k + kk]. One instruction: S * S * k MACs.
    So one k-step of an A (B) panel row block is exactly one streaming vector, which is the
    packed layout the NEON kernels already use (row r's lp k-values contiguous).
    """
    name: str                 # key, e.g. "fmopa_f32"
    mnemonic: str
    a_type: str
    b_type: str
    c_type: str               # accumulator (ZA tile) element type
    k: int                    # dot-product depth per output element (= lp)
    z_suffix: str             # element suffix of Zn/Zm: "s", "h" or "b"
    out_type: str             # element type the GEMM type finally writes (see gen.sme_tiling)
    signature: str            # type signature in symbols
    arch: str = "v92"
    feature: str = "sme"      # FEAT_SME: every form here is in the base SME extension
    za_tiles: int = ZA_TILES_32
    source: str = ""

    @property
    def lp(self) -> int:
        return self.k

    @property
    def operand_bytes(self) -> int:
        return TYPE_BYTES[self.a_type]

    @property
    def load_mnemonic(self) -> str:
        """SVE contiguous load of one panel vector: ld1b / ld1h / ld1w."""
        return {1: "ld1b", 2: "ld1h", 4: "ld1w"}[self.operand_bytes]

    def macs(self, s: int) -> int:
        """MACs of one instruction when a streaming vector has s 32-bit lanes."""
        return s * s * self.k

    def mac_text(self, tile: int, a: int, b: int, row_pred: int = 0, col_pred: int = 0) -> str:
        t = self.z_suffix
        return (f"{self.mnemonic} za{tile}.s, p{row_pred}/m, p{col_pred}/m, z{a}.{t}, "
                f"z{b}.{t}")


SME_INSTRUCTIONS: dict[str, OuterProductInstruction] = {i.name: i for i in (
    OuterProductInstruction("fmopa_f32", "fmopa", "fp32", "fp32", "fp32", 1, "s", "fp32", "f32",
                            source="DDI0616 FMOPA (non-widening), single-precision"),
    OuterProductInstruction("fmopa_f16f32", "fmopa", "fp16", "fp16", "fp32", 2, "h", "fp32",
                            "f16f32", source="DDI0616 FMOPA (widening), half to single"),
    OuterProductInstruction("bfmopa", "bfmopa", "bf16", "bf16", "fp32", 2, "h", "fp32",
                            "bf16f32", source="DDI0616 BFMOPA (widening)"),
    # int8 GEMM types end in 8 bits (gemm_s8 / conv2d_s8 requantise their int32 sums to int8,
    # gemm_u8 to uint8): out_type int8 / uint8 is what makes the solver pick a 1 x 4 tile for
    # smopa and usmopa (gen.sme_tiling), whose requantising kernels store a row as one vector.
    OuterProductInstruction("smopa", "smopa", "int8", "int8", "int32", 4, "b", "int8", "s8s32",
                            source="DDI0616 SMOPA, 32-bit"),
    OuterProductInstruction("usmopa", "usmopa", "uint8", "int8", "int32", 4, "b", "uint8",
                            "u8s8s32", source="DDI0616 USMOPA, 32-bit"),
)}

# Which outer products `make gen ARCH=...` turns into SME kernels.
SME_GENERATED = {"v8": (), "v82": (), "v86": (),
                 "v92": ("fmopa_f32", "smopa", "usmopa", "bfmopa", "fmopa_f16f32")}


def sme_generated_for(arch: str) -> list[OuterProductInstruction]:
    """The SME outer products that get kernels at ARCH level `arch`."""
    check_arch(arch)
    return [SME_INSTRUCTIONS[n] for n in SME_GENERATED[arch]]
