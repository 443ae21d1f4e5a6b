"""Check `.inst` words against GNU objdump.

A `.S`/`.s` file is assembled with all features enabled and DWARF line info (`-g`), then
disassembled with `objdump -d -l`, which names the source line of every word.  Each word that
comes from a `.inst 0xXXXXXXXX // <instruction>` line (in the file or anything it includes)
must disassemble to the instruction of the comment; lines removed by `#if` are not assembled
and so not checked.

A `.o` file: words whose line info leads to readable `.inst` source lines are checked the same
way; every other word that disassembles to an instruction form the encoder has is re-encoded
(other forms of its mnemonics, e.g. SVE gather loads, are skipped), and the encoder's word must
equal the object's word (the object file is the only ground truth there).
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache

from .encoding import encode, has_form, semantic_key
from .errors import EncodeError
from .rewrite import SourceLine
from .toolchain import CC, OBJDUMP, cc_march_args


_LINE_INFO_RE = re.compile(r"^(\S.*):(\d+)(?:\s+\(discriminator \d+\))?$")
_WORD_RE = re.compile(r"^\s*[0-9a-f]+:\s+([0-9a-f]{8})\s+(.*)$")


@dataclass(frozen=True)
class DisassembledWord:
    path: str | None
    line: int | None
    word: int
    text: str


def assemble(source: str, output: str) -> None:
    """Assemble source (through cpp for .S) with every feature on and line info."""
    language = "assembler-with-cpp" if source.endswith((".S", ".sx")) else "assembler"
    command = [CC, "-c", "-g", "-x", language, *cc_march_args(), source, "-o", output]
    # errors="replace": the assembler's messages quote source lines, which may hold any bytes
    result = subprocess.run(command, capture_output=True, text=True, errors="replace")
    if result.returncode != 0:
        raise EncodeError(f"{source}: assembling failed:\n{result.stderr.strip()}")


def disassemble(obj: str) -> list[DisassembledWord]:
    """Every instruction word of obj with the source line objdump attributes it to."""
    result = subprocess.run([OBJDUMP, "-d", "-l", obj], capture_output=True, text=True,
                            errors="replace")
    if result.returncode != 0:
        raise EncodeError(f"{obj}: objdump failed:\n{result.stderr.strip()}")
    words, path, line = [], None, None
    for row in result.stdout.splitlines():
        if row.startswith("Disassembly of section"):
            path, line = None, None
        elif match := _LINE_INFO_RE.match(row):
            path, line = match.group(1), int(match.group(2))
        elif match := _WORD_RE.match(row):
            text = re.sub(r"\s+", " ", match.group(2).split("//")[0].split(";")[0].strip())
            words.append(DisassembledWord(path, line, int(match.group(1), 16), text))
    return words


def canonical(text: str):
    """Comparable form of instruction text: what it means if the encoder can parse it (aliases
    such as mova/mov, ZERO tile lists as their mask, omitted default operands filled in), else
    normalised text."""
    try:
        return semantic_key(text)
    except EncodeError:
        flat = re.sub(r"\s+", " ", text.strip().lower())
        return re.sub(r"\s*([,\[\]])\s*", r"\1", flat)


@lru_cache(maxsize=None)
def _source_lines(path: str) -> tuple[str, ...] | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return tuple(handle.read().split("\n"))
    except OSError:
        return None


def inst_comment(path: str | None, line: int | None) -> str | None:
    """The instruction quoted by a `.inst` line ('' if it has no comment), None if not such a line."""
    lines = _source_lines(path) if path else None
    if lines is None or not line or line > len(lines):
        return None
    source = SourceLine.parse(lines[line - 1])
    if not re.match(r"\.inst\b", source.statement, re.I):
        return None
    if not source.comment.startswith("//"):
        return ""
    return source.comment[2:].split("//")[0].strip()


def check_inst_word(word: DisassembledWord, quoted: str) -> str | None:
    """Mismatch message for a `.inst` word, or None if objdump agrees with its comment."""
    where = f"{word.path}:{word.line}"
    if not quoted:
        return f"{where}: .inst 0x{word.word:08x} has no '// instruction' comment to verify"
    if canonical(word.text) != canonical(quoted):
        return (f"{where}: .inst 0x{word.word:08x} disassembles to '{word.text}'"
                f" but the comment says '{quoted}'")
    return None


def check_reencoded(word: DisassembledWord, obj: str) -> str | None:
    """Mismatch message if the encoder's word for objdump's text differs from the object's word."""
    where = f"{word.path}:{word.line}" if word.path else obj
    try:
        encoded = encode(word.text)
    except EncodeError as error:
        return f"{where}: encoder rejects objdump's '{word.text}': {error}"
    if encoded != word.word:
        return f"{where}: '{word.text}' is 0x{word.word:08x} but the encoder gives 0x{encoded:08x}"
    return None


def verify_object(obj: str, reencode_known: bool) -> tuple[int, list[str]]:
    verified, mismatches = 0, []
    _source_lines.cache_clear()
    for word in disassemble(obj):
        quoted = inst_comment(word.path, word.line)
        if quoted is not None:
            problem = check_inst_word(word, quoted)
        elif reencode_known and has_form(word.text):
            problem = check_reencoded(word, obj)
        else:
            continue
        verified += problem is None
        mismatches += [problem] if problem else []
    return verified, mismatches


def count_inst_lines(path: str) -> int:
    lines = _source_lines(path) or ()
    return sum(1 for number in range(1, len(lines) + 1) if inst_comment(path, number) is not None)


def verify_source(path: str) -> tuple[int, list[str]]:
    with tempfile.TemporaryDirectory(prefix="tilesmith-verify-") as tmp:
        obj = os.path.join(tmp, os.path.basename(path) + ".o")
        assemble(path, obj)
        verified, mismatches = verify_object(obj, reencode_known=False)
    if verified == 0 and not mismatches and count_inst_lines(path):
        mismatches.append(f"{path}: has .inst lines but no disassembled word maps to them "
                          "(missing line info?)")
    return verified, mismatches


def verify_files(paths) -> tuple[int, list[str]]:
    """(number of words verified, ['file:line: problem', ...]) over .S/.s/.o files."""
    total, mismatches = 0, []
    for path in paths:
        if path.endswith(".o"):
            verified, problems = verify_object(path, reencode_known=True)
        else:
            verified, problems = verify_source(path)
        total += verified
        mismatches += problems
    return total, mismatches
