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
  variants           {cpu: {"core_class" (the class whose run models the core), "kernel" (the
                      kernel symbol that ran most on that run), "checksum"}}

Per-core kernel variants (README "Per-core kernel variants"): dispatch picks a core class's
variant (a kernel, or the generic kernel with the class's cache blocks) from MIDR_EL1, so each
core is modeled on a run whose QEMU CPU reports a MIDR of its class (qemu_cpu). A (workload, path) runs once per class that has a variant of the path's
instruction (class_runs) and once as "generic" for the cores whose class has none; each core's
cycles, memory and threads come from its own run, the instructions and kernels from the first
run (generic when any core uses it).
"""
from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from gen.blocking import block_variant_classes
from gen.cores import CLASS_MIDR, CORES, GENERIC, core_class
from gen.isa import INSTRUCTIONS, signature

from gen.qdyn4 import SIGNATURES as QDYN4_SIGNATURES
from gen.qdyn4_rl import FAMILIES as QDYN4_FAMILIES

from . import symbols as sym
from .mca import CycleModel
from .tbcount import Block, ProfileError, run_profiled
from .workloads import QDYN_FORMATS, DispatchPath, Workload

QEMU_CPU = "max,sve=off"   # -cpu max (dotprod, i8mm, bf16) without SVE: glibc then takes its
                           # NEON string routines, which every modeled core (A55 too) can run


def qemu_cpu(cls: str) -> str:
    """-cpu for a run whose dispatch should see a core of class `cls`: max's features with the
    MIDR_EL1 of the class's representative core (gen.cores.CLASS_MIDR), set through the ARM CPU
    property `midr` (QEMU target/arm/cpu.c arm_cpu_properties; qemu-user returns it to `mrs
    midr_el1` at EL0). "generic": max's own MIDR (implementer 0), which dispatch does not know."""
    midr = CLASS_MIDR.get(cls)
    return QEMU_CPU if midr is None else f"{QEMU_CPU},midr={midr:#x}"


def variant_instructions(manifest: dict) -> dict:
    """{core class: {gen.isa key: "kernel" or "blocks"}}: the instructions the build has that
    class's variant of — a kernel variant (manifest kernels of role "core_class") or, in a
    CPU=generic build, a block variant (the main kernel with the class's cache blocks,
    gen.blocking block_variant_classes; gen/drivers.py with_blocks)."""
    out = {}
    generic = manifest.get("cpu", GENERIC) == GENERIC
    for k in manifest.get("kernels", ()):
        if k.get("role") == "core_class":
            out.setdefault(k["core_class"], {})[k["instruction"]] = "kernel"
        elif k.get("role", "main") == "main" and generic:
            for cls in block_variant_classes(k["instruction"], k["ep"], k["hp"], k["lp"]):
                out.setdefault(cls, {}).setdefault(k["instruction"], "blocks")
    return out


def workload_variants(w: Workload, variants: dict) -> dict:
    """The variants (variant_instructions) that change what workload w runs: the qdyn GEMMs
    (bench dtypes QDYN_FORMATS) run their own loops, without cache blocks (ts_qdyn*.c), so only
    kernel variants."""
    if w.dtype not in QDYN_FORMATS:
        return variants
    return {cls: {i: v for i, v in insts.items() if v == "kernel"}
            for cls, insts in variants.items()}


def class_runs(cpus, instruction: str, variants: dict) -> dict:
    """{cpu: the class of the run that models it}: the core's class when the build has that
    class's variant of `instruction` (variants: variant_instructions), else generic (dispatch
    gives every core the generic kernel then; cores unknown to gen.cores too)."""
    def run_of(cpu):
        cls = core_class(cpu) if cpu in CORES else GENERIC
        return cls if instruction in variants.get(cls, ()) else GENERIC
    return {cpu: run_of(cpu) for cpu in cpus}


def instruction_of(symbol: str, prefix: str) -> str | None:
    """gen.isa key of the MAC instruction a kernel symbol names (via its type signature and
    mnemonic), or None."""
    named = sym.kernel_instruction(symbol, prefix)
    if named is None:
        return None
    for key, inst in INSTRUCTIONS.items():
        if (signature(inst), inst.mnemonic) == named:
            return key
    if named[0] in QDYN4_SIGNATURES.values():   # the qdyn kernels (gen/qdyn4*.py): the path's
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


def run_one(program, w: Workload, p: DispatchPath, plugin, work_dir, mark=None, caches=None,
            cls=GENERIC, cache_sizes=None):
    """Run one workload on one path on a core of class `cls`, counting from the `mark` address
    on (simulating the `caches` of bench.tbcount.run_profiled); `cache_sizes` (L1D, L2 bytes):
    the calls' blocks sized for them (Workload.args). Returns (profile skeleton, blocks)."""
    profile = dict(_profile_skeleton(w, p), run_class=cls, cache_sizes=cache_sizes)
    start = time.monotonic()
    suffix = ("" if cls == GENERIC else f".{cls}") \
        + (f".{cache_sizes[0]}-{cache_sizes[1]}" if cache_sizes else "")
    try:
        blocks, stdout = run_profiled(program, w.args(p, cache_sizes), plugin,
                                      work_dir / f"{w.name}.{p.name}{suffix}.tb",
                                      cpu=qemu_cpu(cls), mark=mark, caches=caches)
    except ProfileError as e:
        profile["error"] = str(e).strip().splitlines()[0][:500]
        profile["error_detail"] = str(e)[-3000:]
        return profile, []
    profile["qemu_seconds"] = round(time.monotonic() - start, 2)
    profile["checksum"] = next((line.split()[1] for line in stdout.splitlines()
                                if line.startswith("checksum ")), None)
    return profile, blocks


def profile_all(program, runs, plugin, work_dir, model: CycleModel, cpus, prefix="ts_",
                jobs=2, progress=print, caches=None, variants=None, sized=True) -> list[dict]:
    """Profile every (workload, path) of `runs`, `jobs` QEMU processes at a time, then model
    every executed block of the operations on every core in `cpus`. `caches` ({core:
    gen.cores.MemoryModel}, cores of `cpus`) adds the cache simulation: "memory" and
    "threads" in each profile. `variants` (variant_instructions of the build; none by default):
    each core is modeled on the run of its class's variant (module comment). `sized`: with
    `caches`, each core's run passes the calls its caches' sizes (_cache_runs); False: none
    (bench --unsized)."""
    table = sym.SymbolTable.from_elf(program)
    mark = table.address_of(sym.MARK) if any(s.name == sym.MARK for s in table.symbols) else None
    work_dir.mkdir(parents=True, exist_ok=True)
    own = [_cache_runs(class_runs(cpus, p.instruction, workload_variants(w, variants or {})),
                       caches if sized and w.dtype not in QDYN_FORMATS else None)
           for w, p in runs]
    # each run simulates the caches of the cores it models only
    jobs_list = [(i, key, {c: m for c, m in (caches or {}).items() if own[i].get(c) == key})
                 for i in sorted(range(len(runs)), key=lambda i: -runs[i][0].macs)   # longest first
                 for key in _run_order(own[i])]
    results = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_one, program, *runs[i], plugin, work_dir, mark, simulated,
                               *key): (i, key) for i, key, simulated in jobs_list}
        for future in futures:
            i, key = futures[future]
            results[i, key] = future.result()
            prof = results[i, key][0]
            cls, sizes = key
            tag = ("" if cls == GENERIC else f" [{cls}]") \
                + (f" [L2 {sizes[1] // 1024} KiB]" if sizes else "")
            progress(f"  {prof['workload']:<24} {prof['path']:<8}{tag} "
                     + (f"error: {prof['error']}" if prof["error"] else f"{prof['qemu_seconds']:.1f} s"))
    classified = {}
    for key, (profile, blocks) in results.items():
        groups, kernels = classify(blocks, table, prefix)
        classified[key] = (profile, blocks, groups, kernels)
    codes = set()
    for _, blocks, groups, _ in classified.values():
        codes |= run_codes(blocks) | {b.code for b in blocks}
    progress(f"  llvm-mca: {len(codes)} distinct blocks x {len(cpus)} cores")
    model.prepare(cpus, codes)
    return [_merged_profile([classified[i, cls] for cls in _run_order(own[i])],
                            {cpu: classified[i, own[i][cpu]] for cpu in cpus},
                            model, prefix, caches)
            for i in range(len(runs))]


