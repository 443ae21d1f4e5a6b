"""The out-of-order cores' strip (README "Micro-kernel ABI", strips): each tile's requantisation
runs on the integer pipes while the next tile's MACs run on the vector pipes.

On Neoverse N2 / V1 / Cortex-A710 every vector operation competes with the MACs for the same
two (four) vector pipes, and TFLite's exact requantisation of an 8x8 MMLA tile takes about 97 of
them (SQRDMULH, SSRA, SQRDMULH, the narrowing, the unzip, the stores; docs/PERFORMANCE.md,
"Bounds"): ~48 cycles on N2 beside 512 of MACs at K = 512. The integer pipes (four ALUs, two of
them with the multiplier) meanwhile only run the loop control. Here the strip stores a finished
tile's accumulators to its frame (8 `stp q`) and, during the next tile's k-loop, requantises
them one column per main-loop iteration with scalar code interleaved among the MACs; the last
tile of a strip takes the vector fast path (gen.epilogue fast_write) as before.

The scalar code is the vector fast path's arithmetic, exactly (rounding 2: double rounding,
every shift < 0), in 64-bit registers where nothing saturates:

    p = x * M + 2^30                  SQRDMULH(x, M) = p >> 31 (M != INT_MIN: no saturation;
                                      at x = M = INT_MIN the int8 result is 127 either way)
    r = p >> 31, r -= (r < 0)         SSRA #31 (ties away from zero)
    q = (r + 2^(s-1) + zp * 2^s) >> s SQRDMULH(r, 2^(31-s)) = (r + 2^(s-1)) >> s, + zero point
                                      (adding zp * 2^s before the shift adds zp after it)
    out = clamp(q, -128, 127)         SQXTN, SQADD zp, SQXTN saturate the same way

with s = -shift = CLZ(2^(31 + shift)) from the column's parameter block. Per output: one load,
SMADDL, two ADDs (shifted operand), ASRV, CMP (sign-extended byte), ASR + EOR (the saturated
value), CSEL, STRB; per column the multiplier, the shift and 2^(s-1) + zp 2^s.

Modeled (llvm-mca-19, one 8-k-step iteration of the smmla 8x8 loop with one column's code):
Neoverse N2 64 -> 64 cycles, V1 32 -> 32, Cortex-A710 64 -> 64 (the same with two columns
per iteration gives V1 38.5: its M0 pipe takes SMADDL and the shifted ADDs, so one column an
iteration). The in-order cores keep gen/strip.py's strip: their integer and vector operations
share issue slots.

Kernels with 8 rows, either accumulator layout (MMLA 2x2 tiles: smmla / usmmla; row vectors:
sdot), whose k-loop iteration has at least as many MACs as other instructions with a column's
code (peeled); the k-loop loads from x0 / x1 only (k_loop), so x3-x17 are free.
"""
from __future__ import annotations

import re

from . import epilogue as ep_mod
from . import loop
from .cores import CORE_CLASSES, core_class
from .schedule import Insn, text_insn as _i

PIPE_CLASS = "ooo"
ROWS = 8                        # the row bases below (two, four rows apart) and ldc x1..x3

# Registers of the scalar requantisation (x0-x2 are the k-loop's, x19-x28 the strip's).
QP, PBASE, PP, CJ, CJ4 = "x3", "x4", "x5", "x7", "x8"
L1, L2, L3, J, C30 = "x9", "x10", "x11", "x12", "x13"
MUL, SHIFT, HALF = "x14", "x15", "x16"
T1, T2 = "x17", "x30"

MARK = "KQ_E_LOOP:"     # in the text of a kernel whose strip is pipelined
LABELS = ("KQ_FIRST_LOOP", "KQ_TILE", "KQ_E_LOOP", "KQ_P_LOOP", "KQ_TAIL", "KQ_TAIL_PLAIN",
          "KQ_TILE_END", "KQ_LAST")

_LD1 = re.compile(r"^ld1 \{([^}]*)\}, \[(x\d+)\]$")



def _w(x: str) -> str:
    return "w" + x[1:]


def applies(plan, epilogue: str, cpu: str) -> bool:
    """Whether the strip of this kernel variant is the pipelined one: the out-of-order class,
    a requant epilogue, 8 rows, at most 31 columns (CCMP's immediate)."""
    cls = cpu if cpu in CORE_CLASSES else core_class(cpu)
    return (cls == PIPE_CLASS and ep_mod.has_fast_path(epilogue) and plan.ep == ROWS
            and plan.hp <= 31 and plan.hp % plan.inst.c_cols_per_reg == 0)


