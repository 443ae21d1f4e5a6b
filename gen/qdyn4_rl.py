"""qdyn int4 kernels for one scale per output channel: two output channels share a byte.

The unpack of gen/qdyn4.py (shl + and: two vector operations per 16 packed bytes) bounds its
loop at 2 of every 2 + 2R vector operations. Here a byte holds, at the same k, weight w_lo of
one column in its low nibble as w_lo + 8 (0..15) and weight w_hi of another column in its high
nibble (two's complement): as an int8 the byte is b = 16 w_hi + w_lo + 8 (-128..127). Per packed
register one `and #0x0f` gives L = w_lo + 8; smmla on the raw bytes and on L then give
  R = sum qa (16 w_hi + w_lo + 8) = 16 D_hi + D_lo + 8 sum qa,   L = D_lo + 8 sum qa
(D = sum qa w), so one vector operation per two smmla B registers (issue 12's "two output
channels sharing a byte, recovered from two dot products and the activation row sum").
The accumulators start at L0 = -8 sum_k qa[m] - zp[m] sum_k w_lo and R0 = L0 - 16 zp[m] sum_k w_hi;
at the end L = S_lo and R - L = 16 S_hi exactly (S = sum (qa - zp) w, the header's acc), modulo
2^32, exact while 16 S fits int32 (a block of at most QDYN4_MAX_BL k, as gen/qdyn4.py).
`scvtf` (L) and `scvtf #4` (R - L) give (float)S exactly; then t = scale * wscale, s = t * f, as
the header says for one block (s = u_0), + bias, clamp (gen.qdyn4.final_code).

Layout (B, panels of 4 columns c0..c3): 32 bytes of column data: int32 sum w_lo of c0, c1; int32
sum w_lo + 16 sum w_hi for (c0, c2), (c1, c3); fp32 scales of c0..c3; then per 8-k step 16
bytes: bytes 0-7 hold k = 0..7 of (c0 low nibble, c2 high), bytes 8-15 of (c1, c3). So L is the
2x2 tile of columns c0, c1 and R - L the tile of c2, c3.

Two kernels: prefill (many rows, one panel per call) and decode (ep = 2: M <= 2 per call, P
panels per call, each its own B stream, `args->b_stride` apart: enough accumulators for the
MAC latency with one row pair). The solver (`candidates`) counts per 8-k step: smmla, ands,
loads, all instructions and each accumulator's MAC chain, per covered core.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import epilogue as ep_mod
from .cores import CoreModel
from .isa import INSTRUCTIONS
from .loop import KernelPlanError
from .plan import TilePlan
from .qdyn4 import OFF, QDYN4_MAX_BL, SIGNATURE, _advance, _load, _v, final_code, scheduled
from .schedule import Insn, best_body
from .tiling import covered_cores

LP = 8                  # k per k-step: one smmla
ROWS_REG, COUNT_REG, STRIDE_REG = "x6", "x7", "x8"
PANEL_HEAD = 32         # column data before the nibbles of a panel


@dataclass(frozen=True)
class RLPlan:
    instruction: str
    ep: int
    panels: int                 # panels of 4 columns per call (decode > 1)
    cpu: str = "generic"
    blocked = False

    @property
    def hp(self) -> int:
        return 4 * self.panels

    @property
    def rp(self) -> int:
        return self.ep // 2

    @property
    def a_regs(self):
        return tuple(range(self.rp))

    @property
    def b_packed(self):
        return tuple(range(self.rp, self.rp + self.panels))

    @property
    def b_low(self):
        return tuple(range(self.rp + self.panels, self.rp + 2 * self.panels))

    @property
    def mask(self) -> int:
        return self.rp + 2 * self.panels

    @property
    def acc_regs(self):
        n = 2 * self.rp * self.panels
        return tuple(range(32 - n, 32))

    sum_regs = acc_regs

    def low(self, r, p):          # L: columns 4p, 4p+1 of row pair r
        return self.acc_regs[r * 2 * self.panels + 2 * p]

    def high(self, r, p):         # R, then R - L: columns 4p+2, 4p+3
        return self.acc_regs[r * 2 * self.panels + 2 * p + 1]

    def free_regs(self):
        used = set(self.acc_regs) | {self.mask}
        return [v for v in range(32) if v not in used]

    def tile_plan(self) -> TilePlan:
        temps = tuple(self.free_regs())
        return TilePlan(self.instruction, self.ep, self.hp, LP, "resident", temps[:0], temps,
                        self.acc_regs, 0.0, self.cpu)

    def b_pointer(self, p) -> str:
        """x9..: panel p's nibble stream (x1 stays at panel 0's start for the epilogue)."""
        return f"x{9 + p}"


def registers_needed(ep: int, panels: int) -> int:
    """accumulators (R and L per row pair and panel) + A (one per row pair) + B (raw and low
    nibbles per panel) + the mask; prologue and epilogue: + 2 per row pair (scale / -zp and the
    row term) + 2 per panel (column data) + 1 temporary, over the A/B registers."""
    rp = ep // 2
    acc = 2 * rp * panels
    return max(acc + rp + 2 * panels + 1, acc + 1 + max(2 * panels + 2, rp + 2 * panels + 2))


def step_counts(ep: int, panels: int) -> dict:
    rp = ep // 2
    return dict(mac=2 * rp * panels, unpack=panels, loads=rp + panels, alu=1 + panels / 2)


def step_cycles(ep: int, panels: int, core: CoreModel, latency: bool = True) -> float:
    """Modeled cycles of one 8-k step: vector pipes (smmla and the ands share them on every
    modeled core), load pipes, issue width, and (latency) each accumulator's MAC chain."""
    c = step_counts(ep, panels)
    pipes = (c["mac"] + c["unpack"]) / core.throughput("smmla")
    return max(pipes, c["loads"] / core.loads_per_cycle, sum(c.values()) / core.issue_width,
               core.latency("smmla") if latency else 0)


