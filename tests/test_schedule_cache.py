"""The on-disk schedule cache (gen/schedule_cache.py): a warm generation is byte-identical to a
cold one and really comes from the cache; bad files and concurrent writers are harmless."""
from __future__ import annotations

import json
import multiprocessing
import os

import pytest

from gen import generate_cli, schedule, schedule_cache

from gen.isa import INSTRUCTIONS

ARCH = "v8"
ONE_KERNEL = [INSTRUCTIONS["fmla_f32"]]     # one kernel keeps the cold runs short


def start_cold(monkeypatch, folder):
    """An empty cache folder and no per-process schedules: the next generation is cold."""
    monkeypatch.setenv("TILESMITH_CACHE_DIR", str(folder))
    monkeypatch.setattr(generate_cli, "generated_for", lambda arch: ONE_KERNEL)
    new_process_state(monkeypatch)


@pytest.fixture(scope="module")
def cold_run(tmp_path_factory):
    """(files, cache file text) of one cold generation, shared by the tests below."""
    folder = tmp_path_factory.mktemp("cold-cache")
    with pytest.MonkeyPatch.context() as monkeypatch:
        start_cold(monkeypatch, folder)
        files = generate_files()
        assert schedule_cache.CACHE.hits == 0
    return files, cache_file(folder).read_text()


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch, cold_run):
    """A cache folder holding what the cold run stored; a new process state."""
    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / f"schedules-{schedule_cache.version()}.json").write_text(cold_run[1])
    start_cold(monkeypatch, folder)
    return folder


def new_process_state(monkeypatch) -> schedule_cache.ScheduleCache:
    """What a new `python3 -m gen` process starts with (the disk cache left as it is)."""
    monkeypatch.setattr(schedule, "_SCHEDULES", {})
    cache = schedule_cache.ScheduleCache()
    monkeypatch.setattr(schedule_cache, "CACHE", cache)
    return cache


def generate_files() -> dict:
    files = generate_cli.generate(ARCH)
    schedule_cache.CACHE.flush()
    return files


def cache_file(folder):
    files = sorted(folder.glob("schedules-*.json"))
    assert len(files) == 1, f"expected one cache file in {folder}, found {files}"
    return files[0]


def no_search(*args, **kwargs):
    raise AssertionError("the scheduler searched although every schedule should be cached")


def test_warm_generation_is_byte_identical_and_never_searches(fresh_cache, monkeypatch, cold_run):
    cold = cold_run[0]
    entries = json.loads(cache_file(fresh_cache).read_text())
    assert entries, "the cold run stored no schedule"
    cache = schedule_cache.CACHE
    monkeypatch.setattr(schedule, "_schedule", no_search)
    warm = generate_files()
    assert cache.hits == len(entries)
    assert warm.keys() == cold.keys()
    for name in cold:
        assert warm[name] == cold[name], f"{name} differs between the cold and the warm run"


def test_disabled_cache_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("TILESMITH_CACHE_DIR", "off")
    assert schedule_cache.cache_dir() is None
    cache = schedule_cache.ScheduleCache()
    cache.put(("key",), [1, 0], 1.5)
    cache.flush()
    assert cache.get(("key",), 2) is None


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"k": 3}', "[" * 100000,
                                     b"\xff\xfe not UTF-8"])
def test_a_corrupt_cache_file_is_ignored_and_rewritten(fresh_cache, cold_run, content):
    path = cache_file(fresh_cache)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    assert generate_files() == cold_run[0]
    assert isinstance(json.loads(path.read_text()), dict) and len(json.loads(path.read_text())) > 1


@pytest.mark.parametrize("bad_order", [lambda order: [0] * len(order),
                                       lambda order: [str(i) for i in order],
                                       lambda order: order[:-1]])
def test_an_entry_that_is_no_permutation_is_ignored(fresh_cache, cold_run, bad_order):
    path = cache_file(fresh_cache)
    entries = json.loads(path.read_text())
    path.write_text(json.dumps({k: [bad_order(order), score] for k, (order, score) in entries.items()}))
    assert generate_files() == cold_run[0]
    assert schedule_cache.CACHE.hits == 0


def test_the_version_changes_with_the_scheduler_source(monkeypatch, tmp_path):
    for name in schedule_cache.VERSION_SOURCES:
        (tmp_path / name).write_bytes((schedule_cache.GEN / name).read_bytes())
    monkeypatch.setattr(schedule_cache, "GEN", tmp_path)
    monkeypatch.setattr(schedule_cache, "_VERSION", [])
    before = schedule_cache.version()
    (tmp_path / "issue_model.py").write_text("# changed\n")
    monkeypatch.setattr(schedule_cache, "_VERSION", [])
    assert schedule_cache.version() != before


def _writer(args):
    folder, worker = args
    path = folder / "schedules-test.json"
    for n in range(10):
        schedule_cache._merge_into(path, {f"{worker}-{n}": [[0], float(n)]})


def test_concurrent_writers_lose_no_entry(tmp_path):
    with multiprocessing.get_context("fork").Pool(4) as pool:
        pool.map(_writer, [(tmp_path, w) for w in range(4)])
    entries = json.loads((tmp_path / "schedules-test.json").read_text())
    assert sorted(entries) == sorted(f"{w}-{n}" for w in range(4) for n in range(10))


def test_the_command_line_writes_and_reuses_the_cache(tmp_path):
    """`python3 -m gen generate` twice: the first run stores the schedules, the second finds
    every one (it has nothing new to store: the file is not rewritten) and writes the same bytes."""
    import subprocess
    import sys
    from cross import ROOT
    env = {**os.environ, "TILESMITH_CACHE_DIR": str(tmp_path / "cache")}

    def generate(out):
        proc = subprocess.run([sys.executable, "-m", "gen", "generate", "--arch", ARCH, "--out",
                               str(out)], cwd=ROOT, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return {p.name: p.read_bytes() for p in out.iterdir()}

    cold = generate(tmp_path / "cold")
    path = cache_file(tmp_path / "cache")
    stored = path.stat().st_mtime_ns, path.read_bytes()
    warm = generate(tmp_path / "warm")
    assert (path.stat().st_mtime_ns, path.read_bytes()) == stored, "the warm run stored schedules"
    assert warm == cold


def test_old_version_files_are_pruned_to_the_newest_few(tmp_path):
    """Checkouts of other versions leave their files; a write keeps only the newest
    KEEP_VERSIONS (the one written always survives) and removes their lock files too."""
    import os
    for n in range(schedule_cache.KEEP_VERSIONS + 5):
        old = tmp_path / f"schedules-old{n:02}.json"
        old.write_text("{}")
        (tmp_path / f"{old.name}.lock").write_text("")
        os.utime(old, (1000 + n, 1000 + n))          # old00 is the oldest
    current = tmp_path / "schedules-current.json"
    schedule_cache._merge_into(current, {"k": [[0], 1.0]})
    left = sorted(f.name for f in tmp_path.glob("schedules-*.json"))
    newest_old = [f"schedules-old{n:02}.json" for n in range(6, schedule_cache.KEEP_VERSIONS + 5)]
    assert left == sorted(newest_old + ["schedules-current.json"])
    assert len(left) == schedule_cache.KEEP_VERSIONS
    assert not (tmp_path / "schedules-old00.json.lock").exists()
    assert (tmp_path / "schedules-old20.json.lock").exists()
