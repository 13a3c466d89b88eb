#!/usr/bin/env bash
# Packs @robota/native with `npm pack`, installs the tarball into a fresh project and runs the
# JavaScript quickstart there (ESM) plus a CommonJS require — what a user gets from the registry.
# Expects a built package (npm run build). Debug builds are stripped of debug info first so the
# tarball stays small.
set -euo pipefail
package_dir="$(cd "$(dirname "$0")/.." && pwd)"
repo_dir="$(cd "$package_dir/.." && pwd)"
cd "$package_dir"

if command -v strip >/dev/null 2>&1; then
  for addon in robota.*.node; do
    strip --strip-debug "$addon"
  done
fi
tarball="$package_dir/$(npm pack --silent | tail -n 1)"
project="$(mktemp -d)"
trap 'rm -rf "$project" "$tarball"' EXIT

cd "$project"
npm init -y >/dev/null
npm install --no-audit --no-fund "$tarball" >/dev/null
cp "$repo_dir/examples/node/quickstart.mjs" .
node quickstart.mjs
node -e '
  const { InteractiveSession, ScriptedProvider, RobotaError } = require("@robota/native");
  const s = new InteractiveSession({ cwd: process.cwd(), provider: new ScriptedProvider([{ text: "cjs ok" }]) });
  s.submit("hi").then((r) => { console.log("require():", r.outcome.response); return s.shutdown(); });
  if (typeof RobotaError !== "function") throw new Error("RobotaError missing");
'
echo "pack smoke: installed $(basename "$tarball") into a fresh project and ran it"
