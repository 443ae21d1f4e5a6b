"""Per-core latency / throughput tables for the solver and the scheduler.

Source of every number: LLVM 19's AArch64 scheduling models (AArch64SchedNeoverseN2.td,
AArch64SchedNeoverseV1.td, AArch64SchedA510.td, AArch64SchedA55.td; cortex-a710 uses the N2
model), measured with llvm-mca-19 on 2026-11-22:
  latency    = cycles per iteration of a chain of MACs into one accumulator;
  throughput = instructions per cycle of 16 independent MACs;
  load       = `ldr q` latency / reciprocal throughput from `llvm-mca -instruction-info`.
These agree with the Arm Software Optimization Guides where those publish the figure (e.g.
Neoverse N2 SOG: FMLA 4 cycles, 2/cycle; SDOT 3 cycles; SMMLA/BFMMLA on V1 4/cycle peak).
Cortex-A55 has no i8mm/bf16: the model still times them, `has` says what the core really has.

`ops` (per-instruction-class issue facts, used by gen.issue_model and gen.schedule) comes from
the same .td files: latency, micro-ops, the pipeline units an instruction holds and for how
many cycles (ReleaseAtCycles), and the two in-order flags llvm-mca's InOrderIssueStage reads:
RetireOOO (exempt from in-order write-back) and BeginGroup (must issue first in its cycle).
For the out-of-order cores the same table drives an in-order approximation of their issue
(the scheduler only needs a sensible order there; the hardware reorders).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True)
class OpTiming:
    latency: int                    # cycles until the (last) result can be read
    uops: int = 1                   # issue slots taken
    units: tuple = ()               # ((unit name, units held, cycles held), ...)
    retire_ooo: bool = False        # llvm-mca RetireOOO: exempt from in-order write-back
    begin_group: bool = False       # llvm-mca BeginGroup: first instruction of its cycle
    first_write: Optional[int] = None  # earliest result (default: latency)

    @property
    def first_result(self) -> int:
        return self.latency if self.first_write is None else self.first_write


# Instruction classes gen.schedule.op_class() sorts a loop instruction into. MACs use their
# gen.isa key ("fmla_f32", "smmla", ...).
LOAD_CLASSES = ("ldr_q", "ldr_d", "ldr_x", "ldr_r", "ldp_q", "ldp_d", "ld1_1", "ld1_2",
                "ld1_3", "ld1_4", "ld1r")
# "ldr_r": a SIMD&FP `ldr` with a register offset (`ldr q5, [x1, x9]`, gen/loop.py load form
# "ldr_r"); llvm-mca-19 -instruction-info, 2026-11-23: A55 4 cycles (the immediate form 3)
# holding the load pipe 1 cycle, A510 2 cycles, N2 / V1 7 cycles for q (2 micro-ops), 6 for d.
OTHER_CLASSES = ("ins", "alu", "branch", "vint", "vfp")
# "vint": 128-bit integer SIMD ALU operations (shl, and, mul, movi, uzp/zip: the int4 unpack and
# the qdyn kernels' zero-point correction, gen/qdyn4.py); "vfp": 128-bit fp32 arithmetic and
# compares (scvtf, fmul, fadd, fcmgt, bit: the qdyn kernels' fp32 epilogue). Each from the same
# LLVM 19 models: N2/V1 V pipes (2 / 4), A510 both on its two SIMD ALUs with the matrix MACs
# (llvm-mca-19 -resource-pressure, 2026-11-23: scvtf, fmul, fadd, mul .4s on VALU0/1, 4 cycles,
# in-order write-back; only fmla / fmls use its VMAC pipes), A55 both FP ALUs for a 128-bit
# integer op (BeginGroup), its FP pipes for fp32.
MAC_KEYS = ("fmla_f32", "fmla_f16", "fmlal", "smlal", "sdot", "udot", "usdot", "sudot",
            "bfdot", "smmla", "ummla", "usmmla", "bfmmla")


@dataclass(frozen=True)
class CoreModel:
    name: str                      # tilesmith CPU name (also the llvm-mca -mcpu value)
    llvm_cpu: str
    in_order: bool
    issue_width: int               # instructions issued per cycle (dispatch width)
    features: frozenset            # CPU features the real core has
    mac: dict                      # instruction key -> (latency cycles, instructions per cycle)
    load_latency: int              # ldr q, cycles until the value can feed a MAC
    loads_per_cycle: float         # 128-bit loads per cycle
    units: dict = field(default_factory=dict)   # pipeline unit -> how many
    ops: dict = field(default_factory=dict)     # instruction class -> OpTiming
    alu_forward: int = 0           # cycles an ALU result reaches another ALU op early
                                   # (llvm ReadAdvance<ReadI>)

    def latency(self, inst: str) -> int:
        return self.mac[inst][0]

    def throughput(self, inst: str) -> float:
        return self.mac[inst][1]

    def min_accumulators(self, inst: str) -> int:
        """Independent accumulators needed so chained MACs never stall: latency x throughput."""
        lat, tput = self.mac[inst]
        return int(-(-lat * tput // 1))

    def refill_latency(self, inst: str) -> int:
        """Cycles between issuing the load that refills an operand register and the first MAC
        that can read it, for the load form the kernels use with `inst` on this core (see
        gen/loop.py, "Load forms"): on an in-order core whose MAC is not RetireOOO, a load
        that writes back sooner than the MACs before it waits for them (in-order write-back),
        so the kernels load with single-register `ld1` (A510: 3 cycles, A55: 5), which issues
        alongside the MACs; otherwise `ldr` with an immediate offset."""
        if self.in_order and not self.op(inst).retire_ooo:
            return self.op("ld1_1").latency
        return self.load_latency

    def has(self, feature) -> bool:
        return feature is None or feature in self.features

    def op(self, op_class: str) -> OpTiming:
        try:
            return self.ops[op_class]
        except KeyError:
            raise ValueError(f"{self.name}: no issue timing for instruction class "
                             f"{op_class!r}") from None


def _mac_table(fmla, fmla16, smlal, dot, bfdot, mmla, bfmmla, fmlal):
    return {"fmla_f32": fmla, "fmla_f16": fmla16, "fmlal": fmlal, "smlal": smlal, "sdot": dot,
            "udot": dot, "usdot": dot, "sudot": dot, "bfdot": bfdot, "smmla": mmla, "ummla": mmla, "usmmla": mmla,
            "bfmmla": bfmmla}


def _ops(loads: dict, other: dict, macs: dict) -> dict:
    table = {**loads, **other, **macs}
    missing = set(LOAD_CLASSES + OTHER_CLASSES + MAC_KEYS) - set(table)
    assert not missing, f"issue table lacks {sorted(missing)}"
    return table


def _same(timing: OpTiming, keys) -> dict:
    return {k: timing for k in keys}


# ---- Cortex-A510 (AArch64SchedA510.td): 3-wide in-order; 2 load pipes (CortexA510UnitLd
# group), 3 integer ALUs, 2 SIMD ALUs (dot products, matrix MACs, smlal, ins, and the 128-bit
# fp32 scvtf / fmul / fadd / compares, not RetireOOO), 2 SIMD MAC pipes (fmla, RetireOOO). Loads: ldr 2 cycles, ld1 of 1-2 registers 3, of 3-4 registers 4
# holding a pipe 2 cycles (CortexA510WriteVLD1/VLD2), ldp 3 (VLD1 + LDPn).
_A510_UNITS = {"alu": 3, "ld": 2, "valu": 2, "vmac": 2, "br": 1}
_A510_OPS = _ops(
    loads={"ldr_q": OpTiming(2, units=(("ld", 1, 1),)),
           "ldr_d": OpTiming(2, units=(("ld", 1, 1),)),
           "ldr_x": OpTiming(2, units=(("ld", 1, 1),)),
           "ldr_r": OpTiming(2, units=(("ld", 1, 1),)),
           "ldp_q": OpTiming(3, uops=2, units=(("ld", 1, 2),)),
           "ldp_d": OpTiming(3, uops=2, units=(("ld", 1, 2),)),
           "ld1_1": OpTiming(3, units=(("ld", 1, 1),)),
           "ld1_2": OpTiming(3, units=(("ld", 1, 1),)),
           "ld1_3": OpTiming(4, units=(("ld", 1, 2),)),
           "ld1_4": OpTiming(4, units=(("ld", 1, 2),)),
           "ld1r": OpTiming(3, units=(("ld", 1, 1),))},
    other={"ins": OpTiming(4, units=(("valu", 1, 1),)),
           "alu": OpTiming(1, units=(("alu", 1, 1),)),
           "branch": OpTiming(1, units=(("br", 1, 1),)),
           "vint": OpTiming(3, units=(("valu", 1, 1),)),
           "vfp": OpTiming(4, units=(("valu", 1, 1),))},
    macs={**_same(OpTiming(4, units=(("vmac", 1, 1),), retire_ooo=True),
                  ("fmla_f32", "fmla_f16")),
          **_same(OpTiming(4, units=(("valu", 1, 1),)),
                  ("smlal", "sdot", "udot", "usdot", "sudot", "bfdot", "fmlal", "smmla",
                   "ummla", "usmmla", "bfmmla"))})

# ---- Cortex-A55 (AArch64SchedA55.td): 2-wide in-order; 1 load pipe, 2 integer ALUs (3-cycle
# results, forwarded 2 cycles early to ALU consumers), FP MAC pipes for fmla (RetireOOO), and
# 128-bit integer/dot/matrix ops and `ins` take both FP ALUs and start an issue group
# (CortexA55WriteVq: BeginGroup). Loads: ldr 3 cycles; ld1 of n registers holds the pipe 2n
# cycles; ldp q 4/6 cycles holding the pipe 6.
_A55_UNITS = {"alu": 2, "ld": 1, "fpalu": 2, "fpmac": 2, "br": 1}
_A55_VQ = OpTiming(4, units=(("fpalu", 2, 1),), begin_group=True)
_A55_OPS = _ops(
    loads={"ldr_q": OpTiming(3, units=(("ld", 1, 1),)),
           "ldr_d": OpTiming(3, units=(("ld", 1, 1),)),
           "ldr_x": OpTiming(3, units=(("ld", 1, 1),)),
           "ldr_r": OpTiming(4, units=(("ld", 1, 1),)),
           "ldp_q": OpTiming(6, uops=2, units=(("ld", 1, 6),), first_write=4),
           "ldp_d": OpTiming(5, uops=2, units=(("ld", 1, 2),), first_write=4),
           "ld1_1": OpTiming(5, units=(("ld", 1, 2),)),
           "ld1_2": OpTiming(7, units=(("ld", 1, 4),)),
           "ld1_3": OpTiming(9, units=(("ld", 1, 6),)),
           "ld1_4": OpTiming(11, units=(("ld", 1, 8),)),
           "ld1r": OpTiming(4, units=(("ld", 1, 1),))},
    other={"ins": _A55_VQ,
           "alu": OpTiming(3, units=(("alu", 1, 1),)),
           "branch": OpTiming(1, units=(("br", 1, 1),)),
           "vint": OpTiming(3, units=(("fpalu", 2, 1),), begin_group=True),
           "vfp": OpTiming(4, units=(("fpmac", 1, 1),), retire_ooo=True)},
    macs={**_same(OpTiming(4, units=(("fpmac", 1, 1),), retire_ooo=True),
                  ("fmla_f32", "fmla_f16", "bfdot", "fmlal")),
          **_same(_A55_VQ, ("smlal", "sdot", "udot", "usdot", "sudot", "smmla", "ummla",
                            "usmmla", "bfmmla"))})


# ---- Out-of-order cores (N2 = A710 model, V1): approximated as in-order issue of the given
# width with their latencies and pipe counts (MAC pipes: 2 on N2, 4 on V1; 3 load pipes).
def _ooo_ops(mac_table: dict, mac_pipes: int, ins_latency: int) -> dict:
    # an n-register ld1 is n micro-ops over the 3 load pipes (4 registers: 1.33 cycles)
    load = lambda lat, n=1: OpTiming(lat, uops=n, units=(("ld", min(n, 3), 1 + (n > 3)),),
                                     retire_ooo=True)
    return _ops(
        loads={"ldr_q": load(6), "ldr_d": load(6), "ldr_x": load(4), "ldr_r": load(7),
               "ldp_q": load(6, 2),
               "ldp_d": load(6, 2), "ld1_1": load(6), "ld1_2": load(6, 2),
               "ld1_3": load(6, 3), "ld1_4": load(7, 4), "ld1r": load(8)},
        other={"ins": OpTiming(ins_latency, uops=2, units=(("v", 1, 1),), retire_ooo=True),
               "alu": OpTiming(1, units=(("alu", 1, 1),), retire_ooo=True),
               "branch": OpTiming(1, units=(("br", 1, 1),), retire_ooo=True),
               "vint": OpTiming(2, units=(("v", 1, 1),), retire_ooo=True),
               "vfp": OpTiming(3, units=(("v", 1, 1),), retire_ooo=True)},
        macs={key: OpTiming(lat, units=(("v", 1, max(1, round(mac_pipes / tput))),),
                            retire_ooo=True)
              for key, (lat, tput) in mac_table.items()})


# FEAT_FHM (fp16fml): Armv8.4 makes it mandatory with FP16, so A510 / A710 / N2 (Armv9.0) and
# V1 (Armv8.4) have it; Cortex-A55 (Armv8.2) does not (TRM 100442, ID_AA64ISAR0_EL1.FHM = 0).
# fmlal timings (last column): llvm-mca-19 chains / 16 independent MACs, 2026-11-22: N2 2 cycles
# (accumulator forwarding), 2/cycle; V1 2, 4/cycle; A510 4, 2/cycle (SIMD ALU pipe, like sdot);
# A55 4, 2/cycle (FP MAC pipe, like fmla).
_ALL = frozenset({"fp16", "fp16fml", "dotprod", "i8mm", "bf16"})
_N2_TABLE = _mac_table((4, 2), (4, 2), (4, 1), (3, 2), (2, 2), (3, 2), (5, 2), (2, 2))
_V1_TABLE = _mac_table((4, 4), (4, 4), (4, 2), (2, 4), (4, 4), (3, 4), (5, 4), (2, 4))
_N2_UNITS = {"alu": 4, "ld": 3, "v": 2, "br": 2}
_V1_UNITS = {"alu": 4, "ld": 3, "v": 4, "br": 2}

CORES: dict[str, CoreModel] = {c.name: c for c in (
    CoreModel("neoverse-n2", "neoverse-n2", False, 5, _ALL, _N2_TABLE, 6, 3,
              units=_N2_UNITS, ops=_ooo_ops(_N2_TABLE, 2, 5)),
    CoreModel("cortex-a710", "cortex-a710", False, 5, _ALL, _N2_TABLE, 6, 3,
              units=_N2_UNITS, ops=_ooo_ops(_N2_TABLE, 2, 5)),
    CoreModel("neoverse-v1", "neoverse-v1", False, 8, _ALL, _V1_TABLE, 6, 3,
              units=_V1_UNITS, ops=_ooo_ops(_V1_TABLE, 4, 5)),
    CoreModel("cortex-a510", "cortex-a510", True, 3, _ALL,
              _mac_table((4, 2), (4, 2), (4, 2), (4, 2), (4, 2), (4, 2), (4, 2), (4, 2)), 2, 2,
              units=_A510_UNITS, ops=_A510_OPS),
    CoreModel("cortex-a55", "cortex-a55", True, 2, frozenset({"fp16", "dotprod"}),
              _mac_table((4, 2), (4, 2), (4, 1), (4, 1), (4, 2), (4, 1), (4, 1), (4, 2)), 3, 1,
              units=_A55_UNITS, ops=_A55_OPS, alu_forward=2),
)}

# "generic": the schedule that targets both in-order and out-of-order cores reasonably; the
# solver sizes accumulators for the most demanding of the cores above.
GENERIC = "generic"
CPU_NAMES = (GENERIC, *CORES)

# The Arm Ltd cores run-time dispatch knows: CPU name -> (MIDR_EL1 part number, core class). The
# one table of the drivers' names, parts, classes and cache sizes (generated into ts_dispatch.c
# as ts_cpu_cores by gen/drivers.py cpu_cores(): run-time detection ts_core_class_of_midr, the
# names ts_context_set_cpu accepts, ts_cpu_lookup, and the cache blocks of ts_blocks.c).
# MIDR_EL1 fields (Arm ARM D23.2 "MIDR_EL1"): implementer [31:24] (0x41: Arm Limited), variant
# [23:20], architecture [19:16], part number [15:4], revision [3:0]. Part numbers from each
# core's Technical Reference Manual, "MIDR_EL1, Main ID Register" (the same values as Linux
# arch/arm64/include/asm/cputype.h ARM_CPU_PART_*); names as LLVM's -mcpu values (CPU= names
# are among them). Classes: the in-order pipelines (Cortex-A35/A53/A55/A510/A520) and the
# out-of-order ones; other implementers and parts are unknown and get the generic kernels.
ARM_PARTS: dict[str, tuple[int, str]] = {
    "cortex-a35": (0xD04, "inorder"),
    "cortex-a53": (0xD03, "inorder"),
    "cortex-a55": (0xD05, "inorder"),
    "cortex-a510": (0xD46, "inorder"),
    "cortex-a520": (0xD80, "inorder"),
    "cortex-a57": (0xD07, "ooo"),
    "cortex-a72": (0xD08, "ooo"),
    "cortex-a73": (0xD09, "ooo"),
    "cortex-a75": (0xD0A, "ooo"),
    "cortex-a76": (0xD0B, "ooo"),
    "neoverse-n1": (0xD0C, "ooo"),
    "cortex-a77": (0xD0D, "ooo"),
    "neoverse-v1": (0xD40, "ooo"),
    "cortex-a78": (0xD41, "ooo"),
    "cortex-x1": (0xD44, "ooo"),
    "cortex-a710": (0xD47, "ooo"),
    "cortex-x2": (0xD48, "ooo"),
    "neoverse-n2": (0xD49, "ooo"),
    "cortex-a715": (0xD4D, "ooo"),
    "cortex-x3": (0xD4E, "ooo"),
    "neoverse-v2": (0xD4F, "ooo"),
    "cortex-a720": (0xD81, "ooo"),
    "cortex-x4": (0xD82, "ooo"),
}

# Core classes of the run-time variants: a CPU=generic build also emits, per instruction, the
# kernel tuned for each class (tile and schedule for the class's cores only) wherever it differs
# from the generic one; the driver picks a class per call from the core it runs on (MIDR_EL1,
# drivers/src/ts_cpu.c). The class names are internal (symbol suffix `_<class>`, manifest
# `core_class`); they are not CPU= values. Every named CPU belongs to exactly one class: its
# ARM_PARTS class (out-of-order first, each in CORES order).
CORE_CLASSES: dict[str, tuple[str, ...]] = {
    cls: tuple(name for name in CORES if ARM_PARTS[name][1] == cls) for cls in ("ooo", "inorder")}


# MIDR_EL1 of each modeled core, r0p0 (implementer 0x41 Arm, architecture 0xF, its ARM_PARTS
# part number; variant and revision are 0 here, only the part number matters to dispatch). The
# bench runs a class's workloads with QEMU reporting its representative (CLASS_MIDR).
MIDR = {name: 0x410F0000 | ARM_PARTS[name][0] << 4 for name in CORES}
CLASS_MIDR = {"ooo": MIDR["neoverse-n2"], "inorder": MIDR["cortex-a510"]}


def core_class(name: str) -> str:
    """The class of a CPU= name ("generic" for generic)."""
    check_cpu(name)
    return next((k for k, cpus in CORE_CLASSES.items() if name in cpus), GENERIC)


def check_cpu(name: str) -> str:
    """A CPU= name or (internally: the generator's variant families) a core class."""
    if name not in CPU_NAMES and name not in CORE_CLASSES:
        raise ValueError(f"unknown CPU {name!r}: valid values are {', '.join(CPU_NAMES)}")
    return name


def cores_for(name: str) -> list[CoreModel]:
    """The core models a CPU= choice (or a core class) must satisfy (all of them for
    "generic")."""
    check_cpu(name)
    if name in CORE_CLASSES:
        return [CORES[c] for c in CORE_CLASSES[name]]
    return list(CORES.values()) if name == GENERIC else [CORES[name]]


# ---- Data caches and memory bandwidth (the bench's cache model, bench/plugin/tbcount.c) -------
@dataclass(frozen=True)
class CacheLevel:
    size: int                      # bytes
    ways: int                      # associativity
    line: int = 64                 # line size, bytes

    @property
    def sets(self) -> int:
        return self.size // (self.ways * self.line)


@dataclass(frozen=True)
class MemoryModel:
    """One core's L1D and L2 (simulated by the bench's QEMU plugin) and the bandwidths of its
    roofline: bytes per core cycle from L2 into L1D, and from memory beyond L2 (DRAM)."""
    l1d: CacheLevel
    l2: CacheLevel
    l2_bytes_per_cycle: float      # L2 -> L1D fill bandwidth
    dram_bytes_per_cycle: float    # this core's share of the reference system's DRAM bandwidth
    reference: str                 # the configuration and system the figures describe


def _share(gbytes_per_s: float, cores: int, ghz: float) -> float:
    """Bytes per core cycle when every core of the chip streams: peak / cores / clock."""
    return gbytes_per_s / cores / ghz


KIB = 1024
# Sizes and associativity from the Arm Technical Reference Manuals (TRM); all lines are 64 bytes.
# Where the TRM gives a configuration range, the size modeled is the one of a shipping system
# named in `reference`. L2 -> L1D bandwidth: the TRMs give interface widths, not sustained rates;
# the figure is half a line per cycle for the big cores (an assumption, see each comment) and the
# 128-bit interface for the A55. DRAM: the reference chip's peak (channels x MT/s x 8 bytes)
# shared by all its cores at its clock — what a core gets when every core runs the library.
MEMORY: dict[str, MemoryModel] = {
    # Neoverse N2 TRM (102099): L1D 64 KB 4-way; L2 512 KB or 1 MB, 8-way. Modeled: 1 MB, as in
    # Alibaba Yitian 710 (128 cores, 3.2 GHz, 8 x DDR5-4800 = 307.2 GB/s).
    # L2 fill 32 B/cycle: assumed (half a 64-byte line per cycle).
    "neoverse-n2": MemoryModel(CacheLevel(64 * KIB, 4), CacheLevel(1024 * KIB, 8), 32.0,
                               _share(307.2, 128, 3.2), "1 MB L2; Yitian 710 DRAM share"),
    # Cortex-A710 TRM (101800): L1D 32 or 64 KB 4-way; L2 256 or 512 KB, 8-way. Modeled 64 KB /
    # 512 KB (the larger options); DRAM as Snapdragon 8 Gen 1 (LPDDR5-6400 4 x 16 bit =
    # 51.2 GB/s, 8 cores, A710 at 2.5 GHz). L2 fill 32 B/cycle: assumed, as N2.
    "cortex-a710": MemoryModel(CacheLevel(64 * KIB, 4), CacheLevel(512 * KIB, 8), 32.0,
                               _share(51.2, 8, 2.5), "64 KB L1D, 512 KB L2; Snapdragon 8 Gen 1 DRAM share"),
    # Neoverse V1 TRM (101427): L1D 64 KB 4-way; L2 512 KB or 1 MB, 8-way. Modeled 1 MB, as in
    # AWS Graviton3 (64 cores, 2.6 GHz, 8 x DDR5-4800 = 307.2 GB/s). L2 fill 64 B/cycle:
    # assumed (one line per cycle; V1 doubles N1's load bandwidth).
    "neoverse-v1": MemoryModel(CacheLevel(64 * KIB, 4), CacheLevel(1024 * KIB, 8), 64.0,
                               _share(307.2, 64, 2.6), "1 MB L2; Graviton3 DRAM share"),
    # Cortex-A510 TRM (101604): L1D 32 or 64 KB 4-way; L2 shared by the two cores of a complex,
    # 0-512 KB, 8-way at the power-of-two sizes (unverified here: WikiChip lists 4-way).
    # Modeled 32 KB / 256 KB (a phone configuration), the whole L2 for one core; DRAM as
    # Snapdragon 8 Gen 1 (51.2 GB/s, 8 cores, A510 at 1.8 GHz). L2 fill 32 B/cycle: assumed.
    "cortex-a510": MemoryModel(CacheLevel(32 * KIB, 4), CacheLevel(256 * KIB, 8), 32.0,
                               _share(51.2, 8, 1.8), "32 KB L1D, 256 KB L2; Snapdragon 8 Gen 1 DRAM share"),
    # Cortex-A55 TRM (100442): L1D 16, 32 or 64 KB 4-way, 64-byte lines; optional private L2 of
    # 64, 128 or 256 KB, 4-way, strictly exclusive with L1D (the model treats it as
    # non-inclusive: it slightly underrates the combined capacity). Modeled 32 KB / 128 KB;
    # L2 fill 16 B/cycle (the TRM's 128-bit L2 read interface); DRAM as Snapdragon 855
    # (LPDDR4X-4266 4 x 16 bit = 34.1 GB/s, 8 cores, A55 at 1.8 GHz).
    "cortex-a55": MemoryModel(CacheLevel(32 * KIB, 4), CacheLevel(128 * KIB, 4), 16.0,
                              _share(34.1, 8, 1.8), "32 KB L1D, 128 KB L2; Snapdragon 855 DRAM share"),
}
