"""Rewrite assembly text so instructions needing selected features become `.inst` words.

    smmla v16.4s, v2.16b, v0.16b   ->   .inst 0x4e80a450 // smmla v16.4s, v2.16b, v0.16b

Untouched, byte for byte: blank lines, comment lines, preprocessor lines (#...), directives (.xxx),
labels on their own, and instructions the encoder does not know or whose feature is not selected.
A label before an instruction (`loop: sdot ...`) and a trailing comment are kept.
Lines whose operands contain a backslash are macro bodies (`\\arg` substitution or a `#define`
continuation); they cannot be encoded statically and are left as they are, with a warning.
A known mnemonic that cannot be encoded raises EncodeError with 'file:line: problem'.
"""
from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

from .encoding import encode_instruction, is_known_instruction, parse_known
from .errors import EncodeError
from .forms import FEATURES

DEFAULT_FEATURES = ("dotprod", "i8mm", "bf16", "fp16fml", "sve", "sve2", "sme")
ALL = "all"

_LABELS_RE = re.compile(r"(?:(?:[A-Za-z_.$][\w.$]*|\d+)\s*:(?!:)\s*)*")
_MNEMONIC_RE = re.compile(r"([A-Za-z][A-Za-z0-9]*)(?:\s|$)")
_COMMENT_RE = re.compile(r"//|/\*")


@dataclass(frozen=True)
class SourceLine:
    """One line split into indent, labels, statement, trailing comment and line ending."""

    indent: str
    labels: str
    statement: str
    comment: str
    ending: str

    @classmethod
    def parse(cls, line: str) -> "SourceLine":
        ending = "\r" if line.endswith("\r") else ""
        body = line[: len(line) - len(ending)]
        stripped = body.lstrip()
        indent = body[: len(body) - len(stripped)]
        comment_at = _COMMENT_RE.search(stripped)
        code = stripped[: comment_at.start()] if comment_at else stripped
        comment = stripped[comment_at.start():] if comment_at else ""
        labels = _LABELS_RE.match(code).group(0)
        return cls(indent, labels, code[len(labels):], comment, ending)

    @property
    def mnemonic(self) -> str | None:
        """Lower-case first word of an instruction statement (None for directives etc.)."""
        match = _MNEMONIC_RE.match(self.statement)
        return match.group(1).lower() if match else None


def selected_features(features: str | Iterable[str]) -> frozenset[str | None]:
    """Normalise 'all' / 'dotprod,i8mm' / ['i8mm', ...]; 'all' also selects base (None) forms."""
    if isinstance(features, str):
        if features.strip().lower() == ALL:
            return frozenset(FEATURES) | {None}
        features = [name for name in features.split(",") if name.strip()]
    names = {name.strip().lower() for name in features}
    if ALL in names:
        return frozenset(FEATURES) | {None}
    unknown = sorted(names - set(FEATURES))
    if unknown:
        raise EncodeError(f"unknown feature(s) {', '.join(unknown)} (known: {', '.join(FEATURES)}, all)")
    return frozenset(names)


def rewrite_line(line: str, features: frozenset, where: str) -> str:
    """The line itself, or its `.inst` replacement when its instruction needs a selected feature."""
    source = SourceLine.parse(line)
    mnemonic = source.mnemonic
    statement = source.statement.rstrip()
    if mnemonic is None or not is_known_instruction(statement):
        return line
    if "\\" in statement:
        warnings.warn(f"{where}: macro-argument line left as is: {statement}", stacklevel=3)
        return line
    if ";" in statement:
        raise EncodeError(f"{where}: several statements on one line; put {mnemonic} on its own line")
    try:
        word, form = encode_instruction(parse_known(statement))
    except EncodeError as error:
        raise EncodeError(f"{where}: {error}") from None
    if form.feature not in features:
        return line
    comment = f" {source.comment.rstrip()}" if source.comment.strip() else ""
    return (f"{source.indent}{source.labels}.inst 0x{word:08x} // {statement}{comment}"
            f"{source.ending}")


def rewrite_text(text: str, features: str | Iterable[str] = DEFAULT_FEATURES,
                 filename: str = "<text>") -> str:
    """Rewrite every line of text (see module docstring); features: names or 'all'."""
    selected = selected_features(features)
    lines = text.split("\n")
    return "\n".join(rewrite_line(line, selected, f"{filename}:{number}")
                     for number, line in enumerate(lines, start=1))
