"""Kernel contract v2: the tile arguments (x5), accumulation, partial tiles and fused epilogues.

Everything here runs outside the k-loop (once per tile), so the loop, its schedule and its
modeled performance are those of gen.loop / gen.schedule whatever the epilogue.

    before the loop   the accumulators are zeroed, or loaded from args->acc (an int32/fp32
                      row-major tile; MMLA forms zip row pairs into their 2x2 tiles): the
                      products then accumulate onto it, so a K split into blocks computes the
                      same sums -- for fp32 the same fused multiply-add chain -- as one call;
    after the loop    the epilogue runs on the registers (MMLA 2x2 tiles unzipped into rows
                      first), then the tile is stored: in place when it is full, else into a
                      stack tile whose first m_rem rows x n_rem columns are copied to C in
                      piece sizes that add up to exactly their bytes (nothing outside them is
                      read or written).

`EPILOGUE_VARIANTS` says which epilogues each instruction's kernels get; `EPILOGUES` describes
them. The argument block's layout (`ARGS_FIELDS`) is part of the ABI (README "Micro-kernel ABI",
templates/kernel_abi.j2, `<prefix>tile_args` in `<prefix>kernels.h`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .loop import C_PTR, LDC, KernelPlanError
from .plan import TilePlan
from .schedule import Insn, text_insn as _i
from . import registry as _registry

# ---- the table the generator reads: derived from the GEMM-type registry ------------------------
# instruction -> epilogue variants generated for it; "raw" (the unsuffixed kernel) always first.
# requant: the int8 GEMM types' int32 kernels (the s8 dispatch chain smmla/sdot/smlal);
# requant_u8: the uint8-output ones (the u8s8 chain usmmla/smlal, ts_gemm_u8);
# biasclamp: the fp32-accumulating ones (f32 fmla, bf16 bfmmla and bfdot, fp16 -> fp32 fmlal).
# fmla .8h (fp16 accumulators), sudot, usdot: raw only. gen.registry (GemmType.kernel_epilogues,
# OFF_CHAIN_EPILOGUES) is the one place that says so.
EPILOGUE_VARIANTS = _registry.epilogue_variants()


@dataclass(frozen=True)
class Epilogue:
    name: str
    suffix: str                 # symbol suffix ("" for raw)
    out_bytes: int | None       # bytes of one output element (None: the accumulator's, 4)
    group_bytes: int            # bytes of `params` per group: requant, per accumulator
                                # column block (param_blocks); biasclamp, per 4 columns
    summary: str
    out: str | None = None      # output element type (None: the accumulator's)
    family: str = ""            # the register code it runs (epilogue_and_store); "" for raw

    def out_type(self, c_type: str) -> str:
        return self.out or c_type


EPILOGUES = {e.name: e for e in (
    Epilogue("raw", "", None, 0, "the accumulators as they are (int32 / uint32 / fp32)"),
    Epilogue("requant", "_requant", 1, 64,
             "TFLite int8 requantisation: + column offset, MultiplyByQuantizedMultiplier "
             "(double or single rounding), + output zero point, clamp, int8", "int8", "requant"),
    # the same requantisation with a uint8 output (ts_gemm_u8: zero point and clamp 0..255)
    Epilogue("requant_u8", "_requant_u8", 1, 64,
             "TFLite requantisation to uint8: + column offset, MultiplyByQuantizedMultiplier "
             "(double or single rounding), + output zero point, clamp, uint8", "uint8",
             "requant"),
    Epilogue("biasclamp", "_biasclamp", None, 16, "fp32: + bias per column, then clamp",
             None, "biasclamp"),
)}

# Vector registers the epilogues need free besides the tile's row vectors (the A/B registers
# are free after the last MAC): three column parameters + one rotating temporary.
EPILOGUE_TEMPS = 4


def variants_for(instruction: str) -> tuple[str, ...]:
    return EPILOGUE_VARIANTS.get(instruction, ("raw",))


# The requant column parameters come per accumulator column block: 64 bytes (offset,
# multiplier, the rounding's two shift vectors) whose lane l belongs to lane l of every
# accumulator of that block -- columns 4j..4j+3 for int32 row vectors, [2j, 2j+1, 2j, 2j+1]
# for the MMLA 2x2 tiles (rows 2i, 2i+1 of columns 2j, 2j+1). So the MMLA kernels start their
# accumulators at the offsets with plain loads and requantise the tiles as they are, unzipping
# only the narrowed int16 rows (README "Micro-kernel ABI", column parameters).
def params_cols(plan: TilePlan) -> int:
    """Columns per requant parameter block: the accumulator's (4 row lanes, or 2 x 2 rows)."""
    return plan.inst.c_cols_per_reg


def param_blocks(plan: TilePlan) -> int:
    """Requant parameter blocks of a tile: its accumulator column blocks."""
    return plan.hp // plan.inst.c_cols_per_reg


def tiled(plan: TilePlan) -> bool:
    return plan.inst.acc_shape == "tile2x2"


def block_columns(plan: TilePlan, j: int) -> str:
    """The columns of parameter block j, for comments."""
    cols = params_cols(plan)
    return f"columns {cols * j}-{cols * j + cols - 1}"


