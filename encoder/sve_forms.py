"""Encoding table of the SVE and SME forms the SME kernels use.

Each row quotes its encoding diagram from the Arm Architecture Reference Manual (DDI0487, the SVE
instruction pages) or the SME supplement (DDI0616, the SME instruction pages), named in `source`.
A form is a mnemonic, a tuple of operand slots and the fixed bits; every slot lists the operand
shapes it accepts (encoder.sve_operands) and one Field per operand value: where the value goes
and which values are allowed.  Optional trailing operands (a predicate pattern, `mul #imm`)
have defaults.  Checked against GNU as 2.40 by tests/test_encoder_sve_exhaustive.py.
"""
from __future__ import annotations

from dataclasses import dataclass

from .sve_operands import TILE_MASKS


@dataclass(frozen=True)
class Field:
    """One operand value's bits: value - bias goes to bits lsb..lsb+width-1 (two's complement)."""

    label: str          # names the value in messages: 'governing predicate', 'ZA tile', ...
    lsb: int
    width: int
    lo: int             # allowed values lo..hi
    hi: int
    show: str = "{}"    # how a value is written, for messages: 'p{}', 'za{}.s', '#{}'
    bias: int = 0
    scale: int = 1      # values are multiples of |scale|; the bits hold (value - bias) / scale
                        # (a negative scale counts down: SSRA's shift is written as 2*esize - n)

    def bits(self, value: int) -> int:
        return (((value - self.bias) // self.scale) & ((1 << self.width) - 1)) << self.lsb

    @property
    def step(self) -> int:
        return abs(self.scale)

    @property
    def values(self) -> range:
        return range(self.lo, self.hi + 1, self.step)


@dataclass(frozen=True)
class Slot:
    """One operand position: accepted shapes, a Field per value, defaults for missing values."""

    name: str                   # shown in messages: 'za.s', 'p/m', '[x, x, lsl #2]'
    shapes: tuple[str, ...]
    fields: tuple[Field, ...] = ()
    defaults: tuple[int, ...] = ()   # trailing values a shorter shape ('[x]') leaves out
    omitted: tuple[int, ...] | None = None  # values when the whole (optional) operand is absent
    tied: int | None = None     # a destructive form's repeated operand: must be written exactly
                                # as operand `tied` (same values), has no bits of its own


@dataclass(frozen=True)
class SveForm:
    mnemonic: str
    slots: tuple[Slot, ...]
    base: int
    feature: str                # 'sve' or 'sme'
    source: str
    alias_of: str | None = None  # GNU objdump's name for it ('mova' is printed 'mov')

    @property
    def signature(self) -> tuple[str, ...]:
        return tuple(slot.name for slot in self.slots)

    @property
    def required(self) -> int:
        """How many leading operands must be written."""
        return sum(1 for slot in self.slots if slot.omitted is None)


# ---- fields and slots ------------------------------------------------------------------
ZR = 31
SIZES = "bhsd"


def reg_field(label, lsb, letter, count=32, width=5):
    return Field(label, lsb, width, 0, count - 1, letter + "{}")


def z(size, lsb, label="Z register"):
    return Slot(f"z.{size}", (f"z.{size}",), (reg_field(label, lsb, "z"),))


def predicate(size):
    """Pd.T, p0-p15, at bits 3:0."""
    return Slot(f"p.{size}", (f"p.{size}",), (reg_field("predicate", 0, "p", 16, 4),))


def governing(kind, lsb=10, count=8, label="governing predicate"):
    """p/m, p/z or plain p (stores): Pg of SVE/SME memory and MOPA forms is p0-p7."""
    shape = "p" if kind == "" else f"p/{kind}"
    return Slot(shape, (shape,), (reg_field(label, lsb, "p", count, count.bit_length() - 1),))


def xreg(label, lsb, sp=False):
    """A 64-bit register where 31 means sp (sp=True) or xzr."""
    other = "sp" if sp else "xzr"
    field = Field(label, lsb, 5, 0, 31, "x{}")
    return Slot(f"x|{other}", ("x", other), (field,))


def wxreg(letter, label, lsb):
    """An x or w register where 31 means xzr / wzr."""
    field = Field(label, lsb, 5, 0, 31, letter + "{}")
    return Slot(f"{letter}|{letter}zr", (letter, letter + "zr"), (field,))


def imm(label, lsb, width, lo, hi):
    return Slot("#imm", ("#",), (Field(label, lsb, width, lo, hi, "#{}"),))


def za_tile(size, lsb=0):
    count = len(TILE_MASKS[size])  # za0.s-za3.s: as many tiles as TILE_MASKS names
    return Slot(f"za.{size}", (f"za.{size}",),
                (Field("ZA tile", lsb, count.bit_length() - 1, 0, count - 1, f"za{{}}.{size}"),))


def slice_fields(size, packed_lsb):
    """Tile number, h/v, Ws (w12-w15) and offset of a ZA tile slice; tile:offset packed in 4 bits
    from packed_lsb (SME supplement, e.g. LD1W (scalar plus scalar, tile slice): ZAt:off2)."""
    tiles = len(TILE_MASKS[size])
    tile_bits = tiles.bit_length() - 1
    offsets = 16 >> tile_bits          # .b 0-15, .h 0-7, .s 0-3, .d 0-1
    return (Field("ZA tile", packed_lsb + 4 - tile_bits, tile_bits, 0, tiles - 1, f"za{{}}.{size}"),
            Field("slice direction", 15, 1, 0, 1),
            Field("slice index register", 13, 2, 12, 15, "w{}", bias=12),
            Field("slice offset", packed_lsb, 4 - tile_bits, 0, offsets - 1))


def za_slice(size, packed_lsb, braced):
    shape = "{za[]." + size + "}" if braced else f"za[].{size}"
    return Slot(shape, (shape,), slice_fields(size, packed_lsb))


def vector_list(size, lsb=0):
    """{Zt.T} (GNU as also takes Zt.T without braces)."""
    braced = "{z." + size + "}"
    return Slot(braced, (braced, f"z.{size}"), (reg_field("Z register", lsb, "z"),))


BASE = Field("base register", 5, 5, 0, 31, "x{}")


def address_ss(shift, zr_ok):
    """[Xn|SP, Xm{, LSL #shift}]; SME slices allow Xm = xzr, written [Xn] too."""
    shape = f"[x, x, lsl #{shift}]" if shift else "[x, x]"
    index = Field("index register", 16, 5, 0, 31 if zr_ok else 30, "x{}")
    return Slot(shape, (shape, "[x]") if zr_ok else (shape,), (BASE, index), (ZR,) if zr_ok else ())


def tied_z(size, position):
    """Zdn written a second time (FMAX Zdn.T, Pg/M, Zdn.T, Zm.T): GNU as requires the same
    register; the encoder too (sve_encoding.encode_sve)."""
    return Slot(f"z.{size}", (f"z.{size}",), (), tied=position)


def address_scaled(scale, count=64):
    """[Xn|SP{, #imm}] with imm = scale * uimm6 bytes (LD1RW: 0 to 252 in steps of 4)."""
    return Slot("[x, #]", ("[x, #]", "[x]"),
                (BASE, Field("immediate", 16, 6, 0, scale * (count - 1), "#{}", scale=scale)),
                (0,))


def vector_list4(size, count=4):
    """{Zt.T-Zt+3.T} or {Zt.T, Zt+1.T, Zt+2.T, Zt+3.T}: four consecutive registers (mod 32);
    count=2: {Zt.T-Zt+1.T}, two."""
    shape = "{z." + size + f"*{count}" + "}"
    return Slot(shape, (shape,), (reg_field("first Z register", 0, "z"),))


def bf16_rounding():
    """The streaming bf16 packers' integer round-to-nearest-even (gen/sme_pack.py):
    LSR (immediate, unpredicated) .s 00000100 01 1 tszl imm3 1001 01 Zn Zd, tszl:imm3 = 32 -
    shift; ORR (vectors, unpredicated) 00000100 011 Zm 001 100 Zn Zd; CMPHI (vectors)
    00100100 size 0 Zm 000 Pg Zn 1 Pd; SEL (vectors) 00000101 size 1 Zm 11 Pv Zn Zd (Pv p0-p15)
    (Arm ARM DDI0487, LSR (immediate, unpredicated), ORR (vectors, unpredicated), CMP<cc>
    (vectors), SEL (vectors))."""
    shift = Slot("#imm", ("#",), (Field("shift", 16, 5, 1, 32, "#{}", bias=32, scale=-1),))
    forms = [SveForm("lsr", (z("s", 0, "destination Z register"), z("s", 5), shift), 0x04609400,
                     "sve", "Arm ARM DDI0487 LSR (immediate, unpredicated)"),
             SveForm("orr", (z("d", 0, "destination Z register"), z("d", 5),
                             z("d", 16, "second source Z register")), 0x04603000, "sve",
                     "Arm ARM DDI0487 ORR (vectors, unpredicated)")]
    for bits, size in enumerate(SIZES):
        forms.append(SveForm("cmphi", (predicate(size), governing("z"), z(size, 5),
                                       z(size, 16, "second source Z register")),
                             0x24000010 | bits << 22, "sve", "Arm ARM DDI0487 CMPHI (vectors)"))
        forms.append(SveForm("sel", (z(size, 0, "destination Z register"),
                                     governing("", 10, 16, "select predicate"), z(size, 5),
                                     z(size, 16, "second source Z register")),
                             0x0520C000 | bits << 22, "sve", "Arm ARM DDI0487 SEL (vectors)"))
    # the int8 B packers' column sums (SVE2): SADDLB / SADDLT 01000101 size 0 Zm 00 0 0 0 / 1
    # Zn Zd, SADDWB / SADDWT 01000101 size 0 Zm 010 0 0 / 1 Zn Zd (wide <- narrow pairs)
    for wide, narrow, bits in (("h", "b", 1), ("s", "h", 2), ("d", "s", 3)):
        for name, base in (("saddlb", 0x45000000), ("saddlt", 0x45000400)):
            forms.append(SveForm(name, (z(wide, 0, "destination Z register"), z(narrow, 5),
                                        z(narrow, 16, "second source Z register")),
                                 base | bits << 22, "sve2", f"Arm ARM DDI0487 {name.upper()}"))
        for name, base in (("saddwb", 0x45004000), ("saddwt", 0x45004400)):
            forms.append(SveForm(name, (z(wide, 0, "destination Z register"), z(wide, 5),
                                        z(narrow, 16, "second source Z register")),
                                 base | bits << 22, "sve2", f"Arm ARM DDI0487 {name.upper()}"))
        # the bf16 rounding's narrowing add (SVE2): ADDHNB / ADDHNT 01000101 size 1 Zm 011 0
        # 0 0 / 1 Zn Zd, Zd narrow (the high half of each wide sum)
        for name, base in (("addhnb", 0x45206000), ("addhnt", 0x45206400)):
            forms.append(SveForm(name, (z(narrow, 0, "destination Z register"), z(wide, 5),
                                        z(wide, 16, "second source Z register")),
                                 base | bits << 22, "sve2", f"Arm ARM DDI0487 {name.upper()}"))
    # the int8 B packers' column sums (gen/sme_pack.py COLUMN_SUMS): SDOT (vectors)
    # 01000100 1 sz 0 Zm 00000 0 Zn Zda, sz 0: Zda.S += the four Zn.B x Zm.B products of each
    # word (Arm ARM DDI0487 SDOT (vectors); FEAT_SVE, legal in Streaming SVE mode)
    forms.append(SveForm("sdot", (z("s", 0, "destination Z register"), z("b", 5),
                                  z("b", 16, "second source Z register")),
                         0x44800000, "sve", "Arm ARM DDI0487 SDOT (vectors)"))
    return forms


def bf16_convert():
    """The streaming bf16 packers' conversion when FPCR is the default (gen/sme_pack.py):
    BFCVT 01100101 10 0010 10 101 Pg Zn Zd and BFCVTNT 01100100 10 0010 10 101 Pg Zn Zd
    (Zd.H, Pg/M, Zn.S; Pg p0-p7; FEAT_SVE with FEAT_BF16, legal in Streaming SVE mode): each
    active fp32 lane rounded to bf16 by FPCR into the even (BFCVT, odd ones zeroed) / odd
    (BFCVTNT, even ones kept) halfword (Arm ARM DDI0487, BFCVT, BFCVTNT)."""
    return [SveForm(name, (z("h", 0, "destination Z register"), governing("m"), z("s", 5)),
                    base, "bf16", f"Arm ARM DDI0487 {name.upper()}")
            for name, base in (("bfcvt", 0x658AA000), ("bfcvtnt", 0x648AA000))]


def structure_stores():
    """SVE ST2H / ST4B / ST4W (scalar plus immediate), the streaming packers' interleaving stores:
    1110010 msz nreg 1 imm4 111 Pg Rn Zt, nreg = registers - 1, imm4 in multiples of the
    register count (Arm ARM DDI0487, ST2H / ST4B / ST4W (scalar plus immediate))."""
    forms = []
    for name, msz, count, size in (("st2h", 1, 2, "h"), ("st4b", 0, 4, "b"), ("st4w", 2, 4, "s")):
        address = Slot("[x, #, mul vl]", ("[x, #, mul vl]", "[x]"),
                       (BASE, Field("immediate", 16, 4, -8 * count, 7 * count, "#{}",
                                    scale=count)), (0,))
        forms.append(SveForm(name, (vector_list4(size, count), governing(""), address),
                             0xE410E000 | msz << 23 | (count - 1) << 21, "sve",
                             f"Arm ARM DDI0487 {name.upper()} (scalar plus immediate)"))
    return forms


def structure_loads():
    """SVE LD2W, the bf16 A packer's de-interleaving load (fp32 k-values 2i / 2i + 1 of a row
    into two registers, converted by BFCVT / BFCVTNT into one k-step word each):
    scalar plus immediate 1010010 1 0 01 0 imm4 111 Pg Rn Zt, imm = 2 * imm4 (-16 to 14);
    scalar plus scalar 1010010 1 0 01 Rm 110 Pg Rn Zt, [Xn|SP, Xm, LSL #2], Rm = 31 (xzr)
    reserved for the scalar plus immediate form (Arm ARM DDI0487, LD2W (scalar plus
    immediate), LD2W (scalar plus scalar))."""
    source = "Arm ARM DDI0487 LD2W (scalar plus immediate / scalar plus scalar)"
    head = (vector_list4("s", 2), governing("z"))
    immediate = Slot("[x, #, mul vl]", ("[x, #, mul vl]", "[x]"),
                     (BASE, Field("immediate", 16, 4, -16, 14, "#{}", scale=2)), (0,))
    return [SveForm("ld2w", head + (immediate,), 0xA520E000, "sve", source),
            SveForm("ld2w", head + (address_ss(2, False),), 0xA520C000, "sve", source)]


def address_imm():
    """[Xn|SP{, #imm, MUL VL}], imm4 signed."""
    return Slot("[x, #, mul vl]", ("[x, #, mul vl]", "[x]"),
                (BASE, Field("immediate", 16, 4, -8, 7, "#{}")), (0,))


PATTERN = Slot("pattern", ("pattern", "#"), (Field("pattern", 5, 5, 0, 31),), omitted=(31,))
MUL = Slot("mul #imm", ("mul",), (Field("multiplier", 16, 4, 1, 16, "mul #{}", bias=1),),
           omitted=(1,))


def keyword(word):
    return Slot(word, (word,))


# ---- families ----------------------------------------------------------------------------
def mopa(mnemonic, base, source, source_size, feature="sme"):
    """MOPA into a 32-bit tile and its MOPS twin (bit 4, S=1): ZAda, Pn/M, Pm/M, Zn, Zm."""
    slots = (za_tile("s"), governing("m", 10, label="row predicate"),
             governing("m", 13, label="column predicate"), z(source_size, 5), z(source_size, 16))
    subtract = mnemonic[:-1] + "s"
    return [SveForm(mnemonic, slots, base, feature, source),
            SveForm(subtract, slots, base | 1 << 4, feature, source)]


def msr_svcr(mnemonic, start):
    """SMSTART/SMSTOP {SM|ZA}: MSR SVCR<field>, #imm (Arm ARM DDI0487, MSR (immediate), SMSTART,
    SMSTOP): 1101 0101 0000 0 011 0100 CRm 011 11111, CRm = 0:ZA:SM:imm."""
    source = f"Arm ARM DDI0487 {mnemonic.upper()} (alias of MSR (immediate) SVCR*)"
    variants = ((), (keyword("sm"),), (keyword("za"),))
    crm_fields = (0b011, 0b001, 0b010)
    return [SveForm(mnemonic, slots, 0xD503407F | (crm << 1 | start) << 8, "sme", source)
            for slots, crm in zip(variants, crm_fields)]


# LD1B/LD1H/LD1W: which element sizes each memory size loads into, with the 4-bit dtype
# (bits 24:21); ST1B/ST1H/ST1W use the same msz:size values (Arm ARM DDI0487, LD1B/LD1H/LD1W
# (scalar plus scalar / immediate), ST1B/ST1H/ST1W: "dtype" / "msz:size").
CONTIGUOUS = {"ld1b": (0, {"b": 0b0000, "h": 0b0001, "s": 0b0010, "d": 0b0011}),
              "ld1h": (1, {"h": 0b0101, "s": 0b0110, "d": 0b0111}),
              "ld1w": (2, {"s": 0b1010, "d": 0b1011})}


def sve_contiguous(load):
    """SVE LD1x / ST1x {Zt.T}, Pg, [Xn|SP, Xm, LSL #msz] and [Xn|SP{, #imm, MUL VL}]:
    LD1 scalar+scalar 1010010 dtype Rm 010 Pg Rn Zt, scalar+imm 1010010 dtype 0 imm4 101 Pg Rn Zt;
    ST1 scalar+scalar 1110010 msz size Rm 010 Pg Rn Zt, scalar+imm ... 0 imm4 111 Pg Rn Zt."""
    forms = []
    for name, (msz, sizes) in CONTIGUOUS.items():
        mnemonic = name if load else "st" + name[2:]
        predicate = governing("z" if load else "")
        for size, dtype in sizes.items():
            source = f"Arm ARM DDI0487 {mnemonic.upper()} (scalar plus scalar / immediate)"
            head = (vector_list(size), predicate)
            scalar = (0xA4004000 if load else 0xE4004000) | dtype << 21
            immediate = (0xA400A000 if load else 0xE400E000) | dtype << 21
            forms += [SveForm(mnemonic, head + (address_ss(msz, False),), scalar, "sve", source),
                      SveForm(mnemonic, head + (address_imm(),), immediate, "sve", source)]
    return forms


def sme_slices():
    """SME LD1B/H/W/D and ST1B/H/W/D (scalar plus scalar, tile slice):
    1110000 0 msz 0/1(load/store) Rm V Rs Pg Rn 0 ZAt:off."""
    forms = []
    for msz, size in enumerate(SIZES):
        letter = "bhwd"[msz]
        for load in (True, False):
            mnemonic = ("ld1" if load else "st1") + letter
            source = f"SME supplement DDI0616 {mnemonic.upper()} (scalar plus scalar, tile slice)"
            slots = (za_slice(size, 0, True), governing("z" if load else ""),
                     address_ss(msz, True))
            base = 0xE0000000 | msz << 22 | (0 if load else 1 << 21)
            forms.append(SveForm(mnemonic, slots, base, "sme", source))
    return forms


def fp_epilogue():
    """The fp32 epilogue's vector arithmetic (bias, clamp), .h/.s/.d:
    FADD (vectors, unpredicated) 01100101 size 0 Zm 000 000 Zn Zd;
    FMAX / FMIN (vectors, predicated) 01100101 size 00 0110 / 0111 100 Pg Zm Zdn (destructive:
    Zdn written twice, Pg p0-p7)."""
    forms = []
    for bits, size in ((1, "h"), (2, "s"), (3, "d")):
        forms.append(SveForm("fadd", (z(size, 0, "destination Z register"), z(size, 5),
                                      z(size, 16, "second source Z register")),
                             0x65000000 | bits << 22, "sve",
                             "Arm ARM DDI0487 FADD (vectors, unpredicated)"))
        for name, opc in (("fmax", 0b0110), ("fmin", 0b0111)):
            slots = (z(size, 0, "destination Z register"), governing("m"), tied_z(size, 0),
                     z(size, 5, "second source Z register"))
            forms.append(SveForm(name, slots, 0x65008000 | bits << 22 | opc << 16, "sve",
                                 f"Arm ARM DDI0487 {name.upper()} (vectors)"))
    return forms


def load_replicate():
    """LD1RB / LD1RH / LD1RW {Zt.T}, Pg/Z, [Xn|SP{, #imm}] (load one element, replicate it to
    every lane): 1000010 dtypeh(2, bits 24:23) 1 imm6 1 dtypel Pg Rn Zt, imm = esize * imm6;
    LD1RB dtypeh 00 (.b .h .s .d: dtypel 00 01 10 11), LD1RH 01 (.h .s .d), LD1RW 10 (.s .d)."""
    rows = (("ld1rb", 1, 0x84408000, "bhsd"), ("ld1rh", 2, 0x84C08000, "hsd"),
            ("ld1rw", 4, 0x85408000, "sd"))
    return [SveForm(name, (vector_list(size), governing("z"), address_scaled(scale)),
                    base | SIZES.index(size) << 13, "sve", f"Arm ARM DDI0487 {name.upper()}")
            for name, scale, base, sizes in rows for size in sizes]


def int_epilogue():
    """The int8 requantisation's vector instructions (SME streaming mode executes SVE2):
    unpredicated ADD / SQADD 00000100 size 1 Zm 000 000 / 000 100 Zn Zd; AND (.d)
    00000100 001 Zm 001 100 Zn Zd; SQRDMULH (SVE2) 00000100 size 1 Zm 0111 01 Zn Zd;
    predicated, destructive SMAX / UMAX / SMIN / UMIN 00000100 size 001 000 / 001 / 010 / 011
    000 Pg Zm Zdn (the uint8 requantisation's clamp uses the unsigned ones) and (SVE2)
    SQSHL / SRSHL 01000100 size 00 1000 / 0010 100 Pg Zm Zdn; SSRA (SVE2) .s
    01000101 01 0 tszl imm3 1110 00 Zn Zda, tszl:imm3 = 32 - shift; SMULLB / SMULLT (SVE2)
    01000101 size 0 Zm 011 10 0/1 Zn Zd; SQXTNB / SQXTNT, SQXTUNB / SQXTUNT (SVE2, signed to
    unsigned: the uint8 requantisation) 01000101 0 tszh 1 tszl 000 010 opc 0/1 Zn Zd, opc 00 /
    10; UZP1 / UZP2 / TRN1 / TRN2 00000101 size 1 Zm 011 010/011/100/101 Zn Zd;
    LD4W (scalar plus immediate) 1010010 1 0 11 0 imm4 111 Pg Rn Zt, imm = 4 * imm4."""
    forms = []
    three = lambda size: (z(size, 0, "destination Z register"), z(size, 5),
                          z(size, 16, "second source Z register"))
    destructive = lambda size: (z(size, 0, "destination Z register"), governing("m"),
                                tied_z(size, 0), z(size, 5, "second source Z register"))
    for bits, size in enumerate(SIZES):
        for name, base, feature in (("add", 0x04200000, "sve"), ("sqadd", 0x04201000, "sve"),
                                    ("sqrdmulh", 0x04207400, "sve2")):
            forms.append(SveForm(name, three(size), base | bits << 22, feature,
                                 f"Arm ARM DDI0487 {name.upper()} (vectors, unpredicated)"))
        for name, base, feature in (("smax", 0x04080000, "sve"), ("smin", 0x040A0000, "sve"),
                                    ("umax", 0x04090000, "sve"), ("umin", 0x040B0000, "sve"),
                                    ("sqshl", 0x44088000, "sve2"),
                                    ("srshl", 0x44028000, "sve2")):
            forms.append(SveForm(name, destructive(size), base | bits << 22, feature,
                                 f"Arm ARM DDI0487 {name.upper()} (vectors)"))
        for name, base in (("uzp1", 0x05206800), ("uzp2", 0x05206C00), ("trn1", 0x05207000),
                           ("trn2", 0x05207400), ("zip1", 0x05206000), ("zip2", 0x05206400)):
            forms.append(SveForm(name, three(size), base | bits << 22, "sve",
                                 f"Arm ARM DDI0487 {name.upper()} (vectors)"))
    forms.append(SveForm("and", three("d"), 0x04203000, "sve",
                         "Arm ARM DDI0487 AND (vectors, unpredicated)"))
    shift = Slot("#imm", ("#",), (Field("shift", 16, 5, 1, 32, "#{}", bias=32, scale=-1),))
    forms.append(SveForm("ssra", (z("s", 0, "destination Z register"), z("s", 5), shift),
                         0x4540E000, "sve2", "Arm ARM DDI0487 SSRA"))
    for wide, narrow, bits in (("h", "b", 1), ("s", "h", 2), ("d", "s", 3)):
        for name, base in (("smullb", 0x45007000), ("smullt", 0x45007400)):
            forms.append(SveForm(name, (z(wide, 0, "destination Z register"), z(narrow, 5),
                                        z(narrow, 16, "second source Z register")),
                                 base | bits << 22, "sve2", f"Arm ARM DDI0487 {name.upper()}"))
    for narrow, wide, tsz in (("b", "h", 0b001), ("h", "s", 0b010), ("s", "d", 0b100)):
        for name, base in (("sqxtnb", 0x45204000), ("sqxtnt", 0x45204400),
                           ("sqxtunb", 0x45205000), ("sqxtunt", 0x45205400)):
            forms.append(SveForm(name, (z(narrow, 0, "destination Z register"), z(wide, 5)),
                                 base | (tsz >> 2) << 22 | (tsz & 3) << 19, "sve2",
                                 f"Arm ARM DDI0487 {name.upper()}"))
    ld4_imm = Slot("[x, #, mul vl]", ("[x, #, mul vl]", "[x]"),
                   (BASE, Field("immediate", 16, 4, -32, 28, "#{}", scale=4)), (0,))
    forms.append(SveForm("ld4w", (vector_list4("s"), governing("z"), ld4_imm), 0xA560E000, "sve",
                         "Arm ARM DDI0487 LD4W (scalar plus immediate)"))
    return forms


def add_to_tile():
    """ADDHA / ADDVA, 32-bit (FEAT_SME): add each element of Zn to the active elements of its
    column of every horizontal slice (ADDHA) / its row of every vertical slice (ADDVA) of a
    ZA.S tile, row predicate Pn and column predicate Pm: 11000000 10 01000 V 000 Pm Pn Zn 0 00
    ZAda (SME supplement DDI0616 / Arm ARM DDI0487 C9.2.5 ADDHA, C9.2.6 ADDVA). The int8
    requant kernel adds its column offsets to the accumulators with ADDHA."""
    slots = (za_tile("s"), governing("m", 10, label="row predicate"),
             governing("m", 13, label="column predicate"), z("s", 5))
    return [SveForm(name, slots, 0xC0900000 | vertical << 16, "sme",
                    f"SME supplement DDI0616 {name.upper()}, 32-bit")
            for vertical, name in enumerate(("addha", "addva"))]


def table_lookup():
    """The int8 requant kernel's column-order permutation (built once per tile, one lookup per
    C row): TBL Zd.T, {Zn.T}, Zm.T 00000101 size 1 Zm 001100 Zn Zd; INDEX Zd.T, #imm1, #imm2
    (immediates) 00000100 size 1 imm5b 010000 imm5 Zd, imm5 the start and imm5b the step,
    each -16..15 (Arm ARM DDI0487 TBL, INDEX (immediates))."""
    forms = []
    for bits, size in enumerate(SIZES):
        forms.append(SveForm("tbl", (z(size, 0, "destination Z register"),
                                     vector_list(size, 5), z(size, 16, "index Z register")),
                             0x05203000 | bits << 22, "sve", "Arm ARM DDI0487 TBL"))
        forms.append(SveForm("index", (z(size, 0, "destination Z register"),
                                       imm("start", 5, 5, -16, 15), imm("step", 16, 5, -16, 15)),
                             0x04204000 | bits << 22, "sve", "Arm ARM DDI0487 INDEX (immediates)"))
    return forms


def mova():
    """MOVA (tile to vector) 11000000 size 00001 0 V Rs Pg 0 ZAn:off Zd and (vector to tile)
    11000000 size 00000 0 V Rs Pg Zn 0 ZAd:off; GNU as 2.40 takes both spellings and objdump
    prints the preferred alias MOV."""
    forms = []
    for size_bits, size in enumerate(SIZES):
        source = "SME supplement DDI0616 MOVA (tile to vector), MOVA (vector to tile); MOV aliases"
        to_vector = (z(size, 0, "destination Z register"), governing("m"),
                     za_slice(size, 5, False))
        to_tile = (za_slice(size, 0, False), governing("m"), z(size, 5))
        for mnemonic in ("mova", "mov"):
            alias = None if mnemonic == "mov" else "mov"
            forms += [SveForm(mnemonic, slots, base | size_bits << 22, "sme", source, alias)
                      for slots, base in ((to_vector, 0xC0020000), (to_tile, 0xC0000000))]
    return forms


def ptrue():
    """PTRUE Pd.T{, pattern}: 00100101 size 011000 111000 pattern 0 Pd."""
    return [SveForm("ptrue", (predicate(size), PATTERN), 0x2518E000 | bits << 22, "sve",
                    "Arm ARM DDI0487 PTRUE")
            for bits, size in enumerate(SIZES)]


def whilelt():
    """WHILELT Pd.T, <R>n, <R>m: 00100101 size 1 Rm 000 sf 0 1 Rn 0 Pd (sf=1: X registers)."""
    forms = []
    for bits, size in enumerate(SIZES):
        for sf, letter in ((1, "x"), (0, "w")):
            slots = (predicate(size), wxreg(letter, "first register", 5),
                     wxreg(letter, "second register", 16))
            forms.append(SveForm("whilelt", slots, 0x25200400 | bits << 22 | sf << 12, "sve",
                                 "Arm ARM DDI0487 WHILELT"))
    return forms


def element_count():
    """CNTB/CNTH/CNTW/CNTD Xd{, pattern{, MUL #imm}}: 00000100 size 10 imm4 111000 pattern Rd."""
    return [SveForm("cnt" + "bhwd"[bits], (xreg("destination register", 0), PATTERN, MUL),
                    0x0420E000 | bits << 22, "sve", "Arm ARM DDI0487 CNTB, CNTD, CNTH, CNTW")
            for bits, size in enumerate(SIZES)]


def vl_arithmetic():
    """RDVL Xd, #imm (04BF5000), RDSVL Xd, #imm (04BF5800); ADDVL/ADDPL Xd|SP, Xn|SP, #imm
    (0420 5000 / 0460 5000) and ADDSVL/ADDSPL (0420 5800 / 0460 5800): Rn at 20:16, imm6 signed
    at 10:5, Rd at 4:0."""
    six = imm("immediate", 5, 6, -32, 31)
    rows = [("rdvl", 0x04BF5000, "sve", "Arm ARM DDI0487 RDVL"),
            ("rdsvl", 0x04BF5800, "sme", "SME supplement DDI0616 RDSVL")]
    forms = [SveForm(name, (xreg("destination register", 0), six), base, feature, source)
             for name, base, feature, source in rows]
    adds = [("addvl", 0x04205000, "sve", "Arm ARM DDI0487 ADDVL"),
            ("addpl", 0x04605000, "sve", "Arm ARM DDI0487 ADDPL"),
            ("addsvl", 0x04205800, "sme", "SME supplement DDI0616 ADDSVL"),
            ("addspl", 0x04605800, "sme", "SME supplement DDI0616 ADDSPL")]
    return forms + [SveForm(name, (xreg("destination register", 0, sp=True),
                                   xreg("source register", 16, sp=True), six), base, feature, source)
                    for name, base, feature, source in adds]


SVE_FORMS: tuple[SveForm, ...] = tuple(
    # FMOPA (non-widening), single: 1000000 0 1 00 Zm Pm Pn Zn S=0 00 ZAda
    mopa("fmopa", 0x80800000, "SME supplement DDI0616 FMOPA (non-widening), single-precision", "s")
    # FMOPA (widening) half -> single: 1000000 1 1 01 Zm Pm Pn Zn S 00 ZAda
    + mopa("fmopa", 0x81A00000, "SME supplement DDI0616 FMOPA (widening)", "h")
    # BFMOPA (widening): 1000000 1 1 00 Zm Pm Pn Zn S 00 ZAda
    + mopa("bfmopa", 0x81800000, "SME supplement DDI0616 BFMOPA", "h")
    # SMOPA / SUMOPA / USMOPA / UMOPA, 32-bit: 1010000 u0 1 0 u1 Zm Pm Pn Zn S 00 ZAda
    + mopa("smopa", 0xA0800000, "SME supplement DDI0616 SMOPA, 32-bit", "b")
    + mopa("sumopa", 0xA0A00000, "SME supplement DDI0616 SUMOPA, 32-bit", "b")
    + mopa("usmopa", 0xA1800000, "SME supplement DDI0616 USMOPA, 32-bit", "b")
    + mopa("umopa", 0xA1A00000, "SME supplement DDI0616 UMOPA, 32-bit", "b")
    + msr_svcr("smstart", 1) + msr_svcr("smstop", 0)
    # ZERO {mask}: 11000000 00001000 00000000 imm8
    + [SveForm("zero", (Slot("{za}", ("{za}",), (Field("tile mask", 0, 8, 0, 255),)),), 0xC0080000,
               "sme", "SME supplement DDI0616 ZERO")]
    + sve_contiguous(load=True) + sve_contiguous(load=False) + sme_slices() + mova()
    + add_to_tile() + table_lookup()
    + ptrue() + whilelt() + element_count() + vl_arithmetic()
    + fp_epilogue() + load_replicate() + int_epilogue() + structure_loads()
    + structure_stores()
    + bf16_rounding() + bf16_convert()
)

# Forms GNU as knows but the encoder does not, with what they need: (mnemonics, an operand
# shape of theirs) -> reason.  GNU as 2.40 spells these extensions +sme-i64 / +sme-f64.
UNSUPPORTED = [
    (("smopa", "smops", "umopa", "umops", "sumopa", "sumops", "usmopa", "usmops"), "z.h",
     "16-bit integer sources into za.d tiles need FEAT_SME_I16I64 (GNU as +sme-i64), "
     "which the encoder does not support"),
    (("fmopa", "fmops"), "z.d",
     "double-precision sources into za.d tiles need FEAT_SME_F64F64 (GNU as +sme-f64), "
     "which the encoder does not support"),
    (("mova", "mov"), "za[].q",
     "128-bit (.q) tile slices are not supported by the encoder"),
]


# Mnemonics shared with instructions outside this table (MOV is also an A64 base, NEON and SVE
# alias): only operand texts matching the regex are ours.
SHARED_MNEMONICS = {"mov": r"\bza\d+[hv]\.",
                    # FADD / FMAX / FMIN are also Advanced SIMD and scalar FP instructions
                    "fadd": r"\bz\d+\.", "fmax": r"\bz\d+\.", "fmin": r"\bz\d+\.",
                    # and the integer ones of the int8 epilogue (NEON, or A64 base for add/and)
                    **{name: r"\bz\d+\." for name in (
                        "add", "sqadd", "and", "sqrdmulh", "smax", "smin", "sqshl", "srshl",
                        "uzp1", "uzp2", "trn1", "trn2", "zip1", "zip2", "ssra", "sqxtnb", "sqxtnt",
                        # the uint8 requantisation (NEON umax / umin; sqxtun* SVE2 only)
                        "umax", "umin", "sqxtunb", "sqxtunt",
                        # the bf16 rounding (A64 base lsr / orr, NEON cmhi-like / bsl-like)
                        "lsr", "orr", "cmphi", "sel",
                        # the requant permutation (NEON tbl; index is SVE only)
                        "tbl", "index",
                        # the bf16 conversion (also the scalar BFCVT Hd, Sn of FEAT_BF16)
                        "bfcvt")}}
