"""SME section of the bench report (`python3 -m bench --sme`, issue 14 deliverable 6).

llvm-mca has no SME model, so the SME paths are reported from what QEMU executes: GEMM 512³
of every GEMM type with an SME path (gen/registry.py GemmType.sme) runs through the public API
under `qemu-aarch64 -cpu max,sme-default-vector-length=N` with the tbcount plugin at each
streaming vector length, counted from bench_mark on. Per run: the dynamic instruction mix
(bench/sme_model.py classes) of the SME kernels (streaming mode) and the instructions of the
rest of the operation (packing, driver loop: non-streaming), the MOPA share of all dynamic
instructions, the useful MACs per MOPA (M*N*K over MOPAs x S*S*k) and the throughput estimate
of the documented SME-unit model. Writes the section into the Markdown report (between
<!-- sme --> markers, replacing an earlier one) and the figures into report_sme.json.
"""
from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

from gen.isa import SME_INSTRUCTIONS, TYPE_BYTES
from gen.registry import GEMM_TYPES, PACKED

from . import symbols as sym
from .sme_model import APPLE_M4, CLASSES, LOAD, MOPA, STORE, block_mix, block_vectors, estimate
from .tbcount import ProfileError, run_profiled

SHAPE = ("gemm512", "GEMM 512³", (512, 512, 512))
SVL_BITS = (128, 256, 512, 1024, 2048)
TARGET_SVL_BITS = 512
# issue 14 performance targets (GEMM 512³ at SVL 512)
TARGET_USEFUL = 90.0          # % useful MACs per MOPA, every type
TARGET_SHARE = 50.0           # % MOPA of dynamic instructions, int8 and bf16
TARGET_PEAK = 85.0            # % of the model's peak, fp32, bf16 and int8
SHARE_TYPES = ("bf16", "s8")
PEAK_TYPES = ("f32", "bf16", "s8")
BEGIN, END = "<!-- sme -->", "<!-- /sme -->"


# The rows of the section beyond one per type: the raw int8 -> int32 GEMM (ts_gemm_s8s32, the
# smopa kernel without the requant epilogue) next to the requantising ts_gemm_s8, labelled as such
# (issue 14's int8 targets are the requantising row's).
RAW_RUNS = {"s8": ("s8s32", "int8 → int32 (raw, ts_gemm_s8s32)")}
RUN_LABELS = {"s8": "int8 → int8 (requantising, ts_gemm_s8)"}


def sme_runs(only: str = ""):
    """(GEMM type, workloads dtype, label) of every SME row: each type of `sme_types`, and its
    raw sibling of RAW_RUNS; `only` selects by dtype substring as for sme_types."""
    wanted = [w for w in (s.strip() for s in only.split(",")) if w]
    runs = []
    for t in sme_types():
        runs.append((t, t.bench_dtype, RUN_LABELS.get(t.bench_dtype, t.bench_label)))
        if t.bench_dtype in RAW_RUNS:
            runs.append((t, *RAW_RUNS[t.bench_dtype]))
    return [r for r in runs if not wanted or any(w in r[1] for w in wanted)]


def sme_types(only: str = ""):
    """The registry's GEMM types with an SME path and a bench dtype (all, or those whose dtype
    contains one of the comma-separated substrings of `only`)."""
    wanted = [w for w in (s.strip() for s in only.split(",")) if w]
    return [t for t in GEMM_TYPES if t.sme is not None and t.bench_dtype
            and (not wanted or any(w in t.bench_dtype for w in wanted))]


def qemu_cpu(svl_bits: int) -> str:
    return f"max,sme-default-vector-length={svl_bits // 8},sme_fa64=off"


