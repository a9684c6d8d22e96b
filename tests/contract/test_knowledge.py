"""The knowledge repository's contract (graphmem.storage.protocols.Knowledge), the same on every
engine: versions and their chains, merges, dead ends and the decisions that avoid them,
citations and verification, with the same errors and times read back as naive UTC."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.errors import Conflict, InvalidInput, NotFound
from graphmem.models import Memory, stored_time, utcnow

pytestmark = [
    pytest.mark.falkordb,
    pytest.mark.filterwarnings("ignore:Call to '__init__' function:DeprecationWarning"),
]

SPACE = EmbeddingSpace("hash", "contract", 8)
NOW = utcnow().replace(microsecond=0)


def _memory(n: int, **fields: Any) -> Memory:
    values: dict[str, Any] = {
        "id": f"01KNOW{n:020d}",
        "content": f"note {n}: the payments pool timed out",
        "title": f"note {n}",
        "created_at": NOW + timedelta(seconds=n),
        "updated_at": NOW + timedelta(seconds=n),
        **fields,
    }
    return Memory(**values)


def _insert(store: Any, *memories: Memory) -> list[Memory]:
    rows = np.random.default_rng(len(memories)).standard_normal((len(memories), SPACE.dim))
    store.memories.insert(list(memories), rows.astype(np.float32), SPACE)
    return list(memories)


def _ids(memories: list[Memory]) -> list[str]:
    return [m.id for m in memories]


def _stored(store: Any, memory_id: str, field: str) -> Any:
    """A stored field a Memory does not carry (the same Cypher on every engine)."""
    rows = store.cypher(
        f"MATCH (m:Memory {{id: $id}}) RETURN m.{field}", {"id": memory_id}, write=False
    ).rows
    return rows[0][0]


def test_a_superseded_memory_closes_at_its_successors_start_and_the_chain_reads_both_ways(
    contract_store: Any,
) -> None:
    start = NOW + timedelta(days=1)
    v1, v2, v3 = _insert(contract_store, _memory(1), _memory(2, valid_from=start), _memory(3))
    at = NOW + timedelta(days=2)
    knowledge = contract_store.knowledge
    knowledge.supersede(v1.id, reason="pool resized", new_id=v2.id, at=at)
    knowledge.supersede(v2.id, reason="pool removed", new_id=v3.id, at=at + timedelta(hours=1))

    old = contract_store.memories.get(v1.id)
    assert old.lifecycle == "superseded"
    assert _stored(contract_store, v1.id, "lifecycle_reason") == "pool resized"
    assert old.valid_to == start  # the successor's valid_from, not `at`
    assert old.updated_at == at
    middle = contract_store.memories.get(v2.id)
    assert middle.valid_to == at + timedelta(hours=1)  # the successor has no valid_from
    assert contract_store.memories.get(v3.id).lifecycle == "active"

    assert knowledge.newest_successors([v1.id, v2.id, v3.id, "01NONE"]) == {
        v1.id: v3.id,
        v2.id: v3.id,
    }
    for anchor in (v1.id, v2.id, v3.id):
        versions = {
            m.id: (m.lifecycle, by, when, why) for m, by, when, why in knowledge.chain(anchor)
        }
        assert versions == {
            v1.id: ("superseded", v2.id, stored_time(at), "pool resized"),
            v2.id: ("superseded", v3.id, stored_time(at + timedelta(hours=1)), "pool removed"),
            v3.id: ("active", None, None, None),
        }
    chain = knowledge.chain(v2.id)
    assert chain[0][0] == contract_store.memories.get(v2.id)  # the anchor first, field for field
    assert {(rel, mid) for rel, mid, *_ in knowledge.linked_memories(v2.id)} == {
        ("supersedes", v1.id),
        ("superseded_by", v3.id),
    }
    linked = knowledge.linked_memories(v1.id)
    assert linked == [("superseded_by", v2.id, "note 2", v2.content, "note", "superseded")]


def test_supersede_refuses_what_would_break_a_chain(contract_store: Any) -> None:
    v1, v2, v3 = _insert(contract_store, _memory(1), _memory(2), _memory(3))
    knowledge = contract_store.knowledge
    at = NOW + timedelta(days=1)
    with pytest.raises(InvalidInput):
        knowledge.supersede(v1.id, reason="x", new_id=v1.id, at=at)
    with pytest.raises(NotFound):
        knowledge.supersede("01MISSING", reason="x", new_id=v2.id, at=at)
    with pytest.raises(NotFound):
        knowledge.supersede(v1.id, reason="x", new_id="01MISSING", at=at)
    knowledge.supersede(v1.id, reason="newer", new_id=v2.id, at=at)
    with pytest.raises(Conflict):  # superseded already
        knowledge.supersede(v1.id, reason="again", new_id=v3.id, at=at)
    with pytest.raises(Conflict):  # v1 is an older version of v2: no loop
        knowledge.supersede(v2.id, reason="loop", new_id=v1.id, at=at)
    assert knowledge.newest_successors([v1.id, v2.id]) == {v1.id: v2.id}
    with pytest.raises(NotFound):
        knowledge.chain("01MISSING")
    assert [m.id for m, *_ in knowledge.chain(v3.id)] == [v3.id]


def test_a_successor_another_node_links_first_wins_and_the_chain_does_not_fork(
    contract_store: Any, engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if engine != "falkordb":
        pytest.skip("the embedded engine has one writer per store: no other node")
    from graphmem.storage.falkordb.store import FalkorStore
    from graphmem.store_url import parse_store_url

    v1, v2, v3, v4, v5 = _insert(contract_store, *(_memory(n) for n in range(1, 6)))
    server = request.getfixturevalue("falkordb_server")
    other = FalkorStore.open(parse_store_url(server.store_url("project")), tmp_path / "other")
    knowledge = contract_store.knowledge
    at = NOW + timedelta(days=1)
    try:
        with contract_store.transaction():  # checked and buffered; the other node commits first
            knowledge.supersede(v1.id, reason="mine", new_id=v2.id, at=at)
            other.knowledge.supersede(v1.id, reason="theirs", new_id=v3.id, at=at)
        with contract_store.transaction():
            knowledge.supersede(v4.id, reason="mine", new_id=None, at=at + timedelta(hours=1))
            other.knowledge.supersede(v4.id, reason="theirs", new_id=v5.id, at=at)
    finally:
        other.close()
    assert knowledge.newest_successors([v1.id, v4.id]) == {v1.id: v3.id, v4.id: v5.id}
    versions = {m.id: (by, why) for m, by, _, why in knowledge.chain(v1.id)}
    assert versions == {v1.id: (v3.id, "theirs"), v3.id: (None, None)}
    assert contract_store.memories.get(v2.id).lifecycle == "active"
    retired = contract_store.memories.get(v4.id)
    assert (retired.lifecycle, retired.valid_to) == ("superseded", at)


def test_a_memory_retired_without_successor_is_outdated_from_then(contract_store: Any) -> None:
    (memory,) = _insert(contract_store, _memory(1))
    at = NOW + timedelta(hours=3)
    contract_store.knowledge.supersede(memory.id, reason="no longer true", new_id=None, at=at)
    found = contract_store.memories.get(memory.id)
    assert (found.lifecycle, found.valid_to) == ("outdated", at)
    assert _stored(contract_store, memory.id, "lifecycle_reason") == "no longer true"
    assert contract_store.knowledge.newest_successors([memory.id]) == {}
    (only,) = contract_store.knowledge.chain(memory.id)
    assert only[1:] == (None, stored_time(at), "no longer true")  # its own end and reason
    assert contract_store.knowledge.linked_memories(memory.id) == []


def test_merged_duplicates_are_archived_and_linked_to_the_primary(contract_store: Any) -> None:
    ended = NOW + timedelta(hours=1)
    keep, dup1, dup2, other = _insert(
        contract_store, _memory(1), _memory(2), _memory(3, valid_to=ended), _memory(4)
    )
    knowledge = contract_store.knowledge
    at = NOW + timedelta(days=1)
    with pytest.raises(InvalidInput):
        knowledge.merge_into(keep.id, [dup1.id, keep.id], reason=None, at=at)
    with pytest.raises(InvalidInput):
        knowledge.merge_into(keep.id, [], reason=None, at=at)
    with pytest.raises(NotFound):
        knowledge.merge_into(keep.id, [dup1.id, "01MISSING"], reason=None, at=at)
    assert contract_store.memories.get(dup1.id).lifecycle == "active"  # nothing written
    knowledge.merge_into(keep.id, [dup1.id, dup2.id], reason="same incident", at=at)
    for dup, valid_to in ((dup1, at), (dup2, ended)):  # a closed validity keeps its end
        found = contract_store.memories.get(dup.id)
        assert found.lifecycle == "archived"
        assert _stored(contract_store, dup.id, "lifecycle_reason") == f"merged into {keep.id}"
        assert (found.valid_to, found.updated_at) == (valid_to, at)
    assert contract_store.memories.get(keep.id).lifecycle == "active"
    assert contract_store.memories.get(other.id).lifecycle == "active"
    assert sorted((r, i) for r, i, *_ in knowledge.linked_memories(keep.id)) == [
        ("merged_from", dup1.id),
        ("merged_from", dup2.id),
    ]
    assert knowledge.linked_memories(dup1.id) == [
        ("merged_into", keep.id, "note 1", keep.content, "note", "active")
    ]


def test_dead_ends_are_checked_linked_and_found_near_related_memories(contract_store: Any) -> None:
    dead = "dead_end"
    decision, near_ctx, near_tag, avoided, archived, far, note = _insert(
        contract_store,
        _memory(1, kind="decision", context="billing", tags=["pool"]),
        _memory(2, kind=dead, context="billing"),
        _memory(3, kind=dead, context="search", tags=["pool", "x"]),
        _memory(4, kind=dead, context="billing", tags=["pool"]),
        _memory(5, kind=dead, context="billing", lifecycle="archived"),
        _memory(6, kind=dead, context="elsewhere"),
        _memory(7, kind="note", context="billing"),
    )
    knowledge = contract_store.knowledge
    knowledge.check_dead_ends([near_ctx.id, avoided.id])
    with pytest.raises(NotFound):
        knowledge.check_dead_ends([near_ctx.id, "01MISSING"])
    with pytest.raises(InvalidInput):
        knowledge.check_dead_ends([note.id, "01MISSING"])  # the first wrong one, in order
    with pytest.raises(InvalidInput):
        knowledge.link_avoids(decision.id, [note.id], at=NOW)
    assert knowledge.avoided_by([note.id]) == {}

    assert knowledge.dead_end_ids() == sorted([near_ctx.id, near_tag.id, avoided.id, far.id])
    knowledge.link_avoids(decision.id, [avoided.id, archived.id], at=NOW)
    knowledge.link_avoids(decision.id, [avoided.id], at=NOW)  # once only
    assert knowledge.avoided_by([avoided.id, archived.id, far.id]) == {
        avoided.id: [decision.id],
        archived.id: [decision.id],
    }
    assert knowledge.linked_memories(decision.id) == [
        ("avoids", avoided.id, "note 4", avoided.content, dead, "active"),
        ("avoids", archived.id, "note 5", archived.content, dead, "archived"),
    ]
    near = knowledge.dead_ends_near([decision], limit=10)  # each once, however it is near
    assert sorted(m.id for m in near) == sorted([near_ctx.id, near_tag.id, avoided.id])
    assert {m.id: m for m in near}[near_tag.id] == contract_store.memories.get(near_tag.id)
    assert len(knowledge.dead_ends_near([decision], limit=2)) == 2
    assert [m.id for m in knowledge.dead_ends_near([near_ctx], limit=10)] == [avoided.id]
    assert [m.id for m in knowledge.dead_ends_near([far], limit=10)] == []

    knowledge.set_fields(near_ctx.id, {"lifecycle": "archived"})
    assert knowledge.dead_end_ids() == sorted([near_tag.id, avoided.id, far.id])


def test_set_fields_sets_knowledge_fields_only(contract_store: Any) -> None:
    (memory,) = _insert(contract_store, _memory(1))
    at = NOW + timedelta(minutes=5)
    fields = {
        "lifecycle": "canonical", "lifecycle_reason": "promoted by ana", "owner": "ana",
        "importance": 0.9, "verified_at": at, "verify_status": "verified",
        "verify_method": "read the code", "verify_note": "ok", "updated_at": at,
    }  # fmt: skip
    contract_store.knowledge.set_fields(memory.id, fields)
    carried = {k: v for k, v in fields.items() if k in Memory.model_fields}
    assert contract_store.memories.get(memory.id) == memory.model_copy(update=carried)
    for field in ("lifecycle_reason", "verify_method", "verify_note"):
        assert _stored(contract_store, memory.id, field) == fields[field]
    contract_store.knowledge.set_fields(memory.id, {"verify_note": None, "importance": 0.3})
    assert _stored(contract_store, memory.id, "verify_note") is None
    assert contract_store.memories.get(memory.id).importance == 0.3
    with pytest.raises(InvalidInput):
        contract_store.knowledge.set_fields(memory.id, {"content": "rewritten"})
    with pytest.raises(NotFound):
        contract_store.knowledge.set_fields("01MISSING", {"owner": "ana"})
    assert contract_store.memories.get(memory.id).content == memory.content


def test_citations_record_files_and_their_hashes_at_verification(contract_store: Any) -> None:
    first, second, gone = _insert(contract_store, _memory(2), _memory(1), _memory(3))
    knowledge = contract_store.knowledge
    knowledge.cite(first.id, "src/pool.py", section="limits", sha256="aaa", at=NOW)
    knowledge.cite(first.id, "docs/pool.md", section=None, sha256=None, at=NOW)
    knowledge.cite(second.id, "src/pool.py", section=None, sha256="bbb", at=NOW)
    knowledge.cite(gone.id, "src/old.py", section=None, sha256="ccc", at=NOW)
    with pytest.raises(NotFound):
        knowledge.cite("01MISSING", "src/pool.py", section=None, sha256="x", at=NOW)
    knowledge.merge_into(first.id, [gone.id], reason=None, at=NOW)
    assert knowledge.citations() == [  # by memory id, then path; archived memories left out
        (second.id, "note 1", "src/pool.py", "bbb"),
        (first.id, "note 2", "docs/pool.md", None),
        (first.id, "note 2", "src/pool.py", "aaa"),
    ]
    assert knowledge.citations(gone.id) == [(gone.id, "note 3", "src/old.py", "ccc")]
    knowledge.record_citation_hashes(
        first.id, {"src/pool.py": "ddd", "docs/pool.md": "eee"}, at=NOW + timedelta(hours=1)
    )
    assert knowledge.citations(first.id) == [
        (first.id, "note 2", "docs/pool.md", "eee"),
        (first.id, "note 2", "src/pool.py", "ddd"),
    ]
    assert knowledge.citations(second.id) == [(second.id, "note 1", "src/pool.py", "bbb")]
    knowledge.record_citation_hashes(second.id, {"src/pool.py": None}, at=NOW)
    assert knowledge.citations(second.id) == [(second.id, "note 1", "src/pool.py", None)]
    knowledge.cite(second.id, "src/pool.py", section="again", sha256="fff", at=NOW)  # once
    assert knowledge.citations(second.id) == [(second.id, "note 1", "src/pool.py", "fff")]


def test_verification_is_due_for_important_and_canonical_memories_not_checked_lately(
    contract_store: Any,
) -> None:
    long_ago, recently = NOW - timedelta(days=200), NOW - timedelta(days=1)
    before = NOW - timedelta(days=90)
    never, oldest, older, fresh, unimportant, canonical, outdated = _insert(
        contract_store,
        _memory(1, importance=0.8),
        _memory(2, importance=0.7, verified_at=long_ago),
        _memory(3, importance=0.9, verified_at=long_ago + timedelta(days=1)),
        _memory(4, importance=0.9, verified_at=recently),
        _memory(5, importance=0.2),
        _memory(6, importance=0.1, lifecycle="canonical", owner="ana"),
        _memory(7, importance=0.9, lifecycle="outdated"),
    )
    due = contract_store.knowledge.verification_due(before=before, min_importance=0.7, limit=10)
    order = _ids(due)
    assert sorted(order) == sorted([never.id, oldest.id, older.id, canonical.id])
    assert order.index(never.id) < order.index(oldest.id)  # never checked: the most due
    assert order.index(oldest.id) < order.index(older.id)  # then the oldest check
    assert order.index(never.id) < order.index(canonical.id)  # then the more important
    assert {m.id: m for m in due}[oldest.id] == contract_store.memories.get(oldest.id)
    top = contract_store.knowledge.verification_due(before=before, min_importance=0.7, limit=2)
    assert len(top) == 2 and set(_ids(top)) < set(order)
    assert {fresh.id, unimportant.id, outdated.id}.isdisjoint(order)
