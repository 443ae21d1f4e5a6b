"""Public GEMM / conv2d API, packing and runtime dispatch of the generated drivers, run under
qemu-aarch64 on three CPU models (Armv8.0, +dotprod, +i8mm/bf16), every dispatch path forced by
ts_set_feature_mask, results checked in C against independent scalar references
(tests/c/drv_api_*.c). The folders come from the real generator (`python3 -m gen generate`)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cross import ROOT, TEST_C, compile_aarch64, run_qemu
from gen import registry
from gen.isa import INSTRUCTIONS
from gen.drivers import dispatch_paths, render_drivers
from gen.gemv import GEMV_FORMS, GEMV_INSTRUCTIONS

FEAT = {registry.feature_macro(f): bit for f, bit in registry.FEATURE_BITS.items()}
ALL = 0xFFFFFFFF
# What each qemu CPU model reports (QEMU 7.2: cortex-a57 and cortex-a53 Armv8.0, neoverse-n1
# adds dotprod and fp16 (no FHM), max has dotprod, i8mm, bf16, fp16, FHM and SME -- the v86
# builds here have no SME path; tests/test_drivers_sme.py runs the v92 build at every streaming
# vector length).
CPU_FEATURES = {"cortex-a57": 0, "cortex-a53": 0, "neoverse-n1": FEAT["DOTPROD"] | FEAT["FP16"],
                "max": FEAT["DOTPROD"] | FEAT["I8MM"] | FEAT["BF16"] | FEAT["FP16"]
                | FEAT["FHM"] | FEAT["SME"]}
# The core class each model's MIDR_EL1 (measured under this qemu with `mrs x0, midr_el1`)
# belongs to: part numbers from the Arm TRMs (Cortex-A57 0xD07 and Neoverse N1 0xD0C are
# out-of-order, Cortex-A53 0xD03 in-order); "max" reports implementer 0 (0x000f0510), unknown.
CPU_CLASS = {"cortex-a57": "ooo", "cortex-a53": "inorder", "neoverse-n1": "ooo", "max": "generic"}
# Feature masks to run per CPU: every cap that changes some path on that CPU (on max: each
# feature alone, and FHM without FP16 — f16 falls back while f16f32 keeps fmlal).
CPU_MASKS = {"cortex-a57": [ALL], "cortex-a53": [ALL], "neoverse-n1": [ALL, 0],
             "max": [ALL, FEAT["DOTPROD"], FEAT["I8MM"], FEAT["BF16"], FEAT["FP16"],
                     FEAT["FHM"], 0]}
# (ARCH, CPU) pairs: the full v86 build everywhere, the v8 / v82 builds where they differ.
RUNS = [("v86", "cortex-a57"), ("v86", "cortex-a53"), ("v86", "neoverse-n1"), ("v86", "max"),
        ("v8", "max"), ("v82", "neoverse-n1")]
# harness label -> dispatch key, every GEMM type of the registry
TYPES = {t.test_label: t.key for t in registry.GEMM_TYPES}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """{arch: folder} generated on first use."""
    folders = {}

    def get(arch):
        if arch not in folders:
            out = tmp_path_factory.mktemp(f"gen_{arch}")
            subprocess.run([sys.executable, "-m", "gen", "generate", "--arch", arch, "--out",
                            str(out)], cwd=ROOT, check=True, capture_output=True, text=True)
            folders[arch] = out
        return folders[arch]
    return get


@pytest.fixture(scope="module")
def harness(generated, tmp_path_factory):
    """harness(arch, name, extra_flags=()) -> binary of tests/c/<name>.c linked with the
    arch's folder, drivers and test program built with the extra flags too."""
    built = {}

    def get(arch, name, extra_flags=()):
        key = (arch, name, tuple(extra_flags))
        if key not in built:
            folder = generated(arch)
            sources = sorted(folder.glob("*.c")) + sorted(folder.glob("*.S")) + [TEST_C / f"{name}.c"]
            binary = tmp_path_factory.mktemp("bin") / f"{name}_{arch}"
            built[key] = compile_aarch64(sources, binary, includes=[folder],
                                         flags=["-std=c99", "-Werror", *extra_flags])
        return built[key]
    return get


