"""out/<ARCH>/CMakeLists.txt: a consumer project (tests/c/drv_api_dropin_main.c) adds a generated
folder with add_subdirectory, links the `<prefix>tilesmith` static library target and is
cross-built with CMake and a toolchain file (aarch64-linux-gnu-gcc, static); the program runs
under qemu on an Armv8.0 core and on `max`."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from cross import GCC, ROOT, TEST_C, run_qemu

NM = "aarch64-linux-gnu-nm"   # binutils-aarch64-linux-gnu (deps/registry.py)

TOOLCHAIN = f"""set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER {GCC})
set(CMAKE_C_FLAGS_INIT "-march=armv8-a")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
"""


def consumer(prefix, parent_options=""):
    return f"""cmake_minimum_required(VERSION 3.13)
project(consumer C)
{parent_options}
add_subdirectory(tilesmith)
add_executable(app main.c)
target_link_libraries(app PRIVATE {prefix}tilesmith)
"""


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
# The acme_ consumer also adds -ffast-math for its whole tree, as some engines do: the target
# turns it off for its own sources (the sources' #error would stop the build otherwise).
@pytest.mark.parametrize("prefix, parent_options",
                         [("ts_", ""), ("acme_", "add_compile_options(-ffast-math)")])
def test_cmake_consumer_builds_links_and_runs(tmp_path, prefix, parent_options):
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run([sys.executable, "-m", "gen", "generate", "--arch", "v86", "--prefix", prefix,
                    "--out", str(project / "tilesmith")], cwd=ROOT, check=True,
                   capture_output=True, text=True)
    main = (TEST_C / "drv_api_dropin_main.c").read_text()
    if prefix != "ts_":
        from gen.drivers import apply_prefix
        main = apply_prefix(main, prefix)
    (project / "main.c").write_text(main)
    (project / "CMakeLists.txt").write_text(consumer(prefix, parent_options))
    (tmp_path / "aarch64.cmake").write_text(TOOLCHAIN)
    build = tmp_path / "build"
    for cmd in (["cmake", "-S", str(project), "-B", str(build),
                 f"-DCMAKE_TOOLCHAIN_FILE={tmp_path / 'aarch64.cmake'}",
                 "-DCMAKE_BUILD_TYPE=Release"],
                ["cmake", "--build", str(build), "--parallel", "2"]):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert (build / "tilesmith" / f"lib{prefix}tilesmith.a").exists()
    for cpu, int8_kernel in (("cortex-a57", "_smlal_"), ("max", "_smmla_")):
        out = run_qemu(build / "app", cpu=cpu).stdout
        assert out.endswith("dropin ok\n") and int8_kernel in out, out


ENGINE = """#include "tilesmith.h"
int engine_matmul(const float *a, const float *b, float *c) { return ts_gemm_f32(2, 2, 2, a, 2, b, 2, c, 2); }
"""


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
@pytest.mark.parametrize("export", [False, True])
def test_shared_object_linking_the_target_exports_only_the_api(tmp_path, export):
    """An engine's .so that links the static target PRIVATE exports none of the library's
    symbols by default (two engines with their own copies cannot bind each other's), and with
    -DTS_EXPORT_API=ON the API and the kernels (tilesmith.h, ts_kernels.h) and none of the
    library's internal functions."""
    project = tmp_path / "project"
    project.mkdir()
    folder = project / "tilesmith"
    subprocess.run([sys.executable, "-m", "gen", "generate", "--arch", "v86", "--out", str(folder)],
                   cwd=ROOT, check=True, capture_output=True, text=True)
    (project / "engine.c").write_text(ENGINE)
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.13)\nproject(engine C)\nadd_subdirectory(tilesmith)\n"
        "add_library(engine SHARED engine.c)\ntarget_link_libraries(engine PRIVATE ts_tilesmith)\n")
    (tmp_path / "aarch64.cmake").write_text(TOOLCHAIN)
    build = tmp_path / "build"
    for cmd in (["cmake", "-S", str(project), "-B", str(build),
                 f"-DCMAKE_TOOLCHAIN_FILE={tmp_path / 'aarch64.cmake'}",
                 f"-DTS_EXPORT_API={'ON' if export else 'OFF'}"],
                ["cmake", "--build", str(build), "--parallel", "2"]):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    nm = subprocess.run([NM, "-D", "--defined-only", str(build / "libengine.so")],
                        capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1] for line in nm.splitlines() if line.split()[-1].startswith("ts_")}
    api = set(re.findall(r"\bts_\w+", (folder / "tilesmith.h").read_text()
                         + (folder / "ts_kernels.h").read_text()))
    assert "engine_matmul" in nm
    if not export:
        assert exported == set(), sorted(exported)
        return
    assert "ts_gemm_f32" in exported
    assert exported <= api, sorted(exported - api)


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_cmake_stops_with_a_clear_message_for_a_non_aarch64_compiler(tmp_path):
    """Configured with the host's own compiler (x86-64 here), the folder refuses before any
    assembly, naming the problem."""
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run([sys.executable, "-m", "gen", "generate", "--arch", "v8", "--out",
                    str(project / "tilesmith")], cwd=ROOT, check=True, capture_output=True)
    (project / "CMakeLists.txt").write_text(consumer("ts_"))
    (project / "main.c").write_text("int main(void) { return 0; }\n")
    proc = subprocess.run(["cmake", "-S", str(project), "-B", str(tmp_path / "build"),
                           "-DCMAKE_C_COMPILER=gcc"], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "does not target AArch64" in proc.stderr, proc.stderr[-2000:]
