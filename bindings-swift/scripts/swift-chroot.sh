#!/usr/bin/env bash
# The Swift toolchain for Linux CI and development: Debian trixie's `swiftlang` package in a
# debootstrap chroot, created on first use and cached for later runs on the same machine.
#
#   swift-chroot.sh ensure            create the chroot when it is missing (about a minute)
#   swift-chroot.sh run CMD [ARG...]  run CMD inside it, with the repository (and the cargo
#                                     target directory) visible at their usual absolute paths
#
# Why a chroot: Debian 12 has no Swift package, and trixie's Swift (6.0) needs trixie's newer
# glibc. The chroot shares the host's network namespace, so tests inside it reach a mock-llm
# server listening on the host's loopback. Mounts are made in a private mount namespace
# (`unshare -m`), so they vanish with the command even when it is killed.
#
# Needs root (debootstrap, chroot, mount). Environment:
#   ROBOTA_SWIFT_CHROOT  where the chroot lives (default /var/cache/robota/swift-trixie)
#   DEBIAN_MIRROR        the Debian mirror (default http://deb.debian.org/debian)
#   CARGO_TARGET_DIR     made visible inside too when it lies outside the repository
set -euo pipefail

ROOT="${ROBOTA_SWIFT_CHROOT:-/var/cache/robota/swift-trixie}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# What the chroot holds. Without libc6-dev, linking fails (no Scrt1.o); libstdc++-14-dev for the
# C++ interop headers swift-driver looks for.
PACKAGES="swiftlang libc6-dev libstdc++-14-dev"
MARKER="$ROOT/.robota-swift-chroot"
REPO="$(cd "$(dirname "$0")/../.." && pwd)"

die() { echo "swift-chroot: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot and bind mounts)"

chroot_ready() {
  # `usr/bin/swift` is an absolute symlink, only resolvable inside the chroot.
  [ -f "$MARKER" ] && [ "$(head -n1 "$MARKER")" = "$PACKAGES" ] && [ -L "$ROOT/usr/bin/swift" ]
}

ensure() {
  mkdir -p "$(dirname "$ROOT")"
  # One creator at a time (two CI runs or a developer and CI on one machine).
  exec 9>"$ROOT.lock"
  flock 9
  if chroot_ready; then
    return
  fi
  local started=$SECONDS
  echo "swift-chroot: creating the Debian trixie chroot with $PACKAGES in $ROOT"
  if ! command -v debootstrap >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null
  fi
  local fresh="$ROOT.new"
  rm -rf "$fresh"
  debootstrap --variant=minbase trixie "$fresh" "$MIRROR" >"$fresh.log" 2>&1 \
    || { tail -n 30 "$fresh.log" >&2; die "debootstrap failed (log: $fresh.log)"; }
  cp /etc/resolv.conf "$fresh/etc/resolv.conf"
  unshare -m --propagation private sh -ec '
    mount -t proc proc "$1/proc"
    chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    # shellcheck disable=SC2086 # the package list is split on purpose
    chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $2 >/dev/null
    chroot "$1" apt-get clean
  ' sh "$fresh" "$PACKAGES"
  {
    echo "$PACKAGES"
    chroot "$fresh" dpkg-query -W -f '${Package} ${Version}\n' swiftlang
  } >"$fresh/.robota-swift-chroot"
  rm -rf "$ROOT" "$fresh.log"
  mv "$fresh" "$ROOT"
  echo "swift-chroot: ready in $((SECONDS - started)) s ($(tail -n1 "$MARKER"))"
}

# Runs "$@" inside the chroot, as root, from the current directory's path.
run() {
  chroot_ready || die "no chroot at $ROOT; run '$0 ensure' first"
  local target="${CARGO_TARGET_DIR:-}"
  unshare -m --propagation private sh -ec '
    root=$1 repo=$2 target=$3 dir=$4
    shift 4
    mount -t proc proc "$root/proc"
    mkdir -p "$root/dev/shm" && mount -t tmpfs tmpfs "$root/dev/shm"
    # A fresh /tmp per command: what tests leave there must not pile up in the cached chroot.
    mount -t tmpfs tmpfs "$root/tmp"
    mkdir -p "$root$repo" && mount --bind "$repo" "$root$repo"
    case "$target" in
      ""|"$repo"/*) ;;
      *) mkdir -p "$target" "$root$target" && mount --bind "$target" "$root$target" ;;
    esac
    exec chroot "$root" /usr/bin/env -C "$dir" HOME=/root PATH=/usr/local/bin:/usr/bin:/bin \
      LANG=C.UTF-8 TERM=dumb "$@"
  ' sh "$ROOT" "$REPO" "$target" "$PWD" "$@"
}

case "${1:-}" in
  ensure) ensure ;;
  run) shift; [ $# -gt 0 ] || die "usage: $0 run CMD [ARG...]"; run "$@" ;;
  *) die "usage: $0 ensure | run CMD [ARG...]" ;;
esac