def element_offset(plan, r: int, c: int) -> int:
    """Byte offset of C element (r, c) among the accumulators stored in register order
    (row-block-major: 2x2 tiles of MMLA, row vectors of 4 otherwise)."""
    rows, cols = plan.inst.c_rows_per_reg, plan.inst.c_cols_per_reg
    reg = r // rows * (plan.hp // cols) + c // cols
    return 16 * reg + 4 * (r % rows * cols + c % cols)


def scratch_bytes(plan) -> int:
    return plan.ep * plan.hp * 4


def post_indexed(code: list[Insn], main: loop.MainLoop, plan) -> list[Insn]:
    """`code` (the main loop's body or tail) with its ld1 loads post-indexed from x0 / x1 and
    the pointer advances and the loop control dropped. Each operand's loads must come in
    address order, whole k-steps (the layout a post-index walks)."""
    pointers = {p.reg: p for p in main.pointers}
    expect = {"a": loop.step_bytes(plan, "a"), "b": loop.step_bytes(plan, "b")}
    out = []
    for insn in code:
        if loop.is_loop_control(main, insn):
            continue
        if insn.kind != "load":
            out.append(insn)
            continue
        m = _LD1.match(insn.text)
        if not m or m.group(2) not in pointers:
            raise loop.KernelPlanError(f"pipelined strip: {insn.text!r} is not an ld1 "
                                       f"from a pointer register")
        p = pointers[m.group(2)]
        size = 16 * len(m.group(1).split(","))
        if p.offset != expect[p.operand]:
            raise loop.KernelPlanError(f"pipelined strip: {insn.text!r} out of address order")
        expect[p.operand] += size
        base = loop.panel_pointer(p.operand)
        out.append(Insn(f"ld1 {{{m.group(1)}}}, [{base}], #{size}", "load",
                        comment=insn.comment))
    return out


def k_loop(plan, unroll: int) -> tuple[list[Insn], list[Insn], bool]:
    """(body without the loop control, peeled tail, whether x0 / x1 start at k-step 1): ld1
    post-indexed from x0 / x1 where the loads walk the panels in order (the MMLA tiles), else
    ldr with immediate offsets from x0 / x1 advanced once per iteration. Either way x3-x17
    stay free for the scalar requantisation."""
    try:
        own = loop.main_loop(plan, unroll, "ld1")
        return (post_indexed(own.body, own, plan),
                post_indexed(loop.loop_tail(own), own, plan), True)
    except loop.KernelPlanError:
        own = loop.main_loop(plan, unroll, "ldr")
        body = [insn for insn in own.body
                if insn.kind != "branch" and loop.KSTEPS not in insn.defs]
        return body, loop.loop_tail(own), False


