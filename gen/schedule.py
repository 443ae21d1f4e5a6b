"""Scheduler: orders one iteration of a kernel's inner k-loop for a core model.

The emitter builds the loop body as a list of `Insn` in a dependency-correct order (loads of
the next k-step already placed after the last read of the register they overwrite); the
scheduler reorders it, never breaking a dependency: every pair of instructions that share a
register or the flags with at least one of them writing it (RAW, WAR, WAW) keeps its relative
order. Keeping pair order preserves the loop-carried dependencies too (a load at the end of
iteration i still feeds the same MAC early in iteration i+1), and the branch stays last.

How the order is chosen (all deterministic):
  1. dependency graph; each instruction's priority is its critical path to the end of the
     *next* iteration (the body unrolled twice, RAW edges weighted by producer latency), so a
     load feeding the next iteration's first MACs counts as urgent;
  2. list scheduling against gen.issue_model (the llvm-mca in-order issue rules with the
     core's table from gen.cores): from the pipeline state a previous iteration leaves, take a
     load or pointer update where it fills an issue slot the next MACs leave free, else the
     ready instruction that issues earliest, ties broken by priority; repeated from the state
     the new order leaves (the loop's steady state);
  3. local search: move single instructions (loads and pointer updates first, anywhere in
     their dependency window; then MACs, a few places) while the modeled steady-state cycles
     per iteration improve (at most SEARCH_EVALUATIONS model runs).
The emitter builds several main-loop variants (gen.emit.MAIN_LOOP_VARIANTS: unroll factor,
load form); `best_body` ranks them after list scheduling, gives the best SEARCHED_VARIANTS the
local search and keeps the fastest. Results are cached per process, and searched ones on disk
(gen/schedule_cache.py) across runs.
Objective: for a named core, its modeled cycles per iteration; for "generic", the sum over the
in-order cores that have the instruction (Cortex-A510, Cortex-A55) of cycles / MAC-bound
cycles. Out-of-order cores tolerate an order made for in-order issue (checked by
bench/kernels_mca.py), so "generic" schedules for the in-order models.

What the in-order models reward (measured with llvm-mca-19, see gen/cores.py):
  * dot-product / matrix MACs and smlal are not RetireOOO, so write-back is in program order:
    an instruction with a shorter latency than the MACs issued just before it (a 2-cycle
    `ldr q`, a 1-cycle `add`/`subs`/`b.ne` on A510) waits until they retire; one with a longer
    latency holds up the MACs after it (A55 2-register `ld1`: 7 cycles). The scheduler
    therefore groups the pointer `add`s, `subs` and the branch into one window per iteration
    (about 3 cycles on either core, hence the unrolled main loop) and places loads at the start
    of an issue cycle; gen/loop.py's `ld1` form avoids the load stalls (see "Load forms"
    there). Bunched pointer updates and loads issued well ahead of use also suit the real
    cores.
  * fmla is RetireOOO on both in-order models: only operand latency and issue slots count.
  * on A55, 128-bit integer NEON ops (sdot, smlal, ins) begin an issue group: only one
    non-NEON instruction can pair with each, so loads are spread one per MAC.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from . import schedule_cache
from .cores import CORES, MAC_KEYS, CoreModel, check_cpu, cores_for
from .isa import INSTRUCTIONS
from .registry import dispatched_on
from .issue_model import IssueOp, IssueState, compile_ops, cycles_per_iteration

KINDS = ("load", "mac", "alu", "branch")
# Vector ALU mnemonics timed as fp32 arithmetic ("vfp" in gen.cores); every other "alu"
# instruction with a vector destination is an integer SIMD op ("vint").
FP_VECTOR_MNEMONICS = ("scvtf", "fmul", "fadd", "fcmgt", "bit", "fmax", "fmin")

# Budget of the local search (model evaluations per core); bounds generation time.
SEARCH_EVALUATIONS = 400
# How far (instructions) the local search moves one MAC.
MOVE_SPAN = 16
# Main-loop variants (best after list scheduling) that get the local search in best_body.
SEARCHED_VARIANTS = 2


@dataclass(frozen=True)
class Insn:
    text: str                   # assembly in mnemonic form (before any .inst rewrite)
    kind: str                   # "load" | "mac" | "alu" | "branch"
    defs: tuple[str, ...] = ()  # registers written: "v3", "x0"; "nzcv" for flag setters
    uses: tuple[str, ...] = ()  # registers read (a MAC reads its accumulator too)
    instruction: str = ""       # gen.isa key for MACs (latency lookup)
    comment: str = ""


def text_insn(text: str, comment: str = "", kind: str = "alu") -> Insn:
    """An instruction written out by hand (the epilogues, the strips): its text, kind and
    comment; the defs / uses the scheduler needs are only given to loop bodies."""
    return Insn(text, kind, comment=comment)


class ScheduleError(ValueError):
    """The loop body cannot be scheduled (names the offending instruction)."""


# ---- instruction classes ----------------------------------------------------------------------

_POST_INDEX = re.compile(r"\]\s*,|\]!")
_REGISTER_OFFSET = re.compile(r"\[\s*x\d+\s*,\s*x\d+\s*\]")
_REG_LIST = re.compile(r"\{([^}]*)\}")


def _ld1_registers(text: str) -> int:
    """Registers in an ld1 list: `{v0.16b, v1.16b}` or `{v0.16b-v3.16b}`."""
    match = _REG_LIST.search(text)
    if not match:
        raise ScheduleError(f"cannot read the register list of {text!r}")
    inner = match.group(1)
    if "-" in inner:
        first, last = (int(re.search(r"v(\d+)", part).group(1)) for part in inner.split("-"))
        return (last - first) % 32 + 1
    return len([r for r in inner.split(",") if r.strip()])


def op_class(insn: Insn) -> str:
    """The gen.cores instruction class of `insn` (a MAC's class is its gen.isa key)."""
    mnemonic, _, operands = insn.text.strip().partition(" ")
    operands = operands.strip()
    if insn.kind == "mac":
        if insn.instruction not in MAC_KEYS:
            raise ScheduleError(f"MAC {insn.text!r} has unknown instruction key "
                                f"{insn.instruction!r}")
        return insn.instruction
    if insn.kind == "load":
        first = operands[:1]
        if mnemonic == "ldr" and _REGISTER_OFFSET.search(operands):
            return "ldr_r"
        if mnemonic in ("ldr", "ldur"):
            return {"q": "ldr_q", "x": "ldr_x", "w": "ldr_x"}.get(first, "ldr_d")
        if mnemonic in ("ldp", "ldnp"):
            return "ldp_q" if first == "q" else "ldp_d"
        if mnemonic == "ld1":
            count = _ld1_registers(operands)
            if not 1 <= count <= 4:
                raise ScheduleError(f"{insn.text!r}: ld1 loads 1 to 4 registers")
            return f"ld1_{count}"
        if mnemonic == "ld1r":
            return "ld1r"
        raise ScheduleError(f"unknown load {insn.text!r}")
    if insn.kind == "alu":
        if mnemonic in ("ins", "mov") and operands.startswith("v"):
            return "ins"
        if operands.startswith("v"):
            return "vfp" if mnemonic in FP_VECTOR_MNEMONICS else "vint"
        return "alu"
    if insn.kind == "branch":
        return "branch"
    raise ScheduleError(f"{insn.text!r}: kind {insn.kind!r} is not one of {', '.join(KINDS)}")


def is_post_indexed(insn: Insn) -> bool:
    return insn.kind == "load" and bool(_POST_INDEX.search(insn.text))


def issue_op(insn: Insn, core: CoreModel) -> IssueOp:
    """How `core`'s model sees `insn`."""
    timing = core.op(op_class(insn))
    defs = tuple((reg, timing.latency) for reg in insn.defs)
    if is_post_indexed(insn):
        # The base write-back is an extra micro-op; in-order models let it through at once
        # (WriteAdr, latency 0), N2 charges the load latency (see gen/loop.py).
        base_latency = 0 if core.in_order else timing.latency
        timing = type(timing)(timing.latency, timing.uops + 1, timing.units, timing.retire_ooo,
                              timing.begin_group, 0 if core.in_order else timing.first_write)
        base = _base_register(insn)
        defs = tuple((reg, base_latency if reg == base else lat) for reg, lat in defs)
    return IssueOp(timing, defs, tuple(insn.uses), insn.kind == "alu" and
                   op_class(insn) == "alu")


def _base_register(insn: Insn) -> str:
    match = re.search(r"\[\s*(x\d+|sp)", insn.text)
    return match.group(1) if match else ""


# ---- dependencies ------------------------------------------------------------------------------

def conflicts(first: Insn, second: Insn) -> bool:
    """Whether the two must keep their relative order (RAW, WAR or WAW on a register/flags)."""
    d1, d2 = set(first.defs), set(second.defs)
    return bool(d1 & (set(second.uses) | d2) or set(first.uses) & d2)


def predecessors(body: list[Insn]) -> list[frozenset]:
    """For each instruction, the earlier ones it must stay behind; the branch stays last."""
    preds = []
    for j, insn in enumerate(body):
        if insn.kind == "branch":
            preds.append(frozenset(range(j)))
        else:
            preds.append(frozenset(i for i in range(j) if conflicts(body[i], insn)))
    return preds


def _check_body(body: list[Insn]) -> None:
    if not body:
        raise ScheduleError("empty loop body")
    for insn in body:
        op_class(insn)   # raises on an unknown instruction
    branches = [i for i, insn in enumerate(body) if insn.kind == "branch"]
    if branches and branches != [len(body) - 1]:
        raise ScheduleError("the loop body must end with its only branch; found one at "
                            f"position {branches[0]}: {body[branches[0]].text!r}")


def priorities(body: list[Insn], core: CoreModel) -> list[int]:
    """Critical path (cycles) from each instruction to the end of the next iteration: the body
    unrolled twice, RAW edges (within an iteration and across the back-edge) weighted by the
    producer's latency."""
    n = len(body)
    latency = [core.op(op_class(insn)).latency for insn in body]
    twice = body + body
    height = [0] * (2 * n)
    for i in range(2 * n - 1, -1, -1):
        best = latency[i % n]
        for j in range(i + 1, 2 * n):
            if set(twice[i].defs) & set(twice[j].uses):
                best = max(best, latency[i % n] + height[j])
        height[i] = best
    return height[:n]


# ---- order evaluation --------------------------------------------------------------------------

def targets(body: list[Insn], cpu: str) -> list[CoreModel]:
    """The core models an order for `cpu` is judged on."""
    check_cpu(cpu)
    if cpu in CORES:
        return [CORES[cpu]]
    keys = {insn.instruction for insn in body if insn.kind == "mac"}
    features = {INSTRUCTIONS[k].feature for k in keys}
    cores = [core for core in cores_for(cpu) if all(core.has(f) for f in features)]
    # generic and the in-order class: judged on their in-order cores (the out-of-order ones
    # reorder); the out-of-order class on its own cores
    in_order = [core for core in cores if core.in_order]
    # ... and of those on the ones whose dispatch runs the instruction (gen.registry
    # dispatched_on): Cortex-A510 has i8mm, so its int8 GEMMs run smmla, never sdot / udot
    # (only with i8mm masked off), and the dot-product loops are judged on Cortex-A55 alone
    running = [core for core in in_order
               if all(dispatched_on(k, core.has) is not False for k in keys)]
    # none: an instruction only cores without the modeled ones' features run (the Armv8.0
    # smlal, since every modeled in-order core has dotprod, and the u8s8 GEMM runs sdot there
    # too): judged on the in-order cores with the fewest features, the nearest to those
    # (Cortex-A55 for Cortex-A53)
    fewest = min((len(core.features) for core in in_order), default=0)
    plainest = [core for core in in_order if len(core.features) == fewest]
    return running or plainest or cores or [CORES["cortex-a510"]]


def mac_bound(body: list[Insn], core: CoreModel) -> float:
    """Cycles per iteration if the MAC pipes were the only limit."""
    bound = sum(1 / core.throughput(i.instruction) for i in body if i.kind == "mac")
    return bound or 1.0


def fraction_of_peak(body: list[Insn], core: CoreModel) -> float:
    """MAC-bound cycles / modeled steady-state cycles per iteration of `body` on `core`."""
    cycles = cycles_per_iteration([issue_op(insn, core) for insn in body], core)
    return mac_bound(body, core) / cycles


class _Judge:
    """Scores orders (lower is better) on the target cores, caching the issue ops."""

    def __init__(self, body: list[Insn], cores: list[CoreModel]):
        self.cores = cores
        self.ops = {core.name: [issue_op(insn, core) for insn in body] for core in cores}
        self.compiled = {core.name: compile_ops(self.ops[core.name], core) for core in cores}
        self.bounds = {core.name: mac_bound(body, core) for core in cores}
        self.evaluations = 0

    def score(self, order: list[int]) -> float:
        self.evaluations += 1
        total = 0.0
        for core in self.cores:
            compiled = self.compiled[core.name]
            total += cycles_per_iteration(None, core, warmup=2, measured=2,
                                          compiled=[compiled[i] for i in order]
                                          ) / self.bounds[core.name]
        return total


# ---- list scheduling ---------------------------------------------------------------------------

def _steady_state(order: list[int], ops: list[IssueOp], core: CoreModel) -> IssueState:
    state = IssueState(core)
    for _ in range(3):
        for i in order:
            state.issue(ops[i])
    return state


def _next_macs(state: IssueState, ops: list[IssueOp], macs: list[int], count: int,
               priority: list[int]) -> tuple[list[int], int]:
    """The `count` MACs (of the ready `macs`) that would issue next if MACs alone issued
    from `state` (earliest first, then priority), and the cycle the last of them issues in."""
    state = state.copy()
    left = list(macs)
    chosen, t = [], state.cycle
    for _ in range(min(count, len(left))):
        m = min(left, key=lambda i: (state.earliest(ops[i]), -priority[i], i))
        t = state.issue(ops[m])
        left.remove(m)
        chosen.append(m)
    return chosen, t


def _last_issue(state: IssueState, ops: list[IssueOp], sequence: list[int]) -> int:
    """Cycle the last of `sequence` issues in when it issues in order after `state`."""
    state = state.copy()
    t = state.cycle
    for i in sequence:
        t = state.issue(ops[i])
    return t


def _list_schedule(preds: list[frozenset], ops: list[IssueOp], core: CoreModel,
                   priority: list[int], state: IssueState, kinds: list[str],
                   per_cycle: int) -> list[int]:
    """Greedy in-order list scheduling from `state`. A non-MAC instruction (load, pointer
    update) goes first when it takes a slot the MACs leave free: the MACs that could issue
    next (`per_cycle`, as many as the core issues per cycle) issue no later with it than without it; the
    highest-priority such one is taken. Otherwise the earliest-issuing instruction, ties
    broken by priority. (Plain earliest-first starves the loads on an in-order core: after a
    MAC a load can never issue as early as the next MAC, so they would pile up where the MACs
    run out.)"""
    n = len(ops)
    is_mac = [kind == "mac" for kind in kinds]
    placed: set[int] = set()
    order = []
    while len(order) < n:
        ready = [i for i in range(n) if i not in placed and preds[i] <= placed]
        best = None
        macs = [i for i in ready if is_mac[i]]
        if macs:
            next_macs, without = _next_macs(state, ops, macs, per_cycle, priority)
            first_mac = min(state.earliest(ops[i]) for i in macs)
            free = [i for i in ready
                    if not is_mac[i] and kinds[i] != "branch"
                    and state.earliest(ops[i]) <= first_mac
                    and _last_issue(state, ops, [i] + next_macs) <= without]
            if free:
                best = min(free, key=lambda i: (-priority[i], i))
        if best is None:
            best = min(ready, key=lambda i: (state.earliest(ops[i]), -priority[i], i))
        state.issue(ops[best])
        placed.add(best)
        order.append(best)
    return order


def macs_per_cycle(body: list[Insn], core: CoreModel) -> int:
    """MAC instructions of `body` the core issues per cycle (at least 1)."""
    rates = [core.throughput(i.instruction) for i in body if i.kind == "mac"]
    return max(1, math.ceil(max(rates, default=1)))


def _improve(order: list[int], preds: list[frozenset], judge: _Judge, budget: int,
             kinds: list[str]) -> tuple[list[int], float]:
    """Hill-climb: move one instruction within its dependency window while the score drops.
    The loads and pointer updates are tried first, anywhere in their window (where they sit
    decides the in-order issue; the MACs keep their order), then the MACs, MOVE_SPAN places
    either way."""
    n = len(order)
    succs = [set() for _ in range(n)]
    for j, ps in enumerate(preds):
        for i in ps:
            succs[i].add(j)
    best = judge.score(order)
    movers = ([i for i in range(n) if kinds[i] != "mac"]
              + [i for i in range(n) if kinds[i] == "mac"])
    improved = True
    while improved and judge.evaluations < budget:
        improved = False
        for node in movers:
            if judge.evaluations >= budget:
                break
            pos = order.index(node)
            lo = max([order.index(p) for p in preds[node]], default=-1) + 1
            hi = min([order.index(s) for s in succs[node]], default=n) - 1
            span = MOVE_SPAN if kinds[node] == "mac" else n
            for target in range(max(lo, pos - span), min(hi, pos + span) + 1):
                if target == pos:
                    continue
                candidate = order[:pos] + order[pos + 1:]
                candidate.insert(target, node)
                score = judge.score(candidate)
                if score < best - 1e-9:
                    order, best, improved = candidate, score, True
                    break
    return order, best


def schedule_loop(body: list[Insn], cpu: str, *, search: bool = True) -> list[Insn]:
    """Return the loop body reordered for `cpu` (a gen.cores CPU name or "generic").

    `search=False` stops after list scheduling (faster, slightly worse). Results are cached
    per process by the body's shape (`_shape`), so the same kernel generated for several INST
    modes and output folders, or a kernel of another instruction with the same timing (sdot
    and udot), is scheduled once."""
    order, _ = _cached_schedule(body, cpu, search)
    return [body[i] for i in order]


def _shape(body: list[Insn]) -> tuple:
    """What the scheduler's result depends on: per instruction its kind, registers, issue
    timing on every core model, MAC rates and feature (not its text)."""
    shape = []
    for insn in body:
        cls = op_class(insn)
        mac = INSTRUCTIONS.get(insn.instruction) if insn.kind == "mac" else None
        shape.append((insn.kind, insn.defs, insn.uses, is_post_indexed(insn),
                      tuple(core.ops.get(cls) for core in CORES.values()),
                      tuple(core.mac.get(insn.instruction) for core in CORES.values())
                      if mac else None, mac.feature if mac else None))
    return tuple(shape)


_SCHEDULES: dict[tuple, tuple[tuple[int, ...], float]] = {}


def _cached_schedule(body: list[Insn], cpu: str, search: bool
                     ) -> tuple[tuple[int, ...], float]:
    """Per process (_SCHEDULES), then searched results on disk (gen.schedule_cache)."""
    key = (_shape(body), cpu, search)
    if key not in _SCHEDULES:
        _SCHEDULES[key] = _disk_cached_schedule(body, cpu, search, key)
    return _SCHEDULES[key]


def _disk_cached_schedule(body: list[Insn], cpu: str, search: bool, key: tuple
                          ) -> tuple[tuple[int, ...], float]:
    disk_key = key + (SEARCH_EVALUATIONS, MOVE_SPAN)
    cached = schedule_cache.CACHE.get(disk_key, len(body))
    if cached is not None:
        return cached
    order, score = _schedule(list(body), cpu, search)
    schedule_cache.CACHE.put(disk_key, order, score)
    return tuple(order), score


def modeled_cost(body: list[Insn], cpu: str) -> float:
    """Score of `body` after list scheduling (no local search): the sum over the target cores
    of modeled cycles per MAC-bound cycle, so bodies with different MAC counts compare."""
    return _cached_schedule(body, cpu, False)[1]


def best_body(bodies: list[list[Insn]], cpu: str, searched: int = SEARCHED_VARIANTS) -> int:
    """Index of the body that models fastest for `cpu`: how gen.emit picks the unroll factor
    and load form of the main loop. The bodies are ranked after list scheduling; the first
    `searched` of that ranking get the local search too (it can reorder the ranking: a body
    whose list schedule is slightly behind may search better), and the lowest searched score
    wins (the better list rank, then the first index, on a tie)."""
    costs = [modeled_cost(body, cpu) for body in bodies]
    ranked = sorted(range(len(bodies)), key=lambda k: (round(costs[k], 9), k))
    finalists = ranked[:max(1, searched)]
    searched_costs = {k: _cached_schedule(bodies[k], cpu, True)[1] for k in finalists}
    return min(finalists, key=lambda k: (round(searched_costs[k], 9), finalists.index(k)))


def _schedule(body: list[Insn], cpu: str, search: bool) -> tuple[list[int], float]:
    body = list(body)
    _check_body(body)
    cores = targets(body, cpu)
    preds = predecessors(body)
    judge = _Judge(body, cores)
    identity = list(range(len(body)))
    kinds = [insn.kind for insn in body]
    candidates = [identity]
    for core in cores:
        ops = judge.ops[core.name]
        priority = priorities(body, core)
        per_cycle = macs_per_cycle(body, core)
        order = identity
        for _ in range(3):     # reschedule from the steady state the last order leaves
            order = _list_schedule(preds, ops, core, priority, _steady_state(order, ops, core),
                                   kinds, per_cycle)
            candidates.append(order)
    scored = sorted((judge.score(c), k) for k, c in enumerate(candidates))
    best, score = candidates[scored[0][1]], scored[0][0]
    if search:
        best, score = _improve(best, preds, judge, judge.evaluations + SEARCH_EVALUATIONS,
                               kinds)
    return best, score
