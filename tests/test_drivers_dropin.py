"""Drop-in use of a generated folder: `python3 -m gen generate --arch v86`, the folder copied
alone into a temporary directory outside the repository, built with aarch64 gcc and with
clang-19 using only -march=armv8-a (warnings as errors, C99, pedantic), linked with a small
user program (tests/c/drv_api_dropin_main.c) and run under qemu on an Armv8.0 core and on
`max`. A build with another prefix exports only prefixed symbols and needs only libc."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from cross import CLANG, GCC, ROOT, TEST_C, run_qemu

COMPILERS = {"gcc": [GCC], "clang": [CLANG, "--target=aarch64-linux-gnu"]}
FLAGS = ["-march=armv8-a", "-std=c99", "-O2", "-Wall", "-Wextra", "-Wpedantic", "-Werror"]
# What the generated C may take from outside the folder: libc, and POSIX threads for the
# built-in pool of ts_context_set_num_threads (none with TS_NO_THREADS: test_drivers_context).
LIBC = {"malloc", "calloc", "free", "memcpy", "memset", "strcmp", "getauxval",
        "pthread_create", "pthread_join", "pthread_mutex_init", "pthread_mutex_destroy",
        "pthread_mutex_lock", "pthread_mutex_unlock", "pthread_cond_init",
        "pthread_cond_destroy", "pthread_cond_wait", "pthread_cond_signal",
        "pthread_cond_broadcast"}


def generate(arch, prefix, out):
    subprocess.run([sys.executable, "-m", "gen", "generate", "--arch", arch, "--prefix", prefix,
                    "--out", str(out)], cwd=ROOT, check=True, capture_output=True, text=True)
    return out


@pytest.fixture(scope="module")
def dropped_folder(tmp_path_factory):
    """The v86 folder, generated, then copied alone into a fresh directory."""
    generated = generate("v86", "ts_", tmp_path_factory.mktemp("generated") / "v86")
    project = tmp_path_factory.mktemp("user_project")
    assert not str(project).startswith(str(ROOT))
    return shutil.copytree(generated, project / "tilesmith")


def build(compiler, sources, output, *extra):
    cmd = [*COMPILERS[compiler], *FLAGS, *extra, *map(str, sources), "-o", str(output)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"
    return output


@pytest.mark.parametrize("compiler", sorted(COMPILERS))
def test_folder_builds_and_runs_with_armv8_a_only(compiler, dropped_folder, tmp_path):
    sources = sorted(dropped_folder.glob("*.c")) + sorted(dropped_folder.glob("*.S"))
    main = shutil.copy(TEST_C / "drv_api_dropin_main.c", tmp_path / "main.c")
    binary = build(compiler, [*sources, main], tmp_path / "app", "-static", f"-I{dropped_folder}")
    for cpu, int8_kernel in (("cortex-a57", "_smlal_"), ("max", "_smmla_")):
        out = run_qemu(binary, cpu=cpu).stdout
        assert out.endswith("dropin ok\n") and int8_kernel in out, out


def test_prefix_names_every_exported_symbol(tmp_path):
    folder = generate("v86", "acme_", tmp_path / "acme")
    assert (folder / "acme_gemm.c").exists() and not list(folder.glob("ts_*"))
    for compiler in COMPILERS:
        objects = []
        for source in sorted(folder.glob("*.c")) + sorted(folder.glob("*.S")):
            obj = tmp_path / f"{compiler}_{source.name}.o"
            objects.append(build(compiler, [source], obj, "-c", f"-I{folder}"))
        nm = subprocess.run(["aarch64-linux-gnu-nm", "--extern-only", *map(str, objects)],
                            capture_output=True, text=True, check=True).stdout
        defined = {line.split()[2] for line in nm.splitlines() if len(line.split()) == 3}
        undefined = {line.split()[1] for line in nm.splitlines()
                     if len(line.split()) == 2 and line.split()[0] == "U"}
        assert defined and all(s.startswith("acme_") for s in defined), sorted(defined)
        assert undefined - defined <= LIBC, sorted(undefined - defined - LIBC)
