"""The solver's GEMV / small-M objective (gen/gemv.py) and the decode figures of the bench report."""
from __future__ import annotations

import re
import subprocess
from fractions import Fraction

import pytest

from bench.report import decode_metrics
from cross import GCC
from gen import gemv
from gen.cores import CORES, CPU_NAMES
from gen.emit import KernelPlanError, emit_kernel, main_loop_variants
from gen.isa import GENERATED, INSTRUCTIONS
from gen.tile_policy import choose as choose_main
from gen.tiling import TilingError, candidates, plan_for


@pytest.mark.parametrize("name", gemv.GEMV_INSTRUCTIONS)
def test_gemv_tile_beats_the_gemm_tile_per_byte_of_b(name):
    main = choose_main(name).candidate
    c = gemv.choose(name, main.ep, main.hp, main.strategy)
    # the path's instruction or one of its GEMV forms
    assert c is not None and c.candidate.instruction in (name, *gemv.GEMV_FORMS.get(name, ()))
    inst = INSTRUCTIONS[c.candidate.instruction]
    assert c.candidate.ep == inst.c_rows_per_reg
    # B is streamed once: the GEMV kernel serves exactly the M its rows cover
    assert c.max_m == c.candidate.ep
    main_cost = gemv.instructions_per_b_byte(
        gemv.main_candidate(name, main.ep, main.hp, main.strategy))
    assert c.instructions_per_b_byte < main_cost
    # the solver's estimate counted by hand: one MAC per accumulator per k-step, plus the loads
    # (the choice's own counts are the emitted loop's: test_gemv_counts_are_the_emitted_main_loops)
    step = c.candidate.regs_c + gemv.load_instructions(inst, c.candidate.ep, c.candidate.hp,
                                                       c.candidate.strategy)
    assert gemv.instructions_per_step(c.candidate) == step
    assert c.step_instructions >= step
    # the latency rule of the GEMM solver holds for the GEMV tile too
    for core in CORES.values():
        if core.has(inst.feature):
            assert c.candidate.regs_c >= core.min_accumulators(inst.name)


def test_gemv_forms_share_feature_and_operands_and_win_only_on_the_objective():
    for mmla, forms in gemv.GEMV_FORMS.items():
        for form in forms:
            a, b = INSTRUCTIONS[mmla], INSTRUCTIONS[form]
            assert (a.feature, a.a_type, a.b_type, a.c_type) == (b.feature, b.a_type, b.b_type,
                                                                 b.c_type)
    # sudot (1x32x4, 8 accumulators: 11 instructions per 128 B bytes) beats usmmla's 2x42x8
    # (43 per 336) at M = 1, and then serves M = 1 only
    main = choose_main("usmmla").candidate
    c = gemv.choose("usmmla", main.ep, main.hp, main.strategy)
    assert (c.candidate.instruction, c.label.split()[0], c.max_m) == ("sudot", "1x32x4", 1)
    assert c.instructions_per_b_byte == Fraction(11, 128)
    # bfdot's best tile (1x84x2) ties bfmmla's 2x42x4 on instructions and modeled cycles per B
    # byte (one B register per MAC instruction at the same rate, 21 accumulators, 22 loads
    # each); bfmmla also serves M = 2, so it stays
    main = choose_main("bfmmla").candidate
    c = gemv.choose("bfmmla", main.ep, main.hp, main.strategy)
    dot = gemv.gemv_candidates("bfdot")[0]
    assert gemv.instructions_per_b_byte(dot) == c.instructions_per_b_byte
    assert (c.candidate.instruction, c.max_m) == ("bfmmla", 2)


def test_gemv_instructions_are_generated_and_the_others_get_none():
    # fmla_f16 and fmlal have no GEMV kernel yet; sudot and bfdot only as GEMV forms
    assert set(gemv.GEMV_INSTRUCTIONS) <= set(GENERATED["v86"])
    for name in set(GENERATED["v86"]) - set(gemv.GEMV_INSTRUCTIONS):
        main = choose_main(name).candidate
        assert gemv.choose(name, main.ep, main.hp, main.strategy) is None


def test_gemv_ranking_is_by_instructions_per_b_byte():
    ranked = gemv.gemv_candidates("sdot")
    costs = [gemv.instructions_per_b_byte(c) for c in ranked]
    assert costs == sorted(costs) and len(ranked) > 3


