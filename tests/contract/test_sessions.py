"""The sessions repository's contract (graphmem.storage.protocols.Sessions), the same on every
engine: sessions made and updated field by field, their memories, and the review items they
file, filtered, ordered, resolved and reopened."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pytest

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.errors import NotFound
from graphmem.models import Memory, utcnow

pytestmark = [
    pytest.mark.falkordb,
    pytest.mark.filterwarnings("ignore:Call to '__init__' function:DeprecationWarning"),
]

SPACE = EmbeddingSpace("hash", "contract", 8)
NOW = utcnow().replace(microsecond=0)


def _insert(store: Any, n: int) -> list[str]:
    memories = [
        Memory(
            id=f"01SESS{i:020d}",
            content=f"note {i}",
            created_at=NOW + timedelta(seconds=i),
            updated_at=NOW + timedelta(seconds=i),
        )
        for i in range(n)
    ]
    rows = np.random.default_rng(n).standard_normal((n, SPACE.dim)).astype(np.float32)
    store.memories.insert(memories, rows, SPACE)
    return [m.id for m in memories]


def _rows(store: Any, query: str, **params: Any) -> list[list[Any]]:
    """What the graph holds, in Cypher both engines read alike."""
    rows: list[list[Any]] = store.cypher(query, params, write=False).rows
    return rows


def _session(store: Any, session_id: str) -> dict[str, Any]:
    fields = ("client", "mode", "context", "service", "cwd", "summary_id")
    (row,) = _rows(
        store,
        "MATCH (s:Session {id: $id}) RETURN " + ", ".join(f"s.{f}" for f in fields),
        id=session_id,
    )
    return dict(zip(fields, row, strict=True))


def _upsert(store: Any, session_id: str, **fields: Any) -> None:
    values: dict[str, Any] = {
        "client": None, "mode": "work", "context": None, "service": None, "cwd": None,
        "ended_at": None, "summary_id": None, **fields,
    }  # fmt: skip
    store.sessions.upsert(session_id, **values)


def _fields(n: int, **over: Any) -> dict[str, Any]:
    return {
        "action": "create", "statement_kind": "fact", "statement": f"statement {n}",
        "target": None, "risk": "low", "confidence": 0.8, "rationale": f"why {n}",
        "fingerprint": f"fp-{n}", "payload": {"context": "billing", "n": n}, **over,
    }  # fmt: skip


def test_an_upsert_keeps_what_it_is_not_given_but_always_sets_the_end(
    contract_store: Any,
) -> None:
    sessions = contract_store.sessions
    _upsert(
        contract_store, "s-1", client="claude", context="billing", service="api", cwd="/src",
        ended_at=NOW,
    )  # fmt: skip
    _upsert(contract_store, "s-1", mode="review", summary_id="01SUMMARY")
    assert _session(contract_store, "s-1") == {
        "client": "claude", "mode": "review", "context": "billing", "service": "api",
        "cwd": "/src", "summary_id": "01SUMMARY",
    }  # fmt: skip
    ended = _rows(contract_store, "MATCH (s:Session {id: 's-1'}) RETURN s.ended_at")
    assert ended == [[None]]  # always set, here to nothing
    _upsert(contract_store, "s-2", client="claude")
    _upsert(contract_store, "s-3", client="cursor")
    _upsert(contract_store, "s-4")
    assert sessions.by_client() == {"claude": ["s-1", "s-2"], "cursor": ["s-3"]}


def test_memories_are_linked_to_their_session_once(contract_store: Any) -> None:
    ids = _insert(contract_store, 3)
    _upsert(contract_store, "s-1")
    contract_store.sessions.link_memories("s-1", [ids[0], ids[2], "01MISSING"])
    contract_store.sessions.link_memories("s-1", [ids[0]])
    contract_store.sessions.link_memories("s-1", [])
    contract_store.sessions.link_memories("s-none", [ids[1]])  # no session: nothing linked
    linked = _rows(
        contract_store,
        "MATCH (m:Memory)-[:IN_SESSION]->(s:Session) RETURN s.id, m.id ORDER BY m.id",
    )
    assert linked == [["s-1", ids[0]], ["s-1", ids[2]]]


def test_review_items_are_filed_filtered_oldest_first_and_resolved(contract_store: Any) -> None:
    (target,) = _insert(contract_store, 1)
    sessions = contract_store.sessions
    _upsert(contract_store, "s-1")
    _upsert(contract_store, "s-2")
    filed = utcnow().replace(tzinfo=None)
    first = sessions.add_review_item("s-1", _fields(1, target=target, action="update"))
    second = sessions.add_review_item("s-2", _fields(2))
    third = sessions.add_review_item("s-1", _fields(3, confidence=1))
    lost = sessions.add_review_item("s-none", _fields(4))  # no session: nothing filed
    with pytest.raises(NotFound):
        sessions.review_item(lost)
    with pytest.raises(NotFound):
        sessions.review_item("01MISSING")

    item = sessions.review_item(first)
    created = item.pop("created_at")
    assert isinstance(created, datetime) and created.tzinfo is None
    assert filed - timedelta(seconds=1) <= created <= utcnow().replace(tzinfo=None)
    assert item == {
        "id": first, "session": "s-1", "action": "update", "statement_kind": "fact",
        "statement": "statement 1", "target": target, "risk": "low", "confidence": 0.8,
        "rationale": "why 1", "status": "pending", "note": None, "resolved_at": None,
        "resolved_by": None, "payload": {"context": "billing", "n": 1},
    }  # fmt: skip
    assert sessions.review_item(third)["confidence"] == 1.0
    reviews = _rows(contract_store, "MATCH (r:ReviewItem)-[:REVIEWS]->(m:Memory) RETURN r.id, m.id")
    assert reviews == [[first, target]]
    filed_in = _rows(
        contract_store,
        "MATCH (r:ReviewItem)-[:IN_SESSION]->(s:Session) RETURN r.id, s.id ORDER BY r.id",
    )
    assert filed_in == sorted([[first, "s-1"], [second, "s-2"], [third, "s-1"]])

    def ids(**filters: Any) -> list[str]:
        query = {"session": None, "status": None, "action": None, "limit": 10, **filters}
        return [row["id"] for row in sessions.review_items(**query)]

    assert ids() == [first, second, third]
    assert ids(limit=2) == [first, second]
    assert ids(session="s-1") == [first, third]
    assert ids(action="create") == [second, third]
    assert ids(session="s-1", action="create") == [third]
    assert sessions.count_pending_reviews() == 3
    assert sessions.resolved_fingerprints(["fp-1", "fp-3", "fp-9"]) == {
        "fp-1": "pending",
        "fp-3": "pending",
    }
    assert sessions.resolved_fingerprints([]) == {}

    sessions.set_item_status(first, status="rejected", note="wrong", actor="ana")
    resolved = sessions.review_item(first)
    assert (resolved["status"], resolved["note"], resolved["resolved_by"]) == (
        "rejected",
        "wrong",
        "ana",
    )
    assert isinstance(resolved["resolved_at"], datetime) and resolved["resolved_at"] >= created
    assert ids(status="pending") == [second, third]
    assert ids(status="rejected") == [first]
    assert sessions.count_pending_reviews() == 2
    assert sessions.resolved_fingerprints(["fp-1"]) == {"fp-1": "rejected"}

    sessions.reopen_review_item(first, status="pending")
    reopened = sessions.review_item(first)
    assert (reopened["status"], reopened["note"]) == ("pending", None)
    assert (reopened["resolved_at"], reopened["resolved_by"]) == (None, None)
    assert sessions.count_pending_reviews() == 3


def test_a_session_its_memory_and_its_items_commit_together_or_not_at_all(
    contract_store: Any,
) -> None:
    sessions = contract_store.sessions
    with contract_store.transaction():  # each write sees the ones before it
        (memory,) = _insert(contract_store, 1)
        _upsert(contract_store, "s-1", client="claude")
        item = sessions.add_review_item("s-1", _fields(1, target=memory))
        sessions.link_memories("s-1", [memory])
    assert sessions.review_item(item)["target"] == memory
    assert _rows(contract_store, "MATCH (r:ReviewItem)-[:REVIEWS]->(m:Memory) RETURN m.id") == [
        [memory]
    ]
    assert _rows(contract_store, "MATCH (m:Memory)-[:IN_SESSION]->(s:Session) RETURN s.id") == [
        ["s-1"]
    ]
    with pytest.raises(RuntimeError), contract_store.transaction():
        _upsert(contract_store, "s-2", client="cursor")
        lost = sessions.add_review_item("s-2", _fields(2))
        raise RuntimeError("the caller fails before the commit")
    assert sessions.by_client() == {"claude": ["s-1"]}
    with pytest.raises(NotFound):
        sessions.review_item(lost)
    assert sessions.count_pending_reviews() == 1
