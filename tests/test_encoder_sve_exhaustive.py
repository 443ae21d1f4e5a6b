"""Every SVE/SME encoder form against GNU as 2.40, over every value of every operand field.

Lines come from tests/sve_lines.py: the full product of the field values for forms with at most
4096 combinations (zero's 256 masks, ptrue, rdvl/rdsvl, smstart/smstop), otherwise an all-pairs
design in which every value of every field (registers, predicates, tiles, slice direction, Ws,
offsets, immediates, patterns, multipliers) meets every value of every other field.  All lines go
to one aarch64-linux-gnu-as run (-march=armv9-a+sme); .text is read back and compared word by
word with encoder.encode() of the same text.  One process, about 140 k lines.
Also: each field just outside its range is rejected by GNU as and by the encoder (naming the
field), and feature_of() agrees with the -march feature GNU as demands for each form.
"""
from __future__ import annotations

import pytest

from encoder import FEATURES, EncodeError, encode, feature_of
from encoder.forms import FORMS
from encoder.sve_forms import SVE_FORMS
from encoder.toolchain import MARCH_ALL, assemble_words, rejected_lines

import sve_lines
from test_encoder_exhaustive import mismatches_with_gas, sample_line as neon_sample_line

MARCH_SME = "armv9-a+sme"


@pytest.fixture(scope="module")
def gas_results():
    """{form index: (lines compared, first mismatches)} from one assembler run."""
    per_form = [sve_lines.all_lines(form) for form in SVE_FORMS]
    words = assemble_words([line for lines in per_form for line in lines], MARCH_SME)
    results, start = {}, 0
    for index, lines in enumerate(per_form):
        mine, start = words[start:start + len(lines)], start + len(lines)
        results[index] = (len(mine), mismatches_with_gas(lines, mine))
    assert start == len(words), f"GNU as produced {len(words)} words for {start} lines"
    return results


@pytest.mark.parametrize("form_index", range(len(SVE_FORMS)),
                         ids=[sve_lines.form_id(f) for f in SVE_FORMS])
def test_every_field_value_matches_gnu_as(gas_results, form_index):
    compared, mismatches = gas_results[form_index]
    assert mismatches == []
    assert compared == len(sve_lines.combinations(SVE_FORMS[form_index]))


def test_every_value_of_every_field_is_exercised():
    """The design really covers each field's whole range, and every pair of fields' values."""
    for form in SVE_FORMS:
        rows = sve_lines.combinations(form)
        fields = sve_lines.fields_of(form)
        for k, (_, field) in enumerate(fields):
            assert {row[k] for row in rows} == set(field.values), form
        for i in range(len(fields)):
            for j in range(i + 1, len(fields)):
                pairs = {(row[i], row[j]) for row in rows}
                size_i, size_j = len(fields[i][1].values), len(fields[j][1].values)
                assert len(pairs) == size_i * size_j, form


def test_requested_instructions_have_forms():
    requested = {"fmopa", "bfmopa", "smopa", "umopa", "usmopa", "sumopa", "fmops", "smstart",
                 "smstop", "zero", "ld1w", "ld1b", "ld1h", "st1w", "mova", "mov", "ptrue",
                 "whilelt", "cntw", "cntb", "cnth", "rdsvl", "addvl", "addsvl", "addspl",
                 "fadd", "fmax", "fmin", "ld1rw",   # the SME fp32 epilogue
                 "add", "sqadd", "and", "sqrdmulh", "smax", "smin", "sqshl", "srshl", "ssra",
                 "smullb", "smullt", "sqxtnb", "sqxtnt", "uzp1", "trn1", "trn2", "ld1rb",
                 "ld1rh", "ld4w", "addha",          # and its int8 requantisation
                 "umax", "umin", "sqxtunb", "sqxtunt",   # the uint8 one
                 "bfcvt", "bfcvtnt",                 # the streaming bf16 packers' conversion
                 "ld2w"}                            # and the A packer's de-interleaving load
    assert requested <= {form.mnemonic for form in SVE_FORMS}
    assert len(SVE_FORMS) >= 100


