#!/usr/bin/env bash
# Builds the API reference of the `Robota` module with DocC into `$CARGO_TARGET_DIR/docs/swift`
# (static HTML), inside the Debian trixie chroot (see swift-chroot.sh; trixie's `swiftlang`
# ships `docc`). Fails when DocC warns (an unresolved symbol link, a documented parameter that
# does not exist, …) and when a public declaration of `Sources/Robota` has no doc comment of its
# own: DocC itself does not warn about those.
#
# No swift-docc-plugin (`swift package generate-documentation` would fetch it from its git
# repository): SwiftPM's built-in `dump-symbol-graph` writes the module's symbol graph, and
# `docc convert` turns the graph and the catalog `Sources/Robota/Robota.docc` into the site.
#
#   docs.sh                       then serve $CARGO_TARGET_DIR/docs/swift over HTTP and open
#                                 /documentation/robota (DocC's pages do not load from file://)
# Environment:
#   DOCC_HOSTING_BASE_PATH        the path the site is served under (e.g. /swift), if not /
set -euo pipefail
# shellcheck source=env.sh
. "$(dirname "$0")/env.sh"

"$here/scripts/swift-chroot.sh" ensure

# The build directory and library directory of test.sh: after it, nothing is compiled again.
export ROBOTA_SWIFT_LIB_DIR="$CARGO_TARGET_DIR/debug"
scratch="$CARGO_TARGET_DIR/swift/robota"
module_graphs="$CARGO_TARGET_DIR/swift/docs/robota-symbol-graphs"
out="$CARGO_TARGET_DIR/docs/swift"
rm -rf "$module_graphs" "$out" "$scratch"/*/symbolgraph
mkdir -p "$module_graphs" "$(dirname "$out")"

# SwiftPM's own `dump-symbol-graph` (no plugin) builds the package's modules, compiling only (so
# the Rust library need not be built), and extracts every module's public symbols. Only
# `Robota`'s graphs are documented (the module's, and `Robota@<Other>` for its extensions of other
# modules' types): RobotaNative and robota_swiftFFI are internal plumbing.
cd "$here"
"$here/scripts/swift-chroot.sh" run swift package --scratch-path "$scratch" \
  dump-symbol-graph --minimum-access-level public
graphs="$(dirname "$(find "$scratch" -path '*/symbolgraph/Robota.symbols.json' -print -quit)")"
[ -f "$graphs/Robota.symbols.json" ] || { echo "no symbol graph of Robota in $scratch" >&2; exit 1; }
cp "$graphs"/Robota.symbols.json "$module_graphs"/
for extension in "$graphs"/Robota@*.symbols.json; do
  if [ -e "$extension" ]; then cp "$extension" "$module_graphs"/; fi
done

# Every public declaration written in Sources/Robota has a doc comment of its own. The graph
# gives an undocumented declaration that implements a protocol requirement the requirement's
# comment (marked with the other module's name): that does not count. Members the compiler
# synthesizes (Equatable, Codable, RawRepresentable, protocol extensions) have no location here.
python3 - "$here/Sources/Robota/" "$module_graphs" <<'EOF'
import json, pathlib, sys, urllib.parse, urllib.request

sources, graphs = sys.argv[1], pathlib.Path(sys.argv[2])
missing = []
for graph in sorted(graphs.glob("*.symbols.json")):
    for symbol in json.loads(graph.read_text())["symbols"]:
        location = symbol.get("location")
        if not location:
            continue
        path = urllib.request.url2pathname(urllib.parse.urlparse(location["uri"]).path)
        if not path.startswith(sources):
            continue
        comment = symbol.get("docComment") or {}
        own = comment.get("module") in (None, "Robota")
        text = "".join(line.get("text", "") for line in comment.get("lines", [])).strip()
        if not (own and text):
            line = location["position"]["line"] + 1
            name = ".".join(symbol["pathComponents"])
            missing.append(f"{path}:{line}: public `{name}` has no doc comment (add a /// comment)")
for entry in missing:
    print(entry, file=sys.stderr)
if missing:
    sys.exit(f"{len(missing)} public declaration(s) of the Robota module are undocumented")
EOF

hosting=()
if [ -n "${DOCC_HOSTING_BASE_PATH:-}" ]; then
  hosting=(--hosting-base-path "$DOCC_HOSTING_BASE_PATH")
fi
# `docc` is not on PATH in the chroot: it sits beside the toolchain's `swift` driver.
# shellcheck disable=SC2016 # expanded inside the chroot
"$here/scripts/swift-chroot.sh" run sh -c 'exec "$(dirname "$(readlink -f /usr/bin/swift)")/docc" "$@"' docc \
  convert "$here/Sources/Robota/Robota.docc" \
  --additional-symbol-graph-dir "$module_graphs" \
  --output-dir "$out" \
  --fallback-display-name Robota --fallback-bundle-identifier dev.robota.Robota \
  --transform-for-static-hosting "${hosting[@]}" \
  --warnings-as-errors
echo "Swift API reference: $out (serve it over HTTP and open /documentation/robota)"
