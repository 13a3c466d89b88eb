#!/usr/bin/env python3
"""Checks that every package of robota carries the one release version (docs/COMPATIBILITY.md).

The workspace version (Cargo.toml [workspace.package]) is the source; this fails, naming each file
that disagrees, when any of these differ from it:
  - a workspace crate that sets its own `version` instead of `version.workspace = true`;
  - the Python package (bindings-python/pyproject.toml: dynamic from Cargo, or equal);
  - the Node packages: bindings-node/package.json, bindings-node/npm/*/package.json, their
    optionalDependencies on each other, the top of bindings-node/package-lock.json and the
    version napi wrote into bindings-node/index.js;
  - the C header include/robota.h and its source ffi/src/lib.rs: ROBOTA_VERSION_MAJOR/_MINOR/
    _PATCH, ROBOTA_VERSION_STRING, and ROBOTA_ABI_VERSION_MAJOR/_MINOR (the ABI version is the
    package's major.minor);
  - robota_version() (returns the crate version; with --lib, the built library is asked too);
  - a version constant of the Swift package, if it has one;
and when CHANGELOG.md has no section for the version.

Usage: scripts/check-versions.py [--lib path/to/librobota.so]
Standard library only.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class Check:
    """Collects the disagreements, each naming its file."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def fail(self, path: Path | str, message: str) -> None:
        shown = path.relative_to(ROOT) if isinstance(path, Path) and path.is_absolute() else path
        self.problems.append(f"{shown}: {message}")

    def equal(self, path: Path, what: str, found: object, expected: object) -> None:
        if found != expected:
            self.fail(path, f"{what} is {found!r}, expected {expected!r} (the workspace version)")


def read_toml(check: Check, path: Path) -> dict | None:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        check.fail(path, f"cannot read it: {e}")
        return None


