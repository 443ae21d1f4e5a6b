"""The GNU toolchain the encoder is checked against (names overridable through the environment)."""
from __future__ import annotations

import array
import os
import subprocess
import sys
import tempfile

CC = os.environ.get("TILESMITH_CC", "aarch64-linux-gnu-gcc")
AS = os.environ.get("TILESMITH_AS", "aarch64-linux-gnu-as")
OBJCOPY = os.environ.get("TILESMITH_OBJCOPY", "aarch64-linux-gnu-objcopy")
OBJDUMP = os.environ.get("TILESMITH_OBJDUMP", "aarch64-linux-gnu-objdump")
# Every feature an encoder form may need, for assembling reference code.  GNU as 2.40's +sme
# implies +sve2 (so +sve) and +bf16; GCC 12 does not know +sme, so compiler drivers get
# MARCH_CC and pass MARCH_ALL on to the assembler (cc_march_args: as takes the last -march).
MARCH_CC = "armv8.6-a+i8mm+bf16+dotprod+fp16+fp16fml"
MARCH_ALL = MARCH_CC + "+sme"


def cc_march_args(march: str = MARCH_ALL) -> list[str]:
    """gcc options that preprocess for MARCH_CC and assemble for march."""
    return [f"-march={MARCH_CC}", f"-Wa,-march={march}"]


def run_assembler(source_path: str, object_path: str, march: str = MARCH_ALL):
    """Run GNU as; returns the CompletedProcess (text), the caller decides about failure."""
    command = [AS, f"-march={march}", source_path, "-o", object_path]
    return subprocess.run(command, capture_output=True, text=True)


def assemble_words(lines, march: str = MARCH_ALL) -> list[int]:
    """GNU as's 32-bit words for instruction lines (one word each), read back from .text."""
    with tempfile.TemporaryDirectory(prefix="tilesmith-as-") as tmp:
        source, obj, binary = (os.path.join(tmp, name) for name in ("in.s", "in.o", "text.bin"))
        with open(source, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
        result = run_assembler(source, obj, march)
        if result.returncode != 0:
            raise RuntimeError(f"{AS} failed:\n{result.stderr[:4000]}")
        subprocess.run([OBJCOPY, "-O", "binary", "-j", ".text", obj, binary], check=True)
        words = array.array("I")
        with open(binary, "rb") as handle:
            words.frombytes(handle.read())
    if sys.byteorder != "little":
        words.byteswap()
    return words.tolist()


def rejected_lines(lines, march: str = MARCH_ALL) -> set[int]:
    """1-based numbers of the lines GNU as reports an error for."""
    with tempfile.TemporaryDirectory(prefix="tilesmith-as-") as tmp:
        source, obj = os.path.join(tmp, "in.s"), os.path.join(tmp, "in.o")
        with open(source, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
        stderr = run_assembler(source, obj, march).stderr
    prefix = f"{source}:"
    return {int(row[len(prefix):].split(":", 1)[0]) for row in stderr.splitlines()
            if row.startswith(prefix) and ": Error:" in row}