def manifest_paths(folder):
    """{type key: [path]}: the manifest's main kernels and core-class variants."""
    manifest = json.loads((folder / "manifest.json").read_text())
    main = {k["instruction"]: k for k in manifest["kernels"] if k.get("role", "main") == "main"}
    classes = {}
    for k in manifest["kernels"]:
        if k["role"] == "core_class":
            classes.setdefault(k["instruction"], {})[k["core_class"]] = k
    paths = {}
    for t in registry.GEMM_TYPES:
        paths[t.key] = [dict(instruction=p.instruction, symbol=main[p.instruction]["symbol"],
                             classes={c: k["symbol"]
                                      for c, k in classes.get(p.instruction, {}).items()},
                             ep=main[p.instruction]["ep"], hp=main[p.instruction]["hp"],
                             lp=main[p.instruction]["lp"],
                             tiles=[(k["ep"], k["hp"], k["lp"]) for k in
                                    [main[p.instruction], *classes.get(p.instruction, {}).values()]],
                             feature=registry.feature_macro(INSTRUCTIONS[p.instruction].feature))
                        for p in t.chain if p.instruction in main]
    return paths


def expected_kernel(paths, usable, core_class="generic"):
    """The symbol dispatch must pick (independent restatement of the policy, from the
    manifest): the first instruction whose feature is usable; its variant for the core's class
    when the build has one, else its generic kernel."""
    for path in paths:
        if path["feature"] is None or FEAT[path["feature"]] & usable:
            return path["classes"].get(core_class, path["symbol"])
    raise AssertionError("no baseline path")


def check_dispatch_lines(stdout, paths, cpu, types):
    lines = [line for line in stdout.splitlines() if line.startswith("mask=")]
    assert len(lines) == len(CPU_MASKS[cpu])
    for line, mask in zip(lines, CPU_MASKS[cpu]):
        fields = dict(item.split("=") for item in line.split())
        assert int(fields["mask"]) == mask
        for label in types:
            want = expected_kernel(paths[TYPES[label]], CPU_FEATURES[cpu] & mask, CPU_CLASS[cpu])
            assert fields[label] == want, f"{cpu} mask {mask:#x} {label}: {fields[label]} != {want}"


def gemm_shapes(paths):
    """M, N, K around every tile size of the build (ep-1, ep, ep+1, 2ep+1 ...), 0 and 1, every
    column remainder, plus a few larger ones; N stays <= 512 (harness quant arrays)."""
    tiles = {t for ps in paths.values() for p in ps for t in p["tiles"]}   # variants' too
    eps, hps, lps = ({t[i] for t in tiles} for i in range(3))
    ms = sorted({0, 1} | {v for e in eps for v in (e - 1, e, e + 1, 2 * e + 1)})
    ns = sorted({0, 1} | {v for h in hps for v in (h - 1, h, h + 1, 2 * h + 1)})
    ks = sorted({0, 1, 2, 3, 33} | {v for lp in lps for v in (lp - 1, lp + 1, 2 * lp, 3 * lp + 1)} - {-1})
    shapes = [(m, n, ks[(i * 5 + j * 3) % len(ks)]) for i, m in enumerate(ms) for j, n in enumerate(ns)]
    shapes += [(1, 1, k) for k in ks] + [(37, 45, 70), (64, 64, 64), (30, 100, 257)]
    # K split into blocks on the lp-4 paths too (sdot: the ooo class whole up to 1213 k-steps,
    # 4852 k): the u8s8 sdot path's first block starts at the column correction, the next
    # accumulate in place
    shapes += [(5, 29, 5000)]
    # every column remainder of every tile width (the narrow ones run on the column-tail
    # kernels, gen/ntail.py), the rows through the row remainders of every ep, and every
    # fourth K split into K blocks on the lp-1 paths (fp32 whole up to 546 k-steps: 700 runs
    # as two blocks of 350)
    tails = [(h + 1 + r) for h in sorted(hps) for r in range(h)]
    shapes += [(1 + (7 * i) % 25, n, 700 if i % 4 == 3 else (5, 33, 2)[i % 3])
               for i, n in enumerate(tails)]
    return [f"{m},{n},{k}" for m, n, k in shapes]


@pytest.mark.parametrize("arch,cpu", RUNS)
def test_gemm_every_path_matches_reference(arch, cpu, generated, harness):
    paths = manifest_paths(generated(arch))
    masks = ",".join(str(m) for m in CPU_MASKS[cpu])
    proc = run_qemu(harness(arch, "drv_api_gemm"), masks, *gemm_shapes(paths), cpu=cpu, check=False)
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), proc.stdout[-3000:]
    assert f"features={CPU_FEATURES[cpu]}\n" in proc.stdout
    check_dispatch_lines(proc.stdout, paths, cpu, tuple(TYPES))


