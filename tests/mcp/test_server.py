"""The MCP transport end to end, against a real GraphMemory on a temp store: an in-process MCP
client for the tools, a streamable-HTTP round trip against uvicorn on a free port, and the
serve_stdio / serve_http entry points in child processes."""

from __future__ import annotations

import functools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from tool_calls import as_memory, call, fail

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.mcp.http import MCP_PATH, make_http_server
from graphmem.mcp.server import build_server
from graphmem.service import GraphMemory, open_store

pytestmark = pytest.mark.anyio

TOOLS = {
    "store_memory",
    "recall_memory",
    "get_memory",
    "update_memory",
    "delete_memory",
    "list_memories",
    "memory_stats",
    "cypher_query",
}
READ_ONLY = {"recall_memory", "get_memory", "list_memories", "memory_stats", "cypher_query"}


@pytest.fixture
def gm(tmp_path: Path) -> Iterator[GraphMemory]:
    store = open_store(tmp_path / "store", embedder=HashEmbedder())
    try:
        yield store
    finally:
        store.close()


async def test_list_tools_offers_the_eight_memory_tools_with_annotations_and_output_schemas(
    client: Client,
) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}

    assert set(tools) >= TOOLS
    for name, tool in tools.items():
        if name not in TOOLS:
            continue  # the knowledge tools have tests of their own
        assert tool.description, name
        assert tool.output_schema is not None, name
        assert tool.annotations is not None, name
        assert tool.annotations.open_world_hint is False, name
        assert tool.annotations.read_only_hint is (name in READ_ONLY), name
    assert tools["delete_memory"].annotations.destructive_hint is True  # type: ignore[union-attr]
    assert tools["store_memory"].annotations.destructive_hint is False  # type: ignore[union-attr]
    assert tools["store_memory"].annotations.idempotent_hint is False  # type: ignore[union-attr]
    store_schema = tools["store_memory"].input_schema
    assert store_schema["required"] == ["content"]
    assert "importance" in store_schema["properties"]
    assert store_schema["additionalProperties"] is False


async def test_server_is_named_graphmem_and_tells_the_model_to_recall_before_work(
    gm: GraphMemory,
) -> None:
    server = build_server(gm)
    assert server.name == "graphmem"
    assert server.instructions is not None
    assert "recall_memory" in server.instructions
    assert "store_memory" in server.instructions


async def test_store_then_recall_returns_the_stored_memory_in_structured_content(
    client: Client,
) -> None:
    stored = await call(
        client,
        "store_memory",
        content="The flaky login test fails because the session cookie expires at midnight UTC",
        title="Flaky login test",
        type="semantic",
        kind="dead_end",
        tags=["tests", "auth"],
        service="web",
        importance=0.8,
        metadata={"ticket": "QA-17"},
    )
    assert stored["id"]
    assert stored["type"] == "semantic"
    assert stored["kind"] == "dead_end"
    assert stored["tags"] == ["tests", "auth"]
    assert stored["metadata"] == {"ticket": "QA-17"}

    recalled = await call(client, "recall_memory", query="flaky login test session cookie")

    assert recalled["query"] == "flaky login test session cookie"
    assert [hit["id"] for hit in recalled["hits"]][:1] == [stored["id"]]
    assert recalled["hits"][0]["content"] == stored["content"]


async def test_recall_with_explain_returns_score_components(client: Client) -> None:
    await call(client, "store_memory", content="Use pnpm, not npm, in the frontend workspace")

    recalled = await call(client, "recall_memory", query="pnpm frontend", explain=True, limit=3)

    assert recalled["hits"]
    assert recalled["hits"][0]["explain"]


async def test_recall_filters_narrow_the_hits(client: Client) -> None:
    decision = await call(
        client, "store_memory", content="Deploy the cache behind nginx", kind="decision"
    )
    await call(client, "store_memory", content="Deploy the cache by hand once", kind="note")

    recalled = await call(client, "recall_memory", query="deploy the cache", kind="decision")

    assert [hit["id"] for hit in recalled["hits"]] == [decision["id"]]


async def test_store_memory_with_importance_7_is_a_tool_error_and_stores_nothing(
    client: Client, gm: GraphMemory
) -> None:
    before = gm.stats().total

    text = await fail(client, "store_memory", content="too important", importance=7)

    assert "importance" in text
    assert gm.stats().total == before


async def test_store_memory_with_an_unknown_type_is_a_tool_error(
    client: Client, gm: GraphMemory
) -> None:
    text = await fail(client, "store_memory", content="x", type="emotional")

    assert "type" in text
    assert "episodic" in text  # the error lists the allowed values
    assert gm.stats().total == 0


async def test_store_memory_with_empty_or_blank_content_is_a_tool_error(
    client: Client, gm: GraphMemory
) -> None:
    assert "content" in await fail(client, "store_memory", content="")
    assert "content is empty" in await fail(client, "store_memory", content="   ")
    assert gm.stats().total == 0


