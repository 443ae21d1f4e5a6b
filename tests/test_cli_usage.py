"""What a user of the command lines sees: help that exits 0, usage errors that exit 2 (the
encoder's 1 means only "verify found mismatches"), `tiles` marking instructions no ARCH
generates, and README kernel names that a generation really produces (issue 10, item 5)."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

import kernel_build
from cross import ROOT
from gen import tiles_cli


def run(*args):
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("args,expect", [
    (("gen", "-h"), ["usage: python3 -m gen", "tiles", "generate"]),
    (("gen", "--help"), ["usage: python3 -m gen", "tiles", "generate"]),
    (("gen", "generate", "-h"), ["--arch", "--prefix", "--out", "keeps the files tilesmith did not write"]),
    (("gen", "tiles", "-h"), ["--arch", "--instruction", "--format"]),
    (("encoder", "-h"), ["encode", "inst", "verify", "exit status"]),
])
def test_help_is_printed_and_exits_0(args, expect):
    proc = run(*args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    for text in expect:
        assert text in proc.stdout, f"{' '.join(args)}: {text!r} missing from\n{proc.stdout}"


@pytest.mark.parametrize("args", [(), ("bogus",), ("generate",), ("generate", "--arch", "v9")])
def test_gen_usage_errors_exit_2(args):
    proc = run("gen", *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "usage" in proc.stderr or "error" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.fixture
def assembly(tmp_path):
    path = tmp_path / "k.S"
    path.write_text("    .text\n    sdot v0.4s, v1.16b, v2.16b\n")
    return path


@pytest.mark.parametrize("args,message", [
    ((), "required"),
    (("bogus",), "invalid choice"),
    (("encode",), "required"),
    (("encode", "smmla v16.4s, v2.8b, v0.16b"), "arrangement not allowed"),
    (("encode", "frobnicate v0.4s"), "unknown mnemonic"),
    (("inst", "{missing}"), "No such file"),
    (("inst", "{asm}", "--features", "warp-drive"), "unknown feature"),
    (("verify", "{missing}"), "No such file"),
])
def test_encoder_usage_errors_exit_2_not_the_mismatch_code(args, message, assembly, tmp_path):
    args = [a.format(asm=assembly, missing=tmp_path / "missing.S") for a in args]
    proc = run("encoder", *args)
    assert proc.returncode == 2, f"{args}: exit {proc.returncode}\n{proc.stderr}"
    assert message in proc.stderr and "Traceback" not in proc.stderr


def tiles_output(capsys, *args):
    assert tiles_cli.main(list(args)) == 0
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def generated_v86(tmp_path_factory):
    return kernel_build.cached_output(tmp_path_factory, "v86")[1]


def test_tiles_marks_exactly_the_instructions_no_generation_has(capsys, generated_v86):
    """v86 generates the union of every ARCH's instructions (it includes the lower levels); an
    instruction `tiles --arch v86` lists is marked iff the real v86 generation has no kernel
    for it."""
    generated = {k["instruction"] for k in generated_v86["kernels"]}
    table = tiles_output(capsys, "--arch", "v86")
    rows = re.findall(r"^(\w+)(\*?)\s+\d+x\d+x\d+ ", table, re.M)
    assert len(rows) >= len(generated) + 1, table
    for name, mark in rows:
        assert (mark == "*") == (name not in generated), f"{name}{mark}\n{table}"
    assert tiles_cli.NOT_GENERATED_NOTE in table
    listed = json.loads(tiles_output(capsys, "--arch", "v86", "--format", "json"))
    assert listed["not_generated"] == sorted(n for n, _ in rows if n not in generated)
    assert all(t["generated"] == (t["instruction"] in generated) for t in listed["tiles"])


def test_tiles_shows_no_mark_when_every_instruction_is_generated(capsys):
    table = tiles_output(capsys, "--arch", "v8")
    rows = re.findall(r"^(\w+)(\*?)\s+\d+x\d+x\d+ ", table, re.M)
    assert [name for name, _ in rows] == ["fmla_f32", "smlal"], table
    assert not any(mark for _, mark in rows) and tiles_cli.NOT_GENERATED_NOTE not in table


README_KERNEL = re.compile(r"\bts_gemm_[a-z0-9]+_[a-z0-9]+_\d+x\d+x\d+\w*")


def test_readme_kernel_names_are_generated_today(generated_v86):
    readme = (ROOT / "README.md").read_text()
    names = set(README_KERNEL.findall(readme))
    assert names, "the README names no kernel (pattern out of date?)"
    symbols = {k["symbol"] for k in generated_v86["kernels"]} | \
        {v["symbol"] for k in generated_v86["kernels"] for v in k.get("variants", [])} | \
        {k["symbol"] for k in generated_v86.get("qdyn_kernels", [])}
    assert names <= symbols, f"README names kernels v86 does not generate: {sorted(names - symbols)}"


def test_readme_kernel_prototypes_are_the_generated_ones(tmp_path_factory):
    """Every complete kernel prototype of the README's C examples is declared so, word for
    word, in a real generation's kernels.h (abbreviated ones, with a comment, are skipped)."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```c\n(.*?)```", readme, re.S)
    prototypes = [p for block in blocks for p in re.findall(r"void ts_gemm_\w+\([^;]*\);", block)
                  if "/*" not in p]
    assert prototypes, "no C kernel prototype example in the README"
    folder, _ = kernel_build.cached_output(tmp_path_factory, "v86")
    header = " ".join((folder / "ts_kernels.h").read_text().split())
    for prototype in prototypes:
        assert " ".join(prototype.split()) in header, f"not in ts_kernels.h: {prototype}"


def test_tiles_into_a_closed_pipe_stops_quietly():
    """`python3 -m gen tiles … | head`: no BrokenPipeError traceback on stderr. The reader
    takes one byte and closes the pipe; the JSON report is larger than a pipe's buffer
    (64 KiB on Linux), so the writer surely meets the closed pipe."""
    proc = subprocess.Popen([sys.executable, "-m", "gen", "tiles", "--arch", "v86",
                             "--format", "json"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    first = proc.stdout.read(1)
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert first in (b"{", b"[")
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr
