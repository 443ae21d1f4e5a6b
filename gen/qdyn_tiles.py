"""The qdyn kernels' choices for `make tiles` (gen/tiles_cli.py): per qdyn kind (int4 per
channel, int4 scale blocks, int8 per channel) the prefill and decode kernels each path of the
qdyn chain gets (the solvers of gen/qdyn4.py, gen/qdyn4_dot.py, gen/qdyn4_rl.py: what `make gen`
generates), and at M = 1 whether the smmla or the sdot decode kernel wins and why, from the
solvers' own models: modeled weight bytes per cycle per core and the operation counts per 16
weight bytes of each decode kernel's instruction mix (README "qdyn kernels").

Every figure is computed here from those models; the verdict is a function of the figures
(`verdict`), so it changes when they do.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import qdyn4, qdyn4_dot, qdyn4_rl, qdyn8_dot
from .isa import INSTRUCTIONS, instructions_for
from .loop import KernelPlanError
from .tiling import TilingError, covered_cores

PREFIX = "ts_"
# The decode workload's K for int8 weights (one block of all of K: the epilogue per column is
# spread over K; issue 12's decode GEMV M = 1, N = K = 4096).
S8_DECODE_K = 4096
SCALE_BLOCK = 32          # int4 scale blocks: the block the solvers rank for (RANK_BL)
KINDS = ("int4 per channel", "int4 scale blocks", "int8 per channel")


@dataclass(frozen=True)
class DecodeModel:
    """One decode kernel's modeled mix: `counts` per unit of `weight_bytes` packed weight bytes
    (a k-step or a block of the kernel), `cycles(core)` the solver's modeled cycles for it."""
    symbol: str
    weight_bytes: int
    counts: dict
    cycles: Callable
    a_lp: int            # k per k-step of its int8 A (and B) layout: 8 smmla, 4 sdot / Armv8.0
    columns: int         # columns per handle panel (the layout's panel width)

    def rate(self, core) -> float:
        return self.weight_bytes / self.cycles(core)

    def per16(self) -> dict:
        """Vector operations (MACs, unpack, epilogue), loads and all instructions per 16 weight
        bytes."""
        u = self.weight_bytes / 16
        c = self.counts
        vector = c["mac"] + c.get("unpack", 0) + c.get("epilogue", 0)
        return {"mac": c["mac"] / u, "vector": vector / u, "loads": c["loads"] / u,
                "instructions": sum(c.values()) / u}


def _kernels(kind: str, inst: str, cpu: str):
    """(prefill symbol, decode model or None) of kind on the path of instruction inst."""
    if kind == "int4 per channel":
        pre, dec = qdyn4_rl.solve(inst, cpu), qdyn4_rl.solve(inst, cpu, True)
        c = qdyn4_rl.step_counts(dec.ep, dec.panels, inst)
        model = DecodeModel(qdyn4_rl.kernel_symbol(PREFIX, dec), 16 * dec.panels, c,
                            lambda core, d=dec: qdyn4_rl.step_cycles(d.ep, d.panels, core,
                                                                     instruction=inst),
                            dec.lp, dec.family.columns)
        return qdyn4_rl.kernel_symbol(PREFIX, pre), model
    if kind == "int4 scale blocks":
        bl = SCALE_BLOCK
        if inst in qdyn4.QDYN4_INSTRUCTIONS:
            pre, dec = qdyn4.solve(inst, cpu), qdyn4.solve(inst, cpu, decode=True)
            model = DecodeModel(
                qdyn4.kernel_symbol(PREFIX, dec), qdyn4.weight_bytes(dec.hp, bl, "s4"),
                qdyn4.block_counts(dec.ep, dec.hp, bl, "s4", dec.panels),
                lambda core, d=dec: qdyn4.block_cycles(d.ep, d.hp, core, bl, "s4", d.panels),
                8, dec.pc)
            return qdyn4.kernel_symbol(PREFIX, pre), model
        pre = qdyn4_dot.solve(inst, cpu)
        if inst not in qdyn4_dot.DECODE_INSTRUCTIONS:
            return qdyn4_dot.kernel_symbol(PREFIX, pre), None
        dec = qdyn4_dot.solve(inst, cpu, True)
        model = DecodeModel(
            qdyn4_dot.kernel_symbol(PREFIX, dec), dec.hp * bl // 2,
            qdyn4_dot.block_counts(dec.ep, dec.hp, bl, inst, dec.panels),
            lambda core, d=dec: qdyn4_dot.block_cycles(d.ep, d.hp, core, bl, inst, d.panels),
            qdyn4_dot.LP, dec.pc)
        return qdyn4_dot.kernel_symbol(PREFIX, pre), model
    if inst not in qdyn4.QDYN4_INSTRUCTIONS:       # int8: the raw kernel + the C epilogue
        return None, _raw_decode(inst, cpu)
    k = S8_DECODE_K
    pre, dec = qdyn4.solve(inst, cpu, "s8"), qdyn4.solve(inst, cpu, "s8", True)
    model = DecodeModel(qdyn4.kernel_symbol(PREFIX, dec), qdyn4.weight_bytes(dec.hp, k, "s8"),
                        qdyn4.block_counts(dec.ep, dec.hp, k, "s8", dec.panels),
                        lambda core, d=dec: qdyn4.block_cycles(d.ep, d.hp, core, k, "s8",
                                                               d.panels),
                        8, dec.pc)
    return qdyn4.kernel_symbol(PREFIX, pre), model


