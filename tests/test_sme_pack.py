"""Streaming-mode packers of the SME paths (gen/sme_pack.py, ARCH v92): which are generated and
which dispatch path uses each, text checks (streaming-legal instructions only, every `.inst`
word verified, plain -march=armv8-a assembles them), and runs under qemu-aarch64 at every
streaming vector length against the panel layout written out in tests/c/sme_pack_harness.c
(guard pages, sentinels, ABI state, lazy ZA save); a broken packer fails the run."""
from __future__ import annotations

import subprocess

import pytest

from cross import TEST_C, run_qemu
from encoder import verify_files
import kernel_build
from test_sme_kernels import SVL_BYTES, build_sme_binary, qemu_cpu, streaming_region_problems

from gen.sme_pack import emit_pack_b

HARNESS = TEST_C / "sme_pack_harness.c"
EXPECTED = {"ts_sme_pack_a_1vl": ("a", 1), "ts_sme_pack_a_2vl": ("a", 2),
            "ts_sme_pack_a_bf16_2vl": ("a", 2), "ts_sme_pack_b_bf16_2vl": ("b", (2, 8, 2)),
            "ts_sme_pack_b_1x16_4vl": ("b", (1, 16, 4)),   # smopa and usmopa (both 1VLx4VL)
            "ts_sme_pack_b_2x8_2vl": ("b", (2, 8, 2)), "ts_sme_pack_b_4x4_2vl": ("b", (4, 4, 2))}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return kernel_build.cached_output(tmp_path_factory, "v92")


def pack_table(manifest: dict) -> str:
    rows = []
    for p in manifest["sme_packers"]:
        if p["role"] == "a":
            rows.append(f'    {{"{p["symbol"]}", (void *){p["symbol"]}, \'a\', {p["tr"]}, 0, 0, 0, '
                        f'{int(p["kinds"] == ["BF16"])}, 0, {p["group"]}}},')
        else:
            rows.append(f'    {{"{p["symbol"]}", (void *){p["symbol"]}, \'b\', 0, '
                        f'{p["elem_bytes"]}, {p["lp"]}, {p["tc"]}, {int(p["kinds"] == ["BF16"])}, '
                        f'{int(p["col_sums"])}, 0}},')
    return (f'#include "{manifest["prefix"]}kernels.h"\n'
            "static const sme_packer_info PACKERS[] = {\n" + "\n".join(rows) + "\n};\n")


def build(out, manifest, tmp, texts: dict | None = None):
    """The harness over every SME packer of `out` (texts: as build_sme_binary)."""
    return build_sme_binary(HARNESS, out, manifest["sme_packers"],
                            {"sme_pack_table.h": pack_table(manifest)}, tmp, "sme_pack_harness",
                            texts)


@pytest.fixture(scope="module")
def harness(generated, tmp_path_factory):
    out, manifest = generated
    return build(out, manifest, tmp_path_factory.mktemp("sme-pack"))


def test_v92_emits_the_packers_of_its_sme_kernels(generated):
    out, manifest = generated
    got = {}
    for p in manifest["sme_packers"]:
        got[p["symbol"]] = (p["role"], p["tr"] if p["role"] == "a"
                            else (p["elem_bytes"], p["lp"], p["tc"]))
        assert (out / p["file"]).is_file()
    assert got == EXPECTED
    kernels_h = (out / "ts_kernels.h").read_text()
    assert all(f"void {s}(" in kernels_h for s in EXPECTED)


def test_only_streaming_legal_instructions_and_every_word_verifies(generated, tmp_path):
    out, manifest = generated
    files = [str(out / p["file"]) for p in manifest["sme_packers"]]
    for p in manifest["sme_packers"]:
        text = (out / p["file"]).read_text()
        assert text.count("smstart sm") == 1 and streaming_region_problems(text) == []
        assert text.index("stp d8, d9") < text.index("smstart sm")
        assert text.rindex("ldp d8, d9") > text.index("// smstop")
        # the B packers leave ZA alone (SMSTOP SM), the A packers own it as private-ZA functions
        assert ("smstop sm" in text) == (p["role"] == "b")
        assert ("smstart za" in text) == (p["role"] == "a")
    verified, mismatches = verify_files(files)
    assert mismatches == [] and verified >= 6 * 15
    for f in files:
        subprocess.run(["aarch64-linux-gnu-gcc", "-march=armv8-a", "-c", f, "-o",
                        str(tmp_path / "p.o")], check=True)


