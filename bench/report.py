"""The performance report: metrics derived from the profiles (bench/profile.py), the speedups
between instruction generations, and their Markdown / JSON / PNG renderings.

Everything here works on the plain profile dicts, so it copes with whatever a run produced: a
path the ARCH build lacks, a run that failed, a core without the path's feature (no % of peak,
no speedup), a core tilesmith has no peak figure for, blocks llvm-mca could not model (shown
as coverage below 100 %).
"""
from __future__ import annotations

import json
from pathlib import Path

from gen.cores import CORES, MEMORY
from gen.gemv import compute_bound
from gen import qdyn4, qdyn4_dot, qdyn4_rl, qdyn8_dot
from gen.isa import INSTRUCTIONS, TYPE_BYTES
from gen.qdyn4 import SIGNATURES as QDYN_SIGNATURES

from .symbols import GROUPS

# Speedup = modeled cycles of the baseline path / cycles of the newer path, same shape.
# (label, baseline (dtype, path), newer (dtype, path))
SPEEDUPS = (
    ("smmla / sdot", ("s8", "dotprod"), ("s8", "i8mm")),
    ("sdot / Armv8.0", ("s8", "armv8.0"), ("s8", "dotprod")),
    ("smmla / Armv8.0", ("s8", "armv8.0"), ("s8", "i8mm")),
    ("bfmmla / fp32 fmla", ("f32", "fmla"), ("bf16", "bfmmla")),
    ("bfmmla / bf16 fallback", ("bf16", "fmla"), ("bf16", "bfmmla")),
    ("bfmmla / fp16 fmla", ("f16", "fmla16"), ("bf16", "bfmmla")),
    ("fp16 fmla / fp32 fmla", ("f32", "fmla"), ("f16", "fmla16")),
    ("fp16 fmla / fp16 fallback", ("f16", "fmla"), ("f16", "fmla16")),
    ("fmlal / fp32 fmla", ("f32", "fmla"), ("f16f32", "fmlal")),
)
# Measured on a Cortex-A710 by MNN (shared/seeds/001_a374f7752dd057b7.txt): smmla over sdot
# 1.88x, bfmmla over fp16 fmla 1.92x (an fp16 baseline, not fp32).
MNN_A710 = {"smmla / sdot": 1.88, "bfmmla / fp16 fmla": 1.92}
MNN_NOTE = ("MNN measured smmla 1.88× over sdot and bfmmla 1.92× over **fp16** fmla on a "
            "Cortex-A710 (whole-model figures, real hardware). LLVM 19 schedules cortex-a710 "
            "with the Neoverse N2 model (gen/cores.py), so the neoverse-n2 column is also the "
            "modeled A710 figure.")
HEADLINE_SHAPE = "gemm512"


# ---- metrics --------------------------------------------------------------------------------
def peak_macs_per_cycle(cpu: str, instruction: str) -> float | None:
    """The core's MAC-instruction peak (gen/cores.py throughput x MACs per instruction)."""
    core = CORES.get(cpu)
    if core is None or instruction not in core.mac:
        return None
    return core.throughput(instruction) * INSTRUCTIONS[instruction].macs


def core_metrics(profile: dict, cpu: str) -> dict:
    """MACs/cycle, % of peak and group shares of one profile on one core. `usable` is False
    when the core cannot run the path (its feature is missing) or nothing was modeled."""
    cycles = profile["cycles"][cpu]
    total = cycles["total"]
    insns = profile["instructions"]["total"]
    out = dict(cycles=total, macs_per_cycle=None, peak=None, percent_of_peak=None,
               shares={g: (cycles[g] / total if total else None) for g in GROUPS},
               modeled_fraction=(1 - cycles["unmodeled_instructions"] / insns) if insns else None,
               usable=total > 0, note="")
    if total > 0:
        out["macs_per_cycle"] = profile["macs"] / total
    key = profile.get("kernel_instruction")
    core = CORES.get(cpu)
    if key is None:
        out["note"] = "no micro-kernel ran"
    elif core is None:
        out["note"] = f"no peak figure for {cpu} in gen/cores.py"
    elif not core.has(INSTRUCTIONS[key].feature):
        out.update(usable=False, note=f"{cpu} has no {INSTRUCTIONS[key].feature}")
    else:
        out["peak"] = peak_macs_per_cycle(cpu, key)
        if out["macs_per_cycle"] is not None and out["peak"]:
            out["percent_of_peak"] = 100 * out["macs_per_cycle"] / out["peak"]
    if total == 0 and not out["note"]:
        out["note"] = "no block modeled"
    return _with_roofline(out, profile, cpu)


