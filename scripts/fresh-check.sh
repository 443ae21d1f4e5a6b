#!/bin/bash
# Prove the README's quick start on a brand-new Debian 12 machine (issue 9). Not part of
# `make test`: it takes minutes.
#
#   scripts/fresh-check.sh             build (or reuse) a minimal Debian 12 root, copy a clean
#                                      `git archive` of this checkout's HEAD into a fresh copy
#                                      of it and run `make gen ARCH=v86` and `make test` there
#                                      under chroot; exits with their status
#   scripts/fresh-check.sh --prepare   only build the cached base root
#
# The base root is `debootstrap --variant=minbase` of bookworm plus only gcc, make, python3 and
# ca-certificates, from the mirror this machine's apt sources name. It is cached outside the
# repository in $TILESMITH_FRESH_CACHE (default /var/cache/tilesmith-fresh) and never modified:
# every run works in a new copy of it, so the project's own install (scripts/ensure-deps.sh)
# always starts from the bare root. Downloaded .deb files are kept between runs (bind-mounted
# /var/cache/apt/archives) only to save bandwidth; apt still installs every package afresh.
# Needs root (debootstrap, chroot, mount). Uncommitted changes are not checked (HEAD only).
set -euo pipefail

REPO=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
CACHE=${TILESMITH_FRESH_CACHE:-/var/cache/tilesmith-fresh}
SUITE=bookworm            # Debian 12
INCLUDE=gcc,make,python3,ca-certificates
BASE="$CACHE/base-$SUITE"
RUN_ROOT=""
MOUNTS=()

die() { echo "fresh-check: $*" >&2; exit 1; }
say() { echo "fresh-check: $*" >&2; }

# The Debian mirror of this machine's apt sources (deb822 .sources or one-line .list files):
# the first URI serving $SUITE itself (not -security/-updates).
host_mirror() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -e "$f" ] || continue
        awk -v suite="$SUITE" '
            /^[[:space:]]*$/ { if (uri != "" && ok) { print uri; uri = ""; exit } uri = ""; ok = 0; next }
            /^URIs:/ { uri = $2 }
            /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) ok = 1 }
            END { if (uri != "" && ok) print uri }' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -e "$f" ] || continue
        sed -e 's/\[[^]]*\]//' "$f" | awk -v suite="$SUITE" '$1 == "deb" && $3 == suite { print $2 }'
    done
}

build_base() {
    [ -f "$BASE/.tilesmith-base-ok" ] && [ "$(cat "$BASE/.tilesmith-base-ok")" = "$INCLUDE" ] && return
    local mirror
    mirror=$(host_mirror | head -n 1)
    [ -n "$mirror" ] || die "no $SUITE mirror found in /etc/apt/sources.list*"
    command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
    say "building the base root $BASE from $mirror (once; minutes)"
    rm -rf "$BASE.tmp" "$BASE"
    debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$BASE.tmp" "$mirror" \
        >"$CACHE/debootstrap.log" 2>&1 || { tail -n 30 "$CACHE/debootstrap.log" >&2; die "debootstrap failed"; }
    echo "$INCLUDE" >"$BASE.tmp/.tilesmith-base-ok"
    mv "$BASE.tmp" "$BASE"
}

mount_into() {  # mount_into ARGS... TARGET: mount and remember TARGET for cleanup
    mount "$@"
    MOUNTS+=("${@: -1}")
}

mounts_below() {  # mount points at or below $1 (from the kernel's table, not our memory)
    awk -v root="$1" '$5 == root || index($5, root "/") == 1 { print $5 }' /proc/self/mountinfo
}

cleanup() {
    local status=$? i
    [ "$status" -eq 0 ] || say "FAILED (exit $status)"
    for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
        umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" || say "cannot unmount ${MOUNTS[i]}"
    done
    if [ -n "$RUN_ROOT" ] && [ -d "$RUN_ROOT" ]; then
        if [ -n "$(mounts_below "$RUN_ROOT")" ]; then
            say "still mounted below $RUN_ROOT (not removed):"; mounts_below "$RUN_ROOT" >&2
            status=1
        else
            rm -rf --one-file-system "$RUN_ROOT"
        fi
    fi
    exit "$status"
}

remove_stale_runs() {  # roots of runs that were killed (we hold the lock: none is running)
    local old
    for old in "$CACHE"/run.*; do
        [ -d "$old" ] || continue
        if [ -n "$(mounts_below "$old")" ]; then
            die "$old still has mounts from a killed run: unmount them (see /proc/self/mountinfo)"
        fi
        rm -rf --one-file-system "$old"
    done
}

run_root() {
    remove_stale_runs
    RUN_ROOT=$(mktemp -d "$CACHE/run.XXXXXX")
    trap cleanup EXIT
    trap 'exit 130' INT TERM
    say "copying the base root"
    cp -a "$BASE/." "$RUN_ROOT/"
    cp /etc/resolv.conf "$RUN_ROOT/etc/resolv.conf"
    mkdir -p "$CACHE/apt-archives/partial"
    mount_into -t proc proc "$RUN_ROOT/proc"
    mount_into --bind /dev "$RUN_ROOT/dev"
    mount_into --bind /dev/pts "$RUN_ROOT/dev/pts"
    mount_into --bind "$CACHE/apt-archives" "$RUN_ROOT/var/cache/apt/archives"
    mkdir -p "$RUN_ROOT/root/tilesmith"
    git -C "$REPO" archive --format=tar HEAD | tar -x -C "$RUN_ROOT/root/tilesmith"
    # CI clones the project with shared/ beside it (tests/test_encoder_seeds.py reads it).
    if [ -d "$REPO/../shared" ]; then
        cp -a "$REPO/../shared" "$RUN_ROOT/root/shared"
    else
        say "note: no shared/ beside $REPO: the tests that read it will fail"
    fi
    say "project: $(git -C "$REPO" log -1 --format='%h %s' HEAD | cut -c1-80)"
    [ -z "$(git -C "$REPO" status --porcelain)" ] || say "note: uncommitted changes are not part of the check"
    # A new user's shell: nothing from this machine's environment.
    chroot "$RUN_ROOT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        /bin/sh -c 'cd /root/tilesmith && make gen ARCH=v86 && make test'
}

main() {
    [ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, mount, chroot)"
    mkdir -p "$CACHE"
    exec 9>"$CACHE/lock"
    flock -n 9 || die "another fresh-check holds $CACHE/lock"
    build_base
    [ "${1:-}" = "--prepare" ] && { say "base root ready: $BASE"; return; }
    run_root
    say "PASSED: make gen ARCH=v86 and make test on a fresh Debian 12 root (${SECONDS} s)"
}

main "$@"; exit  # one line: bash has read it all before main runs, so editing this file
                 # during a run cannot change what the run executes next
