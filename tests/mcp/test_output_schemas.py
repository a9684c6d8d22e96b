"""Every tool's structured content matches its own output schema, formats included, over a tour of
every tool with and without its optional fields: what the TypeScript SDK client (Claude Code's
kind) checks before it lets an agent see a result. The tour runs in every tool mode and in both
details of the results: in grouped mode each call is an action of a grouped tool (which declares
no output schema) and is checked against its action's own tool's schema; in core mode the tour
calls the tools the mode does not list, by their full names, and their results are checked
against their own schemas."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from mcp import Client
from output_schemas import format_checking, schema_errors
from tool_tour import (
    ACTION_OF,
    ALL_TOOLS,
    CORE_TOOLS,
    DETAIL_TOOLS,
    GROUPED_TOOLS,
    Detail,
    Outcome,
    Tour,
    prepare_project,
    run_tour,
    through_groups,
)

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.mcp.grouped import ToolMode
from graphmem.mcp.server import build_server
from graphmem.service import GraphMemory, open_store

pytestmark = pytest.mark.anyio

ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")
WITH_OFFSET = re.compile(r"(Z|[+-]\d{2}:\d{2})$")
LISTED = {"full": ALL_TOOLS, "grouped": GROUPED_TOOLS, "core": CORE_TOOLS}
FULL_TOOL = {group_action: tool for tool, group_action in ACTION_OF.items()}
VARIANTS: list[tuple[ToolMode, Detail]] = [
    ("full", "compact"), ("full", "full"), ("grouped", "compact"), ("grouped", "full"),
    ("core", "compact"),
]  # fmt: skip


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module-wide, so one tour serves every test of its variant


class Toured:
    """A tour in one mode and detail: what was listed, the schemas, what each call returned."""

    def __init__(self, mode: ToolMode, detail: Detail) -> None:
        self.mode, self.detail = mode, detail
        self.listed: dict[str, dict[str, Any]] = {}
        self.inputs: dict[str, dict[str, Any]] = {}
        self.checked: list[tuple[str, dict[str, Any]]] = []  # (schema's tool, result)
        self.tour = Tour()


@pytest.fixture(
    scope="module", params=VARIANTS, ids=[f"{mode}-{detail}" for mode, detail in VARIANTS]
)
async def toured(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Toured]:
    """The tour through the Python SDK client; every result checked against its schema: the
    listed tool's, or for a tool the mode does not list, that tool's own (full mode's listing)."""
    mode, detail = request.param
    project = tmp_path_factory.mktemp(f"{mode}-{detail}")
    prepare_project(project)
    with open_store(project / ".graphmem", embedder=HashEmbedder()) as gm:
        yield await tour_in(gm, mode, detail)


async def tour_in(gm: GraphMemory, mode: ToolMode, detail: Detail) -> Toured:
    seen = Toured(mode, detail)
    own = {t.name: t.output_schema or {} for t in await build_server(gm, "full").list_tools()}
    async with Client(build_server(gm, mode)) as client:
        tools = (await client.list_tools()).tools
        seen.listed = {t.name: t.output_schema or {} for t in tools}
        seen.inputs = {t.name: t.input_schema for t in tools}

        async def call(tool: str, arguments: dict[str, Any]) -> Outcome:
            result = await client.call_tool(tool, arguments)
            text = " ".join(getattr(block, "text", "") for block in result.content)
            if not result.is_error:
                assert isinstance(result.structured_content, dict), tool
                if tool in seen.inputs:  # a client that checks arguments lets this call go
                    errors = list(Draft202012Validator(seen.inputs[tool]).iter_errors(arguments))
                    assert not errors, f"{tool}({arguments}) breaks its input schema: {errors}"
                full_tool = FULL_TOOL[tool, arguments["action"]] if mode == "grouped" else tool
                schema = own[full_tool]
                errors = schema_errors(schema, result.structured_content)
                assert not errors, f"{tool} breaks its output schema:\n" + "\n".join(errors)
                seen.checked.append((tool, result.structured_content))
            return Outcome(True, result.is_error, result.structured_content, text)

        seen.tour = await run_tour(through_groups(call) if mode == "grouped" else call, detail)
    return seen


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


def memories_in(results: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every whole memory record the tour got back, wherever it sat in a result."""
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

    for _, result in results:
        visit(result)
    return found


async def test_the_tour_calls_every_tool_in_every_mode(toured: Toured) -> None:
    assert set(toured.listed) == LISTED[toured.mode], "a tool was added or removed: update it"
    assert toured.tour.tools_called == ALL_TOOLS
    assert len(toured.tour.errors) >= 20  # the invalid calls were tool errors, the server went on
    assert {tool for tool, _ in toured.tour.results} == ALL_TOOLS  # each answered at least once
    if toured.mode == "grouped":  # every action of every grouped tool, checked against its tool
        assert {tool for tool, _ in toured.checked} == GROUPED_TOOLS
        assert set(ACTION_OF) == ALL_TOOLS


async def test_every_tool_has_an_output_schema_whose_datetimes_are_rfc3339(
    toured: Toured,
) -> None:
    for tool, schema in toured.listed.items():
        if toured.mode == "grouped":  # its results are checked against its actions' own schemas
            assert schema == {}, f"{tool}: a grouped tool declares no output schema"
            continue
        assert schema.get("type") == "object", tool
        format_checking(schema)  # a schema the validator accepts
    if toured.mode != "full":
        return
    memory = toured.listed["get_memory"]["properties"]
    assert memory["created_at"] == {"format": "date-time", "type": "string"}
    assert memory["valid_to"] == {"type": ["string", "null"], "format": "date-time"}


async def test_input_schemas_are_ones_every_model_api_takes(toured: Toured) -> None:
    """No oneOf/anyOf/allOf at the root: the Anthropic API refuses such a tool, and with it the
    request that lists it (every tool of the server would be lost to a Claude client). No type
    lists (`["string", "null"]`): Gemini models refuse them."""
    for tool, schema in toured.inputs.items():
        assert schema["type"] == "object", tool
        assert not {"oneOf", "anyOf", "allOf"} & schema.keys(), tool
        lists = [path for path, value in walk(schema) if path.endswith("/type/0")]
        assert not lists, f"{tool}: {lists}"


async def test_optional_fields_come_back_both_empty_and_set(toured: Toured) -> None:
    """So the schema check above saw each optional field both ways."""
    tour = toured.tour
    hits = [hit for tool, r in tour.results if tool == "recall_memory" for hit in r.get("hits", [])]
    as_of = [r for tool, r in tour.results if tool == "recall_as_of"]
    assert [len(r["hits"]) > 0 for r in as_of] == [False, True]
    timelines = [r for tool, r in tour.results if tool == "knowledge_timeline"]
    assert any(e.get("superseded_at") for t in timelines for e in t["entries"])
    assert any(hit.get("superseded_by") for hit in hits)
    if toured.detail == "compact":  # a field is there when set, left out when not
        for field in ("explain", "superseded_by", "title", "tags", "service"):
            values = [hit.get(field) for hit in hits]
            assert None in values and any(v is not None for v in values), field
        return
    memories = memories_in(tour.results)
    for field in ("title", "context", "service", "valid_to", "verified_at", "verify_status"):
        values = [m.get(field) for m in memories]
        assert None in values and any(v is not None for v in values), field
    assert any(hit["explain"] for hit in hits) and any(hit["explain"] is None for hit in hits)


async def test_compact_results_leave_out_nulls_and_whole_records(toured: Toured) -> None:
    detailed = [(tool, r) for tool, r in toured.tour.results if tool in DETAIL_TOOLS]
    assert {tool for tool, _ in detailed} == DETAIL_TOOLS
    nulls = [
        (tool, path)
        for tool, r in detailed
        for path, v in walk(r)
        if v is None and "/explain/" not in path  # score components, as recall explains them
    ]
    if toured.detail == "compact":
        assert not nulls
        assert not memories_in(detailed)
    else:
        assert nulls and memories_in(detailed)  # whole records, as before


async def test_every_datetime_sent_carries_its_utc_offset(toured: Toured) -> None:
    """Cypher rows too, which no schema describes."""
    tour = toured.tour
    datetimes = [
        (f"{tool}{path}", value)
        for tool, result in tour.results
        for path, value in walk(result)
        if isinstance(value, str) and ISO_DATETIME.match(value)
    ]
    assert len(datetimes) > (100 if toured.detail == "full" else 30)
    naive = [(where, value) for where, value in datetimes if not WITH_OFFSET.search(value)]
    assert not naive
    cypher = next(r for tool, r in tour.results if tool == "cypher_query")
    assert WITH_OFFSET.search(cypher["rows"][0][1])


async def test_the_schema_check_rejects_a_datetime_without_an_offset(toured: Toured) -> None:
    """The check has teeth: what graphmem sent before would fail it."""
    if toured.mode != "full":
        pytest.skip("checked once, on the full tools")
    memory = next(r for tool, r in toured.tour.results if tool == "get_memory")
    schema = toured.listed["get_memory"]
    assert not schema_errors(schema, memory)
    naive = {**memory, "created_at": memory["created_at"].replace("Z", "")}
    assert schema_errors(schema, naive) == [
        f"created_at: {naive['created_at']!r} is not a 'date-time'"
    ]
