#!/bin/sh
# Install what tilesmith needs and the machine lacks, quietly; a quick no-op when all is there.
#   scripts/ensure-deps.sh gen    what `make gen` needs (Python + Jinja2)
#   scripts/ensure-deps.sh bench  what `make bench` needs: + cross toolchain, qemu-user, llvm-19,
#                                 host gcc (QEMU plugin), matplotlib (charts)
#   scripts/ensure-deps.sh all    everything: the above + clang-19, pytest
# Debian/Ubuntu only (apt-get); runs apt-get as root or through sudo.
set -eu
PY=/usr/bin/python3
need=""

want_cmd() {  # want_cmd COMMAND PACKAGE
    command -v "$1" >/dev/null 2>&1 || need="$need $2"
}
want_py() {   # want_py MODULE PACKAGE
    if [ ! -x "$PY" ] || ! "$PY" -c "import $1" >/dev/null 2>&1; then need="$need $2"; fi
}

[ -x "$PY" ] || need="$need python3"
want_py jinja2 python3-jinja2
group="${1:-all}"
if [ "$group" = all ]; then
    want_py pytest python3-pytest
    want_cmd clang-19 clang-19
fi
if [ "$group" = all ] || [ "$group" = bench ]; then
    want_cmd aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
    want_cmd aarch64-linux-gnu-objdump binutils-aarch64-linux-gnu
    want_cmd qemu-aarch64 qemu-user
    want_cmd llvm-mca-19 llvm-19
    want_cmd gcc gcc
    want_py matplotlib python3-matplotlib
fi
[ -z "$need" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "ensure-deps: missing packages:$need (not root and no sudo: install them yourself)" >&2; exit 1
fi
echo "ensure-deps: installing$need" >&2
log=$(mktemp)
if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
        --no-install-recommends $need; } >"$log" 2>&1; then
    cat "$log" >&2; rm -f "$log"; echo "ensure-deps: apt-get failed" >&2; exit 1
fi
rm -f "$log"
