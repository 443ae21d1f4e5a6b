"""Encoding tables: every supported (mnemonic, operand shape) with its fixed bits.

Each family row below quotes its encoding diagram from the Arm Architecture Reference Manual
(Arm ARM, DDI0487, chapter C7.2 "Alphabetical list of A64 Advanced SIMD and floating-point
instructions", the page named in the comment).  Field letters:
  Q  bit 30 (64-bit vs 128-bit)     size bits 23:22     U bit 29
  Rm bits 20:16, Rn bits 9:5, Rd bits 4:0
  by-element index bits: H = bit 11, L = bit 21, M = bit 20 (M is Rm<4> when the index uses only H:L)
The table was checked exhaustively against GNU as (tests/test_encoder_exhaustive.py).
"""
from __future__ import annotations

from dataclasses import dataclass

# "sve" and "sme": the SVE / SME forms of sve_forms.py (FEAT_SVE, FEAT_SME).
FEATURES = ("dotprod", "i8mm", "bf16", "fp16fml", "fp16", "sve", "sve2", "sme")

Q = 1 << 30  # Q=1: 128-bit vector


def size(value: int) -> int:
    """The 2-bit 'size' field, bits 23:22."""
    return value << 22


# Index encodings of by-element forms: name -> (index field bits from most to least significant,
# highest register allowed for Vm).  Arm ARM C7.2, e.g. SDOT (by element): "index = H:L",
# FMLA (by element) half-precision: "index = H:L:M, Rm restricted to V0-V15".
INDEX_SCHEMES = {
    "H": ((11,), 31),           # FMLA (by element), double: index = H (L must be 0)
    "HL": ((11, 21), 31),       # single / 4b / 2h elements: index = H:L, Vm = M:Rm
    "HLM": ((11, 21, 20), 15),  # half-precision elements: index = H:L:M, Vm = Rm (v0-v15)
}


@dataclass(frozen=True)
class Form:
    """One encodable shape of one mnemonic."""

    mnemonic: str
    signature: tuple[str, ...]   # operand shapes, e.g. ('4s', '16b', '4b[]')
    base: int                    # all fixed bits, registers and index zero
    feature: str | None          # one of FEATURES, None for Armv8.0 base instructions
    index_scheme: str | None     # key of INDEX_SCHEMES for by-element forms
    source: str                  # Arm ARM page the encoding comes from

    @property
    def index_count(self) -> int:
        return 1 << len(INDEX_SCHEMES[self.index_scheme][0]) if self.index_scheme else 0

    @property
    def max_vm(self) -> int:
        return INDEX_SCHEMES[self.index_scheme][1] if self.index_scheme else 31


def family(mnemonic, base, feature, source, variants, index_scheme=None):
    """Forms of one encoding diagram; variants = [(signature text, Q/size bits, [index scheme])]."""
    forms = []
    for variant in variants:
        signature, extra_bits = variant[0], variant[1]
        scheme = variant[2] if len(variant) > 2 else index_scheme
        forms.append(Form(mnemonic, tuple(signature.split()), base | extra_bits,
                          feature, scheme, source))
    return forms


def pair(mnemonic, base, feature, source, narrow, wide, index_scheme=None):
    """The usual two forms of a diagram: 'narrow' with Q=0 and 'wide' with Q=1."""
    return family(mnemonic, base, feature, source, [(narrow, 0), (wide, Q)], index_scheme)


def _long_vector(mnemonic, base, source):
    """Widening 'three different' forms (SMLAL, SMULL, ...): the '2' variant sets Q."""
    lower = [("8h 8b 8b", size(0)), ("4s 4h 4h", size(1)), ("2d 2s 2s", size(2))]
    upper = [("8h 16b 16b", size(0)), ("4s 8h 8h", size(1)), ("2d 4s 4s", size(2))]
    return (family(mnemonic, base, None, source, lower)
            + family(mnemonic + "2", base | Q, None, source, upper))


