"""`inst` rewriting and `verify` of SVE/SME lines: what is rewritten, what is left alone (other
`mov`s), comments spelled differently from objdump (aliases, tile lists, omitted defaults),
object-file re-encoding, and old assemblers."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from encoder import DEFAULT_FEATURES, encode, rewrite_text, verify_files
from encoder.toolchain import CC, MARCH_ALL, OBJCOPY, cc_march_args

SOURCE = """\
    .text
    .global sme_test
sme_test:
    smstart sm
    mov x0, x1
    mov v0.16b, v1.16b
    ld1 {v0.4s}, [x0]
    zero {za1.s, za0.s}
    ptrue p0.s
    cntw x9, all, mul #1
loop: ld1w {za0h.s[w12, 0]}, p0/z, [x0]  // load a row
    fmopa za0.s, p0/m, p0/m, z0.s, z1.s
    mova z2.s, p0/m, za0v.s[w12, 3]
    mov za1h.s[w13, 1], p0/m, z2.s
    st1w {z2.s}, p0, [x3, #0, mul vl]
    smopa za3.s, p1/m, p2/m, z4.b, z5.b
    addvl x0, x0, #1
    smstop
    ret
"""
SVE_SME_LINES = {4, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}
SVE_LINES = {9, 10, 15, 17}


def changed_lines(before: str, after: str) -> set[int]:
    return {n for n, (a, b) in enumerate(zip(before.split("\n"), after.split("\n")), start=1)
            if a != b}


def gcc_assemble(source: Path, obj: Path, march_args: list[str]):
    return subprocess.run([CC, "-c", "-g", "-x", "assembler-with-cpp", *march_args, str(source),
                           "-o", str(obj)], capture_output=True, text=True)


def text_bytes(obj: Path) -> bytes:
    binary = obj.with_suffix(".bin")
    subprocess.run([OBJCOPY, "-O", "binary", "-j", ".text", str(obj), str(binary)], check=True)
    return binary.read_bytes()


def test_default_features_rewrite_sve_and_sme_lines_only():
    assert {"sve", "sme"} <= set(DEFAULT_FEATURES)
    after = rewrite_text(SOURCE)
    assert changed_lines(SOURCE, after) == SVE_SME_LINES
    assert changed_lines(SOURCE, rewrite_text(SOURCE, ["sve"])) == SVE_LINES
    assert changed_lines(SOURCE, rewrite_text(SOURCE, ["sme"])) == SVE_SME_LINES - SVE_LINES
    lines = after.split("\n")
    assert lines[10] == (f"loop: .inst 0x{encode('ld1w {za0h.s[w12, 0]}, p0/z, [x0]'):08x} "
                         "// ld1w {za0h.s[w12, 0]}, p0/z, [x0] // load a row")
    assert rewrite_text(after) == after


def test_rewritten_file_verifies_and_assembles_on_plain_armv8(tmp_path: Path):
    original, rewritten = tmp_path / "sme.S", tmp_path / "sme_inst.S"
    original.write_text(SOURCE)
    rewritten.write_text(rewrite_text(SOURCE))
    verified, mismatches = verify_files([str(rewritten)])
    assert mismatches == [] and verified == len(SVE_SME_LINES)
    refused = gcc_assemble(original, tmp_path / "old.o", ["-march=armv8-a"])
    assert refused.returncode != 0 and "does not support `fmopa" in refused.stderr
    assert gcc_assemble(rewritten, tmp_path / "inst.o", ["-march=armv8-a"]).returncode == 0
    assert gcc_assemble(original, tmp_path / "new.o", cc_march_args()).returncode == 0
    assert text_bytes(tmp_path / "inst.o") == text_bytes(tmp_path / "new.o")


def test_verify_object_reencodes_sve_sme_words_and_skips_other_movs(tmp_path: Path):
    source = tmp_path / "sme.S"
    source.write_text(SOURCE)
    obj = tmp_path / "sme.o"
    assert gcc_assemble(source, obj, cc_march_args()).returncode == 0
    verified, mismatches = verify_files([str(obj)])
    assert mismatches == []
    assert verified == len(SVE_SME_LINES)


# Comments spelled unlike objdump's text that mean the same word.
EQUIVALENT_COMMENTS = [
    "zero {za1.s, za0.s}",                       # objdump: zero {za0.s, za1.s}
    "zero {za0.d, za4.d}",                       # objdump: zero {za0.s}
    "zero {za0.b}",                              # objdump: zero {za}
    "mova z0.s, p0/m, za0h.s[w12, 0]",           # objdump: mov
    "cntw x0, all, mul #1",                      # objdump: cntw x0
    "ptrue p0.s, all",                           # objdump: ptrue p0.s
    "ld1w {za0h.s[w12, 0]}, p0/z, [x0]",         # objdump: [x0, xzr, lsl #2]
    "ld1w z1.s, p0/z, [x0, #0, mul vl]",         # objdump: ld1w {z1.s}, p0/z, [x0]
    "ptrue p1.b, #31",                           # objdump: ptrue p1.b
    "smstart sm",
]


def test_verify_accepts_equivalent_spellings_and_flags_a_tampered_word(tmp_path: Path):
    lines = ["    .text"] + [f"    .inst 0x{encode(text):08x} // {text}" for text in EQUIVALENT_COMMENTS]
    zero_mask_line = 1 + EQUIVALENT_COMMENTS.index("zero {za0.d, za4.d}") + 1
    good = tmp_path / "good.S"
    good.write_text("\n".join(lines) + "\n")
    assert verify_files([str(good)]) == (len(EQUIVALENT_COMMENTS), [])
    lines[zero_mask_line - 1] = lines[zero_mask_line - 1].replace("0xc0080011", "0xc0080013")
    bad = tmp_path / "bad.S"
    bad.write_text("\n".join(lines) + "\n")
    verified, mismatches = verify_files([str(bad)])
    assert verified == len(EQUIVALENT_COMMENTS) - 1
    assert len(mismatches) == 1 and mismatches[0].startswith(f"{bad}:{zero_mask_line}: ")
    assert "zero {za0.s, za1.d}" in mismatches[0]


@pytest.mark.parametrize("text", ["mov x0, x1", "mov v0.16b, v1.16b", "mov w12, #0",
                                  "mov z3.s, p0/m, z4.s", "mov z0.d, z1.d"])
def test_other_movs_pass_through_every_feature_set(text):
    """Only MOV's ZA-slice forms are the encoder's; SVE's own MOV aliases (SEL, ORR, ...) are not
    in the table and stay mnemonics, so an old assembler still refuses them."""
    assert rewrite_text(f"    {text}\n", "all") == f"    {text}\n"


def test_cli_encodes_sme_and_names_the_problem():
    import sys
    root = Path(__file__).resolve().parent.parent
    run = lambda *args: subprocess.run([sys.executable, "-m", "encoder", *args], cwd=root,
                                       capture_output=True, text=True)
    good = run("encode", "fmopa za0.s, p0/m, p1/m, z0.s, z1.s")
    assert (good.returncode, good.stdout) == (0, "0x80812000\n")
    bad = run("encode", "fmopa za4.s, p0/m, p1/m, z0.s, z1.s")
    assert bad.returncode == 2 and bad.stdout == ""     # a usage error, not a verify mismatch
    assert "ZA tile za4.s out of range for fmopa (za0.s to za3.s)" in bad.stderr


def test_verify_object_skips_forms_outside_the_tables(tmp_path: Path):
    """Other forms of known mnemonics (SVE gathers, FEAT_SME_I16I64 smopa, scalar fmla) are not
    the encoder's to judge: no mismatch, not counted."""
    source = tmp_path / "other.S"
    source.write_text("    .text\n    ld1w {z0.s}, p0/z, [z1.s, #4]\n"
                      "    st1w {z0.s}, p0, [x0, z1.s, uxtw #2]\n"
                      "    smopa za7.d, p0/m, p1/m, z0.h, z1.h\n    fmla s0, s1, v2.s[1]\n"
                      "    fmopa za1.s, p0/m, p1/m, z0.s, z1.s\n")
    obj = tmp_path / "other.o"
    result = gcc_assemble(source, obj, cc_march_args(MARCH_ALL + "+sme-i64"))
    assert result.returncode == 0, result.stderr
    assert verify_files([str(obj)]) == (1, [])


def test_sdot_of_both_tables_goes_by_its_operands():
    # SDOT is an Advanced SIMD (FEAT_DotProd) and an SVE mnemonic: z registers take the SVE
    # form (the int8 B packers' column sums), v registers the NEON ones (words as objdump
    # prints them: Arm ARM DDI0487 SDOT (vectors) / SDOT (by element))
    assert encode("sdot z24.s, z8.b, z28.b") == 0x449C0118
    assert encode("sdot v1.4s, v2.16b, v3.16b") == 0x4E839441
    assert encode("sdot v19.4s, v2.16b, v0.4b[1]") == 0x4FA0E053
