"""SME dispatch and packing (ARCH v92) through the public API, under qemu-aarch64: every GEMM type
with an SME path (gen/registry.py GemmType.sme) and its entry points (plain and prepacked,
raw and requantised) at every streaming vector length 128..2048 bits against the scalar
references of tests/c/drv_api_gemm.c (M/N/K around the SME tile of that SVL, guard pages, row
gaps), conv2d_s8 on the int8 SME path (tests/c/drv_api_conv.c), dispatch with TS_FEAT_SME
masked off, on `-cpu max,sme=off` and on cortex-a57 (the -march=armv8-a library must run
there), and the SVL read at every selection
(tests/c/drv_api_sme.c: PR_SME_SET_VL between calls, handles of another SVL rejected).

QEMU 7.2 mis-emulates the 32-bit SMOPA / USMOPA (QEMU issue 2083): the harnesses probe for it
through the API and then check the SME int8 paths against that documented behaviour
(drv_api_common.h imopa_row), with a warning here."""
from __future__ import annotations

import json
import math
import re
import warnings
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import pytest

from cross import TEST_C, compile_aarch64, run_qemu
import kernel_build

from bench.sme_model import APPLE_M4

from gen import registry
from gen.blocking import whole_k_steps
from gen.drivers import dispatch_paths

SVL_BYTES = registry.SME_SVL_BYTES          # 128, 256, 512, 1024, 2048-bit streaming vectors
JOBS = 2                                    # qemu processes at once (the machine is shared)
FEAT = {registry.feature_macro(f): bit for f, bit in registry.FEATURE_BITS.items()}
ALL = 0xFFFFFFFF
MAX = (FEAT["DOTPROD"] | FEAT["I8MM"] | FEAT["BF16"] | FEAT["FP16"] | FEAT["FHM"]
       | FEAT["SME"])                       # what QEMU 7.2 -cpu max reports
TYPES = {t.test_label: t.key for t in registry.GEMM_TYPES}
ISSUE_2083 = "QEMU issue 2083"


def sme_cpu(svl_bytes: int) -> str:
    """-cpu max at a streaming vector length, FEAT_SME_FA64 off (an instruction not legal in
    streaming mode traps)."""
    return f"max,sme-default-vector-length={svl_bytes},sme_fa64=off"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out, manifest = kernel_build.cached_output(tmp_path_factory, "v92")
    return out, manifest


@pytest.fixture(scope="module")
def harness(folder, tmp_path_factory):
    """harness(name) -> binary of tests/c/<name>.c linked with the v92 folder (built once)."""
    out, _ = folder
    built = {}

    def get(name):
        if name not in built:
            sources = sorted(out.glob("*.c")) + sorted(out.glob("*.S")) + [TEST_C / f"{name}.c"]
            binary = tmp_path_factory.mktemp("bin") / name
            built[name] = compile_aarch64(sources, binary, includes=[out],
                                          flags=["-std=c99", "-Werror"])
        return built[name]
    return get


def v92_paths(manifest: dict) -> dict:
    main = {k["instruction"]: k for k in manifest["kernels"] if k.get("role", "main") == "main"}
    served = {k["symbol"]: k["instruction"] for k in main.values()}
    gemv = {served[k["serves"]]: k for k in manifest["kernels"] if k.get("role") == "gemv"}
    sme = {k["instruction"]: dict(k, packers=manifest["sme_packers"])
           for k in manifest["sme_kernels"] if k["epilogue"] == "raw"}
    return dispatch_paths(main, gemv=gemv, sme=sme)


def expected_kernel(paths, usable: int, svl: int) -> str:
    """The symbol dispatch must pick (independent restatement of the policy): the first path
    whose features are usable (an SME path with a GEMV kernel: also that kernel's) and, for an
    SME path, whose SVL is the CPU's."""
    for p in paths:
        if p["svl_bytes"] not in (0, svl):
            continue
        if p.get("gemv_feature") and not FEAT[p["gemv_feature"]] & usable:
            continue
        if p["feature"] is None or FEAT[p["feature"]] & usable:
            return p["symbol"]
    raise AssertionError("no baseline path")


def check_dispatch(stdout: str, paths: dict, features: int, masks, svl: int,
                   labels=tuple(TYPES)) -> None:
    """The kernel the harness's "mask=" lines name for each type of `labels` is expected_kernel's."""
    lines = [line for line in stdout.splitlines() if line.startswith("mask=")]
    assert len(lines) == len(masks)
    for line, mask in zip(lines, masks):
        fields = dict(item.split("=") for item in line.split())
        for label in labels:
            key = TYPES[label]
            want = expected_kernel(paths[key], features & mask, svl)
            assert fields[label] == want, f"svl {svl} mask {mask:#x} {label}: {fields[label]} != {want}"


