"""The tbcount QEMU plugin (bench/plugin/tbcount.c): build it, run a program under it, read
its output — the executed translation blocks with their execution counts and bytes."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

PLUGIN_SOURCE = Path(__file__).resolve().parent / "plugin" / "tbcount.c"
HOST_CC = "gcc"
QEMU = "qemu-aarch64"
HEADER = "# tbcount 1"


class ProfileError(RuntimeError):
    """A profiled run or its output went wrong; the message says which and why."""


@dataclass(frozen=True)
class Block:
    """One translation block as QEMU executed it."""
    vaddr: int
    n_insns: int
    count: int          # executions
    code: bytes         # the block's instruction bytes (little-endian A64 words)

    @property
    def dynamic_insns(self) -> int:
        return self.n_insns * self.count


def build_plugin(build_dir) -> Path:
    """Compile the plugin with the host C compiler into build_dir (skipped when up to date)."""
    build_dir = Path(build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    plugin = build_dir / "tbcount.so"
    if plugin.exists() and plugin.stat().st_mtime >= PLUGIN_SOURCE.stat().st_mtime:
        return plugin
    cmd = [HOST_CC, "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
           "-fvisibility=hidden", "-o", str(plugin), str(PLUGIN_SOURCE), "-lpthread"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ProfileError(f"building the QEMU plugin failed: {' '.join(cmd)}\n{proc.stderr}")
    return plugin


def parse_profile(text: str, source: str = "plugin output") -> list[Block]:
    """Blocks from the plugin's output text; raises ProfileError on anything malformed."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith(HEADER):
        raise ProfileError(f"{source}: not tbcount output (first line {lines[:1]!r})")
    blocks = []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split()
        try:
            vaddr, n_insns, count, code = (int(fields[0], 16), int(fields[1]), int(fields[2]),
                                           bytes.fromhex(fields[3]))
        except (IndexError, ValueError) as e:
            raise ProfileError(f"{source}:{number}: malformed line {line!r} ({e})") from None
        if len(code) != 4 * n_insns:
            raise ProfileError(f"{source}:{number}: {n_insns} instructions but {len(code)} bytes "
                               "(A64 instructions are 4 bytes)")
        blocks.append(Block(vaddr, n_insns, count, code))
    return blocks


def run_profiled(binary, args, plugin, out_file, *, cpu="max", mark=None,
                 timeout=1800) -> tuple[list[Block], str]:
    """Run `binary args…` under qemu-aarch64 with the plugin; returns the executed blocks and
    the program's stdout. With `mark` (a guest code address), only what executes after the
    last execution of the block at that address is counted."""
    out_file = Path(out_file)
    out_file.unlink(missing_ok=True)
    options = f"{plugin},out={out_file}" + (f",mark={mark:x}" if mark is not None else "")
    cmd = [QEMU, "-cpu", cpu, "-plugin", options, str(binary), *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise ProfileError(f"{' '.join(cmd)} exited {proc.returncode}\n"
                           f"stdout:\n{proc.stdout[-2000:]}\nstderr:\n{proc.stderr[-2000:]}")
    if not out_file.exists():
        raise ProfileError(f"{' '.join(cmd)}: the plugin wrote no profile\n{proc.stderr[-2000:]}")
    return parse_profile(out_file.read_text(), str(out_file)), proc.stdout
