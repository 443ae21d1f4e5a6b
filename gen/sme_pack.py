"""Streaming-mode packers of the SME paths: the panels the SME kernels read (README "SME
kernels"), built with SVE/SME loads and stores of whole streaming vectors instead of NEON.

With the SME kernels' MOPAs taking S*S*k MACs each, the packers' NEON work (which grows with
M*K + K*N) dominated the SME operations' instruction count (bench --sme). These routines move
SVL/8 bytes per instruction and do the transposition in ZA or in the store:

  A, `<prefix>sme_pack_a_<tr>vl`: an A panel of ep = tr*S rows. For every SME type a row's
      k-step is one 32-bit word (lp x element bytes = 4: fp32 x 1, fp16 x 2, int8 x 4), so the
      panel is the rows x k-steps matrix of words transposed. Per pass of 4/tr chunks of S words:
      chunk q of each row's bytes goes into a horizontal slice of ZA tile q*tr + t, t = row / S
      (LD1B into ZA0.B slice 4*(row % S) + q*tr + t, i.e. ZA(q*tr + t).S horizontal slice
      row % S: SME supplement DDI0616, "ZA array" -- ZAt.S slice i is ZA array vector 4i + t,
      the same as ZA0.B slice 4i + t), then the vertical slices (one k-step of S rows each)
      are moved out (MOVA) and stored four by four (ST4W, `pack_a_copy`). Byte-granular
      loads under WHILELT read exactly the row's k_bytes and zero the rest of the last word;
      the rows past `rows` stay zero (ZERO {ZA} once: they are never loaded).
  B, `<prefix>sme_pack_b_<e>x<lp>_<tc>vl`: a B panel of hp = tc*S columns, B row-major (lp rows
      of k per k-step, columns contiguous). Per k-step: lp rows loaded (LD1B/H/W under a
      WHILELT column predicate: exactly the `cols` columns are read, the rest are zero) and
      stored interleaved by one ST<lp> (ST2H: column c's two k-values side by side; ST4B: four),
      which is the panel's "each column's lp k-values contiguous"; lp = 1 is a copy (ST1W).
      The int8 ones also sum each column over k (COLUMN_SUMS) for the zero points.
      A last partial k-step loads its missing rows under an all-false predicate (zeros, no
      memory access).

Both are ordinary non-streaming functions like the kernels (d8-d15 saved, SMSTART/SMSTOP, the
A packer commits a pending lazy ZA save and uses ZA as a private-ZA function). Between SMSTART
and SMSTOP: A64 base instructions and the encoder's SVE/SME forms only. SVE contiguous and
structure loads/stores are legal in Streaming SVE mode without FEAT_SME_FA64 (the illegal ones
are gathers/scatters, first-fault / non-fault loads, FFR and a short list of ALU forms: Arm
DDI0487 "Streaming SVE mode", instructions marked "illegal when PSTATE.SM is 1"; QEMU
target/arm/sme-fa64.decode lists them); tests run the packers with sme_fa64=off.
"""
from __future__ import annotations

from dataclasses import dataclass

import jinja2

from encoder import rewrite_text

from .emit import environment, inst_features
from .isa import ARCH_NAMES
from .schedule import Insn
from .sme_emit import I, LABEL_RE, lazy_save_commit, restore_d8_d15, save_d8_d15, sme_asm_line
from .sme_tiling import GROUP

# Element bytes x panel lp (gen.sme_tiling GROUP instruction k-steps) of the packed types whose packing is a copy (gen.registry PACKED kinds):
# the pack kinds each B packer serves. A packers serve every copy kind (a k-step = one word).
COPY_KINDS = {(4, GROUP): ("F32",), (2, 2 * GROUP): ("F16",), (1, 4 * GROUP): ("S8",)}
LETTER = {1: "b", 2: "h", 4: "w"}
SUFFIX = {1: "b", 2: "h", 4: "s"}


@dataclass(frozen=True)
class SmePacker:
    symbol: str
    file: str
    text: str
    manifest: dict


def a_symbol(prefix: str, tr: int, convert: bool = False) -> str:
    return f"{prefix}sme_pack_a_{'bf16_' if convert else ''}{tr}vl"


def b_symbol(prefix: str, elem_bytes: int, lp: int, tc: int) -> str:
    return f"{prefix}sme_pack_b_{elem_bytes}x{lp}_{tc}vl"


def b_bf16_symbol(prefix: str, tc: int) -> str:
    return f"{prefix}sme_pack_b_bf16_{tc}vl"


# ---- A: rows x k-step words, transposed through ZA --------------------------------------------
# x0 dst, x1 src, x2 rows, x3 k_bytes, x4 lda_bytes; x6 S, x7 SVL/8, x8 chunk byte offset,
# x9 row pointer, x10 rows left, x11 words of the chunk, x13 dst cursor, x15 words in all,
# x16 S * lda, w12 slice index; bf16 (BFCVT form) rows four at a time: x5 / x11 / x17 one / two /
# three rows in elements, x14 the rows' second vectors; p1 / p2 the chunk's two vectors of
# k-values inside the row, p3 (BFCVT form) its k-value pairs (LD2W, K even).
# ---- bf16: fp32 rounded to bf16 with integers (bit for bit ts_pack.c f32_to_bf16) ----------------
# Constants (LD1RW from K_CONSTS): z27 0x40, z28 1, z29 0x7fff, z30 0x7fffffff, z31 0x7f800000.
BF16_CONSTS = ((27, 0x40), (28, 1), (29, 0x7FFF), (30, 0x7FFFFFFF), (31, 0x7F800000))


def bf16_constants() -> list[Insn]:
    code = [I("adr x5, K_CONSTS", "the rounding constants")]
    code += [I(f"ld1rw {{z{r}.s}}, p0/z, [x5" + (f", #{4 * i}]" if i else "]"), f"{v:#x}")
             for i, (r, v) in enumerate(BF16_CONSTS)]
    return code