def summarise(blocks, table: sym.SymbolTable, sme_symbols: set, gemm_type, svl_bits: int,
              pack_symbols: set = frozenset(), dtype: str = "", label: str = "",
              shape: tuple = SHAPE[2]) -> dict:
    """The figures of one profiled run of an M x N x K `shape`: mixes, shares, useful MACs per
    MOPA, model estimate.
    `sme_symbols` are the SME kernels, `pack_symbols` the streaming packers (gen/sme_pack.py):
    both run in streaming mode, each its own phase in the model."""
    streaming = dict.fromkeys(CLASSES, 0)
    packing = dict.fromkeys(CLASSES, 0)
    vectors = {LOAD: 0, STORE: 0}
    packing_vectors = {LOAD: 0, STORE: 0}
    core = {g: 0 for g in sym.GROUPS}
    kernels, packers = set(), set()
    for block in blocks:
        name = table.lookup(block.vaddr)
        if name in sme_symbols or name in pack_symbols:
            mix, moved = (streaming, vectors) if name in sme_symbols else (packing, packing_vectors)
            (kernels if name in sme_symbols else packers).add(name)
            for cls, n in block_mix(block.code).items():
                mix[cls] += n * block.count
            for cls, n in block_vectors(block.code).items():
                moved[cls] += n * block.count
            continue
        group = sym.group_of(name)
        if group != sym.SETUP:
            core[group if group in core else "other"] += block.dynamic_insns
    inst = SME_INSTRUCTIONS[gemm_type.sme.instruction]
    s = svl_bits // 32
    macs_per_mopa = inst.macs(s)
    m, n, k = shape
    useful = m * n * k
    kernel_total = sum(streaming.values())
    packer_total = sum(packing.values())
    core_total = sum(core.values())
    total = kernel_total + packer_total + core_total
    mopas = streaming[MOPA]
    est = estimate(APPLE_M4, inst.name, streaming, core_total, useful, macs_per_mopa,
                   vectors, packing if packer_total else None, packing_vectors)
    return dict(dtype=dtype or gemm_type.bench_dtype, label=label or gemm_type.bench_label,
                svl_bits=svl_bits,
                s=s, instruction=inst.name, kernels=sorted(kernels), packers=sorted(packers),
                streaming=streaming, vectors=vectors, packing=packing,
                packing_vectors=packing_vectors, core=core, kernel_instructions=kernel_total,
                packer_instructions=packer_total,
                core_instructions=core_total, total_instructions=total, mopas=mopas,
                macs_per_mopa=macs_per_mopa, useful_macs=useful,
                useful_per_mopa=100.0 * useful / (mopas * macs_per_mopa) if mopas else 0.0,
                mopa_share=100.0 * mopas / total if total else 0.0,
                kernel_mopa_share=100.0 * mopas / kernel_total if kernel_total else 0.0,
                estimate=asdict(est))


def profile(program, plugin, work_dir: Path, manifest: dict, svls=SVL_BITS, only="", jobs=2,
            progress=print) -> list[dict]:
    """Profile GEMM 512³ of every SME type at every SVL of `svls` (bits); returns the
    summaries (an entry with "error" for a run that failed)."""
    table = sym.SymbolTable.from_elf(program)
    mark = table.address_of(sym.MARK)
    sme_symbols = {k["symbol"] for k in manifest.get("sme_kernels", [])}
    pack_symbols = {k["symbol"] for k in manifest.get("sme_packers", [])}
    if not sme_symbols:
        raise ValueError("the generated folder has no SME kernels (generate ARCH=v92)")
    work_dir.mkdir(parents=True, exist_ok=True)
    runs = [(run, svl) for run in sme_runs(only) for svl in svls]

    def one(run):
        (t, dtype, label), svl = run
        args = ["gemm", dtype, "sme", *map(str, SHAPE[2])]
        try:
            blocks, _ = run_profiled(program, args, plugin, work_dir / f"sme-{dtype}-{svl}.tb",
                                     cpu=qemu_cpu(svl), mark=mark)
        except ProfileError as e:
            return dict(dtype=dtype, svl_bits=svl, error=str(e).splitlines()[0][:300])
        result = summarise(blocks, table, sme_symbols, t, svl, pack_symbols, dtype, label)
        if not result["kernels"]:
            result["error"] = "no SME kernel ran (dispatch took another path)"
        return result

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, runs))
    for r in results:
        progress(f"  sme {r['dtype']:<7} SVL {r['svl_bits']:<5} "
                 + (f"error: {r['error']}" if r.get("error") else
                    f"MOPA {r['mopa_share']:.1f} % of instructions, "
                    f"{r['estimate']['percent_of_peak']:.1f} % of model peak"))
    return results


# ---- the Markdown section ----------------------------------------------------------------------
def _ok(value: float, target: float, applies: bool) -> str:
    if not applies:
        return ""
    return " ✓" if value >= target else " ✗"


