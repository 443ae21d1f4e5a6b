"""`python3 -m gen tiles` — show the register-tiling solver's choice per instruction.

For every instruction available at --arch (or just --instruction): the tile ep x hp x lp, the
A / B / C registers, the residency strategy, bytes per MAC, MACs per loaded byte, the edge
handling, the runner-up candidates with the reason each lost, and the tile policy
(gen/tile_policy.py): for --cpu generic the solver's choice's estimated % of peak per core and,
when it misses a target, the tiles the maximin weighed (the one listed first in the table is the
one `make gen` generates). Exit status 0 when every
requested instruction has a tile, 2 on bad arguments or when a requested tile cannot fit.
An instruction whose feature the chosen --cpu lacks is listed as unavailable (not an error); the
instructions considered and not generated (gen.isa NOT_GENERATED, e.g. bfmlalb/t) are listed
with the reason, and the described ones `make gen` does not turn into kernels at --arch (usdot).
Without --instruction also the qdyn kernels (gen/qdyn_tiles.py): per kind the prefill and decode
kernel of each path and, at M = 1, whether the smmla or the sdot decode kernel wins and why.
"""
from __future__ import annotations

import argparse
import json
import sys

from .cores import CPU_NAMES
from .isa import (ARCH_LEVELS, GENERATED, INSTRUCTIONS, NOT_GENERATED, arch_includes,
                  generated_by_some_arch, instructions_for, sme_generated_for)
from . import gemv
from . import qdyn_tiles
from . import sme_tiling
from .tile_policy import choose
from .tiling import DEFAULT_REGS, TilingError, candidates, check_regs, covered_cores, plan_for

DEFAULT_RUNNERS_UP = 5
NOT_GENERATED_MARK = "*"
NOT_GENERATED_NOTE = (f"{NOT_GENERATED_MARK} known to the solver, but no ARCH generates its kernels "
                      f"yet (gen/isa.py GENERATED)")


class _Parser(argparse.ArgumentParser):
    def error(self, message):           # argparse exits 2 too; keep its message on stderr
        raise TilingError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python3 -m gen tiles", description=__doc__.splitlines()[0])
    p.add_argument("--arch", default="v86", help=f"one of {', '.join(ARCH_LEVELS)} (default v86)")
    p.add_argument("--regs", type=int, default=DEFAULT_REGS,
                   help=f"vector register budget, 1..{DEFAULT_REGS} (default {DEFAULT_REGS})")
    p.add_argument("--cpu", default="generic", help=f"one of {', '.join(CPU_NAMES)}")
    p.add_argument("--format", default="table", choices=("table", "json"))
    p.add_argument("--instruction", help="only this instruction (default: all at --arch)")
    p.add_argument("--runners-up", type=int, default=DEFAULT_RUNNERS_UP,
                   help=f"runner-up candidates to show (default {DEFAULT_RUNNERS_UP})")
    return p


def _selected(args) -> list[str]:
    if args.arch not in ARCH_LEVELS:
        raise TilingError(f"unknown arch {args.arch!r}: valid values are {', '.join(ARCH_LEVELS)}")
    names = [i.name for i in instructions_for(args.arch)]
    if args.instruction is None:
        return names
    if args.instruction not in INSTRUCTIONS:
        raise TilingError(f"unknown instruction {args.instruction!r}: valid values are "
                          f"{', '.join(INSTRUCTIONS)}")
    if args.instruction not in names:
        raise TilingError(f"instruction {args.instruction!r} needs ARCH "
                          f"{INSTRUCTIONS[args.instruction].arch}, not {args.arch}")
    return [args.instruction]


def _unavailable_reason(name: str, cpu: str):
    """Why `cpu` cannot run instruction `name`, or None when it can."""
    try:
        covered_cores(INSTRUCTIONS[name], cpu)
        return None
    except TilingError as e:
        return str(e)


def _not_generated(arch: str) -> dict:
    """{instruction: why `make gen ARCH=arch` has no kernel for it}: gen.isa NOT_GENERATED
    (available at arch), and described instructions left out of GENERATED[arch]."""
    out = {name: reason for name, (level, reason) in NOT_GENERATED.items()
           if arch_includes(arch, level)}
    for inst in instructions_for(arch):
        if inst.name not in GENERATED[arch]:
            out[inst.name] = ("no GEMM type reads its operand types "
                              f"({inst.a_type} A by element x {inst.b_type} B)")
    return out


def _estimate_json(e) -> dict:
    return {"tile": e.candidate.label, "accumulators": e.candidate.regs_c,
            "bytes_per_mac": round(e.candidate.bytes_per_mac, 4), "searched": e.searched,
            "percent_of_peak": {core: round(100 * v, 1) for core, v in e.fractions},
            "worst": {"core": e.worst[0], "percent": round(100 * e.worst[1], 1)}}