@pytest.mark.parametrize("arch,cpu", RUNS)
def test_conv2d_matches_direct_convolution(arch, cpu, generated, harness):
    paths = manifest_paths(generated(arch))
    masks = ",".join(str(m) for m in CPU_MASKS[cpu])
    proc = run_qemu(harness(arch, "drv_api_conv"), masks, cpu=cpu, check=False)
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), proc.stdout[-3000:]
    assert int(proc.stdout.split("shapes ")[1].split()[0]) >= 20
    check_dispatch_lines(proc.stdout, paths, cpu, ("int8",))


@pytest.mark.parametrize("cpu", ["cortex-a57", "max"])
def test_bad_arguments_leave_outputs_untouched(cpu, harness):
    proc = run_qemu(harness("v86", "drv_api_errors"), cpu=cpu, check=False)
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), proc.stdout[-3000:]
    # on max the f16 handle is packed for fmla .8h and mask 0 moves dispatch to the fallback
    assert f"(mask moved f16: {int(cpu == 'max')})" in proc.stdout
    # a u8s8 handle on another of its three layouts (usmmla, sdot, smlal): every ordered pair on
    # max, none on the Armv8.0 CPU
    assert f"u8s8 layout rejections {6 if cpu == 'max' else 0}\n" in proc.stdout


# UndefinedBehaviorSanitizer, every report fatal: an engine whose CI runs UBSan must not abort in
# the library (misaligned stores through typed pointers, shifts past the width, signed overflow).
UBSAN = ("-fsanitize=undefined", "-fno-sanitize-recover=all")


@pytest.mark.parametrize("cpu", ["cortex-a53", "max"])
def test_no_undefined_behaviour_under_ubsan(cpu, generated, harness):
    """The conv and error programs (every conv shape: padded copies with odd channel counts,
    pad fills of 1..15 bytes) and the GEMM program on the path each CPU picks, all with UBSan."""
    for name, args in (("drv_api_conv", [ALL]), ("drv_api_errors", []),
                       ("drv_api_gemm", [ALL, *gemm_shapes(manifest_paths(generated("v86")))])):
        proc = run_qemu(harness("v86", name, UBSAN), *args, cpu=cpu, check=False)
        assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), \
            f"{name}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        assert "runtime error" not in proc.stderr, proc.stderr[-2000:]


# ---- generation-time checks -------------------------------------------------------------------

def fake_manifest(instructions):
    kernels = [dict(symbol=f"ts_k_{i}", instruction=i, ep=8, hp=8, lp=1, role="main")
               for i in instructions]
    return dict(prefix="ts_", arch="v86", kernels=kernels)


@pytest.mark.parametrize("arch,absent", [("v8", ("sdot", "smmla", "bfmmla")),
                                         ("v82", ("smmla", "bfmmla"))])
def test_only_this_archs_kernels_are_compiled_in(arch, absent, generated):
    dispatch = (generated(arch) / "ts_dispatch.c").read_text()
    for mnemonic in absent:
        assert f"_{mnemonic}_" not in dispatch
    assert "_smlal_" in dispatch and "_fmla_" in dispatch


def test_manifest_without_baseline_kernel_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="no Armv8.0 kernel for the s8 GEMM"):
        render_drivers(fake_manifest(["fmla_f32", "sdot"]), tmp_path)


@pytest.mark.parametrize("arch,cpu", RUNS)
def test_k_bounds_exact_on_every_path(arch, cpu, generated, harness):
    """Every integer entry point at K = TS_GEMM_*_MAX_K with the inputs that reach the bound:
    exact (closed form in int64) on every dispatch path; at MAX_K + 1 TS_EINVAL, C untouched
    (tests/c/drv_api_kbound.c). Also ts_requantize's saturating case TFLite wraps."""
    paths = manifest_paths(generated(arch))
    masks = ",".join(str(m) for m in CPU_MASKS[cpu])
    proc = run_qemu(harness(arch, "drv_api_kbound"), masks, cpu=cpu, check=False)
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), proc.stdout[-3000:]
    assert "requantize saturating 127 127 tflite 0 -128\n" in proc.stdout
    check_dispatch_lines(proc.stdout, paths, cpu,
                         tuple(t.test_label for t in registry.GEMM_TYPES if t.max_k))


# ---- GEMV / small M (gen/gemv.py): dispatch on M ------------------------------------------------

