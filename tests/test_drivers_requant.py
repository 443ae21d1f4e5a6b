"""Requantization driver (drivers/src/ts_requant.c): the scalar path, the NEON path and the
public ts_requantize against an independent arbitrary-precision Python model of TFLite's
MultiplyByQuantizedMultiplier (gemmlowp definitions), on edge cases and random sweeps, under
qemu -cpu max and -cpu cortex-a57 (plain Armv8.0)."""
from __future__ import annotations

import random
import subprocess
from fractions import Fraction

import pytest

from cross import GCC, QEMU, run_qemu
from drv_q_support import build_harness, render_templates

INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
DOUBLE, SINGLE = 0, 1


# ---- reference model -----------------------------------------------------------------------
# gemmlowp fixedpoint/fixedpoint.h and tensorflow/lite/kernels/internal/common.cc, on Python
# integers; the intermediates TFLite lets wrap saturate here (documented in requant.c.j2).

def saturate32(v: int) -> int:
    return max(INT32_MIN, min(INT32_MAX, v))


def srdhm(a: int, b: int) -> int:
    """gemmlowp SaturatingRoundingDoublingHighMul."""
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    q = abs(ab + nudge) // (1 << 31)            # C division truncates toward zero
    return q if ab + nudge >= 0 else -q


def rounding_divide_by_pot(x: int, exponent: int) -> int:
    """gemmlowp RoundingDivideByPOT."""
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def mbqm(rounding: int, x: int, m: int, shift: int) -> int:
    """MultiplyByQuantizedMultiplier (int32 x)."""
    if rounding == SINGLE:
        total = 31 - shift
        return saturate32((x * m + (1 << (total - 1))) >> total)
    left, right = max(shift, 0), max(-shift, 0)
    return rounding_divide_by_pot(srdhm(saturate32(x << left), m), right)


def mbqm_by_fractions(rounding: int, x: int, m: int, shift: int) -> int:
    """The same function stated as exact rational rounding, to cross-check `mbqm` itself:
    double = round-half-away(round-half-up(x' * m / 2^31) / 2^right), single =
    round-half-up(x * m * 2^shift / 2^31)."""
    def half_up(f: Fraction) -> int:
        return (f + Fraction(1, 2)).__floor__()

    def half_away(f: Fraction) -> int:
        return half_up(f) if f >= 0 else -half_up(-f)

    if rounding == SINGLE:
        return saturate32(half_up(Fraction(x * m) * Fraction(2)**shift / 2**31))
    left, right = max(shift, 0), max(-shift, 0)
    high = min(INT32_MAX, half_up(Fraction(saturate32(x << left) * m, 2**31)))
    return half_away(Fraction(high, 2**right))


def requant_ref(acc: int, offset: int, bias: int, m: int, shift: int, rounding: int,
                zp: int, lo: int, hi: int) -> int:
    x = (acc + offset + bias + 2**31) % 2**32 - 2**31     # int32 wrapping adds
    return max(lo, min(hi, mbqm(rounding, x, m, shift) + zp))


# ---- edge cases ----------------------------------------------------------------------------
EDGE_X = [INT32_MIN, INT32_MIN + 1, -(1 << 30) - 1, -(1 << 30), -12345679, -256, -3, -2, -1, 0,
          1, 2, 3, 255, 12345678, 1 << 30, (1 << 30) + 1, INT32_MAX - 1, INT32_MAX]
EDGE_M = [0, 1, 2, 1 << 29, 1 << 30, (1 << 30) + 1, 1518500250, INT32_MAX - 1, INT32_MAX]
EDGE_SHIFT = [-31, -30, -17, -8, -2, -1, 0, 1, 2, 8, 29, 30]


def tie_cases() -> list[tuple[int, int, int, int]]:
    """Inputs whose exact result is k + 1/2, positive and negative, for both rounding steps.
    multiplier 2^30 halves x: the high mul ties for odd x; x = (2j+1)*2^e makes the
    high-mul result (2j+1)*2^(e-1), which ties in the right shift by e."""
    cases = []
    for e in (1, 2, 5, 16, 30):
        for j in (0, 1, 7, -1, -2, -8):
            x = (2 * j + 1) << e
            if INT32_MIN <= x <= INT32_MAX:
                cases += [(r, x, 1 << 30, -e) for r in (DOUBLE, SINGLE)]
    for x in (1, 3, -1, -3, 101, -101, INT32_MAX, INT32_MIN + 1):
        cases += [(r, x, 1 << 30, 0) for r in (DOUBLE, SINGLE)]
    return cases


