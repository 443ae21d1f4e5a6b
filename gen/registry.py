"""The one registry of public GEMM types: what every other place derives from.

Per GEMM type: the caller's element types, the kernel paths in order of preference (each an
instruction of gen.isa, whose `feature` says what the CPU needs, and the packer conversion of
A and of B), the epilogue kind, the public entry points, the K bound macro, the bench
workloads and the test matrix. Derived from it:
  - the dispatch tables of a build (gen.drivers renders templates/c/dispatch.c.j2 from
    `dispatch_paths`),
  - the benchmark's dispatch paths (bench/workloads.py PATHS) and workloads,
  - the parametrisation of the driver tests (tests/test_drivers_api.py),
  - tests/test_registry.py, which fails when an entry is not generated, dispatched, declared
    in tilesmith.h, tested or benchmarked.

Packed elements (the packer's conversion; C enum ts_pack_kind in drivers/src/ts_pack_internal.h):
  f32       fp32 as given                      s8    8-bit values as given (int8 or uint8)
  bf16      bf16 bits, RNE from fp32           s16   int8 sign-extended to int16
  f32_bf16  fp32 holding the bf16-rounded      u16   uint8 zero-extended to int16 (0..255)
            value (the bf16 GEMM without bfmmla: same inputs, same meaning)
  f16       fp16 bits as given                 f32_f16  fp16 converted to fp32 (exact)
  u8_s8     uint8 with bit 7 flipped: a - 128 as int8 (the uint8 x int8 GEMM on an int8 x
            int8 kernel; the driver adds 128 * sum_k B[k][n] back: ts_a_offset)

A chain is an order of preference by CPU features: dispatch takes its first path whose feature
the CPU has. So a path is worth a place only when some CPU has its feature but not those of
the paths before it; two paths with the same feature (usmmla and sudot, bfmmla and bfdot)
cannot both be reached, and the model decides which one stands (see the u8s8 and bf16 notes).
"""
from __future__ import annotations

from dataclasses import dataclass

from .isa import INSTRUCTIONS, SME_INSTRUCTIONS, TYPE_BYTES
from .sme_gemv import SME_GEMV, sme_main_step

# packed element -> (C enum suffix of ts_pack_kind, operand type the kernel must read, source)
PACKED = {
    "f32": ("F32", "fp32", "fp32"),
    "f32_bf16": ("F32_BF16", "fp32", "fp32"),
    "bf16": ("BF16", "bf16", "fp32"),
    "s8": ("S8", "int8", "int8"),
    "u8": ("S8", "uint8", "uint8"),      # same bytes: the S8 packer copies 8-bit values
    "s16": ("S16", "int16", "int8"),
    "u16": ("U16", "int16", "uint8"),
    "u8_s8": ("U8_S8", "int8", "uint8"),  # a ^ 0x80 = a - 128 (ts_pack_internal.h ts_a_offset)
    "f16": ("F16", "fp16", "fp16"),
    "f32_f16": ("F32_F16", "fp32", "fp16"),
}


# gen.isa feature -> its TS_FEAT_* bit in drivers/include/tilesmith.h (tests/test_registry.py
# checks the header agrees; ts_cpu.c detects each).
FEATURE_BITS = {"dotprod": 1, "i8mm": 2, "bf16": 4, "fp16": 8, "fp16fml": 16, "sme": 32}
# gen.isa feature -> TS_FEAT_<suffix> where the Arm feature name (FEAT_FHM) is not GNU's.
_MACRO_NAMES = {"fp16fml": "FHM"}


def feature_macro(feature) -> str | None:
    """gen.isa feature name -> suffix of its TS_FEAT_* bit in tilesmith.h (None: Armv8.0)."""
    return None if feature is None else _MACRO_NAMES.get(feature, feature.upper())


@dataclass(frozen=True)
class KernelPath:
    instruction: str          # gen.isa key
    pack_a: str               # packed element of A (PACKED key)
    pack_b: str               # packed element of B
    bench_name: str           # the path's name in bench reports