def bf16_round(x: int) -> list[Insn]:
    """z<x>.s fp32 -> its bf16 bits in the low half of each lane (high half zero), as
    ts_pack.c f32_to_bf16: (x + 0x7FFF + bit 16 of x) >> 16 (round to nearest, ties to even;
    past the bf16 range to infinity), except NaNs (|x| > 0x7F800000), which keep their high
    half with the quiet bit (0x40) set. ADDHNB (SVE2) adds and keeps the high half of each sum
    in the bottom halfword, zeroing the top one (Arm DDI0487 ADDHNB): the add, the shift and
    the narrowing in one instruction. Integers only: no FPCR mode (FZ, DN, rounding) changes
    the result and no FP exception flag is raised. Temporaries z2-z4, p6."""
    return [I(f"lsr z2.s, z{x}.s, #16", "the kept half"),
            I("and z3.d, z2.d, z28.d", "its lowest bit"),
            I("add z3.s, z3.s, z29.s", "+ 0x7fff: the increment, ties to even"),
            I(f"and z4.d, z{x}.d, z30.d", "|x|"),
            I("cmphi p6.s, p0/z, z4.s, z31.s", "NaN lanes"),
            I("orr z2.d, z2.d, z27.d", "kept | 0x40: a quiet NaN"),
            I(f"addhnb z3.h, z{x}.s, z3.s", "(x + increment) >> 16, top halfwords zero"),
            I(f"sel z{x}.s, p6, z2.s, z3.s", "bf16 bits")]


# BFCVT / BFCVTNT (SVE with FEAT_BF16, legal in Streaming SVE mode: Arm DDI0487 lists no
# streaming restriction for them, unlike BFMMLA; FEAT_SME implies FEAT_BF16) round by FPCR
# (FPConvertBF: RMode, FZ, DN, AH, FIZ). With all of those 0 -- round to nearest even,
# denormals kept, NaNs quieted with the payload's high bits kept (FPConvertNaN) -- that is
# bf16_round's (ts_pack.c f32_to_bf16's) result bit for bit; the FP exception flags they raise
# change nothing (no trap enabled, and SMSTART / SMSTOP reset FPSR anyway: Arm DDI0487,
# ResetSVEState). So each bf16 packer reads FPCR once and takes the BFCVT loop (2 instructions
# per 2 vectors of fp32 instead of 16) under the default fields, the integer loop otherwise:
# the fields of ts_pack.c TS_FPCR_BFCVT_FIELDS (FIZ, AH, the trap enables, RMode, FZ, DN),
# the same rule as the NEON packers' BFCVTN.
FPCR_BFCVT_FIELDS = 0x03C09F03


def fpcr_choice(body) -> list[Insn]:
    """body(hw) twice: the BFCVT form when FPCR's conversion fields are 0, else the integer
    form (labels suffixed _INT). Temporaries x16, x17 (before either body)."""
    integer = [Insn(LABEL_RE.sub(lambda m: m.group(0) if m.group(0) == "K_CONSTS"
                                 else m.group(0) + "_INT", insn.text), insn.kind,
                    comment=insn.comment) for insn in body(False)]
    return [I("mrs x16, fpcr", "rounding mode, flush-to-zero, default NaN, AH, FIZ, traps"),
            I(f"mov x17, #{FPCR_BFCVT_FIELDS & 0xFFFF:#x}"),
            I(f"movk x17, #{FPCR_BFCVT_FIELDS >> 16:#x}, lsl #16",
              f"{FPCR_BFCVT_FIELDS:#010x}: ts_pack.c TS_FPCR_BFCVT_FIELDS"),
            I("tst x16, x17"),
            I("b.ne K_INT", "not the default: the integer rounding (the same bits)")] + body(True) + [
            I("b K_END"), Insn("K_INT:", "label")] + integer + [Insn("K_END:", "label")]


def bf16_rows4(t: int) -> list[Insn]:
    """The BFCVT A packer's rows of tile t four at a time (x10 rows, x9 the first, w12 its
    slice; on exit x10 < 4 rows left, x9 / w12 at the next). x5 / x11 / x17 = 1 / 2 / 3 rows in
    elements (scalar plus scalar offsets). K even (`bf16_pairs4`): per row one LD2W of its 2S
    values, de-interleaved -- k-values 2i in one register, 2i + 1 in the other (Arm DDI0487
    LD2W: element 2i + j to register j, lane i) -- then BFCVT (even halfwords) and BFCVTNT (odd
    ones) put k-step word i together in lane i, and MOVA puts it into horizontal slice w12 + i:
    20 instructions per 4 rows. K odd (a pair would read past the row's last value): per row
    two LD1W, two BFCVT, UZP1, MOVA, 29 per 4 rows. x11 and x17 are free here (the chunk's
    predicates are set), x5 and x14 in the BFCVT form."""
    offsets = ("", "x5", "x11", "x17")
    code = [I("lsr x5, x4, #2", "one row in elements"), I("lsl x11, x5, #1", "two rows"),
            I("add x17, x11, x5", "three rows"),
            I("subs x10, x10, #4"), I(f"b.lo K_ROWS{t}_REST", "fewer than 4 rows"),
            I(f"tbnz x3, #2, K_ROWS{t}_4", "K odd: two LD1W per row")]
    code += bf16_pairs4(t, offsets)
    code += [Insn(f"K_ROWS{t}_4:", "label"), I("addvl x14, x9, #1", "the rows' second vectors")]
    for i, off in enumerate(offsets):
        code += [I(f"ld1w {{z{2 * i}.s}}, p1/z, [x9" + (f", {off}, lsl #2]" if off else "]"),
                   f"row i + {i}: its first S values"),
                 I(f"ld1w {{z{2 * i + 1}.s}}, p2/z, [x14" + (f", {off}, lsl #2]" if off else "]"),
                   "the next S")]
    for i in range(4):
        code += [I(f"bfcvt z{2 * i}.h, p0/m, z{2 * i}.s", f"row i + {i}: bf16 in the low halves"),
                 I(f"bfcvt z{2 * i + 1}.h, p0/m, z{2 * i + 1}.s")]
    code += [I(f"uzp1 z{2 * i}.h, z{2 * i}.h, z{2 * i + 1}.h", f"row i + {i}: S k-step words")
             for i in range(4)]
    code += [I(f"mova za{t}h.s[w12, {i}], p0/m, z{2 * i}.s", f"-> za{t}h.s[i + {i}]")
             for i in range(4)]
    code += [I("add x9, x9, x4, lsl #2", "4 rows on"), I("add w12, w12, #4"),
             I("subs x10, x10, #4"), I(f"b.hs K_ROWS{t}_4"),
             Insn(f"K_ROWS{t}_REST:", "label"), I("add x10, x10, #4", "0-3 rows left")]
    return code


