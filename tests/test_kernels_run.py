"""Generated micro-kernels run under qemu-aarch64 against the C reference of tests/c/kernel_harness.c.

Each kernel: k-steps 0 (zero tile), 1, 2, 3 ... 300; panels and C flush against guard pages at
either end; C row stride > hp with sentinels in the gaps; callee-saved registers, x18 and sp
checked around the call; integers exact, fp32/bf16 within a derived error bound.
"""
from __future__ import annotations

import pytest

from cross import run_qemu
from gen import gemv, ntail, qdyn8_dot
from gen.cores import CORES, CPU_NAMES, GENERIC
from gen.isa import INSTRUCTIONS, generated_for
import kernel_build

# Each kernel runs on the least capable QEMU CPU that has its feature, so an instruction beyond
# it raises SIGILL: Armv8.0 kernels on cortex-a57 (no extension), dotprod and fp16 on
# neoverse-n1 (Armv8.2 dotprod + fp16, no FHM: checked with getauxval under QEMU 7.2), FHM,
# i8mm and bf16 on max (all of them).
QEMU_CPU = {"v8": "cortex-a57", "v82": "neoverse-n1", "v86": "max"}
FEATURE_CPU = {None: "cortex-a57", "dotprod": "neoverse-n1", "fp16": "neoverse-n1",
               "fp16fml": "max", "i8mm": "max", "bf16": "max"}
SHORT_KSTEPS = (1, 2, 3, 5, 64)


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    """harness(arch, inst, cpu) -> (binary, manifest); each configuration built once."""
    built = {}

    def get(arch, inst="auto", cpu=GENERIC):
        key = (arch, inst, cpu)
        if key not in built:
            out, manifest = kernel_build.cached_output(tmp_path_factory, arch, inst, cpu)
            built[key] = kernel_build.build_harness(out, manifest, out.parent / "harness"), manifest
        return built[key]
    return get


def _symbol(manifest, instruction, role="main"):
    (kernel,) = [k for k in manifest["kernels"]
                 if k["instruction"] == instruction and k["role"] == role]
    return kernel["symbol"]


def _run(binary, symbol, ksteps, qemu_cpu):
    proc = run_qemu(binary, symbol, *ksteps, cpu=qemu_cpu)
    assert proc.stdout.strip().endswith(f"ok {symbol}: 0 failure(s)"), proc.stdout


def covers_every_remainder(ksteps, unroll: int) -> bool:
    """Whether `ksteps` runs the main loop zero times with every count of single steps
    (1..unroll k-steps) and at least once with every remainder (ksteps - 1) mod unroll."""
    after_main = {(k - 1) % unroll for k in ksteps if k - 1 >= unroll}
    no_main = {k for k in ksteps if 1 <= k <= unroll}
    return after_main == set(range(unroll)) and no_main == set(range(1, unroll + 1))


@pytest.mark.parametrize("arch,instruction,role", [
    (arch, inst.name, role) for arch in QEMU_CPU for inst in generated_for(arch)
    for role in ("main", "gemv", "ntail", "qdyn_gemv") if role == "main"
    or (role == "gemv" and inst.name in gemv.GEMV_INSTRUCTIONS)
    or (role == "qdyn_gemv" and inst.name in qdyn8_dot.QDYN8_DOT_INSTRUCTIONS)
    or (role == "ntail" and inst.name in ntail.N_TAIL_INSTRUCTIONS)])
def test_kernel_matches_reference(harness, arch, instruction, role):
    binary, manifest = harness(arch)
    (main,) = [k for k in manifest["kernels"]
               if k["instruction"] == instruction and k["role"] == "main"]
    # role gemv: the GEMV kernel serving this instruction's path (its own instruction or a
    # GEMV form of it, gen/gemv.py GEMV_FORMS); role ntail: its column-tail kernels
    # (gen/ntail.py), at least one; role qdyn_gemv: the qdyn int8 handles' small-M tile
    # (gen/qdyn8_dot.py, the same panels)
    kernels = ([main] if role == "main" else
               [k for k in manifest["kernels"]
                if k.get("serves") == main["symbol"] and k["role"] == role])
    assert len(kernels) == 1 or (role == "ntail" and kernels)
    for kernel in kernels:
        instruction = kernel["instruction"]
        assert covers_every_remainder(kernel_build.KSTEPS, kernel["unroll"])
        _run(binary, kernel["symbol"], kernel_build.KSTEPS,
             FEATURE_CPU[INSTRUCTIONS[instruction].feature])


@pytest.mark.parametrize("cpu", [c for c in CPU_NAMES if c != GENERIC])
def test_cpu_schedules_match_reference(harness, cpu):
    arch = "v86" if CORES[cpu].has("i8mm") and CORES[cpu].has("bf16") else "v82"
    binary, manifest = harness(arch, cpu=cpu)
    for kernel in manifest["kernels"]:
        assert kernel["symbol"].endswith("_" + cpu.replace("-", ""))
        _run(binary, kernel["symbol"], SHORT_KSTEPS, "max")


@pytest.mark.parametrize("inst", ["always", "never"])
def test_inst_modes_match_reference(harness, inst):
    binary, manifest = harness("v86", inst=inst)
    for kernel in manifest["kernels"]:
        _run(binary, kernel["symbol"], SHORT_KSTEPS, "max")
