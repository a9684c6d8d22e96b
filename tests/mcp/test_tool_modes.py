"""Tool modes and compact results: what each mode lists, that full names are served in every mode,
that a grouped tool's input schema holds each action to its own arguments, and that results stay
small (the sizes the benchmark `python -m eval mcp-tools` reports, asserted where deterministic)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from mcp import Client
from tool_calls import call, error_text, fail
from tool_tour import ACTION_OF, ALL_TOOLS, CORE_TOOLS, GROUPED_TOOLS

from eval.bench_mcp import CALLS, contents, fill, measure_modes
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.mcp.grouped import GROUPS, HINTS, ToolMode
from graphmem.mcp.server import build_server
from graphmem.service import GraphMemory, open_store
from graphmem.settings import load_settings

pytestmark = pytest.mark.anyio


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def gm(project: Path) -> Iterator[GraphMemory]:
    store = open_store(project / ".graphmem", embedder=HashEmbedder())
    try:
        yield store
    finally:
        store.close()


async def listed(gm: GraphMemory, mode: ToolMode | None = None) -> dict[str, Any]:
    async with Client(build_server(gm, mode)) as client:
        return {tool.name: tool for tool in (await client.list_tools()).tools}


# -- modes -----------------------------------------------------------------------------------------


async def test_each_mode_lists_its_tools_and_the_setting_picks_the_mode(
    gm: GraphMemory, tmp_path: Path
) -> None:
    assert set(await listed(gm, "full")) == ALL_TOOLS
    assert set(await listed(gm, "grouped")) == GROUPED_TOOLS
    assert set(await listed(gm, "core")) == CORE_TOOLS
    assert set(await listed(gm)) == ALL_TOOLS  # the default
    with open_store(tmp_path / "core-store", embedder=HashEmbedder(), mcp_tools="core") as core:
        assert set(await listed(core)) == CORE_TOOLS
    environ = {"GRAPHMEM_MCP_TOOLS": "grouped"}
    assert load_settings(tmp_path / "x", environ=environ).mcp_tools == "grouped"


@pytest.mark.parametrize("mode", ["full", "grouped", "core"])
async def test_the_instructions_name_only_tools_the_client_can_offer(
    gm: GraphMemory, mode: ToolMode
) -> None:
    """A client lets its model call only the tools it listed: instructions that send the model
    to an unlisted tool would send it nowhere."""
    server = build_server(gm, mode)
    offered = {tool.name for tool in await server.list_tools()}
    actions = {a for group in GROUPS if group.name in offered for a in group.actions}
    named = set(re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", server.instructions or ""))
    assert named & ALL_TOOLS <= offered | actions, mode
    if mode != "full":  # and a short list is named whole
        assert offered <= set(re.findall(r"\b[a-z_]+\b", server.instructions or "")), mode


def test_every_full_tool_is_one_action_of_one_grouped_tool() -> None:
    actions = [tool for group in GROUPS for tool, _ in group.actions.values()]
    assert sorted(actions) == sorted(ALL_TOOLS)
    assert set(ACTION_OF) == ALL_TOOLS


@pytest.mark.parametrize("mode", ["grouped", "core"])
async def test_full_names_are_served_in_every_mode(gm: GraphMemory, mode: ToolMode) -> None:
    async with Client(build_server(gm, mode)) as client:
        stored = await client.call_tool("store_memory", {"content": "Deploys go through ArgoCD"})
        assert not stored.is_error, error_text(stored)
        decision = await client.call_tool(
            "store_decision", {"decision": "Use pnpm", "rationale": "disk space"}
        )
        assert not decision.is_error, error_text(decision)
        for tool, arguments in [
            ("recall_memory", {"query": "how do we deploy"}),
            ("get_memory", {"id": (stored.structured_content or {})["id"]}),
            ("list_memories", {"kind": "decision"}),
            ("knowledge_timeline", {"query": "pnpm"}),
            ("cypher_query", {"query": "MATCH (m:Memory) RETURN count(m)"}),
        ]:
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, f"{tool} in {mode} mode: {error_text(result)}"


async def test_a_grouped_call_answers_as_its_full_tool_does(gm: GraphMemory) -> None:
    async with Client(build_server(gm, "grouped")) as client:
        stored = await call(client, "memory", action="store", content="Deploys go through ArgoCD")
        fetched = await call(client, "memory", action="get", id=stored["id"])
        recalled = await call(client, "memory", action="recall", query="ArgoCD deploys")
    async with Client(build_server(gm, "full")) as client:
        assert fetched == await call(client, "get_memory", id=stored["id"])
        assert recalled == await call(client, "recall_memory", query="ArgoCD deploys")


async def test_a_wrong_action_is_a_tool_error_that_lists_the_actions(gm: GraphMemory) -> None:
    async with Client(build_server(gm, "grouped")) as client:
        text = await fail(client, "memory", action="forget")
        assert "store, recall, get, update, delete, list, stats" in text
        assert "action must be one of" in await fail(client, "graph", query="x")
        wrong = await fail(client, "memory", action="store", content="x", query="y")
        assert "query" in wrong  # the store action's own arguments, strict as store_memory's


# -- grouped schemas -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "valid"),
    [
        ("memory", {"action": "store", "content": "x", "tags": ["a"]}, True),
        ("memory", {"action": "store"}, False),  # content is required for store
        ("memory", {"action": "store", "content": "x", "query": "y"}, False),  # recall's argument
        ("memory", {"action": "store", "content": "x", "importance": 2}, False),
        ("memory", {"action": "recall", "query": "q", "limit": 3, "detail": "full"}, True),
        ("memory", {"action": "recall", "query": "q", "detail": "everything"}, False),
        ("memory", {"action": "recall"}, False),
        ("memory", {"action": "store", "content": "x", "title": None}, False),  # leave it out
        ("memory", {"action": "get", "id": "m"}, True),
        ("memory", {"action": "delete", "id": "m"}, True),
        ("memory", {"action": "delete", "id": "m", "content": "x"}, False),
        ("memory", {"action": "stats"}, True),
        ("memory", {"action": "stats", "id": "x"}, False),
        ("memory", {"action": "forget"}, False),
        ("memory", {"content": "no action"}, False),
        (
            "knowledge",
            {"action": "verify", "id": "m", "method": "read it", "status": "failed"},
            True,
        ),
        (
            "knowledge",
            {"action": "verify", "id": "m", "method": "read it", "status": "fine"},
            False,
        ),
        ("knowledge", {"action": "bank_view", "view": "dead_ends", "limit": 5}, True),
        ("knowledge", {"action": "drift_scan"}, True),
        ("knowledge", {"action": "similar_incidents", "query": "502s", "limit": 3}, True),
        ("knowledge", {"action": "similar_incidents", "query": "502s", "view": "x"}, False),
        (
            "knowledge",
            {"action": "store_decision", "decision": "d", "rationale": "r", "status": "failed"},
            False,  # a verification's status, not a decision's
        ),
        ("knowledge", {"action": "timeline", "id": "m"}, True),
        ("graph", {"action": "multihop", "query": "why", "max_hops": 9}, False),
        ("session", {"action": "review", "status": None}, True),  # null: any status
        ("steward", {"action": "inbox", "status": None, "kind": "orphan_entity"}, True),
        ("steward", {"action": "inbox", "kind": "no_such_kind"}, False),
        ("steward", {"action": "policy", "updates": {"auto_apply": ["exact_duplicate"]}}, True),
        ("steward", {"action": "policy", "updates": {"auto_apply": ["no_such_kind"]}}, False),
        ("steward", {"action": "policy", "updates": {"stale_dayz": 3}}, False),
        ("steward", {"action": "demote_layer", "id": "m", "layer": "surface"}, True),
        ("admin", {"action": "cypher", "query": "MATCH (m) RETURN m"}, True),
        ("admin", {"action": "cypher"}, False),
    ],
)
async def test_a_grouped_input_schema_holds_each_action_to_its_own_arguments(
    gm: GraphMemory, tool: str, arguments: dict[str, Any], valid: bool
) -> None:
    schema = (await listed(gm, "grouped"))[tool].input_schema
    validator = Draft202012Validator(schema)
    assert validator.is_valid(arguments) is valid, list(validator.iter_errors(arguments))


async def test_what_the_model_reads_of_the_grouped_list_is_at_most_35_percent_of_full(
    gm: GraphMemory,
) -> None:
    """Deterministic sizes (python -m eval mcp-tools measures and records them): the names,
    descriptions and input schemas clients hand the model, and the whole tools/list result."""
    sizes = await measure_modes(gm)
    full = sizes["full"]
    assert sizes["grouped"]["model_visible_bytes"] <= 0.35 * full["model_visible_bytes"]
    assert sizes["core"]["model_visible_bytes"] <= 0.15 * full["model_visible_bytes"]
    assert sizes["grouped"]["bytes"] <= 0.2 * full["bytes"]
    assert sizes["core"]["bytes"] <= 0.15 * full["bytes"]


async def test_a_grouped_schema_writes_a_shared_argument_once(gm: GraphMemory) -> None:
    """`context` means the same to every knowledge action that takes it: its hint and its type
    are at the root, and an action's shape only names it."""
    schema = (await listed(gm, "grouped"))["knowledge"].input_schema
    assert schema["properties"]["context"] == {"description": "project or area", "type": "string"}
    shape = schema["if"]  # summarize_context, the first action
    assert shape["properties"] == {
        "action": {"const": "summarize_context"},
        "context": {},
        "limit": {},
        "detail": {},
    }
    assert shape["additionalProperties"] is False