async def test_store_memory_with_an_unknown_argument_is_a_tool_error_naming_it(
    client: Client, gm: GraphMemory
) -> None:
    text = await fail(client, "store_memory", content="fine", tag="misspelt")

    assert "tag" in text
    assert gm.stats().total == 0


async def test_get_memory_returns_the_stored_memory(client: Client) -> None:
    stored = await call(client, "store_memory", content="Postgres runs on port 5433 locally")

    fetched = await call(client, "get_memory", id=stored["id"])

    assert fetched == as_memory(stored)


async def test_get_of_an_unknown_id_is_a_tool_error_mentioning_the_id(client: Client) -> None:
    text = await fail(client, "get_memory", id="no-such-memory-42")

    assert "no-such-memory-42" in text
    assert "not_found" in text


async def test_update_changes_content_and_recall_finds_the_new_words(client: Client) -> None:
    stored = await call(client, "store_memory", content="The retry limit is three attempts")

    updated = await call(
        client,
        "update_memory",
        id=stored["id"],
        content="The retry limit is five attempts with exponential backoff",
        importance=0.9,
    )

    assert updated["id"] == stored["id"]
    assert updated["content"].endswith("exponential backoff")
    assert updated["importance"] == 0.9
    assert updated["created_at"] == stored["created_at"]
    recalled = await call(client, "recall_memory", query="exponential backoff")
    assert recalled["hits"][0]["id"] == stored["id"]
    assert "exponential backoff" in recalled["hits"][0]["content"]
    fetched = await call(client, "get_memory", id=stored["id"])
    assert fetched["content"] == updated["content"]


async def test_update_with_bad_values_is_a_tool_error_and_changes_nothing(client: Client) -> None:
    stored = await call(client, "store_memory", content="Original words", importance=0.4)

    assert "importance" in await fail(client, "update_memory", id=stored["id"], importance=-1)
    assert "nothing to update" in await fail(client, "update_memory", id=stored["id"])
    assert "unknown-id" in await fail(client, "update_memory", id="unknown-id", title="x")

    assert await call(client, "get_memory", id=stored["id"]) == as_memory(stored)


async def test_delete_removes_the_memory(client: Client, gm: GraphMemory) -> None:
    stored = await call(client, "store_memory", content="Temporary note about the build cache")

    deleted = await call(client, "delete_memory", id=stored["id"])

    assert deleted == {"deleted": stored["id"]}
    assert stored["id"] in await fail(client, "get_memory", id=stored["id"])
    assert gm.stats().total == 0
    assert stored["id"] in await fail(client, "delete_memory", id=stored["id"])


async def test_list_memories_filters_by_type_and_pages_with_the_cursor(client: Client) -> None:
    facts = [
        await call(client, "store_memory", content=f"Fact number {n}", type="semantic")
        for n in range(3)
    ]
    await call(client, "store_memory", content="Something happened", type="episodic")

    page = await call(client, "list_memories", type="semantic", limit=2, detail="full")
    assert len(page["memories"]) == 2
    assert all(m["type"] == "semantic" for m in page["memories"])
    assert page["next_cursor"]
    rest = await call(client, "list_memories", type="semantic", limit=2, cursor=page["next_cursor"])

    listed = [m["id"] for m in page["memories"] + rest["memories"]]
    assert sorted(listed) == sorted(fact["id"] for fact in facts)
    everything = await call(client, "list_memories")
    assert len(everything["memories"]) == 4


async def test_list_memories_with_an_unknown_lifecycle_is_a_tool_error(client: Client) -> None:
    assert "lifecycle" in await fail(client, "list_memories", lifecycle="forgotten")


async def test_memory_stats_counts_what_was_stored(client: Client, gm: GraphMemory) -> None:
    await call(client, "store_memory", content="A decision", kind="decision")
    await call(client, "store_memory", content="Another note")

    stats = await call(client, "memory_stats")

    assert stats["total"] == 2
    assert stats["by_kind"].get("decision") == 1
    assert stats["path"] == str(gm.path)


async def test_cypher_query_match_returns_rows(client: Client) -> None:
    stored = await call(client, "store_memory", content="Cypher can see me", kind="runbook")

    result = await call(
        client,
        "cypher_query",
        query="MATCH (m:Memory) WHERE m.kind = $kind RETURN m.id AS id, m.content AS content",
        params={"kind": "runbook"},
    )

    assert result["columns"] == ["id", "content"]
    assert result["rows"] == [[stored["id"], "Cypher can see me"]]


async def test_cypher_query_with_create_is_a_tool_error_and_the_store_is_unchanged(
    client: Client, gm: GraphMemory
) -> None:
    await call(client, "store_memory", content="The only memory")
    before = gm.stats().total

    text = await fail(
        client, "cypher_query", query="CREATE (m:Memory {id: 'sneaky', content: 'written'})"
    )

    assert text
    assert gm.stats().total == before
    assert "sneaky" in await fail(client, "get_memory", id="sneaky")