def render(results: list[dict], meta: dict) -> str:
    unit = APPLE_M4
    good = [r for r in results if not r.get("error")]
    lines = [BEGIN, "## SME outer-product kernels (ARCH v92)", "",
             f"GEMM {'x'.join(map(str, SHAPE[2]))} through the public API on each GEMM type's SME "
             f"path, under `qemu-aarch64 -cpu max,sme-default-vector-length=N,sme_fa64=off` "
             f"({meta.get('qemu', 'qemu')}), counted from `bench_mark` on. llvm-mca has no SME "
             "model: the figures are the dynamic instruction mix (tbcount plugin) and the "
             f"estimate of a small SME-unit model (`bench/sme_model.py`, {unit.name}).", "",
             "Model: streaming cycles = max(MOPAs / MOPA rate, vector loads / load rate, ZA<->Z "
             "moves / move rate, stores / store rate, other / other rate), for the SME kernels "
             "and, as a phase of its own, for the streaming packers (`gen/sme_pack.py`); loads "
             "and stores count the Z registers they move (LD4W 4, ST2H 2, ST4B 4); core cycles "
             "= non-streaming instructions / core IPC; % of peak = useful MACs / ((kernels + "
             "packers + core) x MOPA rate x S·S·k). Rates (per cycle): MOPA "
             + ", ".join(f"{k} {v:g}" for k, v in unit.mopa_per_cycle.items())
             + f"; loads {unit.load_per_cycle:g}, stores {unit.store_per_cycle:g}, ZA moves "
             f"{unit.move_per_cycle:g}, other streaming {unit.other_per_cycle:g}, core IPC "
             f"{unit.core_ipc:g}. Sources: " + "; ".join(unit.sources) + ".", ""]
    at = [r for r in good if r["svl_bits"] == TARGET_SVL_BITS]
    if at:
        lines += [f"### SVL {TARGET_SVL_BITS} (issue 14 targets: useful MACs per MOPA ≥ "
                  f"{TARGET_USEFUL:g} %, MOPA ≥ {TARGET_SHARE:g} % of instructions for int8 and "
                  f"bf16, ≥ {TARGET_PEAK:g} % of model peak for fp32, bf16, int8)", "",
                  "| type | kernel | instructions | MOPA | loads | ZA moves | other streaming | "
                  "streaming packers | non-streaming (packing / other) | MOPA share (kernel) | "
                  "useful MACs/MOPA | model bound | MACs/cycle | % of model peak |",
                  "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
                  "--- | ---: | ---: |"]
        for r in at:
            st, e = r["streaming"], r["estimate"]
            other = sum(st[c] for c in ("other", "za_zero", "smstart", "store"))
            lines.append(
                f"| {r['label']} | `{', '.join(r['kernels'])}` | {r['total_instructions']:,} | "
                f"{r['mopas']:,} | {st['load']:,} | {st['za_move']:,} | {other:,} | "
                f"{r.get('packer_instructions', 0):,} | "
                f"{r['core_instructions']:,} ({r['core']['packing']:,} / "
                f"{r['core_instructions'] - r['core']['packing']:,}) | "
                f"{r['mopa_share']:.1f} %{_ok(r['mopa_share'], TARGET_SHARE, r['dtype'] in SHARE_TYPES)}"
                f" ({r['kernel_mopa_share']:.1f} %) | "
                f"{r['useful_per_mopa']:.1f} %{_ok(r['useful_per_mopa'], TARGET_USEFUL, True)} | "
                f"{e['bound']} | {e['macs_per_cycle']:.0f} of {e['peak_macs_per_cycle']:.0f} | "
                f"{e['percent_of_peak']:.1f} %"
                f"{_ok(e['percent_of_peak'], TARGET_PEAK, r['dtype'] in PEAK_TYPES)} |")
        lines.append("")
    svls = sorted({r["svl_bits"] for r in good})
    if svls:
        lines += ["### Every streaming vector length", "",
                  "MOPA share of dynamic instructions / useful MACs per MOPA / % of model peak "
                  "(S = SVL/32; one MOPA = S·S·k MACs).", "",
                  "| type | " + " | ".join(f"SVL {v}" for v in svls) + " |",
                  "| --- |" + " ---: |" * len(svls)]
        for dtype in dict.fromkeys(r["dtype"] for r in good):
            row = {r["svl_bits"]: r for r in good if r["dtype"] == dtype}
            cells = [f"{row[v]['mopa_share']:.1f} / {row[v]['useful_per_mopa']:.1f} / "
                     f"{row[v]['estimate']['percent_of_peak']:.1f} %" if v in row else "–"
                     for v in svls]
            lines.append(f"| {row[next(iter(row))]['label']} | " + " | ".join(cells) + " |")
        lines.append("")
    errors = [r for r in results if r.get("error")]
    for r in errors:
        lines.append(f"- {r['dtype']} SVL {r['svl_bits']}: {r['error']}")
    lines += [_bounds_note(at), "", END]
    return "\n".join(lines) + "\n"


