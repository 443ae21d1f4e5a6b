"""Parsing of GNU-syntax SVE / SME operands into a shape (matched against sve_forms slots) and
the operand's values (register numbers, immediates, ...).

    z3.s              shape 'z.s'            values (3,)
    {z3.s}            shape '{z.s}'          values (3,)
    {z3.s-z6.s}       shape '{z.s*4}'        values (3,)    also {z30.s, z31.s, z0.s, z1.s}
    {z3.h-z4.h}       shape '{z.h*2}'        values (3,)    also {z31.h, z0.h}
    p2/m  p2/z  p2.s  shapes 'p/m' 'p/z' 'p.s' values (2,)
    za1.s             shape 'za.s'           values (1,)            a ZA tile
    za1v.s[w13, 2]    shape 'za[].s'         values (1, 1, 13, 2)   tile, h=0/v=1, Ws, offset
    {za1v.s[w13, 2]}  shape '{za[].s}'       same values
    {za0.s, za1.d}    shape '{za}'           values (mask,)         ZERO's 8-bit tile mask
    x3 xzr sp w3 wzr  shapes 'x' 'xzr' 'sp' 'w' 'wzr'   values (n,) (31 for xzr/sp/wzr)
    #-4               shape '#'              values (-4,)   ('#' may be omitted, as GNU as allows)
    vl8 / all / ...   shape 'pattern'        values (8,)    SVE predicate constraint
    mul #4            shape 'mul'            values (4,)
    sm  za            shapes 'sm' 'za'       values ()      SMSTART/SMSTOP operand
    [x0]  [x0, x1]  [x0, x1, lsl #2]  [x0, #-3, mul vl]
                      shapes '[x]' '[x, x]' '[x, x, lsl #2]' '[x, #, mul vl]' '[x, #]'
                      values (Rn, ...)
Case and spacing are free, as in GNU as.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .errors import EncodeError

# z0-z31, p0-p15; x0-x30 / w0-w30 by number (31 is written xzr / sp / wzr).
REGISTER_COUNTS = {"z": 32, "p": 16, "x": 31, "w": 31}
ZR_OR_SP = 31  # register number 31 is xzr / wzr or sp, depending on the operand (Arm ARM DDI0487)

# SVE predicate constraint names and their 5-bit 'pattern' values (Arm ARM DDI0487, SVE
# "Predicate constraints": POW2 0, VL1-VL8 1-8, VL16 9 ... VL256 13, MUL4 29, MUL3 30, ALL 31;
# 14-28 have no name and are written #uimm5).
PATTERNS = {"pow2": 0, **{f"vl{n}": n for n in range(1, 9)},
            **{f"vl{16 << k}": 9 + k for k in range(5)}, "mul4": 29, "mul3": 30, "all": 31}
PATTERN_NAMES = {value: name for name, value in PATTERNS.items()}

# ZERO {tile list}: which of the eight 64-bit tiles ZA0.D-ZA7.D each named tile covers (the
# instruction's imm8 has one bit per .D tile).  SME supplement DDI0616, ZERO: "ZA0.B = ZA",
# ZAn.H = ZA.D tiles n, n+2, n+4, n+6; ZAn.S = ZA.D tiles n, n+4; ZAn.D = ZA.D tile n.
TILE_MASKS = {"b": (0xFF,), "h": (0x55, 0xAA), "s": tuple(0x11 << n for n in range(4)),
              "d": tuple(1 << n for n in range(8))}

_SPACES_RE = re.compile(r"\s*([\[\]{},./#])\s*")
_NUM = r"#?(?P<a>-?(?:0x[0-9a-f]+|\d+))"
_SIMPLE = [  # (regex over the normalised text, shape template); groups are values, 't' the size
    (re.compile(r"z(?P<a>\d+)\.(?P<t>[bhsdq])$"), "z.{t}"),
    (re.compile(r"p(?P<a>\d+)/(?P<t>[mz])$"), "p/{t}"),
    (re.compile(r"p(?P<a>\d+)\.(?P<t>[bhsd])$"), "p.{t}"),
    (re.compile(r"p(?P<a>\d+)$"), "p"),
    (re.compile(r"za(?P<a>\d+)\.(?P<t>[bhsdq])$"), "za.{t}"),
    (re.compile(r"za(?P<a>\d+)(?P<b>[hv])\.(?P<t>[bhsdq])\[w(?P<c>\d+),#?(?P<d>-?\d+)\]$"),
     "za[].{t}"),
    (re.compile(r"x(?P<a>\d+)$"), "x"),
    (re.compile(r"w(?P<a>\d+)$"), "w"),
    (re.compile(r"mul #(?P<a>-?\d+)$"), "mul"),
    (re.compile(_NUM + "$"), "#"),
]
_KEYWORDS = {"xzr": ("xzr", ZR_OR_SP), "sp": ("sp", ZR_OR_SP), "wzr": ("wzr", ZR_OR_SP),
             "wsp": ("wsp", ZR_OR_SP), "sm": ("sm", None), "za": ("za", None)}


@dataclass(frozen=True)
class SveOperand:
    """One SVE/SME operand: its shape (what forms match on), values, and the text it came from."""

    shape: str
    values: tuple[int, ...]
    text: str

    @property
    def signature(self) -> str:
        return self.shape


def normalise(text: str) -> str:
    """Lower case, no spaces around punctuation, single spaces elsewhere ('mul vl', 'lsl #2')."""
    flat = re.sub(r"\s+", " ", text.strip().lower())
    return _SPACES_RE.sub(r"\1", flat).replace("lsl#", "lsl #").replace("mul#", "mul #")


def _number(text: str) -> int:
    return int(text, 0) if not text.startswith("-") else -int(text[1:], 0)


def _check_register(kind: str, number: int, count: int, original: str) -> None:
    if number >= count:
        raise EncodeError(f"register {kind}{number} out of range ({kind}0-{kind}{count - 1}) "
                          f"in operand {original!r}")


def _simple(text: str, original: str) -> SveOperand | None:
    for regex, template in _SIMPLE:
        match = regex.match(text)
        if not match:
            continue
        groups = match.groupdict()
        shape = template.format(t=groups.get("t"))
        if groups.get("b"):  # a ZA tile slice
            values = (int(groups["a"]), "hv".index(groups["b"]), int(groups["c"]),
                      _number(groups["d"]))
        else:
            values = (_number(groups["a"]),)
        head = shape.split(".")[0].split("/")[0]
        if head in REGISTER_COUNTS:
            _check_register(head, values[0], REGISTER_COUNTS[head], original)
        return SveOperand(shape, values, original)
    if text in _KEYWORDS:
        shape, number = _KEYWORDS[text]
        return SveOperand(shape, () if number is None else (number,), original)
    if text in PATTERNS:
        return SveOperand("pattern", (PATTERNS[text],), original)
    return None


def _tile_mask(item: str, original: str) -> int:
    """The .D-tile mask of one entry of a ZERO list ('za' or 'zaN.T')."""
    if item == "za":
        return 0xFF
    match = re.match(r"za(\d+)\.([bhsd])$", item)
    if not match:
        raise EncodeError(f"malformed ZA tile {item!r} in tile list {original!r}: "
                          "expected za or zaN.b/.h/.s/.d")
    number, size = int(match.group(1)), match.group(2)
    masks = TILE_MASKS[size]
    if number >= len(masks):
        raise EncodeError(f"ZA tile za{number}.{size} out of range (za0.{size}-"
                          f"za{len(masks) - 1}.{size}) in tile list {original!r}")
    return masks[number]


_LIST_RANGE = re.compile(r"z(\d+)\.([bhsd]) ?- ?z(\d+)\.([bhsd])$")
LIST_LENGTHS = (2, 4)       # the register lists of the table's forms (ST2H; LD4W, ST4B)


def _list(inner: str, original: str):
    """{Zt.T-Zu.T} or {Zt.T, ..., Zu.T}: two or four consecutive registers modulo 32 (ST2H,
    LD4W, ST4B), shape '{z.T*n}'; None when `inner` is not a register list."""
    match = _LIST_RANGE.match(inner)
    if match:
        first, size, last, size2 = int(match.group(1)), match.group(2), int(match.group(3)), \
            match.group(4)
        regs = [first, last]
        count = (last - first) % 32 + 1
    else:
        items = [_simple(item, original) for item in inner.split(",")]
        if len(items) < 2 or any(i is None or not i.shape.startswith("z.") for i in items):
            return None
        regs = [i.values[0] for i in items]
        size = size2 = items[0].shape[2:]
        if any(i.shape != items[0].shape for i in items):
            size2 = ""
        count = len(regs)
        if all((b - a) % 32 == 1 for a, b in zip(regs, regs[1:])):
            regs = [regs[0], regs[-1]]
        else:
            regs = [regs[0], -1]
    for r in regs:
        if r > 31:
            raise EncodeError(f"register z{r} out of range (z0-z31) in {original!r}")
    if size != size2 or count not in LIST_LENGTHS or (regs[1] - regs[0]) % 32 != count - 1:
        raise EncodeError(f"malformed operand {original!r}: a register list is two or four "
                          f"consecutive Z registers of one size (e.g. {{z0.h-z1.h}}, "
                          f"{{z0.s-z3.s}})")
    return SveOperand("{z." + size + f"*{count}" + "}", (regs[0],), original)


def _braced(inner: str, original: str) -> SveOperand:
    """{z.T}, {za slice}, a list of two or four Z registers, or a ZERO tile list (possibly empty)."""
    if "-" in inner or ("," in inner and inner.startswith("z") and not inner.startswith("za")):
        listed = _list(inner, original)
        if listed is not None:
            return listed
    single = _simple(inner, original)
    if single is not None and single.shape.startswith(("z.", "za[].")):
        return SveOperand("{" + single.shape + "}", single.values, original)
    items = inner.split(",") if inner else []
    if any(not item.strip().startswith("za") for item in items):
        raise EncodeError(f"malformed operand {original!r}: expected one {{Zt.T}} register, a "
                          "{ZA tile slice} or a ZERO tile list of za / zaN.T")
    mask = 0
    for item in items:
        mask |= _tile_mask(item.strip(), original)
    return SveOperand("{za}", (mask,), original)


def _base_register(text: str, original: str) -> int:
    if text == "sp":
        return ZR_OR_SP
    match = re.match(r"x(\d+)$", text)
    if not match or int(match.group(1)) > 30:
        raise EncodeError(f"malformed address {original!r}: base register must be x0-x30 or sp, "
                          f"not {text!r}")
    return int(match.group(1))


def _index_register(text: str, original: str) -> int:
    if text == "xzr":
        return ZR_OR_SP
    match = re.match(r"x(\d+)$", text)
    if not match or int(match.group(1)) > 30:
        raise EncodeError(f"malformed address {original!r}: index register must be x0-x30 or "
                          f"xzr, not {text!r}")
    return int(match.group(1))


def _address(inner: str, original: str) -> SveOperand:
    """[Xn|SP], [Xn|SP, Xm], [Xn|SP, Xm, lsl #k], [Xn|SP, #imm, mul vl], [Xn|SP, #imm]."""
    parts = inner.split(",")
    base = _base_register(parts[0], original)
    if len(parts) == 1:
        return SveOperand("[x]", (base,), original)
    imm = re.match(_NUM + "$", parts[1])
    if imm and len(parts) == 3 and parts[2] == "mul vl":
        return SveOperand("[x, #, mul vl]", (base, _number(imm.group(1))), original)
    if imm and len(parts) == 2:
        return SveOperand("[x, #]", (base, _number(imm.group(1))), original)
    if imm:
        raise EncodeError(f"malformed address {original!r}: an immediate offset is written "
                          "[Xn, #imm, mul vl] or [Xn, #imm]")
    index = _index_register(parts[1], original)
    if len(parts) == 2:
        return SveOperand("[x, x]", (base, index), original)
    shift = re.match(r"lsl #?(\d+)$", parts[2])
    if len(parts) != 3 or not shift:
        raise EncodeError(f"malformed address {original!r}: expected [Xn, Xm, lsl #amount]")
    return SveOperand(f"[x, x, lsl #{int(shift.group(1))}]", (base, index), original)


@lru_cache(maxsize=8192)
def parse_sve_operand(text: str) -> SveOperand:
    """One SVE/SME operand; raises EncodeError naming a malformed operand or a bad register."""
    original = text.strip()
    flat = normalise(text)
    if flat.startswith("{") and flat.endswith("}"):
        return _braced(flat[1:-1], original)
    if flat.startswith("[") and flat.endswith("]"):
        return _address(flat[1:-1], original)
    operand = _simple(flat, original)
    if operand is None:
        raise EncodeError(f"malformed operand {original!r}")
    return operand


def split_sve_operands(text: str) -> list[str]:
    """Comma-separated operands, commas inside [...] and {...} kept; empty operands are malformed."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"[": 1, "{": 1, "]": -1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    if not text.strip():
        return []
    if any(not part.strip() for part in parts):
        raise EncodeError(f"malformed operand list {text.strip()!r}: empty operand")
    return parts
