"""Generated SME kernels (ARCH v92): text checks, and runs under qemu-aarch64 at every streaming
vector length 128..2048 bits against the C reference of tests/c/sme_kernel_harness.c (k-step
counts, partial tiles, accumulator input, guard pages, ABI state after every call, lazy ZA save
commit), built with -march=armv8-a from `.inst`-rewritten kernels and verified against objdump.
"""
from __future__ import annotations

import re
import subprocess
import warnings

import pytest

from cross import TEST_C, compile_aarch64, run_qemu
from encoder import encode, feature_of, rewrite_text, verify_files
from encoder.encoding import is_known_instruction
from encoder.rewrite import SourceLine
import kernel_build

from gen.isa import SME_INSTRUCTIONS, sme_generated_for
from gen.sme_tiling import candidates, solve

SVL_BYTES = (16, 32, 64, 128, 256)      # 128, 256, 512, 1024, 2048-bit streaming vectors
HELPERS = TEST_C / "sme_abi_helpers.S"
HARNESS = TEST_C / "sme_kernel_harness.c"


def sme_table(manifest: dict) -> str:
    """sme_kernel_table.h: every SME kernel of the manifest (declared by <prefix>kernels.h)."""
    rows = [f'    {{"{k["symbol"]}", {k["symbol"]}, "{k["a_type"]}", "{k["b_type"]}", '
            f'"{k["c_type"]}", {k["tr"]}, {k["tc"]}, {k["lp"]}, '
            f'{["raw", "biasclamp", "requant", "requant_u8"].index(k["epilogue"])}}},'
            for k in manifest["sme_kernels"]]
    return ("static const sme_kernel_info KERNELS[] = {\n" + "\n".join(rows) + "\n};\n")


def sme_table_types(manifest: dict) -> str:
    """sme_kernel_table_types.h: the generated header and its argument block as tile_args."""
    prefix = manifest["prefix"]
    return f'#include "{prefix}kernels.h"\ntypedef {prefix}tile_args tile_args;\n'


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return kernel_build.cached_output(tmp_path_factory, "v92")


def build_sme_binary(harness, out, entries: list, tables: dict, tmp, binary: str,
                     texts: dict | None = None):
    """`harness` (a C file) linked with the `.inst`-rewritten ABI helpers and the generated
    files of `entries` (manifest rows with "file" and "symbol") of `out`, built with
    -march=armv8-a; `tables` (header name -> text) are written to tmp for the harness to
    include; `texts` replaces files' text (symbol -> text) for the tests that check the checks
    can fail."""
    for name, text in tables.items():
        (tmp / name).write_text(text)
    helpers = tmp / "sme_abi_helpers.S"
    helpers.write_text(rewrite_text(HELPERS.read_text(), ["sve", "sme"], filename=str(HELPERS)))
    sources = []
    for e in entries:
        path = out / e["file"]
        if texts and e["symbol"] in texts:
            path = tmp / e["file"]
            path.write_text(texts[e["symbol"]])
        sources.append(path)
    return compile_aarch64([harness, helpers, *sources], tmp / binary, includes=[tmp, out],
                           march="armv8-a")


def build_harness(out, manifest: dict, tmp, texts: dict | None = None):
    """The harness over every SME kernel of `out` (texts: as build_sme_binary)."""
    tables = {"sme_kernel_table.h": sme_table(manifest),
              "sme_kernel_table_types.h": sme_table_types(manifest)}
    return build_sme_binary(HARNESS, out, manifest["sme_kernels"], tables, tmp, "sme_harness",
                            texts)


def qemu_cpu(svl_bytes: int) -> str:
    """-cpu max at a streaming vector length, FEAT_SME_FA64 off: an instruction that is not
    legal in streaming SVE mode (Advanced SIMD, scalar FP, most SVE-only ones) traps there."""
    return f"max,sme-default-vector-length={svl_bytes},sme_fa64=off"


