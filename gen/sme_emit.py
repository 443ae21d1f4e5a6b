"""SME kernel emitter: one ZaPlan (gen.sme_tiling) -> one vector-length-agnostic `.S` kernel.

The kernel follows micro-kernel contract v2 (README "Micro-kernel ABI", x5 = tile arguments)
with SVL-relative tile sizes ep = tr*S, hp = tc*S, S = SVL/32 read at run time (CNTW in
streaming mode), and is callable from ordinary (non-streaming, private-ZA) code:

  entry     d8-d15 saved (SMSTART/SMSTOP set every Z register to zero and d8-d15 are the low
            halves of z8-z15, AAPCS64 callee-saved); SMSTART SM enters streaming mode; a
            pending lazy ZA save is committed (SME ABI, see `lazy_save_commit`); SMSTART ZA;
            ZERO {ZA}; the accumulator-input tile, if any, loaded into ZA slices;
  k-loop    per panel k-step (4 instruction k-steps, gen.sme_tiling GROUP) one LD4W per row
            block and per column block (4 A / B vectors each) and 4*tr*tc MOPAs, four panel
            k-steps per iteration (`unroll`; the 1VLx4VL B pointer runs 32 vectors ahead so
            that the LD4W immediates reach all four, `bias`), the rest one at a time;
  store     ZA horizontal slices (one C row each) straight to C under column predicates
            (WHILELT up to n_rem), rows up to m_rem: nothing outside the m_rem x n_rem tile is
            read or written, with no stack tile;
  exit      SMSTOP (PSTATE.SM = PSTATE.ZA = 0), d8-d15 restored.

Between SMSTART and SMSTOP there are only A64 base instructions (integer, branches, MRS/MSR of
TPIDR2_EL0) and SVE/SME instructions of the encoder's table (encoder/sve_forms.py), all legal
in streaming mode without FEAT_SME_FA64: no Advanced SIMD or scalar FP instruction
(tests/test_sme_kernels.py checks the text and runs the kernels with FA64 off).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import jinja2

from encoder import rewrite_text

from .emit import asm_line, environment, inst_features
from .epilogue import (EPILOGUES, OFF, OUT_RANGE, ROUND_DOUBLE, ROUND_DOUBLE_RIGHT,
                       ROUND_SINGLE)
from .isa import ARCH_NAMES, SME_INSTRUCTIONS, TYPE_BYTES
from .loop import KernelPlanError
from .naming import cpu_suffix
from .schedule import Insn
from .sme_tiling import ZaPlan

# Contract v2 argument block (x5), shared with the NEON kernels (gen.epilogue.ARGS_FIELDS):
# byte offsets of the fields the SME kernels read.
ARGS_M_REM, ARGS_N_REM, ARGS_ACC, ARGS_LD_ACC, ARGS_PARAMS = (
    OFF[f] for f in ("m_rem", "n_rem", "acc", "ld_acc_bytes", "params"))
ARGS_CLAMP_MIN, ARGS_CLAMP_MAX = OFF["clamp_min"], OFF["clamp_max"]

# Epilogue variants per SME instruction ("raw", the unsuffixed kernel, first), as the NEON
# kernels have them (gen.epilogue on kv2): biasclamp, min(max(x + bias[column], clamp_min),
# clamp_max) on fp32, for the fp32-accumulating types; requant / requant_u8, TFLite
# requantisation to int8 / uint8 (gen.epilogue: what the GEMM type's entry points write), for
# the int8 GEMM types (smopa, usmopa; their 1VLx4VL tile makes every C row one 8-bit vector).
SME_EPILOGUE_VARIANTS = {"fmopa_f32": ("raw", "biasclamp"), "bfmopa": ("raw", "biasclamp"),
                         "fmopa_f16f32": ("raw", "biasclamp"), "smopa": ("raw", "requant"),
                         "usmopa": ("raw", "requant_u8")}
EPILOGUE_SUFFIX = {name: EPILOGUES[name].suffix
                   for name in ("raw", "biasclamp", "requant", "requant_u8")}
# The requantising epilogues: one code generator (store_requant), parameterised by the output
# type's saturating narrowing to 8 bits, clamp instructions and full range (OUT_RANGE).
REQUANT_NARROW = {"int8": ("sqxtnb", "sqxtnt", "s"), "uint8": ("sqxtunb", "sqxtunt", "u")}
# requant: args->rounding, c_zero_point, act_min, act_max; params: per group g of 4 columns,
# 64 bytes at params + 64 g (gen.epilogue's layout, shared with the NEON kernels):
#   rounding 0 (double, TFLite default): int32x4 offset, multiplier, max(shift, 0), min(shift, 0)
#   rounding 1 (single):  offset, multiplier, int64x2 shift - 31 of columns 0-1, of columns 2-3
#   rounding 2 (double, every shift < 0): offset, multiplier, int32x4 2^(31 + shift), unused
ARGS_ROUNDING, ARGS_ZERO_POINT, ARGS_ACT_MIN, ARGS_ACT_MAX = (
    OFF[f] for f in ("rounding", "c_zero_point", "act_min", "act_max"))
RQ_GROUP_BYTES = EPILOGUES["requant"].group_bytes      # 64
# requant registers: the four parameter rows of column tile c in z8+4c..z11+4c (after the
# de-interleave), zero point (.h) z24, act_min / act_max (.b) z25 / z26, row vectors z27+c,
# the column-order indices z7, temporaries z0-z6 (parameter staging, single-rounding
# products) and z31.
RQ_PARAM_Z, RQ_ZP_Z, RQ_MIN_Z, RQ_MAX_Z, RQ_ROW_Z, RQ_TMP_Z = 8, 24, 25, 26, 27, 31
RQ_INDEX_Z = 7          # the TBL indices putting a narrowed row in column order (`row_order`)
ROW_BYTES_PRED = 5      # p5: the n_rem bytes of an int8 C row
# biasclamp registers: bias of column tile c in z16+c, clamp bounds z20/z21, row temporaries
# z24+c.
BIAS_Z, CLAMP_MIN_Z, CLAMP_MAX_Z, ROW_Z = 16, 20, 21, 24
PARAMS = "x15"          # after the k-loop (which uses x15 as its counter)
# requant: rows 1, 2, 3 of four in bytes (ST1B scalar plus scalar), once the column offsets
# x16 / x17 and the k-loop are done
RQ_ROW_STRIDES = ("x4", "x16", "x17")

# General-purpose registers (all caller-saved; x18 never touched, x19-x28 never used).
A_PTR, B_PTR, KSTEPS, C_PTR, LDC, ARGS = "x0", "x1", "x2", "x3", "x4", "x5"
S_REG = "x6"            # S = SVL/32 = 32-bit lanes per streaming vector (CNTW); also 1*S
M_REM, N_REM = "x7", "x8"
ROW_PTR, ROW_END = "x9", "x10"
TMP = "x11"
SLICE = "w12"           # ZA slice index register (MOVA / LD1x / ST1x slices take w12-w15)
ACC_PTR, ACC_LD = "x13", "x14"
CLAMP = "w14"           # requant store (acc's stride no longer needed): 0 = no clamp needed
PAIRS = "x15"           # main-loop iterations left, then single k-steps left
# Column (and row) offsets c*S in elements: 0 -> xzr, 1 -> x6, 2 -> x16, 3 -> x17.
OFFSET_REGS = ("xzr", S_REG, "x16", "x17")

# System registers by their generic encoding names, so any assembler takes them (Arm ARM
# DDI0487: TPIDR2_EL0 is op0=3, op1=3, CRn=13, CRm=0, op2=5).
TPIDR2_EL0 = "s3_3_c13_c0_5"
# TPIDR2 block (AAPCS64, "SME support" / TPIDR2_EL0 lazy saving scheme): bytes 0-7
# za_save_buffer, 8-9 num_za_save_slices, 10-15 reserved (must be zero).
TPIDR2_BUFFER, TPIDR2_SLICES = 0, 8

ALL_TRUE = 0            # p0: all lanes (PTRUE p0.b)
COLUMN_PRED0 = 1        # p1..p4: columns of column tile c below n_rem
FRAME_BYTES = 64        # d8-d15
# Labels the template itself uses; the blocks' own (K_SAVE_SLICE, K_STORE_0, ...) are collected.
FIXED_LABELS = ("K_LOOP", "K_REST", "K_ONE", "K_STORE", "K_BAD_TPIDR2")
LABEL_RE = re.compile(r"\bK_[A-Z0-9_]+")


@dataclass(frozen=True)
class SmeKernel:
    symbol: str
    file: str
    text: str
    manifest: dict


def I(text: str, comment: str = "") -> Insn:      # noqa: E743 - one-letter for readability
    return Insn(text, "alu", comment=comment)


def sme_asm_line(insn: Insn) -> str:
    """Labels at column 0, instructions as gen.emit.asm_line (comment at column 48)."""
    return insn.text if insn.kind == "label" else asm_line(insn)


def kernel_symbol(prefix: str, plan: ZaPlan, cpu: str = "generic") -> str:
    """ts_gemm_f32_fmopa_2vlx2vlx4: ep x hp x lp with ep, hp in units of VL = S = SVL/32."""
    inst = plan.inst
    return f"{prefix}gemm_{inst.signature}_{inst.mnemonic}_{plan.shape_label}{cpu_suffix(cpu)}"


def check_plan(plan: ZaPlan) -> None:
    if plan.instruction not in SME_INSTRUCTIONS:
        raise KernelPlanError(f"unknown SME instruction {plan.instruction!r}")
    if not (plan.tr >= 1 and plan.tc >= 1 and plan.tr * plan.tc <= plan.inst.za_tiles):
        raise KernelPlanError(f"{plan.instruction} {plan.tr}x{plan.tc}: needs 1..4 ZA tiles")
    if plan.tc > len(OFFSET_REGS) or plan.tr > len(OFFSET_REGS):
        raise KernelPlanError(f"{plan.instruction}: at most 4 tile rows/columns")
    # one panel k-step in z0-z31, LD4W immediates up to 4 * (2 * max(tr, tc) - 1) <= 28
    if step_vectors(plan) > 32 or plan.group * (2 * max(plan.tr, plan.tc) - 1) > 28:
        raise KernelPlanError(f"{plan.instruction} {plan.tr}x{plan.tc}: too many vectors")


# ---- blocks ----------------------------------------------------------------------------------
def save_d8_d15() -> list[Insn]:
    return [I(f"stp d8, d9, [sp, #-{FRAME_BYTES}]!", "d8-d15: SMSTART/SMSTOP zero z8-z15"),
            I("stp d10, d11, [sp, #16]"), I("stp d12, d13, [sp, #32]"),
            I("stp d14, d15, [sp, #48]")]


def restore_d8_d15() -> list[Insn]:
    return [I("ldp d10, d11, [sp, #16]"), I("ldp d12, d13, [sp, #32]"),
            I("ldp d14, d15, [sp, #48]"), I(f"ldp d8, d9, [sp], #{FRAME_BYTES}")]


def lazy_save_commit() -> list[Insn]:
    """Commit a pending lazy save of the caller's ZA (AAPCS64 SME: a private-ZA function that
    uses ZA and finds TPIDR2_EL0 non-null must first do what __arm_tpidr2_save does -- store
    ZA's first num_za_save_slices horizontal slices (SVL/8 bytes each) to za_save_buffer, trap
    on nonzero reserved bytes -- and then set TPIDR2_EL0 to zero). Done inline, in streaming
    mode (PSTATE.ZA is 1 whenever TPIDR2_EL0 is non-null: ZA is then dormant), with ST1B of
    the horizontal slices of ZA0.B, the byte tile that is the whole ZA array (slice i = ZA
    array vector i)."""
    return [
        I(f"mrs {TMP}, {TPIDR2_EL0}", "TPIDR2_EL0: the caller's TPIDR2 block, or 0"),
        I(f"cbz {TMP}, K_ZA_FREE", "0: no lazy save pending"),
        I(f"ldr {ROW_END}, [{TMP}, #{TPIDR2_SLICES}]", "num_za_save_slices | reserved << 16"),
        I(f"lsr {ROW_PTR}, {ROW_END}, #16", "bytes 10-15 of the block: reserved"),
        I(f"cbnz {ROW_PTR}, K_BAD_TPIDR2", "nonzero: abort, as __arm_tpidr2_save does"),
        I(f"and {ROW_END}, {ROW_END}, #0xffff", "slices to save"),
        I(f"ldr {ROW_PTR}, [{TMP}, #{TPIDR2_BUFFER}]", "za_save_buffer"),
        I(f"mov {SLICE}, #0"),
        I(f"cbz {ROW_END}, K_SAVED"),
        Insn("K_SAVE_SLICE:", "label"),
        I(f"st1b {{za0h.b[{SLICE}, 0]}}, p{ALL_TRUE}, [{ROW_PTR}]", "ZA array vector w12"),
        I(f"addsvl {ROW_PTR}, {ROW_PTR}, #1", "next SVL/8 bytes of the buffer"),
        I(f"add {SLICE}, {SLICE}, #1"),
        I(f"cmp {SLICE}, w{ROW_END[1:]}"),
        I("b.lo K_SAVE_SLICE"),
        Insn("K_SAVED:", "label"),
        I(f"msr {TPIDR2_EL0}, xzr", "committed: TPIDR2_EL0 = 0 tells the caller"),
        Insn("K_ZA_FREE:", "label"),
    ]


def tile_sizes(plan: ZaPlan) -> list[Insn]:
    """S, the column offsets c*S, and m_rem / n_rem (args NULL: the full ep x hp tile)."""
    code = [I(f"cntw {S_REG}", "S = SVL/32: rows (columns) of one ZA.S tile")]
    for c in range(2, max(plan.tr, plan.tc)):
        code.append(I(f"cntw {OFFSET_REGS[c]}, all, mul #{c}", f"{c}*S"))
    code += [
        I(f"cntw {M_REM}" + (f", all, mul #{plan.tr}" if plan.tr > 1 else ""), f"ep = {plan.tr}*S"),
        I(f"cntw {N_REM}" + (f", all, mul #{plan.tc}" if plan.tc > 1 else ""), f"hp = {plan.tc}*S"),
        I(f"mov {ACC_PTR}, #0", "no accumulator tile"),
        I(f"cbz {ARGS}, K_ARGS_DONE", "args NULL: full tile, overwrite"),
        I(f"ldr {TMP}, [{ARGS}, #{ARGS_M_REM}]", "m_rem"),
        I(f"cmp {TMP}, {M_REM}"),
        I(f"csel {M_REM}, {TMP}, {M_REM}, lo", "m_rem = min(m_rem, ep)"),
        I(f"ldr {TMP}, [{ARGS}, #{ARGS_N_REM}]", "n_rem"),
        I(f"cmp {TMP}, {N_REM}"),
        I(f"csel {N_REM}, {TMP}, {N_REM}, lo", "n_rem = min(n_rem, hp)"),
        I(f"ldr {ACC_PTR}, [{ARGS}, #{ARGS_ACC}]", "acc (NULL: none)"),
        I(f"ldr {ACC_LD}, [{ARGS}, #{ARGS_LD_ACC}]", "its row stride in bytes"),
        Insn("K_ARGS_DONE:", "label"),
    ]
    for c in range(plan.tc):
        code.append(I(f"whilelt p{COLUMN_PRED0 + c}.s, {OFFSET_REGS[c]}, {N_REM}",
                      f"columns {c}*S.. of the tile below n_rem"))
    return code


ROWS_PER_ITERATION = 4  # ZA.S slice offsets 0-3 (LD1W / ST1W / MOVA .s: w12 + imm2)


def slice_rows(plan: ZaPlan, name: str, pointer: str, stride: str, body,
               unroll: bool = True, strides: tuple[str, ...] = ()) -> list[Insn]:
    """Loop over the rows below m_rem, row block by row block: `body(r, o)` is the code for
    one row (ZA slice w12 + o of row block r, C row at `pointer`); `pointer` advances by
    `stride` after each row. With `unroll`, four rows per iteration (slices w12 + 0..3) while
    four are left -- every full row block, S being a multiple of 4 -- then one at a time.
    With `strides` (registers holding 1, 2, 3 x stride) `body(r, o, address)` addresses its row
    as [pointer, strides[o - 1]] and the pointer advances once per four rows."""
    code = []
    for r in range(plan.tr):
        done = f"K_{name}_DONE"
        single = f"K_{name}_{r}"
        if r == 0:
            code.append(I(f"mov {ROW_END}, {M_REM}", "rows of block 0: min(m_rem, S)"
                          + (" (m_rem <= ep = S)" if plan.tr == 1 else "")))
        else:
            code += [I(f"subs {ROW_END}, {M_REM}, {OFFSET_REGS[r]}",
                       f"rows of block {r}: min(m_rem - {r}*S, S)"),
                     I(f"b.ls {done}", "none left")]
        if plan.tr > 1:
            code += [I(f"cmp {ROW_END}, {S_REG}"), I(f"csel {ROW_END}, {ROW_END}, {S_REG}, lo")]
        code.append(I(f"mov {SLICE}, #0"))
        if unroll:
            n = ROWS_PER_ITERATION
            quad = f"K_{name}_{r}_QUAD"
            code += [I(f"subs {TMP}, {ROW_END}, #{n - 1}",
                       f"slice < rows - {n - 1}: {n} rows left"),
                     I(f"b.le {single}", f"fewer than {n} rows"),
                     Insn(f"{quad}:", "label")]
            for o in range(n):
                if strides:
                    code += body(r, o, f"[{pointer}" + (f", {strides[o - 1]}]" if o else "]"))
                else:
                    code += body(r, o) + [I(f"add {pointer}, {pointer}, {stride}")]
            if strides:
                code.append(I(f"add {pointer}, {pointer}, {stride}, lsl #2", f"{n} rows on"))
            code += [I(f"add {SLICE}, {SLICE}, #{n}"),
                     I(f"cmp {SLICE}, w{TMP[1:]}"),
                     I(f"b.lt {quad}")]
        code += [Insn(f"{single}:", "label"),
                 I(f"cmp {SLICE}, w{ROW_END[1:]}"),
                 I(f"b.hs {done if r == plan.tr - 1 else f'K_{name}_{r}_END'}", "every row")]
        code += body(r, 0, f"[{pointer}]") if strides else body(r, 0)
        code += [I(f"add {pointer}, {pointer}, {stride}"),
                 I(f"add {SLICE}, {SLICE}, #1"),
                 I(f"b {single}")]
        if r < plan.tr - 1:
            code.append(Insn(f"K_{name}_{r}_END:", "label"))
    code.append(Insn(f"K_{name}_DONE:", "label"))
    return code


def load_accumulators(plan: ZaPlan) -> list[Insn]:
    """acc (m_rem x n_rem, int32/fp32, row stride ld_acc) into the ZA slices; the rest of ZA
    stays zero (ZERO {ZA}; LD1W zeroes the lanes its predicate leaves inactive)."""
    def row(r, o):
        return [I(f"ld1w {{za{plan.tile(r, c)}h.s[{SLICE}, {o}]}}, p{COLUMN_PRED0 + c}/z, "
                  f"[{ACC_PTR}" + (f", {OFFSET_REGS[c]}, lsl #2]" if c else "]"),
                  f"acc row, columns {c}*S.. -> za{plan.tile(r, c)}.s") for c in range(plan.tc)]
    return [I(f"cbz {ACC_PTR}, K_ACC_DONE", "no accumulator tile")] + slice_rows(
        plan, "ACC", ACC_PTR, ACC_LD, row)


def store_biasclamp(plan: ZaPlan) -> list[Insn]:
    """biasclamp: per C row, each column tile's ZA slice -> Z register (MOVA), + bias, FMAX
    clamp_min, FMIN clamp_max, stored under the column predicate. The bias is read for the
    n_rem columns only (LD1W under the same predicates), the bounds replicated by LD1RW."""
    code = [I(f"ldr {PARAMS}, [{ARGS}, #{ARGS_PARAMS}]", "params: fp32 bias per column")]
    for c in range(plan.tc):
        code.append(I(f"ld1w {{z{BIAS_Z + c}.s}}, p{COLUMN_PRED0 + c}/z, [{PARAMS}"
                      + (f", {OFFSET_REGS[c]}, lsl #2]" if c else "]"),
                      f"bias of columns {c}*S.."))
    code += [I(f"ld1rw {{z{CLAMP_MIN_Z}.s}}, p{ALL_TRUE}/z, [{ARGS}, #{ARGS_CLAMP_MIN}]",
               "clamp_min in every lane"),
             I(f"ld1rw {{z{CLAMP_MAX_Z}.s}}, p{ALL_TRUE}/z, [{ARGS}, #{ARGS_CLAMP_MAX}]",
               "clamp_max in every lane")]

    def row(r, o):
        body = []
        for c in range(plan.tc):
            t, zr = plan.tile(r, c), ROW_Z + c
            body += [
                I(f"mova z{zr}.s, p{ALL_TRUE}/m, za{t}h.s[{SLICE}, {o}]", f"row of za{t}.s"),
                I(f"fadd z{zr}.s, z{zr}.s, z{BIAS_Z + c}.s", "+ bias"),
                I(f"fmax z{zr}.s, p{ALL_TRUE}/m, z{zr}.s, z{CLAMP_MIN_Z}.s", "max(., clamp_min)"),
                I(f"fmin z{zr}.s, p{ALL_TRUE}/m, z{zr}.s, z{CLAMP_MAX_Z}.s", "min(., clamp_max)"),
                I(f"st1w {{z{zr}.s}}, p{COLUMN_PRED0 + c}, [{ROW_PTR}"
                  + (f", {OFFSET_REGS[c]}, lsl #2]" if c else "]"), f"C row, columns {c}*S.."),
            ]
        return body
    return code + [I(f"mov {ROW_PTR}, {C_PTR}", "C row 0")] + slice_rows(
        plan, "STORE", ROW_PTR, LDC, row)


def requant_params(plan: ZaPlan, mode: int) -> list[Insn]:
    """The parameter rows of every column tile but the offsets (added to the accumulators before
    the k-loop, `requant_offsets`), de-interleaved into one vector each.

    LD4W {z0.s-z3.s} of column tile c's 64-byte groups puts word 4i+k of the block in lane i
    of zk: 128-bit segment g of zk holds column k of group g's four rows (offset, multiplier,
    row 2, row 3). Per segment that is a 4x4 transpose: TRN1/TRN2 .s of (z0, z1) and (z2, z3),
    then TRN1/TRN2 .d, give row t of the group in one vector, columns in order (Arm ARM
    DDI0487 LD4W, TRN1, TRN2). Single rounding keeps rows 2/3 as int64 shifts of columns
    (0, 1) / (2, 3) per group; SMULLB/SMULLT work on even / odd columns, so one more TRN1/TRN2
    .d makes them (0, 2) and (1, 3). Rounding 2 has no fourth row."""
    code = []
    for c in range(plan.tc):
        _, m, l, r = (RQ_PARAM_Z + 4 * c + i for i in range(4))
        code += [I(f"ld4w {{z0.s-z3.s}}, p{ALL_TRUE}/z, [{PARAMS}"
                   + (f", #{4 * c}, mul vl]" if c else "]"),
                   f"params of columns {c}*S.. (16 bytes each)"),
                 I("trn1 z4.s, z0.s, z1.s"), I("trn2 z5.s, z0.s, z1.s"),
                 I("trn1 z6.s, z2.s, z3.s"), I("trn2 z7.s, z2.s, z3.s"),
                 I(f"trn1 z{m}.d, z5.d, z7.d", "multipliers")]
        if mode == ROUND_SINGLE:
            code += [I("trn2 z0.d, z4.d, z6.d", "int64 shift - 31, columns (0, 1) per group"),
                     I("trn2 z1.d, z5.d, z7.d", "columns (2, 3)"),
                     I(f"trn1 z{l}.d, z0.d, z1.d", "columns (0, 2): even"),
                     I(f"trn2 z{r}.d, z0.d, z1.d", "columns (1, 3): odd")]
        elif mode == ROUND_DOUBLE:
            code += [I(f"trn2 z{l}.d, z4.d, z6.d", "left shifts"),
                     I(f"trn2 z{r}.d, z5.d, z7.d", "right shifts")]
        else:
            code.append(I(f"trn2 z{l}.d, z4.d, z6.d", "2^(31 + shift)"))
    return code


def row_order() -> list[Insn]:
    """The TBL indices of `requant_row`'s last step, once per tile: the int16 and int8
    narrowings (SQXTNB even, SQXTNT odd elements) leave column i of column tile t at byte
    4i + (0, 2, 1, 3)[t] of the row vector; C wants it at byte t*S + i. INDEX .s #p, #4 gives
    4i + p per column tile, UZP1 .h then .b keep the low bytes in tile order (the largest,
    4S - 1, is at most 255: S <= 64), so byte t*S + i of z7 = 4i + (0, 2, 1, 3)[t] and
    TBL z.b, {z.b}, z7.b puts every column in place (Arm ARM DDI0487 SQXTNB, SQXTNT,
    INDEX, UZP1, TBL)."""
    return [I("index z2.s, #0, #4", "tile 0: byte 4i"), I("index z3.s, #2, #4", "tile 1: 4i + 2"),
            I("index z4.s, #1, #4", "tile 2: 4i + 1"), I("index z5.s, #3, #4", "tile 3: 4i + 3"),
            I("uzp1 z2.h, z2.h, z3.h"), I("uzp1 z4.h, z4.h, z5.h"),
            I(f"uzp1 z{RQ_INDEX_Z}.b, z2.b, z4.b", "row byte of C column t*S + i")]


def requant_offsets(plan: ZaPlan) -> list[Insn]:
    """requant, before the k-loop: each column's offset (zero-point correction + bias) added to
    every row of the accumulators, on the accumulator-input tile or zero -- one ADDHA per ZA
    tile (SME supplement DDI0616 ADDHA: element (row, col) += Zn[col] where both predicates
    are true) instead of one vector ADD per C row and column tile after the loop. int32
    addition wraps, so the sums are those of ts_requantize's x = acc + offset. The offset row
    of column tile c is row 0 of its parameter groups (LD4W, then TRN1 .s and TRN1 .d: see
    `requant_params`); every row and column of the tiles gets it (rows and columns outside
    m_rem x n_rem are never stored)."""
    code = [I(f"ldr {PARAMS}, [{ARGS}, #{ARGS_PARAMS}]", "params (x15: k-loop counter later)")]
    for c in range(plan.tc):
        code += [I(f"ld4w {{z0.s-z3.s}}, p{ALL_TRUE}/z, [{PARAMS}"
                   + (f", #{4 * c}, mul vl]" if c else "]"),
                   f"params of columns {c}*S.. (16 bytes each)"),
                 I("trn1 z4.s, z0.s, z1.s"), I("trn1 z5.s, z2.s, z3.s"),
                 I("trn1 z6.d, z4.d, z5.d", f"offsets of columns {c}*S..")]
        code += [I(f"addha za{plan.tile(r, c)}.s, p{ALL_TRUE}/m, p{ALL_TRUE}/m, z6.s",
                   f"+ offset[column] on every row of za{plan.tile(r, c)}.s")
                 for r in range(plan.tr)]
    return code


def requant_row(plan: ZaPlan, r: int, o: int, mode: int, clamp: bool,
                out: str = "int8", address: str = f"[{ROW_PTR}]") -> list[Insn]:
    """One C row (ZA slice w12 + o of row block r): ZA slices -> int32 row vectors (the offsets
    are already in ZA, `requant_offsets`) -> MultiplyByQuantizedMultiplier (the NEON kernels'
    steps, bit-exact with ts_requantize) -> int16 (SQXTNB / SQXTNT: two tiles per vector),
    + zero point (SQADD), `out` (int8: SQXTNB / SQXTNT; uint8: SQXTUNB / SQXTUNT, signed to
    unsigned saturation), put in column order (TBL, `row_order`), clamped (SMAX/SMIN, UMAX/UMIN
    for uint8; not with `clamp` False, for act_min / act_max the type's full range: the
    saturating narrowings did it), one ST1B. As in the NEON epilogue (gen.epilogue), each step
    saturates monotonically and the bounds lie inside the 8-bit range, so the result is
    ts_requantize's clamp(x' + zero point, act_min, act_max)."""
    narrow_b, narrow_t, sign = REQUANT_NARROW[out]
    code = []
    rows = [RQ_ROW_Z + c for c in range(plan.tc)]
    for c, v in enumerate(rows):
        _, m, l, rr = (RQ_PARAM_Z + 4 * c + i for i in range(4))
        code.append(I(f"mova z{v}.s, p{ALL_TRUE}/m, za{plan.tile(r, c)}h.s[{SLICE}, {o}]",
                      f"columns {c}*S..: row of za{plan.tile(r, c)}.s (x = acc + offset)"))
        if mode == ROUND_DOUBLE:
            code += [I(f"sqshl z{v}.s, p{ALL_TRUE}/m, z{v}.s, z{l}.s",
                       "<< max(shift, 0), saturating"),
                     I(f"sqrdmulh z{v}.s, z{v}.s, z{m}.s", "high mul"),
                     I(f"and z{RQ_TMP_Z}.d, z{v}.d, z{rr}.d", "sign where shifting right"),
                     I(f"ssra z{v}.s, z{RQ_TMP_Z}.s, #31", "-1 there: ties away from zero"),
                     I(f"srshl z{v}.s, p{ALL_TRUE}/m, z{v}.s, z{rr}.s",
                       "rounding >> -min(shift, 0)")]
        elif mode == ROUND_SINGLE:
            code += [I(f"smullb z0.d, z{v}.s, z{m}.s", "even columns x multiplier, 64-bit"),
                     I(f"smullt z1.d, z{v}.s, z{m}.s", "odd columns"),
                     I(f"srshl z0.d, p{ALL_TRUE}/m, z0.d, z{l}.d", "rounding >> (31 - shift)"),
                     I(f"srshl z1.d, p{ALL_TRUE}/m, z1.d, z{rr}.d"),
                     I(f"sqxtnb z{v}.s, z0.d", "saturate to int32: even columns"),
                     I(f"sqxtnt z{v}.s, z1.d", "odd columns")]
        else:
            code += [I(f"sqrdmulh z{v}.s, z{v}.s, z{m}.s", "high mul"),
                     I(f"ssra z{v}.s, z{v}.s, #31", "-1 where negative: ties away from zero"),
                     I(f"sqrdmulh z{v}.s, z{v}.s, z{l}.s", "x 2^(31 + shift): rounding >> -shift")]
    v0, v1, v2, v3 = rows
    code += [I(f"sqxtnb z{v0}.h, z{v0}.s", "to int16: column tile 0 in the even halfwords"),
             I(f"sqxtnt z{v0}.h, z{v1}.s", "column tile 1 in the odd ones"),
             I(f"sqxtnb z{v2}.h, z{v2}.s", "column tiles 2 / 3 likewise"),
             I(f"sqxtnt z{v2}.h, z{v3}.s")]
    for v in (v0, v2):
        code.append(I(f"sqadd z{v}.h, z{v}.h, z{RQ_ZP_Z}.h", "+ zero point, saturating"))
    v = v0
    code += [I(f"{narrow_b} z{v}.b, z{v0}.h",
               f"to {out}: byte 4i + (0, 2) = tile (0, 1) column i"),
             I(f"{narrow_t} z{v}.b, z{v2}.h", "byte 4i + (1, 3) = tile (2, 3) column i"),
             I(f"tbl z{v}.b, {{z{v}.b}}, z{RQ_INDEX_Z}.b", "the 4S columns in order")]
    if clamp:
        code += [I(f"{sign}max z{v}.b, p{ALL_TRUE}/m, z{v}.b, z{RQ_MIN_Z}.b", "clamp"),
                 I(f"{sign}min z{v}.b, p{ALL_TRUE}/m, z{v}.b, z{RQ_MAX_Z}.b")]
    return code + [I(f"st1b {{z{v}.b}}, p{ROW_BYTES_PRED}, {address}", f"C row: n_rem {out}")]


# requant slice loops: (rounding mode, clamp) -> label prefix; the first one is the fall-through
RQ_LOOPS = {(ROUND_DOUBLE, True): "RQD", (ROUND_DOUBLE, False): "RQDF",
            (ROUND_SINGLE, True): "RQS", (ROUND_SINGLE, False): "RQSF",
            (ROUND_DOUBLE_RIGHT, True): "RQR", (ROUND_DOUBLE_RIGHT, False): "RQRF"}


def full_range_test(out: str) -> list[Insn]:
    """CLAMP = 0 iff act_min and act_max are `out`'s full range (OUT_RANGE): no clamp needed."""
    lo, hi = OUT_RANGE[out]
    tmp = f"w{TMP[1:]}"
    code = [I(f"ldr {tmp}, [{ARGS}, #{ARGS_ACT_MIN}]", "act_min"),
            I(f"ldr {CLAMP}, [{ARGS}, #{ARGS_ACT_MAX}]", "act_max")]
    if lo:
        code.append(I(f"{'add' if lo < 0 else 'sub'} {tmp}, {tmp}, #{abs(lo)}",
                      f"act_min - ({lo})"))
    return code + [I(f"sub {CLAMP}, {CLAMP}, #{hi}", f"act_max - {hi}"),
                   I(f"orr {CLAMP}, {CLAMP}, {tmp}",
                     f"0: act_min = {lo} and act_max = {hi}, the narrowings clamp")]


