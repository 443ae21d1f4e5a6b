"""bench.report on synthetic profiles: metrics against hand-computed values, and graceful handling
of what a real run can lack — a path the ARCH build has no kernel for, a core without the
path's feature, a core without peak figures, blocks llvm-mca could not model, a failed run, a
dispatch that picked another kernel. No timings are asserted."""
import json

import pytest

from bench import report as rep
from bench.symbols import GROUPS
from bench.workloads import PATHS, all_workloads

CPUS = ["neoverse-n2", "cortex-a55", "cortex-x9"]   # cortex-x9: no entry in gen/cores.py
META = dict(arch="v86", cpu="generic", date="2000-01-01", qemu="qemu", qemu_cpu="max",
            llvm_mca="19")
MACS = 512 ** 3


def fake_profile(dtype, path, total_cycles, *, ran=None, unmodeled=0, checksum="ab", error=None):
    """A profile as bench.profile produces it: kernel 80 % of cycles, packing 20 %."""
    p = next(q for q in PATHS[dtype] if q.name == path)
    profile = dict(workload=f"gemm512-{dtype}", title=f"GEMM 512³ {dtype}", shape_title="GEMM 512³",
                   kind="gemm",
                   dtype=dtype, shape="gemm512", dims=[512] * 3, macs=MACS, path=path,
                   features=p.features, expected_instruction=p.instruction, error=error)
    if error:
        return profile
    cycles = {g: 0.0 for g in GROUPS}
    cycles.update(kernel=0.8 * total_cycles, packing=0.2 * total_cycles, total=total_cycles,
                  unmodeled_instructions=unmodeled,
                  unmodeled_reasons={"no scheduling information for `casa`": unmodeled} if unmodeled else {})
    profile.update(kernels={"k": 1}, kernel_instruction=ran or p.instruction, checksum=checksum,
                   instructions=dict({g: 0 for g in GROUPS}, kernel=10 ** 6, total=10 ** 6),
                   setup_instructions=5, cycles={cpu: dict(cycles) for cpu in CPUS})
    return profile


def make_report(profiles, missing=()):
    return rep.build_report(profiles, cpus=CPUS, meta=META, kernel_table=[{"kernel": "k", "ipc": 1.5}],
                            missing_paths=missing)


@pytest.fixture
def report():
    return make_report([
        fake_profile("s8", "armv8.0", 8e6),
        fake_profile("s8", "dotprod", 4e6),
        fake_profile("s8", "i8mm", 2.5e6, unmodeled=1000),
        fake_profile("f32", "fmla", 20e6),
        fake_profile("bf16", "bfmmla", 8e6),
        fake_profile("bf16", "fmla", None, error="qemu-aarch64 exited 1"),
    ])


def by_path(report, dtype, path):
    return next(p for p in report["profiles"] if p["dtype"] == dtype and p["path"] == path)


def test_percent_of_peak_by_hand(report):
    # Neoverse N2 (gen/cores.py, LLVM model): smmla 2 per cycle x 32 MACs (2x2 tile, k=8) = 64;
    # fmla (by element) 2 per cycle x 4 MACs = 8.
    m = by_path(report, "s8", "i8mm")["metrics"]["neoverse-n2"]
    assert m["macs_per_cycle"] == pytest.approx(MACS / 2.5e6)
    assert m["percent_of_peak"] == pytest.approx(100 * MACS / 2.5e6 / 64)
    f = by_path(report, "f32", "fmla")["metrics"]["neoverse-n2"]
    assert f["percent_of_peak"] == pytest.approx(100 * MACS / 20e6 / 8)
    assert m["shares"]["kernel"] == pytest.approx(0.8)


def test_core_without_the_feature_gets_no_peak_and_no_speedup(report):
    a55 = by_path(report, "s8", "i8mm")["metrics"]["cortex-a55"]
    assert not a55["usable"] and a55["percent_of_peak"] is None and "i8mm" in a55["note"]
    assert by_path(report, "s8", "dotprod")["metrics"]["cortex-a55"]["usable"]   # A55 has dotprod
    s = next(r for r in report["speedups"] if r["ratio"] == "smmla / sdot")
    assert s["per_core"]["neoverse-n2"] == pytest.approx(4e6 / 2.5e6)
    assert s["promised"]["neoverse-n2"] == pytest.approx(2.0)   # 64 / 32 MACs per cycle
    assert s["per_core"]["cortex-a55"] is None
    assert "n/a (cortex-a55 has no i8mm)" in rep.render_markdown(report, {})


