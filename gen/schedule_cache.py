"""On-disk cache of searched schedules, so an unchanged `make gen` skips the schedule search.

Where: `$TILESMITH_CACHE_DIR`, else `$XDG_CACHE_HOME/tilesmith`, else `~/.cache/tilesmith`
(never inside the output folder). `TILESMITH_CACHE_DIR=off` disables it.

What: one JSON file per scheduler version, `schedules-<version>.json`, mapping a hash of the
scheduler's input (gen.schedule._shape of the loop body, the CPU, search on/off and the search
budget) to the chosen order and its score. The version is a hash of the source of every
module the result depends on (VERSION_SOURCES), so editing the scheduler, the issue model, the
core tables or the instruction descriptions starts a new file; stale files are not read.

Safety: entries are checked on load (the order must be a permutation of the body's
instructions; a wrong or unreadable file counts as empty, and is rewritten). Writers take an
exclusive lock on a side file, merge their new entries with what is on disk and replace the
file atomically, so concurrent generations (pytest runs many) lose nothing and readers never
see half a file. Only the KEEP_VERSIONS most recently written version files are kept
(several checkouts of different versions may share the folder); older ones are deleted
after each write. Any I/O error leaves the cache out of the way: generation output never
depends on it (a cached entry is exactly what the search returned).
"""
from __future__ import annotations

import atexit
import fcntl
import hashlib
import json
import os
import tempfile
from pathlib import Path

GEN = Path(__file__).resolve().parent
VERSION_SOURCES = ("schedule.py", "issue_model.py", "cores.py", "isa.py", "schedule_cache.py")


_VERSION = []
KEEP_VERSIONS = 16   # version files kept in the folder (newest by modification time)


def version() -> str:
    """Hash of VERSION_SOURCES (computed once per process)."""
    if _VERSION:
        return _VERSION[0]
    digest = hashlib.sha256()
    for name in VERSION_SOURCES:
        digest.update(name.encode() + b"\0" + (GEN / name).read_bytes())
    _VERSION.append(digest.hexdigest()[:16])
    return _VERSION[0]


def cache_dir():
    """The cache folder, or None when disabled."""
    explicit = os.environ.get("TILESMITH_CACHE_DIR")
    if explicit == "off":
        return None
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tilesmith"


def entry_key(key) -> str:
    """Stable text key of a scheduler input (its repr is deterministic: tuples, str, numbers)."""
    return hashlib.sha256(repr(key).encode()).hexdigest()


def _valid(entry, length: int) -> bool:
    if not (isinstance(entry, list) and len(entry) == 2):
        return False
    order, score = entry
    return (isinstance(order, list) and all(type(i) is int for i in order)
            and sorted(order) == list(range(length))
            and isinstance(score, (int, float)) and not isinstance(score, bool))


class ScheduleCache:
    """Load once per folder/version, look up, remember new entries, flush them with a merge."""

    def __init__(self):
        self._loaded_from = None
        self._entries: dict = {}
        self._pending: dict = {}
        self.hits = 0
        atexit.register(self.flush)

    def _path(self):
        folder = cache_dir()
        return None if folder is None else folder / f"schedules-{version()}.json"

    def _ensure_loaded(self, path) -> None:
        if self._loaded_from != path:
            self._loaded_from, self._entries = path, _read(path) if path else {}

    def get(self, key, length: int):
        """(order, score) cached for `key` (a body of `length` instructions), else None."""
        path = self._path()
        self._ensure_loaded(path)
        text_key = entry_key(key)
        entry = self._pending.get(text_key) or self._entries.get(text_key)
        if entry is None or not _valid(entry, length):
            return None
        self.hits += 1
        return tuple(entry[0]), float(entry[1])

    def put(self, key, order, score: float) -> None:
        if self._path() is not None:
            self._pending[entry_key(key)] = [list(order), score]

    def flush(self) -> None:
        """Merge the new entries into the file (locked, atomic replace); errors are ignored."""
        path = self._path()
        if path is None or not self._pending:
            return
        try:
            _merge_into(path, self._pending)
        except OSError:
            return
        self._entries.update(self._pending)
        self._pending = {}


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _merge_into(path: Path, new: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        merged = _read(path)
        merged.update(new)
        handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(handle, "w") as out:
                json.dump(merged, out, sort_keys=True)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        _prune(path.parent, keep=path)


def _prune(folder: Path, keep: Path) -> None:
    """Delete all but the KEEP_VERSIONS newest schedules-*.json (never `keep`) with their locks."""
    files = sorted(folder.glob("schedules-*.json"), key=lambda f: f.stat().st_mtime,
                   reverse=True)
    for old in [f for f in files if f != keep][KEEP_VERSIONS - 1:]:
        for stale in (old, old.with_name(old.name + ".lock")):
            try:
                stale.unlink()
            except FileNotFoundError:
                pass


CACHE = ScheduleCache()
