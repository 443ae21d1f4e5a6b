"""bench: the tbcount QEMU plugin counts exactly, blocks map to symbols and groups, and the whole
profile pipeline (QEMU → groups → llvm-mca cycles → report) runs on a program whose dynamic
instruction counts are known by construction."""
import subprocess

import pytest

from bench import symbols as sym
from bench.mca import CycleModel
from bench.profile import (QEMU_CPU, _cache_runs, _run_order, class_runs, classify,
                           fallthrough_runs,
                           instruction_profile, profile_all, qemu_cpu, run_codes, run_cycles,
                           variant_instructions, workload_variants)
from bench.report import build_report, render_markdown
from bench.tbcount import Block, ProfileError, build_plugin, parse_profile, run_profiled
from bench.workloads import DispatchPath, Workload
from cross import GCC
from gen.cores import CLASS_MIDR, MEMORY

# One function per group: (symbol, group, loop trip count, extra instructions in the loop body).
# Each function is `mov x9,#T; loop: body…; subs; b.ne loop; ret`: 2 + T * (body + 2) instructions.
FUNCTIONS = (
    ("bench_setup_fill", sym.SETUP, 700, 1),
    ("ts_pack_panel_s8", "packing", 300, 2),
    ("ts_im2col_s8", "im2col", 250, 3),
    ("ts_gemm_s8s32_smmla_8x12x8", "kernel", 1000, 4),
    ("ts_requant_row", "requant", 120, 1),
    ("helper_other", "other", 50, 0),
)
START_INSNS = len(FUNCTIONS) + 3      # a bl per function, then mov, mov, svc (exit)


def function_insns(trip, body):
    return 2 + trip * (body + 2)


