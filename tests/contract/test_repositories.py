"""The repositories' contracts (graphmem.storage.protocols), the same on every engine: memories
with their vectors, store keys and waiting work, written in one transaction or not at all, read
back field for field, and found again by a store opened afresh from the engine's scans."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.errors import GraphmemError, InvalidInput, NotFound
from graphmem.idempotency import StoreKey
from graphmem.models import Memory, MemoryFilter, utcnow
from graphmem.storage.protocols import EXTRACT, PASSAGES, WORKS
from graphmem.storage.selection import MemorySelection, Mentions
from graphmem.text import query_text

pytestmark = [
    pytest.mark.falkordb,
    pytest.mark.filterwarnings("ignore:Call to '__init__' function:DeprecationWarning"),
]

SPACE = EmbeddingSpace("hash", "contract", 8)


def _memories(n: int, *, prefix: str = "01CONTRACT", **fields: Any) -> list[Memory]:
    now = utcnow().replace(microsecond=0)
    return [
        Memory(
            id=f"{prefix}{i:016d}",
            content=f"note {i}: the payments pool timed out, raised to {i * 10}",
            title=f"pool {i}",
            tags=["payments", f"t{i}"],
            kind="incident" if i % 2 else "note",
            importance=0.5 + i / 100,
            metadata={"source": "contract", "n": i},
            created_at=now + timedelta(seconds=i),
            updated_at=now + timedelta(seconds=i),
            **fields,
        )
        for i in range(n)
    ]


def _vectors(n: int, seed: int = 1) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, SPACE.dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _insert(store: Any, n: int = 4, **kwargs: Any) -> tuple[list[Memory], np.ndarray]:
    memories, vectors = _memories(n), _vectors(n)
    assert store.memories.insert(memories, vectors, SPACE, **kwargs) == n
    return memories, vectors


def test_inserted_memories_read_back_field_for_field(contract_store: Any) -> None:
    memories, _ = _insert(contract_store)
    for memory in memories:
        assert contract_store.memories.get(memory.id) == memory
    assert contract_store.memories.get_many([m.id for m in memories[:2]]) == {
        m.id: m for m in memories[:2]
    }
    assert contract_store.memories.existing_ids([memories[0].id, "nope"]) == {memories[0].id}
    assert contract_store.memories.all_ids() == {m.id for m in memories}
    assert contract_store.memories.count() == 4
    with pytest.raises(NotFound):
        contract_store.memories.get("nope")


def test_vectors_are_stored_per_space_and_searched_in_process(contract_store: Any) -> None:
    memories, vectors = _insert(contract_store)
    assert contract_store.vectors.space_names() == {SPACE.name}
    assert contract_store.vectors.has_space(SPACE)
    assert contract_store.vectors.count(SPACE) == 4
    found = contract_store.vectors.nearest(SPACE, vectors[2], 2)
    assert found[0][0] == memories[2].id and found[0][1] == pytest.approx(1.0, abs=1e-5)
    ids, matrix = contract_store.vectors.matrix(SPACE)
    assert np.allclose(matrix[ids.rows([memories[1].id])[0]], vectors[1], atol=1e-6)
    with pytest.raises(InvalidInput):
        contract_store.vectors.put(SPACE, ["x"], np.zeros((1, 3), np.float32))


def test_a_store_opened_afresh_builds_its_search_state_from_the_scans(
    contract_store: Any, engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    memories, vectors = _insert(contract_store)
    contract_store.close()
    again = _reopen(engine, tmp_path, request)
    try:
        assert again.vectors.nearest(SPACE, vectors[3], 1)[0][0] == memories[3].id
        hits = again.memories.keyword_search(query_text("payments pool raised to 20"), top=2)
        assert hits[0][0] == memories[2].id
        rows = again.memories.scoring_rows([m.id for m in memories])
        assert rows[memories[1].id].importance == pytest.approx(0.51)
        assert again.memories.matching_ids(MemoryFilter(kind="incident")) == {
            memories[1].id, memories[3].id,
        }  # fmt: skip
    finally:
        again.close()


def _reopen(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    if engine == "embedded":
        from graphmem.storage import open_store_at

        return open_store_at(tmp_path / "store")
    from graphmem.storage.falkordb.store import FalkorStore
    from graphmem.store_url import parse_store_url

    server = request.getfixturevalue("falkordb_server")
    return FalkorStore.open(parse_store_url(server.store_url("project")), tmp_path / "home2")


def test_an_update_replaces_fields_and_vector_and_a_delete_takes_everything(
    contract_store: Any,
) -> None:
    memories, vectors = _insert(contract_store)
    changed = memories[0].model_copy(update={"content": "rewritten", "tags": ["other"]})
    contract_store.memories.update(changed, vectors[3], SPACE)
    assert contract_store.memories.get(changed.id) == changed
    assert contract_store.vectors.count(SPACE) == 4
    nearest = contract_store.vectors.nearest(SPACE, vectors[3], 2)
    assert {i for i, _ in nearest} == {memories[0].id, memories[3].id}
    contract_store.memories.delete(memories[1].id)
    assert contract_store.memories.existing_ids([memories[1].id]) == set()
    assert contract_store.vectors.count(SPACE) == 3
    assert memories[1].id not in contract_store.pending.among(EXTRACT, [memories[1].id])
    with pytest.raises(NotFound):
        contract_store.memories.delete(memories[1].id)
    with pytest.raises(NotFound):
        contract_store.memories.update(memories[1], None, None)


def test_new_memories_wait_for_extraction_and_pending_work_keeps_its_first_time(
    contract_store: Any,
) -> None:
    memories, _ = _insert(contract_store, deferred_passages=["01CONTRACT0000000000000001"])
    ids = [m.id for m in memories]
    assert contract_store.pending.items(EXTRACT) == sorted(ids)
    assert contract_store.pending.items(PASSAGES) == [ids[1]]
    assert contract_store.pending.among(EXTRACT, [ids[2], "gone", ids[0]]) == [ids[2], ids[0]]
    contract_store.pending.put(EXTRACT, [ids[0], "extra"])
    assert contract_store.pending.counts() == dict.fromkeys(WORKS, 0) | {EXTRACT: 5, PASSAGES: 1}
    contract_store.pending.finish(EXTRACT, [ids[0], "extra", "unknown"])
    assert contract_store.pending.items(EXTRACT, limit=2) == sorted(ids)[1:3]
    assert contract_store.memories.finish_absent(EXTRACT, [ids[1], "01GONE"]) == ["01GONE"]


def test_store_keys_find_the_memory_they_stored_until_their_window_passes(
    contract_store: Any,
) -> None:
    now = utcnow()
    keys = [
        (StoreKey("key:retry-1", "digest-a", None), "01CONTRACT0000000000000000"),
        (
            StoreKey("dup:abc", "digest-b", now + timedelta(minutes=10)),
            "01CONTRACT0000000000000001",
        ),
    ]
    memories, vectors = _memories(2), _vectors(2)
    contract_store.memories.insert(memories, vectors, SPACE, keys=keys)
    found = contract_store.memories.stored_by_keys(["key:retry-1", "dup:abc", "nope"], now=now)
    assert found == {
        "key:retry-1": (memories[0].id, "digest-a"),
        "dup:abc": (memories[1].id, "digest-b"),
    }
    later = now + timedelta(minutes=11)
    assert set(contract_store.memories.stored_by_keys(["key:retry-1", "dup:abc"], now=later)) == {
        "key:retry-1"
    }
    contract_store.memories.delete(memories[0].id)
    assert contract_store.memories.stored_by_keys(["key:retry-1"], now=now) == {}
    # a key whose memory is gone is taken over by the next store under it
    again = _memories(1, prefix="01AGAIN")
    key = StoreKey("key:retry-1", "digest-c", None)
    contract_store.memories.insert(again, _vectors(1, 5), SPACE, keys=[(key, again[0].id)])
    assert contract_store.memories.stored_by_keys(["key:retry-1"], now=now) == {
        "key:retry-1": (again[0].id, "digest-c")
    }


def test_a_rolled_back_transaction_leaves_nothing_in_the_store_or_the_search_state(
    contract_store: Any,
) -> None:
    kept, vectors = _insert(contract_store, 1)
    contract_store.vectors.nearest(SPACE, vectors[0], 1)  # the matrix is loaded
    with pytest.raises(RuntimeError), contract_store.transaction():
        contract_store.memories.insert(_memories(3, prefix="01LOST"), _vectors(3, 9), SPACE)
        raise RuntimeError("the caller fails before the commit")
    assert contract_store.memories.all_ids() == {kept[0].id}
    assert contract_store.vectors.count(SPACE) == 1
    assert [i for i, _ in contract_store.vectors.nearest(SPACE, vectors[0], 5)] == [kept[0].id]
    assert contract_store.pending.items(EXTRACT) == [kept[0].id]


def test_a_failed_statement_fails_its_whole_transaction(contract_store: Any) -> None:
    memories, _ = _insert(contract_store, 2)
    with pytest.raises(GraphmemError), contract_store.transaction():
        contract_store.memories.insert(_memories(2, prefix="01MORE"), _vectors(2, 3), SPACE)
        contract_store.memories.insert(memories[:1], _vectors(1, 4), SPACE)  # an id taken
    assert contract_store.memories.count() == 2
    assert contract_store.vectors.count(SPACE) == 2


def test_after_commit_work_runs_on_commit_only(contract_store: Any) -> None:
    ran: list[str] = []
    with contract_store.transaction():
        contract_store.after_commit(lambda: ran.append("committed"))
        contract_store.meta_set("k", "v")
        assert ran == []
    with pytest.raises(RuntimeError), contract_store.transaction():
        contract_store.after_commit(lambda: ran.append("rolled back"))
        raise RuntimeError
    assert ran == ["committed"]
    assert contract_store.meta_get("k") == "v" and contract_store.meta_get("nope") is None


def test_reads_by_filter_selection_and_page_agree(contract_store: Any) -> None:
    memories, _ = _insert(contract_store, 5)
    store = contract_store.memories
    assert store.count_by("kind", MemoryFilter()) == {"note": 3, "incident": 2}
    assert store.count_by("kind", MemoryFilter(tags=["t1"])) == {"incident": 1}
    page = store.page(MemoryFilter(), limit=2, cursor=None)
    assert [m.id for m in page.memories] == [memories[4].id, memories[3].id]
    rest = store.page(MemoryFilter(), limit=10, cursor=page.next_cursor)
    assert [m.id for m in rest.memories] == [m.id for m in reversed(memories[:3])]
    assert rest.next_cursor is None
    exported = store.export_page(None, limit=10)
    assert exported.memories == memories
    chosen = store.select(MemorySelection(mentions=Mentions(words=("RAISED TO 30",))), limit=5)
    assert [m.id for m in chosen] == [memories[3].id]
    assert store.labels([memories[0].id]) == {memories[0].id: "pool 0"}
    asked = [memories[0].id, memories[3].id, "01NOSUCH", memories[1].id]
    assert store.newest_of(asked, 2) == [memories[3].id, memories[1].id]


def test_the_newest_memories_come_by_time_window_and_before_a_point(contract_store: Any) -> None:
    memories, _ = _insert(contract_store, 5)
    newest = contract_store.memories.newest
    everything = MemoryFilter()
    args: dict[str, Any] = {"sessions": None, "since": None, "until": None, "before": None}
    assert [m.id for m in newest(everything, **args, limit=2)] == [memories[4].id, memories[3].id]
    after_two = {**args, "before": (memories[3].created_at, memories[3].id)}
    assert [m.id for m in newest(everything, **after_two, limit=10)] == [
        m.id for m in reversed(memories[:3])
    ]
    window = {**args, "since": memories[1].created_at, "until": memories[3].created_at}
    assert [m.id for m in newest(everything, **window, limit=10)] == [
        memories[2].id, memories[1].id,
    ]  # fmt: skip
    assert [m.id for m in newest(MemoryFilter(kind="incident"), **args, limit=10)] == [
        memories[3].id, memories[1].id,
    ]  # fmt: skip
    in_session = _memories(2, prefix="01SESSION", session_id="s-1")
    contract_store.memories.insert(in_session, _vectors(2, seed=2), SPACE)
    sessions = {**args, "sessions": ["s-1", "s-none"]}
    assert [m.id for m in newest(everything, **sessions, limit=10)] == [
        in_session[1].id, in_session[0].id,
    ]  # fmt: skip
    assert newest(everything, **{**args, "sessions": []}, limit=10) == []


def test_the_schema_is_migrated_once(contract_store: Any) -> None:
    status = contract_store.migration_status()
    assert status.schema_version == status.latest_version and not status.pending
    assert contract_store.migrate() == []


def test_a_callers_query_is_read_only_unless_asked(contract_store: Any) -> None:
    _insert(contract_store, 2)
    result = contract_store.cypher("MATCH (m:Memory) RETURN count(m) AS n", {}, write=False)
    assert result.rows == [[2]]
    with pytest.raises(InvalidInput):
        contract_store.cypher("CREATE (:Memory {id: 'x'})", {}, write=False)
    assert contract_store.memories.count() == 2


def test_exclusive_work_is_this_process_s_while_no_other_holds_it(contract_store: Any) -> None:
    with contract_store.exclusive("extract") as mine:
        assert mine
    with contract_store.exclusive("extract") as mine:  # let go, and taken again
        assert mine
