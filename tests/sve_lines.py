"""Instruction texts for the SVE/SME forms of encoder.sve_forms, written here independently of the
encoder's parser (GNU as is the judge of the words): one operand per slot, from its values.

Value sets come from each field's allowed range (lo..hi of the table).  Combinations:
  - forms with at most FULL_PRODUCT_LIMIT combinations: every combination;
  - larger forms: an all-pairs design -- for a prime p at least as large as every field's range,
    line (a, b) for a, b in 0..p-1 gives field k the value lo_k + ((a + k*b) mod p) mod size_k.
    For two fields i != j the pair ((a + i*b) mod p, (a + j*b) mod p) runs over all p*p pairs,
    so every value of every field appears together with every value of every other field
    (p*p lines: 1369 for 5-bit register fields, 4489 for a 6-bit immediate).
"""
from __future__ import annotations

import itertools

from encoder.sve_forms import SVE_FORMS, SveForm

FULL_PRODUCT_LIMIT = 4096

# Predicate constraint names, Arm ARM DDI0487 SVE "Predicate constraints" (value -> name).
PATTERN_NAMES = {0: "pow2", **{n: f"vl{n}" for n in range(1, 9)},
                 9: "vl16", 10: "vl32", 11: "vl64", 12: "vl128", 13: "vl256",
                 29: "mul4", 30: "mul3", 31: "all"}


def form_id(form: SveForm) -> str:
    index = SVE_FORMS.index(form)
    return f"{index:03d}-{form.mnemonic}-" + "-".join(form.signature)


def _x(value: int, thirty_one: str) -> str:
    return thirty_one if value == 31 else f"x{value}"


def _slice(size: str, tile: int, vertical: int, ws: int, offset: int) -> str:
    return f"za{tile}{'hv'[vertical]}.{size}[w{ws}, {offset}]"


def _tile_list(mask: int) -> str:
    return "{" + ", ".join(f"za{n}.d" for n in range(8) if mask >> n & 1) + "}"


def render(slot_name: str, values: tuple[int, ...]) -> str:
    """GNU syntax of one operand of the slot with these values."""
    head, _, size = slot_name.partition(".")
    v = values
    if slot_name.startswith("{z.") and "*" in slot_name:
        t, n = size[:-1].split("*")     # GNU as takes both spellings; wrapping lists as a
        n = int(n)                      # comma list
        if v[0] <= 32 - n or v[0] > 31:   # (> 31: an out-of-range case, written as it is)
            return "{" + f"z{v[0]}.{t}-z{v[0] + n - 1}.{t}" + "}"
        return "{" + ", ".join(f"z{(v[0] + i) % 32}.{t}" for i in range(n)) + "}"
    if slot_name.startswith("{z."):
        return "{" + f"z{v[0]}.{size[:-1]}" + "}"
    if slot_name.startswith("{za[]."):
        return "{" + _slice(size[:-1], *v) + "}"
    if head == "za[]":
        return _slice(size, *v)
    by_head = {"z": lambda: f"z{v[0]}.{size}", "za": lambda: f"za{v[0]}.{size}",
               "p": lambda: f"p{v[0]}.{size}"}
    exact = {"p": lambda: f"p{v[0]}", "p/m": lambda: f"p{v[0]}/m", "p/z": lambda: f"p{v[0]}/z",
             "{za}": lambda: _tile_list(v[0]), "x|xzr": lambda: _x(v[0], "xzr"),
             "x|sp": lambda: _x(v[0], "sp"), "w|wzr": lambda: _x(v[0], "wzr").replace("x", "w"),
             "#imm": lambda: f"#{v[0]}", "mul #imm": lambda: f"mul #{v[0]}",
             "pattern": lambda: PATTERN_NAMES.get(v[0], f"#{v[0]}"),
             "sm": lambda: "sm", "za": lambda: "za",
             "[x, #, mul vl]": lambda: f"[{_x(v[0], 'sp')}, #{v[1]}, mul vl]",
             "[x, #]": lambda: f"[{_x(v[0], 'sp')}, #{v[1]}]"}
    if slot_name in exact:
        return exact[slot_name]()
    if size and head in by_head:
        return by_head[head]()
    if slot_name.startswith("[x, x"):
        shift = slot_name[len("[x, x"):-1]
        return f"[{_x(v[0], 'sp')}, {_x(v[1], 'xzr')}{shift}]"
    raise ValueError(f"no renderer for slot {slot_name!r}")


def fields_of(form: SveForm):
    """[(slot index, field)] in operand order."""
    return [(position, field) for position, slot in enumerate(form.slots) for field in slot.fields]


def line(form: SveForm, values: list[int]) -> str:
    """Text of the form with one value per field (in fields_of order)."""
    operands, rest = [], list(values)
    for slot in form.slots:
        if slot.tied is not None:           # a destructive form's Zdn, written again
            operands.append(operands[slot.tied])
            continue
        mine, rest = rest[:len(slot.fields)], rest[len(slot.fields):]
        operands.append(render(slot.name, tuple(mine)))
    return f"{form.mnemonic} {', '.join(operands)}".rstrip()


def _ranges(form: SveForm) -> list[range]:
    return [field.values for _, field in fields_of(form)]


def product_size(form: SveForm) -> int:
    size = 1
    for values in _ranges(form):
        size *= len(values)
    return size


def _prime_at_least(n: int) -> int:
    return next(p for p in itertools.count(max(n, 2))
                if all(p % d for d in range(2, int(p ** 0.5) + 1)))


def all_pairs(ranges: list[range]) -> list[list[int]]:
    p = _prime_at_least(max([len(r) for r in ranges] + [len(ranges)]))
    return [[r[((a + k * b) % p) % len(r)] for k, r in enumerate(ranges)]
            for a in range(p) for b in range(p)]


def combinations(form: SveForm) -> list[list[int]]:
    ranges = _ranges(form)
    if product_size(form) <= FULL_PRODUCT_LIMIT:
        return [list(values) for values in itertools.product(*ranges)]
    return all_pairs(ranges)


def all_lines(form: SveForm) -> list[str]:
    return [line(form, values) for values in combinations(form)]


def sample_line(form: SveForm) -> str:
    """One valid line: every field at its highest value."""
    return line(form, [field.hi for _, field in fields_of(form)])


def out_of_range_lines(form: SveForm) -> list[tuple[str, str]]:
    """(line, field label) with one field just outside its range, the others at their lowest;
    negative register numbers (not writable) and fields that fill their syntax are left out."""
    fields = fields_of(form)
    lowest = [field.lo for _, field in fields]
    cases = []
    for k, (_, field) in enumerate(fields):
        if field.label in ("tile mask", "slice direction"):
            continue
        for value in (field.lo - field.step, field.hi + field.step):
            if value < 0 and not field.show.startswith(("#", "{}", "mul")):
                continue
            if field.show.startswith(("x", "w")) and value == 32:
                continue  # 31 is the last register number (xzr/sp): nothing above to write
            values = lowest[:k] + [value] + lowest[k + 1:]
            cases.append((line(form, values), field.label))
    return cases
