"""The strip entry of the requantising kernels (README "Micro-kernel ABI", strips): one call runs
`tiles` tiles of one A or B panel strip, tile t on

    a + t * a_step, b + t * b_step, c + t * c_step, params = args->params + t * params_step

with the rest of the argument block shared, where the driver called the tile entry once per
tile. The tile entry pays per call what a strip pays once: the frame and the saves of d8-d15,
the argument loads, the fast-path test after the k-loop (full tile, rounding 2, no clamp),
the restores, the return and the driver's call. Here the strip's state lives in x19-x28
(saved once), the fast-path test runs once per call, and each tile runs the kernel's own
code from the column offsets to the stores (its k-loop and tails, relabelled; gen.loop), then
steps the pointers and branches back.

A strip the fast path does not serve (a partial tile, rounding 0 or 1, a clamp, an acc tile,
K = 0) runs the tile entry once per tile (`bl`), with a copy of the argument block whose
params steps: the same results, at the tile entry's speed.

Modeled (`python3 -m bench --only gemm512-s8`, the 8x8 smmla requant kernel, K = 512): the tile
entry's entry block (frame, saves, arguments, column offsets) and k-step 0 cost 24.0 cycles per
tile on Cortex-A510, the strip's column offsets and k-step 0 15.0 (Neoverse N2 9.4 -> 5.8);
kernel and driver per tile 687.0 -> 662.0 cycles (docs/PERFORMANCE.md, "Strips").
"""
from __future__ import annotations

import re

from . import epilogue as ep_mod
from . import loop
from . import strip_pipe
from .schedule import Insn, text_insn as _i

# x19-x28 across the strip (callee-saved: the tile code uses x0-x17 only, x18 never).
TILES, A_BASE, B_BASE, LDC_KEEP = "x19", "x20", "x21", "x22"
A_STEP, B_STEP, C_STEP, PARAMS_NOW, PARAMS_STEP, C_BASE = (
    "x23", "x24", "x25", "x26", "x27", "x28")
ACC_TEST = "x7"                 # args->acc in the entry's test (requant_loads use x11-x17)
STRIP_REG = "x6"                # the strip descriptor on entry (AAPCS64: the seventh argument)
SAVED_X = ("x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29", "x30")

# The descriptor (<prefix>kernels.h <prefix>strip): its fields and byte offsets.
STRIP_FIELDS = (
    ("tiles", 0, "size_t", "tiles to run, >= 1 (0: none)"),
    ("a_step", 8, "ptrdiff_t", "bytes from one tile's A panel to the next's"),
    ("b_step", 16, "ptrdiff_t", "bytes from one tile's B panel to the next's"),
    ("c_step", 24, "ptrdiff_t", "bytes from one tile's C to the next's"),
    ("params_step", 32, "ptrdiff_t", "bytes from one tile's column parameters to the next's"),
)
SOFF = {name: offset for name, offset, _, _ in STRIP_FIELDS}

# Labels (templates/kernel.S.j2 defines each as a local label per object format).
LABELS = ("KP_TILE", "KP_LOOP", "KS_TILE", "KS_LOOP", "KS_REMAINDER", "KS_SINGLE_START", "KS_SINGLE", "KS_LAST_STEP",
          "KS_STORE", "KS_EACH", "KS_EACH_TILE", "KS_RETURN", *strip_pipe.LABELS)
RELABEL = {"K_LOOP": "KS_LOOP", "K_SINGLE": "KS_SINGLE"}



