"""tilesmith encoder: AArch64 SIMD (NEON) and SVE/SME instructions -> `.inst` words, for assemblers
that lack them.

    encode("smmla v16.4s, v2.16b, v0.16b") == 0x4e80a450
    feature_of("smmla v16.4s, v2.16b, v0.16b") == "i8mm"
    encode("fmopa za0.s, p0/m, p1/m, z0.s, z1.s") == 0x80812000      # feature "sme"
    rewrite_text(asm_text, ["i8mm", "bf16"])      # or "all"
    verify_files(["kernel.S"]) -> (n_verified, mismatches)
"""
from .encoding import encode, feature_of
from .errors import EncodeError
from .forms import FEATURES
from .rewrite import DEFAULT_FEATURES, rewrite_text
from .verify import verify_files

__all__ = ["encode", "feature_of", "EncodeError", "FEATURES", "DEFAULT_FEATURES",
           "rewrite_text", "verify_files"]
