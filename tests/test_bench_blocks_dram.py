"""The cache blocks a core of the out-of-order class runs with, measured by their memory traffic:
fp32 GEMM 512^3 of a CPU=generic v86 build (the bench's program, bench/workloads.c) under
qemu-aarch64 with the tbcount plugin simulating Neoverse N2's L1D and L2 (gen/cores.py MEMORY:
64 KiB / 1 MiB, 64-byte lines), once with QEMU reporting an N2's MIDR_EL1 (the ooo class,
bench.profile.qemu_cpu) and once with max's own (dispatch sees an unknown core: the generic
blocks, sized for the smallest modeled L2, the A55's 128 KiB).

Bytes to and from memory beyond L2, derived by hand: A, B and C are 1 MiB each (512 x 512
fp32), the packed B 1 MiB. Compulsory: read A and B, read C's lines for ownership (its tiles
write 48 of a line's 64 bytes per call: write-allocate; the packers write their panels whole,
which write streaming does not read, bench/plugin/tbcount.c), and write the packed B and C
back at most once: 5 MiB. Beyond that, with K = 512 run whole, every M block of h rows streams
the whole packed B from memory again (B does not fit next to the A block in a 1 MiB L2):
ceil(512 / h) passes. Blocks sized for the 128 KiB L2 (48 rows, 11 passes) cost 5 + 11 = 16 MiB,
above what a core's DRAM share lets an N2 stream in the GEMM's compute time; blocks of the ooo
class (an A block of a quarter of that class's smallest L2, A710's 512 KiB: 128 KiB = 64 rows at
least, at most 8 passes) must stay within 5 + 8 = 13 MiB, and well under the generic blocks'
figure.

int8 prefill M=512, N=K=4096 (the bench's prefill512, requantized int8 C) on the same N2 with
the ooo blocks: B is 16 MiB, A and C 2 MiB each. Compulsory: read B once (its column sums and
the packer's transposes run in the same row passes, so the packer finds the rows cached), write
the packed B back once (16 MiB: its panels start on a line, so the packer writes whole lines),
read A, and read and write C's lines (a tile writes 8 of a line's 64 bytes): 38 MiB. K = 4096
runs whole (512 k-steps, within the ooo class's 910), and the M block then holds what
whole_k_steps' L2 fit allows at that K, 14 A panels (112 rows), so the kernels stream the packed B
ceil(512 / 112) = 5 times: 38 + 80 = 118 MiB; bound 128 MiB. Blocks of 8 panels (64 rows, 8
passes) with B read twice and the packed lines half-written cost 231 MiB."""
from __future__ import annotations

import subprocess
import sys

import pytest

from bench import symbols as sym
from bench.profile import classify, memory_profile, qemu_cpu
from bench.tbcount import build_plugin, run_profiled
from bench.workloads import PATHS, Workload, build_program
from cross import ROOT
from gen.cores import MEMORY

MIB = 1 << 20
N2 = "neoverse-n2"


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    d = tmp_path_factory.mktemp("blocks_dram")
    gen = d / "gen"
    subprocess.run([sys.executable, "-m", "gen", "generate", "--arch", "v86", "--out", str(gen)],
                   cwd=ROOT, check=True, capture_output=True, text=True)
    return build_program(gen, d / "workloads"), build_plugin(d / "plugin"), d


def dram_bytes(program, plugin, work_dir, cls: str, dtype: str = "f32",
               dims: tuple = (512, 512, 512), cache_sizes=None) -> int:
    """(L2 misses + L2 write-backs) x 64 bytes of the measured GEMM (the newest path of
    `dtype`, B packed in the call) on the simulated N2; `cache_sizes` (L1D, L2 bytes): the
    calls' blocks sized for them (ts_context_set_cache_sizes), else the class's."""
    binary, table = program, sym.SymbolTable.from_elf(program)
    workload = Workload(f"gemm-{dtype}", f"GEMM {dtype}", "gemm", dtype, dims, "gemm")
    path = PATHS[dtype][-1]
    tag = f"-{cache_sizes[1]}" if cache_sizes else ""
    blocks, _ = run_profiled(binary, workload.args(path, cache_sizes), plugin,
                             work_dir / f"{cls}-{dtype}-{dims[0]}{tag}.tb",
                             cpu=qemu_cpu(cls), mark=table.address_of(sym.MARK),
                             caches={N2: MEMORY[N2]})
    groups, _ = classify(blocks, table, "ts_")
    total = memory_profile(blocks, groups, N2)["total"]
    return (total["l2_misses"] + total["l2_writebacks"]) * MEMORY[N2].l2.line


def test_ooo_blocks_keep_fp32_512_cube_near_compulsory_traffic(program):
    binary, plugin, d = program
    ooo = dram_bytes(binary, plugin, d, "ooo")
    generic = dram_bytes(binary, plugin, d, "generic")
    assert ooo <= 13 * MIB, ooo / MIB
    # the generic blocks re-read B once per 48-row M block (module comment): ~16 MiB
    assert generic >= 15 * MIB, generic / MIB
    assert ooo <= 0.75 * generic, (ooo / MIB, generic / MIB)


def test_ooo_blocks_keep_int8_prefill512_to_five_passes_over_b(program):
    binary, plugin, d = program
    moved = dram_bytes(binary, plugin, d, "ooo", "s8", (512, 4096, 4096))
    # compulsory 38 MiB + 5 passes over the 16 MiB packed B (module comment)
    assert moved <= 128 * MIB, moved / MIB

