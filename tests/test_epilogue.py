"""gen.epilogue without running code: the argument block's layout, the variant table, the
register budget check, and the MMLA unzip into row vectors (the qemu tests run the code)."""
from __future__ import annotations

import re

import pytest

from gen.epilogue import (ARGS_BYTES, ARGS_FIELDS, EPILOGUE_TEMPS, EPILOGUE_VARIANTS, EPILOGUES,
                          acc_load, clamp_test, epilogue_and_store, requant_code, requant_loads,
                          store_setup,
                          c_struct, check_epilogue, free_vregs, tile_rows, variants_for)
from gen.isa import GENERATED, INSTRUCTIONS
from gen.loop import KernelPlanError
from gen.plan import TilePlan


def plan(instruction, ep, hp, a, b, c, strategy="resident"):
    return TilePlan(instruction, ep, hp, INSTRUCTIONS[instruction].k, strategy, tuple(a),
                    tuple(b), tuple(c), 0.0)


def test_args_layout_is_packed_aligned_and_64_bytes():
    sizes = {"size_t": 8, "const void *": 8, "int32_t": 4, "float": 4}
    end = 0
    for name, offset, ctype, _ in ARGS_FIELDS:
        assert offset == end and offset % sizes[ctype] == 0, name
        end = offset + sizes[ctype]
    assert end == ARGS_BYTES == 64


def test_c_struct_declares_every_field_at_its_offset():
    text = c_struct("my_")
    assert text.startswith("typedef struct my_tile_args {") and text.endswith("} my_tile_args;")
    for name, offset, _, _ in ARGS_FIELDS:
        assert re.search(rf"\b{name};\s+/\* {offset:2}\b", text), name


def test_every_generated_instruction_has_variants_raw_first():
    for instruction in {i for names in GENERATED.values() for i in names}:
        variants = EPILOGUE_VARIANTS[instruction]
        assert variants[0] == "raw" and set(variants) <= set(EPILOGUES)
        c_type = INSTRUCTIONS[instruction].c_type
        assert "biasclamp" not in variants or c_type == "fp32"
        assert not {"requant", "requant_u8"} & set(variants) or c_type == "int32"
    assert variants_for("fmla_f16") == ("raw",)       # not in the table: raw only


def test_register_budget_and_unknown_epilogue_are_errors():
    tight = plan("fmla_f32", 1, 4, [0], [1], range(2, 31))     # 29 accumulators, 3 free
    with pytest.raises(KernelPlanError, match=f"needs {EPILOGUE_TEMPS} free"):
        check_epilogue(tight, "requant")
    check_epilogue(tight, "raw")
    with pytest.raises(KernelPlanError, match="unknown epilogue"):
        check_epilogue(tight, "gelu")
    # an odd last MMLA column block keeps a register per row pair after the unzip (biasclamp,
    # which unzips the fp32 tiles), requant: a row pair's lone int16 vector does
    odd = plan("smmla", 8, 6, range(0, 4), range(4, 7), range(7, 19))
    check_epilogue(odd, "requant")
    crowded = plan("bfmmla", 2, 6, [0], [1], range(4, 32))  # 4 free: enough but for the odd tile
    with pytest.raises(KernelPlanError, match="needs 5 free"):
        check_epilogue(crowded, "biasclamp")
    check_epilogue(plan("smmla", 2, 6, [0], [1], range(4, 32)), "requant")  # 2 int16 vectors
    lone = plan("smmla", 4, 4, [0], [1], range(4, 32))      # 1 int16 vector per row pair
    with pytest.raises(KernelPlanError, match="needs 5 free"):
        check_epilogue(lone, "requant")


@pytest.mark.parametrize("hp", [4, 6, 2])
def test_mmla_tiles_unzip_into_distinct_row_vectors(hp):
    """Every row gets hp columns in registers that hold nothing else, none of them free."""
    blocks = hp // 2
    p = plan("smmla", 4, hp, range(0, 2), range(2, 2 + blocks), range(8, 8 + 2 * blocks))
    pool = free_vregs(p)
    code, rows = tile_rows(p, pool)
    assert len(rows) == 4
    regs = [reg for row in rows for reg, _ in row]
    assert len(set(regs)) == len(regs) and not set(regs) & set(pool)
    assert all(sum(n for _, n in row) == hp for row in rows)
    assert all(i.text.startswith(("uzp1", "uzp2")) for i in code)


