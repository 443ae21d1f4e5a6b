"""Scheduler: orders one iteration of a kernel's inner k-loop for a core model.

The emitter builds the loop body as a list of `Insn` in a dependency-correct order (loads of
the next k-step already placed after the last read of the register they overwrite); the
scheduler may reorder it, never breaking a dependency (RAW, WAR, WAW on registers, within the
iteration and across the loop back-edge). Baseline: the emitter's order (identity).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Insn:
    text: str                   # assembly in mnemonic form (before any .inst rewrite)
    kind: str                   # "load" | "mac" | "alu" | "branch"
    defs: tuple[str, ...] = ()  # registers written: "v3", "x0"; "nzcv" for flag setters
    uses: tuple[str, ...] = ()  # registers read (a MAC reads its accumulator too)
    instruction: str = ""       # gen.isa key for MACs (latency lookup)
    comment: str = ""


def schedule_loop(body: list[Insn], cpu: str) -> list[Insn]:
    """Return the loop body reordered for `cpu` (a gen.cores CPU name or "generic")."""
    return list(body)
