"""examples/*.c, the programs engine authors copy: each builds against a generated v86 folder
(the session's shared one, kernel_build.cached_output) with -std=c99 -Werror, as
examples/README.md says (the folder compiled once with -march=armv8-a -ffp-contract=off
-fvisibility=hidden, the example linked statically), and runs under qemu-aarch64 on `max`
(i8mm, bf16, dotprod kernels) and cortex-a53 (Armv8.0 fallbacks). Each example checks its own
results against its plain-C reference and prints one line `<name>: OK: ...` or
`<name>: FAILED: ...` with exit status 1: the test fails on either. The README's "A first call"
snippet is built and run the same way, inside a main that checks its C."""
from __future__ import annotations

import subprocess

import pytest

from cross import GCC, ROOT, compile_aarch64, run_qemu
import kernel_build

EXAMPLES = sorted((ROOT / "examples").glob("*.c"))
CPUS = ("max", "cortex-a53")
# the folder's objects, built as examples/README.md builds them (the library's own flags)
LIBRARY_FLAGS = ("-O2", "-march=armv8-a", "-ffp-contract=off", "-fvisibility=hidden")
EXAMPLE_FLAGS = ["-std=c99", "-Werror", "-ffp-contract=off"]


# the README's snippet (its indented lines after "### A first call") inside a program: small
# integer inputs, so every fp32 sum is exact and C is checked against plain C
SNIPPET_MAIN = """#include <stdio.h>
#include <stdlib.h>
{include}
int main(void) {{
    enum {{ M = 5, N = 7, K = 9 }};
    float A[M * K], B[K * N], C[M * N];
    for (int i = 0; i < M * K; i++) A[i] = (float)(i % 7 - 3);
    for (int i = 0; i < K * N; i++) B[i] = (float)(i % 5 - 2);
{body}
    int bad = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {{
            float sum = 0.0f;
            for (int k = 0; k < K; k++) sum += A[m * K + k] * B[k * N + n];
            bad += C[m * N + n] != sum;
        }}
    printf("snippet: %s: rc %d, %d of %d differ\\n", rc == TS_OK && !bad ? "OK" : "FAILED",
           rc, bad, M * N);
    return rc != TS_OK || bad;
}}
"""


def readme_snippet() -> str:
    """The README's first-call snippet as a complete program."""
    text = (ROOT / "README.md").read_text()
    block = text[text.index("### A first call\n"):]
    block = block[block.index("\n") + 1:block.index("\nBuild it with")]
    lines = [line[4:] for line in block.splitlines()]
    include = [line for line in lines if line.startswith("#include")]
    body = [line for line in lines if not line.startswith("#include")]
    assert include == ['#include "tilesmith.h"'] and len(body) > 5, block
    body = "\n".join("    " + line if line else "" for line in body)
    return SNIPPET_MAIN.format(include=include[0], body=body)


def test_the_examples_are_there_and_documented():
    """The three uses of examples/README.md, each with its row in that README."""
    names = {p.stem for p in EXAMPLES}
    assert {"conv_layer", "llm_linear", "float_gemm"} <= names
    readme = (ROOT / "examples" / "README.md").read_text()
    assert all(f"`{p.name}`" in readme for p in EXAMPLES)


def compile_library(tmp_path_factory, *defines):
    """Object files of every .c and .S of the shared v86 folder (with -D `defines`)."""
    v86 = kernel_build.cached_output(tmp_path_factory, "v86")[0]
    objects = tmp_path_factory.mktemp("examples-lib")
    sources = sorted(v86.glob("*.c")) + sorted(v86.glob("*.S"))
    proc = subprocess.run([GCC, *LIBRARY_FLAGS, *[f"-D{d}" for d in defines], "-I", str(v86),
                           "-c", *map(str, sources)], cwd=objects, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return v86, sorted(objects.glob("*.o"))


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    return compile_library(tmp_path_factory)


@pytest.fixture(scope="module")
def binaries(library, tmp_path_factory):
    v86, objects = library
    out = tmp_path_factory.mktemp("examples-bin")
    snippet = out / "snippet.c"
    snippet.write_text(readme_snippet())
    return {p.stem: compile_aarch64([p, *objects], out / p.stem, includes=[v86],
                                    flags=EXAMPLE_FLAGS) for p in [*EXAMPLES, snippet]}


@pytest.mark.parametrize("cpu", CPUS)
@pytest.mark.parametrize("example", [p.stem for p in EXAMPLES] + ["snippet"])
def test_example_runs_and_checks_out(example, cpu, binaries):
    proc = run_qemu(binaries[example], cpu=cpu, check=False, timeout=120)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and len(lines) == 1 and lines[0].startswith(f"{example}: OK: "), \
        f"{example} on -cpu {cpu} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"


def test_examples_run_on_a_library_without_threads(tmp_path_factory):
    """Built with TS_NO_THREADS (README: no POSIX threads), ts_context_set_num_threads accepts 1
    only: each example keeps one thread and still checks out, saying so in its line."""
    v86, objects = compile_library(tmp_path_factory, "TS_NO_THREADS")
    out = tmp_path_factory.mktemp("examples-nothreads")
    for p in EXAMPLES:
        binary = compile_aarch64([p, *objects], out / p.stem, includes=[v86], flags=EXAMPLE_FLAGS)
        proc = run_qemu(binary, cpu="max", check=False, timeout=120)
        lines = proc.stdout.splitlines()
        assert proc.returncode == 0 and len(lines) == 1 and lines[0].startswith(
            f"{p.stem}: OK: ") and " 1 threads" in lines[0], f"{p.stem}:\n{proc.stdout}{proc.stderr}"