def gemv_shapes(folder):
    """N, K pairs: odd sizes around every GEMV and GEMM tile width of the build (hp - 1, hp + 1,
    2 hp + 1), N = 1, and K odd around the k-steps (1, lp + 1, ...), a few thousand deep once."""
    manifest = json.loads((folder / "manifest.json").read_text())
    hps = sorted({k["hp"] for k in manifest["kernels"]})
    ns = sorted({1} | {v for h in hps for v in (h - 1, h + 1, 2 * h + 1)} - {0})
    ks = [1, 3, 9, 17, 33, 67]
    shapes = [(n, ks[i % len(ks)]) for i, n in enumerate(ns)] + [(45, 2049)]
    return [f"{n},{k}" for n, k in shapes]


def test_every_path_has_a_gemv_kernel(generated):
    manifest = json.loads((generated("v86") / "manifest.json").read_text())
    main = {k["instruction"]: k for k in manifest["kernels"] if k["role"] == "main"}
    served = {k["symbol"]: k["instruction"] for k in main.values()}
    gemv = {served[k["serves"]]: k for k in manifest["kernels"] if k["role"] == "gemv"}
    # the instructions of gen.gemv GEMV_INSTRUCTIONS (fmla_f16 and fmlal have none yet), each
    # served by its own instruction or a GEMV form (usmmla: sudot, gen/gemv.py GEMV_FORMS)
    assert set(GEMV_INSTRUCTIONS) <= set(main)
    assert set(gemv) == set(main) & set(GEMV_INSTRUCTIONS)
    for name, k in gemv.items():
        assert k["serves"] == main[name]["symbol"] and 1 <= k["max_m"] <= k["ep"] <= 2
        assert k["instruction"] in (name, *GEMV_FORMS.get(name, ()))
    assert gemv["usmmla"]["instruction"] == "sudot" and gemv["usmmla"]["lp"] == 4
    dispatch = (generated("v86") / "ts_dispatch.c").read_text()
    for k in gemv.values():
        assert (f'"{k["symbol"]}", {k["symbol"]}, {k["ep"]}, {k["hp"]}, {k["lp"]}, '
                f'{k["max_m"]}, {k["step_instructions"]}, {k["main_step_instructions"]} }}'
                in dispatch)