def edge_mul_cases() -> list[tuple[int, int, int, int]]:
    cases = [(r, x, m, s) for r in (DOUBLE, SINGLE) for x in EDGE_X for m in EDGE_M
             for s in EDGE_SHIFT]
    return cases + tie_cases()


def random_mul_cases(rng: random.Random, count: int) -> list[tuple[int, int, int, int]]:
    cases = []
    for _ in range(count):
        bits = rng.choice((8, 16, 24, 31, 32))
        x = rng.randrange(-2**(bits - 1), 2**(bits - 1))
        m = rng.choice((rng.randrange(1 << 30, 1 << 31), rng.randrange(0, 1 << 31)))
        cases.append((rng.choice((DOUBLE, SINGLE)), x, m, rng.randint(-31, 30)))
    return cases


def test_reference_model_agrees_with_rational_statement():
    """Guards the model: two different statements of the same rounding agree."""
    rng = random.Random(7)
    for case in edge_mul_cases() + random_mul_cases(rng, 3000):
        assert mbqm(*case) == mbqm_by_fractions(*case), case


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    return build_harness(tmp_path_factory.mktemp("requant"), "drv_q_requant.c", ["requant.c"])


def run_mul(binary, cases, cpu):
    """Per case (scalar, NEON, NEON without the left-shift step, NEON's all-right-shift form),
    the last two None where the driver would not use them (single rounding; a positive shift,
    respectively a shift >= 0)."""
    text = f"{len(cases)}\n" + "\n".join(" ".join(map(str, c)) for c in cases) + "\n"
    proc = run_qemu_stdin(binary, "mul", text, cpu)
    lines = proc.stdout.split("\n")[:-1]
    assert len(lines) == len(cases)
    return [tuple(None if v == "na" else int(v) for v in line.split()) for line in lines]


def expected_mul(case):
    """What run_mul must print for a case: the model's result from every applicable path."""
    rounding, _, _, shift = case
    want = mbqm(*case)
    return (want, want, want if rounding == DOUBLE and shift <= 0 else None,
            want if rounding == DOUBLE and shift < 0 else None)