def compute_bound(core: CoreModel, panels: int = 64) -> float:
    """int4 weight bytes per cycle no decode kernel of this scheme beats on `core` (ep = 2, many
    panels: per 16 bytes one load, one and, two smmla; A's load amortised; no latency)."""
    return 16 * panels / step_cycles(2, panels, core, latency=False)


def candidates(instruction: str = "smmla", cpu: str = "generic", decode: bool = False) -> list:
    """(ep, panels, worst modeled fraction of the smmla peak) of every fitting tile, best first.
    decode: ep = 2 only (M <= 2 per B pass), ranked the same (per byte of B, which for a fixed
    ep is per smmla)."""
    cores = covered_cores(INSTRUCTIONS[instruction], cpu)
    out = []
    for ep in ((2,) if decode else range(2, 17, 2)):
        for panels in range(1, 9 if decode else 3):
            if registers_needed(ep, panels) > 32 or (panels > 1 and not decode):
                continue
            macs = step_counts(ep, panels)["mac"]
            worst = min(macs / core.throughput(instruction) / step_cycles(ep, panels, core)
                        for core in cores)
            out.append((ep, panels, worst))
    return sorted(out, key=lambda t: (-round(t[2], 6), registers_needed(t[0], t[1]), -t[0],
                                      t[1]))


def solve(instruction: str = "smmla", cpu: str = "generic", decode: bool = False) -> RLPlan:
    ep, panels, _ = candidates(instruction, cpu, decode)[0]
    return RLPlan(instruction, ep, panels, cpu)


# ---- instruction lists ---------------------------------------------------------------------------
def k_step(plan: RLPlan, step: int) -> list[Insn]:
    code = []
    for r, reg in enumerate(plan.a_regs):
        code.append(_load(f"ldr q{reg}, [x0, #{(step * plan.rp + r) * 16}]", reg, "x0",
                          f"A rows {2 * r}-{2 * r + 1}, 8 k"))
    for p in range(plan.panels):
        raw, low, ptr = plan.b_packed[p], plan.b_low[p], plan.b_pointer(p)
        code.append(_load(f"ldr q{raw}, [{ptr}, #{16 * step}]", raw, ptr,
                          f"panel {p}: 16 w_hi + w_lo + 8 of 4 columns, 8 k"))
        code.append(_v(f"and v{low}.16b, v{raw}.16b, v{plan.mask}.16b", "w_lo + 8",
                       (f"v{low}",), (f"v{raw}", f"v{plan.mask}")))
    for r, a in enumerate(plan.a_regs):
        for p in range(plan.panels):
            for acc, b in ((plan.high(r, p), plan.b_packed[p]), (plan.low(r, p), plan.b_low[p])):
                code.append(Insn(f"smmla v{acc}.4s, v{a}.16b, v{b}.16b", "mac",
                                 defs=(f"v{acc}",), uses=(f"v{acc}", f"v{a}", f"v{b}"),
                                 instruction=plan.instruction))
    return code


# ld1 form (one panel): each load from a pointer register of its own, A four registers per
# ld1 (gen/loop.py "Load forms": on the in-order cores a short-latency ldr issued after the
# MACs waits for their in-order write-back; ld1 issues alongside them and takes fewer slots).
LD1_POINTERS = tuple(f"x{n}" for n in range(10, 18))


