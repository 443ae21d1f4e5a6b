"""Whole-operation profiles: run each workload once per dispatch path under qemu-aarch64 with the
tbcount plugin, file every executed block under its function group, and weight each block's
llvm-mca cycles (per core) by its execution count. When the program has the marker function
(symbols.MARK, bench/workloads.c), counting starts at its call, right before the operation.

A profile is a plain dict (it goes into report.json as is):
  workload, title, shape_title, kind, dtype, shape, prepacked, dims, macs, path, features,
  expected_instruction,
  kernels            {kernel symbol: dynamic instructions}
  kernel_instruction gen.isa key of the kernel that ran most (None when no kernel ran)
  instructions       {group: dynamic instructions} over symbols.GROUPS, plus "total"
  setup_instructions the harness's own instructions (not part of the operation)
  cycles             {cpu: {group: modeled cycles}, "total", "unmodeled_instructions",
                      "unmodeled_reasons"}
  memory             with the cache model: {cpu: {group or "total": {"accesses", "l1_misses",
                      "l2_misses", "l1_writebacks", "l2_writebacks", "dc_zva"}}} (the
                      operation only; dc_zva: executions of DC ZVA, outside the model)
  threads            with the cache model: {cpu: {"cycles": {vcpu: modeled cycles},
                      "l1_misses": {vcpu: n}, "l2_misses": {vcpu: n}, "balance": max/mean}}
  checksum, qemu_seconds, error (None, or why the run produced nothing)
"""
from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from gen.isa import INSTRUCTIONS, signature

from gen.qdyn4 import SIGNATURE as QDYN4_SIGNATURE
from gen.qdyn4_rl import FAMILIES as QDYN4_FAMILIES

from . import symbols as sym
from .mca import CycleModel
from .tbcount import Block, ProfileError, run_profiled
from .workloads import DispatchPath, Workload

QEMU_CPU = "max,sve=off"   # -cpu max (dotprod, i8mm, bf16) without SVE: glibc then takes its
                           # NEON string routines, which every modeled core (A55 too) can run


def instruction_of(symbol: str, prefix: str) -> str | None:
    """gen.isa key of the MAC instruction a kernel symbol names (via its type signature and
    mnemonic), or None."""
    named = sym.kernel_instruction(symbol, prefix)
    if named is None:
        return None
    for key, inst in INSTRUCTIONS.items():
        if (signature(inst), inst.mnemonic) == named:
            return key
    if named[0] == QDYN4_SIGNATURE:          # the qdyn int4 kernels (gen/qdyn4*.py): the path's
        return next((k for k, f in QDYN4_FAMILIES.items() if f.mnemonic == named[1]), None)
    return None


def classify(blocks: list[Block], table: sym.SymbolTable, prefix: str):
    """(group per block, kernel symbol → dynamic instructions)."""
    groups, kernels = [], Counter()
    for block in blocks:
        name = table.lookup(block.vaddr)
        group = sym.group_of(name, prefix)
        groups.append(group)
        if group == "kernel":
            kernels[name] += block.dynamic_insns
    return groups, dict(kernels)


def instruction_profile(blocks, groups) -> tuple[dict, int]:
    """Dynamic instructions per operation group (+ "total") and the harness's own count."""
    counts = {g: 0 for g in sym.GROUPS}
    setup = 0
    for block, group in zip(blocks, groups):
        if group == sym.SETUP:
            setup += block.dynamic_insns
        else:
            counts[group] += block.dynamic_insns
    counts["total"] = sum(counts[g] for g in sym.GROUPS)
    return counts, setup


# ---- fall-through runs --------------------------------------------------------------------------
# QEMU ends a translation block at a branch, but also where the program does not branch: at a
# 4 KiB page boundary and when the block's TCG ops fill their buffer (an unrolled k-loop of
# ~230 NEON instructions becomes 2-4 blocks). Modeled alone, each piece of such a loop body is
# a "loop" of its own, in which an accumulator updated once per piece forms a latency chain
# the real loop does not have (a 12-instruction piece of fmla modeled at 4 cycles on V1 instead
# of 2); and where the page boundary falls depends on the link layout. So the model runs on
# *runs*: a block whose last instruction does not transfer control always continues with the
# block at its end address, and the two execute as one sequence. Each block's executions that
# were not entered by such a fall-through (its count minus its fall-through predecessors'
# counts) start a run, which follows the fall-throughs to the first block that ends in a
# branch; llvm-mca models the run's code as one loop, and the run's cycles are shared among
# its blocks by their instruction counts.

