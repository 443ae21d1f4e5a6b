"""Shared pytest setup: make the repository root importable (gen, encoder, bench)."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# Generations in this session use their own schedule cache (gen/schedule_cache.py), empty at the
# start: the tests exercise the schedule search itself, not what an earlier run left behind.
if "TILESMITH_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile
    os.environ["TILESMITH_CACHE_DIR"] = tempfile.mkdtemp(prefix="tilesmith-test-cache-")
    atexit.register(shutil.rmtree, os.environ["TILESMITH_CACHE_DIR"], True)
