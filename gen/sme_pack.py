"""Streaming-mode packers of the SME paths: the panels the SME kernels read (README "SME
kernels"), built with SVE/SME loads and stores of whole streaming vectors instead of NEON.

With the SME kernels' MOPAs taking S*S*k MACs each, the packers' NEON work (which grows with
M*K + K*N) dominated the SME operations' instruction count (bench --sme). These routines move
SVL/8 bytes per instruction and do the transposition in ZA or in the store:

  A, `<prefix>sme_pack_a_<tr>vl`: an A panel of ep = tr*S rows. For every SME type a row's
      k-step is one 32-bit word (lp x element bytes = 4: fp32 x 1, fp16 x 2, int8 x 4), so the
      panel is the rows x k-steps matrix of words transposed. Per chunk of S words: each row's
      SVL/8 bytes go into a horizontal slice of ZA tile t = row / S (LD1B into ZA0.B slice
      4*(row % S) + t, i.e. ZAt.S horizontal slice row % S: SME supplement DDI0616, "ZA
      array" -- ZAt.S slice i is ZA array vector 4i + t, the same as ZA0.B slice 4i + t), then
      the vertical slices (one k-step of S rows each) are stored (ST1W ZAtV.S). Byte-granular
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

# Element bytes x lp of the packed types whose packing is a copy (gen.registry PACKED kinds):
# the pack kinds each B packer serves. A packers serve every copy kind (a k-step = one word).
COPY_KINDS = {(4, 1): ("F32",), (2, 2): ("F16",), (1, 4): ("S8",)}
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
# x9 row pointer, x10 rows left, x11 words of the chunk, x13 dst cursor, x14 bytes per k-step
# (ep words), x15 words in all, x16 S * lda, w12 slice index.
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
    ts_pack.c f32_to_bf16: x + 0x7FFF + (bit 16 of x), shifted down 16 (round to nearest,
    ties to even; past the bf16 range to infinity), except NaNs (|x| > 0x7F800000), which keep
    their high half with the quiet bit (0x40) set. Integers only: no FPCR mode (FZ, DN,
    rounding) changes the result and no FP exception flag is raised. Temporaries z2-z4, p6."""
    return [I(f"lsr z2.s, z{x}.s, #16", "the kept half"),
            I("and z3.d, z2.d, z28.d", "its lowest bit"),
            I("add z3.s, z3.s, z29.s", "+ 0x7fff"),
            I(f"add z3.s, z{x}.s, z3.s", "carries into the kept half: round to nearest even"),
            I("lsr z3.s, z3.s, #16", "rounded"),
            I(f"and z4.d, z{x}.d, z30.d", "|x|"),
            I("cmphi p6.s, p0/z, z4.s, z31.s", "NaN lanes"),
            I("orr z2.d, z2.d, z27.d", "kept | 0x40: a quiet NaN"),
            I(f"sel z{x}.s, p6, z2.s, z3.s", "bf16 bits")]


