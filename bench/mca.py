"""Modeled cycles of executed blocks: disassemble each block's bytes (llvm-mc-19) and let
llvm-mca-19 time it as a steady-state loop on one core's scheduling model.

Every block of one core goes into a single llvm-mca run as its own code region
(`# LLVM-MCA-BEGIN` / `# LLVM-MCA-END`, which llvm-mca simulates independently). A block
llvm-mca cannot handle (a parse failure, or an instruction the core's model lacks) is taken
out and reported as unmodeled; it is never given a made-up number. Results are cached per
(core, block bytes) in a JSON file, since most blocks recur across workloads.
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

LLVM_MC = "llvm-mc-19"
LLVM_MCA = "llvm-mca-19"
TRIPLE = "aarch64"
# Decode and parse everything `qemu-aarch64 -cpu max` can run (Armv9.2 with SVE2, i8mm, bf16, fp16, FHM).
MATTR = "+v9.2a,+sve2,+i8mm,+bf16,+dotprod,+fullfp16,+fp16fml"
ITERATIONS = 100
# llvm-mca gives calls a 100-cycle latency unless told (its warning: "call instructions are not
# correctly modeled"); the callee's own blocks are counted where they execute, so a call here is
# just a branch that writes the link register: 1 cycle.
CALL_LATENCY = 1
MODEL_SETTINGS = f"{MATTR} iterations={ITERATIONS} call-latency={CALL_LATENCY}"

_ENCODING = re.compile(r"^\s*(.*?)\s*// encoding: \[([0-9a-fx,]+)\]\s*$")
_INVALID = re.compile(r"<stdin>:(\d+):\d+: warning: invalid instruction encoding")
_LINE_ERROR = re.compile(r"<stdin>:(\d+):\d+: error: (.*)")
_UNSUPPORTED = re.compile(r"note: instruction:\s*(.*)")


class McaError(RuntimeError):
    pass


def _run(cmd, stdin_text):
    try:
        return subprocess.run(cmd, input=stdin_text, capture_output=True, text=True)
    except FileNotFoundError:
        raise McaError(f"{cmd[0]} not found: install llvm-19 (scripts/ensure-deps.sh bench)") from None


# ---- disassembly --------------------------------------------------------------------------
def disassemble_words(words) -> dict[int, str | None]:
    """Assembly text of each 32-bit instruction word (None: not a valid encoding)."""
    ordered = sorted(set(words))
    if not ordered:
        return {}
    text = "\n".join(" ".join(f"0x{b:02x}" for b in w.to_bytes(4, "little")) for w in ordered)
    proc = _run([LLVM_MC, "--disassemble", f"-triple={TRIPLE}", f"-mattr={MATTR}",
                 "--show-encoding"], text + "\n")
    invalid = {int(n) for n in _INVALID.findall(proc.stderr)}
    decoded = iter([(m.group(1), m.group(2)) for m in map(_ENCODING.match, proc.stdout.splitlines())
                    if m])
    result = {}
    for line, word in enumerate(ordered, start=1):
        if line in invalid:
            result[word] = None
            continue
        try:
            asm, encoding = next(decoded)
        except StopIteration:
            raise McaError(f"{LLVM_MC} stopped early at word {word:#010x}:\n{proc.stderr[-2000:]}") from None
        got = int.from_bytes(bytes(int(b, 16) for b in encoding.split(",")), "little")
        if got != word:
            raise McaError(f"{LLVM_MC} output out of step: expected {word:#010x}, got {got:#010x}")
        result[word] = asm.replace("\t", " ")
    return result


def block_words(code: bytes) -> list[int]:
    return [int.from_bytes(code[i:i + 4], "little") for i in range(0, len(code), 4)]


# ---- llvm-mca -----------------------------------------------------------------------------
def _regions_source(blocks: list[list[str]]) -> tuple[str, list[int]]:
    """The llvm-mca input for `blocks` and, per source line (1-based), its block index or -1."""
    lines, owner = [], []
    for i, asm in enumerate(blocks):
        lines.append(f"# LLVM-MCA-BEGIN b{i}")
        owner.append(i)
        lines.extend(asm)
        owner.extend([i] * len(asm))
        lines.append(f"# LLVM-MCA-END b{i}")
        owner.append(i)
    return "\n".join(lines) + "\n", owner


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _failing_blocks(stderr: str, blocks: list[list[str]], owner: list[int]) -> dict[int, str]:
    """Blocks named by llvm-mca's error messages: by source line, or by the text of an
    unsupported instruction. {block index: reason}."""
    failing = {}
    for line, message in _LINE_ERROR.findall(stderr):
        if 1 <= int(line) <= len(owner):
            failing[owner[int(line) - 1]] = message.strip()
    for text in _UNSUPPORTED.findall(stderr):
        wanted = _squash(text)
        for i, asm in enumerate(blocks):
            if any(_squash(a) == wanted for a in asm):
                failing[i] = f"no scheduling information for `{text.strip()}`"
    return failing


def _mca(cpu: str, blocks: list[list[str]]):
    source, owner = _regions_source(blocks)
    proc = _run([LLVM_MCA, f"-mtriple={TRIPLE}", f"-mcpu={cpu}", f"-mattr={MATTR}",
                 f"-iterations={ITERATIONS}", f"--call-latency={CALL_LATENCY}", "--json",
                 "-instruction-info=false", "-resource-pressure=false"], source)
    return proc, owner


def model_blocks(cpu: str, blocks: list[list[str]]) -> list[tuple[float | None, str]]:
    """Steady-state cycles per execution of each block on `cpu`, or (None, reason)."""
    results: list[tuple[float | None, str]] = [(None, "")] * len(blocks)
    pending = list(range(len(blocks)))
    while pending:
        proc, owner = _mca(cpu, [blocks[i] for i in pending])
        if proc.returncode == 0:
            regions = json.loads(proc.stdout)["CodeRegions"]
            if len(regions) != len(pending):
                raise McaError(f"{LLVM_MCA} -mcpu={cpu}: {len(regions)} regions for {len(pending)} blocks")
            for i, region in zip(pending, regions):
                summary = region["SummaryView"]
                results[i] = (summary["TotalCycles"] / summary["Iterations"], "")
            return results
        failing = _failing_blocks(proc.stderr, [blocks[i] for i in pending], owner)
        if failing:
            for local, reason in failing.items():
                results[pending[local]] = (None, reason)
            pending = [b for j, b in enumerate(pending) if j not in failing]
        elif len(pending) == 1:
            results[pending[0]] = (None, proc.stderr.strip().splitlines()[0] if proc.stderr.strip()
                                   else f"{LLVM_MCA} exited {proc.returncode}")
            return results
        else:   # the message names no block: split and try the halves on their own
            half = len(pending) // 2
            for part in (pending[:half], pending[half:]):
                for i, r in zip(part, model_blocks(cpu, [blocks[i] for i in part])):
                    results[i] = r
            return results
    return results


# ---- cache ---------------------------------------------------------------------------------
class CycleModel:
    """Cycles per execution of blocks on each core, cached on disk.

    `cycles(cpu, code)` after `prepare(cpus, codes)`: float, or None when unmodeled
    (`reason(cpu, code)` says why)."""

    def __init__(self, cache_file=None):
        self.cache_file = Path(cache_file) if cache_file else None
        self.entries: dict[str, list] = {}
        if self.cache_file and self.cache_file.exists():
            data = json.loads(self.cache_file.read_text())
            if data.get("settings") == MODEL_SETTINGS and data.get("version") == llvm_mca_version():
                self.entries = data["entries"]

    @staticmethod
    def check_cpus(cpus) -> None:
        """Raise McaError naming any CPU llvm-mca has no scheduling model for."""
        for cpu in cpus:
            proc = _run([LLVM_MCA, f"-mtriple={TRIPLE}", f"-mcpu={cpu}", "-iterations=1"], "nop\n")
            if proc.returncode != 0 or "not a recognized processor" in proc.stderr:
                raise McaError(f"{LLVM_MCA} does not know CPU {cpu!r}: "
                               f"{proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else ''}")

    @staticmethod
    def _key(cpu: str, code: bytes) -> str:
        return f"{cpu}:{code.hex()}"

    def prepare(self, cpus, codes) -> None:
        codes = sorted(set(codes))
        missing = {cpu: [c for c in codes if self._key(cpu, c) not in self.entries] for cpu in cpus}
        words = disassemble_words(w for cs in missing.values() for c in cs for w in block_words(c))
        for cpu in cpus:
            asm_blocks, modelable = [], []
            for code in missing[cpu]:
                asm = [words[w] for w in block_words(code)]
                if None in asm:
                    bad = block_words(code)[asm.index(None)]
                    self.entries[self._key(cpu, code)] = [None, f"undecodable word {bad:#010x}"]
                else:
                    asm_blocks.append(asm)
                    modelable.append(code)
            for code, (cycles, reason) in zip(modelable, model_blocks(cpu, asm_blocks)):
                self.entries[self._key(cpu, code)] = [cycles, reason]
        self.save()

    def cycles(self, cpu: str, code: bytes) -> float | None:
        return self.entries[self._key(cpu, code)][0]

    def reason(self, cpu: str, code: bytes) -> str:
        return self.entries[self._key(cpu, code)][1]

    def save(self) -> None:
        if self.cache_file:
            self.cache_file.parent.mkdir(parents=True, exist_ok=True)
            self.cache_file.write_text(json.dumps({"settings": MODEL_SETTINGS,
                                                   "version": llvm_mca_version(),
                                                   "entries": self.entries}))


_version = None


def llvm_mca_version() -> str:
    global _version
    if _version is None:
        proc = _run([LLVM_MCA, "--version"], "")
        m = re.search(r"LLVM version (\S+)", proc.stdout)
        _version = m.group(1) if m else proc.stdout.strip()
    return _version
