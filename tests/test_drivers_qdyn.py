"""qdyn GEMM (issue 12: int8 activations quantised per row x int8 / int4 weights -> fp32) of the
generated drivers under qemu-aarch64 on the three CPU models and every forced feature mask
(tests/c/drv_api_qdyn.c: bit-exact against a scalar reference of tilesmith.h's formulas, within
the documented bound of float64, quantisation through an identity B, int4 nibble order and sign,
weight quantisers, bad inputs -> TS_EINVAL with nothing written, guard pages). Every path and
CPU must print the same hash of all results: the fp32 results are bit-identical across paths."""
from __future__ import annotations

import re

import pytest

from cross import run_qemu
from test_drivers_api import (CPU_FEATURES, CPU_MASKS, check_dispatch_lines, generated,  # noqa: F401
                              harness, manifest_paths)

RUNS = [("v86", "cortex-a57"), ("v86", "neoverse-n1"), ("v86", "max"), ("v8", "max"),
        ("v82", "neoverse-n1")]
HASHES = {}


@pytest.mark.parametrize("arch,cpu", RUNS)
def test_qdyn_every_path_bit_identical_and_exact(arch, cpu, generated, harness):  # noqa: F811
    paths = manifest_paths(generated(arch))
    masks = ",".join(str(m) for m in CPU_MASKS[cpu])
    proc = run_qemu(harness(arch, "drv_api_qdyn"), masks, cpu=cpu, check=False)
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), proc.stdout[-3000:]
    assert f"features={CPU_FEATURES[cpu]}\n" in proc.stdout
    check_dispatch_lines(proc.stdout, paths, cpu, ("qdyn",))
    check_fused_kernels(proc.stdout, generated(arch))
    found = re.findall(r"cases (\d+) hash ([0-9a-f]{16})", proc.stdout)
    assert len(found) == len(CPU_MASKS[cpu]) and all(int(c) >= 50 for c, _ in found)
    hashes = {h for _, h in found}
    assert len(hashes) == 1, f"paths differ: {found}"
    HASHES[arch, cpu] = hashes.pop()
    # every (arch, cpu) run so far agrees too
    assert len(set(HASHES.values())) == 1, HASHES


def check_fused_kernels(stdout, folder):
    """Handles run the kernels with the fp32 epilogue inside where the path's instruction has
    one (int4 per channel and int4 scale blocks: smmla, sdot, smlal; int8 per channel: smmla),
    so the cases test them; otherwise the path's raw kernel (ts_gemm_kernel's qdyn= field,
    checked against dispatch by check_dispatch_lines). ts_gemm_qdyn_kernel names the kernel per
    handle and M: the decode kernel (int4 per channel, int4 scale blocks, int8) for M <= 4 where
    the path has one (on the dotprod path int8's is gen/qdyn8_dot.py's, over the raw panels), and
    else the raw kernel's small-M tile (gen/qdyn8_dot.py) for int8 at M <= 4."""
    import json
    from gen.registry import qdyn_kind
    manifest = json.loads((folder / "manifest.json").read_text())
    kinds = {(k["instruction"], qdyn_kind(k)): k["symbol"]
             for k in manifest.get("qdyn_kernels", [])}
    # the raw int8 kernels' small-M tiles for the qdyn int8 handles (gen/qdyn8_dot.py: sdot)
    decode_raw = {k["serves"]: k["symbol"] for k in manifest["kernels"]
                  if k.get("role") == "qdyn_gemv"}
    # a core-class variant of the generic tile reads the same panels: its generic kernel's
    generic_of = {k["instruction"]: k["symbol"] for k in manifest["kernels"]
                  if k["role"] == "main"}
    decode_raw.update({k["symbol"]: decode_raw[generic_of[k["instruction"]]]
                       for k in manifest["kernels"] if k["role"] == "core_class"
                       and generic_of.get(k["instruction"]) in decode_raw})
    for line in stdout.splitlines():
        if not line.startswith("mask="):
            continue
        fields = dict(item.split("=") for item in line.split())
        raw = fields["qdyn"]
        inst = next(i for i in ("smmla", "sdot", "smlal") if f"_{i}_" in raw)
        # per label the kinds in preference (M <= 4: the decode kernel of the handle's kind,
        # int4 per channel 2, scale blocks 4, int8 5, where the path has one), else raw
        for label, prefer in (("qdyn_s8", (3,)), ("qdyn_s4", (0,)), ("qdyn_s4pc", (1,)),
                              ("qdyn_s8_m1", (5, 3)), ("qdyn_s4_m1", (4, 0)),
                              ("qdyn_s4pc_m4", (2, 1))):
            # int8 at M = 1 without an int8 fused kernel: the raw kernel's small-M tile
            small = decode_raw.get(raw, raw) if label == "qdyn_s8_m1" else raw
            want = next((kinds[inst, k] for k in prefer if (inst, k) in kinds), small)
            assert fields[label] == want, f"{line}: {label} {fields[label]} != {want}"


@pytest.mark.parametrize("source", ["ts_qdyn.c", "ts_qdyn_lhs.c"])
@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_qdyn_fp32_never_contracted(compiler, source, tmp_path):
    """The fixed fp32 order survives any build flags: ts_qdyn.c and the LHS quantise-pack
    compiled in GNU mode with -ffp-contract=fast -O3 hold no fused multiply-add
    (FMLA/FMLS/FMADD/FMSUB/FNMADD/FNMSUB)."""
    import subprocess
    from cross import CLANG, GCC
    from gen.drivers import DRIVERS
    cmd = ([GCC] if compiler == "gcc" else [CLANG, "--target=aarch64-linux-gnu"])
    asm = tmp_path / "qdyn.s"
    subprocess.run([*cmd, "-std=gnu99", "-O3", "-ffp-contract=fast", "-march=armv8-a",
                    "-I", str(DRIVERS / "include"), "-I", str(DRIVERS / "src"), "-S",
                    str(DRIVERS / "src" / source), "-o", str(asm)], check=True)
    fused = re.findall(r"^\s*(fn?m(?:la|ls|add|sub))\b", asm.read_text(), re.M)
    assert fused == [], fused
