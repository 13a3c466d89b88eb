#!/usr/bin/env python3
"""The layering rule of DESIGN.md §2: inside `core`, a layer imports only from layers below it.

Reads every `.rs` file of the checked layers and finds each reference to another top-level module
of the crate: `use crate::x…` lines (multi-line `use crate::{…}` groups included) and
fully-qualified `crate::x::…` paths in code and doc links. A reference from a layer to one above
it is an error; the script lists them all and exits with 1.
"""

import pathlib
import re
import sys

# DESIGN.md §2, from the top (`mcp`, the MCP client, sits under the session that owns its
# connections and above the tools it provides). A layer may use the layers after it in this list. `hooks` sits above
# `provider` because prompt and agent hooks ask the model; `sandbox`, `process` and `files` are
# shared utilities at the bottom, usable from every layer.
LAYERS = [
    "api",
    "framework",
    "session",
    "mcp",
    "engine",
    "tools",
    "hooks",
    "provider",
    "permissions",
    "message",
]
# The layers whose imports are checked (the framework and api may use everything below them).
CHECKED = ["session", "mcp", "engine", "tools", "provider", "permissions", "hooks", "message"]

CORE_SRC = pathlib.Path(__file__).resolve().parent.parent / "core" / "src"

# `crate::name` anywhere (a `use` line, a path in code, a doc link).
CRATE_PATH = re.compile(r"\bcrate\s*::\s*([A-Za-z_][A-Za-z0-9_]*)")
# `use crate::{a, b::c, …}`: a group, possibly over several lines.
CRATE_GROUP = re.compile(r"\bcrate\s*::\s*\{", re.S)


def group_members(text, start):
    """The top-level names of the `{…}` group opening at `start` (the `{`)."""
    depth = 0
    names = []
    token = ""
    for position in range(start, len(text)):
        c = text[position]
        if c == "{":
            depth += 1
            if depth == 1:
                token = ""
                continue
        elif c == "}":
            depth -= 1
            if depth == 0:
                names.append(token)
                break
        if depth == 1:
            if c == ",":
                names.append(token)
                token = ""
            else:
                token += c
    members = []
    for name in names:
        head = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)", name)
        if head:
            members.append(head.group(1))
    return members


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def violations():
    found = []
    for layer in CHECKED:
        rank = LAYERS.index(layer)
        above = set(LAYERS[:rank])
        for path in sorted((CORE_SRC / layer).rglob("*.rs")):
            text = path.read_text(encoding="utf-8")
            references = []
            for match in CRATE_PATH.finditer(text):
                references.append((match.start(), match.group(1)))
            for match in CRATE_GROUP.finditer(text):
                brace = match.end() - 1
                for name in group_members(text, brace):
                    references.append((match.start(), name))
            for offset, name in references:
                if name in above:
                    found.append(
                        f"{path.relative_to(CORE_SRC.parent.parent)}:{line_of(text, offset)}: "
                        f"`{layer}` uses `crate::{name}`, a layer above it"
                    )
    return sorted(set(found))


def main():
    if not CORE_SRC.is_dir():
        print(f"no {CORE_SRC}", file=sys.stderr)
        return 2
    problems = violations()
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(
            f"{len(problems)} upward import(s): layers in core import only downward "
            f"({' > '.join(LAYERS)}; DESIGN.md §2)",
            file=sys.stderr,
        )
        return 1
    print(f"layering: {', '.join(CHECKED)} import only from the layers below them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
