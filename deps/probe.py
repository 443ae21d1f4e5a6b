"""Run the capability probes of deps/registry.py.

    python3 -m deps.probe GROUP [--stamp FILE --key KEY]

Prints each failed capability with its reason on stderr and, on stdout, one line
`missing: PACKAGE ...` (the packages that provide the failed ones; nothing when all pass).
Exit 0 when every probe of GROUP passes, 3 when one fails (EXIT_MISSING: distinct from the 1
of a Python error, so scripts/ensure-deps.sh never takes a broken probe for "all there"), 2 on
bad arguments.

With --stamp, a passing run writes FILE: KEY on the first line, then `stat` lines (mtime, size,
path) of every file the probes relied on — the commands, every header the compilers read, the
Python modules, dpkg's status file. scripts/ensure-deps.sh skips probing while KEY and every
line still match; any package installed or removed through dpkg changes the status file, and a
deleted or replaced command or header changes its own line, so a stale stamp never hides a
missing capability.

TILESMITH_DEPS_HIDE=name,name… makes the probes treat those commands / modules as absent
(tests use it to check which packages a group would install).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import importlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .registry import (CLANG, CMAKE, CMAKE_MIN_VERSION, CROSS_BINUTILS, CROSS_GCC, HOST_CC, LLVM_MC, LLVM_MCA, LLVM_NM, PYTHON,
                       QEMU, probes_for)

DPKG_STATUS = "/var/lib/dpkg/status"
PROBE_OUTPUT = "tilesmith deps probe ok"
TIMEOUT = 60
EXIT_MISSING = 3


class ProbeFailed(Exception):
    pass


def hidden() -> set:
    return {n for n in os.environ.get("TILESMITH_DEPS_HIDE", "").split(",") if n}


def which(command: str) -> str:
    """The command's path; ProbeFailed when it is not on PATH (or hidden)."""
    path = None if command in hidden() else shutil.which(command)
    if path is None:
        raise ProbeFailed(f"{command}: command not found")
    return path


def run(cmd, what: str, **kwargs) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, **kwargs)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ProbeFailed(f"{what}: {error}") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise ProbeFailed(f"{what} failed (exit {proc.returncode}): {' | '.join(tail)}")
    return proc


def c_program(headers) -> str:
    """A program that includes `headers` and uses a little of each capability it proves."""
    includes = "".join(f"#include <{h}>\n" for h in headers)
    body = ""
    if "arm_neon.h" in headers:
        body += "    int32x4_t v = vdupq_n_s32(1); if (vgetq_lane_s32(v, 0) != 1) return 1;\n"
    if "sys/auxv.h" in headers:
        body += "    (void)getauxval(AT_HWCAP);\n"
    if "stdio.h" in headers:
        body += f'    puts("{PROBE_OUTPUT}");\n'
    return f"{includes}int main(void)\n{{\n{body}    return 0;\n}}\n"


def header_files(depfile: Path) -> list:
    """Files a `-MD` dependency file lists (the source itself included, harmless)."""
    text = depfile.read_text().replace("\\\n", " ")
    return sorted({w for w in text.split(":", 1)[-1].split() if w.startswith("/")})


def linked_files(trace: str) -> list:
    """Files GNU ld's `-t` trace names (objects, archives: `(/path/libc.a)foo.o` or a path)."""
    found = set()
    for line in trace.splitlines():
        path = line.strip().lstrip("(").split(")")[0]
        if path.startswith("/") and os.path.isfile(path):
            found.add(path)
    return sorted(found)


def build(cmd_head, probe, work: Path, extra=()) -> tuple:
    """Compile and link probe.headers' program with cmd_head; returns (binary, the headers,
    objects and libraries it used)."""
    source = work / f"{probe.name}.c"
    source.write_text(c_program(probe.headers))
    binary, depfile = work / f"{probe.name}.out", work / f"{probe.name}.d"
    proc = run([*cmd_head, "-O1", "-MD", "-MF", str(depfile), "-Wl,-t", *extra, str(source),
                "-o", str(binary)], f"{cmd_head[0]}: building a program with <{'>, <'.join(probe.headers)}>")
    return binary, header_files(depfile) + linked_files(proc.stdout + proc.stderr)


def probe_module(probe, work, results):
    if probe.module in hidden():
        raise ProbeFailed(f"python module {probe.module}: hidden")
    try:
        module = importlib.import_module(probe.module)
    except ImportError as error:
        raise ProbeFailed(f"{PYTHON}: import {probe.module}: {error}") from None
    return [str(Path(module.__file__).parent)]


def probe_cross_cc(probe, work, results):
    binary, files = build([which(CROSS_GCC)], probe, work, ["-static", "-march=armv8-a", "-lm"])
    results["cross-binary"] = binary
    return files