def sme_shapes(paths: dict, svl: int) -> list[str]:
    """M, N, K around the SME tiles of one SVL (ep, hp +-1, 2 ep + 1, ...), 0 and 1, K around
    every lp and beyond one k-step group; M and N paired (not crossed) to keep the run short."""
    sme = [p for ps in paths.values() for p in ps if p["svl_bytes"] == svl]
    ms = sorted({0, 1} | {v for p in sme for v in (p["ep"] - 1, p["ep"], p["ep"] + 1, 2 * p["ep"] + 1)})
    ns = sorted({0, 1} | {v for p in sme for v in (p["hp"] - 1, p["hp"], p["hp"] + 1, 2 * p["hp"] + 1)})
    ks = [0, 1, 2, 3, 5, 8, 9, 33]
    shapes = [(m, ns[(i * 3 + j) % len(ns)], ks[(i + j) % len(ks)])
              for i, m in enumerate(ms) for j in range(2)]
    shapes += [(ms[i % len(ms)], n, ks[i % len(ks)]) for i, n in enumerate(ns)]
    # K past every SME path's unsplit K (gen/blocking.py whole_k_steps, SME_L2_BYTES): two or
    # more K blocks (accumulators through C, the fused requantisation on the last one), the
    # last k-step partial; a partial A panel, few columns
    k_split = max(whole_k_steps("generic", p["instruction"], p["ep"], p["hp"], p["lp"]) * p["lp"]
                  for p in sme) + 3
    shapes += [(min(p["ep"] for p in sme) + 1, 3, k_split)]
    return [f"{m},{n},{k}" for m, n, k in shapes]


def warn_issue_2083(stdout: str) -> None:
    if ISSUE_2083 in stdout:
        warnings.warn("qemu-aarch64 has QEMU issue 2083 (32-bit SMOPA/USMOPA): the SME int8 "
                      "paths were checked against that behaviour, not the architectural one")


def run_gemm(binary, cpu: str, masks, shapes):
    return run_qemu(binary, ",".join(str(m) for m in masks), *shapes, cpu=cpu, timeout=900,
                    check=False)


# GEMM type -> its SME paths' streaming packers of A and B panels (None: the C packers)
STREAMING_PACKERS = {"f32": ("ts_sme_pack_a_2vl", "ts_sme_pack_b_4x4_2vl"),
                     "bf16": ("ts_sme_pack_a_bf16_2vl", "ts_sme_pack_b_bf16_2vl"),
                     "f16f32": ("ts_sme_pack_a_2vl", "ts_sme_pack_b_2x8_2vl"),
                     "s8": ("ts_sme_pack_a_1vl", "ts_sme_pack_b_1x16_4vl"),
                     "u8s8": ("ts_sme_pack_a_1vl", "ts_sme_pack_b_1x16_4vl")}


# GEMM type -> the NEON instruction whose GEMV kernel serves its SME paths' small M
# (gen/sme_gemv.py: each computes every result as the SME tile does; fp16 -> fp32 has none)
SME_SMALL = {"f32": "fmla_f32", "bf16": "bfmmla", "s8": "smmla", "u8s8": "usmmla"}


def small_kernel(manifest: dict, key: str) -> dict:
    """The manifest's GEMV kernel serving the main kernel of SME_SMALL[key]."""
    main = next(k for k in manifest["kernels"]
                if k.get("role", "main") == "main" and k["instruction"] == SME_SMALL[key])
    return next(k for k in manifest["kernels"]
                if k.get("role") == "gemv" and k["serves"] == main["symbol"])


def model_main_step(instruction: str, kernel: dict, gemv_lp: int) -> int:
    """The SME tile's cost of one GEMV k-step of one column panel in GEMV instructions,
    restated from the bench's SME-unit model (bench/sme_model.py APPLE_M4): max(MOPAs / MOPA
    rate, vectors loaded / load rate) per k-value, times gemv_lp, times the core IPC."""
    k = {"fmopa_f32": 1, "bfmopa": 2, "fmopa_f16f32": 2, "smopa": 4, "usmopa": 4}[instruction]
    tr, tc = kernel["tr"], kernel["tc"]
    cycles = max(Fraction(tr * tc, k) / Fraction(APPLE_M4.mopa_per_cycle[instruction]),
                 Fraction(tr + tc, k) / Fraction(APPLE_M4.load_per_cycle))
    return math.ceil(cycles * gemv_lp * Fraction(APPLE_M4.core_ipc))