def _ends_in_branch(code: bytes) -> bool:
    """Whether the last A64 instruction of a block transfers control (B, BL, B.cond, BC.cond,
    CBZ/CBNZ, TBZ/TBNZ, BR/BLR/RET/ERET and their authenticated forms, SVC/HVC/SMC/BRK/HLT):
    the A64 "branches, exception generating and system instructions" encodings less the system
    instructions (Arm ARM DDI0487, C4.1.65)."""
    w = int.from_bytes(code[-4:], "little")
    return ((w & 0x7C000000) == 0x14000000 or (w & 0xFF000000) == 0x54000000
            or (w & 0x7E000000) in (0x34000000, 0x36000000)
            or (w & 0xFE000000) == 0xD6000000 or (w & 0xFF000000) == 0xD4000000)


def fallthrough_runs(blocks) -> list[tuple[list[int], int]]:
    """[(block indices of one run in execution order, executions of the run)] covering every
    execution of every block exactly once (module comment above)."""
    at = {}
    for i, b in enumerate(blocks):
        at.setdefault(b.vaddr, []).append(i)
    successor, entered = {}, [b.count for b in blocks]
    for i, b in enumerate(blocks):
        if b.code and not _ends_in_branch(b.code):
            nxt = at.get(b.vaddr + len(b.code), [])
            if len(nxt) == 1 and blocks[nxt[0]].count >= b.count:
                successor[i] = nxt[0]
                entered[nxt[0]] -= b.count
    if any(e < 0 for e in entered):     # inconsistent counts: model every block alone
        return [([i], b.count) for i, b in enumerate(blocks)]
    runs = []
    for i, b in enumerate(blocks):
        if entered[i] > 0:
            run, j = [i], i
            while j in successor and successor[j] not in run:
                j = successor[j]
                run.append(j)
            runs.append((run, entered[i]))
    return runs


def run_cycles(blocks, model: CycleModel, cpu: str) -> list[float | None]:
    """Modeled cycles per execution of each block, from the runs it executes in (None when
    llvm-mca could not model one of them)."""
    total = [0.0] * len(blocks)
    for run, executions in fallthrough_runs(blocks):
        code = b"".join(blocks[i].code for i in run)
        c = model.cycles(cpu, code)
        insns = sum(blocks[i].n_insns for i in run)
        for i in run:
            if c is None or total[i] is None:
                total[i] = None
            else:
                total[i] += c * executions * blocks[i].n_insns / insns
    return [t if t is None or b.count == 0 else t / b.count for t, b in zip(total, blocks)]


def run_codes(blocks) -> set:
    """The code of every run (what the cycle model must prepare)."""
    return {b"".join(blocks[i].code for i in run) for run, _ in fallthrough_runs(blocks)}


def cycle_profile(blocks, groups, model: CycleModel, cpu: str) -> dict:
    """Modeled cycles per group on one core; blocks llvm-mca could not model are counted
    (instructions, and the reasons) instead of being guessed."""
    cycles = {g: 0.0 for g in sym.GROUPS}
    unmodeled, reasons = 0, Counter()
    per_block = run_cycles(blocks, model, cpu)
    for block, group, c in zip(blocks, groups, per_block):
        if group == sym.SETUP:
            continue
        if c is None:
            unmodeled += block.dynamic_insns
            reasons[model.reason(cpu, block.code) or "in a run llvm-mca could not model"] += \
                block.dynamic_insns
        else:
            cycles[group] += c * block.count
    cycles["total"] = sum(cycles[g] for g in sym.GROUPS)
    cycles["unmodeled_instructions"] = unmodeled
    cycles["unmodeled_reasons"] = dict(reasons.most_common(5))
    return cycles


MISS_FIELDS = ("l1_misses", "l2_misses", "l1_writebacks", "l2_writebacks")


def _add_misses(into: dict, misses) -> None:
    for name, value in zip(MISS_FIELDS, (misses.l1, misses.l2, misses.l1_writebacks,
                                         misses.l2_writebacks)):
        into[name] += value


def memory_profile(blocks, groups, cpu: str) -> dict:
    """Memory accesses and cache events per group (+ "total") of the operation on one
    simulated core, over all vCPUs."""
    empty = dict.fromkeys(("accesses", *MISS_FIELDS, "dc_zva"), 0)
    out = {g: dict(empty) for g in (*sym.GROUPS, "total")}
    for block, group in zip(blocks, groups):
        if group == sym.SETUP:
            continue
        for into in (out[group], out["total"]):
            into["accesses"] += sum(accesses for _, accesses in block.vcpus.values())
            into["dc_zva"] += sum(block.dc_zva.values())
            for (_, core), misses in block.misses.items():
                if core == cpu:
                    _add_misses(into, misses)
    return out


def balance(per_thread: dict) -> float | None:
    """max / mean of the per-thread values (1.0: perfectly balanced), None without threads."""
    values = list(per_thread.values())
    if not values or not sum(values):
        return None
    return max(values) / (sum(values) / len(values))


