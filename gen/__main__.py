"""`python3 -m gen SUBCOMMAND …` — tilesmith's generator CLI.

  tiles      the register-tiling solver's choice per instruction (gen/tiles_cli.py)
  generate   kernels, headers, drivers and manifest into an output folder (gen/generate_cli.py)
"""
import os
import sys

SUBCOMMANDS = {
    "tiles": "gen.tiles_cli",
    "generate": "gen.generate_cli",
}


USAGE = f"usage: python3 -m gen {{{','.join(SUBCOMMANDS)}}} [options]"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help"):
        print(f"{USAGE}\n\n{__doc__.strip()}\n\n"
              f"'python3 -m gen SUBCOMMAND -h' describes a subcommand's options.")
        return 0
    if not argv or argv[0] not in SUBCOMMANDS:
        problem = "no subcommand" if not argv else f"unknown subcommand {argv[0]!r}"
        print(f"{USAGE}  (-h for help)\npython3 -m gen: error: {problem}: choose "
              f"{' or '.join(SUBCOMMANDS)}", file=sys.stderr)
        return 2
    module = __import__(SUBCOMMANDS[argv[0]], fromlist=["main"])
    try:
        return module.main(argv[1:])
    except BrokenPipeError:
        # The reader went away (`python3 -m gen tiles | head`): stop quietly, like other
        # Unix tools. Point stdout at /dev/null so the interpreter's final flush cannot
        # raise again (https://docs.python.org/3/library/signal.html#note-on-sigpipe).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
