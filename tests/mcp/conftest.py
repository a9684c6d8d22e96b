"""MCP test fixtures: asyncio for anyio, and an in-process client over each module's `gm`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from mcp import Client

from graphmem.mcp.server import build_server
from graphmem.service import GraphMemory


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client(gm: GraphMemory) -> AsyncIterator[Client]:
    async with Client(build_server(gm)) as connected:
        yield connected