def bf16_pairs4(t: int, offsets) -> list[Insn]:
    """bf16_rows4's loop for K even: LD2W under p3 (the chunk's k-value pairs inside the row,
    set per chunk), BFCVT + BFCVTNT, MOVA; leaves to K_ROWS<t>_REST."""
    code = [Insn(f"K_ROWS{t}_P:", "label")]
    code += [I(f"ld2w {{z{2 * i}.s, z{2 * i + 1}.s}}, p3/z, [x9"
               + (f", {off}, lsl #2]" if off else "]"),
               f"row i + {i}: k-values 2j / 2j + 1 of its 2S in lane j")
             for i, off in enumerate(offsets)]
    for i in range(4):
        code += [I(f"bfcvt z{2 * i}.h, p0/m, z{2 * i}.s", f"row i + {i}: k 2j in halfword 2j"),
                 I(f"bfcvtnt z{2 * i}.h, p0/m, z{2 * i + 1}.s", "k 2j + 1 in 2j + 1: S words")]
    code += [I(f"mova za{t}h.s[w12, {i}], p0/m, z{2 * i}.s", f"-> za{t}h.s[i + {i}]")
             for i in range(4)]
    return code + [I("add x9, x9, x4, lsl #2", "4 rows on"), I("add w12, w12, #4"),
                   I("subs x10, x10, #4"), I(f"b.hs K_ROWS{t}_P"), I(f"b K_ROWS{t}_REST")]


def pack_a_body(tr: int, convert: bool = False, hw: bool = False) -> list[Insn]:
    """convert: source fp32 (k_bytes = 4K), a k-step = two values rounded to bf16 (hw: by
    BFCVT, under the default FPCR only: fpcr_choice); else the copy kinds' `pack_a_copy`."""
    if not convert:
        return pack_a_copy(tr)
    if tr not in (1, 2):
        raise ValueError(f"A packer for {tr} row tiles: 1 or 2 (the SME kernels' tr)")
    per_word = 3 if convert else 2          # log2 source bytes per packed word
    code = bf16_constants() if convert and not hw else []
    code += [
        I("cntw x6", "S = SVL/32: rows of one ZA.S tile, words of one vector"),
        I("cntb x7" + (", all, mul #2" if convert else ""),
          "source bytes of a chunk of S words per row"),
        I(f"add x15, x3, #{(1 << per_word) - 1}"),
        I(f"lsr x15, x15, #{per_word}", "k-steps (words per row) in all"),
        I("mul x16, x6, x4", "S rows of A in bytes"),
        I("mov x8, #0", "chunk: bytes k_bytes[x8 ..] of every row"),
        I("mov x13, x0", "k-step 0 of the panel"),
    ]
    if not convert:
        code += [I("lsl x5, x4, #1", "2 rows"), I("add x17, x5, x4", "3 rows")]
    code += [
        I("zero {za}", "rows past `rows` are never loaded: zero in every chunk (ZA may have "
          "been dormant with the caller's data)"),
        Insn("K_CHUNK:", "label"),
        I("cmp x8, x3"), I("b.hs K_DONE", "every k-step written"),
    ]
    if convert:
        code += [I("lsr x17, x3, #2", "K"), I("lsr x11, x8, #2", "k of the chunk"),
                 I("whilelt p1.s, x11, x17", "its first S values inside the row"),
                 I("add x11, x11, x6"), I("whilelt p2.s, x11, x17", "the next S")]
        if hw:
            code += [I("lsr x17, x3, #3", "K / 2: whole k-value pairs (K even: LD2W)"),
                     I("lsr x11, x8, #3", "pair of the chunk"),
                     I("whilelt p3.s, x11, x17", "its S pairs inside the row")]
    else:
        code.append(I("whilelt p1.b, x8, x3", "the chunk's bytes inside the row"))
    for t in range(tr):
        done = f"K_ROWS{t}_DONE"
        if t == 0:
            code.append(I("mov x10, x2", "rows of tile 0: min(rows, S)"))
        else:
            code += [I("subs x10, x2, x6", "rows of tile 1: min(rows - S, S)"),
                     I(f"b.ls {done}", "none")]
        code += [I("cmp x10, x6"), I("csel x10, x10, x6, lo"),
                 I("cbz x10, " + done),
                 I("add x9, x1, x8", f"row {t}*S of A, at the chunk")]
        if t:
            code.append(I("add x9, x9, x16"))
        if convert:
            row = [I("ld1w {z0.s}, p1/z, [x9]", "2S values of the row"),
                   I("ld1w {z1.s}, p2/z, [x9, #1, mul vl]")]
            if hw:
                row += [I("bfcvt z0.h, p0/m, z0.s", "bf16 in the low half of each word"),
                        I("bfcvt z1.h, p0/m, z1.s")]
            else:
                row += bf16_round(0) + bf16_round(1)
            row += [I("uzp1 z0.h, z0.h, z1.h", "the 2S bf16 in k order: S k-step words"),
                    I(f"mova za{t}h.s[w12, 0], p0/m, z0.s", f"-> za{t}h.s[i]")]
            code.append(I("mov w12, #0", f"za{t}h.s slice i"))
            if hw:
                code += bf16_rows4(t)
            code += [Insn(f"K_ROWS{t}:", "label")]
            if hw:
                code.append(I(f"cbz x10, {done}", "rows left (< 4) one at a time"))
            code += row + [I("add w12, w12, #1"), I("add x9, x9, x4", "next row"),
                           I("subs x10, x10, #1"), I(f"b.ne K_ROWS{t}")]
        else:       # four rows per iteration (slice offsets 0, 4, 8, 12), then one at a time
            code += [I(f"mov w12, #{t}", f"ZA0.B slice 4i + {t} = za{t}h.s slice i"),
                     Insn(f"K_ROWS{t}:", "label"),
                     I("cmp x10, #4"), I(f"b.lo K_ROW{t}", "fewer than 4 rows left")]
            code += [I(f"ld1b {{za0h.b[w12, {4 * i}]}}, p1/z, [x9" + (f", {r}]" if r else "]"),
                       f"row i + {i}'s chunk -> za{t}h.s[i + {i}]")
                     for i, r in enumerate(("", "x4", "x5", "x17"))]
            code += [I("add x9, x9, x4, lsl #2", "4 rows on"), I("add w12, w12, #16"),
                     I("sub x10, x10, #4"), I(f"b K_ROWS{t}"),
                     Insn(f"K_ROW{t}:", "label"),
                     I(f"cbz x10, {done}"),
                     I("ld1b {za0h.b[w12, 0]}, p1/z, [x9]", f"one row's chunk -> za{t}h.s[i]"),
                     I("add x9, x9, x4", "next row"), I("add w12, w12, #4"),
                     I("sub x10, x10, #1"), I(f"b K_ROW{t}")]
        code.append(Insn(f"{done}:", "label"))
    code += [
        I(f"lsr x11, x8, #{per_word}", "words before the chunk"),
        I("sub x11, x15, x11", "words left"),
        I("cmp x11, x6"), I("csel x11, x11, x6, lo", "words of this chunk: min(left, S)"),
        I("mov w12, #0", f"vertical slices w12 .. w12 + {GROUP - 1} = one panel k-step"),
        Insn("K_STEP:", "label"),
    ]
    for t in range(tr):
        regs = [GROUP * t + j for j in range(GROUP)]
        code += [I(f"mova z{z}.s, p0/m, za{t}v.s[w12, {j}]", f"word w12 + {j} of rows {t}*S..")
                 for j, z in enumerate(regs)]
        code.append(I(f"st4w {{z{regs[0]}.s-z{regs[-1]}.s}}, p0, [x13"
                      + (f", #{GROUP * t}, mul vl]" if t else "]"),
                      f"rows {t}*S..: each row's {GROUP} words side by side"))
    code += [
        I(f"addvl x13, x13, #{GROUP * tr}", "next k-step of the panel"),
        I(f"add w12, w12, #{GROUP}"),
        I("cmp w12, w11"),
        I("b.lo K_STEP", "(S is a multiple of 4: a chunk holds whole k-steps)"),
        I("add x8, x8, x7", "next chunk"),
        I("b K_CHUNK"),
        Insn("K_DONE:", "label"),
    ]
    return code


