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
    # fmla and smlal, then their GEMV / small-M kernels, then fmla's column tail (gen/ntail.py)
    assert [(k["role"], k["core_class"]) for k in kernels] == \
        [("main", GENERIC)] * 2 + [("gemv", GENERIC)] * 2 + [("ntail", GENERIC)]
    # a named CPU builds no variants; its kernels carry its class
    named = json.loads(generate("v8", cpu="neoverse-n2")["manifest.json"])["kernels"]
    assert [(k["role"], k["core_class"]) for k in named] == \
        [("main", "ooo")] * 2 + [("gemv", "ooo")] * 2 + [("ntail", "ooo")]


def test_variant_shares_the_generic_gemv_kernel_with_its_own_dispatch_numbers():
    manifest = json.loads(generate("v86")["manifest.json"])
    variants = [k for k in manifest["kernels"] if k["role"] == "core_class"]
    assert [k["symbol"] for k in variants] == ["ts_gemm_bf16f32_bfmmla_12x8x4_ooo"]
    v = variants[0]
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
