"""Tests of the register-tiling solver (gen/tiling.py) and its CLI (gen/tiles_cli.py).

The reference is an independent brute force written here from the model's definition (counting
which accumulator reads which A/B register), not the solver's enumeration."""
import json
import math
from fractions import Fraction

import pytest

from gen import tile_policy, tiles_cli
from gen.cores import CPU_NAMES, cores_for
from gen.isa import INSTRUCTIONS, TYPE_BYTES, instructions_for
from gen.plan import TilePlan
from gen.tiling import TilingError, candidates, solve

BUDGETS = (32, 24, 16)
SINGLE_LOAD_BYTES = {1, 2, 4, 8, 16}      # LDR B/H/S/D/Q
CALLEE_SAVED = set(range(8, 16))          # AAPCS64 v8-v15


# ---- independent reference -----------------------------------------------------------------

def _ceil(a, b):
    return -(-a // b)


def _acc_block(inst):
    """(rows, cols) of C one accumulator register holds."""
    lanes = 16 // TYPE_BYTES[inst.c_type]
    return (1, lanes) if inst.acc_shape == "row" else (2, 2)


def _reader_counts(inst, ep, hp):
    """MACs per k-step that read each A register and each B register (one MAC per
    accumulator per k-step)."""
    crow, ccol = _acc_block(inst)
    a_reads = [0] * _ceil(ep, inst.a_rows_per_reg)
    b_reads = [0] * _ceil(hp, inst.b_cols_per_reg)
    for rb in range(ep // crow):
        for cb in range(hp // ccol):
            a_reads[rb * crow // inst.a_rows_per_reg] += 1
            b_reads[cb * ccol // inst.b_cols_per_reg] += 1
    return a_reads, b_reads


def _refill_need(cores, name):
    """MACs that must issue between a register's last read and its refilled value's first read
    on the in-order cores (0 if none): the refill load's latency x MACs per cycle. The load is
    `ld1` of one register where the MAC is not RetireOOO (in-order write-back), else `ldr q`;
    latencies read from the cores' issue tables."""
    need = 0
    for c in cores:
        if c.in_order:
            load = "ldr_q" if c.ops[name].retire_ooo else "ld1_1"
            need = max(need, math.ceil(c.ops[load].latency * c.throughput(name)))
    return need


def _mac_sequence(inst, ep, hp, outer):
    """(A register index, B register index) of every MAC of one k-step in the kernels' order:
    outer operand's registers in the outer loop, the other operand's inside, then the rest."""
    crow, ccol = _acc_block(inst)
    macs = []
    for rb in range(ep // crow):
        for cb in range(hp // ccol):
            macs.append((rb * crow // inst.a_rows_per_reg, cb * ccol // inst.b_cols_per_reg,
                         rb, cb))
    key = (lambda m: (m[0], m[1], m[3], m[2])) if outer == "a" else \
        (lambda m: (m[1], m[0], m[3], m[2]))
    return [(m[0], m[1]) for m in sorted(macs, key=key)]


def _refill_gaps(inst, ep, hp, outer, outer_set):
    """Smallest number of MACs between the last read of a register and the first read of its
    next content, over two consecutive k-steps laid end to end: for the outer operand (chunk j
    in register j % outer_set) and for the single-buffered inner operand."""
    seq = _mac_sequence(inst, ep, hp, outer)
    o, i = (0, 1) if outer == "a" else (1, 0)
    two = [(step, m) for step in range(2) for m in seq]
    n_outer = max(m[o] for m in seq) + 1

    def gap(reads_old, reads_new):
        return min(reads_new) - max(reads_old) - 1

    outer_gaps, inner_gaps = [], []
    for j in range(n_outer):
        # register j % outer_set next holds chunk j + outer_set, or the next k-step's chunk
        # j % outer_set once this step's chunks run out
        nxt_step, nxt = (0, j + outer_set) if j + outer_set < n_outer else (1, j % outer_set)
        old = [p for p, (s_, m) in enumerate(two) if s_ == 0 and m[o] == j]
        new = [p for p, (s_, m) in enumerate(two) if s_ == nxt_step and m[o] == nxt]
        outer_gaps.append(gap(old, new))
    for r in range(max(m[i] for m in seq) + 1):
        old = [p for p, (s_, m) in enumerate(two) if s_ == 0 and m[i] == r]
        new = [p for p, (s_, m) in enumerate(two) if s_ == 1 and m[i] == r]
        inner_gaps.append(gap(old, new))
    return min(outer_gaps), min(inner_gaps)


def _stream_set(n, inst, ep, hp, outer, need):
    """Smallest rotating set (2 <= s < n, s | n) whose refills of the streamed outer operand
    land in time; None if there is none."""
    for s in range(2, n):
        if n % s == 0 and _refill_gaps(inst, ep, hp, outer, s)[0] >= need:
            return s
    return None


def _loads(n_a, n_b, strategy):
    """Load instructions per k-step: one per register, a double-buffered bank in ld1 groups of 4."""
    doubled = {"a": strategy in ("double_a", "stream_b_double_a", "double"),
               "b": strategy in ("double_b", "stream_a_double_b", "double")}
    return sum(_ceil(n, 4) if doubled[x] else n for x, n in (("a", n_a), ("b", n_b)))


def brute_force(name, regs, cpu, min_accumulators=None):
    """{(ep, hp, strategy): (regs_a, regs_b, regs_c, cost, loads per MAC)} for every feasible
    tile (at least `min_accumulators` accumulators; default: every covered core's latency x
    MACs per cycle)."""
    inst = INSTRUCTIONS[name]
    cores = [c for c in cores_for(cpu) if c.has(inst.feature)]
    need_acc = (max(math.ceil(c.latency(name) * c.throughput(name)) for c in cores)
                if min_accumulators is None else min_accumulators)
    need = _refill_need(cores, name)
    crow, ccol = _acc_block(inst)
    a_bytes, b_bytes = TYPE_BYTES[inst.a_type], TYPE_BYTES[inst.b_type]
    found = {}
    for ep in range(crow, 4 * regs + 1, crow):
        for hp in range(ccol, 16 * regs + 1, ccol):
            n_c = (ep // crow) * (hp // ccol)
            if n_c > regs or n_c < need_acc:
                continue
            n_a, n_b = _ceil(ep, inst.a_rows_per_reg), _ceil(hp, inst.b_cols_per_reg)
            last_a = (ep - (n_a - 1) * inst.a_rows_per_reg) * inst.k * a_bytes
            last_b = (hp - (n_b - 1) * inst.b_cols_per_reg) * inst.k * b_bytes
            if last_a not in SINGLE_LOAD_BYTES or last_b not in SINGLE_LOAD_BYTES:
                continue
            cost = Fraction(ep * a_bytes + hp * b_bytes, ep * hp)
            n = {"a": n_a, "b": n_b}
            resident_outer = "a" if n_a > n_b else "b"
            options = []
            if n_a + n_b + n_c <= regs and min(_refill_gaps(
                    inst, ep, hp, resident_outer, n[resident_outer])) >= need:
                options.append(("resident", n_a, n_b))
            else:
                for outer, inner in (("a", "b"), ("b", "a")):
                    s = _stream_set(n[outer], inst, ep, hp, outer, need)
                    if s and _refill_gaps(inst, ep, hp, outer, s)[1] >= need:
                        options.append((f"stream_{outer}", *((s, n_b) if outer == "a"
                                                             else (n_a, s))))
                if need and len(_mac_sequence(inst, ep, hp, "a")) >= need:
                    for outer, inner in (("a", "b"), ("b", "a")):
                        sets = {inner: 2 * n[inner]}
                        if _refill_gaps(inst, ep, hp, outer, n[outer])[0] >= need:
                            options.append((f"double_{inner}",
                                            *{outer: n[outer], **sets}.values()) if outer == "a"
                                           else (f"double_{inner}", sets["a"], n["b"]))
                        s = _stream_set(n[outer], inst, ep, hp, outer, need)
                        if s:
                            both = {outer: s, **sets}
                            options.append((f"stream_{outer}_double_{inner}", both["a"],
                                            both["b"]))
                    options.append(("double", 2 * n_a, 2 * n_b))
            for strategy, ra, rb in options:
                if ra + rb + n_c <= regs and ra <= inst.a_index_regs:
                    loads = Fraction(_loads(n_a, n_b, strategy), n_c) if need else Fraction(0)
                    found[(ep, hp, strategy)] = (ra, rb, n_c, cost, loads)
    return found


def _cases():
    return [(n, r, c) for n in INSTRUCTIONS for r in BUDGETS for c in CPU_NAMES
            if any(k.has(INSTRUCTIONS[n].feature) for k in cores_for(c))]


# ---- optimality against the brute force ----------------------------------------------------

@pytest.mark.parametrize("name,regs,cpu", _cases())
def test_choice_is_optimal_under_the_model(name, regs, cpu):
    reference = brute_force(name, regs, cpu)
    if not reference:
        with pytest.raises(TilingError, match="no .* tile fits"):
            solve(name, regs, cpu)
        return
    ranked = candidates(name, regs, cpu)
    got = {(c.ep, c.hp, c.strategy): (c.regs_a, c.regs_b, c.regs_c, c.exact_bytes_per_mac,
                                      c.loads_per_mac)
           for c in ranked}
    assert got == reference
    best_cost = min(v[3] for v in reference.values())
    best_loads = min(v[4] for v in reference.values() if v[3] == best_cost)
    tied = {k: v for k, v in reference.items() if v[3:] == (best_cost, best_loads)}
    best_regs = min(sum(v[:3]) for v in tied.values())
    best_square = min(abs(ep - hp) for (ep, hp, _), v in tied.items() if sum(v[:3]) == best_regs)
    plan = solve(name, regs, cpu)
    assert Fraction(plan.bytes_per_mac).limit_denominator(10**6) == best_cost
    assert plan.regs_total == best_regs <= regs
    assert abs(plan.ep - plan.hp) == best_square
    assert [c.rank for c in ranked] == list(range(len(ranked)))


@pytest.mark.parametrize("name,cpu,least", [("bfmmla", "generic", 1), ("sdot", "generic", 4),
                                            ("fmla_f32", "cortex-a55", 4)])
def test_relaxed_accumulator_rule_matches_the_brute_force(name, cpu, least):
    """The tile policy's pool (gen/tile_policy.py): the latency rule relaxed to `least`."""
    ranked = candidates(name, 32, cpu, min_accumulators=least)
    got = {(c.ep, c.hp, c.strategy): (c.regs_a, c.regs_b, c.regs_c, c.exact_bytes_per_mac,
                                      c.loads_per_mac) for c in ranked}
    assert got == brute_force(name, 32, cpu, least)
    assert min(c.regs_c for c in ranked) < min(c.regs_c for c in candidates(name, 32, cpu))


@pytest.mark.parametrize("least", [0, -1, 2.5, True, "4"])
def test_relaxed_accumulator_rule_refuses_nonsense(least):
    with pytest.raises(TilingError, match="min_accumulators must be a positive integer"):
        candidates("sdot", min_accumulators=least)


@pytest.mark.parametrize("name,regs,cpu", _cases())
def test_registers_distinct_and_within_limits(name, regs, cpu):
    try:
        plan = solve(name, regs, cpu)
    except TilingError:
        return                      # infeasibility is checked against the brute force above
    inst = INSTRUCTIONS[name]
    everything = plan.a_regs + plan.b_regs + plan.c_regs
    assert len(set(everything)) == len(everything) == plan.regs_total <= regs
    assert all(0 <= r < 32 for r in everything)
    assert max(plan.a_regs) < inst.a_index_regs
    assert len(plan.c_regs) == (plan.ep // inst.c_rows_per_reg) * (plan.hp // inst.c_cols_per_reg)
    if plan.strategy == "resident":
        assert len(plan.a_regs) == _ceil(plan.ep, inst.a_rows_per_reg)
        assert len(plan.b_regs) == _ceil(plan.hp, inst.b_cols_per_reg)
    if plan.regs_total <= 24:      # fits without callee-saved registers: none used
        assert not CALLEE_SAVED.intersection(everything)
    blocks = {plan.c_reg_for(r, c) for r in range(plan.ep // inst.c_rows_per_reg)
              for c in range(plan.hp // inst.c_cols_per_reg)}
    assert blocks == set(plan.c_regs)
    assert isinstance(plan, TilePlan) and plan.lp == inst.k and plan.cpu == cpu


# ---- published tiles -----------------------------------------------------------------------
# The published tiles are tuned for out-of-order cores: they are checked on Neoverse N2, where
# the register renamer hides every refill. For CPU=generic the in-order cores' refill rule
# excludes them (an operand read by every MAC group cannot be reloaded in time without a
# second bank), which test_published_tiles_miss_the_in_order_refill_rule states.
OOO = "neoverse-n2"


def _candidate(name, ep, hp, strategy, cpu=OOO):
    matches = [c for c in candidates(name, cpu=cpu) if (c.ep, c.hp, c.strategy) == (ep, hp, strategy)]
    assert matches, f"{name} {ep}x{hp} {strategy} is not a feasible candidate"
    return matches[0]


def test_mnn_smmla_4x20_resident():
    # Seed 001 (GemmInt8实现): ep=4, hp=20, lp=8; weight 2 + input 10 + result 20 = 32 regs.
    c = _candidate("smmla", 4, 20, "resident")
    assert (c.lp, c.regs_a, c.regs_b, c.regs_c, c.regs_total) == (8, 2, 10, 20, 32)
    assert c.bytes_per_mac == pytest.approx((4 + 20) / (4 * 20)) == pytest.approx(0.3)
    assert solve("smmla", cpu=OOO).bytes_per_mac <= 0.3


def test_mnn_bfmmla_12x8_streams_b():
    # Seed 001 (GemmBF16实现): ep=12, hp=8, lp=4 needs 6 + 4 + 24 = 34 registers if resident,
    # so B is loaded in two halves: 6 + 2 + 24 = 32; (12 + 8) * 2 bytes / 96 MACs.
    assert not [c for c in candidates("bfmmla", cpu=OOO)
                if (c.ep, c.hp, c.strategy) == (12, 8, "resident")]
    c = _candidate("bfmmla", 12, 8, "stream_b")
    assert (c.lp, c.regs_a, c.regs_b, c.regs_c, c.regs_total) == (4, 6, 2, 24, 32)
    assert c.bytes_per_mac == pytest.approx(40 / 96)
    best = solve("bfmmla", cpu=OOO)
    assert best.bytes_per_mac <= 40 / 96 + 1e-12 and best.regs_total <= 32


def test_acl_smmla_8x12():
    # Seed 004: ACL / TVM use 8x12 for smmla: 4 A + 6 B + 24 C = 34 resident, so one operand
    # streams; streaming B through 2 registers: 4 + 2 + 24 = 30; 20 bytes / 96 MACs.
    c = _candidate("smmla", 8, 12, "stream_b")
    assert (c.regs_a, c.regs_b, c.regs_c) == (4, 2, 24)
    assert c.bytes_per_mac == pytest.approx(20 / 96)
    best = solve("smmla", cpu=OOO)
    assert best.bytes_per_mac <= c.bytes_per_mac + 1e-12 and best.regs_total <= 30


@pytest.mark.parametrize("name,ep,hp,strategy", [("smmla", 4, 20, "resident"),
                                                 ("bfmmla", 12, 8, "stream_b"),
                                                 ("smmla", 8, 12, "stream_b")])
def test_published_tiles_miss_the_in_order_refill_rule(name, ep, hp, strategy):
    inst = INSTRUCTIONS[name]
    a510 = [c for c in cores_for("cortex-a510")]
    need = _refill_need(a510, name)
    outer = "b" if strategy == "stream_b" or inst.b_regs(hp) >= inst.a_regs(ep) else "a"
    n_outer = inst.b_regs(hp) if outer == "b" else inst.a_regs(ep)
    outer_set = 2 if strategy.startswith("stream") else n_outer
    assert min(_refill_gaps(inst, ep, hp, outer, outer_set)) < need
    assert not [c for c in candidates(name, cpu="cortex-a510")
                if (c.ep, c.hp, c.strategy) == (ep, hp, strategy)]


# ---- explanations, errors, determinism -----------------------------------------------------

def test_plan_explains_edges_and_streaming():
    plan = solve("bfmmla")
    assert "zero-pads" in plan.edge and "m_rem / n_rem" in plan.edge
    assert "scratch" not in plan.edge   # kernel contract v2: the kernel stores the edge itself
    assert f"1 - rm*rn/({plan.ep}*{plan.hp})" in plan.edge
    if plan.strategy != "resident":
        assert any("rotate through" in n for n in plan.notes)
    assert any("accumulators" in n for n in plan.notes)


@pytest.mark.parametrize("args,message", [
    (("smmla", 4), "no smmla tile fits 4"),
    (("smmla", 33), "out of range"),
    (("smmla", 0), "out of range"),
    (("smmla", "32"), "must be an integer"),
    (("nope",), "unknown instruction"),
    (("smmla", 32, "pentium"), "unknown CPU"),
    (("smmla", 32, "cortex-a55"), "does not have i8mm"),
])
def test_errors(args, message):
    with pytest.raises(TilingError, match=message):
        solve(*args)
    assert issubclass(TilingError, ValueError)


def test_deterministic():
    assert candidates("sdot", 24, "cortex-a510") == candidates("sdot", 24, "cortex-a510")
    assert solve("smmla") == solve("smmla")


# ---- CLI -----------------------------------------------------------------------------------

def test_cli_table(capsys):
    assert tiles_cli.main(["--arch", "v82"]) == 0
    out = capsys.readouterr().out
    for inst in instructions_for("v82"):
        plan = tile_policy.solve(inst.name)
        assert f"== {inst.name}: {plan.ep}x{plan.hp}x{plan.lp} {plan.strategy}" in out
    assert "smmla" not in out and "runners-up:" in out and "edge:" in out
    assert out.count("  policy: solver's choice: meets the targets on every core") == len(
        instructions_for("v82"))


def test_cli_shows_the_maximin(capsys):
    assert tiles_cli.main(["--arch", "v86", "--instruction", "bfmmla", "--format", "json"]) == 0
    (tile,) = json.loads(capsys.readouterr().out)["tiles"]
    choice = tile_policy.choose("bfmmla")
    assert (tile["ep"], tile["hp"], tile["strategy"]) == (choice.candidate.ep, choice.candidate.hp,
                                                          choice.candidate.strategy)
    assert tile["policy"].startswith("maximin:") and len(tile["maximin"]) == len(choice.weighed)
    worst = [w["worst"]["percent"] for w in tile["maximin"]]
    chosen = next(w for w in tile["maximin"] if w["tile"] == choice.candidate.label)
    assert chosen["worst"]["percent"] == max(worst)
    assert tile["solver_choice"]["tile"] == candidates("bfmmla")[0].label


def test_cli_json(capsys):
    assert tiles_cli.main(["--format", "json", "--arch", "v86", "--cpu", "neoverse-n2"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [t["instruction"] for t in data["tiles"]] == [i.name for i in instructions_for("v86")]
    for t in data["tiles"]:
        plan = solve(t["instruction"], 32, "neoverse-n2")
        assert (t["ep"], t["hp"], t["lp"], t["strategy"]) == (plan.ep, plan.hp, plan.lp, plan.strategy)
        assert (t["regs_a"], t["regs_b"], t["regs_c"]) == (len(plan.a_regs), len(plan.b_regs),
                                                           len(plan.c_regs))
        assert t["bytes_per_mac"] == pytest.approx(plan.bytes_per_mac, abs=1e-4)
        assert 0 < len(t["runners_up"]) <= 5
        assert all(r["bytes_per_mac"] >= t["bytes_per_mac"] for r in t["runners_up"])


def test_cli_marks_missing_features(capsys):
    assert tiles_cli.main(["--arch", "v86", "--cpu", "cortex-a55", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data["unavailable"]) == {"usdot", "sudot", "bfdot", "fmlal", "smmla", "ummla",
                                        "usmmla", "bfmmla"}   # A55: no FHM, i8mm, bf16
    assert data["not_generated"] == ["usdot"]                # described, no ARCH generates it
    assert set(data["left_out"]) == {"bfmlalb", "usdot"}     # with the reasons make tiles prints


@pytest.mark.parametrize("argv,message", [
    (["--regs", "4"], "no fmla_f32 tile fits 4"),
    (["--regs", "33"], "out of range"),
    (["--regs", "many"], "invalid int"),
    (["--arch", "v9"], "unknown arch"),
    (["--cpu", "pentium"], "unknown CPU"),
    (["--instruction", "nope"], "unknown instruction"),
    (["--arch", "v8", "--instruction", "smmla"], "needs ARCH v86"),
    (["--cpu", "cortex-a55", "--instruction", "bfmmla"], "does not have bf16"),
])
def test_cli_errors(capsys, argv, message):
    assert tiles_cli.main(argv) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""


def test_cli_deterministic(capsys):
    outputs = []
    for _ in range(2):
        assert tiles_cli.main(["--format", "json"]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]


def _sdot_faster(m1):
    """From the figures alone: the cores where the sdot decode kernel's modeled weight bytes
    per cycle beat smmla's by more than a tie, and those where they lose."""
    r = m1["weight_bytes_per_cycle"]
    faster = [c for c in r["smmla"] if r["sdot"][c] > r["smmla"][c] * 1.005]
    slower = [c for c in r["smmla"] if r["sdot"][c] < r["smmla"][c] * 0.995]
    return faster, slower


def test_cli_qdyn_verdict_follows_from_the_numbers(capsys):
    """`make tiles` lists per qdyn kind the prefill / decode kernel of each path and, at M = 1,
    which decode kernel wins: the statement must follow from the listed rates (the winner on
    exactly the cores whose rate is higher, the ratio printed) and the layouts (sdot's lp-4
    handle is not the i8mm one: i8mm runs smmla)."""
    assert tiles_cli.main(["--format", "json", "--arch", "v86"]) == 0
    qdyn = {e["kind"]: e for e in json.loads(capsys.readouterr().out)["qdyn"]}
    assert set(qdyn) == {"int4 per channel", "int4 scale blocks", "int8 per channel"}
    paths = {p["instruction"]: p for p in qdyn["int8 per channel"]["paths"]}
    assert paths["smmla"]["decode"] == "ts_gemm_s8s8f32_smmla_2x16x16"
    # the dotprod path: the raw 8x12 kernel + C epilogue, at M <= 4 the decode kernel over 5 of
    # the same panels, the epilogue inside (gen/qdyn8_dot.py); by hand, Neoverse N2: per k-step
    # of 240 weight bytes 15 sdot at 2 per cycle (each accumulator's chain: 3): 7.5 cycles
    assert paths["sdot"]["prefill"] is None
    assert paths["sdot"]["decode"] == "ts_gemm_s8s8f32_sdot_1x60x4"
    int8 = qdyn["int8 per channel"]["m1"]
    assert int8["weight_bytes_per_cycle"]["sdot"]["neoverse-n2"] == pytest.approx(240 / 7.5)
    blocks = qdyn["int4 scale blocks"]["m1"]
    # by hand, Neoverse N2 (two vector pipes), bl = 32: smmla 2x12 per block 24 smmla, 24
    # unpack, 24 epilogue operations for 192 weight bytes; sdot 1x20 40 sdot, 40 unpack, 20
    # epilogue for 320
    assert blocks["weight_bytes_per_cycle"]["smmla"]["neoverse-n2"] == pytest.approx(192 / 36, abs=0.01)
    assert blocks["weight_bytes_per_cycle"]["sdot"]["neoverse-n2"] == pytest.approx(320 / 50, abs=0.01)
    for kind in ("int4 per channel", "int4 scale blocks", "int8 per channel"):
        m1 = qdyn[kind]["m1"]
        faster, slower = _sdot_faster(m1)
        text = m1["verdict"]
        r = m1["weight_bytes_per_cycle"]
        if faster and not slower:
            assert text.startswith("sdot wins on")
            named = text.split("(")[0]
            assert all(c in named for c in faster) or "every core" in named
            ratios = [r["sdot"][c] / r["smmla"][c] for c in faster]
            assert f"{min(ratios):.2f}" in text and f"{max(ratios):.2f}" in text
        assert not (slower and not faster) or text.startswith("smmla wins")
        assert m1["layout"]["sdot"] != m1["layout"]["smmla"]
        assert text.endswith("i8mm cores run the smmla kernel") or text.startswith("smmla wins")
    # scale blocks: sdot faster on every modeled i8mm core (this model), per channel a tie on
    # the out-of-order cores
    assert _sdot_faster(blocks) == (list(blocks["weight_bytes_per_cycle"]["smmla"]), [])


def test_qdyn_verdict_mixed_and_same_layout():
    """The verdict's branches on synthetic figures (the same function `make tiles` runs)."""
    from gen.qdyn_tiles import verdict
    mixed = verdict("k", {"smmla": {"a": 2.0, "b": 1.0}, "sdot": {"a": 1.0, "b": 3.0}},
                    {"smmla": (8, 4), "sdot": (4, 8)})
    assert mixed.startswith("mixed: sdot faster on b (3.00x), smmla on a (2.00x)")
    same = verdict("k", {"smmla": {"a": 1.0}, "sdot": {"a": 1.5}}, {"smmla": (8, 4), "sdot": (8, 4)})
    assert same == "sdot wins on every core (1.50x the smmla rate); one handle layout: an i8mm handle could run either"
    assert verdict("k", {"smmla": {"a": 2.0}, "sdot": {"a": 1.0}}, {"smmla": (8, 4), "sdot": (4, 8)}) \
        == "smmla wins on every core (2.00x the sdot rate): i8mm cores run it"
