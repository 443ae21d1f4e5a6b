"""`inst` rewriting, `verify`, the CLI, and old assemblers."""
from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from encoder import EncodeError, encode, rewrite_text, verify_files
from encoder.toolchain import CC, MARCH_ALL, OBJCOPY, cc_march_args

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.filterwarnings("ignore:.*macro-argument line:UserWarning")

KERNEL = """\
// tilesmith test kernel: every kind of line the rewriter must leave alone
#include "no_such_header_needed.h"
#define ACC_ROWS 4
#if ACC_ROWS > 2
    .text
    .global kernel_test
    .type kernel_test, %function
    .p2align 4
/* block comment line: smmla v0.4s, v1.16b, v2.16b */
    .macro ACCUM dst, a, b
    sdot \\dst\\().4s, \\a\\().16b, \\b\\().4b[0]
    .endm
kernel_test:
    ld1 {v0.16b, v1.16b}, [x0], #32
    smmla v16.4s, v2.16b, v0.16b
\tSMMLA  V17.4S ,V2.16B,  V1.16B   // acc row 0
loop: sdot v8.4s, v1.16b, v3.4b[3] // label kept
1:
    bfmmla v19.4s, v7.8h, v1.8h
    bfdot v20.4s, v2.8h, v4.2h[1]
    bfmlalt v21.4s, v2.8h, v15.h[7]
    bfcvtn2 v22.8h, v23.4s
    fmlal2 v24.4s, v25.4h, v15.h[5]
    usdot v26.4s, v27.16b, v28.4b[2]
    sudot v29.2s, v30.8b, v31.4b[1]
    ummla v0.4s, v31.16b, v30.16b

    fmla v4.4s, v5.4s, v6.s[3]
    fmla v4.8h, v5.8h, v6.h[7]
    smlal v0.4s, v1.4h, v2.h[3]
    sadalp v2.4s, v3.8h
    subs x2, x2, #1
    b.ne 1b
#else
    udot v0.4s, v1.16b, v2.16b
#endif
    ret
    .size kernel_test, .-kernel_test
"""

# Lines (1-based) the default feature set rewrites: dotprod, i8mm, bf16, fp16fml instructions.
DEFAULT_REWRITTEN = {15, 16, 17, 19, 20, 21, 22, 23, 24, 25, 26, 35}
IN_ELSE_BRANCH = 35  # rewritten, but removed by #if: never assembled
BASE_OR_FP16 = {28, 29, 30, 31}
MARCH_OLD = "armv8-a"


def lines_of(text: str) -> list[str]:
    return text.split("\n")


@pytest.fixture
def rewritten_default() -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rewrite_text(KERNEL, ["dotprod", "i8mm", "bf16", "fp16fml"])


def run_cli(*args, check_rc=None):
    result = subprocess.run([sys.executable, "-m", "encoder", *map(str, args)], cwd=ROOT,
                            capture_output=True, text=True)
    if check_rc is not None:
        assert result.returncode == check_rc, result.stdout + result.stderr
    return result


def gcc_assemble(source: Path, obj: Path, march: str):
    """MARCH_ALL holds +sme, which GCC 12 does not know: it goes to the assembler only."""
    march_args = cc_march_args() if march == MARCH_ALL else [f"-march={march}"]
    command = [CC, "-c", "-x", "assembler-with-cpp", *march_args, str(source), "-o", str(obj)]
    return subprocess.run(command, capture_output=True, text=True, cwd=source.parent)


def text_bytes(obj: Path) -> bytes:
    binary = obj.with_suffix(".bin")
    subprocess.run([OBJCOPY, "-O", "binary", "-j", ".text", str(obj), str(binary)], check=True)
    return binary.read_bytes()


@pytest.fixture
def kernel_dir(tmp_path: Path) -> Path:
    (tmp_path / "no_such_header_needed.h").write_text("// empty\n")
    (tmp_path / "kernel.S").write_text(KERNEL)
    return tmp_path


# ---------------------------------------------------------------- rewrite_text

def test_only_feature_lines_change_everything_else_is_byte_identical(rewritten_default):
    before, after = lines_of(KERNEL), lines_of(rewritten_default)
    assert len(before) == len(after)
    changed = {number for number, (a, b) in enumerate(zip(before, after), start=1) if a != b}
    assert changed == DEFAULT_REWRITTEN


