"""Run-time kernel variants per core class (gen.cores.CORE_CLASSES, drivers/src/ts_cpu.c), run
under qemu-aarch64 on CPU models of each class (tests/c/drv_variants.c): the class read from
MIDR_EL1, the MIDR part table, what each CPU name selects (the engine's ts_context_set_cpu
path), that every variant of an instruction gives the same bits (and int paths the reference),
and which packed handles a prepacked call accepts when another variant runs."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cross import ROOT, TEST_C, compile_aarch64, run_qemu
from gen import registry
from gen.cores import CORE_CLASSES, CPU_NAMES, MIDR, core_class
from gen.isa import INSTRUCTIONS

FEAT = {registry.feature_macro(f): bit for f, bit in registry.FEATURE_BITS.items()}
CLASS_NUM = {"generic": 0, "ooo": 1, "inorder": 2}     # ts_core_class
# MIDR_EL1 values and their class, restated from the Arm TRMs ("MIDR_EL1, Main ID Register":
# implementer 0x41, part numbers below); qemu's values measured with `mrs x0, midr_el1`.
MIDRS = {
    0x410FD034: "inorder",   # Cortex-A53 r0p4 (qemu cortex-a53)
    0x412FD050: "inorder",   # Cortex-A55 r2p0
    0x410FD460: "inorder",   # Cortex-A510 r0p0
    0x411FD070: "ooo",       # Cortex-A57 r1p0 (qemu cortex-a57)
    0x414FD0C1: "ooo",       # Neoverse N1 r4p1 (qemu neoverse-n1)
    0x414FD0B1: "ooo",       # Cortex-A76 r4p1 (qemu cortex-a76)
    0x410FD490: "ooo",       # Neoverse N2 r0p0
    0x411FD401: "ooo",       # Neoverse V1 r1p1
    0x410FD470: "ooo",       # Cortex-A710 r0p0
    0x000F0510: "generic",   # qemu max: implementer 0
    0x410FD990: "generic",   # an Arm part the table does not know
    0x611F0221: "generic",   # Apple (implementer 0x61)
    0x51AF8014: "generic",   # Qualcomm Kryo (implementer 0x51)
}
# The Arm cores ts_context_set_cpu names, restated: name -> (MIDR_EL1 part number, class).
# Part numbers from Linux arch/arm64/include/asm/cputype.h ARM_CPU_PART_* (the TRMs' MIDR_EL1);
# in-order: the little cores (Cortex-A35, A53, A55, A510, A520), every other one out-of-order.
ARM_CORES = {
    "cortex-a35": (0xD04, "inorder"), "cortex-a53": (0xD03, "inorder"),
    "cortex-a55": (0xD05, "inorder"), "cortex-a510": (0xD46, "inorder"),
    "cortex-a520": (0xD80, "inorder"), "cortex-a57": (0xD07, "ooo"),
    "cortex-a72": (0xD08, "ooo"), "cortex-a73": (0xD09, "ooo"), "cortex-a75": (0xD0A, "ooo"),
    "cortex-a76": (0xD0B, "ooo"), "neoverse-n1": (0xD0C, "ooo"), "cortex-a77": (0xD0D, "ooo"),
    "neoverse-v1": (0xD40, "ooo"), "cortex-a78": (0xD41, "ooo"), "cortex-x1": (0xD44, "ooo"),
    "cortex-a710": (0xD47, "ooo"), "cortex-x2": (0xD48, "ooo"), "neoverse-n2": (0xD49, "ooo"),
    "cortex-a715": (0xD4D, "ooo"), "cortex-x3": (0xD4E, "ooo"), "neoverse-v2": (0xD4F, "ooo"),
    "cortex-a720": (0xD81, "ooo"), "cortex-x4": (0xD82, "ooo"),
}
# The L1D / L2 bytes of the cores whose caches the blocks follow (restated from the TRMs' shipping
# configurations README "Execution context" names: N2 and V1 64 KB / 1 MB, A710 64 KB / 512 KB,
# A510 32 KB / 256 KB, A55 32 KB / 128 KB); every other core: none (0, 0)
CORE_CACHES = {"neoverse-n2": (64 << 10, 1 << 20), "neoverse-v1": (64 << 10, 1 << 20),
               "cortex-a710": (64 << 10, 512 << 10), "cortex-a510": (32 << 10, 256 << 10),
               "cortex-a55": (32 << 10, 128 << 10)}
NAMES = (*ARM_CORES, "generic")      # every name a context may set besides "auto"


def name_class(name):
    return ARM_CORES[name][1] if name in ARM_CORES else "generic"


# qemu CPU model -> (features it reports, class of its MIDR); QEMU 7.2's neoverse-n1 and
# cortex-a76 have dotprod and fp16 without FHM (as tests/test_drivers_api.py CPU_FEATURES)
N1 = FEAT["DOTPROD"] | FEAT["FP16"]
QEMU_CPUS = {"cortex-a53": (0, "inorder"), "cortex-a57": (0, "ooo"),
             "neoverse-n1": (N1, "ooo"), "cortex-a76": (N1, "ooo"),
             "max": (FEAT["DOTPROD"] | FEAT["I8MM"] | FEAT["BF16"] | FEAT["FP16"] | FEAT["FHM"]
                     | FEAT["SME"], "generic")}
# harness label -> registry type key: every GEMM type (the harness prints each one's selection)
LABELS = {t.test_label: t.key for t in registry.GEMM_TYPES}


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen_v86")
    subprocess.run([sys.executable, "-m", "gen", "generate", "--arch", "v86", "--out", str(out)],
                   cwd=ROOT, check=True, capture_output=True, text=True)
    sources = sorted(out.glob("*.c")) + sorted(out.glob("*.S")) + [TEST_C / "drv_variants.c"]
    binary = compile_aarch64(sources, tmp_path_factory.mktemp("bin") / "drv_variants",
                             includes=[out], flags=["-std=c99", "-Werror"])
    return json.loads((out / "manifest.json").read_text()), binary


def expected(manifest, type_key, usable, cls):
    """The symbol a call must run (restated from the manifest): the first instruction of the
    type's chain the features allow; its variant for `cls` if the build has one."""
    kernels = manifest["kernels"]
    for path in registry.BY_KEY[type_key].chain:
        feature = INSTRUCTIONS[path.instruction].feature
        if feature is not None and not FEAT[registry.feature_macro(feature)] & usable:
            continue
        for k in kernels:
            if k["instruction"] == path.instruction and k["core_class"] == cls:
                return k["symbol"]
        return next(k["symbol"] for k in kernels
                    if k["instruction"] == path.instruction and k["role"] == "main")
    raise AssertionError("no path")