def test_v92_dispatch_table_has_an_sme_path_per_svl_in_front(folder):
    _, manifest = folder
    paths = v92_paths(manifest)
    dispatch = (folder[0] / "ts_dispatch.c").read_text()
    for t in registry.GEMM_TYPES:
        sme = [p for p in paths[t.key] if p["svl_bytes"]]
        if t.sme is None:
            assert sme == []
            continue
        # one path per SVL, before every NEON path, tiles tr*S x tc*S of the kernel
        assert [p["svl_bytes"] for p in paths[t.key][:len(SVL_BYTES)]] == list(SVL_BYTES)
        kernel = next(k for k in manifest["sme_kernels"]
                      if k["instruction"] == t.sme.instruction and k["epilogue"] == "raw")
        for p in sme:
            s = p["svl_bytes"] // 4
            assert (p["ep"], p["hp"], p["lp"]) == (kernel["tr"] * s, kernel["tc"] * s, kernel["lp"])
            assert p["feature"] == "SME"
            g = p["gemv"]
            # small M (gen/sme_gemv.py): the NEON GEMV kernel of SME_GEMV's instruction, which
            # then needs its feature too; a path without one follows (TS_FEAT_SME alone)
            if g is None:
                gemv_row = r"\{ NULL, NULL, 0, 0, 0, 0, 0, 0 \}"
                features = "TS_FEAT_SME"
                assert p.get("gemv_feature") is None
            else:
                k = small_kernel(manifest, t.key)
                small = k["symbol"]
                assert (g["symbol"], g["hp"], g["lp"], g["max_m"]) == (
                    small, k["hp"], k["lp"], k["max_m"])
                assert g["main_step"] == model_main_step(t.sme.instruction, kernel, k["lp"])
                gemv_row = (rf'\{{ "{small}", {small}, {k["ep"]}, {k["hp"]}, {k["lp"]}, '
                            rf'{k["max_m"]}, {k["step_instructions"]}, {g["main_step"]} \}}')
                features = "TS_FEAT_SME" + (f" \\| TS_FEAT_{p['gemv_feature']}"
                                            if p["gemv_feature"] else "")
            # the fused epilogue (engine: gemm_s8, conv2d_s8; gemm_u8; gemm_f32_bias_clamp) is
            # the kernel's variant of the type's (registry.fused_epilogue: _requant,
            # _requant_u8, _biasclamp) where it has one, else the driver's (NULL)
            requant = next((k["symbol"] for k in manifest["sme_kernels"]
                            if k["instruction"] == t.sme.instruction
                            and k["epilogue"] == registry.fused_epilogue(t)), "NULL")
            row = (rf'"{p["symbol"]}", {p["symbol"]},\s+{features}, {p["ep"]}, {p["hp"]}, '
                   rf'{p["lp"]}, TS_PACK_{p["pack"]}, TS_PACK_{p["pack_a"]}, 4,\s+{requant},'
                   rf'[^{{]*{gemv_row}, {p["svl_bytes"]},\s+NULL, TS_CORE_GENERIC,'
                   rf'\s+{p["sme_pack_a"] or "NULL"}, {p["sme_pack_b"] or "NULL"},'
                   r'\s+\{ \{ NULL, NULL, NULL, 0 \} \},'   # no column tails (gen/ntail.py)
                   r'\s+0, 0, 0, 0,\s+NULL \}')   # no run-time cache facts: SME keeps its blocks (ts_blocks.c)
            assert re.search(row, dispatch), row
            # the streaming packers (gen/sme_pack.py): copies, and bf16 rounded from fp32
            assert (p["sme_pack_a"], p["sme_pack_b"]) == STREAMING_PACKERS[t.key]
    assert "ts_gemm_s8s32_smopa_1vlx4vlx16_requant," in dispatch
    assert "ts_gemm_u8s8s32_usmopa_1vlx4vlx16_requant_u8," in dispatch
    # the SME kernels are in the CMake library too
    cmake = (folder[0] / "CMakeLists.txt").read_text()
    assert all(k["file"] in cmake for k in manifest["sme_kernels"] + manifest["sme_packers"])
    # the int8 GEMM's SME path also serves conv2d_s8 (same GEMM type); qdyn keeps its own loop
    assert registry.BY_KEY["qdyn"].sme is None


