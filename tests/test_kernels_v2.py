"""Kernel contract v2 under qemu-aarch64: every epilogue variant of every generated kernel
(gen.epilogue.EPILOGUE_VARIANTS) against independent references (tests/c/kernel_harness_v2.h):
partial tiles at every (m_rem, n_rem), accumulator input off / separate / in place, every
k-step count of kernel_build.KSTEPS (all unroll remainders), guard pages on both sides of C, the
accumulator tile, the epilogue parameters and the argument block, callee-saved registers.
requant is checked against requant.c's scalar reference compiled from the generated folder.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from cross import run_qemu
from gen.cores import GENERIC
from gen.epilogue import EPILOGUE_VARIANTS, EPILOGUES
import kernel_build

# (ARCH, CPU) builds and the QEMU CPU each runs on: the generic builds on the weakest core that
# has their features; the CPU builds bring the other tile shapes (14x8 / 9x12 / 12x8 on
# Neoverse N2, 8x8 double-buffered MMLA on Cortex-A510, Cortex-A55's v82 tiles).
BUILDS = {("v8", GENERIC): "cortex-a57", ("v82", GENERIC): "neoverse-n1",
          ("v86", GENERIC): "max", ("v86", "neoverse-n2"): "max",
          ("v86", "cortex-a510"): "max", ("v82", "cortex-a55"): "neoverse-n1"}
JOBS = 2        # qemu processes at once (the test machine is shared)
# What the QEMU 7.2 CPUs report (getauxval): a kernel whose feature its build's CPU lacks (FHM
# on neoverse-n1) runs on max.
QEMU_FEATURES = {"cortex-a57": {None}, "neoverse-n1": {None, "dotprod", "fp16"}}


def qemu_cpu(build_cpu: str, kernel: dict) -> str:
    return build_cpu if kernel["feature"] in QEMU_FEATURES.get(build_cpu, {kernel["feature"]}) \
        else "max"


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    built = {}

    def get(arch, cpu):
        if (arch, cpu) not in built:
            out, manifest = kernel_build.cached_output(tmp_path_factory, arch, cpu=cpu)
            binary = kernel_build.build_harness(out, manifest, out.parent / "harness")
            built[arch, cpu] = binary, manifest
        return built[arch, cpu]
    return get


def test_variants_follow_the_table(tmp_path_factory):
    out, manifest = kernel_build.cached_output(tmp_path_factory, "v86")
    for k in manifest["kernels"]:
        if k["role"] in ("gemv", "qdyn_gemv"):   # small-M kernels: raw only (gen/gemv.py,
                                                 # gen/qdyn8_dot.py)
            assert (k["epilogue"], k["variants"]) == ("raw", [])
            continue
        want = EPILOGUE_VARIANTS[k["instruction"]]
        assert (k["epilogue"],) + tuple(v["epilogue"] for v in k["variants"]) == want
        # a core-class kernel's class suffix comes last: <raw tile>_<epilogue>_<class>
        cls = "_" + k["core_class"] if k["role"] == "core_class" else ""
        stem = k["symbol"][:len(k["symbol"]) - len(cls)]
        assert stem + cls == k["symbol"]
        for v in k["variants"]:
            assert v["symbol"] == stem + EPILOGUES[v["epilogue"]].suffix + cls
            assert (out / v["file"]).is_file()
        assert k["variants"] or want == ("raw",)
    header = (out / "ts_kernels.h").read_text()
    assert "typedef struct ts_tile_args {" in header
    assert "TS_KERNEL_SMMLA_REQUANT ts_gemm_s8s32_smmla_8x8x8_requant" in header


@pytest.mark.parametrize("arch,cpu", list(BUILDS))
def test_every_variant_matches_reference(harness, arch, cpu):
    binary, manifest = harness(arch, cpu)
    kernels = {sym: k for k, _, sym, _ in kernel_build.all_kernels(manifest)}
    failed = run_harness_mode(binary, "v2", kernels, kernel_build.KSTEPS, BUILDS[arch, cpu])
    assert not failed, "\n".join(failed)


def run_harness_mode(binary, mode, kernels, ksteps, build):
    """Run the harness's `-<mode>` check of every kernel (symbol -> kernel) under qemu, in
    parallel; the failures (exit status or no "ok <mode> <symbol>: 0 failure(s)" line)."""
    def run(symbol):
        return symbol, run_qemu(binary, f"-{mode}", symbol, *ksteps,
                                cpu=qemu_cpu(build, kernels[symbol]), check=False)
    with ThreadPoolExecutor(JOBS) as pool:
        results = list(pool.map(run, kernels))
    return [f"{symbol}: exit {proc.returncode}\n{proc.stdout[-2000:]}{proc.stderr[-500:]}"
            for symbol, proc in results
            if proc.returncode
            or not proc.stdout.strip().endswith(f"ok {mode} {symbol}: 0 failure(s)")]


# k-step counts of the strip check: the zero tile (the strip calls the tile entry), the
# single-step loop alone, one main-loop iteration and a remainder, the peeled last iteration
# (8 k-steps per iteration: 16, 64; gen/strip_pipe.py: 64 its last column in the tail, 72 as
# many iterations as columns, 128 more),
# several iterations and a remainder.
STRIP_KSTEPS = (0, 1, 5, 9, 12, 16, 31, 64, 72, 128)


@pytest.mark.parametrize("arch,cpu", [("v8", GENERIC), ("v82", GENERIC), ("v86", GENERIC),
                                      ("v86", "cortex-a510")])
def test_strip_entries_match_the_tile_entry(harness, arch, cpu):
    """Every strip entry (gen/strip.py) against one tile entry call per tile, byte for byte
    (tests/c/kernel_harness_v2.h run_strip: columns, rows, negative steps, no tile; fast path
    and the per-tile fallback), callee-saved registers checked."""
    binary, manifest = harness(arch, cpu)
    kernels = {sym: k for k, _, sym, _ in kernel_build.all_kernels(manifest)
               if kernel_build.strip_of(k, sym)}
    assert kernels, "no strip entry in the build"
    failed = run_harness_mode(binary, "strip", kernels, STRIP_KSTEPS, BUILDS[arch, cpu])
    assert not failed, "\n".join(failed)