def thread_profile(blocks, groups, model: CycleModel, cpu: str) -> dict:
    """Modeled cycles and cache misses of the operation per vCPU (guest thread) on one core;
    only threads that ran some of the operation count."""
    cycles, l1, l2 = Counter(), Counter(), Counter()
    for block, group, c in zip(blocks, groups, run_cycles(blocks, model, cpu)):
        if group == sym.SETUP:
            continue
        c = c or 0.0
        for vcpu, (executions, _) in block.vcpus.items():
            cycles[vcpu] += c * executions
        for (vcpu, core), misses in block.misses.items():
            if core == cpu:
                l1[vcpu] += misses.l1
                l2[vcpu] += misses.l2
    threads = sorted(cycles)
    return dict(cycles={v: cycles[v] for v in threads}, l1_misses={v: l1[v] for v in threads},
                l2_misses={v: l2[v] for v in threads}, balance=balance(cycles))


def dominant_kernel_instruction(kernels: dict, prefix: str) -> str | None:
    if not kernels:
        return None
    return instruction_of(max(kernels, key=kernels.get), prefix)


def _profile_skeleton(w: Workload, p: DispatchPath) -> dict:
    return dict(workload=w.name, title=w.title, shape_title=w.shape_title, kind=w.kind,
                dtype=w.dtype, shape=w.shape,
                prepacked=w.prepacked, dims=list(w.dims), macs=w.macs, path=p.name, features=p.features,
                expected_instruction=p.instruction, error=None)


def run_one(program, w: Workload, p: DispatchPath, plugin, work_dir, mark=None, caches=None):
    """Run one workload on one path, counting from the `mark` address on (simulating the
    `caches` of bench.tbcount.run_profiled); returns (profile skeleton, blocks)."""
    profile = _profile_skeleton(w, p)
    start = time.monotonic()
    try:
        blocks, stdout = run_profiled(program, w.args(p), plugin,
                                      work_dir / f"{w.name}.{p.name}.tb", cpu=QEMU_CPU, mark=mark,
                                      caches=caches)
    except ProfileError as e:
        profile["error"] = str(e).strip().splitlines()[0][:500]
        profile["error_detail"] = str(e)[-3000:]
        return profile, []
    profile["qemu_seconds"] = round(time.monotonic() - start, 2)
    profile["checksum"] = next((line.split()[1] for line in stdout.splitlines()
                                if line.startswith("checksum ")), None)
    return profile, blocks


def profile_all(program, runs, plugin, work_dir, model: CycleModel, cpus, prefix="ts_",
                jobs=2, progress=print, caches=None) -> list[dict]:
    """Profile every (workload, path) of `runs`, `jobs` QEMU processes at a time, then model
    every executed block of the operations on every core in `cpus`. `caches` ({core:
    gen.cores.MemoryModel}, cores of `cpus`) adds the cache simulation: "memory" and
    "threads" in each profile."""
    table = sym.SymbolTable.from_elf(program)
    mark = table.address_of(sym.MARK) if any(s.name == sym.MARK for s in table.symbols) else None
    work_dir.mkdir(parents=True, exist_ok=True)
    order = sorted(range(len(runs)), key=lambda i: -runs[i][0].macs)   # longest first
    results = [None] * len(runs)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_one, program, *runs[i], plugin, work_dir, mark, caches): i
                   for i in order}
        for future in futures:
            i = futures[future]
            results[i] = future.result()
            prof = results[i][0]
            progress(f"  {prof['workload']:<24} {prof['path']:<8} "
                     + (f"error: {prof['error']}" if prof["error"] else f"{prof['qemu_seconds']:.1f} s"))
    classified = []
    for profile, blocks in results:
        groups, kernels = classify(blocks, table, prefix)
        classified.append((profile, blocks, groups, kernels))
    codes = set()
    for _, blocks, groups, _ in classified:
        codes |= run_codes(blocks) | {b.code for b in blocks}
    progress(f"  llvm-mca: {len(codes)} distinct blocks x {len(cpus)} cores")
    model.prepare(cpus, codes)
    profiles = []
    for profile, blocks, groups, kernels in classified:
        if not profile["error"]:
            profile["kernels"] = kernels
            profile["kernel_instruction"] = dominant_kernel_instruction(kernels, prefix)
            profile["instructions"], profile["setup_instructions"] = instruction_profile(blocks, groups)
            profile["cycles"] = {cpu: cycle_profile(blocks, groups, model, cpu) for cpu in cpus}
            if caches:
                profile["memory"] = {cpu: memory_profile(blocks, groups, cpu) for cpu in caches}
                profile["threads"] = {cpu: thread_profile(blocks, groups, model, cpu)
                                      for cpu in caches}
        profiles.append(profile)
    return profiles
