"""SVE / SME instruction text -> 32-bit word, through the table of sve_forms.py."""
from __future__ import annotations

from dataclasses import dataclass

from .errors import EncodeError
from .sve_forms import SVE_FORMS, UNSUPPORTED, Field, SveForm
from .sve_operands import SveOperand, parse_sve_operand, split_sve_operands

FORMS_BY_MNEMONIC: dict[str, tuple[SveForm, ...]] = {
    mnemonic: tuple(form for form in SVE_FORMS if form.mnemonic == mnemonic)
    for mnemonic in dict.fromkeys(form.mnemonic for form in SVE_FORMS)}


@dataclass(frozen=True)
class SveInstruction:
    mnemonic: str
    operands: tuple[SveOperand, ...]

    def __str__(self) -> str:
        return f"{self.mnemonic} " + ", ".join(op.text for op in self.operands)


def parse_sve(mnemonic: str, operand_text: str) -> SveInstruction:
    return SveInstruction(mnemonic, tuple(parse_sve_operand(part)
                                          for part in split_sve_operands(operand_text)))


def _fits(form: SveForm, operands: tuple[SveOperand, ...]) -> bool:
    return (form.required <= len(operands) <= len(form.slots)
            and all(op.shape in slot.shapes for op, slot in zip(operands, form.slots)))


def _describe(form: SveForm) -> str:
    optional = len(form.slots) - form.required
    names = list(form.signature)
    if optional:
        names[form.required:] = [f"[{name}]" for name in names[form.required:]]
    return ", ".join(names)


def select_form(instruction: SveInstruction) -> SveForm:
    """The form whose slots accept the operands; errors name what does not fit."""
    forms = FORMS_BY_MNEMONIC[instruction.mnemonic]
    for form in forms:
        if _fits(form, instruction.operands):
            return form
    shapes = [op.shape for op in instruction.operands]
    for mnemonics, shape, reason in UNSUPPORTED:
        if instruction.mnemonic in mnemonics and shape in shapes:
            raise EncodeError(f"{instruction}: {reason}")
    counts = sorted({n for form in forms for n in range(form.required, len(form.slots) + 1)})
    if len(shapes) not in counts:
        expected = " or ".join(str(count) for count in counts)
        raise EncodeError(f"wrong operand count for {instruction.mnemonic}: "
                          f"expected {expected}, got {len(shapes)}")
    allowed = "; ".join(dict.fromkeys(_describe(form) for form in forms))
    raise EncodeError(f"operand shapes not allowed for {instruction.mnemonic}: "
                      f"{', '.join(shapes)} (allowed: {allowed})")


def field_values(form: SveForm, operands) -> list[tuple[Field, int, str]]:
    """(field, value, operand text) for every field of the form, defaults filled in."""
    result = []
    for position, slot in enumerate(form.slots):
        if position < len(operands):
            operand = operands[position]
            missing = len(slot.fields) - len(operand.values)
            values = operand.values + slot.defaults[len(slot.defaults) - missing:]
            text = operand.text
        else:
            values, text = slot.omitted, "(omitted)"
        result += [(field, value, text) for field, value in zip(slot.fields, values)]
    return result


def _shown(field: Field, value: int) -> str:
    if field.show in ("x{}", "w{}") and value == 31:
        return field.show[0] + "zr"
    return field.show.format(value)


def check_range(mnemonic: str, field: Field, value: int, text: str) -> None:
    if not field.lo <= value <= field.hi:
        raise EncodeError(f"{field.label} {_shown(field, value)} out of range for {mnemonic} "
                          f"({_shown(field, field.lo)} to {_shown(field, field.hi)}) "
                          f"in operand {text!r}")
    if (value - field.bias) % field.scale:
        raise EncodeError(f"{field.label} {_shown(field, value)} must be a multiple of "
                          f"{field.scale} for {mnemonic} in operand {text!r}")


def check_tied(instruction: SveInstruction, form: SveForm) -> None:
    """A destructive form's repeated operand must be the operand it repeats."""
    for position, slot in enumerate(form.slots):
        if slot.tied is None or position >= len(instruction.operands):
            continue
        mine, theirs = instruction.operands[position], instruction.operands[slot.tied]
        if mine.values != theirs.values:
            raise EncodeError(f"operand {position + 1} of {instruction.mnemonic} must be "
                              f"{theirs.text} (the destination, written again: the form is "
                              f"destructive), got {mine.text}")


def encode_sve(instruction: SveInstruction) -> tuple[int, SveForm]:
    form = select_form(instruction)
    check_tied(instruction, form)
    word = form.base
    for field, value, text in field_values(form, instruction.operands):
        check_range(instruction.mnemonic, field, value, text)
        word |= field.bits(value)
    return word, form


def semantic_key(instruction: SveInstruction):
    """(mnemonic with aliases resolved, operand slots, every field value with defaults)."""
    form = select_form(instruction)
    values = tuple(value for _, value, _ in field_values(form, instruction.operands))
    return (form.alias_of or form.mnemonic, form.signature, values)