async def test_a_grouped_schema_carries_only_the_hints_of_its_group(gm: GraphMemory) -> None:
    """The full tools' argument descriptions stay in full mode: a grouped schema's descriptions
    are its group's hints, each on an argument the group takes."""
    tools = await listed(gm, "grouped")
    for group in GROUPS:
        schema = tools[group.name].input_schema
        described = {
            name: prop["description"]
            for name, prop in schema["properties"].items()
            if "description" in prop
        }
        assert {**HINTS, **group.hints}.items() >= described.items(), group.name
        assert set(group.hints) <= set(described), group.name
        assert json.dumps(schema).count('"description"') == len(described), group.name


async def test_actions_that_take_the_same_arguments_share_one_shape(gm: GraphMemory) -> None:
    schema = (await listed(gm, "grouped"))["memory"].input_schema
    shapes = []
    node = schema
    while isinstance(node, dict):
        shapes.append(node["if"]["properties"]["action"])
        node = node["else"]
    assert node is False  # a call that matches no action's shape is refused
    assert {"enum": ["get", "delete"]} in shapes
    assert len(shapes) == len(GROUPS[0].actions) - 1


# -- compact results -------------------------------------------------------------------------------


async def test_compact_text_blocks_stay_within_content_plus_120_bytes_a_hit(
    gm: GraphMemory, project: Path
) -> None:
    fill(gm, project)
    async with Client(build_server(gm, "full")) as client:
        for family, tool, arguments in CALLS:
            full = await call(client, tool, **arguments, detail="full")
            compact = await client.call_tool(tool, arguments)
            text = "".join(getattr(block, "text", "") for block in compact.content)
            shown = contents(tool, full)
            assert shown, f"{family}: the fixture gives it nothing to show"
            budget = sum(len(c.encode()) for c in shown) + 120 * len(shown)
            assert len(text.encode()) <= budget, f"{family}: {len(text.encode())} > {budget}"
            assert len(text.splitlines()) <= len(shown) + 4  # a line a hit, and a few more
            assert not text.lstrip().startswith("{"), f"{family}: the text is JSON again"
            structured = json.dumps(compact.structured_content)
            smaller = 0.8 if tool == "semantic_search" else 0.5  # sections were lean already
            assert len(structured) < smaller * len(json.dumps(full)), family


async def test_long_content_is_cut_and_get_memory_still_has_it_whole(gm: GraphMemory) -> None:
    long = "The billing export " + "walks every invoice of the month and " * 20 + "then stops."
    async with Client(build_server(gm)) as client:
        stored = await call(client, "store_memory", content=long, title="Month-end job")
        (hit,) = (await call(client, "recall_memory", query="billing export invoices"))["hits"]
        assert hit["truncated"] is True and hit["content"].endswith("…")
        assert len(hit["content"]) <= 301 and long.startswith(hit["content"][:-1])
        assert hit["title"] == "Month-end job"  # the content does not say it
        assert (await call(client, "get_memory", id=stored["id"]))["content"] == long
