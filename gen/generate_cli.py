"""`python3 -m gen generate`: kernels, kernel header, manifest and drivers into one folder.

    python3 -m gen generate --arch v86 [--prefix ts_] [--inst auto|always|never]
                            [--cpu generic|cortex-a55|...] [--out out/v86]

Writes into <out>/ one `<symbol>.S` per micro-kernel (every instruction gen.isa.generated_for
lists, tile from gen.tile_policy.solve: the solver's choice, or for CPU=generic the maximin
when it misses a core's target), `<prefix>kernels.h`, the C drivers (gen.drivers) and
`manifest.json`, whose "files" list names every file this generation wrote. Everything is
generated in a staging folder first; a bad option is reported (exit 2) before anything is
written. Output is deterministic.

Regenerating into a folder keeps the files tilesmith did not write there: the files the
previous manifest lists and this generation does not write are removed, every other file
stays. A file this generation would write that exists but is not listed by the previous
manifest (the user's own) is not overwritten: generation refuses (exit 2), naming it.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path, PurePosixPath

from . import schedule_cache
from .cores import CORE_CLASSES, CORES, CPU_NAMES, GENERIC, check_cpu, core_class
from .drivers import render_drivers
from .emit import INST_MODES, emit_kernel, emit_kernels, environment, inst_features
from . import gemv, ntail, qdyn4, qdyn4_dot, qdyn4_rl, qdyn8_dot, strip_pipe
from .epilogue import variants_for
from .isa import ARCH_LEVELS, OPTIONAL_FEATURES, check_arch, generated_for, sme_generated_for
from .sme_emit import emit_sme_kernels
from .sme_pack import emit_sme_packers
from .sme_tiling import solve as solve_za
from .tiling import plan_for
from .loop import KernelPlanError
from .naming import check_prefix
from .version import manifest_entry
from .tile_policy import choose, estimate, solve
from .tiling import TilingError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
MANIFEST = "manifest.json"
REGISTER_BUDGET = 32
# What a raw kernel's manifest entry lists per epilogue variant (entry "variants"); everything
# else (tile, layouts, types in) is the raw kernel's.
VARIANT_KEYS = ("epilogue", "symbol", "file", "out_type", "vregs_used", "gpregs_used",
                "callee_saved_used", "params_cols", "strip")


class UsageError(ValueError):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python3 -m gen generate", description=__doc__.split("\n\n", 2)[2],
                     formatter_class=argparse.RawDescriptionHelpFormatter)
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
    if args.cpu in CORE_CLASSES:
        raise UsageError(f"unknown CPU {args.cpu!r}: valid values are {', '.join(CPU_NAMES)}")
    check_cpu(args.cpu)
    if args.cpu in CORES:
        missing = sorted({i.feature for i in generated_for(args.arch)
                          if not CORES[args.cpu].has(i.feature)
                          and i.feature not in OPTIONAL_FEATURES[args.arch]})
        if missing:
            fits = [a for a in ARCH_LEVELS if all(CORES[args.cpu].has(i.feature)
                                                  or i.feature in OPTIONAL_FEATURES[a]
                                                  for i in generated_for(a))]
            raise UsageError(f"CPU {args.cpu} lacks {', '.join(missing)}, which ARCH {args.arch} "
                             f"kernels need: use ARCH {' or '.join(fits)} for this CPU")


def kernels_for(arch: str, cpu: str = "generic") -> list:
    """The instructions a build gets kernels for: GENERATED[arch], less those of an optional
    feature (gen.isa OPTIONAL_FEATURES) a specific CPU lacks."""
    return [i for i in generated_for(arch)
            if cpu not in CORES or CORES[cpu].has(i.feature)
            or i.feature not in OPTIONAL_FEATURES[arch]]


def _same_kernel(a, b) -> bool:
    """Whether two raw kernels (a class variant and the generic one) are the same code: equal
    text once the symbols and the schedule comment are taken out."""
    def strip(k):
        return [line.replace(k.symbol, "SYMBOL") for line in k.text.splitlines()
                if "schedule for CPU" not in line]
    return strip(a) == strip(b)


def gains_on_class(instruction: str, cls: str) -> bool:
    """Whether the class's tile models faster on the class's cores than the generic tile:
    gen.tile_policy's estimate (out-of-order: the accumulator latency bound; in-order: the
    issue model of the list-scheduled loop), worst core of the class, compared. A tile with
    more accumulators than the class's cores need gains nothing there (fp32 14x8 vs 8x12 on
    N2 / V1: both 100 %, and the whole GEMM measured slower), so it is not emitted."""
    mine = choose(instruction, REGISTER_BUDGET, cls).candidate
    generic = choose(instruction, REGISTER_BUDGET, GENERIC).candidate
    if (mine.ep, mine.hp, mine.strategy) == (generic.ep, generic.hp, generic.strategy):
        return True     # same tile: a schedule-only variant, kept if its text differs
    return (estimate(mine, cls, searched=False).worst[1]
            > estimate(generic, cls, searched=False).worst[1] + 1e-9)


def class_families(arch: str, prefix: str, inst: str, generic: list, env) -> list:
    """The run-time variants of a CPU=generic build: per core class (gen.cores.CORE_CLASSES)
    and instruction some of its cores have, the kernel family tuned for that class, kept only
    where it differs from the generic family's and its tile models faster on the class's
    cores (gains_on_class)."""
    out = []
    for cls, cpus in CORE_CLASSES.items():
        for i, family in zip(kernels_for(arch, GENERIC), generic):
            if not any(CORES[c].has(i.feature) for c in cpus):
                continue
            if gains_on_class(i.name, cls):
                mine = emit_kernels(solve(i.name, regs=REGISTER_BUDGET, cpu=cls), prefix, inst,
                                    cls, env)
            else:
                mine = pipelined_family(i.name, cls, prefix, inst, env)
            if mine and not all(_same_kernel(a, b) for a, b in zip(mine, family)):
                out.append((cls, mine))
    return out


def pipelined_family(instruction: str, cls: str, prefix: str, inst: str, env) -> list | None:
    """The generic tile's kernels with the class's schedule when the class's strip of it
    requantises on the integer pipes (gen.strip_pipe), else None."""
    plan = solve(instruction, regs=REGISTER_BUDGET, cpu=GENERIC)
    if not any(strip_pipe.applies(plan, e, cls) for e in variants_for(instruction)):
        return None
    mine = emit_kernels(plan, prefix, inst, cls, env)
    return mine if any(strip_pipe.MARK in k.text for k in mine) else None


def _entry(family, core_class: str, role: str) -> dict:
    raw, *variants = family
    entry = dict(raw.manifest)
    entry["variants"] = [{key: v.manifest[key] for key in VARIANT_KEYS} for v in variants]
    entry.update(role=role, core_class=core_class)
    return entry


def _class_entry(family, cls: str, small_of: dict) -> dict:
    """The manifest entry of a core-class variant. It shares the generic kernel's GEMV / small-M
    kernel (small_of: {served instruction: GEMV entry}), served up to the M its own tile gives
    (gemv_max_m; gen.gemv.max_m) with its own instructions per k-step, as emitted for its class,
    for the narrow-B rule (gemv_main_step_instructions); neither key when that GEMV tile would not serve it."""
    entry = _entry(family, cls, "core_class")
    small = small_of.get(entry["instruction"])
    if small is None:
        return entry
    choice = gemv.choose(entry["instruction"], entry["ep"], entry["hp"], entry["strategy"],
                         regs=REGISTER_BUDGET, cpu=GENERIC)
    if choice is not None and (choice.candidate.ep, choice.candidate.hp) == (small["ep"], small["hp"]):
        # the variant's own k-step, as emitted for its class
        step = gemv.main_step_instructions(entry["instruction"], entry["ep"], entry["hp"],
                                           entry["strategy"], regs=REGISTER_BUDGET, cpu=cls)
        entry.update(gemv_max_m=choice.max_m, gemv_main_step_instructions=step)
    return entry


def generate(arch: str, prefix: str = "ts_", inst: str = "auto", cpu: str = "generic") -> dict:
    """Every output file's text by name (manifest.json included), drivers excluded. Kernel
    entries: the main kernel per instruction (role "main", core_class "generic" or the class of
    the named CPU), their GEMV / small-M kernels (role "gemv"), their column-tail kernels
    (role "ntail", gen.ntail; "serves": the main kernel's symbol), then for CPU=generic the
    core-class variants (role "core_class")."""
    env = environment()
    families = [emit_kernels(solve(i.name, regs=REGISTER_BUDGET, cpu=cpu), prefix, inst, cpu, env)
                for i in kernels_for(arch, cpu)]
    entries = [_entry(f, core_class(cpu), "main") for f in families]
    # GEMV / small-M kernels (gen.gemv): raw only, next to each GEMM kernel they relieve.
    small = []
    for entry in list(entries):
        choice = gemv.choose(entry["instruction"], entry["ep"], entry["hp"], entry["strategy"],
                             regs=REGISTER_BUDGET, cpu=cpu)
        if choice is None:
            continue
        kernel = emit_kernel(plan_for(choice.candidate, cpu), prefix, inst, cpu, env)
        gemv_entry = dict(kernel.manifest, role="gemv", core_class=core_class(cpu),
                          max_m=choice.max_m, variants=[],
                          serves=entry["symbol"], step_instructions=choice.step_instructions,
                          main_step_instructions=choice.main_step_instructions)
        entries.append(gemv_entry)
        small.append(kernel)
    # column-tail kernels (gen.ntail): the same instruction and rows, narrower, for the last B
    # panel of a call; each with the main kernel's epilogue variants
    tail_families = []
    for entry in [e for e in entries if e["role"] == "main"]:
        for c in ntail.tails(entry["instruction"], entry["ep"], entry["hp"],
                             regs=REGISTER_BUDGET, cpu=cpu):
            family = emit_kernels(plan_for(c, cpu), prefix, inst, cpu, env)
            tail_families.append(family)
            entries.append(dict(_entry(family, core_class(cpu), "ntail"),
                                serves=entry["symbol"]))
    if cpu == GENERIC:
        served = {e["symbol"]: e["instruction"] for e in entries if e["role"] == "main"}
        small_of = {served[e["serves"]]: e for e in entries if e["role"] == "gemv"}
        for cls, family in class_families(arch, prefix, inst, families, env):
            families.append(family)
            entries.append(_class_entry(family, cls, small_of))
    # the qdyn int8 decode tile of the dotprod path (gen.qdyn8_dot; role "qdyn_gemv", last):
    # raw, as the GEMV kernels, reading its main kernel's panels (the qdyn int8 handle's) for
    # M <= max_m
    for entry in [e for e in entries if e["role"] == "main"]:
        choice = qdyn8_dot.choose(entry["instruction"], entry["ep"], entry["hp"],
                                  entry["strategy"], regs=REGISTER_BUDGET, cpu=cpu)
        if choice is None:
            continue
        kernel = emit_kernel(plan_for(choice.candidate, cpu), prefix, inst, cpu, env)
        step = gemv.instructions_per_step(choice.candidate, cpu)
        entries.append(dict(kernel.manifest, role="qdyn_gemv", core_class=core_class(cpu),
                            max_m=choice.max_m, variants=[], serves=entry["symbol"],
                            step_instructions=step,
                            main_step_instructions=gemv.main_step_instructions(
                                entry["instruction"], entry["ep"], entry["hp"],
                                entry["strategy"], REGISTER_BUDGET, cpu)))
        small.append(kernel)
    # SME kernels (ARCH v92): vector-length agnostic, their own manifest list (their tile
    # sizes are multiples of S = SVL/32, known only at run time).
    sme = [k for i in sme_generated_for(arch)
           for k in emit_sme_kernels(solve_za(i.name), prefix, inst, "generic", env)]
    # their streaming-mode packers (gen.sme_pack), named by the dispatch paths that use them
    sme_packers = emit_sme_packers([k.manifest for k in sme], prefix, inst, env) if sme else []
    # qdyn kernels (gen.qdyn4, gen.qdyn4_rl): the int4 unpack and the fp32 epilogue in the
    # kernel, int4 and int8 weights; their own manifest list (another contract: scale blocks,
    # the qdyn argument block).
    built = {i.name for i in kernels_for(arch, cpu)}
    main_hp = {e["instruction"]: int(e["hp"]) for e in entries if e["role"] == "main"}
    # Per instruction of the qdyn chain: scale blocks, prefill and decode (gen.qdyn4: smmla;
    # gen.qdyn4_dot: sdot, smlal (no decode kernel)), then per channel
    # (gen.qdyn4_rl: smmla, sdot, smlal), prefill and decode, then int8 weights (gen.qdyn4
    # weights="s8": smmla), prefill and decode; sdot: the int8 decode kernel over the raw
    # kernel's panels (gen.qdyn8_dot).
    qdyn = [k for name in qdyn4_rl.QDYN4_RL_INSTRUCTIONS if name in built
            for k in ([qdyn4.emit(qdyn4.solve(name, cpu, decode=decode), prefix, inst, env)
                       for decode in (False, True)]
                      if name in qdyn4.QDYN4_INSTRUCTIONS else
                      [qdyn4_dot.emit(qdyn4_dot.solve(name, cpu, decode), prefix, inst, env)
                       for decode in (False, True)[:1 + (name in qdyn4_dot.DECODE_INSTRUCTIONS)]])
            + [qdyn4_rl.emit(qdyn4_rl.solve(name, cpu, decode), prefix, inst, env)
               for decode in (False, True)]
            + ([qdyn4.emit(qdyn4.solve(name, cpu, "s8", decode), prefix, inst, env)
                for decode in (False, True)]
               if name in qdyn4.QDYN4_INSTRUCTIONS else [])
            # int8 decode over the raw kernel's panels (gen.qdyn8_dot: sdot, kind 5)
            + ([qdyn8_dot.emit_decode(qdyn8_dot.solve_decode(main_hp[name], cpu), prefix, inst,
                                      env)]
               if name in qdyn8_dot.QDYN8_DOT_INSTRUCTIONS and name in main_hp else [])]
    manifest = {"generator": manifest_entry(), "arch": arch, "prefix": prefix, "inst": inst,
                "cpu": cpu, "kernels": entries}
    if qdyn:
        manifest["qdyn_kernels"] = [k.manifest for k in qdyn]
    if sme:
        manifest["sme_kernels"] = [k.manifest for k in sme]
        manifest["sme_packers"] = [k.manifest for k in sme_packers]
    files = {k.file: k.text for family in families for k in family}
    files.update({k.file: k.text for k in small})
    files.update({k.file: k.text for family in tail_families for k in family})
    files.update({k.file: k.text for k in sme})
    files.update({k.file: k.text for k in sme_packers})
    files.update({k.file: k.text for k in qdyn})
    files[f"{prefix}kernels.h"] = env.get_template("kernels.h.j2").render(
        p=prefix, P=prefix.upper(), arch=arch, cpu=cpu, inst=inst, kernels=manifest["kernels"],
        sme_kernels=manifest.get("sme_kernels", []), sme_packers=manifest.get("sme_packers", []),
        qdyn_kernels=manifest.get("qdyn_kernels", []), qdyn_args_struct=qdyn4.c_struct(prefix))
    files[MANIFEST] = json.dumps(manifest, indent=2) + "\n"
    return files


def _check_out(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a folder")


def previous_files(out: Path) -> set:
    """The files the previous generation into `out` wrote: its manifest's "files". A manifest
    from before that list belongs to a tilesmith that replaced the whole folder on every run,
    so all the folder holds counts as its own (the old behaviour, once more)."""
    try:
        manifest = json.loads((out / MANIFEST).read_text())
    except (OSError, ValueError):
        return set()
    if not isinstance(manifest, dict):
        return set()
    names = manifest["files"] if isinstance(manifest.get("files"), list) else staged_files(out)
    return {n for n in names if _inside(n)}


def _inside(name) -> bool:
    """A relative path that stays inside the folder (a manifest never makes us touch others)."""
    return (isinstance(name, str) and name != "" and not PurePosixPath(name).is_absolute()
            and ".." not in PurePosixPath(name).parts and "\\" not in name)


def staged_files(staging: Path) -> list:
    """Every file below `staging`, as sorted POSIX paths relative to it."""
    return sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file())


def foreign_collisions(out: Path, new: list, previous: set) -> list:
    """Files this generation would write over that tilesmith did not write."""
    return [name for name in new if (out / name).exists() and name not in previous]


def _write_manifest(folder: Path, manifest: dict, files) -> None:
    (folder / MANIFEST).write_text(json.dumps({**manifest, "files": sorted(files)}, indent=2) + "\n")


def stage(files: dict, manifest: dict, staging: Path) -> list:
    """Write the generation into `staging`; returns its file list (manifest.json included)."""
    for name, text in files.items():
        if name != MANIFEST:
            (staging / name).write_text(text)
    render_drivers(manifest, staging)
    names = sorted(set(staged_files(staging)) | {MANIFEST})
    _write_manifest(staging, manifest, names)
    return names


def install(staging: Path, names: list, out: Path, previous: set) -> None:
    """Move the staged files into `out`, then remove what the previous generation wrote and
    this one did not. The manifest in `out` lists every file tilesmith may have written at
    each step (a run cut short leaves nothing unaccounted for), the final one exactly `names`."""
    out.mkdir(parents=True, exist_ok=True)
    _write_manifest(out, json.loads((staging / MANIFEST).read_text()), previous | set(names))
    for name in names:
        if name != MANIFEST:
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / name, out / name)
    os.replace(staging / MANIFEST, out / MANIFEST)
    for name in sorted(previous - set(names)):
        stale = out / name
        if stale.is_file() or stale.is_symlink():
            stale.unlink()
        for parent in stale.parents:           # folders the stale files leave empty
            if parent == out or not parent.is_dir() or any(parent.iterdir()):
                break
            parent.rmdir()


def write_output(files: dict, manifest: dict, out: Path) -> None:
    """Stage the generation next to `out`, check it overwrites no foreign file, install it."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    try:
        names = stage(files, manifest, staging)
        previous = previous_files(out) if out.is_dir() else set()
        foreign = foreign_collisions(out, names, previous)
        if foreign:
            raise UsageError(f"--out {out} holds {', '.join(foreign)}, which tilesmith did not "
                             f"write (not in its {MANIFEST}): refusing to overwrite; move "
                             f"{'it' if len(foreign) == 1 else 'them'} or choose another --out")
        install(staging, names, out, previous)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = build_parser().parse_args(argv)
        check_options(args)
        out = Path(args.out or f"out/{args.arch}")
        _check_out(out)
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
    except UsageError as error:
        print(f"python3 -m gen generate: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as error:
        print(f"python3 -m gen generate: error: cannot write --out {out}: {error}", file=sys.stderr)
        return EXIT_FAILED
    print_summary(out, json.loads(files[MANIFEST]))
    return EXIT_OK


def print_summary(out, manifest: dict) -> None:
    """One line per manifest list of assembly files (GEMM / GEMV kernels with their epilogue
    variants, qdyn, SME kernels, SME packers), then the total of .S files written."""
    written = 0
    for key, what in (("kernels", "kernels"), ("qdyn_kernels", "qdyn kernels"),
                      ("sme_kernels", "SME kernels"), ("sme_packers", "SME packers")):
        kernels = manifest.get(key, [])
        variants = [v for k in kernels for v in k.get("variants", ())]
        written += len(kernels) + len(variants)
        if kernels:
            extra = f" + {len(variants)} epilogue variants" if variants else ""
            print(f"{out}: {len(kernels)} {what}{extra} "
                  f"({', '.join(k['symbol'] for k in kernels)})")
    print(f"{out}: {written} kernel files (.S)")
