"""The graph tools over MCP: a client backfills extraction, lists and merges entities, and asks
a multi-hop question whose answer carries its path."""

from __future__ import annotations

import pytest
from mcp import Client
from tool_calls import call, fail

from graphmem.service import GraphMemory

pytestmark = pytest.mark.anyio


async def test_graph_tools_are_listed_with_honest_hints(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    for name in ("recall_multihop", "list_entities"):
        assert tools[name].annotations.read_only_hint is True
    assert tools["merge_entities"].annotations.destructive_hint is True
    for name in (
        "add_entity_alias", "remove_entity_alias", "rename_entity", "split_entity",
        "apply_glossary",
    ):  # fmt: skip
        assert tools[name].annotations.read_only_hint is False
    assert tools["index_triples"].annotations.read_only_hint is False


async def test_backfill_then_multihop_returns_the_path(client: Client, gm: GraphMemory) -> None:
    gm.remember("The billing migration caused an index lock on the orders table.")
    gm.remember("The index lock was mitigated by the rollback runbook.")
    report = await call(client, "index_triples", limit=10)
    assert report["memories"] == 2 and report["remaining"] == 0
    entities = await call(client, "list_entities", query="lock")
    assert [e["id"] for e in entities["entities"]] == ["index lock"]
    result = await call(client, "recall_multihop", query="billing migration", seed_k=1)
    walked = [h for h in result["hits"] if not h.get("seed")]  # compact: seed only when true
    assert walked and "index lock" in walked[0]["path_text"]


async def test_merge_entities_and_its_errors(client: Client, gm: GraphMemory) -> None:
    gm.remember("The api uses Postgres.")
    gm.remember("The api uses PostgreSQL.")
    await call(client, "index_triples")
    merged = await call(client, "merge_entities", primary="postgresql", duplicates=["postgres"])
    assert merged["merged"] == ["postgres"]
    assert "no entity" in await fail(
        client, "merge_entities", primary="postgresql", duplicates=["x"]
    )
    assert "max_hops" in await fail(client, "recall_multihop", query="api", max_hops=7)


async def test_entity_corrections_are_undone_by_the_steward_undo_tool(
    client: Client, gm: GraphMemory
) -> None:
    first = gm.remember("Mercury deploys the billing-worker.")
    gm.remember("Mercury owns the ledger service.")
    await call(client, "index_triples")
    merged = await call(client, "merge_entities", primary="mercury", duplicates=["billing-worker"])
    undone = await call(client, "steward_undo", id=merged["audit_id"])
    assert undone["undone"] == [merged["audit_id"]]
    assert gm.entity_page("billing-worker").memories[0].id == first.id
    alias = await call(client, "add_entity_alias", entity_id="mercury", alias="Hg")
    assert alias["aliases"] == ["hg"]
    assert "merge" in await fail(
        client, "add_entity_alias", entity_id="mercury", alias="billing-worker"
    )
    split = await call(client, "split_entity", entity_id="mercury", memory_ids=[first.id])
    assert split["new_entity_id"] == "mercury~2" and split["memories"] == [first.id]
    renamed = await call(client, "rename_entity", entity_id="mercury~2", name="Mercury ops")
    assert renamed["previous"] == "Mercury"


async def test_apply_glossary_shows_then_applies_the_projects_names(
    client: Client, gm: GraphMemory
) -> None:
    gm.remember("The api uses Postgres.")
    gm.remember("The api uses PostgreSQL.")
    await call(client, "index_triples")
    (gm.path.parent / "graphmem.aliases.yaml").write_text("PostgreSQL: [Postgres]\n")
    planned = await call(client, "apply_glossary", dry_run=True)
    assert planned["dry_run"] and planned["merged"][0]["merged"] == "postgres"
    assert gm.entity_page("postgres").mentions == 1  # nothing written
    applied = await call(client, "apply_glossary")
    assert applied["run"] and applied["merged"][0]["audit_id"] in applied["audit_ids"]
    assert gm.entity_page("postgresql").mentions == 2
    undone = await call(client, "steward_undo", id=applied["run"])
    assert undone["undone"] == applied["audit_ids"]
    assert gm.entity_page("postgres").mentions == 1
