"""Builds the HTML API reference of the `robota` package with pdoc, and checks it.

Usage: ``python scripts/api_docs.py OUTPUT_DIR`` with the package installed in the running
interpreter (pdoc imports it, so the native module's docstrings are the ones the user sees).

Exits with 1, after listing every problem, when pdoc warns about anything (a module, an
annotation or a docstring it cannot process) or when a public item has no docstring: the
``robota`` module, every constant and type alias, class and function that ``robota.__all__``
exports, and their classes' methods, properties and attributes (dataclass fields included).
Public means what pdoc shows: a name without a leading underscore, or one listed in ``__all__``.
Constructors (``__init__``) are documented by their class's docstring.

The package documents many constants and fields with ``#:`` comments above the assignment
(Sphinx's convention), in a class body or above a ``self.name = …`` in its ``__init__``; pdoc
reads only a string after the assignment, so the comments are handed to it here. Names that
``robota/__init__.py`` re-exports get the documentation written where they are defined.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any, cast

import pdoc
import pdoc.doc
import pdoc.render

# What the check requires a docstring on (pdoc's `Doc.kind`): everything pdoc shows.
REQUIRED_KINDS = {"module", "class", "function", "variable"}


def comment_docs(obj: object) -> dict[str, str]:
    """The ``#:`` comments above the assignments directly in a module's or class's body, and
    above the ``self.name = …`` assignments of a class's ``__init__``."""
    try:
        source = textwrap.dedent(inspect.getsource(obj))  # type: ignore[arg-type]
    except (OSError, TypeError):
        return {}
    tree = ast.parse(source)
    body: list[ast.stmt] = tree.body
    if not inspect.ismodule(obj):
        if not body or not isinstance(body[0], ast.ClassDef):
            return {}
        body = list(body[0].body)
        for node in list(body):
            if isinstance(node, ast.FunctionDef) and node.name == "__init__":
                body.extend(node.body)
    source_lines = source.splitlines()
    docs: dict[str, str] = {}
    for node in body:
        target: ast.expr
        if isinstance(node, ast.AnnAssign):
            target = node.target
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        else:
            continue
        if isinstance(target, ast.Name):
            name = target.id
        elif _is_self_attribute(target):
            name = cast(ast.Attribute, target).attr
        else:
            continue
        comment: list[str] = []
        row = node.lineno - 2
        while row >= 0 and source_lines[row].strip().startswith("#:"):
            comment.insert(0, source_lines[row].strip()[2:].strip())
            row -= 1
        if comment:
            docs[name] = "\n".join(comment)
    return docs


def _is_self_attribute(target: ast.expr) -> bool:
    """Whether an assignment target is ``self.name``."""
    return (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
    )


def reexport_sources(package: pdoc.doc.Module) -> dict[str, str]:
    """Which module each name that the package's ``__init__`` imports comes from."""
    tree = ast.parse(inspect.getsource(package.obj))
    sources: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                sources[alias.asname or alias.name] = f"{package.fullname}.{node.module}"
    return sources


def fill_comment_docs(package: pdoc.doc.Module) -> None:
    """Gives pdoc's variables without a docstring the ``#:`` comment written for them."""
    sources = reexport_sources(package)
    for member in package.flattened_own_members:
        if isinstance(member, pdoc.doc.Variable) and not member.docstring:
            source = sources.get(member.name)
            if source:
                defining = pdoc.doc.Module.from_name(source)
                found = defining._var_docstrings.get(member.name) or comment_docs(
                    importlib.import_module(source)
                ).get(member.name)
                if found:
                    member.docstring = found
        if isinstance(member, pdoc.doc.Class):
            comments = comment_docs(member.obj)
            for attribute in member.own_members:
                if isinstance(attribute, pdoc.doc.Variable) and not attribute.docstring:
                    if attribute.name in comments:
                        attribute.docstring = comments[attribute.name]


def is_public(doc: pdoc.doc.Doc[Any], module: pdoc.doc.Module) -> bool:
    """pdoc's own `is_public` template rule, with undocumented members included."""
    docstring = doc.docstring
    if "@private" in docstring:
        return False
    if "@public" in docstring:
        return True
    if doc.name == "__init__":
        return False
    if doc.name == "__doc__":
        return False
    exported = getattr(module.obj, "__all__", None) or []
    if (doc.qualname or doc.name) in exported:
        return True
    return not doc.name.startswith("_")


def undocumented(module: pdoc.doc.Module) -> list[str]:
    """Public items of `module` (and of its classes) that pdoc would render without a docstring."""
    missing: list[str] = []
    if not module.docstring.strip():
        missing.append(f"module {module.fullname}")
    for member in module.own_members:
        if not is_public(member, module):
            continue
        if member.kind in REQUIRED_KINDS and not member.docstring.strip():
            missing.append(f"{member.kind} {member.fullname}")
        if isinstance(member, pdoc.doc.Class):
            missing.extend(undocumented_in_class(member, module))
    return missing


def undocumented_in_class(cls: pdoc.doc.Class, module: pdoc.doc.Module) -> list[str]:
    """Public classes, methods, properties and attributes of `cls` (nested classes included)
    without one."""
    missing: list[str] = []
    for attribute in cls.own_members:
        if not is_public(attribute, module):
            continue
        if attribute.kind in REQUIRED_KINDS and not attribute.docstring.strip():
            kind = "property" if _is_property(attribute) else attribute.kind
            missing.append(f"{kind} {attribute.fullname}")
        if isinstance(attribute, pdoc.doc.Class):
            missing.extend(undocumented_in_class(attribute, module))
    return missing


def _is_property(doc: pdoc.doc.Doc[Any]) -> bool:
    return isinstance(doc, pdoc.doc.Function) and any(
        d.lstrip("@").endswith("property") for d in doc.decorators
    )


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    output = Path(sys.argv[1])
    output.mkdir(parents=True, exist_ok=True)
    pdoc.render.configure(
        docformat="restructuredtext",
        footer_text="robota " + __import__("robota").__version__,
        search=True,
        show_source=False,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        package = pdoc.doc.Module.from_name("robota")
        fill_comment_docs(package)
        # pdoc.pdoc looks the module up by name again and gets the same (cached) object.
        pdoc.pdoc("robota", output_directory=output)
        missing = undocumented(package)

    for warning in caught:
        print(f"pdoc warning: {warning.message}", file=sys.stderr)
    for item in missing:
        print(f"no docstring: {item}", file=sys.stderr)
    if caught or missing:
        print(
            f"python API reference: {len(caught)} warning(s), {len(missing)} undocumented public "
            "item(s)",
            file=sys.stderr,
        )
        return 1
    print(f"python API reference: {output / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
