"""The JSON Schema of the typed reports (report.py), made from their dataclasses' type hints.

docs/report.schema.json is this module's output, written by ``python scripts/report_schema.py`` and checked
in; tests/session/test_report_schema.py fails when the two differ, and validates real reports against it.

Example:
    >>> schema = report_schema()
    >>> schema["$defs"]["ConversionReport"]["required"][:2]
    ['source', 'target']
"""
from __future__ import annotations

import dataclasses
import types
import typing

from .report import SCHEMA_VERSION, ConversionReport, VerifyReport

__all__ = ["report_schema"]

_PLAIN = {str: {"type": "string"}, bool: {"type": "boolean"}, int: {"type": "integer"}, float: {"type": "number"},
          dict: {"type": "object"}, list: {"type": "array"}}


def _of(hint, defs) -> dict:
    """The schema of one type hint; dataclasses go to ``defs`` and are referenced."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_of(a, defs) for a in args]}
    if hint is type(None):
        return {"type": "null"}
    if origin is list:
        return {"type": "array", "items": _of(args[0], defs)} if args else {"type": "array"}
    if origin is dict:
        return {"type": "object", "additionalProperties": _of(args[1], defs)}
    if dataclasses.is_dataclass(hint):
        _define(hint, defs)
        return {"$ref": f"#/$defs/{hint.__name__}"}
    if hint is float:
        return {"type": "number"}
    return dict(_PLAIN[hint])


def _define(cls, defs):
    if cls.__name__ in defs:
        return
    defs[cls.__name__] = {}  # reserved first: a dataclass that refers to itself
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    required = [f.name for f in fields if f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING]
    properties = {f.name: _of(hints[f.name], defs) for f in fields}
    if "schema_version" in properties:
        properties["schema_version"] = {"const": SCHEMA_VERSION}
    required += ["schema_version"] if "schema_version" in properties else []
    defs[cls.__name__] = {"type": "object", "description": (cls.__doc__ or "").split("\n")[0],
                          "properties": properties, "required": required, "additionalProperties": False}


def report_schema() -> dict:
    """The schema: a report is a ConversionReport (report.json) or a VerifyReport (``portx verify --json``).
    Example: ``json.dumps(report_schema(), indent=2)``."""
    defs = {}
    for cls in (ConversionReport, VerifyReport):
        _define(cls, defs)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "portx report", "description": f"report.json (schema_version {SCHEMA_VERSION}) of portx convert, "
                                                    "and the report of portx verify --json",
            "anyOf": [{"$ref": "#/$defs/ConversionReport"}, {"$ref": "#/$defs/VerifyReport"}], "$defs": defs}
