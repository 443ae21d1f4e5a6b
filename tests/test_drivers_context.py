"""The execution context (ts_context_*, the _ctx twins) and the blocked macro-kernel under
qemu-aarch64 on cortex-a57, cortex-a53 (Armv8.0), neoverse-n1 (+dotprod) and max (+i8mm, bf16),
every dispatch path forced by the context's feature mask (tests/c/drv_api_ctx.c): results
against independent references at K blocks (every listed remainder), partial tiles and several
M blocks; byte-identical C for the NULL context, the built-in pool with 1-8 threads and a
caller's instrumented parallel_for (every task exactly once); caller workspaces at a guard page
and too small (TS_EINVAL, C untouched); conv2d likewise. Also: the cache blocks each build's
dispatch table carries come from gen.blocking, and the tree builds without pthreads."""
from __future__ import annotations

import json
import re
import subprocess

import pytest

from cross import GCC, ROOT, TEST_C, compile_aarch64, run_qemu
import kernel_build
from gen.blocking import block_sizes, cache_sizes, streams_from_l2, whole_k_steps
from gen.cores import CORE_CLASSES, MEMORY
from gen.drivers import DRIVERS
from gen.epilogue import EPILOGUE_VARIANTS
from gen.isa import INSTRUCTIONS, TYPE_BYTES
from gen.registry import BY_KEY, fused_epilogue
from test_drivers_api import CPU_MASKS, FEAT, manifest_paths

CPUS = {"cortex-a57": CPU_MASKS["cortex-a57"], "cortex-a53": CPU_MASKS["cortex-a57"],
        "neoverse-n1": CPU_MASKS["neoverse-n1"], "max": [0xFFFFFFFF, 1, 0]}


@pytest.fixture(scope="module")
def v86(tmp_path_factory):
    return kernel_build.cached_output(tmp_path_factory, "v86")[0]


@pytest.fixture(scope="module")
def ctx_harness(v86, tmp_path_factory):
    sources = sorted(v86.glob("*.c")) + sorted(v86.glob("*.S")) + [TEST_C / "drv_api_ctx.c"]
    return compile_aarch64(sources, tmp_path_factory.mktemp("bin") / "drv_api_ctx",
                           includes=[v86], flags=["-std=c99", "-Werror"])


@pytest.mark.parametrize("cpu", sorted(CPUS))
def test_context_threads_workspace_and_blocks(cpu, ctx_harness):
    masks = ",".join(str(m) for m in CPUS[cpu])
    proc = run_qemu(ctx_harness, masks, cpu=cpu, check=False, timeout=900)
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), proc.stdout[-3000:]
    assert len(re.findall(r"^mask=\d+ cases \d+ runs \d+$", proc.stdout, re.M)) == len(CPUS[cpu])


# Where the documentation quotes a workspace size (ARCH=v86), the phrase around each number
# (tests/c/drv_doc_figures.c prints the build's value under the same name).
DOC_FIGURES = {
    "drivers/include/tilesmith.h": [
        (r"K = 1280, one thread, ARCH=v86: ([\d,]+) bytes instead of\s+\*\s+([\d,]+)",
         ("int8_m1_prepacked", "int8_m1_full")),
        (r"\(M = 64: ([\d,]+) instead of ([\d,]+)\)", ("int8_m64_prepacked", "int8_m64_full")),
        (r"the M = 1 example: ([\d,]+) bytes", ("int8_m1_prepacked_gemm_layout",)),
        (r"on ARCH=v86: ([\d,]+) bytes instead of ([\d,]+)", ("conv_prepacked", "conv_full")),
    ],
    "README.md": [
        (r"K = 1280 on v86: ([\d,]+) bytes against ([\d,]+); M = 64:\s+([\d,]+) against ([\d,]+)",
         ("int8_m1_prepacked", "int8_m1_full", "int8_m64_prepacked", "int8_m64_full")),
        (r"14×14, v86:\s+([\d,]+) bytes instead of ([\d,]+)", ("conv_prepacked", "conv_full")),
        (r"M = 4096, N = K = 1024 on v86 needs ([\d,]+) bytes", ("int8_m4096_full",)),
    ],
}