def _bounds_note(at: list[dict]) -> str:
    """What bounds the rest, from the measured mix (stated per run in the table)."""
    if not at:
        return ""
    return ("What bounds the rest: the panels keep four instruction k-steps of a row (column) "
            "side by side, so one LD4W loads the operand vectors of four k-steps and a kernel "
            "loop issues tr + tc loads per 4·tr·tc MOPAs (2VLx2VL: 4 per 16, 1VLx4VL: 5 per 16; "
            "with the pointer advances, SUBS and B.NE per iteration of eight panel k-steps "
            "78 / 74 % MOPAs). Outside the loop each kernel call loads its "
            "accumulator tile (every K block after the first; K runs whole while the panels fit "
            "gen/blocking.py SME_L2_BYTES) and stores or requantises its C "
            "rows (the int8 `_requant` and uint8 `_requant_u8` epilogues: 26-40 instructions per "
            "C row of 4S outputs by rounding mode and clamp, 26 for rounding 2 over the whole "
            "output range, against K/S "
            "MOPAs per row: 32 at K = 512, SVL 512; docs/PERFORMANCE.md \"SME\" bounds the int8 "
            "output's MOPA share below 50 % there). The streaming "
            "packers (`gen/sme_pack.py`) move whole streaming vectors (the fp32 -> bf16 "
            "rounding: one BFCVT per vector under the default FPCR, else 8 vector instructions; "
            "counted as 'other' at the model's 4 per cycle: optimistic, see "
            "bench/sme_model.py); the driver loop and the "
            "requantisation parameters run outside streaming mode and add their core cycles to "
            "every call.")


def write(results: list[dict], meta: dict, md_path: Path) -> None:
    """Put the section into md_path (replacing an earlier one) and the figures beside it."""
    put_section(render(results, meta), BEGIN, END, md_path, "_sme.json", results, meta)


def put_section(section: str, begin: str, end: str, md_path: Path, json_suffix: str,
                results: list[dict], meta: dict) -> None:
    """Put `section` (from `begin` to `end`) into md_path, replacing an earlier one, and the
    figures beside it in <stem><json_suffix>."""
    text = md_path.read_text() if md_path.exists() else "# tilesmith performance report\n\n"
    if begin in text and end in text:
        text = re.sub(re.escape(begin) + r".*?" + re.escape(end) + r"\n?", lambda _: section,
                      text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    md_path.parent.mkdir(parents=True, exist_ok=True)
    md_path.write_text(text)
    md_path.with_name(md_path.stem + json_suffix).write_text(
        json.dumps(dict(meta=meta, unit=asdict(APPLE_M4), results=results), indent=1) + "\n")


# ---- decode (M = 1) on an SME core: the SME tile against the GEMV kernel ------------------------
# `--sme --only gemv[,<dtype>...]`: decode M = 1, N = K = 4096 with B prepacked (the weights of an
# LLM layer; bench/workloads.py "gemv") on each SME type, twice per SVL: with TS_FEAT_SME alone
# (dispatch can run only the SME tile: what every call ran before the SME paths had a GEMV
# kernel) and with every feature QEMU's -cpu max reports (the SME path's GEMV kernel where the
# narrow-B rule picks it, gen/sme_gemv.py). The same model as the GEMM rows: the NEON GEMV
# kernel runs outside streaming mode and counts at the model's core IPC.
DECODE = ("gemv", "decode GEMV M=1 N=K=4096, B prepacked", (1, 4096, 4096))
DECODE_FEATURES = (("sme", "SME tile (TS_FEAT_SME only)"),
                   ("sme+dotprod+i8mm+bf16+fp16+fp16fml", "every feature"))
DECODE_BEGIN, DECODE_END = "<!-- sme-decode -->", "<!-- /sme-decode -->"


def decode_requested(only: str) -> bool:
    return DECODE[0] in [w.strip() for w in only.split(",")]


def profile_decode(program, plugin, work_dir: Path, manifest: dict, svls=SVL_BITS, only="",
                   jobs=2, progress=print) -> list[dict]:
    """Profile DECODE on every SME type (those of `only` besides "gemv") at every SVL of
    `svls`, with each feature set of DECODE_FEATURES; returns the summaries."""
    table = sym.SymbolTable.from_elf(program)
    mark = table.address_of(sym.MARK)
    sme_symbols = {k["symbol"] for k in manifest.get("sme_kernels", [])}
    pack_symbols = {k["symbol"] for k in manifest.get("sme_packers", [])}
    kernels = {k["symbol"] for k in manifest.get("kernels", [])}
    rest = ",".join(w for w in only.split(",") if w.strip() and w.strip() != DECODE[0])
    work_dir.mkdir(parents=True, exist_ok=True)
    runs = [(t, features, svl) for t in sme_types(rest) for features, _ in DECODE_FEATURES
            for svl in svls]

    def one(run):
        t, features, svl = run
        args = ["gemm-prepacked", t.bench_dtype, features, *map(str, DECODE[2])]
        tag = "all" if "+" in features else features
        try:
            blocks, _ = run_profiled(program, args, plugin,
                                     work_dir / f"sme-decode-{t.bench_dtype}-{tag}-{svl}.tb",
                                     cpu=qemu_cpu(svl), mark=mark)
        except ProfileError as e:
            return dict(dtype=t.bench_dtype, svl_bits=svl, features=features,
                        error=str(e).splitlines()[0][:300])
        neon = sorted({table.lookup(b.vaddr) for b in blocks} & kernels)
        r = summarise(blocks, table, sme_symbols, t, svl, pack_symbols, shape=DECODE[2])
        r.update(features=features, neon_kernels=neon, shape=list(DECODE[2]))
        return r

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, runs))
    for r in results:
        progress(f"  sme decode {r['dtype']:<7} SVL {r['svl_bits']:<5} {r['features']:<12} "
                 + (f"error: {r['error']}" if r.get("error") else
                    f"{r['estimate']['cycles']:,.0f} model cycles "
                    f"({', '.join(r['kernels'] + r['neon_kernels'])})"))
    return results


