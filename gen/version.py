"""The generator's version, recorded in every build's manifest.json.

One source of truth: the public header's `TS_VERSION` (drivers/include/tilesmith.h), which C
code can test too. Bump it when the C API, the kernel contract or a packed layout changes.
Beside it the manifest records a digest of the sources a build is made from (the generator,
its templates, the encoder and the C tree), so two folders made by different checkouts of the
same version still tell apart; it depends only on file contents, so generation stays
deterministic.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEADER = ROOT / "drivers" / "include" / "tilesmith.h"
SOURCE_TREES = ("gen", "templates", "encoder", "drivers")
SOURCE_SUFFIXES = (".py", ".j2", ".c", ".h")
_DEFINE = re.compile(r'^#define TS_VERSION "([0-9]+\.[0-9]+\.[0-9]+)"', re.M)


def version() -> str:
    """TS_VERSION of the public header, e.g. "0.14.0"."""
    found = _DEFINE.search(HEADER.read_text())
    if not found:
        raise RuntimeError(f'{HEADER}: no #define TS_VERSION "x.y.z"')
    return found.group(1)


def source_digest() -> str:
    """SHA-256 (first 16 hex digits) over the path and bytes of every source file the build
    is made from, in sorted path order."""
    digest = hashlib.sha256()
    for tree in SOURCE_TREES:
        for path in sorted((ROOT / tree).rglob("*")):
            if path.is_file() and path.suffix in SOURCE_SUFFIXES and "__pycache__" not in path.parts:
                digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0")
                digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def manifest_entry() -> dict:
    """The manifest's "generator" object."""
    return {"name": "tilesmith", "version": version(), "sources": source_digest()}
