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
      the rows past `rows` stay zero (ZERO {ZA} per chunk).
  B, `<prefix>sme_pack_b_<e>x<lp>_<tc>vl`: a B panel of hp = tc*S columns, B row-major (lp rows
      of k per k-step, columns contiguous). Per k-step: lp rows loaded (LD1B/H/W under a
      WHILELT column predicate: exactly the `cols` columns are read, the rest are zero) and
      stored interleaved by one ST<lp> (ST2H: column c's two k-values side by side; ST4B: four),
      which is the panel's "each column's lp k-values contiguous"; lp = 1 is a copy (ST1W).
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


def a_symbol(prefix: str, tr: int) -> str:
    return f"{prefix}sme_pack_a_{tr}vl"


def b_symbol(prefix: str, elem_bytes: int, lp: int, tc: int) -> str:
    return f"{prefix}sme_pack_b_{elem_bytes}x{lp}_{tc}vl"


# ---- A: rows x k-step words, transposed through ZA --------------------------------------------
# x0 dst, x1 src, x2 rows, x3 k_bytes, x4 lda_bytes; x6 S, x7 SVL/8, x8 chunk byte offset,
# x9 row pointer, x10 rows left, x11 words of the chunk, x13 dst cursor, x14 bytes per k-step
# (ep words), x15 words in all, x16 S * lda, w12 slice index.
def pack_a_body(tr: int) -> list[Insn]:
    if tr not in (1, 2):
        raise ValueError(f"A packer for {tr} row tiles: 1 or 2 (the SME kernels' tr)")
    code = [
        I("cntw x6", "S = SVL/32: rows of one ZA.S tile, words of one vector"),
        I("cntb x7", "SVL/8: bytes of one vector (a chunk of S words per row)"),
        I("add x15, x3, #3"), I("lsr x15, x15, #2", "k-steps (words per row) in all"),
        I("mul x16, x6, x4", "S rows of A in bytes"),
        I("lsl x14, x7, #1" if tr == 2 else "mov x14, x7",
          f"bytes per k-step: ep = {tr}*S words"),
        I("mov x8, #0", "chunk: bytes k_bytes[x8 ..] of every row"),
        I("mov x13, x0", "k-step 0 of the panel"),
        Insn("K_CHUNK:", "label"),
        I("cmp x8, x3"), I("b.hs K_DONE", "every k-step written"),
        I("whilelt p1.b, x8, x3", "the chunk's bytes inside the row"),
        I("zero {za}", "rows past `rows` stay zero"),
    ]
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
        code += [I(f"mov w12, #{t}", f"ZA0.B slice 4i + {t} = za{t}h.s slice i"),
                 Insn(f"K_ROWS{t}:", "label"),
                 I("ld1b {za0h.b[w12, 0]}, p1/z, [x9]", f"one row's chunk -> za{t}h.s[i]"),
                 I("add x9, x9, x4", "next row"),
                 I("add w12, w12, #4"),
                 I("subs x10, x10, #1"),
                 I(f"b.ne K_ROWS{t}"),
                 Insn(f"{done}:", "label")]
    code += [
        I("lsr x11, x8, #2", "words before the chunk"),
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
    code = [I(f"cntw x5, all, mul #{tc}" if tc > 1 else "cntw x5", f"hp = {tc}*S columns"),
            I(f"{per_vector} x15", f"columns of one vector ({letter} elements)")]
    for c in range(chunks):
        off = CHUNK_OFFSETS[c]
        if c > 1:
            code.append(I(f"{per_vector} {off}, all, mul #{c}", f"chunk {c}: {c} vectors in"))
        code.append(I(f"whilelt p{load_pred[c]}.{size}, {off}, x2",
                      f"chunk {c}: its columns below cols"))
    if partial:
        code.append(I(f"whilelt p{store_pred}.{size}, xzr, x5", "the hp columns of the vector"))
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
    return code


# ---- rendering ---------------------------------------------------------------------------------
def _render(symbol: str, summary: list[str], body: list[Insn], uses_za: bool, inst_mode: str,
            env: jinja2.Environment | None) -> str:
    labels = sorted({name for insn in body + lazy_save_commit() for name in
                     LABEL_RE.findall(insn.text)} | {"K_BAD_TPIDR2"})
    env = env or environment()
    env.filters["sme_asm"] = sme_asm_line
    text = env.get_template("pack_sme.S.j2").render(
        symbol=symbol, summary=summary, body=body, uses_za=uses_za, labels=labels,
        save=save_d8_d15(), restore=restore_d8_d15(),
        lazy_save=lazy_save_commit() if uses_za else [],
        arch_directive=f"{ARCH_NAMES['v92']}+sme" if inst_mode == "never" else None)
    features = inst_features(inst_mode)
    if features:
        text = rewrite_text(text, features, filename=f"{symbol}.S")
    return text


def emit_pack_a(prefix: str, tr: int, inst_mode: str = "auto",
                env: jinja2.Environment | None = None) -> SmePacker:
    symbol = a_symbol(prefix, tr)
    summary = [
        f"A panel of ep = {tr}*S rows for the SME kernels (S = SVL/32), k-steps of one 32-bit",
        "word per row (fp32 x 1, fp16 x 2, int8 x 4): the rows x words matrix transposed",
        "through ZA.",
        f"  void {symbol}(void *dst, const void *src, size_t rows,",
        "                 size_t k_bytes, size_t lda_bytes);",
        "  x0 dst: ceil(k_bytes/4) k-steps of ep words (row r's word at 4r); x1 src: row 0 of A",
        "  at the panel's first k; x2 rows (<= ep; rows past it are zero); x3 k_bytes: bytes of",
        "  each row read (the last word's bytes past it are zero); x4 lda_bytes: row stride.",
        "  Reads exactly rows x k_bytes, writes exactly the panel's k-steps.",
    ]
    text = _render(symbol, summary, pack_a_body(tr), True, inst_mode, env)
    return SmePacker(symbol, f"{symbol}.S", text,
                     {"symbol": symbol, "file": f"{symbol}.S", "role": "a", "tr": tr,
                      "kinds": sorted({k for kinds in COPY_KINDS.values() for k in kinds})})


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
        "                 size_t K, size_t ldb_bytes);",
        "  x0 dst: ceil(K/lp) k-steps of hp columns x lp elements (column c's lp k-values",
        "  contiguous); x1 src: B at row 0, the panel's first column; x2 cols (<= hp; columns",
        "  past it are zero); x3 K rows (k-values past K are zero); x4 ldb_bytes: row stride.",
        "  Reads exactly K x cols elements, writes exactly the panel.",
    ]
    text = _render(symbol, summary, pack_b_body(elem_bytes, lp, tc), False, inst_mode, env)
    return SmePacker(symbol, f"{symbol}.S", text,
                     {"symbol": symbol, "file": f"{symbol}.S", "role": "b",
                      "elem_bytes": elem_bytes, "lp": lp, "tc": tc,
                      "kinds": list(COPY_KINDS[elem_bytes, lp])})


def emit_sme_packers(kernels: list[dict], prefix: str, inst_mode: str = "auto",
                     env: jinja2.Environment | None = None) -> list[SmePacker]:
    """The packers the raw SME kernels (manifest entries) need: one A packer per row-tile
    count tr, one B packer per (element bytes, lp, tc) of a copy kind."""
    from .isa import SME_INSTRUCTIONS, TYPE_BYTES
    trs, bs = set(), set()
    for k in kernels:
        if k["epilogue"] != "raw":
            continue
        inst = SME_INSTRUCTIONS[k["instruction"]]
        trs.add(int(k["tr"]))
        shape = (TYPE_BYTES[inst.b_type], int(k["lp"]))
        if shape in COPY_KINDS:
            bs.add(shape + (int(k["tc"]),))
    return ([emit_pack_a(prefix, tr, inst_mode, env) for tr in sorted(trs)]
            + [emit_pack_b(prefix, e, lp, tc, inst_mode, env) for e, lp, tc in sorted(bs)])
