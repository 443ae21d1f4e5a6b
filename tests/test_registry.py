"""The registry of GEMM types (gen/registry.py) against everything derived from it or that must
agree with it: every entry is generated (its kernels exist on some ARCH, its Armv8.0 path on
every ARCH), dispatched (the generated ts_dispatch.c has its table with each kernel), declared
(tilesmith.h: type macro, entry points, K bounds, feature bits), tested (the C harnesses call
every entry point; the API test prints the type) and benchmarked (bench paths cover its chain,
bench/workloads.c runs its dtype). The walk is also run on deliberately incomplete copies of
the registry to show it fails."""
from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from bench import workloads
from cross import ROOT, TEST_C
from gen.cores import CORE_CLASSES
from gen import registry
from gen.drivers import DRIVERS, apply_prefix, render_drivers
from gen.emit import emit_kernel
from gen.generate_cli import generate
from gen.isa import ARCH_LEVELS, GENERATED, INSTRUCTIONS
from gen.tile_policy import solve

HEADER = (DRIVERS / "include" / "tilesmith.h").read_text()
HARNESSES = "\n".join(p.read_text() for p in sorted(TEST_C.glob("drv_*.c")))
API_HARNESS = (TEST_C / "drv_api_gemm.c").read_text()
BENCH_C = (ROOT / "bench" / "workloads.c").read_text()
CPU_C = (DRIVERS / "src" / "ts_cpu.c").read_text()


@pytest.fixture(scope="module")
def v86_dispatch(tmp_path_factory):
    """The generated ts_dispatch.c of the v86 build."""
    out = tmp_path_factory.mktemp("v86")
    render_drivers(json.loads(generate("v86")["manifest.json"]), out)
    return (out / "ts_dispatch.c").read_text()


def problems(types, dispatch_text, *, header=HEADER, harnesses=HARNESSES, api=API_HARNESS,
             bench_c=BENCH_C, bench_paths=None, cpu_c=CPU_C):
    """Everything an incomplete registry entry lacks, one line per problem."""
    bench_paths = workloads.PATHS if bench_paths is None else bench_paths
    out = []
    for t in types:
        where = f"GEMM type {t.key}"
        # generated
        for p in t.chain:
            if not any(p.instruction in GENERATED[a] for a in ARCH_LEVELS):
                out.append(f"{where}: {p.instruction} is generated on no ARCH")
        if not any(p.instruction in GENERATED["v8"] for p in t.chain):
            out.append(f"{where}: no path generated on every ARCH (v8)")
        # dispatched (v86 has every instruction a chain names, checked above)
        table = re.search(rf"static const ts_path paths_{t.key}\[\] = \{{(.*?)\}};",
                          dispatch_text, re.S)
        if table is None:
            out.append(f"{where}: no dispatch table")
        else:
            rows = re.findall(r"\{ TS_GEMM_(\w+), \"(\w+)\".*?TS_CORE_(\w+),", table.group(1),
                              re.S)
            insts = [next(i for i in INSTRUCTIONS if f"_{INSTRUCTIONS[i].mnemonic}_" in s
                          and (i != "fmla_f32" or "_f32_" in s)) for _, s, _ in rows]
            # an instruction's core-class variants (kernel variants, symbol suffix _<class>,
            # and block variants, the generic symbol) come just before its generic kernel:
            # one entry per instruction once they are folded
            assert all(cls.lower() in (*CORE_CLASSES, "generic") for _, _, cls in rows)
            generic = [i for (_, sym, cls), i in zip(rows, insts) if cls == "GENERIC"
                       and not any(sym.endswith(f"_{c}") for c in CORE_CLASSES)]
            folded = [i for j, i in enumerate(insts) if j == 0 or insts[j - 1] != i]
            if folded != generic:
                out.append(f"{where}: class variants not next to their generic kernel: {rows}")
            insts = generic
            want = [p.instruction for p in t.chain if p.instruction in GENERATED["v86"]]
            if insts != want or any(m != t.macro for m, _, _ in rows):
                out.append(f"{where}: dispatch table {rows} != chain {want}")
        # declared
        if not re.search(rf"#define TS_GEMM_{t.macro}\b", header):
            out.append(f"{where}: TS_GEMM_{t.macro} not in tilesmith.h")
        for entry in t.entry_points:
            if not re.search(rf"\bts_{entry}\s*\(", header):
                out.append(f"{where}: ts_{entry} not declared in tilesmith.h")
        for macro in t.max_k:
            if not re.search(rf"#define TS_{macro}\b", header):
                out.append(f"{where}: TS_{macro} not in tilesmith.h")
        for p in t.chain:
            feature = INSTRUCTIONS[p.instruction].feature
            if feature is not None and not re.search(
                    rf"#define TS_FEAT_{registry.feature_macro(feature)}\s+"
                    rf"{registry.FEATURE_BITS.get(feature, -1)}u\b", header):
                out.append(f"{where}: feature bit TS_FEAT_{registry.feature_macro(feature)} "
                           f"missing or not {registry.FEATURE_BITS.get(feature)}")
            if feature is not None and f"TS_FEAT_{registry.feature_macro(feature)};" not in cpu_c:
                out.append(f"{where}: ts_cpu.c never detects {feature}")
        # tested
        for entry in t.entry_points:
            if not re.search(rf"\bts_{entry}\s*\(", harnesses):
                out.append(f"{where}: no C harness calls ts_{entry}")
        if not t.test_label or f" {t.test_label}=%s" not in api:
            out.append(f"{where}: the API harness does not print its kernel "
                       f"({t.test_label or 'no test_label'})")
        # benchmarked
        if not t.bench_dtype or t.bench_dtype not in bench_paths:
            out.append(f"{where}: no bench paths")
        else:
            ran = [p.instruction for p in bench_paths[t.bench_dtype]]
            if sorted(ran) != sorted(p.instruction for p in t.chain):
                out.append(f"{where}: bench paths {ran} do not cover the chain")
            if f'"{t.bench_dtype}"' not in bench_c:
                out.append(f"{where}: bench/workloads.c does not run {t.bench_dtype}")
            if not t.bench_shapes:
                out.append(f"{where}: no bench workload")
    return out


