"""The FalkorDB store's own guarantees, on real servers (tests/servers): a commit is one query and
one change-stream entry in one MULTI/EXEC, an entry names the marker only a landed commit
leaves, two nodes racing for one store key cannot both win, a read that would miss its own
transaction's writes is refused, and an address it cannot use is named without its password."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("falkordb", reason="needs the falkordb extra")

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.errors import Conflict, StorageError
from graphmem.idempotency import StoreKey
from graphmem.indexes.changes import (
    LayersSet,
    MemoriesChanged,
    MemoriesDeleted,
    MemoriesWritten,
    VectorsAdded,
    VectorsDeleted,
    VectorSetMade,
)
from graphmem.models import Memory, utcnow
from graphmem.storage.falkordb import stream
from graphmem.storage.falkordb.store import FalkorStore
from graphmem.store_url import parse_store_url
from tests.servers.falkordb_servers import Server
from tests.servers.fixtures import TEST_PASSWORD

pytestmark = pytest.mark.filterwarnings("ignore:Call to '__init__' function:DeprecationWarning")
SPACE = EmbeddingSpace("hash", "falkordb", 4)


def _open(server: Server, home: Path, graph: str = "project") -> FalkorStore:
    store = FalkorStore.open(parse_store_url(server.store_url(graph)), home)
    store.migrate()
    return store


@pytest.fixture
def node_a(falkordb_server: Server, tmp_path: Path) -> Iterator[FalkorStore]:
    store = _open(falkordb_server, tmp_path / "a")
    yield store
    store.close()


@pytest.fixture
def node_b(falkordb_server: Server, tmp_path: Path, node_a: FalkorStore) -> Iterator[FalkorStore]:
    store = _open(falkordb_server, tmp_path / "b")
    yield store
    store.close()


def _memory(i: int) -> Memory:
    now = utcnow()
    return Memory(id=f"01NODE{i:020d}", content=f"note {i}", created_at=now, updated_at=now)


def _vector(seed: int) -> np.ndarray:
    row = np.random.default_rng(seed).standard_normal((1, SPACE.dim)).astype(np.float32)
    return row / np.linalg.norm(row)


def _entries(server: Server) -> list[dict[bytes, bytes]]:
    with server.client(decode_responses=False) as client:
        return [fields for _id, fields in client.xrange("{project}:changes")]


def _markers(server: Server) -> set[str]:
    with server.client() as client:
        reply = client.execute_command("GRAPH.RO_QUERY", "{project}", "MATCH (t:_Txn) RETURN t.id")
    return {row[0] for row in reply[1]}


def test_a_commit_appends_one_entry_naming_its_marker_with_its_changes(
    falkordb_server: Server, node_a: FalkorStore
) -> None:
    node_a.vectors.ensure_space(SPACE)  # a commit of its own (VectorSetMade)
    before = len(_entries(falkordb_server))
    vector = _vector(1)
    node_a.memories.insert([_memory(1)], vector, SPACE)
    entries = _entries(falkordb_server)
    assert len(entries) == before + 1
    txn, node, changes = stream.decode(entries[-1])
    assert node == node_a.conn.node_id and txn in _markers(falkordb_server)
    kinds = [type(c).__name__ for c in changes]
    assert kinds == ["VectorsAdded", "MemoriesWritten"]
    added = changes[0]
    assert isinstance(added, VectorsAdded) and np.array_equal(added.vectors, vector)


def test_a_failed_commits_entry_has_no_marker_and_nothing_of_it_is_written(
    falkordb_server: Server, node_a: FalkorStore
) -> None:
    node_a.memories.insert([_memory(1)], _vector(1), SPACE)
    with pytest.raises(Conflict):  # the id is taken: the server's unique constraint
        node_a.memories.insert([_memory(2), _memory(1)], _vector(2).repeat(2, 0), SPACE)
    txn, _node, _changes = stream.decode(_entries(falkordb_server)[-1])
    assert txn not in _markers(falkordb_server)
    assert node_a.memories.all_ids() == {_memory(1).id}
    assert node_a.vectors.count(SPACE) == 1


def test_a_write_of_one_node_is_read_by_another(node_a: FalkorStore, node_b: FalkorStore) -> None:
    node_a.memories.insert([_memory(1)], _vector(1), SPACE)
    assert node_b.memories.get(_memory(1).id).content == "note 1"
    assert node_b.vectors.has_space(SPACE)


def test_two_nodes_storing_under_one_key_cannot_both_win(
    node_a: FalkorStore, node_b: FalkorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = StoreKey("key:retry", "digest", None)
    node_a.memories.insert([_memory(1)], _vector(1), SPACE, keys=[(key, _memory(1).id)])
    # node b checked the key before node a's commit landed: it saw none
    monkeypatch.setattr(node_b.memories, "_keys_there", lambda keys: set())
    with pytest.raises(Conflict):
        node_b.memories.insert([_memory(2)], _vector(2), SPACE, keys=[(key, _memory(2).id)])
    assert node_b.memories.stored_by_keys(["key:retry"], now=utcnow()) == {
        "key:retry": (_memory(1).id, "digest")
    }
    assert node_b.memories.existing_ids([_memory(2).id]) == set()


def test_a_read_inside_a_transaction_with_buffered_writes_is_refused(node_a: FalkorStore) -> None:
    with pytest.raises(StorageError, match="would not see them"), node_a.transaction():
        node_a.meta_set("k", "v")
        node_a.meta_get("k")
    assert node_a.meta_get("k") is None  # the transaction failed whole


def test_the_schema_holds_unique_keys_by_server_constraints(node_a: FalkorStore) -> None:
    rows = node_a.conn.read(
        "CALL db.constraints() YIELD type, label, properties, status "
        "RETURN label, properties[0], status"
    )
    assert {(label, prop) for label, prop, status in rows if status == "OPERATIONAL"} >= {
        ("Memory", "id"), ("StoreKey", "key"), ("Pending", "key"), ("_Meta", "key"),
    }  # fmt: skip
    assert node_a.meta_get("schema_version") == "1"


def test_a_wrong_password_or_no_server_is_a_storage_error_without_the_password(
    falkordb_secured: Server, tmp_path: Path
) -> None:
    wrong = parse_store_url(
        f"falkordb://graphmem:not-{TEST_PASSWORD.replace(' ', '%20')}@127.0.0.1:"
        f"{falkordb_secured.port}/project"
    )
    with pytest.raises(StorageError, match="refused the user and password") as raised:
        FalkorStore.open(wrong, tmp_path)
    assert "not-" not in str(raised.value)
    good = FalkorStore.open(parse_store_url(falkordb_secured.store_url("project")), tmp_path)
    good.close()
    nowhere = parse_store_url(f"falkordb://127.0.0.1:{_free_port()}/project")
    with pytest.raises(StorageError, match="cannot reach"):
        FalkorStore.open(nowhere, tmp_path)


def _free_port() -> int:
    from tests.servers.falkordb_servers import free_port

    return free_port()


@pytest.mark.parametrize(
    "change",
    [
        MemoriesWritten(
            [{"id": "a", "created_at": utcnow().replace(tzinfo=None), "tags": ("x",)}], ["text"]
        ),
        MemoriesDeleted(["a", "b"]),
        MemoriesChanged(["a"]),
        LayersSet({"a": "semantic", "b": None}),
        VectorsAdded("Vec_x", ["a", "b"], np.arange(8, dtype=np.float32).reshape(2, 4)),
        VectorsDeleted("Vec_x", frozenset({"a"})),
        VectorSetMade("Psg_x"),
    ],
    ids=lambda c: type(c).__name__,
)
def test_each_streamed_change_reads_back_as_it_was(change: Any) -> None:
    fields = stream.encode([change], txn="t", node="n")
    txn, node, [back] = stream.decode(fields)
    assert (txn, node) == ("t", "n")
    if isinstance(change, VectorsAdded):
        assert isinstance(back, VectorsAdded) and np.array_equal(back.vectors, change.vectors)
        assert (back.vector_set, list(back.ids)) == (change.vector_set, change.ids)
    elif isinstance(change, MemoriesWritten):
        assert isinstance(back, MemoriesWritten)
        assert back.rows == [{**change.rows[0], "tags": ["x"]}] and back.texts == ["text"]
    else:
        assert back == change
