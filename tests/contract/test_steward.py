"""The steward repository's contract (graphmem.storage.protocols.Steward), the same on every
engine: runs and their reports, findings, the audit trail and what an undo puts back, the
policy, the reads detection and sedimentation make.

Reads over facts, entities, avoidances, versions and review items need data the knowledge,
entities and sessions repositories write: those tests write it through them, and are skipped
on an engine that does not have them yet."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.errors import NotFound
from graphmem.models import Memory, stored_time, utcnow
from graphmem.storage.protocols import POLICY_KEY, EntityRow, FactRow, Mention, Provenance

pytestmark = [
    pytest.mark.falkordb,
    pytest.mark.filterwarnings("ignore:Call to '__init__' function:DeprecationWarning"),
]

SPACE = EmbeddingSpace("hash", "contract", 8)
SEDIMENT = pa.schema(
    [
        ("id", pa.string()), ("layer", pa.string()), ("layer_at", pa.timestamp("us")),
        ("layer_by", pa.string()), ("lifecycle", pa.string()),
        ("created_at", pa.timestamp("us")), ("accessed_at", pa.timestamp("us")),
        ("targeted", pa.int64()),
    ]
)  # fmt: skip


def _now() -> datetime:
    return utcnow().replace(microsecond=0)


def _memory(name: str, *, days: float = 10, now: datetime | None = None, **fields: Any) -> Memory:
    at = (now or _now()) - timedelta(days=days)
    return Memory(
        id=f"01STEWARD{name.upper():0>17}",
        content=f"{name}: the payments pool timed out",
        title=name,
        tags=["payments"],
        created_at=at,
        updated_at=at,
        **fields,
    )


def _put(store: Any, *memories: Memory) -> list[str]:
    rows = np.random.default_rng(len(memories)).standard_normal((len(memories), SPACE.dim))
    vectors = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    store.memories.insert(list(memories), vectors, SPACE)
    return [m.id for m in memories]


def _run(run_id: str, started_at: datetime) -> dict[str, Any]:
    return {
        "id": run_id, "scope": "all", "dry_run": False, "context": None, "service": None,
        "actor": "steward", "started_at": started_at,
    }  # fmt: skip


def _finding(n: int, created_at: datetime, **fields: Any) -> dict[str, Any]:
    return {
        "id": f"finding-{n}", "run": "run-1", "kind": "duplicate", "scope": "all",
        "targets": [f"t{n}"], "evidence": {"similarity": 0.9, "n": n},
        "evidence_hash": f"hash-{n}", "fingerprint": f"print-{n}", "confidence": 0.5,
        "action": "merge", "summary": f"summary {n}", "status": "pending", "auto": False,
        "error": None, "note": None, "created_at": created_at,
    } | fields  # fmt: skip


# -- runs, findings, the audit trail, the policy ---------------------------------------------


def test_a_run_keeps_its_report_and_the_newest_run_answers_without_an_id(
    contract_store: Any,
) -> None:
    steward, now = contract_store.steward, _now()
    assert steward.run_report(None) is None and steward.last_run_finished() is None
    steward.add_run(_run("run-1", now - timedelta(hours=1)))
    steward.add_run(_run("run-2", now))
    steward.finish_run("run-1", finished_at=now + timedelta(minutes=5), report={"found": 3})
    assert steward.run_report("run-1") == {"found": 3}
    assert steward.run_report(None) == {}  # the newest run, not finished yet
    assert steward.last_run_finished() == now + timedelta(minutes=5)
    with pytest.raises(NotFound):
        steward.run_report("run-none")


def test_findings_are_filed_read_back_sorted_and_resolved(contract_store: Any) -> None:
    steward, now = contract_store.steward, _now()
    (kept,) = _put(contract_store, _memory("kept"))
    steward.add_findings(
        [
            (_finding(0, now - timedelta(hours=3), fingerprint="shared"), [kept, kept, "01GONE"]),
            (_finding(1, now - timedelta(hours=2), fingerprint="shared", confidence=0.9), []),
            (_finding(2, now - timedelta(hours=1), kind="stale", confidence=0.7), [kept]),
        ]
    )
    filed = _finding(0, stored_time(now - timedelta(hours=3)))
    del filed["evidence_hash"], filed["fingerprint"]
    assert steward.finding("finding-0") == filed | {"resolved_at": None, "resolved_by": None}
    assert steward.known_findings(["shared", "print-2", "print-none"]) == {
        "shared": ("finding-1", "pending", "hash-1"),
        "print-2": ("finding-2", "pending", "hash-2"),
    }
    ids = lambda rows: [r["id"] for r in rows]  # noqa: E731
    assert ids(steward.findings(status="pending", limit=10)) == [
        "finding-1", "finding-2", "finding-0",
    ]  # fmt: skip
    assert ids(steward.findings(status=None, limit=2, sort="newest")) == ["finding-2", "finding-1"]
    assert ids(steward.findings(status=None, limit=5, sort="oldest"))[0] == "finding-0"
    assert ids(steward.findings(status=None, kind="stale", run="run-1", limit=5)) == ["finding-2"]
    assert steward.findings(status=None, run="run-other", limit=5) == []
    flagged = contract_store.cypher(
        "MATCH (f:Finding)-[:FLAGS]->(m:Memory) RETURN f.id, m.id ORDER BY f.id", {}, write=False
    )
    assert flagged.rows == [["finding-0", kept], ["finding-2", kept]]

    resolved = now + timedelta(minutes=1)
    steward.set_finding(
        "finding-1",
        {"status": "applied", "auto": True, "resolved_at": resolved, "resolved_by": "steward"},
    )
    applied = steward.finding("finding-1")
    assert (applied["status"], applied["auto"], applied["resolved_by"]) == (
        "applied", True, "steward",
    )  # fmt: skip
    assert applied["resolved_at"] == stored_time(resolved)
    assert steward.count_findings() == {"duplicate": 1, "stale": 1}
    assert steward.count_findings("applied") == {"duplicate": 1}
    with pytest.raises(NotFound):
        steward.finding("finding-none")


def test_the_audit_trail_is_read_by_run_finding_or_row_newest_first(contract_store: Any) -> None:
    steward = contract_store.steward
    steward.audit(
        actor="user", action="curate:edit", target="m-1", item=None,
        before={"memories": {"m-1": {"importance": 0.5}}}, after={"edges": []},
    )  # fmt: skip
    first = steward.audit_step(
        actor="steward", action="steward:merge", target="m-2", item="finding-0", run="run-1",
        before={"memories": {}}, after={"edges": [["MERGED_INTO", "m-3", "m-2"]]},
    )  # fmt: skip
    said = {"content": 'He said "no" \\ twice,\nthen $n ünïcode 💡', "tags": []}
    second = steward.audit_step(
        actor="steward", action="steward:archive", target="m-4", item=None, run="run-1",
        before=None, after=said,
    )  # fmt: skip
    rows = steward.audit_rows("run-1")
    assert [r["id"] for r in rows] == [second, first]
    assert rows[1] == {
        "id": first, "action": "steward:merge", "target": "m-2", "item": "finding-0",
        "run": "run-1", "before": {"memories": {}},
        "after": {"edges": [["MERGED_INTO", "m-3", "m-2"]]}, "undone_at": None,
    }  # fmt: skip
    assert rows[0]["before"] is None and rows[0]["after"] == said  # the text as it was
    assert [r["id"] for r in steward.audit_rows("finding-0")] == [first]
    assert [r["id"] for r in steward.audit_rows(second)] == [second]
    assert steward.audit_rows("run-none") == []

    undone = _now()
    steward.mark_undone(first, undone)
    assert steward.audit_rows(first)[0]["undone_at"] == stored_time(undone)
    recent = steward.recent_audit(2)
    assert [r["id"] for r in recent] == [second, first]
    assert set(recent[0]) == {"id", "actor", "action", "target", "item", "run", "at", "undone_at"}
    assert recent[1]["undone_at"] == stored_time(undone)
    assert isinstance(recent[0]["at"], datetime) and recent[0]["at"] >= recent[1]["at"]
    assert [(r["actor"], r["run"]) for r in steward.recent_audit(10)][2] == ("user", None)


def test_the_policy_is_a_json_document_under_its_key(contract_store: Any) -> None:
    steward = contract_store.steward
    assert steward.meta_json(POLICY_KEY) is None
    steward.set_meta_json(POLICY_KEY, {"auto_apply": ["stale"], "days": 30})
    steward.set_meta_json(POLICY_KEY, {"auto_apply": [], "days": 45})
    assert steward.meta_json(POLICY_KEY) == {"auto_apply": [], "days": 45}
    assert steward.meta_json("other") is None


# -- what an undo puts back ------------------------------------------------------------------


def test_a_memorys_state_goes_through_json_and_back(contract_store: Any) -> None:
    memory = _memory("state")
    _put(contract_store, memory)
    steward = contract_store.steward
    before = steward.memory_state([memory.id, "01NOSUCH", memory.id])
    assert before == {
        memory.id: {
            "lifecycle": "active", "lifecycle_reason": None, "valid_to": None, "owner": None,
            "importance": 0.5, "tags": ["payments"], "verified_at": None, "verify_status": None,
            "verify_method": None, "verify_note": None,
            "updated_at": stored_time(memory.updated_at),
        }
    }  # fmt: skip
    checked = _now()
    changed = {
        **before[memory.id], "lifecycle": "canonical", "owner": "ana", "importance": 1,
        "tags": [], "verified_at": checked.isoformat(),
        "verify_status": "verified", "verify_method": "read", "valid_to": str(stored_time(checked)),
    }  # fmt: skip
    steward.restore_state(memory.id, changed)
    now = steward.memory_state([memory.id])[memory.id]
    assert now == changed | {
        "importance": 1.0, "verified_at": stored_time(checked), "valid_to": stored_time(checked),
    }  # fmt: skip
    assert isinstance(now["importance"], float)
    got = contract_store.memories.get(memory.id)
    assert (got.lifecycle, got.owner, got.verify_status, got.tags) == (
        "canonical", "ana", "verified", [],
    )  # fmt: skip
    steward.restore_state(memory.id, json.loads(json.dumps(before[memory.id], default=str)))
    assert steward.memory_state([memory.id]) == before
    assert contract_store.memories.get(memory.id) == memory


def test_only_the_edges_the_steward_makes_are_deleted(contract_store: Any) -> None:
    with pytest.raises(ValueError):
        contract_store.steward.delete_edge("AVOIDS", "01A", "01B")


# -- what detection reads --------------------------------------------------------------------


def _detection_memories(store: Any, now: datetime) -> dict[str, str]:
    """Live, old and new memories of every type, and those detection leaves out."""
    memories = {
        "old": _memory("old", now=now, context="payments", service="api", importance=0.3),
        "canon": _memory(
            "canon", now=now, context="payments", kind="decision", lifecycle="canonical"
        ),
        "summary": _memory("summary", now=now, kind="summary"),
        "archived": _memory("archived", now=now, lifecycle="archived", importance=0.1),
        "working": _memory("working", now=now, days=3, type="working", importance=0.2),
        "checkpoint": _memory("checkpoint", now=now, kind="checkpoint"),
        "fresh": _memory("fresh", now=now, days=0.01, importance=0.1),
        "used": _memory("used", now=now, service="api", importance=0.1),
    }
    _put(store, *memories.values())
    return {name: m.id for name, m in memories.items()}


def test_detection_reads_live_memories_by_group(contract_store: Any) -> None:
    steward, now = contract_store.steward, _now()
    ids = _detection_memories(contract_store, now)
    steward.restore_state(
        ids["canon"], {"verify_status": "verified", "verified_at": now - timedelta(days=1)}
    )
    contract_store.memories.add_accesses([{"id": ids["used"], "n": 2, "t": 1}], at=now)
    live = {"old", "canon", "working", "fresh", "used"}
    rows = steward.live_memory_rows(context=None, service=None)
    assert {r[0] for r in rows} == {ids[n] for n in live}
    (old,) = [r for r in rows if r[0] == ids["old"]]
    assert old == (
        ids["old"], "note", "episodic", "payments", "old: the payments pool timed out", "old",
        "active", 0.3, 0, stored_time(now - timedelta(days=10)),
    )  # fmt: skip
    assert [r[8] for r in rows if r[0] == ids["used"]] == [2]
    by_context = steward.live_memory_rows(context="payments", service=None)
    assert {r[0] for r in by_context} == {ids["old"], ids["canon"]}
    both = steward.live_memory_rows(context="payments", service="api")
    assert [r[0] for r in both] == [ids["old"]]
    assert steward.count_live() == len(live)
    assert steward.verified_ids([ids["canon"], ids["old"], "01NOSUCH"]) == {ids["canon"]}

    two_days = now - timedelta(days=2)
    stale = steward.stale_rows(before=two_days, context=None, service=None)
    assert sorted(stale) == [
        (ids["old"], "note", None, None, stored_time(now - timedelta(days=10))),
    ]
    assert steward.stale_rows(before=two_days, context=None, service="web") == []
    assert steward.expired_working(before=two_days, context=None, service=None) == [
        (ids["working"], stored_time(now - timedelta(days=3)))
    ]
    assert steward.expired_working(before=two_days, context="payments", service=None) == []


def test_sweeping_takes_old_unused_unreferenced_memories(contract_store: Any) -> None:
    steward, now = contract_store.steward, _now()
    ids = _detection_memories(contract_store, now)
    contract_store.memories.add_accesses([{"id": ids["used"], "n": 1, "t": 0}], at=now)
    two_days = now - timedelta(days=2)
    swept = sorted(steward.sweepable(before=two_days, max_importance=0.4))
    expected = [
        (ids["old"], "episodic", stored_time(now - timedelta(days=10))),
        (ids["working"], "working", stored_time(now - timedelta(days=3))),
    ]
    assert swept == sorted(expected)
    assert steward.sweepable(before=two_days, max_importance=0.25) == [expected[1]]
    assert steward.reference_counts() == {}
    steward.write_reference_counts({ids["old"]: 2})
    assert steward.sweepable(before=two_days, max_importance=0.4) == [expected[1]]
    steward.write_reference_counts({})
    assert sorted(steward.sweepable(before=two_days, max_importance=0.4)) == sorted(expected)


# -- sedimentation ---------------------------------------------------------------------------


def test_the_sediment_table_and_layers_are_read_and_set(contract_store: Any) -> None:
    steward, now = contract_store.steward, _now()
    empty = steward.sediment_table()
    assert empty.schema == SEDIMENT and empty.num_rows == 0
    ids = _detection_memories(contract_store, now)
    contract_store.memories.add_accesses([{"id": ids["used"], "n": 1, "t": 3}], at=now)
    table = steward.sediment_table()
    assert table.schema == SEDIMENT
    rows = {r["id"]: r for r in table.to_pylist()}
    assert set(rows) == {ids[n] for n in ("old", "canon", "working", "fresh", "used")}
    assert rows[ids["used"]] == {
        "id": ids["used"], "layer": None, "layer_at": None, "layer_by": None,
        "lifecycle": "active", "created_at": stored_time(now - timedelta(days=10)),
        "accessed_at": stored_time(now), "targeted": 3,
    }  # fmt: skip
    assert rows[ids["canon"]]["lifecycle"] == "canonical"

    moved = now - timedelta(hours=1)
    steward.set_layers([(ids["old"], "episodic", moved, "up"), (ids["fresh"], None, None, None)])
    assert steward.layer_states([ids["old"], ids["fresh"], "01NOSUCH"]) == {
        ids["old"]: ("episodic", stored_time(moved), "up"),
        ids["fresh"]: (None, None, None),
    }
    again = {r["id"]: r for r in steward.sediment_table().to_pylist()}
    assert (again[ids["old"]]["layer"], again[ids["old"]]["layer_at"]) == (
        "episodic", stored_time(moved),
    )  # fmt: skip
    assert contract_store.memories.get(ids["old"]).layer == "episodic"
    assert steward.set_layers([]) is None


def test_moves_and_their_audit_rows_commit_together_or_not_at_all(contract_store: Any) -> None:
    steward, now = contract_store.steward, _now()
    ids = _detection_memories(contract_store, now)
    with pytest.raises(RuntimeError), contract_store.transaction():
        steward.set_layers([(ids["old"], "semantic", now, "up")])
        steward.audit_step(
            actor="steward", action="sediment", target=ids["old"], item=None, run="cycle-1",
            before={"layers": {}}, after={"layers": {}},
        )  # fmt: skip
        raise RuntimeError("the cycle fails before its commit")
    assert steward.layer_states([ids["old"]]) == {ids["old"]: (None, None, None)}
    assert steward.recent_audit(5) == []
    with contract_store.transaction():
        steward.set_layers([(ids["old"], "semantic", now, "up")])
        audit_id = steward.audit_step(
            actor="steward", action="sediment", target=ids["old"], item=None, run="cycle-2",
            before={"layers": {}}, after={"layers": {}},
        )  # fmt: skip
    assert steward.layer_states([ids["old"]])[ids["old"]][0] == "semantic"
    assert [r["id"] for r in steward.audit_rows("cycle-2")] == [audit_id]


# -- reads over what the other repositories write --------------------------------------------


def test_versions_avoidances_and_merges_are_found_and_counted(contract_store: Any) -> None:
    knowledge = contract_store.knowledge
    steward, now = contract_store.steward, _now()
    memories = {
        "decision": _memory("decision", kind="decision"),
        "dead": _memory("dead", kind="dead_end"),
        "older": _memory("older", importance=0.1),
        "newer": _memory("newer", days=1),
        "primary": _memory("primary"),
        "dup": _memory("dup"),
    }
    _put(contract_store, *memories.values())
    ids = {name: m.id for name, m in memories.items()}
    knowledge.link_avoids(ids["decision"], [ids["dead"]], at=now)
    knowledge.supersede(ids["older"], reason="replaced", new_id=ids["newer"], at=now)
    knowledge.merge_into(ids["primary"], [ids["dup"]], reason="same", at=now)
    assert steward.avoid_pairs() == {(ids["decision"], ids["dead"])}
    assert steward.superseded_but_live() == []  # the older one is superseded
    steward.restore_state(ids["older"], {"lifecycle": "active"})
    assert steward.superseded_but_live() == [(ids["newer"], ids["older"])]
    assert steward.reference_counts() == {ids["dead"]: 1, ids["older"]: 1, ids["primary"]: 1}
    # nothing counted yet, but a version points at it: not swept
    assert steward.sweepable(before=now, max_importance=0.2) == []
    steward.delete_edge("SUPERSEDES", ids["newer"], ids["older"])
    steward.delete_edge("MERGED_INTO", ids["dup"], ids["primary"])
    assert steward.superseded_but_live() == []
    assert steward.reference_counts() == {ids["dead"]: 1}
    assert [r[0] for r in steward.sweepable(before=now, max_importance=0.2)] == [ids["older"]]


def _entity(name: str) -> EntityRow:
    norm = name.lower()
    return EntityRow(id=f"ent-{norm}", name=name, norm=norm, key=norm, label="tech")


def test_entities_and_facts_of_live_memories_are_read(contract_store: Any) -> None:
    entities = contract_store.entities
    steward, now = contract_store.steward, _now()
    memories = {
        "uses": _memory("uses"),
        "canon": _memory("canon", lifecycle="canonical"),
        "archived": _memory("archived", lifecycle="archived"),
    }
    _put(contract_store, *memories.values())
    ids = {name: m.id for name, m in memories.items()}
    payments, redis, kafka, lonely = (_entity(n) for n in ("Payments", "Redis", "Kafka", "Lonely"))
    fact = FactRow(
        id="fact-1", subject_id=payments.id, predicate="uses", object_id=redis.id,
        subject="Payments", object="Redis", text="Payments uses Redis", confidence=0.8,
    )  # fmt: skip
    archived_fact = FactRow(
        id="fact-2", subject_id=payments.id, predicate="uses", object_id=kafka.id,
        subject="Payments", object="Kafka", text="Payments uses Kafka", confidence=0.8,
    )  # fmt: skip
    entities.write_extraction(
        list(ids.values()), extractor="test", entities=[payments, redis, kafka, lonely],
        aliases={},
        mentions=[
            Mention(ids["uses"], payments.id, "Payments"), Mention(ids["uses"], redis.id, "Redis"),
            Mention(ids["canon"], payments.id, "Payments"),
            Mention(ids["canon"], redis.id, "Redis"),
            Mention(ids["archived"], payments.id, "Payments"),
        ],
        facts=[fact, archived_fact],
        provenance=[Provenance("fact-1", ids["uses"], 0.8), Provenance("fact-2", ids["archived"], 0.8)],
        at=now,
    )  # fmt: skip
    assert steward.entity_sets([ids["uses"], ids["archived"], "01NOSUCH"]) == {
        ids["uses"]: {payments.id, redis.id}, ids["archived"]: {payments.id},
    }  # fmt: skip
    assert steward.live_facts() == [
        (ids["uses"], payments.id, "uses", redis.id, "Payments", "Redis")
    ]
    assert steward.reference_counts() == {ids["uses"]: 2}  # what it shares with the canonical one
    assert steward.orphan_entities() == [(lonely.id, "Lonely")]


def test_pending_review_items_of_a_deleted_memory_are_orphans(contract_store: Any) -> None:
    sessions = contract_store.sessions
    kept, gone = _put(contract_store, _memory("kept"), _memory("gone"))
    sessions.upsert(
        "session-1", client="cli", mode="work", context=None, service=None, cwd=None,
        ended_at=_now(), summary_id=None,
    )  # fmt: skip

    def item(target: str | None, n: int) -> str:
        item_id: str = sessions.add_review_item(
            "session-1",
            {"action": "update", "statement_kind": "fact", "statement": f"statement {n}",
             "target": target, "risk": "low", "confidence": 0.5, "rationale": "r",
             "fingerprint": f"print-{n}", "payload": {}},
        )  # fmt: skip
        return item_id

    orphan, _, _ = item(gone, 0), item(kept, 1), item(None, 2)
    resolved = item(gone, 3)
    sessions.set_item_status(resolved, status="dismissed", note=None, actor="user")
    assert contract_store.steward.orphan_review_items() == []
    contract_store.memories.delete(gone)
    assert contract_store.steward.orphan_review_items() == [(orphan, gone)]
