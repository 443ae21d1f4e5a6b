"""Block address → function symbol (ELF symbol table via `aarch64-linux-gnu-nm`) → function
group (packing, im2col, kernel, requant, other; the benchmark harness is `setup`)."""
from __future__ import annotations

import bisect
import re
import subprocess
from dataclasses import dataclass

NM = "aarch64-linux-gnu-nm"
TEXT_TYPES = set("TtWwi")      # nm symbol types of code: global/local/weak functions, ifuncs

GROUPS = ("packing", "im2col", "kernel", "requant", "other")   # the operation's groups
SETUP = "setup"                # the workload program's own data preparation; not the operation
HARNESS_PREFIX = "bench_"      # bench/workloads.c names every harness function bench_* …
HARNESS_SYMBOLS = {"main"}     # … except its main
MARK = "bench_mark"            # called right before the measured operation (tbcount mark=)
# Driver functions (static helpers too, so no prefix required) by a word in their name.
GROUP_WORDS = (("requant", "requant"), ("im2col", "im2col"), ("packing", "pack"))


@dataclass(frozen=True)
class Symbol:
    address: int
    size: int                  # 0 when the symbol table gives none
    name: str


class SymbolTable:
    """Code symbols of one static executable, sorted by address."""

    def __init__(self, symbols):
        self.symbols = sorted(symbols, key=lambda s: (s.address, s.name))
        self._starts = [s.address for s in self.symbols]

    @classmethod
    def from_nm(cls, nm_text: str) -> "SymbolTable":
        """Parse `nm -n -S --defined-only` output (lines `addr [size] type name`)."""
        symbols = []
        for line in nm_text.splitlines():
            fields = line.split()
            if len(fields) == 4:
                address, size, kind, name = fields
            elif len(fields) == 3:
                (address, kind, name), size = fields, "0"
            else:
                continue
            if kind in TEXT_TYPES:
                symbols.append(Symbol(int(address, 16), int(size, 16), name))
        return cls(symbols)

    @classmethod
    def from_elf(cls, path) -> "SymbolTable":
        proc = subprocess.run([NM, "-n", "-S", "--defined-only", str(path)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{NM} {path} failed: {proc.stderr.strip()}")
        table = cls.from_nm(proc.stdout)
        if not table.symbols:
            raise RuntimeError(f"{path}: no code symbols (stripped?): the profile needs them")
        return table

    def address_of(self, name: str) -> int:
        for s in self.symbols:
            if s.name == name:
                return s.address
        raise KeyError(f"no symbol {name!r} in the executable")

    def lookup(self, address: int) -> str | None:
        """Name of the function containing `address`: the nearest symbol at or below it, unless
        its size is known and the address lies past its end. Of several symbols at one address
        (aliases) the most specific name is kept: the shortest without leading underscores."""
        i = bisect.bisect_right(self._starts, address) - 1
        if i < 0:
            return None
        start = self.symbols[i].address
        candidates = [s for s in self.symbols[bisect.bisect_left(self._starts, start):i + 1]]
        if all(s.size and address >= s.address + s.size for s in candidates):
            return None
        return min(candidates, key=lambda s: (s.name.startswith("_"), len(s.name), s.name)).name


def kernel_pattern(prefix: str) -> re.Pattern:
    """Micro-kernel symbols: <prefix>gemm_<types>_<instruction>_<ep>x<hp>x<lp>[_<cpu>]
    (README, micro-kernel ABI; DESIGN.md, names)."""
    return re.compile(rf"^{re.escape(prefix)}gemm_([a-z0-9]+)_([a-z0-9]+)_(\d+)x(\d+)x(\d+)(?:_\w+)?$")


def group_of(symbol: str | None, prefix: str = "ts_") -> str:
    """Function group of a symbol, by name. Code without a symbol counts as `other`."""
    if symbol is None:
        return "other"
    if symbol.startswith(HARNESS_PREFIX) or symbol in HARNESS_SYMBOLS:
        return SETUP
    if kernel_pattern(prefix).match(symbol):
        return "kernel"
    for group, word in GROUP_WORDS:
        if word in symbol:
            return group
    return "other"


def kernel_instruction(symbol: str, prefix: str = "ts_") -> tuple[str, str] | None:
    """(type signature, mnemonic) named by a micro-kernel symbol, e.g. ("s8s32", "smmla")."""
    m = kernel_pattern(prefix).match(symbol)
    return (m.group(1), m.group(2)) if m else None
