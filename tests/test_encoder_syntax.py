"""Accepted spellings (case, spacing, comments, element forms) give GNU as's word; API basics."""
from __future__ import annotations

import pytest

from encoder import FEATURES, encode, feature_of
from encoder.toolchain import assemble_words

SPELLINGS = [
    "SMMLA V16.4S, V2.16B, V0.16B",
    "smmla   v16.4s ,v2.16b,v0.16b",
    "\tsmmla v16.4s, v2.16b, v0.16b   // accumulate",
    "sdot v0.4s, v1.16b, v2.4B[3]",
    "sdot v0.4s, v1.16b, v2.4b[ 3 ]",
    "fmla v0.4s, v1.4s, v31.S[3]",
    "fmla v0.4s, v1.4s, v31.4s[3]",      # GNU as reads v31.4s[3] as v31.s[3]
    "fmla v0.2d, v1.2d, v31.1d[1]",
    "smlal v0.4s, v1.4h, v15.8h[7]",
    "bfdot v0.2s, v1.4h, v2.2H[1]",
    "fmlal v0.2s, v1.2h, v2.2h",
    "fmlal2 v0.4s, v1.4h, v15.h[7]",
    "smull2 v0.2d, v1.4s, v31.s[3]",
    "sadalp v0.1d, v1.2s",
]


@pytest.mark.parametrize("text", SPELLINGS)
def test_spelling_gives_gnu_as_word(text):
    assert encode(text) == assemble_words([text.split("//")[0]])[0]


def test_features_tuple_is_the_documented_one():
    assert FEATURES == ("dotprod", "i8mm", "bf16", "fp16fml", "fp16", "sve", "sve2", "sme")


@pytest.mark.parametrize("text,feature", [
    ("smmla v16.4s, v2.16b, v0.16b", "i8mm"),
    ("usdot v0.4s, v1.16b, v2.4b[0]", "i8mm"),
    ("sdot v0.2s, v1.8b, v2.8b", "dotprod"),
    ("udot v0.4s, v1.16b, v2.4b[1]", "dotprod"),
    ("bfcvtn v0.4h, v1.4s", "bf16"),
    ("bfmlalb v0.4s, v1.8h, v2.h[0]", "bf16"),
    ("fmlal2 v0.4s, v1.4h, v2.4h", "fp16fml"),
    ("fmla v0.8h, v1.8h, v2.8h", "fp16"),
    ("fmla v0.4h, v1.4h, v2.h[3]", "fp16"),
    ("fmla v0.4s, v1.4s, v2.4s", None),
    ("fmla v0.2d, v1.2d, v2.d[1]", None),
    ("smlal2 v0.4s, v1.8h, v2.h[7]", None),
    ("smull v0.8h, v1.8b, v2.8b", None),
    ("sadalp v0.4s, v1.8h", None),
])
def test_feature_of(text, feature):
    assert feature_of(text) == feature