ZA_S_TILES = 4          # ZA.S tiles: ZA0.B slice 4i + t is ZAt.S slice i
# the panel cursors of chunks 1, 2, 3 in a full pass (`full_pass_steps`)
CHUNK_CURSORS = ("x13", "x9", "x14", "x10")


def slices_to_panel(q: int, t: int, tr: int, first_reg: int, cursor: str) -> list[Insn]:
    """Chunk q's rows t*S.. of one panel k-step: the GROUP vertical slices w12.. of its ZA
    tile (q*tr + t) into z<first_reg>.., stored by one ST4W at the cursor (+ GROUP*t vectors),
    each row's GROUP words side by side."""
    regs = [first_reg + j for j in range(GROUP)]
    code = [I(f"mova z{z}.s, p0/m, za{q * tr + t}v.s[w12, {j}]",
              f"word w12 + {j} of rows {t}*S.. (chunk {q})") for j, z in enumerate(regs)]
    code.append(I(f"st4w {{z{regs[0]}.s-z{regs[-1]}.s}}, p0, [{cursor}"
                  + (f", #{GROUP * t}, mul vl]" if t else "]"),
                  f"chunk {q}, rows {t}*S..: each row's {GROUP} words side by side"))
    return code


def full_pass_steps(tr: int, q_count: int) -> list[Insn]:
    """A pass whose Q chunks are all whole (at least Q*S words left): one loop over the
    vertical slices moves a panel k-step of every chunk per iteration (chunk q's k-steps
    start q*tr*S vectors after chunk 0's: its own cursor), 4*Q MOVAs, Q ST4W and Q cursor
    advances per 4 loop instructions; otherwise (the last pass of a row) chunk by chunk,
    K_PARTIAL."""
    cur = CHUNK_CURSORS
    code = [I(f"cntw x10, all, mul #{q_count}", f"{q_count}*S: the words of a full pass"),
            I("cmp x11, x10"), I("b.lo K_PARTIAL", "fewer left: chunk by chunk"),
            I("mul x9, x6, x7", "S vectors in bytes")]
    step = f", lsl #{tr.bit_length() - 1}" if tr > 1 else ""
    if q_count > 2:
        code.append(I(f"add x14, x13, x9, lsl #{tr}", "chunk 2's first k-step"))
        code.append(I(f"add x10, x14, x9{step}", "chunk 3's"))
    code += [I(f"add x9, x13, x9{step}", f"chunk 1's: {tr}*S k-steps of {GROUP * tr} vectors on"),
             I("mov w12, #0", f"vertical slices w12 .. w12 + {GROUP - 1}"),
             Insn("K_STEPS_FULL:", "label")]
    for q in range(q_count):
        for t in range(tr):
            code += slices_to_panel(q, t, tr, GROUP * (q * tr + t), cur[q])
    code += [I(f"addvl {cur[q]}, {cur[q]}, #{GROUP * tr}", f"chunk {q}: next k-step")
             for q in range(q_count)]
    code += [I(f"add w12, w12, #{GROUP}"), I("cmp w12, w6"), I("b.lo K_STEPS_FULL", "S words"),
             I(f"mov x13, {cur[q_count - 1]}", "after the last chunk's k-steps"),
             I(f"add x8, x8, x7, lsl #{q_count.bit_length() - 1}",
               f"next pass: {q_count} chunks on"),
             I("b K_PASS"), Insn("K_PARTIAL:", "label")]
    return code


