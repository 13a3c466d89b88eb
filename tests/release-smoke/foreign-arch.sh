#!/usr/bin/env bash
# Runs the release smoke (run.sh) on another architecture's packages: inside a Debian root file
# system of that architecture, under qemu-user through binfmt_misc, so that the aarch64 wheel and
# Node addon are loaded and run by an aarch64 Python and Node (CI only checks their ELF headers and
# exported symbols).
#
# Usage: tests/release-smoke/foreign-arch.sh ARTIFACTS_DIR MOCK_LLM [DEBIAN_ARCH]
#   ARTIFACTS_DIR  written by `scripts/release.sh --only node,python --targets aarch64-unknown-linux-gnu`
#   MOCK_LLM       mock-llm built for the same architecture, e.g. (with release.sh's tools venv
#                  on PATH) `cargo zigbuild -p mock-llm --target aarch64-unknown-linux-gnu.2.17`
#   DEBIAN_ARCH    arm64 (the default)
# Needs root and `apt-get install debootstrap qemu-user-static binfmt-support`. The root file
# system (Debian trixie with nodejs, npm, python3-venv) is kept in $ROBOTA_FOREIGN_ROOT (default
# $CARGO_TARGET_DIR/foreign-root-ARCH) and reused; making it takes about ten minutes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
artifacts="$(cd "${1:?usage: foreign-arch.sh ARTIFACTS_DIR MOCK_LLM [DEBIAN_ARCH]}" && pwd)"
mock_llm="$(realpath "${2:?usage: foreign-arch.sh ARTIFACTS_DIR MOCK_LLM [DEBIAN_ARCH]}")"
arch="${3:-arm64}"
case "$arch" in
  arm64) qemu_arch=aarch64 ;;
  *) echo "foreign-arch.sh: unsupported architecture '$arch' (arm64)" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { echo "foreign-arch.sh: needs root (debootstrap, chroot, mount)" >&2; exit 1; }
for tool in debootstrap update-binfmts chroot; do
  command -v "$tool" >/dev/null || { echo "foreign-arch.sh: no $tool (apt-get install debootstrap qemu-user-static binfmt-support)" >&2; exit 1; }
done
root="${ROBOTA_FOREIGN_ROOT:-${CARGO_TARGET_DIR:-$repo/target}/foreign-root-$arch}"

# Foreign binaries run through qemu-user, registered with the kernel's binfmt_misc.
[ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
update-binfmts --enable "qemu-$qemu_arch"

if [ ! -x "$root/usr/bin/npm" ]; then
  echo "making a Debian trixie $arch root file system in $root"
  debootstrap --arch="$arch" --variant=minbase --include=nodejs,python3,python3-venv,ca-certificates \
    trixie "$root" http://deb.debian.org/debian
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  chroot "$root" /bin/sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends npm'
fi
# The host's name servers and CA bundle: the root file system reaches PyPI and the npm registry
# (run.sh installs maturin, npm looks up the other platforms' packages) the way the host does.
cp /etc/resolv.conf "$root/etc/resolv.conf"
[ ! -f /etc/ssl/certs/ca-certificates.crt ] || cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
passed_env=()
for name in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY PIP_INDEX_URL PIP_EXTRA_INDEX_URL npm_config_registry; do
  [ -z "${!name:-}" ] || passed_env+=("$name=${!name}")
done

# The sources (read-only), the artifacts and mock-llm, mounted where run.sh finds them.
mounts=()
cleanup() {
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount "${mounts[$i]}" || true; done
}
trap cleanup EXIT
bind() {
  mkdir -p "$2"
  mount --bind "$1" "$2"
  mounts+=("$2")
  [ "${3:-}" != ro ] || mount -o remount,bind,ro "$2"
}
mount -t proc proc "$root/proc"; mounts+=("$root/proc")
bind /dev "$root/dev"
bind "$repo" "$root/robota-src" ro
bind "$artifacts" "$root/robota-artifacts" ro
install -m 755 "$mock_llm" "$root/usr/local/bin/mock-llm"

echo "running the release smoke in the $arch root file system ($(chroot "$root" uname -m))"
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 "${passed_env[@]}" \
  ROBOTA_MOCK_LLM=/usr/local/bin/mock-llm /robota-src/tests/release-smoke/run.sh /robota-artifacts
