"""Per-kernel llvm-mca table: modeled inner-loop throughput of every generated kernel per Arm core.

    python3 -m bench.kernels_mca OUT_DIR [--cpu CORE[,CORE...]] [--iterations N] [--json]

OUT_DIR is a `make gen` output folder (out/<ARCH>/): its manifest.json names each kernel's
instruction and tile. For each kernel `.S` the inner k-loop is the region between
`// LLVM-MCA-BEGIN <symbol>` and `// LLVM-MCA-END`. The file is preprocessed as the assembler
sees it (`aarch64-linux-gnu-gcc -E -C -P -x assembler-with-cpp`, comments kept) and every
`.inst 0x... // mnemonic` line is replaced by its mnemonic comment, since llvm-mca cannot time a
raw word. llvm-mca-19 then models the loop on each core that has the instruction's feature.

Per kernel x core:
  cycles/iter   llvm-mca Total Cycles / Iterations (steady state of the loop)
  MACs/cycle    multiply-accumulates per iteration (MAC instructions x MACs each) / cycles
  % peak        MACs/cycle / (the core's MAC-instruction throughput x MACs per instruction)
  bound %       only where the core's issue width or load pipes cap the loop below the target
                (97% out-of-order, 80% in-order): the best % of peak those resources allow,
                max(MAC cycles, micro-ops / issue width, load-pipe cycles / load pipes), from the
                issue tables in gen/cores.py.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from gen.cores import CORES
from gen.isa import INSTRUCTIONS
from gen.schedule import Insn, ScheduleError, op_class

LLVM_MCA = "llvm-mca-19"
GCC = "aarch64-linux-gnu-gcc"
MATTR = "+dotprod,+i8mm,+bf16,+fullfp16,+fp16fml"
ITERATIONS = 1000
BENCH_CORES = ("neoverse-n2", "neoverse-v1", "cortex-a710", "cortex-a510", "cortex-a55")
TARGET = {True: 0.80, False: 0.97}     # in_order -> % of peak the loop should reach

_BEGIN = re.compile(r"^\s*//\s*LLVM-MCA-BEGIN\s+(\S+)")
_END = re.compile(r"^\s*//\s*LLVM-MCA-END")
_INST = re.compile(r"^(\s*)\.inst\s+0x[0-9a-fA-F]+\s*(?://\s*(.*))?$")
_REGION = re.compile(r"\[\d+\] Code Region - (\S+)")
_TOTAL = re.compile(r"Total Cycles:\s+(\d+)")
_ITERS = re.compile(r"Iterations:\s+(\d+)")


class KernelBenchError(RuntimeError):
    """A kernel or its output folder cannot be benchmarked (names the problem)."""


# ---- extracting the loops ----------------------------------------------------------------------

def preprocess(path: Path) -> str:
    try:
        proc = subprocess.run([GCC, "-E", "-C", "-P", "-x", "assembler-with-cpp", str(path)],
                              capture_output=True, text=True)
    except FileNotFoundError:
        raise KernelBenchError(f"{GCC} not found: run `make deps`") from None
    if proc.returncode != 0:
        raise KernelBenchError(f"preprocessing {path} failed:\n{proc.stderr[-2000:]}")
    return proc.stdout


def mnemonic_form(line: str) -> str:
    """`.inst 0x... // smmla v1.4s, ...` -> `smmla v1.4s, ...`; other lines unchanged."""
    match = _INST.match(line)
    if not match:
        return line
    if not match.group(2):
        raise KernelBenchError(f"`{line.strip()}` has no mnemonic comment: llvm-mca cannot time "
                               "a raw .inst word (generate with INST=never or keep the comments)")
    return match.group(1) + match.group(2).strip()


def loop_regions(text: str) -> dict[str, list[str]]:
    """Marked regions of preprocessed assembly, in mnemonic form, by name."""
    regions, current, name = {}, None, None
    for line in text.splitlines():
        begin = _BEGIN.match(line)
        if begin:
            if current is not None:
                raise KernelBenchError(f"region {begin.group(1)} begins inside region {name}")
            name, current = begin.group(1), []
        elif _END.match(line):
            if current is None:
                raise KernelBenchError("LLVM-MCA-END without a BEGIN")
            regions[name], current = current, None
        elif current is not None:
            current.append(mnemonic_form(line))
    if current is not None:
        raise KernelBenchError(f"region {name} has no LLVM-MCA-END")
    return regions


def instructions(lines: list[str]) -> list[str]:
    """The instruction lines of a region (labels, comments and blank lines dropped)."""
    result = []
    for line in lines:
        code = line.split("//")[0].strip()
        code = re.sub(r"^\w+:\s*", "", code)
        if code and not code.startswith("."):
            result.append(code)
    return result


# ---- running llvm-mca --------------------------------------------------------------------------

_NUMERIC_LABEL = re.compile(r"^(\s*)(\d+):")
_NUMERIC_REF = re.compile(r"\b(\d+)[bf]\b")


def named_labels(lines: list[str], tag: str) -> list[str]:
    """llvm-mca's parser has no numeric local labels (`1:` ... `b.ne 1b`): name them
    `<tag>_<n>` (the loop's own labels only, so `b` and `f` both mean the one in the region)."""
    result = []
    for line in lines:
        code, sep, comment = line.partition("//")
        code = _NUMERIC_LABEL.sub(lambda m: f"{m.group(1)}{tag}_{m.group(2)}:", code)
        if re.match(r"\s*(b\.|b\s|cbn?z|tbn?z)", code):
            code = _NUMERIC_REF.sub(lambda m: f"{tag}_{m.group(1)}", code)
        result.append(code + sep + comment)
    return result


def run_mca(regions: dict[str, list[str]], core: str, iterations: int = ITERATIONS
            ) -> dict[str, float]:
    """Cycles per iteration of each region on `core` (one llvm-mca run for all regions)."""
    source = []
    for k, (name, lines) in enumerate(regions.items()):
        source += [f"# LLVM-MCA-BEGIN {name}", *named_labels(lines, f"tsloop{k}"),
                   "# LLVM-MCA-END"]
    cmd = [LLVM_MCA, "-mtriple=aarch64", f"-mcpu={CORES[core].llvm_cpu}", f"-mattr={MATTR}",
           f"-iterations={iterations}", "-instruction-info=false", "-resource-pressure=false"]
    try:
        proc = subprocess.run(cmd, input="\n".join(source) + "\n", capture_output=True,
                              text=True)
    except FileNotFoundError:
        raise KernelBenchError(f"{LLVM_MCA} not found: run `make deps`") from None
    if proc.returncode != 0:
        raise KernelBenchError(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    result = {}
    for chunk in re.split(r"(?=\[\d+\] Code Region - )", proc.stdout):
        name = _REGION.search(chunk)
        total, iters = _TOTAL.search(chunk), _ITERS.search(chunk)
        if name and total and iters:
            result[name.group(1)] = int(total.group(1)) / int(iters.group(1))
    if len(regions) == 1 and not result:   # a single region is reported without a header
        total, iters = _TOTAL.search(proc.stdout), _ITERS.search(proc.stdout)
        if total and iters:
            result[next(iter(regions))] = int(total.group(1)) / int(iters.group(1))
    missing = set(regions) - set(result)
    if missing:
        raise KernelBenchError(f"llvm-mca reported no cycles for {sorted(missing)} on {core}")
    return result


# ---- figures -----------------------------------------------------------------------------------

def _as_insn(code: str, instruction: str) -> Insn:
    mnemonic = code.split()[0]
    inst = INSTRUCTIONS[instruction]
    if mnemonic in (inst.mnemonic, inst.mnemonic + "2"):
        return Insn(code, "mac", instruction=instruction)
    if mnemonic.startswith("ld"):
        return Insn(code, "load")
    if mnemonic.startswith("b") or mnemonic in ("cbz", "cbnz"):
        return Insn(code, "branch")
    return Insn(code, "alu")


def resource_bound(body: list[Insn], core_name: str) -> float:
    """Fewest cycles per iteration the core's issue width, MAC pipes and load pipes allow."""
    core = CORES[core_name]
    macs = sum(1 / core.throughput(i.instruction) for i in body if i.kind == "mac")
    timings = [core.op(op_class(i)) for i in body]
    issue = sum(t.uops for t in timings) / core.issue_width
    loads = sum(count * cycles for t, i in zip(timings, body) if i.kind == "load"
                for unit, count, cycles in t.units if unit == "ld") / core.units["ld"]
    return max(macs, issue, loads)


def kernel_rows(symbol: str, kernel: dict, lines: list[str], cycles: dict[str, float]
                ) -> list[dict]:
    instruction = kernel["instruction"]
    inst = INSTRUCTIONS[instruction]
    body = [_as_insn(code, instruction) for code in instructions(lines)]
    mac_count = sum(1 for i in body if i.kind == "mac")
    if not mac_count:
        raise KernelBenchError(f"{symbol}: the marked loop holds no {inst.mnemonic}")
    rows = []
    for core_name, per_iter in cycles.items():
        core = CORES[core_name]
        peak = core.throughput(instruction) * inst.macs
        rate = mac_count * inst.macs / per_iter
        try:
            bound = mac_count / core.throughput(instruction) / resource_bound(body, core_name)
        except (ScheduleError, ValueError):
            bound = None
        row = {"kernel": symbol, "instruction": instruction,
               "tile": f"{kernel['ep']}x{kernel['hp']}x{kernel['lp']}", "core": core_name,
               "cycles/iter": round(per_iter, 2), "MACs/cycle": round(rate, 2),
               "% peak": round(100 * rate / peak, 1),
               "bound %": (round(100 * bound, 1)
                           if bound is not None and bound < TARGET[core.in_order] else None)}
        rows.append(row)
    return rows


def read_manifest(out_dir: Path) -> dict:
    path = out_dir / "manifest.json"
    if not path.is_file():
        raise KernelBenchError(f"{path} not found: is {out_dir} a `make gen` output folder?")
    return json.loads(path.read_text())


def kernel_table(out_dir, cores=BENCH_CORES, iterations: int = ITERATIONS) -> list[dict]:
    """One row per kernel x core (cores lacking the kernel's feature are left out)."""
    out_dir = Path(out_dir)
    unknown = [c for c in cores if c not in CORES]
    if unknown:
        raise KernelBenchError(f"unknown core(s) {', '.join(unknown)}: valid are "
                               f"{', '.join(CORES)}")
    manifest = read_manifest(out_dir)
    kernels = {k["symbol"]: k for k in manifest["kernels"]}
    regions = {}
    for symbol, kernel in kernels.items():
        path = out_dir / kernel["file"]
        found = loop_regions(preprocess(path))
        if symbol not in found:
            raise KernelBenchError(f"{path}: no `LLVM-MCA-BEGIN {symbol}` region")
        regions[symbol] = found[symbol]
    per_core = {}
    for core in cores:
        wanted = {s: regions[s] for s, k in kernels.items()
                  if CORES[core].has(INSTRUCTIONS[k["instruction"]].feature)}
        if wanted:
            per_core[core] = run_mca(wanted, core, iterations)
    rows = []
    for symbol, kernel in kernels.items():
        cycles = {core: per_core[core][symbol] for core in cores
                  if symbol in per_core.get(core, {})}
        rows += kernel_rows(symbol, kernel, regions[symbol], cycles)
    return rows


def format_table(rows: list[dict]) -> str:
    if not rows:
        return "(no kernels)"
    header = list(rows[0])
    cells = [[("" if row[k] is None else str(row[k])) for k in header] for row in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
    line = lambda values: "  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, cells)])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m bench.kernels_mca",
                                     description="Modeled inner-loop throughput per kernel "
                                                 "and Arm core (llvm-mca-19).")
    parser.add_argument("out_dir", help="a `make gen` output folder, e.g. out/v86")
    parser.add_argument("--cpu", default=",".join(BENCH_CORES),
                        help="comma-separated cores (default: %(default)s)")
    parser.add_argument("--iterations", type=int, default=ITERATIONS)
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    try:
        rows = kernel_table(args.out_dir, [c for c in args.cpu.split(",") if c],
                            args.iterations)
    except KernelBenchError as e:
        print(f"bench.kernels_mca: {e}", file=sys.stderr)
        return 1
    print(json.dumps(rows, indent=2) if args.json else format_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
