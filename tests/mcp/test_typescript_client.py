"""`graphmem serve` driven by the official TypeScript SDK client (@modelcontextprotocol/sdk, pinned
in ts_client/package.json and installed by `make setup`), the client of Claude Code, VS Code and
most agent hosts: it rejects any tool result whose structured content does not match the tool's
output schema, formats included. The tour calls every tool, over stdio and over streamable HTTP
with a bearer token, with the real local embedding model; over stdio also in grouped mode, every
action of every grouped tool, with compact and with full results (grouped tools declare no output
schema; the client's validator checks their input schemas instead)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream
from tool_tour import (
    ALL_TOOLS,
    GROUPED_TOOLS,
    Detail,
    Outcome,
    prepare_project,
    run_tour,
    through_groups,
)

from graphmem.daemon.paths import live_owner
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.mcp.server import build_server
from graphmem.service import open_store

pytestmark = [pytest.mark.anyio, pytest.mark.model]

TS_CLIENT = Path(__file__).parent / "ts_client"
NODE = shutil.which("node")
TOKEN = "a-long-random-token-for-the-typescript-client"


@pytest.fixture(scope="module", autouse=True)
def _client_installed() -> None:
    if NODE is None:
        pytest.skip("node is not installed: the TypeScript SDK client cannot run")
    sdk = TS_CLIENT / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
    assert sdk.is_file(), f"the TypeScript SDK client is not installed: run `make setup` ({sdk})"


def serve_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
    env.update(GRAPHMEM_HOME=str(home), GRAPHMEM_DAEMON_IDLE_TIMEOUT="5", **extra)
    return env


class Driver:
    """driver.mjs: one JSON line per call, one back."""

    def __init__(self, process: Process) -> None:
        self.process = process
        assert process.stdin is not None and process.stdout is not None
        self._lines = _lines(TextReceiveStream(process.stdout))

    async def read(self) -> dict[str, Any]:
        with anyio.fail_after(120):
            line = await anext(self._lines)
        answer: dict[str, Any] = json.loads(line)
        return answer

    async def send(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None
        await self.process.stdin.send((json.dumps(message) + "\n").encode())
        return await self.read()

    async def call(self, tool: str, arguments: dict[str, Any]) -> Outcome:
        answer = await self.send({"tool": tool, "arguments": arguments})
        if not answer["accepted"]:
            return Outcome(False, text=answer["error"])
        return Outcome(True, answer["isError"], answer["structuredContent"], answer["text"])


async def _lines(stream: TextReceiveStream) -> AsyncIterator[str]:
    buffer = ""
    async for chunk in stream:
        buffer += chunk
        while "\n" in buffer:
            line, buffer = buffer.split("\n", 1)
            yield line


@asynccontextmanager
async def driver(*args: str, env: dict[str, str]) -> AsyncIterator[Driver]:
    assert NODE is not None
    async with await anyio.open_process(
        [NODE, str(TS_CLIENT / "driver.mjs"), *args], env=env, stderr=None
    ) as process:
        try:
            yield Driver(process)
        finally:
            if process.stdin is not None:
                await process.stdin.aclose()
            with anyio.move_on_after(30):
                await process.wait()
            if process.returncode is None:
                process.kill()


def stop_owner(home: Path) -> None:
    """The owner `graphmem serve` started for the store: stopped, not left to its idle timeout."""
    owner = live_owner(home)
    if owner is not None:
        with suppress(ProcessLookupError):
            os.kill(owner.pid, signal.SIGTERM)


async def tour_through(
    client: Driver, *, grouped: bool = False, detail: Detail = "compact"
) -> None:
    connected = await client.read()
    assert set(connected["tools"]) == (GROUPED_TOOLS if grouped else ALL_TOOLS)
    checks = await client.send({"selfcheck": True})
    assert checks == {"naive_rejected": True, "utc_accepted": True}, "the client checks formats"
    called: set[str] = set()

    async def call(tool: str, arguments: dict[str, Any]) -> Outcome:
        called.add(tool)
        return await client.call(tool, arguments)

    tour = await run_tour(through_groups(call) if grouped else call, detail)
    assert tour.tools_called == ALL_TOOLS
    assert called == (GROUPED_TOOLS if grouped else ALL_TOOLS)


async def test_every_tool_over_stdio_passes_the_typescript_clients_schema_checks(
    tmp_path: Path,
) -> None:
    prepare_project(tmp_path)
    home = tmp_path / ".graphmem"
    command = [sys.executable, "-m", "graphmem", "serve"]
    try:
        async with driver("stdio", *command, env=serve_env(home)) as client:
            await tour_through(client)
    finally:
        stop_owner(home)


# the tour over stdio and over HTTP already reads full results; grouped full is the slow run's
@pytest.mark.parametrize("detail", ["compact", pytest.param("full", marks=pytest.mark.slow)])
async def test_every_grouped_action_over_stdio_passes_the_typescript_clients_schema_checks(
    tmp_path: Path, detail: Detail
) -> None:
    prepare_project(tmp_path)
    home = tmp_path / ".graphmem"
    command = [sys.executable, "-m", "graphmem", "serve", "--tools", "grouped"]
    try:
        async with driver("stdio", *command, env=serve_env(home)) as client:
            await tour_through(client, grouped=True, detail=detail)
            await grouped_schemas_have_teeth(client, tmp_path / "schemas")
    finally:
        stop_owner(home)


async def grouped_schemas_have_teeth(client: Driver, home: Path) -> None:
    """The client's own validator (Ajv), given the memory tool's input schema, holds each action
    to its tool's arguments: the if/then chain is checked, not waved through."""
    with open_store(home, embedder=HashEmbedder()) as gm:
        listed = await build_server(gm, "grouped").list_tools()
    schema = next(tool.input_schema for tool in listed if tool.name == "memory")
    calls = [
        {"action": "store", "content": "x", "tags": ["a"]},
        {"action": "recall", "query": "q", "limit": 3, "detail": "full"},
        {"action": "store"},  # content is required for store
        {"action": "store", "content": "x", "query": "q"},  # recall's argument
        {"action": "store", "content": "x", "importance": 2},
        {"action": "recall", "query": "q", "detail": "everything"},
        {"action": "forget"},
        {"action": "delete", "id": "m"},  # a shape get and delete share
        {"action": "delete", "id": "m", "content": "x"},
        {"action": "stats"},
        {"action": "stats", "id": "m"},
    ]
    valid = [(await client.send({"validate": schema, "value": c}))["valid"] for c in calls]
    assert valid == [True, True, False, False, False, False, False, True, False, True, False]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def http_server(project: Path) -> Iterator[str]:
    """`graphmem serve --http` with a bearer token; yields its MCP URL."""
    home = project / ".graphmem"
    port = _free_port()
    child = subprocess.Popen(
        [sys.executable, "-m", "graphmem", "serve", "--http", "--port", str(port)],
        env=serve_env(home, GRAPHMEM_HTTP_TOKEN=TOKEN),
        cwd=project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert child.poll() is None, child.communicate()[1].decode(errors="replace")
            try:
                httpx.get(f"http://127.0.0.1:{port}/health", timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "graphmem serve did not answer within 60 s"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(timeout=10)
        if child.stderr is not None:
            child.stderr.close()
        stop_owner(home)


async def test_every_tool_over_http_with_a_token_passes_the_typescript_clients_schema_checks(
    tmp_path: Path,
) -> None:
    prepare_project(tmp_path)
    with http_server(tmp_path) as url:
        env = {**os.environ, "GRAPHMEM_HTTP_TOKEN": TOKEN}
        async with driver("http", url, env=env) as client:
            await tour_through(client, detail="full")


async def test_the_typescript_client_with_a_wrong_token_cannot_connect(tmp_path: Path) -> None:
    prepare_project(tmp_path)
    with http_server(tmp_path) as url:
        env = {**os.environ, "GRAPHMEM_HTTP_TOKEN": "not-the-token"}
        assert NODE is not None
        refused = await anyio.run_process(
            [NODE, str(TS_CLIENT / "driver.mjs"), "http", url], env=env, check=False
        )
    assert refused.returncode != 0
    assert b"401" in refused.stderr
