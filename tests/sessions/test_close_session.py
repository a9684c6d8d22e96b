"""Closing a session: its summary read statement by statement, one planned action each, applied
or queued by the session's mode, and a review queue that records every resolution."""

from __future__ import annotations

import pytest

from graphmem.errors import InvalidInput
from graphmem.service import GraphMemory
from graphmem.sessions.statements import infer_mode, statement_kind, statements

SUMMARY = """\
Worked on the session store today.
- We decided to keep user sessions in Postgres with a 30 day expiry
- Tried pgbouncer in transaction mode but it didn't work because of prepared statements
- Note that the staging database listens on port 5433, not 5432
- TODO: add an alert on the session table's size
"""


def actions(plan: object) -> list[tuple[str, str]]:
    return [(a.statement_kind, a.action) for a in plan.actions]  # type: ignore[attr-defined]


def test_a_summary_splits_into_its_bullets_and_sentences() -> None:
    found = statements("Fixed the build. Then we went home.\n- a bullet that stands alone\n\n- ok")

    assert found == ["Fixed the build.", "Then we went home.", "a bullet that stands alone"]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("We decided to use Kafka for the audit log", "decision"),
        ("We switched the cache to Redis last week", "decision"),
        ("Tried a bigger pool but it didn't help", "dead_end"),
        ("The checkout API had an outage of 20 minutes", "incident"),
        ("Run `make migrate` before deploying the API", "runbook_step"),
        ("Beware: the staging certs expire on Fridays", "caveat"),
        ("Migrated the orders table to the new schema", "migration_note"),
        ("Need to rotate the API keys next week", "todo"),
        ("The ledger service is written in Go", "fact"),
        ("We have several services in staging", "fact"),  # "several" is not "sev"
    ],
)
def test_each_statement_gets_its_kind_by_whole_words(text: str, kind: str) -> None:
    assert statement_kind(text) == kind


@pytest.mark.parametrize(
    ("summary", "mode"),
    [
        ("SEV2 outage in checkout: paged at 3am, rolled back the deploy", "incident"),
        ("Migrated orders to the new schema; backfill ran for two hours", "migration"),
        ("Refactored the auth module and removed unused helpers; cleanup only", "cleanup"),
        ("Investigated options for queues; compared approaches and prototyped one", "research"),
        ("Added retries to the payment client", "coding"),
        ("Reviewed several pull requests", "coding"),
    ],
)
def test_the_mode_is_inferred_from_whole_words(summary: str, mode: str) -> None:
    assert infer_mode(summary) == mode


def test_a_dry_run_plans_without_storing_anything(gm: GraphMemory) -> None:
    plan = gm.close_session(SUMMARY)

    assert plan.dry_run and plan.mode == "coding" and plan.mode_inferred
    assert actions(plan) == [
        ("fact", "raw_only"),
        ("decision", "new"),
        ("dead_end", "new"),
        ("caveat", "new"),
        ("todo", "raw_only"),
    ]
    assert all(a.rationale and 0 <= a.confidence <= 1 for a in plan.actions)
    assert gm.stats().total == 0


def test_closing_applies_low_risk_actions_and_links_them_to_the_session(gm: GraphMemory) -> None:
    plan = gm.close_session(SUMMARY, dry_run=False, auto_apply_low_risk=True, client="claude-code")

    stored = {a.statement_kind: a.memory_id for a in plan.actions if a.action == "new"}
    assert all(a.applied for a in plan.actions)
    assert gm.get(stored["dead_end"]).kind == "dead_end"
    assert gm.get(stored["caveat"]).tags == ["caveat"]
    summary = gm.get(plan.summary_id or "")
    assert summary.kind == "summary" and "TODO" in summary.content
    linked = gm.cypher(
        "MATCH (m:Memory)-[:IN_SESSION]->(s:Session {id: $s}) RETURN count(m), s.client, s.mode",
        {"s": plan.session_id},
    ).rows
    assert linked == [[4, "claude-code", "coding"]]


def test_closing_the_same_session_again_stores_nothing_twice(gm: GraphMemory) -> None:
    first = gm.close_session(SUMMARY, dry_run=False, auto_apply_low_risk=True, session_id="s1")
    total = gm.stats().total

    again = gm.close_session(SUMMARY, dry_run=False, auto_apply_low_risk=True, session_id="s1")

    assert [a.action for a in again.actions if a.statement_kind != "todo"][1:] == ["merge_into"] * 3
    assert again.summary_id == first.summary_id
    assert gm.stats().total == total