def pack_a_body(tr: int, convert: bool = False) -> list[Insn]:
    """convert: source fp32 (k_bytes = 4K), a k-step = two values rounded to bf16."""
    if tr not in (1, 2):
        raise ValueError(f"A packer for {tr} row tiles: 1 or 2 (the SME kernels' tr)")
    per_word = 3 if convert else 2          # log2 source bytes per packed word
    code = bf16_constants() if convert else []
    code += [
        I("cntw x6", "S = SVL/32: rows of one ZA.S tile, words of one vector"),
        I("cntb x7" + (", all, mul #2" if convert else ""),
          "source bytes of a chunk of S words per row"),
        I(f"add x15, x3, #{(1 << per_word) - 1}"),
        I(f"lsr x15, x15, #{per_word}", "k-steps (words per row) in all"),
        I("mul x16, x6, x4", "S rows of A in bytes"),
        I("cntb x14" + (f", all, mul #{tr}" if tr > 1 else ""),
          f"bytes per k-step: ep = {tr}*S words"),
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
            row += bf16_round(0) + bf16_round(1)
            row += [I("uzp1 z0.h, z0.h, z1.h", "the 2S bf16 in k order: S k-step words"),
                    I(f"mova za{t}h.s[w12, 0], p0/m, z0.s", f"-> za{t}h.s[i]")]
            code += [I("mov w12, #0", f"za{t}h.s slice i"), Insn(f"K_ROWS{t}:", "label")]
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
        I("mov w12, #0", "vertical slice j = k-step j of the chunk"),
        Insn("K_STEP:", "label"),
    ]
    for t in range(tr):
        code.append(I(f"st1w {{za{t}v.s[w12, 0]}}, p0, [x13" + (", x6, lsl #2]" if t else "]"),
                      f"rows {t}*S.. of the k-step"))
    code += [
        I("add x13, x13, x14", "next k-step of the panel"),
        I("add w12, w12, #1"),
        I("cmp w12, w11"),
        I("b.lo K_STEP"),
        I("add x8, x8, x7", "next chunk"),
        I("b K_CHUNK"),
        Insn("K_DONE:", "label"),
    ]
    return code