@dataclass(frozen=True)
class GemmType:
    key: str                  # dispatch key, e.g. "s8"
    macro: str                # TS_GEMM_<macro> in tilesmith.h
    a: str                    # caller's element type of A (gen.isa operand type)
    b: str                    # of B
    c: str                    # of the raw result (the quantized forms requantize it; fp16:
                              # a path with fp32 results is rounded into it by the driver)
    chain: tuple              # KernelPath, most preferred first; the last is Armv8.0
    epilogue: str             # "raw" | "requant" (raw results, plus a requantized form) |
                              # "dequant" (fp32 through the qdyn scales, ts_qdyn.c)
    entry_points: tuple       # public functions (without the prefix)
    max_k: tuple = ()         # K-bound macros (without the prefix) of the entry points
    bench_dtype: str = ""     # dtype argument of bench/workloads.c, "" for none
    bench_label: str = ""     # the type in bench titles, e.g. "int8"
    bench_shapes: tuple = ()  # bench GEMM shape names (bench/workloads.py GEMM_SHAPES)
    bench_conv: bool = False  # the conv layers of bench/workloads.py run on this type
    test_label: str = ""      # label of the type in the tests/c/drv_api_* harness output
    sme: KernelPath | None = None  # the SME outer product (gen.isa SME_INSTRUCTIONS) dispatch
                              # prefers to the whole chain where the build has it (ARCH v92),
                              # the CPU has FEAT_SME and its streaming vector length is one of
                              # SME_SVL_BYTES; None: no SME kernel serves this type
    kernel_epilogues: tuple = ()  # fused epilogues (gen.epilogue.EPILOGUES) every kernel of the
                              # chain gets besides "raw": with OFF_CHAIN_EPILOGUES the one source
                              # of gen.epilogue.EPILOGUE_VARIANTS