def roofline(profile: dict, cpu: str) -> dict | None:
    """Roofline-style bound of one profile on one core: the modeled cycles (every load an L1
    hit) against the cycles the simulated traffic needs at gen.cores.MEMORY's bandwidths —
    bytes between L2 and L1D (L1D misses + L1D write-backs, whole lines) and between memory
    and L2 (L2 misses + L2 write-backs). The bound is the largest of the three. None without
    the cache model for this core."""
    memory = (profile.get("memory") or {}).get(cpu)
    if memory is None or cpu not in MEMORY:
        return None
    mm = MEMORY[cpu]
    t = memory["total"]
    l2_bytes = (t["l1_misses"] + t["l1_writebacks"]) * mm.l1d.line
    dram_bytes = (t["l2_misses"] + t["l2_writebacks"]) * mm.l2.line
    terms = {"compute": profile["cycles"][cpu]["total"], "L2": l2_bytes / mm.l2_bytes_per_cycle,
             "DRAM": dram_bytes / mm.dram_bytes_per_cycle}
    bound = max(terms.values())
    return dict(l2_bytes=l2_bytes, dram_bytes=dram_bytes, compute_cycles=terms["compute"],
                l2_cycles=terms["L2"], dram_cycles=terms["DRAM"], bound_cycles=bound,
                limiter=max(terms, key=terms.get),
                macs_per_cycle=profile["macs"] / bound if bound else None,
                of_l1_resident=terms["compute"] / bound if bound else None)


def _with_roofline(out: dict, profile: dict, cpu: str) -> dict:
    roof = roofline(profile, cpu)
    if roof is not None and out["usable"]:
        roof["percent_of_peak"] = (100 * roof["macs_per_cycle"] / out["peak"]
                                   if out["peak"] and roof["macs_per_cycle"] else None)
        out["roofline"] = roof
    return out


def decode_metrics(profile: dict, cpu: str) -> dict | None:
    """Weight bytes per cycle of a prepacked M = 1 GEMV (shape "gemv…") on one core, against
    its bounds: `modeled` = packed weight bytes (K x N x the bytes of the B element the kernel
    reads) / modeled cycles (every load an L1 hit); `compute_bound` from the instruction mix
    (gen.gemv.compute_bound: one MAC per B register, the core's MAC, load and issue rates);
    with the cache model `memory_bound` = weight bytes / the L2 and DRAM cycles of the simulated
    traffic (gen.cores.MEMORY), `achieved` = weight bytes / the roofline bound's cycles and
    `bound` = min(compute_bound, memory_bound). None when not applicable."""
    if (profile["error"] or not profile["shape"].startswith("gemv") or not profile["prepacked"]
            or profile["dims"][0] != 1):
        return None
    key = profile.get("kernel_instruction")
    core = CORES.get(cpu)
    cycles = profile["cycles"][cpu]["total"]
    if key is None or core is None or not core.has(INSTRUCTIONS[key].feature) or not cycles:
        return None
    _, n, k = profile["dims"]
    weight = n * k * TYPE_BYTES[INSTRUCTIONS[key].b_type]
    kernels = profile.get("kernels") or {}
    bound = compute_bound(key, core)
    qdyn = qdyn_decode_bound(max(kernels, key=kernels.get), key, core, k) if kernels else None
    if qdyn is not None:
        weight, bound = int(n * k * qdyn[0]), qdyn[1]
    out = dict(weight_bytes=weight, modeled=weight / cycles, compute_bound=bound)
    out["of_compute_bound"] = out["modeled"] / out["compute_bound"]
    roof = roofline(profile, cpu)
    if roof is not None:
        memory_cycles = max(roof["l2_cycles"], roof["dram_cycles"])
        out["memory_bound"] = weight / memory_cycles if memory_cycles else None
        out["achieved"] = weight / roof["bound_cycles"]
        out["bound"] = min(b for b in (out["compute_bound"], out["memory_bound"]) if b)
        out["of_bound"] = out["achieved"] / out["bound"]
        out["limiter"] = roof["limiter"]
    return out