def test_gemm_every_type_at_every_svl(folder, harness):
    """Every entry point of every type at SVL 128..2048 (SME paths; at 512 bits also with
    TS_FEAT_SME masked off and with no feature), against the references."""
    _, manifest = folder
    paths = v92_paths(manifest)
    binary = harness("drv_api_gemm")
    masks = {svl: [ALL] + ([ALL & ~FEAT["SME"], 0] if svl == 64 else []) for svl in SVL_BYTES}

    def run(svl):
        return svl, run_gemm(binary, sme_cpu(svl), masks[svl], sme_shapes(paths, svl))

    with ThreadPoolExecutor(JOBS) as pool:
        results = list(pool.map(run, SVL_BYTES))
    for svl, proc in results:
        assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), \
            (svl, proc.stdout[-3000:])
        assert f"features={MAX}\n" in proc.stdout
        check_dispatch(proc.stdout, paths, MAX, masks[svl], svl)
        warn_issue_2083(proc.stdout)


def test_conv2d_on_the_int8_sme_path(harness):
    """conv2d_s8 (plain and prepacked filter) runs the int8 GEMM type's SME path on its im2col
    rows: every shape of tests/c/drv_api_conv.c against the direct convolution, at the
    smallest and the largest SVL."""
    binary = harness("drv_api_conv")
    with ThreadPoolExecutor(JOBS) as pool:
        procs = list(pool.map(lambda svl: run_qemu(binary, ALL, cpu=sme_cpu(svl), check=False,
                                                   timeout=900), (16, 256)))
    for proc in procs:
        assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), \
            proc.stdout[-3000:]
        assert "int8=ts_gemm_s8s32_smopa_" in proc.stdout
        warn_issue_2083(proc.stdout)


@pytest.mark.parametrize("cpu,features", [("max,sme=off", MAX & ~FEAT["SME"]),
                                          ("cortex-a57", 0)])
def test_gemm_without_sme_takes_the_neon_paths(folder, harness, cpu, features):
    """The v92 library (built -march=armv8-a) on a CPU without SME: the chains' NEON / Armv8.0
    paths, never an SVE or SME instruction (a SIGILL would end the run)."""
    _, manifest = folder
    paths = v92_paths(manifest)
    shapes = ["0,0,0", "1,1,1", "7,9,5", "33,65,17", "64,64,64", "17,3,70"]
    proc = run_gemm(harness("drv_api_gemm"), cpu, [ALL], shapes)
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), proc.stdout[-3000:]
    assert f"features={features}\n" in proc.stdout
    check_dispatch(proc.stdout, paths, features, [ALL], 0)
    assert "mopa" not in proc.stdout


@pytest.mark.parametrize("cpu", [sme_cpu(64), "max,sme=off", "cortex-a57"])
def test_svl_is_read_at_every_selection(harness, cpu):
    """drv_api_sme.c: the SVL changed by PR_SME_SET_VL between calls (2048 .. 128 bits) moves
    dispatch to that SVL's path; a handle packed at another SVL, or used with TS_FEAT_SME masked
    off, returns TS_EINVAL and leaves C untouched."""
    proc = run_qemu(harness("drv_api_sme"), cpu=cpu, check=False)
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), proc.stdout[-3000:]
    sme = cpu.startswith("max,sme-default")
    assert f"sme={int(sme)}\n" in proc.stdout
    svls = [int(v) for v in re.findall(r"^svl=(\d+)", proc.stdout, re.M)]
    assert svls == (sorted(SVL_BYTES, reverse=True) if sme else [])
    warn_issue_2083(proc.stdout)


def test_manifest_names_the_sme_kernels_the_registry_dispatches(folder):
    _, manifest = folder
    raw = {k["instruction"] for k in manifest["sme_kernels"] if k["epilogue"] == "raw"}
    assert {t.sme.instruction for t in registry.GEMM_TYPES if t.sme} <= raw
    assert json.loads(json.dumps(v92_paths(manifest)))     # plain data (the template's input)


def test_pool_threads_take_the_callers_svl(harness):
    """drv_api_thread_state.c svl: a pool of 4 threads made at the default SVL (64 bytes), then
    the caller moves to each other SVL (prctl PR_SME_SET_VL): the pooled fp32 and int8 GEMMs
    (the SME paths of the caller's SVL) give the one-thread bits, and a caller-pool thread's SVL
    is its own again after its tasks. (Before: heap corruption or wrong C, review session 6.)"""
    proc = run_qemu(harness("drv_api_thread_state"), "svl", cpu=sme_cpu(64), check=False,
                    timeout=900)
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), proc.stdout[-3000:]
    checked = re.findall(r"^checked svl (\d+)", proc.stdout, re.M)
    assert sorted(int(v) for v in checked) == sorted(v for v in SVL_BYTES if v != 64), proc.stdout


