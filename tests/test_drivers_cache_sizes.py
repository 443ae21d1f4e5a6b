"""ts_context_set_cache_sizes: the cache blocks re-derived at run time for the caller's L1D / L2
(drivers/src/ts_blocks.c) under qemu-aarch64 -cpu max (tests/c/drv_cache_sizes.c): the run-time
rule reproduces the generator's blocks at the generator's sizes for every path; at L1D 64 KiB /
L2 1 MiB every path's blocks are the largest that fit (checked here by hand); the sizes change
no result (int8 requantized and int32 equal to an int64 reference, fp32 within its bound of a
double reference and the same bits at every size, B packed in the call and prepacked); bad
sizes -> TS_EINVAL with a reason. Also: the generated table carries the sizes the blocks
assume (gen.blocking cache_sizes) and the bench program passes a core's sizes (cache=)."""
from __future__ import annotations

import re

import pytest

import kernel_build
from cross import TEST_C, compile_aarch64, run_qemu
from gen.blocking import run_time_facts
from gen.cores import MIDR
from gen.isa import INSTRUCTIONS, TYPE_BYTES
from test_drivers_api import manifest_paths

KIB = 1024


@pytest.fixture(scope="module")
def v86(tmp_path_factory):
    return kernel_build.cached_output(tmp_path_factory, "v86")[0]


# Fake /sys/devices/system/cpu/cpuN/cache trees: {name: [(level, type, size file text)]}, and
# what ts_cache_sizes_in must make of them (return code, L1D, L2; 0 0 when refused).
SYSFS = {
    "n2": ([(1, "Data", "64K\n"), (1, "Instruction", "64K\n"), (2, "Unified", "1024K\n"),
            (3, "Unified", "32768K\n")], (0, 64 * KIB, 1024 * KIB)),
    "mega": ([(1, "Data", "32K\n"), (2, "Unified", "2M\n")], (0, 32 * KIB, 2048 * KIB)),
    "garbage": ([(1, "Data", "64K\n"), (2, "Unified", "12Q\n")], (-1, 0, 0)),
    "no_l2": ([(1, "Instruction", "64K\n"), (1, "Data", "64K\n")], (-1, 0, 0)),
    "missing": ([], (-1, 0, 0)),
}


def make_sysfs(root):
    for name, (caches, _) in SYSFS.items():
        (root / name).mkdir()
        for i, (level, kind, size) in enumerate(caches):
            d = root / name / f"index{i}"
            d.mkdir()
            (d / "level").write_text(f"{level}\n")
            (d / "type").write_text(f"{kind}\n")
            (d / "size").write_text(size)


@pytest.fixture(scope="module")
def harness(v86, tmp_path_factory):
    sources = sorted(v86.glob("*.c")) + sorted(v86.glob("*.S")) + [TEST_C / "drv_cache_sizes.c"]
    return compile_aarch64(sources, tmp_path_factory.mktemp("bin") / "drv_cache_sizes",
                           includes=[v86], flags=["-std=c99", "-Werror"])


@pytest.fixture(scope="module")
def harness_output(harness, tmp_path_factory):
    binary = harness
    root = tmp_path_factory.mktemp("sysfs")
    make_sysfs(root)
    return run_qemu(binary, root, *SYSFS, cpu="max", check=False, timeout=900)


def test_sysfs_sizes_read_as_linux_writes_them(harness_output):
    """ts_cache_sizes_in (ts_cache_sysfs.c) on fake trees: K and M suffixes, the Data / Unified
    caches of levels 1 and 2 only; an unparsable size or a missing level -> TS_EINVAL (-1)."""
    got = {f[1]: (int(f[2]), int(f[3]), int(f[4])) for f in
           (line.split() for line in harness_output.stdout.splitlines() if line.startswith("sysfs "))}
    assert got == {name: want for name, (_, want) in SYSFS.items()}


def test_sizes_change_blocks_not_results(harness_output):
    proc = harness_output
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), proc.stdout[-3000:]


def printed_blocks(stdout: str) -> dict:
    return {(sym, cls): tuple(map(int, v)) for sym, cls, *v in
            (line.split()[1:] for line in stdout.splitlines() if line.startswith("blocks "))}


def test_blocks_at_1mib_are_the_largest_that_fit(harness_output, v86):
    """By hand (Low et al.'s rules, gen/blocking.py): KC the most k-steps whose B micro-panel
    fills half of the 64 KiB L1D; MC the most panels whose KC-deep A block fills half of the
    1 MiB L2; the unsplit K, where it follows L2, the most k-steps for which MC panels and one
    B panel fit the whole L2."""
    blocks = printed_blocks(harness_output.stdout)
    elem_of = {p["symbol"]: TYPE_BYTES[INSTRUCTIONS[p["instruction"]].a_type]
               for paths in manifest_paths(v86).values() for p in paths}
    shape = {p["symbol"]: (p["ep"], p["hp"], p["lp"])
             for paths in manifest_paths(v86).values() for p in paths}
    assert len(blocks) >= 10
    l1, l2 = 64 * KIB, 1024 * KIB
    for (sym, cls), (kc, mc, kw) in blocks.items():
        if sym not in shape:
            continue                                       # a kernel variant: its own tile
        ep, hp, lp = shape[sym]
        step = lp * elem_of[sym]
        assert kc * hp * step <= l1 // 2 < (kc + 1) * hp * step, (sym, cls)
        assert mc * ep * kc * step <= l2 // 2 < (mc + 1) * ep * kc * step, (sym, cls)
        assert kw == kc or (mc * ep + hp) * kw * step <= l2 < (mc * ep + hp) * (kw + 1) * step
    # int8 smmla 8x8x8 (the prefill path), ooo class: 32 KiB / 64 B = 512 k-steps; 512 KiB /
    # (512 * 64 B) = 16 panels; 1 MiB / (136 rows * 8 B) = 963 k-steps (512 KiB L2: 8 / 910)
    # (the ooo class runs its own variant of that tile: gen/strip_pipe.py)
    assert blocks["ts_gemm_s8s32_smmla_8x8x8_ooo", "ooo"] == (512, 16, 963)