def run_qemu_stdin(binary, mode, text, cpu):
    proc = subprocess.run([QEMU, "-cpu", cpu, str(binary), mode], input=text,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (f"{mode} on -cpu {cpu}: rc {proc.returncode}\n"
                                  f"{proc.stderr[-3000:]}")
    return proc


@pytest.mark.parametrize("cpu", ["max", "cortex-a57"])
def test_multiply_edge_cases_scalar_and_neon_match_reference(harness, cpu):
    cases = edge_mul_cases()
    got = run_mul(harness, cases, cpu)
    bad = [(c, expected_mul(c), g) for c, g in zip(cases, got) if g != expected_mul(c)]
    assert not bad, f"{len(bad)} mismatches (case, want, got), first: {bad[:5]}"
    # the special forms are exercised
    assert sum(g[2] is not None for g in got) > len(got) // 4
    assert sum(g[3] is not None for g in got) > len(got) // 4


def test_multiply_random_sweep(harness):
    cases = random_mul_cases(random.Random(2024), 40000)
    got = run_mul(harness, cases, "max")
    bad = [(c, expected_mul(c), g) for c, g in zip(cases, got) if g != expected_mul(c)]
    assert not bad, f"{len(bad)} mismatches, first: {bad[:5]}"


# ---- whole rows: bias, column offsets, zero point, clamp, per-channel, strides ------------------
def make_row_case(rng: random.Random, *, M, N, rounding, per_channel, col0=0, has_bias=True,
                  has_offset=False, ld_pad=0, front=0, acc_bits=None):
    cols = col0 + N
    channels = cols if per_channel else 1
    ld_acc, ldc = N + ld_pad, N + (ld_pad * 3) % 5
    lo = rng.randint(-128, 40)
    case = dict(rounding=rounding, per_channel=per_channel, zp=rng.randint(-128, 127),
                lo=lo, hi=rng.randint(lo, 127), M=M, N=N, ld_acc=ld_acc, ldc=ldc, col0=col0,
                front=int(front))

    def acc_value():
        bits = acc_bits or rng.choice((12, 16, 20, 32))
        return rng.randrange(-2**(bits - 1), 2**(bits - 1))
    case["acc"] = [acc_value() for _ in range(M * ld_acc)]
    case["bias"] = [rng.randrange(-2**20, 2**20) for _ in range(cols)] if has_bias else None
    case["offset"] = [rng.randrange(-2**18, 2**18) for _ in range(cols)] if has_offset else None
    case["mult"] = [rng.choice((rng.randrange(1 << 30, 1 << 31), 1 << 30, INT32_MAX))
                    for _ in range(channels)]
    case["shift"] = [rng.choice((rng.randint(-31, 30), rng.randint(-12, -4)))
                     for _ in range(channels)]
    return case


def encode_row_case(c) -> str:
    head = [c["rounding"], c["per_channel"], c["zp"], c["lo"], c["hi"], c["M"], c["N"],
            c["ld_acc"], c["ldc"], c["col0"], int(c["bias"] is not None),
            int(c["offset"] is not None), c["front"]]
    arrays = [c["acc"]] + [a for a in (c["bias"], c["offset"]) if a is not None]
    arrays += [c["mult"], c["shift"]]
    return " ".join(map(str, head)) + "\n" + "\n".join(" ".join(map(str, a)) for a in arrays)


def expected_rows(c) -> list[list[int]]:
    rows = []
    for m in range(c["M"]):
        row = []
        for j in range(c["N"]):
            col = c["col0"] + j
            ch = col if c["per_channel"] else 0
            row.append(requant_ref(c["acc"][m * c["ld_acc"] + j],
                                   c["offset"][col] if c["offset"] else 0,
                                   c["bias"][col] if c["bias"] else 0,
                                   c["mult"][ch], c["shift"][ch], c["rounding"],
                                   c["zp"], c["lo"], c["hi"]))
        rows.append(row)
    return rows


def check_rows(binary, cases, cpu):
    text = f"{len(cases)}\n" + "\n".join(encode_row_case(c) for c in cases) + "\n"
    out = run_qemu_stdin(binary, "row", text, cpu).stdout.split("case ")[1:]
    assert len(out) == len(cases)
    for index, (c, block) in enumerate(zip(cases, out)):
        lines = block.strip().split("\n")[1:]
        parsed: dict[str, list[list[int]]] = {}
        for line in lines:
            tag, *values = line.split()
            parsed.setdefault(tag, []).append(list(map(int, values)))
        want = expected_rows(c)
        label = f"case {index} ({ {k: v for k, v in c.items() if not isinstance(v, list)} })"
        assert parsed.get("row", []) == want, f"requant_row, {label}"
        assert parsed.get("scalar", []) == want, f"scalar path, {label}"
        assert parsed.get("neon", []) == (want if c["N"] >= 8 else []), f"NEON path, {label}"
        assert parsed.get("rows", []) == want, f"requant_rows, {label}"
        api = c["col0"] == 0 and c["offset"] is None
        assert parsed["gaps"] == [[0]] * (1 + api), f"wrote between rows, {label}"
        if api:
            assert parsed["rc"] == [[0]], label
            assert parsed.get("api", []) == want, f"ts_requantize, {label}"


def row_sweep(seed: int, count: int) -> list[dict]:
    rng = random.Random(seed)
    cases = []
    for i in range(count):
        cases.append(make_row_case(
            rng, M=rng.randint(1, 4),
            N=rng.choice((1, 3, 7, 8, 9, 15, 16, 17, 23, 31, 33, 40, 64, 100)),
            rounding=i % 2, per_channel=(i // 2) % 2, col0=rng.choice((0, 0, 5)),
            has_bias=rng.random() < 0.7, has_offset=rng.random() < 0.4,
            ld_pad=rng.choice((0, 0, 3)), front=i % 3 == 0))
    return cases


@pytest.mark.parametrize("cpu", ["max", "cortex-a57"])
def test_rows_random(harness, cpu):
    check_rows(harness, row_sweep(11, 120), cpu)


def test_rows_sensitive_outputs(harness):
    """Scales chosen so outputs land inside int8 instead of clamping: the rounding of every
    element shows in the result (acc up to 2^16, right shifts of 8..12 with m ~ 2^30)."""
    rng = random.Random(5)
    cases = []
    for i in range(40):
        c = make_row_case(rng, M=2, N=rng.choice((8, 13, 24)), rounding=i % 2,
                          per_channel=(i // 2) % 2, has_bias=True, acc_bits=17,
                          has_offset=i % 3 == 0, col0=i % 4)
        c["shift"] = [rng.randint(-12, -8) for _ in c["shift"]]
        c["bias"] = [rng.randrange(-2**10, 2**10) for _ in c["bias"]]
        c["lo"], c["hi"], c["zp"] = -128, 127, rng.randint(-20, 20)
        cases.append(c)
    inside = sum(-128 < v < 127 for c in cases for r in expected_rows(c) for v in r)
    total = sum(c["M"] * c["N"] for c in cases)
    assert inside > total // 2            # the data really exercises rounding, not the clamp
    check_rows(harness, cases, "max")


def block_mode_case(rng: random.Random, shifts: list[int], rounding: int) -> dict:
    """A per-channel case whose accumulators make every output an exact tie (k + 1/2) before
    the final rounding, so each rounding step shows in the result: multiplier 2^30 halves,
    acc = (2j+1) * 2^e with e the column's right shift (odd acc where there is none)."""
    N = len(shifts)
    c = make_row_case(rng, M=3, N=N, rounding=rounding, per_channel=1, has_bias=False)
    c["mult"] = [1 << 30] * N
    c["shift"] = shifts
    c["lo"], c["hi"], c["zp"] = -128, 127, 0
    c["acc"] = [(2 * rng.randint(-60, 59) + 1) << max(-shifts[j % N], 0)
                for j in range(c["M"] * c["ld_acc"])]
    return c


def test_rows_block_modes_on_ties(harness):
    """Column blocks of 16 whose shifts are all negative, at most 0, or partly positive (the
    NEON path's three double-rounding forms), plus an overlapping tail block, on ties."""
    rng = random.Random(9)
    all_negative = [rng.randint(-12, -1) for _ in range(16)]
    at_most_zero = [rng.randint(-12, 0) for _ in range(15)] + [0]
    some_positive = [rng.randint(-12, -1) for _ in range(15)] + [2]
    cases = [block_mode_case(rng, order, rounding)
             for order in (all_negative + at_most_zero + some_positive + all_negative[:5],
                           some_positive + all_negative + at_most_zero[:9])
             for rounding in (DOUBLE, SINGLE)]
    ties = sum(1 for c in cases for r in expected_rows(c) for v in r if -128 < v < 127)
    assert ties > sum(c["M"] * c["N"] for c in cases) * 3 // 4
    check_rows(harness, cases, "max")


# Checks of drv_q_requant.c's "bad" mode: each returns EINVAL with C untouched, except the
# empty problems / ignored a_zero_point (OK) and the ts_quant_validate checks (EINVAL or OK).
BAD_ARGUMENT_CHECKS = {
    "null_multiplier", "null_shift", "c_zp_high", "c_zp_low", "act_min_gt_max", "act_min_low",
    "act_max_high", "shift_low", "shift_high", "multiplier_negative", "multiplier_min",
    "rounding_2", "rounding_neg", "per_tensor_shift", "null_q", "null_acc", "null_c",
    "ld_acc_small", "ldc_small", "empty_but_bad_q", "empty", "requantize_ignores_a_zp",
    "validate_a_zp_high", "validate_a_zp_low", "validate_ok", "validate_last_channel",
    "validate_channels_read", "validate_null"}


def test_bad_arguments_rejected_output_untouched(harness):
    proc = run_qemu(harness, "bad", cpu="max", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ok = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("ok ")]
    assert sorted(ok) == sorted(BAD_ARGUMENT_CHECKS), proc.stdout


def test_clang_builds_and_matches(tmp_path):
    """The driver also builds with clang (-march=armv8-a) and computes the same."""
    binary = build_harness(tmp_path, "drv_q_requant.c", ["requant.c"], compiler="clang")
    check_rows(binary, row_sweep(3, 30), "max")


def test_requant_im2col_uzp_follow_the_prefix(tmp_path):
    """With PREFIX=qq_ every external symbol of the three drivers (and of error.c, whose
    ts_last_error they record into) carries the prefix, and they build as plain C99 for
    -march=armv8-a."""
    paths = render_templates(tmp_path, ["requant.c", "im2col.c", "uzp.c"], prefix="qq_")
    symbols = []
    for name in ("requant.c", "im2col.c", "uzp.c", "error.c"):
        obj = tmp_path / (name + ".o")
        subprocess.run([GCC, "-std=c99", "-march=armv8-a", "-O2", "-Wall", "-Wextra", "-Wpedantic",
                        "-Werror", "-I", str(tmp_path), "-c", str(paths[name]), "-o", str(obj)],
                       check=True)
        nm = subprocess.run(["aarch64-linux-gnu-nm", "--defined-only", "--extern-only", str(obj)],
                            capture_output=True, text=True, check=True).stdout
        symbols += [line.split()[-1] for line in nm.splitlines()]
    assert "qq_requantize" in symbols and "qq_uzp_mmla_f32" in symbols
    assert all(s.startswith("qq_") for s in symbols), symbols
    header = "".join(paths[h].read_text() for h in ("tilesmith.h", "quant_internal.h",
                                                     "error_internal.h"))
    assert "ts_" not in header and "TS_" not in header