@pytest.mark.parametrize("arch,cpu", RUNS)
def test_small_m_matches_gemm_path_bit_for_bit(arch, cpu, generated, harness):
    """M = 1 .. 17 on one prepacked B (and unpacked): the GEMV kernel's rows equal the GEMM
    path's bit for bit (integers and fp32 alike: the same instruction over the same k order),
    the GEMM path equals an independent reference (tests/c/drv_api_gemv.c)."""
    paths = manifest_paths(generated(arch))
    masks = ",".join(str(m) for m in CPU_MASKS[cpu])
    proc = run_qemu(harness(arch, "drv_api_gemv"), masks, *gemv_shapes(generated(arch)),
                    cpu=cpu, check=False)
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), proc.stdout[-3000:]
    assert int(proc.stdout.split("shapes ")[1].split()[0]) >= 10 * len(CPU_MASKS[cpu])
    # every type the engine (ts_engine.c) drives (registry GEMV_EPILOGUES): the harness's labels
    gemv_types = tuple(t.test_label for t in registry.GEMM_TYPES if registry.has_gemv(t))
    assert gemv_types == ("f32", "bf16", "f16", "f16f32", "int8", "u8s8", "u8u32")
    check_dispatch_lines(proc.stdout, paths, cpu, gemv_types)
    # dispatch on M and N, restated from the manifest: the GEMV kernel for M <= max_m unless its
    # panels over N take more instructions per k-step than the GEMM tile's
    manifest = json.loads((generated(arch) / "manifest.json").read_text())
    # the GEMV kernel by the instruction of the kernel it serves (its own may be a GEMV form)
    served = {k["symbol"]: k["instruction"] for k in manifest["kernels"] if k["role"] == "main"}
    gemv = {served[k["serves"]]: k for k in manifest["kernels"] if k["role"] == "gemv"}
    # the kernel dispatch chose for the type (main or core-class variant); a variant is served
    # by its instruction's GEMV kernel up to its own max_m (gemv_max_m)
    main = {k["symbol"]: k for k in manifest["kernels"] if k["role"] in ("main", "core_class")}
    picks = [line.split() for line in proc.stdout.splitlines() if line.startswith("pick ")]
    seen_gemv = seen_main = 0
    for line in proc.stdout.splitlines():
        if line.startswith("mask="):
            fields = dict(item.split("=") for item in line.split())
        elif line.startswith("pick "):
            _, label, m, n, symbol = line.split()
            m, n, chosen = int(m), int(n), main[fields[label]]
            g = gemv[chosen["instruction"]]
            max_m, main_step = ((g["max_m"], g["main_step_instructions"])
                                if chosen["role"] == "main" else
                                (chosen["gemv_max_m"], chosen["gemv_main_step_instructions"]))
            use = (m <= max_m and -(-n // g["hp"]) * g["step_instructions"]
                   <= -(-n // chosen["hp"]) * main_step)
            assert symbol == (g["symbol"] if use else chosen["symbol"]), line
            seen_gemv += use
            seen_main += not use
    assert picks and seen_gemv and seen_main


# ---- N x K ("out x in") weights: ts_pack_b_<type>_nk ---------------------------------------------

# odd shapes around the tiles, K = 0 and 1, a K split into blocks on the lp-1 paths (fp32
# whole up to 546 k-steps), a deep GEMV; every type runs each
NK_SHAPES = ("0,3,5", "1,1,1", "1,13,0", "3,13,7", "2,31,9", "9,17,33", "17,45,70",
             "5,100,257", "13,20,700", "1,45,2049")


@pytest.mark.parametrize("arch,cpu", RUNS)
def test_pack_nk_matches_transposed_kn_handle(arch, cpu, generated, harness):
    """ts_pack_b_<type>_nk (and _ctx) of the transpose of B gives the bytes of the K x N handle
    on every dispatch path, the naive GEMM's results, and TS_EINVAL with *out untouched for bad
    arguments (tests/c/drv_api_pack_nk.c)."""
    paths = manifest_paths(generated(arch))
    masks = ",".join(str(m) for m in CPU_MASKS[cpu])
    proc = run_qemu(harness(arch, "drv_api_pack_nk"), masks, *NK_SHAPES, cpu=cpu, check=False)
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), proc.stdout[-3000:]
    assert f"shapes {len(NK_SHAPES) * len(CPU_MASKS[cpu])}\n" in proc.stdout
    check_dispatch_lines(proc.stdout, paths, cpu,
                         ("f32", "bf16", "f16", "f16f32", "int8", "u8s8", "u8u32"))


# ---- fp32 / bf16 / fp16 -> fp32 bias + clamp: ts_gemm_{f32,bf16,f16f32}_bias_clamp --------------

# odd shapes around the fp32 tiles (8x12, its 8x8 column tail, the 1x84 GEMV), K = 0 (with a
# (-0, -0) clamp), K split into blocks on the generic (546 k-steps) and ooo (1213) blocks;
# 17,100,1300: K of KC k-steps or more, so groups of B panels (ts_engine.c b_group: 4 of 12
# columns) whose fused bias steps per panel (fused_params_step) up to the last panel's copy
BIAS_CLAMP_SHAPES = ("0,3,5", "1,1,1", "1,13,0", "8,12,0", "3,13,7", "2,31,9", "9,17,33",
                     "17,45,70", "5,100,257", "13,20,700", "9,13,1300", "1,45,2049", "2,85,3",
                     "17,100,1300")


@pytest.mark.parametrize("arch,cpu", RUNS)
def test_f32_bias_clamp_is_gemm_then_bias_then_clamp(arch, cpu, generated, harness):
    """ts_gemm_f32_bias_clamp, ts_gemm_bf16_bias_clamp and ts_gemm_f16f32_bias_clamp (plain, _ctx,
    prepacked from K x N and N x K handles) return the bits of ts_gemm_f32 / ts_gemm_bf16 /
    ts_gemm_f16f32 (fmlal with FHM, else the fp32 fmla fallback) followed by fp32 add, FMAX, FMIN
    on every dispatch path: the fused
    _biasclamp kernels and the GEMV path's C epilogue alike; bad bounds and overlaps TS_EINVAL
    (tests/c/drv_api_bias_clamp.c)."""
    paths = manifest_paths(generated(arch))
    masks = ",".join(str(m) for m in CPU_MASKS[cpu])
    proc = run_qemu(harness(arch, "drv_api_bias_clamp"), masks, *BIAS_CLAMP_SHAPES, cpu=cpu,
                    check=False)
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), proc.stdout[-3000:]
    # 6 cases per shape and type (f32, bf16, f16f32)
    assert f"shapes {3 * 6 * len(BIAS_CLAMP_SHAPES) * len(CPU_MASKS[cpu])}\n" in proc.stdout
    check_dispatch_lines(proc.stdout, paths, cpu, ("f32", "bf16", "f16f32"))