def test_table_carries_the_sizes_the_blocks_assume(v86):
    text = (v86 / "ts_dispatch.c").read_text()
    ooo = run_time_facts("ooo", "smmla", 8, 8, 8)
    assert ooo == (64 * KIB, 512 * KIB, 1, 1)                                   # A710
    assert run_time_facts("generic", "smmla", 8, 8, 8)[:2] == (32 * KIB, 128 * KIB)  # A55
    assert run_time_facts("generic", "fmopa_f32", 32, 32, 4) == (0, 0, 0, 0)    # SME: none
    assert "TS_CORE_OOO,\n      NULL, NULL,\n      { { NULL, NULL, NULL, 0 } },\n      " \
        f"{ooo[0]}, {ooo[1]}, {ooo[2]}, {ooo[3]},\n" in text     # then the strip entry


# MIDR_EL1 values QEMU reports for a core (gen/cores.py MIDR), and the L1D / L2 the library's
# table gives that part (gen/cores.py MEMORY: Neoverse N2 64 KiB / 1 MiB, Cortex-A710 64 KiB /
# 512 KiB, the out-of-order class's own blocks)
@pytest.mark.parametrize("core,sizes,cls", [("neoverse-n2", (64 * KIB, 1024 * KIB), "ooo"),
                                            ("cortex-a710", (64 * KIB, 512 * KIB), "ooo"),
                                            ("neoverse-v1", (64 * KIB, 1024 * KIB), "ooo"),
                                            ("cortex-a510", (32 * KIB, 256 * KIB), "inorder"),
                                            ("cortex-a55", (32 * KIB, 128 * KIB), "inorder")])
def test_calls_without_sizes_get_the_known_cores_blocks(v86, harness, core, sizes, cls):
    """A call that passes no cache sizes runs, on a core whose part number the generated table
    names, the blocks for that core's caches (ts_blocks.c ts_select_sized_path); on a core it
    does not know (QEMU max: implementer 0), the path's own. Checked by hand against
    gen/blocking.py's rules (the same as test_blocks_at_1mib_are_the_largest_that_fit). The
    class of the kernel and the caches of its blocks come from one MIDR part (ts_cpu_cores): a
    row of another class, or blocks of another core's caches, would mean the two disagree."""
    # A element bytes by kernel name without its tile (a core-class variant's is its main's)
    elem_of = {re.sub(r"_\d+x\d+x\d+.*$", "", p["symbol"]):
               TYPE_BYTES[INSTRUCTIONS[p["instruction"]].a_type]
               for paths in manifest_paths(v86).values() for p in paths}

    def tile(sym):
        """(ep, hp, lp, A element bytes) from a kernel's name: ..._<ep>x<hp>x<lp>[_<class>]"""
        m = re.search(r"_(\d+)x(\d+)x(\d+)", sym)
        return (*map(int, m.groups()), elem_of[sym[:m.start()]])
    for cpu, (l1, l2) in ((f"max,midr={MIDR[core]:#x}", sizes), ("max", (None, None))):
        out = run_qemu(harness, "selected", cpu=cpu).stdout
        rows = [line.split()[1:] for line in out.splitlines() if line.startswith("selected ")]
        assert len(rows) >= 8, out
        table = (v86 / "ts_dispatch.c").read_text()
        if l2 is not None:      # its class's variants where the build has some (dispatch rows)
            assert {r[2] for r in rows} <= {cls, "generic"}, (core, rows)
            assert (cls in {r[2] for r in rows}) == (f"TS_CORE_{cls.upper()},\n" in table), core
        for _, sym, _, kc, mc, kw in rows:
            kc, mc, kw = int(kc), int(mc), int(kw)
            if l2 is None:
                # the path's own blocks, as the generated table has them
                assert f"{kc}, {mc}, {kw}," in table, (cpu, sym)
                continue
            ep, hp, lp, elem = tile(sym)
            step = lp * elem
            assert kc * hp * step <= l1 // 2 < (kc + 1) * hp * step, (cpu, sym)
            assert mc * ep * kc * step <= l2 // 2 < (mc + 1) * ep * kc * step, (cpu, sym)
            assert kw == kc or (mc * ep + hp) * kw * step <= l2 < (mc * ep + hp) * (kw + 1) * step
        if l2 is not None:
            # the core named in a context (ts_context_set_cpu) on a core QEMU does not name:
            # the same kernels and blocks as detection gives, with no MIDR read
            named = run_qemu(harness, "selected", core, cpu="max").stdout
            assert [line.split()[1:] for line in named.splitlines()
                    if line.startswith("selected ")] == rows, (core, named)
        if core == "neoverse-n2" and l2 is not None:
            assert ("ts_gemm_s8s32_smmla_8x8x8_ooo", "ooo", "512", "16", "963") in \
                {(r[1], r[2], r[3], r[4], r[5]) for r in rows}
