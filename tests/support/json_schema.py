"""A small JSON Schema checker for the keywords docs/report.schema.json uses ($ref into $defs, anyOf, type,
const, properties, required, additionalProperties, items), since jsonschema is not a test dependency.

Example:
    >>> problems(schema, json.loads(Path("out/report.json").read_text()))
    []
"""
from __future__ import annotations

__all__ = ["problems"]

_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _is(value, kind) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _TYPES[kind])


def problems(schema, value, root=None, where="$") -> list:
    """Every way ``value`` breaks ``schema``, as "path: what" lines ([] when it validates)."""
    root = root or schema
    if "$ref" in schema:
        name = schema["$ref"].rpartition("/")[2]
        return problems(root["$defs"][name], value, root, where)
    if "anyOf" in schema:
        found = [problems(option, value, root, where) for option in schema["anyOf"]]
        return [] if any(not f for f in found) else [f"{where}: matches no option ({min(found, key=len)[0]})"]
    if "const" in schema and value != schema["const"]:
        return [f"{where}: {value!r} is not {schema['const']!r}"]
    if "type" in schema and not _is(value, schema["type"]):
        return [f"{where}: {type(value).__name__} is not {schema['type']}"]
    found = []
    if isinstance(value, dict):
        found += [f"{where}: {key!r} missing" for key in schema.get("required", ()) if key not in value]
        properties, extra = schema.get("properties", {}), schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                found += problems(properties[key], item, root, f"{where}.{key}")
            elif extra is False:
                found.append(f"{where}: unexpected {key!r}")
            elif isinstance(extra, dict):
                found += problems(extra, item, root, f"{where}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            found += problems(schema["items"], item, root, f"{where}[{i}]")
    return found