def test_build_has_class_variants_only_where_they_differ(build):
    manifest, _ = build
    variants = [k for k in manifest["kernels"] if k["role"] == "core_class"]
    assert {k["core_class"] for k in variants} <= set(CORE_CLASSES)
    main = {k["instruction"]: k for k in manifest["kernels"] if k["role"] == "main"}
    for k in variants:
        assert k["symbol"].endswith("_" + k["core_class"])
    # v86 today: bfmmla's generic 8x8x4 tile has 16 accumulators, Neoverse V1 needs 20
    # (latency 5 x 4 per cycle): the out-of-order class gets its 12x8x4; every other generic
    # tile already has enough accumulators for N2 / V1 (gen.generate_cli.gains_on_class);
    # the requantising instructions keep the generic tile with the class's pipelined requant
    # strip (gen/strip_pipe.py, gen.generate_cli.pipelined_family)
    assert sorted((k["instruction"], k["core_class"]) for k in variants) == [
        ("bfmmla", "ooo"), ("sdot", "ooo"), ("smmla", "ooo"), ("usmmla", "ooo")]
    assert set(main) >= {k["instruction"] for k in variants}


@pytest.mark.parametrize("cpu", list(QEMU_CPUS))
def test_variant_choice_per_core(cpu, build):
    manifest, binary = build
    usable, cls = QEMU_CPUS[cpu]
    proc = run_qemu(binary, *[hex(m) for m in MIDRS], cpu=cpu, check=False)
    out = proc.stdout
    assert proc.returncode == 0 and out.rstrip().endswith("failures 0"), out[-3000:]
    lines = out.splitlines()
    assert lines[0] == f"features={usable} class={CLASS_NUM[cls]}"
    for midr, want in MIDRS.items():
        assert f"midr={midr:#x} class={CLASS_NUM[want]}" in lines
    # the one table of names, parts and classes (ts_cpu_cores) is the restated one
    cores = [dict(item.split("=", 1) for item in line.split()) for line in lines
             if line.startswith("core=")]
    assert {c["core"]: (int(c["part"], 16), int(c["class"])) for c in cores} == \
        {name: (part, CLASS_NUM[c]) for name, (part, c) in ARM_CORES.items()}
    assert {c["core"]: (int(c["l1d"]), int(c["l2"])) for c in cores} == \
        {name: CORE_CACHES.get(name, (0, 0)) for name in ARM_CORES}
    sel = {line.split()[0][4:]: dict(item.split("=", 1) for item in line.split()[1:])
           for line in lines if line.startswith("cpu=")}
    for name in (*NAMES, "auto"):
        c = cls if name == "auto" else name_class(name)
        assert sel[name]["rc"] == "0"
        for label, key in LABELS.items():
            assert sel[name][label] == expected(manifest, key, usable, c), (name, label)
    # a context naming each CPU (ts_context_set_cpu) runs that name's class; "auto" (and a
    # rejected name, which leaves the context at "auto") the class of the MIDR qemu reports
    ctx = {line.split()[0][4:]: dict(item.split("=", 1) for item in line.split()[1:])
           for line in lines if line.startswith("ctx=")}
    assert set(ctx) == {*NAMES, "auto", "cortex-a99"}
    for name, want_rc in [(n, "0") for n in (*NAMES, "auto")] + [("cortex-a99", "-1")]:
        c = name_class(name) if name in NAMES else cls
        assert ctx[name]["rc"] == want_rc
        for label, key in LABELS.items():
            assert ctx[name][label] == expected(manifest, key, usable, c), (name, label)
    for bad in ("cortex-a99", "Generic", ""):
        assert sel[bad]["rc"] == "-1" and all(sel[bad][label] == "NULL" for label in LABELS)
    auto = dict(item.split("=", 1) for item in next(l for l in lines if l.startswith("auto ")).split()[1:])
    for label, key in LABELS.items():
        assert auto[label] == expected(manifest, key, usable, cls)
    # every instruction the CPU runs that has an ooo variant was compared with it, bit for bit
    same = [line for line in lines if line.startswith("same ")]
    runnable = [k for k in manifest["kernels"] if k["role"] == "core_class"
                and (k["feature"] is None or FEAT[registry.feature_macro(k["feature"])] & usable)]
    for k in runnable:
        assert any(line.split()[3] == k["symbol"] or line.split()[2] == k["symbol"] for line in same), k["symbol"]
    # a variant's last A panel of up to a generic tile's rows runs on that generic kernel (the
    # same instruction and layouts: bfmmla 12x8x4_ooo -> 8x8x4 for 1..8 rows); generic paths
    # have no tail path. The bit-for-bit comparison above (M = 31: 7 rows left) covers it.
    tails = {line.split()[1]: dict(item.split("=") for item in line.split()[2:])
             for line in lines if line.startswith("tail ")}
    main = {k["instruction"]: k for k in manifest["kernels"] if k["role"] == "main"}
    for k in manifest["kernels"]:
        if k["symbol"] not in tails or k["role"] == "gemv":
            continue
        generic = main[k["instruction"]]
        want = {str(r): (generic["symbol"] if k["role"] == "core_class" and r <= generic["ep"] < k["ep"]
                         else "NULL") for r in range(1, k["ep"])}
        assert tails[k["symbol"]] == want, k["symbol"]
    assert any(k["role"] == "core_class" for k in manifest["kernels"] if k["symbol"] in tails)
    # a last B panel of `cols` columns runs on the narrowest column-tail kernel (gen/ntail.py,
    # manifest role "ntail") of the path's kernel that holds them; a core-class variant of the
    # generic tile has its generic kernel's (the same panels), one of another tile and paths
    # without one keep their tile (fp32 8x12: 8x8 for 1..8 columns)
    ntails = {line.split()[1]: dict(item.split("=") for item in line.split()[2:])
              for line in lines if line.startswith("ntail ")}
    served = {}
    for k in manifest["kernels"]:
        if k["role"] == "ntail":
            served.setdefault(k["serves"], []).append(k)
    generic_of = {k["instruction"]: k for k in manifest["kernels"] if k["role"] == "main"}
    for k in manifest["kernels"]:
        if k["symbol"] not in ntails:
            continue
        owner = k
        if k["role"] == "core_class" and all(
                k[x] == generic_of[k["instruction"]][x] for x in ("ep", "hp", "lp")):
            owner = generic_of[k["instruction"]]
        mine = sorted(served.get(owner["symbol"], []), key=lambda t: t["hp"])
        want = {str(c): next((t["symbol"] for t in mine if c <= t["hp"] and t["ep"] == k["ep"]),
                             "NULL") for c in range(1, k["hp"])}
        assert ntails[k["symbol"]] == want, k["symbol"]
    assert ntails["ts_gemm_f32_fmla_8x12x1"] == {
        str(c): "ts_gemm_f32_fmla_8x8x1" if c <= 8 else "NULL" for c in range(1, 12)}
    handles = [line for line in lines if line.startswith("handle ")]
    assert any(line.endswith("rc=0") for line in handles)
    if usable:   # another instruction's layout (sdot 8x12x4 vs smmla 8x8x8, smlal): rejected
        assert any(line.endswith("rc=-1") for line in handles)