def _raw_decode(inst: str, cpu: str):
    """The decode model of an int8 handle of the raw kernel's panels (gen/qdyn8_dot.py: the
    decode kernel over several of those panels per call, the fp32 epilogue inside; per k-step
    of the inner loop, the once-per-call epilogue not counted), or None."""
    from .tile_policy import solve
    if inst not in qdyn8_dot.QDYN8_DOT_INSTRUCTIONS:
        return None
    d = qdyn8_dot.solve_decode(solve(inst, cpu=cpu).hp, cpu)
    return DecodeModel(qdyn8_dot.decode_symbol(PREFIX, d), d.b_step_bytes() * d.panels,
                       qdyn8_dot.decode_counts(d.ep, d.pc, d.panels),
                       lambda core, d=d: qdyn8_dot.decode_cycles(d.ep, d.pc, d.panels, core),
                       qdyn8_dot.DECODE_LP, d.pc)


TIE = 0.005              # rates within 0.5 % of each other: a tie


def _span(values) -> str:
    values = list(values)
    lo, hi = min(values), max(values)
    return f"{lo:.2f}x" if round(lo, 2) == round(hi, 2) else f"{lo:.2f}-{hi:.2f}x"


def verdict(kind: str, rates: dict, layouts: dict) -> str:
    """The M = 1 statement of one kind from its figures: rates {"smmla" | "sdot": {core: weight
    bytes per cycle}} (either may be missing: no such decode kernel), layouts {instruction:
    (k per k-step, columns per panel)} of the handles each path packs."""
    if "sdot" not in rates:
        return ("smmla only: no sdot decode kernel for this kind (the dotprod path runs the raw "
                "int8 GEMM kernel with the C epilogue); an i8mm handle runs the smmla one"
                if "smmla" in rates else "no decode kernel on either path")
    if "smmla" not in rates:
        return "sdot only: no i8mm path here"
    cores = list(rates["smmla"])
    ratio = {c: rates["sdot"][c] / rates["smmla"][c] for c in cores}
    faster = [c for c in cores if ratio[c] > 1 + TIE]       # sdot faster
    slower = [c for c in cores if ratio[c] < 1 - TIE]
    tied = [c for c in cores if c not in faster and c not in slower]
    ties = f", tie on {', '.join(tied)}" if tied else ""
    if faster and slower:
        head = (f"mixed: sdot faster on {', '.join(faster)} ({_span(ratio[c] for c in faster)}), "
                f"smmla on {', '.join(slower)} ({_span(1 / ratio[c] for c in slower)}){ties}")
    elif faster:
        head = (f"sdot wins on {'every core' if not tied else ', '.join(faster)} "
                f"({_span(ratio[c] for c in faster)} the smmla rate){ties}")
    elif slower:
        return (f"smmla wins on {'every core' if not tied else ', '.join(slower)} "
                f"({_span(1 / ratio[c] for c in slower)} the sdot rate){ties}: i8mm cores run it")
    else:
        head = "tie on every core"
    if layouts["smmla"] == layouts["sdot"]:
        return head + "; one handle layout: an i8mm handle could run either"
    return (f"{head}; the sdot kernel reads the lp-{layouts['sdot'][0]} layout "
            f"({layouts['sdot'][1]}-column panels), which an i8mm handle (lp-{layouts['smmla'][0]}, "
            f"{layouts['smmla'][1]}-column panels) would have to hold beside its own (the weights "
            f"twice): i8mm cores run the smmla kernel")


