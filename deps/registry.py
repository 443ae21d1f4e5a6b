"""What tilesmith needs from the machine, as capability probes (issue 9).

Each `Probe` checks one capability the way the project uses it (a cross build that links, a
program that runs under QEMU, a module that imports …) and names the Debian packages that
provide it. `scripts/ensure-deps.sh GROUP` runs the probes of a group (`python3 -m deps.probe`)
and installs the packages of the failed ones.

Groups: gen (`make gen`), bench (`make bench`), all (`make test`: everything). The commands
and headers listed here are checked against the code by tests/test_deps.py: every command a
harness builder runs and every system header a C source includes must be probed, so a new tool
or header cannot be forgotten by the install step.
"""
from __future__ import annotations

from dataclasses import dataclass

GROUPS = ("gen", "bench", "all")

# Commands (the names the code runs them by).
CROSS_GCC = "aarch64-linux-gnu-gcc"
CROSS_BINUTILS = ("aarch64-linux-gnu-as", "aarch64-linux-gnu-objcopy",
                  "aarch64-linux-gnu-objdump", "aarch64-linux-gnu-nm", "aarch64-linux-gnu-ld",
                  "aarch64-linux-gnu-readelf")
CLANG = "clang-19"
QEMU = "qemu-aarch64"
LLVM_MCA = "llvm-mca-19"
LLVM_NM = "llvm-nm-19"
LLVM_MC = "llvm-mc-19"
HOST_CC = "gcc"
CMAKE = "cmake"
CMAKE_MIN_VERSION = (3, 13)      # cmake_minimum_required of tests/test_cmake.py's consumer
PYTHON = "/usr/bin/python3"
# Commands of Debian's Essential packages (dash, coreutils, dpkg), on every Debian system and
# never probed (Debian Policy 3.8, "Essential packages": https://www.debian.org/doc/debian-policy/ch-binary.html#essential-packages).
ESSENTIAL_COMMANDS = ("sh", "stat", "dpkg", "dpkg-query")

# System headers of the aarch64 C code (generated drivers, tests/c, bench/workloads.c); the
# probe program includes them all. Headers only included for other systems are listed apart.
TARGET_HEADERS = ("arm_neon.h", "fenv.h", "float.h", "inttypes.h", "math.h", "pthread.h",
                  "signal.h", "stdbool.h", "stddef.h", "stdint.h", "stdio.h", "stdlib.h",
                  "string.h", "sys/auxv.h", "sys/mman.h", "sys/prctl.h", "sys/types.h",
                  "sys/wait.h", "unistd.h")
NOT_LINUX_HEADERS = ("sys/sysctl.h", "windows.h")   # Apple / Windows branches of dispatch
# System headers of host C code (the QEMU plugin bench/plugin/tbcount.c, built by HOST_CC).
HOST_HEADERS = ("pthread.h", "stdbool.h", "stddef.h", "stdint.h", "stdio.h", "stdlib.h",
                "string.h")

CROSS_PACKAGES = ("gcc-aarch64-linux-gnu", "binutils-aarch64-linux-gnu", "libc6-dev-arm64-cross")


@dataclass(frozen=True)
class Probe:
    name: str
    kind: str                  # how it is probed: a key of deps.probe.RUNNERS
    groups: tuple              # the ensure-deps groups that need it
    packages: tuple            # Debian packages that provide it
    commands: tuple = ()       # commands it checks
    headers: tuple = ()        # system headers it checks
    module: str = ""           # for kind "module"
    needs: str = ""            # probe whose output it uses (qemu runs the cross-cc program)


PROBES = (
    Probe("jinja2", "module", GROUPS, ("python3-jinja2",), module="jinja2"),
    Probe("pytest", "module", ("all",), ("python3-pytest",), module="pytest"),
    Probe("matplotlib", "module", ("bench", "all"), ("python3-matplotlib",), module="matplotlib"),
    Probe("cross-cc", "cross-cc", ("bench", "all"), CROSS_PACKAGES, commands=(CROSS_GCC,),
          headers=TARGET_HEADERS),
    Probe("cross-binutils", "binutils", ("bench", "all"), ("binutils-aarch64-linux-gnu",),
          commands=CROSS_BINUTILS),
    Probe("qemu", "qemu", ("bench", "all"), ("qemu-user",), commands=(QEMU,), needs="cross-cc"),
    Probe("clang", "clang", ("all",), ("clang-19",) + CROSS_PACKAGES, commands=(CLANG,),
          headers=TARGET_HEADERS),
    Probe("llvm", "llvm", ("bench", "all"), ("llvm-19",), commands=(LLVM_MCA, LLVM_MC, LLVM_NM)),
    Probe("cmake", "cmake", ("all",), ("cmake",), commands=(CMAKE,)),
    Probe("host-cc", "host-cc", ("bench", "all"), ("gcc", "libc6-dev"), commands=(HOST_CC,),
          headers=HOST_HEADERS),
)


def probes_for(group: str) -> tuple:
    if group not in GROUPS:
        raise ValueError(f"unknown group {group!r}: valid groups are {', '.join(GROUPS)}")
    return tuple(p for p in PROBES if group in p.groups)


def probed_commands(group: str = "all") -> set:
    return {c for p in probes_for(group) for c in p.commands}


def probed_headers(kind: str) -> set:
    return {h for p in PROBES if p.kind == kind for h in p.headers}