def render_decode(results: list[dict], meta: dict) -> str:
    lines = [DECODE_BEGIN, f"## SME cores: {DECODE[1]}", "",
             f"Per SME type and SVL, under `qemu-aarch64 -cpu max,sme-default-vector-length=N,"
             f"sme_fa64=off` ({meta.get('qemu', 'qemu')}), the call counted from `bench_mark` on "
             "and estimated with the model of the section above (the NEON GEMV kernel runs "
             "outside streaming mode: core instructions at the model's core IPC "
             f"{APPLE_M4.core_ipc:g}). Features: {DECODE_FEATURES[0][1]} = every call on the SME "
             "tile; every feature = the SME path's GEMV kernel where dispatch picks it "
             "(gen/sme_gemv.py).", "",
             "| type | SVL | features | kernels | instructions | MOPAs | model cycles | "
             "useful MACs/cycle | B bytes/cycle |", "| --- | ---: | --- | --- | ---: | ---: | "
             "---: | ---: | ---: |"]
    for r in results:
        if r.get("error"):
            lines.append(f"| {r['dtype']} | {r['svl_bits']} | {r['features']} | error: "
                         f"{r['error']} | | | | | |")
            continue
        t = next(t for t in GEMM_TYPES if t.bench_dtype == r["dtype"])
        # the weights streamed: B's packed elements (bf16: 2 bytes)
        b_bytes = DECODE[2][1] * DECODE[2][2] * TYPE_BYTES[PACKED[t.sme.pack_b][1]]
        e = r["estimate"]
        lines.append(f"| {r['label']} | {r['svl_bits']} | {r['features']} | "
                     f"`{', '.join(r['kernels'] + r['neon_kernels'])}` | "
                     f"{r['total_instructions']:,} | {r['mopas']:,} | {e['cycles']:,.0f} | "
                     f"{e['macs_per_cycle']:.1f} | {b_bytes / e['cycles']:.1f} |")
    lines += ["", DECODE_END]
    return "\n".join(lines) + "\n"


def write_decode(results: list[dict], meta: dict, md_path: Path) -> None:
    """Put the decode section into md_path (replacing an earlier one) and the figures beside it."""
    put_section(render_decode(results, meta), DECODE_BEGIN, DECODE_END, md_path,
                "_sme_decode.json", results, meta)
