"""`python -m eval falkordb-probe`: what search costs on a FalkorDB server at N memory-like nodes,
by its own indexes and by in-process state fed from a change stream: the numbers behind
docs/adr/0011-falkordb-engine.md.

One real server (tests/servers/falkordb_servers.py) on loopback, one graph: `Memory {id, text}`
with a full-text index, and each memory's 384-dim random unit vector on its own `Vec` node with
a vector index (graphmem keeps vectors apart from memories). It measures:

- writes: batches of 256 memories and their vectors in one UNWIND query (wall and server time),
  and the same batches with no vector index, and with no index at all;
- vector top-10 by the server's HNSW index, p50/p95 and recall@10 against an exact numpy scan,
  asking the index for k = 10 and for more (over-fetch, then keep the best 10); on the random
  vectors, and on clustered ones closer to real embeddings (queries near a stored vector);
- full-text top-10 by score: one word, and two words ANDed and ORed;
- server memory (INFO used_memory) per memory, and what the vector index itself takes;
- a vector index built at once over the stored vectors; every vector read back through Cypher
  (what a node starting cold pays to fill its state from the graph);
- state per node: the write with its change XADDed to a stream in one MULTI/EXEC against the
  write alone, and how long after the write's acknowledgement another client has read the
  entry and applied it (vectors appended to a matrix), the vectors in the entry or read by id;
- an exact numpy scan of the N vectors in process, for comparison.

Random unit vectors are the hard case for HNSW (every point nearly as far as every other).
Every latency is read beside `machine_ms`: a shared machine's speed drifts.
"""

from __future__ import annotations

import os
import platform
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import redis
from falkordb import Graph
from falkordb.helpers import stringify_param_value

from eval.bench import machine_ms
from tests.servers import falkordb_servers as servers

DIM = 384
BATCH = 256
TOP = 10
OVERFETCH = (10, 50, 100, 200)
CLUSTERED_MAX = 10_000  # clustered vectors loaded beside the random ones, for recall only
COMPARED_BATCHES = 20  # batches per variant of the write comparisons
GRAPH = "{probe}"  # a hash tag: in a cluster, the graph and its stream share a slot
STREAM = "{probe}:changes"
Progress = Callable[[str], None]
Vectors = npt.NDArray[np.float32]


def run_probe(
    nodes: int,
    queries: int = 200,
    *,
    seed: int = 0,
    compared_batches: int = COMPARED_BATCHES,
    progress: Progress = lambda _msg: None,
) -> dict[str, Any]:
    corpus = Corpus(nodes, seed)
    rng = np.random.default_rng(seed + 1)
    result: dict[str, Any] = {
        "benchmark": "falkordb-probe",
        "nodes": nodes,
        "dim": DIM,
        "batch": BATCH,
        "queries": queries,
        "compared_batches": compared_batches,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "machine_ms": {"start": machine_ms()},
    }
    with (
        tempfile.TemporaryDirectory(prefix="falkordb-probe-") as tmp,
        servers.standalone(Path(tmp)) as server,
        server.client() as client,
    ):
        result["server"] = _versions(client)
        graph = server.falkordb().select_graph(GRAPH)
        empty = _used_memory(client)
        _create_indexes(graph)
        progress(f"writing {nodes} memories in batches of {BATCH}")
        result["write"] = _write_all(graph, corpus, progress)
        result["memory"] = _memory(client, empty, nodes)
        progress("vector queries")
        asked = _unit(rng.standard_normal((queries, DIM)))
        result["vector"] = _vector_queries(graph, "Vec", corpus.vectors, asked)
        result["in_process_exact_ms"] = _in_process(corpus.vectors, asked)
        progress("full-text queries")
        result["fulltext"] = _fulltext_queries(graph, corpus, queries, rng)
        progress("reading every vector back")
        result["read_back"] = _read_back(graph, nodes)
        progress("vector index rebuild")
        result["vector_index_build"] = _rebuild(graph, client, nodes)
        progress("clustered vectors")
        result["vector_clustered"] = _clustered(graph, min(nodes, CLUSTERED_MAX), queries, rng)
        progress("writes with fewer indexes")
        result["write_by_indexes"] = _write_by_indexes(graph, corpus, rng, compared_batches)
        progress("scalar writes beside vectors")
        result["scalar_set_256"] = _scalar_sets(graph, corpus)
        progress("change stream")
        result["stream"] = _stream(server, corpus, rng, compared_batches)
    result["machine_ms"]["end"] = machine_ms()
    return result