def test_rewritten_line_keeps_indent_label_instruction_and_comment(rewritten_default):
    after = lines_of(rewritten_default)
    assert after[14] == "    .inst 0x4e80a450 // smmla v16.4s, v2.16b, v0.16b"
    assert after[15] == f"\t.inst 0x{encode('smmla v17.4s, v2.16b, v1.16b'):08x} " \
                        "// SMMLA  V17.4S ,V2.16B,  V1.16B // acc row 0"
    assert after[16] == "loop: .inst 0x4fa3e828 // sdot v8.4s, v1.16b, v3.4b[3] // label kept"
    assert after[18] == "    .inst 0x6e41ecf3 // bfmmla v19.4s, v7.8h, v1.8h"


def test_every_rewritten_word_is_the_encoding_of_its_comment(rewritten_default):
    for number in DEFAULT_REWRITTEN:
        line = lines_of(rewritten_default)[number - 1]
        word, instruction = line.split(".inst ", 1)[1].split(" // ")[:2]
        assert int(word, 16) == encode(instruction)


def test_all_also_rewrites_armv8_base_and_fp16_instructions():
    after = lines_of(rewrite_text(KERNEL, "all"))
    for number in DEFAULT_REWRITTEN | BASE_OR_FP16:
        assert ".inst 0x" in after[number - 1], number


def test_feature_subset_rewrites_only_its_instructions():
    after = lines_of(rewrite_text(KERNEL, ["i8mm"]))
    rewritten = {n for n, line in enumerate(after, start=1) if ".inst 0x" in line}
    assert rewritten == {15, 16, 24, 25, 26}
    fp16_only = lines_of(rewrite_text(KERNEL, "fp16"))
    assert {n for n, line in enumerate(fp16_only, start=1) if ".inst 0x" in line} == {29}


def test_rewriting_is_idempotent(rewritten_default):
    assert rewrite_text(rewritten_default, "all") != rewritten_default  # base lines still there
    assert rewrite_text(rewritten_default, ["dotprod", "i8mm", "bf16", "fp16fml"]) == rewritten_default


def test_crlf_line_endings_are_kept():
    text = "    smmla v16.4s, v2.16b, v0.16b\r\n    add x0, x0, x1\r\n"
    assert rewrite_text(text, "i8mm") == (
        "    .inst 0x4e80a450 // smmla v16.4s, v2.16b, v0.16b\r\n    add x0, x0, x1\r\n")


def test_macro_argument_line_is_left_alone_with_a_warning():
    line = "    sdot \\dst\\().4s, v1.16b, v2.4b[0]"
    with pytest.warns(UserWarning, match="macro-argument line"):
        assert rewrite_text(line, "all") == line


def test_unencodable_known_mnemonic_is_an_error_with_file_and_line():
    text = "    .text\nok: smmla v0.4s, v1.16b, v2.16b\n    sdot v0.4s, v1.16b, v2.4b[4]\n"
    with pytest.raises(EncodeError, match=r"^k\.S:3: index 4 out of range 0-3"):
        rewrite_text(text, "dotprod", filename="k.S")
    with pytest.raises(EncodeError, match=r"k\.S:1: .*allows only v0-v15"):
        rewrite_text("fmla v0.8h, v1.8h, v16.h[0]", "dotprod", filename="k.S")


def test_several_statements_on_one_line_are_refused():
    with pytest.raises(EncodeError, match="several statements"):
        rewrite_text("smmla v0.4s, v1.16b, v2.16b; add x0, x0, x1", "i8mm")


def test_unknown_feature_is_refused():
    with pytest.raises(EncodeError, match="unknown feature"):
        rewrite_text("smmla v0.4s, v1.16b, v2.16b", ["sve9"])


# ---------------------------------------------------------------- verify

def test_inst_then_verify_round_trip_via_cli(kernel_dir: Path):
    out = kernel_dir / "kernel_inst.S"
    run_cli("inst", kernel_dir / "kernel.S", "-o", out, check_rc=0)
    result = run_cli("verify", out, check_rc=0)
    assert result.stdout.strip() == f"{len(DEFAULT_REWRITTEN) - 1} .inst words verified"


def test_verify_reports_a_tampered_word_at_its_line(kernel_dir: Path, rewritten_default):
    lines = lines_of(rewritten_default)
    word = encode("bfdot v20.4s, v2.8h, v4.2h[1]")
    lines[19] = lines[19].replace(f"0x{word:08x}", f"0x{word ^ (1 << 16):08x}")  # Rm v4 -> v5
    tampered = kernel_dir / "tampered.S"
    tampered.write_text("\n".join(lines))
    verified, mismatches = verify_files([str(tampered)])
    assert verified == len(DEFAULT_REWRITTEN) - 2
    assert len(mismatches) == 1
    assert mismatches[0].startswith(f"{tampered}:20: ")
    assert "v5.2h[1]" in mismatches[0]
    result = run_cli("verify", tampered, check_rc=1)
    assert result.stdout.startswith(f"{tampered}:20: ")