def test_core_without_peak_figures_still_gets_macs_per_cycle(report):
    x9 = by_path(report, "s8", "dotprod")["metrics"]["cortex-x9"]
    assert x9["macs_per_cycle"] == pytest.approx(MACS / 4e6)
    assert x9["percent_of_peak"] is None and "no peak figure" in x9["note"]


def test_notes_cover_unmodeled_blocks_failed_runs_and_missing_paths():
    missing = [(w.name, p.name) for w in all_workloads() if w.name == "gemm512-s8"
               for p in w.missing_paths("v82")]
    assert missing == [("gemm512-s8", "i8mm")]          # v82 builds have no smmla kernels
    report = make_report([fake_profile("s8", "dotprod", 4e6, unmodeled=1000),
                          fake_profile("bf16", "fmla", None, error="qemu-aarch64 exited 1")], missing)
    text = "\n".join(report["notes"])
    assert "gemm512-s8: path i8mm not in this ARCH build" in text
    assert "0.100 % of the instructions unmodeled" in text and "casa" in text
    assert "run failed: qemu-aarch64 exited 1" in text
    assert report["speedups"] == []                      # nothing to compare against
    rep.render_markdown(report, {})


def test_misdispatched_path_is_flagged_and_left_out():
    report = make_report([fake_profile("s8", "dotprod", 4e6),
                          fake_profile("s8", "i8mm", 4e6, ran="sdot")])
    assert any("dispatch ran sdot, expected smmla" in n for n in report["notes"])
    assert not [s for s in report["speedups"] if s["ratio"] == "smmla / sdot"]


def test_int8_paths_must_agree():
    report = make_report([fake_profile("s8", "dotprod", 4e6, checksum="01"),
                          fake_profile("s8", "i8mm", 2e6, checksum="02")])
    assert any("int8 outputs differ" in n for n in report["notes"])


def test_missing_kernel_table_is_stated():
    report = rep.build_report([fake_profile("s8", "dotprod", 4e6)], cpus=CPUS, meta=META,
                              kernel_table_error="bench/kernels_mca.py is not in this tree yet")
    assert "Per-kernel table unavailable: bench/kernels_mca.py is not in this tree yet" in \
        rep.render_markdown(report, {})


def test_outputs_json_markdown_and_charts(report, tmp_path):
    rep.write_json(report, tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text())["meta"]["cores"] == CPUS
    charts = rep.draw_charts(report, tmp_path)
    assert set(charts) == {"groups", "peak", "speedups"}
    for path in charts.values():
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = rep.render_markdown(report, {k: v.name for k, v in charts.items()})
    assert "No cache model in this run" in text       # the fake profiles have no "memory"
    assert "| kernel | ipc |" in text and "| k | 1.5 |" in text


def test_biggest_overheads_name_the_group(report):
    [first, *_] = report["overheads"]
    # every fake profile spends 20 % in packing, the only non-kernel group with cycles
    assert (first["group"], first["share"]) == ("packing", pytest.approx(0.2))
    assert "packing 20.0% of the cycles" in rep.render_markdown(report, {})


def with_memory(profile, l1, l1_wb, l2, l2_wb, threads=None):
    """Add the cache model's fields for neoverse-n2 (totals only; all in the kernel group)."""
    zero = dict(accesses=0, l1_misses=0, l2_misses=0, l1_writebacks=0, l2_writebacks=0)
    counts = dict(accesses=4 * l1, l1_misses=l1, l2_misses=l2, l1_writebacks=l1_wb, l2_writebacks=l2_wb)
    profile["memory"] = {"neoverse-n2": dict({g: dict(zero) for g in GROUPS}, kernel=counts,
                                             total=dict(counts))}
    cycles = threads or {0: profile["cycles"]["neoverse-n2"]["total"]}
    mean = sum(cycles.values()) / len(cycles)
    profile["threads"] = {"neoverse-n2": dict(cycles=cycles, l1_misses={v: 0 for v in cycles},
                                              l2_misses={v: 0 for v in cycles},
                                              balance=max(cycles.values()) / mean)}
    return profile