def pack_a_copy(tr: int) -> list[Insn]:
    """The copy kinds (fp32, fp16, int8: a k-step = one word of the row). A pass takes
    Q = 4 / tr chunks of S words (SVL/8 bytes) of every row at once, chunk q of row tile t into
    ZA tile q*tr + t (all four ZA.S tiles in use): two rows per loop iteration, Q LD1B each
    (chunk q at the row's byte x8 + q*SVL/8: offset registers xzr, x7, x16, x17), then per chunk
    the vertical slices (MOVA, four per panel k-step) stored by ST4W, the chunks' k-steps one
    after the other. x8 the pass's first byte of the rows, x9 / x14 rows i / i + 1, x10 rows
    left, x11 words left, x13 the panel cursor; p1.. the bytes of chunk q inside the row."""
    if ZA_S_TILES % tr:
        raise ValueError(f"A packer for {tr} row tiles: 1 or 2")
    q_count = ZA_S_TILES // tr
    chunk_off = ("xzr", "x7", "x16", "x17")
    code = [
        I("cntw x6", "S = SVL/32: rows of one ZA.S tile, words of one vector"),
        I("cntb x7", "SVL/8: source bytes of a chunk of S words per row"),
        I("lsl x16, x7, #1", "2 chunks"), I("add x17, x16, x7", "3 chunks"),
        I("add x15, x3, #3"), I("lsr x15, x15, #2", "k-steps (words per row) in all"),
        I("lsl x5, x4, #1", "2 rows"),
        I("mov x8, #0", "pass: bytes k_bytes[x8 ..] of every row"),
        I("mov x13, x0", "k-step 0 of the panel"),
        I("zero {za}", "rows past `rows` are never loaded: zero in every pass (ZA may have "
          "been dormant with the caller's data)"),
        Insn("K_PASS:", "label"),
        I("cmp x8, x3"), I("b.hs K_DONE", "every k-step written"),
        I("whilelt p1.b, x8, x3", "chunk 0's bytes inside the row"),
    ]
    for q in range(1, q_count):
        code += [I(f"add x11, x8, {chunk_off[q]}"),
                 I(f"whilelt p{1 + q}.b, x11, x3", f"chunk {q}'s bytes")]
    for t in range(tr):
        done, last = f"K_ROWS{t}_DONE", f"K_ROW{t}_LAST"
        if t == 0:
            code.append(I("mov x10, x2", "rows of tile 0: min(rows, S)"))
        else:
            code += [I("subs x10, x2, x6", f"rows of tile {t}: min(rows - S, S)"),
                     I(f"b.ls {done}", "none")]
        code += [I("cmp x10, x6"), I("csel x10, x10, x6, lo"),
                 I("add x9, x1, x8", f"row {t}*S of A, at the pass")]
        if t:
            code.append(I("madd x9, x6, x4, x9", "S rows on"))
        code += [I("add x14, x9, x4", "the next row"),
                 I("mov w12, #0", "ZA0.B slice 4i (+ tile): row i"),
                 I("subs x10, x10, #2"), I(f"b.lo {last}", "fewer than 2 rows"),
                 Insn(f"K_ROWS{t}:", "label")]

        def row(o: int, pointer: str) -> list[Insn]:
            return [I(f"ld1b {{za0h.b[w12, {4 * o + q * tr + t}]}}, p{1 + q}/z, [{pointer}"
                      + (f", {chunk_off[q]}]" if q else "]"),
                      f"row i + {o}, chunk {q} -> za{q * tr + t}h.s[i + {o}]")
                    for q in range(q_count)]
        code += row(0, "x9") + row(1, "x14")
        code += [I("add x9, x9, x5", "2 rows on"), I("add x14, x14, x5"),
                 I("add w12, w12, #8"),
                 I("subs x10, x10, #2"), I(f"b.hs K_ROWS{t}"),
                 Insn(f"{last}:", "label"),
                 I(f"tbz x10, #0, {done}", "x10 = -1: one row left, -2: none")]
        code += row(0, "x9")
        code.append(Insn(f"{done}:", "label"))
    code += [I("lsr x11, x8, #2", "words before the pass"),
             I("sub x11, x15, x11", "words left (> 0)")]
    code += full_pass_steps(tr, q_count)
    for q in range(q_count):
        step = f"K_STEP{q}"
        code += [I("cmp x11, x6"), I("csel x10, x11, x6, lo", f"words of chunk {q}: min(left, S)"),
                 I("mov w12, #0", f"vertical slices w12 .. w12 + {GROUP - 1} = one panel k-step"),
                 Insn(f"{step}:", "label")]
        for t in range(tr):
            code += slices_to_panel(q, t, tr, GROUP * t, "x13")
        code += [I(f"addvl x13, x13, #{GROUP * tr}", "next k-step of the panel"),
                 I(f"add w12, w12, #{GROUP}"), I("cmp w12, w10"),
                 I(f"b.lo {step}", "(S is a multiple of 4: a chunk holds whole k-steps)"),
                 I("subs x11, x11, x6", "words left after the chunk"),
                 I("b.ls K_DONE", "none")]
    shift = q_count.bit_length() - 1
    code += [I(f"add x8, x8, x7, lsl #{shift}", f"next pass: {q_count} chunks on"),
             I("b K_PASS"), Insn("K_DONE:", "label")]
    return code


# ---- B: GROUP instruction k-steps of k rows each per panel k-step ------------------------------
# The panel's k-step s holds, per column, the lp = GROUP * k values of B rows s*lp .. s*lp + lp - 1
# side by side: GROUP 32-bit words per column, word j = instruction k-step j (k values). The
# packer builds, per instruction k-step j and per S columns c, the vector W(j, c) of those words
# (fp32: the row itself; fp16: ZIP1/ZIP2 .h of its two rows; int8: ZIP1/ZIP2 .b of row pairs,
# then .h; bf16: the two rows rounded, TRN1 .h), then one ST4W {W(0, c) .. W(3, c)} per c writes
# each column's 4 words side by side (Arm DDI0487 ST4W: register j to word 4i + j).
# x0 dst cursor, x1 src, x2 cols, x3 K, x4 ldb_bytes, x5 col_sums; x6 panel k-steps left,
# x7 rows of a last partial one, x8 its row's columns, x9 row 4q of B (chunk 0), x14 the same
# at chunk 1, x10 / x11 / x12 one / two / three rows in elements, x13 four rows in bytes, x15
# columns of one vector. z0-z7 rows and temporaries, z8.. W(j, c) = z(8 + 4c + j), int8 column
# sums z24-z27, bf16 constants z27-z31.
CHUNK_OFFSETS = ("xzr", "x15")          # column offset of source vector c of a row
W_BASE, SUMS_BASE = 8, 24


