"""The knowledge tools over MCP, end to end: an in-process client against a real GraphMemory on a
temp project (data dir `<project>/.graphmem`, cited paths relative to `<project>`), embedding with
the hash embedder."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from tool_calls import as_memory, call, fail

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.mcp.server import build_server
from graphmem.service import GraphMemory, open_store

pytestmark = pytest.mark.anyio

KNOWLEDGE_TOOLS = {
    "mark_outdated", "merge_duplicates", "store_decision", "store_dead_end", "store_incident",
    "store_runbook", "store_postmortem", "search_runbooks", "recall_similar_incidents",
    "promote_to_canonical", "list_canonical_knowledge", "recall_canonical_knowledge",
    "summarize_project_context", "project_bank_view", "recall_as_of", "knowledge_timeline",
    "cite_source", "verify_entry", "verification_candidates", "drift_scan",
}  # fmt: skip
READ_ONLY = {
    "search_runbooks", "recall_similar_incidents", "list_canonical_knowledge",
    "recall_canonical_knowledge", "summarize_project_context", "project_bank_view",
    "recall_as_of", "knowledge_timeline", "verification_candidates", "drift_scan",
}  # fmt: skip
DESTRUCTIVE = {"mark_outdated", "merge_duplicates"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def gm(project: Path) -> Iterator[GraphMemory]:
    store = open_store(project / ".graphmem", embedder=HashEmbedder())
    try:
        yield store
    finally:
        store.close()


def now_iso() -> str:
    return datetime.now(UTC).replace(tzinfo=None).isoformat()


def hit_ids(result: dict[str, Any]) -> list[str]:
    return [hit["id"] for hit in result["hits"]]


async def redis_then_postgres(client: Client) -> tuple[dict[str, Any], dict[str, Any], str]:
    """A decision, then its replacement; returns both and a time between them."""
    old = await call(
        client,
        "store_decision",
        decision="Sessions live in Redis",
        rationale="fast session lookups for the web service",
        tags=["sessions"],
    )
    time.sleep(0.02)
    between = now_iso()
    time.sleep(0.02)
    new = await call(
        client,
        "store_decision",
        decision="Sessions live in Postgres",
        rationale="Redis evicted sessions under load; Postgres keeps them",
        tags=["sessions"],
    )
    await call(
        client,
        "mark_outdated",
        id=old["id"],
        reason="Redis evicted sessions under load",
        superseded_by=new["id"],
    )
    return old, new, between


# -- the tool list ---------------------------------------------------------------------------------


async def test_the_server_offers_every_knowledge_tool_with_honest_annotations(
    client: Client,
) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}

    assert set(tools) >= KNOWLEDGE_TOOLS
    for name in KNOWLEDGE_TOOLS:
        tool = tools[name]
        assert tool.description, name
        assert tool.output_schema is not None, name
        assert tool.annotations is not None, name
        assert tool.annotations.open_world_hint is False, name
        assert tool.annotations.read_only_hint is (name in READ_ONLY), name
        assert tool.annotations.destructive_hint is (name in DESTRUCTIVE), name
        assert tool.input_schema.get("additionalProperties") is False, name
    assert tools["store_runbook"].input_schema["required"] == ["trigger", "steps"]


async def test_descriptions_tell_the_model_when_to_use_the_tools(client: Client) -> None:
    tools = {tool.name: tool.description or "" for tool in (await client.list_tools()).tools}

    assert "Before starting work" in tools["summarize_project_context"]
    assert "nobody tries it again" in tools["store_dead_end"]
    assert "as_of" in tools["recall_as_of"]


async def test_the_server_instructions_point_at_project_context_and_dead_ends(
    gm: GraphMemory,
) -> None:
    instructions = build_server(gm).instructions or ""

    assert "summarize_project_context" in instructions
    assert "store_dead_end" in instructions
    assert "mark_outdated" in instructions


# -- supersession, timelines, as-of ---------------------------------------------------------------


async def test_a_replaced_decision_shows_in_the_timeline_oldest_first_with_the_reason(
    client: Client,
) -> None:
    old, new, _ = await redis_then_postgres(client)

    timeline = await call(client, "knowledge_timeline", id=new["id"])

    assert [entry["id"] for entry in timeline["entries"]] == [old["id"], new["id"]]
    first, last = timeline["entries"]
    assert first["superseded_by"] == new["id"]
    assert first["reason"] == "Redis evicted sessions under load"
    assert first["lifecycle"] == "superseded"
    assert first["superseded_at"]
    assert "superseded_by" not in last  # compact: left out, not null
    assert "lifecycle" not in last  # active
    by_query = await call(client, "knowledge_timeline", query="where do sessions live")
    assert [e["id"] for e in by_query["entries"]] == [old["id"], new["id"]]
    full = await call(client, "knowledge_timeline", id=new["id"], detail="full")
    assert [e["memory"]["lifecycle"] for e in full["entries"]] == ["superseded", "active"]
    assert full["entries"][1]["superseded_by"] is None


async def test_mark_outdated_returns_the_retired_memory_with_its_validity_closed(
    client: Client,
) -> None:
    old, _, _ = await redis_then_postgres(client)

    fetched = await call(client, "get_memory", id=old["id"])

    assert fetched["lifecycle"] == "superseded"
    assert fetched["valid_to"] is not None


async def test_mark_outdated_without_a_successor_makes_the_memory_outdated(
    client: Client,
) -> None:
    fact = await call(client, "store_memory", content="The staging cluster runs on GKE")

    retired = await call(client, "mark_outdated", id=fact["id"], reason="staging moved to EKS")

    assert retired["id"] == fact["id"]
    assert retired["lifecycle"] == "outdated"
    assert retired["valid_to"] is not None


async def test_an_outdated_memory_keeps_its_reason_in_the_timeline(client: Client) -> None:
    fact = await call(client, "store_decision", decision="Staging runs on GKE", rationale="x")
    await call(client, "mark_outdated", id=fact["id"], reason="staging moved to EKS")

    timeline = await call(client, "knowledge_timeline", id=fact["id"])

    (entry,) = timeline["entries"]
    assert entry["lifecycle"] == "outdated"
    assert "superseded_by" not in entry
    assert entry["reason"] == "staging moved to EKS"


async def test_recall_points_a_superseded_hit_at_its_successor(client: Client) -> None:
    old, new, _ = await redis_then_postgres(client)

    recalled = await call(client, "recall_memory", query="Sessions live in Redis", limit=5)

    hits = {hit["id"]: hit for hit in recalled["hits"]}
    if old["id"] in hits:  # a superseded memory may rank low, but if it shows it points onward
        assert hits[old["id"]]["superseded_by"] == new["id"]
    assert new["id"] in hits
    assert "superseded_by" not in hits[new["id"]]


async def test_recall_as_of_answers_with_what_was_true_on_each_side_of_the_switch(
    client: Client,
) -> None:
    old, new, between = await redis_then_postgres(client)

    before = await call(client, "recall_as_of", query="where do sessions live", as_of=between)
    after = await call(client, "recall_as_of", query="where do sessions live", as_of=now_iso())

    assert old["id"] in hit_ids(before)
    assert new["id"] not in hit_ids(before)  # not recorded yet then
    assert new["id"] in hit_ids(after)
    assert old["id"] not in hit_ids(after)  # no longer valid
    ancient = await call(client, "recall_as_of", query="sessions", as_of="2000-01-01")
    assert ancient["hits"] == []


async def test_recall_as_of_with_a_date_that_is_not_iso_is_a_tool_error(client: Client) -> None:
    text = await fail(client, "recall_as_of", query="sessions", as_of="last tuesday")

    assert "invalid_input" in text
    assert "last tuesday" in text


# -- dead ends --------------------------------------------------------------------------------------


async def test_a_related_dead_end_is_a_warning_in_recall_memory(client: Client) -> None:
    dead_end = await call(
        client,
        "store_dead_end",
        attempted_approach="Cache user sessions in Redis with LRU eviction",
        why_failed="sessions were evicted under load and users were logged out",
        alternative="keep sessions in Postgres",
        tags=["sessions"],
    )
    assert dead_end["kind"] == "dead_end"

    recalled = await call(client, "recall_memory", query="cache sessions in Redis")

    warnings = [w for w in recalled["warnings"] if w["kind"] == "dead_end"]
    assert warnings, recalled["warnings"]
    assert warnings[0]["id"] == dead_end["id"]
    assert warnings[0]["message"]


async def test_a_decision_that_avoids_a_dead_end_brings_its_warning_along(
    client: Client,
) -> None:
    dead_end = await call(
        client,
        "store_dead_end",
        attempted_approach="Run migrations inside the app at start-up",
        why_failed="two replicas raced and locked the schema",
    )
    decision = await call(
        client,
        "store_decision",
        decision="Migrations run in a one-off deploy job",
        rationale="only one process migrates",
        avoids=[dead_end["id"]],
    )

    recalled = await call(client, "recall_memory", query="deploy job that migrates")

    assert decision["id"] in hit_ids(recalled)
    warned = {w.get("id") for w in recalled["warnings"]}
    assert dead_end["id"] in warned


async def test_a_decision_that_avoids_something_that_is_no_dead_end_is_refused_whole(
    client: Client, gm: GraphMemory
) -> None:
    note = await call(client, "store_memory", content="Redis is fast")

    text = await fail(client, "store_decision", decision="Use Redis", rationale="fast",
                      avoids=[note["id"]])  # fmt: skip

    assert "invalid_input" in text
    assert gm.stats().total == 1  # the decision was not stored either


# -- engineering records ----------------------------------------------------------------------------


async def test_each_record_tool_stores_a_memory_of_its_kind(client: Client) -> None:
    incident = await call(
        client,
        "store_incident",
        summary="Checkout returned 502 for 20 minutes",
        impact="no orders",
        root_cause="gateway pods OOM-killed",
        resolution="raised the memory limit",
        severity="sev2",
        occurred_at="2024-03-12T10:00:00Z",
        service="checkout",
    )
    runbook = await call(
        client,
        "store_runbook",
        trigger="gateway pods are OOM-killed",
        steps=["raise the memory limit in values.yaml", "redeploy with argocd"],
        verification="no 502s in the gateway log",
        rollback="revert the values.yaml change",
    )
    postmortem = await call(
        client,
        "store_postmortem",
        summary="Checkout 502s",
        root_cause="no memory headroom",
        action_items=["alert at 80% memory"],
        incident_id=incident["id"],
    )

    assert (incident["kind"], runbook["kind"], postmortem["kind"]) == (
        "incident",
        "runbook",
        "postmortem",
    )
    assert "502" in incident["content"]
    assert "redeploy with argocd" in runbook["content"]
    found = await call(client, "search_runbooks", query="pods OOM killed")
    assert hit_ids(found)[:1] == [runbook["id"]]
    similar = await call(client, "recall_similar_incidents", query="checkout 502 errors")
    assert incident["id"] in hit_ids(similar)
    assert all(hit["kind"] in ("incident", "postmortem") for hit in similar["hits"])


async def test_store_runbook_with_no_steps_is_a_tool_error_and_stores_nothing(
    client: Client, gm: GraphMemory
) -> None:
    text = await fail(client, "store_runbook", trigger="disk full", steps=[])

    assert "steps" in text
    assert gm.stats().total == 0


async def test_store_incident_with_an_unknown_severity_is_a_tool_error(
    client: Client, gm: GraphMemory
) -> None:
    text = await fail(client, "store_incident", summary="x broke", severity="sev9")

    assert "severity" in text
    assert gm.stats().total == 0


async def test_record_tools_reject_arguments_they_do_not_know(
    client: Client, gm: GraphMemory
) -> None:
    text = await fail(client, "store_dead_end", attempted_approach="a", why_failed="b", reason="c")

    assert "reason" in text
    assert gm.stats().total == 0


async def test_merge_duplicates_keeps_the_primary_and_archives_the_copies(
    client: Client,
) -> None:
    primary = await call(client, "store_memory", content="The CI cache key includes the lockfile")
    copy = await call(client, "store_memory", content="CI cache key is built from the lockfile")

    merged = await call(
        client, "merge_duplicates", primary=primary["id"], duplicates=[copy["id"]], reason="same"
    )

    assert merged["id"] == primary["id"]
    assert (await call(client, "get_memory", id=copy["id"]))["lifecycle"] == "archived"
    recalled = await call(client, "recall_memory", query="CI cache key lockfile")
    assert copy["id"] not in hit_ids(recalled)
    today = await call(client, "recall_as_of", query="CI cache key lockfile", as_of=now_iso())
    assert copy["id"] not in hit_ids(today)  # merged away: no longer valid


# -- canonical knowledge, context, bank views --------------------------------------------------------


async def test_promote_then_list_and_recall_canonical_knowledge(client: Client) -> None:
    fact = await call(
        client, "store_memory", content="Deploys go through ArgoCD", context="platform"
    )
    await call(client, "store_memory", content="Someone deployed by hand once", context="platform")

    promoted = await call(client, "promote_to_canonical", id=fact["id"], owner="platform-team")

    assert promoted["lifecycle"] == "canonical"
    assert promoted["owner"] == "platform-team"
    listed = await call(client, "list_canonical_knowledge")
    assert [m["id"] for m in listed["memories"]] == [fact["id"]]
    scoped = await call(client, "list_canonical_knowledge", context="elsewhere")
    assert scoped["memories"] == []
    recalled = await call(client, "recall_canonical_knowledge", query="how do we deploy")
    assert hit_ids(recalled) == [fact["id"]]


async def test_project_context_puts_canonical_knowledge_first_then_recent(
    client: Client,
) -> None:
    fact = await call(client, "store_memory", content="Deploys go through ArgoCD", context="web")
    recent = await call(client, "store_memory", content="Rotated the TLS cert", context="web")
    await call(client, "promote_to_canonical", id=fact["id"], owner="platform-team")

    summary = await call(client, "summarize_project_context", context="web")

    assert summary["context"] == "web"
    assert [m["id"] for m in summary["canonical"]] == [fact["id"]]
    assert recent["id"] in [m["id"] for m in summary["recent"]]
    assert isinstance(summary["counts"], dict)


async def test_bank_views_hold_the_records_of_their_kind(client: Client) -> None:
    decision = await call(client, "store_decision", decision="Use pnpm", rationale="disk space")
    dead_end = await call(
        client, "store_dead_end", attempted_approach="yarn pnp", why_failed="tooling broke"
    )
    runbook = await call(client, "store_runbook", trigger="release", steps=["tag", "push"])

    views = {
        view: [m["id"] for m in (await call(client, "project_bank_view", view=view))["memories"]]
        for view in ("decisions", "dead_ends", "runbooks", "incidents", "canonical_overview")
    }

    assert views["decisions"] == [decision["id"]]
    assert views["dead_ends"] == [dead_end["id"]]
    assert views["runbooks"] == [runbook["id"]]
    assert views["incidents"] == []
    assert views["canonical_overview"] == []
    for view in ("caveats", "migrations", "review_queue"):
        shown = await call(client, "project_bank_view", view=view)
        assert shown["view"] == view


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("summarize_project_context", {"limit": 0}),
        ("list_canonical_knowledge", {"limit": 0}),
        ("project_bank_view", {"view": "decisions", "limit": 0}),
        ("search_runbooks", {"query": "x", "limit": 0}),
    ],
)
async def test_a_limit_below_one_is_an_invalid_input_tool_error(
    client: Client, tool: str, arguments: dict[str, Any]
) -> None:
    await call(client, "store_decision", decision="Use pnpm", rationale="disk space")
    fact = await call(client, "store_memory", content="Deploys go through ArgoCD")
    await call(client, "promote_to_canonical", id=fact["id"], owner="platform-team")

    assert "invalid_input" in await fail(client, tool, **arguments)  # as list_memories does


async def test_an_unknown_bank_view_is_a_tool_error_listing_the_views(client: Client) -> None:
    text = await fail(client, "project_bank_view", view="gossip")

    assert "view" in text
    assert "decisions" in text


# -- citations, verification, drift -----------------------------------------------------------------


async def test_drift_scan_reports_a_cited_file_that_changed_then_one_that_was_deleted(
    client: Client, project: Path
) -> None:
    doc = project / "docs" / "sessions.md"
    doc.parent.mkdir()
    doc.write_text("# Sessions\nThey live in Postgres.\n", encoding="utf-8")
    script = project / "prune.sh"
    script.write_text("echo prune\n", encoding="utf-8")
    fact = await call(client, "store_memory", content="Sessions live in Postgres", importance=0.9)
    runbook = await call(
        client, "store_runbook", trigger="disk full", steps=["./prune.sh"], cites=["prune.sh"]
    )

    citation = await call(client, "cite_source", id=fact["id"], path="./docs/sessions.md",
                          section="Sessions")  # fmt: skip

    assert citation["memory_id"] == fact["id"]
    assert citation["path"] == "docs/sessions.md"  # `./` or not, the same project path
    assert citation["section"] == "Sessions"
    assert len(citation["sha256"]) == 64
    clean = await call(client, "drift_scan")
    assert clean["items"] == []
    assert clean["checked"] == 2

    doc.write_text("# Sessions\nThey live in Redis again.\n", encoding="utf-8")
    changed = await call(client, "drift_scan")
    assert [(i["memory_id"], i["path"], i["status"]) for i in changed["items"]] == [
        (fact["id"], "docs/sessions.md", "source_changed")
    ]
    assert changed["items"][0]["recorded_sha256"] == citation["sha256"]
    assert changed["items"][0]["current_sha256"] not in (None, citation["sha256"])

    flagged = await call(client, "verify_entry", id=fact["id"], method="read docs/sessions.md",
                         status="needs_update", note="Redis is back")  # fmt: skip
    assert flagged["verify_status"] == "needs_update"
    assert flagged["verified_at"] is not None
    assert len((await call(client, "drift_scan"))["items"]) == 1  # still not confirmed
    fact_now = "Sessions live in Redis again"
    await call(client, "update_memory", id=fact["id"], content=fact_now)
    verified = await call(client, "verify_entry", id=fact["id"], method="read docs/sessions.md",
                          status="verified")  # fmt: skip
    assert verified["verify_status"] == "verified"
    assert (await call(client, "drift_scan"))["items"] == []  # verified: the new hash is recorded

    script.unlink()
    missing = await call(client, "drift_scan")
    assert [(i["memory_id"], i["path"], i["status"]) for i in missing["items"]] == [
        (runbook["id"], "prune.sh", "source_missing")
    ]
    assert missing["items"][0]["current_sha256"] is None


async def test_verification_candidates_drop_a_memory_once_it_is_verified(client: Client) -> None:
    important = await call(client, "store_memory", content="Backups run at 02:00", importance=0.9)
    await call(client, "store_memory", content="A passing thought", importance=0.2)

    due = await call(client, "verification_candidates")
    assert [m["id"] for m in due["memories"]] == [important["id"]]

    await call(client, "verify_entry", id=important["id"], method="read crontab", status="verified")

    assert (await call(client, "verification_candidates"))["memories"] == []
    strict = await call(client, "verification_candidates", min_importance=0.1)
    assert important["id"] not in [m["id"] for m in strict["memories"]]


async def test_verify_entry_with_an_unknown_status_is_a_tool_error_and_changes_nothing(
    client: Client,
) -> None:
    fact = await call(client, "store_memory", content="Backups run at 02:00")

    text = await fail(client, "verify_entry", id=fact["id"], method="looked", status="probably")

    assert "status" in text
    assert "verified" in text  # the error lists the allowed values
    assert await call(client, "get_memory", id=fact["id"]) == as_memory(fact)


# -- unknown ids ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("mark_outdated", {"id": "01NOSUCHMEMORY0000000000000", "reason": "gone"}),
        ("promote_to_canonical", {"id": "01NOSUCHMEMORY0000000000000", "owner": "me"}),
        ("cite_source", {"id": "01NOSUCHMEMORY0000000000000", "path": "README.md"}),
        (
            "verify_entry",
            {"id": "01NOSUCHMEMORY0000000000000", "method": "m", "status": "verified"},
        ),
        ("knowledge_timeline", {"id": "01NOSUCHMEMORY0000000000000"}),
    ],
)
async def test_an_unknown_id_is_a_not_found_tool_error(
    client: Client, gm: GraphMemory, project: Path, tool: str, arguments: dict[str, Any]
) -> None:
    (project / "README.md").write_text("# project\n", encoding="utf-8")
    await call(client, "store_memory", content="the only memory")

    text = await fail(client, tool, **arguments)

    assert "not_found" in text
    assert "01NOSUCHMEMORY0000000000000" in text
    assert gm.stats().total == 1


async def test_superseding_with_an_unknown_successor_changes_nothing(client: Client) -> None:
    old = await call(client, "store_decision", decision="Use Redis", rationale="fast")

    text = await fail(client, "mark_outdated", id=old["id"], reason="r",
                      superseded_by="01NOSUCHMEMORY0000000000000")  # fmt: skip

    assert "01NOSUCHMEMORY0000000000000" in text
    assert await call(client, "get_memory", id=old["id"]) == as_memory(old)


async def test_merge_with_an_unknown_duplicate_changes_nothing(client: Client) -> None:
    primary = await call(client, "store_memory", content="kept")
    copy = await call(client, "store_memory", content="copy")

    await fail(client, "merge_duplicates", primary=primary["id"],
               duplicates=[copy["id"], "01NOSUCHMEMORY0000000000000"])  # fmt: skip

    assert (await call(client, "get_memory", id=copy["id"]))["lifecycle"] == "active"


async def test_timeline_needs_exactly_one_of_query_and_id(client: Client) -> None:
    fact = await call(client, "store_memory", content="x")

    assert "invalid_input" in await fail(client, "knowledge_timeline")
    assert "invalid_input" in await fail(client, "knowledge_timeline", query="x", id=fact["id"])
