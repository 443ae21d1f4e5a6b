"""Instruction text -> 32-bit word, through the tables of forms.py (NEON) and sve_forms.py
(SVE / SME, encoded by sve_encoding.py)."""
from __future__ import annotations

import re

from . import sve_encoding
from .errors import EncodeError
from .forms import FORM_BY_SHAPE, FORMS_BY_MNEMONIC, INDEX_SCHEMES, Form
from .operands import Instruction, Operand, parse_operand, split_mnemonic, split_operands
from .sve_forms import SHARED_MNEMONICS

# Register fields of every supported form (Arm ARM C4.1 "A64 instruction set encoding").
RD_SHIFT, RN_SHIFT, RM_SHIFT = 0, 5, 16
REGISTER_SHIFTS = (RD_SHIFT, RN_SHIFT, RM_SHIFT)


def is_known_mnemonic(mnemonic: str) -> bool:
    mnemonic = mnemonic.lower()
    return mnemonic in FORMS_BY_MNEMONIC or mnemonic in sve_encoding.FORMS_BY_MNEMONIC


def is_known_instruction(text: str) -> bool:
    """Whether the encoder handles this instruction: a known mnemonic, and for a mnemonic shared
    with instructions outside the tables (mov), operands of the encoder's kind."""
    try:
        mnemonic, operand_text = split_mnemonic(text)
    except EncodeError:
        return False
    if not is_known_mnemonic(mnemonic):
        return False
    shared = SHARED_MNEMONICS.get(mnemonic)
    return shared is None or re.search(shared, operand_text, re.I) is not None


def has_form(text: str) -> bool:
    """Whether a table form matches the instruction's mnemonic and operand shapes (its values
    may still be out of range): objdump text of other forms of a known mnemonic is not ours."""
    if not is_known_instruction(text):
        return False
    try:
        instruction = parse_known(text)
        if isinstance(instruction, sve_encoding.SveInstruction):
            sve_encoding.select_form(instruction)
        else:
            _select_form(instruction)
    except EncodeError:
        return False
    return True


def _forms_of(mnemonic: str) -> tuple[Form, ...]:
    forms = FORMS_BY_MNEMONIC.get(mnemonic)
    if forms is None:
        raise EncodeError(f"unknown mnemonic '{mnemonic}'")
    return forms


def _describe(form: Form) -> str:
    return ", ".join(form.signature)


def _select_form(instruction: Instruction) -> Form:
    """The form whose operand shapes match; errors name a wrong count or arrangement."""
    signature = tuple(op.signature for op in instruction.operands)
    form = FORM_BY_SHAPE.get((instruction.mnemonic, signature))
    if form is not None:
        return form
    forms = _forms_of(instruction.mnemonic)
    counts = sorted({len(form.signature) for form in forms})
    if len(instruction.operands) not in counts:
        expected = " or ".join(str(count) for count in counts)
        raise EncodeError(f"wrong operand count for {instruction.mnemonic}: "
                          f"expected {expected}, got {len(instruction.operands)}")
    allowed = "; ".join(_describe(form) for form in forms
                        if len(form.signature) == len(signature))
    raise EncodeError(f"arrangement not allowed for {instruction.mnemonic}: "
                      f"{', '.join(signature)} (allowed: {allowed})")


def _index_bits(form: Form, element: Operand) -> int:
    """Scatter the element index over the H/L/M bits of the form's index scheme."""
    field_bits, max_vm = INDEX_SCHEMES[form.index_scheme]
    if element.index >= form.index_count:
        raise EncodeError(f"index {element.index} out of range 0-{form.index_count - 1} "
                          f"for {form.mnemonic} element .{element.spec}")
    if element.reg > max_vm:
        raise EncodeError(f"Vm v{element.reg} above v{max_vm}: {form.mnemonic} with "
                          f".{element.spec}[] elements allows only v0-v{max_vm}")
    word = 0
    for position, bit in enumerate(reversed(field_bits)):
        word |= ((element.index >> position) & 1) << bit
    return word


def encode_instruction(instruction) -> tuple[int, Form]:
    """(word, form) of a parsed instruction (NEON Instruction or sve_encoding.SveInstruction)."""
    if isinstance(instruction, sve_encoding.SveInstruction):
        return sve_encoding.encode_sve(instruction)
    form = _select_form(instruction)
    word = form.base
    for operand, shift in zip(instruction.operands, REGISTER_SHIFTS):
        word |= operand.reg << shift
    if form.index_scheme:
        word |= _index_bits(form, instruction.operands[-1])
    return word, form


# A mnemonic of both tables (SDOT: Advanced SIMD and SVE) is an SVE instruction when its
# operands are SVE / SME registers.
SVE_OPERAND = re.compile(r"\b(?:z\d+|p\d+|za\d*[hv]?)\.|\bza\b|\{\s*za", re.I)


def is_sve_text(mnemonic: str, operand_text: str) -> bool:
    """Whether the SVE/SME table encodes this instruction (else the Advanced SIMD one)."""
    if mnemonic not in sve_encoding.FORMS_BY_MNEMONIC:
        return False
    return mnemonic not in FORMS_BY_MNEMONIC or SVE_OPERAND.search(operand_text) is not None


def parse_known(text: str):
    """Parse text whose mnemonic the encoder knows (unknown mnemonics are reported first)."""
    mnemonic, operand_text = split_mnemonic(text)
    if is_sve_text(mnemonic, operand_text):
        return sve_encoding.parse_sve(mnemonic, operand_text)
    _forms_of(mnemonic)
    return Instruction(mnemonic, tuple(parse_operand(p) for p in split_operands(operand_text)))


def encode(text: str) -> int:
    """32-bit encoding of one instruction, e.g. encode('smmla v16.4s, v2.16b, v0.16b') == 0x4e80a450."""
    return encode_instruction(parse_known(text))[0]


def semantic_key(text: str):
    """What an instruction text means, independent of spelling (case, spacing, aliases, omitted
    defaults): compared by `verify` between objdump's text and a `.inst` comment."""
    mnemonic, operand_text = split_mnemonic(text)
    if is_sve_text(mnemonic, operand_text):
        return sve_encoding.semantic_key(sve_encoding.parse_sve(mnemonic, operand_text))
    operands = [parse_operand(part) for part in split_operands(operand_text)]
    return (mnemonic,) + tuple(
        (op.reg, op.spec) if op.index is None else (op.reg, _ELEMENT_BITS[op.spec], op.index)
        for op in operands)


# objdump element-width names: an indexed v2.4b[1] is a 32-bit element like v2.s[1].
_ELEMENT_BITS = {"b": 8, "h": 16, "s": 32, "d": 64, "4b": 32, "2h": 32}


def feature_of(text: str) -> str | None:
    """Architecture feature the instruction needs (one of FEATURES), None for Armv8.0 base ones."""
    return encode_instruction(parse_known(text))[1].feature
