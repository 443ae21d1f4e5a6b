"""`python3 -m gen SUBCOMMAND …` — tilesmith's generator CLI.

  tiles      the register-tiling solver's choice per instruction (gen/tiles_cli.py)
  generate   kernels, headers, drivers and manifest into an output folder (gen/generate_cli.py)
"""
import sys

SUBCOMMANDS = {
    "tiles": "gen.tiles_cli",
    "generate": "gen.generate_cli",
}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in SUBCOMMANDS:
        print(f"usage: python3 -m gen {{{','.join(SUBCOMMANDS)}}} [options]  (-h for help)",
              file=sys.stderr)
        return 2
    module = __import__(SUBCOMMANDS[argv[0]], fromlist=["main"])
    return module.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