def program_source(functions):
    lines = ["    .text", "    .global _start", "    .type _start, %function", "_start:"]
    lines += [f"    bl {name}" for name, *_ in functions]
    lines += ["    mov x0, #0", "    mov x8, #93", "    svc #0", "    .size _start, .-_start"]
    for name, group, trip, body in functions:
        # the kernel's loop body does real MACs; the rest count
        op = "smmla v0.4s, v1.16b, v2.16b" if group == "kernel" else "add x10, x10, #1"
        lines += [f"    .type {name}, %function", f"{name}:", f"    mov x9, #{trip}", "1:"]
        lines += [f"    {op}"] * body
        lines += ["    subs x9, x9, #1", "    b.ne 1b", "    ret", f"    .size {name}, .-{name}"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("bench_profile")
    src = d / "prog.S"
    src.write_text(program_source(FUNCTIONS))
    program = d / "prog"
    proc = subprocess.run([GCC, "-march=armv8.6-a+i8mm", "-nostdlib", "-static", "-no-pie",
                           str(src), "-o", str(program)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return d, program, build_plugin(d / "plugin")


@pytest.fixture(scope="module")
def blocks(built):
    d, program, plugin = built
    blocks, _ = run_profiled(program, [], plugin, d / "prog.tb")
    return blocks


def test_plugin_total_is_exact(blocks):
    expected = START_INSNS + sum(function_insns(t, b) for _, _, t, b in FUNCTIONS)
    assert sum(b.dynamic_insns for b in blocks) == expected


@pytest.mark.parametrize("trip", [1, 37, 4096])
def test_plugin_counts_a_loop_exactly(built, trip):
    d, _, plugin = built
    functions = [("loop", "other", trip, 5)]
    src = d / f"loop{trip}.S"
    src.write_text(program_source(functions))
    program = d / f"loop{trip}"
    subprocess.run([GCC, "-nostdlib", "-static", "-no-pie", str(src), "-o", str(program)], check=True)
    blocks, _ = run_profiled(program, [], plugin, d / f"loop{trip}.tb")
    assert sum(b.dynamic_insns for b in blocks) == 1 + 3 + function_insns(trip, 5)
    # the loop body block itself ran trip - 1 times (its first pass is part of the entry block)
    assert max(b.count for b in blocks) == max(trip - 1, 1)


def test_blocks_map_to_symbols_and_groups(built, blocks):
    _, program, _ = built
    table = sym.SymbolTable.from_elf(program)
    groups, kernels = classify(blocks, table, "ts_")
    counts, setup = instruction_profile(blocks, groups)
    for name, group, trip, body in FUNCTIONS:
        if group in ("kernel", "packing", "im2col", "requant"):
            assert counts[group] == function_insns(trip, body), group
    assert setup == function_insns(*FUNCTIONS[0][2:])
    assert counts["other"] == START_INSNS + function_insns(*FUNCTIONS[-1][2:])
    assert kernels == {"ts_gemm_s8s32_smmla_8x12x8": function_insns(1000, 4)}


def test_mark_restarts_the_counts(built, tmp_path):
    """With mark= at bench_mark, what ran before its call (the packing here) is not counted."""
    _, _, plugin = built
    functions = [("ts_pack_panel_s8", "packing", 300, 2), ("bench_mark", sym.SETUP, 1, 0),
                 ("ts_gemm_s8s32_smmla_8x12x8", "kernel", 40, 4), ("ts_requant_row", "requant", 9, 1)]
    src = tmp_path / "mark.S"
    src.write_text(program_source(functions))
    program = tmp_path / "mark"
    subprocess.run([GCC, "-march=armv8.6-a+i8mm", "-nostdlib", "-static", "-no-pie", str(src),
                    "-o", str(program)], check=True)
    table = sym.SymbolTable.from_elf(program)
    blocks, _ = run_profiled(program, [], plugin, tmp_path / "mark.tb",
                             mark=table.address_of("bench_mark"))
    groups, _ = classify(blocks, table, "ts_")
    counts, _ = instruction_profile(blocks, groups)
    assert counts["packing"] == 0
    assert counts["kernel"] == function_insns(40, 4)
    assert counts["requant"] == function_insns(9, 1)
    assert counts["other"] == 2 + 3        # _start after the marker's return: 2 bl, then exit


def test_pipeline_end_to_end(built, tmp_path):
    _, program, plugin = built
    workload = Workload("toy", "toy GEMM", "gemm", "s8", (8, 12, 8000), "toy")
    path = DispatchPath("i8mm", "dotprod+i8mm", "smmla")
    cpus = ["neoverse-n2", "cortex-a55"]
    model = CycleModel(tmp_path / "cache.json")
    [profile] = profile_all(program, [(workload, path)], plugin, tmp_path, model, cpus,
                            progress=lambda _: None)
    assert profile["error"] is None
    assert profile["kernel_instruction"] == "smmla"
    assert profile["instructions"]["kernel"] == function_insns(1000, 4)
    for cpu in cpus:
        c = profile["cycles"][cpu]
        assert c["unmodeled_instructions"] == 0
        # every group that executed has modeled cycles, the harness none
        assert all(c[g] > 0 for g in sym.GROUPS)
        assert c["total"] == pytest.approx(sum(c[g] for g in sym.GROUPS))
    # the cache now answers without llvm-mca
    cached = CycleModel(tmp_path / "cache.json")
    assert cached.entries == model.entries
    report = build_report([profile], cpus=cpus, meta=dict(arch="v86", cpu="generic", date="-",
                          qemu="q", qemu_cpu="max", llvm_mca="19"))
    text = render_markdown(report, {})
    assert "cortex-a55 has no i8mm" in text          # A55 cannot run smmla: no % of peak
    assert report["profiles"][0]["metrics"]["neoverse-n2"]["percent_of_peak"] > 0


def test_failed_run_is_reported_not_raised(built, tmp_path):
    _, _, plugin = built
    bad = tmp_path / "exit3.S"
    bad.write_text("    .global _start\n_start:\n    mov x0, #3\n    mov x8, #93\n    svc #0\n")
    program = tmp_path / "exit3"
    subprocess.run([GCC, "-nostdlib", "-static", "-no-pie", str(bad), "-o", str(program)], check=True)
    with pytest.raises(ProfileError, match="exited 3"):
        run_profiled(program, [], plugin, tmp_path / "exit3.tb")
    workload = Workload("toy", "toy", "gemm", "s8", (1, 1, 1), "toy")
    [profile] = profile_all(program, [(workload, DispatchPath("i8mm", "x", "smmla"))], plugin,
                            tmp_path, CycleModel(), ["neoverse-n2"], progress=lambda _: None)
    assert "exited 3" in profile["error"]


def test_parse_profile_rejects_malformed_output():
    with pytest.raises(ProfileError, match="not tbcount output"):
        parse_profile("hello\n")
    with pytest.raises(ProfileError, match="2 instructions but 4 bytes"):
        parse_profile("# tbcount 1: x\n400000 2 5 1f2003d5\n")
    [block] = parse_profile("# tbcount 1: x\n400000 1 5 1f2003d5\n")
    assert (block.vaddr, block.count, block.dynamic_insns, block.code) == (0x400000, 5, 5,
                                                                          bytes.fromhex("1f2003d5"))


def _block(vaddr, words, count):
    """A synthetic Block of `words` (A64 instruction words)."""
    code = b"".join(w.to_bytes(4, "little") for w in words)
    return Block(vaddr, len(words), count, code)


NOP, BNE = 0xD503201F, 0x54FFFFE1        # nop; b.ne .-4


def test_fallthrough_runs_cover_every_execution_once():
    # an entry block and a loop head, both ending without a branch at 0x100c (QEMU's split of
    # one loop body), the loop tail ending in b.ne, and an unrelated block
    blocks = [_block(0x1000, [NOP] * 3, 5), _block(0x1004, [NOP] * 2, 100),
              _block(0x100C, [NOP, BNE], 105), _block(0x2000, [NOP, BNE], 7)]
    runs = fallthrough_runs(blocks)
    assert sorted(runs) == sorted([([0, 2], 5), ([1, 2], 100), ([3], 7)])
    covered = [0] * len(blocks)
    for run, executions in runs:
        for i in run:
            covered[i] += executions
    assert covered == [b.count for b in blocks]
    # a block also entered by a jump starts runs of its own for those executions
    blocks[2] = _block(0x100C, [NOP, BNE], 125)
    assert ([2], 20) in fallthrough_runs(blocks)
    # counts that cannot come from one execution: every block is modeled alone
    blocks[:3] = [_block(0x1000, [NOP] * 3, 30), _block(0x1004, [NOP] * 2, 40),
                  _block(0x100C, [NOP, BNE], 50)]
    assert sorted(fallthrough_runs(blocks)) == [([0], 30), ([1], 40), ([2], 50), ([3], 7)]


def test_a_loop_split_at_a_page_boundary_is_modeled_as_one_loop(built, tmp_path):
    """QEMU cuts a loop body that crosses a 4 KiB page into two blocks; the model sees the
    whole body (as llvm-mca sees it in the kernel table), not two loops of their own."""
    _, _, plugin = built
    body = [f"    fmla v{i % 12}.4s, v30.4s, v31.4s" for i in range(36)]
    src = tmp_path / "split.S"
    src.write_text("\n".join([
        "    .text", "    .global _start", "_start:", "    mov x9, #500", "    b 1f",
        "    .balign 4096", "    .skip 4096 - 16 * 4",     # the body straddles the next page
        "1:", *body, "    subs x9, x9, #1", "    b.ne 1b",
        "    mov x0, #0", "    mov x8, #93", "    svc #0"]) + "\n")
    program = tmp_path / "split"
    subprocess.run([GCC, "-nostdlib", "-static", "-no-pie", str(src), "-o", str(program)],
                   check=True)
    blocks, _ = run_profiled(program, [], plugin, tmp_path / "split.tb")
    pieces = sorted((b for b in blocks if b.count >= 499), key=lambda b: b.vaddr)
    assert len(pieces) == 2 and pieces[0].vaddr + len(pieces[0].code) == pieces[1].vaddr
    model = CycleModel()
    whole = pieces[0].code + pieces[1].code
    model.prepare(["neoverse-v1"], run_codes(blocks) | {b.code for b in blocks})
    per_block = run_cycles(blocks, model, "neoverse-v1")
    got = sum(per_block[blocks.index(p)] for p in pieces)
    assert got == pytest.approx(model.cycles("neoverse-v1", whole))
    # modeled alone, the pieces' accumulator chains cost more than the whole loop
    alone = sum(model.cycles("neoverse-v1", p.code) for p in pieces)
    assert alone > got * 1.2


# ---- per-core kernel variants: each core modeled on its own class's run ------------------------
# A toy dispatcher: reads MIDR_EL1 and calls the kernel of the part's class (N2 0xD49: the ooo
# variant, A510 0xD46: the in-order one, anything else: the generic kernel), each a loop of its
# own trip count, so the run a core was modeled on shows in its kernel and its cycles.
VARIANT_KERNELS = {"generic": ("ts_gemm_s8s32_smmla_8x12x8", 1000),
                   "ooo": ("ts_gemm_s8s32_smmla_12x8x8_ooo", 300),
                   "inorder": ("ts_gemm_s8s32_smmla_4x4x8_inorder", 3000)}


def variant_program_source():
    kernels = VARIANT_KERNELS
    lines = ["    .text", "    .global _start", "_start:", "    mrs x0, midr_el1",
             "    ubfx x1, x0, #4, #12", "    mov x2, #0xd49", "    cmp x1, x2", "    b.eq 1f",
             "    mov x2, #0xd46", "    cmp x1, x2", "    b.eq 2f",
             f"    bl {kernels['generic'][0]}", "    b 3f",
             f"1:  bl {kernels['ooo'][0]}", "    b 3f",
             f"2:  bl {kernels['inorder'][0]}",
             "3:  mov x0, #0", "    mov x8, #93", "    svc #0"]
    for name, trip in kernels.values():
        lines += [f"    .type {name}, %function", f"{name}:", f"    mov x9, #{trip}", "4:",
                  *["    smmla v0.4s, v1.16b, v2.16b"] * 4, "    subs x9, x9, #1", "    b.ne 4b",
                  "    ret", f"    .size {name}, .-{name}"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def variant_program(built, tmp_path_factory):
    d = tmp_path_factory.mktemp("bench_variants")
    src = d / "variants.S"
    src.write_text(variant_program_source())
    program = d / "variants"
    subprocess.run([GCC, "-march=armv8.6-a+i8mm", "-nostdlib", "-static", "-no-pie", str(src),
                    "-o", str(program)], check=True)
    return program


def test_qemu_reports_the_class_midr(built, variant_program, tmp_path):
    """qemu_cpu(class) makes `mrs midr_el1` return the class's representative core's MIDR, and
    generic leaves max's own (no Arm part: the generic kernel)."""
    _, _, plugin = built
    table = sym.SymbolTable.from_elf(variant_program)
    for cls, (kernel, trip) in VARIANT_KERNELS.items():
        blocks, _ = run_profiled(variant_program, [], plugin, tmp_path / f"{cls}.tb",
                                 cpu=qemu_cpu(cls))
        _, kernels = classify(blocks, table, "ts_")
        assert kernels == {kernel: function_insns(trip, 4)}, cls
    assert qemu_cpu("generic") == QEMU_CPU
    assert qemu_cpu("ooo") == f"{QEMU_CPU},midr={CLASS_MIDR['ooo']:#x}"


def test_class_runs_follow_the_build_variants():
    cpus = ["neoverse-n2", "neoverse-v1", "cortex-a510", "cortex-a55", "apple-m1"]
    variants = {"ooo": {"bfmmla"}}
    assert class_runs(cpus, "bfmmla", variants) == {
        "neoverse-n2": "ooo", "neoverse-v1": "ooo", "cortex-a510": "generic",
        "cortex-a55": "generic", "apple-m1": "generic"}
    assert set(class_runs(cpus, "fmla", variants).values()) == {"generic"}
    kernels = [dict(role="core_class", core_class="ooo", instruction="bfmmla"),
               dict(role="core_class", core_class="inorder", instruction="smmla")]
    # main kernels add their block variants (CPU=generic builds only): gen.blocking sizes
    # fp32 8x12 blocks for the ooo class's 64 KiB L1D / 512 KiB L2, bigger than the generic
    # ones (the A55's 32 KiB / 128 KiB), and the inorder class's are the generic ones
    main = [dict(role="main", core_class="generic", instruction="fmla_f32", ep=8, hp=12, lp=1)]
    assert variant_instructions({"kernels": kernels}) == {"ooo": {"bfmmla": "kernel"},
                                                          "inorder": {"smmla": "kernel"}}
    variants = variant_instructions({"cpu": "generic", "kernels": main + kernels})
    assert variants == {"ooo": {"bfmmla": "kernel", "fmla_f32": "blocks"},
                        "inorder": {"smmla": "kernel"}}
    assert variant_instructions({"cpu": "neoverse-n2", "kernels": main}) == {}
    # the qdyn GEMMs have no cache blocks: kernel variants only
    gemm = Workload("toy", "toy", "gemm", "f32", (8, 8, 8), "toy")
    qdyn = Workload("toy", "toy", "gemm", "qdyn4", (8, 8, 8), "toy")
    assert workload_variants(gemm, variants) == variants
    assert workload_variants(qdyn, variants) == {"ooo": {"bfmmla": "kernel"},
                                                 "inorder": {"smmla": "kernel"}}
    assert set(class_runs(cpus, "fmla_f32", workload_variants(qdyn, variants)).values()) \
        == {"generic"}


def test_with_the_cache_model_each_core_runs_blocks_for_its_own_caches():
    """bench.profile _cache_runs: a core's run passes its L1D / L2 (gen/cores.py MEMORY, from
    the TRMs: N2 and V1 64 KiB / 1 MiB, A710 64 KiB / 512 KiB, A55 32 KiB / 128 KiB), so N2 and
    V1 share a run and the A710 of the same class runs apart; no cache model: no sizes; runs
    generic first."""
    classes = {"neoverse-n2": "ooo", "neoverse-v1": "ooo", "cortex-a710": "ooo",
               "cortex-a55": "generic"}
    own = _cache_runs(classes, {c: MEMORY[c] for c in classes})
    kib = 1024
    assert own == {"neoverse-n2": ("ooo", (64 * kib, 1024 * kib)),
                   "neoverse-v1": ("ooo", (64 * kib, 1024 * kib)),
                   "cortex-a710": ("ooo", (64 * kib, 512 * kib)),
                   "cortex-a55": ("generic", (32 * kib, 128 * kib))}
    assert _run_order(own) == [("generic", (32 * kib, 128 * kib)), ("ooo", (64 * kib, 512 * kib)),
                               ("ooo", (64 * kib, 1024 * kib))]
    assert set(_cache_runs(classes, None).values()) == {("ooo", None), ("generic", None)}


def test_each_core_is_modeled_on_its_class_run(built, variant_program, tmp_path):
    _, _, plugin = built
    workload = Workload("toy", "toy GEMM", "gemm", "s8", (8, 12, 8000), "toy")
    path = DispatchPath("i8mm", "dotprod+i8mm", "smmla")
    cpus = ["neoverse-n2", "neoverse-v1", "cortex-a510"]
    model = CycleModel(tmp_path / "cache.json")
    seen = []
    [profile] = profile_all(variant_program, [(workload, path)], plugin, tmp_path, model, cpus,
                            progress=seen.append,
                            variants={"ooo": {"smmla"}, "inorder": {"smmla"}})
    assert profile["error"] is None
    assert sum("toy" in line for line in seen) == 2             # no core needs the generic run
    kernel = {c: profile["variants"][c]["kernel"] for c in cpus}
    assert kernel == {"neoverse-n2": VARIANT_KERNELS["ooo"][0],
                      "neoverse-v1": VARIANT_KERNELS["ooo"][0],
                      "cortex-a510": VARIANT_KERNELS["inorder"][0]}
    assert profile["variants"]["cortex-a510"]["core_class"] == "inorder"
    # the instructions come from the first class run (by name: inorder)
    assert profile["kernels"] == {VARIANT_KERNELS["inorder"][0]: function_insns(3000, 4)}
    # the kernel cycles per core follow its own run's trip count: against the generic run
    [generic] = profile_all(variant_program, [(workload, path)], plugin, tmp_path / "g", model,
                            cpus, progress=lambda _: None)
    assert {v["core_class"] for v in generic["variants"].values()} == {"generic"}
    for cpu in cpus:
        trip = VARIANT_KERNELS[profile["variants"][cpu]["core_class"]][1]
        ratio = profile["cycles"][cpu]["kernel"] / generic["cycles"][cpu]["kernel"]
        assert ratio == pytest.approx(trip / VARIANT_KERNELS["generic"][1], rel=0.02), cpu