def results_name(nodes: int) -> str:
    return f"falkordb_probe_{round(nodes / 1000)}k.json"


# -- data -----------------------------------------------------------------------------------------


class Corpus:
    """N memories: ids, short texts over a Zipf vocabulary, random unit vectors."""

    def __init__(self, nodes: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
        vocabulary = sorted(
            {"".join(rng.choice(letters, rng.integers(3, 10))) for _ in range(6000)}
        )
        weights = 1.0 / np.arange(1, len(vocabulary) + 1) ** 1.1
        self.ids = [f"m{i:07d}" for i in range(nodes)]
        lengths = rng.integers(8, 20, nodes)
        words = rng.choice(len(vocabulary), int(lengths.sum()), p=weights / weights.sum())
        parts = np.split(words, np.cumsum(lengths)[:-1])
        self.texts = [" ".join(vocabulary[w] for w in part) for part in parts]
        self.vectors = _unit(rng.standard_normal((nodes, DIM)))

    def batches(self) -> range:
        return range(0, len(self.ids), BATCH)


def _unit(rows: npt.NDArray[Any]) -> Vectors:
    vectors = np.asarray(rows, np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _clustered_vectors(count: int, rng: np.random.Generator) -> Vectors:
    """Vectors around count/50 centres, each at cosine ~0.7 to its centre, as the embeddings
    of related sentences are."""
    centres = _unit(rng.standard_normal((max(1, count // 50), DIM)))
    members = centres[rng.integers(0, len(centres), count)]
    return _unit(members + rng.standard_normal((count, DIM)) * 0.052)


# A float32 is written back exactly from 9 significant digits. One %-format per row runs in C,
# ~5x faster than the falkordb client's own parameter text (`write.client_params_ms`); the server
# takes nothing but text, so every vector travels as text.
_ROW = "[" + ",".join(["%.9g"] * DIM) + "]"


def vector_text(rows: Vectors) -> str:
    return "[" + ",".join(_ROW % tuple(row) for row in rows.tolist()) + "]"


def _header(ids: Sequence[str], texts: Sequence[str], vectors: Vectors) -> str:
    return (
        f"CYPHER ids={stringify_param_value(list(ids))} "
        f"texts={stringify_param_value(list(texts))} vecs={vector_text(vectors)} "
    )


def _write(memory: str = "Memory", vec: str = "Vec") -> str:
    return (
        "UNWIND range(0, size($ids) - 1) AS i "
        f"CREATE (:{memory} {{id: $ids[i], text: $texts[i]}}) "
        f"CREATE (:{vec} {{id: $ids[i], vec: vecf32($vecs[i])}})"
    )


def _vector_index(label: str) -> str:
    return (
        f"CREATE VECTOR INDEX FOR (v:{label}) ON (v.vec) OPTIONS {{dimension: {DIM}, "
        "similarityFunction: 'cosine'}"
    )


def _create_indexes(graph: Graph) -> None:
    graph.query("CREATE INDEX FOR (m:Memory) ON (m.id)")
    graph.query("CREATE INDEX FOR (v:Vec) ON (v.id)")
    graph.query("CREATE FULLTEXT INDEX FOR (m:Memory) ON (m.text)")
    graph.query(_vector_index("Vec"))


def _spread(seconds: Sequence[float]) -> dict[str, float]:
    ordered = sorted(seconds)

    def at(q: float) -> float:
        return round(1000 * ordered[min(int(q * len(ordered)), len(ordered) - 1)], 2)

    return {"p50": at(0.5), "p95": at(0.95), "max": at(1.0)} if ordered else {}


def _timed(work: Callable[[], Any]) -> float:
    began = time.perf_counter()
    work()
    return time.perf_counter() - began


# -- writes and memory ----------------------------------------------------------------------------


def _write_all(graph: Graph, corpus: Corpus, progress: Progress) -> dict[str, Any]:
    walls, server_ms = [], []
    started = time.perf_counter()
    for low in corpus.batches():
        part = slice(low, low + BATCH)
        query = _header(corpus.ids[part], corpus.texts[part], corpus.vectors[part]) + _write()
        began = time.perf_counter()
        done = graph.query(query)
        walls.append(time.perf_counter() - began)
        server_ms.append(done.run_time_ms)
        if len(walls) % 40 == 0:
            progress(f"  {low + BATCH} written")
    total = time.perf_counter() - started
    first = corpus.vectors[:BATCH]
    return {
        "batches": len(walls),
        "batch_ms": _spread(walls),
        "batch_server_ms": _spread([ms / 1000 for ms in server_ms]),
        "first_batch_ms": round(1000 * walls[0], 1),
        "last_batch_ms": round(1000 * walls[-1], 1),
        "memories_per_s": round(len(corpus.ids) / total, 1),
        # what the falkordb client spends turning one batch's vectors into query text
        "client_params_ms": round(1000 * _timed(lambda: stringify_param_value(first.tolist())), 1),
        "formatted_params_ms": round(1000 * _timed(lambda: vector_text(first)), 1),
    }


def _write_by_indexes(
    graph: Graph, corpus: Corpus, rng: np.random.Generator, batches: int
) -> dict[str, Any]:
    """Batches of the same size with every index, with the full-text index alone (vectors on
    unindexed nodes), and with none; interleaved, so the three share the machine's mood."""
    variants = {
        "vector_and_fulltext": _write(),
        "fulltext_only": _write(vec="PlainVec"),
        "no_index": _write(memory="PlainMemory", vec="PlainVec"),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    texts = corpus.texts[:BATCH]
    for b in range(batches):
        for name, write in variants.items():
            ids = [f"{name[0]}{b}-{i}" for i in range(BATCH)]
            query = _header(ids, texts, _unit(rng.standard_normal((BATCH, DIM)))) + write
            times[name].append(_timed(lambda q=query: graph.query(q)))
    return {f"{name}_batch_ms": _spread(spent) for name, spent in times.items()}


def _used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def _memory(client: redis.Redis, empty: int, nodes: int) -> dict[str, Any]:
    used = _used_memory(client)
    return {
        "used_memory_bytes": used,
        "empty_server_bytes": empty,
        "bytes_per_memory": round((used - empty) / nodes, 1),
        "graph_memory_usage_mb": client.execute_command("GRAPH.MEMORY", "USAGE", GRAPH),
    }


def _versions(client: redis.Redis) -> dict[str, Any]:
    modules = {m["name"]: m["ver"] for m in client.execute_command("MODULE", "LIST")}
    return {"redis": client.info("server")["redis_version"], "falkordb_module": modules["graph"]}


def _rebuild(graph: Graph, client: redis.Redis, nodes: int) -> dict[str, Any]:
    """Drop the vector index and build it again over the stored vectors: what the index held
    (built a batch at a time), how long a build over them takes and what that one holds."""
    with_index = _used_memory(client)
    graph.query("DROP VECTOR INDEX FOR (v:Vec) ON (v.vec)")
    time.sleep(1.0)  # a dropped index is freed in the background (~0.5 s at 2k vectors)
    without = _used_memory(client)
    began = time.perf_counter()
    graph.query(_vector_index("Vec"))
    _wait_operational(graph, "Vec")
    seconds = time.perf_counter() - began
    return {
        "seconds": round(seconds, 2),
        "vectors_per_s": round(nodes / seconds, 1),
        "index_bytes_per_vector_built_by_batches": round((with_index - without) / nodes, 1),
        "index_bytes_per_vector_built_at_once": round((_used_memory(client) - without) / nodes, 1),
    }


def _wait_operational(graph: Graph, label: str) -> None:
    while True:
        states = graph.ro_query("CALL db.indexes() YIELD label, status RETURN label, status")
        if all(status == "OPERATIONAL" for name, status in states.result_set if name == label):
            return
        time.sleep(0.2)  # a build runs beside the queries asking for its state: not too often


# -- reads ----------------------------------------------------------------------------------------


def _vector_queries(graph: Graph, label: str, vectors: Vectors, asked: Vectors) -> dict[str, Any]:
    exact = np.argsort(-(asked @ vectors.T), axis=1)[:, :TOP]
    found: dict[str, Any] = {}
    for k in OVERFETCH:
        times, recalls = [], []
        for q, truth in zip(asked, exact, strict=True):
            query = (
                f"CYPHER q={vector_text(q[None, :])[1:-1]} "
                f"CALL db.idx.vector.queryNodes('{label}', 'vec', {k}, vecf32($q)) "
                f"YIELD node, score RETURN node.id ORDER BY score LIMIT {TOP}"
            )
            began = time.perf_counter()
            rows = graph.ro_query(query).result_set
            times.append(time.perf_counter() - began)
            top = {int(row[0][1:]) for row in rows}
            recalls.append(len(top & set(truth.tolist())) / TOP)
        found[f"k{k}"] = {"ms": _spread(times), "recall_at_10": round(float(np.mean(recalls)), 4)}
    return found


def _clustered(graph: Graph, count: int, queries: int, rng: np.random.Generator) -> dict[str, Any]:
    vectors = _clustered_vectors(count, rng)
    graph.query(_vector_index("Clustered"))
    for low in range(0, count, BATCH):
        rows = vectors[low : low + BATCH]
        ids = [f"c{i}" for i in range(low, low + len(rows))]
        graph.query(
            f"CYPHER ids={stringify_param_value(ids)} vecs={vector_text(rows)} "
            "UNWIND range(0, size($ids) - 1) AS i "
            "CREATE (:Clustered {id: $ids[i], vec: vecf32($vecs[i])})"
        )
    near = vectors[rng.integers(0, count, queries)]
    asked = _unit(near + rng.standard_normal(near.shape) * 0.035)  # cosine ~0.8 to its source
    return {"nodes": count, **_vector_queries(graph, "Clustered", vectors, asked)}


def _in_process(vectors: Vectors, asked: Vectors) -> dict[str, float]:
    def search(q: Vectors) -> None:
        scores = vectors @ q
        best = np.argpartition(-scores, TOP)[:TOP]
        best[np.argsort(-scores[best])]

    return _spread([_timed(lambda q=q: search(q)) for q in asked])


def _fulltext_queries(
    graph: Graph, corpus: Corpus, queries: int, rng: np.random.Generator
) -> dict[str, Any]:
    texts = [corpus.texts[i].split() for i in rng.integers(0, len(corpus.texts), queries)]
    kinds = {
        "one_word": [str(rng.choice(words)) for words in texts],
        "two_words_and": [" ".join(rng.choice(words, 2, replace=False)) for words in texts],
        "two_words_or": ["|".join(rng.choice(words, 2, replace=False)) for words in texts],
    }
    found: dict[str, Any] = {}
    for kind, asked in kinds.items():
        times, matches = [], []
        for words in asked:
            times.append(
                _timed(
                    lambda w=words: graph.ro_query(
                        "CALL db.idx.fulltext.queryNodes('Memory', $q) YIELD node, score "
                        f"RETURN node.id, score ORDER BY score DESC LIMIT {TOP}",
                        {"q": w},
                    )
                )
            )
        for words in asked[:20]:
            matches.append(
                graph.ro_query(
                    "CALL db.idx.fulltext.queryNodes('Memory', $q) YIELD node RETURN count(node)",
                    {"q": words},
                ).result_set[0][0]
            )
        found[kind] = {"ms": _spread(times), "matches_median": int(np.median(matches))}
    return found


def _read_back(graph: Graph, nodes: int, page: int = 1000) -> dict[str, Any]:
    """Every id and vector read back through Cypher, a page at a time by internal id: what a
    node starting cold pays to fill its in-process matrix from the graph."""
    read, low = 0, 0
    began = time.perf_counter()
    while read < nodes and low <= 4 * nodes:
        rows = graph.ro_query(
            "MATCH (v:Vec) WHERE ID(v) >= $low AND ID(v) < $high RETURN v.id, v.vec",
            {"low": low, "high": low + 2 * page},  # Memory and Vec nodes share the id space
        ).result_set
        np.asarray([row[1] for row in rows], np.float32)
        read += len(rows)
        low += 2 * page
    seconds = time.perf_counter() - began
    return {"vectors": read, "seconds": round(seconds, 2), "vectors_per_s": round(read / seconds)}


def _scalar_sets(graph: Graph, corpus: Corpus) -> dict[str, float]:
    """SET one integer on 256 nodes: memories (no vector) against their Vec nodes (a vector
    each): FalkorDB/FalkorDB#2657, a scalar write costs more on a node with a vector."""
    ids = corpus.ids[:BATCH]
    out = {}
    for label in ("Memory", "Vec"):
        query = f"UNWIND $ids AS i MATCH (x:{label} {{id: i}}) SET x.seen = $n"
        times = [
            _timed(lambda n=n, q=query: graph.query(q, {"ids": ids, "n": n})) for n in range(5)
        ]
        out[f"{label.lower()}_ms_median"] = round(1000 * sorted(times)[2], 2)
    return out


# -- the change stream ----------------------------------------------------------------------------


class _Follower(threading.Thread):
    """Another node: blocks on XREAD and applies each entry to its own state, noting when."""

    def __init__(self, server: servers.Server, fetch: bool) -> None:
        super().__init__(daemon=True)
        self.client = server.client(decode_responses=False)
        self.graph = server.falkordb().select_graph(GRAPH) if fetch else None
        self.applied: dict[bytes, float] = {}
        self.rows = np.zeros((0, DIM), np.float32)
        self.ids: list[str] = []
        self.stop = threading.Event()
        # from the stream's newest entry now, by id: "$" again after an empty read would skip
        # what was added between the two reads
        newest = self.client.xrevrange(STREAM, count=1)
        self.last = newest[0][0] if newest else b"0-0"

    def run(self) -> None:
        while not self.stop.is_set():
            for _stream, entries in self.client.xread({STREAM: self.last}, block=200) or []:
                for entry_id, fields in entries:
                    self._apply(fields)
                    self.applied[fields[b"batch"]] = time.perf_counter()
                    self.last = entry_id

    def _apply(self, fields: dict[bytes, bytes]) -> None:
        ids = fields[b"ids"].decode().split("\n")
        if self.graph is None:
            vectors = np.frombuffer(fields[b"vecs"], np.float32).reshape(len(ids), DIM)
        else:  # only ids in the stream: read the batch's vectors by id
            rows = self.graph.ro_query(
                "UNWIND $ids AS i MATCH (v:Vec {id: i}) RETURN v.vec", {"ids": ids}
            ).result_set
            vectors = np.asarray([row[0] for row in rows], np.float32)
        self.rows = np.concatenate([self.rows, vectors])
        self.ids.extend(ids)

    def wait_for(self, batch: int, since: float) -> float:
        """Seconds from `since` until `batch` was applied (10 s when it never was)."""
        key, deadline = str(batch).encode(), since + 10
        while key not in self.applied and time.perf_counter() < deadline:
            time.sleep(0.0002)
        return self.applied.get(key, deadline) - since

    def close(self) -> None:
        self.stop.set()
        self.join(5)
        self.client.close()


def _stream(
    server: servers.Server, corpus: Corpus, rng: np.random.Generator, batches: int
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    texts = corpus.texts[:BATCH]
    with server.client(decode_responses=False) as client:
        for variant, fetch in (("vectors_in_entry", False), ("ids_in_entry", True)):
            follower = _Follower(server, fetch)
            follower.start()
            alone, both, xadds, lags, entry_bytes = [], [], [], [], []
            for b in range(batches):
                # the write alone, then one of the same size with its change, interleaved
                ids = [f"{variant[0]}{b}-{i}" for i in range(BATCH)]
                write = _write()
                query = _header(ids, texts, _unit(rng.standard_normal((BATCH, DIM)))) + write
                alone.append(
                    _timed(lambda q=query: client.execute_command("GRAPH.QUERY", GRAPH, q))
                )
                ids = [f"{variant[0]}{b}+{i}" for i in range(BATCH)]
                vectors = _unit(rng.standard_normal((BATCH, DIM)))
                fields = {"batch": str(b), "ids": "\n".join(ids)}
                if not fetch:
                    fields["vecs"] = vectors.tobytes()
                entry_bytes.append(sum(len(v) for v in fields.values()))
                pipe = client.pipeline(transaction=True)
                pipe.execute_command("GRAPH.QUERY", GRAPH, _header(ids, texts, vectors) + write)
                pipe.xadd(STREAM, fields, maxlen=10_000, approximate=True)
                began = time.perf_counter()
                pipe.execute()
                acked = time.perf_counter()
                both.append(acked - began)
                lags.append(follower.wait_for(b, acked))
                xadds.append(_timed(lambda f=fields: client.xadd(f"{STREAM}:alone", f, maxlen=100)))
            follower.close()
            out[variant] = {
                "write_alone_ms": _spread(alone),
                "write_and_xadd_in_multi_ms": _spread(both),
                "xadd_alone_ms": _spread(xadds),
                "applied_after_ack_ms": _spread(lags),
                "entry_bytes": int(np.median(entry_bytes)),
                "applied_rows": len(follower.ids),
            }
        entries = max(1, int(client.xlen(STREAM)))
        out["stream_bytes_per_entry"] = round(int(client.memory_usage(STREAM) or 0) / entries)
    return out