def test_only_copy_kinds_have_b_packers():
    with pytest.raises(ValueError, match="no streaming B packer"):
        emit_pack_b("ts_", 4, 2, 2)


@pytest.mark.parametrize("svl_bytes", SVL_BYTES)
def test_packers_match_the_panel_layout_at_every_svl(harness, generated, svl_bytes):
    _, manifest = generated
    proc = run_qemu(harness, svl_bytes, cpu=qemu_cpu(svl_bytes), timeout=600)
    assert proc.stdout.strip().split("\n") == [
        f"ok {p['symbol']}: 0 failure(s)" for p in manifest["sme_packers"]], proc.stdout[-3000:]


@pytest.mark.parametrize("symbol,line", [
    ("ts_sme_pack_b_1x16_4vl", "addvl x0, x0, #16"),      # k-steps overwrite each other
    ("ts_sme_pack_b_1x16_4vl", "whilelt p6.b, xzr, x8"),   # partial k-step: rows 1.. dropped
    ("ts_sme_pack_b_1x16_4vl", "zip2 z12.h, z4.h, z6.h"),  # columns S..2S-1 of k-step 0
    ("ts_sme_pack_b_4x4_2vl", "st4w {z12.s-z15.s}, p0, [x0, #4, mul vl]"),  # columns S..2S-1
    ("ts_sme_pack_a_2vl", "mova z7.s, p0/m, za1v.s[w12, 3]"),  # word 3 of rows S..2S-1
    ("ts_sme_pack_a_2vl", "zero {za}"),                    # rows past `rows` not zero
    ("ts_sme_pack_b_bf16_2vl", "orr z2.d, z2.d, z27.d"),   # a NaN not made quiet (integer loop)
    ("ts_sme_pack_a_bf16_2vl", "and z3.d, z2.d, z28.d"),   # ties not to even (stale z3)
    ("ts_sme_pack_b_bf16_2vl", "bfcvtnt z8.h, p0/m, z1.s"),  # k + 1 missing (BFCVT loop)
    ("ts_sme_pack_a_bf16_2vl", "bfcvt z1.h, p0/m, z1.s"),  # the second S values unrounded
    ("ts_sme_pack_a_bf16_2vl", "mova za1h.s[w12, 2], p0/m, z4.s"),  # row i + 2 of 4 (tile 1)
    ("ts_sme_pack_a_bf16_2vl", "bfcvtnt z2.h, p0/m, z3.s"),  # LD2W loop: odd k-values missing
    ("ts_sme_pack_a_bf16_2vl", "tbnz x3, #2, K_ROWS1_4"),  # LD2W with K odd: last value lost
    ("ts_sme_pack_a_bf16_2vl", "whilelt p3.s, x11, x17"),  # LD2W pairs past the row (stale p3)
    ("ts_sme_pack_b_bf16_2vl", "b.ne K_INT"),              # BFCVT under a non-default FPCR
    ("ts_sme_pack_a_bf16_2vl", "movk x17, #0x3c0, lsl #16"),  # RMode, FZ, DN not checked
    ("ts_sme_pack_b_1x16_4vl", "sdot z27.s, z20.b, z28.b"),  # sums 3*S.. miss k-step 0
    ("ts_sme_pack_b_1x16_4vl", "index z28.b, #1, #0"),     # column sums of zero weights
    ("ts_sme_pack_b_1x16_4vl", "st1w {z27.s}, p6, [x5, #3, mul vl]"),  # sums 3*S.. unwritten
])
def test_a_broken_packer_fails(generated, tmp_path, symbol, line):
    out, manifest = generated
    packer = next(p for p in manifest["sme_packers"] if p["symbol"] == symbol)
    text = (out / packer["file"]).read_text()
    # an .inst word's line names its instruction after //; a base instruction is written as is
    broken = "\n".join(t for t in text.split("\n")
                       if f"// {line} " not in t + " " and not (t.strip() + " ").startswith(line + " "))
    assert broken != text
    binary = build(out, manifest, tmp_path, {symbol: broken})
    proc = run_qemu(binary, 32, cpu=qemu_cpu(32), check=False)
    assert proc.returncode != 0 and f"FAILED {symbol}" in proc.stdout, proc.stdout[-2000:]