def qdyn_decode_bound(symbol: str, key: str, core, K: int) -> tuple | None:
    """(weight bytes per weight, compute bound) of a qdyn kernel (gen/qdyn4*.py) by its symbol,
    from its own scheme's instruction mix: int8 (`_s8s8f32_`, gen.qdyn4 weights "s8": per 16
    bytes a load and an smmla, the epilogue once per K; sdot: gen.qdyn8_dot, a load and an
    sdot), int4 per channel (`_pc`,
    gen.qdyn4_rl: a load, an and, two MACs per 16 bytes), int4 scale blocks at bl = 32 (smmla:
    gen.qdyn4, sdot / Armv8.0: gen.qdyn4_dot; per 16 bytes a load, shl, and, the MACs, per
    column and block the correction and three fp32 steps); None: not a qdyn kernel."""
    if f"_{QDYN_SIGNATURES['s8']}_" in symbol:
        if key not in qdyn4.QDYN4_INSTRUCTIONS:      # sdot: over the raw panels (gen.qdyn8_dot)
            return 1, qdyn8_dot.compute_bound(core)
        return 1, qdyn4.compute_bound(core, "s8", K, key)
    if f"_{QDYN_SIGNATURES['s4']}_" not in symbol:
        return None
    if symbol.endswith("_pc") or "_pc_" in symbol:
        return 0.5, qdyn4_rl.compute_bound(core, instruction=key)
    if key in qdyn4.QDYN4_INSTRUCTIONS:
        return 0.5, qdyn4.compute_bound(core, "s4", 32, key)
    return 0.5, qdyn4_dot.compute_bound(core, key, 32)


def decode_table(report) -> str:
    """Prepacked M = 1 GEMV: weight bytes per modeled cycle, % of the instruction-mix bound,
    and with the cache model the achieved rate against min(compute, memory) bound."""
    cpus = report["meta"]["cores"]
    rows = []
    for p in report["profiles"]:
        cells = []
        for cpu in cpus:
            d = decode_metrics(p, cpu)
            if d is None:
                cells.append("n/a")
                continue
            cell = f"{d['modeled']:.1f} ({100 * d['of_compute_bound']:.0f} % of {d['compute_bound']:.1f})"
            if "achieved" in d:
                cell += (f"; mem {d['achieved']:.2f} ({100 * d['of_bound']:.0f} % of "
                         f"{d['bound']:.2f}, {d['limiter']})")
            cells.append(cell)
        if any(c != "n/a" for c in cells):
            rows.append([p["title"], _path_label(p), *cells])
    return _table(["workload", "path (kernel)", *cpus], rows) if rows else "(no decode GEMV ran)"


def find_profile(profiles, shape: str, dtype: str, path: str) -> dict | None:
    for p in profiles:
        if p["shape"] == shape and p["dtype"] == dtype and p["path"] == path and not p["error"]:
            return p
    return None


def ran_as_expected(profile: dict) -> bool:
    return profile.get("kernel_instruction") == profile["expected_instruction"]


def speedups(profiles, cpus) -> list[dict]:
    """Every defined speedup for every shape where both paths ran, per core (None when a core
    cannot run one of the paths)."""
    rows = []
    shapes = list(dict.fromkeys(p["shape"] for p in profiles))
    for label, base, new in SPEEDUPS:
        for shape in shapes:
            b, n = find_profile(profiles, shape, *base), find_profile(profiles, shape, *new)
            if not b or not n or not (ran_as_expected(b) and ran_as_expected(n)):
                continue   # a missing or mis-dispatched path has no speedup (see the notes)
            row = dict(ratio=label, shape=shape, title=n["shape_title"], per_core={}, promised={},
                       mnn_a710=MNN_A710.get(label))
            for cpu in cpus:
                mb, mn = b["metrics"][cpu], n["metrics"][cpu]
                ok = mb["usable"] and mn["usable"]
                row["per_core"][cpu] = mb["cycles"] / mn["cycles"] if ok else None
                pb = peak_macs_per_cycle(cpu, b["expected_instruction"])
                pn = peak_macs_per_cycle(cpu, n["expected_instruction"])
                row["promised"][cpu] = pn / pb if ok and pb and pn else None
            rows.append(row)
    return rows


def biggest_overheads(profiles, cpu: str, count: int = 6) -> list[dict]:
    """The runs whose largest non-kernel group takes the biggest share of modeled cycles."""
    rows = []
    for p in profiles:
        if p["error"] or not p["metrics"][cpu]["cycles"]:
            continue
        shares = p["metrics"][cpu]["shares"]
        group = max((g for g in GROUPS if g != "kernel"), key=lambda g: shares[g] or 0)
        rows.append(dict(workload=p["workload"], title=p["title"], path=p["path"], group=group,
                         share=shares[group] or 0))
    return sorted(rows, key=lambda r: -r["share"])[:count]


