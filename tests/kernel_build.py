"""Helpers for the kernel tests: generate an output folder, build the C harness over its kernels."""
from __future__ import annotations

import json
from pathlib import Path

from cross import TEST_C, compile_aarch64
from gen.generate_cli import main as generate_main

# k-step counts every kernel runs with (0 = the zero tile). The main loop runs unroll (2, 4, 6 or
# 8) k-steps per iteration while that many follow the loaded one, the single-step loop the
# rest: 1..17 give every remainder with no and with one main-loop iteration, the larger counts
# several iterations (test_kernels_run checks the coverage against each kernel's unroll).
KSTEPS = tuple(range(0, 18)) + (31, 64, 255, 300)


def generate(out: Path, arch: str, inst: str = "auto", cpu: str = "generic",
             prefix: str = "ts_") -> dict:
    code = generate_main(["--arch", arch, "--inst", inst, "--cpu", cpu, "--prefix", prefix,
                          "--out", str(out)])
    assert code == 0, f"generate --arch {arch} --inst {inst} --cpu {cpu} exited {code}"
    return json.loads((out / "manifest.json").read_text())


_CACHE: dict = {}


def cached_output(tmp_path_factory, arch: str, inst: str = "auto", cpu: str = "generic"):
    """(folder, manifest) of one configuration, generated once per test session (generation
    with the list scheduler takes seconds; every test file shares the folders)."""
    key = (arch, inst, cpu)
    if key not in _CACHE:
        out = tmp_path_factory.mktemp(f"gen-{arch}-{inst}-{cpu}") / "out"
        _CACHE[key] = out, generate(out, arch, inst, cpu)
    return _CACHE[key]


def all_kernels(manifest: dict):
    """(kernel entry, epilogue, symbol, file) of every kernel: each raw one, then its epilogue
    variants (manifest entry "variants")."""
    for k in manifest["kernels"]:
        yield k, k.get("epilogue", "raw"), k["symbol"], k["file"]
        for v in k.get("variants", []):
            yield k, v["epilogue"], v["symbol"], v["file"]


def params_cols(kernel: dict, symbol: str) -> int:
    """The manifest's params_cols of `symbol` (kernel entry `kernel` or one of its variants)."""
    entry = next((v for v in kernel.get("variants", []) if v["symbol"] == symbol), kernel)
    return int(entry.get("params_cols") or 0)


def strip_of(kernel: dict, symbol: str) -> str | None:
    """The strip entry of `symbol` (gen/strip.py; manifest variant "strip"), or None."""
    entry = next((v for v in kernel.get("variants", []) if v["symbol"] == symbol), kernel)
    return entry.get("strip")


def kernel_table(manifest: dict) -> str:
    """kernel_table.h for tests/c/kernel_harness.c: every kernel of the manifest."""
    rows = [f'    {{"{sym}", {sym}, "{k["a_type"]}", "{k["b_type"]}", '
            f'"{k["c_type"]}", {k["ep"]}, {k["hp"]}, {k["lp"]}, "{epi}", {k["symbol"]}, '
            f'{params_cols(k, sym)}, {strip_of(k, sym) or "NULL"}}},'
            for k, epi, sym, _ in all_kernels(manifest)]
    p = manifest["prefix"]
    return (f'#include "{p}kernels.h"\n'
            "static const kernel_info KERNELS[] = {\n" + "\n".join(rows) + "\n};\n")


def prefix_header(manifest: dict) -> str:
    """harness_prefix.h: the prefixed names the harness uses (kernels.h's argument block, the
    generated folder's requant.c, its ts_quant and rounding constants)."""
    p = manifest["prefix"]
    return (f'#include "{p}kernels.h"\n'
            f"typedef {p}tile_args h_tile_args;\n"
            f"typedef {p}strip h_strip;\n"
            f'#define H_REQUANT_C "{p}requant.c"\n'
            f"#define H_QUANT {p}quant\n"
            f"#define H_ROUND_SINGLE {p.upper()}ROUND_SINGLE\n"
            f"#define H_ROUND_DOUBLE {p.upper()}ROUND_DOUBLE\n")


def build_harness(out: Path, manifest: dict, binary: Path) -> Path:
    """The harness over every kernel of `out` (the generated folder itself is left as is)."""
    table_dir = binary.parent / f"{binary.name}.include"
    table_dir.mkdir(exist_ok=True)
    (table_dir / "kernel_table.h").write_text(kernel_table(manifest))
    (table_dir / "harness_prefix.h").write_text(prefix_header(manifest))
    sources = [TEST_C / "kernel_harness.c", TEST_C / "kernel_harness_regs.c",
               out / f'{manifest["prefix"]}error.c',   # ts_last_error: requant.c records into it
               *(out / f for _, _, _, f in all_kernels(manifest))]
    return compile_aarch64(sources, binary, includes=[table_dir, out])