def column_code(plan, epilogue: str, f: dict) -> list[Insn]:
    """Requantise column J of the stored tile (its parameters from PBASE) and store its bytes
    (CJ: row 0, CJ4: row 4); then the next column."""
    out = ep_mod.EPILOGUES[epilogue].out
    extend, saturated = ("sxtb", 0x7f) if out == "int8" else ("uxtb", 0xff)
    cols = plan.inst.c_cols_per_reg
    group = ep_mod.EPILOGUES[epilogue].group_bytes
    code = [
        _i(f"lsr {MUL}, {J}, #{cols.bit_length() - 1}", "the column's accumulator block"),
        _i(f"and {SHIFT}, {J}, #{cols - 1}"),
        _i(f"lsl {SHIFT}, {SHIFT}, #2", "its lane's bytes"),
        _i(f"add {QP}, sp, #{f['scratch']}"),
        _i(f"add {QP}, {QP}, {MUL}, lsl #4", "the column's row 0 in the stored tile"),
        _i(f"add {QP}, {QP}, {SHIFT}"),
        _i(f"add {PP}, {PBASE}, {MUL}, lsl #{group.bit_length() - 1}"),
        _i(f"add {PP}, {PP}, {SHIFT}", "the column's parameters"),
        _i(f"ldr {_w(MUL)}, [{PP}, #16]", "multiplier of the column", "load"),
        _i(f"ldr {_w(SHIFT)}, [{PP}, #32]", "2^(31 + shift)", "load"),
        _i(f"ldr {HALF}, [sp, #{f['zp21']}]", "2 zp + 1", "load"),
        _i(f"clz {_w(SHIFT)}, {_w(SHIFT)}", "s = -shift"),
        _i(f"lsl {HALF}, {HALF}, {SHIFT}", "(2 zp + 1) 2^s"),
        _i(f"asr {HALF}, {HALF}, #1", "2^(s-1) + zp 2^s: rounding and zero point"),
    ]
    bases = [(CJ, ""), (CJ, f", {L1}"), (CJ, f", {L2}"), (CJ, f", {L3}"),
             (CJ4, ""), (CJ4, f", {L1}"), (CJ4, f", {L2}"), (CJ4, f", {L3}")]
    for r in range(ROWS):
        base, index = bases[r]
        code += [
            _i(f"ldr {_w(T1)}, [{QP}, #{element_offset(plan, r, 0)}]", f"row {r}", "load"),
            _i(f"smaddl {T1}, {_w(T1)}, {_w(MUL)}, {C30}", "x M + 2^30"),
            _i(f"add {T2}, {HALF}, {T1}, asr #31", "high mul (SQRDMULH), + 2^(s-1) + zp 2^s"),
            _i(f"add {T2}, {T2}, {T1}, asr #63", "-1 where negative (SSRA #31)"),
            _i(f"asr {T2}, {T2}, {SHIFT}", ">> s: rounded, zero point added"),
            _i(f"cmp {T2}, {_w(T2)}, {extend}", f"EQ: in {out} range"),
            _i(f"asr {T1}, {T2}, #63"),
            _i(f"eor {_w(T1)}, {_w(T1)}, #{saturated:#x}", f"the {out} bound on its side"),
            _i(f"csel {_w(T2)}, {_w(T2)}, {_w(T1)}, eq"),
            _i(f"strb {_w(T2)}, [{base}{index}]", f"row {r}", "store"),
        ]
    return code + [
        _i(f"add {CJ}, {CJ}, #1", "the next column's bytes"),
        _i(f"add {CJ4}, {CJ4}, #1"),
        _i(f"add {J}, {J}, #1", "one column done"),
    ]


def interleave(body: list[Insn], extra: list[Insn]) -> list[Insn]:
    """`extra` spread evenly after the MACs of `body` (in order)."""
    macs = sum(1 for insn in body if insn.kind == "mac")
    out, placed, seen = [], 0, 0
    for insn in body:
        out.append(insn)
        if insn.kind == "mac":
            seen += 1
            upto = len(extra) * seen // macs
            out += extra[placed:upto]
            placed = upto
    return out + extra[placed:]


def _loop(label: str, body: list[Insn], unroll: int, columns: int = 0) -> list[Insn]:
    """`body` as a loop on x2; with `columns`, also ends when J reaches it."""
    chunked = columns > 0
    control = [_i(f"subs x2, x2, #{unroll}", f"{unroll} k-steps done")]
    if chunked:
        control += [_i(f"ccmp {J}, #{columns}, #2, hs", "LO: more k-steps and columns left"),
                    _i(f"b.lo {label}", kind="branch")]
    else:
        control.append(_i(f"b.hs {label}", kind="branch"))
    return [_i(f"{label}:", kind="label"), *body, *control]


def pending(plan, f: dict) -> list[Insn]:
    """After a tile that is not the strip's last: its accumulators to the frame and the
    scalar requantisation's pointers at its column 0."""
    regs = plan.c_regs
    code = [_i(f"stp q{regs[i]}, q{regs[i + 1]}, [sp, #{f['scratch'] + 16 * i}]",
               "the tile's accumulators, requantised during the next tile", "store")
            for i in range(0, len(regs), 2)]
    return code + [
        _i(f"mov {PBASE}, x26", "its column parameters"),
        _i(f"mov {CJ}, x28", "its C, row 0"),
        _i(f"add {CJ4}, x28, {L1}, lsl #2", "row 4"),
        _i(f"mov {J}, #0", "no column done"),
    ]