def notes(profiles, missing_paths) -> list[str]:
    """Everything a reader must know that the tables do not show."""
    out = [f"{w}: path {p} not in this ARCH build" for w, p in missing_paths]
    for p in profiles:
        tag = f"{p['workload']} [{p['path']}]"
        if p["error"]:
            out.append(f"{tag}: run failed: {p['error']}")
            continue
        if not ran_as_expected(p):
            out.append(f"{tag}: dispatch ran {p.get('kernel_instruction') or 'no kernel'}, expected "
                       f"{p['expected_instruction']} (left out of the speedups)")
        zva = max((mem["total"].get("dc_zva", 0) for mem in (p.get("memory") or {}).values()),
                  default=0)
        if zva:
            out.append(f"{tag}: {zva} DC ZVA executions (block zeroing, e.g. glibc memset) are "
                       "outside the cache model (QEMU plugin API v1 cannot see their address)")
        for cpu, m in p["metrics"].items():
            if m["modeled_fraction"] is not None and m["modeled_fraction"] < 0.9999:
                reasons = "; ".join(p["cycles"][cpu]["unmodeled_reasons"])
                out.append(f"{tag} on {cpu}: {100 * (1 - m['modeled_fraction']):.3f} % of the "
                           f"instructions unmodeled ({reasons})")
    out.extend(checksum_notes(profiles))
    out.extend(variant_notes(profiles))
    return out


def variant_notes(profiles) -> list[str]:
    """The class runs of one workload and path (bench.profile class_runs; with the cache model,
    one per class and core caches) must print the same checksum: a core-class variant gives the
    generic kernel's results (int exact; fp32 / bf16 the same fused multiply-add chain per
    output, whatever the tile), and the cache blocks do not change results."""
    out = []
    for p in profiles:
        sums = {v["core_class"] + (f" L2 {v['cache_sizes'][1] // 1024} KiB"
                                   if v.get("cache_sizes") else ""): v["checksum"]
                for v in (p.get("variants") or {}).values()}
        if len(set(sums.values())) > 1:
            out.append(f"{p['workload']} [{p['path']}]: checksums differ between the core-class "
                       f"runs {sums}")
    return out


def variants_table(report) -> str | None:
    """The kernel each core ran, for the runs where some core ran its class's variant (None
    when no core did)."""
    cpus = report["meta"]["cores"]
    rows = []
    for p in report["profiles"]:
        v = p.get("variants") or {}
        if p["error"] or all(v.get(c, {}).get("core_class", "generic") == "generic" for c in cpus):
            continue
        rows.append([p["title"], p["path"], *(f"`{v[c]['kernel']}` ({v[c]['core_class']} run)"
                                              if v[c]["kernel"] else "—" for c in cpus)])
    return _table(["workload", "path", *cpus], rows) if rows else None


def checksum_notes(profiles) -> list[str]:
    """int8 outputs are exact: every path of one int8 workload must print the same checksum."""
    out = []
    for name in dict.fromkeys(p["workload"] for p in profiles if p["dtype"] == "s8"):
        sums = {p["path"]: p.get("checksum") for p in profiles if p["workload"] == name and not p["error"]}
        if len(set(sums.values())) > 1:
            out.append(f"{name}: int8 outputs differ between paths: {sums}")
    return out


def build_report(profiles, *, cpus, meta, kernel_table=None, kernel_table_error=None,
                 missing_paths=()) -> dict:
    """The report data (what report.json holds). Adds `metrics` to each profile."""
    for p in profiles:
        if not p["error"]:
            p["metrics"] = {cpu: core_metrics(p, cpu) for cpu in cpus}
    return dict(meta=dict(meta, cores=list(cpus)), profiles=profiles,
                speedups=speedups(profiles, cpus),
                overheads=biggest_overheads(profiles, cpus[0]) if cpus else [],
                kernel_table=kernel_table,
                kernel_table_error=kernel_table_error, notes=notes(profiles, missing_paths))


def write_json(report: dict, path) -> None:
    Path(path).write_text(json.dumps(report, indent=1, sort_keys=False) + "\n")


