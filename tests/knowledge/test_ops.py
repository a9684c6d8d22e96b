"""Knowledge over time: a decision and its replacement, a dead end, a runbook whose cited file
is edited and then deleted. Recall ranking, as-of answers, timelines, warnings, drift."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import Conflict, InvalidInput, NotFound
from graphmem.service import GraphMemory, open_store


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "rollback.sh").write_text("kubectl rollout undo deploy/orders\n")
    return tmp_path


@pytest.fixture
def gm(project: Path) -> Iterator[GraphMemory]:
    memory = open_store(project / ".graphmem", embedder=HashEmbedder())
    yield memory
    memory.close()


@pytest.fixture
def history(gm: GraphMemory) -> dict[str, str]:
    """January: sessions in Redis. Then a dead end. March: sessions move to Postgres."""
    redis = gm.store_decision(
        decision="Store user sessions in Redis",
        rationale="fast session lookups",
        tags=["sessions"], context="auth", created_at="2024-01-10T10:00:00",
    )  # fmt: skip
    dead_end = gm.store_dead_end(
        attempted_approach="Redis cluster mode for sessions with MULTI transactions",
        why_failed="MULTI is not supported across hash slots",
        alternative="keep sessions in Postgres",
        tags=["sessions"], context="auth", created_at="2024-02-20T09:00:00",
    )  # fmt: skip
    postgres = gm.store_decision(
        decision="Store user sessions in Postgres",
        rationale="one less moving part after the Redis cluster dead end",
        avoids=[dead_end.id], tags=["sessions"], context="auth", created_at="2024-03-12T15:00:00",
    )  # fmt: skip
    gm.mark_outdated(redis.id, reason="sessions moved to Postgres", superseded_by=postgres.id)
    return {"redis": redis.id, "dead_end": dead_end.id, "postgres": postgres.id}


def test_the_successor_outranks_the_superseded_decision_which_points_to_it(
    gm: GraphMemory, history: dict[str, str]
) -> None:
    hits = gm.recall("where do we store user sessions?", limit=5).hits
    ranked = [h.memory.id for h in hits]
    assert ranked.index(history["postgres"]) < ranked.index(history["redis"])
    old = next(h for h in hits if h.memory.id == history["redis"])
    assert old.memory.lifecycle == "superseded"
    assert old.superseded_by == history["postgres"]


def test_recall_as_of_answers_what_was_believed_on_each_side_of_the_switch(
    gm: GraphMemory, history: dict[str, str]
) -> None:
    before = [h.memory.id for h in gm.recall_as_of("user sessions storage", as_of="2024-02-01")]
    assert history["redis"] in before and history["postgres"] not in before
    after = [h.memory.id for h in gm.recall_as_of("user sessions storage", as_of="2024-04-01")]
    assert history["postgres"] in after and history["redis"] not in after
    assert gm.recall_as_of("user sessions", as_of="2023-12-01").hits == []


def test_the_timeline_lists_versions_oldest_first_with_dates_and_reasons(
    gm: GraphMemory, history: dict[str, str]
) -> None:
    timeline = gm.knowledge_timeline(memory_id=history["postgres"])
    assert [e.memory.id for e in timeline.entries] == [history["redis"], history["postgres"]]
    first = timeline.entries[0]
    assert first.superseded_by == history["postgres"]
    assert first.reason == "sessions moved to Postgres"
    assert first.memory.valid_to == timeline.entries[1].memory.valid_from
    by_query = gm.knowledge_timeline("where are user sessions stored")
    assert [e.memory.id for e in by_query.entries] == [history["redis"], history["postgres"]]


def test_a_recall_near_a_dead_end_warns_about_it(gm: GraphMemory, history: dict[str, str]) -> None:
    result = gm.recall("store user sessions in Postgres", limit=2)
    warned = [w for w in result.warnings if w.kind == "dead_end"]
    assert warned and warned[0].memory is not None
    assert warned[0].memory.id == history["dead_end"]
    assert "keep sessions in Postgres" in warned[0].message
    unrelated = gm.remember("The billing service exports invoices nightly", context="billing")
    quiet = gm.recall("billing invoices export", limit=1)
    assert quiet[0].memory.id == unrelated.id
    assert not [w for w in quiet.warnings if w.kind == "dead_end"]


def test_canonical_knowledge_ranks_first_and_leads_the_project_context(gm: GraphMemory) -> None:
    plain = gm.remember("Deploys go through ArgoCD", context="platform")
    canonical = gm.remember("Deploys go through ArgoCD with sync waves", context="platform")
    gm.promote_to_canonical(canonical.id, owner="platform-team")
    hits = gm.recall("how do deploys go through ArgoCD", limit=2).hits
    assert hits[0].memory.id == canonical.id and hits[0].memory.owner == "platform-team"
    assert [m.id for m in gm.list_canonical_knowledge().memories] == [canonical.id]
    assert gm.recall_canonical_knowledge("deploys").hits[0].memory.id == canonical.id
    summary = gm.summarize_project_context(context="platform")
    assert [m.id for m in summary.canonical] == [canonical.id]
    assert [m.id for m in summary.recent] == [plain.id]
    assert gm.project_bank_view("canonical_overview").memories[0].id == canonical.id


def test_records_keep_their_fields_and_bank_views_sort_them(gm: GraphMemory) -> None:
    incident = gm.store_incident(
        summary="orders API returned 502 for 20 minutes", severity="sev2",
        root_cause="index lock during the billing migration", occurred_at="2024-05-02T08:00:00",
    )  # fmt: skip
    assert incident.kind == "incident" and incident.created_at.month == 5
    assert incident.metadata["record"]["severity"] == "sev2"
    gm.store_postmortem(
        summary="502s on orders", root_cause="index lock", action_items=["add lock timeout"],
        incident_id=incident.id, tags=["migration"],
    )  # fmt: skip
    runbook = gm.store_runbook(trigger="orders returns 502", steps=["check locks", "roll back"])
    assert "1. check locks" in runbook.content
    assert gm.search_runbooks("orders 502")[0].memory.id == runbook.id
    assert gm.recall_similar_incidents("502 errors on orders")[0].memory.id == incident.id
    assert {m.kind for m in gm.project_bank_view("incidents").memories} == {
        "incident",
        "postmortem",
    }
    assert gm.project_bank_view("migrations").memories
    with pytest.raises(InvalidInput, match="unknown view"):
        gm.project_bank_view("gossip")
    with pytest.raises(InvalidInput, match="steps"):
        gm.store_runbook(trigger="x", steps=[])


def test_drift_scan_reports_a_cited_file_changed_then_missing(
    gm: GraphMemory, project: Path
) -> None:
    runbook = gm.store_runbook(
        trigger="orders deploy is bad", steps=["run ops/rollback.sh"], cites=["./ops/rollback.sh"]
    )
    assert gm.drift_scan().items == []
    (project / "ops" / "rollback.sh").write_text(
        "kubectl rollout undo deploy/orders --to-revision=2\n"
    )
    changed = gm.drift_scan().items
    assert [(i.memory_id, i.path, i.status) for i in changed] == [
        (runbook.id, "ops/rollback.sh", "source_changed")
    ]
    gm.verify_entry(runbook.id, method="ran it in staging", status="verified")
    assert gm.drift_scan().items == []
    (project / "ops" / "rollback.sh").unlink()
    assert [i.status for i in gm.drift_scan().items] == ["source_missing"]


def test_cited_paths_resolve_against_the_project_with_or_without_dot_slash(
    gm: GraphMemory, project: Path
) -> None:
    memory = gm.remember("rollback uses the script")
    assert gm.cite_source(memory.id, "ops/rollback.sh").path == "ops/rollback.sh"
    assert gm.cite_source(memory.id, "./ops/rollback.sh").path == "ops/rollback.sh"
    assert gm.cite_source(memory.id, str(project / "ops" / "rollback.sh")).path == "ops/rollback.sh"
    with pytest.raises(InvalidInput):
        gm.cite_source(memory.id, "ops/missing.sh")
    with pytest.raises(InvalidInput, match="outside"):
        gm.cite_source(memory.id, "../elsewhere.txt")


def test_verification_candidates_are_important_entries_not_verified_lately(gm: GraphMemory) -> None:
    important = gm.remember("The payments key rotates every 90 days", importance=0.9)
    gm.remember("a passing remark", importance=0.2)
    assert [m.id for m in gm.verification_candidates(days=30).memories] == [important.id]
    verified = gm.verify_entry(important.id, method="read the vault policy", status="verified")
    assert verified.verify_status == "verified" and verified.verified_at is not None
    assert gm.verification_candidates(days=30).memories == []
    with pytest.raises(InvalidInput):
        gm.verify_entry(important.id, method="x", status="probably")


def test_merging_duplicates_keeps_their_history(gm: GraphMemory) -> None:
    keep = gm.remember("Use pgbouncer in transaction mode", tags=["postgres"], importance=0.4)
    dup = gm.remember("pgbouncer must run in transaction mode", tags=["pooling"], importance=0.8)
    merged = gm.merge_duplicates(keep.id, [dup.id], reason="same advice")
    assert set(merged.tags) == {"postgres", "pooling"} and merged.importance == 0.8
    assert gm.get(dup.id).lifecycle == "archived"
    assert gm.recall("pgbouncer transaction mode", limit=5)[0].memory.id == keep.id
    edges = gm.cypher("MATCH (d:Memory)-[r:MERGED_INTO]->(k:Memory) RETURN d.id, k.id, r.reason")
    assert edges.rows == [[dup.id, keep.id, "same advice"]]


def test_bad_lifecycle_requests_change_nothing(gm: GraphMemory, history: dict[str, str]) -> None:
    with pytest.raises(NotFound):
        gm.mark_outdated("nope", reason="x")
    with pytest.raises(InvalidInput):
        gm.mark_outdated(history["postgres"], reason="  ")
    with pytest.raises(InvalidInput):
        gm.mark_outdated(history["postgres"], reason="x", superseded_by=history["postgres"])
    with pytest.raises(Conflict):  # would close a loop in the version chain
        gm.mark_outdated(history["postgres"], reason="x", superseded_by=history["redis"])
    with pytest.raises(InvalidInput, match="not a dead end"):
        gm.store_decision(decision="d", rationale="r", avoids=[history["redis"]])
    assert gm.get(history["postgres"]).lifecycle == "active"


def test_a_hit_from_a_long_chain_points_to_the_newest_version_not_the_next(
    gm: GraphMemory,
) -> None:
    versions = [
        gm.remember(f"deploy window rule version {n}", created_at=f"2024-0{n}-01T00:00:00")
        for n in (1, 2, 3, 4)
    ]
    for older, newer in itertools.pairwise(versions):
        gm.mark_outdated(older.id, reason="revised", superseded_by=newer.id)
    hits = {h.memory.id: h for h in gm.recall("deploy window rule", limit=10).hits}
    for old in versions[:3]:
        assert hits[old.id].superseded_by == versions[3].id
    assert hits[versions[3].id].superseded_by is None


def test_as_of_an_early_date_finds_the_few_memories_recorded_by_then(
    gm: GraphMemory,
) -> None:
    """The as-of window is applied inside the vector scan: an early date leaves few memories,
    and those must still be found even when hundreds of later ones are more similar."""
    first = gm.remember("billing export job runs nightly", created_at="2023-01-05T00:00:00")
    gm.remember_many(
        [
            {"content": f"billing export job note {i}", "created_at": "2024-06-01T00:00:00"}
            for i in range(300)
        ]
    )
    hits = gm.recall_as_of("billing export job note", as_of="2023-02-01").hits
    assert [h.memory.id for h in hits] == [first.id]
