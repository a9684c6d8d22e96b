"""A tour of every MCP tool, for any client: each tool called with valid arguments (with and without
its optional fields, so results hold nulls and values in the same places) and a few with invalid
ones, which must be clean tool errors after which the server goes on serving.

The tour is written once and driven through every client the tests run: the Python SDK's in-process
`Client` (with the output schemas checked by `jsonschema`, formats included) and the official
TypeScript SDK client (which checks them with Ajv and ajv-formats) over stdio and streamable HTTP;
in each tool mode (`through_groups` makes every call an action of a grouped tool) and in both
details of the results (`detail="full"` is passed to every tool that takes it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from graphmem.mcp.grouped import GROUPS

ALL_TOOLS = frozenset(
    {
        "store_memory", "recall_memory", "get_memory", "update_memory", "delete_memory",
        "list_memories", "memory_stats", "cypher_query", "mark_outdated", "merge_duplicates",
        "store_decision", "store_dead_end", "store_incident", "store_runbook", "store_postmortem",
        "search_runbooks", "recall_similar_incidents", "promote_to_canonical",
        "list_canonical_knowledge", "recall_canonical_knowledge", "summarize_project_context",
        "project_bank_view", "recall_as_of", "knowledge_timeline", "cite_source", "verify_entry",
        "verification_candidates", "drift_scan", "recall_multihop", "list_entities",
        "merge_entities", "add_entity_alias", "remove_entity_alias", "rename_entity",
        "split_entity", "apply_glossary", "index_triples", "index_documents", "semantic_search",
        "expand_section", "repo_list", "repo_read", "repo_search", "close_session",
        "review_session_changes", "resolve_review_item", "accept_session_changes",
        "resolve_review_queue", "steward_run", "steward_inbox", "steward_inbox_resolve",
        "steward_policy", "steward_status", "steward_report", "steward_undo", "sweep_archive",
        "recount_references", "conflicts_report", "sediment_cycle", "promote_sediment",
        "demote_sediment",
    }
)  # fmt: skip
DETAIL_TOOLS = frozenset(
    {
        "recall_memory", "list_memories", "knowledge_timeline", "summarize_project_context",
        "project_bank_view", "search_runbooks", "recall_similar_incidents",
        "recall_canonical_knowledge", "list_canonical_knowledge", "recall_as_of",
        "recall_multihop", "verification_candidates", "semantic_search",
    }
)  # fmt: skip
GROUPED_TOOLS = frozenset(group.name for group in GROUPS)
CORE_TOOLS = frozenset({"store_memory", "recall_memory", "summarize_project_context"})
ACTION_OF = {
    tool: (group.name, action) for group in GROUPS for action, (tool, _) in group.actions.items()
}
BANK_VIEWS = (
    "decisions", "runbooks", "incidents", "caveats", "migrations", "dead_ends",
    "canonical_overview", "review_queue",
)  # fmt: skip
CITED_FILE = "docs/deploy.md"


@dataclass(frozen=True)
class Outcome:
    """What a client made of one call: `accepted` is False when the client itself threw (a result
    that breaks the tool's output schema, a protocol error); `is_error` is a tool error."""

    accepted: bool
    is_error: bool = False
    structured: dict[str, Any] | None = None
    text: str = ""


Caller = Callable[[str, dict[str, Any]], Awaitable[Outcome]]
Detail = Literal["compact", "full"]


def through_groups(call: Caller) -> Caller:
    """A caller that makes each call of a full tool as the action of its grouped tool."""

    async def grouped(tool: str, arguments: dict[str, Any]) -> Outcome:
        group, action = ACTION_OF[tool]
        return await call(group, {"action": action, **arguments})

    return grouped


@dataclass
class Tour:
    """Every call made and what came back, for the checks that follow a tour."""

    results: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)

    @property
    def tools_called(self) -> set[str]:
        return {tool for tool, _ in self.results} | {tool for tool, _ in self.errors}


RUNBOOK = """\
---
title: billing-api 502s
---
## Check the pool

Look at the connection pool saturation panel.

## Raise the pool

Set `POOL_SIZE` to 40 and redeploy.
"""


def prepare_project(root: Path) -> None:
    """The files the tour cites and indexes; the project is the folder that holds the data dir."""
    (root / CITED_FILE).parent.mkdir(parents=True, exist_ok=True)
    (root / CITED_FILE).write_text("# Deploy\n\nArgoCD syncs the billing-api chart.\n")
    (root / "docs" / "runbooks").mkdir(exist_ok=True)
    (root / "docs" / "runbooks" / "billing-502.md").write_text(RUNBOOK)
    (root / "graphmem.aliases.yaml").write_text("Stripe: [Stripe Payments]\n")