@pytest.mark.parametrize("name,core,want", [
    # Neoverse N2: SDOT 2/cycle, each reads a 16-byte B register -> 32 B/cycle
    ("sdot", "neoverse-n2", 32.0),
    # smlal: one 16-byte int16 B register feeds smlal + smlal2 at 1/cycle -> 8 B/cycle
    ("smlal", "neoverse-n2", 8.0),
    # Neoverse V1: FMLA 4/cycle but 3 loads/cycle: 16 B x 3 = 48 B/cycle
    ("fmla_f32", "neoverse-v1", 48.0),
    # Cortex-A55: 1 load of 128 bits per cycle, fmla 2/cycle, 2-wide issue:
    # max(0.5, 1, 1.25/2) = 1 cycle per register -> 16 B/cycle
    ("fmla_f32", "cortex-a55", 16.0),
])
def test_compute_bound_from_the_instruction_mix(name, core, want):
    assert gemv.compute_bound(name, CORES[core]) == pytest.approx(want)


@pytest.mark.parametrize("mmla", sorted(gemv.DOT_OF_MMLA))
def test_dot_vs_mmla_says_who_wins_and_why(mmla):
    text = gemv.dot_vs_mmla(mmla)
    dot = gemv.DOT_OF_MMLA[mmla]
    assert "verdict at M = 1" in text and mmla in text and dot in text
    assert "useful MACs" in text and "why" in text.lower()


def _profile(dims=(1, 4096, 4096), prepacked=True, shape="gemv", cycles=1000.0, memory=None):
    return dict(error=None, shape=shape, prepacked=prepacked, dims=list(dims), macs=dims[0] * dims[1] * dims[2],
                kernel_instruction="sdot", cycles={"neoverse-n2": {"total": cycles}},
                memory=memory)


def test_decode_metrics_weight_bytes_per_cycle():
    d = decode_metrics(_profile(cycles=4096 * 4096 / 16.0), "neoverse-n2")
    assert d["weight_bytes"] == 4096 * 4096 and d["modeled"] == pytest.approx(16.0)
    assert d["compute_bound"] == pytest.approx(32.0) and d["of_compute_bound"] == pytest.approx(0.5)
    assert decode_metrics(_profile(prepacked=False), "neoverse-n2") is None
    assert decode_metrics(_profile(shape="prefill", dims=(128, 4096, 4096)), "neoverse-n2") is None


def test_decode_metrics_memory_bound():
    # 2^24 weight bytes; L2 misses only: DRAM-bound at the modeled share of Neoverse N2
    lines = 4096 * 4096 // 64
    memory = {"neoverse-n2": {"total": dict(l1_misses=lines, l1_writebacks=0, l2_misses=lines,
                                            l2_writebacks=0)}}
    d = decode_metrics(_profile(cycles=4096 * 4096 / 30.0, memory=memory), "neoverse-n2")
    from gen.cores import MEMORY
    dram = MEMORY["neoverse-n2"].dram_bytes_per_cycle
    assert d["limiter"] == "DRAM" and d["memory_bound"] == pytest.approx(dram)
    assert d["bound"] == pytest.approx(dram) and d["of_bound"] == pytest.approx(1.0)


# ---- the GEMV candidate set and the emitter agree ---------------------------------------------

def _gemv_forms():
    return sorted({f for name in gemv.GEMV_INSTRUCTIONS
                   for f in (name, *gemv.GEMV_FORMS.get(name, ()))})