def test_roofline_by_hand():
    # Neoverse N2 (gen/cores.py MEMORY): 64-byte lines, 32 B/cycle from L2,
    # DRAM 307.2 GB/s / 128 cores / 3.2 GHz = 0.75 B/cycle; smmla peak 64 MACs/cycle.
    l2_bound = with_memory(fake_profile("s8", "i8mm", 2.5e6), 10 ** 6, 5 * 10 ** 5, 10 ** 4, 2000)
    dram_bound = with_memory(fake_profile("s8", "dotprod", 2.5e6), 1000, 0, 10 ** 5, 0)
    compute_bound = with_memory(fake_profile("f32", "fmla", 20e6), 1000, 0, 1000, 0)
    report = make_report([l2_bound, dram_bound, compute_bound])
    r = by_path(report, "s8", "i8mm")["metrics"]["neoverse-n2"]["roofline"]
    assert r["l2_bytes"] == 1.5e6 * 64 and r["l2_cycles"] == pytest.approx(3e6)
    assert r["dram_bytes"] == 12000 * 64 and r["dram_cycles"] == pytest.approx(768000 / 0.75)
    assert (r["limiter"], r["bound_cycles"]) == ("L2", pytest.approx(3e6))
    assert r["percent_of_peak"] == pytest.approx(100 * MACS / 3e6 / 64)
    d = by_path(report, "s8", "dotprod")["metrics"]["neoverse-n2"]["roofline"]
    assert (d["limiter"], d["bound_cycles"]) == ("DRAM", pytest.approx(6.4e6 / 0.75))
    c = by_path(report, "f32", "fmla")["metrics"]["neoverse-n2"]["roofline"]
    assert (c["limiter"], c["bound_cycles"]) == ("compute", 20e6)
    assert c["percent_of_peak"] == pytest.approx(100 * MACS / 20e6 / 8)
    # cores without the cache model get none
    assert "roofline" not in by_path(report, "s8", "i8mm")["metrics"]["cortex-x9"]
    text = rep.render_markdown(report, {})
    assert "## Cache model: misses and roofline bound" in text
    assert f"{MACS / 3e6:.2f} ({100 * MACS / 3e6 / 64:.0f} %) L2, 0.83× L1-resident" in text  # 2.5 / 3
    assert "| 1.000 / 0.010 |" in text          # i8mm: L1D / L2 misses in millions


def test_dc_zva_outside_the_model_is_noted():
    p = with_memory(fake_profile("s8", "i8mm", 2.5e6), 1000, 0, 1000, 0)
    p["memory"]["neoverse-n2"]["total"]["dc_zva"] = 47
    report = make_report([p])
    assert any("47 DC ZVA executions" in n and "outside the cache model" in n
               for n in report["notes"])


def test_threads_table_shows_balance():
    p = with_memory(fake_profile("s8", "i8mm", 2.5e6), 1000, 0, 1000, 0,
                    threads={1: 1e6, 2: 1.5e6, 3: 0.5e6})
    text = rep.render_markdown(make_report([p]), {})
    assert "| 3 | 1: 1.00, 2: 1.50, 3: 0.50 | 1.500 |" in text      # max 1.5 / mean 1.0


def test_large_workloads_by_hand():
    ws = {w.name: w for w in all_workloads()}
    p = ws["prefill512-s8"]
    assert p.macs == 512 * 4096 * 4096
    assert [x.name for x in p.paths("v86")] == ["i8mm"]          # newest path only
    assert [x.name for x in p.paths("v82")] == ["dotprod"]       # newest this build has
    assert p.args(p.paths("v86")[0]) == ["gemm", "s8", "dotprod+i8mm", "512", "4096", "4096"]
    c = ws["conv-resnet50-3x3-b4"]
    assert c.macs == 4 * (56 * 56) * 64 * (3 * 3 * 64)         # SAME padding: 56x56 outputs
    assert c.args(c.paths("v86")[0])[-2:] == ["1", "4"]          # ... PAD_RIGHT, BATCH
    assert ws["conv-resnet50-3x3"].args(c.paths("v86")[0])[-1] == "1"   # batch 1: no argument
    assert {w.name for w in all_workloads() if w.newest_only} == {
        "prefill512-f32", "prefill512-s8", "conv-resnet50-3x3-b4"}


def with_variants(profile, runs):
    """profile with bench.profile's `variants`: runs {cpu: (class, kernel, checksum)}."""
    profile["variants"] = {c: dict(core_class=cls, kernel=k, checksum=s)
                           for c, (cls, k, s) in runs.items()}
    return profile