def test_verify_flags_inst_without_comment_and_wrong_mnemonic(tmp_path: Path):
    source = tmp_path / "k.S"
    source.write_text("    .text\n    .inst 0x4e80a450\n    .inst 0x4e80a450 // ummla v16.4s, v2.16b, v0.16b\n"
                      "    .inst 0x4e80a450 // smmla V16.4S,v2.16B , v0.16b // spacing and case\n")
    verified, mismatches = verify_files([str(source)])
    assert verified == 1
    assert [m.split(": ")[0] for m in mismatches] == [f"{source}:2", f"{source}:3"]
    assert "no '// instruction' comment" in mismatches[0]


def test_verify_object_file_reencodes_known_instructions(kernel_dir: Path):
    obj = kernel_dir / "kernel.o"
    assert gcc_assemble(kernel_dir / "kernel.S", obj, MARCH_ALL).returncode == 0
    verified, mismatches = verify_files([str(obj)])
    assert mismatches == []
    assert verified == len(DEFAULT_REWRITTEN - {IN_ELSE_BRANCH}) + len(BASE_OR_FP16)


# ---------------------------------------------------------------- old assemblers

def test_rewritten_file_assembles_on_plain_armv8_which_rejects_the_original(kernel_dir: Path):
    original, rewritten = kernel_dir / "kernel.S", kernel_dir / "kernel_inst.S"
    run_cli("inst", original, "-o", rewritten, "--features", "dotprod,i8mm,bf16,fp16fml,fp16",
            check_rc=0)
    refused = gcc_assemble(original, kernel_dir / "orig_old.o", MARCH_OLD)
    assert refused.returncode != 0
    assert "selected processor does not support `smmla v16.4s,v2.16b,v0.16b'" in refused.stderr
    for mnemonic in ("sdot", "bfmmla", "bfdot", "fmlal2", "usdot", "sudot", "ummla", "fmla v4.8h"):
        assert f"does not support `{mnemonic}" in refused.stderr
    accepted = gcc_assemble(rewritten, kernel_dir / "inst_old.o", MARCH_OLD)
    assert accepted.returncode == 0, accepted.stderr
    # Same machine code as the original assembled with every feature.
    assert gcc_assemble(original, kernel_dir / "orig_new.o", MARCH_ALL).returncode == 0
    assert text_bytes(kernel_dir / "inst_old.o") == text_bytes(kernel_dir / "orig_new.o")


# ---------------------------------------------------------------- CLI

def test_cli_encode_prints_the_word():
    assert run_cli("encode", "smmla v16.4s, v2.16b, v0.16b", check_rc=0).stdout == "0x4e80a450\n"


def test_cli_encode_error_goes_to_stderr_with_nonzero_exit():
    result = run_cli("encode", "smmla v16.4s, v2.8b, v0.16b")
    assert result.returncode == 2          # a usage error, not verify's mismatch code 1
    assert result.stdout == ""
    assert "arrangement not allowed for smmla" in result.stderr


def test_cli_inst_to_stdout_and_error_location(kernel_dir: Path):
    result = run_cli("inst", kernel_dir / "kernel.S", check_rc=0)
    assert ".inst 0x4e80a450 // smmla v16.4s, v2.16b, v0.16b\n" in result.stdout
    bad = kernel_dir / "bad.S"
    bad.write_text("    .text\n\n    usmmla v0.4s, v1.16b, v32.16b\n")
    result = run_cli("inst", bad)
    assert result.returncode == 2
    assert f"{bad}:3: register v32 out of range" in result.stderr


def test_cli_non_utf8_input_is_a_clear_error_not_a_traceback(tmp_path: Path):
    bad = tmp_path / "latin1.S"
    bad.write_bytes(b"    .text\n    // caf\xe9\n    sdot v0.4s, v1.16b, v2.16b\n")
    result = run_cli("inst", bad)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{bad}: not UTF-8 text (byte 0xe9 at offset" in result.stderr
    garbage = tmp_path / "garbage.S"
    garbage.write_bytes(b"\xff\xfe\x8f not assembly\n")
    result = run_cli("verify", garbage)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{garbage}: assembling failed" in result.stderr