def out_of_range_cases():
    return [case for form in SVE_FORMS for case in sve_lines.out_of_range_lines(form)]


def test_a_field_just_outside_its_range_is_rejected_like_gnu_as():
    cases = out_of_range_cases()
    assert len(cases) > 300
    for line, label in cases:
        with pytest.raises(EncodeError) as raised:
            encode(line)
        message = str(raised.value)
        assert label in message or "register" in message, (line, message)
        assert "out of range" in message or "must be" in message, (line, message)
    lines = [line for line, _ in cases]
    assert rejected_lines(lines, MARCH_SME) == set(range(1, len(lines) + 1))


# GNU as 2.40 feature dependencies (observed: -march=...+no<feature> also rejects these):
# +sme needs +sve2 (so +sve) and +bf16; +sve2 needs +sve; +sve needs +fp16; +fp16fml needs +fp16.
DEPENDENTS = {"fp16": {"fp16fml", "sve", "sve2", "sme"}, "bf16": {"sme"}, "sve": {"sve2", "sme"},
              "sve2": {"sme"}}


# Forms that need two features: the SVE BF16 conversions (BFCVT / BFCVTNT z) are tagged bf16 and
# also need +sve (so +fp16); GNU as rejects them when either is dropped.
ALSO_NEED_SVE = {"bfcvt", "bfcvtnt"}


def also_needs(line, feature):
    """Whether the line's form needs `feature` (or a feature it depends on) besides its own."""
    return (line.split()[0] in ALSO_NEED_SVE and "z" in line
            and feature in ("sve", "fp16"))


def every_sample():
    return ([neon_sample_line(form) for form in FORMS]
            + [sve_lines.sample_line(form) for form in SVE_FORMS])


@pytest.mark.parametrize("feature", FEATURES)
def test_feature_of_matches_what_gnu_as_requires(feature):
    """Dropping one feature from -march makes GNU as reject exactly the NEON and SVE/SME forms
    feature_of names, plus the forms of the features that depend on it."""
    lines = every_sample()
    needs = {feature} | DEPENDENTS.get(feature, set())
    expected = {number for number, line in enumerate(lines, start=1)
                if feature_of(line) in needs or also_needs(line, feature)}
    assert expected, f"no form needs {feature}"
    assert rejected_lines(lines, f"{MARCH_ALL}+no{feature}") == expected


def test_sve_forms_assemble_with_sve_alone_sme_forms_need_sme():
    lines = [sve_lines.sample_line(form) for form in SVE_FORMS]
    sme = {number for number, form in enumerate(SVE_FORMS, start=1) if form.feature == "sme"}
    sve2 = {number for number, form in enumerate(SVE_FORMS, start=1) if form.feature == "sve2"}
    bf16 = {number for number, form in enumerate(SVE_FORMS, start=1) if form.feature == "bf16"}
    assert sme and sve2 and bf16 and len(sme | sve2 | bf16) < len(lines)
    assert rejected_lines(lines, "armv8-a+sve") == sme | sve2 | bf16
    assert rejected_lines(lines, "armv8-a+sve+bf16") == sme | sve2
    assert rejected_lines(lines, "armv8-a+sve2") == sme | bf16
    assert rejected_lines(lines, "armv8-a+sme") == set()
    assert rejected_lines(lines, "armv8-a") == set(range(1, len(lines) + 1))
    assert {feature_of(line) for line in lines} == {"sve", "sve2", "sme", "bf16"}


def test_each_form_is_the_one_its_own_lines_select():
    """No row shadows another: a line written for a form is encoded by that form."""
    from encoder.encoding import parse_known
    from encoder.sve_encoding import select_form
    for form in SVE_FORMS:
        assert select_form(parse_known(sve_lines.sample_line(form))) is form, form.signature
        assert "DDI0487" in form.source or "DDI0616" in form.source