def peeled(plan, epilogue: str, main: loop.MainLoop, pieces: dict, f: dict,
           next_tile) -> list[Insn]:
    """[] when an iteration of the k-loop has fewer MACs than other instructions with a
    column's code (~100): the MACs take at least half a cycle each on the out-of-order cores
    (N2 2, V1 4 a cycle), and their front ends take 5 and 8 instructions a cycle (Arm's
    disclosure, AnandTech "Arm Announces Neoverse V1 & N2", 2021), so more would not hide
    behind them on a real core (the models dispatch 10 and 15 micro-ops a cycle: they would
    not show it; smlal 8x12, 48 MACs an iteration, stays with gen/strip.py's strip).
    Else, after gen/strip.py's peeled_test (x2 = the main loop's count): when the k-loop has a
    slot for every column (its iterations and the peeled tail: ksteps >= unroll * hp), the
    tiles with the requantisation pipelined — tile 0 plain; each later tile requantises the
    one before it, one column per main-loop iteration (KQ_E_LOOP), then plain iterations
    (KQ_P_LOOP), the last column in the tail when the iterations ran out first; the strip's
    last tile stores through the vector fast path. A shorter K goes to KP_TILE (gen/strip.py
    peeled_tiles, the vector fast path per tile): there the columns left after the k-loop
    would run alone (GEMM 256^3 on V1: 68.2 -> 54.0 %)."""
    unroll, columns = main.unroll, plan.hp
    body, tail, post = k_loop(plan, unroll)
    column = column_code(plan, epilogue, f)
    macs = sum(1 for insn in body if insn.kind == "mac")
    if macs < len(body) - macs + len(column):
        return []
    start = [insn for insn in pieces["start"] if not insn.text.startswith("ldr x2,")]
    tile_start = [_i(f"ldr x2, [sp, #{f['kmain']}]", "the main loop's count", "load"), *start,
                  *loop.preload(plan)]
    if post:
        tile_start += [_i(f"add x0, x0, #{loop.step_bytes(plan, 'a')}", "A of k-step 1"),
                       _i(f"add x1, x1, #{loop.step_bytes(plan, 'b')}", "B of k-step 1")]
    # ksteps = unroll * n: the count is unroll * (n - 1) - 1 at the loop's start; n - 1
    # iterations and the tail: n slots, at least `columns`
    shortest = unroll * (columns - 1) - 1
    return [
        _i(f"cmp x2, #{shortest}", f"LO: fewer than {columns} iterations with the tail"),
        _i("b.lo KP_TILE", "the vector epilogue per tile", "branch"),
        _i(f"mov {L1}, x22", "ldc: the rows of the scalar stores"),
        _i(f"add {L2}, x22, x22", "2 ldc"),
        _i(f"add {L3}, {L2}, x22", "3 ldc"),
        _i(f"mov {C30}, #0x40000000", "2^30: SQRDMULH's rounding"),
        _i(f"ldrsw {T1}, [sp, #{f['zp']}]", "zero point", "load"),
        _i(f"lsl {T1}, {T1}, #1"),
        _i(f"orr {T1}, {T1}, #1"),
        _i(f"str {T1}, [sp, #{f['zp21']}]", "2 zp + 1, for every column", "store"),
        # tile 0: nothing pending
        *tile_start,
        *_loop("KQ_FIRST_LOOP", body, unroll),
        *tail,
        _i("b KQ_TILE_END", kind="branch"),
        # tiles 1..: the previous tile's columns among the MACs
        _i("KQ_TILE:", kind="label"),
        *tile_start,
        *_loop("KQ_E_LOOP", interleave(body, column), unroll, columns),
        _i("tbnz x2, #63, KQ_TAIL", "no k-steps left: the tail", "branch"),
        *_loop("KQ_P_LOOP", body, unroll),
        _i("KQ_TAIL:", kind="label"),
        _i(f"cmp {J}, #{columns}", "HS: every column done"),
        _i("b.hs KQ_TAIL_PLAIN", kind="branch"),
        *interleave(tail, column),
        _i("b KQ_TILE_END", kind="branch"),
        _i("KQ_TAIL_PLAIN:", kind="label"),
        *tail,
        _i("KQ_TILE_END:", kind="label"),
        _i("cmp x19, #1", "EQ: the strip's last tile"),
        _i("b.eq KQ_LAST", kind="branch"),
        *pending(plan, f),
        *next_tile("KQ_TILE"),
        _i("KQ_LAST:", kind="label"),
        *pieces["setup"], *pieces["write"],
        _i("b KS_RETURN", kind="branch"),
    ]