def test_cpu_names_of_the_generator_are_core_names():
    """Every make gen CPU= name is a name a context may set, of the same class, and the MIDR
    the bench reports for it (gen/cores.py MIDR) is that core's part."""
    assert set(CPU_NAMES) <= set(NAMES)
    for name in CPU_NAMES:
        assert name_class(name) == core_class(name), name
    for name, midr in MIDR.items():
        assert midr >> 24 == 0x41 and (midr >> 4) & 0xFFF == ARM_CORES[name][0], name


@pytest.mark.parametrize("name", NAMES)
def test_each_cpu_name_selects_what_its_midr_detection_selects(name, build):
    """ts_context_set_cpu(name) runs, for every GEMM type, the kernel a call without a context
    runs on a core reporting that name's MIDR_EL1 (qemu max with the part's MIDR, r0p0; for
    "generic" an Arm part no table knows): the engine's choice equals the run-time detection's,
    and both the manifest's kernel for that class."""
    manifest, binary = build
    part = ARM_CORES[name][0] if name in ARM_CORES else 0xD99
    midr = 0x410F0000 | part << 4
    proc = run_qemu(binary, "names", cpu=f"max,midr={midr:#x}", check=False)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), proc.stdout[-3000:]
    usable, _ = QEMU_CPUS["max"]
    assert lines[0] == f"features={usable} class={CLASS_NUM[name_class(name)]}"
    ctx = {line.split()[0][4:]: dict(item.split("=", 1) for item in line.split()[1:])
           for line in lines if line.startswith("ctx=")}
    auto = dict(item.split("=", 1) for item in next(l for l in lines if l.startswith("auto ")).split()[1:])
    assert ctx[name]["rc"] == "0" and ctx["cortex-a99"]["rc"] == "-1"
    for label, key in LABELS.items():
        want = expected(manifest, key, usable, name_class(name))
        assert ctx[name][label] == auto[label] == ctx["auto"][label] == want, (label, ctx[name], auto)