# ---- Markdown ------------------------------------------------------------------------------
def _table(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _num(x, fmt="{:.2f}", missing="—") -> str:
    return missing if x is None else fmt.format(x)


def _core_cell(m: dict) -> str:
    if not m["usable"]:
        return f"n/a ({m['note']})"
    cell = f"{m['macs_per_cycle']:.2f}"
    if m["percent_of_peak"] is not None:
        cell += f" ({m['percent_of_peak']:.0f} %)"
    return cell


def _path_label(p: dict) -> str:
    return f"{p['path']} ({p['kernel_instruction'] or 'no kernel'})"


def headline_table(report) -> str:
    cpus = report["meta"]["cores"]
    rows = [[p["title"], _path_label(p), *(_core_cell(p["metrics"][c]) for c in cpus)]
            for p in report["profiles"] if p["shape"] == HEADLINE_SHAPE and not p["error"]]
    return _table(["workload", "path (kernel)", *cpus], rows)


def speedup_table(report) -> str:
    cpus = report["meta"]["cores"]
    rows = []
    for s in report["speedups"]:
        cells = [f"{_num(s['per_core'][c])}× (peak {_num(s['promised'][c], '{:.1f}')}×)"
                 if s["per_core"][c] is not None else "n/a" for c in cpus]
        rows.append([s["ratio"], s["title"], *cells,
                     _num(s["mnn_a710"], "{:.2f}×")])
    return _table(["speedup", "workload", *cpus, "MNN A710"], rows)


def overheads_list(report) -> str:
    return "\n".join(f"- {o['title']} [{o['path']}]: {o['group']} {o['share']:.1%} of the cycles"
                     for o in report["overheads"]) or "- none"


def groups_table(report, cpu) -> str:
    rows = []
    for p in report["profiles"]:
        if p["error"]:
            continue
        m = p["metrics"][cpu]
        n = p["instructions"]["total"]
        rows.append([p["title"], _path_label(p), f"{n / 1e6:.1f}", f"{p['macs'] / n:.2f}" if n else "—",
                     *(_num(m["shares"][g], "{:.1%}") for g in GROUPS)])
    return _table(["workload", "path (kernel)", "instructions (M)", "MACs / instruction",
                   *(f"{g} (% cycles)" for g in GROUPS)], rows)


def cores_table(report) -> str:
    cpus = report["meta"]["cores"]
    rows = [[p["title"], _path_label(p), *(_core_cell(p["metrics"][c]) for c in cpus)]
            for p in report["profiles"] if not p["error"]]
    return _table(["workload", "path (kernel)", *cpus], rows)


def _has_memory(report) -> bool:
    return any(p.get("memory") for p in report["profiles"] if not p["error"])


def _memory_cores(report) -> list[str]:
    """The report's cores whose caches were simulated in some run."""
    return [c for c in report["meta"]["cores"]
            if any(c in (p.get("memory") or {}) for p in report["profiles"] if not p["error"])]


def _millions(x) -> str:
    return f"{x / 1e6:.3f}"


def misses_table(report) -> str:
    """L1D and L2 misses (millions) of every run with the cache model, per simulated core."""
    cpus = _memory_cores(report)
    rows = []
    for p in report["profiles"]:
        if p["error"] or not p.get("memory"):
            continue
        totals = [p["memory"][c]["total"] if c in p["memory"] else None for c in cpus]
        cells = [f"{_millions(t['l1_misses'])} / {_millions(t['l2_misses'])}" if t else "—"
                 for t in totals]
        accesses = next(t["accesses"] for t in totals if t)
        rows.append([p["title"], _path_label(p), f"{accesses / 1e6:.1f}", *cells])
    return _table(["workload", "path (kernel)", "accesses (M)",
                   *(f"{c} L1D / L2 misses (M)" for c in cpus)], rows)


def _roof_cell(m: dict) -> str:
    roof = m.get("roofline")
    if roof is None:
        return f"n/a ({m['note']})" if not m["usable"] else "—"
    cell = f"{roof['macs_per_cycle']:.2f}"
    if roof["percent_of_peak"] is not None:
        cell += f" ({roof['percent_of_peak']:.0f} %)"
    cell += f" {roof['limiter']}"
    if roof["limiter"] != "compute":
        cell += f", {roof['of_l1_resident']:.2f}× L1-resident"
    return cell


def roofline_table(report) -> str:
    """Bound MACs/cycle (% of peak) and what bounds it, per core."""
    cpus = _memory_cores(report)
    rows = [[p["title"], _path_label(p), *(_roof_cell(p["metrics"][c]) for c in cpus)]
            for p in report["profiles"] if not p["error"] and p.get("memory")]
    return _table(["workload", "path (kernel)", *cpus], rows)


def group_misses_table(report, cpu) -> str:
    """L1D / L2 misses (thousands) per group on one core."""
    rows = []
    for p in report["profiles"]:
        if p["error"] or not (p.get("memory") or {}).get(cpu):
            continue
        mem = p["memory"][cpu]
        rows.append([p["title"], _path_label(p),
                     *(f"{mem[g]['l1_misses'] / 1e3:.0f} / {mem[g]['l2_misses'] / 1e3:.0f}"
                       for g in GROUPS)])
    return _table(["workload", "path (kernel)", *(f"{g} L1D / L2 (K)" for g in GROUPS)], rows)


def threads_table(report, cpu) -> str:
    """Threads that ran the operation, their modeled cycles on one core and the balance."""
    rows = []
    for p in report["profiles"]:
        t = (p.get("threads") or {}).get(cpu) if not p["error"] else None
        if not t:
            continue
        cycles = ", ".join(f"{v}: {c / 1e6:.2f}" for v, c in t["cycles"].items())
        rows.append([p["title"], _path_label(p), len(t["cycles"]), cycles,
                     _num(t["balance"], "{:.3f}")])
    return _table(["workload", "path (kernel)", "threads", f"Mcycles per vCPU ({cpu})",
                   "max / mean"], rows)


def memory_model_text(report) -> str:
    if not _has_memory(report):
        return ("- **No cache model in this run** (`--no-cache`): every load hits L1, so the "
                "figures say nothing about operands larger than the caches.")
    cores = ", ".join(f"{c} {m.l1d.size // 1024} KB {m.l1d.ways}-way L1D / {m.l2.size // 1024} KB "
                      f"{m.l2.ways}-way L2, {m.l2_bytes_per_cycle:g} B/cycle from L2, "
                      f"{m.dram_bytes_per_cycle:.2f} B/cycle from DRAM"
                      for c, m in MEMORY.items() if c in _memory_cores(report))
    return ("- **Cache model**: the plugin also simulates each core's L1D and L2 on every load "
            "and store (set-associative, LRU, 64-byte lines, write-back write-allocate with write "
            "streaming — a line stores write whole right after their miss is not read from memory —, private "
            "per thread, empty at the start of the operation; gen/cores.py MEMORY: " + cores +
            "). Misses are charged to the block that caused them, so they add up per group. "
            "The **roofline bound** per core is the largest of the modeled cycles, the bytes "
            "moved between L2 and L1D ÷ the L2 bandwidth and the bytes moved between DRAM and "
            "L2 ÷ the DRAM bandwidth (no L3 is modeled: every L2 miss goes to DRAM; DRAM "
            "bandwidth is the core's share when all cores of the reference chip stream). "
            "Latency is not modeled: the bound assumes misses overlap with compute.")


def cache_sections(report) -> list[str]:
    if not _has_memory(report):
        return []
    ref = _memory_cores(report)[0]
    return [
        "## Cache model: misses and roofline bound", "",
        "Bound MACs/cycle (% of peak) per core and what bounds it (compute: the L1-resident "
        "figure above; L2 or DRAM: the traffic at the core's bandwidth, with the bound as a "
        "fraction of the L1-resident figure).", "",
        roofline_table(report), "",
        "L1D / L2 misses (millions) of the operation:", "",
        misses_table(report), "",
        f"### Misses per group ({ref}, thousands)", "",
        group_misses_table(report, ref), "",
        f"### Threads ({ref})", "",
        "qemu-user runs each guest thread as a vCPU; the plugin counts per vCPU.", "",
        threads_table(report, ref), "",
    ]


def kernel_table_md(report) -> str:
    table = report["kernel_table"]
    if report["kernel_table_error"]:
        return f"Per-kernel table unavailable: {report['kernel_table_error']}"
    if not table:
        return "Per-kernel table unavailable: bench/kernels_mca.py returned no rows."
    header = list(dict.fromkeys(k for row in table for k in row))
    return _table(header, [[_cell(row.get(k)) for k in header] for row in table])


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return "" if value is None else str(value)


def render_markdown(report, charts: dict) -> str:
    """The report as Markdown; `charts` maps chart names to links relative to the .md file."""
    meta = report["meta"]
    cpus = meta["cores"]
    ref = cpus[0]
    parts = [
        f"# tilesmith performance report — ARCH={meta['arch']}, CPU={meta['cpu']}",
        "",
        f"Generated by `make bench` ({meta['date']}; {meta['qemu']}, llvm-mca {meta['llvm_mca']}).",
        "",
        "## How this is measured",
        "",
        "- Each workload is one whole public-API call (`ts_gemm_*`, `ts_conv2d_s8`) run once per "
        "dispatch path under `qemu-aarch64 -cpu " + meta["qemu_cpu"] + "`; `ts_set_feature_mask` forces "
        "the path. The tbcount QEMU plugin counts executions of every translation block; block "
        "addresses map to functions through the ELF symbol table and functions to groups by name "
        "(code inlined into a function counts toward it). The harness's own data preparation is "
        "excluded. \"B prepacked\" / \"filter prepacked\" runs pack the weights once with "
        "`ts_pack_*` before the measurement and measure the `*_prepacked` call (inference with "
        "packed weights); the others measure the plain call, which packs B every time.",
        "- **Modeled cycles**: every executed block is analysed by llvm-mca-19 as a steady-state "
        "loop on each core's LLVM scheduling model and weighted by its execution count; blocks "
        "QEMU split where the program does not branch (page boundaries, long unrolled loop "
        "bodies) are modeled as the one sequence they execute as (`bench/profile.py` "
        "fallthrough_runs). "
        "Every load hits L1 here, branches are predicted perfectly, calls cost one cycle; the "
        "cache model below bounds what that leaves out.",
        memory_model_text(report),
        "- % of peak = modeled MACs/cycle ÷ (the kernel instruction's throughput on that core × "
        "its MACs), throughputs from gen/cores.py. A core that lacks the path's feature "
        "(Cortex-A55: no i8mm, no bf16) shows n/a.",
        "",
        "## GEMM 512³: modeled MACs/cycle (% of peak)",
        "",
        headline_table(report),
        "",
        "## Speedups between instruction generations",
        "",
        "Modeled whole-operation cycles of the older path ÷ the newer one; in brackets the ratio of "
        "the two instructions' peaks on that core. " + MNN_NOTE,
        "",
        speedup_table(report),
        "",
    ]
    variants = variants_table(report)
    if variants:
        parts += [
            "## Per-core kernel variants",
            "",
            "Each core is modeled on the run of the kernel dispatch picks on it: where the build "
            "has a variant of the path's instruction for the core's class (a kernel of its "
            "own, or the generic kernel with the class's cache blocks), that workload also "
            "runs under `qemu-aarch64` with "
            + ", ".join(f"`-cpu {q}` ({c})" for c, q in meta.get("class_qemu_cpu", {}).items())
            + " (QEMU reports the MIDR_EL1 of a core of that class, gen/cores.py CLASS_MIDR) and "
            "the core's cycles, cache misses and threads come from that run; the instruction "
            "counts and group tables from the generic run. The kernel each core ran:",
            "",
            variants,
            "",
        ]
    if "speedups" in charts:
        parts += [f"![speedups]({charts['speedups']})", ""]
    parts += [
        f"## Where time goes ({ref}, share of modeled cycles)",
        "",
        "Largest overheads (the biggest non-kernel group per run):",
        "",
        overheads_list(report),
        "",
        groups_table(report, ref),
        "",
    ]
    if "groups" in charts:
        parts += [f"![share of modeled cycles by group]({charts['groups']})", ""]
    parts += ["## Every workload on every core: modeled MACs/cycle (% of peak)", "", cores_table(report), ""]
    if "peak" in charts:
        parts += [f"![% of peak]({charts['peak']})", ""]
    parts += ["## Decode GEMV (M = 1, B prepacked): weight bytes per modeled cycle", "",
              "Packed weight bytes (K × N × the B element the kernel reads: fp32 4, bf16 2, "
              "the qdyn int4 kernels (`_s8s4f32_`) 0.5, their bound from their own scheme's mix "
              "(bench/report.py qdyn_decode_bound): per channel per 16 "
              "bytes a load, an and, two smmla or sdot (smull, smull2 and two sadalp per 8 bytes on the "
              "Armv8.0 path), `gen/qdyn4_rl.py` compute_bound; scale blocks (bl = 32) per 16 "
              "bytes a load, shl, and, the MACs and per column and block the correction and "
              "three fp32 steps, `gen/qdyn4.py` / `gen/qdyn4_dot.py` compute_bound; "
              "the qdyn int8 kernels (`_s8s8f32_`) 1, per 16 bytes a load and an smmla, "
              "`gen/qdyn4.py` compute_bound (sdot: a load and an sdot, `gen/qdyn8_dot.py` "
              "compute_bound); "
              "int8 1, the Armv8.0 int8 path's int16 2) ÷ modeled cycles, and in brackets % of "
              "the compute bound from the instruction mix (`gen/gemv.py` compute_bound: one MAC "
              "per 16-byte B register at the core's MAC rate, B loaded by 4-register ld1, the "
              "core's load and issue rates). With the cache model, `mem`: weight bytes ÷ the "
              "roofline bound's cycles, as % of min(compute bound, memory bound = weight bytes ÷ "
              "the simulated L2/DRAM traffic's cycles), and the limiter.", "",
              decode_table(report), ""]
    parts += cache_sections(report)
    parts += ["## Per-kernel llvm-mca table (bench/kernels_mca.py)", "", kernel_table_md(report), ""]
    parts += ["## Notes", ""]
    parts += [f"- {n}" for n in report["notes"]] or ["- none"]
    return "\n".join(parts) + "\n"


# ---- charts ----------------------------------------------------------------------------------
def draw_charts(report, out_dir) -> dict:
    """PNG charts into out_dir; returns {chart: Path}. Needs matplotlib."""
    try:
        import matplotlib
    except ImportError:
        raise RuntimeError("matplotlib is missing: run `sh scripts/ensure-deps.sh bench` "
                           "(Debian package python3-matplotlib) or pass --no-charts") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    cpus = report["meta"]["cores"]
    done = [p for p in report["profiles"] if not p["error"]]
    charts = {}

    # 1. where the modeled cycles go on the reference core: share of each group
    ref = cpus[0]
    fig, ax = plt.subplots(figsize=(10, 0.25 * len(done) + 1.5))
    labels = [f"{p['title']} [{p['path']}]" for p in done]
    left = [0.0] * len(done)
    for g in GROUPS:
        widths = [100 * (p["metrics"][ref]["shares"][g] or 0) for p in done]
        ax.barh(labels, widths, left=left, label=g)
        left = [a + b for a, b in zip(left, widths)]
    ax.invert_yaxis()
    ax.margins(x=0, y=0.005)
    ax.set_xlabel(f"% of modeled cycles on {ref} (every load an L1 hit)")
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=3, frameon=False)
    charts["groups"] = _save(fig, out_dir / "cycles_by_group.png")

    # 2. % of peak, GEMM 512^3, per path and core
    head = [p for p in done if p["shape"] == HEADLINE_SHAPE]
    if head:
        fig, ax = plt.subplots(figsize=(10, 4))
        width = 0.8 / len(cpus)
        for j, cpu in enumerate(cpus):
            values = [p["metrics"][cpu]["percent_of_peak"] or 0 for p in head]
            ax.bar([i + j * width for i in range(len(head))], values, width, label=cpu)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(head))])
        ax.set_xticklabels([f"{p['dtype']}\n{p['path']}" for p in head])
        ax.set_ylabel("% of the core's MAC peak (modeled)")
        ax.set_title("GEMM 512³ (0 = core lacks the feature)")
        ax.legend()
        charts["peak"] = _save(fig, out_dir / "peak_gemm512.png")

    # 3. speedups for the headline shape with the instruction-peak promise
    rows = [s for s in report["speedups"] if s["shape"] == HEADLINE_SHAPE]
    if rows:
        fig, ax = plt.subplots(figsize=(10, 4))
        width = 0.8 / len(cpus)
        for j, cpu in enumerate(cpus):
            values = [s["per_core"][cpu] or 0 for s in rows]
            ax.bar([i + j * width for i in range(len(rows))], values, width, label=cpu)
        for i, s in enumerate(rows):
            promised = [v for v in s["promised"].values() if v]
            if promised:
                ax.hlines(max(promised), i - width / 2, i + 0.8 - width / 2, colors="black",
                          linestyles="dashed")
            if s["mnn_a710"]:
                ax.plot(i + 0.4 - width / 2, s["mnn_a710"], "r*", markersize=12)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(rows))])
        ax.set_xticklabels([s["ratio"] for s in rows])
        ax.set_ylabel("speedup (modeled cycles)")
        ax.set_title("GEMM 512³ — dashed: best instruction-peak ratio; red star: MNN on A710")
        ax.legend()
        charts["speedups"] = _save(fig, out_dir / "speedups_gemm512.png")
    return charts


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