def test_variants_table_names_each_core_kernel_and_checksums_must_agree():
    runs = {"neoverse-n2": ("ooo", "ts_gemm_bf16f32_bfmmla_12x8x4_ooo", "ab"),
            "cortex-a55": ("generic", "ts_gemm_bf16f32_bfmmla_8x8x4", "ab"),
            "cortex-x9": ("generic", "ts_gemm_bf16f32_bfmmla_8x8x4", "ab")}
    plain = {c: ("generic", "ts_gemm_f32_fmla_8x12x1", "cd") for c in CPUS}
    report = make_report([with_variants(fake_profile("bf16", "bfmmla", 8e6), runs),
                          with_variants(fake_profile("f32", "fmla", 20e6), plain)])
    table = rep.variants_table(report)
    assert table.count("\n") == 2                  # header, rule, the bf16 row: f32 ran generic
    assert "`ts_gemm_bf16f32_bfmmla_12x8x4_ooo` (ooo run)" in table
    assert "## Per-core kernel variants" in rep.render_markdown(report, {})
    assert not any("checksums differ" in n for n in report["notes"])
    runs["neoverse-n2"] = ("ooo", runs["neoverse-n2"][1], "ff")
    report = make_report([with_variants(fake_profile("bf16", "bfmmla", 8e6), runs)])
    assert any("checksums differ between the core-class runs" in n for n in report["notes"])
    # without any class run there is no section
    report = make_report([with_variants(fake_profile("f32", "fmla", 20e6), plain)])
    assert rep.variants_table(report) is None
    assert "Per-core kernel variants" not in rep.render_markdown(report, {})


def test_qdyn_decode_bound_is_each_schemes_own():
    """The decode table's bound of a qdyn kernel comes from its own scheme's mix (by symbol):
    int8 (`_s8s8f32_`, per channel: the epilogue once per K), int4 scale blocks (smmla: the
    per-block epilogue per column pair, sdot per column quad), int4 per channel; never the
    per-channel int4 bound for a scale-block kernel, nor the raw GEMV bound for int8."""
    from gen import qdyn4_dot, qdyn4_rl
    from gen.cores import CORES
    n2 = CORES["neoverse-n2"]
    # int8, by hand: per column pair and K = 4096, 512 smmla + mul, scvtf, 2 fmul on N2's two
    # vector pipes (smmla 2 a cycle), 2 x 4096 weight bytes; loads 1 per smmla at 3 a cycle
    per, bound = rep.qdyn_decode_bound("ts_gemm_s8s8f32_smmla_2x16x16", "smmla", n2, 4096)
    assert per == 1 and bound == pytest.approx(2 * 4096 / ((4096 / 8 + 4) / 2))
    per, block = rep.qdyn_decode_bound("ts_gemm_s8s4f32_smmla_2x12x16", "smmla", n2, 4096)
    # scale blocks at bl = 32, by hand: per column pair and block 4 smmla, 4 unpack, 4
    # epilogue operations on two pipes: 32 weight bytes per 6 cycles
    assert per == 0.5 and block == pytest.approx(32 / 6)
    _, dot = rep.qdyn_decode_bound("ts_gemm_s8s4f32_sdot_1x20x4", "sdot", n2, 4096)
    assert dot == pytest.approx(qdyn4_dot.compute_bound(n2, "sdot", 32))
    _, pc = rep.qdyn_decode_bound("ts_gemm_s8s4f32_sdot_1x32x4_pc", "sdot", n2, 4096)
    assert pc == pytest.approx(qdyn4_rl.compute_bound(n2, instruction="sdot"))
    assert len({round(b, 6) for b in (block, dot, pc)}) == 3
    # int8 on the dotprod path (gen/qdyn8_dot.py, over the raw panels), by hand on N2: per 16
    # weight bytes one sdot (2 a cycle), one load (3 a cycle), 2 instructions (5 a cycle)
    per, s8dot = rep.qdyn_decode_bound("ts_gemm_s8s8f32_sdot_1x60x4", "sdot", n2, 4096)
    assert per == 1 and s8dot == pytest.approx(16 / 0.5)
    assert rep.qdyn_decode_bound("ts_gemm_s8s32_sdot_1x32x4", "sdot", n2, 4096) is None