def test_every_entry_is_generated_dispatched_declared_tested_and_benchmarked(v86_dispatch):
    assert problems(registry.GEMM_TYPES, v86_dispatch) == []


def test_walk_fails_on_incomplete_entries(v86_dispatch):
    s8 = registry.BY_KEY["s8"]
    broken = (
        replace(s8, key="s8x", macro="S8X"),                              # no table, no macro
        replace(s8, entry_points=s8.entry_points + ("gemm_s8_nothing",)),  # undeclared, untested
        replace(s8, bench_dtype="", test_label=""),                       # not benched/tested
        replace(s8, chain=s8.chain[:2]),                                  # no Armv8.0 path
        replace(s8, max_k=("GEMM_S8_NO_MAX_K",)),                         # undeclared bound
    )
    found = problems(broken, v86_dispatch)
    for needle in ("s8x: no dispatch table", "TS_GEMM_S8X not in tilesmith.h",
                   "ts_gemm_s8_nothing not declared", "no C harness calls ts_gemm_s8_nothing",
                   "does not print its kernel", "s8: no bench paths",
                   "no path generated on every ARCH", "TS_GEMM_S8_NO_MAX_K not in"):
        assert any(needle in line for line in found), (needle, found)
    # a header or a harness that lost a declaration / call is caught the same way
    lost = HEADER.replace("ts_gemm_bf16_prepacked", "ts_gemm_bf16_gone")
    assert any("ts_gemm_bf16_prepacked not declared" in line
               for line in problems(registry.GEMM_TYPES, v86_dispatch, header=lost))
    undetected = CPU_C.replace("f |= TS_FEAT_I8MM;", "")
    assert any("never detects i8mm" in line
               for line in problems(registry.GEMM_TYPES, v86_dispatch, cpu_c=undetected))
    bench = dict(workloads.PATHS)
    bench["s8"] = bench["s8"][:2]
    assert any("do not cover the chain" in line
               for line in problems(registry.GEMM_TYPES, v86_dispatch, bench_paths=bench))


def test_check_registry_rejects_inconsistent_entries():
    s8 = registry.BY_KEY["s8"]
    wrong_pack = replace(s8, chain=(registry.KernelPath("smlal", "s8", "s8", "x"),))
    with pytest.raises(ValueError, match="A packed as s8"):
        registry.check_registry((wrong_pack,))
    no_baseline = replace(s8, chain=s8.chain[:1])
    with pytest.raises(ValueError, match="last path must run on Armv8.0"):
        registry.check_registry((no_baseline,))
    with pytest.raises(ValueError, match="need a K bound"):
        registry.check_registry((replace(s8, max_k=()),))
    with pytest.raises(ValueError, match="unknown instruction"):
        registry.check_registry((replace(s8, chain=(registry.KernelPath("nope", "s8", "s8", "x"),)),))


def test_bench_and_test_paths_come_from_the_registry():
    for t in registry.GEMM_TYPES:
        assert [p.instruction for p in workloads.PATHS[t.bench_dtype]] == \
            [p.instruction for p in reversed(t.chain)]


def test_prefix_rewrite_is_whole_identifier():
    text = 'ts_gemm_f32(TS_OK); counts_x = tsx_y; "ts_pack.h" TS_FEAT_I8MM my_ts_z'
    assert apply_prefix(text, "acme_") == \
        'acme_gemm_f32(ACME_OK); counts_x = tsx_y; "acme_pack.h" ACME_FEAT_I8MM my_ts_z'


def test_fp16_kernel_emits_with_never():
    """emit.py derives the C element size and the .arch line from the instruction (fp16 has
    2-byte results and needs armv8.2-a+fp16)."""
    kernel = emit_kernel(solve("fmla_f16"), "ts_", "never")
    assert ".arch armv8.2-a+fp16" in kernel.text
