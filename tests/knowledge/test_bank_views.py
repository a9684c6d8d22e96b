"""The knowledge bank's shelves: which memories each view holds, newest first, within a context
and a limit. One store holds a memory at every edge of every view."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.knowledge.models import BANK_VIEWS
from graphmem.models import utcnow
from graphmem.service import GraphMemory, open_store

Shelves = tuple[GraphMemory, dict[str, str]]  # the store, and each memory's id by its role


@pytest.fixture(scope="module")
def shelves(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shelves]:
    home = Path(tmp_path_factory.mktemp("bank")) / ".graphmem"
    gm = open_store(home, embedder=HashEmbedder())
    day = iter(range(1, 60))

    def add(content: str, **fields: object) -> str:
        stamp = f"2024-03-{next(day) % 28 + 1:02d}T10:00:00" if "created_at" not in fields else None
        return gm.remember(content, **({"created_at": stamp} if stamp else {}), **fields).id

    ids = {
        "decision": add("Use Postgres for sessions", kind="decision", context="auth"),
        "decision_billing": add("Invoices in UTC", kind="decision", context="billing"),
        "decision_old": add("Sessions in Redis", kind="decision", context="auth"),
        "runbook": add("Roll back a deploy", kind="runbook", context="auth"),
        "incident": add("502s on orders", kind="incident", context="billing"),
        "postmortem": add("502s: index lock", kind="postmortem", context="billing"),
        "incident_copy": add("502s on the orders API", kind="incident", context="billing"),
        "gotcha": add("The cache keeps stale carts", tags=["gotcha"], context="auth"),
        "warning_cased": add("Upper-case tag", tags=["Warning"]),
        "caveat_outdated": add("Old caveat", tags=["caveat", "x"]),
        "tagged_migration": add("Schema change for carts", tags=["migration"]),
        "migrated_text": add("We MIGRATED the ledger to v2", context="auth"),
        "migration_title": add("A plan", title="Migration plan for billing"),
        "immigration": add("Immigration forms are PDFs"),
        "archived_migration": add("Migrating carts, a copy"),
        "dead_end": add("Redis cluster MULTI", kind="dead_end", context="auth"),
        "dead_end_outdated": add("Sticky sessions", kind="dead_end"),
        "dead_end_archived": add("Redis cluster MULTI again", kind="dead_end"),
        "failed_check": add("Tokens last an hour", importance=0.2),
        "important_unverified": add("Every deploy needs a ticket", importance=0.8),
        "important_verified": add("Backups run at 02:00", importance=0.9),
        "important_verified_long_ago": add("Logs are kept 30 days", importance=0.7),
        "canonical_unimportant": add("Services speak gRPC", importance=0.1, context="auth"),
        "plain": add("A plain note", importance=0.69),
        "flagged_outdated": add("Old flagged note", importance=0.9),
        # two memories of the same instant: the larger id comes first
        "twin_a": add("Twin decision A", kind="decision", created_at="2024-01-01T00:00:00"),
        "twin_b": add("Twin decision B", kind="decision", created_at="2024-01-01T00:00:00"),
    }
    gm.mark_outdated(ids["decision_old"], reason="moved", superseded_by=ids["decision"])
    gm.promote_to_canonical(ids["decision_billing"], owner="billing-team")
    gm.merge_duplicates(ids["incident"], [ids["incident_copy"]])
    gm.mark_outdated(ids["caveat_outdated"], reason="fixed")
    gm.merge_duplicates(ids["tagged_migration"], [ids["archived_migration"]])
    gm.mark_outdated(ids["dead_end_outdated"], reason="no longer tried")
    gm.merge_duplicates(ids["dead_end"], [ids["dead_end_archived"]])
    gm.verify_entry(ids["failed_check"], method="read the code", status="failed")
    gm.verify_entry(ids["important_verified"], method="checked cron", status="verified")
    gm.verify_entry(ids["important_verified_long_ago"], method="read config", status="verified")
    gm.store.knowledge.set_fields(
        ids["important_verified_long_ago"], {"verified_at": utcnow() - timedelta(days=120)}
    )
    gm.promote_to_canonical(ids["canonical_unimportant"], owner="platform")
    gm.verify_entry(ids["flagged_outdated"], method="review", status="needs_update")
    gm.mark_outdated(ids["flagged_outdated"], reason="gone")
    yield gm, ids
    gm.close()


def shown(shelves: Shelves, view: str, context: str | None = None, limit: int = 50) -> list[str]:
    """The roles of the memories the view shows, in its order."""
    gm, ids = shelves
    role = {memory_id: name for name, memory_id in ids.items()}
    return [role[m.id] for m in gm.project_bank_view(view, context=context, limit=limit).memories]


def test_decisions_runbooks_and_incidents_hold_live_records_of_their_kinds(
    shelves: Shelves,
) -> None:
    twins = sorted(["twin_a", "twin_b"], key=lambda n: shelves[1][n], reverse=True)
    assert shown(shelves, "decisions") == ["decision_billing", "decision", *twins]
    assert shown(shelves, "runbooks") == ["runbook"]
    assert shown(shelves, "incidents") == ["postmortem", "incident"]


def test_caveats_carry_a_warning_tag_of_that_exact_spelling(shelves: Shelves) -> None:
    assert shown(shelves, "caveats") == ["gotcha"]


def test_migrations_are_tagged_or_say_migrat_in_any_case_in_their_title_or_text(
    shelves: Shelves,
) -> None:
    assert shown(shelves, "migrations") == [
        "immigration", "migration_title", "migrated_text", "tagged_migration",
    ]  # fmt: skip


def test_dead_ends_keep_outdated_ones_and_drop_archived_ones(shelves: Shelves) -> None:
    assert shown(shelves, "dead_ends") == ["dead_end_outdated", "dead_end"]


def test_the_canonical_overview_lists_canonical_entries(shelves: Shelves) -> None:
    assert shown(shelves, "canonical_overview") == ["canonical_unimportant", "decision_billing"]


def test_the_review_queue_holds_failed_checks_and_important_entries_not_verified_lately(
    shelves: Shelves,
) -> None:
    assert shown(shelves, "review_queue") == [
        "canonical_unimportant", "important_verified_long_ago", "important_unverified",
        "failed_check", "decision_billing",
    ]  # fmt: skip


def test_a_context_narrows_every_view_and_the_limit_keeps_the_newest(shelves: Shelves) -> None:
    assert shown(shelves, "decisions", context="auth") == ["decision"]
    assert shown(shelves, "migrations", context="auth") == ["migrated_text"]
    assert shown(shelves, "caveats", context="billing") == []
    assert shown(shelves, "review_queue", context="auth") == ["canonical_unimportant"]
    for view in BANK_VIEWS:
        everything = shown(shelves, view)
        assert shown(shelves, view, limit=1) == everything[:1]
