"""Per-core latency / throughput table for the solver and the scheduler.

Source of every number: LLVM 19's AArch64 scheduling models (AArch64SchedNeoverseN2.td,
AArch64SchedNeoverseV1.td, AArch64SchedA510.td, AArch64SchedA55.td; cortex-a710 uses the N2
model), measured with llvm-mca-19 on 2026-11-22:
  latency    = cycles per iteration of a chain of MACs into one accumulator;
  throughput = instructions per cycle of 16 independent MACs;
  load       = `ldr q` latency / reciprocal throughput from `llvm-mca -instruction-info`.
These agree with the Arm Software Optimization Guides where those publish the figure (e.g.
Neoverse N2 SOG: FMLA 4 cycles, 2/cycle; SDOT 3 cycles; SMMLA/BFMMLA on V1 4/cycle peak).
Cortex-A55 has no i8mm/bf16: the model still times them, `has` says what the core really has.
"""
from __future__ import annotations

from dataclasses import dataclass


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

    def latency(self, inst: str) -> int:
        return self.mac[inst][0]

    def throughput(self, inst: str) -> float:
        return self.mac[inst][1]

    def min_accumulators(self, inst: str) -> int:
        """Independent accumulators needed so chained MACs never stall: latency x throughput."""
        lat, tput = self.mac[inst]
        return int(-(-lat * tput // 1))

    def has(self, feature) -> bool:
        return feature is None or feature in self.features


def _mac_table(fmla, fmla16, smlal, dot, bfdot, mmla, bfmmla):
    return {"fmla_f32": fmla, "fmla_f16": fmla16, "smlal": smlal, "sdot": dot, "udot": dot,
            "usdot": dot, "bfdot": bfdot, "smmla": mmla, "ummla": mmla, "usmmla": mmla,
            "bfmmla": bfmmla}


_ALL = frozenset({"fp16", "dotprod", "i8mm", "bf16"})
_N2_TABLE = _mac_table((4, 2), (4, 2), (4, 1), (3, 2), (2, 2), (3, 2), (5, 2))

CORES: dict[str, CoreModel] = {c.name: c for c in (
    CoreModel("neoverse-n2", "neoverse-n2", False, 5, _ALL, _N2_TABLE, 6, 3),
    CoreModel("cortex-a710", "cortex-a710", False, 5, _ALL, _N2_TABLE, 6, 3),
    CoreModel("neoverse-v1", "neoverse-v1", False, 8, _ALL,
              _mac_table((4, 4), (4, 4), (4, 2), (2, 4), (4, 4), (3, 4), (5, 4)), 6, 3),
    CoreModel("cortex-a510", "cortex-a510", True, 3, _ALL,
              _mac_table((4, 2), (4, 2), (4, 2), (4, 2), (4, 2), (4, 2), (4, 2)), 2, 2),
    CoreModel("cortex-a55", "cortex-a55", True, 2, frozenset({"fp16", "dotprod"}),
              _mac_table((4, 2), (4, 2), (4, 1), (4, 1), (4, 2), (4, 1), (4, 1)), 3, 1),
)}

# "generic": the schedule that targets both in-order and out-of-order cores reasonably; the
# solver sizes accumulators for the most demanding of the cores above.
GENERIC = "generic"
CPU_NAMES = (GENERIC, *CORES)


def check_cpu(name: str) -> str:
    if name not in CPU_NAMES:
        raise ValueError(f"unknown CPU {name!r}: valid values are {', '.join(CPU_NAMES)}")
    return name


def cores_for(name: str) -> list[CoreModel]:
    """The core models a CPU= choice must satisfy (all of them for "generic")."""
    check_cpu(name)
    return list(CORES.values()) if name == GENERIC else [CORES[name]]