# N x K packers and fp32 bias + clamp on the SME paths (tests/test_drivers_api.py runs them on
# every NEON path): the smallest SVL, the modeled 512 bits and the largest tile that keeps the
# fused kernels (2048 bits: hp 128 fp32 columns); with SME and with it masked off
SME_API_SHAPES = ("0,3,5", "1,1,1", "1,13,0", "3,13,7", "9,17,33", "17,45,70", "13,20,700",
                  "70,300,19")


@pytest.mark.parametrize("name", ["drv_api_pack_nk", "drv_api_bias_clamp"])
def test_pack_nk_and_bias_clamp_on_sme_paths(harness, name):
    with ThreadPoolExecutor(JOBS) as pool:
        procs = list(pool.map(
            lambda svl: run_qemu(harness(name), f"{ALL},{ALL & ~FEAT['SME']}", *SME_API_SHAPES,
                                 cpu=sme_cpu(svl), timeout=900, check=False), (16, 64, 256)))
    for proc in procs:
        assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), \
            proc.stdout[-3000:]
        # with SME the fp32 GEMM runs its fmopa path (the fused _biasclamp kernel there)
        assert re.search(rf"^mask={ALL} f32=ts_gemm_f32_fmopa_", proc.stdout, re.M), proc.stdout[:500]
        warn_issue_2083(proc.stdout)


# N, K for small M on the SME paths: N around the GEMV tiles (32, 42, 84 columns) and the SME
# tiles of 128..2048 bits (8 .. 256 columns), odd; K odd around the lps (1 .. 16) and deep once
SME_GEMV_SHAPES = ("1,3", "7,17", "31,9", "33,33", "43,5", "67,9", "85,19", "129,33",
                   "257,7", "45,2049")


def test_small_m_on_sme_paths(folder, harness):
    """tests/c/drv_api_gemv.c on the SME paths at 128, 512 and 2048 bits, with every feature
    and without the GEMV kernels' (dotprod, i8mm, bf16: the SME paths without one): M = 1 .. 17
    on one prepacked B and unpacked, the GEMV kernel's rows equal to the SME tile's (fp32 and
    bf16 bit for bit; integers exact, checked per call against the reference where QEMU issue
    2083 makes the tile's differ), one-layout handles, and dispatch on M and N restated: the
    GEMV kernel for M <= max_m unless its panels over N cost more than the SME tile's
    (model_main_step)."""
    _, manifest = folder
    paths = v92_paths(manifest)
    masks = [ALL, ALL & ~(FEAT["DOTPROD"] | FEAT["I8MM"] | FEAT["BF16"])]
    binary = harness("drv_api_gemv")

    def run(svl):
        return svl, run_gemm(binary, sme_cpu(svl), masks, SME_GEMV_SHAPES)

    with ThreadPoolExecutor(JOBS) as pool:
        results = list(pool.map(run, (16, 64, 256)))
    seen = set()
    for svl, proc in results:
        assert proc.returncode == 0 and proc.stdout.rstrip().endswith("failures 0"), \
            (svl, proc.stdout[-3000:])
        # the raw types the engine drives (drv_api_gemv.c's labels; not qdyn)
        check_dispatch(proc.stdout, paths, MAX, masks, svl,
                       tuple(t.test_label for t in registry.GEMM_TYPES if registry.has_gemv(t)))
        warn_issue_2083(proc.stdout)
        mask = None
        for line in proc.stdout.splitlines():
            if line.startswith("mask="):
                mask = int(line.split()[0][5:])
                continue
            if not line.startswith("pick "):
                continue
            _, label, m, n, symbol = line.split()
            key = TYPES[label]
            if key not in SME_SMALL:
                continue
            usable = MAX & mask
            path = next(p for p in paths[key] if p["svl_bytes"] == svl and (
                p.get("gemv_feature") is None or FEAT[p["gemv_feature"]] & usable))
            m, n = int(m), int(n)
            use = False
            if path["gemv"] is not None:       # the first usable path: the mask is in it
                k = small_kernel(manifest, key)
                kernel = next(x for x in manifest["sme_kernels"] if x["symbol"] == path["symbol"])
                main_step = model_main_step(path["instruction"], kernel, k["lp"])
                use = (m <= k["max_m"] and -(-n // k["hp"]) * k["step_instructions"]
                       <= -(-n // path["hp"]) * main_step)
            assert symbol == (small_kernel(manifest, key)["symbol"] if use
                              else path["symbol"]), (svl, mask, line)
            seen.add((key, use))
    # every type with a GEMV kernel ran it somewhere and its SME tile at small M elsewhere
    assert {k for k, use in seen if use} == set(SME_SMALL)
    assert {k for k, use in seen if not use} == set(SME_SMALL)
