"""Checking tool results against the tools' own output schemas, formats included, as the clients
people run do (the TypeScript SDK client rejects a result that does not match)."""

from __future__ import annotations

import weakref
from typing import Any

from jsonschema import Draft202012Validator
from mcp import Client

# id(client) -> (the client, weakly, and its tools' schemas): an id is reused by a later client
# once this one is gone, so the entry counts only while it still names the same client
_SCHEMAS: dict[int, tuple[weakref.ref[Client], dict[str, dict[str, Any]]]] = {}


def format_checking(schema: dict[str, Any]) -> Draft202012Validator:
    """A validator that checks `format` too: without rfc3339-validator installed jsonschema
    passes any string as a date-time, so this fails loudly instead of checking nothing."""
    checker = Draft202012Validator.FORMAT_CHECKER
    assert not checker.conforms("2026-12-01T12:56:40", "date-time"), (
        "jsonschema does not check date-time formats here: install rfc3339-validator"
    )
    return Draft202012Validator(schema, format_checker=checker)


async def output_schema(client: Client, tool: str) -> dict[str, Any]:
    known = _SCHEMAS.get(id(client))
    if known is None or known[0]() is not client:
        listed = await client.list_tools()
        known = _SCHEMAS[id(client)] = (
            weakref.ref(client),
            {t.name: t.output_schema or {} for t in listed.tools},
        )
    schemas = known[1]
    assert tool in schemas, f"no tool named {tool}"
    return schemas[tool]


def schema_errors(schema: dict[str, Any], result: dict[str, Any]) -> list[str]:
    """Every way `result` breaks `schema`, each with the path where it does."""
    return [
        f"{'/'.join(map(str, error.absolute_path)) or '(root)'}: {error.message}"
        for error in format_checking(schema).iter_errors(result)
    ]


async def check_output(client: Client, tool: str, result: dict[str, Any]) -> None:
    errors = schema_errors(await output_schema(client, tool), result)
    assert not errors, f"{tool}'s result breaks its output schema:\n" + "\n".join(errors)
