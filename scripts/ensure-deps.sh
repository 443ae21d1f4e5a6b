#!/bin/sh
# Install what tilesmith needs and the machine lacks, quietly; a quick no-op when all is there.
#   scripts/ensure-deps.sh gen      what `make gen` needs: Python 3 + Jinja2
#   scripts/ensure-deps.sh bench    what `make bench` needs: + the aarch64 cross toolchain and C
#                                   library, qemu-user, llvm-19 (llvm-mca), host gcc (QEMU
#                                   plugin), matplotlib (charts)
#   scripts/ensure-deps.sh all      everything (`make test`): the above + clang-19, pytest
#   scripts/ensure-deps.sh --check GROUP   probe only (no stamp, no install): prints the missing
#                                   packages, exit 1 when some are missing
# TILESMITH_DEPS_DRY_RUN=1: instead of installing, say what would be installed and exit 1.
# TILESMITH_DEPS_STAMP_DIR: where the stamps go (default build/).
# What is checked are capabilities, not command names (deps/registry.py, deps/probe.py): the
# cross compiler builds and links a static program including <stdio.h>, <stdint.h>,
# <arm_neon.h>, <sys/auxv.h>…, qemu-aarch64 runs it, clang-19 builds it for aarch64,
# llvm-mca-19 runs, the Python modules import. The packages of a failed probe are installed
# (apt-get, without Recommends, so every package the project needs is named), then everything
# is probed again. A passing probe leaves build/deps-GROUP.stamp: while the stamp's key (these
# scripts, PATH) and the stat line of every file the probes relied on (commands, headers,
# modules, dpkg's status file) are unchanged, the script exits at once.
# Debian/Ubuntu only (apt-get); runs apt-get as root or through sudo.
set -eu
PY=/usr/bin/python3
ROOT=$(cd "$(dirname "$0")/.." && pwd)

check_only=0
if [ "${1:-}" = --check ]; then check_only=1; shift; fi
group="${1:-all}"
case "$group" in gen|bench|all) ;; *) echo "ensure-deps: unknown group '$group' (gen, bench or all)" >&2; exit 2 ;; esac
STAMP="${TILESMITH_DEPS_STAMP_DIR:-$ROOT/build}/deps-$group.stamp"
KEY="tilesmith-deps 1 $group $(cat "$ROOT/scripts/ensure-deps.sh" "$ROOT"/deps/*.py | cksum) PATH=$PATH HIDE=${TILESMITH_DEPS_HIDE:-}"

stamp_fresh() {
    [ -f "$STAMP" ] || return 1
    [ "$(head -n 1 "$STAMP")" = "$KEY" ] || return 1
    recorded=$(tail -n +2 "$STAMP")
    [ -n "$recorded" ] || return 1
    now=$(printf '%s\n' "$recorded" | cut -d ' ' -f 3- | xargs -d '\n' stat -c '%.9Y %s %n' -- 2>/dev/null) || return 1
    [ "$now" = "$recorded" ]
}

probe() {  # prints the missing packages, if any; fails when the probe itself breaks
    if [ ! -x "$PY" ]; then echo "python3"; return 0; fi
    if [ "$check_only" = 1 ]; then set -- "$group"; else set -- "$group" --stamp "$STAMP" --key "$KEY"; fi
    status=0
    out=$(cd "$ROOT" && "$PY" -m deps.probe "$@") || status=$?
    case "$status" in
        0) ;;
        3) printf '%s\n' "$out" | sed -n 's/^missing: //p' ;;   # deps.probe EXIT_MISSING
        *) echo "ensure-deps: the probe itself failed (python3 -m deps.probe, exit $status)" >&2; return 1 ;;
    esac
}

install() {
    if [ -n "${TILESMITH_DEPS_DRY_RUN:-}" ]; then echo "ensure-deps: would install $1" >&2; exit 1; fi
    if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
        echo "ensure-deps: missing packages: $1 (not root and no sudo: install them yourself)" >&2; exit 1
    fi
    echo "ensure-deps: installing $1" >&2
    log=$(mktemp)
    # shellcheck disable=SC2086  # $1 is a list of package names
    if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
            --no-install-recommends $1; } >"$log" 2>&1; then
        cat "$log" >&2; rm -f "$log"; echo "ensure-deps: apt-get failed" >&2; exit 1
    fi
    rm -f "$log"
}

if [ "$check_only" = 0 ] && stamp_fresh; then exit 0; fi
rm -f "$STAMP"
need=$(probe) || exit 1
if [ "$check_only" = 1 ]; then
    [ -z "$need" ] && exit 0
    echo "missing: $need"; exit 1
fi
[ -z "$need" ] && exit 0
install "$need"
need=$(probe) || exit 1        # python3 may just have arrived: probe everything it can
[ -z "$need" ] || install "$need"
need=$(probe) || exit 1
if [ -n "$need" ]; then
    echo "ensure-deps: still missing after installing: $need (see the probe messages above)" >&2
    exit 1
fi
