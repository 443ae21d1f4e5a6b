"""The `.inst` words quoted in the background documents (MNN, KleidiAI) against encode()."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from encoder import encode, feature_of
from encoder.toolchain import assemble_words

SEEDS = Path(__file__).resolve().parent.parent.parent / "shared" / "seeds"
SEED_FILES = ("001_a374f7752dd057b7.txt", "002_716c4460db76ee86.txt")
INST_RE = re.compile(r"\.inst\s+(0x[0-9a-fA-F]{8})\s*//\s*([^\\\"\n]+)")

# A copy of some quoted pairs, so the test stays meaningful even if a seed file were edited.
KNOWN_PAIRS = [
    (0x4E80A450, "smmla v16.4s, v2.16b, v0.16b"),   # MNN article, example conversion
    (0x6E41ECF3, "bfmmla v19.4s, v7.8h, v1.8h"),    # MNN article, example conversion
    (0x4E80A44C, "smmla v12.4s, v2.16b, v0.16b"),   # MNN 4x20 smmla kernel
    (0x4E81A57F, "smmla v31.4s, v11.16b, v1.16b"),
    (0x6E40EC48, "bfmmla v8.4s, v2.8h, v0.8h"),     # MNN 12x8 bfmmla kernel
    (0x6E41ECFF, "bfmmla v31.4s, v7.8h, v1.8h"),
    (0x4E94A786, "smmla v6.4s, v28.16b, v20.16b"),  # KleidiAI 8x4x32 i8mm kernel
    (0x4E9DA480, "smmla v0.4s, v4.16b, v29.16b"),
    (0x4E90A734, "smmla v20.4s, v25.16b, v16.16b"),
]


def quoted_pairs(name: str) -> list[tuple[int, str]]:
    text = (SEEDS / name).read_text(encoding="utf-8")
    return [(int(word, 16), instruction.strip()) for word, instruction in INST_RE.findall(text)]


def test_seed_directory_is_beside_the_repository():
    assert SEEDS.is_dir(), f"background documents expected at {SEEDS} (clone shared/ beside the repo)"


@pytest.mark.parametrize("name", SEED_FILES)
def test_every_quoted_inst_word_is_what_encode_gives(name):
    pairs = quoted_pairs(name)
    assert len(pairs) >= 20, f"expected many .inst lines in {name}, parsed {len(pairs)}"
    wrong = [f"{instruction}: quoted 0x{word:08x}, encode 0x{encode(instruction):08x}"
             for word, instruction in pairs if encode(instruction) != word]
    assert wrong == []


def test_seed_pairs_parse_all_inst_lines_of_the_documents():
    total_inst_lines = sum(
        len(re.findall(r"\.inst\s+0x", (SEEDS / name).read_text(encoding="utf-8")))
        for name in SEED_FILES)
    assert sum(len(quoted_pairs(name)) for name in SEED_FILES) == total_inst_lines


@pytest.mark.parametrize("word,instruction", KNOWN_PAIRS, ids=[i for _, i in KNOWN_PAIRS])
def test_known_pair(word, instruction):
    assert encode(instruction) == word


def test_known_pairs_are_gnu_as_words_too():
    assert assemble_words([instruction for _, instruction in KNOWN_PAIRS]) == [
        word for word, _ in KNOWN_PAIRS]


def test_seed_features():
    assert feature_of("smmla v16.4s, v2.16b, v0.16b") == "i8mm"
    assert feature_of("bfmmla v19.4s, v7.8h, v1.8h") == "bf16"