def probe_binutils(probe, work, results):
    for command in CROSS_BINUTILS:
        run([which(command), "--version"], f"{command} --version")
    return []


def probe_qemu(probe, work, results):
    binary = results.get("cross-binary")
    if binary is None:     # cross-cc failed (its packages get installed, then all is probed
        run([which(QEMU), "--version"], f"{QEMU} --version")        # again): the command at least
        return []
    proc = run([which(QEMU), "-cpu", "max", str(binary)], f"{QEMU} running the probe program")
    if PROBE_OUTPUT not in proc.stdout:
        raise ProbeFailed(f"{QEMU}: the probe program printed {proc.stdout[:200]!r}")
    return []


def probe_clang(probe, work, results):
    _, files = build([which(CLANG), "--target=aarch64-linux-gnu"], probe, work,
                     ["-static", "-march=armv8-a", "-lm"])
    return files


def probe_llvm(probe, work, results):
    run([which(LLVM_MCA), "-mtriple=aarch64", "-mcpu=neoverse-n2"], f"{LLVM_MCA} on one instruction",
        input="add x0, x0, x1\n")
    run([which(LLVM_MC), "--disassemble", "-triple=aarch64"], f"{LLVM_MC} disassembling one word",
        input="0x00 0x00 0x01 0x8b\n")
    run([which(LLVM_NM), "--version"], f"{LLVM_NM} --version")
    return []


def probe_cmake(probe, work, results):
    text = run([which(CMAKE), "--version"], f"{CMAKE} --version").stdout
    found = re.search(r"version (\d+)\.(\d+)", text)
    if not found or tuple(map(int, found.groups())) < CMAKE_MIN_VERSION:
        raise ProbeFailed(f"{CMAKE}: version {found.group(0) if found else '?'} is older than "
                          f"{'.'.join(map(str, CMAKE_MIN_VERSION))}")
    return []


def probe_host_cc(probe, work, results):
    _, files = build([which(HOST_CC)], probe, work, ["-shared", "-fPIC", "-lpthread"])
    return files


RUNNERS = {"module": probe_module, "cross-cc": probe_cross_cc, "binutils": probe_binutils,
           "qemu": probe_qemu, "clang": probe_clang, "llvm": probe_llvm, "host-cc": probe_host_cc,
           "cmake": probe_cmake}


def command_files(probe) -> list:
    files = []
    for command in probe.commands:
        path = shutil.which(command)
        if path:
            files += [path, os.path.realpath(path)]
    return files


def run_probes(group: str) -> tuple:
    """({probe name: failure message}, files relied on). Independent probes run in parallel;
    a probe with `needs` runs after the one it needs."""
    probes = probes_for(group)
    failures, files, results = {}, {DPKG_STATUS, PYTHON}, {}

    def one(probe, work):
        try:
            files.update(RUNNERS[probe.kind](probe, work, results) + command_files(probe))
        except ProbeFailed as error:
            failures[probe.name] = str(error)

    with tempfile.TemporaryDirectory(prefix="tilesmith-deps-") as tmp:
        work = Path(tmp)
        first = [p for p in probes if not p.needs]
        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(lambda p: one(p, work), first))
        for probe in probes:
            if probe.needs:
                one(probe, work)
    return failures, sorted(f for f in files if os.path.exists(f))


def write_stamp(stamp: Path, key: str, files) -> None:
    """KEY, then `stat -c '%.9Y %s %n'` of every file (the very command ensure-deps.sh compares
    with), written atomically."""
    lines = run(["stat", "-c", "%.9Y %s %n", "--", *files], "stat").stdout
    stamp.parent.mkdir(parents=True, exist_ok=True)
    tmp = stamp.with_name(f".{stamp.name}.{os.getpid()}")
    tmp.write_text(f"{key}\n{lines}")
    os.replace(tmp, stamp)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m deps.probe", description=__doc__.splitlines()[0])
    parser.add_argument("group", choices=("gen", "bench", "all"))
    parser.add_argument("--stamp", help="write this stamp file when every probe passes")
    parser.add_argument("--key", default="", help="first line of the stamp")
    args = parser.parse_args(argv)
    failures, files = run_probes(args.group)
    for name, message in sorted(failures.items()):
        print(f"ensure-deps: {name}: {message}", file=sys.stderr)
    missing = sorted({pkg for p in probes_for(args.group) if p.name in failures for pkg in p.packages})
    if missing:
        print("missing: " + " ".join(missing))
        return EXIT_MISSING
    if args.stamp:
        write_stamp(Path(args.stamp), args.key, files)
    return 0


if __name__ == "__main__":
    sys.exit(main())
