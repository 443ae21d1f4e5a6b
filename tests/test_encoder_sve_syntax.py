"""SVE/SME syntax: accepted spellings give GNU as's word; malformed or non-existent forms are
rejected with their problem named (and GNU as rejects them too); feature_of."""
from __future__ import annotations

import re

import pytest

from encoder import EncodeError, encode, feature_of
from encoder import rewrite_text
from encoder.toolchain import assemble_words, rejected_lines

MARCH_SME = "armv9-a+sme"

SPELLINGS = [
    "FMOPA ZA3.S, P7/M, P6/M, Z31.S, Z30.S",
    "fmopa  za1.s,p0/m ,p1/m,z2.s , z3.s",
    "bfmopa za2.s, p1/m, p2/m, z3.h, z4.h",
    "fmopa za3.s, p1/m, p2/m, z3.h, z4.h",
    "usmopa za1.s, p1/m, p2/m, z3.b, z4.b  // uint8 x int8",
    "ld1w z0.s, p0/z, [x0, x1, lsl #2]",          # GNU as takes a lone register without braces
    "ld1w {z0.s}, p0/z, [x0]",                     # = [x0, #0, mul vl]
    "ld1w {z0.s}, p0/z, [x0, #0, mul vl]",
    "ld1w {z0.s}, p0/z, [x0, #-8, MUL VL]",
    "ld1b {z31.b}, p7/z, [sp, x30]",
    "st1w {z1.s}, p2, [x3]",
    "ld1w {za0h.s[w12, #0]}, p0/z, [x0, x1, lsl #2]",
    "ld1w {za1v.s[w13,3]}, p0/z, [x0]",            # = [x0, xzr, lsl #2]
    "ld1w { za0h.s [ w12 , 0 ] } , p0/z, [x0, x1, lsl 2]",
    "st1w {za3h.s[w15, 3]}, p7, [sp]",
    "ld1b {za0v.b[w14, 15]}, p1/z, [x2, x3]",
    "st1d {za7h.d[w12, 1]}, p1, [x2, x3, lsl #3]",
    "zero {za0.s, za1.s}",
    "zero {za1.s, za0.s}",
    "zero {za0.s, za0.s}",
    "zero {}",
    "zero {za}",
    "ZERO {ZA0.B}",
    "zero {za0.h, za1.d}",
    "zero { za7.d }",
    "smstart", "smstart SM", "SMSTOP za", "smstop",
    "mova z0.s, p0/m, za0h.s[w12, 0]",
    "mov z0.s, p0/m, za0h.s[w12, 0]",
    "mova za3v.s[w15, 3], p7/m, z31.s",
    "mov za1v.h[w13, 7], p2/m, z4.h",
    "ptrue p0.s",
    "ptrue p0.b, vl3",
    "ptrue p15.d, #14",
    "ptrue p1.h, MUL4",
    "whilelt p0.s, xzr, x1",
    "whilelt p3.b, w4, wzr",
    "cntw x0",
    "cntw x0, all",
    "cntd x1, pow2, mul #16",
    "cnth x0, #29",
    "cntb xzr, vl256, mul #1",
    "rdsvl x0, #1",
    "rdsvl x0, 1",                                 # GNU as: '#' is optional
    "rdvl x9, #-32",
    "addvl sp, sp, #-1",
    "addsvl x0, sp, #31",
    "addspl sp, x1, #-32",
    "addpl x0, x0, #2",
    "fadd z0.s, z1.s, z2.s",
    "FMAX Z3.S, P1/M, Z3.S, Z4.S",
    "fmin z31.d, p7/m, z31.d, z0.d",
    "ld1rw {z20.s}, p0/z, [x5, #56]",
    "ld1rw z1.d, p2/z, [sp]",                      # = [sp, #0]
    "ld1rw {z1.s}, p2/z, [x0, #252]",
]


@pytest.mark.parametrize("text", SPELLINGS)
def test_spelling_gives_gnu_as_word(text):
    assert encode(text) == assemble_words([text.split("//")[0]], MARCH_SME)[0]