def store_requant(plan: ZaPlan, out: str = "int8") -> list[Insn]:
    """requant (`out` int8) / requant_u8 (uint8): the output constants, then per rounding mode
    its parameters (once per tile) and one slice loop (four rows per iteration) with the clamp,
    or without it when act_min and act_max are `out`'s full range (the saturating narrowings to
    int16 and `out` then did it)."""
    lo, hi = OUT_RANGE[out]
    code = [I(f"ldr {PARAMS}, [{ARGS}, #{ARGS_PARAMS}]", "params"),
            I(f"ld1rh {{z{RQ_ZP_Z}.h}}, p{ALL_TRUE}/z, [{ARGS}, #{ARGS_ZERO_POINT}]",
              f"c_zero_point (int32, {lo}..{hi}: its low halfword)"),
            I(f"ld1rb {{z{RQ_MIN_Z}.b}}, p{ALL_TRUE}/z, [{ARGS}, #{ARGS_ACT_MIN}]",
              "act_min (its low byte)"),
            I(f"ld1rb {{z{RQ_MAX_Z}.b}}, p{ALL_TRUE}/z, [{ARGS}, #{ARGS_ACT_MAX}]", "act_max"),
            I(f"whilelt p{ROW_BYTES_PRED}.b, xzr, {N_REM}", "the n_rem bytes of a C row"),
            I(f"lsl {RQ_ROW_STRIDES[1]}, {LDC}, #1", "2 C rows (ST1B [row, 2 rows])"),
            I(f"add {RQ_ROW_STRIDES[2]}, {RQ_ROW_STRIDES[1]}, {LDC}", "3 C rows"),
            *full_range_test(out),
            I(f"ldr w{TMP[1:]}, [{ARGS}, #{ARGS_ROUNDING}]", "rounding"),
            I(f"cmp w{TMP[1:]}, #{ROUND_SINGLE}"),
            I("b.eq K_RQ_SINGLE", "1: single rounding"),
            I("b.hi K_RQ_RIGHT", "2: double rounding, every shift < 0")]
    labels = {ROUND_DOUBLE: None, ROUND_SINGLE: "K_RQ_SINGLE", ROUND_DOUBLE_RIGHT: "K_RQ_RIGHT"}
    for mode in (ROUND_DOUBLE, ROUND_SINGLE, ROUND_DOUBLE_RIGHT):
        if labels[mode]:
            code.append(Insn(f"{labels[mode]}:", "label"))
        code += requant_params(plan, mode) + row_order()
        code += [I(f"mov {ROW_PTR}, {C_PTR}", "C row 0"),
                 I(f"cbz {CLAMP}, K_{RQ_LOOPS[mode, False]}", f"full {out} range: no clamp")]
        for clamp in (True, False):
            name = RQ_LOOPS[mode, clamp]
            if not clamp:
                code.append(Insn(f"K_{name}:", "label"))
            code += slice_rows(plan, name, ROW_PTR, LDC,
                               lambda r, o, address, mode=mode, clamp=clamp:
                               requant_row(plan, r, o, mode, clamp, out, address),
                               strides=RQ_ROW_STRIDES)
            code.append(I("b K_RQ_DONE"))
    return code + [Insn("K_RQ_DONE:", "label")]


