"""The SME encodings execute: tests/c/enc_sme_outer.S (smstart, zero {za}, ptrue, whilelt, cntw,
ld1w ZA slices and vectors in both address forms, addvl, fmopa, st1w slices and vectors, mova of
vertical slices, rdsvl, smstop) is rewritten to `.inst` words, assembled with -march=armv8-a
(which would refuse any SVE/SME mnemonic left), verified against objdump, and run under
qemu-aarch64 at several streaming vector lengths against a C reference (exact: small integers)."""
from __future__ import annotations

from pathlib import Path

import pytest

from cross import TEST_C, compile_aarch64, run_qemu
from encoder import rewrite_text, verify_files
from encoder.encoding import feature_of, is_known_instruction
from encoder.rewrite import SourceLine

KERNEL = TEST_C / "enc_sme_outer.S"
HARNESS = TEST_C / "enc_sme_outer_main.c"
SVL_BYTES = (16, 64, 256)   # 128, 512 and 2048-bit streaming vectors


def sve_sme_statements(text: str) -> list[str]:
    statements = [SourceLine.parse(line).statement.strip() for line in text.split("\n")]
    return [s for s in statements if s and is_known_instruction(s)]


@pytest.fixture(scope="module")
def binary(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("sme")
    original = KERNEL.read_text()
    rewritten = rewrite_text(original, ["sve", "sme"], filename=str(KERNEL))
    statements = sve_sme_statements(original)
    assert {feature_of(s) for s in statements} == {"sve", "sme"}
    assert rewritten.count(".inst 0x") == len(statements) >= 15
    assert sve_sme_statements(rewritten) == []
    source = tmp / "enc_sme_outer_inst.S"
    source.write_text(rewritten)
    verified, mismatches = verify_files([str(source)])
    assert mismatches == [] and verified == len(statements)
    return compile_aarch64([HARNESS, source], tmp / "enc_sme_outer", march="armv8-a")


@pytest.mark.parametrize("svl_bytes", SVL_BYTES)
def test_outer_product_at_streaming_vector_length(binary, svl_bytes):
    proc = run_qemu(binary, svl_bytes, cpu=f"max,sme-default-vector-length={svl_bytes}")
    assert proc.stdout.strip() == f"ok svl={svl_bytes}"


def test_harness_fails_on_a_wrong_word(tmp_path: Path):
    """A one-bit change (fmopa -> fmops: subtract) makes the run fail: the check can fail."""
    rewritten = rewrite_text(KERNEL.read_text(), ["sve", "sme"])
    word = next(line for line in rewritten.split("\n") if "// fmopa" in line).split()[1]
    broken = rewritten.replace(f".inst {word}", f".inst 0x{int(word, 16) | 1 << 4:08x}")
    source = tmp_path / "broken.S"
    source.write_text(broken)
    exe = compile_aarch64([HARNESS, source], tmp_path / "broken", march="armv8-a")
    proc = run_qemu(exe, 64, cpu="max,sme-default-vector-length=64", check=False)
    assert proc.returncode == 1 and "expected" in proc.stdout