# (input, phrase the message must contain); GNU as 2.40 rejects every one of them.
MALFORMED = [
    ("fmopa za4.s, p0/m, p1/m, z0.s, z1.s", "ZA tile za4.s out of range for fmopa (za0.s to za3.s)"),
    ("fmopa za0.d, p0/m, p1/m, z0.s, z1.s", "operand shapes not allowed for fmopa: za.d"),
    ("smopa za0.d, p0/m, p1/m, z0.b, z1.b", "operand shapes not allowed for smopa: za.d"),
    ("fmopa za0.s, p8/m, p1/m, z0.s, z1.s", "row predicate p8 out of range for fmopa (p0 to p7)"),
    ("fmopa za0.s, p0/m, p15/m, z0.s, z1.s", "column predicate p15 out of range"),
    ("fmopa za0.s, p0/m, p1/z, z0.s, z1.s", "operand shapes not allowed for fmopa"),
    ("fmopa za0.s, p0/m, p1/m, z0.s, z1.h", "operand shapes not allowed for fmopa"),
    ("fmopa za0.s, p0/m, p1/m, z32.s, z1.s", "register z32 out of range (z0-z31)"),
    ("fmopa za0.s, p0/m, p1/m, z0.s", "wrong operand count for fmopa: expected 5, got 4"),
    ("smopa za0.d, p0/m, p1/m, z0.h, z1.h", "need FEAT_SME_I16I64 (GNU as +sme-i64)"),
    ("umopa za0.s, p0/m, p1/m, z0.h, z1.h", "need FEAT_SME_I16I64"),
    ("fmopa za0.d, p0/m, p1/m, z0.d, z1.d", "need FEAT_SME_F64F64 (GNU as +sme-f64)"),
    ("bfmopa za0.s, p0/m, p1/m, z0.s, z1.s", "operand shapes not allowed for bfmopa"),
    ("smstart zm", "malformed operand 'zm'"),
    ("smstart sm, za", "wrong operand count for smstart: expected 0 or 1, got 2"),
    ("smstop x0", "operand shapes not allowed for smstop"),
    ("zero {za4.s}", "ZA tile za4.s out of range (za0.s-za3.s)"),
    ("zero {za2.h}", "ZA tile za2.h out of range (za0.h-za1.h)"),
    ("zero {za1.b}", "ZA tile za1.b out of range"),
    ("zero {za8.d}", "ZA tile za8.d out of range (za0.d-za7.d)"),
    ("zero {za0.q}", "malformed ZA tile 'za0.q'"),
    ("zero {za0.s-za1.s}", "malformed ZA tile 'za0.s-za1.s'"),
    ("zero {za0.s, z1.s}", "malformed operand"),
    ("zero za0.s", "operand shapes not allowed for zero"),
    ("ld1w {z0.s}, p8/z, [x0, x1, lsl #2]", "governing predicate p8 out of range for ld1w (p0 to p7)"),
    ("ld1w {z0.s}, p0/m, [x0, x1, lsl #2]", "operand shapes not allowed for ld1w"),
    ("ld1w {z0.s}, p0/z, [x0, x1, lsl #1]", "operand shapes not allowed for ld1w"),
    ("ld1w {z0.s}, p0/z, [x0, x1]", "operand shapes not allowed for ld1w"),
    ("ld1w {z0.s}, p0/z, [x0, xzr, lsl #2]", "index register xzr out of range for ld1w (x0 to x30)"),
    ("ld1w {z0.s}, p0/z, [x0, #8, mul vl]", "immediate #8 out of range for ld1w (#-8 to #7)"),
    ("ld1b {z0.b}, p0/z, [x0, #-9, mul vl]", "immediate #-9 out of range for ld1b"),
    ("ld1w {z0.s}, p0/z, [xzr, x1, lsl #2]", "base register must be x0-x30 or sp"),
    ("ld1w {z0.s}, p0/z, [x0, sp, lsl #2]", "index register must be x0-x30 or xzr"),
    ("ld1w {z0.h}, p0/z, [x0, x1, lsl #2]", "operand shapes not allowed for ld1w"),
    ("ld1h {z0.b}, p0/z, [x0, x1, lsl #1]", "operand shapes not allowed for ld1h"),
    ("ld1w {z0.s, z1.s}, p0/z, [x0]", "operand shapes not allowed for ld1w: {z.s*2}"),
    ("st2h {z0.h, z2.h}, p0, [x0]", "malformed operand '{z0.h, z2.h}'"),
    ("st4b {z0.b-z2.b}, p0, [x0]", "malformed operand '{z0.b-z2.b}'"),
    ("st2h {z0.h-z1.h}, p0, [x0, #3, mul vl]", "immediate"),
    ("st4b {z0.b-z3.b}, p0/z, [x0]", "operand shapes not allowed for st4b"),
    ("ld2w {z0.s-z1.s}, p0/z, [x0, #3, mul vl]", "immediate #3 must be a multiple of 2 for ld2w"),
    ("ld2w {z0.s-z1.s}, p0/z, [x0, #16, mul vl]", "immediate #16 out of range for ld2w"),
    ("ld2w {z0.s-z1.s}, p0/z, [x0, xzr, lsl #2]", "index register xzr out of range for ld2w"),
    ("ld2w {z0.s-z1.s}, p0/z, [x0, x1, lsl #1]", "operand shapes not allowed for ld2w"),
    ("ld2w {z0.s-z1.s}, p0/m, [x0]", "operand shapes not allowed for ld2w"),
    ("ld2w {z0.h-z1.h}, p0/z, [x0]", "operand shapes not allowed for ld2w"),
    ("ld2w {z0.s, z2.s}, p0/z, [x0]", "malformed operand '{z0.s, z2.s}'"),
    ("ld2w {z0.s-z3.s}, p0/z, [x0]", "operand shapes not allowed for ld2w"),
    ("st1w {z0.s}, p0/z, [x0, x1, lsl #2]", "operand shapes not allowed for st1w"),
    ("ld1w {za4h.s[w12, 0]}, p0/z, [x0, x1, lsl #2]", "ZA tile za4.s out of range for ld1w"),
    ("ld1w {za0h.s[w11, 0]}, p0/z, [x0, x1, lsl #2]",
     "slice index register w11 out of range for ld1w (w12 to w15)"),
    ("ld1w {za0h.s[w16, 0]}, p0/z, [x0, x1, lsl #2]", "slice index register w16 out of range"),
    ("ld1w {za0h.s[w12, 4]}, p0/z, [x0, x1, lsl #2]", "slice offset 4 out of range for ld1w (0 to 3)"),
    ("ld1b {za0h.b[w12, 16]}, p0/z, [x0, x1]", "slice offset 16 out of range for ld1b (0 to 15)"),
    ("ld1w {za0h.s[x12, 0]}, p0/z, [x0, x1, lsl #2]", "malformed operand"),
    ("ld1w {za0h.s[w12, 0]}, p0/z, [x0, #1, mul vl]", "operand shapes not allowed for ld1w"),
    ("ld1w {za0h.s[w12, 0]}, p8/z, [x0, x1, lsl #2]", "governing predicate p8 out of range"),
    ("st1w {za0h.s[w12, 0]}, p0/z, [x0, x1, lsl #2]", "operand shapes not allowed for st1w"),
    ("mova z0.s, p0/m, za0h.h[w12, 0]", "operand shapes not allowed for mova"),
    ("mova za0h.s[w12, 0], p0/z, z0.s", "operand shapes not allowed for mova"),
    ("mov za0h.s[w12, 0], p8/m, z0.s", "governing predicate p8 out of range for mov"),
    ("mov z0.s, p0/m, za0h.s[w12]", "malformed operand"),
    ("ptrue p16.s", "register p16 out of range (p0-p15)"),
    ("ptrue p0.s, vl512", "malformed operand 'vl512'"),
    ("ptrue p0.s, #32", "pattern 32 out of range for ptrue (0 to 31)"),
    ("ptrue p0/z", "operand shapes not allowed for ptrue"),
    ("whilelt p0.s, x0, w1", "operand shapes not allowed for whilelt"),
    ("whilelt p0.s, sp, x1", "operand shapes not allowed for whilelt"),
    ("cntw x0, all, mul #17", "multiplier mul #17 out of range for cntw (mul #1 to mul #16)"),
    ("cntw x0, all, mul #0", "multiplier mul #0 out of range"),
    ("cntw x0, mul #2", "operand shapes not allowed for cntw"),
    ("cntw w0", "operand shapes not allowed for cntw"),
    ("rdsvl x0, #32", "immediate #32 out of range for rdsvl (#-32 to #31)"),
    ("rdsvl sp, #1", "operand shapes not allowed for rdsvl"),
    ("fmax z3.s, p1/m, z4.s, z5.s", "operand 3 of fmax must be z3.s"),
    ("fmin z3.s, p1/m, z3.h, z5.s", "operand shapes not allowed for fmin"),
    ("fmax z3.s, p8/m, z3.s, z5.s", "governing predicate p8 out of range for fmax"),
    ("fadd z0.b, z1.b, z2.b", "operand shapes not allowed for fadd"),
    ("ld1rw {z0.s}, p0/z, [x0, #2]", "immediate #2 must be a multiple of 4 for ld1rw"),
    ("ld1rw {z0.s}, p0/z, [x0, #256]", "immediate #256 out of range for ld1rw (#0 to #252)"),
    ("ld1rw {z0.h}, p0/z, [x0]", "operand shapes not allowed for ld1rw"),
    ("ld1w {z0.s}, p0/z, [x0, #4]", "operand shapes not allowed for ld1w"),
    ("addvl x0, xzr, #1", "operand shapes not allowed for addvl"),
    ("addsvl sp, sp, #-33", "immediate #-33 out of range for addsvl"),
    ("x31 frobnicate", "unknown mnemonic 'x31'"),
]


