"""Kernel emitter: one TilePlan -> one `.S` micro-kernel per epilogue variant (text) and its
manifest entry.

The parts that are text (ABI comment, symbol/section macros for ELF / Mach-O / COFF, section
layout) live in templates/kernel.S.j2; this module supplies the instruction lists: the frame
and register save/restore, the software-pipelined k-loop (gen.loop, ordered by
gen.schedule.schedule_loop), and the raw C-tile store (MMLA 2x2 tiles unzipped to rows first);
gen.epilogue supplies what contract v2 adds around the loop (accumulator input, partial tiles,
fused epilogues).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from fractions import Fraction

import jinja2

from encoder import FEATURES, rewrite_text

from . import epilogue as ep_mod
from . import loop
from . import strip as strip_mod
from .isa import ARCH_NAMES, INSTRUCTIONS, NUM_VREGS, TYPE_BYTES, signature
from .loop import C_PTR, LDC, KernelPlanError
from .naming import kernel_symbol
from .plan import STRATEGIES, TilePlan, operand_mode
from .templating import template_environment
from .schedule import (Insn, best_body, fraction_of_peak, modeled_cost, schedule_loop,
                       targets)

INST_MODES = ("auto", "always", "never")

ODD_ROW_PTR = ep_mod.ODD_ROW_PTR   # row pointer of odd C rows (C_PTR walks the even ones)
# Main-loop variants the scheduler's model chooses from (gen.schedule.best_body): (k-steps per
# iteration, load form (gen.loop "Load forms"), most registers one ld1 merges, fewest registers
# that make a load ld1). Merging 1 keeps every ld1 at one register: LLVM's Cortex-A55 model
# gives a 2-register ld1 7 cycles (1 register: 5), which holds up the MACs and loads after it
# (in-order write-back); merging 4 suits Cortex-A510 (fewer pointers to advance per
# iteration). "ldr" keeps immediate offsets: best for fmla (RetireOOO on both in-order models,
# so its loads never wait for it), where Cortex-A55's 2-wide issue is the limit and 8 k-steps
# per iteration amortise the loop control best. "ldr_r" (register offsets, only x0/x1 advance):
# Cortex-A55's dot-product loops (4-cycle loads, two pointer adds per iteration).
# 6 k-steps with 4-register ld1 (twelve pointers, x5-x16): Cortex-A510's matrix MACs (smmla,
# bfmmla, ...). On its model a pointer add, the subs and the branch wait for the MACs before them
# to write back (2 idle cycles), then issue 3 a cycle with no MAC beside them, so one iteration
# pays about 2 + (pointers + 2) / 3 cycles: llvm-mca-19 -mcpu=cortex-a510, smmla 8x8 (16 MACs
# per k-step, 8 cycles at the peak), 2026-11-23: 4 k-steps 38 cycles (8 pointers, 84.2 % of
# the peak), 6 k-steps 55 (87.3 %), 8 k-steps 79 with the 13 pointers x5-x17 (3 loads left
# `ldr`, 81.0 %), 73 with 16 pointers (87.7 %): x5-x17, x4 (ldc, kept in the frame) and x0/x1
# (gen.loop EXTRA_POINTER_REGS), no callee-saved register. Eight k-steps also leave no
# remainder at the common k-step counts (ksteps - 1 = 63, 127: the peeled last iteration,
# gen.loop loop_tail, instead of 3 and 1 single steps with six).
MAIN_LOOP_VARIANTS = ((2, "ldr", 1, 1), (4, "ldr", 1, 1), (8, "ldr", 1, 1),
                      (2, "ld1", 1, 1), (4, "ld1", 1, 1), (2, "ld1", 4, 1), (4, "ld1", 4, 1),
                      (4, "ld1", 4, 2), (6, "ld1", 4, 1), (8, "ld1", 4, 1), (2, "ldr_r", 1, 1),
                      (4, "ldr_r", 1, 1))
# AAPCS64 (Arm IHI 0055, "SIMD and Floating-Point registers" / "General-purpose registers"):
# the low 64 bits of v8-v15 and x19-x28 are callee-saved; x18 is the platform register.
CALLEE_SAVED_VREGS = range(8, 16)
# STP Qt1, Qt2, [Xn, #imm]: imm is a multiple of 16 in -1024..1008 (Arm ARM C7.2 "STP (SIMD&FP)").
STP_Q_MAX_OFFSET = 1008



def arch_directive(inst) -> str | None:
    """`.arch` value that lets an assembler accept the instruction's mnemonic (INST=never
    output): its architecture level plus its feature, e.g. armv8.2-a+dotprod; None on Armv8.0."""
    return f"{ARCH_NAMES[inst.arch]}+{inst.feature}" if inst.feature else None


def c_element_bytes(plan: TilePlan) -> int:
    """Bytes of one C element (the accumulator type) of the plan's instruction."""
    return TYPE_BYTES[plan.inst.c_type]


