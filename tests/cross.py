"""Cross-build and run helpers for tests of generated code (aarch64 gcc/clang + qemu-aarch64)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST_C = ROOT / "tests" / "c"
GCC = "aarch64-linux-gnu-gcc"
CLANG = "clang-19"
QEMU = "qemu-aarch64"


def compile_aarch64(sources, output, *, flags=(), includes=(), compiler="gcc", march="armv8-a"):
    """Build a static aarch64 Linux executable (static: qemu needs no sysroot). Returns its path.
    Raises AssertionError with the compiler's message on failure."""
    output = Path(output)
    cmd = [GCC] if compiler == "gcc" else [CLANG, "--target=aarch64-linux-gnu"]
    cmd += [f"-march={march}", "-O2", "-static", "-Wall", "-Wextra", "-Werror=implicit-function-declaration",
            "-I", str(TEST_C), *[f"-I{i}" for i in includes], *flags,
            *[str(s) for s in sources], "-o", str(output), "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"build failed: {' '.join(cmd)}\n{proc.stderr}"
    return output


def run_qemu(binary, *args, cpu="max", timeout=300, check=True):
    """Run an aarch64 binary under qemu-user; returns CompletedProcess (text)."""
    proc = subprocess.run([QEMU, "-cpu", cpu, str(binary), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)
    if check:
        assert proc.returncode == 0, (f"{binary} {' '.join(map(str, args))} on -cpu {cpu} "
                                      f"exited {proc.returncode}\nstdout:\n{proc.stdout[-4000:]}\n"
                                      f"stderr:\n{proc.stderr[-4000:]}")
    return proc