def _lone_w(plan: TilePlan) -> bool:
    """Whether an MMLA tile's row pair narrows to an odd number of int16 vectors (2 column
    blocks each): the last one is unzipped with itself and keeps one more register."""
    return (-(-param_blocks(plan) // 2)) % 2 == 1


# ---- the argument block (x5): layout shared by every kernel ------------------------------------
# (field, byte offset, C type, comment) -- 64 bytes, 8-byte aligned.
ARGS_FIELDS = (
    ("m_rem", 0, "size_t", "rows to store, 1..ep (ep: full)"),
    ("n_rem", 8, "size_t", "columns to store, 1..hp (hp: full)"),
    ("acc", 16, "const void *", "NULL, or a tile added before the epilogue (int32 / fp32, "
                                "m_rem x n_rem; may be c for raw kernels)"),
    ("ld_acc_bytes", 24, "size_t", "row stride of acc in bytes"),
    ("params", 32, "const void *", "epilogue column parameters (layout per epilogue)"),
    ("rounding", 40, "int32_t", "requant: 0 double rounding (TFLite default), 1 single, "
                                "2 double with every shift < 0"),
    ("c_zero_point", 44, "int32_t", "requant: output zero point, -128..127"),
    ("act_min", 48, "int32_t", "requant: clamp, -128 <= act_min <= act_max <= 127"),
    ("act_max", 52, "int32_t", ""),
    ("clamp_min", 56, "float", "biasclamp: clamp bounds (FMAX/FMIN: a NaN propagates)"),
    ("clamp_max", 60, "float", ""),
)
ARGS_BYTES = 64
OFF = {name: offset for name, offset, _, _ in ARGS_FIELDS}

ARGS_REG = "x5"             # x5 on entry; kept in the frame across the k-loop (which may use
                            # x5-x17 as ld1 pointers) and reloaded after it
ODD_ROW_PTR = "x6"          # row pointer of odd C rows (C_PTR walks the even ones)
# After the loop: x7 = the caller's C when the tile goes through the stack (0: stored in place),
# x8 = its row stride, x9/x10 = m_rem/n_rem, x11 = params, x12-x16 scratch.
REAL_C, REAL_LDC, M_REM, N_REM, PARAMS = "x7", "x8", "x9", "x10", "x11"
# Before the loop: acc pointer, its stride, m_rem, n_rem, stack tile pointer, copy scratch.
ACC_PTR, ACC_LD, ACC_ODD = "x6", "x7", "x10"

# Labels (templates/kernel.S.j2 defines each as a local label per object format).
LABELS = ("K_ACC_LOAD", "K_ACC_DONE", "K_ZERO", "K_WRITE", "K_DONE", "K_RQ_SINGLE",
          "K_RQ_RIGHT", "K_RQ_NARROW", "K_RQ_STORE", "K_SLOW")


def render_with_used_labels(template, context: dict, candidates) -> str:
    """`template` (a kernel .S template whose `labels` loop #defines each label as a local one
    per object format) rendered with `context`, defining only the `candidates` its code uses.
    The template also gets `targets`, the labels something branches to, and places a label of
    its own that nothing may branch to only when it is one. Rendered until both sets stop
    shrinking (a first rendering with every candidate, usually one more)."""
    labels, targets = list(candidates), set(candidates)
    while True:
        text = template.render(**context, labels=labels, targets=targets)
        body = "\n".join(line for line in text.splitlines() if not line.startswith("#define"))
        used = [n for n in labels if re.search(rf"\b{n}\b", body)]
        branched = {n for n in used
                    if re.search(rf"\b{n}\b", re.sub(rf"^{n}:", "", body, flags=re.M))}
        if used == labels and branched == targets:
            return text
        labels, targets = used, branched
# The whole range of each requant output type: a clamp to it changes nothing after the
# saturating narrowing (TFLite's kActivationNone: act_min, act_max = the type's limits).
OUT_RANGE = {"int8": (-128, 127), "uint8": (0, 255)}
# args->rounding of the requant epilogue
ROUND_DOUBLE, ROUND_SINGLE, ROUND_DOUBLE_RIGHT = 0, 1, 2

# Store/load register name per access size in bytes (Arm ARM C7.2 "STR/LDR (immediate,
# SIMD&FP)": Bt/Ht/St/Dt/Qt).
SIMD_NAME = {1: "b", 2: "h", 4: "s", 8: "d", 16: "q"}
# LDP/STP Qt offsets: multiples of 16 in -1024..1008 (Arm ARM C7.2 "LDP/STP (SIMD&FP)").
PAIR_Q_MAX = 1008
CCMP_IMM_MAX = 31           # CCMP (immediate): imm5
ELEMENT_SHIFT = {1: 0, 2: 1, 4: 2}      # log2 of an element's bytes


def label(name: str) -> Insn:
    return Insn(f"{name}:", "label")


def frame_layout(saved_bytes: int, plan: TilePlan) -> tuple[int, int, int]:
    """(args slot offset, stack tile offset, frame bytes): saved registers first, then the
    argument pointer, then a 16-aligned ep x hp x 4-byte tile (partial tiles, partial acc)."""
    args = saved_bytes
    tile = args + 16
    frame = tile + -(-plan.ep * plan.hp * 4 // 16) * 16
    if frame > 4095:
        raise KernelPlanError(f"stack frame of {frame} bytes does not fit SUB (immediate)")
    return args, tile, frame


def check_epilogue(plan: TilePlan, epilogue: str) -> None:
    if epilogue not in EPILOGUES:
        raise KernelPlanError(f"unknown epilogue {epilogue!r} (valid: {', '.join(EPILOGUES)})")
    free = 32 - len(set(plan.c_regs))
    need = EPILOGUE_TEMPS
    requant = EPILOGUES[epilogue].family == "requant"
    if tiled(plan) and requant and _lone_w(plan):
        need = max(need, 3 + plan.ep // 2)  # each row pair's lone int16 vector keeps one more
    elif tiled(plan) and not requant and (plan.hp // 2) % 2:
        need += plan.ep // 2        # each odd last tile keeps one more register (tile_rows)
    if epilogue != "raw" and free < need:
        raise KernelPlanError(f"{plan.instruction} {plan.ep}x{plan.hp}: the {epilogue} epilogue "
                              f"needs {need} free vector registers, {free} left")
    groups = param_blocks(plan) if requant else -(-plan.hp // 4)
    if EPILOGUES[epilogue].group_bytes * groups - 16 > PAIR_Q_MAX:
        raise KernelPlanError(f"{plan.instruction} {plan.ep}x{plan.hp}: parameters beyond ldp reach")
    if min(plan.ep, plan.hp) > CCMP_IMM_MAX:
        raise KernelPlanError(f"ep {plan.ep} and hp {plan.hp} both beyond CCMP's immediate")


def free_vregs(plan: TilePlan) -> list[int]:
    """Vector registers free once the last MAC ran: A and B first, then unused ones."""
    used = set(plan.c_regs)
    first = [r for r in plan.a_regs + plan.b_regs if r not in used]
    return first + [r for r in range(32) if r not in used and r not in first]


# ---- small instruction helpers -----------------------------------------------------------------

def full_tile_test(plan: TilePlan, m: str, n: str) -> list[Insn]:
    """Flags EQ when m == ep and n == hp (CCMP takes the smaller of them as its imm5)."""
    if plan.ep <= CCMP_IMM_MAX:
        return [_i(f"cmp {n}, #{plan.hp}"), _i(f"ccmp {m}, #{plan.ep}, #0, eq",
                                                 "EQ: m_rem == ep and n_rem == hp")]
    return [_i(f"cmp {m}, #{plan.ep}"), _i(f"ccmp {n}, #{plan.hp}, #0, eq",
                                             "EQ: m_rem == ep and n_rem == hp")]


def copy_rows(src: str, src_ld: str, dst: str, dst_ld: str, rows: str, nbytes: str,
              temps: tuple[str, str, str]) -> list[Insn]:
    """Copy `rows` (>= 1) rows of `nbytes` (>= 1) bytes: 8-byte pieces, then 4/2/1 as the
    remainder's bits say, so exactly those bytes are read and written. src/dst/rows are
    consumed; strides are registers or '#imm'. Numeric local labels 1-6."""
    off, rem, val = temps
    w = "w" + val[1:]
    return [
        label("1"), _i(f"mov {off}, #0", "byte offset in the row"),
        label("2"), _i(f"sub {rem}, {nbytes}, {off}"), _i(f"cmp {rem}, #8"), _i("b.lo 3f"),
        _i(f"ldr {val}, [{src}, {off}]", kind="load"), _i(f"str {val}, [{dst}, {off}]", kind="store"),
        _i(f"add {off}, {off}, #8"), _i("b 2b"),
        label("3"), _i(f"tbz {rem}, #2, 4f", "4 bytes left?"),
        _i(f"ldr {w}, [{src}, {off}]", kind="load"), _i(f"str {w}, [{dst}, {off}]", kind="store"),
        _i(f"add {off}, {off}, #4"),
        label("4"), _i(f"tbz {rem}, #1, 5f", "2 bytes left?"),
        _i(f"ldrh {w}, [{src}, {off}]", kind="load"), _i(f"strh {w}, [{dst}, {off}]", kind="store"),
        _i(f"add {off}, {off}, #2"),
        label("5"), _i(f"tbz {rem}, #0, 6f", "1 byte left?"),
        _i(f"ldrb {w}, [{src}, {off}]", kind="load"), _i(f"strb {w}, [{dst}, {off}]", kind="store"),
        label("6"), _i(f"add {src}, {src}, {src_ld}"), _i(f"add {dst}, {dst}, {dst_ld}"),
        _i(f"subs {rows}, {rows}, #1"), _i("b.ne 1b", "next row"),
    ]


def row_access(op: str, pointer: str, pieces: list[tuple[int, int, int]], row: int) -> list[Insn]:
    """Loads (op 'ldr') or stores ('str') of one row: pieces (vector register, bytes, byte
    offset), ascending; two adjacent 16-byte pieces become one ldp/stp."""
    code, i = [], 0
    kind = "load" if op == "ldr" else "store"
    while i < len(pieces):
        reg, size, offset = pieces[i]
        nxt = pieces[i + 1] if i + 1 < len(pieces) else None
        if nxt and size == nxt[1] == 16 and nxt[2] == offset + 16 and offset <= PAIR_Q_MAX:
            code.append(Insn(f"{op[:2]}p q{reg}, q{nxt[0]}, [{pointer}, #{offset}]", kind,
                             comment=f"row {row}, bytes {offset}-{offset + 31}"))
            i += 2
        else:
            code.append(Insn(f"{op} {SIMD_NAME[size]}{reg}, [{pointer}, #{offset}]", kind,
                             comment=f"row {row}, bytes {offset}-{offset + size - 1}"))
            i += 1
    return code


def advance_rows(last_row: int, ep: int, even: str, odd: str, ld: str) -> list[Insn]:
    """After odd row `last_row`, move both row pointers two rows down (if rows remain)."""
    if last_row + 1 >= ep:
        return []
    code = [_i(f"add {even}, {even}, {ld}, lsl #1")]
    if last_row + 2 < ep:
        code.append(_i(f"add {odd}, {odd}, {ld}, lsl #1"))
    return code


# ---- before the loop: zero or load the accumulators ---------------------------------------------
def acc_load(plan: TilePlan, tile_offset: int, esize: int = 4, epilogue: str = "raw") -> list[Insn]:
    """Accumulators from args->acc (elements of `esize` bytes, the accumulator type), or zero;
    x5 = args. Partial tiles go through the stack tile (only m_rem x n_rem elements are read
    from acc). The requantising epilogues start from their column offsets instead
    (offset_loads, offset_spread, offset_add): one fewer vector operation per output vector
    after the loop."""
    inst = plan.inst
    row_bytes = plan.hp * esize
    requant = EPILOGUES[epilogue].family == "requant"
    loads = offset_loads(plan) if requant else []      # args required: no NULL test
    code = [
        *(loads[:1] if requant else
          [_i(f"cbz {ARGS_REG}, K_ZERO", "no arguments: zero accumulators")]),
        _i(f"ldr {ACC_PTR}, [{ARGS_REG}, #{OFF['acc']}]", "args->acc", "load"),
        *loads[1:],
        _i(f"cbz {ACC_PTR}, K_ZERO", "no accumulator input: zero"),
        _i(f"ldr {ACC_LD}, [{ARGS_REG}, #{OFF['ld_acc_bytes']}]", "args->ld_acc_bytes", "load"),
        _i(f"ldp x8, x9, [{ARGS_REG}, #{OFF['m_rem']}]", "m_rem, n_rem", "load"),
        *full_tile_test(plan, "x8", "x9"),
        _i("b.eq K_ACC_LOAD", "full tile: load it in place"),
        _i("cbz x8, K_ZERO", "m_rem == 0: nothing to read"),
        _i("cbz x9, K_ZERO", "n_rem == 0: nothing to read"),
        _i(f"add x10, sp, #{tile_offset}", "partial: copy m_rem x n_rem into the stack tile"),
        *([_i(f"lsl x9, x9, #{ELEMENT_SHIFT[esize]}", "row bytes")] if esize > 1 else []),
        *copy_rows(ACC_PTR, ACC_LD, "x10", f"#{row_bytes}", "x8", "x9", ("x11", "x12", "x13")),
        _i(f"add {ACC_PTR}, sp, #{tile_offset}", "load the tile from the stack"),
        _i(f"mov {ACC_LD}, #{row_bytes}"),
        label("K_ACC_LOAD"),
    ]
    if plan.ep > 1:
        code.append(_i(f"add {ACC_ODD}, {ACC_PTR}, {ACC_LD}", "row 1"))
    if inst.acc_shape == "tile2x2":
        code += acc_load_tiles(plan)
    else:
        blocks = plan.hp // inst.c_cols_per_reg
        for row in range(plan.ep):
            pieces = [(plan.c_reg_for(row, j), 16, 16 * j) for j in range(blocks)]
            code += row_access("ldr", ACC_PTR if row % 2 == 0 else ACC_ODD, pieces, row)
            if row % 2 == 1:
                code += advance_rows(row, plan.ep, ACC_PTR, ACC_ODD, ACC_LD)
    if requant:
        code += offset_add(plan)
    code.append(_i("b K_ACC_DONE"))
    code.append(label("K_ZERO"))
    if requant:
        code += offset_spread(plan)
    else:
        code += [Insn(f"movi v{r}.4s, #0", "alu", defs=(f"v{r}",)) for r in plan.c_regs]
    code.append(label("K_ACC_DONE"))
    return code


# The requantisation's first step, x = acc + offset (the column offsets: zero-point correction
# + bias, int32 x 4 at params + 64 j, in the lanes of column block j's accumulators), runs
# before the loop: the accumulators start at the offsets (the K_ZERO path) or get them added to
# the loaded acc tile. int32 addition wraps, so the sums are those of adding them after the
# loop. Row forms load row 0's and copy it to the other rows (MOV); the MMLA 2x2 tile forms
# load every accumulator, [o(2j) o(2j+1) o(2j) o(2j+1)] as the params hold them: loads, on the
# load pipes the entry leaves idle, where a ZIP1 / ZIP2 .2d per accumulator ran on the vector
# pipes. The loads come first, in the entry block, so the in-order cores do not wait for them
# where the K_ZERO path needs them; x11 = params.
def _offset_check(plan: TilePlan) -> list[int]:
    """Temporaries for offset_add: the A/B registers, last first (free before the loop)."""
    inst = plan.inst
    if inst.acc_shape != "tile2x2" and inst.c_cols_per_reg != 4:
        raise KernelPlanError(f"{plan.instruction}: requant offsets need 4 columns per register")
    temps = list(reversed(plan.a_regs + plan.b_regs))
    if len(temps) < 2:
        raise KernelPlanError(f"{plan.instruction} {plan.ep}x{plan.hp}: too few A/B registers "
                              f"for the requant offsets")
    return temps


def _acc_row_blocks(plan: TilePlan) -> int:
    """Accumulator row blocks (rows, or row pairs of the 2x2 tile forms)."""
    return plan.ep // plan.inst.c_rows_per_reg


def offset_loads(plan: TilePlan, base: str = PARAMS) -> list[Insn]:
    """Entry: x11 (`base`) = args->params, then each column block's offsets straight into row 0's
    accumulator of that block (row forms); 2x2 tile forms: into every accumulator of the first
    half of the row pairs, the other half copied from them (MOV) after all the loads -- half
    on the load pipes, half on the vector pipes, which both idle there (llvm-mca-19, the 8x8
    smmla entry: 16 loads 8.1 / 8.1 / 16.0 cycles on Neoverse N2 / V1 / Cortex-A510, 8 loads +
    8 MOV 6.1 / 5.4 / 17.0; the ZIP form 11.5 / 7.5 / 19.0 with its K_ZERO block)."""
    _offset_check(plan)
    group = EPILOGUES["requant"].group_bytes
    code = [_i(f"ldr {base}, [{ARGS_REG}, #{OFF['params']}]", "args->params: column offsets",
               "load")]
    rows = _acc_row_blocks(plan) if tiled(plan) else 1
    loaded = -(-rows // 2)
    for r in range(loaded):
        for j in range(param_blocks(plan)):
            what = f"offsets of {block_columns(plan, j)}" + (
                f", rows {2 * r}-{2 * r + 1}" if tiled(plan) else "")
            code.append(Insn(f"ldr q{plan.c_reg_for(r, j)}, [{base}, #{group * j}]", "load",
                             comment=what, defs=(f"v{plan.c_reg_for(r, j)}",)))
    for r in range(loaded, rows):
        for j in range(param_blocks(plan)):
            reg, src = plan.c_reg_for(r, j), plan.c_reg_for(r % loaded, j)
            code.append(Insn(f"mov v{reg}.16b, v{src}.16b", "alu", defs=(f"v{reg}",),
                             comment=f"rows {2 * r}-{2 * r + 1}: the same offsets"))
    return code


def offset_spread(plan: TilePlan) -> list[Insn]:
    """K_ZERO: every accumulator starts at its column block's offsets (offset_loads): row
    forms copy row 0's to the other rows; the 2x2 tile forms loaded every one."""
    _offset_check(plan)
    if tiled(plan):
        return []
    return [Insn(f"mov v{plan.c_reg_for(r, j)}.16b, v{plan.c_reg_for(0, j)}.16b", "alu",
                 defs=(f"v{plan.c_reg_for(r, j)}",))
            for r in range(1, plan.ep) for j in range(param_blocks(plan))]


def offset_add(plan: TilePlan) -> list[Insn]:
    """After the acc tile is loaded (which used every A/B register and x11): the offsets
    reloaded and added, column block by column block."""
    temps = _offset_check(plan)
    group = EPILOGUES["requant"].group_bytes
    code = [_i(f"ldr {PARAMS}, [{ARGS_REG}, #{OFF['params']}]", "args->params: column offsets",
               "load")]
    for j in range(param_blocks(plan)):
        t = temps[0]
        code.append(_i(f"ldr q{t}, [{PARAMS}, #{group * j}]",
                       f"offsets of {block_columns(plan, j)}", "load"))
        code += [_i(f"add v{plan.c_reg_for(r, j)}.4s, v{plan.c_reg_for(r, j)}.4s, v{t}.4s",
                    "+ offset") for r in range(_acc_row_blocks(plan))]
    return code


def acc_load_tiles(plan: TilePlan) -> list[Insn]:
    """2x2 tile forms: rows 2i, 2i+1, columns 2j..2j+3 loaded into two temporaries, then
    zip1 .2d -> tile (i, j) = [r0c0 r0c1 r1c0 r1c1], zip2 .2d -> tile (i, j+1) (Arm ARM C7.2
    ZIP1, ZIP2: the inverse of the uzp1/uzp2 of the store). An odd last tile loads 8 bytes."""
    temps = list(plan.a_regs + plan.b_regs)
    blocks = plan.hp // 2
    per_batch = max(1, len(temps) // 2)
    code = []
    for rb in range(plan.ep // 2):
        groups = list(range(0, blocks, 2))
        for start in range(0, len(groups), per_batch):
            batch = groups[start:start + per_batch]
            even, odd, zips = [], [], []
            for n, cb in enumerate(batch):
                t0, t1 = temps[2 * n], temps[2 * n + 1]
                x = plan.c_reg_for(rb, cb)
                size = 16 if cb + 1 < blocks else 8
                even.append((t0, size, cb * 8))
                odd.append((t1, size, cb * 8))
                zips.append(_i(f"zip1 v{x}.2d, v{t0}.2d, v{t1}.2d",
                               f"tile ({rb}, {cb}) of rows {2 * rb}-{2 * rb + 1}"))
                if size == 16:
                    y = plan.c_reg_for(rb, cb + 1)
                    zips.append(_i(f"zip2 v{y}.2d, v{t0}.2d, v{t1}.2d", f"tile ({rb}, {cb + 1})"))
            code += row_access("ldr", ACC_PTR, even, 2 * rb)
            code += row_access("ldr", ACC_ODD, odd, 2 * rb + 1)
            code += zips
        code += advance_rows(2 * rb + 1, plan.ep, ACC_PTR, ACC_ODD, ACC_LD)
    return code


# ---- after the loop ------------------------------------------------------------------------------
def has_fast_path(epilogue: str) -> bool:
    """Whether the kernel has the fast path (fast_setup / fast_write): the requant epilogues."""
    return EPILOGUES[epilogue].family == "requant"


def fast_setup(plan: TilePlan, args_offset: int, epilogue: str) -> list[Insn]:
    """Reload args and read the requant arguments (requant_loads); EQ when the tile is full,
    args->rounding is 2 and the clamp is the output type's whole range, else to K_SLOW. The
    case the engine runs on almost every tile (TFLite per-channel multipliers below 1, no
    fused activation) then reads as one block from the last MAC to `ret` (fast_write): no
    taken branch after the k-loop (on the Cortex-A510 model each block boundary costs the
    in-order wait for the vector operations before it)."""
    return [
        _i(f"ldr {ARGS_REG}, [sp, #{args_offset}]", "args (x5 may have been an ld1 pointer)",
           "load"),
        _i(f"mov {REAL_C}, #0", "0: the tile is stored in place"),
        _i(f"ldp {M_REM}, {N_REM}, [{ARGS_REG}, #{OFF['m_rem']}]", "m_rem, n_rem", "load"),
        *requant_loads(),
        *full_tile_test(plan, M_REM, N_REM),
        *clamp_test(EPILOGUES[epilogue].out),
        _i(f"ccmp {ROUNDING_REG}, #{ROUND_DOUBLE_RIGHT}, #0, eq", "EQ: full and rounding 2"),
        _i(f"ccmp {CLAMP_REG}, #0, #0, eq", "EQ: ... and no clamp: the fast path"),
        _i("b.ne K_SLOW", "else the general path"),
    ]


def fast_write(plan: TilePlan, epilogue: str, restore: list[Insn] = ()) -> list[Insn]:
    """The fast path's epilogue: the instructions the general path runs for a full tile at
    rounding 2 without a clamp (right_shift_code, the narrowing, the stores), then `restore`
    (the frame's restore, gen.emit.restore_registers) and `ret`: the loads of callee-saved
    registers the rest of the path does not touch go between the SSRA #31 (restore_early)."""
    pool = free_vregs(plan)
    variant = EPILOGUES[epilogue]
    right = right_shift_code(plan, pool, variant.group_bytes)
    narrow, _, pieces = _narrowing(plan, pool, variant.out)
    offsets, stores = indexed_row_stores(plan, pieces)
    code = offsets + right + narrow + stores
    if not restore:
        return code
    return restore_early(code, list(restore)) + [_i("ret", kind="branch")]


def _register_numbers(text: str) -> set[str]:
    """The registers an instruction names, as 'v8' (any SIMD&FP view) or 'x19' (x or w)."""
    regs = set()
    for kind, num in re.findall(r"\b([vqdshbxw])(\d+)\b", text.split("//")[0]):
        regs.add(("x" if kind in "xw" else "v") + num)
    return regs


def restore_early(code: list[Insn], restore: list[Insn]) -> list[Insn]:
    """`code` then `restore`, with each load of `restore` whose registers `code` no longer
    names after it moved up behind every second SSRA #31 (the rounding's middle step): an
    in-order core issues it there beside the vector operations (their latency covers its
    write-back; LLVM's Cortex-A510 model: 8x8 smmla fast path 65 -> 62 cycles) instead of
    one per cycle after the stores."""
    slots = [n for n, insn in enumerate(code) if insn.text.startswith("ssra")][::2]
    later = [set() for _ in range(len(code) + 1)]
    for n in range(len(code) - 1, -1, -1):
        later[n] = later[n + 1] | _register_numbers(code[n].text)
    placed, rest = {}, []
    for insn in restore:
        free = [n for n in slots if n not in placed and
                not (_register_numbers(insn.text) & later[n + 1])]
        if insn.kind == "load" and free:
            placed[free[0]] = insn
        else:
            rest.append(insn)
    out = []
    for n, insn in enumerate(code):
        out.append(insn)
        if n in placed:
            out.append(placed[n])
    return out + rest


# Free on the fast path after its branch (fast_setup's m_rem, n_rem, rounding and clamp test
# are dead; w13, the zero point, is read by the narrowing): the row-pair offsets' registers.
PAIR_OFFSET_REGS = ("x8", "x9", "x10", "x12", "x14", "x15", "x16", "x17")


def indexed_row_stores(plan: TilePlan, pieces) -> tuple[list[Insn], list[Insn]]:
    """(offsets, stores) of a full tile whose rows are one store each: rows 2p and 2p + 1 at
    [x3, xP] and [x6, xP], xP = 2p ldc computed first (scalar operations before the vector
    ones, where an in-order core issues them beside nothing; the stores then issue back to
    back: Cortex-A510 model, 8x8 int8 fast path 70 -> 66 cycles). Other tiles:
    ([], store_row_pieces)."""
    pairs = -(-plan.ep // 2)
    if any(len(row) != 1 or row[0][2] for row in pieces) or pairs - 1 > len(PAIR_OFFSET_REGS):
        return [], store_row_pieces(plan, pieces)
    regs = ("xzr",) + PAIR_OFFSET_REGS[:pairs - 1]
    offsets = [_i(f"add {ODD_ROW_PTR}, {C_PTR}, {LDC}", "row 1")] if plan.ep > 1 else []
    for p in range(1, pairs):
        offsets.append(_i(f"lsl {regs[p]}, {LDC}, #1", "2 ldc: rows 2-3 from rows 0-1") if p == 1
                       else _i(f"add {regs[p]}, {regs[p - 1]}, {regs[1]}",
                               f"{2 * p} ldc: rows {2 * p}-{2 * p + 1}"))
    stores = []
    for row, ((reg, size, _),) in enumerate(pieces):
        base = C_PTR if row % 2 == 0 else ODD_ROW_PTR
        index = "" if row < 2 else f", {regs[row // 2]}"
        stores.append(Insn(f"str {SIMD_NAME[size]}{reg}, [{base}{index}]", "store",
                           comment=f"row {row}, bytes 0-{size - 1}"))
    return offsets, stores


def slow_setup(plan: TilePlan, tile_offset: int, esize: int) -> list[Insn]:
    """K_SLOW, after fast_setup (every register it loaded still holds): full tile: store in
    place; partial: redirect the stores to the stack tile (store_setup's tail)."""
    return [label("K_SLOW"), *full_tile_test(plan, M_REM, N_REM),
            _i("b.eq K_WRITE", "full tile: store in place"),
            *_partial_redirect(plan, tile_offset, esize)]


def _partial_redirect(plan: TilePlan, tile_offset: int, esize: int) -> list[Insn]:
    return [
        _i(f"cbz {M_REM}, K_DONE", "empty: nothing to store"),
        _i(f"cbz {N_REM}, K_DONE"),
        _i(f"mov {REAL_C}, {C_PTR}", "partial: keep C and its stride"),
        _i(f"mov {REAL_LDC}, {LDC}"),
        _i(f"add {C_PTR}, sp, #{tile_offset}", "store the whole tile to the stack"),
        _i(f"mov {LDC}, #{plan.hp * esize}"),
        label("K_WRITE"),
    ]


def store_setup(plan: TilePlan, args_offset: int, tile_offset: int, esize: int,
                require_args: bool, epilogue: str = "raw", rem_loaded: bool = False) -> list[Insn]:
    """Reload args; full tile (or no args): store in place; partial: redirect the stores to the
    stack tile (x3/x4), keeping C and its stride in x7/x8. The requantising epilogues read
    their scalar arguments here too (requant_loads). rem_loaded: the caller's code loaded
    m_rem / n_rem (rem_loads) before this, with args in x5 (no reload, no load here)."""
    code = [] if rem_loaded else [
        _i(f"ldr {ARGS_REG}, [sp, #{args_offset}]", "args (x5 may have been an ld1 pointer)",
           "load")]
    code.append(_i(f"mov {REAL_C}, #0", "0: the tile is stored in place"))
    requant = EPILOGUES[epilogue].family == "requant"
    if not require_args:
        code.append(_i(f"cbz {ARGS_REG}, K_WRITE", "no arguments: full tile"))
    code += [
        *([] if rem_loaded else rem_loads()),
        *(requant_loads() if requant else []),
        *full_tile_test(plan, M_REM, N_REM),
        *(clamp_test(EPILOGUES[epilogue].out) if requant else []),
        _i("b.eq K_WRITE", "full tile: store in place"),
        *_partial_redirect(plan, tile_offset, esize),
    ]
    return code


def rem_loads() -> list[Insn]:
    """m_rem, n_rem from args (x5) into M_REM, N_REM (store_setup's, or earlier: rem_loaded)."""
    return [_i(f"ldp {M_REM}, {N_REM}, [{ARGS_REG}, #{OFF['m_rem']}]", "m_rem, n_rem", "load")]


def copy_out(plan: TilePlan, tile_offset: int, esize: int) -> list[Insn]:
    """Partial tile: m_rem rows of n_rem elements from the stack tile to C."""
    shift = ELEMENT_SHIFT[esize]
    return [
        _i(f"cbz {REAL_C}, K_DONE", "stored in place"),
        _i(f"add x12, sp, #{tile_offset}", "copy m_rem x n_rem from the stack tile to C"),
        *([_i(f"lsl {N_REM}, {N_REM}, #{shift}", "row bytes")] if shift else []),
        *copy_rows("x12", f"#{plan.hp * esize}", REAL_C, REAL_LDC, M_REM, N_REM,
                   ("x13", "x14", "x15")),
    ]


def tile_rows(plan: TilePlan, pool: list[int]) -> tuple[list[Insn], list[list[tuple[int, int]]]]:
    """The tile as row vectors: rows[r] = [(register, columns 4 or 2), ...] left to right.
    2x2 tile forms are unzipped in place: uzp1 t, X, Y (row 2i); uzp2 Y, X, Y (row 2i+1, Y read
    before it is written); X becomes free (Arm ARM C7.2 UZP1, UZP2). `pool` (free registers)
    is updated."""
    inst = plan.inst
    if inst.acc_shape != "tile2x2":
        blocks = plan.hp // inst.c_cols_per_reg
        return [], [[(plan.c_reg_for(r, j), 4) for j in range(blocks)] for r in range(plan.ep)]
    code, rows = [], [[] for _ in range(plan.ep)]
    blocks = plan.hp // 2
    for rb in range(plan.ep // 2):
        for cb in range(0, blocks, 2):
            x = plan.c_reg_for(rb, cb)
            t = pool.pop(0)
            if cb + 1 < blocks:
                y = plan.c_reg_for(rb, cb + 1)
                code += [_i(f"uzp1 v{t}.2d, v{x}.2d, v{y}.2d",
                            f"row {2 * rb}, columns {2 * cb}-{2 * cb + 3}"),
                         _i(f"uzp2 v{y}.2d, v{x}.2d, v{y}.2d",
                            f"row {2 * rb + 1}, columns {2 * cb}-{2 * cb + 3}")]
                rows[2 * rb].append((t, 4))
                rows[2 * rb + 1].append((y, 4))
                pool.append(x)
            else:
                code.append(_i(f"uzp2 v{t}.2d, v{x}.2d, v{x}.2d",
                               f"row {2 * rb + 1}, columns {2 * cb}-{2 * cb + 1}"))
                rows[2 * rb].append((x, 2))
                rows[2 * rb + 1].append((t, 2))
    return code, rows


def _chunks(items, size):
    return [items[i:i + size] for i in range(0, len(items), size)]


# The requantising epilogues' scalar arguments: loaded in store_setup, after the k-loop, where
# an in-order core waits for the last MACs anyway (requant_loads), and tested with operations
# that leave the flags to the full-tile test there, instead of between the vector operations:
# an in-order core issues a scalar operation behind vector ones only once it can write back
# after them (in-order write-back), and the loads there waited for their latency (Cortex-A510
# model: 55 -> 45 cycles for the rounding-2 requantisation of an smmla 8x8 tile). They stay in
# registers the stores and the partial-tile copy leave alone until the narrowing.
ROUNDING_REG, ZP_REG, ACT_MIN_REG, ACT_MAX_REG = "w12", "w13", "w14", "w15"
CLAMP_REG, CLAMP_TEMP = "w16", "w17"    # w16 = 0: the clamp is the whole range (skipped)


def requant_loads() -> list[Insn]:
    """x11 = params, w12 = rounding, w13 = zero point, w14/w15 = act_min/max; x5 = args."""
    return [
        _i(f"ldr {PARAMS}, [{ARGS_REG}, #{OFF['params']}]", "args->params", "load"),
        _i(f"ldr {ROUNDING_REG}, [{ARGS_REG}, #{OFF['rounding']}]", "args->rounding", "load"),
        _i(f"ldr {ZP_REG}, [{ARGS_REG}, #{OFF['c_zero_point']}]", "zero point", "load"),
        _i(f"ldp {ACT_MIN_REG}, {ACT_MAX_REG}, [{ARGS_REG}, #{OFF['act_min']}]",
           "act_min, act_max", "load"),
    ]


def clamp_test(out: str) -> list[Insn]:
    """w16 = 0 when the clamp is the output type's whole range: (act_min - min) | (act_max ^
    max), exact for any int32 bounds; no flags change."""
    full_min, full_max = OUT_RANGE[out]
    low = (f"add {CLAMP_REG}, {ACT_MIN_REG}, #{-full_min}" if full_min < 0 else
           f"mov {CLAMP_REG}, {ACT_MIN_REG}" if full_min == 0 else
           f"sub {CLAMP_REG}, {ACT_MIN_REG}, #{full_min}")
    return [
        _i(low, f"0 when act_min = {full_min}"),
        _i(f"eor {CLAMP_TEMP}, {ACT_MAX_REG}, #{full_max}", f"0 when act_max = {full_max}"),
        _i(f"orr {CLAMP_REG}, {CLAMP_REG}, {CLAMP_TEMP}",
           f"0: the clamp is {full_min}..{full_max}, a no-op"),
    ]


def rounding_flags() -> list[Insn]:
    """The flags of requant_code's dispatch on args->rounding, set before the first vector
    operation (before the MMLA forms' unzip)."""
    return [_i(f"cmp {ROUNDING_REG}, #{ROUND_SINGLE}", "rounding: EQ single, HI every shift < 0")]


def right_shift_code(plan: TilePlan, regs: list[int], group_bytes: int) -> list[Insn]:
    """Double rounding, every shift < 0 (rounding 2): SQRDMULH by the multiplier, SSRA #31,
    SQRDMULH by 2^(31 + shift), on every accumulator of every parameter block
    (requant_vectors). When `regs` hold both parameters of every block
    they are all loaded first and each step runs over all the vectors before the next (as many
    independent operations as there are vectors between an operation and the one that reads
    its result: no in-order core waits for a latency), else block by block."""
    by_group = requant_vectors(plan)
    groups = len(by_group)
    if 2 * groups <= len(regs):
        code = []
        for g in range(groups):
            base = group_bytes * g
            code += [_i(f"ldr q{regs[2 * g]}, [{PARAMS}, #{base + 16}]",
                        f"multiplier of {block_columns(plan, g)}", "load"),
                     _i(f"ldr q{regs[2 * g + 1]}, [{PARAMS}, #{base + 32}]",
                        f"2^(31 + shift) of {block_columns(plan, g)}", "load")]
        vecs = [(r, v, g) for g, vs in enumerate(by_group) for r, v in vs]
        code += [_i(f"sqrdmulh v{v}.4s, v{v}.4s, v{regs[2 * g]}.4s", f"{r}: high mul")
                 for r, v, g in vecs]
        code += [_i(f"ssra v{v}.4s, v{v}.4s, #31", f"{r}: -1 where negative (ties away from 0)")
                 for r, v, g in vecs]
        code += [_i(f"sqrdmulh v{v}.4s, v{v}.4s, v{regs[2 * g + 1]}.4s",
                    f"{r}: rounding >> -shift") for r, v, g in vecs]
        return code
    code = []
    m, e = regs[:2]
    for g, vecs in enumerate(by_group):
        base = group_bytes * g
        code += [_i(f"ldr q{m}, [{PARAMS}, #{base + 16}]", "multiplier", "load"),
                 _i(f"ldr q{e}, [{PARAMS}, #{base + 32}]", "2^(31 + shift)", "load")]
        code += [_i(f"sqrdmulh v{v}.4s, v{v}.4s, v{m}.4s", f"{r}: high mul") for r, v in vecs]
        code += [_i(f"ssra v{v}.4s, v{v}.4s, #31", f"{r}: -1 where negative (ties away from 0)")
                 for r, v in vecs]
        code += [_i(f"sqrdmulh v{v}.4s, v{v}.4s, v{e}.4s", f"{r}: rounding >> -shift")
                 for r, v in vecs]
    return code


def requant_code(plan: TilePlan, pool: list[int], group_bytes: int,
                 out: str = "int8") -> tuple[list[Insn], list]:
    """int32 accumulators x = acc + offset (the offsets were added before the loop:
    offset_loads / offset_spread / offset_add) -> int8 (`out` "uint8": uint8) rows. Per
    accumulator column block j (requant_vectors: the row vectors, or the MMLA 2x2 tiles as
    they are), params + 64 j holds in the lanes of its accumulators (int32 x 4 each): offset
    (zero-point correction + bias), multiplier, then
      double rounding: left = max(shift, 0), right = min(shift, 0)
      single rounding: shift - 31 as int64 for lanes 0-1, then for lanes 2-3
      double, every shift < 0 (rounding 2): 2^(31 + shift), then 16 unused bytes.
    The same steps as templates/c/requant.c.j2's NEON path (multiply_double_x4 /
    multiply_single_x4), so bit-exact with ts_requantize:
      double: SQSHL by left, SQRDMULH (= gemmlowp SaturatingRoundingDoublingHighMul), then
              gemmlowp's RoundingDivideByPOT as SRSHL by right after adding (x & right) >> 31
              (-1 where x < 0 and a right shift follows: ties away from zero, not up);
      double, every shift < 0: SQRDMULH, SSRA #31 (the same fix-up, every lane shifts right),
              SQRDMULH by 2^(31 + shift) = the rounding right shift by -shift (requant.c's
              multiply_double_right_x4: (2 v 2^(31-e) + 2^31) >> 32 = (v + 2^(e-1)) >> e);
      single: SMULL/SMULL2 exact 64-bit products, SRSHL by shift - 31 (a rounding right shift
              by 31 - shift at full precision), SQXTN/SQXTN2 saturating to int32.
    Then SQXTN to int16 (the MMLA tiles: then unzipped into rows, _to_int16_rows), SQADD the
    zero point, SQXTN to int8, SMAX/SMIN the clamp (requant.c's order: saturating early cannot
    change a clamped result), skipped when it is the output type's whole range (the narrowing
    saturated to it). uint8: the zero point and clamp are uint8 values (0..255), SQXTUN
    narrows the int16 sum to uint8 (saturating to 0..255, Arm ARM C7.2 SQXTUN) and UMAX/UMIN
    clamp: the same instruction count, and the same values as requantising to int8 with zero
    point and bounds - 128 and adding 128 (every saturation bound lies beyond the clamp range
    either way)."""
    p0, p1, p2, *temps = pool
    by_group = requant_vectors(plan)

    double, single = [], []
    for g, vecs in enumerate(by_group):
        base = group_bytes * g
        double += [_i(f"ldr q{p0}, [{PARAMS}, #{base + 16}]", "multiplier", "load"),
                   _i(f"ldp q{p1}, q{p2}, [{PARAMS}, #{base + 32}]", "left, right shifts", "load")]
        double += [_i(f"sqshl v{v}.4s, v{v}.4s, v{p1}.4s", f"{r}: << max(shift, 0), saturating")
                   for r, v in vecs]
        double += [_i(f"sqrdmulh v{v}.4s, v{v}.4s, v{p0}.4s", f"{r}: high mul") for r, v in vecs]
        for chunk in _chunks(vecs, len(temps)):
            double += [_i(f"and v{t}.16b, v{v}.16b, v{p2}.16b", f"{r}: sign where shifting")
                       for t, (r, v) in zip(temps, chunk)]
            double += [_i(f"ssra v{v}.4s, v{t}.4s, #31", f"{r}: -1 there (ties away from 0)")
                       for t, (r, v) in zip(temps, chunk)]
        double += [_i(f"srshl v{v}.4s, v{v}.4s, v{p2}.4s", f"{r}: rounding >> -min(shift, 0)")
                   for r, v in vecs]
        single += [_i(f"ldr q{p0}, [{PARAMS}, #{base + 16}]", "multiplier", "load"),
                   _i(f"ldp q{p1}, q{p2}, [{PARAMS}, #{base + 32}]",
                      "shift - 31 of lanes 0-1, 2-3 (int64)", "load")]
        for chunk in _chunks(vecs, len(temps)):
            pairs = list(zip(temps, chunk))
            single += [_i(f"smull2 v{t}.2d, v{v}.4s, v{p0}.4s", f"{r}: lanes 2-3 x multiplier")
                       for t, (r, v) in pairs]
            single += [_i(f"smull v{v}.2d, v{v}.2s, v{p0}.2s", f"{r}: lanes 0-1 x multiplier")
                       for t, (r, v) in pairs]
            single += [_i(f"srshl v{t}.2d, v{t}.2d, v{p2}.2d", f"{r}: rounding >> (31 - shift)")
                       for t, (r, v) in pairs]
            single += [_i(f"srshl v{v}.2d, v{v}.2d, v{p1}.2d", f"{r}") for t, (r, v) in pairs]
            single += [_i(f"sqxtn v{v}.2s, v{v}.2d", f"{r}: saturate to int32") for t, (r, v) in pairs]
            single += [_i(f"sqxtn2 v{v}.4s, v{t}.2d", f"{r}") for t, (r, v) in pairs]
    right = right_shift_code(plan, [p0, p1, p2, *temps], group_bytes)
    # the flags of rounding_flags
    code = [_i("b.eq K_RQ_SINGLE", "1: single rounding"),
            _i("b.hi K_RQ_RIGHT", "2: double rounding, every shift < 0")]
    code += [_i("// double rounding (TFLite default), any shifts", kind="comment")] + double
    code += [_i("b K_RQ_NARROW"), label("K_RQ_SINGLE")] + single
    code += [_i("b K_RQ_NARROW"), label("K_RQ_RIGHT")] + right + [label("K_RQ_NARROW")]
    narrow, clamp, pieces = _narrowing(plan, pool, out)
    return code + narrow + clamp, pieces


def requant_vectors(plan: TilePlan) -> list[list[tuple[str, int]]]:
    """Per parameter block (accumulator column block), the (label, register) of every
    accumulator in it: the requantisation runs on the accumulators in place, before any
    unzip (their parameters are in their lane layout)."""
    if tiled(plan):
        return [[(f"rows {2 * i}-{2 * i + 1} cols {2 * j}-{2 * j + 1}", plan.c_reg_for(i, j))
                 for i in range(plan.ep // 2)] for j in range(param_blocks(plan))]
    return [[(f"row {r}", plan.c_reg_for(r, j)) for r in range(plan.ep)]
            for j in range(param_blocks(plan))]


def _to_int16_rows(plan: TilePlan, pool: list[int]) -> tuple[list[Insn], list]:
    """The requantised int32 accumulators -> int16 row vectors: (code, units), units (row,
    register, columns) in column order per row. Row forms: SQXTN / SQXTN2 of two 4-column
    vectors into one register of 8 columns. MMLA 2x2 tiles: SQXTN / SQXTN2 of column blocks
    j, j+1 of a row pair give W = [r c0 c1, r' c0 c1, r c2 c3, r' c2 c3] (32-bit units of
    int16 pairs); UZP1 / UZP2 .4s of two such W (Arm ARM C7.2 UZP1, UZP2: the even / odd
    elements of the pair) are rows 2i and 2i+1 of 8 columns: one unzip per 8 outputs, after the
    narrowing, instead of one per 4 before it. A row pair's odd last W is unzipped with itself
    (4 columns, or 2 from a single block). `pool` (free registers) is updated."""
    low, high = [], []
    units = []
    if not tiled(plan):
        blocks = param_blocks(plan)
        for r in range(plan.ep):
            row = [plan.c_reg_for(r, j) for j in range(blocks)]
            for i in range(0, blocks, 2):
                pair = row[i:i + 2]
                low.append(_i(f"sqxtn v{pair[0]}.4h, v{pair[0]}.4s", f"row {r}: to int16"))
                if len(pair) == 2:
                    high.append(_i(f"sqxtn2 v{pair[0]}.8h, v{pair[1]}.4s"))
                units.append((r, pair[0], 4 * len(pair)))
        return low + high, units
    blocks = param_blocks(plan)
    unzip = []
    for i in range(plan.ep // 2):
        ws = []             # (register, column blocks it holds)
        for j in range(0, blocks, 2):
            a = plan.c_reg_for(i, j)
            low.append(_i(f"sqxtn v{a}.4h, v{a}.4s",
                          f"rows {2 * i}-{2 * i + 1} cols {2 * j}-{2 * j + 1}: to int16"))
            if j + 1 < blocks:
                high.append(_i(f"sqxtn2 v{a}.8h, v{plan.c_reg_for(i, j + 1)}.4s",
                               f"cols {2 * j + 2}-{2 * j + 3}"))
            ws.append((a, min(2, blocks - j)))
        even, odd = [], []
        k = 0
        while k < len(ws):
            a, n = ws[k]
            t = pool.pop(0)
            if n == 2 and k + 1 < len(ws) and ws[k + 1][1] == 2:
                b = ws[k + 1][0]
                unzip += [_i(f"uzp1 v{t}.4s, v{a}.4s, v{b}.4s",
                             f"row {2 * i}, columns {4 * k}-{4 * k + 7}"),
                          _i(f"uzp2 v{b}.4s, v{a}.4s, v{b}.4s",
                             f"row {2 * i + 1}, columns {4 * k}-{4 * k + 7}")]
                even.append((2 * i, t, 8))
                odd.append((2 * i + 1, b, 8))
                pool.append(a)
                k += 2
            else:
                unzip += [_i(f"uzp1 v{t}.4s, v{a}.4s, v{a}.4s",
                             f"row {2 * i}, columns {4 * k}-{4 * k + 2 * n - 1}"),
                          _i(f"uzp2 v{a}.4s, v{a}.4s, v{a}.4s",
                             f"row {2 * i + 1}, columns {4 * k}-{4 * k + 2 * n - 1}")]
                even.append((2 * i, t, 2 * n))
                odd.append((2 * i + 1, a, 2 * n))
                k += 1
        units += even + odd
    return low + high + unzip, units


def _narrowing(plan: TilePlan, pool: list[int], out: str) -> tuple[list[Insn], list[Insn], list]:
    """requant_code's narrowing (requantised int32 accumulators -> `out` rows with the zero
    point: _to_int16_rows, then per row register SQADD, SQXTN / SQXTUN), its clamp (skipped to
    K_RQ_STORE when w16 = 0) and the row pieces to store."""
    before = set(pool)
    to16, units = _to_int16_rows(plan, pool)
    # the zero point in a register the unzip leaves alone (so it is set first), else after it
    untouched = [r for r in pool if r in before]
    zp = (untouched or pool)[0]
    lo, hi = [r for r in pool if r != zp][:2]
    full_min, full_max = OUT_RANGE[out]
    dup = [_i(f"dup v{zp}.8h, {ZP_REG}", "zero point (requant_loads)")]
    code = dup + to16 if untouched else to16 + dup
    code += [_i(f"sqadd v{a}.8h, v{a}.8h, v{zp}.8h", f"row {r}: + zero point") for r, a, n in units]
    narrow, sign = ("sqxtun", "u") if out == "uint8" else ("sqxtn", "s")
    code += [_i(f"{narrow} v{a}.8b, v{a}.8h", f"row {r}: to {out}") for r, a, n in units]
    clamp = [_i(f"cbz {CLAMP_REG}, K_RQ_STORE",
                f"clamp to {full_min}..{full_max}: the narrowing did it"),
             _i(f"dup v{lo}.16b, {ACT_MIN_REG}"), _i(f"dup v{hi}.16b, {ACT_MAX_REG}")]
    clamp += [_i(f"{sign}max v{a}.8b, v{a}.8b, v{lo}.8b", f"row {r}: clamp") for r, a, n in units]
    clamp += [_i(f"{sign}min v{a}.8b, v{a}.8b, v{hi}.8b") for r, a, n in units]
    clamp += [label("K_RQ_STORE")]
    pieces = [[] for _ in range(plan.ep)]
    col = [0] * plan.ep
    for r, a, n in units:
        pieces[r].append((a, n, col[r]))
        col[r] += n
    return code, clamp, pieces


def biasclamp_code(rows, pool: list[int]) -> tuple[list[Insn], list]:
    """fp32 row vectors: + bias (params + 16 g: 4 floats per group g of 4 columns), then
    FMAX with clamp_min, FMIN with clamp_max (Arm ARM C7.2 FMAX/FMIN: a NaN operand gives a
    NaN; +0 > -0)."""
    p0, p1, p2 = pool[:3]
    groups = max(len(r) for r in rows)
    code = [_i(f"ldr {PARAMS}, [{ARGS_REG}, #{OFF['params']}]", "args->params (bias)", "load"),
            _i(f"ldp w12, w13, [{ARGS_REG}, #{OFF['clamp_min']}]", "clamp_min, clamp_max", "load"),
            _i(f"dup v{p1}.4s, w12"), _i(f"dup v{p2}.4s, w13")]
    for g in range(groups):
        vecs = [(r, row[g][0]) for r, row in enumerate(rows) if g < len(row)]
        code.append(_i(f"ldr q{p0}, [{PARAMS}, #{16 * g}]", f"bias of columns {4 * g}-{4 * g + 3}",
                       "load"))
        code += [_i(f"fadd v{v}.4s, v{v}.4s, v{p0}.4s", f"row {r}") for r, v in vecs]
    allv = [(r, v) for r, row in enumerate(rows) for v, _ in row]
    code += [_i(f"fmax v{v}.4s, v{v}.4s, v{p1}.4s", f"row {r}: >= clamp_min") for r, v in allv]
    code += [_i(f"fmin v{v}.4s, v{v}.4s, v{p2}.4s", f"row {r}: <= clamp_max") for r, v in allv]
    pieces = []
    for row in rows:
        col, out = 0, []
        for v, n in row:
            out.append((v, 4 * n, 4 * col))
            col += n
        pieces.append(out)
    return code, pieces


def store_row_pieces(plan: TilePlan, pieces) -> list[Insn]:
    code = []
    if plan.ep > 1:
        code.append(_i(f"add {ODD_ROW_PTR}, {C_PTR}, {LDC}", "row 1"))
    for row, row_pieces in enumerate(pieces):
        code += row_access("str", C_PTR if row % 2 == 0 else ODD_ROW_PTR, row_pieces, row)
        if row % 2 == 1:
            code += advance_rows(row, plan.ep, C_PTR, ODD_ROW_PTR, LDC)
    return code


def epilogue_and_store(plan: TilePlan, epilogue: str) -> list[Insn]:
    """The epilogue on the registers, then the stores of the (full) tile to x3/x4."""
    pool = free_vregs(plan)
    variant = EPILOGUES[epilogue]
    if variant.family == "requant":
        more, pieces = requant_code(plan, pool, variant.group_bytes, variant.out)
        code = rounding_flags() + more
    elif variant.family == "biasclamp":
        unzip, rows = tile_rows(plan, pool)
        more, pieces = biasclamp_code(rows, pool)
        code = unzip + more
    else:
        raise KernelPlanError(f"no register epilogue for {epilogue!r}")
    return code + store_row_pieces(plan, pieces)


def c_struct(prefix: str) -> str:
    """The C declaration of the argument block (for <prefix>kernels.h)."""
    lines = [f"typedef struct {prefix}tile_args {{"]
    for name, offset, ctype, comment in ARGS_FIELDS:
        decl = f"    {ctype} {name};" if not ctype.endswith("*") else f"    {ctype}{name};"
        lines.append(f"{decl:<34}/* {offset:2}: {comment} */" if comment else
                     f"{decl:<34}/* {offset:2} */")
    lines.append(f"}} {prefix}tile_args;")
    return "\n".join(lines)