# Where the dot forms of v86 stand (model: gen/cores.py, solver tiles of `make tiles`):
#  - sudot (u8 x s8, i8mm) needs the same feature as usmmla, so behind usmmla it is never
#    reached, and in front it would lose: 16 MACs per instruction against usmmla's 32 at the
#    same issue rate on every modeled core (N2/A710 2/cycle, V1 4, A510 2): half the peak, and
#    at M = 1 both 8-row tiles use an eighth of their MACs. Out of the chain; it serves the
#    usmmla path's M = 1 as its GEMV form (gen/gemv.py GEMV_FORMS: 1x32x4, fewer instructions
#    per byte of B than usmmla's 2x42x8).
#  - bfdot (bf16, same feature as bfmmla): 8 MACs per instruction against bfmmla's 16 at the
#    same rate (N2 2/cycle both; V1 4): likewise half the peak; out of the chain for the same
#    reason. As bfmmla's GEMV form it ties with bfmmla's own GEMV tile at M = 1, which also
#    serves M = 2, so the objective keeps bfmmla. Both are generated, verified and
#    kernel-tested at v86.
GEMM_TYPES: tuple[GemmType, ...] = (
    GemmType("f32", "F32", "fp32", "fp32", "fp32",
             (KernelPath("fmla_f32", "f32", "f32", "fmla"),),
             "raw", ("gemm_f32", "pack_b_f32", "pack_b_f32_nk", "gemm_f32_prepacked",
                     "gemm_f32_bias_clamp", "gemm_f32_bias_clamp_prepacked"),
             bench_dtype="f32", bench_label="fp32", bench_shapes=("gemm256", "gemm512", "gemv", "gemv11008", "prefill"),
             test_label="f32", kernel_epilogues=("biasclamp",),
             sme=KernelPath("fmopa_f32", "f32", "f32", "fmopa")),
    GemmType("bf16", "BF16", "fp32", "fp32", "fp32",
             (KernelPath("bfmmla", "bf16", "bf16", "bfmmla"),
              KernelPath("fmla_f32", "f32_bf16", "f32_bf16", "fmla")),
             "raw", ("gemm_bf16", "pack_b_bf16", "pack_b_bf16_nk", "gemm_bf16_prepacked",
                     "gemm_bf16_bias_clamp", "gemm_bf16_bias_clamp_prepacked"),
             bench_dtype="bf16", bench_label="bf16", bench_shapes=("gemm256", "gemm512", "gemv", "gemv11008", "prefill"),
             test_label="bf16", kernel_epilogues=("biasclamp",),
             sme=KernelPath("bfmopa", "bf16", "bf16", "bfmopa")),
    # fp16 accumulation (fmla .8h, FEAT_FP16). Fallback: fp16 converted to fp32 (exact), the
    # fp32 fmla kernel, results rounded to fp16: differs only in accumulation precision.
    GemmType("f16", "F16", "fp16", "fp16", "fp16",
             (KernelPath("fmla_f16", "f16", "f16", "fmla16"),
              KernelPath("fmla_f32", "f32_f16", "f32_f16", "fmla")),
             "raw", ("gemm_f16", "pack_b_f16", "pack_b_f16_nk", "gemm_f16_prepacked"),
             bench_dtype="f16", bench_label="fp16", bench_shapes=("gemm512", "prefill"),
             test_label="f16"),
    # fp16 inputs, fp32 accumulation (fmlal/fmlal2, FEAT_FHM). Fallback: fp32 fmla on the
    # converted (exact) values. Not fmla .8h: its fp16 sums are not what this type promises.
    GemmType("f16f32", "F16F32", "fp16", "fp16", "fp32",
             (KernelPath("fmlal", "f16", "f16", "fmlal"),
              KernelPath("fmla_f32", "f32_f16", "f32_f16", "fmla")),
             "raw", ("gemm_f16f32", "pack_b_f16f32", "pack_b_f16f32_nk", "gemm_f16f32_prepacked",
                     "gemm_f16f32_bias_clamp", "gemm_f16f32_bias_clamp_prepacked"),
             bench_dtype="f16f32", bench_label="fp16 -> fp32", bench_shapes=("gemm512",),
             test_label="f16f32", kernel_epilogues=("biasclamp",),
             sme=KernelPath("fmopa_f16f32", "f16", "f16", "fmopa16")),
    GemmType("s8", "INT8", "int8", "int8", "int32",
             (KernelPath("smmla", "s8", "s8", "i8mm"),
              KernelPath("sdot", "s8", "s8", "dotprod"),
              KernelPath("smlal", "s16", "s16", "armv8.0")),
             "requant", ("gemm_s8s32", "gemm_s8", "pack_b_s8", "pack_b_s8_nk", "gemm_s8s32_prepacked",
                         "gemm_s8_prepacked", "conv2d_s8", "pack_conv2d_filter_s8",
                         "conv2d_s8_prepacked"),
             max_k=("GEMM_S8S32_MAX_K", "GEMM_S8_MAX_K"),
             bench_dtype="s8", bench_label="int8",
             bench_shapes=("gemm256", "gemm512", "gemv", "gemv11008", "prefill"), bench_conv=True,
             test_label="int8", kernel_epilogues=("requant",),
             sme=KernelPath("smopa", "s8", "s8", "smopa")),
    # uint8 activations. dotprod without i8mm (Neoverse N1, Cortex-A76 / A55): the int8 sdot
    # kernels on A packed with bit 7 flipped (a - 128, "u8_s8"), sum_k a*b = sum_k (a-128)*b
    # + 128 * sum_k b: the driver adds 128 * the column sums of B (the requantising form folds
    # it into its zero-point correction); |(a-128)*b| <= 128*128, exact within the same K
    # bound. Armv8.0 fallback: A zero-extended and B sign-extended to int16 (0..255
    # and -128..127 are int16 values), then the smlal kernel, whose int16 x int16 products
    # (|a*b| <= 255*128) and int32 sums are exact within TS_GEMM_U8S8S32_MAX_K.
    GemmType("u8s8", "U8S8", "uint8", "int8", "int32",
             (KernelPath("usmmla", "u8", "s8", "i8mm"),
              KernelPath("sdot", "u8_s8", "s8", "dotprod"),
              KernelPath("smlal", "u16", "s16", "armv8.0")),
             "requant", ("gemm_u8s8s32", "gemm_u8", "pack_b_u8s8", "pack_b_u8s8_nk", "gemm_u8s8s32_prepacked",
                         "gemm_u8_prepacked"),
             max_k=("GEMM_U8S8S32_MAX_K", "GEMM_U8_MAX_K"),
             bench_dtype="u8s8", bench_label="uint8 x int8", bench_shapes=("gemm512",),
             test_label="u8s8", kernel_epilogues=("requant_u8",), sme=KernelPath("usmopa", "u8", "s8", "usmopa")),
    # uint8 x uint8 -> uint32. Armv8.0 fallback: both zero-extended to int16; the smlal kernel's
    # int32 lanes wrap modulo 2^32, so its bits are the uint32 sum (exact up to 2^32 - 1, i.e.
    # within TS_GEMM_U8U32_MAX_K).
    GemmType("u8u32", "U8U32", "uint8", "uint8", "uint32",
             (KernelPath("ummla", "u8", "u8", "i8mm"),
              KernelPath("udot", "u8", "u8", "dotprod"),
              KernelPath("smlal", "u16", "u16", "armv8.0")),
             "raw", ("gemm_u8u32", "pack_b_u8u32", "pack_b_u8u32_nk", "gemm_u8u32_prepacked"),
             max_k=("GEMM_U8U32_MAX_K",),
             bench_dtype="u8u32", bench_label="uint8", bench_shapes=("gemm512",),
             test_label="u8u32"),
    # Dynamically quantised int8 activations x int8 / int4 symmetric weights -> fp32 (LLM
    # inference, issue 12): the int8 kernels' raw sums per scale block, then the fp32
    # dequantisation epilogue in C (ts_qdyn.c, no fused kernel variant; exact int32 per block, fixed fp32 order, so every path
    # returns the same bits). int4 weights: the qdyn int4 kernels of gen/qdyn4*.py where the path
    # has one for their scales (per channel: every path; blocks: smmla), else widened to int8.
    GemmType("qdyn", "QDYN", "int8", "int8", "int32",
             (KernelPath("smmla", "s8", "s8", "i8mm"),
              KernelPath("sdot", "s8", "s8", "dotprod"),
              KernelPath("smlal", "s16", "s16", "armv8.0")),
             "dequant", ("pack_b_qs8", "pack_b_qs4", "pack_b_qs8_ctx", "pack_b_qs4_ctx",
                         "gemm_qdyn_f32", "pack_a_qdyn", "packed_a_free",
                         "gemm_qdyn_f32_packed_a", "quantize_qs8", "quantize_qs4",
                         "gemm_qdyn_kernel"),
             max_k=("QDYN_S8_MAX_K", "QDYN_S4_MAX_BL"),
             bench_dtype="qdyn", bench_label="qdyn int8 x int4/int8 -> fp32",
             bench_shapes=("gemv", "prefill", "gemm512"),
             test_label="qdyn"),
)

