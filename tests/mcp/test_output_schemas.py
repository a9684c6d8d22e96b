"""Every tool's structured content matches its own output schema, formats included, over a tour of
every tool with and without its optional fields: what the TypeScript SDK client (Claude Code's
kind) checks before it lets an agent see a result."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from output_schemas import format_checking, schema_errors
from tool_tour import ALL_TOOLS, Outcome, Tour, prepare_project, run_tour

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.mcp.server import build_server
from graphmem.service import GraphMemory, open_store

pytestmark = pytest.mark.anyio

ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")
WITH_OFFSET = re.compile(r"(Z|[+-]\d{2}:\d{2})$")


@pytest.fixture
def gm(tmp_path: Path) -> Iterator[GraphMemory]:
    prepare_project(tmp_path)
    store = open_store(tmp_path / ".graphmem", embedder=HashEmbedder())
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
async def toured(gm: GraphMemory) -> tuple[Tour, dict[str, dict[str, Any]]]:
    """The tour through the Python SDK client; every result checked against its schema."""
    async with Client(build_server(gm)) as client:
        schemas = {t.name: t.output_schema or {} for t in (await client.list_tools()).tools}

        async def call(tool: str, arguments: dict[str, Any]) -> Outcome:
            result = await client.call_tool(tool, arguments)
            text = " ".join(getattr(block, "text", "") for block in result.content)
            if not result.is_error:
                assert isinstance(result.structured_content, dict), tool
                errors = schema_errors(schemas[tool], result.structured_content)
                assert not errors, f"{tool} breaks its output schema:\n" + "\n".join(errors)
            return Outcome(True, result.is_error, result.structured_content, text)

        return await run_tour(call), schemas


def walk(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every (path, leaf) of a JSON value."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from walk(item, f"{path}/{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from walk(item, f"{path}/{i}")
    else:
        yield path, value


def memories_in(tour: Tour) -> list[dict[str, Any]]:
    """Every memory object the tour got back, wherever it sat in a result."""
    found = []

    def visit(value: Any) -> None:
        if isinstance(value, dict):
            if {"id", "content", "created_at", "lifecycle"} <= value.keys():
                found.append(value)
            for item in value.values():
                visit(item)
        elif isinstance(value, list):
            for item in value:
                visit(item)

    for _, result in tour.results:
        visit(result)
    return found


async def test_the_tour_calls_every_tool_the_server_offers(
    toured: tuple[Tour, dict[str, dict[str, Any]]],
) -> None:
    tour, schemas = toured
    assert set(schemas) == ALL_TOOLS, "a tool was added or removed: update the tour"
    assert tour.tools_called == ALL_TOOLS
    assert len(tour.errors) >= 20  # the invalid calls were tool errors, and the server went on


async def test_every_tool_has_an_output_schema_whose_datetimes_are_rfc3339(
    toured: tuple[Tour, dict[str, dict[str, Any]]],
) -> None:
    _, schemas = toured
    for tool, schema in schemas.items():
        assert schema.get("type") == "object", tool
        format_checking(schema)  # a schema the validator accepts
    memory = schemas["get_memory"]["properties"]
    assert memory["created_at"] == {"format": "date-time", "title": "Created At", "type": "string"}
    nullable = {s.get("type") for s in memory["valid_to"]["anyOf"]}
    assert nullable == {"string", "null"}


async def test_optional_fields_come_back_both_empty_and_set(
    toured: tuple[Tour, dict[str, dict[str, Any]]],
) -> None:
    """So the schema check above saw each nullable field as null and as a value."""
    tour, _ = toured
    memories = memories_in(tour)
    for field in ("title", "context", "service", "valid_to", "verified_at", "verify_status"):
        values = [m.get(field) for m in memories]
        assert None in values and any(v is not None for v in values), field
    hits = [hit for tool, r in tour.results if tool == "recall_memory" for hit in r["hits"]]
    assert any(hit["explain"] for hit in hits) and any(hit["explain"] is None for hit in hits)
    assert any(hit["superseded_by"] for hit in hits)
    timelines = [r for tool, r in tour.results if tool == "knowledge_timeline"]
    assert any(e["superseded_at"] for t in timelines for e in t["entries"])
    as_of = [r for tool, r in tour.results if tool == "recall_as_of"]
    assert [len(r["hits"]) > 0 for r in as_of] == [False, True]


async def test_every_datetime_sent_carries_its_utc_offset(
    toured: tuple[Tour, dict[str, dict[str, Any]]],
) -> None:
    """Cypher rows too, which no schema describes."""
    tour, _ = toured
    datetimes = [
        (f"{tool}{path}", value)
        for tool, result in tour.results
        for path, value in walk(result)
        if isinstance(value, str) and ISO_DATETIME.match(value)
    ]
    assert len(datetimes) > 100
    naive = [(where, value) for where, value in datetimes if not WITH_OFFSET.search(value)]
    assert not naive
    cypher = next(r for tool, r in tour.results if tool == "cypher_query")
    assert WITH_OFFSET.search(cypher["rows"][0][1])


async def test_the_schema_check_rejects_a_datetime_without_an_offset(
    toured: tuple[Tour, dict[str, dict[str, Any]]],
) -> None:
    """The check has teeth: what graphmem sent before would fail it."""
    tour, schemas = toured
    memory = next(r for tool, r in tour.results if tool == "get_memory")
    assert not schema_errors(schemas["get_memory"], memory)
    naive = {**memory, "created_at": memory["created_at"].replace("Z", "")}
    assert schema_errors(schemas["get_memory"], naive) == [
        f"created_at: {naive['created_at']!r} is not a 'date-time'"
    ]
