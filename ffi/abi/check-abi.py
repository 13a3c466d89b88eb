#!/usr/bin/env python3
"""Checks that include/robota.h and the built librobota.so keep the C ABI of their ABI major.

The ABI of a major version is recorded in ffi/abi/robota-abi-<major>.json (written by --update):
every function's return and parameter types, every object-like #define and enum value, every
struct's size, alignment and fields (name, type, offset), every typedef's type, and the symbols
the shared library exports. Against it, within the major:

  - a removed or renamed function, a changed return or parameter type,
  - a changed or removed #define constant or enum value,
  - a changed struct layout (size, alignment, field order, offsets, types) or typedef,
  - a baseline symbol the library no longer exports,
  - a function the header declares that the library does not export,
are breaks and fail the check. Additions are allowed only when ROBOTA_ABI_VERSION_MINOR is
above the baseline's; record them with --update in the same change. When ROBOTA_ABI_VERSION_MAJOR
goes above the newest baseline's, the check asks for the new major's baseline (--update writes
it). The version macros themselves (ROBOTA_VERSION_*, ROBOTA_ABI_VERSION_*) are not compared.

The header is parsed by libclang (the `libclang` package of ffi/abi/requirements.txt), which also
gives struct sizes and offsets; exports are read with `nm -D --defined-only`.

Usage: ffi/abi/check-abi.py [--header H] [--lib L] [--baseline-dir D] [--update]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from clang import cindex

ROOT = Path(__file__).resolve().parent.parent.parent
# Macros that change with every release or are the header's own machinery, not ABI.
IGNORED_MACRO = re.compile(r"^(ROBOTA_H|ROBOTA_VERSION_\w+|ROBOTA_ABI_VERSION_\w+|ROBOTA_STRINGIFY\w*)$")


class AbiError(Exception):
    """The inputs cannot be read (not an ABI break): a missing file, a header that does not parse."""


def compiler_include_dir() -> list[str]:
    """The C compiler's own include directory (stddef.h), which the libclang wheel lacks."""
    cc = os.environ.get("CC", "cc")
    try:
        out = subprocess.run([cc, "-print-file-name=include"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise AbiError(f"cannot ask {cc} for its include directory (stddef.h): {e}") from e
    path = out.stdout.strip()
    return ["-isystem", path] if path and Path(path).is_dir() else []


def type_info(t: cindex.Type) -> dict[str, str]:
    return {"type": t.spelling, "canonical": t.get_canonical().spelling}


def parse_header(header: Path) -> dict:
    """The ABI-relevant declarations of the header."""
    if not header.is_file():
        raise AbiError(f"{header} does not exist")
    index = cindex.Index.create()
    tu = index.parse(
        str(header),
        args=["-x", "c", "-std=c11", *compiler_include_dir()],
        options=cindex.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD | cindex.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES,
    )
    errors = [d for d in tu.diagnostics if d.severity >= cindex.Diagnostic.Error]
    if errors:
        shown = "; ".join(f"{d.location.line}:{d.location.column}: {d.spelling}" for d in errors[:5])
        raise AbiError(f"{header} does not parse as C11: {shown}")

    abi: dict = {"functions": {}, "constants": {}, "enums": {}, "structs": {}, "typedefs": {}}
    for cursor in tu.cursor.get_children():
        if cursor.location.file is None or Path(cursor.location.file.name).resolve() != header.resolve():
            continue
        kind = cursor.kind
        if kind == cindex.CursorKind.FUNCTION_DECL:
            abi["functions"][cursor.spelling] = {
                "returns": type_info(cursor.result_type),
                "params": [type_info(arg.type) for arg in cursor.get_arguments()],
                "variadic": cursor.type.is_function_variadic(),
            }
        elif kind == cindex.CursorKind.MACRO_DEFINITION:
            tokens = list(cursor.get_tokens())
            if IGNORED_MACRO.match(cursor.spelling) or len(tokens) < 2:
                continue
            # Function-like: `(` right after the name, with no space between.
            if tokens[1].spelling == "(" and tokens[1].extent.start.offset == tokens[0].extent.end.offset:
                continue
            abi["constants"][cursor.spelling] = " ".join(t.spelling for t in tokens[1:])
        elif kind == cindex.CursorKind.ENUM_DECL:
            for constant in cursor.get_children():
                if constant.kind == cindex.CursorKind.ENUM_CONSTANT_DECL:
                    abi["enums"][constant.spelling] = constant.enum_value
            if cursor.spelling:
                abi["typedefs"].setdefault(f"enum {cursor.spelling}", cursor.enum_type.get_canonical().spelling)
        elif kind in (cindex.CursorKind.STRUCT_DECL, cindex.CursorKind.UNION_DECL) and cursor.spelling:
            word = "struct" if kind == cindex.CursorKind.STRUCT_DECL else "union"
            name = f"{word} {cursor.spelling.removeprefix(word + ' ')}"
            size = cursor.type.get_size()
            if size < 0:  # incomplete: an opaque handle
                abi["structs"].setdefault(name, {"opaque": True})
                continue
            abi["structs"][name] = {
                "size": size,
                "align": cursor.type.get_align(),
                "fields": [
                    {"name": f.spelling, **type_info(f.type), "offset_bits": f.get_field_offsetof()}
                    for f in cursor.type.get_fields()
                ],
            }
        elif kind == cindex.CursorKind.TYPEDEF_DECL:
            abi["typedefs"][cursor.spelling] = cursor.underlying_typedef_type.get_canonical().spelling
    if not abi["functions"]:
        raise AbiError(f"{header} declares no functions")
    return abi


def read_macro(header: Path, name: str) -> int:
    match = re.search(rf"^#define {name} (\d+)\s*$", header.read_text(encoding="utf-8"), re.M)
    if match is None:
        raise AbiError(f"{header} has no '#define {name} <number>'")
    return int(match[1])


def exported_symbols(lib: Path) -> list[str]:
    if not lib.is_file():
        raise AbiError(f"{lib} does not exist: build it (cargo build -p robota-ffi) or pass --lib")
    nm = os.environ.get("NM", "nm")
    try:
        out = subprocess.run([nm, "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise AbiError(f"{nm} -D --defined-only {lib} failed: {e}") from e
    return sorted({line.split()[-1].split("@")[0] for line in out.stdout.splitlines() if len(line.split()) >= 3})


def describe_function(f: dict) -> str:
    params = ", ".join(p["type"] for p in f["params"]) or "void"
    return f"{f['returns']['type']} ({params}{', ...' if f.get('variadic') else ''})"


def compare(baseline: dict, current: dict, baseline_name: str) -> tuple[list[str], list[str]]:
    """(breaks, additions) of current against baseline."""
    breaks: list[str] = []
    additions: list[str] = []

    old_f, new_f = baseline["functions"], current["functions"]
    for name, old in old_f.items():
        if name not in new_f:
            breaks.append(f"function {name} was removed or renamed (it is in {baseline_name})")
        elif new_f[name] != old:
            breaks.append(
                f"function {name} changed signature: was {describe_function(old)}, now {describe_function(new_f[name])}"
            )
    additions += [f"function {name}" for name in new_f if name not in old_f]

    for section, what in (("constants", "constant"), ("enums", "enum value"), ("typedefs", "typedef")):
        old_c, new_c = baseline[section], current[section]
        for name, value in old_c.items():
            if name not in new_c:
                breaks.append(f"{what} {name} was removed (it was {value})")
            elif new_c[name] != value:
                breaks.append(f"{what} {name} changed: was {value}, now {new_c[name]}")
        additions += [f"{what} {name}" for name in new_c if name not in old_c]

    old_s, new_s = baseline["structs"], current["structs"]
    for name, old in old_s.items():
        new = new_s.get(name)
        if new is None:
            breaks.append(f"{name} was removed")
        elif old.get("opaque"):
            continue  # an opaque handle may stay opaque or be defined; its layout was never ABI
        elif new.get("opaque"):
            breaks.append(f"{name} lost its definition (was {old['size']} bytes)")
        elif new != old:
            breaks.append(f"{name} changed layout: {layout_diff(old, new)}")
    additions += [name for name in new_s if name not in old_s]

    exported = set(current["symbols"])
    for symbol in baseline["symbols"]:
        if symbol not in exported:
            breaks.append(f"symbol {symbol} is no longer exported by the library")
    for name in new_f:
        if name not in exported:
            breaks.append(f"function {name} is declared in the header but the library does not export it")
    additions += [f"symbol {s}" for s in current["symbols"] if s not in set(baseline["symbols"]) and s not in new_f]
    return breaks, additions


def layout_diff(old: dict, new: dict) -> str:
    parts = []
    for key in ("size", "align"):
        if old[key] != new[key]:
            parts.append(f"{key} {old[key]} -> {new[key]}")
    old_fields = [(f["name"], f["type"], f["offset_bits"] // 8) for f in old["fields"]]
    new_fields = [(f["name"], f["type"], f["offset_bits"] // 8) for f in new["fields"]]
    if old_fields != new_fields:
        show = lambda fields: ", ".join(f"{t} {n} @{o}" for n, t, o in fields)  # noqa: E731
        parts.append(f"fields were [{show(old_fields)}], now [{show(new_fields)}]")
    elif not parts:
        parts.append("field types changed underneath (typedefs)")
    return "; ".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    target_dir = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    parser.add_argument("--header", type=Path, default=ROOT / "include" / "robota.h")
    parser.add_argument("--lib", type=Path, default=target_dir / "debug" / "librobota.so")
    parser.add_argument("--baseline-dir", type=Path, default=ROOT / "ffi" / "abi")
    parser.add_argument("--update", action="store_true", help="write the baseline of the current ABI major")
    args = parser.parse_args()

    try:
        major = read_macro(args.header, "ROBOTA_ABI_VERSION_MAJOR")
        minor = read_macro(args.header, "ROBOTA_ABI_VERSION_MINOR")
        current = parse_header(args.header)
        current["symbols"] = exported_symbols(args.lib)
    except AbiError as e:
        print(f"check-abi: {e}", file=sys.stderr)
        return 2
    current = {"abi_major": major, "abi_minor": minor, **current}

    baseline_path = args.baseline_dir / f"robota-abi-{major}.json"
    shown_path = os.path.relpath(baseline_path, ROOT) if baseline_path.is_absolute() else str(baseline_path)
    baseline = None
    if baseline_path.is_file():
        try:
            baseline = json.loads(baseline_path.read_text(encoding="utf-8"))
        except ValueError as e:
            print(f"check-abi: {shown_path} is not valid JSON ({e}); rewrite it with --update", file=sys.stderr)
            return 2

    if baseline is not None:
        breaks, additions = compare(baseline, current, shown_path)
        if minor < baseline["abi_minor"]:
            breaks.append(f"ROBOTA_ABI_VERSION_MINOR went down: {minor} < {baseline['abi_minor']} in {shown_path}")
        if additions and minor <= baseline["abi_minor"]:
            breaks.append(
                f"additions to the ABI ({', '.join(additions)}) need ROBOTA_ABI_VERSION_MINOR raised above "
                f"{baseline['abi_minor']} (the baseline's); it is {minor}. Raise the package's minor version "
                "(the ABI minor equals it), then record them with ffi/abi/check-abi.py --update"
            )
        if breaks:
            print(f"check-abi: the C ABI {major}.{minor} breaks {shown_path} (ABI {major}.{baseline['abi_minor']}):", file=sys.stderr)
            for item in breaks:
                print(f"  - {item}", file=sys.stderr)
            print(
                "check-abi: within a major the C ABI may only grow (docs/COMPATIBILITY.md). Undo the change, "
                "or make it a new major: raise ROBOTA_ABI_VERSION_MAJOR (the package's major) and write its baseline with --update",
                file=sys.stderr,
            )
            return 1
        if not args.update:
            note = f"; {len(additions)} addition(s) not yet recorded (--update)" if additions else ""
            print(f"check-abi: ABI {major}.{minor} keeps {shown_path} (ABI {major}.{baseline['abi_minor']}){note}")
            return 0
    elif not args.update:
        older = sorted(
            (int(m[1]) for p in args.baseline_dir.glob("robota-abi-*.json") if (m := re.fullmatch(r"robota-abi-(\d+)\.json", p.name))),
        )
        if older and older[-1] < major:
            print(
                f"check-abi: ROBOTA_ABI_VERSION_MAJOR is {major}, above the newest baseline (robota-abi-{older[-1]}.json): "
                f"write the new major's baseline {shown_path} with ffi/abi/check-abi.py --update and commit it",
                file=sys.stderr,
            )
        else:
            print(f"check-abi: no baseline {shown_path}: write it with ffi/abi/check-abi.py --update", file=sys.stderr)
        return 1

    args.baseline_dir.mkdir(parents=True, exist_ok=True)
    baseline_path.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"check-abi: wrote {shown_path} (ABI {major}.{minor})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