def _solve_one(name: str, args) -> dict:
    ranked = candidates(name, args.regs, args.cpu)
    choice = choose(name, args.regs, args.cpu)
    plan = plan_for(choice.candidate, args.cpu)
    entry = plan.to_json()
    entry.update(generated=generated_by_some_arch(name),
                 macs_per_byte=round(choice.candidate.macs_per_byte, 4),
                 bytes_per_mac=round(plan.bytes_per_mac, 4), regs_total=plan.regs_total,
                 feasible_candidates=len(ranked),
                 runners_up=[c.to_json() for c in ranked[1:1 + args.runners_up]],
                 policy=choice.policy,
                 solver_choice=(_estimate_json(choice.first) if choice.first else None),
                 maximin=[_estimate_json(e) for e in choice.weighed])
    small = gemv.choose(name, plan.ep, plan.hp, plan.strategy, args.regs, args.cpu)
    entry["gemv"] = None if small is None else {
        "tile": small.label, "instruction": small.candidate.instruction,   # may be a GEMV form
        "ep": small.candidate.ep, "hp": small.candidate.hp,
        "max_m": small.max_m, "accumulators": small.candidate.regs_c,
        "instructions_per_b_byte": round(float(small.instructions_per_b_byte), 4),
        "b_bytes_per_cycle": {core: round(1 / v, 1) for core, v in small.cycles},
        "runners_up": [c.label for c in small.runners_up]}
    entry["dot_vs_mmla"] = (gemv.dot_vs_mmla(name, args.regs, args.cpu)
                            if name in gemv.DOT_OF_MMLA else None)
    return entry


def _tile_text(e: dict) -> str:
    return f"{e['ep']}x{e['hp']}x{e['lp']}"


def _regs_text(regs) -> str:
    if not regs:
        return "-"
    runs, start = [], regs[0]
    for prev, cur in zip(regs, regs[1:] + (None,)):
        if cur != prev + 1:
            runs.append(f"v{start}" if start == prev else f"v{start}-v{prev}")
            start = cur
    return ",".join(runs)


def _marked(name: str) -> str:
    return name if generated_by_some_arch(name) else name + NOT_GENERATED_MARK


def _table(entries: list[dict], unavailable: dict, args) -> str:
    out = [f"tilesmith tiles: arch {args.arch}, {args.regs} vector registers, cpu {args.cpu}", ""]
    head = f"{'instruction':<11} {'ep x hp x lp':<12} {'strategy':<9} {'A':>2} {'B':>2} " \
           f"{'C':>2} {'regs':>4} {'B/MAC':>7} {'MAC/B':>6}"
    out += [head, "-" * len(head)]
    for e in entries:
        out.append(f"{_marked(e['instruction']):<11} {_tile_text(e):<12} "
                   f"{e['strategy']:<9} {e['regs_a']:>2} {e['regs_b']:>2} {e['regs_c']:>2} "
                   f"{e['regs_total']:>4} {e['bytes_per_mac']:>7.4f} {e['macs_per_byte']:>6.2f}")
    for name, reason in unavailable.items():
        out.append(f"{_marked(name):<11} unavailable: {reason}")
    if not all(generated_by_some_arch(n) for n in [e["instruction"] for e in entries] + list(unavailable)):
        out.append(NOT_GENERATED_NOTE)
    for name, reason in _not_generated(args.arch).items():
        out.append(f"{name:<11} not generated: {reason}")
    out += ["", f"GEMV / small M (M <= {gemv.SMALL_M_MAX}, gen/gemv.py: A resident, B streamed "
                f"once; ranked by instructions, then modeled cycles, per byte of B)"]
    for e in entries:
        g = e["gemv"]
        if g is None:
            served = [m for m, forms in gemv.GEMV_FORMS.items() if e["instruction"] in forms]
            why = ("no GEMV tile beats the GEMM tile" if e["instruction"] in gemv.GEMV_INSTRUCTIONS
                   else f"on no dispatch path; a GEMV form of {', '.join(served)} (GEMV_FORMS)"
                   if served else "not in gen/gemv.py GEMV_INSTRUCTIONS yet")
            out.append(f"  {e['instruction']:<11} none ({why})")
            continue
        rates = ", ".join(f"{c} {v}" for c, v in g["b_bytes_per_cycle"].items())
        tile = g["tile"] if g["instruction"] == e["instruction"] else f"{g['instruction']} {g['tile']}"
        out.append(f"  {e['instruction']:<11} {tile:<26} M <= {g['max_m']}  "
                   f"{g['accumulators']:>2} acc  {g['instructions_per_b_byte']:.4f} instr/B  "
                   f"B bytes/cycle: {rates}")
    for e in entries:
        if e["dot_vs_mmla"]:
            out += ["", f"dot vs mmla at M = 1 ({e['instruction']}):"]
            out += [f"  {line}" for line in e["dot_vs_mmla"].splitlines()]
    out += qdyn_tiles.qdyn_text(_qdyn_entries(args))
    for e in entries:
        out += ["", f"== {e['instruction']}: {e['ep']}x{e['hp']}x{e['lp']} {e['strategy']} "
                    f"({e['feasible_candidates']} feasible candidates)"
                    + ("" if e["generated"] else "  not generated by any ARCH yet"),
                f"  registers  A {_regs_text(tuple(e['a_regs']))}  B {_regs_text(tuple(e['b_regs']))}"
                f"  C {_regs_text(tuple(e['c_regs']))}"]
        out += [f"  note: {n}" for n in e["notes"]]
        out.append(f"  policy: {e['policy']}")
        weighed = e["maximin"] or ([e["solver_choice"]] if e["solver_choice"] else [])
        for w in weighed:
            figures = ", ".join(f"{c} {v}" for c, v in w["percent_of_peak"].items())
            out.append(f"    {w['tile']:<24} {w['accumulators']:>2} acc {w['bytes_per_mac']:.4f} "
                       f"B/MAC  % of peak: {figures}  (worst {w['worst']['percent']})")
        out.append(f"  edge: {e['edge']}")
        if e["runners_up"]:
            out.append("  runners-up:")
        for r in e["runners_up"]:
            out.append(f"   #{r['rank']:<2} {_tile_text(r):<9} {r['strategy']:<9} "
                       f"regs {r['regs_a']}+{r['regs_b']}+{r['regs_c']}={r['regs_total']:<2} "
                       f"{r['bytes_per_mac']:.4f} B/MAC  {r['why']}")
    return "\n".join(out)


