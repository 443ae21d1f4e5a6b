"""Command line: python -m encoder {encode,inst,verify} ... (see --help).

Exit status: 0 success; 1 `verify` found words that disagree with objdump (the mismatch code,
used for nothing else); 2 any usage error — bad arguments, an unreadable file, an instruction
that cannot be encoded, an unknown feature, input that cannot be assembled."""
from __future__ import annotations

import argparse
import sys
import warnings

from .encoding import encode
from .errors import EncodeError
from .rewrite import DEFAULT_FEATURES, rewrite_text
from .verify import verify_files

EXIT_OK, EXIT_MISMATCH, EXIT_USAGE = 0, 1, 2


def _cmd_encode(args) -> int:
    print(f"0x{encode(args.instruction):08x}")
    return EXIT_OK


def _cmd_inst(args) -> int:
    with open(args.input, encoding="utf-8", newline="") as handle:
        try:
            text = handle.read()
        except UnicodeDecodeError as error:
            raise EncodeError(f"{args.input}: not UTF-8 text (byte 0x{error.object[error.start]:02x} "
                              f"at offset {error.start})") from None
    rewritten = rewrite_text(text, args.features, filename=args.input)
    if args.output:
        with open(args.output, "w", encoding="utf-8", newline="") as handle:
            handle.write(rewritten)
    else:
        sys.stdout.write(rewritten)
    return EXIT_OK


def _cmd_verify(args) -> int:
    verified, mismatches = verify_files(args.files)
    for mismatch in mismatches:
        print(mismatch)
    if mismatches:
        sys.stdout.flush()
        print(f"{len(mismatches)} mismatch(es), {verified} .inst words verified", file=sys.stderr)
        return EXIT_MISMATCH
    print(f"{verified} .inst words verified")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m encoder",
                                     description="AArch64 SIMD instruction encoder for `.inst` lines",
                                     epilog="exit status: 0 ok, 1 verify found mismatches, "
                                            "2 usage error (bad arguments or input)")
    commands = parser.add_subparsers(dest="command", required=True)
    encode_cmd = commands.add_parser("encode", help="print the 32-bit word of one instruction")
    encode_cmd.add_argument("instruction")
    encode_cmd.set_defaults(run=_cmd_encode)
    inst_cmd = commands.add_parser("inst", help="rewrite instructions needing FEATURES as .inst")
    inst_cmd.add_argument("input")
    inst_cmd.add_argument("-o", "--output")
    inst_cmd.add_argument("--features", default=",".join(DEFAULT_FEATURES),
                          help="comma-separated feature names, or 'all' (default: %(default)s)")
    inst_cmd.set_defaults(run=_cmd_inst)
    verify_cmd = commands.add_parser(
        "verify", help="check .inst words against GNU objdump",
        description="Assemble (.S through cpp) with every feature and -g, disassemble with "
                    "objdump -d -l, and check each word of a '.inst 0x.. // insn' line disassembles "
                    "to insn.  For a .o: .inst lines reachable through its line info are checked the "
                    "same way, and every other instruction the encoder knows is re-encoded and must "
                    "equal the object's word.")
    verify_cmd.add_argument("files", nargs="+", metavar="FILE.S|FILE.o")
    verify_cmd.set_defaults(run=_cmd_verify)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    warnings.formatwarning = lambda message, *rest: f"warning: {message}\n"
    try:
        return args.run(args)
    except EncodeError as error:         # bad input, not a mismatch
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