# A CPU= build holds the kernels of its CPU's class only (no generic ones). On a core of another
# class, or one whose MIDR the table does not know (qemu max), they must run as they are: every
# GEMM type and the int8 conv against the harnesses' references (a NULL path here once crashed
# the first call). The qemu CPUs of other classes than the build's, with their features.
CPU_BUILDS = [("v82", "cortex-a55", ["cortex-a57", "neoverse-n1", "max"]),
              ("v86", "neoverse-n2", ["cortex-a53", "max"])]
CPU_BUILD_SHAPES = ["1,1,1", "9,13,17", "17,30,70", "64,64,64"]
ALL_MASK = 0xFFFFFFFF   # every feature the CPU has


@pytest.fixture(scope="module")
def cpu_builds(tmp_path_factory):
    """{(arch, cpu): (manifest, {harness: binary})}: each CPU= build with drv_api_gemm and
    drv_api_conv linked against it."""
    built = {}
    for arch, cpu, _ in CPU_BUILDS:
        out = tmp_path_factory.mktemp(f"gen_{arch}_{cpu}")
        subprocess.run([sys.executable, "-m", "gen", "generate", "--arch", arch, "--cpu", cpu,
                        "--out", str(out)], cwd=ROOT, check=True, capture_output=True, text=True)
        library = sorted(out.glob("*.c")) + sorted(out.glob("*.S"))
        binaries = {name: compile_aarch64(library + [TEST_C / f"{name}.c"],
                                          tmp_path_factory.mktemp("bin") / f"{name}_{cpu}",
                                          includes=[out], flags=["-std=c99", "-Werror"])
                    for name in ("drv_api_gemm", "drv_api_conv")}
        built[(arch, cpu)] = json.loads((out / "manifest.json").read_text()), binaries
    return built


@pytest.mark.parametrize("arch,cpu,qemu_cpu",
                         [(a, c, q) for a, c, qs in CPU_BUILDS for q in qs])
def test_cpu_build_runs_on_cores_of_other_classes(arch, cpu, qemu_cpu, cpu_builds):
    manifest, binaries = cpu_builds[(arch, cpu)]
    assert {k["core_class"] for k in manifest["kernels"]} == {core_class(cpu)}
    assert QEMU_CPUS[qemu_cpu][1] != core_class(cpu)
    symbols = {k["symbol"] for k in manifest["kernels"]}
    for name, args in (("drv_api_gemm", CPU_BUILD_SHAPES), ("drv_api_conv", [])):
        proc = run_qemu(binaries[name], str(ALL_MASK), *args, cpu=qemu_cpu, check=False)
        assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), \
            f"{name}: {proc.stdout[-3000:]}\n{proc.stderr[-2000:]}"
        mask_line = next(line for line in proc.stdout.splitlines() if line.startswith("mask="))
        picked = dict(item.split("=", 1) for item in mask_line.split()[1:])
        assert picked and set(picked.values()) <= symbols, mask_line