@pytest.mark.parametrize("text,phrase", MALFORMED, ids=[t for t, _ in MALFORMED])
def test_malformed_input_is_rejected_with_its_problem_named(text, phrase):
    with pytest.raises(EncodeError) as raised:
        encode(text)
    assert phrase in str(raised.value)
    with pytest.raises(EncodeError):
        feature_of(text)


def test_gnu_as_rejects_every_malformed_instruction_too():
    lines = [text for text, _ in MALFORMED]
    assert len(lines) >= 60
    assert rejected_lines(lines, MARCH_SME) == set(range(1, len(lines) + 1))


# Real instructions the encoder does not support: (text, phrase, -march GNU as accepts it with).
UNSUPPORTED = [
    ("mova z0.q, p0/m, za0h.q[w12, 0]", "(.q) tile slices are not supported", MARCH_SME),
    ("smopa za7.d, p0/m, p1/m, z0.h, z1.h", "need FEAT_SME_I16I64", MARCH_SME + "+sme-i64"),
    ("fmopa za7.d, p0/m, p1/m, z0.d, z1.d", "need FEAT_SME_F64F64", MARCH_SME + "+sme-f64"),
]


@pytest.mark.parametrize("text,phrase,march", UNSUPPORTED, ids=[t for t, _, _ in UNSUPPORTED])
def test_unsupported_real_forms_are_refused_with_the_reason(text, phrase, march):
    assert rejected_lines([text], march) == set()
    with pytest.raises(EncodeError, match=re.escape(phrase)):
        encode(text)