BY_KEY = {t.key: t for t in GEMM_TYPES}

# the fused epilogues gen.epilogue can emit (its EPILOGUES without "raw")
KNOWN_EPILOGUES = ("requant", "requant_u8", "biasclamp")


def fused_epilogue(t: GemmType) -> str | None:
    """The fused epilogue of GEMM type `t`'s kernels, whose variant is a path's `fused` kernel
    (the dispatch tables' ts_path.fused): its requantisation (int8 or uint8 C, gemm_s8 /
    gemm_u8 / conv2d_s8) or biasclamp (fp32 C, gemm_f32_bias_clamp); None: none. A type has at
    most one (check_registry)."""
    return t.kernel_epilogues[0] if t.kernel_epilogues else None

# Generated instructions that no chain holds (see the sudot / bfdot note above GEMM_TYPES) and
# the fused epilogues their kernels get all the same: bfdot accumulates fp32 like bfmmla.
OFF_CHAIN_EPILOGUES = {"sudot": (), "usdot": (), "bfdot": ("biasclamp",)}


def epilogue_variants(types=GEMM_TYPES) -> dict:
    """{instruction: epilogue variants its kernels get, "raw" first}: the union over every GEMM
    type whose chain holds the instruction of that type's `kernel_epilogues` (and
    OFF_CHAIN_EPILOGUES), in KNOWN_EPILOGUES order (gen.epilogue.EPILOGUE_VARIANTS)."""
    fused = {i: set(es) for i, es in OFF_CHAIN_EPILOGUES.items()}
    for t in types:
        for p in t.chain:
            fused.setdefault(p.instruction, set()).update(t.kernel_epilogues)
    return {i: ("raw", *(e for e in KNOWN_EPILOGUES if e in es)) for i, es in fused.items()}


def dispatched_on(instruction: str, has, types=GEMM_TYPES) -> bool | None:
    """Whether a CPU that has the features `has(feature)` says it has runs `instruction`'s
    kernels: some chain holds the instruction and the CPU lacks the feature of every path
    before it there (dispatch takes a chain's first path whose feature the CPU has). None when
    no chain holds it (the GEMV forms of OFF_CHAIN_EPILOGUES, chosen per kernel path)."""
    chains = [t.chain for t in types if any(p.instruction == instruction for p in t.chain)]
    if not chains:
        return None
    for chain in chains:
        before = chain[:[p.instruction for p in chain].index(instruction)]
        if not any(has(INSTRUCTIONS[p.instruction].feature) for p in before):
            return True
    return False


def features(types=GEMM_TYPES) -> tuple:
    """Every CPU feature some path needs, in the order of their TS_FEAT_* bits."""
    used = {INSTRUCTIONS[p.instruction].feature for t in types for p in t.chain}
    used |= {SME_INSTRUCTIONS[t.sme.instruction].feature for t in types if t.sme is not None}
    return tuple(f for f in FEATURE_BITS if f in used)


def forcing_features(gemm_type: GemmType, path: KernelPath, types=GEMM_TYPES) -> tuple:
    """The feature mask that makes dispatch pick `path` of `gemm_type` on a CPU with every
    feature: what this path and the slower ones after it need (the preferred paths' features
    left out), in bit order; () for Armv8.0."""
    after = gemm_type.chain[gemm_type.chain.index(path):]
    needed = {INSTRUCTIONS[p.instruction].feature for p in after}
    return tuple(f for f in features(types) if f in needed)