def read_json(check: Check, path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        check.fail(path, f"cannot read it: {e}")
        return None


def read_text(check: Check, path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        check.fail(path, f"cannot read it: {e}")
        return None


def check_crates(check: Check, workspace: dict, version: str) -> None:
    for member in workspace.get("workspace", {}).get("members", []):
        path = ROOT / member / "Cargo.toml"
        manifest = read_toml(check, path)
        if manifest is None:
            continue
        own = manifest.get("package", {}).get("version")
        if isinstance(own, str):
            check.equal(path, "[package] version", own, version)
        elif own != {"workspace": True}:
            check.fail(path, 'set `version.workspace = true` (or version = "%s")' % version)


def check_python(check: Check, version: str) -> None:
    path = ROOT / "bindings-python" / "pyproject.toml"
    pyproject = read_toml(check, path)
    if pyproject is None:
        return
    project = pyproject.get("project", {})
    if "version" in project:
        check.equal(path, "[project] version", project["version"], version)
    elif "version" not in project.get("dynamic", []):
        check.fail(path, "[project] has no version and does not list it as dynamic (from Cargo)")


def check_node(check: Check, version: str) -> None:
    node = ROOT / "bindings-node"
    manifests = [node / "package.json", *sorted((node / "npm").glob("*/package.json"))]
    names = set()
    for path in manifests:
        package = read_json(check, path)
        if package is None:
            continue
        names.add(package.get("name"))
        check.equal(path, '"version"', package.get("version"), version)
    for path in manifests:
        package = read_json(check, path) or {}
        for name, wanted in (package.get("optionalDependencies") or {}).items():
            if name in names:
                check.equal(path, f'optionalDependencies["{name}"]', wanted, version)
    lock_path = node / "package-lock.json"
    lock = read_json(check, lock_path)
    if lock is not None:
        check.equal(lock_path, '"version"', lock.get("version"), version)
        root_package = (lock.get("packages") or {}).get("", {})
        check.equal(lock_path, 'packages[""].version', root_package.get("version"), version)
    index_path = node / "index.js"
    index = read_text(check, index_path)
    if index is not None:
        for found in sorted(set(re.findall(r"bindingPackageVersion !== '([^']*)'", index))):
            check.equal(index_path, "the binding version napi wrote", found, version)


def c_defines(text: str) -> dict[str, str]:
    """`#define NAME value` lines of a header (value as written, continuation lines joined)."""
    text = text.replace("\\\n", " ")
    return {m[1]: m[2].strip() for m in re.finditer(r"^#define\s+(\w+)[ \t]+(.*)$", text, re.M)}


def rust_u32_consts(text: str) -> dict[str, str]:
    return {m[1]: m[2] for m in re.finditer(r"^pub const (\w+): u32 = (\d+);", text, re.M)}


def check_c(check: Check, version: str, lib: Path | None) -> None:
    major, minor, patch = (version.split("-")[0].split("+")[0].split(".") + ["", "", ""])[:3]
    expected = {
        "ROBOTA_VERSION_MAJOR": major,
        "ROBOTA_VERSION_MINOR": minor,
        "ROBOTA_VERSION_PATCH": patch,
        # The C ABI version is the package's major.minor.
        "ROBOTA_ABI_VERSION_MAJOR": major,
        "ROBOTA_ABI_VERSION_MINOR": minor,
    }
    source_path = ROOT / "ffi" / "src" / "lib.rs"
    source = read_text(check, source_path)
    header_path = ROOT / "include" / "robota.h"
    header = read_text(check, header_path)
    for path, found in ((source_path, source and rust_u32_consts(source)), (header_path, header and c_defines(header))):
        if not found:
            continue
        for name, value in expected.items():
            if name not in found:
                check.fail(path, f"{name} is missing")
            else:
                check.equal(path, name, found[name], value)
    if header is not None:
        string = c_defines(header).get("ROBOTA_VERSION_STRING")
        made_from_numbers = string is not None and all(
            n in string for n in ("ROBOTA_VERSION_MAJOR", "ROBOTA_VERSION_MINOR", "ROBOTA_VERSION_PATCH")
        )
        if string is None:
            check.fail(header_path, "ROBOTA_VERSION_STRING is missing (regenerate: ffi/generate-header.sh)")
        elif not made_from_numbers:
            check.equal(header_path, "ROBOTA_VERSION_STRING", string, f'"{version}"')
    if source is not None:
        body = re.search(r'extern "C" fn robota_version\(\)[^{]*\{(.*?)\n\}', source, re.S)
        if body is None:
            check.fail(source_path, "robota_version() is missing")
        elif 'env!("CARGO_PKG_VERSION")' not in body[1] and f'"{version}' not in body[1]:
            check.fail(source_path, "robota_version() returns neither the crate version nor " + version)
    if lib is not None:
        try:
            library = ctypes.CDLL(str(lib))
            library.robota_version.restype = ctypes.c_char_p
            loaded = library.robota_version().decode()
        except (OSError, AttributeError) as e:
            check.fail(lib, f"cannot call robota_version(): {e}")
        else:
            check.equal(lib, "robota_version()", loaded, version)


def check_swift(check: Check, version: str) -> None:
    for path in sorted((ROOT / "bindings-swift" / "Sources" / "Robota").glob("*.swift")):
        text = read_text(check, path) or ""
        for m in re.finditer(r'static let version(?:: String)? = "([^"]*)"', text):
            check.equal(path, "the Swift package's version", m[1], version)


def check_changelog(check: Check, version: str) -> None:
    path = ROOT / "CHANGELOG.md"
    text = read_text(check, path)
    if text is not None and not re.search(rf"^## \[{re.escape(version)}\]", text, re.M):
        check.fail(path, f"no section '## [{version}]' for the current version")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", type=Path, help="a built librobota to ask for robota_version()")
    args = parser.parse_args()
    check = Check()
    workspace_path = ROOT / "Cargo.toml"
    workspace = read_toml(check, workspace_path)
    version = (workspace or {}).get("workspace", {}).get("package", {}).get("version")
    if not isinstance(version, str) or not re.fullmatch(r"\d+\.\d+\.\d+([-+].*)?", version):
        check.fail(workspace_path, f"[workspace.package] version is {version!r}, not MAJOR.MINOR.PATCH")
    else:
        check_crates(check, workspace or {}, version)
        check_python(check, version)
        check_node(check, version)
        check_c(check, version, args.lib)
        check_swift(check, version)
        check_changelog(check, version)
    if check.problems:
        for problem in check.problems:
            print(f"check-versions: {problem}", file=sys.stderr)
        print(f"check-versions: {len(check.problems)} disagreement(s) with the workspace version", file=sys.stderr)
        return 1
    print(f"check-versions: every package is at {version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