def b_chunks(src_bytes: int, tc: int) -> int:
    """Source vectors per row: hp = tc*S columns of src_bytes, S*4 bytes per vector."""
    return max(1, tc * src_bytes // 4)


def w_reg(j: int, c: int) -> int:
    return W_BASE + GROUP * c + j


def _row_address(q: int, c: int, src_bytes: int) -> str:
    base = ("x9", "x14")[c]
    if q == 0:
        return f"[{base}]"
    shift = src_bytes.bit_length() - 1
    return f"[{base}, x{9 + q}" + (f", lsl #{shift}]" if shift else "]")


def pack_b_body(elem_bytes: int, k: int, tc: int, convert: bool = False,
                hw: bool = False) -> list[Insn]:
    """B panel of hp = tc*S columns, panel k-steps of lp = GROUP * k rows (see above);
    `convert`: fp32 source rounded to bf16 (k = 2; hw: by BFCVT / BFCVTNT, under the default
    FPCR only: fpcr_choice)."""
    src_bytes = 4 if convert else elem_bytes
    chunks = b_chunks(src_bytes, tc)
    lp = GROUP * k
    if chunks > len(CHUNK_OFFSETS) or w_reg(GROUP - 1, tc - 1) >= (27 if convert else SUMS_BASE):
        raise ValueError(f"B packer: {tc} column tiles of {src_bytes}-byte elements")
    letter, size = LETTER[src_bytes], SUFFIX[src_bytes]
    sums = (elem_bytes, k) == (1, 4) and not convert     # int8 B: the column sums too
    code = bf16_constants() if convert and not hw else []
    code.append(I(f"cnt{letter} x15",
                  f"columns of one source vector ({letter} elements)"))
    for c in range(chunks):
        code.append(I(f"whilelt p{1 + c}.{size}, {CHUNK_OFFSETS[c]}, x2",
                      f"source vector {c}: its columns below cols"))
    shift = src_bytes.bit_length() - 1
    code += [I("mov x9, x1", "row 0")]
    if chunks > 1:
        code.append(I("addvl x14, x1, #1", "row 0, source vector 1"))
    code += [I(f"lsr x10, x4, #{shift}" if shift else "mov x10, x4", "one row in elements"),
             I("lsl x11, x10, #1", "two rows"), I("add x12, x11, x10", "three rows"),
             I("lsl x13, x4, #2", "four rows in bytes"),
             I(f"lsr x6, x3, #{lp.bit_length() - 1}", f"whole panel k-steps ({lp} rows each)")]

    def load(row: int, c: int, reg: int, tail: bool) -> list[Insn]:
        """Row `row` (of the panel k-step), source vector c, into z<reg>; in the tail rows
        at or past K % lp load under an all-false predicate: zeros, no memory access."""
        pred, out = 1 + c, []
        if tail and row:
            pred = 6 + c
            out += [I(f"cmp x7, #{row}"),
                    I("csel x8, x2, xzr, hi", f"row {row}: cols if it exists, else none")]
            out.append(I(f"whilelt p{pred}.{size}, {CHUNK_OFFSETS[c]}, x8"))
        return out + [I(f"ld1{letter} {{z{reg}.{size}}}, p{pred}/z, "
                        f"{_row_address(row % 4, c, src_bytes)}", f"row +{row}, vector {c}")]

    def advance() -> list[Insn]:
        return [I("add x9, x9, x13", "four rows on")] + (
            [I("add x14, x14, x13")] if chunks > 1 else [])

    def step(tail: bool, sums: bool) -> list[Insn]:
        body = []
        for quad in range(lp // 4):
            rows = range(4 * quad, 4 * quad + 4)
            if (elem_bytes, k) == (4, 1):               # fp32: the rows are W(j, c)
                for row in rows:
                    for c in range(chunks):
                        body += load(row, c, w_reg(row, c), tail)
            elif convert:                               # bf16: pairs of rows, rounded
                for pair in range(2):
                    j = 2 * quad + pair
                    for c in range(chunks):
                        body += load(4 * quad + 2 * pair, c, 0, tail)
                        body += load(4 * quad + 2 * pair + 1, c, 1, tail)
                        if hw:
                            body += [I(f"bfcvt z{w_reg(j, c)}.h, p0/m, z0.s",
                                       "column i: k in the low half of word i"),
                                     I(f"bfcvtnt z{w_reg(j, c)}.h, p0/m, z1.s",
                                       f"k + 1 in its high half -> W({j}, {c})")]
                            continue
                        body += bf16_round(0) + bf16_round(1)
                        body.append(I(f"trn1 z{w_reg(j, c)}.h, z0.h, z1.h",
                                      f"column i: (k, k + 1) in word i -> W({j}, {c})"))
            elif k == 2:                                # fp16: rows (0, 1), (2, 3) of the quad
                for row in rows:
                    body += load(row, 0, row % 4, tail)
                for pair in range(2):
                    j = 2 * quad + pair
                    a, b = 2 * pair, 2 * pair + 1
                    body += [I(f"zip1 z{w_reg(j, 0)}.h, z{a}.h, z{b}.h",
                               f"columns 0..S-1: (k, k + 1) per word -> W({j}, 0)"),
                             I(f"zip2 z{w_reg(j, 1)}.h, z{a}.h, z{b}.h", "columns S..2S-1")]
            else:                                       # int8: the quad is one k-step
                for row in rows:
                    body += load(row, 0, row % 4, tail)
                j = quad
                body += [I("zip1 z4.b, z0.b, z1.b", "rows k, k + 1 by column: columns 0..2S-1"),
                         I("zip1 z6.b, z2.b, z3.b", "rows k + 2, k + 3")]
                if tc > 2:
                    body += [I("zip2 z5.b, z0.b, z1.b", "columns 2S..4S-1"),
                             I("zip2 z7.b, z2.b, z3.b")]
                for c in range(tc):
                    lo, hi = (4, 6) if c < 2 else (5, 7)
                    body.append(I(f"zip{1 + c % 2} z{w_reg(j, c)}.h, z{lo}.h, z{hi}.h",
                                  f"columns {c}*S..: k .. k + 3 per word -> W({j}, {c})"))
                if sums:
                    body += column_sums_step(j, tc)
            body += advance()
        for c in range(tc):
            body.append(I(f"st4w {{z{w_reg(0, c)}.s-z{w_reg(GROUP - 1, c)}.s}}, p0, [x0"
                          + (f", #{GROUP * c}, mul vl]" if c else "]"),
                          f"columns {c}*S..: each column's {lp} k-values side by side"))
        body.append(I(f"addvl x0, x0, #{GROUP * tc}",
                      f"next k-step of the panel ({GROUP}*{tc}*S words)"))
        return body

    def loops(sums: bool) -> list[Insn]:
        """The whole panel k-steps, then a last partial one (labels suffixed _SUMS with
        `sums`); with `sums` the column sums are stored after it."""
        tag = "_SUMS" if sums else ""
        code = [Insn(f"K_STEP{tag}:", "label")] + step(False, sums)
        code += [I("subs x6, x6, #1"), I(f"b.ne K_STEP{tag}"), Insn(f"K_TAIL{tag}:", "label"),
                 I(f"and x7, x3, #{lp - 1}", "rows of a last partial panel k-step"),
                 I(f"cbz x7, K_DONE{tag}")]
        code += step(True, sums) + [Insn(f"K_DONE{tag}:", "label")]
        return code + (column_sums_store(tc) if sums else [])

    if not sums:
        return code + [I("cbz x6, K_TAIL")] + loops(False)
    # int8: the loop with the column sums only when they are wanted (x5 non-NULL)
    return code + [I("index z28.b, #1, #0", "1 in every byte: SDOT sums the four of a word"),
                   I("cbz x5, K_NO_SUMS", "col_sums NULL: the loop without them"),
                   I("cbz x6, K_TAIL_SUMS")] + loops(True) + [
        I("b K_END"), Insn("K_NO_SUMS:", "label"), I("cbz x6, K_TAIL")] + loops(False) + [
        Insn("K_END:", "label")]


# COLUMN_SUMS: the int8 B packers also write sum_k B[k][c] of the panel's columns (int32, the
# column sums ts_packed_b keeps for the zero points) when col_sums is not NULL: per panel k-step
# quad, W(j, c) holds each column's four k-values in one word, and SDOT with a vector of ones
# adds the four into that column's int32 lane (z24 + c = columns c*S.., in column order; one
# instruction per S columns and four rows, Arm DDI0487 SDOT (vectors)). The accumulators start
# at zero: SMSTART SM zeroes every Z register (Arm DDI0487, "Changes to PSTATE.SM"). Columns
# past cols and rows past K load as zero and add nothing; the store writes ceil(cols / 4) * 4
# sums (ts_pack.c sizes the sums in whole groups of 4).
SUMS_ONES = 28          # z28: 1 in every byte


def column_sums_step(j: int, tc: int) -> list[Insn]:
    return [I(f"sdot z{SUMS_BASE + c}.s, z{w_reg(j, c)}.b, z{SUMS_ONES}.b",
              f"columns {c}*S..: + their four k-values") for c in range(tc)]


def column_sums_store(tc: int) -> list[Insn]:
    code = [I("add x13, x2, #3"), I("and x13, x13, #-4", "ceil(cols / 4) * 4 sums"),
            I("cntw x10", "S"), I("mov x11, #0", "columns 0*S..")]
    for c in range(tc):
        code += [I("whilelt p6.s, x11, x13", f"sums of columns {c}*S.. to write"),
                 I(f"st1w {{z{SUMS_BASE + c}.s}}, p6, [x5" + (f", #{c}, mul vl]" if c else "]"),
                   f"columns {c}*S..")]
        if c + 1 < tc:
            code.append(I("add x11, x11, x10"))
    return code


# ---- rendering ---------------------------------------------------------------------------------
def _render(symbol: str, summary: list[str], body: list[Insn], uses_za: bool, inst_mode: str,
            env: jinja2.Environment | None, consts=()) -> str:
    # the labels the code has: the lazy save's and the template's K_BAD_TPIDR2 only with ZA
    lazy_save = lazy_save_commit() if uses_za else []
    labels = sorted({name for insn in body + lazy_save for name in LABEL_RE.findall(insn.text)}
                    | ({"K_BAD_TPIDR2"} if uses_za else set()))
    env = env or environment()
    env.filters["sme_asm"] = sme_asm_line
    text = env.get_template("pack_sme.S.j2").render(
        symbol=symbol, summary=summary, body=body, uses_za=uses_za, labels=labels,
        consts=[value for _, value in consts],
        save=save_d8_d15(), restore=restore_d8_d15(), lazy_save=lazy_save,
        arch_directive=f"{ARCH_NAMES['v92']}+sme" if inst_mode == "never" else None)
    features = inst_features(inst_mode)
    if features:
        text = rewrite_text(text, features, filename=f"{symbol}.S")
    return text


def emit_pack_a(prefix: str, tr: int, inst_mode: str = "auto",
                env: jinja2.Environment | None = None, convert: bool = False) -> SmePacker:
    symbol = a_symbol(prefix, tr, convert)
    what = (["word per row: two fp32 values of the row rounded to bf16 (RNE, integer: bit for",
             "bit ts_pack.c f32_to_bf16), the rows x words matrix transposed through ZA."]
            if convert else
            ["word per row (fp32 x 1, fp16 x 2, int8 x 4): the rows x words matrix transposed",
             "through ZA."])
    summary = [
        f"A panel of ep = {tr}*S rows for the SME kernels (S = SVL/32), k-steps of one 32-bit",
        *what,
        f"  void {symbol}(void *dst, const void *src, size_t rows,",
        "                 size_t k_bytes, size_t lda_bytes);",
        "  x0 dst: ceil(k_bytes/4) k-steps of ep words (row r's word at 4r); x1 src: row 0 of A",
        "  at the panel's first k; x2 rows (<= ep; rows past it are zero); x3 k_bytes: bytes of",
        "  each row read (the last word's bytes past it are zero); x4 lda_bytes: row stride.",
        "  Reads exactly rows x k_bytes, writes exactly the panel's k-steps.",
    ]
    body = (fpcr_choice(lambda hw: pack_a_body(tr, True, hw)) if convert
            else pack_a_body(tr))
    text = _render(symbol, summary, body, True, inst_mode, env, BF16_CONSTS if convert else ())
    kinds = ["BF16"] if convert else sorted({k for kinds in COPY_KINDS.values() for k in kinds})
    return SmePacker(symbol, f"{symbol}.S", text,
                     {"symbol": symbol, "file": f"{symbol}.S", "role": "a", "tr": tr,
                      "group": GROUP, "kinds": kinds})


def emit_pack_b_bf16(prefix: str, tc: int, inst_mode: str = "auto",
                     env: jinja2.Environment | None = None) -> SmePacker:
    symbol = b_bf16_symbol(prefix, tc)
    summary = [
        f"B panel of hp = {tc}*S columns of bf16 (lp = {2 * GROUP}) for the SME kernels (S =",
        "SVL/32) from row-major fp32 B, rounded to bf16 (bit for bit ts_pack.c f32_to_bf16:",
        "BFCVT / BFCVTNT under the default FPCR, else the integer RNE): per k-step",
        f"{2 * GROUP} rows, column j's {2 * GROUP} values side by side.",
        f"  void {symbol}(void *dst, const void *src, size_t cols,",
        "                 size_t K, size_t ldb_bytes, int32_t *col_sums);",
        f"  x0 dst: ceil(K/{2 * GROUP}) k-steps of hp x {GROUP} words; x1 src: fp32 B at row 0, the panel's first",
        "  column; x2 cols (<= hp; columns past it are zero); x3 K rows (k past K is zero);",
        "  x4 ldb_bytes: row stride. Reads exactly K x cols fp32, writes exactly the panel.",
        "  x5 col_sums: unused (no column sums for this type).",
    ]
    body = fpcr_choice(lambda hw: pack_b_body(2, 2, tc, convert=True, hw=hw))
    text = _render(symbol, summary, body, False, inst_mode, env, BF16_CONSTS)
    return SmePacker(symbol, f"{symbol}.S", text,
                     {"symbol": symbol, "file": f"{symbol}.S", "role": "b", "elem_bytes": 2,
                      "lp": 2 * GROUP, "tc": tc, "kinds": ["BF16"], "col_sums": False})


def emit_pack_b(prefix: str, elem_bytes: int, lp: int, tc: int, inst_mode: str = "auto",
                env: jinja2.Environment | None = None) -> SmePacker:
    if (elem_bytes, lp) not in COPY_KINDS:
        raise ValueError(f"no streaming B packer for {elem_bytes}-byte elements, lp {lp}")
    symbol = b_symbol(prefix, elem_bytes, lp, tc)
    summary = [
        f"B panel of hp = {tc}*S columns for the SME kernels (S = SVL/32) from row-major B of",
        f"{elem_bytes}-byte elements, lp = {lp}: per k-step {lp} rows of B, each column's {lp}",
        f"values side by side ({GROUP} words: one ST4W per S columns).",
        f"  void {symbol}(void *dst, const void *src, size_t cols,",
        "                 size_t K, size_t ldb_bytes, int32_t *col_sums);",
        "  x0 dst: ceil(K/lp) k-steps of hp columns x lp elements (column c's lp k-values",
        "  contiguous); x1 src: B at row 0, the panel's first column; x2 cols (<= hp; columns",
        "  past it are zero); x3 K rows (k-values past K are zero); x4 ldb_bytes: row stride.",
        "  Reads exactly K x cols elements, writes exactly the panel.",
    ]
    if elem_bytes == 1:
        summary += ["  x5 col_sums: NULL, or int32 sum over k of each column, ceil(cols/4)*4 of",
                    "  them written (columns past cols: 0)."]
    else:
        summary += ["  x5 col_sums: unused (no column sums for this type)."]
    text = _render(symbol, summary, pack_b_body(elem_bytes, lp // GROUP, tc), False, inst_mode, env)
    return SmePacker(symbol, f"{symbol}.S", text,
                     {"symbol": symbol, "file": f"{symbol}.S", "role": "b",
                      "elem_bytes": elem_bytes, "lp": lp, "tc": tc,
                      "kinds": list(COPY_KINDS[elem_bytes, lp]),
                      "col_sums": elem_bytes == 1})


def emit_sme_packers(kernels: list[dict], prefix: str, inst_mode: str = "auto",
                     env: jinja2.Environment | None = None) -> list[SmePacker]:
    """The packers the raw SME kernels (manifest entries) need: one A packer per row-tile
    count tr, one B packer per (element bytes, lp, tc) of a copy kind."""
    from .isa import SME_INSTRUCTIONS, TYPE_BYTES
    trs, bs, bf16_trs, bf16_tcs = set(), set(), set(), set()
    for k in kernels:
        if k["epilogue"] != "raw":
            continue
        inst = SME_INSTRUCTIONS[k["instruction"]]
        if inst.b_type == "bf16":           # bf16 panels are rounded from fp32 (kind BF16)
            bf16_trs.add(int(k["tr"]))
            bf16_tcs.add(int(k["tc"]))
            continue
        trs.add(int(k["tr"]))
        shape = (TYPE_BYTES[inst.b_type], int(k["lp"]))
        if shape in COPY_KINDS:
            bs.add(shape + (int(k["tc"]),))
    return ([emit_pack_a(prefix, tr, inst_mode, env) for tr in sorted(trs)]
            + [emit_pack_a(prefix, tr, inst_mode, env, True) for tr in sorted(bf16_trs)]
            + [emit_pack_b(prefix, e, lp, tc, inst_mode, env) for e, lp, tc in sorted(bs)]
            + [emit_pack_b_bf16(prefix, tc, inst_mode, env) for tc in sorted(bf16_tcs)])