def _qdyn_entries(args) -> list[dict]:
    """The qdyn kernels per kind and path, and the M = 1 smmla vs sdot decode verdict
    (gen/qdyn_tiles.py); none with --instruction."""
    return [] if args.instruction else qdyn_tiles.qdyn_entries(args.arch, args.cpu)


def _sme_entries(args) -> list[dict]:
    """The ZA-tiling solver's ranking for each SME outer product of --arch (gen/sme_tiling.py);
    none with --instruction (a NEON instruction's question)."""
    if args.instruction:
        return []
    return [{"instruction": i.name, "tile": sme_tiling.solve(i.name).shape_label,
             "notes": list(sme_tiling.solve(i.name).notes),
             "ranking": [{"rank": c.rank, "shape": c.label, "whole_rows": c.whole_rows,
                          "bytes_per_mac_times_S": str(c.bytes_per_mac_s), "why": c.why}
                         for c in sme_tiling.candidates(i.name)]}
            for i in sme_generated_for(args.arch)]


def _sme_table(entries: list[dict]) -> str:
    out = ["", "SME outer products (ZA tiles; S = SVL/32, sizes in units of VL = S):"]
    for e in entries:
        out += ["", f"== {e['instruction']}: {e['tile']}"] + [f"  note: {n}" for n in e["notes"]]
        out += [f"   #{r['rank']:<2} {r['shape']:<8} whole rows {str(r['whole_rows']):<5} "
                f"{r['bytes_per_mac_times_S']:>5}/S B/MAC  {r['why']}" for r in e["ranking"]]
    return "\n".join(out)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = _parser().parse_args(argv)
        check_regs(args.regs)
        if args.runners_up < 0:
            raise TilingError(f"--runners-up must be >= 0, got {args.runners_up}")
        names = _selected(args)
        if args.cpu not in CPU_NAMES:
            raise TilingError(f"unknown CPU {args.cpu!r}: valid values are {', '.join(CPU_NAMES)}")
        unavailable = {n: r for n in names if (r := _unavailable_reason(n, args.cpu))}
        if args.instruction and unavailable:
            raise TilingError(unavailable[args.instruction])
    except TilingError as e:
        print(f"tiles: error: {e}", file=sys.stderr)
        return 2
    entries, errors = [], []
    for name in names:
        if name in unavailable:
            continue
        try:
            entries.append(_solve_one(name, args))
        except TilingError as e:
            errors.append(str(e))
    if errors:                          # every failure named; no partial answer on stdout
        for message in errors:
            print(f"tiles: error: {message}", file=sys.stderr)
        return 2
    sme = _sme_entries(args)
    if args.format == "json":
        print(json.dumps({"arch": args.arch, "regs": args.regs, "cpu": args.cpu,
                          "tiles": entries, "unavailable": unavailable,
                          "not_generated": sorted(n for n in [e["instruction"] for e in entries]
                                                  + list(unavailable) if not generated_by_some_arch(n)),
                          "left_out": _not_generated(args.arch),
                          "qdyn": _qdyn_entries(args),
                          **({"sme_tiles": sme} if sme else {})}, indent=2))
    else:
        print(_table(entries, unavailable, args) + (_sme_table(sme) if sme else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