def store_rows(plan: ZaPlan) -> list[Insn]:
    def row(r, o):
        return [I(f"st1w {{za{plan.tile(r, c)}h.s[{SLICE}, {o}]}}, p{COLUMN_PRED0 + c}, "
                  f"[{ROW_PTR}" + (f", {OFFSET_REGS[c]}, lsl #2]" if c else "]"),
                  f"C row, columns {c}*S.. from za{plan.tile(r, c)}.s") for c in range(plan.tc)]
    return [I(f"mov {ROW_PTR}, {C_PTR}", "C row 0")] + slice_rows(plan, "STORE", ROW_PTR, LDC,
                                                                  row)


def _address(pointer: str, index: int) -> str:
    return f"[{pointer}, #{index}, mul vl]" if index else f"[{pointer}]"


def step_vectors(plan: ZaPlan) -> int:
    """Z registers one panel k-step occupies: GROUP per row block and per column block."""
    return plan.group * (plan.tr + plan.tc)


def bank_base(plan: ZaPlan, bank: int) -> int:
    """First Z register of k-step `bank` (0, 1) of an iteration: the second k-step gets its own
    registers when both fit in z0-z31 (2x2: 16 each), else it reuses the first's (1x4: 20), its
    loads then issue after the first step's MOPAs."""
    return bank * step_vectors(plan) if 2 * step_vectors(plan) <= 32 else 0