async def test_cypher_query_with_bad_syntax_is_a_tool_error(client: Client) -> None:
    assert await fail(client, "cypher_query", query="MATCH (m:Memory RETURN m")


async def test_concurrent_calls_are_all_served_and_all_stored(
    client: Client, gm: GraphMemory
) -> None:
    ids: list[str] = []

    async def store(n: int) -> None:
        stored = await call(client, "store_memory", content=f"Concurrent memory number {n}")
        ids.append(stored["id"])

    async with anyio.create_task_group() as tg:
        for n in range(12):
            tg.start_soon(store, n)
        tg.start_soon(call, client, "memory_stats")
        tg.start_soon(functools.partial(call, client, "recall_memory", query="concurrent memory"))

    assert len(set(ids)) == 12
    assert gm.stats().total == 12


async def test_calling_an_unknown_tool_is_a_tool_error(client: Client) -> None:
    assert "forget_everything" in await fail(client, "forget_everything")


# -- streamable HTTP ------------------------------------------------------------------------------


def _get_json(url: str, token: str | None = None) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, json.loads(response.read())


async def test_http_server_serves_health_and_mcp_over_streamable_http(gm: GraphMemory) -> None:
    server = make_http_server(gm, "127.0.0.1", 0, token="http-test-token")
    thread = threading.Thread(target=server.run, name="graphmem-http-test", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            assert thread.is_alive(), "the HTTP server stopped during start-up"
            assert time.monotonic() < deadline, "the HTTP server did not start within 20 s"
            await anyio.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        base = f"http://127.0.0.1:{port}"

        status, health = await anyio.to_thread.run_sync(
            _get_json, f"{base}/health", "http-test-token"
        )
        assert status == 200
        assert health["status"] == "ok"
        assert health["version"]
        assert health["store"] == str(gm.path)

        headers = {"Authorization": "Bearer http-test-token"}
        with anyio.fail_after(30):
            async with (
                httpx2.AsyncClient(headers=headers, timeout=30) as http_client,
                Client(
                    streamable_http_client(f"{base}{MCP_PATH}", http_client=http_client)
                ) as client,
            ):
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert names >= TOOLS
                stored = await call(client, "store_memory", content="Stored over HTTP")
                fetched = await call(client, "get_memory", id=stored["id"])
                assert fetched["content"] == "Stored over HTTP"
    finally:
        server.should_exit = True
        await anyio.to_thread.run_sync(thread.join, 15)
        assert not thread.is_alive(), "the HTTP server did not stop within 15 s"


# -- the serve_* entry points, as `graphmem serve` runs them: in a child process -------------------

REPO_ROOT = Path(__file__).resolve().parents[2]
SERVE_SCRIPT = """
import sys
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.mcp import http, server
from graphmem.service import open_store

with open_store(sys.argv[2], embedder=HashEmbedder()) as gm:
    if sys.argv[1] == "stdio":
        server.serve_stdio(gm)
    else:
        http.serve_http(gm, "127.0.0.1", int(sys.argv[3]))
print("store closed", file=sys.stderr)
"""


def _child_env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{path}" if path else str(REPO_ROOT)}


async def test_serve_stdio_speaks_mcp_on_stdin_and_stdout(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", SERVE_SCRIPT, "stdio", str(tmp_path / "store")],
        env=_child_env(),
        cwd=str(tmp_path),
    )
    with anyio.fail_after(60):
        async with Client(params) as client:
            assert {tool.name for tool in (await client.list_tools()).tools} >= TOOLS
            stored = await call(client, "store_memory", content="Stored over stdio")
            recalled = await call(client, "recall_memory", query="stored over stdio")
            assert recalled["hits"][0]["id"] == stored["id"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_serve_http_answers_health_then_returns_on_ctrl_c_or_sigterm_so_the_store_closes(
    tmp_path: Path, stop: signal.Signals
) -> None:
    port = _free_port()
    child = subprocess.Popen(
        [sys.executable, "-c", SERVE_SCRIPT, "http", str(tmp_path / "store"), str(port)],
        env={**os.environ, **_child_env()},
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert child.poll() is None, child.communicate()[1].decode(errors="replace")
            try:
                token = (tmp_path / "store" / "http_token").read_text().strip()
                status, health = _get_json(f"http://127.0.0.1:{port}/health", token)
                break
            except OSError:  # FileNotFoundError too: the token file is made before binding
                assert time.monotonic() < deadline, "serve_http did not answer within 60 s"
                time.sleep(0.1)
        assert status == 200
        assert health["status"] == "ok"
        assert health["store"] == str((tmp_path / "store").resolve())

        child.send_signal(stop)
        _, stderr = child.communicate(timeout=20)
        assert child.returncode == 0, stderr.decode(errors="replace")
        assert b"store closed" in stderr
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=10)
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()