@dataclass(frozen=True)
class Kernel:
    symbol: str
    file: str
    text: str
    manifest: dict


# ---- plan checks ---------------------------------------------------------------------------
def check_plan(plan: TilePlan) -> None:
    """Raise KernelPlanError naming the first thing that makes `plan` unusable."""
    if plan.instruction not in INSTRUCTIONS:
        raise KernelPlanError(f"unknown instruction {plan.instruction!r}")
    inst = plan.inst
    where = f"{plan.instruction} {plan.ep}x{plan.hp}x{plan.lp}"
    if plan.lp != inst.k:
        raise KernelPlanError(f"{where}: lp must be the instruction's k = {inst.k}")
    if not inst.tile_ok(plan.ep, plan.hp):
        raise KernelPlanError(f"{where}: ep must be a multiple of {inst.c_rows_per_reg} and hp "
                              f"of {inst.c_cols_per_reg}")
    if plan.strategy not in STRATEGIES:
        raise KernelPlanError(f"{where}: unknown strategy {plan.strategy!r} "
                              f"(valid: {', '.join(STRATEGIES)})")
    need_a, need_b = inst.a_regs(plan.ep), inst.b_regs(plan.hp)
    for operand, have, need in (("a", len(plan.a_regs), need_a), ("b", len(plan.b_regs), need_b)):
        mode = operand_mode(plan.strategy, operand)
        ok = {"stream": 1 <= have < need, "resident": have == need,
              "double": have == 2 * need}[mode]
        if not ok:
            raise KernelPlanError(f"{where} {plan.strategy}: {have} {operand.upper()} registers "
                                  f"for {need} {operand.upper()} chunks per k-step"
                                  + (" (two banks)" if mode == "double" else ""))
    if len(plan.c_regs) != inst.c_regs(plan.ep, plan.hp):
        raise KernelPlanError(f"{where}: {len(plan.c_regs)} accumulators, need "
                              f"{inst.c_regs(plan.ep, plan.hp)}")
    regs = plan.a_regs + plan.b_regs + plan.c_regs
    if len(set(regs)) != len(regs) or not all(0 <= r < NUM_VREGS for r in regs):
        raise KernelPlanError(f"{where}: vector registers must be distinct v0-v31: {regs}")
    if inst.acc_shape == "row" and max(plan.a_regs) >= inst.a_index_regs:
        raise KernelPlanError(f"{where}: {inst.mnemonic} by element needs A in "
                              f"v0-v{inst.a_index_regs - 1}, plan has {plan.a_regs}")
    if plan.hp * c_element_bytes(plan) - 32 > STP_Q_MAX_OFFSET:
        raise KernelPlanError(f"{where}: a C row of {plan.hp} elements is beyond the reach of "
                              f"the row stores (stp q offsets up to {STP_Q_MAX_OFFSET})")
    for operand in ("a", "b"):
        loop.chunks(plan, operand)      # raises for an unloadable partial register


# ---- instruction lists -----------------------------------------------------------------------
_VREG = re.compile(r"\b[vqdshb](\d+)\b")


def callee_saved_used(plan: TilePlan, extra: list[Insn] = ()) -> list[str]:
    """d8-d15 among the plan's registers and those the `extra` instructions name."""
    used = set(plan.a_regs + plan.b_regs + plan.c_regs)
    used |= {int(n) for insn in extra for n in _VREG.findall(insn.text.split("//")[0])}
    return [f"d{r}" for r in CALLEE_SAVED_VREGS if r in used]