def a_reg(plan: ZaPlan, bank: int, r: int, j: int) -> int:
    """Z register of row block r, instruction k-step j of the panel k-step in bank `bank`."""
    return bank_base(plan, bank) + plan.group * r + j


def b_reg(plan: ZaPlan, bank: int, c: int, j: int) -> int:
    return bank_base(plan, bank) + plan.group * (plan.tr + c) + j


def step_loads(plan: ZaPlan, bank: int, step: int, a_ptrs=None, b_ptrs=None) -> list[Insn]:
    """Loads of panel k-step `step` of an iteration into bank `bank`, addressed from the loop
    pointers (`loop_pointers`; None: x0 / x1 at the k-step itself, the single-step loop).
    LD4W {z0.s-z3.s} of a row block's 4*S words puts word 4i + j (row i's instruction k-step
    j: k * 4 bytes of fp32 / bf16 / fp16 / int8) in lane i of register j (Arm DDI0487 LD4W):
    one load yields the A (B) vectors of 4 instruction k-steps."""
    g = plan.group

    def address(ptrs, base, blocks, b):
        if ptrs is None:
            return _address(base, g * b)
        ptr = next(q for q in ptrs if q.first <= step < q.first + q.steps)
        return _address(ptr.reg, g * ((step - ptr.first) * blocks + b) - ptr.bias)
    code = [I(f"ld4w {{z{a_reg(plan, bank, r, 0)}.s-z{a_reg(plan, bank, r, g - 1)}.s}}, "
              f"p{ALL_TRUE}/z, {address(a_ptrs, A_PTR, plan.tr, r)}",
              f"A rows {r}*S.., {g} k-steps (panel k-step +{step})") for r in range(plan.tr)]
    code += [I(f"ld4w {{z{b_reg(plan, bank, c, 0)}.s-z{b_reg(plan, bank, c, g - 1)}.s}}, "
               f"p{ALL_TRUE}/z, {address(b_ptrs, B_PTR, plan.tc, c)}",
               f"B columns {c}*S.., {g} k-steps (panel k-step +{step})") for c in range(plan.tc)]
    return code