def _long_element(mnemonic, base, source):
    """Widening by-element forms: size=01 uses H elements (H:L:M), size=10 uses S elements (H:L)."""
    lower = [("4s 4h h[]", size(1), "HLM"), ("2d 2s s[]", size(2), "HL")]
    upper = [("4s 8h h[]", size(1), "HLM"), ("2d 4s s[]", size(2), "HL")]
    return (family(mnemonic, base, None, source, lower)
            + family(mnemonic + "2", base | Q, None, source, upper))


def _pairwise_accumulate(mnemonic, base, source):
    """SADALP/UADALP: Vd has half as many, double-width elements as Vn."""
    variants = [("4h 8b", size(0)), ("8h 16b", Q | size(0)), ("2s 4h", size(1)),
                ("4s 8h", Q | size(1)), ("1d 2s", size(2)), ("2d 4s", Q | size(2))]
    return family(mnemonic, base, None, source, variants)


FORMS: tuple[Form, ...] = tuple(
    # FMLA (vector), single/double: 0 Q 0 01110 0 sz 1 Rm 11001 1 Rn Rd
    family("fmla", 0x0E20CC00, None, "Arm ARM DDI0487 C7.2 FMLA (vector), single/double",
           [("2s 2s 2s", 0), ("4s 4s 4s", Q), ("2d 2d 2d", Q | size(1))])
    # FMLA (vector), half precision (FEAT_FP16): 0 Q 0 01110 010 Rm 00 0011 Rn Rd
    + pair("fmla", 0x0E400C00, "fp16", "Arm ARM DDI0487 C7.2 FMLA (vector), half-precision",
           "4h 4h 4h", "8h 8h 8h")
    # FMLA (by element), half (FEAT_FP16): 0 Q 0 01111 00 L M Rm 0001 H 0 Rn Rd
    + pair("fmla", 0x0F001000, "fp16", "Arm ARM DDI0487 C7.2 FMLA (by element), half-precision",
           "4h 4h h[]", "8h 8h h[]", "HLM")
    # FMLA (by element), single/double: 0 Q 0 01111 1 sz L M Rm 0001 H 0 Rn Rd
    + pair("fmla", 0x0F801000, None, "Arm ARM DDI0487 C7.2 FMLA (by element), single",
           "2s 2s s[]", "4s 4s s[]", "HL")
    + family("fmla", 0x0FC01000, None, "Arm ARM DDI0487 C7.2 FMLA (by element), double (sz=1, Q=1)",
             [("2d 2d d[]", Q)], "H")
    # FMLAL (vector): 0 Q 0 01110 0 0 1 Rm 1 1101 1 Rn Rd (FEAT_FHM)
    + pair("fmlal", 0x0E20EC00, "fp16fml", "Arm ARM DDI0487 C7.2 FMLAL, FMLAL2 (vector)",
           "2s 2h 2h", "4s 4h 4h")
    # FMLAL2 (vector): 0 Q 1 01110 0 0 1 Rm 1 1001 1 Rn Rd
    + pair("fmlal2", 0x2E20CC00, "fp16fml", "Arm ARM DDI0487 C7.2 FMLAL, FMLAL2 (vector)",
           "2s 2h 2h", "4s 4h 4h")
    # FMLAL (by element): 0 Q 0 01111 1 0 L M Rm 0 0 0 0 H 0 Rn Rd
    + pair("fmlal", 0x0F800000, "fp16fml", "Arm ARM DDI0487 C7.2 FMLAL, FMLAL2 (by element)",
           "2s 2h h[]", "4s 4h h[]", "HLM")
    # FMLAL2 (by element): 0 Q 1 01111 1 0 L M Rm 1 0 0 0 H 0 Rn Rd
    + pair("fmlal2", 0x2F808000, "fp16fml", "Arm ARM DDI0487 C7.2 FMLAL, FMLAL2 (by element)",
           "2s 2h h[]", "4s 4h h[]", "HLM")
    # SDOT / UDOT (vector): 0 Q U 01110 10 0 Rm 1 0010 1 Rn Rd (FEAT_DotProd)
    + pair("sdot", 0x0E809400, "dotprod", "Arm ARM DDI0487 C7.2 SDOT (vector)",
           "2s 8b 8b", "4s 16b 16b")
    + pair("udot", 0x2E809400, "dotprod", "Arm ARM DDI0487 C7.2 UDOT (vector)",
           "2s 8b 8b", "4s 16b 16b")
    # SDOT / UDOT (by element): 0 Q U 01111 10 L M Rm 1110 H 0 Rn Rd
    + pair("sdot", 0x0F80E000, "dotprod", "Arm ARM DDI0487 C7.2 SDOT (by element)",
           "2s 8b 4b[]", "4s 16b 4b[]", "HL")
    + pair("udot", 0x2F80E000, "dotprod", "Arm ARM DDI0487 C7.2 UDOT (by element)",
           "2s 8b 4b[]", "4s 16b 4b[]", "HL")
    # USDOT (vector): 0 Q 0 01110 10 0 Rm 1 0011 1 Rn Rd (FEAT_I8MM)
    + pair("usdot", 0x0E809C00, "i8mm", "Arm ARM DDI0487 C7.2 USDOT (vector)",
           "2s 8b 8b", "4s 16b 16b")
    # USDOT (by element): 0 Q 0 01111 10 L M Rm 1111 H 0 Rn Rd
    + pair("usdot", 0x0F80F000, "i8mm", "Arm ARM DDI0487 C7.2 USDOT (by element)",
           "2s 8b 4b[]", "4s 16b 4b[]", "HL")
    # SUDOT (by element): 0 Q 0 01111 00 L M Rm 1111 H 0 Rn Rd
    + pair("sudot", 0x0F00F000, "i8mm", "Arm ARM DDI0487 C7.2 SUDOT (by element)",
           "2s 8b 4b[]", "4s 16b 4b[]", "HL")
    # SMMLA / UMMLA (vector): 0 1 U 01110 10 0 Rm 1 0100 1 Rn Rd
    + family("smmla", 0x4E80A400, "i8mm", "Arm ARM DDI0487 C7.2 SMMLA (vector)", [("4s 16b 16b", 0)])
    + family("ummla", 0x6E80A400, "i8mm", "Arm ARM DDI0487 C7.2 UMMLA (vector)", [("4s 16b 16b", 0)])
    # USMMLA (vector): 0 1 0 01110 10 0 Rm 1 0101 1 Rn Rd
    + family("usmmla", 0x4E80AC00, "i8mm", "Arm ARM DDI0487 C7.2 USMMLA (vector)", [("4s 16b 16b", 0)])
    # BFMMLA: 0 1 1 01110 01 0 Rm 1 1101 1 Rn Rd (FEAT_BF16)
    + family("bfmmla", 0x6E40EC00, "bf16", "Arm ARM DDI0487 C7.2 BFMMLA", [("4s 8h 8h", 0)])
    # BFDOT (vector): 0 Q 1 01110 01 0 Rm 1 1111 1 Rn Rd
    + pair("bfdot", 0x2E40FC00, "bf16", "Arm ARM DDI0487 C7.2 BFDOT (vector)", "2s 4h 4h", "4s 8h 8h")
    # BFDOT (by element): 0 Q 0 01111 01 L M Rm 1111 H 0 Rn Rd
    + pair("bfdot", 0x0F40F000, "bf16", "Arm ARM DDI0487 C7.2 BFDOT (by element)",
           "2s 4h 2h[]", "4s 8h 2h[]", "HL")
    # BFMLALB / BFMLALT (vector): 0 Q 1 01110 11 0 Rm 1 1111 1 Rn Rd, Q=0 bottom, Q=1 top
    + family("bfmlalb", 0x2EC0FC00, "bf16", "Arm ARM DDI0487 C7.2 BFMLALB, BFMLALT (vector)",
             [("4s 8h 8h", 0)])
    + family("bfmlalt", 0x2EC0FC00 | Q, "bf16", "Arm ARM DDI0487 C7.2 BFMLALB, BFMLALT (vector)",
             [("4s 8h 8h", 0)])
    # BFMLALB / BFMLALT (by element): 0 Q 0 01111 11 L M Rm 1111 H 0 Rn Rd
    + family("bfmlalb", 0x0FC0F000, "bf16", "Arm ARM DDI0487 C7.2 BFMLALB, BFMLALT (by element)",
             [("4s 8h h[]", 0)], "HLM")
    + family("bfmlalt", 0x0FC0F000 | Q, "bf16", "Arm ARM DDI0487 C7.2 BFMLALB, BFMLALT (by element)",
             [("4s 8h h[]", 0)], "HLM")
    # BFCVTN / BFCVTN2: 0 Q 0 01110 10 10000 1 0110 10 Rn Rd
    + family("bfcvtn", 0x0EA16800, "bf16", "Arm ARM DDI0487 C7.2 BFCVTN, BFCVTN2", [("4h 4s", 0)])
    + family("bfcvtn2", 0x0EA16800 | Q, "bf16", "Arm ARM DDI0487 C7.2 BFCVTN, BFCVTN2", [("8h 4s", 0)])
    # SMLAL{2} / UMLAL{2} (vector): 0 Q U 01110 size 1 Rm 1000 00 Rn Rd
    + _long_vector("smlal", 0x0E208000, "Arm ARM DDI0487 C7.2 SMLAL, SMLAL2 (vector)")
    + _long_vector("umlal", 0x2E208000, "Arm ARM DDI0487 C7.2 UMLAL, UMLAL2 (vector)")
    # SMULL{2} / UMULL{2} (vector): 0 Q U 01110 size 1 Rm 1100 00 Rn Rd
    + _long_vector("smull", 0x0E20C000, "Arm ARM DDI0487 C7.2 SMULL, SMULL2 (vector)")
    + _long_vector("umull", 0x2E20C000, "Arm ARM DDI0487 C7.2 UMULL, UMULL2 (vector)")
    # SMLAL{2} / UMLAL{2} (by element): 0 Q U 01111 size L M Rm 0010 H 0 Rn Rd
    + _long_element("smlal", 0x0F002000, "Arm ARM DDI0487 C7.2 SMLAL, SMLAL2 (by element)")
    + _long_element("umlal", 0x2F002000, "Arm ARM DDI0487 C7.2 UMLAL, UMLAL2 (by element)")
    # SMULL{2} / UMULL{2} (by element): 0 Q U 01111 size L M Rm 1010 H 0 Rn Rd
    + _long_element("smull", 0x0F00A000, "Arm ARM DDI0487 C7.2 SMULL, SMULL2 (by element)")
    + _long_element("umull", 0x2F00A000, "Arm ARM DDI0487 C7.2 UMULL, UMULL2 (by element)")
    # SADALP / UADALP: 0 Q U 01110 size 10000 00110 10 Rn Rd
    + _pairwise_accumulate("sadalp", 0x0E206800, "Arm ARM DDI0487 C7.2 SADALP")
    + _pairwise_accumulate("uadalp", 0x2E206800, "Arm ARM DDI0487 C7.2 UADALP")
)

FORMS_BY_MNEMONIC: dict[str, tuple[Form, ...]] = {
    mnemonic: tuple(form for form in FORMS if form.mnemonic == mnemonic)
    for mnemonic in dict.fromkeys(form.mnemonic for form in FORMS)}

FORM_BY_SHAPE: dict[tuple[str, tuple[str, ...]], Form] = {
    (form.mnemonic, form.signature): form for form in FORMS}
assert len(FORM_BY_SHAPE) == len(FORMS), "two forms with the same mnemonic and operand shapes"