def test_documented_workspace_figures(v86, tmp_path):
    """The example workspace sizes of tilesmith.h and the README are this build's."""
    sources = sorted(v86.glob("*.c")) + sorted(v86.glob("*.S")) + [TEST_C / "drv_doc_figures.c"]
    binary = compile_aarch64(sources, tmp_path / "drv_doc_figures", includes=[v86],
                             flags=["-std=c99", "-Werror"])
    built = dict(line.split() for line in run_qemu(binary).stdout.splitlines())
    for doc, figures in DOC_FIGURES.items():
        text = (ROOT / doc).read_text()
        for pattern, names in figures:
            found = re.search(pattern, text)
            assert found, f"{doc}: no figure matching {pattern!r}"
            quoted = {name: found.group(i + 1).replace(",", "") for i, name in enumerate(names)}
            assert quoted == {name: built[name] for name in names}, f"{doc}: {quoted} vs {built}"


@pytest.fixture(scope="module")
def stage_harness(v86, tmp_path_factory):
    sources = sorted(v86.glob("*.c")) + sorted(v86.glob("*.S")) + [TEST_C / "drv_stage_bound.c"]
    return compile_aarch64(sources, tmp_path_factory.mktemp("bin") / "drv_stage_bound",
                           includes=[v86], flags=["-std=c99", "-Werror"])


# smmla (i8mm), sdot and the Armv8.0 smlal path on -cpu max
STAGE_MASKS = [CPU_MASKS["max"][0], FEAT["DOTPROD"], 0]


def test_staging_is_bounded_by_the_blocks(stage_harness):
    """drv_stage_bound.c: with small caches (several K blocks), the workspace of the int8 /
    uint8 requantised and fp16 GEMMs at N = K = 1024 is the same at M = 4096 and M = 2^20 (1
    and 3 threads) and below an int32 copy of C (main before: 18.9 MB at M = 4096, 4.3 GB at
    2^20 on 3 threads); int8 N = 44 at M = 4096, K = 1000 (several K blocks) and at M = 4093,
    K = 320 / 150 (one K block over KC: groups of B panels through the fused kernel's strip
    entry, a tail A panel) on smmla / sdot / smlal, 1 and 3 threads, B packed and prepacked, at
    exactly that workspace before a guard page equals the reference (a strip's parameter step
    zeroed fails it on every path)."""
    proc = run_qemu(stage_harness, ",".join(str(m) for m in STAGE_MASKS), cpu="max",
                    check=False, timeout=300)
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), proc.stdout[-3000:]
    assert f"runs {12 * len(STAGE_MASKS)}" in proc.stdout, proc.stdout[-3000:]


@pytest.fixture(scope="module")
def state_harness(v86, tmp_path_factory):
    sources = sorted(v86.glob("*.c")) + sorted(v86.glob("*.S")) + [TEST_C / "drv_api_thread_state.c"]
    return compile_aarch64(sources, tmp_path_factory.mktemp("bin") / "drv_api_thread_state",
                           includes=[v86], flags=["-std=c99", "-Werror"])


@pytest.mark.parametrize("mode", ["fpcr", "fork"])
def test_pool_threads_compute_as_the_caller(mode, state_harness):
    """drv_api_thread_state.c: with the caller's FPCR rounding upward and flushing to zero, the
    built-in pool's and a caller's pool's threads give the one-thread bits and keep their own
    FPCR after their tasks; after fork() the child's pooled context computes the same bits
    (on the calling thread) and frees without hanging. (Both failed before: review session 6.)"""
    proc = run_qemu(state_harness, mode, cpu="max", check=False, timeout=300)
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), proc.stdout[-3000:]


TABLE_ROW = re.compile(r'"(\w+)", \w+,\n.*\n\s+(\w+), \d+, (\d+), (\d+), (\d+),\n.*\n\s+\w+, TS_CORE_(\w+),')   # fused, params_cols, KC, MC, unsplit K