def _cache_runs(classes: dict, caches) -> dict:
    """{cpu: (class of its run, (L1D, L2) bytes or None)}: with the cache model, a core's run
    sizes the calls' cache blocks for that core's caches (gen.cores MEMORY, passed to the
    program: QEMU shows the program the host's caches, not the modeled core's), so cores of one
    class with other caches (Cortex-A710's 512 KiB L2 beside Neoverse N2's 1 MiB) run apart and
    each core's traffic is that of the blocks an engine knowing its caches gets
    (ts_context_set_cache_sizes). Without it, for a core not simulated, and for the qdyn
    GEMMs (no cache blocks: workload_variants): the blocks the build gives the class (None)."""
    caches = caches or {}
    return {cpu: (cls, (caches[cpu].l1d.size, caches[cpu].l2.size) if cpu in caches else None)
            for cpu, cls in classes.items()}


def _run_order(own: dict) -> list[tuple]:
    """The runs (class, cache sizes) of one (workload, path), generic first."""
    return sorted(set(own.values()), key=lambda k: (k[0] != GENERIC, k[0], k[1] or (0, 0)))


def _merged_profile(ran, own, model, prefix, caches) -> dict:
    """One (workload, path)'s profile from its class runs `ran` (the first gives the
    instructions and kernels) and each core's own run (`own`: {cpu: classified run})."""
    profile, blocks, groups, kernels = ran[0]
    failed = next((r[0] for r in ran if r[0]["error"]), None)
    if failed is not None:
        profile.update(error=failed["error"], error_detail=failed.get("error_detail"))
        return profile
    profile["kernels"] = kernels
    profile["kernel_instruction"] = dominant_kernel_instruction(kernels, prefix)
    profile["instructions"], profile["setup_instructions"] = instruction_profile(blocks, groups)
    profile["cycles"] = {cpu: cycle_profile(r[1], r[2], model, cpu) for cpu, r in own.items()}
    profile["variants"] = {cpu: dict(core_class=r[0]["run_class"], checksum=r[0].get("checksum"),
                                     cache_sizes=r[0].get("cache_sizes"),
                                     kernel=max(r[3], key=r[3].get) if r[3] else None)
                           for cpu, r in own.items()}
    if caches:
        profile["memory"] = {cpu: memory_profile(own[cpu][1], own[cpu][2], cpu) for cpu in caches}
        profile["threads"] = {cpu: thread_profile(own[cpu][1], own[cpu][2], model, cpu)
                              for cpu in caches}
    return profile
