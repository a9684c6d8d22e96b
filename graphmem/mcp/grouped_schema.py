"""The input schema of a grouped tool: one object that holds each action to exactly its full tool's
arguments, in about the bytes those arguments take once.

    {"type": "object",
     "properties": {"action": {"enum": [...]}, <every argument once>},
     "required": ["action"],
     "if": {"properties": {"action": {"const": "store"}, "content": {}, "tags": {}, ...},
            "additionalProperties": false, "required": ["content"]},
     "else": {"if": <the next action's shape>, "else": ... "else": false}}

Each `if` is one action's whole shape: its name, the arguments it takes (no others:
`additionalProperties: false`) and the ones it requires. A call that matches an action's shape
is valid; one that matches none reaches `else: false` and is refused. Actions that take the same
arguments share one `if` (`"action": {"enum": [...]}`). No `oneOf`/`anyOf`/`allOf` at the root:
the Anthropic API refuses a tool whose input schema has one there, and Claude clients pass MCP
schemas through.

Each argument is written once, at the root. One that every action taking it checks the same way
(`context`, `tags`, `limit`...) has its whole schema there and `{}` in the shapes, or just the
default it has in one action; one that actions check differently (`status`: a decision's, a
verification's) has its JSON types at the root and its exact schema in each shape.

What the model reads is kept short: no titles, no argument descriptions but the grouped tool's
hints (an argument whose name says what to give has none), no `additionalProperties: true`; an
optional argument whose null means "not given" is written as its type, not
`anyOf: [X, {"type": "null"}]` (leave it out rather than send null; one whose null means something,
such as `status` "null: any", keeps it); and a long sub-schema used twice is written once in
`$defs`.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["input_schema"]

# Keywords that describe a value and never reject one: a grouped schema drops the words (its
# hints say what needs saying) and keeps the notes.
_WORDS = ("title", "description")
_NOTES = ("default", "examples")
# Keywords whose value is data, not a schema.
_DATA = ("default", "const", "enum", "examples", "required")
# A sub-schema at least this long that a grouped schema repeats (the steward's finding kinds: an
# argument, and the items of a policy field) is written once, in $defs.
_REPEATED_BYTES = 100


def input_schema(
    branches: dict[str, dict[str, Any]], hints: dict[str, str] | None = None
) -> dict[str, Any]:
    """The schema of a grouped tool whose actions take the arguments `branches` give (each one
    a full tool's input schema), with `hints` as the descriptions of the arguments they name."""
    hints = hints or {}
    defs: dict[str, Any] = {}
    bare: dict[str, dict[str, Any]] = {}
    for action, schema in branches.items():
        bare[action] = _bare(schema)
        _add_defs(defs, bare[action].pop("$defs", {}))
    uses: dict[str, list[dict[str, Any]]] = {}
    for schema in bare.values():
        for name, prop in schema.get("properties", {}).items():
            uses.setdefault(name, []).append(prop)
    if "action" in uses:
        raise ValueError("a tool with an `action` argument cannot be a grouped tool's action")
    if unknown := sorted(set(hints) - set(uses)):
        raise ValueError(f"hints for arguments no action takes: {unknown}")
    shared = {name: _common(props) for name, props in sorted(uses.items())}
    for name, hint in hints.items():
        shared[name] = {"description": hint, **shared[name]}
    takers: dict[str, list[str]] = {}  # what an action takes (as JSON) -> the actions taking it
    for action, schema in bare.items():
        own = schema.get("properties", {})
        takes = {
            "properties": {name: _difference(prop, shared[name]) for name, prop in own.items()},
            "required": schema.get("required", []),
        }
        takers.setdefault(json.dumps(takes), []).append(action)
    chain: dict[str, Any] | bool = False
    for takes_json, actions in reversed(takers.items()):
        takes = json.loads(takes_json)
        test = {"const": actions[0]} if len(actions) == 1 else {"enum": actions}
        shape = {
            "properties": {"action": test, **takes["properties"]},
            "additionalProperties": False,
            **({"required": takes["required"]} if takes["required"] else {}),
        }
        chain = {"if": shape, "else": chain}
    if not isinstance(chain, dict):
        raise ValueError("a grouped tool needs at least one action")
    root = {
        "type": "object",
        "properties": {"action": {"type": "string", "enum": list(branches)}, **shared},
        "required": ["action"],
        **chain,
    }
    return _written_once(root, defs)


def _add_defs(defs: dict[str, Any], extra: dict[str, Any]) -> None:
    for name, schema in extra.items():
        if defs.setdefault(name, schema) != schema:
            raise ValueError(f"two tools define {name} differently: their schemas cannot merge")


def _bare(schema: Any) -> Any:
    """`schema` without titles, descriptions and `additionalProperties: true`, its optional
    properties whose null means "not given" written as their type (see `_given`)."""
    if isinstance(schema, list):
        return [_bare(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    bare: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _WORDS or (key == "additionalProperties" and value is True):
            continue
        if key in ("properties", "$defs"):
            bare[key] = {name: _bare(sub) for name, sub in value.items()}
        else:
            bare[key] = value if key in _DATA else _bare(value)
    if isinstance(bare.get("properties"), dict):
        required = set(bare.get("required", ()))
        bare["properties"] = {
            name: prop if name in required else _given(prop)
            for name, prop in bare["properties"].items()
        }
    return bare


def _given(prop: dict[str, Any]) -> dict[str, Any]:
    """An optional property as a caller gives it: `anyOf: [X, {"type": "null"}]` with no default
    (null is "not given", as leaving it out is) becomes X; anything else stays."""
    options = prop.get("anyOf")
    if "default" in prop or not isinstance(options, list) or len(options) != 2:
        return prop
    rest = [option for option in options if option != {"type": "null"}]
    if len(rest) != 1 or not isinstance(rest[0], dict):
        return prop
    others = {key: value for key, value in prop.items() if key != "anyOf"}
    if others.keys() & rest[0].keys():
        return prop
    return {**rest[0], **others}


def _types(schema: dict[str, Any]) -> set[str] | None:
    """The JSON types a property schema allows; None when it cannot tell (a $ref, say)."""
    if "type" in schema:
        kind = schema["type"]
        return {kind} if isinstance(kind, str) else set(kind)
    if "anyOf" in schema:
        found: set[str] = set()
        for part in schema["anyOf"]:
            types = _types(part)
            if types is None:
                return None
            found |= types
        return found
    return None


def _checks(prop: dict[str, Any]) -> str:
    """What a property schema rejects, as a comparable string."""
    kept = {k: v for k, v in prop.items() if k not in _NOTES and k not in _WORDS}
    return json.dumps(kept, sort_keys=True)


def _common(props: list[dict[str, Any]]) -> dict[str, Any]:
    """The root schema of an argument the actions in `props` take."""
    counts: dict[str, int] = {}
    for prop in props:
        key = json.dumps(prop, sort_keys=True)
        counts[key] = counts.get(key, 0) + 1
    commonest: dict[str, Any] = json.loads(max(counts, key=lambda key: counts[key]))
    if len({_checks(prop) for prop in props}) == 1:
        return commonest
    found = [_types(prop) for prop in props]
    union = sorted({kind for types in found if types for kind in types})
    if None in found or not union:  # a type it cannot tell: any value, the shape decides
        return {}
    if len(union) == 1:
        return {"type": union[0]}
    # anyOf, not a type list: some clients (Gemini's) refuse type lists in arguments
    return {"anyOf": [{"type": kind} for kind in union]}


def _difference(prop: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """What an action's shape adds to the root schema of one of its arguments: nothing, the
    default it has there, or (when it checks differently) its whole schema."""
    if _checks(prop) != _checks(root):
        return prop
    return {key: prop[key] for key in _NOTES if key in prop and prop[key] != root.get(key)}


def _written_once(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """`schema` with `defs`, and each long sub-schema it repeats moved there (named after the
    first property that has it) and referred to by `$ref`."""
    holders: dict[str, list[str]] = {}  # a sub-schema's JSON -> the properties that have it

    def visit(node: Any, name: str) -> None:
        if isinstance(node, list):
            for item in node:
                visit(item, name)
        elif isinstance(node, dict):
            text = json.dumps(node, sort_keys=True)
            if len(text) >= _REPEATED_BYTES:
                holders.setdefault(text, []).append(name)
            for key, value in node.items():
                if key in ("properties", "$defs"):
                    for sub, prop in value.items():
                        visit(prop, sub)
                elif key not in _DATA:
                    visit(value, name)

    visit({**schema, "$defs": defs}, "")
    defs = dict(defs)
    names: dict[str, str] = {}  # a repeated sub-schema's JSON -> its name in $defs
    for text, found in holders.items():
        if len(found) > 1 and found[0]:
            name = found[0]
            while name in defs:
                name += "_"
            defs[name] = json.loads(text)
            names[text] = name

    def swap(node: Any, top: bool = False) -> Any:
        if isinstance(node, list):
            return [swap(item) for item in node]
        if not isinstance(node, dict):
            return node
        if not top and (name := names.get(json.dumps(node, sort_keys=True))):
            return {"$ref": f"#/$defs/{name}"}
        return {
            key: {sub: swap(prop) for sub, prop in value.items()}
            if key == "properties"
            else value
            if key in _DATA
            else swap(value)
            for key, value in node.items()
        }

    written: dict[str, Any] = swap(schema, top=True)
    if defs:
        written["$defs"] = {name: swap(sub, top=True) for name, sub in defs.items()}
    return written