def test_requant_u8_goes_to_the_uint8_output_chain():
    """ts_gemm_u8's paths (usmmla, sdot, smlal) get the uint8-output requantisation; the int8
    ones (smmla, sdot, smlal) the int8 one; its output type is uint8."""
    assert "requant_u8" in variants_for("usmmla") and "requant" not in variants_for("usmmla")
    for both in ("sdot", "smlal"):
        assert "requant_u8" in variants_for(both) and "requant" in variants_for(both)
    assert "requant_u8" not in variants_for("smmla")
    assert EPILOGUES["requant_u8"].out_type("int32") == "uint8"
    assert EPILOGUES["requant"].out_type("int32") == "int8"


@pytest.mark.parametrize("instruction,ep,hp", [("usmmla", 8, 8), ("sdot", 8, 12),
                                                      ("smlal", 8, 12)])
def test_requant_u8_differs_from_requant_only_in_the_narrowing(instruction, ep, hp):
    """The same instructions as the int8 requantisation but SQXTUN for SQXTN, UMAX/UMIN for
    SMAX/SMIN and the whole-range test's bounds (0..255 for -128..127): the uint8 result costs
    nothing more."""
    inst = INSTRUCTIONS[instruction]
    if inst.acc_shape == "tile2x2":
        p = plan(instruction, ep, hp, range(0, 4), range(4, 8), range(8, 8 + ep * hp // 4))
    else:
        p = plan(instruction, ep, hp, [0, 1], range(2, 5), range(5, 5 + ep * hp // 4))
    s8 = [i.text for i in epilogue_and_store(p, "requant")]
    u8 = [i.text for i in epilogue_and_store(p, "requant_u8")]
    swap = {"sqxtn v": "sqxtun v", "smax": "umax", "smin": "umin",
            }
    narrow = [t for t in s8 if t.endswith(".8h") and t.startswith("sqxtn v")
              or t.startswith(("smax", "smin"))]
    assert narrow and len(s8) == len(u8)
    for a, b in zip(s8, u8):
        if a in narrow:
            head = next(k for k in swap if a.startswith(k))
            assert b == swap[head] + a[len(head):]
        else:
            assert a == b


def test_requant_skips_a_whole_range_clamp():
    """act_min, act_max = the output type's limits (kActivationNone): one branch over the
    clamp, which the saturating narrowing already did; any other bounds clamp."""
    p = plan("smmla", 8, 8, range(0, 4), range(4, 8), range(8, 24))
    for epilogue, out, bounds in (("requant", "int8", ("add w16, w14, #128", "eor w17, w15, #127")),
                                  ("requant_u8", "uint8", ("mov w16, w14", "eor w17, w15, #255"))):
        setup = [i.text for i in store_setup(p, 64, 80, 1, True, epilogue)]
        loads, test = [i.text for i in requant_loads()], [i.text for i in clamp_test(out)]
        assert set(bounds) <= set(test) and "orr w16, w16, w17" in test
        assert set(loads) <= set(setup[:setup.index("cmp x10, #8")])
        assert setup[setup.index("b.eq K_WRITE") - len(test):setup.index("b.eq K_WRITE")] == test
        text = [i.text for i in epilogue_and_store(p, epilogue)]
        assert text[0] == "cmp w12, #1" and text.index("b.eq K_RQ_SINGLE") > 0
        skip, store = text.index("cbz w16, K_RQ_STORE"), text.index("K_RQ_STORE:")
        clamp = text[skip + 1:store]
        assert [t.split(",")[1] for t in clamp[:2]] == [" w14", " w15"]   # bounds, clamp only
        assert len(clamp) == 2 + 2 * 8 and all(t[1:4] in ("max", "min") for t in clamp[2:])


@pytest.mark.parametrize("instruction,ep,hp", [("smmla", 8, 8), ("sdot", 8, 12)])
def test_requant_fast_path_is_the_general_paths_rounding_2_case(instruction, ep, hp):
    """fast_setup branches to K_SLOW unless full tile, rounding 2 and no clamp; fast_write is
    branch-free and runs the general path's instructions for that case (its rounding-2 block
    and narrowing with the MMLA unzip, the clamp left out) with the rows stored through x3/x6
    + 2p ldc."""
    from gen.epilogue import fast_setup, fast_write, slow_setup
    inst = INSTRUCTIONS[instruction]
    if inst.acc_shape == "tile2x2":
        p = plan(instruction, ep, hp, range(0, 4), range(4, 8), range(8, 8 + ep * hp // 4))
    else:
        p = plan(instruction, ep, hp, [0, 1], range(2, 5), range(5, 5 + ep * hp // 4))
    setup = [i.text for i in fast_setup(p, 64, "requant")]
    assert setup[-3:] == ["ccmp w12, #2, #0, eq", "ccmp w16, #0, #0, eq", "b.ne K_SLOW"]
    assert [i.text for i in slow_setup(p, 80, 1)][:1] == ["K_SLOW:"]
    fast = [i.text for i in fast_write(p, "requant")]
    assert not any(t.startswith(("b", "cb")) or t.endswith(":") for t in fast)
    general = [i.text for i in epilogue_and_store(p, "requant")]
    right = general[general.index("K_RQ_RIGHT:") + 1:general.index("cbz w16, K_RQ_STORE")]
    vector = [t for t in fast if t.startswith(("uzp", "ldr q", "sqrdmulh", "ssra", "dup", "sq"))]
    assert vector == [t for t in right if t != "K_RQ_NARROW:"]
    stores = [t for t in fast if t.startswith("str")]
    if hp == 8:     # 8 bytes a row: one store each, [x3|x6, 2p ldc]
        address = [re.search(r"\[(.*)\]", t).group(1) for t in stores]
        assert address == ["x3", "x6", "x3, x8", "x6, x8", "x3, x9", "x6, x9", "x3, x10",
                           "x6, x10"]
        assert fast[:4] == ["add x6, x3, x4", "lsl x8, x4, #1", "add x9, x8, x8",
                            "add x10, x9, x8"]
    else:           # 12 bytes a row (d + s): the general path's stores
        assert stores == [t for t in general if t.startswith("str")]


@pytest.mark.parametrize("ep,hp", [(8, 8), (4, 4), (4, 6), (2, 2), (4, 12), (2, 10)])
def test_mmla_requant_runs_on_the_tiles_and_unzips_int16_rows(ep, hp):
    """The MMLA requant kernels start every accumulator at its column block's offsets with a
    load (params + 64 j, already in the 2x2 lane layout: no ZIP; half the row pairs, the other
    half MOV copies of them after the loads), requantise the tiles in place
    with that block's parameters and unzip only the narrowed int16 rows (UZP1 / UZP2 .4s after
    every SQXTN2): each row gets its hp columns, stored at their offsets."""
    blocks = hp // 2
    p = plan("smmla", ep, hp, range(0, 2), range(2, 4), range(4, 4 + ep * hp // 4))
    acc = [i.text for i in acc_load(p, 80, 4, "requant")]
    assert acc[acc.index("K_ZERO:") + 1:acc.index("K_ACC_DONE:")] == []
    loaded = -(-(ep // 2) // 2)     # the first half of the row pairs loaded, the rest copied
    for i in range(ep // 2):
        for j in range(blocks):
            src = p.c_reg_for(i % loaded, j)
            assert (f"ldr q{p.c_reg_for(i, j)}, [x11, #{64 * j}]" if i < loaded else
                    f"mov v{p.c_reg_for(i, j)}.16b, v{src}.16b") in acc
    entry = acc[:acc.index("cbz x6, K_ZERO")]      # (an acc tile is zipped into the tiles)
    movs = [n for n, t in enumerate(entry) if t.startswith("mov v")]
    assert not movs or max(n for n, t in enumerate(entry) if t.startswith("ldr q")) < min(movs)
    code = [i.text for i in epilogue_and_store(p, "requant")]
    assert not any(t.startswith("zip") for t in code + entry)
    right = code[code.index("K_RQ_RIGHT:"):code.index("K_RQ_NARROW:")]
    for j in range(blocks):
        for i in range(ep // 2):
            assert f"sqrdmulh v{p.c_reg_for(i, j)}.4s, v{p.c_reg_for(i, j)}.4s, v" in " ".join(right)
        assert f"ldr q{{}}, [x11, #{64 * j + 32}]".split("{")[0] in " ".join(right)
    narrow = code[code.index("K_RQ_NARROW:"):]
    uzp = [n for n, t in enumerate(narrow) if t.startswith("uzp")]
    sqxtn2 = [n for n, t in enumerate(narrow) if t.startswith("sqxtn2")]
    assert uzp and all(".4s" in narrow[n] for n in uzp) and (not sqxtn2 or max(sqxtn2) < min(uzp))
    # one unzip per 8 outputs when the row pairs' columns come in 8s (a lone 4 or 2: per 4, 2)
    if blocks % 4 == 0:
        assert len(uzp) == ep * hp // 8
    _, pieces = requant_code(p, free_vregs(p), 64)
    for row in pieces:
        assert [off for _, _, off in row] == [sum(n for _, n, _ in row[:k]) for k in range(len(row))]
        assert sum(n for _, n, _ in row) == hp and all(n in (2, 4, 8) for _, n, _ in row)