# GNU as 2.40 is laxer here than the Arm ARM's syntax; the encoder keeps to the manual.
STRICTER_THAN_GNU_AS = [
    "ld1w {za0h.s[w12, 0]}, p0/z, [x0, x1]",          # as: taken as [x0, x1, lsl #2]
    "ld1w {za0h.s[w12, 0]}, p0/z, [x0, x1, lsl #0]",  # as: same
    "ld1w {z0.s}, p0/z, [x0, #0]",                     # as: taken as [x0]
]


@pytest.mark.parametrize("text", STRICTER_THAN_GNU_AS)
def test_laxer_gnu_as_spellings_are_refused(text):
    assert rejected_lines([text], MARCH_SME) == set()
    with pytest.raises(EncodeError, match="operand shapes not allowed|immediate offset is written"):
        encode(text)


@pytest.mark.parametrize("text,feature", [
    ("fmopa za0.s, p0/m, p1/m, z0.s, z1.s", "sme"),
    ("smstart", "sme"),
    ("zero {za}", "sme"),
    ("ld1w {za0h.s[w12, 0]}, p0/z, [x0, x1, lsl #2]", "sme"),
    ("mov z0.s, p0/m, za0h.s[w12, 0]", "sme"),
    ("rdsvl x0, #1", "sme"),
    ("addsvl x0, x0, #1", "sme"),
    ("ld1w {z0.s}, p0/z, [x0, x1, lsl #2]", "sve"),
    ("st1w {z0.s}, p0, [x0]", "sve"),
    ("ptrue p0.s", "sve"),
    ("whilelt p0.s, x0, x1", "sve"),
    ("cntw x0", "sve"),
    ("addvl sp, sp, #-1", "sve"),
])
def test_feature_of(text, feature):
    assert feature_of(text) == feature


def test_mov_is_known_only_with_za_slice_operands():
    from encoder.encoding import is_known_instruction
    assert is_known_instruction("mov z0.s, p0/m, za0h.s[w12, 0]")
    assert is_known_instruction("MOV ZA1V.S[W13, 0], P0/M, Z0.S")
    for other in ("mov x0, x1", "mov v0.16b, v1.16b", "mov z0.s, p0/m, z1.s", "mov w0, #1",
                  "mov z0.d, z1.d"):
        assert not is_known_instruction(other), other


def test_fadd_fmax_fmin_are_known_only_with_z_operands():
    """The NEON and scalar FP spellings stay the assembler's (the NEON fp32 epilogue uses them)."""
    from encoder.encoding import is_known_instruction
    for sve in ("fadd z0.s, z1.s, z2.s", "fmax z0.s, p0/m, z0.s, z1.s", "FMIN Z0.D, P0/M, Z0.D, Z1.D"):
        assert is_known_instruction(sve), sve
    for other in ("fadd v0.4s, v1.4s, v2.4s", "fmax v0.4s, v0.4s, v1.4s", "fmin s0, s1, s2",
                  "fadd d0, d1, d2"):
        assert not is_known_instruction(other), other
    text = "        fmax v0.4s, v0.4s, v1.4s\n        fmax z0.s, p0/m, z0.s, z1.s\n"
    rewritten = rewrite_text(text, ["sve"])
    assert rewritten.startswith("        fmax v0.4s, v0.4s, v1.4s\n        .inst 0x")