def qdyn_entries(arch: str, cpu: str) -> list[dict]:
    """Per qdyn kind: the prefill and decode kernels per path of the qdyn chain at arch (the
    paths whose instruction `make gen ARCH=arch` builds and cpu has), and the M = 1 comparison
    of the smmla and sdot decode kernels on the cores with both (the i8mm cores)."""
    names = {i.name for i in instructions_for(arch)}
    paths = []
    for inst in qdyn4_rl.QDYN4_RL_INSTRUCTIONS:
        if inst not in names:
            continue
        try:
            covered_cores(INSTRUCTIONS[inst], cpu)
        except TilingError:
            continue
        paths.append(inst)
    out = []
    for kind in KINDS:
        entry = {"kind": kind, "paths": [], "m1": None}
        models = {}
        for inst in paths:
            try:
                prefill, model = _kernels(kind, inst, cpu)
            except KernelPlanError:
                prefill, model = None, None
            entry["paths"].append({"instruction": inst, "prefill": prefill,
                                   "decode": model.symbol if model else None})
            if model is not None and inst in ("smmla", "sdot"):
                models[inst] = model
        if models:
            cores = [c for c in covered_cores(INSTRUCTIONS["smmla" if "smmla" in models
                                                           else "sdot"], cpu)
                     if all(c.has(INSTRUCTIONS[i].feature) for i in models)]
            rates = {i: {c.name: round(m.rate(c), 2) for c in cores} for i, m in models.items()}
            layouts = {i: (m.a_lp, m.columns) for i, m in models.items()}
            entry["m1"] = {
                "k": S8_DECODE_K if kind.startswith("int8") else None,
                "bl": SCALE_BLOCK if kind == "int4 scale blocks" else None,
                "kernels": {i: m.symbol for i, m in models.items()},
                "weight_bytes_per_cycle": rates,
                "per_16_weight_bytes": {i: {k: round(v, 3) for k, v in m.per16().items()}
                                        for i, m in models.items()},
                "layout": {i: {"k_per_step": lp, "panel_columns": cols}
                           for i, (lp, cols) in layouts.items()},
                "verdict": verdict(kind, rates, layouts)}
        out.append(entry)
    return out


def qdyn_text(entries: list[dict]) -> list[str]:
    """The `make tiles` table section of qdyn_entries."""
    out = ["", "qdyn kernels (int8 activations x int4 / int8 weights -> fp32; gen/qdyn4*.py): "
               "prefill / decode (M <= 4) per path, and at M = 1 which decode kernel wins"]
    for e in entries:
        out.append(f"  {e['kind']}:")
        for p in e["paths"]:
            pre = p["prefill"] or "- (raw int8 kernel + C epilogue)"
            dec = p["decode"] or "-"
            if p["decode"] and not p["prefill"]:      # gen/qdyn8_dot.py: over the raw panels
                dec += " (over the raw kernel's panels)"
            out.append(f"    {p['instruction']:<6} prefill {pre:<36} decode {dec}")
        m = e["m1"]
        if m is None:
            continue
        at = (f"K = {m['k']}" if m["k"] else f"bl = {m['bl']}" if m["bl"] else "per k-step")
        out.append(f"    M = 1 ({at}), modeled weight bytes per cycle and per 16 weight bytes "
                   f"(MACs / vector operations / loads / instructions):")
        for inst, rates in m["weight_bytes_per_cycle"].items():
            c = m["per_16_weight_bytes"][inst]
            figures = ", ".join(f"{core} {v:.2f}" for core, v in rates.items())
            out.append(f"      {m['kernels'][inst]:<34} {figures}  "
                       f"({c['mac']:g} / {c['vector']:g} / {c['loads']:g} / "
                       f"{c['instructions']:g})")
        out.append(f"    verdict: {m['verdict']}")
    return out