@pytest.fixture(scope="module")
def harness(generated, tmp_path_factory):
    out, manifest = generated
    tmp = tmp_path_factory.mktemp("sme-harness")
    binary = build_harness(out, manifest, tmp)
    verified, mismatches = verify_files([str(out / k["file"]) for k in manifest["sme_kernels"]]
                                        + [str(tmp / "sme_abi_helpers.S")])
    assert mismatches == [] and verified > 100
    return binary, manifest


# ---- generation --------------------------------------------------------------------------
def test_v92_emits_every_sme_kernel_with_the_solver_shapes(generated):
    out, manifest = generated
    kernels = [k for k in manifest["sme_kernels"] if k["epilogue"] == "raw"]
    assert [k["instruction"] for k in kernels] == [i.name for i in sme_generated_for("v92")]
    variants = [k["symbol"] for k in manifest["sme_kernels"] if k["epilogue"] != "raw"]
    fused = {"smopa": "_requant", "usmopa": "_requant_u8"}   # int8 / uint8 C (gemm_s8, gemm_u8)
    assert variants == [k["symbol"] + ("_biasclamp" if k["c_type"] == "fp32"
                                       else fused[k["instruction"]]) for k in kernels]
    for k in kernels:
        plan = solve(k["instruction"])
        assert (k["tr"], k["tc"]) == (plan.tr, plan.tc)
        assert k["symbol"].endswith(f"_{plan.tr}vlx{plan.tc}vlx{plan.lp}")
        assert (out / k["file"]).is_file()
    shapes = {k["instruction"]: (k["tr"], k["tc"]) for k in kernels}
    assert shapes == {"fmopa_f32": (2, 2), "smopa": (1, 4), "usmopa": (1, 4), "bfmopa": (2, 2),
                      "fmopa_f16f32": (2, 2)}


def test_solver_ranks_whole_output_rows_then_bytes_per_mac():
    # int8 / uint8 output: only tc = 4 makes a C row one whole vector of bytes
    for name in ("smopa", "usmopa"):
        assert [c.label for c in candidates(name)][:2] == ["1VLx4VL", "2VLx2VL"]
        assert not candidates(name)[1].whole_rows
    # 4-byte outputs: bytes per MAC decides; 2x2 loads one vector per MOPA, 1x4 and 4x1 1.25
    for name in ("fmopa_f32", "bfmopa", "fmopa_f16f32"):
        ranked = candidates(name)
        assert ranked[0].label == "2VLx2VL"
        assert ranked[0].bytes_per_mac_s * 5 == ranked[1].bytes_per_mac_s * 4
        assert all(c.tr * c.tc <= 4 for c in ranked) and len(ranked) == 8


STREAMING_BASE = {"add", "sub", "subs", "cmp", "csel", "mov", "lsr", "and", "ldr", "cbz",
                  "cbnz", "tbz", "b", "b.ne", "b.eq", "b.hi", "b.lo", "b.ls", "mrs", "msr",
                  "brk", "mul", "lsl", "b.hs", "adr",   # (mul .. adr: the streaming packers)
                  "b.ge", "b.lt", "b.le",               # (the four-row ZA slice loops)
                  "orr",                                # (the requant clamp test)
                  "movk", "tst",                        # (the bf16 packers' FPCR check)
                  "ands",                               # (the k-loop's last k-steps)
                  "tbnz",                               # (the bf16 A packer: K odd)
                  "madd"}                               # (the A packers' second row tile)
FP_SIMD_OPERAND = re.compile(r"\b[vqdshb]\d+\b|\bv\d+\.")