def frame_layout(saved_d: list[str], scratch: int = 0) -> dict[str, int]:
    """Byte offsets in the strip's frame: d8-d15 as the tile entry saves them, x19-x30, the
    args pointer, ksteps, the zero point, a copy of the argument block (the per-tile calls'
    params steps in it), then for the pipelined strip (gen/strip_pipe.py) 2 zp + 1 and
    `scratch` bytes for a tile's accumulators; 16-byte aligned."""
    d_bytes = -(-8 * len(saved_d) // 16) * 16
    x = d_bytes
    args = x + 8 * len(SAVED_X)
    end = args + 32 + ep_mod.ARGS_BYTES
    if not scratch:
        return dict(x=x, args=args, ksteps=args + 8, zp=args + 16, kmain=args + 24,
                    copy=args + 32, frame=end)
    return dict(x=x, args=args, ksteps=args + 8, zp=args + 16, kmain=args + 24, copy=args + 32,
                zp21=end, scratch=end + 16, frame=end + 16 + scratch)


def relabel(code: list[Insn], prefix: str = "KS_") -> list[Insn]:
    """The tile entry's k-loop code with the strip's labels (K_LOOP -> KS_LOOP, ...)."""
    def sub(text: str) -> str:
        return re.sub(r"\bK_(LOOP|SINGLE)\b", lambda m: prefix + m.group(1), text)
    return [Insn(sub(i.text), i.kind, comment=i.comment, defs=i.defs, uses=i.uses)
            if i.kind == "branch" else i for i in code]


def entry(plan, epilogue: str, saved_d: list[str], f: dict) -> list[Insn]:
    """Open the frame, save, read the descriptor and the argument block, test once whether the
    fast path serves every tile (else KS_EACH)."""
    code = [_i(f"sub sp, sp, #{f['frame']}", "frame: saved registers, strip state, args copy")]
    for i in range(0, len(saved_d), 2):
        pair = saved_d[i:i + 2]
        code.append(_i(f"{'stp' if len(pair) == 2 else 'str'} {', '.join(pair)}, [sp, #{8 * i}]",
                       kind="store"))
    for i in range(0, len(SAVED_X), 2):
        code.append(_i(f"stp {SAVED_X[i]}, {SAVED_X[i + 1]}, [sp, #{f['x'] + 8 * i}]",
                       kind="store"))
    args = ep_mod.ARGS_REG
    code += [
        _i(f"ldr {TILES}, [{STRIP_REG}, #{SOFF['tiles']}]", "strip->tiles", "load"),
        _i(f"ldp {A_STEP}, {B_STEP}, [{STRIP_REG}, #{SOFF['a_step']}]", "a_step, b_step", "load"),
        _i(f"ldp {C_STEP}, {PARAMS_STEP}, [{STRIP_REG}, #{SOFF['c_step']}]",
           "c_step, params_step", "load"),
        _i(f"ldr {PARAMS_NOW}, [{args}, #{ep_mod.OFF['params']}]", "args->params: tile 0's",
           "load"),
        _i(f"mov {A_BASE}, x0", "A panel of the tile"),
        _i(f"mov {B_BASE}, x1", "B panel of the tile"),
        _i(f"mov {C_BASE}, x3", "C of the tile"),
        _i(f"str x2, [sp, #{f['ksteps']}]", "ksteps, for every tile", "store"),
        _i(f"mov {LDC_KEEP}, x4", "ldc"),
        _i(f"str {args}, [sp, #{f['args']}]", "args (the per-tile calls copy it)", "store"),
        _i(f"cbz {TILES}, KS_RETURN", "no tile: nothing to do", "branch"),
        # the fast path's arguments and its test, as the tile entry's fast_setup makes it
        _i(f"ldp {ep_mod.M_REM}, {ep_mod.N_REM}, [{args}, #{ep_mod.OFF['m_rem']}]",
           "m_rem, n_rem", "load"),
        _i(f"ldr {ACC_TEST}, [{args}, #{ep_mod.OFF['acc']}]", "args->acc", "load"),
        *ep_mod.requant_loads(),
        _i(f"str {ep_mod.ZP_REG}, [sp, #{f['zp']}]", "zero point, for every tile", "store"),
        *ep_mod.full_tile_test(plan, ep_mod.M_REM, ep_mod.N_REM),
        *ep_mod.clamp_test(ep_mod.EPILOGUES[epilogue].out),
        _i(f"ccmp {ep_mod.ROUNDING_REG}, #{ep_mod.ROUND_DOUBLE_RIGHT}, #0, eq",
           "EQ: full and rounding 2"),
        _i(f"ccmp {ep_mod.CLAMP_REG}, #0, #0, eq", "EQ: ... and no clamp"),
        _i(f"ccmp {ACC_TEST}, #0, #0, eq", "EQ: ... and no acc tile"),
        _i("ccmp x2, #0, #4, eq", "NE: ... and ksteps > 0: the fast path"),
        _i("b.eq KS_EACH", "else one tile entry call per tile", "branch"),
    ]
    return code


def tile(plan, epilogue: str, main: loop.MainLoop, f: dict) -> dict[str, list[Insn]]:
    """One tile on the fast path, as template pieces: the column offsets (x26), k-step 0 from
    x20/x21, then (in the template) the tile entry's k-loop relabelled, and `write`: the fast
    path's epilogue and stores at x3 = x28 with ldc x22 (the row stores may step x3), then the
    step to the next tile."""
    offsets = ep_mod.offset_loads(plan, base=PARAMS_NOW)[1:]
    spread = ep_mod.offset_spread(plan)
    start = [_i(f"mov x0, {A_BASE}", "A panel"), _i(f"mov x1, {B_BASE}", "B panel"),
             _i(f"ldr x2, [sp, #{f['ksteps']}]", "ksteps", "load")]
    setup = [
        _i(f"mov {loop.LDC_REG}, {LDC_KEEP}", "ldc (an ld1 pointer in the main loop)"),
        _i(f"mov {ep_mod.PARAMS}, {PARAMS_NOW}", "this tile's column parameters"),
        _i(f"mov x3, {C_BASE}", "C of the tile"),
        _i(f"ldr {ep_mod.ZP_REG}, [sp, #{f['zp']}]", "zero point", "load"),
    ]
    return dict(start=start + offsets + spread, setup=setup,
                write=ep_mod.fast_write(plan, epilogue), step=next_tile("KS_TILE"))


def next_tile(label: str) -> list[Insn]:
    """Step A, B, C and the column parameters; back to `label` while tiles are left."""
    return [
        _i(f"subs {TILES}, {TILES}, #1", "one tile done"),
        _i(f"add {A_BASE}, {A_BASE}, {A_STEP}", "next tile: A"),
        _i(f"add {B_BASE}, {B_BASE}, {B_STEP}", "B"),
        _i(f"add {C_BASE}, {C_BASE}, {C_STEP}", "C"),
        _i(f"add {PARAMS_NOW}, {PARAMS_NOW}, {PARAMS_STEP}", "column parameters"),
        _i(f"b.ne {label}", "next tile", "branch"),
    ]


def peeled(plan, main: loop.MainLoop, pieces: dict, f: dict) -> list[Insn]:
    """The fast path's tiles when ksteps - 1 is at least one main-loop iteration and leaves
    the peeled last iteration (gen.loop loop_tail: K a multiple of unroll k-steps, e.g.
    K = 512 for the 8-k-step mmla loops): tested once, so each tile runs without the tile
    entry's loop-shape tests (its subs / cmp / b.lo before the loop, add / cmp / b.ne after
    it). Empty when unroll is not a power of two (the test is an AND)."""
    unroll = main.unroll
    if unroll & (unroll - 1):
        return []
    return peeled_test(unroll, f) + peeled_tiles(plan, main, pieces, f)


def peeled_test(unroll: int, f: dict) -> list[Insn]:
    """x2 = the main loop's count (kept in the frame) when ksteps - 1 is at least one main-loop
    iteration and leaves the peeled last one; else to KS_TILE."""
    return [
        _i("sub x2, x2, #1", "k-steps after the loaded one"),
        _i(f"and x7, x2, #{unroll - 1}"),
        _i(f"cmp x7, #{unroll - 1}", "EQ: the last iteration is the peeled one"),
        _i(f"ccmp x2, #{unroll}, #0, eq", "HS: ... after at least one iteration"),
        _i("b.lo KS_TILE", "else the tiles with the loop-shape tests", "branch"),
        _i(f"sub x2, x2, #{unroll}", "the main loop's count at its start"),
        _i(f"str x2, [sp, #{f['kmain']}]", "for every tile", "store"),
    ]


def peeled_tiles(plan, main: loop.MainLoop, pieces: dict, f: dict) -> list[Insn]:
    """KP_TILE: the peeled case's tile loop (x2 = the main loop's count)."""
    start = [insn for insn in pieces["start"] if not insn.text.startswith("ldr x2,")]
    return [
        _i("KP_TILE:", kind="label"),
        _i(f"ldr x2, [sp, #{f['kmain']}]", "the main loop's count", "load"),
        *start, *loop.preload(plan), *loop.pointer_setup(plan, main),
        _i("KP_LOOP:", kind="label"),
        *relabel(main.body, "KP_"), *loop.loop_tail(main),
        *pieces["setup"], *pieces["write"], *next_tile("KP_TILE"),
        _i("b KS_RETURN", kind="branch"),
    ]


def each(f: dict) -> list[Insn]:
    """KS_EACH: the tile entry once per tile, on a copy of the argument block whose params
    steps (x30 saved in the frame)."""
    copy = f["copy"]
    code = [_i(f"ldr x5, [sp, #{f['args']}]", "args", "load")]
    for off in range(0, ep_mod.ARGS_BYTES, 32):
        code += [_i(f"ldp q0, q1, [x5, #{off}]", "copy the argument block", "load"),
                 _i(f"stp q0, q1, [sp, #{copy + off}]", kind="store")]
    code += [
        _i("KS_EACH_TILE:", kind="label"),
        _i(f"str {PARAMS_NOW}, [sp, #{copy + ep_mod.OFF['params']}]",
           "this tile's column parameters", "store"),
        _i(f"mov x0, {A_BASE}"), _i(f"mov x1, {B_BASE}"),
        _i(f"ldr x2, [sp, #{f['ksteps']}]", kind="load"), _i(f"mov x3, {C_BASE}"),
        _i(f"mov x4, {LDC_KEEP}"), _i(f"add x5, sp, #{copy}", "the copy"),
        _i("bl KERNEL_SYMBOL", "the tile entry", "branch"),
        _i(f"add {C_BASE}, {C_BASE}, {C_STEP}", "next tile: C"),
        _i(f"add {A_BASE}, {A_BASE}, {A_STEP}", "A"),
        _i(f"add {B_BASE}, {B_BASE}, {B_STEP}", "B"),
        _i(f"add {PARAMS_NOW}, {PARAMS_NOW}, {PARAMS_STEP}", "column parameters"),
        _i(f"subs {TILES}, {TILES}, #1", "one tile done"),
        _i("b.ne KS_EACH_TILE", "next tile", "branch"),
    ]
    return code


def exit_code(saved_d: list[str], f: dict) -> list[Insn]:
    """KS_RETURN: restore and close the frame."""
    code = []
    for i in range(0, len(SAVED_X), 2):
        code.append(_i(f"ldp {SAVED_X[i]}, {SAVED_X[i + 1]}, [sp, #{f['x'] + 8 * i}]",
                       kind="load"))
    for i in range(0, len(saved_d), 2):
        pair = saved_d[i:i + 2]
        code.append(_i(f"{'ldp' if len(pair) == 2 else 'ldr'} {', '.join(pair)}, [sp, #{8 * i}]",
                       kind="load"))
    return code + [_i(f"add sp, sp, #{f['frame']}"), _i("ret", kind="branch")]


def context(plan, epilogue: str, saved_d: list[str], main: loop.MainLoop,
            single: list[Insn], cpu: str = "generic") -> dict | None:
    """The template's `strip` context (None for kernels without the fast path); for the
    out-of-order class the peeled tiles are gen/strip_pipe.py's."""
    if not ep_mod.has_fast_path(epilogue):
        return None
    pipelined = []
    if strip_pipe.applies(plan, epilogue, cpu) and not main.unroll & (main.unroll - 1):
        f = frame_layout(saved_d, strip_pipe.scratch_bytes(plan))
        pieces = tile(plan, epilogue, main, f)
        pipelined = strip_pipe.peeled(plan, epilogue, main, pieces, f, next_tile)
    if pipelined:
        tiles = peeled_test(main.unroll, f) + pipelined + peeled_tiles(plan, main, pieces, f)
    else:
        f = frame_layout(saved_d)
        pieces = tile(plan, epilogue, main, f)
        tiles = peeled(plan, main, pieces, f)
    return dict(entry=entry(plan, epilogue, saved_d, f), peeled=tiles, **pieces,
                main_body=relabel(main.body), single=relabel(single),
                each=each(f), exit=exit_code(saved_d, f))


def c_struct(prefix: str) -> str:
    """The C declaration of the strip descriptor (for <prefix>kernels.h)."""
    lines = [f"typedef struct {prefix}strip {{"]
    for name, offset, ctype, comment in STRIP_FIELDS:
        decl = f"    {ctype} {name};"
        lines.append(f"{decl:<34}/* {offset:2}: {comment} */")
    lines.append(f"}} {prefix}strip;")
    return "\n".join(lines)
