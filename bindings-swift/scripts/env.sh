# Sourced by the Swift scripts: `here` (bindings-swift), `repo`, and CARGO_TARGET_DIR exported
# (the caller's, or the workspace's target directory) so the chroot sees the built library.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repo="$(cd "$here/.." && pwd)"
if [ -z "${CARGO_TARGET_DIR:-}" ]; then
  CARGO_TARGET_DIR="$(cd "$repo" && cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
fi
export CARGO_TARGET_DIR