def streaming_region_problems(text: str) -> list[str]:
    """Lines between SMSTART and SMSTOP that are not streaming-legal by construction: every
    instruction must be an encoder SVE/SME table form (`.inst` with its statement) or an A64
    base integer/branch/system instruction with no FP/SIMD register operand."""
    problems, inside = [], False
    for line in text.split("\n"):
        parsed = SourceLine.parse(line)
        statement = parsed.statement.strip()
        if statement.startswith(".inst"):
            statement = parsed.comment[2:].split("//")[0].strip()
            # SVE/SME forms; of the bf16 ones only the SVE forms (z operands: BFCVT / BFCVTNT),
            # not the NEON ones (BFCVTN v..., illegal in streaming mode without FEAT_SME_FA64)
            feature = feature_of(statement) if is_known_instruction(statement) else None
            if feature not in ("sve", "sve2", "sme") and not (
                    feature == "bf16" and re.search(r"\bz\d+\.", statement)):
                problems.append(line)
            word = int(parsed.statement.split()[1], 16)
            if encode(statement) != word:
                problems.append(line)
            if statement.startswith("smstart"):
                inside = True
            elif statement in ("smstop", "smstop sm"):     # (SMSTOP ZA stays streaming)
                inside = False
            continue
        if not statement or statement.startswith((".", "#")) or not inside:
            continue
        mnemonic = statement.split()[0]
        if mnemonic not in STREAMING_BASE or FP_SIMD_OPERAND.search(statement.split(None, 1)[1]):
            problems.append(line)
    return problems


def test_only_streaming_legal_instructions_between_smstart_and_smstop(generated):
    out, manifest = generated
    for k in manifest["sme_kernels"]:
        text = (out / k["file"]).read_text()
        assert text.count("smstart sm") == 1 and text.count("// smstop") == 2
        assert streaming_region_problems(text) == [], k["symbol"]
        # the d8-d15 frame is pushed before SMSTART and popped after SMSTOP
        assert text.index("stp d8, d9") < text.index("smstart sm")
        assert text.rindex("ldp d8, d9") > text.index("// smstop")


def test_streaming_check_catches_a_neon_instruction(generated):
    out, manifest = generated
    text = (out / manifest["sme_kernels"][0]["file"]).read_text()
    broken = text.replace("K_STORE:", "K_STORE:\n        fadd v0.4s, v0.4s, v0.4s", 1)
    assert len(streaming_region_problems(broken)) == 1


def test_every_sme_word_verifies_and_plain_armv8_assembles(generated, tmp_path):
    out, manifest = generated
    files = [str(out / k["file"]) for k in manifest["sme_kernels"]]
    verified, mismatches = verify_files(files)
    assert mismatches == [] and verified >= 5 * 40
    for f in files:
        subprocess.run(["aarch64-linux-gnu-gcc", "-march=armv8-a", "-c", f, "-o",
                        str(tmp_path / "k.o")], check=True)


def test_deterministic(generated, tmp_path):
    out, manifest = generated
    again = kernel_build.generate(tmp_path / "again", "v92")
    for k in again["sme_kernels"]:
        assert (tmp_path / "again" / k["file"]).read_text() == (out / k["file"]).read_text()


# ---- runs --------------------------------------------------------------------------------
@pytest.mark.parametrize("svl_bytes", SVL_BYTES)
def test_kernels_match_reference_at_streaming_vector_length(harness, svl_bytes):
    binary, manifest = harness
    proc = run_qemu(binary, svl_bytes, cpu=qemu_cpu(svl_bytes), timeout=600)
    lines = proc.stdout.strip().split("\n")
    notes = [line for line in lines if line.startswith("note: ")]
    for note in notes:
        warnings.warn(note[len("note: "):])
    lines = [line for line in lines if line not in notes]
    assert lines == [f"ok {k['symbol']}: 0 failure(s)" for k in manifest["sme_kernels"]], \
        proc.stdout[-3000:]


def _mutated_run(generated, tmp_path, symbol_index: int, mutate, svl_bytes: int = 32):
    out, manifest = generated
    kernel = manifest["sme_kernels"][symbol_index]
    text = (out / kernel["file"]).read_text()
    mutated = mutate(text)
    assert mutated != text
    binary = build_harness(out, manifest, tmp_path, {kernel["symbol"]: mutated})
    return run_qemu(binary, svl_bytes, kernel["symbol"], cpu=qemu_cpu(svl_bytes), check=False)