def check_registry(types=GEMM_TYPES) -> None:
    """Raise ValueError at the first inconsistent entry: unknown instruction or packed element,
    a conversion that does not produce what the kernel reads, A and B packed to different
    element sizes, a chain that does not end with an Armv8.0 path, an unknown epilogue, or
    integer results without a K bound."""
    for t in types:
        if not t.chain:
            raise ValueError(f"GEMM type {t.key}: no kernel path")
        if t.sme is not None and t.sme.instruction not in SME_INSTRUCTIONS:
            raise ValueError(f"GEMM type {t.key}: unknown SME instruction {t.sme.instruction!r}")
        for p in t.chain + ((t.sme,) if t.sme is not None else ()):
            table = SME_INSTRUCTIONS if p is t.sme else INSTRUCTIONS
            if p.instruction not in table:
                raise ValueError(f"GEMM type {t.key}: unknown instruction {p.instruction!r}")
            inst = table[p.instruction]
            for operand, packed, want, source in (("A", p.pack_a, inst.a_type, t.a),
                                                  ("B", p.pack_b, inst.b_type, t.b)):
                if packed not in PACKED:
                    raise ValueError(f"GEMM type {t.key}: unknown packed element {packed!r}")
                if PACKED[packed][1] != want or PACKED[packed][2] != source:
                    raise ValueError(f"GEMM type {t.key} {p.instruction}: {operand} packed as "
                                     f"{packed} ({PACKED[packed][2]} -> {PACKED[packed][1]}), "
                                     f"the caller gives {source} and the kernel reads {want}")
            if TYPE_BYTES[inst.a_type] != TYPE_BYTES[inst.b_type]:
                raise ValueError(f"GEMM type {t.key} {p.instruction}: A and B element sizes "
                                 f"differ")
        if INSTRUCTIONS[t.chain[-1].instruction].feature is not None:
            raise ValueError(f"GEMM type {t.key}: the last path must run on Armv8.0")
        for e in t.kernel_epilogues:
            if e not in KNOWN_EPILOGUES:
                raise ValueError(f"GEMM type {t.key}: unknown epilogue {e!r}")
        if len(t.kernel_epilogues) > 1:
            raise ValueError(f"GEMM type {t.key}: more than one fused epilogue (a path has one "
                             f"fused kernel)")
        if t.c in ("int32", "uint32") and not t.max_k:
            raise ValueError(f"GEMM type {t.key}: integer results need a K bound (max_k)")


def result_bytes(instruction: str) -> int:
    """Bytes of one kernel result (C element) of an instruction (NEON or SME)."""
    return TYPE_BYTES[(INSTRUCTIONS.get(instruction) or SME_INSTRUCTIONS[instruction]).c_type]


# Streaming vector lengths (bytes) the dispatch tables hold an SME path for: every SVL the
# architecture allows, 128 to 2048 bits, powers of two (DDI0616, SMCR_ELx.LEN / "SVL"). One
# ts_path per SVL keeps ep and hp constants of the table, so the driver's scratch sizing over
# ts_paths_of stays static (at most 2048 bits: a 128 x 128 fp32 tile, 64 KiB).
SME_SVL_BYTES = (16, 32, 64, 128, 256)


def _path_fields(t: GemmType, p, kernel: dict, feature, ep: int, hp: int, **fields) -> dict:
    """The fields every path dict (NEON or SME) of GEMM type `t` has, for KernelPath or SmePath
    `p` run by the manifest entry `kernel` with tile ep x hp, plus the kind-specific `fields`:
    the instruction, packed elements and pack enums of A and B, result bytes, symbol, lp,
    feature macro and the symbol of the kernel's variant with the type's fused epilogue
    (fused_epilogue: int8 or uint8 C as the type's entry points write, or fp32 biasclamp;
    None: none)."""
    return dict(instruction=p.instruction, packed=p.pack_b, packed_a=p.pack_a,
                pack=PACKED[p.pack_b][0], pack_a=PACKED[p.pack_a][0],
                c_bytes=result_bytes(p.instruction), symbol=kernel["symbol"],
                ep=ep, hp=hp, lp=int(kernel["lp"]), feature=feature_macro(feature),
                fused=next((v["symbol"] for v in kernel.get("variants", [])
                            if v["epilogue"] == fused_epilogue(t)), None),
                # the fused kernel's strip entry (gen.strip; None: none)
                strip=next((v.get("strip") for v in kernel.get("variants", [])
                            if v["epilogue"] == fused_epilogue(t)), None),
                # columns per 64-byte block of the fused requant epilogue's parameters
                # (gen.epilogue.params_cols: 4, 2 for the MMLA tiles; SME's: 4)
                params_cols=next((v.get("params_cols") or 4 for v in kernel.get("variants", [])
                                  if v["epilogue"] == fused_epilogue(t)), 4),
                **fields)