def table_rows(text: str, key: str) -> list[tuple]:
    """(symbol, fused kernel or NULL, KC, MC, unsplit K, core class) of every path of a GEMM
    type's dispatch table, in order."""
    table = text[text.index(f"paths_{key}[] = {{"):]
    table = table[:table.index("};")]
    return [(sym, fused, int(kc), int(mc), int(kw), cls.lower())
            for sym, fused, kc, mc, kw, cls in TABLE_ROW.findall(table)]


def check_fit(cpu: str, p: dict, kc: int, mc: int, kw: int):
    """The blocks keep a B micro-panel within half of the cores' smallest L1D and an A block
    within half of their smallest L2; K runs whole beyond KC only where every core streams the
    micro-panels from L2 at the kernel's peak and the whole-K A block of MC panels plus a B
    micro-panel fit L2."""
    l1, l2 = cache_sizes(cpu)
    elem = TYPE_BYTES[INSTRUCTIONS[p["instruction"]].a_type]
    assert kc * p["lp"] * p["hp"] * elem <= l1 // 2
    assert mc * p["ep"] * kc * p["lp"] * elem <= l2 // 2 or mc == 1
    assert kw >= kc
    if kw > kc:
        assert streams_from_l2(cpu, p["instruction"], p["ep"], p["hp"], p["lp"])
        assert (mc * p["ep"] + p["hp"]) * kw * p["lp"] * elem <= l2


def test_dispatch_tables_carry_the_cache_blocks(v86):
    """Every generic path of the build's table has gen.blocking's (KC, MC, the longest unsplit
    K) for CPU=generic; just before it, a block variant (the same kernel) for each core class
    whose blocks differ and that has no kernel variant of the instruction, with that class's
    blocks; a kernel variant has its class's blocks. All keep their blocks within the caches
    of the cores they run on."""
    l1, l2 = cache_sizes("generic")
    assert l1 == min(m.l1d.size for m in MEMORY.values())
    text = (v86 / "ts_dispatch.c").read_text()
    manifest = json.loads((v86 / "manifest.json").read_text())
    variants = {(k["symbol"], k["core_class"]): k for k in manifest["kernels"]
                if k["role"] == "core_class"}
    assert variants     # v86: bfmmla_12x8x4_ooo (tests/test_drivers_variants.py)
    block_variants = 0
    for key, paths in manifest_paths(v86).items():
        rows = table_rows(text, key)
        # the fused epilogue is the GEMM type's own (int8 or uint8 C, fp32 biasclamp), where
        # generated
        fused = fused_epilogue(BY_KEY[key])
        for p in paths:
            shape = (p["instruction"], p["ep"], p["hp"], p["lp"])
            at = rows.index(next(r for r in rows if r[0] == p["symbol"] and r[5] == "generic"))
            kc, mc = block_sizes("generic", *shape)
            assert rows[at][2:5] == (kc, mc, whole_k_steps("generic", *shape)), p["symbol"]
            want = f'{p["symbol"]}_{fused}' if fused in EPILOGUE_VARIANTS[p["instruction"]] \
                else "NULL"
            assert rows[at][1] == want, (key, p["symbol"])
            check_fit("generic", p, *rows[at][2:5])
            # block variants (key qdyn: its own loops, no blocks, none), then kernel variants
            classes = [] if key == "qdyn" else [
                c for c in CORE_CLASSES if c not in p["classes"]
                and (*block_sizes(c, *shape), whole_k_steps(c, *shape)) != rows[at][2:5]]
            assert ["ooo"] == classes or key == "qdyn" or p["classes"], p["symbol"]
            before = rows[at - len(classes):at]
            assert [(r[0], r[5]) for r in before] == [(p["symbol"], c) for c in classes]
            for r, c in zip(before, classes):
                assert r[1] == rows[at][1] and r[2:5] == (*block_sizes(c, *shape),
                                                          whole_k_steps(c, *shape))
                check_fit(c, p, *r[2:5])
                block_variants += 1
        for r in rows:
            if (r[0], r[5]) in variants:
                k = variants[r[0], r[5]]
                shape = (k["instruction"], k["ep"], k["hp"], k["lp"])
                assert r[2:5] == (*block_sizes(r[5], *shape), whole_k_steps(r[5], *shape)), r
        # nothing else: the generic paths, their block variants, the kernel variants
        assert len(rows) == sum(1 + len(p["classes"]) for p in paths) + sum(
            1 for r in rows if r[5] != "generic" and (r[0], r[5]) not in variants)
    assert block_variants >= 10