def _replace_inst(text: str, statement: str, new_word: int, count: int = 1) -> str:
    """The first `count` lines (-1: every line) of `statement` replaced by `new_word`."""
    lines = text.split("\n")
    hits = [i for i, line in enumerate(lines) if f"// {statement}" in line]
    assert hits, statement
    for i in hits if count < 0 else hits[:count]:
        lines[i] = f"        .inst 0x{new_word:08x} // mutated from {statement}"
    return "\n".join(lines)


def test_reference_check_can_fail(generated, tmp_path):
    """fmopa -> fmops (bit 4: subtract) in the main loop: wrong results are reported."""
    statement = "fmopa za0.s, p0/m, p0/m, z0.s, z8.s"
    proc = _mutated_run(generated, tmp_path, 0,
                        lambda t: _replace_inst(t, statement, encode(statement) | 1 << 4))
    assert proc.returncode == 1 and "expected" in proc.stdout


def test_abi_check_can_fail(generated, tmp_path):
    """SMSTOP -> SMSTOP SM at the exit: ZA left on is reported (SVCR after the call)."""
    proc = _mutated_run(generated, tmp_path, 0, lambda t: t.replace(
        "// smstop // PSTATE.SM = PSTATE.ZA = 0", "// smstop", 1).replace(
        f".inst 0x{encode('smstop'):08x} // smstop\n", f".inst 0x{encode('smstop sm'):08x}\n", 1))
    assert proc.returncode == 1 and "SVCR = 0x2 after the call" in proc.stdout


def test_lazy_save_check_can_fail(generated, tmp_path):
    """Skipping the commit (TPIDR2_EL0 treated as 0): the caller's ZA is not saved."""
    proc = _mutated_run(generated, tmp_path, 0, lambda t: t.replace(
        "cbz x11, K_ZA_FREE", "b K_ZA_FREE", 1))
    assert proc.returncode == 1 and "lazy save" in proc.stdout


def test_a_neon_instruction_in_streaming_mode_traps_with_fa64_off(generated, tmp_path):
    """The FA64-off runs do catch a non-streaming instruction: an Advanced SIMD `mov` after
    SMSTART SM raises SIGILL."""
    proc = _mutated_run(generated, tmp_path, 0, lambda t: t.replace(
        "K_ZA_FREE:\n", "K_ZA_FREE:\n        mov v0.16b, v1.16b\n", 1))
    assert proc.returncode != 0 and "ok " not in proc.stdout


def test_inst_never_assembles_to_the_same_words(generated, tmp_path):
    """INST=never keeps the mnemonics under `.arch armv9.2-a+sme`: GNU as then makes exactly the
    words the encoder wrote for INST=auto."""
    out, manifest = generated
    never = kernel_build.generate(tmp_path / "never", "v92", inst="never")
    for auto_k, never_k in zip(manifest["sme_kernels"], never["sme_kernels"]):
        texts = []
        for folder, k in ((out, auto_k), (tmp_path / "never", never_k)):
            obj, binary = tmp_path / "k.o", tmp_path / "k.bin"
            subprocess.run(["aarch64-linux-gnu-gcc", "-march=armv8-a", "-c",
                            str(folder / k["file"]), "-o", str(obj)], check=True)
            subprocess.run(["aarch64-linux-gnu-objcopy", "-O", "binary", "-j", ".text", str(obj),
                            str(binary)], check=True)
            texts.append(binary.read_bytes())
        assert texts[0] == texts[1] and len(texts[0]) > 400, auto_k["symbol"]


def test_tiles_cli_shows_the_za_ranking(capsys):
    from gen.tiles_cli import main
    assert main(["--arch", "v92"]) == 0
    text = capsys.readouterr().out
    assert "== smopa: 1vlx4vlx16" in text and "== fmopa_f32: 2vlx2vlx4" in text
    assert main(["--arch", "v86"]) == 0
    assert "SME outer products" not in capsys.readouterr().out


