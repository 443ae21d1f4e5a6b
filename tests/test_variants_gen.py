"""Generator side of the run-time kernel variants: core classes (gen.cores.CORE_CLASSES), which
class families a CPU=generic build emits (only where the kernel differs from the generic one),
their names and manifest entries, and that CPU= does not take class names."""
from __future__ import annotations

import json

from gen import gemv
from gen.cores import CORE_CLASSES, CORES, CPU_NAMES, GENERIC, core_class, cores_for
from gen.emit import Kernel
from gen.generate_cli import _same_kernel, gains_on_class, generate, main as generate_main
from gen.schedule import targets


def test_every_core_in_exactly_one_class():
    for name in CORES:
        assert sum(name in cpus for cpus in CORE_CLASSES.values()) == 1
        assert core_class(name) in CORE_CLASSES
        assert CORES[name].in_order == (core_class(name) == "inorder")
    assert core_class(GENERIC) == GENERIC
    assert [c.name for c in cores_for("ooo")] == list(CORE_CLASSES["ooo"])


def test_class_schedules_are_judged_on_their_cores():
    class Mac:   # targets() reads .kind and .instruction only
        kind, instruction = "mac", "fmla_f32"
    assert [c.name for c in targets([Mac()], "ooo")] == list(CORE_CLASSES["ooo"])
    assert [c.name for c in targets([Mac()], "inorder")] == list(CORE_CLASSES["inorder"])
    assert [c.name for c in targets([Mac()], GENERIC)] == [c.name for c in CORES.values()
                                                          if c.in_order]


def test_cpu_option_takes_no_class_name(tmp_path, capsys):
    for cls in CORE_CLASSES:
        assert cls not in CPU_NAMES
        assert generate_main(["--arch", "v8", "--cpu", cls, "--out", str(tmp_path / cls)]) == 2
        assert "unknown CPU" in capsys.readouterr().err


def test_same_kernel_ignores_names_and_the_schedule_comment():
    a = Kernel("ts_k_8x8", "ts_k_8x8.S", "// schedule for CPU generic.\nts_k_8x8:\n  fmla v0\n", {})
    b = Kernel("ts_k_8x8_ooo", "ts_k_8x8_ooo.S",
               "// schedule for CPU ooo.\nts_k_8x8_ooo:\n  fmla v0\n", {})
    c = Kernel("ts_k_8x8_ooo", "ts_k_8x8_ooo.S",
               "// schedule for CPU ooo.\nts_k_8x8_ooo:\n  fmla v1\n", {})
    assert _same_kernel(a, b) and not _same_kernel(a, c)


def test_variants_only_where_the_class_gains():
    # fp32: the generic 8x12 has 24 accumulators, N2 / V1 need 8 / 16: the ooo tile (14x8)
    # would gain nothing; bfmmla: generic 8x8x4 has 16, V1 needs 20: the ooo 12x8x4 gains
    assert not gains_on_class("fmla_f32", "ooo")
    assert gains_on_class("bfmmla", "ooo")


def test_v8_build_holds_no_variants_and_names_them_by_class():
    files = generate("v8")
    kernels = json.loads(files["manifest.json"])["kernels"]
    # fmla and smlal, then their GEMV / small-M kernels, then the column tails (gen/ntail.py):
    # fmla's one, smlal's two (4 and 8 of its 12 columns);
    # smlal's 8x12 k-loop has too few MACs an iteration to hide a column of the pipelined
    # requantisation (gen/strip_pipe.py peeled), so no out-of-order variant
    assert [(k["role"], k["core_class"]) for k in kernels] == \
        [("main", GENERIC)] * 2 + [("gemv", GENERIC)] * 2 + [("ntail", GENERIC)] * 3
    assert [k["symbol"] for k in kernels if k["role"] == "ntail"] == [
        "ts_gemm_f32_fmla_8x8x1", "ts_gemm_s8s32_smlal_8x4x1", "ts_gemm_s8s32_smlal_8x8x1"]
    # a named CPU builds no variants; its kernels carry its class
    named = json.loads(generate("v8", cpu="neoverse-n2")["manifest.json"])["kernels"]
    assert [(k["role"], k["core_class"]) for k in named] == \
        [("main", "ooo")] * 2 + [("gemv", "ooo")] * 2 + [("ntail", "ooo")] * 3


def test_variant_shares_the_generic_gemv_kernel_with_its_own_dispatch_numbers():
    manifest = json.loads(generate("v86")["manifest.json"])
    variants = [k for k in manifest["kernels"] if k["role"] == "core_class"]
    # the requantising instructions: the generic tile with the ooo class's pipelined strip
    # (test below)
    assert sorted(k["symbol"] for k in variants) == [
        "ts_gemm_bf16f32_bfmmla_12x8x4_ooo", "ts_gemm_s8s32_sdot_8x12x4_ooo",
        "ts_gemm_s8s32_smmla_8x8x8_ooo", "ts_gemm_u8s8s32_usmmla_8x8x8_ooo"]
    v = next(k for k in variants if k["instruction"] == "bfmmla")
    small = next(k for k in manifest["kernels"]
                 if k["role"] == "gemv" and k["instruction"] == "bfmmla")
    main = next(k for k in manifest["kernels"]
                if k["role"] == "main" and k["instruction"] == "bfmmla")
    assert small["serves"] == main["symbol"]
    # the 2-row GEMV tile serves M <= 2 next to either tile; the narrow-B rule compares it with
    # the variant's own k-step (gen.tiling's instruction count: 34 for 12x8x4, 18 for 8x8x4)
    choice = gemv.choose("bfmmla", v["ep"], v["hp"], v["strategy"], cpu=GENERIC)
    assert (v["gemv_max_m"], v["gemv_main_step_instructions"]) == \
        (choice.max_m, choice.main_step_instructions) == (2, 34)
    assert main["ep"] * main["hp"] < v["ep"] * v["hp"] and \
        small["main_step_instructions"] < v["gemv_main_step_instructions"]


def test_ooo_requant_variants_keep_the_tile_and_pipeline_the_strip():
    """The out-of-order class's variants of the requantising instructions: the generic tile
    (the same packed panels) whose requant strips requantise on the integer pipes
    (gen/strip_pipe.py); the generic and in-order builds keep gen/strip.py's strip."""
    files = generate("v86")
    kernels = json.loads(files["manifest.json"])["kernels"]
    for inst in ("smmla", "usmmla", "sdot"):
        main = next(k for k in kernels if k["role"] == "main" and k["instruction"] == inst)
        ooo = next(k for k in kernels if k["role"] == "core_class" and k["instruction"] == inst)
        assert (ooo["ep"], ooo["hp"], ooo["lp"], ooo["core_class"]) == \
            (main["ep"], main["hp"], main["lp"], "ooo")
        for kernel, pipelined in ((main, False), (ooo, True)):
            requants = [v for v in kernel["variants"] if v["epilogue"].startswith("requant")]
            assert requants
            for requant in requants:
                text = files[requant["file"]]
                assert ("KQ_E_LOOP:" in text) == pipelined, requant["symbol"]
                assert ("smaddl" in text) == pipelined
    # smlal (Armv8.0): 48 MACs an iteration, fewer than a column's ~100 instructions
    assert not [k for k in kernels if k["role"] == "core_class" and k["instruction"] == "smlal"]
