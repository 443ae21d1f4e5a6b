"""bench.mca: disassembly of block bytes and llvm-mca modeling that isolates blocks it cannot
model instead of failing the whole batch or inventing numbers."""
import pytest

from bench.mca import CycleModel, McaError, block_words, disassemble_words, model_blocks

NOP = 0xD503201F          # A64 NOP (Arm ARM C6.2: HINT #0)
ADD_X0_X0_1 = 0x91000400  # ADD X0, X0, #1 (ADD immediate, sf=1, imm12=1, Rn=Rd=0)
UNALLOCATED = 0xFFFFFFFF  # in an unallocated encoding space of A64


def test_disassembles_words_and_flags_invalid_ones():
    got = disassemble_words([NOP, ADD_X0_X0_1, UNALLOCATED])
    assert got[NOP] == "nop"
    assert got[ADD_X0_X0_1].split() == ["add", "x0,", "x0,", "#1"]
    assert got[UNALLOCATED] is None


def test_block_words_little_endian():
    assert block_words(bytes.fromhex("1f2003d5" "00040091")) == [NOP, ADD_X0_X0_1]


def test_failing_blocks_are_isolated():
    chain = ["add x0, x0, #1"] * 8          # a dependency chain: about one cycle per add
    wide = ["add x0, x0, #1", "add x1, x1, #1", "add x2, x2, #1", "add x3, x3, #1"] * 2
    parse_error = ["add x0, x0, #1", "bogus x1"]
    sve_on_a55 = ["ld1d {z0.d}, p0/z, [x0]"]  # Cortex-A55 (Armv8.2) has no SVE scheduling data
    results = model_blocks("cortex-a55", [chain, parse_error, wide, sve_on_a55])
    (c_chain, _), (c_err, why_err), (c_wide, _), (c_sve, why_sve) = results
    assert c_err is None and "unrecognized instruction" in why_err
    assert c_sve is None and "ld1d" in why_sve
    # independent adds dual-issue on the A55, the chain cannot
    assert c_chain > c_wide > 0


def test_unknown_cpu_is_an_error():
    with pytest.raises(McaError, match="cortex-a99"):
        CycleModel.check_cpus(["neoverse-n2", "cortex-a99"])


def test_cycle_model_marks_undecodable_blocks(tmp_path):
    model = CycleModel(tmp_path / "c.json")
    good = bytes.fromhex("1f2003d5" "00040091")
    bad = bytes.fromhex("1f2003d5" "ffffffff")
    model.prepare(["neoverse-n2"], [good, bad])
    assert model.cycles("neoverse-n2", good) > 0
    assert model.cycles("neoverse-n2", bad) is None
    assert "0xffffffff" in model.reason("neoverse-n2", bad)