def test_biasclamp_check_can_fail(generated, tmp_path):
    """biasclamp with the FMIN (clamp_max) of its first row dropped: reported."""
    out, manifest = generated
    index = next(i for i, k in enumerate(manifest["sme_kernels"])
                 if k["epilogue"] == "biasclamp")
    statement = "fmin z24.s, p0/m, z24.s, z21.s"
    nop = 0xD503201F    # NOP (Arm ARM DDI0487 C6.2 NOP)
    proc = _mutated_run(generated, tmp_path, index, lambda t: _replace_inst(t, statement, nop))
    assert proc.returncode == 1 and "expected" in proc.stdout


def test_solver_and_plan_checks():
    from gen.loop import KernelPlanError
    from gen.sme_emit import check_plan, emit_sme_kernel, kernel_symbol
    from gen.sme_tiling import ZaPlan
    from gen.tiling import TilingError
    with pytest.raises(TilingError, match="unknown SME instruction 'fmla_f32'"):
        candidates("fmla_f32")
    # the ranking is the same for every type's depth k: only the output type changes it
    assert all(c.whole_rows == (c.tc == 4) for c in candidates("smopa"))
    assert all(c.whole_rows == (c.tc == 4) for c in candidates("usmopa"))   # uint8 output
    assert all(c.whole_rows for c in candidates("fmopa_f32"))    # fp32 output
    with pytest.raises(KernelPlanError, match="needs 4 column tiles"):
        emit_sme_kernel(ZaPlan("usmopa", 2, 2), "ts_", epilogue="requant_u8")
    for bad in (ZaPlan("fmopa_f32", 3, 2), ZaPlan("fmopa_f32", 0, 4), ZaPlan("nope", 1, 1)):
        with pytest.raises(KernelPlanError):
            check_plan(bad)
    with pytest.raises(KernelPlanError, match="no biasclamp epilogue"):
        emit_sme_kernel(solve("smopa"), "ts_", epilogue="biasclamp")
    assert kernel_symbol("x_", solve("smopa")) == "x_gemm_s8s32_smopa_1vlx4vlx16"
    assert kernel_symbol("ts_", ZaPlan("bfmopa", 4, 1), "cortex-a510") == \
        "ts_gemm_bf16f32_bfmopa_4vlx1vlx8_cortexa510"
    assert SME_INSTRUCTIONS["smopa"].macs(16) == 16 * 16 * 4     # SVL 512: 1024 int8 MACs


@pytest.mark.parametrize("qemu_cpu_name,sme", [("max", 1), ("max,sme=off", 0), ("cortex-a57", 0)])
def test_cpu_detection_reports_sme(tmp_path, qemu_cpu_name, sme):
    """TS_FEAT_SME (32u) is set exactly when Linux reports HWCAP2_SME and the SME_* outer
    product bits (qemu -cpu max has them; sme=off and cortex-a57 have none)."""
    from gen.drivers import DRIVERS
    binary = compile_aarch64([TEST_C / "drv_cpu_features.c", DRIVERS / "src" / "ts_cpu.c",
                              DRIVERS / "src" / "ts_sme.c", DRIVERS / "src" / "ts_error.c"],
                             tmp_path / "cpu", includes=[DRIVERS / "include", DRIVERS / "src"])
    out = run_qemu(binary, cpu=qemu_cpu_name).stdout.split()
    features = int(out[1])
    assert out[3] == str(sme) and out[5] == out[1]
    assert bool(features & 32) == bool(sme)
    # with SME, RDSVL gives QEMU's streaming vector length (QEMU 7.2 -cpu max: 32 bytes
    # unless told otherwise)
    assert out[6:] == (["svl", "32"] if sme else [])
    if sme:
        other = run_qemu(binary, cpu="max,sme-default-vector-length=128").stdout.split()
        assert other[6:] == ["svl", "128"]


