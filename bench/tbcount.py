"""The tbcount QEMU plugin (bench/plugin/tbcount.c): build it, run a program under it, read
its output — the executed translation blocks with their execution counts and bytes, and with
simulated caches their executions, memory accesses and cache misses per vCPU (guest thread)."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

PLUGIN_SOURCE = Path(__file__).resolve().parent / "plugin" / "tbcount.c"
HOST_CC = "gcc"
QEMU = "qemu-aarch64"
HEADERS = ("# tbcount 1", "# tbcount 2")


class ProfileError(RuntimeError):
    """A profiled run or its output went wrong; the message says which and why."""


@dataclass(frozen=True)
class Misses:
    """Cache events one block caused on one vCPU for one simulated core."""
    l1: int = 0               # L1D misses (line reads from L2)
    l2: int = 0               # L2 misses (line reads from memory)
    l1_writebacks: int = 0    # dirty L1D lines written into L2
    l2_writebacks: int = 0    # dirty L2 lines written to memory


@dataclass(frozen=True)
class Block:
    """One translation block as QEMU executed it."""
    vaddr: int
    n_insns: int
    count: int          # executions
    code: bytes         # the block's instruction bytes (little-endian A64 words)
    # with simulated caches: {vcpu: (executions, memory accesses)}, {(vcpu, core): Misses} and
    # {vcpu: DC ZVA executions} (block zeroing the plugin cannot simulate)
    vcpus: dict = field(default_factory=dict, compare=False)
    misses: dict = field(default_factory=dict, compare=False)
    dc_zva: dict = field(default_factory=dict, compare=False)

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


def _parse_block(fields) -> Block:
    vaddr, n_insns, count, code = (int(fields[0], 16), int(fields[1]), int(fields[2]),
                                   bytes.fromhex(fields[3]))
    if len(fields) != 4:
        raise ValueError(f"{len(fields)} fields, expected 4")
    if len(code) != 4 * n_insns:
        raise ValueError(f"{n_insns} instructions but {len(code)} bytes "
                         "(A64 instructions are 4 bytes)")
    return Block(vaddr, n_insns, count, code)


def _parse_line(fields, blocks: list[Block], caches: dict) -> None:
    """One output line after the header: a cache declaration, a block, or a v / m line of the
    block before it."""
    if fields[:2] == ["#", "cache"]:
        caches[int(fields[2])] = fields[3]
    elif fields[0] == "v":
        vcpu, executions, accesses = map(int, fields[1:])
        blocks[-1].vcpus[vcpu] = (executions, accesses)
    elif fields[0] == "m":
        vcpu, index, *counts = map(int, fields[1:])
        if len(counts) != 4:
            raise ValueError(f"{len(counts)} counts, expected 4")
        blocks[-1].misses[(vcpu, caches[index])] = Misses(*counts)
    elif fields[0] == "z":
        vcpu, executions = map(int, fields[1:])
        blocks[-1].dc_zva[vcpu] = executions
    else:
        blocks.append(_parse_block(fields))


def parse_profile(text: str, source: str = "plugin output") -> list[Block]:
    """Blocks from the plugin's output text; raises ProfileError on anything malformed."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith(HEADERS):
        raise ProfileError(f"{source}: not tbcount output (first line {lines[:1]!r})")
    blocks, caches = [], {}
    for number, line in enumerate(lines[1:], start=2):
        try:
            _parse_line(line.split(), blocks, caches)
        except (IndexError, ValueError, KeyError) as e:
            raise ProfileError(f"{source}:{number}: malformed line {line!r} ({e})") from None
    return blocks


def cache_argument(name: str, memory) -> str:
    """The plugin's cache= argument for one core (memory: a gen.cores.MemoryModel)."""
    if memory.l1d.line != memory.l2.line:
        raise ValueError(f"{name}: the plugin simulates one line size per core")
    return (f"cache={name}:{memory.l1d.size}:{memory.l1d.ways}:{memory.l2.size}:"
            f"{memory.l2.ways}:{memory.l1d.line}")


def _geometry(memory) -> tuple:
    return (memory.l1d, memory.l2)


def simulated_caches(caches: dict) -> tuple[dict, dict]:
    """Cores with the same L1D and L2 geometry are simulated once: ({core to simulate:
    MemoryModel}, {other core: the simulated core whose misses it shares})."""
    simulated, aliases = {}, {}
    for name, memory in caches.items():
        twin = next((n for n, m in simulated.items() if _geometry(m) == _geometry(memory)), None)
        if twin is None:
            simulated[name] = memory
        else:
            aliases[name] = twin
    return simulated, aliases


def _copy_aliases(blocks: list[Block], aliases: dict) -> None:
    for block in blocks:
        for (vcpu, name), misses in list(block.misses.items()):
            for alias, twin in aliases.items():
                if twin == name:
                    block.misses[(vcpu, alias)] = misses


def run_profiled(binary, args, plugin, out_file, *, cpu="max", mark=None, caches=None,
                 timeout=1800) -> tuple[list[Block], str]:
    """Run `binary args…` under qemu-aarch64 with the plugin; returns the executed blocks and
    the program's stdout. With `mark` (a guest code address), only what executes after the
    last execution of the block at that address is counted. `caches` ({core name:
    gen.cores.MemoryModel}) turns on the cache simulation of those cores."""
    out_file = Path(out_file)
    out_file.unlink(missing_ok=True)
    options = f"{plugin},out={out_file}" + (f",mark={mark:x}" if mark is not None else "")
    simulated, aliases = simulated_caches(caches or {})
    options += "".join("," + cache_argument(n, m) for n, m in simulated.items())
    cmd = [QEMU, "-cpu", cpu, "-plugin", options, str(binary), *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise ProfileError(f"{' '.join(cmd)} exited {proc.returncode}\n"
                           f"stdout:\n{proc.stdout[-2000:]}\nstderr:\n{proc.stderr[-2000:]}")
    if not out_file.exists():
        raise ProfileError(f"{' '.join(cmd)}: the plugin wrote no profile\n{proc.stderr[-2000:]}")
    blocks = parse_profile(out_file.read_text(), str(out_file))
    _copy_aliases(blocks, aliases)
    return blocks, proc.stdout
