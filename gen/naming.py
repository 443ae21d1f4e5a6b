"""Kernel names: symbols, file names and the C macro names derived from them.

    ts_gemm_s8s32_smmla_8x12x8              prefix, op, type signature, mnemonic, ep x hp x lp
    ts_gemm_s8s32_smmla_8x12x8_cortexa510   with the schedule's CPU when CPU != generic
    ts_gemm_s8s32_smmla_8x12x8_requant      with a fused epilogue (gen.epilogue), before the CPU
"""
from __future__ import annotations

import re

from .cores import GENERIC
from .isa import MacInstruction, signature

# A symbol prefix must itself start a C identifier. It also prefixes tilesmith.h's macros, so
# it may not be empty: the header would define OK, EINVAL and ENOMEM, and EINVAL / ENOMEM are
# <errno.h>'s (22 / 12 on Linux), so whichever header comes second silently changes them.
_PREFIX_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Names the C standard reserves (C11 7.1.3, 7.31 "future library directions") that a prefix
# would produce: the header's macros are the prefix in upper case ("E" + letter or digit:
# <errno.h>; "LC_", "SIG" + letter or "_"), its functions the prefix as given ("is" / "to" +
# letter: <ctype.h>; "str" / "mem" / "wcs" + letter: <string.h>, <stdlib.h>), and anything
# that starts with "_" + upper case or "_" is reserved outright. The "$" cases: what follows
# the prefix starts with a letter (gemm..., OK).
_RESERVED_PREFIX_RE = re.compile(
    r"_|e([a-z0-9]|$)|(is|to|str|mem|wcs)([a-z]|$)|lc_|sig([a-z_]|$)")


def check_prefix(prefix: str) -> str:
    if not prefix:
        raise ValueError("PREFIX must not be empty: tilesmith.h's macros would be OK, EINVAL and "
                         "ENOMEM, which clash with <errno.h>'s EINVAL / ENOMEM; use e.g. ts_")
    if not _PREFIX_RE.fullmatch(prefix):
        raise ValueError(f"invalid PREFIX {prefix!r}: it must be a C identifier prefix "
                         f"(a letter or '_', then letters, digits or '_'), e.g. ts_")
    if _RESERVED_PREFIX_RE.match(prefix.lower()):
        raise ValueError(f"invalid PREFIX {prefix!r}: its symbols or its header's upper-case "
                         f"macros ({prefix.upper()}OK, {prefix.upper()}EINVAL) fall in names the C "
                         f"standard reserves (C11 7.1.3 / 7.31: a leading '_', E + letter or "
                         f"digit, is/to/str/mem/wcs + letter, LC_, SIG); e.g. ts_")
    return prefix


def cpu_suffix(cpu: str) -> str:
    """'' for the generic schedule, else '_' + the CPU name without dashes ('_cortexa510')."""
    return "" if cpu == GENERIC else "_" + cpu.replace("-", "")


def kernel_symbol(prefix: str, inst: MacInstruction, ep: int, hp: int, lp: int, cpu: str,
                  epilogue_suffix: str = "") -> str:
    return (f"{prefix}gemm_{signature(inst)}_{inst.mnemonic}_{ep}x{hp}x{lp}"
            f"{epilogue_suffix}{cpu_suffix(cpu)}")


def macro_name(symbol: str, what: str) -> str:
    """C macro for a property of a kernel: macro_name('ts_gemm_f32_fmla_8x12x1', 'EP')
    -> 'TS_GEMM_F32_FMLA_8X12X1_EP'."""
    return f"{symbol.upper()}_{what}"