def sme_dispatch_paths(t: GemmType, sme: dict, gemv: dict | None = None,
                       main: dict | None = None) -> list:
    """The SME paths of GEMM type `t` for the raw SME kernels in `sme` ({instruction: manifest
    sme_kernels entry, with `variants`: the entries of its epilogue variants, whose _requant
    one — smopa's — is the path's fused requantisation}), one per streaming vector length of SME_SVL_BYTES (dispatch takes the
    one whose svl_bytes is the CPU's RDSVL); [] when the type or the build has none. The tile
    is tr x tc ZA.S tiles of S = svl_bytes / 4 lanes: ep = tr * S rows, hp = tc * S columns.
    Small M (gen/sme_gemv.py): where the type's chain holds the NEON instruction SME_GEMV names
    and `gemv` ({served instruction: manifest entry with role "gemv"}) its GEMV kernel (`main`:
    {instruction: main kernel entry}), each path gets that GEMV kernel (main_step: the SME
    tile's modeled cost, sme_main_step) and needs its feature too (`gemv_feature`); when that
    feature is not Armv8.0's, a second path per SVL without the GEMV kernel follows them all
    (TS_FEAT_SME alone: a feature mask without the GEMV kernel's feature keeps the SME tile)."""
    if t.sme is None or t.sme.instruction not in sme:
        return []
    kernel, p = sme[t.sme.instruction], t.sme
    feature = SME_INSTRUCTIONS[p.instruction].feature
    small = _sme_gemv(t, gemv or {}, main or {})

    def path(svl, with_gemv):
        tr, tc = int(kernel["tr"]), int(kernel["tc"])
        g = None
        if with_gemv:
            g = dict(small, main_step=sme_main_step(p.instruction, tr, tc, small["lp"]))
            if not _gemv_ever_runs(g, tc * svl // 4):
                g = None        # the rule keeps the SME tile for every N: no second layout
        return _path_fields(t, p, kernel, feature, ep=tr * svl // 4, hp=tc * svl // 4, gemv=g,
                            gemv_feature=feature_macro(INSTRUCTIONS[SME_GEMV[p.instruction]]
                                                       .feature) if g else None,
                            ntail=[], svl_bytes=svl, core_class="generic",
                            sme_pack_a=sme_packer(kernel, "a", PACKED[p.pack_a][0]),
                            sme_pack_b=sme_packer(kernel, "b", PACKED[p.pack_b][0]))
    paths = [path(svl, small is not None) for svl in SME_SVL_BYTES]
    fallback = [path(p["svl_bytes"], False) for p in paths if p["gemv_feature"] is not None]
    return paths + fallback


def _gemv_ever_runs(g: dict, hp: int) -> bool:
    """Whether the driver's narrow-B rule (ts_pack_internal.h ts_use_gemv) runs GEMV kernel
    `g` (its dict, with main_step) for some N beside a GEMM tile hp columns wide (the rule
    repeats with period lcm(hp, g["hp"]) in N)."""
    return any(-(-n // g["hp"]) * g["step"] <= -(-n // hp) * g["main_step"]
               for n in range(1, hp * g["hp"] + 1))


def _sme_gemv(t: GemmType, gemv: dict, main: dict) -> dict | None:
    """The GEMV kernel (as _gemv_dict gives it) serving the SME path of `t`: that of the chain
    path whose instruction gen/sme_gemv.py SME_GEMV names, which must read the same packed
    elements as the SME kernel; None: no such path or kernel, or the type runs no GEMV."""
    served = SME_GEMV.get(t.sme.instruction)
    chain = next((p for p in t.chain if p.instruction == served), None)
    if chain is None or not has_gemv(t) or served not in gemv or served not in main:
        return None
    if PACKED[chain.pack_a][0] != PACKED[t.sme.pack_a][0] or chain.pack_b != t.sme.pack_b:
        raise ValueError(f"{t.key}: the {served} GEMV kernel packs other elements than "
                         f"{t.sme.instruction}")
    return _gemv_dict(gemv[served], main[served])


def sme_packer(kernel: dict, role: str, kind: str) -> str | None:
    """The streaming packer (manifest sme_packers, gen.sme_pack) of the SME kernel entry
    `kernel`'s A (role "a": its tr) or B panels (role "b": its tc, element bytes and lp) for
    pack kind `kind`, or None (the C packers serve that kind)."""
    inst = SME_INSTRUCTIONS[kernel["instruction"]]
    for packer in kernel.get("packers", []):
        if packer["role"] != role or kind not in packer["kinds"]:
            continue
        if role == "a" and packer["tr"] == int(kernel["tr"]):
            return packer["symbol"]
        if role == "b" and (packer["tc"], packer["lp"], packer["elem_bytes"]) == (
                int(kernel["tc"]), int(kernel["lp"]), TYPE_BYTES[inst.b_type]):
            return packer["symbol"]
    return None


# GEMM types whose driver (the engine, ts_engine.c) dispatches on M to the GEMV / small-M kernels
# (the fp16 types too: fmla .8h / fmlal GEMV kernels, or the fmla fp32 one on the converted
# fp16, whose fp32 results the driver rounds to fp16 like the GEMM tile's); the qdyn type runs
# its own loop (ts_qdyn.c) and gets none yet (its handles would only carry an unused second
# layout).
GEMV_EPILOGUES = ("raw", "requant")


def has_gemv(t: GemmType) -> bool:
    """Whether the driver dispatches GEMM type `t` on M to GEMV / small-M kernels."""
    return t.epilogue in GEMV_EPILOGUES


def _gemv_dict(small: dict | None, kernel: dict) -> dict | None:
    """The GEMV / small-M kernel `small` (manifest entry, role "gemv") as it serves `kernel`:
    its max_m and the GEMM tile's instructions per k-step are those of the kernel it was chosen
    for, or for a core-class variant the variant's own (its entry's gemv_max_m and
    gemv_main_step_instructions; none there: the variant has no GEMV kernel)."""
    if small is None:
        return None
    if kernel.get("role", "main") == "main":
        max_m, main_step = small["max_m"], small["main_step_instructions"]
    elif "gemv_max_m" in kernel:
        max_m, main_step = kernel["gemv_max_m"], kernel["gemv_main_step_instructions"]
    else:
        return None
    return dict(symbol=small["symbol"], ep=int(small["ep"]), hp=int(small["hp"]),
                lp=int(small["lp"]), max_m=int(max_m), step=int(small["step_instructions"]),
                main_step=int(main_step))


def _ntail_dicts(t: GemmType, kernel: dict, ntail: dict) -> list:
    """The column-tail kernels (manifest role "ntail", gen.ntail) serving kernel entry
    `kernel`, narrowest first, each as a dict (symbol, hp, and the symbol of its variant with
    the type's fused epilogue, None: none): those of the same rows whose "serves" is
    its symbol (a core-class variant of another tile has none; one of the same tile gets its
    generic kernel's, _path_dict)."""
    tails = [dict(symbol=k["symbol"], hp=int(k["hp"]),
                 fused=next((v["symbol"] for v in k.get("variants", [])
                             if v["epilogue"] == fused_epilogue(t)), None))
            for k in sorted(ntail.get(kernel["symbol"], ()), key=lambda k: int(k["hp"]))
            if int(k["ep"]) == int(kernel["ep"]) and int(k["hp"]) < int(kernel["hp"])]
    if len(tails) > NTAILS:
        raise ValueError(f"{kernel['symbol']}: {len(tails)} column-tail kernels, the dispatch "
                         f"table holds {NTAILS} (ts_pack_internal.h TS_NTAILS)")
    return tails


def _same_tile(a: dict, b: dict) -> bool:
    return all(int(a[x]) == int(b[x]) for x in ("ep", "hp", "lp"))


def _path_dict(t: GemmType, p: KernelPath, kernel: dict, gemv: dict, qdyn: dict,
               ntail: dict, generic: dict | None = None) -> dict:
    """The path dict (dispatch_paths) of kernel entry `kernel` (main or core-class variant;
    `generic`: the main kernel a variant stands beside, whose column-tail kernels a variant
    of the same tile shares: the same packed panels)."""
    tails_of = generic if generic is not None and _same_tile(kernel, generic) else kernel
    return _path_fields(
        t, p, kernel, INSTRUCTIONS[p.instruction].feature, ep=int(kernel["ep"]), hp=int(kernel["hp"]),
        core_class=kernel.get("core_class", "generic"),
        # the engine's types only (those it also runs GEMV kernels for; qdyn has its own loop)
        ntail=_ntail_dicts(t, tails_of, ntail) if has_gemv(t) else [],
        # the qdyn type: its dotprod decode tile (gen.qdyn8_dot, key ("qdyn", instruction)),
        # which reads the main kernel's panels: the int8 handles' raw layout
        gemv=_gemv_dict(gemv.get(p.instruction if has_gemv(t) else ("qdyn", p.instruction))
                        if has_gemv(t) or t.epilogue == "dequant" else None, kernel),
        svl_bytes=0,
        qdyn=[dict(symbol=q["symbol"], ep=int(q["ep"]), hp=int(q["hp"]),
                   max_bl=int(q["max_bl"]), panels=int(q["panels"]), lp=int(q["a_lp"]))
              if q is not None and t.epilogue == "dequant" else None
              for q in (qdyn.get((p.instruction, kind)) for kind in range(QDYN_KINDS))])


def dispatch_paths(main: dict, types=GEMM_TYPES, gemv: dict | None = None,
                   sme: dict | None = None, qdyn: dict | None = None,
                   classes: dict | None = None, ntail: dict | None = None) -> dict:
    """{gemm type key: [path dict]} for the kernels present in `main` ({instruction: manifest
    kernel entry}), most preferred first. A path dict holds the kernel's symbol and tile (ep,
    hp, lp), the instruction, the packed elements of A and B (`packed` is B's), the pack enum
    suffixes, the result bytes, the feature macro suffix (None when Armv8.0 has it), the
    symbol of its fused epilogue variant (`fused`: the GEMM type's, fused_epilogue; None: none),
    the core class ("generic", or a
    gen.cores.CORE_CLASSES key) and
    `gemv`: the GEMV / small-M kernel serving the path's instruction ({served instruction:
    manifest entry with role "gemv"}, gen.gemv; its own instruction may be a GEMV form of the
    path's) as a dict (symbol, ep, hp, lp, max_m, step and main_step: the instructions of one
    k-step of the GEMV and of the GEMM tile), or None.
    `qdyn`: {(instruction, kind): manifest entry} of the qdyn kernels (gen.qdyn4,
    gen.qdyn4_rl; qdyn_kind: int4 0 scale blocks, 1 per channel, 2 per channel for decode,
    int8 3 per channel, int4 4 scale blocks for decode, int8 5 per channel for decode), given to the
    "dequant" type's paths of that instruction as `qdyn`: a list by kind, each a dict (symbol,
    ep, hp, max_bl, panels) or None.
    `classes` ({instruction: [manifest entries of its core-class variants]}) puts each
    instruction's class variants just before its generic kernel: dispatch takes the first path
    whose features are usable and whose class is the running core's or generic; a variant
    shares the generic kernel's GEMV kernel (_gemv_dict) and qdyn kernels. `sme`
    ({instruction: raw SME kernel entry}) puts the type's SME paths first (sme_dispatch_paths).
    `ntail` ({served symbol: [manifest entries with role "ntail"]}, gen.ntail) gives each path
    `ntail`: its column-tail kernels (_ntail_dicts; SME paths: []).
    ValueError when a type has no Armv8.0 kernel in `main`."""
    gemv = gemv or {}
    ntail = ntail or {}
    qdyn = qdyn or {}
    classes = classes or {}
    paths = {}
    for t in types:
        paths[t.key] = sme_dispatch_paths(t, sme or {}, gemv, main)
        for p in t.chain:
            if p.instruction not in main:
                continue
            for variant in classes.get(p.instruction, ()):
                paths[t.key].append(_path_dict(t, p, variant, gemv, qdyn, ntail,
                                               main[p.instruction]))
            paths[t.key].append(_path_dict(t, p, main[p.instruction], gemv, qdyn, ntail))
        if not paths[t.key] or paths[t.key][-1]["feature"] is not None:
            baseline = [p.instruction for p in t.chain
                        if INSTRUCTIONS[p.instruction].feature is None]
            raise ValueError(f"manifest has no Armv8.0 kernel for the {t.key} GEMM "
                             f"(needs one of {baseline})")
    return paths


def manifest_dispatch_paths(manifest: dict, types=GEMM_TYPES) -> dict:
    """dispatch_paths of a generated manifest: its main kernels, their GEMV / small-M kernels
    (by the instruction of the kernel they serve), their column-tail kernels (by the symbol
    of the kernel they serve), the core-class variants, the SME kernels
    (raw, with their epilogue variants) and the qdyn int4 kernels."""
    kernels = manifest["kernels"]
    main = {k["instruction"]: k for k in kernels if k.get("role", "main") == "main"}
    served = {k["symbol"]: k["instruction"] for k in main.values()}
    gemv = {served[k["serves"]]: k for k in kernels if k.get("role") == "gemv"}
    gemv.update({("qdyn", served[k["serves"]]): k for k in kernels if k.get("role") == "qdyn_gemv"})
    classes: dict = {}
    ntail: dict = {}
    for k in kernels:
        if k.get("role") == "core_class":
            classes.setdefault(k["instruction"], []).append(k)
        if k.get("role") == "ntail":
            ntail.setdefault(k["serves"], []).append(k)
    sme_kernels = manifest.get("sme_kernels", [])
    sme = {k["instruction"]: dict(k, variants=[v for v in sme_kernels if v["epilogue"] != "raw"
                                               and v["instruction"] == k["instruction"]],
                                  packers=manifest.get("sme_packers", []))
           for k in sme_kernels if k["epilogue"] == "raw"}
    qdyn = {(k["instruction"], qdyn_kind(k)): k for k in manifest.get("qdyn_kernels", [])}
    return dispatch_paths(main, types, gemv, sme, qdyn, classes, ntail)


QDYN_KINDS = 6     # entries of ts_path.qdyn (ts_pack_internal.h TS_QDYN_KINDS)
NTAILS = 3         # entries of ts_path.ntail (ts_pack_internal.h TS_NTAILS)


def qdyn_kind(entry: dict) -> int:
    """Index of a qdyn kernel in ts_path.qdyn: int4 0 scale blocks, 1 per channel, 2 per
    channel for decode (M <= its ep per pass over B); int8 3 per channel; int4 4 scale blocks
    for decode (one row per pass, several of kind 0's panels per call); int8 5 per channel for
    decode (one row pair per pass, several of kind 3's panels per call; on the dotprod path,
    which has no kind 3, one row per pass over several of the raw kernel's panels:
    gen.qdyn8_dot)."""
    if entry.get("weights") == "s8":
        return 5 if entry.get("decode") else 3
    if entry["blocked"]:
        return 4 if entry["decode"] else 0
    return 2 if entry["decode"] else 1


check_registry()