def frame_bytes(saved: list[str]) -> int:
    """Stack frame for the saved registers, 16-byte aligned (AAPCS64 SP alignment)."""
    return -(-8 * len(saved) // 16) * 16


def _pairs(items):
    return [items[i:i + 2] for i in range(0, len(items), 2)]


def save_registers(saved: list[str], frame: int, args_offset: int,
                   keep_args: bool = True) -> list[Insn]:
    """Open the frame (saved registers, the argument pointer, the stack tile) and save;
    keep_args False: not the argument pointer (a kernel that keeps x5 throughout)."""
    code = [Insn(f"sub sp, sp, #{frame}", "alu",
                 comment="frame: saved registers, args, stack tile")]
    for i, pair in enumerate(_pairs(saved)):
        op = "stp" if len(pair) == 2 else "str"
        code.append(Insn(f"{op} {', '.join(pair)}, [sp, #{16 * i}]", "store"))
    if keep_args:
        code.append(Insn(f"str {ep_mod.ARGS_REG}, [sp, #{args_offset}]", "store",
                         comment="args, for after the k-loop"))
    return code


def restore_registers(saved: list[str], frame: int) -> list[Insn]:
    code = []
    for i, pair in enumerate(_pairs(saved)):
        op = "ldp" if len(pair) == 2 else "ldr"
        code.append(Insn(f"{op} {', '.join(pair)}, [sp, #{16 * i}]", "load"))
    code.append(Insn(f"add sp, sp, #{frame}", "alu"))
    return code


def store_rows(plan: TilePlan) -> list[Insn]:
    """Row forms: accumulator (row r, column block j) holds C[r][4j..4j+3]."""
    inst = plan.inst
    code = []
    blocks = plan.hp // inst.c_cols_per_reg
    for row in range(plan.ep):
        pointer = C_PTR if row % 2 == 0 else ODD_ROW_PTR
        pieces = [(plan.c_reg_for(row, j), 16, 16 * j) for j in range(blocks)]
        code += ep_mod.row_access("str", pointer, pieces, row)
        if row % 2 == 1:
            code += ep_mod.advance_rows(row, plan.ep, C_PTR, ODD_ROW_PTR, LDC)
    return code


def store_tiles(plan: TilePlan) -> list[Insn]:
    """2x2 tile forms: accumulator (row block i, column block j) = [r0c0 r0c1 r1c0 r1c1] of
    rows 2i, 2i+1 and columns 2j, 2j+1. Two horizontally adjacent tiles X, Y unzip into the
    rows: uzp1 .2d -> row 2i, columns 2j..2j+3; uzp2 .2d -> row 2i+1 (Arm ARM C7.2 UZP1, UZP2).
    An odd last tile stores its low half (row 2i) directly and its high half via uzp2 X, X."""
    temps = list(plan.a_regs + plan.b_regs)     # free once the last MAC has read them
    blocks = plan.hp // 2
    groups_per_batch = max(1, len(temps) // 2)
    code = []
    for rb in range(plan.ep // 2):
        even, odd = 2 * rb, 2 * rb + 1
        column_groups = list(range(0, blocks, 2))
        for batch_start in range(0, len(column_groups), groups_per_batch):
            batch = column_groups[batch_start:batch_start + groups_per_batch]
            pieces_even, pieces_odd = [], []
            for n, cb in enumerate(batch):
                x = plan.c_reg_for(rb, cb)
                t0, t1 = temps[2 * n], temps[2 * n + 1]
                offset = cb * 2 * c_element_bytes(plan)
                if cb + 1 < blocks:
                    y = plan.c_reg_for(rb, cb + 1)
                    code.append(Insn(f"uzp1 v{t0}.2d, v{x}.2d, v{y}.2d", "alu",
                                     comment=f"row {even}, columns {2 * cb}-{2 * cb + 3}"))
                    code.append(Insn(f"uzp2 v{t1}.2d, v{x}.2d, v{y}.2d", "alu",
                                     comment=f"row {odd}, columns {2 * cb}-{2 * cb + 3}"))
                    pieces_even.append((t0, 16, offset))
                    pieces_odd.append((t1, 16, offset))
                else:
                    code.append(Insn(f"uzp2 v{t1}.2d, v{x}.2d, v{x}.2d", "alu",
                                     comment=f"row {odd}, columns {2 * cb}-{2 * cb + 1}"))
                    pieces_even.append((x, 8, offset))
                    pieces_odd.append((t1, 8, offset))
            code += ep_mod.row_access("str", C_PTR, pieces_even, even)
            code += ep_mod.row_access("str", ODD_ROW_PTR, pieces_odd, odd)
        code += ep_mod.advance_rows(odd, plan.ep, C_PTR, ODD_ROW_PTR, LDC)
    return code


def store_tile(plan: TilePlan) -> list[Insn]:
    code = []
    if plan.ep > 1:
        code.append(Insn(f"add {ODD_ROW_PTR}, {C_PTR}, {LDC}", "alu", comment="row 1"))
    return code + (store_tiles(plan) if plan.inst.acc_shape == "tile2x2" else store_rows(plan))


def scheduled_body(plan: TilePlan, cpu: str) -> list[Insn]:
    """The single-step loop, list-scheduled for `cpu` (it runs at most unroll - 1 times per
    call, so the local search is spent on the main loop)."""
    body = loop.iteration_body(plan)
    scheduled = schedule_loop(body, cpu, search=False)
    loop.check_same_dependencies(body, scheduled)
    return scheduled


def main_loop_variants(plan: TilePlan) -> list[loop.MainLoop]:
    """Every main loop of MAIN_LOOP_VARIANTS that can be built for `plan`, unscheduled."""
    loops, problems = [], []
    for unroll, form, merge, min_ld1 in MAIN_LOOP_VARIANTS:
        try:
            loops.append(loop.main_loop(plan, unroll, form, merge, min_ld1))
        except KernelPlanError as error:     # e.g. an offset LDR/LDUR cannot reach
            problems.append(f"{unroll} k-steps, {form}: {error}")
    if not loops:
        raise KernelPlanError(f"{plan.instruction} {plan.ep}x{plan.hp}: no main loop variant "
                              f"can be built ({'; '.join(problems)})")
    return loops


def buildable(plan: TilePlan) -> bool:
    """Whether a kernel of `plan` can be emitted: check_plan passes and some main loop variant
    reaches every load (e.g. smlal 1x92 stream_b_double_a cannot: 92 bytes of B per k-step put
    its loads beyond LDR / LDUR offsets and beyond ldr_r's offset registers). The solvers keep
    only such tiles (gen.gemv.gemv_candidates)."""
    try:
        check_plan(plan)
        main_loop_variants(plan)
    except KernelPlanError:
        return False
    return True


def chosen_main_loop(plan: TilePlan, cpu: str) -> loop.MainLoop:
    """The main loop variant (MAIN_LOOP_VARIANTS) that models fastest for `cpu`, unscheduled
    (scheduling reorders it, the instructions stay)."""
    loops = main_loop_variants(plan)
    return loops[best_body([candidate.body for candidate in loops], cpu)]


def step_instructions(main: loop.MainLoop) -> Fraction:
    """MAC and load instructions per k-step of a main loop, as emitted (e.g. sdot 1x32x4 for
    Cortex-A55: 8 sdot + 8 `ldr q` of B + 1 `ldr s` of A = 17, where multi-register `ld1`
    would take 11 but models slower there). The pointer advances, counter and branch are left
    out: they are amortised over the unrolled k-steps."""
    return Fraction(sum(1 for insn in main.body if insn.kind in ("mac", "load")), main.unroll)


def scheduled_main_loop(plan: TilePlan, cpu: str) -> loop.MainLoop:
    """The main loop variant (MAIN_LOOP_VARIANTS) that models fastest for `cpu`, scheduled."""
    chosen = chosen_main_loop(plan, cpu)
    scheduled = schedule_loop(chosen.body, cpu)
    loop.check_same_dependencies(chosen.body, scheduled)
    return replace(chosen, body=scheduled)


def main_loop_fractions(plan: TilePlan, cpu: str, search: bool = True) -> dict[str, float]:
    """Modeled fraction of the MAC peak of `plan`'s main loop on each in-order core the `cpu`
    schedule is judged on (gen.schedule.targets): the loop this module emits, or with
    `search=False` the variant best after list scheduling, list-scheduled (cheaper)."""
    if search:
        body = scheduled_main_loop(plan, cpu).body
    else:
        bodies = [candidate.body for candidate in main_loop_variants(plan)]
        cheapest = min(range(len(bodies)),
                       key=lambda k: (round(modeled_cost(bodies[k], cpu), 9), k))
        body = schedule_loop(bodies[cheapest], cpu, search=False)
    return {core.name: fraction_of_peak(body, core) for core in targets(body, cpu)
            if core.in_order}


# ---- manifest and rendering ------------------------------------------------------------------
_GP_REG = re.compile(r"\b[xw](\d+)\b")


def gp_registers_used(text: str) -> list[str]:
    """x registers (x or w form) named by the instructions of a kernel's text."""
    used = set()
    for line in text.splitlines():
        code = line.split("//", 1)[0].strip()
        if not code or code.startswith(("#", ".")) and not code.startswith(".inst"):
            continue
        used |= {int(n) for n in _GP_REG.findall(code)}
    return [f"x{n}" for n in sorted(used)]


def vregs_used(plan: TilePlan, extra: list[Insn] = ()) -> list[int]:
    used = set(plan.a_regs + plan.b_regs + plan.c_regs)
    used |= {int(n) for insn in extra for n in _VREG.findall(insn.text.split("//")[0])}
    return sorted(used)


def manifest_entry(plan: TilePlan, symbol: str, main: loop.MainLoop, text: str,
                   extra: list[Insn] = ()) -> dict:
    """`extra`: the instructions outside the k-loop (their registers count as used)."""
    inst = plan.inst
    return {
        "symbol": symbol, "file": f"{symbol}.S", "instruction": plan.instruction,
        "mnemonic": inst.mnemonic, "signature": signature(inst),
        "a_type": inst.a_type, "b_type": inst.b_type, "c_type": inst.c_type,
        "source_type": inst.source_type, "feature": inst.feature, "arch": inst.arch,
        "ep": plan.ep, "hp": plan.hp, "lp": plan.lp, "strategy": plan.strategy,
        "regs_a": len(plan.a_regs), "regs_b": len(plan.b_regs), "regs_c": len(plan.c_regs),
        "vregs_used": vregs_used(plan, extra),
        "gpregs_used": gp_registers_used(text),
        "callee_saved_used": callee_saved_used(plan, extra),
        "a_layout": plan.a_layout, "b_layout": plan.b_layout, "role": "main",
        "a_step_bytes": loop.step_bytes(plan, "a"), "b_step_bytes": loop.step_bytes(plan, "b"),
        "unroll": main.unroll,
    }


def environment() -> jinja2.Environment:
    env = template_environment()
    env.filters["asm"] = asm_line
    env.globals["tile_args_struct"] = ep_mod.c_struct
    env.globals["strip_struct"] = strip_mod.c_struct
    env.filters["vregs"] = register_ranges
    env.filters["comment"] = lambda text, lead: "\n".join(
        (lead + line).rstrip() for line in text.strip("\n").split("\n"))
    return env


def register_ranges(regs) -> str:
    """'v0, v1, v2, v5' -> 'v0-v2, v5' (in the given order)."""
    runs: list[list[int]] = []
    for r in regs:
        if runs and r == runs[-1][-1] + 1:
            runs[-1].append(r)
        else:
            runs.append([r])
    return ", ".join(f"v{run[0]}" if len(run) == 1 else f"v{run[0]}-v{run[-1]}" for run in runs)


def asm_line(insn: Insn) -> str:
    """One instruction line: 8-space indent, text, comment aligned at column 48 (a label
    starts the line)."""
    if insn.kind == "label":
        return insn.text
    line = f"        {insn.text}"
    return f"{line:<47} // {insn.comment}" if insn.comment else line


def inst_features(inst_mode: str):
    """Features whose instructions the encoder rewrites to `.inst` words for INST=mode."""
    if inst_mode not in INST_MODES:
        raise ValueError(f"unknown INST {inst_mode!r}: valid values are {', '.join(INST_MODES)}")
    return {"auto": FEATURES, "always": "all", "never": ()}[inst_mode]


def emit_kernel(plan: TilePlan, prefix: str, inst_mode: str = "auto",
                cpu: str = "generic", env: jinja2.Environment | None = None,
                epilogue: str = "raw", main: loop.MainLoop | None = None) -> Kernel:
    """One kernel of `plan` with `epilogue` (gen.epilogue.EPILOGUES); `main` (the scheduled
    main loop of this plan and cpu) may be passed to share it between epilogue variants."""
    check_plan(plan)
    ep_mod.check_epilogue(plan, epilogue)
    inst = plan.inst
    variant = ep_mod.EPILOGUES[epilogue]
    symbol = kernel_symbol(prefix, inst, plan.ep, plan.hp, plan.lp, cpu, variant.suffix)
    out_bytes = variant.out_bytes or c_element_bytes(plan)
    main = main or scheduled_main_loop(plan, cpu)
    if epilogue == "raw":
        write = store_tile(plan)
    else:
        write = ep_mod.epilogue_and_store(plan, epilogue)
    saved = callee_saved_used(plan, write)
    args_offset, tile_offset, frame = ep_mod.frame_layout(frame_bytes(saved), plan)
    fast = ep_mod.has_fast_path(epilogue)
    store_setup = (ep_mod.slow_setup(plan, tile_offset, out_bytes) if fast else
                   ep_mod.store_setup(plan, args_offset, tile_offset, out_bytes,
                                      require_args=epilogue != "raw", epilogue=epilogue))
    context = dict(
        symbol=symbol, plan=plan, inst=inst, cpu=cpu, prefix=prefix,
        signature=signature(inst), a_bytes=TYPE_BYTES[inst.a_type],
        a_step=loop.step_bytes(plan, "a"), b_step=loop.step_bytes(plan, "b"),
        arch_directive=arch_directive(inst) if inst_mode == "never" else None,
        save=save_registers(saved, frame, args_offset), restore=restore_registers(saved, frame),
        saved=saved, acc_setup=ep_mod.acc_load(plan, tile_offset, c_element_bytes(plan),
                                                     epilogue), preload=loop.preload(plan),
        main=main, pointer_setup=loop.pointer_setup(plan, main),
        panel_fixup=loop.panel_fixup(plan, main), load_form=main_load_form(main),
        body=scheduled_body(plan, cpu), tail=loop.peeled_last_step(plan),
        loop_tail=loop.loop_tail(main), **ldc_spill(main, args_offset),
        fast_setup=ep_mod.fast_setup(plan, args_offset, epilogue) if fast else [],
        fast_write=(ep_mod.fast_write(plan, epilogue, restore_registers(saved, frame))
                    if fast else []),
        store_setup=store_setup,
        strip=strip_mod.context(plan, epilogue, saved, main, scheduled_body(plan, cpu), cpu),
        strip_labels=strip_mod.LABELS,
        write=write, copy_out=ep_mod.copy_out(plan, tile_offset, out_bytes),
        streamed=loop.streamed_operand(plan), epilogue=variant,
        out_type=variant.out_type(inst.c_type),
        regs=dict(a=plan.a_regs, b=plan.b_regs, c=plan.c_regs),
        modes={x: operand_mode(plan.strategy, x) for x in "ab"},
    )
    env = env or environment()
    text = ep_mod.render_with_used_labels(env.get_template("kernel.S.j2"), context,
                                          ep_mod.LABELS)
    features = inst_features(inst_mode)
    if features:
        text = rewrite_text(text, features, filename=f"{symbol}.S")
    entry = manifest_entry(plan, symbol, main, text, write + context["acc_setup"])
    entry.update(epilogue=epilogue, out_type=variant.out_type(inst.c_type),
                 strip=f"{symbol}_strip" if context["strip"] else None,
                 params_cols=ep_mod.params_cols(plan) if variant.family == "requant" else 0)
    return Kernel(symbol, f"{symbol}.S", text, entry)


def emit_kernels(plan: TilePlan, prefix: str, inst_mode: str = "auto", cpu: str = "generic",
                 env: jinja2.Environment | None = None) -> list[Kernel]:
    """The kernels of `plan`, one per epilogue variant (gen.epilogue.variants_for), raw first;
    they share one scheduled k-loop."""
    check_plan(plan)
    main = scheduled_main_loop(plan, cpu)
    env = env or environment()
    return [emit_kernel(plan, prefix, inst_mode, cpu, env, epilogue, main)
            for epilogue in ep_mod.variants_for(plan.instruction)]


def ldc_spill(main: loop.MainLoop, args_offset: int) -> dict[str, list[Insn]]:
    """ldc_save / ldc_reload: x4 (ldc) kept in the frame word after args (gen.epilogue
    frame_layout pads args to 16 bytes) while the main loop uses it as an ld1 pointer."""
    if not main.spills_ldc:
        return dict(ldc_save=[], ldc_reload=[])
    slot = f"[sp, #{args_offset + 8}]"
    return dict(ldc_save=[Insn(f"str {loop.LDC_REG}, {slot}", "store",
                               comment="ldc: x4 is an ld1 pointer in the main loop")],
                ldc_reload=[Insn(f"ldr {loop.LDC_REG}, {slot}", "load",
                                 comment="ldc (an ld1 pointer in the main loop)")])


def main_load_form(main: loop.MainLoop) -> str:
    """One line for the kernel comment: how the main loop loads its operands."""
    if main.offset_regs:
        regs = ", ".join(reg for reg, _ in main.offset_regs)
        return f"ldr from x0/x1 with register offsets {regs} (set once; x0/x1 advance)"
    if not main.pointers:
        return "ldr with immediate offsets from x0/x1"
    regs = ", ".join(p.reg for p in main.pointers)
    return f"ld1 from pointer registers {regs} (advanced once per iteration)"