def test_main_loop_mix_in_the_manifest_counts_the_emitted_loop(generated):
    out, manifest = generated
    for k in manifest["sme_kernels"]:
        text = (out / k["file"]).read_text()
        body = text[text.index("K_LOOP:\n") + len("K_LOOP:\n"):text.index("b.ne K_LOOP")]
        statements = [line.split("//")[1].strip() if ".inst" in line else line.strip()
                      for line in body.strip().split("\n")] + ["b.ne K_LOOP"]
        mnemonics = [s.split()[0] for s in statements]
        mix = k["main_loop_mix"]
        # `unroll` panel k-steps of 4 instruction k-steps: one LD4W per row / column block;
        # eight for every shape (pointers biased, 1VLx4VL B from two, so the immediates reach)
        u = k["unroll"]
        assert u == 8
        assert mnemonics.count(k["mnemonic"]) == mix["mopa"] == u * 4 * k["tr"] * k["tc"]
        assert mnemonics.count("ld4w") == mix["load"] == u * (k["tr"] + k["tc"])
        assert k["lp"] == 4 * SME_INSTRUCTIONS[k["instruction"]].k
        assert len(mnemonics) == mix["mopa"] + mix["load"] + mix["other"]


@pytest.mark.parametrize("statement,replacement", [
    ("ssra z27.s, z31.s, #31", "nop"),                  # double rounding: tie fix-up dropped
    ("srshl z28.s, p0/m, z28.s, z15.s", "nop"),         # double rounding: no right shift
    ("smullt z1.d, z27.s, z9.s", "smullb z1.d, z27.s, z9.s"),   # single rounding: wrong lanes
    ("ssra z29.s, z29.s, #31", "nop"),                  # rounding 2: tie fix-up dropped
    ("sqadd z27.h, z27.h, z24.h", "nop"),               # zero point dropped
    ("addha za0.s, p0/m, p0/m, z6.s", "nop"),           # column offsets of za0.s dropped
    ("tbl z27.b, {z27.b}, z7.b", "nop"),                # columns left interleaved
    ("index z3.s, #2, #4", "index z3.s, #1, #4"),       # column tile 1 read from tile 2's bytes
])
def test_requant_checks_can_fail(generated, tmp_path, statement, replacement):
    """Each rounding mode's path is exercised, ties included: one instruction of the requant
    kernel changed -- in a row's code, in every copy (the four unrolled rows and the single
    row of each slice loop, with and without the clamp) -- is reported."""
    out, manifest = generated
    index = next(i for i, k in enumerate(manifest["sme_kernels"]) if k["epilogue"] == "requant")
    word = 0xD503201F if replacement == "nop" else encode(replacement)  # NOP: DDI0487 C6.2
    proc = _mutated_run(generated, tmp_path, index,
                        lambda t: _replace_inst(t, statement, word, count=-1))
    assert proc.returncode == 1 and "expected" in proc.stdout, proc.stdout[-2000:]


def test_requant_clamp_free_loops_are_taken_only_for_the_whole_int8_range(generated, tmp_path):
    """The flag that picks the clamp-free loops forced to 0: the cases with clamp bounds that
    cut (every other three calls) are reported."""
    out, manifest = generated
    index = next(i for i, k in enumerate(manifest["sme_kernels"]) if k["epilogue"] == "requant")
    proc = _mutated_run(generated, tmp_path, index,
                        lambda t: t.replace("orr w14, w14, w11", "mov w14, wzr", 1))
    assert proc.returncode == 1 and "expected" in proc.stdout, proc.stdout[-2000:]


@pytest.mark.parametrize("statement,replacement", [
    ("sqxtunt z27.b, z29.h", "sqxtnt z27.b, z29.h"),   # signed narrowing: 128..255 saturate
    ("umax z27.b, p0/m, z27.b, z25.b", "smax z27.b, p0/m, z27.b, z25.b"),   # signed clamp
])
def test_requant_u8_checks_can_fail(generated, tmp_path, statement, replacement):
    """The uint8 requantisation (usmopa's requant_u8) run against the uint8 reference: its
    unsigned narrowing or clamp replaced by the int8 kernel's signed one is reported."""
    out, manifest = generated
    index = next(i for i, k in enumerate(manifest["sme_kernels"])
                 if k["epilogue"] == "requant_u8")
    proc = _mutated_run(generated, tmp_path, index,
                        lambda t: _replace_inst(t, statement, encode(replacement), count=-1))
    assert proc.returncode == 1 and "expected" in proc.stdout, proc.stdout[-2000:]