def test_without_auto_apply_every_change_waits_in_the_review_queue(gm: GraphMemory) -> None:
    plan = gm.close_session(SUMMARY, dry_run=False)

    queue = gm.review_session_changes(session=plan.session_id)
    assert queue.pending == len(queue.items) == 5
    assert gm.stats().total == 1  # only the session's own summary


def test_a_research_session_applies_nothing_on_its_own(gm: GraphMemory) -> None:
    plan = gm.close_session(SUMMARY, mode="research", dry_run=False, auto_apply_low_risk=True)

    assert not any(a.applied for a in plan.actions)
    assert gm.review_session_changes().pending == 5


def test_an_incident_session_never_merges_on_its_own(gm: GraphMemory) -> None:
    gm.remember("Note that the staging database listens on port 5433, not 5432", kind="note")
    plan = gm.close_session(
        "Incident in staging.\n- Note that the staging database listens on port 5433, not 5432",
        mode="incident", dry_run=False, auto_apply_low_risk=True,
    )  # fmt: skip

    merge = next(a for a in plan.actions if a.action == "merge_into")
    assert not merge.applied and merge.review_item


def test_accepting_an_item_applies_it_and_records_who_and_when(gm: GraphMemory) -> None:
    plan = gm.close_session(SUMMARY, dry_run=False)
    decision = next(a for a in plan.actions if a.statement_kind == "decision")

    report = gm.resolve_review_item(decision.review_item or "", "accept", "right call", actor="ana")

    assert report.resolved[0].status == "accepted" and report.resolved[0].resolved_by == "ana"
    assert gm.get(report.memories[0]).kind == "decision"
    audit = gm.cypher(
        "MATCH (a:Audit) WHERE a.item = $i RETURN a.actor, a.action ORDER BY a.at",
        {"i": decision.review_item},
    ).rows
    assert audit == [["ana", "store"], ["ana", "review:accept"]]


def test_a_rejected_change_is_never_proposed_again(gm: GraphMemory) -> None:
    plan = gm.close_session(SUMMARY, dry_run=False)
    for item in gm.review_session_changes(session=plan.session_id).items:
        gm.resolve_review_item(item.id, "reject", "noise")

    again = gm.close_session(SUMMARY, dry_run=False)

    assert again.skipped == 5 and not again.actions
    assert gm.review_session_changes().pending == 0


def test_resolving_the_queue_by_filter_lists_first_then_applies(gm: GraphMemory) -> None:
    plan = gm.close_session(SUMMARY, dry_run=False)

    listed = gm.resolve_review_queue("accept", session=plan.session_id, risk="auto")
    done = gm.resolve_review_queue("accept", session=plan.session_id, risk="auto", dry_run=False)

    assert listed.dry_run and len(listed.resolved) == 5
    assert {i.status for i in done.resolved} == {"accepted"}
    assert gm.review_session_changes().pending == 0


def test_a_resolved_item_cannot_be_resolved_again(gm: GraphMemory) -> None:
    plan = gm.close_session(SUMMARY, dry_run=False)
    item = plan.actions[1].review_item or ""
    gm.resolve_review_item(item, "reject")

    with pytest.raises(InvalidInput, match="already rejected"):
        gm.resolve_review_item(item, "accept")


def test_private_text_and_secrets_are_never_stored(gm: GraphMemory) -> None:
    plan = gm.close_session(
        "- We decided to call the billing API with the token <private>hunter2-internal</private>\n"
        "- Note that api_key: sk_live_51Habcdefghijklmnopqrstuv is only for staging",
        dry_run=False, auto_apply_low_risk=True,
    )  # fmt: skip

    everything = " ".join(gm.get(a.memory_id or "").content for a in plan.actions)
    everything += gm.get(plan.summary_id or "").content
    assert "hunter2-internal" not in everything
    assert "sk_live_51Habcdefghijklmnopqrstuv" not in everything


def test_an_empty_summary_or_an_unknown_mode_is_invalid_input(gm: GraphMemory) -> None:
    with pytest.raises(InvalidInput):
        gm.close_session("  ")
    with pytest.raises(InvalidInput, match="mode"):
        gm.close_session("Added retries", mode="party")
