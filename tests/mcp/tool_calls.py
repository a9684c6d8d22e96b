"""Calling MCP tools in tests: one that must succeed, one that must fail."""

from __future__ import annotations

from typing import Any

from mcp import Client
from mcp.types import CallToolResult


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; return its structured content."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, error_text(result)
    assert isinstance(result.structured_content, dict)
    return dict(result.structured_content)


async def fail(client: Client, tool: str, **arguments: Any) -> str:
    """Call a tool that must fail with a tool error; return the error text."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} succeeded: {result.structured_content}"
    return error_text(result)


def error_text(result: CallToolResult) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)