def ld1_pointers(plan: RLPlan) -> list[tuple[str, str, int]]:
    """(pointer, base, offset) of every ld1 of the two-step body: A chunks of up to 4
    registers per step, then B per step."""
    out, regs = [], iter(LD1_POINTERS)
    for step in range(2):
        for first in range(0, plan.rp, 4):
            out.append((next(regs), "x0", (step * plan.rp + first) * 16))
    for step in range(2):
        out.append((next(regs), plan.b_pointer(0), 16 * step))
    return out


def ld1_form_fits(plan: RLPlan) -> bool:
    return plan.panels == 1 and 2 * -(-plan.rp // 4) + 2 <= len(LD1_POINTERS)


def ld1_setup(plan: RLPlan) -> list[Insn]:
    return [ep_mod._i(f"add {ptr}, {base}, #{off}" if off else f"mov {ptr}, {base}",
                      "ld1 pointer") for ptr, base, off in ld1_pointers(plan)]


def ld1_loads(plan: RLPlan, step: int) -> list[Insn]:
    ptrs = ld1_pointers(plan)
    a_chunks = -(-plan.rp // 4)
    code = []
    for j, first in enumerate(range(0, plan.rp, 4)):
        regs = plan.a_regs[first:first + 4]
        ptr = ptrs[step * a_chunks + j][0]
        code.append(Insn(f"ld1 {{v{regs[0]}.16b-v{regs[-1]}.16b}}, [{ptr}]" if len(regs) > 1
                         else f"ld1 {{v{regs[0]}.16b}}, [{ptr}]", "load",
                         defs=tuple(f"v{r}" for r in regs), uses=(ptr,),
                         comment=f"A rows {2 * first}-{2 * (first + len(regs)) - 1}, 8 k"))
    raw, ptr = plan.b_packed[0], ptrs[2 * a_chunks + step][0]
    code.append(Insn(f"ld1 {{v{raw}.16b}}, [{ptr}]", "load", defs=(f"v{raw}",), uses=(ptr,),
                     comment="16 w_hi + w_lo + 8 of 4 columns, 8 k"))
    return code


def inner_body(plan: RLPlan, form: str = "ldr") -> list[Insn]:
    """Two 8-k steps; the loop runs K/16 times (K padded to a multiple of 32). form "ldr":
    immediate offsets from x0 and the panel pointers; "ld1": see LD1_POINTERS."""
    if form == "ld1":
        code = []
        for step in range(2):
            body = k_step(plan, step)
            code += ld1_loads(plan, step) + [i for i in body if i.kind != "load"]
        code += [_advance(ptr, 2 * plan.ep * LP if base == "x0" else 32, "next two k-steps")
                 for ptr, base, _ in ld1_pointers(plan)]
        code += [Insn(f"subs {COUNT_REG}, {COUNT_REG}, #1", "alu", defs=(COUNT_REG, "nzcv"),
                      uses=(COUNT_REG,)),
                 Insn("b.ne K_INNER", "branch", uses=("nzcv",))]
        return code
    code = k_step(plan, 0) + k_step(plan, 1)
    code.append(_advance("x0", 2 * plan.ep * LP, "A: next two k-steps"))
    code += [_advance(plan.b_pointer(p), 32, f"B panel {p}: next two k-steps")
             for p in range(plan.panels)]
    code += [Insn(f"subs {COUNT_REG}, {COUNT_REG}, #1", "alu", defs=(COUNT_REG, "nzcv"),
                  uses=(COUNT_REG,)),
             Insn("b.ne K_INNER", "branch", uses=("nzcv",))]
    return code


def epilogue_body(plan: RLPlan) -> list[Insn]:
    """R - L, both converted, times scale[m] * wscale[n] (header order; one block: s = u)."""
    free = [v for v in plan.free_regs()]
    scale = free[:plan.rp]
    ws = free[plan.rp:plan.rp + 2 * plan.panels]
    temps = free[plan.rp + 2 * plan.panels:]
    code = []
    for r, reg in enumerate(scale):
        code.append(_load(f"ldr q{reg}, [{ROWS_REG}, #{16 * r}]", reg, ROWS_REG,
                          f"scale of rows {2 * r}-{2 * r + 1}"))
    for p in range(plan.panels):       # column scales: (c0 c1 c0 c1), (c2 c3 c2 c3)
        ptr = f"x{9 + p}"
        code.append(Insn(f"add {ptr}, x1, #16" if p == 0 else f"add {ptr}, x{8 + p}, {STRIDE_REG}",
                         "alu", defs=(ptr,), uses=("x1",) if p == 0 else (f"x{8 + p}", STRIDE_REG)))
        for h in range(2):
            reg = ws[2 * p + h]
            code.append(_load(f"ld1r {{v{reg}.2d}}, [{ptr}]" if h == 0 else
                              f"ldr d{reg}, [{ptr}, #8]", reg, ptr,
                              f"panel {p}: scales of columns {2 * h}-{2 * h + 1}"))
        code.append(_v(f"zip1 v{ws[2 * p + 1]}.2d, v{ws[2 * p + 1]}.2d, v{ws[2 * p + 1]}.2d",
                       "twice", (f"v{ws[2 * p + 1]}",), (f"v{ws[2 * p + 1]}",)))
    k = 0
    for r in range(plan.rp):
        for p in range(plan.panels):
            lo, hi = plan.low(r, p), plan.high(r, p)
            t0, t1 = temps[k % len(temps)], temps[(k + 1) % len(temps)]
            k += 2
            code += [
                _v(f"sub v{hi}.4s, v{hi}.4s, v{lo}.4s", "R - L = 16 acc of columns 2-3",
                   (f"v{hi}",), (f"v{hi}", f"v{lo}")),
                _v(f"scvtf v{lo}.4s, v{lo}.4s", "(float)acc, columns 0-1", (f"v{lo}",), (f"v{lo}",)),
                _v(f"scvtf v{hi}.4s, v{hi}.4s, #4", "(float)acc, columns 2-3",
                   (f"v{hi}",), (f"v{hi}",)),
                _v(f"fmul v{t0}.4s, v{scale[r]}.4s, v{ws[2 * p]}.4s", "t = scale[m] * wscale[n]",
                   (f"v{t0}",), (f"v{scale[r]}", f"v{ws[2 * p]}")),
                _v(f"fmul v{t1}.4s, v{scale[r]}.4s, v{ws[2 * p + 1]}.4s", "",
                   (f"v{t1}",), (f"v{scale[r]}", f"v{ws[2 * p + 1]}")),
                _v(f"fmul v{lo}.4s, v{t0}.4s, v{lo}.4s", "s = u = t * (float)acc",
                   (f"v{lo}",), (f"v{t0}", f"v{lo}")),
                _v(f"fmul v{hi}.4s, v{t1}.4s, v{hi}.4s", "", (f"v{hi}",), (f"v{t1}", f"v{hi}")),
            ]
    return code


def prologue(plan: RLPlan) -> list[Insn]:
    """Pointers, the mask, and the accumulators L0 = -8 sum qa - zp sum w_lo, R0 = L0 - 16 zp
    sum w_hi from the rows (-zp, -8 sum qa per row pair) and each panel's column data."""
    i = ep_mod._i
    code = [i(f"ldr {ROWS_REG}, [x5, #{OFF['rows']}]", "row scales, -zp, -8 sum qa", "load"),
            i(f"ldr {STRIDE_REG}, [x5, #{OFF['b_stride']}]", "bytes from one panel to the next",
              "load"),
            i(f"movi v{plan.mask}.16b, #0x0f", "low-nibble mask")]
    free = plan.free_regs()
    ylo, yhi = free[:plan.panels], free[plan.panels:2 * plan.panels]
    zp, rowterm = free[2 * plan.panels], free[2 * plan.panels + 1]
    for p in range(plan.panels):
        ptr = plan.b_pointer(p)
        code.append(i(f"mov {ptr}, x1" if p == 0 else f"add {ptr}, x{8 + p}, {STRIDE_REG}",
                      f"panel {p}"))
        code.append(i(f"ldr q{ylo[p]}, [{ptr}]", f"panel {p}: sums of w_lo; w_lo + 16 w_hi",
                      "load"))
        code.append(i(f"zip2 v{yhi[p]}.2d, v{ylo[p]}.2d, v{ylo[p]}.2d", "(c0,c2) (c1,c3) twice"))
        code.append(i(f"zip1 v{ylo[p]}.2d, v{ylo[p]}.2d, v{ylo[p]}.2d", "(c0 c1) twice"))
    for r in range(plan.rp):
        code += [i(f"ldr q{zp}, [{ROWS_REG}, #{16 * (plan.rp + r)}]", f"-zp, rows {2*r}-{2*r+1}",
                   "load"),
                 i(f"ldr q{rowterm}, [{ROWS_REG}, #{16 * (2 * plan.rp + r)}]", "-8 sum qa", "load")]
        for p in range(plan.panels):
            lo, hi = plan.low(r, p), plan.high(r, p)
            code += [i(f"mul v{lo}.4s, v{zp}.4s, v{ylo[p]}.4s"),
                     i(f"add v{lo}.4s, v{lo}.4s, v{rowterm}.4s", "L0"),
                     i(f"mul v{hi}.4s, v{zp}.4s, v{yhi[p]}.4s"),
                     i(f"add v{hi}.4s, v{hi}.4s, v{rowterm}.4s", "R0")]
    code += [i(f"add {plan.b_pointer(p)}, {plan.b_pointer(p)}, #{PANEL_HEAD}",
               f"panel {p}: its nibbles") for p in range(plan.panels)]
    code.append(i(f"ldr {COUNT_REG}, [x5, #{OFF['kpairs']}]", "k-step pairs", "load"))
    return code


def kernel_symbol(prefix: str, plan: RLPlan) -> str:
    from .naming import cpu_suffix
    return (f"{prefix}gemm_{SIGNATURE}_{INSTRUCTIONS[plan.instruction].mnemonic}_"
            f"{plan.ep}x{plan.hp}x{LP}_pc{cpu_suffix(plan.cpu)}")


def emit(plan: RLPlan, prefix: str, inst_mode: str, env):
    import re
    from encoder import rewrite_text
    from .emit import (Kernel, arch_directive, frame_bytes, gp_registers_used, inst_features,
                       restore_registers, save_registers)
    if registers_needed(plan.ep, plan.panels) > 32:
        raise KernelPlanError(f"qdyn4 pc {plan.ep}x{plan.hp}: more than 32 vector registers")
    inst = INSTRUCTIONS[plan.instruction]
    symbol = kernel_symbol(prefix, plan)
    tplan = plan.tile_plan()
    forms = ["ldr"] + (["ld1"] if ld1_form_fits(plan) else [])
    bodies = [inner_body(plan, f) for f in forms]
    form = forms[best_body(bodies, plan.cpu)]          # the model's pick per CPU
    inner = scheduled(bodies[forms.index(form)], plan.cpu)
    tail = scheduled(epilogue_body(plan), plan.cpu)
    final, pieces = final_code(plan)
    write = ep_mod.store_row_pieces(tplan, pieces)
    pro = prologue(plan)
    used = sorted({int(n) for i in inner + tail + final + pro
                   for n in re.findall(r"\b[vqd](\d+)\b", i.text)})
    saved = [f"d{r}" for r in range(8, 16) if r in used]
    args_offset, tile_offset, frame = ep_mod.frame_layout(frame_bytes(saved), tplan)
    layout = (f"panels of 4 columns, {PANEL_HEAD} bytes of column data then 16 bytes per 8 k "
              f"(K padded to 32); {plan.panels} panel(s) per call, args->b_stride apart")
    context = dict(
        symbol=symbol, plan=plan, inst=inst, lp=LP, prefix=prefix, rl=True,
        arch_directive=arch_directive(inst) if inst_mode == "never" else None,
        save=save_registers(saved, frame, args_offset), restore=restore_registers(saved, frame),
        saved=saved, prologue=pro + (ld1_setup(plan) if form == "ld1" else []), inner=inner,
        tail=tail, final=final,
        store_setup=ep_mod.store_setup(tplan, args_offset, tile_offset, 4, require_args=True),
        write=write, copy_out=ep_mod.copy_out(tplan, tile_offset, 4), labels=ep_mod.LABELS,
        a_step=plan.ep * LP, b_step=16, panel=layout)
    text = env.get_template("kernel_qdyn4.S.j2").render(**context)
    features = inst_features(inst_mode)
    if features:
        text = rewrite_text(text, features, filename=f"{symbol}.S")
    entry = {
        "symbol": symbol, "file": f"{symbol}.S", "instruction": plan.instruction,
        "mnemonic": inst.mnemonic, "role": "qdyn4", "feature": inst.feature, "arch": inst.arch,
        "ep": plan.ep, "hp": plan.hp, "lp": LP, "a_step_bytes": plan.ep * LP,
        "b_step_bytes": 16, "blocked": False, "panels": plan.panels,
        "decode": plan.ep == 2 and plan.panels > 1, "max_bl": QDYN4_MAX_BL,
        "vregs_used": used, "gpregs_used": gp_registers_used(text), "callee_saved_used": saved,
        "b_layout": layout, "variants": [],
    }
    return Kernel(symbol, f"{symbol}.S", text, entry)
