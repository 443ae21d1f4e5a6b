"""`python3 -m gen generate`: kernels, kernel header, manifest and drivers into one folder.

    python3 -m gen generate --arch v86 [--prefix ts_] [--inst auto|always|never]
                            [--cpu generic|cortex-a55|...] [--out out/v86]

Writes <out>/ afresh: one `<symbol>.S` per micro-kernel (every instruction gen.isa.generated_for
lists, tile from gen.tile_policy.solve: the solver's choice, or for CPU=generic the maximin
when it misses a core's target), `<prefix>kernels.h`, `manifest.json` and the C
drivers (gen.drivers.render_drivers). Everything is generated in memory first; a bad option is
reported (exit 2) before anything is written. The output folder is replaced only if it is
absent, empty, or a previous output (holds manifest.json). Output is deterministic.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from . import schedule_cache
from .cores import CORES, CPU_NAMES, check_cpu
from .drivers import render_drivers
from .emit import INST_MODES, emit_kernels, environment, inst_features
from .isa import ARCH_LEVELS, check_arch, generated_for, sme_generated_for
from .sme_emit import emit_sme_kernels
from .sme_tiling import solve as solve_za
from .loop import KernelPlanError
from .naming import check_prefix
from .tile_policy import solve
from .tiling import TilingError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
MANIFEST = "manifest.json"
REGISTER_BUDGET = 32
# What a raw kernel's manifest entry lists per epilogue variant (entry "variants"); everything
# else (tile, layouts, types in) is the raw kernel's.
VARIANT_KEYS = ("epilogue", "symbol", "file", "out_type", "vregs_used", "gpregs_used",
                "callee_saved_used")


class UsageError(ValueError):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python3 -m gen generate",
                     description="Generate micro-kernels, header, manifest and drivers.")
    parser.add_argument("--arch", required=True, help=f"one of {', '.join(ARCH_LEVELS)}")
    parser.add_argument("--prefix", default="ts_", help="symbol prefix (default %(default)s)")
    parser.add_argument("--inst", default="auto", help=f"one of {', '.join(INST_MODES)}")
    parser.add_argument("--cpu", default="generic", help=f"one of {', '.join(CPU_NAMES)}")
    parser.add_argument("--out", help="output folder (default out/<arch>)")
    return parser


def check_options(args) -> None:
    """Raise ValueError naming the bad option and its valid values."""
    check_arch(args.arch)
    check_prefix(args.prefix)
    inst_features(args.inst)
    check_cpu(args.cpu)
    if args.cpu in CORES:
        missing = sorted({i.feature for i in generated_for(args.arch)
                          if not CORES[args.cpu].has(i.feature)})
        if missing:
            fits = [a for a in ARCH_LEVELS if all(CORES[args.cpu].has(i.feature)
                                                  for i in generated_for(a))]
            raise UsageError(f"CPU {args.cpu} lacks {', '.join(missing)}, which ARCH {args.arch} "
                             f"kernels need: use ARCH {' or '.join(fits)} for this CPU")


def generate(arch: str, prefix: str = "ts_", inst: str = "auto", cpu: str = "generic") -> dict:
    """Every output file's text by name (manifest.json included), drivers excluded."""
    env = environment()
    families = [emit_kernels(solve(i.name, regs=REGISTER_BUDGET, cpu=cpu), prefix, inst, cpu, env)
                for i in generated_for(arch)]
    entries = []
    for raw, *variants in families:
        entry = dict(raw.manifest)
        entry["variants"] = [{key: v.manifest[key] for key in VARIANT_KEYS} for v in variants]
        entries.append(entry)
    # SME kernels (ARCH v92): vector-length agnostic, their own manifest list (their tile
    # sizes are multiples of S = SVL/32, known only at run time).
    sme = [k for i in sme_generated_for(arch)
           for k in emit_sme_kernels(solve_za(i.name), prefix, inst, "generic", env)]
    manifest = {"arch": arch, "prefix": prefix, "inst": inst, "cpu": cpu, "kernels": entries}
    if sme:
        manifest["sme_kernels"] = [k.manifest for k in sme]
    files = {k.file: k.text for family in families for k in family}
    files.update({k.file: k.text for k in sme})
    files[f"{prefix}kernels.h"] = env.get_template("kernels.h.j2").render(
        p=prefix, P=prefix.upper(), arch=arch, cpu=cpu, inst=inst, kernels=manifest["kernels"],
        sme_kernels=manifest.get("sme_kernels", []))
    files[MANIFEST] = json.dumps(manifest, indent=2) + "\n"
    return files


def _check_replaceable(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / MANIFEST).is_file():
        raise UsageError(f"--out {out} is not empty and holds no {MANIFEST}: refusing to replace "
                         f"a folder tilesmith did not generate")


def write_output(files: dict, manifest: dict, out: Path) -> None:
    """Write into a fresh sibling folder, then swap it in place of `out` (stale files go)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    try:
        for name, text in files.items():
            (staging / name).write_text(text)
        render_drivers(manifest, staging)
        staging.chmod(0o755)
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            out.rename(old / out.name)
            shutil.rmtree(old)
        staging.rename(out)
    finally:
        if staging.exists():
            shutil.rmtree(staging)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = build_parser().parse_args(argv)
        check_options(args)
        out = Path(args.out or f"out/{args.arch}")
        _check_replaceable(out)
    except (UsageError, ValueError) as error:
        print(f"python3 -m gen generate: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        files = generate(args.arch, args.prefix, args.inst, args.cpu)
        schedule_cache.CACHE.flush()
    except (TilingError, KernelPlanError) as error:
        print(f"python3 -m gen generate: error: {error}", file=sys.stderr)
        return EXIT_FAILED
    try:
        write_output(files, json.loads(files[MANIFEST]), out)
    except OSError as error:
        print(f"python3 -m gen generate: error: cannot write --out {out}: {error}", file=sys.stderr)
        return EXIT_FAILED
    manifest = json.loads(files[MANIFEST])
    kernels = manifest["kernels"]
    print(f"{out}: {len(kernels)} kernels ({', '.join(k['symbol'] for k in kernels)})")
    sme = manifest.get("sme_kernels", [])
    if sme:
        print(f"{out}: {len(sme)} SME kernels ({', '.join(k['symbol'] for k in sme)})")
    return EXIT_OK