async def run_tour(call: Caller, detail: Detail = "compact") -> Tour:
    """Every tool, called through `call`; `detail="full"` asks every tool that takes it for whole
    records (compact, the default, is not passed: the tools' default is what is toured)."""
    tour = Tour()

    async def ok(tool: str, **arguments: Any) -> dict[str, Any]:
        if detail == "full" and tool in DETAIL_TOOLS:
            arguments["detail"] = "full"
        outcome = await call(tool, arguments)
        assert outcome.accepted, f"the client rejected {tool}'s result: {outcome.text}"
        assert not outcome.is_error, f"{tool}({arguments}) failed: {outcome.text}"
        assert isinstance(outcome.structured, dict), f"{tool} sent no structured content"
        tour.results.append((tool, outcome.structured))
        return outcome.structured

    async def refused(tool: str, **arguments: Any) -> None:
        outcome = await call(tool, arguments)
        assert outcome.accepted, f"the client threw on {tool}'s error: {outcome.text}"
        assert outcome.is_error, f"{tool}({arguments}) should be a tool error"
        # a crash reaches the client as this bare line; a clean error says what was wrong
        assert outcome.text.strip() != f"Error executing tool {tool}", f"{tool} crashed"
        tour.errors.append((tool, outcome.text))

    # -- plain memories: minimal and full, a retry, bad input -----------------------------------
    bare = await ok("store_memory", content="Staging Postgres runs on port 5433.")
    full = await ok(
        "store_memory",
        content="billing-api retries Stripe webhooks 5 times with exponential backoff (PAY-12).",
        title="Stripe webhook retries",
        type="semantic",
        kind="note",
        tags=["billing", "stripe"],
        context="payments",
        service="billing-api",
        importance=0.8,
        metadata={"ticket": "PAY-12", "links": ["https://example.invalid/pay-12"]},
        idempotency_key="tour-stripe-retries",
    )
    retry = await ok(
        "store_memory",
        content="billing-api retries Stripe webhooks 5 times with exponential backoff (PAY-12).",
        title="Stripe webhook retries",
        type="semantic",
        kind="note",
        tags=["billing", "stripe"],
        context="payments",
        service="billing-api",
        importance=0.8,
        metadata={"ticket": "PAY-12", "links": ["https://example.invalid/pay-12"]},
        idempotency_key="tour-stripe-retries",
    )
    assert retry["id"] == full["id"] and retry["deduplicated"] is True
    await refused("store_memory", content="")
    await refused("store_memory", content="misspelt argument", tag=["x"])
    await refused("store_memory", content="too important", importance=2)
    await refused("store_memory", content="something else", idempotency_key="tour-stripe-retries")

    await ok("get_memory", id=full["id"])
    await refused("get_memory", id="no-such-memory")
    await ok("update_memory", id=bare["id"], importance=0.9, tags=["postgres"])
    await refused("update_memory", id=bare["id"])

    page = await ok("list_memories", limit=1)
    assert page["next_cursor"]
    await ok("list_memories", limit=1, cursor=page["next_cursor"])
    await ok("list_memories", kind="note", service="billing-api", tags=["billing"])
    await ok("memory_stats")
    await ok("cypher_query", query="MATCH (m:Memory) RETURN m.id, m.created_at, m LIMIT 2")
    await refused("cypher_query", query="MATCH (m:Memory) DELETE m")

    # -- knowledge over time: a dead end, a decision replaced by another, records ----------------
    dead_end = await ok(
        "store_dead_end",
        attempted_approach="Caching billing invoices in Redis",
        why_failed="Redis evicted invoices under memory pressure",
        alternative="Keep invoices in Postgres",
        service="billing-api",
    )
    old = await ok(
        "store_decision",
        decision="Invoices live in Redis",
        rationale="fast invoice lookups for billing-api",
        tags=["invoices"],
    )
    new = await ok(
        "store_decision",
        decision="Invoices live in Postgres",
        rationale="Redis evicted invoices under load; Postgres keeps them",
        consequences="one more table to migrate",
        status="accepted",
        avoids=[dead_end["id"]],
        title="Invoices in Postgres",
        tags=["invoices"],
        context="payments",
        service="billing-api",
        importance=0.9,
        idempotency_key="tour-invoices-postgres",
    )
    await refused("store_decision", decision="d", rationale="r", avoids=["no-such-memory"])
    await ok(
        "mark_outdated", id=old["id"], reason="Redis evicted invoices", superseded_by=new["id"]
    )
    await ok("knowledge_timeline", id=new["id"])
    await ok("knowledge_timeline", query="where do invoices live")
    await refused("knowledge_timeline")

    await ok("recall_memory", query="where do invoices live", explain=True)
    await ok("recall_memory", query="Redis invoices", limit=3, kind="decision", tags=["invoices"])
    await refused("recall_memory", query="")
    await refused("recall_memory", query="invoices", limit=0)
    await ok("recall_as_of", query="where do invoices live", as_of="2000-01-01")
    await ok("recall_as_of", query="where do invoices live", as_of="2100-01-01T00:00:00Z")
    await refused("recall_as_of", query="invoices", as_of="last tuesday")

    incident = await ok(
        "store_incident",
        summary="billing-api returned 502 for 20 minutes",
        impact="checkout failed for EU customers",
        root_cause="connection pool exhausted",
        resolution="raised the pool size",
        severity="sev2",
        occurred_at="2026-11-30T10:00:00",
        service="billing-api",
    )
    assert incident["created_at"].startswith("2026-11-30T10:00:00")
    await refused("store_incident", summary="x", severity="sev9")
    await ok("store_incident", summary="Stripe webhooks queued for an hour")
    runbook = await ok(
        "store_runbook",
        trigger="billing-api returns 502",
        steps=["check the connection pool", "raise the pool size", "watch the error rate"],
        verification="502 rate under 0.1%",
        rollback="lower the pool size again",
        cites=[CITED_FILE],
        service="billing-api",
        importance=0.8,
    )
    await refused("store_runbook", trigger="x", steps=[])
    await ok(
        "store_postmortem",
        summary="billing-api 502s",
        root_cause="connection pool exhausted",
        action_items=["alert on pool saturation"],
        incident_id=incident["id"],
    )
    await ok("store_postmortem", summary="Stripe backlog", root_cause="a stuck worker")
    await ok("search_runbooks", query="502 from billing-api")
    await ok("recall_similar_incidents", query="checkout failing with 502")

    await ok("promote_to_canonical", id=runbook["id"], owner="platform team")
    await ok("list_canonical_knowledge")
    await ok("list_canonical_knowledge", context="payments", limit=5)
    await ok("recall_canonical_knowledge", query="what to do about 502s")
    await ok("summarize_project_context")
    await ok("summarize_project_context", context="payments", limit=3)
    for view in BANK_VIEWS:
        await ok("project_bank_view", view=view)
    await refused("project_bank_view", view="everything")

    await ok("cite_source", id=full["id"], path=CITED_FILE, section="Deploy")
    await ok("cite_source", id=bare["id"], path=CITED_FILE)
    await refused("cite_source", id=full["id"], path="../outside.md")
    await ok("verify_entry", id=full["id"], method="read the retry config", status="verified")
    await ok(
        "verify_entry",
        id=bare["id"],
        method="psql -p 5433",
        status="needs_update",
        note="it moved to 5434",
    )
    await refused("verify_entry", id=full["id"], method="looked", status="fine")
    await ok("verification_candidates")
    await ok("verification_candidates", days=0, min_importance=0.0, limit=100)
    await ok("drift_scan")

    copy = await ok("store_memory", content="Staging Postgres listens on 5433.")
    await ok("merge_duplicates", primary=bare["id"], duplicates=[copy["id"]], reason="same fact")
    await refused("merge_duplicates", primary=bare["id"], duplicates=["no-such-memory"])

    # -- the entity graph -----------------------------------------------------------------------
    queued = [await ok("store_memory", content=f"ZephyrQueue {verb} billing jobs.")
              for verb in ("retries", "drops")]  # fmt: skip
    await ok("index_triples")
    await ok("index_triples", limit=10, context="payments")
    entities = (await ok("list_entities"))["entities"]
    await ok("list_entities", query="billing", label="service", limit=5)
    await ok("add_entity_alias", entity_id="zephyrqueue", alias="zq")
    await ok("remove_entity_alias", entity_id="zephyrqueue", alias="zq")
    await refused("add_entity_alias", entity_id="no-such-entity", alias="zq")
    await ok("rename_entity", entity_id="zephyrqueue", name="Zephyr Queue")
    await refused("rename_entity", entity_id="zephyrqueue", name="")
    await ok("split_entity", entity_id="zephyrqueue", memory_ids=[queued[0]["id"]],
             name="Zephyr Queue v2")  # fmt: skip
    await refused("split_entity", entity_id="zephyrqueue", memory_ids=["no-such-memory"])
    if len(entities) >= 2:
        await ok("merge_entities", primary=entities[0]["id"], duplicates=[entities[1]["id"]])
    await refused("merge_entities", primary="no-such-entity", duplicates=["neither"])
    await ok("apply_glossary", dry_run=True)
    await ok("apply_glossary")
    await ok("recall_multihop", query="what broke billing-api checkout")
    await ok(
        "recall_multihop",
        query="Stripe webhooks",
        max_hops=1,
        seed_k=3,
        limit=5,
        type="semantic",
        kind="note",
        tags=["billing"],
        context="payments",
    )
    await refused("recall_multihop", query="x", max_hops=9)

    # -- project documents and files ------------------------------------------------------------
    indexed = await ok("index_documents")
    assert "docs/runbooks/billing-502.md" in indexed["added"]
    await ok("index_documents", paths=["docs/runbooks"])
    await refused("index_documents", paths=["no/such/folder"])
    found = await ok("semantic_search", query="how do I raise the connection pool", explain=True)
    hit = found["hits"][0]
    await ok("semantic_search", query="pool", limit=3, source_type="runbook", path_prefix="docs/")
    await refused("semantic_search", query="")
    both = await ok("recall_memory", query="connection pool", scope="all", limit=6)
    assert {item["source"] for item in both["ranking"]} == {"memory", "section"}
    await ok("recall_memory", query="connection pool", scope="docs")
    await refused("recall_memory", query="pool", scope="everything")
    await ok("expand_section", path=hit["path"], section_key=hit["section_key"])
    await ok("expand_section", path="docs/runbooks/billing-502.md")
    await refused("expand_section", path="docs/runbooks/billing-502.md", section_key="nope")
    await ok("repo_list")
    await ok("repo_list", path="docs", pattern="*.md", recursive=True, limit=10)
    await refused("repo_list", path="../..")
    await ok("repo_read", path="docs/runbooks/billing-502.md")
    await ok("repo_read", path=CITED_FILE, start_line=2, end_line=3, max_bytes=1024)
    await refused("repo_read", path="/etc/passwd")
    await ok("repo_search", query="POOL_SIZE")
    await ok(
        "repo_search", query=r"pool\s+size", path="docs", regex=True, case_sensitive=False,
        glob="*.md", limit=5,
    )  # fmt: skip
    await refused("repo_search", query="(a+)+$", regex=True)

    # -- sessions and the review queue -------------------------------------------------------
    summary = (
        "- We decided to page the payments team for billing-api 502s\n"
        "- Tried raising the pool to 80 but it didn't help\n"
        "- TODO: add a pool saturation alert"
    )
    planned = await ok("close_session", summary=summary)
    assert planned["dry_run"] and len(planned["actions"]) == 3
    closed = await ok(
        "close_session", summary=summary, mode="coding", context="payments",
        service="billing-api", session_id="tour-session", dry_run=False,
    )  # fmt: skip
    await refused("close_session", summary="x y z", mode="party")
    queue = await ok("review_session_changes", session="tour-session")
    items = [item["id"] for item in queue["items"]]
    assert len(items) == 3 and closed["summary_id"]
    await ok("review_session_changes", status=None, change="new", limit=5)
    await ok("resolve_review_item", id=items[0], resolution="reject", note="not needed")
    await refused("resolve_review_item", id=items[0], resolution="accept")
    await ok("accept_session_changes", items=[items[1]])
    await refused("accept_session_changes")
    await ok("resolve_review_queue", resolution="defer", session="tour-session")
    await ok(
        "resolve_review_queue", resolution="defer", session="tour-session", change="raw_only",
        risk="auto", note="later", dry_run=False,
    )  # fmt: skip

    # -- the steward: the policy, a dry run, a run that files, the inbox, undo ------------------
    # (an owner process may run the steward on its own schedule meanwhile: nothing applies on
    # its own and the findings are read from the inbox, so the tour holds either way)
    await ok("steward_status")
    await ok("steward_policy")
    policy = await ok(
        "steward_policy", updates={"auto_apply": [], "stale_days": 90, "schedule_hours": 0}
    )
    assert policy["auto_apply"] == [] and policy["stale_days"] == 90
    await refused("steward_policy", updates={"stale_days": 0})
    await refused("steward_policy", updates={"no_such_field": 1})
    await refused("steward_policy", updates={"near_duplicate_cosine": 0.6})  # under duplicates'
    copies = [
        await ok("store_memory", content="Billing exports run nightly at 02:00 UTC.",
                 context="payments"),
        await ok("store_memory", content="billing exports run nightly at 02:00 UTC",
                 context="payments"),
        await ok("store_memory", content="The staging VPN needs the ops certificate."),
        await ok("store_memory", content="the staging VPN needs the ops certificate"),
    ]  # fmt: skip
    ours = {copy["id"] for copy in copies}
    dry = await ok("steward_run")
    assert dry["dry_run"] and dry["found"]["exact_duplicate"] >= 2
    await ok("steward_run", scope="stale", context="payments", service="billing-api")
    await refused("steward_run", scope="everything")
    await ok("steward_run", scope="duplicates", dry_run=False)
    await ok("steward_inbox")
    page = await ok("steward_inbox", kind="exact_duplicate", limit=100, sort="newest")
    exact = [f for f in page["items"] if set(f["targets"]) <= ours]
    assert len(exact) == 2, page["items"]
    await ok("steward_inbox", status=None, kind="exact_duplicate", limit=5, sort="oldest")
    await refused("steward_inbox", kind="everything")
    await refused("steward_inbox", limit=0)
    applied = await ok("steward_inbox_resolve", id=exact[0]["id"], resolution="apply")
    assert applied["status"] == "applied" and applied["resolved_at"]
    await ok("steward_inbox_resolve", id=exact[1]["id"], resolution="dismiss", note="both kept")
    await refused("steward_inbox_resolve", id=exact[0]["id"], resolution="dismiss")
    await refused("steward_inbox_resolve", id="no-such-finding", resolution="apply")
    await ok("steward_report")
    await ok("steward_report", run=applied["run"])
    await refused("steward_report", run="no-such-run")
    await ok("steward_status")
    undone = await ok("steward_undo", id=applied["run"])
    assert undone["findings"] == [applied["id"]] and set(undone["memories"]) <= ours
    again = await ok("steward_undo", id=applied["run"])
    assert again["undone"] == [] and again["skipped"]
    await refused("steward_undo", id="no-such-run")

    # -- sweeping, reference counts, the conflicts report -----------------------------------------
    planned = await ok("sweep_archive")
    assert planned["dry_run"] and planned["run"] is None
    await ok("sweep_archive", dry_run=False)  # nothing here is a year old: nothing to archive
    await refused("sweep_archive", dry_run="perhaps")
    counted = await ok("recount_references")
    assert counted["memories"] > 0 and counted["referenced"] >= 1  # the dead end a decision avoids
    await refused("recount_references", limit=5)
    approach = "Shard the sessions table by tenant id across four Postgres hosts"
    conflicting = {
        (await ok("store_memory", content=approach, kind=kind, context="auth",
                  service="sessions-api"))["id"]
        for kind in ("decision", "dead_end")
    }  # fmt: skip
    report = await ok("conflicts_report")
    assert any(set(c["targets"]) == conflicting for c in report["conflicts"]), report
    await ok("steward_run", scope="conflicts", dry_run=False, context="auth")
    report = await ok("conflicts_report", context="auth", service="sessions-api")
    (filed,) = [c for c in report["conflicts"] if set(c["targets"]) == conflicting]
    assert filed["status"] == "pending" and report["in_inbox"] >= 1
    await refused("conflicts_report", scope="conflicts")

    # -- sedimentation: a cycle, moves by hand, undo ----------------------------------------------
    cycle = await ok("sediment_cycle")
    assert cycle["dry_run"] and cycle["run"] is None and cycle["looked_at"] > 0
    await ok("sediment_cycle", dry_run=False)
    await refused("sediment_cycle", dry_run="perhaps")
    up = await ok("promote_sediment", id=bare["id"], layer="character", note="the tour")
    assert up["to_layer"] == "character" and up["note"] == "the tour"
    down = await ok("demote_sediment", id=bare["id"])
    assert (down["from_layer"], down["to_layer"], down["note"]) == ("character", "semantic", None)
    await refused("promote_sediment", id=bare["id"], layer="bedrock")
    await refused("demote_sediment", id="no-such-memory")
    await ok("steward_undo", id=down["run"])

    gone = await ok("store_memory", content="a scratch note to delete", type="working")
    await ok("delete_memory", id=gone["id"])
    await refused("delete_memory", id=gone["id"])
    return tour
