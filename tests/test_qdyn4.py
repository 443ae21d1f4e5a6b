"""qdyn kernels with the fp32 epilogue inside (gen/qdyn4.py: int4 scale blocks and int8 per
channel; gen/qdyn4_rl.py: int4 per channel): the solver's register and operation accounting, the
scheduled bodies, the argument block layout (generator, kernels.h and the drivers' header agree),
and that every kernel assembles (GNU as -march=armv8-a, clang ELF / Mach-O / COFF) and passes
`python3 -m encoder verify`. Their results (bit-identical to the scalar reference of
tilesmith.h's formulas on every path and feature mask) are tests/test_drivers_qdyn.py's."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from cross import CLANG, GCC, ROOT
from gen import epilogue as ep_mod
from gen import qdyn4
from gen.cores import CORES
from gen.drivers import DRIVERS
from gen.emit import environment
from gen.loop import check_same_dependencies
from gen.schedule import Insn, op_class, schedule_loop
import kernel_build

from gen import qdyn4_dot, qdyn4_rl

VARIANTS = [("blocked", True)]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    return lambda arch, inst="auto": kernel_build.cached_output(tmp_path_factory, arch, inst)


def test_register_accounting_counts_unpack_mask_and_sums():
    # 8x4 blocked: 8 int32 + 8 fp32 sums + 8 A + 2 packed B + 2 low nibbles + mask = 29,
    # block epilogue: 16 + mask + 4 -zp + 2 x 2 column scales / sums = 25 (no row scales, no
    # temporary: the row scale follows the last block, the fmul works in place)
    assert qdyn4.registers_needed(8, 4) == 29
    assert qdyn4.registers_needed(8, 8) > 32       # 16 + 16 sums: does not fit
    for ep, hp, _ in qdyn4.candidates("smmla", "generic"):
        assert qdyn4.registers_needed(ep, hp) <= 32
    # two channels per byte, 16 rows x 1 panel: 16 R/L accumulators + 8 A + raw and low
    # nibbles + mask = 27; epilogue 16 + mask + 8 scales + 2 column scales + 2 temps = 29
    assert qdyn4_rl.registers_needed(16, 1) == 29
    # decode, 7 panels: 14 accumulators + mask + 1 scale + 14 column scales + 2 temps = 32
    assert qdyn4_rl.registers_needed(2, 7) == 32
    for decode in (False, True):
        for ep, panels, _ in qdyn4_rl.candidates("smmla", "generic", decode):
            assert qdyn4_rl.registers_needed(ep, panels) <= 32


def test_two_channels_per_byte_choices_and_counts():
    pre, dec = qdyn4_rl.solve("smmla"), qdyn4_rl.solve("smmla", decode=True)
    assert (pre.ep, pre.hp, dec.ep, dec.hp) == (16, 4, 2, 28)
    for plan in (pre, dec):
        regs = list(plan.a_regs + plan.b_packed + plan.b_low + (plan.mask,) + plan.acc_regs)
        assert len(set(regs)) == len(regs) and max(regs) < 32
        body = qdyn4_rl.inner_body(plan)     # two 8-k steps
        c = qdyn4_rl.step_counts(plan.ep, plan.panels)
        assert sum(op_class(i) == "smmla" for i in body) == 2 * c["mac"]
        assert sum(i.text.startswith("and ") for i in body) == 2 * c["unpack"] == 2 * plan.panels
    # decode bound from the mix: per 16 bytes a load, an and, two smmla (N2: 2 vector pipes)
    assert round(qdyn4_rl.compute_bound(CORES["neoverse-n2"]), 2) == 10.67
    assert round(qdyn4_rl.compute_bound(CORES["neoverse-v1"]), 2) == 21.33


@pytest.mark.parametrize("decode", [False, True])
def test_two_channels_per_byte_epilogue_and_schedule(decode):
    plan = qdyn4_rl.solve("smmla", decode=decode)
    body = qdyn4_rl.inner_body(plan)
    check_same_dependencies(body, schedule_loop(body, "generic"))
    ops = [i.text for i in qdyn4_rl.epilogue_body(plan) if i.text.split()[0] in
           ("sub", "scvtf", "fmul")]
    for j in range(0, len(ops), 7):       # per row pair and panel, the header's order
        sub, s_lo, s_hi, t0, t1, u0, u1 = ops[j:j + 7]
        hi, lo = re.match(r"sub (v\d+)\.4s, \1\.4s, (v\d+)\.4s", sub).groups()
        assert s_lo == f"scvtf {lo}.4s, {lo}.4s" and s_hi == f"scvtf {hi}.4s, {hi}.4s, #4"
        ta, tb = (re.match(r"fmul (v\d+)\.4s", t).group(1) for t in (t0, t1))
        assert u0 == f"fmul {lo}.4s, {ta}.4s, {lo}.4s" and u1 == f"fmul {hi}.4s, {tb}.4s, {hi}.4s"


def test_int8_weights_accounting_and_choice():
    """int8 weights (one block per channel): no unpack, no mask, the fp32 results in place of
    the accumulators, so 8x8 fits: 16 accumulators + 8 A + 8 B = 32."""
    assert qdyn4.registers_needed(8, 8, "s8") == 32
    assert qdyn4.registers_needed(8, 12, "s8") > 32
    for ep, hp, _ in qdyn4.candidates("smmla", "generic", "s8"):
        assert qdyn4.registers_needed(ep, hp, "s8") <= 32
    plan = qdyn4.solve("smmla", "generic", "s8")
    assert (plan.ep, plan.hp, plan.blocked, plan.mask) == (8, 8, False, None)
    assert plan.sum_regs == plan.acc_regs
    regs = list(plan.a_regs + plan.b_packed + plan.b_low + plan.acc_regs)
    assert len(set(regs)) == len(regs) == 32
    c = qdyn4.block_counts(8, 8, 32, "s8")
    # 2 k-steps of 16 k: 2 x (8 A + 8 B) loads, 2 x 32 smmla, no unpack; mul, scvtf, 2 fmul
    assert (c["mac"], c["unpack"], c["epilogue"]) == (64, 0, 64)
    body = qdyn4.tail_body(plan)
    kinds = [op_class(i) for i in body]
    assert kinds.count("smmla") == c["mac"]
    assert not any(i.text.startswith(("shl", "and", "fadd", "mul")) for i in body)
    assert sum(i.text.startswith(("scvtf", "fmul")) for i in body) == 3 * 16
    # the rotated ld1 form: per LD1_STEPS (3) k-steps, each 8-k half of A and B from its own
    # pointer (A: ep * 8 bytes per half; B: hp * 8), every pointer advanced by the 3 k-steps;
    # x10-x17 for the first two (the tail's), x0 written after every A pointer read it
    assert qdyn4.ld1_form_fits(plan) and qdyn4.LD1_STEPS == 3
    groups = qdyn4.ld1_groups(plan)
    offsets = {key: [(base, off) for _, _, base, off in runs] for key, runs in groups.items()}
    assert offsets == {(s, h): [("x0", 128 * s + 64 * h), ("x1", 128 * s + 64 * h)]
                       for s in range(3) for h in (0, 1)}
    pointers = [p for runs in groups.values() for p, _, _, _ in runs]
    assert pointers == [f"x{n}" for n in range(10, 18)] + ["x2", "x9", "x7", "x0"]
    setup = [i.text for i in qdyn4.ld1_setup(plan)]
    writes_x0 = next(k for k, t in enumerate(setup) if t.startswith("add x0,"))
    assert all(", x0," not in t for t in setup[writes_x0 + 1:])
    inner = qdyn4.inner_body(plan)
    assert sum(i.text.startswith("ld1 ") for i in inner) == 12
    assert sum(i.kind == "mac" for i in inner) == 96
    assert sorted(i.text for i in inner if i.text.startswith("add ")) == sorted(
        f"add {p}, {p}, #384" for p in pointers)
    assert [i.text for i in inner[-2:]] == ["subs x8, x8, #3", "b.hs K_INNER"]
    # the single k-steps: the first step's four pointers, then the tail's second-step pointers
    single = qdyn4.single_body(plan)
    assert sum(i.kind == "mac" for i in single) == 32
    assert sorted(i.text for i in single if i.text.startswith("add ")) == sorted(
        f"add x{n}, x{n}, #128" for n in range(10, 14))
    assert [i.text for i in qdyn4.resync(plan)] == [
        "add x14, x10, #128", "add x15, x11, #128", "add x16, x12, #128", "add x17, x13, #128"]
    # the store's argument loads first at K_STORE (args in x5 from entry: no ld1 pointer),
    # none left in store_setup
    assert "x5" not in pointers
    assert [i.text for i in qdyn4.store_args_early()] == ["ldr x15, [x5, #56]",
                                                          "ldp x9, x10, [x5, #0]"]
    late = [i.text for i in ep_mod.store_setup(plan.tile_plan(), 64, 80, 4, require_args=True,
                                               rem_loaded=True)]
    assert not any(t.startswith(("ldr", "ldp")) for t in late)
    assert late[:2] == ["mov x7, #0", "cmp x10, #8"]
    # the handle's per-column arrays paired (c0 c1 c0 c1): the tail's column scales and the
    # prologue's sums one `ldr q` per column pair at an immediate offset (no address add, no
    # ld1r); the tail's k-steps from the first two steps' pointers; the bias pointer into x2
    # (the third step's pointer, which the tail does not read: emitted first, args_head) and
    # cmin / cmax after the tail's last reads of x12-x13
    assert qdyn4.column_bytes(plan) == 2 * 4 * plan.hp
    texts = [i.text for i in body]
    assert [t for t in texts if t.startswith("ldr q") and "[x11," in t] == [
        f"ldr q{r}, [x11, #{256 + 16 * c}]" for c, r in enumerate(qdyn4.epilogue_regs(plan)[1])]
    assert not any(t.startswith(("ld1r", "add ")) for t in texts)
    tail_ptrs = {u for i in body if i.kind == "load" for u in i.uses}
    assert tail_ptrs <= {f"x{n}" for n in range(10, 18)} | {"x5", "x6"}
    assert [i.text for i in qdyn4.args_head(plan)] == ["ldr x2, [x5, #32]",
                                                       "ldp w12, w13, [x5, #40]"]
    assert not any("x2" in i.uses or "x2" in i.defs for i in body)
    args = [k for k, t in enumerate(texts) if t.startswith("ldp w12, w13, [x5")]
    reads = [k for k, i in enumerate(body) if {"x12", "x13"} & set(i.uses)]
    assert len(args) == 1 and max(reads) < min(args)
    pro = [i.text for i in qdyn4.prologue(plan)]
    step = pro.index("add x1, x1, #64")
    assert [t for t in pro if "[x1," in t] == [f"ldr q{8 + c}, [x1, #{16 * c}]" for c in range(4)]
    assert all(pro.index(f"ldr q{8 + c}, [x1, #{16 * c}]") < step for c in range(4))
    assert pro[step + 1:step + 3] == ["lsl x8, x7, #1", "subs x8, x8, #5"]
    assert [i.text for i in qdyn4.loop_entry(plan)] == ["b.lo K_REM"]
    assert pro.index("subs x8, x8, #5") < pro.index("add x7, x0, #320")
    final, _, _ = qdyn4.final_code(plan, hoist=True, head=False)
    assert not any("[x5" in i.text for i in final)
    assert [i.text for i in final if "[x2," in i.text] == ["ldr q14, [x2, #0]", "ldr q15, [x2, #16]"]
    # the next half's loads sit among this half's smmla and write only the other half's
    # registers (the results: tests/test_drivers_qdyn.py)
    for i, insn in enumerate(inner):
        if insn.kind == "load":
            later = [j for j in inner[i + 1:] if j.kind == "mac"][:1]
            assert not later or not set(insn.defs) & set(later[0].uses)
    end = [Insn("b.ne 1b", "branch", uses=("nzcv",))]
    check_same_dependencies(body + end, schedule_loop(body, "generic") + end)
    # the prologue: every load first (the first half's A and B among them), then the 16
    # zero-point multiplies, whose operands no load after theirs overwrites
    setup = [i.text for i in qdyn4.prologue(plan)]
    first = ["ld1 {v0.16b-v3.16b}, [x10]", "ld1 {v12.16b-v15.16b}, [x11]"]
    assert set(first) <= set(setup)
    muls = [k for k, t in enumerate(setup) if t.startswith("mul ")]
    assert len(muls) == 16 and muls == list(range(len(setup) - 16, len(setup)))
    read = {int(r) for t in setup[-16:] for r in re.findall(r"v(\d+)\.4s", t.split(",", 1)[1])}
    assert read and not read & (set(range(0, 4)) | set(range(12, 16)))


def test_int8_epilogue_order_is_the_headers():
    """Per accumulator: scvtf (no fraction bits), t = scale * wscale, s = u = t * (float)acc in
    place (one block: the header's s = u_0), no fused multiply-add."""
    body = qdyn4.tail_body(qdyn4.solve("smmla", "generic", "s8"))
    ops = [i.text for i in body if i.text.startswith(("scvtf", "fmul"))]
    assert len(ops) == 48
    for j in range(0, len(ops), 3):
        scvtf, t, u = ops[j:j + 3]
        acc = re.match(r"scvtf (v\d+)\.4s, \1\.4s$", scvtf).group(1)
        tr = re.match(r"fmul (v\d+)\.4s, v\d+\.4s, v\d+\.4s", t).group(1)
        assert u == f"fmul {acc}.4s, {tr}.4s, {acc}.4s"
    assert not any(re.match(r"f[nm]*(mla|mls|madd|msub)", i.text) for i in body)


@pytest.mark.parametrize("name,blocked", VARIANTS)
def test_solver_choice_and_its_registers(name, blocked):
    plan = qdyn4.solve("smmla", "generic")
    assert (plan.ep, plan.hp) == (8, 4)
    regs = list(plan.a_regs + plan.b_packed + plan.b_low + (plan.mask,) + plan.acc_regs)
    regs += plan.sum_regs
    assert len(set(regs)) == len(regs) and max(regs) < 32
    scale, ws, zp, bsum, temps = qdyn4.epilogue_regs(plan)
    assert temps and not set(scale + ws + zp + bsum + temps) & set(plan.acc_regs + plan.sum_regs)


def test_counts_follow_the_kernel_mix():
    c = qdyn4.block_counts(8, 4, 32)
    # bl 32 = 2 k-steps of 16 k: 2 x (8 A + 2 B) loads, 2 x 16 smmla, 2 x 4 unpack; per
    # accumulator mul, scvtf, fmul, fadd
    assert (c["mac"], c["unpack"], c["epilogue"]) == (32, 8, 32)
    body = qdyn4.tail_body(qdyn4.solve("smmla"))
    kinds = [op_class(i) for i in body]
    assert kinds.count("smmla") == c["mac"]
    assert sum(i.text.startswith(("shl", "and")) for i in body) == c["unpack"]
    assert sum(i.text.startswith(("mul", "scvtf", "fmul", "fadd")) for i in body) == c["epilogue"]
    assert kinds.count("vint") + kinds.count("vfp") == c["unpack"] + c["epilogue"]


@pytest.mark.parametrize("name,blocked", VARIANTS)
def test_scheduled_bodies_keep_dependencies(name, blocked):
    plan = qdyn4.solve("smmla", "generic")
    for body in (qdyn4.inner_body(plan), qdyn4.tail_body(plan)):
        scheduled = schedule_loop(body, "generic")
        if body[-1].kind != "branch":     # the per-channel tail is no loop: no branch to keep
            end = Insn("b.ne 1b", "branch", uses=("nzcv",))
            body, scheduled = body + [end], scheduled + [end]
        check_same_dependencies(body, scheduled)


def test_scale_block_tail_loads_column_pairs_whole_and_loops_on_itself():
    """int4 scale blocks (smmla): the block scales and sums are one `ldr q` per column pair from
    the paired (c0 c1 c0 c1) arrays after the block's k-steps (no ld1r, which takes a vector
    micro-op on N2 / V1), and the tail ends the block loop itself (bl = 32: b.eq K_TAIL)."""
    plan = qdyn4.solve("smmla")
    body = qdyn4.tail_body(plan)
    texts = [i.text for i in body]
    assert not any(t.startswith("ld1r") for t in texts)
    ws = 2 * plan.b_step_bytes()                       # after the block's last two k-steps
    pairs = qdyn4.column_bytes(plan)
    assert pairs == plan.hp * 8
    columns = sorted(int(m.group(1)) for t in texts
                     for m in [re.match(r"ldr q\d+, \[x1, #(\d+)\]", t)]
                     if m and int(m.group(1)) >= ws)
    assert columns == [ws + 16 * c for c in range(2 * plan.cp)]     # scales, then next sums
    assert texts[-3:] == ["subs x2, x2, #1", "ccmp x7, #1, #0, ne", "b.eq K_TAIL"]
    assert f"add x1, x1, #{2 * plan.b_step_bytes() + 2 * pairs}" in texts


def test_epilogue_order_is_the_headers():
    """The header's block order: per accumulator and block scvtf #4, v = wscale * (float)acc,
    s = s + v; after the last block y = scale[m] * s once per fp32 sum (no FMA)."""
    plan = qdyn4.solve("smmla")
    body = qdyn4.tail_body(plan)
    ops = [i.text for i in body if i.text.startswith(("scvtf", "fmul", "fadd"))]
    assert len(ops) == 3 * plan.rp * plan.cp
    for j in range(0, len(ops), 3):
        scvtf, v, s = ops[j:j + 3]
        acc = re.match(r"scvtf (v\d+)\.4s, \1\.4s, #4", scvtf).group(1)
        assert re.match(rf"fmul {acc}\.4s, {acc}\.4s, v\d+\.4s$", v)
        assert re.match(rf"fadd (v\d+)\.4s, \1\.4s, {acc}\.4s$", s)
    assert not any(re.match(r"f[nm]*(mla|mls|madd|msub)", i.text) for i in body)
    final = [i.text for i in qdyn4.final_code(plan)[0]]
    scaled = [t for t in final if t.startswith("fmul")]
    assert sorted(re.match(r"fmul v(\d+)\.4s, v\1\.4s", t).group(1) for t in scaled) == sorted(
        str(s) for s in plan.sum_regs)
    first_fadd = next(k for k, t in enumerate(final) if t.startswith("fadd"))
    assert max(final.index(t) for t in scaled) < first_fadd      # y = scale * s, then + bias


def test_args_layout_agrees_with_the_drivers_header():
    header = (DRIVERS / "src" / "ts_pack_internal.h").read_text()
    struct = re.search(r"typedef struct ts_qdyn_args \{(.*?)\} ts_qdyn_args;", header, re.S)
    fields = re.findall(r"(\w+);\s*/\*\s*(\d+)", struct.group(1))
    assert [(n, int(o)) for n, o in fields] == [(n, o) for n, o, _, _ in qdyn4.ARGS_FIELDS]
    text = qdyn4.c_struct("ts_")
    assert "TS_QDYN_ARGS_DEFINED" in text and "TS_QDYN_ARGS_DEFINED" in header


def test_manifest_and_header_name_both_kernels(outputs):
    out, manifest = outputs("v86")
    q = manifest["qdyn_kernels"]
    assert [(k["symbol"], k["blocked"], k["decode"]) for k in q[:5]] == [
        ("ts_gemm_s8s4f32_smmla_8x4x16", True, False),
        ("ts_gemm_s8s4f32_smmla_2x12x16", True, True),
        ("ts_gemm_s8s4f32_smmla_16x4x8_pc", False, False),
        ("ts_gemm_s8s4f32_smmla_2x28x8_pc", False, True),
        ("ts_gemm_s8s8f32_smmla_8x8x16", False, False)]
    header = (out / "ts_kernels.h").read_text()
    for k in q:
        assert f"void {k['symbol']}(" in header
    dispatch = (out / "ts_dispatch.c").read_text()
    # name and function in the qdyn table of each smmla path: the generic kernel's and its
    # core-class variants' (the same panels; gen.registry dispatch_paths)
    smmla_paths = sum(1 for k in manifest["kernels"] if k["instruction"] == "smmla"
                      and k["role"] in ("main", "core_class"))
    assert smmla_paths == 2
    assert dispatch.count("ts_gemm_s8s4f32_smmla_8x4x16") == 2 * smmla_paths
    assert dispatch.count("ts_gemm_s8s8f32_smmla_8x8x16") == 2 * smmla_paths
    # no i8mm: the scale-block and per-channel kernels of the dotprod and Armv8.0 paths
    assert [(k["symbol"], k["instruction"], k["blocked"], k["decode"])
            for k in outputs("v82")[1]["qdyn_kernels"]] == [
        ("ts_gemm_s8s4f32_sdot_8x4x4", "sdot", True, False),
        ("ts_gemm_s8s4f32_sdot_1x20x4", "sdot", True, True),
        ("ts_gemm_s8s4f32_sdot_8x8x4_pc", "sdot", False, False),
        ("ts_gemm_s8s4f32_sdot_1x32x4_pc", "sdot", False, True),
        ("ts_gemm_s8s8f32_sdot_1x60x4", "sdot", False, True),     # gen/qdyn8_dot.py, kind 5
        ("ts_gemm_s8s4f32_sadalp_4x4x4", "smlal", True, False),
        ("ts_gemm_s8s4f32_sadalp_4x8x4_pc", "smlal", False, False),
        ("ts_gemm_s8s4f32_sadalp_1x8x4_pc", "smlal", False, True)]
    assert [k["instruction"] for k in outputs("v8")[1]["qdyn_kernels"]] == ["smlal"] * 3
    # the A k-step each kernel's int8 panel has (dispatch table ts_qdyn_kernel.lp)
    assert (q[5]["symbol"], q[5]["decode"], q[5]["weights"]) == (
        "ts_gemm_s8s8f32_smmla_2x16x16", True, "s8")
    assert [k["a_lp"] for k in q] == [8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4]
    assert [k["symbol"] for k in q[6:]] == [k["symbol"] for k in outputs("v82")[1]["qdyn_kernels"]]
    # the decode kernels read `panels` of their prefill kernel's panels (dispatch: qdyn kind 4)
    panels = {k["symbol"]: (k["panels"], k["hp"]) for k in q}
    assert panels["ts_gemm_s8s4f32_smmla_2x12x16"] == (3, 12)
    assert panels["ts_gemm_s8s4f32_sdot_1x20x4"] == (5, 20)
    assert panels["ts_gemm_s8s8f32_smmla_2x16x16"] == (2, 16)      # qdyn kind 5
    assert panels["ts_gemm_s8s8f32_sdot_1x60x4"] == (5, 60)        # kind 5 of the dotprod path
    assert "#define TS_QDYN_KERNEL_SDOT_S8_DECODE ts_gemm_s8s8f32_sdot_1x60x4" in header
    assert "#define TS_QDYN_KERNEL_SMMLA_S8_DECODE ts_gemm_s8s8f32_smmla_2x16x16" in header


@pytest.mark.parametrize("inst", ["auto", "never", "always"])
def test_kernels_assemble_and_verify(outputs, tmp_path, inst):
    out, manifest = outputs("v86", inst)
    for k in manifest["qdyn_kernels"]:     # every family (the v8 / v82 kernels are the same)
        src = out / k["file"]
        subprocess.run([GCC, "-march=armv8-a", "-c", src, "-o", tmp_path / "k.o"], check=True)
        for target, prefix in (("arm64-apple-macos", "_"), ("aarch64-pc-windows-msvc", ""),
                               ("aarch64-linux-gnu", "")):
            subprocess.run([CLANG, f"--target={target}", "-c", src, "-o", tmp_path / "c.o"],
                           check=True)
            nm = subprocess.run(["llvm-nm-19", "--defined-only", "--extern-only", tmp_path / "c.o"],
                                capture_output=True, text=True, check=True).stdout.split()
            assert nm[-2:] == ["T", prefix + k["symbol"]]
        if inst != "never":
            proc = subprocess.run([sys.executable, "-m", "encoder", "verify", str(src)],
                                  cwd=ROOT, capture_output=True, text=True)
            assert proc.returncode == 0, proc.stdout + proc.stderr


def test_callee_saved_registers_are_saved(outputs):
    out, manifest = outputs("v86")
    for k in manifest["qdyn_kernels"]:
        text = (out / k["file"]).read_text()
        used = {int(n) for n in re.findall(r"\bv(\d+)\.", text)}
        for r in range(8, 16):
            if r in used:
                assert re.search(rf"stp d\d+, d\d+, \[sp|str d{r}", text)
                assert f"d{r}" in text.split("K_DONE:")[1]
        assert not re.search(r"\bx(1[89]|2\d)\b", text.split("#endif", 2)[-1])


# ---- the per-channel kernels of the other MAC families (gen/qdyn4_rl.py FAMILIES) ----------------
@pytest.mark.parametrize("name", ["sdot", "smlal"])
def test_other_families_choices_registers_and_counts(name):
    pre, dec = qdyn4_rl.solve(name), qdyn4_rl.solve(name, decode=True)
    # sdot: 8 rows x 8 columns (16 accumulators, 2 A, raw + low, mask); decode 1 row x 4
    # panels (the tie at 2/3 of the peak, bound by the ands, broken by fewer registers);
    # smlal (smull / sadalp): 4 rows x 8 columns (16 pair-sum accumulators, 8 product
    # temporaries), decode 1 x 8
    want = {"sdot": ((8, 8), (1, 32)), "smlal": ((4, 8), (1, 8))}[name]
    assert ((pre.ep, pre.hp), (dec.ep, dec.hp)) == want
    assert dec.decode and not pre.decode
    for plan in (pre, dec):
        regs = list(plan.a_regs + plan.b_packed + plan.b_low + (plan.mask,) + plan.temps
                    + plan.acc_regs)
        assert len(set(regs)) == len(regs) and max(regs) < 32
        assert qdyn4_rl.registers_needed(plan.ep, plan.panels, name) <= 32
        body = qdyn4_rl.inner_body(plan)     # 16 k
        c = qdyn4_rl.step_counts(plan.ep, plan.panels, name)
        steps = 16 // plan.lp
        mnemonics = [i.text.split()[0] for i in body]
        if name == "sdot":
            assert mnemonics.count("sdot") == steps * c["mac"] == steps * 2 * plan.ep * plan.panels
        else:
            assert (mnemonics.count("smull") + mnemonics.count("smull2") == mnemonics.count("sadalp")
                    == steps * c["mac"] // 2 == steps * 4 * plan.ep * plan.panels)
            assert mnemonics.count("ld1r") == steps * plan.ep
        assert mnemonics.count("and") == steps * c["unpack"] == steps * plan.panels
        assert sum(i.kind == "load" for i in body) == steps * c["loads"]
        check_same_dependencies(body, schedule_loop(body, "generic"))
    # the accounting counts the unpack and its registers: one more panel than fits is refused
    assert qdyn4_rl.registers_needed(1, 8, "sdot") > 32 and qdyn4_rl.registers_needed(1, 7, "sdot") <= 32
    assert qdyn4_rl.registers_needed(12, 1, "sdot") > 32


def test_sdot_decode_bound_from_its_mix():
    """per 16 weight bytes a load, an and and two sdot: N2 (2 vector pipes) 10.67 bytes per
    cycle, V1 (4) 21.33, A55 (sdot and the 128-bit and 1 per cycle each) 5.33."""
    bound = {c: round(qdyn4_rl.compute_bound(CORES[c], instruction="sdot"), 2)
             for c in ("neoverse-n2", "neoverse-v1", "cortex-a510", "cortex-a55")}
    assert bound == {"neoverse-n2": 10.67, "neoverse-v1": 21.33, "cortex-a510": 10.67,
                     "cortex-a55": 5.33}


@pytest.mark.parametrize("name", ["sdot", "smlal"])
@pytest.mark.parametrize("decode", [False, True])
def test_other_families_epilogue_order(name, decode):
    """Per row and panel, the header's order as in the smmla kernels: R - L, scvtf (#4),
    t = scale * wscale (by element: the same product), u = t * (float)acc; no FMA."""
    plan = qdyn4_rl.solve(name, decode=decode)
    body = qdyn4_rl.epilogue_body(plan)
    if name == "smlal":                  # the pair sums first
        addp = [i.text for i in body if i.text.startswith("addp")]
        assert len(addp) == 2 * plan.rp * plan.panels
    ops = [i.text for i in body if i.text.split()[0] in ("sub", "scvtf", "fmul")]
    assert len(ops) == 7 * plan.rp * plan.panels
    for j in range(0, len(ops), 7):
        sub, s_lo, s_hi, t0, t1, u0, u1 = ops[j:j + 7]
        hi, lo = re.match(r"sub (v\d+)\.4s, \1\.4s, (v\d+)\.4s", sub).groups()
        assert s_lo == f"scvtf {lo}.4s, {lo}.4s" and s_hi == f"scvtf {hi}.4s, {hi}.4s, #4"
        ta, tb = (re.match(r"fmul (v\d+)\.4s, v\d+\.4s, v\d+\.s\[[02]\]$", t).group(1)
                  for t in (t0, t1))
        assert u0 == f"fmul {lo}.4s, {ta}.4s, {lo}.4s" and u1 == f"fmul {hi}.4s, {tb}.4s, {hi}.4s"
    assert not any(re.match(r"f[nm]*(mla|mls|madd|msub)", i.text) for i in body)


# ---- the scale-block kernels of the dotprod / Armv8.0 paths (gen/qdyn4_dot.py) -----------------
@pytest.mark.parametrize("name", ["sdot", "smlal"])
def test_dot_block_choices_registers_and_counts(name):
    """sdot: 8 rows x 4 columns (8 int32 + 8 fp32 sums + 8 A + 4 B + mask = 29); smull /
    sadalp: 4 x 4 (8 pair sums + 4 fp32 sums + 4 A + 4 B + mask + 8 products + the current
    block sums = 30). The body's mix is the solver's per-block count."""
    plan = qdyn4_dot.solve(name)
    assert (plan.ep, plan.hp) == {"sdot": (8, 4), "smlal": (4, 4)}[name]
    assert qdyn4_dot.registers_needed(plan.ep, plan.hp, name) == {"sdot": 29, "smlal": 30}[name]
    for ep, hp, _ in qdyn4_dot.candidates(name):
        assert qdyn4_dot.registers_needed(ep, hp, name) <= 32
    regs = [*plan.a_regs, *(plan.b_packed(g, q) for g in range(2) for q in range(plan.cq)),
            *(plan.b_low(g, q) for g in range(2) for q in range(plan.cq)), plan.mask,
            *plan.temps, *plan.sums_cur, *plan.acc_regs, *plan.sum_regs]
    assert len(set(regs)) == len(regs) and max(regs) < 32
    c = qdyn4_dot.block_counts(plan.ep, plan.hp, 32, name)
    body = qdyn4_dot.tail_body(plan)      # bl 32: the whole block in the tail
    mn = [i.text.split()[0] for i in body]
    if name == "sdot":
        assert mn.count("sdot") == c["mac"] == 8 * plan.ep * plan.cq
        epi = ("mul", "scvtf", "fmul", "fadd")
    else:
        assert mn.count("smull") + mn.count("smull2") + mn.count("sadalp") == c["mac"]
        assert mn.count("ld1r") == 8 * plan.ep
        epi = ("addp", "mla", "movi", "scvtf", "fmul", "fadd")
    assert mn.count("shl") + mn.count("and") == c["unpack"] == 2 * plan.cq * 4
    assert sum(mn.count(m) for m in epi) == c["epilogue"]
    assert sum(i.kind == "load" for i in body) == c["loads"]
    for b in (qdyn4_dot.inner_body(plan), body):
        check_same_dependencies(b, schedule_loop(b, "generic"))


@pytest.mark.parametrize("name", ["sdot", "smlal"])
def test_dot_block_epilogue_order_is_the_headers(name):
    """Per accumulator and block: scvtf #4, v = wscale * (float)acc, s = s + v (no FMA);
    after the last block y = scale[m] * s by element, before the bias."""
    plan = qdyn4_dot.solve(name)
    body = qdyn4_dot.tail_body(plan)
    ops = [i.text for i in body if i.text.startswith(("scvtf", "fmul", "fadd"))]
    assert len(ops) == 3 * plan.ep * plan.cq
    for j in range(0, len(ops), 3):
        scvtf, v, s = ops[j:j + 3]
        acc = re.match(r"scvtf (v\d+)\.4s, \1\.4s, #4$", scvtf).group(1)
        assert re.match(rf"fmul {acc}\.4s, {acc}\.4s, v\d+\.4s$", v)
        assert re.match(rf"fadd (v\d+)\.4s, \1\.4s, {acc}\.4s$", s)
    assert not any(re.match(r"f[nm]*(mla|mls|madd|msub)", i.text) for i in body)
    final = [i.text for i in qdyn4_dot.final_code(plan)[0]]
    scaled = [t for t in final if t.startswith("fmul")]
    assert len(scaled) == len(plan.sum_regs)
    assert all(re.match(r"fmul (v\d+)\.4s, \1\.4s, v\d+\.s\[[02]\]$", t) for t in scaled)
    first_fadd = next(k for k, t in enumerate(final) if t.startswith("fadd"))
    assert max(final.index(t) for t in scaled) < first_fadd


def test_rl_smmla_rotated_loop():
    """The per-channel smmla prefill loop (gen/qdyn4_rl.py rotated_body): pointer adds and the
    count before the first smmla (none after), 32 smmla per 16 k; per iteration the loads of
    k-step 1 and of the next iteration's k-step 0 (A chunks and B), the last iteration k-step
    1's only (nothing read past A or B). Its results: tests/test_drivers_qdyn.py."""
    from dataclasses import replace
    from gen import qdyn4_rl as rl
    plan = replace(rl.solve("smmla"), banks=2)
    assert rl.rotated_fits(plan) and plan.ep == 16
    for last, loads in ((False, 6), (True, 3)):
        body = rl.rotated_body(plan, last=last)
        first_mac = next(k for k, i in enumerate(body) if i.kind == "mac")
        assert not any(i.text.startswith(("add ", "subs ")) for i in body[first_mac:])
        assert sum(i.kind == "mac" for i in body) == 32
        assert sum(i.kind == "load" for i in body) == loads


# ---- the scale-block decode kernels (gen/qdyn4.py smmla, gen/qdyn4_dot.py sdot) ---------------
DECODE = [(qdyn4, "smmla", 2, 3), (qdyn4_dot, "sdot", 1, 5)]


def panel_loads(body, pointers):
    """{panel: sorted byte offsets} of the B loads (ldr q from a panel pointer)."""
    out = {}
    for i in body:
        m = re.match(r"ldr q\d+, \[(x\d+), #(\d+)\]", i.text)
        if m and m.group(1) in pointers:
            out.setdefault(pointers.index(m.group(1)), []).append(int(m.group(2)))
    return {p: sorted(v) for p, v in out.items()}


@pytest.mark.parametrize("mod,name,ep,panels", DECODE)
def test_scale_block_decode_reads_the_prefill_panels(mod, name, ep, panels):
    """The decode kernel is one row (pair) over `panels` of the prefill kernel's panels: its
    prologue chains the panel pointers by args->b_stride; per panel its block tail and inner
    body read the bytes the prefill kernel reads from its one panel (the same handle) and
    advance each pointer as the prefill advances x1; its fp32 steps are the header's order."""
    pre, plan = mod.solve(name), mod.solve(name, decode=True)
    assert (plan.ep, plan.panels, plan.pc, plan.decode) == (ep, panels, pre.hp, True)
    assert not pre.decode and pre.panels == 1
    best = mod.decode_candidates(name)
    assert best[0][0] == panels and all(best[0][1] >= w for _, w in best)
    pro = [i.text for i in mod.prologue(plan)]
    ptrs = ["x1"] + [f"x{8 + p}" for p in range(1, panels)]
    stride = f"x16"
    assert f"ldr {stride}, [x5, #{qdyn4.OFF['b_stride']}]" in pro
    for p in range(1, panels):
        assert f"add {ptrs[p]}, {ptrs[p - 1]}, {stride}" in pro
    for body in (mod.tail_body, mod.inner_body):
        want = panel_loads(body(pre), ["x1"])[0]
        got = panel_loads(body(plan), ptrs)
        assert got == {p: want for p in range(panels)}
        adds = {re.match(r"add (x1), \1, #(\d+)", i.text).group(2)
                for i in body(pre) if re.match(r"add x1, x1, #", i.text)}
        for ptr in ptrs:
            assert {re.match(rf"add {ptr}, {ptr}, #(\d+)", i.text).group(1)
                    for i in body(plan) if re.match(rf"add {ptr}, {ptr}, #", i.text)} == adds
        check_same_dependencies(body(plan), schedule_loop(body(plan), "generic"))
    ops = [i.text for i in mod.tail_body(plan) if i.text.startswith(("scvtf", "fmul", "fadd"))]
    assert len(ops) == 3 * len(plan.sum_regs)
    for j in range(0, len(ops), 3):
        acc = re.match(r"scvtf (v\d+)\.4s, \1\.4s, #4$", ops[j]).group(1)
        assert re.match(rf"fmul {acc}\.4s, {acc}\.4s, v\d+\.4s$", ops[j + 1])
        assert re.match(rf"fadd (v\d+)\.4s, \1\.4s, {acc}\.4s$", ops[j + 2])


# ---- the int8 decode kernel (gen/qdyn4.py weights "s8", decode) ----------------------------------
def ld1_bytes(body, prologue, bases):
    """{base: sorted byte offsets} read by the ld1 loads of body, each pointer resolved to
    (base, offset) through the prologue's `add xP, xB, #off` (a base itself: offset 0)."""
    derive = {}
    for t in prologue:
        m = re.match(r"add (x\d+), (x\d+), #(\d+)$", t)
        if m and m.group(1) != m.group(2):
            derive[m.group(1)] = (m.group(2), int(m.group(3)))
    out = {}
    for i in body:
        m = re.match(r"ld1 \{v(\d+)\.16b-v(\d+)\.16b\}, \[(x\d+)\]$", i.text)
        if m:
            base, off = (m.group(3), 0) if m.group(3) in bases else derive[m.group(3)]
            out.setdefault(base, []).extend(off + 16 * j
                                            for j in range(int(m.group(2)) - int(m.group(1)) + 1))
    return {b: sorted(v) for b, v in out.items()}


def test_int8_decode_kernel_reads_the_prefill_handle():
    """M <= 4 on an i8mm int8 handle: one row pair over `panels` of the 8x8 kernel's panels
    (the same handle: pack_q8's layout, per panel hp*8 bytes of sums, per 16 k two 8-k halves
    of 8 columns x 8 k, then the scales). Registers: 8 accumulators + 2 A + 16 B = 26 (3 panels
    would need 38); not the prefill kernel's rotated ld1 form (its pointers x10-x17 would be
    the panel streams'), but its own: per k-step one ld1 of A and per panel and half one
    4-register ld1, each run its own pointer derived in the prologue; per panel the loads
    cover the layout's offsets, each pointer advanced by two k-steps; the header's
    per-channel order per accumulator."""
    pre, plan = qdyn4.solve("smmla", "generic", "s8"), qdyn4.solve("smmla", "generic", "s8", True)
    assert (plan.ep, plan.hp, plan.panels, plan.pc, plan.weights) == (2, 16, 2, pre.hp, "s8")
    assert qdyn4.registers_needed(2, 16, "s8") == 26 and qdyn4.registers_needed(2, 24, "s8") > 32
    assert [p for p, _ in qdyn4.decode_candidates("smmla", "generic", "s8")] == [2, 1]
    assert not qdyn4.ld1_form_fits(plan) and qdyn4.ld1_form_fits(pre)
    assert qdyn4.decode_ld1_fits(plan) and not qdyn4.decode_ld1_fits(pre)
    regs = list(plan.a_regs + plan.b_packed + plan.b_low + plan.acc_regs)
    assert len(set(regs)) == len(regs) == 26
    bases = ["x0", "x1", "x9"]
    pro = [i.text for i in qdyn4.prologue(plan)]
    assert "add x9, x1, x16" in pro and f"ldr x16, [x5, #{qdyn4.OFF['b_stride']}]" in pro
    assert panel_loads(qdyn4.prologue(plan), ["x1", "x9"]) == {p: [0, 16, 32, 48] for p in (0, 1)}
    # the streams step past the sums before any pointer is derived from them
    for b in ("x1", "x9"):
        step = pro.index(f"add {b}, {b}, #64")
        assert all(k > step for k, t in enumerate(pro)
                   if re.match(rf"add x\d+, {b}, #", t) and not t.startswith(f"add {b}, {b},"))
    # per panel: k-step s, half h (k 8h..8h+7), column pair c at 128 s + 64 h + 16 c; A 32 bytes
    # per k-step
    steps = sorted(128 * s + 64 * h + 16 * c for s in (0, 1) for h in (0, 1) for c in range(4))
    want = {"x0": [0, 16, 32, 48], "x1": steps, "x9": steps}
    inner, tail = qdyn4.inner_body(plan), qdyn4.tail_body(plan)
    assert ld1_bytes(inner, pro, bases) == want and ld1_bytes(tail, pro, bases) == want
    assert not any(i.text.startswith("ldr q") for i in inner)
    # the tail's scales after the two k-steps (256 + 16 c, paired), from the streams
    assert panel_loads(tail, ["x1", "x9"]) == {p: [256 + 16 * c for c in range(4)] for p in (0, 1)}
    ptrs = {re.search(r"\[(x\d+)\]", i.text).group(1): i for i in inner if i.text.startswith("ld1")}
    assert len(ptrs) == 10
    for ptr in ptrs:
        amount = 64 if ptr == "x0" or ld1_bytes([ptrs[ptr]], pro, bases).get("x0") else 256
        assert [i.text for i in inner if i.text.startswith(f"add {ptr},")] == [
            f"add {ptr}, {ptr}, #{amount}"]
    check_same_dependencies(tail, schedule_loop(tail, "generic"))
    ops = [i.text for i in tail if i.text.startswith(("scvtf", "fmul"))]
    assert len(ops) == 3 * len(plan.acc_regs)
    for j in range(0, len(ops), 3):
        acc = re.match(r"scvtf (v\d+)\.4s, \1\.4s$", ops[j]).group(1)
        t = re.match(r"fmul (v\d+)\.4s, v\d+\.4s, v\d+\.4s$", ops[j + 1]).group(1)
        assert ops[j + 2] == f"fmul {acc}.4s, {t}.4s, {acc}.4s"
    # the counts the solver ranks by: per k-step pair 32 smmla
    c = qdyn4.block_counts(2, 16, 32, "s8", 2)
    assert (c["mac"], c["unpack"], c["epilogue"]) == (32, 0, 32)
    assert sum(i.kind == "mac" for i in inner) == c["mac"]


def test_int8_decode_bound_from_its_mix():
    """gen.qdyn4.compute_bound for int8 at K = 4096: per 16 weight bytes one smmla and one
    load, per column pair four epilogue operations over K (N2: two vector pipes, smmla 2 a
    cycle: 8192 bytes per (512 + 4) / 2 cycles; V1 load-bound: 3 loads a cycle)."""
    from gen.cores import CORES
    assert qdyn4.compute_bound(CORES["neoverse-n2"], "s8", 4096) == pytest.approx(8192 / 258)
    assert qdyn4.compute_bound(CORES["neoverse-n2"], "s8", 4095) == qdyn4.compute_bound(
        CORES["neoverse-n2"], "s8", 4096)                       # K padded to 32
    v1 = qdyn4.compute_bound(CORES["neoverse-v1"], "s8", 4096)
    assert 40 < v1 < 16 * CORES["neoverse-v1"].loads_per_cycle