@pytest.mark.parametrize("cpu", CPU_NAMES)
def test_every_gemv_candidate_builds_and_the_chosen_one_assembles(cpu, tmp_path):
    """Every tile gemv_candidates offers, for every GEMV instruction and form on every CPU=
    name, has a main loop the emitter builds (gen.emit.main_loop_variants raises for one it
    cannot: smlal 1x92 stream_b_double_a, whose B loads LDR / LDUR cannot reach, was once
    chosen), the solver's tiles it leaves out are exactly the ones the emitter refuses, and the
    GEMV kernel chosen for each path's GEMM tile is emitted and assembled by aarch64 gcc."""
    sources = []
    for form in _gemv_forms():
        inst = INSTRUCTIONS[form]
        try:
            raw = [c for c in candidates(form, cpu=cpu) if c.ep == inst.c_rows_per_reg]
        except TilingError:
            continue                   # the CPU lacks the instruction's feature
        offered = gemv.gemv_candidates(form, cpu=cpu)
        for c in raw:
            try:
                main_loop_variants(plan_for(c, cpu))
                builds = True
            except KernelPlanError:
                builds = False
            assert (c in offered) == builds, (cpu, c.label)
    for name in gemv.GEMV_INSTRUCTIONS:
        try:
            main = choose_main(name, cpu=cpu).candidate
        except TilingError:
            continue
        choice = gemv.choose(name, main.ep, main.hp, main.strategy, cpu=cpu)
        if choice is None:
            continue
        kernel = emit_kernel(plan_for(choice.candidate, cpu), "ts_", "auto", cpu)
        path = tmp_path / f"{name}.S"
        path.write_text(kernel.text)
        sources.append(path)
    assert sources
    proc = subprocess.run([GCC, "-march=armv8-a", "-c", *map(str, sources)], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# ---- small M on the SME paths (gen/sme_gemv.py) --------------------------------------------------

def test_sme_gemv_model_is_the_bench_model():
    """The dispatch rule's SME-unit figures are bench/sme_model.py's (APPLE_M4), so the rule and
    the bench's decode figures price the SME tile alike."""
    from bench.sme_model import APPLE_M4
    from gen import sme_gemv
    assert {k: float(v) for k, v in sme_gemv.SME_MOPA_PER_CYCLE.items()} == APPLE_M4.mopa_per_cycle
    assert float(sme_gemv.SME_LOADS_PER_CYCLE) == APPLE_M4.load_per_cycle
    assert float(sme_gemv.SME_CORE_IPC) == APPLE_M4.core_ipc


def test_sme_main_step_prices_the_tile_per_gemv_k_step():
    """fp32 2x2 ZA tiles: 4 FMOPAs per k at 1 per cycle (loads: 4 vectors, 1 per cycle) = 4
    cycles, x IPC 4 = 16 per GEMV k-step of 1 k; int8 1x4: 4 SMOPAs per 4 k at 1/2 per cycle =
    2 cycles per k, x 8 k (smmla's lp) x 4 = 64; bf16 2x2: 4 BFMOPAs per 2 k at 1/2 = 4 per k,
    x 4 k x 4 = 64."""
    from gen.sme_gemv import sme_main_step
    assert sme_main_step("fmopa_f32", 2, 2, 1) == 16
    assert sme_main_step("smopa", 1, 4, 8) == 64
    assert sme_main_step("bfmopa", 2, 2, 4) == 64
    assert sme_main_step("usmopa", 1, 4, 4) == 32


# ---- the instruction counts are the emitted loops' ---------------------------------------------

_VECTOR_OPERAND = re.compile(r"\b[vqdsh]\d+\b")


def _emitted_step_instructions(text: str) -> int:
    """MAC and load instructions per k-step of a kernel's main loop, read from its assembly
    (independent of gen.emit: the lines from K_LOOP: to its branch back that touch a vector
    register — the integer pointer advances, counter and branch touch none — over the k-steps
    its `subs x2` counts), rounded up like the dispatch table's."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "K_LOOP:")
    end = next(i for i in range(start, len(lines))
               if lines[i].split("//")[0].split()[-1:] == ["K_LOOP"])
    body = [line.split("//")[0].strip() for line in lines[start + 1:end]]
    counters = [re.fullmatch(r"subs x2, x2, #(\d+)", code) for code in body]
    steps = int(next(m for m in counters if m).group(1))
    count = sum(1 for code in body if code and _VECTOR_OPERAND.search(code))
    return -(-count // steps)


@pytest.mark.parametrize("cpu", CPU_NAMES)
def test_gemv_counts_are_the_emitted_main_loops(cpu):
    """step_instructions (the GEMV kernel's) and main_step_instructions (the GEMM kernel's),
    which the dispatch table's narrow-B rule, the manifest and `make tiles` use, equal the MAC
    and load instructions per k-step of the kernels generated for `cpu` (every GEMV kernel of
    every ARCH: a kernel depends on the instruction and CPU only). They once differed: sdot /
    udot 1x32x4 were counted 11 (B as two 4-register `ld1`) but emitted with 8 `ldr q` for
    Cortex-A55 (17), which models faster there."""
    from gen.tile_policy import solve
    checked = 0
    for name in gemv.GEMV_INSTRUCTIONS:
        try:
            main_plan = solve(name, cpu=cpu)
        except TilingError:
            continue
        choice = gemv.choose(name, main_plan.ep, main_plan.hp, main_plan.strategy, cpu=cpu)
        if choice is None:
            continue
        small = emit_kernel(plan_for(choice.candidate, cpu), "ts_", "never", cpu).text
        main = emit_kernel(main_plan, "ts_", "never", cpu).text
        assert choice.step_instructions == _emitted_step_instructions(small), (cpu, name)
        assert choice.main_step_instructions == _emitted_step_instructions(main), (cpu, name)
        inst = INSTRUCTIONS[choice.candidate.instruction]
        assert choice.instructions_per_b_byte == Fraction(
            choice.step_instructions, gemv.b_bytes_per_step(inst, choice.candidate.hp))
        checked += 1
    assert checked
