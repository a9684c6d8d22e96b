"""The steward on a real store: what it finds, what the default policy applies on its own, the
inbox that files a finding once, and undo that puts a run back exactly."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from graphmem.errors import Conflict, InvalidInput, NotFound
from graphmem.models import utcnow
from graphmem.service import GraphMemory
from graphmem.storage.protocols import EntityRow, FactRow, Mention, Provenance, fact_id

DEPLOY = "Deploys go through ArgoCD; never kubectl apply to production by hand."
NIGHTLY = "The nightly deploys of the web app go through {} {} day at noon, then smoke tests run"


def lifecycle(gm: GraphMemory, memory_id: str) -> str:
    rows = gm.cypher("MATCH (m:Memory {id: $id}) RETURN m.lifecycle", {"id": memory_id}).rows
    return str(rows[0][0])


def kinds(run: object) -> dict[str, int]:
    return dict(run.found)  # type: ignore[attr-defined]


def extract(gm: GraphMemory, memory_id: str, triples: list[tuple[str, str, str]]) -> None:
    """Facts of a memory, as the extractor would write them."""
    names = sorted({n for s, _, o in triples for n in (s, o)})
    facts = [FactRow(fact_id(s, p, o), s, p, o, s, o, f"{s} {p} {o}", 0.8) for s, p, o in triples]
    gm.store.entities.write_extraction(
        [memory_id], extractor="test",
        entities=[EntityRow(n, n, n, n.replace(" ", ""), "concept") for n in names], aliases={},
        mentions=[Mention(memory_id, n, n) for n in names], facts=facts,
        provenance=[Provenance(f.id, memory_id, 0.8) for f in facts], at=utcnow(),
    )  # fmt: skip


# -- duplicates ----------------------------------------------------------------------------------


def test_a_dry_run_finds_without_filing_or_changing_anything(gm: GraphMemory) -> None:
    first = gm.remember(DEPLOY, context="infra")
    copy = gm.remember("deploys go through ArgoCD -- never kubectl apply to production by hand!",
                       context="infra")  # fmt: skip

    run = gm.steward_run("duplicates")

    assert kinds(run) == {"exact_duplicate": 1}
    (finding,) = run.findings
    assert (finding.status, finding.action, finding.targets) == (
        "proposed", "merge", [first.id, copy.id],
    )  # fmt: skip
    assert gm.get(copy.id).lifecycle == "active"
    assert gm.steward_inbox().pending == 0


def test_exact_copies_merge_on_their_own_and_nothing_is_lost(gm: GraphMemory) -> None:
    first = gm.remember(DEPLOY, context="infra", tags=["deploy"])
    copy = gm.remember(DEPLOY.upper(), context="infra", tags=["argocd"])

    run = gm.steward_run("duplicates", dry_run=False)

    assert (run.filed, run.applied) == (1, 1)
    assert gm.get(copy.id).lifecycle == "archived"  # kept, archived, linked
    merged = gm.cypher("MATCH (c:Memory)-[:MERGED_INTO]->(k:Memory) RETURN c.id, k.id").rows
    assert merged == [[copy.id, first.id]]
    assert set(gm.get(first.id).tags) == {"deploy", "argocd"}
    audit = gm.cypher("MATCH (a:Audit) WHERE a.run = $r RETURN a.action", {"r": run.id}).rows
    assert audit == [["steward:merge"]]


def test_copies_of_other_kinds_types_or_contexts_are_not_duplicates(gm: GraphMemory) -> None:
    gm.remember(DEPLOY, context="infra")
    gm.remember(DEPLOY, context="payments")
    gm.remember(DEPLOY, context="infra", kind="decision")
    gm.remember(DEPLOY, context="infra", type="semantic")  # what holds, not what happened

    assert kinds(gm.steward_run("duplicates")) == {}


def test_close_memories_naming_different_things_are_not_duplicates(gm: GraphMemory) -> None:
    argo = gm.remember(NIGHTLY.format("ArgoCD", "every"), context="infra")
    flux = gm.remember(NIGHTLY.format("FluxCD", "every"), context="infra")
    extract(gm, argo.id, [("web app", "deploy_with", "argocd")])
    extract(gm, flux.id, [("web ui", "deploy_with", "fluxcd")])

    assert "similar" not in kinds(gm.steward_run("duplicates"))
    extract(gm, flux.id, [("web app", "deploy_with", "fluxcd")])  # now they share the web app
    assert kinds(gm.steward_run("duplicates")).get("similar") == 1


def test_close_memories_sharing_few_of_their_words_are_not_duplicates(gm: GraphMemory) -> None:
    gm.steward_policy({"duplicate_cosine": 0.5})  # the hash embedder's cosine follows the words
    gm.remember("Rotate the signing keys of the payments api every quarter", context="infra")
    gm.remember("In short: rotate keys every quarter and tell the on-call", context="infra")
    assert kinds(gm.steward_run("duplicates")) == {}  # one topic, two statements

    gm.steward_policy({"duplicate_overlap": 0.2})
    assert kinds(gm.steward_run("duplicates")) == {"similar": 1}


def test_close_memories_giving_different_numbers_are_not_duplicates(gm: GraphMemory) -> None:
    text = "Restore the orders database within {} hours of the page, then tell support"
    four = gm.remember(text.format(4), context="infra")
    gm.remember(text.format(8), context="infra")
    assert kinds(gm.steward_run("duplicates")) == {}

    spelt = gm.remember(text.format("four"), context="infra")  # the same number, spelt out

    (finding,) = gm.steward_run("duplicates").findings
    assert set(finding.targets) == {four.id, spelt.id}


def test_two_memories_in_a_fact_conflict_are_not_duplicates(gm: GraphMemory) -> None:
    text = "The billing service is owned by the {} team since the reorg: ask them about refunds"
    old = gm.remember(text.format("payments"), context="shop")
    new = gm.remember(text.format("platform"), context="shop")
    extract(gm, old.id, [("billing service", "owned_by", "payments team")])
    extract(gm, new.id, [("billing service", "owned_by", "platform team")])

    assert kinds(gm.steward_run("all")) == {"fact_conflict": 1}


def test_a_run_lists_its_best_findings_and_counts_the_rest(gm: GraphMemory) -> None:
    for service in ("billing", "orders", "search"):
        gm.remember(f"Deploy the {service} service with ArgoCD only", context="infra")
        gm.remember(f"deploy the {service} service with argocd ONLY!", context="infra")

    dry = gm.steward_run("duplicates", listed=1)
    done = gm.steward_run("duplicates", dry_run=False, listed=2)

    assert (len(dry.findings), dry.unlisted, dry.found) == (1, 2, {"exact_duplicate": 3})
    assert (len(done.findings), done.unlisted, done.filed, done.applied) == (2, 1, 3, 3)
    assert gm.steward_report(done.id).unlisted == 1  # the stored report says so too


# -- the inbox -----------------------------------------------------------------------------------


def test_a_finding_is_filed_once_and_a_dismissed_one_stays_dismissed(gm: GraphMemory) -> None:
    gm.remember(NIGHTLY.format("ArgoCD", "every"), context="infra")
    gm.remember(NIGHTLY.format("ArgoCD", "each"), context="infra")

    first = gm.steward_run("duplicates", dry_run=False)
    again = gm.steward_run("duplicates", dry_run=False)

    assert (first.filed, again.filed, again.known) == (1, 0, 1)
    (finding,) = gm.steward_inbox().items
    assert finding.kind in ("similar", "near_duplicate")
    dismissed = gm.steward_inbox_resolve(finding.id, "dismiss", note="two jobs")
    assert (dismissed.status, dismissed.note, dismissed.resolved_by) == (
        "dismissed",
        "two jobs",
        "user",
    )
    assert gm.steward_run("duplicates", dry_run=False).filed == 0
    assert gm.steward_inbox().pending == 0
    with pytest.raises(InvalidInput, match="dismissed, not pending"):
        gm.steward_inbox_resolve(finding.id, "apply")


def test_applying_a_finding_from_the_inbox_merges_and_can_be_undone(gm: GraphMemory) -> None:
    kept = gm.remember(NIGHTLY.format("ArgoCD", "every"), context="infra")
    other = gm.remember(NIGHTLY.format("ArgoCD", "each"), context="infra")
    gm.steward_run("duplicates", dry_run=False)
    (finding,) = gm.steward_inbox().items

    applied = gm.steward_inbox_resolve(finding.id, "apply")

    assert applied.status == "applied"
    assert {gm.get(kept.id).lifecycle, gm.get(other.id).lifecycle} == {"active", "archived"}
    undone = gm.steward_undo(finding.run)
    assert undone.findings == [finding.id] and len(undone.undone) == 1
    assert gm.get(kept.id).lifecycle == gm.get(other.id).lifecycle == "active"
    assert gm.cypher("MATCH ()-[r:MERGED_INTO]->() RETURN count(r)").rows == [[0]]
    assert gm.steward_inbox().items[0].status == "pending"  # back in the inbox
    again = gm.steward_undo(finding.run)
    assert again.undone == [] and again.skipped[0]["why"] == "already undone"


def test_an_action_that_fails_leaves_its_finding_pending_with_the_error(gm: GraphMemory) -> None:
    gm.remember(NIGHTLY.format("ArgoCD", "every"), context="infra")
    other = gm.remember(NIGHTLY.format("ArgoCD", "each"), context="infra")
    gm.steward_run("duplicates", dry_run=False)
    (finding,) = gm.steward_inbox().items
    gm.mark_outdated(other.id, reason="no longer true")

    with pytest.raises(Conflict, match="outdated"):
        gm.steward_inbox_resolve(finding.id, "apply")

    (still,) = gm.steward_inbox().items
    assert still.status == "pending" and "outdated" in (still.error or "")


def test_bad_input_is_refused(gm: GraphMemory) -> None:
    with pytest.raises(InvalidInput, match="scope"):
        gm.steward_run("everything")
    with pytest.raises(InvalidInput, match="apply or dismiss"):
        gm.steward_inbox_resolve("x", "accept")
    with pytest.raises(NotFound):
        gm.steward_inbox_resolve("nope", "apply")
    with pytest.raises(InvalidInput, match="kind"):
        gm.steward_inbox(kind="junk")
    with pytest.raises(NotFound):
        gm.steward_undo("no-such-run")
    with pytest.raises(NotFound, match="not run yet"):
        gm.steward_report()


# -- conflicts -----------------------------------------------------------------------------------


def test_two_memories_giving_one_fact_different_objects_conflict(gm: GraphMemory) -> None:
    old = gm.remember("The billing service is owned by the payments team", context="shop")
    new = gm.remember("The billing service is owned by the platform team", context="shop")
    extract(gm, old.id, [("billing service", "owned_by", "payments team")])
    extract(gm, new.id, [("billing service", "owned_by", "platform team")])

    run = gm.steward_run("conflicts", dry_run=False)

    (finding,) = run.findings
    assert finding.kind == "fact_conflict" and set(finding.targets) == {old.id, new.id}
    assert finding.evidence["predicate"] == "owned_by"
    gm.steward_inbox_resolve(finding.id, "apply")  # the newer one wins
    assert gm.get(old.id).lifecycle == "superseded"
    assert gm.get(new.id).lifecycle == "active"


def test_only_predicates_holding_one_object_at_a_time_conflict_until_the_policy_adds_one(
    gm: GraphMemory,
) -> None:
    old = gm.remember("Orders are stored in the MySQL shop database", context="shop")
    new = gm.remember("Orders are stored in the Postgres orders database", context="shop")
    extract(gm, old.id, [("orders", "store_in", "mysql")])
    extract(gm, new.id, [("orders", "store_in", "postgres")])
    assert "fact_conflict" not in kinds(gm.steward_run("conflicts"))

    gm.steward_policy({"single_valued": [*gm.steward_policy().single_valued, "store_in"]})

    assert kinds(gm.steward_run("conflicts")) == {"fact_conflict": 1}


def test_objects_differing_in_case_or_refining_each_other_are_no_conflict(
    gm: GraphMemory,
) -> None:
    first = gm.remember("The database is owned by the app role", context="db")
    second = gm.remember("The Database is owned by the App Role itself", context="db")
    third = gm.remember("The database is owned by the app member role", context="db")
    extract(gm, first.id, [("database", "owned_by", "app role")])
    extract(gm, second.id, [("database", "owned_by", "App Role")])
    extract(gm, third.id, [("database", "owned_by", "app member role")])

    assert "fact_conflict" not in kinds(gm.steward_run("conflicts"))


def test_a_subject_holding_several_objects_at_once_is_no_conflict(gm: GraphMemory) -> None:
    both = gm.remember("The payments service is deployed to eu-west-1 and us-east-1", context="pay")
    one = gm.remember("The payments service is deployed to eu-west-1 for Europe", context="pay")
    other = gm.remember("The payments service is deployed to us-east-1 for America", context="pay")
    extract(
        gm,
        both.id,
        [("payments", "deployed_to", "eu-west-1"), ("payments", "deployed_to", "us-east-1")],
    )
    extract(gm, one.id, [("payments", "deployed_to", "eu-west-1")])
    extract(gm, other.id, [("payments", "deployed_to", "us-east-1")])

    assert "fact_conflict" not in kinds(gm.steward_run("conflicts"))


def test_an_active_decision_and_dead_end_on_one_approach_conflict(gm: GraphMemory) -> None:
    text = "Cache user sessions in Redis cluster mode across slots"
    decision = gm.remember(text, kind="decision", context="auth")
    dead_end = gm.remember(text + ".", kind="dead_end", context="auth")

    (finding,) = gm.steward_run("conflicts").findings

    assert finding.kind == "decision_dead_end"
    assert finding.targets == [decision.id, dead_end.id]


# -- stale ---------------------------------------------------------------------------------------


def test_expired_working_memory_is_archived_and_fresh_is_kept(gm: GraphMemory) -> None:
    old = gm.remember("scratch: try a bigger pool", type="working",
                      created_at=utcnow() - timedelta(days=4))  # fmt: skip
    fresh = gm.remember("scratch: try a smaller pool", type="working")

    run = gm.steward_run("stale", dry_run=False)

    assert run.applied == 1
    assert gm.get(old.id).lifecycle == "archived"
    assert gm.get(fresh.id).lifecycle == "active"


def test_old_knowledge_nobody_verified_or_used_is_stale_but_old_events_are_not(
    gm: GraphMemory,
) -> None:
    long_ago = utcnow() - timedelta(days=400)
    runbook = gm.remember("Restart the ingest worker with make restart", kind="runbook",
                          created_at=long_ago)  # fmt: skip
    gm.remember("The ingest worker crashed on 3 March", kind="incident", created_at=long_ago)
    used = gm.remember("Rotate the keys with make rotate", kind="runbook", created_at=long_ago)
    gm.get(used.id)  # a use

    run = gm.steward_run("stale")

    assert [(f.kind, f.targets) for f in run.findings] == [("unverified", [runbook.id])]
    gm.steward_policy({"stale_days": 500})
    assert gm.steward_run("stale").findings == []


def test_a_superseded_memory_left_live_is_found(gm: GraphMemory) -> None:
    old = gm.remember("Staging runs 6 nodes", context="infra")
    new = gm.remember("Staging runs 4 nodes", context="infra")
    gm.mark_outdated(old.id, reason="resized", superseded_by=new.id)
    gm.store.knowledge.set_fields(old.id, {"lifecycle": "active"})  # what an import or a bug leaves

    (finding,) = gm.steward_run("stale", dry_run=False).findings

    assert (finding.kind, finding.targets) == ("live_middle", [old.id, new.id])
    gm.steward_inbox_resolve(finding.id, "apply")
    assert gm.get(old.id).lifecycle == "superseded"


def test_a_cited_file_that_changed_makes_its_memory_stale(gm: GraphMemory, tmp_path: Path) -> None:
    root = gm.project_root
    (root / "deploy.md").write_text("Deploy with ArgoCD.\n")
    memory = gm.remember("Deploy with ArgoCD (see deploy.md)")
    gm.cite_source(memory.id, "deploy.md")
    assert gm.steward_run("stale").findings == []

    (root / "deploy.md").write_text("Deploy with Flux.\n")

    (finding,) = gm.steward_run("stale").findings
    assert finding.kind == "drifted_citation" and finding.evidence["path"] == "deploy.md"


# -- canonical candidates, orphans, usage --------------------------------------------------------


def test_a_verified_memory_recalled_often_becomes_a_canonical_candidate(gm: GraphMemory) -> None:
    memory = gm.remember("Feature flags are read through FlagProvider only", context="app")
    gm.verify_entry(memory.id, method="read the code", status="verified")
    assert gm.steward_run("canonical").findings == []
    for _ in range(10):
        gm.recall("how are feature flags read", filters={"context": "app"})

    (finding,) = gm.steward_run("canonical", dry_run=False).findings

    assert finding.kind == "canonical_candidate" and finding.targets == [memory.id]
    assert finding.evidence["accesses"] >= 10
    gm.steward_inbox_resolve(finding.id, "apply")
    assert gm.get(memory.id).lifecycle == "canonical"


def test_recall_and_get_count_uses_and_a_session_close_does_not(gm: GraphMemory) -> None:
    memory = gm.remember("Feature flags are read through FlagProvider only")
    gm.recall("feature flags")
    gm.get(memory.id)
    gm.close_session("- Feature flags are read through FlagProvider only", dry_run=True)
    gm._context.usage.flush()

    rows = gm.cypher(
        "MATCH (m:Memory {id: $id}) RETURN m.access_count, m.targeted_count, m.accessed_at",
        {"id": memory.id},
    ).rows
    assert rows[0][:2] == [2, 1] and rows[0][2] is not None


def test_an_entity_nothing_names_is_pruned_and_undo_brings_it_back(gm: GraphMemory) -> None:
    memory = gm.remember("The ledger runs on Postgres")
    extract(gm, memory.id, [("ledger", "runs_on", "postgres")])
    gm.delete(memory.id)
    assert gm.cypher("MATCH (f:Fact) RETURN count(f)").rows == [[0]]  # only it stated them
    names = "MATCH (e:Entity) RETURN e.name ORDER BY e.name"
    before = gm.cypher(names).rows

    run = gm.steward_run("orphans", dry_run=False)
    findings = {f.kind for f in run.findings}
    assert findings == {"orphan_entity"}
    for finding in run.findings:
        gm.steward_inbox_resolve(finding.id, "apply")
    assert gm.cypher(names).rows == []

    gm.steward_undo(run.id)
    assert gm.cypher(names).rows == before


def test_a_review_item_whose_memory_is_gone_is_dismissed_and_undo_reopens_it(
    gm: GraphMemory,
) -> None:
    note = gm.remember("Note that the staging database listens on port 5433, not 5432")
    plan = gm.close_session(
        "Incident in staging.\n- Note that the staging database listens on port 5433, not 5432",
        mode="incident", dry_run=False,
    )  # fmt: skip
    item = next(a.review_item for a in plan.actions if a.target == note.id)
    gm.delete(note.id)

    run = gm.steward_run("orphans", dry_run=False)
    (finding,) = [f for f in run.findings if f.kind == "orphan_review_item"]
    gm.steward_inbox_resolve(finding.id, "apply")
    (dismissed,) = [i for i in gm.review_session_changes(status=None).items if i.id == item]
    assert (dismissed.status, dismissed.resolved_by) == ("rejected", "steward")

    gm.steward_undo(run.id)
    (reopened,) = [i for i in gm.review_session_changes(status=None).items if i.id == item]
    assert (reopened.status, reopened.note) == ("pending", None)
    assert (reopened.resolved_at, reopened.resolved_by) == (None, None)


# -- policy, status, report ----------------------------------------------------------------------


def test_the_policy_is_validated_kept_and_shown_in_the_status(gm: GraphMemory) -> None:
    assert gm.steward_policy().auto_apply == ["exact_duplicate", "expired_working"]

    changed = gm.steward_policy({"auto_apply": ["exact_duplicate"], "stale_days": 30})

    assert (changed.auto_apply, changed.stale_days) == (["exact_duplicate"], 30)
    assert gm.steward_policy().stale_days == 30
    with pytest.raises(InvalidInput, match="unknown policy fields"):
        gm.steward_policy({"auto_merge": True})
    with pytest.raises(InvalidInput, match="invalid policy"):
        gm.steward_policy({"auto_apply": ["everything"]})
    with pytest.raises(InvalidInput, match="near_duplicate_cosine"):
        gm.steward_policy({"near_duplicate_cosine": 0.8, "duplicate_cosine": 0.9})
    assert gm.steward_status().policy.stale_days == 30


def test_the_report_and_status_say_what_a_run_did(gm: GraphMemory) -> None:
    gm.remember(DEPLOY, context="infra")
    gm.remember(DEPLOY, context="infra")
    gm.remember("scratch", type="working", created_at=utcnow() - timedelta(days=5))

    run = gm.steward_run(dry_run=False, actor="cron")

    report = gm.steward_report(run.id)
    assert (report.id, report.actor, report.applied, report.filed) == (run.id, "cron", 2, 2)
    assert report.found == {"exact_duplicate": 1, "expired_working": 1}
    status = gm.steward_status()
    assert status.last_run is not None and status.last_run.id == run.id
    assert status.last_run.findings == [] and status.pending == 0


# -- sweeping, references, the conflicts report ----------------------------------------------------


def test_a_sweep_archives_old_unused_episodic_memory_only_and_can_be_undone(
    gm: GraphMemory,
) -> None:
    long_ago = utcnow() - timedelta(days=400)
    chatter = gm.remember("ok, sounds good", type="episodic", importance=0.2, created_at=long_ago)
    used = gm.remember("the staging password rotates monthly", type="episodic", importance=0.2,
                       created_at=long_ago)  # fmt: skip
    gm.get(used.id)
    kept = gm.remember("we chose Postgres", kind="decision", type="episodic", importance=0.2,
                       created_at=long_ago)  # fmt: skip
    gm.remember("ok, sounds good", type="episodic", importance=0.2)  # recent

    assert gm.sweep_archive().archived == [chatter.id]  # a dry run
    assert lifecycle(gm, chatter.id) == "active"  # (a get would be a use)
    report = gm.sweep_archive(dry_run=False)
    assert report.archived == [chatter.id] and report.run
    assert gm.get(chatter.id).lifecycle == "archived"
    assert gm.get(kept.id).lifecycle == "active"

    gm.steward_undo(report.run)
    assert gm.get(chatter.id).lifecycle == "active"


def test_references_are_recounted_from_the_graph(gm: GraphMemory) -> None:
    dead_end = gm.store_dead_end(attempted_approach="Redis MULTI across slots",
                                 why_failed="cluster mode refuses it")  # fmt: skip
    gm.store_decision(decision="Use Lua scripts per slot", rationale="atomic",
                      avoids=[dead_end.id])  # fmt: skip

    report = gm.recount_references()

    assert report.referenced == 1 and report.top == [{"id": dead_end.id, "references": 1}]
    rows = gm.cypher("MATCH (m:Memory {id: $id}) RETURN m.reference_count", {"id": dead_end.id})
    assert rows.rows == [[1]]


def test_the_conflicts_report_says_which_conflicts_wait_in_the_inbox(gm: GraphMemory) -> None:
    old = gm.remember("Orders are stored in the MySQL shop database", context="shop")
    new = gm.remember("Orders are stored in the Postgres orders database", context="shop")
    extract(gm, old.id, [("orders", "migrated_to", "mysql")])
    extract(gm, new.id, [("orders", "migrated_to", "postgres")])
    assert gm.conflicts_report().in_inbox == 0

    gm.steward_run("conflicts", dry_run=False)

    report = gm.conflicts_report()
    (conflict,) = report.conflicts
    assert (report.in_inbox, conflict.status, conflict.kind) == (1, "pending", "fact_conflict")
    assert conflict.id == gm.steward_inbox().items[0].id
