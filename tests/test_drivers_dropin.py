"""Drop-in use of a generated folder: `python3 -m gen generate --arch v86`, the folder copied
alone into a temporary directory outside the repository, built with aarch64 gcc and with
clang-19 using only -march=armv8-a (warnings as errors, -Wcast-align and -Wcast-qual too, C99,
pedantic), linked with a small
user program (tests/c/drv_api_dropin_main.c) and run under qemu on an Armv8.0 core and on
`max`. A build with another prefix exports only prefixed symbols and needs only libc."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from cross import CLANG, GCC, ROOT, TEST_C, run_qemu

COMPILERS = {"gcc": [GCC], "clang": [CLANG, "--target=aarch64-linux-gnu"]}
# -Wcast-align (clang: a cast to a more aligned pointer) and -Wcast-qual (one that drops const):
# engines build with them, so the generated C and the user program compile clean with them
FLAGS = ["-march=armv8-a", "-std=c99", "-O2", "-Wall", "-Wextra", "-Wpedantic", "-Wcast-align",
         "-Wcast-qual", "-Werror"]
# What the generated C may take from outside the folder: libc, and POSIX threads for the
# built-in pool of ts_context_set_num_threads (none with TS_NO_THREADS: test_drivers_context).
LIBC = {"malloc", "calloc", "free", "memcpy", "memset", "strcmp", "getauxval",
        "pthread_create", "pthread_join", "pthread_mutex_init", "pthread_mutex_destroy",
        "pthread_mutex_lock", "pthread_mutex_unlock", "pthread_cond_init",
        "pthread_cond_destroy", "pthread_cond_wait", "pthread_cond_signal",
        "pthread_cond_broadcast",
        "getpid",     # ts_pool.c: a pool made by another process (fork) runs its tasks in line
        "prctl",      # ts_context.c: a pool task takes the caller's SME vector length (Linux)
        "fopen", "fgets", "fclose", "snprintf"}   # ts_cache_sysfs.c: ts_cache_sizes_sysfs
# ... and from the compiler's runtime: GCC's outline atomics (-moutline-atomics, the default
# since GCC 10 for AArch64; libgcc picks LSE or LL/SC at run time) for the context's
# workspace claim (one atomic exchange).
LIBGCC = {"__aarch64_swp4_acq"}


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


# -O0 too: an unoptimised build calls what -O2 inlines (truncf once needed libm there);
# -O3, CMake's Release flags: gcc's -Wmaybe-uninitialized looks deeper there (it once flagged
# pack_qdyn's handle_alloc outputs).
@pytest.mark.parametrize("opt", ["-O2", "-O0", "-O3"])
def test_prefix_names_every_exported_symbol(opt, tmp_path):
    folder = generate("v86", "acme_", tmp_path / "acme")
    assert (folder / "acme_gemm.c").exists() and not list(folder.glob("ts_*"))
    for compiler in COMPILERS:
        objects = []
        for source in sorted(folder.glob("*.c")) + sorted(folder.glob("*.S")):
            obj = tmp_path / f"{compiler}_{source.name}.o"
            objects.append(build(compiler, [source], obj, "-c", opt, f"-I{folder}"))
        nm = subprocess.run(["aarch64-linux-gnu-nm", "--extern-only", *map(str, objects)],
                            capture_output=True, text=True, check=True).stdout
        defined = {line.split()[2] for line in nm.splitlines() if len(line.split()) == 3}
        undefined = {line.split()[1] for line in nm.splitlines()
                     if len(line.split()) == 2 and line.split()[0] == "U"}
        assert defined and all(s.startswith("acme_") for s in defined), sorted(defined)
        assert undefined - defined <= LIBC | LIBGCC, sorted(undefined - defined - LIBC - LIBGCC)


@pytest.fixture(scope="module")
def sme_folder(tmp_path_factory):
    """The v92 folder: every kernel template (NEON, qdyn int4, SME)."""
    return generate("v92", "ts_", tmp_path_factory.mktemp("generated") / "v92")


def aarch64_feature_note(obj) -> str:
    notes = subprocess.run(["aarch64-linux-gnu-readelf", "-n", str(obj)], capture_output=True,
                           text=True, check=True).stdout
    return next((line.split("feature:")[1].strip() for line in notes.splitlines()
                 if "AArch64 feature:" in line), "")


def first_instructions(obj) -> dict:
    """{function symbol: its first instruction's mnemonic} of an object file."""
    dump = subprocess.run(["aarch64-linux-gnu-objdump", "-d", str(obj)], capture_output=True,
                          text=True, check=True).stdout.splitlines()
    return {line.split("<")[1].rstrip(">:"): dump[i + 1].split("\t")[2].strip()
            for i, line in enumerate(dump) if line.endswith(">:") and i + 1 < len(dump)
            and len(dump[i + 1].split("\t")) > 2}


@pytest.mark.parametrize("protection", ["standard", "none"])
def test_kernels_follow_the_builds_branch_protection(protection, sme_folder, tmp_path):
    """Built with -mbranch-protection=standard every kernel starts with a BTI C landing pad and
    carries the BTI + PAC property note, so linking the folder with `-z force-bti` warns about
    no input and the result keeps the property; built without it, neither is emitted."""
    kernels = sorted(sme_folder.glob("*.S"))
    assert len(kernels) > 20
    objects = [build("gcc", [s], tmp_path / (s.name + ".o"), "-c", f"-I{sme_folder}",
                     f"-mbranch-protection={protection}")
               for s in kernels + sorted(sme_folder.glob("*.c"))]
    for obj in objects[:len(kernels)]:
        firsts = first_instructions(obj)
        assert firsts and all((m == "bti") == (protection == "standard") for m in firsts.values()), (obj, firsts)
        assert aarch64_feature_note(obj) == ("BTI, PAC" if protection == "standard" else "")
    linked = tmp_path / "tilesmith.o"
    link = subprocess.run(["aarch64-linux-gnu-ld", "-r", "-z", "force-bti", *map(str, objects),
                           "-o", str(linked)], capture_output=True, text=True)
    assert link.returncode == 0
    if protection == "standard":
        assert link.stderr == "" and aarch64_feature_note(linked) == "BTI, PAC", link.stderr
    else:
        assert "BTI" in link.stderr   # the check can fail: unmarked kernels are reported
