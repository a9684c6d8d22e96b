"""Calling MCP tools in tests: one that must succeed (its result checked against the tool's output
schema, formats included), one that must fail."""

from __future__ import annotations

from typing import Any

from mcp import Client
from mcp.types import CallToolResult
from output_schemas import check_output


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; return its structured content."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, error_text(result)
    assert isinstance(result.structured_content, dict)
    await check_output(client, tool, result.structured_content)
    return dict(result.structured_content)


async def fail(client: Client, tool: str, **arguments: Any) -> str:
    """Call a tool that must fail with a tool error; return the error text."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} succeeded: {result.structured_content}"
    return error_text(result)


def as_memory(stored: dict[str, Any]) -> dict[str, Any]:
    """A store tool's result as get_memory shows the memory: without `deduplicated`."""
    assert stored.pop("deduplicated", None) is not None, "a store tool says whether it stored"
    return stored


def error_text(result: CallToolResult) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)
