"""Structured output: answers shaped by a JSON Schema, and typed values back.

``output_format`` (on :func:`robota.create_query`, a query call or
:class:`robota.InteractiveSession`) takes any of:

- a pydantic model class (pydantic v2; optional, never a dependency of robota): its
  ``model_json_schema()`` is the schema and :meth:`model_validate` parses the answer;
- a dataclass: the schema is derived from its fields (see :func:`json_schema_of` for the types
  understood), and the answer is built back into the dataclass, nested ones included;
- a JSON Schema as a dict (``{"type": "object", ...}``) or a whole format
  (``{"type": "json_schema", "schema": {...}}``): the answer stays plain JSON.

The engine validates every answer against the schema with a real JSON Schema validator and asks
the model to fix an answer that does not match (up to ``max_structured_output_retries`` times);
an answer that never matches raises :class:`robota.StructuredOutputError`.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import types
import typing
from typing import Any, Dict, List, Mapping, Tuple, Type, TypeVar, Union, cast

__all__ = ["OutputType", "output_format", "json_schema_of", "parse_structured_output"]

T = TypeVar("T")

#: What ``output_format`` takes: a pydantic model class, a dataclass, or a JSON Schema dict.
OutputType = Union[Type[Any], Mapping[str, Any]]


def output_format(output: OutputType) -> Dict[str, Any]:
    """The engine's ``{"type": "json_schema", "schema": {...}, "name"?}`` for ``output``."""
    if isinstance(output, Mapping):
        if output.get("type") == "json_schema" and "schema" in output:
            return dict(output)
        return {"type": "json_schema", "schema": dict(output)}
    if isinstance(output, type):
        return {"type": "json_schema", "schema": json_schema_of(output), "name": _schema_name(output)}
    raise TypeError(
        "output_format must be a pydantic model class, a dataclass or a JSON Schema dict, "
        f"not {type(output).__name__}"
    )


def json_schema_of(output_type: Type[Any]) -> Dict[str, Any]:
    """The JSON Schema of a pydantic model class or a dataclass.

    Dataclass fields may be ``str``, ``int``, ``float``, ``bool``, ``None``, ``Optional[X]``,
    ``Union[...]``, ``Literal[...]``, an :class:`enum.Enum` of str/int values, ``list[X]`` /
    ``List[X]`` / ``Sequence[X]``, ``tuple[X, ...]``, ``dict[str, X]``, ``Any`` and nested
    dataclasses. A field with a default is optional; every other field is required; unknown
    keys are not allowed. Anything else (sets, bytes, datetimes, recursive dataclasses, …)
    raises :class:`TypeError` naming the field: use a pydantic model or a JSON Schema dict
    for those.
    """
    schema_of = getattr(output_type, "model_json_schema", None)
    if callable(schema_of):
        schema = schema_of()
        if not isinstance(schema, dict):
            raise TypeError(f"{output_type.__name__}.model_json_schema() did not return a dict")
        return cast(Dict[str, Any], schema)
    if dataclasses.is_dataclass(output_type):
        return _dataclass_schema(output_type, ())
    raise TypeError(
        f"{getattr(output_type, '__name__', output_type)!r} is neither a pydantic model class nor "
        "a dataclass; pass a JSON Schema dict instead"
    )


def parse_structured_output(value: Any, output_type: Type[T]) -> T:
    """``value`` (a result's ``structured_output``, already valid against the schema) as an
    ``output_type``: a pydantic model (``model_validate``) or a dataclass (built field by field,
    nested dataclasses, enums, lists and dicts included)."""
    validate = getattr(output_type, "model_validate", None)
    if callable(validate):
        return cast(T, validate(value))
    if dataclasses.is_dataclass(output_type):
        return cast(T, _build(value, output_type, output_type.__name__))
    raise TypeError(
        f"{getattr(output_type, '__name__', output_type)!r} is neither a pydantic model class nor "
        "a dataclass"
    )


def _schema_name(output_type: type) -> str:
    name = "".join(c if c.isalnum() or c in "_-" else "_" for c in output_type.__name__)
    return name[:64] or "structured_output"


def _dataclass_schema(cls: Any, seen: Tuple[Any, ...]) -> Dict[str, Any]:
    if cls in seen:
        raise TypeError(f"{cls.__name__} refers to itself; recursive dataclasses need a pydantic model")
    hints = typing.get_type_hints(cls)
    properties: Dict[str, Any] = {}
    required: List[str] = []
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        where = f"{cls.__name__}.{field.name}"
        properties[field.name] = _type_schema(hints.get(field.name, Any), where, seen + (cls,))
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            required.append(field.name)
    schema: Dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    doc = cls.__doc__
    if doc and not doc.startswith(f"{cls.__name__}("):
        schema["description"] = doc.strip()
    return schema


_SCALARS: Dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _type_schema(tp: Any, where: str, seen: Tuple[Any, ...]) -> Dict[str, Any]:
    if tp is Any:
        return {}
    if tp is None or tp is type(None):
        return {"type": "null"}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        values = [member.value for member in tp]
        if not all(isinstance(v, (str, int)) for v in values):
            raise TypeError(f"{where}: enum {tp.__name__} must have str or int values")
        return {"enum": values}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _dataclass_schema(tp, seen)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin is Union or origin is types.UnionType:
        return {"anyOf": [_type_schema(arg, where, seen) for arg in args]}
    if origin in (list, collections.abc.Sequence):
        return {"type": "array", "items": _type_schema(args[0] if args else Any, where, seen)}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _type_schema(args[0], where, seen)}
        return {
            "type": "array",
            "prefixItems": [_type_schema(arg, where, seen) for arg in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if origin in (dict, collections.abc.Mapping):
        if args and args[0] is not str:
            raise TypeError(f"{where}: JSON object keys are strings, not {args[0]!r}")
        return {"type": "object", "additionalProperties": _type_schema(args[1] if args else Any, where, seen)}
    raise TypeError(
        f"{where}: the type {tp!r} has no JSON Schema here; use a pydantic model or a JSON Schema dict"
    )


def _build(value: Any, tp: Any, where: str) -> Any:
    """``value`` (valid JSON for ``tp``'s schema) converted to ``tp``."""
    if tp is Any or value is None:
        return value
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp(value)
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if not isinstance(value, dict):
            raise TypeError(f"{where}: expected an object, got {type(value).__name__}")
        hints = typing.get_type_hints(tp)
        kwargs = {
            field.name: _build(value[field.name], hints.get(field.name, Any), f"{where}.{field.name}")
            for field in dataclasses.fields(tp)
            if field.init and field.name in value
        }
        return tp(**kwargs)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is Union or origin is types.UnionType:
        # The first member the value fits: dataclasses for objects, the rest as they are.
        for arg in args:
            if dataclasses.is_dataclass(arg) and isinstance(value, dict):
                return _build(value, arg, where)
        return value
    if origin in (list, collections.abc.Sequence) and isinstance(value, list):
        item = args[0] if args else Any
        return [_build(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is tuple and isinstance(value, list):
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_build(v, args[0], f"{where}[{i}]") for i, v in enumerate(value))
        return tuple(_build(v, a, f"{where}[{i}]") for i, (v, a) in enumerate(zip(value, args)))
    if origin in (dict, collections.abc.Mapping) and isinstance(value, dict):
        item = args[1] if len(args) > 1 else Any
        return {k: _build(v, item, f"{where}.{k}") for k, v in value.items()}
    return value
