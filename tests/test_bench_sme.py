"""The SME bench section (bench/sme.py, bench/sme_model.py): instruction classes of real encoder
words, the model's arithmetic on hand-computed mixes, a run's summary from synthetic blocks,
and the report section (targets marked, an earlier section replaced)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from bench import sme, sme_model
from bench import symbols as sym
from bench.sme_model import APPLE_M4, classify_word, estimate
from bench.tbcount import Block
from cross import ROOT
from encoder import encode
from gen.registry import BY_KEY


@pytest.mark.parametrize("text,cls", [
    ("fmopa za0.s, p0/m, p1/m, z0.s, z1.s", "mopa"),
    ("fmopa za3.s, p7/m, p7/m, z31.h, z30.h", "mopa"),
    ("bfmopa za1.s, p0/m, p0/m, z2.h, z3.h", "mopa"),
    ("smopa za2.s, p0/m, p0/m, z4.b, z5.b", "mopa"),
    ("usmopa za3.s, p0/m, p0/m, z4.b, z5.b", "mopa"),
    ("fmops za0.s, p0/m, p0/m, z0.s, z1.s", "mopa"),
    ("ld1w {z0.s}, p0/z, [x0]", "load"),
    ("ld1w {z3.s}, p0/z, [x1, #3, mul vl]", "load"),
    ("ld1b {z0.b}, p0/z, [x0, x1]", "load"),
    ("ld1h {z0.h}, p0/z, [x0, #1, mul vl]", "load"),
    ("ld4w {z0.s-z3.s}, p0/z, [x0]", "load"),
    ("ld1rw {z0.s}, p0/z, [x0]", "load"),
    ("st1w {z0.s}, p0, [x0]", "store"),
    ("st1b {z0.b}, p0, [x0]", "store"),
    ("ld1w {za0h.s[w12, 0]}, p0/z, [x0, x1, lsl #2]", "za_move"),
    ("st1w {za3v.s[w15, 3]}, p7, [x0, x1, lsl #2]", "za_move"),
    ("mova z0.s, p0/m, za0h.s[w12, 0]", "za_move"),
    ("mova za0v.s[w12, 0], p0/m, z0.s", "za_move"),
    ("addha za3.s, p0/m, p1/m, z6.s", "za_move"), ("addva za0.s, p0/m, p0/m, z0.s", "za_move"),
    ("tbl z27.b, {z27.b}, z7.b", "other"), ("index z2.s, #0, #4", "other"),
    ("zero {za}", "za_zero"),
    ("smstart", "smstart"), ("smstop", "smstart"), ("smstart sm", "smstart"),
    ("smstop za", "smstart"),
    ("ptrue p0.s", "other"), ("cntw x0", "other"), ("addvl x0, x0, #1", "other"),
    ("whilelt p0.s, x0, x1", "other"), ("fadd z0.s, z1.s, z2.s", "other"),
])
def test_classes_of_encoder_words(text, cls):
    assert classify_word(encode(text)) == cls


@pytest.mark.parametrize("word,cls", [(0xD503201F, "other"),    # nop
                                      (0xF9400000, "other"),    # ldr x0, [x0]
                                      (0x4EA11C20, "other"),    # mov v0.16b, v1.16b
                                      (0x3DC00000, "other")])   # ldr q0, [x0]: NEON, not SVE
def test_base_and_neon_words_are_other(word, cls):
    assert classify_word(word) == cls


def test_estimate_arithmetic_by_hand():
    # fp32 at S = 16: 256 MACs per FMOPA, 1 FMOPA / cycle -> peak 256 MACs / cycle.
    # loads 1200 / 1 > MOPAs 1000 / 1 > moves 100 / 1 = other (300 + 50 + 50) / 4
    e = estimate(APPLE_M4, "fmopa_f32",
                 {"mopa": 1000, "load": 1200, "za_move": 100, "other": 300, "za_zero": 50,
                  "smstart": 50}, core_instructions=800, useful_macs=1000 * 256,
                 macs_per_mopa=256)
    assert e.bound == "load" and e.streaming_cycles == 1200 and e.core_cycles == 200
    assert e.cycles == 1400 and e.peak_macs_per_cycle == 256
    assert e.macs_per_cycle == pytest.approx(256000 / 1400)
    assert e.percent_of_peak == pytest.approx(100 * 256000 / 1400 / 256)
    # int8: SMOPA at half an instruction per cycle, 4 * 16 * 16 = 1024 MACs each
    e = estimate(APPLE_M4, "smopa", {"mopa": 1000, "load": 1250}, core_instructions=0,
                 useful_macs=1000 * 1024, macs_per_mopa=1024)
    assert e.bound == "mopa" and e.cycles == 2000 and e.percent_of_peak == pytest.approx(100.0)
    # nothing streaming: every cycle is the core's
    e = estimate(APPLE_M4, "bfmopa", {}, core_instructions=40, useful_macs=0, macs_per_mopa=512)
    assert e.cycles == 10 and e.percent_of_peak == 0


def test_model_rates_cover_every_sme_path_and_cite_sources():
    paths = {t.sme.instruction for t in BY_KEY.values() if t.sme}
    assert paths <= set(APPLE_M4.mopa_per_cycle)
    assert any("2409.18779" in s for s in APPLE_M4.sources)


def test_summary_of_synthetic_blocks():
    # kernel: a loop block of 4 fmopa + 4 ld1w + subs/b.ne run 512 times, a prologue once;
    # packing: one block of 10 instructions run 100 times; setup (harness) not counted
    words = lambda texts: b"".join(encode(t).to_bytes(4, "little") for t in texts)  # noqa: E731
    loop = words(["ld1w {z0.s}, p0/z, [x0]", "ld1w {z1.s}, p0/z, [x0, #1, mul vl]",
                  "ld1w {z2.s}, p0/z, [x1]", "ld1w {z3.s}, p0/z, [x1, #1, mul vl]"]
                 + ["fmopa za0.s, p0/m, p0/m, z0.s, z2.s"] * 4) + bytes(8)   # + 2 "other" words
    prologue = words(["smstart", "zero {za}", "cntw x6"])
    table = sym.SymbolTable([sym.Symbol(0x1000, 0x100, "ts_gemm_f32_fmopa_2vlx2vlx4"),
                             sym.Symbol(0x2000, 0x100, "pack_panel_from"),
                             sym.Symbol(0x3000, 0x100, "bench_fill")])
    blocks = [Block(0x1000, 3, 1, prologue), Block(0x1010, 10, 512, loop),
              Block(0x2000, 10, 100, bytes(40)), Block(0x3000, 10, 7, bytes(40))]
    r = sme.summarise(blocks, table, {"ts_gemm_f32_fmopa_2vlx2vlx4"}, BY_KEY["f32"], 512)
    assert r["mopas"] == 2048 and r["streaming"]["load"] == 2048
    assert r["streaming"]["other"] == 512 * 2 + 1 and r["streaming"]["smstart"] == 1
    assert r["kernel_instructions"] == 3 + 10 * 512 and r["core"]["packing"] == 1000
    assert r["total_instructions"] == 3 + 5120 + 1000
    assert r["mopa_share"] == pytest.approx(100 * 2048 / 6123)
    # 512^3 useful MACs over 2048 MOPAs of 16 * 16: a synthetic mismatch, computed as such
    assert r["useful_per_mopa"] == pytest.approx(100 * 512 ** 3 / (2048 * 256))
    assert r["estimate"]["bound"] == "mopa" and r["estimate"]["core_cycles"] == 250


def _result(dtype, svl, share, useful, peak):
    t = BY_KEY[dtype]
    return dict(dtype=dtype, label=t.bench_label, svl_bits=svl, kernels=["k"],
                streaming=dict.fromkeys(sme_model.CLASSES, 1), core={"packing": 5, "other": 0},
                core_instructions=5, total_instructions=12, mopas=1, mopa_share=share,
                kernel_mopa_share=share, useful_per_mopa=useful,
                estimate=dict(bound="mopa", macs_per_cycle=1.0, peak_macs_per_cycle=2.0,
                              percent_of_peak=peak))


def test_runs_label_the_requantising_and_the_raw_int8_rows():
    runs = {dtype: label for _, dtype, label in sme.sme_runs()}
    assert runs["s8"].startswith("int8 → int8 (requantising")
    assert runs["s8s32"].startswith("int8 → int32 (raw")
    assert [dtype for _, dtype, _ in sme.sme_runs("s8s32")] == ["s8s32"]
    # every run's dtype is one bench/workloads.c knows
    text = (ROOT / "bench" / "workloads.c").read_text()
    assert all(f'strcmp(type, "{dtype}")' in text or dtype.startswith(("f16", "f32", "bf16"))
               for dtype in runs)


def test_report_section_marks_targets_and_replaces_itself(tmp_path):
    raw = dict(_result("s8", 512, 60.0, 100.0, 95.0), dtype="s8s32",
               label=sme.RAW_RUNS["s8"][1])
    results = [_result("s8", 512, 55.0, 100.0, 90.0), raw, _result("bf16", 512, 40.0, 80.0, 50.0),
               _result("f32", 128, 10.0, 100.0, 20.0),
               dict(dtype="u8s8", svl_bits=512, error="qemu failed")]
    md = tmp_path / "report.md"
    md.write_text("# report\n\nearlier text\n")
    sme.write(results, {"qemu": "q"}, md)
    first = md.read_text()
    assert first.startswith("# report\n\nearlier text\n") and first.count(sme.BEGIN) == 1
    s8_row = next(line for line in first.splitlines() if line.startswith("| int8 |"))
    raw_row = next(line for line in first.splitlines() if line.startswith("| int8 → int32"))
    # the share and peak targets are the requantising row's: the raw row's cells carry no mark
    assert "| 60.0 % (60.0 %) |" in raw_row and raw_row.endswith("| 95.0 % |")
    assert "55.0 % ✓" in s8_row and "90.0 % ✓" in s8_row and "100.0 % ✓" in s8_row
    bf16_row = next(line for line in first.splitlines() if line.startswith("| bf16 |"))
    assert "40.0 % ✗" in bf16_row and "80.0 % ✗" in bf16_row and "50.0 % ✗" in bf16_row
    assert "u8s8 SVL 512: qemu failed" in first
    assert "| fp32 | 10.0 / 100.0 / 20.0 % |" in first
    sme.write(results[:1], {"qemu": "q"}, md)             # a second run replaces the section
    second = md.read_text()
    assert second.count(sme.BEGIN) == 1 and "qemu failed" not in second
    assert (tmp_path / "report_sme.json").exists()


@pytest.mark.parametrize("args,message", [(["--svl", "100"], "--svl 100"),
                                          (["--only", "u8u32"], "matches no SME type")])
def test_sme_cli_errors_before_profiling(args, message, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "bench", "--sme", *args, "--out-dir", str(tmp_path),
                           "--report", str(tmp_path / "report.md")],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and message in proc.stderr and "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []
