"""Every encoder form against GNU as, for every register combination and every index.

Per form: all Vd x Vn x Vm (x index) combinations are written to one .s file, assembled by
aarch64-linux-gnu-as, read back from .text and compared word by word with encoder.encode() of
the same text.  The forms are spread over two worker processes (about 6.4 M instructions).
Also: base forms assemble on plain Armv8.0 and the others do not.
"""
from __future__ import annotations

import itertools
import os
from concurrent.futures import ProcessPoolExecutor

import pytest

from encoder import EncodeError, encode, feature_of
from encoder.forms import FORMS, Form
from encoder.toolchain import assemble_words, rejected_lines

WORKERS = 2
MAX_REPORTED = 5


def form_id(form: Form) -> str:
    return f"{form.mnemonic}-{'-'.join(form.signature).replace('[]', 'idx')}"


def operand_text(shape: str, reg: int, index: int) -> str:
    """'v3.4s' for a vector shape, 'v3.4b[1]' for an element shape like '4b[]'."""
    if shape.endswith("[]"):
        return f"v{reg}.{shape[:-2]}[{index}]"
    return f"v{reg}.{shape}"


def operand_choices(form: Form, position: int) -> list[str]:
    """Every text the operand at position may take: each register, times each index if indexed."""
    shape = form.signature[position]
    if position < len(form.signature) - 1:
        return [operand_text(shape, reg, 0) for reg in range(32)]
    indexes = range(form.index_count) if form.index_scheme else range(1)
    return [operand_text(shape, reg, index) for reg in range(form.max_vm + 1) for index in indexes]


def all_lines(form: Form) -> list[str]:
    """Text of every register (and index) combination the form allows."""
    choices = [operand_choices(form, position) for position in range(len(form.signature))]
    return [f"{form.mnemonic} {', '.join(operands)}" for operands in itertools.product(*choices)]


def expected_count(form: Form) -> int:
    count = 32 ** (len(form.signature) - 1) * (form.max_vm + 1)
    return count * (form.index_count or 1)


def compare_with_gas(form_index: int) -> tuple[int, list[str]]:
    """(lines compared, first mismatches) for FORMS[form_index]; runs in a worker process."""
    lines = all_lines(FORMS[form_index])
    gas_words = assemble_words(lines)
    if len(gas_words) != len(lines):
        return 0, [f"GNU as produced {len(gas_words)} words for {len(lines)} lines"]
    return len(lines), mismatches_with_gas(lines, gas_words)


def mismatches_with_gas(lines, gas_words) -> list[str]:
    """The first MAX_REPORTED lines whose encoding (or encoder error) differs from GNU as's word."""
    mismatches = []
    for line, gas_word in zip(lines, gas_words):
        try:
            ours = f"0x{encode(line):08x}"
        except EncodeError as error:
            ours = f"error ({error})"
        if ours != f"0x{gas_word:08x}" and len(mismatches) < MAX_REPORTED:
            mismatches.append(f"{line}: encoder {ours}, GNU as 0x{gas_word:08x}")
    return mismatches


@pytest.fixture(scope="module")
def gas_results():
    with ProcessPoolExecutor(max_workers=WORKERS) as pool:
        return dict(zip(range(len(FORMS)), pool.map(compare_with_gas, range(len(FORMS)))))


@pytest.mark.parametrize("form_index", range(len(FORMS)), ids=[form_id(f) for f in FORMS])
def test_every_combination_matches_gnu_as(gas_results, form_index):
    compared, mismatches = gas_results[form_index]
    assert mismatches == []
    assert compared == expected_count(FORMS[form_index])


def test_exhaustive_run_covers_millions_of_words(gas_results):
    total = sum(compared for compared, _ in gas_results.values())
    assert total == sum(expected_count(form) for form in FORMS) > 6_000_000


def test_every_requested_mnemonic_has_forms():
    requested = {"fmla", "fmlal", "fmlal2", "sdot", "udot", "usdot", "sudot", "smmla", "ummla",
                 "usmmla", "bfmmla", "bfdot", "bfmlalb", "bfmlalt", "bfcvtn", "bfcvtn2", "smlal",
                 "smlal2", "umlal", "umlal2", "smull", "smull2", "sadalp"}
    assert requested <= {form.mnemonic for form in FORMS}


def sample_line(form: Form) -> str:
    return all_lines(form)[-1]


# feature_of() against GNU as's -march requirements, for these forms and the SVE/SME ones:
# tests/test_encoder_sve_exhaustive.py::test_feature_of_matches_what_gnu_as_requires.


def test_base_forms_assemble_on_plain_armv8():
    base_lines = [sample_line(form) for form in FORMS if form.feature is None]
    assert len(base_lines) > 20
    assert rejected_lines(base_lines, "armv8-a") == set()
    assert all(feature_of(line) is None for line in base_lines)
    assert len(assemble_words(base_lines, "armv8-a")) == len(base_lines)


def test_all_forms_are_rejected_by_plain_armv8_except_base():
    lines = [sample_line(form) for form in FORMS]
    expected = {number for number, form in enumerate(FORMS, start=1) if form.feature}
    assert rejected_lines(lines, "armv8-a") == expected
