"""`python3 -m bench` — tilesmith's performance report (`make bench`).

Generates the ARCH build, profiles every whole-operation workload once per dispatch path under
qemu-aarch64 with the tbcount plugin, models the executed blocks with llvm-mca-19 per core and
writes bench/report.md, bench/report.json and PNG charts (bench/out/). Prints a summary.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from gen.cores import CLASS_MIDR, CORES, MEMORY, check_cpu
from gen.emit import inst_features
from gen.isa import check_arch

from . import report as rep
from . import sme
from .mca import CycleModel, McaError, llvm_mca_version
from .profile import QEMU_CPU, profile_all, qemu_cpu, variant_instructions
from .tbcount import QEMU, ProfileError, build_plugin
from .workloads import all_workloads, build_program, with_threads

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DEFAULT_CORES = ("neoverse-n2", "neoverse-v1", "cortex-a510", "cortex-a55")
PREFIX = "ts_"   # the workloads program calls the ts_* API


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="python3 -m bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", default="v86",
                    help="v8 | v82 | v86 (default v86); the SME build (v92) is --sme's")
    ap.add_argument("--cpu", default="generic", help="schedule the kernels for this CPU (make gen CPU=)")
    ap.add_argument("--inst", default="auto", help="make gen INST= (auto | always | never)")
    ap.add_argument("--gen-dir", help="profile this generated folder (prefix ts_) instead of generating one")
    ap.add_argument("--cores", default=",".join(DEFAULT_CORES),
                    help="llvm-mca -mcpu values, comma-separated (default: %(default)s)")
    ap.add_argument("--threads", default="1",
                    help="comma-separated thread counts, e.g. 1,4,8: every selected workload also "
                         "runs with the built-in pool of each count > 1 (newest path; per-vCPU "
                         "cycles and balance in the report's thread table)")
    ap.add_argument("--only", default="",
                    help="comma-separated substrings: profile only workloads whose name has one")
    ap.add_argument("--jobs", type=int, default=2, help="QEMU runs at a time (default 2)")
    ap.add_argument("--out-dir", default=str(BENCH / "out"), help="charts, profiles, caches")
    ap.add_argument("--report", default=str(BENCH / "report.md"),
                    help="Markdown report path; the JSON goes beside it (default bench/report.md)")
    ap.add_argument("--no-charts", action="store_true", help="skip the PNG charts (no matplotlib)")
    ap.add_argument("--sme", action="store_true",
                    help="only the SME section (bench/sme.py): GEMM 512^3 of every type with an SME "
                         "path, ARCH v92, at each --svl; written into --report between <!-- sme --> "
                         "markers, figures in <report>_sme.json")
    ap.add_argument("--svl", default="128,256,512,1024,2048",
                    help="--sme: streaming vector lengths in bits (default %(default)s)")
    ap.add_argument("--no-cache", action="store_true",
                    help="skip the cache model (L1D/L2 simulation, roofline, per-thread figures): "
                         "QEMU runs 1.06-1.4x faster on the long workloads")
    ap.add_argument("--unsized", action="store_true",
                    help="with the cache model, pass the calls no cache sizes (the blocks an "
                         "engine that calls no ts_context_set_cache_sizes runs: the library's "
                         "own for the core QEMU reports) instead of each modeled core's")
    return ap.parse_args(argv)


def check_build_options(args) -> None:
    """--arch, --cpu and --inst as `make gen` takes them; ValueError naming the bad one."""
    for option, check in (("--arch", check_arch), ("--cpu", check_cpu), ("--inst", inst_features)):
        try:
            check(getattr(args, option[2:]))
        except ValueError as e:
            raise ValueError(f"{option}: {e}") from None
    if args.arch == "v92" and not args.sme:
        raise ValueError("--arch v92 is the SME build: profile it with --sme (the cycle report "
                         "takes v8 | v82 | v86)")


def fail(message: str) -> int:
    print(f"bench: {message}", file=sys.stderr)
    return 1


def qemu_version() -> str:
    proc = subprocess.run([QEMU, "--version"], capture_output=True, text=True)
    return proc.stdout.splitlines()[0] if proc.returncode == 0 and proc.stdout else "qemu-aarch64 ?"


def check_qemu_plugins() -> None:
    proc = subprocess.run([QEMU, "-h"], capture_output=True, text=True)
    if "-plugin" not in proc.stdout:
        raise ProfileError(f"{QEMU} was built without TCG plugin support (no -plugin option)")


def generate(arch, cpu, inst, out: Path) -> Path:
    cmd = [sys.executable, "-m", "gen", "generate", "--arch", arch, "--cpu", cpu, "--inst", inst,
           "--prefix", PREFIX, "--out", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    return out


def load_kernel_table(gen_dir: Path):
    """The per-kernel llvm-mca table of bench/kernels_mca.py, or (None, why it is missing)."""
    try:
        kernels_mca = importlib.import_module("bench.kernels_mca")
    except ModuleNotFoundError as e:
        if e.name == "bench.kernels_mca":
            return None, "bench/kernels_mca.py is not in this tree yet"
        raise
    try:
        return kernels_mca.kernel_table(gen_dir), None
    except Exception as e:   # its failure must not hide the profiles: shown in the report
        print(f"bench: warning: kernels_mca.kernel_table failed: {e}", file=sys.stderr)
        return None, f"bench/kernels_mca.kernel_table failed: {type(e).__name__}: {e}"


def select_runs(arch: str, only: str, threads: str = "1"):
    wanted = [w for w in (s.strip() for s in only.split(",")) if w]
    workloads = [w for w in all_workloads() if not wanted or any(s in w.name for s in wanted)]
    if not workloads:
        raise ValueError(f"--only {only!r} matches no workload: "
                         f"{', '.join(w.name for w in all_workloads())}")
    try:
        counts = [int(t) for t in threads.split(",") if t.strip()]
    except ValueError:
        raise ValueError(f"--threads {threads!r}: comma-separated integers") from None
    if any(not 1 <= t <= 256 for t in counts):
        raise ValueError(f"--threads {threads!r}: counts in 1..256")
    workloads = with_threads(workloads, counts)
    runs = [(w, p) for w in workloads for p in w.paths(arch)]
    missing = [(w.name, p.name) for w in workloads for p in w.missing_paths(arch)]
    return runs, missing


def print_summary(report, seconds: float, md_path: Path) -> None:
    print()
    print(rep.headline_table(report))
    print()
    print(rep.speedup_table(report))
    if rep.cache_sections(report):
        print("\ncache model, roofline bound MACs/cycle (% of peak) and its limiter:")
        print(rep.roofline_table(report))
    print(f"\nlargest overheads ({report['meta']['cores'][0]}):")
    print(rep.overheads_list(report))
    for n in report["notes"]:
        print(f"note: {n}")
    print(f"\nbench: wrote {md_path} and {md_path.with_suffix('.json')} in {seconds:.0f} s")


def main_sme(args) -> int:
    """`--sme`: profile the SME paths (bench/sme.py) and write the report's SME section."""
    started = time.monotonic()
    out_dir, md_path = Path(args.out_dir), Path(args.report)
    try:
        svls = tuple(int(v) for v in args.svl.split(","))
        if any(v not in sme.SVL_BITS for v in svls):
            raise ValueError(f"--svl {args.svl}: each of {', '.join(map(str, sme.SVL_BITS))}")
        decode = sme.decode_requested(args.only)
        if not decode and not sme.sme_runs(args.only):
            raise ValueError(f"--only {args.only!r} matches no SME type: "
                             f"{', '.join(dtype for _, dtype, _ in sme.sme_runs())}")
        check_qemu_plugins()
        gen_dir = Path(args.gen_dir) if args.gen_dir else generate(
            "v92", args.cpu, args.inst, out_dir / "v92" / "gen")
        manifest = json.loads((gen_dir / "manifest.json").read_text())
        plugin = build_plugin(out_dir / "plugin")
        program = build_program(gen_dir, out_dir / "v92" / "workloads")
        profile = sme.profile_decode if decode else sme.profile
        results = profile(program, plugin, out_dir / "v92" / "profiles", manifest, svls,
                          args.only, args.jobs)
    except (ValueError, FileNotFoundError, RuntimeError, ProfileError) as e:
        return fail(str(e))
    meta = dict(arch="v92", gen_dir=str(gen_dir), date=datetime.date.today().isoformat(),
                qemu=qemu_version())
    (sme.write_decode if decode else sme.write)(results, meta, md_path)
    print(f"bench: wrote the SME section of {md_path} in {time.monotonic() - started:.0f} s")
    return 0 if all(not r.get("error") for r in results) else 1


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        check_build_options(args)
    except ValueError as e:
        return fail(str(e))
    if args.sme:
        return main_sme(args)
    started = time.monotonic()
    cpus = [c.strip() for c in args.cores.split(",") if c.strip()]
    out_dir, md_path = Path(args.out_dir), Path(args.report)
    unknown = [c for c in cpus if c not in CORES]
    if unknown:
        print(f"bench: note: no peak figures for {', '.join(unknown)} in gen/cores.py "
              "(MACs/cycle only)", file=sys.stderr)
    try:
        runs, missing = select_runs(args.arch, args.only, args.threads)
        check_qemu_plugins()
        gen_dir = Path(args.gen_dir) if args.gen_dir else generate(
            args.arch, args.cpu, args.inst, out_dir / args.arch / "gen")
        plugin = build_plugin(out_dir / "plugin")
        program = build_program(gen_dir, out_dir / args.arch / "workloads")
        model = CycleModel(out_dir / "mca-cache.json")
        model.check_cpus(cpus)
        print(f"bench: {len(runs)} profiled runs (ARCH={args.arch}), {args.jobs} at a time")
        caches = {} if args.no_cache else {c: MEMORY[c] for c in cpus if c in MEMORY}
        variants = variant_instructions(json.loads((gen_dir / "manifest.json").read_text()))
        profiles = profile_all(program, runs, plugin, out_dir / args.arch / "profiles", model, cpus,
                               prefix=PREFIX, jobs=args.jobs, caches=caches, variants=variants,
                               sized=not args.unsized)
    except (ValueError, FileNotFoundError, RuntimeError, ProfileError, McaError) as e:
        return fail(str(e))
    table, table_error = load_kernel_table(gen_dir)
    meta = dict(arch=args.arch, cpu=args.cpu, inst=args.inst, gen_dir=str(gen_dir),
                date=datetime.date.today().isoformat(), qemu=qemu_version(), qemu_cpu=QEMU_CPU,
                class_qemu_cpu={c: qemu_cpu(c) for c in CLASS_MIDR if c in variants},
                llvm_mca=llvm_mca_version(),
                memory={c: dataclasses.asdict(m) for c, m in caches.items()})
    report = rep.build_report(profiles, cpus=cpus, meta=meta, kernel_table=table,
                              kernel_table_error=table_error, missing_paths=missing)
    charts = {}
    if not args.no_charts:
        try:
            drawn = rep.draw_charts(report, out_dir)
        except RuntimeError as e:
            return fail(str(e))
        charts = {name: os.path.relpath(path, md_path.parent) for name, path in drawn.items()}
    md_path.parent.mkdir(parents=True, exist_ok=True)
    md_path.write_text(rep.render_markdown(report, charts))
    rep.write_json(report, md_path.with_suffix(".json"))
    print_summary(report, time.monotonic() - started, md_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