# ---- B: lp rows of k per k-step, interleaved by the store ---------------------------------------
# x0 dst cursor, x1 src, x2 cols, x3 K, x4 ldb_bytes; x5 hp, x6 k-steps left, x7 rows of the
# partial k-step, x9.. row pointers (lp of them), x8 lp * ldb, x15 chunk column offsets.
def b_chunks(elem_bytes: int, tc: int) -> int:
    """Vectors per k-step row: hp = tc*S columns of elem_bytes, S*4 bytes per vector."""
    return max(1, tc * elem_bytes // 4)


CHUNK_OFFSETS = ("xzr", "x15", "x16", "x17")     # column offset of vector c of a row


def pack_b_body(elem_bytes: int, lp: int, tc: int) -> list[Insn]:
    if not 1 <= b_chunks(elem_bytes, tc) <= len(CHUNK_OFFSETS):
        raise ValueError(f"B packer: {tc} column tiles of {elem_bytes}-byte elements")
    letter, size = LETTER[elem_bytes], SUFFIX[elem_bytes]
    chunks = b_chunks(elem_bytes, tc)
    partial = tc * elem_bytes < 4           # the store covers part of one vector
    rows = [f"x{9 + i}" for i in range(lp)]
    load_pred = [1 + c for c in range(chunks)]                  # p1..: columns < cols
    tail_pred = {}                                              # (row, chunk) -> predicate
    free = [p for p in range(1 + chunks, 8) if p != 5]
    for i in range(1, lp):
        for c in range(chunks):
            tail_pred[i, c] = free.pop(0)
    store_pred = 5 if partial else 0
    per_vector = {4: "cntw", 2: "cnth", 1: "cntb"}[elem_bytes]
    sums = (elem_bytes, lp) == (1, 4)      # int8 B: the column sums too (COLUMN_SUMS)
    code = [I(f"cntw x14, all, mul #{tc}" if tc > 1 else "cntw x14", f"hp = {tc}*S columns"),
            I(f"{per_vector} x15", f"columns of one vector ({letter} elements)")]
    for c in range(chunks):
        off = CHUNK_OFFSETS[c]
        if c > 1:
            code.append(I(f"{per_vector} {off}, all, mul #{c}", f"chunk {c}: {c} vectors in"))
        code.append(I(f"whilelt p{load_pred[c]}.{size}, {off}, x2",
                      f"chunk {c}: its columns below cols"))
    if partial:
        code.append(I(f"whilelt p{store_pred}.{size}, xzr, x14", "the hp columns of the vector"))
    code.append(I(f"mov {rows[0]}, x1", "row k of the k-step"))
    for i in range(1, lp):
        code.append(I(f"add {rows[i]}, {rows[i - 1]}, x4", f"row k + {i}"))
    if lp > 1:
        code.append(I(f"lsl x8, x4, #{lp.bit_length() - 1}", f"{lp} rows: one k-step of B"))
    code += [I(f"lsr x6, x3, #{lp.bit_length() - 1}" if lp > 1 else "mov x6, x3",
               "whole k-steps"),
             I("cbz x6, K_TAIL")]

    def step(preds) -> list[Insn]:
        body = []
        for c in range(chunks):
            for i in range(lp):
                body.append(I(f"ld1{letter} {{z{lp * c + i}.{size}}}, p{preds(i, c)}/z, "
                              f"[{rows[i]}" + (f", #{c}, mul vl]" if c else "]"),
                              f"row k + {i}, columns of vector {c}"))
        if sums:
            body += column_sums_step()
        for c in range(chunks):
            regs = (f"{{z{lp * c}.{size}}}" if lp == 1 else
                    f"{{z{lp * c}.{size}-z{lp * c + lp - 1}.{size}}}")
            store = "st1w" if lp == 1 else f"st{lp}{letter}"
            body.append(I(f"{store} {regs}, p{store_pred}, [x0" +
                          (f", #{c * lp}, mul vl]" if c else "]"),
                          "the k-step, each column's lp values side by side"
                          if lp > 1 else "the k-step's columns"))
        body.append(I(f"addvl x0, x0, #{tc}", f"next k-step of the panel ({tc}*S*4 bytes)"))
        return body

    code.append(Insn("K_STEP:", "label"))
    code += step(lambda i, c: load_pred[c])
    for r in rows:
        code.append(I(f"add {r}, {r}, x8" if lp > 1 else f"add {r}, {r}, x4"))
    code += [I("subs x6, x6, #1"), I("b.ne K_STEP"), Insn("K_TAIL:", "label")]
    if lp > 1:
        code += [I(f"and x7, x3, #{lp - 1}", "rows of a last partial k-step"),
                 I("cbz x7, K_DONE")]
        for i in range(1, lp):
            code += [I(f"cmp x7, #{i}"), I(f"csel x6, x2, xzr, hi",
                                           f"row k + {i}: cols if it exists, else none")]
            for c in range(chunks):
                off = CHUNK_OFFSETS[c]
                code.append(I(f"whilelt p{tail_pred[i, c]}.{size}, {off}, x6"))
        code += step(lambda i, c: load_pred[c] if i == 0 else tail_pred[i, c])
    code.append(Insn("K_DONE:", "label"))
    if sums:
        code += [I("cbz x5, K_SUMS_DONE", "col_sums NULL: not wanted"),
                 I("add x13, x2, #3"), I("lsr x13, x13, #2", "ceil(cols / 4) groups of 4 sums"),
                 I("whilelt p6.s, xzr, x13"),
                 I("st4w {z16.s-z19.s}, p6, [x5]", "sums of columns 4i + 0..3 interleaved: "
                   "column order"),
                 Insn("K_SUMS_DONE:", "label")]
    return code


# COLUMN_SUMS: the int8 B packers also write sum_k B[k][c] of the panel's columns (int32, the
# column sums ts_packed_b keeps for the zero points), from the rows they load: SADDLB / SADDLT
# add rows k, k+1 (and k+2, k+3) into int16 per even / odd column, ADD joins the two pairs
# (|sum| <= 512), SADDWB / SADDWT widen into four int32 accumulators z16-z19 = columns 4i,
# 4i + 1, 4i + 2, 4i + 3 (even .h lanes of the even-column sums are columns 4i, odd ones
# 4i + 2; of the odd-column sums 4i + 1, 4i + 3), so that ST4W {z16-z19} stores them in column
# order. The accumulators start at zero: SMSTART SM zeroes every Z register (Arm DDI0487,
# "Changes to PSTATE.SM"). Columns past cols load as zero and sum to zero; the store writes
# ceil(cols / 4) * 4 sums (ts_pack.c sizes the sums in whole groups of 4).
def column_sums_step() -> list[Insn]:
    return [I("saddlb z4.h, z0.b, z1.b", "rows k + k+1, even columns"),
            I("saddlt z5.h, z0.b, z1.b", "odd columns"),
            I("saddlb z6.h, z2.b, z3.b", "rows k+2 + k+3"),
            I("saddlt z7.h, z2.b, z3.b"),
            I("add z4.h, z4.h, z6.h", "even columns: the four rows"),
            I("add z5.h, z5.h, z7.h", "odd columns"),
            I("saddwb z16.s, z16.s, z4.h", "columns 4i"),
            I("saddwb z17.s, z17.s, z5.h", "columns 4i + 1"),
            I("saddwt z18.s, z18.s, z4.h", "columns 4i + 2"),
            I("saddwt z19.s, z19.s, z5.h", "columns 4i + 3")]


def pack_b_bf16_body(tc: int) -> list[Insn]:
    """B panel of bf16 pairs from fp32 B: per k-step rows k, k+1 and per vector c of S columns,
    both rounded (bf16_round) and TRN1 .h pairs column j's two values in word j."""
    if not 1 <= tc <= len(CHUNK_OFFSETS):
        raise ValueError(f"bf16 B packer: {tc} column tiles")
    code = bf16_constants() + [I("cntw x15", "S: columns of one vector")]
    for c in range(tc):
        if c > 1:
            code.append(I(f"cntw {CHUNK_OFFSETS[c]}, all, mul #{c}"))
        code.append(I(f"whilelt p{1 + c}.s, {CHUNK_OFFSETS[c]}, x2",
                      f"columns {c}*S.. below cols"))
    code += [I("mov x9, x1", "row k"), I("add x10, x9, x4", "row k + 1"),
             I("lsl x8, x4, #1", "2 rows: one k-step of B"),
             I("lsr x6, x3, #1", "whole k-steps"), I("cbz x6, K_TAIL")]

    def step(second):
        body = []
        for c in range(tc):
            at = f", #{c}, mul vl]" if c else "]"
            body += [I(f"ld1w {{z0.s}}, p{1 + c}/z, [x9{at}", f"row k, columns {c}*S.."),
                     I(f"ld1w {{z1.s}}, p{second(c)}/z, [x10{at}", "row k + 1")]
            body += bf16_round(0) + bf16_round(1)
            body += [I("trn1 z0.h, z0.h, z1.h", "column j: (k, k + 1) in word j"),
                     I(f"st1w {{z0.s}}, p0, [x0{at}", f"the k-step's columns {c}*S..")]
        return body + [I(f"addvl x0, x0, #{tc}", f"next k-step of the panel ({tc}*S words)")]

    code += [Insn("K_STEP:", "label")] + step(lambda c: 1 + c)
    code += [I("add x9, x9, x8"), I("add x10, x10, x8"), I("subs x6, x6, #1"),
             I("b.ne K_STEP"), Insn("K_TAIL:", "label"),
             I("tbz x3, #0, K_DONE", "K even: no partial k-step"),
             I("whilelt p7.s, xzr, xzr", "row k + 1 does not exist: none of it read, zeros")]
    code += step(lambda c: 7) + [Insn("K_DONE:", "label")]
    return code


# ---- rendering ---------------------------------------------------------------------------------
def _render(symbol: str, summary: list[str], body: list[Insn], uses_za: bool, inst_mode: str,
            env: jinja2.Environment | None, consts=()) -> str:
    labels = sorted({name for insn in body + lazy_save_commit() for name in
                     LABEL_RE.findall(insn.text)} | {"K_BAD_TPIDR2"})
    env = env or environment()
    env.filters["sme_asm"] = sme_asm_line
    text = env.get_template("pack_sme.S.j2").render(
        symbol=symbol, summary=summary, body=body, uses_za=uses_za, labels=labels,
        consts=[value for _, value in consts],
        save=save_d8_d15(), restore=restore_d8_d15(),
        lazy_save=lazy_save_commit() if uses_za else [],
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
    text = _render(symbol, summary, pack_a_body(tr, convert), True, inst_mode, env,
                   BF16_CONSTS if convert else ())
    kinds = ["BF16"] if convert else sorted({k for kinds in COPY_KINDS.values() for k in kinds})
    return SmePacker(symbol, f"{symbol}.S", text,
                     {"symbol": symbol, "file": f"{symbol}.S", "role": "a", "tr": tr,
                      "kinds": kinds})


def emit_pack_b_bf16(prefix: str, tc: int, inst_mode: str = "auto",
                     env: jinja2.Environment | None = None) -> SmePacker:
    symbol = b_bf16_symbol(prefix, tc)
    summary = [
        f"B panel of hp = {tc}*S columns of bf16 pairs (lp = 2) for the SME kernels (S =",
        "SVL/32) from row-major fp32 B, rounded to bf16 (RNE, integer: bit for bit ts_pack.c",
        "f32_to_bf16): per k-step rows k, k + 1 rounded, column j's two values in word j.",
        f"  void {symbol}(void *dst, const void *src, size_t cols,",
        "                 size_t K, size_t ldb_bytes, int32_t *col_sums);",
        "  x0 dst: ceil(K/2) k-steps of hp words; x1 src: fp32 B at row 0, the panel's first",
        "  column; x2 cols (<= hp; columns past it are zero); x3 K rows (k past K is zero);",
        "  x4 ldb_bytes: row stride. Reads exactly K x cols fp32, writes exactly the panel.",
        "  x5 col_sums: unused (no column sums for this type).",
    ]
    text = _render(symbol, summary, pack_b_bf16_body(tc), False, inst_mode, env, BF16_CONSTS)
    return SmePacker(symbol, f"{symbol}.S", text,
                     {"symbol": symbol, "file": f"{symbol}.S", "role": "b", "elem_bytes": 2,
                      "lp": 2, "tc": tc, "kinds": ["BF16"], "col_sums": False})


def emit_pack_b(prefix: str, elem_bytes: int, lp: int, tc: int, inst_mode: str = "auto",
                env: jinja2.Environment | None = None) -> SmePacker:
    if (elem_bytes, lp) not in COPY_KINDS:
        raise ValueError(f"no streaming B packer for {elem_bytes}-byte elements, lp {lp}")
    symbol = b_symbol(prefix, elem_bytes, lp, tc)
    summary = [
        f"B panel of hp = {tc}*S columns for the SME kernels (S = SVL/32) from row-major B of",
        f"{elem_bytes}-byte elements, lp = {lp}: per k-step {lp} rows of B "
        + ("stored interleaved (ST{}{}).".format(lp, LETTER[elem_bytes]) if lp > 1 else "copied."),
        f"  void {symbol}(void *dst, const void *src, size_t cols,",
        "                 size_t K, size_t ldb_bytes, int32_t *col_sums);",
        "  x0 dst: ceil(K/lp) k-steps of hp columns x lp elements (column c's lp k-values",
        "  contiguous); x1 src: B at row 0, the panel's first column; x2 cols (<= hp; columns",
        "  past it are zero); x3 K rows (k-values past K are zero); x4 ldb_bytes: row stride.",
        "  Reads exactly K x cols elements, writes exactly the panel.",
    ]
    if (elem_bytes, lp) == (1, 4):
        summary += ["  x5 col_sums: NULL, or int32 sum over k of each column, ceil(cols/4)*4 of",
                    "  them written (columns past cols: 0)."]
    else:
        summary += ["  x5 col_sums: unused (no column sums for this type)."]
    text = _render(symbol, summary, pack_b_body(elem_bytes, lp, tc), False, inst_mode, env)
    return SmePacker(symbol, f"{symbol}.S", text,
                     {"symbol": symbol, "file": f"{symbol}.S", "role": "b",
                      "elem_bytes": elem_bytes, "lp": lp, "tc": tc,
                      "kinds": list(COPY_KINDS[elem_bytes, lp]),
                      "col_sums": (elem_bytes, lp) == (1, 4)})


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
