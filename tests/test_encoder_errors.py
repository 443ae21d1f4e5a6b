"""Bad input raises EncodeError whose message names the problem (and GNU as rejects it too)."""
from __future__ import annotations

import pytest

from encoder import EncodeError, encode, feature_of
from encoder.forms import FORMS
from encoder.toolchain import rejected_lines

# (input, key phrase the message must contain)
MALFORMED = [
    ("smmla v32.4s, v2.16b, v0.16b", "register v32 out of range (v0-v31)"),
    ("sdot v0.4s, v1.16b, v99.4b[0]", "register v99 out of range"),
    ("fmla v0.4s, v40.4s, v2.4s", "register v40 out of range"),
    ("smmla v16.4s, v2.8b, v0.16b", "arrangement not allowed for smmla"),
    ("smmla v16.2s, v2.16b, v0.16b", "arrangement not allowed for smmla"),
    ("sdot v0.4s, v1.16b, v2.s[1]", "arrangement not allowed for sdot"),
    ("fmla v0.4s, v1.4s, v2.h[1]", "arrangement not allowed for fmla"),
    ("fmla v0.1d, v1.1d, v2.1d", "arrangement not allowed for fmla"),
    ("sadalp v0.8h, v1.8h", "arrangement not allowed for sadalp"),
    ("bfcvtn v0.8h, v1.4s", "arrangement not allowed for bfcvtn"),
    ("smlal2 v0.4s, v1.4h, v2.4h", "arrangement not allowed for smlal2"),
    ("sudot v0.4s, v1.16b, v2.16b", "arrangement not allowed for sudot"),
    ("fmla v0.2d, v1.2d, v2.d[2]", "index 2 out of range 0-1"),
    ("fmla v0.4s, v1.4s, v2.s[4]", "index 4 out of range 0-3"),
    ("smlal v0.4s, v1.4h, v2.h[8]", "index 8 out of range 0-7"),
    ("sdot v0.4s, v1.16b, v2.4b[4]", "index 4 out of range 0-3"),
    ("bfdot v0.4s, v1.8h, v2.2h[4]", "index 4 out of range 0-3"),
    ("fmla v0.8h, v1.8h, v16.h[0]", "allows only v0-v15"),
    ("smlal v0.4s, v1.4h, v16.h[3]", "allows only v0-v15"),
    ("fmlal v0.4s, v1.4h, v31.h[0]", "allows only v0-v15"),
    ("bfmlalb v0.4s, v1.8h, v20.h[1]", "allows only v0-v15"),
    ("smull2 v0.4s, v1.8h, v17.h[7]", "allows only v0-v15"),
    ("frobnicate v0.4s, v1.4s", "unknown mnemonic 'frobnicate'"),
    ("smmlb v0.4s, v1.16b, v2.16b", "unknown mnemonic 'smmlb'"),
    ("smmla v16.4s, v2.16b", "wrong operand count for smmla: expected 3, got 2"),
    ("smmla v16.4s, v2.16b, v0.16b, v1.16b", "wrong operand count for smmla"),
    ("bfcvtn v0.4h, v1.4s, v2.4s", "wrong operand count for bfcvtn: expected 2, got 3"),
    ("smmla", "wrong operand count for smmla"),
    ("smmla x0, v2.16b, v0.16b", "malformed operand 'x0'"),
    ("smmla v16, v2.16b, v0.16b", "malformed operand 'v16'"),
    ("smmla v16.4s v2.16b, v0.16b", "malformed operand 'v16.4s v2.16b'"),
    ("smmla v16.4s,, v2.16b", "empty operand"),
    ("smmla v16.4s, v2.16b, v0.16b,", "empty operand"),
    ("smmla v16.4q, v2.16b, v0.16b", "unknown arrangement '.4q'"),
    ("sdot v0.4s, v1.16b, v2.4b[x]", "malformed operand 'v2.4b[x]'"),
    ("sdot v0.4s, v1.16b, v2.4b[1", "malformed operand 'v2.4b[1'"),
    ("fmla v0.4s, v1.4s, v2.s[-1]", "malformed operand 'v2.s[-1]'"),
    ("fmla v0.4s, v1.4s, v2.4q[1]", "unknown element specifier '.4q'"),
    ("sdot v0.4s, v1.16b, v2.16b[1]", "arrangement not allowed for sdot"),
    ("bfdot v0.4s, v1.8h, v2.4h[1]", "arrangement not allowed for bfdot"),
    ("smull v0.2d, v1.2s, v2.s", "element .s needs an index"),
    ("sdot v0.4s, v1.16b, v2.4b", "element .4b needs an index"),
    ("smmla v16.4s, v2.16b, w0", "malformed operand 'w0'"),
    ("fmla v0.2d, v1.2d, v2.d[1] extra", "malformed operand"),
    ("", "malformed instruction"),
    ("   // only a comment", "malformed instruction"),
]


def test_there_are_at_least_30_malformed_inputs():
    assert len(MALFORMED) >= 30


@pytest.mark.parametrize("text,phrase", MALFORMED, ids=[t or "<empty>" for t, _ in MALFORMED])
def test_malformed_input_is_rejected_with_its_problem_named(text, phrase):
    with pytest.raises(EncodeError) as raised:
        encode(text)
    assert phrase in str(raised.value)
    with pytest.raises(EncodeError):
        feature_of(text)


def test_gnu_as_rejects_every_malformed_instruction_too():
    lines = [text for text, _ in MALFORMED if text.split("//")[0].strip()]
    assert rejected_lines(lines) == set(range(1, len(lines) + 1))


def out_of_range_lines() -> list[str]:
    """For every by-element form: the first index too high, and (v0-v15 forms) Vm = v16..v31."""
    lines = []
    for form in FORMS:
        if not form.index_scheme:
            continue
        head = ", ".join(f"v1.{shape}" for shape in form.signature[:-1])
        element = form.signature[-1][:-2]
        lines.append(f"{form.mnemonic} {head}, v2.{element}[{form.index_count}]")
        lines += [f"{form.mnemonic} {head}, v{reg}.{element}[0]" for reg in range(form.max_vm + 1, 32)]
    return lines


def test_every_out_of_range_index_and_vm_is_rejected_like_gnu_as():
    lines = out_of_range_lines()
    assert len(lines) > 200
    for line in lines:
        with pytest.raises(EncodeError, match=r"out of range|allows only v0-v15"):
            encode(line)
    assert rejected_lines(lines) == set(range(1, len(lines) + 1))


def test_encode_error_is_a_value_error():
    assert issubclass(EncodeError, ValueError)