def step_macs(plan: ZaPlan, bank: int) -> list[Insn]:
    return [I(plan.inst.mac_text(plan.tile(r, c), a_reg(plan, bank, r, j),
                                 b_reg(plan, bank, c, j), ALL_TRUE, ALL_TRUE),
              f"za{plan.tile(r, c)}.s += A{r} (x) B{c}, k-step {j}")
            for j in range(plan.group) for r in range(plan.tr) for c in range(plan.tc)]


def _add_vectors(pointer: str, source: str, vectors: int, setup: list[Insn],
                 what: str) -> Insn:
    """pointer = source + vectors streaming vectors (may be negative): ADDVL (imm6: -32..31),
    or an ADD / SUB of TMP = 16 vectors in bytes (CNTB ... MUL #16, set up once before the
    loop) shifted by log2(|vectors| / 16)."""
    if -32 <= vectors <= 31:
        return I(f"addvl {pointer}, {source}, #{vectors}", what)
    n = abs(vectors)
    if n % 16 or (n // 16) & (n // 16 - 1) or n // 16 > 8:
        raise KernelPlanError(f"k-loop: cannot advance by {vectors} vectors")
    if not setup:
        setup.append(I(f"cntb {TMP}, all, mul #16", "16 vectors in bytes (k-loop advance)"))
    op = "add" if vectors > 0 else "sub"
    return I(f"{op} {pointer}, {source}, {TMP}, lsl #{(n // 16).bit_length() - 1}", what)


def _advance(pointer: str, vectors: int, setup: list[Insn], what: str) -> Insn:
    return _add_vectors(pointer, pointer, vectors, setup, what)


# LD4W (scalar plus immediate) reaches -8..7 times 4 vectors from its base: -32..28 vectors
# (Arm ARM DDI0487 LD4W), a span of 60 from one pointer biased by up to 32.
LD4W_IMM_LO, LD4W_IMM_HI = -32, 28
UNROLL = 8              # panel k-steps per main-loop iteration
# an operand's second main-loop pointer, where one cannot reach all of its k-steps (free
# during the k-loop: the lazy save and the row loops use x9 / x10 only before or after it)
EXTRA_POINTERS = {A_PTR: "x9", B_PTR: "x10"}


@dataclass(frozen=True)
class LoopPointer:
    """A register the main loop addresses an operand's panel k-steps first .. first + steps - 1
    of an iteration from, `bias` vectors ahead of the first (LD4W immediates count from it)."""
    reg: str
    first: int
    steps: int
    bias: int


def loop_pointers(plan: ZaPlan, base: str, blocks: int) -> list[LoopPointer]:
    """The pointers one operand (`blocks` row / column blocks of GROUP vectors per panel
    k-step) needs for UNROLL panel k-steps: as many k-steps per pointer as the LD4W immediates
    reach (span GROUP * (steps * blocks - 1) <= 60 vectors, biased by 32 where the span passes
    28): 2VLx2VL one each (8 k-steps: 0..60 -> -32..28), 1VLx4VL A one (0..28), B two
    (4 k-steps each: x1 and x10, 64 vectors later)."""
    g = plan.group
    per = max(n for n in range(1, UNROLL + 1)
              if UNROLL % n == 0 and g * (n * blocks - 1) <= LD4W_IMM_HI - LD4W_IMM_LO)
    shift = 0 if g * (per * blocks - 1) <= LD4W_IMM_HI else -LD4W_IMM_LO
    count = UNROLL // per
    if count > 2:
        raise KernelPlanError(f"{plan.instruction} {plan.tr}x{plan.tc}: {count} pointers per "
                              "operand for the k-loop")
    regs = (base, EXTRA_POINTERS[base])
    return [LoopPointer(regs[i], i * per, per, shift) for i in range(count)]


def unroll(plan: ZaPlan) -> int:
    """Panel k-steps per main-loop iteration: UNROLL for every tile shape (`loop_pointers`):
    tr + tc loads per 4 * tr * tc MOPAs and 4 or 5 loop instructions per UNROLL panel
    k-steps."""
    return UNROLL


def k_loop(plan: ZaPlan) -> dict:
    """`unroll(plan)` panel k-steps per iteration. With separate register banks (2x2: 16
    registers a step) each step's loads issue before the previous step's MOPAs, otherwise each
    step's loads precede its own MOPAs; the pointers (`loop_pointers`: biased, a second one
    per operand where the LD4W immediates cannot reach every k-step) advance after the last
    loads. The k-steps left over (fewer than the unroll) run one per iteration of a loop of
    single steps from x0 / x1, the bias taken off again."""
    setup: list[Insn] = []
    u = unroll(plan)
    g = plan.group
    operands = ((A_PTR, "A", plan.tr, loop_pointers(plan, A_PTR, plan.tr)),
                (B_PTR, "B", plan.tc, loop_pointers(plan, B_PTR, plan.tc)))
    a_ptrs, b_ptrs = operands[0][3], operands[1][3]

    def advance_all() -> list[Insn]:
        return [_advance(q.reg, u * g * blocks, setup, f"{u} k-steps of {name}"
                         + (f" (from k-step {q.first})" if q.first else ""))
                for _, name, blocks, ptrs in operands for q in ptrs]

    def loads(bank: int, step: int) -> list[Insn]:
        return step_loads(plan, bank, step, a_ptrs, b_ptrs)

    two_banks = bool(bank_base(plan, 1))
    main = []
    if two_banks:
        main += loads(0, 0)
        for step in range(u):
            if step + 1 < u:
                main += loads((step + 1) % 2, step + 1)
            if step + 1 == u - 1 or u == 1:
                main += advance_all()
            main += step_macs(plan, step % 2)
    else:
        for step in range(u):
            main += loads(0, step)
            if step == u - 1:
                main += advance_all()
            main += step_macs(plan, 0)
    bias_on, bias_off = [], []
    for base, name, blocks, ptrs in operands:
        first = ptrs[0]
        if first.bias:
            bias_on.append(_add_vectors(base, base, first.bias, setup,
                                        f"{name} {first.bias} vectors ahead (LD4W immediates)"))
            bias_off.append(_add_vectors(base, base, -first.bias, setup,
                                         f"{name} back at the next k-step"))
        for q in ptrs[1:]:
            bias_on.append(_add_vectors(q.reg, base, g * blocks * q.first + q.bias - first.bias,
                                        setup, f"{name} from k-step {q.first} of an iteration"))
    single = step_loads(plan, 0, 0) + [
        _advance(A_PTR, g * plan.tr, setup, "1 k-step of A"),
        _advance(B_PTR, g * plan.tc, setup, "1 k-step of B")] + step_macs(plan, 0)
    return dict(loop_setup=setup + bias_on, main_body=main, unroll=u,
                unroll_log2=u.bit_length() - 1, bias_off=bias_off, single_body=single)


# ---- manifest and rendering ------------------------------------------------------------------
def main_loop_mix(plan: ZaPlan) -> dict:
    """Instructions of one main-loop iteration (`unroll(plan)` panel k-steps) by kind, as
    emitted: MOPAs, SVE loads, other (ADDVL / ADD, SUBS, B.NE). One LD4W per row / column
    block: tr + tc loads per 4 * tr * tc MOPAs."""
    body = k_loop(plan)["main_body"]
    loads = sum(insn.text.startswith("ld") for insn in body)
    mopas = sum(insn.text.startswith(plan.inst.mnemonic + " ") for insn in body)
    other = len(body) - loads - mopas + 2           # + subs, b.ne
    return {"mopa": mopas, "load": loads, "other": other,
            "mopa_share": round(mopas / (mopas + loads + other), 4)}



def manifest_entry(plan: ZaPlan, symbol: str, epilogue: str = "raw") -> dict:
    inst = plan.inst
    return {
        "symbol": symbol, "file": f"{symbol}.S", "instruction": plan.instruction,
        "mnemonic": inst.mnemonic, "signature": inst.signature,
        "a_type": inst.a_type, "b_type": inst.b_type, "c_type": inst.c_type,
        "out_type": inst.out_type, "feature": inst.feature, "arch": inst.arch,
        "tr": plan.tr, "tc": plan.tc, "lp": plan.lp, "vl_unit": "S = SVL/32 (CNTW)",
        "ep": f"{plan.tr}*S", "hp": f"{plan.tc}*S",
        "za_tiles": [f"za{t}.s" for t in range(plan.tr * plan.tc)],
        "a_layout": (f"per k-step: {plan.tr}*S rows x {plan.lp} {inst.a_type} ({plan.tr} "
                     f"streaming vectors), row r's {plan.lp} k-values contiguous"),
        "b_layout": (f"per k-step: {plan.tc}*S columns x {plan.lp} {inst.b_type} ({plan.tc} "
                     f"streaming vectors), column c's {plan.lp} k-values contiguous"),
        "a_step_vectors": plan.group * plan.tr, "b_step_vectors": plan.group * plan.tc,
        "group": plan.group, "unroll": unroll(plan),
        "main_loop_mix": main_loop_mix(plan),
        "contract": "v2", "epilogue": epilogue, "notes": list(plan.notes),
        "args_required": epilogue != "raw",
    }


def emit_sme_kernels(plan: ZaPlan, prefix: str, inst_mode: str = "auto", cpu: str = "generic",
                     env: jinja2.Environment | None = None) -> list[SmeKernel]:
    """The raw kernel of `plan` and its epilogue variants (SME_EPILOGUE_VARIANTS)."""
    return [emit_sme_kernel(plan, prefix, inst_mode, cpu, env, epilogue)
            for epilogue in SME_EPILOGUE_VARIANTS.get(plan.instruction, ("raw",))]


def emit_sme_kernel(plan: ZaPlan, prefix: str, inst_mode: str = "auto", cpu: str = "generic",
                    env: jinja2.Environment | None = None, epilogue: str = "raw") -> SmeKernel:
    check_plan(plan)
    if epilogue not in SME_EPILOGUE_VARIANTS.get(plan.instruction, ("raw",)):
        raise KernelPlanError(f"{plan.instruction}: no {epilogue} epilogue for SME kernels")
    inst = plan.inst
    symbol = kernel_symbol(prefix, plan, cpu) + EPILOGUE_SUFFIX[epilogue]
    requant = EPILOGUES[epilogue].family == "requant"
    if requant and RQ_GROUP_BYTES != 64:
        raise KernelPlanError("requant: the LD4W de-interleave reads 16 bytes per column "
                              f"(64 per group of 4), gen.epilogue has {RQ_GROUP_BYTES}")
    if requant and plan.tc != 4:
        raise KernelPlanError(f"{plan.instruction} {plan.tr}x{plan.tc}: the {epilogue} epilogue "
                              f"stores a C row as one 8-bit vector (needs 4 column tiles)")
    if requant:
        store = store_requant(plan, EPILOGUES[epilogue].out)
    else:
        store = {"biasclamp": store_biasclamp}.get(epilogue, store_rows)(plan)
    context = dict(
        symbol=symbol, plan=plan, inst=inst, elem_bytes=TYPE_BYTES[inst.a_type],
        epilogue=epilogue, out_type=EPILOGUES[epilogue].out if requant else None,
        arch_directive=f"{ARCH_NAMES[inst.arch]}+sme" if inst_mode == "never" else None,
        save=save_d8_d15(), restore=restore_d8_d15(), lazy_save=lazy_save_commit(),
        sizes=tile_sizes(plan),
        acc=load_accumulators(plan) + (requant_offsets(plan) if requant else []),
        store=store,
        **k_loop(plan),
    )
    blocks = [v for v in context.values() if isinstance(v, list)]
    context["labels"] = sorted(set(FIXED_LABELS) | {
        name for block in blocks for insn in block for name in LABEL_RE.findall(insn.text)})
    env = env or environment()
    env.filters["sme_asm"] = sme_asm_line
    text = env.get_template("kernel_sme.S.j2").render(**context)
    features = inst_features(inst_mode)
    if features:
        text = rewrite_text(text, features, filename=f"{symbol}.S")
    return SmeKernel(symbol, f"{symbol}.S", text, manifest_entry(plan, symbol, epilogue))


