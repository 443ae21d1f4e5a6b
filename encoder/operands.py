"""Parsing of GNU-syntax AArch64 Advanced SIMD instruction text into a mnemonic and operands.

Only the operand shapes the encoder needs are understood:
  vector register   v3.4s / V3.16B
  vector element    v3.s[3] / v3.h[7] / v3.d[1] / v3.4b[1] / v3.2h[1]
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .errors import EncodeError

NUM_VECTOR_REGISTERS = 32

# Arrangement specifiers of whole vector registers (Arm ARM DDI0487, C1.2.5 "Vector registers").
VECTOR_ARRANGEMENTS = frozenset({"8b", "16b", "4h", "8h", "2s", "4s", "1d", "2d", "2h"})
# Element specifiers usable with an index: single elements and the 4b / 2h groups of the
# dot-product instructions (Arm ARM C7.2 SDOT (by element), BFDOT (by element)).
ELEMENT_SPECIFIERS = frozenset({"b", "h", "s", "d", "4b", "2h"})

_MNEMONIC_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9]*)(?:\s+(.*?))?\s*$", re.S)
_OPERAND_RE = re.compile(
    r"^[vV](?P<reg>\d+)\s*\.\s*(?P<spec>\d*[A-Za-z])\s*(?:\[\s*(?P<index>\d+)\s*\])?$"
)


@dataclass(frozen=True)
class Operand:
    """A SIMD&FP register operand: register number, arrangement/element specifier, optional index."""

    reg: int
    spec: str
    index: int | None = None

    @property
    def signature(self) -> str:
        """Shape used to match encoding forms: '4s' for a vector, 's[]' for an indexed element."""
        return self.spec if self.index is None else f"{self.spec}[]"

    def __str__(self) -> str:
        suffix = "" if self.index is None else f"[{self.index}]"
        return f"v{self.reg}.{self.spec}{suffix}"


@dataclass(frozen=True)
class Instruction:
    mnemonic: str
    operands: tuple[Operand, ...]

    def __str__(self) -> str:
        return f"{self.mnemonic} " + ", ".join(str(op) for op in self.operands)


def strip_comment(text: str) -> str:
    """Instruction text without a trailing '//' comment."""
    return text.split("//", 1)[0]


def split_mnemonic(text: str) -> tuple[str, str]:
    """('mnemonic' lower-cased, operand text) of one instruction; raises on empty/odd text."""
    match = _MNEMONIC_RE.match(strip_comment(text))
    if not match:
        raise EncodeError(f"malformed instruction {text.strip()!r}: expected 'mnemonic operands'")
    return match.group(1).lower(), match.group(2) or ""


@lru_cache(maxsize=8192)  # kernels and tests repeat the same few hundred operand texts
def parse_operand(text: str) -> Operand:
    """One register operand; raises EncodeError naming a malformed operand or a bad register."""
    cleaned = text.strip()
    match = _OPERAND_RE.match(cleaned)
    if not match:
        raise EncodeError(f"malformed operand {cleaned!r}: expected vN.<T> or vN.<T>[index]")
    reg = int(match.group("reg"))
    if reg >= NUM_VECTOR_REGISTERS:
        raise EncodeError(f"register v{reg} out of range (v0-v31) in operand {cleaned!r}")
    spec = match.group("spec").lower()
    index = None if match.group("index") is None else int(match.group("index"))
    if index is None and spec in ELEMENT_SPECIFIERS - VECTOR_ARRANGEMENTS:
        raise EncodeError(f"malformed operand {cleaned!r}: element .{spec} needs an index [n]")
    if index is not None and spec not in ELEMENT_SPECIFIERS and spec in VECTOR_ARRANGEMENTS:
        spec = spec[-1]  # GNU as also accepts v2.4s[1] for v2.s[1]: an element of that size
    known = VECTOR_ARRANGEMENTS if index is None else ELEMENT_SPECIFIERS
    if spec not in known:
        kind = "arrangement" if index is None else "element specifier"
        raise EncodeError(f"malformed operand {cleaned!r}: unknown {kind} '.{spec}'")
    return Operand(reg, spec, index)


def split_operands(text: str) -> list[str]:
    """Comma-separated operand texts; an empty operand (',,' or trailing ',') is malformed."""
    if not text.strip():
        return []
    parts = text.split(",")
    for part in parts:
        if not part.strip():
            raise EncodeError(f"malformed operand list {text.strip()!r}: empty operand")
    return parts


def parse_instruction(text: str) -> Instruction:
    """Parse 'smmla v16.4s, v2.16b, v0.16b' (case-insensitive, free spacing, '//' comment allowed)."""
    mnemonic, operand_text = split_mnemonic(text)
    operands = tuple(parse_operand(part) for part in split_operands(operand_text))
    return Instruction(mnemonic, operands)