def test_k_split_only_where_l2_cannot_stream_the_micro_panels():
    """gen.blocking.streams_from_l2 by hand: fp32 8x12 moves (8 + 12) * 4 = 80 bytes per k-step
    of 96 MACs; at the A55's 4 fp32 MACs per cycle (1 fmla .4s) that is 24 cycles, 3.3 B/cycle
    against its 16 B/cycle L2 fill: streams, so K=512 runs whole (2 x 256 blocks before). A 1x1
    smmla tile (16 bytes per 8 MACs, 1/8 cycle on N2: 128 B/cycle > 32) does not: KC only."""
    assert streams_from_l2("cortex-a55", "fmla_f32", 8, 12, 1)
    kc, mc = block_sizes("generic", "fmla_f32", 8, 12, 1)
    assert kc < 512 <= whole_k_steps("generic", "fmla_f32", 8, 12, 1)
    assert not streams_from_l2("neoverse-n2", "smmla", 1, 1, 8)
    assert whole_k_steps("neoverse-n2", "smmla", 1, 1, 8) == block_sizes("neoverse-n2", "smmla", 1, 1, 8)[0]


def test_sme_k_runs_whole_while_the_panels_fit_the_l2_assumption():
    """gen.blocking for the SME outer products (ZA holds the accumulators: no L1 reuse to
    buy): K whole while the A block of MC panels and one B panel over it fit SME_L2_BYTES, so
    GEMM 512^3 runs in one K block at every SVL (it ran 2-4 KC blocks before); never below KC;
    past the budget, blocks of KC."""
    from gen.blocking import SME_L2_BYTES
    from gen.isa import SME_INSTRUCTIONS
    tiles = {"fmopa_f32": (2, 2, 4), "bfmopa": (2, 2, 8), "fmopa_f16f32": (2, 2, 8),
             "smopa": (1, 4, 16), "usmopa": (1, 4, 16)}
    assert set(tiles) <= set(SME_INSTRUCTIONS)
    for svl_bits in (128, 256, 512, 1024, 2048):
        s = svl_bits // 32
        for inst, (tr, tc, lp) in tiles.items():
            ep, hp = tr * s, tc * s
            elem = TYPE_BYTES[SME_INSTRUCTIONS[inst].a_type]
            kc, mc = block_sizes("generic", inst, ep, hp, lp)
            kw = whole_k_steps("generic", inst, ep, hp, lp)
            assert kw == max(kc, SME_L2_BYTES // ((mc * ep + hp) * lp * elem)), (inst, svl_bits)
            assert (mc * ep + hp) * kw * lp * elem <= SME_L2_BYTES
            assert kw * lp >= 512, (inst, svl_bits, kw)
            assert kc * lp < 512 or svl_bits < 512              # (KC alone split it)
    # fp32 at SVL 512 by hand: 4 panels of 32 rows + 32 columns, 16 bytes per k-step each
    assert whole_k_steps("generic", "fmopa_f32", 32, 32, 4) == (2 << 20) // (160 * 16) == 819


def test_tree_builds_without_threads(tmp_path):
    """TS_NO_THREADS: no pthreads needed (ts_pool.c has no pthread symbol)."""
    obj = tmp_path / "pool.o"
    subprocess.run([GCC, "-march=armv8-a", "-std=c99", "-O2", "-Wall", "-Wextra", "-Wpedantic",
                    "-Werror", "-DTS_NO_THREADS", "-I", str(DRIVERS / "include"), "-I",
                    str(DRIVERS / "src"), "-c", str(DRIVERS / "src" / "ts_pool.c"), "-o",
                    str(obj)], check=True)
    symbols = subprocess.run(["aarch64-linux-gnu-nm", str(obj)], capture_output=True,
                             text=True, check=True).stdout
    assert "pthread" not in symbols
