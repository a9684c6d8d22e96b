"""The tools' JSON Schemas, without the bytes that say nothing: pydantic's `title` on every
property (it repeats the name), `"default": null` (a field that may be left out says so by not
being required), and in output schemas every `default` (a result carries every value).

Argument schemas keep pydantic's `anyOf: [{type: X}, {type: null}]` for an optional argument:
some clients (Gemini's) refuse a type list such as `["string", "null"]` in an input schema. Output
schemas only feed the client's validator (Ajv, jsonschema), so there a type list is used.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import CoreSchema

__all__ = ["argument_schema", "output_schema"]


class _Schema(GenerateJsonSchema):
    """pydantic's schemas without property titles ("Created At" for created_at)."""

    def field_title_should_be_set(self, schema: CoreSchema) -> bool:
        return False


# keywords that constrain only values of one JSON type, so `anyOf: [{type: A, k...}, {type: B}]`
# says the same as `{type: [A, B], k...}`
_TYPED = {
    "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "items", "prefixItems", "minItems", "maxItems",
    "uniqueItems", "properties", "additionalProperties", "required", "minProperties",
    "maxProperties",
}  # fmt: skip


def _merged(options: list[Any]) -> dict[str, Any] | None:
    """One schema for `anyOf: options` when they differ only in type (see _TYPED), else None."""
    if not all(isinstance(o, dict) and isinstance(o.get("type"), str) for o in options):
        return None
    types = [o["type"] for o in options]
    extra = [key for o in options for key in o if key != "type"]
    if len(set(types)) < len(types) or len(set(extra)) < len(extra):
        return None
    if set(extra) <= _TYPED:
        return {"type": types, **{k: v for o in options for k, v in o.items() if k != "type"}}
    nulls = [o for o in options if o == {"type": "null"}]
    rest = [o for o in options if o not in nulls]
    if nulls and len(rest) == 1 and set(rest[0]) == {"type", "enum"}:  # an optional choice
        return {"type": [rest[0]["type"], "null"], "enum": [*rest[0]["enum"], None]}
    return None


def _lean(schema: Any, *, outputs: bool, names: bool = False) -> Any:
    """`schema` without null defaults (and, for outputs, without any default and with `anyOf`
    of plain types as one type list). `names`: `schema` maps property names to schemas, so a
    property called "default" is kept."""
    if isinstance(schema, list):
        return [_lean(item, outputs=outputs) for item in schema]
    if not isinstance(schema, dict):
        return schema
    lean = {
        key: _lean(value, outputs=outputs, names=key in ("properties", "$defs") and not names)
        for key, value in schema.items()
        if names or key != "default" or (value is not None and not outputs)
    }
    if names or not outputs:
        return lean
    if isinstance(lean.get("anyOf"), list) and (merged := _merged(lean["anyOf"])) is not None:
        del lean["anyOf"]
        lean = {**merged, **lean}
    return lean


def argument_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A tool's input schema: its argument model's, lean."""
    schema: dict[str, Any] = _lean(
        model.model_json_schema(by_alias=True, schema_generator=_Schema), outputs=False
    )
    return schema


def output_schema(model: Any) -> dict[str, Any]:
    """The output schema of `model` (a model or a union of models), lean, with an object root as
    MCP requires: a union is `{"type": "object", "anyOf": [...refs]}`."""
    generated = TypeAdapter(model).json_schema(schema_generator=_Schema)
    schema: dict[str, Any] = _lean(generated, outputs=True)
    if "anyOf" in schema:
        return {"type": "object", **schema}
    return schema
